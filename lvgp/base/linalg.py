"""Linear algebra shared by the matching models: regularized CCA in the dual."""

from __future__ import annotations

import numpy as np

__all__ = ["dual_cca"]


def dual_cca(
    k: np.ndarray,
    l: np.ndarray,  # noqa: E741
    reg: float,
    components: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Regularized CCA in the dual (Bach & Jordan 2002; Hardoon et al. 2004) from centred Gram
    matrices ``k`` (source) and ``l`` (target) of the training pairs: the singular vectors of
    :math:`R_K R_L`, :math:`R_K = K(K+\kappa I)^{-1}`, with :math:`\kappa` = ``reg`` times the mean
    eigenvalue of each Gram. Returns the dual directions ``alpha``, ``beta`` (``n x components``)
    and the canonical correlations."""

    def projection(gram: np.ndarray) -> tuple[float, np.ndarray]:
        kappa = reg * max(np.trace(gram) / len(gram), 1e-12)
        values, vectors = np.linalg.eigh(gram)
        values = np.clip(values, 0, None)
        return kappa, (vectors * (values / (values + kappa))) @ vectors.T

    kappa_k, r_k = projection(k)
    kappa_l, r_l = projection(l)
    a, corr, bt = np.linalg.svd(r_k @ r_l)
    alpha = np.linalg.solve(k + kappa_k * np.eye(len(k)), a[:, :components])
    beta = np.linalg.solve(l + kappa_l * np.eye(len(l)), bt[:components].T)
    return alpha, beta, corr[:components]
