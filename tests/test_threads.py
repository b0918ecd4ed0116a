"""The studies' default thread count never oversubscribes the cores (issue 41): threads x processes
stay within the cores free when the study starts (the usable cores minus the load average)."""

from __future__ import annotations

import os

import pytest

from lvgp.experiments import executors


@pytest.fixture
def machine(monkeypatch):
    """``set(cores, load)``: a machine of ``cores`` usable cores under a one-minute load of ``load``."""

    def set_(cores: int, load: float) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
        monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
        monkeypatch.setattr(executors, "_cgroup_cores", lambda: None)

    return set_


@pytest.mark.parametrize(
    "cores,load,jobs,threads",
    [
        (2, 0.0, 1, 2),
        (2, 1.0, 1, 1),
        (2, 2.7, 1, 1),
        (16, 3.2, 1, 13),
        (16, 0.0, 4, 4),
        (16, 6.0, 4, 2),
        (2, 0.0, 4, 1),
    ],
)
def test_default_threads_share_the_free_cores(machine, cores, load, jobs, threads):
    machine(cores, load)
    assert executors.default_threads(jobs) == threads
    assert executors.free_cores() >= 1


def test_the_in_process_executor_uses_the_free_cores_and_restores(machine):
    import torch

    machine(2, 1.0)
    before = torch.get_num_threads()
    seen = list(executors.InProcessExecutor().run(lambda context, cell: torch.get_num_threads(), None, [{}]))
    assert seen[0][1] == 1 and torch.get_num_threads() == before


def test_a_cgroup_quota_caps_the_cores(machine, monkeypatch):
    machine(16, 0.0)
    monkeypatch.setattr(executors, "_cgroup_cores", lambda: 3)
    assert executors.usable_cores() == 3 and executors.default_threads() == 3


def test_process_workers_wait_passively_and_the_environment_is_given_back(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    seen = list(executors.ProcessExecutor(1, threads=1).run(_worker_policy, None, [{}]))
    assert seen[0][1] == "PASSIVE" and "OMP_WAIT_POLICY" not in os.environ


def _worker_policy(context, cell):
    return os.environ.get("OMP_WAIT_POLICY")
