"""The host's share of a fused step (issue 60): the tables :class:`lvgp.models.fused_step.FusedSparseObjective`
builds with NumPy before each step -- the batch's bags (``document_bags``), the step's table (``step_table``)
and the bag-of-words cosines of the inducing documents and the batch -- today's code against an earlier
commit's (``--before``), in one run, at review lengths (documents up to 512 tokens, V = 50,000, batches of
256, 256 inducing documents).

On a GPU the host builds these tables while the device waits: ``gpu_all.sh``'s compiled parts measured the
fused step at 25.6 ms on an H200 (168 kernels, the GPU busy 7%) against the eager step's 14.0. Today's code
sorts the keys without the inverse permutation (in 32 bits where they fit), reads the step's distinct words
off a mark per vocabulary word instead of sorting them, and on a GPU computes the cosines there
(``table_cosines``: a dense product, a few launches) instead of the host's sparse product; the row "now, on a
GPU" leaves the cosines out of the host's time (``--device cuda`` times ``table_cosines`` itself).

    python benchmarks/fused_host_tables.py                    # against e1c23d7 (before this change)
    python benchmarks/fused_host_tables.py --device cuda      # and the cosines on the GPU
    python benchmarks/fused_host_tables.py --quick            # the tests: small, few repeats
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _before import ROOT, extract, run_code  # noqa: E402

CHILD = r"""
import json, sys, time
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
from lvgp.datasets.synthetic import make_zipf_topic_documents
from lvgp.models import fused_step as fs
data = make_zipf_topic_documents(args["docs"], num_words=args["num_words"], max_length=args["max_length"],
                                 random_state=0)
rng = np.random.default_rng(0)
inducing = fs.document_bags(data.X[rng.choice(len(data.X), args["inducing"], replace=False)], None, data.num_words)
batches = [data.X[rng.choice(len(data.X), args["batch"], replace=False)] for _ in range(args["batches"])]

def median_ms(fn):
    times = []
    for _ in range(args["repeats"]):
        for x in batches:
            start = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))

bags = lambda x: fs.document_bags(x, None, data.num_words)
table = lambda x: fs.step_table(inducing, bags(x))
def whole(x):
    batch = bags(x)
    fs.step_table(inducing, batch)
    fs.bag_of_words_cosines(inducing, batch)
out = {"bags": median_ms(bags), "table": median_ms(table), "whole": median_ms(whole),
       "tokens": float(np.mean([(x != -1).sum() for x in batches])), "device_ms": None}
if args["device"] != "cpu" and hasattr(fs, "table_cosines"):
    device = torch.device(args["device"])
    tables = []
    for x in batches:
        words, local, offsets, weights, _ = fs.step_table(inducing, bags(x))
        tables.append([torch.from_numpy(a).to(device) for a in (local, offsets, weights)] + [len(words)])
    times = []
    for _ in range(args["repeats"] + 1):
        for local, offsets, weights, u in tables:
            torch.cuda.synchronize(device)
            start = time.perf_counter()
            fs.table_cosines(local, offsets, weights, args["inducing"], u)
            torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
    out["device_ms"] = 1e3 * float(np.median(times[len(tables):]))  # the first pass is the warm-up
print(json.dumps(out))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="e1c23d7", help="the earlier commit (default: before this change)")
    parser.add_argument("--device", default="cpu", help="also time the cosines on this device (e.g. cuda)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small and few repeats (the tests)")
    args = parser.parse_args(argv)
    sizes = {"docs": 3000, "num_words": 50_000, "max_length": 512, "inducing": 256, "batch": 256, "batches": 8}
    if args.quick:
        sizes = {"docs": 300, "num_words": 2000, "max_length": 64, "inducing": 16, "batch": 32, "batches": 2}
        args.repeats = 1
    common = {**sizes, "repeats": args.repeats, "device": args.device}
    print(
        f"host tables of a fused step: batches of {sizes['batch']}, {sizes['inducing']} inducing documents, "
        f"V = {sizes['num_words']:,}, documents up to {sizes['max_length']} tokens; one thread; median of "
        f"{args.repeats} x {sizes['batches']} batches"
    )
    with tempfile.TemporaryDirectory() as tmp:
        before = run_code(CHILD, extract(args.before, Path(tmp) / "before"), {**common, "device": "cpu"})
        now = run_code(CHILD, ROOT, common)
    print(f"tokens a batch (mean): {now['tokens']:,.0f}")
    print("| code | bags ms | bags + table ms | host's tables a step ms | / before |")
    print("|---|---|---|---|---|")
    rows = [
        (args.before, before["bags"], before["table"], before["whole"]),
        ("now, on a CPU (cosines on the host)", now["bags"], now["table"], now["whole"]),
        ("now, on a GPU (cosines there)", now["bags"], now["table"], now["table"]),
    ]
    for name, bags, table, host in rows:
        print(f"| {name} | {bags:.2f} | {table:.2f} | {host:.2f} | {host / before['whole']:.2f}x |")
    if now["device_ms"] is not None:
        print(f"table_cosines on {args.device} (synchronized, median): {now['device_ms']:.3f} ms")
    print(f"speed-up of the host's share on a GPU: {before['whole'] / now['table']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
