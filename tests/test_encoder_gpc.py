"""The GP classifier with a sentence encoder beside its words (issue 37), on a tiny random BERT:
the composed kernel is the word kernel plus mu times the cosine of the encoder's vectors, mu
starting balanced; predictions do not depend on blocks or widths; a saved classifier reloads
bit-exactly; bad combinations are named."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from gpytorch.kernels import LinearKernel  # noqa: E402

from lvgp import LBFGS, LDKGPClassifier  # noqa: E402
from lvgp.kernels import FeatureKernel, LDKSpec, WordSetKernel  # noqa: E402

WORDS = ["good", "bad", "film", "plot", "great", "awful"]
TEXTS = [
    "good film",
    "bad film",
    "good plot",
    "bad plot",
    "great film",
    "awful plot",
    "great good film",
    "awful bad plot",
    "good great plot",
    "bad awful film",
]
LABELS = np.array([1, 0] * 5)
TEST = ["good film plot", "awful film", "great plot and a good film", "bad"]
SPEC = LDKSpec(latent_dim=2, rho=0.1, identity_weight="balanced")


@pytest.fixture
def encoder(tiny_encoder):
    return tiny_encoder(WORDS, seed=1)


def _fit(encoder, texts=TEXTS, labels=LABELS, **options):
    options = {
        "sentence_encoder": encoder,
        "class_hyperparameters": "shared",
        "optimizer": LBFGS(max_iter=15),
        "random_state": 0,
        **options,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LDKGPClassifier(SPEC, **options).fit(texts, labels)


def test_the_kernel_is_the_word_kernel_plus_mu_times_the_cosine(encoder):
    clf = _fit(encoder, optimizer=LBFGS(max_iter=1))
    composed = clf.model_.covar_module.base_kernel
    word_part, encoder_part = composed.kernels
    assert isinstance(word_part, WordSetKernel) and isinstance(encoder_part, FeatureKernel)
    x = clf.model_.train_inputs[0]
    d = encoder.dim
    ids, feats = x[:, d:].long(), x[:, :d]
    unit = torch.nn.functional.normalize(feats, dim=-1)
    mu = encoder_part.base.variance.squeeze()
    with torch.no_grad():
        expected = word_part.base(ids).to_dense() + mu * unit @ unit.T
        torch.testing.assert_close(composed(x).to_dense(), expected)
        torch.testing.assert_close(feats, encoder.encode(TEXTS).double())
    # mu starts where both parts weigh alike: the word kernel's mean self-similarity (cosine: 1)
    fresh = LDKGPClassifier(SPEC, sentence_encoder=encoder, optimizer=LBFGS(max_iter=1), random_state=0)
    fresh.encoder_ = clf.encoder_
    start = fresh._kernel(0, x).kernels
    with torch.no_grad():
        balance = start[0].base(ids, diag=True).mean()
        torch.testing.assert_close(start[1].base.variance.squeeze(), balance)


def test_predictions_do_not_depend_on_the_block_and_are_a_distribution(encoder):
    clf = _fit(encoder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, many = clf.predict_proba(TEST, block=1), clf.predict_proba(TEST)
    np.testing.assert_allclose(one, many, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(many.sum(1), 1.0)
    assert clf.predict(TEST[:2]).tolist() == [1, 0]


def test_a_user_kernel_over_packed_documents_is_used_as_given(encoder):
    """The encoder's kernel alone (what the study's encoder-gpc fits)."""
    alone = FeatureKernel(LinearKernel(), encoder.dim, normalize=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LDKGPClassifier(alone, sentence_encoder=encoder, optimizer=LBFGS(max_iter=10), random_state=0).fit(
            TEXTS, LABELS
        )
        proba = clf.predict_proba(TEST)
    assert isinstance(clf.model_.covar_module.base_kernel, FeatureKernel)
    assert np.isfinite(proba).all() and clf.kernel_kind_ == "user"


def test_save_and_load_are_bit_exact(encoder, tmp_path):
    clf = _fit(encoder, sentence_encoder="all-MiniLM-L6-v2", calibration="temperature")
    path = tmp_path / "gpc.pt"
    clf.save(path)
    loaded = LDKGPClassifier.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(loaded.predict_proba(TEST), clf.predict_proba(TEST))
    assert loaded.sentence_encoder == "all-MiniLM-L6-v2" and loaded.temperature_ == clf.temperature_


def test_bad_combinations_are_named(encoder):
    with pytest.raises(TypeError, match="X must be texts for the sentence encoder, not Tensor"):
        LDKGPClassifier(SPEC, sentence_encoder=encoder).fit(torch.tensor([[0, 1], [1, 2]]), [0, 1])
    with pytest.raises(ValueError, match="encoder_kernel"):
        LDKGPClassifier(SPEC, sentence_encoder=encoder, encoder_kernel="sigmoid").fit(TEXTS, LABELS)
    clf = _fit(encoder, optimizer=LBFGS(max_iter=1))
    with pytest.raises(ValueError, match="pass sentence_encoder by name"):
        clf.save("never-written.pt")


@pytest.mark.parametrize("kind", ["rbf", "matern"])
def test_the_other_encoder_parts_fit(encoder, kind):
    clf = _fit(encoder, encoder_kernel=kind, optimizer=LBFGS(max_iter=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(clf.predict_proba(TEST)).all()


@pytest.mark.parametrize("kind", ["cosine", "rbf"])
def test_a_fixed_encoder_weight_stays_where_both_parts_weigh_alike(encoder, kind):
    """``beside_encoder(fit_weights=False)``: the encoder part's weight keeps its start (the word kernel's mean
    self-similarity, 1 for a cosine) through the fit, the other parameters move; by default the fit moves it."""
    from lvgp.kernels import BagOfWordsKernel
    from lvgp.kernels.packed import beside_encoder

    def factory(fit_weights):
        def build(num_words, documents):
            words = BagOfWordsKernel(num_words, "cosine").double()
            return beside_encoder(words, documents, encoder.dim, kind, fit_weights=fit_weights)

        return build

    def weight(clf):
        part = clf.model_.covar_module.base_kernel.kernels[1]
        return part.base.variance if kind == "cosine" else part.outputscale

    def raw(clf):
        part = clf.model_.covar_module.base_kernel.kernels[1]
        return part.base.raw_variance if kind == "cosine" else part.raw_outputscale

    def fit(fit_weights):
        clf = LDKGPClassifier(
            factory(fit_weights),
            sentence_encoder=encoder,
            class_hyperparameters="shared",
            optimizer=LBFGS(max_iter=15),
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return clf.fit(TEXTS, LABELS)

    fixed, fitted = fit(False), fit(True)
    assert not raw(fixed).requires_grad and raw(fitted).requires_grad
    assert float(weight(fixed)) == pytest.approx(1.0, abs=1e-6)  # the tf-idf cosine's self-similarity
    assert abs(float(weight(fitted).detach()) - 1.0) > 1e-3
    scale = fixed.model_.covar_module.outputscale.detach()
    assert abs(float(scale) - float(fitted.model_.covar_module.outputscale.detach())) > 1e-6  # the rest is fitted
    if kind == "rbf":
        lengthscale = fixed.model_.covar_module.base_kernel.kernels[1].base_kernel.base.lengthscale
        assert abs(float(lengthscale.detach()) - 0.6931) > 1e-3  # moved from gpytorch's start, softplus(0)


def test_an_encoder_part_can_hold_its_lengthscale():
    """``encoder_part("rbf", lengthscale=1.0)``: the RBF of the unit vectors with its length-scale held, exp(cos - 1);
    a length-scale for a part without one, or not positive, is refused."""
    from lvgp.kernels.packed import encoder_part

    part = encoder_part("rbf", 4, weight=2.0, fit_weight=False, lengthscale=1.0)
    inner = part.base_kernel.base
    assert float(inner.lengthscale) == pytest.approx(1.0) and not inner.raw_lengthscale.requires_grad
    assert not part.raw_outputscale.requires_grad
    x = torch.randn(5, 4, dtype=torch.float64)
    unit = torch.nn.functional.normalize(x, dim=-1)
    expected = 2.0 * torch.exp(unit @ unit.T - 1.0)
    packed = torch.cat([x, torch.zeros(5, 1, dtype=torch.float64)], dim=-1)  # the features, then word ids
    torch.testing.assert_close(part.double()(packed).to_dense(), expected, rtol=1e-6, atol=1e-8)
    assert encoder_part("matern", 4, lengthscale=0.5).base_kernel.base.lengthscale.item() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="lengthscale fixes the length-scale of an 'rbf' or 'matern' part"):
        encoder_part("cosine", 4, lengthscale=1.0)
    with pytest.raises(ValueError, match="lengthscale must be a positive finite number"):
        encoder_part("rbf", 4, lengthscale=0.0)


def test_an_encoder_kernel_object_fits_as_the_part_of_its_name_and_stays_unfitted(encoder):
    """``encoder_kernel=RBFKernel()`` is the part ``"rbf"`` builds (gpytorch's RBF of the unit vectors under the
    weight mu): the same fit and predictions, to the bit, also with a kernel per class; ``MaternKernel(nu=2.5)`` is
    ``"matern"``. The user's object is copied at every fit, never fitted itself, and ``get_params`` gives it back."""
    from gpytorch.kernels import MaternKernel, RBFKernel
    from sklearn.base import clone

    for name, user in (("rbf", RBFKernel()), ("matern", MaternKernel(nu=2.5))):
        start = {k: v.clone() for k, v in user.state_dict().items()}
        for per_class in ("shared", "per-class"):
            by_name = _fit(encoder, encoder_kernel=name, class_hyperparameters=per_class)
            by_object = _fit(encoder, encoder_kernel=user, class_hyperparameters=per_class)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.testing.assert_array_equal(by_object.predict_proba(TEST), by_name.predict_proba(TEST))
            assert by_object.get_params()["encoder_kernel"] is user
            fitted = [m for m in by_object.model_.modules() if isinstance(m, type(user))]
            assert fitted and all(m is not user for m in fitted)
        assert all(torch.equal(v, user.state_dict()[k]) for k, v in start.items())  # the fits moved copies only
    twin = clone(LDKGPClassifier(SPEC, encoder_kernel=["cosine", user]))  # what GridSearchCV does to a candidate
    assert twin.encoder_kernel[0] == "cosine" and type(twin.encoder_kernel[1]) is MaternKernel
    assert twin.encoder_kernel[1] is not user


def test_a_list_of_encoder_kernels_is_one_weighted_part_each(encoder):
    """``encoder_kernel=["cosine", RQKernel()]``: the word kernel plus mu1 times the cosine plus mu2 times the
    rational quadratic of the unit vectors (its formula by hand), both weights starting where the parts weigh
    alike; a list of one name is that name's part."""
    from gpytorch.kernels import RQKernel

    from lvgp.kernels.composition import part_names

    clf = _fit(encoder, encoder_kernel=["cosine", RQKernel()], optimizer=LBFGS(max_iter=3))
    composed = clf.model_.covar_module.base_kernel
    assert part_names(composed) == ("words", "encoder", "encoder-2")
    words, cosine, rq = composed.kernels
    x = clf.model_.train_inputs[0]
    d = encoder.dim
    unit = torch.nn.functional.normalize(x[:, :d], dim=-1)
    with torch.no_grad():
        inner = rq.base_kernel.base
        distance2 = torch.cdist(unit, unit).square() / inner.lengthscale.squeeze() ** 2
        alpha = inner.alpha.squeeze()
        rational = (1 + distance2 / (2 * alpha)).pow(-alpha)
        expected = (
            words.base(x[:, d:].long()).to_dense()
            + cosine.base.variance.squeeze() * unit @ unit.T
            + rq.outputscale * rational
        )
        torch.testing.assert_close(composed(x).to_dense(), expected)
    fresh = LDKGPClassifier(SPEC, sentence_encoder=encoder, encoder_kernel=("cosine", RQKernel()), random_state=0)
    fresh.encoder_ = clf.encoder_
    start = fresh._kernel(0, x).kernels
    with torch.no_grad():
        balance = start[0].base(x[:, d:].long(), diag=True).mean()
        torch.testing.assert_close(start[1].base.variance.squeeze(), balance)
        torch.testing.assert_close(start[2].outputscale, balance)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(
            _fit(encoder, encoder_kernel=["rbf"]).predict_proba(TEST),
            _fit(encoder, encoder_kernel="rbf").predict_proba(TEST),
        )


def test_a_file_of_an_encoder_kernel_object_reloads_with_it_given_again(encoder, tmp_path):
    """A file describes a kernel of ``encoder_kernel`` but does not hold its code: ``load`` asks for it (a
    ``ValueError`` naming the file), refuses one of other names or places, and with it predicts to the bit; a
    file of names alone keeps them (a tuple as a tuple) and refuses ``encoder_kernel=``."""
    from gpytorch.kernels import RQKernel

    clf = _fit(encoder, sentence_encoder="all-MiniLM-L6-v2", encoder_kernel=["cosine", RQKernel()])
    path = tmp_path / "user.pt"
    clf.save(path)
    with pytest.raises(ValueError, match="pass the same encoder_kernel again"):
        LDKGPClassifier.load(path)
    with pytest.raises(ValueError, match="differs in its names or places"):
        LDKGPClassifier.load(path, encoder_kernel=[RQKernel(), "cosine"])
    with pytest.raises(ValueError, match="differs in its names or places"):
        LDKGPClassifier.load(path, encoder_kernel=RQKernel())
    loaded = LDKGPClassifier.load(path, encoder_kernel=["cosine", RQKernel()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(loaded.predict_proba(TEST), clf.predict_proba(TEST))
    named = _fit(
        encoder, sentence_encoder="all-MiniLM-L6-v2", encoder_kernel=("cosine", "rbf"), optimizer=LBFGS(max_iter=2)
    )
    named.save(tmp_path / "named.pt")
    assert LDKGPClassifier.load(tmp_path / "named.pt").encoder_kernel == ("cosine", "rbf")
    with pytest.raises(ValueError, match="load it without encoder_kernel="):
        LDKGPClassifier.load(tmp_path / "named.pt", encoder_kernel=("cosine", "rbf"))


def test_bad_encoder_kernels_are_named(encoder):
    from gpytorch.kernels import RBFKernel

    for bad, error, what in (
        ([], ValueError, "a non-empty list"),
        (["rbf", "sigmoid"], ValueError, "one of"),
        (RBFKernel, TypeError, "a gpytorch Kernel instance"),  # the class, not an instance
        (["rbf", 3], TypeError, "a gpytorch Kernel instance"),
    ):
        with pytest.raises(error, match=f"encoder_kernel.*{what}"):
            LDKGPClassifier(SPEC, sentence_encoder=encoder, encoder_kernel=bad).fit(TEXTS, LABELS)
