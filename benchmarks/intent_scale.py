"""The shared Dirichlet GP classifier at an intent set's sizes (issues 56-57): 150 classes of short
queries, 10 and 100 labelled a class (1,500 and 15,000 documents), the hyper-parameters from the
evidence of every document or of a stratified subset (``max_evidence_documents``, the studies'
``GPC_EVIDENCE_DOCUMENTS``), the posterior on all.

The queries are synthetic (no intent set is at hand here): each class has three keywords of its own,
a query two or three of them (one in five from another class) among three to six words shared by
all classes; out-of-scope queries hold shared and unseen words only. What is measured is the cost of a
cell -- the fit (kernel, L-BFGS on the evidence, the posterior and the temperature's leave-one-out
predictions on all documents), the prediction of the test queries -- and its peak memory, with the
classifier the open-set study's ``gpc-bow`` builds (the cosine of the tf-idf vectors); the accuracy
and the out-of-scope AUROC of the toy data are printed as a check, not as results.

    python benchmarks/intent_scale.py                 # 10 and 100 a class, the subset of 2,000, and all at 10
    python benchmarks/intent_scale.py --inference laplace --per-class 10 --subset 300 --all-up-to 0
    python benchmarks/intent_scale.py --quick         # 12 classes, seconds
    python benchmarks/intent_scale.py --study-files runs/intents   # the open-set study's TSVs of these queries
    python benchmarks/intent_scale.py --device cuda --all-up-to 15000   # on a GPU, the whole evidence at 15,000 too
    python benchmarks/intent_scale.py --encoder --inference variational --per-class 100   # MiniLM beside the words
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np
from _threads import add_threads_option, resolve_threads


def word(prefix: str, i: int) -> str:
    """A made-up word of letters only (the vocabulary's tokens): ``prefix`` and ``i`` in base 26."""
    letters = ""
    while True:
        i, r = divmod(i, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[r]
        if i == 0:
            return prefix + letters


def queries(n_classes: int, per_class: int, seed: int) -> tuple[list[str], np.ndarray]:
    """``per_class`` synthetic queries of each of ``n_classes`` classes (labels ``0 .. n_classes - 1``)."""
    rng = np.random.default_rng(seed)
    shared = [word("com", i) for i in range(300)]
    texts, labels = [], []
    for c in range(n_classes):
        for _ in range(per_class):
            own = list(rng.choice([word("key", 3 * c + j) for j in range(3)], rng.integers(2, 4), replace=False))
            if rng.random() < 0.2:
                own[0] = word("key", 3 * int(rng.integers(n_classes)) + int(rng.integers(3)))
            words = own + list(rng.choice(shared, rng.integers(3, 7)))
            texts.append(" ".join(rng.permutation(words)))
            labels.append(c)
    return texts, np.asarray(labels)


def out_of_scope(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    shared = [word("com", i) for i in range(300)]
    return [
        " ".join(list(rng.choice(shared, rng.integers(3, 7))) + [word("new", int(rng.integers(10**6)))])
        for _ in range(n)
    ]


def write_study_files(folder: str, n_classes: int, per_class: int) -> tuple[str, str]:
    """The open-set study's two TSVs of these queries (``text``, ``label``): ``train.tsv``, ``per_class`` queries a
    class (labels ``intent0`` ...) and 100 out-of-scope ones labelled ``oos``; ``test.tsv``, 30 a class and 1,000
    ``oos``. Returns their paths (``lvgp compare open-set --dataset train.tsv --test-dataset test.tsv
    --unknown-label oos``; ``benchmarks/README.md``, "the whole open-set study at these sizes")."""
    from pathlib import Path

    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (texts, labels), unknown in (
        ("train.tsv", queries(n_classes, per_class, seed=1), out_of_scope(100, seed=3)),
        ("test.tsv", queries(n_classes, 30, seed=2), out_of_scope(1000, seed=4)),
    ):
        rows = [f"{t}\tintent{c}" for t, c in zip(texts, labels)] + [f"{t}\toos" for t in unknown]
        (root / name).write_text("\n".join(["text\tlabel", *rows]) + "\n")
        paths.append(str(root / name))
    return paths[0], paths[1]


def device_name(device: str) -> str:
    """`` (NVIDIA H100 80GB HBM3)`` for a CUDA device, else empty."""
    import torch

    return f" ({torch.cuda.get_device_name(torch.device(device))})" if device.startswith("cuda") else ""


def device_peak_gib(device: str) -> str:
    """The GPU memory's peak since the last call (GiB, allocated by torch), ``-`` on a CPU."""
    import torch

    if not device.startswith("cuda"):
        return "-"
    peak = torch.cuda.max_memory_allocated(torch.device(device)) / 2**30
    torch.cuda.reset_peak_memory_stats(torch.device(device))
    return f"{peak:.1f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--classes", type=int, default=150)
    parser.add_argument("--per-class", default="10,100")
    add_threads_option(parser)
    parser.add_argument(
        "--all-up-to", type=int, default=1500, help="also fit with the evidence of all documents up to this n"
    )
    parser.add_argument("--inference", choices=("dirichlet", "laplace", "variational"), default="dirichlet")
    parser.add_argument(
        "--encoder",
        action="store_true",
        help="MiniLM beside the words: the tf-idf cosine plus mu times the encoder's cosine (the studies' "
        "bow-gpc-encoder kernel; the queries encoded once before the fits)",
    )
    parser.add_argument("--batch-size", type=int, default=1024, help="the variational inference's mini-batches")
    parser.add_argument("--max-epochs", type=int, default=20, help="the variational inference's epochs")
    parser.add_argument(
        "--subset", type=int, default=None, help="max_evidence_documents (default: the studies', 2,000; Laplace 500)"
    )
    parser.add_argument("--no-predict", action="store_true", help="fit only (the predict and test columns empty)")
    parser.add_argument(
        "--predict-samples", type=int, default=256, help="the expected softmax's nodes (predict_samples; default 256)"
    )
    parser.add_argument("--device", default="cpu", help="the classifier's device (cpu, cuda); peak GiB: the host's")
    parser.add_argument(
        "--study-files",
        metavar="FOLDER",
        default=None,
        help="write the open-set study's train.tsv and test.tsv of these queries there (the largest --per-class a "
        "class) and print the study's command; nothing is fitted",
    )
    args = parser.parse_args(argv)
    resolve_threads(args)
    if args.study_files is not None:
        train, test = write_study_files(args.study_files, args.classes, max(int(s) for s in args.per_class.split(",")))
        print(
            f"lvgp compare open-set --dataset {train} --test-dataset {test} --unknown-label oos "
            f"--per-class {args.per_class} --splits 1 --threads {args.threads} --jobs 1 --out runs/intent-scale"
        )
        return 0
    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    import torch
    from gpu import sync  # (the sibling script: benchmarks/ is on the path)
    from sklearn.metrics import roc_auc_score

    from lvgp import LBFGS, BagOfWordsSpec, LDKGPClassifier, MiniBatch
    from lvgp.base.metrics import expected_calibration_error, reliability_bins
    from lvgp.experiments.classification import (
        GPC_EVIDENCE_DOCUMENTS,
        LAPLACE_EVIDENCE_DOCUMENTS,
        PLUS_GPC_MAX_ITER,
    )
    from lvgp.experiments.open_set import _tfidf_cosine

    studies = LAPLACE_EVIDENCE_DOCUMENTS if args.inference == "laplace" else GPC_EVIDENCE_DOCUMENTS
    subset = studies if args.subset is None else args.subset
    n_classes, sizes = args.classes, [int(s) for s in args.per_class.split(",")]
    if args.quick:
        n_classes, sizes, subset = 12, [5, 20], 100
    test_x, test_y = queries(n_classes, 30, seed=1)
    oos = out_of_scope(1000 if not args.quick else 60, seed=2)
    variational = args.inference == "variational"
    if args.encoder:
        from lvgp.encoders import shared_encoder

        start = time.perf_counter()  # every query encoded (cached) before the timings
        shared_encoder("all-MiniLM-L6-v2").encode(
            [t for s in sizes for t in queries(n_classes, s, seed=0)[0]] + test_x + oos
        )
        print(f"the queries encoded in {time.perf_counter() - start:.1f} s")
    print(
        f"{args.inference}; {n_classes} classes; {len(test_x):,} in-scope and {len(oos):,} out-of-scope test queries; "
        f"{args.threads} thread(s); device {args.device}{device_name(args.device)}; "
        f"{args.predict_samples} softmax nodes a class"
        + ("; MiniLM beside the words" if args.encoder else "")
        + (f"; batches of {args.batch_size:,}, {args.max_epochs} epochs, untempered" if variational else "")
    )
    print(
        "| a class | documents | evidence of | L-BFGS iterations (variational: epochs) | the last mode's Newton steps "
        "| fit s | predict s | peak GiB | GPU peak GiB | accuracy | ECE | OOS AUROC |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for per_class in sizes:
        x, y = queries(n_classes, per_class, seed=0)
        evidence = ([None] if len(y) <= args.all_up_to else []) + ([subset] if len(y) > subset else [])
        for m in [None] if variational else evidence:
            model = LDKGPClassifier(
                BagOfWordsSpec() if args.encoder else _tfidf_cosine,
                inference=args.inference,
                class_hyperparameters="shared",
                alpha_epsilon=1e-6,
                calibration="temperature" if args.inference == "dirichlet" else None,
                optimizer=(
                    MiniBatch(batch_size=args.batch_size, max_epochs=args.max_epochs)
                    if variational
                    else LBFGS(max_iter=PLUS_GPC_MAX_ITER)
                ),
                sentence_encoder="all-MiniLM-L6-v2" if args.encoder else None,
                max_evidence_documents=m,
                random_state=0,
                device=args.device,
                predict_samples=args.predict_samples,
            )
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(x, y)
                sync(torch.device(args.device))  # the device's queued kernels, a GPU's timings
                fit_seconds = time.perf_counter() - start
                start = time.perf_counter()
                proba = None if args.no_predict else model.predict_proba(test_x + oos)
                predict_seconds = time.perf_counter() - start
            accuracy = auroc = ece = float("nan")
            if proba is None:
                predict_seconds = float("nan")
            else:
                accuracy = float(np.mean(model.classes_[proba[: len(test_x)].argmax(1)] == test_y))
                ece = expected_calibration_error(reliability_bins(proba[: len(test_x)], model.classes_, test_y))
                entropy = -(proba * np.log(np.maximum(proba, 1e-300))).sum(1)
                auroc = roc_auc_score(np.r_[np.zeros(len(test_x)), np.ones(len(oos))], entropy)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            device_peak = device_peak_gib(args.device)
            what = "-" if variational else "all" if m is None else f"{m:,}"
            newton = model.model_.last_search[0] if args.inference == "laplace" else "-"
            print(
                f"| {per_class} | {len(y):,} | {what} | {model.n_iter_} | {newton} | {fit_seconds:.1f} | {predict_seconds:.1f} | "
                f"{peak:.1f} | {device_peak} | {accuracy:.3f} | {ece:.3f} | {auroc:.3f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
