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
