"""Kernels over padded word-index sets."""

from .latent_distribution import EMBEDDINGS, LEVEL2_KERNELS, LatentDistributionKernel

__all__ = ["LatentDistributionKernel", "EMBEDDINGS", "LEVEL2_KERNELS"]
