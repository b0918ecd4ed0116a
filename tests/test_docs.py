"""The documentation's own references resolve: a nitpicky Sphinx build (``-n``) may warn about
targets in torch, numpy or scikit-learn (no intersphinx offline), never about an ``lvgp`` name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not (ROOT / "docs" / "conf.py").exists(), reason="no docs/ in this installation")
def test_every_lvgp_reference_in_the_docs_resolves(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    out = subprocess.run(
        [sys.executable, "-m", "sphinx", "-n", "-q", "-b", "html", str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    unresolved = sorted(set(re.findall(r"reference target not found: (lvgp\S*)", out.stderr)))
    assert not unresolved, f"unresolved lvgp references in the docs: {unresolved}"
