"""Reproducible randomness without side effects on the caller's random streams."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch


def derive_seed(random_state: int | np.random.Generator | None) -> int:
    """One 31-bit seed from an estimator's ``random_state`` (``None``: fresh entropy)."""
    return int(np.random.default_rng(random_state).integers(2**31 - 1))


@contextlib.contextmanager
def seeded_torch(seed: int) -> Iterator[None]:
    """Seed torch's global CPU generator inside a forked scope.

    pyro's samplers and gpytorch's Monte Carlo ELBOs draw from the global generator; inside
    this scope they are reproducible, and on exit the caller's stream is restored exactly as it
    was (``torch.random.fork_rng``), so fitting or predicting never shifts a user's random draws.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
