"""Build the notebooks from their ``# %%``-cell sources (``python notebooks/src/build.py``).

Each ``notebooks/src/NN_name.py`` becomes ``notebooks/NN_name.ipynb``: ``# %% [markdown]``
cells are markdown (their lines stripped of the leading ``# ``), other ``# %%`` cells code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent


def cells_of(source: str):
    cells, kind, lines = [], None, []

    def flush():
        if kind is None:
            return
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in text.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(text))
        else:
            cells.append(nbformat.v4.new_code_cell(text))

    for line in source.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        else:
            lines.append(line)
    flush()
    return cells


def build(src: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells_of(src.read_text())
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out = HERE.parent / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


if __name__ == "__main__":
    targets = [Path(a) for a in sys.argv[1:]] or sorted(HERE.glob("[0-9]*.py"))
    for src in targets:
        print("built", build(src))
