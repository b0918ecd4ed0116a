"""Inducing documents, shared by the sparse GP-LVSM regressor and the variational GP classifier:
the variational strategy over padded word-index sets (:class:`PaddedVariationalStrategy`), the choice
of ``M`` training documents as inducing points (:func:`choose_inducing_documents`: k-means++ on the
documents' normalized word counts, or uniform), and the kernel's approximation for the documents of
one step (:func:`step_approximation`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from gpytorch.variational import VariationalStrategy
from sklearn.cluster import kmeans_plusplus
from sklearn.preprocessing import normalize

from .._random import numpy_generator, torch_generator
from ..bow.padded import documents_at, pad_to_common_width, pad_to_width, padded_to_counts
from ..kernels.spec import LDKSpec

__all__ = ["PaddedVariationalStrategy", "choose_inducing_documents", "step_approximation"]


class PaddedVariationalStrategy(VariationalStrategy):
    """``VariationalStrategy`` for padded word-index inputs: the inducing documents and the
    batch are padded to a common width before gpytorch concatenates them. The width never falls
    below the widest seen before (padding changes no value), so that the padded inducing documents
    keep one shape from step to step and the kernel finds their cached document set.

    gpytorch keeps ``K_ZZ``'s Cholesky factor between calls in eval mode (``_cholesky_factor``,
    cached whatever its argument), as if the kernel could not change between them. An LDK's can
    without gpytorch seeing it: a draw of variational word vectors is a new ``K_ZZ``. So the factor is
    computed afresh at every call, in eval mode as in training (one ``M x M`` Cholesky a prediction
    block). Kept, a sparse GP-LVSM's predictions paired every draw of the vectors after the first with
    the first draw's factor (at 300,000 documents and 256 inducing documents: held-out RMSE 0.928
    against 0.727)."""

    def __call__(self, x: torch.Tensor, prior: bool = False, **kwargs: Any) -> Any:
        self._clear_cache()
        return super().__call__(x, prior=prior, **kwargs)

    def forward(
        self,
        x: torch.Tensor,
        inducing_points: torch.Tensor,
        inducing_values: torch.Tensor,
        variational_inducing_covar: Any = None,
        **kwargs: Any,
    ) -> Any:
        width = max(x.shape[-1], inducing_points.shape[-1], self.__dict__.get("_width", 0))
        self.__dict__["_width"] = width
        return super().forward(
            pad_to_width(x, width),
            pad_to_width(inducing_points, width),
            inducing_values,
            variational_inducing_covar,
            **kwargs,
        )


#: k-means++ seeds among at most this many documents (or 20 per inducing document, if more): a uniform
#: sample of larger corpora. Its cost is O(n m nnz), so seeding among all of a million documents would
#: take longer than the fit (benchmarks/large_n.py)
_KMEANS_POOL = 10_000


def step_approximation(
    spec: LDKSpec, x: torch.Tensor, inducing: torch.Tensor, batch_size: int | None, seed: int
) -> str:
    r"""``approximation="auto"`` for a sparse step: the spec's one rule (:meth:`LDKSpec.approximation_for
    <lvgp.kernels.LDKSpec.approximation_for>`, exact up to ``max_exact_words`` distinct words, then Nystrom)
    applied to the documents one step evaluates the kernel on -- the ``inducing`` documents and a batch
    of ``batch_size`` training documents ``x`` (drawn with ``seed``; ``None``: a full batch, every
    document) -- rather than to the whole corpus:
    the exact step's cost is the word Gram of *those* words. One thread, 3,000 LDA documents
    (50,000-word Zipf vocabulary), 64 inducing documents, batches of 256
    (``benchmarks/sparse_auto_rule.py``, its figures in ``benchmarks/README.md``): below a few
    thousand distinct words in a step the exact step is the faster, above them Nystrom's."""
    if spec.approximation != "auto":
        return spec.approximation
    n = x.shape[0]
    generator = torch_generator(seed)
    rows = torch.randperm(n, generator=generator)[: n if batch_size is None else min(batch_size, n)].to(x.device)
    return spec.approximation_for(torch.cat(pad_to_common_width(inducing, documents_at(x, rows))))


def choose_inducing_documents(x: torch.Tensor, num_words: int, m: int, method: str, seed: int) -> np.ndarray:
    """Indices of ``m`` inducing documents among the rows of ``x`` (``n x L`` padded):
    ``"kmeans++"`` (scikit-learn's greedy :func:`~sklearn.cluster.kmeans_plusplus` seeding on
    L2-normalized word-count vectors, so the squared distance is ``2 - 2 cos``; above
    ``max(10,000, 20 m)`` documents, among a uniform sample of that many) or ``"random"``."""
    n = x.shape[0]
    if m >= n:
        return np.arange(n)
    if method == "random":
        return np.sort(numpy_generator(seed).choice(n, m, replace=False))
    if method != "kmeans++":
        raise ValueError(f"inducing must be 'kmeans++' or 'random'; got {method!r}")
    pool_size = max(_KMEANS_POOL, 20 * m)
    pool = np.arange(n) if n <= pool_size else np.sort(numpy_generator(seed).choice(n, pool_size, replace=False))
    features = normalize(padded_to_counts(x[torch.from_numpy(pool)], num_words).astype(np.float64))
    _, chosen = kmeans_plusplus(_RowsFromCSR(features), m, random_state=seed)
    return np.sort(pool[chosen])


class _RowsFromCSR(sp.csc_matrix):
    """A CSC matrix whose row selections (``X[rows]``, a list or 1-D array) come from its CSR form:
    scikit-learn's k-means++ multiplies the candidate rows by ``X.T`` at each of its ``m - 1``
    steps, and for CSR input converts that transpose to CSR every time (most of the seeding's time);
    the transpose of a CSC matrix is CSR already, and rows are read from the CSR copy. The same
    products in the same order: the same centers to the last bit (tested against CSR input), several
    times faster (``benchmarks/README.md``)."""

    def __init__(self, arg: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(arg, *args, **kwargs)
        self._rows = arg if isinstance(arg, sp.csr_matrix) else None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (list, np.ndarray)) and np.ndim(key) == 1:
            if self._rows is None:
                self._rows = sp.csr_matrix(self)
            return self._rows[key]
        return super().__getitem__(key)
