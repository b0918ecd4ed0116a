"""Which tf-idf goes beside the encoder's vectors in ``tfidf-encoder-logreg`` (issue 56): chosen on dev.

The issue measured the study's ``tfidf-encoder-logreg`` below scikit-learn's standard pipeline on the
same texts (``TfidfVectorizer(sublinear_tf=True)`` on the raw text, L2-normalized, beside the vectors, C
by CV on the log loss): lvgp's default ``Vocabulary`` drops stop words (negations among them), tokens
under three letters, and weighs raw counts. Each row here changes one of those, scored on **dev
documents**: 1,000 documents of the corpus's training part drawn for no labelled sample of the split
(labels read for scoring only; the test split is never read). The encoder's vectors, C's grid, the
3-fold stratified CV on the log loss and the samples are the study's.

Variants of the tf-idf part:

* ``lvgp``: the study's before this benchmark -- ``Vocabulary(min_df=1%)`` counts (stop words and
  one- and two-letter tokens dropped), ``TfidfTransformer()``;
* ``sublinear``: ``TfidfVectorizer(sublinear_tf=True)`` (scikit-learn's tokens, every word);
* ``sublinear-cut``: the same with the study's cut (classification: ``min_df=0.01``; regression: 2);
* ``sublinear-stop``: the same with ``stop_words="english"``;
* ``sublinear-stop-negations``: the same with scikit-learn's stop words less the negations
  (``lvgp.bow.vocabulary.NEGATIONS``: not, no, nor, never, nothing, ...);
* ``sublinear-bigrams``: ``ngram_range=(1, 2)``, ``min_df=2``.

Regression (``--regression amazon-snippets,movie-snippets``, sentiment, where negations are words that
matter): ``tfidf-encoder-ridge``'s features, the regression study's splits (1,000 training sentences);
its 1,000 dev sentences halved, alpha chosen on the first half by RMSE, the second half scored.

    python benchmarks/tfidf_baseline_dev.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200,500] [--samples 3]
        [--regression amazon-snippets,movie-snippets] [--splits 5]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

#: the tf-idf variants (module docstring): name -> TfidfVectorizer's arguments (None: lvgp's Vocabulary)
VARIANTS: dict[str, dict | None] = {
    "lvgp": None,
    "sublinear": {"sublinear_tf": True},
    "sublinear-cut": {"sublinear_tf": True, "min_df": 0.01},
    "sublinear-stop": {"sublinear_tf": True, "stop_words": "english"},
    "sublinear-stop-negations": {"sublinear_tf": True, "stop_words": "english-negations"},
    "sublinear-bigrams": {"sublinear_tf": True, "ngram_range": (1, 2), "min_df": 2},
}


def tfidf_part(variant: str, train: list[str], others: list[str], cut: int | float = 0.01):
    """The variant's tf-idf of ``train`` (fitted there) and of ``others``; ``cut``: the study's ``min_df``."""
    from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

    from lvgp.bow.vocabulary import Vocabulary

    arguments = VARIANTS[variant]
    if arguments is None:
        vocabulary = Vocabulary(min_df=cut).fit(train)
        transformer = TfidfTransformer().fit(vocabulary.counts(train))
        return transformer.transform(vocabulary.counts(train)), transformer.transform(vocabulary.counts(others))
    if arguments.get("stop_words") == "english-negations":
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        from lvgp.bow.vocabulary import NEGATIONS

        arguments = {**arguments, "stop_words": sorted(ENGLISH_STOP_WORDS - NEGATIONS)}
    if "min_df" in arguments and arguments["min_df"] == 0.01:  # "the study's cut"
        arguments = {**arguments, "min_df": cut}
    vectorizer = TfidfVectorizer(**arguments).fit(train)
    return vectorizer.transform(train), vectorizer.transform(others)


def logistic_regression(features, y, seed: int, cs=None):
    """The study's: C in ``cs`` (default ``ENCODER_CS``) by stratified 3-fold CV on the log loss
    (:func:`lvgp.baselines.encoder.logistic_regression_cv`, what ``EncoderLogisticRegression`` fits)."""
    from lvgp.baselines.encoder import logistic_regression_cv
    from lvgp.experiments.classification import ENCODER_CS

    return logistic_regression_cv(features, y, ENCODER_CS if cs is None else cs, seed)


def bench_encoder(name: str, quick: bool):
    """The encoder ``name`` (``--quick``: a tiny random BERT on the words of r8's first sample, nothing
    downloaded) and whether its vectors go to the on-disk cache (not the tiny model's)."""
    from lvgp.encoders import SentenceEncoder, resolve_encoder

    if not quick:
        return resolve_encoder(name, "cpu"), True
    from lvgp.bow.vocabulary import Vocabulary

    texts, _, drawn, _ = dev_split("r8", 0, [50], 10)
    words = Vocabulary(max_features=500).fit([texts[i] for i in drawn[50]]).words
    return SentenceEncoder.from_config({"hidden_size": 16, "intermediate_size": 32}, words=words, seed=0), False


def dev_split(dataset: str, split: int, sizes: list[int], n_dev: int):
    """The split's samples (one a size) and ``n_dev`` documents of the training part in none of them."""
    from lvgp.experiments.classification import ClassificationStudy, _sample

    study = ClassificationStudy(dataset=dataset, min_df_fraction=0.01)
    samples, texts, labels = {}, None, None
    for size in sizes:
        _, texts, labels, train, _ = _sample(study, split, size)
        samples[size] = train
    used = np.unique(np.concatenate(list(samples.values())))
    rest = np.setdiff1d(np.arange(len(labels)), used)
    dev = np.random.default_rng([split, 7]).choice(rest, min(n_dev, len(rest)), replace=False)
    return texts, np.asarray(labels), samples, dev


def concatenation_dev_cells(
    dataset: str, samples: int, sizes: list[int], n_dev: int, encoder, cache: bool, variant: str
):
    """The cells of the dev scripts on logistic regression's own features (``laplace_linear_ablation.py``,
    ``softmax_gp_exact.py``): for every sample and size, ``(split, size, f_train, codes, classes, f_dev,
    y_dev)`` with ``f_*`` the dense ``[tf-idf (variant) | encoder]`` features, ``codes`` the training labels'
    indices into ``classes``, ``y_dev`` the dev documents' labels."""
    from scipy import sparse

    for split in range(samples):
        texts, labels, drawn, dev = dev_split(dataset, split, sizes, n_dev)
        needed = np.unique(np.concatenate([dev, *drawn.values()]))
        vectors = dict(zip(needed.tolist(), encoder.encode([texts[i] for i in needed], cache=cache).double().numpy()))
        x_dev, e_dev = [texts[i] for i in dev], np.stack([vectors[i] for i in dev])
        for size, train in drawn.items():
            t_train, t_dev = tfidf_part(variant, [texts[i] for i in train], x_dev)
            f_train = sparse.hstack([t_train, sparse.csr_matrix(np.stack([vectors[i] for i in train]))]).toarray()
            f_dev = sparse.hstack([t_dev, sparse.csr_matrix(e_dev)]).toarray()
            classes, codes = np.unique(labels[train], return_inverse=True)
            yield split, size, f_train, codes, classes, f_dev, labels[dev]


def dev_scores(proba: np.ndarray, classes: np.ndarray, y_dev: np.ndarray) -> tuple[float, float, float]:
    """``(accuracy, log loss, ECE)`` of ``n x C`` probabilities over ``classes`` against the labels ``y_dev``."""
    from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins

    accuracy = float(np.mean(classes[proba.argmax(1)] == y_dev))
    return (
        accuracy,
        log_loss(proba, classes, y_dev),
        expected_calibration_error(reliability_bins(proba, classes, y_dev)),
    )


def samples_dev_parser(description: str, quick_help: str, threads: int = 2) -> argparse.ArgumentParser:
    """The options of the dev scripts on the study's samples (:func:`dev_split`): ``--quick``, ``--datasets``,
    ``--sizes``, ``--samples``, ``--threads`` (default ``threads``); read by :func:`encoder_dev_grid`."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--sizes", default="50,100,200,500")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--threads", type=int, default=threads, help="torch's threads")
    return parser


def encoder_dev_parser(description: str, quick_help: str) -> argparse.ArgumentParser:
    """The options of the dev scripts of issue 56 (this one, ``laplace_linear_ablation.py``,
    ``gp_vocabulary_dev.py``): :func:`samples_dev_parser`'s and ``--encoder``."""
    parser = samples_dev_parser(description, quick_help)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    return parser


def encoder_dev_grid(args: argparse.Namespace, quick_dev: int) -> tuple[list[str], list[int], int, int]:
    """``(datasets, sizes, samples, dev documents)`` of :func:`encoder_dev_parser`'s options (``--quick``:
    r8 at 50 documents, one sample, ``quick_dev`` dev documents, one thread; else 1,000 and ``--threads``);
    the threads set, warnings off."""
    from lvgp.experiments.executors import limit_threads

    limit_threads(1 if args.quick else args.threads)  # --quick: the test suite, one core a worker
    warnings.simplefilter("ignore")
    if args.quick:
        return ["r8"], [50], 1, quick_dev
    return [d for d in args.datasets.split(",") if d], [int(x) for x in args.sizes.split(",")], args.samples, 1000


def main(argv=None) -> int:
    parser = encoder_dev_parser(
        __doc__,
        "r8 at 50 documents, one sample, 200 dev documents, two variants and two C's, one amazon split of 100 "
        "sentences, a tiny random encoder (the code path; its numbers mean nothing)",
    )
    parser.add_argument("--cs", default=None, help="C's grid, comma-separated (default: the study's ENCODER_CS)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--regression", default="amazon-snippets,movie-snippets", help="'' for none")
    parser.add_argument("--splits", type=int, default=5, help="the regression study's splits")
    args = parser.parse_args(argv)
    from scipy import sparse

    datasets, sizes, samples, n_dev = encoder_dev_grid(args, 200)
    if args.quick:
        args.regression, args.splits = "amazon-snippets", 1
        args.variants, args.cs = "lvgp,sublinear-stop-negations", "1,1000"
    encoder, cache = bench_encoder(args.encoder, args.quick)
    print("| corpus | documents | tf-idf | dev accuracy | log loss | ECE | C chosen |")
    print("|---|---|---|---|---|---|---|")
    for dataset in datasets:
        scores: dict[tuple[int, str], list[tuple[float, float, float, float]]] = {}
        for split in range(samples):
            texts, labels, drawn, dev = dev_split(dataset, split, sizes, n_dev)
            start = time.perf_counter()
            needed = np.unique(np.concatenate([dev, *drawn.values()]))
            vectors = dict(
                zip(needed.tolist(), encoder.encode([texts[i] for i in needed], cache=cache).double().numpy())
            )
            print(
                f"<!-- {dataset} split {split}: {len(needed)} texts encoded in {time.perf_counter() - start:.0f} s -->"
            )
            x_dev = [texts[i] for i in dev]
            e_dev = np.stack([vectors[i] for i in dev])
            for size, train in drawn.items():
                x_train, y_train = [texts[i] for i in train], labels[train]
                e_train = np.stack([vectors[i] for i in train])
                for variant in args.variants.split(","):
                    t_train, t_dev = tfidf_part(variant, x_train, x_dev)
                    f_train = sparse.hstack([t_train, sparse.csr_matrix(e_train)]).tocsr()
                    f_dev = sparse.hstack([t_dev, sparse.csr_matrix(e_dev)]).tocsr()
                    cs = None if args.cs is None else [float(c) for c in args.cs.split(",")]
                    model = logistic_regression(f_train, y_train, split, cs)
                    proba = model.predict_proba(f_dev)
                    scores.setdefault((size, variant), []).append(
                        (*dev_scores(proba, model.classes_, labels[dev]), float(model.C))
                    )
        for (size, variant), rows in scores.items():
            a, b, c, _ = np.mean(rows, axis=0)
            cs = "/".join(f"{r[3]:g}" for r in rows)
            print(f"| {dataset} | {size} | {variant} | {a:.3f} | {b:.3f} | {c:.3f} | {cs} |")
    if args.regression:
        regression(args.regression.split(","), args.splits, encoder, args.quick, cache, args.variants.split(","))
    return 0


def regression(
    datasets: list[str], splits: int, encoder, quick: bool, cache: bool = True, variants: list[str] | None = None
) -> None:
    """``tfidf-encoder-ridge``'s features per variant: alpha by the RMSE on the first half of the study's dev
    sentences, the RMSE on the second half (standardized targets)."""
    from scipy import sparse
    from sklearn.linear_model import Ridge

    from lvgp.baselines.encoder import RIDGE_ALPHAS
    from lvgp.experiments.regression import RegressionStudy, prepare_split

    print("\n| corpus | tf-idf | dev RMSE (second half) | alpha chosen |")
    print("|---|---|---|---|")
    for dataset in datasets:
        study = RegressionStudy(dataset=dataset, train_size=1000, dev_size=1000, splits=splits)
        scores: dict[str, list[tuple[float, float]]] = {}
        for split in range(splits):
            data = prepare_split(study, split)
            train, dev = data.train_texts, data.dev_texts
            if quick:
                train, dev = train[:100], dev[:100]
            half = len(dev) // 2
            e_train = encoder.encode(train, cache=cache).double().numpy()
            e_dev = encoder.encode(dev, cache=cache).double().numpy()
            y_train, y_dev = data.y_train[: len(train)], data.y_dev[: len(dev)]
            for variant in variants or list(VARIANTS):
                t_train, t_dev = tfidf_part(variant, train, dev, cut=study.min_df)
                f_train = sparse.hstack([t_train, sparse.csr_matrix(e_train)]).tocsr()
                f_dev = sparse.hstack([t_dev, sparse.csr_matrix(e_dev)]).tocsr()
                rmse = {}
                for alpha in RIDGE_ALPHAS:
                    model = Ridge(alpha=alpha).fit(f_train, y_train)
                    error = model.predict(f_dev) - y_dev
                    rmse[alpha] = (
                        float(np.sqrt(np.mean(error[:half] ** 2))),
                        float(np.sqrt(np.mean(error[half:] ** 2))),
                    )
                alpha = min(rmse, key=lambda a: rmse[a][0])
                scores.setdefault(variant, []).append((rmse[alpha][1], alpha))
        for variant, rows in scores.items():
            alphas = "/".join(f"{r[1]:.3g}" for r in rows)
            print(f"| {dataset} | {variant} | {np.mean([r[0] for r in rows]):.4f} | {alphas} |")


if __name__ == "__main__":
    raise SystemExit(main())
