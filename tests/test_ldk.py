"""LatentDistributionKernel: against the loop reference of thesis eqs. 3.9-3.11, its
gradients, invariants, gpytorch's own kernel test-suite, composition and bad input."""

from __future__ import annotations

import itertools
import math
import pickle
import unittest

import gpytorch
import numpy as np
import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel
from torch.func import functional_call

from lvgp import PAD, LatentDistributionKernel
from lvgp.bow.padded import pad_to_width
from lvgp.kernels import EMBEDDINGS, LEVEL2_KERNELS, make_word_vectors

from . import reference as ref
from .kernel_suite import NUM_WORDS, WordIndexKernelTestCase


@pytest.fixture(autouse=True)
def float64_default():
    """Build kernels directly in float64 (gpytorch creates parameters in the default dtype)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


COMBOS = list(itertools.product(EMBEDDINGS, LEVEL2_KERNELS))
HP = dict(gamma=0.7, a=0.5, b=3, zeta=1.3, c=0.4, d=2)
V, Q = 12, 3


def gram_at(kernel, latent, *xs):
    """The kernel's dense Gram with ``latent`` substituted, evaluated eagerly (a lazy
    gpytorch kernel tensor would evaluate after functional_call restored the parameters)."""
    with gpytorch.settings.lazily_evaluate_kernels(False):
        return functional_call(kernel, {"word_vectors.raw_latent": latent}, xs).to_dense()


def make_kernel(embedding="rbf", level2="linear", latent_init=None, **kwargs):
    options = {**HP, "seed": 1, **kwargs}
    kernel = LatentDistributionKernel(V, Q, embedding, level2, **options).double()
    if latent_init is not None:
        kernel.latent = latent_init
    return kernel


def kernel_hp(kernel) -> dict:
    """The kernel's actual hyper-parameter values (set in float32 at construction)."""
    hp = {}
    for name in ("gamma", "a", "b", "zeta", "c", "d"):
        try:
            value = getattr(kernel, name)
        except AttributeError:  # a hyper-parameter of an embedding or level-2 kernel not chosen
            continue
        hp[name] = value if isinstance(value, int) else value.item()
    return hp


def ref_gram(kernel, x1, x2):
    X = kernel.latent.detach().numpy()
    return torch.from_numpy(
        ref.ldk_gram(X, x1.numpy(), x2.numpy(), kernel.embedding_name, kernel.level2.name, **kernel_hp(kernel))
    )


# rows with repeated words, padding in different places, lengths 1..4
X1 = torch.tensor([[0, 1, 1, PAD], [2, 3, 4, 5], [6, PAD, PAD, PAD], [PAD, 7, 7, 7]])
X2 = torch.tensor([[7, 8, PAD], [0, 0, 11], [1, PAD, PAD], [9, 10, 2], [3, 3, 3]])  # L2 != L1


@pytest.mark.parametrize("embedding,level2", COMBOS)
def test_matches_loop_reference(embedding, level2):
    k = make_kernel(embedding, level2)
    with torch.no_grad():
        torch.testing.assert_close(k(X1, X2).to_dense(), ref_gram(k, X1, X2), rtol=0, atol=1e-9)
        torch.testing.assert_close(k(X1).to_dense(), ref_gram(k, X1, X1), rtol=0, atol=1e-9)
        torch.testing.assert_close(k(X2, X1).to_dense(), ref_gram(k, X2, X1), rtol=0, atol=1e-9)
        # diag, for x1 == x2 and for two different sets with as many documents
        torch.testing.assert_close(k(X1, diag=True), ref_gram(k, X1, X1).diagonal(), rtol=0, atol=1e-9)
        x2 = X2[:4]
        torch.testing.assert_close(k(X1, x2, diag=True), ref_gram(k, X1, x2).diagonal(), rtol=0, atol=1e-9)


@pytest.mark.parametrize("embedding,level2", COMBOS)
def test_batched_inputs_and_batched_kernel(embedding, level2):
    g = torch.Generator().manual_seed(0)
    xb = torch.randint(0, V, (2, 3, 5), generator=g)
    xb[..., 3:] = PAD
    xb[0, 1, 1:] = PAD
    k = make_kernel(embedding, level2)
    with torch.no_grad():
        out = k(xb, X2).to_dense()
        assert out.shape == (2, 3, X2.shape[0])
        for i in range(2):
            torch.testing.assert_close(out[i], ref_gram(k, xb[i], X2), rtol=0, atol=1e-9)
        # a kernel with batch_shape [2] has separate latent vectors per batch member
        kb = make_kernel(embedding, level2, batch_shape=torch.Size([2]))
        kb.latent = torch.randn(2, V, Q, dtype=torch.float64, generator=g)
        out = kb(xb).to_dense()
        diag = kb(xb, diag=True)
        for i in range(2):
            single = make_kernel(embedding, level2, latent_init=kb.latent[i].detach())
            torch.testing.assert_close(out[i], ref_gram(single, xb[i], xb[i]), rtol=0, atol=1e-9)
            torch.testing.assert_close(diag[i], ref_gram(single, xb[i], xb[i]).diagonal(), rtol=0, atol=1e-9)


def test_gpytorch_embedding_kernel_matches_builtin_rbf():
    emb = RBFKernel().double()
    emb.lengthscale = 0.7**-0.5  # gamma = 1 / lengthscale^2
    k_custom = LatentDistributionKernel(V, Q, emb, "rbf", zeta=1.3, seed=1).double()
    k_builtin = make_kernel("rbf", "rbf")
    with torch.no_grad():
        torch.testing.assert_close(k_custom(X1, X2).to_dense(), k_builtin(X1, X2).to_dense(), rtol=0, atol=1e-12)
        torch.testing.assert_close(k_custom(X1, diag=True), k_builtin(X1, diag=True), rtol=0, atol=1e-12)
    # its parameters are part of the kernel and get gradients
    k_custom(X1, X2).to_dense().sum().backward()
    assert emb.raw_lengthscale.grad is not None and k_custom.word_vectors.raw_latent.grad is not None


@pytest.mark.parametrize("embedding,level2", COMBOS)
def test_gradients_match_finite_differences(embedding, level2):
    k = make_kernel(embedding, level2)
    latent = k.word_vectors.raw_latent.detach().clone().requires_grad_(True)

    def gram(lat):
        return gram_at(k, lat, X1, X2)

    def self_gram(lat):
        return gram_at(k, lat, X1)

    assert torch.autograd.functional.jacobian(gram, latent).abs().sum() > 0  # the check is not vacuous
    assert torch.autograd.gradcheck(gram, (latent,), eps=1e-6, atol=1e-6)
    assert torch.autograd.gradcheck(self_gram, (latent,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("embedding", ["linear", "rbf"])
def test_gradients_match_thesis_closed_forms(embedding):
    """Eq. 3.12 (LIN-LIN) and eq. 3.15 (RBF-LIN)."""
    k = make_kernel(embedding, "linear")
    X = k.latent.detach().numpy()
    jac = torch.autograd.functional.jacobian(
        lambda lat: gram_at(k, lat, X1, X2), k.word_vectors.raw_latent.detach().clone()
    )
    assert jac.abs().sum() > 0  # n1 x n2 x V x q
    for i, j in itertools.product(range(X1.shape[0]), range(X2.shape[0])):
        for m in range(V):
            if embedding == "linear":
                expected = ref.grad_lin_lin(X, X1[i].numpy(), X2[j].numpy(), m)
            else:
                expected = ref.grad_rbf_lin(X, X1[i].numpy(), X2[j].numpy(), m, k.gamma.item())
            np.testing.assert_allclose(jac[i, j, m].numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("embedding,level2", COMBOS)
def test_symmetric_and_positive_semidefinite(embedding, level2):
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, V, (30, 6), generator=g)
    x[::3, 4:] = PAD
    k = make_kernel(embedding, level2)
    with torch.no_grad():
        K = k(x).to_dense()
    torch.testing.assert_close(K, K.mT, rtol=1e-13, atol=1e-13)
    eig = torch.linalg.eigvalsh(K)
    assert eig.min() >= -1e-9 * max(1.0, eig.max().item())


@pytest.mark.parametrize("embedding,level2", COMBOS)
def test_padding_and_word_order_invariance(embedding, level2):
    k = make_kernel(embedding, level2)
    g = torch.Generator().manual_seed(4)
    perm = torch.stack([torch.randperm(X1.shape[1], generator=g) for _ in range(X1.shape[0])])
    shuffled = X1.gather(1, perm)  # words (and padding) moved within every row
    wider = torch.cat([X1, torch.full((X1.shape[0], 3), PAD)], dim=1)
    with torch.no_grad():
        base = k(X1, X2).to_dense()
        torch.testing.assert_close(k(shuffled, X2).to_dense(), base, rtol=0, atol=1e-12)
        torch.testing.assert_close(k(wider, X2).to_dense(), base, rtol=0, atol=1e-12)
        torch.testing.assert_close(k(wider, diag=True), k(X1, diag=True), rtol=0, atol=1e-12)


def test_duplicate_documents_and_single_word_documents():
    k = make_kernel("rbf", "rbf")
    x = torch.tensor([[4, PAD], [4, PAD], [4, 4]])  # {4}, {4}, {4, 4} are the same distribution
    with torch.no_grad():
        torch.testing.assert_close(k(x).to_dense(), torch.ones(3, 3, dtype=torch.float64), rtol=0, atol=1e-12)


class TestLDKWithGPyTorchSuite(WordIndexKernelTestCase, unittest.TestCase):
    """gpytorch's own kernel tests with word-index data factories (as botorch does for
    its categorical kernel). Widths are >= 9 so the active-dims tests keep every row non-empty."""

    def create_kernel_no_ard(self, **kwargs):
        return LatentDistributionKernel(NUM_WORDS, 2, "rbf", "rbf", seed=0, **kwargs)


def test_hyperparameters_are_settable_constrained_properties():
    k = LatentDistributionKernel(V, Q, "poly", "rbf", a=0.3, b=3, zeta=2.0)
    assert math.isclose(k.a.item(), 0.3, rel_tol=1e-6) and math.isclose(k.zeta.item(), 2.0, rel_tol=1e-6)
    k.zeta = 0.5
    assert math.isclose(k.zeta.item(), 0.5, rel_tol=1e-6)
    assert k.b == 3
    with pytest.raises(AttributeError, match="gamma is not a hyper-parameter of embedding='poly'"):
        _ = k.gamma
    with pytest.raises(ValueError, match="zeta must lie in Positive"):
        k.zeta = -1.0
    with pytest.raises(ValueError, match="b must be a positive integer"):
        k.b = 1.5
    with pytest.raises(ValueError, match="d must be a positive integer"):
        LatentDistributionKernel(V, Q, "rbf", "poly", d=0)
    assert {n for n, _ in k.named_parameters()} == {"embedding.raw_a", "level2.raw_zeta", "word_vectors.raw_latent"}
    with pytest.raises(ValueError, match="embedding must be one of"):
        LatentDistributionKernel(V, Q, "cosine")
    with pytest.raises(ValueError, match="level2 must be one of"):
        LatentDistributionKernel(V, Q, "rbf", "laplace")


def test_latent_prior_and_initialization():
    k = LatentDistributionKernel(500, 4, rho=25.0, seed=0)
    assert math.isclose(k.rho, 25.0, rel_tol=1e-6)
    # initialised from the prior N(0, 1/rho): standard deviation 0.2
    assert abs(k.latent.std().item() - 0.2) < 0.01
    # the registered prior is log N(x | 0, 1/rho) summed over all entries
    prior, closure, _ = k.word_vectors._priors["latent_prior"]
    X = k.latent.detach().double()
    expected = (-0.5 * 25.0 * X.pow(2) + 0.5 * math.log(25.0 / (2 * math.pi))).sum()
    torch.testing.assert_close(prior.log_prob(closure(k.word_vectors)).sum().double(), expected, rtol=1e-5, atol=1e-3)
    k.rho = 4.0
    assert math.isclose(k.rho, 4.0, rel_tol=1e-6)
    # seeded initialisation is reproducible; an array initialisation is taken as given
    again = LatentDistributionKernel(500, 4, rho=25.0, seed=0)
    torch.testing.assert_close(again.latent, k.latent)
    init = np.arange(500 * 4, dtype=float).reshape(500, 4)
    torch.testing.assert_close(
        LatentDistributionKernel(word_vectors=make_word_vectors(500, 4, init=init)).latent.double(),
        torch.from_numpy(init),
    )
    with pytest.raises(ValueError, match=r"latent\) must have shape \(num_words, latent_dim\)"):
        make_word_vectors(500, 4, init=np.zeros((3, 4)))
    with pytest.raises(TypeError, match=r"unknown arguments \['latent_init'\] \(latent_init: build the vectors"):
        LatentDistributionKernel(500, 4, latent_init=init)
    with pytest.raises(ValueError, match="rho must be a positive"):
        LatentDistributionKernel(500, 4, rho=0.0)
    assert LatentDistributionKernel(5, 2, rho=None).rho is None


def test_composition_scale_sum_product():
    k_rbf = make_kernel("rbf", "linear")
    k_lin = make_kernel("linear", "poly", seed=2)
    scaled = ScaleKernel(k_rbf).double()
    scaled.outputscale = 2.5
    with torch.no_grad():
        a, b = k_rbf(X1, X1).to_dense(), k_lin(X1, X1).to_dense()
        torch.testing.assert_close(scaled(X1).to_dense(), 2.5 * a)
        torch.testing.assert_close((scaled + k_lin)(X1).to_dense(), 2.5 * a + b)
        torch.testing.assert_close((k_rbf * k_lin)(X1).to_dense(), a * b)
        torch.testing.assert_close((scaled + k_lin)(X1, diag=True), 2.5 * a.diagonal() + b.diagonal())
        # different widths through a composite: pad first (composites check widths before LDK sees them)
        from lvgp.bow.padded import pad_to_common_width

        p1, p2 = pad_to_common_width(X1, X2)
        torch.testing.assert_close(
            (scaled + k_lin)(p1, p2).to_dense(), 2.5 * k_rbf(X1, X2).to_dense() + k_lin(X1, X2).to_dense()
        )


def test_exact_gp_with_exact_marginal_log_likelihood_is_eq_11():
    """Inside a plain gpytorch ExactGP, n * ExactMarginalLogLikelihood = log p(y|X) + log p(X|rho) (eq. 11 with constants)."""
    g = torch.Generator().manual_seed(5)
    x = torch.randint(0, V, (25, 5), generator=g)
    x[::2, 3:] = PAD
    y = torch.randn(25, generator=g, dtype=torch.float64)

    class Model(gpytorch.models.ExactGP):
        def __init__(self):
            super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = ScaleKernel(LatentDistributionKernel(V, Q, rho=3.0, seed=0))

        def forward(self, inp):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(inp), self.covar_module(inp))

    model = Model().double()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    model.train()
    value = mll(model(x), y) * 25
    ldk = model.covar_module.base_kernel
    with torch.no_grad():
        K_ldk = ldk(x).to_dense().numpy()
    expected = ref.gplvsm_log_posterior(
        K_ldk,
        y.numpy(),
        model.covar_module.outputscale.item(),
        model.likelihood.noise.item(),
        model.mean_module.constant.item(),
        ldk.latent.detach().numpy(),
        3.0,
    )
    assert abs(value.item() - expected) < 1e-8
    # and training it moves the latent vectors and improves the objective
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = -mll(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_bad_input_names_the_argument_and_rows():
    k = make_kernel()
    with pytest.raises(TypeError, match="x1 must hold integer word ids"):
        k(X1.double())
    with pytest.raises(TypeError, match="x2 must hold integer word ids"):
        k(X1, X2.float())
    bad = X1.clone()
    bad[2, 1] = -5
    with pytest.raises(ValueError, match=r"x1 holds negative word ids other than the padding value .* rows \[2\]"):
        k(bad)
    bad = X2.clone()
    bad[1, 0] = V
    with pytest.raises(ValueError, match=r"x2 holds word ids >= num_words=12 .* rows \[1\]"):
        k(X1, bad)
    bad = X1.clone()
    bad[3] = PAD
    with pytest.raises(ValueError, match=r"x1 holds empty documents \(only padding\) in rows \[3\]"):
        k(bad)
    with pytest.raises(ValueError, match="padded word-index tensor"):
        k(torch.tensor([1, 2, 3]))


def test_pickle_and_state_dict_roundtrip():
    k = make_kernel("poly", "rbf")
    again = pickle.loads(pickle.dumps(k))
    with torch.no_grad():
        torch.testing.assert_close(again(X1, X2).to_dense(), k(X1, X2).to_dense(), rtol=0, atol=0)
    fresh = make_kernel("poly", "rbf", seed=99)
    fresh.load_state_dict(k.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(fresh(X1, X2).to_dense(), k(X1, X2).to_dense(), rtol=0, atol=0)


def test_squared_mmd_is_eq_3_3():
    k = make_kernel("rbf", "linear")
    with torch.no_grad():
        D = k.squared_mmd(X1, X2)
    lin = ref_gram(k, X1, X2)
    s1 = ref_gram(k, X1, X1).diagonal()
    s2 = ref_gram(k, X2, X2).diagonal()
    torch.testing.assert_close(D, s1[:, None] + s2[None, :] - 2 * lin, rtol=0, atol=1e-12)


@pytest.mark.parametrize("embedding", ["linear", "rbf", "poly"])
def test_self_inner_matches_the_reference_and_its_gradient(embedding):
    """The word-level diag(C G C^T) path of squared norms equals the loop reference (and the
    padded paired path), values and gradients, on long, heavily padded documents."""
    k = make_kernel(embedding, "linear")
    long_docs = torch.full((3, 40), PAD)
    long_docs[0, :30] = torch.arange(30) % V
    long_docs[1, 5:7] = torch.tensor([3, 3])
    long_docs[2, :1] = 11
    with torch.no_grad():
        torch.testing.assert_close(
            k.self_inner(long_docs), ref_gram(k, long_docs, long_docs).diagonal(), rtol=0, atol=1e-10
        )
    g1 = torch.autograd.grad(k.self_inner(long_docs).sum(), k.word_vectors.raw_latent)[0]
    g2 = torch.autograd.grad(k.paired_inner(long_docs, long_docs).sum(), k.word_vectors.raw_latent)[0]
    torch.testing.assert_close(g1, g2, rtol=1e-10, atol=1e-12)


def _ragged_documents(n: int, num_words: int, width: int, seed: int) -> torch.Tensor:
    """``n`` padded documents of 1..width-1 words (repeats included), padding at the end."""
    g = torch.Generator().manual_seed(seed)
    x = torch.full((n, width), PAD)
    for i in range(n):
        length = int(torch.randint(1, width, (1,), generator=g))
        x[i, :length] = torch.randint(0, num_words, (length,), generator=g)
    return x


@pytest.mark.parametrize("embedding", ["linear", "rbf", "poly"])
def test_both_routes_of_the_squared_norms_match_a_loop(embedding):
    """self_inner's two exact routes -- each document's own Gram in buckets of like widths, and the
    Gram of all distinct words -- equal a loop over the documents, values and gradients."""
    from lvgp.kernels import mean_embedding as me

    docs = _ragged_documents(70, 400, 50, seed=3)
    k = LatentDistributionKernel(400, Q, embedding, seed=2, **HP).double()
    latent = k.latent
    d = me.DocumentSet(*me.document_weights(docs, torch.float64))
    words, _ = d.distinct()
    v = latent.index_select(0, words)
    buckets = d.self_buckets()
    assert len(buckets.buckets) > 1 and buckets.entries < 70 * 49**2
    by_bucket = buckets.inner(v, me.gram_quadratic_forms(k.embedding_gram))
    # the embedding kernel's quadratic forms (the RBF's with its fused gradient)
    by_forms = buckets.inner(v, k.embedding.quadratic_forms)
    b = d.bags()
    rows = b.rows()
    left = me.bag_product(b, k.embedding_gram(v, v))
    by_words = torch.zeros(b.n).index_add_(0, rows, left[rows, b.words] * b.weights)
    loop = []
    for row in docs:
        ids = row[row != PAD]
        w = torch.full((len(ids),), 1.0 / len(ids))
        loop.append(w @ k.embedding_gram(latent[ids], latent[ids]) @ w)
    reference = torch.stack(loop)
    for value in (by_bucket, by_forms, by_words):
        torch.testing.assert_close(value, reference, rtol=1e-12, atol=1e-12)
        grad = torch.autograd.grad(value.sum(), k.word_vectors.raw_latent, retain_graph=True)[0]
        expected = torch.autograd.grad(reference.sum(), k.word_vectors.raw_latent, retain_graph=True)[0]
        torch.testing.assert_close(grad, expected, rtol=1e-10, atol=1e-12)


def test_the_fused_rbf_gram_takes_batched_inputs():
    """rbf_gram's fused path (closed-form backward) on ``b x m x q`` inputs: the elementwise
    formula's values, and gradcheck."""
    from lvgp.kernels.embedding import rbf_gram

    g = torch.Generator().manual_seed(0)
    xa = torch.randn(3, 5, 2, generator=g, requires_grad=True)
    xb = torch.randn(3, 4, 2, generator=g, requires_grad=True)
    gamma = torch.tensor(0.8, requires_grad=True)
    formula = torch.exp(-0.5 * gamma * (xa.unsqueeze(-2) - xb.unsqueeze(-3)).pow(2).sum(-1))
    torch.testing.assert_close(rbf_gram(xa, xb, gamma), formula, rtol=1e-13, atol=1e-14)
    assert torch.autograd.gradcheck(rbf_gram, (xa, xb, gamma))


def test_the_rbf_quadratic_forms_have_the_einsums_values_and_a_checked_gradient():
    """The RBF embedding's fused quadratic forms w^T G w (buckets of the squared norms): the einsum's
    values and autograd's gradients over its Gram, gradcheck in the vectors and gamma, and padding (weight 0 on word 0)
    adds nothing to word 0's gradient."""
    from lvgp.kernels.embedding import EmbeddingKernel, RBFEmbedding

    g = torch.Generator().manual_seed(1)
    table = torch.randn(9, 3, generator=g, dtype=torch.float64, requires_grad=True)
    ids = torch.randint(1, 9, (4, 5), generator=g)
    weights = torch.rand(4, 5, generator=g, dtype=torch.float64)
    ids[0, 3:], weights[0, 3:] = 0, 0.0  # padding
    kernel = RBFEmbedding(gamma=0.7).double()
    fused = kernel.quadratic_forms(table, ids, weights)
    plain = EmbeddingKernel.quadratic_forms(kernel, table, ids, weights)
    assert fused.grad_fn is not None and "RBFQuadraticForms" in type(fused.grad_fn).__name__
    torch.testing.assert_close(fused, plain, rtol=1e-14, atol=1e-15)
    grads = torch.autograd.grad(fused.sum(), (table, kernel.raw_gamma))
    expected = torch.autograd.grad(plain.sum(), (table, kernel.raw_gamma))
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    assert not grads[0][0].any()  # word 0 appears only as padding
    gamma = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t, gm: RBFEmbedding.quadratic_forms(_FixedGamma(gm), t, ids, weights), (table, gamma)
    )


class _FixedGamma:
    """An RBF embedding stand-in whose gamma is a given tensor (for gradcheck in gamma)."""

    def __init__(self, gamma: torch.Tensor) -> None:
        self.gamma = gamma


def test_bag_products_gradient_is_embedding_bags_own():
    """bag_product's gradient (an embedding_bag over the transposed bags) equals embedding_bag's
    own, passes gradcheck, and a word in no document gets a zero row."""
    import torch.nn.functional as F

    from lvgp.kernels import mean_embedding as me

    docs = _ragged_documents(30, 50, 9, seed=4)
    d = me.DocumentSet(*me.document_weights(docs, torch.float64))
    words, _ = d.distinct()
    b = d.bags()
    table = torch.randn(len(words) + 2, 6, dtype=torch.float64, requires_grad=True)  # two rows no bag uses
    out = me.bag_product(b, table)
    reference = F.embedding_bag(b.words, table, b.offsets, per_sample_weights=b.weights, mode="sum")
    torch.testing.assert_close(out, reference, rtol=0, atol=0)
    upstream = torch.randn_like(out)
    (got,) = torch.autograd.grad(out, table, upstream)
    (want,) = torch.autograd.grad(reference, table, upstream)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-14)
    assert not got[-2:].any()
    assert b.transposed(len(table)) is b.transposed(len(table))  # kept with the bags
    assert torch.autograd.gradcheck(lambda t: me.bag_product(b, t), (table,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rbf_gram_entries_below_the_normal_range_are_zero_and_the_rest_exact(dtype):
    """Exponents below -86 (float32) or -707 (float64) give exact zeros, not subnormal numbers (torch's
    exp is 10-25x slower on them); every other entry is torch.exp's to the last bit."""
    from lvgp.kernels.embedding import rbf_gram

    xa = torch.linspace(0, 60, 400, dtype=dtype).unsqueeze(-1)
    xb = torch.zeros(1, 1, dtype=dtype)
    gamma = torch.tensor(1.0, dtype=dtype)
    gram = rbf_gram(xa, xb, gamma).squeeze(-1)
    exponent = -0.5 * (xa.squeeze(-1) ** 2)
    low = -86 if dtype == torch.float32 else -707
    kept = exponent >= low
    assert (~kept).sum() > 50 and kept.sum() > 50
    torch.testing.assert_close(gram[kept], exponent[kept].exp(), rtol=0, atol=0)
    assert not gram[~kept].any()
    tiny = torch.finfo(dtype).tiny
    assert not ((gram > 0) & (gram < tiny)).any()


def test_a_float32_rbf_gram_in_blocks_of_rows_is_the_whole_grams():
    """A large float32 Gram on the CPU is formed in blocks of rows (the product and the elementwise
    steps of each in cache): the values of the whole Gram's operations (to the last bit with this
    machine's MKL; asserted to one unit in the last place, as MKL may take another path elsewhere)."""
    import lvgp.kernels.embedding as emb

    def whole(xa, xb, gamma):
        gram = xa @ xb.mT
        gram.mul_(2).sub_(xa.pow(2).sum(-1).unsqueeze(-1)).sub_(xb.pow(2).sum(-1).unsqueeze(-2))
        return emb._exp_nonpositive_(gram.mul_(0.5 * gamma))

    g = torch.Generator().manual_seed(0)
    # (1957, 2278): 17 blocks of 115 rows left 2, which MKL multiplied by another path before the blocks were even
    for m1, m2, q in [
        (1914, 2222, 32),
        (1957, 2278, 32),
        (700, 401, 7),
        (300, 2**18 // 3 + 5, 3),
        (129, 2**11 + 1, 40),
    ]:
        xa = torch.randn(m1, q, generator=g) * 0.4
        xb = torch.randn(m2, q, generator=g) * 0.4
        gamma = torch.tensor(0.8)
        assert m1 * m2 > emb._RBF_BLOCK  # in blocks
        got, want = emb._rbf_values(xa, xb, gamma), whole(xa, xb, gamma)
        torch.testing.assert_close(got, want, rtol=2**-23, atol=0)
        assert torch.equal(
            emb._rbf_values(xa.double(), xb.double(), gamma.double()), whole(xa.double(), xb.double(), gamma.double())
        )


def test_broadcast_shapes_is_torchs_without_sympy():
    """lvgp.base.shapes.broadcast_shapes agrees with torch.broadcast_shapes, raises where it does,
    and evaluating an LDK in a fresh process imports no sympy (torch's import of it took 0.36 s)."""
    import subprocess
    import sys

    from lvgp.base.shapes import broadcast_shapes

    cases = [((2, 1), (1, 3)), ((),), ((0,), (1,)), ((5, 1, 4), (3, 1)), ((4,), (2, 1, 1), ()), ((1,), (1, 1))]
    for shapes in cases:
        assert broadcast_shapes(*shapes) == torch.broadcast_shapes(*shapes)
    for shapes in [((0,), (3,)), ((2,), (3,)), ((2, 3), (3, 2))]:
        with pytest.raises(RuntimeError):
            torch.broadcast_shapes(*shapes)
        with pytest.raises(RuntimeError, match="do not broadcast"):
            broadcast_shapes(*shapes)
    code = (
        "import sys, torch, lvgp\n"
        "k = lvgp.LatentDistributionKernel(20, 2, 'rbf', level2='cosine', seed=0)\n"
        "x = torch.tensor([[1, 2, -1], [3, 4, 5]])\n"
        "k.squared_rkhs_distance(x, x).sum().backward()\n"
        "print('sympy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("level2", list(LEVEL2_KERNELS))
@pytest.mark.parametrize("identity", [None, "joint", "separate"])
def test_squared_rkhs_distance_is_the_kernels_own_expansion(level2, identity):
    """K(i, i) + K(j, j) - 2 K(i, j) from the kernel's Gram and diagonal, with a document of no
    known word (the zero embedding): the cross Gram's norms serve the diagonal unchanged."""
    options = {} if identity is None else {"identity_weight": 0.6, "identity_form": identity}
    k = make_kernel("rbf", level2, **options)
    x1, x2 = X1.clone(), X2
    x1[2] = PAD
    with torch.no_grad():
        d = k.squared_rkhs_distance(x1, x2, allow_empty=True)
        a, b = torch.full((4, 4), PAD), torch.full((5, 4), PAD)
        a[:, :4], b[:, :3] = x1, x2
        cross, s1, s2 = k.forward(a, b), k.forward(a, a, diag=True), k.forward(b, b, diag=True)
    torch.testing.assert_close(d, (s1[:, None] + s2[None, :] - 2 * cross).clamp_min(0), rtol=0, atol=1e-14)


@pytest.mark.parametrize("embedding,level2", [("rbf", "linear"), ("rbf", "rbf"), ("poly", "poly")])
def test_inputs_repeated_over_a_batch_are_evaluated_once(embedding, level2, monkeypatch):
    """gpytorch expands inputs over a multi-output model's batch (IndependentMultitask
    strategies): the kernel must not form the word Gram once per batch element."""
    k = make_kernel(embedding, level2)
    calls = []
    original = type(k).embedding_gram
    monkeypatch.setattr(type(k), "embedding_gram", lambda self, a, b: calls.append(1) or original(self, a, b))
    with torch.no_grad():
        full, diag, cross = k(X1).to_dense(), k(X1, diag=True), k(X1, X2).to_dense()
        for x1 in (X1.expand(6, *X1.shape), X1.expand(6, *X1.shape).contiguous()):
            calls.clear()
            torch.testing.assert_close(k(x1).to_dense(), full.expand(6, 4, 4), rtol=0, atol=0)
            assert len(calls) == 1
            torch.testing.assert_close(k(x1, diag=True), diag.expand(6, 4), rtol=0, atol=0)
            torch.testing.assert_close(k(x1, X2.expand(6, *X2.shape)).to_dense(), cross.expand(6, 4, 5), rtol=0, atol=0)
        # batch elements that differ are still evaluated separately and correctly
        mixed = torch.stack([X1, X1.flip(0)])
        out = k(mixed, X2).to_dense()
        torch.testing.assert_close(out[1], ref_gram(k, X1.flip(0), X2), rtol=0, atol=1e-9)


@pytest.mark.parametrize("embedding,level2", COMBOS)
def test_word_weights_give_the_weighted_empirical_measure(embedding, level2):
    weights = torch.linspace(0.5, 3.0, V)
    k = make_kernel(embedding, level2, word_weights=weights)
    X = k.latent.detach().numpy()
    expected = ref.ldk_gram(X, X1.numpy(), X2.numpy(), embedding, level2, weights=weights.numpy(), **kernel_hp(k))
    with torch.no_grad():
        torch.testing.assert_close(k(X1, X2).to_dense(), torch.from_numpy(expected), rtol=1e-10, atol=1e-12)
        full = k(X1).to_dense()
        torch.testing.assert_close(k(X1, diag=True), full.diagonal(), rtol=1e-10, atol=1e-12)
    uniform = make_kernel(embedding, level2, word_weights=torch.ones(V))
    with torch.no_grad():
        torch.testing.assert_close(uniform(X1, X2).to_dense(), make_kernel(embedding, level2)(X1, X2).to_dense())
    with pytest.raises(ValueError, match="positive finite weights"):
        make_kernel(embedding, level2, word_weights=torch.zeros(V))


def test_cosine_level2_with_one_hot_word_vectors_is_the_cosine_of_count_vectors():
    """Closed form: with a linear embedding kernel and x_v = e_v (q = V), a document's mean
    embedding is its term-frequency vector, so the "cosine" level-2 kernel is the cosine
    similarity of the two documents' word counts."""
    from sklearn.metrics.pairwise import cosine_similarity

    from lvgp.bow.padded import padded_to_counts

    k = LatentDistributionKernel(V, V, "linear", "cosine").double()
    k.latent = torch.eye(V, dtype=torch.float64)
    expected = cosine_similarity(padded_to_counts(X1, V), padded_to_counts(X2, V))
    torch.testing.assert_close(k(X1, X2).to_dense(), torch.from_numpy(expected), rtol=0, atol=1e-12)
    torch.testing.assert_close(k(X1, diag=True), torch.ones(len(X1), dtype=torch.float64), rtol=0, atol=1e-12)


@pytest.mark.parametrize("embedding,level2", [("rbf", "linear"), ("poly", "cosine"), ("linear", "rbf")])
def test_diagonal_of_long_documents_against_others_goes_through_the_words_gram(embedding, level2):
    """``diag=True`` of two different sets of long, heavily padded documents: the paired inner
    products through the Gram of their distinct words (fewer entries than the documents' own
    L1 x L2 blocks) equal the loop reference, values and gradients."""
    k = make_kernel(embedding, level2)
    g = torch.Generator().manual_seed(9)
    a, b = torch.full((3, 60), PAD), torch.full((3, 45), PAD)
    a[:, :50] = torch.randint(0, V, (3, 50), generator=g)
    b[:, :40] = torch.randint(0, V, (3, 40), generator=g)
    with torch.no_grad():
        torch.testing.assert_close(k(a, b, diag=True), ref_gram(k, a, b).diagonal(), rtol=0, atol=1e-10)
    latent = k.word_vectors.raw_latent.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda lat: functional_call(k, {"word_vectors.raw_latent": lat}, (a, b), {"diag": True}),
        (latent,),
        eps=1e-6,
        atol=1e-6,
    )


def test_document_sets_are_cached_safely():
    """The kernel keeps what it derives from the documents it is evaluated on (the same training
    documents at every optimizer step) -- and never serves it for other documents: an in-place
    change, another tensor of the same shape, a copy of the kernel."""
    k = make_kernel("rbf", "cosine", identity_weight=0.5)
    x = X1.clone()
    with torch.no_grad():
        first = k(x).to_dense()
        assert torch.equal(k(x).to_dense(), first)  # served from the cache, the same values
        assert len(k._document_sets) == 1
        x[0, 0] = 9  # in place: the version changes
        torch.testing.assert_close(k(x).to_dense(), ref_gram_identity(k, x), rtol=0, atol=1e-9)
        other = X1.flip(0).clone()  # same shape, other documents
        torch.testing.assert_close(k(other).to_dense(), ref_gram_identity(k, other), rtol=0, atol=1e-9)
        for _ in range(10):
            k(torch.randint(0, V, (3, 4)))
    assert len(k._document_sets) <= 4  # a few sets at most
    assert "_document_sets" not in pickle.loads(pickle.dumps(k)).__dict__


def ref_gram_identity(kernel, x):
    X = kernel.latent.detach().numpy()
    hp = {**kernel_hp(kernel), "identity": kernel.identity_weight.item()}
    return torch.from_numpy(ref.ldk_gram(X, x.numpy(), x.numpy(), kernel.embedding_name, kernel.level2.name, **hp))


def test_the_bandwidth_collapse_maps_to_the_same_kernel_values():
    """z = sqrt(gamma) x at gamma 1 gives the kernel of x at gamma: rescale_latent_space maps between them
    (the latent SMM and the matcher fit at collapsed_bandwidth's (1, rho / gamma) and map back)."""
    from lvgp.kernels.latent_distribution import collapsed_bandwidth, rescale_latent_space
    from lvgp.kernels.word_vectors import MAPWordVectors

    assert collapsed_bandwidth("rbf", 2.0, 4.0, learn_gamma=False) == (1.0, 0.5)
    assert collapsed_bandwidth("rbf", 2.0, 4.0, learn_gamma=True) == (4.0, 2.0)
    assert collapsed_bandwidth("linear", 2.0, 4.0, learn_gamma=False) == (4.0, 2.0)
    kernel = LatentDistributionKernel(12, 2, "rbf", "linear", gamma=4.0, seed=0).double()
    docs = torch.tensor([[0, 1, 2, -1], [3, 4, 4, 5], [6, 7, 8, 9]])
    with torch.no_grad():
        before = kernel(docs).to_dense()
        rescale_latent_space(kernel, 4.0**0.5, 0.5, 1.0)
        assert float(kernel.gamma) == 1.0
        torch.testing.assert_close(kernel(docs).to_dense(), before, rtol=1e-12, atol=1e-12)
        rescale_latent_space(kernel, 4.0**-0.5, 2.0, 4.0)
        torch.testing.assert_close(kernel(docs).to_dense(), before, rtol=1e-12, atol=1e-12)
    if isinstance(kernel.word_vectors, MAPWordVectors):
        assert kernel.word_vectors.rho == pytest.approx(2.0)


def test_document_sets_are_shared_by_the_same_documents_at_any_width():
    """A prediction pads the training documents or each block to the other's width: the kernel serves
    the set it derived from the documents at one width to the same documents at another (padding
    columns alone beyond the common ones), the same values as a fresh kernel's; it never serves it for
    documents that differ in a column beyond the narrower's width, and derives a set from the columns
    that hold a word alone (:func:`~lvgp.bow.padded.without_padding_columns`)."""
    from lvgp.bow.padded import same_documents, without_padding_columns

    k = make_kernel("rbf", "cosine", identity_weight=0.5)
    with torch.no_grad():
        first = k(X1, X2).to_dense()
        held = {id(d) for _, d in k._document_sets.values()}
        wider = pad_to_width(X1, 9)
        torch.testing.assert_close(k(wider, pad_to_width(X2, 9)).to_dense(), first, rtol=0, atol=1e-12)
        assert {id(d) for _, d in k._document_sets.values()} <= held  # no set derived again
        fresh = make_kernel("rbf", "cosine", identity_weight=0.5)  # the same parameters, no set held
        torch.testing.assert_close(first, fresh(X1, X2).to_dense(), rtol=0, atol=1e-12)
        other = wider.clone()
        other[1, 6] = 3  # a word past X1's width: other documents
        assert not same_documents(X1, other) and same_documents(X1, wider) and same_documents(wider, X1)
        torch.testing.assert_close(k(other, X2).to_dense(), fresh(other, X2).to_dense(), rtol=0, atol=1e-12)
        assert not same_documents(X1, X1[:3]) and not same_documents(X1, X1.flip(0))
    x = torch.tensor([[PAD, 4, PAD, PAD, PAD], [1, PAD, 2, PAD, PAD]])  # padding inside a row is kept
    assert torch.equal(without_padding_columns(x), x[:, :3])
    assert without_padding_columns(torch.full((2, 4), PAD)).shape == (2, 1)
    assert without_padding_columns(X2) is X2
