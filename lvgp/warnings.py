"""Warning categories of lvgp (filter them with :mod:`warnings` as usual)."""


class LVGPWarning(UserWarning):
    """Base class of lvgp's warnings."""


class UnseenWordsWarning(LVGPWarning):
    """Words unknown to a fitted vocabulary were dropped; the message counts them."""


class EmptyDocumentsWarning(LVGPWarning):
    """Documents without any known word were met; the message says how they were handled."""


class TruncationWarning(LVGPWarning):
    """Documents longer than a requested width were truncated; the message counts them."""


class MissingEmbeddingsWarning(LVGPWarning):
    """Vocabulary words have no pretrained vector; the message counts them."""


def _one_line(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    return f"{category.__name__}: {message}\n"


def use_short_format() -> None:
    """Show every warning as one line, ``Category: message``, without the file and line that
    raised it (Python's default prints the path of the installation, which says nothing to a
    reader of a notebook or a log). The tutorials call it in their first cell. It replaces
    ``warnings.formatwarning`` for the whole process."""
    import warnings

    warnings.formatwarning = _one_line
