"""The Dirichlet GP classifier's evidence and its gradient, and its predictions, with one factorization
for all classes (lvgp.models.dirichlet) against gpytorch's batched evidence and a per-class prediction,
which factor each class's covariance.

Each evidence row also times the same one-factorization algebra through autograd, as lvgp computed it
before its closed-form gradient (``evidence_shared_autograd``).

The setting of the studies' GP classifiers (``class_hyperparameters="shared"``): one ``n x n`` kernel
matrix, ``C`` classes of ``n / C`` documents, the Dirichlet noise of ``alpha_epsilon = 1e-6`` plus a
shared additional noise. Each row times one evaluation of the evidence and its gradient (the L-BFGS
step's work beyond the kernel), median of ``--repeats``, both in the same run, one thread; the values
agree to rounding (printed). The second table times the latent means and variances of 2,000 test
documents in blocks of 256 given their cross-covariances, once per class (a Cholesky factor a class,
gpytorch's exact prediction) and from one factorization.

    python benchmarks/dirichlet_evidence.py            # r8-, 20ng- and intent-sized: (n, C) up to (3000, 150)
    python benchmarks/dirichlet_evidence.py --quick    # small sizes, seconds
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator

from lvgp.base.numerics import exact_numerics
from lvgp.models.dirichlet import SharedDirichletPosterior, shared_dirichlet_log_evidence


def problem(n: int, C: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(n, 64, generator=g, dtype=torch.float64)
    log_scale = torch.zeros((), dtype=torch.float64, requires_grad=True)
    codes = torch.arange(n) % C
    eps = 1e-6
    alpha = torch.full((C, n), eps, dtype=torch.float64)
    alpha[codes, torch.arange(n)] += 1
    sigma2 = torch.log(1 / alpha + 1)
    targets = alpha.log() - sigma2 / 2
    second = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    means = torch.full((C,), -5.0, dtype=torch.float64, requires_grad=True)
    return features, log_scale, sigma2, second, means, targets


def evidence_shared(features, log_scale, sigma2, second, means, targets):
    K = log_scale.exp() * (features @ features.mT) / features.shape[1]
    return shared_dirichlet_log_evidence(K, means, sigma2 + second, targets)


def evidence_shared_autograd(features, log_scale, sigma2, second, means, targets):
    """The one-factorization evidence as lvgp computed it before its closed-form gradient (2026-11-29):
    the same algebra through autograd, each class's own rows gathered out of the n x n inverse factor
    (whose backward fills an n x n gradient a class)."""
    K = log_scale.exp() * (features @ features.mT) / features.shape[1]
    noise = sigma2 + second
    n, C = K.shape[-1], noise.shape[0]
    base = noise.max()
    off = noise < base
    L = torch.linalg.cholesky(K + torch.diag_embed(base.expand(n)))
    L_inv = torch.linalg.solve_triangular(L, torch.eye(n, dtype=K.dtype), upper=False)
    Z = L_inv @ (targets - means[:, None]).mT
    Q = L_inv.mT @ Z
    total = -0.5 * ((Z * Z).sum() + C * 2 * torch.log(torch.diagonal(L)).sum() + C * n * math.log(2 * math.pi))
    for c in range(C):
        rows = torch.nonzero(off[c]).ravel()
        d = noise[c, rows] - base
        W = L_inv[:, rows]
        R = torch.linalg.cholesky(-torch.diag_embed(1.0 / d) - W.mT @ W)
        u = torch.linalg.solve_triangular(R, Q[rows, c, None], upper=False)
        total = total - 0.5 * ((u * u).sum() + torch.log(-d).sum() + 2 * torch.log(torch.diagonal(R)).sum())
    return total


def evidence_gpytorch(features, log_scale, sigma2, second, means, targets):
    K = log_scale.exp() * (features @ features.mT) / features.shape[1]
    C, n = targets.shape
    cov = K.expand(C, n, n) + torch.diag_embed(sigma2 + second)
    return MultivariateNormal(means[:, None].expand(C, n), DenseLinearOperator(cov)).log_prob(targets).sum()


def timed(fn, args, repeats: int) -> tuple[float, float]:
    times, value = [], math.nan
    for _ in range(repeats):
        start = time.perf_counter()
        with exact_numerics():  # Cholesky at every size, as the classifier computes (not CG above 800)
            value = fn(*args)
            value.backward()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], float(value.detach())


def predict_per_class(K, means, noise, targets, k_star, k_diag):
    """Each class's own Cholesky factor, then its mean and variance at the test documents."""
    out_mean, out_var = [], []
    for c in range(noise.shape[0]):
        L = torch.linalg.cholesky(K + torch.diag_embed(noise[c]))
        alpha = torch.cholesky_solve((targets[c] - means[c])[:, None], L)
        V = torch.linalg.solve_triangular(L, k_star, upper=False)
        out_mean.append(means[c] + (k_star.mT @ alpha).squeeze(-1))
        out_var.append(k_diag - (V * V).sum(0))
    return torch.stack(out_mean, -1), torch.stack(out_var, -1)


def prediction_rows(sizes, repeats: int) -> None:
    print("\n| n | C | per class (s) | one factorization (s) | speed-up | largest |difference| |")
    print("|---|---|---|---|---|---|")
    for n, C in sizes:
        features, log_scale, sigma2, second, means, targets = problem(n, C)
        with torch.no_grad():
            g = torch.Generator().manual_seed(1)
            test = torch.randn(2000, features.shape[1], generator=g, dtype=torch.float64)
            K = (features @ features.mT) / features.shape[1]
            noise = sigma2 + second
            cross = (features @ test.mT) / features.shape[1]
            diag = (test * test).sum(1) / features.shape[1]
            times = {}
            results = {}
            for name in ("per class", "shared"):
                runs = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    parts = []
                    if name == "shared":
                        posterior = SharedDirichletPosterior(K, means, noise, targets)
                    for b in range(0, 2000, 256):
                        k_star, k_diag = cross[:, b : b + 256], diag[b : b + 256]
                        if name == "shared":
                            parts.append(posterior.predict(k_star, k_diag))
                        else:
                            parts.append(predict_per_class(K, means, noise, targets, k_star, k_diag))
                    runs.append(time.perf_counter() - start)
                times[name] = sorted(runs)[len(runs) // 2]
                results[name] = [torch.cat([p[i] for p in parts]) for i in (0, 1)]
            diff = max(float((a - b).abs().max()) for a, b in zip(results["shared"], results["per class"]))
        before, now = times["per class"], times["shared"]
        print(f"| {n} | {C} | {before:.3f} | {now:.3f} | {before / now:.1f}x | {diff:.1e} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = [(200, 8), (300, 20)] if args.quick else [(300, 6), (750, 15), (1000, 20), (1500, 150), (3000, 150)]
    print(f"{args.threads} thread(s)")
    print(
        "| n | C | gpytorch, per class (s) | one factorization, autograd (s) | one factorization, closed-form "
        "gradient (s) | speed-up over gpytorch | over autograd | |difference| / |evidence| |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n, C in sizes:
        data = problem(n, C)
        # gpytorch's C factorizations: minutes a call beyond 1,500 documents of 150 classes
        before, reference = timed(evidence_gpytorch, data, args.repeats) if n <= 1500 else (math.nan, math.nan)
        autograd, reference_shared = timed(evidence_shared_autograd, data, args.repeats)
        now, ours = timed(evidence_shared, data, args.repeats)
        reference = reference if n <= 1500 else reference_shared
        print(
            f"| {n} | {C} | {before:.3f} | {autograd:.3f} | {now:.3f} | {before / now:.1f}x | {autograd / now:.1f}x | "
            f"{abs(ours - reference) / abs(reference):.1e} |"
        )
    prediction_rows(sizes[:4] if not args.quick else sizes, args.repeats)


if __name__ == "__main__":
    main()
