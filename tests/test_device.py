"""``device=``: every torch/Pyro estimator fits, predicts, saves and loads on the device it is
given. The tests run on every device this machine has: the CPU everywhere (CI), and CUDA where a
GPU is present (the results in benchmarks/README.md name the GPU they ran on).

On the CPU alone, three checks still bite: ``device="cpu"`` is the default bit for bit; every
tensor of a fitted model moves with ``.to(...)`` (checked by moving to the ``meta`` device: a
tensor kept as a plain attribute, which ``.to()`` leaves behind, is found); and the argument is
checked like every other parameter.
"""

from __future__ import annotations

import copy
import itertools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator

import lvgp
from lvgp import LBFGS, Adam, MiniBatch, RMSprop
from lvgp.baselines import GPRBFRegressor
from lvgp.baselines.encoder import (
    EncoderGPRegressor,
    EncoderLogisticRegression,
    EncoderMahalanobis,
    EncoderNearestNeighbor,
    EncoderRidge,
)
from lvgp.baselines.gp_embedding import GPEmbeddingLogisticRegression
from lvgp.datasets import WordEmbeddings
from lvgp.kernels import LDKSpec
from lvgp.models.clgp import CLGP
from lvgp.models.slda import SLDAClassifier, SLDARegressor

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

WORDS = "good great fine bad awful poor plot actor scene music".split()


def _texts(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    texts, y = [], []
    for _ in range(n):
        words = rng.choice(WORDS, size=rng.integers(3, 7))
        texts.append(" ".join(words))
        y.append(sum(w in ("good", "great", "fine") for w in words) - sum(w in ("bad", "awful", "poor") for w in words))
    return texts, np.asarray(y, dtype=float)


TRAIN, Y = _texts(40, 0)
TEST, _ = _texts(12, 1)
LABELS = (Y > 0).astype(int)
CODES = np.random.default_rng(2).integers(0, 3, size=(30, 4))
EMBEDDINGS = WordEmbeddings("toy", WORDS, np.random.default_rng(3).normal(size=(len(WORDS), 4)))
CODES[::5, 1] = -1  # missing entries


@dataclass
class Case:
    """One estimator: how to build it, fit it and read its predictions and torch modules."""

    name: str
    make: Callable[..., BaseEstimator]
    fit: Callable[[BaseEstimator], Any]
    predict: Callable[[BaseEstimator], np.ndarray]
    modules: Callable[[BaseEstimator], list[torch.nn.Module]]
    #: whether a fit on another device gives the same numbers up to rounding (False where Monte
    #: Carlo draws come from the device's own generator)
    deterministic: bool = True


def _regression_fit(est: BaseEstimator) -> Any:
    return est.fit(TRAIN, Y)


def _classification_fit(est: BaseEstimator) -> Any:
    return est.fit(TRAIN, LABELS)


def _model_and_likelihood(est: BaseEstimator) -> list[torch.nn.Module]:
    return [est.model_, est.likelihood_]


def _tiny_encoder(device: str = "cpu") -> Any:
    """A tiny random BERT (lvgp.encoders), on ``device``."""
    pytest.importorskip("transformers")
    from lvgp.encoders import SentenceEncoder

    return SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0, device=device)


def _nystrom_case(name: str, estimator: type, spec: LDKSpec, fit: Callable, predict: Callable, **budget: Any) -> Case:
    """A stochastic estimator with a Nystrom kernel (its fit draws from the device's own generator)."""
    return Case(
        name,
        lambda **kw: estimator(spec, random_state=0, **budget, **kw),
        fit,
        predict,
        _model_and_likelihood,
        deterministic=False,
    )


CASES = [
    Case(
        "EncoderGPRegressor",
        lambda **kw: EncoderGPRegressor(_tiny_encoder(kw.get("device", "cpu")), optimizer=LBFGS(max_iter=5), **kw),
        _regression_fit,
        lambda est: np.column_stack(est.predict(TEST, return_std=True)),
        _model_and_likelihood,
    ),
    Case(
        "EncoderLogisticRegression",
        lambda **kw: EncoderLogisticRegression(_tiny_encoder(kw.get("device", "cpu")), random_state=0, **kw),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        lambda est: [est._encoder().model],
    ),
    Case(
        "EncoderMahalanobis",
        lambda **kw: EncoderMahalanobis(_tiny_encoder(kw.get("device", "cpu")), **kw),
        _classification_fit,
        lambda est: np.column_stack([est.predict_proba(TEST), est.score_samples(TEST)]),
        lambda est: [est._encoder().model],
    ),
    Case(
        "EncoderNearestNeighbor",
        lambda **kw: EncoderNearestNeighbor(_tiny_encoder(kw.get("device", "cpu")), **kw),
        _classification_fit,
        lambda est: np.column_stack([est.decision_function(TEST), est.score_samples(TEST)]),
        lambda est: [est._encoder().model],
    ),
    Case(
        "EncoderRidge",
        lambda **kw: EncoderRidge(_tiny_encoder(kw.get("device", "cpu")), random_state=0, **kw),
        _regression_fit,
        lambda est: est.predict(TEST),
        lambda est: [est._encoder().model],
    ),
    Case(
        "GPLVSMRegressor",
        lambda **kw: lvgp.GPLVSMRegressor(
            LDKSpec(latent_dim=2), optimizer=lvgp.LBFGS(max_iter=5), random_state=0, **kw
        ),
        _regression_fit,
        lambda est: np.column_stack(est.predict(TEST, return_std=True)),
        _model_and_likelihood,
    ),
    Case(
        "GPLVSMRegressor-variational",
        lambda **kw: lvgp.GPLVSMRegressor(
            LDKSpec(latent_dim=2, variational=True),
            optimizer=lvgp.Adam(max_iter=4),
            predict_samples=3,
            random_state=0,
            **kw,
        ),
        _regression_fit,
        lambda est: np.column_stack(est.predict(TEST, return_std=True)),
        _model_and_likelihood,
    ),
    Case(
        "GPLVSMRegressor-plus",
        lambda **kw: lvgp.GPLVSMRegressor(
            LDKSpec(latent_dim=2, word_weighting="idf", identity_weight="balanced"),
            optimizer=lvgp.LBFGS(max_iter=5),
            random_state=0,
            **kw,
        ),
        _regression_fit,
        lambda est: np.column_stack(est.predict(TEST, return_std=True)),
        _model_and_likelihood,
    ),
    Case(
        "GPRBFRegressor",
        lambda **kw: GPRBFRegressor(optimizer=LBFGS(max_iter=5), random_state=0, **kw),
        _regression_fit,
        lambda est: np.column_stack(est.predict(TEST, return_std=True)),
        _model_and_likelihood,
    ),
    Case(
        "SparseGPLVSMRegressor",
        lambda **kw: lvgp.SparseGPLVSMRegressor(
            LDKSpec(latent_dim=2),
            num_inducing=6,
            optimizer=lvgp.MiniBatch(batch_size=16, max_steps=7, convergence_window=3),
            random_state=0,
            **kw,
        ),
        _regression_fit,
        lambda est: np.column_stack(est.predict(TEST, return_std=True)),
        _model_and_likelihood,
        # gpytorch initializes q(u) at the first training step, with jitter from the device's generator
        deterministic=False,
    ),
    Case(
        "LDKGPClassifier",
        lambda **kw: lvgp.LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=0.1), optimizer=lvgp.LBFGS(max_iter=5), random_state=0, **kw
        ),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        _model_and_likelihood,
    ),
    Case(
        "LDKGPClassifier-laplace",
        lambda **kw: lvgp.LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=0.1), inference="laplace", optimizer=lvgp.LBFGS(max_iter=5), random_state=0, **kw
        ),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        _model_and_likelihood,
    ),
    Case(
        "LDKGPClassifier-variational",
        lambda **kw: lvgp.LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=0.1),
            inference="variational",
            num_inducing=6,
            optimizer=lvgp.MiniBatch(max_epochs=3),
            random_state=0,
            **kw,
        ),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        _model_and_likelihood,
        deterministic=False,
    ),
    # Nystrom landmarks, what a vocabulary of more than 2,048 words takes (they built torch.eye on the CPU)
    _nystrom_case(
        "LDKGPClassifier-variational-nystrom",
        lvgp.LDKGPClassifier,
        LDKSpec(latent_dim=2, rho=0.1, approximation="nystrom", num_features=4),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        inference="variational",
        num_inducing=6,
        optimizer=lvgp.MiniBatch(max_epochs=3),
    ),
    _nystrom_case(
        "SparseGPLVSMRegressor-nystrom",
        lvgp.SparseGPLVSMRegressor,
        LDKSpec.variational_bow(approximation="nystrom", num_features=4),
        _regression_fit,
        lambda est: est.predict(TEST),
        num_inducing=6,
        optimizer=lvgp.MiniBatch(max_steps=4),
    ),
    Case(
        "LatentSMMClassifier",
        lambda **kw: lvgp.LatentSMMClassifier(
            LDKSpec(latent_dim=2, rho=0.1), optimizer=lvgp.LBFGS(max_iter=4), random_state=0, **kw
        ),
        _classification_fit,
        lambda est: est.decision_function(TEST),
        lambda est: [est.kernel_],
    ),
    Case(
        "LDKMatcher",
        lambda **kw: lvgp.LDKMatcher(
            LDKSpec(latent_dim=2, rho=0.01), optimizer=lvgp.LBFGS(max_iter=4), random_state=0, **kw
        ),
        lambda est: est.fit(TRAIN, [t.upper() for t in TRAIN]),
        lambda est: est.distances(TEST, [t.upper() for t in TEST], on_empty="keep"),
        lambda est: [est.kernel_],
    ),
    Case(
        "GPEmbeddingLogisticRegression",
        lambda **kw: GPEmbeddingLogisticRegression(
            embeddings=EMBEDDINGS, optimizer=LBFGS(max_iter=5), random_state=0, **kw
        ),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        lambda est: [est.model_],
    ),
    Case(
        "GPEmbeddingLogisticRegression-normal",
        lambda **kw: GPEmbeddingLogisticRegression(
            embeddings=EMBEDDINGS,
            posterior="normal",
            optimizer=Adam(max_iter=5),
            predict_samples=3,
            random_state=0,
            **kw,
        ),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        lambda est: [est.model_],
        deterministic=False,
    ),
    Case(
        "CLGP",
        lambda **kw: CLGP(
            latent_dim=2,
            num_inducing=4,
            optimizer=RMSprop(max_iter=6),
            impute_iter=3,
            predict_samples=3,
            random_state=0,
            **kw,
        ),
        lambda est: est.fit(CODES, [3, 3, 3, 3]),
        lambda est: np.concatenate(est.predict_proba(CODES[:5]), axis=1),
        lambda est: [est.model_],
        deterministic=False,
    ),
    Case(
        "SLDARegressor",
        lambda **kw: SLDARegressor(n_topics=2, optimizer=MiniBatch(max_epochs=2), random_state=0, **kw),
        _regression_fit,
        lambda est: est.predict(TEST),
        lambda est: [est.model_],
        deterministic=False,
    ),
    Case(
        "SLDAClassifier",
        lambda **kw: SLDAClassifier(n_topics=2, optimizer=MiniBatch(max_epochs=2), random_state=0, **kw),
        _classification_fit,
        lambda est: est.predict_proba(TEST),
        lambda est: [est.model_],
        deterministic=False,
    ),
]
IDS = [c.name for c in CASES]


def _fitted(case: Case, **kw: Any) -> BaseEstimator:
    est = case.make(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny budgets: convergence warnings by design
        case.fit(est)
    return est


def _predict(case: Case, est: BaseEstimator) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(case.predict(est), dtype=float)


def _tensors(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """Every tensor a module tree holds: parameters, buffers, and tensors kept as plain
    attributes (alone or in a tuple/list, as gpytorch's ``train_inputs``)."""
    found = [(f"parameter {n}", p) for n, p in module.named_parameters()]
    found += [(f"buffer {n}", b) for n, b in module.named_buffers()]
    for prefix, sub in module.named_modules():
        for attr, value in vars(sub).items():
            values = value if isinstance(value, (tuple, list)) else [value]
            found += [(f"attribute {prefix}.{attr}", v) for v in values if isinstance(v, torch.Tensor)]
    return found


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fits_and_predicts_on_the_device(case: Case, device: str) -> None:
    est = _fitted(case, device=device)
    for module in case.modules(est):
        misplaced = [name for name, t in _tensors(module) if t.device.type != device]
        assert not misplaced, f"{case.name} left tensors off {device}: {misplaced[:5]}"
    out = _predict(case, est)
    assert np.isfinite(out).all() and isinstance(out, np.ndarray)
    if device == "cpu":  # "cpu" is the default, bit for bit
        np.testing.assert_array_equal(out, _predict(case, _fitted(case)))
    elif case.deterministic:  # the same fit up to the devices' rounding, in the model's own precision
        # (LDKMatcher computes in float32 by default and returns float64: on an H200, 2026-11-30, its
        # distances near 0 differed from the CPU's by 1.8e-7, float32's cancellation)
        single = getattr(est, "dtype", "float64") == "float32" or out.dtype == np.float32
        tol = {"rtol": 1e-4, "atol": 1e-6} if single else {"rtol": 1e-5, "atol": 1e-7}
        np.testing.assert_allclose(out, _predict(case, _fitted(case, device="cpu")), **tol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_tensor_of_a_fitted_model_moves_with_to(case: Case) -> None:
    est = _fitted(case)
    for module in case.modules(est):
        moved = copy.deepcopy(module).to("meta")
        left = [name for name, t in _tensors(moved) if t.device.type != "meta"]
        assert not left, f"{case.name}: .to() leaves these tensors behind: {left}"
        doubled = copy.deepcopy(module).to(torch.float32)
        kept = [n for n, t in _tensors(doubled) if t.is_floating_point() and t.dtype != torch.float32]
        assert not kept, f"{case.name}: .to(float32) leaves these tensors in float64: {kept}"


@pytest.mark.parametrize("source, target", list(itertools.product(DEVICES, DEVICES)))
@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: lvgp.GPLVSMRegressor(
            LDKSpec(latent_dim=2), optimizer=lvgp.LBFGS(max_iter=5), random_state=0, **kw
        ),
        lambda **kw: GPRBFRegressor(optimizer=LBFGS(max_iter=5), random_state=0, **kw),
    ],
    ids=["GPLVSM", "GPRBF"],
)
def test_save_on_one_device_and_load_on_another(tmp_path, make, source: str, target: str) -> None:
    est = make(device=source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(TRAIN, Y)
    path = tmp_path / "model.pt"
    est.save(path)
    saved = torch.load(path, weights_only=True)
    assert all(t.device.type == "cpu" for t in saved["state_dict"].values()), "files hold CPU tensors"
    loaded = type(est).load(path, device=target)
    assert loaded.device_ == torch.device(target)
    assert all(p.device.type == target for p in loaded.model_.parameters())
    mean, std = loaded.predict(TEST, return_std=True)
    ref_mean, ref_std = est.predict(TEST, return_std=True)
    if source == target:
        np.testing.assert_array_equal(mean, ref_mean)
        np.testing.assert_array_equal(std, ref_std)
    else:
        np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(std, ref_std, rtol=1e-9, atol=1e-12)
    # without a device, a file loads where it was fitted
    assert type(est).load(path).device_ == torch.device(source)


@pytest.mark.parametrize("source, target", list(itertools.product(DEVICES, DEVICES)))
@pytest.mark.parametrize("inference", ["dirichlet", "variational"])
def test_a_gp_classifier_saved_on_one_device_loads_on_another(tmp_path, inference: str, source: str, target: str):
    clf = lvgp.LDKGPClassifier(
        LDKSpec(latent_dim=2, rho=0.1),
        inference=inference,
        optimizer=lvgp.LBFGS(max_iter=5) if inference == "dirichlet" else lvgp.MiniBatch(max_epochs=3),
        num_inducing=8,
        random_state=0,
        device=source,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(TRAIN, LABELS)
    path = tmp_path / "gpc.pt"
    clf.save(path)
    saved = torch.load(path, weights_only=True)
    assert all(t.device.type == "cpu" for t in [*saved["model"].values(), *saved["likelihood"].values()])
    loaded = lvgp.LDKGPClassifier.load(path, device=target)
    assert loaded.device_ == torch.device(target)
    assert all(p.device.type == target for p in loaded.model_.parameters())
    if source == target:
        np.testing.assert_array_equal(loaded.predict_proba(TEST), clf.predict_proba(TEST))
    else:
        np.testing.assert_allclose(loaded.predict_proba(TEST), clf.predict_proba(TEST), rtol=1e-9, atol=1e-12)
    assert lvgp.LDKGPClassifier.load(path).device_ == torch.device(source)


@pytest.mark.parametrize(
    "device, error, message",
    [
        ("bogus", ValueError, "device must be a torch device such as 'cpu' or 'cuda'; got 'bogus'"),
        (3, TypeError, "device must be .*torch device.*; got 3"),
        ("tpu", ValueError, "device must be"),
    ],
)
def test_a_bad_device_names_itself(device: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        lvgp.GPLVSMRegressor(device=device).fit(TRAIN, Y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"device must be a usable device \(this torch sees no CUDA device"):
        lvgp.LDKGPClassifier(device="cuda").fit(TRAIN, LABELS)


#: exported estimators that take no ``device``, and why
NO_DEVICE = {
    "LDARegression": "variational EM in numpy on the host (no torch computation)",
}


#: estimators of lvgp.models / lvgp.baselines that compute in numpy or scikit-learn only
HOST_ONLY = {
    "BagOfClustersClassifier",
    "BigramDirichletMultinomial",
    "BowClassifier",
    "DevTunedLinearRegression",
    "KernelCCAMatcher",
    "KernelSVMClassifier",
    "MeanEmbeddingClassifier",
    "MultinomialModel",
    "OpenSetClassifier",  # computes where its classifier does (that one takes device=)
    "TfidfLogisticRegression",
    "TfidfRidge",
    "UniformModel",
    "UnigramDirichletMultinomial",
}


def test_every_torch_estimator_takes_a_device() -> None:
    """Every estimator of lvgp.models and lvgp.baselines (``lvgp.all_estimators()``: a new one cannot
    be left out) takes ``device=`` and has a case here, or is named with the reason it has none."""
    estimators = {c.__name__: c for c in lvgp.all_estimators() if c.__name__ not in HOST_ONLY}
    assert all(issubclass(c, BaseEstimator) for c in estimators.values())
    for name, cls in estimators.items():
        if name in NO_DEVICE:
            assert "device" not in cls().get_params(), f"{name} takes device now: remove it from NO_DEVICE"
            continue
        assert cls().get_params()["device"] == "cpu", f"{name} takes no device= (or its default is not 'cpu')"
        assert any(c.name.split("-")[0] == name for c in CASES), f"{name} has no device case in this file"


def test_a_study_puts_its_torch_methods_on_its_device(monkeypatch) -> None:
    monkeypatch.setenv("LVGP_ALLOW_META_DEVICE", "1")
    from lvgp.experiments.classification import ClassificationStudy
    from lvgp.experiments.study import Study

    # "meta" passes the device check everywhere, so this runs on a machine without a GPU; the
    # base class's validate checks methods and device without loading the corpus
    study = ClassificationStudy(dataset="r8", device="meta", methods=("latent-smm-plus", "latent-smm", "svm"))
    Study.validate(study)
    wrapped = study.estimator({"method": "latent-smm-plus", "split": 0, "params": {}})
    assert wrapped.estimator.device == "meta"  # inside the dev-selection wrapper
    assert study.estimator({"method": "ldk-gpc-plus", "split": 0, "params": {}}).device == "meta"  # no dev grid
    smm = study.estimator({"method": "latent-smm", "split": 0, "params": {}})
    assert getattr(smm, "estimator", smm).device == "meta"
    assert "device" not in study.build({"method": "svm", "split": 0, "params": {}}).get_params()
    with pytest.raises(ValueError, match="--device must be a torch device such as 'cpu' or 'cuda'; got 'gpu0'"):
        Study.validate(ClassificationStudy(dataset="r8", device="gpu0"))


def test_compare_has_a_device_option(capsys) -> None:
    from lvgp.experiments.cli import main

    with pytest.raises(SystemExit):
        main(["compare", "classification", "--help"])
    assert "--device DEVICE" in capsys.readouterr().out


def test_loss_buffer_reads_back_in_windows_and_names_the_step_that_diverged() -> None:
    from lvgp.base.device import LossBuffer

    buffer = LossBuffer(every=3, what="the ELBO", advice="lower lr")
    read = [buffer.append(torch.tensor(float(k))) for k in range(7)]
    assert read == [None, None, [0.0, 1.0, 2.0], None, None, [3.0, 4.0, 5.0], None]
    assert buffer.append(torch.tensor(7.0), flush=True) == [6.0, 7.0]  # a step where a rule decides
    assert buffer.flush() == []
    buffer.append(torch.tensor(1.0))
    buffer.append(torch.tensor(float("nan")))
    with pytest.raises(FloatingPointError, match="the ELBO became nan at step 10; lower lr"):
        buffer.flush()


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])  # a GPU's default (the CPU's: test_fused_*)
@pytest.mark.parametrize("model", ["sparse-gplvsm", "variational-gpc"])
def test_the_fused_step_on_a_gpu_follows_the_eager_fit(monkeypatch, model: str, device: str) -> None:
    """On a GPU, ``MiniBatch(compile=True)`` takes the fused step of the regressor and of the variational
    classifier after the first (``torch.compile`` made the identity here: the function, its host tables
    and its status on the device; the compiled graphs on a GPU are ``gpu_all.sh``'s parts
    ``large-50k-compiled`` and ``large-50k-compiled-gpc``), on the eager fit's trajectory."""
    from lvgp.datasets import make_zipf_topic_documents
    from lvgp.models import fused_step

    compiled: list[Any] = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: compiled.append(fn) or fn)
    corpus = make_zipf_topic_documents(160, num_words=800, max_length=30, random_state=0)
    x = torch.from_numpy(corpus.X)

    def fit(compile: bool) -> list[float]:
        common: dict[str, Any] = dict(num_inducing=12, num_words=corpus.num_words, random_state=0, device=device)
        with warnings.catch_warnings(), fused_step.fused_steps(device == "cpu"):
            warnings.simplefilter("ignore")
            if model == "sparse-gplvsm":
                spec = LDKSpec(**lvgp.SparseGPLVSMRegressor._default_kernel).replace(approximation="nystrom")
                options = MiniBatch(batch_size=32, max_steps=8, compile=compile)
                return lvgp.SparseGPLVSMRegressor(spec, optimizer=options, **common).fit(x, corpus.y).step_losses_
            spec = LDKSpec(**lvgp.LDKGPClassifier._default_kernel).replace(approximation="nystrom")
            options = MiniBatch(batch_size=32, max_epochs=2, compile=compile)
            clf = lvgp.LDKGPClassifier(spec, inference="variational", optimizer=options, **common)
            return clf.fit(x, corpus.labels).loss_curve_

    eager, fused = fit(False), fit(True)
    assert compiled == [
        fused_step.packed_objective if model == "sparse-gplvsm" else fused_step.packed_softmax_objective
    ]
    np.testing.assert_allclose(fused, eager, rtol=1e-9)
