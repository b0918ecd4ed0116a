"""lvgp's extensions of GP-LVSM (not in the papers): word vectors tied to pretrained
features, a variational posterior over the word vectors, and the document-length kernel."""

from __future__ import annotations

import math
import warnings

import gpytorch
import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel

from lvgp import GPLVSM, LBFGS, PAD, Adam, GPLVSMRegressor, LatentDistributionKernel, LogPosterior
from lvgp.base.numerics import default_dtype
from lvgp.datasets import WordEmbeddings, make_synonym_regression
from lvgp.kernels import DocumentLengthKernel, LDKSpec, make_word_vectors
from lvgp.warnings import MissingEmbeddingsWarning

from . import reference as ref

V, Q = 10, 2
X1 = torch.tensor([[0, 1, 1, PAD], [2, 3, 4, 5], [6, PAD, PAD, PAD], [7, 8, 9, 9]])


@pytest.fixture(autouse=True)
def float64_default():
    with default_dtype(torch.float64):
        yield


def test_word_features_tie_the_latent_means_to_a_learned_projection():
    feats = torch.randn(V, 5, generator=torch.Generator().manual_seed(0))
    k = LatentDistributionKernel(word_vectors=make_word_vectors(V, Q, rho=4.0, word_features=feats, seed=0))
    wv = k.word_vectors
    torch.testing.assert_close(k.latent, feats @ wv.projection + wv.residual)
    assert torch.count_nonzero(wv.residual) == 0  # the projected features carry the initial layout
    # the Gram is LDK at those vectors (loop reference), and gradients reach the projection
    with torch.no_grad():
        K = k(X1).to_dense().numpy()
    np.testing.assert_allclose(
        K, ref.ldk_gram(k.latent.detach().numpy(), X1.numpy(), X1.numpy(), "rbf", "linear"), atol=1e-12
    )
    proj = wv.projection.detach().clone().requires_grad_(True)

    def gram(p):
        with gpytorch.settings.lazily_evaluate_kernels(False):
            return torch.func.functional_call(k, {"word_vectors.projection": p}, (X1,)).to_dense()

    assert torch.autograd.gradcheck(gram, (proj,), eps=1e-6, atol=1e-6)
    # the MAP prior is on the residual only
    prior, closure, _ = wv._priors["latent_prior"]
    assert torch.equal(closure(wv), wv.residual)
    # setting latent sets the means
    target = torch.randn(V, Q, generator=torch.Generator().manual_seed(1))
    k.latent = target
    torch.testing.assert_close(k.latent, target)
    with pytest.raises(ValueError, match=r"word_features must have shape \(num_words, h\)"):
        make_word_vectors(V, Q, word_features=torch.zeros(3, 5))


def test_identity_projection_and_fixed_vectors():
    """projection_init="identity": the vectors are the features times one number, with E||x_v||^2 =
    q projection_scale^2; trainable=False: no parameter of the module takes a gradient."""
    feats = torch.randn(V, Q, generator=torch.Generator().manual_seed(2))
    wv = make_word_vectors(V, Q, rho=None, word_features=feats, projection_init="identity", projection_scale=0.5)
    scale = 0.5 * (Q / feats.pow(2).sum(-1).mean()) ** 0.5
    torch.testing.assert_close(wv.vectors, feats * scale)
    assert wv.trainable and all(p.requires_grad for p in wv.parameters())
    fixed = make_word_vectors(V, Q, rho=None, word_features=feats, projection_init="identity", trainable=False)
    assert not any(p.requires_grad for p in fixed.parameters()) and "fixed" in repr(fixed)
    with pytest.raises(ValueError, match="projection_init='identity' needs latent_dim equal to the word features'"):
        make_word_vectors(V, Q + 1, word_features=feats, projection_init="identity")
    with pytest.raises(ValueError, match="projection_init must be one of"):
        make_word_vectors(V, Q, word_features=feats, projection_init="pca")
    with pytest.raises(ValueError, match="trainable=False does not apply"):
        make_word_vectors(V, Q, rho=1.0, variational=True, trainable=False)


def test_variational_kernel_samples_in_training_and_uses_means_in_eval():
    k = LatentDistributionKernel(word_vectors=make_word_vectors(V, Q, rho=2.0, variational=True, seed=0))
    assert not list(k.named_priors())  # the prior acts through the KL, not as a gpytorch prior
    k.train()
    with torch.no_grad():
        a = k(X1).to_dense()
        b = k(X1).to_dense()
    assert not torch.allclose(a, b)  # each training evaluation is a new Monte Carlo sample
    k.eval()
    wv = k.word_vectors
    assert torch.count_nonzero(wv.latent_noise) == 0
    torch.testing.assert_close(k.latent, wv.mean)
    g = torch.Generator().manual_seed(5)
    wv.resample(g)
    expected = wv.mean + wv.latent_scale * torch.randn(V, Q, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(k.latent, expected)
    wv.use_mean()
    torch.testing.assert_close(k.latent, wv.mean)
    # a training step's sample: float32 normal draws, widened (predictions keep resample's float64 ones)
    k.train()
    with wv.one_sample(torch.Generator().manual_seed(5)):
        noise = torch.randn(V, Q, generator=torch.Generator().manual_seed(5), dtype=torch.float32)
        assert wv.latent_noise.dtype == torch.float64
        assert torch.equal(wv.latent_noise, noise.double())
        assert torch.equal(k.latent, wv.mean + wv.latent_scale * noise.double())
    with pytest.raises(ValueError, match="need a prior"):
        make_word_vectors(V, Q, variational=True, rho=None)
    assert not hasattr(LatentDistributionKernel(V, Q).word_vectors, "resample")  # point estimates


def test_latent_kl_is_the_gaussian_kl():
    k = LatentDistributionKernel(word_vectors=make_word_vectors(V, Q, rho=3.0, variational=True, seed=0))
    wv = k.word_vectors
    wv.latent_scale = torch.rand(V, Q, generator=torch.Generator().manual_seed(2)) + 0.1
    q = torch.distributions.Normal(wv.residual, wv.latent_scale)
    p = torch.distributions.Normal(torch.zeros(V, Q), torch.full((V, Q), 3.0**-0.5))
    torch.testing.assert_close(wv.kl(), torch.distributions.kl_divergence(q, p).sum())


def test_exact_mll_of_a_variational_model_is_the_monte_carlo_elbo():
    """n * ExactMarginalLogLikelihood = log N(y | mu, K(X_sample)) - KL(q || p) (the added loss term)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, V, (15, 4), generator=g)
    y = torch.randn(15, generator=g)
    ldk = LatentDistributionKernel(word_vectors=make_word_vectors(V, Q, rho=2.0, variational=True, seed=0))
    ldk.word_vectors.sample_generator = torch.Generator().manual_seed(9)
    model = GPLVSM(x, y, num_words=V, kernel=ScaleKernel(ldk))
    model.train()
    value = LogPosterior(model.likelihood, model)(model(x), y) * 15  # the forward drew a sample
    sample = ldk.latent.detach().numpy()
    K = ref.ldk_gram(sample, x.numpy(), x.numpy(), "rbf", "linear")
    loglik = ref.gplvsm_log_posterior(
        K,
        y.numpy(),
        model.covar_module.outputscale.item(),
        model.likelihood.noise.item(),
        model.mean_module.constant.item(),
        np.zeros((1, 1)),
        1.0,
    ) - (-0.5 * math.log(2 * math.pi))  # gplvsm_log_posterior adds the log prior of the (here 1x1 zero) X
    assert abs(value.item() - (loglik - ldk.word_vectors.kl().item())) < 1e-8


def test_document_length_kernel():
    k = DocumentLengthKernel(exponent=0.7)
    lengths = torch.tensor([3.0, 4.0, 1.0, 4.0])
    with torch.no_grad():
        torch.testing.assert_close(k(X1).to_dense(), torch.outer(lengths, lengths) ** 0.7)
        torch.testing.assert_close(k(X1, diag=True), lengths**1.4)
        product = (LatentDistributionKernel(V, Q, seed=0) * k)(X1).to_dense()
    assert torch.linalg.eigvalsh(product).min() > -1e-10
    with pytest.raises(ValueError, match=r"exponent must lie in Interval\(0.000E\+00, 1.000E\+00\); got"):
        k.exponent = 1.5  # outside the [0, 1] constraint


def test_document_length_kernel_reads_the_empty_set_as_length_zero_with_a_finite_gradient():
    """``allow_empty`` (set by ``allow_empty_documents`` with the document kernels): a padding-only row is the empty
    set, of length 0, its value ``0^p = 0``; the gradient in ``p`` stays finite there."""
    from lvgp.kernels.document import allow_empty_documents, reads_empty_documents

    x = torch.cat([X1, torch.full((1, X1.shape[-1]), PAD)])
    k = DocumentLengthKernel(exponent=0.7)
    with pytest.raises(ValueError, match=r"empty documents \(only padding\) in rows \[4\]"):
        k(x).to_dense()
    product = LatentDistributionKernel(V, Q, seed=0) * k
    assert not reads_empty_documents(product)
    allow_empty_documents(product)
    assert k.allow_empty and reads_empty_documents(product)
    value = k(x).to_dense()
    lengths = torch.tensor([3.0, 4.0, 1.0, 4.0, 0.0])
    torch.testing.assert_close(value, torch.outer(lengths, lengths) ** 0.7)
    value.sum().backward()
    assert torch.isfinite(k.raw_exponent.grad).all() and k.raw_exponent.grad.abs().sum() > 0
    assert not reads_empty_documents(DocumentLengthKernel())  # no document kernel: nothing reads the empty set


def small_embeddings() -> WordEmbeddings:
    corpus = make_synonym_regression(n=10, random_state=0)
    words = [w for group in corpus.positive_words + corpus.negative_words for w in group] + corpus.neutral_words[:-5]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(words), 8))
    return WordEmbeddings("toy", words, vectors)


def test_variational_estimator_with_embeddings_and_length_kernel(tmp_path):
    corpus = make_synonym_regression(n=60, noise=0.05, random_state=2)
    est = GPLVSMRegressor(
        LDKSpec(latent_dim=2, rho=0.5, word_embeddings=small_embeddings(), variational=True, length_kernel=True),
        optimizer=Adam(max_iter=25, lr=0.05),
        predict_samples=6,
        random_state=0,
    )
    with pytest.warns(MissingEmbeddingsWarning, match="5 of .* vocabulary words have no vector in toy"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*did not converge.*")
            est.fit(corpus.texts[:40], corpus.y[:40])
    mean, std = est.predict(corpus.texts[40:], return_std=True)
    again_mean, again_std = est.predict(corpus.texts[40:], return_std=True)
    assert np.array_equal(mean, again_mean) and np.array_equal(std, again_std)  # seeded Monte Carlo
    # the mixture's variance exceeds the average of the per-sample variances' noise-free part
    _, std_f = est.predict(corpus.texts[40:], return_std=True, include_noise=False)
    assert np.all(std_f > 0) and np.all(std_f < std)
    path = tmp_path / "vb.pt"
    est.save(path)
    loaded = GPLVSMRegressor.load(path)
    m2, s2 = loaded.predict(corpus.texts[40:], return_std=True)
    assert np.array_equal(m2, mean) and np.array_equal(s2, std)
    assert est.word_vectors_.shape == (len(est.vocabulary_), 2)
    with pytest.raises(ValueError, match=r"use optimizer=lvgp.Adam\(...\)"):
        GPLVSMRegressor(LDKSpec(variational=True), optimizer=LBFGS()).fit(corpus.texts[:10], corpus.y[:10])
