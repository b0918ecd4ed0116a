"""``LDKGPClassifier(objective="loo")``: the Dirichlet classifier's hyper-parameters by the leave-one-out log
probability of the training labels, after the evidence.

Checked against an independent reference: each training document's latent posterior given the others by
an explicit solve (R&W eq. 2.23-2.24, not the closed form of eq. 5.12 the fit uses), the expected
softmax of the prediction's draws, the temperature minimized by scipy. The fitted hyper-parameters are a
local minimum of that reference objective (finite steps of every hyper-parameter raise it) and below the
evidence's; MAP word vectors stay the evidence's; the fallback with a class of one document, the bad
combinations, and a saved file."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning

from lvgp import LBFGS, EarlyStopping
from lvgp.kernels import LDKSpec
from lvgp.models.gpc import TEMPERATURE_PRIOR_SD, LDKGPClassifier, expected_softmax
from lvgp.models.gpc.inference import DirichletInference

from . import reference as ref
from .test_gpc import three_classes


def _noisy_three_classes(n=30, seed=6):
    x, y = three_classes(n, seed)
    flip = np.random.default_rng(0).random(len(y)) < 0.25  # noisy labels: interior optima
    return x, np.where(flip, (y + 1) % 3, y)


def _bag_of_words(num_words, documents):
    from lvgp.kernels import BagOfWordsKernel

    return BagOfWordsKernel(num_words, "cosine").double()


def _fit(x, y, objective, hyperparameters="shared", kernel=_bag_of_words, max_iter=60, **params):
    """A fit of fixed features (the cosine of the counts): the leave-one-out predictions of MAP word vectors
    would be optimistic, the vectors having seen the left-out document."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LDKGPClassifier(
            kernel,
            class_hyperparameters=hyperparameters,
            optimizer=LBFGS(max_iter=max_iter),
            calibration="temperature",
            objective=objective,
            random_state=0,
            **params,
        ).fit(x, y)


def _explicit_loo(clf, rows=None):
    """``m x C`` leave-one-out latent means and variances by an explicit solve a document and class (among
    ``rows`` of the training documents, default all): :func:`tests.reference.dirichlet_leave_one_out`."""
    model, lik = clf.model_, clf.likelihood_
    with torch.no_grad():
        K = model.covar_module(model.train_inputs[0]).to_dense().numpy()
        noise = (lik.noise_covar.noise + lik.second_noise_covar.noise).numpy()
        targets, means = lik.transformed_targets.numpy(), model.mean_module.constant.numpy().ravel()
    return ref.dirichlet_leave_one_out(K, noise, targets, means, rows)


def _reference_objective(clf, y):
    """The mean tempered leave-one-out log loss plus the temperature's prior per document, at its best
    temperature: what ``objective="loo"`` minimizes, from explicit solves."""
    mean, var = _explicit_loo(clf)
    proba = expected_softmax(torch.from_numpy(mean), torch.from_numpy(var), clf.predict_samples, clf._class_seeds())
    log_p, n = np.log(proba.numpy()), len(y)
    truth = np.searchsorted(clf.classes_, y)

    def loss(log_t):
        z = log_p / np.exp(log_t)
        z = z - z.max(1, keepdims=True)
        z = z - np.log(np.exp(z).sum(1, keepdims=True))
        return -np.mean(z[np.arange(n), truth]) + log_t**2 / (2 * TEMPERATURE_PRIOR_SD**2 * n)

    return minimize_scalar(loss, bounds=(-3.0, 3.0), method="bounded").fun


@pytest.mark.parametrize("hyperparameters", ["shared", "per-class"])
def test_loo_hyperparameters_are_a_local_minimum_of_the_explicit_leave_one_out_loss(hyperparameters):
    x, y = _noisy_three_classes()
    # a budget both stages converge within (per-class noises: 89 iterations), so that the end is a minimum
    clf = _fit(x, y, "loo", hyperparameters, max_iter=100)
    evidence = _fit(x, y, "evidence", hyperparameters, max_iter=100)
    assert clf.converged_ and evidence.converged_
    assert clf.objective_ == "loo" and evidence.objective_ == "evidence" and evidence.loo_loss_curve_ == []
    assert clf.n_iter_ == evidence.n_iter_ + len(clf.loo_loss_curve_)
    best = _reference_objective(clf, y)
    assert best < _reference_objective(evidence, y) - 1e-3
    # the fit's own last value is the reference's, from the closed form (eq. 5.12) and jointly fitted T
    np.testing.assert_allclose(clf.loo_loss_curve_[-1], best, rtol=1e-5)
    # every hyper-parameter (raw, unconstrained) moved either way raises the reference objective
    moved = 0
    for name, param in clf.model_.named_parameters():
        for index in np.ndindex(*param.shape):
            for step in (-0.02, 0.02):
                with torch.no_grad():
                    param[index] += step
                worse = _reference_objective(clf, y)
                with torch.no_grad():
                    param[index] -= step
                assert worse > best - 1e-5, (name, index, step, worse, best)  # (L-BFGS stops at tol 1e-6)
                moved += 1
    assert moved >= 6


def test_map_word_vectors_stay_the_evidence_ones():
    x, y = _noisy_three_classes()
    spec = LDKSpec(latent_dim=2, rho=0.5)
    clf, evidence = _fit(x, y, "loo", kernel=spec), _fit(x, y, "evidence", kernel=spec)
    assert clf.objective_ == "loo" and len(clf.loo_loss_curve_) > 1
    np.testing.assert_array_equal(clf.model_.ldk.latent.detach().numpy(), evidence.model_.ldk.latent.detach().numpy())
    assert not np.array_equal(clf.predict_proba(x), evidence.predict_proba(x))  # the hyper-parameters moved


def test_loo_latents_of_the_evidence_subset_are_those_of_explicit_solves_on_the_subset():
    x, y = _noisy_three_classes(40, 3)
    clf = _fit(x, y, "loo", max_evidence_documents=24)
    rows = clf.evidence_documents_
    assert clf.objective_ == "loo" and len(rows) == 24
    inputs = clf.model_.train_inputs[0]
    with torch.no_grad():
        mean, var = DirichletInference().leave_one_out_latents(
            clf, inputs[torch.as_tensor(rows)], torch.as_tensor(rows)
        )
    expected_mean, expected_var = _explicit_loo(clf, rows)
    np.testing.assert_allclose(mean.numpy(), expected_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var.numpy(), expected_var, rtol=1e-6, atol=1e-9)


def test_a_class_of_one_document_keeps_the_evidence_hyperparameters_with_a_warning():
    x, y = _noisy_three_classes()
    keep = np.flatnonzero(y != 2)[:20].tolist() + [int(np.flatnonzero(y == 2)[0])]
    x, y = [x[i] for i in keep], y[keep]
    with pytest.warns(UserWarning, match=r"objective='loo': 1 of 3 classes have fewer than two documents.*\(2\)"):
        clf = _fit(x, y, "loo")
    evidence = _fit(x, y, "evidence")
    assert clf.objective_ == "evidence" and clf.loo_loss_curve_ == []
    np.testing.assert_array_equal(clf.predict_proba(x), evidence.predict_proba(x))


def test_loo_objective_refuses_what_it_cannot_do():
    x, y = _noisy_three_classes()
    with pytest.raises(ValueError, match="objective='loo' needs inference='dirichlet'"):
        LDKGPClassifier(inference="laplace", objective="loo").fit(x, y)
    with pytest.raises(ValueError, match="early_stopping"):
        LDKGPClassifier(objective="loo", early_stopping=EarlyStopping()).fit(x, y)
    with pytest.raises(ValueError, match="part_selection='evidence'"):
        LDKGPClassifier(objective="loo", part_selection="evidence").fit(x, y)
    with pytest.raises(ValueError, match="objective"):
        LDKGPClassifier(objective="marginal").fit(x, y)


def test_a_loo_fit_saved_and_loaded_predicts_the_same_bits(tmp_path):
    x, y = _noisy_three_classes()
    clf = _fit(x, y, "loo")
    clf.save(tmp_path / "loo.pt")
    loaded = LDKGPClassifier.load(tmp_path / "loo.pt", kernel=_bag_of_words)
    assert loaded.objective == "loo" and loaded.objective_ == "loo"
    assert loaded.loo_loss_curve_ == clf.loo_loss_curve_ and loaded.temperature_ == clf.temperature_
    np.testing.assert_array_equal(loaded.predict_proba(x), clf.predict_proba(x))


def test_the_studies_pass_gpc_objective_to_their_dirichlet_classifiers():
    import dataclasses
    from types import SimpleNamespace

    from lvgp.experiments.active import ActiveStudy
    from lvgp.experiments.classification import ClassificationStudy, with_gpc_inference
    from lvgp.experiments.open_set import OpenSetStudy

    for study in (ClassificationStudy, OpenSetStudy, ActiveStudy):
        field = {f.name: f for f in dataclasses.fields(study)}["gpc_objective"]
        assert field.default == "evidence" and field.metadata["before"] == "evidence"
        assert field.metadata["choices"] == ("evidence", "loo")
    for objective in ("evidence", "loo"):
        options = SimpleNamespace(gpc_inference="dirichlet", gpc_objective=objective)
        assert with_gpc_inference(LDKGPClassifier(), options).objective == objective
    # the softmax inferences have no closed-form leave-one-out stage: the study refuses the pair
    with pytest.raises(ValueError, match="--gpc-objective loo needs --gpc-inference dirichlet"):
        ClassificationStudy(dataset="r8", gpc_inference="laplace", gpc_objective="loo").validate()
