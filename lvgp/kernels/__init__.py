"""Kernels over padded word-index sets, and the latent word vectors they embed documents with."""

from .bag_of_words import BagOfWordsKernel
from .document import DocumentKernel, shared_evaluation
from .document_length import DocumentLengthKernel
from .embedding import (
    EMBEDDINGS,
    EmbeddingKernel,
    LinearEmbedding,
    PolyEmbedding,
    RBFEmbedding,
    compiled_blocks,
    kept_blocks,
    rbf_gram,
)
from .latent_distribution import LatentDistributionKernel
from .level2 import LEVEL2_KERNELS, CosineLevel2, Level2Kernel, LinearLevel2, PolyLevel2, RBFLevel2
from .packed import FeatureKernel, WordSetKernel, pack_documents, unpack_documents
from .point_cloud import ClusterKernel, PointCloudKernel
from .random_features import RandomFeatureLDK, gram_approximation_error
from .spec import BagOfWordsSpec, LDKSpec
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
    "LDKSpec",
    "BagOfWordsSpec",
    "FeatureKernel",
    "WordSetKernel",
    "PointCloudKernel",
    "ClusterKernel",
    "pack_documents",
    "unpack_documents",
    "BagOfWordsKernel",
    "DocumentKernel",
    "shared_evaluation",
    "RandomFeatureLDK",
    "gram_approximation_error",
    "DocumentLengthKernel",
    "EmbeddingKernel",
    "LinearEmbedding",
    "RBFEmbedding",
    "PolyEmbedding",
    "Level2Kernel",
    "LinearLevel2",
    "PolyLevel2",
    "RBFLevel2",
    "CosineLevel2",
    "WordVectors",
    "PointWordVectors",
    "MAPWordVectors",
    "VariationalWordVectors",
    "make_word_vectors",
    "NegativeLatentKL",
    "rbf_gram",
    "compiled_blocks",
    "kept_blocks",
    "EMBEDDINGS",
    "LEVEL2_KERNELS",
]
