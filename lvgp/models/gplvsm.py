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

from typing import Any

import gpytorch
from gpytorch.kernels import Kernel, ScaleKernel
from torch import Tensor

from ..bow.padded import check_padded, pad_to_width
from ..kernels.document import reads_empty_documents
from ..kernels.latent_distribution import LatentDistributionKernel
from .exact import SharedKernelExactGP


class PaddedInputsMixin:
    """For exact GPs over padded documents: inputs and the stored training inputs are padded
    to a common width before gpytorch concatenates them."""

    train_inputs: tuple[Tensor, ...] | None

    def __call__(self, *inputs: Tensor, **kwargs: Any) -> Any:
        if self.train_inputs is not None:
            # Inputs and stored training inputs are padded to a common width, in both
            # modes: predicting on wider documents widens the stored training inputs
            # (padding changes no kernel value, so cached prediction terms stay valid),
            # and later training calls with the original tensor still match them.
            width = max(t.shape[-1] for t in (*self.train_inputs, *inputs))
            inputs = tuple(pad_to_width(t, width) for t in inputs)
            self.train_inputs = tuple(pad_to_width(t, width) for t in self.train_inputs)
        return super().__call__(*inputs, **kwargs)  # type: ignore[misc]  # a mixin of ExactGP subclasses


class PaddedExactGP(PaddedInputsMixin, gpytorch.models.ExactGP):
    """gpytorch's :class:`~gpytorch.models.ExactGP` for padded word-index documents: subclass it as
    you would ``ExactGP`` (``__init__(train_x, train_y, likelihood)`` and ``forward``). gpytorch
    concatenates the training and test inputs at prediction, which needs one width; documents
    encoded separately (``vocab.encode(test_texts)``) have their own, so this class pads both to
    the wider one first (padding changes no kernel value). With plain ``ExactGP`` the prediction
    fails inside gpytorch ("Sizes of tensors must match")."""


class GPLVSM(PaddedInputsMixin, SharedKernelExactGP):
    r"""GP-LVSM as an exact gpytorch GP over padded word-index documents.

    Args:
        train_x: ``n x L`` long tensor of word ids padded with :data:`lvgp.PAD`, or packed documents
            (:func:`~lvgp.kernels.packed.pack_documents`) for a ``kernel`` that reads them.
        train_y: ``n`` targets, or ``n x B`` for :math:`B` outputs sharing the kernel.
        likelihood: default :class:`~gpytorch.likelihoods.GaussianLikelihood` (:math:`\beta^{-1}`).
        num_words: vocabulary size (ids in ``train_x`` and later inputs must be below it).
        latent_dim, embedding, level2, rho: see :class:`~lvgp.LatentDistributionKernel`.
        mean: ``"constant"`` (learned, one per output) or ``"zero"``.
        kernel: a ready covariance module to use instead of ``ScaleKernel(LDK(...))``.
        **kernel_options: further :class:`~lvgp.LatentDistributionKernel` arguments.

    Train with :class:`~lvgp.LogPosterior` (the MAP objective of eq. 11) and predict as
    with any ``ExactGP``: ``model.eval(); likelihood(model(x_test))`` gives eqs. 19 and 21
    (test inputs may be wider or narrower than ``train_x``). Evaluation runs in
    :func:`~lvgp.base.numerics.exact_numerics` (Cholesky at every size).

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
        **kernel_options: Any,
    ) -> None:
        if not train_x.dtype.is_floating_point:  # packed documents (floating) are read by their kernel's parts
            # a padding-only row is the empty set where every document kernel reads it so (allow_empty_documents)
            allow_empty = kernel is not None and reads_empty_documents(kernel)
            check_padded(train_x, "train_x", num_words, allow_empty=allow_empty)
        if train_x.dim() != 2:
            raise ValueError(f"train_x must be an (n x L) padded tensor; got shape {tuple(train_x.shape)}")
        if kernel is None:
            kernel = ScaleKernel(
                LatentDistributionKernel(
                    num_words, latent_dim, embedding=embedding, level2=level2, rho=rho, **kernel_options
                )
            )
        super().__init__(train_x, train_y, likelihood, kernel, mean=mean)
        self.num_words = num_words

    @property
    def ldk(self) -> LatentDistributionKernel:
        """The (first) latent distribution kernel inside the covariance module."""
        for module in self.covar_module.modules():
            if isinstance(module, LatentDistributionKernel):
                return module
        raise AttributeError("the covariance module holds no LatentDistributionKernel")
