"""Scale-out on this machine: (1) a 40-cell study in-process vs on a local Ray instance with
2 workers, (2) one epoch of the sparse GP-LVSM in 1 process vs 2 processes under
torch.distributed (gloo, loopback). Both measured in the same run; ratios printed.

This machine has 2 cores, so 2 workers can at best halve the wall time, and the distributed
epoch pays an all-reduce of every gradient per step on top of splitting the batch: the
ratios show the overhead of each engine, not what a cluster of many machines would give
(there, the cell count or the number of documents per process is what scales).

    python benchmarks/scale_out.py [--quick]

``--quick`` (the test suite's run) leaves the Ray half out: starting a local Ray instance and its two
workers took 35 of its 40 s there, and tests/test_ray.py starts one to run a study through
``RayExecutor("local")`` and compare it with the in-process records.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from lvgp import MiniBatch


def study_timings() -> tuple[float, float, int]:
    from lvgp.datasets import make_synonym_regression
    from lvgp.experiments.executors import InProcessExecutor
    from lvgp.experiments.ray_executor import RayExecutor
    from lvgp.experiments.regression import RegressionStudy

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        corpus = make_synonym_regression(n=400, noise=0.1, random_state=0)
        path = tmp / "data.tsv"
        path.write_text("text\ttarget\n" + "".join(f"{t}\t{y:.6f}\n" for t, y in zip(corpus.texts, corpus.y)))
        study = RegressionStudy(
            dataset=str(path),
            splits=4,
            train_size=150,
            dev_size=100,
            latent_dims=(1, 2, 4),
            rhos=(0.1, 1.0, 10.0),
            max_iter=20,
            min_df=1,
            methods=("gplvsm", "ridge"),
        )
        n_cells = len(study.cells())
        start = time.perf_counter()
        study.run(tmp / "inprocess", InProcessExecutor(), progress=False)
        local = time.perf_counter() - start
        start = time.perf_counter()
        study.run(tmp / "ray", RayExecutor("local", num_cpus=2), progress=False)
        ray_seconds = time.perf_counter() - start
    return local, ray_seconds, n_cells


def epoch_timings(quick: bool) -> tuple[float, float, int]:
    from lvgp import LDKSpec, SparseGPLVSMRegressor
    from lvgp.datasets import make_synonym_regression

    n = 1000 if quick else 20000
    corpus = make_synonym_regression(n=n, noise=0.1, random_state=0)
    optimizer = MiniBatch(batch_size=256, max_epochs=1)
    kwargs = dict(kernel=LDKSpec(latent_dim=2), num_inducing=64, optimizer=optimizer, random_state=0)
    single = SparseGPLVSMRegressor(**kwargs).fit(corpus.texts, corpus.y)
    double = SparseGPLVSMRegressor(**kwargs, distributed=True, world_size=2).fit(corpus.texts, corpus.y)
    assert np.allclose(single.step_losses_, double.step_losses_, rtol=1e-8)
    return single.fit_seconds_, double.fit_seconds_, n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.quick:
        print("study in-process against Ray: left out of --quick (tests/test_ray.py runs a study on local Ray)")
    else:
        local, ray_seconds, cells = study_timings()
        print(
            f"study of {cells} cells: in-process {local:.1f} s, Ray with 2 local workers {ray_seconds:.1f} s "
            f"(ratio in-process / Ray {local / ray_seconds:.2f}; Ray includes starting the instance)"
        )
    one, two, n = epoch_timings(args.quick)
    print(
        f"sparse GP-LVSM epoch, n={n}: 1 process {one:.1f} s, 2 processes {two:.1f} s "
        f"(ratio {one / two:.2f}; 2 processes include spawning them), identical step losses"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
