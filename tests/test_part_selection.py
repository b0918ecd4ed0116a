"""Compositions the evidence can switch off (issue 56, section 2): ``part_selection="evidence"`` fits
each sub-composition of the kernel's top sum and keeps the one of the highest evidence with BIC's
Occam factor. Checked against closed forms (the Gaussian log marginal likelihood written out, the
Laplace inference's own evidence), against separate fits of each sub-composition, and on data where
one part carries the signal and the other is noise."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel

from lvgp import LBFGS, GPLVSMRegressor, LDKGPClassifier
from lvgp.kernels import BagOfWordsKernel, LDKSpec
from lvgp.kernels.composition import (
    count_hyperparameters,
    occam_score,
    part_names,
    part_subsets,
    restrict_to_parts,
    top_sum,
)

V = 40


def _weights(signal: bool) -> torch.Tensor:
    """Word weights that read the first half of the vocabulary (``signal``) or the second (noise)."""
    w = torch.full((V,), 1e-6, dtype=torch.float64)
    w[: V // 2] = 1.0 if signal else 1e-6
    w[V // 2 :] = 1e-6 if signal else 1.0
    return w


def two_parts(num_words: int = V):
    """The signal words' part plus the noise words' part, each under its own output scale."""
    signal = ScaleKernel(BagOfWordsKernel(num_words, "linear", word_weights=_weights(True)))
    noise = ScaleKernel(BagOfWordsKernel(num_words, "linear", word_weights=_weights(False)))
    return signal + noise


def signal_only(num_words: int = V):
    return ScaleKernel(BagOfWordsKernel(num_words, "linear", word_weights=_weights(True)))


@pytest.fixture(scope="module")
def data():
    """Documents of 4 signal words (ids 0-19) and 4 noise words (20-39); the target counts the signal
    words below 10."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, V // 2, (80, 4))
    b = rng.integers(V // 2, V, (80, 4))
    x = torch.from_numpy(np.concatenate([a, b], 1))
    y = (a < 10).sum(1) - 2.0 + 0.3 * rng.normal(size=80)
    return x, y


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


# ---------------------------------------------------------------------------- the composition helpers
def test_subsets_parts_and_restriction():
    assert part_subsets(2) == [(0, 1), (0,), (1,)]
    assert part_subsets(3)[:4] == [(0, 1, 2), (0, 1), (0, 2), (1, 2)] and len(part_subsets(3)) == 7
    with pytest.raises(ValueError, match="n_parts"):
        part_subsets(0)
    kernel = ScaleKernel(two_parts())
    assert top_sum(kernel) is kernel.base_kernel
    assert part_names(kernel) == ("BagOfWordsKernel", "BagOfWordsKernel-2")
    noise_scale = top_sum(kernel).kernels[1].raw_outputscale
    restrict_to_parts(kernel, (0,))
    assert part_names(kernel) == ("BagOfWordsKernel",)
    assert all(p is not noise_scale for p in kernel.parameters())
    for bad in [(), (0, 0), (3,)]:
        with pytest.raises(ValueError, match="keep"):
            restrict_to_parts(ScaleKernel(two_parts()), bad)
    alone = signal_only()
    assert top_sum(alone) is None and part_names(alone) == ("BagOfWordsKernel",)
    assert restrict_to_parts(alone, (0,)) is alone


def test_hyperparameter_count_and_occam_score():
    kernel = two_parts()
    assert count_hyperparameters(kernel) == 2  # two output scales (the BoW kernels have none)
    shared = torch.nn.ModuleList([kernel, kernel])
    assert count_hyperparameters(shared) == 2  # a shared parameter counts once
    assert count_hyperparameters(kernel, exclude=[kernel.kernels[0]]) == 1
    assert occam_score(-10.0, 4, 100) == pytest.approx(-10.0 - 2 * math.log(100))
    with pytest.raises(ValueError, match="n must"):
        occam_score(0.0, 1, 0)


# ---------------------------------------------------------------------------- regression
@pytest.fixture(scope="module")
def selected_regressor(data):
    x, y = data
    reg = GPLVSMRegressor(two_parts, num_words=V, part_selection="evidence", random_state=0)
    return _quiet(lambda: reg.fit(x[:60], y[:60]))


def test_regression_keeps_the_signal_part_by_the_occam_score(selected_regressor):
    reg = selected_regressor
    assert reg.selected_parts_ == ("BagOfWordsKernel",)
    assert [s["parts"] for s in reg.part_scores_] == [
        ("BagOfWordsKernel", "BagOfWordsKernel-2"),
        ("BagOfWordsKernel",),
        ("BagOfWordsKernel-2",),
    ]
    for s in reg.part_scores_:
        assert s["score"] == pytest.approx(s["log_evidence"] - 0.5 * s["n_hyperparameters"] * math.log(60))
    # noise, mean, outer output scale... and one output scale a part
    counts = [s["n_hyperparameters"] for s in reg.part_scores_]
    assert counts[0] == counts[1] + 1 == counts[2] + 1
    best = max(reg.part_scores_, key=lambda s: s["score"])
    assert best["parts"] == reg.selected_parts_
    # the noise part alone explains nothing: far below
    assert reg.part_scores_[2]["log_evidence"] < reg.part_scores_[1]["log_evidence"] - 10
    assert len(top_sum(reg.model_.covar_module).kernels) == 1


def test_regression_evidence_is_the_closed_form_marginal_likelihood(selected_regressor):
    """The kept sub-composition's log evidence is the Gaussian log marginal likelihood of its fitted
    covariance, written out (no priors in this kernel)."""
    reg = selected_regressor
    model = reg.model_
    x = model.train_inputs[0]
    with torch.no_grad():
        K = model.covar_module(x).to_dense() + reg.likelihood_.noise * torch.eye(len(x), dtype=torch.float64)
        mean = model.mean_module(x)
        dist = torch.distributions.MultivariateNormal(mean, covariance_matrix=K)
        expected = float(dist.log_prob(model.train_targets))
    kept = next(s for s in reg.part_scores_ if s["parts"] == reg.selected_parts_)
    assert kept["log_evidence"] == pytest.approx(expected, rel=1e-9, abs=1e-8)


def test_a_sub_composition_equals_its_own_separate_fit(selected_regressor, data):
    """What the selection records for the signal part equals a regressor fitted on that kernel alone,
    from the same start; and so do its predictions."""
    x, y = data
    one_part = _quiet(
        lambda: GPLVSMRegressor(lambda n: _one_part_sum(n), num_words=V, random_state=0).fit(x[:60], y[:60])
    )
    reg = selected_regressor
    kept = next(s for s in reg.part_scores_ if s["parts"] == reg.selected_parts_)
    assert kept["log_evidence"] == pytest.approx(one_part._fitted_log_evidence(), rel=1e-7)
    np.testing.assert_allclose(reg.predict(x[60:]), one_part.predict(x[60:]), rtol=1e-6, atol=1e-8)


def _one_part_sum(num_words: int):
    from gpytorch.kernels import AdditiveKernel

    return AdditiveKernel(signal_only(num_words))


def test_without_selection_every_part_is_kept(data):
    x, y = data
    reg = _quiet(lambda: GPLVSMRegressor(two_parts, num_words=V, random_state=0).fit(x[:60], y[:60]))
    assert reg.selected_parts_ == ("BagOfWordsKernel", "BagOfWordsKernel-2")
    assert not hasattr(reg, "part_scores_")


def test_the_selected_regressor_reloads_bit_exactly(selected_regressor, data, tmp_path):
    x, _ = data
    reg = selected_regressor
    reg.save(tmp_path / "reg.pt")
    back = GPLVSMRegressor.load(tmp_path / "reg.pt", kernel=two_parts)
    assert back.selected_parts_ == reg.selected_parts_ and back.part_scores_ == reg.part_scores_
    m1, s1 = reg.predict(x[60:], return_std=True)
    m2, s2 = back.predict(x[60:], return_std=True)
    assert np.array_equal(m1, m2) and np.array_equal(s1, s2)


# ---------------------------------------------------------------------------- classification
@pytest.mark.parametrize("inference", ["dirichlet", "laplace"])
def test_classifier_keeps_the_signal_part_and_reloads(inference, data, tmp_path):
    x, y = data
    labels = np.digitize(y, [-0.5, 0.5])
    clf = LDKGPClassifier(
        two_parts,
        num_words=V,
        inference=inference,
        class_hyperparameters="shared",
        part_selection="evidence",
        optimizer=LBFGS(max_iter=50),
        random_state=0,
    )
    _quiet(lambda: clf.fit(x[:60], labels[:60]))
    assert clf.selected_parts_ == ("BagOfWordsKernel",)
    scores = {s["parts"]: s for s in clf.part_scores_}
    assert scores[("BagOfWordsKernel-2",)]["log_evidence"] < scores[("BagOfWordsKernel",)]["log_evidence"]
    if inference == "laplace":  # no priors in this kernel: the fitted objective is eq. 3.44 itself
        kept = scores[clf.selected_parts_]
        assert kept["log_evidence"] == pytest.approx(clf.log_marginal_likelihood_, rel=1e-9)
    clf.save(tmp_path / "clf.pt")
    back = LDKGPClassifier.load(tmp_path / "clf.pt", kernel=two_parts)
    assert back.selected_parts_ == clf.selected_parts_ and back.part_scores_ == clf.part_scores_
    assert np.array_equal(back.predict_proba(x[60:]), clf.predict_proba(x[60:]))


def test_map_word_vectors_and_the_variational_inference_are_refused(data):
    x, y = data
    labels = (y > 0).astype(int)
    with pytest.raises(ValueError, match="MAP"):
        _quiet(lambda: LDKGPClassifier(LDKSpec(latent_dim=2), num_words=V, part_selection="evidence").fit(x, labels))
    with pytest.raises(ValueError, match="part_selection='evidence' needs inference"):
        LDKGPClassifier(two_parts, num_words=V, inference="variational", part_selection="evidence").fit(x, labels)
    with pytest.raises(ValueError, match="part_selection"):
        GPLVSMRegressor(two_parts, num_words=V, part_selection="bic").fit(x, y)


# ---------------------------------------------------------------------------- with a sentence encoder
def test_words_and_encoder_parts_with_a_sentence_encoder(tiny_encoder):
    words = ["good", "bad", "film", "plot", "great", "awful"]
    tiny_encoder(words, seed=2)
    texts = ["good film", "bad film", "good plot", "bad plot", "great film", "awful plot", "great good", "bad awful"]
    y = np.array([1.0, -1.0, 0.8, -0.9, 1.3, -1.2, 1.5, -1.6])
    reg = GPLVSMRegressor(
        LDKSpec(latent_dim=2, variational=True, identity_weight="balanced"),
        sentence_encoder="all-MiniLM-L6-v2",
        part_selection="evidence",
        random_state=0,
    )
    from lvgp import Adam

    reg.set_params(optimizer=Adam(max_iter=20))
    _quiet(lambda: reg.fit(texts, y))
    assert [s["parts"] for s in reg.part_scores_] == [("words", "encoder"), ("words",), ("encoder",)]
    assert reg.selected_parts_ in {("words", "encoder"), ("words",), ("encoder",)}
    assert all(np.isfinite(s["score"]) for s in reg.part_scores_)
    # the ELBO over the variational word vectors, not their parameters, is what the words part adds
    words_alone, encoder_alone = reg.part_scores_[1], reg.part_scores_[2]
    assert words_alone["n_hyperparameters"] < 10 and encoder_alone["n_hyperparameters"] < 10
    assert reg.predict(["good plot", "something else"]).shape == (2,)


# ---------------------------------------------------------------------------- leave-one-out selection
def test_regression_loo_is_the_loop_over_left_out_documents(data):
    """``part_selection="loo"``'s score of the kept sub-composition equals the log density of each training
    target under the GP conditioned on the others (the fitted hyper-parameters), by a loop."""
    x, y = data
    reg = _quiet(
        lambda: GPLVSMRegressor(two_parts, num_words=V, part_selection="loo", random_state=0).fit(x[:40], y[:40])
    )
    full, *subs = reg.part_scores_
    assert set(full) == {"parts", "loo_log_predictive", "score"}
    for sub in subs:  # a sub-composition replaces the sum only where its gain exceeds one standard error
        assert sub["loo_gain"] == pytest.approx(sub["loo_log_predictive"] - full["loo_log_predictive"])
        assert sub["eligible"] == (sub["loo_gain"] > sub["loo_gain_se"] > 0)
    eligible = [full] + [sub for sub in subs if sub["eligible"]]
    assert reg.selected_parts_ == max(eligible, key=lambda s: s["score"])["parts"]
    assert subs[1]["loo_gain"] < -10  # the noise part alone: far below the sum
    model = reg.model_
    inputs, z = model.train_inputs[0], model.train_targets
    with torch.no_grad():
        K = model.covar_module(inputs).to_dense()
        m = model.mean_module(inputs)
        noise = reg.likelihood_.noise.item()
    total = 0.0
    for i in range(len(z)):
        rest = [j for j in range(len(z)) if j != i]
        Kr = K[rest][:, rest] + noise * torch.eye(len(rest), dtype=torch.float64)
        k = K[i, rest]
        mean = m[i] + k @ torch.linalg.solve(Kr, z[rest] - m[rest])
        var = K[i, i] + noise - k @ torch.linalg.solve(Kr, k)
        total += float(torch.distributions.Normal(mean, var.sqrt()).log_prob(z[i]))
    kept = next(s for s in reg.part_scores_ if s["parts"] == reg.selected_parts_)
    assert kept["score"] == pytest.approx(total, rel=1e-9)


def test_classifier_loo_selection_keeps_the_signal_part(data):
    x, y = data
    labels = np.digitize(y, [-0.5, 0.5])
    clf = LDKGPClassifier(
        two_parts,
        num_words=V,
        class_hyperparameters="shared",
        calibration="temperature",
        part_selection="loo",
        optimizer=LBFGS(max_iter=50),
        random_state=0,
    )
    _quiet(lambda: clf.fit(x[:60], labels[:60]))
    scores = {s["parts"]: s["score"] for s in clf.part_scores_}
    assert scores[("BagOfWordsKernel-2",)] < scores[("BagOfWordsKernel",)] - 3
    # the noise part is dropped, or the marginal likelihood gave it (next to) no weight: a tie
    assert clf.selected_parts_[0] == "BagOfWordsKernel"
    if len(clf.selected_parts_) == 2:
        signal, noise = (float(k.outputscale) for k in top_sum(clf.model_.covar_module).kernels)
        assert noise < 0.01 * signal
        assert abs(scores[clf.selected_parts_] - scores[("BagOfWordsKernel",)]) < 0.01
    # the score is the tempered leave-one-out log probability of the labels (60 of them, 3 classes)
    assert -60 * math.log(3) - 20 < scores[("BagOfWordsKernel",)] < 0
    with pytest.raises(ValueError, match="part_selection='loo' needs inference='dirichlet'"):
        LDKGPClassifier(two_parts, num_words=V, inference="laplace", part_selection="loo").fit(x, labels)


def test_classifier_loo_selection_keeps_the_whole_kernel_with_a_class_of_one_document(data):
    """A class of one training document leaves nothing to judge its left-out document by: the selection
    keeps the full sum and says why (the active study's first round, one text a class, is this case);
    with two documents in every class it selects again."""
    from lvgp.models.gpc.estimator import LDKGPClassifier as Classifier

    x, y = data
    labels = np.digitize(y, [-0.5, 0.5])
    rows = [int(np.flatnonzero(labels == 0)[0]), *np.flatnonzero(labels != 0)[:30].tolist()]
    settings = dict(num_words=V, class_hyperparameters="shared", part_selection="loo", random_state=0)
    settings["optimizer"] = LBFGS(max_iter=20)
    clf = Classifier(two_parts, **settings)
    with pytest.warns(
        UserWarning, match=r"kept the whole kernel .*1 of 3 classes have a single training document \(0\)"
    ):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=Warning, message="^(?!part_selection)")
            clf.fit(x[rows], labels[rows])
    assert clf.selected_parts_ == ("BagOfWordsKernel", "BagOfWordsKernel-2") and len(clf.part_scores_) == 1
    two = [int(i) for i in np.flatnonzero(labels == 0)[:2]] + rows[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message="^(?!part_selection)")
        again = Classifier(two_parts, **settings).fit(x[two], labels[two])
    assert len(again.part_scores_) == 3  # the sum and each part alone


HELD = 30.0


def held_noise_parts(num_words: int = V):
    """The signal part plus a noise part whose weight relative to it a log-normal prior (sd 0.5) holds
    near ``HELD``, as the encoder part's weight is held near its balanced start (the model's output scale
    multiplies both): the marginal likelihood cannot switch it off."""
    from gpytorch.priors import LogNormalPrior

    noise = ScaleKernel(
        BagOfWordsKernel(num_words, "linear", word_weights=_weights(False)),
        outputscale_prior=LogNormalPrior(math.log(HELD), 0.5),
    )
    noise.outputscale = HELD
    return BagOfWordsKernel(num_words, "linear", word_weights=_weights(True)) + noise


@pytest.mark.parametrize("selection", ["loo", "evidence"])
def test_a_part_its_prior_holds_in_is_switched_off_by_the_selection(selection):
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, V // 2, (300, 4)), rng.integers(V // 2, V, (300, 4))
    x = torch.from_numpy(np.concatenate([a, b], 1))
    labels = np.digitize((a < 10).sum(1) - 2.0 + 0.3 * rng.normal(size=300), [-0.5, 0.5])
    settings = dict(num_words=V, class_hyperparameters="shared", optimizer=LBFGS(max_iter=50), random_state=0)
    clf = LDKGPClassifier(held_noise_parts, part_selection=selection, **settings)
    _quiet(lambda: clf.fit(x[:250], labels[:250]))
    assert clf.selected_parts_ == ("BagOfWordsKernel",)
    plain = _quiet(lambda: LDKGPClassifier(held_noise_parts, **settings).fit(x[:250], labels[:250]))
    held = float(top_sum(plain.model_.covar_module).kernels[1].outputscale.detach())
    assert held > 0.1  # the prior held the noise part in the plain fit
    loss = [-np.mean(np.log(m.predict_proba(x[250:])[np.arange(50), labels[250:]])) for m in (clf, plain)]
    assert loss[0] < loss[1]


def test_a_part_kept_alone_keeps_its_name_through_save_and_load(data, tmp_path):
    """The noise part kept alone (forced) is still ``BagOfWordsKernel-2`` after a reload, though its kernel
    is then a sum of one part."""
    x, y = data
    reg = GPLVSMRegressor(two_parts, num_words=V, part_selection="evidence", random_state=0)
    reg._part_score = lambda names, keep, n: {"parts": tuple(names[i] for i in keep), "score": -len(keep) - keep[0]}
    _quiet(lambda: reg.fit(x[:40], y[:40]))
    del reg._part_score
    assert reg.selected_parts_ == ("BagOfWordsKernel",)  # the score above prefers the first part alone
    reg._part_score = lambda names, keep, n: {"parts": tuple(names[i] for i in keep), "score": float(keep == (1,))}
    _quiet(lambda: reg.fit(x[:40], y[:40]))
    del reg._part_score
    assert reg.selected_parts_ == ("BagOfWordsKernel-2",)
    reg.save(tmp_path / "noise.pt")
    assert GPLVSMRegressor.load(tmp_path / "noise.pt", kernel=two_parts).selected_parts_ == ("BagOfWordsKernel-2",)


def test_the_encoder_classifier_selects_by_leave_one_out_and_reloads(tiny_encoder, tmp_path):
    """The classification study's bow-gpc-encoder kernel (tf-idf cosine + mu x encoder cosine) with a
    tiny random encoder: the words carry the labels, the three sub-compositions are scored, the words
    are kept (alone or in the sum), and the file reloads to the bit."""
    from lvgp.experiments.classification import _bag_of_words_beside_encoder

    own = [["stock", "market", "shares"], ["match", "goal", "team"], ["rain", "storm", "cloud"]]
    encoder = tiny_encoder(sum(own, []), seed=1)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 45)
    texts = [" ".join(rng.choice(own[c], 3)) for c in labels]
    clf = LDKGPClassifier(
        _bag_of_words_beside_encoder(encoder.dim),
        sentence_encoder="all-MiniLM-L6-v2",
        class_hyperparameters="shared",
        calibration="temperature",
        part_selection="loo",
        optimizer=LBFGS(max_iter=30),
        random_state=0,
    )
    _quiet(lambda: clf.fit(texts, labels))
    assert [s["parts"] for s in clf.part_scores_] == [("words", "encoder"), ("words",), ("encoder",)]
    assert "words" in clf.selected_parts_
    assert clf.part_scores_[2]["loo_gain"] < 0  # the random encoder alone predicts worse than the sum
    test = ["market shares", "goal team", "storm rain cloud"]
    clf.save(tmp_path / "clf.pt")
    back = LDKGPClassifier.load(tmp_path / "clf.pt", kernel=_bag_of_words_beside_encoder(encoder.dim))
    assert back.selected_parts_ == clf.selected_parts_
    assert np.array_equal(back.predict_proba(test), clf.predict_proba(test))
    assert list(clf.predict(test)) == [0, 1, 2]
