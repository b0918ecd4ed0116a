"""The cluster parts of the GP classifiers that read unlabelled texts (issue 57; the active study's ``gp-pool-*`` and
the open-set study's ``gpc-pool-bow-encoder-rbf``): their settings (:func:`cluster_part_settings`) and the cluster
kernel of texts' encoder vectors (:func:`cluster_kernel_of_texts`); the words' part beside it is
:func:`lvgp.experiments.joined_cloud.words_cluster_kernel_of_texts`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: the cluster part of the GP classifiers that read unlabelled texts (``ClusterKernel``; the active study's
#: ``gp-pool-*`` and the open-set study's ``gpc-pool-bow-encoder-rbf``): eigenvectors kept a class, the
#: transfer power and the neighbours of the texts' graph; chosen on 20ng's training part alone
#: (``benchmarks/point_cloud_dev.py``)
POOL_COMPONENTS_PER_CLASS = 2
POOL_POWER = 6.0
POOL_NEIGHBOURS = 10


def cluster_part_settings(n_cloud: int, n_classes: int) -> dict[str, Any]:
    """The :class:`~lvgp.kernels.ClusterKernel` arguments of a cloud of ``n_cloud`` texts and ``n_classes`` classes:
    :data:`POOL_COMPONENTS_PER_CLASS` eigenvectors a class, :data:`POOL_NEIGHBOURS` neighbours (each at most
    ``n_cloud - 1``) and the transfer power :data:`POOL_POWER` (every cluster part of the studies')."""
    return {
        "n_components": min(POOL_COMPONENTS_PER_CLASS * n_classes, n_cloud - 1),
        "n_neighbors": min(POOL_NEIGHBOURS, n_cloud - 1),
        "power": POOL_POWER,
    }


def cluster_kernel_of_texts(encoder: str, device: str, texts: Sequence[str], n_classes: int) -> Any:
    """:class:`~lvgp.kernels.ClusterKernel` of the encoder's unit vectors of ``texts`` (the point cloud: the
    unlabelled texts, with the labelled ones), :data:`POOL_COMPONENTS_PER_CLASS` eigenvectors for each of
    ``n_classes`` classes, :data:`POOL_NEIGHBOURS` neighbours and the transfer power :data:`POOL_POWER`."""
    import torch

    from ..encoders import resolve_encoder
    from ..kernels import ClusterKernel

    vectors = torch.as_tensor(np.asarray(resolve_encoder(encoder, device).encode(list(texts))), dtype=torch.float64)
    return ClusterKernel(
        torch.nn.functional.normalize(vectors, dim=-1), **cluster_part_settings(len(vectors), n_classes)
    )
