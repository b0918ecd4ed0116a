"""Platt's probabilities for SVMs on a precomputed kernel (``lvgp.base.platt``), each step against an independent
reference: the sigmoid against a general-purpose minimizer of the same likelihood, the coupling against LIBSVM's
iteration written as a loop, the cross-validated values against a loop of one binary machine a pair and fold; the
whole against LIBSVM's ``SVC(probability=True)`` while scikit-learn still has it (deprecated in 1.9)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.svm import SVC

from lvgp.base.platt import (
    MIN_PROBABILITY,
    _folds,
    couple_pairwise,
    cross_validated_decision_values,
    cross_validated_pairwise_values,
    fit_sigmoid,
    platt_probabilities,
    platt_sigmoids,
    sigmoid_probability,
)


def clusters(sizes, seed, dim=4, spread=1.2):
    """Points around one centre a class and their RBF Gram: ``gram, codes, rng``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(sizes), dim)) * spread
    codes = np.repeat(np.arange(len(sizes)), sizes)
    points = centres[codes] + rng.normal(size=(len(codes), dim))
    gram = np.exp(-0.1 * ((points[:, None] - points[None]) ** 2).sum(-1))
    return gram, codes, rng


def platt_loss(ab, f, positive):
    """Minus the log-likelihood of Platt's smoothed targets (Platt 1999, eq. 2 and the targets of sec. 2.2)."""
    n_pos, n_neg = positive.sum(), (~positive).sum()
    t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    p = 1 / (1 + np.exp(ab[0] * f + ab[1]))
    return -np.sum(t * np.log(p) + (1 - t) * np.log(1 - p))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_sigmoid_is_the_minimum_of_platts_likelihood(seed):
    rng = np.random.default_rng(seed)
    positive = rng.random(60) < 0.4
    f = np.where(positive, 1.0, -1.0) * rng.gamma(2.0, 0.6, 60) + rng.normal(0, 0.8, 60)  # overlapping classes
    a, b = fit_sigmoid(f, positive)
    reference = minimize(platt_loss, x0=[0.0, 0.0], args=(f, positive), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose([a, b], reference.x, atol=1e-5)
    assert platt_loss([a, b], f, positive) <= reference.fun + 1e-9
    assert a < 0  # the probability of the positive class grows with the decision value


def test_the_sigmoid_of_separable_and_of_constant_values_stays_finite():
    positive = np.arange(20) < 10
    a, b = fit_sigmoid(np.where(positive, 3.0, -3.0), positive)  # separable: the smoothed targets bound A
    assert np.isfinite([a, b]).all() and a < 0
    p = sigmoid_probability(np.array([3.0, -3.0]), a, b)
    assert p[0] == pytest.approx(11 / 12, abs=1e-3) and p[1] == pytest.approx(1 / 12, abs=1e-3)
    a, b = fit_sigmoid(np.zeros(20), positive)  # no information: the smoothed prior
    assert a == pytest.approx(0.0, abs=1e-9) and sigmoid_probability(np.zeros(1), a, b)[0] == pytest.approx(0.5)
    assert sigmoid_probability(np.array([-1e6, 1e6]), -1.0, 0.0).tolist() == [MIN_PROBABILITY, 1 - MIN_PROBABILITY]


def libsvm_multiclass_probability(r, eps=1e-13, max_iter=100_000):
    """LIBSVM's ``multiclass_probability`` (svm.cpp) for one document, a loop as written there, run to ``eps``."""
    k = len(r)
    q = np.zeros((k, k))
    p = np.full(k, 1.0 / k)
    for t in range(k):
        for j in range(t):
            q[t, t] += r[j, t] ** 2
            q[t, j] = q[j, t]
        for j in range(t + 1, k):
            q[t, t] += r[j, t] ** 2
            q[t, j] = -r[j, t] * r[t, j]
    for _ in range(max_iter):
        qp = q @ p
        pqp = p @ qp
        if np.max(np.abs(qp - pqp)) < eps:
            break
        for t in range(k):
            diff = (-qp[t] + pqp) / q[t, t]
            p[t] += diff
            pqp = (pqp + diff * (diff * q[t, t] + 2 * qp[t])) / (1 + diff) / (1 + diff)
            for j in range(k):
                qp[j] = (qp[j] + diff * q[t, j]) / (1 + diff)
                p[j] /= 1 + diff
    return p


@pytest.mark.parametrize("k", [2, 3, 5])
def test_coupling_is_libsvms_iteration_run_to_its_fixed_point(k):
    rng = np.random.default_rng(k)
    r = rng.uniform(0.05, 0.95, size=(6, k, k))
    r = np.triu(r, 1) + np.tril(1 - np.swapaxes(np.triu(r, 1), 1, 2), -1)  # r_ji = 1 - r_ij
    coupled = couple_pairwise(r)
    for row in range(6):
        np.testing.assert_allclose(coupled[row], libsvm_multiclass_probability(r[row]), atol=1e-10)
    np.testing.assert_allclose(coupled.sum(1), 1.0, atol=1e-12)
    assert (coupled > 0).all()
    # pairwise probabilities of a distribution p, r_ij = p_i / (p_i + p_j), give back p
    p = rng.dirichlet(np.ones(k), size=4)
    consistent = p[:, :, None] / (p[:, :, None] + p[:, None, :])
    np.testing.assert_allclose(couple_pairwise(consistent), p, atol=1e-12)


def test_cross_validated_values_come_from_machines_trained_without_their_fold():
    gram, codes, _ = clusters([9, 14], seed=3)
    positive = codes == 0
    values = cross_validated_decision_values(gram, positive, C=2.0, tol=1e-6, seed=5)
    for held, train in _folds(len(codes), 5, 5):
        machine = SVC(C=2.0, kernel="precomputed", tol=1e-6).fit(gram[np.ix_(train, train)], positive[train])
        np.testing.assert_allclose(values[held], machine.decision_function(gram[np.ix_(held, train)]), atol=1e-9)
    assert sorted(np.concatenate([h for h, _ in _folds(len(codes), 5, 5)]).tolist()) == list(range(len(codes)))
    # folds whose training rows hold one class: LIBSVM's -1 (negative only) and +1 (positive only)
    lone = cross_validated_decision_values(gram[:2, :2], np.array([True, False]), C=1.0, tol=1e-3, folds=2)
    assert lone.tolist() == [-1.0, 1.0]


@pytest.mark.parametrize("sizes", [[12, 10, 1, 9], [8, 1, 7]])  # the second: a fold of two classes, one machine
def test_the_pairs_values_are_one_binary_machine_a_pair_and_fold(sizes):
    """One one-vs-one fit a fold equals a loop of LIBSVM's binary machines, one a pair and fold, each on the
    pair's training rows; a class of one document leaves a fold's training rows without it (+1 / -1)."""
    gram, codes, _ = clusters(sizes, seed=7)
    values = cross_validated_pairwise_values(gram, codes, C=1.5, tol=1e-12, seed=3)
    k = len(sizes)
    for p, (i, j) in enumerate(itertools.combinations(range(k), 2)):
        in_pair = (codes == i) | (codes == j)
        assert np.isnan(values[~in_pair, p]).all() and not np.isnan(values[in_pair, p]).any()
        for held, train in _folds(len(codes), 5, 3):
            held, train = held[in_pair[held]], train[in_pair[train]]
            if len(held) == 0:
                continue
            has_i, has_j = (codes[train] == i).any(), (codes[train] == j).any()
            if has_i and has_j:
                machine = SVC(C=1.5, kernel="precomputed", tol=1e-12)
                machine.fit(gram[np.ix_(train, train)], codes[train] == i)
                expected = machine.decision_function(gram[np.ix_(held, train)])
            else:
                expected = np.full(len(held), 1.0 if has_i else -1.0 if has_j else 0.0)
            np.testing.assert_allclose(values[held, p], expected, atol=1e-8)
    lone = sizes.index(1)
    assert any(not (codes[train] == lone).any() for _, train in _folds(len(codes), 5, 3)), "no fold without it"


@pytest.mark.parametrize(("scheme", "sizes"), [("binary", [20, 25]), ("ovo", [15, 12, 18]), ("ovr", [15, 12, 18])])
def test_the_probabilities_are_close_to_libsvms(scheme, sizes):
    """The same algorithm as LIBSVM's ``SVC(probability=True)`` on other random folds: close, the same most
    probable class; skipped once scikit-learn has removed the option."""
    if "probability" not in SVC().get_params():
        pytest.skip("scikit-learn without SVC(probability=True)")
    gram, codes, rng = clusters(sizes, seed=11)
    test = rng.choice(len(codes), 20, replace=False)
    cross = gram[test]
    k = len(sizes)
    machine = SVC(C=1.0, kernel="precomputed", decision_function_shape="ovo").fit(gram, codes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if scheme == "ovr":
            columns, values = [], []
            for c in range(k):
                libsvm = SVC(C=1.0, kernel="precomputed", probability=True, random_state=0).fit(gram, codes == c)
                columns.append(libsvm.predict_proba(cross)[:, 1])
                values.append(libsvm.decision_function(cross))
            expected = np.stack(columns, axis=1)
            expected /= expected.sum(1, keepdims=True)
            values = np.stack(values, axis=1)
        else:
            expected = SVC(C=1.0, kernel="precomputed", probability=True, random_state=0).fit(gram, codes)
            expected = expected.predict_proba(cross)
            values = machine.decision_function(cross)
            values = -values[:, None] if scheme == "binary" else values  # positive for classes_[0]
    proba = platt_probabilities(values, platt_sigmoids(gram, codes, scheme, C=1.0, tol=1e-3), scheme)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    assert np.abs(proba - expected).max() < 0.12 and np.abs(proba - expected).mean() < 0.04
    assert (proba.argmax(1) == expected.argmax(1)).mean() >= 0.9


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="decision_values and positive"):
        fit_sigmoid(np.zeros(3), np.zeros(4, dtype=bool))
    with pytest.raises(ValueError, match="gram must be 3 x 3"):
        cross_validated_decision_values(np.zeros((3, 2)), np.array([True, False, True]), C=1.0, tol=1e-3)
    with pytest.raises(ValueError, match="scheme must be one of"):
        platt_sigmoids(np.eye(4), np.array([0, 1, 0, 1]), "ovx", C=1.0, tol=1e-3)
    with pytest.raises(ValueError, match="needs two classes"):
        platt_sigmoids(np.eye(3), np.array([0, 1, 2]), "binary", C=1.0, tol=1e-3)
    with pytest.raises(ValueError, match="pairwise must be n x k x k"):
        couple_pairwise(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="k\\(k-1\\)/2 columns"):
        platt_probabilities(np.zeros((2, 4)), np.zeros((4, 2)), "ovo")
