"""Slow, direct loop implementations of the papers' equations: the independent references
the vectorised library code is tested against. Plain Python/numpy, float64."""

from __future__ import annotations

import math

import numpy as np

PAD = -1


def words(doc) -> list[int]:
    return [int(w) for w in doc if int(w) != PAD]


def embedding_kernel(kind: str, xs: np.ndarray, xt: np.ndarray, gamma=1.0, a=1.0, b=2) -> float:
    """Thesis eqs. 3.6-3.8."""
    if kind == "linear":
        return float(xs @ xt)
    if kind == "rbf":
        return math.exp(-gamma / 2 * float(((xs - xt) ** 2).sum()))
    if kind == "poly":
        return float(xs @ xt + a) ** b
    raise ValueError(kind)


def ldk_linear(X: np.ndarray, di, dj, kind: str, weights=None, identity=0.0, latent=True, **hp) -> float:
    """Eq. 3.9: (1 / |D_i||D_j|) sum_{s in D_i} sum_{t in D_j} k(x_s, x_t); with per-word
    ``weights``, sum_s sum_t w_s w_t k(x_s, x_t) / (sum_s w_s sum_t w_t); with ``identity`` (lambda),
    the word kernel lambda [v_s == v_t] + k(x_s, x_t) (without ``latent``: lambda [v_s == v_t] alone)."""
    di, dj = words(di), words(dj)
    w = (lambda v: 1.0) if weights is None else (lambda v: float(weights[v]))
    total = 0.0
    for s in di:
        for t in dj:
            k = (
                embedding_kernel(kind, X[s], X[t], **{k: v for k, v in hp.items() if k in ("gamma", "a", "b")})
                if latent
                else 0.0
            )
            total += w(s) * w(t) * (k + identity * (s == t))
    return total / (sum(w(s) for s in di) * sum(w(t) for t in dj))


def ldk(
    X,
    di,
    dj,
    embedding: str,
    level2: str,
    gamma=1.0,
    a=1.0,
    b=2,
    zeta=1.0,
    c=1.0,
    d=2,
    weights=None,
    identity=0.0,
    identity_form="joint",
    latent=True,
) -> float:
    """Eqs. 3.9-3.11 (and the normalized linear kernel, "cosine") for one pair of documents (``weights``:
    per-word weights of the measures; ``identity``: the weight lambda of the identity word kernel;
    ``identity_form="separate"``: the level-2 kernel of the latent part plus lambda times the level-2
    kernel of the bag of words)."""
    if identity_form == "separate" and identity:
        common = dict(gamma=gamma, a=a, b=b, zeta=zeta, c=c, d=d, weights=weights)
        bag = ldk(X, di, dj, embedding, level2, identity=1.0, latent=False, **common)
        return ldk(X, di, dj, embedding, level2, **common) + identity * bag
    hp = dict(gamma=gamma, a=a, b=b, weights=weights, identity=identity, latent=latent)
    lin = ldk_linear(X, di, dj, embedding, **hp)
    if level2 == "linear":
        return lin
    if level2 == "poly":
        return (lin + c) ** d
    if level2 == "rbf":
        dist = ldk_linear(X, di, di, embedding, **hp) - 2 * lin + ldk_linear(X, dj, dj, embedding, **hp)
        return math.exp(-zeta / 2 * dist)
    if level2 == "cosine":
        return lin / math.sqrt(ldk_linear(X, di, di, embedding, **hp) * ldk_linear(X, dj, dj, embedding, **hp))
    raise ValueError(level2)


def ldk_gram(X, docs1, docs2, embedding, level2, **hp) -> np.ndarray:
    docs1, docs2 = np.asarray(docs1), np.asarray(docs2)
    out = np.zeros((len(docs1), len(docs2)))
    for i, di in enumerate(docs1):
        for j, dj in enumerate(docs2):
            out[i, j] = ldk(X, di, dj, embedding, level2, **hp)
    return out


def grad_lin_lin(X, di, dj, m) -> np.ndarray:
    """Eq. 3.12: d K_LIN-LIN(X_i, X_j) / d x_m."""
    di, dj = words(di), words(dj)
    g = np.zeros(X.shape[1])
    for s in di:
        for t in dj:
            if m == s and m != t:
                g += X[t]
            elif m == t and m != s:
                g += X[s]
            elif m == t and m == s:
                g += 2 * X[m]
    return g / (len(di) * len(dj))


def grad_rbf_lin(X, di, dj, m, gamma) -> np.ndarray:
    """Eq. 3.15: d K_RBF-LIN(X_i, X_j) / d x_m."""
    di, dj = words(di), words(dj)
    g = np.zeros(X.shape[1])
    for s in di:
        for t in dj:
            k = embedding_kernel("rbf", X[s], X[t], gamma=gamma)
            if m == s and m != t:
                g += k * gamma * (X[t] - X[s])
            elif m == t and m != s:
                g += k * gamma * (X[s] - X[t])
    return g / (len(di) * len(dj))


def gplvsm_log_posterior(K_ldk, y, outputscale, noise, mean, X, rho) -> float:
    """Eq. 11 / thesis eq. 5.17 + Gaussian prior, including all constants:
    sum_b log N(y_b | mean_b, alpha^-1 K_ldk + beta^-1 I) + sum_v log N(x_v | 0, rho^-1 I)."""
    y = np.atleast_2d(np.asarray(y, dtype=float).T)  # B x n
    n = y.shape[1]
    K = outputscale * K_ldk + noise * np.eye(n)
    sign, logdet = np.linalg.slogdet(K)
    assert sign > 0
    total = 0.0
    for b in range(y.shape[0]):
        r = y[b] - np.atleast_1d(mean)[b if np.size(mean) > 1 else 0]
        total += -0.5 * r @ np.linalg.solve(K, r) - 0.5 * logdet - 0.5 * n * math.log(2 * math.pi)
    prior = -0.5 * rho * float((X**2).sum()) + 0.5 * X.size * math.log(rho / (2 * math.pi))
    return total + prior


def gp_predict(K_train, K_cross, K_test_diag, y, outputscale, noise, mean):
    """Eqs. 19 and 21 with K of eq. 8 (noise on the training diagonal and on K_**):
    mean_* = mu + k_*^T K^-1 (y - mu), var_* = K_** - k_*^T K^-1 k_*."""
    n = K_train.shape[0]
    K = outputscale * K_train + noise * np.eye(n)
    k_star = outputscale * K_cross  # n_test x n
    pred_mean = mean + k_star @ np.linalg.solve(K, y - mean)
    pred_var = outputscale * K_test_diag + noise - np.einsum("ij,ji->i", k_star, np.linalg.solve(K, k_star.T))
    return pred_mean, pred_var


def dirichlet_leave_one_out(K, noise, targets, means, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """Each document's latent posterior given the others, by an explicit solve a document and class
    (R&W eq. 2.23-2.24 on the other documents; not the closed form of eq. 5.12): ``n x C`` means and
    variances of the Dirichlet GP's ``C`` regressions with kernel ``K`` (``n x n``, or ``C x n x n``: a
    class's own, its output scale included), noise ``noise`` (``C x n``), transformed targets ``targets``
    (``C x n``) and constant means ``means`` (``C``); among ``rows`` of the documents alone (default all)."""
    K, noise, targets, means = (np.asarray(a, dtype=np.float64) for a in (K, noise, targets, means))
    rows = np.arange(noise.shape[1]) if rows is None else np.asarray(rows)
    C, m = len(means), len(rows)
    mean, var = np.zeros((m, C)), np.zeros((m, C))
    for c in range(C):
        Kc = (K[c] if K.ndim == 3 else K)[np.ix_(rows, rows)]
        for j in range(m):
            rest = np.delete(np.arange(m), j)
            cov = Kc[np.ix_(rest, rest)] + np.diag(noise[c, rows[rest]])
            k = Kc[rest, j]
            mean[j, c] = means[c] + k @ np.linalg.solve(cov, targets[c, rows[rest]] - means[c])
            var[j, c] = Kc[j, j] - k @ np.linalg.solve(cov, k)
    return mean, var


def untempered_proba(classifier, X) -> np.ndarray:
    """A fitted classifier's ``predict_proba(X)`` at :math:`T = 1`: the probabilities its temperature
    (``calibration="temperature"``) tempers, against which the tempered ones are checked. Its fitted
    ``temperature_`` is restored afterwards, also where the prediction raises."""
    tempered, classifier.temperature_ = classifier.temperature_, 1.0
    try:
        return classifier.predict_proba(X)
    finally:
        classifier.temperature_ = tempered
