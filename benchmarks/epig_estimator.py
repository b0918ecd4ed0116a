"""EPIG's two estimators (``lvgp.models.acquisition.epig``) on the active study's own latents: how much of the Monte
Carlo tables' score is their bias, and how close each estimator comes to the pairs' mutual information.

The active study's pool GP (``gp-pool-power-epig``'s classifier, the pool's cluster kernel in its kernel) is fitted
on one seed's first texts (one a class) and ``--labelled`` random pool texts beside them; the candidates are
``--candidates`` of the rest of the pool, the 100 targets drawn from the rest, as in a round of the study. Only the
training part is read (the pool): no test document. Printed, for each corpus:

* the Monte Carlo tables' mean score with the pairs' covariances and without them (the "null": labels that are
  independent, whose mutual information is 0), at 64, 256 and 1,024 draws;
* the reference: the tables at 4,096 draws less the null of the same draws (the bias taken out; consistent as the
  draws grow), on the first 200 candidates, from two seeds, and the two references' Spearman correlation;
* each estimator's Spearman correlation with the reference, its mean, and its seconds on all the candidates.

    python benchmarks/epig_estimator.py --datasets r8,20ng,r52 --threads 1   # benchmarks/README.md, "EPIG's estimator"
    python benchmarks/epig_estimator.py --quick                              # random latents, seconds: the tests'
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def latents_of_the_study(dataset: str, labelled: int, seed: int):
    """The pool GP's latents at ``--candidates``-worth of the study's candidates and its targets (pool texts only):
    ``(mean, var, target_mean, target_var, cov)`` and the classes."""
    from lvgp.experiments.active import EPIG_TARGETS, ActiveStudy

    study = ActiveStudy(dataset=dataset, strategies=("gp-pool-power-epig",), splits=1)
    split = study.split(0)
    rng = np.random.default_rng(seed)
    rest = np.setdiff1d(np.arange(len(split.pool_labels)), split.start)
    chosen = np.concatenate([split.start, rng.choice(rest, labelled, replace=False)])
    unlabelled = np.setdiff1d(rest, chosen)
    model = study.estimator({"method": "gp-pool-power-epig", "split": 0, "params": {}})
    model.fit([split.pool_texts[i] for i in chosen], split.pool_labels[chosen])
    candidates = [split.pool_texts[i] for i in unlabelled]
    targets = [candidates[i] for i in rng.choice(len(candidates), EPIG_TARGETS, replace=False)]
    cross = model.predict_latent_cross(candidates, targets)
    values = [np.asarray(t, dtype=np.float64) for t in (cross.x_mean, cross.x_var, cross.z_mean, cross.z_var)]
    return (*values, np.asarray(cross.cov, dtype=np.float64)), len(model.classes_), len(chosen)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", default="r8,20ng,r52", help="comma-separated: 20ng, r8, r52 or PATH.tsv")
    parser.add_argument("--labelled", type=int, default=50, help="random pool texts labelled beside the first ones")
    parser.add_argument("--candidates", type=int, default=1000, help="pool texts scored (drawn from the rest)")
    parser.add_argument("--reference-draws", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    from scipy.stats import spearmanr

    from lvgp.models.acquisition import epig

    datasets = ["random latents"] if args.quick else args.datasets.split(",")
    draws, reference_rows = (64, 256, 1024), 200
    if args.quick:
        draws, reference_rows, args.reference_draws = (64, 256), 30, 1024
    for dataset in datasets:
        if args.quick:  # epig_cost.py's random latents, 5 classes
            from epig_cost import inputs

            values, C, n_labelled = inputs(np.random.default_rng(0), 60, 10, 5), 5, 0
        else:
            values, C, n_labelled = latents_of_the_study(dataset, args.labelled, args.seed)
            keep = np.random.default_rng(1).choice(len(values[0]), min(args.candidates, len(values[0])), replace=False)
            values = (values[0][keep], values[1][keep], values[2], values[3], values[4][:, keep])
        mean, var, target_mean, target_var, cov = values
        null = (mean, var, target_mean, target_var, 0 * cov)
        print(
            f"\n{dataset}: {C} classes, {n_labelled} labelled texts, {len(mean)} candidates, {len(target_mean)} "
            f"targets, {args.threads} thread(s)\n"
        )
        print("| Monte Carlo draws | mean score | mean score without the covariances (null) | null / score |")
        print("|---|---|---|---|")
        for S in draws:
            score = epig(*values, n_samples=S, estimator="monte-carlo").mean()
            floor = epig(*null, n_samples=S, estimator="monte-carlo").mean()
            print(f"| {S:,} | {score:.3g} | {floor:.3g} | {floor / score:.0%} |")

        rows = slice(0, reference_rows)
        first = (mean[rows], var[rows], target_mean, target_var, cov[:, rows])

        reference, again = (
            epig(*first, n_samples=args.reference_draws, seed=seed, estimator="monte-carlo")
            - epig(*first[:4], 0 * first[4], n_samples=args.reference_draws, seed=seed, estimator="monte-carlo")
            for seed in (0, 7)
        )
        print(
            f"\nreference ({args.reference_draws:,} draws less their null, the first {reference_rows} candidates): "
            f"mean {reference.mean():.3g}; two seeds' Spearman {spearmanr(reference, again).statistic:.3f}\n"
        )
        print("| estimator | Spearman with the reference | mean | s for every candidate |")
        print("|---|---|---|---|")
        for name, estimator, S in (
            ("Monte Carlo tables, 64 draws (the study's until now)", "monte-carlo", 64),
            ("Monte Carlo tables, 256 draws", "monte-carlo", 256),
            ("second order, 64 draws a text", "second-order", 64),
            ("second order, 256 draws a text", "second-order", 256),
        ):
            start = time.perf_counter()
            scores = epig(*values, n_samples=S, estimator=estimator)
            seconds = time.perf_counter() - start
            rho = spearmanr(scores[rows], reference).statistic
            print(f"| {name} | {rho:.3f} | {scores[rows].mean():.3g} | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
