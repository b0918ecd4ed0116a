"""A user's wait for predictions, the code before against now in one run (each code in its own process,
one thread):

1. ``GPLVSMRegressor.predict`` called again and again (one text at a time, as in a notebook, an
   active-learning loop or a service). Before, every call factorized the training covariance once per
   Monte Carlo sample of the word vectors (32 by default) and solved for the variances even when only
   the means were asked for; now each sample's factorization is kept between calls while the model is
   unchanged, and the means alone skip the variances' solves. The predictions of both must be the same
   numbers to rounding (1e-12 relative; printed: the largest difference, 0 for the same bits). They were
   the same bits on the Xeon host of the README's figures; on an AMD EPYC host they differ in the last bit
   (3e-16), the same operations rounding otherwise.
2. ``CLGP.predict_proba`` (imputing hidden values of a categorical table): the predictive probabilities'
   200 draws were a loop over samples, now batches of them (the same draws); the estimates agree to
   rounding.
3. ``GPEmbeddingLogisticRegression.predict_proba`` with ``posterior="normal"``: each posterior draw
   factorized K_l + sigma^2 I of the words anew (a Cholesky of p x p a draw); now the draws come in
   chunks, one solve with the fitted factor a chunk. The two codes draw differently: their estimates
   differ by the Monte Carlo error.

    python benchmarks/predict_latency.py [--quick] [--sizes 200,600] [--before 6673703]
"""

from __future__ import annotations

import argparse

from _before import run_before_and_now

BEFORE = "6673703"

CHILD = r"""
import json, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp import CLGP, Adam, GPLVSMRegressor
from lvgp.datasets import make_synonym_regression
from lvgp.models.clgp.estimators import hide_each_value
from lvgp.kernels import mean_embedding
from lvgp.kernels.word_vectors import VariationalWordVectors
# both codes fit the same model to the bit, so that what is compared is their predictions: the fit's
# changes since the code before (issue 60) are switched off -- its training draws float32 normals (the
# code before float64 ones) and its bag-of-words products are CSR products (before, embedding_bag's:
# the same values to rounding)
if hasattr(VariationalWordVectors, "_resample_for_training"):
    VariationalWordVectors._resample_for_training = VariationalWordVectors.resample
if hasattr(mean_embedding, "_bags_csr"):
    mean_embedding._bags_csr = lambda bags, size: None

def timed(f):
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out

def gplvsm(n, calls, max_iter):
    corpus = make_synonym_regression(n=n + calls + 100, noise=0.1, random_state=0)
    model = GPLVSMRegressor(optimizer=Adam(max_iter=max_iter), random_state=0).fit(corpus.texts[:n], corpus.y[:n])
    texts = corpus.texts[n:]
    first, _ = timed(lambda: model.predict(texts[:1]))
    means = [timed(lambda i=i: model.predict(texts[i : i + 1])) for i in range(1, calls + 1)]
    stds = [timed(lambda i=i: model.predict(texts[i : i + 1], return_std=True)) for i in range(1, calls + 1)]
    batch, (batch_mean, batch_std) = timed(lambda: model.predict(texts[-100:], return_std=True))
    return {
        "samples": model._latent_samples("predict"),
        "first": first,
        "mean_call": float(np.median([t for t, _ in means])),
        "std_call": float(np.median([t for t, _ in stds])),
        "batch": batch,
        "values": [float(v) for _, m in means for v in m] + [float(v) for _, (m, s) in stds for v in (*m, *s)],
        "batch_values": [float(v) for v in (*batch_mean, *batch_std)],
    }

def clgp(covariance, rows, hidden, impute_iter):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 10, size=(rows + hidden, 10))
    model = CLGP(optimizer=Adam(max_iter=5), latent_scale="joint", covariance=covariance, impute_iter=impute_iter,
                 random_state=0)
    model.fit(codes[:rows], [10] * 10)
    partial, _, _ = hide_each_value(codes[rows:])
    whole, probs = timed(lambda: model.predict_proba(partial))
    loc, scale = model.infer_rows(partial)
    draws, _ = timed(lambda: model.model_.predictive_probabilities(
        loc, scale, model.predict_samples, torch.Generator().manual_seed(0), True))
    return {"whole": whole, "draws": draws, "values": [float(v) for p in probs for v in p.ravel()]}

def gp_embedding(docs, words, samples, max_iter):
    import scipy.sparse as sp
    from lvgp.baselines.gp_embedding import GPEmbeddingLogisticRegression
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(words, 8))
    x = sp.random(docs + 200, words, density=10 / words, random_state=0, format="csr")
    x.data[:] = 1.0
    y = (np.asarray(x @ emb[:, 0]).ravel() > 0).astype(int)
    model = GPEmbeddingLogisticRegression(embeddings=emb, posterior="normal", optimizer=Adam(max_iter=max_iter),
                                          predict_samples=samples, random_state=0).fit(x[:docs], y[:docs])
    whole, probs = timed(lambda: model.predict_proba(x[docs:]))
    return {"whole": whole, "values": [float(v) for v in probs[:, 1]]}

def run(job):
    kind = job.pop("kind")
    return {"gplvsm": gplvsm, "clgp": clgp, "gp_embedding": gp_embedding}[kind](**job)

print(json.dumps([run(dict(job)) for job in args["jobs"]]))
"""


def _relative(before: list[float], now: list[float]) -> float:
    """The largest relative difference between two codes' values (0: the same bits)."""
    return max((abs(x - y) / max(abs(x), 1e-300) for x, y in zip(before, now)), default=0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the test suite's run)")
    parser.add_argument("--sizes", default="200,600", help="training texts of the GP-LVSM")
    parser.add_argument("--calls", type=int, default=10, help="calls of one text each, timed (their median)")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    sizes = [60] if args.quick else [int(s) for s in args.sizes.split(",")]
    calls = 3 if args.quick else args.calls
    hidden = 6 if args.quick else 60
    clgp_jobs = [
        {"kind": "clgp", "covariance": c, "rows": 40 if args.quick else 500, "hidden": hidden}
        | {"impute_iter": 20 if args.quick else 300}
        for c in ("rbf", "linear")
    ]
    embedding_jobs = [
        {"kind": "gp_embedding", "docs": 100, "words": words, "samples": 50 if args.quick else 200}
        | {"max_iter": 5 if args.quick else 100}
        for words in ([100] if args.quick else [500, 2000])
    ]
    jobs = [{"kind": "gplvsm", "n": n, "calls": calls, "max_iter": 5 if args.quick else 20} for n in sizes]
    jobs += clgp_jobs + embedding_jobs
    before, now = run_before_and_now(CHILD, args.before, {"jobs": jobs})

    print(
        "1. GPLVSMRegressor (the default kernel: variational word vectors, Monte Carlo predictions), one "
        f"thread; {calls} calls of one text each (their median), then one of 100 texts\n"
    )
    print(
        "| training texts | samples | code | first call s | a call, means s | a call, means and std s "
        "| 100 texts s |\n|---|---|---|---|---|---|---|"
    )
    worst_one, worst_batch = 0.0, 0.0
    for n, b, r in zip(sizes, before, now):
        for name, x in ((f"before ({args.before})", b), ("now", r)):
            print(
                f"| {n} | {x['samples']} | {name} | {x['first']:.3f} | {x['mean_call']:.3f} | {x['std_call']:.3f} "
                f"| {x['batch']:.3f} |"
            )
        print(
            f"| {n} | | before / now | {b['first'] / r['first']:.2f}x | **{b['mean_call'] / r['mean_call']:.1f}x** "
            f"| **{b['std_call'] / r['std_call']:.1f}x** | {b['batch'] / r['batch']:.2f}x |"
        )
        worst_one = max(worst_one, _relative(b["values"], r["values"]))
        worst_batch = max(worst_batch, _relative(b["batch_values"], r["batch_values"]))
    if max(worst_one, worst_batch) > 1e-12:
        raise SystemExit(
            f"the GP-LVSM's predictions of the two codes differ: {worst_one:.1e} (one text), {worst_batch:.1e} (100 "
            "texts) relative"
        )
    print(
        f"\nthe same predictions from both codes to rounding: largest relative difference {worst_one:.1e} for one "
        f"text, {worst_batch:.1e} for 100 texts (0 is the same bits)"
    )

    print(
        f"\n2. CLGP.predict_proba of a 10-column table (10 values a column; every value of {hidden} rows hidden in "
        "turn), float32, one thread; 'draws': the predictive probabilities' 200 draws alone\n"
    )
    print("| covariance | code | predict_proba s | draws s | draws: before / now | largest difference |")
    print("|---|---|---|---|---|---|")
    first = len(sizes)
    for job, b, r in zip(clgp_jobs, before[first:], now[first:]):
        diff = max(abs(x - y) for x, y in zip(b["values"], r["values"]))
        print(f"| {job['covariance']} | before ({args.before}) | {b['whole']:.2f} | {b['draws']:.3f} | | |")
        print(
            f"| {job['covariance']} | now | {r['whole']:.2f} | {r['draws']:.3f} "
            f"| **{b['draws'] / r['draws']:.1f}x** | {diff:.1e} |"
        )

    print(
        '\n3. GPEmbeddingLogisticRegression.predict_proba, posterior="normal" (the average over posterior draws), '
        f"{embedding_jobs[0]['samples']} draws, 200 documents, one thread; the two codes draw differently: their "
        "difference is the Monte Carlo error\n"
    )
    print("| words | code | predict_proba s | before / now | largest difference |\n|---|---|---|---|---|")
    first += len(clgp_jobs)
    for job, b, r in zip(embedding_jobs, before[first:], now[first:]):
        diff = max(abs(x - y) for x, y in zip(b["values"], r["values"]))
        print(f"| {job['words']} | before ({args.before}) | {b['whole']:.2f} | | |")
        print(f"| {job['words']} | now | {r['whole']:.2f} | **{b['whole'] / r['whole']:.1f}x** | {diff:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
