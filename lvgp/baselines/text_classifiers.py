"""Text classification baselines of the covariate-embedding paper (Andrade et al. 2018,
section 3), as scikit-learn classifiers on raw texts.

* :class:`BowClassifier` -- L2 logistic regression (``model="logreg"``) or a linear SVM
  (``model="svm"``) on L2-normalized tf-idf word vectors; the SVM's probabilities are Platt's
  (sigmoids fitted by internal cross-validation), its predictions its own.
* :class:`TfidfLogisticRegression` -- L2 logistic regression on tf-idf vectors as a practitioner runs it
  today (sublinear term frequencies of the texts as written, C up to 1e4 by CV on the log loss; the
  classification study's ``logreg``, chosen on dev documents: ``benchmarks/bow_baseline_dev.py``).
* :class:`MeanEmbeddingClassifier` -- logistic regression on the mean word embedding of a
  document (Le & Mikolov's average; words without a vector skipped).
* :class:`BagOfClustersClassifier` -- k-means over the embeddings of the training words;
  a document becomes tf-idf weighted counts of its words' clusters; logistic regression.

Every regularization constant is chosen by stratified cross-validation on the training
documents (over ``Cs``; when a class has a single training document, the largest ``C``): on accuracy
for the paper's baselines, on the log loss for :class:`TfidfLogisticRegression`.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.validation import check_is_fitted

from .._random import NUMERICS_SEED, sklearn_random_state
from ..base.constraints import Embeddings, Instance, Integer, Options, RandomState, Real, check_params
from ..base.novelty import ProbabilityNoveltyMixin, decision_novelty, probability_novelty
from ..base.splits import stratified_folds
from ..base.targets import check_labels
from ..bow.vocabulary import Vocabulary
from ..warnings import EmptyDocumentsWarning, UnseenWordsWarning, warn

__all__ = [
    "BowClassifier",
    "KernelSVMClassifier",
    "TfidfLogisticRegression",
    "MeanEmbeddingClassifier",
    "BagOfClustersClassifier",
    "tuned_linear_classifier",
]


def tuned_linear_classifier(features, y: np.ndarray, model: str, Cs, random_state=None):
    """Fit logistic regression or a linear SVM with C chosen by stratified CV (accuracy)."""
    base = (
        LogisticRegression(max_iter=3000)
        if model == "logreg"
        else LinearSVC(max_iter=20000, random_state=NUMERICS_SEED)
    )
    return _grid_search(base, {"C": list(Cs)}, {"C": float(Cs[-1])}, features, y, random_state)


def platt_scaling(svm, features, y: np.ndarray, random_state=None):
    """Platt's probabilities for a fitted linear SVM: scikit-learn's ``CalibratedClassifierCV``
    (``method="sigmoid"``) over :func:`~lvgp.base.splits.stratified_folds` of the training documents
    (a clone of the SVM with its chosen C on each training part, the sigmoids on the held-out part;
    their average); with too few documents for two folds, sigmoids fitted on the training decision
    values themselves (``cv="prefit"``-like, with a warning)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    folds = stratified_folds(y, 3, sklearn_random_state(random_state))
    if not folds:
        warn(
            "too few documents per class to cross-validate Platt scaling; sigmoids fitted on the "
            "training decision values",
            RuntimeWarning,
            stacklevel=3,
        )
        return CalibratedClassifierCV(FrozenEstimator(svm), method="sigmoid").fit(features, y)
    return CalibratedClassifierCV(clone(svm), method="sigmoid", cv=folds).fit(features, y)


def _grid_search(base, grid: dict, fallback: dict, features, y: np.ndarray, random_state=None):
    """``GridSearchCV`` over :func:`~lvgp.base.splits.stratified_folds` (rare
    classes stay in training); with too few documents for two folds, ``fallback``'s
    settings, with a warning."""
    folds = stratified_folds(y, 3, sklearn_random_state(random_state))
    if not folds:
        warn(f"too few documents per class to cross-validate; using {fallback}", RuntimeWarning, stacklevel=3)
        return base.set_params(**fallback).fit(features, y)
    return GridSearchCV(base, grid, cv=folds).fit(features, y).best_estimator_


def _check_texts(X, y=None):
    """Texts as a list; ``y`` (when given: fitting) as an array of one label per text.

    Fitting rejects empty texts (``ValueError`` naming the rows). At prediction an empty
    text is the zero feature vector, so it gets the classifier's intercept-only (prior-like)
    prediction; an :class:`~lvgp.warnings.EmptyDocumentsWarning` counts them."""
    if isinstance(X, str):
        raise TypeError("X must be a list of texts, not a single string")
    X = list(X)
    bad = [i for i, t in enumerate(X) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"X: non-string documents at rows {bad[:10]}")
    empty = [i for i, t in enumerate(X) if not t.strip()]
    if empty and y is not None:
        raise ValueError(f"X: empty documents at rows {empty[:10]} (drop them before fitting)")
    if empty:
        warn(
            f"{len(empty)} of {len(X)} documents are empty (rows {empty[:10]}); they are predicted "
            "from the zero feature vector (the intercept)",
            EmptyDocumentsWarning,
            stacklevel=3,
        )
    if y is not None:
        check_labels(y, len(X))  # the shared label policy (shape, missing labels, two classes)
        y = np.asarray(y)
    return X, y


class _TextClassifier(ClassifierMixin, BaseEstimator):
    def _vocab(self, texts):
        return Vocabulary(min_df=1).fit(texts)

    def _counts(self, texts) -> sp.csr_matrix:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnseenWordsWarning)  # unseen test words: not features of a BoW model
            return self.vocabulary_.counts(texts)

    def _fit_vocabulary(self, texts) -> None:
        self.vocabulary_ = self._vocab(texts)

    def fit(self, X, y):
        check_params(self)
        X, y = _check_texts(X, y)
        self._fit_vocabulary(X)
        features = self._fit_features(X)
        self.model_ = tuned_linear_classifier(features, y, self._model_name, self.Cs, self.random_state)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        X, _ = _check_texts(X)
        features = self._features(X)
        return self.model_.predict(features)

    def decision_function(self, X):
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._features(_check_texts(X)[0]))

    @property
    def _model_name(self) -> str:
        return "logreg"

    def score_samples(self, X):
        """``n`` novelty scores of the texts ``X`` (higher: more typical of the training classes;
        :mod:`lvgp.base.novelty`): minus the predictive entropy of a probabilistic classifier, the largest
        decision value of an SVM."""
        if self._is_margin_classifier:
            return decision_novelty(self.decision_function(X))
        return probability_novelty(self.predict_proba(X), "entropy")

    #: whether the classifier is an SVM (its novelty score the largest decision value)
    _is_margin_classifier = False

    @property
    def novelty_score(self) -> str:
        """The score :meth:`score_samples` returns: ``"max-decision"`` (an SVM) or ``"entropy"``."""
        return "max-decision" if self._is_margin_classifier else "entropy"


_CS = Instance(list, tuple, np.ndarray, name="a sequence of positive numbers")


class BowClassifier(_TextClassifier):
    """Logistic regression (``model="logreg"``) or linear SVM (``"svm"``) on tf-idf vectors, C among ``Cs`` by
    stratified 3-fold CV on accuracy.

    Args:
        model: ``"logreg"`` or ``"svm"``.
        Cs: the inverse regularization strengths tried.
        vectorizer: ``None`` for the paper's features (counts of lvgp's :class:`~lvgp.Vocabulary`, ``min_df=1``:
            stop words and tokens under three letters out; ``TfidfTransformer()``), or a ``TfidfVectorizer``
            (cloned at ``fit``), e.g. :func:`~lvgp.baselines.encoder.default_tfidf` -- what the studies' linear SVM
            reads, chosen on dev documents (``benchmarks/bow_baseline_dev.py --svm``).
        random_state: shuffles the CV folds (and Platt's).

    Fitted: ``model_``, ``classes_``, ``tfidf_`` (the ``TfidfTransformer`` or the vectorizer), ``vocabulary_`` (the
    paper's features only), ``calibrated_`` (the SVM's Platt sigmoids).
    """

    _parameter_constraints: dict[str, list] = {
        "model": [Options("logreg", "svm")],
        "Cs": [_CS],
        "vectorizer": [None, Instance(TfidfVectorizer)],
        "random_state": [RandomState()],
    }

    def __init__(self, model: str = "logreg", *, Cs=(0.1, 1.0, 10.0, 100.0), vectorizer=None, random_state=None):
        self.model = model
        self.Cs = Cs
        self.vectorizer = vectorizer
        self.random_state = random_state

    def _fit_vocabulary(self, texts) -> None:
        if self.vectorizer is None:
            super()._fit_vocabulary(texts)
        else:  # the vectorizer reads the texts: no lvgp vocabulary (nor one of an earlier fit)
            self.__dict__.pop("vocabulary_", None)

    @property
    def _is_margin_classifier(self) -> bool:  # type: ignore[override]
        return self.model == "svm"

    @property
    def _model_name(self):
        if self.model not in ("logreg", "svm"):
            raise ValueError(f"model must be 'logreg' or 'svm'; got {self.model!r}")
        return self.model

    def _features(self, X):
        if self.vectorizer is not None:
            return self.tfidf_.transform(X)
        return self.tfidf_.transform(self._counts(X))

    def _fit_features(self, X):
        if self.vectorizer is not None:
            self.tfidf_ = clone(self.vectorizer).fit(X)
        else:
            self.tfidf_ = TfidfTransformer().fit(self._counts(X))
        return self._features(X)

    def fit(self, X, y):
        super().fit(X, y)
        if self.model == "svm":
            features = self._features(_check_texts(X)[0])
            self.calibrated_ = platt_scaling(self.model_, features, np.asarray(y), random_state=self.random_state)
        return self

    def predict_proba(self, X):
        """Class probabilities: logistic regression's own, or for the SVM Platt's sigmoids of its
        decision values (:func:`platt_scaling`; the SVM's predictions stay its own argmax)."""
        check_is_fitted(self, "model_")
        features = self._features(_check_texts(X)[0])
        if self.model == "svm":
            return self.calibrated_.predict_proba(features)
        return self.model_.predict_proba(features)


#: :class:`TfidfLogisticRegression`'s default C's: 0.1 ... 1e4, the encoder baselines' grid (L2-normalized tf-idf
#: rows are small features, and the paper's grid, to 100, held the CV's choice at its edge)
TFIDF_LOGREG_CS = (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)


class TfidfLogisticRegression(ProbabilityNoveltyMixin, ClassifierMixin, BaseEstimator):
    """L2 logistic regression on tf-idf vectors of the texts as written: the bag-of-words classifier a practitioner
    runs, beside the paper's (:class:`BowClassifier`: raw counts of lvgp's vocabulary, C in 0.1 ... 100 by accuracy).
    Chosen on dev documents of r8 and 20ng among the paper's and scikit-learn's pipelines (``benchmarks/README.md``,
    ``bow_baseline_dev.py``).

    Args:
        vectorizer: ``None`` for :func:`~lvgp.baselines.encoder.default_tfidf` (sublinear term frequencies,
            L2-normalized rows, scikit-learn's English stop words but the negations, words of ``min_df`` training
            texts; the tf-idf part of the encoder baselines), or a ``TfidfVectorizer`` of your own (cloned at
            ``fit``; its own ``min_df``).
        min_df: the default vectorizer's ``min_df``.
        Cs: the inverse regularization strengths tried by stratified 3-fold CV on the log loss (default
            :data:`TFIDF_LOGREG_CS`; with fewer texts a class than two folds allow, the largest, with a warning).
        random_state: shuffles the folds.

    Fitted: ``tfidf_`` (the vectorizer), ``model_`` (scikit-learn's ``LogisticRegression``), ``C_``, ``classes_``.
    ``score_samples``: minus the predictive entropy (:mod:`lvgp.base.novelty`). Texts are checked as the other text
    classifiers check them (empty texts refused at ``fit`` with their rows, counted with a warning at prediction).
    """

    _parameter_constraints: dict[str, list] = {
        "vectorizer": [None, Instance(TfidfVectorizer)],
        "min_df": [Integer(1), Real(0, 1, open_low=True)],
        "Cs": [None, _CS],
        "random_state": [RandomState()],
    }

    def __init__(self, *, vectorizer=None, min_df: int | float = 1, Cs=None, random_state=None):
        self.vectorizer = vectorizer
        self.min_df = min_df
        self.Cs = Cs
        self.random_state = random_state

    def fit(self, X, y):
        from .encoder import logistic_regression_cv, unfitted_tfidf

        check_params(self)
        X, y = _check_texts(X, y)
        self.tfidf_ = unfitted_tfidf(self.vectorizer, self.min_df).fit(X)
        Cs = TFIDF_LOGREG_CS if self.Cs is None else self.Cs
        self.model_ = logistic_regression_cv(self.tfidf_.transform(X), y, Cs, sklearn_random_state(self.random_state))
        self.C_ = float(self.model_.C)
        self.classes_ = self.model_.classes_
        return self

    def _features(self, X):
        check_is_fitted(self, "model_")
        return self.tfidf_.transform(_check_texts(X)[0])

    def predict(self, X):
        features = self._features(X)
        return self.model_.predict(features)

    def predict_proba(self, X):
        """``n x C`` class probabilities (columns in ``classes_``' order)."""
        features = self._features(X)
        return self.model_.predict_proba(features)

    def decision_function(self, X):
        """The logits: ``n x C`` (``n``, the positive class's, for two classes)."""
        features = self._features(X)
        return self.model_.decision_function(features)


class KernelSVMClassifier(_TextClassifier):
    """SVM with an RBF (``kernel="rbf"``) or quadratic polynomial (``"poly"``) kernel on
    L2-normalized tf-idf vectors (the thesis's ch. 4 baselines); C (and gamma for the RBF
    kernel) chosen by stratified cross-validation over the thesis's grids
    (C in 2^-3, 2^-1, ..., 2^7; gamma in 10^-3 ... 10^3); one-versus-one multi-class."""

    _parameter_constraints: dict[str, list] = {
        "kernel": [Options("rbf", "poly")],
        "Cs": [_CS],
        "gammas": [_CS],
        "random_state": [RandomState()],
    }
    _is_margin_classifier = True

    def __init__(
        self,
        kernel: str = "rbf",
        *,
        Cs=(0.125, 0.5, 2.0, 8.0, 32.0, 128.0),
        gammas=(1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0),
        random_state=None,
    ):
        self.kernel = kernel
        self.Cs = Cs
        self.gammas = gammas
        self.random_state = random_state

    def fit(self, X, y):
        from sklearn.svm import SVC

        check_params(self)
        X, y = _check_texts(X, y)
        self.vocabulary_ = self._vocab(X)
        self.tfidf_ = TfidfTransformer().fit(self._counts(X))
        features = self._features(X)
        base = SVC(kernel=self.kernel, degree=2, coef0=1.0, random_state=NUMERICS_SEED)  # unused: no probability=True
        grid = {"C": list(self.Cs)}
        if self.kernel == "rbf":
            grid["gamma"] = list(self.gammas)
        fallback = {"C": float(self.Cs[-1]), "gamma": "scale"}
        self.model_ = _grid_search(base, grid, fallback, features, y, self.random_state)
        self.classes_ = self.model_.classes_
        return self

    def _features(self, X):
        return self.tfidf_.transform(self._counts(X))


class _EmbeddingClassifier(_TextClassifier):
    _parameter_constraints: dict[str, list] = {
        "embeddings": [Embeddings()],
        "Cs": [_CS],
        "random_state": [RandomState()],
    }

    def _table(self):
        from ..datasets.loaders import WordEmbeddings, load_word_embeddings

        if isinstance(self.embeddings, WordEmbeddings):
            return self.embeddings
        return load_word_embeddings(self.embeddings)

    def predict_proba(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._features(_check_texts(X)[0]))


class MeanEmbeddingClassifier(_EmbeddingClassifier):
    """Logistic regression on the standardized mean of a document's word vectors; test
    words without a vector are skipped (a document with none gets the zero vector)."""

    def __init__(self, embeddings="glove-6b-50d", *, Cs=(0.01, 0.1, 1.0, 10.0), random_state=None):
        self.embeddings = embeddings
        self.Cs = Cs
        self.random_state = random_state

    def _fit_features(self, X):
        table = self._table()
        self._tokenizer = self.vocabulary_
        self._lookup = table
        self.scaler_ = StandardScaler()
        return self.scaler_.fit_transform(self._means(X))

    def _means(self, X) -> np.ndarray:
        out = np.zeros((len(X), self._lookup.vectors.shape[1]))
        for i, text in enumerate(X):
            rows = [self._lookup.index[w] for w in self._tokenizer.tokenize(text) if w in self._lookup.index]
            if rows:
                out[i] = self._lookup.vectors[rows].mean(0)
        return out

    def _features(self, X):
        return self.scaler_.transform(self._means(X))


class BagOfClustersClassifier(_EmbeddingClassifier):
    """k-means (``n_clusters``) over the embeddings of the training words; documents become
    tf-idf weighted cluster counts (test words with a vector go to their nearest cluster)."""

    _parameter_constraints = {**_EmbeddingClassifier._parameter_constraints, "n_clusters": [Integer(1)]}

    def __init__(
        self, embeddings="glove-6b-50d", *, n_clusters: int = 100, Cs=(0.1, 1.0, 10.0, 100.0), random_state=None
    ):
        self.embeddings = embeddings
        self.n_clusters = n_clusters
        self.Cs = Cs
        self.random_state = random_state

    def _fit_features(self, X):
        table = self._table()
        words = self.vocabulary_.words
        vectors, found = table.lookup(words)
        if found.sum() < 2:
            raise ValueError("too few training words have an embedding for bag-of-clusters")
        k = min(self.n_clusters, int(found.sum()))
        self.kmeans_ = KMeans(k, n_init=3, random_state=sklearn_random_state(self.random_state)).fit(vectors[found])
        self._lookup = table
        self._tokenizer = self.vocabulary_
        self.tfidf_ = TfidfTransformer().fit(self._cluster_counts(X))
        return self._features(X)

    def _cluster_counts(self, X) -> sp.csr_matrix:
        tokens = [[w for w in self._tokenizer.tokenize(t) if w in self._lookup.index] for t in X]
        vocab = sorted({w for doc in tokens for w in doc})
        if not vocab:
            return sp.csr_matrix((len(X), self.kmeans_.n_clusters))
        cluster = dict(zip(vocab, self.kmeans_.predict(self._lookup.lookup(vocab)[0])))
        rows = [i for i, doc in enumerate(tokens) for _ in doc]
        cols = [cluster[w] for doc in tokens for w in doc]
        mat = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(X), self.kmeans_.n_clusters))
        mat.sum_duplicates()
        return mat

    def _features(self, X):
        return self.tfidf_.transform(self._cluster_counts(X))
