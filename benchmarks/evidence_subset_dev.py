"""The Dirichlet GP classifier's hyper-parameters from the evidence of a subset, on dev documents
(``LDKGPClassifier(max_evidence_documents=m)``): what a subset's fit costs in accuracy, log loss and
calibration against the evidence of every document, and what it saves in time.

The open-set study's ``gpc-bow`` classifier (the cosine of the tf-idf vectors, one output scale and
noise for all classes, ``alpha_epsilon=1e-6``, the temperature of its leave-one-out predictions) on
the *training* part of 20ng alone: per split, ``--per-class`` labelled texts a class and ``--dev-size``
dev texts from the rest; the standard test split is never read. Every row fits the same documents
with the evidence of all of them and of stratified subsets of ``--subsets`` documents (the posterior
always conditions on all).

    python benchmarks/evidence_subset_dev.py                 # 20ng, 150 a class (3,000 documents), 1 split
    python benchmarks/evidence_subset_dev.py --inference laplace --per-class 25 --subsets 250
    python benchmarks/evidence_subset_dev.py --quick         # a toy corpus, seconds
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _threads import add_threads_option, resolve_threads


def toy() -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(0)
    topics = ["tax bank money loan rate", "goal team match score win", "cell gene protein dna virus"]
    texts = [" ".join(rng.choice(topics[c].split() + ["the", "a", "of"], 6)) for c in range(3) for _ in range(80)]
    return texts, np.repeat(np.arange(3), 80)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--per-class", type=int, default=150)
    parser.add_argument("--dev-size", type=int, default=2000)
    parser.add_argument("--subsets", default="1000,2000")
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--first-split", type=int, default=0, help="the first split's number (its seed)")
    add_threads_option(parser)
    parser.add_argument(
        "--inference",
        choices=("dirichlet", "laplace"),
        default="dirichlet",
        help="laplace: the softmax likelihood's Laplace inference (no temperature; try --per-class 25 --subsets 250)",
    )
    args = parser.parse_args(argv)
    resolve_threads(args)
    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    from lvgp import LBFGS, LDKGPClassifier
    from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins
    from lvgp.experiments.classification import _cut_vocabulary  # noqa: F401 (the study's helpers load)
    from lvgp.experiments.open_set import _tfidf_cosine

    if args.quick:
        texts, labels = toy()
        per_class, dev_size, subsets = 30, 60, [30]
    else:
        from lvgp.datasets.loaders import load_corpus

        corpus = load_corpus("20ng", "classification")
        texts, labels = corpus.train_texts, np.asarray(corpus.train_labels)
        per_class, dev_size, subsets = args.per_class, args.dev_size, [int(s) for s in args.subsets.split(",")]
    classes = np.unique(labels)
    print(
        f"{args.inference}; {len(classes)} classes, {per_class} labelled a class, {dev_size} dev texts, "
        f"{args.threads} thread(s)"
    )
    print("| split | evidence of | accuracy | log loss | ECE | L-BFGS iterations | fit s |")
    print("|---|---|---|---|---|---|---|")
    for split in range(args.first_split, args.first_split + args.splits):
        rng = np.random.default_rng(100 + split)
        train = np.concatenate(
            [rng.choice(np.flatnonzero(labels == c), size=per_class, replace=False) for c in classes]
        )
        rest = np.setdiff1d(np.arange(len(labels)), train)
        dev = rng.choice(rest, size=min(dev_size, len(rest)), replace=False)
        x_train, y_train = [texts[i] for i in train], labels[train]
        x_dev, y_dev = [texts[i] for i in dev], labels[dev]
        for m in [None, *subsets]:
            laplace = args.inference == "laplace"
            model = LDKGPClassifier(
                _tfidf_cosine,
                inference=args.inference,
                class_hyperparameters="shared",
                alpha_epsilon=1e-6,
                calibration=None if laplace else "temperature",
                optimizer=LBFGS(max_iter=300),
                max_evidence_documents=m,
                random_state=split,
            )
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(x_train, y_train)
            seconds = time.perf_counter() - start
            proba = model.predict_proba(x_dev)
            accuracy = float(np.mean(model.classes_[proba.argmax(1)] == y_dev))
            loss = log_loss(proba, model.classes_, y_dev)
            ece = expected_calibration_error(reliability_bins(proba, model.classes_, y_dev))
            what = f"all {len(train):,}" if m is None else f"{m:,}"
            print(f"| {split} | {what} | {accuracy:.3f} | {loss:.3f} | {ece:.3f} | {model.n_iter_} | {seconds:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
