"""Exact LDK vs its random-feature (RFF) and Nystrom approximations: time, peak memory and
Gram error, measured in the same run.

Part 1 (error against D): n=300 documents over V=2,000 words; relative Frobenius error of the
approximate Gram to the exact one for D = 64 ... 4096.
Part 2 (scale): n=2,000 documents of 20-60 words drawn from V=50,000 words (Zipf), q=2;
forward+backward of the Gram. Each kernel runs in a fresh process so that its peak resident
memory is its own; the exact kernel needs the Gram of the distinct words present (u^2).

    python benchmarks/ldk_random_features.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import torch
from _before import run_child

from lvgp import PAD, LatentDistributionKernel
from lvgp.kernels import RandomFeatureLDK, gram_approximation_error


def zipf_docs(n: int, vocab: int, lengths: tuple[int, int], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    x = torch.multinomial(weights, n * lengths[1], replacement=True, generator=g).view(n, lengths[1])
    size = torch.randint(lengths[0], lengths[1] + 1, (n,), generator=g)
    x[torch.arange(lengths[1])[None, :] >= size[:, None]] = PAD
    return x


def make(kind: str, vocab: int, d: int, feature_seed: int = 0):
    if kind == "exact":
        return LatentDistributionKernel(vocab, 2, "rbf", "linear", seed=0).double()
    return RandomFeatureLDK(
        vocab, 2, "rbf", "linear", seed=0, features=kind, num_features=d, feature_seed=feature_seed
    ).double()


def child(kind: str, n: int, vocab: int, d: int) -> dict:
    x = zipf_docs(n, vocab, (20, 60), seed=1)
    kernel = make(kind, vocab, d)
    start = time.perf_counter()
    gram = kernel(x).to_dense()
    gram.sum().backward()
    seconds = time.perf_counter() - start
    return {
        "kind": kind,
        "seconds": seconds,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "distinct_words": int(torch.unique(x[x != PAD]).numel()),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--errors-only", action="store_true", help="part 1 only")
    parser.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, n, vocab, d = args.child
        print(json.dumps(child(kind, int(n), int(vocab), int(d))))
        return 0

    n1, v1 = (100, 500) if args.quick else (300, 2000)
    x = zipf_docs(n1, v1, (5, 30), seed=0)
    exact = make("exact", v1, 0)
    seeds = 2 if args.quick else 8
    print(f"Gram error against D (n={n1}, V={v1}, q=2, RBF embedding, linear level 2), relative Frobenius norm,")
    print(f"mean (std) over {seeds} draws of the features / landmarks; Nystrom's D is capped at V")
    print(f"{'D':>6}  {'RFF rel. error':>16}  {'Nystrom rel. error':>18}")
    for d in (64, 256) if args.quick else (64, 256, 1024, 4096):
        row = []
        for kind in ("rff", "nystrom"):
            errors = []
            for seed in range(seeds):
                approx = make(kind, v1, d if kind == "rff" else min(d, v1), seed)
                approx.load_state_dict(exact.state_dict(), strict=False)
                errors.append(gram_approximation_error(exact, approx, x))
            row.append(f"{np.mean(errors):.4f} ({np.std(errors):.4f})")
        print(f"{d:>6}  {row[0]:>16}  {row[1]:>18}")

    if args.errors_only:
        return 0
    n2, v2, d2 = (300, 5000, 256) if args.quick else (2000, 50000, 1024)
    print(f"\nforward+backward of the Gram, n={n2} documents, V={v2}, fresh process each")
    rows = []
    for kind in ("exact", "rff", "nystrom"):
        out = run_child(__file__, ["--child", kind, str(n2), str(v2), str(d2)])
        if out.returncode != 0:
            rows.append(
                {
                    "kind": kind,
                    "seconds": float("nan"),
                    "peak_mib": float("nan"),
                    "distinct_words": -1,
                    "error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed",
                }
            )
        else:
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    print(
        f"{'kernel':>8}  {'D':>5}  {'seconds':>8}  {'speed-up':>8}  {'peak MiB':>9}  {'memory ratio':>12}  distinct words"
    )
    for r in rows:
        d = "-" if r["kind"] == "exact" else str(d2)
        print(
            f"{r['kind']:>8}  {d:>5}  {r['seconds']:8.2f}  {base['seconds'] / r['seconds']:8.1f}  {r['peak_mib']:9.0f}  "
            f"{r['peak_mib'] / base['peak_mib']:12.2f}  {r['distinct_words']}"
            + (f"  ({r['error']})" if "error" in r else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
