r"""Platt's probabilities for support vector machines on a precomputed kernel, as LIBSVM computes them
for ``svm_train`` with ``probability=1`` -- written out here because scikit-learn deprecated
``SVC(probability=True)`` in 1.9 and removes it in 1.11.

For one binary machine (a pair of classes, or a class against the rest), with decision values
:math:`f` positive for its positive class:

1. **Cross-validated decision values** (:func:`cross_validated_decision_values`; LIBSVM's
   ``svm_binary_svc_probability``): the machine's training documents in a seeded random order, cut
   into ``folds`` consecutive parts; each part's values come from a machine trained on the others with
   the same ``C`` and ``tol``. A part whose training documents hold one class only gets :math:`+1`
   (positive only), :math:`-1` (negative only) or :math:`0` (none).
2. **The sigmoid** :math:`P(\text{positive}\mid f) = 1 / (1 + \exp(Af + B))` (Platt 1999) fitted to
   those values (:func:`fit_sigmoid`): minus the log-likelihood of Platt's smoothed targets
   :math:`t_+ = (N_+ + 1)/(N_+ + 2)`, :math:`t_- = 1/(N_- + 2)`, minimized by the Newton method with
   backtracking of Lin, Lin & Weng (2007, Algorithm 1; LIBSVM's ``sigmoid_train``), from
   :math:`A = 0`, :math:`B = \log((N_- + 1)/(N_+ + 1))`.
3. At prediction, the sigmoid of the machine trained on all its documents
   (:func:`sigmoid_probability`), clipped to :math:`[10^{-7}, 1 - 10^{-7}]` as LIBSVM does.

One-vs-one machines' pairwise probabilities :math:`r_{ij} = P(i \mid i \text{ or } j)` are coupled into
class probabilities by Wu, Lin & Weng (2004)'s second method (:func:`couple_pairwise`):
:math:`\min_p \tfrac12 p^\top Q p` subject to :math:`\sum_i p_i = 1`, with :math:`Q_{ii} = \sum_{j \ne i}
r_{ji}^2` and :math:`Q_{ij} = -r_{ji} r_{ij}`. LIBSVM solves it iteratively to a tolerance of
:math:`0.005/k`; here its optimality system is solved exactly, a batched linear solve.

The folds are drawn from a NumPy generator, not LIBSVM's, so the probabilities are LIBSVM's algorithm
on other folds: close to ``SVC(probability=True)``'s, not equal to them."""

from __future__ import annotations

import itertools

import numpy as np
from sklearn.svm import SVC

from .._random import numpy_generator

#: LIBSVM's clip of a machine's probability (``min_prob`` of ``svm_predict_probability``)
MIN_PROBABILITY = 1e-7


def _platt_p_q(f_ab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`p = 1/(1+\exp(f_{ab}))` and :math:`q = 1 - p`, each without overflow or cancellation (as LIBSVM)."""
    decay = np.exp(-np.abs(f_ab))
    small, large = decay / (1.0 + decay), 1.0 / (1.0 + decay)
    return np.where(f_ab >= 0, small, large), np.where(f_ab >= 0, large, small)


def _log_loss_terms(f_ab: np.ndarray, targets: np.ndarray) -> float:
    """Minus the log-likelihood of the smoothed ``targets`` under :math:`1/(1+\\exp(f_{ab}))`, in LIBSVM's
    overflow-safe form."""
    softplus = np.log1p(np.exp(-np.abs(f_ab)))
    return float(np.where(f_ab >= 0, targets * f_ab + softplus, (targets - 1) * f_ab + softplus).sum())


def fit_sigmoid(decision_values: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    r"""Platt's sigmoid :math:`P(\text{positive}\mid f) = 1/(1 + \exp(Af + B))` fitted to ``n`` decision
    values and their ``n`` boolean labels (Lin, Lin & Weng 2007, Algorithm 1: Newton's method with
    backtracking on Platt's smoothed targets; LIBSVM's ``sigmoid_train``, its constants). Returns ``(A, B)``."""
    f = np.asarray(decision_values, dtype=np.float64)
    labels = np.asarray(positive, dtype=bool)
    if f.ndim != 1 or labels.shape != f.shape:
        raise ValueError(
            f"decision_values and positive must be two vectors of one length; got {f.shape}, {labels.shape}"
        )
    prior1 = float(labels.sum())
    prior0 = float(len(labels) - prior1)
    max_iter, min_step, sigma, eps = 100, 1e-10, 1e-12, 1e-5
    targets = np.where(labels, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))
    a, b = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    value = _log_loss_terms(f * a + b, targets)
    for _ in range(max_iter):
        p, q = _platt_p_q(f * a + b)
        d2 = p * q
        h11 = sigma + float((f * f * d2).sum())
        h22 = sigma + float(d2.sum())
        h21 = float((f * d2).sum())
        d1 = targets - p
        g1, g2 = float((f * d1).sum()), float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        da = -(h22 * g1 - h21 * g2) / det
        db = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * da + g2 * db
        step = 1.0
        while step >= min_step:
            new_a, new_b = a + step * da, b + step * db
            new_value = _log_loss_terms(f * new_a + new_b, targets)
            if new_value < value + 1e-4 * step * gd:
                a, b, value = new_a, new_b, new_value
                break
            step /= 2.0
        if step < min_step:  # the line search failed: LIBSVM keeps the last point
            break
    return a, b


def sigmoid_probability(decision_values: np.ndarray, a: float | np.ndarray, b: float | np.ndarray) -> np.ndarray:
    r""":math:`1/(1 + \exp(Af + B))` elementwise (``a``, ``b`` broadcast against the values), clipped to
    ``[MIN_PROBABILITY, 1 - MIN_PROBABILITY]`` as LIBSVM's predictions are."""
    probability, _ = _platt_p_q(np.asarray(decision_values, dtype=np.float64) * a + b)
    return np.clip(probability, MIN_PROBABILITY, 1.0 - MIN_PROBABILITY)


def _folds(m: int, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(held, train)`` row indices of ``folds`` consecutive parts of a random order of ``m`` rows (LIBSVM's
    cut: part ``i`` is ``order[i m / folds : (i + 1) m / folds]``), parts that hold no row left out."""
    order = numpy_generator(seed).permutation(m)
    cuts = [i * m // folds for i in range(folds + 1)]
    return [
        (order[lo:hi], np.concatenate([order[:lo], order[hi:]]))
        for lo, hi in zip(cuts, cuts[1:], strict=False)
        if hi > lo
    ]


def _one_class_value(has_positive: bool, has_negative: bool) -> float:
    """LIBSVM's decision value for a held-out part whose training rows hold one class or none."""
    return 1.0 if has_positive else -1.0 if has_negative else 0.0


def cross_validated_decision_values(
    gram: np.ndarray, positive: np.ndarray, *, C: float, tol: float, folds: int = 5, seed: int = 0
) -> np.ndarray:
    """``m`` decision values of a binary machine on its ``m x m`` training ``gram``, each from a machine
    trained without its fold (LIBSVM's ``svm_binary_svc_probability``: a random order from ``seed``,
    ``folds`` consecutive parts; a part whose training rows hold one class only gets +1, -1 or 0).
    The values are positive for the ``positive`` (boolean, ``m``) class. ``positive`` ``m x M``: the values
    of ``M`` machines on the same rows and folds (one-vs-rest's, one a class), ``m x M``."""
    gram = np.asarray(gram, dtype=np.float64)
    labels = np.asarray(positive, dtype=bool)
    columns = labels.reshape(len(labels), -1)
    m = len(labels)
    if gram.shape != (m, m):
        raise ValueError(f"gram must be {m} x {m}, one row and column per label; got {gram.shape}")
    values = np.zeros(columns.shape)
    for held, train in _folds(m, folds, seed):
        train_gram, held_gram = gram[np.ix_(train, train)], gram[np.ix_(held, train)]
        for c, column in enumerate(columns.T):
            has_positive, has_negative = bool(column[train].any()), bool((~column[train]).any())
            if not (has_positive and has_negative):
                values[held, c] = _one_class_value(has_positive, has_negative)
                continue
            machine = SVC(C=C, kernel="precomputed", tol=tol, random_state=seed).fit(train_gram, column[train])
            values[held, c] = machine.decision_function(held_gram)  # positive for classes_[1] = True
    return values.reshape(labels.shape)


def cross_validated_pairwise_values(
    gram: np.ndarray, codes: np.ndarray, *, C: float, tol: float, folds: int = 5, seed: int = 0
) -> np.ndarray:
    r"""``n x P`` cross-validated decision values of the one-vs-one machines of ``n`` documents with class
    codes ``0`` to ``k - 1`` (``P = k(k-1)/2`` pairs in ``itertools.combinations`` order, as scikit-learn's
    ``decision_function_shape="ovo"``): column ``p`` of pair :math:`(i, j)` holds, at each document of class
    :math:`i` or :math:`j`, the value of the pair's machine trained without the document's fold, positive
    for :math:`i`; ``NaN`` at the other documents. One random cut of all ``n`` documents into ``folds``
    parts serves every pair, so each fold is one one-vs-one fit (scikit-learn's, whose pairs are LIBSVM's
    binary machines on the pair's rows) rather than one fit a pair; within a pair the rows are a random
    order cut into ``folds`` parts, as in LIBSVM, of sizes that vary a little more. A part whose training
    rows lack a class of a pair gets LIBSVM's +1, -1 or 0."""
    gram = np.asarray(gram, dtype=np.float64)
    codes = np.asarray(codes)
    n = len(codes)
    if gram.shape != (n, n):
        raise ValueError(f"gram must be {n} x {n}, one row and column per code; got {gram.shape}")
    k = int(codes.max()) + 1
    pairs = list(itertools.combinations(range(k), 2))
    values = np.full((n, len(pairs)), np.nan)
    for held, train in _folds(n, folds, seed):
        present = np.unique(codes[train])
        fitted: dict[tuple[int, int], np.ndarray] = {}
        if len(present) >= 2:
            machine = SVC(C=C, kernel="precomputed", tol=tol, decision_function_shape="ovo", random_state=seed)
            machine.fit(gram[np.ix_(train, train)], codes[train])
            columns = machine.decision_function(gram[np.ix_(held, train)])
            if len(present) == 2:  # one machine, positive for its second class
                fitted[(int(present[0]), int(present[1]))] = -columns
            else:
                for column, (a, b) in enumerate(itertools.combinations(present.tolist(), 2)):
                    fitted[(a, b)] = columns[:, column]
        for p, (i, j) in enumerate(pairs):
            rows = (codes[held] == i) | (codes[held] == j)
            if not rows.any():
                continue
            if (i, j) in fitted:
                values[held[rows], p] = fitted[(i, j)][rows]
            else:
                values[held[rows], p] = _one_class_value(bool(np.isin(i, present)), bool(np.isin(j, present)))
    return values


def couple_pairwise(pairwise: np.ndarray) -> np.ndarray:
    r"""``n x k`` class probabilities from ``n x k x k`` pairwise ones, ``pairwise[:, i, j]`` :math:`= r_{ij}
    = P(i \mid i \text{ or } j)` (:math:`r_{ji} = 1 - r_{ij}`; the diagonal unread): Wu, Lin & Weng (2004)'s
    second method, :math:`\min_p \tfrac12 p^\top Q p` subject to :math:`\sum_i p_i = 1`, solved exactly through
    its optimality system :math:`Q p + \beta \mathbf 1 = 0`, :math:`\mathbf 1^\top p = 1` (LIBSVM's
    ``multiclass_probability`` iterates to the same point)."""
    r = np.asarray(pairwise, dtype=np.float64)
    if r.ndim != 3 or r.shape[1] != r.shape[2]:
        raise ValueError(f"pairwise must be n x k x k; got {r.shape}")
    n, k, _ = r.shape
    off = ~np.eye(k, dtype=bool)
    r_t = np.swapaxes(r, 1, 2)  # r_t[:, i, j] = r_ji
    q = np.where(off, -r_t * r, 0.0)
    q[:, np.arange(k), np.arange(k)] = np.where(off, r_t**2, 0.0).sum(axis=2)
    system = np.zeros((n, k + 1, k + 1))
    system[:, :k, :k] = q
    system[:, :k, k] = 1.0
    system[:, k, :k] = 1.0
    right = np.zeros((n, k + 1))
    right[:, k] = 1.0
    solution = np.linalg.solve(system, right[..., None])[..., 0]
    return solution[:, :k]


#: how the machines of :func:`platt_sigmoids` and :func:`platt_probabilities` split the classes
SCHEMES = ("binary", "ovo", "ovr")


def platt_sigmoids(
    gram: np.ndarray, codes: np.ndarray, scheme: str, *, C: float, tol: float, folds: int = 5, seed: int = 0
) -> np.ndarray:
    r"""``M x 2``: each machine's Platt sigmoid :math:`(A, B)` (:func:`fit_sigmoid` on cross-validated
    decision values) for ``n`` documents of class codes ``0`` to ``k - 1`` and their ``n x n`` training ``gram``.
    ``scheme``: ``"binary"`` -- two classes, one machine positive for class 0; ``"ovo"`` -- one machine a
    pair (:func:`cross_validated_pairwise_values`; positive for the pair's first class); ``"ovr"`` -- one
    machine a class against the rest (:func:`cross_validated_decision_values`; positive for the class)."""
    codes = np.asarray(codes)
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    k = int(codes.max()) + 1
    if scheme == "binary":
        if k != 2:
            raise ValueError(f"scheme='binary' needs two classes; got codes 0 to {k - 1}")
        positives = (codes == 0)[:, None]
    elif scheme == "ovr":
        positives = codes[:, None] == np.arange(k)
    else:
        values = cross_validated_pairwise_values(gram, codes, C=C, tol=tol, folds=folds, seed=seed)
        sigmoids = []
        for p, (i, _) in enumerate(itertools.combinations(range(k), 2)):
            rows = ~np.isnan(values[:, p])
            sigmoids.append(fit_sigmoid(values[rows, p], codes[rows] == i))
        return np.array(sigmoids)
    values = cross_validated_decision_values(gram, positives, C=C, tol=tol, folds=folds, seed=seed)
    return np.array([fit_sigmoid(column, positive) for column, positive in zip(values.T, positives.T, strict=True)])


def platt_probabilities(decision_values: np.ndarray, sigmoids: np.ndarray, scheme: str) -> np.ndarray:
    """``n x k`` class probabilities from the fitted machines' ``n x M`` decision values (oriented as in
    :func:`platt_sigmoids`) and their ``M x 2`` sigmoids: ``"binary"`` -- the machine's probability and its
    complement; ``"ovo"`` -- the pairs' probabilities coupled (:func:`couple_pairwise`); ``"ovr"`` -- each
    class's probability, normalized over the classes."""
    values = np.asarray(decision_values, dtype=np.float64)
    sigmoids = np.asarray(sigmoids, dtype=np.float64)
    if values.ndim != 2 or sigmoids.shape != (values.shape[1], 2):
        raise ValueError(f"decision_values must be n x M and sigmoids M x 2; got {values.shape}, {sigmoids.shape}")
    probability = sigmoid_probability(values, sigmoids[:, 0], sigmoids[:, 1])
    if scheme == "binary":
        return np.hstack([probability, 1.0 - probability])
    if scheme == "ovr":
        return probability / probability.sum(axis=1, keepdims=True)  # each at least MIN_PROBABILITY
    if scheme != "ovo":
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    m = values.shape[1]
    k = int(round((1 + np.sqrt(1 + 8 * m)) / 2))
    if k * (k - 1) // 2 != m:
        raise ValueError(f"one-vs-one decision values have k(k-1)/2 columns; got {m}")
    pairwise = np.full((len(values), k, k), 0.5)
    for p, (i, j) in enumerate(itertools.combinations(range(k), 2)):
        pairwise[:, i, j], pairwise[:, j, i] = probability[:, p], 1.0 - probability[:, p]
    return couple_pairwise(pairwise)
