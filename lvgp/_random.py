"""Reproducible randomness without side effects on the caller's random streams."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator

import numpy as np
import torch

#: The seed of randomized *numerical* methods whose result stands in for a deterministic quantity of
#: the data -- a randomized truncated SVD for an exact one, liblinear's coordinate order on a convex
#: problem with one optimum, a subsample for a median heuristic, fixed Monte Carlo draws that serve
#: as quadrature nodes (the same for every document and call). Fixed on purpose, not the
#: estimator's ``random_state``: such a result is a function of the data alone, as the exact method's
#: would be. Randomness that is part of a model or a protocol (initializations, Monte Carlo
#: objectives and predictions, data splits) comes from ``random_state``, through
#: :func:`derive_seed`, :func:`derive_seeds` and :func:`child_seed`.
NUMERICS_SEED = 0


def child_seed(seed: int, name: str) -> int:
    """The 31-bit seed of the stream called ``name`` of a fit whose seed is ``seed`` (one of
    :func:`derive_seeds`' seeds): ``numpy.random.SeedSequence(seed, spawn_key=(crc32(name),))``, a
    child as ``SeedSequence.spawn`` makes them, addressed by its name instead of its position, so
    that adding a stream never shifts another's (no ``seed + 1``)."""
    key = zlib.crc32(name.encode("utf-8"))
    return int(np.random.SeedSequence(int(seed), spawn_key=(key,)).generate_state(1)[0] >> 1)


def sklearn_random_state(random_state: int | np.random.Generator | None) -> int | None:
    """``random_state`` for scikit-learn's splitters (which take an int or ``None``, not a numpy
    ``Generator``): an int as it is, ``None`` as it is (fresh entropy, scikit-learn's convention),
    a ``Generator`` through :func:`derive_seed`."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return None if random_state is None else int(random_state)
    return derive_seed(random_state)


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
