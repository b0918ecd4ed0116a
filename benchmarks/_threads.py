"""The thread count of the benchmark scripts, one rule for all: ``--threads`` where given; else one thread for a
``--quick`` run (a smoke run beside the test suite's other worker, where two threads spin against it:
``benchmarks/README.md``, "Five cuts") and the script's default for a full run (two, the two-core host's cores, or
``None``: torch's own)."""

from __future__ import annotations

import argparse

#: a ``--quick`` run's threads
QUICK_THREADS = 1


def add_threads_option(parser: argparse.ArgumentParser, default: int | None = 2, what: str = "threads") -> None:
    """``--threads`` on ``parser``, its help naming the rule (the module docstring)."""
    full = "torch's" if default is None else str(default)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help=f"{what} (default {full}; {QUICK_THREADS} with --quick: a smoke run beside the test suite's other worker)",
    )


def resolve_threads(args: argparse.Namespace, default: int | None = 2) -> int | None:
    """``args.threads`` by the rule (the module docstring), written back to ``args`` and returned."""
    if args.threads is None:
        args.threads = QUICK_THREADS if args.quick else default
    return args.threads
