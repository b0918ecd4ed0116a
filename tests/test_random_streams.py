"""Every estimator exported by lvgp: fitting and predicting leave the caller's random streams
(torch's global generator, numpy's legacy global state, ``random``) exactly as they were, and a
fit with a fixed ``random_state`` is reproducible, whatever the caller drew before.

pyro and gpytorch sample from torch's global generator; an estimator that seeds it, or draws
from it, silently changes every later draw of the user's notebook."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
import sklearn.base
import torch

import lvgp
from lvgp.datasets import make_synonym_regression
from lvgp.datasets.loaders import WordEmbeddings
from lvgp.kernels import LDKSpec

ESTIMATORS = sorted(
    name
    for name in lvgp.__all__
    if isinstance(getattr(lvgp, name), type) and issubclass(getattr(lvgp, name), sklearn.base.BaseEstimator)
)


def _texts():
    corpus = make_synonym_regression(n=40, noise=0.1, random_state=3)
    return list(corpus.texts), np.asarray(corpus.y)


def _embeddings(texts):
    words = sorted({w for t in texts for w in t.split()})
    vectors = np.random.default_rng(0).normal(size=(len(words), 4))
    return WordEmbeddings("toy", words, vectors)


def _categorical():
    rng = np.random.default_rng(0)
    return rng.integers(0, 3, size=(30, 3)), [3, 3, 3]


def fit_and_predict(name: str):
    """The estimator ``name`` with tiny settings, fitted and used: returns its predictions."""
    texts, y = _texts()
    labels = (y > np.median(y)).astype(int)
    if name == "GPLVSMRegressor":
        m = lvgp.GPLVSMRegressor(LDKSpec(latent_dim=2), max_iter=5, random_state=0).fit(texts, y)
        return m.predict(texts[:5], return_std=True)
    if name == "SparseGPLVSMRegressor":
        m = lvgp.SparseGPLVSMRegressor(num_inducing=8, batch_size=16, max_steps=6, random_state=0).fit(texts, y)
        return m.predict(texts[:5], return_std=True)
    if name == "GPRBFRegressor":
        return lvgp.GPRBFRegressor(max_iter=5, random_state=0).fit(texts, y).predict(texts[:5])
    if name == "LatentSMMClassifier":
        return lvgp.LatentSMMClassifier(max_iter=3, random_state=0).fit(texts, labels).decision_function(texts[:5])
    if name == "LDKGPClassifier":
        m = lvgp.LDKGPClassifier(inference="variational", max_iter=3, random_state=0).fit(texts, labels)
        return m.predict_proba(texts[:5])
    if name == "LDKMatcher":
        m = lvgp.LDKMatcher(LDKSpec(latent_dim=2, rho=0.01), max_iter=3, random_state=0).fit(texts[:20], texts[20:])
        return m.true_target_ranks(texts[:5], texts[20:25])
    if name == "SLDARegressor":
        return lvgp.SLDARegressor(n_topics=2, max_epochs=2, random_state=0).fit(texts, y).predict(texts[:5])
    if name == "SLDAClassifier":
        m = lvgp.SLDAClassifier(n_topics=2, max_epochs=2, random_state=0).fit(texts, labels)
        return m.predict_proba(texts[:5])
    if name == "LDARegression":
        return lvgp.LDARegression(n_topics=2, em_max_iter=3, random_state=0).fit(texts, y).predict(texts[:5])
    if name == "CLGP":
        codes, cards = _categorical()
        m = lvgp.CLGP(num_inducing=4, samples=2, max_iter=5, impute_iter=3, random_state=0).fit(codes, cards)
        return m.predict_proba(codes[:5])
    if name == "GPEmbeddingLogisticRegression":
        m = lvgp.GPEmbeddingLogisticRegression(
            embeddings=_embeddings(texts), posterior="normal", predict_samples=4, max_iter=5, random_state=0
        )
        return m.fit(texts, labels).predict_proba(texts[:5])
    raise AssertionError(f"{name} is exported by lvgp but has no case in tests/test_random_streams.py")


def _state():
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [np.asarray(o) for o in out]
    return [np.asarray(out)]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_fit_and_predict_leave_the_callers_random_streams_alone_and_are_reproducible(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny budgets: convergence warnings are expected
        torch.manual_seed(123)
        np.random.seed(123)
        random.seed(123)
        before = _state()
        first = fit_and_predict(name)
        after = _state()
        assert torch.equal(before[0], after[0]), f"{name} changed torch's global generator"
        assert all(np.array_equal(a, b) for a, b in zip(before[1][1:2], after[1][1:2])), f"{name} changed numpy's"
        assert before[2] == after[2], f"{name} changed random's state"
        torch.manual_seed(999)  # a different caller stream: the results must not depend on it
        np.random.seed(999)
        second = fit_and_predict(name)
    for a, b in zip(_flatten(first), _flatten(second)):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_every_exported_estimator_is_covered():
    assert len(ESTIMATORS) >= 11, ESTIMATORS
