"""The exact regressors' predictions of many texts of very different lengths, the code before against now in
one run (each code in its own process, one thread): ``GPLVSMRegressor.predict(texts, return_std=True)``.

Before, the texts were padded to the longest of them at once (20ng's test split: 7,528 texts, a few of them of
thousands of words) and every block of 2,048 computed at that width, once per Monte Carlo sample of the word
vectors; now they are padded block by block, each block of like lengths to its own longest. Printed: the seconds
of the call, the growth of the process's peak memory during it, their ratios, and the largest relative
difference between the two codes' predictions (blocks of other rows and widths: rounding).

    python benchmarks/exact_predict_unpadded.py                 # benchmarks/README.md, "exact_predict_unpadded.py"
    python benchmarks/exact_predict_unpadded.py --quick         # a synthetic corpus, seconds: the tests'
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code

BEFORE = "8598ccc"

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp import Adam, GPLVSMRegressor
if args["quick"]:
    from lvgp.datasets import make_synonym_regression
    corpus = make_synonym_regression(n=args["train"] + 300, noise=0.1, random_state=0)
    texts = list(corpus.texts[: args["train"]])
    # a long tail of lengths, as real corpora have: every 50th text repeated 40 times
    test = [" ".join([t] * (40 if i % 50 == 0 else 1)) for i, t in enumerate(corpus.texts[args["train"] :])]
else:
    from lvgp.datasets import load_text_classification
    data = load_text_classification(args["dataset"])
    texts, test = list(data.train_texts[: args["train"]]), list(data.test_texts)
y = np.asarray([len(t.split()) ** 0.5 for t in texts], dtype=float)  # a target of the texts themselves
model = GPLVSMRegressor(optimizer=Adam(max_iter=args["max_iter"]), random_state=0).fit(texts, y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
mean, std = model.predict(test, return_std=True)
seconds = time.perf_counter() - start
grown = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024  # KB -> MB (Linux)
lengths = [len(t.split()) for t in test]
print(json.dumps({"seconds": seconds, "peak_mb": grown, "texts": len(test), "longest": max(lengths),
                  "median": float(np.median(lengths)), "samples": model._latent_samples("predict"),
                  "values": [float(v) for v in (*mean, *std)]}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus (the test suite's run)")
    parser.add_argument("--dataset", default="20ng", help="a text classification set (its test split predicted)")
    parser.add_argument("--train", type=int, default=300, help="training texts")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    job = {"quick": args.quick, "dataset": args.dataset, "train": 60 if args.quick else args.train}
    job["max_iter"] = 5 if args.quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        before = run_code(CHILD, extract(args.before, Path(tmp) / "before"), job)
    now = run_code(CHILD, ROOT, job)
    name = "a synthetic corpus" if args.quick else args.dataset
    print(
        f"GPLVSMRegressor (the default kernel, {now['samples']} Monte Carlo samples) on {job['train']} texts of "
        f"{name}, predicting {now['texts']} texts (median {now['median']:.0f} words, the longest {now['longest']}), "
        f"one thread; the code before is {args.before}\n"
    )
    print("| code | predict s | peak memory grown MB |\n|---|---|---|")
    for code, out in (("before", before), ("now", now)):
        print(f"| {code} | {out['seconds']:.2f} | {out['peak_mb']:.0f} |")
    a, b = before["values"], now["values"]
    worst = max(abs(x - y) / max(abs(x), 1e-300) for x, y in zip(a, b))
    print(f"\nspeed-up: {before['seconds'] / now['seconds']:.2f}x")
    print(f"largest relative difference between the two codes' predictions: {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
