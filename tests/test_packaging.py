"""What a user installs: the wheel ships the ``lvgp`` package alone (no tests, results, notebooks
or benchmarks), and the installed copy imports and runs its CLI away from the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not (ROOT / "pyproject.toml").exists(), reason="not a source checkout")
def test_the_wheel_ships_lvgp_alone_and_works_installed(tmp_path):
    pytest.importorskip("setuptools")  # the build backend, used without isolation (no network needed)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("lvgp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"lvgp", next(t for t in tops if t.endswith(".dist-info"))}, tops
    for part in ("lvgp/datasets/registry.py", "lvgp/experiments/cli.py", "lvgp/kernels/latent_distribution.py"):
        assert part in names
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run(
        [sys.executable, "-c", "import lvgp; print(lvgp.__file__, lvgp.__version__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # away from the source tree, so the installed copy is the one imported
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith(str(site)), run.stdout
    cli = subprocess.run(
        [sys.executable, "-m", "lvgp", "compare", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert cli.returncode == 0 and "classification" in cli.stdout, cli.stderr[-2000:]
