"""Which batch size a GPU should train the sparse GP-LVSM with: held-out quality after the same number
of Adam steps in batches of 256 (the default) and of 1,024, with each step's cost on this machine and,
for a GPU, at the step times measured on one.

On an H200 (``benchmarks/gpu_all.sh``, 2026-11-30) a step is bound by the host's launches, not by
the GPU's arithmetic: batches of 1,024 cost 1.07x a step of 256 (23.9 ms against 22.2 ms at a million
documents of review lengths) and the epoch has a quarter of the steps (38 s against 99 s). Whether the
bigger batch is the faster way to a model depends on what a step of it buys: that is measured here,
on the CPU (the same arithmetic), by fitting each batch size for a given number of steps and scoring
the held-out documents.

    python benchmarks/minibatch_size.py                         # 20,000 + 2,000 documents, 100 and 300 steps
    python benchmarks/minibatch_size.py --quick                 # tiny, for the tests
    python benchmarks/minibatch_size.py --gpu-step-ms 256:22.2,1024:23.9   # the GPU's step times (the default)

The documents are ``make_zipf_topic_documents``'s (an LDA generator with Zipf word frequencies and
amazon-reviews lengths, a linear target in the topic shares plus noise); the model is
``SparseGPLVSMRegressor`` with its defaults (256 inducing documents, Adam, the default kernel), the
tolerance off so every fit takes its steps. Scores: RMSE and the mean negative log predictive density
(NLPD, noise included) on the held-out documents.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import torch

from lvgp import MiniBatch, SparseGPLVSMRegressor
from lvgp.datasets.synthetic import make_zipf_topic_documents

#: the H200's step times (ms) at a million documents of review lengths (gpu_all.sh, 2026-11-30)
H200_STEP_MS = "256:22.2,1024:23.9"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 + 100 documents of 64 tokens, 4 steps (tests)")
    parser.add_argument("--docs", type=int, default=20_000, help="training documents")
    parser.add_argument("--test", type=int, default=2_000, help="held-out documents")
    parser.add_argument("--batches", default="256,1024")
    parser.add_argument("--steps", default="100,300", help="the fits' numbers of Adam steps")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch's threads (default 2; 1 with --quick, the test suite's own)"
    )
    parser.add_argument("--gpu-step-ms", default=H200_STEP_MS, help="BATCH:MS pairs: a GPU's measured step times")
    args = parser.parse_args(argv)
    if args.quick:
        args.docs, args.test, args.steps, args.max_length, args.batches = 400, 100, "4", 64, "64,256"
    if args.threads is None:
        # two threads spin against the test suite's other worker (its quick run: 23.6 s there; under 7 s on one)
        args.threads = 1 if args.quick else 2
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message=".*did not converge")  # every fit ends at its step budget, by design
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    gpu_ms = {int(b): float(ms) for b, ms in (pair.split(":") for pair in args.gpu_step_ms.split(",") if pair)}
    data = make_zipf_topic_documents(
        args.docs + args.test, num_words=2_000 if args.quick else 50_000, max_length=args.max_length, random_state=0
    )
    x = torch.from_numpy(data.X)
    x_train, y_train = x[: args.docs], data.y[: args.docs]
    x_test, y_test = x[args.docs :], data.y[args.docs :]
    print(
        f"{args.docs:,} training and {args.test:,} held-out documents (at most {args.max_length} tokens, "
        f"V = {data.num_words:,}); {args.threads} thread(s); the target's variance 1 (RMSE of its mean: "
        f"{float(np.sqrt(np.mean((y_test - y_train.mean()) ** 2))):.3f})"
    )
    print(
        "| batch | steps | epochs | CPU ms / step, setup included | held-out RMSE | held-out NLPD | GPU s (at its step time) |"
    )
    print("|---|---|---|---|---|---|---|")
    for steps in (int(s) for s in args.steps.split(",")):
        for batch in (int(b) for b in args.batches.split(",")):
            reg = SparseGPLVSMRegressor(
                num_words=data.num_words,
                num_inducing=16 if args.quick else 256,
                optimizer=MiniBatch(batch_size=batch, max_steps=steps, max_epochs=10**6, tol=0.0),
                random_state=0,
            )
            start = time.perf_counter()
            reg.fit(x_train, y_train)
            seconds = time.perf_counter() - start
            mean, std = reg.predict(x_test, return_std=True)
            rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))
            nlpd = float(np.mean(0.5 * math.log(2 * math.pi) + np.log(std) + 0.5 * ((y_test - mean) / std) ** 2))
            gpu = f"{reg.n_iter_ * gpu_ms[batch] / 1e3:.1f}" if batch in gpu_ms else "-"
            print(
                f"| {batch:,} | {reg.n_iter_} | {reg.n_iter_ * batch / args.docs:.2f} | "
                f"{1e3 * seconds / max(reg.n_iter_, 1):.0f} | {rmse:.4f} | {nlpd:.4f} | {gpu} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
