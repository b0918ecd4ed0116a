"""The supervised-topic-model study (Blei & McAuliffe 2007, Fig. 2 left): K-fold
cross-validated predictive R^2 of sLDA, LDA+regression and the lasso against the number of
topics.

Protocol: the documents are split into ``folds`` folds at random (seeded); for each fold,
the vocabulary is fitted on the other folds (stop words, tokens shorter than 3 letters and
words in fewer than ``min_df`` training documents removed; documents left without words are
removed from that fold's training set and counted); each model is fitted on the other folds
and predicts the held-out fold. pR^2 = 1 - sum (y - yhat)^2 / sum (y - ybar)^2 over all
out-of-fold predictions (the paper's definition), and per fold for the spread. The lasso
uses each document's word frequencies with the complexity chosen by 5-fold CV within the
training folds, as in the paper.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._random import study_generator
from ..base.constraints import Integer
from ..base.fit_options import EM
from ..bow.vocabulary import Vocabulary
from .registry import default_methods, register_method, register_study
from .regression import _cached_corpus
from .selection import CellGrid
from .study import DEVICE_HELP, Study, option, recorded_warnings, write_json


def _topic_grid(study) -> list[dict]:
    return [{"K": k} for k in study.topics]


@register_method("topics", "slda", "sLDA", selection=CellGrid(_topic_grid), default=True)
def _slda(study, cell, data):
    from ..models.slda import SLDARegressor

    return SLDARegressor(
        cell["params"]["K"],
        inference=study.inference,
        vocabulary=data[0],
        optimizer=EM(max_iter=study.max_iter) if study.inference == "em" else None,
        random_state=study.cell_seed(cell),
    )


@register_method("topics", "lda-regression", "LDA+regression", selection=CellGrid(_topic_grid), default=True)
def _lda_regression(study, cell, data):
    from ..models.slda import LDARegression

    return LDARegression(
        cell["params"]["K"],
        vocabulary=data[0],
        optimizer=EM(max_iter=study.max_iter),
        random_state=study.cell_seed(cell),
    )


@register_method("topics", "lasso", "Lasso (word frequencies)", default=True)
def _lasso(study, cell, data):
    from ..baselines.linear import DevTunedLinearRegression

    return DevTunedLinearRegression(
        "lasso", features="frequencies", vocabulary=data[0], cv=5, random_state=study.cell_seed(cell)
    )


@register_study
@dataclass(frozen=True)
class TopicStudy(Study):
    kind = "topics"
    help = "sLDA vs LDA+regression vs lasso: K-fold predictive R^2 against the number of topics (sLDA paper, Fig. 2)"
    dataset: str = option(help="amazon-snippets, amazon-reviews, movie-snippets, or PATH.tsv")
    folds: int = option(
        5, "cross-validation folds (predictive R^2 pooled over the out-of-fold predictions)", check=Integer(2)
    )
    topics: tuple[int, ...] = option((5, 10, 20, 30), "numbers of topics K")
    methods: tuple[str, ...] = option(default_methods("topics"))
    inference: str = option("em", "sLDA inference", choices=("em", "svi"))
    seed: int = option(0, "seed of the folds and the methods", check=Integer(0))
    device: str = option("cpu", DEVICE_HELP)
    min_df: int = option(2, "vocabulary: minimum document frequency in the training folds")
    max_iter: int = option(100, "EM iterations")
    documents: int | None = option(None, "a random subset of this many documents (default: all of the data set)")

    @property
    def n_splits(self) -> int:
        return self.folds

    def check_data(self) -> None:
        prepare_fold(self, 0)  # bad input (the data set, --folds, --documents) fails here, before any cell

    def run_cell(self, cell: dict) -> dict:
        return run_cell(self, cell)

    def summarize(self, cells: list[dict]) -> list[dict]:
        return summarize(cells, self)

    def table(self, records: list[dict]) -> str:
        return table(records, self)

    def write_outputs(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        write_json(out / "results.json", [_per_fold_record(c) for c in cells])
        write_json(out / "summary.json", records)

    def committed_records(self, out: Path) -> list[dict]:
        return json.loads((out / "summary.json").read_text())

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        pr2_figure(records, self, out / "pr2_vs_K.png")


@functools.lru_cache(maxsize=16)
def prepare_fold(study: TopicStudy, fold: int):
    """Fold ``fold`` of the study's cross-validation: ``(vocabulary, train texts, train targets,
    test texts, test targets, training documents dropped for holding no vocabulary word)``."""
    corpus = _cached_corpus(study.dataset)
    n = len(corpus)
    rows = np.arange(n)
    if study.documents is not None:
        if study.documents > n:
            raise ValueError(f"--documents must be at most the {n} documents of {study.dataset}; got {study.documents}")
        rows = np.sort(study_generator(study.seed, "topic documents").choice(n, study.documents, replace=False))
        n = len(rows)
    if study.folds < 2 or study.folds > n:
        raise ValueError(f"--folds must be between 2 and the number of documents ({n}); got {study.folds}")
    assignment = study_generator(study.seed, "topic folds").permutation(n) % study.folds
    test = rows[np.flatnonzero(assignment == fold)]
    train = rows[np.flatnonzero(assignment != fold)]
    texts = corpus.texts
    vocab = Vocabulary(min_df=study.min_df, min_token_len=3).fit([texts[i] for i in train])
    keep = np.array([any(w in vocab for w in vocab.tokenize(texts[i])) for i in train])
    train = train[keep]
    return (
        vocab,
        [texts[i] for i in train],
        corpus.y[train],
        [texts[i] for i in test],
        corpus.y[test],
        int((~keep).sum()),
    )


def run_cell(study: TopicStudy, cell: dict) -> dict:
    """Fit one cell's method with its number of topics on its fold; the cell's record."""
    data = prepare_fold(study, cell["split"])
    vocab, x_train, y_train, x_test, y_test, dropped = data
    method = cell["method"]
    model = study.build(cell, data)
    start = time.perf_counter()
    with recorded_warnings() as warned:
        model.fit(x_train, y_train)
        seconds = time.perf_counter() - start
        pred = model.predict(x_test)
        record = {
            "y_true": y_test.tolist(),
            "y_pred": np.asarray(pred).tolist(),
            "fit_seconds": seconds,
            "n_train": len(x_train),
            "n_test": len(x_test),
            "dropped_empty_train": dropped,
        }
        if method != "lasso":
            record["heldout_loglik_per_word"] = model.heldout_log_likelihood_per_word(x_test)
        if hasattr(model, "em_eta_scale_"):  # the EM's initial eta scale, and the dev scores it was chosen by
            record["em_eta_scale"] = model.em_eta_scale_
            record["em_eta_scale_dev_mse"] = {str(k): v for k, v in model.em_eta_scale_dev_mse_.items()}
    record["warnings"] = warned
    record["pr2"] = float(1 - np.sum((y_test - pred) ** 2) / np.sum((y_test - y_test.mean()) ** 2))
    return record


def summarize(cells: list[dict], study: TopicStudy) -> list[dict]:
    """One record per method and K (lasso: K=None): pooled out-of-fold pR^2 and the folds'."""
    groups: dict[tuple, list[dict]] = {}
    for c in cells:
        groups.setdefault((c["method"], c["params"].get("K")), []).append(c)
    out = []
    for (method, k), members in sorted(groups.items(), key=lambda kv: (study.method_order(kv[0][0]), kv[0][1] or 0)):
        y = np.concatenate([m["y_true"] for m in members])
        p = np.concatenate([m["y_pred"] for m in members])
        out.append(
            {
                "method": method,
                "K": k,
                "folds": len(members),
                "pr2": float(1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2)),
                "pr2_per_fold": [m["pr2"] for m in sorted(members, key=lambda m: m["split"])],
                "fit_seconds_mean": float(np.mean([m["fit_seconds"] for m in members])),
                **(
                    {"heldout_loglik_per_word": float(np.mean([m["heldout_loglik_per_word"] for m in members]))}
                    if "heldout_loglik_per_word" in members[0]
                    else {}
                ),
            }
        )
    return out


def table(summary: list[dict], study: TopicStudy) -> str:
    """The study's table: one row per number of topics, one column per method."""
    lines = [f"| K | {' | '.join(study.label(m) for m in study.methods)} |", "|---|" + "---|" * len(study.methods)]
    for k in study.topics:
        row = []
        best = max((r["pr2"] for r in summary if r["K"] in (k, None)), default=None)
        for m in study.methods:
            r = next((r for r in summary if r["method"] == m and r["K"] in ((None,) if m == "lasso" else (k,))), None)
            if r is None:
                row.append("–")
                continue
            text = f"{r['pr2']:.3f} ± {np.std(r['pr2_per_fold']):.3f}"
            row.append(f"**{text}**" if r["pr2"] == best else text)
        lines.append(f"| {k} | " + " | ".join(row) + " |")
    return "\n".join(lines) + (
        f"\n\n{study.dataset}: out-of-fold predictive R^2 pooled over {study.folds} folds (± std over folds); "
        f"sLDA by {'variational EM' if study.inference == 'em' else 'Pyro SVI'}; best per row in bold.\n"
    )


def _per_fold_record(c: dict) -> dict:
    return {
        "method": c["method"],
        "split": c["split"],
        "K": c["params"].get("K"),
        "pr2": c["pr2"],
        "fit_seconds": c["fit_seconds"],
        "n_train": c["n_train"],
        "n_test": c["n_test"],
    }


def pr2_figure(summary: list[dict], study: TopicStudy, path: Path) -> None:
    """Pooled out-of-fold pR^2 against K per method (the lasso, which has no K, as a line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for i, method in enumerate(study.methods):
        rows = [r for r in summary if r["method"] == method]
        if method == "lasso" and rows:
            ax.axhline(rows[0]["pr2"], color=f"C{i}", ls="--", label=study.label(method))
        elif rows:
            ax.errorbar(
                [r["K"] for r in rows],
                [r["pr2"] for r in rows],
                yerr=[np.std(r["pr2_per_fold"]) for r in rows],
                marker="o",
                capsize=3,
                color=f"C{i}",
                label=study.label(method),
            )
    ax.set_xlabel("number of topics K")
    ax.set_ylabel("predictive R^2 (out of fold)")
    ax.set_title(study.dataset)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
