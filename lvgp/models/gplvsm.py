r"""GP-LVSM: the Gaussian process latent variable set model (Yoshikawa, Iwata, Sawada,
AAAI 2015; thesis ch. 5), as a gpytorch ``ExactGP``.

Model (paper eqs. 3-9): :math:`y_i = f(\mathbf X_i) + \epsilon`, :math:`f \sim \mathcal{GP}(\mu,
\alpha^{-1} K_{\text{LDK}})`, :math:`\epsilon \sim \mathcal N(0, \beta^{-1})`, so
:math:`\mathbf y \sim \mathcal N(\mu, \mathbf K)` with
:math:`K_{ij} = \alpha^{-1}\langle m(\mathbf X_i), m(\mathbf X_j)\rangle + \beta^{-1}\delta_{ij}` (eq. 8).
:math:`\alpha^{-1}` is the ``ScaleKernel`` output scale, :math:`\beta^{-1}` the Gaussian
likelihood's noise. Multi-output (thesis 5.5.1): :math:`B` outputs share the kernel and
the noise and are independent given them (eq. 5.17).
"""

from __future__ import annotations

import math

import gpytorch
import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.means import ConstantMean, Mean
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from ..bow.padded import check_padded, pad_to_width
from ..kernels.latent_distribution import LatentDistributionKernel
from .documents import check_targets_array
from .numerics import exact_numerics

MEANS = ("constant", "zero")


class FloatZeroMean(Mean):
    """Zero mean whose dtype follows the module (gpytorch's ``ZeroMean`` takes the
    dtype of its input, which for word-index inputs is ``long``)."""

    def __init__(self, batch_shape: torch.Size = torch.Size()):
        super().__init__()
        self.batch_shape = batch_shape
        self.register_buffer("zero", torch.zeros(()))

    def forward(self, x: Tensor) -> Tensor:
        return self.zero.expand(torch.broadcast_shapes((*self.batch_shape, 1), x.shape[:-1]))


def _check_targets(y: Tensor, n: int, name: str = "train_y") -> Tensor:
    if not torch.is_tensor(y) or not y.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor; got {getattr(y, 'dtype', type(y).__name__)}")
    check_targets_array(y.detach().cpu().numpy(), n, name)
    return y


class GPLVSM(gpytorch.models.ExactGP):
    r"""GP-LVSM as an exact gpytorch GP over padded word-index documents.

    Args:
        train_x: ``n x L`` long tensor of word ids padded with :data:`lvgp.PAD`.
        train_y: ``n`` targets, or ``n x B`` for :math:`B` outputs sharing the kernel.
        likelihood: default :class:`~gpytorch.likelihoods.GaussianLikelihood` (:math:`\beta^{-1}`).
        num_words: vocabulary size (ids in ``train_x`` and later inputs must be below it).
        latent_dim, embedding, level2, rho: see :class:`~lvgp.LatentDistributionKernel`.
        mean: ``"constant"`` (learned, one per output) or ``"zero"``.
        kernel: a ready covariance module to use instead of ``ScaleKernel(LDK(...))``.
        **kernel_options: further :class:`~lvgp.LatentDistributionKernel` arguments.

    Train with :class:`LogPosterior` (the MAP objective of eq. 11) and predict as with
    any ``ExactGP``: ``model.eval(); likelihood(model(x_test))`` gives eqs. 19 and 21
    (test inputs may be wider or narrower than ``train_x``). Evaluation runs in
    :func:`~lvgp.models.numerics.exact_numerics` (Cholesky at every size).

    Multi-output models keep ``train_targets`` as ``B x n``; their predictive
    distributions have batch shape ``B``.
    """

    def __init__(
        self,
        train_x: Tensor,
        train_y: Tensor,
        likelihood: gpytorch.likelihoods.Likelihood | None = None,
        *,
        num_words: int,
        latent_dim: int = 2,
        embedding: str | Kernel = "rbf",
        level2: str = "linear",
        rho: float | None = 1.0,
        mean: str = "constant",
        kernel: Kernel | None = None,
        **kernel_options,
    ):
        check_padded(train_x, "train_x", num_words)
        if train_x.dim() != 2:
            raise ValueError(f"train_x must be an (n x L) padded tensor; got shape {tuple(train_x.shape)}")
        _check_targets(train_y, train_x.shape[0])
        self.num_outputs = 1 if train_y.dim() == 1 else train_y.shape[1]
        targets = train_y if train_y.dim() == 1 else train_y.mT.contiguous()
        super().__init__(train_x, targets, likelihood if likelihood is not None else GaussianLikelihood())
        batch = torch.Size([self.num_outputs]) if self.num_outputs > 1 else torch.Size()
        if mean == "constant":
            self.mean_module = ConstantMean(batch_shape=batch)
        elif mean == "zero":
            self.mean_module = FloatZeroMean(batch_shape=batch)
        else:
            raise ValueError(f"mean must be one of {MEANS}; got {mean!r}")
        self.num_words = num_words
        if kernel is None:
            kernel = ScaleKernel(
                LatentDistributionKernel(num_words, latent_dim, embedding=embedding, level2=level2, rho=rho, **kernel_options)
            )
        self.covar_module = kernel

    @property
    def ldk(self) -> LatentDistributionKernel:
        """The (first) latent distribution kernel inside the covariance module."""
        for module in self.covar_module.modules():
            if isinstance(module, LatentDistributionKernel):
                return module
        raise AttributeError("the covariance module holds no LatentDistributionKernel")

    def forward(self, x: Tensor) -> MultivariateNormal:
        mean = self.mean_module(x)
        covar = self.covar_module(x)
        if self.num_outputs > 1 and not self.training:
            # predictions go through gpytorch's batched prediction strategy; training uses
            # LogPosterior, which factorizes the shared n x n covariance only once
            covar = covar.expand(self.num_outputs, *covar.shape[-2:])
        return MultivariateNormal(mean, covar)

    def __call__(self, *inputs: Tensor, **kwargs):
        if not self.training and self.train_inputs is not None:
            width = max(t.shape[-1] for t in (*self.train_inputs, *inputs))
            inputs = tuple(pad_to_width(t, width) for t in inputs)
            # padding changes no kernel value, so cached prediction terms stay valid
            self.train_inputs = tuple(pad_to_width(t, width) for t in self.train_inputs)
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

    def forward(self, function_dist: MultivariateNormal, target: Tensor, *params, **kwargs) -> Tensor:
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
