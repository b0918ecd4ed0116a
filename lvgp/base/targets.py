"""Checks of regression targets and class labels, and per-document scores of predicted probabilities."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets

from .._typing import TensorLike
from ..bow.padded import _rows_text
from ..warnings import warn

__all__ = ["check_targets_array", "check_labels", "raveled_column", "true_class_log_proba"]


def _require_target(y: object, name: str) -> None:
    """scikit-learn's wording for a missing target."""
    if y is None:
        raise ValueError(f"this estimator requires {name} to be passed, but the target {name} is None")


def raveled_column(y: np.ndarray) -> np.ndarray:
    """``y`` of shape ``n x 1`` raveled to ``n``, with scikit-learn's ``DataConversionWarning`` (its words, attributed
    to the caller's line); any other ``y`` as it is."""
    if y.ndim == 2 and y.shape[1] == 1:
        warn(
            "A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
            "(n_samples, ), for example using ravel().",
            DataConversionWarning,
        )
        return y.ravel()
    return y


def check_targets_array(y: TensorLike, n: int, name: str = "y") -> np.ndarray:
    """Validate regression targets: numeric, finite, ``n`` rows; returns float64 ``(n,)`` or ``(n, B)``."""
    _require_target(y, name)
    raw = y if torch.is_tensor(y) else np.asarray(y)
    strings = not torch.is_tensor(raw) and (
        raw.dtype.kind in "USV" or (raw.dtype.kind == "O" and any(isinstance(v, (str, bytes)) for v in raw.flat))
    )
    if strings:  # as scikit-learn: strings are not numbers, even when they read like numbers
        raise TypeError(
            f"{name} must be numeric regression targets; got an array of dtype {raw.dtype} (convert it, e.g. "
            f"{name}.astype(float), if its values are numbers)"
        )
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be numeric regression targets ({err})") from err
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (n,) or (n, num_outputs); got {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but X has {n} documents")
    bad = ~np.isfinite(arr.reshape(n, -1)).all(-1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(
            f"{name} holds NaN or infinite values in rows {rows[:10].tolist()}{' ...' if rows.size > 10 else ''}"
        )
    return arr


def check_labels(y: TensorLike, n: int, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Validate class labels: one per document (``n``; a column vector ``n x 1`` is raveled with scikit-learn's
    ``DataConversionWarning``), no missing values, at least two classes. Returns ``(classes, codes)`` as
    ``np.unique(y, return_inverse=True)``."""
    _require_target(y, name)
    arr = np.asarray(y)
    arr = raveled_column(arr)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must hold one label per document: {n} documents, {name} of shape {arr.shape}")
    if arr.dtype.kind == "f" or arr.dtype == object:
        missing = np.array([v is None or (isinstance(v, float) and v != v) for v in arr.tolist()])
        if missing.any():
            rows = np.flatnonzero(missing)
            raise ValueError(f"{name} holds missing labels (None or NaN) in rows {_rows_text(rows)}")
    if arr.dtype.kind == "f":
        check_classification_targets(arr)  # continuous values: "Unknown label type: continuous"
    try:
        classes, codes = np.unique(arr, return_inverse=True)
    except TypeError as err:
        raise TypeError(f"{name} mixes label types that cannot be ordered ({err})") from None
    if len(classes) < 2:
        raise ValueError(f"{name} has a single class ({classes[0]!r}); a classifier needs more than one class")
    return classes, codes.reshape(-1)


def true_class_log_proba(proba: np.ndarray, classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-document log predictive probability of the true class: ``proba`` is ``n x C`` over
    ``classes``; a label not in ``classes`` (never seen in training) counts as probability 0,
    floored at 1e-300 like every probability."""
    column = {c: j for j, c in enumerate(classes)}
    cols = np.array([column.get(c, -1) for c in y], dtype=np.int64)
    p = np.where(cols >= 0, proba[np.arange(len(cols)), np.maximum(cols, 0)], 0.0)
    return np.log(np.maximum(p, 1e-300))
