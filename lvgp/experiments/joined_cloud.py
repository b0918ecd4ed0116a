"""The active study's ``--pool-words lsa`` part (issue 57): a cluster kernel whose cloud joins each text's encoder
vector to its words' coordinates, read from the encoder vectors its learner's kernel sees."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..kernels import ClusterKernel
from ..kernels.point_cloud import nearest_cloud_points, row_digests

#: an input is a known text's encoder vector where it is within this Euclidean distance of it
_SAME_VECTOR = 1e-6


class JoinedCloudClusterKernel(ClusterKernel):
    r"""A :class:`~lvgp.kernels.ClusterKernel` whose cloud, graph and neighbours live in a joined space -- a text's
    encoder unit vector beside its words' coordinates -- while its inputs are the encoder unit vectors of texts known
    when it was made (a composed GP's encoder columns). An input is read as the joined vector of the known text whose
    encoder vector it is (within 1e-6); any other input is a ``ValueError`` naming its rows.

    Args:
        cloud: ``n_P x D``, the joined vectors of the cloud's texts.
        inputs: ``m x d``, the encoder unit vectors of every text the kernel will read (the cloud's among them).
        joined_inputs: ``m x D``, their joined vectors, row by row.
        **kwargs: :class:`~lvgp.kernels.ClusterKernel`'s (``n_components``, ``n_neighbors``, ``power``).

    Shapes: ``x1``: ``*B x n1 x d``, ``x2``: ``*B x n2 x d`` -> ``*B x n1 x n2``.
    """

    _known_rows: dict[bytes, int]

    def __init__(self, cloud: Tensor, *, inputs: Tensor, joined_inputs: Tensor, **kwargs: Any) -> None:
        if (
            inputs.ndim != 2
            or joined_inputs.ndim != 2
            or len(joined_inputs) != len(inputs)
            or joined_inputs.shape[-1] != cloud.shape[-1]
        ):
            raise ValueError(
                f"inputs ({tuple(inputs.shape)}) and joined_inputs ({tuple(joined_inputs.shape)}) must be m x d and "
                f"m x {cloud.shape[-1]} (the cloud's width)"
            )
        super().__init__(cloud, **kwargs)
        self.register_buffer("inputs", inputs.detach().clone().to(cloud.dtype))
        self.register_buffer("joined_inputs", joined_inputs.detach().clone().to(cloud.dtype))

    def joined(self, x: Tensor) -> Tensor:
        """The joined vectors of inputs ``x``: ``*B x n x d`` -> ``*B x n x D``. Each input's known text is
        remembered by a digest of its values (an active learner reads the same pool texts and test documents round
        after round), forgotten with the cloud's neighbours."""
        flat = x.reshape(-1, x.shape[-1]).to(self.inputs.dtype)
        keys = row_digests(flat)
        missing = [i for i, key in enumerate(keys) if key not in self._known_rows]
        if missing:
            queries = flat[missing]
            known = nearest_cloud_points(queries, self.inputs, 1, exclude_exact=False)[:, 0]
            far = ((queries - self.inputs[known]).norm(dim=-1) > _SAME_VECTOR).nonzero().flatten()
            if len(far):
                bad = [missing[i] for i in far.tolist()]
                raise ValueError(
                    f"rows {bad[:10]} of the inputs ({len(bad)} of {len(flat)}) are not the encoder vectors of a "
                    "text this kernel was made with"
                )
            for i, row in zip(missing, known.tolist()):
                self._known_rows[keys[i]] = row
        rows = torch.as_tensor([self._known_rows[key] for key in keys], dtype=torch.long, device=self.inputs.device)
        return self.joined_inputs[rows].reshape(*x.shape[:-1], self.joined_inputs.shape[-1])

    def nearest(self, x: Tensor) -> Tensor:
        """The indices of each input's :attr:`n_neighbors` cloud points, found in the joined space:
        ``*B x n x d`` -> ``*B x n x n_neighbors`` (:meth:`~lvgp.kernels.ClusterKernel.nearest` of :meth:`joined`)."""
        return super().nearest(self.joined(x))

    def _forget_neighbours(self) -> None:
        super()._forget_neighbours()
        self._known_rows = {}
