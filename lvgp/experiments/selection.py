"""Choosing on dev data, one module for every study (issue 38).

A method says how its hyper-parameters are chosen with ``Method(selection=...)``, one of:

* :class:`CellGrid` -- a grid over cells: each setting is a cell of its own, and the study's report
  takes, per (method, split), the cell with the best dev score (:func:`best_on_dev`; never a test
  score, the first of ties in the cells' order), as the regression and matching studies do;
* :class:`InnerDev` -- a choice *inside* a cell: the study base wraps the cell's estimator in
  :class:`DevSelected`, which chooses the estimator's settings on a dev part of the training sample
  (or by cross-validation inside it) and refits on all of it, as the classification study's grids do;
* ``None`` -- one cell with the method's own settings (an estimator that tunes itself in ``fit``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.splits import dev_split, stratified_folds
from ..warnings import warn

#: what DevSelected maximizes on dev
DEV_SCORINGS = ("accuracy", "log-likelihood")


@dataclass(frozen=True)
class CellGrid:
    """Hyper-parameters as a grid over cells: ``settings(study)`` -> the settings, one cell each (the
    cell's ``params``), among which the study's report chooses on dev (:func:`best_on_dev`)."""

    settings: Callable[[Any], list[dict]]


@dataclass(frozen=True)
class InnerDev:
    """Estimator settings chosen on dev inside each cell (:class:`DevSelected`).

    Attributes:
        grid: ``grid(study)`` -> ``{name: values}``, the settings to choose from.
        canonical: maps a setting to an exactly equivalent one (fitted once for all the settings it
            stands for), or ``None``.
        path: a grid parameter whose values are fitted as one warm-started path per setting of the
            others (largest value first; the estimator takes ``warm_start``) when the study's
            ``dev_path_iter`` is positive, or ``None``: every setting from its own initialization.
        folds: ``None`` (the study's ``dev_folds``) or ``k`` (stratified k-fold cross-validation
            inside the sample, whatever the study's).
    """

    grid: Callable[[Any], dict[str, list]]
    canonical: Callable[[dict], dict] | None = None
    path: str | None = None
    folds: int | None = None

    def wrap(self, study: Any, model: Any, seed: int) -> DevSelected:
        """The cell's ``model`` in :class:`DevSelected`, with the study's dev settings (``dev_folds``,
        ``dev_scoring`` for models with probabilities, accuracy otherwise; ``dev_path_iter``) where it
        has them, else DevSelected's defaults."""
        path_iter = int(getattr(study, "dev_path_iter", 0))
        walk = self.path is not None and path_iter > 0
        return DevSelected(
            model,
            self.grid(study),
            seed,
            self.canonical,
            folds=int(getattr(study, "dev_folds", 1)) if self.folds is None else self.folds,
            scoring=getattr(study, "dev_scoring", "accuracy") if hasattr(model, "predict_proba") else "accuracy",
            path=self.path if walk else None,
            path_max_iter=path_iter if walk else None,
        )


def best_on_dev(cells: Iterable[dict], score: str, higher_is_better: bool) -> dict[tuple[str, int], tuple[dict, float]]:
    """Per ``(method, split)`` of ``cells``: the cell with the best ``score`` (a dev score; the first
    of ties, in the cells' order) and the fit seconds of all the group's cells (what the grid cost)."""
    best: dict[tuple[str, int], dict] = {}
    seconds: dict[tuple[str, int], float] = {}
    for c in cells:
        key = (c["method"], c["split"])
        seconds[key] = seconds.get(key, 0.0) + float(c.get("fit_seconds", 0.0))
        if key not in best or (c[score] > best[key][score] if higher_is_better else c[score] < best[key][score]):
            best[key] = c
    return {key: (cell, seconds[key]) for key, cell in best.items()}


class DevSelected:
    """Choose hyper-parameters on a stratified 25% dev part of the training sample, then refit
    on all of it (the thesis chooses on development data; used where inner cross-validation
    would cost too many non-convex fits).

    ``grid``: name -> values; settings are tried in the order of ``itertools.product`` over the
    given value lists (the last varies fastest), and ties in dev accuracy go to the first, so
    list values from the most regularized. ``canonical``: maps a setting to an *exactly*
    equivalent one (e.g. the latent SMM's (gamma, rho) -> (1, rho / gamma)); each distinct
    canonical setting is fitted once and its score shared by the settings it stands for.
    (scikit-learn's ``GridSearchCV`` with a predefined split would refit every equivalent
    setting, hence this small loop.)

    ``path``: a grid parameter whose values are fitted as one warm-started path per setting of
    the others -- the largest value first, from the estimator's initialization and with its
    ``max_iter``; each next value continues from the fit before it (``warm_start=True``) for
    ``path_max_iter`` iterations. Each setting is scored where the path passes it, and the refit on
    all documents walks the chosen setting's path down to it. (The latent SMM's C: a dev grid of
    162 non-convex fits costs about a third as many optimizer iterations.)

    Ties in dev accuracy are broken by the mean dev multi-class hinge loss
    (:func:`~lvgp.base.metrics.multiclass_hinge`) where the models rank classes by decision values
    (``class_decision_function``: the one-vs-rest latent SMM), else by the order above: with a
    hinge loss, every C above the hard-margin limit fits the dev part alike, and the first of them
    is a knee of the curve, not its middle.

    ``folds``: 1 (the thesis) scores each setting on one stratified 25% dev part; ``k > 1``
    scores it by stratified ``k``-fold cross-validation inside the sample
    (:func:`~lvgp.base.splits.stratified_folds`), the score pooled over every
    scored document, ``k`` fits per setting. (At 100 documents one dev part holds 25 of them,
    and its accuracy moves in steps of 0.04.) ``scoring``: ``"accuracy"`` (the thesis) or
    ``"log-likelihood"`` (the mean log predictive probability of the true class; needs
    ``predict_proba``), which separates settings that tie in accuracy.

    Fitted: ``best_params_`` (a grid setting), ``fitted_params_`` (its canonical form, what was
    refit), ``dev_scores_`` (canonical setting, dev score, in the order fitted), ``dev_hinge_``
    (canonical setting, dev hinge loss, where the tie-break applies), ``model_``, ``selection_seconds_``.
    """

    def __init__(
        self,
        estimator,
        grid: dict,
        seed: int,
        canonical=None,
        folds: int = 1,
        scoring: str = "accuracy",
        path: str | None = None,
        path_max_iter: int | None = None,
    ):
        if scoring not in DEV_SCORINGS:
            raise ValueError(f"scoring must be one of {DEV_SCORINGS}; got {scoring!r}")
        if int(folds) != folds or folds < 1:
            raise ValueError(f"folds must be a positive integer (1: one dev part); got {folds!r}")
        if path is not None:
            if path not in grid:
                raise ValueError(f"path must name a grid parameter {sorted(grid)}; got {path!r}")
            if path_max_iter is None or int(path_max_iter) != path_max_iter or path_max_iter < 1:
                raise ValueError(f"path_max_iter must be a positive integer with a path; got {path_max_iter!r}")
        self.estimator, self.grid, self.seed, self.canonical = estimator, grid, seed, canonical
        self.folds, self.scoring = folds, scoring
        self.path, self.path_max_iter = path, path_max_iter

    def _dev_scores(self, model, X: list, y: np.ndarray) -> np.ndarray:
        """Per-document dev scores of a fitted model: hits (accuracy) or the log predictive
        probability of the true class (floored at 1e-300 for a class the model never saw)."""
        if self.scoring == "accuracy":
            return (model.predict(X) == y).astype(float)
        from ..base.targets import true_class_log_proba

        return true_class_log_proba(model.predict_proba(X), model.classes_, y)

    @staticmethod
    def _dev_tiebreak(model, X: list, y: np.ndarray) -> np.ndarray | None:
        """Per-document multi-class hinge losses on dev (lower is better), or ``None`` when the model
        has no per-class decision values."""
        rank = getattr(model, "class_decision_function", None)
        decision = None if rank is None else rank(X)
        if decision is None:
            return None
        from ..base.metrics import multiclass_hinge

        return multiclass_hinge(decision, model.classes_, y)

    def _dev_parts(self, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """(train, dev) index pairs: one dev part, or the ``folds`` folds (one dev part when no
        two folds are possible); ``[]`` when there is nothing to score on."""
        if int(self.folds) > 1:
            parts = stratified_folds(y, int(self.folds), self.seed)
            if parts:
                return parts
        tr, dv = dev_split(y, self.seed)
        return [(tr, dv)] if len(dv) else []

    def _paths(self, keys: list[tuple]) -> list[list[dict]]:
        """The distinct canonical settings as the fits that produce them: one setting each, or with
        a ``path``, one list per setting of the other parameters, its ``path`` values largest first."""
        settings = [dict(key) for key in dict.fromkeys(keys)]
        if self.path is None:
            return [[params] for params in settings]
        groups: dict[tuple, list[dict]] = {}
        for params in settings:
            groups.setdefault(tuple(sorted((k, v) for k, v in params.items() if k != self.path)), []).append(params)
        return [sorted(group, key=lambda params: params[self.path], reverse=True) for group in groups.values()]

    def _fit_path(self, path: list[dict], X: list, y: np.ndarray, extra: dict, score=None):
        """Fit the settings of one path in order (each after the first warm-started from the one
        before it, with ``path_max_iter`` iterations); ``score(model, params)`` after each fit.
        Returns the last model."""
        from sklearn.base import clone

        model = clone(self.estimator)
        for step, params in enumerate(path):
            if step:
                params = {**params, "warm_start": True, "optimizer__max_iter": self.path_max_iter}
            model.set_params(**estimator_params(model, params)).fit(X, y, **extra)
            if score is not None:
                score(model, path[step])
        return model

    def fit(self, X, y, unlabeled=None):
        """Choose on dev, then refit on all of ``X``; ``unlabeled`` texts are passed to every fit
        (``fit(..., unlabeled=...)``: the estimator learns word vectors from them)."""
        X, y = list(X), np.asarray(y)
        extra = {} if unlabeled is None else {"unlabeled": unlabeled}
        names = list(self.grid)
        settings = [dict(zip(names, values)) for values in itertools.product(*(self.grid[k] for k in names))]
        canonical = self.canonical or (lambda params: params)

        def key_of(params: dict) -> tuple:
            return tuple(sorted(canonical(params).items()))

        start = time.perf_counter()
        best = settings[0]
        self.dev_scores_, self.dev_hinge_ = [], []
        paths = self._paths([key_of(params) for params in settings])
        if len(settings) > 1:
            parts = self._dev_parts(y)
            if parts:
                per_document: dict[tuple, list[np.ndarray]] = {}
                hinges: dict[tuple, list[np.ndarray]] = {}
                for path in paths:
                    for tr, dv in parts:
                        x_dev, y_dev = [X[i] for i in dv], y[dv]

                        def score(model, params, x_dev=x_dev, y_dev=y_dev):
                            key = tuple(sorted(params.items()))
                            per_document.setdefault(key, []).append(self._dev_scores(model, x_dev, y_dev))
                            if self.scoring == "accuracy":
                                loss = self._dev_tiebreak(model, x_dev, y_dev)
                                if loss is not None:
                                    hinges.setdefault(key, []).append(loss)

                        self._fit_path(path, [X[i] for i in tr], y[tr], extra, score)
                scores = {key: float(np.mean(np.concatenate(values))) for key, values in per_document.items()}
                tiebreak = {key: float(np.mean(np.concatenate(values))) for key, values in hinges.items()}
                self.dev_scores_ = [(dict(key), score) for key, score in scores.items()]
                self.dev_hinge_ = [(dict(key), loss) for key, loss in tiebreak.items()]
                best = max(settings, key=lambda params: (scores[key_of(params)], -tiebreak.get(key_of(params), 0.0)))
            else:
                warn(
                    f"no development documents to choose among {len(settings)} settings: using {best}",
                    RuntimeWarning,
                    stacklevel=2,
                )
        self.selection_seconds_ = time.perf_counter() - start
        self.best_params_ = best
        self.fitted_params_ = canonical(best)
        # the refit walks the chosen setting's path (on all of X) down to it
        chosen = dict(key_of(best))
        path = next(p for p in paths if chosen in p)
        self.model_ = self._fit_path(path[: path.index(chosen) + 1], X, y, extra)
        return self

    @property
    def classes_(self):
        return self.model_.classes_

    def __getattr__(self, name: str):
        # predict_proba exactly when the chosen model has one (hasattr tells the study)
        if name == "predict_proba" and "model_" in self.__dict__ and hasattr(self.model_, "predict_proba"):
            return self.model_.predict_proba
        raise AttributeError(name)

    def predict(self, X):
        return self.model_.predict(X)


def estimator_params(model, params: dict) -> dict:
    """A grid setting as ``model.set_params`` arguments: the estimator's own parameters by name, the
    fields of its kernel's :class:`~lvgp.kernels.LDKSpec` (``latent_dim``, ``rho``, ...) as ``kernel__*``."""
    from ..kernels.spec import LDKSpec

    own, fields = model.get_params(deep=False), set(LDKSpec().get_params())
    return {name if name in own or name not in fields else f"kernel__{name}": value for name, value in params.items()}
