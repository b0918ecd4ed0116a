"""Run a script as ``python SCRIPT ARGS`` would -- as ``__main__``, its folder first on ``sys.path``, its
output captured, the caller's environment -- in a process forked from a server that has imported torch,
gpytorch, pyro, scikit-learn, lvgp and what they import on first use once (``PRELOAD``;
multiprocessing's forkserver, one a test worker). The examples' and benchmarks' smoke runs spend most
of their seconds importing those; from a fork of the server they start at once. The server never runs
a parallel region, so a forked run's OpenMP threads start as in a fresh interpreter, and no run sees
another's state (each is a new fork of the clean server)."""

from __future__ import annotations

import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

#: imported once by the server: what every smoke run imports, and what most import on the way: torch's
#: dynamo and inductor (797 modules, 1.1 s: the first torch optimizer imports them), the encoders'
#: transformers (0.6 s), matplotlib's pyplot behind the studies' Agg backend (0.5 s). The server
#: skips a module that is not installed (an optional extra)
PRELOAD = [
    "torch",
    "torch._dynamo",
    "gpytorch",
    "pyro",
    "sklearn.linear_model",
    "scipy.optimize",
    "lvgp",
    "lvgp.experiments",
    "lvgp.experiments.figures",
    "safetensors.torch",
    "tokenizers",
    "transformers",
]

_context: multiprocessing.context.ForkServerContext | None = None


def _forkserver() -> multiprocessing.context.ForkServerContext:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _main(script: str, args: list[str], stdout: str, stderr: str, cwd: str, environ: dict[str, str]) -> None:
    """The run: ``script`` a path, or ``-m NAME`` for a module run as ``python -m NAME`` runs it (the working
    folder first on ``sys.path``)."""
    for fd, path in ((1, stdout), (2, stderr)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_TRUNC), fd)
    os.environ.clear()  # the caller's now, not the server's when it started
    os.environ.update(environ)
    tempfile.tempdir = None  # read from the caller's TMPDIR again, as a fresh interpreter does
    os.chdir(cwd)
    sys.argv = [script, *args]  # (a module's run: runpy sets argv[0] to the module's file)
    if script.startswith("-m "):
        sys.path.insert(0, cwd)
        runpy.run_module(script.removeprefix("-m "), run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, str(Path(script).parent))
        runpy.run_path(script, run_name="__main__")


def has_forkserver() -> bool:
    """Whether the platform has multiprocessing's forkserver (not Windows): where it has none, the runs here are
    fresh interpreters."""
    return "forkserver" in multiprocessing.get_all_start_methods()


def process_context() -> multiprocessing.context.BaseContext:
    """The context whose ``Process`` forks from the server (module docstring), or spawn's where the platform
    has no forkserver: for a test's own worker processes."""
    return _forkserver() if has_forkserver() else multiprocessing.get_context("spawn")


def run_script(
    script: Path | str, args: list[str], timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=timeout)``,
    from a fork of the server (module docstring); ``returncode`` is the script's exit status. ``script`` may
    be ``"-m NAME"``: ``python -m NAME ARGS``. Where the platform has no forkserver (Windows), that very
    ``subprocess.run``."""
    if not has_forkserver():
        head = ["-m", str(script).removeprefix("-m ")] if str(script).startswith("-m ") else [str(script)]
        command = [sys.executable, *head, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        out.touch()
        err.touch()
        process = _forkserver().Process(
            target=_main,
            args=(str(script), list(args), str(out), str(err), str(cwd or os.getcwd()), dict(os.environ)),
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired([str(script), *args], timeout, out.read_text(), err.read_text())
        return subprocess.CompletedProcess([str(script), *args], process.exitcode, out.read_text(), err.read_text())
