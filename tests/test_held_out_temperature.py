"""``calibration="temperature"`` without closed-form leave-one-out predictions: the variational (or Laplace)
GP classifier takes ``T`` from early stopping's held-out texts.

References: with ``policy="keep-best"`` the fitted classifier *is* the held-out fit, so its untempered
probabilities of the held-out rows (the split rebuilt by ``early_stopping_split``) give ``T`` by a grid
search of the same objective (the mean log loss plus the prior's term), independent of the bounded scalar
minimizer; with ``policy="refit"``, ``T`` is the one the probe's held-out predictions give, and every
prediction is the untempered one tempered by it. The Dirichlet inference keeps its leave-one-out ``T``."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lvgp import EarlyStopping, LDKGPClassifier, MiniBatch
from lvgp.base.splits import early_stopping_split
from lvgp.datasets import make_zipf_topic_documents
from lvgp.models.gpc.inference import TEMPERATURE_PRIOR_SD, _tempered_log_proba, _tempered_proba
from lvgp.warnings import EmptyDocumentsWarning

from .reference import untempered_proba


@pytest.fixture(scope="module")
def corpus():
    return make_zipf_topic_documents(160, num_words=400, max_length=25, random_state=3)  # 4 classes


def _variational(corpus, policy="refit", **options):
    return LDKGPClassifier(
        inference="variational",
        num_inducing=16,
        optimizer=MiniBatch(max_epochs=30),
        early_stopping=EarlyStopping(policy=policy, n_iter_no_change=5),
        calibration="temperature",
        num_words=corpus.num_words,
        random_state=0,
        **options,
    )


def _quiet_fit(est, corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(torch.from_numpy(corpus.X), corpus.labels)


def test_the_temperature_needs_closed_form_loo_or_early_stopping(corpus):
    with pytest.raises(ValueError, match=r"or early_stopping \(T from its held-out texts' predictions\); got "):
        LDKGPClassifier(inference="variational", calibration="temperature").fit(
            torch.from_numpy(corpus.X), corpus.labels
        )


def test_keep_best_takes_t_from_its_own_held_out_predictions(corpus):
    est = _quiet_fit(_variational(corpus, policy="keep-best"), corpus)
    x = torch.from_numpy(corpus.X)
    _, dev = early_stopping_split(len(corpus.labels), 0.25, est._fit_streams().root, np.asarray(corpus.labels))
    log_p = np.log(np.maximum(untempered_proba(est, x[dev]), 1e-300))
    truth = np.searchsorted(est.classes_, np.asarray(corpus.labels)[dev])
    grid = np.linspace(-3, 3, 6001)  # log T, steps of 1e-3
    objective = [
        -np.mean(_tempered_log_proba(log_p, float(np.exp(t)))[np.arange(len(truth)), truth])
        + t**2 / (2 * TEMPERATURE_PRIOR_SD**2 * len(truth))
        for t in grid
    ]
    best = float(np.exp(grid[int(np.argmin(objective))]))
    assert est.temperature_ != 1.0
    assert est.temperature_ == pytest.approx(best, rel=2e-3)
    np.testing.assert_allclose(
        est.predict_proba(x[:20]), _tempered_proba(untempered_proba(est, x[:20]), best), rtol=1e-2
    )


def test_refit_takes_t_from_the_probes_held_out_predictions_and_tempers_every_prediction(corpus, tmp_path):
    est = _quiet_fit(_variational(corpus), corpus)
    assert est.best_iter_ is not None and est.temperature_ != 1.0
    x = torch.from_numpy(corpus.X)
    # the probe again, on the fit's own streams: the same held-out predictions, the same T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        budget, _, held_out = est._early_stopping_budget(x, corpus.labels)
    assert budget == est.best_iter_
    assert est._fit_temperature(held_out) == est.temperature_
    proba = est.predict_proba(x[:30])
    np.testing.assert_allclose(proba, _tempered_proba(untempered_proba(est, x[:30]), est.temperature_), rtol=1e-12)
    path = tmp_path / "gpc.pt"
    est.save(path)
    np.testing.assert_array_equal(LDKGPClassifier.load(path).predict_proba(x[:30]), proba)


@pytest.mark.parametrize("inference", ["laplace", "dirichlet"])
def test_with_early_stopping_laplace_takes_the_held_out_t_and_dirichlet_keeps_its_leave_one_out_t(corpus, inference):
    from lvgp import LBFGS

    est = LDKGPClassifier(
        inference=inference,
        optimizer=LBFGS(max_iter=5),
        early_stopping=EarlyStopping(n_iter_no_change=2),
        calibration="temperature",
        num_words=corpus.num_words,
        random_state=0,
    )
    _quiet_fit(est, corpus)
    assert est.temperature_ != 1.0
    if inference == "dirichlet":  # closed-form leave-one-out predictions: no held-out predictions taken
        assert est.temperature_ == est._fit_temperature(est._loo_log_proba())
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, _, held_out = est._early_stopping_budget(torch.from_numpy(corpus.X), corpus.labels)
    assert est.temperature_ == est._fit_temperature(held_out)


def test_early_stopping_with_a_sentence_encoder_keeps_a_text_without_a_known_word(tiny_encoder):
    """Early stopping validated ``X`` without the encoder's policy: a text of stop words alone, which the
    encoder reads, was refused before the split."""
    texts = ["good film", "bad film", "great plot", "awful plot", "I am OK", "it is a TV"] * 4
    labels = ["pos", "neg", "pos", "neg", "pos", "neg"] * 4
    encoder = tiny_encoder(sorted({w for t in texts for w in t.lower().split()}), 0)
    est = LDKGPClassifier(
        sentence_encoder=encoder,
        inference="variational",
        optimizer=MiniBatch(max_epochs=5),
        early_stopping=EarlyStopping(n_iter_no_change=2),
        calibration="temperature",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(texts, labels)
    assert np.isfinite(est.predict_proba(["I am OK", "good plot"])).all()


def test_early_stopping_keeps_a_text_of_stop_words_alone_under_on_empty_keep():
    """The same validation before the split: ``on_empty="keep"`` was not passed to it, so such a text was refused
    there though the fit keeps it."""
    texts = ["good film", "bad film", "great plot", "awful plot", "I am OK", "it is a TV"] * 4
    labels = ["pos", "neg", "pos", "neg", "pos", "neg"] * 4
    est = LDKGPClassifier(
        inference="variational",
        optimizer=MiniBatch(max_epochs=5),
        early_stopping=EarlyStopping(n_iter_no_change=2),
        calibration="temperature",
        on_empty="keep",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(EmptyDocumentsWarning, match="kept as the empty set"):
            est.fit(texts, labels)
    assert est.best_iter_ is not None and np.isfinite(est.predict_proba(["good plot"])).all()


def test_the_classification_studys_variational_methods_are_tempered_where_the_method_is():
    from lvgp.experiments.classification import with_gpc_inference

    study = SimpleNamespace(gpc_inference="variational", gpc_objective="evidence")
    tempered = with_gpc_inference(LDKGPClassifier(calibration="temperature"), study)
    assert tempered.inference == "variational" and tempered.calibration == "temperature"
    assert tempered.early_stopping is True
    plain = with_gpc_inference(LDKGPClassifier(), study)
    assert plain.calibration is None and plain.early_stopping is False
