"""The Nystrom LDK's document features, three ways in one run: solving for every distinct word
first (the code until e4515fb: the per-word features, then their weighted sums); pooling the
landmark-kernel columns over each document before the triangular solve, from the whole
``m x V_d`` landmark Gram (until issue 27's second part); and the same pooling in cache-sized
blocks of the Gram, never held whole (``lvgp.kernels.embedding.rbf_pooled``: today, where the
documents are fewer than a block's columns -- 256 at m = 512 -- else the whole Gram, until issue 60
took blocks at any number of documents).

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


def whole_gram_features(kernel: RandomFeatureLDK, d: me.DocumentSet, latent: torch.Tensor) -> torch.Tensor:
    """Pooled before the solve, from the whole landmark Gram (the code before the blocks)."""
    words, _ = d.distinct()
    z, chol = kernel._landmark_factor(latent)
    pooled = me.bag_product(d.bags(), kernel.embedding_gram(z, latent.index_select(-2, words)).mT)
    return torch.linalg.solve_triangular(chol, pooled.mT, upper=False).mT


VARIANTS = {"per word": per_word_features, "whole Gram": whole_gram_features, "blocks (now)": None}


def measure(args: dict, variant: str) -> dict:
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
    features = VARIANTS[variant]
    if features is not None:
        kernel._features = lambda d, latent: features(kernel, d, latent)
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
            {"n": 150, "vocab": 30000, "max_len": 300, "m": 512},  # a latent-smm dev fit at 200 documents
            {"n": 200, "vocab": 30000, "max_len": 300, "m": 512},
            {"n": 500, "vocab": 30000, "max_len": 300, "m": 512},  # more documents than a block's columns
        ]
    )
    print("| n | distinct words | m | per word s | whole Gram s | blocks (now) s | per word / now | whole / now |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        runs = {variant: measure(size, variant) for variant in VARIANTS}
        now = runs["blocks (now)"]
        for variant, run in runs.items():  # the same Gram and gradient every way
            assert abs(run["trace"] - now["trace"]) <= 1e-10 * abs(now["trace"]), variant
            assert abs(run["grad_norm"] - now["grad_norm"]) <= 1e-9 * now["grad_norm"], variant
        t = {variant: run["seconds"] for variant, run in runs.items()}
        print(
            f"| {size['n']} | {now['distinct_words']:,} | {size['m']} | {t['per word']:.3f} | {t['whole Gram']:.3f} | "
            f"{t['blocks (now)']:.3f} | {t['per word'] / t['blocks (now)']:.1f}x | "
            f"{t['whole Gram'] / t['blocks (now)']:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
