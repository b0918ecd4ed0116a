"""``benchmarks/softmax_gp_exact.py``'s elliptical slice sampler (issue 56, 3): its draws follow the softmax
GP's exact posterior, checked against quadrature on a grid where the posterior has two dimensions."""

from __future__ import annotations

import math

import numpy as np
import torch

from tests._benchmarks import benchmark_module

exact = benchmark_module("softmax_gp_exact.py", "_softmax_gp_exact")


def test_elliptical_slice_draws_have_the_posteriors_moments(monkeypatch):
    # one training text of class 0, two classes, prior variance 4 a latent: p(f | y) ~ softmax(f)_0 N(f; 0, 4 I)
    variance = 4.0
    grid = np.linspace(-12, 12, 961)
    f0, f1 = np.meshgrid(grid, grid, indexing="ij")
    log_density = f0 - np.logaddexp(f0, f1) - (f0**2 + f1**2) / (2 * variance)
    weights = np.exp(log_density - log_density.max())
    weights /= weights.sum()
    mean = np.array([(weights * f0).sum(), (weights * f1).sum()])
    second = np.array([(weights * f0**2).sum(), (weights * f1**2).sum()])

    monkeypatch.setattr(exact, "KEPT", 8000)
    root = torch.full((1, 1), math.sqrt(variance), dtype=torch.float64)
    Y = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
    draws, _ = exact.elliptical_slice_chain(root, Y, 40000, torch.Generator().manual_seed(0))
    f = draws[:, :, 0].numpy()
    assert abs(mean[0] - mean[1]) > 1.0  # the likelihood moves the posterior
    np.testing.assert_allclose(f.mean(0), mean, atol=0.1)
    np.testing.assert_allclose((f**2).mean(0), second, rtol=0.06)
