"""The encoder methods in the studies (issue 37), end to end through the CLI on toy TSV corpora, with
a tiny random BERT standing in for the pretrained encoder: the encoder reads the texts as written
(not the vocabulary cut), every method of a cell gets the same documents, and the records hold the
encoding's seconds (and, in regression, the predictive distribution)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from lvgp.encoders import SentenceEncoder  # noqa: E402
from lvgp.encoders import sentence as sentence_module  # noqa: E402
from lvgp.experiments.cli import main  # noqa: E402

WORDS = {"pos": "good great fine nice", "neg": "bad awful poor dull"}


@pytest.fixture
def encoded(tmp_path, monkeypatch):
    """The texts the stand-in encoder was asked for."""
    monkeypatch.setenv("LVGP_DATA", str(tmp_path / "data"))
    tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0)
    seen: list[str] = []
    original = tiny.encode

    def encode(texts, **options):
        seen.extend(texts)
        return original(texts, **options)

    tiny.encode = encode
    monkeypatch.setattr(sentence_module, "shared_encoder", lambda name="x", device="cpu": tiny)
    return seen


def _tsv(path, header: str, rows: list[str]) -> str:
    path.write_text("\n".join([header, *rows]) + "\n")
    return str(path)


def test_classification_encoder_methods_read_the_texts_as_written(encoded, tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        label = "pos" if i % 3 else "neg"
        words = " ".join(rng.choice(WORDS[label].split(), 3))
        rows.append(f"the film was {words}, and the plot {i}\t{label}")
    tsv = _tsv(tmp_path / "toy.tsv", "text\tlabel", rows)
    methods = "logreg,encoder-logreg,tfidf-encoder-logreg,encoder-gpc,ldk-gpc-encoder,bow-gpc-encoder"
    argv = ["compare", "classification", "--dataset", tsv, "--train-sizes", "15", "--splits", "1", "--test-size", "10"]
    argv += ["--min-df-fraction", "0.2", "--ldk-max-iter", "3", "--methods", methods]
    argv += ["--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    records = {r["method"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert set(records) == set(methods.split(","))
    assert len({r["n_train"] for r in records.values()}) == 1  # the same documents for every method
    # the encoder saw sentences with their stop words and digits, which the cut removes for the others
    assert any(t.startswith("the film was") for t in encoded)
    for name in ("encoder-logreg", "tfidf-encoder-logreg"):
        assert records[name]["encode_seconds"] >= 0 and "log_loss" in records[name]
    table = (tmp_path / "out" / "table.md").read_text()
    assert "GP classifier (LDK+BoW+encoder)" in table and "LogReg (tf-idf + encoder)" in table
    assert "GP classifier (BoW+encoder)" in table


def test_regression_encoder_methods_record_their_predictive_distribution(encoded, tmp_path):
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(60):
        y = rng.normal()
        words = " ".join(rng.choice(WORDS["pos" if y > 0 else "neg"].split(), 3))
        rows.append(f"a {words} film\t{y:.3f}")
    tsv = _tsv(tmp_path / "toy.tsv", "text\ttarget", rows)
    methods = "ridge,encoder-ridge,tfidf-encoder-ridge,encoder-gp,gplvsm-encoder"
    argv = ["compare", "regression", "--dataset", tsv, "--splits", "1", "--train-size", "30", "--dev-size", "15"]
    argv += ["--min-df", "1", "--max-iter", "5", "--methods", methods, "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    records = {r["method"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())}
    assert set(records) == set(methods.split(","))
    for name in ("encoder-ridge", "tfidf-encoder-ridge", "encoder-gp", "gplvsm-encoder"):
        record = records[name]
        assert np.isfinite(record["nlpd"]) and 0 <= record["coverage_95"] <= 1, record
    assert (
        records["encoder-gp"]["uncertainty"] == "model" and records["encoder-ridge"]["uncertainty"] == "dev residuals"
    )


def test_an_unknown_encoder_is_refused_before_any_cell(tmp_path, capsys):
    argv = ["compare", "classification", "--dataset", "r8", "--encoder", "nope", "--out", str(tmp_path / "o")]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "--encoder must be one of" in capsys.readouterr().err


def test_the_encoder_precision_option_reaches_the_cells_encoders(tmp_path, monkeypatch):
    """``--encoder-precision`` (issue 60): the encoders the cells load by name compute in it."""
    monkeypatch.setenv("LVGP_DATA", str(tmp_path / "data"))
    tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0)
    asked: list[str] = []

    def shared(name="x", device="cpu"):
        asked.append(sentence_module._NAMED_PRECISION.get())
        return tiny

    monkeypatch.setattr(sentence_module, "shared_encoder", shared)
    rows = [f"a {'good fine' if i % 2 else 'bad dull'} film {i}\t{'pos' if i % 2 else 'neg'}" for i in range(30)]
    tsv = _tsv(tmp_path / "toy.tsv", "text\tlabel", rows)
    argv = ["compare", "classification", "--dataset", tsv, "--train-sizes", "10", "--splits", "1", "--test-size", "8"]
    argv += ["--methods", "encoder-logreg", "--encoder-precision", "float32", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    assert asked and set(asked) == {"float32"}
    records = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["encoder_precision_resolved"] for r in records] == ["float32"]  # what the cell's process computed in
    monkeypatch.setattr(sentence_module, "native_bfloat16", lambda: True)  # "auto" on a CPU with bfloat16 products
    auto = [*argv[:-4], "auto", "--out", str(tmp_path / "out-auto"), "--quiet"]
    assert main(auto) == 0 and asked[-1] == "auto"
    records = json.loads((tmp_path / "out-auto" / "results.json").read_text())
    assert [r["encoder_precision_resolved"] for r in records] == ["bfloat16"]
    argv[argv.index("--out") + 1] = str(tmp_path / "out2")
    with pytest.raises(SystemExit):
        main([*argv[:-3], "--encoder-precision", "half", *argv[-3:]])


def test_a_study_written_before_the_precision_option_loads_as_float32(tmp_path):
    """Studies written before ``--encoder-precision`` existed encoded in float32: resumed or reported,
    they keep it (the option's ``before`` value), while a new study takes ``auto``."""
    from lvgp.experiments.classification import ClassificationStudy
    from lvgp.experiments.study import load_study

    settings = ClassificationStudy(dataset="r8").settings()
    del settings["encoder_precision"]
    (tmp_path / "study.json").write_text(json.dumps(settings, default=list))
    assert load_study(tmp_path).encoder_precision == "float32"
    assert ClassificationStudy(dataset="r8").encoder_precision == "auto"


def _inline_processes(jobs: int):
    """A ``ProcessExecutor`` of ``jobs`` whose cells run in this process: the parent's part of a
    ``--jobs J`` run, with the tiny encoder the test patched in."""
    from lvgp.experiments.executors import InProcessExecutor, ProcessExecutor

    class InlineProcesses(ProcessExecutor):
        def run(self, fn, context, cells):
            return InProcessExecutor().run(fn, context, cells)

    return InlineProcesses(jobs=jobs, threads=1)


def _study(kind: str, tmp_path):
    """A small study of ``kind`` on a toy TSV whose methods read texts through the encoder and not."""
    from lvgp.experiments.classification import ClassificationStudy
    from lvgp.experiments.open_set import OpenSetStudy
    from lvgp.experiments.regression import RegressionStudy

    if kind == "regression":
        rows = [f"a {'good fine' if i % 2 else 'bad dull'} film {i}\t{i % 5 - 2}" for i in range(50)]
        tsv = _tsv(tmp_path / "toy.tsv", "text\ttarget", rows)
        return RegressionStudy(
            dataset=tsv, splits=2, train_size=20, dev_size=10, min_df=1, methods=("ridge", "encoder-ridge")
        )
    topics = ["good fine", "bad dull", "tax bank", "goal team"]
    rows = [f"a {topics[i % 4]} note {i}\t{topics[i % 4].split()[0]}" for i in range(60)]
    tsv = _tsv(tmp_path / "toy.tsv", "text\tlabel", rows)
    if kind == "classification":
        return ClassificationStudy(dataset=tsv, train_sizes=(10,), splits=2, methods=("logreg", "encoder-logreg"))
    return OpenSetStudy(dataset=tsv, unknown_classes=1, per_class=(3,), splits=2, methods=("svm", "encoder-knn"))


@pytest.mark.parametrize("kind", ["classification", "regression", "open-set"])
def test_a_study_in_several_processes_encodes_the_texts_its_cells_share_once_first(kind, tmp_path, monkeypatch):
    """With ``--jobs J > 1`` a study encodes the texts its encoder cells read (every split's training
    and test documents) once, into the cache, on all the workers' threads before the cells start -- the
    processes would otherwise encode the same texts at once -- and no cell computes one again; with one
    process the cells encode them, as before."""
    from lvgp.experiments.executors import InProcessExecutor
    from lvgp.experiments.study import Study

    monkeypatch.setenv("LVGP_DATA", str(tmp_path / "data"))
    tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0)
    monkeypatch.setattr(sentence_module, "shared_encoder", lambda name="x", device="cpu": tiny)
    events: list[tuple[str, int]] = []
    forward = tiny._forward

    def counted_forward(encodings):
        events.append(("computed", len(encodings)))
        return forward(encodings)

    tiny._forward = counted_forward
    study = _study(kind, tmp_path)
    encode_shared_texts, run_cell = type(study).encode_shared_texts, type(study).run_cell

    def recorded_encode_shared_texts(self, cells, threads, progress=True):
        at = len(events)
        events.append(("shared", -1))  # before the encoding it does
        events[at] = ("shared", encode_shared_texts(self, cells, threads, progress))
        return events[at][1]

    def recorded_run_cell(self, cell):
        events.append(("cell", 0))
        return run_cell(self, cell)

    monkeypatch.setattr(type(study), "encode_shared_texts", recorded_encode_shared_texts)
    monkeypatch.setattr(type(study), "run_cell", recorded_run_cell)
    shared = study.shared_texts(study.cells())
    assert shared and len(set(shared)) == len(shared) and Study.shared_texts(study, study.cells()) == []
    study.run(tmp_path / "out", executor=_inline_processes(2), progress=False)
    first_cell = events.index(("cell", 0))
    assert events[0] == ("shared", len(shared))
    assert sum(n for what, n in events[:first_cell] if what == "computed") == len(shared)
    assert not any(what == "computed" for what, _ in events[first_cell:])  # the cells read them from the cache

    events.clear()  # one process: no encoding before the cells
    study.run(tmp_path / "out1", executor=InProcessExecutor(), progress=False)
    assert events[0] == ("cell", 0) and not any(what == "shared" for what, _ in events)


def test_ctrl_c_while_encoding_the_shared_texts_ends_the_study_before_any_cell(tmp_path, monkeypatch):
    from lvgp.experiments.study import StudyInterrupted

    study = _study("classification", tmp_path)

    def interrupted(self, cells, threads, progress=True):
        raise KeyboardInterrupt

    monkeypatch.setattr(type(study), "encode_shared_texts", interrupted)
    with pytest.raises(StudyInterrupted, match="before any cell ran"):
        study.run(tmp_path / "out", executor=_inline_processes(2), progress=False)
    assert not list((tmp_path / "out" / "cells").glob("**/*.json"))
