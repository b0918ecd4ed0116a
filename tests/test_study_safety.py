"""What a study must never do (issue 40): record an interrupted fit as a finished cell, or resume
into a directory of another study's cells; and what the CLI says when it is stopped or misused (one
line, exit 2; Ctrl-C: exit 130 and how to resume)."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import lvgp.base.fitting as fitting
from lvgp.datasets import make_synonym_regression
from lvgp.experiments.cli import main
from lvgp.experiments.regression import RegressionStudy
from lvgp.experiments.study import StudyInterrupted


def _tsv(path, seed=0, n=70):
    corpus = make_synonym_regression(n=n, noise=0.05, random_state=seed)
    lines = ["id\ttext\ttarget"] + [f"{i}\t{t}\t{y:.5f}" for i, (t, y) in enumerate(zip(corpus.texts, corpus.y))]
    path.write_text("\n".join(lines) + "\n")
    return path


def _study(tsv, **options):
    settings = dict(
        dataset=str(tsv),
        splits=2,
        train_size=30,
        dev_size=15,
        latent_dims=(2,),
        rhos=(1.0,),
        max_iter=8,
        min_df=1,
        methods=("gplvsm", "ridge"),
    )
    return RegressionStudy(**{**settings, **options})


def _interrupt_once_in_a_fit(monkeypatch, at_call: int):
    """Ctrl-C inside the ``at_call``-th objective evaluation of the next L-BFGS fit, once."""
    original = fitting._run_lbfgs
    state = {"fits": 0}

    def run(flat, evaluate, end_of_iteration, max_iter, tol, result):
        state["fits"] += 1
        if state["fits"] != 2:  # the second fit of the study (a cell in its middle)
            return original(flat, evaluate, end_of_iteration, max_iter, tol, result)
        calls = {"n": 0}

        def interrupting():
            calls["n"] += 1
            if calls["n"] == at_call:
                raise KeyboardInterrupt
            return evaluate()

        return original(flat, interrupting, end_of_iteration, max_iter, tol, result)

    monkeypatch.setattr(fitting, "_run_lbfgs", run)
    return state


def test_ctrl_c_keeps_the_finished_cells_only_and_a_rerun_gives_the_uninterrupted_table(tmp_path, monkeypatch):
    tsv = _tsv(tmp_path / "toy.tsv")
    reference = _study(tsv).run(tmp_path / "reference", progress=False)
    _interrupt_once_in_a_fit(monkeypatch, at_call=3)
    out = tmp_path / "interrupted"
    start = time.perf_counter()
    with pytest.raises(StudyInterrupted, match=r"1 of 4 cells are finished .* run the same command again"):
        _study(tsv).run(out, progress=False)
    assert time.perf_counter() - start < 60
    saved = list((out / "cells").rglob("*.json"))
    assert len(saved) == 1  # the cell before the interrupted one; the interrupted fit is not a record
    record = json.loads(saved[0].read_text())
    assert "interrupted" not in json.dumps(record)
    monkeypatch.undo()
    again = _study(tsv).run(out, progress=False)
    assert again["table"] == reference["table"]


def test_ctrl_c_on_the_command_line_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    tsv = _tsv(tmp_path / "toy.tsv")
    _interrupt_once_in_a_fit(monkeypatch, at_call=2)
    argv = ["compare", "regression", "--dataset", str(tsv), "--splits", "2", "--train-size", "30"]
    argv += ["--dev-size", "15", "--latent-dims", "2", "--rhos", "1", "--max-iter", "8", "--min-df", "1"]
    argv += ["--methods", "gplvsm,ridge", "--quiet", "--out", str(tmp_path / "o")]
    assert main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lvgp: interrupted:") and "run the same command again" in err[0]


def test_resuming_with_other_settings_is_refused_naming_them_and_force_recomputes(tmp_path):
    a, b = _tsv(tmp_path / "a.tsv", seed=0), _tsv(tmp_path / "b.tsv", seed=1)
    out = tmp_path / "study"
    first = _study(a).run(out, progress=False)
    with pytest.raises(ValueError, match=r"--dataset .*a\.tsv.* there, .*b\.tsv.* now"):
        _study(b).run(out, progress=False)
    with pytest.raises(ValueError, match=r"--max-iter \(8 there, 9 now\)"):
        _study(a, max_iter=9).run(out, progress=False)
    # the same file name with other content: its digest differs
    moved = tmp_path / "a_copy.tsv"
    moved.write_bytes(a.read_bytes())
    _tsv(a, seed=2)
    with pytest.raises(ValueError, match="the data file's content"):
        _study(a).run(out, progress=False)
    fresh = _study(b).run(tmp_path / "fresh", progress=False)
    forced = _study(b).run(out, progress=False, force=True)
    assert forced["table"].replace(str(tmp_path / "study"), "") == fresh["table"].replace(str(tmp_path / "fresh"), "")
    assert forced["table"] != first["table"]
    # options that only choose cells (more splits, other methods) resume
    more = _study(b, splits=3, methods=("ridge",)).run(out, progress=False)
    assert {r["split"] for r in more["records"]} == {0, 1, 2}


def test_a_resumed_study_keeps_the_reruns_its_study_json_names(tmp_path):
    """``study.json``'s ``reruns`` (the records rerun since, their provenance and why: :func:`load_study`) describe
    cells a resumed study keeps: a resume that adds splits writes the options and its provenance, and keeps them; a
    study forced over other settings deletes those cells, and their ``reruns`` with them."""
    from lvgp.experiments.study import load_study

    a, b = _tsv(tmp_path / "a.tsv", seed=0), _tsv(tmp_path / "b.tsv", seed=1)
    out = tmp_path / "study"
    _study(a, splits=2, methods=("ridge",)).run(out, progress=False)
    settings = json.loads((out / "study.json").read_text())
    reruns = [{"methods": ["ridge"], "provenance": settings["provenance"], "why": "a test"}]
    (out / "study.json").write_text(json.dumps({**settings, "reruns": reruns}))
    _study(a, splits=3, methods=("ridge",)).run(out, progress=False)
    resumed = json.loads((out / "study.json").read_text())
    assert resumed["reruns"] == reruns and resumed["splits"] == 3
    assert load_study(out).splits == 3
    _study(b, splits=2, methods=("ridge",)).run(out, progress=False, force=True)
    assert "reruns" not in json.loads((out / "study.json").read_text())


def test_out_an_existing_file_is_one_line_exit_2(tmp_path, capsys):
    tsv = _tsv(tmp_path / "toy.tsv")
    target = tmp_path / "a_file"
    target.write_text("x")
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "regression", "--dataset", str(tsv), "--methods", "ridge", "--out", str(target), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lvgp: error: --out {target} is a file, not a directory"]
    assert np.isfinite(1.0)


def test_sigterm_ends_a_study_as_ctrl_c_does(tmp_path, monkeypatch, capsys):
    """Issue 59: SIGTERM (kill, job schedulers) ended a study at once and silently. Now it ends as
    Ctrl-C does: the finished cells kept, the fit in progress not recorded, one line, exit 143."""
    import os
    import signal

    tsv = _tsv(tmp_path / "toy.tsv")
    original = fitting._run_lbfgs
    state = {"fits": 0}

    def run(flat, evaluate, end_of_iteration, max_iter, tol, result):
        state["fits"] += 1
        if state["fits"] != 2:
            return original(flat, evaluate, end_of_iteration, max_iter, tol, result)

        def terminated():
            os.kill(os.getpid(), signal.SIGTERM)
            return evaluate()

        return original(flat, terminated, end_of_iteration, max_iter, tol, result)

    monkeypatch.setattr(fitting, "_run_lbfgs", run)
    argv = ["compare", "regression", "--dataset", str(tsv), "--splits", "2", "--train-size", "30"]
    argv += ["--dev-size", "15", "--latent-dims", "2", "--rhos", "1", "--max-iter", "8", "--min-df", "1"]
    argv += ["--methods", "gplvsm,ridge", "--quiet", "--out", str(tmp_path / "o")]
    before = signal.getsignal(signal.SIGTERM)
    assert main(argv) == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before  # the CLI's handler is gone when it returns
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lvgp: terminated (SIGTERM); interrupted:"), err
    assert len(list((tmp_path / "o" / "cells").rglob("*.json"))) == 1


@pytest.mark.parametrize("option", ["--jobs", "--threads"])
@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_jobs_and_threads_must_be_positive(tmp_path, capsys, option, value):
    """Issue 59, fuzz 16: ``--jobs 0`` and ``--jobs -3`` were accepted while ``--threads 0`` was refused."""
    tsv = _tsv(tmp_path / "toy.tsv")
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "regression", "--dataset", str(tsv), "--methods", "ridge", option, value, "--out", "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"argument {option}: must be a positive integer" in err[0], err


@pytest.mark.parametrize("content", ["[]", "{x", '{"kind": "no-such-study"}', "\xff\xfe"])
def test_a_damaged_study_json_is_one_line_naming_the_file(tmp_path, capsys, content):
    """Issue 59, fuzz 17: ``[]`` gave an AttributeError traceback, ``{x`` a JSON message naming no file."""
    tsv = _tsv(tmp_path / "toy.tsv")
    out = tmp_path / "o"
    out.mkdir()
    (out / "study.json").write_bytes(content.encode("latin-1"))
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "regression", "--dataset", str(tsv), "--methods", "ridge", "--report-only", "--out", str(out)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out / "study.json") in err[0], err


def test_a_method_named_twice_is_refused(tmp_path):
    """Duplicated ``--methods`` gave duplicated table columns."""
    with pytest.raises(ValueError, match="--methods names ridge more than once"):
        _study(_tsv(tmp_path / "toy.tsv"), methods=("ridge", "gplvsm", "ridge")).run(tmp_path / "o", progress=False)


def _labelled_tsv(path, n=60, text=lambda i: f"text {i} about {'good' if i % 2 else 'bad'} things", prefix=b""):
    rows = [f"{text(i)}\t{'pos' if i % 2 else 'neg'}" for i in range(n)]
    path.write_bytes(prefix + ("text\tlabel\n" + "\n".join(rows) + "\n").encode("utf-8"))
    return path


def test_a_small_file_names_the_train_sizes_it_cannot_hold(tmp_path, capsys):
    """Newcomer stumble: ``--dataset my.tsv`` of 500 rows or fewer said '60 documents leave none for
    testing', never naming the default ``--train-sizes 50,100,200,500``."""
    tsv = _labelled_tsv(tmp_path / "small.tsv")
    argv = ["compare", "classification", "--dataset", str(tsv), "--methods", "logreg", "--quiet"]
    with pytest.raises(SystemExit):
        main([*argv, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert "has 60 rows" in err and "--train-sizes 50,100,200,500 (500) leaves none for testing" in err
    assert "--train-sizes 15,30" in err and not (tmp_path / "o" / "cells").exists()
    assert main([*argv, "--train-sizes", "15,30", "--splits", "1", "--out", str(tmp_path / "o2")]) == 0
    with pytest.raises(SystemExit):
        main([*argv, "--train-sizes", "30", "--test-size", "40", "--out", str(tmp_path / "o3")])
    assert "--test-size 40 need 70" in capsys.readouterr().err


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: _labelled_tsv(p, text=lambda i: "" if i in (4, 9) else f"text {i}"), r"empty 'text' on lines \[6, 11\]"),
        (lambda p: p.write_text("text\tlabel\n" + "".join(f"text {i}\tpos\n" for i in range(30))), "a classifier needs at least two classes"),
        (lambda p: p.write_bytes(b"text\tlabel\ngood\tpos\ncaf\xe9 bad\tneg\n"), r"line 3: not UTF-8 text \(byte 0xe9\).*iconv"),
    ],
    ids=["empty texts", "one class", "latin-1"],
)  # fmt: skip
def test_bad_rows_are_named_by_their_file_lines_before_any_cell(tmp_path, capsys, make, message):
    """Newcomer stumble: empty texts and a single class were found inside cells, with row numbers of
    the sample; Latin-1 bytes gave a bare codec error naming no file."""
    import re

    tsv = tmp_path / "bad.tsv"
    make(tsv)
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "classification", "--dataset", str(tsv), "--methods", "logreg", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1 and str(tsv) in err[0] and re.search(message, err[0]), err


def test_a_byte_order_mark_is_taken(tmp_path):
    """Newcomer stumble: a UTF-8 BOM made the header ``\\ufefftext``."""
    from lvgp.datasets.loaders import read_classification_tsv

    corpus = read_classification_tsv(_labelled_tsv(tmp_path / "bom.tsv", n=6, prefix=b"\xef\xbb\xbf"))
    assert len(corpus.train_texts) == 6 and corpus.train_texts[0] == "text 0 about bad things"


def test_report_only_needs_no_data(tmp_path, capsys):
    """``--report-only`` runs no cell: it writes the report of the cells there are without reading
    (or checking) the data, which may be gone or too small."""
    tsv = _labelled_tsv(tmp_path / "small.tsv")
    argv = ["compare", "classification", "--dataset", str(tsv), "--methods", "logreg", "--train-sizes", "10"]
    assert main([*argv, "--splits", "1", "--quiet", "--out", str(tmp_path / "o")]) == 0
    tsv.unlink()
    assert main(["compare", "classification", "--report-only", "--out", str(tmp_path / "o")]) == 0
    assert "logreg" in capsys.readouterr().out.lower()


def test_resuming_beside_cells_of_other_code_warns_counting_them(tmp_path):
    """A study resumed beside finished cells that other code ran (here: two cells whose provenance names
    another commit, as cells copied from an older study would) warns with the counts by code before it runs
    its cells, keeps those records as they are, and does not warn where every finished cell is this code's,
    where nothing is left to run, or in a report (``--report-only``), which runs nothing."""
    from lvgp.experiments.executors import ReportOnlyExecutor
    from lvgp.experiments.study import code_label, provenance
    from lvgp.warnings import MixedCodeWarning

    tsv, out = _tsv(tmp_path / "a.tsv"), tmp_path / "study"
    _study(tsv, splits=2, methods=("ridge",)).run(out, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixedCodeWarning)  # this code's cells, and nothing left to run: silent
        _study(tsv, splits=2, methods=("ridge",)).run(out, progress=False)
        _study(tsv, splits=3, methods=("ridge",)).run(out, progress=False)
    old = {"lvgp": "0.1.0", "git_commit": "0123456789abcdef", "git_dirty": False}
    for path in sorted((out / "cells" / "ridge").glob("split[01]/*.json")):
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "provenance": old}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixedCodeWarning)  # a report runs nothing: silent
        _study(tsv, splits=4, methods=("ridge",)).run(out, ReportOnlyExecutor(), progress=False)
    with pytest.warns(MixedCodeWarning) as caught:
        result = _study(tsv, splits=4, methods=("ridge",)).run(out, progress=False)
    message = str(caught[0].message)
    assert f"2 of the 3 finished cells in {out} were run by other code than this run" in message
    assert f"({code_label(provenance())}): 2 by 0123456" in message
    assert {c["split"]: c["provenance"] == old for c in result["cells"]} == {0: True, 1: True, 2: False, 3: False}
    assert code_label({"git_commit": "0123456789", "git_dirty": True}) == "0123456 with changes"
    assert code_label({"lvgp": "0.2.0", "git_commit": None}) == "lvgp 0.2.0"


def test_cells_of_a_commit_with_the_same_library_code_are_this_codes():
    """Commits that changed docs, results or benchmarks only leave ``lvgp/`` the same tree: records of two such
    commits are of the same code (no warning between them); a commit whose ``lvgp/`` differs, a commit not in
    the checkout, or a record with uncommitted changes are not."""
    import subprocess

    from lvgp.experiments.study import library_tree, same_library

    root = Path(__file__).resolve().parent.parent
    log = subprocess.run(["git", "-C", str(root), "log", "--format=%H", "-n", "200"], capture_output=True, text=True)
    trees = {c: library_tree(c) for c in log.stdout.split()}
    pairs = [(a, b) for a, b in zip(trees, list(trees)[1:]) if trees[a] is not None and trees[a] == trees[b]]
    if not pairs or len({t for t in trees.values() if t is not None}) < 2:
        pytest.skip("needs a git checkout with history (not a shallow clone)")
    a, b = pairs[0]
    other = next(c for c, t in trees.items() if t not in (trees[a], None))
    record = {"lvgp": "0.2.0", "git_dirty": False, "torch": "2", "python": "3.11"}
    assert same_library({**record, "git_commit": a}, {**record, "git_commit": b})
    assert not same_library({**record, "git_commit": a}, {**record, "git_commit": other})
    assert not same_library({**record, "git_commit": a}, {**record, "git_commit": "0123456789abcdef"})
    assert not same_library({**record, "git_commit": a, "git_dirty": True}, {**record, "git_commit": b})
