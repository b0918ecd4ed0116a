"""Reproducible randomness without side effects on the caller's random streams."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch


def derive_seed(random_state: int | np.random.Generator | None) -> int:
    """One 31-bit seed from an estimator's ``random_state`` (``None``: fresh entropy): the one way
    every lvgp estimator turns its ``random_state`` into randomness (torch generators, numpy
    generators, pyro's scope)."""
    return int(np.random.default_rng(random_state).integers(2**31 - 1))


def derive_seeds(random_state: int | np.random.Generator | None, count: int) -> list[int]:
    """``count`` 31-bit seeds from one ``random_state`` (for independent streams of one fit: an
    initialization, Monte Carlo predictions, restarts); the first is :func:`derive_seed`'s."""
    return [int(s) for s in np.random.default_rng(random_state).integers(2**31 - 1, size=count)]


def rng_of(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """A numpy generator seeded by :func:`derive_seed` of ``random_state``."""
    return np.random.default_rng(derive_seed(random_state))


@contextlib.contextmanager
def seeded_torch(seed: int) -> Iterator[None]:
    """Seed torch's global generators (the CPU's, and the CUDA devices' where CUDA is in use)
    inside a forked scope.

    pyro's samplers and gpytorch's Monte Carlo ELBOs draw from the global generator of the
    device they sample on; inside this scope they are reproducible, and on exit the caller's
    streams are restored exactly as they were (``torch.random.fork_rng``), so fitting or
    predicting never shifts a user's random draws.
    """
    # on a machine without CUDA there is nothing to fork beside the CPU generator
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)  # seeds every CUDA device too
        yield
