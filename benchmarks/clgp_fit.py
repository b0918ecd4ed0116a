"""One CLGP fit at the categorical study's breast-cancer settings, the code before the speed
work (commit 9dad77b, extracted with ``git archive``) against today's, in one run; then
today's fit with one intra-op thread against torch's default while another process keeps
one core busy.

Setting: split 0 of ``lvgp compare categorical --dataset breast-cancer`` (512 training rows,
10 columns), Q = 2, M = 50, 5 Monte Carlo samples, Adam (lr 0.05), at most 1,000 iterations.
Each fit runs in a subprocess of its own; it prints fit seconds, iterations, the held-out
perplexity of the hidden values, and the ratios.

    python benchmarks/clgp_fit.py [--quick] [--before COMMIT]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

import numpy as np
from _before import ROOT, extract, run_code

BEFORE = "9dad77b"  # the last commit before the CLGP speed work

# runs in a subprocess with the package to time first on sys.path; prints one JSON line
_FIT = r"""
import json, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
if args["threads"]:
    torch.set_num_threads(args["threads"])
warnings.simplefilter("ignore")
try:
    from lvgp.models.clgp import CLGP
except ImportError:  # before lvgp 0.2 the CLGP lived in lvgp.baselines
    from lvgp.baselines.clgp import CLGP
data = np.load(args["data"])
# the code before had neither option: float64, and q(x)'s scales fitted by Adam (latent_scale="joint")
extra = {k: args[k] for k in ("dtype", "latent_scale") if k in args}
try:  # today's CLGP takes its optimizer as an object
    from lvgp import Adam
    fit = {"optimizer": Adam(max_iter=args["max_iter"], lr=0.05)}
except ImportError:  # the code before lvgp.Adam took the settings as arguments
    fit = {"optimizer": "adam", "lr": 0.05, "max_iter": args["max_iter"]}
import inspect
# the ELBO's Monte Carlo samples: elbo_samples since issue 58, samples before
samples = "elbo_samples" if "elbo_samples" in inspect.signature(CLGP).parameters else "samples"
model = CLGP(latent_dim=2, num_inducing=50, predict_samples=args["predict_samples"],
             impute_iter=args["impute_iter"], random_state=0, **{samples: 5}, **fit, **extra)
start = time.perf_counter()
model.fit(data["train"], [int(k) for k in data["cardinalities"]])
seconds = time.perf_counter() - start
probs = model.predict_proba(data["partial"])
p = np.array([probs[d][i, v] for i, (d, v) in enumerate(zip(data["cols"], data["vals"]))])
print(json.dumps({"seconds": seconds, "iterations": int(getattr(model, "n_iter_", args["max_iter"])),
                  "perplexity": float(np.exp(-np.mean(np.log(p)))), "threads": torch.get_num_threads()}))
"""


def fit(package: Path, args: dict, omp_threads: str | None = "1") -> dict:
    return run_code(_FIT, package, args, omp_threads)


def _spin(stop) -> None:
    """A competing process: keeps one core busy until told to stop."""
    x = 0.0
    while not stop.is_set():
        for i in range(100_000):
            x += i * 1e-9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="8 iterations, few samples, the before and now rows only (for the tests)"
    )
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)

    from lvgp.experiments.categorical import CategoricalStudy, prepare_split

    train, partial, cols, vals, table, _, _ = prepare_split(CategoricalStudy("breast-cancer"), 0)
    settings = {
        "max_iter": 8 if args.quick else 1000,
        "predict_samples": 10 if args.quick else 200,
        "impute_iter": 8 if args.quick else 300,
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        data = tmp_path / "data.npz"
        np.savez(data, train=train, partial=partial, cols=cols, vals=vals, cardinalities=table.cardinalities)
        settings["data"] = str(data)
        before_pkg = extract(args.before, tmp_path / "before")
        print(f"breast cancer split 0: {len(train)} training rows, {len(partial)} test rows; one thread per fit")
        before = fit(before_pkg, {**settings, "threads": 1})
        one_rule = {**settings, "threads": 1, "latent_scale": "joint"}  # one fit, the algorithm timed before
        now = fit(ROOT, one_rule)
        # --quick: the two rows of the speed-up (the other two are the same fit with other settings)
        now64 = None if args.quick else fit(ROOT, {**one_rule, "dtype": "float64"})
        auto = None if args.quick else fit(ROOT, {**settings, "threads": 1})
        print("\n| code | fit seconds | iterations | s/iteration | held-out perplexity |\n|---|---|---|---|---|")
        rows = (
            (f"before ({args.before}, float64)", before),
            ("now (float32, the default; latent_scale='joint')", now),
            ("now, float64", now64),
            ("now, latent_scale='auto' (the default: 2 dev fits on 80% + the final fit)", auto),
        )
        for label, r in rows:
            if r is None:
                continue
            print(
                f"| {label} | {r['seconds']:.1f} | {r['iterations']} | {r['seconds'] / r['iterations']:.3f} "
                f"| {r['perplexity']:.3f} |"
            )
        per_iteration = (before["seconds"] / before["iterations"]) / (now["seconds"] / now["iterations"])
        float64 = "" if now64 is None else f"; float64 now {before['seconds'] / now64['seconds']:.1f}x"
        print(f"\nfit speed-up {before['seconds'] / now['seconds']:.1f}x; per iteration {per_iteration:.1f}x{float64}")

        if args.quick:  # the tests' smoke run: no process kept busy beside the test suite's other worker
            return 0
        # today's fit next to a process that keeps one core busy: one thread vs torch's default
        stop = multiprocessing.Event()
        spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
        spinner.start()
        try:
            time.sleep(0.5)
            busy_one = fit(ROOT, one_rule)
            busy_default = fit(ROOT, {**one_rule, "threads": 0}, omp_threads=None)
        finally:
            stop.set()
            spinner.join()
        print("\nWith one core kept busy by another process:\n")
        print("| torch threads | fit seconds | ratio to 1 thread |\n|---|---|---|")
        for r in (busy_one, busy_default):
            print(f"| {r['threads']} | {r['seconds']:.1f} | {r['seconds'] / busy_one['seconds']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
