"""Warning categories of lvgp (filter them with :mod:`warnings` as usual), and :func:`warn`, which
attributes a warning to the user's line that called into lvgp."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings as _warnings
from collections.abc import Iterator
from typing import Any

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: frames passed over besides lvgp's own: the standard library's context managers (lvgp's
#: ``with ... as x:`` blocks warn from inside them)
_PASS_OVER = (
    _PACKAGE,
    os.path.join(os.path.dirname(os.path.abspath(str(__import__("contextlib").__file__))), "contextlib.py"),
)


class LVGPWarning(UserWarning):
    """Base class of lvgp's warnings."""


class UnseenWordsWarning(LVGPWarning):
    """Words unknown to a fitted vocabulary were dropped; the message counts them."""


class EmptyDocumentsWarning(LVGPWarning):
    """Documents without any known word were met; the message says how they were handled."""


class TruncationWarning(LVGPWarning):
    """Documents longer than a requested width were truncated; the message counts them."""


class UncertaintyWarning(LVGPWarning):
    """A fitted model's predictive intervals cannot be trusted: its noise sits at its constraint's
    floor (it interpolates the training targets), or too few held-out targets fall inside its 95%
    intervals; the message gives the numbers and what to do."""


class NoSignalWarning(LVGPWarning):
    """A fitted regressor's noise holds nearly all of its standardized training targets' variance (or, in
    the Dirichlet GP classifier, nearly all of every class's prior variance at its training documents):
    it found no signal and predicts about their mean; the message gives the noise and what to try."""


class CacheWarning(LVGPWarning):
    """An on-disk cache cannot be read or written (a read-only or missing folder, a full disk, a
    damaged file): the results are computed anyway; the message names the file."""


class PerformanceWarning(LVGPWarning):
    """A setting will run slower than its alternative on this machine (e.g. bfloat16 products on a
    CPU that only emulates them); the message says which setting is faster."""


class MissingEmbeddingsWarning(LVGPWarning):
    """Vocabulary words have no pretrained vector; the message counts them."""


class MixedCodeWarning(LVGPWarning):
    """A study resumed beside finished cells that other code ran (a commit of another ``lvgp/``, uncommitted
    changes, or another lvgp version, by each record's ``provenance``): its table will mix their records with
    the run's; the message counts the cells by the code that ran them."""


def _one_line(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    return f"{category.__name__}: {message}\n"


def use_short_format() -> None:
    """Show every warning as one line, ``Category: message``, without the file and line that
    raised it (Python's default prints the path of the installation, which says nothing to a
    reader of a notebook or a log). The tutorials call it in their first cell. It replaces
    ``warnings.formatwarning`` for the whole process (:func:`short_format`: for a block)."""
    _warnings.formatwarning = _one_line


@contextlib.contextmanager
def short_format(prefix: str = "") -> Iterator[None]:
    """:func:`use_short_format` inside the ``with`` block alone, each line after ``prefix``; the
    format before it comes back on leaving. The ``lvgp`` command shows its warnings so
    (``lvgp: EmptyDocumentsWarning: ...``), as it shows its errors, where the default format named
    the frame the warning was attributed to (``<frozen runpy>:88`` under ``python -m lvgp``)."""
    before = _warnings.formatwarning

    def one_line(
        message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
    ) -> str:
        return prefix + _one_line(message, category, filename, lineno, line)

    _warnings.formatwarning = one_line
    try:
        yield
    finally:
        _warnings.formatwarning = before


#: (category, message, file, line) of the warnings shown under Python's ``"default"`` action: see :func:`warn`
_SHOWN: set[tuple[type[Warning], str, str, int]] = set()


def _action(category: type[Warning], text: str, module: str, lineno: int) -> str:
    """The action of the first of ``warnings.filters`` that matches (Python's own matching), or
    ``warnings.defaultaction``."""
    for action, msg, cat, mod, ln in _warnings.filters:
        if (
            (msg is None or msg.match(text))
            and issubclass(category, cat)
            and (mod is None or mod.match(module))
            and (ln == 0 or ln == lineno)
        ):
            return str(action)
    return str(getattr(_warnings, "defaultaction", "default"))


def warn(message: Any, category: type[Warning] = UserWarning, stacklevel: int | None = None) -> None:
    """``warnings.warn`` attributed to the first frame outside lvgp: the user's line (or the library's
    that called lvgp), never a line inside lvgp, however deep the warning is raised (``stacklevel``
    is accepted and ignored: the level is found by walking the stack).

    Under Python's ``"default"`` action (the filters' default: once per message and line) a warning
    already shown is not shown again, also where Python itself would repeat it: any
    ``warnings.catch_warnings()`` (scikit-learn's ``GridSearchCV`` enters one per fit) resets
    Python's record of what was shown, so six candidates scoring one fold printed its
    ``UnseenWordsWarning`` six times. Under ``"always"`` (``pytest.warns``, a ``record=True``
    catcher with ``simplefilter("always")``) every warning is shown."""
    frame: Any = sys._getframe(1)
    level = 2  # 1: this function; 2: its caller
    while frame is not None and frame.f_code.co_filename.startswith(_PASS_OVER):
        frame = frame.f_back
        level += 1
    if frame is not None and isinstance(category, type) and issubclass(category, Warning):
        text = str(message)
        module = str(frame.f_globals.get("__name__", ""))
        key = (category, text, frame.f_code.co_filename, frame.f_lineno)
        if _action(category, text, module, frame.f_lineno) == "default":
            if key in _SHOWN:
                return
            _SHOWN.add(key)
    _warnings.warn(message, category, stacklevel=level)
