r"""Data-parallel training under ``torch.distributed``: one process per device or core, started by
``torchrun`` (``--nnodes``, ``--nproc-per-node``), NCCL on GPUs and gloo on CPUs.

Every process loads the same training data and builds the same model (the same ``random_state``);
each step's global mini-batch is drawn identically everywhere, each process takes its share
``batch[rank::world_size]``, and :func:`all_reduce_step` sums the gradients weighted by the shares'
sizes: every step follows the gradient of the single-process objective on the global batch (the
likelihood averaged over the batch; the KL terms, replicated in every process with weights summing
to one, counted once), and every process ends with the same parameters.

:func:`process_group` says whether this process is in such a group; the estimators that train by
mini-batches (:class:`~lvgp.SparseGPLVSMRegressor`, :class:`~lvgp.LDKGPClassifier` with
``inference="variational"``) then train data-parallel on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["all_reduce_step", "backward_on_share", "check_same_model", "process_group"]


def process_group() -> tuple[int, int]:
    """``(rank, world_size)`` of the ``torch.distributed`` default group this process is in
    (``init_process_group`` called, e.g. under ``torchrun``), else ``(0, 1)``."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def check_same_model(random_state: object, what: str) -> None:
    """A ``ValueError`` when the processes of a group could build different models: the
    initialization must come from an integer ``random_state`` shared by all of them."""
    import numbers

    if not isinstance(random_state, numbers.Integral) or isinstance(random_state, bool):
        raise ValueError(
            f"{what}: data-parallel training in a torch.distributed group needs random_state=<int>, the same in "
            f"every process, so that all build the same model; got {random_state!r}"
        )


def all_reduce_step(params: Sequence[torch.Tensor], loss: torch.Tensor, share: float) -> torch.Tensor:
    """After ``loss.backward()`` on this process's share of a global batch (``share``: its fraction
    of the batch's documents): the gradients of ``params`` weighted by ``share`` and summed over the
    group (a missing gradient counts as zero), and the global batch's loss, the same in every process.
    One all-reduce a step: the gradients and the loss travel as one flat buffer (a collective per
    parameter tensor costs its latency each, which dominated small steps)."""
    import torch.distributed as dist

    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([*(g.reshape(-1) for g in grads), loss.detach().reshape(1).to(grads[0].dtype)]) * share
    dist.all_reduce(flat)
    offset = 0
    for p, g in zip(params, grads):
        p.grad = flat[offset : offset + g.numel()].view_as(g).clone()
        offset += g.numel()
    return flat[-1].to(loss.dtype)


def backward_on_share(
    rows: torch.Tensor,
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    params: Sequence[torch.Tensor],
    rank: int,
    world_size: int,
    device: torch.device,
) -> torch.Tensor:
    """One step's gradients for a global batch ``rows`` (document indices): ``loss_of`` of this
    process's share ``rows[rank::world_size]``, its ``backward``, and with more than one process
    :func:`all_reduce_step`. Returns the global batch's loss (detached where it was all-reduced). A
    share left empty by a batch smaller than the group contributes zero."""
    mine = rows[rank::world_size]
    if len(mine):
        loss = loss_of(mine)
        loss.backward()
    else:
        loss = torch.zeros((), dtype=torch.float64, device=device)
    return all_reduce_step(params, loss, len(mine) / len(rows)) if world_size > 1 else loss
