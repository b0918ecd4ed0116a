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

Computation (never the :math:`O(n_1 n_2 L_1 L_2 q)` double sum): with :math:`C` the
:math:`n \times u` matrix of normalised word counts over the :math:`u` distinct words
present and :math:`G` their embedding Gram, :math:`K_{*\text{-LIN}} = C_1 G C_2^\top`,
evaluated as two sparse products (``torch.nn.functional.embedding_bag``) in
:math:`O(\mathrm{nnz}_2 u_1 + \mathrm{nnz}_1 n_2 + u_1 u_2 q)`. With the linear embedding
kernel the mean embeddings are explicit: :math:`K = (C_1 X)(C_2 X)^\top`. Self-similarities
(the diagonal, and the level-2 RBF's :math:`K(i,i)` terms) use each document's own
:math:`L \times L` Gram, :math:`O(n L^2 q)`, or for unbatched inputs the Gram of their
distinct words. The built-in RBF embedding Gram is one fused operation (a single
:math:`u_1 \times u_2` buffer forward, the analytic gradient backward).

The latent vectors are a module of their own (:mod:`lvgp.kernels.word_vectors`: point, MAP,
variational, optionally tied to pretrained embeddings); the kernel computes Grams from
whatever vectors that module gives it.
"""

from __future__ import annotations

import typing
from typing import Any

import torch
import torch.nn.functional as F
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel
from gpytorch.module import Module
from gpytorch.priors import Prior
from torch import Tensor

from .._typing import TensorLike
from ..bow.padded import PAD, check_padded, pad_to_common_width
from ._hyper import constrained_property, register_constrained
from .word_vectors import MAPWordVectors, NegativeLatentKL, VariationalWordVectors, WordVectors, make_word_vectors

__all__ = ["LatentDistributionKernel", "NegativeLatentKL", "EMBEDDINGS", "LEVEL2_KERNELS", "rbf_gram"]

EMBEDDINGS = ("linear", "rbf", "poly")
LEVEL2_KERNELS = ("linear", "rbf", "poly", "cosine")

# Which hyper-parameter each kernel choice uses: name -> (embedding or level-2 choice).
_USED_BY = {
    "gamma": ("embedding", "rbf"),
    "a": ("embedding", "poly"),
    "zeta": ("level2", "rbf"),
    "c": ("level2", "poly"),
}
# Entries of per-document L1 x L2 Gram blocks evaluated at once (bounds memory of the diagonal path).
_BLOCK_ENTRIES = 2**22


class _FusedRBFGram(torch.autograd.Function):
    r""":math:`G_{st} = \exp(-\frac\gamma2\|\mathbf a_s - \mathbf b_t\|^2)` for ``m1 x q`` and ``m2 x q``
    inputs and a 0-dim :math:`\gamma`, in one ``m1 x m2`` buffer (the elementwise steps in place);
    backward from the closed form :math:`\partial G_{st}/\partial\mathbf a_s = -\gamma(\mathbf a_s - \mathbf b_t)G_{st}`
    (thesis eq. 3.20), two matrix products instead of autograd's chain of ``m1 x m2`` temporaries."""

    @staticmethod
    def forward(ctx: Any, xa: Tensor, xb: Tensor, gamma: Tensor) -> Tensor:
        gram = xa @ xb.mT
        gram.mul_(2).sub_(xa.pow(2).sum(-1).unsqueeze(-1)).sub_(xb.pow(2).sum(-1).unsqueeze(-2))
        gram.clamp_(max=0).mul_(0.5 * gamma).exp_()
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


def rbf_gram(xa: Tensor, xb: Tensor, gamma: Tensor) -> Tensor:
    r"""RBF Gram :math:`\exp(-\frac\gamma2\|\mathbf x_a - \mathbf x_b\|^2)` (eq. 3.7): ``... x m1 x q``,
    ``... x m2 x q`` -> ``... x m1 x m2``; ``gamma`` broadcasts with trailing ``1 x 1`` dims. Unbatched
    inputs with a scalar gamma take the fused path (:class:`_FusedRBFGram`). Not gpytorch's
    ``RBFKernel``: that owns its lengthscale as a module parameter and has no fused backward
    (tests/test_library_references.py checks the two agree); the CLGP and the GP
    covariate-embedding baseline use this one too."""
    if xa.dim() == 2 and xb.dim() == 2 and gamma.numel() == 1:
        return _FusedRBFGram.apply(xa, xb, gamma.reshape(()))
    sq = xa.pow(2).sum(-1).unsqueeze(-1) + xb.pow(2).sum(-1).unsqueeze(-2) - 2 * (xa @ xb.mT)
    return torch.exp(-0.5 * gamma * sq.clamp_min(0))


def _inverse_norm(self_inner: Tensor) -> Tensor:
    r""":math:`1/\|\mu\|` from :math:`\langle\mu,\mu\rangle` (floored at the dtype's smallest normal
    number: a zero embedding, possible only with a degenerate embedding kernel, gives 0, not NaN)."""
    return self_inner.clamp_min(torch.finfo(self_inner.dtype).tiny).rsqrt()


def _gather_rows(table: Tensor, idx: Tensor) -> Tensor:
    """``table[..., idx, :]`` with broadcasting batch dims: table ``*kb x V x q``, idx ``*b x m`` -> ``*B x m x q``."""
    if table.dim() == 2:
        return table[idx]
    batch = torch.broadcast_shapes(table.shape[:-2], idx.shape[:-1])
    table = table.expand(*batch, *table.shape[-2:])
    idx = idx.expand(*batch, idx.shape[-1]).unsqueeze(-1).expand(*batch, idx.shape[-1], table.shape[-1])
    return table.gather(-2, idx)


def _word_weights(x: Tensor, dtype: torch.dtype, table: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Ids with padding replaced by 0, and each word's share of its document (0 on padding):
    ``1/|D_i|`` (the thesis's empirical measure), or with a per-word ``table`` of weights
    ``table[v] / sum of the document's weights``."""
    mask = x != PAD
    ids = torch.where(mask, x, torch.zeros_like(x))
    weights = mask.to(dtype) if table is None else table.to(dtype)[ids] * mask
    return ids, weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)


class _Bags(typing.NamedTuple):
    """Documents as bags of distinct words for ``embedding_bag``'s offsets form: ``words``
    (local word ids, document after document), ``offsets`` (where each document starts),
    ``weights`` (count / document length); no padding, repeated words merged."""

    words: Tensor
    offsets: Tensor
    weights: Tensor
    n: int


def _bags(local: Tensor, weights: Tensor) -> _Bags:
    """Bags of one ``n x L`` tensor of local word ids and their ``1/|D_i|`` weights (0 on
    padding). Padding costs a long corpus nothing: ``embedding_bag`` over a padded ``n x L``
    input reads a Gram row for every padding slot (20ng documents after the 1% cut: ~470 slots
    for ~55 tokens)."""
    n, width = local.shape
    keep = weights > 0
    rows = torch.arange(n, device=local.device).unsqueeze(-1).expand(n, width)[keep]
    size = int(local.max()) + 1 if local.numel() else 1
    keys, inverse = torch.unique(rows * size + local[keep], return_inverse=True)
    summed = torch.zeros(len(keys), dtype=weights.dtype, device=weights.device).index_add_(0, inverse, weights[keep])
    counts = torch.bincount(keys // size, minlength=n)
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)[:-1]])
    return _Bags(keys % size, offsets, summed, n)


def _bag_product(bags: _Bags, table: Tensor) -> Tensor:
    """``C @ table`` for the bags' ``n x u`` weight matrix ``C``: ``n x table.shape[1]``."""
    if bags.words.numel() == 0:
        return table.new_zeros(bags.n, table.shape[1])
    return F.embedding_bag(bags.words, table, bags.offsets, per_sample_weights=bags.weights, mode="sum")


def _sandwich(bags1: _Bags, gram: Tensor, bags2: _Bags, symmetric: bool) -> Tensor:
    r""":math:`C_1 G C_2^\top` for one batch element (``gram`` is ``u1 x u2``): two
    ``embedding_bag`` products, in the cheaper order."""
    nnz1, nnz2 = bags1.words.numel(), bags2.words.numel()
    n1, n2 = bags1.n, bags2.n
    u1, u2 = gram.shape
    if n1 == 0 or n2 == 0:
        return gram.new_zeros(n1, n2)
    if nnz2 * u1 + nnz1 * n2 <= nnz1 * u2 + nnz2 * n1:
        right = _bag_product(bags2, gram if symmetric else gram.mT.contiguous())  # n2 x u1: C2 G^T
        return _bag_product(bags1, right.mT.contiguous())  # n1 x n2
    left = _bag_product(bags1, gram.contiguous())  # n1 x u2: C1 G
    return _bag_product(bags2, left.mT.contiguous()).mT


def _single_batch(x: Tensor) -> Tensor | None:
    """The ``n x L`` documents of a batched ``*b x n x L`` input whose batch elements are all
    the same (gpytorch expands inputs over a multi-output model's batch: ``IndependentMultitask``
    strategies, batched ``ScaleKernel``), else ``None``. Costs one comparison of the ids."""
    if x.dim() <= 2:
        return None
    flat = x.reshape(-1, *x.shape[-2:])
    if all(st == 0 for st in x.stride()[:-2]) or bool((flat == flat[:1]).all()):
        return flat[0]
    return None


class LatentDistributionKernel(Kernel):
    r"""The latent distribution kernel between bag-of-words documents (thesis eqs. 3.1-3.11).

    Inputs are padded word-index sets: ``... x n x L`` integer tensors whose entries are word
    ids in ``[0, num_words)`` or :data:`lvgp.PAD` (see :class:`lvgp.Vocabulary`). ``x1`` and
    ``x2`` may have different widths ``L1 != L2``. Like gpytorch's kernels there is no output
    scale: wrap in :class:`gpytorch.kernels.ScaleKernel` (GP-LVSM's :math:`\alpha^{-1}`).

    Args:
        num_words: vocabulary size :math:`V` (may be omitted when ``word_vectors`` is given).
        latent_dim: latent dimensionality :math:`q` (likewise).
        embedding: ``"linear"`` (eq. 3.6), ``"rbf"`` (eq. 3.7), ``"poly"`` (eq. 3.8), or a
            gpytorch :class:`~gpytorch.kernels.Kernel` instance acting on ``R^q`` (its
            parameters become part of this kernel).
        level2: ``"linear"`` (eq. 3.9), ``"rbf"`` (eq. 3.11), ``"poly"`` (eq. 3.10), or ``"cosine"``:
            the linear kernel normalized, :math:`\langle\mu_i,\mu_j\rangle / (\|\mu_i\|\,\|\mu_j\|)`
            (not in the thesis; the mean embeddings' analogue of L2-normalized tf vectors: with
            the linear level-2 kernel a document's norm shrinks with its number of distinct
            words, so long documents get small kernel values).
        word_vectors: the latent vectors, a :class:`~lvgp.kernels.WordVectors` module
            (:class:`~lvgp.kernels.PointWordVectors`, :class:`~lvgp.kernels.MAPWordVectors`,
            :class:`~lvgp.kernels.VariationalWordVectors`, optionally tied to pretrained
            embeddings); may be shared with other kernels. ``None``: built from ``rho``,
            ``variational``, ``word_features``, ``latent_init``, ``seed`` and
            ``latent_scale_init`` (:func:`~lvgp.kernels.word_vectors.make_word_vectors`).
        word_weights: ``None`` (the thesis: a document is the uniform empirical measure of its
            words' vectors, eq. 3.1) or ``num_words`` positive weights (e.g. inverse document
            frequencies, :func:`lvgp.models.documents.idf_weights`): a document is then the
            weighted measure :math:`\sum_{s\in D_i} w_s\,k(\cdot, \mathbf x_s) / \sum_{s\in D_i} w_s`,
            still a kernel mean embedding of a probability measure. Words appended by
            :meth:`~lvgp.kernels.WordVectors.extra_words` get the largest weight (an idf-like
            weight of a word in no training document).
        gamma: RBF embedding bandwidth :math:`\gamma > 0` (initial value).
        a: polynomial embedding bias :math:`a` (initial value).
        b: polynomial embedding degree (a fixed positive integer, not trained).
        zeta: RBF level-2 bandwidth :math:`\zeta > 0` (initial value).
        c: polynomial level-2 bias :math:`c` (initial value).
        d: polynomial level-2 degree (a fixed positive integer, not trained).
        rho: precision :math:`\rho` of the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)` on
            every latent vector (registered as the gpytorch prior ``latent_prior`` of the word
            vectors); ``None``: no prior. See the note on MAP training below.
        latent_init: initial latent vectors, a ``num_words x q`` (or ``*batch_shape x
            num_words x q``) array. ``None``: draws from the prior :math:`\mathcal N(0, \rho^{-1} I)`
            (``N(0, I)`` without prior).
        seed: seed of the random initialization (``None`` uses torch's global generator).
        word_features: ``num_words x h`` pretrained embeddings the vectors are tied to
            (:math:`\mathbf x_v = W\mathbf e_v + \boldsymbol\delta_v`).
        variational: a Gaussian posterior over the vectors (:class:`~lvgp.kernels.VariationalWordVectors`).
        latent_scale_init: its initial standard deviation, as a fraction of the prior's.
        gamma_prior, a_prior, zeta_prior, c_prior: optional gpytorch priors.
        gamma_constraint, zeta_constraint: default :class:`~gpytorch.constraints.Positive`.
        a_constraint, c_constraint: default :class:`~gpytorch.constraints.Positive`. The
            thesis allows any real bias; a non-negative bias keeps the kernel positive
            semi-definite for every degree. Pass ``Interval(-inf, inf)``-like constraints to
            lift it.
        batch_shape, active_dims: as for any gpytorch kernel. With a batch shape, every
            batch member has its own latent vectors (``*batch_shape x V x q``).

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

    gamma = constrained_property("gamma", "RBF embedding bandwidth (eq. 3.7), shape ``batch_shape``.")
    a = constrained_property("a", "Polynomial embedding bias (eq. 3.8), shape ``batch_shape``.")
    zeta = constrained_property("zeta", "RBF level-2 bandwidth (eq. 3.11), shape ``batch_shape``.")
    c = constrained_property("c", "Polynomial level-2 bias (eq. 3.10), shape ``batch_shape``.")

    def __init__(
        self,
        num_words: int | None = None,
        latent_dim: int | None = None,
        embedding: str | Kernel = "rbf",
        level2: str = "linear",
        *,
        word_vectors: WordVectors | None = None,
        word_weights: TensorLike | None = None,
        gamma: float = 1.0,
        a: float = 1.0,
        b: int = 2,
        zeta: float = 1.0,
        c: float = 1.0,
        d: int = 2,
        rho: float | None = 1.0,
        latent_init: TensorLike | None = None,
        seed: int | None = None,
        word_features: TensorLike | None = None,
        variational: bool = False,
        latent_scale_init: float = 0.5,
        gamma_prior: Prior | None = None,
        gamma_constraint: Interval | None = None,
        a_prior: Prior | None = None,
        a_constraint: Interval | None = None,
        zeta_prior: Prior | None = None,
        zeta_constraint: Interval | None = None,
        c_prior: Prior | None = None,
        c_constraint: Interval | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(embedding, Kernel):
            self.embedding = embedding
            self.embedding_name = type(embedding).__name__
        elif isinstance(embedding, str) and embedding in EMBEDDINGS:
            self.embedding = None
            self.embedding_name = embedding
        else:
            raise ValueError(f"embedding must be one of {EMBEDDINGS} or a gpytorch Kernel; got {embedding!r}")
        if level2 not in LEVEL2_KERNELS:
            raise ValueError(f"level2 must be one of {LEVEL2_KERNELS}; got {level2!r}")
        self.level2 = level2
        self.b = b
        self.d = d
        hypers = {
            "gamma": (gamma, gamma_constraint, gamma_prior),
            "a": (a, a_constraint, a_prior),
            "zeta": (zeta, zeta_constraint, zeta_prior),
            "c": (c, c_constraint, c_prior),
        }
        for name, (value, constraint, prior) in hypers.items():
            which, choice = _USED_BY[name]
            if (self.embedding_name if which == "embedding" else self.level2) == choice:
                register_constrained(self, name, value, constraint or Positive(), prior, self.batch_shape)
        if word_vectors is None:
            if num_words is None or latent_dim is None:
                raise ValueError("pass num_words and latent_dim, or a word_vectors module")
            word_vectors = make_word_vectors(
                num_words,
                latent_dim,
                rho=rho,
                variational=variational,
                word_features=word_features,
                init=latent_init,
                seed=seed,
                scale_init=latent_scale_init,
                batch_shape=self.batch_shape,
            )
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
        """:func:`_word_weights` with this kernel's word weights (extended over extra words)."""
        table = self.word_weights
        if table is not None and self.num_words > len(table):
            table = torch.cat([table, table.max().expand(self.num_words - len(table))])
        return _word_weights(x, dtype, table)

    # ------------------------------------------------------------------ the word vectors
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
    def b(self) -> int:
        """Polynomial embedding degree (eq. 3.8); fixed, not trained."""
        return self._b

    @b.setter
    def b(self, value: int) -> None:
        self._b = self._check_degree("b", value)

    @property
    def d(self) -> int:
        """Polynomial level-2 degree (eq. 3.10); fixed, not trained."""
        return self._d

    @d.setter
    def d(self, value: int) -> None:
        self._d = self._check_degree("d", value)

    @staticmethod
    def _check_degree(name: str, value: int) -> int:
        if isinstance(value, bool) or int(value) != value or int(value) < 1:
            raise ValueError(f"{name} must be a positive integer degree; got {value!r}")
        return int(value)

    def _scalar(self, name: str, extra_dims: int = 2) -> Tensor:
        """Hyper-parameter viewed with ``extra_dims`` trailing singleton dims for broadcasting."""
        value = getattr(self, name)
        return value.view(*value.shape, *([1] * extra_dims))

    @property
    def _linear_embedding(self) -> bool:
        return self.embedding is None and self.embedding_name == "linear"

    # ------------------------------------------------------------------ computation
    def embedding_gram(self, xa: Tensor, xb: Tensor) -> Tensor:
        """Embedding kernel between latent vectors: ``... x m1 x q``, ``... x m2 x q`` -> ``... x m1 x m2``.

        The kernel's batch shape broadcasts against the trailing batch dimensions, as in gpytorch.
        """
        if self.embedding is not None:
            return self.embedding(xa, xb).to_dense()
        if self.embedding_name == "linear":
            return xa @ xb.mT
        if self.embedding_name == "poly":
            return (xa @ xb.mT + self._scalar("a")).pow(self.b)
        return rbf_gram(xa, xb, self._scalar("gamma"))

    def _mean_vectors(self, x: Tensor, latent: Tensor) -> Tensor:
        """Explicit kernel mean embeddings ``C X`` for the linear embedding kernel: ``*B x n x q``."""
        ids, weights = self._weights(x, latent.dtype)
        vectors = _gather_rows(latent, ids.flatten(-2)).unflatten(-2, ids.shape[-2:])
        return (weights.unsqueeze(-1) * vectors).sum(-2)

    def paired_inner(self, x1: Tensor, x2: Tensor, latent: Tensor | None = None) -> Tensor:
        r"""Row-wise :math:`\langle m(\mathbf X^{(1)}_i), m(\mathbf X^{(2)}_i)\rangle` (eq. 3.2):
        ``*b1 x n x L1`` and ``*b2 x n x L2`` -> ``*B x n``. Costs :math:`O(n L_1 L_2 q)`.
        ``latent``: the vectors to use (default :attr:`latent`)."""
        latent = self.latent if latent is None else latent
        if self._linear_embedding:
            return (self._mean_vectors(x1, latent) * self._mean_vectors(x2, latent)).sum(-1)
        ids1, w1 = self._weights(x1, latent.dtype)
        ids2, w2 = self._weights(x2, latent.dtype)
        n = x1.shape[-2]
        step = max(1, _BLOCK_ENTRIES // max(1, x1.shape[-1] * x2.shape[-1]))
        out = []
        for start in range(0, n, step):
            sl = slice(start, start + step)
            v1 = _gather_rows(latent, ids1[..., sl, :].flatten(-2)).unflatten(-2, ids1[..., sl, :].shape[-2:])
            v2 = _gather_rows(latent, ids2[..., sl, :].flatten(-2)).unflatten(-2, ids2[..., sl, :].shape[-2:])
            # documents to the front, so the kernel's batch shape meets the data's batch dims
            gram = self.embedding_gram(v1.movedim(-3, 0), v2.movedim(-3, 0)).movedim(0, -3)
            out.append(((w1[..., sl, :].unsqueeze(-1) * gram).sum(-2) * w2[..., sl, :]).sum(-1))
        if not out:
            batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], latent.shape[:-2])
            return latent.new_zeros(*batch, 0)
        return torch.cat(out, dim=-1)

    def self_inner(self, x: Tensor, latent: Tensor | None = None) -> Tensor:
        r""":math:`\|m(\mathbf X_i)\|^2` for every document (``*b x n x L`` -> ``*B x n``), through
        the Gram of the distinct words, :math:`\mathrm{diag}(C G C^\top)`: :math:`O(\mathrm{nnz}\,u)`
        for :math:`u` distinct words instead of :meth:`paired_inner`'s :math:`O(n L^2 q)` (long padded
        documents); used for unbatched inputs."""
        latent = self.latent if latent is None else latent
        if x.dim() != 2 or latent.dim() != 2 or self._linear_embedding or x.shape[0] == 0:
            return self.paired_inner(x, x, latent)
        ids, w = self._weights(x, latent.dtype)
        words, local = torch.unique(ids, return_inverse=True)
        v = latent.index_select(-2, words)
        bags = _bags(local, w)
        left = _bag_product(bags, self.embedding_gram(v, v))  # n x u: C G
        rows = torch.repeat_interleave(
            torch.arange(bags.n), torch.diff(bags.offsets, append=bags.offsets.new_tensor([len(bags.words)]))
        )
        return torch.zeros(bags.n, dtype=left.dtype).index_add_(0, rows, left[rows, bags.words] * bags.weights)

    def mean_embedding_gram(
        self, x1: Tensor, x2: Tensor, symmetric: bool = False, latent: Tensor | None = None
    ) -> Tensor:
        r""":math:`K_{*\text{-LIN}}` (eq. 3.9) between all documents: ``*b1 x n1 x L1``,
        ``*b2 x n2 x L2`` -> ``*B x n1 x n2``. ``symmetric`` asserts ``x1 == x2``."""
        latent = self.latent if latent is None else latent
        if x1.shape[-2] == 0 or x2.shape[-2] == 0:
            batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], latent.shape[:-2], self.batch_shape)
            return latent.new_zeros(*batch, x1.shape[-2], x2.shape[-2])
        if self._linear_embedding:
            m1 = self._mean_vectors(x1, latent)
            return m1 @ (m1 if symmetric else self._mean_vectors(x2, latent)).mT
        dtype = latent.dtype
        ids1, w1 = self._weights(x1, dtype)
        words1, local1 = torch.unique(ids1, return_inverse=True)
        if symmetric:
            ids2, w2, words2, local2 = ids1, w1, words1, local1
        else:
            ids2, w2 = self._weights(x2, dtype)
            words2, local2 = torch.unique(ids2, return_inverse=True)
        v1 = latent.index_select(-2, words1)
        gram = self.embedding_gram(v1, v1 if symmetric else latent.index_select(-2, words2))
        batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], gram.shape[:-2])
        gram_symmetric = symmetric and self.embedding is None

        def flat(t: Tensor) -> Tensor:
            return t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:])

        parts = []
        for i1, ww1, g, i2, ww2 in zip(flat(local1), flat(w1), flat(gram), flat(local2), flat(w2)):
            bags1 = _bags(i1, ww1)
            bags2 = bags1 if symmetric else _bags(i2, ww2)
            parts.append(_sandwich(bags1, g, bags2, gram_symmetric))
        if not parts:
            return gram.new_zeros(*batch, x1.shape[-2], x2.shape[-2])
        return torch.stack(parts).view(*batch, x1.shape[-2], x2.shape[-2])

    def squared_mmd(self, x1: Tensor, x2: Tensor, allow_empty: bool = False) -> Tensor:
        r"""Squared RKHS distance between mean embeddings, eq. 3.3: ``*B x n1 x n2``. With
        ``allow_empty``, a padding-only row is the zero measure (distance: the other's norm)."""
        x1 = self._check(x1, "x1", allow_empty)
        x2 = self._check(x2, "x2", allow_empty)
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        latent = self.latent
        lin = self.mean_embedding_gram(x1, x2, symmetric=same, latent=latent)
        return self._distance(lin, x1, x2, same, latent)

    def _squared_norms(self, lin: Tensor, x1: Tensor, x2: Tensor, same: bool, latent: Tensor) -> tuple[Tensor, Tensor]:
        r""":math:`\langle\mu,\mu\rangle` of the documents of ``x1`` and of ``x2``, given their Gram
        ``lin`` (its diagonal when ``x1`` and ``x2`` are the same documents)."""
        if same:
            s = lin.diagonal(dim1=-2, dim2=-1)
            return s, s
        return self.self_inner(x1, latent), self.self_inner(x2, latent)

    def _distance(self, lin: Tensor, x1: Tensor, x2: Tensor, same: bool, latent: Tensor) -> Tensor:
        s1, s2 = self._squared_norms(lin, x1, x2, same, latent)
        return (s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2 * lin).clamp_min(0)

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
        single1 = _single_batch(x1)
        single2 = single1 if x2 is x1 else _single_batch(x2)
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
        if diag:
            if x1.shape[-2] != x2.shape[-2]:
                raise ValueError(
                    f"diag=True needs as many documents in x1 as in x2; got {x1.shape[-2]} and {x2.shape[-2]}"
                )
            if same and self.level2 in ("rbf", "cosine"):
                batch = torch.broadcast_shapes(x1.shape[:-2], self.batch_shape)
                return torch.ones(*batch, x1.shape[-2], dtype=latent.dtype, device=x1.device)
            lin = self.self_inner(x1, latent) if same else self.paired_inner(x1, x2, latent)
            if self.level2 == "linear":
                return lin
            if self.level2 == "poly":
                return (lin + self._scalar("c", 1)).pow(self.d)
            if self.level2 == "cosine":
                return lin * _inverse_norm(self.self_inner(x1, latent)) * _inverse_norm(self.self_inner(x2, latent))
            dist = (self.self_inner(x1, latent) + self.self_inner(x2, latent) - 2 * lin).clamp_min(0)
            return torch.exp(-0.5 * self._scalar("zeta", 1) * dist)
        lin = self.mean_embedding_gram(x1, x2, symmetric=same, latent=latent)
        if self.level2 == "linear":
            return lin
        if self.level2 == "poly":
            return (lin + self._scalar("c")).pow(self.d)
        if self.level2 == "cosine":
            s1, s2 = self._squared_norms(lin, x1, x2, same, latent)
            return lin * _inverse_norm(s1).unsqueeze(-1) * _inverse_norm(s2).unsqueeze(-2)
        return torch.exp(-0.5 * self._scalar("zeta") * self._distance(lin, x1, x2, same, latent))

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

    def expand_batch(self, *sizes: Any) -> LatentDistributionKernel:
        """As gpytorch's ``Kernel.expand_batch``, word vectors included."""
        new = super().expand_batch(*sizes)
        if new is not self and len(self.word_vectors.batch_shape):
            new.word_vectors = self.word_vectors.expand_batch(new.batch_shape)
        return new

    def __getitem__(self, index: Any) -> LatentDistributionKernel:
        """As gpytorch's ``Kernel.__getitem__`` (index the batch), word vectors included."""
        new = super().__getitem__(index)
        if new is not self and len(self.word_vectors.batch_shape):
            new.word_vectors = self.word_vectors[index]
        return new

    def __getattr__(self, name: str) -> Any:
        if name in _USED_BY:
            which, choice = _USED_BY[name]
            raise AttributeError(f"{name} is only defined for {which}={choice!r}")
        return super().__getattr__(name)

    def extra_repr(self) -> str:
        return f"embedding={self.embedding_name!r}, level2={self.level2!r}"
