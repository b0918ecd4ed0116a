"""The Mahalanobis detector's scoring (``EncoderMahalanobis.score_samples`` / ``decision_function``) at an intent
set's sizes: 150 classes, 384-dimensional unit vectors (MiniLM's), 5,500 queries; lvgp's two matrix products
through a square root of the precision (its eigendecomposition) against the einsum over the ``n x C x d``
differences the detector used before (``np.einsum("ncd,de,nce->nc", ...)``, numpy's unoptimized contraction:
``n C d^2`` multiply-adds), measured in the same run on the same vectors, with their largest relative difference.

    python benchmarks/mahalanobis_cost.py --threads 2      # the run recorded in benchmarks/README.md
    python benchmarks/mahalanobis_cost.py --quick          # seconds; what the test-suite runs

The vectors are random unit vectors, the covariance Ledoit-Wolf's of their within-class scatter, as the detector
fits it; what is measured is the arithmetic, not a detector's quality.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def einsum_reference(vectors: np.ndarray, means: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """The detector's former scoring: every query's difference to every class mean, ``n x C x d`` at once."""
    diff = vectors[:, None, :] - means[None, :, :]
    return np.einsum("ncd,de,nce->nc", diff, precision, diff)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--classes", type=int, default=150)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=5500)
    parser.add_argument("--per-class", type=int, default=10, help="labelled vectors a class (the covariance's)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.quick:
        args.classes, args.dim, args.queries = 12, 32, 200

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    from sklearn.covariance import LedoitWolf

    from lvgp.baselines.encoder import _squared_mahalanobis

    rng = np.random.default_rng(0)

    def unit(n: int) -> np.ndarray:
        v = rng.standard_normal((n, args.dim))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    labelled = unit(args.classes * args.per_class)
    codes = np.repeat(np.arange(args.classes), args.per_class)
    means = np.stack([labelled[codes == c].mean(axis=0) for c in range(args.classes)])
    precision = LedoitWolf(assume_centered=True).fit(labelled - means[codes]).precision_
    queries = unit(args.queries)

    start = time.perf_counter()
    ours = _squared_mahalanobis(queries, means, precision)
    lvgp_s = time.perf_counter() - start
    start = time.perf_counter()
    reference = einsum_reference(queries, means, precision)
    reference_s = time.perf_counter() - start
    worst = float(np.max(np.abs(ours - reference) / np.abs(reference)))
    print(
        f"{args.queries} queries, {args.classes} classes, d = {args.dim}, {args.threads} threads: "
        f"einsum {reference_s:.3f} s, lvgp {lvgp_s:.4f} s, speed-up {reference_s / lvgp_s:.0f}x; "
        f"largest relative difference {worst:.1e}"
    )
    if worst > 1e-8:
        raise SystemExit(f"the two disagree: largest relative difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
