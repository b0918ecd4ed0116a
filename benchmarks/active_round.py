"""One round of the active study's best strategy, the code before against now in one run (each code in its
own process, one thread): the pool GP's predictions that a round of ``gp-pool-power-epig`` makes, on the same
fit.

* ``predict_latent_cross`` of the unlabelled pool against the 100 target texts (what EPIG reads), and
* ``predict_proba`` of the test split (the learning curve's point),

each called once on a fresh process (the first round: nothing tokenized yet, the cluster kernel's nearest
pool points not yet remembered) and again (every later round calls them on the same texts; the fastest of
``--repeats``); and ``Vocabulary.tokenize`` over the candidates alone, twice (a text tokenized first costs
the memo its interning; again, a lookup). Printed: seconds, the ratios, and the largest difference between the
two codes' results (their fits differ in the last digits: a document set now derived from a block cut to its
words sums no padding columns).

With ``--profile``, cProfile of one more call of ``predict_latent_cross`` by each code (the code before's: the
profile that led to the change).

    python benchmarks/active_round.py --threads 1          # benchmarks/README.md, "active_round.py"
    python benchmarks/active_round.py --quick              # a synthetic corpus, seconds: the tests'
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code

#: the commit before the change: prediction blocks in row order, each block's padded copies of the
#: training and target documents derived again, every text tokenized again at every call
BEFORE = "27514d2"

CHILD = r"""
import json, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")

def timed(f):
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out

if args["quick"]:
    from lvgp import LBFGS
    from lvgp.datasets import make_synonym_regression
    from lvgp.models.gpc import LDKGPClassifier
    corpus = make_synonym_regression(n=700, noise=0.0, random_state=0)
    texts = [" ".join([t] * (1 + i % 7)) for i, t in enumerate(corpus.texts)]  # lengths 1-7 times
    labels = np.digitize(corpus.y, np.quantile(corpus.y, [1 / 3, 2 / 3]))
    pool_texts, pool_labels, test_texts = texts[:500], labels[:500], texts[500:]
    chosen = np.arange(args["labelled"])
    model = LDKGPClassifier(optimizer=LBFGS(max_iter=5), random_state=0)
else:
    from lvgp.experiments.active import ActiveStudy
    study = ActiveStudy(dataset=args["dataset"], strategies=("gp-pool-power-epig",), splits=1)
    split = study.split(0)
    pool_texts, pool_labels, test_texts = split.pool_texts, split.pool_labels, split.test_texts
    rest = np.setdiff1d(np.arange(len(pool_labels)), split.start)
    extra = np.random.default_rng(args["seed"]).choice(rest, args["labelled"], replace=False)
    chosen = np.concatenate([split.start, extra])
    model = study.estimator({"method": "gp-pool-power-epig", "split": 0, "params": {}})
rng = np.random.default_rng(args["seed"] + 1)
unlabelled = np.setdiff1d(np.arange(len(pool_labels)), chosen)
candidates = [pool_texts[i] for i in unlabelled]
targets = [candidates[i] for i in rng.choice(len(candidates), args["targets"], replace=False)]
fit, _ = timed(lambda: model.fit([pool_texts[i] for i in chosen], pool_labels[chosen]))
out = {"fit": fit, "labelled": int(len(chosen)), "candidates": len(candidates), "test": len(test_texts)}
for name, call in (("cross", lambda: model.predict_latent_cross(candidates, targets)),
                   ("proba", lambda: model.predict_proba(test_texts))):
    first, result = timed(call)
    again = min(timed(call)[0] for _ in range(args["repeats"]))
    parts = result if name == "cross" else [result]
    values = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in parts])
    np.save(args["save"] + "-" + name + ".npy", values)
    out[name] = {"first": first, "again": again}
if args["profile"]:
    import cProfile, io, pstats
    prof = cProfile.Profile()
    prof.runcall(lambda: model.predict_latent_cross(candidates, targets))
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
    out["profile"] = text.getvalue()
# the tokenizer alone over the candidates: a fresh memo's first pass (where there is one) and a second
from lvgp.bow import vocabulary as vocabulary_module
memo = getattr(vocabulary_module, "TOKENS", None)
if memo is not None:
    memo.clear()
vocab = vocabulary_module.Vocabulary()
out["tokenize"] = {"first": timed(lambda: [vocab.tokenize(t) for t in candidates])[0],
                   "again": timed(lambda: [vocab.tokenize(t) for t in candidates])[0]}
print(json.dumps(out))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus (the test suite's run)")
    parser.add_argument("--dataset", default="20ng", help="the active study's --dataset (its default pool and test)")
    parser.add_argument("--labelled", type=int, default=200, help="random pool texts labelled beside the first ones")
    parser.add_argument("--targets", type=int, default=100, help="EPIG's target texts")
    parser.add_argument("--repeats", type=int, default=3, help="calls again; the fastest is kept")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile of each code's call after the timed ones")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)

    import numpy as np
    from _profile import profile_table

    if args.quick:
        args.labelled, args.targets, args.repeats = 60, 20, 1
    job = {
        "quick": args.quick,
        "dataset": args.dataset,
        "labelled": args.labelled,
        "targets": args.targets,
        "repeats": args.repeats,
        "seed": args.seed,
    }
    threads = str(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        before = run_code(
            CHILD,
            extract(args.before, Path(tmp) / "before"),
            {**job, "save": f"{tmp}/before", "profile": args.profile},
            omp_threads=threads,
        )
        now = run_code(CHILD, ROOT, {**job, "save": f"{tmp}/now", "profile": args.profile}, omp_threads=threads)
        differences = {
            name: float(np.abs(np.load(f"{tmp}/before-{name}.npy") - np.load(f"{tmp}/now-{name}.npy")).max())
            for name in ("cross", "proba")
        }
    corpus = "a synthetic corpus" if args.quick else args.dataset
    print(
        f"\n{corpus}: {now['labelled']} labelled texts, {now['candidates']} candidates against {args.targets} "
        f"targets, {now['test']} test texts, {args.threads} thread(s); the code before is {args.before}\n"
    )
    print("| call | before, first (s) | now, first (s) | before, again (s) | now, again (s) | speed-up again |")
    print("|---|---|---|---|---|---|")
    for name, label in (("cross", "`predict_latent_cross` (the pool)"), ("proba", "`predict_proba` (the test split)")):
        b, n = before[name], now[name]
        print(
            f"| {label} | {b['first']:.2f} | {n['first']:.2f} | {b['again']:.2f} | {n['again']:.2f} "
            f"| {b['again'] / n['again']:.1f}x |"
        )
    b, n = before["tokenize"], now["tokenize"]
    print(
        f"\n`Vocabulary.tokenize` of the {now['candidates']} candidates, first / again (s): before {b['first']:.2f} / "
        f"{b['again']:.2f}, now {n['first']:.2f} / {n['again']:.2f}"
    )
    print(f"fit before / now: {before['fit']:.2f} / {now['fit']:.2f} s")
    print(
        "largest difference between the two codes' results: predict_latent_cross "
        f"{differences['cross']:.1e}, predict_proba {differences['proba']:.1e}"
    )
    if args.profile:
        for name, run in (("before", before), ("now", now)):
            print(f"\nthe code {name}: cProfile of a call of predict_latent_cross after the timed ones, by own time\n")
            print(profile_table(run["profile"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
