"""Where an estimator computes: the ``device=`` argument of lvgp's torch and Pyro estimators.

Every such estimator takes ``device="cpu"`` (the default), ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a
:class:`torch.device`. ``fit`` builds its model there and moves the encoded documents and targets
there once; predictions come back to the host as numpy arrays. Saved files always hold CPU tensors,
so a model fitted on a GPU loads on a machine without one, and ``load(path, device=...)`` puts it
wherever the caller says.

Training loops keep their per-step losses on the device and read them back in one transfer per
convergence window (:class:`LossBuffer`), so a GPU never waits for the host between steps; the
exception is scipy's L-BFGS, which needs the loss and gradient on the host once per evaluation.

Estimators whose arithmetic may run in single precision (the CLGP's, the matcher's) take
``dtype="float32"`` or ``"float64"``, by name (:data:`FLOAT_DTYPES`); the exact GPs are float64.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

__all__ = [
    "check_device",
    "device_problem",
    "to_host",
    "state_to_cpu",
    "LossBuffer",
    "FLOAT_DTYPES",
    "available_memory",
    "check_dense_memory",
]

#: the ``dtype=`` names an estimator takes, and their torch dtypes
FLOAT_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def device_problem(device: torch.device) -> str | None:
    """What makes ``device`` unusable here (``None`` when it is usable). PyTorch's ``"meta"`` device
    holds no data, so nothing can be fitted there: it is refused, except by lvgp's own tests of how
    a device reaches nested estimators (``LVGP_ALLOW_META_DEVICE=1``)."""
    if device.type == "meta":
        if os.environ.get("LVGP_ALLOW_META_DEVICE") == "1":
            return None
        return "a device that holds data ('meta' tensors have no values; use 'cpu' or 'cuda')"
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return "a usable device (this torch sees no CUDA device; use 'cpu')"
        if device.index is not None and device.index >= torch.cuda.device_count():
            return f"a usable device (only {torch.cuda.device_count()} CUDA devices are visible)"
    elif device.type == "mps":
        if not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            return "a usable device (MPS is not available here; use 'cpu')"
    elif device.type != "cpu":
        return "'cpu', 'cuda', 'cuda:<i>' or 'mps'"
    return None


def check_device(device: Any, name: str = "device") -> torch.device:
    """``device`` (a string or :class:`torch.device`) as a :class:`torch.device`, checked to be
    usable here: a ``TypeError``/``ValueError`` naming ``name`` otherwise (e.g. ``"cuda"`` on a
    machine without CUDA)."""
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except (RuntimeError, ValueError):
            raise ValueError(f"{name} must be a torch device such as 'cpu' or 'cuda'; got {device!r}") from None
    else:
        raise TypeError(f"{name} must be a str or torch.device; got {device!r} ({type(device).__name__})")
    problem = device_problem(dev)
    if problem is not None:
        raise ValueError(f"{name} must be {problem}; got {device!r}")
    return dev


def to_host(tensor: torch.Tensor) -> Any:
    """A detached tensor as a numpy array on the host (one transfer)."""
    return tensor.detach().cpu().numpy()


def state_to_cpu(state: Any) -> Any:
    """A state dict (or any nesting of dicts, lists and tensors) with every tensor on the CPU, so
    that a saved file loads on a machine without the device it was fitted on."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu()
    if isinstance(state, dict):
        return type(state)((k, state_to_cpu(v)) for k, v in state.items())
    if isinstance(state, (list, tuple)):
        return type(state)(state_to_cpu(v) for v in state)
    return state


class LossBuffer:
    """Per-step losses kept on the device and read back together every ``every`` steps.

    :meth:`append` takes a step's scalar loss tensor (detached here) and returns ``None``, or, at
    every ``every``-th step, the buffered losses as Python floats (one device-to-host transfer for
    the lot); :meth:`flush` returns whatever is left. A non-finite loss raises ``FloatingPointError``
    naming the step, found at the flush that reads it (``every`` steps late at most)::

        buffer = LossBuffer(every=rule.window, what="the ELBO", advice="lower lr")
        for step in range(max_steps):
            loss = ...; loss.backward(); opt.step()
            values = buffer.append(loss)
            if values and any([rule.update(v) for v in values]):  # a list: the rule sees every loss
                break
    """

    def __init__(self, every: int, what: str = "the loss", advice: str = "lower lr") -> None:
        self.every = max(1, int(every))
        self.what, self.advice = what, advice
        self._pending: list[torch.Tensor] = []
        self.steps = 0

    def append(self, loss: torch.Tensor, flush: bool = False) -> list[float] | None:
        """Buffer ``loss``; read the buffer back when it holds ``every`` losses or ``flush`` is set
        (a step where the caller's rule must decide)."""
        self._pending.append(loss.detach().reshape(()))
        return self.flush() if flush or len(self._pending) >= self.every else None

    def flush(self) -> list[float]:
        """The buffered losses as floats (one transfer), in order; ``[]`` when none are waiting."""
        if not self._pending:
            return []
        values = torch.stack(self._pending).tolist()
        first = self.steps
        self.steps += len(values)
        self._pending = []
        for offset, value in enumerate(values):
            if not math.isfinite(value):
                raise FloatingPointError(f"{self.what} became {value} at step {first + offset + 1}; {self.advice}")
        return values


def available_memory(device: torch.device) -> int | None:
    """Bytes free for new tensors on ``device``: the CUDA device's free memory, the host's
    ``MemAvailable`` (``/proc/meminfo``) for the CPU; ``None`` where it cannot be read (no guard then)."""
    try:
        if device.type == "cuda":
            return int(torch.cuda.mem_get_info(device)[0])
        if device.type == "cpu":
            with open("/proc/meminfo") as info:
                for line in info:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
    except (OSError, RuntimeError, ValueError):
        return None
    return None


def check_dense_memory(n: int, copies: int, device: torch.device, what: str, advice: str) -> None:
    """A ``MemoryError`` naming the sizes, before any allocation, when ``copies`` dense float64
    ``n x n`` matrices (e.g. one covariance and its Cholesky factor a class, and their gradients) do
    not fit in :func:`available_memory` of ``device``: a clear error in place of the system's
    out-of-memory kill, which ends a study's whole process without a record."""
    need = copies * n * n * 8
    free = available_memory(device)
    if free is not None and need > free:
        raise MemoryError(
            f"{what}: {copies} dense {n:,} x {n:,} float64 matrices need about {need / 2**30:,.0f} GiB; "
            f"{free / 2**30:,.1f} GiB are free on {device}. {advice}"
        )
