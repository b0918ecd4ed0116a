"""Words never seen in training that have a pretrained vector enter prediction with their
embedding-implied latent vector W e_v, in every LDK model.

Synthetic corpus (:func:`lvgp.datasets.make_synonym_regression`, 150 training / 250 test
documents) with pretrained-like vectors that carry each word's score, and for every signal
word a synonym never used in training, placed near it (:func:`lvgp.datasets.synonym_embeddings`).
The test documents use the synonyms instead of the signal words; without embeddings those
are dropped (only neutral words remain). Measured (seed 0):

============================  ===============================  ============================
model                         without embeddings               with (original test words)
============================  ===============================  ============================
GPLVSMRegressor, RMSE         0.292 (target std 0.28)          0.085 (0.065)
SparseGPLVSMRegressor, RMSE   0.308                            0.072 (0.060)
LDKGPClassifier, accuracy     0.508 (chance 0.5)               0.752 (0.840)
LatentSMMClassifier, accuracy 0.508                            0.888 (0.864)
============================  ===============================  ============================
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from lvgp import LBFGS, GPLVSMRegressor, LatentSMMClassifier, LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor
from lvgp.datasets import WordEmbeddings, make_synonym_regression, synonym_embeddings
from lvgp.kernels import LDKSpec
from lvgp.warnings import UnseenWordsWarning


@pytest.fixture(scope="module")
def data():
    corpus = make_synonym_regression(n=400, noise=0.05, random_state=0)
    embeddings, synonyms = synonym_embeddings(corpus, random_state=0)
    texts = list(corpus.texts)
    test_synonyms = [" ".join(synonyms.get(w, w) for w in doc.split()) for doc in texts[150:]]
    labels = np.where(corpus.y > np.median(corpus.y[:150]), "pos", "neg")
    return texts[:150], texts[150:], test_synonyms, corpus.y, labels, embeddings


def _quiet_fit(model, x, y):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(did not converge|no vector in).*")
        return model.fit(x, y)


def _predict(model, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = model.predict(x)
    return out, [w for w in caught if issubclass(w.category, UnseenWordsWarning)]


@pytest.mark.parametrize(
    "make",
    [
        lambda e: GPLVSMRegressor(
            LDKSpec(latent_dim=2, rho=1.0, word_embeddings=e), optimizer=LBFGS(max_iter=100), random_state=0
        ),
        lambda e: SparseGPLVSMRegressor(
            LDKSpec(latent_dim=2, rho=1.0, word_embeddings=e),
            num_inducing=32,
            optimizer=MiniBatch(batch_size=64, max_epochs=60),
            random_state=0,
        ),
    ],
    ids=["exact", "sparse"],
)
def test_regressors_predict_synonyms_through_their_embeddings(data, make):
    train, test, test_synonyms, y, _, embeddings = data

    def rmse(pred):
        return float(np.sqrt(np.mean((pred - y[150:]) ** 2)))

    plain = _quiet_fit(make(None), train, y[:150])
    tied = _quiet_fit(make(embeddings), train, y[:150])
    plain_pred, plain_warned = _predict(plain, test_synonyms)
    tied_pred, tied_warned = _predict(tied, test_synonyms)
    assert rmse(plain_pred) > 0.9 * y[150:].std()  # the synonyms carry no information without vectors
    # half the error at most (GP-LVSM over random_state 0-4: 0.07-0.12 against 0.29; the draw of the
    # random GloVe projection moves it)
    assert rmse(tied_pred) < 0.5 * rmse(plain_pred)
    assert plain_warned and not tied_warned  # every synonym has a vector: nothing is dropped
    # nothing is stored by prediction: the original test documents predict as before
    before = tied.predict(test)
    tied.predict(test_synonyms)
    np.testing.assert_array_equal(tied.predict(test), before)


@pytest.mark.parametrize(
    "make",
    [
        lambda e: LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=1.0, word_embeddings=e), optimizer=LBFGS(max_iter=60), random_state=0
        ),
        lambda e: LatentSMMClassifier(
            LDKSpec(latent_dim=2, rho=1.0, word_embeddings=e), C=8.0, optimizer=LBFGS(max_iter=60), random_state=0
        ),
    ],
    ids=["gp-classifier", "latent-smm"],
)
def test_classifiers_predict_synonyms_through_their_embeddings(data, make):
    train, _, test_synonyms, _, labels, embeddings = data
    plain = _quiet_fit(make(None), train, labels[:150])
    tied = _quiet_fit(make(embeddings), train, labels[:150])
    plain_acc = float(np.mean(_predict(plain, test_synonyms)[0] == labels[150:]))
    tied_acc = float(np.mean(_predict(tied, test_synonyms)[0] == labels[150:]))
    assert plain_acc < 0.6 and tied_acc > plain_acc + 0.2, (plain_acc, tied_acc)


def test_unseen_words_without_a_vector_are_still_counted(data):
    train, test, _, y, _, embeddings = data
    model = _quiet_fit(
        GPLVSMRegressor(
            LDKSpec(latent_dim=2, word_embeddings=embeddings), optimizer=LBFGS(max_iter=20), random_state=0
        ),
        train,
        y[:150],
    )
    _, warned = _predict(model, ["posaa zzzunknown synposab", "neuaa"])
    assert len(warned) == 1 and "1 tokens (1 distinct words) not in the vocabulary without a pretrained vector" in str(
        warned[0].message
    )


def test_matcher_ranks_unseen_source_words_through_their_embeddings():
    """Source words carry a topical embedding; test sources use unseen synonyms of them."""
    from lvgp.models.matching import LDKMatcher

    rng = np.random.default_rng(5)
    vocab, topics = 30, 4
    src_words = [f"src{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(vocab)]
    tgt_words = [f"tgt{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(vocab)]
    topic_of = rng.integers(topics, size=vocab)

    def documents(n, words_of):
        out_s, out_t = [], []
        for _ in range(n):
            topic = rng.integers(topics)
            pool = np.flatnonzero(topic_of == topic)
            ids = rng.choice(pool, size=6)
            out_s.append(" ".join(words_of[w] for w in ids))
            out_t.append(" ".join(tgt_words[w] for w in ids))
        return out_s, out_t

    table = {w: np.eye(topics)[topic_of[i]] + 0.1 * rng.standard_normal(topics) for i, w in enumerate(src_words)}
    synonyms = {w: "syn" + w for w in src_words}
    table.update({synonyms[w]: table[w] + 0.02 * rng.standard_normal(topics) for w in src_words})
    embeddings = WordEmbeddings("topical", list(table), np.array(list(table.values())))
    train_s, train_t = documents(80, src_words)
    test_s, test_t = documents(40, [synonyms[w] for w in src_words])
    matcher = LDKMatcher(
        LDKSpec(latent_dim=3, rho=0.1), optimizer=LBFGS(max_iter=30), source_embeddings=embeddings, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matcher.fit(train_s, train_t)
    ranks = matcher.true_target_ranks(test_s, test_t)
    # documents of one topic are near-duplicates, so a ranking within the right topic (10 of 40) is the best possible
    assert np.mean(ranks < 10) > 0.8
    plain = LDKMatcher(LDKSpec(latent_dim=3, rho=0.1), optimizer=LBFGS(max_iter=30), random_state=0).fit(
        train_s, train_t
    )
    with pytest.warns(UserWarning, match="40 of 40 pairs have a document without any known word"):
        assert (plain.true_target_ranks(test_s, test_t) == 39).all()  # without embeddings: nothing to match
