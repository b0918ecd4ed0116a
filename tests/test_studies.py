"""The study machinery shared by every ``lvgp compare``: options generated from the study
definitions (they cannot drift), warnings recorded per cell, the thesis's vocabulary cut, and
dev selection over a grid with exactly equivalent settings fitted once."""

from __future__ import annotations

import dataclasses
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from lvgp import LBFGS
from lvgp.base.fit_options import FitOptionsMixin
from lvgp.datasets import make_synonym_regression
from lvgp.experiments import classification, registry, selection
from lvgp.experiments.cli import build_parser, main
from lvgp.experiments.registry import methods, register_method, studies
from lvgp.experiments.study import recorded_warnings
from lvgp.kernels import LDKSpec


@pytest.mark.parametrize("name", sorted(studies()))
def test_every_study_setting_is_an_option_with_its_default(name):
    parser = build_parser()
    study_cls = studies()[name]
    required = [f for f in dataclasses.fields(study_cls) if f.default is dataclasses.MISSING]
    argv = ["compare", name, "--out", "x"]
    for f in required:
        argv += ["--" + f.name.replace("_", "-"), "v"]
    args = parser.parse_args(argv)
    for f in dataclasses.fields(study_cls):
        if f.default is not dataclasses.MISSING:
            assert getattr(args, f.name) == f.default, f.name
    # the --methods (--strategies) help names every method the study knows
    sub = parser._subparsers._group_actions[0].choices["compare"]._subparsers._group_actions[0].choices[name]
    help_text = " ".join(" ".join(a.help.split()) for a in sub._actions if a.dest == study_cls.methods_option)
    for method in methods(name):
        assert method in help_text.replace("- ", "-"), method


def test_list_and_boolean_options_parse():
    args = build_parser().parse_args(
        [
            "compare",
            "matching",
            "--pairs",
            "p",
            "--source",
            "en",
            "--target",
            "de",
            "--out",
            "o",
            "--gammas",
            "1,10",
            "--no-dedupe-families",
            "--methods",
            "ldk,cca",
        ]
    )
    assert args.gammas == (1.0, 10.0) and args.dedupe_families is False and args.methods == ("ldk", "cca")


def test_recorded_warnings_counts_each_category_and_keeps_the_first_message():
    with recorded_warnings() as warned:
        warnings.warn("first", RuntimeWarning, stacklevel=1)
        warnings.warn("second", RuntimeWarning, stacklevel=1)
        warnings.warn("other", UserWarning, stacklevel=1)
    assert warned == {"RuntimeWarning": {"count": 2, "first": "first"}, "UserWarning": {"count": 1, "first": "other"}}


def test_vocabulary_cut_applies_to_every_method_and_counts_emptied_documents(monkeypatch):
    train = ["apple banana cherry", "apple banana", "apple zebra", "quokka", "banana apple"] * 2
    labels = np.array(["a", "b", "a", "b", "a"] * 2)
    test = ["apple quokka", "walrus", "banana"]
    monkeypatch.setattr(
        classification, "prepare", lambda study, split, size: (train, labels, test, np.array(["a"] * 3))
    )
    study = classification.ClassificationStudy("toy", min_df_fraction=0.3)
    x_train, y_train, x_test, _, info = classification.prepare_cell(study, 0, 10)
    # words in fewer than 30% of the 10 training documents go: cherry, zebra (2 each), quokka (2)
    assert info == {"min_df_fraction": 0.3, "vocabulary_size": 2, "dropped_empty_train": 2, "empty_test": 1}
    assert x_test == ["apple", "", "banana"] and len(x_train) == len(y_train) == 8
    assert all(set(t.split()) <= {"apple", "banana"} for t in x_train)
    classification.prepare_cell.cache_clear()


class _Recorder:
    """A stand-in estimator: predicts the first class unless C >= 1; records its fits."""

    fits: list = []

    def __init__(self, C=1.0, rho=1.0, gamma=1.0):
        self.C, self.rho, self.gamma = C, rho, gamma

    def get_params(self, deep=True):
        return {"C": self.C, "rho": self.rho, "gamma": self.gamma}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, X, y):
        _Recorder.fits.append(self.get_params())
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.array([x.split()[0] if self.C >= 1 and self.rho / self.gamma <= 1 else self.classes_[0] for x in X])


def test_dev_selection_fits_each_equivalent_setting_once_and_prefers_the_first_of_ties():
    X = [f"{c} doc{i}" for i in range(12) for c in ("a", "b")]
    y = np.array([x.split()[0] for x in X])
    grid = {"rho": [1.0, 0.1], "gamma": [0.1, 1.0], "C": [0.5, 2.0]}
    _Recorder.fits = []
    selected = selection.DevSelected(
        _Recorder(), grid, 0, lambda p: {**p, "rho": float(f"{p['rho'] / p['gamma']:.12g}"), "gamma": 1.0}
    ).fit(X, y)
    # 8 settings, 6 distinct canonical ones (rho/gamma in 10, 1, 1, 0.1 for each C), plus the refit
    assert len(_Recorder.fits) == 6 + 1
    assert len(selected.dev_scores_) == 6
    # perfect dev accuracy needs C >= 1 and rho/gamma <= 1; the first such setting in grid order wins
    assert selected.best_params_ == {"rho": 1.0, "gamma": 1.0, "C": 2.0}
    assert selected.fitted_params_ == {"rho": 1.0, "gamma": 1.0, "C": 2.0}
    assert _Recorder.fits[-1] == {"C": 2.0, "rho": 1.0, "gamma": 1.0}


class _PathRecorder(FitOptionsMixin, _Recorder):
    """:class:`_Recorder` with ``warm_start`` and an L-BFGS ``optimizer`` (its ``max_iter`` 50 by
    default); records whence each fit starts."""

    _optimizer_defaults = (LBFGS(max_iter=50),)

    def __init__(self, C=1.0, rho=1.0, gamma=1.0, warm_start=False, optimizer=None):
        super().__init__(C, rho, gamma)
        self.warm_start, self.optimizer = warm_start, optimizer

    def get_params(self, deep=True):
        return {**super().get_params(deep), "warm_start": self.warm_start, "optimizer": self.optimizer}

    def fit(self, X, y):
        start = self.fitted_C if self.warm_start and hasattr(self, "fitted_C") else None
        _Recorder.fits.append((self.C, self.rho, start, self._optimizer_options().max_iter, len(X)))
        self.fitted_C, self.classes_ = self.C, np.unique(y)
        return self


def test_dev_selection_along_a_warm_started_path_and_the_refit_walks_it():
    X = [f"{c} doc{i}" for i in range(12) for c in ("a", "b")]
    y = np.array([x.split()[0] for x in X])
    grid = {"rho": [1.0, 0.1], "C": [0.5, 2.0, 8.0]}
    _Recorder.fits = []
    selected = selection.DevSelected(_PathRecorder(), grid, 0, path="C", path_max_iter=3).fit(X, y)
    n_train = len(X) - len(selection.dev_split(y, 0)[1])
    # per rho: the largest C from the initialization with the estimator's budget, then down the path
    assert _Recorder.fits[:6] == [
        (8.0, 1.0, None, 50, n_train),
        (2.0, 1.0, 8.0, 3, n_train),
        (0.5, 1.0, 2.0, 3, n_train),
        (8.0, 0.1, None, 50, n_train),
        (2.0, 0.1, 8.0, 3, n_train),
        (0.5, 0.1, 2.0, 3, n_train),
    ]
    assert len(selected.dev_scores_) == 6
    # ties go to the first setting in grid order (rho 1, C 2); the refit walks C = 8 -> 2 on everything
    assert selected.best_params_ == {"rho": 1.0, "C": 2.0}
    assert _Recorder.fits[6:] == [(8.0, 1.0, None, 50, len(X)), (2.0, 1.0, 8.0, 3, len(X))]
    with pytest.raises(ValueError, match="path must name"):
        selection.DevSelected(_PathRecorder(), grid, 0, path="gamma", path_max_iter=3)
    with pytest.raises(ValueError, match="path_max_iter"):
        selection.DevSelected(_PathRecorder(), grid, 0, path="C")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_latent_smm_dev_path_refit_is_the_path_walked_by_hand():
    from lvgp.models.latent_smm import LatentSMMClassifier

    corpus = make_synonym_regression(n=40, noise=0.0, random_state=0)
    X, y = list(corpus.texts), np.where(corpus.y > np.median(corpus.y), "pos", "neg")
    smm = LatentSMMClassifier(LDKSpec(latent_dim=2, rho=0.5), optimizer=LBFGS(max_iter=4), random_state=0)
    grid = {"C": [0.5, 2.0, 8.0]}
    selected = selection.DevSelected(smm, grid, 0, path="C", path_max_iter=2).fit(X, y)
    chosen = selected.best_params_["C"]
    by_hand = LatentSMMClassifier(LDKSpec(latent_dim=2, rho=0.5), optimizer=LBFGS(max_iter=4), random_state=0)
    for step, C in enumerate(c for c in (8.0, 2.0, 0.5) if c >= chosen):
        by_hand.set_params(C=C, warm_start=step > 0, optimizer__max_iter=2 if step else 4).fit(X, y)
    np.testing.assert_array_equal(selected.model_.word_vectors_, by_hand.word_vectors_)
    assert selected.model_.C == chosen
    study = classification.ClassificationStudy(dataset="r8")
    walked = study.estimator({"method": "latent-smm", "split": 0})
    assert (walked.path, walked.path_max_iter) == ("C", study.dev_path_iter)
    cold = classification.ClassificationStudy(dataset="r8", dev_path_iter=0).estimator(
        {"method": "latent-smm", "split": 0}
    )
    assert cold.path is None
    assert study.estimator({"method": "ldk-gpc", "split": 0}).path is None


def test_dev_selection_by_k_folds_scores_every_document_once_per_setting():
    X = [f"{c} doc{i}" for i in range(12) for c in ("a", "b")]
    y = np.array([x.split()[0] for x in X])
    grid = {"rho": [1.0, 0.1], "gamma": [1.0], "C": [0.5, 2.0]}
    _Recorder.fits = []
    selected = selection.DevSelected(_Recorder(), grid, 0, folds=4).fit(X, y)
    # 4 settings x 4 folds, plus the refit; each fold trains on 3/4 of the 24 documents
    assert len(_Recorder.fits) == 4 * 4 + 1
    assert [score for _, score in selected.dev_scores_] == [0.5, 1.0, 0.5, 1.0]  # C < 1 predicts "a"
    assert selected.best_params_ == {"rho": 1.0, "gamma": 1.0, "C": 2.0}
    # folds=1 is the single dev part: one fit per setting
    _Recorder.fits = []
    selection.DevSelected(_Recorder(), grid, 0, folds=1).fit(X, y)
    assert len(_Recorder.fits) == 4 + 1


class _Confident(BaseEstimator):
    """Predicts a document's first word, with probability ``confidence`` (ties in accuracy)."""

    def __init__(self, confidence=0.6):
        self.confidence = confidence

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        hit = np.array([[x.split()[0] == c for c in self.classes_] for x in X], dtype=float)
        return hit * self.confidence + (1 - hit) * (1 - self.confidence) / (len(self.classes_) - 1)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def test_dev_selection_by_log_likelihood_separates_settings_that_tie_in_accuracy():
    X = [f"{c} doc{i}" for i in range(12) for c in ("a", "b", "c")]
    y = np.array([x.split()[0] for x in X])
    grid = {"confidence": [0.6, 0.9, 0.99999]}
    by_accuracy = selection.DevSelected(_Confident(), grid, 0, folds=3).fit(X, y)
    assert by_accuracy.best_params_ == {"confidence": 0.6}  # all perfect: the first wins
    by_loglik = selection.DevSelected(_Confident(), grid, 0, folds=3, scoring="log-likelihood").fit(X, y)
    assert by_loglik.best_params_ == {"confidence": 0.99999}
    assert [s for _, s in by_loglik.dev_scores_] == pytest.approx(np.log([0.6, 0.9, 0.99999]))
    with pytest.raises(ValueError, match="scoring"):
        selection.DevSelected(_Confident(), grid, 0, scoring="auc")
    with pytest.raises(ValueError, match="folds"):
        selection.DevSelected(_Confident(), grid, 0, folds=0)


class _Margins(_Confident):
    """As _Confident, with per-class decision values: the first word's class at ``confidence``."""

    def class_decision_function(self, X):
        return self.predict_proba(X)


def test_ties_in_dev_accuracy_go_to_the_smallest_dev_hinge_loss():
    X = [f"{c} doc{i}" for i in range(12) for c in ("a", "b", "c")]
    y = np.array([x.split()[0] for x in X])
    grid = {"confidence": [0.6, 0.9, 0.99999]}
    selected = selection.DevSelected(_Margins(), grid, 0, folds=3).fit(X, y)
    # every setting is perfect on dev; the margins 0.6 - 0.2, 0.9 - 0.05, ... decide
    assert selected.best_params_ == {"confidence": 0.99999}
    expected = [max(0.0, 1 - (c - (1 - c) / 2)) for c in grid["confidence"]]
    assert [loss for _, loss in selected.dev_hinge_] == pytest.approx(expected)
    # no per-class decision values: the first of the tied settings, as before
    assert selection.DevSelected(_Confident(), grid, 0, folds=3).fit(X, y).dev_hinge_ == []


def test_multiclass_hinge_closed_form():
    from lvgp.base.metrics import multiclass_hinge

    decision = np.array([[2.0, 0.5, -1.0], [0.2, 0.4, 0.1], [0.0, 0.0, 3.0]])
    loss = multiclass_hinge(decision, np.array(["a", "b", "c"]), np.array(["a", "a", "z"]))
    np.testing.assert_allclose(loss[:2], [0.0, 1.2])
    assert loss[2] == np.inf  # a label the model never saw


def test_ldk_gpc_grid_spans_q_rho_and_alpha_epsilon_most_regularized_first():
    study = classification.ClassificationStudy(
        dataset="r8", latent_dims=(8, 2), rhos=(0.1, 1.0), alpha_epsilons=(0.001, 0.1), dev_folds=4
    )
    selected = study.estimator({"method": "ldk-gpc-glove", "split": 3})
    assert selected.grid == {
        "latent_dim": [2, 8],
        "rho": [1.0, 0.1],
        "alpha_epsilon": [0.1, 0.001],
        "level2": ["linear"],  # the thesis's, by default
        "word_weighting": ["uniform"],
    }
    assert selected.folds == 4 and selected.estimator.kernel.word_embeddings == study.embeddings
    assert classification.ClassificationStudy(dataset="r8").alpha_epsilons == (0.01,)  # Milios et al.'s default


def test_level2_kernels_and_word_weights_of_the_ldk_classifiers_are_grids_and_checked():
    study = classification.ClassificationStudy(dataset="r8", level2s=("cosine", "linear"))
    for method in ("latent-smm", "ldk-gpc"):
        assert study.estimator({"method": method, "split": 0}).grid["level2"] == ["cosine", "linear"]
    # the latent SMM's (gamma, rho) -> (1, rho / gamma) equivalence keeps the level-2 choice
    smm = study.estimator({"method": "latent-smm", "split": 0})
    assert smm.canonical({"rho": 1.0, "gamma": 10.0, "level2": "cosine"}) == {
        "rho": 0.1,
        "gamma": 1.0,
        "level2": "cosine",
    }
    for bad in (("cosin",), ()):
        with pytest.raises(ValueError, match="level2s"):
            classification.ClassificationStudy(dataset="r8", level2s=bad).validate()
    with pytest.raises(ValueError, match="word_weightings"):
        classification.ClassificationStudy(dataset="r8", word_weightings=("tfidf",)).validate()
    study = classification.ClassificationStudy(dataset="r8", word_weightings=("idf",))
    assert study.estimator({"method": "ldk-gpc-glove", "split": 0}).grid["word_weighting"] == ["idf"]


def test_in_process_cells_run_with_the_given_threads_in_torch_and_the_blas_pools():
    import torch
    from threadpoolctl import threadpool_info

    from lvgp.experiments.executors import InProcessExecutor

    def counts(context, cell):
        return torch.get_num_threads(), {pool["num_threads"] for pool in threadpool_info()}

    before = counts(None, None)
    [(_, inside, error)] = list(InProcessExecutor(threads=1).run(counts, None, [{"method": "m", "split": 0}]))
    assert error is None and inside == (1, {1})
    assert counts(None, None) == before  # restored


def test_a_partial_study_table_says_how_many_samples_each_mean_covers():
    from lvgp.experiments.classification import ClassificationStudy, table_markdown

    study = ClassificationStudy("r8", methods=("svm", "logreg"), train_sizes=(50, 100), splits=3)
    records = [{"method": "svm", "train_size": 50, "split": s, "accuracy": 0.8 + s / 100} for s in range(3)]
    records.append({"method": "logreg", "train_size": 50, "split": 0, "accuracy": 0.9})
    rows = {
        line.split("|")[1].strip(): line
        for line in table_markdown(records, study).splitlines()
        if line.startswith("| ")
    }
    assert "| 0.810 ± 0.008 |" in rows["50"] and "**0.900 ± 0.000** (1 of 3)" in rows["50"]
    assert rows["100"].count("–") == 2


def test_partial_regression_matching_and_categorical_tables_say_how_many_samples_each_mean_covers():
    from lvgp.experiments import categorical, matching, regression

    rmse = [{"method": "ridge", "split": s, "rmse": 0.8 + s / 100} for s in range(3)]
    rmse.append({"method": "gp-rbf", "split": 0, "rmse": 0.7})
    text = regression.summary_table(rmse, regression.RegressionStudy("toy", splits=3))
    assert "| 0.810 ± 0.008 |" in text and "**0.700 ± 0.000** (1 of 3)" in text

    study = matching.MatchingStudy("pairs.jsonl", sets=4)
    ranks = {1: 0.5, 5: 0.6, 10: 0.7, 20: 0.8, 50: 0.9}
    records = [{"method": "cca", "set": s, "precision_at": ranks} for s in range(4)]
    records += [{"method": "ldk", "set": s, "precision_at": {r: p / 2 for r, p in ranks.items()}} for s in range(2)]
    row = next(line for line in matching.table_markdown(records, study).splitlines() if line.startswith("| 1 |"))
    assert row == "| 1 | 0.250 ± 0.000 (2 of 4) | **0.500 ± 0.000** |"

    study = categorical.CategoricalStudy("xor", splits=3, methods=("uniform", "multinomial"))
    records = [{"method": "uniform", "split": s, "perplexity": 2.0} for s in range(3)]
    records.append({"method": "multinomial", "split": 1, "perplexity": 1.5})
    mean_row = next(line for line in categorical.table_markdown(records, study).splitlines() if "mean ± std |" in line)
    assert mean_row == "| mean ± std | 2.000 ± 0.000 | **1.500 ± 0.000** (1 of 3) |"


COMMITTED = sorted(p.parent for p in (Path(__file__).resolve().parent.parent / "results").glob("*/*/study.json"))


@pytest.mark.parametrize("directory", COMMITTED, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_committed_study_regenerates_its_table(directory, tmp_path):
    """``--report-only`` on a committed study (settings from study.json, no cells/): the table
    from results.json, unchanged."""
    copy = tmp_path / directory.name
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("*.png"))
    (copy / "table.md").unlink()
    kind = json.loads((copy / "study.json").read_text())["kind"]
    assert main(["compare", kind, "--report-only", "--out", str(copy)]) == 0
    assert (copy / "table.md").read_text() == (directory / "table.md").read_text()


class _Majority(ClassifierMixin, BaseEstimator):
    """A toy classifier: the most frequent training label."""

    def fit(self, X, y):
        labels, counts = np.unique(np.asarray(y), return_counts=True)
        self.classes_, self.label_ = labels, labels[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(list(X)), self.label_)


@pytest.fixture
def toy_method():
    register_method("classification", "toy-majority", "Majority class")(lambda study, cell, data: _Majority())
    yield "toy-majority"
    registry._METHODS["classification"].pop("toy-majority")


def test_a_registered_method_runs_in_a_study_end_to_end(toy_method, tmp_path, capsys):
    """One registry entry makes a method known to the CLI, the cells, the table and the figure."""
    rng = np.random.default_rng(0)
    words = {"pos": "good great fine nice", "neg": "bad awful poor dull"}
    lines = ["text\tlabel"]
    for i in range(40):
        label = "pos" if i % 3 else "neg"
        lines.append(" ".join(rng.choice(words[label].split(), 4)) + f"\t{label}")
    tsv = tmp_path / "toy.tsv"
    tsv.write_text("\n".join(lines) + "\n")
    argv = ["compare", "classification", "--dataset", str(tsv), "--train-sizes", "12", "--splits", "2"]
    argv += ["--test-size", "10", "--methods", f"{toy_method},logreg", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    table = (tmp_path / "out" / "table.md").read_text()
    assert "| train size | Majority class | LogReg (BoW) |" in table
    records = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["method"] for r in records] == ["logreg"] * 2 + [toy_method] * 2  # in registration order
    assert all(0 <= r["accuracy"] <= 1 for r in records)
    assert (tmp_path / "out" / "accuracy_vs_train_size.png").stat().st_size > 0
    # calibration: recorded for the methods that give probabilities, with a table and a diagram
    for r in records:
        assert ("log_loss" in r) == (r["method"] == "logreg")
        if r["method"] == "logreg":
            assert r["log_loss"] > 0 and 0 <= r["ece"] <= 1 and sum(r["reliability"]["count"]) == r["n_test"]
    log_loss_table = table.split("none run.")[1]
    assert "Test log loss" in log_loss_table and "| train size | LogReg (BoW) |" in log_loss_table
    assert (tmp_path / "out" / "reliability.png").stat().st_size > 0
    with pytest.raises(SystemExit):
        main(["compare", "classification", "--help"])
    assert toy_method in capsys.readouterr().out


def test_a_study_written_before_an_option_loads_with_what_it_did(tmp_path):
    """study.json files from before --dev-path-iter fitted every latent-SMM setting from the prior:
    they load with the option's ``before`` value (0), not the new default."""
    from lvgp.experiments.study import load_study

    (tmp_path / "study.json").write_text(json.dumps({"kind": "classification", "dataset": "r8", "splits": 1}))
    assert load_study(tmp_path).dev_path_iter == 0
    (tmp_path / "study.json").write_text(json.dumps({"kind": "classification", "dataset": "r8", "dev_path_iter": 5}))
    assert load_study(tmp_path).dev_path_iter == 5
    assert classification.ClassificationStudy(dataset="r8").dev_path_iter == 10


def test_in_process_cells_show_their_fits_progress_and_only_lvgp_estimators_are_made_verbose(tmp_path):
    """With the cells' bar shown and cells run in this process, each cell's lvgp estimators get
    verbose=True (their own tqdm bars); scikit-learn's printing verbose flags are left alone."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from lvgp.experiments.executors import InProcessExecutor
    from lvgp.experiments.study import FIT_PROGRESS, StudyDirectory, run_study, with_fit_progress
    from lvgp.models.latent_smm import LatentSMMClassifier

    pipe = with_fit_progress(make_pipeline(LatentSMMClassifier(), LogisticRegression()))
    assert pipe.get_params()["latentsmmclassifier__verbose"] is True
    assert pipe.get_params()["logisticregression__verbose"] == 0
    study = classification.ClassificationStudy(dataset="r8", methods=("latent-smm",))
    seen = []

    def cell_fn(context, cell):
        seen.append(study.build({"method": "latent-smm", "split": 0}).verbose)
        return {"ok": True}

    cells = [{"method": "latent-smm", "split": s, "params": {}} for s in range(2)]
    for progress, executor, expected in ((True, InProcessExecutor(), True), (False, InProcessExecutor(), False)):
        seen.clear()
        run_study(cell_fn, None, cells, StudyDirectory(tmp_path / str(progress)), executor, progress=progress)
        assert seen == [expected, expected]
    assert FIT_PROGRESS.get() is False  # reset after the run


def test_a_choice_inside_the_cell_is_refused_where_the_study_cannot_run_it():
    """``Method(selection=InnerDev(...))`` wraps the cell's estimator in DevSelected (a classifier's
    fit): the classification study runs it, another study says so before any cell runs; a
    CellGrid's settings are the cells."""
    from lvgp.experiments.matching import MatchingStudy
    from lvgp.experiments.selection import CellGrid, InnerDev

    register_method("matching", "toy-inner", "Toy", selection=InnerDev(lambda study: {"C": [1.0]}))(
        lambda study, cell, data: None
    )
    register_method("matching", "toy-cells", "Toy", selection=CellGrid(lambda study: [{"a": 1}, {"a": 2}]))(
        lambda study, cell, data: None
    )
    try:
        with pytest.raises(ValueError, match="'toy-inner' chooses its settings on dev inside each cell"):
            MatchingStudy(pairs="wagtail-de", methods=("toy-inner",)).validate()
        cells = MatchingStudy(pairs="wagtail-de", methods=("toy-cells",), sets=2).cells()
        assert [(c["split"], c["params"]) for c in cells] == [
            (0, {"a": 1}),
            (0, {"a": 2}),
            (1, {"a": 1}),
            (1, {"a": 2}),
        ]
    finally:
        registry._METHODS["matching"].pop("toy-inner")
        registry._METHODS["matching"].pop("toy-cells")
