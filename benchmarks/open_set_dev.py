"""Out-of-scope detection on dev documents only (issue 57): which novelty score and which kernel the
GP classifier should use, chosen without a test document.

The protocol of ``lvgp compare open-set`` run on the *training* part of r8 and 20ng alone: the
training part is written to a TSV, unknown classes are drawn with another seed than the committed
studies' (``--seed 1``), N texts a known class are labelled, and the dev documents are the training
part's unlabelled rest (in scope: the known classes'; out of scope: the unknown ones'), subsampled.
The standard test splits are never read. Prints, per corpus and size, every method's AUROC under
every score it offers and its in-scope accuracy.

    python benchmarks/open_set_dev.py                   # r8 (2 unknown) and 20ng (5 unknown), 10 and 50 a class
    python benchmarks/open_set_dev.py --quick           # a toy corpus and a tiny random encoder (seconds)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np

UNKNOWN = {"r8": 2, "20ng": 5}
METHODS = (
    "gpc-bow,gpc-bow-encoder-rbf,gpc-bow-encoder,gpc-encoder-rbf,gpc-encoder,tfidf-encoder-logreg,encoder-logreg,"
    "encoder-mahalanobis,encoder-knn,svm"
)


def toy_corpus(path: Path) -> None:
    """Four topics of made-up texts, and a tiny random encoder standing in for the pretrained one."""
    from lvgp.encoders import SentenceEncoder
    from lvgp.encoders import sentence as sentence_module

    tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0)
    sentence_module.shared_encoder = lambda name="x", device="cpu": tiny
    rng = np.random.default_rng(0)
    words = {
        "pos": "good great fine nice lovely",
        "neg": "bad awful poor dull weak",
        "money": "tax bank money loan rate",
        "sport": "goal team match score win",
    }
    rows = ["text\tlabel"] + [
        " ".join(rng.choice(words[c].split(), 4)) + f" note {i}\t{c}" for i in range(40) for c in words
    ]
    path.write_text("\n".join(rows) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a toy corpus and a tiny random encoder")
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--per-class", default="10,50")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--dev-size", type=int, default=2000, help="dev documents a split")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        help="the draws of unknown classes and texts (1: other draws than the committed test studies' seed 0; 0: "
        "the test studies' unknown classes, to tell their classes from their test documents)",
    )
    parser.add_argument("--out", default=None, help="keep the study folders here (default: a temporary folder)")
    args = parser.parse_args()

    from lvgp.experiments.executors import InProcessExecutor, ProcessExecutor, limit_threads
    from lvgp.experiments.open_set import OpenSetStudy

    limit_threads(1)
    warnings.simplefilter("ignore")
    root = Path(args.out or tempfile.mkdtemp(prefix="open-set-dev-"))
    root.mkdir(parents=True, exist_ok=True)
    runs = []
    if args.quick:
        toy_corpus(root / "toy.tsv")
        runs.append(("toy", str(root / "toy.tsv"), 1, (5,), 1, 60))
    else:
        from lvgp.datasets.loaders import load_corpus

        for name in args.datasets.split(","):
            corpus = load_corpus(name, "classification")  # its training part only
            path = root / f"{name}-train.tsv"
            if not path.exists():
                clean = [" ".join(t.split()) for t in corpus.train_texts]  # no tab or newline inside a row
                rows = [f"{t}\t{label}" for t, label in zip(clean, corpus.train_labels)]
                path.write_text("\n".join(["text\tlabel", *rows]) + "\n")
            sizes = tuple(int(n) for n in args.per_class.split(","))
            runs.append((name, str(path), UNKNOWN[name], sizes, args.splits, args.dev_size))
    methods = ("gpc-bow-encoder-rbf,tfidf-encoder-logreg,encoder-knn,svm" if args.quick else args.methods).split(",")
    print("| corpus | labelled a class | method | accuracy | " + " | ".join(SCORES) + " |")
    print("|---|---|---|---|" + "---|" * len(SCORES))
    for name, path, unknown, sizes, splits, dev_size in runs:
        study = OpenSetStudy(
            dataset=path,
            unknown_classes=unknown,
            per_class=sizes,
            splits=splits,
            methods=tuple(methods),
            test_size=dev_size,
            ldk_max_iter=5 if args.quick else 50,
            seed=args.seed,
        )
        executor = InProcessExecutor() if args.jobs == 1 or args.quick else ProcessExecutor(args.jobs, threads=1)
        records = study.run(root / name, executor, progress=False)["records"]
        (root / f"{name}.json").write_text(json.dumps(records))
        for n in sizes:
            for m in methods:
                rows = [r for r in records if r["method"] == m and r["per_class"] == n]
                if not rows:
                    continue
                cells = []
                for kind in SCORES:
                    values = [r["scores"][kind]["oos_auroc"] for r in rows if kind in r["scores"]]
                    mark = "*" if rows[0]["novelty_score"] == kind else ""
                    cells.append(f"{np.mean(values):.3f}{mark}" if values else "–")
                accuracy = np.mean([r["accuracy"] for r in rows])
                print(f"| {name} | {n} | {m} | {accuracy:.3f} | " + " | ".join(cells) + " |")
    print("\nAUROC of out-of-scope dev documents, mean over the splits; * the method's own score (its default)")


SCORES = (
    "entropy",
    "max-probability",
    "variance",
    "energy",
    "entropy-variance",
    "max-decision",
    "mahalanobis",
    "nearest-cosine",
)

if __name__ == "__main__":
    main()
