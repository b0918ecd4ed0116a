"""The sparse GP-LVSM's and the variational GP classifier's steps through the kernel stack (eager) and
fused and compiled (issue 60).

``MiniBatch(compile=True)`` on a GPU (on a CPU inside :func:`lvgp.models.fused_step.fused_steps`, as
here) makes the regressor's steps after the first evaluate
:func:`lvgp.models.fused_step.fused_objective` -- its bags built on the host, the kernel and the ELBO one
function of tensors, ``torch.compile``'d whole (forward and backward, dynamic shapes) -- with torch's
fused Adam; the 4-class variational classifier's, :func:`lvgp.models.fused_step.fused_softmax_objective`.
This script fits each model (``--models``) both ways on the same corpus (the default kernel with its
Nystrom map, as ``"auto"`` chooses at review lengths) and prints for each:

* the operators of a step (forward, backward, Adam and the classifier's natural-gradient step; ``torch.profiler`` over two steps near the end of
  the fit, divided by two), counted two ways: the **leaf** ATen operators (``large_n.py``'s count: an
  operator with no operator inside it, e.g. the ``resolve_conj`` checks inside a CPU ``mm``, not the
  ``mm``) and the **top-level** ones (the operators the step itself calls: inside a compiled graph, its
  extern calls -- ``mm``, ``linalg_cholesky_ex``, ``_embedding_bag`` -- beside inductor's own fused loops,
  which are no operators; on a GPU each of these is a kernel launch, and inductor's loops launch one
  each more);
* the host reads a step (operators whose result the host reads: each a wait for a GPU's queue);
* the median step time of the last steps, and the compiled fit's warm-up (its first fused step, less a
  steady step);
* the fused objective's loss and gradients against the eager step's, on one batch and one draw of the
  word vectors (relative to each gradient).

``--quick`` (the tests): 300 documents, 16 inducing, the fused objective eagerly (no inductor build).

    python benchmarks/fused_step.py [--docs 8000] [--threads 2] [--steps 12] [--models ...] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.profiler import ProfilerActivity, profile, schedule

HOST_READS = {
    "aten::_local_scalar_dense", "aten::nonzero", "aten::_unique2", "aten::unique_dim",
    "aten::unique_consecutive", "aten::masked_select", "aten::equal", "aten::is_nonzero",
}  # fmt: skip


MODELS = ("sparse-gplvsm", "variational-gpc")


def _estimator(model: str, data: Any, args: argparse.Namespace, compile: bool) -> tuple[Any, Any, Any]:
    """The estimator (the default kernel with its Nystrom map, as ``"auto"`` chooses at review lengths) and
    the documents and targets it is fitted on: the regressor for ``args.steps`` steps on the corpus; the
    4-class variational classifier for one epoch of ``args.steps`` batches (a step is one natural-gradient
    and one Adam step)."""
    from lvgp import LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor
    from lvgp.kernels import LDKSpec

    common = dict(num_inducing=args.inducing, num_words=data.num_words, random_state=0)
    x = torch.from_numpy(data.X)
    if model == "sparse-gplvsm":
        spec = LDKSpec(**SparseGPLVSMRegressor._default_kernel).replace(approximation="nystrom")
        options = MiniBatch(batch_size=args.batch, max_steps=args.steps, compile=compile)
        return SparseGPLVSMRegressor(spec, optimizer=options, **common), x, data.y
    spec = LDKSpec(**LDKGPClassifier._default_kernel).replace(approximation="nystrom")
    options = MiniBatch(batch_size=args.batch, max_epochs=1, compile=compile)
    n = args.steps * args.batch
    return LDKGPClassifier(spec, inference="variational", optimizer=options, **common), x[:n], data.labels[:n]


def fit_profiled(model: str, data: Any, args: argparse.Namespace, compile: bool) -> dict[str, Any]:
    """A fit of ``args.steps`` steps; its step times and the operators of two steps near its end."""
    from lvgp.models.fused_step import fused_steps

    ends: list[float] = []
    state: dict[str, Any] = {"profiler": None}

    def step_ended(optimizer: Any, *_: Any) -> None:
        if type(optimizer).__name__ != "Adam":  # the classifier's natural-gradient step comes before its Adam step
            return
        ends.append(time.perf_counter())
        if state["profiler"] is not None:
            state["profiler"].step()

    estimator, x, y = _estimator(model, data, args, compile)
    captured: list[list[Any]] = []
    hook = register_optimizer_step_post_hook(step_ended)
    start = time.perf_counter()
    try:
        plan = schedule(wait=args.steps - 4, warmup=1, active=2, repeat=1)
        with profile(activities=[ProfilerActivity.CPU], schedule=plan, on_trace_ready=lambda p: captured.append(list(p.events()))) as prof:  # fmt: skip
            state["profiler"] = prof
            with fused_steps():  # the fused step on this CPU too (by default a GPU's)
                estimator.fit(x, y)
            state["profiler"] = None
    finally:
        hook.remove()
    events = captured[0]
    leaf = [e for e in events if e.name.startswith("aten::") and not e.cpu_children]
    top = [
        e
        for e in events
        if e.name.startswith("aten::") and not (e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::"))
    ]
    steps = [b - a for a, b in zip([start, *ends], ends)]
    steady = statistics.median(steps[-5:])
    return {
        "estimator": estimator,
        "leaf": len(leaf) / 2,
        "top": len(top) / 2,
        "reads": sum(e.name in HOST_READS for e in leaf) / 2,
        "top_names": collections.Counter(e.name for e in top),
        "leaf_names": collections.Counter(e.name for e in leaf),
        "step_ms": 1e3 * steady,
        "warm_up_s": steps[1] - steady if compile else 0.0,
    }


def gaps(
    model: str, estimator: Any, data: Any, args: argparse.Namespace, compile: bool
) -> tuple[float, dict[str, float]]:
    """The fused objective (compiled or not) against the eager step on one batch: the relative loss gap
    and each gradient's relative gap (by parameter name)."""
    import gpytorch
    import numpy as np

    from lvgp.base.numerics import exact_numerics
    from lvgp.bow.padded import document_lengths, documents_at
    from lvgp.kernels import shared_evaluation
    from lvgp.kernels.spec import variational_word_vectors
    from lvgp.models.fused_step import FusedClassifierObjective, FusedSparseObjective
    from lvgp.models.inducing import whitened_softmax_elbo
    from lvgp.models.sparse import step_loss

    gp, likelihood = estimator.model_, estimator.likelihood_
    gp.train()
    likelihood.train()
    x = torch.from_numpy(data.X).long()
    rows = torch.arange(args.batch)
    xb = documents_at(x, rows, document_lengths(x)[rows])
    n = len(x) if model == "sparse-gplvsm" else args.steps * args.batch
    named = [(k, p) for k, p in [*gp.named_parameters(), *likelihood.named_parameters()] if p.requires_grad]
    params = [p for _, p in named]
    if model == "sparse-gplvsm":
        yb = torch.as_tensor((data.y[: args.batch] - estimator.y_mean_) / estimator.y_std_, dtype=torch.float64)

        def eager() -> torch.Tensor:
            mll = gpytorch.mlls.VariationalELBO(likelihood, gp, num_data=n, combine_terms=False)
            variational = variational_word_vectors(gp.covar_module)
            with exact_numerics():
                return step_loss(mll, xb, yb, variational, torch.Generator().manual_seed(0))

        sparse = FusedSparseObjective(gp, likelihood, n, compile=compile)
        fused = lambda: sparse(xb, yb, torch.Generator().manual_seed(0))  # noqa: E731
    else:
        yb = torch.as_tensor(np.searchsorted(estimator.classes_, data.labels[: args.batch]))
        draws = torch.randn(10, args.batch, len(estimator.classes_), dtype=torch.float64, generator=torch.Generator().manual_seed(0))  # fmt: skip

        def eager() -> torch.Tensor:
            mll = gpytorch.mlls.VariationalELBO(likelihood, gp, num_data=n)
            with exact_numerics(), shared_evaluation(gp):
                return -whitened_softmax_elbo(mll, xb, yb, draws)

        classifier = FusedClassifierObjective(gp, likelihood, n, compile=compile)
        fused = lambda: classifier(xb, yb, draws)  # noqa: E731
    results = []
    for objective in (eager, fused):
        for p in params:
            p.grad = None
        loss = objective()
        loss.backward()
        results.append((float(loss), [p.grad.clone() for p in params]))
    (l0, g0), (l1, g1) = results
    relative = {k.rsplit(".", 1)[-1]: float((a - b).norm() / b.norm()) for (k, _), a, b in zip(named, g1, g0)}
    return abs(l1 - l0) / abs(l0), relative


def main(argv: list[str] | None = None) -> int:
    from step_anatomy import add_review_corpus_options, review_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_review_corpus_options(parser)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--models", default=",".join(MODELS), help=f"of {', '.join(MODELS)}")
    parser.add_argument("--quick", action="store_true", help="small, and the fused objective eagerly (the tests)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 8
    data = review_corpus(args)
    compiled = not args.quick
    if args.quick:  # the fused objective as it is, without inductor's build
        torch.compile = lambda fn, **_: fn  # type: ignore[assignment]
    print(
        f"{args.docs} documents of at most {args.max_length} tokens (V = {data.num_words:,}), {args.inducing} inducing, "
        f"batches of {args.batch}, {args.threads} thread(s), {args.steps} steps; torch {torch.__version__}"
    )
    for model in args.models.split(","):
        if model not in MODELS:
            parser.error(f"--models: {model!r} is not one of {', '.join(MODELS)}")
        print(f"\n{model}\n")
        print("| step | ops / step (leaf) | ops / step (top-level) | host reads / step | step ms | warm-up s |")
        print("|---|---|---|---|---|---|")
        rows = {}
        for name, compile in (
            ("eager (kernel stack)", False),
            ("fused, compiled" if compiled else "fused (eager)", True),
        ):
            r = rows[name] = fit_profiled(model, data, args, compile)
            print(
                f"| {name} | {r['leaf']:.0f} | {r['top']:.0f} | {r['reads']:.0f} | {r['step_ms']:.0f} | "
                f"{r['warm_up_s']:.1f} |",
                flush=True,
            )
        (eager, fused) = rows.values()
        print(
            f"\nthe fused step: {eager['leaf'] / fused['leaf']:.1f}x fewer leaf operators, "
            f"{eager['top'] / fused['top']:.1f}x fewer top-level ones; step time {fused['step_ms'] / eager['step_ms']:.2f}x "
            "the eager step's"
        )
        print(
            "its top-level operators:",
            ", ".join(f"{k.removeprefix('aten::')} {v / 2:g}" for k, v in fused["top_names"].most_common()),
        )
        print(
            "its leaf operators:",
            ", ".join(f"{k.removeprefix('aten::')} {v / 2:g}" for k, v in fused["leaf_names"].most_common()),
        )
        loss_gap, gradient_gaps = gaps(model, eager["estimator"], data, args, compile=compiled)
        print(f"fused vs eager on one batch: loss {loss_gap:.1e} relative; each gradient, relative:")
        print(", ".join(f"{k} {v:.1e}" for k, v in gradient_gaps.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
