"""The latent SMM's decisions of many texts of very different lengths, the code before against now in one run
(each code in its own process, one thread): ``LatentSMMClassifier.decision_function(texts)``.

Before, the texts were padded to the longest of them and the kernel computed against the training texts in one
call (20ng's test split: 7,528 texts, a few of them of thousands of words); now they are padded block by block,
each block of like lengths to its own longest. Printed: the seconds of the call (the texts' tokenizing
included), the growth of the process's peak memory during it, their ratios, and the largest difference between
the two codes' decision values.

    python benchmarks/latent_smm_predict.py             # benchmarks/README.md, "latent_smm_predict.py"
    python benchmarks/latent_smm_predict.py --quick     # a synthetic corpus, seconds: the tests'
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code

BEFORE = "e3e681c"

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp import LBFGS
from lvgp.models.latent_smm import LatentSMMClassifier
if args["quick"]:
    from lvgp.datasets import make_synonym_regression
    corpus = make_synonym_regression(n=args["train"] + 300, noise=0.0, random_state=0)
    labels = np.where(corpus.y > np.median(corpus.y), "pos", "neg")
    texts, y = list(corpus.texts[: args["train"]]), labels[: args["train"]]
    # a long tail of lengths, as real corpora have: every 50th text repeated 40 times
    test = [" ".join([t] * (40 if i % 50 == 0 else 1)) for i, t in enumerate(corpus.texts[args["train"] :])]
else:
    from lvgp.datasets import load_text_classification
    data = load_text_classification(args["dataset"])
    rows = np.random.default_rng(0).choice(len(data.train_texts), args["train"], replace=False)
    texts, y = [data.train_texts[i] for i in rows], [data.train_labels[i] for i in rows]
    test = list(data.test_texts)
model = LatentSMMClassifier(optimizer=LBFGS(max_iter=args["max_iter"]), random_state=0).fit(texts, y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
values = model.decision_function(test)
seconds = time.perf_counter() - start
grown = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024  # KB -> MB (Linux)
lengths = [len(t.split()) for t in test]
print(json.dumps({"seconds": seconds, "peak_mb": grown, "texts": len(test), "longest": max(lengths),
                  "median": float(np.median(lengths)), "values": values.ravel().tolist()}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus (the test suite's run)")
    parser.add_argument("--dataset", default="20ng", help="a text classification set (its test split decided)")
    parser.add_argument("--train", type=int, default=300, help="training texts (drawn with seed 0)")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    job = {"quick": args.quick, "dataset": args.dataset, "train": 60 if args.quick else args.train}
    job["max_iter"] = 5 if args.quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        before = run_code(CHILD, extract(args.before, Path(tmp) / "before"), job)
    now = run_code(CHILD, ROOT, job)
    name = "a synthetic corpus" if args.quick else args.dataset
    print(
        f"LatentSMMClassifier (the default kernel) on {job['train']} texts of {name}, deciding {now['texts']} texts "
        f"(median {now['median']:.0f} words, the longest {now['longest']}), one thread; the code before is "
        f"{args.before}\n"
    )
    print("| code | decision_function s | peak memory grown MB |\n|---|---|---|")
    for code, out in (("before", before), ("now", now)):
        print(f"| {code} | {out['seconds']:.2f} | {out['peak_mb']:.0f} |")
    worst = max(abs(a - b) for a, b in zip(before["values"], now["values"]))
    print(f"\nspeed-up: {before['seconds'] / now['seconds']:.2f}x")
    print(f"largest difference between the two codes' decision values: {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
