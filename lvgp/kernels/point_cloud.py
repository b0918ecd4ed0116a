r"""A kernel deformed by a cloud of unlabelled points (semi-supervised learning through the kernel).

Sindhwani, Niyogi & Belkin (ICML 2005, "Beyond the point cloud: from transductive to
semi-supervised learning"), Eq. (5)-(6): given a base kernel :math:`k`, a cloud of :math:`n_P`
points :math:`P` (unlabelled and labelled inputs) and a positive semi-definite :math:`M`
(:math:`n_P \times n_P`) that measures a function's roughness on the cloud, the RKHS whose norm is
:math:`\|f\|_k^2 + f_P^\top M f_P` has the kernel

.. math::

    \tilde k(x, z) = k(x, z) - k_{xP}\,(I + M K_{PP})^{-1} M\,k_{Pz},

defined at every input (new ones included), not only on the cloud. With :math:`M = \gamma L^p`,
:math:`L` the Laplacian of the cloud's nearest-neighbour graph, functions that vary along the
graph's edges are penalised: the deformed kernel makes points of one cluster (a manifold the cloud
samples) more alike than the base kernel does, which is the cluster assumption of semi-supervised
learning put in a GP's prior (Sindhwani, Chu & Keerthi, IJCAI 2007, "Semi-supervised Gaussian
process classifiers"). :math:`\gamma = 0` is the base kernel.

Computed here in the symmetric form :math:`S = \gamma B (I + \gamma B K_{PP} B)^{-1} B` with
:math:`B = L^{p/2}` (equal to :math:`(I + M K_{PP})^{-1} M`; one Cholesky factor of a matrix whose
eigenvalues are at least 1), once for the cloud and the base kernel's parameters (which are held
fixed: their gradients are switched off). A call costs the base kernel between its inputs and the
cloud, and two products with :math:`S` (:math:`n \times n_P \times n_P`); the deformation term of
the last inputs is kept and reused while the inputs, compared by value, are the same (an exact GP's
fit calls the kernel on its training inputs at every optimizer step).

**Inputs off the cloud.** The roughness is measured on the cloud alone, so the deformation lowers a
cloud point's prior variance far more than a new input's (by an order of magnitude for sentence-encoder
vectors of 20ng and an RBF kernel on the unit vectors: ``benchmarks/README.md``, "Unlabelled texts in
the kernel"). A GP classifier trained on pool texts and asked about held-out texts then learns an
output scale for the former, inflates the latter's variance, and its probabilities lose what its
means know. Use :class:`PointCloudKernel` where the inputs you predict at are in the cloud
(transductive use), and :class:`ClusterKernel` where they are not: it reads every input, on the
cloud or off it, through its nearest cloud points alike.

:class:`ClusterKernel` -- the cluster kernel of Chapelle, Weston & Schölkopf (NIPS 2003, "Cluster
kernels for semi-supervised learning"), with the polynomial transfer function: the leading
eigenvectors :math:`v_j` (eigenvalues :math:`\lambda_j`) of the cloud graph's normalized affinity
:math:`D^{-1/2} W D^{-1/2}`, extended to any input :math:`x` by the Nyström formula (Bengio et al.,
NIPS 2004, "Out-of-sample extensions for LLE, Isomap, MDS, Eigenmaps, and Spectral Clustering"),
:math:`\phi_j(x) = \lambda_j^{-1} \sum_i a_i(x) v_{ij} / \sqrt{d_x d_i}` with :math:`a(x)` the
indicator of :math:`x`'s nearest cloud points, weighted by :math:`\lambda_j^{t/2}` and normalized:
:math:`k(x, z) = \langle \psi(x), \psi(z)\rangle`, :math:`\psi = \tilde\phi / \|\tilde\phi\|`,
:math:`\tilde\phi_j = \lambda_j^{t/2} \phi_j`. Texts of one cluster of the cloud share their
leading coordinates: the kernel is near 1 within a cluster and near 0 across.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from gpytorch.kernels import Kernel
from linear_operator.operators import LinearOperator
from torch import Tensor

from .._random import numpy_generator
from ..base.snapshot import TensorSnapshot

__all__ = [
    "LAPLACIANS",
    "ClusterKernel",
    "PointCloudKernel",
    "check_finite_rows",
    "cloud_affinity",
    "graph_laplacian",
    "knn_graph",
    "leading_eigenpairs",
    "nearest_cloud_points",
    "normalized_affinity",
    "row_digests",
]

#: the graph Laplacians :class:`PointCloudKernel` builds
LAPLACIANS = ("normalized", "unnormalized")
#: the deformation terms a kernel keeps (its last distinct inputs)
_KEPT_TERMS = 4
#: graph components up to this many points: the cluster kernel's leading eigenpairs from a dense
#: eigendecomposition (a repeated eigenvalue's every vector found); larger ones by Lanczos on the sparse graph
#: (ARPACK's ``eigsh``), hundreds of times faster on a text cloud of thousands (``benchmarks/README.md``,
#: ``cluster_spectrum_cost.py``)
_DENSE_SPECTRUM = 1024
#: where Lanczos does not converge, components up to this many points fall back to the dense matrix's leading
#: eigenvectors alone (LAPACK's ``evr``; 20,000 points: a 3.2 GB matrix); larger ones raise
_DENSE_SUBSET_SPECTRUM = 20_000
#: rows of the cloud's distances computed at once when finding neighbours
_NEIGHBOUR_ROWS = 2048
#: the inputs whose cloud neighbours a :class:`ClusterKernel` remembers (16 bytes of digest and ``n_neighbors``
#: indices each); past it the memory starts afresh
_NEAREST_MEMO_ROWS = 200_000


def nearest_cloud_points(queries: Tensor, cloud: Tensor, n_neighbors: int, *, exclude_exact: bool = True) -> Tensor:
    r"""The indices of each query's ``n_neighbors`` nearest points of ``cloud`` (Euclidean distance):
    ``*B x n x d`` and ``n_P x d`` -> ``*B x n x n_neighbors``, nearest first (among points at the
    same distance, ``torch.topk`` chooses). ``exclude_exact``: a cloud point equal to the query
    (squared distance below 1e-12 of the scale) is not its neighbour, so that a cloud point and a new
    input are read alike."""
    flat = queries.reshape(-1, queries.shape[-1])
    cloud_sq = (cloud * cloud).sum(-1)
    out = torch.empty(flat.shape[0], n_neighbors, dtype=torch.long, device=cloud.device)
    for start in range(0, flat.shape[0], _NEIGHBOUR_ROWS):
        rows = flat[start : start + _NEIGHBOUR_ROWS]
        rows_sq = (rows * rows).sum(-1, keepdim=True)
        d2 = rows_sq + cloud_sq
        near = d2 * 1e-12 if exclude_exact else None  # an exact match's threshold
        d2.sub_(2 * rows @ cloud.T).clamp_min_(0)  # in place: a block of rows x n_P is the search's memory traffic
        if near is not None:
            d2.masked_fill_(d2 <= near, float("inf"))
        out[start : start + len(rows)] = torch.topk(d2, n_neighbors, dim=-1, largest=False, sorted=True).indices
    return out.reshape(*queries.shape[:-1], n_neighbors)


def knn_graph(points: Tensor, n_neighbors: int) -> Tensor:
    r"""The symmetric 0/1 adjacency of the ``n_neighbors``-nearest-neighbour graph of ``points``
    (``n x d``, Euclidean distance; :math:`w_{ij} = 1` where :math:`j` is among :math:`i`'s neighbours
    or :math:`i` among :math:`j`'s): ``n x n``, zero diagonal. Among points at the same distance,
    ``torch.topk`` chooses."""
    n = points.shape[0]
    adjacency = torch.zeros(n, n, dtype=points.dtype, device=points.device)
    squared = (points * points).sum(-1)
    for start in range(0, n, _NEIGHBOUR_ROWS):
        rows = slice(start, min(start + _NEIGHBOUR_ROWS, n))
        d2 = squared[rows, None] + squared[None] - 2 * points[rows] @ points.T
        d2[torch.arange(d2.shape[0]), torch.arange(rows.start, rows.stop)] = float("inf")  # not its own neighbour
        nearest = torch.topk(d2, n_neighbors, dim=-1, largest=False, sorted=False).indices
        adjacency[rows].scatter_(1, nearest, 1.0)
    return torch.maximum(adjacency, adjacency.T)


def graph_laplacian(adjacency: Tensor, kind: str = "normalized") -> Tensor:
    r"""The Laplacian of a graph of ``n x n`` symmetric non-negative weights: ``"unnormalized"``
    :math:`D - W`, ``"normalized"`` :math:`I - D^{-1/2} W D^{-1/2}` (a node without an edge keeps a
    zero row and column)."""
    if kind not in LAPLACIANS:
        raise ValueError(f"laplacian must be one of {LAPLACIANS}; got {kind!r}")
    degree = adjacency.sum(-1)
    if kind == "unnormalized":
        return torch.diag(degree) - adjacency
    scale = torch.where(degree > 0, degree.clamp_min(1e-300).rsqrt(), torch.zeros_like(degree))
    return torch.diag((degree > 0).to(adjacency.dtype)) - scale[:, None] * adjacency * scale[None]


def cloud_affinity(cloud: Tensor, n_neighbors: int) -> tuple[Any, Any]:
    r"""The cluster kernel's graph of a cloud (``n x d``): its normalized affinity :math:`D^{-1/2} W D^{-1/2}`
    (a scipy CSR matrix, ``n x n``) and the degrees :math:`d = W 1` (``n``), :math:`W` the symmetric 0/1
    adjacency of the ``n_neighbors``-nearest-neighbour graph (:math:`w_{ij} = 1` where :math:`j` is among
    :math:`i`'s neighbours or :math:`i` among :math:`j`'s; :func:`nearest_cloud_points`)."""
    import numpy as np
    import scipy.sparse

    n = cloud.shape[0]
    nearest = nearest_cloud_points(cloud, cloud, n_neighbors).cpu().numpy()
    rows = np.repeat(np.arange(n), n_neighbors)
    adjacency = scipy.sparse.csr_matrix((np.ones(n * n_neighbors), (rows, nearest.ravel())), shape=(n, n))
    return normalized_affinity(adjacency.maximum(adjacency.T))


def normalized_affinity(adjacency: Any) -> tuple[Any, Any]:
    r""":math:`D^{-1/2} W D^{-1/2}` (scipy CSR) and the degrees :math:`d = W 1` of a symmetric scipy sparse
    ``n x n`` adjacency :math:`W` whose every node has an edge."""
    import numpy as np
    import scipy.sparse

    degree = np.asarray(adjacency.sum(1)).ravel()
    scale = scipy.sparse.diags(1 / np.sqrt(degree))
    return (scale @ adjacency @ scale).tocsr(), degree


def leading_eigenpairs(affinity: Any, k: int) -> tuple[Any, Any]:
    r"""The ``k`` largest eigenvalues (``k``, ascending) and their eigenvectors (``n x k``, orthonormal columns)
    of a symmetric ``n x n`` scipy sparse matrix whose nonzeros are a graph's edges (the cluster kernel's
    :math:`D^{-1/2} W D^{-1/2}`), ``1 <= k < n``.

    Computed for each connected component of the graph on its own, as the matrix is block diagonal over them:
    a graph of several components repeats its largest eigenvalue once a component (1 for the normalized
    affinity), which a Krylov method started from one vector finds only once. A component of up to 1,024
    points, or of fewer than four times the eigenpairs asked of it, by a dense eigendecomposition; a larger
    one by Lanczos (ARPACK's ``eigsh``, to machine precision, from a fixed start: the same pairs for the same
    matrix). Within a connected component a leading eigenvalue repeats only through a symmetry of the
    graph, which a nearest-neighbour graph of real data rarely has. Where Lanczos does not converge, the
    dense matrix's leading eigenvectors alone (LAPACK's ``evr``), for a component of up to 20,000 points.
    The components' pairs are merged by eigenvalue (a stable order: ties by component).

    Raises:
        ValueError: ``affinity`` not square, or ``k`` not an integer in ``[1, n - 1]``.
        RuntimeError: Lanczos did not converge on a component of more than 20,000 points.
    """
    import numpy as np
    import scipy.sparse.csgraph

    if len(affinity.shape) != 2 or affinity.shape[0] != affinity.shape[1]:
        raise ValueError(f"affinity must be a square n x n matrix; got the shape {tuple(affinity.shape)}")
    n = affinity.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
        raise ValueError(f"k must be an integer in [1, {n - 1}] (the eigenpairs of an {n} x {n} matrix); got {k!r}")
    n_parts, labels = scipy.sparse.csgraph.connected_components(affinity, directed=False)
    if n_parts == 1:
        return _component_eigenpairs(affinity, k)
    order = np.argsort(labels, kind="stable")
    parts = np.split(order, np.cumsum(np.bincount(labels, minlength=n_parts))[:-1])
    pairs = [_component_eigenpairs(affinity[rows][:, rows], min(k, len(rows))) for rows in parts]
    all_values = np.concatenate([values for values, _ in pairs])
    part_of = np.concatenate([np.full(len(values), part) for part, (values, _) in enumerate(pairs)])
    local = np.concatenate([np.arange(len(values)) for values, _ in pairs])
    kept = np.sort(np.argsort(-all_values, kind="stable")[:k])  # the k largest, in the components' order
    kept = kept[np.argsort(all_values[kept], kind="stable")]  # ascending, as eigh and eigsh give them
    vectors = np.zeros((n, k))
    for column, index in enumerate(kept):
        part = part_of[index]
        vectors[parts[part], column] = pairs[part][1][:, local[index]]
    return all_values[kept], vectors


def _component_eigenpairs(block: Any, wanted: int) -> tuple[Any, Any]:
    """:func:`leading_eigenpairs` of one connected component: ``wanted`` pairs, ascending."""
    import numpy as np
    import scipy.linalg
    import scipy.sparse.linalg

    m = block.shape[0]
    if m <= _DENSE_SPECTRUM or 4 * wanted >= m:
        values, vectors = np.linalg.eigh(block.toarray())
        return values[m - wanted :], vectors[:, m - wanted :]
    start = numpy_generator(0).standard_normal(m)
    try:
        return scipy.sparse.linalg.eigsh(block, k=wanted, which="LA", tol=0, v0=start)
    except scipy.sparse.linalg.ArpackError as error:  # no convergence, or ARPACK's other failures
        if m > _DENSE_SUBSET_SPECTRUM:
            raise RuntimeError(
                f"ClusterKernel: Lanczos did not converge to {wanted} eigenvectors of a graph component of {m} "
                f"points ({error}), and above {_DENSE_SUBSET_SPECTRUM} points the dense route is not taken; keep "
                "fewer eigenvectors (n_components) or a smaller cloud"
            ) from error
        return scipy.linalg.eigh(block.toarray(), subset_by_index=[m - wanted, m - 1], driver="evr", overwrite_a=True)


class _KeepsResults(Kernel):
    """A kernel that keeps results for its last inputs in ``self._kept`` (compared by value), computed from
    its own tensors: forgotten when those change in place (``load_state_dict``) or are converted (``.to``,
    ``.double()``), so that a loaded or moved kernel computes from what it now holds."""

    _kept: list

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self._kept = []
        return super()._apply(fn, *args, **kwargs)

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        self._kept = []
        super()._load_from_state_dict(*args, **kwargs)


class PointCloudKernel(_KeepsResults):
    r"""``base`` deformed by a cloud of points (module docstring): :math:`\tilde k(x, z) = k(x, z) -
    k_{xP} (I + \gamma L^p K_{PP})^{-1} \gamma L^p k_{Pz}`.

    Args:
        base: a gpytorch kernel on the inputs' space (e.g. ``RBFKernel`` on encoder vectors). Its
            parameters are the ones it has when given, held fixed (their ``requires_grad`` is switched
            off): the deformation is computed for them. Wrap this kernel in ``ScaleKernel`` for an output
            scale learned by the marginal likelihood.
        cloud: ``n_P x d``, the points (unlabelled inputs, with the labelled ones if at hand), in the
            inputs' space and dtype (normalize them where ``base``'s inputs are normalized).
        n_neighbors: the neighbours of each point in the graph (Euclidean distance).
        gamma: :math:`\gamma \ge 0`, the weight of the roughness on the cloud (0: the base kernel).
        power: :math:`p`, a positive integer: the power of the Laplacian (Sindhwani et al. found
            powers above 1 better on text; odd powers cost an eigendecomposition of the Laplacian).
        laplacian: ``"normalized"`` or ``"unnormalized"`` (:func:`graph_laplacian`).

    Shapes: ``x1``: ``*B x n1 x d``, ``x2``: ``*B x n2 x d`` -> ``*B x n1 x n2`` (``*B x n1`` with
    ``diag=True``); the kernel has no batch of hyperparameters (one cloud, one deformation). Memory:
    the cloud's ``n_P x n_P`` deformation (200 MB in float64 at 5,000 points).

    Raises:
        TypeError: ``base`` is not a gpytorch ``Kernel`` or ``cloud`` not a floating tensor.
        ValueError: ``cloud`` not 2-D, not finite, or of at most ``n_neighbors`` points; ``gamma``,
            ``power`` or ``laplacian`` out of range; a ``batch_shape`` (this kernel's or ``base``'s).
    """

    has_lengthscale = False

    def __init__(
        self,
        base: Kernel,
        cloud: Tensor,
        *,
        n_neighbors: int = 10,
        gamma: float = 100.0,
        power: int = 2,
        laplacian: str = "normalized",
        **kwargs: Any,
    ) -> None:
        if not isinstance(base, Kernel):
            raise TypeError(f"base must be a gpytorch Kernel; got {type(base).__name__}")
        _check_cloud(cloud, n_neighbors)
        if not (isinstance(gamma, (int, float)) and not isinstance(gamma, bool) and 0 <= gamma < float("inf")):
            raise ValueError(f"gamma must be a finite number at least 0; got {gamma!r}")
        if isinstance(power, bool) or not isinstance(power, int) or power < 1:
            raise ValueError(f"power must be a positive integer; got {power!r}")
        if laplacian not in LAPLACIANS:
            raise ValueError(f"laplacian must be one of {LAPLACIANS}; got {laplacian!r}")
        if base.batch_shape != torch.Size() or torch.Size(kwargs.get("batch_shape", ())) != torch.Size():
            raise ValueError(
                "PointCloudKernel deforms one kernel by one cloud: batch_shape (its own and base's) must be empty; "
                "batched inputs broadcast against the cloud"
            )
        super().__init__(**kwargs)
        self.base = base
        self.n_neighbors, self.gamma, self.power, self.laplacian = n_neighbors, float(gamma), power, laplacian
        for p in base.parameters():
            p.requires_grad_(False)
        self.register_buffer("cloud", cloud.detach().clone())
        self.register_buffer("deformation", self._deformation())
        self._kept: list[tuple[TensorSnapshot, bool, Tensor]] = []

    @property
    def is_stationary(self) -> bool:
        return False

    def _deformation(self) -> Tensor:
        r""":math:`S = \gamma B (I + \gamma B K_{PP} B)^{-1} B`, :math:`B = L^{p/2}`: ``n_P x n_P``, symmetric."""
        self._state = TensorSnapshot(self.base.state_dict().values())
        self._kept = []
        cloud = self.cloud
        n = cloud.shape[0]
        if self.gamma == 0:
            return torch.zeros(n, n, dtype=cloud.dtype, device=cloud.device)
        lap = graph_laplacian(knn_graph(cloud, self.n_neighbors), self.laplacian)
        if self.power % 2 == 0:
            root = torch.linalg.matrix_power(lap, self.power // 2)
        else:
            values, vectors = torch.linalg.eigh(lap)
            root = (vectors * values.clamp_min(0) ** (self.power / 2)) @ vectors.T
            root = (root + root.T) / 2
        with torch.no_grad():
            gram = _dense(self.base.forward(cloud, cloud))
        inner = self.gamma * root @ gram @ root
        inner = (inner + inner.T) / 2 + torch.eye(n, dtype=cloud.dtype, device=cloud.device)
        factor, info = torch.linalg.cholesky_ex(inner)
        if info.item() != 0:
            raise ValueError(
                "PointCloudKernel: I + gamma B K B is not positive definite (its eigenvalues are at least 1 in exact "
                "arithmetic): the base kernel's Gram on the cloud is not positive semi-definite"
            )
        half = torch.linalg.solve_triangular(factor, root, upper=False)  # L_T^-1 B
        return self.gamma * half.T @ half

    def _cross(self, x: Tensor) -> Tensor:
        cloud = self.cloud.expand(*x.shape[:-2], *self.cloud.shape)
        return _dense(self.base.forward(x, cloud))

    def _term(self, x1: Tensor, x2: Tensor, diag: bool) -> Tensor:
        """:math:`k_{x_1 P} S k_{P x_2}` (its diagonal with ``diag``), kept for the last inputs."""
        for inputs, d, term in self._kept:
            if d == diag and inputs.matches((x1, x2)):
                return term
        with torch.no_grad():
            c1 = self._cross(x1)
            c2 = c1 if x2 is x1 else self._cross(x2)
            left = c1 @ self.deformation
            term = (left * c2).sum(-1) if diag else left @ c2.transpose(-1, -2)
        self._kept = [(TensorSnapshot((x1, x2)), diag, term), *self._kept][:_KEPT_TERMS]
        return term

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Tensor:
        if not self._state.matches(self.base.state_dict().values()):
            self.deformation = self._deformation()  # the base kernel was changed since: deform it again
        return _dense(self.base.forward(x1, x2, diag=diag, **params)) - self._term(x1, x2, diag)


def row_digests(rows: Tensor) -> list[bytes]:
    """A 16-byte digest of each row's values (``n x d`` -> ``n`` keys): how the cluster kernels remember what they
    computed for an input they read again."""
    host = rows.detach().cpu().contiguous().numpy()
    return [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in host]


def _dense(x: Any) -> Tensor:
    return x.to_dense() if isinstance(x, LinearOperator) else x


def _first_rows(keys: list[bytes], known: dict[bytes, int]) -> list[int]:
    """The first row of each digest among ``keys`` that ``known`` lacks, in order: an input read twice in one call is
    searched for once."""
    first: dict[bytes, int] = {}
    for row, key in enumerate(keys):
        if key not in known:
            first.setdefault(key, row)
    return list(first.values())


class ClusterKernel(_KeepsResults):
    r"""The cluster kernel of a cloud of points (module docstring): :math:`k(x, z) = \langle\psi(x),
    \psi(z)\rangle`, :math:`\psi` the normalized, eigenvalue-weighted Nyström coordinates of the cloud
    graph's leading eigenvectors.

    Args:
        cloud: ``n_P x d``, the points (unlabelled inputs, with the labelled ones if at hand), in the
            inputs' space (normalize them where the inputs are normalized).
        n_components: the leading eigenvectors kept, at least 1 and below ``n_P`` (about the number
            of clusters the cloud holds; the transfer power weighs the later ones down).
        n_neighbors: each point's neighbours in the graph, and each input's cloud points.
        power: :math:`t \ge 0`, the transfer function :math:`\lambda^t` (0: the spectral clustering
            coordinates unweighted; larger: the leading clusters weigh more).

    No hyperparameters are learned (wrap it in ``ScaleKernel`` for an output scale). The eigenvectors
    come from :func:`leading_eigenpairs`: each connected component of the graph on its own (a graph of
    several components repeats the eigenvalue 1), by Lanczos on the sparse graph, or a dense
    eigendecomposition for a component of up to 1,024 points; the same kernel for the same cloud. A call
    costs the distances of its inputs to the cloud, :math:`n \times n_P \times d`.

    Shapes: ``x1``: ``*B x n1 x d``, ``x2``: ``*B x n2 x d`` -> ``*B x n1 x n2`` (``*B x n1`` with
    ``diag=True``: ones).

    Raises:
        TypeError: ``cloud`` is not a floating tensor.
        ValueError: ``cloud`` not 2-D, not finite, or too small for ``n_neighbors`` and
            ``n_components``; ``power`` negative; a ``batch_shape``.
        RuntimeError: Lanczos did not converge on a graph component above 20,000 points
            (:func:`leading_eigenpairs`).
    """

    has_lengthscale = False
    _neighbour_index: dict[bytes, int]
    _neighbour_rows: Tensor

    def __init__(
        self, cloud: Tensor, *, n_components: int = 40, n_neighbors: int = 10, power: float = 6.0, **kwargs: Any
    ) -> None:
        _check_cloud(cloud, n_neighbors)
        if isinstance(n_components, bool) or not isinstance(n_components, int) or not 1 <= n_components < len(cloud):
            raise ValueError(f"n_components must be an integer in [1, {len(cloud) - 1}]; got {n_components!r}")
        if not (isinstance(power, (int, float)) and not isinstance(power, bool) and 0 <= power < float("inf")):
            raise ValueError(f"power must be a finite number at least 0; got {power!r}")
        if torch.Size(kwargs.get("batch_shape", ())) != torch.Size():
            raise ValueError("ClusterKernel has one cloud: batch_shape must be empty; batched inputs broadcast")
        super().__init__(**kwargs)
        self.n_components, self.n_neighbors, self.power = n_components, n_neighbors, float(power)
        self.register_buffer("cloud", cloud.detach().clone())
        self.register_buffer("eigenvalues", torch.empty(0, dtype=cloud.dtype))
        self.register_buffer("projection", torch.empty(0, dtype=cloud.dtype))
        self._spectrum()
        self._kept: list[tuple[TensorSnapshot, Tensor]] = []
        self._forget_neighbours()

    @property
    def is_stationary(self) -> bool:
        return False

    def _spectrum(self) -> None:
        r"""The leading eigenpairs of :math:`D^{-1/2} W D^{-1/2}` and the projection
        :math:`R = D^{-1/2} V \Lambda^{t/2 - 1}` (``n_P x r``) of the coordinates: :math:`\tilde\phi(x) =
        a(x) R / \sqrt{d_x}`."""
        import numpy as np

        cloud = self.cloud
        affinity, degree = cloud_affinity(cloud, self.n_neighbors)
        values, vectors = leading_eigenpairs(affinity, self.n_components)
        order = np.argsort(-values, kind="stable")
        values, vectors = values[order], vectors[:, order]
        signs = np.sign(vectors[np.abs(vectors).argmax(0), np.arange(vectors.shape[1])])  # a fixed sign each
        vectors = vectors * np.where(signs == 0, 1.0, signs)
        lam = np.clip(values, 1e-12, None)
        projection = vectors / np.sqrt(degree)[:, None] * lam ** (self.power / 2 - 1)
        self.eigenvalues = torch.as_tensor(values, dtype=cloud.dtype, device=cloud.device)
        self.projection = torch.as_tensor(projection, dtype=cloud.dtype, device=cloud.device)

    def coordinates(self, x: Tensor) -> Tensor:
        r""":math:`\psi(x)`: ``*B x n x d`` -> ``*B x n x r``, unit rows (a row of zeros where every
        coordinate vanishes). Kept for the last inputs (compared by value): a GP's fit calls the kernel on
        its training inputs at every optimizer step, and a prediction on the same inputs twice (the
        cross-covariance and the diagonal)."""
        for inputs, kept in self._kept:
            if inputs.matches((x,)):
                return kept
        psi = self._coordinates(x)
        self._kept = [(TensorSnapshot((x,)), psi), *self._kept][:_KEPT_TERMS]
        return psi

    def _coordinates(self, x: Tensor) -> Tensor:
        nearest = self.nearest(x)
        phi = self.projection[nearest].sum(-2)  # a(x) R; the 1/sqrt(d_x) goes with the normalization
        return torch.nn.functional.normalize(phi, dim=-1).to(x.dtype)

    def nearest(self, x: Tensor) -> Tensor:
        """The indices of each input's :attr:`n_neighbors` cloud points (:func:`nearest_cloud_points`):
        ``*B x n x d`` -> ``*B x n x n_neighbors``. Remembered input by input, by a digest of its values:
        an active learner scores the same pool texts and test documents round after round, each round a
        different set of them, and their distances to the cloud, ``n x n_P x d``, were computed anew each
        time (``benchmarks/README.md``, ``epig_cost.py``). Up to :data:`_NEAREST_MEMO_ROWS` inputs; forgotten
        with the cloud (``load_state_dict``, a ``.to`` that converts it)."""
        x = x.to(self.cloud.dtype)
        flat = x.reshape(-1, x.shape[-1])
        keys = row_digests(flat)
        index = self._neighbour_index
        missing = _first_rows(keys, index)
        if missing:
            if len(index) + len(missing) > _NEAREST_MEMO_ROWS:
                self._forget_neighbours()
                index = self._neighbour_index
                missing = _first_rows(keys, index)
            found = self._search(flat, missing)
            start = len(self._neighbour_rows)
            for offset, i in enumerate(missing):
                index[keys[i]] = start + offset
            self._neighbour_rows = torch.cat([self._neighbour_rows, found.to(self._neighbour_rows.device)])
        rows = torch.as_tensor([index[key] for key in keys], dtype=torch.long, device=self._neighbour_rows.device)
        return self._neighbour_rows[rows].to(self.cloud.device).reshape(*x.shape[:-1], self.n_neighbors)

    def _search(self, flat: Tensor, positions: list[int]) -> Tensor:
        """The cloud neighbours of the inputs ``flat[positions]`` (``n x d``; those :meth:`nearest` does not
        remember yet), ``k x n_neighbors`` (:func:`nearest_cloud_points`); where a subclass searches elsewhere
        (its errors name rows of ``flat``)."""
        return nearest_cloud_points(flat[positions], self.cloud, self.n_neighbors)

    def _forget_neighbours(self) -> None:
        self._neighbour_index = {}
        self._neighbour_rows = torch.empty(0, self.n_neighbors, dtype=torch.long, device=self.cloud.device)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # an estimator moves its kernel to its device and dtype at every fit: the inputs' neighbours are forgotten
        # only where that converts the cloud (a new tensor)
        cloud = self._buffers.get("cloud")
        out = super()._apply(fn, *args, **kwargs)
        if self._buffers.get("cloud") is not cloud:
            self._forget_neighbours()
        return out

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        self._forget_neighbours()  # the cloud is loaded in place: the same tensor, other values
        super()._load_from_state_dict(*args, **kwargs)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Tensor:
        c1 = self.coordinates(x1)
        c2 = c1 if x2 is x1 else self.coordinates(x2)
        return (c1 * c2).sum(-1) if diag else c1 @ c2.transpose(-1, -2)


def check_finite_rows(values: Tensor, name: str) -> None:
    """A ``ValueError`` naming the rows of ``values`` (``n x d``) that hold a non-finite value, and ``name``."""
    bad = (~torch.isfinite(values)).any(-1).nonzero().flatten()
    if len(bad):
        raise ValueError(f"{name} has non-finite values in rows {bad[:10].tolist()} ({len(bad)} rows)")


def _check_cloud(cloud: Any, n_neighbors: Any) -> None:
    """The checks both kernels make of their cloud and its number of neighbours."""
    if not torch.is_tensor(cloud) or not cloud.is_floating_point():
        raise TypeError(f"cloud must be a floating-point tensor; got {type(cloud).__name__}")
    if cloud.ndim != 2:
        raise ValueError(f"cloud must be n_P x d; got shape {tuple(cloud.shape)}")
    check_finite_rows(cloud, "cloud")
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, int) or not 1 <= n_neighbors < len(cloud):
        raise ValueError(
            f"n_neighbors must be an integer in [1, {len(cloud) - 1}] (the cloud's points less one); "
            f"got {n_neighbors!r}"
        )
