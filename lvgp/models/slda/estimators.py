"""scikit-learn estimators for supervised LDA and its baselines.

``SLDARegressor`` / ``SLDAClassifier`` fit sLDA by Pyro SVI (``inference="svi"``, every GLM
response) or, for a Gaussian response, by the paper's variational EM (``inference="em"``).
``LDARegression`` is the paper's two-stage baseline: unsupervised LDA (variational EM),
then least squares on the documents' expected topic frequencies.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, Self

import numpy as np
import pyro
import torch
from pyro.infer import Trace_ELBO
from pyro.optim import ClippedAdam
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression
from sklearn.utils.validation import check_is_fitted

from ..._random import NUMERICS_SEED, Streams, numpy_generator, seeded_torch
from ..._typing import Documents, TensorLike
from ...base.constraints import RUNTIME, Boolean, Instance, Integer, Options, RandomState, Real, check_params
from ...base.device import check_device, state_to_cpu, to_host
from ...base.encoding import BagOfWordsInputMixin, DocumentEncoder
from ...base.fit_options import EM, FitOptions, FitOptionsArgument, FitOptionsMixin, MiniBatch
from ...base.fitting import PlateauStopping, fit_stochastic
from ...base.novelty import ProbabilityNoveltyMixin
from ...base.numerics import warn_about_fitted_noise
from ...base.persistence import classes_from_plain, classes_to_plain
from ...base.pyro import svi_step
from ...base.targets import check_labels, check_targets_array
from ...base.validation import standardization
from ...bow.padded import PAD
from ...bow.vocabulary import Vocabulary
from ...warnings import EmptyDocumentsWarning, warn
from ..mixins import SavedParamsMixin
from .em import SupervisedLDAEM
from .pyro_model import SupervisedLDA

INFERENCE = ("svi", "em")


def _check_docs(x: torch.Tensor, name: str = "X") -> np.ndarray:
    empty = (x == PAD).all(-1)
    if empty.any():
        rows = torch.nonzero(empty)[:, 0][:10].tolist()
        raise ValueError(f"{name} holds empty documents (no word in the vocabulary) in rows {rows}")
    return x.numpy()


class _TopicModelBase(SavedParamsMixin, BagOfWordsInputMixin, BaseEstimator):
    """Shared input handling, SVI loop, inspection and persistence (``save``/``load``: the
    vocabulary, the inference engine's parameters, the Pyro model's state where SVI fitted it, and
    the fitted attributes; a loaded estimator predicts bit-identically)."""

    _response = "gaussian"
    _fitted_attribute = "engine_"
    _saved_attributes: tuple[str, ...] = ("fit_seconds_", "loss_curve_", "n_iter_", "converged_", "_response")

    def _fitted_payload(self) -> dict:
        return {
            "encoder": self._encoder.to_dict(),
            "engine": self.engine_.to_state(),
            "attributes": self._attribute_values(),
        }

    def _restore_fitted(self, payload: dict) -> None:
        self._encoder = DocumentEncoder.from_dict(payload["encoder"])
        self.vocabulary_ = self._encoder.vocabulary
        self.n_words_ = self._encoder.num_words
        self.engine_ = SupervisedLDAEM.from_state(payload["engine"])
        self._restore_attributes(payload["attributes"])

    def _encode_fit(self, X: Documents) -> np.ndarray:
        self._encoder = DocumentEncoder(self.vocabulary, None)
        x = self._encoder.fit_transform(X)
        self.vocabulary_ = self._encoder.vocabulary
        self.n_words_ = self._encoder.num_words
        return _check_docs(x)

    def _encode(self, X: Documents) -> np.ndarray:
        check_is_fitted(self, "engine_")
        x = self._encoder.transform(X)
        empty = (x == PAD).all(-1)
        if empty.any():
            warn(
                f"{int(empty.sum())} of {len(x)} documents have no word seen in training: given the prior topic "
                "proportions alpha / sum(alpha)",
                EmptyDocumentsWarning,
                stacklevel=3,
            )
        return x.numpy()

    def _warn_if_unconverged(self, what: str, unit: str, hint: str) -> None:
        """A ``ConvergenceWarning``, pointing at the caller of ``fit``, when the budget ended the fit."""
        if not self.converged_:
            warn(f"{what} did not converge in {self.n_iter_} {unit}; {hint}", ConvergenceWarning, stacklevel=3)

    #: the parameters the sLDA estimators share (each class adds its own)
    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        "optimizer": [None, FitOptionsArgument(MiniBatch, name="optimizer")],
        "n_topics": [Integer(1)],
        "alpha": [None, Real(0, open_low=True)],
        "learn_alpha": [Boolean()],
        "sweeps": [Integer(1)],
        "vocabulary": [None, Instance(Vocabulary, name="an lvgp.Vocabulary")],
    }

    def _check_common(self) -> None:
        check_params(self)

    def _words(self) -> list[str]:
        return self.vocabulary_.words if self.vocabulary_ is not None else [str(i) for i in range(self.n_words_)]

    def _seen(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(x[x != PAD], minlength=self.n_words_) > 0

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import TransformerTags

        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()  # transform(): documents -> topic frequencies
        return tags

    def transform(self, X: Documents) -> np.ndarray:
        """Expected topic frequencies E_q[z-bar] (n x K), from the E-step without the response."""
        x = self._encode(X)  # checks that the model is fitted
        return self.engine_.transform(x)

    def fit_transform(self, X: Documents, y: TensorLike) -> np.ndarray:
        """``fit(X, y)``, then the topic frequencies of ``X`` (:meth:`transform`)."""
        return self.fit(X, y).transform(X)

    def heldout_log_likelihood_per_word(self, X: Documents) -> float:
        """Variational lower bound of the held-out per-word log likelihood."""
        x = self._encode(X)
        return self.engine_.heldout_log_likelihood_per_word(x)

    def _top_words(self, n_words: int) -> list[list[str]]:
        words = np.array(self._words())
        return [words[np.argsort(-row)[:n_words]].tolist() for row in self.engine_.log_beta_]


#: the candidate scales of the EM's initial eta (``SLDARegressor(em_eta_scale="auto")``), in the
#: order ties are broken: the paper's 1 first
EM_ETA_SCALES = (1.0, 0.5, 0.25)


class _SVITopicModel(FitOptionsMixin, _TopicModelBase):
    """A topic model fitted by Pyro SVI over mini-batches: ``optimizer=`` a :class:`~lvgp.MiniBatch`."""

    _optimizer_defaults: tuple[FitOptions, ...] = (
        MiniBatch(batch_size=256, max_epochs=200, lr=0.02, tol=1e-3, convergence_window=3),
    )
    _unused_optimizer_fields = ("max_steps", "ngd_lr", "compile")
    _saved_attributes = (*_TopicModelBase._saved_attributes, "alpha_", "eta_")

    def _fitted_payload(self) -> dict:
        payload = super()._fitted_payload()
        if hasattr(self, "model_"):  # the SVI's Pyro model (the EM has none)
            payload["model"] = {"state": state_to_cpu(self.model_.state_dict()), "n_classes": self.model_.n_classes}
        return payload

    def _restore_fitted(self, payload: dict) -> None:
        super()._restore_fitted(payload)
        if "model" in payload:
            self.device_ = check_device(self.device)
            # the module's random initial topics are drawn inside a forked stream, then overwritten
            with seeded_torch(NUMERICS_SEED), pyro.settings.context(module_local_params=True):
                model = SupervisedLDA(
                    self.n_words_,
                    self.n_topics,
                    response=self._response,
                    n_classes=payload["model"]["n_classes"],
                    alpha=self.alpha,
                    learn_alpha=self.learn_alpha,
                    sweeps=self.sweeps,
                ).double()
                model.load_state_dict(payload["model"]["state"])
            self.model_ = model.to(self.device_)

    def _fit_svi(self, x: np.ndarray, y: torch.Tensor, n_classes: int | None = None) -> None:
        # module-local parameters: Pyro would otherwise sync PyroModule parameters with its
        # global param store by name, across models of one process
        with pyro.settings.context(module_local_params=True):
            self._run_svi(x, y, n_classes)

    def _run_svi(self, x: np.ndarray, y: torch.Tensor, n_classes: int | None) -> None:
        seed = Streams(self.random_state).root
        # pyro samples from torch's global generator: seed it inside a forked scope, so fits are
        # reproducible and the caller's random streams (torch, numpy, random) are left as they were
        with seeded_torch(seed):
            self._svi_epochs(x, y, n_classes, numpy_generator(seed))

    def _svi_epochs(
        self, x: np.ndarray, y: torch.Tensor, n_classes: int | None, order_rng: np.random.Generator
    ) -> None:
        model = SupervisedLDA(
            self.n_words_,
            self.n_topics,
            response=self._response,
            n_classes=n_classes,
            alpha=self.alpha,
            learn_alpha=self.learn_alpha,
            sweeps=self.sweeps,
        ).double()
        if self._response == "gaussian":
            model.sigma = torch.tensor(float(y.std()) if len(y) > 1 and y.std() > 0 else 1.0, dtype=torch.float64)
        device = check_device(self.device)
        model = model.to(device)
        optimizer = self._optimizer_options()
        optim, elbo = ClippedAdam({"lr": float(optimizer.lr), "clip_norm": 10.0}), Trace_ELBO()
        ids_all, y = torch.from_numpy(x).to(device), y.to(device)
        n = len(x)
        batch = min(int(optimizer.batch_size), n)
        self.loss_curve_: list[float] = []
        self.converged_ = False
        # warm starts of the local step: every document's gamma from its previous visit
        gammas = (
            torch.full((n, self.n_topics), float(model.alpha), dtype=torch.float64)
            + torch.from_numpy((x != PAD).sum(1, keepdims=True) / self.n_topics)
        ).to(device)
        n_steps = math.ceil(n / batch)

        def epoch(it: int) -> torch.Tensor:
            order = torch.from_numpy(order_rng.permutation(n)).to(device)
            total = torch.zeros((), dtype=torch.float64, device=device)
            for start in range(0, n, batch):
                idx = order[start : start + batch]
                # the loss stays on the device: read back once per window of the stopping rule
                total += svi_step(
                    elbo, optim, model.model, model.guide, ids_all[idx], y[idx], n_docs=n, gamma_init=gammas[idx]
                )
                gammas[idx] = model.last_gamma
            return total / n_steps / n  # the negative ELBO per document

        result = fit_stochastic(
            epoch,
            max_iter=int(optimizer.max_epochs),
            rule=PlateauStopping(int(optimizer.convergence_window), float(optimizer.tol)),
            what="the sLDA ELBO",
            advice="lower lr",
            parameters=lambda: list(model.parameters()),
            budget="max_epochs",
            unit="epochs",
            warn=False,  # the estimator warns once, after its post-processing
            stacklevel=4,
            desc="sLDA",
            verbose=self.verbose,
        )
        self.loss_curve_, self.converged_ = list(result.loss_curve), result.converged
        self.n_iter_ = len(self.loss_curve_)
        if hasattr(model, "last_gamma"):
            del model.last_gamma  # the last mini-batch's scratch result, not model state
        self.model_, self.device_ = model, device
        eta = to_host(model.eta.double())
        self.alpha_ = float(model.alpha.detach())
        self.engine_ = SupervisedLDAEM.from_parameters(model.log_beta(), self.alpha_, eta, self._seen(x))
        if self._response == "gaussian":
            self.engine_.sigma2_ = float(model.sigma.detach() ** 2)


class SLDARegressor(RegressorMixin, _SVITopicModel):
    """Supervised LDA regression (Gaussian or Poisson response).

    Args:
        n_topics: K.
        response: ``"gaussian"`` or ``"poisson"`` (non-negative integer targets).
        inference: ``"svi"`` (Pyro, mini-batches) or ``"em"`` (the paper's variational EM;
            Gaussian only).
        alpha, learn_alpha: Dirichlet parameter (default 1/K, fixed).
        optimizer: ``None`` or the inference's: for ``"em"`` an :class:`~lvgp.EM` (defaults
            ``max_iter=100`` EM iterations, ``tol=1e-4``: the paper's convergence rule on the corpus
            ELBO); for ``"svi"`` a :class:`~lvgp.MiniBatch` whose unset fields take the defaults
            ``max_epochs=200`` (epochs over the documents), ``batch_size=256``, ``lr=0.02`` (Pyro's
            clipped Adam), ``tol=1e-3`` and ``convergence_window=3``: converged when the mean epoch loss
            of the last ``convergence_window`` epochs is less than ``tol`` (relative) below the mean of
            the ``convergence_window`` before (:class:`~lvgp.base.fitting.PlateauStopping`). Longer
            training lowers the held-out pR^2 on review sentences (``results/README.md``), hence the
            loose default ``tol``.
        sweeps: coordinate-ascent rounds of each document's local step, warm-started from the
            document's previous visit.
        em_eta_scale: the EM's initial eta, a grid on ``[-s, s]`` in standardized target units
            (the fit depends on it: ``results/README.md``). ``"auto"`` (default) chooses ``s`` from ``EM_ETA_SCALES`` by the
            squared error on a random 20% dev part of the training documents (fitted on the rest),
            then refits on all of them; a number fixes it.
        refit_eta: after fitting, set eta (and sigma^2) to the least-squares fit of the standardized
            targets on the training documents' topic frequencies *without* their responses -- the
            features :meth:`predict` uses (eqs. 12-13) -- instead of those of the supervised E-step.
            The paper's M-step (eq. 10) fits eta to the supervised frequencies, which on short texts
            are sharper than those prediction sees, so predictions overshoot. ``None`` (default): on
            for the SVI, off for the EM (the paper's fit); Gaussian response only. Its effect on the
            held-out pR^2: ``benchmarks/slda_tomotopy.py`` and ``benchmarks/README.md``.
        vocabulary: as for the other lvgp estimators (texts); counts or padded tensors also work.
        random_state, verbose.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`) of the Pyro SVI; the EM (``inference="em"``)
            runs in numpy on the host.

    Fitted: ``topics_`` (per topic: top words and eta, sorted by eta), ``eta_``,
    ``engine_`` (the fitted parameters' inference engine), ``loss_curve_``, ``n_iter_``; with the
    EM, ``em_eta_scale_`` (the scale used) and ``em_eta_scale_dev_mse_`` (scale -> dev squared
    error, standardized units; empty unless chosen on dev); ``refit_eta_`` (whether eta was refitted).
    """

    y_mean_: np.ndarray
    y_std_: np.ndarray
    _saved_attributes = (*_SVITopicModel._saved_attributes, "y_mean_", "y_std_", "refit_eta_", "em_eta_scale_")

    def _fitted_payload(self) -> dict:
        payload = super()._fitted_payload()
        if hasattr(self, "em_eta_scale_dev_mse_"):  # scale -> dev error: number keys, saved as pairs
            payload["em_eta_scale_dev_mse"] = [[k, v] for k, v in self.em_eta_scale_dev_mse_.items()]
        return payload

    def _restore_fitted(self, payload: dict) -> None:
        super()._restore_fitted(payload)
        if "em_eta_scale_dev_mse" in payload:
            self.em_eta_scale_dev_mse_ = {float(k): float(v) for k, v in payload["em_eta_scale_dev_mse"]}

    def __init__(
        self,
        n_topics: int = 10,
        *,
        response: str = "gaussian",
        inference: str = "svi",
        alpha: float | None = None,
        learn_alpha: bool = False,
        optimizer: MiniBatch | EM | None = None,
        sweeps: int = 3,
        em_eta_scale: float | str = "auto",
        refit_eta: bool | None = None,
        vocabulary: Vocabulary | None = None,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
    ):
        self.n_topics = n_topics
        self.response = response
        self.inference = inference
        self.alpha = alpha
        self.learn_alpha = learn_alpha
        self.optimizer = optimizer
        self.sweeps = sweeps
        self.em_eta_scale = em_eta_scale
        self.refit_eta = refit_eta
        self.vocabulary = vocabulary
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    _parameter_constraints = {
        **_TopicModelBase._parameter_constraints,
        "response": [Options("gaussian", "poisson")],
        "inference": [Options(*INFERENCE)],
        "optimizer": [None, FitOptionsArgument(MiniBatch, EM, name="optimizer")],
        "em_eta_scale": [Real(0, open_low=True), Options("auto")],
        "refit_eta": [None, Boolean()],
    }

    _optimizer_defaults = (*_SVITopicModel._optimizer_defaults, EM(max_iter=100, tol=1e-4))
    _optimizer_kind_set_by = "inference"

    def _default_optimizer_kind(self) -> type[FitOptions]:
        return EM if self.inference == "em" else MiniBatch

    def _em(self, eta_scale: float, seed: int) -> SupervisedLDAEM:
        """The EM engine, its initialization from the fit's stream ``seed``."""
        options = self._optimizer_options()
        return SupervisedLDAEM(
            self.n_topics,
            alpha=self.alpha,
            learn_alpha=self.learn_alpha,
            max_iter=int(options.max_iter),
            tol=float(options.tol),
            eta_scale=eta_scale,
            random_state=seed,
        )

    def _choose_eta_scale(self, x: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, dict[float, float]]:
        """``em_eta_scale="auto"``: each of ``EM_ETA_SCALES`` fitted on 80% of the documents and
        scored by the squared error of its predictions on the other 20%; the lowest wins (ties: the
        first listed, the paper's 1). Fewer than 10 documents: 1, unscored."""
        n = len(x)
        if n < 10:
            return 1.0, {}
        order = numpy_generator(seed).permutation(n)  # the dev part: the fit's stream
        n_dev = max(2, round(0.2 * n))
        dev, train = order[:n_dev], order[n_dev:]
        scores: dict[float, float] = {}
        for scale in EM_ETA_SCALES:
            with warnings.catch_warnings():  # dev words unseen in the 80%: dropped by design
                warnings.simplefilter("ignore")
                engine = self._em(scale, seed).fit(x[train], y[train], vocab_size=self.n_words_)
                scores[scale] = float(np.mean((engine.predict(x[dev]) - y[dev]) ** 2))
        return min(scores, key=lambda s: scores[s]), scores

    def fit(self, X: Documents, y: TensorLike) -> Self:
        self._check_common()
        if self.inference == "em" and self.response != "gaussian":
            raise ValueError("inference='em' implements the paper's Gaussian response only; use inference='svi'")
        self._response = self.response
        x = self._encode_fit(X)
        y = check_targets_array(y, len(x))
        if y.ndim != 1:
            raise ValueError("y must be one response per document")
        if self.response == "poisson" and (np.any(y < 0) or np.any(y != np.round(y))):
            raise ValueError("a Poisson response needs non-negative integer counts in y")
        # a Gaussian response is fitted standardized (any location and scale, constant targets
        # included); eta_ and predictions are in the original units: z-bar sums to one, so
        # eta_ = std * eta + mean maps the model exactly
        unit = (np.zeros(()), np.ones(()))
        self.y_mean_, self.y_std_ = standardization(y) if self.response == "gaussian" else unit
        y = (y - self.y_mean_) / self.y_std_
        start = time.perf_counter()
        if self.inference == "em":
            seed = Streams(self.random_state).root  # random_state read once: the dev split and the EM's starts
            scale, self.em_eta_scale_dev_mse_ = (
                self._choose_eta_scale(x, y, seed) if self.em_eta_scale == "auto" else (float(self.em_eta_scale), {})
            )
            self.em_eta_scale_ = scale
            self.engine_ = self._em(scale, seed).fit(x, y, vocab_size=self.n_words_)
            self.loss_curve_ = [-e for e in self.engine_.result_.elbo]
            self.n_iter_, self.converged_ = self.engine_.result_.n_iter, self.engine_.result_.converged
            self.alpha_ = self.engine_.alpha
        else:
            self._fit_svi(x, torch.from_numpy(y))
        self.fit_seconds_ = time.perf_counter() - start
        default = self.inference == "svi" and self.response == "gaussian"
        self.refit_eta_ = default if self.refit_eta is None else bool(self.refit_eta)
        if self.refit_eta_:
            self._refit_eta(x, y)
        self.eta_ = self.engine_.eta_ * self.y_std_ + self.y_mean_
        self._warn_if_unconverged(f"sLDA ({self.inference})", "iterations", "increase its budget")
        if self.response == "gaussian":  # sigma^2 of the standardized response: at its floor, at its ceiling
            warn_about_fitted_noise(
                f"sLDA ({self.inference})",
                torch.tensor(float(self.engine_.sigma2_)),
                "Constant training targets do this: predict(return_std=True) is then about 0",
            )
        return self

    def _refit_eta(self, x: np.ndarray, y: np.ndarray) -> None:
        """``refit_eta``: eta and sigma^2 by least squares on the unsupervised topic frequencies of
        the training documents ``x`` (standardized targets ``y``)."""
        if self.response != "gaussian":
            raise ValueError("refit_eta fits a Gaussian response by least squares; use refit_eta=False")
        zbar = self.engine_.transform(x)  # n x K, rows summing to 1: no intercept needed
        eta = np.linalg.lstsq(zbar, y, rcond=None)[0]
        self.engine_.eta_ = eta
        self.engine_.sigma2_ = max(float(np.mean((y - zbar @ eta) ** 2)), 1e-12)

    def predict(self, X: Documents, return_std: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        r"""The expected response :math:`\eta^\top\bar z` (Poisson: its exponential); with ``return_std``
        (Gaussian response) also the predictive standard deviation :math:`\sigma`, the fitted response
        variance's root in target units -- a plug-in that leaves out the uncertainty of the topic
        proportions :math:`\bar z` (sLDA's predictive distribution is not Gaussian in them)."""
        zbar = self.transform(X)
        lin = zbar @ self.eta_
        mean = np.exp(lin) if self.response == "poisson" else lin
        if not return_std:
            return mean
        if self.response != "gaussian":
            raise ValueError(f"return_std needs the Gaussian response; this model's is {self.response!r}")
        return mean, np.full(len(mean), np.sqrt(self.engine_.sigma2_) * self.y_std_)

    @property
    def topics_(self) -> list[dict]:
        """Per topic: its 10 most probable words and its eta, sorted by eta."""
        check_is_fitted(self, "engine_")
        rows = [{"eta": float(e), "words": w} for e, w in zip(self.eta_, self._top_words(10))]
        return sorted(rows, key=lambda r: r["eta"])


class SLDAClassifier(ProbabilityNoveltyMixin, ClassifierMixin, _SVITopicModel):
    """Supervised LDA classification by Pyro SVI: a Bernoulli (two classes) or categorical
    softmax (more) response. Same settings as :class:`SLDARegressor`, ``device`` included (no
    ``inference="em"``: the paper's closed-form E-step is for the Gaussian response)."""

    def _fitted_payload(self) -> dict:
        return {**super()._fitted_payload(), "classes": classes_to_plain(self.classes_)}

    def _restore_fitted(self, payload: dict) -> None:
        super()._restore_fitted(payload)
        self.classes_ = classes_from_plain(payload["classes"])

    def __init__(
        self,
        n_topics: int = 10,
        *,
        alpha: float | None = None,
        learn_alpha: bool = False,
        optimizer: MiniBatch | None = None,
        sweeps: int = 3,
        vocabulary: Vocabulary | None = None,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
    ):
        self.n_topics = n_topics
        self.alpha = alpha
        self.learn_alpha = learn_alpha
        self.optimizer = optimizer
        self.sweeps = sweeps
        self.vocabulary = vocabulary
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def fit(self, X: Documents, y: TensorLike) -> Self:
        self._check_common()
        x = self._encode_fit(X)
        self.classes_, labels = check_labels(y, len(x))
        self._response = "bernoulli" if len(self.classes_) == 2 else "categorical"
        codes = torch.from_numpy(labels).to(torch.float64 if self._response == "bernoulli" else torch.long)
        start = time.perf_counter()
        self._fit_svi(x, codes, n_classes=len(self.classes_) if self._response == "categorical" else None)
        self.fit_seconds_ = time.perf_counter() - start
        self.eta_ = self.engine_.eta_
        self._warn_if_unconverged("sLDA (svi)", "epochs", "increase the optimizer's max_epochs")
        return self

    def predict_proba(self, X: Documents) -> np.ndarray:
        zbar = self.transform(X)
        if self._response == "bernoulli":
            p = 1 / (1 + np.exp(-(zbar @ self.eta_)))
            return np.stack([1 - p, p], axis=1)
        lin = zbar @ self.eta_.T
        lin -= lin.max(1, keepdims=True)
        p = np.exp(lin)
        return p / p.sum(1, keepdims=True)

    def predict(self, X: Documents) -> np.ndarray:
        proba = self.predict_proba(X)  # checks that the model is fitted
        return self.classes_[np.argmax(proba, axis=1)]

    @property
    def topics_(self) -> list[dict]:
        """Per topic: its 10 most probable words and its eta (one per class beyond the first
        for a categorical response)."""
        check_is_fitted(self, "engine_")
        eta = self.eta_ if self.eta_.ndim == 2 else self.eta_[None, :]
        return [{"eta": eta[:, k].tolist(), "words": w} for k, w in enumerate(self._top_words(10))]


class LDARegression(RegressorMixin, FitOptionsMixin, _TopicModelBase):
    """The paper's two-stage baseline: unsupervised LDA by variational EM, then least squares
    of the response on the expected topic frequencies E_q[z-bar] (from the E-step).

    ``optimizer``: ``None`` or an :class:`~lvgp.EM` (defaults ``max_iter=100`` EM iterations,
    ``tol=1e-4``)."""

    _optimizer_defaults = (EM(max_iter=100, tol=1e-4),)

    def _fitted_payload(self) -> dict:
        reg = self.regression_
        return {**super()._fitted_payload(), "regression": torch.from_numpy(np.array(reg.coef_, dtype=np.float64))}

    def _restore_fitted(self, payload: dict) -> None:
        super()._restore_fitted(payload)
        coef = payload["regression"].numpy()
        reg = LinearRegression(fit_intercept=False)  # the fitted least squares, restored by its coefficients
        reg.coef_, reg.intercept_, reg.n_features_in_ = coef, 0.0, coef.shape[-1]
        self.regression_ = reg

    def __init__(
        self,
        n_topics: int = 10,
        *,
        alpha: float | None = None,
        optimizer: EM | None = None,
        vocabulary: Vocabulary | None = None,
        random_state: int | None = None,
    ):
        self.n_topics = n_topics
        self.alpha = alpha
        self.optimizer = optimizer
        self.vocabulary = vocabulary
        self.random_state = random_state

    _parameter_constraints: dict[str, list] = {
        "n_topics": [Integer(1)],
        "alpha": [None, Real(0, open_low=True)],
        "optimizer": [None, FitOptionsArgument(EM, name="optimizer")],
        "vocabulary": [None, Instance(Vocabulary, name="an lvgp.Vocabulary")],
        "random_state": [RandomState()],
    }

    def fit(self, X: Documents, y: TensorLike) -> Self:
        check_params(self)
        x = self._encode_fit(X)
        y = check_targets_array(y, len(x))
        start = time.perf_counter()
        options = self._optimizer_options()
        self.engine_ = SupervisedLDAEM(
            self.n_topics,
            alpha=self.alpha,
            supervised=False,
            init="random",
            max_iter=int(options.max_iter),
            tol=float(options.tol),
            random_state=Streams(self.random_state).root,
        ).fit(x, vocab_size=self.n_words_)
        features = self.engine_.transform(x)
        # topic frequencies sum to one, so the intercept is absorbed: no intercept (like eta in sLDA)
        self.regression_ = LinearRegression(fit_intercept=False).fit(features, y)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def predict(self, X: Documents) -> np.ndarray:
        z = self.transform(X)  # checks that the model is fitted
        return self.regression_.predict(z)
