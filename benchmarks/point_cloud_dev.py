"""The pool GP's settings chosen on 20ng's training part alone (issue 57): the active-learning study's
protocol (one text a class, batches of 10) with its pool and its "test" documents both drawn from the
training part (5,000 and 3,000 texts, disjoint), so that no test document is read.

Prints each strategy's learning curve and area under it, one seed a run:

    python benchmarks/point_cloud_dev.py --strategies gp-power-entropy,gp-pool-power-entropy,random --budget 200
    python benchmarks/point_cloud_dev.py --quick      # tiny, for the tests
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default="gp-power-entropy,gp-pool-power-entropy,random")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", type=int, default=5000)
    parser.add_argument("--held-out", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus and a tiny budget")
    args = parser.parse_args(argv)

    import tempfile
    import warnings
    from pathlib import Path

    import numpy as np

    from lvgp.experiments import active
    from lvgp.experiments.executors import limit_threads
    from lvgp.experiments.open_set import classification_corpus

    limit_threads(args.threads)
    warnings.simplefilter("ignore")

    @dataclasses.dataclass(frozen=True)
    class DevStudy(active.ActiveStudy):
        def split(self, split: int) -> active.ActiveSplit:  # the training part alone
            corpus = classification_corpus(self.dataset)
            texts, labels = list(corpus.train_texts), np.asarray(corpus.train_labels).astype(str)
            rng = np.random.default_rng([args.seed, split, 57])
            order = rng.permutation(len(labels))
            pool, held = order[: args.pool], order[args.pool : args.pool + args.held_out]
            pool_labels = labels[pool]
            start = np.array([rng.choice(np.flatnonzero(pool_labels == c)) for c in np.unique(pool_labels)])
            return active.ActiveSplit(
                [texts[i] for i in pool], pool_labels, start, [texts[i] for i in held], labels[held]
            )

    strategies = tuple(args.strategies.split(","))
    if args.quick:  # the toy corpus and tiny encoder of open_set_dev.py, its own rows held out
        sys.path.insert(0, str(Path(__file__).parent))
        from open_set_dev import toy_corpus

        path = Path(tempfile.mkdtemp(prefix="point-cloud-dev-")) / "toy.tsv"
        toy_corpus(path)
        study = active.ActiveStudy(
            dataset=str(path), budget=12, batch=4, splits=1, strategies=strategies, ldk_max_iter=5
        )
    else:
        study = DevStudy(dataset="20ng", budget=args.budget, batch=10, splits=1, strategies=strategies)
    for strategy in study.strategies:
        record = active.run_cell(study, {"method": strategy, "split": 0, "params": {}})
        curve = {p["labels"]: round(p["accuracy"], 4) for p in record["curve"]}
        print(
            "strategy "
            + json.dumps(
                {
                    "strategy": strategy,
                    "aulc": round(record["aulc"], 4),
                    "final": record["final_accuracy"],
                    "seconds": round(record["fit_seconds"] + record["acquire_seconds"], 1),
                    "curve": curve,
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
