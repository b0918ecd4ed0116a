"""Predictive uncertainty is a result (issue 39): the NLPD and interval coverage are computed right,
a GP with the true kernel and noise covers its nominal share of a draw from itself, and a fit whose
intervals cannot be trusted says so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy.stats import binom, norm

import lvgp
from lvgp.base.metrics import gaussian_nlpd, interval_coverage, regression_calibration
from lvgp.warnings import UncertaintyWarning


def test_nlpd_is_scipys_log_density_on_a_hand_made_case():
    y = np.array([0.3, -1.2, 2.5, 0.0])
    mean = np.array([0.0, -1.0, 1.0, 0.5])
    std = np.array([1.0, 0.5, 2.0, 0.1])
    assert gaussian_nlpd(y, mean, std) == pytest.approx(-np.mean(norm.logpdf(y, mean, std)), rel=1e-14)
    cover = interval_coverage(y, mean, std, (0.5, 0.95))
    z = np.abs(y - mean) / std
    assert cover == {0.5: float(np.mean(z <= 0.6744897501960817)), 0.95: float(np.mean(z <= 1.959963984540054))}
    record = regression_calibration(y, mean, std)
    assert record["coverage_95"] == cover[0.95] and record["mean_std"] == pytest.approx(std.mean())
    assert len(record["calibration"]["nominal"]) == len(record["calibration"]["empirical"]) == 20
    with pytest.raises(ValueError, match="std must be positive"):
        gaussian_nlpd(y, mean, np.zeros(4))


def test_a_gp_with_the_true_kernel_covers_its_nominal_share_of_a_draw():
    """Documents, a fixed LDK (word vectors drawn once) and a known noise: targets drawn from the GP;
    the exact GP with exactly that kernel and noise predicts held-out targets whose 50/90/95%
    interval coverage lies within the binomial 99.9% interval of its nominal share."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n_train, n_test, vocab, noise = 150, 400, 40, 0.2
    docs = torch.from_numpy(rng.integers(0, vocab, size=(n_train + n_test, 6)))
    ldk = lvgp.LatentDistributionKernel(vocab, 2, seed=0).double()
    scale = 2.0
    with torch.no_grad():
        cov = scale * ldk(docs).to_dense() + noise * torch.eye(n_train + n_test, dtype=torch.float64)
        y = torch.distributions.MultivariateNormal(torch.zeros(n_train + n_test, dtype=torch.float64), cov).sample()
    x_train, y_train, x_test, y_test = docs[:n_train], y[:n_train], docs[n_train:], y[n_train:]
    model = lvgp.GPLVSM(x_train, y_train, num_words=vocab, mean="zero", kernel=gpytorch_scale(ldk, scale)).double()
    model.likelihood.noise = torch.tensor(noise, dtype=torch.float64)
    model.eval()
    with torch.no_grad(), lvgp.exact_numerics():
        predictive = model.likelihood(model(x_test))
    mean, std = predictive.mean.numpy(), predictive.stddev.numpy()
    for level, share in interval_coverage(y_test.numpy(), mean, std).items():
        low, high = binom.interval(0.999, n_test, level)
        assert low / n_test <= share <= high / n_test, (level, share)


def gpytorch_scale(kernel, scale: float):
    from gpytorch.kernels import ScaleKernel

    scaled = ScaleKernel(kernel).double()
    scaled.outputscale = torch.tensor(scale, dtype=torch.float64)
    return scaled


def test_a_fit_at_the_noise_floor_warns_with_the_numbers():
    """The paper's MAP fit on a few short texts interpolates its targets: the noise at its floor."""
    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=40, noise=0.3, random_state=0)
    texts, y = corpus.texts, corpus.y
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lvgp.GPLVSMRegressor(lvgp.LDKSpec.paper(), optimizer=lvgp.LBFGS(max_iter=200), random_state=0).fit(texts, y)
    messages = [str(w.message) for w in caught if issubclass(w.category, UncertaintyWarning)]
    assert any("the fitted noise is" in m and "floor" in m for m in messages), messages
