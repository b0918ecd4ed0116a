"""Padded word-index sets: lvgp's input format for bag-of-words documents.

A corpus of ``n`` documents is an ``n x L`` ``torch.long`` tensor. Row ``i`` holds the
word ids of document ``i`` (a multiset: a word that occurs three times appears three
times), in any order, and the remaining entries equal :data:`PAD`. ``L`` is the
width, at least the length of the longest document. Batched corpora are
``... x n x L``.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch

#: The single padding constant of lvgp; entries equal to ``PAD`` are not words.
PAD: int = -1


def _rows_text(rows: torch.Tensor | np.ndarray | list[int], limit: int = 10) -> str:
    numbers = [int(r) for r in np.asarray(rows).reshape(-1)]
    shown = ", ".join(str(r) for r in numbers[:limit])
    more = f", ... ({len(numbers)} rows in all)" if len(numbers) > limit else ""
    return f"[{shown}{more}]"


def _flat_row_index(mask_rows: torch.Tensor) -> torch.Tensor:
    """Row numbers (last axis) where a ``... x n`` mask is ``True``, over all batches."""
    return torch.unique(mask_rows.nonzero()[:, -1])


def check_padded(
    x: torch.Tensor,
    name: str = "x",
    num_words: int | None = None,
    allow_empty: bool = False,
) -> torch.Tensor:
    """Validate a padded word-index tensor and return it unchanged.

    Args:
        x: ``... x n x L`` integer tensor of word ids padded with :data:`PAD`.
        name: the argument name used in error messages.
        num_words: if given, every id must lie in ``[0, num_words)``.
        allow_empty: whether rows that hold only padding are allowed.

    Raises:
        TypeError: ``x`` is not an integer tensor.
        ValueError: ``x`` has fewer than 2 dimensions, holds negative ids other than
            :data:`PAD`, ids ``>= num_words``, or (unless ``allow_empty``) empty
            documents; the message names the offending rows.
    """
    if not torch.is_tensor(x):
        raise TypeError(f"{name} must be a torch.long tensor of word ids padded with lvgp.PAD; got {type(x).__name__}")
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise TypeError(
            f"{name} must hold integer word ids (torch.long, padded with lvgp.PAD={PAD}); got dtype {x.dtype}. "
            "Encode texts with lvgp.Vocabulary.encode or counts with lvgp.counts_to_padded."
        )
    if x.dim() < 2:
        raise ValueError(f"{name} must be an (n x L) padded word-index tensor; got shape {tuple(x.shape)}")
    if not x.numel():
        row_max = x.new_full(x.shape[:-1], PAD)  # rows of width 0 are empty
    else:  # two passes over a large x (a corpus of a million documents), masks only to name rows
        if int(x.min()) < PAD:  # PAD = -1: any other negative id is smaller
            rows = _flat_row_index(((x < 0) & (x != PAD)).any(-1))
            raise ValueError(
                f"{name} holds negative word ids other than the padding value lvgp.PAD={PAD} in rows {_rows_text(rows)}"
            )
        row_max = x.amax(-1)
    if num_words is not None and row_max.numel() and int(row_max.max()) >= num_words:
        rows = _flat_row_index(row_max >= num_words)
        raise ValueError(
            f"{name} holds word ids >= num_words={num_words} (largest {int(row_max.max())}) in rows {_rows_text(rows)}"
        )
    if not allow_empty:
        empty = row_max == PAD  # only padding: PAD is the smallest value left
        if empty.any():
            rows = _flat_row_index(empty)
            raise ValueError(f"{name} holds empty documents (only padding) in rows {_rows_text(rows)}")
    return x


#: :func:`pad_to_width`'s floating (packed, :mod:`lvgp.kernels.packed`) copies still alive, by ``id``: a weak
#: reference to the copy (its callback removes the entry), its source, and both version counters then
#: (:func:`padded_source`). Kept beside the tensors, not on them: nothing of it is saved or copied with a tensor.
_PADDED_COPIES: dict[int, tuple[weakref.ref, torch.Tensor, int, int]] = {}


def _forget_copy(key: int) -> Callable[[weakref.ref], None]:
    def forget(ref: weakref.ref) -> None:
        entry = _PADDED_COPIES.get(key)
        if entry is not None and entry[0] is ref:
            del _PADDED_COPIES[key]

    return forget


def pad_to_width(x: torch.Tensor, width: int) -> torch.Tensor:
    """Pad the last dimension of a padded tensor with :data:`PAD` up to ``width``. A floating tensor's copy
    (packed documents ``[features | word ids]``) is remembered with its source while it lives:
    :func:`padded_source`."""
    extra = width - x.shape[-1]
    if extra < 0:
        raise ValueError(f"cannot pad a tensor of width {x.shape[-1]} to the smaller width {width}")
    if extra == 0:
        return x
    out = torch.cat([x, x.new_full((*x.shape[:-1], extra), PAD)], dim=-1)
    if out.is_floating_point() and not (out.is_inference() or x.is_inference()):  # they have no version counters
        # a copy of a copy remembers the first source: no chain of copies kept alive (PaddedExactGP widens its
        # training inputs at every wider prediction)
        source = padded_source(x)
        source = x if source is None else source
        key = id(out)
        _PADDED_COPIES[key] = (weakref.ref(out, _forget_copy(key)), source, source._version, out._version)
    return out


def padded_source(x: torch.Tensor) -> torch.Tensor | None:
    """The tensor of which ``x`` is :func:`pad_to_width`'s copy (or a copy's copy), where neither has changed in
    place since (their version counters); else ``None``. Packed documents are padded to a common width at every
    kernel call (gpytorch's ``Kernel.__call__`` needs one width): :meth:`lvgp.kernels.WordSetKernel.word_ids` reads
    the source's word ids, converted and checked once, in place of the copy's again."""
    entry = _PADDED_COPIES.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    _, source, source_version, own_version = entry
    if x._version != own_version or source._version != source_version:
        return None
    return source


def pad_to_common_width(x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad ``x1`` and ``x2`` to the larger of their two widths (padding does not
    change any LDK value)."""
    width = max(x1.shape[-1], x2.shape[-1])
    return pad_to_width(x1, width), pad_to_width(x2, width)


#: the integer dtypes, besides ``int64``, in which the mini-batch estimators keep a padded corpus as
#: given (:meth:`~lvgp.base.encoding.DocumentEncoder.fit_transform`'s ``compact``), each batch cast to
#: ``int64`` when taken
COMPACT_IDS = (torch.int16, torch.int32)


#: the entries of a padded tensor that :func:`document_lengths` counts at once
_LENGTH_BLOCK = 2**24


class RaggedIds:
    """Documents' word ids without padding: row ``i``'s ids are ``flat[offsets[i] : offsets[i + 1]]``.

    What a corpus of texts is before it is padded. Padding a whole corpus makes an ``n x L`` array
    as wide as its longest document (20ng's 11,173 training texts: 11,173 x 4,299 ``int64``, 385 MB,
    where the median text has 58 known words); an estimator that predicts in blocks of like lengths
    pads each block to its own longest document instead (:meth:`padded`).

    ``flat``: ``int64`` ids, ``offsets``: ``n + 1`` non-decreasing ``int64`` from 0 to ``len(flat)``.
    """

    __slots__ = ("flat", "offsets")

    def __init__(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        flat, offsets = np.asarray(flat, dtype=np.int64), np.asarray(offsets, dtype=np.int64)
        if flat.ndim != 1 or offsets.ndim != 1 or len(offsets) < 1:
            raise ValueError(f"flat and offsets must be 1-D, offsets non-empty; got {flat.shape} and {offsets.shape}")
        if offsets[0] != 0 or offsets[-1] != len(flat) or bool((np.diff(offsets) < 0).any()):
            raise ValueError(f"offsets must rise from 0 to len(flat) = {len(flat)}; got {offsets[0]} to {offsets[-1]}")
        self.flat, self.offsets = flat, offsets

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]]) -> RaggedIds:
        """From a list of rows of ids (each row's ids in order)."""
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(offsets[-1]))
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Each document's number of words (with repetition): ``n`` ``int64``, as :func:`document_lengths`
        counts them in the padded layout."""
        return np.diff(self.offsets)

    def padded(self, rows: np.ndarray | torch.Tensor | None = None, width: int | None = None) -> torch.Tensor:
        """The documents ``rows`` (default all, in order) as an ``len(rows) x width`` ``int64`` tensor padded
        with :data:`PAD`, each row's words first (:func:`left_aligned`): what :func:`documents_at` gives of
        the padded corpus. ``width``: default the longest of those documents (at least 1); a longer
        document keeps its first ``width`` ids. Every id is written by one flat assignment."""
        starts, lengths = self.offsets[:-1], self.lengths
        if rows is not None:
            rows = np.asarray(rows.cpu() if isinstance(rows, torch.Tensor) else rows, dtype=np.int64)
            starts, lengths = starts[rows], lengths[rows]
        if width is None:
            width = max(1, int(lengths.max())) if len(lengths) else 1
        kept = np.minimum(lengths, width)
        total = int(kept.sum())
        out = np.full((len(kept), width), PAD, dtype=np.int64)
        first = np.cumsum(kept) - kept  # each row's first entry among the kept ids
        within = np.arange(total) - np.repeat(first, kept)  # each kept id's column
        out.reshape(-1)[np.repeat(np.arange(len(kept)) * width, kept) + within] = self.flat[
            np.repeat(starts, kept) + within
        ]
        return torch.from_numpy(out)

    def __repr__(self) -> str:
        return f"RaggedIds({len(self)} documents, {len(self.flat)} ids)"


def document_lengths(x: torch.Tensor | RaggedIds) -> torch.Tensor:
    """Number of words (with repetition) of each document: a ``(..., n)`` int64 tensor (of
    :class:`RaggedIds`: their :attr:`~RaggedIds.lengths`). A large
    ``n x L`` corpus is counted in blocks of rows: ``sum`` casts the whole mask to int64 first
    (4.7 GB over a million documents of 512 slots, the peak of a sparse GP-LVSM's setup)."""
    if isinstance(x, RaggedIds):
        return torch.from_numpy(x.lengths)
    if x.dim() != 2 or x.numel() <= _LENGTH_BLOCK:
        return (x != PAD).sum(-1)
    rows = max(1, _LENGTH_BLOCK // x.shape[-1])
    return torch.cat([(x[start : start + rows] != PAD).sum(-1) for start in range(0, x.shape[0], rows)])


def left_aligned(x: torch.Tensor) -> torch.Tensor:
    """Padded documents ``*b x n x L`` with each row's words first and its padding after them: the same
    multisets of words, in the layout in which a row's number of words is the width it needs
    (:func:`trim_to_longest`, :func:`documents_at`). ``x`` itself where no row has padding before a
    word (:func:`~lvgp.bow.Vocabulary.encode`'s and :func:`counts_to_padded`'s output); otherwise each
    row's words keep their order."""
    if x.dim() < 2 or x.shape[-1] < 2 or x.numel() == 0:
        return x
    pad = x == PAD
    if not bool((pad[..., :-1] & ~pad[..., 1:]).any()):
        return x
    order = torch.sort(pad.to(torch.uint8), dim=-1, stable=True).indices
    return x.gather(-1, order)


def same_documents(x1: torch.Tensor, x2: torch.Tensor) -> bool:
    """Whether padded documents ``x1`` and ``x2`` (``*b x n x L1`` and ``*b x n x L2``) hold the same words:
    equal ids in their common columns, and padding alone in the wider one's other columns (padding changes
    no kernel value, nor anything a :class:`~lvgp.kernels.mean_embedding.DocumentSet` derives)."""
    if x1.shape[:-1] != x2.shape[:-1]:
        return False
    width = min(x1.shape[-1], x2.shape[-1])
    wider = x1 if x1.shape[-1] > width else x2
    return torch.equal(x1[..., :width], x2[..., :width]) and bool((wider[..., width:] == PAD).all())


def without_padding_columns(x: torch.Tensor) -> torch.Tensor:
    """``x`` (``*b x n x L`` padded documents) without its trailing columns that hold padding alone (a view;
    at least one column): a block of short documents padded to a long one's width, as a prediction
    pads each block to the training documents', costs the sets derived from it nothing beyond its
    words. On the CPU; elsewhere ``x`` as given (its width read back to the host would be a wait at
    every mini-batch step, whose batches are cut to their longest document already)."""
    if x.shape[-1] <= 1 or x.numel() == 0 or x.device.type != "cpu":
        return x
    used = torch.nonzero((x != PAD).reshape(-1, x.shape[-1]).any(0)).ravel()
    width = int(used[-1]) + 1 if len(used) else 1
    return x if width == x.shape[-1] else x[..., :width]


def trim_to_longest(x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """The rows of ``n x L`` left-aligned padded documents (:func:`left_aligned`) cut to their longest
    document (at least one column), from their number of words (:func:`without_padding_columns` cuts
    documents of any layout, from the ids themselves).
    ``lengths``: the rows' :func:`document_lengths` where the caller keeps them on the host, so
    that cutting a batch on a GPU reads nothing back from it."""
    longest = document_lengths(x) if lengths is None else lengths
    return x[:, : max(1, int(longest.max()))]


def documents_at(
    x: torch.Tensor | RaggedIds, rows: torch.Tensor | np.ndarray, lengths: torch.Tensor | None = None
) -> torch.Tensor:
    """The documents ``x[rows]`` as the kernel takes them from a corpus held by a mini-batch
    estimator: cut to their longest document (:func:`trim_to_longest`, ``lengths`` its host-side
    lengths of those rows), and ``int64`` where the corpus keeps its ids in a :data:`COMPACT_IDS`
    dtype (other inputs, e.g. documents packed with features as float64, as they are). Of
    :class:`RaggedIds`: those rows padded to their longest (:meth:`RaggedIds.padded`)."""
    if isinstance(x, RaggedIds):
        return x.padded(rows)
    if lengths is None:
        batch = trim_to_longest(x[rows])
    else:  # the columns cut before the rows are gathered: no copy of the corpus's full width
        batch = x[:, : max(1, int(lengths.max()))][rows] if len(lengths) else x[rows, :1]
    return batch.long() if batch.dtype in COMPACT_IDS else batch


def counts_to_padded(counts, name: str = "X") -> torch.Tensor:
    """Convert a document-term count matrix to a padded word-index tensor.

    Args:
        counts: ``n x V`` scipy.sparse matrix or numpy array of non-negative integer
            counts (e.g. the output of ``sklearn.feature_extraction.text.CountVectorizer``).

    Returns:
        ``n x L`` long tensor where word ``v`` appears ``counts[i, v]`` times in row ``i``
        and ``L`` is the largest row sum; documents with no words are all :data:`PAD`.
    """
    if sp.issparse(counts):
        csr = sp.csr_matrix(counts)
    else:
        arr = np.asarray(counts)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D document-term count matrix; got shape {arr.shape}")
        csr = sp.csr_matrix(arr)
    data = csr.data
    row_of_entry = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    # three messages, worded as scikit-learn's own checks word them
    for bad_entries, problem in (
        (~np.isfinite(data), f"{name} contains NaN or infinity"),
        (data < 0, f"Negative values in data passed to {name}"),
        (data != np.round(data), f"{name} holds values that are not whole numbers"),
    ):
        if data.size and bad_entries.any():
            raise ValueError(
                f"{problem}: a bag of words holds non-negative integer counts (a tf-idf or normalised matrix is "
                f"not one); offending rows {_rows_text(np.unique(row_of_entry[bad_entries]))}"
            )
    csr.sum_duplicates()
    reps = csr.data.astype(np.int64)
    lengths = np.asarray(csr.sum(axis=1)).ravel().astype(np.int64)
    width = max(int(lengths.max()) if lengths.size else 0, 1)
    out = np.full((csr.shape[0], width), PAD, dtype=np.int64)
    word_ids = np.repeat(csr.indices.astype(np.int64), reps)
    doc_ids = np.repeat(np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr)), reps)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    positions = np.arange(word_ids.size) - np.repeat(starts, lengths)
    out[doc_ids, positions] = word_ids
    return torch.from_numpy(out)


def document_frequencies(x: torch.Tensor, num_words: int | None = None, rows_per_chunk: int = 65_536) -> np.ndarray:
    """The number of documents (rows of a padded ``n x L`` tensor) that hold each word id below
    ``num_words`` (``None``: the largest id present, plus one): a ``num_words`` int64 array. Each row is sorted and its first occurrences counted
    (chunks of ``rows_per_chunk`` rows); no count matrix is built: a million documents of reviews'
    lengths in seconds, several times faster than :func:`padded_to_counts` (``benchmarks/README.md``)."""
    check_padded(x, "x", num_words=num_words, allow_empty=True)
    if x.dim() != 2:
        raise ValueError(f"x must be a 2-D (n x L) padded tensor; got shape {tuple(x.shape)}")
    if num_words is None:
        num_words = max(0, int(x.max()) + 1) if x.numel() else 0
    df = np.zeros(num_words, dtype=np.int64)
    # numpy sorts rows of int32 about 10x faster than torch sorts int64
    narrow = np.int32 if num_words <= np.iinfo(np.int32).max else np.int64
    for start in range(0, x.shape[0], rows_per_chunk):
        ids = np.sort(x[start : start + rows_per_chunk].cpu().numpy().astype(narrow, copy=False), axis=-1)
        first = np.ones(ids.shape, dtype=bool)
        first[:, 1:] = ids[:, 1:] != ids[:, :-1]
        df += np.bincount(ids[first & (ids != PAD)], minlength=num_words)
    return df


def padded_to_counts(x: torch.Tensor, num_words: int) -> sp.csr_matrix:
    """``n x num_words`` scipy.sparse CSR count matrix of a padded ``n x L`` tensor."""
    check_padded(x, "x", num_words=num_words, allow_empty=True)
    if x.dim() != 2:
        raise ValueError(f"x must be a 2-D (n x L) padded tensor; got shape {tuple(x.shape)}")
    arr = x.cpu().numpy()
    rows, cols = np.nonzero(arr != PAD)
    data = np.ones(rows.size, dtype=np.float64)
    mat = sp.csr_matrix((data, (rows, arr[rows, cols])), shape=(arr.shape[0], num_words))
    mat.sum_duplicates()
    return mat
