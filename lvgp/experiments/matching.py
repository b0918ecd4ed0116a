"""The cross-domain matching study (thesis ch. 6, section 6.4 protocol).

Data: aligned pairs from a JSON-lines file (``--source``/``--target`` name the text
fields). Per set: disjoint random train / dev / test pairs; every method is fitted on the
training pairs with each hyper-parameter setting of its grid; the setting with the best dev
score (mean Precision@R over R = 1..50, i.e. the area under the dev precision curve) is
reported on test: for every test source, all test targets are ranked and Precision@R of
eq. 6.15 is the fraction of sources whose true target is among the first R.

Near duplicates. Packages of one family share most of their description (e.g. the dozens of
LibreOffice or Mono packages), so two pairs can be almost the same text with different
answers, and a test pair's sibling in training would leak its answer. Pairs are grouped into
families by the first 12 words of their normalized source body (the text after the first
line, which is the short description; the whole text when there is one line only), and each
set draws **one pair per family**, so no family is split across train/dev/test and no two
test queries are near copies. On the Debian en/de data this leaves 8,471 families of 13,150
pairs. The grouping is on by default (``dedupe_families``).
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..bow.vocabulary import Vocabulary
from .study import PARTIAL_NOTE, mean_cell, option, recorded_warnings

METHODS = ("ldk", "ldk-cca", "ldk-tied-pca", "ldk-tied", "cca", "kcca")
LABELS = {
    "ldk": "LDK matching",
    "ldk-cca": "LDK (CCA start)",
    "ldk-tied-pca": "LDK (tied tokens)",
    "ldk-tied": "LDK (tied tokens, CCA start)",
    "cca": "CCA",
    "kcca": "Kernel CCA",
}
#: what each LDK method switches on beyond the thesis's model (PCA start, separate vocabularies)
LDK_OPTIONS: dict[str, dict[str, Any]] = {
    "ldk": {},
    "ldk-cca": {"init": "cca"},
    "ldk-tied-pca": {"tie_identical_tokens": True},
    "ldk-tied": {"tie_identical_tokens": True, "init": "cca"},
}
MAX_R = 50


@dataclass(frozen=True)
class MatchingStudy:
    pairs: str = option(
        help="wagtail-de (English/German messages of wagtail's gettext catalogs, from the package registry) or a "
        "JSON-lines file (optionally .gz) of aligned pairs, e.g. Debian's package descriptions"
    )
    source: str = option("en", "key of the source text in each line of a pairs file")
    target: str = option("de", "key of the target text in each line of a pairs file")
    train: int = option(1000, "training pairs per set")
    dev: int = option(100, "development pairs per set (the setting with the best dev score is reported)")
    test: int = option(100, "test pairs per set")
    sets: int = option(10, "random train/dev/test sets")
    methods: tuple[str, ...] = option(("ldk", "ldk-tied", "cca", "kcca"))
    latent_dims: tuple[int, ...] = option((8, 10, 12), "LDK grid over q")
    rhos: tuple[float, ...] = option((0.0, 0.01, 0.1), "LDK grid over rho")
    gammas: tuple[float, ...] = option((0.1, 1.0, 10.0, 100.0, 1000.0), "LDK grid over the RBF bandwidth gamma")
    cca_components: tuple[int, ...] = option((8, 16, 32, 64), "CCA/KCCA grid over the latent dimension")
    cca_regs: tuple[float, ...] = option((0.01, 0.1, 1.0), "CCA/KCCA grid over the relative regularization")
    min_df: int = option(2, "vocabulary of each side: minimum document frequency in train")
    max_iter: int = option(300, "L-BFGS iterations of LDK")
    word_weighting: str = option(
        "uniform",
        "LDK documents as the uniform (thesis) or idf-weighted measure of their words",
        choices=("uniform", "idf"),
    )
    early_stopping: bool = option(
        True, "LDK methods stop when their dev Precision@1..50 has not improved for 10 iterations (the thesis: off)"
    )
    dedupe_families: bool = option(True, "draw one pair per description family (near duplicates never straddle splits)")
    seed: int = option(0, "seed of the sets and the methods")


def family_key(text: str, words: int = 12) -> str:
    body = text.split("\n", 1)[1] if "\n" in text.strip() else text
    return " ".join(re.sub(r"\W+", " ", body.lower()).split()[:words])


BUILTIN_PAIRS = ("wagtail-de",)


@functools.lru_cache(maxsize=4)
def load_pairs(path: str, source: str, target: str):
    from ..datasets.loaders import load_gettext_pairs, read_aligned_pairs

    if path in BUILTIN_PAIRS:
        if (source, target) != ("en", "de"):
            raise ValueError(f"{path} pairs English (source 'en') with German (target 'de')")
        return load_gettext_pairs(path)
    return read_aligned_pairs(path, source, target)


@functools.lru_cache(maxsize=32)
def prepare(study: MatchingStudy, set_index: int):
    ids, src, tgt = load_pairs(study.pairs, study.source, study.target)
    rng = np.random.default_rng([study.seed, set_index, 2016])
    # a pair one of whose texts has no token at all (e.g. "will do nothing": stop words only)
    # is no bag of words on that side: it is not usable (the models raise on empty documents)
    tokenizer = Vocabulary()
    usable = [i for i in range(len(src)) if tokenizer.tokenize(src[i]) and tokenizer.tokenize(tgt[i])]
    if study.dedupe_families:
        families: dict[str, list[int]] = {}
        for i in usable:
            families.setdefault(family_key(src[i]), []).append(i)
        pool = np.array([members[rng.integers(len(members))] for members in families.values()])
    else:
        pool = np.array(usable)
    need = study.train + study.dev + study.test
    if min(study.train, study.dev, study.test) < 2:
        raise ValueError("--train, --dev and --test must each be at least 2 pairs")
    if need > len(pool):
        raise ValueError(
            f"{study.pairs}: {len(pool)} usable pairs ({len(src)} in the file, {len(src) - len(usable)} with an "
            "empty side"
            f"{', one per family' if study.dedupe_families else ''}) but train + dev + test = {need}"
        )
    chosen = rng.permutation(pool)[:need]
    parts = np.split(chosen, [study.train, study.train + study.dev])

    def texts(idx):
        return [src[i] for i in idx], [tgt[i] for i in idx]

    return texts(parts[0]), texts(parts[1]), texts(parts[2]), [ids[i] for i in parts[2]]


def make_cells(study: MatchingStudy) -> list[dict]:
    cells = []
    for m in study.methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; known: {', '.join(METHODS)}")
        if m in LDK_OPTIONS:
            # with the RBF bandwidth fixed, LDK matching depends on (rho, gamma) only through rho / gamma
            # (LDKMatcher fits at gamma 1 and rho / gamma): one cell per distinct ratio
            ratios = sorted({float(f"{r / g:.12g}") for r in study.rhos for g in study.gammas}, reverse=True)
            grid = [{"q": q, "rho": r, "gamma": 1.0} for q in study.latent_dims for r in ratios]
        else:
            grid = [{"components": c, "reg": r} for c in study.cca_components for r in study.cca_regs]
        cells += [{"method": m, "split": s, "params": p} for s in range(study.sets) for p in grid]
    return cells


def _model(study: MatchingStudy, method: str, params: dict, seed: int):
    if method in LDK_OPTIONS:
        from ..models.matching import LDKMatcher

        return LDKMatcher(
            latent_dim=params["q"],
            rho=params["rho"],
            gamma=params["gamma"],
            min_df=study.min_df,
            max_iter=study.max_iter,
            random_state=seed,
            word_weighting=study.word_weighting,
            **LDK_OPTIONS[method],
        )
    from ..baselines.cca import KernelCCAMatcher

    return KernelCCAMatcher(
        kernel="linear" if method == "cca" else "rbf",
        n_components=params["components"],
        reg=params["reg"],
        min_df=study.min_df,
    )


def run_cell(study: MatchingStudy, cell: dict) -> dict:
    from ..models.matching import precision_at

    train, dev, test, test_ids = prepare(study, cell["split"])
    model = _model(study, cell["method"], cell["params"], 1000 * study.seed + cell["split"])
    stop_on_dev = cell["method"] in LDK_OPTIONS and study.early_stopping
    with recorded_warnings() as warned:
        start = time.perf_counter()
        model.fit(*train, *(dev if stop_on_dev else ()))
        seconds = time.perf_counter() - start
        dev_ranks = model.true_target_ranks(*dev)
        test_ranks = model.true_target_ranks(*test)
    dev_p = precision_at(dev_ranks, MAX_R)
    record = {
        "dev_score": float(np.mean(list(dev_p.values()))),
        "precision_at": precision_at(test_ranks, MAX_R),
        "test_ranks": test_ranks.tolist(),
        "fit_seconds": seconds,
        "n_train": len(train[0]),
        "warnings": warned,
    }
    if cell["method"] in LDK_OPTIONS:
        record.update(n_iter=model.n_iter_, best_iter=model.best_iter_, shared_tokens=model.shared_tokens_)
    if cell["split"] == 0:  # a few retrievals of set 1, shown for the setting dev selects
        with recorded_warnings():  # the same documents' warnings are in the record already
            d = model.distances(test[0][:5], test[1])
        record["examples"] = [
            {"source": test[0][i], "true_target": test[1][i], "retrieved": [test[1][j] for j in np.argsort(d[i])[:3]]}
            for i in range(len(d))
        ]
    return record


def select(cells: list[dict]) -> list[dict]:
    """Per (method, set) the cell with the best dev score (never test)."""
    best: dict = {}
    for c in cells:
        key = (c["method"], c["split"])
        if key not in best or c["dev_score"] > best[key]["dev_score"]:
            best[key] = c
    out = []
    for (method, split), c in sorted(best.items(), key=lambda kv: (METHODS.index(kv[0][0]), kv[0][1])):
        out.append(
            {
                "method": method,
                "set": split,
                "hyperparameters": c["params"],
                "dev_score": c["dev_score"],
                "precision_at": {int(k): v for k, v in c["precision_at"].items()},
                "fit_seconds": c["fit_seconds"],
                **({"examples": c["examples"]} if "examples" in c else {}),
            }
        )
    return out


def table_markdown(records: list[dict], study: MatchingStudy) -> str:
    methods = [m for m in METHODS if any(r["method"] == m for r in records)]
    rs = (1, 5, 10, 20, 50)
    lines = ["| R | " + " | ".join(LABELS[m] for m in methods) + " |", "|---|" + "---|" * len(methods)]
    for r in rs:
        stats = {m: [x["precision_at"][r] for x in records if x["method"] == m] for m in methods}
        best = max(np.mean(v) for v in stats.values())
        cells = [mean_cell(v, study.sets, bold=np.mean(v) == best) for v in stats.values()]
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + (
        f"\n\nPrecision@R on {study.test} test pairs (all test targets ranked for each test source), mean ± std over "
        f"{study.sets} sets of {study.train} training / {study.dev} dev pairs ({PARTIAL_NOTE}); hyper-parameters "
        f"chosen on dev; {'one pair per description family' if study.dedupe_families else 'no family grouping'}.\n"
    )


def run_matching_study(study: MatchingStudy, out: str | Path, executor=None, progress: bool = True) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .study import execute_study, failure_note, write_json

    out = Path(out)
    prepare(study, 0)  # bad input fails here, before any cell runs
    cells, failures = execute_study("matching", study, run_cell, make_cells(study), out, executor, progress)
    selected = select(cells)
    records = [{k: v for k, v in r.items() if k != "examples"} for r in selected]
    write_json(out / "results.json", records)
    write_json(out / "grid.json", [{k: v for k, v in c.items() if k not in ("examples", "test_ranks")} for c in cells])
    text = table_markdown(records, study) if records else "no finished cells\n"
    text += failure_note(failures)
    examples = [r for r in selected if "examples" in r and r["method"] == "ldk"]
    if examples:
        text += "\nExample retrievals (LDK, set 1, the dev-selected setting; first line of each text):\n\n"
        for e in examples[0]["examples"][:3]:
            first = [t.split("\n")[0][:70] for t in [e["source"], e["true_target"], *e["retrieved"]]]
            text += f"- source: {first[0]}\n  - true target: {first[1]}\n" + "".join(
                f"  - retrieved {k + 1}: {t}\n" for k, t in enumerate(first[2:])
            )
    (out / "table.md").write_text(text)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, m in enumerate(METHODS):
        rows = [r for r in records if r["method"] == m]
        if rows:
            curve = np.mean([[r["precision_at"][k] for k in range(1, MAX_R + 1)] for r in rows], axis=0)
            ax.plot(range(1, MAX_R + 1), curve, color=f"C{i}", label=LABELS[m])
    ax.set_xlabel("R")
    ax.set_ylabel("Precision@R")
    ax.set_title(Path(study.pairs).name)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "precision_vs_R.png", dpi=120)
    plt.close(fig)
    return {"records": records, "failures": failures, "table": text}
