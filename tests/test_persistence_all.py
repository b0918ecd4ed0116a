"""One save/load template for every estimator (issue 58): every estimator of lvgp
(``lvgp.all_estimators()``, so that a new one cannot be left out) either saves -- fit, ``save``,
``load``, and the loaded estimator predicts bit-identically, holds the same fitted attributes, and
loading leaves the caller's random streams as they were -- or is listed below as a scikit-learn
composition, persisted as scikit-learn's estimators are."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import lvgp
from lvgp import LBFGS, Adam, LDKSpec, MiniBatch, RMSprop
from lvgp.baselines.encoder import EncoderGPRegressor
from lvgp.datasets import WordEmbeddings

from .test_persistence import TEXTS as BASE_TEXTS

TEXTS = BASE_TEXTS * 2
Y = np.array([1.0, -1.0, 1.2, -0.9, 1.1, -1.2, 0.8, -0.7] * 2) + np.linspace(0, 0.2, 16)
LABELS = np.array(["pos", "neg"] * 8)
THREE = np.array(["a", "b", "c", "a", "b", "c", "a", "b"] * 2)
TEST = ["good music", "awful plot bad film", "great great film"]
TABLE = WordEmbeddings(
    "toy",
    ["good", "great", "bad", "awful", "film", "plot", "music", "acting"],
    np.array([[1, 0.2], [0.9, 0.1], [-1, 0.1], [-0.9, 0.3], [0, 1], [0.1, -1], [0.2, 0.5], [-0.1, 0.4]]),
)
CODES = np.random.default_rng(0).integers(0, 3, size=(24, 4))
CODES[0, 1] = -1
TEST_CODES = np.where(np.arange(4) == 2, -1, CODES[:5])
PAIRS = (["red apple", "green apple", "red car", "fast car"], ["roter apfel", "gruener apfel", "rotes auto", "auto"])

#: scikit-learn compositions: pipelines of scikit-learn estimators (and a sentence encoder by name),
#: persisted as scikit-learn's are (joblib, trusted files only), with no torch state of their own
NOT_SAVED = {
    "BagOfClustersClassifier",
    "BigramDirichletMultinomial",
    "BowClassifier",
    "DevTunedLinearRegression",
    "EncoderLogisticRegression",
    "EncoderMahalanobis",
    "EncoderNearestNeighbor",
    "EncoderRidge",
    "KernelCCAMatcher",
    "KernelSVMClassifier",
    "MeanEmbeddingClassifier",
    "MultinomialModel",
    "TfidfLogisticRegression",
    "TfidfRidge",
    "UniformModel",
    "UnigramDirichletMultinomial",
}


def _outputs(est, inputs) -> list:
    """Everything the estimator predicts for ``inputs``, as numpy arrays."""
    out = []
    for name in ("predict_proba", "decision_function", "transform"):
        if hasattr(est, name):
            value = getattr(est, name)(inputs)
            out += value if isinstance(value, list) else [value]
    if hasattr(est, "rank"):
        out += [est.distances(*inputs), est.rank(*inputs)]
    elif isinstance(est, lvgp.CLGP):
        out += list(est.infer_rows(inputs))
    elif hasattr(est, "predict"):
        out.append(est.predict(inputs))
    if hasattr(est, "predict") and "return_std" in est.predict.__code__.co_varnames:
        try:
            out += list(est.predict(inputs, return_std=True))
        except ValueError:  # a Poisson sLDA has no predictive std
            pass
    return [np.asarray(v) for v in out]


#: a small fit of every estimator that saves, and the inputs it predicts for
FITS = {
    "GPLVSMRegressor": lambda: (
        lvgp.GPLVSMRegressor(LDKSpec(rho=0.1), optimizer=LBFGS(max_iter=3), random_state=0).fit(TEXTS, Y),
        TEST,
    ),
    "GPRBFRegressor": lambda: (lvgp.GPRBFRegressor(optimizer=LBFGS(max_iter=3)).fit(TEXTS, Y), TEST),
    "LDKGPClassifier": lambda: (
        lvgp.LDKGPClassifier(LDKSpec(rho=0.1), optimizer=LBFGS(max_iter=3), random_state=0).fit(TEXTS, THREE),
        TEST,
    ),
    "SparseGPLVSMRegressor": lambda: (
        lvgp.SparseGPLVSMRegressor(
            LDKSpec(rho=0.1), num_inducing=4, optimizer=MiniBatch(batch_size=8, max_steps=3), random_state=0
        ).fit(TEXTS, Y),
        TEST,
    ),
    "LatentSMMClassifier": lambda: (
        lvgp.LatentSMMClassifier(LDKSpec(rho=0.1), optimizer=LBFGS(max_iter=3), random_state=0).fit(TEXTS, LABELS),
        TEST,
    ),
    "LDKMatcher": lambda: (
        lvgp.LDKMatcher(LDKSpec(latent_dim=2, rho=0.1), optimizer=LBFGS(max_iter=3), random_state=0).fit(*PAIRS),
        (["red apple", "fast car"], ["auto", "roter apfel"]),
    ),
    "CLGP": lambda: (
        lvgp.CLGP(
            2,
            num_inducing=5,
            optimizer=RMSprop(max_iter=15),
            latent_scale="joint",
            impute_iter=5,
            predict_samples=7,
            random_state=np.random.default_rng(1),
        ).fit(CODES, [3] * 4),
        TEST_CODES,
    ),
    "SLDARegressor": lambda: (
        lvgp.SLDARegressor(2, optimizer=MiniBatch(max_epochs=3), random_state=0).fit(TEXTS, Y),
        TEST,
    ),
    "SLDAClassifier": lambda: (
        lvgp.SLDAClassifier(2, optimizer=MiniBatch(max_epochs=3), random_state=0).fit(TEXTS, THREE),
        TEST,
    ),
    "LDARegression": lambda: (lvgp.LDARegression(2, optimizer=lvgp.EM(max_iter=5), random_state=0).fit(TEXTS, Y), TEST),
    "EncoderGPRegressor": lambda: (  # the encoder by name: the tiny random one of the fixture
        EncoderGPRegressor("all-MiniLM-L6-v2", optimizer=LBFGS(max_iter=3)).fit(TEXTS, np.c_[Y, -Y]),
        TEST,
    ),
    "OpenSetClassifier": lambda: (  # the GP inside, its own file within the wrapper's
        lvgp.OpenSetClassifier(
            lvgp.LDKGPClassifier(LDKSpec(rho=0.1), optimizer=LBFGS(max_iter=3), random_state=0), keep=0.5
        ).fit(TEXTS, THREE),
        TEST,
    ),
    "GPEmbeddingLogisticRegression": lambda: (
        lvgp.GPEmbeddingLogisticRegression(
            TABLE, posterior="normal", optimizer=Adam(max_iter=5), predict_samples=5, random_state=0, cv=2
        ).fit(TEXTS, LABELS),
        TEST,
    ),
}


def test_every_estimator_saves_or_is_a_listed_scikit_learn_composition():
    names = {cls.__name__: cls for cls in lvgp.all_estimators()}
    saving = {name for name, cls in names.items() if hasattr(cls, "save")}
    assert saving | NOT_SAVED == set(names), set(names) - saving - NOT_SAVED
    assert not saving & NOT_SAVED
    assert saving == set(FITS)
    for name in saving:  # one template: save and load are the mixin's, the classes give the hooks
        cls = names[name]
        assert cls.save is lvgp.models.mixins.SavedParamsMixin.save, name
        assert cls.load.__func__ is lvgp.models.mixins.SavedParamsMixin.load.__func__, name


@pytest.mark.parametrize("name", sorted(FITS))
def test_fit_save_load_predicts_bit_identically(name, tmp_path, tiny_encoder):
    tiny_encoder(sorted({w for t in TEXTS for w in t.split()}), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, inputs = FITS[name]()
        est.save(tmp_path / "model.pt")
        torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()[1].copy()
        again = type(est).load(tmp_path / "model.pt")
        assert torch.equal(torch.get_rng_state(), torch_state)  # loading draws nothing from the caller's streams
        assert np.array_equal(np.random.get_state()[1], numpy_state)
        before, after = _outputs(est, inputs), _outputs(again, inputs)
    assert len(before) == len(after) > 0
    for a, b in zip(before, after):
        np.testing.assert_array_equal(b, a)
    fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("__")}
    assert fitted == {k for k in vars(again) if k.endswith("_") and not k.startswith("__")}
    assert again.get_params().keys() == est.get_params().keys()


@pytest.mark.parametrize("name", ["CLGP", "LDARegression", "SLDAClassifier", "GPEmbeddingLogisticRegression"])
def test_the_new_files_refuse_what_they_are_not(name, tmp_path):
    """The estimators that got save/load with format 3 read that format only, refuse ``kernel=`` and
    ``encoder_kernel=`` (none has such a parameter), and a file of another class is a ValueError naming the file."""
    from lvgp.base.persistence import SavedFileError

    cls = getattr(lvgp, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, _ = FITS[name]()
    est.save(tmp_path / "model.pt")
    with pytest.raises(TypeError, match="takes no kernel="):
        cls.load(tmp_path / "model.pt", kernel=LDKSpec())
    with pytest.raises(TypeError, match="takes no encoder_kernel="):
        cls.load(tmp_path / "model.pt", encoder_kernel="rbf")
    payload = torch.load(tmp_path / "model.pt", weights_only=True)
    payload["format"] = f"lvgp.{name}/1"
    torch.save(payload, tmp_path / "old.pt")
    with pytest.raises(SavedFileError, match="cannot read"):
        cls.load(tmp_path / "old.pt")
    other = lvgp.SLDARegressor if name != "SLDARegressor" else lvgp.LDARegression
    with pytest.raises(SavedFileError, match="model.pt"):
        other.load(tmp_path / "model.pt")
    if "device" not in cls().get_params():
        with pytest.raises(TypeError, match="takes no device="):
            cls.load(tmp_path / "model.pt", device="cpu")


def test_an_unfitted_estimator_refuses_to_save(tmp_path):
    from sklearn.exceptions import NotFittedError

    classes = {cls.__name__: cls for cls in lvgp.all_estimators()}
    for name in FITS:
        cls = classes[name]
        est = cls(TABLE) if name == "GPEmbeddingLogisticRegression" else cls()
        with pytest.raises(NotFittedError):
            est.save(tmp_path / "x.pt")


def test_the_encoder_gp_names_its_encoder_and_kernel(tmp_path, tiny_encoder):
    """EncoderGPRegressor's file names its encoder (an encoder object is refused at save) and its
    covariance (``kernel="rbf"``/``"matern"``: ``load`` refuses a ``kernel=``)."""
    encoder = tiny_encoder(sorted({w for t in TEXTS for w in t.split()}), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_object = EncoderGPRegressor(encoder, optimizer=LBFGS(max_iter=2)).fit(TEXTS, Y)
        with pytest.raises(ValueError, match="pass encoder by name"):
            by_object.save(tmp_path / "x.pt")
        assert not (tmp_path / "x.pt").exists()
        est = EncoderGPRegressor("all-MiniLM-L6-v2", kernel="matern", optimizer=LBFGS(max_iter=2)).fit(TEXTS, Y)
        est.save(tmp_path / "m.pt")
        with pytest.raises(ValueError, match="names its kernel"):
            EncoderGPRegressor.load(tmp_path / "m.pt", kernel=LDKSpec())
        again = EncoderGPRegressor.load(tmp_path / "m.pt")
    assert again.kernel == "matern"
    np.testing.assert_array_equal(
        np.stack(again.predict(TEST, return_std=True)), np.stack(est.predict(TEST, return_std=True))
    )
