"""save / load of every LDK estimator (issues 38 and 40): files of lvgp 0.1 still load and predict the
same; a user kernel (a gpytorch Kernel or a factory) reloads when given again, and the file says so
when it is not; numpy scalars, numpy random generators and every label dtype ``fit`` takes survive
fit -> save -> load -> predict bit for bit; a damaged file is a ``ValueError`` naming it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel

import lvgp
from lvgp import (
    LBFGS,
    Adam,
    BagOfWordsKernel,
    EarlyStopping,
    GPLVSMRegressor,
    LatentDistributionKernel,
    LatentSMMClassifier,
    LDKGPClassifier,
    LDKMatcher,
    LDKSpec,
    MiniBatch,
    SparseGPLVSMRegressor,
    Vocabulary,
)
from lvgp.base.persistence import SavedFileError, classes_from_plain, classes_to_plain, plain_value, restored_value

V1 = Path(__file__).parent / "data" / "saved_v1"
V2 = Path(__file__).parent / "data" / "saved_v2"
TEXTS = [
    "good film great acting",
    "bad film awful plot",
    "great plot good music",
    "awful acting bad music",
    "good acting great film",
    "bad plot awful film",
    "great music good plot",
    "awful film bad acting",
]
Y = np.array([1.0, -1.0, 1.2, -0.9, 1.1, -1.2, 0.8, -0.7])
LABELS = np.array(["pos", "neg"] * 4)
TEST = ["good music", "awful plot bad", "great great film"]


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _predict(est, texts):
    if hasattr(est, "predict_proba"):
        return est.predict_proba(texts)
    return np.stack(est.predict(texts, return_std=True))


#: The files of earlier versions and their predictions were written on another machine. MKL's
#: products take CPU- and alignment-dependent paths: on an AMD EPYC the code that wrote them predicts
#: them to within 2.5e-15, not to the bit. A model saved and loaded on one machine predicts to the
#: bit (the round-trip tests below).
SAVED_ON_ANOTHER_CPU = {"rtol": 1e-12, "atol": 1e-14}


@pytest.mark.parametrize("name", json.loads((V1 / "predictions.json").read_text()))
def test_files_of_lvgp_0_1_load_and_predict_the_same(name):
    """Files of format 1 (lvgp 0.1: the kernel's settings as the estimator's own arguments) load into
    an LDKSpec and predict what lvgp 0.1 predicted, to rounding (:data:`SAVED_ON_ANOTHER_CPU`)."""
    expected = np.array(json.loads((V1 / "predictions.json").read_text())[name])
    cls = LDKGPClassifier if name.startswith("gpc") else GPLVSMRegressor
    est = cls.load(V1 / f"{name}.pt")
    assert isinstance(est.kernel, LDKSpec)
    np.testing.assert_allclose(_predict(est, ["good music", "awful plot bad"]), expected, **SAVED_ON_ANOTHER_CPU)


#: the fit options each file of format 2 (tests/data/saved_v2/make_files.py) loads with
V2_OPTIONS = {
    "gplvsm_map": (
        GPLVSMRegressor,
        LBFGS(max_iter=5, tol=1e-6),
        EarlyStopping(validation_fraction=0.1, n_iter_no_change=3, validation_interval=None),
    ),
    "gplvsm_default": (GPLVSMRegressor, Adam(max_iter=5, lr=0.1, tol=1e-7, convergence_window=4), False),
    "gpc_dirichlet": (
        LDKGPClassifier,
        LBFGS(max_iter=5, tol=1e-6),
        EarlyStopping(validation_fraction=0.3, n_iter_no_change=10, policy="keep-best"),
    ),
    "gpc_variational": (
        LDKGPClassifier,
        MiniBatch(batch_size=4, max_epochs=3, lr=0.03, tol=1e-6, ngd_lr=0.2),
        False,
    ),
    "sparse": (
        SparseGPLVSMRegressor,
        MiniBatch(batch_size=4, max_steps=5, max_epochs=None, lr=0.05, tol=1e-3, convergence_window=100),
        None,
    ),
    "latent_smm": (LatentSMMClassifier, LBFGS(max_iter=5, tol=1e-6), None),
    "matcher": (LDKMatcher, LBFGS(max_iter=5, tol=1e-6), None),
    "matcher_minibatch": (
        LDKMatcher,
        MiniBatch(batch_size=4, max_epochs=3, lr=0.05, tol=1e-6, convergence_window=10),
        None,
    ),
}


@pytest.mark.parametrize("name", list(V2_OPTIONS))
def test_files_before_the_fit_option_objects_load_and_predict_the_same(name, tmp_path):
    """Files of format 2 (lvgp 0.2.0: ``max_iter=``, ``lr=``, ``early_stopping=``, ... as flat
    arguments) load with those values gathered into the fit-option objects, and predict what
    they predicted when saved, to rounding (:data:`SAVED_ON_ANOTHER_CPU`)."""
    cls, optimizer, early_stopping = V2_OPTIONS[name]
    expected = np.array(json.loads((V2 / "predictions.json").read_text())[name])
    est = cls.load(V2 / f"{name}.pt")
    assert est.optimizer == optimizer
    if early_stopping is not None:
        assert est.early_stopping == early_stopping
    test = ["good music", "awful plot bad"]
    if name.startswith("matcher"):
        got = est.distances(test, [t.upper() for t in test])
    elif name == "latent_smm":
        got = est.decision_function(test)
    else:
        got = _predict(est, test)
    np.testing.assert_allclose(got, expected, **SAVED_ON_ANOTHER_CPU)
    est.save(tmp_path / "again.pt")  # today's format 3, the objects as their fields
    again = cls.load(tmp_path / "again.pt")
    assert again.optimizer == est.optimizer and again.get_params(deep=False).keys() == est.get_params(deep=False).keys()


def _user_kernel(vocab):
    return ScaleKernel(BagOfWordsKernel(len(vocab))) + ScaleKernel(LatentDistributionKernel(len(vocab), 2, seed=0))


@pytest.mark.parametrize("form", ["kernel", "factory"])
@pytest.mark.parametrize("cls", [GPLVSMRegressor, SparseGPLVSMRegressor, LDKGPClassifier])
def test_a_user_kernel_reloads_when_given_again(cls, form, tmp_path):
    vocab = Vocabulary().fit(TEXTS)
    kernel = _user_kernel(vocab) if form == "kernel" else _user_kernel_factory
    budget = (
        {"optimizer": MiniBatch(max_steps=5), "num_inducing": 4}
        if cls is SparseGPLVSMRegressor
        else {"optimizer": LBFGS(max_iter=5)}
    )
    est = cls(kernel, vocabulary=vocab, random_state=0, **budget).fit(TEXTS, LABELS if cls is LDKGPClassifier else Y)
    assert est.kernel_kind_ == "user"
    if form == "kernel":  # fitting copies the kernel: the parameter is left as it was given
        assert all(not p.grad_fn and p.grad is None for p in kernel.parameters())
        assert torch.equal(kernel.kernels[0].raw_outputscale, torch.zeros(()))
    est.save(tmp_path / "m.pt")
    with pytest.raises(ValueError, match=r"fitted with a user kernel \(.*\).*load\(path, kernel=\.\.\.\)"):
        cls.load(tmp_path / "m.pt")
    again = cls.load(tmp_path / "m.pt", kernel=kernel)
    np.testing.assert_array_equal(_predict(again, TEST), _predict(est, TEST))
    with pytest.raises(ValueError, match="does not fit the model"):
        cls.load(tmp_path / "m.pt", kernel=LatentDistributionKernel(len(vocab), 3))


def _user_kernel_factory(num_words):
    return ScaleKernel(BagOfWordsKernel(num_words)) + ScaleKernel(LatentDistributionKernel(num_words, 2, seed=0))


def test_a_spec_file_refuses_a_kernel_argument(tmp_path):
    est = GPLVSMRegressor(optimizer=Adam(max_iter=3), random_state=0).fit(TEXTS, Y)
    est.save(tmp_path / "m.pt")
    with pytest.raises(ValueError, match="holds"):
        GPLVSMRegressor.load(tmp_path / "m.pt", kernel=_user_kernel_factory)


def test_a_kernel_smaller_than_the_vocabulary_says_what_to_pass():
    with pytest.raises(ValueError, match=r"takes 3 words but the vocabulary has \d+: pass the fitted vocabulary="):
        GPLVSMRegressor(LatentDistributionKernel(3, 2), optimizer=LBFGS(max_iter=2)).fit(TEXTS, Y)
    with pytest.raises(TypeError, match="kernel must be None, an lvgp LDKSpec or BagOfWordsSpec, a gpytorch Kernel"):
        GPLVSMRegressor("rbf").fit(TEXTS, Y)
    with pytest.raises(TypeError, match="kernel must be None or an lvgp LDKSpec"):
        lvgp.LatentSMMClassifier(_user_kernel_factory).fit(TEXTS, LABELS)


def test_sparse_save_load_is_bit_identical(tmp_path):
    est = SparseGPLVSMRegressor(
        LDKSpec(word_weighting="idf", identity_weight="balanced"),
        num_inducing=4,
        optimizer=MiniBatch(max_steps=10),
        random_state=0,
    ).fit(TEXTS, Y)
    est.save(tmp_path / "s.pt")
    again = SparseGPLVSMRegressor.load(tmp_path / "s.pt")
    np.testing.assert_array_equal(_predict(again, TEST), _predict(est, TEST))
    assert again.kernel == est.kernel and again.n_iter_ == est.n_iter_
    np.testing.assert_array_equal(again.inducing_indices_, est.inducing_indices_)


# ------------------------------------------------------------------ issue 40: values the parameters take
def test_plain_values_round_trip():
    rs = np.random.RandomState(3)
    rs.standard_normal(5)
    gen = np.random.default_rng(7)
    gen.standard_normal(3)
    values = [np.int64(3), np.float32(0.5), np.bool_(True), (1, 2.0, "a"), [np.int8(1)], {"k": np.float64(2)}, rs, gen]
    for value in values:
        back = restored_value(plain_value(value, "p"))
        if isinstance(value, np.random.RandomState):
            assert np.array_equal(back.standard_normal(4), rs.standard_normal(4))
        elif isinstance(value, np.random.Generator):
            assert np.array_equal(back.standard_normal(4), gen.standard_normal(4))
        else:
            assert back == value and type(back) is not np.ndarray
    with pytest.raises(TypeError, match=r"save\(\) cannot write p=<object"):
        plain_value(object(), "p")


@pytest.mark.parametrize(
    "labels",
    [
        np.array(["pos", "neg"] * 4),
        np.array([3, 1] * 4),
        np.array([1.0, 2.0] * 4),
        np.array([True, False] * 4),
        np.array([b"x", b"y"] * 4),
        np.array(["2024-01-01", "2025-06-30"] * 4, dtype="datetime64[D]"),
        np.array([1, 7] * 4, dtype="timedelta64[h]"),
        np.array([("a", 1), ("b", 2)] * 4, dtype=object)[:, 0],
    ],
    ids=["str", "int", "float", "bool", "bytes", "datetime64", "timedelta64", "object"],
)
def test_every_label_dtype_survives_save_and_load(labels, tmp_path):
    classes = np.unique(labels)
    back = classes_from_plain(classes_to_plain(classes))
    assert back.dtype == classes.dtype and np.array_equal(back, classes)
    clf = LDKGPClassifier(optimizer=LBFGS(max_iter=3), random_state=0).fit(TEXTS, labels)
    clf.save(tmp_path / "c.pt")
    again = LDKGPClassifier.load(tmp_path / "c.pt")
    assert again.classes_.dtype == clf.classes_.dtype
    np.testing.assert_array_equal(again.predict(TEST), clf.predict(TEST))
    np.testing.assert_array_equal(again.predict_proba(TEST), clf.predict_proba(TEST))


@pytest.mark.parametrize("cls", [GPLVSMRegressor, LDKGPClassifier, SparseGPLVSMRegressor])
@pytest.mark.parametrize(
    "random_state", [np.int64(5), np.random.RandomState(5), np.random.default_rng(5)], ids=["int64", "rs", "gen"]
)
def test_numpy_scalars_and_generators_as_parameters_save_and_load(cls, random_state, tmp_path):
    budget = {"optimizer": MiniBatch(max_steps=np.int64(4), lr=np.float32(0.02)), "num_inducing": np.int32(4)}
    if cls is not SparseGPLVSMRegressor:
        budget = {"optimizer": LBFGS(max_iter=np.int64(3), tol=np.float64(1e-6))}
    spec = LDKSpec(latent_dim=np.int64(2), rho=np.float64(0.1), gamma=np.float32(1.0))
    est = cls(spec, random_state=random_state, **budget).fit(TEXTS, LABELS if cls is LDKGPClassifier else Y)
    est.save(tmp_path / "m.pt")
    again = cls.load(tmp_path / "m.pt")
    np.testing.assert_array_equal(_predict(again, TEST), _predict(est, TEST))
    assert again.kernel == est.kernel and again.optimizer == est.optimizer


def _damaged(tmp_path: Path, good: Path) -> dict[str, Path]:
    data = good.read_bytes()
    cases = {
        "empty": b"",
        "text": b"this is not a saved model\n",
        "truncated": data[: len(data) // 2],
        "one byte": data[:1],
        "bit-flipped": bytes(b ^ 0xFF if 200 <= i < 260 else b for i, b in enumerate(data)),
    }
    out = {}
    for name, content in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.pt"
        path.write_bytes(content)
        out[name] = path
    pickled = tmp_path / "pickled.pt"
    torch.save({"format": "lvgp.GPLVSMRegressor/2", "params": {"x": object.__new__(Vocabulary)}}, pickled)
    out["foreign object"] = pickled
    wrong = tmp_path / "wrong_params.pt"
    torch.save({"format": "lvgp.GPLVSMRegressor/2", "params": {"no_such_argument": 1}}, wrong)
    out["wrong parameters"] = wrong
    future = tmp_path / "future.pt"
    torch.save({"format": "lvgp.GPLVSMRegressor/9"}, future)
    out["future version"] = future
    (tmp_path / "a_directory.pt").mkdir()
    out["directory"] = tmp_path / "a_directory.pt"
    return out


def test_damaged_files_are_a_value_error_naming_the_file(tmp_path):
    est = GPLVSMRegressor(optimizer=Adam(max_iter=3), random_state=0).fit(TEXTS, Y)
    good = tmp_path / "good.pt"
    est.save(good)
    for name, path in _damaged(tmp_path, good).items():
        with pytest.raises(ValueError, match=str(path.name)) as info:
            GPLVSMRegressor.load(path)
        assert isinstance(info.value, SavedFileError) or "does not fit" in str(info.value), name
        if name == "future version":
            assert "cannot read" in str(info.value) and lvgp.__version__ in str(info.value)
    with pytest.raises(FileNotFoundError):
        GPLVSMRegressor.load(tmp_path / "missing.pt")


@pytest.mark.parametrize(
    "spec",
    [LDKSpec(rho=0.1), LDKSpec(rho=0.1, gamma=4.0), LDKSpec.plus(None, learn_word_vectors=True, identity_weight=1.0)],
    ids=["rbf", "rbf, gamma 4 (fitted rescaled)", "linear + identity"],
)
def test_the_latent_smm_reloads_and_decides_bit_identically(spec, tmp_path):
    from lvgp import LatentSMMClassifier

    smm = LatentSMMClassifier(spec, multi_class="ovr", optimizer=LBFGS(max_iter=4), random_state=0).fit(TEXTS, LABELS)
    smm.save(tmp_path / "smm.pt")
    again = LatentSMMClassifier.load(tmp_path / "smm.pt")
    np.testing.assert_array_equal(again.decision_function(TEST), smm.decision_function(TEST))
    np.testing.assert_array_equal(again.predict(TEST), smm.predict(TEST))
    assert again.kernel == smm.kernel and again.objective_curve_ == smm.objective_curve_


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_matcher_reloads_and_ranks_bit_identically(tmp_path, dtype):
    from lvgp import LDKMatcher
    from lvgp.datasets import WordEmbeddings

    source = ["red apple", "green apple", "red car", "fast car", "green tree", "tall tree"]
    target = ["roter apfel", "gruener apfel", "rotes auto", "schnelles auto", "gruener baum", "hoher baum"]
    table = WordEmbeddings("de", ["roter", "apfel", "auto", "baum", "blauer"], np.eye(5)[:, :3] + 0.1)
    matcher = LDKMatcher(
        LDKSpec(latent_dim=3, rho=0.01, gamma=2.0, level2="cosine", identity_weight=0.5, identity_form="separate"),
        tie_identical_tokens=True,
        target_embeddings=table,
        optimizer=LBFGS(max_iter=5),
        random_state=0,
        dtype=dtype,
    ).fit(source, target)
    matcher.save(tmp_path / "m.pt")
    again = LDKMatcher.load(tmp_path / "m.pt")
    queries, candidates = ["red tree", "green car"], ["blauer baum", "roter apfel", "hoher baum"]
    np.testing.assert_array_equal(again.distances(queries, candidates), matcher.distances(queries, candidates))
    np.testing.assert_array_equal(again.rank(queries, candidates), matcher.rank(queries, candidates))
    assert again.target_embeddings.words == table.words
    assert again.dtype == dtype and again.kernel_.word_vectors.raw_latent.dtype == getattr(torch, dtype)


def test_a_matcher_saved_before_dtype_loads_in_float64(tmp_path):
    """Files written before ``dtype=`` hold a float64 kernel and no ``dtype`` argument: they load as
    float64 (the default is now float32), ranking as they did."""
    from lvgp import LDKMatcher

    source = ["red apple", "green apple", "red car", "fast car", "green tree", "tall tree"]
    target = ["roter apfel", "gruener apfel", "rotes auto", "schnelles auto", "gruener baum", "hoher baum"]
    matcher = LDKMatcher(
        LDKSpec(latent_dim=2, rho=0.01), optimizer=LBFGS(max_iter=5), random_state=0, dtype="float64"
    ).fit(source, target)
    matcher.save(tmp_path / "m.pt")
    payload = torch.load(tmp_path / "m.pt", weights_only=True)
    del payload["params"]["dtype"]
    torch.save(payload, tmp_path / "old.pt")
    again = LDKMatcher.load(tmp_path / "old.pt")
    assert again.dtype == "float64"
    np.testing.assert_array_equal(again.distances(source, target), matcher.distances(source, target))


def _idf_factory(num_words, documents):
    from lvgp.bow.weighting import idf_weights

    return ScaleKernel(BagOfWordsKernel(num_words, "cosine", word_weights=idf_weights(documents, num_words)))


@pytest.mark.parametrize("cls", [GPLVSMRegressor, LDKGPClassifier])
def test_a_factory_of_two_arguments_gets_the_training_documents(cls, tmp_path):
    from lvgp.bow.weighting import idf_weights

    optimizer = MiniBatch(max_steps=5) if cls is SparseGPLVSMRegressor else LBFGS(max_iter=5)
    est = cls(_idf_factory, random_state=0, optimizer=optimizer).fit(TEXTS, LABELS if cls is LDKGPClassifier else Y)
    documents = est.vocabulary_.encode(TEXTS)
    weights = next(m for m in est.model_.modules() if isinstance(m, BagOfWordsKernel)).word_weights
    from lvgp.kernels.document import check_word_weights  # the kernel keeps them scaled by a power of two

    assert torch.equal(weights, check_word_weights(idf_weights(documents, len(est.vocabulary_)), len(est.vocabulary_)))
    est.save(tmp_path / "m.pt")
    again = cls.load(tmp_path / "m.pt", kernel=_idf_factory)
    np.testing.assert_array_equal(_predict(again, TEST), _predict(est, TEST))
