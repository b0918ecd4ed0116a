"""A study directory: one JSON file per finished cell (so studies resume), failures with
their tracebacks, and the loop that runs the missing cells through an executor."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import platform
import re
import subprocess
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .executors import Executor, InProcessExecutor


def cell_key(cell: dict) -> str:
    """A stable, readable file-system key: ``method/split3/q=2_rho=10``."""
    params = cell.get("params", {})
    slug = "_".join(f"{k}={_fmt(v)}" for k, v in sorted(params.items())) or "default"
    slug = re.sub(r"[^A-Za-z0-9_.=+-]", "-", slug)
    if len(slug) > 80:
        slug = slug[:60] + "-" + hashlib.sha1(slug.encode()).hexdigest()[:12]
    extra = "".join(f"/{k}{cell[k]}" for k in ("train_size",) if k in cell)
    return f"{cell['method']}{extra}/split{cell['split']}/{slug}"


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def mean_cell(values, expected: int, bold: bool = False) -> str:
    """One results-table cell: ``mean ± std`` of ``values``, bold when ``bold``, and marked
    ``(k of n)`` when only k of the study's ``expected`` samples are in (a partial or resumed study)."""
    text = f"{np.mean(values):.3f} ± {np.std(values):.3f}"
    text = f"**{text}**" if bold else text
    return text if len(values) >= expected else f"{text} ({len(values)} of {expected})"


PARTIAL_NOTE = "'(k of n)': a mean over the k samples run so far"


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return None if not math.isfinite(float(obj)) else float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    return obj


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_jsonable(obj), indent=1))
    tmp.replace(path)  # atomic: an interrupted study never leaves a half-written cell


@functools.cache
def provenance() -> dict:
    """What produced a record: lvgp's version and, when lvgp is imported from a git checkout,
    its commit and whether tracked files differ from it (``git_dirty``); torch and Python
    versions. Stored in every cell record and in ``study.json``, so that cells copied between
    studies or run across code changes can be told apart."""
    import torch

    import lvgp

    root = Path(lvgp.__file__).resolve().parent.parent
    commit, dirty = None, None

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:  # only the checkout lvgp itself lives in (not a repository around site-packages)
        if Path(git("rev-parse", "--show-toplevel")).resolve() == root:
            commit = git("rev-parse", "HEAD")
            dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "lvgp": lvgp.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


class StudyDirectory:
    """``DIR/cells/<key>.json`` (results), ``DIR/cells/<key>.error.txt`` (failures)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.cells = self.root / "cells"

    def result_path(self, cell: dict) -> Path:
        return self.cells / f"{cell_key(cell)}.json"

    def error_path(self, cell: dict) -> Path:
        return self.cells / f"{cell_key(cell)}.error.txt"

    def load(self, cell: dict) -> dict | None:
        path = self.result_path(cell)
        return json.loads(path.read_text()) if path.exists() else None

    def save(self, cell: dict, result: dict) -> None:
        write_json(self.result_path(cell), {**cell, **result, "provenance": provenance()})
        self.error_path(cell).unlink(missing_ok=True)

    def save_failure(self, cell: dict, error: str) -> None:
        path = self.error_path(cell)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(error)


def run_study(
    fn: Callable[[Any, dict], dict],
    context: Any,
    cells: list[dict],
    directory: StudyDirectory,
    executor: Executor | None = None,
    progress: bool = True,
) -> tuple[list[dict], list[tuple[dict, str]]]:
    """Run the cells not yet done; return all finished cell records and the failures.

    Cells already in ``directory`` are not recomputed. A failing cell is written to
    ``<key>.error.txt`` with its traceback; the others complete.
    """
    executor = executor or InProcessExecutor()
    done: list[dict] = []
    todo: list[dict] = []
    for cell in cells:
        record = directory.load(cell)
        if record is not None:
            done.append(record)
        else:
            todo.append(cell)
    failures: list[tuple[dict, str]] = []
    bar = tqdm(total=len(cells), initial=len(done), desc="cells", disable=not progress)
    for cell, result, error in executor.run(fn, context, todo):
        if error is None:
            directory.save(cell, result)
            saved = directory.load(cell)  # as JSON stores it, like the cells of earlier runs
            if saved is None:
                raise RuntimeError(f"the record of {cell_key(cell)} was not written")
            done.append(saved)
        else:
            directory.save_failure(cell, error)
            failures.append((cell, error))
        bar.update(1)
        bar.set_postfix(failed=len(failures))
    bar.close()
    return done, failures


def execute_study(
    kind: str,
    study,
    run_cell: Callable[[Any, dict], dict],
    cells: list[dict],
    out: Path,
    executor: Executor | None = None,
    progress: bool = True,
) -> tuple[list[dict], list[tuple[dict, str]]]:
    """Record the study's settings in ``out/study.json`` (with its ``kind``) and run (or
    resume) its cells into ``out/cells``; the shared first half of every ``run_*_study``."""
    write_json(out / "study.json", {"kind": kind, **study.__dict__, "provenance": provenance()})
    return run_study(run_cell, study, cells, StudyDirectory(out), executor, progress)


@contextlib.contextmanager
def recorded_warnings() -> Iterator[dict]:
    """Record every warning raised inside, for a cell's JSON: ``{category: {"count", "first"}}``
    (the number of warnings of each category and the first message), filled on exit. Nothing is
    ignored: convergence, unseen-word and empty-document warnings end up in the record."""
    summary: dict[str, dict] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield summary
    for w in caught:
        entry = summary.setdefault(w.category.__name__, {"count": 0, "first": str(w.message)[:300]})
        entry["count"] += 1


def failure_note(failures: list) -> str:
    """The line every ``table.md`` ends with when cells failed (empty otherwise)."""
    if not failures:
        return ""
    return f"\n**{len(failures)} cells failed** (tracebacks in cells/**/*.error.txt); rerun to retry them.\n"


# ------------------------------------------------------------------ study definitions -> command-line options


def option(default: Any = dataclasses.MISSING, help: str = "", **metadata) -> Any:
    """A study setting: a dataclass field whose ``help`` (and ``choices``) the CLI shows.
    ``default=MISSING`` makes a required option."""
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def _split_list(kind: type):
    def parse(text: str) -> tuple:
        return tuple(kind(v.strip()) for v in text.split(",") if v.strip())

    parse.__name__ = f"comma-separated {kind.__name__}s"
    return parse


def add_study_options(parser: argparse.ArgumentParser, study_cls: type, methods: tuple[str, ...]) -> None:
    """One ``--name`` option per field of the study dataclass: its type from the annotation
    (``int``, ``float``, ``str``, ``bool`` as ``--x/--no-x``, ``tuple[...]`` as a comma-separated
    list, ``X | None``), its default from the field, its help from the field's metadata; the
    ``--methods`` help lists ``methods``. The options cannot drift from the definitions."""
    hints = typing.get_type_hints(study_cls)
    for field in dataclasses.fields(study_cls):
        kind, name = hints[field.name], "--" + field.name.replace("_", "-")
        help_text = field.metadata.get("help", "")
        if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:  # X | None
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        kwargs: dict[str, Any] = {}
        if field.default is dataclasses.MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = field.default
        if typing.get_origin(kind) is tuple:
            kwargs["type"] = _split_list(typing.get_args(kind)[0])
            if field.default is not dataclasses.MISSING:
                shown = ",".join(str(v) for v in field.default)
                kwargs["default"] = field.default
                help_text = f"{help_text} (default: {shown or 'none'})".strip()
        elif kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = kind
            if field.default is not dataclasses.MISSING and "default" not in help_text:
                help_text = f"{help_text} (default: {field.default})".strip()
        if field.name == "methods":
            help_text = f"comma-separated, from: {', '.join(methods)}. " + help_text
        if "choices" in field.metadata:
            kwargs["choices"] = field.metadata["choices"]
        parser.add_argument(name, help=help_text, **kwargs)


def study_from_options(study_cls: type, args: argparse.Namespace):
    """The study dataclass from the parsed options of :func:`add_study_options`."""
    return study_cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(study_cls)})
