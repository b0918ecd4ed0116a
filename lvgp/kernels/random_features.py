r"""LDK with an explicit finite feature map of the embedding kernel, for large vocabularies.

The exact LDK needs the Gram of the distinct words in play, :math:`u^2` entries (and their
gradients): for :math:`u = 50{,}000` words that is 20 GB in float64. Replacing the
embedding kernel by an inner product of :math:`D`-dimensional features,
:math:`k(\mathbf x, \mathbf y) \approx \boldsymbol\phi(\mathbf x)^\top\boldsymbol\phi(\mathbf y)`, makes a
document's kernel mean embedding an explicit vector,
:math:`m(\mathbf X_i) \approx \frac{1}{|D_i|}\sum_{w\in D_i}\boldsymbol\phi(\mathbf x_w)` (cost
:math:`O(\mathrm{nnz}\,D)`), and every level-2 kernel follows from inner products of those
vectors (:math:`O(n_1 n_2 D)`), with memory :math:`O((u + n) D)`.

* ``"rff"`` -- random Fourier features of the RBF embedding kernel (Rahimi & Recht 2007):
  :math:`\boldsymbol\phi(\mathbf x) = \sqrt{2/D}\cos(\sqrt\gamma\,W^\top\mathbf x + \mathbf b)`,
  :math:`W_{kd}\sim\mathcal N(0,1)`, :math:`b_d\sim U[0, 2\pi)` (fixed at construction), so that
  :math:`\mathbb E[\boldsymbol\phi(\mathbf x)^\top\boldsymbol\phi(\mathbf y)] = \exp(-\frac\gamma2\|\mathbf x-\mathbf y\|^2)`.
* ``"nystrom"`` -- landmark words :math:`Z` (``num_features`` of them; their latent vectors
  are the model's, so they move with training): :math:`\boldsymbol\phi(\mathbf x) = L_{ZZ}^{-1} k(Z, \mathbf x)`
  with :math:`K_{ZZ} = L_{ZZ}L_{ZZ}^\top`, i.e. :math:`k(\mathbf x, Z)K_{ZZ}^{-1}k(Z, \mathbf y)`, for any
  embedding kernel.

:func:`gram_approximation_error` measures the relative Frobenius error against the exact LDK.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from .._random import torch_generator
from .._typing import TensorLike
from ..bow.padded import COMPACT_IDS, document_frequencies
from ..bow.weighting import Frequencies
from . import mean_embedding as me
from .embedding import RBFEmbedding, rbf_pooled
from .latent_distribution import LatentDistributionKernel

__all__ = [
    "RandomFeatureLDK",
    "gram_approximation_error",
    "FEATURE_MAPS",
    "APPROXIMATIONS",
    "auto_approximation",
    "frequent_words",
]

FEATURE_MAPS = ("rff", "nystrom")


class RandomFeatureLDK(LatentDistributionKernel):
    """:class:`LatentDistributionKernel` with the embedding kernel replaced by a ``D``-dimensional
    feature map (module docstring). Same arguments, plus:

    Args:
        features: ``"rff"`` (RBF embedding only) or ``"nystrom"``.
        num_features: D (random features, or landmark words).
        landmarks: for ``"nystrom"``, the landmark word ids (default: ``num_features`` words
            drawn without replacement with ``feature_seed``); pass frequent words for accuracy.
        feature_seed: seed of the random features / landmark draw.
        jitter: relative jitter of K_ZZ's Cholesky (Nystrom).

    Unbatched kernels only (``batch_shape`` must be empty).
    """

    def __init__(
        self,
        num_words: int | None = None,
        latent_dim: int | None = None,
        embedding: str | Kernel = "rbf",
        level2: str = "linear",
        *,
        features: str = "rff",
        num_features: int = 1024,
        landmarks: TensorLike | None = None,
        feature_seed: int = 0,
        jitter: float = 1e-8,
        **kwargs: Any,
    ) -> None:
        super().__init__(num_words, latent_dim, embedding, level2, **kwargs)
        if len(self.batch_shape):
            raise ValueError("RandomFeatureLDK supports unbatched kernels only")
        if features not in FEATURE_MAPS:
            raise ValueError(f"features must be one of {FEATURE_MAPS}; got {features!r}")
        if features == "rff" and not isinstance(self.embedding, RBFEmbedding):
            raise ValueError("random Fourier features approximate the RBF embedding kernel: use embedding='rbf'")
        if not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"num_features must be a positive integer; got {num_features!r}")
        self.features, self.num_features, self.jitter = features, num_features, jitter
        num_words, latent_dim = self.word_vectors.num_words, self.latent_dim
        g = torch_generator(feature_seed)
        dtype = self.word_vectors.dtype
        if features == "rff":
            self.register_buffer("rff_weights", torch.randn(latent_dim, num_features, generator=g, dtype=dtype))
            self.register_buffer("rff_phases", 2 * math.pi * torch.rand(num_features, generator=g, dtype=dtype))
        else:
            if landmarks is None:
                if num_features > num_words:
                    raise ValueError(f"num_features={num_features} landmarks exceed the {num_words} words")
                landmarks = torch.randperm(num_words, generator=g)[:num_features].sort().values
            landmarks = torch.as_tensor(landmarks, dtype=torch.long)
            if landmarks.dim() != 1 or landmarks.min() < 0 or landmarks.max() >= num_words:
                raise ValueError("landmarks must be a 1-D tensor of word ids in [0, num_words)")
            self.register_buffer("landmarks", landmarks)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any, **kwargs: Any) -> None:
        """As :class:`torch.nn.Module`'s, taking the saved landmarks whatever their number: they are the
        fit's (its training corpus's most frequent words), and a model rebuilt from fewer documents (a
        sparse GP's inducing documents) may have found fewer."""
        saved, current = state_dict.get(prefix + "landmarks"), self._buffers.get("landmarks")
        if isinstance(saved, Tensor) and isinstance(current, Tensor) and saved.shape != current.shape:
            self._buffers["landmarks"] = torch.empty_like(saved, device=current.device)
            self.num_features = saved.shape[0]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def word_features_map(self, vectors: Tensor, latent: Tensor | None = None) -> Tensor:
        """phi of latent vectors: ``m x q`` -> ``m x D`` (``latent``: the table the Nystrom
        landmarks are read from, default :attr:`latent`)."""
        if self.features == "rff":
            proj = (self.embedding._hyper("gamma").sqrt() * vectors) @ self.rff_weights + self.rff_phases
            return math.sqrt(2.0 / self.rff_weights.shape[1]) * torch.cos(proj)
        z, chol = self._landmark_factor(self.latent if latent is None else latent)
        return torch.linalg.solve_triangular(chol, self.embedding_gram(z, vectors), upper=False).mT

    def _landmark_factor(self, latent: Tensor) -> tuple[Tensor, Tensor]:
        """The landmarks' vectors ``Z`` (``m x q``) and the Cholesky factor of their (jittered) Gram
        (once per :meth:`shared_evaluation` block)."""
        return self._shared("landmarks", (latent,), lambda: self._factor_landmarks(latent))

    def _factor_landmarks(self, latent: Tensor) -> tuple[Tensor, Tensor]:
        z = latent.index_select(-2, self.landmarks)
        kzz = self.embedding_gram(z, z)
        scale = kzz.diagonal().mean().detach()
        return z, torch.linalg.cholesky(
            kzz + self.jitter * scale * torch.eye(len(kzz), dtype=kzz.dtype, device=kzz.device)
        )

    def _features(self, d: me.DocumentSet, latent: Tensor) -> Tensor:
        """The documents' approximate mean embeddings, ``n x D`` (once per set in a
        :meth:`shared_evaluation` block: a sparse GP's step needs the inducing documents' and the
        batch's features three times each)."""
        if not d.unbatched:
            raise ValueError("RandomFeatureLDK takes unbatched n x L inputs")
        return self._shared("features", (d, latent), lambda: self._document_features(d, latent))

    def _document_features(self, d: me.DocumentSet, latent: Tensor) -> Tensor:
        words, _ = d.distinct()
        vectors = latent.index_select(-2, words)
        if self.features == "rff":
            return me.bag_product(d.bags(), self.word_features_map(vectors, latent))
        # Nystrom: L^{-1} k(Z, x_v) is linear in the columns k(Z, x_v), so the documents' weighted
        # sums of those columns are taken first and only the n pooled columns are solved for
        # (m^2 n instead of m^2 V_d per evaluation and per gradient; V_d >> n when the vocabulary
        # is large -- the cost that set a latent SMM cell's time)
        z, chol = self._landmark_factor(latent)
        bags = d.bags()
        if isinstance(self.embedding, RBFEmbedding) and vectors.device.type == "cpu":
            # the m x V_d Gram in cache-sized blocks, never whole (a GPU takes it in one product)
            pooled = rbf_pooled(
                z, vectors, self.embedding.gamma, bags.rows(), bags.words, bags.weights, bags.n, memo=bags.memo
            )
        else:
            pooled = me.bag_product(bags, self.embedding_gram(z, vectors).mT)  # n x m
        return torch.linalg.solve_triangular(chol, pooled.mT, upper=False).mT

    def document_features(self, x: Tensor, latent: Tensor | None = None) -> Tensor:
        """Approximate kernel mean embeddings: ``n x L`` padded -> ``n x D``."""
        if x.dim() != 2:
            raise ValueError("RandomFeatureLDK takes unbatched n x L inputs")
        latent = self.latent if latent is None else latent
        return self._features(self._prepare(x, latent.dtype), latent)

    # the latent part of the inner products from the explicit features (the identity part, if
    # any, is added by LatentDistributionKernel exactly)
    def _latent_gram(self, d1: me.DocumentSet, d2: me.DocumentSet, latent: Tensor, symmetric: bool) -> Tensor:
        f1 = self._features(d1, latent)
        return f1 @ (f1 if symmetric else self._features(d2, latent)).mT

    def _latent_paired(self, d1: me.DocumentSet, d2: me.DocumentSet, latent: Tensor) -> Tensor:
        return (self._features(d1, latent) * self._features(d2, latent)).sum(-1)

    def _latent_self(self, d: me.DocumentSet, latent: Tensor) -> Tensor:
        return self._features(d, latent).pow(2).sum(-1)


@torch.no_grad()
def gram_approximation_error(exact: LatentDistributionKernel, approx: LatentDistributionKernel, x: Tensor) -> float:
    """||K_approx - K_exact||_F / ||K_exact||_F on documents ``x`` (the two kernels should
    share latent vectors and hyper-parameters)."""
    k = exact(x).to_dense()
    return float(torch.linalg.norm(approx(x).to_dense() - k) / torch.linalg.norm(k))


APPROXIMATIONS = ("auto", "exact", "rff", "nystrom")


def auto_approximation(
    documents: Tensor, embedding: Any, max_exact_words: int, frequencies: Frequencies | None = None
) -> str:
    """``approximation="auto"``, the one rule: the exact LDK unless the padded training ``documents``
    hold more than ``max_exact_words`` distinct words (the exact word Gram costs their number squared
    per evaluation), then ``"nystrom"``; a ``"linear"`` embedding is always exact (its mean embeddings
    are explicit). The words are counted from document frequencies (``frequencies``, where the
    caller has them), without a copy of every id."""
    if embedding == "linear":
        return "exact"
    counts = document_frequencies(documents.reshape(-1, documents.shape[-1])) if frequencies is None else frequencies()
    return "nystrom" if int((counts > 0).sum()) > max_exact_words else "exact"


def frequent_words(x: Tensor, m: int, frequencies: Frequencies | None = None) -> Tensor:
    """Ids of the ``m`` words that occur in the most documents of padded ``x`` (ties: smaller id
    first): Nystrom landmarks that cover the corpus. ``frequencies``: ``x``'s documents per word,
    where the caller has them."""
    counts = document_frequencies(x) if frequencies is None else frequencies()
    df = torch.from_numpy(counts).to(x.device)  # documents per word
    order = torch.argsort(-df, stable=True)  # most documents first, ties by id
    return order[df[order] > 0][:m].sort().values


@torch.no_grad()
def balanced_identity_weight(kernel: LatentDistributionKernel, x: Tensor) -> float:
    r"""The :math:`\lambda` at which the identity part and the latent part of ``kernel`` contribute
    equally, on average, to the self-similarities of the documents ``x``:
    :math:`\overline{\|m(\mathbf X_i)\|^2} / \overline{\|\phi_i\|^2}` at the kernel's current vectors, or
    with ``identity_form="separate"`` the same ratio of the two parts' level-2 self-similarities (1
    for the cosine: both parts are normalized) (``identity_weight="balanced"`` of the LDK estimators).
    Over more than ``_BALANCE_DOCUMENTS`` documents, the means are those of every k-th document
    (``_BALANCE_DOCUMENTS`` of them, evenly spaced): a start, not a fit, whose cost stays flat in n."""
    if x.shape[-2] > _BALANCE_DOCUMENTS:
        x = x[..., :: -(-x.shape[-2] // _BALANCE_DOCUMENTS), :]
    if x.dtype in COMPACT_IDS and x.dtype != torch.int32:  # int16 ids, which torch does not index with
        x = x.long()
    with torch.no_grad():
        if kernel.has_identity and kernel.identity_form == "separate":
            vectors = kernel.latent
            latent = kernel._level2_values(kernel._latent_inner_products(), x, x, True, True, vectors).mean()
            words = kernel._level2_values(kernel._bag_of_words_inner_products(), x, x, True, True, vectors).mean()
        else:
            documents = kernel._prepare(x, kernel.latent.dtype)
            latent = kernel._latent_self(documents, kernel.latent).mean()
            words = me.bag_of_words_self(documents).mean()
    return float(latent / words) if latent > 0 and words > 0 else 1.0


#: the most documents :func:`balanced_identity_weight` averages over (evenly spaced beyond)
_BALANCE_DOCUMENTS = 10_000


def identity_start(identity_weight: float | str | None) -> float | None:
    """The ``identity_weight`` an LDK is built with: the estimators' ``"balanced"`` starts at 1 and
    is then set by :func:`balanced_identity_weight`."""
    if isinstance(identity_weight, str):
        return 1.0
    return identity_weight
