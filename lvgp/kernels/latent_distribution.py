r"""The latent distribution kernel (LDK) of Yoshikawa (PhD thesis, NAIST 2015, ch. 3).

Every word :math:`v` of a vocabulary of size :math:`V` has a latent vector
:math:`\mathbf x_v \in \mathbb R^q`. A document :math:`D_i` (a multiset of words) is
represented by the empirical kernel mean embedding of its words' vectors (eq. 3.1)

.. math:: m(\mathbf X_i) = \frac{1}{|D_i|} \sum_{s \in D_i} k(\cdot, \mathbf x_s),

and two documents are compared by a level-2 kernel over these embeddings:

* linear (eq. 3.9):  :math:`K_{*\text{-LIN}}(i, j) = \frac{1}{|D_i||D_j|} \sum_{s \in D_i}\sum_{t \in D_j} k(\mathbf x_s, \mathbf x_t)`
* polynomial (eq. 3.10): :math:`(K_{*\text{-LIN}}(i, j) + c)^d`
* RBF (eq. 3.11): :math:`\exp(-\frac{\zeta}{2}\{K_{*\text{-LIN}}(i,i) - 2K_{*\text{-LIN}}(i,j) + K_{*\text{-LIN}}(j,j)\})`

with the embedding kernel :math:`k` linear (eq. 3.6), RBF
:math:`\exp(-\frac{\gamma}{2}\|\mathbf x_s - \mathbf x_t\|^2)` (eq. 3.7), polynomial
:math:`(\mathbf x_s^\top \mathbf x_t + a)^b` (eq. 3.8), or any gpytorch kernel on :math:`\mathbb R^q`.

The parts live in their own modules: the word vectors (:mod:`lvgp.kernels.word_vectors`: point,
MAP, variational, optionally tied to pretrained embeddings; :func:`~lvgp.kernels.make_word_vectors`
makes them), the embedding kernels (:mod:`lvgp.kernels.embedding`), the level-2 kernels
(:mod:`lvgp.kernels.level2`) and the mean-embedding arithmetic (:mod:`lvgp.kernels.mean_embedding`:
sparse products, never the :math:`O(n_1 n_2 L_1 L_2 q)` double sum). This module puts them together
as a gpytorch kernel.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from gpytorch.kernels import Kernel
from gpytorch.module import Module
from torch import Tensor

from .._typing import TensorLike
from ..bow.padded import check_padded, pad_to_common_width
from . import mean_embedding as me
from .embedding import EMBEDDINGS, EmbeddingKernel, rbf_gram
from .level2 import LEVEL2_KERNELS, Level2Kernel, make_level2
from .word_vectors import MAPWordVectors, NegativeLatentKL, VariationalWordVectors, WordVectors, make_word_vectors

__all__ = ["LatentDistributionKernel", "NegativeLatentKL", "EMBEDDINGS", "LEVEL2_KERNELS", "rbf_gram"]

#: keyword arguments of gpytorch's ``Kernel`` that the LDK accepts
_KERNEL_OPTIONS = ("batch_shape", "active_dims", "eps")
#: thesis hyper-parameter name -> where it lives (for the properties and their error messages)
_HYPERPARAMETERS = {
    "gamma": "embedding",
    "a": "embedding",
    "b": "embedding",
    "zeta": "level2",
    "c": "level2",
    "d": "level2",
}
#: arguments the LDK took before make_word_vectors became the only factory of word vectors
_WORD_VECTOR_OPTIONS = ("latent_init", "word_features", "variational", "latent_scale_init")


def _option_names(classes: Any) -> set[str]:
    return {name for cls in classes for name in cls.options}


class LatentDistributionKernel(Kernel):
    r"""The latent distribution kernel between bag-of-words documents (thesis eqs. 3.1-3.11).

    Inputs are padded word-index sets: ``... x n x L`` integer tensors whose entries are word
    ids in ``[0, num_words)`` or :data:`lvgp.PAD` (see :class:`lvgp.Vocabulary`). ``x1`` and
    ``x2`` may have different widths ``L1 != L2``. Like gpytorch's kernels there is no output
    scale: wrap in :class:`gpytorch.kernels.ScaleKernel` (GP-LVSM's :math:`\alpha^{-1}`).

    Args:
        num_words: vocabulary size :math:`V` (may be omitted when ``word_vectors`` is given).
        latent_dim: latent dimensionality :math:`q` (likewise).
        embedding: ``"linear"`` (eq. 3.6), ``"rbf"`` (eq. 3.7), ``"poly"`` (eq. 3.8)
            (:data:`~lvgp.kernels.embedding.EMBEDDINGS`), or a gpytorch
            :class:`~gpytorch.kernels.Kernel` instance acting on ``R^q`` (its parameters become part
            of this kernel).
        level2: ``"linear"`` (eq. 3.9), ``"rbf"`` (eq. 3.11), ``"poly"`` (eq. 3.10), ``"cosine"``
            (the linear kernel normalized; not in the thesis), or a
            :class:`~lvgp.kernels.level2.Level2Kernel` (:data:`~lvgp.kernels.level2.LEVEL2_KERNELS`).
        word_vectors: the latent vectors, a :class:`~lvgp.kernels.WordVectors` module (point, MAP,
            variational, optionally tied to pretrained embeddings; made by
            :func:`~lvgp.kernels.make_word_vectors`); may be shared with other kernels. ``None``:
            ``make_word_vectors(num_words, latent_dim, rho=rho, seed=seed)``, MAP vectors drawn from
            their prior.
        rho: precision :math:`\rho` of the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)` of the
            default word vectors (registered as their gpytorch prior ``latent_prior``); ``None``: no
            prior. See the note on MAP training below.
        seed: seed of the default word vectors' random initialization (``None``: torch's global generator).
        word_weights: ``None`` (the thesis: a document is the uniform empirical measure of its
            words' vectors, eq. 3.1) or ``num_words`` positive weights (e.g. inverse document
            frequencies, :func:`lvgp.models.documents.idf_weights`): a document is then the
            weighted measure :math:`\sum_{s\in D_i} w_s\,k(\cdot, \mathbf x_s) / \sum_{s\in D_i} w_s`,
            still a kernel mean embedding of a probability measure. Words appended by
            :meth:`~lvgp.kernels.WordVectors.extra_words` get the largest weight (an idf-like
            weight of a word in no training document).
        **options: the hyper-parameters of the chosen embedding and level-2 kernels under the
            thesis's names, passed on to them: ``gamma`` (RBF embedding bandwidth), ``a``, ``b``
            (polynomial embedding bias and fixed degree), ``zeta`` (RBF level-2 bandwidth), ``c``,
            ``d`` (polynomial level-2 bias and fixed degree), each hyper-parameter's ``*_prior`` and
            ``*_constraint`` (default :class:`~gpytorch.constraints.Positive`); those of kernels not
            chosen are ignored. And gpytorch's ``batch_shape`` (with a batch shape, every batch
            member has its own latent vectors, ``*batch_shape x V x q``), ``active_dims``, ``eps``.

    The hyper-parameters are settable properties under the thesis's names (``k.gamma = 0.5``).

    MAP training: gpytorch's :class:`~gpytorch.mlls.ExactMarginalLogLikelihood` returns
    :math:`(\log p(\mathbf y \mid \mathbf X, \dots) + \sum \log p(\text{priors})) / n`. With
    ``latent_prior`` registered, maximizing it maximizes the log posterior of eq. 11 of
    the GP-LVSM paper, :math:`\log p(\mathbf y\mid\mathbf X) - \frac{\rho}{2}\sum_v\|\mathbf x_v\|^2`
    (up to a constant), divided by :math:`n` -- the division does not move the maximizer.
    For several outputs sharing this kernel use :class:`lvgp.LogPosterior`, which counts
    the prior once.

    Identifiability: with the RBF embedding the kernel depends on the latent vectors only
    through :math:`\sqrt\gamma\,\mathbf x_v`, so learning :math:`\gamma` together with
    :math:`\mathbf X` turns the prior's precision into :math:`\rho/\gamma` and lets the
    optimizer void it (GP-LVSM's estimator keeps :math:`\gamma` fixed by default).

    Example:
        >>> import gpytorch, torch
        >>> x = torch.tensor([[0, 1, 1, -1], [2, 3, -1, -1]])  # two documents, -1 = PAD
        >>> k = gpytorch.kernels.ScaleKernel(LatentDistributionKernel(num_words=4, latent_dim=2, seed=0))
        >>> k(x).to_dense().shape
        torch.Size([2, 2])
    """

    has_lengthscale = False

    def __init__(
        self,
        num_words: int | None = None,
        latent_dim: int | None = None,
        embedding: str | Kernel = "rbf",
        level2: str | Level2Kernel = "linear",
        *,
        word_vectors: WordVectors | None = None,
        rho: float | None = 1.0,
        seed: int | None = None,
        word_weights: TensorLike | None = None,
        **options: Any,
    ) -> None:
        embedding_options = _option_names(EMBEDDINGS.values())
        level2_options = _option_names(LEVEL2_KERNELS.values())
        unknown = set(options) - embedding_options - level2_options - set(_KERNEL_OPTIONS)
        if unknown:
            moved = sorted(unknown & set(_WORD_VECTOR_OPTIONS))
            advice = (
                f" ({', '.join(moved)}: build the vectors with lvgp.kernels.make_word_vectors(...) and pass "
                "word_vectors=)"
                if moved
                else ""
            )
            raise TypeError(f"LatentDistributionKernel got unknown arguments {sorted(unknown)}{advice}")
        super().__init__(**{k: v for k, v in options.items() if k in _KERNEL_OPTIONS})
        if isinstance(embedding, Kernel):
            self.embedding = embedding
        elif isinstance(embedding, str) and embedding in EMBEDDINGS:
            cls = EMBEDDINGS[embedding]
            self.embedding = cls(**{k: v for k, v in options.items() if k in cls.options}, batch_shape=self.batch_shape)
        else:
            raise ValueError(f"embedding must be one of {tuple(EMBEDDINGS)} or a gpytorch Kernel; got {embedding!r}")
        self.level2 = make_level2(level2, self.batch_shape, options)
        if word_vectors is None:
            if num_words is None or latent_dim is None:
                raise ValueError("pass num_words and latent_dim, or a word_vectors module")
            word_vectors = make_word_vectors(num_words, latent_dim, rho=rho, seed=seed, batch_shape=self.batch_shape)
        elif not isinstance(word_vectors, WordVectors):
            raise TypeError(
                f"word_vectors must be an lvgp.kernels.WordVectors module; got {type(word_vectors).__name__}"
            )
        else:
            for name, given in (("num_words", num_words), ("latent_dim", latent_dim)):
                if given is not None and given != getattr(word_vectors, name):
                    raise ValueError(f"{name}={given} disagrees with the word_vectors' {getattr(word_vectors, name)}")
            try:
                torch.broadcast_shapes(word_vectors.batch_shape, self.batch_shape)
            except RuntimeError:
                raise ValueError(
                    f"word_vectors batch shape {tuple(word_vectors.batch_shape)} does not broadcast with the "
                    f"kernel's {tuple(self.batch_shape)}"
                ) from None
        self.word_vectors = word_vectors
        if word_weights is None:
            self.word_weights = None
        else:
            weights = torch.as_tensor(word_weights, dtype=word_vectors.dtype)
            if weights.shape != (word_vectors.num_words,) or not torch.isfinite(weights).all() or (weights <= 0).any():
                raise ValueError(f"word_weights must be {word_vectors.num_words} positive finite weights")
            self.register_buffer("word_weights", weights)

    def _weights(self, x: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """:func:`~lvgp.kernels.mean_embedding.document_weights` with this kernel's word weights
        (extended over extra words)."""
        table = self.word_weights
        if table is not None and self.num_words > len(table):
            table = torch.cat([table, table.max().expand(self.num_words - len(table))])
        return me.document_weights(x, dtype, table)

    # ------------------------------------------------------------------ parts and hyper-parameters
    @property
    def num_words(self) -> int:
        """Word ids the kernel accepts now: the vocabulary, plus words of an active
        :meth:`~lvgp.kernels.WordVectors.extra_words` block."""
        return self.word_vectors.num_words_in_use

    @property
    def latent_dim(self) -> int:
        return self.word_vectors.latent_dim

    @property
    def latent(self) -> Tensor:
        """The latent word vectors the kernel evaluates, ``*batch_shape x num_words x latent_dim``
        (:attr:`lvgp.kernels.WordVectors.vectors`). Setting it sets the vectors' means."""
        return self.word_vectors.vectors

    @latent.setter
    def latent(self, value: TensorLike) -> None:
        self.word_vectors.vectors = value

    @property
    def variational(self) -> bool:
        return isinstance(self.word_vectors, VariationalWordVectors)

    @property
    def rho(self) -> float | None:
        """Precision of the Gaussian prior on the latent vectors (``None``: no prior)."""
        return self.word_vectors.rho

    @rho.setter
    def rho(self, value: float) -> None:
        if not isinstance(self.word_vectors, MAPWordVectors):
            raise AttributeError("this kernel's word vectors have no prior (rho=None)")
        self.word_vectors.rho = value

    @property
    def embedding_name(self) -> str:
        """``"linear"``, ``"rbf"``, ``"poly"``, or the class name of a custom embedding kernel."""
        return getattr(self.embedding, "name", type(self.embedding).__name__)

    @property
    def _builtin_embedding(self) -> bool:
        return isinstance(self.embedding, EmbeddingKernel)

    @property
    def _explicit(self) -> bool:
        """The mean embeddings are explicit vectors (linear embedding kernel)."""
        return self._builtin_embedding and self.embedding.explicit

    def __getattr__(self, name: str) -> Any:
        owner = _HYPERPARAMETERS.get(name)
        if owner is not None:  # the thesis's names of the embedding and level-2 hyper-parameters
            part = super().__getattr__(owner)
            try:
                return getattr(part, name)
            except AttributeError:
                choice = getattr(part, "name", type(part).__name__)
                raise AttributeError(f"{name} is not a hyper-parameter of {owner}={choice!r}") from None
        return super().__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        owner = _HYPERPARAMETERS.get(name)
        if owner is not None and owner in self._modules:
            part = self._modules[owner]
            if not hasattr(part, name):
                choice = getattr(part, "name", type(part).__name__)
                raise AttributeError(f"{name} is not a hyper-parameter of {owner}={choice!r}")
            setattr(part, name, value)
            return
        super().__setattr__(name, value)

    # ------------------------------------------------------------------ the inner products
    def embedding_gram(self, xa: Tensor, xb: Tensor) -> Tensor:
        """Embedding kernel between latent vectors: ``... x m1 x q``, ``... x m2 x q`` -> ``... x m1 x m2``.

        The kernel's batch shape broadcasts against the trailing batch dimensions, as in gpytorch.
        """
        if self._builtin_embedding:
            return self.embedding.gram(xa, xb)
        return self.embedding(xa, xb).to_dense()

    def paired_inner(self, x1: Tensor, x2: Tensor, latent: Tensor | None = None) -> Tensor:
        r"""Row-wise :math:`\langle m(\mathbf X^{(1)}_i), m(\mathbf X^{(2)}_i)\rangle` (eq. 3.2):
        ``*b1 x n x L1`` and ``*b2 x n x L2`` -> ``*B x n``. Costs :math:`O(n L_1 L_2 q)`.
        ``latent``: the vectors to use (default :attr:`latent`)."""
        latent = self.latent if latent is None else latent
        ids1, w1 = self._weights(x1, latent.dtype)
        ids2, w2 = self._weights(x2, latent.dtype)
        return me.paired_inner(ids1, w1, ids2, w2, latent, self.embedding_gram, self._explicit)

    def self_inner(self, x: Tensor, latent: Tensor | None = None) -> Tensor:
        r""":math:`\|m(\mathbf X_i)\|^2` for every document (``*b x n x L`` -> ``*B x n``), through
        the Gram of the distinct words (:func:`~lvgp.kernels.mean_embedding.self_inner`)."""
        latent = self.latent if latent is None else latent
        ids, w = self._weights(x, latent.dtype)
        return me.self_inner(ids, w, latent, self.embedding_gram, self._explicit)

    def mean_embedding_gram(
        self, x1: Tensor, x2: Tensor, symmetric: bool = False, latent: Tensor | None = None
    ) -> Tensor:
        r""":math:`K_{*\text{-LIN}}` (eq. 3.9) between all documents: ``*b1 x n1 x L1``,
        ``*b2 x n2 x L2`` -> ``*B x n1 x n2``. ``symmetric`` asserts ``x1 == x2``."""
        latent = self.latent if latent is None else latent
        ids1, w1 = self._weights(x1, latent.dtype)
        ids2, w2 = (ids1, w1) if symmetric else self._weights(x2, latent.dtype)
        return me.mean_embedding_gram(
            ids1,
            w1,
            ids2,
            w2,
            latent,
            self.embedding_gram,
            self._explicit,
            symmetric=symmetric,
            gram_symmetric=self._builtin_embedding,
            batch_shape=self.batch_shape,
        )

    def _squared_norms(self, lin: Tensor, x1: Tensor, x2: Tensor, same: bool, latent: Tensor) -> tuple[Tensor, Tensor]:
        r""":math:`\langle\mu,\mu\rangle` of the documents of ``x1`` and of ``x2``, given their Gram
        ``lin`` (its diagonal when ``x1`` and ``x2`` are the same documents)."""
        if same:
            s = lin.diagonal(dim1=-2, dim2=-1)
            return s, s
        return self.self_inner(x1, latent), self.self_inner(x2, latent)

    def squared_mmd(self, x1: Tensor, x2: Tensor, allow_empty: bool = False) -> Tensor:
        r"""Squared RKHS distance between mean embeddings, eq. 3.3: ``*B x n1 x n2``. With
        ``allow_empty``, a padding-only row is the zero measure (distance: the other's norm)."""
        x1 = self._check(x1, "x1", allow_empty)
        x2 = self._check(x2, "x2", allow_empty)
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        latent = self.latent
        lin = self.mean_embedding_gram(x1, x2, symmetric=same, latent=latent)
        s1, s2 = self._squared_norms(lin, x1, x2, same, latent)
        return (s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2 * lin).clamp_min(0)

    # ------------------------------------------------------------------ the kernel
    def _check(self, x: Tensor, name: str, allow_empty: bool = False) -> Tensor:
        """The one input check: a padded integer tensor of ids below :attr:`num_words` (any
        integer dtype, returned as ``torch.long``)."""
        check_padded(x, name, self.num_words, allow_empty=allow_empty)
        return x if x.dtype == torch.long else x.long()

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params: Any
    ) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError("LatentDistributionKernel does not support last_dim_is_batch")
        if self.active_dims is not None:  # emptiness is known only after the column selection
            x1, x2 = self._check(x1, "x1"), self._check(x2, "x2")
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
            batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], out.shape[: out.dim() - tail])
            return out.expand(*batch, *out.shape[out.dim() - tail :])
        self.word_vectors.sample_for_training()
        latent = self.latent
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        level2 = self.level2
        if diag:
            if x1.shape[-2] != x2.shape[-2]:
                raise ValueError(
                    f"diag=True needs as many documents in x1 as in x2; got {x1.shape[-2]} and {x2.shape[-2]}"
                )
            if same and level2.unit_diagonal:
                batch = torch.broadcast_shapes(x1.shape[:-2], self.batch_shape)
                return torch.ones(*batch, x1.shape[-2], dtype=latent.dtype, device=x1.device)
            lin = self.self_inner(x1, latent) if same else self.paired_inner(x1, x2, latent)
            s1 = s2 = None
            if level2.needs_norms:
                s1, s2 = (lin, lin) if same else (self.self_inner(x1, latent), self.self_inner(x2, latent))
                s1, s2 = s1.unsqueeze(-1), s2.unsqueeze(-1)
            return level2(lin.unsqueeze(-1), s1, s2).squeeze(-1)
        lin = self.mean_embedding_gram(x1, x2, symmetric=same, latent=latent)
        s1 = s2 = None
        if level2.needs_norms:
            s1, s2 = self._squared_norms(lin, x1, x2, same, latent)
            s1, s2 = s1.unsqueeze(-1), s2.unsqueeze(-2)
        return level2(lin, s1, s2)

    def __call__(self, x1: Tensor, x2: Tensor | None = None, diag: bool = False, **params: Any) -> Any:
        """As :meth:`gpytorch.kernels.Kernel.__call__`, validating inputs eagerly (any integer
        dtype), padding ``x1``/``x2`` of different widths to a common width (padding changes no
        value), and computing ``diag=True`` directly: gpytorch's ``Kernel.__call__`` takes the
        diagonal of any output shaped like ``x1``'s Gram, which misreads a batched kernel's
        ``b x n`` diagonal when ``b == n``."""
        # with active_dims, emptiness is only known after column selection (checked in forward)
        allow_empty = self.active_dims is not None
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

    # ------------------------------------------------------------------ batches and persistence
    def _rebatch(self, new: LatentDistributionKernel, change: Any) -> LatentDistributionKernel:
        """The parts gpytorch's ``expand_batch`` / ``__getitem__`` do not know: the level-2 kernel
        and the word vectors rebatched by ``change``; the word weights (one per word, shared by
        the batch members) as they were."""
        if self.word_weights is not None:
            new.word_weights = self.word_weights.clone()
        new.level2 = change(self.level2)
        if len(self.word_vectors.batch_shape):
            new.word_vectors = change(self.word_vectors)
        return new

    def expand_batch(self, *sizes: Any) -> LatentDistributionKernel:
        """As gpytorch's ``Kernel.expand_batch``, level-2 kernel and word vectors included."""
        new = super().expand_batch(*sizes)
        if new is self:
            return new
        return self._rebatch(new, lambda part: part.expand_batch(new.batch_shape))

    def __getitem__(self, index: Any) -> LatentDistributionKernel:
        """As gpytorch's ``Kernel.__getitem__`` (index the batch): the kernel's own parameters,
        the embedding kernel, the level-2 kernel and the word vectors."""
        if not len(self.batch_shape):
            return self
        index = index if isinstance(index, tuple) else (index,)
        new = copy.deepcopy(self)
        for name, param in self.named_parameters(recurse=False):
            getattr(new, name).data = param.data[index]
        new._batch_shape = torch.zeros(self.batch_shape)[index].shape  # batch shapes are small
        new.embedding = self.embedding[index]
        return self._rebatch(new, lambda part: part[index])

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any, **kwargs: Any) -> None:
        """Reads state dicts saved before the embedding and level-2 kernels were modules of their
        own (lvgp 0.1.0: ``raw_gamma`` for ``embedding.raw_gamma``, ``raw_zeta`` for ``level2.raw_zeta``)."""
        for name in ("gamma", "a", "zeta", "c"):
            owner = _HYPERPARAMETERS[name]
            for key in list(state_dict):
                local = key[len(prefix) :]
                if key.startswith(prefix) and (
                    local == f"raw_{name}"
                    or local.startswith(f"raw_{name}_constraint.")
                    or local.startswith(f"{name}_prior.")
                ):
                    state_dict[f"{prefix}{owner}.{local}"] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        weights = ", word_weights" if self.word_weights is not None else ""
        return f"num_words={self.word_vectors.num_words}, latent_dim={self.latent_dim}{weights}"
