"""Type aliases shared by lvgp's modules."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import torch
from numpy.typing import ArrayLike

#: anything ``torch.as_tensor`` / ``np.asarray`` accept: tensors, arrays, nested sequences
TensorLike: TypeAlias = torch.Tensor | np.ndarray | ArrayLike
#: texts (strings or token lists), a scipy.sparse / numpy count matrix, or a padded torch.long tensor
Documents: TypeAlias = Any

#: an estimator's ``word_embeddings``: a name, a ``WordEmbeddings`` table, ``"corpus"``, a tuple of these, or None
EmbeddingsSpec: TypeAlias = Any

__all__ = ["TensorLike", "Documents", "EmbeddingsSpec"]
