"""A default ``lvgp compare classification`` cell of every LDK method (issue 27: at most 5 minutes
on one thread), now against an earlier commit's code, measured in the same run.

One cell: 20ng, split 0, 200 training documents, vocabulary uncut, the study's defaults (the
thesis's dev grids: 162 distinct latent-SMM fits, 9 GP-classifier fits), test on the whole test
split (7,532 documents). Each cell runs in its own subprocess with one thread
(``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``); ``--jobs 2`` runs the "before" and "now"
cells side by side, so that both see the same load. ``--profile`` runs the "now" cells under
cProfile and prints their top functions by own time.

    python benchmarks/ldk_cells.py [--methods ...] [--before-methods latent-smm] [--before 1520408] [--quick]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _before import ROOT, extract, run_code

LDK_METHODS = ("latent-smm", "latent-smm-glove", "ldk-gpc", "ldk-gpc-glove", "ldk-gpc-plus", "latent-smm-plus")

# runs in a subprocess against one package; prints one JSON line
_CELL = r"""
import cProfile, io, json, pstats, sys, time, warnings
import torch
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp.experiments.classification import ClassificationStudy
args = json.loads(sys.argv[1])
study = ClassificationStudy(dataset=args["dataset"], train_sizes=(args["size"],), splits=1, methods=(args["method"],))
cell = {"method": args["method"], "split": 0, "params": {"train_size": args["size"]}}
prof = cProfile.Profile() if args["profile"] else None
start = time.perf_counter()
if prof:
    prof.enable()
record = study.run_cell(cell)
if prof:
    prof.disable()
seconds = time.perf_counter() - start
out = io.StringIO()
if prof:
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
keep = ("accuracy", "fit_seconds", "selection_seconds", "chosen", "n_iter", "dev_path")
print(json.dumps({"seconds": seconds, "profile": out.getvalue(), **{k: record.get(k) for k in keep}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default=",".join(LDK_METHODS), help="the cells run with today's code")
    parser.add_argument("--before-methods", default="latent-smm,latent-smm-glove", help="the cells run before too")
    parser.add_argument("--before", default="1520408", help="the commit of 'before'")
    parser.add_argument("--dataset", default="20ng")
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--quick", action="store_true", help="one cheap cell (latent-smm-plus, r8, 40 documents; the tests)"
    )
    args = parser.parse_args()
    if args.quick:
        args.methods, args.before_methods, args.dataset, args.size = "latent-smm-plus", "", "r8", 40
    now = [m for m in args.methods.split(",") if m]
    before = [m for m in args.before_methods.split(",") if m]
    with tempfile.TemporaryDirectory() as tmp:
        package = extract(args.before, Path(tmp)) if before else None
        jobs = []  # before and now of one method next to each other: they run side by side
        for method in dict.fromkeys(before + now):
            if method in before:
                jobs.append(("before", method, package))
            if method in now:
                jobs.append(("now", method, ROOT))

        def run(job):
            which, method, where = job
            start = time.perf_counter()
            result = run_code(
                _CELL,
                where,
                {
                    "dataset": args.dataset,
                    "size": args.size,
                    "method": method,
                    "profile": args.profile and which == "now",
                },
            )
            print(f"  {which:6s} {method}: {time.perf_counter() - start:.0f} s", flush=True)
            return job, result

        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run, jobs))

    print(f"\n{args.dataset}, {args.size} training documents, split 0, one thread per cell, --jobs {args.jobs}")
    print("\n| method | code | cell s | dev selection s | test accuracy | chosen |")
    print("|---|---|---|---|---|---|")
    for (which, method, _), r in results:
        chosen = ", ".join(f"{k}={v:g}" for k, v in (r["chosen"] or {}).items() if isinstance(v, int | float))
        label = "now" if which == "now" else f"before ({args.before})"
        select = "" if r["selection_seconds"] is None else f"{r['selection_seconds']:.0f}"
        print(f"| {method} | {label} | {r['seconds']:.0f} | {select} | {r['accuracy']:.3f} | {chosen} |")
    timed = {(w, m): r["seconds"] for (w, m, _), r in results}
    for method in before:
        if ("now", method) in timed:
            print(f"{method}: before / now = {timed['before', method] / timed['now', method]:.2f}x")
    for (which, method, _), r in results:
        if r["profile"]:
            print(f"\nprofile, {which} {method}:\n{r['profile']}")
    print(
        json.dumps(
            [{"code": w, "method": m, **{k: v for k, v in r.items() if k != "profile"}} for (w, m, _), r in results]
        )
    )


if __name__ == "__main__":
    main()
