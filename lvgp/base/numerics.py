"""Exact (Cholesky-based) numerics for exact GPs, and clear errors when they fail.

gpytorch switches to conjugate gradients and stochastic Lanczos log-determinants above
800 points. lvgp's exact models evaluate inside :func:`exact_numerics`, which forces
Cholesky factorizations at any size. A covariance that is not numerically positive
definite is retried by linear_operator's ``psd_safe_cholesky`` with diagonal jitter
``1e-8, 1e-7, 1e-6`` (float64; each retry emits a ``NumericalWarning``); if that still
fails, lvgp raises :class:`CovarianceError` saying which model and what to change.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import gpytorch
import torch
from linear_operator.utils.errors import NotPSDError

#: the lower bound of gpytorch's ``GaussianLikelihood`` noise (its ``GreaterThan(1e-4)`` constraint):
#: an initial noise must lie above it
NOISE_FLOOR = 1e-4


class CovarianceError(RuntimeError):
    """The training covariance could not be factorized (not positive definite even with jitter)."""


@contextmanager
def exact_numerics() -> Iterator[None]:
    """Force Cholesky-based solves and log-determinants at every size."""
    with ExitStack() as stack:
        stack.enter_context(gpytorch.settings.max_cholesky_size(2**62))
        stack.enter_context(
            gpytorch.settings.fast_computations(covar_root_decomposition=False, log_prob=False, solves=False)
        )
        stack.enter_context(gpytorch.settings.cholesky_max_tries(3))
        yield


@contextmanager
def covariance_errors(what: str, hint: str) -> Iterator[None]:
    """Turn linear_operator's ``NotPSDError`` into a :class:`CovarianceError` naming ``what``."""
    try:
        yield
    except NotPSDError as err:
        raise CovarianceError(
            f"{what}: the covariance matrix is not positive definite even with jitter ({err}). {hint}"
        ) from err


@contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """Temporarily set torch's default dtype (gpytorch builds parameters in it, so models
    built inside ``default_dtype(torch.float64)`` never pass through float32)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)
