"""Property-based tests (hypothesis) of the LDK kernel in all 9 embedding x level-2
combinations, and of the estimators' input policies.

Kernel: symmetry and positive semi-definiteness of the Gram, ``diag`` equal to the full
Gram's diagonal, invariance to word order and to extra padding, ``x1``/``x2`` of different
widths against the loop reference (thesis eqs. 3.9-3.11), batch shapes (a batched kernel's
diagonal when the batch size equals the number of documents), empty inputs, any integer
dtype, bad ids rejected naming their rows. Estimators: deterministic predictions and
bit-exact save/load, bad ids rejected.

Examples per test come from the hypothesis profile (``HYPOTHESIS_PROFILE``: ``ci``, the
default, 25 examples; ``dev`` 200), registered in ``tests/conftest.py``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lvgp import LBFGS, PAD, Adam, GPLVSMRegressor, LatentDistributionKernel, RMSprop
from lvgp.base.numerics import default_dtype
from lvgp.kernels import LDKSpec

from . import reference as ref

COMBOS = list(itertools.product(["linear", "rbf", "poly"], repeat=2))
V, Q = 9, 2
HP = dict(gamma=0.8, a=0.5, b=2, zeta=0.7, c=0.5, d=2)


def kernel(embedding: str, level2: str, **kwargs) -> LatentDistributionKernel:
    with default_dtype(torch.float64):  # hyper-parameters set in float64, not rounded through float32
        return LatentDistributionKernel(V, Q, embedding, level2, seed=3, **HP, **kwargs)


@st.composite
def documents(draw, min_docs: int = 1, max_docs: int = 5, max_len: int = 5):
    """A list of non-empty documents (word-id lists) over ``V`` words."""
    n = draw(st.integers(min_docs, max_docs))
    return [draw(st.lists(st.integers(0, V - 1), min_size=1, max_size=max_len)) for _ in range(n)]


def padded(docs: list[list[int]], extra: int = 0) -> torch.Tensor:
    width = max(len(d) for d in docs) + extra
    return torch.tensor([d + [PAD] * (width - len(d)) for d in docs], dtype=torch.long)


def gram(k: LatentDistributionKernel, x1: torch.Tensor, x2: torch.Tensor | None = None) -> torch.Tensor:
    with torch.no_grad():
        return k(x1, x2).to_dense()


@pytest.mark.parametrize("embedding,level2", COMBOS)
@given(docs=documents())
def test_gram_is_symmetric_psd_and_its_diagonal_is_diag(embedding, level2, docs):
    k = kernel(embedding, level2)
    x = padded(docs)
    K = gram(k, x)
    torch.testing.assert_close(K, K.mT, rtol=1e-12, atol=1e-12)
    eigenvalues = torch.linalg.eigvalsh(K)
    assert eigenvalues.min() >= -1e-9 * max(1.0, eigenvalues.abs().max().item())
    with torch.no_grad():
        torch.testing.assert_close(k(x, diag=True), K.diagonal(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("embedding,level2", COMBOS)
@given(docs=documents(), extra=st.integers(0, 3), data=st.data())
def test_word_order_and_padding_change_nothing(embedding, level2, docs, extra, data):
    k = kernel(embedding, level2)
    shuffled = [data.draw(st.permutations(d)) for d in docs]
    torch.testing.assert_close(gram(k, padded(docs)), gram(k, padded(shuffled, extra)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("embedding,level2", COMBOS)
@given(docs1=documents(max_docs=3, max_len=3), docs2=documents(max_docs=3, max_len=6))
def test_different_widths_match_the_loop_reference(embedding, level2, docs1, docs2):
    k = kernel(embedding, level2)
    x1, x2 = padded(docs1), padded(docs2)
    expected = ref.ldk_gram(k.latent.detach().numpy(), x1.numpy(), x2.numpy(), embedding, level2, **HP)
    torch.testing.assert_close(gram(k, x1, x2), torch.from_numpy(expected), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("embedding,level2", COMBOS)
@given(docs=documents(min_docs=1, max_docs=4), batch=st.integers(1, 4))
def test_batched_kernel_shapes_and_diagonal(embedding, level2, docs, batch):
    k = kernel(embedding, level2, batch_shape=torch.Size([batch]))
    x = padded(docs)
    n = x.shape[0]
    full = gram(k, x)
    assert full.shape == (batch, n, n)
    with torch.no_grad():
        diag = k(x, diag=True)
    assert diag.shape == (batch, n)  # also when batch == n (gpytorch's heuristic would take a diagonal)
    torch.testing.assert_close(diag, full.diagonal(dim1=-2, dim2=-1), rtol=1e-10, atol=1e-12)
    xb = x.expand(batch, *x.shape)
    torch.testing.assert_close(gram(k, xb), full, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("embedding,level2", COMBOS)
@given(docs=documents(), dtype=st.sampled_from([torch.int8, torch.int16, torch.int32, torch.uint8]))
def test_any_integer_dtype_and_empty_inputs(embedding, level2, docs, dtype):
    k = kernel(embedding, level2)
    x = padded(docs)
    small = x.clamp_min(0).to(dtype) if dtype == torch.uint8 else x.to(dtype)  # uint8 cannot hold PAD
    torch.testing.assert_close(gram(k, small), gram(k, small.long()), rtol=0, atol=0)
    empty = torch.empty(0, x.shape[1], dtype=torch.long)
    assert gram(k, empty, x).shape == (0, x.shape[0]) and gram(k, empty).shape == (0, 0)


@given(docs=documents(), row=st.data(), bad=st.sampled_from([V, V + 5, -2, -7]))
def test_bad_ids_are_rejected_naming_the_rows(docs, row, bad):
    k = kernel("rbf", "linear")
    x = padded(docs)
    i = row.draw(st.integers(0, x.shape[0] - 1))
    x[i, 0] = bad
    with pytest.raises(ValueError, match=rf"rows \[{i}\]"):
        k(x)
    with pytest.raises(TypeError, match="integer word ids"):
        k(x.double())


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=40, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=15), random_state=0).fit(
            corpus.texts, corpus.y
        )
    path = tmp_path_factory.mktemp("saved") / "model.pt"
    est.save(path)
    return est, GPLVSMRegressor.load(path), corpus


@given(rows=st.lists(st.integers(0, 39), min_size=1, max_size=8))
def test_estimator_predictions_are_deterministic_and_survive_save_load(fitted, rows):
    est, loaded, corpus = fitted
    texts = [corpus.texts[i] for i in rows]
    mean, std = est.predict(texts, return_std=True)
    again_mean, again_std = est.predict(texts, return_std=True)
    loaded_mean, loaded_std = loaded.predict(texts, return_std=True)
    np.testing.assert_array_equal(mean, again_mean)
    np.testing.assert_array_equal(std, again_std)
    np.testing.assert_array_equal(mean, loaded_mean)
    np.testing.assert_array_equal(std, loaded_std)


@given(bad=st.integers(-50, -2) | st.integers(200, 10**6))
def test_estimator_rejects_bad_ids_in_padded_input(fitted, bad):
    est, _, _ = fitted
    x = torch.tensor([[0, 1, PAD], [2, bad, PAD]])
    with pytest.raises(ValueError, match=r"rows \[1\]"):
        GPLVSMRegressor(num_words=10, optimizer=Adam(max_iter=1)).fit(x, [0.0, 1.0])


# ------------------------------------------------------------------ issue 28: the surfaces the first fuzz missed


@pytest.fixture(scope="module")
def clgp_fitted():
    import pyro

    from lvgp.models.clgp import CLGP

    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 2, 40), rng.integers(0, 3, 40), rng.integers(0, 2, 40)], 1)
    pyro.clear_param_store()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CLGP(
            num_inducing=6,
            elbo_samples=2,
            optimizer=RMSprop(max_iter=20),
            impute_iter=10,
            dtype="float64",
            random_state=0,
        ).fit(codes, [2, 3, 2])


@st.composite
def partial_rows(draw):
    """Rows of the (2, 3, 2) table with at least one observed value (-1 = missing)."""
    n = draw(st.integers(1, 5))
    rows = [[draw(st.integers(-1, k - 1)) for k in (2, 3, 2)] for _ in range(n)]
    return np.array([r if max(r) >= 0 else [0, r[1], r[2]] for r in rows])


@given(rows=partial_rows(), data=st.data())
def test_clgp_rows_are_equivariant_and_duplicates_agree(clgp_fitted, rows, data):
    """Each row's imputation is a function of that row alone: permuting the batch permutes the
    probabilities, and a duplicated row gets exactly its twin's."""
    order = np.array(data.draw(st.permutations(range(len(rows)))))
    twice = np.vstack([rows, rows[:1]])
    straight = clgp_fitted.predict_proba(rows)
    permuted = clgp_fitted.predict_proba(rows[order])
    doubled = clgp_fitted.predict_proba(twice)
    for a, b, c in zip(straight, permuted, doubled):
        np.testing.assert_allclose(a[order], b, rtol=0, atol=1e-12)
        np.testing.assert_allclose(c[-1], c[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-12)


@pytest.mark.parametrize("embedding", ["linear", "rbf", "poly"])
@given(
    docs=documents(max_docs=4),
    scale=st.sampled_from([0.0, 1e-150, 1e-15, 1e-3, 1.0, 1e3, 1e30]),
    weight_exponent=st.integers(-300, 300),
)
def test_cosine_at_the_extremes(embedding, docs, scale, weight_exponent):
    """The cosine level 2 at any vector scale (zero included) and word weights of any common
    scale: values in [-1, 1], unit or zero diagonal, ``diag`` equal to the Gram's diagonal, the
    weights' common scale immaterial, gradients finite."""
    x = padded(docs)
    k = kernel(embedding, "cosine")
    with torch.no_grad():
        k.latent = k.latent * scale
    weighted = kernel(embedding, "cosine", word_weights=torch.full((V,), 10.0**weight_exponent, dtype=torch.float64))
    with torch.no_grad():
        weighted.latent = k.latent
        g, d = gram(k, x), k(x, diag=True)
        assert g.abs().max() <= 1 + 1e-12
        torch.testing.assert_close(d, g.diagonal(), rtol=0, atol=1e-12)
        assert bool(((d - 1).abs() < 1e-12).logical_or(d == 0).all())
        torch.testing.assert_close(gram(weighted, x), g, rtol=0, atol=1e-12)
    k.zero_grad()
    k(x).to_dense().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in k.parameters() if p.grad is not None)


@given(
    name=st.sampled_from(["num_words", "latent_dim", "init_scale", "projection_scale"]),
    value=st.sampled_from([0, -1, 2.5, float("nan"), float("inf"), "3", None, True]),
)
def test_word_vector_arguments_are_checked_by_name(name, value):
    """Every bad argument of :func:`~lvgp.kernels.make_word_vectors` is a ``TypeError`` or
    ``ValueError`` naming it; good ones build vectors of the promised shape."""
    from lvgp.kernels import make_word_vectors

    args = {"num_words": 5, "latent_dim": 2, "init_scale": 1.0, "projection_scale": 1.0}
    integer = name in ("num_words", "latent_dim")
    good = (value is None and name == "init_scale") or (  # None: the prior's scale
        not isinstance(value, (bool, str))
        and value is not None
        and np.isfinite(value)
        and (value >= 1 and float(value).is_integer() if integer else value >= 0)
    )
    features = np.ones((5, 3)) if name == "projection_scale" else None
    if good:
        vectors = make_word_vectors(**{**args, name: value}, word_features=features).vectors
        assert vectors.shape == (
            int(args["num_words"] if name != "num_words" else value),
            2 if name != "latent_dim" else int(value),
        )
    else:
        with pytest.raises((TypeError, ValueError), match=name):
            make_word_vectors(**{**args, name: value}, word_features=features)
