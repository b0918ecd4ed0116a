"""Cross-validation splits for small, imbalanced training samples (r8 at 50-200 documents
has classes with a single document).

scikit-learn's ``StratifiedKFold`` cannot put a singleton class in every training fold, and
the naive fallback -- skip model selection, use a fixed value -- silently turns "C chosen by
CV" into "C fixed". Here classes with fewer documents than folds stay in the training part
of every fold (they are never scored); the other documents are split stratified. With no
documents for any fold, callers get ``[]`` and must say what they do instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from sklearn.model_selection import KFold, PredefinedSplit, StratifiedKFold, train_test_split

from .._random import numpy_generator, sklearn_random_state

__all__ = ["stratified_folds", "dev_split", "early_stopping_split", "dev_or_folds"]


def stratified_folds(y, n_folds: int = 3, random_state: int | None = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train, test)`` index pairs of a stratified ``k``-fold split, ``k = min(n_folds,
    smallest count among classes with at least 2 documents)``; rarer classes are always in
    training. Identical to ``StratifiedKFold(k, shuffle=True)`` when every class has ``k``
    documents. ``[]`` when fewer than two folds are possible."""
    y = np.asarray(y)
    classes, counts = np.unique(y, return_counts=True)
    if not (counts >= 2).any():
        return []
    k = int(min(n_folds, counts[counts >= 2].min()))
    if k < 2:
        return []
    keep = np.isin(y, classes[counts >= k])
    rows, always = np.flatnonzero(keep), np.flatnonzero(~keep)
    folds = StratifiedKFold(k, shuffle=True, random_state=random_state).split(rows, y[rows])
    return [(np.sort(np.concatenate([rows[tr], always])), rows[te]) for tr, te in folds]


def dev_split(y, random_state: int | None = 0, dev_fraction: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Stratified train/dev indices; classes with a single document stay in training. Identical
    to ``train_test_split(stratify=y)`` when every class has two documents. When
    ``dev_fraction`` of the documents is fewer than the classes (e.g. 50 documents of 20
    classes), the dev part takes one document per class instead, as long as the training part
    keeps one too; an empty dev part only when even that is impossible."""
    y = np.asarray(y)
    classes, counts = np.unique(y, return_counts=True)
    keep = np.isin(y, classes[counts >= 2])
    rows = np.flatnonzero(keep)
    n_classes = int((counts >= 2).sum())
    try:
        tr, dv = train_test_split(rows, test_size=dev_fraction, stratify=y[rows], random_state=random_state)
    except ValueError:  # too few documents for one per class on each side
        if n_classes < 2 or len(rows) < 2 * n_classes:
            return np.arange(len(y)), np.array([], dtype=int)
        tr, dv = train_test_split(rows, test_size=n_classes, stratify=y[rows], random_state=random_state)
    return np.sort(np.concatenate([tr, np.flatnonzero(~keep)])), dv


def early_stopping_split(
    n: int, fraction: float, seed: int, labels: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The training and validation rows that every estimator stopping early holds out (one helper
    for all): stratified by ``labels`` for the classifiers (:func:`dev_split`; possibly no
    validation rows, which the caller reports), else a random ``fraction`` of the ``n`` rows (at least
    one, leaving at least two; a ``ValueError`` otherwise). Both sorted."""
    if labels is not None:
        return dev_split(labels, seed, fraction)
    n_val = max(1, int(round(fraction * n)))
    if n - n_val < 2:
        if n < 3:
            raise ValueError(f"early stopping needs at least 3 training documents (one held out); got {n}")
        raise ValueError(
            f"early_stopping.validation_fraction={fraction:g} holds out {n_val} of the {n} training documents, "
            f"leaving {n - n_val} to fit; at most {n - 2} can be held out (a fraction of at most {(n - 2) / n:.3g})"
        )
    perm = numpy_generator(seed).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def dev_or_folds(
    F: Any, y: np.ndarray, dev: tuple[Any, np.ndarray] | None, cv: int, random_state: Any
) -> tuple[Any, Any, np.ndarray]:
    """``(split, F_search, y_search)`` for a ``GridSearchCV(..., cv=split, refit=False)`` that chooses on dev data
    (the GP-LVSM paper's linear baselines): with ``dev = (F_val, y_val)``, the training rows ``F`` (``n x p``, dense
    or sparse) and the dev rows stacked, and a ``PredefinedSplit`` in which the training rows never score and the
    dev rows are the one test fold; without, ``cv`` shuffled folds (``random_state``) of ``F`` itself."""
    if dev is None:
        return KFold(cv, shuffle=True, random_state=sklearn_random_state(random_state)), F, y
    F_val, y_val = dev
    split = PredefinedSplit(np.r_[np.full(F.shape[0], -1), np.zeros(F_val.shape[0], dtype=int)])
    stacked = sparse.vstack([F, F_val]).tocsr() if sparse.issparse(F) else np.vstack([F, F_val])
    return split, stacked, np.r_[y, y_val]
