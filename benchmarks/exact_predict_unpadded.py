"""The exact models' predictions of many texts of very different lengths, the code before against now in one run
(each code in its own process, one thread): ``GPLVSMRegressor.predict(texts, return_std=True)`` (``--model
gplvsm``) or ``LatentSMMClassifier.decision_function(texts)`` (``--model latent-smm``).

Before, the texts were padded to the longest of them at once (20ng's test split: 7,528 texts, a few of them of
thousands of words): the GP-LVSM computed every block of 2,048 at that width, once per Monte Carlo sample of the
word vectors, and the latent SMM the kernel of all of them in one call; now they are padded block by block, each
block of like lengths to its own longest. Printed: the seconds of the call (the test texts' tokenizing included),
the growth of the process's peak memory during it, their ratios, and the largest difference between the two codes'
values (blocks of other rows and widths: rounding). ``--quick`` runs both models on a synthetic corpus.

    python benchmarks/exact_predict_unpadded.py                     # benchmarks/README.md, "exact_predict_unpadded.py"
    python benchmarks/exact_predict_unpadded.py --model latent-smm  # the same file, "the latent SMM's decisions"
    python benchmarks/exact_predict_unpadded.py --quick             # a synthetic corpus, seconds: the tests'
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code

#: each model's code before: the commit before its predictions were padded block by block
BEFORE = {"gplvsm": "8598ccc", "latent-smm": "fd807db"}

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp import LBFGS, Adam, GPLVSMRegressor
from lvgp.models.latent_smm import LatentSMMClassifier
if args["quick"]:
    from lvgp.datasets import make_synonym_regression
    corpus = make_synonym_regression(n=args["train"] + 300, noise=0.1, random_state=0)
    texts = list(corpus.texts[: args["train"]])
    labels = np.where(corpus.y[: args["train"]] > np.median(corpus.y), "pos", "neg")
    # a long tail of lengths, as real corpora have: every 50th text repeated 40 times
    test = [" ".join([t] * (40 if i % 50 == 0 else 1)) for i, t in enumerate(corpus.texts[args["train"] :])]
else:
    from lvgp.datasets import load_text_classification
    data = load_text_classification(args["dataset"])
    if args["model"] == "gplvsm":
        rows = np.arange(args["train"])
    else:  # a draw of the training texts: the first ones are of one class
        rows = np.random.default_rng(0).choice(len(data.train_texts), args["train"], replace=False)
    texts, labels = [data.train_texts[i] for i in rows], [data.train_labels[i] for i in rows]
    test = list(data.test_texts)
if args["model"] == "gplvsm":
    y = np.asarray([len(t.split()) ** 0.5 for t in texts], dtype=float)  # a target of the texts themselves
    model = GPLVSMRegressor(optimizer=Adam(max_iter=args["max_iter"]), random_state=0).fit(texts, y)
    predict = lambda: np.concatenate(model.predict(test, return_std=True))
else:
    model = LatentSMMClassifier(optimizer=LBFGS(max_iter=args["max_iter"]), random_state=0).fit(texts, labels)
    predict = lambda: model.decision_function(test).ravel()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
values = predict()
seconds = time.perf_counter() - start
grown = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024  # KB -> MB (Linux)
lengths = [len(t.split()) for t in test]
samples = model._latent_samples("predict") if args["model"] == "gplvsm" else None
print(json.dumps({"seconds": seconds, "peak_mb": grown, "texts": len(test), "longest": max(lengths),
                  "median": float(np.median(lengths)), "samples": samples, "values": values.tolist()}))
"""


def measure(model: str, args: argparse.Namespace) -> None:
    """Both codes' predictions of ``model``, and the table of them."""
    job = {"quick": args.quick, "dataset": args.dataset, "train": 60 if args.quick else args.train, "model": model}
    job["max_iter"] = 5 if args.quick else 20
    commit = args.before or BEFORE[model]
    with tempfile.TemporaryDirectory() as tmp:
        before = run_code(CHILD, extract(commit, Path(tmp) / "before"), job)
    now = run_code(CHILD, ROOT, job)
    name = "a synthetic corpus" if args.quick else args.dataset
    if model == "gplvsm":
        what, call = f"GPLVSMRegressor (the default kernel, {now['samples']} Monte Carlo samples)", "predict"
    else:
        what, call = "LatentSMMClassifier (the default kernel)", "decision_function"
    print(
        f"{what} on {job['train']} texts of {name}, predicting {now['texts']} texts (median {now['median']:.0f} "
        f"words, the longest {now['longest']}), one thread; the code before is {commit}\n"
    )
    print(f"| code | {call} s | peak memory grown MB |\n|---|---|---|")
    for code, out in (("before", before), ("now", now)):
        print(f"| {code} | {out['seconds']:.2f} | {out['peak_mb']:.0f} |")
    pairs = list(zip(before["values"], now["values"]))
    relative = max(abs(x - y) / max(abs(x), 1e-300) for x, y in pairs)
    print(f"\nspeed-up: {before['seconds'] / now['seconds']:.2f}x")
    print(
        f"largest relative difference between the two codes' predictions: {relative:.1e} (absolute "
        f"{max(abs(x - y) for x, y in pairs):.1e})\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="both models on a synthetic corpus (the tests' run)")
    parser.add_argument("--model", choices=sorted(BEFORE), default="gplvsm", help="the model whose predictions")
    parser.add_argument("--dataset", default="20ng", help="a text classification set (its test split predicted)")
    parser.add_argument("--train", type=int, default=300, help="training texts")
    parser.add_argument("--before", default=None, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    for model in ("gplvsm", "latent-smm") if args.quick else (args.model,):
        measure(model, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
