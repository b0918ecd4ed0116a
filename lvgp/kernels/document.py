r"""What every kernel between documents as (weighted) measures of their words shares: the input
checks of padded word-index sets, the word weights of the measures, the level-2 kernel
(:mod:`lvgp.kernels.level2`) applied to inner products of the documents' embeddings, ``diag``,
batches and different widths. :class:`~lvgp.LatentDistributionKernel` (embeddings in the RKHS of a
kernel on latent word vectors) and :class:`~lvgp.kernels.BagOfWordsKernel` (the word measures
themselves) are its subclasses; each supplies the three inner products
(:meth:`DocumentKernel.mean_embedding_gram`, :meth:`~DocumentKernel.paired_inner`,
:meth:`~DocumentKernel.self_inner`).
"""

from __future__ import annotations

import contextlib
import copy
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import torch
from gpytorch.kernels import Kernel
from gpytorch.module import Module
from torch import Tensor

from .._typing import TensorLike
from ..base.shapes import broadcast_shapes
from ..bow.padded import check_padded, pad_to_common_width, same_documents, without_padding_columns
from . import mean_embedding as me
from .level2 import Level2Kernel, make_level2

__all__ = ["DocumentKernel", "InnerProducts", "check_word_weights", "shared_evaluation"]

#: document sets a kernel keeps (the training documents, a validation or test block, ...)
_CACHED_SETS = 4


def _given_dtype(word_weights: Any) -> torch.dtype:
    """The floating dtype weights were given in (a float32/float64 tensor or array keeps its own;
    anything else, e.g. a list of Python floats, is float64)."""
    if torch.is_tensor(word_weights) and word_weights.dtype.is_floating_point:
        return word_weights.dtype
    if isinstance(word_weights, np.ndarray) and word_weights.dtype in (np.float32, np.float64):
        return torch.float32 if word_weights.dtype == np.float32 else torch.float64
    return torch.float64


def check_word_weights(word_weights: TensorLike, num_words: int, dtype: torch.dtype | None = None) -> Tensor:
    """``num_words`` positive finite weights as a tensor of ``dtype`` (default: the dtype they were
    given in, so that float64 weights are not rounded to float32; the kernel casts them with its
    module, ``.double()``/``.float()``, and to the computing dtype at use), scaled by the power of
    two that brings the largest into ``[0.5, 1)``: the measures normalize the weights per document,
    so their scale is immaterial, and scaling by a power of two is exact (the same measures to the
    last bit), while weights near the limits of the dtype (1e308, 1e-320) would otherwise overflow
    or underflow the normalization."""
    if dtype is None:
        dtype = _given_dtype(word_weights)
    if isinstance(word_weights, str):
        raise TypeError(
            f"word_weights must be None or {num_words} positive weights, not the name {word_weights!r}: for idf "
            "weights pass lvgp.bow.weighting.idf_weights(x_train, num_words)"
        )
    try:  # checked and scaled in float64, then cast (1e308 and 1e-320 are outside float32)
        weights = torch.as_tensor(np.asarray(word_weights, dtype=np.float64))
    except (TypeError, ValueError) as err:
        raise TypeError(f"word_weights must be {num_words} positive finite weights ({err})") from None
    if weights.shape != (num_words,) or not torch.isfinite(weights).all() or (weights <= 0).any():
        raise ValueError(f"word_weights must be {num_words} positive finite weights")
    scaled = torch.ldexp(weights, -torch.frexp(weights.max()).exponent).to(dtype)
    if (scaled <= 0).any() or not torch.isfinite(scaled).all():
        raise ValueError(
            f"word_weights span more orders of magnitude than {dtype} holds (largest {float(weights.max()):.3g}, "
            f"smallest {float(weights.min()):.3g})"
        )
    return scaled


class InnerProducts(NamedTuple):
    r"""The inner products of one part of a document kernel that its level-2 kernel acts on:
    ``gram(x1, x2, symmetric, latent)`` (``*B x n1 x n2``), ``paired(x1, x2, latent)`` and
    ``norms(x, latent)`` (``*B x n``), and ``floor(x, latent)``, the squared norms at or below which
    an embedding is rounding noise (``None``: exact). ``latent`` is what the kernel's
    :meth:`~DocumentKernel._forward_state` returned for the evaluation."""

    gram: Callable[[Tensor, Tensor, bool, Tensor], Tensor]
    paired: Callable[[Tensor, Tensor, Tensor], Tensor]
    norms: Callable[[Tensor, Tensor], Tensor]
    floor: Callable[[Tensor, Tensor], Tensor | None]


def _no_floor(x: Tensor, latent: Tensor) -> None:
    return None


def _reads_word_ids(module: Module) -> bool:
    """A kernel of lvgp's that reads padded word ids and can take padding-only rows: a :class:`DocumentKernel`, or a
    :class:`~lvgp.kernels.DocumentLengthKernel` (the empty set's length is 0)."""
    from .document_length import DocumentLengthKernel

    return isinstance(module, (DocumentKernel, DocumentLengthKernel))


def allow_empty_documents(kernel: Module) -> None:
    """Set :attr:`DocumentKernel.allow_empty` on every document kernel in ``kernel`` (its modules: a ``ScaleKernel``,
    sums and products of them), and on a :class:`~lvgp.kernels.DocumentLengthKernel` beside them: padding-only rows
    become documents, the empty set."""
    for module in kernel.modules():
        if _reads_word_ids(module):
            module.allow_empty = True


def reads_empty_documents(kernel: Module) -> bool:
    """Whether ``kernel`` holds document kernels and every one -- with every
    :class:`~lvgp.kernels.DocumentLengthKernel` -- reads padding-only rows as the empty set
    (:func:`allow_empty_documents` set them)."""
    readers = [module for module in kernel.modules() if _reads_word_ids(module)]
    return any(isinstance(module, DocumentKernel) for module in readers) and all(
        module.allow_empty for module in readers
    )


def keep_empty_documents(kernel: Module) -> None:
    """An estimator's ``on_empty="keep"``: :func:`allow_empty_documents` on ``kernel``, and a ``ValueError`` where
    ``kernel`` holds no document kernel to read a text without a known word as the empty set
    (:func:`reads_empty_documents`)."""
    allow_empty_documents(kernel)
    if not reads_empty_documents(kernel):
        raise ValueError(
            "on_empty='keep' needs a covariance of document kernels (lvgp.kernels.DocumentKernel: the LDK, the bag of "
            f"words), which read a text without a known word as the empty set; {type(kernel).__name__} holds none"
        )


class DocumentKernel(Kernel):
    r"""Base class of kernels between documents as weighted measures of their words (module
    docstring). Inputs are padded word-index sets: ``... x n x L`` integer tensors of word ids in
    ``[0, num_words)`` padded with :data:`lvgp.PAD`; ``x1`` and ``x2`` may have different widths.

    Args:
        level2: the level-2 kernel, a name of :data:`~lvgp.kernels.level2.LEVEL2_KERNELS` or a
            :class:`~lvgp.kernels.level2.Level2Kernel`.
        word_weights: ``None`` (a document is the uniform empirical measure of its words: term
            frequencies) or ``num_words`` positive weights, e.g. inverse document frequencies
            (:func:`lvgp.bow.weighting.idf_weights`): a document is then the weighted measure
            :math:`\phi_{iv} \propto \mathrm{count}_{iv} w_v`, normalized to sum to one (tf-idf).
        level2_options: the level-2 kernel's hyper-parameters (``zeta``, ``c``, ``d`` and their
            priors and constraints), when ``level2`` is a name.
        **kwargs: gpytorch's ``batch_shape``, ``active_dims``, ``eps``.

    A padding-only row (a document without a known word) is a ``ValueError`` unless :attr:`allow_empty` is set
    (``on_empty="keep"`` of ``LDKGPClassifier``, ``LatentSMMClassifier`` and ``GPLVSMRegressor`` sets it on their
    kernels' document kernels): then it is the empty set, the zero measure, and takes the level-2 kernel's value at
    the zero mean embedding (0 at a linear or cosine level 2, :math:`\exp(-\frac\zeta2 \|m\|^2)` against a document
    of mean embedding :math:`m` at an RBF one, eq. 3.11), as the word part of a packed document does beside a
    sentence encoder (:class:`~lvgp.kernels.packed.WordSetKernel`).
    """

    has_lengthscale = False
    #: padding-only rows are documents (the empty set) rather than an error
    allow_empty: bool = False

    def __init__(self, level2: str | Level2Kernel = "linear", **kwargs: Any) -> None:
        level2_options = kwargs.pop("level2_options", {})
        super().__init__(**kwargs)
        self.level2 = make_level2(level2, self.batch_shape, level2_options)

    def _set_word_weights(self, word_weights: TensorLike | None, num_words: int) -> None:
        if word_weights is None:
            self.word_weights = None
        else:
            self.register_buffer("word_weights", check_word_weights(word_weights, num_words))

    @property
    def batch_shape(self) -> torch.Size:
        """gpytorch's: this kernel's batch shape broadcast with its sub-kernels'. Broadcast by
        :func:`lvgp.base.shapes.broadcast_shapes`, as ``torch.broadcast_shapes`` first imports sympy
        (a noticeable share of a process that evaluates only this kernel, such as a matching fit)."""
        return broadcast_shapes(self._batch_shape, *(k.batch_shape for k in self.sub_kernels()))

    @batch_shape.setter
    def batch_shape(self, value: torch.Size) -> None:
        self._batch_shape = value

    # ------------------------------------------------------------------ what subclasses supply
    @property
    def num_words(self) -> int:
        """Word ids the kernel accepts (ids must lie in ``[0, num_words)``)."""
        raise NotImplementedError

    def _forward_state(self) -> Tensor:
        """Called once per evaluation before any inner product; returns what the inner products
        take as ``latent`` (the word vectors of this evaluation), or a tensor of the kernel's
        dtype and device."""
        raise NotImplementedError

    def mean_embedding_gram(
        self, x1: Tensor, x2: Tensor, symmetric: bool = False, latent: Tensor | None = None
    ) -> Tensor:
        r""":math:`\langle\mu_i,\mu_j\rangle` between all documents: ``*b1 x n1 x L1``,
        ``*b2 x n2 x L2`` -> ``*B x n1 x n2`` (``symmetric`` asserts ``x1 == x2``)."""
        raise NotImplementedError

    def paired_inner(self, x1: Tensor, x2: Tensor, latent: Tensor | None = None) -> Tensor:
        r"""Row-wise :math:`\langle\mu^{(1)}_i,\mu^{(2)}_i\rangle`: ``*b1 x n x L1``, ``*b2 x n x L2`` -> ``*B x n``."""
        raise NotImplementedError

    def self_inner(self, x: Tensor, latent: Tensor | None = None) -> Tensor:
        r""":math:`\|\mu_i\|^2` for every document: ``*b x n x L`` -> ``*B x n``."""
        raise NotImplementedError

    def _norm_floor(self, x: Tensor, latent: Tensor) -> Tensor | None:
        """Per document, the squared norm below which an embedding is rounding noise (an
        embedding whose parts cancel out), counted as zero by the level-2 kernels that normalize
        (``None``: no floor, every computed norm is exact)."""
        return None

    def _floored(
        self, s1: Tensor, s2: Tensor, x1: Tensor, x2: Tensor, same: bool, latent: Tensor, part: InnerProducts
    ) -> tuple[Tensor, Tensor]:
        """The squared norms ``s1`` of ``x1`` and ``s2`` of ``x2`` with those at or below ``part``'s
        floor set to 0 (the floor is computed once when ``x1`` and ``x2`` are the same documents,
        whose norms are then the same)."""

        def floored(s: Tensor, x: Tensor) -> Tensor:
            floor = part.floor(x, latent)
            return s if floor is None else torch.where(s <= floor, torch.zeros_like(s), s)

        s1 = floored(s1, x1)
        return (s1, s1) if same else (s1, floored(s2, x2))

    @property
    def _inner_products(self) -> InnerProducts:
        """The kernel's own inner products (:meth:`mean_embedding_gram`, :meth:`paired_inner`,
        :meth:`self_inner`, :meth:`_norm_floor`)."""
        return InnerProducts(
            lambda x1, x2, symmetric, latent: self.mean_embedding_gram(x1, x2, symmetric=symmetric, latent=latent),
            self.paired_inner,
            self.self_inner,
            self._norm_floor,
        )

    def _bag_of_words_inner_products(self) -> InnerProducts:
        r"""The inner products of the documents' weighted word measures :math:`\langle\phi_i,\phi_j\rangle`
        (the identity word kernel): sparse products of their weight matrices, exact (no floor)."""

        def gram(x1: Tensor, x2: Tensor, symmetric: bool, latent: Tensor) -> Tensor:
            d1 = self._prepare(x1, latent.dtype)
            return me.bag_of_words_inner(d1, d1 if symmetric else self._prepare(x2, latent.dtype), symmetric)

        def paired(x1: Tensor, x2: Tensor, latent: Tensor) -> Tensor:
            return me.bag_of_words_paired(self._prepare(x1, latent.dtype), self._prepare(x2, latent.dtype))

        def norms(x: Tensor, latent: Tensor) -> Tensor:
            return me.bag_of_words_self(self._prepare(x, latent.dtype))

        return InnerProducts(gram, paired, norms, _no_floor)

    def _parts(self, diag: bool) -> list[tuple[Tensor | None, InnerProducts]]:
        """The parts the level-2 kernel acts on, each on its own, and the weights they are added
        with (``None``: 1; a weight is viewed to broadcast against ``*B x n`` when ``diag`` and
        ``*B x n1 x n2`` otherwise): one part by default, the kernel's own inner products."""
        return [(None, self._inner_products)]

    # ------------------------------------------------------------------ shared
    def _prepare(self, x: Tensor, dtype: torch.dtype) -> me.DocumentSet:
        """The :class:`~lvgp.kernels.mean_embedding.DocumentSet` of padded documents ``x``: from a
        small cache of the last sets, keyed by ``x``'s storage, offset, strides, shape and version
        (the entry holds ``x``, so its storage cannot be reused by other documents while cached),
        the kernel's word ids in use and the word weights; failing that, a cached set of the same
        documents (:func:`~lvgp.bow.padded.same_documents`: equal ids up to columns of padding only,
        on a GPU of one width, compared by value: a sparse GP's inducing documents reach the kernel as
        a slice of a fresh concatenation with the batch at every step, and a prediction pads the
        training documents or each block to the other's width). An optimizer evaluates the kernel on the same
        training documents at every step, and a prediction in blocks at every block: their weights,
        distinct words, bags and bag-of-words Gram are computed once."""
        setting = (x.dtype, x.device, dtype, self.num_words, *self._weights_setting())
        key = (
            x.untyped_storage().data_ptr(),
            x.storage_offset(),
            tuple(x.stride()),
            tuple(x.shape),
            x._version,
            setting,
        )
        cache = self.__dict__.setdefault("_document_sets", OrderedDict())
        hit = cache.get(key)
        if hit is None:
            for held_key, held in cache.items():
                if (
                    held_key[-1] == setting
                    # the same number of documents; of any width on the CPU, of the same on a GPU (where each
                    # comparison is a wait, and a mini-batch step's batches of one size and many widths would
                    # wait for every held set)
                    and held_key[3][:-1] == key[3][:-1]
                    and (held_key[3] == key[3] or x.device.type == "cpu")
                    and held[0]._version == held_key[4]  # the held ids are still those the set was built from
                    and same_documents(held[0], x)
                ):
                    # kept under these ids from now on: the next call with the same tensor finds it by
                    # its storage, without comparing values (a read on the host: on a GPU, a wait)
                    del cache[held_key]
                    hit = cache[key] = (x, held[1])
                    break
        if hit is not None:
            cache.move_to_end(key)
            return hit[1]
        documents = me.DocumentSet(*self._weights(without_padding_columns(x), dtype))
        cache[key] = (x, documents)
        while len(cache) > _CACHED_SETS:
            cache.popitem(last=False)
        return documents

    def __getstate__(self) -> dict:
        """As ``nn.Module``'s, without the cache of document sets and the memo of a shared
        evaluation (pickles and deep copies start empty)."""
        state = self.__dict__.copy()
        state.pop("_document_sets", None)
        state.pop("_shared_memo", None)
        return state

    # ------------------------------------------------------------------ one evaluation, shared
    @contextlib.contextmanager
    def shared_evaluation(self) -> Iterator[None]:
        """Inside the block the kernel's evaluations are one evaluation at fixed parameters: the word
        vectors are formed (a variational module's sample drawn) once, and what is derived from them
        for a set of documents -- its squared norms, its rounding floor, a feature map's document
        features -- is computed once and reused by every call that needs it. A sparse GP's step
        evaluates ``K_ZZ``, ``K_ZX`` and ``diag K_XX``: without the block the inducing documents'
        and the batch's norms (or Nystrom features) are computed two or three times each.

        The values are those of separate evaluations (the same computations); the parameters must
        not change inside the block (no optimizer step), and what was computed is dropped on exit.
        Blocks nest (the outermost one owns the memo). :func:`shared_evaluation` enters it for
        every document kernel of a model."""
        outer = "_shared_memo" in self.__dict__
        if not outer:
            self.__dict__["_shared_memo"] = {"versions": self._parameter_versions()}
        try:
            yield
        finally:
            if not outer:
                del self.__dict__["_shared_memo"]

    def _parameter_versions(self) -> tuple[int, ...]:
        return tuple(p._version for p in self.parameters())

    def _shared(self, kind: str, args: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()``, memoized by ``kind``, the identities of ``args`` and the grad mode while a
        :meth:`shared_evaluation` block is open (else computed every time). The entry holds ``args``,
        so that their identities are not reused by other objects inside the block. A parameter
        changed inside the block (an optimizer's step) is an error, not a stale value."""
        memo = self.__dict__.get("_shared_memo")
        if memo is None:
            return compute()
        key = (kind, torch.is_grad_enabled(), *map(id, args))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (args, compute())
        elif self._parameter_versions() != memo["versions"]:
            raise RuntimeError(
                f"a parameter of this {type(self).__name__} changed inside shared_evaluation(): open the block around "
                "one objective evaluation (the loss), and take the optimizer's step after it"
            )
        return hit[1]

    def _weights_setting(self) -> tuple:
        """What decides :meth:`_weights` beside the documents, part of :meth:`_prepare`'s cache key: the
        word weights' table (its storage and version). A kernel that weighs tokens its own way adds its
        settings."""
        table = self.word_weights
        return (None if table is None else (table.data_ptr(), table._version),)

    def _weights(self, x: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """:func:`~lvgp.kernels.mean_embedding.document_weights` with this kernel's word weights
        (extended over ids beyond the table with its largest weight: words of no training document)."""
        table = self.word_weights
        if table is not None and self.num_words > len(table):
            table = torch.cat([table, table.max().expand(self.num_words - len(table))])
        return me.document_weights(x, dtype, table)

    def _squared_norms(
        self, lin: Tensor, x1: Tensor, x2: Tensor, same: bool, latent: Tensor, part: InnerProducts
    ) -> tuple[Tensor, Tensor]:
        r""":math:`\langle\mu,\mu\rangle` of the documents of ``x1`` and of ``x2`` under ``part``, given
        their Gram ``lin`` (its diagonal when ``x1`` and ``x2`` are the same documents)."""
        if same:
            s = lin.diagonal(dim1=-2, dim2=-1)
            return s, s
        return part.norms(x1, latent), part.norms(x2, latent)

    def squared_mmd(self, x1: Tensor, x2: Tensor, allow_empty: bool = False) -> Tensor:
        r"""Squared RKHS distance between the documents' embeddings, :math:`\|\mu_i - \mu_j\|^2`
        (thesis eq. 3.3): ``*B x n1 x n2``. With ``allow_empty``, a padding-only row is the zero
        measure (distance: the other's norm)."""
        x1 = self._check(x1, "x1", allow_empty)
        x2 = self._check(x2, "x2", allow_empty)
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        latent = self._forward_state()
        lin = self.mean_embedding_gram(x1, x2, symmetric=same, latent=latent)
        s1, s2 = self._squared_norms(lin, x1, x2, same, latent, self._inner_products)
        return (s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2 * lin).clamp_min(0)

    def squared_rkhs_distance(self, x1: Tensor, x2: Tensor, allow_empty: bool = False) -> Tensor:
        r"""Squared distance between the documents in the RKHS of this kernel (its level-2 kernel
        included), :math:`K(i, i) + K(j, j) - 2K(i, j)`: ``*B x n1 x n2``. For the linear level 2 it is
        :meth:`squared_mmd`. With ``allow_empty``, a padding-only row is the zero embedding (its
        kernel values are those of the zero measure: 0 for the linear and cosine level 2)."""
        x1 = self._check(x1, "x1", allow_empty)
        x2 = self._check(x2, "x2", allow_empty)
        if x1.shape[-1] != x2.shape[-1]:
            x1, x2 = pad_to_common_width(x1, x2)
        if self.active_dims is not None or x1.dim() > 2 or x2.dim() > 2 or not self.level2.needs_norms:
            cross = self.forward(x1, x2)
            s1, s2 = self.forward(x1, x1, diag=True), self.forward(x2, x2, diag=True)
            return (s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2 * cross).clamp_min(0)
        # a level 2 of the norms: K(i, i) = level2(s_i, s_i, s_i) from the norms the cross Gram
        # computes anyway (one evaluation of each set's norms, not two)
        latent = self._forward_state()
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        totals: list[Tensor] = []  # K(i, j), K(i, i), K(j, j), summed over the parts
        for weight, part in self._parts(diag=False):
            lin = part.gram(x1, x2, same, latent)
            raw1, raw2, s1, s2 = self._level2_norms(lin, x1, x2, same, latent, part)
            values = [
                self.level2(lin, s1.unsqueeze(-1), s2.unsqueeze(-2)),
                self.level2(raw1.unsqueeze(-1), s1.unsqueeze(-1), s1.unsqueeze(-1)).squeeze(-1),
                self.level2(raw2.unsqueeze(-1), s2.unsqueeze(-1), s2.unsqueeze(-1)).squeeze(-1),
            ]
            if weight is not None:  # viewed for n1 x n2; the diagonals take it without the last dim
                values = [values[0] * weight, *(v * weight.squeeze(-1) for v in values[1:])]
            totals = values if not totals else [t + v for t, v in zip(totals, values)]
        cross, self1, self2 = totals
        return (self1.unsqueeze(-1) + self2.unsqueeze(-2) - 2 * cross).clamp_min(0)

    def _check(self, x: Tensor, name: str, allow_empty: bool = False) -> Tensor:
        """The one input check: a padded integer tensor of ids below :attr:`num_words` (any
        integer dtype, returned as ``torch.long``)."""
        check_padded(x, name, self.num_words, allow_empty=allow_empty)
        return x if x.dtype == torch.long else x.long()

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params: Any
    ) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError(f"{type(self).__name__} does not support last_dim_is_batch")
        if self.active_dims is not None:  # emptiness is known only after the column selection
            x1, x2 = self._check(x1, "x1", self.allow_empty), self._check(x2, "x2", self.allow_empty)
        # one evaluation for inputs repeated over a batch (e.g. 8 latent GPs of a softmax
        # classifier): the word Gram and its gradient are formed once, not once per element
        single1 = me.single_batch(x1)
        single2 = single1 if x2 is x1 else me.single_batch(x2)
        if (
            (single1 is not None or x1.dim() <= 2)
            and (single2 is not None or x2.dim() <= 2)
            and (single1 is not None or single2 is not None)
        ):
            a = x1 if single1 is None else single1
            b = a if x2 is x1 else (x2 if single2 is None else single2)
            out = self.forward(a, b, diag=diag)
            tail = 1 if diag else 2
            batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2], out.shape[: out.dim() - tail])
            return out.expand(*batch, *out.shape[out.dim() - tail :])
        latent = self._forward_state()
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        if diag and x1.shape[-2] != x2.shape[-2]:
            raise ValueError(f"diag=True needs as many documents in x1 as in x2; got {x1.shape[-2]} and {x2.shape[-2]}")
        total: Tensor | None = None
        for weight, part in self._parts(diag):
            value = self._level2_values(part, x1, x2, diag, same, latent)
            value = value if weight is None else weight * value
            total = value if total is None else total + value
        assert total is not None
        return total

    def _level2_values(
        self, part: InnerProducts, x1: Tensor, x2: Tensor, diag: bool, same: bool, latent: Tensor
    ) -> Tensor:
        """The level-2 kernel of one part's inner products: the Gram ``*B x n1 x n2``, or with
        ``diag`` its diagonal ``*B x n``."""
        level2 = self.level2
        if diag:
            if same and level2.unit_diagonal:
                batch = broadcast_shapes(x1.shape[:-2], self.batch_shape)
                return torch.ones(*batch, x1.shape[-2], dtype=latent.dtype, device=x1.device)
            lin = part.norms(x1, latent) if same else part.paired(x1, x2, latent)
            s1 = s2 = None
            if level2.needs_norms:
                s1, s2 = (lin, lin) if same else (part.norms(x1, latent), part.norms(x2, latent))
                if level2.floors_norms:
                    s1, s2 = self._floored(s1, s2, x1, x2, same, latent, part)
                s1, s2 = s1.unsqueeze(-1), s2.unsqueeze(-1)
            return level2(lin.unsqueeze(-1), s1, s2).squeeze(-1)
        lin = part.gram(x1, x2, same, latent)
        s1 = s2 = None
        if level2.needs_norms:
            _, _, s1, s2 = self._level2_norms(lin, x1, x2, same, latent, part)
            s1, s2 = s1.unsqueeze(-1), s2.unsqueeze(-2)
        return level2(lin, s1, s2)

    def _level2_norms(
        self, lin: Tensor, x1: Tensor, x2: Tensor, same: bool, latent: Tensor, part: InnerProducts
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The squared norms of ``x1`` and ``x2`` under ``part`` (given their Gram ``lin``), as computed
        and as the level-2 kernel takes them (floored where it floors them)."""
        raw1, raw2 = self._squared_norms(lin, x1, x2, same, latent, part)
        if not self.level2.floors_norms:
            return raw1, raw2, raw1, raw2
        return (raw1, raw2, *self._floored(raw1, raw2, x1, x2, same, latent, part))

    def __call__(self, x1: Tensor, x2: Tensor | None = None, diag: bool = False, **params: Any) -> Any:
        """As :meth:`gpytorch.kernels.Kernel.__call__`, validating inputs eagerly (any integer
        dtype), padding ``x1``/``x2`` of different widths to a common width (padding changes no
        value), and computing ``diag=True`` directly: gpytorch's ``Kernel.__call__`` takes the
        diagonal of any output shaped like ``x1``'s Gram, which misreads a batched kernel's
        ``b x n`` diagonal when ``b == n``."""
        # with active_dims, emptiness is only known after column selection (checked in forward)
        allow_empty = self.allow_empty or self.active_dims is not None
        x1 = self._check(x1, "x1", allow_empty)
        if x2 is not None:
            x2 = self._check(x2, "x2", allow_empty)
            if x1.shape[-1] != x2.shape[-1]:
                x1, x2 = pad_to_common_width(x1, x2)
        if diag:
            if self.active_dims is not None:
                x1 = x1.index_select(-1, self.active_dims)
                x2 = x1 if x2 is None else x2.index_select(-1, self.active_dims)
            return Module.__call__(self, x1, x1 if x2 is None else x2, diag=True, **params)
        return super().__call__(x1, x2, diag=diag, **params)

    # ------------------------------------------------------------------ batches
    def _rebatch(self, new: DocumentKernel, change: Any) -> DocumentKernel:
        """The parts gpytorch's ``expand_batch`` / ``__getitem__`` do not know: the level-2 kernel
        rebatched by ``change``; the word weights (one per word, shared by the batch members) as
        they were."""
        if self.word_weights is not None:
            new.word_weights = self.word_weights.clone()
        new.level2 = change(self.level2)
        return new

    def expand_batch(self, *sizes: Any) -> DocumentKernel:
        """As gpytorch's ``Kernel.expand_batch``, the level-2 kernel included."""
        new = super().expand_batch(*sizes)
        if new is self:
            return new
        return self._rebatch(new, lambda part: part.expand_batch(new.batch_shape))

    def __getitem__(self, index: Any) -> DocumentKernel:
        """As gpytorch's ``Kernel.__getitem__`` (index the batch): the kernel's own parameters and
        its parts."""
        if not len(self.batch_shape):
            return self
        index = index if isinstance(index, tuple) else (index,)
        new = copy.deepcopy(self)
        for name, param in self.named_parameters(recurse=False):
            getattr(new, name).data = param.data[index]
        new._batch_shape = torch.zeros(self.batch_shape)[index].shape  # batch shapes are small
        for name, sub in self.named_children():
            if isinstance(sub, Kernel):
                setattr(new, name, sub[index])
        return self._rebatch(new, lambda part: part[index])


@contextlib.contextmanager
def shared_evaluation(*modules: Module) -> Iterator[None]:
    """:meth:`DocumentKernel.shared_evaluation` for every document kernel in ``modules`` (a model, a
    likelihood, a kernel): wrap one objective evaluation of a training step, before its backward
    pass and the optimizer's step, e.g. ``with shared_evaluation(model): loss = -mll(model(x), y)``."""
    kernels = {id(m): m for module in modules for m in module.modules() if isinstance(m, DocumentKernel)}
    with contextlib.ExitStack() as stack:
        for kernel in kernels.values():
            stack.enter_context(kernel.shared_evaluation())
        yield
