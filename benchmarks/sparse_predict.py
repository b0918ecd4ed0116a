"""The sparse GP-LVSM's predictions: each Monte Carlo draw's marginals through gpytorch's call against the
SVGP marginals written out (``lvgp.models.inducing.gaussian_predictive_marginals``), one fitted model, one
process, one thread.

``SparseGPLVSMRegressor.predict`` with the default kernel (variational word vectors) averages the predictive
moments over ``predict_samples`` draws of the vectors (32). Each draw went through ``likelihood(model(x))``:
gpytorch's variational strategy, its lazy kernel tensors and linear operators, for what is a mean and a
variance a document. Now each draw computes ``K_ZX``, ``K_ZZ``'s Cholesky factor and ``diag K_XX`` and the
marginals from them (the training step's ``training_marginals``), and the factors of the first block's draws
(the same draws at every call) are kept between calls while the model is unchanged. The three run on the same
fitted model in the same run (the reference is gpytorch's call put back in place of the new function; the
middle row keeps no factor); their predictions must agree to 1e-12 relative (printed: the largest
difference).

    python benchmarks/sparse_predict.py [--quick] [--train 2000] [--inducing 64,256] [--calls 10]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch

import lvgp.models.sparse as sparse_module
from lvgp import MiniBatch, SparseGPLVSMRegressor
from lvgp.datasets import make_synonym_regression


def gpytorch_marginals(model, likelihood, x, include_noise=True, factors=None, draw=0):
    """The code before: each draw's moments from gpytorch's call."""
    f = model(x)
    out = likelihood(f) if include_noise else f
    return out.mean, out.variance


def timed(f):
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out


def measure(model, texts, calls):
    """The median seconds of ``calls`` calls on one text each (means and standard deviations), the seconds of
    one call on the rest, and every prediction."""
    model.predict(texts[:1])  # first call: whatever is built once
    ones = [timed(lambda i=i: model.predict(texts[i : i + 1], return_std=True)) for i in range(1, calls + 1)]
    whole, (mean, std) = timed(lambda: model.predict(texts[calls + 1 :], return_std=True))
    values = np.concatenate([np.concatenate(v) for _, v in ones] + [mean, std])
    return float(np.median([t for t, _ in ones])), whole, values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the test suite's run)")
    parser.add_argument("--train", type=int, default=2000, help="training texts")
    parser.add_argument("--inducing", default="64,256", help="inducing documents, comma-separated")
    parser.add_argument("--calls", type=int, default=10, help="calls of one text each, timed (their median)")
    parser.add_argument("--test", type=int, default=1000, help="texts of the one call on many")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    train = 200 if args.quick else args.train
    inducing = [16] if args.quick else [int(m) for m in args.inducing.split(",")]
    calls = 2 if args.quick else args.calls
    test = 50 if args.quick else args.test
    corpus = make_synonym_regression(n=train + calls + 1 + test, noise=0.1, random_state=0)
    texts = corpus.texts[train:]
    print(
        f"SparseGPLVSMRegressor (the default kernel: variational word vectors), {train} training texts, one thread; "
        f"{calls} calls of one text each (their median), then one call of {test} texts; means and standard deviations\n"
    )
    print("| inducing | draws | path | a call, one text s | one call, many s |\n|---|---|---|---|---|")
    worst = 0.0
    for m in inducing:
        model = SparseGPLVSMRegressor(
            num_inducing=m, optimizer=MiniBatch(batch_size=256, max_steps=5 if args.quick else 100), random_state=0
        ).fit(corpus.texts[:train], corpus.y[:train])
        new = measure(model, texts, calls)
        box = model.__dict__.pop("_kept_factors")  # no factor kept
        try:
            unkept = measure(model, texts, calls)
        finally:
            model._kept_factors = box
        with_gpytorch = sparse_module.gaussian_predictive_marginals
        sparse_module.gaussian_predictive_marginals = gpytorch_marginals
        try:
            old = measure(model, texts, calls)
        finally:
            sparse_module.gaussian_predictive_marginals = with_gpytorch
        draws = model.predict_samples
        print(f"| {m} | {draws} | gpytorch's call (before) | {old[0]:.3f} | {old[1]:.3f} |")
        print(f"| {m} | {draws} | the marginals written out, no factor kept | {unkept[0]:.3f} | {unkept[1]:.3f} |")
        print(f"| {m} | {draws} | written out, the factors kept (now) | {new[0]:.3f} | {new[1]:.3f} |")
        print(f"| {m} | | before / now | **{old[0] / new[0]:.2f}x** | **{old[1] / new[1]:.2f}x** |")
        for other in (unkept, new):
            worst = max(worst, float(np.max(np.abs(old[2] - other[2]) / np.maximum(np.abs(old[2]), 1e-300))))
    if worst > 1e-12:
        raise SystemExit(f"the paths' predictions differ by {worst:.1e} relative")
    print(f"\nthe same predictions from every path to rounding: largest relative difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
