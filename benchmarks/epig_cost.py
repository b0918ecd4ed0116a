"""EPIG's acquisition scores (``lvgp.models.acquisition.epig``) at the active study's sizes: every candidate of the
unlabelled pool against 100 target texts, 64 latent draws a pair, the classes of r8 (8), 20ng (20) and an intent
set (150). lvgp's Monte Carlo scoring (``estimator="monte-carlo"``, the study's until ``epig_estimator.py``) against
the implementation it replaced (kept below as :func:`reference_epig`, verbatim:
``torch.softmax`` over the targets' draws, an ``einsum`` for the joint tables, the logarithm of their margins'
outer product), measured in the same run on the same inputs, with their largest relative difference.

    python benchmarks/epig_cost.py --threads 1      # the run recorded in benchmarks/README.md
    python benchmarks/epig_cost.py --quick          # seconds; what the test-suite runs

The inputs are random (latent means, variances and candidate-target covariances of the right shapes); what is
measured is the arithmetic. Each round of ``gp-power-epig`` and ``gp-pool-power-epig`` scores the whole pool
so: 20 rounds on r8 (budget 200) and 40 on 20ng (budget 400). Both scorings are timed on the first
``--candidates`` of the pool and the time scaled to the pool (the cost is linear in the candidates).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

#: (name, classes, pool size) of the sizes measured
SIZES = (("r8", 8, 5485), ("20ng", 20, 5000), ("intent set", 150, 1500))


def reference_epig(mean, var, target_mean, target_var, cov, n_samples=64, seed=0, chunk_entries=2**22):
    """EPIG as lvgp computed it before (commit 61bcc3d), for the ratio and the agreement."""
    import torch

    from lvgp._random import numpy_generator

    n, C = mean.shape
    m = target_mean.shape[0]
    draws = numpy_generator(seed).standard_normal((2, n_samples, C))
    eps, eps_target = torch.from_numpy(draws[0]), torch.from_numpy(draws[1])
    sd = torch.from_numpy(np.sqrt(np.clip(var, 0.0, None)))
    mu, mu_t, var_t = torch.from_numpy(mean), torch.from_numpy(target_mean), torch.from_numpy(target_var)
    loading = torch.from_numpy(cov).permute(1, 2, 0) / torch.where(sd > 0, sd, 1.0)[:, None, :]
    loading = torch.where(sd[:, None, :] > 0, loading, 0.0)

    def softmax(f):
        if C == 1:
            f = torch.cat([torch.zeros_like(f), f], dim=-1)
        return torch.softmax(f, dim=-1)

    out = np.empty(n)
    chunk = max(1, chunk_entries // max(1, m * n_samples * C))
    for start in range(0, n, chunk):
        rows = slice(start, min(n, start + chunk))
        p = softmax(mu[rows, None, :] + sd[rows, None, :] * eps)
        load = loading[rows]
        rest = (var_t[None] - load * load).clamp_min(0.0).sqrt()
        f_t = mu_t[None, :, None, :] + load[:, :, None, :] * eps + rest[:, :, None, :] * eps_target
        p_t = softmax(f_t)
        joint = torch.einsum("bsc,bmsd->bmcd", p, p_t) / n_samples
        outer = joint.sum(-1, keepdim=True) * joint.sum(-2, keepdim=True)
        terms = torch.where(joint > 0, joint * (torch.log(joint) - torch.log(outer.clamp_min(1e-300))), 0.0)
        out[rows] = terms.sum((-2, -1)).mean(-1).clamp_min(0.0).numpy()
    return out


def inputs(rng: np.random.Generator, n: int, m: int, C: int):
    """Latent means and variances of ``n`` candidates and ``m`` targets, and covariances within each pair's
    Cauchy-Schwarz bound (correlations in [-0.5, 0.5])."""
    mean, target_mean = rng.normal(-3.0, 2.0, size=(n, C)), rng.normal(-3.0, 2.0, size=(m, C))
    var, target_var = rng.uniform(0.05, 2.0, size=(n, C)), rng.uniform(0.05, 2.0, size=(m, C))
    rho = rng.uniform(-0.5, 0.5, size=(C, n, m))
    return mean, var, target_mean, target_var, rho * np.sqrt(var.T[:, :, None] * target_var.T[:, None, :])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--candidates", type=int, default=400, help="candidates timed (scaled to the pool)")
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="timings a size; the fastest is kept")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = SIZES
    if args.quick:
        sizes, args.candidates, args.targets, args.repeats = (("toy", 4, 60), ("binary", 1, 60)), 20, 10, 1

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    from lvgp.models.acquisition import EPIG_SAMPLES, epig

    rng = np.random.default_rng(0)
    print(
        f"EPIG, {args.targets} targets, {EPIG_SAMPLES} draws a pair, {args.threads} thread(s); seconds for "
        f"{args.candidates} candidates, then scaled to a round over the pool\n"
    )
    print("| classes | pool | reference (s) | lvgp (s) | speed-up | a round over the pool, reference / lvgp (s) |")
    print("|---|---|---|---|---|---|")

    def fastest(f, values):
        best, value = np.inf, None
        for _ in range(args.repeats):
            start = time.perf_counter()
            value = f(*values)
            best = min(best, time.perf_counter() - start)
        return best, value

    worst = 0.0
    for name, C, pool in sizes:
        values = inputs(rng, args.candidates, args.targets, C)
        reference_s, reference = fastest(reference_epig, values)
        lvgp_s, ours = fastest(lambda *v: epig(*v, estimator="monte-carlo"), values)
        worst = max(worst, float(np.max(np.abs(ours - reference) / np.maximum(np.abs(reference), 1e-300))))
        scale = pool / args.candidates
        print(
            f"| {C} ({name}) | {pool:,} | {reference_s:.3f} | {lvgp_s:.3f} | {reference_s / lvgp_s:.1f}x | "
            f"{reference_s * scale:.1f} / {lvgp_s * scale:.1f} |"
        )
    print(f"\nlargest relative difference between the two: {worst:.1e}")
    if worst > 1e-9:
        raise SystemExit(f"the two disagree: largest relative difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
