"""Regression tests for the defects an outside property-based fuzz found (issue 16): each
either a correct result or a clear error naming the argument. The kernel findings (the
batched ``diag``, ``0 x L`` inputs, small integer dtypes) are properties in
``test_properties.py``."""

from __future__ import annotations

import unicodedata
import warnings

import numpy as np
import pytest

from lvgp import GPLVSMRegressor, SparseGPLVSMRegressor, Vocabulary
from lvgp.base.validation import standardization
from lvgp.datasets import make_synonym_regression


@pytest.fixture(scope="module")
def corpus():
    return make_synonym_regression(n=40, noise=0.05, random_state=0)


def _fit(est, x, y):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*did not converge.*")
        return est.fit(x, y)


def test_huge_targets_standardize_and_predict_finite_values(corpus):
    """Finding 1: ``fit(X, y * 1e200)`` gave NaN means and infinite standard deviations."""
    small = _fit(GPLVSMRegressor(max_iter=15, random_state=0), corpus.texts, corpus.y)
    huge = _fit(GPLVSMRegressor(max_iter=15, random_state=0), corpus.texts, corpus.y * 1e200)
    mean, std = huge.predict(corpus.texts[:5], return_std=True)
    assert np.isfinite(mean).all() and np.isfinite(std).all()
    np.testing.assert_allclose(mean / 1e200, small.predict(corpus.texts[:5]), rtol=1e-6)
    mu, sd = standardization(np.array([1e300, -1e300, 3e299]))
    assert np.isfinite(mu) and np.isfinite(sd) and sd > 0


@pytest.mark.parametrize("value", [100.0, -7.5, 0.0])
def test_constant_targets_are_predicted_as_that_constant(corpus, value):
    est = _fit(GPLVSMRegressor(max_iter=5, random_state=0), corpus.texts, np.full(40, value))
    np.testing.assert_allclose(est.predict(corpus.texts[:3]), value)


@pytest.mark.parametrize(
    "estimator,message",
    [
        (GPLVSMRegressor(gamma=0), "gamma must be > 0"),
        (GPLVSMRegressor(noise_init=0), "noise_init must be > 0"),
        (GPLVSMRegressor(outputscale_init=-1), "outputscale_init must be > 0"),
        (GPLVSMRegressor(max_iter=0), "max_iter must be >= 1"),
        (GPLVSMRegressor(rho=float("nan")), "rho must be finite"),
        (SparseGPLVSMRegressor(batch_size=0), "batch_size must be >= 1"),
        (SparseGPLVSMRegressor(rho=0), "rho must be > 0"),
    ],
)
def test_bad_arguments_name_themselves(corpus, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(corpus.texts, corpus.y)


def test_latent_dim_must_be_an_integer(corpus):
    with pytest.raises(TypeError, match="latent_dim must be an integer"):
        GPLVSMRegressor(latent_dim=1.5).fit(corpus.texts, corpus.y)


@pytest.mark.parametrize("estimator", [GPLVSMRegressor(), SparseGPLVSMRegressor()])
def test_fitting_on_no_documents_is_a_clear_error(estimator):
    with pytest.raises(ValueError, match="X holds no documents"):
        estimator.fit([], [])


def test_vocabulary_rejects_bad_filters():
    with pytest.raises(ValueError, match="max_features must be None or a positive integer"):
        Vocabulary(max_features=-1).fit(["one two three"])
    with pytest.raises(ValueError, match="min_df must be"):
        Vocabulary(min_df=0).fit(["one two three"])
    with pytest.raises(TypeError, match="max_df must be an int"):
        Vocabulary(max_df=True).fit(["one two three"])


def test_tokens_are_nfc_and_keep_combining_marks_and_other_scripts():
    vocab = Vocabulary(min_token_len=2, stop_words=None)
    assert vocab.tokenize(unicodedata.normalize("NFD", "café naïve")) == ["café", "naïve"]
    assert vocab.tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert vocab.tokenize("İstanbul") == ["i̇stanbul"]  # lower-cased İ keeps its combining dot
    assert vocab.tokenize("Москва и Київ") == ["москва", "київ"]
    assert vocab.tokenize("x_y 3d don't") == ["don"]
