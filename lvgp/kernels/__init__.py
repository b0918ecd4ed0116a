"""Kernels over padded word-index sets."""

from .document_length import DocumentLengthKernel
from .latent_distribution import EMBEDDINGS, LEVEL2_KERNELS, LatentDistributionKernel, NegativeLatentKL

__all__ = ["LatentDistributionKernel", "DocumentLengthKernel", "NegativeLatentKL", "EMBEDDINGS", "LEVEL2_KERNELS"]
