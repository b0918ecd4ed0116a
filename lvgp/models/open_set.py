r"""A classifier that says "none of my classes": any lvgp classifier with a threshold on its novelty score.

:class:`OpenSetClassifier` wraps a classifier with ``score_samples`` (every classifier of lvgp has it,
:mod:`lvgp.base.novelty`) and predicts ``unknown_label`` for a text whose score falls below a threshold chosen
at ``fit`` from in-scope texts alone -- never from out-of-scope ones:

* ``threshold="leave-one-out"`` -- the classifier's own :meth:`novelty_threshold
  <lvgp.LDKGPClassifier.novelty_threshold>`: the GP classifier's (Dirichlet inference) labelled texts, each
  scored by the GP of the others, from the fit's one factorization: no refit;
* ``threshold="cross-validation"`` -- each labelled text scored by the classifier fitted on the other folds
  (``cv`` stratified folds; a class with fewer texts than folds is always trained on and never scored), any
  classifier;
* ``threshold="auto"`` -- the first where the classifier offers it (``novelty_threshold``; for the GP
  classifier, the Dirichlet inference and any score but ``"max-probability"``), else the second;
* a number -- the threshold itself, on ``score_samples``' scale (say, from held-out in-scope texts).

Each takes the split-conformal quantile of its in-scope scores (:func:`~lvgp.base.novelty.conformal_threshold`):
a new in-scope text whose score is exchangeable with theirs is accepted with probability at least ``keep``.
The scores are not quite exchangeable. A text left out of a fit is a little less typical than a new in-scope
text scored by the model fitted on all of them (fewer labelled texts beside it; with the tf-idf kernel, words of
its own in its norm): on dev documents both ways erred on the safe side on average, more in-scope texts kept and
more out-of-scope ones accepted than promised. Word vectors learned by MAP (the LDK) were fitted to the left-out
text too, and new texts that drift from the labelled ones (later posts) are less typical than either: there the
threshold keeps fewer than promised (``benchmarks/README.md``, "A threshold without held-out texts";
``results/README.md``, "Out-of-scope detection"). Check the share kept on your own held-out texts where you can.
"""

from __future__ import annotations

from typing import Any, Self, cast

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._random import sklearn_random_state
from .._typing import Documents
from ..base.constraints import Anything, Integer, Options, RandomState, Real, check_params
from ..base.encoding import take_documents
from ..base.novelty import conformal_threshold
from ..base.persistence import SavedFileError, plain_value, restored_value
from ..base.splits import stratified_folds
from ..base.targets import check_labels
from .mixins import SavedParamsMixin, _names_only, _saved_specs

__all__ = ["OpenSetClassifier", "THRESHOLDS", "out_of_fold_scores", "leave_one_out_threshold", "reject_threshold"]

#: how :class:`OpenSetClassifier` chooses its threshold (or a number: the threshold itself)
THRESHOLDS = ("auto", "leave-one-out", "cross-validation")


def out_of_fold_scores(
    classifier: Any, X: Documents, y: Any, cv: int = 5, random_state: Any = None, fit_params: dict | None = None
) -> np.ndarray:
    """``m`` in-scope scores of texts the model did not fit: each labelled text's ``score_samples`` under
    ``classifier`` (cloned, fitted or not) fitted on the other folds (``cv`` stratified folds, fewer where a class
    has fewer texts; a class with fewer texts than folds is always trained on and never scored), in fold order.

    Raises:
        ValueError: no class has two texts (no two folds).
    """
    y = np.asarray(y)
    folds = stratified_folds(y, int(cv), sklearn_random_state(random_state))
    if not folds:
        raise ValueError("threshold='cross-validation' needs two folds: some class must have at least 2 labelled texts")
    scores = []
    for train, test in folds:
        fold = clone(classifier).fit(take_documents(X, train), y[train], **(fit_params or {}))
        scores.append(np.asarray(fold.score_samples(take_documents(X, test)), dtype=np.float64))
    return np.concatenate(scores)


def leave_one_out_threshold(classifier: Any, keep: float) -> float | None:
    """A fitted classifier's own threshold from its labelled texts' leave-one-out scores
    (:meth:`lvgp.LDKGPClassifier.novelty_threshold`), or ``None`` where it offers none (another classifier; the GP
    classifier with another inference than Dirichlet, or ``novelty_score="max-probability"``)."""
    own = getattr(classifier, "novelty_threshold", None)
    if not callable(own):
        return None
    try:
        return float(own(keep))
    except ValueError:
        return None


def reject_threshold(
    classifier: Any,
    X: Documents,
    y: Any,
    keep: float,
    how: str = "auto",
    cv: int = 5,
    random_state: Any = None,
    fit_params: dict | None = None,
) -> tuple[float, str, np.ndarray]:
    """The threshold :class:`OpenSetClassifier` chooses for a ``classifier`` fitted on ``X``, ``y``:
    ``(threshold, source, reference scores)``. ``how="auto"``: its leave-one-out threshold where it offers one
    (:func:`leave_one_out_threshold`), else the conformal quantile of :func:`out_of_fold_scores` (``cv`` folds of
    clones of it); ``"leave-one-out"``: the former or its ``ValueError`` saying why not; ``"cross-validation"``:
    the latter."""
    from ..base.novelty import leave_one_out_novelty

    if how == "leave-one-out":
        classifier.novelty_threshold(keep)  # its ValueError says why it offers none
    if how in ("auto", "leave-one-out"):
        own = leave_one_out_threshold(classifier, keep)
        if own is not None:
            reference = classifier.novelty_reference()
            return (
                own,
                "leave-one-out",
                leave_one_out_novelty(reference, classifier.novelty_score, len(classifier.classes_)),
            )
    reference = out_of_fold_scores(classifier, X, y, cv, random_state, fit_params)
    return conformal_threshold(reference, keep), "cross-validation", reference


def _default_classifier() -> Any:
    from .gpc import LDKGPClassifier

    return LDKGPClassifier()


#: the parameters a saved file holds by value (``classifier``: the fitted classifier's own file, inside)
_PLAIN_PARAMS = ("keep", "threshold", "cv", "unknown_label", "random_state")


def _saved_classifier_class(module: str, name: str) -> type[SavedParamsMixin]:
    """The class of a wrapped classifier's file: an estimator of lvgp's own modules that lvgp saves, nothing else
    (a file names it; no other module is imported on its word)."""
    import importlib

    if not (isinstance(module, str) and module.startswith("lvgp.") and isinstance(name, str)):
        raise SavedFileError(f"the saved classifier is {module!r}.{name!r}, not an lvgp estimator")
    try:
        kind = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise SavedFileError(f"the saved classifier {module}.{name} is not in this lvgp") from None
    if not (isinstance(kind, type) and issubclass(kind, SavedParamsMixin) and issubclass(kind, ClassifierMixin)):
        raise SavedFileError(f"the saved classifier {module}.{name} is not a classifier lvgp saves")
    return kind


class OpenSetClassifier(SavedParamsMixin, ClassifierMixin, BaseEstimator):
    r"""A classifier with a reject option: ``unknown_label`` for texts below a novelty threshold (module docstring).

    Args:
        classifier: an unfitted classifier with ``fit``, ``predict`` and ``score_samples`` (cloned at ``fit``);
            ``None``: :class:`~lvgp.LDKGPClassifier` with its defaults.
        keep: the share of in-scope texts to accept (0.95: the operating point of the studies' FPR95).
        threshold: ``"auto"``, ``"leave-one-out"``, ``"cross-validation"`` (module docstring), or a number on
            ``score_samples``' scale.
        cv: the folds of ``threshold="cross-validation"`` (fewer where a class has fewer texts).
        unknown_label: what :meth:`predict` says for a text below the threshold; not a training label.
        random_state: the folds' shuffling.

    Fitted: ``classifier_`` (fitted on every labelled text), ``threshold_``, ``threshold_source_``
    (``"leave-one-out"``, ``"cross-validation"`` or ``"given"``), ``reference_scores_`` (the in-scope scores the
    threshold is the quantile of; empty for a given one), ``classes_`` (the known classes; ``unknown_label`` is
    not among them).

    :meth:`save` / :meth:`load` write and read the fitted wrapper with its classifier's own file inside
    (``torch.load(weights_only=True)``; a classifier lvgp saves, with a kernel a file can hold: a spec, not a
    gpytorch kernel of your own). A wrapped scikit-learn composition (the baselines) is saved as scikit-learn's
    are: ``joblib``, trusted files only.

    Example:
        >>> import lvgp
        >>> texts = [f"{a} {b}" for a in ("film", "movie", "actor", "scene", "plot") for b in ("great", "dull")]
        >>> texts += [f"{a} {b}" for a in ("goal", "match", "coach", "team", "league") for b in ("won", "lost")]
        >>> labels = ["cinema"] * 10 + ["sport"] * 10
        >>> clf = lvgp.OpenSetClassifier(keep=0.9, unknown_label="oos").fit(texts, labels)
        >>> clf.threshold_source_  # the GP classifier's own, from its leave-one-out scores
        'leave-one-out'
        >>> clf.predict(["a great film", "the team won", "my parcel is late"])
        array(['cinema', 'sport', 'oos'], dtype='<U6')
    """

    _parameter_constraints: dict[str, list] = {
        "classifier": [None, Anything()],
        "keep": [Real(0.0, 1.0, open_low=True, open_high=True)],
        "threshold": [Options(*THRESHOLDS), Real()],
        "cv": [Integer(2)],
        "unknown_label": [Anything()],
        "random_state": [RandomState()],
    }

    def __init__(
        self,
        classifier: Any = None,
        *,
        keep: float = 0.95,
        threshold: str | float = "auto",
        cv: int = 5,
        unknown_label: Any = "out-of-scope",
        random_state: int | None = None,
    ):
        self.classifier = classifier
        self.keep = keep
        self.threshold = threshold
        self.cv = cv
        self.unknown_label = unknown_label
        self.random_state = random_state

    @property
    def novelty_score(self) -> str:
        """The score :meth:`score_samples` returns: the classifier's."""
        classifier = self.classifier if self.classifier is not None else _default_classifier()
        return classifier.novelty_score

    def _unfitted(self) -> Any:
        classifier = clone(self.classifier) if self.classifier is not None else _default_classifier()
        missing = [m for m in ("fit", "predict", "score_samples") if not callable(getattr(classifier, m, None))]
        if missing:
            raise TypeError(
                f"classifier must have fit, predict and score_samples; {type(classifier).__name__} lacks "
                f"{', '.join(missing)}"
            )
        return classifier

    def fit(self, X: Documents, y: Any, **fit_params: Any) -> Self:
        """Fit the classifier on the labelled texts ``X``, ``y`` (every one in scope: no row may be labelled
        ``unknown_label``) and choose the threshold; ``fit_params`` go to each of the classifier's fits
        (``unlabeled=`` texts, say).

        Raises:
            ValueError: a row is labelled ``unknown_label``; ``threshold="leave-one-out"`` with a classifier
                without ``novelty_threshold``; too few texts a class for two folds.
        """
        check_params(self)
        classifier = self._unfitted()
        labels = np.asarray(y)
        check_labels(labels, len(labels))
        unknown = np.flatnonzero(np.asarray([label == self.unknown_label for label in labels.tolist()], dtype=bool))
        if unknown.size:
            raise ValueError(
                f"y: {unknown.size} rows are labelled unknown_label={self.unknown_label!r} (rows "
                f"{unknown[:10].tolist()}): out-of-scope texts are never trained on; drop them or choose another "
                "unknown_label"
            )
        self._check_threshold_source(classifier)
        self.classifier_ = classifier.fit(X, labels, **fit_params)
        self.classes_ = self.classifier_.classes_
        if isinstance(self.threshold, str):
            self.threshold_, self.threshold_source_, self.reference_scores_ = reject_threshold(
                self.classifier_, X, labels, self.keep, self.threshold, int(self.cv), self.random_state, fit_params
            )
        else:
            self.threshold_, self.threshold_source_, self.reference_scores_ = (
                float(self.threshold),
                "given",
                np.empty(0),
            )
        return self

    def _check_threshold_source(self, classifier: Any) -> None:
        """``threshold="leave-one-out"`` with a classifier that has no ``novelty_threshold``: refused before the fit."""
        if self.threshold == "leave-one-out" and not callable(getattr(classifier, "novelty_threshold", None)):
            raise ValueError(
                f"threshold='leave-one-out' needs a classifier with novelty_threshold (LDKGPClassifier); "
                f"{type(classifier).__name__} has none: use threshold='cross-validation'"
            )

    def _scores_and_labels(self, X: Documents) -> tuple[np.ndarray, np.ndarray]:
        """``score_samples`` and the classifier's labels of ``X``: from one prediction where the classifier
        offers both at once (the GP classifier's ``novelty_scores(return_proba=True)``), else two calls."""
        check_is_fitted(self, "classifier_")
        clf = self.classifier_
        from .gpc import LDKGPClassifier

        if isinstance(clf, LDKGPClassifier):
            both = clf.novelty_scores(X, (clf.novelty_score,), return_proba=True)
            scores, proba = cast(tuple[dict[str, np.ndarray], np.ndarray], both)
            return np.asarray(scores[clf.novelty_score]), clf.classes_[np.argmax(proba, axis=1)]
        return np.asarray(clf.score_samples(X)), np.asarray(clf.predict(X))

    def score_samples(self, X: Documents) -> np.ndarray:
        """``n`` novelty scores of ``X``: the classifier's ``score_samples`` (higher: more typical)."""
        check_is_fitted(self, "classifier_")
        return np.asarray(self.classifier_.score_samples(X))

    def decision_function(self, X: Documents) -> np.ndarray:
        """``n`` values, ``score_samples(X) - threshold_``: below 0, out of scope (scikit-learn's outlier
        detectors' convention)."""
        return self.score_samples(X) - self.threshold_

    def predict_proba(self, X: Documents) -> np.ndarray:
        """``n x len(classes_)``: the classifier's probabilities over the known classes (no mass for
        ``unknown_label``: a text's typicality is :meth:`score_samples`, not a class)."""
        check_is_fitted(self, "classifier_")
        return self.classifier_.predict_proba(X)

    def predict(self, X: Documents) -> np.ndarray:
        """``n`` labels: the classifier's, or ``unknown_label`` where ``score_samples`` is below ``threshold_``
        (an object array when ``unknown_label`` is not of the classes' type)."""
        scores, labels = self._scores_and_labels(X)
        rejected = scores < self.threshold_
        if not rejected.any():
            return labels
        try:
            out = labels.copy()
            out[rejected] = self.unknown_label
            if np.all(out[rejected] == self.unknown_label):
                return out
        except (ValueError, TypeError):
            pass
        out = labels.astype(object)
        out[rejected] = self.unknown_label
        return out

    def predict_with_rejection(self, X: Documents) -> tuple[np.ndarray, np.ndarray]:
        """``(labels, rejected)``: the classifier's ``n`` labels and a boolean mask of the texts below the
        threshold, from one prediction (:meth:`predict` is the labels with ``unknown_label`` at the mask)."""
        scores, labels = self._scores_and_labels(X)
        return labels, scores < self.threshold_

    # ------------------------------------------------------------------ persistence (SavedParamsMixin's hooks)
    _fitted_attribute = "classifier_"

    def _check_savable(self) -> None:
        clf = self.classifier_
        if not callable(getattr(clf, "_fitted_payload", None)) or not isinstance(clf, SavedParamsMixin):
            raise TypeError(
                f"save: the classifier, a {type(clf).__name__}, has no lvgp file; save this wrapper with joblib "
                "(trusted files only), as scikit-learn estimators are"
            )
        clf._check_savable()
        params = clf.get_params(deep=False)
        for name, held in (("kernel", self._kernel_in_file), ("encoder_kernel", _names_only)):
            if name in params and not held(params[name]):
                raise TypeError(
                    f"save: the classifier's {name} holds a gpytorch kernel of your own, which a file does not hold; "
                    f"save the classifier alone (classifier_.save) and load it with {name}="
                )
        for name in _PLAIN_PARAMS:
            plain_value(getattr(self, name), name)  # a TypeError naming the parameter, before anything is written

    @staticmethod
    def _kernel_in_file(kernel: Any) -> bool:
        return kernel is None or isinstance(kernel, (str, *_saved_specs()))

    def _saved_params(self) -> dict:
        return {name: plain_value(getattr(self, name), name) for name in _PLAIN_PARAMS}

    @classmethod
    def _restored_params(cls, params: dict, kernel: Any = None, path: Any = None) -> dict:
        return {name: restored_value(value) for name, value in params.items()}

    def _fitted_payload(self) -> dict:
        """The classifier's own file (its class's name beside it) and the threshold."""
        clf = self.classifier_
        inner = {"format": clf._format(), "params": clf._saved_params(), **clf._fitted_payload()}
        return {
            "classifier_module": type(clf).__module__,
            "classifier_class": type(clf).__name__,
            "classifier": inner,
            "threshold": float(self.threshold_),
            "threshold_source": self.threshold_source_,
            "reference_scores": torch.as_tensor(np.asarray(self.reference_scores_, dtype=np.float64)),
        }

    def _restore_fitted(self, payload: dict) -> None:
        kind = _saved_classifier_class(payload["classifier_module"], payload["classifier_class"])
        clf = kind._from_payload(payload["classifier"], f"the classifier inside ({kind.__name__})", None)
        clf._restore_fitted(payload["classifier"])
        self.classifier = kind(**clf.get_params(deep=False))
        self.classifier_, self.classes_ = clf, clf.classes_
        self.threshold_ = float(payload["threshold"])
        self.threshold_source_ = str(payload["threshold_source"])
        self.reference_scores_ = payload["reference_scores"].numpy()
