"""Calibration of predictions.

* Class probabilities: the log loss, the expected calibration error and the reliability diagram's
  bins (Guo, Pleiss, Sun & Weinberger, ICML 2017: equal-width bins of the confidence, the largest
  predicted probability).
* Gaussian predictive distributions of regression targets: the mean negative log predictive
  density (NLPD), the share of targets inside central intervals (coverage), and the calibration
  curve (nominal against empirical coverage)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .targets import true_class_log_proba

__all__ = [
    "log_loss",
    "reliability_bins",
    "reliability_curve",
    "expected_calibration_error",
    "multiclass_hinge",
    "ECE_BINS",
    "gaussian_nlpd",
    "interval_coverage",
    "COVERAGE_LEVELS",
    "CALIBRATION_LEVELS",
    "regression_calibration",
]

#: the central intervals every regression record reports the coverage of
COVERAGE_LEVELS = (0.5, 0.9, 0.95)
#: the nominal levels of a calibration curve
CALIBRATION_LEVELS = tuple(round(0.05 * k, 2) for k in range(1, 20)) + (0.99,)

#: equal-width confidence bins of the expected calibration error
ECE_BINS = 15


def log_loss(proba: np.ndarray, classes: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log predictive probability of the true class (``proba``: ``n x C`` over
    ``classes``; a label the model never saw counts as probability 1e-300, as in
    :func:`~lvgp.base.targets.true_class_log_proba`)."""
    return float(-np.mean(true_class_log_proba(proba, classes, y)))


def reliability_bins(
    proba: np.ndarray, classes: np.ndarray, y: np.ndarray, bins: int = ECE_BINS, sample_weight=None
) -> dict:
    """Per equal-width confidence bin: the number of documents, the sum of their confidences and
    the number predicted right -- sums, so that bins of several samples add up. ``sample_weight``
    (``n``, non-negative): each document counted that many times (the sums weighted; the ECE of
    :func:`expected_calibration_error` then weighs the documents so)."""
    proba = np.asarray(proba, dtype=np.float64)
    confidence = proba.max(axis=1)
    correct = np.asarray(classes)[proba.argmax(axis=1)] == np.asarray(y)
    index = np.minimum((confidence * bins).astype(int), bins - 1)  # confidence 1.0 in the last bin
    if sample_weight is None:
        count = np.bincount(index, minlength=bins)
        weight = np.ones(len(index))
    else:
        weight = np.asarray(sample_weight, dtype=np.float64)
        if weight.shape != index.shape or (weight < 0).any() or not np.isfinite(weight).all():
            raise ValueError(
                f"sample_weight: {len(index)} finite non-negative weights expected, one a document; got shape "
                f"{weight.shape}"
            )
        count = np.bincount(index, weights=weight, minlength=bins)
    return {
        "count": count.tolist(),
        "confidence": np.bincount(index, weights=weight * confidence, minlength=bins).tolist(),
        "correct": np.bincount(index, weights=weight * correct, minlength=bins).tolist(),
    }


def reliability_curve(binned: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The reliability diagram's points of several samples' :func:`reliability_bins` pooled: the mean
    confidence and the accuracy of each non-empty bin."""
    count = np.sum([b["count"] for b in binned], axis=0)
    keep = count > 0
    confidence = np.sum([b["confidence"] for b in binned], axis=0)[keep] / count[keep]
    accuracy = np.sum([b["correct"] for b in binned], axis=0)[keep] / count[keep]
    return confidence, accuracy


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


def _checked(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, mean, std = (np.asarray(a, dtype=np.float64).ravel() for a in (y, mean, std))
    if not (len(y) == len(mean) == len(std)):
        raise ValueError(f"y, mean and std must have one entry per target; got {len(y)}, {len(mean)}, {len(std)}")
    if not (np.isfinite(std).all() and (std > 0).all()):
        raise ValueError("std must be positive and finite")
    return y, mean, std


def gaussian_nlpd(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> float:
    r"""Mean negative log predictive density of targets ``y`` under
    :math:`\mathcal N(\text{mean}_i, \text{std}_i^2)`:
    :math:`\frac1n\sum_i \frac12\log(2\pi s_i^2) + \frac{(y_i - m_i)^2}{2 s_i^2}` (lower is better; in the units
    of ``y``, so compare methods on the same targets)."""
    y, mean, std = _checked(y, mean, std)
    z = (y - mean) / std
    return float(np.mean(0.5 * np.log(2 * np.pi) + np.log(std) + 0.5 * z * z))


def interval_coverage(
    y: np.ndarray, mean: np.ndarray, std: np.ndarray, levels: tuple[float, ...] = COVERAGE_LEVELS
) -> dict[float, float]:
    r"""The share of targets inside each central Gaussian interval: ``{level: share}`` with the
    interval :math:`m \pm \Phi^{-1}((1 + \text{level}) / 2)\, s` (1.96 s for 95%)."""
    from scipy.stats import norm

    y, mean, std = _checked(y, mean, std)
    z = np.abs(y - mean) / std
    return {float(level): float(np.mean(z <= norm.ppf(0.5 + level / 2))) for level in levels}


def regression_calibration(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> dict:
    """What a regression record holds about its predictive distribution: ``nlpd``, the coverage
    of the 50/90/95% intervals (``coverage_50`` ...), the mean predictive ``mean_std``, and the
    calibration curve (``calibration``: nominal levels and the empirical coverage of each)."""
    curve = interval_coverage(y, mean, std, CALIBRATION_LEVELS)
    record: dict[str, Any] = {"nlpd": gaussian_nlpd(y, mean, std), "mean_std": float(np.mean(std))}
    record.update({f"coverage_{round(100 * level)}": share for level, share in interval_coverage(y, mean, std).items()})
    record["calibration"] = {"nominal": list(curve), "empirical": list(curve.values())}
    return record
