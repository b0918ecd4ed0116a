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

#: a regressor whose fitted noise holds more than this share of its standardized training targets'
#: variance explains almost none of it (:func:`warn_about_fitted_noise`)
NOISE_CEILING = 0.95


def warn_about_fitted_noise(name: str, noise: torch.Tensor, floor_advice: str, *, standardized: bool = True) -> None:
    """The warnings of a fitted Gaussian-noise GP regressor whose noise (``noise``: its outputs'
    noise variances, in the units of standardized targets) sits at a bound:

    * at its floor (:data:`NOISE_FLOOR`, which the softplus constraint approaches but never reaches):
      the model interpolates its training targets and its intervals are too narrow, an
      :class:`~lvgp.warnings.UncertaintyWarning` (``floor_advice`` says what to change);
    * at its ceiling (above :data:`NOISE_CEILING` of the standardized targets' unit variance, only
      where the targets are ``standardized``): the marginal likelihood found no signal, and the model
      predicts about the training mean, a :class:`~lvgp.warnings.NoSignalWarning`.
    """
    from ..warnings import NoSignalWarning, UncertaintyWarning, warn

    values = noise.detach().reshape(-1)
    low, high = float(values.min()), float(values.max())
    if low < 2 * NOISE_FLOOR:
        warn(
            f"{name}: the fitted noise is {low:.2g}, its floor (in standardized units): the model interpolates its "
            f"training targets and its predictive intervals are too narrow. {floor_advice}",
            UncertaintyWarning,
        )
    if standardized and high > NOISE_CEILING:
        warn(
            f"{name}: the fitted noise is {high:.3g} of the training targets' variance: the model explains almost "
            "none of it and predicts about their mean. Check the targets against the texts, or try another kernel, "
            "more training documents, or a linear baseline (ridge on tf-idf) to see whether there is signal to find",
            NoSignalWarning,
        )


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
