"""Argument checks shared by lvgp's estimators (a clear ``ValueError``/``TypeError`` naming the
argument, instead of a failure deep inside torch, gpytorch or scipy), and target
standardization that cannot overflow."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["check_number", "check_count", "check_block", "check_string_rows", "standardization"]


def check_number(
    name: str,
    value: object,
    *,
    integer: bool = False,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    allow_none: bool = False,
) -> None:
    """Raise unless ``value`` is a finite real (an integer if ``integer``) within the bounds.

    Example: ``check_number("noise_init", 0.0, minimum=0, exclusive_minimum=True)`` raises
    ``ValueError: noise_init must be > 0; got 0.0``.
    """
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {what}{' or None' if allow_none else ''}; got {value!r}")
    try:
        number = float(value)  # a numbers.Real, checked above
    except OverflowError:  # an integer beyond float64
        number = math.inf
    if not math.isfinite(number):
        from .constraints import shown

        raise ValueError(f"{name} must be finite in float64; got {shown(value)}")
    if minimum is not None and (number <= minimum if exclusive_minimum else number < minimum):
        raise ValueError(f"{name} must be {'>' if exclusive_minimum else '>='} {minimum}; got {value!r}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be <= {maximum}; got {value!r}")


def check_count(name: str, value: object, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as a Python ``int`` of at least ``minimum`` and, if given, at most ``maximum`` (numpy integers
    are taken), or a ``ValueError``/``TypeError`` naming ``name``."""
    check_number(name, value, integer=True, minimum=minimum, maximum=maximum)
    return int(value)  # type: ignore[call-overload]  # an Integral, checked


def check_block(block: object, name: str = "block") -> int:
    """A prediction block size: a positive integer (``ValueError``/``TypeError`` naming ``name``)."""
    return check_count(name, block)


def check_string_rows(texts: list, name: str) -> None:
    """A ``TypeError`` naming ``name``, the rows of ``texts`` that are not strings, their types and their number
    (a missing text, ``None`` or ``NaN``, is no document); nothing where every row is a string."""
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        kinds = ", ".join(sorted({type(texts[i]).__name__ for i in bad}))
        raise TypeError(
            f"{name} must hold strings; rows {bad[:10]}{' ...' if len(bad) > 10 else ''} are not ({kinds}: "
            f"{len(bad)} of {len(texts)} rows); a missing text (None, NaN) is no document: drop its row"
        )


def standardization(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation of finite targets ``y`` (``n`` or ``n x B``),
    computed on ``y / max|y|`` so that neither overflows (targets of 1e200 standardize like
    targets of 1); a constant column gets standard deviation 1. Raises ``ValueError`` if the
    standardized targets would not be finite."""
    y = np.asarray(y, dtype=np.float64)
    scale = np.max(np.abs(y), axis=0) if len(y) else np.ones(y.shape[1:])
    scale = np.where(scale > 0, scale, 1.0)
    scaled = y / scale
    mean = scaled.mean(0)
    std = scaled.std(0)
    std = np.where(std > 0, std, 1.0)
    standardized = (scaled - mean) / std
    if not np.isfinite(standardized).all():
        raise ValueError("the targets cannot be standardized in float64 (too large or too small a spread)")
    return mean * scale, np.where(scaled.std(0) > 0, std * scale, 1.0)
