"""The GP covariate-embedding logistic regression (Andrade et al. 2018) on an r8 sample of
500 training documents with its full vocabulary (every word with a GloVe vector, about
2,000 covariates): the code before the speed work (commit 05211e8, extracted with
``git archive``) against today's, in one run, one thread each, with the profile of today's fit.

Prints fit seconds, r8 test accuracy, the speed-up, and cProfile's top functions by own time.

    python benchmarks/gp_embedding_fit.py [--quick] [--before COMMIT]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from _before import ROOT, extract, run_code

BEFORE = "05211e8"  # the last commit before the eigenbasis MAP (e57765f)

# runs in a subprocess with the package to time first on sys.path; prints one JSON line
_FIT = r"""
import cProfile, io, json, pstats, sys, time, warnings
import numpy as np, torch
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp.baselines.gp_embedding import GPEmbeddingLogisticRegression
args = json.loads(sys.argv[1])
data = json.loads(open(args["data"]).read())
model = GPEmbeddingLogisticRegression(embeddings="glove-6b-50d", random_state=0)
prof = cProfile.Profile()
start = time.perf_counter()
prof.runcall(model.fit, data["train"], np.array(data["labels"]))
seconds = time.perf_counter() - start
accuracy = float(np.mean(model.predict(data["test"]) == np.array(data["test_labels"])))
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
print(json.dumps({"seconds": seconds, "accuracy": accuracy, "words": len(model.words_), "profile": out.getvalue(),
                  "C": float(model.C_), "lengthscale": model.lengthscale_, "noise": model.noise_}))
"""


def fit(package: Path, args: dict) -> dict:
    return run_code(_FIT, package, args)


def main(argv=None) -> int:
    from _profile import profile_table

    from lvgp.datasets import load_corpus
    from lvgp.experiments.classification import stratified_sample

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 training documents, 100 test documents")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)

    corpus = load_corpus("r8", "classification")
    size = 24 if args.quick else 500
    train = stratified_sample(corpus.train_labels, size, np.random.default_rng([0, 0, size, 2018]))
    n_test = 100 if args.quick else len(corpus.test_texts)
    data = {
        "train": [corpus.train_texts[i] for i in train],
        "labels": corpus.train_labels[train].tolist(),
        "test": list(corpus.test_texts[:n_test]),
        "test_labels": corpus.test_labels[:n_test].tolist(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.json"
        path.write_text(json.dumps(data))
        before = fit(extract(args.before, Path(tmp) / "before"), {"data": str(path)})
        now = fit(ROOT, {"data": str(path)})
    print(f"r8: {size} training documents, {n_test} test documents; one thread per fit\n")
    print(
        "| code | covariate words | fit seconds | test accuracy | C | length-scale | sigma |\n|---|---|---|---|---|---|---|"
    )
    for label, r in ((f"before ({args.before})", before), ("now", now)):
        print(
            f"| {label} | {r['words']} | {r['seconds']:.1f} | {r['accuracy']:.3f} | {r['C']:.3g} "
            f"| {r['lengthscale']:.3g} | {r['noise']:.3g} |"
        )
    print(f"\nfit speed-up {before['seconds'] / now['seconds']:.1f}x")
    print(f"\nProfile of today's fit:\n\n{profile_table(now['profile'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
