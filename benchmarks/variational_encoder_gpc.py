"""The GP classifier with a sentence encoder beside its words, by the variational inference against the
Dirichlet one: the classification study's ``bow-gpc-encoder`` (the cosine of the tf-idf vectors plus mu
times the cosine of MiniLM's vectors), built as the study builds it with ``--gpc-inference dirichlet``
(the Dirichlet fit, its evidence of a stratified subset beyond 2,000 documents, its temperature of the
closed-form leave-one-out predictions) and ``--gpc-inference variational`` (softmax SVGPs on 128 inducing
documents, the estimator's own optimizer; tempered by the ``T`` of early stopping's held-out texts, whose fit
also chooses the epochs), and the variational classifier untempered (no early stopping), in one run on the
same documents.

Each row: a stratified sample of ``n`` texts of the corpus's training part (the texts as written: the
encoder reads them), scored on 2,000 *other* training-part texts (never the test split): accuracy, log
loss, ECE (15 bins), the fit's and the predictions' seconds, and the fit's seconds over the first row's (the
Dirichlet fit by default; measured in the same run, on the same threads). Every text is encoded first (its seconds
printed) and read from the encoder's cache by the fits (``encode s``: those reads, in neither fit's column).

    python benchmarks/variational_encoder_gpc.py [--datasets 20ng,r8] [--sizes 1000,4000,9000] [--threads 2]
    python benchmarks/variational_encoder_gpc.py --quick     # a tiny random encoder and made-up texts, seconds
    python benchmarks/variational_encoder_gpc.py --datasets 20ng --sizes 4000 --batch-size 1024 --max-epochs 40
    python benchmarks/variational_encoder_gpc.py --datasets 20ng --sizes 4000 --seed 1 --rows full-batch,untempered
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _threads import add_threads_option, resolve_threads  # noqa: E402

#: the rows of a cell: key (``--rows``) -> (name, ``--gpc-inference``, how the row differs from the study's
#: classifier); ``full-batch``: the variational default before Rule 37 (``benchmarks/README.md``), every text a
#: step for at most 200 epochs
ROWS = {
    "dirichlet": ("dirichlet", "dirichlet", {}),
    "untempered": ("variational, untempered", "variational", {"calibration": None, "early_stopping": False}),
    "tempered": ("variational, T from early stopping's held-out texts", "variational", {}),
    "full-batch": (
        "variational, untempered, full batches (200 epochs at most)",
        "variational",
        {"calibration": None, "early_stopping": False},
    ),
}


def classifier(dataset: str, inference: str, **changes):
    """``bow-gpc-encoder`` as the classification study builds it, with ``--gpc-inference inference``."""
    from lvgp.experiments.classification import ClassificationStudy, _bow_gpc_encoder

    study = ClassificationStudy(dataset=dataset, min_df_fraction=0.01, gpc_inference=inference)
    return _bow_gpc_encoder(study, {"split": 0}, None).set_params(random_state=0, **changes)


def raw_documents(dataset: str, size: int, n_dev: int, seed: int = 0):
    """A stratified sample of ``size`` texts of the corpus's training part and ``n_dev`` others (as written)."""
    from lvgp.datasets import load_corpus
    from lvgp.experiments.classification import stratified_sample

    corpus = load_corpus(dataset, "classification")
    texts, labels = corpus.train_texts, np.asarray(corpus.train_labels)
    rng = np.random.default_rng([seed, size, 11])
    train = stratified_sample(labels, min(size, len(labels) - n_dev), rng)
    rest = rng.choice(np.setdiff1d(np.arange(len(labels)), train), n_dev, replace=False)
    return [texts[i] for i in train], labels[train], [texts[i] for i in rest], labels[rest]


def quick_documents(n: int = 240, seed: int = 0):
    """Three classes of short made-up texts (``encoder_design.py``'s), 160 to fit and the rest scored, and the
    words of a tiny encoder (``--quick``)."""
    from encoder_design import quick_texts

    texts, labels, words = quick_texts(n, seed)
    return (texts[:160], labels[:160], texts[160:], labels[160:]), words


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny random encoder and 160 made-up texts")
    parser.add_argument("--datasets", default="20ng,r8")
    parser.add_argument("--sizes", default="1000,4000,9000")
    parser.add_argument("--dev", type=int, default=2000, help="scored texts of the training part, not sampled")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="the variational rows' mini-batches (default: the estimator's)"
    )
    parser.add_argument(
        "--max-epochs", type=int, default=None, help="the variational rows' epochs (default: the estimator's)"
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, help="the variational rows' steps (default: the estimator's)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the draw of each cell's sample and scored texts")
    parser.add_argument(
        "--rows", default="dirichlet,untempered,tempered", help=f"which rows, in order: {', '.join(ROWS)}"
    )
    add_threads_option(parser)
    args = parser.parse_args(argv)
    rows = args.rows.split(",")
    if unknown := [r for r in rows if r not in ROWS]:
        parser.error(f"--rows: unknown {unknown}; take from {list(ROWS)}")
    resolve_threads(args)
    with contextlib.ExitStack() as scratch:  # --quick's cache folder, removed at the end
        from lvgp import MiniBatch
        from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins
        from lvgp.encoders import sentence
        from lvgp.experiments.executors import limit_threads

        limit_threads(args.threads)
        warnings.simplefilter("ignore")
        if args.quick:
            from _quick_encoder import quick_encoder

            data, words = quick_documents()
            quick_encoder(scratch, words)  # its encodings in a folder removed at exit
            cells = [("synthetic", data)]
        else:
            sizes = [int(s) for s in args.sizes.split(",")]
            cells = [(d, raw_documents(d, s, args.dev, args.seed)) for d in args.datasets.split(",") for s in sizes]
        print(f"{args.threads} thread(s); bow-gpc-encoder (the classification study's), scored on other training texts")
        print(
            "| corpus | texts | classifier | accuracy | log loss | ECE | fit s | predict s | encode s | "
            "epochs or L-BFGS iterations | fit s over the first row's |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for dataset, (x_train, y_train, x_dev, y_dev) in cells:
            start = time.perf_counter()  # every text encoded (or read from the cache) before the timings
            sentence.shared_encoder("all-MiniLM-L6-v2").encode(list(x_train) + list(x_dev))
            print(f"{dataset}, {len(y_train):,} texts: encoded in {time.perf_counter() - start:.1f} s", flush=True)
            reference = None
            for key in rows:
                name, inference, changes = ROWS[key]
                model = classifier("r8" if args.quick else dataset, inference, **changes)
                if key == "full-batch":
                    model.set_params(optimizer=MiniBatch(batch_size=len(y_train), max_epochs=200))
                elif inference == "variational" and (args.batch_size or args.max_epochs or args.max_steps):
                    given = {"batch_size": args.batch_size, "max_epochs": args.max_epochs, "max_steps": args.max_steps}
                    model.set_params(optimizer=MiniBatch(**given))
                start = time.perf_counter()
                model.fit(x_train, y_train)
                fit = time.perf_counter() - start - model.encode_seconds_
                encode = model.encode_seconds_
                start = time.perf_counter()
                proba = model.predict_proba(x_dev)
                predict = time.perf_counter() - start
                reference = fit if reference is None else reference
                accuracy = float(np.mean(model.classes_[proba.argmax(1)] == y_dev))
                loss = log_loss(proba, model.classes_, y_dev)
                ece = expected_calibration_error(reliability_bins(proba, model.classes_, y_dev))
                print(
                    f"| {dataset} | {len(y_train):,} | {name} | {accuracy:.3f} | {loss:.3f} | {ece:.3f} | "
                    f"{fit:.1f} | {predict:.1f} | {encode:.1f} | {model.n_iter_} | {fit / reference:.2f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
