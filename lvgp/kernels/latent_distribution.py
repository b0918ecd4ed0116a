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
:math:`L \times L` Gram, :math:`O(n L^2 q)`.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel
from gpytorch.mlls import AddedLossTerm
from gpytorch.priors import NormalPrior, Prior
from torch import Tensor, nn

from ..bow.padded import PAD, check_padded, pad_to_common_width
from ._hyper import constrained_property, get_attribute, register_constrained, set_attribute

EMBEDDINGS = ("linear", "rbf", "poly")
LEVEL2_KERNELS = ("linear", "rbf", "poly")

# Which hyper-parameter each kernel choice uses: name -> (embedding or level-2 choice).
_USED_BY = {
    "gamma": ("embedding", "rbf"),
    "a": ("embedding", "poly"),
    "zeta": ("level2", "rbf"),
    "c": ("level2", "poly"),
}
# Entries of per-document L1 x L2 Gram blocks evaluated at once (bounds memory of the diagonal path).
_BLOCK_ENTRIES = 2**22


def _gather_rows(table: Tensor, idx: Tensor) -> Tensor:
    """``table[..., idx, :]`` with broadcasting batch dims: table ``*kb x V x q``, idx ``*b x m`` -> ``*B x m x q``."""
    if table.dim() == 2:
        return table[idx]
    batch = torch.broadcast_shapes(table.shape[:-2], idx.shape[:-1])
    table = table.expand(*batch, *table.shape[-2:])
    idx = idx.expand(*batch, idx.shape[-1]).unsqueeze(-1).expand(*batch, idx.shape[-1], table.shape[-1])
    return table.gather(-2, idx)


def _word_weights(x: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """Ids with padding replaced by 0, and weights ``1/|D_i|`` per word (0 on padding)."""
    mask = x != PAD
    weights = mask.to(dtype) / mask.sum(-1, keepdim=True).to(dtype)
    return torch.where(mask, x, torch.zeros_like(x)), weights


def _sandwich(i1: Tensor, w1: Tensor, gram: Tensor, i2: Tensor, w2: Tensor, symmetric: bool) -> Tensor:
    r""":math:`C_1 G C_2^\top` for one batch element: ``i*, w*`` are ``n* x L*`` local word
    indices and weights, ``gram`` is ``u1 x u2``. Two ``embedding_bag`` products, in the
    cheaper order."""
    nnz1, nnz2 = i1.numel(), i2.numel()
    n1, n2 = i1.shape[0], i2.shape[0]
    u1, u2 = gram.shape
    if nnz2 * u1 + nnz1 * n2 <= nnz1 * u2 + nnz2 * n1:
        gram_t = gram if symmetric else gram.mT.contiguous()
        right = F.embedding_bag(i2, gram_t, per_sample_weights=w2, mode="sum")  # n2 x u1: C2 G^T
        return F.embedding_bag(i1, right.mT.contiguous(), per_sample_weights=w1, mode="sum")  # n1 x n2
    left = F.embedding_bag(i1, gram.contiguous(), per_sample_weights=w1, mode="sum")  # n1 x u2: C1 G
    return F.embedding_bag(i2, left.mT.contiguous(), per_sample_weights=w2, mode="sum").mT


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


class NegativeLatentKL(AddedLossTerm):
    r"""The :math:`-\mathrm{KL}(q(\mathbf X)\|p(\mathbf X))` of a variational LDK, as a gpytorch
    added loss term. gpytorch's ``ExactMarginalLogLikelihood`` *adds* such terms to the log
    likelihood before dividing by ``n``, so with it (and :class:`lvgp.LogPosterior`) the
    objective is the Monte Carlo ELBO divided by ``n``."""

    def __init__(self, kernel: LatentDistributionKernel):
        super().__init__()
        self.kernel = kernel

    def loss(self, *params) -> Tensor:
        return -self.kernel.latent_kl()


class LatentDistributionKernel(Kernel):
    r"""The latent distribution kernel between bag-of-words documents (thesis eqs. 3.1-3.11).

    Inputs are padded word-index sets: ``... x n x L`` ``torch.long`` tensors whose entries
    are word ids in ``[0, num_words)`` or :data:`lvgp.PAD` (see :class:`lvgp.Vocabulary`).
    ``x1`` and ``x2`` may have different widths ``L1 != L2``. Like gpytorch's kernels
    there is no output scale: wrap in :class:`gpytorch.kernels.ScaleKernel` (GP-LVSM's
    :math:`\alpha^{-1}`).

    Args:
        num_words: vocabulary size :math:`V`.
        latent_dim: latent dimensionality :math:`q`.
        embedding: ``"linear"`` (eq. 3.6), ``"rbf"`` (eq. 3.7), ``"poly"`` (eq. 3.8), or a
            gpytorch :class:`~gpytorch.kernels.Kernel` instance acting on ``R^q`` (its
            parameters become part of this kernel).
        level2: ``"linear"`` (eq. 3.9), ``"rbf"`` (eq. 3.11) or ``"poly"`` (eq. 3.10).
        gamma: RBF embedding bandwidth :math:`\gamma > 0` (initial value).
        a: polynomial embedding bias :math:`a` (initial value).
        b: polynomial embedding degree (a fixed positive integer, not trained).
        zeta: RBF level-2 bandwidth :math:`\zeta > 0` (initial value).
        c: polynomial level-2 bias :math:`c` (initial value).
        d: polynomial level-2 degree (a fixed positive integer, not trained).
        rho: precision :math:`\rho` of the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)` on
            every latent vector, registered as the gpytorch prior ``latent_prior``; ``None``
            registers no prior. See the note on MAP training below.
        latent_init: initial latent vectors, a ``num_words x q`` (or ``*batch_shape x
            num_words x q``) array, e.g. projected pretrained word embeddings. ``None``:
            draws from the prior :math:`\mathcal N(0, \rho^{-1} I)` (``N(0, I)`` without prior).
        seed: seed of the random initialization (``None`` uses torch's global generator).
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
        num_words: int,
        latent_dim: int,
        embedding: str | Kernel = "rbf",
        level2: str = "linear",
        *,
        gamma: float = 1.0,
        a: float = 1.0,
        b: int = 2,
        zeta: float = 1.0,
        c: float = 1.0,
        d: int = 2,
        rho: float | None = 1.0,
        latent_init=None,
        seed: int | None = None,
        word_features=None,
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
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(num_words, int) or num_words < 1:
            raise ValueError(f"num_words must be a positive integer; got {num_words!r}")
        if not isinstance(latent_dim, int) or latent_dim < 1:
            raise ValueError(f"latent_dim must be a positive integer; got {latent_dim!r}")
        if isinstance(embedding, Kernel):
            self.embedding = embedding
            self.embedding_name = type(embedding).__name__
        elif embedding in EMBEDDINGS:
            self.embedding = None
            self.embedding_name = embedding
        else:
            raise ValueError(f"embedding must be one of {EMBEDDINGS} or a gpytorch Kernel; got {embedding!r}")
        if level2 not in LEVEL2_KERNELS:
            raise ValueError(f"level2 must be one of {LEVEL2_KERNELS}; got {level2!r}")
        self.num_words = num_words
        self.latent_dim = latent_dim
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

        latent_shape = torch.Size([*self.batch_shape, num_words, latent_dim])
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        self.register_parameter("raw_latent", nn.Parameter(torch.zeros(latent_shape)))
        self._init_word_features(word_features, generator)
        self.variational = bool(variational)
        if rho is not None:
            rho = self._check_rho(rho)
        if self.variational:
            if rho is None:
                raise ValueError("variational latent vectors need a prior: pass a precision rho")
            # the prior enters through the KL of q(X) (an added loss term), not as a gpytorch prior
            self.latent_prior = NormalPrior(0.0, rho**-0.5)
            if not latent_scale_init > 0:
                raise ValueError(f"latent_scale_init must be positive; got {latent_scale_init!r}")
            register_constrained(self, "latent_scale", latent_scale_init * rho**-0.5, Positive(), None, latent_shape)
            self.register_buffer("latent_noise", torch.zeros(latent_shape))
            #: generator of the training-mode samples (``None``: torch's global generator)
            self.sample_generator = None
            self.register_added_loss_term("latent_kl")
            self.update_added_loss_term("latent_kl", NegativeLatentKL(self))
        elif rho is not None:
            self.register_prior(
                "latent_prior",
                NormalPrior(0.0, rho**-0.5),
                partial(get_attribute, "latent_residual"),
                partial(set_attribute, "latent_residual"),
            )
        if latent_init is None:
            scale = 1.0 if rho is None or self.word_features is not None else rho**-0.5
            if self.word_features is not None:
                scale = 0.0  # the projected features carry the initial layout
            self.latent_residual = torch.randn(latent_shape, generator=generator, dtype=self.raw_latent.dtype) * scale
        else:
            self.latent = latent_init

    def _init_word_features(self, word_features, generator) -> None:
        if word_features is None:
            self.word_features = None
            return
        feats = torch.as_tensor(word_features, dtype=self.raw_latent.dtype)
        if feats.dim() != 2 or feats.shape[0] != self.num_words:
            raise ValueError(
                f"word_features must have shape (num_words, h) = ({self.num_words}, h); got {tuple(feats.shape)}"
            )
        if not torch.isfinite(feats).all():
            raise ValueError("word_features holds non-finite values")
        self.register_buffer("word_features", feats.expand(*self.batch_shape, *feats.shape).clone())
        mean_sq = feats.pow(2).sum(-1).mean().clamp_min(1e-12)
        projection = torch.randn(
            *self.batch_shape, feats.shape[1], self.latent_dim, generator=generator, dtype=feats.dtype
        )
        self.register_parameter("projection", nn.Parameter(projection / mean_sq.sqrt()))

    # ------------------------------------------------------------------ parameters
    @staticmethod
    def _check_rho(rho) -> float:
        rho = float(rho)
        if not rho > 0 or rho == float("inf"):
            raise ValueError(f"rho must be a positive finite precision; got {rho!r}")
        return rho

    def _projected(self) -> Tensor | int:
        return self.word_features @ self.projection if self.word_features is not None else 0

    @property
    def latent_residual(self) -> Tensor:
        r"""The free part of the latent means (all of them without ``word_features``);
        the prior :math:`\mathcal N(0, \rho^{-1} I)` is placed on it."""
        return self.raw_latent

    @latent_residual.setter
    def latent_residual(self, value) -> None:
        value = torch.as_tensor(value, dtype=self.raw_latent.dtype, device=self.raw_latent.device)
        shape = self.raw_latent.shape
        if value.shape[-2:] != shape[-2:]:
            raise ValueError(
                f"latent must have shape (num_words, latent_dim) = {tuple(shape[-2:])}; got {tuple(value.shape)}"
            )
        if not torch.isfinite(value).all():
            raise ValueError("latent holds non-finite values")
        with torch.no_grad():
            self.raw_latent.copy_(value.expand(shape))

    @property
    def latent_mean(self) -> Tensor:
        """Latent word vectors at their mean: ``word_features @ projection + latent_residual``."""
        return self._projected() + self.raw_latent

    @property
    def latent(self) -> Tensor:
        """The latent word vectors the kernel uses, ``*batch_shape x num_words x latent_dim``:
        the means, or with ``variational=True`` the current sample
        ``latent_mean + latent_scale * latent_noise``. Setting it sets the means."""
        if self.variational:
            return self.latent_mean + self.latent_scale * self.latent_noise
        return self.latent_mean

    @latent.setter
    def latent(self, value) -> None:
        value = torch.as_tensor(value, dtype=self.raw_latent.dtype, device=self.raw_latent.device)
        with torch.no_grad():
            self.latent_residual = value - self._projected()

    latent_scale = constrained_property(
        "latent_scale", "Standard deviations of q(X) (``variational=True``), ``*batch_shape x num_words x latent_dim``."
    )

    # ------------------------------------------------------------------ variational latent vectors
    def _check_variational(self) -> None:
        if not self.variational:
            raise AttributeError("this kernel has point-estimated latent vectors (variational=False)")

    def resample_latent(self, generator: torch.Generator | None = None) -> None:
        """Draw a new sample of the latent vectors from q(X) (used until the next call)."""
        self._check_variational()
        with torch.no_grad():
            self.latent_noise.copy_(
                torch.randn(self.latent_noise.shape, generator=generator, dtype=self.latent_noise.dtype)
            )

    def use_latent_mean(self) -> None:
        """Evaluate the kernel at the means of q(X) (the default in eval mode)."""
        self._check_variational()
        self.latent_noise.zero_()

    def latent_kl(self) -> Tensor:
        r""":math:`\mathrm{KL}(q(\mathbf X)\,\|\,p(\mathbf X))` with :math:`q(x_{vk}) = \mathcal N(\mu_{vk},
        s_{vk}^2)` on the residuals and :math:`p = \mathcal N(0, \rho^{-1})`, summed:
        :math:`\frac12\sum[\rho(\mu^2 + s^2) - 1 - \log(\rho s^2)]`."""
        self._check_variational()
        rho = self.latent_prior.scale.pow(-2)
        var = self.latent_scale.pow(2)
        return 0.5 * (rho * (self.raw_latent.pow(2) + var) - 1 - torch.log(rho * var)).sum()

    def train(self, mode: bool = True):
        """As ``nn.Module.train``; a variational kernel returns to its means in eval mode."""
        out = super().train(mode)
        if self.variational and not mode:
            self.latent_noise.zero_()
        return out

    @property
    def rho(self) -> float | None:
        """Precision of the Gaussian prior on the latent vectors (``None``: no prior)."""
        if not hasattr(self, "latent_prior"):
            return None
        return float(self.latent_prior.scale.pow(-2))

    @rho.setter
    def rho(self, value: float) -> None:
        if not hasattr(self, "latent_prior"):
            raise AttributeError("this kernel was built with rho=None and has no latent prior")
        self.latent_prior.scale.fill_(self._check_rho(value) ** -0.5)

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
    def _check_degree(name: str, value) -> int:
        if isinstance(value, bool) or int(value) != value or int(value) < 1:
            raise ValueError(f"{name} must be a positive integer degree; got {value!r}")
        return int(value)

    def _scalar(self, name: str, extra_dims: int = 2) -> Tensor:
        """Hyper-parameter viewed with ``extra_dims`` trailing singleton dims for broadcasting."""
        value = getattr(self, name)
        return value.view(*value.shape, *([1] * extra_dims))

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
        sq = xa.pow(2).sum(-1).unsqueeze(-1) + xb.pow(2).sum(-1).unsqueeze(-2) - 2 * (xa @ xb.mT)
        return torch.exp(-0.5 * self._scalar("gamma") * sq.clamp_min(0))

    def _mean_vectors(self, x: Tensor) -> Tensor:
        """Explicit kernel mean embeddings ``C X`` for the linear embedding kernel: ``*B x n x q``."""
        ids, weights = _word_weights(x, self.raw_latent.dtype)
        vectors = _gather_rows(self.latent, ids.flatten(-2)).unflatten(-2, ids.shape[-2:])
        return (weights.unsqueeze(-1) * vectors).sum(-2)

    def paired_inner(self, x1: Tensor, x2: Tensor) -> Tensor:
        r"""Row-wise :math:`\langle m(\mathbf X^{(1)}_i), m(\mathbf X^{(2)}_i)\rangle` (eq. 3.2):
        ``*b1 x n x L1`` and ``*b2 x n x L2`` -> ``*B x n``. Costs :math:`O(n L_1 L_2 q)`."""
        if self.embedding is None and self.embedding_name == "linear":
            return (self._mean_vectors(x1) * self._mean_vectors(x2)).sum(-1)
        dtype = self.raw_latent.dtype
        ids1, w1 = _word_weights(x1, dtype)
        ids2, w2 = _word_weights(x2, dtype)
        n = x1.shape[-2]
        step = max(1, _BLOCK_ENTRIES // max(1, x1.shape[-1] * x2.shape[-1]))
        out = []
        for start in range(0, n, step):
            sl = slice(start, start + step)
            v1 = _gather_rows(self.latent, ids1[..., sl, :].flatten(-2)).unflatten(-2, ids1[..., sl, :].shape[-2:])
            v2 = _gather_rows(self.latent, ids2[..., sl, :].flatten(-2)).unflatten(-2, ids2[..., sl, :].shape[-2:])
            # documents to the front, so the kernel's batch shape meets the data's batch dims
            gram = self.embedding_gram(v1.movedim(-3, 0), v2.movedim(-3, 0)).movedim(0, -3)
            out.append(((w1[..., sl, :].unsqueeze(-1) * gram).sum(-2) * w2[..., sl, :]).sum(-1))
        return torch.cat(out, dim=-1)

    def self_inner(self, x: Tensor) -> Tensor:
        r""":math:`\|m(\mathbf X_i)\|^2` for every document (``*b x n x L`` -> ``*B x n``), through
        the Gram of the distinct words, :math:`\mathrm{diag}(C G C^\top)`: :math:`O(\mathrm{nnz}\,u)`
        for :math:`u` distinct words instead of :meth:`paired_inner`'s :math:`O(n L^2 q)` (long padded
        documents); used for unbatched inputs."""
        if x.dim() != 2 or self.raw_latent.dim() != 2 or (self.embedding is None and self.embedding_name == "linear"):
            return self.paired_inner(x, x)
        ids, w = _word_weights(x, self.raw_latent.dtype)
        words, local = torch.unique(ids, return_inverse=True)
        v = self.latent.index_select(-2, words)
        left = F.embedding_bag(local, self.embedding_gram(v, v), per_sample_weights=w, mode="sum")  # n x u: C G
        return (left.gather(-1, local) * w).sum(-1)

    def mean_embedding_gram(self, x1: Tensor, x2: Tensor, symmetric: bool = False) -> Tensor:
        r""":math:`K_{*\text{-LIN}}` (eq. 3.9) between all documents: ``*b1 x n1 x L1``,
        ``*b2 x n2 x L2`` -> ``*B x n1 x n2``. ``symmetric`` asserts ``x1 == x2``."""
        if self.embedding is None and self.embedding_name == "linear":
            m1 = self._mean_vectors(x1)
            return m1 @ (m1 if symmetric else self._mean_vectors(x2)).mT
        dtype = self.raw_latent.dtype
        ids1, w1 = _word_weights(x1, dtype)
        words1, local1 = torch.unique(ids1, return_inverse=True)
        if symmetric:
            ids2, w2, words2, local2 = ids1, w1, words1, local1
        else:
            ids2, w2 = _word_weights(x2, dtype)
            words2, local2 = torch.unique(ids2, return_inverse=True)
        v1 = self.latent.index_select(-2, words1)
        gram = self.embedding_gram(v1, v1 if symmetric else self.latent.index_select(-2, words2))
        batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], gram.shape[:-2])
        gram_symmetric = symmetric and self.embedding is None
        parts = []
        flat = (
            local1.expand(*batch, *local1.shape[-2:]).reshape(-1, *local1.shape[-2:]),
            w1.expand(*batch, *w1.shape[-2:]).reshape(-1, *w1.shape[-2:]),
            gram.expand(*batch, *gram.shape[-2:]).reshape(-1, *gram.shape[-2:]),
            local2.expand(*batch, *local2.shape[-2:]).reshape(-1, *local2.shape[-2:]),
            w2.expand(*batch, *w2.shape[-2:]).reshape(-1, *w2.shape[-2:]),
        )
        for i1, ww1, g, i2, ww2 in zip(*flat):
            parts.append(_sandwich(i1, ww1, g, i2, ww2, gram_symmetric))
        return torch.stack(parts).view(*batch, x1.shape[-2], x2.shape[-2])

    def squared_mmd(self, x1: Tensor, x2: Tensor) -> Tensor:
        r"""Squared RKHS distance between mean embeddings, eq. 3.3: ``*B x n1 x n2``."""
        check_padded(x1, "x1", self.num_words)
        check_padded(x2, "x2", self.num_words)
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        lin = self.mean_embedding_gram(x1, x2, symmetric=same)
        return self._distance(lin, x1, x2, same)

    def _distance(self, lin: Tensor, x1: Tensor, x2: Tensor, same: bool) -> Tensor:
        if same:
            s1 = s2 = lin.diagonal(dim1=-2, dim2=-1)
        else:
            s1, s2 = self.self_inner(x1), self.self_inner(x2)
        return (s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2 * lin).clamp_min(0)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError("LatentDistributionKernel does not support last_dim_is_batch")
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
        if self.variational and self.training:
            self.resample_latent(self.sample_generator)  # like dropout: each training evaluation is one MC sample
        check_padded(x1, "x1", self.num_words)
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        if not same:
            check_padded(x2, "x2", self.num_words)
        if diag:
            if x1.shape[-2] != x2.shape[-2]:
                raise ValueError(
                    f"diag=True needs as many documents in x1 as in x2; got {x1.shape[-2]} and {x2.shape[-2]}"
                )
            if same and self.level2 == "rbf":
                batch = torch.broadcast_shapes(x1.shape[:-2], self.batch_shape)
                return torch.ones(*batch, x1.shape[-2], dtype=self.raw_latent.dtype, device=x1.device)
            lin = self.self_inner(x1) if same else self.paired_inner(x1, x2)
            if self.level2 == "linear":
                return lin
            if self.level2 == "poly":
                return (lin + self._scalar("c", 1)).pow(self.d)
            dist = (self.self_inner(x1) + self.self_inner(x2) - 2 * lin).clamp_min(0)
            return torch.exp(-0.5 * self._scalar("zeta", 1) * dist)
        lin = self.mean_embedding_gram(x1, x2, symmetric=same)
        if self.level2 == "linear":
            return lin
        if self.level2 == "poly":
            return (lin + self._scalar("c")).pow(self.d)
        return torch.exp(-0.5 * self._scalar("zeta") * self._distance(lin, x1, x2, same))

    def __call__(self, x1: Tensor, x2: Tensor | None = None, diag: bool = False, **params):
        """As :meth:`gpytorch.kernels.Kernel.__call__`, validating inputs eagerly and padding
        ``x1``/``x2`` of different widths to a common width (padding changes no value)."""
        # with active_dims, emptiness is only known after column selection (checked in forward)
        allow_empty = self.active_dims is not None
        check_padded(x1, "x1", self.num_words, allow_empty=allow_empty)
        if x2 is not None:
            check_padded(x2, "x2", self.num_words, allow_empty=allow_empty)
            if x1.shape[-1] != x2.shape[-1]:
                x1, x2 = pad_to_common_width(x1, x2)
        return super().__call__(x1, x2, diag=diag, **params)

    def __getattr__(self, name: str):
        if name in _USED_BY:
            which, choice = _USED_BY[name]
            raise AttributeError(f"{name} is only defined for {which}={choice!r}")
        return super().__getattr__(name)

    def extra_repr(self) -> str:
        return (
            f"num_words={self.num_words}, latent_dim={self.latent_dim}, embedding={self.embedding_name!r}, "
            f"level2={self.level2!r}, rho={self.rho}"
        )
