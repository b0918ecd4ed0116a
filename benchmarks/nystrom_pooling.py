"""The Nystrom LDK's document features: pooling the landmark-kernel columns over each document
before the triangular solve (today) against solving for every distinct word first (the code
until e4515fb: the per-word features, then their weighted sums), in one run.

Why: profiling a default ``latent-smm`` cell (20ng, 200 documents, vocabulary uncut: 162 fits
of the thesis grid, Nystrom with 512 frequent-word landmarks since the documents hold far more
than 2,048 distinct words) gave 1,857 s, of which the triangular solve against all distinct
words and its backward pass took about half (benchmarks/README.md, the profile table). The
solve is linear in the kernel columns, so the documents' weighted sums can be taken first:
``m^2 n`` instead of ``m^2 V_d`` per evaluation and per gradient.

Setting: n documents of 100-300 Zipf-drawn words over a vocabulary of V (about 10,000 distinct
words at the full size), q = 4, RBF embedding, linear level 2, m = 512 landmarks, float64, one
thread; forward + backward of the ``n x n`` Gram, best of 3. The per-word reference is the
formula through today's public pieces (``word_features_map``, then ``bag_product``), which is
what ``_features`` computed before.

    python benchmarks/nystrom_pooling.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import torch

from lvgp import PAD
from lvgp.kernels import RandomFeatureLDK
from lvgp.kernels import mean_embedding as me
from lvgp.kernels.random_features import frequent_words


def per_word_features(kernel: RandomFeatureLDK, d: me.DocumentSet, latent: torch.Tensor) -> torch.Tensor:
    """The reference: every distinct word's Nystrom features (m^2 V_d), then the documents' sums."""
    words, _ = d.distinct()
    return me.bag_product(d.bags(), kernel.word_features_map(latent.index_select(-2, words), latent))


def measure(args: dict, per_word: bool) -> dict:
    g = torch.Generator().manual_seed(0)
    weights = 1.0 / torch.arange(1, args["vocab"] + 1, dtype=torch.float64) ** 0.8
    x = torch.multinomial(weights, args["n"] * args["max_len"], replacement=True, generator=g).view(args["n"], -1)
    size = torch.randint(args["max_len"] // 3, args["max_len"] + 1, (args["n"],), generator=g)
    x[torch.arange(args["max_len"])[None, :] >= size[:, None]] = PAD
    kernel = RandomFeatureLDK(
        args["vocab"],
        4,
        "rbf",
        "linear",
        seed=0,
        features="nystrom",
        num_features=args["m"],
        landmarks=frequent_words(x, args["m"]),
    ).double()
    if per_word:
        kernel._features = lambda d, latent: per_word_features(kernel, d, latent)
    times = []
    for _ in range(3):
        kernel.zero_grad()
        kernel.__dict__.pop("_document_sets", None)  # no cached document set: each repetition does all the work
        start = time.perf_counter()
        gram = kernel(x).to_dense()
        gram.sum().backward()
        times.append(time.perf_counter() - start)
    return {
        "seconds": min(times),
        "distinct_words": int(torch.unique(x[x != PAD]).numel()),
        "trace": float(gram.detach().diagonal().sum()),
        "grad_norm": float(kernel.word_vectors.raw_latent.grad.norm()),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small problem (for the tests)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    sizes = (
        [{"n": 20, "vocab": 600, "max_len": 30, "m": 32}]
        if args.quick
        else [
            {"n": 200, "vocab": 30000, "max_len": 300, "m": 512},
            {"n": 500, "vocab": 30000, "max_len": 300, "m": 512},
        ]
    )
    print(
        "| n | distinct words | m | per word (before) s | pooled (now) s | speed-up | trace rel. diff | grad rel. diff |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        before, now = measure(size, per_word=True), measure(size, per_word=False)
        trace = abs(now["trace"] - before["trace"]) / abs(before["trace"])
        grad = abs(now["grad_norm"] - before["grad_norm"]) / before["grad_norm"]
        print(
            f"| {size['n']} | {now['distinct_words']:,} | {size['m']} | {before['seconds']:.3f} | "
            f"{now['seconds']:.3f} | {before['seconds'] / now['seconds']:.1f}x | {trace:.1e} | {grad:.1e} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
