"""The cost of the Laplace GP classifier's evidence at the issue's sizes (issue 56, 1): one mode search
from the prior mean (R&W alg. 3.3) and one evaluation of the approximate evidence with its implicit
gradient (eq. 3.44), given the kernel matrix, for n documents of C classes sharing one kernel.

The goals (one thread unless said, beyond the encoding): a 200-document 20-class cell within 30 s,
500 documents within 3 minutes, 1,500 documents of 150 classes within 10 minutes on two threads. A fit
takes tens of L-BFGS iterations, each one evidence and gradient (a warm-started mode search: a few
Newton steps); the table gives the parts so a fit's time can be read off. The mode is searched twice,
its Newton steps solved by alg. 3.3's Choleskys and by conjugate gradients (``find_mode(solver=...)``),
in the same run.

    python benchmarks/laplace_cost.py [--quick] [--sizes 100:20:1,150:20:1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

#: (documents, classes, threads) of the goals
SIZES = ((200, 20, 1), (500, 20, 1), (1500, 150, 2))


def problem(n: int, n_classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A shared cosine kernel of n random 64-dimensional documents (scale 5, labels from the nearest of
    ``n_classes`` random centres plus noise), zero means, one-hot labels ``C x n``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, 64))
    codes = rng.integers(0, n_classes, n)
    x = centres[codes] + 1.5 * rng.normal(size=(n, 64))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    K = torch.from_numpy(5.0 * x @ x.T + 1.0)  # the intercepts' variance 1 in the covariance
    Y = torch.nn.functional.one_hot(torch.from_numpy(codes), n_classes).mT.double()
    return K.expand(n_classes, n, n), torch.zeros(n_classes, dtype=torch.float64), Y


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 documents of 6 classes")
    parser.add_argument(
        "--sizes", default=None, help="documents:classes:threads,... in place of the goals' (e.g. 100:20:1,150:20:1)"
    )
    args = parser.parse_args(argv)
    from lvgp.experiments.executors import limit_threads
    from lvgp.models.laplace import find_mode, log_evidence

    sizes = ((60, 6, 1),) if args.quick else SIZES
    if args.sizes:
        sizes = tuple(tuple(int(v) for v in size.split(":")) for size in args.sizes.split(","))
    print(
        "| documents | classes | threads | Newton steps | mode s, Choleskys | mode s, CG | CG iterations | "
        "Choleskys / CG | largest mode difference | evidence + gradient s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, n_classes, threads in sizes:
        limit_threads(threads)
        K, m, Y = problem(n, n_classes)
        seconds, modes = {}, {}
        for solver in ("cholesky", "cg"):
            start = time.perf_counter()
            modes[solver] = find_mode(K, m, Y, solver=solver)
            seconds[solver] = time.perf_counter() - start
        mode = modes["cg"]
        scale = torch.ones((), dtype=torch.float64, requires_grad=True)
        start = time.perf_counter()
        value = log_evidence(scale * K, m, Y, mode)
        value.backward()
        evidence_seconds = time.perf_counter() - start
        difference = float((modes["cg"].f - modes["cholesky"].f).abs().max())
        steps = f"{modes['cholesky'].n_iter} / {mode.n_iter}"
        print(
            f"| {n:,} | {n_classes} | {threads} | {steps} | {seconds['cholesky']:.2f} | {seconds['cg']:.2f} | "
            f"{mode.cg_iterations} | {seconds['cholesky'] / seconds['cg']:.1f}x | {difference:.1e} | {evidence_seconds:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
