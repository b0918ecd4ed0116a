"""Glue for Pyro: typed module parameters, and an SVI step that leaves its loss on the device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pyro.distributions as dist
from pyro.nn import PyroParam
from torch import Tensor


def pyro_param(init: Tensor, constraint: dist.constraints.Constraint = dist.constraints.real) -> Tensor:
    """``PyroParam(init, constraint)``, typed as what it is once assigned to a ``PyroModule``
    attribute: reading the attribute returns the constrained tensor (so type checkers accept
    ``self.scale * x``); at run time it is the ``PyroParam`` itself."""
    return cast(Tensor, PyroParam(init, constraint=constraint))


def svi_step(elbo: Any, optim: Any, model: Callable, guide: Callable, *args: Any, **kwargs: Any) -> Tensor:
    """One step of stochastic variational inference, as ``pyro.infer.SVI.step`` takes it (the
    ELBO's surrogate loss differentiated, ``optim`` (a ``pyro.optim`` optimizer) stepped on the
    parameters the trace touched, their gradients zeroed), but returning the loss as a detached
    tensor on the parameters' device instead of a Python float: ``SVI.step`` reads every step's
    loss back to the host, which stalls a GPU once per step. The caller reads the losses back in
    batches (:class:`lvgp.base.device.LossBuffer`)."""
    from pyro import poutine
    from pyro.infer.util import zero_grads

    with poutine.trace(param_only=True) as capture:
        loss = elbo.differentiable_loss(model, guide, *args, **kwargs)
        loss.backward()
    params = {site["value"].unconstrained() for site in capture.trace.nodes.values() if site["value"] is not None}
    optim(params)
    zero_grads(params)
    return loss.detach()
