"""One kernel assembly (issue 58, 1): ``lvgp.kernels.assembly.assemble_covariance`` turns any ``kernel=``
argument into the model's covariance, and the estimators' capabilities (the spec fields they cannot
take) are declared in their constraint tables."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel

import lvgp
from lvgp import LBFGS, BagOfWordsKernel, LDKSpec
from lvgp.kernels.assembly import EncoderPart, assemble_covariance, kernel_kind
from lvgp.kernels.packed import WordSetKernel

TEXTS = ["good film great acting", "bad film awful plot", "great plot good music", "awful acting bad music"] * 2
LABELS = np.array(["pos", "neg"] * 4)
DOCS = torch.tensor([[0, 1, 2, -1], [3, 1, 4, -1], [2, 4, 0, 5], [3, 6, -1, -1]])


def test_a_spec_is_built_scaled_and_its_kind_reported():
    spec = LDKSpec(rho=0.1)
    built = assemble_covariance(spec, 7, DOCS, seed=3)
    assert isinstance(built.kernel, ScaleKernel) and built.kind == "exact"
    reference = spec.build(7, DOCS, seed=3)
    with torch.no_grad():
        np.testing.assert_array_equal(
            built.kernel.base_kernel(DOCS).to_dense().numpy(), reference(DOCS).to_dense().numpy()
        )
    unscaled = assemble_covariance(spec, 7, DOCS, seed=3, scale=False).kernel
    assert not isinstance(unscaled, ScaleKernel)
    nystrom = assemble_covariance(LDKSpec(rho=0.1, approximation="auto"), 7, DOCS, approximation="nystrom")
    assert nystrom.kind == "nystrom" == kernel_kind(nystrom.kernel)


def test_a_user_kernel_is_copied_as_it_is():
    user = BagOfWordsKernel(7)
    built = assemble_covariance(user, 7, DOCS)
    assert built.kind == "user" and built.kernel is not user and type(built.kernel) is BagOfWordsKernel
    assert assemble_covariance(lambda v: BagOfWordsKernel(v), 7, DOCS).kind == "user"
    with pytest.raises(ValueError, match="takes 5 words but the vocabulary has 7"):
        assemble_covariance(BagOfWordsKernel(5), 7, DOCS)


def test_the_encoder_part_sits_beside_the_words():
    built = assemble_covariance(LDKSpec(rho=0.1), 7, DOCS, encoder=EncoderPart(3, "rbf")).kernel
    inner = built.base_kernel
    assert isinstance(inner.kernels[0], WordSetKernel) and inner.kernels[0].feature_dim == 3


@pytest.mark.parametrize("kind", ["rbf", "nystrom"])
def test_the_estimators_report_the_assembled_kind(kind):
    spec = LDKSpec(rho=0.1, approximation="exact" if kind == "rbf" else "nystrom", num_features=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = lvgp.GPLVSMRegressor(spec, optimizer=LBFGS(max_iter=2)).fit(TEXTS, np.arange(8.0))
        gpc = lvgp.LDKGPClassifier(spec, optimizer=LBFGS(max_iter=2)).fit(TEXTS, LABELS)
    want = "exact" if kind == "rbf" else "nystrom"
    assert reg.kernel_kind_ == gpc.kernel_kind_ == want
    user = lvgp.GPLVSMRegressor(lambda v: ScaleKernel(BagOfWordsKernel(v)), optimizer=LBFGS(max_iter=2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert user.fit(TEXTS, np.arange(8.0)).kernel_kind_ == "user"


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: lvgp.LDKMatcher(LDKSpec(variational=True)), "kernel.variational"),
        (lambda: lvgp.LDKMatcher(LDKSpec(embedding="linear")), "kernel.embedding"),
        (lambda: lvgp.LatentSMMClassifier(LDKSpec(length_kernel=True)), "kernel.length_kernel"),
        (lambda: lvgp.LDKGPClassifier(LDKSpec(variational=True)), "kernel.variational"),
    ],
)
def test_capabilities_are_declared_in_the_constraint_table(make, field):
    """A spec field an estimator cannot take is refused at fit, by its constraint table, with the
    field, the values it takes and why."""
    est = make()
    with pytest.raises(ValueError, match=field) as info:
        if isinstance(est, lvgp.LDKMatcher):
            est.fit(["red apple", "green car"], ["roter apfel", "gruenes auto"])
        else:
            est.fit(TEXTS, LABELS)
    assert "takes" in str(info.value)
    assert est._parameter_constraints["kernel"][0].takes  # declared, not coded in the estimator


def test_no_estimator_assembles_kernels_itself():
    """The estimators call the assembly: none builds around a spec or probes for word vectors."""
    import pathlib
    import re

    models = pathlib.Path(lvgp.__file__).parent / "models"
    for path in models.rglob("*.py"):
        text = path.read_text()
        for pattern in (r"hasattr\(m, \"word_vectors\"\)", r"beside_encoder\(", r"resolve_kernel\("):
            assert not re.search(pattern, text), f"{path.name}: {pattern}"
