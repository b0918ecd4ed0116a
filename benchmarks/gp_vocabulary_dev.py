"""The vocabulary of the GP's word part beside the encoder (issue 56: "give the GP's word parts whatever
vocabulary wins on dev"), chosen on dev documents.

``bow-gpc-encoder`` as the classification study builds it (the cosine of the tf-idf vectors plus mu
times the encoder's cosine, the Dirichlet inference with its temperature, shared class
hyper-parameters), its word part reading:

* ``lvgp``: the study's vocabulary, ``Vocabulary(min_df=1%)`` (scikit-learn's English stop words and
  tokens under three letters out);
* ``negations``: the same but the negations kept (``stop_words=ENGLISH_STOP_WORDS_BUT_NEGATIONS``) and
  tokens of two letters (the tf-idf baseline's choice, ``tfidf_baseline_dev.py``).

Dev documents, samples and encoder as ``tfidf_baseline_dev.py`` (1,000 documents of the training part
drawn for no labelled sample; the test sets never read).

    python benchmarks/gp_vocabulary_dev.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200,500] [--samples 3]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def vocabulary(variant: str):
    """The word part's unfitted vocabulary of ``variant`` (module docstring)."""
    from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS, Vocabulary

    if variant == "lvgp":
        return Vocabulary(min_df=0.01)
    return Vocabulary(min_df=0.01, stop_words=sorted(ENGLISH_STOP_WORDS_BUT_NEGATIONS), min_token_len=2)


def classifier(dataset: str, variant: str, encoder, quick: bool):
    """``bow-gpc-encoder`` as the study builds it, its word part reading ``variant``'s vocabulary."""
    from lvgp import LBFGS
    from lvgp.experiments.classification import ClassificationStudy, _bag_of_words_beside_encoder, _ldk_gpc_plus

    study = ClassificationStudy(dataset=dataset, min_df_fraction=0.01)
    model = _ldk_gpc_plus(study, {"split": 0}, None).set_params(random_state=0)
    model.set_params(kernel=_bag_of_words_beside_encoder(encoder.dim), sentence_encoder=encoder)
    model.set_params(vocabulary=vocabulary(variant))
    if quick:
        model.set_params(optimizer=LBFGS(max_iter=5))
    return model


def main(argv=None) -> int:
    from tfidf_baseline_dev import bench_encoder, dev_split

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="r8 at 50 documents, one sample, 100 dev documents, a tiny random encoder"
    )
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--sizes", default="50,100,200,500")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--threads", type=int, default=2, help="torch's threads")
    args = parser.parse_args(argv)
    from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins
    from lvgp.encoders import sentence
    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    datasets, sizes, samples, n_dev = (
        args.datasets.split(","),
        [int(s) for s in args.sizes.split(",")],
        args.samples,
        1000,
    )
    if args.quick:
        datasets, sizes, samples, n_dev = ["r8"], [50], 1, 100
    encoder, _ = bench_encoder(args.encoder, args.quick)
    if args.quick:  # the tiny encoder wherever the classifier resolves one (nothing downloaded)
        sentence.shared_encoder = lambda name="x", device="cpu": encoder  # noqa: ARG005
    print("| corpus | documents | word part's vocabulary | dev accuracy | log loss | ECE | fit s |")
    print("|---|---|---|---|---|---|---|")
    for dataset in datasets:
        scores: dict[tuple[int, str], list] = {}
        for split in range(samples):
            texts, labels, drawn, dev = dev_split(dataset, split, sizes, n_dev)
            x_dev, y_dev = [texts[i] for i in dev], labels[dev]
            for size, train in drawn.items():
                for variant in ("lvgp", "negations"):
                    model = classifier(dataset, variant, encoder, args.quick)
                    start = time.perf_counter()
                    model.fit([texts[i] for i in train], labels[train])
                    seconds = time.perf_counter() - start
                    proba = model.predict_proba(x_dev)
                    accuracy = float(np.mean(model.classes_[proba.argmax(1)] == y_dev))
                    ece = expected_calibration_error(reliability_bins(proba, model.classes_, y_dev))
                    scores.setdefault((size, variant), []).append(
                        (accuracy, log_loss(proba, model.classes_, y_dev), ece, seconds)
                    )
        for (size, variant), rows in scores.items():
            a, b, c, d = np.mean(rows, axis=0)
            print(f"| {dataset} | {size} | {variant} | {a:.3f} | {b:.3f} | {c:.3f} | {d:.1f} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
