"""The GP classifier's gpytorch models: the Dirichlet inference's ``C`` exact GPs on transformed labels
(:class:`DirichletLDKGP` and its likelihood), the variational inference's SVGP on inducing documents
(:class:`LDKClassificationGP`), and the class probabilities of Gaussian latents by Monte Carlo with
fixed draws (:func:`expected_softmax`, one stream per class label: :func:`class_draw_seeds`). The
Laplace inference's model is :class:`~lvgp.models.laplace.SoftmaxLaplaceGP`."""

from __future__ import annotations

from typing import Any

import gpytorch
import numpy as np
import torch
from gpytorch.variational import IndependentMultitaskVariationalStrategy, NaturalVariationalDistribution
from linear_operator.operators import DenseLinearOperator

from ..._random import NUMERICS_SEED, child_seed, torch_generator
from ...kernels import LatentDistributionKernel
from ..gplvsm import PaddedInputsMixin
from ..inducing import PaddedVariationalStrategy
from ..laplace import class_draws

__all__ = ["DirichletLDKGP", "LDKClassificationGP", "expected_softmax", "class_draw_seeds"]


class _DirichletLikelihood(gpytorch.likelihoods.DirichletClassificationLikelihood):
    """gpytorch's Dirichlet classification likelihood whose labels and transformed targets
    (plain attributes there, which ``.to()`` would leave on the old device) move with the module;
    the labels stay integers (``fn`` changes a floating tensor's dtype only). ``shared_noise``: one
    learned additional noise for all classes (gpytorch's has one per class)."""

    transformed_targets: torch.Tensor
    targets: torch.Tensor

    def __init__(self, targets: torch.Tensor, *, shared_noise: bool = False, **kwargs: Any) -> None:
        super().__init__(targets, **kwargs)
        if shared_noise:
            self.second_noise_covar = gpytorch.likelihoods.noise_models.HomoskedasticNoise()

    def _apply(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.transformed_targets = fn(self.transformed_targets)
        self.targets = fn(self.targets)
        return super()._apply(fn, *args, **kwargs)


def _class_covariance(covar_module: gpytorch.kernels.Kernel, x: torch.Tensor, batch: torch.Size) -> Any:
    """The classes' covariance of ``x``: the batched kernel's, or one shared kernel's, evaluated once
    and broadcast over ``batch`` (expanding gpytorch's lazily evaluated kernel tensor would repeat
    the documents and evaluate the kernel once per class: 20 times the work and memory on 20ng)."""
    covar = covar_module(x)
    if len(batch) and not len(covar_module.batch_shape):
        dense = covar.to_dense()
        covar = DenseLinearOperator(dense.expand(*batch, *dense.shape[-2:]))
    return covar


class _NaturalDistribution(NaturalVariationalDistribution):
    """gpytorch's natural-parameter q(u), started from the prior through its Cholesky factor.

    gpytorch inverts the prior covariance by LU (``Tensor.inverse``). torch's batched LU calls
    MKL's ``dgetrf`` from several threads at once for matrices of more than ~14 rows (a grain-size
    heuristic that rounds to "always parallel", pytorch/pytorch#141358 and #142815, fix proposed in
    #181570), and MKL's row swaps are not thread-safe: with 2 torch threads, 4 classes and 256
    inducing documents the fit printed ``Intel oneMKL ERROR: Parameter 6 was incorrect on entry to
    DLASWP`` and hung. The prior covariance is positive definite (the whitened prior: the identity),
    so its inverse is taken by Cholesky, which has no pivots: the same start, on any thread count."""

    def initialize_variational_distribution(self, prior_dist: Any) -> None:
        prior_prec = torch.cholesky_inverse(torch.linalg.cholesky(prior_dist.covariance_matrix))
        prior_mean = prior_dist.mean
        noise = torch.randn_like(prior_mean).mul_(self.mean_init_std)
        self.natural_vec.data.copy_((prior_prec @ prior_mean.unsqueeze(-1)).squeeze(-1).add_(noise))
        self.natural_mat.data.copy_(prior_prec.mul(-0.5))


class DirichletLDKGP(PaddedInputsMixin, gpytorch.models.ExactGP):
    """``C`` exact GPs (batch shape ``C``) on the Dirichlet-transformed labels of
    ``likelihood`` (a :class:`gpytorch.likelihoods.DirichletClassificationLikelihood`), sharing
    ``kernel`` (an LDK) under per-class constant means and per-class output scales (one output
    scale for every class with ``shared_outputscale``)."""

    def __init__(
        self,
        train_x: torch.Tensor,
        likelihood: gpytorch.likelihoods.DirichletClassificationLikelihood,
        kernel: LatentDistributionKernel,
        shared_outputscale: bool = False,
    ) -> None:
        targets = likelihood.transformed_targets  # C x n
        super().__init__(train_x, targets, likelihood)
        self.classes_batch = torch.Size([targets.shape[0]])
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=self.classes_batch)
        scale_batch = torch.Size() if shared_outputscale else self.classes_batch
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel, batch_shape=scale_batch)

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        covar = _class_covariance(self.covar_module, x, self.classes_batch)
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), covar)

    @property
    def ldk(self) -> LatentDistributionKernel:
        return self.covar_module.base_kernel


class LDKClassificationGP(gpytorch.models.ApproximateGP):
    """``n_latent`` whitened SVGPs (batch shape ``n_latent``; one for a binary probit) on the
    ``inducing`` documents (natural-parameter ``q(u)``, :class:`_NaturalDistribution`), sharing
    ``kernel`` under per-latent constant means and output scales (one for all with
    ``shared_outputscale``)."""

    def __init__(
        self,
        inducing: torch.Tensor,
        kernel: LatentDistributionKernel,
        n_latent: int,
        jitter: float = 1e-6,
        shared_outputscale: bool = False,
    ):
        batch = torch.Size([n_latent]) if n_latent > 1 else torch.Size([])
        dist = _NaturalDistribution(inducing.shape[0], batch_shape=batch)
        strategy = PaddedVariationalStrategy(self, inducing, dist, learn_inducing_locations=False, jitter_val=jitter)
        if n_latent > 1:
            strategy = IndependentMultitaskVariationalStrategy(strategy, num_tasks=n_latent)
        super().__init__(strategy)
        self.classes_batch = batch
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=batch)
        self.covar_module = gpytorch.kernels.ScaleKernel(
            kernel, batch_shape=torch.Size() if shared_outputscale else batch
        )

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        covar = _class_covariance(self.covar_module, x, self.classes_batch)
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), covar)


def standard_deviation(var: torch.Tensor) -> torch.Tensor:
    """``sqrt(max(var, 0))``, elementwise, with a gradient of zero where ``var <= 0``: ``var.clamp_min(0).sqrt()``'s
    is NaN there (the square root's infinite slope at 0 times the clamp's), which a leave-one-out variance rounded to
    zero or below would pass to the optimizer."""
    positive = var > 0
    return torch.where(positive, torch.where(positive, var, torch.ones_like(var)).sqrt(), torch.zeros_like(var))


def expected_softmax(
    mean: torch.Tensor, var: torch.Tensor, n_samples: int, class_seeds: list[int] | None = None
) -> torch.Tensor:
    r"""``n x C`` class probabilities :math:`\mathbb E[\mathrm{softmax}(f)]` under independent
    Gaussian marginals ``mean``, ``var`` (``n x C``) of the ``C`` latent functions, averaged over
    ``n_samples`` fixed nodes, the same for every document and call: a deterministic function of its
    inputs. ``class_seeds`` (one per class, :func:`class_draw_seeds`): the Latin hypercube nodes of
    :func:`~lvgp.models.laplace.class_draws`, each class's order from its own stream, so that a class gets
    the same nodes wherever its label sorts (without them, independent normal draws, column ``c`` those
    of position ``c``, from ``lvgp._random.NUMERICS_SEED``: the scheme of files saved before). (gpytorch's
    ``SoftmaxLikelihood`` would expand the lazy multitask covariance over the samples: GBs for long
    documents.)"""
    # drawn on the CPU (the same draws on every device), then moved
    if class_seeds is None:
        generator = torch_generator(NUMERICS_SEED)
        eps = torch.randn(n_samples, 1, mean.shape[-1], dtype=mean.dtype, generator=generator)
    else:
        if len(class_seeds) != mean.shape[-1]:
            raise ValueError(f"class_seeds: {len(class_seeds)} seeds for {mean.shape[-1]} classes")
        eps = class_draws(n_samples, class_seeds, mean.dtype).unsqueeze(1)  # S x 1 x C
    eps = eps.to(mean.device)
    sd = standard_deviation(var)
    n, C = mean.shape[-2], mean.shape[-1]
    rows = max(1, _SOFTMAX_BLOCK // (n_samples * C))

    def block(m: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        draws = s * eps  # S x rows x C
        if torch.broadcast_shapes(draws.shape, m.shape) == draws.shape:
            draws += m  # in place: one S x rows x C allocation fewer, the same sums as m + s * eps
        else:  # a mean of more dimensions than the variance's
            draws = m + draws
        return torch.softmax(draws, dim=-1).mean(0)

    if mean.dim() != 2 or n <= rows:
        return block(mean, sd)
    # many documents and classes (the leave-one-out predictions of 15,000 documents of 150 classes: 576
    # million draws): blocks of rows, each row's values as in one piece
    return torch.cat([block(mean[a : a + rows], sd[a : a + rows]) for a in range(0, n, rows)])


#: draws x documents x classes of one block of :func:`expected_softmax` (256 MB of float64)
_SOFTMAX_BLOCK = 2**25


def class_draw_seeds(classes: np.ndarray) -> list[int]:
    """One seed per class label for :func:`expected_softmax`: the stream named by the label's text
    (``lvgp._random.child_seed`` of ``NUMERICS_SEED``), so that the Monte Carlo probabilities
    of a class do not depend on its position: on which other labels there are, or on how they sort
    (labels ``1, 2, 10`` read as integers or as strings sort otherwise and predict the same). A
    label of another text draws another order of its nodes: renaming a class moves its probability by
    the nodes' error (``benchmarks/README.md``, "The predictive's Monte Carlo error")."""
    return [child_seed(NUMERICS_SEED, f"class {label}") for label in np.asarray(classes).tolist()]
