"""Studies on a real local Ray cluster (two workers): the same records as in-process, a
worker killed mid-study leaves the others to complete and resubmission finishes the study,
and a clear error without Ray."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'lvgp[ray]')")

from lvgp.experiments.executors import InProcessExecutor  # noqa: E402
from lvgp.experiments.ray_executor import RayExecutor, RayStartupError, start_local_ray  # noqa: E402
from lvgp.experiments.regression import RegressionStudy  # noqa: E402
from lvgp.experiments.study import StudyDirectory, run_study  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance of two CPUs, started as ``RayExecutor("local")`` starts one (retried
    when Ray's fixed 30 s startup wait runs out on a busy machine). If it still cannot start, the
    Ray tests are skipped, saying why: a load-induced timeout is the machine's, not lvgp's (issue 59:
    two fixture errors on a fresh clone at load 3-6)."""
    import tempfile

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import the tests
    # Ray's session folder in a short-named temporary folder of its own (Unix socket paths are limited to
    # about 107 bytes), removed at the end: not /tmp/ray left behind by the suite
    with (
        tempfile.TemporaryDirectory(prefix="lvgp-ray-", ignore_cleanup_errors=True) as folder,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("RAY_TMPDIR", folder)
        try:
            try:
                start_local_ray(2, {"env_vars": {"OMP_NUM_THREADS": "1"}})
            except RayStartupError as err:
                pytest.skip(f"Ray did not start on this busy machine: {err}")
            yield
        finally:
            ray.shutdown()  # before the folder goes


@pytest.fixture
def tsv(tmp_path):
    import numpy as np

    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=120, noise=0.1, random_state=0)
    path = tmp_path / "data.tsv"
    path.write_text("text\ttarget\n" + "".join(f"{t}\t{y}\n" for t, y in zip(corpus.texts, np.round(corpus.y, 6))))
    return path


def test_ray_study_matches_in_process(ray_cluster, tsv, tmp_path):
    study = RegressionStudy(
        dataset=str(tsv),
        splits=2,
        train_size=50,
        dev_size=30,
        latent_dims=(1, 2),
        rhos=(1.0,),
        max_iter=8,
        min_df=1,
        methods=("gplvsm", "ridge"),
    )
    a = study.run(tmp_path / "local", InProcessExecutor(), progress=False)["records"]
    b = study.run(tmp_path / "ray", RayExecutor("local"), progress=False)["records"]
    key = lambda r: (r["method"], r["split"])  # noqa: E731
    assert [(key(r), r["rmse"], r["hyperparameters"]) for r in sorted(a, key=key)] == [
        (key(r), r["rmse"], r["hyperparameters"]) for r in sorted(b, key=key)
    ]


def _dies_once(marker_dir: str, cell: dict):
    """A cell function whose worker process dies (os._exit) the first time it runs cell 2."""
    marker = Path(marker_dir) / "died"
    if cell["split"] == 2 and not marker.exists():
        marker.write_text("x")
        os._exit(1)
    return {"value": cell["split"] * 10}


def test_a_killed_worker_fails_its_cell_only_and_resubmission_completes(ray_cluster, tmp_path):
    cells = [{"method": "m", "split": s, "params": {}} for s in range(5)]
    directory = StudyDirectory(tmp_path / "study")
    done, failures = run_study(_dies_once, str(tmp_path), cells, directory, RayExecutor("local"), progress=False)
    assert sorted(r["split"] for r in done) == [0, 1, 3, 4]
    assert len(failures) == 1 and failures[0][0]["split"] == 2
    assert directory.error_path(cells[2]).exists()
    done, failures = run_study(_dies_once, str(tmp_path), cells, directory, RayExecutor("local"), progress=False)
    assert not failures and sorted(r["value"] for r in done) == [0, 10, 20, 30, 40]


def test_missing_ray_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"lvgp\[ray\]"):
        RayExecutor("local")


def test_a_startup_timeout_is_retried_then_named(monkeypatch):
    """Ray's startup timeout (a fixed 30 s, missed on a busy machine) is retried; after the last
    attempt the error says what to do. Other errors pass through at once."""
    import time

    calls = []

    def timing_out(**kwargs):
        calls.append(kwargs)
        raise Exception("The current node timed out during startup. This could happen because ...")

    monkeypatch.setattr(ray, "init", timing_out)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    with pytest.raises(RayStartupError, match="did not start in 3 attempts.*--jobs instead of --ray local"):
        start_local_ray(2, {})
    assert len(calls) == 3
    attempts = []

    def once_late(**kwargs):  # times out once, then starts
        attempts.append(kwargs)
        if len(attempts) == 1:
            raise Exception("The current node timed out during startup.")

    monkeypatch.setattr(ray, "init", once_late)
    start_local_ray(2, {})
    assert len(attempts) == 2 and attempts[1]["num_cpus"] == 2

    def broken(**kwargs):
        raise ValueError("another problem")

    monkeypatch.setattr(ray, "init", broken)
    with pytest.raises(ValueError, match="another problem"):
        start_local_ray(2, {})
