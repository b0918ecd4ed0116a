r"""GP regression with the RBF kernel on word-frequency vectors: the GP-LVSM paper's
"GP regression" baseline (eq. 22),

.. math:: K_{ij} = \alpha^{-1}\exp\Big(-\frac{\gamma}{2}\|\mathrm{vec}(d_i) - \mathrm{vec}(d_j)\|^2\Big) + \beta^{-1}\delta_{ij},

with :math:`\mathrm{vec}(d)` the vector of word counts, and :math:`\alpha`, :math:`\beta`,
:math:`\gamma` chosen by maximizing the marginal likelihood (gpytorch, float64, Cholesky).
gpytorch's ``RBFKernel`` lengthscale :math:`\ell` is :math:`\gamma^{-1/2}`.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import RBFKernel, ScaleKernel

from ..base.constraints import Real
from ..base.fit_options import LBFGS, Adam, EarlyStopping
from ..base.numerics import default_dtype
from ..bow.padded import padded_to_counts
from ..bow.vocabulary import Vocabulary
from ..models.estimator_base import ExactGPRegressorBase
from ..models.exact import SharedKernelExactGP


class GPRBFRegressor(ExactGPRegressorBase):
    """GP regression with an RBF kernel on bag-of-words count vectors (paper eq. 22).

    Same input conventions, fitting options and fitted attributes as
    :class:`~lvgp.GPLVSMRegressor` (texts, sparse counts or padded tensors; L-BFGS on the
    log marginal likelihood). ``gamma_`` is the fitted :math:`\\gamma`. Documents without
    any known word are the zero vector, a valid input here.

    Args:
        gamma_init: initial :math:`\\gamma`; ``None`` uses ``1 / median squared distance``
            between training count vectors (the median heuristic).
        optimizer: ``None`` (``LBFGS(max_iter=200, tol=1e-7)``), an :class:`~lvgp.LBFGS` or an
            :class:`~lvgp.Adam` (defaults ``max_iter=200, lr=0.05, tol=1e-7, convergence_window=20``);
            its unset fields are these defaults.
        early_stopping: ``False``, ``True`` or an :class:`~lvgp.EarlyStopping` (defaults
            ``validation_fraction=0.1, n_iter_no_change=20, validation_interval=1, policy="keep-best"``),
            as :class:`~lvgp.GPLVSMRegressor`'s.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.
    """

    _name = "GP-RBF"
    _empty_documents_use_prior = False
    _optimizer_defaults = (
        LBFGS(max_iter=200, tol=1e-7),
        Adam(max_iter=200, lr=0.05, tol=1e-7, convergence_window=20),
    )
    _parameter_constraints = {
        **ExactGPRegressorBase._parameter_constraints,
        "gamma_init": [None, Real(0, open_low=True)],
    }

    def __init__(
        self,
        *,
        gamma_init: float | None = None,
        mean: str = "constant",
        noise_init: float = 0.5,
        outputscale_init: float = 1.0,
        optimizer: LBFGS | Adam | None = None,
        early_stopping: bool | EarlyStopping = False,
        normalize_y: bool = True,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
    ):
        self.gamma_init = gamma_init
        self.mean = mean
        self.noise_init = noise_init
        self.outputscale_init = outputscale_init
        self.optimizer = optimizer
        self.early_stopping = early_stopping
        self.normalize_y = normalize_y
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _model_inputs(self, x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(padded_to_counts(x, self.num_words_).toarray())

    def _build_model(
        self, inputs: torch.Tensor, targets: torch.Tensor, seed: int, state_dict: dict | None = None
    ) -> SharedKernelExactGP:
        with default_dtype(torch.float64):
            model = SharedKernelExactGP(inputs, targets, None, ScaleKernel(RBFKernel()), mean=self.mean)
        self._init_hyperparameters(model)
        gamma = self.gamma_init
        if gamma is None:
            sq = torch.cdist(inputs, inputs).pow(2)
            off_diagonal = sq[~torch.eye(len(inputs), dtype=torch.bool)]
            median = off_diagonal.median().item() if off_diagonal.numel() else 1.0
            gamma = 1.0 / median if median > 0 else 1.0
        model.covar_module.base_kernel.lengthscale = torch.tensor(math.sqrt(1.0 / gamma), dtype=torch.float64)
        return model

    @property
    def gamma_(self) -> float:
        """Fitted :math:`\\gamma = 1/\\ell^2`."""
        return float(self.model_.covar_module.base_kernel.lengthscale.detach().reshape(()) ** -2)
