"""``GPLVSMRegressor``: GP-LVSM as a scikit-learn estimator."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ..bow.vocabulary import Vocabulary
from .estimator_base import ExactGPRegressorBase
from .gplvsm import GPLVSM
from .numerics import default_dtype


class GPLVSMRegressor(ExactGPRegressorBase):
    r"""GP-LVSM regression on bag-of-words documents (Yoshikawa et al., AAAI 2015).

    Fits the latent word vectors :math:`\mathbf X`, the output scale :math:`\alpha^{-1}`,
    the noise :math:`\beta^{-1}` and the mean by maximizing the log posterior of eq. 11
    (:class:`~lvgp.LogPosterior`), then predicts with eqs. 19 and 21.

    Args:
        latent_dim: :math:`q`, dimensionality of the word vectors.
        rho: precision :math:`\rho` of the Gaussian prior on the word vectors.
        embedding, level2: LDK choices (see :class:`~lvgp.LatentDistributionKernel`).
        mean: ``"constant"`` (learned) or ``"zero"``.
        gamma: RBF embedding bandwidth :math:`\gamma` (initial value, or fixed value).
        train_gamma: learn :math:`\gamma`. Off by default: the RBF embedding depends on the
            word vectors only through :math:`\sqrt\gamma\,\mathbf x_v`, so a learned
            :math:`\gamma` rescales the prior precision to :math:`\rho/\gamma` and can void it.
        kernel_options: further :class:`~lvgp.LatentDistributionKernel` arguments
            (``a``, ``b``, ``zeta``, ``c``, ``d``, priors, constraints).
        noise_init, outputscale_init: initial :math:`\beta^{-1}` and :math:`\alpha^{-1}` (in
            standardized target units when ``normalize_y``).
        optimizer: ``"lbfgs"`` (scipy L-BFGS-B, as in the paper) or ``"adam"``.
        max_iter, lr, tol: optimizer budget, Adam learning rate, convergence tolerance.
        early_stopping: hold out ``validation_fraction`` of the training documents and stop
            when their RMSE has not improved for ``n_iter_no_change`` iterations, keeping
            the best iterate (``fit(..., X_val=, y_val=)`` supplies an explicit set instead).
        normalize_y: standardize targets (per output) before fitting; predictions are
            returned in the original units.
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (unfitted: fitted on the
            training texts; fitted: used as is); ``None`` uses ``Vocabulary()``.
        num_words: for padded-tensor input, the vocabulary size (default: largest id + 1).
        latent_init: initial word vectors: ``None`` (draws from the prior), a
            ``num_words x latent_dim`` array, or a callable ``f(words, num_words, latent_dim)``
            returning one (``words`` is the vocabulary's word list, or ``None``).
        random_state: seed for the initialization and the validation split.
        verbose: show a progress bar during fitting.

    Fitted attributes: ``model_`` (:class:`~lvgp.GPLVSM`), ``likelihood_``,
    ``vocabulary_`` (for text input, else ``None``), ``num_words_``, ``word_vectors_``
    (``num_words x latent_dim`` numpy), ``n_iter_``, ``converged_``, ``loss_curve_``
    (negative log posterior / n per iteration), ``validation_curve_``, ``fit_result_``.

    Example:
        >>> reg = GPLVSMRegressor(latent_dim=2, rho=1.0, max_iter=50, random_state=0)
        >>> reg.fit(["great film", "awful film", "great acting", "awful plot"], [1.0, -1.0, 1.2, -0.8])  # doctest: +SKIP
        >>> reg.predict(["great plot"], return_std=True)  # doctest: +SKIP
    """

    def __init__(
        self,
        latent_dim: int = 2,
        rho: float = 1.0,
        embedding: str = "rbf",
        level2: str = "linear",
        *,
        mean: str = "constant",
        gamma: float = 1.0,
        train_gamma: bool = False,
        kernel_options: dict | None = None,
        noise_init: float = 0.1,
        outputscale_init: float = 1.0,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        lr: float = 0.05,
        tol: float = 1e-7,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 20,
        normalize_y: bool = True,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        latent_init: np.ndarray | Callable | None = None,
        random_state: int | None = None,
        verbose: bool = False,
    ):
        self.latent_dim = latent_dim
        self.rho = rho
        self.embedding = embedding
        self.level2 = level2
        self.mean = mean
        self.gamma = gamma
        self.train_gamma = train_gamma
        self.kernel_options = kernel_options
        self.noise_init = noise_init
        self.outputscale_init = outputscale_init
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.lr = lr
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.normalize_y = normalize_y
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.latent_init = latent_init
        self.random_state = random_state
        self.verbose = verbose

    _name = "GP-LVSM"
    _fit_hint = "Try a larger rho, a larger noise_init or train_gamma=False."

    def _initial_latent(self) -> np.ndarray | None:
        init = self.latent_init
        if init is None:
            return None
        if callable(init):
            words = self.vocabulary_.words if self.vocabulary_ is not None else None
            init = init(words, self.num_words_, self.latent_dim)
        init = np.asarray(init, dtype=np.float64)
        if init.shape != (self.num_words_, self.latent_dim):
            raise ValueError(
                f"latent_init must have shape (num_words, latent_dim) = ({self.num_words_}, {self.latent_dim}); "
                f"got {init.shape}"
            )
        return init

    def _model_inputs(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def _build_model(self, inputs: torch.Tensor, targets: torch.Tensor, seed: int) -> GPLVSM:
        if not isinstance(self.embedding, str):
            raise TypeError("GPLVSMRegressor takes embedding='linear', 'rbf' or 'poly'; use GPLVSM for custom kernels")
        options = dict(self.kernel_options or {})
        if self.embedding == "rbf":
            options.setdefault("gamma", self.gamma)
        with default_dtype(torch.float64):
            model = GPLVSM(
                inputs,
                targets,
                num_words=self.num_words_,
                latent_dim=self.latent_dim,
                embedding=self.embedding,
                level2=self.level2,
                rho=self.rho,
                mean=self.mean,
                latent_init=self._initial_latent(),
                seed=seed,
                **options,
            )
        self._init_hyperparameters(model)
        if self.embedding == "rbf" and not self.train_gamma:
            model.ldk.raw_gamma.requires_grad_(False)
        return model

    @property
    def word_vectors_(self) -> np.ndarray:
        """``num_words x latent_dim`` latent word vectors."""
        check_is_fitted(self, "model_")
        return self.model_.ldk.latent.detach().cpu().numpy().copy()

    def _saved_params(self) -> dict:
        params = super()._saved_params()
        params["latent_init"] = None  # shaped only the initial state, which the saved parameters supersede
        options = params.get("kernel_options") or {}
        if any(not isinstance(v, (int, float, str, bool, type(None))) for v in options.values()):
            raise TypeError("save() supports plain-valued kernel_options only (no prior or constraint objects)")
        return params
