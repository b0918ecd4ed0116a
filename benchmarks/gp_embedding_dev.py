"""Why the classification study's GP covariate embedding (``gp-embed-logreg``, Andrade et al. 2018) falls behind
logistic regression on 20ng: the optimizer, the 2,000-word cap, or the smoothing itself, scored on dev documents.

Variants (``benchmarks/README.md``, rule 36, written before the first run):

* ``study``: ``GPEmbeddingLogisticRegression`` as the study builds it (``max_features=2000``, L-BFGS capped at 30
  iterations a length-scale);
* ``converged``: the same, ``max_iter=300``;
* ``all-words``: ``converged`` with every word of the cut (``max_features=None``);
* ``same-words-logreg``: logistic regression on the same words and tf-idf, no smoothing (C in 0.1 ... 1e4 by CV on
  the log loss, ``logistic_regression_cv``);
* ``logreg``: the study's logistic regression (``TfidfLogisticRegression`` on ``default_tfidf``).

Dev documents: 1,000 of the corpus's training part in no labelled sample (``tfidf_baseline_dev.dev_split``; labels
read for scoring only, the test split never read); the study's samples (3 a size), cut by the study's
``--min-df-fraction 0.01`` as the committed ``-plus`` runs (a training text the cut leaves empty is dropped, as
the study drops it).

    python benchmarks/gp_embedding_dev.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200,500] [--samples 3]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

VARIANTS = ("study", "converged", "all-words", "same-words-logreg", "logreg")
#: the study's L-BFGS budget (``--max-iter``) and vocabulary cap (``--max-features``), and the converged budget
STUDY_MAX_ITER, CONVERGED_MAX_ITER, STUDY_MAX_FEATURES = 30, 300, 2000
WIDE_CS = (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)


def fit_variant(variant: str, train: list[str], y: np.ndarray, seed: int):
    """The fitted variant as ``(predict_proba of texts, covariates, converged or None)``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfTransformer

    from lvgp import LBFGS
    from lvgp.baselines.encoder import default_tfidf, logistic_regression_cv
    from lvgp.baselines.gp_embedding import GPEmbeddingLogisticRegression
    from lvgp.baselines.text_classifiers import TfidfLogisticRegression
    from lvgp.bow.vocabulary import Vocabulary

    if variant == "logreg":
        model = TfidfLogisticRegression(vectorizer=default_tfidf(), Cs=WIDE_CS, random_state=seed).fit(train, y)
        return model.predict_proba, len(model.tfidf_.vocabulary_), None
    if variant == "same-words-logreg":
        vocabulary = Vocabulary(min_df=1, max_features=STUDY_MAX_FEATURES).fit(train)
        transformer = TfidfTransformer().fit(vocabulary.counts(train))

        def features(texts):
            return transformer.transform(vocabulary.counts(texts))

        logreg = logistic_regression_cv(features(train), y, WIDE_CS, seed)
        return (lambda texts: logreg.predict_proba(features(texts))), len(vocabulary), None
    model = GPEmbeddingLogisticRegression(
        max_features=None if variant == "all-words" else STUDY_MAX_FEATURES,
        optimizer=LBFGS(max_iter=STUDY_MAX_ITER if variant == "study" else CONVERGED_MAX_ITER),
        random_state=seed,
        on_empty="keep",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(train, y)
    # every inner L-BFGS run converged: no ConvergenceWarning (of the fitted run's or the length-scale search's)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return model.predict_proba, len(model.words_), converged


def cut_texts(train: list[str], dev: list[str]) -> tuple[list[str], list[str], np.ndarray]:
    """The study's ``--min-df-fraction 0.01`` cut (``classification.prepare_cell``): the texts reduced to the
    training texts' words in 1% of them or more; the kept training rows (the cut leaves some empty)."""
    from lvgp.bow.vocabulary import Vocabulary

    vocabulary = Vocabulary(min_df=0.01).fit(train)

    def cut(texts):
        return [" ".join(t for t in vocabulary.tokenize(doc) if t in vocabulary) for doc in texts]

    train_cut = cut(train)
    keep = np.array([bool(t) for t in train_cut])
    return [t for t, k in zip(train_cut, keep) if k], cut(dev), keep


def main(argv=None) -> int:
    from tfidf_baseline_dev import dev_scores, dev_split, encoder_dev_grid, samples_dev_parser

    parser = samples_dev_parser(__doc__, "r8 at 50 documents, one sample, 200 dev documents", threads=1)
    datasets, sizes, samples, n_dev = encoder_dev_grid(parser.parse_args(argv), quick_dev=200)
    print("| corpus | documents | variant | dev accuracy | log loss | covariates | converged | s a fit |")
    print("|---|---|---|---|---|---|---|---|")
    means: dict[str, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
    for dataset in datasets:
        scores: dict[tuple[int, str], list[tuple[float, float, float, float, float]]] = {}
        for split in range(samples):
            texts, labels, drawn, dev = dev_split(dataset, split, sizes, n_dev)
            y_dev = labels[dev]
            for size, train in drawn.items():
                x_train, x_dev, keep = cut_texts([texts[i] for i in train], [texts[i] for i in dev])
                y_train = labels[train][keep]
                for variant in VARIANTS:
                    start = time.perf_counter()
                    proba, covariates, converged = fit_variant(variant, x_train, y_train, seed=split)
                    p = proba(x_dev)
                    seconds = time.perf_counter() - start
                    accuracy, loss, _ = dev_scores(p, np.unique(y_train), y_dev)
                    flag = np.nan if converged is None else float(converged)
                    scores.setdefault((size, variant), []).append((accuracy, loss, covariates, flag, seconds))
                    print(
                        f"  ({dataset}, sample {split}, {size}, {variant}: {accuracy:.3f}, {seconds:.1f} s)", flush=True
                    )
        for size in sizes:
            for variant in VARIANTS:
                cell = np.array(scores[(size, variant)])
                means[variant].append((cell[:, 0].mean(), cell[:, 1].mean(), cell[:, 4].mean()))
                converged = "" if np.isnan(cell[0, 3]) else f"{int(cell[:, 3].sum())} of {len(cell)}"
                print(
                    f"| {dataset} | {size} | {variant} | {cell[:, 0].mean():.3f} | {cell[:, 1].mean():.3f} | "
                    f"{cell[:, 2].mean():.0f} | {converged} | {cell[:, 4].mean():.1f} |",
                    flush=True,
                )
    print()
    print("Mean over the (corpus, size) cells: variant, dev accuracy, log loss, s a fit, accuracy minus the study's")
    study = np.mean(means["study"], axis=0)
    for variant in VARIANTS:
        accuracy, loss, seconds = np.mean(means[variant], axis=0)
        print(f"- {variant}: {accuracy:.4f}, {loss:.4f}, {seconds:.1f}, {accuracy - study[0]:+.4f}")

    def earned(variant: str) -> bool:
        accuracy, loss, seconds = np.mean(means[variant], axis=0)
        return accuracy - study[0] >= 0.005 and loss <= study[1]

    if earned("converged"):
        choice = "converged"
    elif earned("all-words") and np.mean(means["all-words"], axis=0)[2] <= 4 * study[2]:
        choice = "all-words"
    else:
        choice = "study"
    print(f"\nThe rule's choice: {choice}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
