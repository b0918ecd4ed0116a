"""``benchmarks/open_set_threshold_dev.py`` (issue 57): its leave-one-out threshold is the conformal quantile of
the labelled texts' energies each predicted by the GP of the others (checked against a Cholesky factorization of the
other texts' matrix a text), its in-sample threshold the quantile of the texts' own scores, and the oracle keeps at
least 95% of the in-scope scores it is read from."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from lvgp import LBFGS, LDKGPClassifier
from lvgp.base.novelty import conformal_threshold
from tests._benchmarks import benchmark_module

thr = benchmark_module("open_set_threshold_dev.py", "_open_set_threshold_dev")
cal = benchmark_module("open_set_calibration_dev.py", "_open_set_calibration_dev")

POS, NEG = ["good", "great", "fine", "nice"], ["bad", "awful", "dull", "weak"]


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    x = [" ".join(rng.choice(POS, 4)) for _ in range(10)] + [" ".join(rng.choice(NEG, 4)) for _ in range(10)]
    y = ["pos"] * 10 + ["neg"] * 10
    clf = LDKGPClassifier(class_hyperparameters="per-class", optimizer=LBFGS(max_iter=15), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.fit(x, y), x


def test_the_thresholds_are_the_quantiles_of_what_each_row_reads(fitted):
    gp, x = fitted
    inside = np.linspace(-3.0, 1.0, 41)
    found = thr.thresholds(gp, x, inside)
    # each labelled text predicted by the GP of the others, one factorization a text: its energy
    mean, _ = cal.loo_as_new_latents(gp, 0, drop_unshared=False, brute_force=True)
    energies = logsumexp(mean.numpy(), axis=1)
    assert found["leave-one-out"] == pytest.approx(conformal_threshold(energies, 0.95), rel=1e-7)
    assert found["in-sample"] == pytest.approx(conformal_threshold(gp.score_samples(x), 0.95))
    assert np.mean(inside >= found["oracle"]) >= thr.RECALL
    # a left-out text is less typical than itself fitted: the in-sample threshold is the higher one
    assert found["in-sample"] > found["leave-one-out"]


def test_the_class_rows_judge_each_text_by_its_predicted_classs_threshold():
    """``leave-one-out-class``: each dev text against the threshold of the class it is predicted as, the
    conformal quantile of that class's reference scores (a sort here); the shares kept within the classes with at
    least ``CLASS_MIN`` texts."""
    from lvgp.models.open_set import RejectReference

    rng = np.random.default_rng(8)
    scores = rng.normal(size=60)
    predicted = np.array(["a"] * 30 + ["b"] * 30)
    reference = RejectReference(0.0, "leave-one-out", scores, predicted)
    classes = np.array(["a", "b"])
    dev = np.array(["b", "a", "b"])
    got = thr.class_thresholds(reference, classes, dev)
    k = int(np.floor(31 * 0.05))
    own = {c: np.sort(scores[predicted == c])[k - 1] for c in "ab"}
    np.testing.assert_array_equal(got, [own["b"], own["a"], own["b"]])
    accepted = np.array([True] * 19 + [False] + [True] * 25 + [False] * 5)
    labels = np.array(["a"] * 20 + ["b"] * 30)
    gap, worst = thr.class_shares(accepted, labels)
    assert worst == pytest.approx(25 / 30) and gap == pytest.approx((0.0 + (0.95 - 25 / 30)) / 2)
    assert all(np.isnan(thr.class_shares(accepted[:10], labels[:10])))  # no class with CLASS_MIN texts


def test_the_as_new_threshold_without_dropping_a_word_is_the_classifiers_own(fitted):
    """``leave-one-out-as-new`` with no word dropped is the closed-form leave-one-out threshold of the lifted
    energy; with the words of a single labelled text dropped, the left-out texts look more typical (higher)."""
    gp, _ = fitted
    own = gp.set_params(novelty_score="lifted-energy")
    try:
        assert thr.as_new_threshold(own, 0, drop_unshared=False) == pytest.approx(own.novelty_threshold(0.95), rel=1e-7)
        assert thr.as_new_threshold(own, 0) >= own.novelty_threshold(0.95) - 1e-9
        with pytest.raises(ValueError, match="reads the lifted energy"):
            thr.as_new_threshold(own.set_params(novelty_score="energy"), 0)
    finally:
        gp.set_params(novelty_score="energy")
