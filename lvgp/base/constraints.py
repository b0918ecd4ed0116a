"""Declarative parameter checks of lvgp's estimators, in the manner of scikit-learn's
``_parameter_constraints``: each estimator class holds one table, ``name -> [constraint, ...]``
(any of them may hold; ``None`` in the list allows ``None``), read once at ``fit`` by
:func:`check_params` before any work. A violated table raises a ``TypeError`` (no constraint
takes the value's type) or a ``ValueError`` (the type is right, the value is not), naming the
parameter, what it must be, and the value.

Example::

    class MyEstimator(BaseEstimator):
        _parameter_constraints = {"latent_dim": [Integer(1)], "rho": [Real(0, open_low=True)], "vocabulary": [None, Instance(Vocabulary)]}

        def fit(self, X, y):
            check_params(self)
            ...
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Constraint",
    "Integer",
    "Real",
    "Options",
    "Instance",
    "Boolean",
    "IsCallable",
    "RandomState",
    "Anything",
    "Embeddings",
    "Device",
    "check_params",
    "check_values",
    "ParameterError",
    "FITTING",
    "RUNTIME",
    "documents_input",
]


class ParameterError(ValueError):
    """Raised as a ValueError for bad values; see :func:`check_params`."""


class Constraint:
    """One acceptable kind of value: :meth:`accepts_type` (the kind) and :meth:`problem` (``None``
    when the value is acceptable, else what is wrong), and a description for messages."""

    def accepts_type(self, value: Any) -> bool:
        raise NotImplementedError

    def problem(self, value: Any) -> str | None:
        return None

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (Python's or numpy's, not a bool) in ``[low, high]``."""

    low: int | None = None
    high: int | None = None

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))

    def problem(self, value: Any) -> str | None:
        if self.low is not None and value < self.low:
            return f">= {self.low}"
        if self.high is not None and value > self.high:
            return f"<= {self.high}"
        return None

    def describe(self) -> str:
        bounds = [f">= {self.low}" if self.low is not None else "", f"<= {self.high}" if self.high is not None else ""]
        return "an integer" + "".join(f" {b}" for b in bounds if b)


@dataclass(frozen=True)
class Real(Constraint):
    """A finite real number (integers included, not bools) within the bounds; ``open_low`` /
    ``open_high`` exclude the bound itself."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))

    def problem(self, value: Any) -> str | None:
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float64 (10**400)
            return "finite in float64 (at most 1.8e308 in magnitude)"
        if not math.isfinite(number):
            return "finite"
        if self.low is not None and (number <= self.low if self.open_low else number < self.low):
            return f"{'>' if self.open_low else '>='} {self.low:g}"
        if self.high is not None and (number >= self.high if self.open_high else number > self.high):
            return f"{'<' if self.open_high else '<='} {self.high:g}"
        return None

    def describe(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.open_low else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.open_high else '<='} {self.high:g}")
        return "a finite real number" + (" " + " and ".join(parts) if parts else "")


class Options(Constraint):
    """One of the given values (strings, usually)."""

    def __init__(self, *values: Any) -> None:
        self.values = values

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, type(self.values[0]))

    def problem(self, value: Any) -> str | None:
        return None if value in self.values else self.describe()

    def describe(self) -> str:
        return repr(self.values[0]) if len(self.values) == 1 else f"one of {self.values}"


class Instance(Constraint):
    """An instance of one of the given types."""

    def __init__(self, *types: type, name: str | None = None) -> None:
        self.types = types
        self.name = name

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, self.types)

    def describe(self) -> str:
        return self.name or "an instance of " + " or ".join(t.__name__ for t in self.types)


class Boolean(Constraint):
    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def describe(self) -> str:
        return "a bool"


class IsCallable(Constraint):
    def accepts_type(self, value: Any) -> bool:
        return callable(value)

    def describe(self) -> str:
        return "a callable"


class RandomState(Constraint):
    """scikit-learn's ``random_state``: ``None``, an integer in ``[0, 2**32 - 1]``, or a numpy
    ``Generator`` / ``RandomState``."""

    def accepts_type(self, value: Any) -> bool:
        return value is None or isinstance(value, (numbers.Integral, np.random.Generator, np.random.RandomState))

    def problem(self, value: Any) -> str | None:
        if isinstance(value, (bool, np.bool_)):
            return "an integer, not a bool"
        if isinstance(value, numbers.Integral) and not 0 <= int(value) < 2**32:
            return "in [0, 2**32 - 1]"
        return None

    def describe(self) -> str:
        return "None, an integer seed or a numpy Generator"


class Anything(Constraint):
    """No check (a value whose validity is decided where it is used, e.g. a dict of kernel options)."""

    def accepts_type(self, value: Any) -> bool:
        return True

    def describe(self) -> str:
        return "anything"


def check_params(estimator: Any) -> None:
    """Check every parameter of ``estimator`` (``get_params(deep=False)``) against its class's
    ``_parameter_constraints``; a parameter the table does not list is an error of the class
    (``RuntimeError``), so that no parameter goes unchecked."""
    table: dict[str, list] = getattr(type(estimator), "_parameter_constraints", None) or {}
    params = estimator.get_params(deep=False)
    missing = sorted(set(params) - set(table))
    if missing:
        raise RuntimeError(f"{type(estimator).__name__}._parameter_constraints lists no constraint for {missing}")
    check_values(params, table)
    fit_options = getattr(estimator, "_check_fit_options", None)
    if fit_options is not None:  # what the estimator makes of its optimizer= (lvgp.base.fit_options)
        fit_options()


def check_values(values: dict[str, Any], table: dict[str, list], prefix: str = "") -> None:
    """Check ``values`` (name -> value) against ``table`` (name -> constraints); the errors name
    ``prefix + name`` (e.g. ``kernel.latent_dim``)."""
    for name, value in values.items():
        options = table[name]
        if value is None and None in options:
            continue
        constraints = [c for c in options if c is not None]
        typed = [c for c in constraints if c.accepts_type(value)]
        allowed = " or ".join(["None"] * (None in options) + [c.describe() for c in constraints])
        if not typed:
            raise TypeError(f"{prefix}{name} must be {allowed}; got {shown(value)} ({type(value).__name__})")
        problems = [c.problem(value) for c in typed]
        if all(p is not None for p in problems):
            # a wrong option names every allowed value (e.g. None, a number or 'balanced')
            wanted = allowed if any(isinstance(c, Options) for c in typed) else " or ".join(p for p in problems if p)
            raise ParameterError(f"{prefix}{name} must be {wanted}; got {shown(value)}")


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters (an integer of 400 digits is
    shown by its first digits and its length)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, numbers.Integral):
        return f"{text[:20]}... (an integer of {len(str(abs(int(value))))} digits)"
    return text[: limit - 3] + "..."


# ------------------------------------------------------------------ what many estimators share


class Embeddings(Constraint):
    """An estimator's ``word_embeddings``: a name (e.g. ``"glove-6b-50d"``, ``"corpus"``), a table
    (anything with ``lookup``, e.g. :class:`~lvgp.datasets.WordEmbeddings`), or a tuple of these."""

    def accepts_type(self, value: Any) -> bool:
        parts = value if isinstance(value, (tuple, list)) else (value,)
        return len(parts) > 0 and all(isinstance(p, str) or hasattr(p, "lookup") for p in parts)

    def describe(self) -> str:
        return "the name of word embeddings, 'corpus', a WordEmbeddings table, or a tuple of these"


class Device(Constraint):
    """An estimator's ``device``: a device string or a ``torch.device``, usable here
    (:func:`lvgp.base.device.check_device`)."""

    def accepts_type(self, value: Any) -> bool:
        import torch

        return isinstance(value, (str, torch.device))

    def problem(self, value: Any) -> str | None:
        import torch

        from .device import device_problem

        try:
            return device_problem(torch.device(value))
        except (RuntimeError, ValueError):
            return "a torch device such as 'cpu' or 'cuda'"

    def describe(self) -> str:
        return "a torch device ('cpu', 'cuda', 'cuda:1' or a torch.device)"


def _vocabulary() -> Constraint:
    from ..bow.vocabulary import Vocabulary

    return Instance(Vocabulary, name="an lvgp.Vocabulary")


#: what every iterative estimator takes beside its model and fit options
RUNTIME: dict[str, list] = {
    "random_state": [RandomState()],
    "verbose": [Boolean()],
    "device": [Device()],
}

#: the flat fitting options of the estimators whose optimizer is not an object
#: (:mod:`lvgp.base.fit_options`): the Pyro baselines
FITTING: dict[str, list] = {
    "max_iter": [Integer(1)],
    "tol": [Real(0)],
    "lr": [Real(0, open_low=True)],
    "n_iter_no_change": [Integer(1)],
    **RUNTIME,
}


def documents_input() -> dict[str, list]:
    """``vocabulary`` and ``num_words``: the input options of the estimators of documents."""
    return {"vocabulary": [None, _vocabulary()], "num_words": [None, Integer(1)]}
