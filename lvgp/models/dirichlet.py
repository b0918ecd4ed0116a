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

One Cholesky factorization of :math:`\mathbf A` and its inverse, then an :math:`n_c \times n_c` one a class
(the classes batched in groups of similar sizes, padded with the identity): :math:`O(n^3 + \sum_c n_c^2 n)`
instead of :math:`O(C n^3)`. Equal to gpytorch's batched evidence to rounding (``tests/test_gpc.py``). Its
gradient is the closed form of R&W eq. 5.9 summed over the classes (:class:`_SharedEvidence`: one
:math:`n \times n` product beyond the value), checked against finite differences and gpytorch's
autograd; autograd through these operations cost 2-5x more (``benchmarks/dirichlet_evidence.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

__all__ = ["shared_dirichlet_log_evidence", "SharedDirichletPosterior"]


def _check_shapes(K: Tensor, means: Tensor, noise: Tensor, targets: Tensor) -> None:
    n, C = K.shape[-1], noise.shape[0]
    if K.shape != (n, n) or noise.shape != (C, n) or targets.shape != (C, n) or means.shape != (C,):
        raise ValueError(
            f"K {tuple(K.shape)}, means {tuple(means.shape)}, noise {tuple(noise.shape)} and targets "
            f"{tuple(targets.shape)} must be n x n, C, C x n and C x n"
        )


#: entries of the padded ``classes x rows x n`` blocks that one group of classes handles at once
#: (:func:`_class_groups`): 2^24 float64 entries, 128 MB
_GROUP_ENTRIES = 2**24


@dataclass
class _ClassGroup:
    r"""Classes whose own documents are handled as one padded batch (:func:`_class_groups`):
    ``classes`` (``g``), ``rows`` (``g x m``: each class's own documents, padded with document 0),
    ``valid`` (``g x m``), ``d`` (``g x m``: :math:`\mathbf D_c`'s diagonal, -1 where padded) and ``R``
    (``g x m x m``: the Cholesky factors of :math:`-\mathbf S_c`, the identity where padded)."""

    classes: Tensor
    rows: Tensor
    valid: Tensor
    d: Tensor
    R: Tensor

    def own(self, values: Tensor) -> Tensor:
        """``g x m x ...``: the rows ``rows`` of ``values`` (``n x ...``), zero where padded."""
        picked = values[self.rows]
        return picked * self.valid.reshape(*self.valid.shape, *([1] * (picked.dim() - 2))).to(picked.dtype)


def _class_groups(A_inv: Tensor, noise: Tensor, base: Tensor) -> list[_ClassGroup]:
    r"""Every class with own documents (noise below ``base``), in groups of similar sizes, largest first
    (a group's ``g x m x n`` at most ``_GROUP_ENTRIES``, or one class), with the Cholesky factors of
    :math:`-\mathbf S_c = -\mathbf D_c^{-1} - \mathbf U_c^\top\mathbf A^{-1}\mathbf U_c` batched."""
    n = noise.shape[-1]
    off = noise < base
    counts = off.sum(1)
    order = torch.argsort(counts, descending=True, stable=True)
    sizes = counts[order].tolist()  # one read of the classes' sizes
    own_first = torch.argsort((~off).to(torch.int8), dim=1, stable=True)  # a class's own documents first
    groups: list[_ClassGroup] = []
    start = 0
    while start < len(sizes) and sizes[start] > 0:
        m, end = sizes[start], start + 1
        while end < len(sizes) and sizes[end] > 0 and (end - start + 1) * m * n <= _GROUP_ENTRIES:
            end += 1
        classes = order[start:end]
        valid = torch.arange(m, device=noise.device) < counts[classes, None]
        rows = torch.where(valid, own_first[classes, :m], 0)
        d = torch.where(valid, noise[classes[:, None], rows] - base, -1.0)
        pair = valid[:, :, None] & valid[:, None, :]
        eye = torch.eye(m, dtype=A_inv.dtype, device=A_inv.device)
        neg_S = torch.where(pair, -torch.diag_embed(1.0 / d) - A_inv[rows[:, :, None], rows[:, None, :]], eye)
        groups.append(_ClassGroup(classes, rows, valid, d, torch.linalg.cholesky(neg_S)))
        start = end
    return groups


def _factor(K: Tensor, noise: Tensor) -> tuple[Tensor, Tensor, list[_ClassGroup]]:
    r""":math:`\log|\mathbf A|`, :math:`\mathbf A^{-1}` (``n x n``) and the classes' groups, for
    :math:`\mathbf A = \mathbf K + \max(\text{noise})\mathbf I`."""
    n = K.shape[-1]
    base = noise.max()
    L = torch.linalg.cholesky(K + base * torch.eye(n, dtype=K.dtype, device=K.device))
    A_inv = torch.cholesky_inverse(L)
    return 2 * torch.log(torch.diagonal(L)).sum(), A_inv, _class_groups(A_inv, noise, base)


def _posterior_weights(A_inv: Tensor, Q: Tensor, groups: list[_ClassGroup]) -> tuple[Tensor, Tensor]:
    r""":math:`\boldsymbol\alpha_c = \mathbf K_c^{-1}\mathbf r_c = \mathbf A^{-1}\mathbf r_c + \mathbf A^{-1}
    \mathbf U_c(-\mathbf S_c)^{-1}\mathbf t_c` (``C x n``) from ``Q`` (``C x n``, :math:`\mathbf A^{-1}\mathbf r_c`
    a row), and what the classes add to the evidence's quadratic forms and log-determinants beyond
    :math:`\mathbf A`'s, :math:`\sum_c \mathbf t_c^\top(-\mathbf S_c)^{-1}\mathbf t_c + \log|-\mathbf D_c| +
    \log|-\mathbf S_c|`, with :math:`\mathbf t_c = \mathbf U_c^\top \mathbf A^{-1}\mathbf r_c` (module docstring)."""
    alpha, extra = Q.clone(), Q.new_zeros(())
    for group in groups:
        t = Q[group.classes[:, None], group.rows] * group.valid  # g x m
        u = torch.linalg.solve_triangular(group.R, t.unsqueeze(-1), upper=False)
        v = torch.linalg.solve_triangular(group.R.mT, u, upper=True)  # (-S)^-1 t, g x m x 1
        diagonal = group.R.diagonal(dim1=-2, dim2=-1)
        extra = extra + (u * u).sum() + torch.log(-group.d).sum() + 2 * torch.log(diagonal).sum()
        # A^-1 U_c v: the own rows of the symmetric A^-1 weighted by v
        alpha[group.classes] += (v.mT @ group.own(A_inv)).squeeze(-2)
    return alpha, extra


def _inverse_diagonals(A_inv: Tensor, groups: list[_ClassGroup], C: int, total: Tensor | None = None) -> Tensor:
    r"""``C x n``: each class's diagonal of :math:`\mathbf K_c^{-1} = \mathbf A^{-1} + \mathbf V_c^\top\mathbf V_c`,
    :math:`\mathbf V_c = \mathbf R_c^{-1}\mathbf U_c^\top\mathbf A^{-1}` (``n_c x n``; module docstring). ``total``
    (``n x n``): :math:`\sum_c \mathbf V_c^\top\mathbf V_c` is added to it in place."""
    n = A_inv.shape[-1]
    diagonal = torch.diagonal(A_inv).expand(C, n).clone()
    for group in groups:
        V = torch.linalg.solve_triangular(group.R, group.own(A_inv), upper=False)  # g x m x n
        diagonal[group.classes] += (V * V).sum(-2)
        if total is not None:
            flat = V.reshape(-1, n)
            total.addmm_(flat.mT, flat)
    return diagonal


class _SharedEvidence(torch.autograd.Function):
    r"""The value of :func:`shared_dirichlet_log_evidence` and its closed-form gradient (R&W eq. 5.9, a
    class at a time, summed):

    .. math:: \frac{\partial}{\partial\mathbf K} = \tfrac12\sum_c (\boldsymbol\alpha_c\boldsymbol\alpha_c^\top
       - \mathbf K_c^{-1}), \quad \frac{\partial}{\partial n_{c,i}} = \tfrac12(\alpha_{c,i}^2 - [\mathbf K_c^{-1}]_{ii}),
       \quad \frac{\partial}{\partial m_c} = \mathbf 1^\top\boldsymbol\alpha_c, \quad
       \frac{\partial}{\partial \tilde{\mathbf y}_c} = -\boldsymbol\alpha_c,

    with :math:`\sum_c \mathbf K_c^{-1} = C\mathbf A^{-1} + \sum_c \mathbf V_c^\top\mathbf V_c`, :math:`\mathbf V_c =
    \mathbf R_c^{-1}\mathbf U_c^\top\mathbf A^{-1}` (``n_c x n``) and :math:`-\mathbf S_c = \mathbf R_c\mathbf R_c^\top`:
    one ``n x n`` product more than the value. (Autograd through the same operations gathered each
    class's own rows out of an ``n x n`` matrix, whose backward filled an ``n x n`` gradient a class:
    ``benchmarks/dirichlet_evidence.py`` measures both.)"""

    @staticmethod
    def forward(ctx: Any, K: Tensor, means: Tensor, noise: Tensor, targets: Tensor) -> Tensor:
        n, C = K.shape[-1], noise.shape[0]
        logdet_A, A_inv, groups = _factor(K, noise)
        r = targets - means[:, None]
        Q = r @ A_inv  # C x n: A^-1 r_c a row
        alpha, extra = _posterior_weights(A_inv, Q, groups)
        value = -0.5 * ((r * Q).sum() + C * logdet_A + C * n * math.log(2 * math.pi) + extra)
        if any(ctx.needs_input_grad):
            # sum_c K_c^-1 = C A^-1 + sum_c V_c^T V_c, and each class's diagonal of K_c^-1
            inverses = A_inv.mul(C)
            diagonal = _inverse_diagonals(A_inv, groups, C, total=inverses)
            ctx.save_for_backward(alpha, inverses, diagonal)
        return value

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        alpha, inverses, diagonal = ctx.saved_tensors
        half = 0.5 * grad
        grad_K = (alpha.mT @ alpha).sub_(inverses).mul_(half) if ctx.needs_input_grad[0] else None
        grad_means = grad * alpha.sum(-1) if ctx.needs_input_grad[1] else None
        grad_noise = (alpha * alpha - diagonal).mul_(half) if ctx.needs_input_grad[2] else None
        grad_targets = -grad * alpha if ctx.needs_input_grad[3] else None
        return grad_K, grad_means, grad_noise, grad_targets


def shared_dirichlet_log_evidence(K: Tensor, means: Tensor, noise: Tensor, targets: Tensor) -> Tensor:
    r"""The sum over the classes of :math:`\log \mathcal N(\tilde{\mathbf y}_c \mid m_c\mathbf 1, \mathbf K +
    \operatorname{diag}(\mathbf n_c))` (module docstring), where every class's noise ``noise[c]`` takes one
    value off its own documents (the largest of all, :math:`\sigma^2_0 + \eta`) and any smaller values on
    them. Its gradient is the closed form of :class:`_SharedEvidence` (first order: no gradient of the
    gradient).

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
    return _SharedEvidence.apply(K, means, noise, targets)


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
        _, self.A_inv, self.groups = _factor(K, noise)
        self.means, self.noise, self.targets = means, noise, targets
        Q = (targets - means[:, None]) @ self.A_inv
        alpha, _ = _posterior_weights(self.A_inv, Q, self.groups)
        self.alpha = alpha.mT  # n x C: K_c^-1 r_c

    def solved(self, k_star: Tensor) -> tuple[Tensor, list[Tensor]]:
        r"""What :meth:`predict` and :meth:`cross_covariance` read of documents with cross-covariances
        ``k_star`` (``n x b``): :math:`\mathbf A^{-1}\mathbf k_*` (``n x b``) and each group's :math:`\mathbf V =
        \mathbf R_c^{-1}\mathbf U_c^\top\mathbf A^{-1}\mathbf k_*` (``g x m x b``), so that :math:`\mathbf k_a^\top
        \mathbf K_c^{-1}\mathbf k_b = \mathbf k_a^\top\mathbf A^{-1}\mathbf k_b + \mathbf V_a^\top\mathbf V_b`."""
        B = self.A_inv @ k_star  # A^-1 k*, n x b
        return B, [torch.linalg.solve_triangular(group.R, group.own(B), upper=False) for group in self.groups]

    def predict(
        self, k_star: Tensor, k_diag: Tensor, solved: tuple[Tensor, list[Tensor]] | None = None
    ) -> tuple[Tensor, Tensor]:
        """Means and variances ``b x C`` at documents with cross-covariances ``k_star`` (``n x b``) and prior
        variances ``k_diag`` (``b``); ``solved``: their :meth:`solved`, where the caller has it."""
        mean = self.means + k_star.mT @ self.alpha
        B, Vs = self.solved(k_star) if solved is None else solved
        base = k_diag - (k_star * B).sum(0)  # k** - k*^T A^-1 k*
        var = base[:, None].repeat(1, self.noise.shape[0])
        for group, V in zip(self.groups, Vs):
            var[:, group.classes] -= (V * V).sum(-2).mT
        return mean, var.clamp_min(0.0)

    def cross_covariance(
        self, k_a: Tensor, k_ab: Tensor, solved_a: tuple[Tensor, list[Tensor]], solved_b: tuple[Tensor, list[Tensor]]
    ) -> Tensor:
        r"""``C x a x b``: each class's posterior covariance between the latents at two blocks of test
        documents, :math:`k(\mathbf a, \mathbf b) - \mathbf k_a^\top \mathbf K_c^{-1} \mathbf k_b` (R&W eq. 2.24),
        from the first block's cross-covariances with the training documents ``k_a`` (``n x a``), the two
        blocks' ``k_ab`` (``a x b``) and both blocks' :meth:`solved` (the second's made once for many first
        blocks); each :math:`\mathbf K_c^{-1}` by Woodbury as in :meth:`predict`."""
        (_, V_a), (B_b, V_b) = solved_a, solved_b
        base = k_ab - k_a.mT @ B_b  # k(a, b) - k_a^T A^-1 k_b
        cov = base.expand(self.noise.shape[0], *base.shape).clone()
        for group, left, right in zip(self.groups, V_a, V_b):
            cov[group.classes] -= left.mT @ right
        return cov

    def leave_one_out(self) -> tuple[Tensor, Tensor]:
        r"""Each training document's latent mean and variance given the others, ``C x n`` each:
        :math:`\tilde y_i - \alpha_i / [\mathbf K_c^{-1}]_{ii}` and :math:`1 / [\mathbf K_c^{-1}]_{ii} -
        n_{c,i}` (R&W eq. 5.12), the diagonal of :math:`\mathbf K_c^{-1} = \mathbf A^{-1} + \mathbf M_c
        (-\mathbf S_c)^{-1} \mathbf M_c^\top` (:math:`\mathbf M_c = \mathbf A^{-1}\mathbf U_c`) from the one
        factorization."""
        diag = _inverse_diagonals(self.A_inv, self.groups, self.noise.shape[0])
        alpha = self.alpha.mT  # C x n
        return self.targets - alpha / diag, (1.0 / diag - self.noise).clamp_min(0.0)
