"""Kernels over padded word-index sets, and the latent word vectors they embed documents with."""

from .document_length import DocumentLengthKernel
from .latent_distribution import EMBEDDINGS, LEVEL2_KERNELS, LatentDistributionKernel, rbf_gram
from .random_features import RandomFeatureLDK, gram_approximation_error
from .word_vectors import (
    MAPWordVectors,
    NegativeLatentKL,
    PointWordVectors,
    VariationalWordVectors,
    WordVectors,
    make_word_vectors,
)

__all__ = [
    "LatentDistributionKernel",
    "RandomFeatureLDK",
    "gram_approximation_error",
    "DocumentLengthKernel",
    "WordVectors",
    "PointWordVectors",
    "MAPWordVectors",
    "VariationalWordVectors",
    "make_word_vectors",
    "NegativeLatentKL",
    "rbf_gram",
    "EMBEDDINGS",
    "LEVEL2_KERNELS",
]
