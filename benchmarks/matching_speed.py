"""Matching at CCA's pace (issue 41, 6): one ``ldk-plus`` cell of the matching study against one CCA
cell on the same set, one thread, and the same ``ldk-plus`` cell with the code before this change.

A cell is what ``lvgp compare matching`` runs: fit on the training pairs (the LDK matcher stops on
the dev pairs), then rank the dev and the test targets. Each variant runs in its own process with
one thread, one after the other in one run of this script, so "before" and "now" share the load.
The ``ldk-plus`` cell: q = 32, rho 0.1, gamma 1, lambda ``--identity-weight`` (the committed
Debian study's grid), L-BFGS from the CCA start; CCA: ``--cca-components`` at reg 0.1. Printed: the
cell's seconds, the fit's seconds, L-BFGS evaluations (calls of the loss), the seconds per evaluation,
test Precision@1, and each ``ldk-plus`` cell's time against CCA's. The "now" cell runs with the
matcher's default ``dtype`` (float32) and once more with ``dtype="float64"``. With ``--profile`` the
"now" fit also runs under cProfile (top functions by own time, the table benchmarks/README.md keeps).
With ``--floor`` the "now" cell also times the arithmetic floor of one evaluation on its fitted vectors:
the word Grams' matrix products (forward and backward) and one ``exp`` per Gram entry, nothing else
(the elementwise steps, the sparse products, the level 2 and the loss left out), times its evaluations.

    python benchmarks/matching_speed.py --pairs debian_descriptions_en_de.jsonl.gz [--set 0] [--before 8e6dc53]
    python benchmarks/matching_speed.py --pairs debian_descriptions_en_de.jsonl.gz --set 0,1,2 --no-float64
    python benchmarks/matching_speed.py --pairs debian_descriptions_en_de.jsonl.gz --set 1 --before '' --floor
    python benchmarks/matching_speed.py --quick   # synthetic pairs, no download, no "before" (the tests)

``--pairs`` takes what the study takes: ``wagtail-de`` (fetched from the package registry; 1,019
short messages, so ``--train 600``) or an aligned JSON-lines file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code

CELL = r"""
import json, sys, time, warnings
import numpy as np, torch
torch.set_num_threads(1)
from threadpoolctl import threadpool_limits
threadpool_limits(1)
args = json.loads(sys.argv[1])
from lvgp.experiments.matching import MatchingStudy, prepare
from lvgp.models.matching import precision_at
study = MatchingStudy(pairs=args["pairs"], methods=("ldk-plus", "cca"), min_df=args["min_df"], word_weighting="idf",
                      train=args["train"], dev=args["dev"], test=args["test"], sets=args["set"] + 1, max_iter=args["max_iter"])
train, dev, test, _ = prepare(study, args["set"])
if args["method"] == "ldk-plus":
    params = {"q": 32, "rho": 0.1, "gamma": 1.0, "identity_weight": args["identity_weight"]}
else:
    params = {"components": args["components"], "reg": 0.1}
model = study.build({"method": args["method"], "split": args["set"], "params": params})
if args.get("dtype"):
    model.set_params(dtype=args["dtype"])
evaluations, evaluation_seconds = [0], [0.0]
if args["method"] == "ldk-plus":  # the loss's calls counted, and their forward and backward timed
    loss, backward = model._loss, torch.Tensor.backward
    def counted(*a, **k):
        evaluations[0] += 1
        t0 = time.perf_counter()
        try:
            return loss(*a, **k)
        finally:
            evaluation_seconds[0] += time.perf_counter() - t0
    def timed_backward(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return backward(self, *a, **k)
        finally:
            evaluation_seconds[0] += time.perf_counter() - t0
    model._loss, torch.Tensor.backward = counted, timed_backward
warnings.simplefilter("ignore")
profile = None
start = time.perf_counter()
if args.get("profile"):
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
model.fit(*train, *(dev if args["method"] == "ldk-plus" else ()))
if profile is not None:
    profile.disable()
fit = time.perf_counter() - start
if args["method"] == "ldk-plus":
    torch.Tensor.backward = backward
model.true_target_ranks(*dev)
ranks = model.true_target_ranks(*test)
cell = time.perf_counter() - start
table = None
if profile is not None:
    import io, pstats
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(12)
    table = out.getvalue()

def arithmetic_floor(model, sources, targets, reps=9):
    # one evaluation's dense arithmetic alone, on the fitted vectors of the training pairs: the word Grams'
    # products (the cross Gram and the documents' own, forward and backward) and one exp per Gram entry,
    # none of the elementwise steps, sparse products, level 2 or loss around them
    from lvgp.bow.padded import pad_to_common_width
    kernel = model.kernel_
    latent = kernel._forward_state().detach().float()
    xs, xt = pad_to_common_width(*model._encode(list(sources), list(targets), on_empty="keep"))
    ds, dt = kernel._prepare(xs, torch.float32), kernel._prepare(xt, torch.float32)
    def median(f):
        f()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)
        return float(np.median(times))
    a, b = latent[ds.distinct()[0]].contiguous(), latent[dt.distinct()[0]].contiguous()
    gram = a @ b.mT
    exponent, weights = gram.clamp(max=0), torch.rand_like(gram)
    parts = {"products": median(lambda: a @ b.mT) + median(lambda: (weights @ b, weights.mT @ a)),
             "exp": median(lambda: torch.exp(exponent, out=gram))}
    entries = gram.numel()
    for d in (ds, dt):  # the documents' own Grams, in the buckets of like widths an evaluation takes
        vectors = latent[d.distinct()[0]]
        for ids, _ in d.self_buckets().buckets:
            x = vectors[ids]
            own = torch.bmm(x, x.mT)
            exponent = own.clamp(max=0)
            entries += own.numel()
            parts["products"] += median(lambda: torch.bmm(x, x.mT)) + median(lambda: torch.bmm(own, x))
            parts["exp"] += median(lambda: torch.exp(exponent, out=own))
    return {"entries": entries, **parts}

floor = arithmetic_floor(model, *train) if args.get("floor") and args["method"] == "ldk-plus" else None
print(json.dumps({"fit": fit, "cell": cell, "evaluations": evaluations[0], "p1": precision_at(ranks, 1)[1],
                  "n_iter": getattr(model, "n_iter_", None), "profile": table, "floor": floor,
                  "evaluation_seconds": evaluation_seconds[0]}))
"""


def synthetic_pairs(path: Path, n: int = 200, seed: int = 0) -> None:
    """Aligned pairs without a download: each source text's words, each mapped to a target word
    of its own (a few dropped, a few shared tokens such as names), so matching is learnable."""
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, 6)) for _ in range(300)]
    names = ["".join(rng.choice(letters, 8)) for _ in range(37)]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(n):
            chosen = rng.choice(len(words), size=int(rng.integers(4, 12)), replace=False)
            source = " ".join(words[j] for j in chosen) + " " + names[i % 37]
            target = " ".join("ge" + words[j][::-1] for j in chosen if rng.random() > 0.1) + " " + names[i % 37]
            fh.write(json.dumps({"id": i, "en": source, "de": target}) + "\n")


def add_split_arguments(parser: argparse.ArgumentParser) -> None:
    """The pairs and the split of a matching cell, as the study takes them (shared with
    ``matching_stopping.py``)."""
    parser.add_argument("--pairs", default="wagtail-de", help="what the matching study's --pairs takes")
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--dev", type=int, default=100)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--min-df", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=300)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="synthetic pairs, 100 training pairs (for the tests)")
    add_split_arguments(parser)
    parser.add_argument("--set", default="0", help="the set, or sets ('0,1,2': one table each, then their totals)")
    parser.add_argument("--identity-weight", type=float, default=1.0)
    parser.add_argument("--cca-components", type=int, default=32)
    parser.add_argument("--before", default="8e6dc53", help="the commit to compare against ('' to skip)")
    parser.add_argument("--profile", action="store_true", help="cProfile the 'now' ldk-plus fit")
    parser.add_argument("--no-float64", action="store_true", help="skip the 'now' cell in float64")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time the arithmetic floor of one 'now' evaluation (the Grams' products and one exp per entry; "
        "--quick does)",
    )
    args = parser.parse_args(argv)
    sets = [int(v) for v in str(args.set).split(",")]
    if len(sets) > 1 and args.profile:
        parser.error("--profile takes one set")
    totals: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # the pairs and the code before, once for all sets
        pairs = args.pairs
        settings = {"train": args.train, "dev": args.dev, "test": args.test, "min_df": args.min_df}
        if args.quick:
            pairs = str(Path(tmp) / "pairs.jsonl.gz")
            synthetic_pairs(Path(pairs))
            settings = {"train": 100, "dev": 30, "test": 30, "min_df": 2}
        common = {
            "pairs": pairs,
            "max_iter": 20 if args.quick else args.max_iter,
            "identity_weight": args.identity_weight,
            "components": min(args.cca_components, 16) if args.quick else args.cca_components,
            **settings,
        }
        before = extract(args.before, Path(tmp) / "before") if args.before and not args.quick else None
        for index in sets:
            runs = run_set(args, {**common, "set": index}, before)
            for name, run in runs.items():
                total = totals.setdefault(name, [0.0, 0.0])
                total[0] += run["cell"]
                total[1] += run["evaluations"] or 0
    if len(sets) > 1:
        print(f"\nsets {args.set}, together (path luck in the evaluation counts averages out):\n")
        print("| method | cells s | evaluations | cells / CCA's |")
        print("|---|---|---|---|")
        for name, (cell, evaluations) in totals.items():
            print(f"| {name} | {cell:.2f} | {int(evaluations) or '-'} | {cell / totals['cca'][0]:.1f}x |")
    return 0


def run_set(args, common: dict, before: Path | None) -> dict:
    """One set's cells (CCA, the LDK matcher now, in float64, and at ``before``), printed as a table:
    ``common`` the cell's settings, its set included."""
    runs = {"cca": run_code(CELL, ROOT, {**common, "method": "cca"})}
    runs["ldk-plus (now)"] = run_code(
        CELL, ROOT, {**common, "method": "ldk-plus", "profile": args.profile, "floor": args.floor or args.quick}
    )
    if not args.quick and not args.no_float64:  # the same code in float64 (the matcher's arithmetic before dtype=)
        runs["ldk-plus (now, float64)"] = run_code(CELL, ROOT, {**common, "method": "ldk-plus", "dtype": "float64"})
    if before is not None:
        runs[f"ldk-plus ({args.before})"] = run_code(CELL, before, {**common, "method": "ldk-plus"})
    cca = runs["cca"]["cell"]
    print(
        f"pairs: {'synthetic' if args.quick else args.pairs}, set {common['set']}, {common['train']} training pairs, one thread"
    )
    print("| method | cell s | fit s | evaluations | s / evaluation | test P@1 | cell / CCA's |")
    print("|---|---|---|---|---|---|---|")
    for name, run in runs.items():
        per = f"{run['fit'] / run['evaluations']:.3f}" if run["evaluations"] else "-"
        evaluations = run["evaluations"] or "-"
        print(
            f"| {name} | {run['cell']:.2f} | {run['fit']:.2f} | {evaluations} | {per} | {run['p1']:.3f} | "
            f"{run['cell'] / cca:.1f}x |"
        )
    floor = runs["ldk-plus (now)"].get("floor")
    if floor:
        now = runs["ldk-plus (now)"]
        per = floor["products"] + floor["exp"]
        spent = now["evaluation_seconds"]
        rest = now["cell"] - spent
        print(
            f"\nThe arithmetic floor of one evaluation ('now', float32): {1000 * per:.1f} ms -- the word Grams' "
            f"products {1000 * floor['products']:.1f} ms and one exp per entry {1000 * floor['exp']:.1f} ms, "
            f"{floor['entries'] / 1e6:.2f}M entries. An evaluation took {1000 * spent / now['evaluations']:.1f} ms "
            f"(forward and backward; {spent:.2f} s of the cell's {now['cell']:.2f} s, the other "
            f"{now['cell'] - spent:.2f} s the start, L-BFGS, the dev score and the ranking). At the floor, the "
            f"{now['evaluations']} evaluations would take {per * now['evaluations']:.2f} s and the cell "
            f"{rest + per * now['evaluations']:.2f} s: {(rest + per * now['evaluations']) / cca:.1f}x CCA's cell "
            f"(now {now['cell'] / cca:.1f}x)"
        )
    if runs["ldk-plus (now)"]["profile"]:
        from _profile import profile_table

        print("\nProfile of the 'now' ldk-plus fit (cProfile, own time):\n")
        print(profile_table(runs["ldk-plus (now)"]["profile"]))
    return runs


if __name__ == "__main__":
    sys.exit(main())
