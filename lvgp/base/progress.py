"""Progress bars of every long fit and study: tqdm, silent unless asked for, and quiet in logs.

Every iterative fit of lvgp (L-BFGS/Adam through :func:`~lvgp.base.fitting.minimize`, the
sparse GP-LVSM's SVI, sLDA, CLGP, the variational GP classifier) and the studies' cell bar use
:func:`progress_bar`: disabled when ``verbose`` is false (``verbose=False`` prints nothing),
redrawn at most once a second when standard error is not a terminal (a log file or CI gets a
line a second at most, not one per step).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm

#: seconds between redraws on a terminal and elsewhere (files, pipes, CI logs)
TERMINAL_INTERVAL, LOG_INTERVAL = 0.1, 1.0


def progress_bar(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str | None = None,
    verbose: bool = True,
    leave: bool = False,
    **options: Any,
) -> tqdm:
    """A tqdm bar over ``iterable`` (or of ``total`` steps), disabled unless ``verbose``."""
    try:
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        terminal = False
    interval = TERMINAL_INTERVAL if terminal else LOG_INTERVAL
    return tqdm(iterable, total=total, desc=desc, disable=not verbose, leave=leave, mininterval=interval, **options)
