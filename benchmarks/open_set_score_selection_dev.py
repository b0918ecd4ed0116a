"""The GP's novelty score chosen per data set from its labelled texts alone (issue 57), on dev documents.

The twelve dev draws of ``open_set_dev.py`` showed the best GP score depending on the corpus (the energy
on r8, the entropy and variance together with the stationary kernel on 20ng). A data set's own labelled
texts can choose it without an out-of-scope text: hold out a quarter of the known classes (at least
one), fit the GP on the rest, score the kept texts by their leave-one-out predictions (in scope, not
fitted: ``novelty_reference``, from ``leave_one_out_latents``) and the held-out classes' texts by the refitted
model (out of scope), and take the score with the best AUROC over ``--draws`` such draws: the library's
:func:`lvgp.models.gpc.choose_novelty_score`.

Measured on the open-set protocol of ``open_set_dev.py`` (the training parts alone, 2,000 dev documents
a split, 3 splits a seed): each cell's chosen score's AUROC on the dev documents against the energy (the
GP's default) and every other score.

    python benchmarks/open_set_score_selection_dev.py --datasets r8,20ng --seed 8,9
    python benchmarks/open_set_score_selection_dev.py --quick     # a toy corpus and a tiny random encoder
    python benchmarks/open_set_score_selection_dev.py --datasets r8,20ng,r52 --seed 34,35 \
        --methods gpc-bow-encoder-rbf,gpc-encoder-rbf --kinds energy,energy-class-variance   # rule 13
    (and --datasets 20ng,r52 --first-words 12: texts cut to their first 12 words)
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: the scores compared by default (the table of benchmarks/README.md, 2026-12-01); ``--kinds`` names others
KINDS = ("energy", "entropy", "variance", "entropy-variance")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a toy corpus and a tiny random encoder")
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--seed", default="8,9", help="the open-set draws (seeds 0-7 chose earlier settings)")
    parser.add_argument("--methods", default="gpc-bow-encoder-rbf,gpc-bow")
    parser.add_argument("--draws", type=int, default=4, help="draws of held-out known classes a cell")
    parser.add_argument("--dev-size", type=int, default=2000)
    parser.add_argument("--kinds", default=",".join(KINDS), help="the candidate scores, comma-separated")
    parser.add_argument(
        "--first-words", type=int, default=None, help="each text cut to its first N words (open_set_dev.py's option)"
    )
    parser.add_argument(
        "--gp-tf",
        default="study",
        choices=("study", "raw", "sublinear"),
        help="the GP classifiers' tf-idf counts (open_set_dev.py's option; the table of benchmarks/README.md: raw)",
    )
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from open_set_dev import dev_runs, dev_study, scratch_folder, variant_study

    from lvgp.base.novelty import open_set_metrics
    from lvgp.experiments.executors import limit_threads
    from lvgp.experiments.open_set import novelty_scores
    from lvgp.models.gpc import choose_novelty_score

    limit_threads(1)
    warnings.simplefilter("ignore")
    with scratch_folder(None, "score-selection-dev-") as root:
        runs = dev_runs(root, args.datasets, "10,50", 3, args.dev_size, args.quick, args.first_words)
        kinds = args.kinds.split(",")
        methods = args.methods.split(",")
        counts = None if args.gp_tf == "study" else args.gp_tf == "sublinear"
        study_class = None if counts is None else variant_study(False, counts)
        rows = []
        for seed in [int(s) for s in args.seed.split(",")]:
            for run in runs:
                name, sizes, splits = run[0], run[3], run[4]
                study = dev_study(run, methods, seed, args.quick, study_class)
                for n in sizes:
                    for split_index in range(splits):
                        split = study.split(split_index)
                        texts, labels = split.training(n)
                        texts, labels = list(texts), np.asarray(labels)
                        for method in methods:
                            cell = {"method": method, "split": split_index, "params": {"per_class": n}}
                            model = study.estimator(cell).fit(texts, labels)
                            proba = model.predict_proba(split.test_texts)
                            _, dev = novelty_scores(model, split.test_texts, proba)
                            dev_auroc = {k: open_set_metrics(dev[k], split.out_of_scope)["oos_auroc"] for k in kinds}
                            start = time.perf_counter()
                            rng = np.random.default_rng([seed, n, split_index, 57])
                            choice = choose_novelty_score(
                                model, texts, labels, kinds, n_draws=args.draws, random_state=rng
                            ).score
                            rows.append(
                                {"corpus": name, "seed": seed, "per_class": n, "method": method, "choice": choice,
                                 "dev": dev_auroc, "seconds": time.perf_counter() - start}
                            )  # fmt: skip
                            print(json.dumps(rows[-1]), flush=True)
        print("\n| corpus | a class | method | chosen (cells) | chosen's AUROC | " + " | ".join(kinds) + " |")
        print("|---|---|---|---|---|" + "---|" * len(kinds))
        cells = collections.defaultdict(list)
        for r in rows:
            cells[r["corpus"], r["per_class"], r["method"]].append(r)
        chosen_mean, energy_mean = [], []
        for (name, n, method), group in cells.items():
            picks = collections.Counter(r["choice"] for r in group)
            chosen = float(np.mean([r["dev"][r["choice"]] for r in group]))
            means = {k: float(np.mean([r["dev"][k] for r in group])) for k in kinds}
            chosen_mean.append(chosen)
            energy_mean.append(means["energy"])
            print(
                f"| {name} | {n} | {method} | {', '.join(f'{k} {c}' for k, c in picks.most_common())} | {chosen:.4f} | "
                + " | ".join(f"{means[k]:.4f}" for k in kinds)
                + " |"
            )
        print(f"\nchosen score {np.mean(chosen_mean):.4f}, energy {np.mean(energy_mean):.4f} (mean over the rows)")


if __name__ == "__main__":
    main()
