"""``benchmarks/bow_baseline_dev.py``'s variants on toy texts (its runs read r8 and 20ng): each is the estimator its
docstring names, fitted as the studies fit it, and gives probabilities over the training classes."""

from __future__ import annotations

import numpy as np
import pytest

from tests._benchmarks import benchmark_module

dev = benchmark_module("bow_baseline_dev.py", "_bow_baseline_dev")

TEXTS = [
    f"{a} {b} {c}"
    for a, b, c in zip(
        ["market", "shares", "bank", "oil", "rates", "stocks", "team", "goal", "coach", "fans", "striker", "keeper"]
        * 2,
        [
            "rallied",
            "fell",
            "raised",
            "climbed",
            "cut",
            "rose",
            "won",
            "settled",
            "praised",
            "cheered",
            "scored",
            "saved",
        ]
        * 2,
        ["profits"] * 6 + ["match"] * 6 + ["earnings"] * 6 + ["final"] * 6,
    )
]
LABELS = np.array((["finance"] * 6 + ["sport"] * 6) * 2)


@pytest.mark.parametrize("variant", [*dev.VARIANTS, *dev.SVM_VARIANTS[1:]])
def test_every_variant_fits_and_gives_probabilities(variant):
    proba, c = dev.fit_variant(variant, TEXTS, LABELS, seed=0)
    p = proba(["bank profits rose", "the keeper scored"])
    assert p.shape == (2, 2) and np.allclose(p.sum(1), 1.0) and c > 0


def test_the_study_variants_are_the_studies_estimators():
    """``study`` is ``BowClassifier("logreg")`` with the paper's grid, ``default-tfidf`` the study's ``logreg`` now
    (``TfidfLogisticRegression``), ``svm-default-tfidf`` its ``svm`` (``BowClassifier("svm", vectorizer=...)``)."""
    from lvgp.baselines.encoder import default_tfidf
    from lvgp.baselines.text_classifiers import BowClassifier, TfidfLogisticRegression

    probe = ["bank profits rose", "the keeper scored"]
    for variant, model in [
        ("study", BowClassifier("logreg", Cs=dev.STUDY_CS, random_state=1)),
        ("default-tfidf", TfidfLogisticRegression(random_state=1)),
        ("svm-default-tfidf", BowClassifier("svm", vectorizer=default_tfidf(), random_state=1)),
    ]:
        proba, _ = dev.fit_variant(variant, TEXTS, LABELS, seed=1)
        np.testing.assert_allclose(proba(probe), model.fit(TEXTS, LABELS).predict_proba(probe), rtol=1e-12)
