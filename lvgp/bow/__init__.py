"""Bag-of-words documents as padded word-index sets."""

from .padded import (
    PAD,
    RaggedIds,
    check_padded,
    counts_to_padded,
    document_lengths,
    pad_to_common_width,
    pad_to_width,
    padded_to_counts,
    trim_to_longest,
)
from .vocabulary import Vocabulary

__all__ = [
    "PAD",
    "RaggedIds",
    "Vocabulary",
    "check_padded",
    "counts_to_padded",
    "document_lengths",
    "pad_to_common_width",
    "pad_to_width",
    "padded_to_counts",
    "trim_to_longest",
]
