"""Compose the latent distribution kernel with other gpytorch kernels in your own model.

A sum of two LDKs -- an RBF embedding (distributional similarity) and a linear embedding
(mean-vector similarity) -- each with its own output scale, in a plain gpytorch ExactGP
trained with ExactMarginalLogLikelihood (which, with LDK's latent prior, is the MAP
objective of the GP-LVSM paper divided by n).

    python examples/gpytorch_composition.py [--tiny]
"""

from __future__ import annotations

import argparse

import gpytorch
import torch

import lvgp
from lvgp.datasets import make_synonym_regression


class TwoViewGP(gpytorch.models.ExactGP):
    def __init__(self, x, y, num_words):
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        self.mean_module = gpytorch.means.ConstantMean()
        rbf = lvgp.LatentDistributionKernel(num_words, latent_dim=2, embedding="rbf", rho=1.0, seed=0)
        lin = lvgp.LatentDistributionKernel(num_words, latent_dim=2, embedding="linear", rho=10.0, seed=1)
        self.covar_module = gpytorch.kernels.ScaleKernel(rbf) + gpytorch.kernels.ScaleKernel(lin)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args(argv)
    torch.set_default_dtype(torch.float64)

    corpus = make_synonym_regression(n=60 if args.tiny else 300, noise=0.05, random_state=0)
    vocab = lvgp.Vocabulary().fit(corpus.texts)
    x = vocab.encode(corpus.texts)  # n x L long tensor, padded with lvgp.PAD
    y = torch.as_tensor(corpus.y)
    n_train = len(y) // 2

    model = TwoViewGP(x[:n_train], y[:n_train], num_words=len(vocab))
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    model.train()
    for step in range(20 if args.tiny else 300):
        optimizer.zero_grad()
        loss = -mll(model(x[:n_train]), y[:n_train])
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step:3d}  -log posterior / n = {loss.item():.4f}")

    model.eval()
    with torch.no_grad(), lvgp.exact_numerics():
        pred = model.likelihood(model(x[n_train:]))
    rmse = (pred.mean - y[n_train:]).pow(2).mean().sqrt().item()
    print(f"held-out RMSE {rmse:.4f} (target std {y[n_train:].std().item():.4f})")
    return rmse


if __name__ == "__main__":
    main()
