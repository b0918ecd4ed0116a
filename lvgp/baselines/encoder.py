r"""Baselines on a pretrained sentence encoder's document vectors (issue 37): what a practitioner
with a few hundred labelled texts tries first today, and its plain concatenation with tf-idf.

* :class:`EncoderLogisticRegression` -- L2 logistic regression on the encoder's vectors
  (``tfidf=False``) or on ``[tf-idf | vectors]`` (``tfidf=True``: :func:`default_tfidf`, sublinear
  term frequencies of the texts as written; both parts unit vectors, so neither dominates by scale);
  C by stratified cross-validation on the log loss inside the training texts.
* :class:`EncoderMahalanobis`, :class:`EncoderNearestNeighbor` -- the strong simple detectors of texts
  outside the training classes on the same vectors (issue 57): the Mahalanobis distance to the class
  means, the cosine to the nearest training text.
* :class:`EncoderRidge` -- ridge regression on the same features, alpha chosen on dev
  (``fit(X, y, X_val, y_val)``), as the regression study's linear baselines.
* :class:`EncoderGPRegressor` -- an exact GP with an RBF (or Matérn 5/2) kernel on the encoder's
  vectors, hyper-parameters by the marginal likelihood (L-BFGS), mean and standard deviation.

The encoders come from :mod:`lvgp.encoders.sentence` (the ``encoders`` extra); one encoder per name and
device is loaded per process and the vectors of a corpus are cached on disk, so the methods of a
study encode each text once.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import gpytorch
import numpy as np
import torch
from gpytorch.utils.warnings import GPInputWarning
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV
from sklearn.utils.validation import check_is_fitted

from .._random import sklearn_random_state
from ..base.constraints import Boolean, Instance, Integer, Options, RandomState, Real, check_params
from ..base.device import check_device, state_to_cpu
from ..base.fit_options import LBFGS, FitOptionsArgument, FitOptionsMixin
from ..base.fitting import minimize
from ..base.novelty import ProbabilityNoveltyMixin
from ..base.numerics import warn_about_fitted_noise
from ..base.splits import dev_or_folds, stratified_folds
from ..base.targets import check_labels, check_targets_array
from ..base.validation import standardization
from ..bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS
from ..encoders import ENCODERS, SentenceEncoder
from ..encoders.sentence import check_texts, resolve_encoder
from ..models.mixins import SavedParamsMixin, check_encoder_named
from ..warnings import warn

__all__ = [
    "EncoderGPRegressor",
    "EncoderLogisticRegression",
    "EncoderMahalanobis",
    "EncoderNearestNeighbor",
    "EncoderRidge",
    "default_tfidf",
    "logistic_regression_cv",
    "unfitted_tfidf",
]

_DEFAULT = "all-MiniLM-L6-v2"
#: EncoderRidge's alphas: 10^-3 ... 10^3, two a decade
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))
_SEQUENCE = Instance(list, tuple, np.ndarray, name="a sequence of positive numbers")


def default_tfidf(min_df: int | float = 1) -> TfidfVectorizer:
    """The tf-idf part that ``tfidf=True`` puts beside the encoder's vectors: scikit-learn's
    ``TfidfVectorizer`` on the texts as written, with sublinear term frequencies (``1 + log tf``),
    L2-normalized rows, every word of two letters or more but scikit-learn's English stop words, whose
    negations (:data:`~lvgp.bow.vocabulary.NEGATIONS`: *not*, *no*, *never*, ...) it keeps, and words of
    at least ``min_df`` training texts. Chosen on dev documents of two topic corpora and two sentiment
    corpora among lvgp's vocabulary (raw counts, every stop word out), scikit-learn's defaults with
    sublinear counts, and their variants (``benchmarks/tfidf_baseline_dev.py``)."""
    return TfidfVectorizer(sublinear_tf=True, min_df=min_df, stop_words=sorted(ENGLISH_STOP_WORDS_BUT_NEGATIONS))


def unfitted_tfidf(vectorizer: TfidfVectorizer | None, min_df: int | float, what: str = "the default vectorizer"):
    """An unfitted copy of a baseline's tf-idf part: :func:`default_tfidf` (``min_df``) for ``vectorizer=None``, else
    a clone of the user's ``TfidfVectorizer`` (its own ``min_df``; a ``min_df`` other than 1 beside it is a
    ``ValueError``: it would be ignored). ``what`` names the default in that error."""
    if vectorizer is None:
        return default_tfidf(min_df)
    if min_df != 1:
        raise ValueError(f"min_df={min_df!r} applies to {what}; set your vectorizer's own min_df")
    return clone(vectorizer)


def dev_tuned_ridge(
    F: Any, y: np.ndarray, dev: tuple[Any, np.ndarray] | None, alphas: Any, cv: int, random_state: Any
) -> tuple[Ridge, float, float]:
    """scikit-learn's ``Ridge`` on the features ``F`` (``n x p``, dense or sparse) and targets ``y``, alpha among
    ``alphas`` by the lowest RMSE on the ``dev`` features and targets (a ``PredefinedSplit``: the training rows never
    score), or without them by ``cv`` folds of ``F`` shuffled by ``random_state``; then refit on ``F`` alone (the
    GP-LVSM paper's protocol for its linear baselines). Returns the model, its alpha and that RMSE."""
    split, F_search, y_search = dev_or_folds(F, y, dev, cv, random_state)
    search = GridSearchCV(
        Ridge(), {"alpha": [float(a) for a in alphas]}, scoring="neg_root_mean_squared_error", cv=split, refit=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(F_search, y_search)
    best = int(np.argmax(search.cv_results_["mean_test_score"]))
    alpha = float(search.cv_results_["params"][best]["alpha"])
    return Ridge(alpha=alpha).fit(F, y), alpha, float(-search.cv_results_["mean_test_score"][best])


class _EncoderFeatures(BaseEstimator):
    """The features of the encoder baselines: the encoder's unit vectors, with ``tfidf`` beside
    L2-normalized tf-idf vectors fitted on the training texts (``True``: :func:`default_tfidf`; a
    ``TfidfVectorizer``: a clone of it)."""

    encoder: str
    tfidf: bool | TfidfVectorizer
    min_df: int | float
    device: str
    verbose: bool

    def _encoder(self) -> SentenceEncoder:
        return resolve_encoder(self.encoder, self.device)

    def _vectorizer(self) -> TfidfVectorizer:
        """An unfitted copy of the tf-idf part (``min_df`` applies to the default one alone)."""
        own = self.tfidf if isinstance(self.tfidf, TfidfVectorizer) else None
        return unfitted_tfidf(own, self.min_df, "tfidf=True's vectorizer")

    def _fit_features(self, X: list[str], unlabeled: Any = None) -> Any:
        """The training texts' features; ``unlabeled``: further texts the tf-idf part's vocabulary and
        idf are fitted on beside ``X`` (their labels, if any, are never read); ``n_unlabeled_`` counts them."""
        self.encode_seconds_ = 0.0
        extra = [] if unlabeled is None else check_texts(unlabeled, "unlabeled")
        self.n_unlabeled_ = 0
        if extra and self.tfidf is False:
            warn(
                f"{len(extra)} unlabeled texts are not used: they extend the tf-idf part's vocabulary and idf, and "
                "this model has none (tfidf=False)",
                UserWarning,
                stacklevel=4,
            )
        elif self.tfidf is not False:
            self.tfidf_ = self._vectorizer().fit(X + extra)
            self.n_unlabeled_ = len(extra)
        return self._features(X)

    def _features(self, X: list[str]) -> Any:
        start = time.perf_counter()
        vectors = self._encoder().encode(X, verbose=bool(self.verbose)).double().numpy()
        # the encoding (the model's loading included), counted apart from the fit in the studies
        self.encode_seconds_ = getattr(self, "encode_seconds_", 0.0) + time.perf_counter() - start
        if self.tfidf is False:
            return vectors
        # words the training texts did not have are no features of a bag-of-words model, by design
        return sparse.hstack([self.tfidf_.transform(X), sparse.csr_matrix(vectors)]).tocsr()


_FEATURE_CONSTRAINTS: dict[str, list] = {
    "encoder": [Options(*ENCODERS), Instance(SentenceEncoder)],
    "tfidf": [Boolean(), Instance(TfidfVectorizer)],
    "min_df": [Integer(1), Real(0, 1, open_low=True)],
    "device": [Instance(str, torch.device, name="a torch device")],
    "verbose": [Boolean()],
}


def _negative_log_loss(estimator: Any, X: Any, y: np.ndarray) -> float:
    """The CV score: minus the log loss over the model's classes (a held-out fold may lack a rare
    class, which scikit-learn's ``"neg_log_loss"`` scorer refuses)."""
    return -float(log_loss(y, estimator.predict_proba(X), labels=estimator.classes_))


def logistic_regression_cv(features: Any, y: np.ndarray, Cs: Any, random_state: int | None) -> LogisticRegression:
    """:class:`EncoderLogisticRegression`'s model of ``features``: ``LogisticRegression(max_iter=5000)`` with
    C among ``Cs`` by stratified 3-fold CV on the log loss (folds shuffled by ``random_state``); with fewer
    documents a class than two folds need, the largest C, with a ``RuntimeWarning``."""
    base = LogisticRegression(max_iter=5000)
    folds = stratified_folds(y, 3, random_state)
    if not folds:
        warn(f"too few documents per class to cross-validate; C = {max(Cs)}", RuntimeWarning, stacklevel=3)
        return base.set_params(C=float(max(Cs))).fit(features, y)
    search = GridSearchCV(
        base, {"C": [float(c) for c in Cs]}, cv=folds, scoring=_negative_log_loss, error_score="raise"
    )
    return search.fit(features, y).best_estimator_


class EncoderLogisticRegression(ProbabilityNoveltyMixin, _EncoderFeatures, ClassifierMixin):
    """Logistic regression on a pretrained sentence encoder's vectors (module docstring).

    Args:
        encoder: a name of :data:`lvgp.encoders.ENCODERS`, or a
            :class:`~lvgp.encoders.SentenceEncoder` (:func:`~lvgp.encoders.sentence.resolve_encoder`).
        tfidf: concatenate L2-normalized tf-idf vectors of the training texts' words with the encoder's
            vectors: ``True`` for :func:`default_tfidf` (``min_df``), or a ``TfidfVectorizer`` of your own
            (cloned at ``fit``; its own ``min_df``).
        Cs: the inverse regularization strengths tried by stratified 3-fold CV on the log loss
            (with fewer documents than two folds allow, the largest, with a warning).
        device: where the encoder computes.
        verbose: a progress bar over the encoder's batches of the texts its cache lacks (a first fit on a
            corpus spends most of its time there).

    Fitted: ``C_`` (``best_params_``), ``classes_``, ``model_``, ``tfidf_`` (the fitted vectorizer, with
    ``tfidf``), ``encode_seconds_`` (the time spent encoding the training texts, the encoder's loading
    included).
    """

    _parameter_constraints: dict[str, list] = {
        **_FEATURE_CONSTRAINTS,
        "Cs": [_SEQUENCE],
        "random_state": [RandomState()],
    }

    def __init__(
        self,
        encoder: str = _DEFAULT,
        *,
        tfidf: bool = False,
        min_df: int | float = 1,
        Cs=(0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0),
        device: str = "cpu",
        random_state=None,
        verbose: bool = False,
    ):
        self.encoder = encoder
        self.tfidf = tfidf
        self.min_df = min_df
        self.Cs = Cs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, unlabeled=None):
        """Fit on texts ``X`` and labels ``y``; ``unlabeled``: further texts (an active learner's pool, the
        documents to classify) that the tf-idf part's vocabulary and idf are fitted on beside ``X``: words
        of no labelled text still count in a text's norm, and the idf is estimated from more texts."""
        check_params(self)
        X = check_texts(X)
        check_labels(y, len(X))
        y = np.asarray(y)
        features = self._fit_features(X, unlabeled)
        self.model_ = logistic_regression_cv(features, y, self.Cs, sklearn_random_state(self.random_state))
        self.C_ = float(self.model_.C)
        self.best_params_ = {"C": self.C_}
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._features(check_texts(X)))

    def decision_function(self, X):
        """The logits: ``n x C`` (``n``, the positive class's, for two classes)."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._features(check_texts(X)))

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(self._features(check_texts(X)))


class _EncoderDetector(_EncoderFeatures, ClassifierMixin):
    """A classifier on the encoder's unit vectors that is first a detector of texts outside its classes."""

    tfidf = False  # the encoder's vectors alone
    min_df = 1

    def _fit_vectors(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        check_params(self)
        X = check_texts(X)
        check_labels(y, len(X))
        y = np.asarray(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        return self._fit_features(X), codes

    def _vectors(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "classes_")
        return self._features(check_texts(X))

    def predict(self, X):
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


def _precision_root(precision: np.ndarray) -> np.ndarray:
    r"""``d x d``: :math:`R = U \Lambda^{1/2}` from the eigendecomposition :math:`U \Lambda U^\top` of ``precision``
    (symmetric positive semi-definite; eigenvalues rounded below 0 are clipped), so that
    :math:`R R^\top` is the precision (a singular one, a pseudo-inverse, is fine)."""
    eigenvalues, eigenvectors = np.linalg.eigh(np.asarray(precision, dtype=np.float64))
    return eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))


def _within_class_scatter(vectors: np.ndarray, codes: np.ndarray, n_classes: int) -> tuple[np.ndarray, Any]:
    r"""The classes' mean vectors (``n_classes x d``) and the Ledoit-Wolf estimate (a fitted
    ``sklearn.covariance.LedoitWolf``) of the covariance the classes share: the within-class scatter of ``vectors``
    (``n x d``) about their classes' means, ``codes`` (``n``) the classes' positions -- the Mahalanobis detector's
    metric (Lee et al. 2018), shrunk towards a scaled identity where there are fewer texts than dimensions."""
    from sklearn.covariance import LedoitWolf

    means = np.stack([vectors[codes == c].mean(axis=0) for c in range(n_classes)])
    return means, LedoitWolf(assume_centered=True).fit(vectors - means[codes])


def _squared_mahalanobis(
    vectors: np.ndarray, means: np.ndarray, precision: np.ndarray | None = None, *, root: np.ndarray | None = None
) -> np.ndarray:
    r"""``n x C`` squared Mahalanobis distances of ``vectors`` (``n x d``) to ``means`` (``C x d``) in the metric
    ``precision`` (``d x d``, symmetric positive semi-definite), or through its square root ``root``
    (:func:`_precision_root`, computed once by a fitted detector): :math:`\|R^\top (e_i - \mu_c)\|^2`, the squared
    Euclidean distances of the mapped vectors, scikit-learn's ``euclidean_distances(squared=True)`` (matrix
    products, clipped at 0 where rounding would make a distance of a vector to itself negative)."""
    from sklearn.metrics.pairwise import euclidean_distances

    if (precision is None) == (root is None):
        raise TypeError("_squared_mahalanobis: pass exactly one of precision and root")
    root = np.asarray(_precision_root(precision) if precision is not None else root, dtype=np.float64)
    z = np.asarray(vectors, dtype=np.float64) @ root
    m = np.asarray(means, dtype=np.float64) @ root
    return euclidean_distances(z, m, squared=True)


class EncoderMahalanobis(_EncoderDetector):
    r"""The Mahalanobis detector on a sentence encoder's vectors (Lee, Lee, Lee & Shin, NeurIPS 2018;
    Podolskiy et al., AAAI 2021, found it the best out-of-scope detector on transformer features): the
    classes' mean vectors :math:`\mu_c` and one covariance :math:`\Sigma` shared by the classes (the
    within-class scatter), shrunk towards a scaled identity by Ledoit & Wolf's rule (with fewer texts
    than the encoder's dimensions the sample covariance is singular).

    * :meth:`decision_function`: ``n x C`` values :math:`-\tfrac12 (e - \mu_c)^\top \Sigma^{-1} (e - \mu_c)`;
    * :meth:`predict`: the nearest class mean in that metric; :meth:`predict_proba`: linear discriminant
      analysis's posterior, :math:`\propto \pi_c \exp(-\tfrac12 d_c^2)` with the training class frequencies;
    * :meth:`score_samples`: minus the smallest squared distance, :math:`-\min_c d_c^2` (higher: more typical).

    Args:
        encoder: a name of :data:`lvgp.encoders.ENCODERS`, or a :class:`~lvgp.encoders.SentenceEncoder`.
        device: where the encoder computes.
        verbose: a progress bar over the encoder's batches of the texts its cache lacks.

    Fitted: ``classes_``, ``means_`` (``C x d``), ``precision_`` (``d x d``), ``whitening_`` (``d x d``, :math:`R` with
    :math:`R R^\top` the precision: the scoring's map, from one eigendecomposition at fit), ``shrinkage_`` (Ledoit-Wolf's),
    ``class_prior_``, ``encode_seconds_``.
    """

    _parameter_constraints: dict[str, list] = {
        "encoder": _FEATURE_CONSTRAINTS["encoder"],
        "device": _FEATURE_CONSTRAINTS["device"],
        "verbose": _FEATURE_CONSTRAINTS["verbose"],
    }

    def __init__(self, encoder: str = _DEFAULT, *, device: str = "cpu", verbose: bool = False):
        self.encoder = encoder
        self.device = device
        self.verbose = verbose

    def fit(self, X, y):
        vectors, codes = self._fit_vectors(X, y)
        counts = np.bincount(codes, minlength=len(self.classes_))
        self.means_, scatter = _within_class_scatter(vectors, codes, len(self.classes_))
        self.precision_ = scatter.precision_
        self.whitening_ = _precision_root(self.precision_)
        self.shrinkage_ = float(scatter.shrinkage_)
        self.class_prior_ = counts / counts.sum()
        return self

    def _squared_distances(self, X: Any) -> np.ndarray:
        r"""``n x C`` squared distances :math:`(e - \mu_c)^\top \Sigma^{-1} (e - \mu_c)`, as
        :math:`\|z\|^2 - 2 z^\top m_c + \|m_c\|^2` with :math:`z = R^\top e`, :math:`m_c = R^\top \mu_c` and
        :math:`\Sigma^{-1} = R R^\top`: two matrix products, no ``n x C x d`` temporary (an intent set's
        5,500 queries of 150 classes: 0.07 s, not 2 minutes; ``benchmarks/mahalanobis_cost.py``)."""
        return _squared_mahalanobis(self._vectors(X), self.means_, root=self.whitening_)

    def decision_function(self, X):
        return -0.5 * self._squared_distances(X)

    def predict_proba(self, X):
        logits = self.decision_function(X) + np.log(self.class_prior_)
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(axis=1, keepdims=True)

    #: the score :meth:`score_samples` returns
    novelty_score = "mahalanobis"

    def score_samples(self, X):
        """``n`` novelty scores: minus the squared Mahalanobis distance to the nearest class mean."""
        return -self._squared_distances(X).min(axis=1)


class EncoderNearestNeighbor(_EncoderDetector):
    r"""The nearest-neighbour detector on a sentence encoder's unit vectors: a text is as typical as its
    cosine to the closest training text (the mean cosine to the ``n_neighbors`` closest).

    * :meth:`decision_function`: ``n x C``, each class's largest cosine to the text;
    * :meth:`predict`: the class of the closest training text;
    * :meth:`score_samples`: the mean cosine to the ``n_neighbors`` closest training texts of any class.

    Args:
        encoder: a name of :data:`lvgp.encoders.ENCODERS`, or a :class:`~lvgp.encoders.SentenceEncoder`.
        n_neighbors: how many closest training texts :meth:`score_samples` averages over (1: the nearest).
        device: where the encoder computes.
        verbose: a progress bar over the encoder's batches of the texts its cache lacks.

    Fitted: ``classes_``, ``vectors_`` (the training texts' unit vectors), ``codes_`` (their classes'
    positions in ``classes_``), ``encode_seconds_``.
    """

    _parameter_constraints: dict[str, list] = {
        "encoder": _FEATURE_CONSTRAINTS["encoder"],
        "device": _FEATURE_CONSTRAINTS["device"],
        "verbose": _FEATURE_CONSTRAINTS["verbose"],
        "n_neighbors": [Integer(1)],
    }

    def __init__(self, encoder: str = _DEFAULT, *, n_neighbors: int = 1, device: str = "cpu", verbose: bool = False):
        self.encoder = encoder
        self.n_neighbors = n_neighbors
        self.device = device
        self.verbose = verbose

    @staticmethod
    def _unit(vectors: np.ndarray) -> np.ndarray:
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def fit(self, X, y):
        vectors, self.codes_ = self._fit_vectors(X, y)
        self.vectors_ = self._unit(vectors)
        return self

    def _cosines(self, X: Any) -> np.ndarray:
        return self._unit(self._vectors(X)) @ self.vectors_.T  # n x n_train

    def decision_function(self, X):
        cosines = self._cosines(X)
        out = np.full((len(cosines), len(self.classes_)), -np.inf)
        for c in range(len(self.classes_)):
            out[:, c] = cosines[:, self.codes_ == c].max(axis=1)
        return out

    #: the score :meth:`score_samples` returns
    novelty_score = "nearest-cosine"

    def score_samples(self, X):
        """``n`` novelty scores: the mean cosine to the ``n_neighbors`` closest training texts."""
        cosines = self._cosines(X)
        k = min(int(self.n_neighbors), cosines.shape[1])
        return np.sort(cosines, axis=1)[:, -k:].mean(axis=1)


class EncoderRidge(_EncoderFeatures, RegressorMixin):
    """Ridge regression on a pretrained sentence encoder's vectors (module docstring).

    ``fit(X, y, X_val, y_val)`` chooses alpha by the RMSE on the dev texts (without them, ``cv``
    folds shuffled by ``random_state``) and refits on ``X`` only. ``tfidf``, ``min_df`` and ``verbose`` as
    :class:`EncoderLogisticRegression`'s. Fitted: ``alpha_``, ``dev_rmse_``, ``model_`` (and ``tfidf_``).
    """

    _parameter_constraints: dict[str, list] = {
        **_FEATURE_CONSTRAINTS,
        "alphas": [_SEQUENCE],
        "cv": [Integer(2)],
        "random_state": [RandomState()],
    }

    def __init__(
        self,
        encoder: str = _DEFAULT,
        *,
        tfidf: bool = False,
        min_df: int | float = 1,
        alphas=RIDGE_ALPHAS,
        cv: int = 5,
        device: str = "cpu",
        random_state=None,
        verbose: bool = False,
    ):
        self.encoder = encoder
        self.tfidf = tfidf
        self.min_df = min_df
        self.alphas = alphas
        self.cv = cv
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, X_val=None, y_val=None, unlabeled=None):
        """Fit on texts ``X`` and targets ``y``, alpha chosen on ``(X_val, y_val)`` or by CV; ``unlabeled``:
        further texts the tf-idf part's vocabulary and idf are fitted on beside ``X``."""
        check_params(self)
        X = check_texts(X)
        y = check_targets_array(y, len(X))
        if (X_val is None) != (y_val is None):
            raise ValueError("pass both X_val and y_val, or neither")
        F = self._fit_features(X, unlabeled)
        dev = None
        if X_val is not None:
            X_val = check_texts(X_val, "X_val")
            dev = (self._features(X_val), check_targets_array(y_val, len(X_val), "y_val"))
        self.model_, self.alpha_, self.dev_rmse_ = dev_tuned_ridge(F, y, dev, self.alphas, self.cv, self.random_state)
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(self._features(check_texts(X)))


class _FeatureGP(gpytorch.models.ExactGP):
    """An exact GP on feature vectors; ``batch_shape`` ``(B,)`` for ``B`` independent outputs (targets
    ``B x n``, each with its own mean, scales and noise)."""

    def __init__(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        likelihood: Any,
        base: gpytorch.kernels.Kernel,
        batch_shape: torch.Size = torch.Size(),
    ) -> None:
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=batch_shape)
        self.covar_module = gpytorch.kernels.ScaleKernel(base, batch_shape=batch_shape)

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


class EncoderGPRegressor(FitOptionsMixin, SavedParamsMixin, BaseEstimator, RegressorMixin):
    """An exact GP on a pretrained sentence encoder's unit vectors (module docstring): constant
    mean, ``ScaleKernel(RBFKernel())`` (``kernel="rbf"``) or Matérn 5/2 (``"matern"``), Gaussian
    noise; the hyper-parameters maximize the marginal likelihood (``optimizer``: ``None`` or an
    :class:`~lvgp.LBFGS`, defaults ``max_iter=200``, ``tol=1e-7``), targets
    standardized inside. ``predict(X, return_std=True)`` gives the predictive mean and the
    standard deviation of a new target (noise included). Targets ``y`` of shape ``n x B`` fit ``B``
    independent GPs at once (each its own hyper-parameters, as the GP-LVSM regressors do) and predict
    ``n x B``. Fitted: ``model_``, ``noise_``, ``lengthscale_`` (arrays of ``B`` for 2-D targets),
    ``n_iter_``, ``converged_``. ``device``: where the encoder (given by name) and the GP compute. A
    fitted noise at its floor or its ceiling is warned about
    (:func:`~lvgp.base.numerics.warn_about_fitted_noise`). ``verbose``: progress bars over the encoder's
    batches of the texts its cache lacks and over the L-BFGS iterations."""

    _optimizer_defaults = (LBFGS(max_iter=200, tol=1e-7),)
    _parameter_constraints: dict[str, list] = {
        "encoder": [Options(*ENCODERS), Instance(SentenceEncoder)],
        "kernel": [Options("rbf", "matern")],
        "optimizer": [None, FitOptionsArgument(LBFGS, name="optimizer")],
        "noise_init": [Real(1e-4, open_low=True)],
        "device": [Instance(str, torch.device, name="a torch device")],
        "verbose": [Boolean()],
    }

    def __init__(
        self,
        encoder: str = _DEFAULT,
        *,
        kernel: str = "rbf",
        optimizer: LBFGS | None = None,
        noise_init: float = 0.5,
        device="cpu",
        verbose: bool = False,
    ):
        self.encoder = encoder
        self.kernel = kernel
        self.optimizer = optimizer
        self.noise_init = noise_init
        self.device = device
        self.verbose = verbose

    def _x(self, X: Any, name: str = "X") -> torch.Tensor:
        start = time.perf_counter()
        vectors = resolve_encoder(self.encoder, self.device).encode(check_texts(X, name), verbose=bool(self.verbose))
        self.encode_seconds_ = getattr(self, "encode_seconds_", 0.0) + time.perf_counter() - start
        return vectors.double().to(self.device_)

    def fit(self, X, y, X_val=None, y_val=None):
        """Fit on texts ``X`` and targets ``y`` (``X_val``/``y_val`` are accepted and unused: the
        marginal likelihood chooses the hyper-parameters)."""
        check_params(self)
        self.device_ = check_device(self.device)
        self.encode_seconds_ = 0.0
        x = self._x(X)
        y = check_targets_array(y, x.shape[0])
        if y.ndim > 2:
            raise ValueError(f"y must be n targets or an n x B array of B outputs; got shape {y.shape}")
        self.y_mean_, self.y_std_ = standardization(y)
        standardized = (y - self.y_mean_) / self.y_std_
        batch = torch.Size(y.shape[1:])  # () or (B,): the outputs as a batch of GPs
        target = torch.as_tensor(standardized.T, dtype=torch.float64, device=self.device_)
        inputs = x.expand(*batch, *x.shape)
        model, likelihood = self._model(inputs, target, batch)
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
        model.train()

        def objective() -> torch.Tensor:
            return -mll(model(inputs), target).sum()

        with gpytorch.settings.max_cholesky_size(10**9):
            optimizer = self._optimizer_options()
            result = minimize(
                list(model.parameters()),
                objective,
                max_iter=int(optimizer.max_iter),
                tol=float(optimizer.tol),
                verbose=bool(self.verbose),
            )
        self.n_iter_, self.converged_ = result.n_iter, bool(result.converged)
        model.eval()
        self.model_, self.likelihood_ = model, likelihood
        with torch.no_grad():
            noise = likelihood.noise.reshape(batch).cpu().numpy() * self.y_std_**2
            lengthscale = model.covar_module.base_kernel.lengthscale.reshape(batch).cpu().numpy()
        self.noise_ = noise if batch else float(noise)
        self.lengthscale_ = lengthscale if batch else float(lengthscale)
        warn_about_fitted_noise(
            "EncoderGPRegressor",
            likelihood.noise,
            "Constant (or noise-free) training targets do this; otherwise the kernel on the sentence vectors "
            "interpolates the training texts, and more of them, or the encoder beside the words "
            "(GPLVSMRegressor(sentence_encoder=...)), may not",
        )
        return self

    def _model(self, inputs: torch.Tensor, target: torch.Tensor, batch: torch.Size) -> tuple[Any, Any]:
        """The GP on ``inputs`` (``*batch x n x d``) and standardized ``target`` (``*batch x n``), at
        its initial hyper-parameters, and its likelihood."""
        likelihood = gpytorch.likelihoods.GaussianLikelihood(batch_shape=batch).double()
        likelihood.noise = torch.full((*batch, 1), float(self.noise_init), dtype=torch.float64)
        base = (
            gpytorch.kernels.RBFKernel(batch_shape=batch)
            if self.kernel == "rbf"
            else gpytorch.kernels.MaternKernel(nu=2.5, batch_shape=batch)
        )
        return _FeatureGP(inputs, target, likelihood, base, batch).double().to(self.device_), likelihood

    # ------------------------------------------------------------------ persistence
    _saved_attributes = ("y_mean_", "y_std_", "n_iter_", "converged_", "noise_", "lengthscale_", "encode_seconds_")

    def _check_savable(self) -> None:
        check_encoder_named(self.encoder, "encoder")

    def _fitted_payload(self) -> dict:
        """The training texts' encoder vectors and standardized targets, the GP's state and the
        fitted attributes (a loaded regressor encodes new texts with the encoder it names)."""
        return {
            "train_inputs": state_to_cpu(self.model_.train_inputs[0]).clone(),
            "train_targets": state_to_cpu(self.model_.train_targets).clone(),
            "model": state_to_cpu(self.model_.state_dict()),
            "attributes": self._attribute_values(),
        }

    def _restore_fitted(self, payload: dict) -> None:
        self._restore_attributes(payload["attributes"])
        self.device_ = check_device(self.device)
        batch = torch.Size(np.shape(self.y_mean_))
        inputs, target = (payload[k].to(self.device_) for k in ("train_inputs", "train_targets"))
        model, likelihood = self._model(inputs, target, batch)
        model.load_state_dict(payload["model"])
        model.eval()
        self.model_, self.likelihood_ = model, likelihood

    def predict(self, X, return_std: bool = False):
        check_is_fitted(self, "model_")
        x = self._x(X)
        batch = torch.Size(np.shape(self.y_mean_))
        with (
            torch.no_grad(),
            gpytorch.settings.max_cholesky_size(10**9),
            gpytorch.settings.fast_pred_var(False),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", GPInputWarning)  # predicting at the training texts is legitimate
            pred = self.model_.likelihood(self.model_(x.expand(*batch, *x.shape)))
            mean = pred.mean.cpu().numpy().T * self.y_std_ + self.y_mean_
            std = pred.variance.clamp_min(0).sqrt().cpu().numpy().T * self.y_std_
        return (mean, std) if return_std else mean
