"""The expected softmax's nodes: Latin hypercube nodes (``lvgp.models.laplace.class_draws``, the classifiers' since
2026-12-05) against independent normal draws, each against a many-draw reference computed in the same run.

The Dirichlet and Laplace GP classifiers predict :math:`\\mathbb E[\\mathrm{softmax}(f)]` over independent Gaussian
latents by an average over fixed nodes a class (``predict_samples``). On random latent Gaussians (means ``N(0,
scale^2)``, variances uniform up to ``4 scale^2``) of a few sizes of classes, each estimate's mean and largest error
of a probability against ``--reference`` independent draws (other streams), the documents whose top class it moves,
and its seconds on one thread; last, the seconds of the expected softmax at an intent set's size (15,000 documents
of 150 classes) for the nodes at 256 and independent draws at 1,024.

    python benchmarks/softmax_nodes.py            # the run recorded in benchmarks/README.md
    python benchmarks/softmax_nodes.py --quick    # seconds; what the test-suite runs
"""

from __future__ import annotations

import argparse
import time

#: (classes, scale) of the random latents
CASES = ((6, 1.0), (15, 1.0), (15, 3.0), (150, 1.0))


def independent_draws(n_samples: int, class_seeds: list[int], dtype):
    """The nodes before 2026-12-05: ``n_samples`` independent standard normal draws a class, each class's from its
    own stream (kept here as the reference of the comparison)."""
    import torch

    from lvgp._random import torch_generator

    columns = [torch.randn(n_samples, dtype=dtype, generator=torch_generator(s)) for s in class_seeds]
    return torch.stack(columns, dim=-1)


def expected_softmax_with(nodes, mean, var, n_samples: int, class_seeds: list[int]):
    """:func:`lvgp.models.gpc.models.expected_softmax` with ``nodes`` (a function like ``class_draws``) for the
    classifiers' nodes."""
    from lvgp.models.gpc import models

    saved = models.class_draws
    models.class_draws = nodes
    try:
        return models.expected_softmax(mean, var, n_samples, class_seeds)
    finally:
        models.class_draws = saved


def random_cases(description: str):
    """The command line (``--quick``, ``--documents``, ``--reference``) of this script and ``softmax_close_calls.py``,
    and their random latents: ``(arguments, generator, documents, [(classes, scale, mean, var, reference nodes of
    the case)])`` on one thread, every case from the generator, which goes on (a quarter of the reference for 150
    classes)."""
    import torch

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--reference", type=int, default=2**16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    documents, reference = (200, 4096) if args.quick else (args.documents, args.reference)
    g = torch.Generator().manual_seed(0)
    cases = []
    for classes, scale in CASES[:2] if args.quick else CASES:
        mean = torch.randn(documents, classes, dtype=torch.float64, generator=g) * scale
        var = torch.rand(documents, classes, dtype=torch.float64, generator=g) * 4 * scale**2
        cases.append((classes, scale, mean, var, reference if classes < 100 else reference // 4))
    return args, g, documents, cases


def main() -> None:
    args, g, documents, cases = random_cases(__doc__.splitlines()[0])
    import torch

    from lvgp.models.laplace import class_draws

    estimates = (
        ("independent draws", independent_draws, 256),
        ("Latin hypercube nodes", class_draws, 256),
        ("independent draws", independent_draws, 1024),
        ("Latin hypercube nodes", class_draws, 1024),
    )
    print("| classes | scale | nodes | a class | mean error | largest error | top class moved | s |")
    print("|---|---|---|---|---|---|---|---|")
    for classes, scale, mean, var, draws in cases:
        seeds = list(range(10_000, 10_000 + classes))
        reference = expected_softmax_with(independent_draws, mean, var, draws, seeds)
        for name, nodes, n_samples in estimates:
            start = time.perf_counter()
            proba = expected_softmax_with(nodes, mean, var, n_samples, list(range(classes)))
            seconds = time.perf_counter() - start
            error = (proba - reference).abs()
            moved = int((proba.argmax(1) != reference.argmax(1)).sum())
            print(
                f"| {classes} | {scale:g} | {name} | {n_samples} | {error.mean():.4f} | {error.max():.3f} | "
                f"{moved} of {documents} | {seconds:.2f} |"
            )
    n, classes = (1500, 150) if args.quick else (15000, 150)
    mean = torch.randn(n, classes, dtype=torch.float64, generator=g)
    var = torch.rand(n, classes, dtype=torch.float64, generator=g)
    seconds = []
    for _, nodes, n_samples in (estimates[1], estimates[2]):  # the nodes at 256 a class, the draws at 1,024
        start = time.perf_counter()
        expected_softmax_with(nodes, mean, var, n_samples, list(range(classes)))
        seconds.append(time.perf_counter() - start)
    print(
        f"\nAt {n:,} documents of {classes} classes: Latin hypercube nodes, 256 a class, {seconds[0]:.2f} s; "
        f"independent draws, 1,024 a class, {seconds[1]:.2f} s (ratio {seconds[1] / seconds[0]:.1f})"
    )


if __name__ == "__main__":
    main()
