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

**A word kernel that contains the identity** (not in the thesis; ``identity_weight``): the word
kernel :math:`k_w(v, w) = \lambda\,\delta_{vw} + k(\mathbf x_v, \mathbf x_w)` adds the bag of words
to the latent part. The inner product of two documents' embeddings gains
:math:`\lambda\langle\phi_i,\phi_j\rangle`, with :math:`\phi_i` the document's (word-weighted)
measure of its words, and every level-2 kernel acts on the sum (the cosine normalizes the whole
kernel). With the latent part at zero the kernel *is* the tf (-idf) kernel of
:class:`~lvgp.kernels.BagOfWordsKernel`; the latent vectors can only add word similarity to it.
The identity part is a sparse product of the documents' weight matrices
(:func:`~lvgp.kernels.mean_embedding.bag_of_words_inner`), never a ``V x V`` matrix. With
``identity_form="separate"`` the level-2 kernel acts on the two parts one at a time and the results
add up, :math:`K = L_2(\langle\mu_i,\mu_j\rangle) + \lambda L_2(\langle\phi_i,\phi_j\rangle)` (the
same as ``"joint"`` for the linear level 2): under the cosine level 2 both parts then have unit
self-similarity, so :math:`\lambda` weighs the bag of words against the latent part alike for short
and long documents.

The parts live in their own modules: the word vectors (:mod:`lvgp.kernels.word_vectors`: point,
MAP, variational, optionally tied to pretrained embeddings; :func:`~lvgp.kernels.make_word_vectors`
makes them), the embedding kernels (:mod:`lvgp.kernels.embedding`), the level-2 kernels
(:mod:`lvgp.kernels.level2`) and the mean-embedding arithmetic (:mod:`lvgp.kernels.mean_embedding`:
sparse products, never the :math:`O(n_1 n_2 L_1 L_2 q)` double sum). This module puts them together
as a gpytorch kernel.
"""

from __future__ import annotations

from typing import Any

import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor

from .._typing import TensorLike
from ..base.shapes import broadcast_shapes
from . import mean_embedding as me
from ._hyper import constrained_property, register_constrained
from .document import DocumentKernel, InnerProducts
from .embedding import EMBEDDINGS, EmbeddingKernel, rbf_gram
from .level2 import LEVEL2_KERNELS, Level2Kernel
from .word_vectors import MAPWordVectors, NegativeLatentKL, VariationalWordVectors, WordVectors, make_word_vectors

__all__ = [
    "LatentDistributionKernel",
    "NegativeLatentKL",
    "EMBEDDINGS",
    "LEVEL2_KERNELS",
    "IDENTITY_FORMS",
    "rbf_gram",
    "collapsed_bandwidth",
    "rescale_latent_space",
]

#: how the identity part joins the latent part: inside the word kernel, or as a kernel of its own
IDENTITY_FORMS = ("joint", "separate")

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


class LatentDistributionKernel(DocumentKernel):
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
            frequencies, :func:`lvgp.bow.weighting.idf_weights`): a document is then the
            weighted measure :math:`\sum_{s\in D_i} w_s\,k(\cdot, \mathbf x_s) / \sum_{s\in D_i} w_s`,
            still a kernel mean embedding of a probability measure. Words appended by
            :meth:`~lvgp.kernels.WordVectors.extra_words` get the largest weight (an idf-like
            weight of a word in no training document). Stored scaled by a power of two (exact),
            so that the largest lies in ``[0.5, 1)``.
        identity_weight: ``None`` (the thesis's word kernel) or the initial :math:`\lambda > 0` of the
            word kernel :math:`\lambda\delta_{vw} + k(\mathbf x_v, \mathbf x_w)` (module docstring), a
            gpytorch parameter of shape ``batch_shape``.
        identity_weight_prior: an optional gpytorch prior on :math:`\lambda`.
        identity_form: ``"joint"`` (default: :math:`\lambda\delta_{vw}` inside the word kernel, the level-2
            kernel acting on :math:`\langle\mu_i,\mu_j\rangle + \lambda\langle\phi_i,\phi_j\rangle`) or
            ``"separate"`` (the level-2 kernel of each part, added: :math:`L_2(\text{latent}) + \lambda
            L_2(\text{bag of words})`, i.e. this kernel without the identity part plus :math:`\lambda` times
            :class:`~lvgp.kernels.BagOfWordsKernel` with the same level 2 and word weights).
        identity_weight_constraint: default :class:`~gpytorch.constraints.Positive`.
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

    identity_weight = constrained_property(
        "identity_weight", r"The weight :math:`\lambda` of the identity word kernel, shape ``batch_shape``."
    )

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
        identity_weight: float | None = None,
        identity_weight_prior: Prior | None = None,
        identity_weight_constraint: Interval | None = None,
        identity_form: str = "joint",
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
        super().__init__(
            level2,
            level2_options={k: v for k, v in options.items() if k in level2_options},
            **{k: v for k, v in options.items() if k in _KERNEL_OPTIONS},
        )
        if isinstance(embedding, Kernel):
            self.embedding = embedding
        elif isinstance(embedding, str) and embedding in EMBEDDINGS:
            cls = EMBEDDINGS[embedding]
            self.embedding = cls(**{k: v for k, v in options.items() if k in cls.options}, batch_shape=self.batch_shape)
        else:
            raise ValueError(f"embedding must be one of {tuple(EMBEDDINGS)} or a gpytorch Kernel; got {embedding!r}")
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
                broadcast_shapes(word_vectors.batch_shape, self.batch_shape)
            except RuntimeError:
                raise ValueError(
                    f"word_vectors batch shape {tuple(word_vectors.batch_shape)} does not broadcast with the "
                    f"kernel's {tuple(self.batch_shape)}"
                ) from None
        if identity_form not in IDENTITY_FORMS:
            raise ValueError(f"identity_form must be one of {IDENTITY_FORMS}; got {identity_form!r}")
        self.identity_form = identity_form
        self.word_vectors = word_vectors
        self._set_word_weights(word_weights, word_vectors.num_words)
        if identity_weight is not None:
            values = torch.as_tensor(identity_weight, dtype=torch.float64)
            if not (torch.isfinite(values).all() and (values > 0).all()):
                raise ValueError(
                    f"identity_weight must be None or a finite number > 0 (lambda of the word kernel lambda*delta + "
                    f"k(x_v, x_w)); got {identity_weight!r}"
                )
            register_constrained(
                self,
                "identity_weight",
                identity_weight,
                identity_weight_constraint or Positive(),
                identity_weight_prior,
                self.batch_shape,
            )

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
        """Precision of the Gaussian prior on the latent vectors, or ``None`` for no prior."""
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
        if name == "identity_weight":
            raise AttributeError(
                "identity_weight: this kernel's word kernel has no identity part (identity_weight=None)"
            )
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

    def _forward_state(self) -> Tensor:
        """The vectors of this evaluation (a variational module draws its training sample here;
        inside :meth:`shared_evaluation`, once for the block)."""

        def draw() -> Tensor:
            self.word_vectors.sample_for_training()
            return self.latent

        return self._shared("latent", (), draw)

    def _norm_floor(self, x: Tensor, latent: Tensor) -> Tensor:
        r"""``4 u_i eps t_i`` per document: :math:`t_i = \sum_s w_{is} k(\mathbf x_s, \mathbf x_s)` bounds
        the latent part of :math:`\|\mu_i\|^2` (Cauchy-Schwarz), and the rounding error of summing the
        :math:`u_i^2` word pairs of the document's ``u_i`` distinct words is within that floor. The
        identity part is exact and keeps a document's norm above it."""
        d = self._prepare(x, latent.dtype)
        return self._shared("floor", (d, latent), lambda: self._document_floor(d, latent))

    def _document_floor(self, d: me.DocumentSet, latent: Tensor) -> Tensor:
        """:meth:`_norm_floor` of a document set."""
        with torch.no_grad():
            eps = torch.finfo(latent.dtype).eps
            if d.unbatched and latent.dim() == 2:
                words, _ = d.distinct()
                b = d.bags()
                self_similarity = self._self_similarity(latent.index_select(0, words))
                t = me.bag_product(b, self_similarity.unsqueeze(-1)).squeeze(-1)
                distinct = torch.bincount(b.rows(), minlength=b.n).to(latent.dtype)
                return 4 * distinct * eps * t.abs()
            # self-similarities of the flattened ``*B x nL x q`` vectors, so that a batched
            # embedding kernel's hyper-parameters broadcast against the batch
            vectors = me.gather_rows(latent, d.ids.flatten(-2))
            t = (d.weights * self._self_similarity(vectors).unflatten(-1, d.ids.shape[-2:])).sum(-1)
            return 4 * d.ids.shape[-1] * eps * t.abs()

    def _self_similarity(self, vectors: Tensor) -> Tensor:
        r""":math:`k(\mathbf x, \mathbf x)` of the embedding kernel: ``... x m x q`` -> ``... x m``."""
        if self._builtin_embedding:
            return self.embedding.self_similarity(vectors)
        return self.embedding(vectors, vectors, diag=True).to_dense()

    def _identity(self, extra_dims: int) -> Tensor:
        r""":math:`\lambda` viewed with ``extra_dims`` trailing singleton dims for broadcasting."""
        value = self.identity_weight
        return value.view(*value.shape, *([1] * extra_dims))

    @property
    def has_identity(self) -> bool:
        """Whether the word kernel contains the identity (``identity_weight`` was given)."""
        return "raw_identity_weight" in self._parameters

    # the latent part (RandomFeatureLDK replaces these three)
    def _latent_paired(self, d1: me.DocumentSet, d2: me.DocumentSet, latent: Tensor) -> Tensor:
        return me.paired_inner(d1, d2, latent, self.embedding_gram, self._explicit)

    def _latent_self(self, d: me.DocumentSet, latent: Tensor) -> Tensor:
        return self._shared(
            "norms",
            (d, latent),
            lambda: me.self_inner(
                d,
                latent,
                self.embedding_gram,
                self._explicit,
                self.batch_shape,
                self.embedding.quadratic_forms if self._builtin_embedding else None,
            ),
        )

    def _latent_gram(self, d1: me.DocumentSet, d2: me.DocumentSet, latent: Tensor, symmetric: bool) -> Tensor:
        return me.mean_embedding_gram(
            d1,
            d2,
            latent,
            self.embedding_gram,
            self._explicit,
            symmetric=symmetric,
            gram_symmetric=self._builtin_embedding,
            batch_shape=self.batch_shape,
        )

    def _latent_inner_products(self) -> InnerProducts:
        """The inner products of the latent part alone (the kernel mean embeddings in the RKHS of
        the embedding kernel), with the rounding floor of their norms."""

        def gram(x1: Tensor, x2: Tensor, symmetric: bool, latent: Tensor) -> Tensor:
            d1 = self._prepare(x1, latent.dtype)
            d2 = d1 if symmetric else self._prepare(x2, latent.dtype)
            return self._latent_gram(d1, d2, latent, symmetric)

        def paired(x1: Tensor, x2: Tensor, latent: Tensor) -> Tensor:
            return self._latent_paired(self._prepare(x1, latent.dtype), self._prepare(x2, latent.dtype), latent)

        def norms(x: Tensor, latent: Tensor) -> Tensor:
            return self._latent_self(self._prepare(x, latent.dtype), latent)

        return InnerProducts(gram, paired, norms, self._norm_floor)

    def _parts(self, diag: bool) -> list[tuple[Tensor | None, InnerProducts]]:
        r"""One part (the joint inner products), or with ``identity_form="separate"`` the latent part
        and :math:`\lambda` times the bag-of-words part."""
        if not (self.has_identity and self.identity_form == "separate"):
            return super()._parts(diag)
        return [
            (None, self._latent_inner_products()),
            (self._identity(1 if diag else 2), self._bag_of_words_inner_products()),
        ]

    def paired_inner(self, x1: Tensor, x2: Tensor, latent: Tensor | None = None) -> Tensor:
        r"""Row-wise :math:`\langle m(\mathbf X^{(1)}_i), m(\mathbf X^{(2)}_i)\rangle` (eq. 3.2, plus
        :math:`\lambda\langle\phi^{(1)}_i,\phi^{(2)}_i\rangle` with the identity part): ``*b1 x n x L1``
        and ``*b2 x n x L2`` -> ``*B x n``. ``latent``: the vectors to use (default :attr:`latent`)."""
        latent = self.latent if latent is None else latent
        out = self._latent_inner_products().paired(x1, x2, latent)
        if self.has_identity:
            out = out + self._identity(1) * self._bag_of_words_inner_products().paired(x1, x2, latent)
        return out

    def self_inner(self, x: Tensor, latent: Tensor | None = None) -> Tensor:
        r""":math:`\|m(\mathbf X_i)\|^2` for every document (``*b x n x L`` -> ``*B x n``), through
        the Gram of the distinct words (:func:`~lvgp.kernels.mean_embedding.self_inner`), plus
        :math:`\lambda\|\phi_i\|^2` with the identity part."""
        latent = self.latent if latent is None else latent
        out = self._latent_inner_products().norms(x, latent)
        if self.has_identity:
            out = out + self._identity(1) * self._bag_of_words_inner_products().norms(x, latent)
        return out

    def mean_embedding_gram(
        self, x1: Tensor, x2: Tensor, symmetric: bool = False, latent: Tensor | None = None
    ) -> Tensor:
        r""":math:`K_{*\text{-LIN}}` (eq. 3.9, plus :math:`\lambda\langle\phi_i,\phi_j\rangle` with the
        identity part) between all documents: ``*b1 x n1 x L1``, ``*b2 x n2 x L2`` -> ``*B x n1 x n2``.
        ``symmetric`` asserts ``x1 == x2``."""
        latent = self.latent if latent is None else latent
        out = self._latent_inner_products().gram(x1, x2, symmetric, latent)
        if self.has_identity:
            out = out + self._identity(2) * self._bag_of_words_inner_products().gram(x1, x2, symmetric, latent)
        return out

    # ------------------------------------------------------------------ batches and persistence
    def _rebatch(self, new: DocumentKernel, change: Any) -> DocumentKernel:
        """The base's, and the word vectors rebatched."""
        new = super()._rebatch(new, change)
        if len(self.word_vectors.batch_shape):
            new.word_vectors = change(self.word_vectors)
        return new

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
        identity = f", identity part ({self.identity_form})" if self.has_identity else ""
        return f"num_words={self.word_vectors.num_words}, latent_dim={self.latent_dim}{weights}{identity}"


def collapsed_bandwidth(embedding: str, rho: float, gamma: float, learn_gamma: bool) -> tuple[float, float]:
    r"""The RBF embedding's bandwidth and the prior's precision to fit at: :math:`(1, \rho/\gamma)` for a
    fixed :math:`\gamma`, else :math:`(\gamma, \rho)` as given. With the RBF embedding
    :math:`\exp(-\frac\gamma2\|\mathbf x_s - \mathbf x_t\|^2)` and the prior of precision :math:`\rho`, the
    substitution :math:`\mathbf z = \sqrt\gamma\,\mathbf x` maps the model at :math:`(\gamma, \rho)` onto the one
    at :math:`(1, \rho/\gamma)`: fitting there makes a fit depend on :math:`(\gamma, \rho)` only through their
    ratio, exactly (L-BFGS itself is not invariant to rescaling its variables); :func:`rescale_latent_space`
    maps back. Other embeddings, or a learned :math:`\gamma`, fit as given."""
    if embedding == "rbf" and not learn_gamma:
        return 1.0, rho / gamma
    return gamma, rho


def rescale_latent_space(kernel: LatentDistributionKernel, factor: float, rho: float, gamma: float) -> None:
    r"""Map ``kernel``'s word vectors between :math:`\mathbf x` and :math:`\mathbf z = \sqrt\gamma\,\mathbf x`
    (:func:`collapsed_bandwidth`), in place: multiply the vectors (and the map of tied embeddings) by
    ``factor`` (:math:`\gamma^{-1/2}` back to :math:`\mathbf x`), set the MAP prior's precision to ``rho`` and
    the RBF bandwidth to ``gamma`` -- the same kernel values."""
    vectors = kernel.word_vectors
    with torch.no_grad():
        vectors.raw_latent.mul_(factor)
        if vectors.word_features is not None:
            vectors.projection.mul_(factor)
    if isinstance(vectors, MAPWordVectors):
        vectors.rho = rho
    kernel.gamma = torch.tensor(gamma, dtype=torch.float64, device=vectors.raw_latent.device)
