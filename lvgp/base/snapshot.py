"""Copies of tensors by value, to tell later whether a result computed from them still holds.

A fitted model keeps what prediction computes once (a factorization of its kernel matrix, a posterior's
blocks) while the tensors it was computed from are unchanged. Optimizers and ``load_state_dict``
change parameters in place, so identity and version counters do not tell: the values do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

__all__ = ["KeptResult", "TensorSnapshot", "gp_state"]


class TensorSnapshot:
    """Detached copies of ``tensors``; :meth:`matches` says whether a sequence of tensors holds the same
    shapes, dtypes, devices and values, in the same order."""

    def __init__(self, tensors: Iterable[torch.Tensor]) -> None:
        self._copies = [t.detach().clone() for t in tensors]

    def matches(self, tensors: Iterable[torch.Tensor]) -> bool:
        now = list(tensors)
        return len(now) == len(self._copies) and all(
            a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and torch.equal(a, b.detach())
            for a, b in zip(self._copies, now)
        )


def gp_state(model: nn.Module, likelihood: nn.Module) -> list[torch.Tensor]:
    """What a GP's posterior is a function of, detached: the parameters and buffers of ``model`` and
    ``likelihood`` and the model's training data (``train_inputs``/``train_targets``, where it has them)."""
    data = [*(getattr(model, "train_inputs", None) or ()), getattr(model, "train_targets", None)]
    tensors = (*model.parameters(), *model.buffers(), *likelihood.parameters(), *likelihood.buffers(), *data)
    return [t.detach() for t in tensors if isinstance(t, torch.Tensor)]


class KeptResult:
    """One result kept beside the objects and tensors it was computed from, returned while they are
    unchanged: ``owners`` compared by identity (a new fit builds new ones), ``key`` by ``==`` and
    ``state``, a sequence of tensors, by value (:class:`TensorSnapshot`). A fitted estimator makes one at
    fit and at load, so that predicting changes what it holds, not the estimator's ``__dict__``
    (scikit-learn's convention). Pickled and copied empty: a copy computes its own."""

    def __init__(self) -> None:
        self._entry: tuple[tuple[Any, ...], Any, TensorSnapshot, Any] | None = None

    def get(self, state: Iterable[torch.Tensor], owners: tuple[Any, ...] = (), key: Any = None) -> Any:
        """The kept result if it was computed from the same ``owners``, ``key`` and ``state``; else ``None``."""
        if self._entry is None:
            return None
        kept_owners, kept_key, snapshot, value = self._entry
        same = len(kept_owners) == len(owners) and all(a is b for a, b in zip(kept_owners, owners))
        return value if same and kept_key == key and snapshot.matches(state) else None

    def put(self, value: Any, state: Iterable[torch.Tensor], owners: tuple[Any, ...] = (), key: Any = None) -> Any:
        """Keep ``value`` (``None``: keep nothing), computed from ``owners``, ``key`` and ``state``; returns it."""
        self._entry = None if value is None else (tuple(owners), key, TensorSnapshot(state), value)
        return value

    def slots(self, count: int, state: Iterable[torch.Tensor], owners: tuple[Any, ...] = (), key: Any = None) -> list:
        """A list of at least ``count`` entries, each ``None`` until a caller puts what it computed there (the
        k-th of a prediction's draws, say): the kept list while ``owners``, ``key`` and ``state`` are those it was
        made from (extended with ``None`` to ``count``), else a new one, kept."""
        kept = self.get(state, owners=owners, key=key)
        if kept is None:
            return self.put([None] * count, state, owners=owners, key=key)
        kept.extend([None] * (count - len(kept)))
        return kept

    def clear(self) -> None:
        """Keep nothing."""
        self._entry = None

    @property
    def value(self) -> Any:
        """The kept result, whatever it was computed from (``None``: nothing kept)."""
        return None if self._entry is None else self._entry[3]

    def __getstate__(self) -> dict:
        return {"_entry": None}
