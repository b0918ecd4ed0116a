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

The score is the classifier's ``score_samples``, or, with ``reject_score=``, one the wrapper reads off a classifier
without it -- a scikit-learn ``LogisticRegression`` in a ``Pipeline``, say: ``"entropy"`` (minus the entropy of
``predict_proba``), ``"max-probability"``, or ``"max-decision"`` (the largest ``decision_function`` value, its
absolute value for two classes), each with the labels of the same call (the argmax, as scikit-learn's linear models
predict). Those take the cross-validated threshold: the leave-one-out one is the GP classifier's own score's.

Each takes the split-conformal quantile of its in-scope scores (:func:`~lvgp.base.novelty.conformal_threshold`):
a new in-scope text whose score is exchangeable with theirs is accepted with probability at least ``keep``.
That holds for new texts drawn as the labelled ones were; where the classes' shares differ (an even labelled set,
a test stream dominated by one class) and the classes' scores differ, the share kept moves with the mix.
``class_conditional=True`` takes one threshold per predicted class instead
(:func:`~lvgp.base.novelty.class_conditional_thresholds`, Mondrian conformal prediction): each reference text
grouped by the class the model that did not fit it predicts, a new text judged by its predicted class's
threshold, so that ``keep`` holds within every class and so for any mix of them; a class with fewer reference
texts than the promise needs (19 for ``keep=0.95``) takes the pooled threshold, with a warning.
The scores are not quite exchangeable. A text left out of a fit is a little less typical than a new in-scope
text scored by the model fitted on all of them (fewer labelled texts beside it; with the tf-idf kernel, words of
its own in its norm): on dev documents both ways erred on the safe side on average, more in-scope texts kept and
more out-of-scope ones accepted than promised (on short texts mostly through those words: scored with them dropped,
as a new text's are, the left-out texts gave a threshold that kept close to ``keep``; ``benchmarks/README.md``,
"Rule 30"). Word vectors learned by MAP (the LDK) were fitted to the left-out
text too, and new texts that drift from the labelled ones (later posts) are less typical than either: there the
threshold keeps fewer than promised (``benchmarks/README.md``, "A threshold without held-out texts";
``results/README.md``, "Out-of-scope detection"). Check the share kept on your own held-out texts where you can.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Self, cast
from warnings import warn

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._random import sklearn_random_state
from .._typing import Documents
from ..base.constraints import Anything, Boolean, Integer, Options, RandomState, Real, check_params
from ..base.encoding import take_documents
from ..base.novelty import (
    class_conditional_thresholds,
    conformal_references_needed,
    conformal_threshold,
    decision_novelty,
    probability_novelty,
)
from ..base.persistence import SavedFileError, plain_value, restored_value
from ..base.splits import stratified_folds
from ..base.targets import check_labels
from .mixins import SavedParamsMixin, _names_only, _saved_specs

__all__ = [
    "OpenSetClassifier",
    "THRESHOLDS",
    "RejectReference",
    "OUTPUT_SCORES",
    "classifier_scores",
    "out_of_fold_scores",
    "leave_one_out_threshold",
    "reject_threshold",
]

#: how :class:`OpenSetClassifier` chooses its threshold (or a number: the threshold itself)
THRESHOLDS = ("auto", "leave-one-out", "cross-validation")


#: the scores :class:`OpenSetClassifier` reads off a classifier's outputs (``reject_score=``; ``None``: its
#: ``score_samples``)
OUTPUT_SCORES = ("entropy", "max-probability", "max-decision")


def out_of_fold_scores(
    classifier: Any,
    X: Documents,
    y: Any,
    cv: int = 5,
    random_state: Any = None,
    fit_params: dict | None = None,
    *,
    return_predictions: bool = False,
    score: str | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``m`` in-scope scores of texts the model did not fit: each labelled text's ``score_samples`` (or the
    ``score`` of :data:`OUTPUT_SCORES`: :func:`classifier_scores`) under ``classifier`` (cloned, fitted or not)
    fitted on the other folds (``cv`` stratified folds, fewer where a class has fewer texts; a class with fewer
    texts than folds is always trained on and never scored), in fold order; with ``return_predictions``, also the
    ``m`` labels those fold models predict for them.

    Raises:
        ValueError: no class has two texts (no two folds).
    """
    y = np.asarray(y)
    folds = stratified_folds(y, int(cv), sklearn_random_state(random_state))
    if not folds:
        raise ValueError("threshold='cross-validation' needs two folds: some class must have at least 2 labelled texts")
    scores, predictions = [], []
    for train, test in folds:
        fold = clone(classifier).fit(take_documents(X, train), y[train], **(fit_params or {}))
        if return_predictions or score is not None:
            values, predicted = classifier_scores(fold, take_documents(X, test), score)
            predictions.append(predicted)
        else:
            values = np.asarray(fold.score_samples(take_documents(X, test)), dtype=np.float64)
        scores.append(np.asarray(values, dtype=np.float64))
    if return_predictions:
        return np.concatenate(scores), np.concatenate(predictions)
    return np.concatenate(scores)


def classifier_scores(classifier: Any, X: Documents, score: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A fitted classifier's ``n`` novelty scores of ``X`` (higher: more typical) and its ``n`` labels.

    ``score=None``: its ``score_samples`` and ``predict``, from one prediction where it offers both at once (the
    GP classifier's ``novelty_scores(return_proba=True)``), else two calls. ``"entropy"``, ``"max-probability"``:
    :func:`~lvgp.base.novelty.probability_novelty` of ``predict_proba`` and the argmax of the same
    probabilities; ``"max-decision"``: :func:`~lvgp.base.novelty.decision_novelty` of ``decision_function`` and the
    argmax of the same values (for two classes, the second class where the value is positive).
    """
    from .gpc import LDKGPClassifier

    if score in ("entropy", "max-probability"):
        proba = np.asarray(classifier.predict_proba(X), dtype=np.float64)
        return probability_novelty(proba, score), np.asarray(classifier.classes_)[np.argmax(proba, axis=1)]
    if score == "max-decision":
        decision = np.asarray(classifier.decision_function(X), dtype=np.float64)
        chosen = (decision > 0).astype(int) if decision.ndim == 1 else np.argmax(decision, axis=1)
        return decision_novelty(decision), np.asarray(classifier.classes_)[chosen]
    if score is not None:
        raise ValueError(f"score must be None or one of {OUTPUT_SCORES}; got {score!r}")
    if isinstance(classifier, LDKGPClassifier):
        both = classifier.novelty_scores(X, (classifier.novelty_score,), return_proba=True)
        scores, proba = cast(tuple[dict[str, np.ndarray], np.ndarray], both)
        return np.asarray(scores[classifier.novelty_score]), classifier.classes_[np.argmax(proba, axis=1)]
    return np.asarray(classifier.score_samples(X)), np.asarray(classifier.predict(X))


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


def _no_leave_one_out(score: str) -> ValueError:
    """The error of ``threshold="leave-one-out"`` with a score read off a classifier's outputs."""
    return ValueError(
        f"threshold='leave-one-out' is the GP classifier's own score's; with reject_score={score!r} the threshold "
        "is cross-validated: use threshold='auto' or 'cross-validation'"
    )


class RejectReference(NamedTuple):
    """What :func:`reject_threshold` chose: the pooled ``threshold``, its ``source`` (``"leave-one-out"`` or
    ``"cross-validation"``), the ``m`` in-scope reference ``scores`` it is the conformal quantile of, and (where
    asked for) the ``m`` labels the classifier predicts for those texts, each by the model that did not fit it
    (``None`` otherwise)."""

    threshold: float
    source: str
    scores: np.ndarray
    predicted: np.ndarray | None = None


def reject_threshold(
    classifier: Any,
    X: Documents,
    y: Any,
    keep: float,
    how: str = "auto",
    cv: int = 5,
    random_state: Any = None,
    fit_params: dict | None = None,
    *,
    return_predictions: bool = False,
    score: str | None = None,
) -> RejectReference:
    """The threshold :class:`OpenSetClassifier` chooses for a ``classifier`` fitted on ``X``, ``y``
    (:class:`RejectReference`). ``how="auto"``: its leave-one-out threshold where it offers one
    (:func:`leave_one_out_threshold`), else the conformal quantile of :func:`out_of_fold_scores` (``cv`` folds of
    clones of it); ``"leave-one-out"``: the former or its ``ValueError`` saying why not; ``"cross-validation"``:
    the latter. ``return_predictions``: also the reference texts' predicted labels (leave-one-out: the argmax of
    :meth:`~lvgp.LDKGPClassifier.leave_one_out_predict_proba`; cross-validation: the fold models' ``predict``).
    ``score``: one of :data:`OUTPUT_SCORES` read off the classifier's outputs (:func:`classifier_scores`), whose
    threshold is cross-validated (``"leave-one-out"``: a ``ValueError``)."""
    from ..base.novelty import leave_one_out_novelty

    if how == "leave-one-out" and score is not None:
        raise _no_leave_one_out(score)
    if how == "leave-one-out":
        classifier.novelty_threshold(keep)  # its ValueError says why it offers none
    if how in ("auto", "leave-one-out") and score is None:
        own = leave_one_out_threshold(classifier, keep)
        if own is not None:
            reference = classifier.novelty_reference()
            scores = leave_one_out_novelty(reference, classifier.novelty_score, len(classifier.classes_))
            predicted = None
            if return_predictions:
                predicted = classifier.classes_[np.argmax(classifier.leave_one_out_predict_proba(), axis=1)]
            return RejectReference(own, "leave-one-out", scores, predicted)
    if return_predictions:
        scores, predicted = out_of_fold_scores(
            classifier, X, y, cv, random_state, fit_params, return_predictions=True, score=score
        )
        return RejectReference(conformal_threshold(scores, keep), "cross-validation", scores, predicted)
    scores = cast(np.ndarray, out_of_fold_scores(classifier, X, y, cv, random_state, fit_params, score=score))
    return RejectReference(conformal_threshold(scores, keep), "cross-validation", scores)


def _default_classifier() -> Any:
    from .gpc import LDKGPClassifier

    return LDKGPClassifier()


#: the parameters a saved file holds by value (``classifier``: the fitted classifier's own file, inside)
_PLAIN_PARAMS = ("keep", "threshold", "cv", "unknown_label", "random_state", "class_conditional", "reject_score")


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
        classifier: an unfitted classifier with ``fit``, ``predict`` and ``score_samples`` (or what
            ``reject_score`` reads) (cloned at ``fit``); ``None``: :class:`~lvgp.LDKGPClassifier` with its defaults.
        keep: the share of in-scope texts to accept (0.95: the operating point of the studies' FPR95).
        threshold: ``"auto"``, ``"leave-one-out"``, ``"cross-validation"`` (module docstring), or a number on
            ``score_samples``' scale.
        cv: the folds of ``threshold="cross-validation"`` (fewer where a class has fewer texts).
        unknown_label: what :meth:`predict` says for a text below the threshold; not a training label.
        random_state: the folds' shuffling.
        class_conditional: one threshold per predicted class (module docstring; not with a number as
            ``threshold``).
        reject_score: ``None``, the classifier's ``score_samples``; or one the wrapper reads off its outputs, for a
            classifier without ``score_samples`` (module docstring): ``"entropy"``, ``"max-probability"``
            (``predict_proba``), ``"max-decision"`` (``decision_function``).

    Fitted: ``classifier_`` (fitted on every labelled text), ``threshold_`` (the pooled one), ``threshold_source_``
    (``"leave-one-out"``, ``"cross-validation"`` or ``"given"``), ``reference_scores_`` (the in-scope scores the
    threshold is the quantile of; empty for a given one), ``classes_`` (the known classes; ``unknown_label`` is
    not among them), ``class_thresholds_`` (one a class, in ``classes_``' order: each class's own with
    ``class_conditional=True``, where it has enough reference texts, else ``threshold_``),
    ``reference_predictions_`` (the classes predicted for the reference texts; ``class_conditional=True`` only).

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
        "class_conditional": [Boolean()],
        "reject_score": [None, Options(*OUTPUT_SCORES)],
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
        class_conditional: bool = False,
        reject_score: str | None = None,
    ):
        self.classifier = classifier
        self.keep = keep
        self.threshold = threshold
        self.cv = cv
        self.unknown_label = unknown_label
        self.random_state = random_state
        self.class_conditional = class_conditional
        self.reject_score = reject_score

    @property
    def novelty_score(self) -> str:
        """The score :meth:`score_samples` returns: ``reject_score``, or the classifier's own."""
        if self.reject_score is not None:
            return self.reject_score
        classifier = self.classifier if self.classifier is not None else _default_classifier()
        return classifier.novelty_score

    def _unfitted(self) -> Any:
        classifier = clone(self.classifier) if self.classifier is not None else _default_classifier()
        needed = {None: ("fit", "predict", "score_samples"), "max-decision": ("fit", "decision_function")}
        wanted = needed.get(self.reject_score, ("fit", "predict_proba"))
        missing = [m for m in wanted if not callable(getattr(classifier, m, None))]
        if missing:
            hint = (
                "; reject_score='entropy' reads the score off predict_proba, 'max-decision' off decision_function"
                if self.reject_score is None
                else ""
            )
            raise TypeError(
                f"classifier must have {', '.join(wanted)} (reject_score={self.reject_score!r}); "
                f"{type(classifier).__name__} lacks {', '.join(missing)}{hint}"
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
            chosen = reject_threshold(
                self.classifier_,
                X,
                labels,
                self.keep,
                self.threshold,
                int(self.cv),
                self.random_state,
                fit_params,
                return_predictions=bool(self.class_conditional),
                score=self.reject_score,
            )
            self.threshold_, self.threshold_source_, self.reference_scores_ = chosen[:3]
        else:
            self.threshold_, self.threshold_source_, self.reference_scores_ = (
                float(self.threshold),
                "given",
                np.empty(0),
            )
        self.class_thresholds_ = np.full(len(self.classes_), float(self.threshold_))
        if self.class_conditional:
            self.reference_predictions_ = np.asarray(chosen.predicted)
            self.class_thresholds_ = self._class_thresholds(self.reference_scores_, self.reference_predictions_)
        return self

    def _class_thresholds(self, scores: np.ndarray, predicted: np.ndarray) -> np.ndarray:
        """One threshold per class of ``classes_`` from the reference ``scores`` grouped by their ``predicted``
        classes (:func:`~lvgp.base.novelty.class_conditional_thresholds`); a warning names the classes given the
        pooled threshold."""
        codes = self._class_codes(predicted)
        thresholds, pooled = class_conditional_thresholds(scores, codes, len(self.classes_), self.keep)
        if pooled.any():
            counts = np.bincount(codes, minlength=len(self.classes_))
            names = self.classes_.tolist()
            named = ", ".join(f"{names[c]!r} ({counts[c]})" for c in np.flatnonzero(pooled)[:10])
            warn(
                f"class_conditional: {int(pooled.sum())} of {len(self.classes_)} classes have fewer than "
                f"{conformal_references_needed(self.keep)} reference texts predicted as them, too few to promise "
                f"keep={self.keep} alone, and take the pooled threshold: {named}"
                + (" ..." if pooled.sum() > 10 else ""),
                UserWarning,
                stacklevel=3,
            )
        return thresholds

    def _class_codes(self, labels: np.ndarray) -> np.ndarray:
        """Each label's position in ``classes_``."""
        index = {label: i for i, label in enumerate(self.classes_.tolist())}
        return np.asarray([index[label] for label in np.asarray(labels).tolist()], dtype=np.int64)

    def _check_threshold_source(self, classifier: Any) -> None:
        """Refused before the fit: ``class_conditional`` with a number as threshold, ``threshold="leave-one-out"``
        with a ``reject_score`` or with a classifier that has no ``novelty_threshold``."""
        if self.class_conditional and not isinstance(self.threshold, str):
            raise ValueError(
                "class_conditional=True chooses a threshold per class from reference scores; with a number as "
                f"threshold ({self.threshold!r}) there are none: use threshold='auto'"
            )
        if self.threshold == "leave-one-out" and self.reject_score is not None:
            raise _no_leave_one_out(self.reject_score)
        if self.threshold == "leave-one-out" and not callable(getattr(classifier, "novelty_threshold", None)):
            raise ValueError(
                f"threshold='leave-one-out' needs a classifier with novelty_threshold (LDKGPClassifier); "
                f"{type(classifier).__name__} has none: use threshold='cross-validation'"
            )

    def _scores_and_labels(self, X: Documents) -> tuple[np.ndarray, np.ndarray]:
        """``score_samples`` and the classifier's labels of ``X``: from one prediction where the classifier
        offers both at once (the GP classifier's ``novelty_scores(return_proba=True)``), else two calls."""
        check_is_fitted(self, "classifier_")
        return classifier_scores(self.classifier_, X, self.reject_score)

    def _margins_and_labels(self, X: Documents) -> tuple[np.ndarray, np.ndarray]:
        """``score_samples(X)`` minus the threshold of each text's predicted class (:attr:`class_thresholds_`;
        every class's is ``threshold_`` unless ``class_conditional``), and the predicted labels."""
        scores, labels = self._scores_and_labels(X)
        if not self.class_conditional:
            return scores - self.threshold_, labels
        return scores - self.class_thresholds_[self._class_codes(labels)], labels

    def score_samples(self, X: Documents) -> np.ndarray:
        """``n`` novelty scores of ``X`` (higher: more typical): the classifier's ``score_samples``, or
        ``reject_score`` read off its outputs."""
        check_is_fitted(self, "classifier_")
        if self.reject_score is not None:
            return classifier_scores(self.classifier_, X, self.reject_score)[0]
        return np.asarray(self.classifier_.score_samples(X))

    def decision_function(self, X: Documents) -> np.ndarray:
        """``n`` values, ``score_samples(X)`` minus the threshold (``threshold_``; with ``class_conditional``,
        the predicted class's of ``class_thresholds_``): below 0, out of scope (scikit-learn's outlier
        detectors' convention)."""
        if not self.class_conditional:
            return self.score_samples(X) - self.threshold_
        return self._margins_and_labels(X)[0]

    def predict_proba(self, X: Documents) -> np.ndarray:
        """``n x len(classes_)``: the classifier's probabilities over the known classes (no mass for
        ``unknown_label``: a text's typicality is :meth:`score_samples`, not a class)."""
        check_is_fitted(self, "classifier_")
        return self.classifier_.predict_proba(X)

    def predict(self, X: Documents) -> np.ndarray:
        """``n`` labels: the classifier's, or ``unknown_label`` where ``score_samples`` is below ``threshold_``
        (an object array when ``unknown_label`` is not of the classes' type)."""
        margins, labels = self._margins_and_labels(X)
        rejected = margins < 0
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
        margins, labels = self._margins_and_labels(X)
        return labels, margins < 0

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
            "class_thresholds": torch.as_tensor(np.asarray(self.class_thresholds_, dtype=np.float64)),
            **(
                {"reference_predictions": torch.as_tensor(self._class_codes(self.reference_predictions_))}
                if self.class_conditional
                else {}
            ),
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
        # files written before class_conditional: every class at the pooled threshold
        held = payload.get("class_thresholds")
        self.class_thresholds_ = (
            held.numpy() if held is not None else np.full(len(self.classes_), self.threshold_, dtype=np.float64)
        )
        if "reference_predictions" in payload:
            self.reference_predictions_ = self.classes_[payload["reference_predictions"].numpy()]
