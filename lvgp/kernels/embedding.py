r"""Embedding kernels: the kernel :math:`k(\mathbf x_s, \mathbf x_t)` between latent word vectors
whose mean embeddings :class:`~lvgp.LatentDistributionKernel` compares (thesis eqs. 3.6-3.8).

Each is a gpytorch :class:`~gpytorch.kernels.Kernel` on :math:`\mathbb R^q` (usable on its own)
with a :meth:`EmbeddingKernel.gram` fast path that the LDK calls directly, and with its own
hyper-parameters (constrained, with optional priors, settable under the thesis's names):

* :class:`LinearEmbedding` -- :math:`\mathbf x_s^\top\mathbf x_t` (eq. 3.6); its mean embeddings
  are explicit vectors, so the LDK never forms a word Gram;
* :class:`RBFEmbedding` -- :math:`\exp(-\frac\gamma2\|\mathbf x_s - \mathbf x_t\|^2)` (eq. 3.7), one fused
  operation (:func:`rbf_gram`);
* :class:`PolyEmbedding` -- :math:`(\mathbf x_s^\top\mathbf x_t + a)^b` (eq. 3.8).

Any other gpytorch kernel on :math:`\mathbb R^q` can be the embedding kernel too (the LDK then
calls it like any gpytorch kernel). Adding a built-in one: a subclass with ``name``, its
hyper-parameters registered in ``__init__``, :meth:`~EmbeddingKernel.gram` and
:meth:`~EmbeddingKernel.self_similarity`, and a row in :data:`EMBEDDINGS`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor
from torch.autograd.function import once_differentiable

from ._hyper import check_degree, constrained_property, register_constrained
from .mean_embedding import _csr, _csr_in_beta, gram_quadratic_forms

__all__ = [
    "EmbeddingKernel",
    "LinearEmbedding",
    "RBFEmbedding",
    "PolyEmbedding",
    "EMBEDDINGS",
    "rbf_gram",
    "pooled_block_columns",
    "rbf_pooled",
    "compiled_blocks",
    "kept_blocks",
]


def _exp_floor(dtype: torch.dtype) -> int:
    """The lowest exponent :func:`_exp_nonpositive_` computes (-707 in float64, -86 in float32): two
    above the log of the dtype's smallest normal number."""
    return math.floor(math.log(torch.finfo(dtype).tiny)) + 2


def _exp_nonpositive_(x: Tensor) -> Tensor:
    r""":math:`e^{\min(x, 0)}` in place, 0 where the exponent is below -86 in float32 (-707 in float64:
    just above the log of the smallest normal number; the entry would be below 4.5e-38 or 9e-308).
    torch's vectorized ``exp`` takes a much slower path for every input whose result is subnormal or
    zero, which a matching fit's self Grams have enough of to slow their ``exp`` down (measured in
    ``benchmarks/README.md``); so such
    inputs are raised to a normal exponent first and their results set to 0 after (0 rather than a
    subnormal number, which some CPUs multiply slowly in the backward). Every other entry is the
    ``exp`` it was to the last bit."""
    low = _exp_floor(x.dtype)
    x.clamp_(min=low - 1, max=0).exp_()
    return torch.threshold_(x, math.exp(low), 0.0)


#: entries of one block of :func:`_rbf_values` (a megabyte of float32): its product and its
#: elementwise steps stay in cache
_RBF_BLOCK = 2**18
#: the fewest rows of one such block
_RBF_MIN_ROWS = 16


def _rbf_values(xa: Tensor, xb: Tensor, gamma: Tensor) -> Tensor:
    """The forward of :class:`_FusedRBFGram`: ``*b x m1 x q``, ``*b x m2 x q`` -> ``*b x m1 x m2``.

    A large unbatched float32 Gram on the CPU is formed in blocks of rows (about ``_RBF_BLOCK``
    entries), each block's product written into the result and its elementwise steps done while it is
    in cache (a matching fit's cross Gram, ``benchmarks/README.md``). The
    values are the whole Gram's to the last bit with this machine's MKL (an AMD EPYC), where a row's
    sums do not depend on the rows around it in blocks of 4 rows or more (blocks of 1-3 rows take
    another path: the blocks here are nearly equal, at least 16 rows); tested to one unit in the last
    place, as MKL's float32 products may take alignment-dependent paths elsewhere. Not in float64,
    where MKL's product of a block of rows differed in the last bit from the whole's here, nor on a
    GPU (more launches)."""
    if xa.device.type == "cpu" and xa.dtype == torch.float32 and xa.dim() == xb.dim() == 2:
        m1 = xa.shape[0]
        # blocks of nearly equal rows, at least _RBF_MIN_ROWS each: MKL multiplies a block of 1-3 rows
        # by another path, whose sums differ in the last bit from the whole product's
        blocks = -(-m1 // max(_RBF_MIN_ROWS, _RBF_BLOCK // max(1, xb.shape[0])))
        if blocks > 1:
            out = xa.new_empty(m1, xb.shape[0])
            sq_b = xb.pow(2).sum(-1).unsqueeze(-2)
            bounds = [m1 * k // blocks for k in range(blocks + 1)]
            for start, end in zip(bounds[:-1], bounds[1:]):
                block, part = out[start:end], xa[start:end]
                torch.mm(part, xb.mT, out=block)
                _rbf_steps(block, part, sq_b, gamma)
            return out
    return _rbf_steps(xa @ xb.mT, xa, xb.pow(2).sum(-1).unsqueeze(-2), gamma)


def _rbf_steps(gram: Tensor, xa: Tensor, sq_b: Tensor, gamma: Tensor) -> Tensor:
    r"""From the products ``gram`` = :math:`X_a X_b^\top` to the RBF values, in place:
    :math:`\exp(\frac\gamma2(2\,\mathrm{gram} - \|\mathbf a\|^2 - \|\mathbf b\|^2))`, with ``sq_b`` the
    squared norms of the rows of :math:`X_b` (``*b x 1 x m2``)."""
    gram.mul_(2).sub_(xa.pow(2).sum(-1).unsqueeze(-1)).sub_(sq_b)
    return _exp_nonpositive_(gram.mul_(0.5 * gamma))


class _FusedRBFGram(torch.autograd.Function):
    r""":math:`G_{st} = \exp(-\frac\gamma2\|\mathbf a_s - \mathbf b_t\|^2)` for ``*b x m1 x q`` and ``*b x m2 x q``
    inputs and a 0-dim :math:`\gamma`, in one ``m1 x m2`` buffer (the elementwise steps in place);
    backward from the closed form :math:`\partial G_{st}/\partial\mathbf a_s = -\gamma(\mathbf a_s - \mathbf b_t)G_{st}`
    (thesis eq. 3.20), two matrix products instead of autograd's chain of ``m1 x m2`` temporaries."""

    @staticmethod
    def forward(ctx: Any, xa: Tensor, xb: Tensor, gamma: Tensor) -> Tensor:
        gram = _rbf_values(xa, xb, gamma)
        ctx.save_for_backward(xa, xb, gamma, gram)
        return gram

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        xa, xb, gamma, gram = ctx.saved_tensors
        weighted = grad * gram
        grad_a = grad_b = grad_gamma = None
        if ctx.needs_input_grad[0]:
            grad_a = gamma * (weighted @ xb - weighted.sum(-1).unsqueeze(-1) * xa)
        if ctx.needs_input_grad[1]:
            grad_b = gamma * (weighted.mT @ xa - weighted.sum(-2).unsqueeze(-1) * xb)
        if ctx.needs_input_grad[2]:
            sq = (xa.pow(2).sum(-1).unsqueeze(-1) + xb.pow(2).sum(-1).unsqueeze(-2) - 2 * (xa @ xb.mT)).clamp_min(0)
            grad_gamma = -0.5 * (weighted * sq).sum()
        return grad_a, grad_b, grad_gamma


class _RBFQuadraticForms(torch.autograd.Function):
    r""":math:`n_c = \mathbf w_c^\top G_c\,\mathbf w_c` with :math:`(G_c)_{lm} = \exp(-\frac\gamma2\|\mathbf x_{v_{cl}} -
    \mathbf x_{v_{cm}}\|^2)`, for ``c x L`` word ids ``ids`` into the ``u x q`` table of vectors and their
    weights ``weights`` (the squared norms of documents' mean embeddings, eq. 3.9 with a document
    on both sides): ``c``. The Gram and the values are those of :func:`rbf_gram` and the einsum
    autograd took before (to the last bit); the backward is the closed form of eq. 3.20 for the symmetric Gram,
    :math:`\partial n_c/\partial\mathbf x_{v_{ck}} = 2\gamma w_k\big((G_c(\mathbf w_c\odot X_c))_k -
    (G_c\mathbf w_c)_k\,\mathbf x_{v_{ck}}\big)`: one batched product with :math:`G_c`, no ``c x L x L``
    temporary, scattered to the table by ``index_add_`` (autograd's einsum, Gram and gather backwards
    formed two such temporaries and sorted the ids)."""

    @staticmethod
    def forward(ctx: Any, table: Tensor, ids: Tensor, weights: Tensor, gamma: Tensor) -> Tensor:
        vectors = table[ids]  # c x L x q
        gram = _rbf_values(vectors, vectors, gamma)
        ctx.save_for_backward(table, ids, weights, gamma, vectors, gram)
        # the values of the autograd path to the last bit (a fitted model predicts what it did)
        return torch.einsum("cl,clm,cm->c", weights, gram, weights)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, Tensor | None]:
        table, ids, weights, gamma, vectors, gram = ctx.saved_tensors
        # one product with G_c for both G_c (w_c * X_c) and G_c w_c
        both = torch.bmm(gram, torch.cat([weights.unsqueeze(-1) * vectors, weights.unsqueeze(-1)], -1))
        pulled, spread = both[..., :-1], both[..., -1:]  # c x L x q, c x L x 1
        pulled = pulled - spread * vectors
        scale = grad.unsqueeze(-1) * weights  # c x L
        grad_table = grad_gamma = None
        if ctx.needs_input_grad[0]:
            step = (scale.unsqueeze(-1) * pulled).flatten(0, 1)
            grad_table = torch.zeros_like(table).index_add_(0, ids.flatten(), step, alpha=2 * gamma)
        if ctx.needs_input_grad[3]:
            # -1/2 sum_lm A_lm |x_l - x_m|^2 with A = grad w w^T * G: sum_l s_l x_l . ((G (w X))_l - (G w)_l x_l)
            grad_gamma = (scale.unsqueeze(-1) * pulled * vectors).sum()
        return grad_table, None, None, grad_gamma


class _PooledPlan:
    r"""The sparse ``n x m2`` matrix :math:`C` of :func:`rbf_pooled` cut into blocks of ``chunk``
    columns, each block held twice as a CSR matrix: :math:`C_b` (``n x c``, the forward's pooling)
    and :math:`C_b^\top` (``c x n``, the backward's spreading). Built once per set of documents
    (:func:`rbf_pooled`'s ``memo``: the sparse GP's inducing documents reuse theirs at every step)."""

    def __init__(self, rows: Tensor, cols: Tensor, weights: Tensor, n: int, m2: int, chunk: int) -> None:
        chunk = max(1, min(chunk, m2))  # a block never takes more columns than there are (one block: all)
        self.n, self.chunk = n, chunk
        blocks = max(1, -(-m2 // chunk))
        # int32 indices, which the CPU's sparse products take (int64 ones are copied to int32 at every
        # product: four more operators each), converted once for all blocks; each block's indices and
        # values are views (issue 60: a batch's plan is built at every step, and was a fifth of its
        # operators when each block converted its own)
        small = len(cols) < 2**31 and max(n, m2) < 2**31
        index = torch.int32 if small else torch.int64
        block = torch.div(cols, chunk, rounding_mode="floor")
        local = cols - block * chunk
        key = block * n + rows
        # the sort keys in int32 where they fit (a CPU sorts them ~1.7x as fast as int64 ones): the same
        # order where every entry is one (document, word) pair's (the bags'), and where an entry is
        # given twice its ties reorder only the terms of a sum
        narrow = torch.int32 if blocks * chunk * n < 2**31 else cols.dtype
        order = torch.argsort((key * chunk + local).to(narrow))  # by block, then row, then column
        counts = torch.bincount(key, minlength=blocks * n).view(blocks, n)
        # blocks x (n + 1), each from 0
        crow = torch.cat([counts.new_zeros(blocks, 1), counts.cumsum(1)], 1).to(index)
        ends = counts.sum(1).cumsum(0).tolist()  # one read of the blocks' sizes
        ids, values = local[order].to(index), weights[order]
        self.forward: list[Tensor] = []
        self.backward: list[Tensor] = []
        with _csr_in_beta():
            start = 0
            for b, end in enumerate(ends):
                size = (n, min(chunk, m2 - b * chunk))
                self.forward.append(_csr(crow[b], ids[start:end], values[start:end], size))
                start = end
            order = torch.argsort((cols * n + rows).to(narrow))  # by column, then row
            per_col = torch.bincount(cols, minlength=m2)
            # each block's row pointers from 0, all in one blocks x (chunk + 1) table (the last block's
            # tail repeats its end)
            crow = torch.cat([per_col.new_zeros(1), per_col.cumsum(0)])  # m2 + 1
            padded = torch.cat([crow, crow[-1:].expand(blocks * chunk + 1 - len(crow))])
            starts = padded[: blocks * chunk : chunk]
            table = (padded[:-1].view(blocks, chunk) - starts[:, None]).to(index)
            ends_b = (padded[chunk::chunk] - starts).to(index)
            table = torch.cat([table, ends_b[:, None]], 1)  # blocks x (chunk + 1)
            bounds = starts.tolist() + [len(cols)]
            ids, values = rows[order].to(index), weights[order]
            for b in range(blocks):
                c = min(chunk, m2 - b * chunk)
                s, e = bounds[b], bounds[b + 1]
                self.backward.append(_csr(table[b, : c + 1], ids[s:e], values[s:e], (c, n)))


def _rbf_exponents(xa: Tensor, xb: Tensor, gamma: Tensor) -> tuple[Tensor, Tensor]:
    r"""``left`` (``m2 x (q + 2)``) and ``right`` (``(q + 2) x m1``) whose product is the exponent of
    the RBF Gram, :math:`-\frac\gamma2\|\mathbf b_t - \mathbf a_j\|^2 = [\mathbf b_t, 1, \|\mathbf b_t\|^2]
    \cdot[\gamma\mathbf a_j, -\frac\gamma2\|\mathbf a_j\|^2, -\frac\gamma2]`: a block of the Gram is one
    matrix product and one ``exp``."""
    m1, m2 = xa.shape[0], xb.shape[0]
    left = torch.cat([xb, xb.new_ones(m2, 1), xb.pow(2).sum(-1, keepdim=True)], 1)
    half = -0.5 * gamma
    right = torch.cat([gamma * xa, half * xa.pow(2).sum(-1, keepdim=True), half.expand(m1, 1)], 1)
    return left, right.mT.contiguous()


def _rbf_block_(out: Tensor, left: Tensor, right: Tensor, bounded: bool = False) -> Tensor:
    """A block of the RBF Gram (a row per word of ``left``) into ``out``, in place. ``bounded``: every
    exponent is known to be far above the subnormal range (:func:`_exponents_bounded`), so that the
    product's ``exp`` alone is the block (one pass in place of :func:`_exp_nonpositive_`'s three; an
    entry whose exponent rounded above 0 is 1 plus an ulp or two instead of 1)."""
    exponents = torch.mm(left, right, out=out)
    return exponents.exp_() if bounded else _exp_nonpositive_(exponents)


def _exponents_bounded(xa: Tensor, xb: Tensor, gamma: Tensor) -> bool:
    r"""Whether every exponent :math:`-\frac\gamma2\|\mathbf b_t - \mathbf a_j\|^2` of :func:`rbf_pooled`'s
    Gram is above :func:`_exp_nonpositive_`'s floor (with a margin for the product's rounding), bounded
    through the landmarks' centre :math:`\mathbf c`: :math:`\|\mathbf b - \mathbf a\| \le \|\mathbf b -
    \mathbf c\| + \|\mathbf a - \mathbf c\|`. Costs a pass over the vectors and one read of the bound."""
    if xa.shape[0] == 0 or xb.shape[0] == 0:
        return True
    with torch.no_grad():
        centre = xa.mean(0)
        reach = (xb - centre).norm(dim=1).max() + (xa - centre).norm(dim=1).max()
        bound = float(0.5 * gamma * reach.square())
    return -bound > _exp_floor(xa.dtype) + 6


def _rbf_block_fused(xc: Tensor, xa: Tensor, gamma: Tensor) -> Tensor:
    r"""A block of the RBF Gram, ``c x m1``, written as one loop over its entries (the form that
    ``torch.compile`` fuses: differences, squares, ``exp`` and :func:`_exp_nonpositive_`'s cut-off in
    one pass, where the eager block takes a product and three passes)."""
    return _exp_nonpositive_((xc.unsqueeze(1) - xa.unsqueeze(0)).pow(2).sum(-1).mul(-0.5 * gamma))


#: :func:`compiled_blocks`'s state: whether it is on, the compiled block, and why compiling failed
_COMPILED: dict[str, Any] = {"enabled": False, "block": None, "failed": None}


@contextlib.contextmanager
def compiled_blocks(enabled: bool = True) -> Iterator[None]:
    """Inside this block, :func:`rbf_pooled` forms the blocks of its Gram on a CPU with a
    ``torch.compile``'d kernel (inductor: one fused loop a block instead of a matrix product and three
    passes) -- the Nystrom LDK's step, forward and backward, which on a CPU is mostly those blocks.
    What it saves a step, and its warm-up, are measured in ``benchmarks/README.md``. Warm-up: the
    first call compiles (seconds with a warm inductor cache, longer on a fresh machine), and a second
    block width compiles once more (then every width takes that kernel); so it can pay only in fits
    of hundreds of steps, and whether it does depends on the CPU (faster steps on one measured, slower
    on another): it is not the default. Values move by
    rounding (1e-15 relative). Where compiling fails (no C++ compiler, an unsupported platform) it
    warns once (:class:`~lvgp.warnings.PerformanceWarning`) and computes eagerly. Off the CPU it
    changes nothing (there the Gram is one block)::

        with lvgp.kernels.compiled_blocks():
            SparseGPLVSMRegressor(...).fit(X, y)
    """
    previous = _COMPILED["enabled"]
    _COMPILED["enabled"] = bool(enabled)
    try:
        yield
    finally:
        _COMPILED["enabled"] = previous


def _gram_block(
    out: Tensor,
    rows: slice,
    xb: Tensor,
    xa: Tensor,
    gamma: Tensor,
    left: Tensor,
    right: Tensor,
    compiled: bool,
    bounded: bool = False,
) -> Tensor:
    """The block of :func:`rbf_pooled`'s Gram of the words ``rows``: the compiled loop over their
    vectors (``xb[rows]``) where ``compiled`` (and compiling works), else the eager product of their
    exponents' rows (``left[rows]``) and ``exp`` into ``out``."""
    if compiled and _COMPILED["failed"] is None:
        try:
            if _COMPILED["block"] is None:
                _COMPILED["block"] = torch.compile(_rbf_block_fused)
            return _COMPILED["block"](xb[rows], xa, gamma)
        except Exception as err:  # noqa: BLE001 - any backend failure falls back to eager arithmetic
            from ..warnings import PerformanceWarning

            reason = f"{type(err).__name__}: {err}"
            _COMPILED["failed"] = reason
            warnings.warn(
                f"compiled_blocks: torch.compile of rbf_pooled's block failed ({reason[:200]}); "
                "computing eagerly (the same values to rounding, slower)",
                PerformanceWarning,
                stacklevel=2,
            )
    return _rbf_block_(out, left[rows], right, bounded)


#: :func:`kept_blocks`'s state: whether a forward keeps its blocks, and the buffers free for reuse
_KEPT: dict[str, Any] = {"enabled": False, "spare": []}


@contextlib.contextmanager
def kept_blocks() -> Iterator[None]:
    """Inside this block, :func:`rbf_pooled`'s forward keeps the blocks of its Gram for its backward,
    in buffers that the next steps reuse (freed when the block ends): the backward forms no block
    again -- half the ``exp``'s of a step -- at the memory of the Gram of a call (``m1 x m2`` entries:
    76 MB for 512 landmarks and 18,600 words). The mini-batch fits (the sparse GP-LVSM, the
    variational GP classifier) open it around their steps. A backward run twice
    (``retain_graph=True``) forms the blocks again the second time. Outside it, the backward forms
    each block again (memory: one block)."""
    previous = _KEPT["enabled"], _KEPT["spare"]
    _KEPT["enabled"], _KEPT["spare"] = True, []
    try:
        yield
    finally:
        _KEPT["enabled"], _KEPT["spare"] = previous


def _kept_buffer(numel: int, like: Tensor) -> Tensor:
    """A flat buffer of at least ``numel`` entries from :func:`kept_blocks`'s spares (reused: its pages
    are mapped already), or a new one with room for a quarter more (the next batch may have more words)."""
    spare = _KEPT["spare"]
    for i, buffer in enumerate(spare):
        if buffer.numel() >= numel and buffer.dtype == like.dtype and buffer.device == like.device:
            return spare.pop(i)
    return like.new_empty(numel + numel // 4)


def _give_back(buffer: Tensor) -> None:
    if _KEPT["enabled"]:  # at most four spares (a step's two calls, and room): the largest kept
        _KEPT["spare"] = sorted([*_KEPT["spare"], buffer], key=lambda t: -t.numel())[:4]


class _PooledRBF(torch.autograd.Function):
    r""":math:`P = C\,G^\top` with :math:`G_{jt} = \exp(-\frac\gamma2\|\mathbf a_j - \mathbf b_t\|^2)`
    and a sparse ``n x m2`` matrix :math:`C`, without the ``m1 x m2`` Gram: ``chunk`` columns of
    :math:`G` at a time, in one buffer in cache (a product and an ``exp``), pooled by a sparse
    product into :math:`P`. The backward reads the blocks its forward kept (inside
    :func:`kept_blocks`) or forms each again (memory: one block), and takes the closed form of :class:`_FusedRBFGram` from two products a block: with
    :math:`W = (C_b^\top\bar P)\odot G_b`, :math:`W[\mathbf a, 1]` and :math:`W^\top[\mathbf b, 1]`
    hold :math:`\partial/\partial\mathbf b`, :math:`\partial/\partial\mathbf a` and, through
    :math:`\|\mathbf a - \mathbf b\|^2 = \|\mathbf a\|^2 + \|\mathbf b\|^2 - 2\mathbf a^\top\mathbf b`,
    :math:`\partial/\partial\gamma`."""

    @staticmethod
    def forward(ctx: Any, xa: Tensor, xb: Tensor, gamma: Tensor, plan: _PooledPlan) -> Tensor:
        left, right = _rbf_exponents(xa, xb, gamma)
        m1, m2 = xa.shape[0], xb.shape[0]
        out = xa.new_zeros(plan.n, m1)
        compiled = _COMPILED["enabled"] and xa.device.type == "cpu"
        bounded = not compiled and _exponents_bounded(xa, xb, gamma)
        # the blocks kept for the backward (kept_blocks()), or one buffer overwritten block after block
        store = _kept_buffer(m1 * m2, xa) if _KEPT["enabled"] and any(ctx.needs_input_grad[:3]) else None
        block = xa.new_empty(min(plan.chunk, m2), m1 if store is None else 0)
        for b, c_b in enumerate(plan.forward):
            a, c = b * plan.chunk, c_b.shape[1]
            target = store[a * m1 : (a + c) * m1].view(c, m1) if store is not None else block[:c]
            gram = _gram_block(target, slice(a, a + c), xb, xa, gamma, left, right, compiled, bounded)
            if gram.data_ptr() != target.data_ptr():  # the compiled block is a new tensor
                gram = target.copy_(gram) if store is not None else gram
            out.addmm_(c_b, gram)
        ctx.save_for_backward(xa, xb, gamma, left, right)
        ctx.plan, ctx.compiled, ctx.bounded, ctx.store = plan, compiled, bounded, store
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        xa, xb, gamma, left, right = ctx.saved_tensors
        plan, q = ctx.plan, xa.shape[1]
        grad = grad.contiguous()
        a_one = torch.cat([xa, xa.new_ones(xa.shape[0], 1)], 1)  # m1 x (q + 1)
        # [W a, W 1] per word and [W^T b, W^T 1] per landmark, held transposed ((q + 1) x m): BLAS
        # takes the products of a block with q + 1 columns 1.3x (words) and 5x (landmarks) faster so
        by_word = xb.new_empty(q + 1, xb.shape[0])
        by_landmark = xa.new_zeros(q + 1, xa.shape[0])
        m1 = xa.shape[0]
        store, ctx.store = ctx.store, None  # a second backward (retain_graph) forms the blocks again
        block = xa.new_empty(min(plan.chunk, xb.shape[0]), m1 if store is None else 0)  # kept blocks: none
        # C_b^T P-bar into one buffer by addmm_ with beta=0 (its old values ignored): torch.mm(..., out=)
        # of a sparse matrix zero-fills a new tensor, adds into it and copies it out, three passes
        # over the block (benchmarks/README.md, issue 60); zeroed once, so its values are finite anyway
        weighted = xa.new_zeros(min(plan.chunk, xb.shape[0]), m1)
        for b, ct_b in enumerate(plan.backward):
            a, c = b * plan.chunk, ct_b.shape[0]
            if store is not None:
                gram = store[a * m1 : (a + c) * m1].view(c, m1)
            else:
                gram = _gram_block(block[:c], slice(a, a + c), xb, xa, gamma, left, right, ctx.compiled, ctx.bounded)
            w = weighted[:c].addmm_(ct_b, grad, beta=0).mul_(gram)
            torch.mm(a_one.mT, w.mT, out=by_word[:, a : a + c])
            by_landmark.addmm_(left[a : a + c, : q + 1].mT, w)
        if store is not None:
            _give_back(store)
        by_word, by_landmark = by_word.mT, by_landmark.mT
        grad_b = gamma * (by_word[:, :q] - by_word[:, q:] * xb)
        grad_a = gamma * (by_landmark[:, :q] - by_landmark[:, q:] * xa)
        grad_gamma = None
        if ctx.needs_input_grad[2]:  # -1/2 sum_jt W_jt |a_j - b_t|^2
            squares = (left[:, q + 1] * by_word[:, q]).sum() + (xa.pow(2).sum(-1) * by_landmark[:, q]).sum()
            grad_gamma = -0.5 * (squares - 2 * (xb * by_word[:, :q]).sum())
        return grad_a, grad_b, grad_gamma, None


#: entries of one block of :func:`rbf_pooled` (two megabytes of float64: in a core's cache)
_POOLED_BLOCK = 2**18


def pooled_block_columns(m1: int, m2: int, device: torch.device) -> int:
    """The columns of one block of :func:`rbf_pooled` against ``m1`` landmarks: a block of
    ``_POOLED_BLOCK`` entries (in a CPU's cache) on the CPU, all ``m2`` columns elsewhere."""
    if device.type != "cpu":
        return max(16, m2)
    return max(16, _POOLED_BLOCK // max(1, m1))


def rbf_pooled(
    xa: Tensor,
    xb: Tensor,
    gamma: Tensor,
    rows: Tensor,
    cols: Tensor,
    weights: Tensor,
    n: int,
    memo: dict | None = None,
) -> Tensor:
    r""":math:`C\,G^\top` for the RBF Gram :math:`G` of ``xa`` (``m1 x q``) against ``xb`` (``m2 x q``)
    and the sparse ``n x m2`` matrix :math:`C` with entries ``weights`` at (``rows``, ``cols``):
    ``n x m1``. The values of ``C @ rbf_gram(xa, xb, gamma).mT`` (to rounding), but the Gram is never
    held whole: blocks of columns are formed (a row per word) in one buffer, pooled by a sparse
    product and overwritten (and formed again for the gradient), so that memory traffic stays in
    cache and memory is that of one block -- the Nystrom LDK's landmark columns pooled over
    documents (:class:`~lvgp.kernels.random_features.RandomFeatureLDK`; ratios against the whole
    Gram in ``benchmarks/nystrom_pooling.py``). A block's sparse product costs its entries, not the
    ``n`` rows, so blocks pay at any ``n`` (against the whole Gram: ``benchmarks/README.md``). Unbatched inputs and a scalar ``gamma``; ``weights`` are constants
    (no gradient).

    The blocks are a CPU's: off the CPU (CUDA) the whole Gram is one block, since there each block
    costs kernel launches and the Gram fits in device memory (:func:`pooled_block_columns`; the
    operators a step in ``benchmarks/README.md``, issue 60). ``memo``: a dict kept with the
    documents (their :class:`~lvgp.kernels.mean_embedding.Bags`' memo), where the blocks' sparse
    matrices are kept for the next call on the same documents."""
    m2 = xb.shape[0]
    chunk = pooled_block_columns(xa.shape[0], m2, xa.device)
    key = ("rbf_pooled", chunk, m2)
    plan = None if memo is None else memo.get(key)
    if plan is None:
        plan = _PooledPlan(rows, cols, weights, n, m2, chunk)
        if memo is not None:
            memo[key] = plan
    return _PooledRBF.apply(xa, xb, gamma.reshape(()), plan)


def rbf_gram(xa: Tensor, xb: Tensor, gamma: Tensor) -> Tensor:
    r"""RBF Gram :math:`\exp(-\frac\gamma2\|\mathbf x_a - \mathbf x_b\|^2)` (eq. 3.7).

    Shapes: ``(*batch, m1, q)`` and ``(*batch, m2, q)`` -> ``(*batch, m1, m2)``; ``gamma`` broadcasts with trailing ``1 x 1`` dims. Inputs
    of one batch shape with a scalar gamma take the fused path (:class:`_FusedRBFGram`). Not gpytorch's
    ``RBFKernel``: that owns its lengthscale as a module parameter and has no fused backward
    (tests/test_library_references.py checks the two agree); the CLGP and the GP
    covariate-embedding baseline use this one too."""
    if xa.shape[:-2] == xb.shape[:-2] and gamma.numel() == 1:
        return _FusedRBFGram.apply(xa, xb, gamma.reshape(()))
    sq = xa.pow(2).sum(-1).unsqueeze(-1) + xb.pow(2).sum(-1).unsqueeze(-2) - 2 * (xa @ xb.mT)
    return torch.exp(-0.5 * gamma * sq.clamp_min(0))


class EmbeddingKernel(Kernel):
    """Base class of the built-in embedding kernels (module docstring).

    Subclasses set ``name`` and implement :meth:`gram` (``... x m1 x q``, ``... x m2 x q`` ->
    ``... x m1 x m2``, the kernel's batch shape broadcasting against the trailing batch
    dimensions) and :meth:`self_similarity` (:math:`k(\\mathbf x, \\mathbf x)`, ``... x m``).
    """

    has_lengthscale = False
    #: the name the LDK's ``embedding=`` argument knows it by
    name: ClassVar[str]
    #: keyword arguments of ``__init__`` that the LDK routes here from its own keywords
    options: ClassVar[tuple[str, ...]] = ()
    #: whether the mean embeddings are explicit vectors ``C X`` (then the LDK forms no word Gram)
    explicit = False

    def gram(self, xa: Tensor, xb: Tensor) -> Tensor:
        raise NotImplementedError

    def self_similarity(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def quadratic_forms(self, table: Tensor, ids: Tensor, weights: Tensor) -> Tensor:
        r""":math:`\mathbf w_c^\top K(X_c, X_c)\,\mathbf w_c` for each row ``c``: ``table`` the ``u x q``
        vectors, ``ids`` (``c x L``) rows of it and ``weights`` (``c x L``) their weights -> ``c``
        (the squared norms of mean embeddings). Through :meth:`gram`; the RBF kernel has a fused
        gradient."""
        return gram_quadratic_forms(self.gram)(table, ids, weights)

    def _hyper(self, name: str, extra_dims: int = 2) -> Tensor:
        """Hyper-parameter viewed with ``extra_dims`` trailing singleton dims for broadcasting."""
        value = getattr(self, name)
        return value.view(*value.shape, *([1] * extra_dims))

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Tensor:
        gram = self.gram(x1, x2)
        return gram.diagonal(dim1=-2, dim2=-1) if diag else gram


class LinearEmbedding(EmbeddingKernel):
    r""":math:`k(\mathbf x_s, \mathbf x_t) = \mathbf x_s^\top\mathbf x_t` (eq. 3.6): a document's kernel
    mean embedding is the weighted mean of its words' vectors."""

    name = "linear"
    explicit = True

    def gram(self, xa: Tensor, xb: Tensor) -> Tensor:
        return xa @ xb.mT

    def self_similarity(self, x: Tensor) -> Tensor:
        return x.pow(2).sum(-1)


class RBFEmbedding(EmbeddingKernel):
    r""":math:`k(\mathbf x_s, \mathbf x_t) = \exp(-\frac\gamma2\|\mathbf x_s - \mathbf x_t\|^2)` (eq. 3.7).

    Args:
        gamma: the bandwidth :math:`\gamma > 0` (initial value).
        gamma_prior: an optional gpytorch prior on :math:`\gamma`.
        gamma_constraint: default :class:`~gpytorch.constraints.Positive`.
    """

    name = "rbf"
    options = ("gamma", "gamma_prior", "gamma_constraint")
    gamma = constrained_property("gamma", "RBF embedding bandwidth (eq. 3.7), shape ``batch_shape``.")

    def __init__(
        self,
        gamma: float = 1.0,
        gamma_prior: Prior | None = None,
        gamma_constraint: Interval | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        register_constrained(self, "gamma", gamma, gamma_constraint or Positive(), gamma_prior, self.batch_shape)

    def gram(self, xa: Tensor, xb: Tensor) -> Tensor:
        return rbf_gram(xa, xb, self._hyper("gamma"))

    def quadratic_forms(self, table: Tensor, ids: Tensor, weights: Tensor) -> Tensor:
        if table.dim() == 2 and self.gamma.numel() == 1 and not weights.requires_grad:
            return _RBFQuadraticForms.apply(table, ids, weights, self.gamma.reshape(()))
        return super().quadratic_forms(table, ids, weights)

    def self_similarity(self, x: Tensor) -> Tensor:
        return x.new_ones(x.shape[:-1])


class PolyEmbedding(EmbeddingKernel):
    r""":math:`k(\mathbf x_s, \mathbf x_t) = (\mathbf x_s^\top\mathbf x_t + a)^b` (eq. 3.8).

    Args:
        a: the bias :math:`a` (initial value).
        b: the degree (a fixed positive integer, not trained).
        a_prior: an optional gpytorch prior on :math:`a`.
        a_constraint: default :class:`~gpytorch.constraints.Positive`. The thesis allows any real
            bias; a non-negative bias keeps the kernel positive semi-definite for every degree.
    """

    name = "poly"
    options = ("a", "b", "a_prior", "a_constraint")
    a = constrained_property("a", "Polynomial embedding bias (eq. 3.8), shape ``batch_shape``.")

    def __init__(
        self,
        a: float = 1.0,
        b: int = 2,
        a_prior: Prior | None = None,
        a_constraint: Interval | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.b = b
        register_constrained(self, "a", a, a_constraint or Positive(), a_prior, self.batch_shape)

    @property
    def b(self) -> int:
        """Polynomial embedding degree (eq. 3.8); fixed, not trained."""
        return self._b

    @b.setter
    def b(self, value: int) -> None:
        self._b = check_degree("b", value)

    def gram(self, xa: Tensor, xb: Tensor) -> Tensor:
        return (xa @ xb.mT + self._hyper("a")).pow(self.b)

    def self_similarity(self, x: Tensor) -> Tensor:
        return (x.pow(2).sum(-1) + self._hyper("a", 1)).pow(self.b)


#: the built-in embedding kernels by name (``LatentDistributionKernel(embedding=name)``)
EMBEDDINGS: dict[str, type[EmbeddingKernel]] = {cls.name: cls for cls in (LinearEmbedding, RBFEmbedding, PolyEmbedding)}
