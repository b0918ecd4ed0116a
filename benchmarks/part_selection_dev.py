"""Compositions the evidence can switch off (issue 56, section 2), scored on dev documents only.

The encoder GP methods sum a word part and the encoder's part. With ``part_selection="evidence"``
the estimator fits each sub-composition (words, encoder, both) from the same start and keeps the one
of the highest evidence with BIC's Occam factor (:mod:`lvgp.kernels.composition`). This script runs
the studies' estimators with it and scores *every* sub-composition on dev, so that one table shows:

* what each part alone and the sum score on dev (the oracle's choice: the best dev row);
* which one the evidence picks, and what the pick scores against the sum (the default today).

Regression: ``gplvsm-encoder`` of ``lvgp compare regression`` on amazon and movie snippets, the
study's splits (1,000 training sentences), scored on the split's dev part (RMSE, NLPD, 95% coverage).
Classification: ``bow-gpc-encoder`` and ``ldk-gpc-encoder`` of ``lvgp compare classification`` (the
study's samples, vocabulary cut and inference), on r8 and 20ng, scored on other documents of the
corpus's training part (accuracy, log loss; the Dirichlet inference's temperature fitted per
sub-composition, as the study's methods do). No test document is read.

    python benchmarks/part_selection_dev.py [--quick] [--regression amazon-snippets,movie-snippets]
        [--classification r8,20ng] [--sizes 50,200] [--splits 3] [--dev 800] [--jobs 2]

``--quick`` runs a tiny random BERT on a synthetic corpus (the code path; its numbers mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from lvgp.kernels.composition import occam_score

sys.path.insert(0, str(Path(__file__).resolve().parent))


def scored_parts(est, score):
    """Wrap ``est``'s per-sub-composition scoring so that each sub-composition is also scored on dev by
    ``score(est)`` (a dict) while its model is the fitted one; returns the list the rows go into."""
    rows: list[dict] = []
    original = est._part_score

    def part_score(names, keep, n):
        out = dict(original(names, keep, n))  # the estimator's own criterion (part_selection="loo")
        evidence, k = est._fitted_log_evidence(), est._n_hyperparameters()
        out.update(
            log_evidence=evidence, n_hyperparameters=k, evidence_score=occam_score(evidence, k, n), n=n, **score(est)
        )
        rows.append(out)
        return out

    est._part_score = part_score
    return rows


def shuffled_encoder(est, seed: int = 0) -> None:
    """The control: the encoder's vector of each text is that of another text of the same call (a fixed
    permutation a call's length), so the encoder's part carries no signal and the words part all of it."""
    original = est._encoder_features

    def features(X, name):
        out = original(X, name)
        return out[np.random.default_rng([seed, len(out)]).permutation(len(out))]

    est._encoder_features = features


def regression_cell(dataset: str, split: int, quick: bool, control: str = "none") -> list[dict]:
    import torch

    from lvgp.base.metrics import gaussian_nlpd, interval_coverage
    from lvgp.experiments.regression import RegressionStudy, prepare_split

    torch.set_num_threads(1)
    if quick:
        from types import SimpleNamespace

        from encoder_design import quick_texts

        from lvgp import Adam, GPLVSMRegressor

        texts, labels, _ = quick_texts(100)
        y = labels.astype(float)
        data = SimpleNamespace(train_texts=texts[:60], y_train=y[:60], dev_texts=texts[60:], y_dev=y[60:])
        est = GPLVSMRegressor(sentence_encoder="all-MiniLM-L6-v2", optimizer=Adam(max_iter=5), random_state=0)
    else:
        study = RegressionStudy(dataset=dataset, splits=split + 1)
        data = prepare_split(study, split)
        est = study.build({"method": "gplvsm-encoder", "split": split, "params": {}}, data)
    est.set_params(part_selection="loo")
    if control == "shuffled-encoder":
        shuffled_encoder(est)

    def score(model):
        model.model_.eval()
        try:
            mean, std = model.predict(data.dev_texts, return_std=True)
        finally:
            model.model_.train()
        y = data.y_dev
        return {
            "dev_rmse": float(np.sqrt(np.mean((mean - y) ** 2))),
            "dev_nlpd": float(gaussian_nlpd(y, mean, std)),
            "dev_coverage95": float(interval_coverage(y, mean, std)[0.95]),
        }

    rows = scored_parts(est, score)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(data.train_texts, data.y_train)
    seconds = time.perf_counter() - start
    return [
        dict(
            r,
            corpus=dataset + ("" if control == "none" else f" ({control})"),
            split=split,
            size=60 if quick else study.train_size,
            method="gplvsm-encoder",
            seconds=seconds,
        )
        for r in rows
    ] + [
        {
            "corpus": dataset + ("" if control == "none" else f" ({control})"),
            "split": split,
            "size": 60 if quick else study.train_size,
            "selected": list(est.selected_parts_),
            "method": "gplvsm-encoder",
        }
    ]


def classification_cell(
    dataset: str, split: int, size: int, method: str, n_dev: int, quick: bool, control: str = "none"
) -> list[dict]:
    import torch

    from lvgp.experiments.classification import ClassificationStudy

    torch.set_num_threads(1)
    if quick:
        from encoder_design import quick_texts

        texts, labels, _ = quick_texts()
        train_x, train_y, dev_x, dev_y = texts[:size], labels[:size], texts[size:], labels[size:]
    else:
        from encoder_design import dev_documents

        train_x, train_y, dev_x, dev_y = dev_documents(dataset, split, size, n_dev)
    study = ClassificationStudy(dataset="r8" if quick else dataset, min_df_fraction=0.01)
    est = study.build({"method": method, "split": split, "train_size": size}, None)
    est.set_params(part_selection="loo")
    if control == "shuffled-encoder":
        shuffled_encoder(est)

    def score(model):
        if model.calibration == "temperature":
            model.temperature_ = model._fit_temperature()
        model.model_.eval()
        model.likelihood_.eval()
        try:
            proba = model.predict_proba(dev_x)
        finally:
            model.model_.train()
            model.likelihood_.train()
        index = {c: i for i, c in enumerate(model.classes_)}
        p = np.array([proba[i, index[c]] if c in index else 0.0 for i, c in enumerate(dev_y)])
        return {
            "dev_accuracy": float(np.mean(model.classes_[proba.argmax(1)] == np.asarray(dev_y))),
            "dev_log_loss": float(-np.mean(np.log(np.clip(p, 1e-300, None)))),
        }

    rows = scored_parts(est, score)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(train_x, train_y)
    seconds = time.perf_counter() - start
    head = {
        "corpus": dataset + ("" if control == "none" else f" ({control})"),
        "split": split,
        "size": size,
        "method": method,
    }
    return [dict(r, **head, seconds=seconds) for r in rows] + [dict(head, selected=list(est.selected_parts_))]


def summarize(records: list[dict], metrics: tuple[str, ...]) -> None:
    """Per corpus, size and method: each sub-composition's dev metrics (mean over the splits) and how
    often each criterion picks it; then each criterion's pick against the sum (the default), and the
    oracle's (the best dev row a split, by the first metric)."""
    keys = sorted({(r["corpus"], r["size"], r["method"]) for r in records if "selected" not in r}, key=str)
    sign = -1 if metrics[0].endswith(("rmse", "loss", "nlpd")) else 1
    for corpus, size, method in keys:
        fitted = [
            r
            for r in records
            if "selected" not in r and (r["corpus"], r["size"], r["method"]) == (corpus, size, method)
        ]
        splits = sorted({r["split"] for r in fitted})
        parts = sorted({tuple(r["parts"]) for r in fitted}, key=lambda p: (-len(p), p))
        by_split = {s: [r for r in fitted if r["split"] == s] for s in splits}
        picks = {
            "evidence": {s: max(rows, key=lambda r: r["evidence_score"]) for s, rows in by_split.items()},
            "loo-argmax": {s: max(rows, key=lambda r: r["loo_log_predictive"]) for s, rows in by_split.items()},
            "loo": {
                s: max((r for r in rows if r.get("eligible", True)), key=lambda r: r["loo_log_predictive"])
                for s, rows in by_split.items()
            },
            "oracle": {s: max(rows, key=lambda r: sign * r[metrics[0]]) for s, rows in by_split.items()},
        }
        for p in parts:
            cells = [r for r in fitted if tuple(r["parts"]) == p]
            means = " | ".join(f"{np.mean([c[m] for c in cells]):.4f}" for m in metrics)
            counts = " | ".join(
                f"{sum(1 for s in splits if tuple(picks[c][s]['parts']) == p)}"
                for c in ("evidence", "loo-argmax", "loo")
            )
            print(f"| {corpus} | {size} | {method} | {'+'.join(p)} | {means} | {counts} |")
        full = {s: next(r for r in rows if tuple(r["parts"]) == parts[0]) for s, rows in by_split.items()}
        for criterion in ("evidence", "loo-argmax", "loo", "oracle"):
            deltas = " | ".join(
                f"{np.mean([picks[criterion][s][m] - full[s][m] for s in splits]):+.4f}" for m in metrics
            )
            print(f"| {corpus} | {size} | {method} | *{criterion}'s pick - sum* | {deltas} | |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny random BERT on a synthetic corpus")
    parser.add_argument("--regression", default="amazon-snippets,movie-snippets")
    parser.add_argument("--classification", default="r8,20ng")
    parser.add_argument("--methods", default="bow-gpc-encoder,ldk-gpc-encoder")
    parser.add_argument("--sizes", default="50,200")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--dev", type=int, default=800)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--controls",
        default="none,shuffled-encoder",
        help="none: the texts as they are; shuffled-encoder: each text's encoder vector from another text (the "
        "encoder's part then carries no signal)",
    )
    parser.add_argument("--out", default=None, help="write the records here (JSON)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    warnings.simplefilter("ignore")
    if args.quick:
        from lvgp.encoders import SentenceEncoder
        from lvgp.encoders import sentence as sentence_module

        tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0)
        sentence_module.shared_encoder = lambda name="x", device="cpu": tiny  # noqa: ARG005 -- no download
        jobs = [
            ("regression", ("synthetic", 0, True, "shuffled-encoder")),
            ("classification", ("synthetic", 0, 40, "bow-gpc-encoder", 0, True)),
        ]
    else:
        controls = args.controls.split(",")
        jobs = [
            ("regression", (d, s, False, c))
            for c in controls
            for d in args.regression.split(",")
            if d
            for s in range(args.splits)
        ]
        jobs += [
            ("classification", (d, s, int(n), m, args.dev, False, c))
            for c in controls
            for d in args.classification.split(",")
            if d
            for n in args.sizes.split(",")
            for m in args.methods.split(",")
            for s in range(args.splits)
        ]
    run = {"regression": regression_cell, "classification": classification_cell}
    records: list[dict] = []
    if args.jobs == 1 or args.quick:
        for kind, cell in jobs:
            records += run[kind](*cell)
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            for out in pool.map(_call, [(kind, cell) for kind, cell in jobs]):
                records += out
    if args.out:
        Path(args.out).write_text(json.dumps(records, indent=1, default=str))
    reg = [r for r in records if r["method"] == "gplvsm-encoder"]
    cls = [r for r in records if r["method"] != "gplvsm-encoder"]
    if reg:
        print(
            "| corpus | training size | method | parts | dev RMSE | dev NLPD | dev 95% coverage | evidence picks | LOO picks |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        summarize(reg, ("dev_rmse", "dev_nlpd", "dev_coverage95"))
    if cls:
        print(
            "\n| corpus | training size | method | parts | dev accuracy | dev log loss | evidence picks | LOO picks |"
        )
        print("|---|---|---|---|---|---|---|---|")
        summarize(cls, ("dev_accuracy", "dev_log_loss"))
    return 0


def _call(job):
    kind, cell = job
    return {"regression": regression_cell, "classification": classification_cell}[kind](*cell)


if __name__ == "__main__":
    raise SystemExit(main())
