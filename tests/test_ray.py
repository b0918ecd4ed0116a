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
from lvgp.experiments.ray_executor import RayExecutor  # noqa: E402
from lvgp.experiments.regression import RegressionStudy  # noqa: E402
from lvgp.experiments.study import StudyDirectory, run_study  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster():
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import the tests
    os.environ.setdefault("RAY_worker_niceness", "0")  # as RayExecutor("local") does
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}}
    )
    yield
    ray.shutdown()


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
