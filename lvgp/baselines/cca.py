r"""CCA and kernel CCA for cross-domain matching (the baselines of thesis ch. 6, eqs. 6.1-6.2).

Both in the regularized dual form (Bach & Jordan 2002; Hardoon et al. 2004): with centred
Gram matrices :math:`K` (source) and :math:`L` (target) of the training pairs and
regularization :math:`\kappa`, the canonical directions maximize

.. math:: \frac{\boldsymbol\alpha^\top K L \boldsymbol\beta}
    {\sqrt{\boldsymbol\alpha^\top (K+\kappa I)^2\boldsymbol\alpha\ \boldsymbol\beta^\top (L+\kappa I)^2\boldsymbol\beta}};

with :math:`\mathbf a = (K+\kappa I)\boldsymbol\alpha`, :math:`\mathbf b = (L+\kappa I)\boldsymbol\beta` the
solutions are the singular vectors of :math:`R_K R_L`, :math:`R_K = K(K+\kappa I)^{-1}`, and the
canonical correlations its singular values. CCA is the linear kernel on tf-idf vectors
(the dual form costs :math:`O(n^3)` whatever the vocabulary size); KCCA uses the RBF kernel
:math:`\exp(-\gamma\|\mathbf u - \mathbf v\|^2)`. A test document is projected with its
centred kernel row, :math:`\mathbf k^\top\boldsymbol\alpha`; pairs are ranked by the cosine
distance of their projections on the first ``n_components`` directions.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils.validation import check_is_fitted

from ..base.constraints import Integer, Options, Real, check_params
from ..base.linalg import dual_cca
from ..bow.vocabulary import Vocabulary

__all__ = ["KernelCCAMatcher"]


class _Side:
    """Vocabulary, tf-idf and centred kernel of one side of the pairs."""

    def __init__(self, texts, kernel: str, gamma: float | None, min_df: int):
        self.vocabulary = Vocabulary(min_df=min_df).fit(texts)
        counts = self.vocabulary.counts(texts)
        self.tfidf = TfidfTransformer().fit(counts)
        self.train = self.tfidf.transform(counts)
        self.kernel = kernel
        if kernel == "rbf":
            if gamma is None:  # the median heuristic
                sq = euclidean_distances(self.train, squared=True)
                gamma = 1.0 / np.median(sq[np.triu_indices_from(sq, 1)])
            self.gamma = gamma
        raw = self._raw(self.train)
        self.col_means = raw.mean(0)
        self.mean = raw.mean()
        self.gram = raw - self.col_means[None, :] - self.col_means[:, None] + self.mean

    def _raw(self, x) -> np.ndarray:
        if self.kernel == "linear":
            out = x @ self.train.T
            return out.toarray() if sp.issparse(out) else np.asarray(out)
        return np.exp(-self.gamma * euclidean_distances(x, self.train, squared=True))

    def centred_rows(self, texts) -> np.ndarray:
        x = self.tfidf.transform(self.vocabulary.counts(texts))
        raw = self._raw(x)
        return raw - raw.mean(1, keepdims=True) - self.col_means[None, :] + self.mean


class KernelCCAMatcher(BaseEstimator):
    """Regularized (kernel) CCA on tf-idf vectors for matching source to target documents.

    Args:
        kernel: ``"linear"`` (CCA) or ``"rbf"`` (KCCA).
        n_components: canonical directions used for ranking.
        reg: kappa, relative to the mean eigenvalue of each centred Gram matrix.
        gamma: RBF bandwidth (``None``: 1 / median squared distance, per side).
        min_df: vocabulary filter of each side.

    Fitted: ``correlations_`` (canonical correlations, descending).
    """

    def __init__(
        self,
        kernel: str = "linear",
        *,
        n_components: int = 10,
        reg: float = 0.1,
        gamma: float | None = None,
        min_df: int = 1,
    ):
        self.kernel = kernel
        self.n_components = n_components
        self.reg = reg
        self.gamma = gamma
        self.min_df = min_df

    _parameter_constraints: dict[str, list] = {
        "kernel": [Options("linear", "rbf")],
        "n_components": [Integer(1)],
        "reg": [Real(0, open_low=True)],
        "gamma": [None, Real(0, open_low=True)],
        "min_df": [Integer(1), Real(0, 1, open_low=True)],
    }

    def fit(self, source_texts, target_texts):
        check_params(self)
        source, target = list(source_texts), list(target_texts)
        if len(source) != len(target):
            raise ValueError(
                f"source_texts and target_texts must be aligned pairs; got {len(source)} and {len(target)}"
            )
        if self.n_components < 1 or self.n_components > len(source):
            raise ValueError(f"n_components must be in [1, {len(source)}]; got {self.n_components}")
        self.source_ = _Side(source, self.kernel, self.gamma, self.min_df)
        self.target_ = _Side(target, self.kernel, self.gamma, self.min_df)
        self.alpha_, self.beta_, self.correlations_ = dual_cca(
            self.source_.gram, self.target_.gram, self.reg, self.n_components
        )
        return self

    def transform(self, source_texts=None, target_texts=None):
        """Projections on the canonical directions (``n x n_components``) of either side."""
        check_is_fitted(self, "alpha_")
        out = []
        if source_texts is not None:
            out.append(self.source_.centred_rows(list(source_texts)) @ self.alpha_)
        if target_texts is not None:
            out.append(self.target_.centred_rows(list(target_texts)) @ self.beta_)
        return out[0] if len(out) == 1 else tuple(out)

    def distances(self, source_texts, target_texts) -> np.ndarray:
        """Cosine distances between projected sources and targets: ``n_s x n_t``."""
        u, v = self.transform(source_texts, target_texts)
        u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return 1.0 - u @ v.T

    def true_target_ranks(self, source_texts, target_texts) -> np.ndarray:
        d = self.distances(source_texts, target_texts)
        return (d < d.diagonal()[:, None]).sum(1)
