"""The kernels of a cloud of unlabelled points. PointCloudKernel (Sindhwani, Niyogi & Belkin 2005):
against the paper's formula with a general solve, the closed form on the cloud, the base kernel at
gamma 0, positive semi-definiteness, the graph it is built from, its kept terms. ClusterKernel
(Chapelle, Weston & Schölkopf 2003, Nyström coordinates): against a loop over inputs and a dense
eigendecomposition, its Lanczos route on graphs of several components against the dense one. Both under gpytorch's kernel tests."""

from __future__ import annotations

import unittest
import warnings

import pytest
import torch
from gpytorch.kernels import LinearKernel, RBFKernel, ScaleKernel
from gpytorch.test.base_kernel_test_case import BaseKernelTestCase

from lvgp.kernels import ClusterKernel, FeatureKernel, PointCloudKernel, pack_documents, point_cloud
from lvgp.kernels.point_cloud import graph_laplacian, knn_graph, nearest_cloud_points

D = torch.float64


def _cloud(n=40, d=3, seed=0):
    return torch.randn(n, d, dtype=D, generator=torch.Generator().manual_seed(seed))


def _rbf(lengthscale=0.8):
    base = RBFKernel().double()
    base.lengthscale = lengthscale
    return base


def _paper(base, cloud, x, z, gamma, power, laplacian, k):
    """Eq. (5)-(6) as written: k(x, z) - k_xP (I + M K)^-1 M k_Pz, M = gamma L^p, a general solve."""
    lap = graph_laplacian(knn_graph(cloud, k), laplacian)
    values, vectors = torch.linalg.eigh(lap)
    m = gamma * (vectors * values.clamp_min(0) ** power) @ vectors.T
    gram = base(cloud, cloud).to_dense()
    n = len(cloud)
    return base(x, z).to_dense() - base(x, cloud).to_dense() @ torch.linalg.solve(
        torch.eye(n, dtype=D) + m @ gram, m @ base(cloud, z).to_dense()
    )


@pytest.mark.parametrize("power", [1, 2, 3])
@pytest.mark.parametrize("laplacian", ["normalized", "unnormalized"])
def test_the_kernel_is_the_papers_formula(power, laplacian):
    cloud, x, z = _cloud(), _cloud(7, seed=1), _cloud(5, seed=2)
    kernel = PointCloudKernel(_rbf(), cloud, n_neighbors=4, gamma=2.5, power=power, laplacian=laplacian)
    expected = _paper(_rbf(), cloud, x, z, 2.5, power, laplacian, 4)
    torch.testing.assert_close(kernel(x, z).to_dense(), expected, rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(kernel(x, diag=True), torch.diagonal(kernel(x, x).to_dense()), rtol=1e-12, atol=1e-13)


def test_on_the_cloud_the_kernel_is_the_inverse_of_the_deformed_precision():
    # with K invertible, (I + M K)^-1 M = (K^-1 + M)^-1 - ... : on the cloud k~ = (K^-1 + M)^-1
    cloud = _cloud(30)
    kernel = PointCloudKernel(_rbf(0.5), cloud, n_neighbors=5, gamma=3.0, power=2)
    lap = graph_laplacian(knn_graph(cloud, 5))
    gram = _rbf(0.5)(cloud, cloud).to_dense()
    expected = torch.linalg.inv(torch.linalg.inv(gram) + 3.0 * lap @ lap)
    torch.testing.assert_close(kernel(cloud, cloud).to_dense(), expected, rtol=1e-8, atol=1e-10)


def test_gamma_zero_is_the_base_kernel_and_the_deformation_is_positive_semi_definite():
    cloud, x = _cloud(), _cloud(25, seed=3)
    plain = PointCloudKernel(_rbf(), cloud, gamma=0.0)
    torch.testing.assert_close(plain(x, x).to_dense(), _rbf()(x, x).to_dense(), rtol=0, atol=0)
    for gamma in (0.1, 10.0, 1e4):
        gram = PointCloudKernel(_rbf(), cloud, n_neighbors=5, gamma=gamma)(x, x).to_dense()
        assert torch.linalg.eigvalsh(gram).min() > -1e-10
        # the deformation only removes: k~(x, x) <= k(x, x)
        assert (torch.diagonal(gram) <= 1 + 1e-12).all()


def test_the_deformation_pulls_a_cluster_together():
    # two clusters sampled densely: the cloud's graph joins points of one cluster, so the deformed
    # kernel's correlation within a cluster rises relative to the one across clusters
    g = torch.Generator().manual_seed(0)
    a = torch.randn(40, 2, dtype=D, generator=g) * 0.3
    b = torch.randn(40, 2, dtype=D, generator=g) * 0.3 + torch.tensor([3.0, 0.0], dtype=D)
    cloud = torch.cat([a, b])
    x = torch.tensor([[-0.6, 0.0], [0.6, 0.0], [2.4, 0.0]], dtype=D)  # two in a's cluster, one in b's
    base = _rbf(1.5)
    k = PointCloudKernel(base, cloud, n_neighbors=6, gamma=100.0)(x, x).to_dense()
    kb = _rbf(1.5)(x, x).to_dense()

    def corr(m, i, j):
        return m[i, j] / (m[i, i] * m[j, j]).sqrt()

    assert corr(k, 0, 1) / corr(k, 1, 2) > 2 * corr(kb, 0, 1) / corr(kb, 1, 2)


def test_the_graph_is_symmetric_and_each_point_has_its_neighbours():
    cloud = _cloud(30)
    w = knn_graph(cloud, 4)
    assert torch.equal(w, w.T) and (torch.diagonal(w) == 0).all() and (w.sum(1) >= 4).all()
    d2 = torch.cdist(cloud, cloud).fill_diagonal_(float("inf"))
    nearest = d2.topk(4, largest=False).indices
    assert (w.gather(1, nearest) == 1).all()
    lap = graph_laplacian(w)
    torch.testing.assert_close(lap @ (w.sum(1).sqrt()), torch.zeros(30, dtype=D), atol=1e-12, rtol=0)
    torch.testing.assert_close(graph_laplacian(w, "unnormalized").sum(1), torch.zeros(30, dtype=D), atol=1e-12, rtol=0)


def test_the_base_kernel_is_held_fixed_and_a_change_to_it_is_seen():
    cloud, x = _cloud(), _cloud(6, seed=4)
    base = _rbf(0.8)
    kernel = PointCloudKernel(base, cloud, n_neighbors=5, gamma=5.0)
    assert not any(p.requires_grad for p in base.parameters())
    first = kernel(x, x).to_dense()
    assert torch.equal(kernel(x.clone(), x.clone()).to_dense(), first)  # the kept term, by value
    base.lengthscale = 1.3
    torch.testing.assert_close(
        kernel(x, x).to_dense(), PointCloudKernel(_rbf(1.3), cloud, n_neighbors=5, gamma=5.0)(x, x).to_dense()
    )


def test_the_kept_term_is_reused_for_equal_inputs():
    cloud, x = _cloud(), _cloud(6, seed=4)
    kernel = PointCloudKernel(_rbf(), cloud, n_neighbors=5)
    calls = []
    forward = kernel.base.forward
    kernel.base.forward = lambda *a, **k: (calls.append(a[1].shape[-2]), forward(*a, **k))[1]
    kernel(x, x).to_dense()
    kernel(x.clone(), x.clone()).to_dense()
    # the cross products with the cloud (40 columns) once; the base kernel between the inputs each call
    assert calls.count(40) == 1 and calls.count(6) == 2


def test_gradients_reach_the_parameters_around_it():
    cloud, x = _cloud(), _cloud(6, seed=5)
    kernel = ScaleKernel(PointCloudKernel(_rbf(), cloud, n_neighbors=5)).double()
    kernel(x, x).to_dense().sum().backward()
    assert kernel.raw_outputscale.grad is not None and torch.isfinite(kernel.raw_outputscale.grad)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"base": "rbf"}, TypeError, "base must be a gpytorch Kernel"),
        ({"cloud": [[0.0, 1.0]]}, TypeError, "cloud must be a floating-point tensor"),
        ({"cloud": torch.zeros(5, dtype=D)}, ValueError, "cloud must be n_P x d"),
        ({"cloud": torch.tensor([[0.0, 1.0]] * 4 + [[float("nan"), 0.0]], dtype=D)}, ValueError, r"rows \[4\]"),
        ({"n_neighbors": 40}, ValueError, "n_neighbors must be an integer in"),
        ({"gamma": -1.0}, ValueError, "gamma must be a finite number at least 0"),
        ({"power": 0}, ValueError, "power must be a positive integer"),
        ({"laplacian": "random-walk"}, ValueError, "laplacian must be one of"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    arguments = {"base": _rbf(), "cloud": _cloud(), **kwargs}
    with pytest.raises(error, match=match):
        PointCloudKernel(arguments.pop("base"), arguments.pop("cloud"), **arguments)


def test_it_composes_inside_a_feature_kernel_and_saves_its_buffers():
    cloud = torch.nn.functional.normalize(_cloud(30, d=4), dim=-1)
    kernel = FeatureKernel(PointCloudKernel(LinearKernel().double(), cloud, n_neighbors=4), 4, normalize=True)
    state = kernel.state_dict()
    assert torch.equal(state["base.cloud"], cloud) and state["base.deformation"].shape == (30, 30)
    again = FeatureKernel(PointCloudKernel(LinearKernel().double(), cloud, n_neighbors=4), 4, normalize=True)
    again.load_state_dict(state)
    x = pack_documents(torch.zeros(5, 1, dtype=torch.long), _cloud(5, d=4, seed=6))  # [features | word ids]
    assert torch.equal(kernel(x, x).to_dense(), again(x, x).to_dense())
    from lvgp.kernels import BagOfWordsKernel
    from lvgp.kernels.packed import beside_encoder

    with pytest.raises(ValueError, match="at least one encoder part"):
        beside_encoder(BagOfWordsKernel(3).double(), torch.zeros(5, 1, dtype=torch.long), 4, [])


class TestPointCloudKernelAsAGpytorchKernel(BaseKernelTestCase, unittest.TestCase):
    """gpytorch's own kernel tests (batched inputs, diagonals, dtypes) on inputs of two columns, in the
    default dtype; its batched-hyperparameter tests replaced (the kernel has one cloud)."""

    def create_kernel_no_ard(self, cloud_dim=2, **kwargs):
        base = RBFKernel()
        base.lengthscale = 0.8
        cloud = torch.randn(20, cloud_dim, generator=torch.Generator().manual_seed(0))
        return PointCloudKernel(base, cloud, n_neighbors=3, gamma=2.0, **kwargs)

    def create_data_no_batch(self):
        return torch.randn(50, 2)

    def create_data_single_batch(self):
        return torch.randn(2, 3, 2)

    def create_data_double_batch(self):
        return torch.randn(3, 2, 50, 2)

    def _active_dims(self, dims):
        x = torch.randn(50, 10, dtype=D)
        kernel = self.create_kernel_no_ard(len(dims), active_dims=dims).double()
        plain = self.create_kernel_no_ard(len(dims)).double()
        torch.testing.assert_close(kernel(x).to_dense(), plain(x[:, dims]).to_dense())

    def test_active_dims_list(self):  # the cloud lives in the sliced space
        self._active_dims([0, 2, 4, 6])

    def test_active_dims_range(self):
        self._active_dims(list(range(3, 9)))

    def _refuses_a_batch(self, shape):
        with pytest.raises(ValueError, match="batch_shape.* must be empty"):
            self.create_kernel_no_ard(batch_shape=torch.Size(shape))

    def test_kernel_getitem_single_batch(self):
        self._refuses_a_batch([2])

    def test_kernel_getitem_double_batch(self):
        self._refuses_a_batch([3, 2])

    def test_kernel_getitem_broadcast(self):
        self._refuses_a_batch([2])

    def test_smoke_double_batch_kernel_double_batch_x_no_ard(self):
        self._refuses_a_batch([3, 2])


def _cluster_reference(cloud, x, z, n_components, n_neighbors, power):
    """The cluster kernel by loops: each input's neighbours by sorting its distances, the graph's
    leading eigenpairs from a dense eigendecomposition, the Nyström coordinates summed point by point."""
    n = len(cloud)
    w = torch.zeros(n, n, dtype=D)
    for i in range(n):
        d = ((cloud - cloud[i]) ** 2).sum(-1)
        d[i] = float("inf")
        for j in torch.argsort(d, stable=True)[:n_neighbors]:
            w[i, j] = w[j, i] = 1.0
    degree = w.sum(1)
    values, vectors = torch.linalg.eigh(w / torch.outer(degree.sqrt(), degree.sqrt()))
    values, vectors = values.flip(0)[:n_components], vectors.flip(1)[:, :n_components]

    def psi(point):
        d = ((cloud - point) ** 2).sum(-1)
        near = torch.argsort(d, stable=True)[:n_neighbors]
        phi = torch.zeros(n_components, dtype=D)
        for i in near:
            phi += vectors[i] / degree[i].sqrt() / values
        phi = phi * values ** (power / 2)
        return phi / phi.norm()

    return torch.stack([torch.stack([psi(a) @ psi(b) for b in z]) for a in x])


@pytest.mark.parametrize("power", [0.0, 6.0])
def test_the_cluster_kernel_is_the_loop_over_inputs_and_the_dense_eigenvectors(power):
    cloud, x, z = _cloud(50), _cloud(6, seed=7), _cloud(4, seed=8)
    kernel = ClusterKernel(cloud, n_components=5, n_neighbors=6, power=power)
    expected = _cluster_reference(cloud, x, z, 5, 6, power)
    torch.testing.assert_close(kernel(x, z).to_dense(), expected, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(kernel(x, diag=True), torch.ones(6, dtype=D), rtol=1e-12, atol=1e-12)
    # a cloud point is read through its neighbours, not itself: as a new input would be
    on_cloud = _cluster_reference(cloud, cloud[:3], cloud[:3] + 0, 5, 6, power)
    assert not torch.allclose(on_cloud, kernel(cloud[:3], cloud[:3]).to_dense())  # the reference counts itself
    assert (nearest_cloud_points(cloud, cloud, 6) != torch.arange(50)[:, None]).all()


def test_the_joined_cloud_kernel_is_the_cluster_kernel_of_the_joined_vectors(monkeypatch):
    """``JoinedCloudClusterKernel`` (the active study's ``--pool-words lsa`` part) reads each input as its joined
    vector: the cluster kernel of the joined cloud at the joined inputs, to the bit; with each text's joined vector
    its own input, it is the cluster kernel of the inputs; an input of no known text, or bad shapes, are refused."""
    from lvgp.experiments import joined_cloud
    from lvgp.experiments.joined_cloud import JoinedCloudClusterKernel

    inputs = _cloud(60)
    joined = torch.cat([inputs, torch.tanh(3 * inputs[:, :2])], -1) / 2**0.5  # another geometry, other neighbours
    options = dict(n_components=5, n_neighbors=6, power=6.0)
    kernel = JoinedCloudClusterKernel(joined[:50], inputs=inputs, joined_inputs=joined, **options)
    reference = ClusterKernel(joined[:50], **options)
    x, z = inputs[[3, 55, 7]], inputs[[58, 1]]
    torch.testing.assert_close(kernel(x, z).to_dense(), reference(joined[[3, 55, 7]], joined[[58, 1]]).to_dense())
    alone = JoinedCloudClusterKernel(inputs[:50], inputs=inputs, joined_inputs=inputs, **options)
    torch.testing.assert_close(alone(x, z).to_dense(), ClusterKernel(inputs[:50], **options)(x, z).to_dense())
    assert not torch.allclose(kernel(x, z).to_dense(), alone(x, z).to_dense())  # the joined graph is another
    with pytest.raises(ValueError, match=r"rows \[1\] of the inputs \(1 of 2\)"):
        kernel(torch.stack([inputs[0], inputs[0] + 1e-3])).to_dense()
    # an input with a text's very values is found by its digest; another rounding of it is searched for once, and
    # the neighbours once an input's values (each known text once a call); a loaded state forgets
    searched = []
    real = joined_cloud.nearest_cloud_points
    monkeypatch.setattr(
        joined_cloud, "nearest_cloud_points", lambda q, *a, **k: searched.append(tuple(q.shape)) or real(q, *a, **k)
    )
    fresh = JoinedCloudClusterKernel(joined[:50], inputs=inputs, joined_inputs=joined, **options)
    torch.testing.assert_close(fresh.joined(inputs[[55, 3, 9]]), joined[[55, 3, 9]], rtol=0, atol=0)
    assert searched == []
    rounded = inputs[[9, 12]] * (1 + 1e-12)
    assert not torch.equal(rounded, inputs[[9, 12]])
    torch.testing.assert_close(fresh.known_rows(rounded[None]), torch.tensor([[9, 12]]), rtol=0, atol=0)
    assert searched == [(2, inputs.shape[1])]  # the inputs' rows searched, once
    fresh.known_rows(rounded)
    assert len(searched) == 1
    batched = torch.stack([inputs[[3, 9, 3]], rounded[[1, 0, 1]]])  # a batch of two, texts read twice
    torch.testing.assert_close(
        fresh.nearest(batched), reference.nearest(joined[[3, 9, 3, 12, 9, 12]]).reshape(2, 3, -1), rtol=0, atol=0
    )
    assert searched[1:] == [(3, joined.shape[1])]  # three texts' neighbours (four inputs' values), once each
    fresh.nearest(inputs[[12, 3, 3]])  # text 12's very values are new to the memory; text 3's are not
    assert searched[2:] == [(1, joined.shape[1])]
    fresh.nearest(batched)
    assert len(searched) == 3
    fresh.load_state_dict(fresh.state_dict())
    fresh.nearest(rounded[:1])
    assert searched[3:] == [(1, inputs.shape[1]), (1, joined.shape[1])]
    with pytest.raises(ValueError, match="joined_inputs"):
        JoinedCloudClusterKernel(joined[:50], inputs=inputs, joined_inputs=joined[:40], **options)


@pytest.mark.parametrize("dense_up_to", [1024, 10])
def test_the_cluster_kernel_is_near_one_within_a_cluster_and_near_zero_across(dense_up_to, monkeypatch):
    # three clusters the graph does not join: the eigenvalue 1 three times, which Lanczos (above 10 points
    # here), run on each component, finds as the dense eigendecomposition does
    monkeypatch.setattr(point_cloud, "_DENSE_SPECTRUM", dense_up_to)
    g = torch.Generator().manual_seed(1)
    centres = torch.tensor([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]], dtype=D)
    cloud = torch.cat([c + 0.5 * torch.randn(60, 2, dtype=D, generator=g) for c in centres])
    kernel = ClusterKernel(cloud, n_components=3, n_neighbors=8, power=6.0)
    x = centres + 0.3
    gram = kernel(x, x).to_dense()
    assert (gram[~torch.eye(3, dtype=torch.bool)].abs() < 0.2).all()
    within = kernel(centres[:1] + 0.4, centres[:1] - 0.4).to_dense()
    assert within.item() > 0.95
    assert torch.linalg.eigvalsh(kernel(cloud, cloud).to_dense()).min() > -1e-10
    torch.testing.assert_close(kernel.eigenvalues, torch.ones(3, dtype=D), rtol=0, atol=1e-12)


@pytest.mark.parametrize("dense_up_to", [1024, 5])
def test_the_leading_eigenpairs_of_a_graph_of_several_components_are_the_dense_ones(dense_up_to, monkeypatch):
    """Three copies of one random graph (every eigenvalue three times, not only 1) and another graph, in a
    shuffled order: the leading eigenvalues and the span of their eigenvectors are the dense
    eigendecomposition's, by Lanczos on each component (the components above 5 points) as densely."""
    import numpy as np
    import scipy.sparse

    from lvgp.kernels.point_cloud import leading_eigenpairs, normalized_affinity

    monkeypatch.setattr(point_cloud, "_DENSE_SPECTRUM", dense_up_to)
    rng = np.random.default_rng(0)

    def connected(m):
        graph = np.triu(rng.random((m, m)) < 0.15, 1).astype(float)
        graph[np.arange(m - 1), np.arange(1, m)] = 1.0  # a path through all: connected
        return graph + graph.T

    one, other = connected(60), connected(45)
    blocks = scipy.sparse.block_diag([one, other, one, one]).toarray()
    order = rng.permutation(len(blocks))
    affinity, _ = normalized_affinity(scipy.sparse.csr_matrix(blocks[np.ix_(order, order)]))
    values, vectors = np.linalg.eigh(affinity.toarray())
    for k in (4, 5, 8, 11, 15):  # each ends at a gap: no eigenvalue cut in two (15: dense for the 60-point ones)
        assert values[-k] - values[-k - 1] > 1e-6
        found, basis = leading_eigenpairs(affinity, k)
        np.testing.assert_allclose(found, values[-k:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(basis.T @ basis, np.eye(k), rtol=0, atol=1e-12)
        np.testing.assert_allclose(basis @ basis.T, vectors[:, -k:] @ vectors[:, -k:].T, rtol=0, atol=1e-10)
        np.testing.assert_allclose(affinity @ basis, basis * found, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "shape, k, match",
    [
        ((4, 3), 1, "square"),
        ((4, 4), 0, r"k must be an integer in \[1, 3\]"),
        ((4, 4), 4, "k must"),
        ((4, 4), 1.0, "k"),
    ],
)
def test_the_leading_eigenpairs_bad_arguments_are_named(shape, k, match):
    import scipy.sparse

    from lvgp.kernels.point_cloud import leading_eigenpairs

    with pytest.raises(ValueError, match=match):
        leading_eigenpairs(scipy.sparse.csr_matrix(shape), k)


def test_lanczos_on_a_larger_cloud_gives_the_dense_eigendecompositions_kernel(monkeypatch):
    import scipy.sparse.linalg

    cloud, x = _cloud(300, seed=3), _cloud(7, seed=4)
    dense = ClusterKernel(cloud, n_components=12, n_neighbors=6)
    monkeypatch.setattr(point_cloud, "_DENSE_SPECTRUM", 100)
    calls = []
    eigsh = scipy.sparse.linalg.eigsh
    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", lambda *a, **k: calls.append(1) or eigsh(*a, **k))
    lanczos = ClusterKernel(cloud, n_components=12, n_neighbors=6)
    assert calls
    torch.testing.assert_close(lanczos.eigenvalues, dense.eigenvalues, rtol=0, atol=1e-12)
    torch.testing.assert_close(lanczos(x, x).to_dense(), dense(x, x).to_dense(), rtol=1e-10, atol=1e-12)
    calls.clear()
    ClusterKernel(cloud, n_components=80, n_neighbors=6)  # a quarter of the points or more: dense
    assert not calls


def test_lanczos_that_does_not_converge_gives_way_to_the_dense_route_or_says_so(monkeypatch):
    """Where ARPACK does not converge, the dense matrix's leading eigenvectors alone (the same kernel) up to
    _DENSE_SUBSET_SPECTRUM points; above, an error naming the sizes. (The failure is simulated.)"""
    import scipy.sparse.linalg

    cloud, x = _cloud(300, seed=3), _cloud(7, seed=4)
    whole = ClusterKernel(cloud, n_components=12, n_neighbors=6)

    def not_converging(*args, **kwargs):
        raise scipy.sparse.linalg.ArpackNoConvergence("ARPACK error -1: No convergence", [], [])

    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", not_converging)
    monkeypatch.setattr(point_cloud, "_DENSE_SPECTRUM", 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fallback = ClusterKernel(cloud, n_components=12, n_neighbors=6)
    torch.testing.assert_close(fallback(x, x).to_dense(), whole(x, x).to_dense(), rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(point_cloud, "_DENSE_SUBSET_SPECTRUM", 200)
    with pytest.raises(RuntimeError, match="did not converge to 12 eigenvectors of a graph component of 300 points"):
        ClusterKernel(cloud, n_components=12, n_neighbors=6)


def test_the_cluster_kernel_is_the_same_for_the_same_cloud():
    cloud, x = _cloud(80), _cloud(5, seed=9)
    first = ClusterKernel(cloud, n_components=6, n_neighbors=5)(x, x).to_dense()
    assert torch.equal(first, ClusterKernel(cloud.clone(), n_components=6, n_neighbors=5)(x, x).to_dense())


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"cloud": [[0.0, 1.0]]}, TypeError, "cloud must be a floating-point tensor"),
        ({"cloud": torch.tensor([[0.0, 1.0]] * 30 + [[float("inf"), 0.0]], dtype=D)}, ValueError, r"rows \[30\]"),
        ({"n_components": 40}, ValueError, "n_components must be an integer in"),
        ({"n_neighbors": 0}, ValueError, "n_neighbors must be an integer in"),
        ({"power": -1.0}, ValueError, "power must be a finite number at least 0"),
        ({"batch_shape": torch.Size([2])}, ValueError, "batch_shape must be empty"),
    ],
)
def test_the_cluster_kernels_bad_arguments_are_named(kwargs, error, match):
    arguments = {"cloud": _cloud(), "n_components": 3, "n_neighbors": 4, **kwargs}
    with pytest.raises(error, match=match):
        ClusterKernel(arguments.pop("cloud"), **arguments)


class TestClusterKernelAsAGpytorchKernel(TestPointCloudKernelAsAGpytorchKernel):
    def create_kernel_no_ard(self, cloud_dim=2, **kwargs):
        cloud = torch.randn(30, cloud_dim, generator=torch.Generator().manual_seed(0))
        return ClusterKernel(cloud, n_components=4, n_neighbors=3, **kwargs)

    def test_kernel_dtype_device(self):  # no parameters: its dtype is its buffers'
        kernel = self.create_kernel_no_ard()
        x = self.create_data_no_batch()
        assert kernel(x, x).to_dense().dtype == x.dtype
        kernel.double()
        assert kernel.cloud.dtype == torch.float64 and kernel(x.double(), x.double()).to_dense().dtype == torch.float64


def test_a_classifier_with_the_pools_cluster_kernel_saves_and_loads_bit_exactly(tmp_path, tiny_encoder):
    """The docs' recipe (docs/models/uncertainty.md, "Unlabelled texts in the kernel"): the tf-idf
    cosine, the encoder's cosine and the pool's cluster kernel, each with its own weight; saved, then
    loaded with the same factory, it predicts the same to the bit."""
    import warnings

    import numpy as np

    import lvgp
    from lvgp.bow.weighting import idf_weights
    from lvgp.kernels import BagOfWordsKernel
    from lvgp.kernels.packed import beside_encoder

    texts = ["a great film", "an awful plot", "the striker scored", "a late goal won it"]
    labels = ["film", "film", "football", "football"]
    pool = ["a dull plot", "a fine cast", "great acting", "the keeper saved", "a red card", "the coach resigned"]
    encoder = tiny_encoder(None, 0)  # what the pretrained encoder's name resolves to in this test
    vectors = torch.as_tensor(np.asarray(encoder.encode(texts + pool)), dtype=D)
    cluster = ClusterKernel(torch.nn.functional.normalize(vectors, dim=-1), n_components=4, n_neighbors=3)

    def factory(num_words, documents):
        bow = BagOfWordsKernel(num_words, "cosine", word_weights=idf_weights(documents, num_words)).double()
        return beside_encoder(bow, documents, encoder.dim, ("cosine", cluster))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = lvgp.LDKGPClassifier(
            factory, sentence_encoder="all-MiniLM-L6-v2", class_hyperparameters="shared", random_state=0
        )
        clf.fit(texts, labels)
        weights = [m for m in clf.model_.covar_module.modules() if isinstance(m, ScaleKernel)]
        assert any(isinstance(m.base_kernel, FeatureKernel) and m.base_kernel.base is cluster for m in weights)
        clf.save(tmp_path / "clf.pt")
        again = lvgp.LDKGPClassifier.load(tmp_path / "clf.pt", kernel=factory)
        probe = ["a fine film", "a goal", "the plot"]
        np.testing.assert_array_equal(clf.predict_proba(probe), again.predict_proba(probe))


def test_the_cluster_kernel_keeps_the_coordinates_of_its_last_inputs():
    """A fit calls the kernel on its training inputs at every step: their coordinates are computed once
    (compared by value) and are those a fresh computation gives, to the bit."""
    cloud, x = _cloud(60), _cloud(7, seed=11)
    kernel = ClusterKernel(cloud, n_components=4, n_neighbors=5)
    calls = []
    compute = kernel._coordinates
    kernel._coordinates = lambda t: (calls.append(t.shape), compute(t))[1]
    first = kernel(x, x).to_dense()
    again = kernel(x.clone(), x.clone()).to_dense()
    diag = kernel(x.clone(), diag=True)
    assert len(calls) == 1 and torch.equal(first, again)
    fresh = ClusterKernel(cloud, n_components=4, n_neighbors=5)
    assert torch.equal(first, fresh(x, x).to_dense()) and torch.equal(diag, fresh(x, diag=True))
    kernel(x + 1e-3, x + 1e-3).to_dense()
    assert len(calls) == 2  # other values: computed


def test_the_cluster_kernel_remembers_each_inputs_neighbours(monkeypatch):
    """An active learner scores the same pool texts round after round, a different subset each time: each
    input's cloud neighbours are computed once (by its values), and a later call on a subset in another order,
    among new inputs and in a batch shape, gives what a fresh kernel gives, to the bit; past the memory's limit
    it starts afresh, with the same values."""
    cloud, pool = _cloud(80), _cloud(30, seed=21)
    kernel = ClusterKernel(cloud, n_components=4, n_neighbors=5)
    computed = []
    real = point_cloud.nearest_cloud_points
    monkeypatch.setattr(
        point_cloud, "nearest_cloud_points", lambda q, c, k, **kw: (computed.append(len(q)), real(q, c, k, **kw))[1]
    )
    torch.testing.assert_close(kernel.nearest(pool), real(pool, cloud, 5), rtol=0, atol=0)
    subset = torch.cat([pool[[17, 3, 3, 25]], _cloud(2, seed=22)])  # a repeat, two new inputs
    fresh = ClusterKernel(cloud, n_components=4, n_neighbors=5)
    computed.clear()
    got = kernel(subset, pool[:6]).to_dense()
    assert computed == [2]  # the two new inputs alone
    assert torch.equal(got, fresh(subset, pool[:6]).to_dense())
    batch = torch.stack([pool[:4], pool[4:8]])
    assert torch.equal(kernel.nearest(batch), real(batch.reshape(8, -1), cloud, 5).reshape(2, 4, 5))
    new = _cloud(2, seed=24)
    computed.clear()
    repeated = new[[0, 1, 0, 0]]  # an input read twice in one call is searched for once
    assert torch.equal(kernel.nearest(repeated), real(repeated, cloud, 5))
    assert computed == [2]
    # an estimator moves its kernel at every fit: a move that leaves the cloud as it was keeps the memory
    computed.clear()
    kernel.double().to("cpu")(pool, pool).to_dense()
    assert computed == []
    kernel.float()(pool.float(), pool.float()).to_dense()  # a converted cloud: computed again
    assert computed == [30]
    kernel = ClusterKernel(cloud, n_components=4, n_neighbors=5)
    monkeypatch.setattr(point_cloud, "_NEAREST_MEMO_ROWS", 32)
    kernel.nearest(pool)
    computed.clear()
    assert torch.equal(kernel.nearest(_cloud(10, seed=23)), real(_cloud(10, seed=23), cloud, 5))
    assert computed == [10] and len(kernel._neighbour_index) == 10  # 30 + 10 over the limit: started afresh


def test_kept_results_are_forgotten_when_the_kernels_tensors_are_loaded_or_converted():
    """The kept coordinates and deformation terms are computed from the kernel's own tensors: after
    ``load_state_dict`` of another cloud's kernel, the loaded kernel gives that kernel's values (it gave
    the first cloud's kept ones), and after ``.float()`` the coordinates are computed again."""
    first, second, x = _cloud(60), _cloud(60, seed=12), _cloud(7, seed=13)
    for make in (
        lambda cloud: ClusterKernel(cloud, n_components=4, n_neighbors=5),
        lambda cloud: PointCloudKernel(_rbf(), cloud, n_neighbors=5),
    ):
        kernel, other = make(first), make(second)
        before = kernel(x, x).to_dense()
        kernel.load_state_dict(other.state_dict())
        after = kernel(x, x).to_dense()
        assert not torch.equal(after, before)
        torch.testing.assert_close(after, other(x, x).to_dense())
    kernel = ClusterKernel(first, n_components=4, n_neighbors=5)
    calls = []
    compute = kernel._coordinates
    kernel._coordinates = lambda t: (calls.append(t.shape), compute(t))[1]
    kernel(x, x).to_dense()
    kernel.float()
    kernel(x, x).to_dense()
    assert len(calls) == 2
