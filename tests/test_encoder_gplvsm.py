"""GP-LVSM regression with a sentence encoder beside the words (issue 37), on a tiny random BERT:
the composed covariance is outputscale * (word kernel + mu * cosine); the predictive mean and
variance are the closed-form GP posterior of that covariance; save/load is bit-exact."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from lvgp import LBFGS, GPLVSMRegressor  # noqa: E402
from lvgp.kernels import FeatureKernel, LDKSpec, WordSetKernel  # noqa: E402

WORDS = ["good", "bad", "film", "plot", "great", "awful"]
TEXTS = ["good film", "bad film", "good plot", "bad plot", "great film", "awful plot", "great good film", "bad awful"]
Y = np.array([1.0, -1.0, 0.8, -0.9, 1.3, -1.2, 1.5, -1.6])
TEST = ["good plot film", "awful film", "unknownword", "great"]
SPEC = LDKSpec(latent_dim=2, rho=1.0, identity_weight="balanced")


@pytest.fixture
def encoder(tiny_encoder):
    return tiny_encoder(WORDS, seed=2)


def _fit(encoder, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = {"sentence_encoder": encoder, "optimizer": LBFGS(max_iter=20), "random_state": 0, **options}
        return GPLVSMRegressor(SPEC, **options).fit(TEXTS, Y)


def test_prediction_is_the_closed_form_posterior_of_the_composed_covariance(encoder):
    reg = _fit(encoder, encoder_kernel="cosine")
    model, lik = reg.model_, reg.likelihood_
    word_part, enc_part = model.covar_module.base_kernel.kernels
    assert isinstance(word_part, WordSetKernel) and isinstance(enc_part, FeatureKernel)
    x = model.train_inputs[0]
    d = encoder.dim
    torch.testing.assert_close(x[:, :d], encoder.encode(TEXTS).double())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean, std = reg.predict(TEST[:2] + TEST[3:], return_std=True)
    xs = reg._documents(reg._encoder.transform(TEST[:2] + TEST[3:], "X"), TEST[:2] + TEST[3:], "X")
    with torch.no_grad():
        scale = model.covar_module.outputscale
        mu = enc_part.base.variance.squeeze()

        def k(a, b):
            width = max(a.shape[-1], b.shape[-1])
            pad = torch.nn.functional.pad
            a, b = pad(a, (0, width - a.shape[-1]), value=-1.0), pad(b, (0, width - b.shape[-1]), value=-1.0)
            ua, ub = (torch.nn.functional.normalize(t[:, :d], dim=-1) for t in (a, b))
            return scale * (word_part.base(a[:, d:].long(), b[:, d:].long()).to_dense() + mu * ua @ ub.T)

        K = k(x, x) + lik.noise * torch.eye(len(TEXTS), dtype=torch.float64)
        Ks, Kss = k(xs, x), k(xs, xs).diagonal()
        c = model.mean_module.constant
        z = model.train_targets
        m = c + Ks @ torch.linalg.solve(K, z - c)
        v = Kss - (Ks * torch.linalg.solve(K, Ks.T).T).sum(-1) + lik.noise
    np.testing.assert_allclose(mean, m.numpy() * reg.y_std_ + reg.y_mean_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(std, v.sqrt().numpy() * reg.y_std_, rtol=1e-6, atol=1e-8)


def test_a_document_without_known_words_is_read_through_its_vector_and_the_file_reloads(encoder, tmp_path):
    """With a sentence encoder a text without a known word is a document (issue 56, section 0): no
    prior fallback, no EmptyDocumentsWarning; its prediction is the model's at its packed row."""
    from lvgp.warnings import EmptyDocumentsWarning

    reg = _fit(encoder, sentence_encoder="all-MiniLM-L6-v2")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyDocumentsWarning)
        warnings.simplefilter("ignore", UserWarning)  # the unseen word, dropped as documented
        mean, std = reg.predict(TEST, return_std=True)
        alone = reg.predict(["unknownword", "anotherunknown"], return_std=True)
    # the same document, to rounding: with AVX-512 the products of 4 and 2 test rows round differently (5e-15)
    np.testing.assert_allclose([mean[2], std[2]], [alone[0][0], alone[1][0]], rtol=1e-12, atol=0)
    assert alone[0][0] != alone[0][1]  # two such texts are two documents, not one prior
    reg.save(tmp_path / "reg.pt")
    loaded = GPLVSMRegressor.load(tmp_path / "reg.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(loaded.predict(TEST, return_std=True), reg.predict(TEST, return_std=True))


def test_bad_inputs_are_named(encoder):
    with pytest.raises(TypeError, match="X must be texts for the sentence encoder, not Tensor"):
        GPLVSMRegressor(SPEC, sentence_encoder=encoder).fit(torch.tensor([[0, 1], [1, 2]]), [0.0, 1.0])
    reg = _fit(encoder)
    with pytest.raises(ValueError, match="pass sentence_encoder by name"):
        reg.save("never-written.pt")


def test_the_default_encoder_part_is_the_rbf_of_the_unit_vectors(encoder):
    from gpytorch.kernels import RBFKernel, ScaleKernel

    reg = _fit(encoder, optimizer=LBFGS(max_iter=3))
    word_part, enc_part = reg.model_.covar_module.base_kernel.kernels
    assert isinstance(enc_part, ScaleKernel) and isinstance(enc_part.base_kernel.base, RBFKernel)
    assert enc_part.base_kernel.normalize


def test_an_encoder_kernel_object_or_list_is_composed_as_the_classifiers_and_reloads_with_it(encoder, tmp_path):
    """``encoder_kernel=MaternKernel(nu=2.5)`` fits and predicts as ``"matern"`` to the bit, the user's object
    unfitted; ``["cosine", RQKernel()]`` is one weighted part each, and its file reloads, bit-exactly, with the
    same list given again (a file does not hold a kernel's code)."""
    from gpytorch.kernels import MaternKernel, RQKernel

    from lvgp.kernels.composition import part_names

    user = MaternKernel(nu=2.5)
    start = {k: v.clone() for k, v in user.state_dict().items()}
    by_name, by_object = _fit(encoder, encoder_kernel="matern"), _fit(encoder, encoder_kernel=user)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(by_object.predict(TEST, return_std=True), by_name.predict(TEST, return_std=True))
    assert all(torch.equal(v, user.state_dict()[k]) for k, v in start.items())
    reg = _fit(encoder, sentence_encoder="all-MiniLM-L6-v2", encoder_kernel=["cosine", RQKernel()])
    assert part_names(reg.model_.covar_module.base_kernel) == ("words", "encoder", "encoder-2")
    reg.save(tmp_path / "reg.pt")
    with pytest.raises(ValueError, match="pass the same encoder_kernel again"):
        GPLVSMRegressor.load(tmp_path / "reg.pt")
    loaded = GPLVSMRegressor.load(tmp_path / "reg.pt", encoder_kernel=["cosine", RQKernel()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(loaded.predict(TEST, return_std=True), reg.predict(TEST, return_std=True))
