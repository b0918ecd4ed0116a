"""Exact GPs with several outputs sharing one kernel, and the MAP objective that goes with them."""

from __future__ import annotations

import math
from typing import Any

import gpytorch
import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.means import ConstantMean, Mean
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from ..base.numerics import exact_numerics
from ..base.shapes import broadcast_shapes
from ..base.targets import check_targets_array

MEANS = ("constant", "zero")


class FloatZeroMean(Mean):
    """Zero mean whose dtype follows the module (gpytorch's ``ZeroMean`` takes the
    dtype of its input, which for word-index inputs is ``long``)."""

    def __init__(self, batch_shape: torch.Size = torch.Size()):
        super().__init__()
        self.batch_shape = batch_shape
        self.register_buffer("zero", torch.zeros(()))

    def forward(self, x: Tensor) -> Tensor:
        return self.zero.expand(broadcast_shapes((*self.batch_shape, 1), x.shape[:-1]))


def _check_targets(y: Tensor, n: int, name: str = "train_y") -> Tensor:
    if not torch.is_tensor(y) or not y.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor; got {getattr(y, 'dtype', type(y).__name__)}")
    check_targets_array(y.detach().cpu().numpy(), n, name)
    return y


class SharedKernelExactGP(gpytorch.models.ExactGP):
    """An exact GP whose ``B`` outputs share one covariance module and one Gaussian noise
    and are independent given them (thesis eq. 5.17); ``B = 1`` is a plain exact GP.

    Args:
        train_x: ``n x ...`` training inputs.
        train_y: ``n`` targets or ``n x B``; stored as ``train_targets`` of shape ``n`` or ``B x n``.
        likelihood: a Gaussian likelihood (default :class:`~gpytorch.likelihoods.GaussianLikelihood`).
        covar_module: the shared kernel (no batch shape).
        mean: ``"constant"`` (learned, one per output) or ``"zero"``.

    Train with :class:`LogPosterior`. Evaluation runs in
    :func:`~lvgp.base.numerics.exact_numerics` (Cholesky at every size). The
    predictive distributions of multi-output models have batch shape ``B``.
    """

    def __init__(
        self,
        train_x: Tensor,
        train_y: Tensor,
        likelihood: gpytorch.likelihoods.Likelihood | None,
        covar_module: Kernel,
        mean: str = "constant",
    ):
        _check_targets(train_y, train_x.shape[0])
        self.num_outputs = 1 if train_y.dim() == 1 else train_y.shape[1]
        targets = train_y if train_y.dim() == 1 else train_y.mT.contiguous()
        super().__init__(
            train_x, targets, likelihood if likelihood is not None else gpytorch.likelihoods.GaussianLikelihood()
        )
        batch = torch.Size([self.num_outputs]) if self.num_outputs > 1 else torch.Size()
        if mean == "constant":
            self.mean_module = ConstantMean(batch_shape=batch)
        elif mean == "zero":
            self.mean_module = FloatZeroMean(batch_shape=batch)
        else:
            raise ValueError(f"mean must be one of {MEANS}; got {mean!r}")
        self.covar_module = covar_module

    def forward(self, x: Tensor) -> MultivariateNormal:
        mean = self.mean_module(x)
        covar = self.covar_module(x)
        if self.num_outputs > 1 and not self.training:
            # predictions go through gpytorch's batched prediction strategy; training uses
            # LogPosterior, which factorizes the shared n x n covariance only once
            covar = covar.expand(self.num_outputs, *covar.shape[-2:])
        return MultivariateNormal(mean, covar)

    def __call__(self, *inputs: Tensor, **kwargs: Any) -> Any:
        with exact_numerics():
            return super().__call__(*inputs, **kwargs)


class LogPosterior(ExactMarginalLogLikelihood):
    r"""The GP-LVSM MAP objective (paper eq. 11; thesis eqs. 5.10, 5.17-5.18), divided by ``n``.

    .. math:: \frac1n\Big[\sum_{b=1}^{B}\log\mathcal N(\mathbf y_{:,b}\mid\boldsymbol\mu_b, \mathbf K)
              + \log p(\mathbf X\mid\rho) + \sum\log p(\text{other priors})\Big]

    For one output it equals gpytorch's ``ExactMarginalLogLikelihood``. For :math:`B`
    outputs sharing one kernel it counts the priors once (``ExactMarginalLogLikelihood``
    would add them to every output) and factorizes :math:`\mathbf K` once for all outputs.
    The thesis's eq. 5.18 shows a single :math:`-\frac12\log\det\mathbf K`; the likelihood
    of eq. 5.17 it is derived from has one per output, which is what is computed here.
    """

    def forward(self, function_dist: MultivariateNormal, target: Tensor, *params: Any, **kwargs: Any) -> Tensor:
        if not isinstance(function_dist, MultivariateNormal):
            raise TypeError("LogPosterior needs the MultivariateNormal returned by the model")
        n = function_dist.event_shape.numel()
        with exact_numerics():
            covar = function_dist.lazy_covariance_matrix
            if function_dist.mean.dim() == 2 and covar.dim() == 2:
                # B outputs, one shared n x n covariance: one factorization, B right-hand sides
                shared = MultivariateNormal(function_dist.mean[0], covar)
                noisy = self.likelihood(shared, *params, **kwargs).lazy_covariance_matrix
                diff = target - function_dist.mean
                inv_quad, logdet = noisy.inv_quad_logdet(inv_quad_rhs=diff.mT, logdet=True, reduce_inv_quad=False)
                outputs = diff.shape[0]
                res = -0.5 * (inv_quad.sum() + outputs * logdet + outputs * n * math.log(2 * math.pi))
            else:
                res = self.likelihood(function_dist, *params, **kwargs).log_prob(target).sum()
            res = self._add_other_terms(res, params)
        return res.div(n)
