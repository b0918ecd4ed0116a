r"""The arithmetic of kernel mean embeddings of padded word-index sets (thesis eqs. 3.1-3.3, 3.9).

A document :math:`D_i` is the (weighted) empirical measure of its words,
:math:`\mu_i = \sum_{s\in D_i} w_{is}\,k(\cdot, \mathbf x_s)` with :math:`\sum_s w_{is} = 1`
(:func:`document_weights`). Inner products of such embeddings are weighted sums of the
embedding kernel over word pairs, never evaluated as the :math:`O(n_1 n_2 L_1 L_2 q)` double sum:

* :func:`mean_embedding_gram` -- :math:`\langle\mu_i,\mu_j\rangle` for all pairs: with :math:`C` the
  :math:`n \times u` matrix of normalized word counts over the :math:`u` distinct words present
  and :math:`G` their embedding Gram, :math:`C_1 G C_2^\top`, two sparse products
  (``torch.nn.functional.embedding_bag``) in :math:`O(\mathrm{nnz}_2 u_1 + \mathrm{nnz}_1 n_2 + u_1 u_2 q)`;
  explicit embeddings (linear kernel) are :math:`(C_1 X)(C_2 X)^\top`.
* :func:`paired_inner` -- row-wise :math:`\langle\mu^{(1)}_i,\mu^{(2)}_i\rangle`, each document's own
  :math:`L_1 \times L_2` Gram, :math:`O(n L_1 L_2 q)`.
* :func:`self_inner` -- :math:`\|\mu_i\|^2` through the Gram of the distinct words,
  :math:`\mathrm{diag}(C G C^\top)` in :math:`O(\mathrm{nnz}\,u)`.
* :func:`bag_of_words_inner` -- :math:`\langle\phi_i,\phi_j\rangle` of the weighted word measures
  themselves (the identity word kernel), a sparse product of count matrices.

The functions take the word ids and weights of :func:`document_weights`, the ``*b x V x q``
table of word vectors, and the embedding Gram as a callable (``... x m1 x q``, ``... x m2 x q``
-> ``... x m1 x m2``).
"""

from __future__ import annotations

import contextlib
import typing
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..base.shapes import broadcast_shapes
from ..bow.padded import PAD

__all__ = [
    "DocumentSet",
    "document_weights",
    "mean_vectors",
    "mean_embedding_gram",
    "paired_inner",
    "self_inner",
    "gram_quadratic_forms",
    "bag_of_words_inner",
    "single_batch",
]

GramFunction = Callable[[Tensor, Tensor], Tensor]
#: ``(u x q vectors, c x L ids, c x L weights) -> c``: :math:`\mathbf w_c^\top K(X_c, X_c)\,\mathbf w_c`
QuadraticForms = Callable[[Tensor, Tensor, Tensor], Tensor]

# Entries of per-document L1 x L2 Gram blocks evaluated at once (bounds memory of the diagonal path).
_BLOCK_ENTRIES = 2**22
# About how many buckets of like widths self_inner cuts documents into (each costs a few dispatches)
_SELF_BUCKETS = 8
# Entries of a word Gram above which self_inner takes the buckets on a GPU too (512 MB of float64)
_LARGE_GRAM = 2**26
# The fewest Gram entries a bucket of self_inner holds on average for the buckets to be taken
_BUCKET_ENTRIES = 2**16


def gather_rows(table: Tensor, idx: Tensor) -> Tensor:
    """``table[..., idx, :]`` with broadcasting batch dims: table ``*kb x V x q``, idx ``*b x m`` -> ``*B x m x q``."""
    if table.dim() == 2:
        return table[idx]
    batch = broadcast_shapes(table.shape[:-2], idx.shape[:-1])
    table = table.expand(*batch, *table.shape[-2:])
    idx = idx.expand(*batch, idx.shape[-1]).unsqueeze(-1).expand(*batch, idx.shape[-1], table.shape[-1])
    return table.gather(-2, idx)


def document_weights(x: Tensor, dtype: torch.dtype, table: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Ids with padding replaced by 0, and each word's share of its document (0 on padding):
    ``1/|D_i|`` (the thesis's empirical measure), or with a per-word ``table`` of weights
    ``table[v] / sum of the document's weights``."""
    mask = x != PAD
    ids = torch.where(mask, x, torch.zeros_like(x))
    weights = mask.to(dtype) if table is None else table.to(dtype)[ids] * mask
    return ids, weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)


#: the widest range of ids :func:`unique_ids` marks in a table, as a multiple of their number (wider
#: ranges are sorted, as ``torch.unique`` does)
_MARKED_RANGE_PER_ID = 4


def unique_ids(ids: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.unique(ids, return_inverse=True)``: the sorted distinct word ids (``ids``' dtype) and each
    position's index into them (``int64``, ``ids``' shape), the same tensors to the bit. On the CPU,
    where the ids span at most a few times their number (a batch's word ids within the vocabulary),
    by marking them in a table of their range instead of sorting them: a pass over the ids and one
    over the range against the sort's ``N log N`` (``benchmarks/README.md``, issue 60). Elsewhere
    (CUDA, where the sort reads back to the host once and this twice) the sort."""
    flat = ids.reshape(-1)
    if ids.device.type != "cpu" or flat.numel() == 0 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        return torch.unique(ids, return_inverse=True)
    low, high = (int(v) for v in torch.aminmax(flat))  # one read of both
    span = high - low + 1
    if span > _MARKED_RANGE_PER_ID * flat.numel() + 2**16:
        return torch.unique(ids, return_inverse=True)
    shifted = (flat if ids.dtype in (torch.int32, torch.int64) else flat.long()) - low  # int16 ids do not index
    present = torch.zeros(span, dtype=torch.bool)
    if shifted.dtype == torch.int64:  # marked by scatter_ (int64 indices alone), in half an indexed assignment's time
        present.scatter_(0, shifted, torch.ones((), dtype=torch.bool).expand(len(shifted)))
    else:  # int32 ids (a compact corpus) are not copied to int64
        present[shifted] = True
    words = present.nonzero().squeeze(1)
    position = present.cumsum(0).sub_(1)  # int64: each marked id's index among the marked
    # read back by index_select (int32 or int64 indices), in a third of an indexed read's time
    return words.add_(low).to(ids.dtype), position.index_select(0, shifted).view(ids.shape)


class Bags(typing.NamedTuple):
    """Documents as bags of distinct words for ``embedding_bag``'s offsets form: ``words``
    (local word ids, document after document), ``offsets`` (where each document starts),
    ``weights`` (count / document length); no padding, repeated words merged."""

    words: Tensor
    offsets: Tensor
    weights: Tensor
    n: int
    #: :meth:`transposed`'s result by table size, where the bags are kept (``DocumentSet.bags``)
    memo: dict | None = None

    def rows(self) -> Tensor:
        """The document of every entry of ``words`` (its length given: no read of the counts back to
        the host, which on a GPU waits for every queued kernel)."""
        ends = torch.diff(self.offsets, append=self.offsets.new_tensor([len(self.words)]))
        return torch.repeat_interleave(
            torch.arange(self.n, device=self.words.device), ends, output_size=len(self.words)
        )

    def transposed(self, size: int) -> Bags:
        """The transposed weight matrix :math:`C^\top` as bags: for each of ``size`` words (the rows of
        the table the bags index), its documents, in document order, with the same weights."""
        if self.memo is not None and size in self.memo:
            return self.memo[size]
        order = torch.argsort(self.words, stable=True)
        counts = torch.bincount(self.words, minlength=size)
        flipped = Bags(self.rows()[order], torch.cumsum(counts, 0) - counts, self.weights[order], size)
        if self.memo is not None:
            self.memo[size] = flipped
        return flipped


def _bag_offsets(counts: Tensor) -> Tensor:
    """Where each bag starts in ``embedding_bag``'s offsets form, from the entries of each bag."""
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)[:-1]])


def bags(local: Tensor, weights: Tensor, size: int | None = None) -> Bags:
    """Bags of one ``n x L`` tensor of local word ids and their ``1/|D_i|`` weights (0 on
    padding). Padding costs a long corpus nothing: ``embedding_bag`` over a padded ``n x L``
    input reads a Gram row for every padding slot (20ng documents after the 1% cut: ~470 slots
    for ~55 tokens). ``size``: a bound on the local ids (the number of distinct words), when the
    caller knows it; otherwise it is read from ``local`` (a device-to-host read on a GPU)."""
    n, width = local.shape
    kept = (weights > 0).flatten().nonzero().squeeze(-1)  # one read of the count back to the host, not three
    rows = torch.div(kept, max(1, width), rounding_mode="floor")
    if size is None:
        size = int(local.max()) + 1 if local.numel() else 1
    size = max(1, size)
    keys = rows * size + local.flatten()[kept]
    if keys.device.type == "cpu" and n * size < 2**31:  # a CPU sorts int32 keys ~1.5x as fast: the same result
        narrow, inverse = torch.unique(keys.to(torch.int32), return_inverse=True)
        keys = narrow.to(rows.dtype)
    else:
        keys, inverse = torch.unique(keys, return_inverse=True)
    summed = torch.zeros(len(keys), dtype=weights.dtype, device=weights.device)
    summed.index_add_(0, inverse, weights.flatten()[kept])
    offsets = _bag_offsets(torch.bincount(keys // size, minlength=n))
    return Bags(keys % size, offsets, summed, n, memo={})


class _BagProduct(torch.autograd.Function):
    r""":math:`C\,T` for the bags' weight matrix :math:`C` (``embedding_bag``), with the gradient
    :math:`C^\top \bar{Y}` as a second ``embedding_bag`` over the transposed bags
    (:meth:`Bags.transposed`). ``embedding_bag``'s own backward sorts the ids, zero-fills the
    ``u x m`` gradient and adds one row at a time: several times the time of the product it
    differentiates (a matching fit's cross term: ``benchmarks/README.md``)."""

    @staticmethod
    def forward(ctx: Any, table: Tensor, bags: Bags) -> Tensor:
        ctx.bags, ctx.size = bags, table.shape[0]
        return F.embedding_bag(bags.words, table, bags.offsets, per_sample_weights=bags.weights, mode="sum")

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        flipped = ctx.bags.transposed(ctx.size)
        return (
            F.embedding_bag(
                flipped.words, grad.contiguous(), flipped.offsets, per_sample_weights=flipped.weights, mode="sum"
            ),
            None,
        )


def bag_product(bags: Bags, table: Tensor) -> Tensor:
    """``C @ table`` for the bags' ``n x u`` weight matrix ``C``: ``n x table.shape[1]`` (eq. 3.9's
    sparse products; differentiable in ``table``, and in the weights where they require a gradient)."""
    if bags.words.numel() == 0:
        return table.new_zeros(bags.n, table.shape[1])
    if bags.weights.requires_grad:  # rare (learned word weights): embedding_bag's own gradient for both
        return F.embedding_bag(bags.words, table, bags.offsets, per_sample_weights=bags.weights, mode="sum")
    return _BagProduct.apply(table, bags)


def sandwich(bags1: Bags, gram: Tensor, bags2: Bags, symmetric: bool) -> Tensor:
    r""":math:`C_1 G C_2^\top` for one batch element (``gram`` is ``u1 x u2``): two
    ``embedding_bag`` products, in the cheaper order."""
    nnz1, nnz2 = bags1.words.numel(), bags2.words.numel()
    n1, n2 = bags1.n, bags2.n
    u1, u2 = gram.shape
    if n1 == 0 or n2 == 0:
        return gram.new_zeros(n1, n2)
    if nnz2 * u1 + nnz1 * n2 <= nnz1 * u2 + nnz2 * n1:
        right = bag_product(bags2, gram if symmetric else gram.mT.contiguous())  # n2 x u1: C2 G^T
        return bag_product(bags1, right.mT.contiguous())  # n1 x n2
    left = bag_product(bags1, gram.contiguous())  # n1 x u2: C1 G
    return bag_product(bags2, left.mT.contiguous()).mT


def single_batch(x: Tensor) -> Tensor | None:
    """The ``n x L`` documents of a batched ``*b x n x L`` input whose batch elements are all
    the same (gpytorch expands inputs over a multi-output model's batch: ``IndependentMultitask``
    strategies, batched ``ScaleKernel``), else ``None``. Costs one comparison of the ids."""
    if x.dim() <= 2:
        return None
    flat = x.reshape(-1, *x.shape[-2:])
    if all(st == 0 for st in x.stride()[:-2]) or bool((flat == flat[:1]).all()):
        return flat[0]
    return None


class DocumentSet:
    """Padded documents as the inner products take them: ``ids`` (``*b x n x L``, padding as 0),
    their ``weights`` (each document's measure, 0 on padding), and what is derived from them alone,
    memoized -- the distinct words, the bags, the bag-of-words Gram with another set. The LDK keeps
    the sets of the documents it is evaluated on (the same training documents at every optimizer
    step), so that nothing here is computed twice."""

    def __init__(self, ids: Tensor, weights: Tensor) -> None:
        self.ids, self.weights = ids, weights
        self.memo: dict[Any, Any] = {}

    @property
    def unbatched(self) -> bool:
        return self.ids.dim() == 2

    def distinct(self) -> tuple[Tensor, Tensor]:
        """The distinct word ids and each position's index into them (:func:`unique_ids`)."""
        if "distinct" not in self.memo:
            self.memo["distinct"] = unique_ids(self.ids)
        return self.memo["distinct"]

    def bags(self) -> Bags:
        """The documents as :class:`Bags` over :meth:`distinct` (unbatched sets)."""
        if "bags" not in self.memo:
            words, local = self.distinct()
            self.memo["bags"] = bags(local, self.weights, len(words))
        return self.memo["bags"]

    def self_buckets(self) -> SelfBuckets:
        """The documents' distinct words in buckets of like widths (:class:`SelfBuckets`)."""
        if "self-buckets" not in self.memo:
            self.memo["self-buckets"] = SelfBuckets(self.bags())
        return self.memo["self-buckets"]

    def with_other(self, kind: str, other: DocumentSet, compute: Callable[[], Any]) -> Any:
        """``compute()`` for this set and ``other``, memoized for the two ``other`` sets of each
        ``kind`` used last (the training set against itself and against one other set, at most: a
        sparse GP's inducing documents against themselves and against the batch of the step)."""
        entries = self.memo.setdefault(("pairs", kind), [])
        for i, (held, value) in enumerate(entries):
            if held is other:
                entries.append(entries.pop(i))
                return value
        value = compute()
        entries.append((other, value))
        del entries[:-2]
        return value


class SelfBuckets:
    r"""Bags laid out for each document's own Gram: documents sorted by their number of distinct
    words :math:`L_i` and cut into about ``_SELF_BUCKETS`` buckets (each at most ``_BLOCK_ENTRIES``
    Gram entries; a bucket's widest at most 5/4 of its narrowest plus 8, or more where the lengths
    spread over more than 1.25^8), each an ``c x L`` table of local word ids and weights
    (0 past a document's words). ``entries``: the Gram entries of one evaluation,
    :math:`\sum_\text{buckets} c\,L^2`."""

    def __init__(self, b: Bags) -> None:
        rows = b.rows()
        lengths = torch.bincount(rows, minlength=b.n)
        position = torch.arange(len(b.words), device=rows.device) - b.offsets[rows]
        width = max(1, int(lengths.max())) if b.n else 1
        ids = b.words.new_zeros(b.n, width)
        weights = b.weights.new_zeros(b.n, width)
        ids[rows, position] = b.words
        weights[rows, position] = b.weights
        order = torch.argsort(lengths, stable=True)
        sorted_lengths = lengths[order].tolist()
        self.buckets: list[tuple[Tensor, Tensor]] = []
        self.entries = 0
        # widths grow by a ratio of at least 5/4, and by more where the lengths spread wider, so that
        # there are about _SELF_BUCKETS buckets (each costs its own few dispatches)
        spread = max(1, sorted_lengths[-1]) / max(1, sorted_lengths[0]) if b.n else 1.0
        ratio = max(1.25, spread ** (1 / _SELF_BUCKETS))
        start = 0
        while start < b.n:
            first = max(1, sorted_lengths[start])
            end = start + 1
            while end < b.n:
                widest = max(1, sorted_lengths[end])
                if widest > first * ratio + 8 or (end + 1 - start) * widest**2 > _BLOCK_ENTRIES:
                    break
                end += 1
            widest = max(1, sorted_lengths[end - 1])
            chosen = order[start:end]
            self.buckets.append((ids[chosen, :widest], weights[chosen, :widest]))
            self.entries += (end - start) * widest**2
            start = end
        self.inverse = torch.empty_like(order)
        self.inverse[order] = torch.arange(b.n, device=order.device)

    def inner(self, vectors: Tensor, quadratic: QuadraticForms) -> Tensor:
        r""":math:`w_i^\top G_i w_i` for every document, in the bags' order: ``vectors`` are the
        ``u x q`` latent vectors of the distinct words, ``quadratic`` computes a bucket's forms from
        ``(vectors, ids, weights)`` (:func:`gram_quadratic_forms`, or the embedding kernel's own)."""
        return torch.cat([quadratic(vectors, ids, w) for ids, w in self.buckets])[self.inverse]


def gram_quadratic_forms(gram: GramFunction) -> QuadraticForms:
    r"""The quadratic forms :math:`\mathbf w_c^\top G(X_c, X_c)\,\mathbf w_c` through a Gram function:
    ``(u x q table, c x L ids, c x L weights) -> c``, the ``c x L x L`` Grams of ``table[ids]`` with
    themselves."""

    def forms(table: Tensor, ids: Tensor, weights: Tensor) -> Tensor:
        vectors = table[ids]  # c x L x q
        return torch.einsum("cl,clm,cm->c", weights, gram(vectors, vectors), weights)

    return forms


def mean_vectors(d: DocumentSet, latent: Tensor) -> Tensor:
    r"""Explicit kernel mean embeddings ``C X`` (linear embedding kernel): ``*B x n x q``. Unbatched
    inputs go through their bags of distinct words (``embedding_bag``: no work for padding or
    repeated words, :math:`O(\mathrm{nnz}\,q)`); batched ones gather every padded position."""
    if d.unbatched and latent.dim() == 2:
        words, _ = d.distinct()
        return bag_product(d.bags(), latent.index_select(0, words))
    vectors = gather_rows(latent, d.ids.flatten(-2)).unflatten(-2, d.ids.shape[-2:])
    return (d.weights.unsqueeze(-1) * vectors).sum(-2)


def _union(d1: DocumentSet, d2: DocumentSet) -> tuple[Tensor, Bags, Bags]:
    """The distinct words of two unbatched sets together, and each set's bags over them."""

    def compute() -> tuple[Tensor, Bags, Bags]:
        if d1 is d2:
            return d1.distinct()[0], d1.bags(), d1.bags()
        words, inverse = unique_ids(torch.cat([d1.ids.flatten(), d2.ids.flatten()]))
        b1 = bags(inverse[: d1.ids.numel()].view(d1.ids.shape), d1.weights, len(words))
        b2 = bags(inverse[d1.ids.numel() :].view(d2.ids.shape), d2.weights, len(words))
        return words, b1, b2

    return d1.with_other("union", d2, compute)


def paired_inner(d1: DocumentSet, d2: DocumentSet, latent: Tensor, gram: GramFunction, explicit: bool) -> Tensor:
    r"""Row-wise :math:`\langle\mu^{(1)}_i, \mu^{(2)}_i\rangle` (eq. 3.2): ``*b1 x n x L1`` and
    ``*b2 x n x L2`` documents -> ``*B x n``: through the Gram of their distinct words where it is
    smaller than the documents' own ``L1 x L2`` blocks (long documents), else in blocks of at most
    ``_BLOCK_ENTRIES`` Gram entries."""
    if explicit:
        return (mean_vectors(d1, latent) * mean_vectors(d2, latent)).sum(-1)
    ids1, w1, ids2, w2 = d1.ids, d1.weights, d2.ids, d2.weights
    if d1.unbatched and d2.unbatched and latent.dim() == 2 and ids1.shape[0]:
        words, b1, b2 = _union(d1, d2)
        if len(words) ** 2 < ids1.shape[0] * ids1.shape[1] * ids2.shape[1]:
            v = latent.index_select(-2, words)
            left = bag_product(b1, gram(v, v))  # n x u: C1 G
            rows = b2.rows()
            return torch.zeros(b2.n, dtype=left.dtype, device=left.device).index_add_(
                0, rows, left[rows, b2.words] * b2.weights
            )
    n = ids1.shape[-2]
    step = max(1, _BLOCK_ENTRIES // max(1, ids1.shape[-1] * ids2.shape[-1]))
    out = []
    for start in range(0, n, step):
        sl = slice(start, start + step)
        v1 = gather_rows(latent, ids1[..., sl, :].flatten(-2)).unflatten(-2, ids1[..., sl, :].shape[-2:])
        v2 = gather_rows(latent, ids2[..., sl, :].flatten(-2)).unflatten(-2, ids2[..., sl, :].shape[-2:])
        # documents to the front, so the kernel's batch shape meets the data's batch dims
        g = gram(v1.movedim(-3, 0), v2.movedim(-3, 0)).movedim(0, -3)
        out.append(((w1[..., sl, :].unsqueeze(-1) * g).sum(-2) * w2[..., sl, :]).sum(-1))
    if not out:
        batch = broadcast_shapes(ids1.shape[:-2], ids2.shape[:-2], latent.shape[:-2])
        return latent.new_zeros(*batch, 0)
    return torch.cat(out, dim=-1)


def self_inner(
    d: DocumentSet,
    latent: Tensor,
    gram: GramFunction,
    explicit: bool,
    batch_shape: torch.Size = torch.Size(),
    quadratic: QuadraticForms | None = None,
) -> Tensor:
    r""":math:`\|\mu_i\|^2` for every document (``*b x n x L`` -> ``*B x n``), for unbatched inputs
    (batched ones take :func:`paired_inner`) the cheaper of two exact routes:

    * each document's own Gram of its :math:`L_i` distinct words, documents sorted by
      :math:`L_i` and batched in buckets of like widths (:class:`SelfBuckets`): about
      :math:`\sum_i L_i^2` Gram entries (a kernel without ``batch_shape``; buckets of at least
      ``_BUCKET_ENTRIES`` entries on average, not many tiny operators; on CPU, and on a GPU where
      the Gram of all distinct words would exceed ``_LARGE_GRAM`` entries: below that, the buckets'
      launches and the host reads that cut them cost a GPU more than the entries they save);
    * the Gram of all :math:`u` distinct words, :math:`\mathrm{diag}(C G C^\top)`: :math:`u^2`
      entries and :math:`O(\mathrm{nnz}\,u)` for the sparse product.

    Both replace :func:`paired_inner`'s :math:`O(n L^2 q)` over the padded width. ``quadratic``: the
    embedding kernel's ``quadratic_forms`` for the buckets (the RBF's has a closed-form gradient),
    else the buckets go through ``gram``. The two sizes on matching's descriptions:
    ``benchmarks/matching_speed.py``."""
    if not d.unbatched or latent.dim() != 2 or explicit or d.ids.shape[0] == 0:
        return paired_inner(d, d, latent, gram, explicit)
    words, _ = d.distinct()
    v = latent.index_select(-2, words)
    # on a GPU the buckets' launches and host reads cost more than the entries they save, unless the
    # Gram of all distinct words is large (a corpus's 50,000 words: 2.5G entries)
    if not len(batch_shape) and (latent.device.type == "cpu" or len(words) ** 2 > _LARGE_GRAM):
        buckets = d.self_buckets()
        # and only buckets large enough that their operators are not tiny ones (on two threads,
        # many tiny parallel operators spin: the demo's predictions took 1.7x the CPU time)
        if buckets.entries < len(words) ** 2 and buckets.entries >= _BUCKET_ENTRIES * len(buckets.buckets):
            return buckets.inner(v, quadratic or gram_quadratic_forms(gram))
    b = d.bags()
    left = bag_product(b, gram(v, v))  # n x u: C G
    rows = b.rows()
    return torch.zeros(b.n, dtype=left.dtype, device=left.device).index_add_(0, rows, left[rows, b.words] * b.weights)


def mean_embedding_gram(
    d1: DocumentSet,
    d2: DocumentSet,
    latent: Tensor,
    gram: GramFunction,
    explicit: bool,
    symmetric: bool = False,
    gram_symmetric: bool = False,
    batch_shape: torch.Size = torch.Size(),
) -> Tensor:
    r""":math:`\langle\mu_i,\mu_j\rangle` (eq. 3.9 before the level-2 kernel) between all documents:
    ``*b1 x n1 x L1``, ``*b2 x n2 x L2`` -> ``*B x n1 x n2``. ``symmetric`` asserts that the two
    sets are the same documents; ``gram_symmetric`` that the embedding Gram of a set with itself is
    symmetric (the built-in kernels), which saves a transpose. ``batch_shape``: the kernel's."""
    ids1, ids2 = d1.ids, d2.ids
    if ids1.shape[-2] == 0 or ids2.shape[-2] == 0:
        batch = broadcast_shapes(ids1.shape[:-2], ids2.shape[:-2], latent.shape[:-2], batch_shape)
        return latent.new_zeros(*batch, ids1.shape[-2], ids2.shape[-2])
    if explicit:
        m1 = mean_vectors(d1, latent)
        return m1 @ (m1 if symmetric else mean_vectors(d2, latent)).mT
    words1, local1 = d1.distinct()
    words2, local2 = (words1, local1) if symmetric else d2.distinct()
    v1 = latent.index_select(-2, words1)
    g = gram(v1, v1 if symmetric else latent.index_select(-2, words2))
    batch = broadcast_shapes(ids1.shape[:-2], ids2.shape[:-2], g.shape[:-2])
    symmetric_gram = symmetric and gram_symmetric
    if d1.unbatched and d2.unbatched and g.dim() == 2:  # the common case: the bags are memoized
        return sandwich(d1.bags(), g, d1.bags() if symmetric else d2.bags(), symmetric_gram)

    def flat(t: Tensor) -> Tensor:
        return t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:])

    parts = []
    for i1, ww1, gg, i2, ww2 in zip(flat(local1), flat(d1.weights), flat(g), flat(local2), flat(d2.weights)):
        bags1 = bags(i1, ww1, len(words1))
        bags2 = bags1 if symmetric else bags(i2, ww2, len(words2))
        parts.append(sandwich(bags1, gg, bags2, symmetric_gram))
    if not parts:
        return g.new_zeros(*batch, ids1.shape[-2], ids2.shape[-2])
    return torch.stack(parts).view(*batch, ids1.shape[-2], ids2.shape[-2])


def bag_of_words_inner(d1: DocumentSet, d2: DocumentSet, symmetric: bool = False) -> Tensor:
    r""":math:`\langle\phi_i,\phi_j\rangle = \sum_v w_{iv} w_{jv}` between the weighted word measures of
    all documents (the identity word kernel :math:`\delta_{vw}`): ``*b1 x n1 x L1``, ``*b2 x n2 x L2``
    -> ``*B x n1 x n2``. The sparse product :math:`C_1 C_2^\top` of the two weight matrices over the
    :math:`u` distinct words present, by ``embedding_bag`` against dense blocks of :math:`C_2^\top`
    (at most ``2**24`` entries each): :math:`O(\mathrm{nnz}_1 n_2 + u\,n_2)`, never a ``V x V``
    matrix. Constant in every parameter: computed without autograd, once per pair of sets."""
    return d1.with_other("bag-of-words", d2, lambda: _bag_of_words_inner(d1, d2, symmetric))


def _bag_of_words_inner(d1: DocumentSet, d2: DocumentSet, symmetric: bool) -> Tensor:
    ids1, w1, ids2, w2 = d1.ids, d1.weights, d2.ids, d2.weights
    batch = broadcast_shapes(ids1.shape[:-2], ids2.shape[:-2])
    n1, n2 = ids1.shape[-2], ids2.shape[-2]
    with torch.no_grad():
        if d1.unbatched and d2.unbatched:
            pairs = [_shared_word_bags(d1, d2)]
        else:
            _, inverse = unique_ids(torch.cat([ids1.flatten(), ids2.flatten()]))
            local1 = inverse[: ids1.numel()].view(ids1.shape)
            local2 = inverse[ids1.numel() :].view(ids2.shape)
            u = int(inverse.max()) + 1 if inverse.numel() else 1

            def flat(t: Tensor) -> Tensor:
                return t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:])

            pairs = []
            for i1, ww1, i2, ww2 in zip(flat(local1), flat(w1), flat(local2), flat(w2)):
                bags1 = bags(i1, ww1)
                bags2 = bags1 if symmetric else bags(i2, ww2)
                pairs.append((bags1, bags2.words, bags2.rows(), bags2.weights, u))
        parts = []
        for bags1, words2, rows2, weights2, u in pairs:
            out = w1.new_zeros(n1, n2)
            sparse1 = _bags_csr(bags1, u)
            step = max(1, 2**24 // max(u, 1))
            for start in range(0, n2, step):
                width = min(step, n2 - start)
                block = w1.new_zeros(max(u, 1), width)
                if width == n2:  # one block: every entry (no mask, whose indexing reads a count to the host)
                    block[words2, rows2] = weights2
                else:
                    inside = (rows2 >= start) & (rows2 < start + width)
                    block[words2[inside], rows2[inside] - start] = weights2[inside]
                out[:, start : start + width] = bag_product(bags1, block) if sparse1 is None else sparse1 @ block
            parts.append(out)
        return torch.stack(parts).view(*batch, n1, n2) if parts else w1.new_zeros(*batch, n1, n2)


@contextlib.contextmanager
def _csr_in_beta() -> Iterator[None]:
    """A block in which torch's notice that its sparse CSR tensors are "in beta" is not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)
        yield


def _csr(crow: Tensor, cols: Tensor, values: Tensor, size: tuple[int, int]) -> Tensor:
    return torch.sparse_csr_tensor(crow, cols, values, size, check_invariants=False)


def _bags_csr(b: Bags, size: int) -> Tensor | None:
    """The bags' ``n x size`` weight matrix :math:`C` as a CSR tensor with ``int32`` indices, for a
    product with a dense block on the CPU, which torch runs on all its threads (``embedding_bag``'s
    forward runs on one: ``benchmarks/README.md``, issue 60); ``None`` off the CPU, where
    ``embedding_bag`` serves, and where the indices would not fit ``int32`` or there is no entry."""
    nnz = b.words.numel()
    if b.words.device.type != "cpu" or nnz == 0 or max(nnz, size, b.n) >= 2**31:
        return None
    crow = torch.cat([b.offsets, b.offsets.new_tensor([nnz])]).to(torch.int32)
    with _csr_in_beta():
        return _csr(crow, b.words.to(torch.int32), b.weights, (b.n, size))


def _shared_word_bags(d1: DocumentSet, d2: DocumentSet) -> tuple[Bags, Tensor, Tensor, Tensor, int]:
    """For :math:`C_1 C_2^\top` of two unbatched sets: the first set's bags over the ``c`` words the
    two share (ids ``0 .. c - 1``; its other words go to row ``c``, which no entry of the second set
    fills, and on the CPU its entries on them are left out, each document's offset recounted), and
    the second set's entries (ids, documents, weights; its words the first set lacks go to row
    ``c + 1``, which no entry of the first set reads), with the rows, ``c + 2``. Only shared words
    add to the product, so the dense block of the second set has ``c + 2`` rows, not one per word of
    either set (a sparse GP's batch against its inducing documents: about a third). From each set's
    memoized distinct words and bags, without a union of the two; one read back to the host (``c``;
    two on the CPU)."""
    b1, b2 = d1.bags(), d2.bags()
    if d1 is d2:
        return b1, b2.words, b2.rows(), b2.weights, len(d1.distinct()[0])
    words1, words2 = d1.distinct()[0], d2.distinct()[0]
    at = torch.searchsorted(words2, words1).clamp_max(max(0, len(words2) - 1))
    shared = words2[at] == words1 if len(words2) else torch.zeros_like(words1, dtype=torch.bool)
    count = int(shared.sum())
    shared_id1 = torch.where(shared, torch.cumsum(shared, 0) - 1, count)  # per word of set 1
    # per word of set 2 (and a last slot that takes set 1's words set 2 lacks): c + 1 where set 1 lacks it
    shared_id2 = torch.full((len(words2) + 1,), count + 1, dtype=words2.dtype, device=words2.device)
    shared_id2.scatter_(0, torch.where(shared, at, len(words2)), shared_id1)
    first = Bags(shared_id1[b1.words], b1.offsets, b1.weights, b1.n)
    if b1.words.device.type == "cpu":  # set 1's entries on shared words alone: the others read row c's zeros
        kept = shared[b1.words].nonzero().squeeze(1)  # one read of their number (a GPU's step keeps its one)
        offsets = _bag_offsets(torch.bincount(b1.rows()[kept], minlength=b1.n))
        first = Bags(first.words[kept], offsets, b1.weights[kept], b1.n)
    return (
        first,
        shared_id2[b2.words],
        b2.rows(),
        b2.weights,
        count + 2,
    )


def bag_of_words_paired(d1: DocumentSet, d2: DocumentSet) -> Tensor:
    r"""Row-wise :math:`\langle\phi^{(1)}_i,\phi^{(2)}_i\rangle = \sum_{s,t} w_{is} w_{it} [v_s = v_t]`:
    ``*b1 x n x L1``, ``*b2 x n x L2`` -> ``*B x n`` (repeated words need no merging: the double sum
    over occurrences adds up their weights), in blocks of at most ``_BLOCK_ENTRIES`` comparisons."""
    ids1, w1, ids2, w2 = d1.ids, d1.weights, d2.ids, d2.weights
    n = ids1.shape[-2]
    step = max(1, _BLOCK_ENTRIES // max(1, ids1.shape[-1] * ids2.shape[-1]))
    out = []
    with torch.no_grad():
        for start in range(0, n, step):
            sl = slice(start, start + step)
            match = ids1[..., sl, :].unsqueeze(-1) == ids2[..., sl, :].unsqueeze(-2)
            weights = w1[..., sl, :].unsqueeze(-1) * w2[..., sl, :].unsqueeze(-2)
            out.append((weights * match).sum((-2, -1)))
    if not out:
        return w1.new_zeros(*broadcast_shapes(ids1.shape[:-2], ids2.shape[:-2]), 0)
    return torch.cat(out, dim=-1)


def bag_of_words_self(d: DocumentSet) -> Tensor:
    r""":math:`\|\phi_i\|^2 = \sum_v w_{iv}^2` of every document's weighted word measure (repeated
    words merged first): ``*b x n x L`` -> ``*b x n``, :math:`O(\mathrm{nnz})`, once per set."""
    if "bag-of-words-self" in d.memo:
        return d.memo["bag-of-words-self"]
    ids, w = d.ids, d.weights
    with torch.no_grad():
        if ids.numel() == 0 or ids.shape[-2] == 0:
            out = w.new_zeros(ids.shape[:-1])
        elif d.unbatched:
            b = d.bags()
            out = torch.zeros(b.n, dtype=w.dtype, device=w.device).index_add_(0, b.rows(), b.weights.pow(2))
        else:
            flat_ids, flat_w = ids.reshape(-1, ids.shape[-1]), w.reshape(-1, w.shape[-1])
            _, local = unique_ids(flat_ids)
            b = bags(local, flat_w)
            out = torch.zeros(b.n, dtype=w.dtype, device=w.device).index_add_(0, b.rows(), b.weights.pow(2))
            out = out.view(ids.shape[:-1])
    d.memo["bag-of-words-self"] = out
    return out
