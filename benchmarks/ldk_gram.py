"""Forward+backward time of the LDK Gram matrix (RBF embedding, linear level-2, q=2,
float64) against the straightforward padded double-sum implementation, measured in the
same run, and a scaling table of lvgp's implementation.

    python benchmarks/ldk_gram.py            # the full run recorded in benchmarks/README.md
    python benchmarks/ldk_gram.py --quick    # seconds; what the test-suite runs

The double sum evaluates k(x_s, x_t) for every pair of word positions of every pair of
documents, O(n^2 L^2 q), vectorised with torch over blocks of rows (so it fits in memory).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from _before import run_child

from lvgp import PAD, LatentDistributionKernel


def make_docs(n: int, vocab: int, max_len: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab, (n, max_len), generator=g)
    lengths = torch.randint(5, max_len + 1, (n,), generator=g)
    x[torch.arange(max_len)[None, :] >= lengths[:, None]] = PAD
    return x


def double_sum_gram_and_grad(latent: torch.Tensor, x: torch.Tensor, gamma: float, block: int = 8):
    """K_ij = 1/(|D_i||D_j|) sum_{s in D_i} sum_{t in D_j} exp(-gamma/2 ||x_s - x_t||^2), padded and
    vectorised over blocks of rows, with the gradient of sum(K) accumulated block by block
    (so memory stays bounded). Returns K and d sum(K) / d latent."""
    latent = latent.detach().requires_grad_(True)
    mask = (x != PAD).to(latent.dtype)
    w = mask / mask.sum(-1, keepdim=True)
    rows = []
    for start in range(0, x.shape[0], block):
        vec = latent[x.clamp_min(0)]  # n x L x q
        va, wa = vec[start : start + block], w[start : start + block]
        sq = (va[:, None, :, None, :] - vec[None, :, None, :, :]).pow(2).sum(-1)  # b x n x L x L
        k_block = torch.einsum("as,bt,abst->ab", wa, w, torch.exp(-0.5 * gamma * sq))
        k_block.sum().backward()
        rows.append(k_block.detach())
    return torch.cat(rows), latent.grad


def timed(fn, repeats: int) -> tuple[float, torch.Tensor, torch.Tensor]:
    """Median seconds of forward + backward (of K.sum()), the Gram and the gradient."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        K, grad = fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], K, grad


def compare(n: int, vocab: int, max_len: int, repeats: int) -> dict:
    torch.manual_seed(0)
    kernel = LatentDistributionKernel(vocab, 2, "rbf", "linear", seed=0).double()
    x = make_docs(n, vocab, max_len, seed=1)

    def lvgp_fn():
        kernel.zero_grad()
        K = kernel(x).to_dense()
        K.sum().backward()
        return K.detach(), kernel.word_vectors.raw_latent.grad.clone()

    def naive_fn():
        return double_sum_gram_and_grad(kernel.word_vectors.raw_latent, x, kernel.gamma.item())

    t_lvgp, K_lvgp, g_lvgp = timed(lvgp_fn, repeats)
    t_naive, K_naive, g_naive = timed(naive_fn, 1)
    return {
        "n": n,
        "V": vocab,
        "max_len": max_len,
        "lvgp_s": t_lvgp,
        "double_sum_s": t_naive,
        "speedup": t_naive / t_lvgp,
        "max_abs_diff_K": (K_lvgp - K_naive).abs().max().item(),
        "max_abs_diff_grad": (g_lvgp - g_naive).abs().max().item(),
    }


def one(n: int, vocab: int, max_len: int, repeats: int) -> dict:
    """lvgp's forward+backward at one size (run in a fresh process for its peak memory)."""
    kernel = LatentDistributionKernel(vocab, 2, "rbf", "linear", seed=0).double()
    x = make_docs(n, vocab, max_len, seed=1)

    def fn():
        kernel.zero_grad()
        K = kernel(x).to_dense()
        K.sum().backward()
        return K, None

    seconds, _, _ = timed(fn, repeats)
    words = int(torch.unique(x[x != PAD]).numel())
    # VmHWM (peak RSS of this process image; unlike ru_maxrss it does not survive exec)
    status = open("/proc/self/status").read()
    peak_mib = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) / 1024
    return {"n": n, "V": vocab, "distinct_words": words, "seconds": seconds, "peak_rss_mib": peak_mib}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds")
    parser.add_argument("--one", nargs=3, type=int, metavar=("N", "V", "MAX_LEN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    torch.set_num_threads(torch.get_num_threads())
    if args.one:
        print(json.dumps(one(*args.one, repeats=3)))
        return 0

    n, vocab, max_len = (60, 300, 20) if args.quick else (400, 2000, 60)
    res = compare(n, vocab, max_len, repeats=3 if args.quick else 5)
    print(f"LDK Gram, RBF-LIN, q=2, float64, n={n}, V={vocab}, documents of 5..{max_len} words; forward+backward")
    print(f"  lvgp (C G C^T, embedding_bag):  {res['lvgp_s'] * 1000:10.1f} ms")
    print(f"  padded double sum (reference):  {res['double_sum_s'] * 1000:10.1f} ms")
    print(
        f"  speed-up: {res['speedup']:.0f}x   max |K diff| {res['max_abs_diff_K']:.1e}   max |grad diff| {res['max_abs_diff_grad']:.1e}"
    )

    sizes = (
        [(500, 2000), (1000, 2000)]
        if args.quick
        else [(n, v) for v in (2000, 10000) for n in (500, 1000, 2000, 4000, 8000)]
    )
    print("\nscaling (lvgp only; each size in a fresh process; peak RSS of that process, torch import included)")
    print(f"{'n':>6} {'V':>6} {'distinct':>8} {'fwd+bwd s':>10} {'peak RSS MiB':>13}")
    for n_docs, v in sizes:
        out = run_child(__file__, ["--one", str(n_docs), str(v), str(max_len if not args.quick else 20)], check=True)
        row = json.loads(out.stdout)
        print(
            f"{row['n']:>6} {row['V']:>6} {row['distinct_words']:>8} {row['seconds']:>10.3f} {row['peak_rss_mib']:>13.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
