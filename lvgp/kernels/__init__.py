"""Kernels over padded word-index sets."""

from .document_length import DocumentLengthKernel
from .latent_distribution import EMBEDDINGS, LEVEL2_KERNELS, LatentDistributionKernel, NegativeLatentKL
from .random_features import RandomFeatureLDK, gram_approximation_error

__all__ = [
    "LatentDistributionKernel",
    "RandomFeatureLDK",
    "gram_approximation_error",
    "DocumentLengthKernel",
    "NegativeLatentKL",
    "EMBEDDINGS",
    "LEVEL2_KERNELS",
]
