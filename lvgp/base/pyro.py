"""Typing glue for pyro modules."""

from __future__ import annotations

from typing import cast

import pyro.distributions as dist
from pyro.nn import PyroParam
from torch import Tensor


def pyro_param(init: Tensor, constraint: dist.constraints.Constraint = dist.constraints.real) -> Tensor:
    """``PyroParam(init, constraint)``, typed as what it is once assigned to a ``PyroModule``
    attribute: reading the attribute returns the constrained tensor (so type checkers accept
    ``self.scale * x``); at run time it is the ``PyroParam`` itself."""
    return cast(Tensor, PyroParam(init, constraint=constraint))
