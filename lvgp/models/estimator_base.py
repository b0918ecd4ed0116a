"""The base of lvgp's exact-GP regressors (scikit-learn estimators): input encoding, target
standardization, MAP fitting with progress and early stopping, block-wise prediction, and the
persistence hooks of :class:`~lvgp.models.mixins.SavedParamsMixin` (the mixins every estimator
shares are in :mod:`lvgp.models.mixins`)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Self

import gpytorch
import linear_operator
import numpy as np
import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import ScaleKernel
from gpytorch.models.exact_prediction_strategies import DefaultPredictionStrategy
from gpytorch.utils.warnings import GPInputWarning
from linear_operator import to_dense, to_linear_operator
from linear_operator.operators import MatmulLinearOperator
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._random import Streams, torch_generator
from .._typing import Documents, TensorLike
from ..base.constraints import RUNTIME, Boolean, Options, Real, check_params, documents_input
from ..base.device import check_device, state_to_cpu, to_host
from ..base.encoding import BagOfWordsInputMixin, DocumentEncoder, empty_rows
from ..base.fit_options import (
    LBFGS,
    Adam,
    EarlyStopping,
    FitOptions,
    FitOptionsArgument,
    FitOptionsMixin,
)
from ..base.fitting import BestOfWindowStopping, FitResult, fit_adam, minimize
from ..base.numerics import NOISE_FLOOR, covariance_errors, exact_numerics, warn_about_fitted_noise
from ..base.snapshot import KeptResult, gp_state
from ..base.splits import early_stopping_split
from ..base.targets import check_targets_array
from ..base.validation import standardization
from ..bow.padded import RaggedIds
from ..kernels.spec import variational_word_vectors
from ..warnings import EmptyDocumentsWarning
from ..warnings import warn as warn_user
from . import prediction_blocks
from .exact import MEANS, LogPosterior, SharedKernelExactGP
from .mixins import SavedParamsMixin
from .part_selection import PartSelectionMixin, fixed_draws
from .prediction_blocks import RaggedDocuments

if TYPE_CHECKING:
    from ..kernels.word_vectors import WordVectors

#: the most memory a variational regressor keeps between predictions for its training-set
#: factorizations, one per Monte Carlo sample of its word vectors (estimated at 3 n^2 numbers each: the
#: kernel matrix, its Cholesky factor and the predictive variances' cache); above it, every call
#: factorizes again
KEPT_PREDICTION_BYTES = 2**29
#: the streams of a fit, drawn by position from ``random_state`` before they had names (their values
#: kept): the initialization, the Monte Carlo predictions' draws, the validation split
_FIT_STREAMS = ("initialization", "predictive draws", "validation split")


class _KeptFactorStrategy(DefaultPredictionStrategy):
    """gpytorch's exact prediction strategy, whose predictive covariances solve with one kept Cholesky
    factor of the noisy training covariance: gpytorch's own builds that operator and factorizes it again at
    every call (``exact_predictive_covar`` with ``fast_pred_var`` off; its ``solve`` rebuilds the operator,
    so a factor cached on it is not found). The same operations, hence the same numbers, as its Cholesky
    solve; what a kept strategy of :meth:`ExactGPRegressorBase._kept_strategies` becomes (predictions
    only: no gradient flows through the kept factor)."""

    def exact_predictive_covar(self, test_test_covar: Any, test_train_covar: Any) -> Any:
        n = self.train_prior_dist.lazy_covariance_matrix.size(-1)
        by_cholesky = linear_operator.settings.fast_computations.solves.off() or (
            n <= linear_operator.settings.max_cholesky_size.value()
        )
        if (
            gpytorch.settings.fast_pred_var.on()
            or gpytorch.settings.skip_posterior_variances.on()
            or not by_cholesky
            or torch.is_grad_enabled()
        ):
            return super().exact_predictive_covar(test_test_covar, test_train_covar)
        factor = self.__dict__.get("_kept_factor")
        if factor is None:  # gpytorch's operator, factorized once
            prior = self.train_prior_dist
            dist = prior.__class__(torch.zeros_like(prior.mean), prior.lazy_covariance_matrix)
            factor = self.likelihood(dist, self.train_inputs).lazy_covariance_matrix.detach().cholesky()
            self._kept_factor = factor
        test_train = to_dense(test_train_covar)
        correction = factor._cholesky_solve(test_train.transpose(-1, -2))
        if torch.is_tensor(test_test_covar):
            if test_test_covar.dim() == 2:
                return to_linear_operator(torch.addmm(test_test_covar, test_train, correction, beta=1, alpha=-1))
            return to_linear_operator(test_test_covar + test_train @ correction.mul(-1))
        return test_test_covar + MatmulLinearOperator(test_train, correction.mul(-1))


class ExactGPRegressorBase(
    PartSelectionMixin, FitOptionsMixin, SavedParamsMixin, BagOfWordsInputMixin, RegressorMixin, BaseEstimator
):
    """Base class: subclasses define ``__init__`` (storing their arguments, scikit-learn
    style) with at least the options used here (``optimizer``, an :class:`~lvgp.LBFGS` or
    :class:`~lvgp.Adam` whose unset fields come from :attr:`_optimizer_defaults`; ``early_stopping``;
    ``normalize_y``, ``vocabulary``, ``num_words``, ``random_state``, ``verbose``, ``noise_init``,
    ``outputscale_init``, ``device``) and implement :meth:`_model_inputs` and :meth:`_build_model`.

    The model is built on the CPU from the encoded documents, then moved with ``.to(device)``
    (gpytorch's ``ExactGP`` moves its training data with it); inputs go to the device block by
    block at prediction time, and results come back to the host once."""

    _name = "GP"
    _fit_hint = "Try a larger noise_init."

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: ``y`` of shape ``n x B`` fits ``B`` outputs (a column vector one, no warning)."""
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    #: whether documents without any known word are predicted with the prior (else the model handles them)
    _empty_documents_use_prior = True
    #: whether training documents without any known word are fitted (a part of the model reads the
    #: texts themselves, e.g. a sentence encoder) rather than refused
    _fits_empty_documents = False
    #: the estimator's ``on_empty`` for the others (:meth:`DocumentEncoder.fit_transform`): ``None`` where it has none
    _on_empty: str | None = None

    # ------------------------------------------------------------------ subclass hooks
    def _model_inputs(self, x: torch.Tensor) -> torch.Tensor:
        """Model inputs for an ``n x L`` padded tensor."""
        raise NotImplementedError

    def _documents(self, x: torch.Tensor, X: Documents, name: str) -> torch.Tensor:
        """What the estimator computes with for the encoded documents ``x`` of ``X``: ``x`` itself,
        or (a sentence encoder) ``x`` packed with the encoder's vectors of the texts."""
        return x

    def _word_ids(self, x: torch.Tensor) -> torch.Tensor:
        """The padded word ids of documents :meth:`_documents` returned (for the empty-document policy)."""
        return x

    def _document_features(self, X: Documents, name: str) -> torch.Tensor | None:
        """What :meth:`_documents` packs beside the word ids of the texts ``X`` (a sentence encoder's ``n x d``
        vectors), or ``None``: for documents padded block by block (:class:`RaggedDocuments`)."""
        return None

    def _build_model(
        self, inputs: torch.Tensor, targets: torch.Tensor, seed: int, state_dict: dict | None = None
    ) -> SharedKernelExactGP:
        """A float64 model on the training inputs and standardized targets (``state_dict``:
        the saved state :meth:`load` will restore, for models whose shapes depend on it)."""
        raise NotImplementedError

    _first_format_version = 1  # files of lvgp 0.1 load
    _optimizer_defaults: tuple[FitOptions, ...] = (
        LBFGS(max_iter=300, tol=1e-7),
        Adam(max_iter=300, lr=0.05, tol=1e-7, convergence_window=20),
    )
    _early_stopping_default = EarlyStopping(validation_fraction=0.1, n_iter_no_change=20, policy="keep-best")

    def _validation_interval(self, stopping: EarlyStopping) -> int:
        """Score the validation set every this many iterations (``early_stopping.validation_interval``,
        default 1)."""
        return 1 if stopping.validation_interval is None else int(stopping.validation_interval)

    @classmethod
    def _legacy_optimizer_kind(cls, flat: dict[str, Any], params: dict[str, Any]) -> type[FitOptions]:
        return Adam if flat.get("optimizer") == "adam" else LBFGS

    def _latent_samples(self, purpose: str) -> int:
        """Monte Carlo samples of the latent quantities per objective evaluation or
        prediction (``purpose``: ``"train"``, ``"predict"`` or ``"validate"``); 1 for
        point-estimated models."""
        return 1

    def _draw_latent_sample(self, generator: torch.Generator | None) -> None:
        """Fix one sample of the latent quantities (``None``: back to their means)."""

    def _word_embeddings(self) -> Any:
        """Pretrained embeddings the encoder looks words up in (``None``: none)."""
        return None

    def _word_vectors(self) -> WordVectors | None:
        """The fitted model's word-vector module whose extra words take unseen words with
        pretrained vectors at prediction time (``None``: unseen words are dropped)."""
        return None

    def _init_hyperparameters(self, model: SharedKernelExactGP) -> None:
        # float64 tensors: gpytorch's setters turn Python floats into float32 first
        model.likelihood.noise = torch.tensor(float(self.noise_init), dtype=torch.float64)
        if isinstance(model.covar_module, ScaleKernel):  # a user kernel brings its own scales
            model.covar_module.outputscale = torch.tensor(float(self.outputscale_init), dtype=torch.float64)

    # ------------------------------------------------------------------ fitting
    #: the parameters every exact-GP regressor has (subclasses extend it)
    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        **documents_input(),
        "optimizer": [None, FitOptionsArgument(LBFGS, Adam, name="optimizer")],
        "early_stopping": [Boolean(), FitOptionsArgument(EarlyStopping, name="early_stopping")],
        "normalize_y": [Boolean()],
        # the Gaussian likelihood's noise constraint is > 1e-4 (standardized units): nothing at or below it
        "noise_init": [Real(NOISE_FLOOR, open_low=True)],
        "outputscale_init": [Real(0, open_low=True)],
        "mean": [Options(*MEANS)],
    }

    def _check_params(self) -> None:
        check_params(self)

    def fit(
        self,
        X: Documents,
        y: TensorLike,
        X_val: Documents | None = None,
        y_val: TensorLike | None = None,
        unlabeled: Documents | None = None,
    ) -> Self:
        """Fit on training documents ``X`` (texts, counts or a padded tensor) and targets
        ``y`` (``n`` or ``n x B``). ``X_val``/``y_val``: a validation set for early
        stopping (otherwise ``early_stopping`` holds out ``validation_fraction``).
        ``unlabeled``: further texts that ``word_embeddings="corpus"`` learns word vectors from."""
        self._check_params()
        self._kept_predictions = KeptResult()
        stopping = self._early_stopping_options()
        policy = None if stopping is None else stopping.policy
        self._encoder = DocumentEncoder(self.vocabulary, self.num_words, self._word_embeddings())
        x = self._encoder.fit_transform(
            X, unlabeled=unlabeled, allow_empty=self._fits_empty_documents, on_empty=self._on_empty
        )
        x = self._documents(x, X, "X")
        n = x.shape[0]
        y_train = check_targets_array(y, n)
        self.vocabulary_ = self._encoder.vocabulary
        self.num_words_ = self._encoder.num_words
        if self._encoder.kind == "counts":
            self.n_features_in_ = self.num_words_
        # the initialization's seed, the Monte Carlo predictions' (variational models), the validation split's
        streams = Streams(self.random_state, positions=_FIT_STREAMS)
        seed, self._sample_seed, split_seed = (streams.seed(name) for name in _FIT_STREAMS)

        x_val: torch.Tensor | None = None
        y_val_arr: np.ndarray | None = None
        x_all, y_all = x, y_train
        if X_val is not None or y_val is not None:
            if X_val is None or y_val is None:
                raise ValueError("pass both X_val and y_val, or neither")
            x_val = self._documents(self._encoder.transform(X_val, "X_val"), X_val, "X_val")
            y_val_arr = check_targets_array(y_val, x_val.shape[0], "y_val")
        elif policy is not None:
            assert stopping is not None
            train_idx, val_idx = early_stopping_split(n, float(stopping.validation_fraction), split_seed)
            x_val, y_val_arr = x[torch.from_numpy(val_idx)], y_train[val_idx]
            x, y_train = x[torch.from_numpy(train_idx)], y_train[train_idx]
        result = self._fit_parts(lambda: self._fit_model(x, y_train, seed, x_val, y_val_arr), x.shape[0])
        if policy == "refit" and X_val is None and result.best_iter:
            # the best iteration count of the held-out fit, on all the training documents
            result = self._fit_model(x_all, y_all, seed, None, None, max_iter=result.best_iter)
        self._set_fit_result(result)
        self.model_.eval()
        self._check_uncertainty(x_val, y_val_arr)
        return self

    #: what an :class:`~lvgp.warnings.UncertaintyWarning` advises
    _calibration_advice = "a larger noise_init will not help: the maximum of the marginal likelihood is there"

    def _check_uncertainty(self, x_val: torch.Tensor | None, y_val: np.ndarray | None) -> None:
        """An :class:`~lvgp.warnings.UncertaintyWarning` when the fitted noise sits at its floor (the
        model interpolates its training targets: its intervals are too narrow), or when fewer than
        70% of the held-out targets (``X_val``/``y_val``, or early stopping's part) fall inside the
        95% predictive intervals."""
        from ..base.metrics import interval_coverage
        from ..warnings import UncertaintyWarning

        warn_about_fitted_noise(
            self._name, self.likelihood_.noise, self._calibration_advice, standardized=bool(self.normalize_y)
        )
        if x_val is None or y_val is None or len(y_val) < 10:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean, var = self._predict_encoded(x_val, include_noise=True)
        target = (np.asarray(y_val) - self.y_mean_) / self.y_std_
        covered = interval_coverage(target.ravel(), to_host(mean).ravel(), np.sqrt(to_host(var)).ravel())[0.95]
        if covered < 0.7:
            warn_user(
                f"{self._name}: {covered:.0%} of the {len(y_val)} held-out targets fall inside the 95% predictive "
                f"intervals (a calibrated model: about 95%). {self._calibration_advice}",
                UncertaintyWarning,
            )

    def _fit_model(
        self,
        x: torch.Tensor,
        y_train: np.ndarray,
        seed: int,
        x_val: torch.Tensor | None,
        y_val_arr: np.ndarray | None,
        max_iter: int | None = None,
    ) -> FitResult:
        """Standardize ``y_train``, build the model on ``x`` and fit it (scored on the validation
        set when given, keeping the best iterate) with ``max_iter`` (default: the estimator's)."""
        if self.normalize_y:
            self.y_mean_, self.y_std_ = standardization(y_train)
        else:
            self.y_mean_, self.y_std_ = np.zeros(y_train.shape[1:]), np.ones(y_train.shape[1:])
        targets = torch.from_numpy((y_train - self.y_mean_) / self.y_std_)
        if not torch.isfinite(targets).all():
            raise ValueError("y is too large to fit without standardization: pass normalize_y=True")
        device = check_device(self.device)
        model = self._build_model(self._model_inputs(x), targets, seed).to(device)
        self.model_, self.likelihood_, self.device_ = model, model.likelihood, device
        mll = LogPosterior(model.likelihood, model)
        model.train()
        train_inputs = model.train_inputs[0]

        samples = self._latent_samples("train")
        optimizer, stopping = self._optimizer_options(), self._stopping()
        hint = self._fit_hint
        if isinstance(optimizer, Adam):  # a step too large can leave every start of the jitter behind
            hint += f" If Adam's steps moved the parameters far (lr={optimizer.lr}), lower lr."

        def objective() -> torch.Tensor:
            # a Monte Carlo average for variational models (each training forward draws a sample)
            with covariance_errors(f"{self._name} training", hint):
                return -sum(mll(model(train_inputs), model.train_targets) for _ in range(samples)) / samples

        validate = None
        if x_val is not None and y_val_arr is not None:
            validate = self._validation_score(x_val, y_val_arr)
        params = [p for p in model.parameters() if p.requires_grad]
        budget = int(optimizer.max_iter if max_iter is None else max_iter)
        if self._stochastic_objective() or isinstance(optimizer, Adam):  # torch's optimizer: the one torch loop
            return self._fit_adam(params, objective, budget, validate)
        return minimize(
            params,
            objective,
            max_iter=budget,
            tol=float(optimizer.tol),
            validate=validate,
            validation_interval=self._validation_interval(stopping),
            n_iter_no_change=int(stopping.n_iter_no_change),
            verbose=self.verbose,
            desc=self._name,
        )

    @contextlib.contextmanager
    def _training_draws(self) -> Iterator[int]:
        """The fitted model in training mode without gradients, its variational word vectors drawing from
        one stream seeded like the predictions' (the same for every sub-composition of ``part_selection``);
        yields the number of draws to average: the predictions' with variational word vectors, else 1."""
        vectors = variational_word_vectors(self.model_)
        self.model_.train()
        with torch.no_grad(), fixed_draws(vectors, self._sample_seed):
            yield self._latent_samples("predict") if vectors else 1

    def _fitted_log_evidence(self) -> float:
        """The fitted objective times ``n``: the log marginal likelihood plus the log priors (eq. 11), or
        with variational word vectors the ELBO, its Monte Carlo average (:meth:`_training_draws`)."""
        model = self.model_
        mll = LogPosterior(model.likelihood, model)
        inputs = model.train_inputs[0]
        with self._training_draws() as draws:
            total = sum(float(mll(model(inputs), model.train_targets)) for _ in range(draws))
        return total / draws * inputs.shape[-2]

    def _loo_log_predictive(self) -> torch.Tensor:
        r"""The ``n`` leave-one-out log predictive densities of the standardized training targets (Rasmussen &
        Williams, eqs. 5.10-5.12): with :math:`\mathbf K_y` the covariance plus the noise and
        :math:`\boldsymbol\alpha = \mathbf K_y^{-1}(\mathbf y - \mathbf m)`, document :math:`i`'s target
        given the others is :math:`\mathcal N(y_i - \alpha_i / [\mathbf K_y^{-1}]_{ii},\ 1 / [\mathbf
        K_y^{-1}]_{ii})`; a document's outputs summed (one factorization for outputs that share the
        covariance, as :class:`~lvgp.models.exact.LogPosterior`). With variational word vectors, the
        density of the mixture over the draws of :meth:`_training_draws` (one factorization a draw)."""
        model = self.model_
        inputs = model.train_inputs[0]
        log_densities = []
        with self._training_draws() as draws, exact_numerics():
            for _ in range(draws):
                with covariance_errors(f"{self._name} leave-one-out", self._fit_hint):
                    prior = model(inputs)
                    covar = prior.lazy_covariance_matrix
                    shared = prior.mean.dim() == 2 and covar.dim() == 2  # B outputs, one n x n covariance
                    one = MultivariateNormal(prior.mean[0], covar) if shared else prior
                    covariance = model.likelihood(one).covariance_matrix  # n x n
                    precision = torch.cholesky_inverse(torch.linalg.cholesky(covariance))
                residual = model.train_targets - prior.mean  # n, or B x n
                alpha = (precision @ residual.unsqueeze(-1)).squeeze(-1)
                diag = precision.diagonal(dim1=-2, dim2=-1)
                log_densities.append(-0.5 * (torch.log(2 * math.pi / diag) + alpha**2 / diag))
        stacked = torch.stack(log_densities)  # draws x (B x) n
        mixture = torch.logsumexp(stacked, 0) - math.log(draws)
        return mixture if mixture.dim() == 1 else mixture.sum(0)  # a document's outputs together

    def _stochastic_objective(self) -> bool:
        """Whether the objective is a Monte Carlo estimate (variational latent quantities): fitted by
        :func:`~lvgp.base.fitting.fit_stochastic`, else by :func:`~lvgp.base.fitting.minimize`."""
        return False

    def _fit_adam(
        self,
        params: list[torch.nn.Parameter],
        objective: Callable[[], torch.Tensor],
        max_iter: int,
        validate: Callable[[], float] | None,
    ) -> FitResult:
        """Adam on the full-batch objective (deterministic, or the Monte Carlo one of variational word
        vectors) in the one torch loop, :func:`~lvgp.base.fitting.fit_stochastic`: stopped by
        :class:`~lvgp.base.fitting.BestOfWindowStopping` (the optimizer's ``convergence_window`` and
        ``tol``) and by the validation score's patience (``early_stopping``'s ``n_iter_no_change``,
        scored every ``validation_interval`` iterations, the best iterate kept)."""
        optimizer, stopping = self._optimizer_options(), self._stopping()
        uses_adam = isinstance(optimizer, Adam)  # (a flag: the filled fields are no longer optional)
        if not uses_adam:
            raise ValueError(f"{self._name}: a Monte Carlo objective needs optimizer=lvgp.Adam(...)")
        return fit_adam(
            params,
            objective,
            lr=float(optimizer.lr),
            max_iter=max_iter,
            rule=BestOfWindowStopping(int(optimizer.convergence_window), float(optimizer.tol)),
            what=self._name,
            validate=validate,
            validation_interval=self._validation_interval(stopping),
            n_iter_no_change=int(stopping.n_iter_no_change),
            warn=False,  # the estimator warns once, in _set_fit_result
            advice="lower lr or raise rho",
            desc=self._name,
            verbose=self.verbose,
        )

    def _validation_score(self, x_val: torch.Tensor, y_val: np.ndarray) -> Callable[[], float]:
        """RMSE (standardized units) of the predictive mean on a validation set, as a closure."""
        keep = (
            ~empty_rows(self._word_ids(x_val))
            if self._empty_documents_use_prior
            else torch.ones(x_val.shape[0], dtype=torch.bool)
        )
        if not keep.any():
            raise ValueError(
                f"early stopping: none of the {x_val.shape[0]} validation documents has a known word, so none can "
                "score the fit; pass X_val and y_val, a larger validation_fraction, or early_stopping=False"
            )
        if not keep.all():
            warn_user(
                f"{int((~keep).sum())} validation documents have no known word and are left out of early stopping",
                EmptyDocumentsWarning,
                stacklevel=3,
            )
        x_keep = x_val[keep]
        target = torch.from_numpy(np.asarray((y_val[keep.numpy()] - self.y_mean_) / self.y_std_)).to(self.device_)
        model = self.model_

        def score() -> float:
            model.eval()
            try:
                mean, _ = self._moments(x_keep, self._latent_samples("validate"), variances=False)
            finally:
                model.train()
            return float(torch.sqrt(torch.mean((mean - target) ** 2)))

        return score

    def _moments(
        self, x: torch.Tensor | RaggedDocuments, samples: int, variances: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Predictive mean and variance of the latent f (standardized units), ``n`` or
        ``n x B``, for non-empty padded documents ``x`` (or documents padded block by block,
        :class:`RaggedDocuments`: the blocks padded once for all samples): exact GP moments, or with
        ``samples > 1`` the moments of the equal-weight mixture over Monte Carlo samples of
        the latent quantities (mean of means; mean of variances plus variance of means).
        Samples come from a generator seeded at fit time, so predictions are reproducible.
        ``variances=False``: the means alone (gpytorch's ``skip_posterior_variances``: no solve
        against the training covariance for them), the variances NaN."""
        model = self.model_
        n = len(x) if isinstance(x, RaggedDocuments) else x.shape[0]
        shape = (n,) if model.num_outputs == 1 else (n, model.num_outputs)
        device = self.device_
        blocks: list[tuple[Any, torch.Tensor]]
        if isinstance(x, RaggedDocuments):
            blocks = [(rows.to(device), xb) for rows, xb in x.blocks()]
        else:
            size = prediction_blocks.PREDICT_BLOCK
            blocks = [(slice(a, a + size), x[a : a + size]) for a in range(0, n, size)]
        first = torch.zeros(shape, dtype=torch.float64, device=device)
        second = torch.zeros(shape, dtype=torch.float64, device=device)
        variance = torch.zeros(shape, dtype=torch.float64, device=device)
        generator = torch_generator(self._sample_seed) if samples > 1 else None
        kept = self._kept_strategies(samples) if generator is not None else None
        with (
            torch.no_grad(),
            exact_numerics(),
            covariance_errors(f"{self._name} prediction", self._fit_hint),
            warnings.catch_warnings(),
            gpytorch.settings.skip_posterior_variances(not variances),
        ):
            # predicting at the training documents is legitimate (e.g. training error)
            warnings.simplefilter("ignore", GPInputWarning)
            try:
                for sample in range(samples):
                    if generator is not None:
                        self._draw_latent_sample(generator)
                        # the training covariance changed: this sample's factorization, kept from an
                        # earlier call, or None (gpytorch computes it)
                        model.prediction_strategy = kept[sample] if kept is not None else None
                    for rows, xb in blocks:
                        dist = model(self._model_inputs(xb).to(device))
                        m = dist.mean.mT if dist.mean.dim() == 2 else dist.mean
                        first[rows] += m
                        second[rows] += m * m
                        if variances:  # (gpytorch warns of the skipped variances' zeros)
                            v = dist.variance
                            variance[rows] += (v.mT if v.dim() == 2 else v).clamp_min(0)
                    if kept is not None:
                        strategy = model.prediction_strategy
                        if type(strategy) is DefaultPredictionStrategy:  # gpytorch's own: keep its factor too
                            strategy.__class__ = _KeptFactorStrategy
                        kept[sample] = strategy
            finally:
                if generator is not None:
                    self._draw_latent_sample(None)
                    model.prediction_strategy = None
        mean = first / samples
        if not variances:
            return mean, torch.full_like(mean, math.nan)
        return mean, variance / samples + (second / samples - mean * mean).clamp_min(0)

    def _kept_strategies(self, samples: int) -> list[Any] | None:
        """The prediction strategies (gpytorch's factorization of the training covariance) of the first
        ``samples`` Monte Carlo samples of the word vectors, kept between calls while the model and its
        parameters, buffers and training data are those they were computed from (compared by value) and
        while they fit in :data:`KEPT_PREDICTION_BYTES`; an entry is ``None`` until a call computes it.
        The samples come from a generator seeded at fit time, so the k-th sample of every call is the
        same. ``None``: nothing is kept (too large). They live in a :class:`~lvgp.base.snapshot.KeptResult`
        that a fit (or a load) creates, so that predicting leaves the estimator's ``__dict__`` as it was
        (scikit-learn's convention); pickles and copies start without them."""
        box = self.__dict__.get("_kept_predictions")
        if box is None:
            return None
        n = int(self.model_.train_targets.shape[-1])
        if samples * 3 * n * n * 8 > KEPT_PREDICTION_BYTES:
            box.clear()
            return None
        state = gp_state(self.model_, self.likelihood_)  # the word vectors at their means, between calls
        return box.slots(samples, state, owners=(self.model_,), key=self._sample_seed)

    def _set_fit_result(self, result: FitResult, warn: bool = True) -> None:
        self.fit_result_ = result
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.loss_curve_ = list(result.loss_curve)
        self.validation_curve_ = list(result.validation_curve)
        if warn:
            result.warn_if_unconverged(self._name, stacklevel=3)

    # ------------------------------------------------------------------ prediction
    def predict(
        self, X: Documents, return_std: bool = False, include_noise: bool = True
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        r"""Predictive mean (GP-LVSM paper eq. 19) and, with ``return_std``, standard
        deviation (eq. 21).

        Eq. 21 uses :math:`K_{**}` of eq. 8, which includes the noise :math:`\beta^{-1}`:
        the default ``include_noise=True`` gives the standard deviation of a new target
        :math:`y_*`; ``include_noise=False`` that of the latent :math:`f_*`.

        Unseen words are dropped with a counted :class:`~lvgp.warnings.UnseenWordsWarning`,
        except, for models tied to pretrained embeddings, words that have a pretrained vector:
        they enter with their embedding-implied latent vector (:meth:`DocumentEncoder.predicting`).
        For models whose kernel needs at least one word (GP-LVSM), documents without any
        known word carry no information: they get the prior mean and the prior standard
        deviation of an average training document (``outputscale * mean(diag K(train))``,
        plus noise), with an :class:`~lvgp.warnings.EmptyDocumentsWarning` counting them.

        Texts are padded block by block, each block of like lengths to its own longest
        (:meth:`DocumentEncoder.predicting_unpadded`), not all to the longest of them: the same predictions
        to rounding, at a fraction of the time and memory where a few texts are much longer than the rest.

        Returns:
            ``mean`` (``n`` or ``n x B``) or ``(mean, std)``, numpy, in target units.
        """
        check_is_fitted(self, "model_")
        # texts unpadded, each block padded to its own longest (a padded corpus is as wide as its longest text)
        with self._encoder.predicting_unpadded(X, self._word_vectors()) as x:
            docs = (
                RaggedDocuments(x, self._document_features(X, "X"))
                if isinstance(x, RaggedIds)
                else self._documents(x, X, "X")
            )
            mean, var = self._predict_encoded(docs, include_noise, variances=return_std)
        mean = to_host(mean) * self.y_std_ + self.y_mean_
        if not return_std:
            return mean
        return mean, np.sqrt(to_host(var)) * self.y_std_

    def _predict_encoded(
        self, x: torch.Tensor | RaggedDocuments, include_noise: bool, variances: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Predictive mean and variance (standardized units, on the model's device) of documents
        ``x`` (on the host; :meth:`_documents`, or :class:`RaggedDocuments`); ``variances=False``: the means
        alone (the variances of the documents with a known word NaN, :meth:`_moments`)."""
        n = len(x) if isinstance(x, RaggedDocuments) else x.shape[0]
        if not self._empty_documents_use_prior:
            empty = torch.zeros(n, dtype=torch.bool)
        else:
            empty = x.lengths == 0 if isinstance(x, RaggedDocuments) else empty_rows(self._word_ids(x))
        model, lik = self.model_, self.likelihood_
        model.eval()
        shape = (n,) if model.num_outputs == 1 else (n, model.num_outputs)
        mean = torch.empty(shape, dtype=torch.float64, device=self.device_)
        var = torch.empty(shape, dtype=torch.float64, device=self.device_)
        noise = lik.noise.detach().reshape(()) if include_noise else 0.0
        rows = torch.nonzero(~empty)[:, 0]
        if rows.numel():
            docs = x.take(rows) if isinstance(x, RaggedDocuments) else x[rows]
            m, v = self._moments(docs, self._latent_samples("predict"), variances)
            rows = rows.to(self.device_)
            mean[rows], var[rows] = m, v + noise
        if empty.any():
            warn_user(
                f"{int(empty.sum())} of {n} documents have no known word: predicted with the prior",
                EmptyDocumentsWarning,
                stacklevel=3,
            )
            with torch.no_grad(), exact_numerics():
                train_inputs = model.train_inputs[0]
                prior_var = model.covar_module(train_inputs, diag=True).mean()
                empty = empty.to(self.device_)
                mean[empty] = model.mean_module(train_inputs[:1]).reshape(-1).to(mean.dtype)
                var[empty] = prior_var + noise
        return mean, var

    # ------------------------------------------------------------------ persistence
    def _fitted_payload(self) -> dict:
        """The parameters of the fitted model, the document encoder (vocabulary) and the training
        data (:class:`~lvgp.models.mixins.SavedParamsMixin`'s hook)."""
        return {
            "encoder": self._encoder.to_dict(),
            "train_inputs": state_to_cpu(self.model_.train_inputs[0]).clone(),
            "train_targets": state_to_cpu(self.model_.train_targets).clone(),
            "y_mean": torch.as_tensor(self.y_mean_),
            "y_std": torch.as_tensor(self.y_std_),
            "sample_seed": self._sample_seed,
            **self._saved_parts(),
            "state_dict": state_to_cpu(self.model_.state_dict()),
            "fit": dataclasses.asdict(self.fit_result_),
            "encode_seconds": getattr(self, "encode_seconds_", None),
        }

    def _restore_fitted(self, payload: dict) -> None:
        """The hook's inverse: the model rebuilt from the saved training data and parameters, its
        saved state loaded, on the estimator's device."""
        est = self
        est._encoder = DocumentEncoder.from_dict(payload["encoder"])
        est.vocabulary_ = est._encoder.vocabulary
        est.num_words_ = est._encoder.num_words
        if est._encoder.kind == "counts":
            est.n_features_in_ = est.num_words_
        est.y_mean_ = payload["y_mean"].numpy()
        est.y_std_ = payload["y_std"].numpy()
        est._sample_seed = payload["sample_seed"]
        est._kept_predictions = KeptResult()
        est._parts = None if payload.get("parts") is None else tuple(payload["parts"])
        targets = payload["train_targets"]
        model = est._build_model(
            payload["train_inputs"],
            targets if targets.dim() == 1 else targets.mT,
            seed=0,
            state_dict=payload["state_dict"],
        )
        model.load_state_dict(payload["state_dict"])
        est.device_ = check_device(est.device)
        model = model.to(est.device_)
        model.eval()
        est.model_, est.likelihood_ = model, model.likelihood
        est._set_fit_result(FitResult(**payload["fit"]), warn=False)
        if payload.get("encode_seconds") is not None:
            est.encode_seconds_ = payload["encode_seconds"]
        est._restore_parts(payload)
