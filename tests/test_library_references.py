"""lvgp's own RBF Gram and whitened sparse-GP conditional against gpytorch's and
pyro.contrib.gp's, which they do not call, for these reasons (one line each):

* RBF: ``rbf_gram`` has a fused closed-form backward (one ``m1 x m2`` buffer; thesis eq. 3.20)
  that the LDK's word-pair Grams need for speed, and takes ``gamma`` as a plain tensor, so the
  GP covariate-embedding baseline can differentiate through a lengthscale that is not a
  module parameter (gpytorch's and pyro's kernels own their lengthscale as a parameter).
* Whitened conditional: the CLGP evaluates it for a batch of Monte Carlo particles of x
  (``S x n x Q``), which ``pyro.contrib.gp``'s 2-d kernels cannot take, and shares one
  factorization across all categorical variables.

Here both must agree with the libraries where the libraries apply.
"""

from __future__ import annotations

import gpytorch
import pyro
import pyro.contrib.gp as gp
import pytest
import torch

from lvgp.baselines.gp_embedding import rbf_covariance
from lvgp.kernels.latent_distribution import rbf_gram
from lvgp.models.clgp.model import CategoricalLatentGP

D = torch.float64


@pytest.fixture(autouse=True)
def clean_param_store():
    pyro.clear_param_store()  # pyro's kernels and the CLGP both name a parameter "lengthscale"
    yield
    pyro.clear_param_store()


def test_rbf_gram_matches_gpytorch_and_pyro_and_its_gradient_is_autograds():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(7, 3, generator=g, dtype=D), torch.randn(5, 3, generator=g, dtype=D)
    lengthscale = 0.8
    gamma = torch.tensor(1 / lengthscale**2, dtype=D)
    rbf = gpytorch.kernels.RBFKernel().to(D)
    rbf.lengthscale = lengthscale
    with torch.no_grad():
        expected = rbf(a, b).to_dense()
    torch.testing.assert_close(rbf_gram(a, b, gamma), expected)
    pyro_rbf = gp.kernels.RBF(
        input_dim=3, variance=torch.tensor(1.0, dtype=D), lengthscale=torch.tensor(lengthscale, dtype=D)
    )
    with torch.no_grad():
        torch.testing.assert_close(rbf_gram(a, b, gamma), pyro_rbf(a, b))
    torch.testing.assert_close(rbf_covariance(a, b, torch.tensor(lengthscale, dtype=D)), expected)
    # the fused backward against autograd through the plain formula (batched inputs take that path)
    inputs = (a.clone().requires_grad_(), b.clone().requires_grad_(), gamma.clone().requires_grad_())
    assert torch.autograd.gradcheck(rbf_gram, inputs)
    weights = torch.randn(7, 5, generator=g, dtype=D)
    fused = torch.autograd.grad((rbf_gram(*inputs) * weights).sum(), inputs)
    plain = torch.autograd.grad((rbf_gram(*(t.unsqueeze(0) if t.dim() else t for t in inputs)) * weights).sum(), inputs)
    for x, y in zip(fused, plain):
        torch.testing.assert_close(x, y)


def test_clgp_whitened_conditional_matches_pyro_contrib_gp():
    model = CategoricalLatentGP([3, 4], n_rows=9, latent_dim=2, num_inducing=5, seed=0, lengthscale_init=1.0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(9, 2, generator=g)
    v = torch.randn(3, 5, generator=g)  # a whitened sample of V_0: one row per category
    with torch.no_grad():
        mean, sd = model.function_moments(0, x, v)
        kernel = gp.kernels.RBF(
            input_dim=2, variance=model.signal_variance.clone(), lengthscale=model.lengthscale.clone()
        )
        loc, var = gp.util.conditional(x, model.inducing.clone(), kernel, v, whiten=True, jitter=model.jitter)
    assert sd is not None
    torch.testing.assert_close(mean, loc.mT, rtol=1e-4, atol=1e-5)  # n x K_d
    torch.testing.assert_close(sd.squeeze(-1) ** 2, var[0], rtol=1e-4, atol=1e-5)
    assert var.max() > 0.1 and mean.abs().max() > 0.1  # neither side is trivial
    # a batch of particles gives the same rows as one particle at a time
    xs = torch.randn(4, 9, 2, generator=g)
    vs = torch.randn(4, 1, 3, 5, generator=g)
    with torch.no_grad():
        batched, batched_sd = model.function_moments(0, xs, vs)
        for s in range(4):
            single, single_sd = model.function_moments(0, xs[s], vs[s, 0])
            torch.testing.assert_close(batched[s], single)
            torch.testing.assert_close(batched_sd[s], single_sd)
