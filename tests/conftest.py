"""Shared test configuration: one torch thread per test process (``make test`` runs two workers, one
per core; torch's OpenMP threads would otherwise spin against each other), and hypothesis profiles
(``HYPOTHESIS_PROFILE=dev`` for a deeper run)."""

from __future__ import annotations

import os

# before torch is imported anywhere: subprocesses (the examples, the CLI, notebooks) inherit it
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# kernels and estimators are slow next to what hypothesis expects: no deadline, few examples in CI
settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
