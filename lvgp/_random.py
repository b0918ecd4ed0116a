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
#: objectives and predictions, data splits) comes from ``random_state``, through :class:`Streams`.
NUMERICS_SEED = 0


class Streams:
    """The named random streams of one fit (or one study cell), made once from a ``random_state``.

    ``Streams(random_state)`` reads ``random_state`` once (an int or ``None`` as it is, a numpy
    ``Generator`` advanced by one draw: a Generator given to an estimator is consumed at ``fit`` only)
    and hands out, by name, 31-bit seeds (:meth:`seed`), torch generators (:meth:`torch`) and numpy
    generators (:meth:`numpy`). A stream's name addresses it: adding a stream never shifts another's.

    ``root`` is :func:`derive_seed`'s seed, the fit's main stream as it always was. A new name is
    :func:`child_seed` of the root. ``positions``: names of streams that an estimator drew by position
    before there were names (``derive_seeds(random_state, k)[i]``), which keep their values so that
    saved files and committed tables do not move; the first position is the root (``None`` for a
    position no stream takes).
    """

    def __init__(self, random_state: int | np.random.Generator | None, positions: tuple[str | None, ...] = ()) -> None:
        seeds = derive_seeds(random_state, max(1, len(positions)))
        self.root = seeds[0]
        self._positions = _named_positions(positions, seeds)

    @classmethod
    def of_seed(cls, seed: int, positions: tuple[str | None, ...] = ()) -> Streams:
        """Streams whose root is ``seed`` itself (a seed drawn before: a fit's root handed to its
        steps, one saved with a model); ``positions`` name seeds among ``derive_seeds(seed, k)``
        (``None`` for a position no stream takes)."""
        streams = cls.__new__(cls)
        streams.root = int(seed)
        streams._positions = _named_positions(positions, derive_seeds(int(seed), len(positions)) if positions else [])
        return streams

    def seed(self, name: str) -> int:
        """The 31-bit seed of the stream ``name``."""
        if name in self._positions:
            return self._positions[name]
        return child_seed(self.root, name)

    def torch(self, name: str, device: str | torch.device | None = None) -> torch.Generator:
        """A torch generator (on ``device``; default the CPU) seeded by the stream ``name``."""
        return torch_generator(self.seed(name), device)

    def numpy(self, name: str) -> np.random.Generator:
        """A numpy generator seeded by the stream ``name``."""
        return np.random.default_rng(self.seed(name))


def _named_positions(positions: tuple[str | None, ...], seeds: list[int]) -> dict[str, int]:
    """The seeds of the named ``positions`` (``None``: a position no stream takes)."""
    return {name: s for name, s in zip(positions, seeds) if name is not None}


def torch_generator(seed: int, device: str | torch.device | None = None) -> torch.Generator:
    """A torch generator on ``device`` (default the CPU) seeded by ``seed`` (a seed of
    :class:`Streams` or :data:`NUMERICS_SEED`)."""
    generator = torch.Generator() if device is None else torch.Generator(device=device)
    return generator.manual_seed(int(seed))


def restored_torch_generator(device: str, state: torch.Tensor) -> torch.Generator:
    """A torch generator on ``device`` at ``state`` (another's ``get_state()``): one that pickling kept as
    its state, restored."""
    generator = torch.Generator(device=device)
    generator.set_state(state)
    return generator


def _default_rng(random_state: object) -> np.random.Generator:
    """``numpy.random.default_rng(random_state)``, a legacy ``RandomState`` (scikit-learn's convention for
    ``random_state``) included on every numpy the package admits: numpy 2.2 and later wrap its bit
    generator in a ``Generator``; earlier ones refuse it, so the same wrapping is done here (the same
    draws on either)."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.Generator(random_state._bit_generator)
    return np.random.default_rng(random_state)  # type: ignore[arg-type]


def numpy_generator(
    seed: int | list[int] | np.random.SeedSequence | np.random.Generator | None,
) -> np.random.Generator:
    """``numpy.random.default_rng(seed)``: a numpy generator of a seed (or of a list of integers, as
    numpy's ``SeedSequence`` takes them) drawn from :class:`Streams` or given by a user; a user's
    ``Generator`` is returned as it is (``default_rng``'s own rule), so a ``random_state`` of either
    kind needs no branch."""
    return _default_rng(seed)


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
    return int(_default_rng(random_state).integers(2**31 - 1))


def derive_seeds(random_state: int | np.random.Generator | None, count: int) -> list[int]:
    """``count`` 31-bit seeds from one ``random_state`` (for independent streams of one fit: an
    initialization, Monte Carlo predictions, restarts); the first is :func:`derive_seed`'s."""
    return [int(s) for s in _default_rng(random_state).integers(2**31 - 1, size=count)]


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


#: The streams of the studies that the committed tables were drawn from, by name: the salt that
#: ends their numpy seed ``[study seed, *keys, salt]`` (``None``: none), kept so that every committed
#: table regenerates (:func:`study_generator`). A new study stream needs no entry: it is a child of the
#: study's seed by its name.
STUDY_STREAMS: dict[str, int | None] = {
    "classification pool": 2018,
    "classification sample": None,
    "classification test subsample": None,
    "matching test sets": 2016,
    "topic documents": 20070102,
    "topic folds": 20070101,
    "regression split": 20150125,
    "categorical split": 2015,
}


def study_generator(seed: int, stream: str, *keys: int) -> np.random.Generator:
    """The numpy generator of a study's stream ``stream`` for a cell ``keys`` (its split, its size,
    ...): as :data:`STUDY_STREAMS` has it, else ``SeedSequence(seed, spawn_key=(crc32(stream), *keys))``,
    a child of the study's seed addressed by the stream's name and the cell."""
    keys = tuple(int(k) for k in keys)
    if stream in STUDY_STREAMS:
        salt = STUDY_STREAMS[stream]
        return np.random.default_rng([int(seed), *keys, *([] if salt is None else [salt])])
    key = zlib.crc32(stream.encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(key, *keys)))


def cell_random_state(seed: int, split: int) -> int:
    """The ``random_state`` of a study cell's estimator: ``1000 * seed + split``, the seeds the
    committed tables' estimators were fitted with (so, distinct for fewer than 1,000 splits)."""
    return 1000 * int(seed) + int(split)
