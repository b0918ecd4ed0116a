"""Where the sparse GP-LVSM's step is faster exact and where with Nystrom features (issue 41, 2): the
step time of each against the distinct words one step holds, and what ``approximation="auto"``
(:func:`lvgp.models.inducing.step_approximation`) chooses there.

Documents of the LDA generator with Zipf word frequencies (``make_zipf_topic_documents``, V = 50,000)
capped at ``--lengths`` tokens; 64 inducing documents, batches of 256, the default kernel
(``LDKSpec.variational_bow()``, q = 2) with ``approximation="exact"`` and ``"nystrom"`` (512 landmark
words); "auto chooses" is the default estimator's ``kernel_kind_`` on the same documents. A step's time is that of a fit of ``--steps`` + 2 steps less that of a fit of 2 steps (the
setup and the first steps cancel), divided by ``--steps``: the smaller of two alternating runs of
each. One thread.

    python benchmarks/sparse_auto_rule.py [--lengths 8,16,32,64] [--docs 3000] [--steps 10]
    python benchmarks/sparse_auto_rule.py --quick   # small documents, few steps (the tests)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings


def step_seconds(x, y, num_words: int, approximation: str, steps: int, inducing: int) -> float:
    from lvgp import MiniBatch, SparseGPLVSMRegressor
    from lvgp.kernels import LDKSpec

    def fit(max_steps: int) -> float:
        reg = SparseGPLVSMRegressor(
            LDKSpec.variational_bow(approximation=approximation),
            num_inducing=inducing,
            num_words=num_words,
            optimizer=MiniBatch(max_steps=max_steps),
            random_state=0,
        )
        start = time.perf_counter()
        reg.fit(x, y)
        return time.perf_counter() - start

    return (fit(steps + 2) - fit(2)) / steps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 documents of 4 and 8 tokens, 3 steps (the tests)")
    parser.add_argument("--lengths", default="8,16,32,64", help="comma-separated caps on the documents' tokens")
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--inducing", type=int, default=64)
    args = parser.parse_args(argv)
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from lvgp import PAD, MiniBatch, SparseGPLVSMRegressor
    from lvgp.bow.padded import pad_to_common_width
    from lvgp.datasets import make_zipf_topic_documents
    from lvgp.models.inducing import choose_inducing_documents

    lengths = [4, 8] if args.quick else [int(v) for v in args.lengths.split(",")]
    docs, steps = (400, 3) if args.quick else (args.docs, args.steps)
    warnings.simplefilter("ignore")  # the step budgets end the fits (ConvergenceWarning)
    print(f"{docs:,} documents, {args.inducing} inducing, batches of 256, one thread")
    print("| tokens at most | distinct words in a step, about | exact step ms | Nystrom step ms | auto chooses |")
    print("|---|---|---|---|---|")
    for length in lengths:
        data = make_zipf_topic_documents(docs, max_length=length, random_state=0)
        x, y = torch.as_tensor(data.X), np.asarray(data.y)
        inducing = x[torch.from_numpy(choose_inducing_documents(x, data.num_words, args.inducing, "kmeans++", 0))]
        rows = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))[:256]
        step = torch.cat(pad_to_common_width(inducing, x[rows]))  # a step's documents, about
        words = torch.unique(step[step != PAD]).numel()
        auto = SparseGPLVSMRegressor(num_inducing=args.inducing, num_words=data.num_words, random_state=0)
        chosen = auto.set_params(optimizer=MiniBatch(max_steps=1)).fit(x, y).kernel_kind_
        times: dict[str, list[float]] = {"exact": [], "nystrom": []}
        for _ in range(2):
            for kind in times:
                times[kind].append(step_seconds(x, y, data.num_words, kind, steps, args.inducing))
        exact, nystrom = (1000 * min(times[k]) for k in ("exact", "nystrom"))
        print(f"| {length} | {words:,} | {exact:.0f} | {nystrom:.0f} | {chosen} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
