"""Contextual word vectors as a ``word_embeddings`` source (issue 37, "per word type"), on a tiny
random BERT: a word's vector is the mean of its contextual token vectors over the training and
unlabeled texts; the estimators resolve ``"contextual"`` with their own sentence encoder; words
met only in the unlabeled texts enter prediction; a saved model reloads bit-exactly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from lvgp import LBFGS, LDKGPClassifier, Vocabulary  # noqa: E402
from lvgp.base.embeddings import needs_texts, resolve_embeddings  # noqa: E402
from lvgp.encoders import ContextualWordEmbeddings  # noqa: E402
from lvgp.kernels import LDKSpec  # noqa: E402
from lvgp.models.mixins import word_source  # noqa: E402

WORDS = ["good", "bad", "film", "plot", "great", "awful", "story"]
TEXTS = ["good film", "bad film", "good plot", "bad plot", "great film", "awful plot"] * 2
LABELS = np.array([1, 0] * 6)
POOL = ["a great story", "an awful story", "story story"]


@pytest.fixture
def encoder(tiny_encoder):
    return tiny_encoder(WORDS, seed=3)


def test_the_table_is_the_mean_of_each_words_occurrences(encoder):
    vocab = Vocabulary(stop_words=None).fit(TEXTS)
    table = ContextualWordEmbeddings(encoder).learn(TEXTS + POOL, vocab)
    # every vocabulary word, then "story" (in 3 of the texts, min_df 2); "an" is shorter than 3 letters
    assert table.words == [*vocab.words, "story"] and table.name.startswith("contextual-")
    # by hand, from the token vectors: "story" occurs once, once and twice in the pool
    pieces = encoder.token_vectors(POOL)
    found = [tv.vectors[i] for tv in pieces for i, t in enumerate(tv.tokens) if t == "story"]
    assert len(found) == 4
    np.testing.assert_allclose(table.vectors[-1], torch.stack(found).double().mean(0).numpy(), rtol=1e-6)
    vectors, counts = encoder.word_vectors(TEXTS + POOL, vocab)
    np.testing.assert_array_equal(table.vectors[: len(vocab)], vectors.double().numpy())
    assert (counts > 0).all()


def test_the_estimators_resolve_the_name_with_their_encoder(encoder):
    assert needs_texts("contextual") and needs_texts(("glove-6b-50d", "contextual"))
    assert word_source("contextual").encoder == "all-MiniLM-L6-v2"  # the default encoder, never loaded here
    parts = word_source(("corpus", "contextual"), encoder, "cpu")
    assert parts[0] == "corpus" and parts[1].encoder is encoder
    LDKSpec.plus("contextual").check()
    with pytest.raises(ValueError, match="needs a sentence encoder"):
        resolve_embeddings("contextual", TEXTS, Vocabulary().fit(TEXTS))


def _fit(encoder, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LDKGPClassifier(
            LDKSpec.plus("contextual", rho=0.1),
            vocabulary=Vocabulary(stop_words=None),
            class_hyperparameters="shared",
            optimizer=LBFGS(max_iter=10),
            random_state=0,
            **options,
        ).fit(TEXTS, LABELS, unlabeled=POOL)


def test_the_classifier_reads_contextual_vectors_and_words_from_the_pool(encoder):
    clf = _fit(encoder, sentence_encoder=encoder)
    table = ContextualWordEmbeddings(encoder).learn(TEXTS + POOL, clf.vocabulary_)
    features = clf.encoder_.word_features
    expected = table.vectors[: len(clf.vocabulary_)]
    np.testing.assert_allclose(features, expected / np.linalg.norm(expected, axis=1).mean(), rtol=1e-12)
    # "story" is in no training text; its contextual vector from the pool lets it into prediction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with_story = clf.predict_proba(["story"])
    assert np.isfinite(with_story).all() and not np.allclose(with_story, clf.predict_proba(["zzzz"]))


def test_without_a_sentence_encoder_the_default_one_is_used(encoder):
    # the fixture makes the default name resolve to the tiny encoder: no download
    clf = _fit(encoder)
    assert clf.sentence_encoder is None and clf.encoder_.word_features is not None


def test_save_and_load_are_bit_exact(encoder, tmp_path):
    clf = _fit(encoder, sentence_encoder="all-MiniLM-L6-v2")
    clf.save(tmp_path / "gpc.pt")
    loaded = LDKGPClassifier.load(tmp_path / "gpc.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(
            loaded.predict_proba(["good story", "bad"]), clf.predict_proba(["good story", "bad"])
        )
