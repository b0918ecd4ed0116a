"""Baselines the comparative studies run against lvgp's models."""

from .gp_rbf import GPRBFRegressor

__all__ = ["GPRBFRegressor"]
