"""Per-step time of the sparse GP-LVSM under torchrun with 1, 2 and 4 gloo processes (issue 41, 3).

Each configuration is one ``torchrun --nproc-per-node P`` launch of this script in worker mode: every
process loads the same synthetic corpus, fits ``SparseGPLVSMRegressor`` inside the group (each
process takes ``batch[rank::P]`` of every global batch of 256 documents and the gradients are
all-reduced), once to warm up, then with ``--warm`` steps and with ``--warm + --steps``; the difference of the two
fit times over ``--steps`` is the time of a step (building the model, choosing the inducing
documents and starting the processes are left out). Printed: seconds a step, the speed-up over one
process, and the numbers all-reduced a step (the gradients of the global parameters).

On this project's machine (2 cores) 4 processes oversubscribe the cores: the row shows what that costs.

    python benchmarks/torchrun_steps.py [--quick] [--processes 1,2,4] [--docs 20000] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from lvgp import MiniBatch


def worker(out: str, docs: int, warm: int, steps: int, batch: int, inducing: int) -> None:
    import torch
    import torch.distributed as dist

    from lvgp import LDKSpec, SparseGPLVSMRegressor
    from lvgp.datasets import make_synonym_regression

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    corpus = make_synonym_regression(n=docs, noise=0.1, random_state=0)
    texts, y = list(corpus.texts), corpus.y
    seconds = []
    for budget in (warm, warm, warm + steps):  # the first fit warms the caches up and is not counted
        reg = SparseGPLVSMRegressor(
            LDKSpec(latent_dim=2),
            num_inducing=inducing,
            optimizer=MiniBatch(batch_size=batch, max_steps=budget),
            random_state=0,
        )
        dist.barrier()
        start = time.perf_counter()
        reg.fit(texts, y)
        seconds.append(time.perf_counter() - start)
    numbers = sum(p.numel() for p in [*reg.model_.parameters(), *reg.likelihood_.parameters()] if p.requires_grad)
    if dist.get_rank() == 0:
        Path(out).write_text(json.dumps({"step": (seconds[2] - seconds[1]) / steps, "numbers": numbers}))
    dist.barrier()
    dist.destroy_process_group()


def launch(processes: int, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        # --standalone: torchrun's store listens on a port it chooses itself (no free port chosen here to race for)
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes)]
        command += ["--log-dir", str(Path(tmp) / "logs")]
        command += [__file__, "--worker", str(out)]  # (torchrun's logs: by default a folder it leaves in /tmp)
        command += ["--docs", str(args.docs), "--warm", str(args.warm), "--steps", str(args.steps)]
        command += ["--batch", str(args.batch), "--inducing", str(args.inducing)]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        subprocess.run(command, check=True, capture_output=True, text=True, env=env)
        return json.loads(out.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 processes alone, 600 documents, 4 steps")
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--inducing", type=int, default=64)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.docs, args.warm, args.steps, args.batch, args.inducing)
        return 0
    if args.quick:
        # a smoke run of the distributed path (the suite's): two processes alone, the speed-up against itself
        args.docs, args.warm, args.steps, args.processes = 600, 2, 4, "2"
    rows = [(p, launch(p, args)) for p in (int(p) for p in args.processes.split(","))]
    base = rows[0][1]["step"]
    print(
        f"sparse GP-LVSM under torchrun (gloo), {args.docs} documents, global batch {args.batch}, "
        f"{args.inducing} inducing documents, {os.cpu_count()} cores"
    )
    print("| processes | s a step | speed-up | numbers all-reduced a step |")
    print("|---|---|---|---|")
    for processes, row in rows:
        print(f"| {processes} | {row['step']:.3f} | {base / row['step']:.2f}x | {row['numbers']:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
