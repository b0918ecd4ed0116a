"""One small helper for constrained, settable kernel hyper-parameters (instead of
gpytorch's per-parameter property/setter boilerplate)."""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from gpytorch.constraints import Interval
from gpytorch.priors import Prior
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
