"""``benchmarks/open_set_calibration_dev.py`` (issue 57): its leave-one-out predictions of texts scored as new
ones -- from one inverse a class -- equal a Cholesky factorization of the other texts' matrix a text, reproduce the
classifier's closed form when no word is dropped, and drop exactly the words of no other training text (the texts
without such words keep their predictions); its ECE with every class weighted alike, by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

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
