"""Every notebook is its jupytext source, is committed with the outputs of a full real-data
run, and executes top to bottom in smoke mode (``CI`` set in the environment)."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_notebooks_are_built_from_their_sources():
    """Every notebook is its ``notebooks/src`` jupytext (percent-format) source, cell for cell
    (kind and text): edit the source, then ``make notebooks``."""
    sources = sorted((NOTEBOOKS[0].parent / "src").glob("[0-9]*.py")) if NOTEBOOKS else []
    assert [p.stem for p in sources] == [p.stem for p in NOTEBOOKS]
    for src, path in zip(sources, NOTEBOOKS):
        expected = [(c.cell_type, c.source) for c in jupytext.read(src, fmt="py:percent").cells]
        committed = [(c.cell_type, c.source) for c in nbformat.read(path, as_version=4).cells]
        assert committed == expected, f"{path.name} is stale: run `make notebooks`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_carries_a_full_run(path):
    """The committed notebook is what ``make notebooks-run`` (notebooks/execute.py) left: a
    full, non-smoke run on real data, every code cell executed once, in order, in one kernel,
    without an error, and every figure cell with its figure."""
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("lvgp", {}).get("executed") == "full", f"{path.name}: run `make notebooks-run`"
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: cells not run top to bottom: {counts}"
    for i, cell in enumerate(code, start=1):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{path.name} cell {i}: {errors[0].ename}: {errors[0].evalue}"
        if "plt." in cell.source or "display(Image" in cell.source:
            assert any("image/png" in o.get("data", {}) for o in cell.outputs), f"{path.name} cell {i}: no figure"
        if "print(" in cell.source:
            assert any(o.output_type == "stream" and o.name == "stdout" for o in cell.outputs), (
                f"{path.name} cell {i}: printed nothing"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_smoke_mode(path, monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("LVGP_RESULTS", str(tmp_path))
    # one intra-op thread in the kernel: with several busy-waiting OpenMP threads a kernel
    # process slows down tenfold whenever another process holds a core (measured: 37 s vs 3 s)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()


#: what a path of the machine that ran a notebook looks like in its outputs: the ipykernel's cell
#: files, a home or checkout directory, an installed package's file
MACHINE_PATHS = r"/tmp/ipykernel_|/root/|/home/|/work/|site-packages/|\.pyenv/|/usr/lib/python"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_outputs_carry_no_machine_paths(path):
    """Warnings reach the reader as one line with lvgp's own message
    (``lvgp.warnings.use_short_format``), never with the files of the machine that ran them."""
    import re

    nb = nbformat.read(path, as_version=4)
    leaks = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [
                str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")
            ]
            leaks += [(index, m.group(0)) for text in texts for m in re.finditer(MACHINE_PATHS, text)]
    assert not leaks, f"{path.name}: outputs name paths of the machine that ran them (cell, match): {leaks[:5]}"
