"""Where the operators of a sparse step come from (issue 60): each operator of one training step,
attributed to the function that dispatched it, and the regressor's ELBO by hand against gpytorch's.

Issue 60 asks for at most 60 operators a step (forward, backward and the optimizer) for the
``SparseGPLVSMRegressor`` and the variational ``LDKGPClassifier`` at review lengths. Before writing
a fused step, this script says what it would have to replace:

1. **Anatomy.** One step of a fit (the fourth: three warm-up steps first), every ATen operator seen
   by a ``TorchDispatchMode`` -- the operators as the autograd layer dispatches them, before
   their decomposition into the leaf operators ``torch.profiler`` counts in ``large_n.py`` (a
   matrix product is one here, one ``mm`` and a few ``as_strided`` there) -- each counted as
   *compute* (it runs arithmetic or copies: a kernel launch on a GPU) or *metadata* (views,
   ``empty``: no launch), and attributed to the innermost frame of lvgp, gpytorch,
   linear_operator or ``torch.optim`` on the Python stack (the backward's operators, run by
   autograd's engine, to the line that called ``backward``, or to lvgp's custom backward
   functions). And the **host reads**: operators whose result the host reads before it goes on
   (``item``, ``equal``, data-dependent sizes of ``nonzero`` and ``unique``), each a wait for the
   queue on a GPU and a break in any captured graph, by the line that asked (Adam's reads are of its
   step counters, which torch keeps on the host: no wait).
2. **The GP algebra by hand** (the regressor): the regressor's step computes the whitened SVGP ELBO
   directly on ``K_ZZ``, ``K_ZX`` and ``diag K_XX`` (:func:`lvgp.models.inducing.whitened_gaussian_elbo`:
   ``L = chol(K_ZZ)``, ``A = L^-1 K_ZX``, ``q(f) = N(A^T m, diag K_XX - |A|^2 + |S^T A|^2)``, the
   Gaussian expected log-likelihood in closed form, ``KL(N(m, S S^T) || N(0, I))``); here against
   gpytorch's ``VariationalELBO`` on the same model and the same draw of the word vectors, one batch:
   the loss and the gradients (float64), and the operators (forward and backward, the profiler's leaf
   count) and milliseconds of each.

By default the Nystrom columns are pooled in one block, as off the CPU (``--cpu-blocks``: the
CPU's blocks of 2^18 entries; the blocks multiply the operators, not the algebra).

    python benchmarks/step_anatomy.py [--docs 8000] [--threads 2] [--top 25] [--cpu-blocks]
    python benchmarks/step_anatomy.py --quick      # small, for the tests
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import statistics
import time
import traceback
import warnings
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

#: operators that only make a view or an uninitialized tensor: no kernel is launched for them
METADATA = {
    "aten.view.default", "aten.as_strided.default", "aten.t.default", "aten.transpose.int",
    "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default", "aten.squeeze.dims",
    "aten.expand.default", "aten.slice.Tensor", "aten.select.int", "aten.alias.default",
    "aten.detach.default", "aten.diagonal.default", "aten._unsafe_view.default", "aten.permute.default",
    "aten._reshape_alias.default", "aten.lift_fresh.default", "aten.unbind.int", "aten.split.Tensor",
    "aten.empty.memory_format", "aten.empty_strided.default", "aten.new_empty.default",
    "aten.new_empty_strided.default", "aten.empty_like.default", "aten.split_with_sizes.default",
    "aten.unfold.default", "aten.view_as_real.default", "aten._conj.default", "aten.resolve_conj.default",
    "aten.resolve_neg.default", "aten.is_same_size.default", "aten._nnz.default",
}  # fmt: skip
#: operators whose result the host reads (large_n.py's set, with ``equal`` and ``is_nonzero``)
HOST_READS = {
    "aten._local_scalar_dense.default", "aten.nonzero.default", "aten._unique2.default",
    "aten.unique_dim.default", "aten.unique_consecutive.default", "aten.masked_select.default",
    "aten.equal.default", "aten.is_nonzero.default",
}  # fmt: skip
_OURS = ("/lvgp/", "gpytorch/", "linear_operator/", "torch/optim/")


def _site(depth: int = 1) -> str:
    """The innermost frames of lvgp, gpytorch, linear_operator or torch.optim on the stack."""
    frames = [f for f in traceback.extract_stack() if any(s in f.filename for s in _OURS)]
    frames = [f for f in frames if "python_dispatch" not in f.filename]
    if not frames:
        return "(autograd's engine: the backward of torch's own operators)"
    names = []
    for f in frames[::-1][:depth]:
        path = f.filename.replace("\\", "/")
        for marker in _OURS:
            if marker in path:
                path = marker.strip("/") + "/" + path.split(marker, 1)[1]
                break
        names.append(f"{path.removesuffix('.py').replace('/', '.')}.{f.name}" + (f":{f.lineno}" if depth > 1 else ""))
    return " <- ".join(names)


class OperatorLog(TorchDispatchMode):
    """Every operator dispatched while active: compute or metadata, by site; host reads by line."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: collections.Counter = collections.Counter()
        self.sites: collections.Counter = collections.Counter()
        self.reads: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = str(func)
        kind = "metadata" if name in METADATA else "compute"
        self.kinds[kind] += 1
        if kind == "compute":
            self.sites[_site()] += 1
        if name in HOST_READS:
            self.reads[f"{name.split('.')[1]} at {_site(depth=2)}"] += 1
        return func(*args, **(kwargs or {}))


def _estimator(model: str, args: argparse.Namespace, steps: int) -> Any:
    from lvgp import LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor

    common: dict[str, Any] = dict(num_inducing=args.inducing, num_words=args.num_words, random_state=0)
    if model == "sparse-gplvsm":
        return SparseGPLVSMRegressor(optimizer=MiniBatch(batch_size=args.batch, max_steps=steps), **common)
    return LDKGPClassifier(inference="variational", optimizer=MiniBatch(batch_size=args.batch, max_epochs=1), **common)


def anatomy(model: str, data: Any, args: argparse.Namespace) -> OperatorLog:
    """The operators of the fourth step of a fit (each model takes one Adam step a step)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    log, state = OperatorLog(), {"steps": 0}
    stack = contextlib.ExitStack()

    def step_ended(optimizer: Any, *_: Any) -> None:
        if type(optimizer).__name__ != "Adam":
            return
        state["steps"] += 1
        if state["steps"] == 3:
            stack.enter_context(log)
        elif state["steps"] == 4:
            stack.close()

    hook = register_optimizer_step_post_hook(step_ended)
    try:
        estimator = _estimator(model, args, steps=5)
        x = torch.from_numpy(data.X)
        if model == "sparse-gplvsm":
            estimator.fit(x, data.y)
        else:  # an epoch of 5 batches
            estimator.fit(x[: 5 * args.batch], data.labels[: 5 * args.batch])
    finally:
        stack.close()
        hook.remove()
    return log


def _leaf_operators(run: Any) -> int:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    return sum(1 for e in prof.events() if e.name.startswith("aten::") and not e.cpu_children)


def hand_written_elbo(data: Any, args: argparse.Namespace) -> dict[str, Any]:
    """gpytorch's ``VariationalELBO`` against lvgp's whitened ELBO by hand, on one batch of a fitted
    ``SparseGPLVSMRegressor`` (its default kernel: variational word vectors, one draw for both)."""
    import gpytorch

    from lvgp._random import torch_generator
    from lvgp.bow.padded import document_lengths, documents_at
    from lvgp.kernels.document import shared_evaluation
    from lvgp.kernels.spec import variational_word_vectors
    from lvgp.models.inducing import whitened_gaussian_elbo

    estimator = _estimator("sparse-gplvsm", args, steps=3)
    x = torch.from_numpy(data.X).long()
    estimator.fit(x, data.y)
    model, likelihood = estimator.model_, estimator.likelihood_
    model.train()
    likelihood.train()
    y = torch.as_tensor(data.y, dtype=torch.float64)
    y = (y - y.mean()) / y.std()
    rows = torch.arange(min(args.batch, len(x)))
    xb, yb, n = documents_at(x, rows, document_lengths(x)[rows]), y[rows], len(x)
    variational = variational_word_vectors(model.covar_module)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n, combine_terms=not variational)
    params = [p for p in [*model.parameters(), *likelihood.parameters()] if p.requires_grad]

    def kl_vectors(dtype: torch.dtype) -> torch.Tensor:
        return sum((v.kl() for v in variational), torch.zeros((), dtype=dtype))

    def gpytorch_loss() -> torch.Tensor:
        if not variational:
            return -mll(model(xb), yb)
        log_likelihood, kl, log_prior = mll(model(xb), yb)[:3]
        return -(log_likelihood - kl + log_prior - kl_vectors(log_likelihood.dtype) / n)

    def hand_loss() -> torch.Tensor:  # lvgp's step (SparseGPLVSMRegressor's objective)
        if not variational:
            return -whitened_gaussian_elbo(mll, xb, yb)
        log_likelihood, kl, log_prior = whitened_gaussian_elbo(mll, xb, yb)[:3]
        return -(log_likelihood - kl + log_prior - kl_vectors(log_likelihood.dtype) / n)

    def loss_and_gradients(loss_of: Any) -> tuple[torch.Tensor, list[torch.Tensor]]:
        for p in params:
            p.grad = None
        with contextlib.ExitStack() as stack:
            draws = torch_generator(7)  # the same draw of the word vectors for both objectives
            for vectors in variational:
                stack.enter_context(vectors.one_sample(draws))
            stack.enter_context(shared_evaluation(model))
            loss = loss_of()
        loss.backward()
        return loss.detach(), [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in params]

    reference, reference_grads = loss_and_gradients(gpytorch_loss)
    mine, grads = loss_and_gradients(hand_loss)
    relative = max(float((a - b).abs().max() / a.abs().max().clamp_min(1e-300)) for a, b in zip(reference_grads, grads))
    row: dict[str, Any] = {"loss_gap": abs(float(reference - mine)), "gradient_gap": relative}
    objectives = {"gpytorch": gpytorch_loss, "by hand": hand_loss}
    seconds: dict[str, list[float]] = {name: [] for name in objectives}
    for name, loss_of in objectives.items():
        row[name] = _leaf_operators(lambda: loss_and_gradients(loss_of))  # noqa: B023 (called at once)
    for turn in range(args.repeats):  # alternating, each first in turn: the machine's drift shared
        for name in sorted(objectives, reverse=turn % 2 == 1):
            start = time.perf_counter()
            loss_and_gradients(objectives[name])
            seconds[name].append(time.perf_counter() - start)
    for name, values in seconds.items():
        row[f"{name} ms"] = statistics.median(values) * 1e3
    return row


def add_review_corpus_options(parser: argparse.ArgumentParser) -> None:
    """The options of a sparse step's setting at review lengths, shared with ``fused_step.py``: the
    generated corpus, the inducing documents, the batch and the threads."""
    parser.add_argument("--docs", type=int, default=8000)
    parser.add_argument("--num-words", type=int, default=50_000)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--inducing", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)


def review_corpus(args: argparse.Namespace) -> Any:
    """The threads set (torch's and the BLAS pools') and the generated corpus of those options; with
    ``args.quick``, 300 documents of 40 tokens (V = 2,000), 16 inducing, batches of 32, one thread.
    ``args.num_words`` becomes the corpus's."""
    if args.quick:
        args.docs, args.num_words, args.max_length, args.inducing, args.batch, args.threads = 300, 2000, 40, 16, 32, 1
    torch.set_num_threads(args.threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    warnings.simplefilter("ignore")
    from lvgp.datasets import make_zipf_topic_documents

    data = make_zipf_topic_documents(
        args.docs, num_words=args.num_words, max_length=args.max_length, random_state=0, n_jobs=args.threads
    )
    args.num_words = data.num_words
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_review_corpus_options(parser)
    parser.add_argument("--models", default="sparse-gplvsm,variational-gpc")
    parser.add_argument("--top", type=int, default=25, help="the sites with the most compute operators")
    parser.add_argument("--repeats", type=int, default=11, help="timed evaluations of each objective (median)")
    parser.add_argument("--cpu-blocks", action="store_true", help="the CPU's Nystrom blocks, not one block")
    parser.add_argument("--quick", action="store_true", help="300 documents of 40 tokens, 16 inducing, batches of 32")
    args = parser.parse_args(argv)
    if args.quick:
        args.top, args.repeats = 8, 1
    import lvgp.kernels.embedding

    if not args.cpu_blocks:  # the Nystrom columns in one block, as off the CPU (large_n.py --one-block)
        lvgp.kernels.embedding._POOLED_BLOCK = 2**62
    data = review_corpus(args)
    print(
        f"{args.docs} documents of at most {args.max_length} tokens, {args.inducing} inducing, batches of {args.batch}, "
        f"{args.threads} thread(s), {'the CPU blocks' if args.cpu_blocks else 'one Nystrom block'}; torch {torch.__version__}\n"
    )
    for model in args.models.split(","):
        log = anatomy(model, data, args)
        compute, metadata = log.kinds["compute"], log.kinds["metadata"]
        print(
            f"## {model}: {compute} compute and {metadata} metadata operators in a step, {sum(log.reads.values())} host reads\n"
        )
        print("| compute operators | dispatched from |\n|---|---|")
        for site, count in log.sites.most_common(args.top):
            print(f"| {count} | `{site}` |")
        rest = compute - sum(c for _, c in log.sites.most_common(args.top))
        print(f"| {rest} | the other {max(0, len(log.sites) - args.top)} sites |\n")
        print("| host reads | operator at (innermost first) |\n|---|---|")
        for where, count in log.reads.most_common():
            print(f"| {count} | `{where}` |")
        print()
    if "sparse-gplvsm" in args.models.split(","):
        row = hand_written_elbo(data, args)
        print("## the regressor's ELBO, gpytorch's against lvgp's by hand (one batch, forward + backward)\n")
        print(f"loss gap {row['loss_gap']:.3g}, largest relative gradient gap {row['gradient_gap']:.3g}\n")
        print("| objective | leaf operators (torch.profiler) | ms (median) |\n|---|---|---|")
        for name in ("gpytorch", "by hand"):
            print(f"| {name} | {row[name]} | {row[name + ' ms']:.1f} |")
        saved = row["gpytorch"] - row["by hand"]
        print(
            f"\nthe ELBO by hand saves {saved} of {row['gpytorch']} operators ({saved / row['gpytorch']:.0%}), "
            f"time ratio gpytorch / by hand {row['gpytorch ms'] / row['by hand ms']:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
