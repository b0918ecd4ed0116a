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

``--regression amazon-snippets,movie-snippets``: ``gplvsm-encoder`` as the regression study builds it
(the sum of its parts, no part selection), its word part reading the same two vocabularies fitted on
the study's training sentences (``min_df=2``), scored by RMSE and NLPD on the study's 1,000 dev
sentences of each split (sentiment: where the negations are words that matter).

    python benchmarks/gp_vocabulary_dev.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200,500] [--samples 3]
    python benchmarks/gp_vocabulary_dev.py --datasets '' --regression amazon-snippets [--splits 5]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def vocabulary(variant: str, min_df: int | float = 0.01):
    """The word part's unfitted vocabulary of ``variant`` (module docstring)."""
    from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS, Vocabulary

    if variant == "lvgp":
        return Vocabulary(min_df=min_df)
    return Vocabulary(min_df=min_df, stop_words=sorted(ENGLISH_STOP_WORDS_BUT_NEGATIONS), min_token_len=2)


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
    from tfidf_baseline_dev import bench_encoder, dev_scores, dev_split, encoder_dev_grid, encoder_dev_parser

    parser = encoder_dev_parser(__doc__, "r8 at 50 documents, one sample, 100 dev documents, a tiny random encoder")
    parser.add_argument("--regression", default="", help="regression corpora, comma-separated")
    parser.add_argument("--splits", type=int, default=5, help="the regression study's splits")
    args = parser.parse_args(argv)
    from lvgp.encoders import sentence

    datasets, sizes, samples, n_dev = encoder_dev_grid(args, 100)
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
                    scores.setdefault((size, variant), []).append((*dev_scores(proba, model.classes_, y_dev), seconds))
        for (size, variant), rows in scores.items():
            a, b, c, d = np.mean(rows, axis=0)
            print(f"| {dataset} | {size} | {variant} | {a:.3f} | {b:.3f} | {c:.3f} | {d:.1f} |")
        sys.stdout.flush()
    if args.regression:
        regression([d for d in args.regression.split(",") if d], args.splits)
    return 0


def regression(datasets: list[str], splits: int) -> None:
    """``gplvsm-encoder``'s word part on each vocabulary, scored on the study's dev sentences."""
    from lvgp.experiments.regression import RegressionStudy, prepare_split
    from lvgp.models.regressor import GPLVSMRegressor

    print("\n| corpus | word part's vocabulary | dev RMSE | dev NLPD | fit s |")
    print("|---|---|---|---|---|")
    for dataset in datasets:
        study = RegressionStudy(dataset=dataset, train_size=1000, dev_size=1000, splits=splits)
        scores: dict[str, list] = {}
        for split in range(splits):
            data = prepare_split(study, split)
            for variant in ("lvgp", "negations"):
                vocab = vocabulary(variant, study.min_df)
                model = GPLVSMRegressor(
                    vocabulary=vocab, sentence_encoder=study.encoder, random_state=study.cell_seed({"split": split})
                )
                start = time.perf_counter()
                model.fit(data.train_texts, data.y_train)
                seconds = time.perf_counter() - start
                mean, std = model.predict(data.dev_texts, return_std=True)
                rmse = float(np.sqrt(np.mean((mean - data.y_dev) ** 2)))
                nlpd = float(np.mean(0.5 * np.log(2 * np.pi * std**2) + 0.5 * ((data.y_dev - mean) / std) ** 2))
                scores.setdefault(variant, []).append((rmse, nlpd, seconds))
        for variant, rows in scores.items():
            a, b, c = np.mean(rows, axis=0)
            print(f"| {dataset} | {variant} | {a:.4f} | {b:.4f} | {c:.0f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
