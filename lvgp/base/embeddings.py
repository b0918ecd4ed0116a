"""Pretrained word embeddings as the word features latent vectors are tied to: resolving a name
to a table (:func:`lvgp.datasets.load_word_embeddings`) and looking up a vocabulary's vectors."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, overload

import numpy as np

from ..warnings import MissingEmbeddingsWarning

if TYPE_CHECKING:
    from ..datasets.loaders import WordEmbeddings

__all__ = ["resolve_embeddings", "embedding_features"]


@overload
def resolve_embeddings(word_embeddings: None) -> None: ...


@overload
def resolve_embeddings(word_embeddings: str | WordEmbeddings) -> WordEmbeddings: ...


def resolve_embeddings(word_embeddings: str | WordEmbeddings | None) -> WordEmbeddings | None:
    """``None``, a :class:`~lvgp.datasets.WordEmbeddings`, or the name of one known to
    :func:`lvgp.datasets.load_word_embeddings` (loaded, cached per process)."""
    if word_embeddings is None or not isinstance(word_embeddings, str):
        return word_embeddings
    from ..datasets.loaders import load_word_embeddings

    return load_word_embeddings(word_embeddings)


def embedding_features(words: list[str], embeddings: WordEmbeddings, stacklevel: int = 3) -> tuple[np.ndarray, float]:
    """Pretrained vectors of ``words`` (``len(words) x h`` float64; zero rows for words without
    one, counted in a :class:`~lvgp.warnings.MissingEmbeddingsWarning`) divided by their mean
    norm, and that norm (to scale vectors of later words alike)."""
    name = getattr(embeddings, "name", "word_embeddings")
    vectors, found = embeddings.lookup(words)
    if not found.any():
        raise ValueError(f"no vocabulary word has a vector in {name}")
    if not found.all():
        warnings.warn(
            f"{int((~found).sum())} of {found.size} vocabulary words have no vector in {name}: "
            "their latent vectors are free residuals",
            MissingEmbeddingsWarning,
            stacklevel=stacklevel,
        )
    vectors = np.asarray(vectors, dtype=np.float64)
    scale = float(np.linalg.norm(vectors[found], axis=1).mean()) or 1.0
    return vectors / scale, scale
