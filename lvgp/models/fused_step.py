r"""The sparse GP-LVSM's and the variational GP classifier's training objectives as functions of tensors,
for ``torch.compile`` (issue 60).

An eager step of :class:`~lvgp.SparseGPLVSMRegressor` dispatches operators by the thousand
(``benchmarks/step_anatomy.py``): the kernel decides, while it runs, which documents it has seen
(caches keyed by identity and value), how to bag a batch (``unique``, ``nonzero``: sizes the host
reads) and which branch to take (``item()``), and each of those is a break in any compiled graph. Here
the batch's bags are built *on the host, before the step* (NumPy, as a data loader collates a batch):
the distinct words of the inducing documents and the batch, each document's bag (its distinct words and
their weights), the documents' norm floors and their bag-of-words cosines (on a GPU, those from the same
table on the device: :func:`table_cosines`, which the GPU computes faster than the host would hand them
over). What is left is a function of tensors with no data-dependent branch, :func:`fused_objective`,
which ``torch.compile`` takes whole (forward and backward), and which an eager run checks against the
kernel stack (``tests/test_fused_step.py``: the loss and every gradient to 1e-10 in float64).

It is the step of the estimator's default kernel with a Nystrom map
(:meth:`LDKSpec.variational_bow <lvgp.kernels.LDKSpec.variational_bow>`, ``approximation="nystrom"``,
what ``"auto"`` picks at review lengths): variational word vectors with the RBF embedding
kernel, the landmarks' map :math:`\phi(\mathbf x) = L^{-1}k(Z_\ell, \mathbf x)`, the cosine level 2 of
the mean embeddings plus :math:`\lambda` times the tf-idf cosine (``identity_form="separate"``), an
output scale, a constant mean, a Gaussian likelihood and the whitened SVGP ELBO
(:func:`lvgp.models.inducing.whitened_gaussian_elbo`). :func:`unsupported` says why any other model
takes the eager step.

The variational :class:`~lvgp.LDKGPClassifier` of ``C > 2`` classes has its own, on the same host tables:
:func:`fused_softmax_objective` (:class:`FusedClassifierObjective`), the classifier's default kernel with a
Nystrom map (MAP word vectors, the linear level 2), ``C`` whitened SVGPs with natural-parameter ``q(v)``
(their natural gradients as gpytorch's, for its ``NGD``) and the softmax ELBO by Monte Carlo on the
marginals (:func:`lvgp.models.inducing.whitened_softmax_elbo`); :func:`unsupported_classifier` says why
any other classifier takes the eager step.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any, NamedTuple

import gpytorch
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from gpytorch.constraints import GreaterThan, Positive
from gpytorch.kernels import ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.means import ConstantMean
from gpytorch.variational import CholeskyVariationalDistribution
from linear_operator.utils.warnings import NumericalWarning
from torch import Tensor

from ..bow.padded import PAD
from ..kernels.level2 import inverse_norm
from ..warnings import PerformanceWarning
from .inducing import PaddedVariationalStrategy, gaussian_expected_log_likelihood, whitened_kl

__all__ = [
    "DocumentBags",
    "FusedClassifierObjective",
    "FusedSparseObjective",
    "bag_of_words_cosines",
    "cosines_on_device",
    "document_bags",
    "fused_objective",
    "fused_softmax_objective",
    "fused_step_wanted",
    "fused_steps",
    "packed_objective",
    "packed_softmax_objective",
    "step_table",
    "table_cosines",
    "unsupported",
    "unsupported_classifier",
]


class DocumentBags(NamedTuple):
    """A set of ``n`` padded documents as bags, built on the host with NumPy (:func:`document_bags`):
    ``vocab`` (``nnz``, each document's distinct word ids in turn), ``offsets`` (``n``, where each
    document starts in ``vocab``), ``weights`` (``nnz``, the words' shares of their documents, as the
    kernel's word weights make them), ``floor`` (``n``, the rounding floor of the squared norms of the
    latent part: :meth:`LatentDistributionKernel._norm_floor <lvgp.kernels.LatentDistributionKernel>` for
    an RBF embedding kernel) and ``counts`` (the ``n x V`` sparse matrix of the weights: the
    bag-of-words part's inner products)."""

    vocab: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray
    floor: np.ndarray
    counts: sp.csr_matrix


def document_bags(ids: np.ndarray, word_weights: np.ndarray | None, num_words: int) -> DocumentBags:
    """:class:`DocumentBags` of padded documents ``ids`` (``n x L``, padding ``-1``), with the kernel's
    per-word weights ``word_weights`` (``None``: each token counts 1), in float64. The weights are
    :func:`lvgp.kernels.mean_embedding.document_weights`' (a token's weight over its document's total),
    summed over a document's repeats of a word, as its bags sum them (here as the repeats times the
    token's weight: a word's tokens in a document weigh the same).

    One sort of the ``(document, word)`` keys (counting repeats, no inverse permutation) and the sparse
    matrix built from its sorted rows as they are: the host's cost of a step's bags (a GPU waits for it)."""
    ids = np.asarray(ids)
    n, width = ids.shape
    mask = ids != PAD
    safe = np.where(mask, ids, 0).astype(np.int64)
    token_weights = (np.ones_like(safe, dtype=np.float64) if word_weights is None else word_weights[safe]) * mask
    totals = np.maximum(token_weights.sum(-1), np.finfo(np.float64).tiny)
    kept = np.flatnonzero(token_weights.ravel() > 0)
    # the keys in 32 bits where they fit (a sort of half the bytes)
    key_type = np.int32 if n * num_words < 2**31 else np.int64
    keys = (kept // max(1, width)).astype(key_type) * key_type(num_words) + safe.ravel()[kept].astype(key_type)
    keys, repeats = np.unique(keys, return_counts=True)
    rows, vocab = (keys // num_words).astype(np.int64), (keys % num_words).astype(np.int64)
    shares = (1.0 if word_weights is None else word_weights[vocab]) / totals[rows]
    summed = repeats * shares
    distinct = np.bincount(rows, minlength=n)
    bounds = np.concatenate([[0], np.cumsum(distinct)]).astype(np.int64)
    weight_sums = np.bincount(rows, weights=summed, minlength=n)  # the RBF kernel's k(x, x) = 1 for every word
    floor = 4 * distinct * np.finfo(np.float64).eps * np.abs(weight_sums)
    # the keys are sorted: each row's words are in order, the matrix's CSR arrays are the bags themselves
    counts = sp.csr_matrix((summed, vocab, bounds), shape=(n, num_words))
    return DocumentBags(vocab, bounds[:-1], summed, floor, counts)


def step_table(inducing: DocumentBags, batch: DocumentBags) -> tuple[np.ndarray, ...]:
    """The inducing documents and a batch as one table for :func:`fused_objective` (the inducing
    documents first): the distinct word ids of both (``u``, sorted), the bags' entries as indices into
    them (``nnz``), the bags' offsets (``M + B``), their weights (``nnz``) and the floors (``M + B``).

    The distinct words are read off a mark per vocabulary word (``V`` entries, no sort) where the
    vocabulary is at most 16 times the entries; a sort of the entries (``np.unique``) otherwise."""
    vocab = np.concatenate([inducing.vocab, batch.vocab])
    num_words = inducing.counts.shape[1]
    if num_words <= 16 * len(vocab):
        present = np.zeros(num_words, dtype=bool)
        present[vocab] = True
        words = np.flatnonzero(present)
        position = np.zeros(num_words, dtype=np.int64)
        position[words] = np.arange(len(words))
        local = position[vocab]
    else:
        words, local = np.unique(vocab, return_inverse=True)
    offsets = np.concatenate([inducing.offsets, batch.offsets + len(inducing.vocab)])
    weights = np.concatenate([inducing.weights, batch.weights])
    floor = np.concatenate([inducing.floor, batch.floor])
    return words, local.astype(np.int64), offsets, weights, floor


def _inverse_norms(squared: np.ndarray) -> np.ndarray:
    """``1 / sqrt(s)``, 0 where ``s <= 0`` (:func:`lvgp.kernels.level2.inverse_norm`)."""
    return np.where(squared > 0, 1 / np.sqrt(np.maximum(squared, np.finfo(np.float64).tiny)), 0.0)


def bag_of_words_cosines(left: DocumentBags, right: DocumentBags | None = None) -> np.ndarray:
    r"""The tf-idf cosines :math:`\langle\phi_i,\phi_j\rangle / (\|\phi_i\|\|\phi_j\|)` of two document sets
    (``right=None``: ``left`` with itself), ``n1 x n2`` float64: the bag-of-words part of the kernel, a
    constant of the data."""
    same = right is None
    other = left if right is None else right
    gram = np.asarray((left.counts @ other.counts.T).todense())
    r1 = _inverse_norms(np.diagonal(gram).copy() if same else left.counts.multiply(left.counts).sum(1).A1)
    r2 = r1 if same else _inverse_norms(other.counts.multiply(other.counts).sum(1).A1)
    return gram * r1[:, None] * r2[None, :]


#: the most entries of the dense ``(M + B) x u`` table :func:`table_cosines` builds on a device (2**26: 512 MB in
#: float64); a larger step's cosines are computed on the host (:func:`bag_of_words_cosines`)
DEVICE_COSINES_MAX_ENTRIES = 2**26


def cosines_on_device(device: torch.device, documents: int, num_distinct: int) -> bool:
    """Whether a step's bag-of-words cosines are computed on ``device`` (:func:`table_cosines`: a GPU's
    few launches in place of the host's sparse product, which it would wait for) rather than on the host."""
    return device.type != "cpu" and documents * num_distinct <= DEVICE_COSINES_MAX_ENTRIES


def table_cosines(local: Tensor, offsets: Tensor, weights: Tensor, num_inducing: int, num_distinct: int) -> Tensor:
    r"""The bag-of-words cosines of a step's table (:func:`step_table`'s ``local``, ``offsets`` and ``weights``,
    the ``M = num_inducing`` inducing documents first), ``M x B``, on the table's device: what
    :func:`bag_of_words_cosines` computes on the host from the documents' sparse rows, here from a dense
    ``(M + B) x u`` copy of the table (``u = num_distinct``) and one matrix product -- a few kernels on a GPU
    and no wait for the host's sparse product. No value is read back."""
    documents, nnz = offsets.shape[0], local.shape[0]
    positions = torch.arange(nnz, device=local.device, dtype=offsets.dtype)
    rows = torch.searchsorted(offsets, positions, right=True) - 1
    dense = weights.new_zeros(documents, num_distinct)
    dense[rows, local] = weights
    squared = weights.new_zeros(documents).index_add_(0, rows, weights * weights)
    inverse = torch.where(squared > 0, squared.clamp_min(torch.finfo(weights.dtype).tiny).rsqrt(), 0.0)
    gram = dense[:num_inducing] @ dense[num_inducing:].T
    return gram * inverse[:num_inducing, None] * inverse[None, num_inducing:]


def _softplus_transform(constraint: Any) -> float | None:
    """The lower bound ``b`` of a ``softplus(raw) + b`` constraint (gpytorch's ``Positive`` and
    ``GreaterThan`` with their default transform), ``None`` for any other."""
    if not isinstance(constraint, (GreaterThan, Positive)) or not constraint.enforced:
        return None
    transform = constraint._transform
    default = isinstance(transform, torch.nn.Softplus) and transform.beta == 1 and transform.threshold == 20
    if not (default or transform is F.softplus):
        return None
    return 0.0 if isinstance(constraint, Positive) else float(constraint.lower_bound)


def _unsupported_nystrom_kernel(
    kernel: Any, level2: type, level2_name: str, vectors: type, vectors_name: str
) -> str | None:
    """Why ``kernel`` is not the fused objectives' LDK (``None``: it is): a ``RandomFeatureLDK`` with a Nystrom
    map, unbatched, on all dimensions, with the RBF embedding kernel of a fixed bandwidth, the level 2
    ``level2`` and word vectors of type ``vectors`` without pretrained features or extra words."""
    from ..kernels.embedding import RBFEmbedding
    from ..kernels.random_features import RandomFeatureLDK

    if type(kernel) is not RandomFeatureLDK or kernel.features != "nystrom":
        return "the kernel is not an LDK with a Nystrom map (approximation='nystrom')"
    if kernel.batch_shape != torch.Size() or kernel.active_dims is not None:
        return "the kernel has a batch shape or active dimensions"
    if type(kernel.embedding) is not RBFEmbedding or type(kernel.level2) is not level2:
        return f"the kernel's embedding is not RBF or its level 2 is not {level2_name}"
    if type(kernel.word_vectors) is not vectors:
        return f"the word vectors are not {vectors_name}"
    if kernel.word_vectors.word_features is not None or kernel.word_vectors._extra is not None:
        return "the word vectors have pretrained features or extra words"
    if any(p.requires_grad for p in kernel.embedding.parameters()):
        return "the embedding kernel's bandwidth is learned"
    return None


def unsupported(model: Any, likelihood: Any) -> str | None:
    """Why the fused objective cannot take ``model``'s step (``None``: it can): the model and kernel
    the module docstring describes, unbatched, in float64, on a CPU or a GPU."""
    from ..kernels.level2 import CosineLevel2
    from ..kernels.word_vectors import VariationalWordVectors

    strategy = getattr(model, "variational_strategy", None)
    if not isinstance(strategy, PaddedVariationalStrategy) or type(strategy) is not PaddedVariationalStrategy:
        return "the model's strategy is not lvgp's PaddedVariationalStrategy"
    if type(strategy._variational_distribution) is not CholeskyVariationalDistribution:
        return "the variational distribution is not a CholeskyVariationalDistribution"
    if type(likelihood) is not GaussianLikelihood or likelihood.noise_covar.noise.numel() != 1:
        return "the likelihood is not a GaussianLikelihood with one noise"
    mean = model.mean_module
    if type(mean) is not ConstantMean or mean.constant.numel() != 1 or mean.constant is not mean.raw_constant:
        return "the mean is not one unconstrained constant"
    covar = model.covar_module
    if type(covar) is not ScaleKernel or covar.outputscale.numel() != 1:
        return "the covariance is not a ScaleKernel of one output scale"
    kernel = covar.base_kernel
    reason = _unsupported_nystrom_kernel(kernel, CosineLevel2, "the cosine", VariationalWordVectors, "variational")
    if reason is not None:
        return reason
    if not (kernel.has_identity and kernel.identity_form == "separate"):
        return "the kernel has no separate bag-of-words part (identity_form='separate')"
    vectors = kernel.word_vectors
    if any(True for _ in model.named_priors()) or any(True for _ in likelihood.named_priors()):
        return "the model has gpytorch priors"
    constrained = [covar.raw_outputscale_constraint, kernel.raw_identity_weight_constraint]
    constrained += [likelihood.noise_covar.raw_noise_constraint, vectors.raw_latent_scale_constraint]
    if any(_softplus_transform(c) is None for c in constrained):
        return "a constraint is not softplus(raw) + a bound"
    if vectors.raw_latent.dtype != torch.float64:
        return "the model is not in float64"
    return None


def _rbf(xa: Tensor, xb: Tensor, gamma: Tensor) -> Tensor:
    r""":math:`\exp(\frac\gamma2(2\,\mathbf a^\top\mathbf b - \|\mathbf a\|^2 - \|\mathbf b\|^2))`, the
    exponent clamped to ``[-708, 0]`` (float64): :func:`lvgp.kernels.embedding.rbf_gram`'s values, but that
    its entries at or below ``exp(-707)`` (about 1e-307) are 0 there."""
    exponent = (2 * (xa @ xb.mT) - xa.pow(2).sum(-1).unsqueeze(-1) - xb.pow(2).sum(-1).unsqueeze(-2)) * (0.5 * gamma)
    return exponent.clamp(min=math.floor(math.log(torch.finfo(xa.dtype).tiny)) + 1, max=0).exp()


def _pooled(columns: Tensor, local: Tensor, offsets: Tensor, weights: Tensor) -> Tensor:
    r""":math:`\sum_s w_{is}\,k(\mathbf x_{v_{is}}, Z_\ell)`, each document's weighted sum of its distinct
    words' kernel values with the landmarks ``columns`` (``u x m``, one row a word) over its bag: ``n x m``."""
    return F.embedding_bag(local, columns, offsets, mode="sum", per_sample_weights=weights)


def _nystrom_features(
    vectors: Tensor,
    landmarks: Tensor,
    gamma: Tensor,
    jitter_landmarks: float,
    words: Tensor,
    local: Tensor,
    offsets: Tensor,
    weights: Tensor,
) -> tuple[Tensor, Tensor]:
    r"""Every document's Nystrom features at once (``n x D``, the table's documents in order: the inducing
    documents first) and the landmarks' factorization's ``info``: ``L_l L_l^T = k(Z_l, Z_l) + j s I`` of the
    ``landmarks``' vectors (``s`` the mean of its diagonal, ``j = jitter_landmarks``), then
    :math:`L_\ell^{-1}\sum_s w_s k(Z_\ell, \mathbf x_s)` over each document's bag (one ``embedding_bag`` of
    the distinct ``words``' columns, one triangular solve)."""
    z_landmarks = vectors[landmarks]
    k_ll = _rbf(z_landmarks, z_landmarks, gamma)
    scale = k_ll.diagonal().mean().detach()
    eye_l = torch.eye(k_ll.shape[-1], dtype=k_ll.dtype, device=k_ll.device)
    chol_l, info_l = torch.linalg.cholesky_ex(k_ll + jitter_landmarks * scale * eye_l)
    pooled = _pooled(_rbf(vectors[words], z_landmarks, gamma), local, offsets, weights)
    return torch.linalg.solve_triangular(chol_l, pooled.mT, upper=False).mT, info_l


def fused_objective(
    raw_latent: Tensor,
    raw_latent_scale: Tensor,
    noise: Tensor,
    rho: float,
    gamma: Tensor,
    landmarks: Tensor,
    jitter_landmarks: float,
    raw_identity_weight: Tensor,
    raw_outputscale: Tensor,
    constant: Tensor,
    raw_noise: Tensor,
    bounds: tuple[float, float, float, float],
    variational_mean: Tensor,
    variational_chol: Tensor,
    jitter: float,
    words: Tensor,
    local: Tensor,
    offsets: Tensor,
    weights: Tensor,
    floor: Tensor,
    z_bow: Tensor,
    zx_bow: Tensor,
    y: Tensor,
    num_data: int,
    min_variance: float,
) -> tuple[Tensor, Tensor]:
    r"""Minus the ELBO per datum of one batch (``()``) and its status (``3``, int64): the number of
    variances floored and the ``info`` of the two Cholesky factorizations (landmarks, ``K_ZZ``; 0 where
    they succeeded), read by the caller once, after the step, instead of a check on the host inside it.

    The constrained values are ``softplus(raw) + bound`` (gpytorch's ``Positive`` and ``GreaterThan``), the
    ``bounds`` those of the latent scales, ``identity_weight``, ``outputscale`` and ``noise_variance``.
    The word vectors: a draw ``raw_latent + latent_scale * noise`` of :math:`q(\mathbf X)` (``V x q``
    each), whose KL to the prior :math:`\mathcal N(0, \rho^{-1})` is
    :meth:`lvgp.kernels.word_vectors.VariationalWordVectors.kl`'s. The kernel (``RandomFeatureLDK`` with a Nystrom map): ``L_l L_l^T = k(Z_l, Z_l) + j I`` of the
    ``landmarks``' vectors, each document's features :math:`L_\ell^{-1}\sum_s w_s k(Z_\ell, \mathbf x_s)`,
    the cosine of the features plus ``identity_weight`` times the bag-of-words cosine (``z_bow``:
    ``M x M``, ``zx_bow``: ``M x B``), times ``outputscale``; a squared norm at or below its ``floor``
    counts as 0, and ``diag K_XX`` is ``outputscale * (1 + identity_weight)`` (the cosine's unit
    diagonal), 0 for a document whose features are zero (one of no word: the empty set). The ELBO
    (:meth:`lvgp.models.inducing.PaddedVariationalStrategy.training_marginals` and
    :func:`~lvgp.models.inducing.whitened_gaussian_elbo`): ``L L^T = K_ZZ + jitter I``, ``A = L^{-1} K_ZX``,
    ``mu = constant + A^T m``, ``sigma^2 = diag K_XX + jitter + |S^T a_i|^2 - |a_i|^2`` floored at
    ``min_variance``, the Gaussian expected log-likelihood averaged over the batch, minus the KL of
    :math:`q(\mathbf v)` and the word vectors' KL over ``num_data``."""
    latent_scale, identity_weight, outputscale, noise_variance = (
        F.softplus(raw) + bound
        for raw, bound in zip((raw_latent_scale, raw_identity_weight, raw_outputscale, raw_noise), bounds)
    )
    vectors = raw_latent + latent_scale * noise
    features, info_l = _nystrom_features(vectors, landmarks, gamma, jitter_landmarks, words, local, offsets, weights)
    m = z_bow.shape[-1]
    lin = features[:m] @ features.mT  # M x (M + B): the inducing documents' Gram with themselves and the batch
    s_z = lin[:, :m].diagonal()
    s_x = features[m:].pow(2).sum(-1)
    r_z = inverse_norm(torch.where(s_z <= floor[:m], torch.zeros_like(s_z), s_z))
    r_x = inverse_norm(torch.where(s_x <= floor[m:], torch.zeros_like(s_x), s_x))
    cos_zz = lin[:, :m] * r_z.unsqueeze(-1) * r_z.unsqueeze(-2)
    cos_zx = lin[:, m:] * r_z.unsqueeze(-1) * r_x.unsqueeze(-2)
    k_zz = outputscale * (cos_zz + identity_weight * z_bow)
    k_zx = outputscale * (cos_zx + identity_weight * zx_bow)
    # the cosine's unit diagonal; 0 for a document of no word (an estimator's on_empty="keep": the empty set)
    k_xx = outputscale * (1 + identity_weight) * (s_x > floor[m:]).to(s_x.dtype)

    eye = torch.eye(m, dtype=k_zz.dtype, device=k_zz.device)
    chol, info = torch.linalg.cholesky_ex(k_zz + jitter * eye)
    s = variational_chol.tril()
    a = torch.linalg.solve_triangular(chol, k_zx, upper=False)
    mean = constant + a.mT @ variational_mean
    # diag(A^T (S S^T - I) A) = |S^T a_i|^2 - |a_i|^2
    variance = k_xx + jitter + ((s.mT @ a).square().sum(-2) - a.square().sum(-2))
    floored = (variance < min_variance).sum()
    variance = variance.clamp_min(min_variance)
    log_likelihood = gaussian_expected_log_likelihood(y, mean, variance, noise_variance).sum(-1) / y.shape[-1]
    kl_inducing = whitened_kl(variational_mean, variational_chol)
    variance_x = latent_scale.pow(2)
    kl_vectors = 0.5 * (rho * (raw_latent.pow(2) + variance_x) - 1 - torch.log(rho * variance_x)).sum()
    status = torch.stack([floored, info_l.to(floored.dtype), info.to(floored.dtype)])
    return -(log_likelihood - kl_inducing / num_data - kl_vectors / num_data), status


def packed_objective(
    parameters: tuple,
    ints: Tensor,
    floats: Tensor,
    num_distinct: int,
    nnz: int,
    z_bow: Tensor,
    zx_bow: Tensor,
    y: Tensor,
    num_data: int,
    min_variance: float,
) -> tuple[Tensor, Tensor]:
    """:func:`fused_objective` of ``parameters`` (its first fifteen arguments) and a step's table packed in
    two tensors (what :class:`FusedSparseObjective` passes): ``ints``, the ``words`` (``num_distinct``),
    ``local`` (``nnz``) and ``offsets`` of :func:`step_table` one after the other; ``floats``, its
    ``weights`` and ``floor``; ``z_bow`` and ``zx_bow``, the bag-of-words cosines (``M x M``, ``M x B``)."""
    words, local, offsets = ints[:num_distinct], ints[num_distinct : num_distinct + nnz], ints[num_distinct + nnz :]
    weights, floor = floats[:nnz], floats[nnz:]
    table = (words, local, offsets, weights, floor, z_bow, zx_bow)
    # the first fifteen arguments as one tuple, which mypy cannot count
    return fused_objective(*parameters, *table, y, num_data, min_variance)  # type: ignore[call-arg]


#: :func:`fused_steps`' state: whether ``MiniBatch(compile=True)`` takes the fused step on a CPU too
_ON_CPU = {"enabled": False}


@contextlib.contextmanager
def fused_steps(enabled: bool = True) -> Iterator[None]:
    """Inside this block, ``MiniBatch(compile=True)`` takes the fused, compiled step on a CPU too. By
    default it does so on a GPU only: on a CPU it cuts a step's operators (what a GPU launches one at a
    time) to a small fraction but takes longer than the eager step, after a warm-up of about a minute on
    a fresh machine (the figures: ``benchmarks/README.md``, ``fused_step.py``), so there ``compile=True``
    compiles the Nystrom LDK's blocks instead (:func:`lvgp.kernels.compiled_blocks`). For measuring the fused step where no GPU is::

        with lvgp.models.fused_step.fused_steps():
            SparseGPLVSMRegressor(optimizer=MiniBatch(compile=True)).fit(X, y)
    """
    previous = _ON_CPU["enabled"]
    _ON_CPU["enabled"] = bool(enabled)
    try:
        yield
    finally:
        _ON_CPU["enabled"] = previous


def fused_step_wanted(device: torch.device) -> bool:
    """Whether ``MiniBatch(compile=True)`` takes the fused step on ``device`` (a GPU; a CPU inside
    :func:`fused_steps`)."""
    return device.type != "cpu" or _ON_CPU["enabled"]


class _CompiledObjective:
    """What both fused objectives share: their packed function, ``torch.compile``'d or not, the fallback to
    it eagerly where compiling fails, and the status the last call left (floored variances first, then the
    Cholesky factorizations' ``info``)."""

    def __init__(
        self,
        model: Any,
        likelihood: Any,
        num_data: int,
        reason: str | None,
        function: Any,
        what: str,
        compile: bool,
        status_size: int,
    ) -> None:
        """``reason``: the ``unsupported`` check's answer for ``model`` (a ``ValueError`` unless ``None``);
        ``function``: the packed objective, compiled with ``compile``; ``what``: its name in the warning."""
        if reason is not None:
            raise ValueError(f"the fused objective does not apply: {reason}")
        self.model, self.likelihood, self.num_data = model, likelihood, int(num_data)
        self.kernel = model.covar_module.base_kernel
        self.eager_function, self.what, self.compiled = function, what, bool(compile)
        self.function = torch.compile(function, dynamic=True) if compile else function
        self.status = torch.zeros(status_size, dtype=torch.long)

    def _batch_bags(self, x: Tensor | np.ndarray, word_weights: np.ndarray | None) -> DocumentBags:
        """A batch's bags, built on the host (a NumPy batch: no operator at all)."""
        ids = x if isinstance(x, np.ndarray) else x.cpu().numpy()
        return document_bags(ids, word_weights, self.kernel.num_words)

    @staticmethod
    def _packed(device: torch.device, ints: np.ndarray, floats: np.ndarray) -> tuple[Tensor, Tensor]:
        """A step's table packed in two tensors (integers, floats) on ``device``: two tensors a step to make
        from NumPy and, on a GPU, to copy."""
        packed = torch.from_numpy(ints), torch.from_numpy(floats)
        if device.type != "cpu":
            return packed[0].to(device, non_blocking=True), packed[1].to(device, non_blocking=True)
        return packed

    def usable(self, stacklevel: int = 2) -> bool:
        """Whether the last call's values can be used: ``False`` where a Cholesky factorization failed
        (the caller takes the step again through the eager objective); gpytorch's ``NumericalWarning``
        where variances were floored."""
        floored, *infos = (int(v) for v in self.status.tolist())
        if floored:
            floor = gpytorch.settings.min_variance.value(torch.float64)
            warnings.warn(f"Negative variance values detected; rounded up to {floor}", NumericalWarning, stacklevel)
        return not any(infos)

    def _evaluate(self, args: tuple) -> Tensor:
        """The loss of ``self.function(*args)``, its status kept; a failed compile warns and computes it
        eagerly from then on."""
        if self.compiled:
            try:
                # the Python floats (rho, the jitters, the bounds) as constants of the graph, not inputs:
                # dynamo would otherwise make a tensor of each at every call
                with torch._dynamo.config.patch(specialize_float=True):
                    loss, self.status = self.function(*args)
                return loss
            except Exception as err:  # noqa: BLE001 - any backend failure: the same function, eagerly
                self.compiled, self.function = False, self.eager_function
                warnings.warn(
                    f"torch.compile of the fused {self.what} step failed ({type(err).__name__}: {str(err)[:200]}); "
                    "computing it eagerly (the same values, more operators a step)",
                    PerformanceWarning,
                    stacklevel=4,
                )
        loss, self.status = self.function(*args)
        return loss


class FusedSparseObjective(_CompiledObjective):
    """The training objective of a sparse GP-LVSM whose model :func:`unsupported` accepts, as
    :func:`fused_objective` (eager, or ``torch.compile``'d with ``compile=True``): ``objective(x, y)``
    for a batch of padded documents ``x`` (``B x L``, a tensor or a NumPy array on the host: its bags are
    built there) and targets ``y`` (``B``, on the model's device) is minus the ELBO per datum, the value
    and gradients of the eager step (:mod:`lvgp.models.sparse`'s objective with one draw of the word vectors, drawn here by the
    module's own :meth:`~lvgp.kernels.word_vectors.VariationalWordVectors.one_sample`).

    The inducing documents' table and bag-of-words cosines are built once; a batch's on each call.
    After a call, :meth:`usable` reads its status (one read, after the loss's: no further wait on a GPU):
    floored variances warn as gpytorch's; a failed Cholesky factorization (where the eager step's
    ``psd_safe_cholesky`` would add jitter, or raise) makes the step's values unusable."""

    def __init__(self, model: Any, likelihood: Any, num_data: int, compile: bool = False) -> None:
        reason = unsupported(model, likelihood)
        super().__init__(model, likelihood, num_data, reason, packed_objective, "sparse", compile, status_size=3)
        self.vectors = self.kernel.word_vectors
        table = self.kernel.word_weights
        if table is not None and self.kernel.num_words > len(table):  # as the kernel extends it
            table = torch.cat([table, table.max().expand(self.kernel.num_words - len(table))])
        self._word_weights = None if table is None else table.detach().cpu().to(torch.float64).numpy()
        strategy = model.variational_strategy
        self._inducing = document_bags(
            strategy.inducing_points.cpu().numpy(), self._word_weights, self.kernel.num_words
        )
        self._z_bow = bag_of_words_cosines(self._inducing)
        noise_covar, vectors = likelihood.noise_covar, self.vectors
        constraints = (
            vectors.raw_latent_scale_constraint,
            self.kernel.raw_identity_weight_constraint,
            model.covar_module.raw_outputscale_constraint,
            noise_covar.raw_noise_constraint,
        )
        bounds = [_softplus_transform(c) for c in constraints]
        self._bounds: tuple[float, float, float, float] = tuple(float(b or 0.0) for b in bounds)  # type: ignore[assignment]
        self._gamma = self.kernel.embedding.gamma.detach().reshape(())  # not learned (unsupported() checks)
        self._rho = float(vectors.rho)  # read once: a read at every step would wait for a GPU's queue
        self._tables: tuple[torch.device, Tensor] | None = None

    def _inducing_on(self, device: torch.device) -> Tensor:
        """The inducing documents' bag-of-words cosines on ``device``, moved there once."""
        if self._tables is None or self._tables[0] != device:
            self._tables = (device, torch.from_numpy(self._z_bow).to(device))
        return self._tables[1]

    def __call__(self, x: Tensor | np.ndarray, y: Tensor, generator: torch.Generator | None = None) -> Tensor:
        device = y.device
        batch = self._batch_bags(x, self._word_weights)
        words, local, offsets, weights, floor = step_table(self._inducing, batch)
        # the batch's table in two arrays (integers, floats), split inside packed_objective
        ints, floats = self._packed(device, np.concatenate([words, local, offsets]), np.concatenate([weights, floor]))
        nnz, m = len(local), len(self._inducing.offsets)
        if cosines_on_device(device, len(offsets), len(words)):
            zx_bow = table_cosines(
                ints[len(words) : len(words) + nnz], ints[len(words) + nnz :], floats[:nnz], m, len(words)
            )
        else:
            zx_bow = torch.from_numpy(bag_of_words_cosines(self._inducing, batch)).to(device)
        covar, kernel, strategy = self.model.covar_module, self.kernel, self.model.variational_strategy
        q = strategy._variational_distribution
        vectors, noise_covar = self.vectors, self.likelihood.noise_covar
        with vectors.one_sample(generator):
            noise = vectors.latent_noise
        parameters = (
            vectors.raw_latent,
            vectors.raw_latent_scale,
            noise,
            self._rho,
            self._gamma,
            kernel.landmarks,
            float(kernel.jitter),
            kernel.raw_identity_weight,
            covar.raw_outputscale,
            self.model.mean_module.raw_constant,
            noise_covar.raw_noise,
            self._bounds,
            q.variational_mean,
            q.chol_variational_covar,
            float(strategy.jitter_val),
        )
        min_variance = gpytorch.settings.min_variance.value(torch.float64)
        args = (
            parameters,
            ints,
            floats,
            len(words),
            nnz,
            self._inducing_on(device),
            zx_bow,
            y,
            self.num_data,
            min_variance,
        )
        return self._evaluate(args)


# ------------------------------------------------------------------ the variational GP classifier's step


def unsupported_classifier(model: Any, likelihood: Any) -> str | None:
    """Why the fused objective cannot take the variational classifier's step (``None``: it can): the
    :class:`~lvgp.models.gpc.models.LDKClassificationGP` of more than two classes (``C`` whitened SVGPs with a
    natural-parameter ``q(v)``) under gpytorch's ``SoftmaxLikelihood`` without mixing weights, with the
    classifier's default kernel with a Nystrom map (MAP word vectors, the RBF embedding kernel of a fixed
    bandwidth, the linear level 2, no bag-of-words part), unbatched, in float64."""
    from gpytorch.likelihoods import SoftmaxLikelihood
    from gpytorch.variational import IndependentMultitaskVariationalStrategy, NaturalVariationalDistribution

    from ..kernels.level2 import LinearLevel2
    from ..kernels.word_vectors import MAPWordVectors

    multitask = getattr(model, "variational_strategy", None)
    if type(multitask) is not IndependentMultitaskVariationalStrategy:
        return "the model's strategy is not an IndependentMultitaskVariationalStrategy (a binary classifier's probit)"
    strategy = getattr(multitask, "base_variational_strategy", None)
    if type(strategy) is not PaddedVariationalStrategy:
        return "the classes' strategy is not lvgp's PaddedVariationalStrategy"
    if not isinstance(strategy._variational_distribution, NaturalVariationalDistribution):
        return "the variational distribution is not a NaturalVariationalDistribution"
    if type(likelihood) is not SoftmaxLikelihood or likelihood.mixing_weights is not None:
        return "the likelihood is not a SoftmaxLikelihood without mixing weights"
    mean = model.mean_module
    if type(mean) is not ConstantMean or mean.constant is not mean.raw_constant:
        return "the mean is not an unconstrained constant per class"
    covar = model.covar_module
    if type(covar) is not ScaleKernel:
        return "the covariance is not a ScaleKernel"
    kernel = covar.base_kernel
    reason = _unsupported_nystrom_kernel(kernel, LinearLevel2, "the linear one", MAPWordVectors, "MAP point estimates")
    if reason is not None:
        return reason
    if kernel.has_identity:
        return "the kernel has a bag-of-words part"
    if kernel.word_weights is not None:
        return "the kernel weighs its words (word_weights)"
    vectors = kernel.word_vectors
    priors = [(module, prior) for _, module, prior, _, _ in model.named_priors()]
    if len(priors) != 1 or priors[0][0] is not vectors or any(True for _ in likelihood.named_priors()):
        return "the model has gpytorch priors beside the word vectors' own"
    if any(True for _ in model.added_loss_terms()):
        return "the model has added loss terms"
    if _softplus_transform(covar.raw_outputscale_constraint) is None:
        return "the output scale's constraint is not softplus(raw) + a bound"
    if vectors.raw_latent.dtype != torch.float64:
        return "the model is not in float64"
    return None


class _NaturalMoments(torch.autograd.Function):
    r"""``q(v)``'s moments from its natural parameters :math:`\theta_1 = \Sigma^{-1}\mathbf m`,
    :math:`\theta_2 = -\frac12\Sigma^{-1}` (``*b x M``, ``*b x M x M``): ``(m, Sigma, log det Sigma, info)``,
    ``info`` the Cholesky factorization's of :math:`-2\theta_2` (0 where it succeeded; ``cholesky_ex``: no
    check on the host). As gpytorch's ``_NaturalToMuVarSqrt``, the backward returns the gradient with
    respect to the *expectation* parameters :math:`\eta_1 = \mathbf m`, :math:`\eta_2 = \Sigma +
    \mathbf m\mathbf m^\top` in the natural parameters' place -- the natural gradient that
    ``gpytorch.optim.NGD`` steps by: :math:`\partial/\partial\eta_2 = \partial/\partial\Sigma`,
    :math:`\partial/\partial\eta_1 = \partial/\partial\mathbf m - 2(\partial/\partial\Sigma)\mathbf m`.
    The log determinant's gradient :math:`\Sigma^{-1}` is the precision :math:`-2\theta_2` itself (no
    factorization of :math:`\Sigma`, which gpytorch takes for its Cholesky factor)."""

    @staticmethod
    def forward(ctx: Any, natural_vec: Tensor, natural_mat: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        precision = -2 * natural_mat
        chol_precision, info = torch.linalg.cholesky_ex(precision)
        eye = torch.eye(natural_mat.shape[-1], dtype=natural_mat.dtype, device=natural_mat.device)
        inverse = torch.linalg.solve_triangular(chol_precision, eye.expand_as(natural_mat), upper=False)
        sigma = inverse.mT @ inverse
        mean = (sigma @ natural_vec.unsqueeze(-1)).squeeze(-1)
        log_det = -2 * chol_precision.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        ctx.save_for_backward(mean, precision)
        ctx.mark_non_differentiable(info)
        return mean, sigma, log_det, info

    @staticmethod
    def backward(
        ctx: Any, grad_mean: Tensor, grad_sigma: Tensor, grad_log_det: Tensor, grad_info: Any
    ) -> tuple[Tensor, Tensor]:
        mean, precision = ctx.saved_tensors
        grad = 0.5 * (grad_sigma + grad_sigma.mT) + grad_log_det[..., None, None] * precision
        return grad_mean - 2 * (grad @ mean.unsqueeze(-1)).squeeze(-1), grad


def fused_softmax_objective(
    raw_latent: Tensor,
    rho: float,
    gamma: Tensor,
    landmarks: Tensor,
    jitter_landmarks: float,
    raw_outputscale: Tensor,
    outputscale_bound: float,
    constant: Tensor,
    natural_vec: Tensor,
    natural_mat: Tensor,
    jitter: float,
    words: Tensor,
    local: Tensor,
    offsets: Tensor,
    weights: Tensor,
    y: Tensor,
    draws: Tensor,
    num_data: int,
    min_variance: float,
) -> tuple[Tensor, Tensor]:
    r"""Minus the ELBO per datum of the variational classifier's batch (``()``) and its status (``4``,
    int64: the variances floored, the ``info`` of the landmarks', the classes' ``K_ZZ`` and the natural
    parameters' Cholesky factorizations), the value and gradients of
    :func:`lvgp.models.inducing.whitened_softmax_elbo` on the same ``draws`` (``S x B x C``).

    The word vectors are ``raw_latent`` (``V x q``) under the prior :math:`\mathcal N(0, \rho^{-1})`; the kernel
    (``RandomFeatureLDK`` with a Nystrom map and the linear level 2) is each document's features'
    inner product (:func:`fused_objective`'s features, without the cosine), times each class's
    ``softplus(raw_outputscale) + outputscale_bound`` (``C``, or one for all). The table (``words``,
    ``local``, ``offsets``, ``weights``: :func:`step_table`) holds the ``M`` inducing documents, then the
    batch (``B = len(y)``). Per class, ``L L^T = K_ZZ + jitter I``, ``A = L^{-1} K_ZX``, ``q(v) = N(m,
    Sigma)`` from the natural parameters (:class:`_NaturalMoments`), ``mu = constant + A^T m``, ``sigma^2 =
    diag K_XX + jitter + diag(A^T (Sigma - I) A)`` floored at ``min_variance``; the expected log-likelihood
    :math:`\frac1S\sum_s\log\mathrm{softmax}(\boldsymbol\mu_i + \boldsymbol\sigma_i\odot\boldsymbol\epsilon_{si})_{y_i}`
    averaged over the batch, minus the classes' whitened KLs and minus the vectors' log prior, both over
    ``num_data``."""
    outputscale = F.softplus(raw_outputscale) + outputscale_bound
    features, info_l = _nystrom_features(raw_latent, landmarks, gamma, jitter_landmarks, words, local, offsets, weights)
    m = natural_vec.shape[-1]
    lin = features[:m] @ features.mT  # M x (M + B)
    k_xx = features[m:].pow(2).sum(-1)
    scales = outputscale.reshape(-1, 1, 1)  # C x 1 x 1, or 1 x 1 x 1 for one output scale
    eye = torch.eye(m, dtype=lin.dtype, device=lin.device)
    chol, info = torch.linalg.cholesky_ex(scales * lin[:, :m] + jitter * eye)
    a = torch.linalg.solve_triangular(chol, scales * lin[:, m:], upper=False)  # C x M x B
    q_mean, sigma, log_det, info_q = _NaturalMoments.apply(natural_vec, natural_mat)
    mean = constant.unsqueeze(-1) + (a.mT @ q_mean.unsqueeze(-1)).squeeze(-1)  # C x B
    variance = scales.squeeze(-1) * k_xx + jitter + ((a * (sigma @ a)).sum(-2) - a.square().sum(-2))
    floored = (variance < min_variance).sum()
    variance = variance.clamp_min(min_variance)
    f = mean.mT + variance.mT.sqrt() * draws  # S x B x C
    log_p = torch.log_softmax(f, dim=-1).gather(-1, y.expand(f.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    log_likelihood = log_p.mean(0).sum(-1) / y.shape[-1]
    kl = 0.5 * (sigma.diagonal(dim1=-2, dim2=-1).sum(-1) + q_mean.square().sum(-1) - m - log_det).sum()
    log_prior = -0.5 * rho * raw_latent.square().sum() + raw_latent.numel() * 0.5 * (
        math.log(rho) - math.log(2 * math.pi)
    )
    status = torch.stack(
        [floored, info_l.to(floored.dtype), info.max().to(floored.dtype), info_q.max().to(floored.dtype)]
    )
    return -(log_likelihood - kl / num_data + log_prior / num_data), status


def packed_softmax_objective(
    parameters: tuple,
    ints: Tensor,
    weights: Tensor,
    num_distinct: int,
    y: Tensor,
    draws: Tensor,
    num_data: int,
    min_variance: float,
) -> tuple[Tensor, Tensor]:
    """:func:`fused_softmax_objective` of ``parameters`` (its first eleven arguments) and a step's table with
    its integers packed in one tensor (``ints``: the ``words`` (``num_distinct``), ``local`` (as many as
    ``weights``) and ``offsets`` of :func:`step_table` one after the other)."""
    nnz = weights.shape[0]
    words, local, offsets = ints[:num_distinct], ints[num_distinct : num_distinct + nnz], ints[num_distinct + nnz :]
    return fused_softmax_objective(*parameters, words, local, offsets, weights, y, draws, num_data, min_variance)  # type: ignore[call-arg]


class FusedClassifierObjective(_CompiledObjective):
    """The training objective of a variational GP classifier whose model :func:`unsupported_classifier`
    accepts, as :func:`fused_softmax_objective` (eager, or ``torch.compile``'d with ``compile=True``):
    ``objective(x, y, draws)`` for a batch of padded documents ``x`` (``B x L``, a NumPy array or a tensor:
    its bags are built on the host), class codes ``y`` (``B``) and the softmax ELBO's standard normal
    ``draws`` (``S x B x C``), both on the model's device, is minus the ELBO per datum, the value and
    gradients of the classifier's eager step (:func:`lvgp.models.inducing.whitened_softmax_elbo`), the
    natural parameters' gradients included. :meth:`usable` reads the status after the step as
    :class:`FusedSparseObjective`'s does; a failed factorization of the natural parameters is where the
    eager step's gpytorch conversion would add jitter or raise ``NotPSDError`` (the fit's undoing of a
    natural-gradient step)."""

    def __init__(self, model: Any, likelihood: Any, num_data: int, compile: bool = False) -> None:
        reason = unsupported_classifier(model, likelihood)
        super().__init__(
            model, likelihood, num_data, reason, packed_softmax_objective, "classifier", compile, status_size=4
        )
        self.strategy = model.variational_strategy.base_variational_strategy
        self._inducing = document_bags(self.strategy.inducing_points.cpu().numpy(), None, self.kernel.num_words)
        self._bound = float(_softplus_transform(model.covar_module.raw_outputscale_constraint) or 0.0)
        self._gamma = self.kernel.embedding.gamma.detach().reshape(())  # not learned (unsupported_classifier() checks)
        self._rho = float(self.kernel.word_vectors.rho)  # read once, not at every step

    def __call__(self, x: Tensor | np.ndarray, y: Tensor, draws: Tensor) -> Tensor:
        device = y.device
        words, local, offsets, weights, _ = step_table(self._inducing, self._batch_bags(x, None))
        ints, floats = self._packed(device, np.concatenate([words, local, offsets]), weights)
        q = self.strategy._variational_distribution
        parameters = (
            self.kernel.word_vectors.raw_latent,
            self._rho,
            self._gamma,
            self.kernel.landmarks,
            float(self.kernel.jitter),
            self.model.covar_module.raw_outputscale,
            self._bound,
            self.model.mean_module.raw_constant,
            q.natural_vec,
            q.natural_mat,
            float(self.strategy.jitter_val),
        )
        min_variance = gpytorch.settings.min_variance.value(torch.float64)
        args = (parameters, ints, floats, len(words), y, draws, self.num_data, min_variance)
        return self._evaluate(args)
