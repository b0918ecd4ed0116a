"""Every estimator that takes padded word ids, with every kernel kind, takes them as int16, int32 or
int64 alike (issue 59: int16 corpora crashed with ``identity_weight="balanced"``, the default
kernel of ``SparseGPLVSMRegressor`` among them). The property: the fit on a compact dtype gives the
int64 fit's predictions to the bit, or the same refusal.

The estimators are found by ``lvgp.all_estimators()``: one that takes padded ids and is missing
from ``BUILDERS`` fails the last test."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel

import lvgp
from lvgp import LBFGS, Adam, MiniBatch
from lvgp.baselines.linear import DevTunedLinearRegression
from lvgp.kernels import BagOfWordsKernel, LDKSpec
from lvgp.models.slda import LDARegression, SLDAClassifier, SLDARegressor

WORDS = "good great fine bad awful poor plot actor scene music".split()
RNG = np.random.default_rng(11)
TRAIN = [" ".join(RNG.choice(WORDS, size=RNG.integers(2, 7))) for _ in range(30)]
TEST = [" ".join(RNG.choice(WORDS, size=RNG.integers(1, 5))) for _ in range(8)]
Y = np.array([sum(w in ("good", "great", "fine") for w in t.split()) - 1.0 for t in TRAIN])
LABELS = (Y > 0).astype(int)
VOCAB = lvgp.Vocabulary(stop_words=None).fit(TRAIN)
DTYPES = [torch.int16, torch.int32]


def bag_of_words(num_words: int) -> Any:
    """A user's kernel factory (module level: a study or a saved file can name it)."""
    return ScaleKernel(BagOfWordsKernel(num_words))


KERNELS = {
    "default": None,  # each estimator's own default (the sparse regressor's: balanced, variational)
    "exact": LDKSpec(latent_dim=2, rho=0.1),
    "rff": LDKSpec(latent_dim=2, rho=0.1, approximation="rff", num_features=8),
    "nystrom": LDKSpec(latent_dim=2, rho=0.1, approximation="nystrom", num_features=4),
    "idf-balanced": LDKSpec(latent_dim=2, rho=0.1, word_weighting="idf", identity_weight="balanced"),
    "user": bag_of_words,
}

#: estimator class -> (builder of one configured estimator for a kernel, or None without a kernel; targets)
BUILDERS: dict[type, tuple[Callable[[Any], Any], np.ndarray, bool]] = {
    lvgp.GPLVSMRegressor: (lambda k: lvgp.GPLVSMRegressor(k, optimizer=LBFGS(max_iter=3)), Y, True),
    lvgp.SparseGPLVSMRegressor: (
        lambda k: lvgp.SparseGPLVSMRegressor(k, num_inducing=5, optimizer=MiniBatch(batch_size=10, max_steps=3)),
        Y,
        True,
    ),
    lvgp.LDKGPClassifier: (lambda k: lvgp.LDKGPClassifier(k, optimizer=LBFGS(max_iter=3)), LABELS, True),
    lvgp.LatentSMMClassifier: (lambda k: lvgp.LatentSMMClassifier(k, optimizer=LBFGS(max_iter=3)), LABELS, True),
    lvgp.baselines.GPRBFRegressor: (lambda k: lvgp.baselines.GPRBFRegressor(optimizer=LBFGS(max_iter=3)), Y, False),
    DevTunedLinearRegression: (lambda k: DevTunedLinearRegression(cv=2), Y, False),
    SLDARegressor: (lambda k: SLDARegressor(n_topics=2, optimizer=MiniBatch(max_epochs=2)), Y, False),
    SLDAClassifier: (lambda k: SLDAClassifier(n_topics=2, optimizer=MiniBatch(max_epochs=2)), LABELS, False),
    LDARegression: (lambda k: LDARegression(n_topics=2, optimizer=lvgp.EM(max_iter=3)), Y, False),
}
#: second inferences of a class above
VARIANTS: dict[str, tuple[Callable[[Any], Any], np.ndarray, bool]] = {
    "LDKGPClassifier-variational": (
        lambda k: lvgp.LDKGPClassifier(k, inference="variational", num_inducing=5, optimizer=MiniBatch(max_epochs=2)),
        LABELS,
        True,
    ),
    "GPLVSMRegressor-variational": (
        lambda k: lvgp.GPLVSMRegressor(
            k.replace(variational=True) if isinstance(k, LDKSpec) else k, optimizer=Adam(max_iter=3)
        ),
        Y,
        True,
    ),
}
ENTRIES = {cls.__name__: entry for cls, entry in BUILDERS.items()} | VARIANTS
CASES = [
    (f"{name}-{kind}" if takes_kernel else name, builder, y, kernel)
    for name, (builder, y, takes_kernel) in ENTRIES.items()
    for kind, kernel in (KERNELS.items() if takes_kernel else [("none", None)])
]


def _outcome(builder: Callable[[Any], Any], kernel: Any, y: np.ndarray, dtype: torch.dtype) -> Any:
    """The predictions of a fit on ids of ``dtype`` (numpy arrays), or the refusal's type and message."""
    est = builder(kernel)
    params = est.get_params()
    est.set_params(**{k: v for k, v in {"vocabulary": VOCAB, "random_state": 0}.items() if k in params})
    train, test = VOCAB.encode(TRAIN).to(dtype), VOCAB.encode(TEST).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny budgets and unseen words: warnings by design
        try:
            est.fit(train, y)
        except (TypeError, ValueError) as err:
            return (type(err).__name__, str(err))
        if hasattr(est, "predict_proba"):
            outputs = [est.predict_proba(test)]
        elif hasattr(est, "decision_function"):
            outputs = [est.decision_function(test)]
        else:
            out = est.predict(test, return_std=True) if "return_std" in str(est.predict.__doc__) else est.predict(test)
            outputs = list(out) if isinstance(out, tuple) else [out]
    return [np.asarray(o, dtype=np.float64) for o in outputs]


@pytest.mark.parametrize("name,builder,y,kernel", CASES, ids=[c[0] for c in CASES])
def test_compact_ids_fit_as_int64_ids(name, builder, y, kernel):
    expected = _outcome(builder, kernel, y, torch.int64)
    for dtype in DTYPES:
        got = _outcome(builder, kernel, y, dtype)
        if isinstance(expected, tuple):
            assert got == expected, f"{name}: {dtype} is refused otherwise than int64"
        else:
            assert not isinstance(got, tuple), f"{name}: {dtype} refused ({got}) where int64 fits"
            for a, b in zip(got, expected):
                np.testing.assert_array_equal(a, b, err_msg=f"{name}, {dtype}")


def test_every_estimator_that_takes_padded_ids_is_covered():
    ids = VOCAB.encode(TRAIN)
    missing = []
    for cls in lvgp.all_estimators():
        if cls in BUILDERS:
            continue
        try:
            est = cls()
        except TypeError:
            continue  # needs arguments (an encoder, embeddings): reads texts, not ids
        params = est.get_params()
        if "vocabulary" not in params and "num_words" not in params:
            continue
        est.set_params(**{k: v for k, v in {"vocabulary": VOCAB}.items() if k in params})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est.fit(ids, Y)
            except Exception:  # noqa: BLE001 -- refusing ids is what leaves it out
                continue
        missing.append(cls.__name__)
    assert missing == [], f"estimators that take padded ids but are not in BUILDERS: {missing}"
