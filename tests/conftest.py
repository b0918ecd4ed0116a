"""Shared test configuration: hypothesis profiles (``HYPOTHESIS_PROFILE=dev`` for a deeper run)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# kernels and estimators are slow next to what hypothesis expects: no deadline, few examples in CI
settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
