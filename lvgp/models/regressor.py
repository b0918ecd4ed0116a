"""``GPLVSMRegressor``: GP-LVSM as a scikit-learn estimator."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, check_random_state

from ..bow.vocabulary import Vocabulary
from ..warnings import EmptyDocumentsWarning
from .documents import DocumentEncoder, check_targets_array, empty_rows
from .gplvsm import GPLVSM, LogPosterior
from .numerics import covariance_errors, exact_numerics
from .optimize import OPTIMIZERS, FitResult, minimize

_FORMAT = "lvgp.GPLVSMRegressor/1"
_PREDICT_BLOCK = 2048


class GPLVSMRegressor(RegressorMixin, BaseEstimator):
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

    # ------------------------------------------------------------------ fitting
    def _check_params(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}; got {self.optimizer!r}")
        if not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction must be in (0, 1); got {self.validation_fraction}")

    def _initial_latent(self, seed: int) -> np.ndarray | None:
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

    def _build_model(self, x: torch.Tensor, y: torch.Tensor, seed: int) -> GPLVSM:
        options = dict(self.kernel_options or {})
        if self.embedding == "rbf":
            options.setdefault("gamma", self.gamma)
        model = GPLVSM(
            x,
            y,
            num_words=self.num_words_,
            latent_dim=self.latent_dim,
            embedding=self.embedding,
            level2=self.level2,
            rho=self.rho,
            mean=self.mean,
            latent_init=self._initial_latent(seed),
            seed=seed,
            **options,
        ).double()
        model.likelihood.noise = self.noise_init
        model.covar_module.outputscale = self.outputscale_init
        if self.embedding == "rbf" and not self.train_gamma:
            model.ldk.raw_gamma.requires_grad_(False)
        return model

    def fit(self, X, y, X_val=None, y_val=None) -> GPLVSMRegressor:
        """Fit on training documents ``X`` (texts, counts or padded tensor) and targets
        ``y`` (``n`` or ``n x B``). ``X_val``/``y_val``: a validation set for early stopping."""
        self._check_params()
        self._encoder = DocumentEncoder(self.vocabulary, self.num_words)
        x = self._encoder.fit_transform(X)
        n = x.shape[0]
        y = check_targets_array(y, n)
        self.vocabulary_ = self._encoder.vocabulary
        self.num_words_ = self._encoder.num_words
        if self._encoder.kind == "counts":
            self.n_features_in_ = self.num_words_
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(2**31 - 1))

        x_val = y_val_arr = None
        if X_val is not None or y_val is not None:
            if X_val is None or y_val is None:
                raise ValueError("pass both X_val and y_val, or neither")
            x_val = self._encoder.transform(X_val, "X_val")
            y_val_arr = check_targets_array(y_val, x_val.shape[0], "y_val")
        elif self.early_stopping:
            n_val = max(1, int(round(self.validation_fraction * n)))
            if n - n_val < 2:
                raise ValueError(f"early stopping needs more than {n} training documents")
            perm = rng.permutation(n)
            val_idx, train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
            x_val, y_val_arr = x[torch.from_numpy(val_idx)], y[val_idx]
            x, y = x[torch.from_numpy(train_idx)], y[train_idx]

        self.y_mean_ = y.mean(0) if self.normalize_y else np.zeros(y.shape[1:])
        self.y_std_ = y.std(0) if self.normalize_y else np.ones(y.shape[1:])
        self.y_std_ = np.where(self.y_std_ > 0, self.y_std_, 1.0)
        targets = torch.from_numpy((y - self.y_mean_) / self.y_std_)
        model = self._build_model(x, targets, seed)
        self.model_, self.likelihood_ = model, model.likelihood
        mll = LogPosterior(model.likelihood, model)
        model.train()

        def objective():
            with covariance_errors("GP-LVSM training", "Try a larger rho, a larger noise_init or train_gamma=False."):
                return -mll(model(x), model.train_targets)

        validate = None
        if x_val is not None:
            keep = ~empty_rows(x_val)
            if not keep.all():
                warnings.warn(
                    f"{int((~keep).sum())} validation documents have no known word and are left out of early stopping",
                    EmptyDocumentsWarning,
                    stacklevel=2,
                )
            xv = x_val[keep]
            yv = (y_val_arr[keep.numpy()] - self.y_mean_) / self.y_std_
            yv_t = torch.from_numpy(np.asarray(yv))

            def validate() -> float:
                model.eval()
                try:
                    with torch.no_grad():
                        mean = self._latent_mean(xv)
                finally:
                    model.train()
                return float(torch.sqrt(torch.mean((mean - yv_t) ** 2)))

        result = minimize(
            [p for p in model.parameters() if p.requires_grad],
            objective,
            method=self.optimizer,
            max_iter=self.max_iter,
            lr=self.lr,
            tol=self.tol,
            validate=validate,
            n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose,
            desc="GP-LVSM",
        )
        self._set_fit_result(result)
        model.eval()
        return self

    def _set_fit_result(self, result: FitResult, warn: bool = True) -> None:
        self.fit_result_ = result
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.loss_curve_ = list(result.loss_curve)
        self.validation_curve_ = list(result.validation_curve)
        if warn and not result.converged and not result.interrupted:
            warnings.warn(
                f"GP-LVSM did not converge in {result.n_iter} iterations ({result.message}); "
                "increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )

    @property
    def word_vectors_(self) -> np.ndarray:
        """``num_words x latent_dim`` latent word vectors."""
        check_is_fitted(self, "model_")
        return self.model_.ldk.latent.detach().cpu().numpy().copy()

    # ------------------------------------------------------------------ prediction
    def _latent_mean(self, x: torch.Tensor) -> torch.Tensor:
        """Posterior mean of f (standardized units), ``n`` or ``n x B``, for non-empty ``x``."""
        mean = self.model_(x).mean
        return mean if mean.dim() == 1 else mean.mT

    def predict(self, X, return_std: bool = False, include_noise: bool = True):
        r"""Predictive mean (eq. 19) and, with ``return_std``, standard deviation (eq. 21).

        Eq. 21 uses :math:`K_{**}` of eq. 8, which includes the noise :math:`\beta^{-1}`:
        the default ``include_noise=True`` gives the standard deviation of a new target
        :math:`y_*`; ``include_noise=False`` that of the latent :math:`f_*`.

        Documents without any known word (after dropping unseen words, counted in an
        :class:`~lvgp.warnings.UnseenWordsWarning`) carry no information: they get the
        prior mean and the prior standard deviation of an average training document
        (``outputscale * mean(diag K_LDK(train)) (+ noise)``), with an
        :class:`~lvgp.warnings.EmptyDocumentsWarning` counting them.

        Returns:
            ``mean`` (``n`` or ``n x B``) or ``(mean, std)``, numpy, in target units.
        """
        check_is_fitted(self, "model_")
        x = self._encoder.transform(X)
        empty = empty_rows(x)
        model, lik = self.model_, self.likelihood_
        model.eval()
        shape = (x.shape[0],) if model.num_outputs == 1 else (x.shape[0], model.num_outputs)
        mean = torch.empty(shape, dtype=torch.float64)
        var = torch.empty(shape, dtype=torch.float64)
        noise = lik.noise.detach().reshape(()) if include_noise else 0.0
        rows = torch.nonzero(~empty)[:, 0]
        with torch.no_grad(), exact_numerics(), covariance_errors("GP-LVSM prediction", "Refit with a larger noise."):
            for start in range(0, rows.numel(), _PREDICT_BLOCK):
                idx = rows[start : start + _PREDICT_BLOCK]
                dist = model(x[idx])
                m, v = dist.mean, dist.variance
                if m.dim() == 2:
                    m, v = m.mT, v.mT
                mean[idx], var[idx] = m, v.clamp_min(0) + noise
            if empty.any():
                warnings.warn(
                    f"{int(empty.sum())} of {x.shape[0]} documents have no known word: predicted with the prior",
                    EmptyDocumentsWarning,
                    stacklevel=2,
                )
                train_x = model.train_inputs[0]
                prior_var = model.covar_module(train_x, diag=True).mean()
                prior_mean = model.mean_module(train_x[:1]).reshape(-1)
                mean[empty] = prior_mean.to(mean.dtype)
                var[empty] = prior_var + noise
        mean = mean.numpy() * self.y_std_ + self.y_mean_
        if not return_std:
            return mean
        return mean, np.sqrt(var.numpy()) * self.y_std_

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> None:
        """Save the fitted estimator (parameters, vocabulary, training data) with
        ``torch.save``; :meth:`load` reads it back with ``weights_only=True`` (no
        arbitrary unpickling) and predicts bit-identically."""
        check_is_fitted(self, "model_")
        params = self.get_params(deep=False)
        if not isinstance(params["embedding"], str):
            raise TypeError("save() supports the built-in embeddings ('linear', 'rbf', 'poly') only")
        params["vocabulary"] = params["vocabulary"].to_dict() if params["vocabulary"] is not None else None
        params["latent_init"] = None  # only shaped the initial state, which the saved parameters supersede
        kernel_options = params.pop("kernel_options") or {}
        if any(not isinstance(v, (int, float, str, bool, type(None))) for v in kernel_options.values()):
            raise TypeError("save() supports plain-valued kernel_options only (no prior or constraint objects)")
        payload = {
            "format": _FORMAT,
            "params": params,
            "kernel_options": kernel_options,
            "encoder": self._encoder.to_dict(),
            "train_x": self.model_.train_inputs[0].clone(),
            "train_y": self.model_.train_targets.clone(),
            "y_mean": torch.as_tensor(self.y_mean_),
            "y_std": torch.as_tensor(self.y_std_),
            "state_dict": self.model_.state_dict(),
            "fit": {
                "n_iter": self.n_iter_,
                "converged": self.converged_,
                "loss_curve": self.loss_curve_,
                "validation_curve": self.validation_curve_,
            },
        }
        torch.save(payload, Path(path))

    @classmethod
    def load(cls, path: str | Path) -> GPLVSMRegressor:
        """Load an estimator written by :meth:`save` (``torch.load(weights_only=True)``)."""
        payload = torch.load(Path(path), weights_only=True)
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(f"{path} is not a saved GPLVSMRegressor (expected format {_FORMAT!r})")
        params = dict(payload["params"])
        if params["vocabulary"] is not None:
            params["vocabulary"] = Vocabulary.from_dict(params["vocabulary"])
        params["kernel_options"] = payload["kernel_options"] or None
        est = cls(**params)
        est._encoder = DocumentEncoder.from_dict(payload["encoder"])
        est.vocabulary_ = est._encoder.vocabulary
        est.num_words_ = est._encoder.num_words
        if est._encoder.kind == "counts":
            est.n_features_in_ = est.num_words_
        est.y_mean_ = payload["y_mean"].numpy()
        est.y_std_ = payload["y_std"].numpy()
        train_y = payload["train_y"]
        targets = train_y if train_y.dim() == 1 else train_y.mT
        model = est._build_model(payload["train_x"], targets, seed=0)
        model.load_state_dict(payload["state_dict"])
        model.eval()
        est.model_, est.likelihood_ = model, model.likelihood
        fit = payload["fit"]
        est._set_fit_result(
            FitResult(
                n_iter=fit["n_iter"],
                converged=fit["converged"],
                loss_curve=list(fit["loss_curve"]),
                validation_curve=list(fit["validation_curve"]),
            ),
            warn=False,
        )
        return est

