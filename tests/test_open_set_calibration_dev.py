"""``benchmarks/open_set_calibration_dev.py`` (issue 57): its leave-one-out predictions of texts scored as new
ones -- from one inverse a class -- equal a Cholesky factorization of the other texts' matrix a text, reproduce the
classifier's closed form when no word is dropped, and drop exactly the words of no other training text (the texts
without such words keep their predictions); its ECE with every class weighted alike, by hand; the hindsight
temperature is the grid's least ECE; the temperature's posterior peaks at the classifier's temperature; out-of-fold
predictions come from the other folds alone; the min_df=2 row keeps the GP's own tokens."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from lvgp import LBFGS, LDKGPClassifier
from tests._benchmarks import benchmark_module

cal = benchmark_module("open_set_calibration_dev.py", "_open_set_calibration_dev")

POS, NEG = ["good", "great", "fine", "nice"], ["bad", "awful", "dull", "weak"]
#: words of a single training text (texts 0 and 8)
ALONE = {0: "zebra", 8: "walrus yak"}


def _texts(rng, words, count, offset):
    return [
        " ".join(rng.choice(words, 4)) + (" " + ALONE[offset + i] if offset + i in ALONE else "") for i in range(count)
    ]


@pytest.fixture(scope="module", params=["shared", "per-class"])
def fitted(request):
    rng = np.random.default_rng(3)
    x = _texts(rng, POS, 8, 0) + _texts(rng, NEG, 8, 8)
    y = ["pos"] * 8 + ["neg"] * 8
    clf = LDKGPClassifier(
        class_hyperparameters=request.param, optimizer=LBFGS(max_iter=15), calibration="temperature", random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.fit(x, y)


@pytest.mark.parametrize("drop_unshared", [True, False])
def test_one_inverse_a_class_gives_the_refits_without_each_text(fitted, drop_unshared):
    mean, var = cal.loo_as_new_latents(fitted, 0, drop_unshared)
    brute_mean, brute_var = cal.loo_as_new_latents(fitted, 0, drop_unshared, brute_force=True)
    np.testing.assert_allclose(mean.numpy(), brute_mean.numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var.numpy(), brute_var.numpy(), rtol=1e-7, atol=1e-9)


def test_without_dropping_they_are_the_classifiers_closed_form_leave_one_out(fitted):
    closed, _ = fitted._loo_log_proba()
    for brute_force in (False, True):
        ours = cal.loo_as_new_log_proba(fitted, 0, drop_unshared=False, brute_force=brute_force)
        np.testing.assert_allclose(ours, closed, rtol=1e-8, atol=1e-10)


def test_only_the_texts_with_words_of_no_other_text_are_predicted_anew(fitted):
    closed, _ = fitted._loo_log_proba()
    as_new = cal.loo_as_new_log_proba(fitted, 0)
    alone = sorted(ALONE)
    others = [i for i in range(len(closed)) if i not in ALONE]
    np.testing.assert_allclose(as_new[others], closed[others], rtol=1e-8, atol=1e-10)
    assert np.all(np.abs(as_new[alone] - closed[alone]).max(axis=1) > 1e-6)


def test_the_class_weighted_ece_by_hand():
    classes = np.array(["a", "b"])
    proba = np.array([[0.95, 0.05], [0.95, 0.05], [0.95, 0.05], [0.35, 0.65]])
    labels = np.array(["a", "a", "b", "b"])
    alike = cal.calibration(proba, classes, labels)
    # one bin at 0.95 (2 of 3 right), one at 0.65 (right)
    assert alike["accuracy"] == pytest.approx(0.75)
    assert alike["ece"] == pytest.approx((3 * abs(2 / 3 - 0.95) + abs(1 - 0.65)) / 4)
    # class a's two texts weigh 1/2 each, class b's 1/2 each: weights 1/4, 1/4, 1/4, 1/4 -> the same here;
    # with class b's second text alone in its class's weight the 0.65 bin weighs more
    weights = np.array([1 / 2, 1 / 2, 1.0, 1.0])
    weighted = cal.calibration(proba, classes, labels, weights)
    w = weights / weights.sum()
    expected = abs(w[0] + w[1] - (w[0] + w[1] + w[2]) * 0.95) + w[3] * abs(1 - 0.65)
    assert weighted["ece"] == pytest.approx(expected)
    assert weighted["accuracy"] == pytest.approx(w[0] + w[1] + w[3])


def test_the_confidence_matching_temperature_makes_the_mean_top_probability_the_accuracy():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(200, 4)) * 2
    truth = np.where(rng.random(200) < 0.7, logits.argmax(axis=1), rng.integers(0, 4, 200))
    log_proba = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    temperature = cal.confidence_matching_temperature(log_proba, truth)
    accuracy = np.mean(log_proba.argmax(axis=1) == truth)
    tempered = np.exp(cal._tempered_log_proba(log_proba, temperature))
    assert tempered.max(axis=1).mean() == pytest.approx(accuracy, abs=1e-9)
    # every prediction right: no temperature within the bounds reaches a mean top probability of 1
    assert cal.confidence_matching_temperature(log_proba, log_proba.argmax(axis=1)) == pytest.approx(np.exp(-3.0))


def test_the_hindsight_ece_temperature_is_the_grids_least_ece():
    rng = np.random.default_rng(1)
    classes = np.array(["a", "b", "c"])
    logits = rng.normal(size=(300, 3)) * 1.5
    labels = classes[np.where(rng.random(300) < 0.8, logits.argmax(axis=1), rng.integers(0, 3, 300))]
    # probabilities far too flat: the tempering that calibrates them sharpens (T < 1)
    proba = np.exp(logits / 4 - np.log(np.exp(logits / 4).sum(axis=1, keepdims=True)))
    temperature = cal.hindsight_ece_temperature(proba, classes, labels)
    best = cal.calibration(cal._tempered_proba(proba, temperature), classes, labels)["ece"]
    assert temperature < 1.0
    for other in np.exp(cal.LOG_TEMPERATURE_GRID):
        assert best <= cal.calibration(cal._tempered_proba(proba, float(other)), classes, labels)["ece"] + 1e-12
    assert best < cal.calibration(proba, classes, labels)["ece"]


def test_the_temperature_posterior_peaks_at_the_classifiers_temperature(fitted):
    log_loo, truth = fitted._loo_log_proba()
    grid, weights = cal.temperature_posterior(log_loo, truth)
    assert weights.sum() == pytest.approx(1.0) and np.all(weights >= 0)
    # the classifier's temperature is the posterior's mode (the grid's step: 0.025 in log T)
    assert abs(np.log(grid[np.argmax(weights)]) - np.log(fitted._fit_temperature())) <= 0.0125 + 1e-9
    proba = np.exp(log_loo)
    averaged = cal.posterior_tempered(proba, grid, weights)
    np.testing.assert_allclose(averaged.sum(axis=1), 1.0)
    # every tempering keeps a text's top class, so their average does too
    np.testing.assert_array_equal(averaged.argmax(axis=1), proba.argmax(axis=1))


class _TrainingFrequencies(ClassifierMixin, BaseEstimator):
    """Predicts every text by its training labels' frequencies (a stand-in with a ``temperature_``)."""

    def fit(self, x, y):
        self.classes_, counts = np.unique(y, return_counts=True)
        self.frequencies_ = counts / counts.sum()
        self.temperature_ = 0.5
        return self

    def predict_proba(self, x):
        assert self.temperature_ == 1.0  # read untempered
        return np.tile(self.frequencies_, (len(x), 1))


def test_out_of_fold_predictions_come_from_the_other_folds_alone():
    from sklearn.model_selection import StratifiedKFold

    labels = ["a"] * 6 + ["b"] * 9 + ["c"] * 5 + ["lone"]
    texts = [f"text {i}" for i in range(len(labels))]
    log_proba, truth = cal.out_of_fold_log_proba(_TrainingFrequencies(), texts, labels, folds=5, seed=3)
    # the class of one text cannot be predicted out of fold: its text is left out
    assert len(truth) == len(labels) - 1 and 3 not in truth
    codes = np.unique(labels, return_inverse=True)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folds = list(StratifiedKFold(5, shuffle=True, random_state=3).split(np.zeros(len(codes)), codes))
    expected = np.empty((len(labels), 4))
    for train, held in folds:
        counts = np.bincount(codes[train], minlength=4).astype(float)
        expected[held] = np.log(np.maximum(counts / counts.sum(), 1e-300))
    np.testing.assert_allclose(np.exp(log_proba).sum(axis=1), 1.0)
    np.testing.assert_allclose(log_proba, expected[codes != 3], rtol=1e-12)


def test_the_min_df_2_row_keeps_the_gps_own_tokens():
    """``gp-min-df-2`` cuts the study GP's own vocabulary (two-letter tokens since rule 27), not the library's
    default one (three letters): the row compares word frequencies alone."""
    from lvgp.bow.vocabulary import Vocabulary

    own = Vocabulary(min_token_len=2, stop_words=["the"])
    cut = cal.min_df_2_vocabulary(own)
    assert (cut.min_df, cut.min_token_len, cut.stop_words) == (2, 2, ["the"])
    texts = ["an ox ran", "an ox sat", "the cat ran"]
    assert set(cut.fit(texts).words) == {"an", "ox", "ran"}  # each in two texts; "cat" and "sat" in one


def test_rule_40s_gate_is_the_median_whitespace_length_below_long_text_words():
    """``gp-loo-as-new-short``: the as-new temperature only where the labelled texts' median length (whitespace
    words, as ``encoder_weight="loo"`` counts them) is below ``LONG_TEXT_WORDS``."""
    from lvgp.models.gpc.encoder_weight import LONG_TEXT_WORDS

    short, long = " ".join(["w"] * (LONG_TEXT_WORDS - 1)), " ".join(["w"] * LONG_TEXT_WORDS)
    assert cal.short_texts([short, short, long]) and not cal.short_texts([short, long, long])
    assert "gp-loo-as-new-short" in cal.STUDY_FIT_ROWS and "gp-loo-midpoint" in cal.STUDY_FIT_ROWS


def test_the_breakdown_by_corpus_fits_each_parts_temperatures_on_its_own_texts():
    """``--by-corpus``: classes grouped by their label's prefix; each part's temperatures are the classifier's
    criterion on that part's labelled (leave-one-out) and scored texts alone; one part is the whole fit's."""
    rng = np.random.default_rng(5)
    words = {"a:pos": POS, "a:neg": NEG, "b:x": ["ox", "yak", "elk", "gnu"]}
    x = [" ".join(rng.choice(w, 4)) for w in words.values() for _ in range(6)]
    y = [label for label in words for _ in range(6)]
    clf = LDKGPClassifier(optimizer=LBFGS(max_iter=15), calibration="temperature", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(x, y)
    log_loo, truth = clf._loo_log_proba()
    as_new = cal.loo_as_new_log_proba(clf, 0)
    scored = [" ".join(rng.choice(w, 3)) for w in words.values() for _ in range(4)]
    labels = np.array([label for label in words for _ in range(4)])
    raw = cal.untempered_proba(clf, scored)
    parts = {p["part"]: p for p in cal.corpus_breakdown(clf, log_loo, as_new, raw, labels)}
    assert set(parts) == {"a", "b"}
    assert parts["a"]["labelled_share"] == pytest.approx(2 / 3) and parts["b"]["scored_share"] == pytest.approx(1 / 3)
    a = np.isin(clf.classes_[truth], ["a:pos", "a:neg"])
    assert parts["a"]["T_loo"] == pytest.approx(clf._fit_temperature((log_loo[a], truth[a])))
    assert parts["b"]["T_as_new"] == pytest.approx(clf._fit_temperature((as_new[~a], truth[~a])))
    codes = np.searchsorted(clf.classes_, labels)
    hind = clf._fit_temperature((np.log(raw[8:]), codes[8:]))
    assert parts["b"]["T_hindsight"] == pytest.approx(hind)
    assert parts["b"]["accuracy"] == pytest.approx(np.mean(raw[8:].argmax(axis=1) == codes[8:]))
    # the classes of one corpus: its part is the whole, its leave-one-out temperature the classifier's own
    one = clone(clf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one.fit(x, [f"c:{label}" for label in y])
    log_loo, _ = one._loo_log_proba()
    raw = cal.untempered_proba(one, scored)
    (whole,) = cal.corpus_breakdown(one, log_loo, log_loo, raw, np.array([f"c:{label}" for label in labels]))
    assert whole["part"] == "c" and whole["labelled_share"] == whole["scored_share"] == 1.0
    assert whole["T_loo"] == pytest.approx(one.temperature_)


def test_the_paired_table_subtracts_the_study_gps_own_draw():
    """Each row's draw is paired with ``gp``'s of the same corpus, size, seed and split (not its neighbour's); the
    draws ahead count a lower ECE, a higher accuracy and AUROC; the last line averages the cells."""

    def record(row, seed, ece, accuracy, auroc, corpus="c", n=10):
        return dict(
            corpus=corpus, per_class=n, seed=seed, split=0, row=row, ece_balanced=ece, accuracy=accuracy, auroc=auroc
        )

    records = [
        record("gp", 1, 0.05, 0.6, 0.7),
        record("gp", 2, 0.03, 0.5, 0.8),
        record("held", 2, 0.02, 0.5, 0.9),  # out of order: paired by its seed
        record("held", 1, 0.07, 0.7, 0.7),
        record("gp", 1, 0.04, 0.8, 0.9, n=50),
        record("held", 1, 0.01, 0.9, 0.8, n=50),
    ]
    lines = cal.paired_table(records).splitlines()
    assert lines[2] == "| c | 10 | held | 2 | +0.0050 (1) | +0.0500 (1) | +0.0500 (1) |"
    assert lines[3] == "| c | 50 | held | 1 | -0.0300 (1) | +0.1000 (1) | -0.1000 (0) |"
    assert lines[4] == "| mean of 2 cells | | held | | -0.0125 | +0.0750 | -0.0250 |"


def test_rule_41s_row_holds_the_encoder_rbfs_lengthscale_and_fits_its_weight():
    """``gp-lengthscale-1``'s kernel: the study GP's, its encoder RBF's length-scale held at 1 (no gradient), the
    part's weight (the scale around the RBF) still fitted."""
    from gpytorch.kernels import RBFKernel, ScaleKernel

    kernel = cal.held_lengthscale_kernel(4)(50, torch.tensor([[1, 2], [3, 4]]))
    (rbf,) = [m for m in kernel.modules() if isinstance(m, RBFKernel)]
    assert cal.HELD_LENGTHSCALE == 1.0 and float(rbf.lengthscale) == 1.0 and not rbf.raw_lengthscale.requires_grad
    (weight,) = [m for m in kernel.modules() if isinstance(m, ScaleKernel) and rbf in list(m.base_kernel.modules())]
    assert weight.raw_outputscale.requires_grad


def test_balanced_folds_hold_one_text_of_each_class():
    codes = np.array([2, 0, 2, 1, 0, 2])
    folds = cal.balanced_folds(codes)
    np.testing.assert_array_equal(folds, [0, 0, 1, 0, 1, 2])
    for fold in np.unique(folds):
        assert len(set(codes[folds == fold])) == np.sum(folds == fold)  # no class twice in a fold


@pytest.mark.parametrize("drop_unshared", [True, False])
def test_one_text_a_class_left_out_at_once_equals_the_refits_without_each_fold(fitted, drop_unshared):
    """``balanced=True``: one inverse a class and a small solve a fold give the GP of the other folds' texts (a
    Cholesky factorization of their matrix a fold), each fold's texts' words of no other fold's text dropped."""
    mean, var = cal.loo_as_new_latents(fitted, 0, drop_unshared, balanced=True)
    brute_mean, brute_var = cal.loo_as_new_latents(fitted, 0, drop_unshared, brute_force=True, balanced=True)
    np.testing.assert_allclose(mean.numpy(), brute_mean.numpy(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var.numpy(), brute_var.numpy(), rtol=1e-7, atol=1e-9)
    plain, _ = cal.loo_as_new_latents(fitted, 0, drop_unshared)
    assert float((mean - plain).abs().max()) > 1e-4  # two texts out at once are not one


def test_one_text_a_class_without_dropping_is_the_block_leave_out_closed_form(fitted):
    """Without dropping words, fold ``S``'s latent means are :math:`\\tilde y_S - G_{SS}^{-1}\\alpha_S` and
    variances :math:`\\mathrm{diag}(G_{SS}^{-1}) - \\sigma^2_S` (the block form of R&W eq. 5.12), ``G`` the inverse
    of a class's covariance plus its noise."""
    from lvgp.models.gpc.inference import DirichletInference

    model, likelihood = fitted.model_, fitted.likelihood_
    model.train()
    likelihood.train()
    try:
        with torch.no_grad():
            _, noise, G, alpha = DirichletInference.per_class_precision(model, likelihood)
            targets = likelihood.transformed_targets
    finally:
        model.eval()
        likelihood.eval()
    folds = cal.balanced_folds(fitted._training_codes())
    mean, var = cal.loo_as_new_latents(fitted, 0, drop_unshared=False, balanced=True)
    for fold in np.unique(folds):
        held = torch.as_tensor(np.flatnonzero(folds == fold))
        block = torch.linalg.inv(G[:, held][:, :, held])  # C x |S| x |S|
        expected_mean = targets[:, held] - (block @ alpha[:, held].unsqueeze(-1)).squeeze(-1)
        expected_var = block.diagonal(dim1=-2, dim2=-1) - noise[:, held]
        np.testing.assert_allclose(mean[held].numpy(), expected_mean.mT.numpy(), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(var[held].numpy(), expected_var.mT.numpy(), rtol=1e-7, atol=1e-9)


def test_the_balanced_rows_take_the_as_new_temperature_only_where_texts_are_short(fitted):
    """``gp-loo-balanced-as-new-short``: the balanced as-new temperature where the labelled texts are short (rule
    40's gate; the fixture's texts: five words or fewer), the study GP's own elsewhere."""
    assert set(cal.BALANCED_ROWS) <= set(cal.STUDY_FIT_ROWS)
    scored = ["good great fine", "bad awful dull"]
    labels = np.array(["pos", "neg"])
    raw = cal.untempered_proba(fitted, scored)
    weights = np.ones(2)
    log_loo, _ = fitted._loo_log_proba()
    found = cal.balanced_records(fitted, 0, ["good fine"] * 3, cal.BALANCED_ROWS, log_loo, raw, labels, weights, 0.5)
    truth = fitted._training_codes()
    as_new = cal.loo_as_new_log_proba(fitted, 0, balanced=True)
    assert found["gp-loo-balanced-as-new"]["T"] == pytest.approx(fitted._fit_temperature((as_new, truth)))
    assert found["gp-loo-balanced-as-new-short"]["T"] == found["gp-loo-balanced-as-new"]["T"]
    assert found["gp-loo-balanced-as-new-short"]["short"]
    kept = cal.loo_as_new_log_proba(fitted, 0, drop_unshared=False, balanced=True)
    assert found["gp-loo-balanced"]["T"] == pytest.approx(fitted._fit_temperature((kept, truth)))
    from lvgp.models.gpc.encoder_weight import LONG_TEXT_WORDS

    long = [" ".join(["good"] * LONG_TEXT_WORDS)] * 3
    found = cal.balanced_records(fitted, 0, long, ["gp-loo-balanced-as-new-short"], log_loo, raw, labels, weights, 0.5)
    assert found["gp-loo-balanced-as-new-short"]["T"] == fitted.temperature_
    assert not found["gp-loo-balanced-as-new-short"]["short"]
