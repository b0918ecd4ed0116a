"""Sparse variational GP-LVSM at scale: epoch time and peak memory against n.

Synthetic short documents (``lvgp.datasets.make_synonym_regression``: 3-8 words from a
vocabulary of synonym groups); M=64 inducing documents, batches of 256, q=2. For each n it
trains one epoch in a fresh process and prints seconds per epoch, microseconds per
document (constant if the cost is linear in n) and the process's peak resident memory
(independent of n apart from the data itself), with the ratio to the smallest n.

    python benchmarks/sparse_gplvsm.py [--quick] [--sizes 5000,50000] [--epochs 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from _before import run_child

from lvgp import MiniBatch
from lvgp.kernels import LDKSpec


def one_run(n: int, epochs: int) -> dict:
    import numpy as np

    from lvgp import SparseGPLVSMRegressor
    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=n, noise=0.1, random_state=0)
    reg = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2), num_inducing=64, optimizer=MiniBatch(batch_size=256, max_epochs=epochs), random_state=0
    )
    start = time.perf_counter()
    reg.fit(corpus.texts, corpus.y)
    seconds = time.perf_counter() - start
    rmse = float(np.sqrt(np.mean((reg.predict(corpus.texts[:2000]) - corpus.y[:2000]) ** 2)) / corpus.y.std())
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"n": n, "seconds_per_epoch": seconds / epochs, "peak_mib": peak_mib, "train_rmse_over_std": rmse}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (for the tests)")
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(one_run(args.child, args.epochs)))
        return 0
    sizes = [500, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:  # a fresh process per size: peak memory is per run
        out = run_child(__file__, ["--child", str(n), "--epochs", str(args.epochs)], check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    print("sparse GP-LVSM, M=64, batch 256, q=2, one process per size")
    print(
        f"{'n':>7}  {'s/epoch':>8}  {'us/doc':>7}  {'ratio us/doc':>12}  {'peak MiB':>9}  {'ratio MiB':>9}  {'RMSE/std':>8}"
    )
    for r in rows:
        per_doc = 1e6 * r["seconds_per_epoch"] / r["n"]
        base_per_doc = 1e6 * base["seconds_per_epoch"] / base["n"]
        print(
            f"{r['n']:>7}  {r['seconds_per_epoch']:8.1f}  {per_doc:7.0f}  {per_doc / base_per_doc:12.2f}  "
            f"{r['peak_mib']:9.0f}  {r['peak_mib'] / base['peak_mib']:9.2f}  {r['train_rmse_over_std']:8.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
