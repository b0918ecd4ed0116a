"""Every option of every ``lvgp compare`` study x {missing, wrong type, out of range, NaN} (issue 40):
each mistake is one line on stderr and exit 2, before any cell runs (no ``cells/`` is written)."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from lvgp.datasets import make_synonym_regression
from lvgp.experiments.cli import main
from lvgp.experiments.registry import studies

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    corpus = make_synonym_regression(n=80, noise=0.05, random_state=0)
    regression = root / "reg.tsv"
    rows = [f"{i}\t{t}\t{y:.5f}" for i, (t, y) in enumerate(zip(corpus.texts, corpus.y))]
    regression.write_text("id\ttext\ttarget\n" + "\n".join(rows) + "\n")
    labelled = root / "cls.tsv"
    rows = [f"{t}\t{'pos' if y > 0 else 'neg'}" for t, y in zip(corpus.texts, corpus.y)]
    labelled.write_text("text\tlabel\n" + "\n".join(rows) + "\n")
    topics = root / "topics.tsv"  # four classes: one can be out of scope
    rows = [f"{t}\t{'abcd'[i % 4]}" for i, t in enumerate(corpus.texts)]
    topics.write_text("text\tlabel\n" + "\n".join(rows) + "\n")
    return {"regression": regression, "classification": labelled, "topics": topics}


def base_argv(kind: str, files: dict) -> list[str]:
    """A valid, tiny command of each study (the options varied below replace their own values)."""
    return {
        "regression": [
            "--dataset",
            str(files["regression"]),
            "--train-size",
            "30",
            "--dev-size",
            "15",
            "--min-df",
            "1",
        ],
        "topics": ["--dataset", str(files["regression"]), "--min-df", "1"],
        "classification": ["--dataset", str(files["classification"]), "--train-sizes", "10"],
        "matching": [
            *("--pairs", str(DATA / "wagtail_en_de_300.jsonl.gz"), "--train", "60", "--dev", "10"),
            *("--test", "10", "--cca-components", "8"),
        ],
        "categorical": ["--dataset", "xor"],
        "open-set": ["--dataset", str(files["topics"]), "--unknown-classes", "1", "--per-class", "3", "--splits", "1"],
        "active": ["--dataset", str(files["topics"]), "--budget", "12", "--batch", "4", "--splits", "1"],
    }[kind]


def _methods_option(kind: str) -> str:
    """The option that names a study's methods (the active study's are its strategies)."""
    return "--strategies" if kind == "active" else "--methods"


def _kind_of(study_cls: type, field: dataclasses.Field) -> tuple[type, bool]:
    """(the option's scalar type, whether it is a list)."""
    kind = typing.get_type_hints(study_cls)[field.name]
    if isinstance(kind, typing.types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    if typing.get_origin(kind) is tuple:
        return typing.get_args(kind)[0], True
    return kind, False


def cases() -> list[tuple[str, str, str, str]]:
    out = []
    for kind, cls in sorted(studies().items()):
        for field in dataclasses.fields(cls):
            scalar, is_list = _kind_of(cls, field)
            option = "--" + field.name.replace("_", "-")
            if scalar is bool:
                out.append((kind, option, "missing", f"{option}=yes"))  # a flag takes no value
                continue
            out.append((kind, option, "missing", ""))
            if scalar in (int, float):
                out.append((kind, option, "wrong type", "1,abc" if is_list else "abc"))
                out.append((kind, option, "out of range", "-1,1" if is_list and scalar is int else "-1"))
                if scalar is float:
                    out.append((kind, option, "nan", "nan"))
            elif field.metadata.get("choices") or field.name in ("methods", "strategies", "device", "dataset", "pairs"):
                out.append((kind, option, "wrong value", "no-such-thing"))
            if is_list and not field.metadata.get("allow_empty"):
                out.append((kind, option, "empty", ","))
    return out


CASES = cases()


@pytest.mark.parametrize("kind, option, case, value", CASES, ids=[f"{k}{o}-{c}" for k, o, c, _ in CASES])
def test_every_option_mistake_is_one_line_and_exit_2(kind, option, case, value, files, tmp_path, capsys):
    if (kind, option) == ("regression", "--embeddings") and case == "missing":
        pass
    argv = ["compare", kind, *base_argv(kind, files), _methods_option(kind), _cheap_method(kind), "--quiet"]
    argv += ["--out", str(tmp_path / "out")]
    if case == "missing":
        argv.append(option) if not value else argv.append(value)
    else:
        argv += [option, value]
    with pytest.raises(SystemExit) as exit_info:
        code = main(argv)
        raise SystemExit(code)
    assert exit_info.value.code == 2, (argv, capsys.readouterr())
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0], err
    assert not (tmp_path / "out" / "cells").exists()  # refused before any cell ran


def _cheap_method(kind: str) -> str:
    cheap = {"regression": "ridge", "topics": "lda-regression", "classification": "logreg", "matching": "cca"}
    return {**cheap, "open-set": "svm", "active": "random"}.get(kind, "uniform")


def test_the_base_commands_are_valid(files, tmp_path, tiny_encoder):
    """The commands the cases vary are themselves accepted (validated; only the cheapest method; the
    active study's logistic regression reads a tiny random BERT in place of the pretrained encoder)."""
    tiny_encoder(None, 0)
    for kind in sorted(studies()):
        argv = ["compare", kind, *base_argv(kind, files), _methods_option(kind), _cheap_method(kind), "--quiet"]
        argv += ["--out", str(tmp_path / kind)]
        if kind in ("matching", "classification"):
            argv += ["--splits" if kind == "classification" else "--sets", "1"]
        assert main(argv) == 0, kind
