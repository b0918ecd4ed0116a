"""``mypy lvgp`` finds no error (the settings in ``pyproject.toml``). A test rather than a step before
the suite, so that its half minute runs beside the other tests on ``make test``'s second worker instead
of holding one core while the other waits (``make lint`` runs it too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_no_error_in_lvgp():
    pytest.importorskip("mypy")
    out = subprocess.run([sys.executable, "-m", "mypy", "lvgp"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Success: no issues found" in out.stdout
