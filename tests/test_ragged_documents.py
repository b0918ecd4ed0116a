"""The documents the exact models and the GP classifiers predict, held unpadded and padded block by block
(``lvgp.models.prediction_blocks.RaggedDocuments``): every document in exactly one block, blocks of ascending
lengths each cut to its own longest, ``int64`` ids from a compact padded corpus, the encoder's vectors packed
by row, and no block at all for no documents (the GP classifier's call where every text is unread)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lvgp import PAD
from lvgp.bow.padded import RaggedIds
from lvgp.kernels.packed import pack_documents
from lvgp.models.prediction_blocks import RaggedDocuments

ROWS = [[3], [1, 2, 5, 7], [], [4, 4], [0, 6, 2], [9], [8, 1]]


def _padded(dtype: torch.dtype) -> torch.Tensor:
    x = torch.full((len(ROWS), 6), PAD, dtype=dtype)  # wider than the longest document
    for i, row in enumerate(ROWS):
        x[i, : len(row)] = torch.tensor(row, dtype=dtype)
    return x


@pytest.mark.parametrize("ids", ["ragged", "int32", "int64"])
@pytest.mark.parametrize("with_features", [False, True])
def test_every_document_once_in_blocks_of_like_lengths_cut_to_their_longest(ids, with_features):
    x = RaggedIds.from_rows(ROWS) if ids == "ragged" else _padded(getattr(torch, ids))
    features = torch.arange(len(ROWS) * 2, dtype=torch.float64).reshape(-1, 2) if with_features else None
    taken = torch.tensor([6, 0, 1, 3, 4, 5])  # the empty document left out, rows out of order
    docs = RaggedDocuments(x, features).take(taken)
    seen = []
    widths = []
    for idx, block in docs.blocks(2):
        rows = docs.rows[idx]  # rows of x
        lengths = [len(ROWS[r]) for r in rows.tolist()]
        widths.append(max(lengths))
        words = block if features is None else block[:, 2:]  # [features | word ids]
        assert words.dtype == torch.int64 if features is None else block.dtype == torch.float64
        assert words.shape == (len(rows), max(lengths)), "a block is as wide as its longest document"
        for got, r in zip(words.long().tolist(), rows.tolist()):
            assert got == ROWS[r] + [PAD] * (max(lengths) - len(ROWS[r]))
        if features is not None:
            np.testing.assert_array_equal(block, pack_documents(words.long(), features[rows]))
        seen += idx.tolist()
    assert sorted(seen) == list(range(len(taken))), "every document once"
    assert widths == [1, 2, 4], "blocks of ascending lengths (1 1, 2 2, 3 4)"


def test_no_documents_give_no_block():
    docs = RaggedDocuments(RaggedIds.from_rows(ROWS), None).take(torch.tensor([], dtype=torch.int64))
    assert len(docs) == 0 and list(docs.blocks(4)) == []
