"""Small helpers for kernel hyper-parameters: constrained, settable parameters (instead of
gpytorch's per-parameter property/setter boilerplate), and batch indexing / expansion of a
module's own tensors."""

from __future__ import annotations

import copy
from functools import partial
from typing import Any, Self

import torch
from gpytorch.constraints import Interval
from gpytorch.module import Module
from gpytorch.priors import LogNormalPrior, Prior
from torch import nn


def get_attribute(name: str, module: nn.Module) -> Any:
    """Closure for gpytorch priors (picklable, unlike a lambda)."""
    return getattr(module, name)


def set_attribute(name: str, module: nn.Module, value: Any) -> None:
    """Setting closure for gpytorch priors (picklable, unlike a lambda)."""
    setattr(module, name, value)


def constrained_property(name: str, doc: str) -> property:
    """A settable property ``name`` backed by the constrained raw parameter ``raw_<name>``.

    Reading it when the module has no ``raw_<name>`` raises ``AttributeError(name)``, so
    a module's ``__getattr__`` can explain why.
    """

    def raw_parameter(self: nn.Module) -> torch.Tensor:
        raw = self._parameters.get(f"raw_{name}")
        if raw is None:
            raise AttributeError(name)
        return raw

    def fget(self: nn.Module) -> torch.Tensor:
        return getattr(self, f"raw_{name}_constraint").transform(raw_parameter(self))

    def fset(self: nn.Module, value: Any) -> None:
        raw = raw_parameter(self)
        constraint = getattr(self, f"raw_{name}_constraint")
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device)
        if not torch.isfinite(value).all() or not constraint.check(value):
            raise ValueError(f"{name} must lie in {constraint}; got {value.tolist()}")
        with torch.no_grad():
            raw.copy_(constraint.inverse_transform(value).expand_as(raw))

    return property(fget, fset, doc=doc)


def register_constrained(
    module: Any, name: str, value: Any, constraint: Interval, prior: Prior | None, shape: torch.Size
) -> None:
    """Register ``raw_<name>`` of ``shape`` with its constraint and optional prior, set to ``value``."""
    module.register_parameter(f"raw_{name}", nn.Parameter(torch.zeros(shape)))
    module.register_constraint(f"raw_{name}", constraint)
    if prior is not None:
        module.register_prior(f"{name}_prior", prior, partial(get_attribute, name), partial(set_attribute, name))
    setattr(module, name, value)


def register_log_normal_prior(module: Module, name: str, sd: float) -> None:
    r"""Register ``{name}_prior`` on ``module``: a log-normal prior on its positive hyper-parameter
    ``name`` centred at the current value, :math:`\log\theta \sim \mathcal N(\log\theta_0, \mathrm{sd}^2)`
    (elementwise over a batch)."""
    value = getattr(module, name).detach()
    prior = LogNormalPrior(value.log(), torch.full_like(value, sd))
    module.register_prior(f"{name}_prior", prior, partial(get_attribute, name), partial(set_attribute, name))


def check_degree(name: str, value: Any) -> int:
    """A fixed polynomial degree: a positive integer (``ValueError`` naming ``name`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer degree; got {value!r}")
    return int(value)


class BatchedTensorsMixin:
    """``expand_batch`` and ``__getitem__`` (over the batch dimensions) for a module that is not
    a gpytorch ``Kernel`` -- what gpytorch's ``Kernel.expand_batch`` / ``Kernel.__getitem__`` do to
    a kernel's own parameters -- applied to the module's own parameters and buffers, except those
    named in ``_unbatched`` (shared by the batch members)."""

    batch_shape: torch.Size
    _unbatched: tuple[str, ...] = ()

    def _batched_tensors(self) -> list[torch.Tensor]:
        own = [*self.named_parameters(recurse=False), *self.named_buffers(recurse=False)]  # type: ignore[attr-defined]
        return [t for name, t in own if name not in self._unbatched and t is not None]

    def expand_batch(self, batch_shape: torch.Size) -> Self:
        """A copy whose batched tensors are expanded to ``batch_shape``."""
        batch_shape = torch.Size(batch_shape)
        if batch_shape == self.batch_shape:
            return self
        new = copy.deepcopy(self)
        for tensor in new._batched_tensors():
            tensor.data = tensor.data.expand(*batch_shape, *tensor.shape[len(self.batch_shape) :])
        new.batch_shape = batch_shape
        return new

    def __getitem__(self, index: Any) -> Self:
        """A copy with every batched tensor indexed over the batch dimensions."""
        if not len(self.batch_shape):
            return self
        new = copy.deepcopy(self)
        index = index if isinstance(index, tuple) else (index,)
        for tensor in new._batched_tensors():
            tensor.data = tensor.data[index]
        new.batch_shape = torch.zeros(self.batch_shape)[index].shape  # batch shapes are small
        return new
