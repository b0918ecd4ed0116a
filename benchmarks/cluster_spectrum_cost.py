"""The cluster kernel's spectrum for many eigenvectors of a larger cloud: LOBPCG on the sparse graph
against the dense matrix's leading eigenvectors alone (LAPACK's ``evr``), the same cloud in the same run.

``ClusterKernel`` keeps 2 eigenvectors a class; with 150 classes (an intent set) that is 300. Above
8,192 points the kernel took them from LOBPCG, whose block (and its orthogonalizations, ``n x 3k`` by
``3k``) grows with them: at 15,100 points and 300 eigenvectors it ran past 20 minutes on two cores. Since
then, from 100 eigenvectors on and up to 20,000 points, it takes the dense matrix's leading eigenvectors
alone. The cloud: unit vectors of ``--clusters`` blurred Gaussian clusters in 384 dimensions (a sentence
encoder's size), the kernel's graph of 10 neighbours. Prints each solver's seconds, the ratio, and how far
apart their eigenvalues and kernels are.

    python benchmarks/cluster_spectrum_cost.py --points 9000 --components 150 --threads 2
    python benchmarks/cluster_spectrum_cost.py --quick
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=9000)
    parser.add_argument("--components", type=int, default=150)
    parser.add_argument("--clusters", type=int, default=75)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="400 points, 40 eigenvectors (the limits lowered)")
    args = parser.parse_args()

    import numpy as np
    import torch

    from lvgp.kernels import ClusterKernel, point_cloud

    torch.set_num_threads(args.threads)
    if args.quick:
        args.points, args.components, args.clusters = 400, 40, 20
    # both solvers above the dense limit; the subset from this many eigenvectors (quick: lowered to match)
    point_cloud._DENSE_SPECTRUM = min(point_cloud._DENSE_SPECTRUM, args.points - 1)
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(args.clusters, 384))
    cloud = centres[rng.integers(0, args.clusters, args.points)] + 1.5 * rng.normal(size=(args.points, 384))
    cloud = torch.nn.functional.normalize(torch.as_tensor(cloud), dim=-1)
    probe = cloud[:200] + 0.01

    timings, kernels = {}, {}
    for name, subset_from in (("LOBPCG (before)", args.components + 1), ("dense, leading alone (now)", 1)):
        point_cloud._DENSE_SUBSET_COMPONENTS = subset_from
        start = time.perf_counter()
        kernels[name] = ClusterKernel(cloud, n_components=args.components, n_neighbors=10)
        timings[name] = time.perf_counter() - start
    before, now = kernels
    k_before, k_now = kernels[before], kernels[now]
    print(f"\n{args.points:,} points, {args.components} eigenvectors, {args.threads} threads\n")
    print("| solver | s |\n|---|---|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.1f} |")
    print(f"\nbefore / now: {timings[before] / timings[now]:.1f}x")
    gap = (k_before.eigenvalues - k_now.eigenvalues).abs().max().item()
    kgap = (k_before(probe, probe).to_dense() - k_now(probe, probe).to_dense()).abs().max().item()
    print(f"largest eigenvalue difference {gap:.1e}; largest kernel difference on 200 points {kgap:.1e}")


if __name__ == "__main__":
    main()
