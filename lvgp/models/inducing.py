"""Inducing documents, shared by the sparse GP-LVSM regressor and the variational GP classifier:
the variational strategy over padded word-index sets (:class:`PaddedVariationalStrategy`), the choice
of ``M`` training documents as inducing points (:func:`choose_inducing_documents`: k-means++ on the
documents' normalized word counts, or uniform), and the kernel's approximation for the documents of
one step (:func:`step_approximation`)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import gpytorch
import numpy as np
import scipy.sparse as sp
import torch
from gpytorch.variational import (
    CholeskyVariationalDistribution,
    IndependentMultitaskVariationalStrategy,
    NaturalVariationalDistribution,
    VariationalStrategy,
)
from linear_operator.utils.cholesky import psd_safe_cholesky
from linear_operator.utils.warnings import NumericalWarning
from sklearn.cluster import kmeans_plusplus
from sklearn.preprocessing import normalize

from .._random import numpy_generator, torch_generator
from ..base.encoding import empty_rows
from ..base.fitting import log_prior
from ..bow.padded import documents_at, pad_to_common_width, pad_to_width, padded_to_counts
from ..kernels.spec import LDKSpec

try:  # gpytorch >= 1.15: the training step's predictive updates with a hand-written backward
    from gpytorch.variational.variational_strategy import ComputePredictiveUpdates as _FusedPredictiveUpdates
except ImportError:  # pragma: no cover - older gpytorch computes them by autograd, as here
    _FusedPredictiveUpdates = None

__all__ = [
    "PaddedVariationalStrategy",
    "choose_inducing_documents",
    "gaussian_predictive_marginals",
    "step_approximation",
    "gaussian_expected_log_likelihood",
    "training_blocks",
    "whitened_gaussian_elbo",
    "whitened_kl",
    "whitened_softmax_elbo",
]


class PaddedVariationalStrategy(VariationalStrategy):
    """``VariationalStrategy`` for padded word-index inputs: the inducing documents and the
    batch are padded to a common width before gpytorch concatenates them. The width never falls
    below the widest seen before (padding changes no value), so that the padded inducing documents
    keep one shape from step to step and the kernel finds their cached document set.

    gpytorch keeps ``K_ZZ``'s Cholesky factor between calls in eval mode (``_cholesky_factor``,
    cached whatever its argument), as if the kernel could not change between them. An LDK's can
    without gpytorch seeing it: a draw of variational word vectors is a new ``K_ZZ``. So the factor is
    computed afresh at every call, in eval mode as in training (one ``M x M`` Cholesky a prediction
    block). Kept, a sparse GP-LVSM's predictions paired every draw of the vectors after the first with
    the first draw's factor (at 300,000 documents and 256 inducing documents: held-out RMSE 0.928
    against 0.727)."""

    def __call__(self, x: torch.Tensor, prior: bool = False, **kwargs: Any) -> Any:
        self._clear_cache()
        return super().__call__(x, prior=prior, **kwargs)

    def forward(
        self,
        x: torch.Tensor,
        inducing_points: torch.Tensor,
        inducing_values: torch.Tensor,
        variational_inducing_covar: Any = None,
        **kwargs: Any,
    ) -> Any:
        x, inducing_points = self._padded(x, inducing_points)
        return super().forward(x, inducing_points, inducing_values, variational_inducing_covar, **kwargs)

    def _padded(self, x: torch.Tensor, inducing_points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(x.shape[-1], inducing_points.shape[-1], self.__dict__.get("_width", 0))
        self.__dict__["_width"] = width
        return pad_to_width(x, width), pad_to_width(inducing_points, width)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.__dict__.pop("_padded_inducing", None)  # kept for the inducing points before .to() / .double()
        self.__dict__.pop("_flags_seen", None)
        return super()._apply(fn, *args, **kwargs)

    def _kept_padded_inducing(self, z: torch.Tensor) -> torch.Tensor:
        """The inducing documents padded to ``z``'s width, as ``torch.long``, one tensor from step to step
        (while they and the width stay), so that the kernel finds their document set by identity: a fresh
        copy at every step is found only by comparing values, which on a GPU waits for the queue each time."""
        points, kept = self.inducing_points, self.__dict__.get("_padded_inducing")
        if kept is not None and kept[0] is points and kept[1] == points._version and kept[2].shape == z.shape:
            return kept[2]
        z = _as_kernel_input(z)
        self.__dict__["_padded_inducing"] = (points, points._version, z)
        return z

    def training_marginals(
        self,
        x: torch.Tensor,
        moments: tuple[torch.Tensor, torch.Tensor] | None = None,
        factor: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r"""The mean and variance of :math:`q(\mathbf f)` at training documents ``x`` (``B x L``): the values
        (and gradients) of ``self(x)``'s ``mean`` and ``variance`` in training, without the linear operators.
        With :math:`L L^\top = K_{ZZ} + \epsilon I`, :math:`A = L^{-1} K_{ZX}` and :math:`q(\mathbf v) =
        \mathcal N(\mathbf m, S S^\top)` (the SVGP marginals of Hensman, Fusi & Lawrence 2013, whitened
        as Matthews 2017 and gpytorch's ``VariationalStrategy``: :math:`\mathbf u = L\mathbf v`):

        .. math:: \mu_i = \mu(x_i) + (A^\top\mathbf m)_i, \qquad
            \sigma_i^2 = k(x_i, x_i) + \epsilon + (A^\top (S S^\top - I) A)_{ii},

        the variances floored at gpytorch's ``min_variance`` with its ``NumericalWarning``, as
        ``MultivariateNormal.variance`` floors them. The kernel's blocks: :func:`training_blocks`. ``moments``:
        :math:`(\mathbf m, S)` as :meth:`variational_moments` gives them (``None``: computed here); with a batch
        shape (``*b``, the classifier's classes), the marginals are ``*b x B``. ``factor``: :math:`L` as
        :meth:`inducing_factor` gives it for the kernel as it is (``K_ZZ`` is then not evaluated; ``None``:
        computed here)."""
        self.initialize_for(x)
        model = self.model
        x, z = self._padded(x, self.inducing_points)
        # the kernel's own dtype: converted once, not in each call
        x, z = _as_kernel_input(x), self._kept_padded_inducing(z)
        m = z.shape[-2]
        if factor is None:
            k_zx, k_zz, k_xx = training_blocks(model.covar_module, z, x, at_once=x.is_cuda)
            chol = self._jittered_factor(k_zz)
        else:
            k_zx, k_xx = model.covar_module(z, x).to_dense(), model.covar_module(x, diag=True)
            chol = factor
        eye = torch.eye(m, dtype=k_zx.dtype, device=k_zx.device)
        q_mean, s = self.variational_moments() if moments is None else moments
        middle = s @ s.mT - eye  # S S^T - I
        # gpytorch's own arithmetic (its fused update where it uses it: fewer inducing documents than the
        # batch), so that the gradients agree with its step to rounding, not only to the K_ZZ's conditioning
        if _FusedPredictiveUpdates is not None and m < x.shape[-2]:
            mean_update, variance_update = _FusedPredictiveUpdates.apply(chol, k_zx, middle, q_mean)
        else:
            a = torch.linalg.solve_triangular(chol, k_zx, upper=False)
            mean_update = (a.mT @ q_mean.unsqueeze(-1)).squeeze(-1)
            variance_update = (a.mT * (middle @ a).mT).sum(-1)
        mean = model.mean_module(x) + mean_update
        variance = k_xx + self.jitter_val + variance_update
        floor = gpytorch.settings.min_variance.value(variance.dtype)
        if variance.lt(floor).any():  # as gpytorch's MultivariateNormal.variance
            warnings.warn(f"Negative variance values detected; rounded up to {floor}", NumericalWarning, stacklevel=2)
            variance = variance.clamp_min(floor)
        return mean, variance

    def initialize_for(self, x: torch.Tensor) -> None:
        """gpytorch's first call on ``x`` where it has not been made: ``q(v)`` initialized from the prior (its
        draw), or an old file's strategy whitened. Its two flags are read once, then again only where they
        were written (each read waits for a GPU's queue)."""
        self._clear_cache()
        flags = (self.variational_params_initialized, self.updated_strategy)
        seen = self.__dict__.get("_flags_seen")
        if seen is None or any(kept is not f or version != f._version for (kept, version), f in zip(seen, flags)):
            if not all(bool(f.item()) for f in flags):
                self(x)
            self.__dict__["_flags_seen"] = [(f, f._version) for f in flags]

    def inducing_factor(self) -> torch.Tensor:
        r"""The lower Cholesky factor :math:`L` of :math:`K_{ZZ} + \epsilon I` (``*b x M x M``) of the inducing
        documents, for the kernel as it is (a draw of variational word vectors is a new one), as
        :meth:`training_marginals` computes it."""
        z = self.inducing_points
        z = self._kept_padded_inducing(pad_to_width(z, max(z.shape[-1], self.__dict__.get("_width", 0))))
        return self._jittered_factor(self.model.covar_module(z, z).to_dense())

    def _jittered_factor(self, k_zz: torch.Tensor) -> torch.Tensor:
        """The lower Cholesky factor of ``k_zz`` plus the strategy's jitter on the diagonal."""
        eye = torch.eye(k_zz.shape[-1], dtype=k_zz.dtype, device=k_zz.device)
        return psd_safe_cholesky(k_zz + self.jitter_val * eye)

    def variational_moments(self) -> tuple[torch.Tensor, torch.Tensor]:
        r"""The mean :math:`\mathbf m` (``*b x M``) and lower Cholesky factor :math:`S` (``*b x M x M``) of
        :math:`q(\mathbf v)`, as gpytorch's distribution makes them: a ``CholeskyVariationalDistribution``'s
        parameters, or a ``NaturalVariationalDistribution``'s natural parameters mapped by the distribution
        itself (gpytorch's map, whose backward gives the natural gradient that ``gpytorch.optim.NGD`` steps
        by)."""
        q = self._variational_distribution
        if isinstance(q, NaturalVariationalDistribution):
            # gpytorch's q(v): its mean and a CholLinearOperator of the factor, whose cholesky() is that factor
            dist = q()
            return dist.mean, dist.lazy_covariance_matrix.cholesky().to_dense()
        if not isinstance(q, CholeskyVariationalDistribution):
            raise TypeError(f"variational_moments: {type(q).__name__} is neither a Cholesky nor a natural distribution")
        return q.variational_mean, q.chol_variational_covar.tril()

    def whitened_kl(self, moments: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        r"""The KL of :math:`q(\mathbf v)` to the whitened prior (:func:`lvgp.models.inducing.whitened_kl`): the
        value of gpytorch's ``kl_divergence()`` without the linear operators (``*b``, one per batch member).
        ``moments``: as for :meth:`training_marginals`."""
        return whitened_kl(*(self.variational_moments() if moments is None else moments))


def _as_kernel_input(x: torch.Tensor) -> torch.Tensor:
    """Documents as the kernel takes them: word ids as ``torch.long``; documents packed with a sentence
    encoder's vectors (floating, :func:`~lvgp.kernels.packed.pack_documents`) as they are."""
    return x if x.dtype.is_floating_point else x.long()


def whitened_kl(mean: torch.Tensor, chol: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathrm{KL}(\mathcal N(\mathbf m, S S^\top)\,\|\,\mathcal N(0, I)) = \frac12(\|S\|_F^2 +
    \|\mathbf m\|^2 - M - 2\sum_i\log|S_{ii}|)` of ``mean`` (``*b x M``) and the lower triangle ``S`` of
    ``chol`` (``*b x M x M``): ``*b``."""
    s = chol.tril()
    log_det = s.diagonal(dim1=-2, dim2=-1).abs().log().sum(-1)
    return 0.5 * (s.square().sum((-2, -1)) + mean.square().sum(-1) - mean.shape[-1] - 2 * log_det)


def gaussian_expected_log_likelihood(
    y: torch.Tensor, mean: torch.Tensor, variance: torch.Tensor, noise: torch.Tensor
) -> torch.Tensor:
    r""":math:`\mathbb E_{\mathcal N(f_i\mid\mu_i, \sigma_i^2)}\log\mathcal N(y_i\mid f_i, \sigma_n^2) =
    -\tfrac12[((y_i - \mu_i)^2 + \sigma_i^2)/\sigma_n^2 + \log\sigma_n^2 + \log 2\pi]`, elementwise."""
    return -0.5 * (((y - mean).square() + variance) / noise + noise.log() + math.log(2 * math.pi))


def training_blocks(
    kernel: Any, z: torch.Tensor, x: torch.Tensor, at_once: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``K_ZX`` (``M x B``), ``K_ZZ`` (``M x M``) and ``diag K_XX`` (``B``) of inducing documents ``z`` and a
    batch ``x`` (padded to one width), as gpytorch's strategy evaluates them for :class:`SparseGPLVSM`:
    lazily, each block its own kernel call (the least arithmetic: a CPU's way), or ``at_once``, one Gram of
    the ``M + B`` documents sliced (about half the launches: a GPU's way,
    :meth:`lvgp.models.sparse.SparseGPLVSM.forward`)."""
    if at_once:
        m = z.shape[-2]
        full = kernel(torch.cat([z, x], dim=-2)).to_dense()
        return full[..., :m, m:], full[..., :m, :m], full[..., m:, m:].diagonal(dim1=-2, dim2=-1)
    return kernel(z, x).to_dense(), kernel(z, z).to_dense(), kernel(x, diag=True)


def whitened_gaussian_elbo(mll: gpytorch.mlls.VariationalELBO, x: torch.Tensor, y: torch.Tensor) -> Any:
    r"""``mll(mll.model(x), y)`` for a Gaussian likelihood: the terms of the whitened SVGP ELBO per datum
    (Hensman, Fusi & Lawrence 2013's bound, scaled as gpytorch's ``VariationalELBO`` scales it; with
    ``combine_terms=False`` the expected log-likelihood, the KL, the log prior and, where the model has
    them, its added losses; else their combination, as gpytorch's), from
    :meth:`PaddedVariationalStrategy.training_marginals` and the closed forms

    .. math:: \mathbb E_{q(f_i)}\log\mathcal N(y_i\mid f_i, \sigma_n^2) = -\tfrac12\Big[\frac{(y_i - \mu_i)^2
        + \sigma_i^2}{\sigma_n^2} + \log\sigma_n^2 + \log 2\pi\Big]

    and :meth:`PaddedVariationalStrategy.whitened_kl`. The same values and gradients as gpytorch's (to
    rounding: ``tests/test_sparse.py``) with fewer operators and none of the linear operators'
    bookkeeping (``benchmarks/step_anatomy.py``). Other likelihoods (a noise with a batch shape
    included), variational distributions or strategies, and ``beta != 1``, go through gpytorch's ``mll``
    as they are."""
    model, likelihood = mll.model, mll.likelihood
    strategy = _whitened_gaussian_strategy(model, likelihood, x)
    if strategy is None or mll.beta != 1.0:
        return mll(model(x), y)
    mean, variance = strategy.training_marginals(x)
    noise = likelihood.noise_covar.noise.squeeze(-1)
    log_likelihood = gaussian_expected_log_likelihood(y, mean, variance, noise).sum(-1).div(x.shape[-2])
    kl = strategy.whitened_kl().div(mll.num_data)
    added = [term.loss() for term in model.added_loss_terms()]
    added_loss = sum(added, torch.zeros_like(log_likelihood))
    prior = log_prior(mll).div(mll.num_data)  # the likelihood's and the model's, as gpytorch's mll adds them
    if mll.combine_terms:
        return log_likelihood - kl + prior - added_loss
    return (log_likelihood, kl, prior, added_loss) if added else (log_likelihood, kl, prior)


def _whitened_gaussian_strategy(model: Any, likelihood: Any, x: torch.Tensor) -> PaddedVariationalStrategy | None:
    """``model``'s strategy where its marginals at ``x`` can be computed without gpytorch's linear operators
    (:meth:`PaddedVariationalStrategy.training_marginals`): a :class:`PaddedVariationalStrategy` with a
    ``CholeskyVariationalDistribution``, a ``GaussianLikelihood`` of one noise and a ``B x L`` batch;
    ``None`` otherwise (gpytorch's path)."""
    strategy = getattr(model, "variational_strategy", None)
    if (
        type(likelihood) is not gpytorch.likelihoods.GaussianLikelihood
        or not isinstance(strategy, PaddedVariationalStrategy)
        or type(strategy._variational_distribution) is not CholeskyVariationalDistribution
        or likelihood.noise_covar.noise.numel() != 1
        or x.dim() != 2
    ):
        return None
    return strategy


def gaussian_predictive_marginals(
    model: Any,
    likelihood: Any,
    x: torch.Tensor,
    include_noise: bool = True,
    factors: list[torch.Tensor | None] | None = None,
    draw: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The predictive means and variances (``B`` each) of a sparse GP with a Gaussian likelihood at documents
    ``x`` (``B x L``): those of ``likelihood(model(x))`` (``include_noise``) or ``model(x)``, the SVGP marginals
    :math:`\mu_i = \mu(x_i) + (A^\top\mathbf m)_i` and :math:`\sigma_i^2 = k(x_i, x_i) + \epsilon +
    (A^\top(S S^\top - I)A)_{ii}` (plus :math:`\sigma_n^2`) of
    :meth:`PaddedVariationalStrategy.training_marginals`, without gpytorch's lazy kernel tensors and linear
    operators (each draw of a prediction's variational word vectors paid their bookkeeping), for a
    :class:`PaddedVariationalStrategy` with a ``CholeskyVariationalDistribution``, a ``GaussianLikelihood`` of one
    noise and a ``B x L`` batch; gpytorch's call otherwise. The same values to rounding (``tests/test_sparse.py``).
    Call under ``torch.no_grad()`` with the model in eval mode.

    ``factors``: a list whose entry ``draw`` holds ``K_ZZ``'s factor (:meth:`PaddedVariationalStrategy.inducing_factor`)
    for the kernel as it is -- the ``draw``-th draw of a prediction's word vectors -- or ``None``, then computed and
    put there: a caller keeps the list between calls while the model is unchanged and its draws are the same."""
    strategy = _whitened_gaussian_strategy(model, likelihood, x)
    if strategy is None:
        f = model(x)
        out = likelihood(f) if include_noise else f
        return out.mean, out.variance
    factor = None
    if factors is not None:
        if factors[draw] is None:
            factors[draw] = strategy.inducing_factor()
        factor = factors[draw]
    mean, variance = strategy.training_marginals(x, factor=factor)
    if include_noise:
        variance = variance + likelihood.noise_covar.noise.squeeze(-1)
    return mean, variance


def whitened_softmax_elbo(
    mll: gpytorch.mlls.VariationalELBO, x: torch.Tensor, y: torch.Tensor, draws: torch.Tensor
) -> Any:
    r"""The ELBO per datum of ``C`` whitened SVGPs (an ``IndependentMultitaskVariationalStrategy`` of a
    :class:`PaddedVariationalStrategy`, batch shape ``C``) under gpytorch's ``SoftmaxLikelihood`` (no mixing
    weights), for a batch ``x`` (``B x L``) with class codes ``y`` (``B``): the terms gpytorch's
    ``VariationalELBO`` combines (the expected log-likelihood averaged over the batch, the KL of
    :math:`q(\mathbf v)` summed over the classes and the log prior, both over ``num_data``), with the expected
    log-likelihood by Monte Carlo on each document's *marginals*

    .. math:: \mathbb E_{q(\mathbf f_i)}\log\mathrm{softmax}(\mathbf f_i)_{y_i} \approx \frac1S\sum_s
        \log\mathrm{softmax}(\boldsymbol\mu_i + \boldsymbol\sigma_i\odot\boldsymbol\epsilon_{si})_{y_i},

    ``draws`` the ``S x B x C`` standard normal :math:`\boldsymbol\epsilon` (drawn by the caller from its
    stream). The likelihood factorizes over documents, so the marginals :math:`\mathcal N(\mu_{ic},
    \sigma_{ic}^2)` (:meth:`PaddedVariationalStrategy.training_marginals`) give the same expectation as
    gpytorch's draws of the batch's joint ``B x B`` covariance (``SoftmaxLikelihood.expected_log_prob``),
    without its factorization per class and with independent errors across documents (a lower variance of
    the batch's sum). The value is minus the step's loss of the variational classifier
    (:class:`lvgp.LDKGPClassifier`, ``inference="variational"``)."""
    model, likelihood = mll.model, mll.likelihood
    multitask = getattr(model, "variational_strategy", None)
    strategy = getattr(multitask, "base_variational_strategy", None)
    if (
        type(likelihood) is not gpytorch.likelihoods.SoftmaxLikelihood
        or likelihood.mixing_weights is not None
        or not isinstance(multitask, IndependentMultitaskVariationalStrategy)
        or not isinstance(strategy, PaddedVariationalStrategy)
    ):
        raise TypeError(
            "whitened_softmax_elbo: needs a SoftmaxLikelihood without mixing weights and an "
            "IndependentMultitaskVariationalStrategy of a PaddedVariationalStrategy"
        )
    strategy.initialize_for(x)  # before the moments: the first call initializes q(v)
    moments = strategy.variational_moments()
    mean, variance = strategy.training_marginals(x, moments)  # C x B
    f = mean.mT + variance.mT.sqrt() * draws  # S x B x C
    log_p = torch.log_softmax(f, dim=-1).gather(-1, y.expand(f.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    log_likelihood = log_p.mean(0).sum(-1).div(x.shape[-2])
    kl = strategy.whitened_kl(moments).sum().div(mll.num_data / mll.beta)
    added = sum((term.loss() for term in model.added_loss_terms()), torch.zeros_like(log_likelihood))
    return log_likelihood - kl + log_prior(mll).div(mll.num_data) - added


#: k-means++ seeds among at most this many documents (or 20 per inducing document, if more): a uniform
#: sample of larger corpora. Its cost is O(n m nnz), so seeding among all of a million documents would
#: take longer than the fit (benchmarks/large_n.py)
_KMEANS_POOL = 10_000


def step_approximation(
    spec: LDKSpec, x: torch.Tensor, inducing: torch.Tensor, batch_size: int | None, seed: int
) -> str:
    r"""``approximation="auto"`` for a sparse step: the spec's one rule (:meth:`LDKSpec.approximation_for
    <lvgp.kernels.LDKSpec.approximation_for>`, exact up to ``max_exact_words`` distinct words, then Nystrom)
    applied to the documents one step evaluates the kernel on -- the ``inducing`` documents and a batch
    of ``batch_size`` training documents ``x`` (drawn with ``seed``; ``None``: a full batch, every
    document) -- rather than to the whole corpus:
    the exact step's cost is the word Gram of *those* words. One thread, 3,000 LDA documents
    (50,000-word Zipf vocabulary), 64 inducing documents, batches of 256
    (``benchmarks/sparse_auto_rule.py``, its figures in ``benchmarks/README.md``): below a few
    thousand distinct words in a step the exact step is the faster, above them Nystrom's."""
    if spec.approximation != "auto":
        return spec.approximation
    n = x.shape[0]
    generator = torch_generator(seed)
    rows = torch.randperm(n, generator=generator)[: n if batch_size is None else min(batch_size, n)].to(x.device)
    return spec.approximation_for(torch.cat(pad_to_common_width(inducing, documents_at(x, rows))))


def choose_inducing_documents(
    x: torch.Tensor, num_words: int, m: int, method: str, seed: int, features: torch.Tensor | None = None
) -> np.ndarray:
    """Indices of ``m`` inducing documents among the rows of ``x`` (``n x L`` padded):
    ``"kmeans++"`` (scikit-learn's greedy :func:`~sklearn.cluster.kmeans_plusplus` seeding on
    L2-normalized word-count vectors, so the squared distance is ``2 - 2 cos``; above
    ``max(10,000, 20 m)`` documents, among a uniform sample of that many) or ``"random"``.

    ``features``: ``n x d`` further vectors of the documents (a sentence encoder's, the packed documents'
    first columns: :func:`~lvgp.kernels.packed.pack_documents`), which the kernel reads beside the words. The
    seeding's vector of a document is then its L2-normalized counts and its L2-normalized features, side by
    side and each part scaled by :math:`1/\\sqrt 2`: the squared distance is the mean of the two parts'
    ``2 - 2 cos``, both kinds of similarity weighed alike.

    Without ``features``, padding-only rows (documents without a known word, which an estimator's
    ``on_empty="keep"`` trains on) are never chosen: the kernel of the empty set is 0 at a cosine or linear
    level 2, a zero row and column of ``K_ZZ``. The others are the candidates, chosen among as if they were
    all the rows (the same choice as on them alone); ``m`` at or above their number takes them all. With
    ``features`` every row is a candidate (its features are a point of the kernel's input)."""
    if method not in ("kmeans++", "random"):
        raise ValueError(f"inducing must be 'kmeans++' or 'random'; got {method!r}")
    if features is not None and features.shape[0] != x.shape[0]:
        raise ValueError(f"features must hold a vector a document: {features.shape[0]} rows for {x.shape[0]}")
    candidates = np.arange(x.shape[0]) if features is not None else np.flatnonzero((~empty_rows(x)).cpu().numpy())
    n = len(candidates)
    if n == 0:
        raise ValueError("the training documents hold no word: no inducing document can be chosen among them")
    if m >= n:
        return candidates
    if method == "random":
        return candidates[np.sort(numpy_generator(seed).choice(n, m, replace=False))]
    pool_size = max(_KMEANS_POOL, 20 * m)
    pool = np.arange(n) if n <= pool_size else np.sort(numpy_generator(seed).choice(n, pool_size, replace=False))
    pool = candidates[pool]
    rows = torch.from_numpy(pool)
    seeding = normalize(padded_to_counts(x[rows], num_words).astype(np.float64))
    if features is not None:
        vectors = normalize(features[rows.to(features.device)].detach().cpu().double().numpy())
        seeding = sp.hstack([seeding, sp.csr_matrix(vectors)], format="csr") / math.sqrt(2)
    _, chosen = kmeans_plusplus(_RowsFromCSR(seeding), m, random_state=seed)
    return np.sort(pool[chosen])


class _RowsFromCSR(sp.csc_matrix):
    """A CSC matrix whose row selections (``X[rows]``, a list or 1-D array) come from its CSR form:
    scikit-learn's k-means++ multiplies the candidate rows by ``X.T`` at each of its ``m - 1``
    steps, and for CSR input converts that transpose to CSR every time (most of the seeding's time);
    the transpose of a CSC matrix is CSR already, and rows are read from the CSR copy. The same
    products in the same order: the same centers to the last bit (tested against CSR input), several
    times faster (``benchmarks/README.md``)."""

    def __init__(self, arg: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(arg, *args, **kwargs)
        self._rows = arg if isinstance(arg, sp.csr_matrix) else None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (list, np.ndarray)) and np.ndim(key) == 1:
            if self._rows is None:
                self._rows = sp.csr_matrix(self)
            return self._rows[key]
        return super().__getitem__(key)
