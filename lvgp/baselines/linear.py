"""Ridge, lasso and elastic net on bag-of-words vectors, with the regularization chosen
on a development split -- the GP-LVSM paper's linear baselines ("we choose the parameters
for these regularizers so as to minimize the prediction errors on development data"),
:class:`DevTunedLinearRegression` -- and the ridge a practitioner runs on tf-idf vectors of the texts,
:class:`TfidfRidge`."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import ElasticNet, Lasso, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.utils.validation import check_is_fitted

from ..base.constraints import Instance, Integer, Options, RandomState, Real, check_params, documents_input
from ..base.encoding import BagOfWordsInputMixin, DocumentEncoder
from ..base.splits import dev_or_folds
from ..base.targets import check_targets_array
from ..bow.padded import padded_to_counts
from ..bow.vocabulary import Vocabulary
from ..encoders.sentence import check_texts

KINDS = ("ridge", "lasso", "elasticnet")
FEATURES = ("counts", "frequencies")
_DEFAULT_ALPHAS = {
    "ridge": np.logspace(-3, 4, 15),
    "lasso": np.logspace(-5, 0, 16),
    "elasticnet": np.logspace(-5, 0, 16),
}


class DevTunedLinearRegression(BagOfWordsInputMixin, RegressorMixin, BaseEstimator):
    """Ridge, lasso or elastic net on bag-of-words vectors, regularization chosen on dev.

    Args:
        kind: ``"ridge"``, ``"lasso"`` or ``"elasticnet"``.
        alphas: regularization strengths to try (defaults per kind, log-spaced).
        l1_ratios: elastic-net mixing values to try.
        features: ``"counts"`` (the paper's ``vec(d)``) or ``"frequencies"`` (counts / length).
        vocabulary: as for :class:`~lvgp.GPLVSMRegressor`.
        num_words: as for :class:`~lvgp.GPLVSMRegressor`.
        cv: folds used to choose the regularization when ``fit`` gets no dev split.
        random_state: shuffles those folds (``None``: fresh entropy; a dev split draws nothing).

    ``fit(X, y, X_val, y_val)`` (the validation keywords of every lvgp estimator) scores every
    candidate with scikit-learn's ``GridSearchCV``: fitted on ``(X, y)`` and scored on the dev
    rows (a ``PredefinedSplit``), or ``cv`` shuffled folds of ``X`` without a dev split. The
    lowest dev RMSE wins and is refit on ``X`` only. Fitted: ``alpha_``,
    ``l1_ratio_``, ``coef_`` (one weight per word), ``intercept_``, ``dev_rmse_``,
    ``search_`` (every candidate's dev RMSE).
    """

    def __init__(
        self,
        kind: str = "ridge",
        *,
        alphas=None,
        l1_ratios=(0.1, 0.5, 0.9),
        features: str = "counts",
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        cv: int = 5,
        random_state=None,
    ):
        self.kind = kind
        self.alphas = alphas
        self.l1_ratios = l1_ratios
        self.features = features
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.cv = cv
        self.random_state = random_state

    def _features(self, x):
        counts = padded_to_counts(x, self._encoder.num_words)
        if self.features == "frequencies":
            lengths = np.asarray(counts.sum(axis=1)).ravel()
            counts = counts.multiply(1.0 / np.maximum(lengths, 1)[:, None]).tocsr()
        return counts

    def _candidates(self):
        alphas = _DEFAULT_ALPHAS[self.kind] if self.alphas is None else self.alphas
        ratios = self.l1_ratios if self.kind == "elasticnet" else (None,)
        return [(float(a), r) for a in alphas for r in ratios]

    def _make(self, alpha, ratio):
        if self.kind == "ridge":
            return Ridge(alpha=alpha)
        if self.kind == "lasso":
            return Lasso(alpha=alpha, max_iter=20000)
        return ElasticNet(alpha=alpha, l1_ratio=ratio, max_iter=20000)

    _parameter_constraints: dict[str, list] = {
        "kind": [Options(*KINDS)],
        "alphas": [None, Instance(list, tuple, np.ndarray, name="a sequence of positive numbers")],
        "l1_ratios": [Instance(list, tuple, np.ndarray, name="a sequence of numbers in (0, 1]")],
        "features": [Options(*FEATURES)],
        **documents_input(),
        "cv": [Integer(2)],
        "random_state": [RandomState()],
    }

    def fit(self, X, y, X_val=None, y_val=None):
        check_params(self)
        self._encoder = DocumentEncoder(self.vocabulary, self.num_words)
        F = self._features(self._encoder.fit_transform(X))
        y = check_targets_array(y, F.shape[0])
        self.vocabulary_ = self._encoder.vocabulary
        if (X_val is None) != (y_val is None):
            raise ValueError("pass both X_val and y_val, or neither")
        dev = None
        if X_val is not None:
            F_val = self._features(self._encoder.transform(X_val, "X_val"))
            dev = (F_val, check_targets_array(y_val, F_val.shape[0], "y_val"))
        split, F_search, y_search = dev_or_folds(F, y, dev, self.cv, self.random_state)
        candidates = self._candidates()
        search = GridSearchCV(
            self._make(*candidates[0]),
            [{"alpha": [a], **({"l1_ratio": [r]} if r is not None else {})} for a, r in candidates],
            scoring="neg_root_mean_squared_error",
            cv=split,
            refit=False,  # refit below on (X, y) only: the dev rows stay held out
            error_score="raise",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            search.fit(F_search, y_search)
        results = search.cv_results_
        self.search_ = {
            (float(p["alpha"]), p.get("l1_ratio")): float(-score)
            for p, score in zip(results["params"], results["mean_test_score"])
        }
        (self.alpha_, self.l1_ratio_), self.dev_rmse_ = min(self.search_.items(), key=lambda kv: kv[1])
        self.model_ = self._make(self.alpha_, self.l1_ratio_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.model_.fit(F, y)
        self.coef_ = self.model_.coef_
        self.intercept_ = self.model_.intercept_
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(self._features(self._encoder.transform(X)))


#: :class:`TfidfRidge`'s default alphas, 1e-5 to 1e3: on 100 training reviews the dev choice took the least of the
#: encoder baselines' grid (1e-3 to 1e3) on every split, so the grid reaches two decades further down
TFIDF_RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-5, 3, 17))


class TfidfRidge(RegressorMixin, BaseEstimator):
    """Ridge regression on tf-idf vectors of the texts as written: the bag-of-words ridge a practitioner runs,
    beside the paper's ridge on raw counts of lvgp's vocabulary (:class:`DevTunedLinearRegression`).

    Args:
        vectorizer: ``None`` for :func:`~lvgp.baselines.encoder.default_tfidf` (sublinear term frequencies,
            L2-normalized rows, scikit-learn's English stop words but the negations, words of ``min_df`` training
            texts; the tf-idf part of the encoder baselines, chosen on dev documents), or a ``TfidfVectorizer`` of
            your own (cloned at ``fit``; its own ``min_df``).
        min_df: the default vectorizer's ``min_df``.
        alphas: the regularization strengths tried (default :data:`TFIDF_RIDGE_ALPHAS`).
        cv: folds that choose alpha when ``fit`` gets no dev split.
        random_state: shuffles those folds.

    ``fit(X, y, X_val, y_val)``: the vectorizer fitted on the training texts ``X``, alpha chosen by the RMSE on the
    dev texts (or ``cv`` shuffled folds of ``X`` without them) and the ridge refit on ``X`` alone
    (:func:`~lvgp.baselines.encoder.dev_tuned_ridge`). Fitted: ``tfidf_``, ``alpha_``, ``dev_rmse_``, ``model_``.
    """

    def __init__(self, *, vectorizer=None, min_df: int | float = 1, alphas=None, cv: int = 5, random_state=None):
        self.vectorizer = vectorizer
        self.min_df = min_df
        self.alphas = alphas
        self.cv = cv
        self.random_state = random_state

    _parameter_constraints: dict[str, list] = {
        "vectorizer": [None, Instance(TfidfVectorizer)],
        "min_df": [Integer(1), Real(0, 1, open_low=True)],
        "alphas": [None, Instance(list, tuple, np.ndarray, name="a sequence of positive numbers")],
        "cv": [Integer(2)],
        "random_state": [RandomState()],
    }

    def fit(self, X, y, X_val=None, y_val=None):
        from .encoder import dev_tuned_ridge, unfitted_tfidf

        check_params(self)
        X = check_texts(X)
        y = check_targets_array(y, len(X))
        if (X_val is None) != (y_val is None):
            raise ValueError("pass both X_val and y_val, or neither")
        self.tfidf_ = unfitted_tfidf(self.vectorizer, self.min_df).fit(X)
        dev = None
        if X_val is not None:
            X_val = check_texts(X_val, "X_val")
            dev = (self.tfidf_.transform(X_val), check_targets_array(y_val, len(X_val), "y_val"))
        alphas = TFIDF_RIDGE_ALPHAS if self.alphas is None else self.alphas
        self.model_, self.alpha_, self.dev_rmse_ = dev_tuned_ridge(
            self.tfidf_.transform(X), y, dev, alphas, self.cv, self.random_state
        )
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(self.tfidf_.transform(check_texts(X)))
