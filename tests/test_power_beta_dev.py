"""``benchmarks/power_beta_dev.py``'s ``--strategies`` entries: a strategy and its own settings, each a study of
its own on dev draws (the script's quick run is ``tests/test_examples.py``'s)."""

from __future__ import annotations

import pytest

from tests._benchmarks import benchmark_module

power_beta_dev = benchmark_module("power_beta_dev.py", "power_beta_dev_under_test")


def test_a_strategy_entry_names_its_settings():
    entry = power_beta_dev.strategy_entry
    assert entry("gp-pool-greedy-epig") == ("gp-pool-greedy-epig", {})
    assert entry("gp-pool-greedy-epig:beta=4") == ("gp-pool-greedy-epig", {"beta": "4"})
    assert entry("gp-pool-greedy-epig:encoder=rbf") == ("gp-pool-greedy-epig", {"encoder": "rbf"})
    assert entry("gp-pool-greedy-epig:weight=loo") == ("gp-pool-greedy-epig", {"weight": "loo"})
    assert entry("gp-pool-greedy-epig:words=lsa") == ("gp-pool-greedy-epig", {"words": "lsa"})
    both = entry("gp-pool-greedy-epig:beta=2:encoder=rbf")
    assert both == ("gp-pool-greedy-epig", {"beta": "2", "encoder": "rbf"})
    for bad in (
        "x:beta=",
        "x:beta=two",
        "x:encoder=matern",
        "x:weight=evidenc",
        "x:words=glove",
        "x:depth=2",
        "x:beta",
    ):
        with pytest.raises(SystemExit, match="--strategies"):
            entry(bad)
