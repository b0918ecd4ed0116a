r"""Sparse variational GP-LVSM for large n (SVGP, Hensman et al. 2013, with LDK).

Model. :math:`f \sim \mathcal{GP}(\mu, \alpha^{-1} k_{\mathrm{LDK}})` over documents, Gaussian
noise, and the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)` on every latent word vector
(the GP-LVSM paper's eq. 11 prior). The GP is supported on :math:`M` inducing documents
:math:`Z` with a whitened Gaussian :math:`q(\mathbf v)`, :math:`\mathbf u = L_{ZZ}\mathbf v`
(gpytorch's ``VariationalStrategy``). Training maximizes, by mini-batch stochastic gradients,

.. math:: \frac1n\Big[\frac nB\sum_{i\in\text{batch}} \mathbb E_{q(f_i)}\log p(y_i\mid f_i)
    - \mathrm{KL}(q(\mathbf v)\,\|\,\mathcal N(0, I)) + \log p(X\mid\rho)\Big],

gpytorch's ``VariationalELBO`` with the latent-vector prior registered on the kernel: the
prior enters once per epoch's worth of data (divided by ``n`` like the KL), not once per
mini-batch, so it keeps its weight relative to the likelihood whatever the batch size.

Inducing points. LDK's inputs are word-index sets, not points of a vector space, so
inducing inputs cannot be moved by gradients. lvgp uses **fixed inducing documents whose
words' latent vectors are learned**: ``M`` training documents chosen once (k-means++ seeding
on the documents' word-frequency vectors, so that they cover the corpus, or uniformly at
random), padded to a common width. Their kernel values change during training because they
share the word vectors with every other document; their words cover the frequent
vocabulary. With all training documents as inducing points the bound is tight (the
equivalence test: the ELBO equals the exact log marginal likelihood at the optimal
:math:`q(\mathbf v)` and the predictions coincide with the exact GP-LVSM).

Cost per step: the LDK Gram of the ``M + B`` documents over their distinct words, plus the
``M x M`` Cholesky: independent of ``n``.
"""

from __future__ import annotations

import time
import warnings

import gpytorch
import numpy as np
import torch
from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from ..bow.padded import PAD, pad_to_width, padded_to_counts
from ..kernels import LatentDistributionKernel
from ..warnings import EmptyDocumentsWarning
from .documents import DocumentEncoder, check_targets_array
from .numerics import exact_numerics

__all__ = ["SparseGPLVSM", "SparseGPLVSMRegressor", "choose_inducing_documents"]


class _PaddedVariationalStrategy(VariationalStrategy):
    """``VariationalStrategy`` for padded word-index inputs: the inducing documents and the
    batch are padded to a common width before gpytorch concatenates them."""

    def forward(self, x, inducing_points, inducing_values, variational_inducing_covar=None, **kwargs):
        width = max(x.shape[-1], inducing_points.shape[-1])
        return super().forward(pad_to_width(x, width), pad_to_width(inducing_points, width), inducing_values,
                               variational_inducing_covar, **kwargs)


class SparseGPLVSM(gpytorch.models.ApproximateGP):
    """An ``ApproximateGP`` with ``ScaleKernel(LatentDistributionKernel)``, a constant mean
    and whitened inducing documents ``inducing`` (``M x L`` padded long tensor)."""

    def __init__(self, inducing: torch.Tensor, kernel: LatentDistributionKernel, jitter: float = 1e-6):
        distribution = CholeskyVariationalDistribution(inducing.shape[0], dtype=torch.float64)
        # jitter given explicitly: gpytorch would look it up by the (long) dtype of the inducing inputs
        strategy = _PaddedVariationalStrategy(self, inducing, distribution, learn_inducing_locations=False,
                                              jitter_val=jitter)
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def choose_inducing_documents(x: torch.Tensor, num_words: int, m: int, method: str, seed: int) -> np.ndarray:
    """Indices of ``m`` inducing documents among the rows of ``x`` (``n x L`` padded):
    ``"kmeans++"`` seeding on L2-normalized word-frequency vectors, or ``"random"``."""
    n = x.shape[0]
    rng = np.random.default_rng(seed)
    if m >= n:
        return np.arange(n)
    if method == "random":
        return np.sort(rng.choice(n, m, replace=False))
    if method != "kmeans++":
        raise ValueError(f"inducing must be 'kmeans++' or 'random'; got {method!r}")
    counts = padded_to_counts(x, num_words).astype(np.float64)
    norms = np.sqrt(np.asarray(counts.multiply(counts).sum(1)).ravel())
    from scipy.sparse import diags

    feats = diags(1.0 / np.maximum(norms, 1e-12)) @ counts
    chosen = [int(rng.integers(n))]
    dist = np.asarray(2 - 2 * (feats @ feats[chosen[0]].T).toarray().ravel()).clip(0)
    for _ in range(m - 1):
        p = dist / dist.sum() if dist.sum() > 0 else np.full(n, 1 / n)
        nxt = int(rng.choice(n, p=p))
        chosen.append(nxt)
        dist = np.minimum(dist, (2 - 2 * (feats @ feats[nxt].T).toarray().ravel()).clip(0))
    return np.sort(np.array(chosen))


class SparseGPLVSMRegressor(RegressorMixin, BaseEstimator):
    """Sparse variational GP-LVSM regression, trained by mini-batch SVI (Adam).

    Args:
        latent_dim, rho, embedding, level2: as for :class:`~lvgp.GPLVSMRegressor`.
        num_inducing: M inducing documents (see the module docstring), chosen by ``inducing``
            (``"kmeans++"`` or ``"random"``) among the training documents.
        batch_size: documents per step; max_epochs: passes over the data; lr: Adam step size.
        noise_init, outputscale_init: initial noise variance and output scale (standardized targets).
        vocabulary, num_words: input handling as for the exact estimator.
        random_state, verbose (tqdm progress bar over epochs).

    Fitted: ``model_``, ``likelihood_``, ``inducing_indices_``, ``loss_curve_`` (negative
    ELBO per datum and epoch), ``word_vectors_``, ``fit_seconds_``.
    Ctrl-C stops training after the current step and keeps the parameters reached.
    """

    def __init__(self, latent_dim: int = 2, rho: float = 1.0, num_inducing: int = 64, batch_size: int = 256,
                 max_epochs: int = 20, lr: float = 0.02, embedding: str = "rbf", level2: str = "linear",
                 inducing: str = "kmeans++", noise_init: float = 0.5, outputscale_init: float = 1.0,
                 vocabulary=None, num_words: int | None = None, random_state: int | None = None, verbose: bool = False):
        self.latent_dim = latent_dim
        self.rho = rho
        self.num_inducing = num_inducing
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.lr = lr
        self.embedding = embedding
        self.level2 = level2
        self.inducing = inducing
        self.noise_init = noise_init
        self.outputscale_init = outputscale_init
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.random_state = random_state
        self.verbose = verbose

    def _build(self, x: torch.Tensor, seed: int) -> None:
        self.inducing_indices_ = choose_inducing_documents(x, self.encoder_.num_words, self.num_inducing, self.inducing,
                                                           seed)
        inducing = x[self.inducing_indices_]
        inducing = inducing[:, : int((inducing != PAD).sum(-1).max())]
        kernel = LatentDistributionKernel(self.encoder_.num_words, self.latent_dim, self.embedding, self.level2,
                                          rho=self.rho, seed=seed)
        self.model_ = SparseGPLVSM(inducing, kernel).double()
        self.likelihood_ = gpytorch.likelihoods.GaussianLikelihood().double()
        self.likelihood_.noise = torch.tensor(self.noise_init, dtype=torch.float64)
        self.model_.covar_module.outputscale = torch.tensor(self.outputscale_init, dtype=torch.float64)
        # gamma is kept fixed (as in GPLVSMRegressor: the RBF embedding depends on sqrt(gamma) x only)
        if hasattr(kernel, "raw_gamma"):
            kernel.raw_gamma.requires_grad_(False)

    def fit(self, X, y):
        if self.batch_size < 1 or self.num_inducing < 1 or self.max_epochs < 1:
            raise ValueError("batch_size, num_inducing and max_epochs must be positive")
        self.encoder_ = DocumentEncoder(self.vocabulary, self.num_words)
        x = self.encoder_.fit_transform(X, "X")
        y = check_targets_array(y, x.shape[0])
        if y.ndim != 1:
            raise ValueError("SparseGPLVSMRegressor takes one target per document (y of shape n)")
        self.y_mean_, self.y_std_ = float(y.mean()), float(y.std() or 1.0)
        targets = torch.from_numpy((y - self.y_mean_) / self.y_std_)
        seed = int(np.random.default_rng(self.random_state).integers(2**31 - 1))
        torch.manual_seed(seed)
        self._build(x, seed)
        n = x.shape[0]
        mll = gpytorch.mlls.VariationalELBO(self.likelihood_, self.model_, num_data=n)
        params = [p for p in list(self.model_.parameters()) + list(self.likelihood_.parameters()) if p.requires_grad]
        opt = torch.optim.Adam(params, lr=self.lr)
        g = torch.Generator().manual_seed(seed)
        self.model_.train()
        self.likelihood_.train()
        self.loss_curve_ = []
        start = time.perf_counter()
        bar = tqdm(range(self.max_epochs), desc="sparse GP-LVSM", disable=not self.verbose)
        try:
            with exact_numerics():
                for _ in bar:
                    total, perm = 0.0, torch.randperm(n, generator=g)
                    for b in range(0, n, self.batch_size):
                        idx = perm[b: b + self.batch_size]
                        xb = x[idx]
                        xb = xb[:, : max(1, int((xb != PAD).sum(-1).max()))]
                        opt.zero_grad()
                        loss = -mll(self.model_(xb), targets[idx])
                        if not torch.isfinite(loss):
                            raise FloatingPointError(f"the ELBO became {loss.item()}; lower lr")
                        loss.backward()
                        opt.step()
                        total += loss.item() * len(idx)
                    self.loss_curve_.append(total / n)
                    bar.set_postfix(loss=f"{self.loss_curve_[-1]:.4g}")
        except KeyboardInterrupt:
            warnings.warn(f"training interrupted after {len(self.loss_curve_)} epochs", RuntimeWarning, stacklevel=2)
        self.fit_seconds_ = time.perf_counter() - start
        self.model_.eval()
        self.likelihood_.eval()
        return self

    @property
    def word_vectors_(self) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.covar_module.base_kernel.latent.detach().numpy().copy()

    def predict(self, X, return_std: bool = False, include_noise: bool = True, block: int = 1024):
        """Posterior predictive mean (and standard deviation) in the original target units.
        Documents without any known word get the prior: the constant mean and the prior
        standard deviation of an average inducing document (with an ``EmptyDocumentsWarning``)."""
        check_is_fitted(self, "model_")
        x = self.encoder_.transform(X, "X")
        empty = (x == PAD).all(-1)
        mean = torch.empty(x.shape[0], dtype=torch.float64)
        std = torch.empty(x.shape[0], dtype=torch.float64)
        rows = torch.nonzero(~empty).ravel()
        with torch.no_grad(), exact_numerics():
            for b in range(0, len(rows), block):
                idx = rows[b: b + block]
                xb = x[idx]
                xb = xb[:, : max(1, int((xb != PAD).sum(-1).max()))]
                f = self.model_(xb)
                out = self.likelihood_(f) if include_noise else f
                mean[idx], std[idx] = out.mean, out.variance.clamp_min(0).sqrt()
            if empty.any():
                warnings.warn(f"{int(empty.sum())} documents have no known word; predicted with the prior",
                              EmptyDocumentsWarning, stacklevel=2)
                z = self.model_.variational_strategy.inducing_points
                prior_var = self.model_.covar_module(z, diag=True).mean()
                mean[empty] = self.model_.mean_module.constant.detach()
                std[empty] = (prior_var + (self.likelihood_.noise.squeeze() if include_noise else 0)).sqrt()
        mean_np = mean.numpy() * self.y_std_ + self.y_mean_
        if not return_std:
            return mean_np
        return mean_np, std.numpy() * self.y_std_
