"""A user's wait for ``GPLVSMRegressor.predict`` called again and again (one text at a time, as in a
notebook, an active-learning loop or a service): the code before (every call factorizes the training
covariance once per Monte Carlo sample of the word vectors, 32 by default, and solves for the
variances even when only the means are asked for) against now (each sample's factorization kept
between calls while the model is unchanged; the means alone without the variances' solves), in one
run, each in its own process on one thread. The predictions of both must be the same numbers.

    python benchmarks/predict_latency.py [--quick] [--sizes 200,600] [--before f9face8]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code

BEFORE = "f9face8"

CHILD = r"""
import json, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp import Adam, GPLVSMRegressor
from lvgp.datasets import make_synonym_regression

n, calls = args["n"], args["calls"]
corpus = make_synonym_regression(n=n + calls + 100, noise=0.1, random_state=0)
model = GPLVSMRegressor(optimizer=Adam(max_iter=args["max_iter"]), random_state=0).fit(corpus.texts[:n], corpus.y[:n])
texts = corpus.texts[n:]

def timed(f):
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out

first, _ = timed(lambda: model.predict(texts[:1]))
means = [timed(lambda i=i: model.predict(texts[i : i + 1])) for i in range(1, calls + 1)]
stds = [timed(lambda i=i: model.predict(texts[i : i + 1], return_std=True)) for i in range(1, calls + 1)]
batch, (batch_mean, batch_std) = timed(lambda: model.predict(texts[-100:], return_std=True))
print(json.dumps({
    "samples": model._latent_samples("predict"),
    "first": first,
    "mean_call": float(np.median([t for t, _ in means])),
    "std_call": float(np.median([t for t, _ in stds])),
    "batch": batch,
    "values": [float(v) for _, m in means for v in m] + [float(v) for _, (m, s) in stds for v in (*m, *s)]
    + [float(v) for v in (*batch_mean, *batch_std)],
}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 training texts, 3 calls (the test suite's run)")
    parser.add_argument("--sizes", default="200,600", help="training texts")
    parser.add_argument("--calls", type=int, default=10, help="calls of one text each, timed (their median)")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    sizes = [60] if args.quick else [int(s) for s in args.sizes.split(",")]
    calls = 3 if args.quick else args.calls
    print(
        "GPLVSMRegressor (the default kernel: variational word vectors, Monte Carlo predictions), "
        f"one thread; {calls} calls of one text each, then one of 100 texts\n"
    )
    print(
        "| training texts | samples | code | first call s | a call, means s | a call, means and std s "
        "| 100 texts s |\n|---|---|---|---|---|---|---|"
    )
    with tempfile.TemporaryDirectory() as tmp:
        before_tree = extract(args.before, Path(tmp) / "before")
        for n in sizes:
            child = {"n": n, "calls": calls, "max_iter": 5 if args.quick else 20}
            runs = {"before": run_code(CHILD, before_tree, child), "now": run_code(CHILD, ROOT, child)}
            for label, r in runs.items():
                name = f"before ({args.before})" if label == "before" else "now"
                print(
                    f"| {n} | {r['samples']} | {name} | {r['first']:.3f} | {r['mean_call']:.3f} | {r['std_call']:.3f} "
                    f"| {r['batch']:.3f} |"
                )
            b, now = runs["before"], runs["now"]
            same = b["values"] == now["values"]
            print(
                f"| {n} | | before / now | {b['first'] / now['first']:.2f}x | **{b['mean_call'] / now['mean_call']:.1f}x** "
                f"| **{b['std_call'] / now['std_call']:.1f}x** | {b['batch'] / now['batch']:.2f}x |"
            )
            if not same:
                raise SystemExit("the predictions of the two codes differ")
    print("\nthe same predictions, to the bit, from both codes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
