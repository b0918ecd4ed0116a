"""The comparative regression study (GP-LVSM paper, section 5; Table 2 protocol).

Per split: random disjoint train / dev / test sets; the vocabulary from the training
documents only (stop words, short and rare words removed); targets standardized with
training statistics; every method fitted on train, its hyper-parameters chosen on dev
(GP-LVSM: q and rho over a grid, each fit also stopped early on dev); RMSE on test in
standardized units.

Training documents left without any vocabulary word cannot be embedded by LDK; they are
removed from the training set of *every* method (counted in each record as
``dropped_empty_train``). Empty dev/test documents stay: GP-LVSM predicts them with its
prior, the linear models with their intercept.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..bow.vocabulary import Vocabulary
from ..datasets.loaders import RegressionCorpus, corpus_names, load_corpus
from ..warnings import UnseenWordsWarning
from .study import PARTIAL_NOTE, mean_cell, option, recorded_warnings

DATASETS = corpus_names("regression")
METHODS = ("gplvsm", "gplvsm-vb", "gplvsm-sparse", "gp-rbf", "ridge", "lasso", "elasticnet", "slda", "lda-regression")
LABELS = {
    "gplvsm": "GP-LVSM",
    "gplvsm-vb": "GP-LVSM (VB+GloVe+len)",
    "gp-rbf": "GP regression",
    "ridge": "Ridge",
    "lasso": "Lasso",
    "elasticnet": "Elastic net",
    "gplvsm-sparse": "GP-LVSM (sparse)",
    "slda": "sLDA",
    "lda-regression": "LDA+regression",
}


@dataclass(frozen=True)
class RegressionStudy:
    """Everything a worker needs to rebuild any split (the data itself is loaded from the
    registry cache or the TSV path by each worker once)."""

    dataset: str = option(
        help="amazon-snippets, amazon-reviews, movie-snippets, or PATH.tsv (a header with 'text' and 'target' columns)"
    )
    splits: int = option(5, "random train/dev/test splits")
    train_size: int = option(1000, "training documents per split")
    dev_size: int = option(1000, "development documents per split (hyper-parameters are chosen on them)")
    test_size: int | None = option(None, "test documents per split (default: all remaining documents)")
    seed: int = option(0, "seed of the splits and the methods")
    min_df: int = option(2, "vocabulary: minimum document frequency in train")
    min_token_len: int = option(3, "vocabulary: shortest token kept")
    max_iter: int = option(300, "L-BFGS iterations of gplvsm (early-stopped on dev)")
    vb_max_iter: int = option(400, "Adam iterations of gplvsm-vb (early-stopped on dev)")
    latent_dims: tuple[int, ...] = option((1, 2, 4, 6, 8, 10), "gplvsm grid over q")
    rhos: tuple[float, ...] = option((0.01, 0.1, 1.0, 10.0, 100.0), "gplvsm grid over rho")
    vb_latent_dims: tuple[int, ...] = option((2,), "grid over q of gplvsm-vb and gplvsm-sparse")
    sparse_inducing: int = option(64, "inducing documents of gplvsm-sparse")
    sparse_epochs: int | None = option(None, "cap on the SVI epochs of gplvsm-sparse (default: its step budget alone)")
    vb_rhos: tuple[float, ...] = option((0.1, 0.3, 1.0), "grid over rho of gplvsm-vb and gplvsm-sparse")
    embeddings: str = option("glove-6b-50d", "pretrained word vectors of gplvsm-vb")
    topics: tuple[int, ...] = option((5, 10, 20, 30), "grid over the number of topics of slda and lda-regression")
    slda_inference: str = option("em", "sLDA inference", choices=("em", "svi"))
    methods: tuple[str, ...] = option(("gplvsm", "gp-rbf", "ridge", "lasso", "elasticnet"))


@dataclass
class SplitData:
    train_texts: list[str]
    y_train: np.ndarray
    dev_texts: list[str]
    y_dev: np.ndarray
    test_texts: list[str]
    y_test: np.ndarray
    vocabulary: Vocabulary
    dropped_empty_train: int
    y_mean: float
    y_std: float


def check_sizes(study: RegressionStudy, n: int) -> None:
    need = study.train_size + study.dev_size + (study.test_size or 1)
    if study.train_size < 2 or study.dev_size < 1:
        raise ValueError(f"--train-size must be >= 2 and --dev-size >= 1; got {study.train_size}, {study.dev_size}")
    if need > n:
        raise ValueError(
            f"the split is larger than the data: train {study.train_size} + dev {study.dev_size} + test "
            f"{study.test_size or 'at least 1'} > {n} documents in {study.dataset}"
        )


@functools.lru_cache(maxsize=64)
def prepare_split(study: RegressionStudy, split: int) -> SplitData:
    """The documents, standardized targets and training vocabulary of one split (cached per process)."""
    corpus = _cached_corpus(study.dataset)
    n = len(corpus)
    check_sizes(study, n)
    # splits are a function of (seed, split) only, whatever else the study holds
    perm = np.random.default_rng([study.seed, split, 20150125]).permutation(n)
    tr = perm[: study.train_size]
    dv = perm[study.train_size : study.train_size + study.dev_size]
    rest = perm[study.train_size + study.dev_size :]
    te = rest if study.test_size is None else rest[: study.test_size]
    texts = corpus.texts
    vocab = Vocabulary(min_df=study.min_df, min_token_len=study.min_token_len).fit([texts[i] for i in tr])
    keep = np.array([any(t in vocab for t in vocab.tokenize(texts[i])) for i in tr])
    tr = tr[keep]
    mean, std = float(corpus.y[tr].mean()), float(corpus.y[tr].std())
    std = std if std > 0 else 1.0

    def part(idx):
        return [texts[i] for i in idx], (corpus.y[idx] - mean) / std

    (trt, ytr), (dvt, ydv), (tet, yte) = part(tr), part(dv), part(te)
    return SplitData(trt, ytr, dvt, ydv, tet, yte, vocab, int((~keep).sum()), mean, std)


@functools.lru_cache(maxsize=4)
def _cached_corpus(dataset: str) -> RegressionCorpus:
    return load_corpus(dataset, "regression")


# ------------------------------------------------------------------ cells


def make_cells(study: RegressionStudy) -> list[dict]:
    cells = []
    for method in study.methods:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
        for split in range(study.splits):
            if method == "gplvsm":
                grid = [{"q": q, "rho": r} for q in study.latent_dims for r in study.rhos]
            elif method in ("gplvsm-vb", "gplvsm-sparse"):  # the sparse model shares the (smaller) VB grid
                grid = [{"q": q, "rho": r} for q in study.vb_latent_dims for r in study.vb_rhos]
            elif method in ("slda", "lda-regression"):
                grid = [{"K": k} for k in study.topics]
            else:
                grid = [{}]
            cells += [{"method": method, "split": split, "params": params} for params in grid]
    return cells


def _rmse(pred, y) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred) - y) ** 2)))


def _estimator(study: RegressionStudy, cell: dict, data: SplitData):
    from ..baselines import GPRBFRegressor
    from ..baselines.linear import DevTunedLinearRegression
    from ..models.regressor import GPLVSMRegressor

    method, params = cell["method"], cell["params"]
    seed = 1000 * study.seed + cell["split"]
    if method == "gplvsm":
        return GPLVSMRegressor(
            latent_dim=params["q"],
            rho=params["rho"],
            vocabulary=data.vocabulary,
            max_iter=study.max_iter,
            n_iter_no_change=20,
            random_state=seed,
        )
    if method == "gplvsm-vb":
        return GPLVSMRegressor(
            latent_dim=params["q"],
            rho=params["rho"],
            vocabulary=data.vocabulary,
            variational=True,
            optimizer="adam",
            lr=0.05,
            max_iter=study.vb_max_iter,
            word_embeddings=study.embeddings,
            length_kernel=True,
            predict_samples=16,
            n_iter_no_change=100,
            random_state=seed,
        )
    if method == "gplvsm-sparse":
        from ..models.sparse import SparseGPLVSMRegressor

        return SparseGPLVSMRegressor(
            latent_dim=params["q"],
            rho=params["rho"],
            vocabulary=data.vocabulary,
            num_inducing=study.sparse_inducing,
            max_epochs=study.sparse_epochs,
            random_state=seed,
        )
    if method == "gp-rbf":
        return GPRBFRegressor(vocabulary=data.vocabulary, random_state=seed)
    if method == "slda":
        from ..baselines.slda import SLDARegressor

        return SLDARegressor(params["K"], inference=study.slda_inference, vocabulary=data.vocabulary, random_state=seed)
    if method == "lda-regression":
        from ..baselines.slda import LDARegression

        return LDARegression(params["K"], vocabulary=data.vocabulary, random_state=seed)
    return DevTunedLinearRegression(kind=method, vocabulary=data.vocabulary)


def run_cell(study: RegressionStudy, cell: dict) -> dict:
    """Fit one method on one split with one hyper-parameter setting; dev and test RMSE."""
    data = prepare_split(study, cell["split"])
    est = _estimator(study, cell, data)
    start = time.perf_counter()
    with recorded_warnings() as warned:  # unseen words, convergence, ...: counted in the record
        if cell["method"] in ("gplvsm", "gplvsm-vb"):
            est.fit(data.train_texts, data.y_train, X_val=data.dev_texts, y_val=data.y_dev)
        elif cell["method"] in ("ridge", "lasso", "elasticnet"):
            est.fit(data.train_texts, data.y_train, X_val=data.dev_texts, y_val=data.y_dev)
        else:
            est.fit(data.train_texts, data.y_train)
        seconds = time.perf_counter() - start
        dev_rmse = _rmse(est.predict(data.dev_texts), data.y_dev)
        test_rmse = _rmse(est.predict(data.test_texts), data.y_test)
    record: dict[str, Any] = {
        "dev_rmse": dev_rmse,
        "test_rmse": test_rmse,
        "fit_seconds": seconds,
        "n_train": len(data.train_texts),
        "n_dev": len(data.dev_texts),
        "n_test": len(data.test_texts),
        "vocabulary_size": len(data.vocabulary),
        "dropped_empty_train": data.dropped_empty_train,
        "warnings": warned,
    }
    if hasattr(est, "n_iter_"):
        record.update(n_iter=est.n_iter_, converged=bool(est.converged_))
    if cell["method"] in ("ridge", "lasso", "elasticnet"):
        record["chosen"] = {"alpha": est.alpha_, "l1_ratio": est.l1_ratio_}
        if cell["split"] == 0:
            record["coef"] = dict(zip(data.vocabulary.words, est.coef_.tolist()))
    if cell["method"].startswith("gplvsm") and cell["params"].get("q") == 2 and cell["split"] == 0:
        record["word_vectors"] = dict(zip(data.vocabulary.words, est.word_vectors_.round(5).tolist()))
        with warnings.catch_warnings():
            # training words below min_df are not in the vocabulary, by design (counted above)
            warnings.simplefilter("ignore", UnseenWordsWarning)
            counts = np.asarray(data.vocabulary.counts(data.train_texts).sum(axis=0)).ravel()
        record["word_counts"] = dict(zip(data.vocabulary.words, counts.astype(int).tolist()))
    if cell["method"] == "gp-rbf":
        record["chosen"] = {"gamma": est.gamma_}
    return record


# ------------------------------------------------------------------ aggregation


def select(cells: list[dict]) -> list[dict]:
    """One record per (method, split): the cell with the lowest dev RMSE (never test)."""
    best: dict[tuple, dict] = {}
    totals: dict[tuple, float] = {}
    for c in cells:
        key = (c["method"], c["split"])
        totals[key] = totals.get(key, 0.0) + c["fit_seconds"]
        if key not in best or c["dev_rmse"] < best[key]["dev_rmse"]:
            best[key] = c
    records = []
    for key, c in sorted(
        best.items(), key=lambda kv: (list(LABELS).index(kv[0][0]) if kv[0][0] in LABELS else 99, kv[0][1])
    ):
        records.append(
            {
                "method": c["method"],
                "split": c["split"],
                "rmse": c["test_rmse"],
                "dev_rmse": c["dev_rmse"],
                "hyperparameters": {
                    k: v for k, v in {**c.get("params", {}), **c.get("chosen", {})}.items() if v is not None
                },
                "fit_seconds": c["fit_seconds"],
                "grid_fit_seconds": totals[key],
                "n_train": c["n_train"],
                "n_dev": c["n_dev"],
                "n_test": c["n_test"],
                "dropped_empty_train": c["dropped_empty_train"],
                **({"n_iter": c["n_iter"], "converged": c["converged"]} if "n_iter" in c else {}),
            }
        )
    return records


def summary_table(records: list[dict], dataset: str, splits: int) -> str:
    methods = [m for m in LABELS if any(r["method"] == m for r in records)]
    rmse = {m: [r["rmse"] for r in records if r["method"] == m] for m in methods}
    best = min(rmse, key=lambda m: np.mean(rmse[m]))
    header = "| data set | " + " | ".join(LABELS[m] for m in methods) + " |"
    rule = "|---|" + "---|" * len(methods)
    cells = [mean_cell(rmse[m], splits, bold=m == best) for m in methods]
    return "\n".join([header, rule, f"| {dataset} | " + " | ".join(cells) + " |"]) + (
        f"\n\nTest RMSE (standardized targets), mean ± std over {splits} splits ({PARTIAL_NOTE}); best mean in bold. "
        "Hyper-parameters chosen on the dev split.\n"
    )


# ------------------------------------------------------------------ the whole study


def run_regression_study(study: RegressionStudy, out: str | Path, executor=None, progress: bool = True) -> dict:
    """Run (or resume) the study into ``out``: ``results.json`` (one record per method and
    split), ``grid.json`` (every cell), ``table.md`` and the figures. Returns a summary."""
    from .figures import rmse_vs_q, rmse_vs_rho, word_map
    from .study import execute_study, failure_note, write_json

    out = Path(out)
    check_sizes(study, len(_cached_corpus(study.dataset)))
    cells, failures = execute_study("regression", study, run_cell, make_cells(study), out, executor, progress)
    records = select(cells)
    write_json(out / "results.json", records)
    write_json(
        out / "grid.json",
        [{k: v for k, v in c.items() if k not in ("word_vectors", "word_counts", "coef")} for c in cells],
    )
    table = summary_table(records, study.dataset, study.splits) if records else "no finished cells\n"
    table += failure_note(failures)
    (out / "table.md").write_text(table)
    rmse_vs_q(cells, records, out / "rmse_vs_q.png")
    rmse_vs_rho(cells, records, out / "rmse_vs_rho.png")
    word_map(cells, out / "word_map.png")
    return {"records": records, "failures": failures, "table": table}
