"""A study directory: one JSON file per finished cell (so studies resume), failures with
their tracebacks, and the loop that runs the missing cells through an executor."""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import json
import math
import platform
import re
import shutil
import subprocess
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._random import cell_random_state
from ..base.device import check_device
from ..base.fitting import interrupts_raise
from ..base.progress import progress_bar
from ..warnings import EmptyDocumentsWarning, MixedCodeWarning, warn
from . import registry
from .executors import Executor, InProcessExecutor, ProcessExecutor, ReportOnlyExecutor
from .registry import Method
from .selection import InnerDev


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
    ``(k of n)`` when only k of the study's ``expected`` samples are in (a partial or resumed study); "–" when
    there is none (a quantity no sample has, such as a learning curve's accuracy below its first point)."""
    if len(values) == 0:
        return "–"
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
    """``obj`` as indented JSON at ``path`` (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_jsonable(obj), indent=1))
    tmp.replace(path)  # atomic: an interrupted study never leaves a half-written cell


def read_json(path: Path, what: str, kind: type = dict) -> Any:
    """The JSON object (a ``kind``: dict or list) in ``path``; a file that is not one is a
    ``ValueError`` naming the file and what to do, never a traceback from inside the reader."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path} is damaged: not JSON ({err.msg} at line {err.lineno}, column {err.colno}); restore it, or "
            f"delete it to {what}"
        ) from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is damaged: not UTF-8 text ({err}); restore it, or delete it to {what}") from None
    if not isinstance(value, kind):
        raise ValueError(
            f"{path} is damaged: it holds a JSON {type(value).__name__}, not a {kind.__name__}; restore it, or delete "
            f"it to {what}"
        )
    return value


#: the directory lvgp is imported from (a git checkout's root, or the folder above an installed package)
_IMPORTED_FROM = Path(__file__).resolve().parent.parent.parent


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()


def tracked_changes(root: Path) -> bool:
    """Whether tracked files of the checkout at ``root`` differ from its commit, outside
    ``results/``: the committed study outputs are data that a rerun rewrites in place (it deletes
    the folder it regenerates), not the code that produced them."""
    return bool(_git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"))


@functools.cache
def provenance() -> dict:
    """What produced a record: lvgp's version and, when lvgp is imported from a git checkout,
    its commit and whether tracked files outside ``results/`` differ from it (``git_dirty``,
    :func:`tracked_changes`); torch and Python versions. Stored in every cell record and in
    ``study.json``, so that cells copied between studies or run across code changes can be told
    apart."""
    import torch

    from .._version import __version__

    root = _IMPORTED_FROM
    commit, dirty = None, None
    try:  # only the checkout lvgp itself lives in (not a repository around site-packages)
        if Path(_git(root, "rev-parse", "--show-toplevel")).resolve() == root:
            commit = _git(root, "rev-parse", "HEAD")
            dirty = tracked_changes(root)
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "lvgp": __version__,
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
        return read_json(path, "compute the cell again") if path.exists() else None

    def save(self, cell: dict, result: dict) -> None:
        write_json(self.result_path(cell), {**cell, **result, "provenance": provenance()})
        self.error_path(cell).unlink(missing_ok=True)

    def save_failure(self, cell: dict, error: str) -> None:
        path = self.error_path(cell)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(error)


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C during a study: the cells that finished are saved, the one being fitted is not (a fit
    cut short is never recorded as a result); the message says how to resume."""


def run_study(
    fn: Callable[[Any, dict], dict],
    context: Any,
    cells: list[dict],
    directory: StudyDirectory,
    executor: Executor | None = None,
    progress: bool = True,
    start: Callable[[list[dict]], None] | None = None,
) -> tuple[list[dict], list[tuple[dict, str]]]:
    """Run the cells not yet done; return all finished cell records and the failures.

    Cells already in ``directory`` are not recomputed; ``start``, if given, is called with the cells
    to run (where there are any) before the first of them. A failing cell is written to
    ``<key>.error.txt`` with its traceback; the others complete. Ctrl-C ends the cell being fitted
    at once (the fitting loops re-raise it here: :func:`~lvgp.base.fitting.interrupts_raise`), keeps
    the cells that finished, and raises :class:`StudyInterrupted`.
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
    if done and todo and not isinstance(executor, ReportOnlyExecutor):  # cells will run beside the finished ones
        warn_other_code(done, directory.root)
    if start is not None and todo:
        start(todo)
    failures: list[tuple[dict, str]] = []
    bar = progress_bar(total=len(cells), initial=len(done), desc="cells", verbose=progress, leave=True)
    # cells fitted in this process, one after the other, show their fits' own bars under the cells' bar
    token = FIT_PROGRESS.set(progress and type(executor) is InProcessExecutor)
    records: list[dict] = []
    try:
        with interrupts_raise():
            for record in _collect(executor.run(fn, context, todo), directory, done, failures, bar):
                records.append(record)
    except KeyboardInterrupt:
        bar.close()
        raise StudyInterrupted(
            f"interrupted: {len(records)} of {len(cells)} cells are finished and saved in {directory.root} (the "
            "cell being fitted is not); run the same command again to resume"
        ) from None
    finally:
        FIT_PROGRESS.reset(token)
        bar.close()
    return records, failures


def code_label(provenance: dict | None) -> str:
    """The code a record's ``provenance`` names, short: ``"1dd1035"``, ``"1dd1035 with changes"`` (tracked
    files differed from the commit), or ``"lvgp 0.2.0"`` outside a git checkout."""
    provenance = provenance or {}
    commit = provenance.get("git_commit")
    if commit:
        return commit[:7] + (" with changes" if provenance.get("git_dirty") else "")
    return f"lvgp {provenance.get('lvgp', '?')}"


@functools.cache
def library_tree(commit: str) -> str | None:
    """The git object of ``lvgp/`` at ``commit`` in the checkout lvgp is imported from (``None`` where there
    is none, or the commit is not in it: a shallow clone, a copied record)."""
    try:
        return _git(_IMPORTED_FROM, "rev-parse", "--verify", "-q", f"{commit}:lvgp")
    except (OSError, subprocess.SubprocessError):
        return None


def same_library(a: dict | None, b: dict | None) -> bool:
    """Whether two records' ``provenance`` name the same library code: the same :func:`code_label`, or two
    clean commits whose ``lvgp/`` is the same tree (commits between them changed docs, results or
    benchmarks only)."""
    a, b = a or {}, b or {}
    if code_label(a) == code_label(b):
        return True
    commits = a.get("git_commit"), b.get("git_commit")
    if not all(commits) or a.get("git_dirty") or b.get("git_dirty"):
        return False
    trees = [library_tree(c) for c in commits]
    return trees[0] is not None and trees[0] == trees[1]


def warn_other_code(done: list[dict], root: Path) -> None:
    """:class:`~lvgp.warnings.MixedCodeWarning` where finished cells of ``root`` were run by other library code
    than this process's (not :func:`same_library` by their ``provenance``): the cells about to run will sit
    beside them in one table. Cells copied from another study, or left from before a change, are kept as
    they are."""
    current = provenance()
    now = code_label(current)
    others: dict[str, int] = {}
    for record in done:
        if not same_library(record.get("provenance"), current):
            label = code_label(record.get("provenance"))
            others[label] = others.get(label, 0) + 1
    if others:
        counts = ", ".join(f"{n} by {label}" for label, n in sorted(others.items(), key=lambda kv: -kv[1]))
        warn(
            f"{sum(others.values())} of the {len(done)} finished cells in {root} were run by other code than this "
            f"run ({now}): {counts}. The study's table will mix their records with this run's (each record's "
            "provenance names its code); delete those cells to recompute them with this code",
            MixedCodeWarning,
        )


def _collect(results, directory: StudyDirectory, done: list[dict], failures: list, bar) -> Iterator[dict]:
    """The finished records (``done`` first), saving each new one as it arrives."""
    yield from done
    for cell, result, error in results:
        if error is None:
            directory.save(cell, result)
            saved = directory.load(cell)  # as JSON stores it, like the cells of earlier runs
            if saved is None:
                raise RuntimeError(f"the record of {cell_key(cell)} was not written")
            yield saved
        else:
            directory.save_failure(cell, error)
            failures.append((cell, error))
        bar.set_postfix(failed=len(failures), refresh=False)
        bar.update(1)


def _run_cell(study: Study, cell: dict) -> dict:
    """What executors run for every cell (module level: process and Ray workers import it). A study
    with an ``encoder_precision`` option runs the cell's encoders in it, in whichever process, and its
    records say what that process made of it: ``encoder_precision_resolved``, ``"float32"`` or
    ``"bfloat16"`` (``"auto"`` is bfloat16 on a CPU with native bfloat16 products,
    :func:`lvgp.encoders.sentence.resolve_precision`: the same study gives other vectors, hence other
    records, on another machine)."""
    precision = getattr(study, "encoder_precision", None)
    if precision is None:
        return study.run_cell(cell)
    from ..encoders.sentence import encoder_precision, resolve_precision

    with encoder_precision(precision):
        record = study.run_cell(cell)
    device = getattr(study, "device", "cpu")
    return {**record, "encoder_precision_resolved": resolve_precision(precision, device)}


class Study:
    """The interface of a comparative study: a frozen dataclass of options (fields made with
    :func:`option`, among them ``methods`` and ``seed``) that subclasses this class, is registered
    with :func:`~lvgp.experiments.registry.register_study`, and implements the task's steps:

    * :meth:`validate` -- bad input fails here, before any cell runs (the base checks ``methods``);
    * :meth:`cells` -- one cell per method, split and cell-level setting (the base: the methods'
      registered grids over :attr:`n_splits` splits);
    * :meth:`run_cell` -- fit one cell and return its record (what ``cells/<key>.json`` holds);
    * :meth:`summarize` -- the records of ``results.json`` from all finished cells (settings chosen
      on dev data, never on test);
    * :meth:`table` -- ``table.md`` from those records;
    * :meth:`write_outputs`, :meth:`figures` -- further files (``grid.json``, figures).

    :meth:`run` is the skeleton every study shares: write ``study.json``, run (or resume) the cells
    through an executor, summarize, write the files. The methods a study can run come from the
    method registry (:mod:`lvgp.experiments.registry`), labels included.
    """

    kind: ClassVar[str]
    #: one line for ``lvgp compare --help``
    help: ClassVar[str] = ""
    #: the paragraph of ``lvgp compare KIND --help`` (``None`` for ``help``)
    description: ClassVar[str | None] = None
    methods: tuple[str, ...]
    seed: int
    #: the option that names the study's methods (the active-learning study calls them strategies)
    methods_option: ClassVar[str] = "methods"
    #: whether the study's cells take ``Method(selection=InnerDev(...))``: a choice on dev inside each
    #: cell, by :class:`~lvgp.experiments.selection.DevSelected` (a classifier's fit)
    inner_dev_selection: ClassVar[bool] = False

    # ------------------------------------------------------------------ methods
    def method(self, name: str) -> Method:
        """The registered method ``name`` of this study (``ValueError`` naming the known ones)."""
        return registry.method(self.kind, name)

    def label(self, name: str) -> str:
        """The table and figure label of method ``name``."""
        return registry.methods(self.kind)[name].label

    def method_order(self, name: str) -> int:
        """Registration order of method ``name``: how records and table columns are sorted."""
        return list(registry.methods(self.kind)).index(name)

    def cell_seed(self, cell: dict) -> int:
        """The seed of a cell's estimator: a function of the study's seed and the cell's split."""
        return cell_random_state(self.seed, cell["split"])

    # ------------------------------------------------------------------ the steps
    @property
    def n_splits(self) -> int:
        """How many splits (folds, sets, repetitions) the study runs."""
        raise NotImplementedError

    def validate(self) -> None:
        """Raise ``ValueError`` for bad options, before any cell runs (the base: every option against
        its type and range, :func:`check_option`; unknown methods; an unusable device)."""
        hints = typing.get_type_hints(type(self))
        for field in dataclasses.fields(self):  # type: ignore[arg-type]  # subclasses are dataclasses
            check_option(field, hints[field.name], getattr(self, field.name))
        repeated = sorted({m for m in self.methods if list(self.methods).count(m) > 1})
        if repeated:
            raise ValueError(f"--methods names {', '.join(repeated)} more than once; name each method once")
        for name in self.methods:
            if isinstance(self.method(name).selection, InnerDev) and not self.inner_dev_selection:
                raise ValueError(
                    f"method {name!r} chooses its settings on dev inside each cell (InnerDev), which the {self.kind} "
                    "study does not run (DevSelected fits classifiers); register it with a CellGrid"
                )
        check_device(getattr(self, "device", "cpu"), "--device")

    def check_data(self) -> None:
        """Raise ``ValueError`` for data the cells cannot use (the file's rows, classes, empty texts,
        the sizes against the file), naming the file's lines and the option to change, before any
        cell runs (the base: none). Not called for ``--report-only``, which runs no cell."""

    def build(self, cell: dict, data: Any = None) -> Any:
        """The cell's unfitted estimator (its method's ``build``), on the study's ``--device``:
        every estimator in it that takes a ``device`` (a wrapper's inner one too) gets it."""
        model = self.method(cell["method"]).build(self, cell, data)
        model = on_device(model, getattr(self, "device", "cpu"))
        return with_fit_progress(model) if FIT_PROGRESS.get() else model

    def estimator(self, cell: dict, data: Any = None) -> Any:
        """The cell's estimator: :meth:`build`'s, inside
        :class:`~lvgp.experiments.selection.DevSelected` when its method chooses its settings on dev
        inside the cell (``Method(selection=InnerDev(...))``)."""
        model = self.build(cell, data)
        selection = self.method(cell["method"]).selection
        return selection.wrap(self, model, self.cell_seed(cell)) if isinstance(selection, InnerDev) else model

    def cells(self) -> list[dict]:
        """Every cell: method x split x the method's settings (a
        :class:`~lvgp.experiments.selection.CellGrid`'s, else one)."""
        return [
            {"method": m, "split": s, "params": params}
            for m in self.methods
            for s in range(self.n_splits)
            for params in self.method(m).settings(self)
        ]

    def run_cell(self, cell: dict) -> dict:
        raise NotImplementedError

    def shared_texts(self, cells: list[dict]) -> list[str]:
        """The texts ``cells`` read through the study's sentence encoder (the test documents every cell
        predicts, the training documents every method of a split reads), which :meth:`run` encodes once,
        into the encoder's on-disk cache, on all the workers' threads before the cells start in several
        local processes: otherwise the processes encode the same texts at once. The base: none."""
        return []

    def encode_shared_texts(self, cells: list[dict], threads: int, progress: bool = True) -> int:
        """Encode :meth:`shared_texts` of ``cells`` with the study's encoder (``encoder``,
        ``encoder_precision``) on ``threads`` threads, on a study on the CPU (a progress bar if
        ``progress``); returns how many texts were given (those already in the cache are read, not
        encoded again)."""
        texts = self.shared_texts(cells)
        if not texts or str(getattr(self, "device", "cpu")) != "cpu":
            return 0
        from ..encoders.sentence import encoder_precision, shared_encoder
        from .executors import limit_threads

        restore = limit_threads(threads)
        try:
            with encoder_precision(getattr(self, "encoder_precision", "auto")):
                shared_encoder(self.encoder).encode(texts, verbose=progress)  # type: ignore[attr-defined]
        finally:
            restore()
        return len(texts)

    def summarize(self, cells: list[dict]) -> list[dict]:
        raise NotImplementedError

    def table(self, records: list[dict]) -> str:
        raise NotImplementedError

    def write_outputs(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        """``results.json`` (the records) and any further JSON files."""
        write_json(out / "results.json", records)

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        """The study's figures (default: none)."""

    #: the figures need the records only (not the cells): ``--report-only`` on a committed study
    #: directory (no ``cells/``) redraws them from ``results.json``
    figures_from_records: bool = False

    def committed_records(self, out: Path) -> list[dict]:
        """The records of a study directory without ``cells/`` (as committed): ``results.json``."""
        return read_json(out / "results.json", "write it again from the cells", list)

    # ------------------------------------------------------------------ what a cell's record depends on
    #: options that choose which cells the study has, never what a cell's record holds: a study may
    #: resume with other values of them (more splits, more methods, other training sizes)
    cell_choosing_options: ClassVar[tuple[str, ...]] = ("methods", "splits", "sets", "folds", "train_sizes")

    def data_digest(self) -> str | None:
        """The sha256 of the study's data file when its ``dataset``/``pairs`` option is a path (a
        registry dataset is pinned by its own sha256: ``None``)."""
        for name in ("dataset", "pairs"):
            value = getattr(self, name, None)
            if isinstance(value, str) and Path(value).is_file():
                return hashlib.sha256(Path(value).read_bytes()).hexdigest()
        return None

    def settings(self) -> dict:
        """What ``study.json`` records: the options, the data file's digest and the provenance."""
        return {"kind": self.kind, **self.__dict__, "data_digest": self.data_digest(), "provenance": provenance()}

    def conflicts_with(self, previous: dict) -> list[str]:
        """The options (and the data file) that differ from an earlier ``study.json`` of the same
        directory and can change a cell's record: resuming would mix the two studies' cells."""
        if previous.get("kind") != self.kind:
            return [f"kind ({previous.get('kind')!r} there, {self.kind!r} now)"]
        differ = []
        for field in dataclasses.fields(self):  # type: ignore[arg-type]  # subclasses are dataclasses
            if field.name in self.cell_choosing_options or field.name not in previous:
                continue
            before, now = _jsonable(previous[field.name]), _jsonable(getattr(self, field.name))
            if before != now:
                differ.append(f"--{field.name.replace('_', '-')} ({before!r} there, {now!r} now)")
        digest = self.data_digest()
        if previous.get("data_digest") and digest and previous["data_digest"] != digest:
            differ.append("the data file's content (its sha256 differs)")
        return differ

    # ------------------------------------------------------------------ the skeleton
    def run(
        self, out: str | Path, executor: Executor | None = None, progress: bool = True, force: bool = False
    ) -> dict:
        """Run (or resume) the study into ``out``: ``study.json``, ``cells/``, ``results.json``,
        ``table.md`` and the figures. Returns ``{"records", "failures", "table", "cells"}``.

        ``out`` holding cells of a study with other settings (:meth:`conflicts_with`) is refused,
        naming them; ``force`` deletes those cells and recomputes."""
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {out} is a file, not a directory")
        self.validate()
        if not isinstance(executor, ReportOnlyExecutor):  # a report runs no cell: it needs no data
            self.check_data()
        previous = out / "study.json"
        kept: dict = {}  # what the earlier study.json says of the cells this run keeps
        if previous.exists() and (out / "cells").is_dir() and not isinstance(executor, ReportOnlyExecutor):
            earlier = read_json(previous, "start the study afresh (its cells stay)")
            differ = self.conflicts_with(earlier)
            if differ and not force:
                raise ValueError(
                    f"--out {out} holds the cells of a study with other settings: {'; '.join(differ)}. Choose "
                    "another --out, or pass --force to delete those cells and recompute"
                )
            if differ:
                shutil.rmtree(out / "cells")
            elif "reruns" in earlier:  # the kept cells' reruns (load_study): still what their records are
                kept["reruns"] = earlier["reruns"]
        if not (isinstance(executor, ReportOnlyExecutor) and previous.exists()):  # a report changes no setting
            write_json(previous, {**self.settings(), **kept})
        start = None
        if isinstance(executor, ProcessExecutor) and executor.jobs > 1:
            threads = executor.total_threads()

            def start(pending: list[dict]) -> None:
                try:
                    self.encode_shared_texts(pending, threads, progress)
                except KeyboardInterrupt:
                    raise StudyInterrupted(
                        "interrupted while encoding the texts the cells share, before any cell ran; run the "
                        "same command again to start"
                    ) from None

        cells, failures = run_study(_run_cell, self, self.cells(), StudyDirectory(out), executor, progress, start)
        warn_dropped(cells)
        records = self.summarize(cells)
        self.write_outputs(out, cells, records)
        text = (self.table(records) if records else "no finished cells\n") + failure_note(failures)
        (out / "table.md").write_text(text)
        self.figures(out, cells, records)
        return {"records": records, "failures": failures, "table": text, "cells": cells}

    def report(self, out: str | Path) -> dict:
        """``table.md`` of a study directory: from its cells when ``cells/`` exists (as
        ``--report-only``), else from its committed ``results.json`` (and the figures, where they
        need the records only: :attr:`figures_from_records`)."""
        out = Path(out)
        if (out / "cells").is_dir():
            return self.run(out, ReportOnlyExecutor(), progress=False)
        records = self.committed_records(out)
        text = self.table(records) if records else "no finished cells\n"
        (out / "table.md").write_text(text)
        if self.figures_from_records and records:
            self.figures(out, [], records)
        return {"records": records, "failures": [], "table": text, "cells": []}


class SizedCells:
    """The cells and records of a study (a :class:`Study` subclass, listed first among its bases) whose
    cells are method x size x split: ``size_option`` names its list option of sizes (e.g.
    ``"train_sizes"``), ``size_key`` the cell parameter and record field of one size (``"train_size"``);
    records come sorted by method (registration order), size and split."""

    size_option: ClassVar[str]
    size_key: ClassVar[str]

    def cells(self) -> list[dict]:
        study: Any = self
        return [
            {"method": m, "split": s, "params": {self.size_key: n}}
            for m in study.methods
            for n in getattr(study, self.size_option)
            for s in range(study.splits)
        ]

    def shared_texts(self, cells: list[dict]) -> list[str]:
        """:meth:`Study.shared_texts`: the :meth:`encoder_texts` of every split and size of ``cells`` whose
        method reads texts through the encoder, each text once."""
        study: Any = self
        sizes = {(c["split"], c["params"][self.size_key]) for c in cells if study.method(c["method"]).raw_texts}
        return unique_texts(part for split, size in sorted(sizes) for part in self.encoder_texts(split, size))

    def encoder_texts(self, split: int, size: int) -> Iterable[Sequence[str]]:
        """The lists of texts a cell of ``split`` and ``size`` encodes (its training and test documents)."""
        raise NotImplementedError

    def summarize(self, cells: list[dict]) -> list[dict]:
        study: Any = self
        return sorted(
            ({k: v for k, v in c.items() if k != "params"} for c in cells),
            key=lambda r: (study.method_order(r["method"]), r[self.size_key], r["split"]),
        )


def unique_texts(parts: Iterable[Sequence[str]]) -> list[str]:
    """The texts of ``parts`` once each, in the order they first come."""
    return list(dict.fromkeys(text for part in parts for text in part))


def load_study(directory: str | Path) -> Study:
    """The study whose ``study.json`` is in ``directory`` (options added since it was written take
    what those studies did: the option's ``before`` value, else its default; lists become the
    tuples the options are)."""
    path = Path(directory) / "study.json"
    settings = read_json(path, "start the study afresh with its options (its cells stay)")
    kinds = registry.studies()
    if settings.get("kind") not in kinds:
        raise ValueError(f"{path} names no study kind lvgp knows ({settings.get('kind')!r}; known: {sorted(kinds)})")
    cls = kinds[settings.pop("kind")]
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in settings:
            value = settings[field.name]
            values[field.name] = tuple(value) if isinstance(value, list) else value
        elif "before" in field.metadata:
            values[field.name] = field.metadata["before"]
    # what the record says about the runs, not settings: the first run's provenance, and the methods
    # rerun since (``reruns``: their methods, provenance and why), whose records replaced theirs
    unknown = set(settings) - {f.name for f in dataclasses.fields(cls)} - {"provenance", "data_digest", "reruns"}
    if unknown:
        raise ValueError(f"{directory}/study.json has options this version does not know: {sorted(unknown)}")
    return cls(**values)


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


def warn_dropped(cells: list[dict]) -> None:
    """Say on the console what the cells dropped (their ``dropped_*`` counts, e.g. training
    documents left empty by the vocabulary): one warning per kind, with counts, so that nothing a
    study drops shows only in ``results.json``."""
    counts: dict[str, list[int]] = {}
    for cell in cells:
        for key, value in cell.items():
            if key.startswith("dropped") and isinstance(value, int) and value > 0:
                counts.setdefault(key, []).append(value)
    for key, values in counts.items():
        warn(
            f"{key}: {max(values)} rows dropped in the worst of {len(values)} of {len(cells)} cells "
            f"({sum(values)} over those cells; per cell in results.json)",
            EmptyDocumentsWarning if "empty" in key else UserWarning,
            stacklevel=3,
        )


def failure_note(failures: list) -> str:
    """The line every ``table.md`` ends with when cells failed (empty otherwise)."""
    if not failures:
        return ""
    return f"\n**{len(failures)} cells failed** (tracebacks in cells/**/*.error.txt); rerun to retry them.\n"


# ------------------------------------------------------------------ study definitions -> command-line options


def on_device(model: Any, device: str) -> Any:
    """``model`` with ``device`` set on it and on every nested estimator that takes one
    (scikit-learn's ``get_params(deep=True)`` names them ``...__device``); others as they are."""
    if device == "cpu" or not hasattr(model, "get_params"):
        return model
    names = [k for k in model.get_params(deep=True) if k == "device" or k.endswith("__device")]
    return model.set_params(**dict.fromkeys(names, device)) if names else model


#: whether the cells being built show their fits' progress bars (:func:`run_study` sets it while it
#: runs cells in its own process with its cells' bar shown)
FIT_PROGRESS: contextvars.ContextVar[bool] = contextvars.ContextVar("fit_progress", default=False)


def with_fit_progress(model: Any) -> Any:
    """``model`` with ``verbose=True`` on it and on every nested lvgp estimator (their tqdm bars:
    :mod:`lvgp.base.progress`); scikit-learn's own ``verbose`` flags, which print, are left alone."""
    if not hasattr(model, "get_params"):
        return model
    params = model.get_params(deep=True)
    names = []
    for name in params:
        if name == "verbose" or name.endswith("__verbose"):
            owner = model if name == "verbose" else params[name.rsplit("__", 1)[0]]
            if type(owner).__module__.startswith("lvgp."):
                names.append(name)
    return model.set_params(**dict.fromkeys(names, True)) if names else model


#: the ``--device`` option every study has
DEVICE_HELP = (
    "where the torch/Pyro methods compute: cpu, cuda, cuda:1 (methods without a device path, and the "
    "scikit-learn baselines, stay on the CPU)"
)


def option(default: Any = dataclasses.MISSING, help: str = "", **metadata) -> Any:
    """A study setting: a dataclass field whose ``help`` (and ``choices``) the CLI shows.
    ``default=MISSING`` makes a required option. ``before=value``: what studies written before the
    option existed did, where that differs from the new default (:func:`load_study` reads their
    ``study.json`` with it). ``check=``: the constraint of the value (of each element of a list
    option; :mod:`lvgp.base.constraints`) where the type's default (:func:`check_option`) does not
    fit; ``allow_empty=True``: a list option may be empty."""
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def gpc_objective_option() -> Any:
    """The ``gpc_objective`` option of the studies with Dirichlet GP classifiers
    (``LDKGPClassifier(objective=...)``); studies written before it existed maximized the evidence."""
    return option(
        "evidence",
        "what the Dirichlet GP classifiers' hyper-parameters maximize: evidence (the marginal likelihood) or loo "
        "(after it, the leave-one-out log probability of the training labels; LDKGPClassifier(objective='loo'))",
        choices=("evidence", "loo"),
        before="evidence",
    )


def encoder_precision_option() -> Any:
    """The ``encoder_precision`` option of the studies whose methods read texts through the sentence
    encoder (:func:`_run_cell` runs each cell inside :func:`lvgp.encoders.encoder_precision` of it).
    Studies written before the option existed computed in float32."""
    return option(
        "auto",
        "precision of the encoder's matrix products: bfloat16 (faster on a CPU that computes it natively), "
        "float32, or auto (bfloat16 on such a CPU, float32 elsewhere); lvgp.encoders.encoder_precision",
        choices=("auto", "float32", "bfloat16"),
        before="float32",
    )


def _default_check(kind: Any) -> Any:
    """The constraint of a study option (or of the elements of a list option) of type ``kind``:
    counts and budgets are integers >= 1, real settings finite and > 0."""
    from ..base.constraints import Boolean, Instance, Integer, Real

    if kind is bool:
        return Boolean()
    if kind is int:
        return Integer(1)
    if kind is float:
        return Real(0, open_low=True)
    return Instance(str, name="a non-empty string")


def check_option(field: dataclasses.Field, kind: Any, value: Any) -> None:
    """One study option against its type and constraint (``option(check=...)``, else the type's
    default), a ``ValueError`` naming ``--the-option`` otherwise: ``None`` only for ``X | None``
    options, list options non-empty (unless ``allow_empty``) with every element checked, strings
    non-empty and within ``choices``."""
    from ..base.constraints import ParameterError, check_values

    name = "--" + field.name.replace("_", "-")
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:  # X | None
        if value is None:
            return
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    constraint = field.metadata.get("check")
    if typing.get_origin(kind) is tuple:
        element = typing.get_args(kind)[0]
        if not isinstance(value, (tuple, list)):
            raise ValueError(f"{name} must be a comma-separated list; got {value!r}")
        if not value and not field.metadata.get("allow_empty", False):
            raise ValueError(f"{name} must not be empty")
        for item in value:
            _check_one(name, item, constraint or _default_check(element), check_values, ParameterError)
        return
    _check_one(name, value, constraint or _default_check(kind), check_values, ParameterError)
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{name} must not be empty")
        choices = field.metadata.get("choices")
        if choices and value not in choices:
            raise ValueError(f"{name} must be one of {tuple(choices)}; got {value!r}")


def _check_one(name: str, value: Any, constraint: Any, check_values: Callable, error: type) -> None:
    try:
        check_values({name: value}, {name: [constraint]})
    except (TypeError, ValueError) as err:  # the CLI reports ValueErrors as one line, exit 2
        raise ValueError(str(err)) from None


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
        if field.default is dataclasses.MISSING:  # required, except with --report-only (study.json has it)
            kwargs["default"] = None
            help_text = f"(required) {help_text}"
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
        if field.name == getattr(study_cls, "methods_option", "methods"):
            help_text = f"comma-separated, from: {', '.join(methods)}. " + help_text
        if "choices" in field.metadata:
            kwargs["choices"] = field.metadata["choices"]
        parser.add_argument(name, help=help_text, **kwargs)


def study_from_options(study_cls: type, args: argparse.Namespace):
    """The study dataclass from the parsed options of :func:`add_study_options` (``ValueError``
    naming a required option that is missing)."""
    missing = [
        "--" + f.name.replace("_", "-")
        for f in dataclasses.fields(study_cls)
        if f.default is dataclasses.MISSING and getattr(args, f.name) is None
    ]
    if missing:
        raise ValueError(f"the following arguments are required: {', '.join(missing)}")
    return study_cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(study_cls)})


def check_encoder_methods(study: Any) -> None:
    """``--encoder`` names a known encoder, and where a chosen method reads texts with it
    (``raw_texts``), the ``encoders`` extra is installed: a ``ValueError`` before any cell runs."""
    from ..encoders import ENCODERS
    from ..encoders.sentence import _backend

    if study.encoder not in ENCODERS:
        raise ValueError(f"--encoder must be one of {sorted(ENCODERS)}; got {study.encoder!r}")
    users = [m for m in study.methods if study.method(m).raw_texts]
    if users:
        try:
            _backend()
        except ImportError as err:
            raise ValueError(f"--methods {','.join(users)}: {err}") from None
