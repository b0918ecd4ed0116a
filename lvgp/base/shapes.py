"""Shape arithmetic without torch's symbolic-shape machinery.

``torch.broadcast_shapes`` goes through ``torch._refs``, whose first call imports
``torch.fx.experimental.symbolic_shapes`` and with it sympy, a noticeable share of a matching
cell (``benchmarks/matching_speed.py``), paid by every process that evaluates a kernel. The shapes here
are plain integers, and broadcasting them is a few lines.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["broadcast_shapes"]


def broadcast_shapes(*shapes: Sequence[int]) -> torch.Size:
    """The shape that tensors of ``shapes`` broadcast to (NumPy's rules, as
    ``torch.broadcast_shapes``): dimensions aligned from the right, each equal or 1.

    Raises ``RuntimeError`` (as torch does) naming the shapes when they do not broadcast."""
    ndim = max((len(shape) for shape in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            size = int(size)
            if size == out[i] or size == 1:
                continue
            if out[i] != 1:
                raise RuntimeError(
                    f"shapes {[tuple(int(s) for s in shape) for shape in shapes]} do not broadcast: "
                    f"{out[i]} against {size} at dimension {i - ndim}"
                )
            out[i] = size
    return torch.Size(out)
