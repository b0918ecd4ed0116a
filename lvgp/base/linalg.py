"""Linear algebra shared by the matching models: regularized CCA in the dual."""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["dual_cca"]


def dual_cca(
    k: np.ndarray,
    l: np.ndarray,  # noqa: E741
    reg: float,
    components: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Regularized CCA in the dual (Bach & Jordan 2002; Hardoon et al. 2004) from centred Gram
    matrices ``k`` (source) and ``l`` (target) of the training pairs: the leading singular vectors of
    :math:`R_K R_L`, :math:`R_K = K(K+\kappa I)^{-1} = I - \kappa(K+\kappa I)^{-1}`, with :math:`\kappa` =
    ``reg`` times the mean eigenvalue of each Gram. Returns the dual directions ``alpha``, ``beta``
    (``n x components``, :math:`(K+\kappa I)^{-1}` times the singular vectors) and the canonical
    correlations (descending); each direction's sign is fixed (below).

    Only ``components`` singular vectors are computed: the left ones as the leading eigenvectors of
    :math:`MM^\top` (:math:`M = R_K R_L`), the right ones as :math:`M^\top u / \sigma`, with one Cholesky
    factor of each :math:`K+\kappa I` (not an eigendecomposition of each Gram and a full SVD): faster
    (``benchmarks/README.md``), the same directions to ~1e-11 (``tests/test_matching.py``). Where a requested
    correlation is 0 (below 1e-6 of the first: fewer directions than ``components`` in the data), the
    full SVD gives them."""
    n = len(k)

    def projection(gram: np.ndarray) -> tuple[tuple[np.ndarray, bool], np.ndarray]:
        kappa = reg * max(np.trace(gram) / n, 1e-12)
        factor = scipy.linalg.cho_factor(gram + kappa * np.eye(n), lower=True)
        r = scipy.linalg.cho_solve(factor, np.eye(n))
        r *= -kappa
        r[np.diag_indices(n)] += 1.0
        return factor, r

    factor_k, r_k = projection(k)
    factor_l, r_l = projection(l)
    m = r_k @ r_l
    values, u = scipy.linalg.eigh(m @ m.T, subset_by_index=[n - components, n - 1], driver="evr")
    corr = np.sqrt(np.clip(values[::-1], 0, None))
    u = u[:, ::-1]
    if corr[-1] > 1e-6 * max(corr[0], 1e-300):  # below, sqrt of rounding noise of M M^T (~1e-8)
        v = (m.T @ u) / corr
    else:  # directions without correlation: any orthonormal completion, as the SVD gives it
        a, sigma, bt = np.linalg.svd(m)
        u, v, corr = a[:, :components], bt[:components].T, sigma[:components]
    # each pair's sign fixed (the largest entry of its left singular vector positive), as scikit-learn's
    # svd_flip, so that the directions do not depend on the solver's sign choices
    flip = np.sign(u[np.abs(u).argmax(0), np.arange(u.shape[1])])
    flip[flip == 0] = 1.0
    u, v = u * flip, v * flip
    return scipy.linalg.cho_solve(factor_k, u), scipy.linalg.cho_solve(factor_l, v), corr
