"""The active study's ``--pool-words lsa`` part and the open-set study's ``--unlabeled-words lsa`` (issue 57): a
cluster kernel whose cloud joins each text's encoder vector to its words' coordinates, read from the encoder vectors
its learner's kernel sees (:class:`JoinedCloudClusterKernel`), and the one way to make it from texts
(:func:`words_cluster_kernel_of_texts`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._random import NUMERICS_SEED
from ..encoders import SentenceEncoder
from ..encoders.sentence import check_texts
from ..kernels import ClusterKernel
from ..kernels.point_cloud import nearest_cloud_points, row_digests
from .cluster_parts import cluster_part_settings

#: an input is a known text's encoder vector where it is within this Euclidean distance of it
_SAME_VECTOR = 1e-6
#: the words' coordinates: the cloud's tf-idf reduced by a truncated SVD to this many dimensions (fewer where the cloud
#: has fewer texts or words), and their share of the joined vector's squared norm (the encoder's the rest)
WORDS_DIMENSIONS = 300
WORDS_SHARE = 0.5
#: a cloud of at most this many texts keeps words of one text (``min_df=1``); a larger one words of two texts or more
_SMALL_CLOUD = 100


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


def words_cluster_kernel_of_texts(
    encoder: str | SentenceEncoder,
    device: str,
    cloud_texts: Sequence[str],
    other_texts: Sequence[str],
    n_classes: int,
) -> JoinedCloudClusterKernel:
    r"""A :class:`JoinedCloudClusterKernel` whose cloud is ``cloud_texts`` (the unlabelled pool, the labelled texts
    among them), each text's encoder unit vector joined to its words' coordinates, :data:`WORDS_SHARE` of the
    squared norm: the sublinear tf-idf (:func:`~lvgp.baselines.encoder.default_tfidf`; words of two cloud texts or
    more, of one in a cloud of 100 texts or fewer) fitted on the cloud's texts, reduced by a truncated SVD to
    :data:`WORDS_DIMENSIONS` dimensions and normalized. No label is read. ``encoder``: a name of
    :data:`lvgp.encoders.ENCODERS` or a :class:`~lvgp.encoders.SentenceEncoder`.

    The kernel reads the encoder vectors of ``cloud_texts`` and ``other_texts`` (the texts it will be asked about: the
    test documents) and of no other text (a ``ValueError`` names the rows). Eigenvectors, neighbours and transfer power
    as :func:`~lvgp.experiments.cluster_parts.cluster_kernel_of_texts`, the encoder's cluster part it goes beside: a GP
    classifier's fourth part, with its own weight (the active study's ``gp-pool-*`` with ``--pool-words lsa``)."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.preprocessing import normalize

    from ..baselines.encoder import default_tfidf
    from ..encoders import resolve_encoder

    cloud_texts, other_texts = check_texts(cloud_texts, "cloud_texts"), check_texts(other_texts, "other_texts")
    if len(cloud_texts) < 2:
        raise ValueError(f"cloud_texts must hold 2 texts or more, got {len(cloud_texts)}")
    texts = cloud_texts + other_texts
    vectors = normalize(np.asarray(resolve_encoder(encoder, device).encode(texts), dtype=np.float64))
    n_cloud = len(cloud_texts)
    tfidf = default_tfidf(min_df=2 if n_cloud > _SMALL_CLOUD else 1).fit(cloud_texts)
    counts = tfidf.transform(texts)
    dimensions = min(WORDS_DIMENSIONS, counts.shape[1] - 1, n_cloud - 1)
    words = normalize(TruncatedSVD(dimensions, random_state=NUMERICS_SEED).fit(counts[:n_cloud]).transform(counts))
    joined = np.hstack([np.sqrt(1 - WORDS_SHARE) * vectors, np.sqrt(WORDS_SHARE) * words])
    return JoinedCloudClusterKernel(
        torch.as_tensor(joined[:n_cloud]),
        inputs=torch.as_tensor(vectors),
        joined_inputs=torch.as_tensor(joined),
        **cluster_part_settings(n_cloud, n_classes),
    )
