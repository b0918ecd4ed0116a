"""The cluster kernel's spectrum: Lanczos on the sparse graph (each connected component on its own) against the
dense routes it replaced, on the same graph in the same run.

``ClusterKernel`` keeps the leading eigenvectors of its cloud graph's normalized affinity (2 a class in the
studies: 16 for r8, 40 for 20ng, 300 for an intent set of 150 classes). Before, it took them from a dense
eigendecomposition of the whole ``n x n`` matrix up to 8,192 points (20 s for r8's 5,485 texts on one
thread, once a seed of the active study) and, from 100 eigenvectors on, from the dense matrix's leading
eigenvectors alone (LAPACK's ``evr``; its tridiagonal reduction is the cost); above 8,192 points with fewer,
LOBPCG (a block method: the graph's components repeat the eigenvalue 1). Now from
:func:`lvgp.kernels.point_cloud.leading_eigenpairs`: Lanczos (ARPACK's ``eigsh``) on each component.

The cloud: ``--dataset r8`` or ``20ng`` (the training texts' sentence-encoder vectors: the active study's
pool; with ``--with-test`` the test texts too, as the open-set study's ``--unlabeled-texts all``; downloads
the data and the encoder on the first run), or unit vectors of ``--clusters`` blurred Gaussian clusters in
384 dimensions (a sentence encoder's size; their graph falls apart into the clusters). The graph of 10
neighbours. Prints its connected components, each route's seconds, the ratios, and how far apart their
eigenvalues and the kernels' projections are.

    python benchmarks/cluster_spectrum_cost.py --dataset r8 --components 16 --threads 1
    python benchmarks/cluster_spectrum_cost.py --dataset r8 --with-test --components 300 --threads 1
    python benchmarks/cluster_spectrum_cost.py --points 9000 --components 150 --threads 1
    python benchmarks/cluster_spectrum_cost.py --quick
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("r8", "20ng"), default=None, help="the training texts' vectors")
    parser.add_argument("--with-test", action="store_true", help="the test texts in the cloud too (--dataset)")
    parser.add_argument("--points", type=int, default=9000, help="synthetic points (without --dataset)")
    parser.add_argument("--components", type=int, default=150)
    parser.add_argument("--clusters", type=int, default=75)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-whole", action="store_true", help="not the whole dense eigendecomposition")
    parser.add_argument("--skip-lobpcg", action="store_true", help="not LOBPCG (slow for many eigenvectors)")
    parser.add_argument("--quick", action="store_true", help="1,200 synthetic points, 40 eigenvectors, one thread")
    args = parser.parse_args()

    import numpy as np
    import scipy.linalg
    import scipy.sparse
    import scipy.sparse.linalg
    import torch
    from scipy.sparse.csgraph import connected_components
    from threadpoolctl import threadpool_limits

    from lvgp.kernels.point_cloud import cloud_affinity, leading_eigenpairs

    if args.quick:
        # one thread: a smoke run beside the test suite's other worker (two threads spun against it: 4-6x the time)
        args.dataset, args.points, args.components, args.clusters, args.threads = None, 1200, 40, 20, 1
    torch.set_num_threads(args.threads)
    if args.dataset:
        from lvgp.datasets import load_text_classification
        from lvgp.encoders import resolve_encoder

        corpus = load_text_classification(args.dataset)
        texts = corpus.train_texts + (corpus.test_texts if args.with_test else [])
        cloud = torch.as_tensor(np.asarray(resolve_encoder("all-MiniLM-L6-v2", "cpu").encode(list(texts))))
        what = f"{args.dataset}'s {len(texts):,} {'training and test' if args.with_test else 'training'} texts"
    else:
        rng = np.random.default_rng(0)
        centres = rng.normal(size=(args.clusters, 384))
        points = centres[rng.integers(0, args.clusters, args.points)] + 1.5 * rng.normal(size=(args.points, 384))
        cloud = torch.as_tensor(points)
        what = f"{args.points:,} synthetic points in {args.clusters} clusters"
    cloud = torch.nn.functional.normalize(cloud.double(), dim=-1)

    n, r = len(cloud), args.components
    affinity, _ = cloud_affinity(cloud, 10)  # the graph as ClusterKernel builds it

    def whole():
        values, vectors = np.linalg.eigh(affinity.toarray())
        return values[-r:], vectors[:, -r:]

    def leading_alone():
        return scipy.linalg.eigh(affinity.toarray(), subset_by_index=[n - r, n - 1], driver="evr", overwrite_a=True)

    def lobpcg():
        import warnings

        start = np.random.default_rng(0).standard_normal((n, r))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values, vectors = scipy.sparse.linalg.lobpcg(affinity, start, largest=True, tol=1e-9, maxiter=2000)
        if any("requested tolerance" in str(w.message) for w in caught):
            print("(LOBPCG did not reach its tolerance: before, the dense route replaced it up to 20,000 points)")
        order = np.argsort(values)
        return values[order], vectors[:, order]

    routes = {"Lanczos, each component (now)": lambda: leading_eigenpairs(affinity, r)}
    if not args.skip_lobpcg:
        routes["LOBPCG (before, above 8,192 with under 100)"] = lobpcg
    routes["dense, leading alone (before, from 100)"] = leading_alone
    if not args.skip_whole:
        routes["dense, whole (before, to 8,192)"] = whole
    timings, pairs = {}, {}
    with threadpool_limits(args.threads):
        for name, route in routes.items():
            start = time.perf_counter()
            pairs[name] = route()
            timings[name] = time.perf_counter() - start
    now = next(iter(routes))
    parts = connected_components(affinity, directed=False)[0]
    graph = "a connected graph" if parts == 1 else f"a graph of {parts} connected components"
    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    print(f"\n{what} ({graph}), {r} eigenvectors, {threads}\n")
    print("| route | s | before / now |\n|---|---|---|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.2f} | {seconds / timings[now]:.1f}x |")
    values, vectors = pairs[now]
    projection = (vectors * values**3) @ vectors[:200].T  # the kernel's weighting at the studies' power 6
    for name in list(routes)[1:]:
        other_values, other_vectors = pairs[name]
        gap = np.abs(np.sort(values) - np.sort(other_values)).max()
        other = (other_vectors * other_values**3) @ other_vectors[:200].T
        print(
            f"\nnow against {name}: largest eigenvalue difference {gap:.1e}; "
            f"largest difference of V diag(lambda^3) V' on 200 points {np.abs(projection - other).max():.1e}"
        )


if __name__ == "__main__":
    main()
