"""Execute the committed notebooks in full (not smoke) mode, in place, so that they carry
the outputs and figures of a real-data run; ``make notebooks-run``.

Each notebook runs top to bottom in a fresh kernel from a scratch directory (its study files
go there, not into the repository), with one intra-op thread (``LVGP_THREADS``, default 1)
and ``CI`` removed from the environment. The notebook's metadata records the run:
``metadata.lvgp = {"executed": "full", "seconds": ...}``; tests/test_notebooks.py checks it
and that every code cell ran in order without error.

    python notebooks/execute.py [NAME ...]   # default: every notebooks/[0-9]*.ipynb
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def coalesce_streams(cell) -> None:
    """Consecutive stdout/stderr outputs merged into one, each line as a terminal shows it:
    a progress bar redraws itself with carriage returns, so only its last state is kept."""
    merged: list = []
    for output in cell.get("outputs", []):
        if (
            output.output_type == "stream"
            and merged
            and merged[-1].output_type == "stream"
            and merged[-1].name == output.name
        ):
            merged[-1].text += output.text
        else:
            merged.append(output)
    for output in merged:
        if output.output_type == "stream":
            output.text = "\n".join(line.rsplit("\r", 1)[-1] for line in output.text.split("\n"))
    cell.outputs = merged


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        NotebookClient(nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": scratch}}).execute()
    seconds = time.perf_counter() - start
    for cell in nb.cells:
        if cell.cell_type == "code":
            coalesce_streams(cell)
    nb.metadata["lvgp"] = {"executed": "full", "seconds": round(seconds, 1)}
    nbformat.write(nb, path)
    return seconds


def main(names: list[str]) -> None:
    os.environ.pop("CI", None)  # smoke_test = "CI" in os.environ: a full run
    os.environ.setdefault("LVGP_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", os.environ["LVGP_THREADS"])
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    os.environ.pop("LVGP_RESULTS", None)
    paths = [HERE / (n if n.endswith(".ipynb") else n + ".ipynb") for n in names] or sorted(HERE.glob("[0-9]*.ipynb"))
    for path in paths:
        print(f"{path.name}: running ...", flush=True)
        print(f"{path.name}: {execute(path):.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
