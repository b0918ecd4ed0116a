"""Calibration of predicted class probabilities: the log loss, the expected calibration error and
the reliability diagram's bins (Guo, Pleiss, Sun & Weinberger, ICML 2017: equal-width bins of the
confidence, the largest predicted probability)."""

from __future__ import annotations

import numpy as np

from .targets import true_class_log_proba

__all__ = ["log_loss", "reliability_bins", "expected_calibration_error", "multiclass_hinge", "ECE_BINS"]

#: equal-width confidence bins of the expected calibration error
ECE_BINS = 15


def log_loss(proba: np.ndarray, classes: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log predictive probability of the true class (``proba``: ``n x C`` over
    ``classes``; a label the model never saw counts as probability 1e-300, as in
    :func:`~lvgp.base.targets.true_class_log_proba`)."""
    return float(-np.mean(true_class_log_proba(proba, classes, y)))


def reliability_bins(proba: np.ndarray, classes: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> dict:
    """Per equal-width confidence bin: the number of documents, the sum of their confidences and
    the number predicted right -- sums, so that bins of several samples add up."""
    proba = np.asarray(proba, dtype=np.float64)
    confidence = proba.max(axis=1)
    correct = np.asarray(classes)[proba.argmax(axis=1)] == np.asarray(y)
    index = np.minimum((confidence * bins).astype(int), bins - 1)  # confidence 1.0 in the last bin
    return {
        "count": np.bincount(index, minlength=bins).tolist(),
        "confidence": np.bincount(index, weights=confidence, minlength=bins).tolist(),
        "correct": np.bincount(index, weights=correct.astype(float), minlength=bins).tolist(),
    }


def expected_calibration_error(binned: dict) -> float:
    r""":math:`\sum_b \frac{|B_b|}{n}\,|\mathrm{acc}(B_b) - \mathrm{conf}(B_b)|` from
    :func:`reliability_bins` (of one sample, or summed over several)."""
    count = np.asarray(binned["count"], dtype=np.float64)
    gap = np.abs(np.asarray(binned["correct"]) - np.asarray(binned["confidence"]))
    return float(gap.sum() / max(count.sum(), 1.0))


def multiclass_hinge(decision: np.ndarray, classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    r"""Per document, the multi-class hinge loss :math:`\max(0, 1 - (f_y - \max_{c \ne y} f_c))` of
    ``n x C`` decision values over ``classes`` (Crammer & Singer's margin); a label the model never
    saw has margin :math:`-\infty` (loss ``inf``)."""
    decision = np.asarray(decision, dtype=np.float64)
    classes, y = np.asarray(classes), np.asarray(y)
    index = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    known = classes[index] == y
    rows = np.arange(len(y))
    true = np.where(known, decision[rows, index], -np.inf)
    other = decision.copy()
    other[rows[known], index[known]] = -np.inf
    return np.maximum(0.0, 1.0 - (true - other.max(axis=1)))
