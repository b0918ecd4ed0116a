"""Close calls of the expected softmax: more nodes for the rows whose top two classes the nodes' error could swap.

The GP classifiers' expected softmax averages over 256 Latin hypercube nodes a class (``predict_samples``;
``softmax_nodes.py``). Where a document's top two probabilities are nearly equal, the nodes' error decides its top
class. A fix that keeps each row a function of its own latents: average every row over the 256 nodes, flag the
rows whose gap between the top two probabilities is within ``z`` standard errors of zero, and average those again
over 16 times as many nodes of the same scheme. Two estimates of the standard error from the 256 nodes' values of the
gap: the independent draws' ``sd / sqrt(S)`` (which overstates the nodes' error: they are stratified), and the same
after the gap's linear regression on the nodes (a control variate: the Latin hypercube removes each class's additive
part of the error, the linear one among it).

On random latent Gaussians (``softmax_nodes.py``'s cases: means ``N(0, scale^2)``, variances uniform up to
``4 scale^2``, 2,000 documents), each row's share of documents flagged, the documents whose top class differs from a
reference of ``--reference`` Latin hypercube nodes a class (other streams; a quarter of them for 150 classes), and
its seconds on one thread with the ratio to the plain 256 nodes' in the same run (a refined row's seconds: one pass
of the 256 nodes for the probabilities and the criterion, the regression, the second average).

    python benchmarks/softmax_close_calls.py            # the run recorded in benchmarks/README.md
    python benchmarks/softmax_close_calls.py --quick    # seconds; what the test-suite runs
"""

from __future__ import annotations

import time

from softmax_nodes import random_cases  # (the sibling script: benchmarks/ is on the path)

#: the nodes a class, and those of a close call's second average
NODES, MANY = 256, 4096


def gap_standard_errors(mean, var, class_seeds: list[int]):
    """The expected softmax at 256 nodes (``rows x C``: the library's ``expected_softmax`` to rounding, its formula
    in one piece, not in blocks of rows), and from the same nodes' values each row's gap between its top two classes
    and the gap's two standard errors (independent draws'; after the linear control variate), ``rows`` each."""
    import torch

    from lvgp.models.laplace import class_draws

    nodes = class_draws(NODES, class_seeds, mean.dtype)  # S x C
    values = torch.softmax(mean + var.sqrt() * nodes.unsqueeze(1), dim=-1)  # S x rows x C
    proba = values.mean(0)
    top = proba.topk(2, dim=-1).indices
    pair = values.gather(-1, top.unsqueeze(0).expand(NODES, -1, -1))
    gap = pair[..., 0] - pair[..., 1]  # S x rows
    design = torch.cat([torch.ones(NODES, 1, dtype=mean.dtype), nodes], dim=1)
    residual = gap - design @ torch.linalg.lstsq(design, gap).solution
    return proba, gap.mean(0), gap.std(0) / NODES**0.5, residual.std(0) / NODES**0.5


def with_close_calls(mean, var, class_seeds: list[int], criterion: str, z: float):
    """The expected softmax at 256 nodes, its close calls (``criterion``: ``"independent"`` or ``"linear"``, within
    ``z`` standard errors) averaged again over 4,096; and the number of close calls."""
    from lvgp.models.gpc.models import expected_softmax

    proba, gap, independent, linear = gap_standard_errors(mean, var, class_seeds)  # one pass of the 256 nodes
    close = (gap <= z * (independent if criterion == "independent" else linear)).nonzero().squeeze(-1)
    if len(close):
        proba = proba.index_copy(0, close, expected_softmax(mean[close], var[close], MANY, class_seeds))
    return proba, len(close)


def main() -> None:
    _, _, documents, cases = random_cases(__doc__.splitlines()[0])
    from lvgp.models.gpc.models import expected_softmax

    rows = (
        ("256 nodes", None, 0.0),
        ("4,096 nodes", "all", 0.0),
        ("256, close calls by independent draws' error (z = 3) again at 4,096", "independent", 3.0),
        ("256, close calls by the error after the linear control (z = 2) again at 4,096", "linear", 2.0),
    )
    print("| classes | scale | estimate | close calls | top class moved | s | cost ratio |")
    print("|---|---|---|---|---|---|---|")
    for classes, scale, mean, var, many in cases:
        seeds = list(range(classes))
        reference = expected_softmax(mean, var, many, list(range(10_000, 10_000 + classes))).argmax(1)
        plain = None
        for name, criterion, z in rows:
            start = time.perf_counter()
            if criterion is None:
                proba, close = expected_softmax(mean, var, NODES, seeds), 0
            elif criterion == "all":
                proba, close = expected_softmax(mean, var, MANY, seeds), documents
            else:
                proba, close = with_close_calls(mean, var, seeds, criterion, z)
            seconds = time.perf_counter() - start
            plain = plain or seconds
            moved = int((proba.argmax(1) != reference).sum())
            print(
                f"| {classes} | {scale:g} | {name} | {close} of {documents} | {moved} | {seconds:.2f} | "
                f"{seconds / plain:.1f} |"
            )


if __name__ == "__main__":
    main()
