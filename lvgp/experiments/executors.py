"""Where a study's cells run: one interface, several engines.

A study is a list of *cells* (one model fit each: method x split x hyper-parameters). An
executor runs ``fn(context, cell)`` for every cell and yields ``(cell, result, error)``
as cells finish -- ``error`` is the formatted traceback of a cell that raised, and the
other cells go on. ``context`` (what every cell needs: the study specification, from which
workers load and split the data themselves) reaches each worker once, not once per cell.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from ..base.validation import check_number

Cell = dict
Outcome = tuple[Cell, Any, str | None]


def _call(fn: Callable, context: Any, cell: Cell) -> tuple[Any, str | None]:
    try:
        return fn(context, cell), None
    except Exception:  # noqa: BLE001 - a failing cell is reported, the study goes on
        return None, traceback.format_exc()


class Executor(ABC):
    """Runs cells; see the module docstring."""

    #: cells not run (the report-only executor counts them)
    skipped: int = 0

    @abstractmethod
    def run(self, fn: Callable[[Any, Cell], Any], context: Any, cells: list[Cell]) -> Iterator[Outcome]:
        """Yield ``(cell, result, error)`` for every cell, in completion order."""


def limit_threads(threads: int) -> Callable[[], None]:
    """Use ``threads`` threads in torch and in the BLAS/OpenMP pools numpy, scipy and
    scikit-learn call (threadpoolctl); returns the function that restores the previous counts.
    (Pinning only torch left scipy's L-BFGS on a multi-threaded BLAS: a long fit's rounding,
    hence its path, then depended on the machine's load.)"""
    import torch
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    limiter = threadpool_limits(limits=threads)

    def restore() -> None:
        limiter.restore_original_limits()
        torch.set_num_threads(previous)

    return restore


class InProcessExecutor(Executor):
    """Cells one after the other in this process (the default), with ``threads`` threads in torch
    and the BLAS pools (``None``: the libraries' defaults, every core)."""

    def __init__(self, threads: int | None = None):
        check_number("threads", threads, integer=True, minimum=1, allow_none=True)
        self.threads = threads

    def run(self, fn, context, cells):
        restore = limit_threads(self.threads) if self.threads is not None else None
        try:
            for cell in cells:
                result, error = _call(fn, context, cell)
                yield cell, result, error
        finally:
            if restore is not None:
                restore()


# ------------------------------------------------------------------ local processes

_WORKER_CONTEXT: dict[str, Any] = {}


def _init_worker(context: Any, threads: int) -> None:
    from ..base.fitting import INTERRUPTS

    limit_threads(threads)  # for the worker's lifetime
    INTERRUPTS.set("raise")  # Ctrl-C (the terminal's, sent to every worker) ends the cell, never records it
    _WORKER_CONTEXT["context"] = context


def _run_in_worker(fn: Callable, cell: Cell) -> tuple[Any, str | None]:
    return _call(fn, _WORKER_CONTEXT["context"], cell)


class ProcessExecutor(Executor):
    """Cells in ``jobs`` local processes (``--jobs J``). Each worker receives the context
    once (pool initializer) and uses ``threads`` torch threads (default ``cpu_count // jobs``:
    more would make the workers' OpenMP threads spin against each other)."""

    def __init__(self, jobs: int, threads: int | None = None):
        check_number("jobs", jobs, integer=True, minimum=1)
        check_number("threads", threads, integer=True, minimum=1, allow_none=True)
        self.jobs, self.threads = jobs, threads

    def run(self, fn, context, cells):
        threads = self.threads or max(1, (os.cpu_count() or 1) // self.jobs)
        ctx = multiprocessing.get_context("spawn")
        pool = cf.ProcessPoolExecutor(self.jobs, mp_context=ctx, initializer=_init_worker, initargs=(context, threads))
        try:
            futures = {pool.submit(_run_in_worker, fn, cell): cell for cell in cells}
            for future in cf.as_completed(futures):
                cell = futures[future]
                try:
                    result, error = future.result()
                except Exception:  # noqa: BLE001 - e.g. a worker process died
                    result, error = None, traceback.format_exc()
                yield cell, result, error
        except BaseException:  # Ctrl-C (or the consumer stopped): end the workers now, run nothing more
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


class ReportOnlyExecutor(Executor):
    """Runs nothing (``--report-only``): the study writes its tables and figures from the
    cells already finished; ``skipped`` counts the cells left out."""

    def __init__(self):
        self.skipped = 0

    def run(self, fn, context, cells):
        self.skipped += len(cells)
        return iter(())
