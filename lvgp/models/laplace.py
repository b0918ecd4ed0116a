r"""The Laplace approximation of the multi-class softmax GP classifier (Rasmussen & Williams 2006,
*Gaussian Processes for Machine Learning*, section 3.5: algorithms 3.3 and 3.4, eqs. 3.38-3.47).

:math:`C` latent functions :math:`f_c \sim \mathcal{GP}(m_c, K_c)`, independent a priori, and the
softmax likelihood :math:`p(y_i = c \mid \mathbf f_i) = \pi_{ic} = \exp f_{ic} / \sum_{c'} \exp f_{ic'}`.
The posterior over the :math:`Cn` training latents is approximated by a Gaussian at its mode
:math:`\hat{\mathbf f}` with the negative Hessian :math:`W = D - \Pi\Pi^\top` of the log likelihood
(:math:`D = \mathrm{diag}(\boldsymbol\pi)`, :math:`\Pi` the :math:`Cn \times n` stack of
:math:`\mathrm{diag}(\boldsymbol\pi_c)`):

* :func:`find_mode` -- Newton's method (alg. 3.3), each step halved until the objective
  :math:`\Psi(\mathbf f) = \log p(\mathbf y \mid \mathbf f) - \tfrac12 (\mathbf f - \mathbf m)^\top K^{-1}
  (\mathbf f - \mathbf m)` rises; warm-started from a previous mode's :math:`\mathbf a = K^{-1}(\hat{\mathbf f} - \mathbf m)`.
  Its step :math:`\mathbf a_{\rm new} = (I + WK)^{-1}\mathbf b` is solved either as alg. 3.3 does, through
  :math:`C` Choleskys of :math:`I + D_c^{1/2} K_c D_c^{1/2}` and one of :math:`\sum_c E_c` (the block
  structure; the :math:`Cn \times Cn` matrices are never formed), or -- ``solver="cg"``, the default from
  :data:`CG_FROM_DOCUMENTS` documents -- for its increment, by conjugate gradients on the symmetric
  positive definite :math:`Cn \times Cn` system :math:`(I + SKS^\top)\mathbf z = SK\mathbf g`,
  :math:`\mathbf a_{\rm new} = \mathbf a + \mathbf g - S^\top\mathbf z` with the objective's gradient
  :math:`\mathbf g = \mathbf y - \boldsymbol\pi - \mathbf a = \mathbf b - (I + WK)\mathbf a`, where :math:`W = S^\top S` with :math:`S_i = (I - \mathbf q_i\mathbf q_i^\top)
  \operatorname{diag}\mathbf q_i`, :math:`\mathbf q_i = \boldsymbol\pi_i^{1/2}` (a unit vector, so
  :math:`I - \mathbf q_i\mathbf q_i^\top` is a projector) and the push-through identity
  :math:`(I + S^\top SK)^{-1} = I - S^\top(I + SKS^\top)^{-1}SK`. An iteration costs one product of the
  classes' covariances with a ``C x n`` matrix -- for classes sharing a kernel (:class:`ClassCovariances`)
  one ``n x n`` by ``n x C`` product -- in place of :math:`C` factorizations and inverses of ``n x n``
  (``benchmarks/laplace_cost.py`` measures both). The evidence's gradient and the predictions still read the blocks of alg. 3.3
  (:func:`mode_parts`), once at the mode.
* :func:`log_evidence` -- the approximate log marginal likelihood (eq. 3.44)

  .. math:: \log q(\mathbf y \mid X, \theta) = -\tfrac12 \mathbf a^\top (\hat{\mathbf f} - \mathbf m)
     + \mathbf y^\top \hat{\mathbf f} - \sum_i \log \sum_c \exp \hat f_{ic}
     - \tfrac12 \log |I_{Cn} + W^{1/2} K W^{1/2}|,

  with :math:`\tfrac12\log|I + W^{1/2}KW^{1/2}| = \sum_c \sum_i \log (L_c)_{ii} + \sum_i \log M_{ii}`,
  as a differentiable function of the kernel and the means. Its exact gradient needs
  :math:`\partial \hat{\mathbf f} / \partial\theta` (the mode moves with the hyper-parameters: implicit
  differentiation): :func:`log_evidence` gives it in closed form (R&W's alg. 5.1 taken to the softmax),
  as a surrogate whose backward pass goes through the kernel alone (checked by finite differences
  in ``tests/test_laplace.py``).
* :func:`predictive` -- the predictive mean :math:`m_c + \mathbf k_{*c}^\top(\mathbf y_c - \hat{\boldsymbol\pi}_c)`
  and the :math:`C \times C` covariance of the test latents (alg. 3.4):
  :math:`\Sigma_{*cc'} = \delta_{cc'}(k_c(x_*, x_*) - \mathbf k_{*c}^\top E_c \mathbf k_{*c}) +
  (E_c\mathbf k_{*c})^\top (\textstyle\sum_{c''} E_{c''})^{-1} (E_{c'}\mathbf k_{*c'})`, from
  :math:`(K + W^{-1})^{-1} = E - ER(\sum_c E_c)^{-1}R^\top E`; :func:`expected_softmax_correlated` averages the
  softmax over that Gaussian (Monte Carlo with fixed draws, one stream per class label).

Shapes: ``K`` is ``C x n x n`` (a shared kernel expanded, without copying), ``m`` ``C``, the labels
``Y`` ``C x n`` one-hot, latents ``C x n``. Float64 throughout.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gpytorch
import torch
from gpytorch.constraints import Positive
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.means import ConstantMean
from torch import Tensor

from .._random import torch_generator
from ..base.snapshot import KeptResult
from ..bow.padded import pad_to_common_width

__all__ = [
    "CG_FROM_DOCUMENTS",
    "ClassCovariances",
    "SoftmaxLaplaceGP",
    "class_draws",
    "LaplaceMode",
    "find_mode",
    "log_evidence",
    "mode_parts",
    "predictive",
    "expected_softmax_correlated",
]


#: from how many documents :func:`find_mode` (``solver="auto"``) solves its Newton steps by conjugate
#: gradients rather than alg. 3.3's Choleskys: where the two take about as long
#: (``benchmarks/README.md``, ``laplace_cost.py``)
CG_FROM_DOCUMENTS = 150
#: the conjugate gradients' relative residual and their most iterations a Newton step (the step is a
#: descent direction at any iteration, and the step halving and the convergence test read the exact
#: objective, so a solve stopped early costs steps, not accuracy)
CG_TOL = 1e-10
CG_MAX_ITER = 1000


@dataclass
class ClassCovariances:
    r"""The classes' prior covariances :math:`K_c = s_c K_0 + v\,\mathbf 1\mathbf 1^\top` (``C x n1 x n2``)
    kept in parts: the base kernel's ``base`` (``n1 x n2``, shared by the classes, or ``C x n1 x n2``), the
    output scales ``scales`` (a scalar tensor, one for all classes, or ``C``) and the integrated-out
    intercepts' variance ``offset`` (a scalar tensor), for ``n_classes`` classes. A product with a
    ``C x n2`` matrix is one ``n1 x n2`` by ``n2 x C`` product (:meth:`matmul`) where the dense
    ``C x n1 x n2`` tensor (:meth:`dense`) would be ``C`` products."""

    base: Tensor
    scales: Tensor
    offset: Tensor
    n_classes: int

    @classmethod
    def of(cls, K: Tensor) -> ClassCovariances:
        """A dense ``C x n1 x n2`` tensor as parts (a shared kernel expanded over the classes, a stride-0
        first dimension, read once)."""
        one, zero = torch.ones((), dtype=K.dtype, device=K.device), torch.zeros((), dtype=K.dtype, device=K.device)
        return cls(K[0] if K.stride(0) == 0 else K, one, zero, K.shape[0])

    def dense(self) -> Tensor:
        """``C x n1 x n2`` (a shared base and scale expanded over the classes, not copied)."""
        if self.scales.dim() == 0:
            K = self.scales * self.base + self.offset
        else:
            K = self.scales.reshape(-1, 1, 1) * self.base + self.offset
        return K.expand(self.n_classes, *K.shape[-2:]) if K.dim() == 2 else K

    def matmul(self, V: Tensor) -> Tensor:
        r"""``C x n1``: :math:`K_c \mathbf v_c` for the rows ``v_c`` of ``V`` (``C x n2``)."""
        if self.base.dim() == 2:
            KV = (self.base @ V.mT).mT
        else:
            KV = (self.base @ V.unsqueeze(-1)).squeeze(-1)
        scale = self.scales.unsqueeze(-1) if self.scales.dim() else self.scales
        return scale * KV + self.offset * V.sum(-1, keepdim=True)

    def detach(self) -> ClassCovariances:
        return ClassCovariances(self.base.detach(), self.scales.detach(), self.offset.detach(), self.n_classes)


@dataclass
class ModeParts:
    r"""What alg. 3.3 computes at a latent ``f``: the class probabilities ``pi`` (``C x n``), the
    blocks ``E`` (``C x n x n``, :math:`E_c = D_c^{1/2}(I + D_c^{1/2}K_cD_c^{1/2})^{-1}D_c^{1/2}`), the
    half log-determinants ``z`` (``C``) of :math:`I + D_c^{1/2}K_cD_c^{1/2}`, and ``M`` (``n x n``), the
    Cholesky factor of :math:`\sum_c E_c`."""

    pi: Tensor
    E: Tensor
    z: Tensor
    M: Tensor


@dataclass
class LaplaceMode:
    r"""A converged mode: ``f`` (``C x n``), ``a`` = :math:`K^{-1}(\hat{\mathbf f} - \mathbf m)` (``C x n``;
    at the mode :math:`\mathbf y - \hat{\boldsymbol\pi}`), the objective ``psi`` there, the Newton
    iterations it took, the largest entry of the objective's gradient at the end and the conjugate
    gradients' iterations of all its steps (0 for alg. 3.3's Choleskys)."""

    f: Tensor
    a: Tensor
    psi: float
    n_iter: int
    gradient: float
    cg_iterations: int = 0


def mode_parts(K: Tensor, f: Tensor) -> ModeParts:
    """:class:`ModeParts` at latents ``f`` (alg. 3.3, lines 3-9)."""
    pi = torch.softmax(f, dim=0)
    sd = pi.sqrt()
    n = f.shape[-1]
    eye = torch.eye(n, dtype=K.dtype, device=K.device)
    B = eye + sd.unsqueeze(-1) * K * sd.unsqueeze(-2)
    L = torch.linalg.cholesky(B)
    E = sd.unsqueeze(-1) * torch.cholesky_inverse(L) * sd.unsqueeze(-2)  # D^{1/2} B^{-1} D^{1/2}
    z = torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
    M = torch.linalg.cholesky(E.sum(0))
    return ModeParts(pi, E, z, M)


def _step(K: Tensor, m: Tensor, Y: Tensor, f: Tensor, parts: ModeParts) -> tuple[Tensor, Tensor]:
    """Newton's step from ``f`` (alg. 3.3, lines 10-13, with the prior mean ``m``): the new ``a`` and ``f``."""
    pi, E = parts.pi, parts.E
    g = f - m.unsqueeze(-1)
    Wg = pi * g - pi * (pi * g).sum(0, keepdim=True)  # (D - Pi Pi^T) g
    b = Wg + Y - pi
    c = (E @ (K @ b.unsqueeze(-1))).squeeze(-1)
    s = torch.cholesky_solve(c.sum(0).unsqueeze(-1), parts.M).squeeze(-1)  # (sum_c E_c)^{-1} R^T c
    a = b - c + (E @ s.unsqueeze(-1)).squeeze(-1)
    return a, (K @ a.unsqueeze(-1)).squeeze(-1) + m.unsqueeze(-1)


def _conjugate_gradients(
    operator: Callable[[Tensor], Tensor], rhs: Tensor, tol: float, max_iter: int
) -> tuple[Tensor, int]:
    """The solution of ``operator(x) = rhs`` (symmetric positive definite; ``rhs`` of any shape, read as one
    vector) by conjugate gradients from zero, to a relative residual ``tol`` or ``max_iter`` iterations;
    and the iterations taken."""
    x = torch.zeros_like(rhs)
    residual = rhs.clone()
    direction = residual.clone()
    rr = (residual * residual).sum()
    stop = float(rr) * tol**2
    if stop == 0.0:  # a zero right-hand side: the solution is zero
        return x, 0
    for it in range(1, max_iter + 1):
        product = operator(direction)
        step = rr / (direction * product).sum()
        x.add_(step * direction)
        residual.sub_(step * product)
        rr_new = (residual * residual).sum()
        if float(rr_new) <= stop:
            return x, it
        direction = residual + (rr_new / rr) * direction
        rr = rr_new
    return x, max_iter


def _step_cg(
    product: Callable[[Tensor], Tensor], Y: Tensor, a: Tensor, f: Tensor, tol: float, max_iter: int
) -> tuple[Tensor, int]:
    r"""Newton's step from ``a`` (``f`` = :math:`K\mathbf a + \mathbf m`) by conjugate gradients (module
    docstring), solved for the increment: :math:`\mathbf a_{\rm new} = \mathbf a + (I + WK)^{-1}\mathbf g`
    with the objective's gradient :math:`\mathbf g = \mathbf y - \boldsymbol\pi - \mathbf a` (alg. 3.3's
    :math:`(I + WK)^{-1}\mathbf b`, as :math:`\mathbf b - (I + WK)\mathbf a = \mathbf g`), so that the
    relative residual ``tol`` is relative to a gradient that vanishes at the mode; ``product``: the
    classes' covariances' (``C x n`` to ``C x n``). The new ``a`` and the iterations."""
    pi = torch.softmax(f, dim=0)
    q = pi.sqrt()

    def S(v: Tensor) -> Tensor:  # S_i v_i = q_i * v_i - q_i (pi_i . v_i), document by document
        return q * v - q * (pi * v).sum(0, keepdim=True)

    def S_t(u: Tensor) -> Tensor:  # S_i^T u_i = q_i * u_i - pi_i (q_i . u_i)
        return q * u - pi * (q * u).sum(0, keepdim=True)

    g = Y - pi - a
    z, iterations = _conjugate_gradients(lambda v: v + S(product(S_t(v))), S(product(g)), tol, max_iter)
    return a + g - S_t(z), iterations


def _psi(a: Tensor, f: Tensor, m: Tensor, Y: Tensor) -> Tensor:
    r""":math:`\Psi(\mathbf f) = \mathbf y^\top\mathbf f - \sum_i\log\sum_c e^{f_{ic}} - \tfrac12\mathbf a^\top(\mathbf f - \mathbf m)`."""
    return (Y * f).sum() - torch.logsumexp(f, dim=0).sum() - 0.5 * (a * (f - m.unsqueeze(-1))).sum()


@torch.no_grad()
def find_mode(
    K: Tensor | ClassCovariances,
    m: Tensor,
    Y: Tensor,
    a0: Tensor | None = None,
    *,
    tol: float = 1e-10,
    max_iter: int = 100,
    solver: str = "auto",
    cg_tol: float = CG_TOL,
    cg_max_iter: int = CG_MAX_ITER,
) -> LaplaceMode:
    r"""The posterior mode by Newton's method (alg. 3.3), from ``a0`` (``C x n``; ``None``: the prior
    mean, :math:`\mathbf f = \mathbf m`). Converged when every entry of the objective's gradient
    :math:`\mathbf y - \boldsymbol\pi - \mathbf a` is below ``tol`` in magnitude; a step that lowers
    :math:`\Psi` is halved (at most 30 times). ``K``: the ``C x n x n`` covariances, dense or as
    :class:`ClassCovariances`. ``solver``: ``"cholesky"`` (alg. 3.3's), ``"cg"`` (conjugate gradients to
    a relative residual ``cg_tol``, at most ``cg_max_iter`` iterations a step; module docstring) or
    ``"auto"`` (CG from :data:`CG_FROM_DOCUMENTS` documents). Raises ``FloatingPointError`` if the
    objective is not finite (a kernel of NaN entries)."""
    if solver not in ("auto", "cholesky", "cg"):
        raise ValueError(f"solver: 'auto', 'cholesky' or 'cg', got {solver!r}")
    K, m, Y = K.detach(), m.detach(), Y.detach()
    n = Y.shape[-1]
    use_cg = solver == "cg" or (solver == "auto" and n >= CG_FROM_DOCUMENTS)
    parts = K if isinstance(K, ClassCovariances) else ClassCovariances.of(K)
    K_dense = None if use_cg else (K if isinstance(K, Tensor) else K.dense())
    mean = m.unsqueeze(-1)
    a = torch.zeros_like(Y) if a0 is None else a0.detach().clone()
    f = parts.matmul(a) + mean
    psi = _psi(a, f, m, Y)
    if not torch.isfinite(psi):
        raise FloatingPointError("the Laplace objective is not finite at the start (the kernel holds NaN or inf)")
    gradient = float((Y - torch.softmax(f, dim=0) - a).abs().max())
    it = cg_iterations = 0
    while gradient > tol and it < max_iter:
        it += 1
        if K_dense is None:
            a_full, iterations = _step_cg(parts.matmul, Y, a, f, cg_tol, cg_max_iter)
            cg_iterations += iterations
        else:
            a_full, _ = _step(K_dense, m, Y, f, mode_parts(K_dense, f))
        shrink = 1.0
        while True:  # the full step, halved until the objective does not fall
            a_new = a_full if shrink == 1.0 else a + shrink * (a_full - a)
            f_new = parts.matmul(a_new) + mean
            psi_new = _psi(a_new, f_new, m, Y)
            if psi_new >= psi - 1e-12 * max(1.0, abs(float(psi))) or shrink < 1e-9:
                break
            shrink /= 2
        if not psi_new >= psi - 1e-12 * max(1.0, abs(float(psi))):  # no step helps: the mode, to rounding
            break
        a, f, psi = a_new, f_new, psi_new
        gradient = float((Y - torch.softmax(f, dim=0) - a).abs().max())
    return LaplaceMode(f, a, float(psi), it, gradient, cg_iterations)


def log_evidence(K: Tensor, m: Tensor, Y: Tensor, mode: LaplaceMode, parts: ModeParts | None = None) -> Tensor:
    r"""The approximate log marginal likelihood (eq. 3.44) at the converged ``mode``, differentiable in
    ``K`` and ``m`` with its exact gradient, the mode's implicit derivative included (R&W's alg. 5.1,
    taken to the softmax):

    .. math:: \frac{\partial \log q}{\partial\theta} = \tfrac12 \mathbf a^\top \dot K \mathbf a
       + \mathbf a^\top \dot{\mathbf m} - \tfrac12 \operatorname{tr}(R\,\dot K)
       - \mathbf u^\top(\dot K\mathbf a + \dot{\mathbf m}),

    with :math:`R = (K + W^{-1})^{-1} = E - ER(\sum_c E_c)^{-1}R^\top E` (only its diagonal blocks meet the
    block-diagonal :math:`\dot K`), :math:`\mathbf u = (I + WK)^{-1}\mathbf s` and
    :math:`\mathbf s_i = \tfrac12 W_i(\operatorname{diag}\Sigma_i - 2\Sigma_i\boldsymbol\pi_i)` the
    derivative of the half log-determinant in the mode (:math:`W_i = \operatorname{diag}\boldsymbol\pi_i -
    \boldsymbol\pi_i\boldsymbol\pi_i^\top` and :math:`\Sigma_i` the posterior covariance of document
    :math:`i`'s :math:`C` latents), :math:`(I + KW)^{-1}(\dot K\mathbf a + \dot{\mathbf m})` being the
    mode's derivative. Returned as the value plus a surrogate whose autograd gradient is this one: the
    backward pass goes through the kernel alone, not through the Choleskys (``tests/test_laplace.py``
    checks it against finite differences). ``parts``: :func:`mode_parts` at ``mode.f``, where the caller
    has them already."""
    with torch.no_grad():
        Kd, md = K.detach(), m.detach()
        f, a = mode.f.detach(), mode.a.detach()
        parts = mode_parts(Kd, f) if parts is None else parts
        E, M, pi = parts.E, parts.M, parts.pi
        C, n = f.shape
        value = _psi(a, f, md, Y) - parts.z.sum() - torch.log(torch.diagonal(M)).sum()
        if not (K.requires_grad or m.requires_grad):  # the value alone (e.g. after a fit)
            return value
        # R's diagonal blocks: E_c - E_c (sum E)^{-1} E_c
        ME = torch.linalg.solve_triangular(M, E.permute(1, 0, 2).reshape(n, C * n), upper=False).reshape(n, C, n)
        ME = ME.permute(1, 0, 2)  # C x n x n: M^{-1} E_c
        R_diag = E - ME.mT @ ME
        # the posterior covariance of each document's latents: Sigma_i[c, c'] = delta K_c[i,i] - (K_c R_cc' K_c')[i,i]
        EK = E @ Kd  # E_c K_c
        own = torch.diagonal(Kd, dim1=-2, dim2=-1) - (Kd * EK.mT).sum(-1)  # C x n: K_c[i,i] - (K_c E_c K_c)[i,i]
        V = torch.linalg.solve_triangular(M, EK.permute(1, 0, 2).reshape(n, C * n), upper=False).reshape(n, C, n)
        Sigma = torch.einsum("jci,jdi->icd", V, V) + torch.diag_embed(own.mT)  # n x C x C
        p = pi.mT  # n x C
        W = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # n x C x C
        diag_sigma = torch.diagonal(Sigma, dim1=-2, dim2=-1)
        s_mode = 0.5 * (W @ (diag_sigma - 2 * (Sigma @ p.unsqueeze(-1)).squeeze(-1)).unsqueeze(-1)).squeeze(-1)
        s_mode = s_mode.mT  # C x n
        # u = (I + W K)^{-1} s = s - R K s, R applied through the blocks: E v - E R (sum E)^{-1} R^T E v
        Ks = (Kd @ s_mode.unsqueeze(-1)).squeeze(-1)
        Ev = (E @ Ks.unsqueeze(-1)).squeeze(-1)
        w = torch.cholesky_solve(Ev.sum(0).unsqueeze(-1), M).squeeze(-1)
        u = s_mode - (Ev - (E @ w.unsqueeze(-1)).squeeze(-1))
    Ka = (K @ a.unsqueeze(-1)).squeeze(-1)
    mm = m.unsqueeze(-1)
    surrogate = 0.5 * (a * Ka).sum() + (a * mm).sum() - 0.5 * (R_diag * K).sum() - (u * (Ka + mm)).sum()
    return value + (surrogate - surrogate.detach())


def predictive(
    K_cross: Tensor, k_test: Tensor, m: Tensor, Y: Tensor, mode: LaplaceMode, parts: ModeParts
) -> tuple[Tensor, Tensor]:
    """The test latents' Gaussian (alg. 3.4): mean ``n* x C`` and covariance ``n* x C x C``, from the
    classes' cross-covariances ``K_cross`` (``C x n x n*``), the test points' prior variances
    ``k_test`` (``C x n*``) and the mode's ``parts`` (:func:`mode_parts` at ``mode.f``)."""
    mean = m.unsqueeze(-1) + (K_cross.mT @ (Y - parts.pi).unsqueeze(-1)).squeeze(-1)  # C x n*
    EK = parts.E @ K_cross  # C x n x n*
    own = k_test - (K_cross * EK).sum(-2)  # C x n*
    C, n, n_test = EK.shape
    V = torch.linalg.solve_triangular(parts.M, EK.permute(1, 0, 2).reshape(n, C * n_test), upper=False)
    V = V.reshape(n, C, n_test)
    cov = torch.einsum("icp,idp->pcd", V, V) + torch.diag_embed(own.mT)
    return mean.mT, cov


def class_draws(n_samples: int, class_seeds: list[int], dtype: torch.dtype) -> Tensor:
    r"""``n_samples x C`` standard normal nodes, column ``c`` from the stream ``class_seeds[c]`` (one
    per class label): the fixed Monte Carlo nodes of the classifiers' expected softmax, which a class
    keeps wherever its label sorts. A Latin hypercube: every column holds the ``S = n_samples``
    midpoint quantiles :math:`\Phi^{-1}((k + 1/2) / S)`, :math:`k = 0, \dots, S - 1`, in the order of
    a random permutation from its class's stream, so that each class's nodes cover the normal evenly
    (their mean exactly 0: no class's probability is raised or lowered alike for every document, as
    independent draws' sample mean does) and the permutations pair them across classes at random: at the
    same cost, nearer many draws' value than independent draws (``benchmarks/README.md``, "The
    predictive's Monte Carlo error"). Made on the CPU (the same on every device)."""
    quantiles = torch.special.ndtri((torch.arange(n_samples, dtype=torch.float64) + 0.5) / n_samples).to(dtype)
    columns = [quantiles[torch.randperm(n_samples, generator=torch_generator(s))] for s in class_seeds]
    return torch.stack(columns, dim=-1)


def expected_softmax_correlated(mean: Tensor, cov: Tensor, n_samples: int, class_seeds: list[int]) -> Tensor:
    r"""``n x C`` probabilities :math:`\mathbb E[\mathrm{softmax}(\mathbf f)]` under
    :math:`\mathcal N(\text{mean}_i, \text{cov}_i)` per row, averaged over ``n_samples`` fixed nodes:
    the standard normal nodes of :func:`class_draws` (class ``c``'s order from its own stream, ``class_seeds``,
    one per class label), mapped through each covariance's symmetric square root, so that the result does
    not depend on the classes' order."""
    C = mean.shape[-1]
    if len(class_seeds) != C:
        raise ValueError(f"class_seeds: {len(class_seeds)} seeds for {C} classes")
    eps = class_draws(n_samples, class_seeds, mean.dtype).to(mean.device)  # S x C
    values, vectors = torch.linalg.eigh(cov)
    root = vectors @ torch.diag_embed(values.clamp_min(0).sqrt()) @ vectors.mT  # n x C x C, symmetric
    draws = mean.unsqueeze(1) + eps.unsqueeze(0) @ root  # n x S x C
    return torch.softmax(draws, dim=-1).mean(1)


class SoftmaxLaplaceGP(gpytorch.Module):
    r"""``C`` latent GPs sharing ``kernel`` -- per-class output scales (one for every class with
    ``shared_outputscale``) and a class intercept inside the covariance -- under the softmax likelihood,
    their posterior by the Laplace approximation (module docstring). The training documents ``train_x``
    and one-hot labels are buffers; so is ``mode_a``, the last mode's :math:`\mathbf a = K^{-1}(\hat{\mathbf f} - \mathbf m)`,
    from which every mode search starts (the hyper-parameters' optimizer moves little between
    evaluations) and from which a reloaded model rebuilds its mode to the bit.

    The intercepts: class ``c``'s latent is :math:`f_c(x) = b_c + g_c(x)` with
    :math:`b_c \sim \mathcal N(0, v)` integrated out, so the covariance is :math:`s_c\,k(x, x') + v` and
    the means are zero; ``intercept_variance`` :math:`v` is fitted by the evidence with the scales. (Free
    constant means fitted by the evidence ran away with the output scale on near-separable texts:
    means in the hundreds, scales in the thousands, and predictions that followed the largest mean;
    ``benchmarks/laplace_linear_ablation.py``, its last row.) A file saved before has no intercept
    variance: it loads with its fitted constant means and no intercept term, and predicts as it did."""

    train_x: Tensor
    labels: Tensor
    mode_a: Tensor
    intercept_in_kernel: Tensor

    def __init__(
        self, train_x: Tensor, codes: Tensor, n_classes: int, kernel: Kernel, shared_outputscale: bool = False
    ) -> None:
        super().__init__()
        batch = torch.Size([n_classes])
        self.classes_batch = batch
        self.register_buffer("train_x", train_x)
        labels = torch.nn.functional.one_hot(codes.long(), n_classes).mT.to(torch.float64)
        self.register_buffer("labels", labels)
        self.register_buffer("mode_a", torch.zeros(n_classes, train_x.shape[0], dtype=torch.float64))
        # zero means (not fitted): the intercepts are the covariance's (class docstring)
        self.mean_module = ConstantMean(batch_shape=batch)
        self.mean_module.raw_constant.requires_grad_(False)
        self.register_buffer("intercept_in_kernel", torch.tensor(True))
        self.register_parameter("raw_intercept_variance", torch.nn.Parameter(torch.zeros((), dtype=torch.float64)))
        self.register_constraint("raw_intercept_variance", Positive())
        self.intercept_variance = torch.tensor(1.0, dtype=torch.float64)
        self.covar_module = ScaleKernel(kernel, batch_shape=torch.Size() if shared_outputscale else batch)
        #: the last mode search: Newton iterations and the objective's largest gradient entry at its end
        self.last_search: tuple[int, float] = (0, 0.0)
        #: the mode's parts the last evidence of every document computed (:meth:`posterior`)
        self._kept_posterior = KeptResult()

    @property
    def intercept_variance(self) -> Tensor:
        """:math:`v`, the prior variance of each class's intercept."""
        return self.raw_intercept_variance_constraint.transform(self.raw_intercept_variance)

    @intercept_variance.setter
    def intercept_variance(self, value: Tensor) -> None:
        with torch.no_grad():
            raw = self.raw_intercept_variance_constraint.inverse_transform(torch.as_tensor(value).to(torch.float64))
            self.raw_intercept_variance.copy_(raw)

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """A state saved before the intercepts moved into the covariance: its constant means, no intercept."""
        if prefix + "intercept_in_kernel" not in state_dict and prefix + "mode_a" in state_dict:
            state_dict[prefix + "intercept_in_kernel"] = torch.tensor(False)
            state_dict[prefix + "raw_intercept_variance"] = self.raw_intercept_variance.detach().clone()
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def means(self) -> Tensor:
        """``C``: the classes' constant means (zero, but in a model saved before the intercepts moved into
        the covariance)."""
        return self.mean_module.constant.reshape(-1)

    def class_covariances(self, x1: Tensor, x2: Tensor | None = None) -> ClassCovariances:
        """The classes' prior covariances between documents ``x1`` and ``x2`` (default ``x1``) in parts: the
        base kernel's matrix, the output scales and the intercept's variance."""
        if x2 is not None and x1.shape[-1] != x2.shape[-1]:
            x1, x2 = pad_to_common_width(x1, x2)
        base = self.covar_module.base_kernel(x1, x2).to_dense()
        offset = self.intercept_variance if bool(self.intercept_in_kernel) else torch.zeros_like(base[..., 0, 0])
        return ClassCovariances(base, self.covar_module.outputscale, offset, self.classes_batch[0])

    def covariance(self, x1: Tensor, x2: Tensor | None = None) -> Tensor:
        """``C x n1 x n2``: the classes' prior covariances, the intercept's variance included (a shared
        output scale's expanded, not copied)."""
        return self.class_covariances(x1, x2).dense()

    def prior_variance(self, x: Tensor) -> Tensor:
        """``C x n``: the classes' prior variances of documents ``x``."""
        k = self.covar_module(x, diag=True)
        if bool(self.intercept_in_kernel):
            k = k + self.intercept_variance
        return k.expand(*self.classes_batch, k.shape[-1]) if k.dim() == 1 else k

    def log_evidence(self, rows: Tensor | None = None) -> Tensor:
        """The approximate log marginal likelihood (eq. 3.44) at the current hyper-parameters, with
        its implicit gradient; the mode found from the last one (and kept, ``mode_a``) by
        :func:`find_mode` (conjugate gradients from :data:`CG_FROM_DOCUMENTS` documents). ``rows``: the
        evidence of those training documents alone (a subset's, ``max_evidence_documents``), its mode
        searched from the subset's last one (kept beside ``mode_a``, not saved). The evidence of every
        document keeps its mode's parts for :meth:`posterior` while the model's parameters and buffers
        stay as they are."""
        self._kept_posterior.clear()  # not held beside the new blocks
        m = self.means()
        start: Tensor | None
        if rows is None:
            covariances, labels, start = self.class_covariances(self.train_x), self.labels, self.mode_a
        else:
            covariances, labels = self.class_covariances(self.train_x[rows]), self.labels[:, rows]
            kept = getattr(self, "_subset_a", None)
            start = kept if isinstance(kept, Tensor) and kept.shape == labels.shape else None
        mode = find_mode(covariances, m, labels, start)
        K = covariances.dense()
        if rows is None:
            self.mode_a.copy_(mode.a)
        else:
            self._subset_a = mode.a
        self.last_search = (mode.n_iter, mode.gradient)
        with torch.no_grad():
            parts = mode_parts(K.detach(), mode.f)
        if rows is None:
            self._kept_posterior.put((mode, parts), self._state())
        return log_evidence(K, m, labels, mode, parts)

    def _state(self) -> list[Tensor]:
        """The parameters and buffers (what the posterior is a function of)."""
        return [*self.parameters(), *self.buffers()]

    @torch.no_grad()
    def posterior(self) -> tuple[LaplaceMode, ModeParts]:
        """The mode at the current hyper-parameters, rebuilt from ``mode_a`` (no search: it is the
        fitted mode's), and its :class:`ModeParts` -- those the last evidence of every document computed,
        where the parameters and buffers have not changed since (the same numbers: the mode's ``f`` is
        ``K a + m`` by the same product). Kept, they hold ``C x n x n`` float64 beside the model (the
        blocks ``E``) until the next evidence of every document."""
        kept = self._kept_posterior.get(self._state())
        if kept is not None:
            return kept
        covariances, m = self.class_covariances(self.train_x), self.means()
        a = self.mode_a
        f = covariances.matmul(a) + m.unsqueeze(-1)
        return LaplaceMode(f, a, math.nan, 0, math.nan), mode_parts(covariances.dense(), f)

    @torch.no_grad()
    def latents(self, x: Tensor, posterior: tuple[LaplaceMode, ModeParts]) -> tuple[Tensor, Tensor]:
        """The Gaussian of the latents of documents ``x``: mean ``n x C``, covariance ``n x C x C``."""
        mode, parts = posterior
        return predictive(
            self.covariance(self.train_x, x), self.prior_variance(x), self.means(), self.labels, mode, parts
        )
