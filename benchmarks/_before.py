"""'Before' against 'now' in one run: the ``lvgp`` package of an earlier commit, extracted with
``git archive``, and a script run against it (or against today's tree) in a subprocess, so
that both are timed under the same load. Shared by the benchmark scripts.

The test suite's smoke runs (``--quick``) set ``LVGP_BENCHMARK_FORK=1``: there a child is a fork of
the benchmark's own process, which already holds torch, gpytorch, pyro and scikit-learn, not a fresh
interpreter that imports them again (3-4 s of every child on two cores); the other code's ``lvgp`` is
imported afresh in the fork. Its figures are a smoke run's, not a measurement: the benchmarks'
own runs leave the variable unset. A process whose torch computes on more than one thread is
never forked (GNU OpenMP's threads do not survive a fork): it starts a subprocess as usual."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
import tarfile
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extract(commit: str, into: Path) -> Path:
    """The ``lvgp`` package at ``commit`` (``git archive``) under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "lvgp"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_code(code: str, package: Path, args: dict, omp_threads: str | None = "1") -> dict:
    """Run ``code`` (``python -c``, ``args`` as JSON in ``sys.argv[1]``) with ``package`` first
    on the path; the last line it prints is parsed as JSON. ``omp_threads=None`` leaves
    ``OMP_NUM_THREADS`` unset (torch's default). Forked where ``LVGP_BENCHMARK_FORK=1`` allows it
    (module docstring)."""
    if _may_fork():
        return _parse(package, *_forked(code, package, args, omp_threads))
    # the package first; what the caller's path held after it (e.g. packages installed with --target)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")]))}
    env.pop("OMP_NUM_THREADS", None)
    if omp_threads is not None:
        env["OMP_NUM_THREADS"] = omp_threads
    # cwd: ``python -c`` puts the working directory first on sys.path, where the current lvgp may be
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True, env=env, cwd=package
    )
    return _parse(package, proc.returncode, proc.stdout, proc.stderr)


def run_before_and_now(code: str, commit: str, args: dict) -> tuple[dict, dict]:
    """:func:`run_code` of ``code`` against the ``lvgp`` of ``commit`` (extracted into a temporary folder, removed
    after) and against today's tree, one after the other: ``(before, now)``."""
    with tempfile.TemporaryDirectory() as tmp:
        before = run_code(code, extract(commit, Path(tmp) / "before"), args)
    return before, run_code(code, ROOT, args)


def _parse(package: Path, returncode: int, stdout: str, stderr: str) -> dict:
    if returncode != 0:
        killed = " (SIGKILL: the OOM killer?)" if returncode == -9 else ""
        raise RuntimeError(
            f"the run against {package} failed{killed}:\n{stderr[-2000:]}\nexit status {returncode}{killed}"
        )
    return json.loads(stdout.strip().splitlines()[-1])


def _may_fork() -> bool:
    """Fork only where asked to (the smoke runs), where the platform can, and where torch (if it is
    loaded) computes on one thread (the smoke runs' setting: no OpenMP pool has been started)."""
    if os.environ.get("LVGP_BENCHMARK_FORK") != "1" or not hasattr(os, "fork"):
        return False
    torch = sys.modules.get("torch")
    return torch is None or torch.get_num_threads() == 1


def run_child(script: str | Path, argv: list[str], check: bool = False) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, script, *argv], capture_output=True, text=True, check=check)``: a
    benchmark running itself again for one measurement (a fresh process for its peak memory). Forked
    where ``LVGP_BENCHMARK_FORK=1`` allows it (module docstring), the script run as ``__main__``."""
    command = [sys.executable, str(script), *argv]
    if not _may_fork():
        return subprocess.run(command, capture_output=True, text=True, check=check)

    def body() -> None:
        sys.argv = [str(script), *argv]
        runpy.run_path(str(script), run_name="__main__")

    returncode, stdout, stderr = _fork(body)
    if check and returncode != 0:
        raise subprocess.CalledProcessError(returncode, command, stdout, stderr)
    return subprocess.CompletedProcess(command, returncode, stdout, stderr)


def _forked(code: str, package: Path, args: dict, omp_threads: str | None) -> tuple[int, str, str]:
    """``run_code``'s child as a fork of this process: ``package``'s ``lvgp`` first on the path (the
    one loaded here dropped where it is another), ``code`` run as ``python -c`` runs it, with
    ``json.dumps(args)`` as its argument."""

    def body() -> None:
        os.environ.pop("OMP_NUM_THREADS", None)
        if omp_threads is not None:
            os.environ["OMP_NUM_THREADS"] = omp_threads
        loaded = sys.modules.get("lvgp")
        if loaded is not None and Path(loaded.__file__).resolve().parent.parent != package.resolve():
            for name in [m for m in sys.modules if m == "lvgp" or m.startswith("lvgp.")]:
                del sys.modules[name]
        sys.path.insert(0, str(package))
        os.chdir(package)
        if "torch" in sys.modules:  # what torch reads from OMP_NUM_THREADS at its load (unset: about its default)
            sys.modules["torch"].set_num_threads(int(omp_threads) if omp_threads else os.cpu_count() or 1)
        sys.argv = ["-c", json.dumps(args)]
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 -- the benchmark's own code

    return _fork(body)


def _fork(body: Callable[[], None]) -> tuple[int, str, str]:
    """``body()`` in a fork of this process, as a script's run: its exit status (``SystemExit``'s
    code, 1 on an exception, whose traceback goes to the error output), output and error output."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            status = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                # the streams on the new descriptors also where the caller had replaced them (pytest's capture)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 -- the child's stdout until os._exit
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                body()
                status = 0
            except SystemExit as stop:
                if isinstance(stop.code, int) or stop.code is None:
                    status = stop.code or 0
                else:
                    print(stop.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(wait_status), out.read(), err.read()
