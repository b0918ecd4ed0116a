"""``on_empty="keep"`` in the mini-batch estimators: :class:`~lvgp.SparseGPLVSMRegressor` and the variational
:class:`~lvgp.LDKGPClassifier` train on texts without a word of the vocabulary as the empty set (0 at a cosine
level 2). Checked against the ELBO written out: with kept texts in a batch, the expected log-likelihood is the
other texts' (the model's own marginals on them alone) plus, for each kept text, the expectation under its
latent ``N(c, jitter)`` -- the constant mean, no kernel variance -- in closed form (Gaussian) or over the same
draws (softmax); the KL terms do not move. Inducing documents are never empty texts; the fused step reads them as
the eager one does."""

from __future__ import annotations

import contextlib
import math
import warnings

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lvgp import LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor
from lvgp.bow.padded import PAD, document_lengths
from lvgp.kernels import LDKSpec
from lvgp.models import fused_step
from lvgp.models.inducing import choose_inducing_documents, whitened_gaussian_elbo, whitened_softmax_elbo
from lvgp.warnings import EmptyDocumentsWarning
from tests.test_gpc_empty_documents import EMPTY, TEXTS  # texts of stop words alone at rows EMPTY
from tests.test_gpc_empty_documents import _classifier as dirichlet_classifier
from tests.test_regressor_empty_documents import KNOWN, TARGETS
from tests.test_regressor_empty_documents import _regressor as exact_regressor
from tests.test_sparse import _terms_and_gradients, _with_padding_rows

LABELS = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]


@contextlib.contextmanager
def _quiet():
    """Warnings of the kept rows and of short fits, which these tests do not read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyDocumentsWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _regressor(kernel=None, **params) -> SparseGPLVSMRegressor:
    return SparseGPLVSMRegressor(
        kernel, num_inducing=4, optimizer=MiniBatch(batch_size=6, max_steps=20), random_state=0, **params
    )


def _classifier(**params) -> LDKGPClassifier:
    return LDKGPClassifier(
        LDKSpec(latent_dim=2, rho=1.0),
        inference="variational",
        num_inducing=4,
        optimizer=MiniBatch(batch_size=6, max_epochs=4),
        random_state=0,
        **params,
    )


@pytest.mark.parametrize("method", ["kmeans++", "random"])
def test_inducing_documents_are_never_empty_and_the_others_choice_is_unchanged(method):
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(0, 30, (40, 6), generator=generator)
    x[:, 4:][torch.rand(40, 2, generator=generator) < 0.5] = PAD
    chosen = choose_inducing_documents(x, 30, 8, method, seed=3)
    rows = [0, 5, 6, 30, 44]
    with_empty = _with_padding_rows(x, rows)
    others = np.array([i for i in range(with_empty.shape[0]) if i not in rows])
    # the empty rows are not candidates: the same choice among the others, as rows of the larger tensor
    np.testing.assert_array_equal(choose_inducing_documents(with_empty, 30, 8, method, seed=3), others[chosen])
    # as many inducing documents as non-empty rows, or more: every non-empty row
    np.testing.assert_array_equal(choose_inducing_documents(with_empty, 30, 60, method, seed=3), others)
    with pytest.raises(ValueError, match="hold no word: no inducing document"):
        choose_inducing_documents(torch.full((4, 3), PAD), 30, 2, method, seed=3)
    with pytest.raises(ValueError, match="inducing must be"):
        choose_inducing_documents(x, 30, 60, "first", seed=3)


@pytest.mark.parametrize("estimator", ["exact regressor", "sparse regressor", "classifier", "variational classifier"])
def test_empty_training_texts_raise_by_default_and_the_error_offers_on_empty_keep(estimator):
    model, y = {
        "exact regressor": (exact_regressor(), TARGETS),
        "sparse regressor": (_regressor(), TARGETS),
        "classifier": (dirichlet_classifier(), LABELS),
        "variational classifier": (_classifier(), LABELS),
    }[estimator]
    no_word = r"3 training documents have no word in the vocabulary .*rows \[1, 3, 9\].*on_empty='keep'"
    with pytest.raises(ValueError, match=no_word):
        model.fit(TEXTS, y)
    with pytest.raises(ValueError, match="on_empty must be"):
        model.set_params(on_empty="drop").fit(TEXTS, y)


@pytest.mark.parametrize("estimator", ["exact regressor", "sparse regressor", "classifier"])
def test_keep_refuses_a_covariance_with_no_document_kernel(estimator):
    """A covariance with no document kernel has no empty set to give a kept text
    (:func:`lvgp.kernels.document.keep_empty_documents`, which every estimator's ``on_empty="keep"`` calls)."""
    from gpytorch.kernels import LinearKernel, ScaleKernel

    from lvgp import GPLVSMRegressor

    def kernel(num_words):
        return ScaleKernel(LinearKernel())

    model, y = {
        "exact regressor": (GPLVSMRegressor(kernel, on_empty="keep"), TARGETS),
        "sparse regressor": (_regressor(kernel, on_empty="keep"), TARGETS),
        "classifier": (LDKGPClassifier(kernel, on_empty="keep"), LABELS),
    }[estimator]
    with (
        _quiet(),
        pytest.raises(ValueError, match="on_empty='keep' needs a covariance of document kernels.*ScaleKernel holds"),
    ):
        model.fit(TEXTS, y)


def _gaussian_expectation(y: torch.Tensor, mean: torch.Tensor, variance: torch.Tensor, noise: torch.Tensor):
    """``E_{N(f; mean, variance)} log N(y; f, noise)`` in closed form."""
    return -0.5 * torch.log(2 * math.pi * noise) - ((y - mean) ** 2 + variance) / (2 * noise)


@pytest.mark.parametrize("kernel", [None, LDKSpec.paper()], ids=["default", "paper"])
def test_the_regressors_elbo_is_the_other_texts_plus_each_kept_texts_noise_term(kernel):
    with pytest.warns(EmptyDocumentsWarning, match=r"3 of 12 training documents .*rows \[1, 3, 9\].*kept as the empty"):
        reg = _regressor(kernel, on_empty="keep").fit(TEXTS, TARGETS)
    assert np.isfinite(reg.step_losses_).all()
    assert not set(reg.inducing_indices_.tolist()) & set(EMPTY)
    x = reg.vocabulary_.encode(TEXTS, on_empty="keep")
    y = torch.as_tensor((np.asarray(TARGETS) - reg.y_mean_) / reg.y_std_)
    mll = gpytorch.mlls.VariationalELBO(reg.likelihood_, reg.model_, num_data=len(TEXTS), combine_terms=False)
    (ll_all, kl_all, prior_all), _ = _terms_and_gradients(reg, lambda: whitened_gaussian_elbo(mll, x, y)[:3])
    (ll_known, kl_known, prior_known), _ = _terms_and_gradients(
        reg, lambda: whitened_gaussian_elbo(mll, x[KNOWN], y[KNOWN])[:3]
    )
    with torch.no_grad():
        constant, noise = reg.model_.mean_module.constant, reg.likelihood_.noise.squeeze()
        jitter = torch.as_tensor(reg.model_.variational_strategy.jitter_val, dtype=torch.float64)
        kept = _gaussian_expectation(y[EMPTY], constant, jitter, noise).sum()
    # the batch's mean expected log-likelihood: the other texts' sum plus the kept texts' closed form
    np.testing.assert_allclose(float(ll_all) * len(TEXTS), float(ll_known) * len(KNOWN) + float(kept), rtol=1e-10)
    assert float(kl_all) == pytest.approx(float(kl_known), rel=1e-12)
    assert float(prior_all) == pytest.approx(float(prior_known), rel=1e-12)
    # the kept texts' latent is the constant mean with the jitter's variance alone
    reg.model_.eval()
    with torch.no_grad():
        marginal = reg.model_(x[EMPTY])
    np.testing.assert_allclose(marginal.mean.numpy(), float(constant), rtol=1e-12)
    np.testing.assert_allclose(marginal.variance.numpy(), float(jitter), rtol=1e-6)
    # a new text without a known word is predicted with the prior, as without on_empty="keep"
    with pytest.warns(EmptyDocumentsWarning, match="predicted with the prior"):
        mean, std = reg.predict([TEXTS[EMPTY[0]], "great plot"], return_std=True)
    assert np.isfinite(mean).all() and np.isfinite(std).all()


def test_a_kept_sparse_regressor_saves_and_loads_to_the_bit(tmp_path):
    with _quiet():
        reg = _regressor(on_empty="keep").fit(TEXTS, TARGETS)
    reg.save(tmp_path / "reg.pt")
    loaded = SparseGPLVSMRegressor.load(tmp_path / "reg.pt")
    assert loaded.on_empty == "keep"
    test = ["great plot", "awful music", "fine acting"]
    for mine, theirs in zip(loaded.predict(test, return_std=True), reg.predict(test, return_std=True)):
        np.testing.assert_array_equal(mine, theirs)


def test_the_variational_classifiers_elbo_is_the_other_texts_plus_each_kept_texts_softmax_term():
    with pytest.warns(EmptyDocumentsWarning, match=r"3 of 12 training documents .*rows \[1, 3, 9\].*kept as the empty"):
        clf = _classifier(on_empty="keep").fit(TEXTS, LABELS)
    assert np.isfinite(clf.loss_curve_).all()
    inducing = clf.model_.variational_strategy.base_variational_strategy.inducing_points
    assert (document_lengths(inducing) > 0).all()
    x = clf.vocabulary_.encode(TEXTS, on_empty="keep")
    y = torch.as_tensor(LABELS)
    draws = torch.randn(16, len(TEXTS), 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mll = gpytorch.mlls.VariationalELBO(clf.likelihood_, clf.model_, num_data=len(TEXTS))
    clf.model_.train()
    clf.likelihood_.train()
    strategy = clf.model_.variational_strategy.base_variational_strategy
    with torch.no_grad():
        elbo_all = float(whitened_softmax_elbo(mll, x, y, draws)) * len(TEXTS)  # a batch's mean, times its size
        elbo_known = float(whitened_softmax_elbo(mll, x[KNOWN], y[KNOWN], draws[:, KNOWN])) * len(KNOWN)
        # the other texts' expected log-likelihood from their marginals (C x B) at the same draws
        mean, variance = strategy.training_marginals(x[KNOWN], strategy.variational_moments())
        f = mean.mT + variance.mT.sqrt() * draws[:, KNOWN]
        known = float(torch.log_softmax(f, -1)[:, torch.arange(len(KNOWN)), y[KNOWN]].mean(0).sum())
        constants = clf.model_.mean_module.constant.reshape(-1)  # one a class
        latent = constants + math.sqrt(strategy.jitter_val) * draws[:, EMPTY]  # N(c, jitter) at the same draws
        kept = float(torch.log_softmax(latent, -1)[:, torch.arange(len(EMPTY)), y[EMPTY]].mean(0).sum())
    rest = known / len(KNOWN) - elbo_known / len(KNOWN)  # the KL and prior terms a datum, the batch's alone
    assert rest > 0
    np.testing.assert_allclose(elbo_all / len(TEXTS), (known + kept) / len(TEXTS) - rest, rtol=1e-10)
    with pytest.warns(EmptyDocumentsWarning, match="training class frequencies"):
        proba = clf.predict_proba([TEXTS[EMPTY[0]], "great plot"])
    np.testing.assert_allclose(proba[0], clf.class_prior_, rtol=1e-12)
    # two classes: the probit's quadrature reads the kept texts too
    with _quiet():
        binary = _classifier(on_empty="keep").fit(TEXTS, [label % 2 for label in LABELS])
    assert np.isfinite(binary.loss_curve_).all()


def test_the_fused_step_reads_kept_texts_as_the_eager_step_does(monkeypatch):
    """``MiniBatch(compile=True)`` where the fused step is taken (a CPU inside ``fused_steps``; ``torch.compile``
    made the identity): with kept texts in the training set the fused objectives are built and the fit follows the
    eager fit's trajectory (the empty set's diagonal 0, where the regressor's fused objective gave every document
    the cosine's unit one); the objectives against the eager step on one batch: ``tests/test_fused_step.py``."""
    import lvgp.models.gpc.inference as gpc_inference
    import lvgp.models.sparse as sparse

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)
    built = []

    def recording(original):
        def build(*args, **kwargs):
            built.append(original.__name__)
            return original(*args, **kwargs)

        return build

    for module, name in ((sparse, "FusedSparseObjective"), (gpc_inference, "FusedClassifierObjective")):
        monkeypatch.setattr(module, name, recording(getattr(module, name)))
    regressor_spec = LDKSpec(**SparseGPLVSMRegressor._default_kernel).replace(approximation="nystrom")
    classifier_spec = LDKSpec(**LDKGPClassifier._default_kernel).replace(approximation="nystrom")
    fits = {}
    for compiled in (False, True):
        reg = SparseGPLVSMRegressor(
            regressor_spec, num_inducing=4, optimizer=MiniBatch(batch_size=6, max_steps=8, compile=compiled),
            on_empty="keep", random_state=0,
        )  # fmt: skip
        clf = LDKGPClassifier(
            classifier_spec, inference="variational", num_inducing=4,
            optimizer=MiniBatch(batch_size=6, max_epochs=3, compile=compiled), on_empty="keep", random_state=0,
        )  # fmt: skip
        with _quiet(), fused_step.fused_steps(True):
            fits[compiled] = (reg.fit(TEXTS, TARGETS), clf.fit(TEXTS, LABELS))
    assert built == ["FusedSparseObjective", "FusedClassifierObjective"]
    (reg_eager, clf_eager), (reg_fused, clf_fused) = fits[False], fits[True]
    np.testing.assert_allclose(reg_fused.step_losses_, reg_eager.step_losses_, rtol=1e-10)
    np.testing.assert_allclose(clf_fused.loss_curve_, clf_eager.loss_curve_, rtol=1e-10)
    test = ["great plot", "awful music"]
    np.testing.assert_allclose(reg_fused.predict(test), reg_eager.predict(test), rtol=1e-9)
    np.testing.assert_allclose(clf_fused.predict_proba(test), clf_eager.predict_proba(test), rtol=1e-9)


def test_distributed_training_with_kept_texts_follows_the_single_process_trajectory():
    params = dict(num_inducing=4, optimizer=MiniBatch(batch_size=6, max_epochs=2, lr=0.03), on_empty="keep")
    with _quiet():
        single = SparseGPLVSMRegressor(LDKSpec(latent_dim=2), random_state=0, **params).fit(TEXTS, TARGETS)
        parallel = SparseGPLVSMRegressor(
            LDKSpec(latent_dim=2), random_state=0, distributed=True, world_size=2, **params
        ).fit(TEXTS, TARGETS)
    np.testing.assert_allclose(parallel.step_losses_, single.step_losses_, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kind", ["padded", "counts"])
def test_padded_and_count_input_is_kept_or_refused_as_texts_are(kind):
    """``on_empty`` reads a padding-only row of a padded tensor, or a row of no count, as a text without a known
    word: ``"raise"`` names the rows and offers ``"keep"``; ``"keep"`` fits, with the warning naming them."""
    from lvgp import LBFGS, GPLVSMRegressor
    from lvgp.bow.padded import padded_to_counts

    x = torch.randint(0, 40, (30, 5), generator=torch.Generator().manual_seed(0))
    x[[0, 7, 21]] = PAD
    X = x if kind == "padded" else padded_to_counts(x, 40)
    words = {"num_words": 40} if kind == "padded" else {}
    y = np.random.default_rng(0).normal(size=30)
    labels = np.arange(30) % 3
    estimators = [
        (GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=10), random_state=0, **words), y),
        (_regressor(**words).set_params(num_inducing=6), y),
        (LDKGPClassifier(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=10), random_state=0, **words), labels),
        (_classifier(**words).set_params(num_inducing=6), labels),
    ]
    for estimator, targets in estimators:
        with pytest.raises(ValueError, match=r"X holds empty documents .* rows \[0, 7, 21\].*on_empty='keep'"):
            estimator.fit(X, targets)
        estimator.set_params(on_empty="keep")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            with pytest.warns(EmptyDocumentsWarning, match=r"3 of 30 training documents .*rows \[0, 7, 21\]"):
                estimator.fit(X, targets)
        assert np.isfinite(estimator.predict(X[1:4])).all()


def test_a_padded_corpus_of_no_word_id_asks_for_num_words():
    from lvgp import GPLVSMRegressor

    with pytest.raises(ValueError, match=r"X holds no word id \(every row only padding\): pass num_words="):
        GPLVSMRegressor(on_empty="keep").fit(torch.full((4, 3), PAD), [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=r"X holds word ids >= num_words=5 \(largest 7\) in rows \[0\]"):
        GPLVSMRegressor(num_words=5).fit(torch.tensor([[1, 7], [2, PAD]]), [1.0, 2.0])
