r"""GP classification with the latent distribution kernel.

Two inferences, one estimator (:class:`LDKGPClassifier`); in both, :math:`C` latent GPs (one
per class; one for a binary probit) share one LDK -- the same word vectors -- with a separate
output scale and constant mean per class, and the word vectors carry the
:math:`\mathcal N(0, \rho^{-1}I)` prior of GP-LVSM.

* ``inference="dirichlet"`` (default): Dirichlet-based GP classification (Milios, Camoriano,
  Michiardi, Rosasco & Filippone, NeurIPS 2018; gpytorch's ``DirichletClassificationLikelihood``).
  The one-hot labels become regression targets in log space,
  :math:`\tilde y_{ic} = \log\alpha_{ic} - \sigma^2_{ic}/2` with
  :math:`\alpha_{ic} = \mathbb 1[y_i = c] + \alpha_\epsilon` and fixed heteroscedastic noise
  :math:`\sigma^2_{ic} = \log(1/\alpha_{ic} + 1)` (moment matching of the Dirichlet's gamma
  marginals), plus a learned homoscedastic noise per class. Each class is then an *exact* GP regression,
  so the word vectors, output scales, means and noise are fitted by L-BFGS on the exact log
  marginal likelihood plus the log prior of the word vectors (as GP-LVSM, eq. 11) -- no
  variational parameters, no stochastic optimizer. Class probabilities are
  :math:`\mathbb E[\exp f_c / \sum_{c'} \exp f_{c'}]` under the GPs' predictive marginals (Monte Carlo
  with fixed draws: predictions are a deterministic function of the model and the input).
* ``inference="laplace"``: the softmax likelihood with the Laplace approximation of the posterior
  of the :math:`C` latent functions (Rasmussen & Williams 2006, alg. 3.3-3.4; :mod:`lvgp.models.laplace`):
  the mode by Newton's method, warm-started between the hyper-parameters' steps; the word vectors,
  output scales, means and mix weights by L-BFGS on the approximate log marginal likelihood (eq. 3.44)
  with its exact gradient (the mode's implicit derivative included) plus the log priors; class
  probabilities the softmax averaged over the test latents' correlated Gaussian. No transformed
  labels and no noise: with a linear kernel on features this is Bayesian multinomial logistic
  regression, whose mode is L2-regularized logistic regression. ``log_marginal_likelihood_``
  holds the approximate log evidence after ``fit``.
* ``inference="variational"``: the likelihood is the softmax (probit for two classes) and each GP a
  whitened SVGP on inducing documents (training documents, k-means++ seeded; see
  :mod:`lvgp.models.sparse`). The variational distributions take natural-gradient steps
  (gpytorch's ``NaturalVariationalDistribution`` with ``NGD``), the word vectors and kernel
  parameters Adam steps on the same ELBO; mini-batches when ``batch_size`` is set. This is the
  scalable option (memory and time independent of ``n`` per step).

Both tie the word vectors to pretrained embeddings on request (``word_embeddings``); words unseen
in training that have an embedding then enter prediction with their embedding-implied vectors.
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Self

import gpytorch
import numpy as np
import torch
from gpytorch.kernels import Kernel
from gpytorch.utils.warnings import GPInputWarning
from gpytorch.variational import IndependentMultitaskVariationalStrategy, NaturalVariationalDistribution
from linear_operator.operators import DenseLinearOperator
from linear_operator.utils.errors import NotPSDError
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._random import NUMERICS_SEED, Streams, child_seed, seeded_torch, torch_generator
from .._typing import Documents, TensorLike
from ..base.constraints import RUNTIME, Boolean, Instance, Integer, Options, Real, check_params, documents_input
from ..base.device import check_dense_memory, check_device, state_to_cpu, to_host
from ..base.distributed import backward_on_share, check_same_model, process_group
from ..base.encoding import BagOfWordsInputMixin, DocumentEncoder, take_documents
from ..base.fit_options import LBFGS, EarlyStopping, FitOptions, FitOptionsArgument, FitOptionsMixin, MiniBatch
from ..base.fitting import PlateauStopping, fit_stochastic, log_prior, minimize
from ..base.novelty import NOVELTY_SCORES, PROBABILITY_SCORES, latent_energy, probability_novelty, variance_novelty
from ..base.numerics import covariance_errors, default_dtype, exact_numerics
from ..base.persistence import classes_from_plain, classes_to_plain
from ..base.targets import check_labels, true_class_log_proba
from ..base.validation import check_block
from ..bow.padded import PAD, document_lengths, documents_at, pad_to_common_width
from ..bow.vocabulary import Vocabulary
from ..encoders.sentence import ENCODERS, SentenceEncoder
from ..kernels import LatentDistributionKernel, shared_evaluation
from ..kernels.assembly import EncoderPart
from ..kernels.composition import PART_SELECTIONS
from ..kernels.packed import ENCODER_KERNELS
from ..kernels.spec import KernelArg, KernelArgument, word_vector_modules
from ..warnings import EmptyDocumentsWarning, UnseenWordsWarning, warn
from .dirichlet import SharedDirichletPosterior, shared_dirichlet_log_evidence
from .gplvsm import PaddedInputsMixin
from .inducing import PaddedVariationalStrategy, choose_inducing_documents, step_approximation
from .laplace import SoftmaxLaplaceGP, class_draws, expected_softmax_correlated
from .mixins import (
    FittedVocabularyMixin,
    KernelParamsMixin,
    SavedParamsMixin,
    SentenceEncoderMixin,
    word_source,
)
from .part_selection import PartSelectionMixin

if TYPE_CHECKING:
    pass

__all__ = ["LDKGPClassifier", "DirichletLDKGP", "INFERENCES", "CLASS_HYPERPARAMETERS"]

INFERENCES = ("dirichlet", "variational", "laplace")


#: how often a fit undoes a natural-gradient step that left q(u) not positive definite, halving
#: ``ngd_lr`` each time, before it gives up with a ``CovarianceError``
_NGD_BACKOFF = 10

#: sd of the prior of ``calibration="temperature"`` on log T (a MAP fit, not the leave-one-out log loss
#: alone): weakly informative -- T in [e^-2, e^2] at two sd, the range dev documents chose (0.4-1.2 on
#: 20ng and r8) well inside -- and what keeps a few documents from driving T to its bound
TEMPERATURE_PRIOR_SD = 1.0

#: the classes' output scales and additional noise: one each per class, or one for all classes
CLASS_HYPERPARAMETERS = ("per-class", "shared")


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


class _LDKClassificationGP(gpytorch.models.ApproximateGP):
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


def expected_softmax(
    mean: torch.Tensor, var: torch.Tensor, n_samples: int, class_seeds: list[int] | None = None
) -> torch.Tensor:
    r"""``n x C`` class probabilities :math:`\mathbb E[\mathrm{softmax}(f)]` under independent
    Gaussian marginals ``mean``, ``var`` (``n x C``) of the ``C`` latent functions, by Monte
    Carlo with ``n_samples`` fixed draws, the same for every document and call: a deterministic
    function of its inputs. ``class_seeds`` (one per class, :func:`class_draw_seeds`): each class's
    draws come from its own stream, so that a class gets the same draws wherever its label sorts
    (without them, the draws of column ``c`` are those of position ``c``, from
    ``lvgp._random.NUMERICS_SEED``: the scheme of files saved before). (gpytorch's
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
    return torch.softmax(mean + var.clamp_min(0).sqrt() * eps, dim=-1).mean(0)


def class_draw_seeds(classes: np.ndarray) -> list[int]:
    """One seed per class label for :func:`expected_softmax`: the stream named by the label's text
    (``lvgp._random.child_seed`` of ``NUMERICS_SEED``), so that the Monte Carlo probabilities
    of a class do not depend on its position: on which other labels there are, or on how they sort
    (labels ``1, 2, 10`` read as integers or as strings sort otherwise and predict the same). A
    label of another text draws other numbers: renaming a class moves its probability by the Monte
    Carlo error, of order ``1 / sqrt(predict_samples)`` (a few 0.01 at the default 256)."""
    return [child_seed(NUMERICS_SEED, f"class {label}") for label in np.asarray(classes).tolist()]


#: dense n x n float64 matrices a class that an exact (Dirichlet or Laplace) fit holds at once: the
#: covariance, its Cholesky factor and their gradients (the guard of :func:`~lvgp.base.device.check_dense_memory`)
_DENSE_COPIES_PER_CLASS = 3
#: the same for the shared-hyper-parameter Dirichlet inference, whatever the number of classes (one
#: factorization for all classes, :mod:`lvgp.models.dirichlet`): the kernel matrix, the factor and its
#: inverse, and their gradients
_DENSE_COPIES_SHARED = 6


def _tempered_log_proba(log_p: np.ndarray, temperature: float) -> np.ndarray:
    r"""Log probabilities ``log_p`` (``n x C``) tempered: :math:`\log(p_c^{1/T} / \sum_{c'} p_{c'}^{1/T})`."""
    tempered = log_p / temperature
    tempered = tempered - tempered.max(axis=1, keepdims=True)
    return tempered - np.log(np.exp(tempered).sum(axis=1, keepdims=True))


class LDKGPClassifier(
    PartSelectionMixin,
    FittedVocabularyMixin,
    SentenceEncoderMixin,
    KernelParamsMixin,
    FitOptionsMixin,
    SavedParamsMixin,
    BagOfWordsInputMixin,
    ClassifierMixin,
    BaseEstimator,
):
    r"""GP classifier with LDK (see the module docstring for the two inferences).

    Args:
        inference: ``"dirichlet"`` (exact GPs on Dirichlet-transformed labels, L-BFGS), ``"laplace"``
            (the softmax likelihood, the Laplace approximation, L-BFGS on its log evidence) or
            ``"variational"`` (softmax/probit SVGP: natural gradients for q(u), Adam for the rest).
        kernel: the LDK all classes share: an :class:`~lvgp.kernels.LDKSpec` (``None``, the default: ``LDKSpec(rho=0.1)``,
            learned word vectors of dimension 2, the RBF embedding, the linear level 2; tied to
            ``word_embeddings`` when the spec has them, the projection starting at
            :func:`~lvgp.kernels.spec.tied_projection_scale`; ``approximation="auto"``: exact up to
            ``max_exact_words`` distinct training words -- with the variational inference's mini-batches,
            words of a step: the inducing documents and a batch -- then Nystrom; ``kernel_kind_`` says which), a
            gpytorch ``Kernel`` over padded word-index sets (give the fitted ``vocabulary=`` it was built
            for), or a factory ``callable(num_words) -> Kernel``. The classifier multiplies it by the
            classes' output scales. With the spec's ``identity_weight``, :math:`\lambda` (and
            ``identity_weight_prior_sd``'s log-normal prior on it), the output scales and the embedding map
            are fitted by the classifier's own objective (the marginal likelihood, or the ELBO): with a few
            documents a class the marginal likelihood alone can switch the latent part off
            (``benchmarks/ldk_plus_design.py``). With a few hundred labelled documents the marginal
            likelihood over-fits learned vectors and maps (``results/README.md``), so the ``-plus`` study methods fix them
            (:meth:`LDKSpec.plus <lvgp.kernels.LDKSpec.plus>`).
        class_hyperparameters: ``"per-class"`` (each class's GP has its own output scale and, in the
            Dirichlet inference, additional noise) or ``"shared"`` (one output scale and one noise for
            all classes; the classes' constant means stay their own): with a handful of documents per
            class, per-class scales and noises over-fit the marginal likelihood.
        alpha_epsilon: the Dirichlet prior's pseudo-count of the other classes (Milios et al.'s
            :math:`\alpha_\epsilon`, 0.01 as they suggest). Tune it with the other
            hyper-parameters, on dev documents (what the studies chose: ``results/README.md``).
        calibration: ``None`` or ``"temperature"`` (Dirichlet inference): the probabilities tempered by the
            :math:`T` that minimizes the log loss of the fitted classifier's closed-form leave-one-out
            predictions on its training documents, under a prior :math:`\log T \sim \mathcal N(0, 1)`
            (``temperature_``; no refit; ``T`` within ``[e^-3, e^3]``; the prior keeps a few documents from
            driving it there from a handful of texts). The Dirichlet GP's expected softmax is flattened by
            the wide latent marginals of a few documents a class: with few documents it is under-confident,
            and the temperature (below 1 on such data) cuts its expected calibration error; measured on
            dev documents in ``benchmarks/README.md`` (``gpc_calibration.py``) and on the studies' test
            sets in ``results/README.md``.
        optimizer: ``None`` or the inference's: the Dirichlet inference an :class:`~lvgp.LBFGS` (defaults
            ``max_iter=100, tol=1e-6``); the variational one a :class:`~lvgp.MiniBatch` (defaults
            ``batch_size=None`` (full batch), ``max_epochs=200``, ``lr=0.03`` (Adam's, for the kernel's
            parameters), ``tol=1e-6`` and ``convergence_window=10`` (the relative change of the epoch
            loss over that many epochs), ``ngd_lr=0.1``: the natural-gradient step size of q(u), in
            (0, 1]; a step that leaves q(u) not positive definite (mini-batch curvature estimates scaled
            by n are noisy) is undone and the step size halved, at most 10 times, with a
            ``ConvergenceWarning``; ``ngd_lr_`` is the step size at the end). Unset fields take these
            defaults.
        early_stopping: ``False``; ``True`` or an :class:`~lvgp.EarlyStopping`: choose the budget on
            held-out documents instead: a stratified ``validation_fraction`` (default 0.25) of the
            training documents (:func:`~lvgp.base.splits.dev_split`) is held out, a fit on the rest is
            scored every ``validation_interval`` (default 1) L-BFGS iterations (variational: epochs) by
            the mean negative log predictive probability of the true class, and stops after
            ``n_iter_no_change`` (default 10) iterations without improvement; the classifier is then
            refit on *all* documents for the best iteration count (``best_iter_``; ``policy="refit"``,
            the default), or keeps the held-out fit's best iterate (``"keep-best"``). The MAP word
            vectors over-fit the marginal likelihood when converged
            (``benchmarks/ldk_gpc_convergence.py``): this is the principled early stop.
        num_inducing: inducing documents of the variational inference.
        predict_samples: Monte Carlo draws of the latent functions for the softmax probabilities (the
            same draws for every document and call; each class's from a stream named by its label,
            :func:`class_draw_seeds`, so that a class's probability does not depend on where its label
            sorts; renaming a class moves it by the Monte Carlo error, a few 0.01 at 256 draws). The
            variational inference's fit draws by class position (its ELBO's Monte Carlo, q(u)'s start):
            there the labels' sort order moves the fit itself within that error (0.01 on a toy set).
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (unfitted: fitted on the training texts).
        num_words: for padded-tensor input, the vocabulary size. With ``inference="variational"``, padded
            ids in ``int32`` (or ``int16``) are kept as given, not copied to ``int64`` (each batch is cast);
            prediction does so with either inference (each block is cast).
        random_state: seed of the initialization, the held-out split and the Monte Carlo draws.
        verbose: a progress bar.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.
        sentence_encoder: ``None``, or a pretrained sentence encoder (a name of
            :data:`lvgp.encoders.ENCODERS`, or a :class:`~lvgp.encoders.SentenceEncoder`) whose vectors
            of the texts enter the kernel beside their words (Dirichlet inference, text input). The
            documents then travel as packed rows ``[encoder vector | word ids]``
            (:func:`~lvgp.kernels.packed.pack_documents`). With an :class:`~lvgp.kernels.LDKSpec`, the
            kernel is the spec's over the word ids (:class:`~lvgp.kernels.packed.WordSetKernel`) plus
            ``encoder_kernel``'s part with its own weight :math:`\mu` (:func:`~lvgp.kernels.packed.encoder_part`:
            starting where both parts' self-similarities are equal on the training documents, under a
            log-normal prior of sd 0.5 around that start, fitted with the rest); a user kernel (or
            factory) is used as given, over the packed documents (compose it from ``WordSetKernel`` and
            ``FeatureKernel``; e.g. the encoder's kernel alone). Every text is then a document, also one
            without a vocabulary word (in training too): the encoder reads it, and the word part gives it
            the empty set's value.
        encoder_kernel: the encoder's part with a spec: ``"cosine"``, ``"rbf"`` or ``"matern"`` (of the
            normalized vectors). ``encode_seconds_``: the seconds the fit spent encoding (the model's
            loading included; 0 without a sentence encoder).
        novelty_score: what :meth:`score_samples` returns (higher: more typical of the training classes;
            :mod:`lvgp.base.novelty`): ``"entropy"`` (minus the predictive entropy, the default: it falls
            both where the classes are confused and where the latent posterior is wide),
            ``"max-probability"``, or ``"variance"`` (minus the latent posterior variance over the prior
            variance, averaged over the classes: distance-aware only with a kernel that is, e.g.
            ``encoder_kernel="rbf"``), or ``"energy"`` (the log-sum-exp of the latent means: the Dirichlet
            inference's log total evidence, where no class has evidence). Fixed before any out-of-scope text is seen; ``lvgp compare
            open-set`` records every one.
        part_selection: ``None`` (default: the kernel as composed), ``"loo"`` (Dirichlet inference) or
            ``"evidence"`` (Dirichlet or Laplace): model selection among the sub-compositions of the kernel's
            top sum (with a sentence encoder: the words, the encoder, both), each fitted from the same start
            (:mod:`lvgp.kernels.composition`). ``"loo"``: the leave-one-out log probability of the training
            labels (closed-form, tempered as the predictions are), a sub-composition replacing the sum only
            where its gain exceeds one standard error of the documents' paired gains (MAP word vectors saw
            the left-out text: optimistic for the part that holds them); ``"evidence"``: the fitted evidence
            with BIC's Occam factor (fixed word vectors only, not MAP ones).

    Fitted: ``classes_``, ``class_prior_``, ``model_``, ``likelihood_``, ``loss_curve_``,
    ``word_vectors_``, ``n_iter_``, ``converged_``, ``fit_seconds_``, ``best_iter_`` and
    ``validation_curve_`` (the held-out fit's; ``None`` and ``[]`` without early stopping;
    ``fit_seconds_`` includes the held-out fit), ``selected_parts_`` (the names of the kept parts of the
    kernel's top sum), with ``part_selection`` ``part_scores_``. A ``ConvergenceWarning``
    says when the budget ends before the convergence criterion (L-BFGS's, or for the variational
    inference a relative change of the epoch loss below ``tol`` over 10 epochs).
    """

    _default_kernel: dict[str, Any] = {"rho": 0.1}

    def __init__(
        self,
        kernel: KernelArg = None,
        *,
        inference: str = "dirichlet",
        class_hyperparameters: str = "per-class",
        alpha_epsilon: float = 0.01,
        calibration: str | None = None,
        optimizer: LBFGS | MiniBatch | None = None,
        early_stopping: bool | EarlyStopping = False,
        num_inducing: int = 128,
        predict_samples: int = 256,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
        sentence_encoder: str | SentenceEncoder | None = None,
        encoder_kernel: str = "cosine",
        novelty_score: str = "entropy",
        part_selection: str | None = None,
    ):
        self.kernel = kernel
        self.inference = inference
        self.class_hyperparameters = class_hyperparameters
        self.alpha_epsilon = alpha_epsilon
        self.calibration = calibration
        self.optimizer = optimizer
        self.early_stopping = early_stopping
        self.num_inducing = num_inducing
        self.predict_samples = predict_samples
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.sentence_encoder = sentence_encoder
        self.encoder_kernel = encoder_kernel
        self.novelty_score = novelty_score
        self.part_selection = part_selection

    _format_version = 3
    _first_format_version = 1  # files of lvgp 0.1 load
    _renamed_params = {"n_mc_samples": "predict_samples"}  # (issue 58: one name per meaning)
    _optimizer_defaults = (
        LBFGS(max_iter=100, tol=1e-6),
        MiniBatch(batch_size=None, max_epochs=200, lr=0.03, tol=1e-6, convergence_window=10, ngd_lr=0.1),
    )
    _early_stopping_default = EarlyStopping(
        validation_fraction=0.25, n_iter_no_change=10, validation_interval=1, policy="refit"
    )
    _unused_optimizer_fields = ("max_steps",)
    _optimizer_kind_set_by = "inference"

    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        **documents_input(),
        "optimizer": [None, FitOptionsArgument(LBFGS, MiniBatch, name="optimizer")],
        "early_stopping": [Boolean(), FitOptionsArgument(EarlyStopping, name="early_stopping")],
        "kernel": [KernelArgument(takes={"variational": (False,)}, why="the GP classifier fits MAP word vectors")],
        "inference": [Options(*INFERENCES)],
        "alpha_epsilon": [Real(0, open_low=True)],
        "calibration": [None, Options("temperature")],
        "class_hyperparameters": [Options(*CLASS_HYPERPARAMETERS)],
        "num_inducing": [Integer(1)],
        "predict_samples": [Integer(1)],
        "sentence_encoder": [None, Options(*ENCODERS), Instance(SentenceEncoder)],
        "encoder_kernel": [Options(*ENCODER_KERNELS)],
        "novelty_score": [Options(*NOVELTY_SCORES)],
        "part_selection": [None, Options(*PART_SELECTIONS)],
    }

    def _default_optimizer_kind(self) -> type[FitOptions]:
        return MiniBatch if self.inference == "variational" else LBFGS

    @classmethod
    def _legacy_optimizer_kind(cls, flat: dict[str, Any], params: dict[str, Any]) -> type[FitOptions]:
        return LBFGS if params.get("inference", "dirichlet") == "dirichlet" else MiniBatch

    def _check_params(self) -> None:
        check_params(self)
        spec = self._spec
        if spec is not None:  # the default spec's capabilities too
            self._parameter_constraints["kernel"][0].check_capabilities(spec)
        if self.calibration == "temperature" and self.inference != "dirichlet":
            raise ValueError(
                "calibration='temperature' needs inference='dirichlet' (its leave-one-out predictions are closed-form)"
            )
        if self.part_selection == "evidence" and self.inference == "variational":
            raise ValueError(
                "part_selection='evidence' needs inference='dirichlet' or 'laplace' (an evidence each "
                "sub-composition reaches; the variational inference's is a stochastic mini-batch bound)"
            )
        if self.part_selection == "loo" and self.inference != "dirichlet":
            raise ValueError(
                "part_selection='loo' needs inference='dirichlet' (its leave-one-out predictions are closed-form)"
            )
        if self.sentence_encoder is not None and self.inference == "variational":
            raise ValueError(
                "sentence_encoder needs inference='dirichlet' or 'laplace' (the variational inference takes word "
                "ids only)"
            )

    def _word_embeddings(self) -> Any:
        spec = self._spec
        return None if spec is None else word_source(spec.word_embeddings, self.sentence_encoder, self.device)

    def _kernel(self, seed: int, x: torch.Tensor, inducing: torch.Tensor | None = None) -> Kernel:
        """The kernel on the training documents ``x`` (padded word ids, or packed with the sentence
        encoder's vectors); with the variational inference's ``inducing`` documents, ``"auto"`` is decided
        on the documents of a step (:func:`~lvgp.models.inducing.step_approximation`; with the default
        full batch, the training documents' words as for the Dirichlet inference)."""
        encoder = self.encoder_
        words = encoder.vocabulary.words if encoder.vocabulary is not None else None
        dim = None if self.sentence_encoder is None else self._sentence_encoder().dim
        ids = x if dim is None else x[..., dim:].long()
        spec = self._spec
        approximation = None
        if spec is not None and inducing is not None and spec.approximation == "auto":
            batch_size = self._optimizer_options().batch_size  # None: a full batch
            approximation = step_approximation(spec, ids, inducing, batch_size, seed)
        kernel = self._assembled_kernel(
            encoder.num_words,
            ids,
            word_features=encoder.word_features,
            words=words,
            seed=seed,
            approximation=approximation,
            encoder=None if dim is None else EncoderPart(dim, self.encoder_kernel),
            scale=False,  # each class's output scale is the model's
        )
        return self._restricted(kernel)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Documents, y: TensorLike, unlabeled: Documents | None = None) -> Self:
        """Fit on training documents ``X`` (texts, counts or a padded tensor) and labels ``y``;
        ``unlabeled``: further texts that ``word_embeddings="corpus"`` learns word vectors from."""
        self._check_params()
        self._streams = Streams(self.random_state)  # random_state is read once a fit
        start = time.perf_counter()
        self._encode_clock = 0.0
        stopping = self._early_stopping_options()
        policy = None if stopping is None else stopping.policy
        budget: int | None = None
        curve: list[float] = []
        if policy == "keep-best":
            self._fit_kept_best(X, y, unlabeled)
        else:
            if policy == "refit":
                budget, curve = self._early_stopping_budget(X, y, unlabeled)
            self._fit(X, y, budget, unlabeled=unlabeled)
            self.best_iter_, self.validation_curve_ = budget, curve
        self.temperature_ = 1.0
        if self.calibration == "temperature":
            self.temperature_ = self._fit_temperature()
        self.fit_seconds_ = time.perf_counter() - start
        self.encode_seconds_ = self._encode_clock
        return self

    def _fitted_log_evidence(self) -> float:
        """The Dirichlet or Laplace inference's fitted objective times ``n``: the log marginal likelihood
        (or its approximation) plus the hyper-parameters' log priors, at the kept parameters."""
        return self._log_evidence_fitted

    def leave_one_out_latents(self) -> tuple[torch.Tensor, torch.Tensor]:
        r"""The ``n x C`` means and variances of the latent functions at each training document given the
        others (Dirichlet inference; the fitted hyper-parameters): with :math:`\mathbf K_y` a class's
        covariance plus its noise :math:`\sigma^2_i` and :math:`\boldsymbol\alpha = \mathbf K_y^{-1}
        (\tilde{\mathbf y} - \mathbf m)`, :math:`\tilde y_i - \alpha_i / [\mathbf K_y^{-1}]_{ii}` and
        :math:`1 / [\mathbf K_y^{-1}]_{ii} - \sigma^2_i` (Rasmussen & Williams, eq. 5.12). One Cholesky a
        class, or with ``class_hyperparameters="shared"`` one for all classes
        (:meth:`~lvgp.models.dirichlet.SharedDirichletPosterior.leave_one_out`)."""
        check_is_fitted(self, "model_")
        if self.inference != "dirichlet":
            raise ValueError("leave_one_out_latents needs inference='dirichlet'")
        model, likelihood = self.model_, self.likelihood_
        posterior = self._posterior()
        if isinstance(posterior, SharedDirichletPosterior):  # one factorization for all classes
            with torch.no_grad(), exact_numerics():
                mean, var = posterior.leave_one_out()
            return mean.mT, var.mT
        model.train()
        likelihood.train()
        try:
            with torch.no_grad(), exact_numerics(), covariance_errors("Dirichlet GP classifier", "Try a larger rho."):
                prior = model(model.train_inputs[0])
                covariance = likelihood(prior).covariance_matrix  # C x n x n
                noise = covariance.diagonal(dim1=-2, dim2=-1) - prior.variance
                precision = torch.cholesky_inverse(torch.linalg.cholesky(covariance))
                residual = likelihood.transformed_targets - prior.mean
                alpha = (precision @ residual.unsqueeze(-1)).squeeze(-1)
                diag = precision.diagonal(dim1=-2, dim2=-1)
                mean = likelihood.transformed_targets - alpha / diag
                var = (1.0 / diag - noise).clamp_min(0.0)
        finally:
            model.eval()
            likelihood.eval()
        return mean.mT, var.mT

    def _fit_temperature(self, loo: tuple[np.ndarray, np.ndarray] | None = None) -> float:
        r"""``calibration="temperature"``: the :math:`T` whose tempered probabilities
        :math:`p_c^{1/T} / \sum_{c'} p_{c'}^{1/T}` minimize the log loss of the fitted classifier's
        leave-one-out predictions on its training documents (the expected softmax of
        :meth:`leave_one_out_latents`). No refit; the hyper-parameters are the full fit's (a slight
        optimism that the held-out ECE of ``results/README.md`` measures). ``loo``: those predictions
        (:meth:`_loo_log_proba`), where the caller has them."""
        from scipy.optimize import minimize_scalar

        log_p, truth = self._loo_log_proba() if loo is None else loo

        def loss(log_t: float) -> float:
            fit = -np.mean(_tempered_log_proba(log_p, float(np.exp(log_t)))[np.arange(len(truth)), truth])
            # the prior log T ~ N(0, TEMPERATURE_PRIOR_SD^2), per document: a handful of documents cannot
            # drive T to its bound (6 texts fitted T = 0.06 without it and turned 0.93 into 1.0)
            return float(fit + log_t**2 / (2 * TEMPERATURE_PRIOR_SD**2 * len(truth)))

        return float(np.exp(minimize_scalar(loss, bounds=(-3.0, 3.0), method="bounded").x))

    def _loo_log_proba(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``n x C`` log probabilities of the leave-one-out predictions on the training documents
        (the expected softmax of :meth:`leave_one_out_latents`) and the training labels' codes."""
        mean, var = self.leave_one_out_latents()
        with torch.no_grad():
            proba = expected_softmax(mean, var, self.predict_samples, self._class_seeds())
        truth = self.likelihood_.targets.cpu().numpy().astype(int)
        return torch.log(proba.clamp_min(1e-300)).cpu().numpy(), truth

    def _loo_log_predictive(self) -> torch.Tensor:
        """``part_selection="loo"`` (Dirichlet inference): the ``n`` log leave-one-out probabilities of the
        training labels, tempered by the temperature fitted on them where ``calibration="temperature"``
        (as the predictions will be)."""
        log_p, truth = self._loo_log_proba()
        temperature = self._fit_temperature((log_p, truth)) if self.calibration == "temperature" else 1.0
        return torch.from_numpy(_tempered_log_proba(log_p, temperature)[np.arange(len(truth)), truth])

    def _temper(self, proba: np.ndarray) -> np.ndarray:
        """Probabilities tempered by the fitted :math:`T` (``calibration="temperature"``)."""
        temperature = getattr(self, "temperature_", 1.0)
        if temperature == 1.0:
            return proba
        tempered = np.log(np.maximum(proba, 1e-300)) / temperature
        tempered -= tempered.max(axis=1, keepdims=True)
        tempered = np.exp(tempered)
        return tempered / tempered.sum(axis=1, keepdims=True)

    def _held_out(self, X: Documents, y: TensorLike) -> tuple[np.ndarray, np.ndarray, int | None]:
        """The stratified training and validation rows of early stopping (and the vocabulary size
        of padded input, which the held-out part must keep); no validation rows, with a warning,
        when the classes leave none."""
        from ..base.splits import early_stopping_split

        encoder = DocumentEncoder(self.vocabulary, self.num_words)
        n = encoder.fit_transform(X, "X").shape[0]  # validates X before it is split
        _, codes = check_labels(y, n)
        stopping = self._stopping()
        train, dev = early_stopping_split(n, float(stopping.validation_fraction), self._fit_streams().root, codes)
        if not len(dev):
            warn(
                f"early_stopping: {n} documents of {codes.max() + 1} classes leave no validation part; "
                "fitted with the full budget (the optimizer's max_iter / max_epochs)",
                UserWarning,
                stacklevel=4,
            )
        return train, dev, encoder.num_words if encoder.kind == "padded" else None

    def _fit_kept_best(self, X: Documents, y: TensorLike, unlabeled: Documents | None) -> None:
        """``early_stopping="keep-best"``: fit on the training part, validated on the held-out part,
        and keep the best validated iterate (no refit)."""
        train, dev, num_words = self._held_out(X, y)
        if not len(dev):
            self._fit(X, y, unlabeled=unlabeled)
            return
        labels = np.asarray(y)
        saved = self.num_words
        if num_words is not None and saved is None:
            self.num_words = num_words  # the held-out part may hold the largest id
        try:
            self._fit(
                take_documents(X, train),
                labels[train],
                validation=(take_documents(X, dev), labels[dev]),
                unlabeled=unlabeled,
            )
        finally:
            self.num_words = saved

    def _early_stopping_budget(
        self, X: Documents, y: TensorLike, unlabeled: Documents | None = None
    ) -> tuple[int | None, list[float]]:
        """The best iteration count (and the validation curve) of a fit on a stratified part of
        ``X`` scored on the rest; ``(None, [])`` with a warning when no part can be held out."""
        from sklearn.base import clone

        train, dev, num_words = self._held_out(X, y)
        if not len(dev):
            return None, []
        probe = clone(self).set_params(verbose=False)  # _fit on the parts: early stopping's patience, no hold-out
        probe._streams = self._fit_streams()
        if num_words is not None:
            probe.set_params(num_words=num_words)  # the held-out part may hold the largest id
        labels = np.asarray(y)
        probe._fit(
            take_documents(X, train),
            labels[train],
            validation=(take_documents(X, dev), labels[dev]),
            unlabeled=unlabeled,
        )
        return probe.best_iter_, probe.validation_curve_

    def _fit(
        self,
        X: Documents,
        y: TensorLike,
        budget: int | None = None,
        validation: tuple | None = None,
        unlabeled: Documents | None = None,
    ) -> None:
        """Fit with ``budget`` L-BFGS iterations (epochs) instead of the optimizer's ``max_iter`` (``max_epochs``),
        or with early stopping on ``validation`` = ``(X_dev, y_dev)`` (sets ``best_iter_``)."""
        self.encoder_ = DocumentEncoder(self.vocabulary, self.num_words, self._word_embeddings())
        # the variational inference takes mini-batches: an int32 corpus stays int32 (cast batch by batch)
        compact = self.inference == "variational" and self.sentence_encoder is None
        # with a sentence encoder a text without a known word is still a document: its vector
        x = self.encoder_.fit_transform(
            X, "X", unlabeled=unlabeled, compact=compact, allow_empty=self.sentence_encoder is not None
        )
        x = self._with_encoder(x, X, "X")
        self.classes_, codes = check_labels(y, x.shape[0])
        self.class_prior_ = np.bincount(codes) / len(codes)
        self._mc_draws = "by-class"  # files saved before hold none: their draws are by position
        self._train = (x, codes)  # what save() writes: the model is rebuilt from them on load
        if self.inference == "variational" and process_group()[1] > 1:
            check_same_model(self.random_state, "LDKGPClassifier")
        seed = self._fit_streams().root
        self.device_ = check_device(self.device)
        if self.inference != "variational":  # dense n x n covariances and factors, and their gradients
            shared = self.inference == "dirichlet" and self.class_hyperparameters == "shared"
            check_dense_memory(
                x.shape[0],
                _DENSE_COPIES_SHARED if shared else _DENSE_COPIES_PER_CLASS * len(self.classes_),
                self.device_,
                f"the {self.inference} GP classifier on {x.shape[0]:,} documents and {len(self.classes_)} classes",
                "Pass fewer documents, or inference='variational' (mini-batches; word ids only).",
            )
        self.validation_curve_, self.best_iter_ = [], None

        def fit_one() -> None:
            with default_dtype(torch.float64):
                validate = None if validation is None else self._validation_loss(*validation)
                if self.inference == "dirichlet":
                    self._fit_dirichlet(x, codes, seed, budget, validate)
                elif self.inference == "laplace":
                    self._fit_laplace(x, codes, seed, budget, validate)
                else:
                    # gpytorch's softmax ELBO draws its Monte Carlo samples from torch's global generator:
                    # seed it inside a forked scope, so fits are reproducible and the caller's stream is untouched
                    with seeded_torch(seed):
                        self._fit_variational(x, codes, seed, budget, validate)

        self._fit_parts(fit_one, x.shape[0])
        if self.inference == "laplace":  # the kept fit's probabilities, not every sub-composition's
            self._warn_if_laplace_flattens(self.model_)
        self.model_.eval()
        self.likelihood_.eval()

    def _fit_streams(self) -> Streams:
        """The fit's random streams: made once by :meth:`fit`, shared with its early-stopping probe (a
        part fitted on its own makes its own)."""
        streams = getattr(self, "_streams", None)
        return streams if streams is not None else Streams(self.random_state)

    def _validation_loss(self, X_dev: Documents, y_dev: np.ndarray) -> Callable[[], float]:
        """Mean negative log predictive probability of the true class on ``(X_dev, y_dev)``
        under the current parameters (floored at 1e-300 for a class never seen in training)."""

        def loss() -> float:
            self.model_.eval()
            self.likelihood_.eval()
            try:
                with warnings.catch_warnings():  # counted once by the final model's predictions, not per iteration
                    warnings.simplefilter("ignore", UnseenWordsWarning)
                    warnings.simplefilter("ignore", EmptyDocumentsWarning)
                    proba = self.predict_proba(X_dev)
            finally:
                self.model_.train()
                self.likelihood_.train()
            return float(-np.mean(true_class_log_proba(proba, self.classes_, y_dev)))

        return loss

    def _build_dirichlet(self, x: torch.Tensor, codes: np.ndarray, seed: int) -> None:
        """``model_`` and ``likelihood_`` of the Dirichlet inference at their initial values, on ``device_``."""
        targets = torch.from_numpy(codes)
        shared = self.class_hyperparameters == "shared"
        likelihood = _DirichletLikelihood(
            targets,
            alpha_epsilon=self.alpha_epsilon,
            learn_additional_noise=True,
            dtype=torch.float64,
            shared_noise=shared,
        ).double()
        likelihood.second_noise = torch.full_like(likelihood.second_noise, 0.1)
        model = DirichletLDKGP(x, likelihood, self._kernel(seed, x), shared).to(self.device_)
        self.model_, self.likelihood_ = model, likelihood

    def _fit_dirichlet(
        self,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        self._build_dirichlet(x, codes, seed)
        model, likelihood = self.model_, self.likelihood_
        n = x.shape[0]
        inputs = model.train_inputs[0]
        model.train()
        likelihood.train()

        shared = self.class_hyperparameters == "shared"

        def evidence() -> torch.Tensor:
            # sum over classes of the exact log marginal likelihood (the word vectors' log prior is
            # added once, by _maximize_evidence: gpytorch's ExactMarginalLogLikelihood would add it once
            # per class); with one output scale and noise for all classes, one factorization serves every
            # class (lvgp.models.dirichlet), else gpytorch factors each class's covariance
            with exact_numerics(), covariance_errors("Dirichlet GP classifier", "Try a larger rho."):
                if shared:
                    return shared_dirichlet_log_evidence(*self._shared_dirichlet_terms(inputs))
                return likelihood(model(inputs)).log_prob(likelihood.transformed_targets).sum()

        result = self._maximize_evidence(model, evidence, n, budget, validate, "LDK GP classifier")
        if budget is None:  # a chosen budget ends the fit by design
            result.warn_if_unconverged("the Dirichlet GP classifier", unit="L-BFGS iterations", stacklevel=4)

    def _maximize_evidence(
        self,
        model: torch.nn.Module,
        evidence: Callable[[], torch.Tensor],
        n: int,
        budget: int | None,
        validate: Callable[[], float] | None,
        desc: str,
    ) -> Any:
        """L-BFGS on minus ``evidence()`` (the inference's log marginal likelihood, or its approximation)
        plus the log priors -- the word vectors' once, through their ``penalty()``, and the other
        hyper-parameters' (e.g. ``identity_weight_prior``) -- per document; sets the fit's curves and
        returns :func:`~lvgp.base.fitting.minimize`'s result."""
        vectors = word_vector_modules(model)

        def objective() -> torch.Tensor:
            priors = log_prior(model, exclude=vectors)
            return -(evidence() + priors - sum((v.penalty() for v in vectors), torch.zeros(()))) / n

        optimizer, stopping = self._optimizer_options(), self._stopping()
        result = minimize(
            [p for p in model.parameters() if p.requires_grad],
            objective,
            method="lbfgs",
            max_iter=int(optimizer.max_iter if budget is None else budget),
            tol=float(optimizer.tol),
            validate=validate,
            validation_interval=int(stopping.validation_interval),
            n_iter_no_change=int(stopping.n_iter_no_change),
            verbose=self.verbose,
            desc=desc,
        )
        if self.part_selection is not None:  # what "evidence" compares: the kept parameters' objective
            with torch.no_grad():
                self._log_evidence_fitted = -float(objective()) * n
        self.loss_curve_, self.n_iter_, self.converged_ = list(result.loss_curve), result.n_iter, result.converged
        self.validation_curve_, self.best_iter_ = list(result.validation_curve), result.best_iter
        return result

    def _build_laplace(self, x: torch.Tensor, codes: np.ndarray, seed: int) -> None:
        """``model_`` (a :class:`~lvgp.models.laplace.SoftmaxLaplaceGP`) and ``likelihood_`` (the softmax,
        no parameters: the model computes the Laplace approximation itself) at their initial values."""
        shared = self.class_hyperparameters == "shared"
        n_classes = len(self.classes_)
        model = SoftmaxLaplaceGP(x, torch.from_numpy(codes), n_classes, self._kernel(seed, x), shared)
        self.model_ = model.to(self.device_)
        likelihood = gpytorch.likelihoods.SoftmaxLikelihood(num_classes=n_classes, mixing_weights=False)
        self.likelihood_ = likelihood.to(self.device_)

    def _fit_laplace(
        self,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        """L-BFGS on minus the approximate log marginal likelihood (eq. 3.44) and the log priors of the
        word vectors and the other hyper-parameters, per document (as the Dirichlet inference's)."""
        self._build_laplace(x, codes, seed)
        model = self.model_
        n = x.shape[0]
        model.train()

        def evidence() -> torch.Tensor:
            with exact_numerics(), covariance_errors("Laplace GP classifier", "Try a larger rho."):
                return model.log_evidence()

        result = self._maximize_evidence(model, evidence, n, budget, validate, "LDK GP classifier (Laplace)")
        with torch.no_grad(), exact_numerics():  # the mode and evidence at the kept parameters
            self.log_marginal_likelihood_ = float(model.log_evidence())
        iterations, gradient = model.last_search
        if gradient > 1e-6:
            warn(
                f"the Laplace mode search stopped after {iterations} Newton iterations with a gradient of "
                f"{gradient:.2g}; its evidence and predictions are approximate",
                ConvergenceWarning,
                stacklevel=4,
            )
        if budget is None:
            result.warn_if_unconverged("the Laplace GP classifier", unit="L-BFGS iterations", stacklevel=4)

    #: how much below its mode's the Laplace predictive's mean top probability on the training documents may
    #: fall before a warning says the probabilities are under-confident (:meth:`_warn_if_laplace_flattens`)
    _LAPLACE_FLATTENING = 0.3

    def _warn_if_laplace_flattens(self, model: SoftmaxLaplaceGP, documents: int = 300) -> None:
        """An :class:`~lvgp.warnings.UncertaintyWarning` when, on (up to ``documents``) training documents, the
        predictive probabilities' mean top probability is far below the mode's softmax's. On near-separable
        training data the approximate evidence grows with the output scale and the mode saturates, where
        the softmax's curvature W vanishes: the Laplace posterior then keeps most of the prior's variance
        and averaging the softmax over it flattens the probabilities toward uniform (R&W sec. 3.4's
        approximation, not the model, is at fault; ``benchmarks/README.md`` measures it)."""
        from ..warnings import UncertaintyWarning

        with torch.no_grad(), exact_numerics():
            posterior = model.posterior()
            rows = torch.arange(min(documents, model.train_x.shape[0]))
            mode_top = torch.softmax(posterior[0].f[:, rows], dim=0).max(0).values.mean()
            mean, cov = model.latents(model.train_x[rows], posterior)
            proba = expected_softmax_correlated(mean, cov, self.predict_samples, class_draw_seeds(self.classes_))
            predictive_top = proba.max(-1).values.mean()
        if float(mode_top - predictive_top) > self._LAPLACE_FLATTENING:
            scale = float(model.covar_module.outputscale.detach().max())
            warn(
                f"the Laplace GP classifier's probabilities are under-confident: on {len(rows)} training documents "
                f"their mean top probability is {float(predictive_top):.2f}, its mode's softmax's "
                f"{float(mode_top):.2f}. The evidence chose an output scale of {scale:.3g}, where the saturated "
                "mode leaves the latents most of their prior variance (near-separable training data). Use "
                "inference='dirichlet' (with calibration='temperature'), or a kernel whose scale a prior bounds.",
                UncertaintyWarning,
                stacklevel=5,
            )

    def _build_variational(self, x: torch.Tensor, codes: np.ndarray, seed: int) -> torch.Tensor:
        """``model_`` and ``likelihood_`` of the variational inference at their initial values (inducing
        documents chosen by k-means++ with ``seed``), on ``device_``; returns the training targets."""
        n_classes = len(self.classes_)
        idx = choose_inducing_documents(x, self.encoder_.num_words, int(self.num_inducing), "kmeans++", seed)
        binary = n_classes == 2
        inducing = documents_at(x, idx)
        self.model_ = _LDKClassificationGP(
            inducing,
            self._kernel(seed, x, inducing),
            1 if binary else n_classes,
            shared_outputscale=self.class_hyperparameters == "shared",
        )
        if binary:
            self.likelihood_ = gpytorch.likelihoods.BernoulliLikelihood()
            targets = torch.from_numpy(codes.astype(np.float64))
        else:
            self.likelihood_ = gpytorch.likelihoods.SoftmaxLikelihood(num_classes=n_classes, mixing_weights=False)
            targets = torch.from_numpy(codes)
        self.model_, self.likelihood_ = self.model_.to(self.device_), self.likelihood_.to(self.device_)
        return targets

    def _fit_variational(
        self,
        x: torch.Tensor,
        codes: np.ndarray,
        seed: int,
        budget: int | None = None,
        validate: Callable[[], float] | None = None,
    ) -> None:
        targets = self._build_variational(x, codes, seed)
        device = self.device_
        # batches are drawn on the host and cut to their longest document by the lengths kept there
        n, lengths = x.shape[0], document_lengths(x)
        x_device, targets = x.to(device), targets.to(device)
        mll = gpytorch.mlls.VariationalELBO(self.likelihood_, self.model_, num_data=n)
        natural = list(self.model_.variational_parameters())
        natural_ids = {id(p) for p in natural}
        others = [
            p
            for p in [*self.model_.parameters(), *self.likelihood_.parameters()]
            if p.requires_grad and id(p) not in natural_ids
        ]
        optimizer, stopping = self._optimizer_options(), self._stopping()
        ngd = gpytorch.optim.NGD(natural, num_data=n, lr=float(optimizer.ngd_lr))
        adam = torch.optim.Adam(others, lr=float(optimizer.lr))
        batch = n if optimizer.batch_size is None else int(optimizer.batch_size)
        g = torch_generator(seed)
        self.model_.train()
        self.likelihood_.train()

        # inside a torch.distributed group (torchrun): each process takes its share of every batch
        rank, world_size = process_group()

        def share_loss(rows: torch.Tensor) -> torch.Tensor:
            rows_device = rows.to(device)
            with shared_evaluation(self.model_):  # K_ZZ, K_ZX and diag K_XX: each set's norms once
                return -mll(self.model_(documents_at(x_device, rows_device, lengths[rows])), targets[rows_device])

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

        def epoch(it: int) -> torch.Tensor:
            perm = torch.randperm(n, generator=g)
            total = torch.zeros((), dtype=torch.float64, device=device)
            for b in range(0, n, batch):
                rows = perm[b : b + batch]
                while True:
                    ngd.zero_grad()
                    adam.zero_grad()
                    try:
                        loss = backward_on_share(rows, share_loss, [*natural, *others], rank, world_size, device)
                        break
                    except NotPSDError as err:
                        undo_natural_step(err)
                before_step["natural"] = [p.detach().clone() for p in natural]
                ngd.step()
                adam.step()
                total = total + loss.detach() * len(rows)
            return total / n

        def snapshot() -> Any:
            return copy.deepcopy((self.model_.state_dict(), self.likelihood_.state_dict()))

        def restore(states: Any) -> None:
            self.model_.load_state_dict(states[0])
            self.likelihood_.load_state_dict(states[1])

        hint = (
            f"The natural-gradient steps of q(u) (ngd_lr={optimizer.ngd_lr}) or the Adam steps (lr={optimizer.lr}) "
            "overshot: lower the optimizer's ngd_lr (in (0, 1]) or lr."
        )
        with exact_numerics(), covariance_errors("the variational GP classifier", hint):
            # early stopping validates every epoch and keeps the best; else the plateau rule of the epoch losses
            result = fit_stochastic(
                epoch,
                max_iter=int(optimizer.max_epochs if budget is None else budget),
                rule=(
                    None
                    if validate is not None
                    else PlateauStopping(window=int(optimizer.convergence_window), tol=float(optimizer.tol))
                ),
                what="the variational GP classifier",
                budget="max_epochs",
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
                verbose=self.verbose,
            )
            try:  # the last step's q(u) is checked too: predictions factorize it
                for module in self.model_.modules():
                    if isinstance(module, _NaturalDistribution):
                        module()
            except NotPSDError as err:
                undo_natural_step(err)
        self.loss_curve_, self.converged_, self.n_iter_ = list(result.loss_curve), result.converged, result.n_iter
        self.validation_curve_, self.best_iter_ = list(result.validation_curve), result.best_iter
        self.ngd_lr_ = float(ngd.param_groups[0]["lr"])
        if before_step["undone"]:
            warn(
                f"the variational GP classifier: {before_step['undone']} natural-gradient step(s) of q(u) lost its "
                f"positive definiteness and were undone, each halving the step size: ngd_lr {optimizer.ngd_lr} -> "
                f"{self.ngd_lr_:g} (ngd_lr_). Mini-batch estimates of the likelihood's curvature, scaled by n = {n:,}, "
                "are noisy; a smaller ngd_lr avoids the retries",
                ConvergenceWarning,
                stacklevel=4,
            )

    # ------------------------------------------------------------------ persistence
    def _fitted_payload(self) -> dict:
        """The vocabulary (and word embeddings), the training documents and labels, the model's and
        likelihood's state."""
        x, codes = self._train
        return {
            "encoder": self.encoder_.to_dict(),
            "classes": classes_to_plain(self.classes_),
            "train_x": x.cpu().clone(),
            "train_codes": torch.from_numpy(np.asarray(codes, dtype=np.int64)),
            "model": state_to_cpu(self.model_.state_dict()),
            "likelihood": state_to_cpu(self.likelihood_.state_dict()),
            "fit": {
                "n_iter": self.n_iter_,
                "converged": self.converged_,
                "loss_curve": list(self.loss_curve_),
                "validation_curve": list(self.validation_curve_),
                "best_iter": self.best_iter_,
                "fit_seconds": getattr(self, "fit_seconds_", None),
                "encode_seconds": getattr(self, "encode_seconds_", None),
                "temperature": getattr(self, "temperature_", 1.0),
                "mc_draws": getattr(self, "_mc_draws", "by-position"),
                **self._saved_parts(),
                **(
                    {"log_marginal_likelihood": self.log_marginal_likelihood_}
                    if hasattr(self, "log_marginal_likelihood_")
                    else {}
                ),
            },
        }

    def _restore_fitted(self, payload: dict) -> None:
        est = self
        est.encoder_ = DocumentEncoder.from_dict(payload["encoder"])
        if "classes_dtype" in payload:  # format 1 (lvgp 0.1)
            dtype = payload["classes_dtype"]
            est.classes_ = np.array(payload["classes"], dtype=object if dtype == "object" else np.dtype(dtype))
        else:
            est.classes_ = classes_from_plain(payload["classes"])
        x, codes = payload["train_x"], payload["train_codes"].numpy()
        est.class_prior_ = np.bincount(codes, minlength=len(est.classes_)) / len(codes)
        est._train = (x, codes)
        est.device_ = check_device(est.device)
        seed = Streams(est.random_state).root  # the build's start, overwritten by the saved state
        est._parts = None if payload["fit"].get("parts") is None else tuple(payload["fit"]["parts"])
        with default_dtype(torch.float64):
            if est.inference == "dirichlet":
                est._build_dirichlet(x, codes, seed)
            elif est.inference == "laplace":
                est._build_laplace(x, codes, seed)
            else:
                est._build_variational(x, codes, seed)
        est.model_.load_state_dict(payload["model"])  # copied into the model's tensors, on its device
        est.likelihood_.load_state_dict(payload["likelihood"])
        est.model_.eval()
        est.likelihood_.eval()
        fit = payload["fit"]
        est.n_iter_, est.converged_, est.best_iter_ = fit["n_iter"], fit["converged"], fit["best_iter"]
        est.loss_curve_, est.validation_curve_ = list(fit["loss_curve"]), list(fit["validation_curve"])
        if fit["fit_seconds"] is not None:
            est.fit_seconds_ = fit["fit_seconds"]
        if fit.get("encode_seconds") is not None:
            est.encode_seconds_ = fit["encode_seconds"]
        est.temperature_ = float(fit.get("temperature", 1.0))
        if "log_marginal_likelihood" in fit:
            est.log_marginal_likelihood_ = fit["log_marginal_likelihood"]
        est._mc_draws = fit.get("mc_draws", "by-position")  # saved before: predicted with the draws by position
        est._restore_parts(fit)

    def _class_seeds(self) -> list[int] | None:
        """The Monte Carlo draws' streams: one per class label (:func:`class_draw_seeds`), or
        ``None`` (by position) for a file saved before they were."""
        return class_draw_seeds(self.classes_) if getattr(self, "_mc_draws", "by-position") == "by-class" else None

    @property
    def word_vectors_(self) -> np.ndarray:
        """``num_words x latent_dim`` learned word vectors (of the kernel's one word-vector module)."""
        check_is_fitted(self, "model_")
        modules = word_vector_modules(self.model_.covar_module)
        if len(modules) != 1:
            raise AttributeError(f"word_vectors_: the kernel holds {len(modules)} word-vector modules, not one")
        return to_host(modules[0].mean).copy()

    # ------------------------------------------------------------------ predict
    @contextlib.contextmanager
    def _prediction_blocks(self, X: Documents, block: int) -> Iterator[tuple[int, torch.Tensor, Iterator]]:
        """``(n, empty, blocks)`` of the documents ``X``: their number, the mask of those no part of
        the kernel reads (no known word and no sentence encoder), and an iterator over blocks of at
        most ``block`` of the others: ``(rows, documents)``, the rows on the model's device, the
        documents as the kernel takes them (packed with the encoder's vectors where there is one).
        Inside: no gradients, the exact numerics, no ``GPInputWarning`` (predicting at the training
        documents is legitimate: a score on the training set)."""
        check_is_fitted(self, "model_")
        block = check_block(block)
        modules = word_vector_modules(self.model_.covar_module)
        # int32 ids stay so, cast block by block
        with self.encoder_.predicting(X, modules[0] if len(modules) == 1 else None, compact=True) as x:
            # a document without a known word is left out only where no part of the kernel reads it: with a
            # sentence encoder its vector does
            empty = (x == PAD).all(-1) & (self.sentence_encoder is None)
            rows = torch.nonzero(~empty).ravel()
            features = self._encoder_features(X, "X") if self.sentence_encoder is not None else None

            def blocks() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
                for b in range(0, len(rows), block):
                    idx = rows[b : b + block]
                    xb = documents_at(x, idx)
                    if features is not None:
                        xb = torch.cat([features[idx], xb.double()], dim=-1)
                    yield idx.to(self.device_), xb.to(self.device_)

            with torch.no_grad(), exact_numerics(), warnings.catch_warnings():
                warnings.simplefilter("ignore", GPInputWarning)
                yield x.shape[0], empty, blocks()

    def _posterior(self) -> Any:
        """What prediction computes once for all blocks of a call: the Laplace inference's mode
        (alg. 3.4's), the shared-hyper-parameter Dirichlet inference's one factorization for all
        classes (:class:`~lvgp.models.dirichlet.SharedDirichletPosterior`), else ``None`` (gpytorch's own
        prediction, which factors each class's covariance). Not kept: early stopping predicts between
        the fit's steps."""
        if self.inference == "laplace":
            return self.model_.posterior()
        if self.inference == "dirichlet" and self.class_hyperparameters == "shared":
            with torch.no_grad(), exact_numerics(), covariance_errors("Dirichlet GP classifier", "Try a larger rho."):
                return SharedDirichletPosterior(*self._shared_dirichlet_terms(self.model_.train_inputs[0]))
        return None

    def _shared_dirichlet_terms(self, inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """What :mod:`lvgp.models.dirichlet` takes of the shared-hyper-parameter Dirichlet inference at the
        training documents ``inputs``: the output scale times the kernel (``n x n``), the classes'
        constant means, each class's noise at each document (the Dirichlet noise plus the learned one)
        and the transformed targets."""
        model, likelihood = self.model_, self.likelihood_
        return (
            model.covar_module(inputs).to_dense(),
            model.mean_module.constant.reshape(-1),
            likelihood.noise_covar.noise + likelihood.second_noise_covar.noise,
            likelihood.transformed_targets,
        )

    def _block_latents(
        self, xb: torch.Tensor, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, gpytorch.distributions.MultivariateNormal | None]:
        """The latent functions' posterior at one block ``xb`` of documents: means and variances
        ``n x C`` (``n x 1`` for the binary variational classifier's one latent function), the Laplace
        inference's ``n x C x C`` covariances in place of the variances, and the variational
        inference's posterior ``f`` (``None`` for the others). ``posterior``: :meth:`_posterior`'s."""
        if isinstance(posterior, SharedDirichletPosterior):
            train = self.model_.train_inputs[0]
            a, b = pad_to_common_width(train, xb)
            k_star = self.model_.covar_module(a, b).to_dense()
            return (*posterior.predict(k_star, self.model_.covar_module(xb, diag=True)), None)
        if posterior is not None:  # the Laplace test latents' correlated Gaussian (alg. 3.4)
            mean, cov = self.model_.latents(xb, posterior)
            return mean, cov, None
        with shared_evaluation(self.model_):  # the block's K_ZX and diag K_XX: its norms once
            f = self.model_(xb)
            mean, var = f.mean, f.variance
        if self.inference == "dirichlet":  # batch C x n -> n x C
            return mean.mT, var.mT, None
        if mean.dim() == 1:  # the binary variational classifier: one latent function
            return mean[:, None], var[:, None], f
        return mean, var, f

    def predict_latent(self, X: Documents, block: int = 256, return_prior: bool = False) -> tuple[np.ndarray, ...]:
        r"""The latent functions' posterior marginals at the documents ``X``: means and variances,
        ``n x C`` (``n x 1`` for the binary variational classifier's one probit latent function); the
        Dirichlet inference's are those of the GP regression on the transformed labels (Milios et al.
        2018, eq. 8), the Laplace inference's those of R&W eq. 3.59-3.60 (the diagonal of the classes'
        covariance), the variational one's :math:`q(f)`. Without a ``sentence_encoder``, a document
        without a known word, which no part of the kernel reads, gets the classes' constant means and
        their output scales as variances (a warning counts them; its novelty score ``"variance"`` is
        -1, the least typical). ``return_prior``: also the latent prior variances ``n x C`` (the
        denominators of the ``"variance"`` score)."""
        mean_out, var_out, prior = self._latent_and_prior(X, block, "predict_latent")
        return (mean_out, var_out, prior) if return_prior else (mean_out, var_out)

    def _latent_and_prior(self, X: Documents, block: int, caller: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Means, variances and prior variances ``n x C`` of the latent functions (:meth:`predict_latent`)."""
        with self._prediction_blocks(X, block) as (n, empty, blocks):
            posterior = self._posterior()
            out: list[torch.Tensor | None] = [None, None, None]
            for idx, xb in blocks:
                mean, var, _ = self._block_latents(xb, posterior)
                if self.inference == "laplace":
                    var = var.diagonal(dim1=-2, dim2=-1)
                prior = self.model_.covar_module(xb, diag=True)
                prior = prior[:, None] if prior.dim() == 1 else prior.mT
                for k, value in enumerate((mean, var, prior.expand_as(var))):
                    if out[k] is None:
                        out[k] = torch.empty(n, value.shape[-1], dtype=value.dtype, device=self.device_)
                    out[k][idx] = value  # type: ignore[index]
            if empty.any():
                warn(
                    f"{caller}: {int(empty.sum())} of {n} documents have no known word: given the latent prior (no "
                    "part of the kernel reads them)",
                    EmptyDocumentsWarning,
                    stacklevel=3,
                )
                rows = torch.nonzero(empty).ravel().to(self.device_)
                width = 1 if (self.inference == "variational" and len(self.classes_) == 2) else len(self.classes_)
                prior_mean = self.model_.mean_module.constant.reshape(-1).expand(width)
                scale = self.model_.covar_module.outputscale.reshape(-1).expand(width)
                for k, value in enumerate((prior_mean, scale, scale)):
                    if out[k] is None:
                        out[k] = torch.empty(n, width, dtype=value.dtype, device=self.device_)
                    out[k][rows] = value  # type: ignore[index]
        mean, var, prior = (to_host(t) for t in out)  # type: ignore[arg-type]
        return mean, var, prior

    def predict_proba(self, X: Documents, block: int = 256) -> np.ndarray:
        """``n x n_classes`` predictive probabilities (latent posterior integrated out); without a
        ``sentence_encoder``, a document without any known word gets the training class frequencies
        (with a warning); with one, it is read through its vector (the word part of the kernel giving
        it the empty set's value).
        ``block``: documents per batch (gpytorch's exact predictive forms each block's full
        covariance: memory grows with ``block``, time hardly)."""
        with self._prediction_blocks(X, block) as (n, empty, blocks):
            out = torch.tensor(np.tile(self.class_prior_, (n, 1)), device=self.device_)
            if empty.any():
                warn(
                    f"{int(empty.sum())} of {n} documents have no known word: given the training class frequencies",
                    EmptyDocumentsWarning,
                    stacklevel=2,
                )
            posterior = self._posterior()
            known = torch.nonzero(~empty).ravel()
            for idx, xb in blocks:
                mean, var, f = self._block_latents(xb, posterior)
                if self.inference == "laplace":
                    seeds = class_draw_seeds(self.classes_)  # a Laplace fit always draws by class label
                    out[idx] = expected_softmax_correlated(mean, var, self.predict_samples, seeds)
                elif f is not None and len(self.classes_) == 2:
                    probs = self.likelihood_(f).probs  # the probit integral is closed-form
                    out[idx] = torch.stack([1 - probs, probs], dim=-1)
                else:
                    out[idx] = expected_softmax(mean, var, self.predict_samples, self._class_seeds())
        proba = to_host(out)
        known = to_host(known)
        proba[known] = self._temper(proba[known])  # empty documents keep the training frequencies
        return proba

    def score_samples(self, X: Documents, block: int = 256) -> np.ndarray:
        r"""``n`` novelty scores of the documents ``X``, higher meaning more typical of the training
        classes (scikit-learn's convention; :mod:`lvgp.base.novelty`), as ``novelty_score`` says: minus the
        entropy of :meth:`predict_proba` (``"entropy"``), its largest probability (``"max-probability"``),
        or minus the mean over the classes of the latent posterior variance over the prior variance
        (``"variance"``, in :math:`[-1, 0]`; :meth:`predict_latent`), or the log-sum-exp of the latent
        means (``"energy"``: the Dirichlet inference's log total evidence)."""
        check_params(self)
        if self.novelty_score in PROBABILITY_SCORES:
            return probability_novelty(self.predict_proba(X, block), self.novelty_score)
        mean, var, prior = self._latent_and_prior(X, block, "score_samples")
        if self.novelty_score == "energy":
            return latent_energy(mean)
        return variance_novelty(var, prior)

    def predict(self, X: Documents) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
