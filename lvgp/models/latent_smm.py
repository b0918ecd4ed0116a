r"""Latent support measure machine (thesis ch. 4, eqs. 4.18-4.23).

Documents are the kernel mean embeddings of latent word vectors (LDK, RBF embedding kernel,
linear level 2 by default); a support measure machine separates them while the word
vectors are learned. The primal (eq. 4.18) becomes the min-max problem (eq. 4.19)

.. math:: \min_{X,\theta}\ g(X,\theta),\qquad g(X,\theta) = \max_{A}\ \sum_i a_i
    - \tfrac12\sum_{ij} a_i a_j y_i y_j K(m(X_i), m(X_j)) + \tfrac\rho2\sum_t\|\mathbf x_t\|^2,
    \quad 0\le a_i\le C,\ \sum_i a_i y_i = 0.

For fixed :math:`X, \theta` the inner maximization is the SVM dual (eq. 4.20; scikit-learn's
``SVC(kernel="precomputed")``, i.e. LIBSVM as in the thesis). For fixed :math:`\bar A`, eq. 4.21
is minimized over :math:`X, \theta` by gradient steps (eq. 4.22; autograd through LDK). By
Danskin's theorem :math:`\nabla g = \nabla_{X,\theta} L(\bar A, X, \theta)` at the dual optimum, so each
outer iteration is a gradient step on :math:`g` itself; lvgp accepts a step only if the new
dual optimum lowers :math:`g` (halving the step otherwise), so the objective of eq. 4.19 never
increases across outer iterations (the thesis alternates without this safeguard).

Multi-class: one-versus-one (as in the thesis); the pairwise machines share the word vectors,
and :math:`g` is the sum of their dual objectives plus one prior term. Prediction (eq. 4.23):
each pair votes by the sign of its decision function; ties go to the larger summed decision value.
"""

from __future__ import annotations

import itertools
import time
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from ..bow.padded import PAD
from ..kernels import LatentDistributionKernel
from ..warnings import EmptyDocumentsWarning
from .documents import DocumentEncoder

__all__ = ["LatentSMMClassifier"]


class LatentSMMClassifier(ClassifierMixin, BaseEstimator):
    """Latent SMM.

    Args:
        latent_dim: q.  rho: weight of the L2 term on the latent vectors (eq. 4.18a).
        C: SVM box constraint.  gamma: RBF embedding bandwidth (initial value).
        learn_gamma: include gamma in the gradient steps (theta of eq. 4.21).
        level2: level-2 kernel (``"linear"`` in the thesis's experiments).
        max_outer: outer iterations (dual solve + accepted gradient step).
        step: initial step size of the gradient steps on (X, theta); halved on rejection,
            grown by 1.5 after an accepted step.
        tol: stop when the relative decrease of the objective falls below it.
        vocabulary, num_words: input handling as for the other lvgp estimators.
        random_state, verbose.

    Fitted: ``classes_``, ``objective_curve_`` (eq. 4.19 after each accepted step),
    ``word_vectors_``, ``n_iter_``, ``fit_seconds_``.
    """

    def __init__(
        self,
        latent_dim: int = 2,
        rho: float = 0.1,
        C: float = 1.0,
        gamma: float = 1.0,
        learn_gamma: bool = False,
        level2: str = "linear",
        max_outer: int = 50,
        step: float = 0.1,
        tol: float = 1e-5,
        vocabulary=None,
        num_words: int | None = None,
        random_state: int | None = None,
        verbose: bool = False,
    ):
        self.latent_dim = latent_dim
        self.rho = rho
        self.C = C
        self.gamma = gamma
        self.learn_gamma = learn_gamma
        self.level2 = level2
        self.max_outer = max_outer
        self.step = step
        self.tol = tol
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ the dual
    def _solve_duals(self, gram: np.ndarray) -> list[dict]:
        """One SVC per class pair on the precomputed Gram: support rows and a_i y_i."""
        machines = []
        for c1, c2 in self._pairs:
            rows = np.flatnonzero((self._y == c1) | (self._y == c2))
            labels = np.where(self._y[rows] == c1, 1, -1)
            svc = SVC(C=self.C, kernel="precomputed").fit(gram[np.ix_(rows, rows)], labels)
            sign = 1.0 if svc.classes_[1] == 1 else -1.0  # sklearn's dual_coef_ is for classes_[1] positive
            machines.append(
                {
                    "support": rows[svc.support_],
                    "coef": sign * svc.dual_coef_[0],
                    "intercept": sign * svc.intercept_[0],
                    "pair": (c1, c2),
                }
            )
        return machines

    def _objective(self, gram: torch.Tensor, machines: list[dict], latent: torch.Tensor) -> torch.Tensor:
        """Eq. 4.19b summed over the pairwise machines (``gram`` may carry gradients)."""
        total = 0.5 * self.rho * latent.pow(2).sum()
        for m in machines:
            coef = torch.from_numpy(m["coef"])
            sv = torch.from_numpy(m["support"])
            total = total + coef.abs().sum() - 0.5 * coef @ gram[sv][:, sv] @ coef
        return total

    def _gram(self, x: torch.Tensor) -> torch.Tensor:
        return self.kernel_(x).to_dense()

    def _params(self) -> list[torch.Tensor]:
        return [p for p in self.kernel_.parameters() if p.requires_grad]

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        if self.rho < 0 or self.C <= 0:
            raise ValueError(f"rho must be >= 0 and C > 0; got rho={self.rho}, C={self.C}")
        self.encoder_ = DocumentEncoder(self.vocabulary, self.num_words)
        x = self.encoder_.fit_transform(X, "X")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != x.shape[0]:
            raise ValueError(f"y must hold one label per document: {x.shape[0]} documents, y of shape {y.shape}")
        self.classes_, self._y = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has a single class ({self.classes_[0]!r}); a classifier needs at least two")
        self._pairs = list(itertools.combinations(range(len(self.classes_)), 2))
        seed = int(np.random.default_rng(self.random_state).integers(2**31 - 1))
        self.kernel_ = LatentDistributionKernel(
            self.encoder_.num_words, self.latent_dim, "rbf", self.level2, gamma=self.gamma, rho=None, seed=seed
        ).double()
        with torch.no_grad():  # the N(0, 1/rho) scale of the thesis's prior as the initial spread
            self.kernel_.latent = self.kernel_.latent * (1.0 / max(self.rho, 1e-2)) ** 0.5 / 3
        self.kernel_.raw_gamma.requires_grad_(self.learn_gamma)
        self._x = x
        start = time.perf_counter()
        params = self._params()
        with torch.no_grad():
            gram = self._gram(x)
        machines = self._solve_duals(gram.numpy())
        value = self._objective(gram, machines, self.kernel_.latent).item()
        self.objective_curve_, step = [value], self.step
        bar = tqdm(range(self.max_outer), desc="latent SMM", disable=not self.verbose)
        try:
            for _ in bar:
                for p in params:
                    p.grad = None
                self._objective(self._gram(x), machines, self.kernel_.latent).backward()  # eq. 4.22
                saved = [p.detach().clone() for p in params]
                grads = [p.grad.detach().clone() for p in params]
                accepted = False
                for _ in range(20):  # backtracking on g = max_A L
                    with torch.no_grad():
                        for p, s, g in zip(params, saved, grads):
                            p.copy_(s - step * g)
                        gram = self._gram(x)
                        trial = self._solve_duals(gram.numpy())
                        new_value = self._objective(gram, trial, self.kernel_.latent).item()
                    if new_value <= value:
                        accepted = True
                        break
                    step *= 0.5
                if not accepted:
                    with torch.no_grad():
                        for p, s in zip(params, saved):
                            p.copy_(s)
                    break
                decrease = (value - new_value) / max(abs(value), 1e-12)
                machines, value, step = trial, new_value, step * 1.5
                self.objective_curve_.append(value)
                bar.set_postfix(objective=f"{value:.4g}")
                if decrease < self.tol:
                    break
        except KeyboardInterrupt:
            warnings.warn(
                f"latent SMM interrupted after {len(self.objective_curve_) - 1} steps", RuntimeWarning, stacklevel=2
            )
        self.machines_ = machines
        self.n_iter_ = len(self.objective_curve_) - 1
        self.fit_seconds_ = time.perf_counter() - start
        return self

    @property
    def word_vectors_(self) -> np.ndarray:
        check_is_fitted(self, "kernel_")
        return self.kernel_.latent.detach().numpy().copy()

    # ------------------------------------------------------------------ predict
    def decision_function(self, X) -> np.ndarray:
        """Pairwise decision values (eq. 4.23 before the sign): ``n x n_pairs``, positive for
        the first class of each pair (``pairs_``)."""
        check_is_fitted(self, "machines_")
        x = self.encoder_.transform(X, "X")
        empty = (x == PAD).all(-1)
        cross = np.zeros((x.shape[0], self._x.shape[0]))
        if empty.any():  # the zero mean embedding: K(empty, .) = 0, the decision is the offset alone
            warnings.warn(
                f"{int(empty.sum())} documents have no known word: decided by the offsets b alone",
                EmptyDocumentsWarning,
                stacklevel=2,
            )
        if (~empty).any():
            with torch.no_grad():
                cross[(~empty).numpy()] = self.kernel_(x[~empty], self._x).to_dense().numpy()
        return np.stack([cross[:, m["support"]] @ m["coef"] + m["intercept"] for m in self.machines_], axis=1)

    @property
    def pairs_(self) -> list[tuple]:
        return [(self.classes_[a], self.classes_[b]) for a, b in self._pairs]

    def predict(self, X) -> np.ndarray:
        values = self.decision_function(X)
        votes = np.zeros((len(values), len(self.classes_)))
        strength = np.zeros_like(votes)
        for k, (a, b) in enumerate(self._pairs):
            win_a = values[:, k] > 0
            votes[win_a, a] += 1
            votes[~win_a, b] += 1
            strength[:, a] += values[:, k]
            strength[:, b] -= values[:, k]
        return self.classes_[np.argmax(votes + 1e-6 * np.tanh(strength), axis=1)]  # ties: summed decision values
