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


def _cgroup_cores() -> int | None:
    """The cores a cgroup v2 CPU quota allows (``/sys/fs/cgroup/cpu.max``, as containers set it), or
    ``None`` without one."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else max(1, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        return None


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by a cgroup CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_cores()
    return cores if quota is None else min(cores, quota)


def free_cores() -> int:
    """The usable cores (:func:`usable_cores`) not taken by other work: minus the machine's
    one-minute load average, rounded (at least 1). What the studies' default ``--threads`` and
    ``--jobs`` divide, so that threads x processes never exceed the free cores: on two cores shared
    with one busy process, two torch threads per cell spun their OpenMP workers against it, several
    times slower than one (issue 41; ``benchmarks/threads_under_load.py``)."""
    cores = usable_cores()
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return cores
    return max(1, min(cores, cores - int(round(load))))


def default_threads(jobs: int = 1) -> int:
    """Threads per cell when ``--threads`` is not given: the free cores shared among ``jobs``
    processes (at least 1)."""
    return max(1, free_cores() // max(1, jobs))


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
    and the BLAS pools (``None``: :func:`default_threads`, the cores free when the study starts)."""

    def __init__(self, threads: int | None = None):
        check_number("threads", threads, integer=True, minimum=1, allow_none=True)
        self.threads = threads

    def run(self, fn, context, cells):
        restore = limit_threads(self.threads or default_threads())
        try:
            for cell in cells:
                result, error = _call(fn, context, cell)
                yield cell, result, error
        finally:
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
    once (pool initializer) and uses ``threads`` torch threads (default: :func:`default_threads`, the
    free cores // jobs: more would make the workers' OpenMP threads spin against each other); the
    workers' OpenMP threads wait passively (``OMP_WAIT_POLICY=PASSIVE`` unless set)."""

    def __init__(self, jobs: int, threads: int | None = None):
        check_number("jobs", jobs, integer=True, minimum=1)
        check_number("threads", threads, integer=True, minimum=1, allow_none=True)
        self.jobs, self.threads = jobs, threads

    def worker_threads(self) -> int:
        """Each worker's threads: ``threads``, or :func:`default_threads` of ``jobs``."""
        return self.threads or default_threads(self.jobs)

    def total_threads(self) -> int:
        """The threads of all workers together (``jobs`` x :meth:`worker_threads`)."""
        return self.jobs * self.worker_threads()

    def run(self, fn, context, cells):
        threads = self.worker_threads()
        ctx = multiprocessing.get_context("spawn")
        # read by the workers' OpenMP when they start (they inherit the environment); this process's
        # own environment is given back as it was when the study ends
        own_policy = os.environ.get("OMP_WAIT_POLICY")
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
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
        finally:
            if own_policy is None:
                os.environ.pop("OMP_WAIT_POLICY", None)
        pool.shutdown(wait=True)


class ReportOnlyExecutor(Executor):
    """Runs nothing (``--report-only``): the study writes its tables and figures from the
    cells already finished; ``skipped`` counts the cells left out."""

    def __init__(self):
        self.skipped = 0

    def run(self, fn, context, cells):
        self.skipped += len(cells)
        return iter(())
