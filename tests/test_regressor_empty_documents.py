"""``GPLVSMRegressor(on_empty="keep")``: training texts without a word of the vocabulary (stop words alone) kept as
the empty set, where no sentence encoder reads them. Checked against R&W eq. 2.23-2.24 written out with the empty
documents' kernel rows zero (the kernel evaluated on the other documents alone) at a linear level 2, and against the
level-2 RBF's value at the zero embedding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from lvgp import LBFGS, EarlyStopping, GPLVSMRegressor
from lvgp.kernels import LDKSpec
from lvgp.warnings import EmptyDocumentsWarning
from tests.test_gpc_empty_documents import EMPTY, TEXTS, kernel_of_the_others  # stop words alone at rows EMPTY

TARGETS = [1.0, 0.2, -1.0, -0.1, 1.4, -0.9, 0.6, -0.7, 1.1, 0.0, -0.8, 0.7]
KNOWN = [i for i in range(len(TEXTS)) if i not in EMPTY]


def _regressor(spec=None, **params) -> GPLVSMRegressor:
    return GPLVSMRegressor(
        spec or LDKSpec(latent_dim=2, rho=1.0), optimizer=LBFGS(max_iter=300), random_state=0, **params
    )


# refused by default, the error offering on_empty="keep"; a covariance with no document kernel refused:
# tests/test_sparse_empty_documents.py, for every estimator


def test_kept_empty_texts_are_zero_rows_of_the_kernel_in_the_predictive_written_out():
    with pytest.warns(EmptyDocumentsWarning, match=r"3 of 12 training documents .*rows \[1, 3, 9\].*kept as the empty"):
        reg = _regressor(on_empty="keep").fit(TEXTS, TARGETS)
    model, lik = reg.model_, reg.likelihood_
    inputs = model.train_inputs[0]
    n = len(TEXTS)
    test = ["great plot", "awful music", "fine acting"]
    x_test = reg.vocabulary_.encode(test)
    K, cross = kernel_of_the_others(model.covar_module, inputs, KNOWN, x_test)
    with torch.no_grad():
        noise = float(lik.noise)
        targets, mean = model.train_targets.numpy(), float(model.mean_module.constant)
        prior = model.covar_module(x_test, diag=True).numpy()
    shifted = K + noise * np.eye(n)
    written_mean = mean + cross @ np.linalg.solve(shifted, targets - mean)  # R&W eq. 2.23 (standardized units)
    written_var = prior - np.einsum("tn,nt->t", cross, np.linalg.solve(shifted, cross.T)) + noise  # eq. 2.24 + noise
    pred_mean, pred_std = reg.predict(test, return_std=True)
    np.testing.assert_allclose((pred_mean - reg.y_mean_) / reg.y_std_, written_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pred_std / reg.y_std_, np.sqrt(written_var), rtol=1e-8)
    # an empty text informs the constant mean alone: a fit without them has another
    rest = _regressor().fit([TEXTS[i] for i in KNOWN], [TARGETS[i] for i in KNOWN])
    assert not np.isclose(float(rest.model_.mean_module.constant), mean)


def test_at_a_level2_rbf_the_empty_set_is_the_zero_embedding():
    """Eq. 3.11 at the zero mean embedding: ``exp(-zeta/2 ||m||^2)`` against a text of embedding ``m``, the output
    scale against another empty text."""
    spec = LDKSpec(latent_dim=2, rho=1.0, level2="rbf")
    with pytest.warns(EmptyDocumentsWarning, match="kept as the empty"):
        reg = _regressor(spec, on_empty="keep").fit(TEXTS, TARGETS)
    inputs = reg.model_.train_inputs[0]
    ldk = reg.model_.ldk
    with torch.no_grad():
        gram = reg.model_.covar_module(inputs).to_dense().numpy()
        squared_norms = ldk.squared_mmd(inputs[KNOWN], inputs[EMPTY[:1]], allow_empty=True).numpy()[:, 0]
        zeta, outputscale = float(ldk.level2.zeta), float(reg.model_.covar_module.outputscale)
    assert (squared_norms > 0).all()
    np.testing.assert_allclose(gram[EMPTY[0], KNOWN], outputscale * np.exp(-0.5 * zeta * squared_norms), rtol=1e-10)
    np.testing.assert_allclose(gram[np.ix_(EMPTY, EMPTY)], outputscale, rtol=1e-12)


def test_the_length_kernel_gives_the_empty_set_length_zero():
    with pytest.warns(EmptyDocumentsWarning, match="kept as the empty"):
        reg = _regressor(LDKSpec(latent_dim=2, rho=1.0, length_kernel=True), on_empty="keep").fit(TEXTS, TARGETS)
    with torch.no_grad():
        gram = reg.model_.covar_module(reg.model_.train_inputs[0]).to_dense().numpy()
    assert (gram[EMPTY] == 0).all() and np.isfinite(reg.loss_curve_).all()


def test_kept_empty_texts_reload_bit_exactly_and_early_stopping_needs_a_scorable_document(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = _regressor(on_empty="keep").fit(TEXTS, TARGETS)
        mean, std = reg.predict(["great plot", "no", "dull film"], return_std=True)
        reg.save(tmp_path / "reg.pt")
        loaded = GPLVSMRegressor.load(tmp_path / "reg.pt")
        assert loaded.on_empty == "keep"
        np.testing.assert_array_equal(loaded.predict(["great plot", "no", "dull film"], return_std=True), (mean, std))
    assert np.isfinite(mean).all() and np.isfinite(std).all()
    with pytest.raises(ValueError, match="none of the 2 validation documents has a known word"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _regressor(on_empty="keep", early_stopping=EarlyStopping()).fit(
                TEXTS, TARGETS, X_val=["no", "it is"], y_val=[0.0, 0.1]
            )
