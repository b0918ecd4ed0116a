r"""Per-word weights of a document's measure: uniform (the thesis: each occurrence counts once)
or inverse document frequencies, so that a document is the tf-idf weighted measure of its
words (the weights of :class:`~lvgp.LatentDistributionKernel` and
:class:`~lvgp.kernels.BagOfWordsKernel`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .padded import document_frequencies

__all__ = ["WORD_WEIGHTINGS", "idf_weights", "word_weights"]

WORD_WEIGHTINGS = ("uniform", "idf")


#: the documents per word of a corpus, counted when first asked for (:func:`document_frequencies`)
Frequencies = Callable[[], np.ndarray]


def idf_weights(x: torch.Tensor, num_words: int, frequencies: Frequencies | None = None) -> np.ndarray:
    r"""scikit-learn's smoothed inverse document frequencies of padded training documents ``x``
    (``n x L``): :math:`\ln\frac{1+n}{1+\mathrm{df}_v} + 1` for every word id below ``num_words``
    (``TfidfTransformer(smooth_idf=True).idf_``, the same arithmetic: equal to the last bit), a
    ``num_words`` float64 array. ``frequencies``: ``x``'s documents per word over ``num_words`` ids,
    where the caller has them."""
    counts = document_frequencies(x, num_words) if frequencies is None else frequencies()
    df = counts.astype(np.float64) + 1.0
    return np.log((x.shape[0] + 1) / df) + 1


def word_weights(
    x: torch.Tensor, num_words: int, weighting: str, frequencies: Frequencies | None = None
) -> np.ndarray | None:
    """The weights ``weighting`` names, from padded training documents ``x``: ``None`` for
    ``"uniform"`` (the thesis), :func:`idf_weights` for ``"idf"``."""
    if weighting not in WORD_WEIGHTINGS:
        raise ValueError(f"word_weighting must be one of {WORD_WEIGHTINGS}; got {weighting!r}")
    if weighting == "uniform":
        return None
    return idf_weights(x, num_words, frequencies)
