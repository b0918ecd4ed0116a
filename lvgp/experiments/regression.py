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

from .._random import study_generator
from ..base.constraints import Integer
from ..base.fit_options import LBFGS, Adam, EarlyStopping, MiniBatch
from ..base.metrics import gaussian_nlpd, regression_calibration
from ..bow.vocabulary import Vocabulary
from ..datasets.loaders import RegressionCorpus, corpus_names, load_corpus
from ..warnings import UnseenWordsWarning
from .registry import GRID_FAMILY, default_methods, register_method, register_study
from .selection import CellGrid
from .study import (
    DEVICE_HELP,
    PARTIAL_NOTE,
    Study,
    check_encoder_methods,
    encoder_precision_option,
    mean_cell,
    option,
    recorded_warnings,
    unique_texts,
    write_json,
)

DATASETS = corpus_names("regression")


# ------------------------------------------------------------------ the methods (in table order)
def _gplvsm_grid(study) -> list[dict]:
    return [{"q": q, "rho": r} for q in study.latent_dims for r in study.rhos]


def _vb_grid(study) -> list[dict]:  # the sparse model shares the (smaller) VB grid
    return [{"q": q, "rho": r} for q in study.vb_latent_dims for r in study.vb_rhos]


def _topic_grid(study) -> list[dict]:
    return [{"K": k} for k in study.topics]


def _linear_record(est, cell: dict, data) -> dict:
    """Ridge, lasso and elastic net: the chosen penalty, and the coefficients of split 0 (the word map)."""
    record: dict = {"chosen": {"alpha": est.alpha_, "l1_ratio": est.l1_ratio_}}
    if cell["split"] == 0:
        record["coef"] = dict(zip(data.vocabulary.words, est.coef_.tolist()))
    return record


def _word_vectors_record(est, cell: dict, data) -> dict:
    """The GP-LVSM grid's q = 2 fits of split 0: the word vectors and counts the word map draws."""
    if cell["params"].get("q") != 2 or cell["split"] != 0:
        return {}
    with warnings.catch_warnings():
        # training words below min_df are not in the vocabulary, by design (counted in the record)
        warnings.simplefilter("ignore", UnseenWordsWarning)
        counts = np.asarray(data.vocabulary.counts(data.train_texts).sum(axis=0)).ravel()
    return {
        "word_vectors": dict(zip(data.vocabulary.words, est.word_vectors_.round(5).tolist())),
        "word_counts": dict(zip(data.vocabulary.words, counts.astype(int).tolist())),
    }


@register_method(
    "regression",
    "gplvsm",
    "GP-LVSM",
    selection=CellGrid(_gplvsm_grid),
    uses_dev=True,
    default=True,
    family=GRID_FAMILY,
    record=_word_vectors_record,
)
def _gplvsm(study, cell, data):
    from ..kernels.spec import LDKSpec
    from ..models.regressor import GPLVSMRegressor

    return GPLVSMRegressor(
        LDKSpec(latent_dim=cell["params"]["q"], rho=cell["params"]["rho"]),
        vocabulary=data.vocabulary,
        optimizer=LBFGS(max_iter=study.max_iter),
        early_stopping=EarlyStopping(n_iter_no_change=20),
        random_state=study.cell_seed(cell),
    )


@register_method(
    "regression",
    "gplvsm-vb",
    "GP-LVSM (VB+GloVe+len)",
    selection=CellGrid(_vb_grid),
    uses_dev=True,
    family=GRID_FAMILY,
    record=_word_vectors_record,
)
def _gplvsm_vb(study, cell, data):
    from ..kernels.spec import LDKSpec
    from ..models.regressor import GPLVSMRegressor

    return GPLVSMRegressor(
        LDKSpec(
            latent_dim=cell["params"]["q"],
            rho=cell["params"]["rho"],
            variational=True,
            word_embeddings=study.embeddings,
            length_kernel=True,
        ),
        vocabulary=data.vocabulary,
        optimizer=Adam(max_iter=study.vb_max_iter, lr=0.05, convergence_window=100),
        predict_samples=16,
        early_stopping=EarlyStopping(n_iter_no_change=100),
        random_state=study.cell_seed(cell),
    )


def _plus_grid(study) -> list[dict]:
    return [{"length_kernel": False}, {"length_kernel": True}]


@register_method(
    "regression",
    "gplvsm-plus",
    "GP-LVSM (LDK+BoW, GloVe)",
    selection=CellGrid(_plus_grid),
    description="GP regression on the LDK+BoW kernel: GloVe vectors fixed, idf weights, the cosine of each part "
    "added; lambda, the scales and the noise by the marginal likelihood; the length kernel chosen on dev",
)
def _gplvsm_plus(study, cell, data):
    from ..kernels.spec import LDKSpec
    from ..models.regressor import GPLVSMRegressor

    return GPLVSMRegressor(
        LDKSpec.plus(study.embeddings, length_kernel=cell["params"]["length_kernel"]),
        vocabulary=data.vocabulary,
        optimizer=LBFGS(max_iter=study.max_iter),
        random_state=study.cell_seed(cell),
    )


@register_method(
    "regression",
    "gplvsm-default",
    "GP-LVSM (lvgp's default)",
    default=True,
    description="GPLVSMRegressor() as constructed: the LDK that contains the bag of words over variational word "
    "vectors (LDKSpec.variational_bow()), Adam",
)
def _gplvsm_default(study, cell, data):
    from ..models.regressor import GPLVSMRegressor

    return GPLVSMRegressor(vocabulary=data.vocabulary, random_state=study.cell_seed(cell))


@register_method(
    "regression",
    "gp-rbf",
    "GP regression",
    default=True,
    record=lambda est, cell, data: {"chosen": {"gamma": est.gamma_}},
)
def _gp_rbf(study, cell, data):
    from ..baselines import GPRBFRegressor

    return GPRBFRegressor(vocabulary=data.vocabulary, random_state=study.cell_seed(cell))


def _linear(kind: str):
    def build(study, cell, data):
        from ..baselines.linear import DevTunedLinearRegression

        return DevTunedLinearRegression(kind=kind, vocabulary=data.vocabulary, random_state=study.cell_seed(cell))

    return build


for _kind, _label in (("ridge", "Ridge"), ("lasso", "Lasso"), ("elasticnet", "Elastic net")):
    register_method("regression", _kind, _label, uses_dev=True, default=True, record=_linear_record)(_linear(_kind))


#: the tf-idf ridge's grid of the vectorizer's min_df (one cell each, the dev-best kept): scikit-learn's default 1
#: and the study's vocabulary's usual 2
TFIDF_MIN_DFS = (1, 2)


@register_method(
    "regression",
    "tfidf-ridge",
    "Ridge (tf-idf)",
    selection=CellGrid(lambda study: [{"min_df": m} for m in TFIDF_MIN_DFS]),
    uses_dev=True,
    default=True,
    description="ridge on tf-idf vectors of the sentences as written (default_tfidf: sublinear counts, the stop "
    "words but the negations); the vectorizer's min_df (1 or 2) and alpha on dev: the practitioner's bag-of-words "
    "ridge beside the paper's ridge on raw counts",
    record=lambda est, cell, data: {"chosen": {"alpha": est.alpha_}},
)
def _tfidf_ridge(study, cell, data):
    from ..baselines.linear import TfidfRidge

    return TfidfRidge(min_df=cell["params"]["min_df"], random_state=study.cell_seed(cell))


def _encoder_ridge(tfidf: bool):
    def build(study, cell, data):
        from ..baselines.encoder import EncoderRidge

        return EncoderRidge(
            study.encoder, tfidf=tfidf, min_df=study.min_df, device=study.device, random_state=study.cell_seed(cell)
        )

    return build


register_method(
    "regression",
    "encoder-ridge",
    "Ridge (encoder)",
    uses_dev=True,
    raw_texts=True,
    description="ridge on the pretrained sentence encoder's vectors (--encoder); alpha on dev",
)(_encoder_ridge(tfidf=False))
register_method(
    "regression",
    "tfidf-encoder-ridge",
    "Ridge (tf-idf + encoder)",
    uses_dev=True,
    raw_texts=True,
    description="ridge on [tf-idf | encoder vectors] (default_tfidf of the training sentences: sublinear counts, "
    "the stop words but the negations, min_df); alpha on dev",
)(_encoder_ridge(tfidf=True))


@register_method(
    "regression",
    "encoder-gp",
    "GP regression (encoder)",
    raw_texts=True,
    description="exact GP with an RBF kernel on the encoder's vectors; hyper-parameters by the marginal likelihood",
)
def _encoder_gp(study, cell, data):
    from ..baselines.encoder import EncoderGPRegressor

    return EncoderGPRegressor(study.encoder, optimizer=LBFGS(max_iter=study.max_iter), device=study.device)


@register_method(
    "regression",
    "gplvsm-encoder",
    "GP-LVSM (LDK+BoW+encoder)",
    raw_texts=True,
    description="lvgp's default GP-LVSM (variational LDK+BoW) with the encoder's part beside it: mu times the "
    "cosine of the encoder's vectors, mu under a log-normal prior around the balanced start, fitted with the rest",
)
def _gplvsm_encoder(study, cell, data):
    from ..models.regressor import GPLVSMRegressor

    return GPLVSMRegressor(
        vocabulary=data.vocabulary,
        sentence_encoder=study.encoder,
        random_state=study.cell_seed(cell),
        device=study.device,
        part_selection=None if study.part_selection == "none" else study.part_selection,
    )


@register_method(
    "regression",
    "gplvsm-sparse",
    "GP-LVSM (sparse)",
    selection=CellGrid(_vb_grid),
    family=GRID_FAMILY,
    record=_word_vectors_record,
)
def _gplvsm_sparse(study, cell, data):
    from ..kernels.spec import LDKSpec
    from ..models.sparse import SparseGPLVSMRegressor

    return SparseGPLVSMRegressor(
        LDKSpec(latent_dim=cell["params"]["q"], rho=cell["params"]["rho"]),
        vocabulary=data.vocabulary,
        num_inducing=study.sparse_inducing,
        optimizer=MiniBatch(max_epochs=study.sparse_epochs),
        random_state=study.cell_seed(cell),
    )


@register_method("regression", "slda", "sLDA", selection=CellGrid(_topic_grid))
def _slda(study, cell, data):
    from ..models.slda import SLDARegressor

    return SLDARegressor(
        cell["params"]["K"],
        inference=study.slda_inference,
        vocabulary=data.vocabulary,
        random_state=study.cell_seed(cell),
    )


@register_method("regression", "lda-regression", "LDA+regression", selection=CellGrid(_topic_grid))
def _lda_regression(study, cell, data):
    from ..models.slda import LDARegression

    return LDARegression(cell["params"]["K"], vocabulary=data.vocabulary, random_state=study.cell_seed(cell))


@register_study
@dataclass(frozen=True)
class RegressionStudy(Study):
    """Everything a worker needs to rebuild any split (the data itself is loaded from the
    registry cache or the TSV path by each worker once)."""

    kind = "regression"
    help = "GP-LVSM vs baselines on review ratings (the GP-LVSM paper's Table 2 protocol)"
    description = (
        "Per split: disjoint train/dev/test, vocabulary from train, targets standardized with train statistics, "
        "hyper-parameters chosen on dev, test RMSE in standardized units. Resumable: cells already in --out are not "
        "recomputed."
    )

    dataset: str = option(
        help="amazon-snippets, amazon-reviews, movie-snippets, or PATH.tsv (a header with 'text' and 'target' columns)"
    )
    splits: int = option(5, "random train/dev/test splits")
    train_size: int = option(1000, "training documents per split")
    dev_size: int = option(1000, "development documents per split (hyper-parameters are chosen on them)")
    test_size: int | None = option(None, "test documents per split (default: all remaining documents)")
    seed: int = option(0, "seed of the splits and the methods", check=Integer(0))
    device: str = option("cpu", DEVICE_HELP)
    min_df: int = option(2, "vocabulary: minimum document frequency in train")
    min_token_len: int = option(3, "vocabulary: shortest token kept")
    max_iter: int = option(300, "L-BFGS iterations of gplvsm (early-stopped on dev)")
    vb_max_iter: int = option(400, "Adam iterations of gplvsm-vb (early-stopped on dev)")
    latent_dims: tuple[int, ...] = option((1, 2, 4, 6, 8, 10), "gplvsm grid over q")
    rhos: tuple[float, ...] = option((0.01, 0.1, 1.0, 10.0, 100.0), "gplvsm grid over rho")
    vb_latent_dims: tuple[int, ...] = option((2,), "grid over q of gplvsm-vb and gplvsm-sparse")
    part_selection: str = option(
        "loo",
        "gplvsm-encoder's composition: none (the sum of the word and encoder parts as built), loo (each "
        "sub-composition fitted; one replaces the sum where its leave-one-out log density of the training targets is "
        "higher by more than a standard error; the default, chosen on dev: benchmarks/part_selection_dev.py) or "
        "evidence (the highest evidence with BIC's Occam factor; lvgp.kernels.composition)",
        choices=("none", "loo", "evidence"),
        before="none",
    )
    sparse_inducing: int = option(64, "inducing documents of gplvsm-sparse")
    sparse_epochs: int | None = option(None, "cap on the SVI epochs of gplvsm-sparse (default: its step budget alone)")
    vb_rhos: tuple[float, ...] = option((0.1, 0.3, 1.0), "grid over rho of gplvsm-vb and gplvsm-sparse")
    embeddings: str = option("glove-6b-50d", "pretrained word vectors of gplvsm-vb")
    encoder: str = option(
        "all-MiniLM-L6-v2", "pretrained sentence encoder of the encoder methods (lvgp.encoders.ENCODERS)"
    )
    encoder_precision: str = encoder_precision_option()
    topics: tuple[int, ...] = option((5, 10, 20, 30), "grid over the number of topics of slda and lda-regression")
    slda_inference: str = option("em", "sLDA inference", choices=("em", "svi"))
    methods: tuple[str, ...] = option(default_methods("regression"))

    @property
    def n_splits(self) -> int:
        return self.splits

    def validate(self) -> None:
        super().validate()
        check_encoder_methods(self)

    def check_data(self) -> None:
        check_sizes(self, len(_cached_corpus(self.dataset)))

    def run_cell(self, cell: dict) -> dict:
        return run_cell(self, cell)

    def shared_texts(self, cells: list[dict]) -> list[str]:
        """The documents the cells whose methods read texts through the encoder encode: every such
        split's training, dev and test documents (each split's methods and settings read the same)."""
        splits = sorted({c["split"] for c in cells if self.method(c["method"]).raw_texts})
        data = (prepare_split(self, split) for split in splits)
        return unique_texts(part for d in data for part in (d.train_texts, d.dev_texts, d.test_texts))

    def summarize(self, cells: list[dict]) -> list[dict]:
        return select(cells, self)

    def table(self, records: list[dict]) -> str:
        return summary_table(records, self)

    def write_outputs(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        write_json(out / "results.json", records)
        write_json(
            out / "grid.json",
            [{k: v for k, v in c.items() if k not in ("word_vectors", "word_counts", "coef")} for c in cells],
        )

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        from .figures import calibration_curve, rmse_vs_q, rmse_vs_rho, word_map

        rmse_vs_q(cells, records, out / "rmse_vs_q.png", self)
        rmse_vs_rho(cells, records, out / "rmse_vs_rho.png", self)
        word_map(cells, out / "word_map.png", self)
        calibration_curve(records, out / "calibration.png", self)


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
    """A ``ValueError`` when the corpus of ``n`` documents cannot hold the study's train, dev and test sizes."""
    need = study.train_size + study.dev_size + (study.test_size or 1)
    if study.train_size < 2 or study.dev_size < 1:
        raise ValueError(f"--train-size must be >= 2 and --dev-size >= 1; got {study.train_size}, {study.dev_size}")
    if need > n:
        raise ValueError(
            f"the split is larger than the data: --train-size {study.train_size} + --dev-size {study.dev_size} + "
            f"{f'--test-size {study.test_size}' if study.test_size else 'at least 1 test document'} > the {n} "
            f"documents of {study.dataset}: pass smaller sizes (their sum at most {n})"
        )


@functools.lru_cache(maxsize=64)
def prepare_split(study: RegressionStudy, split: int) -> SplitData:
    """The documents, standardized targets and training vocabulary of one split (cached per process)."""
    corpus = _cached_corpus(study.dataset)
    n = len(corpus)
    check_sizes(study, n)
    # splits are a function of (seed, split) only, whatever else the study holds
    perm = study_generator(study.seed, "regression split", split).permutation(n)
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


def _rmse(pred, y) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred) - y) ** 2)))


def _predictive(est, data: SplitData):
    """Predictive means and standard deviations on dev and test, and where the deviations come from:
    the model's predictive distribution (``"model"``: the GPs, sLDA's response variance), or for
    point predictors (ridge and friends) one homoscedastic deviation, the root mean squared residual
    on dev (``"dev residuals"``): the same kind of interval for every method, chosen on dev data."""
    try:
        dev_mean, dev_std = est.predict(data.dev_texts, return_std=True)
        test_mean, test_std = est.predict(data.test_texts, return_std=True)
        return (dev_mean, dev_std), (test_mean, test_std), "model"
    except TypeError:  # no return_std
        dev_mean, test_mean = est.predict(data.dev_texts), est.predict(data.test_texts)
        sigma = max(_rmse(dev_mean, data.y_dev), 1e-12)
        return (
            (dev_mean, np.full(len(dev_mean), sigma)),
            (test_mean, np.full(len(test_mean), sigma)),
            "dev residuals",
        )


def run_cell(study: RegressionStudy, cell: dict) -> dict:
    """Fit one method on one split with one hyper-parameter setting; dev and test RMSE."""
    data = prepare_split(study, cell["split"])
    method = study.method(cell["method"])
    est = study.build(cell, data)
    start = time.perf_counter()
    with recorded_warnings() as warned:  # unseen words, convergence, ...: counted in the record
        if method.uses_dev:
            est.fit(data.train_texts, data.y_train, X_val=data.dev_texts, y_val=data.y_dev)
        else:
            est.fit(data.train_texts, data.y_train)
        seconds = time.perf_counter() - start
        encode_seconds = getattr(est, "encode_seconds_", None)  # the fit's encoding, before predicting
        (dev_mean, dev_std), (test_mean, test_std), source = _predictive(est, data)
    record: dict[str, Any] = {
        "dev_rmse": _rmse(dev_mean, data.y_dev),
        "test_rmse": _rmse(test_mean, data.y_test),
        "uncertainty": source,
        "dev_nlpd": gaussian_nlpd(data.y_dev, dev_mean, dev_std),
        **{f"test_{k}": v for k, v in regression_calibration(data.y_test, test_mean, test_std).items()},
        "fit_seconds": seconds,
        **({} if encode_seconds is None else {"encode_seconds": encode_seconds}),
        "n_train": len(data.train_texts),
        "n_dev": len(data.dev_texts),
        "n_test": len(data.test_texts),
        "vocabulary_size": len(data.vocabulary),
        "dropped_empty_train": data.dropped_empty_train,
        "warnings": warned,
    }
    if hasattr(est, "n_iter_"):
        record.update(n_iter=est.n_iter_, converged=bool(est.converged_))
    if hasattr(est, "part_scores_"):  # part_selection: the composition kept, and each one's score
        from ..models.part_selection import plain_part_scores

        record.update(selected_parts=list(est.selected_parts_), part_scores=plain_part_scores(est.part_scores_))
    if method.record is not None:
        record.update(method.record(est, cell, data))
    return record


# ------------------------------------------------------------------ aggregation


#: the test calibration fields of a cell a record keeps (without their ``test_`` prefix)
_CALIBRATION_FIELDS: tuple[str, ...] = ("test_nlpd", "test_coverage_50", "test_coverage_90", "test_coverage_95")
_CALIBRATION_FIELDS += ("test_mean_std", "test_calibration")


def select(cells: list[dict], study: RegressionStudy) -> list[dict]:
    """One record per (method, split): the cell with the lowest dev RMSE (never test)."""
    from .selection import best_on_dev

    best = best_on_dev(cells, "dev_rmse", higher_is_better=False)
    records = []
    for _key, (c, grid_seconds) in sorted(best.items(), key=lambda kv: (study.method_order(kv[0][0]), kv[0][1])):
        records.append(
            {
                "method": c["method"],
                "split": c["split"],
                "rmse": c["test_rmse"],
                "dev_rmse": c["dev_rmse"],
                **{k[5:]: c[k] for k in _CALIBRATION_FIELDS if k in c},
                **({"dev_nlpd": c["dev_nlpd"], "uncertainty": c["uncertainty"]} if "dev_nlpd" in c else {}),
                "hyperparameters": {
                    k: v for k, v in {**c.get("params", {}), **c.get("chosen", {})}.items() if v is not None
                },
                "fit_seconds": c["fit_seconds"],
                "grid_fit_seconds": grid_seconds,
                "n_train": c["n_train"],
                "n_dev": c["n_dev"],
                "n_test": c["n_test"],
                "dropped_empty_train": c["dropped_empty_train"],
                **({"n_iter": c["n_iter"], "converged": c["converged"]} if "n_iter" in c else {}),
            }
        )
    return records


def summary_table(records: list[dict], study: RegressionStudy) -> str:
    """``table.md``: test RMSE per method at its dev-chosen setting, mean and standard deviation over the splits."""
    dataset, splits = study.dataset, study.splits
    methods = sorted({r["method"] for r in records}, key=study.method_order)
    rmse = {m: [r["rmse"] for r in records if r["method"] == m] for m in methods}
    best = min(rmse, key=lambda m: np.mean(rmse[m]))
    header = "| data set | " + " | ".join(study.label(m) for m in methods) + " |"
    rule = "|---|" + "---|" * len(methods)
    cells = [mean_cell(rmse[m], splits, bold=m == best) for m in methods]
    text = "\n".join([header, rule, f"| {dataset} | " + " | ".join(cells) + " |"]) + (
        f"\n\nTest RMSE (standardized targets), mean ± std over {splits} splits ({PARTIAL_NOTE}); best mean in bold. "
        "Hyper-parameters chosen on the dev split.\n"
    )
    return text + calibration_table(records, study, methods)


def calibration_table(records: list[dict], study: RegressionStudy, methods: list[str]) -> str:
    """The predictive distributions: test NLPD, the coverage of the central 50/90/95% intervals and
    the mean predictive standard deviation, per method (mean over the splits); empty for records
    written before lvgp 0.2 (without them)."""
    have = [m for m in methods if all("nlpd" in r for r in records if r["method"] == m)]
    if not have:
        return ""
    rows = ["| method | NLPD | 50% | 90% | 95% | mean std | intervals from |", "|---|---|---|---|---|---|---|"]
    nlpd = {m: np.mean([r["nlpd"] for r in records if r["method"] == m]) for m in have}
    best = min(nlpd, key=lambda m: nlpd[m])
    for m in have:
        mine = [r for r in records if r["method"] == m]

        def avg(key: str, mine: list[dict] = mine) -> float:
            return float(np.mean([r[key] for r in mine]))

        shown = f"**{nlpd[m]:.3f}**" if m == best else f"{nlpd[m]:.3f}"
        rows.append(
            f"| {study.label(m)} | {shown} | {avg('coverage_50'):.3f} | {avg('coverage_90'):.3f} | "
            f"{avg('coverage_95'):.3f} | {avg('mean_std'):.3f} | {mine[0].get('uncertainty', 'model')} |"
        )
    return (
        "\n" + "\n".join(rows) + "\n\nPredictive distributions on test, mean over the splits: NLPD (mean negative log "
        "predictive density of the standardized targets, Gaussian; lower is better), the share of targets inside the "
        "central 50/90/95% intervals, and the mean predictive standard deviation. A point predictor's interval is "
        "the root mean squared residual on dev, the same for every document ('dev residuals').\n"
    )
