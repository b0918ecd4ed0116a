"""One small helper for constrained, settable kernel hyper-parameters (instead of
gpytorch's per-parameter property/setter boilerplate)."""

from __future__ import annotations

from functools import partial

import torch
from gpytorch.constraints import Interval
from gpytorch.priors import Prior
from torch import nn


def get_attribute(name: str, module: nn.Module):
    """Closure for gpytorch priors (picklable, unlike a lambda)."""
    return getattr(module, name)


def set_attribute(name: str, module: nn.Module, value) -> None:
    """Setting closure for gpytorch priors (picklable, unlike a lambda)."""
    setattr(module, name, value)


def constrained_property(name: str, doc: str) -> property:
    """A settable property ``name`` backed by the constrained raw parameter ``raw_<name>``.

    Reading it when the module has no ``raw_<name>`` raises ``AttributeError(name)``, so
    a module's ``__getattr__`` can explain why.
    """

    def fget(self):
        raw = self._parameters.get(f"raw_{name}")
        if raw is None:
            raise AttributeError(name)
        return getattr(self, f"raw_{name}_constraint").transform(raw)

    def fset(self, value):
        fget(self)
        raw = self._parameters[f"raw_{name}"]
        constraint = getattr(self, f"raw_{name}_constraint")
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device)
        if not torch.isfinite(value).all() or not constraint.check(value):
            raise ValueError(f"{name} must lie in {constraint}; got {value.tolist()}")
        with torch.no_grad():
            raw.copy_(constraint.inverse_transform(value).expand_as(raw))

    return property(fget, fset, doc=doc)


def register_constrained(
    module, name: str, value, constraint: Interval, prior: Prior | None, shape: torch.Size
) -> None:
    """Register ``raw_<name>`` of ``shape`` with its constraint and optional prior, set to ``value``."""
    module.register_parameter(f"raw_{name}", nn.Parameter(torch.zeros(shape)))
    module.register_constraint(f"raw_{name}", constraint)
    if prior is not None:
        module.register_prior(f"{name}_prior", prior, partial(get_attribute, name), partial(set_attribute, name))
    setattr(module, name, value)
