r"""GP classification with the latent distribution kernel (variational, gpytorch).

Binary: :math:`p(y=1\mid f) = \Phi(f)` (gpytorch's ``BernoulliLikelihood``, probit), one latent
GP. Multi-class: :math:`C` independent latent GPs sharing one LDK (the same word vectors, a
separate output scale and mean per class) and the softmax likelihood. Each GP is a
whitened SVGP on inducing documents (training documents, all of them when
``num_inducing >= n``; see :mod:`lvgp.models.sparse` for why inducing inputs are documents),
trained with the word vectors and the kernel parameters by maximizing the ELBO plus the
:math:`\mathcal N(0, \rho^{-1}I)` prior on the word vectors (Adam, full batch or mini-batches).
Predictive probabilities integrate the latent functions' posterior (Gauss-Hermite for the
probit, Monte Carlo for the softmax).
"""

from __future__ import annotations

import time
import warnings

import gpytorch
import numpy as np
import torch
from gpytorch.variational import CholeskyVariationalDistribution, IndependentMultitaskVariationalStrategy
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from ..bow.padded import PAD
from ..kernels import LatentDistributionKernel
from ..warnings import EmptyDocumentsWarning
from .documents import DocumentEncoder
from .numerics import exact_numerics
from .sparse import _PaddedVariationalStrategy, choose_inducing_documents

__all__ = ["LDKGPClassifier"]


class _LDKClassificationGP(gpytorch.models.ApproximateGP):
    def __init__(self, inducing: torch.Tensor, kernel: LatentDistributionKernel, n_latent: int, jitter: float = 1e-6):
        batch = torch.Size([n_latent]) if n_latent > 1 else torch.Size([])
        dist = CholeskyVariationalDistribution(inducing.shape[0], batch_shape=batch, dtype=torch.float64)
        strategy = _PaddedVariationalStrategy(self, inducing, dist, learn_inducing_locations=False, jitter_val=jitter)
        if n_latent > 1:
            strategy = IndependentMultitaskVariationalStrategy(strategy, num_tasks=n_latent)
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=batch)
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel, batch_shape=batch)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


class LDKGPClassifier(ClassifierMixin, BaseEstimator):
    """Variational GP classifier with LDK (binary probit or multi-class softmax).

    Args:
        latent_dim, rho, gamma, level2: the LDK (RBF embedding) and its prior precision.
        num_inducing: inducing documents (k-means++ seeded among the training documents).
        max_epochs, batch_size (``None``: full batch), lr: Adam.
        n_mc_samples: Monte Carlo draws of the latent functions for the softmax predictive
            probabilities (the same draws for every document, so a document's probabilities
            do not depend on what it is predicted with).
        vocabulary, num_words, random_state, verbose.

    Fitted: ``classes_``, ``model_``, ``likelihood_``, ``loss_curve_``, ``word_vectors_``.
    """

    def __init__(
        self,
        latent_dim: int = 2,
        rho: float = 1.0,
        gamma: float = 1.0,
        level2: str = "linear",
        num_inducing: int = 128,
        max_epochs: int = 200,
        batch_size: int | None = None,
        lr: float = 0.03,
        n_mc_samples: int = 256,
        vocabulary=None,
        num_words: int | None = None,
        random_state: int | None = None,
        verbose: bool = False,
    ):
        self.latent_dim = latent_dim
        self.rho = rho
        self.gamma = gamma
        self.level2 = level2
        self.num_inducing = num_inducing
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.n_mc_samples = n_mc_samples
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y):
        self.encoder_ = DocumentEncoder(self.vocabulary, self.num_words)
        x = self.encoder_.fit_transform(X, "X")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != x.shape[0]:
            raise ValueError(f"y must hold one label per document: {x.shape[0]} documents, y of shape {y.shape}")
        self.classes_, codes = np.unique(y, return_inverse=True)
        self.class_prior_ = np.bincount(codes) / len(codes)
        n_classes = len(self.classes_)
        if n_classes < 2:
            raise ValueError(f"y has a single class ({self.classes_[0]!r}); a classifier needs at least two")
        seed = int(np.random.default_rng(self.random_state).integers(2**31 - 1))
        torch.manual_seed(seed)
        idx = choose_inducing_documents(x, self.encoder_.num_words, self.num_inducing, "kmeans++", seed)
        inducing = x[idx][:, : int((x[idx] != PAD).sum(-1).max())]
        kernel = LatentDistributionKernel(
            self.encoder_.num_words, self.latent_dim, "rbf", self.level2, gamma=self.gamma, rho=self.rho, seed=seed
        )
        kernel.raw_gamma.requires_grad_(False)
        binary = n_classes == 2
        self.model_ = _LDKClassificationGP(inducing, kernel, 1 if binary else n_classes).double()
        if binary:
            self.likelihood_ = gpytorch.likelihoods.BernoulliLikelihood().double()
            targets = torch.from_numpy(codes.astype(np.float64))
        else:
            self.likelihood_ = gpytorch.likelihoods.SoftmaxLikelihood(
                num_classes=n_classes, mixing_weights=False
            ).double()
            targets = torch.from_numpy(codes)
        n = x.shape[0]
        mll = gpytorch.mlls.VariationalELBO(self.likelihood_, self.model_, num_data=n)
        opt = torch.optim.Adam(list(self.model_.parameters()) + list(self.likelihood_.parameters()), lr=self.lr)
        batch = n if self.batch_size is None else self.batch_size
        g = torch.Generator().manual_seed(seed)
        self.model_.train(), self.likelihood_.train()
        self.loss_curve_ = []
        start = time.perf_counter()
        try:
            with exact_numerics():
                for _ in tqdm(range(self.max_epochs), desc="LDK GP classifier", disable=not self.verbose):
                    perm, total = torch.randperm(n, generator=g), 0.0
                    for b in range(0, n, batch):
                        rows = perm[b : b + batch]
                        xb = x[rows][:, : max(1, int((x[rows] != PAD).sum(-1).max()))]
                        opt.zero_grad()
                        loss = -mll(self.model_(xb), targets[rows])
                        loss.backward()
                        opt.step()
                        total += loss.item() * len(rows)
                    self.loss_curve_.append(total / n)
        except KeyboardInterrupt:
            warnings.warn(f"training interrupted after {len(self.loss_curve_)} epochs", RuntimeWarning, stacklevel=2)
        self.fit_seconds_ = time.perf_counter() - start
        self.model_.eval(), self.likelihood_.eval()
        return self

    @property
    def word_vectors_(self) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.covar_module.base_kernel.latent.detach().numpy().copy()

    def predict_proba(self, X, block: int = 1024) -> np.ndarray:
        """``n x n_classes`` predictive probabilities (latent posterior integrated out); a
        document without any known word gets the training class frequencies (with a warning)."""
        check_is_fitted(self, "model_")
        x = self.encoder_.transform(X, "X")
        empty = (x == PAD).all(-1)
        out = torch.tensor(np.tile(self.class_prior_, (x.shape[0], 1)))
        if empty.any():
            warnings.warn(
                f"{int(empty.sum())} documents have no known word: given the training class frequencies",
                EmptyDocumentsWarning,
                stacklevel=2,
            )
        rows = torch.nonzero(~empty).ravel()
        # softmax: E[softmax(f)] by Monte Carlo over the per-document marginals of the C
        # independent latent GPs (what the likelihood needs; gpytorch's SoftmaxLikelihood would
        # expand the lazy multitask covariance over the samples: GBs for long documents)
        eps = torch.randn(
            self.n_mc_samples, 1, len(self.classes_), dtype=torch.float64, generator=torch.Generator().manual_seed(0)
        )
        with torch.no_grad(), exact_numerics():
            for b in range(0, len(rows), block):
                idx = rows[b : b + block]
                xb = x[idx][:, : max(1, int((x[idx] != PAD).sum(-1).max()))]
                f = self.model_(xb)
                if len(self.classes_) == 2:
                    probs = self.likelihood_(f).probs  # the probit integral is closed-form
                    out[idx] = torch.stack([1 - probs, probs], dim=-1)
                else:
                    samples = f.mean + f.variance.clamp_min(0).sqrt() * eps  # S x n x C
                    out[idx] = torch.softmax(samples, dim=-1).mean(0)
        return out.numpy()

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
