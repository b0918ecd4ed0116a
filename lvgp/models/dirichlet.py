r"""The Dirichlet GP classifier's log evidence with one covariance factorization for all classes.

Milios et al. (NeurIPS 2018) turn the labels into ``C`` regression problems: class ``c``'s
transformed targets :math:`\tilde{\mathbf y}_c` under :math:`\mathcal N(m_c \mathbf 1, \mathbf K_c)`, with
:math:`\mathbf K_c = s\mathbf K + \operatorname{diag}(\boldsymbol\sigma^2_c) + \eta\mathbf I`, where
:math:`\sigma^2_{c,i} = \log(1/\alpha_{c,i} + 1)` takes two values: :math:`\sigma^2_1` for the documents of
class ``c`` (:math:`\alpha = 1 + \alpha_\epsilon`) and :math:`\sigma^2_0` for the others (:math:`\alpha =
\alpha_\epsilon`). gpytorch factors the ``C`` matrices :math:`\mathbf K_c` one by one: ``C`` Cholesky
factorizations of ``n x n`` at every evaluation of the evidence, 150 for an intent set of 150 classes.

With one output scale :math:`s` and one additional noise :math:`\eta` for all classes
(``class_hyperparameters="shared"``), every :math:`\mathbf K_c` is one matrix
:math:`\mathbf A = s\mathbf K + (\sigma^2_0 + \eta)\mathbf I` plus a diagonal on class ``c``'s :math:`n_c`
documents, :math:`\mathbf K_c = \mathbf A + \mathbf U_c \mathbf D_c \mathbf U_c^\top` (:math:`\mathbf U_c`: those
columns of the identity; :math:`\mathbf D_c = (\sigma^2_1 - \sigma^2_0)\mathbf I`, negative). By the Woodbury
identity and the matrix determinant lemma, with :math:`\mathbf S_c = \mathbf D_c^{-1} + \mathbf U_c^\top \mathbf
A^{-1} \mathbf U_c` (negative definite: :math:`\mathbf A^{-1} \preceq \mathbf I / (\sigma^2_0 + \eta)` and
:math:`|\sigma^2_1 - \sigma^2_0| < \sigma^2_0 + \eta`) and :math:`\mathbf r_c = \tilde{\mathbf y}_c - m_c\mathbf 1`,

.. math::

   \mathbf r_c^\top \mathbf K_c^{-1} \mathbf r_c = \mathbf r_c^\top \mathbf A^{-1} \mathbf r_c
     - \mathbf t_c^\top \mathbf S_c^{-1} \mathbf t_c, \quad \mathbf t_c = \mathbf U_c^\top \mathbf A^{-1} \mathbf r_c,
   \qquad
   \log|\mathbf K_c| = \log|\mathbf A| + n_c \log(\sigma^2_0 - \sigma^2_1) + \log|-\mathbf S_c|.

One Cholesky factorization of :math:`\mathbf A` (and its inverse factor), then an :math:`n_c \times n_c`
one a class: :math:`O(n^3 + \sum_c n_c^2 n)` instead of :math:`O(C n^3)`. Equal to gpytorch's batched
evidence to rounding (``tests/test_gpc.py``), gradients by autograd through the same operations.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["shared_dirichlet_log_evidence", "SharedDirichletPosterior"]


def _class_factors(K: Tensor, noise: Tensor) -> tuple[Tensor, Tensor, list[tuple[Tensor, Tensor, Tensor]]]:
    r"""The Cholesky factor ``L`` of :math:`\mathbf A`, its inverse, and per class its documents (the rows
    where its noise is below the base), :math:`\mathbf D_c`'s diagonal and the Cholesky factor of
    :math:`-\mathbf S_c` (module docstring)."""
    n = K.shape[-1]
    base = noise.max()
    off = noise < base  # each class's own documents (smaller noise)
    L = torch.linalg.cholesky(K + torch.diag_embed(base.expand(n)))
    L_inv = torch.linalg.solve_triangular(L, torch.eye(n, dtype=K.dtype, device=K.device), upper=False)
    factors = []
    for c in range(noise.shape[0]):
        rows = torch.nonzero(off[c]).ravel()
        d = noise[c, rows] - base  # negative
        W = L_inv[:, rows]  # L^-1 U_c
        neg_S = -torch.diag_embed(1.0 / d) - W.mT @ W  # -(D^-1 + U^T A^-1 U), positive definite
        factors.append((rows, d, torch.linalg.cholesky(neg_S)))
    return L, L_inv, factors


def _check_shapes(K: Tensor, means: Tensor, noise: Tensor, targets: Tensor) -> None:
    n, C = K.shape[-1], noise.shape[0]
    if K.shape != (n, n) or noise.shape != (C, n) or targets.shape != (C, n) or means.shape != (C,):
        raise ValueError(
            f"K {tuple(K.shape)}, means {tuple(means.shape)}, noise {tuple(noise.shape)} and targets "
            f"{tuple(targets.shape)} must be n x n, C, C x n and C x n"
        )


def shared_dirichlet_log_evidence(K: Tensor, means: Tensor, noise: Tensor, targets: Tensor) -> Tensor:
    r"""The sum over the classes of :math:`\log \mathcal N(\tilde{\mathbf y}_c \mid m_c\mathbf 1, \mathbf K +
    \operatorname{diag}(\mathbf n_c))` (module docstring), where every class's noise ``noise[c]`` takes one
    value off its own documents (the largest of all, :math:`\sigma^2_0 + \eta`) and any smaller values on them.

    Args:
        K: ``n x n``, the output scale times the kernel (the classes' shared prior covariance).
        means: ``C``, the classes' constant means.
        noise: ``C x n``, each class's noise (Dirichlet and additional) at each document.
        targets: ``C x n``, the transformed targets.

    Returns:
        A scalar, differentiable in every argument.

    Raises:
        ValueError: the shapes disagree.
    """
    _check_shapes(K, means, noise, targets)
    n, C = K.shape[-1], noise.shape[0]
    L, L_inv, factors = _class_factors(K, noise)
    logdet_A = 2 * torch.log(torch.diagonal(L)).sum()
    Z = L_inv @ (targets - means[:, None]).mT  # L^-1 r, n x C
    Q = L_inv.mT @ Z  # A^-1 r
    total = -0.5 * ((Z * Z).sum() + C * logdet_A + C * n * math.log(2 * math.pi))
    for c, (rows, d, R) in enumerate(factors):
        if len(rows) == 0:
            continue
        u = torch.linalg.solve_triangular(R, Q[rows, c, None], upper=False)
        # r^T K_c^-1 r = r^T A^-1 r - t^T S^-1 t = r^T A^-1 r + t^T (-S)^-1 t;  log|K_c| as in the module docstring
        total = total - 0.5 * ((u * u).sum() + torch.log(-d).sum() + 2 * torch.log(torch.diagonal(R)).sum())
    return total


class SharedDirichletPosterior:
    r"""The classes' latent posteriors of a fitted shared-hyper-parameter Dirichlet GP from one
    factorization (module docstring): at test documents with cross-covariances :math:`\mathbf k_*`
    (``n x b``) and prior variances :math:`k_{**}`, class ``c``'s mean :math:`m_c + \mathbf k_*^\top
    \mathbf K_c^{-1}\mathbf r_c` and variance :math:`k_{**} - \mathbf k_*^\top \mathbf K_c^{-1} \mathbf k_*`
    (R&W eq. 2.25-2.26), each :math:`\mathbf K_c^{-1}` by Woodbury: :math:`O(n^2 b + \sum_c n_c^2 b)` a block
    instead of :math:`O(C n^2 b)` and ``C`` factorizations.

    Args: as :func:`shared_dirichlet_log_evidence` (computed without gradients by the caller)."""

    def __init__(self, K: Tensor, means: Tensor, noise: Tensor, targets: Tensor) -> None:
        _check_shapes(K, means, noise, targets)
        _, self.L_inv, self.factors = _class_factors(K, noise)
        self.means, self.noise, self.targets = means, noise, targets
        Q = self.L_inv.mT @ (self.L_inv @ (targets - means[:, None]).mT)  # A^-1 r, n x C
        alpha = Q.clone()
        for c, (rows, _, R) in enumerate(self.factors):
            if len(rows) == 0:
                continue
            # K_c^-1 r = A^-1 r - A^-1 U S^-1 U^T A^-1 r = A^-1 r + A^-1 U (-S)^-1 t
            v = torch.cholesky_solve(Q[rows, c, None], R).squeeze(-1)
            alpha[:, c] += self.L_inv.mT @ (self.L_inv[:, rows] @ v)
        self.alpha = alpha  # n x C: K_c^-1 r_c

    def predict(self, k_star: Tensor, k_diag: Tensor) -> tuple[Tensor, Tensor]:
        """Means and variances ``b x C`` at documents with cross-covariances ``k_star`` (``n x b``) and prior
        variances ``k_diag`` (``b``)."""
        mean = self.means + k_star.mT @ self.alpha
        G = self.L_inv @ k_star  # L^-1 k*, n x b
        B = self.L_inv.mT @ G  # A^-1 k*
        base = k_diag - (G * G).sum(0)  # k** - k*^T A^-1 k*
        var = base[:, None].repeat(1, len(self.factors))
        for c, (rows, _, R) in enumerate(self.factors):
            if len(rows) == 0:
                continue
            V = torch.linalg.solve_triangular(R, B[rows], upper=False)
            var[:, c] -= (V * V).sum(0)
        return mean, var.clamp_min(0.0)

    def leave_one_out(self) -> tuple[Tensor, Tensor]:
        r"""Each training document's latent mean and variance given the others, ``C x n`` each:
        :math:`\tilde y_i - \alpha_i / [\mathbf K_c^{-1}]_{ii}` and :math:`1 / [\mathbf K_c^{-1}]_{ii} -
        n_{c,i}` (R&W eq. 5.12), the diagonal of :math:`\mathbf K_c^{-1} = \mathbf A^{-1} + \mathbf M_c
        (-\mathbf S_c)^{-1} \mathbf M_c^\top` (:math:`\mathbf M_c = \mathbf A^{-1}\mathbf U_c`) from the one
        factorization."""
        diag_A = (self.L_inv * self.L_inv).sum(0)  # diag of A^-1 = L^-T L^-1
        diag = diag_A[None, :].repeat(len(self.factors), 1)  # C x n
        for c, (rows, _, R) in enumerate(self.factors):
            if len(rows) == 0:
                continue
            M = self.L_inv.mT @ self.L_inv[:, rows]  # A^-1 U_c, n x n_c
            V = torch.linalg.solve_triangular(R, M.mT, upper=False)  # R^-1 M^T, n_c x n
            diag[c] += (V * V).sum(0)
        alpha = self.alpha.mT  # C x n
        return self.targets - alpha / diag, (1.0 / diag - self.noise).clamp_min(0.0)
