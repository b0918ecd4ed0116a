"""Platt's probabilities for SVMs on a precomputed kernel: LIBSVM's ``SVC(probability=True)`` (deprecated in
scikit-learn 1.9, removed in 1.11; the reference, while it is there) against ``lvgp.base.platt``, the same
algorithm written out (what ``LatentSMMClassifier.predict_proba`` now uses), in one run, one thread.

Each row times the whole path on one Gram: the machine(s) on all training documents, the cross-validated decision
values, the sigmoids, the test documents' probabilities; it prints both codes' seconds and their ratio, and how far
the probabilities are apart (other random folds: close, not equal) -- the largest and the mean absolute difference,
the share of test documents with the same most probable class, and each code's test log loss.

    python benchmarks/platt_scaling.py                  # benchmarks/README.md, "platt_scaling.py"
    python benchmarks/platt_scaling.py --dataset r8     # adds a Gram of r8's tf-idf vectors (the data cache)
    python benchmarks/platt_scaling.py --quick          # small sizes, seconds: the tests'
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from sklearn.svm import SVC

from lvgp.base.platt import platt_probabilities, platt_sigmoids


def clusters(k: int, per_class: int, dim: int, seed: int):
    """Training and test Grams (RBF) of points around one centre a class, and the codes."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim)) * 1.2
    codes = np.repeat(np.arange(k), per_class)
    test_codes = np.repeat(np.arange(k), 10)
    train, test = (
        centres[codes] + rng.normal(size=(len(codes), dim)),
        centres[test_codes] + rng.normal(size=(10 * k, dim)),
    )

    def rbf(a, b):
        return np.exp(-0.05 * ((a[:, None] - b[None]) ** 2).sum(-1))

    return rbf(train, train), rbf(test, train), codes, test_codes


def tfidf_grams(dataset: str, per_class: int, seed: int):
    """Linear Grams of L2-normalized tf-idf vectors: ``per_class`` training texts a class, the whole test split."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from lvgp.datasets import load_text_classification

    data = load_text_classification(dataset)
    classes, labels = np.unique(data.train_labels, return_inverse=True)
    rng = np.random.default_rng(seed)
    rows = np.concatenate(
        [
            rng.choice(np.flatnonzero(labels == c), min(per_class, (labels == c).sum()), replace=False)
            for c in range(len(classes))
        ]
    )
    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2)
    train = vectorizer.fit_transform([data.train_texts[i] for i in rows])
    test = vectorizer.transform(data.test_texts)
    test_codes = np.searchsorted(classes, data.test_labels)
    return (train @ train.T).toarray(), (test @ train.T).toarray(), labels[rows], test_codes


def libsvm(gram, cross, codes, scheme):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if scheme == "ovr":
            columns = [
                SVC(kernel="precomputed", probability=True, random_state=0)
                .fit(gram, codes == c)
                .predict_proba(cross)[:, 1]
                for c in range(codes.max() + 1)
            ]
            proba = np.stack(columns, axis=1)
            return proba / proba.sum(1, keepdims=True)
        return SVC(kernel="precomputed", probability=True, random_state=0).fit(gram, codes).predict_proba(cross)


def written_out(gram, cross, codes, scheme):
    if scheme == "ovr":
        values = np.stack(
            [SVC(kernel="precomputed").fit(gram, codes == c).decision_function(cross) for c in range(codes.max() + 1)],
            axis=1,
        )
    else:
        values = SVC(kernel="precomputed", decision_function_shape="ovo").fit(gram, codes).decision_function(cross)
        values = -values[:, None] if scheme == "binary" else values  # positive for class 0
    return platt_probabilities(values, platt_sigmoids(gram, codes, scheme, C=1.0, tol=1e-3), scheme)


def timed(function, *args, repeats: int):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = function(*args)
        best = min(best, time.perf_counter() - start)
    return out, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (the tests' smoke run)")
    parser.add_argument("--dataset", default=None, help="also a Gram of this corpus's tf-idf vectors (e.g. r8)")
    parser.add_argument("--repeats", type=int, default=3, help="each timing's best of this many runs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    has_libsvm = "probability" in SVC().get_params()
    cells = [(2, 20, 4), (4, 15, 4)] if args.quick else [(2, 100, 10), (8, 50, 10), (20, 20, 20), (20, 100, 20)]
    grams = [(f"clusters k={k}, {k * per} docs", clusters(k, per, dim, seed=0)) for k, per, dim in cells]
    if args.dataset:
        grams.append((f"{args.dataset} tf-idf, 50 a class", tfidf_grams(args.dataset, 50, seed=0)))
    repeats = 1 if args.quick else args.repeats
    header = ["Gram", "scheme", "LIBSVM s", "written out s", "ratio", "max / mean abs diff", "same class"]
    print("| " + " | ".join([*header, "log loss LIBSVM / lvgp"]) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (gram, cross, codes, test_codes) in grams:
        for scheme in ["binary"] if codes.max() == 1 else ["ovo", "ovr"]:
            ours, ours_s = timed(written_out, gram, cross, codes, scheme, repeats=repeats)
            rows = np.arange(len(test_codes))
            ours_loss = -np.log(ours[rows, test_codes]).mean()
            if not has_libsvm:
                print(f"| {name} | {scheme} | - | {ours_s:.3f} | - | - | - | - / {ours_loss:.3f} |")
                continue
            reference, reference_s = timed(libsvm, gram, cross, codes, scheme, repeats=repeats)
            diff = np.abs(ours - reference)
            print(
                f"| {name} | {scheme} | {reference_s:.3f} | {ours_s:.3f} | {ours_s / reference_s:.2f}x "
                f"| {diff.max():.3f} / {diff.mean():.4f} | {np.mean(ours.argmax(1) == reference.argmax(1)):.3f} "
                f"| {-np.log(reference[rows, test_codes]).mean():.3f} / {ours_loss:.3f} |"
            )
    if not has_libsvm:
        print("scikit-learn without SVC(probability=True): the written-out code alone")
    print("Platt's probabilities: LIBSVM's against written out, in one run")


if __name__ == "__main__":
    main()
