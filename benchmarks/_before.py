"""'Before' against 'now' in one run: the ``lvgp`` package of an earlier commit, extracted with
``git archive``, and a script run against it (or against today's tree) in a subprocess, so
that both are timed under the same load. Shared by the benchmark scripts."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
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
    ``OMP_NUM_THREADS`` unset (torch's default)."""
    # the package first; what the caller's path held after it (e.g. packages installed with --target)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")]))}
    env.pop("OMP_NUM_THREADS", None)
    if omp_threads is not None:
        env["OMP_NUM_THREADS"] = omp_threads
    # cwd: ``python -c`` puts the working directory first on sys.path, where the current lvgp may be
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True, env=env, cwd=package
    )
    if proc.returncode != 0:
        killed = " (SIGKILL: the OOM killer?)" if proc.returncode == -9 else ""
        raise RuntimeError(
            f"the run against {package} failed{killed}:\n{proc.stderr[-2000:]}\nexit status {proc.returncode}{killed}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])
