"""``benchmarks/plugins/svm_features_diagnostic.py`` (``benchmarks/README.md``): its SVMs are the open-set study's
``svm`` but for their words -- the tf-idf GP's own (lvgp's vocabulary, sublinear counts) and ``default_tfidf``'s
letters without the digits."""

from __future__ import annotations

import warnings

import numpy as np


def test_the_diagnostics_svms_differ_from_the_studys_in_their_words_alone(toy_topics_tsv, isolated_registry):
    from lvgp.bow.vocabulary import Vocabulary
    from lvgp.experiments.open_set import OpenSetStudy

    isolated_registry.load_plugins(["svm_features_diagnostic"])
    study = OpenSetStudy(dataset=toy_topics_tsv, unknown_classes=1, per_class=(5,), splits=1)
    texts, labels = study.split(0).training(5)
    texts = [f"{t} 1986 not it" for t in texts]
    cell = {"split": 0, "params": {"per_class": 5}}
    built_in = study.estimator({**cell, "method": "svm"})
    for method in ("svm-gp-words", "svm-letters"):
        svm = study.estimator({**cell, "method": method})
        ours = {k: v for k, v in svm.get_params().items() if not k.startswith("vectorizer")}
        assert ours == {k: v for k, v in built_in.get_params().items() if not k.startswith("vectorizer")}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            words = set(svm.fit(texts, labels).tfidf_.vocabulary_)
        assert "1986" not in words and svm.tfidf_.sublinear_tf
        assert ("not" in words) == (method == "svm-letters")  # lvgp's vocabulary drops every stop word
    gp_words = study.estimator({**cell, "method": "svm-gp-words"}).fit(texts, labels).tfidf_.vocabulary_
    assert set(gp_words) == set(Vocabulary().fit(texts).words)
    letters = study.estimator({**cell, "method": "svm-letters"}).fit(texts, labels)
    assert np.all(np.isfinite(letters.score_samples(texts)))
