"""The documents a model predicts, held unpadded and padded block by block.

A padded corpus is as wide as its longest document (20ng's test split: 7,528 texts, one of them of thousands of
words), and every kernel part's cost and memory grow with the width and the rows of a call. The exact regressors,
the GP classifiers and the latent SMM therefore predict from :class:`RaggedDocuments`: blocks of at most
:data:`PREDICT_BLOCK` documents (the GP classifiers: their ``block`` argument) of like lengths, each padded to its
own longest and packed with the sentence encoder's vectors where there is one. Every result is written back by
its row, so the predictions are those of the whole padded corpus, to rounding.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from ..bow.padded import RaggedIds, document_lengths, documents_at
from ..kernels.packed import pack_documents

__all__ = ["PREDICT_BLOCK", "RaggedDocuments"]

#: the most documents an exact regressor or the latent SMM computes the kernel of at once (the GP classifiers take
#: theirs as an argument, ``block``); read at every call, so setting it here changes every one of them
PREDICT_BLOCK = 2048


class RaggedDocuments:
    """Documents to predict held without one padded array: their word ids (:class:`~lvgp.bow.padded.RaggedIds`,
    or a padded ``n x L`` tensor, whose blocks are cut to their longest) and, with a sentence encoder, its
    ``n x d`` vectors of them (``features``). :meth:`blocks` gives them in blocks of like lengths, each padded to
    its longest (packed with the vectors, :func:`~lvgp.kernels.packed.pack_documents`).

    ``rows`` and ``lengths`` are for :meth:`take`: the documents' rows of ``ids`` and their numbers of words (by
    default every row, counted once here)."""

    def __init__(
        self,
        ids: RaggedIds | torch.Tensor,
        features: torch.Tensor | None,
        rows: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
    ) -> None:
        self.ids, self.features = ids, features
        self.rows = torch.arange(len(ids)) if rows is None else rows
        self.lengths = document_lengths(ids)[self.rows] if lengths is None else lengths

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, rows: torch.Tensor) -> RaggedDocuments:
        """The documents at ``rows`` (of these; their lengths passed on, not counted again)."""
        return RaggedDocuments(self.ids, self.features, self.rows[rows], self.lengths[rows])

    def blocks(self, size: int | None = None) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``(rows, documents)`` of blocks of at most ``size`` documents (default :data:`PREDICT_BLOCK`, read now)
        of like lengths: ``rows`` of these documents (``self.rows[rows]`` are those of ``ids``), ascending lengths,
        each block padded to its own longest as it is reached (a caller that reads them more than once keeps a
        list). Every document once; no block of no documents."""
        order = torch.argsort(self.lengths, stable=True)
        parts = order.split(PREDICT_BLOCK if size is None else size)
        return ((idx, self.block(idx)) for idx in parts if len(idx))  # no rows: split gives one empty part

    def block(self, rows: torch.Tensor) -> torch.Tensor:
        """The documents at ``rows`` (of these), padded to their longest, packed with their vectors; ``int64``
        ids where the corpus keeps compact ones (:func:`~lvgp.bow.padded.documents_at`, given the rows' lengths:
        a padded corpus is cut to their longest before its rows are gathered)."""
        at = self.rows[rows]
        padded = documents_at(self.ids, at, self.lengths[rows])
        return padded if self.features is None else pack_documents(padded, self.features[at])
