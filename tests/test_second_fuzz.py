"""Regression tests for the defects of the second outside fuzz (issue 59), numbered as the issue
numbers them; each is a correct result or a clear error naming the argument. The encoder's cache
(defects 1 and 2) is in ``test_encoder_cache.py``, its other defects (3-5) in ``test_encoders.py``,
the int16 corpora (defect 6) in ``test_id_dtypes.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel

import lvgp
from lvgp import LBFGS, Adam, GPLVSMRegressor, LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor
from lvgp.base.constraints import check_params
from lvgp.kernels import BagOfWordsKernel, LDKSpec
from lvgp.models.slda import SLDARegressor

TEXTS = [
    "a great film",
    "an awful film",
    "great acting and great music",
    "an awful plot",
    "a dull plot",
    "great fun",
    "dull acting",
    "a great plot",
] * 3
Y = np.array([1.0, -1.0, 1.3, -0.9, -0.6, 1.1, -0.5, 0.9] * 3)


def _quiet_fit(est, x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(x, y)


@pytest.mark.parametrize(
    "estimator",
    [
        GPLVSMRegressor(optimizer=Adam(lr=100), random_state=0),
        SparseGPLVSMRegressor(optimizer=MiniBatch(lr=100), random_state=0),
    ],
    ids=["GPLVSMRegressor-Adam", "SparseGPLVSMRegressor-MiniBatch"],
)
def test_a_diverging_fit_says_lower_the_learning_rate(estimator):
    """Defect 7: a large learning rate ended in a bare NanError from the Cholesky."""
    with pytest.raises(FloatingPointError, match=r"(diverged|became nan).*(lower lr|smaller learning rate)") as info:
        _quiet_fit(estimator, TEXTS, Y)
    assert "NanError" in type(info.value.__cause__).__name__


@pytest.mark.parametrize(
    "estimator,name",
    [
        (GPLVSMRegressor(noise_init=10**400), "noise_init"),
        (GPLVSMRegressor(optimizer=LBFGS(tol=10**400)), r"optimizer\.tol"),
        (SparseGPLVSMRegressor(optimizer=MiniBatch(lr=-(10**400))), r"optimizer\.lr"),
        (GPLVSMRegressor(LDKSpec(rho=10**400)), r"kernel\.rho"),
    ],
)
def test_integers_beyond_float64_are_named(estimator, name):
    """Defect 8: ``10**400`` crashed the check with an OverflowError naming nothing (and a message
    would print all 401 digits)."""
    with pytest.raises(ValueError, match=rf"^{name} must be .*finite") as info:
        check_params(estimator)
    assert len(str(info.value)) < 300


def test_em_slda_refuses_an_optimizer_it_would_ignore():
    """Defect 9: ``SLDARegressor(inference="em")`` silently ignored ``optimizer=``."""
    with pytest.raises(ValueError, match=r"^optimizer: inference='em' fits by the paper's variational EM"):
        SLDARegressor(inference="em", optimizer=MiniBatch(lr=1e-9)).fit(TEXTS, Y)
    check_params(SLDARegressor(inference="em"))
    check_params(SLDARegressor(inference="svi", optimizer=MiniBatch(lr=1e-3)))


@pytest.mark.parametrize("cls", [BagOfWordsKernel, ScaleKernel, RBFKernel, LDKSpec])
@pytest.mark.parametrize("estimator", [GPLVSMRegressor, SparseGPLVSMRegressor, LDKGPClassifier])
def test_a_kernel_class_instead_of_an_instance_says_so(estimator, cls):
    """Defect 10: a kernel class was called as a factory and failed with a message about level2,
    active_dims or zeros()."""
    with pytest.raises((TypeError, ValueError), match=rf"^kernel must be .*not the class.*{cls.__name__}\("):
        check_params(estimator(cls))
    for specs_only in (lvgp.LatentSMMClassifier, lvgp.LDKMatcher):
        with pytest.raises(TypeError, match="^kernel must be"):
            check_params(specs_only(cls))


def test_a_factory_function_and_an_instance_still_work():
    def factory(num_words):
        return ScaleKernel(BagOfWordsKernel(num_words))

    vocab = lvgp.Vocabulary().fit(TEXTS)
    for kernel in (factory, ScaleKernel(BagOfWordsKernel(len(vocab)))):
        est = _quiet_fit(GPLVSMRegressor(kernel, vocabulary=vocab, optimizer=LBFGS(max_iter=3)), TEXTS, Y)
        assert np.isfinite(est.predict(TEXTS[:3])).all()
    assert torch.get_default_dtype() == torch.float32
