"""The regression study runner end to end on a tiny synthetic TSV, and its bad input."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lvgp.datasets import make_synonym_regression
from lvgp.experiments.cli import main
from lvgp.experiments.executors import ProcessExecutor
from lvgp.experiments.regression import RegressionStudy
from lvgp.experiments.study import StudyDirectory, run_study


@pytest.fixture
def tsv(tmp_path):
    corpus = make_synonym_regression(n=90, noise=0.05, random_state=0)
    path = tmp_path / "toy.tsv"
    lines = ["id\ttext\ttarget"] + [f"{i}\t{t}\t{y:.5f}" for i, (t, y) in enumerate(zip(corpus.texts, corpus.y))]
    path.write_text("\n".join(lines) + "\n")
    return path


ARGS = [
    "--splits",
    "2",
    "--train-size",
    "40",
    "--dev-size",
    "20",
    "--latent-dims",
    "1,2",
    "--rhos",
    "1,10",
    "--max-iter",
    "15",
    "--min-df",
    "1",
    "--quiet",
]


def test_study_writes_records_table_figures_and_resumes(tsv, tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["compare", "regression", "--dataset", str(tsv), *ARGS, "--out", str(out)]) == 0
    records = json.loads((out / "results.json").read_text())
    defaults = {"gplvsm", "gplvsm-default", "gp-rbf", "ridge", "lasso", "elasticnet", "tfidf-ridge"}
    assert {r["method"] for r in records} == defaults
    assert len(records) == 7 * 2
    for r in records:
        assert {"method", "split", "rmse", "dev_rmse", "hyperparameters", "fit_seconds", "n_test"} <= set(r)
        assert r["n_train"] + r["dropped_empty_train"] == 40 and r["n_dev"] == 20 and r["n_test"] == 30
    gp = [r for r in records if r["method"] == "gplvsm"]
    assert all(set(r["hyperparameters"]) == {"q", "rho"} for r in gp)
    grid = json.loads((out / "grid.json").read_text())
    assert len([c for c in grid if c["method"] == "gplvsm"]) == 2 * 2 * 2
    # the chosen cell is the dev-best one, never the test-best
    for r in gp:
        cells = [c for c in grid if c["method"] == "gplvsm" and c["split"] == r["split"]]
        assert r["dev_rmse"] == min(c["dev_rmse"] for c in cells)
    # each method's own record fields come from its registry hook (Method.record), not name branches
    cells = [json.loads(p.read_text()) for p in (out / "cells").rglob("*.json")]  # grid.json drops the big fields
    q2 = [c for c in cells if c["method"] == "gplvsm" and c["params"]["q"] == 2 and c["split"] == 0]
    assert q2 and all(len(c["word_vectors"]) == len(c["word_counts"]) > 0 for c in q2)
    assert not any("word_vectors" in c for c in cells if c["method"] != "gplvsm" or c["split"] != 0)
    assert all(set(c["chosen"]) == {"alpha", "l1_ratio"} for c in cells if c["method"] in ("ridge", "lasso"))
    assert all("coef" in c for c in cells if c["method"] == "ridge" and c["split"] == 0)
    assert all(c["chosen"]["gamma"] > 0 for c in cells if c["method"] == "gp-rbf")
    table = (out / "table.md").read_text()
    assert (
        "| data set | GP-LVSM | GP-LVSM (lvgp's default) | GP regression | Ridge | Lasso | Elastic net | Ridge (tf-idf) |"
        in table
    )
    assert "**" in table
    for name in ("rmse_vs_q.png", "rmse_vs_rho.png", "word_map.png"):
        assert (out / name).stat().st_size > 1000
    assert "GP-LVSM" in capsys.readouterr().out
    # resumption: a second run recomputes nothing (cell files untouched)
    stamps = {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("*.json")}
    assert main(["compare", "regression", "--dataset", str(tsv), *ARGS, "--out", str(out)]) == 0
    assert stamps == {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("*.json")}
    # a deleted cell is recomputed, the others are not
    victim = next(iter(stamps))
    victim.unlink()
    assert main(["compare", "regression", "--dataset", str(tsv), *ARGS, "--out", str(out)]) == 0
    assert victim.exists()


def _flaky(context, cell):
    if cell["split"] == 1:
        raise RuntimeError("boom in split 1")
    return {"value": cell["split"]}


def test_a_failing_cell_is_reported_and_the_others_complete(tmp_path):
    directory = StudyDirectory(tmp_path)
    cells = [{"method": "m", "split": s, "params": {}} for s in range(3)]
    done, failures = run_study(_flaky, None, cells, directory, progress=False)
    assert sorted(r["split"] for r in done) == [0, 2]
    assert len(failures) == 1 and "boom in split 1" in failures[0][1]
    assert "RuntimeError: boom in split 1" in directory.error_path(cells[1]).read_text()


def test_every_cell_record_says_which_code_produced_it(tmp_path):
    import lvgp
    from lvgp.experiments.study import provenance

    directory = StudyDirectory(tmp_path)
    done, _ = run_study(_flaky, None, [{"method": "m", "split": 0, "params": {}}], directory, progress=False)
    record = done[0]["provenance"]
    assert record == provenance() and record["lvgp"] == lvgp.__version__
    root = Path(lvgp.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if (root / ".git").exists() and head.returncode == 0:  # imported from a checkout: its commit
        assert record["git_commit"] == head.stdout.strip() and isinstance(record["git_dirty"], bool)
    else:  # an installed copy: no commit is claimed
        assert record["git_commit"] is None


def test_git_dirty_is_about_the_code_not_the_committed_results_a_rerun_rewrites(tmp_path):
    """A study rerun into its committed folder deletes and rewrites tracked files under results/:
    the provenance's git_dirty leaves those out, and still says dirty for any other tracked change."""
    from lvgp.experiments.study import tracked_changes

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "lvgp").mkdir()
    (tmp_path / "results" / "study").mkdir(parents=True)
    (tmp_path / "lvgp" / "code.py").write_text("x = 1\n")
    (tmp_path / "results" / "study" / "results.json").write_text("[]\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    assert not tracked_changes(tmp_path)
    (tmp_path / "results" / "study" / "results.json").unlink()  # what a rerun into the folder does first
    (tmp_path / "untracked.txt").write_text("scratch")
    assert not tracked_changes(tmp_path)
    (tmp_path / "lvgp" / "code.py").write_text("x = 2\n")
    assert tracked_changes(tmp_path)


def test_local_processes_give_the_same_results_as_in_process(tsv, tmp_path):
    study = RegressionStudy(
        dataset=str(tsv),
        splits=1,
        train_size=40,
        dev_size=20,
        latent_dims=(2,),
        rhos=(1.0,),
        max_iter=10,
        min_df=1,
        methods=("gplvsm", "ridge"),
    )
    a = study.run(tmp_path / "a", progress=False)["records"]
    b = study.run(tmp_path / "b", ProcessExecutor(2), progress=False)["records"]
    key = lambda r: (r["method"], r["split"])  # noqa: E731
    assert [(key(r), r["rmse"]) for r in sorted(a, key=key)] == [(key(r), r["rmse"]) for r in sorted(b, key=key)]


def test_cells_cover_the_grid():
    study = RegressionStudy(dataset="x", splits=3, methods=("gplvsm", "ridge"), latent_dims=(1, 2), rhos=(0.1, 1, 10))
    cells = study.cells()
    assert len(cells) == 3 * (2 * 3) + 3


@pytest.mark.parametrize(
    "content,extra,message",
    [
        ("text\tscore\na b\t1\n", [], "missing column"),
        ("text\ttarget\ngood film\t1.0\nbad film\tn/a\n", [], "non-numeric or missing 'target' on lines \\[3\\]"),
        (None, ["--train-size", "80", "--dev-size", "20"], "the split is larger than the data"),
        (None, ["--methods", "gplvsm,magic"], "unknown method 'magic'"),
    ],
)
def test_bad_input_gives_clear_errors(tmp_path, tsv, content, extra, message, capsys):
    """The command's exit status 2 and one line naming the problem. In this process: ``python -m lvgp``
    is this ``main`` (tests/test_examples.py runs it as a command), and an interpreter a case cost 3-4 s
    of imports."""
    path = tsv
    if content is not None:
        path = tmp_path / "bad.tsv"
        path.write_text(content)
    args = [
        "compare",
        "regression",
        "--dataset",
        str(path),
        "--out",
        str(tmp_path / "o"),
        "--quiet",
        "--splits",
        "1",
        "--train-size",
        "1" if content else "40",
        "--dev-size",
        "1" if content else "20",
        *extra,
    ]
    with pytest.raises(SystemExit) as exited:
        main(args)
    stderr = capsys.readouterr().err
    assert exited.value.code == 2, stderr
    assert "lvgp: error:" in stderr
    assert re.search(message, stderr), stderr


def test_sparse_gplvsm_runs_as_a_study_method(tsv, tmp_path):
    study = RegressionStudy(
        dataset=str(tsv),
        splits=1,
        train_size=40,
        dev_size=20,
        vb_latent_dims=(2,),
        vb_rhos=(1.0,),
        min_df=1,
        methods=("gplvsm-sparse",),
        sparse_inducing=8,
        sparse_epochs=3,
    )
    records = study.run(tmp_path, progress=False)["records"]
    assert len(records) == 1 and records[0]["method"] == "gplvsm-sparse" and np.isfinite(records[0]["rmse"])


def test_word_map_labels_do_not_overlap():
    """The word map places each label where it overlaps no placed label and no other point, or leaves it out."""
    import matplotlib.pyplot as plt

    from lvgp.experiments.figures import place_labels

    rng = np.random.default_rng(0)
    xy = rng.normal(size=(60, 2))
    fig, ax = plt.subplots(figsize=(7, 6))
    ax.scatter(xy[:, 0], xy[:, 1], s=12)
    omitted = place_labels(fig, ax, xy, [f"word{i}" for i in range(60)], ["tab:blue"] * 60)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    plt.close(fig)
    assert len(boxes) + omitted == 60 and omitted < 10
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


PLUGIN = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "my_methods.py"  # the docs' plugin


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch, isolated_registry):
    """The documentation's plugin (``examples/plugins/my_methods.py``) as ``lvgp_test_plugin.py`` in the current
    directory; the registry, the environment and ``sys.path`` as they were after the test (``isolated_registry``)."""
    import sys

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "lvgp_test_plugin.py").write_text(PLUGIN.read_text())
    monkeypatch.chdir(folder)
    monkeypatch.delitem(sys.modules, "lvgp_test_plugin", raising=False)
    return folder


def test_a_plugins_method_runs_beside_the_built_in_ones_in_worker_processes(tsv, tmp_path, plugin_folder, capsys):
    """``--plugin MODULE`` imports a module of the current directory that registers a method; ``--methods`` takes
    it, the processes of ``--jobs 2`` import it too (the registry reads ``LVGP_PLUGINS``), and its records are
    scored as the built-in ones'; its RidgeCV on sklearn's tf-idf is the pipeline fitted by hand. A report of the
    finished study without the plugin says what to pass; a plugin that cannot be imported is one line, exit 2."""
    import os

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline

    from lvgp.experiments import registry
    from lvgp.experiments.regression import RegressionStudy, prepare_split

    out = tmp_path / "study"
    args = ["compare", "regression", "--dataset", str(tsv), *ARGS, "--methods", "my-ridge-cv,ridge", "--out", str(out)]
    assert main([*args, "--plugin", "lvgp_test_plugin", "--jobs", "2"]) == 0
    records = json.loads((out / "results.json").read_text())
    assert sorted((r["method"], r["split"]) for r in records) == [
        ("my-ridge-cv", 0),
        ("my-ridge-cv", 1),
        ("ridge", 0),
        ("ridge", 1),
    ]
    study = RegressionStudy(dataset=str(tsv), splits=2, train_size=40, dev_size=20, min_df=1)
    data = prepare_split(study, 1)
    by_hand = make_pipeline(TfidfVectorizer(sublinear_tf=True), RidgeCV(alphas=np.logspace(-3, 3, 13)))
    by_hand.fit(data.train_texts, data.y_train)
    rmse = float(np.sqrt(np.mean((by_hand.predict(data.test_texts) - data.y_test) ** 2)))
    mine = next(r for r in records if r["method"] == "my-ridge-cv" and r["split"] == 1)
    assert mine["rmse"] == pytest.approx(rmse, rel=1e-9)  # data.y_* are standardized already
    assert "Ridge (tf-idf, alpha by CV)" in (out / "table.md").read_text()
    capsys.readouterr()
    assert main(["compare", "regression", "--report-only", "--out", str(out), "--plugin=lvgp_test_plugin"]) == 0
    registry._METHODS["regression"].pop("my-ridge-cv")  # a new session, without the plugin
    registry._LOADED_PLUGINS.clear()
    os.environ[registry.PLUGINS_ENV] = ""
    with pytest.raises(SystemExit):
        main(["compare", "regression", "--report-only", "--out", str(out)])
    assert "pass --plugin MODULE" in capsys.readouterr().err
    assert main([*args, "--plugin", "no_such_lvgp_plugin"]) == 2
    assert "--plugin no_such_lvgp_plugin: the module cannot be imported (ModuleNotFoundError" in capsys.readouterr().err


def test_the_vocabulary_diagnostics_plugin_differs_from_its_built_in_methods_in_its_words(tsv, isolated_registry):
    """``benchmarks/plugins/vocabulary_diagnostic.py`` (``benchmarks/README.md``): its GP-LVSM is ``gplvsm-default``'s
    but for the negations its vocabulary keeps, and its ridge ``tfidf-ridge``'s on the GP's words."""
    from lvgp.experiments.regression import RegressionStudy, prepare_split

    isolated_registry.load_plugins(["vocabulary_diagnostic"])
    study = RegressionStudy(dataset=str(tsv), splits=1, train_size=40, dev_size=20, min_df=1)
    data = prepare_split(study, 0)
    cell = {"method": "gplvsm-default-negations", "split": 0, "params": {}}
    gp = study.build(cell, data)
    built_in = study.build({**cell, "method": "gplvsm-default"}, data)
    assert {k: v for k, v in gp.get_params().items() if k != "vocabulary"} == {
        k: v for k, v in built_in.get_params().items() if k != "vocabulary"
    }
    kept = set(gp.vocabulary.fit(["it is not good", "no never the film"]).words)
    assert {"not", "never", "good", "film"} <= kept and not kept & {"it", "is", "no", "the"}  # 'no': two letters
    ridge = study.build({"method": "tfidf-ridge-study-vocab", "split": 0, "params": {}}, data)
    ridge.fit(data.train_texts, data.y_train, data.dev_texts, data.y_dev)
    assert "not" not in ridge.tfidf_.vocabulary_ and all(len(w) >= 3 for w in ridge.tfidf_.vocabulary_)
