"""One ELBO gradient step of the CLGP (Gal et al. 2015): time against the number of rows.

Setting of the issue: D=10 variables of 10 categories, M=50 inducing inputs, Q=2, 5 Monte
Carlo samples (vectorized), float64, full batch. For N = 1000, 2000, 4000 rows it prints the
median seconds per step (forward + backward + optimizer update) and the ratio to N=1000:
cost linear in N means ratios near 2 and 4.

    python benchmarks/clgp_step.py [--quick] [--threads T]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyro
import torch
from _threads import add_threads_option, resolve_threads
from pyro.infer import TraceMeanField_ELBO

from lvgp.models.clgp.model import CategoricalLatentGP


def step_seconds(n: int, repeats: int, D: int = 10, K: int = 10, M: int = 50, Q: int = 2, samples: int = 5) -> float:
    rng = np.random.default_rng(0)
    y = torch.from_numpy(rng.integers(0, K, size=(n, D)))
    mask = torch.ones(n, D, dtype=torch.bool)
    with pyro.settings.context(module_local_params=True):
        model = CategoricalLatentGP([K] * D, n, latent_dim=Q, num_inducing=M, seed=0, lengthscale_init=1.0).double()
        elbo = TraceMeanField_ELBO(num_particles=samples, vectorize_particles=True, max_plate_nesting=1)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        times = []
        for _ in range(repeats + 1):  # the first step warms up
            start = time.perf_counter()
            opt.zero_grad()
            loss = elbo.differentiable_loss(model.model, model.guide, y, mask)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats (for the tests)")
    add_threads_option(parser, default=None, what="torch intra-op threads")
    args = parser.parse_args(argv)
    resolve_threads(args, default=None)
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes, repeats = ((100, 200, 400), 2) if args.quick else ((1000, 2000, 4000), 10)
    print(f"CLGP ELBO step, D=10 x 10 categories, M=50, Q=2, 5 samples, float64, {torch.get_num_threads()} threads")
    print(f"{'N':>6}  {'s/step':>8}  {'ratio to N=' + str(sizes[0]):>16}  {'N ratio':>8}")
    base = None
    for n in sizes:
        seconds = step_seconds(n, repeats)
        base = base or seconds
        print(f"{n:>6}  {seconds:8.3f}  {seconds / base:16.2f}  {n / sizes[0]:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
