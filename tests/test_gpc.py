"""GP classification with LDK: binary probabilities calibrated on a synthetic task whose
true class probabilities are known, multi-class softmax, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from lvgp.datasets import make_synonym_regression
from lvgp.models.gpc import LDKGPClassifier


def calibrated_task(n, seed):
    """Labels drawn from p(y=1 | doc) = sigmoid(3 * standardized score): known probabilities."""
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=seed)
    score = (corpus.y - corpus.y.mean()) / corpus.y.std()
    p = 1 / (1 + np.exp(-3 * score))
    y = (np.random.default_rng(seed).random(n) < p).astype(int)
    return corpus.texts, y, p


def test_binary_probabilities_are_calibrated():
    x, y, p = calibrated_task(700, 0)
    clf = LDKGPClassifier(num_inducing=64, max_epochs=60, batch_size=128, lr=0.03, random_state=0).fit(x[:400], y[:400])
    proba = clf.predict_proba(x[400:])[:, 1]
    assert np.all((proba > 0) & (proba < 1))
    # reliability: in bins of predicted probability, the mean prediction is close to the true mean probability
    bins = np.digitize(proba, [0.2, 0.4, 0.6, 0.8])
    gaps = [abs(proba[bins == b].mean() - p[400:][bins == b].mean()) for b in range(5) if (bins == b).sum() >= 15]
    assert len(gaps) >= 3 and max(gaps) < 0.15, gaps
    assert np.mean(clf.predict(x[400:]) == y[400:]) > 0.7


def test_multiclass_softmax_and_bad_input():
    corpus = make_synonym_regression(n=150, noise=0.0, random_state=1)
    y = np.digitize(corpus.y, np.quantile(corpus.y, [1 / 3, 2 / 3]))
    clf = LDKGPClassifier(num_inducing=32, max_epochs=200, lr=0.05, random_state=0).fit(corpus.texts[:100], y[:100])
    proba = clf.predict_proba(corpus.texts[100:])
    assert proba.shape == (50, 3) and np.allclose(proba.sum(1), 1)
    assert np.mean(clf.predict(corpus.texts[100:]) == y[100:]) > 0.5  # chance: 1/3; measured 0.56
    # the softmax predictive probabilities (own Monte Carlo over the latent marginals) agree
    # with gpytorch's SoftmaxLikelihood marginal within Monte Carlo error
    import gpytorch
    import torch

    clf.set_params(n_mc_samples=4000)
    ours = clf.predict_proba(corpus.texts[100:110])
    x = clf.encoder_.transform(corpus.texts[100:110], "X")
    with torch.no_grad(), gpytorch.settings.num_likelihood_samples(4000):
        theirs = clf.likelihood_(clf.model_(x)).probs.mean(0).numpy()
    assert np.abs(ours - theirs).max() < 0.03
    with pytest.raises(ValueError, match="single class"):
        LDKGPClassifier().fit(corpus.texts[:10], [0] * 10)
