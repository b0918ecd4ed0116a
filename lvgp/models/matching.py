r"""Cross-domain matching of bag-of-words documents with the latent distribution kernel
(thesis ch. 6).

Source words :math:`f` and target words :math:`g` get latent vectors :math:`\mathbf x_f, \mathbf y_g`
in one shared space :math:`\mathbb R^q`. A document is the kernel mean embedding of its
words' vectors (eq. 6.3) and the distance between a source and a target document is the
squared MMD (eq. 6.4)

.. math:: d(\mathbf X_i, \mathbf Y_j) = \|m(\mathbf X_i) - m(\mathbf Y_j)\|^2_{\mathcal H_k},
    \qquad k(\mathbf x, \mathbf y) = \exp(-\tfrac{\gamma}{2}\|\mathbf x - \mathbf y\|^2).

The true target of source :math:`i` is modelled by a softmax over the targets (eq. 6.5); MAP
with the Gaussian priors of eq. 6.6 minimizes (eq. 6.8)

.. math:: \mathcal L = \sum_i \Big\{ d(\mathbf X_i, \mathbf Y_i) + \log\sum_j \exp(-d(\mathbf X_i, \mathbf Y_j)) \Big\}
    + \frac\rho2\Big(\sum_f\|\mathbf x_f\|^2 + \sum_g\|\mathbf y_g\|^2\Big).

Implementation: one :class:`~lvgp.LatentDistributionKernel` over the union of the two
vocabularies (target word ids offset by the source vocabulary size; RBF embedding kernel,
linear level 2), whose :meth:`~lvgp.LatentDistributionKernel.squared_mmd` gives all
:math:`n \times n` distances through sparse products (no loop over word pairs); autograd
gives the gradients of eqs. 6.9-6.14 (checked against finite differences in the tests).
Optimization: L-BFGS on the full objective (the default, as in the thesis, for up to a few
thousand pairs), or Adam on mini-batches of ``batch_size`` pairs whose targets serve as each
other's negatives (sampled negatives; the loss is rescaled to the full data).
Initialization as in the thesis: PCA of the concatenated source and target word-frequency
matrices (a word's vector is its loading on the first ``q`` components, standardized).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.extmath import randomized_svd
from sklearn.utils.validation import check_is_fitted

from ..bow.padded import PAD
from ..bow.vocabulary import Vocabulary
from ..kernels import LatentDistributionKernel
from ..warnings import UnseenWordsWarning
from .optimize import minimize

__all__ = ["LDKMatcher", "precision_at"]


def precision_at(ranks: np.ndarray, max_r: int = 50) -> dict[int, float]:
    """Precision@R of eq. 6.15 for R = 1..max_r from the (0-based) rank of each query's
    true target: the fraction of queries whose true target is among the first R."""
    ranks = np.asarray(ranks)
    return {r: float(np.mean(ranks < r)) for r in range(1, max_r + 1)}


def _texts(X, name: str) -> list:
    if isinstance(X, str):
        raise TypeError(f"{name} must be a list of texts, not a single string")
    X = list(X)
    if not X:
        raise ValueError(f"{name} is empty")
    return X


class LDKMatcher(BaseEstimator):
    """Matching source documents to target documents (e.g. across languages) with LDK.

    Args:
        latent_dim: q.
        rho: precision of the Gaussian prior on every latent vector (0: no prior).
        gamma: RBF embedding kernel bandwidth (eq. 6.12's gamma); ``learn_gamma`` fits it too.
        batch_size: ``None`` for the full softmax with L-BFGS (default); an integer for Adam on
            mini-batches with in-batch negatives (large n).
        max_iter: L-BFGS iterations, or Adam epochs.
        lr: Adam step size.
        min_df, max_features: vocabulary filters of each side (fitted on the training texts).
        init: ``"pca"`` (the thesis) or ``"random"`` (N(0, 1/rho) draws).
        random_state, verbose.

    Fitted: ``source_vocabulary_``, ``target_vocabulary_``, ``kernel_`` (the LDK over both
    vocabularies), ``source_vectors_``/``target_vectors_`` (``V x q``), ``loss_curve_``.

    Unseen words at ranking time are dropped with a counted warning; a document left without
    known words raises a ``ValueError`` naming its row.
    """

    def __init__(
        self,
        latent_dim: int = 8,
        rho: float = 0.01,
        gamma: float = 1.0,
        learn_gamma: bool = False,
        batch_size: int | None = None,
        max_iter: int = 300,
        lr: float = 0.05,
        min_df: int = 1,
        max_features: int | None = None,
        init: str = "pca",
        random_state: int | None = None,
        verbose: bool = False,
    ):
        self.latent_dim = latent_dim
        self.rho = rho
        self.gamma = gamma
        self.learn_gamma = learn_gamma
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.lr = lr
        self.min_df = min_df
        self.max_features = max_features
        self.init = init
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ encoding
    def _encode(self, source, target) -> tuple[torch.Tensor, torch.Tensor]:
        xs = self.source_vocabulary_.encode(source, name="source_texts")
        xt = self.target_vocabulary_.encode(target, name="target_texts")
        return xs, torch.where(xt == PAD, xt, xt + len(self.source_vocabulary_))

    def _pca_init(self, source, target) -> np.ndarray:
        def frequencies(vocab, texts):
            counts = vocab.counts(texts)
            return sp.diags(1.0 / np.maximum(np.asarray(counts.sum(1)).ravel(), 1)) @ counts

        f = sp.hstack(
            [frequencies(self.source_vocabulary_, source), frequencies(self.target_vocabulary_, target)]
        ).toarray()
        f -= f.mean(0)
        q = self.latent_dim
        k = min(q, min(f.shape) - 1)
        _, _, vt = randomized_svd(f, k, random_state=0)  # only the first q components are needed
        loadings = np.zeros((f.shape[1], q))
        loadings[:, :k] = vt.T
        return loadings / (loadings.std(0, keepdims=True) + 1e-12)

    # ------------------------------------------------------------------ fit
    def fit(self, source_texts, target_texts):
        source, target = _texts(source_texts, "source_texts"), _texts(target_texts, "target_texts")
        if len(source) != len(target):
            raise ValueError(
                f"source_texts and target_texts must be aligned pairs; got {len(source)} and {len(target)}"
            )
        if len(source) < 2:
            raise ValueError("matching needs at least two training pairs")
        if self.rho < 0:
            raise ValueError(f"rho must be >= 0; got {self.rho}")
        if self.init not in ("pca", "random"):
            raise ValueError(f"init must be 'pca' or 'random'; got {self.init!r}")
        self.source_vocabulary_ = Vocabulary(min_df=self.min_df, max_features=self.max_features).fit(source)
        self.target_vocabulary_ = Vocabulary(min_df=self.min_df, max_features=self.max_features).fit(target)
        with warnings.catch_warnings():  # training words below min_df are filtered by design, not "unseen"
            warnings.simplefilter("ignore", UnseenWordsWarning)
            xs, xt = self._encode(source, target)
            init = self._pca_init(source, target) if self.init == "pca" else None
        seed = int(np.random.default_rng(self.random_state).integers(2**31 - 1))
        self.kernel_ = LatentDistributionKernel(
            len(self.source_vocabulary_) + len(self.target_vocabulary_),
            self.latent_dim,
            "rbf",
            "linear",
            gamma=self.gamma,
            rho=self.rho if self.rho > 0 else None,
            latent_init=init,
            seed=seed,
        ).double()
        if not self.learn_gamma:
            self.kernel_.raw_gamma.requires_grad_(False)
        params = [p for p in self.kernel_.parameters() if p.requires_grad]
        n = len(source)
        start = time.perf_counter()
        if self.batch_size is None:
            result = minimize(
                params,
                lambda: self._loss(xs, xt),
                method="lbfgs",
                max_iter=self.max_iter,
                verbose=self.verbose,
                desc="LDK matching",
            )
        else:
            g = torch.Generator().manual_seed(seed)
            batches = max(1, n // self.batch_size)
            order = {"perm": torch.randperm(n, generator=g), "step": 0}

            def minibatch_loss():
                if order["step"] == batches:
                    order["perm"], order["step"] = torch.randperm(n, generator=g), 0
                idx = order["perm"][order["step"] * self.batch_size : (order["step"] + 1) * self.batch_size]
                order["step"] += 1
                return self._loss(xs[idx], xt[idx], scale=n / len(idx))

            result = minimize(
                params,
                minibatch_loss,
                method="adam",
                lr=self.lr,
                max_iter=self.max_iter * batches,
                tol=0.0,
                verbose=self.verbose,
                desc="LDK matching",
            )
        self.fit_seconds_ = time.perf_counter() - start
        self.loss_curve_, self.n_iter_, self.converged_ = list(result.loss_curve), result.n_iter, result.converged
        latent = self.kernel_.latent.detach()
        self.source_vectors_ = latent[: len(self.source_vocabulary_)].numpy()
        self.target_vectors_ = latent[len(self.source_vocabulary_) :].numpy()
        return self

    def _loss(self, xs: torch.Tensor, xt: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """Eq. 6.8 (the softmax terms over the given pairs, times ``scale``)."""
        d = self.kernel_.squared_mmd(xs, xt)
        nll = (d.diagonal() + torch.logsumexp(-d, dim=1)).sum() * scale
        if self.rho > 0:
            nll = nll + 0.5 * self.rho * self.kernel_.latent.pow(2).sum()
        return nll

    # ------------------------------------------------------------------ predict
    def distances(self, source_texts, target_texts) -> np.ndarray:
        """Eq. 6.4 between every source and every target document: ``n_s x n_t``."""
        check_is_fitted(self, "kernel_")
        source, target = _texts(source_texts, "source_texts"), _texts(target_texts, "target_texts")
        xs, xt = self._encode(source, target)
        with torch.no_grad():
            return self.kernel_.squared_mmd(xs, xt).numpy()

    def rank(self, source_texts, target_texts) -> np.ndarray:
        """For every source document, the target indices from nearest to farthest: ``n_s x n_t``."""
        return np.argsort(self.distances(source_texts, target_texts), axis=1, kind="stable")

    def true_target_ranks(self, source_texts, target_texts) -> np.ndarray:
        """0-based rank of target i among all targets for source i (aligned test pairs)."""
        d = self.distances(source_texts, target_texts)
        if d.shape[0] != d.shape[1]:
            raise ValueError("true_target_ranks needs aligned pairs (as many sources as targets)")
        return (d < d.diagonal()[:, None]).sum(1)
