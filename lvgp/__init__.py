"""lvgp: Gaussian-process models for bag-of-words data.

* :class:`LatentDistributionKernel` -- the latent distribution kernel (LDK), a gpytorch kernel
  over padded word-index sets (:class:`Vocabulary` makes them from texts; :data:`PAD` pads).
* :class:`GPLVSM` / :class:`GPLVSMRegressor` -- GP-LVSM as a gpytorch ``ExactGP`` and as a
  scikit-learn estimator, trained by MAP (:class:`LogPosterior`).
* :mod:`lvgp.baselines` -- the baselines of the comparative studies.
"""

from . import warnings
from .bow import PAD, Vocabulary, counts_to_padded, pad_to_common_width, pad_to_width, padded_to_counts
from .kernels import LatentDistributionKernel
from .models import GPLVSM, CovarianceError, GPLVSMRegressor, LogPosterior, SharedKernelExactGP, exact_numerics

__version__ = "0.1.0"

__all__ = [
    "PAD",
    "Vocabulary",
    "counts_to_padded",
    "padded_to_counts",
    "pad_to_width",
    "pad_to_common_width",
    "LatentDistributionKernel",
    "GPLVSM",
    "GPLVSMRegressor",
    "LogPosterior",
    "SharedKernelExactGP",
    "CovarianceError",
    "exact_numerics",
    "warnings",
]
