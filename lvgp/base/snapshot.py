"""Copies of tensors by value, to tell later whether a result computed from them still holds.

A fitted model keeps what prediction computes once (a factorization of its kernel matrix, a posterior's
blocks) while the tensors it was computed from are unchanged. Optimizers and ``load_state_dict``
change parameters in place, so identity and version counters do not tell: the values do.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

__all__ = ["TensorSnapshot", "gp_state"]


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
