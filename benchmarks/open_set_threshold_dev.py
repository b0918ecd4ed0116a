r"""An out-of-scope threshold without held-out texts: the GP's leave-one-out scores, on dev documents (issue 57).

A user who deploys ``score_samples`` needs a threshold: texts scored below it are flagged as out of scope. The
studies report FPR95, the share of out-of-scope texts accepted at the threshold that keeps 95% of the in-scope
test texts -- a threshold read off the very texts it is scored on. A user has in-scope texts held out from
training, or has not. Without them, the study GP's training texts' leave-one-out energies
(``LDKGPClassifier.novelty_reference().energy``, minus the log-sum-exp of each labelled text's latent means given
the other labelled texts: in-scope texts the model did not fit, at no refit) give a threshold: their 5% quantile.
The training texts' own (in-sample) scores give another, the optimistic one the docs warn about.

The open-set study's draws (unknown classes, N labelled texts a known class) on a corpus's training part alone,
as ``open_set_dev.py`` writes it (texts cut to their first ``--first-words`` words where asked), scored on dev
documents of the training part's unlabelled rest; the study's GP (``gpc-bow-encoder-rbf``, the energy). Each
threshold's row, draw by draw: the share of in-scope dev documents kept (the target: 0.95) and of out-of-scope
ones accepted (``fpr``); ``oracle``: the 5% quantile of the in-scope dev documents' own scores (the studies'
FPR95). Then the rows' means per corpus and size. ``benchmarks/README.md``, "A threshold without held-out texts",
reads it.

    python benchmarks/open_set_threshold_dev.py                       # r8, 20ng, r52, seed 72
    python benchmarks/open_set_threshold_dev.py --datasets 20ng,r52 --first-words 12
    python benchmarks/open_set_threshold_dev.py --quick               # a toy corpus, a tiny random encoder
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from open_set_dev import (
    dev_runs,
    dev_study,
    draw_arguments,
    draw_seeds,
    scratch_folder,
)  # (the sibling script: benchmarks/ is on the path)

GP = "gpc-bow-encoder-rbf"
#: the in-scope share a threshold should keep
RECALL = 0.95
ROWS = ("leave-one-out", "in-sample", "oracle")


def thresholds(gp, x_train, inside_scores: np.ndarray) -> dict[str, float]:
    """Each row's threshold on ``gp.score_samples``' scale (the energy: higher, more typical): the 5% quantile of the
    labelled texts' leave-one-out energies, of their own in-sample scores, and of the in-scope dev documents'."""
    quantile = 1.0 - RECALL
    loo = -np.asarray(gp.novelty_reference().energy)  # minus (minus the energy): score_samples' scale
    return {
        "leave-one-out": float(np.quantile(loo, quantile, method="lower")),
        "in-sample": float(np.quantile(gp.score_samples(x_train), quantile, method="lower")),
        "oracle": float(np.quantile(inside_scores, quantile, method="lower")),
    }


def draws(args) -> list[dict]:
    """One record per (corpus, seed, split, size, threshold)."""
    with scratch_folder(args.out, "open-set-threshold-") as root:
        runs = dev_runs(
            root, args.datasets, args.per_class, args.splits, args.dev_size, args.quick, args.first_words or None
        )
        records = []
        for run in runs:
            corpus, sizes = run[0], run[3]
            for seed in args.seeds:
                study = dev_study(run, [GP], seed, args.quick)
                for split in range(run[4]):
                    data = study.split(split)
                    out = np.asarray(data.out_of_scope)
                    for n in sizes:
                        x, y = data.training(n)
                        cell = {"method": GP, "split": split, "params": {"per_class": n}}
                        gp = study.estimator(cell).fit(x, y)
                        scores = np.asarray(gp.score_samples(list(data.test_texts)))
                        for row, threshold in thresholds(gp, x, scores[~out]).items():
                            record = {
                                "corpus": corpus,
                                "seed": seed,
                                "split": split,
                                "per_class": n,
                                "row": row,
                                "threshold": threshold,
                                "kept": float(np.mean(scores[~out] >= threshold)),
                                "fpr": float(np.mean(scores[out] >= threshold)),
                            }
                            records.append(record)
                            print(
                                f"| {corpus} | {n} | {seed}/{split} | {row} | {threshold:.3f} | {record['kept']:.3f} | "
                                f"{record['fpr']:.3f} |",
                                flush=True,
                            )
        return records


def table(records: list[dict]) -> str:
    """Each row's means over the draws, per corpus and size: the in-scope share kept (and the draws' range), the
    out-of-scope share accepted."""
    lines = [
        "| corpus | labelled a class | threshold | draws | in-scope kept (range) | out-of-scope accepted |",
        "|---|---|---|---|---|---|",
    ]
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        for n in sorted({r["per_class"] for r in records if r["corpus"] == corpus}):
            for row in ROWS:
                cell = [r for r in records if (r["corpus"], r["per_class"], r["row"]) == (corpus, n, row)]
                if not cell:
                    continue
                kept = [r["kept"] for r in cell]
                lines.append(
                    f"| {corpus} | {n} | {row} | {len(cell)} | {np.mean(kept):.3f} ({min(kept):.3f}-{max(kept):.3f}) "
                    f"| {np.mean([r['fpr'] for r in cell]):.3f} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(parser, "r8,20ng,r52", "72", first_words=0)
    parser.add_argument("--dev-size", type=int, default=2000, help="dev documents a split (0: every one)")
    args = parser.parse_args()
    draw_seeds(args)

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    print(
        "| corpus | a class | seed/split | threshold | value | in-scope kept | out-of-scope accepted |\n"
        "|---|---|---|---|---|---|---|"
    )
    records = draws(args)
    print(f"\nEach threshold's means over the draws (dev documents; the target keeps {RECALL:.2f} of the in-scope)\n")
    print(table(records))


if __name__ == "__main__":
    main()
