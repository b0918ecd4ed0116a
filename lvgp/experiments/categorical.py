"""The categorical imputation study (Gal, Chen & Ghahramani 2015, sections 5.1-5.2).

Data sets: ``breast-cancer`` (the original Wisconsin table, from the package registry, see
:func:`lvgp.datasets.load_breast_cancer`: 683 complete rows, nine attributes valued 1..10 and
the class; the 16 incomplete rows are dropped), ``xor`` (the paper's relation embedding: 25
copies of each XOR triplet for training, the four triplets with their third value hidden for
testing), or a CSV of categorical columns (an empty cell is missing; rows with missing cells
stay in training with those cells masked out of the likelihood).

Per split (breast cancer, CSV): a random 75/25 train/test partition; in every test row one
observed value is hidden at random and predicted from the rest of the row. A row with fewer
than two observed values leaves nothing to predict from: such rows drawn for testing stay in
training instead, counted in every cell record (``sparse_rows_kept_in_training``) and warned
about. The categories
of each column are taken from the whole table (the domain), their frequencies from the
training rows only. Test perplexity = exp(-mean log p(hidden value)). XOR has a fixed
train/test set; its "splits" are repetitions with different seeds.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._random import study_generator
from ..base.constraints import Integer
from ..base.fit_options import Adam, RMSprop
from ..baselines.frequency import (
    BigramDirichletMultinomial,
    MultinomialModel,
    UniformModel,
    UnigramDirichletMultinomial,
)
from ..datasets.loaders import load_breast_cancer, read_categorical_csv
from ..models.clgp import CLGP, CategoricalTable, hide_one_value
from ..models.clgp.estimators import LATENT_SCALES
from ..warnings import warn
from .registry import default_methods, methods, register_method, register_study
from .study import DEVICE_HELP, PARTIAL_NOTE, Study, mean_cell, option, recorded_warnings

DATASETS = ("breast-cancer", "xor")


def _clgp(covariance: str):
    def build(study, cell, data):
        kind = RMSprop if study.optimizer == "rmsprop" else Adam
        return CLGP(
            latent_dim=study.latent_dim,
            num_inducing=study.inducing,
            covariance=covariance,
            elbo_samples=study.samples,
            optimizer=kind(max_iter=study.max_iter, lr=study.lr),
            impute_iter=study.impute_iter,
            latent_scale=study.latent_scale,
            random_state=study.cell_seed(cell),
        )

    return build


register_method("categorical", "clgp", "CLGP", default=True)(_clgp("rbf"))
register_method("categorical", "lgm", "LGM", default=True)(_clgp("linear"))
register_method("categorical", "uniform", "Uniform", default=True)(lambda study, cell, data: UniformModel())
register_method("categorical", "multinomial", "Multinomial", default=True)(lambda study, cell, data: MultinomialModel())
register_method("categorical", "unigram-dm", "Uni-Dir-Mult", default=True)(
    lambda study, cell, data: UnigramDirichletMultinomial(study.alpha)
)
register_method("categorical", "bigram-dm", "Bi-Dir-Mult", default=True)(
    lambda study, cell, data: BigramDirichletMultinomial(study.alpha)
)


@register_study
@dataclass(frozen=True)
class CategoricalStudy(Study):
    kind = "categorical"
    help = "CLGP vs LGM vs frequency models: imputation perplexity on categorical data (Gal et al. 2015)"
    dataset: str = option(help="breast-cancer, xor, or PATH.csv (categorical columns; empty = missing)")
    drop_columns: tuple[str, ...] = option((), "columns to ignore (e.g. Id)", allow_empty=True)
    splits: int = option(3, "random train/test splits (repetitions for xor)")
    methods: tuple[str, ...] = option(default_methods("categorical"))
    latent_dim: int = option(2, "Q of CLGP and LGM")
    inducing: int = option(50, "inducing points M of CLGP")
    samples: int = option(5, "Monte Carlo samples per ELBO evaluation")
    max_iter: int = option(1000, "optimizer iterations of CLGP and LGM")
    impute_iter: int = option(
        300, "iterations fitting q(x) of the test rows (and of the dev rows, latent_scale=auto) of CLGP and LGM"
    )
    lr: float = option(0.05, "learning rate of CLGP and LGM")
    optimizer: str = option("adam", "optimizer of CLGP and LGM", choices=("adam", "rmsprop"))
    latent_scale: str = option(
        "auto",
        "how CLGP and LGM fit q(x)'s standard deviations: paper (the paper code's slow steps), joint (the optimizer's), "
        "auto (chosen on a dev split of the training rows)",
        choices=LATENT_SCALES,
    )
    alpha: float = option(1.0, "Dirichlet concentration of the DM baselines")
    seed: int = option(0, "seed of the splits and the methods", check=Integer(0))
    device: str = option("cpu", DEVICE_HELP)
    color_by: str | None = option(None, "column colouring latent_space.png (default: the last)")

    @property
    def n_splits(self) -> int:
        return self.splits

    def check_data(self) -> None:
        prepare_split(self, 0)  # bad input fails here, before any cell runs

    def run_cell(self, cell: dict) -> dict:
        return run_cell(self, cell)

    def summarize(self, cells: list[dict]) -> list[dict]:
        records = [{k: v for k, v in c.items() if k not in ("latent_means", "colour_values", "params")} for c in cells]
        return sorted(records, key=lambda r: (self.method_order(r["method"]), r["split"]))

    def table(self, records: list[dict]) -> str:
        return table_markdown(records, self)

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        latent_space_figure([c for c in cells if "latent_means" in c], self, out / "latent_space.png")


@functools.lru_cache(maxsize=4)
def load_table(dataset: str, drop_columns: tuple[str, ...]) -> tuple[list[str], np.ndarray, int]:
    """Column names, string values (None = missing), and the number of dropped rows."""
    if dataset == "breast-cancer":
        columns, values = load_breast_cancer()
        unknown = [c for c in drop_columns if c not in columns]
        if unknown:
            raise ValueError(f"drop_columns: no column(s) {unknown} in breast-cancer (columns: {columns})")
        keep = [j for j, c in enumerate(columns) if c not in drop_columns]
        columns, values = [columns[j] for j in keep], values[:, keep]
        complete = np.array([all(v is not None for v in row) for row in values])
        return columns, values[complete], int((~complete).sum())
    if dataset == "xor":
        return (
            ["a", "b", "a_xor_b"],
            np.array([[str(a), str(b), str(a ^ b)] for a in (0, 1) for b in (0, 1)], dtype=object),
            0,
        )
    columns, values = read_categorical_csv(dataset, drop_columns=drop_columns)
    return columns, values, 0


@functools.lru_cache(maxsize=16)
def prepare_split(study: CategoricalStudy, split: int):
    """(train codes, test partial codes, hidden columns, hidden values, table, columns, row counts):
    the counts are ``dropped_incomplete_rows`` (breast cancer) and ``sparse_rows_kept_in_training``."""
    columns, values, dropped = load_table(study.dataset, study.drop_columns)
    table = CategoricalTable().fit(columns, values)
    codes = table.encode(values)
    rng = study_generator(study.seed, "categorical split", split)
    if study.dataset == "xor":
        train = np.repeat(codes, 25, axis=0)
        partial = codes.copy()
        partial[:, 2] = -1
        return train, partial, np.full(4, 2), codes[:, 2], table, columns, {"dropped_incomplete_rows": dropped}
    if len(codes) < 8:
        raise ValueError(f"{study.dataset}: {len(codes)} rows are too few for a 75/25 split")
    perm = rng.permutation(len(codes))
    n_train = int(round(0.75 * len(codes)))
    train_rows, test_rows = perm[:n_train], perm[n_train:]
    sparse = (codes[test_rows] >= 0).sum(1) < 2  # nothing left to predict a hidden value from
    if sparse.any():
        warn(
            f"{study.dataset}: {int(sparse.sum())} of the {len(test_rows)} rows drawn for testing have fewer than two "
            "observed values; they stay in training",
            RuntimeWarning,
            stacklevel=2,
        )
        train_rows, test_rows = np.concatenate([train_rows, test_rows[sparse]]), test_rows[~sparse]
    if not len(test_rows):
        raise ValueError(f"{study.dataset}: no row with at least two observed values to test on")
    partial, hidden_cols, hidden_vals = hide_one_value(codes[test_rows], rng)
    counts = {"dropped_incomplete_rows": dropped, "sparse_rows_kept_in_training": int(sparse.sum())}
    return codes[train_rows], partial, hidden_cols, hidden_vals, table, columns, counts


def run_cell(study: CategoricalStudy, cell: dict) -> dict:
    """Fit one method on one split; the imputation perplexity of the hidden test entries."""
    train, partial, cols, vals, table, columns, counts = prepare_split(study, cell["split"])
    model = study.build(cell)
    with recorded_warnings() as warned:
        start = time.perf_counter()
        model.fit(train, table.cardinalities)
        seconds = time.perf_counter() - start
        probs = model.predict_proba(partial)
    p = np.array([probs[d][i, v] for i, (d, v) in enumerate(zip(cols, vals))])
    with np.errstate(divide="ignore"):
        log_p = np.log(p)
    record = {
        "perplexity": float(np.exp(-np.mean(log_p))),
        "mean_log_p": float(np.mean(log_p)),
        # a hidden value given probability 0 (possible for the unsmoothed multinomial) makes the
        # perplexity infinite; results.json stores it as null (JSON has no infinity)
        "zero_probability_values": int((p == 0).sum()),
        "fit_seconds": seconds,
        "n_train": int(len(train)),
        "n_test": int(len(partial)),
        **counts,
        "warnings": warned,
    }
    if cell["method"] in ("clgp", "lgm"):
        record["elbo_per_entry"] = model.elbo_curve_[-1]
        # which rule fitted q(x)'s scales (latent_scale="auto" picks it on a dev split of the training rows)
        record["latent_scale"] = model.latent_scale_
        record["latent_scale_dev_perplexity"] = model.latent_scale_dev_perplexity_
        if cell["split"] == 0:
            colour = columns.index(study.color_by) if study.color_by in columns else len(columns) - 1
            record["latent_means"] = model.latent_means_.round(4).tolist()
            record["colour_column"] = columns[colour]
            record["colour_values"] = [table.categories[colour][c] if c >= 0 else None for c in train[:, colour]]
    return record


def table_markdown(records: list[dict], study: CategoricalStudy) -> str:
    """``table.md``: test imputation perplexity per method and split, and its mean and standard
    deviation over the splits (an infinite perplexity shown as such)."""
    methods = sorted({r["method"] for r in records}, key=study.method_order)
    lines = ["| split | " + " | ".join(study.label(m) for m in methods) + " |", "|---|" + "---|" * len(methods)]

    def value(r):  # null in JSON = an infinite perplexity
        return math.inf if r["perplexity"] is None else r["perplexity"]

    def fmt(v, bold):
        text = "∞" if math.isinf(v) else f"{v:.3f}"
        return f"**{text}**" if bold else text

    per = {m: {r["split"]: value(r) for r in records if r["method"] == m} for m in methods}
    for s in range(study.splits):
        row = [per[m].get(s) for m in methods]
        best = min((v for v in row if v is not None), default=None)
        lines.append(f"| {s + 1} | " + " | ".join("–" if v is None else fmt(v, v == best) for v in row) + " |")
    means = {m: np.mean(list(per[m].values())) for m in methods}  # inf when any split's is
    best = min(means.values())
    lines.append(
        "| mean ± std | "
        + " | ".join(
            fmt(means[m], means[m] == best)
            if math.isinf(means[m])
            else mean_cell(list(per[m].values()), study.splits, bold=means[m] == best)
            for m in methods
        )
        + " |"
    )
    return (
        "\n".join(lines)
        + paired_note(per)
        + scale_note(records, study)
        + (
            f"\n\n{study.dataset}: test-set perplexity of the hidden values (lower is better; 1 = always right), "
            f"{study.splits} {'repetitions' if study.dataset == 'xor' else 'random 75/25 splits'}; "
            f"latent dimension {study.latent_dim}, {study.inducing} inducing points, {study.samples} Monte Carlo samples. "
            "∞: some hidden value got probability 0 (the unsmoothed multinomial on a value unseen in training); "
            f"{PARTIAL_NOTE}, '–': not run.\n"
        )
    )


def scale_note(records: list[dict], study: CategoricalStudy) -> str:
    """Which rule fitted q(x)'s scales in each CLGP/LGM cell (``latent_scale="auto"`` chooses per
    split on a dev split of the training rows), split numbers from 1 as in the table."""
    parts = []
    for m in ("clgp", "lgm"):
        chosen: dict[str, list[int]] = {}
        for r in sorted((r for r in records if r["method"] == m and "latent_scale" in r), key=lambda r: r["split"]):
            chosen.setdefault(r["latent_scale"], []).append(r["split"] + 1)
        if chosen:
            parts.append(
                f"{study.label(m)} "
                + ", ".join(f"{rule} on split(s) {', '.join(map(str, s))}" for rule, s in chosen.items())
            )
    return (
        f"\n\nRule for q(x)'s scales (CLGP latent_scale; 'auto' picks it on dev): {'; '.join(parts)}." if parts else ""
    )


def paired_note(per: dict[str, dict[int, float]], a: str = "clgp", b: str = "lgm") -> str:
    """CLGP against LGM on the same splits: the per-split differences, their mean, standard
    deviation and standard error, and how many splits each wins (a paired comparison: the
    splits' own difficulty cancels)."""
    common = sorted(set(per.get(a, {})) & set(per.get(b, {})))
    diffs = np.array([per[a][s] - per[b][s] for s in common])
    if len(diffs) < 2 or not np.isfinite(diffs).all():
        return ""
    se = diffs.std(ddof=1) / math.sqrt(len(diffs))
    listed = ", ".join(f"{d:+.3f}" for d in diffs)
    la, lb = methods("categorical")[a].label, methods("categorical")[b].label
    return (
        f"\n\nPaired, {la} − {lb} per split: {listed}; mean {diffs.mean():+.3f}, "
        f"std {diffs.std(ddof=1):.3f}, standard error {se:.3f}; {la} lower on {int((diffs < 0).sum())} "
        f"of {len(diffs)} splits."
    )


def latent_space_figure(latent: list[dict], study: CategoricalStudy, path: Path) -> None:
    """The means of q(x) of the first split's CLGP/LGM fits, coloured by a column."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(1, len(latent)), figsize=(5 * max(1, len(latent)), 4.5), squeeze=False)
    for ax, c in zip(axes[0], sorted(latent, key=lambda c: study.method_order(c["method"]))):
        xy = np.asarray(c["latent_means"])
        labels = np.array([str(v) for v in c["colour_values"]])
        for i, value in enumerate(sorted(set(labels), key=lambda v: (len(v), v))):
            sel = labels == value
            ax.scatter(xy[sel, 0], xy[sel, -1], s=8, color=f"C{i % 10}", label=value)
        ax.set_title(
            f"{study.label(c['method'])}: means of q(x), split 1, coloured by {c['colour_column']}", fontsize=8
        )
        ax.legend(fontsize=6, markerscale=2)
    if not latent:
        axes[0][0].text(0.5, 0.5, "no CLGP/LGM fit in this study", ha="center")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
