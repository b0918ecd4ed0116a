"""The inferences of :class:`~lvgp.models.gpc.LDKGPClassifier`, as strategy objects:
``LDKGPClassifier(inference=name)`` selects one of :data:`INFERENCE_STRATEGIES`, which builds the model
(``build``), fits it (``fit``), and turns its posterior into latent moments and class probabilities
(``posterior``, ``block_latents``, ``block_proba``). The estimator holds the data, the options and the
fitted state; a strategy holds no state of its own (one instance serves every estimator), and adding
an inference is one more subclass of :class:`Inference` in :data:`INFERENCE_STRATEGIES`.

* :class:`DirichletInference`: Milios et al.'s Dirichlet-based GP classification, exact GP regressions
  on transformed labels, the evidence maximized by L-BFGS;
* :class:`LaplaceInference`: the softmax likelihood with the Laplace approximation (R&W alg. 3.3-3.4);
* :class:`VariationalInference`: the softmax (probit) likelihood and SVGPs on inducing documents, by
  natural-gradient and Adam steps on mini-batches.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any, ClassVar

import gpytorch
import numpy as np
import torch
from linear_operator.utils.errors import NotPSDError
from sklearn.exceptions import ConvergenceWarning

from ..._random import child_seed, torch_generator
from ...base import fitting
from ...base.distributed import backward_on_share, process_group
from ...base.fit_options import LBFGS, FitOptions, MiniBatch
from ...base.fitting import PlateauStopping, fit_stochastic, log_prior, minimize
from ...base.numerics import covariance_errors, exact_numerics
from ...bow.padded import document_lengths, documents_at, pad_to_common_width
from ...kernels import compiled_blocks, kept_blocks, shared_evaluation
from ...kernels.packed import packed_widths, unpack_documents
from ...kernels.spec import word_vector_modules
from ...warnings import warn
from ..dirichlet import SharedDirichletPosterior, shared_dirichlet_log_evidence
from ..fused_step import FusedClassifierObjective, fused_step_wanted, unsupported_classifier
from ..inducing import choose_inducing_documents, whitened_softmax_elbo
from ..laplace import SoftmaxLaplaceGP, expected_softmax_correlated
from .models import (
    DirichletLDKGP,
    LDKClassificationGP,
    _DirichletLikelihood,
    _NaturalDistribution,
    class_draw_seeds,
    expected_softmax,
)

__all__ = [
    "Inference",
    "DirichletInference",
    "LaplaceInference",
    "VariationalInference",
    "INFERENCE_STRATEGIES",
    "HYPERPARAMETER_OBJECTIVES",
    "TEMPERATURE_PRIOR_SD",
    "ADDITIONAL_NOISE_START",
    "natural_gradient_step",
]

#: sd of the prior of ``calibration="temperature"`` on log T (a MAP fit, not the leave-one-out log loss
#: alone): weakly informative -- T in [e^-2, e^2] at two sd, the range dev documents chose (0.4-1.2 on
#: 20ng and r8) well inside -- and what keeps a few documents from driving T to its bound
TEMPERATURE_PRIOR_SD = 1.0

#: the Dirichlet inference's learned additional noise :math:`\sigma_a^2` at the start of a fit, and the median of
#: its log-normal prior (``LDKGPClassifier(noise_prior_sd=)``)
ADDITIONAL_NOISE_START = 0.1


def _tempered_proba(proba: np.ndarray, temperature: float) -> np.ndarray:
    r"""Probabilities ``proba`` (``n x C``) tempered: :math:`p_c^{1/T} / \sum_{c'} p_{c'}^{1/T}` (``T = 1``: as given)."""
    if temperature == 1.0:
        return proba
    return np.exp(_tempered_log_proba(np.log(np.maximum(proba, 1e-300)), temperature))


def _tempered_log_proba(log_p: np.ndarray, temperature: float) -> np.ndarray:
    r"""Log probabilities ``log_p`` (``n x C``) tempered: :math:`\log(p_c^{1/T} / \sum_{c'} p_{c'}^{1/T})`."""
    tempered = log_p / temperature
    tempered = tempered - tempered.max(axis=1, keepdims=True)
    return tempered - np.log(np.exp(tempered).sum(axis=1, keepdims=True))


#: what the Dirichlet classifier's hyper-parameters maximize (``LDKGPClassifier(objective=...)``): the
#: evidence, or after it the leave-one-out log probability of the training labels
HYPERPARAMETER_OBJECTIVES = ("evidence", "loo")


def single_document_classes(codes: np.ndarray, classes: np.ndarray) -> tuple[int, int, str] | None:
    """The classes with fewer than two of the documents whose class codes are ``codes`` (positions in
    ``classes``), which have no leave-one-out prediction worth the name: how many, of how many, and their
    names (the first five, then how many more); ``None`` when there is none."""
    counts = np.bincount(codes, minlength=len(classes))
    single = [str(classes[c]) for c in np.flatnonzero(counts < 2)]
    if not single:
        return None
    names = ", ".join(single[:5]) + (f" and {len(single) - 5} more" if len(single) > 5 else "")
    return len(single), len(counts), names


def has_repeated_class(codes: np.ndarray) -> bool:
    """Whether some class has at least two of the documents whose class codes are ``codes`` (where
    :func:`single_document_classes` names every class, none has): the leave-one-out predictions of
    ``calibration="temperature"`` and ``encoder_weight="loo"`` speak of the classes' texts only then
    (``LDKGPClassifier._warn_single_document_classes``)."""
    return bool(len(codes)) and int(np.bincount(codes).max()) >= 2


#: how often a fit undoes a natural-gradient step that left q(u) not positive definite, halving
#: ``ngd_lr`` each time, before it gives up with a ``CovarianceError``
_NGD_BACKOFF = 10

#: dense n x n float64 matrices a class that an exact (Dirichlet or Laplace) fit holds at once: the
#: covariance, its Cholesky factor and their gradients (the guard of :func:`~lvgp.base.device.check_dense_memory`)
_DENSE_COPIES_PER_CLASS = 3
#: the same for the shared-hyper-parameter Dirichlet inference, whatever the number of classes (one
#: factorization for all classes, :mod:`lvgp.models.dirichlet`): the kernel matrix, the factor and its
#: inverse, and their gradients
_DENSE_COPIES_SHARED = 6


class Inference:
    """An inference of the GP classifier (module docstring). The class attributes are its
    capabilities, which the estimator checks its options against."""

    #: the name ``inference=`` takes
    name: ClassVar[str]
    #: the kind of optimizer ``optimizer=None`` stands for
    optimizer_kind: ClassVar[type[FitOptions]] = LBFGS
    #: fits on mini-batches of word ids (no sentence encoder; the corpus kept compact; distributed)
    mini_batches: ClassVar[bool] = False
    #: draws from torch's global generator while fitting (gpytorch's Monte Carlo ELBO), so the
    #: estimator fits it inside ``seeded_torch``
    global_draws: ClassVar[bool] = False
    #: reaches an evidence (the exact one or its approximation) that ``part_selection="evidence"`` compares
    evidence: ClassVar[bool] = True
    #: has closed-form leave-one-out predictions (``calibration="temperature"``, ``part_selection="loo"``)
    leave_one_out: ClassVar[bool] = False
    #: gives the latents' posterior cross-covariances between two blocks of documents
    #: (:meth:`block_cross_latents`, ``predict_latent_cross``)
    cross_covariances: ClassVar[bool] = False

    def dense_copies(self, est: Any) -> int | None:
        """``n x n`` float64 matrices the fit holds at once (its memory guard), ``None`` for none."""
        return _DENSE_COPIES_PER_CLASS * len(est.classes_)

    def build(self, est: Any, x: torch.Tensor, codes: np.ndarray, seed: int) -> Any:
        """``est.model_`` and ``est.likelihood_`` at their initial values, on ``est.device_``."""
        raise NotImplementedError

    def fit(
        self,
        est: Any,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        """Build and fit the model on ``x`` and ``codes`` (``budget``: iterations or epochs in place of the
        optimizer's; ``validate``: early stopping's score), setting the estimator's curves."""
        raise NotImplementedError

    def after_fit(self, est: Any) -> None:
        """Checks of the kept fit (after any part selection); nothing by default."""

    def posterior(self, est: Any) -> Any:
        """What prediction computes once for all blocks of a call (``None``: nothing). Not kept: early
        stopping predicts between the fit's steps."""
        return None

    def block_latents(
        self, est: Any, xb: torch.Tensor, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, gpytorch.distributions.MultivariateNormal | None]:
        """The latent functions' posterior at one block ``xb`` of documents: means and variances
        (``n x C``; an inference's own layout where it says so), and gpytorch's posterior ``f`` where
        the probabilities need it (``None`` otherwise). ``posterior``: :meth:`posterior`'s. Here:
        gpytorch's prediction (batch first)."""
        with shared_evaluation(est.model_):  # the block's K_ZX and diag K_XX: its norms once
            f = est.model_(xb)
            return f.mean, f.variance, f

    def cross_target(self, est: Any, xb: torch.Tensor, posterior: Any) -> Any:
        """What :meth:`block_cross_latents` reads of the documents ``xb`` it takes covariances with, made
        once for all the blocks it is called with (:attr:`cross_covariances`)."""
        raise NotImplementedError

    def block_cross_latents(
        self, est: Any, xa: torch.Tensor, target: Any, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The latents' posterior means and variances at a block ``xa`` of documents (``a x C``) and each
        class's cross-covariances between them and the documents of ``target`` (:meth:`cross_target`;
        ``C x a x b``), where the classes' latents are independent a posteriori (:attr:`cross_covariances`)."""
        raise NotImplementedError

    def marginal_variances(self, var: torch.Tensor) -> torch.Tensor:
        """The latents' marginal variances ``n x C`` of :meth:`block_latents`' second output."""
        return var

    def latent_width(self, est: Any) -> int:
        """The number of latent functions."""
        return len(est.classes_)

    def intercept_variance(self, est: Any) -> torch.Tensor | float:
        """The prior variance that integrated-out class intercepts add to every latent beyond the
        kernel's (``predict_latent``'s prior variances): none here."""
        return 0.0

    def block_proba(self, est: Any, mean: torch.Tensor, var: torch.Tensor, f: Any) -> torch.Tensor:
        """``n x C`` class probabilities of one block's latents: the softmax averaged over independent
        Gaussian marginals by Monte Carlo with fixed draws (:func:`~lvgp.models.gpc.models.expected_softmax`)."""
        return expected_softmax(mean, var, est.predict_samples, est._class_seeds())


class _EvidenceInference(Inference):
    """An inference that maximizes an evidence by L-BFGS (the Dirichlet and Laplace inferences)."""

    def _maximize_evidence(
        self,
        est: Any,
        model: torch.nn.Module,
        evidence: Callable[[], torch.Tensor],
        n: int,
        budget: int | None,
        validate: Callable[[], float] | None,
        desc: str,
        own_log_prior: Callable[[], torch.Tensor] | None = None,
    ) -> Any:
        """L-BFGS on minus ``evidence()`` (the inference's log marginal likelihood, or its approximation)
        plus the log priors -- the word vectors' once, through their ``penalty()``, the other
        hyper-parameters' (e.g. ``identity_weight_prior``) and ``own_log_prior()`` (a prior the inference
        adds to its own parameters without registering it: saved models keep their state's keys) -- per
        document; sets the fit's curves and returns :func:`~lvgp.base.fitting.minimize`'s result."""
        vectors = word_vector_modules(model)

        def objective() -> torch.Tensor:
            priors = log_prior(model, exclude=vectors)
            if own_log_prior is not None:
                priors = priors + own_log_prior()
            return -(evidence() + priors - sum((v.penalty() for v in vectors), torch.zeros(()))) / n

        optimizer, stopping = est._optimizer_options(), est._stopping()
        result = minimize(
            [p for p in model.parameters() if p.requires_grad],
            objective,
            max_iter=int(optimizer.max_iter if budget is None else budget),
            tol=float(optimizer.tol),
            validate=validate,
            validation_interval=int(stopping.validation_interval),
            n_iter_no_change=int(stopping.n_iter_no_change),
            verbose=est.verbose,
            desc=desc,
        )
        if est.part_selection is not None:  # what "evidence" compares: the kept parameters' objective
            with torch.no_grad():
                est._log_evidence_fitted = -float(objective()) * n
        est.loss_curve_, est.n_iter_, est.converged_ = list(result.loss_curve), result.n_iter, result.converged
        est.validation_curve_, est.best_iter_ = list(result.validation_curve), result.best_iter
        return result


class DirichletInference(_EvidenceInference):
    """Dirichlet-based GP classification (Milios et al. 2018): ``C`` exact GP regressions on the
    transformed labels; with ``class_hyperparameters="shared"``, one factorization for every class
    (:mod:`lvgp.models.dirichlet`)."""

    name = "dirichlet"
    leave_one_out = True
    cross_covariances = True

    def dense_copies(self, est: Any) -> int | None:
        if est.class_hyperparameters == "shared":
            return _DENSE_COPIES_SHARED
        return super().dense_copies(est)

    def build(self, est: Any, x: torch.Tensor, codes: np.ndarray, seed: int) -> None:
        """``model_`` and ``likelihood_`` of the Dirichlet inference at their initial values, on ``device_``."""
        targets = torch.from_numpy(codes)
        shared = est.class_hyperparameters == "shared"
        likelihood = _DirichletLikelihood(
            targets,
            alpha_epsilon=est.alpha_epsilon,
            learn_additional_noise=True,
            dtype=torch.float64,
            shared_noise=shared,
        ).double()
        likelihood.second_noise = torch.full_like(likelihood.second_noise, ADDITIONAL_NOISE_START)
        model = DirichletLDKGP(x, likelihood, est._kernel(seed, x), shared).to(est.device_)
        est.model_, est.likelihood_ = model, likelihood

    def fit(
        self,
        est: Any,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        self.build(est, x, codes, seed)
        model, likelihood = est.model_, est.likelihood_
        n = x.shape[0]
        inputs = model.train_inputs[0]
        model.train()
        likelihood.train()

        shared = est.class_hyperparameters == "shared"
        # max_evidence_documents: the evidence of a stratified subset, scaled to n documents (the estimator's docstring)
        subset = getattr(est, "evidence_documents_", None)
        rows = None if subset is None else torch.as_tensor(subset, device=inputs.device)
        fit_inputs = inputs if rows is None else inputs[rows]
        scale = 1.0 if rows is None else n / len(rows)

        def evidence() -> torch.Tensor:
            # sum over classes of the exact log marginal likelihood (the word vectors' log prior is
            # added once, by _maximize_evidence: gpytorch's ExactMarginalLogLikelihood would add it once
            # per class); with one output scale and noise for all classes, one factorization serves every
            # class (lvgp.models.dirichlet), else gpytorch factors each class's covariance
            with exact_numerics(), covariance_errors("Dirichlet GP classifier", "Try a larger rho."):
                if shared:
                    return scale * shared_dirichlet_log_evidence(*self.shared_terms(est, fit_inputs, rows))
                return likelihood(model(inputs)).log_prob(likelihood.transformed_targets).sum()

        result = self._maximize_evidence(
            est, model, evidence, n, budget, validate, "LDK GP classifier", self.noise_log_prior(est, likelihood)
        )
        if budget is None:  # a chosen budget ends the fit by design
            result.warn_if_unconverged(
                "the Dirichlet GP classifier", _budget_advice(model), unit="L-BFGS iterations", stacklevel=4
            )
        est.objective_, est.loo_loss_curve_ = "evidence", []
        if est.objective == "loo":
            self._maximize_leave_one_out(est, fit_inputs, rows, codes)

    @staticmethod
    def noise_log_prior(est: Any, likelihood: Any) -> Callable[[], torch.Tensor] | None:
        r"""The log density of ``noise_prior_sd``'s prior on the learned additional noise, summed over its
        classes (``None`` when ``noise_prior_sd`` is ``None``): :math:`\sigma_a^2 \sim
        \mathrm{LogNormal}(\log \sigma_0^2, s^2)` with :math:`\sigma_0^2` its start
        (:data:`ADDITIONAL_NOISE_START`), i.e. :math:`-\log\sigma_a^2 - (\log\sigma_a^2 - \log\sigma_0^2)^2 / 2s^2`
        up to a constant -- gpytorch's ``LogNormalPrior`` at the noise, not registered on the likelihood (a saved
        model's state keeps its keys). With one labelled text a class the evidence can prefer explaining the labels
        by this noise alone (:meth:`after_fit`'s state); the prior weighs as much as a few documents, so it decides
        there, and in a fit of tens of documents a class it moves only noises the evidence had let grow."""
        sd = getattr(est, "noise_prior_sd", None)
        if sd is None:
            return None
        centre = math.log(ADDITIONAL_NOISE_START)

        def log_density() -> torch.Tensor:
            log_noise = likelihood.second_noise.log()
            return -(log_noise + (log_noise - centre) ** 2 / (2 * float(sd) ** 2)).sum()

        return log_density

    def after_fit(self, est: Any, documents: int = 300) -> None:
        r"""A :class:`~lvgp.warnings.NoSignalWarning` when, in every class's regression on the transformed labels,
        the noise holds more than :data:`~lvgp.base.numerics.NOISE_CEILING` of the prior variance at (up to
        ``documents``) training documents: the mean over them of :math:`(\sigma_i^2 + \sigma_a^2) /
        (s\,k(x_i, x_i) + \sigma_i^2 + \sigma_a^2)`, with :math:`\sigma_i^2` the labels' transformation noise
        (Milios et al. 2018, eq. 7), :math:`\sigma_a^2` the learned additional noise and :math:`s` the output
        scale. The evidence then explains the labels by noise: every text's latent means stay close to the
        classes' constant means, and small differences decide its class (with one labelled text a class, r8's
        first active round put every test document in one class on one seed of six: ``benchmarks/README.md``,
        "One labelled text a class")."""
        from ...base.numerics import NOISE_CEILING
        from ...warnings import NoSignalWarning

        model, likelihood = est.model_, est.likelihood_
        with torch.no_grad(), exact_numerics():
            x = model.train_inputs[0]
            rows = torch.arange(min(documents, x.shape[0]), device=x.device)
            prior = model.covar_module(x[rows], diag=True)  # (C x) m: the output scale times k(x_i, x_i)
            noise = likelihood.noise[..., rows]  # C x m: gpytorch's, the transformation's and the additional noise
            share = (noise / (prior + noise)).mean(-1)  # a class each
            scale, extra = float(model.covar_module.outputscale.max()), float(likelihood.second_noise.max())
        if float(share.min()) > NOISE_CEILING:
            prior_advice = (
                "set noise_prior_sd (None here: the evidence alone) to keep the additional noise near its start, "
                if getattr(est, "noise_prior_sd", None) is None
                else ""
            )
            warn(
                f"the Dirichlet GP classifier found no signal: in every class's regression the noise holds "
                f"{float(share.min()):.4f} or more of the prior variance at the training documents (output scale "
                f"{scale:.3g}, additional noise {extra:.3g}), so every text's latent means stay close to the classes' "
                "constant means and small differences decide its class: at best a weak signal, at worst the "
                f"largest constant takes every text. Label more texts a class, {prior_advice}or compare with a linear "
                "baseline (logistic regression on tf-idf) to see whether there is signal to find",
                NoSignalWarning,
                stacklevel=5,
            )

    def leave_one_out_latents(
        self, est: Any, inputs: torch.Tensor, rows: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r"""``m x C``: the latent means and variances at each of the training documents ``inputs`` given the
        others, at the current hyper-parameters (R&W eq. 5.12; differentiable: the caller chooses
        ``no_grad``); ``rows``: ``inputs`` are those training documents (the shared inference's evidence
        subset). The shared inference from its one factorization
        (:meth:`~lvgp.models.dirichlet.SharedDirichletPosterior.leave_one_out`), else
        :meth:`per_class_leave_one_out`."""
        if est.class_hyperparameters == "shared":
            mean, var = SharedDirichletPosterior(*self.shared_terms(est, inputs, rows)).leave_one_out()
            return mean.mT, var.mT
        return self.per_class_leave_one_out(est.model_, est.likelihood_)

    @staticmethod
    def per_class_precision(model: Any, likelihood: Any) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        r"""The training latents' prior (a batch of ``C`` Gaussians), each class's noises :math:`\sigma^2_i`
        (``C x n``), the inverse :math:`\mathbf K_y^{-1}` of each class's covariance plus its noise (``C x n x n``)
        and :math:`\boldsymbol\alpha = \mathbf K_y^{-1}(\tilde{\mathbf y} - \mathbf m)` (``C x n``): one Cholesky
        factorization a class. ``model`` and ``likelihood`` in training mode."""
        prior = model(model.train_inputs[0])
        covariance = likelihood(prior).covariance_matrix  # C x n x n
        noise = covariance.diagonal(dim1=-2, dim2=-1) - prior.variance
        precision = torch.cholesky_inverse(torch.linalg.cholesky(covariance))
        residual = likelihood.transformed_targets - prior.mean
        alpha = (precision @ residual.unsqueeze(-1)).squeeze(-1)
        return prior, noise, precision, alpha

    @staticmethod
    def per_class_leave_one_out(model: Any, likelihood: Any) -> tuple[torch.Tensor, torch.Tensor]:
        r"""``n x C``: the leave-one-out latent means and variances of per-class hyper-parameters, from
        :meth:`per_class_precision`: :math:`\tilde y_i - \alpha_i / [\mathbf K_y^{-1}]_{ii}` and
        :math:`1 / [\mathbf K_y^{-1}]_{ii} - \sigma^2_i` (R&W eq. 5.12). ``model`` and ``likelihood`` in training
        mode."""
        _, noise, precision, alpha = DirichletInference.per_class_precision(model, likelihood)
        diag = precision.diagonal(dim1=-2, dim2=-1)
        mean = likelihood.transformed_targets - alpha / diag
        var = (1.0 / diag - noise).clamp_min(0.0)
        return mean.mT, var.mT

    def _maximize_leave_one_out(
        self, est: Any, inputs: torch.Tensor, rows: torch.Tensor | None, codes: np.ndarray
    ) -> None:
        r"""``objective="loo"``: from the evidence's optimum, L-BFGS on minus the mean log probability of
        each training label under its leave-one-out prediction -- the expected softmax of
        :meth:`leave_one_out_latents` (the prediction's fixed draws), tempered with a temperature fitted jointly
        under ``calibration="temperature"``'s prior, as the predictions will be -- over the hyper-parameters
        (not MAP word vectors: they stay the evidence's); no hyper-parameter prior enters. Geisser's
        predictive criterion, which Sundararajan & Keerthi (2001) and R&W sec. 5.4.2 set beside the
        evidence for GP regression, here of the labels the classifier predicts rather than of the
        Dirichlet transform's regression targets. With the evidence subset (``rows``), its documents'
        leave-one-out predictions given the subset. A class with fewer than two documents has no
        leave-one-out prediction worth the name: the evidence's hyper-parameters are kept, with a warning."""
        fit_codes = codes if rows is None else codes[rows.cpu().numpy()]
        single = single_document_classes(fit_codes, est.classes_)
        if single is not None:
            where = "the evidence's subset" if rows is not None else "the training documents"
            warn(
                f"objective='loo': {single[0]} of {single[1]} classes have fewer than two documents in {where} "
                f"({single[2]}), so no leave-one-out prediction; the hyper-parameters are the evidence's",
                UserWarning,
                stacklevel=5,
            )
            return
        model = est.model_
        held = {id(p) for module in word_vector_modules(model) for p in module.parameters()}
        params = [p for p in model.parameters() if p.requires_grad and id(p) not in held]
        tempered = est.calibration == "temperature"
        log_t = torch.nn.Parameter(torch.zeros((), dtype=torch.float64, device=inputs.device))
        truth = torch.as_tensor(fit_codes, device=inputs.device)[:, None]
        seeds, m = est._class_seeds(), len(fit_codes)

        def objective() -> torch.Tensor:
            with exact_numerics(), covariance_errors("Dirichlet GP classifier", "Try a larger rho."):
                mean, var = self.leave_one_out_latents(est, inputs, rows)
            log_p = torch.log(expected_softmax(mean, var, est.predict_samples, seeds).clamp_min(1e-300))
            if not tempered:
                return -log_p.gather(1, truth).sum() / m
            log_p = torch.log_softmax(log_p / log_t.exp(), dim=-1)
            return -(log_p.gather(1, truth).sum() - log_t**2 / (2 * TEMPERATURE_PRIOR_SD**2)) / m

        optimizer = est._optimizer_options()
        result = minimize(
            params + ([log_t] if tempered else []),
            objective,
            max_iter=int(optimizer.max_iter),
            tol=float(optimizer.tol),
            verbose=est.verbose,
            desc="LDK GP classifier (leave-one-out)",
        )
        result.warn_if_unconverged(
            "the Dirichlet GP classifier's leave-one-out fit", unit="L-BFGS iterations", stacklevel=5
        )
        est.objective_, est.loo_loss_curve_ = "loo", list(result.loss_curve)
        est.n_iter_ += result.n_iter
        est.converged_ = bool(est.converged_ and result.converged)

    def shared_terms(
        self, est: Any, inputs: torch.Tensor, rows: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, ...]:
        """What :mod:`lvgp.models.dirichlet` takes of the shared-hyper-parameter Dirichlet inference at the
        training documents ``inputs``: the output scale times the kernel (``n x n``), the classes'
        constant means, each class's noise at each document (the Dirichlet noise plus the learned one)
        and the transformed targets; ``rows``: ``inputs`` are those training documents (the noise and
        targets taken at them)."""
        model, likelihood = est.model_, est.likelihood_
        noise = likelihood.noise_covar.noise + likelihood.second_noise_covar.noise
        targets = likelihood.transformed_targets
        if rows is not None:
            noise, targets = noise[:, rows], targets[:, rows]
        return model.covar_module(inputs).to_dense(), model.mean_module.constant.reshape(-1), noise, targets

    def posterior(self, est: Any) -> Any:
        """The shared-hyper-parameter inference's one factorization for all classes
        (:class:`~lvgp.models.dirichlet.SharedDirichletPosterior`); ``None`` per class (gpytorch's own
        prediction, which factors each class's covariance)."""
        if est.class_hyperparameters == "shared":
            with torch.no_grad(), exact_numerics(), covariance_errors("Dirichlet GP classifier", "Try a larger rho."):
                return SharedDirichletPosterior(*self.shared_terms(est, est.model_.train_inputs[0]))
        return None

    def block_latents(
        self, est: Any, xb: torch.Tensor, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, gpytorch.distributions.MultivariateNormal | None]:
        """The shared inference's closed form from its one factorization (``posterior``), else
        gpytorch's prediction, class by class (batch ``C x n`` turned ``n x C``)."""
        if isinstance(posterior, SharedDirichletPosterior):
            k_star = self._with_training(est, xb)
            return (*posterior.predict(k_star, est.model_.covar_module(xb, diag=True)), None)
        mean, var, _ = super().block_latents(est, xb, posterior)
        return mean.mT, var.mT, None

    @staticmethod
    def _with_training(est: Any, xb: torch.Tensor) -> torch.Tensor:
        """``n x b``: the kernel (with the output scale) between the training documents and the documents
        ``xb``, padded to one width; what the shared posterior's solves take."""
        return est.model_.covar_module(*pad_to_common_width(est.model_.train_inputs[0], xb)).to_dense()

    def cross_target(self, est: Any, xb: torch.Tensor, posterior: Any) -> tuple[torch.Tensor, Any]:
        """The documents ``xb`` and, for the shared inference, their cross-covariances with the training
        documents solved against its one factorization
        (:meth:`~lvgp.models.dirichlet.SharedDirichletPosterior.solved`)."""
        if not isinstance(posterior, SharedDirichletPosterior):
            return xb, None
        return xb, posterior.solved(self._with_training(est, xb))

    def block_cross_latents(
        self, est: Any, xa: torch.Tensor, target: tuple[torch.Tensor, Any], posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The ``C`` regressions' posteriors (independent given the hyper-parameters): the shared
        inference's from its one factorization
        (:meth:`~lvgp.models.dirichlet.SharedDirichletPosterior.cross_covariance`), else gpytorch's joint
        prediction at the two blocks together, class by class."""
        xb, solved_b = target
        kernel = est.model_.covar_module
        if isinstance(posterior, SharedDirichletPosterior):
            k_a = self._with_training(est, xa)
            k_ab = kernel(*pad_to_common_width(xa, xb)).to_dense()
            solved_a = posterior.solved(k_a)
            mean, var = posterior.predict(k_a, kernel(xa, diag=True), solved_a)
            return mean, var, posterior.cross_covariance(k_a, k_ab, solved_a, solved_b)
        a, b = pad_to_common_width(xa, xb)
        f = est.model_(torch.cat([a, b]))  # batch C over the a + b documents
        size = xa.shape[0]
        return f.mean[:, :size].mT, f.variance[:, :size].mT, f.covariance_matrix[:, :size, size:]


class LaplaceInference(_EvidenceInference):
    """The softmax likelihood with the Laplace approximation (R&W alg. 3.3-3.4,
    :class:`~lvgp.models.laplace.SoftmaxLaplaceGP`): the test latents' correlated Gaussian, ``n x C x C``
    covariances in place of the variances."""

    name = "laplace"
    #: how much below its mode's the predictive's mean top probability on the training documents may
    #: fall before a warning says the probabilities are under-confident (:meth:`after_fit`)
    FLATTENING = 0.3

    def build(self, est: Any, x: torch.Tensor, codes: np.ndarray, seed: int) -> None:
        """``model_`` (a :class:`~lvgp.models.laplace.SoftmaxLaplaceGP`) and ``likelihood_`` (the softmax,
        no parameters: the model computes the Laplace approximation itself) at their initial values."""
        shared = est.class_hyperparameters == "shared"
        n_classes = len(est.classes_)
        model = SoftmaxLaplaceGP(x, torch.from_numpy(codes), n_classes, est._kernel(seed, x), shared)
        est.model_ = model.to(est.device_)
        likelihood = gpytorch.likelihoods.SoftmaxLikelihood(num_classes=n_classes, mixing_weights=False)
        est.likelihood_ = likelihood.to(est.device_)

    def fit(
        self,
        est: Any,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        """L-BFGS on minus the approximate log marginal likelihood (eq. 3.44) and the log priors of the
        word vectors and the other hyper-parameters, per document (as the Dirichlet inference's)."""
        self.build(est, x, codes, seed)
        model = est.model_
        n = x.shape[0]
        model.train()

        # max_evidence_documents: the evidence of a stratified subset, scaled to n documents; the mode and
        # the evidence after the fit are every document's
        subset = getattr(est, "evidence_documents_", None)
        rows = None if subset is None else torch.as_tensor(subset, device=model.train_x.device)
        scale = 1.0 if rows is None else n / len(rows)

        def evidence() -> torch.Tensor:
            with exact_numerics(), covariance_errors("Laplace GP classifier", "Try a larger rho."):
                return scale * model.log_evidence(rows)

        result = self._maximize_evidence(est, model, evidence, n, budget, validate, "LDK GP classifier (Laplace)")
        with torch.no_grad(), exact_numerics():  # the mode and evidence at the kept parameters
            est.log_marginal_likelihood_ = float(model.log_evidence())
        iterations, gradient = model.last_search
        if gradient > 1e-6:
            warn(
                f"the Laplace mode search stopped after {iterations} Newton iterations with a gradient of "
                f"{gradient:.2g}; its evidence and predictions are approximate",
                ConvergenceWarning,
                stacklevel=4,
            )
        if budget is None:
            result.warn_if_unconverged(
                "the Laplace GP classifier", _budget_advice(model), unit="L-BFGS iterations", stacklevel=4
            )

    def after_fit(self, est: Any, documents: int = 300) -> None:
        """An :class:`~lvgp.warnings.UncertaintyWarning` when, on (up to ``documents``) training documents, the
        predictive probabilities' mean top probability is far below the mode's softmax's. On near-separable
        training data the approximate evidence grows with the output scale and the mode saturates, where
        the softmax's curvature W vanishes: the Laplace posterior then keeps most of the prior's variance
        and averaging the softmax over it flattens the probabilities toward uniform (R&W sec. 3.4's
        approximation, not the model, is at fault; ``benchmarks/README.md`` measures it). Each node's softmax is
        then nearly one-hot, so a probability is nearly a count over the ``predict_samples`` nodes, and with many
        classes their error moves the top class of close texts (``benchmarks/README.md``, "The Laplace
        inference's nodes on real texts"): the warning says so."""
        from ...warnings import UncertaintyWarning

        model = est.model_
        with torch.no_grad(), exact_numerics():
            posterior = model.posterior()
            rows = torch.arange(min(documents, model.train_x.shape[0]))
            mode_top = torch.softmax(posterior[0].f[:, rows], dim=0).max(0).values.mean()
            mean, cov = model.latents(model.train_x[rows], posterior)
            proba = expected_softmax_correlated(mean, cov, est.predict_samples, class_draw_seeds(est.classes_))
            predictive_top = proba.max(-1).values.mean()
        if float(mode_top - predictive_top) > self.FLATTENING:
            scale = float(model.covar_module.outputscale.detach().max())
            warn(
                f"the Laplace GP classifier's probabilities are under-confident: on {len(rows)} training documents "
                f"their mean top probability is {float(predictive_top):.2f}, its mode's softmax's "
                f"{float(mode_top):.2f}. The evidence chose an output scale of {scale:.3g}, where the saturated "
                "mode leaves the latents most of their prior variance (near-separable training data), and each "
                f"probability is nearly a count over the {est.predict_samples} nodes of predict_samples, whose "
                "error moves the top class of close texts (raise it where the classes are many). Use "
                "inference='dirichlet' (with calibration='temperature'), or a kernel whose scale a prior bounds.",
                UncertaintyWarning,
                stacklevel=5,
            )

    def intercept_variance(self, est: Any) -> torch.Tensor | float:
        """The classes' intercepts' prior variance (:class:`~lvgp.models.laplace.SoftmaxLaplaceGP`; 0 in a
        model saved before the intercepts moved into the covariance)."""
        model = est.model_
        return model.intercept_variance.detach() if bool(model.intercept_in_kernel) else 0.0

    def posterior(self, est: Any) -> Any:
        """The mode (alg. 3.4's)."""
        return est.model_.posterior()

    def block_latents(
        self, est: Any, xb: torch.Tensor, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, gpytorch.distributions.MultivariateNormal | None]:
        """The test latents' correlated Gaussian (alg. 3.4): means ``n x C``, covariances ``n x C x C``."""
        mean, cov = est.model_.latents(xb, posterior)
        return mean, cov, None

    def marginal_variances(self, var: torch.Tensor) -> torch.Tensor:
        return var.diagonal(dim1=-2, dim2=-1)

    def block_proba(self, est: Any, mean: torch.Tensor, var: torch.Tensor, f: Any) -> torch.Tensor:
        """The softmax averaged over the correlated Gaussian (a Laplace fit always draws by class label)."""
        return expected_softmax_correlated(mean, var, est.predict_samples, class_draw_seeds(est.classes_))


class VariationalInference(Inference):
    """SVGPs on inducing documents (k-means++ among the training documents) with the softmax likelihood
    (the probit for two classes), by natural-gradient steps of ``q(u)`` and Adam steps of the rest on
    mini-batches. The softmax ELBO's expected log-likelihood is a Monte Carlo average over each document's
    marginals (:func:`lvgp.models.inducing.whitened_softmax_elbo`, gpytorch's ``num_likelihood_samples``
    draws a document, from the fit's own stream); the probit's is gpytorch's quadrature."""

    name = "variational"
    optimizer_kind = MiniBatch
    mini_batches = True
    global_draws = True
    evidence = False

    def dense_copies(self, est: Any) -> int | None:
        return None

    def build(self, est: Any, x: torch.Tensor, codes: np.ndarray, seed: int) -> torch.Tensor:
        """``model_`` and ``likelihood_`` of the variational inference at their initial values (inducing
        documents chosen by k-means++ with ``seed``), on ``device_``; returns the training targets."""
        n_classes = len(est.classes_)
        dim = est._encoder_dim()
        ids, features = (x, None) if dim is None else unpack_documents(x, dim)
        idx = choose_inducing_documents(ids, est.encoder_.num_words, int(est.num_inducing), "kmeans++", seed, features)
        binary = n_classes == 2
        # packed: cut to the chosen documents' widths (their vectors and at least one word column)
        inducing = documents_at(x, idx) if dim is None else documents_at(x, idx, packed_widths(x[idx], dim))
        est.model_ = LDKClassificationGP(
            inducing,
            est._kernel(seed, x, inducing),
            1 if binary else n_classes,
            shared_outputscale=est.class_hyperparameters == "shared",
        )
        if binary:
            est.likelihood_ = gpytorch.likelihoods.BernoulliLikelihood()
            targets = torch.from_numpy(codes.astype(np.float64))
        else:
            est.likelihood_ = gpytorch.likelihoods.SoftmaxLikelihood(num_classes=n_classes, mixing_weights=False)
            targets = torch.from_numpy(codes)
        est.model_, est.likelihood_ = est.model_.to(est.device_), est.likelihood_.to(est.device_)
        return targets

    def fit(
        self,
        est: Any,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        targets = self.build(est, x, codes, seed)
        device = est.device_
        n_classes = len(est.classes_)
        binary = n_classes == 2
        # batches are drawn on the host and cut to their longest document by the lengths kept there (the packed
        # documents' widths: the encoder's vector and the words)
        dim = est._encoder_dim()
        n, lengths = x.shape[0], (document_lengths(x) if dim is None else packed_widths(x, dim))
        host_targets = targets
        x_device, targets = x.to(device), targets.to(device)
        mll = gpytorch.mlls.VariationalELBO(est.likelihood_, est.model_, num_data=n)
        natural = list(est.model_.variational_parameters())
        natural_ids = {id(p) for p in natural}
        others = [
            p
            for p in [*est.model_.parameters(), *est.likelihood_.parameters()]
            if p.requires_grad and id(p) not in natural_ids
        ]
        optimizer, stopping = est._optimizer_options(), est._stopping()
        # inside a torch.distributed group (torchrun): each process takes its share of every batch
        rank, world_size = process_group()
        # MiniBatch(compile=True) on a GPU (a CPU inside lvgp.models.fused_step.fused_steps()) with the kernel
        # the fused objective takes: the steps after the first (which initializes q(v) as gpytorch does)
        # evaluate it, compiled, on bags built on the host, with torch's fused Adam; else the compiled blocks
        # of rbf_pooled (below). One process: a step taken again eagerly would be one rank's decision alone
        fused: dict[str, Any] = {
            "objective": None,
            "wanted": bool(optimizer.compile)
            and not binary
            and world_size == 1
            and fused_step_wanted(device)
            and unsupported_classifier(est.model_, est.likelihood_) is None,
        }
        ngd = gpytorch.optim.NGD(natural, num_data=n, lr=float(optimizer.ngd_lr))
        adam = fitting.torch_adam(others, optimizer.lr, fused=fused["wanted"])
        batch = n if optimizer.batch_size is None else int(optimizer.batch_size)
        epochs, budget_name = epoch_budget(n, batch, est.optimizer, optimizer)
        if validate is not None and budget is None and int(stopping.validation_interval) > epochs:
            # the estimator's check before the fit reads max_epochs; the budget in epochs needs n
            raise ValueError(
                f"early_stopping.validation_interval={stopping.validation_interval} exceeds the fit's budget of "
                f"{epochs} epochs ({budget_name}={getattr(optimizer, budget_name)}, {n:,} texts in batches of "
                f"{batch:,}): nothing would be validated; take an interval of at most {epochs} or raise {budget_name}"
            )
        g = torch_generator(seed)
        est.model_.train()
        est.likelihood_.train()
        host_ids, host_lengths = x.cpu().numpy(), lengths.numpy()  # the fused step's batches, taken with NumPy

        # the softmax ELBO's Monte Carlo draws (gpytorch's num_likelihood_samples a document and class), a step's
        # for its whole batch from the fit's own stream; each process takes its share's columns
        softmax = not binary
        draws = torch_generator(child_seed(seed, "softmax likelihood draws"))
        n_draws = int(gpytorch.settings.num_likelihood_samples.value())
        dtype = est.model_.mean_module.raw_constant.dtype
        step_draws: dict[str, torch.Tensor] = {}

        def share_loss(rows: torch.Tensor) -> torch.Tensor:
            rows_device = rows.to(device)
            batch = documents_at(x_device, rows_device, lengths[rows])
            with shared_evaluation(est.model_):  # K_ZZ, K_ZX and diag K_XX: each set's norms once
                if softmax:
                    share = step_draws["eps"][:, rank::world_size].to(device)
                    return -whitened_softmax_elbo(mll, batch, targets[rows_device], share)
                return -mll(est.model_(batch), targets[rows_device])

        # q(u) before the last natural-gradient step, and how often a step was undone (see _NGD_BACKOFF)
        before_step: dict[str, Any] = {"natural": None, "undone": 0}

        def undo_natural_step(err: NotPSDError) -> None:
            """q(u) lost positive definiteness in the last natural-gradient step: undo that step and
            halve the step size (the Adam step taken beside it stays); after ``_NGD_BACKOFF`` halvings,
            or with no step to undo, ``err`` goes on to :func:`covariance_errors`."""
            if before_step["natural"] is None or before_step["undone"] >= _NGD_BACKOFF:
                raise err
            with torch.no_grad():
                for p, saved in zip(natural, before_step["natural"]):
                    p.copy_(saved)
            for group in ngd.param_groups:
                group["lr"] /= 2
            before_step["undone"] += 1

        def fused_backward(picked: np.ndarray) -> torch.Tensor:
            """The fused objective's loss on the documents ``picked`` (their ids taken with NumPy on the host),
            and its backward."""
            ids = host_ids[picked, : int(host_lengths[picked].max(initial=1))]
            yb, eps = host_targets[torch.from_numpy(picked)], step_draws["eps"]
            if device.type != "cpu":
                yb, eps = yb.to(device, non_blocking=True), eps.to(device, non_blocking=True)
            loss = fused["objective"](ids, yb, eps)
            loss.backward()
            return loss

        def epoch(it: int) -> torch.Tensor:
            perm = torch.randperm(n, generator=g)
            order = perm.numpy()  # the batches' rows on the host (the fused step's)
            losses = []
            for b in range(0, n, batch):
                picked = order[b : b + batch]
                if softmax:
                    step_draws["eps"] = torch.randn(n_draws, len(picked), n_classes, dtype=dtype, generator=draws)
                eager = fused["objective"] is None
                while True:
                    ngd.zero_grad()
                    adam.zero_grad()
                    try:
                        if not eager:
                            loss = fused_backward(picked)
                            if not fused["objective"].usable(stacklevel=6):
                                # a Cholesky factorization of the fused step failed: the step again, eagerly, where
                                # gpytorch adds jitter or raises (and a natural-gradient step is undone, below)
                                eager = True
                                continue
                        else:
                            rows = perm[b : b + batch]
                            loss = backward_on_share(rows, share_loss, [*natural, *others], rank, world_size, device)
                        break
                    except NotPSDError as err:
                        undo_natural_step(err)
                with torch.no_grad():  # q(u) before this step, kept for its undoing (one copy into the buffers)
                    if before_step["natural"] is None:
                        before_step["natural"] = [p.detach().clone() for p in natural]
                    else:
                        torch._foreach_copy_(before_step["natural"], natural)
                natural_gradient_step(ngd)
                adam.step()
                if fused["objective"] is None and fused["wanted"]:
                    fused["objective"] = FusedClassifierObjective(est.model_, est.likelihood_, n, compile=True)
                losses.append((loss.detach(), len(picked)))
            total = torch.zeros((), dtype=torch.float64, device=device)
            for loss, size in losses:  # the epoch's mean loss, summed in the order of its steps
                total = total + loss * size
            return total / n

        def snapshot() -> Any:
            return copy.deepcopy((est.model_.state_dict(), est.likelihood_.state_dict()))

        def restore(states: Any) -> None:
            est.model_.load_state_dict(states[0])
            est.likelihood_.load_state_dict(states[1])

        hint = (
            f"The natural-gradient steps of q(u) (ngd_lr={optimizer.ngd_lr}) or the Adam steps (lr={optimizer.lr}) "
            "overshot: lower the optimizer's ngd_lr (in (0, 1]) or lr."
        )
        with (
            exact_numerics(),
            covariance_errors("the variational GP classifier", hint),
            compiled_blocks(bool(optimizer.compile) and not fused["wanted"]),
            kept_blocks(),
        ):
            # early stopping validates every epoch and keeps the best; else the plateau rule of the epoch losses
            result = fit_stochastic(
                epoch,
                max_iter=int(epochs if budget is None else budget),
                rule=(
                    None
                    if validate is not None
                    else PlateauStopping(window=int(optimizer.convergence_window), tol=float(optimizer.tol))
                ),
                what="the variational GP classifier",
                budget=budget_name,
                unit="epochs",
                validate=validate,
                validation_interval=int(stopping.validation_interval),
                n_iter_no_change=int(stopping.n_iter_no_change),
                state=(snapshot, restore),
                warn=budget is None,  # a chosen budget ends the fit by design
                stacklevel=5,
                advice="lower lr or ngd_lr",
                parameters=lambda: [*natural, *others],
                desc="LDK GP classifier",
                verbose=est.verbose,
            )
            try:  # the last step's q(u) is checked too: predictions factorize it
                for module in est.model_.modules():
                    if isinstance(module, _NaturalDistribution):
                        module()
            except NotPSDError as err:
                undo_natural_step(err)
        est.loss_curve_, est.converged_, est.n_iter_ = list(result.loss_curve), result.converged, result.n_iter
        est.validation_curve_, est.best_iter_ = list(result.validation_curve), result.best_iter
        est.ngd_lr_ = float(ngd.param_groups[0]["lr"])
        if before_step["undone"]:
            warn(
                f"the variational GP classifier: {before_step['undone']} natural-gradient step(s) of q(u) lost its "
                f"positive definiteness and were undone, each halving the step size: ngd_lr {optimizer.ngd_lr} -> "
                f"{est.ngd_lr_:g} (ngd_lr_). Mini-batch estimates of the likelihood's curvature, scaled by n = {n:,}, "
                "are noisy; a smaller ngd_lr avoids the retries",
                ConvergenceWarning,
                stacklevel=4,
            )

    def block_latents(
        self, est: Any, xb: torch.Tensor, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, gpytorch.distributions.MultivariateNormal | None]:
        """``q(f)`` at the block: ``n x C``, or ``n x 1`` for the binary classifier's one latent function."""
        mean, var, f = super().block_latents(est, xb, posterior)
        if mean.dim() == 1:  # the binary variational classifier: one latent function
            return mean[:, None], var[:, None], f
        return mean, var, f

    def latent_width(self, est: Any) -> int:
        return 1 if len(est.classes_) == 2 else len(est.classes_)

    def block_proba(self, est: Any, mean: torch.Tensor, var: torch.Tensor, f: Any) -> torch.Tensor:
        """Two classes: the probit integral, closed-form; more: the softmax by Monte Carlo."""
        if f is not None and len(est.classes_) == 2:
            probs = est.likelihood_(f).probs
            return torch.stack([1 - probs, probs], dim=-1)
        return super().block_proba(est, mean, var, f)


def epoch_budget(n: int, batch: int, given: Any, filled: MiniBatch) -> tuple[int, str]:
    """The variational fit's budget in whole epochs of ``ceil(n / batch)`` steps, and the name of the field that
    sets it: ``max_epochs``, or the fewest epochs that hold ``max_steps`` steps, whichever ends first. Where the
    user's optimizer (``given``; ``None``: the defaults) sets one of the two and not the other, that one alone is
    the budget (``MiniBatch(max_epochs=40)`` is 40 epochs whatever ``n``); else both (``filled``: every field
    set) count."""
    steps_an_epoch = -(-n // batch)
    set_steps = given is not None and given.max_steps is not None
    set_epochs = given is not None and given.max_epochs is not None
    assert filled.max_epochs is not None and filled.max_steps is not None
    by_epochs = int(filled.max_epochs)
    by_steps = -(-int(filled.max_steps) // steps_an_epoch)
    if set_epochs and not set_steps:
        return by_epochs, "max_epochs"
    if set_steps and not set_epochs:
        return by_steps, "max_steps"
    return (by_steps, "max_steps") if by_steps < by_epochs else (by_epochs, "max_epochs")


def natural_gradient_step(ngd: gpytorch.optim.NGD) -> None:
    r"""``ngd.step()``: gpytorch's natural-gradient step :math:`\theta \leftarrow \theta - \mathrm{lr}\,n\,
    \nabla_\eta` (its gradients, with respect to the expectation parameters), as one multi-tensor operator
    for each parameter group (the same arithmetic, one operator a step where the loop dispatches one a
    parameter)."""
    with torch.no_grad():
        for group in ngd.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                torch._foreach_add_(params, [p.grad for p in params], alpha=-group["lr"] * ngd.num_data)


#: the inferences by name (``LDKGPClassifier(inference=...)``), one stateless instance each
INFERENCE_STRATEGIES: dict[str, Inference] = {
    cls.name: cls() for cls in (DirichletInference, VariationalInference, LaplaceInference)
}


def _budget_advice(model: torch.nn.Module) -> str:
    """The advice of the ConvergenceWarning of an evidence fit that its L-BFGS budget ended: with MAP word vectors
    (fitted ones) a longer fit is not the cure it is elsewhere -- their converged fits over-fit the marginal
    likelihood and classified worse on r8 (``benchmarks/README.md``, ``ldk_gpc_convergence.py``), so the budget acts as
    an early stop, and ``early_stopping=True`` chooses it on held-out documents."""
    fitted = any(p.requires_grad for m in word_vector_modules(model) for p in m.parameters())
    if not fitted:
        return "increase max_iter or tol"
    return (
        "with MAP word vectors the budget acts as an early stop (converged fits over-fit the marginal likelihood: "
        "benchmarks/README.md, ldk_gpc_convergence.py); increase max_iter or tol for a converged fit, or pass "
        "early_stopping=True to choose the budget on held-out documents"
    )
