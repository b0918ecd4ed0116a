"""Thread defaults on a shared machine: one LDK fit beside a competing busy process (issue 41, 5).

On two cores shared with other work, two torch threads per fit made their OpenMP workers spin
against the other process: a default ``latent-smm`` cell of the classification study took 1,134 s
with 2 threads and 340 s (with a GP classifier cell) with 1. The studies now default to the cores
free when they start (:func:`lvgp.experiments.executors.default_threads`: the usable cores minus the
load average). This script measures one fit in a fresh process, with a competing process spinning on
one core the whole time:

* ``threads = all cores`` (torch's default, the old default of the studies);
* the same with ``OMP_WAIT_POLICY=PASSIVE`` (OpenMP's workers sleep instead of spinning);
* ``threads = default_threads()`` (what a study chooses now, read while the competitor runs);
* and, for reference, ``threads = 1`` without the competitor.

The fit: a latent SMM (``LDKSpec.paper`` kernel, L-BFGS) on synthetic texts, the kind of cell the
study spun on.

    python benchmarks/threads_under_load.py [--quick] [--docs 300] [--iters 30]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

FIT = """
import time, warnings, numpy as np, torch
torch.set_num_threads({threads})
from threadpoolctl import threadpool_limits
threadpool_limits({threads})
from lvgp import LBFGS, LatentSMMClassifier, LDKSpec
from lvgp.datasets import make_synonym_regression
corpus = make_synonym_regression(n={docs}, noise=0.1, random_state=0)
labels = (np.asarray(corpus.y) > np.median(corpus.y)).astype(int)
warnings.simplefilter("ignore")
start = time.perf_counter()
LatentSMMClassifier(LDKSpec.paper(latent_dim=4, rho=1.0), optimizer=LBFGS(max_iter={iters}), random_state=0).fit(list(corpus.texts), labels)
print(time.perf_counter() - start)
"""


def fit_seconds(threads: int, docs: int, iters: int, env: dict | None = None) -> float:
    code = FIT.format(threads=threads, docs=docs, iters=iters)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **(env or {})}, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="60 documents, 3 iterations, a 1 s warm-up, the default's row only, an idle competitor (the code path)",
    )
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--warmup", type=float, default=70.0, help="seconds the competitor runs first (load average)")
    args = parser.parse_args(argv)
    from lvgp.experiments.executors import default_threads, usable_cores

    docs, iters, warmup = (60, 3, 1.0) if args.quick else (args.docs, args.iters, args.warmup)
    cores = usable_cores()
    reference = fit_seconds(1, docs, iters)
    # --quick (the code path, in the test suite): an idle stand-in, not a core taken from the suite's other worker
    spin = "import time; time.sleep(3600)" if args.quick else "while True: pass"
    competitor = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(warmup)  # the one-minute load average sees the competitor
        chosen = default_threads()
        rows = (
            []
            if args.quick
            else [  # --quick: the code path, two fits
                (
                    f"threads = {cores} (all cores: torch's default, the studies' old default)",
                    fit_seconds(cores, docs, iters),
                ),
                (
                    f"threads = {cores}, OMP_WAIT_POLICY=PASSIVE",
                    fit_seconds(cores, docs, iters, {"OMP_WAIT_POLICY": "PASSIVE"}),
                ),
            ]
        )
        rows.append(
            (f"threads = default_threads() = {chosen} (the studies' default now)", fit_seconds(chosen, docs, iters))
        )
    finally:
        competitor.kill()
    print(f"{cores} usable cores; one latent SMM fit ({docs} documents, {iters} L-BFGS iterations) in a fresh process")
    print(f"reference, 1 thread, no competing process: {reference:.1f} s\n")
    print(f"| beside one {'idle stand-in (--quick)' if args.quick else 'busy process'} | fit s | / reference |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} | {seconds / reference:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
