"""Fewer L-BFGS iterations for the matcher (issue 41, 6): what a tolerance on the dev score, or a
shorter patience, would save, and what it would cost the study's Precision@1.

The ``ldk-plus`` matcher stops when its dev score (mean Precision@1..50 on the dev pairs) has not
improved for ``n_iter_no_change`` (10) iterations, and keeps the best iterate. Late in a fit the dev
score still creeps up by single ranks (0.0002 with 100 dev pairs) while each iteration costs a full
evaluation of eq. 6.8. This script fits every ``ldk-plus`` cell of the matching study (each set,
each lambda of its dev grid) once with today's rule and records, at every iteration, the dev score
and -- for this analysis only -- the test Precision@1 of that iterate. Stopping rules that stop no
later than today's are then replayed on the recorded dev curves, exactly (the same path up to the
stop):

* ``tol``: as scikit-learn's ``tol`` with ``n_iter_no_change``: the patience counter restarts only on
  an improvement of more than ``tol``; the best iterate is still kept by any improvement;
* ``patience``: ``n_iter_no_change``.

For each rule: the L-BFGS iterations of all cells, and the study's test Precision@1 (per set, the
lambda with the best dev score, as ``lvgp compare matching`` chooses it). The test scores choose
nothing here: they show what each rule would have cost.

    python benchmarks/matching_stopping.py --pairs debian_descriptions_en_de.jsonl.gz --sets 10
    python benchmarks/matching_stopping.py --quick   # synthetic pairs (the tests)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import types
import warnings
from pathlib import Path

import numpy as np

RULES = ((0.0, 10), (0.0, 5), (2e-4, 10), (4e-4, 10), (6e-4, 10), (1e-3, 10), (2e-3, 10), (5e-3, 10), (1e-3, 5))


def replay(dev: list[float], tol: float, patience: int) -> tuple[int, int, float]:
    """Iterations run, the kept iteration and its dev score under the rule (dev: higher is better)."""
    best, best_iter, last_significant, it = -np.inf, 0, 0, 0
    for it, score in enumerate(dev, 1):
        if score > best + tol:
            last_significant = it
        if score > best:
            best, best_iter = score, it
        if it - last_significant >= patience:
            break
    return it, best_iter, best


def record_cells(args) -> list[dict]:
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    from lvgp.experiments.matching import PLUS_IDENTITY_WEIGHTS, MatchingStudy, prepare
    from lvgp.kernels.document import pad_to_common_width
    from lvgp.models.matching import precision_at

    study = MatchingStudy(
        pairs=args.pairs,
        methods=("ldk-plus",),
        min_df=args.min_df,
        word_weighting="idf",
        train=args.train,
        dev=args.dev,
        test=args.test,
        sets=args.sets,
        max_iter=args.max_iter,
    )
    lambdas = PLUS_IDENTITY_WEIGHTS[:2] if args.quick else PLUS_IDENTITY_WEIGHTS
    cells = []
    for s in range(args.sets):
        train, dev, test, _ = prepare(study, s)
        for lam in lambdas:
            params = {"q": 32, "rho": 0.1, "gamma": 1.0, "identity_weight": lam}
            model = study.build({"method": "ldk-plus", "split": s, "params": params})
            tests: list[float] = []
            own = model._validation

            def with_test(self, sv, tv, _own=own, _tests=tests, _test=test):
                score = _own(sv, tv)
                # the test pairs encoded once, as the dev pairs are (the ranks of true_target_ranks)
                ts = self.source_vocabulary_.encode(list(_test[0]), on_empty="keep")
                tt = self._target_to_kernel(self.target_vocabulary_.encode(list(_test[1]), on_empty="keep"))
                ts, tt = pad_to_common_width(ts, tt)
                empty = self._empty(list(_test[0]), self.source_vocabulary_) | self._empty(
                    list(_test[1]), self.target_vocabulary_
                )

                def both() -> float:
                    value = score()
                    with torch.no_grad():
                        d = self._distance(ts, tt, allow_empty=True)
                    ranks = (d < d.diagonal().unsqueeze(1)).sum(1).numpy()
                    ranks[empty] = len(ranks) - 1  # as true_target_ranks ranks them
                    _tests.append(precision_at(ranks, 1)[1])  # recorded, never used by the fit
                    return value

                return both

            model._validation = types.MethodType(with_test, model)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(*train, *dev)
            cells.append({"set": s, "lambda": lam, "dev": [-v for v in model.validation_curve_], "test": tests})
            print(f"set {s}, lambda {lam:g}: {model.n_iter_} iterations, best {model.best_iter_}", flush=True)
    return cells


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from matching_speed import add_split_arguments, synthetic_pairs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="synthetic pairs, 2 sets, 2 lambdas (for the tests)")
    add_split_arguments(parser)
    parser.add_argument("--sets", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            args.pairs = str(Path(tmp) / "pairs.jsonl.gz")
            synthetic_pairs(Path(args.pairs))
            args.sets, args.train, args.dev, args.test, args.min_df, args.max_iter = 2, 100, 30, 30, 2, 15
        cells = record_cells(args)
    print(f"\n{len(cells)} cells, {args.sets} sets, one thread\n")
    print("| tol | patience | iterations, all cells | median a cell | study test P@1 | cells with today's test P@1 |")
    print("|---|---|---|---|---|---|")
    today = [c["test"][replay(c["dev"], 0.0, 10)[1] - 1] for c in cells]
    for tol, patience in RULES:
        runs = [replay(c["dev"], tol, patience) for c in cells]
        p1 = [c["test"][kept - 1] for c, (_, kept, _) in zip(cells, runs)]
        study = []
        for s in range(args.sets):
            mine = [i for i, c in enumerate(cells) if c["set"] == s]
            chosen = max(mine, key=lambda i: runs[i][2])  # the dev choice of lambda (first of ties)
            study.append(p1[chosen])
        same = sum(abs(a - b) < 1e-12 for a, b in zip(p1, today))
        iterations = [r[0] for r in runs]
        print(
            f"| {tol:g} | {patience} | {sum(iterations)} | {np.median(iterations):.0f} | "
            f"{np.mean(study):.3f} ± {np.std(study):.3f} | {same} of {len(cells)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
