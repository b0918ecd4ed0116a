"""Models built on the latent distribution kernel."""

from ..base.numerics import CovarianceError, exact_numerics
from .acquisition import choose_texts_to_label
from .exact import LogPosterior, SharedKernelExactGP
from .gpc import LDKGPClassifier
from .gplvsm import GPLVSM, PaddedExactGP
from .latent_smm import LatentSMMClassifier
from .matching import LDKMatcher
from .open_set import OpenSetClassifier
from .regressor import GPLVSMRegressor
from .sparse import SparseGPLVSMRegressor

__all__ = [
    "GPLVSM",
    "PaddedExactGP",
    "GPLVSMRegressor",
    "LDKMatcher",
    "SparseGPLVSMRegressor",
    "LatentSMMClassifier",
    "LDKGPClassifier",
    "OpenSetClassifier",
    "LogPosterior",
    "SharedKernelExactGP",
    "CovarianceError",
    "exact_numerics",
    "choose_texts_to_label",
]
