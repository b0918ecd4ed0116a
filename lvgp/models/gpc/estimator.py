"""The GP classifier with the latent distribution kernel, :class:`LDKGPClassifier` (the package's
docstring says what its inferences are; :mod:`lvgp.models.gpc.inference` holds them)."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, Self

import gpytorch
import numpy as np
import torch
from gpytorch.kernels import Kernel
from gpytorch.utils.warnings import GPInputWarning
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..._random import Streams, seeded_torch
from ..._typing import Documents, TensorLike
from ...base.constraints import RUNTIME, Boolean, Instance, Integer, Options, Real, check_params, documents_input
from ...base.device import check_dense_memory, check_device, state_to_cpu, to_host
from ...base.distributed import check_same_model, process_group
from ...base.encoding import BagOfWordsInputMixin, DocumentEncoder, stack_documents, take_documents
from ...base.fit_options import LBFGS, EarlyStopping, FitOptions, FitOptionsArgument, FitOptionsMixin, MiniBatch
from ...base.novelty import (
    NOVELTY_SCORES,
    PROBABILITY_READING_SCORES,
    PROBABILITY_SCORES,
    REFERENCE_SCORES,
    NoveltyReference,
    centred_energy_novelty,
    class_reference_energies,
    class_variance_ratio,
    conformal_threshold,
    latent_energy,
    latent_novelty_scores,
    leave_one_out_novelty,
    lifted_energy_novelty,
    normalized_entropy,
    probability_novelty,
    variance_novelty,
)
from ...base.numerics import covariance_errors, default_dtype, exact_numerics
from ...base.persistence import classes_from_plain, classes_to_plain
from ...base.snapshot import KeptResult, gp_state
from ...base.targets import check_labels, true_class_log_proba
from ...base.validation import check_block
from ...bow.padded import pad_to_width
from ...bow.vocabulary import Vocabulary
from ...encoders.sentence import ENCODERS, SentenceEncoder
from ...kernels.assembly import EncoderPart
from ...kernels.composition import PART_SELECTIONS
from ...kernels.document import keep_empty_documents
from ...kernels.packed import EncoderKernelArgument, unpack_documents
from ...kernels.spec import KernelArg, KernelArgument, word_vector_modules
from ...warnings import EmptyDocumentsWarning, UnseenWordsWarning, warn
from ..dirichlet import SharedDirichletPosterior
from ..inducing import step_approximation
from ..mixins import (
    FittedVocabularyMixin,
    KernelParamsMixin,
    SavedParamsMixin,
    SentenceEncoderMixin,
    word_source,
)
from ..part_selection import PartSelectionMixin
from ..prediction_blocks import RaggedDocuments
from .encoder_weight import (
    ENCODER_WEIGHTS,
    LONG_TEXT_WORDS,
    median_words,
    select_encoder_weight,
    weighable_encoder_parts,
)
from .inference import (
    HYPERPARAMETER_OBJECTIVES,
    INFERENCE_STRATEGIES,
    TEMPERATURE_PRIOR_SD,
    DirichletInference,
    Inference,
    _tempered_log_proba,
    _tempered_proba,
    has_repeated_class,
    single_document_classes,
)
from .models import class_draw_seeds, expected_softmax

__all__ = ["LDKGPClassifier", "LatentCross", "INFERENCES", "CLASS_HYPERPARAMETERS"]

#: the inferences ``inference=`` takes (:data:`~lvgp.models.gpc.inference.INFERENCE_STRATEGIES`)
INFERENCES = tuple(INFERENCE_STRATEGIES)


#: the classes' output scales and additional noise, one each per class or one for all classes
CLASS_HYPERPARAMETERS = ("per-class", "shared")


class LatentCross(NamedTuple):
    """The latent posterior at two sets of documents (:meth:`LDKGPClassifier.predict_latent_cross`)."""

    #: ``n x C``: the means at ``X``
    x_mean: np.ndarray
    #: ``n x C``: the variances at ``X``
    x_var: np.ndarray
    #: ``m x C``: the means at ``Z``
    z_mean: np.ndarray
    #: ``m x C``: the variances at ``Z``
    z_var: np.ndarray
    #: ``C x n x m``: each class's covariances between the latents at ``X`` and at ``Z``
    cov: np.ndarray


def _plain_rows(rows: np.ndarray | None) -> list[int] | None:
    """``evidence_documents_`` as a saved file holds it (a list, or ``None``)."""
    return None if rows is None else [int(r) for r in rows]


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
        noise_prior_sd: the Dirichlet inference's learned additional noise :math:`\sigma_a^2` (beside the labels'
            transformation noise; one a class, or one for all with ``class_hyperparameters="shared"``) under a
            log-normal prior with median its start 0.1 and this sd of :math:`\log\sigma_a^2` (gpytorch's
            ``LogNormalPrior``; ``None``: the evidence alone). With a single labelled text a class the evidence
            can prefer explaining every label by this noise: the output scale falls towards 0, every text's latent
            means are the classes' constants and the largest takes every text; with a noise a class it can do so
            for most classes, and still let the noises grow at ten texts a class. The prior, weighing as a few
            documents do, outweighs those modes and leaves fits whose noise the evidence keeps small where they
            were (``benchmarks/README.md``, "One labelled text a class").
        calibration: ``None`` or ``"temperature"``: the probabilities tempered by the :math:`T` that minimizes
            the log loss of the fitted classifier's closed-form leave-one-out predictions on its training documents
            (Dirichlet inference) -- or, with another inference, of early stopping's held-out texts under the fit
            that chose the budget (``early_stopping`` needed: ``ValueError`` without it) --, under a prior
            :math:`\log T \sim \mathcal N(0, 1)`
            (``temperature_``; no refit; ``T`` within ``[e^-3, e^3]``; the prior keeps a few documents from
            driving it there from a handful of texts; where every class has a single training document, ``T = 1``
            with a warning: no leave-one-out prediction then has an example of its class). The Dirichlet GP's
            expected softmax is flattened by the wide latent marginals of a few documents a class: with few
            documents it is under-confident, and the temperature (below 1 on such data) cuts its expected
            calibration error; measured on dev documents in ``benchmarks/README.md`` (``gpc_calibration.py``) and
            on the studies' test sets in ``results/README.md``.
        optimizer: ``None`` or the inference's: the Dirichlet inference an :class:`~lvgp.LBFGS` (defaults
            ``max_iter=100, tol=1e-6``); the variational one a :class:`~lvgp.MiniBatch` (defaults
            ``batch_size=1024`` texts a step (every text where there are fewer: one step an epoch);
            ``max_steps=400`` and ``max_epochs=200``, the budget whichever ends first, in whole epochs: the
            fewest that hold ``max_steps`` steps (27 epochs of 15,000 texts), or ``max_epochs`` (200 of
            1,000 texts); a budget field set without the other is the budget alone (``MiniBatch(max_epochs=40)``
            is 40 epochs whatever the texts); ``lr=0.03`` (Adam's, for the kernel's
            parameters), ``tol=1e-6`` and ``convergence_window=10`` (the relative change of the epoch
            loss over that many epochs; a mini-batch fit's loss seldom meets it, and the budget that ends it
            says so in a ``ConvergenceWarning``), ``ngd_lr=0.1``: the natural-gradient step size of q(u), in
            (0, 1]; a step that leaves q(u) not positive definite (mini-batch curvature estimates scaled
            by n are noisy) is undone and the step size halved, at most 10 times, with a
            ``ConvergenceWarning``; ``ngd_lr_`` is the step size at the end). Unset fields take these
            defaults. The fits need steps, not epochs: a step's batch is a fixed cost, whatever the texts
            (the budget chosen on dev draws: ``benchmarks/README.md``, "Rule 37").
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
        num_inducing: inducing documents of the variational inference, chosen among the training documents by
            k-means++ on their normalized word counts, beside their normalized encoder vectors with a
            ``sentence_encoder`` (:func:`~lvgp.models.inducing.choose_inducing_documents`).
        predict_samples: Monte Carlo nodes of the latent functions for the softmax probabilities (the
            same nodes for every document and call: a Latin hypercube of the normal,
            :func:`~lvgp.models.laplace.class_draws`; each class's order from a stream named by its label,
            :func:`class_draw_seeds`, so that a class's probability does not depend on where its label
            sorts; renaming a class moves it by the Monte Carlo error). With one or two labelled texts a
            class the probabilities are near uniform and that error decides close calls: raise it there
            (the cost is linear in it; ``benchmarks/README.md``, "Where 256 nodes are still too few"), and
            with ``inference="laplace"`` and many classes, whose latents can be so wide that each node's softmax
            is nearly one-hot (``benchmarks/README.md``, "The Laplace inference's nodes on real texts"). The
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
            of the texts enter the kernel beside their words (every inference; text input). The
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
            normalized vectors), a gpytorch ``Kernel`` instance on the normalized vectors (e.g.
            ``gpytorch.kernels.RQKernel()``: copied at every fit, its parameters fitted with the rest, times
            the part's weight :math:`\mu`), or a list of those (one part each, each with its own weight, e.g.
            ``["cosine", "rbf"]``). A model fitted with a kernel here is saved with what it was, and
            :meth:`load` takes the same ``encoder_kernel`` again. ``encode_seconds_``: the seconds the fit
            spent encoding (the model's loading included; 0 without a sentence encoder).
        novelty_score: what :meth:`score_samples` returns (higher: more typical of the training classes;
            :mod:`lvgp.base.novelty`): ``"energy"`` (the default: the log-sum-exp of the latent means, the
            Dirichlet inference's log total evidence, which falls where no class has evidence; chosen
            over the entropy on dev documents by a rule fixed beforehand, ``benchmarks/README.md``,
            ``open_set_dev.py``), ``"entropy"`` (minus the predictive entropy: it falls both where the
            classes are confused and where the latent posterior is wide), ``"max-probability"``, or
            ``"variance"`` (minus the latent posterior variance over the prior variance, averaged over
            the classes: distance-aware only with a kernel that is, e.g. ``encoder_kernel="rbf"``), or
            ``"entropy-variance"``
            (Dirichlet inference: the entropy and the variance ratio each as its quantile among the
            training documents' leave-one-out scores, :meth:`novelty_reference`, minus their mean), or
            ``"energy-variance"`` (the same with minus the energy in place of the entropy), or
            ``"class-variance"`` (minus the variance ratio of the class with the largest latent mean:
            class-conditional, as a Mahalanobis distance to the nearest class mean is), or
            ``"energy-class-variance"`` (``"energy-variance"`` with that class's variance ratio in place of
            the classes' average), or ``"centred-energy"`` (Dirichlet inference: the energy minus the mean
            leave-one-out energy of the class the text is predicted to be, weighed by the probabilities), or
            ``"lifted-energy"`` (Dirichlet inference: the energy plus, weighed likewise, how far that class's
            mean falls short of all training documents' mean: spread-out classes' texts lifted alone).
            Fixed before any out-of-scope text is seen; ``lvgp compare open-set`` records every one.
        part_selection: ``None`` (default: the kernel as composed), ``"loo"`` (Dirichlet inference) or
            ``"evidence"`` (Dirichlet or Laplace): model selection among the sub-compositions of the kernel's
            top sum (with a sentence encoder: the words, the encoder, both), each fitted from the same start
            (:mod:`lvgp.kernels.composition`). ``"loo"``: the leave-one-out log probability of the training
            labels (closed-form, tempered as the predictions are), a sub-composition replacing the sum only
            where its gain exceeds one standard error of the documents' paired gains (MAP word vectors saw
            the left-out text: optimistic for the part that holds them); ``"evidence"``: the fitted evidence
            with BIC's Occam factor (fixed word vectors only, not MAP ones).
        max_evidence_documents: ``None`` (default: the evidence of all training documents) or an int ``m``
            (the Laplace inference, or the Dirichlet one with ``class_hyperparameters="shared"``): with
            more than ``m`` training documents, the hyper-parameters maximize the evidence of a
            class-stratified random subset of ``m`` of them (every class keeps at least one; the stream
            ``"evidence documents"`` of ``random_state``), scaled by ``n / m`` as an estimate of the whole
            evidence beside the priors; the posterior (the Dirichlet inference's one factorization, the
            Laplace mode), the predictions, ``log_marginal_likelihood_`` and the temperature's
            leave-one-out predictions then condition on *all* ``n`` documents. An L-BFGS evaluation costs
            :math:`O(m^3)` instead of :math:`O(n^3)` (the Laplace inference's :math:`O(Cm^3)`: 15,000
            documents of the Dirichlet inference, or 1,500 of 150 classes of the Laplace one, fit in minutes
            instead of hours; ``benchmarks/README.md``); a handful of hyper-parameters are estimated as
            well from fewer documents (``evidence_subset_dev.py``). Learned (MAP) word vectors would see
            the subset's words alone: use it with fixed ones. ``evidence_documents_``: the subset's rows
            (``None`` when the evidence read every document).
        objective: what the hyper-parameters maximize (Dirichlet inference): ``"evidence"`` (the default: the
            log marginal likelihood of the transformed labels' regressions, plus the log priors), or
            ``"loo"``: from the evidence's optimum, the mean log probability of each training label under
            its closed-form leave-one-out prediction (the expected softmax of :meth:`leave_one_out_latents`,
            tempered with a temperature fitted jointly where ``calibration="temperature"``, as the
            predictions will be; Geisser's predictive criterion, R&W sec. 5.4.2, of the labels rather than
            of the regressions' targets, which the Dirichlet transform only approximates). MAP word vectors
            stay the evidence's; no hyper-parameter prior enters the second stage. A class with fewer than
            two training documents (in the evidence's subset, with ``max_evidence_documents``) keeps the
            evidence's hyper-parameters, with a warning. The second stage costs several times the first
            (autograd through the leave-one-out formula; 4-9x at 500 documents on the dev runs). Not with
            ``early_stopping`` or ``part_selection="evidence"`` (``ValueError``). On dev documents it lowered
            the log loss from about ten documents a class and lost accuracy with fewer; no study's default
            (``benchmarks/README.md``, "``--gpc-objective loo``"; ``results/README.md``, active learning).
        encoder_weight: the weight :math:`\mu` of the sentence encoder's part beside the words (Dirichlet inference,
            ``sentence_encoder``): ``"evidence"`` (the default: fitted with the other hyper-parameters), or
            ``"loo"``: after the fit, :math:`\mu` times the factor of 1/8, 1/4, 1/2 or 1 of the least tempered
            leave-one-out log loss of the training labels, a factor below 1 only where its paired gain over 1
            exceeds one standard error and its leave-one-out accuracy is at most one document below 1's; kept at
            the evidence's where every class has a single training document (with a warning) or where the
            training documents' median length is below
            :data:`~lvgp.models.gpc.encoder_weight.LONG_TEXT_WORDS` words (at 12 and 20 words such choices lost
            accuracy on dev documents; :mod:`lvgp.models.gpc.encoder_weight`). On long texts the evidence weighs the
            encoder several times more than the labels do (``benchmarks/README.md``, rules 15-20). Fitted:
            ``median_words_``, ``encoder_weight_factor_`` and ``encoder_weight_scores_`` (one dict a factor:
            :func:`~lvgp.models.gpc.encoder_weight.select_encoder_weight`; ``[]`` where the texts were too short,
            every class had a single document or part selection left no encoder part); ``None`` each with ``"evidence"``.
        on_empty: a training text without a word of the vocabulary, where no ``sentence_encoder`` reads it:
            ``"raise"`` (the default: a ``ValueError`` naming the rows) or ``"keep"``: it is kept as the empty set,
            an all-padding row its kernel gives the value at the zero measure
            (:attr:`~lvgp.kernels.document.DocumentKernel.allow_empty`: 0 at a cosine or linear level 2, so that it
            informs the classes' constant means alone, as a zero tf-idf row informs a linear model's intercept),
            with an ``EmptyDocumentsWarning`` that counts and names them. For short texts such as
            intent queries ("no", "what is it"), of stop words only. The variational inference never takes one as
            an inducing document. Prediction is as without it: a text with no known word gets the training class
            frequencies.

    Fitted: ``classes_``, ``class_prior_``, ``model_``, ``likelihood_``, ``loss_curve_``,
    ``word_vectors_``, ``n_iter_``, ``converged_``, ``fit_seconds_``, ``best_iter_`` and
    ``validation_curve_`` (the held-out fit's; ``None`` and ``[]`` without early stopping;
    ``fit_seconds_`` includes the held-out fit), ``selected_parts_`` (the names of the kept parts of the
    kernel's top sum), with ``part_selection`` ``part_scores_``; with the Dirichlet inference ``objective_``
    (``"loo"``, or ``"evidence"`` where the hyper-parameters are the evidence's) and ``loo_loss_curve_`` (the
    leave-one-out stage's objective a step; ``[]`` without it; ``n_iter_`` counts both stages' iterations,
    ``loss_curve_`` the evidence's alone). A ``ConvergenceWarning``
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
        noise_prior_sd: float | None = 1.0,
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
        encoder_kernel: str | Kernel | Sequence[str | Kernel] = "cosine",
        novelty_score: str = "energy",
        part_selection: str | None = None,
        max_evidence_documents: int | None = None,
        objective: str = "evidence",
        encoder_weight: str = "evidence",
        on_empty: str = "raise",
    ):
        self.kernel = kernel
        self.inference = inference
        self.class_hyperparameters = class_hyperparameters
        self.alpha_epsilon = alpha_epsilon
        self.noise_prior_sd = noise_prior_sd
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
        self.max_evidence_documents = max_evidence_documents
        self.objective = objective
        self.encoder_weight = encoder_weight
        self.on_empty = on_empty

    _first_format_version = 1  # files of lvgp 0.1 load
    _renamed_params = {"n_mc_samples": "predict_samples"}  # (issue 58: one name per meaning)
    _optimizer_defaults = (
        LBFGS(max_iter=100, tol=1e-6),
        MiniBatch(
            batch_size=1024,
            max_steps=400,
            max_epochs=200,
            lr=0.03,
            tol=1e-6,
            convergence_window=10,
            ngd_lr=0.1,
            compile=False,
        ),
    )
    _early_stopping_default = EarlyStopping(
        validation_fraction=0.25, n_iter_no_change=10, validation_interval=1, policy="refit"
    )
    _optimizer_kind_set_by = "inference"

    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        **documents_input(),
        "optimizer": [None, FitOptionsArgument(LBFGS, MiniBatch, name="optimizer")],
        "early_stopping": [Boolean(), FitOptionsArgument(EarlyStopping, name="early_stopping")],
        "kernel": [KernelArgument(takes={"variational": (False,)}, why="the GP classifier fits MAP word vectors")],
        "inference": [Options(*INFERENCES)],
        "alpha_epsilon": [Real(0, open_low=True)],
        "noise_prior_sd": [None, Real(0, open_low=True)],
        "calibration": [None, Options("temperature")],
        "class_hyperparameters": [Options(*CLASS_HYPERPARAMETERS)],
        "num_inducing": [Integer(1)],
        "predict_samples": [Integer(1)],
        "sentence_encoder": [None, Options(*ENCODERS), Instance(SentenceEncoder)],
        "encoder_kernel": [EncoderKernelArgument()],
        "novelty_score": [Options(*NOVELTY_SCORES)],
        "part_selection": [None, Options(*PART_SELECTIONS)],
        "max_evidence_documents": [None, Integer(2)],
        "objective": [Options(*HYPERPARAMETER_OBJECTIVES)],
        "encoder_weight": [Options(*ENCODER_WEIGHTS)],
        "on_empty": [Options("raise", "keep")],
    }

    def _default_optimizer_kind(self) -> type[FitOptions]:
        return self._inference_strategy().optimizer_kind

    @classmethod
    def _legacy_optimizer_kind(cls, flat: dict[str, Any], params: dict[str, Any]) -> type[FitOptions]:
        return LBFGS if params.get("inference", "dirichlet") == "dirichlet" else MiniBatch

    def _check_params(self) -> None:
        check_params(self)
        self._checked_spec()
        strategy = self._inference_strategy()
        if self._held_out_temperature() and self._early_stopping_options() is None:
            raise ValueError(
                "calibration='temperature' needs inference='dirichlet' (its leave-one-out predictions are closed-form) "
                f"or early_stopping (T from its held-out texts' predictions); got inference={self.inference!r} without "
                "early_stopping"
            )
        self._check_novelty_score(strategy)
        if self.part_selection == "evidence" and not strategy.evidence:
            raise ValueError(
                "part_selection='evidence' needs inference='dirichlet' or 'laplace' (an evidence each "
                "sub-composition reaches; the variational inference's is a stochastic mini-batch bound)"
            )
        if self.part_selection == "loo" and not strategy.leave_one_out:
            raise ValueError(
                "part_selection='loo' needs inference='dirichlet' (its leave-one-out predictions are closed-form)"
            )
        if self.objective == "loo":
            if not strategy.leave_one_out:
                raise ValueError(
                    f"objective='loo' needs inference='dirichlet' (its leave-one-out predictions are closed-form); got "
                    f"inference={self.inference!r}"
                )
            if self._early_stopping_options() is not None:
                raise ValueError(
                    "objective='loo' and early_stopping choose the fit's end two ways: pass early_stopping=False"
                )
            if self.part_selection == "evidence":
                raise ValueError(
                    "part_selection='evidence' compares the evidence each sub-composition reaches, which objective='loo' "
                    "leaves; pass part_selection='loo' or objective='evidence'"
                )
        if self.encoder_weight == "loo":
            if not strategy.leave_one_out:
                raise ValueError(
                    "encoder_weight='loo' needs inference='dirichlet' (its leave-one-out predictions are closed-form); "
                    f"got inference={self.inference!r}"
                )
            if self.sentence_encoder is None:
                raise ValueError(
                    "encoder_weight='loo' scales the weight of the sentence encoder's part beside the words: pass "
                    "sentence_encoder=..."
                )
        if self.max_evidence_documents is not None and not (
            self.inference == "laplace" or (self.inference == "dirichlet" and self.class_hyperparameters == "shared")
        ):
            raise ValueError(
                "max_evidence_documents needs inference='laplace', or 'dirichlet' with class_hyperparameters='shared' "
                "(one factorization for all classes, whose posterior conditions on every document after the "
                f"subset's fit); got inference={self.inference!r}, class_hyperparameters={self.class_hyperparameters!r}"
            )

    def _held_out_temperature(self) -> bool:
        """``calibration="temperature"`` without closed-form leave-one-out predictions: ``T`` from early stopping's
        held-out texts (:meth:`_held_out_log_proba`)."""
        return self.calibration == "temperature" and not self._inference_strategy().leave_one_out

    def _encoder_dim(self) -> int | None:
        """The width of the sentence encoder's vectors in the packed documents (``None``: no encoder)."""
        return None if self.sentence_encoder is None else int(self._sentence_encoder().dim)

    def _word_embeddings(self) -> Any:
        spec = self._spec
        return None if spec is None else word_source(spec.word_embeddings, self.sentence_encoder, self.device)

    def _kernel(self, seed: int, x: torch.Tensor, inducing: torch.Tensor | None = None) -> Kernel:
        """The kernel on the training documents ``x`` (padded word ids, or packed with the sentence
        encoder's vectors); with the variational inference's ``inducing`` documents, ``"auto"`` is decided
        on the documents of a step (:func:`~lvgp.models.inducing.step_approximation`: the inducing documents
        and a batch; where one batch holds every text, the training documents' words as for the Dirichlet
        inference)."""
        encoder = self.encoder_
        words = encoder.vocabulary.words if encoder.vocabulary is not None else None
        dim = self._encoder_dim()
        ids = x if dim is None else unpack_documents(x, dim)[0]
        spec = self._spec
        approximation = None
        if spec is not None and inducing is not None and spec.approximation == "auto":
            batch_size = self._optimizer_options().batch_size  # None: a full batch
            inducing_ids = inducing if dim is None else unpack_documents(inducing, dim)[0]
            approximation = step_approximation(spec, ids, inducing_ids, batch_size, seed)
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
        if dim is None and self.on_empty == "keep":
            keep_empty_documents(kernel)
        return self._restricted(kernel)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Documents, y: TensorLike, unlabeled: Documents | None = None) -> Self:
        """Fit on training documents ``X`` (texts, counts or a padded tensor) and labels ``y``;
        ``unlabeled``: further texts that ``word_embeddings="corpus"`` learns word vectors from."""
        self._check_params()
        self._kept_posterior = KeptResult()
        self._kept_novelty_reference = KeptResult()
        self._streams = Streams(self.random_state)  # random_state is read once a fit
        start = time.perf_counter()
        self._encode_clock = 0.0
        stopping = self._early_stopping_options()
        policy = None if stopping is None else stopping.policy
        budget: int | None = None
        curve: list[float] = []
        self.temperature_ = 1.0  # the held-out predictions below are untempered
        held_out: tuple[np.ndarray, np.ndarray] | None = None
        if policy == "keep-best":
            held_out = self._fit_kept_best(X, y, unlabeled)
        else:
            if policy == "refit":
                budget, curve, held_out = self._early_stopping_budget(X, y, unlabeled)
            self._fit(X, y, budget, unlabeled=unlabeled)
            self.best_iter_, self.validation_curve_ = budget, curve
        loo = None
        loo_temperature = self.calibration == "temperature" and not self._held_out_temperature()
        if self.encoder_weight == "loo" or loo_temperature:
            self._warn_single_document_classes()
        if loo_temperature:
            loo = self._loo_log_proba()
            self.temperature_ = self._fit_temperature(loo)
        elif held_out is not None:  # only where _held_out_temperature()
            self.temperature_ = self._fit_temperature(held_out)
        self._choose_encoder_weight(X, loo)
        self.fit_seconds_ = time.perf_counter() - start
        self.encode_seconds_ = self._encode_clock
        return self

    def _choose_encoder_weight(self, X: Documents, loo: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """``encoder_weight="loo"``: the median length of the training texts ``X`` (whitespace-separated words; the
        sentence encoder reads texts only) and, from :data:`~lvgp.models.gpc.encoder_weight.LONG_TEXT_WORDS` on,
        the encoder weight the labels choose (:func:`~lvgp.models.gpc.encoder_weight.select_encoder_weight`);
        ``None`` attributes otherwise. ``loo``: the fit's leave-one-out predictions (:meth:`_loo_log_proba`), the
        choice's reference at the evidence's weight, if the temperature's fit computed them."""
        self.median_words_: float | None = None
        self.encoder_weight_factor_: float | None = None
        self.encoder_weight_scores_: list[dict[str, Any]] | None = None
        if self.encoder_weight != "loo":
            return
        self.median_words_ = median_words(X)
        if (
            self.median_words_ < LONG_TEXT_WORDS
            or not weighable_encoder_parts(self.model_.covar_module)
            or not has_repeated_class(self._training_codes())
        ):
            self.encoder_weight_factor_, self.encoder_weight_scores_ = 1.0, []
            return
        self.encoder_weight_factor_, self.encoder_weight_scores_ = select_encoder_weight(self, reference=loo)

    def _check_novelty_score(self, strategy: Inference, kind: str | None = None) -> None:
        """A reference score (``kind``, default the estimator's ``novelty_score``) needs the Dirichlet inference."""
        kind = self.novelty_score if kind is None else kind
        if kind in REFERENCE_SCORES and not strategy.leave_one_out:
            raise ValueError(
                f"novelty_score={kind!r} needs inference='dirichlet' (its reference is the training "
                f"documents' closed-form leave-one-out predictions); got inference={self.inference!r}"
            )

    def novelty_reference(self) -> NoveltyReference:
        r"""What ``novelty_score="entropy-variance"``, ``"energy-variance"`` and ``"energy-class-variance"`` put
        each text's scores among: the training documents' leave-one-out scores
        (:class:`~lvgp.base.novelty.NoveltyReference`), ``n`` normalized entropies (of the tempered
        leave-one-out probabilities, the expected softmax of :meth:`leave_one_out_latents`, over
        :math:`\log C`), ``n`` variance ratios (the leave-one-out latent variances over the prior variances,
        averaged over the classes), both in :math:`[0, 1]`, ``n`` minus energies (the log-sum-exp of the
        leave-one-out latent means) and ``n`` class variance ratios (the leave-one-out variance ratio of the
        class with the largest leave-one-out latent mean, in :math:`[0, 1]`), all higher the less typical;
        and for ``"centred-energy"`` and ``"lifted-energy"`` the ``C`` classes' mean leave-one-out energies
        (:func:`~lvgp.base.novelty.class_reference_energies`) and ``n`` minus centred and lifted energies.
        In-scope documents the model did not fit, at no refit (Rasmussen & Williams, eq. 5.12): a text
        scoring like them is as typical as a held-out training text. Kept between calls while the model,
        its parameters and the temperature are unchanged.

        Raises:
            ValueError: the inference is not ``"dirichlet"``.
        """
        self._check_leave_one_out("novelty_reference")
        box = self.__dict__.get("_kept_novelty_reference")
        state, owners, key = gp_state(self.model_, self.likelihood_), (self.model_, self.likelihood_), self.temperature_
        if box is not None:
            kept = box.get(state, owners=owners, key=key)
            if kept is not None:
                return kept
        proba, var, mean = self._loo_predictions()
        x, intercept = self.model_.train_inputs[0], self._inference_strategy().intercept_variance(self)
        with torch.no_grad():
            prior = torch.cat([self._prior_variances(x[i : i + 256], intercept) for i in range(0, len(x), 256)])
        prior = to_host(prior.expand_as(var))
        var, mean, tempered = to_host(var), to_host(mean), self._temper(to_host(proba))
        energy = latent_energy(mean)
        class_energy = class_reference_energies(energy, self._training_codes(), len(self.classes_))
        value = NoveltyReference(
            normalized_entropy(tempered),
            -variance_novelty(var, prior),
            -energy,
            class_variance_ratio(mean, var, prior),
            class_energy,
            -centred_energy_novelty(mean, tempered, class_energy),
            -lifted_energy_novelty(mean, tempered, class_energy, float(energy.mean())),
            tempered,
        )
        return value if box is None else box.put(value, state, owners=owners, key=key)

    def _check_leave_one_out(self, method: str) -> None:
        """Fitted, with the inference whose leave-one-out predictions are closed-form (Dirichlet): else the
        ``ValueError`` naming ``method``."""
        check_is_fitted(self, "model_")
        if not self._inference_strategy().leave_one_out:
            raise ValueError(f"{method} needs inference='dirichlet'; got inference={self.inference!r}")

    def novelty_threshold(self, keep: float = 0.95) -> float:
        r"""The threshold on :meth:`score_samples` (``novelty_score``'s scale) below which a text is out of scope,
        chosen without held-out texts: the split-conformal quantile
        (:func:`~lvgp.base.novelty.conformal_threshold`) of the training documents' leave-one-out scores
        (:meth:`novelty_reference`, :func:`~lvgp.base.novelty.leave_one_out_novelty`): each labelled text scored
        by the GP of the others, an in-scope text the model did not fit, from the fit's one factorization (no
        refit). A new in-scope text is accepted with probability about ``keep``: a text left out is a little less
        typical than a new in-scope one (it keeps in its tf-idf norm the words no other labelled text has), which
        errs on the safe side, while word vectors learned by MAP (fitted to the left-out text too) and new texts
        that drift from the labelled ones err the other way (:mod:`lvgp.models.open_set`; its
        :class:`~lvgp.models.open_set.OpenSetClassifier` takes this threshold or a cross-validated one).

        Raises:
            ValueError: ``keep`` is not in (0, 1); the inference is not ``"dirichlet"``; ``novelty_score`` is
                ``"max-probability"`` (the leave-one-out reference holds no probabilities).
        """
        check_is_fitted(self, "model_")
        if not 0.0 < float(keep) < 1.0:
            raise ValueError(f"keep must be in (0, 1); got {keep!r}")
        if self.novelty_score == "max-probability":
            raise ValueError(
                "novelty_threshold: novelty_score='max-probability' has no leave-one-out reference (the texts' "
                "left-out probabilities are not kept); take the threshold from held-out in-scope texts, or use "
                "novelty_score='entropy'"
            )
        self._check_leave_one_out("novelty_threshold")
        scores = leave_one_out_novelty(self.novelty_reference(), self.novelty_score, len(self.classes_))
        return conformal_threshold(scores, keep)

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
        self._check_leave_one_out("leave_one_out_latents")
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
                return DirichletInference.per_class_leave_one_out(model, likelihood)
        finally:
            model.eval()
            likelihood.eval()

    def _fit_temperature(self, loo: tuple[np.ndarray, np.ndarray] | None = None) -> float:
        r"""``calibration="temperature"``: the :math:`T` whose tempered probabilities
        :math:`p_c^{1/T} / \sum_{c'} p_{c'}^{1/T}` minimize the log loss of the fitted classifier's
        leave-one-out predictions on its training documents (the expected softmax of
        :meth:`leave_one_out_latents`). No refit; the hyper-parameters are the full fit's (a slight
        optimism that the held-out ECE of ``results/README.md`` measures). ``loo``: those predictions
        (:meth:`_loo_log_proba`), where the caller has them, or other predictions of labelled texts in the same
        form (early stopping's held-out texts: :meth:`_held_out_log_proba`)."""
        from scipy.optimize import minimize_scalar

        log_p, truth = self._loo_log_proba() if loo is None else loo
        if not has_repeated_class(truth):
            return 1.0  # the prior's mode: no prediction speaks of calibration (_warn_single_document_classes)

        def loss(log_t: float) -> float:
            fit = -np.mean(_tempered_log_proba(log_p, float(np.exp(log_t)))[np.arange(len(truth)), truth])
            # the prior log T ~ N(0, TEMPERATURE_PRIOR_SD^2), per document: a handful of documents cannot
            # drive T to its bound (6 texts fitted T = 0.06 without it and turned 0.93 into 1.0)
            return float(fit + log_t**2 / (2 * TEMPERATURE_PRIOR_SD**2 * len(truth)))

        return float(np.exp(minimize_scalar(loss, bounds=(-3.0, 3.0), method="bounded").x))

    def _warn_single_document_classes(self) -> None:
        """Where every class has a single training document, none of the leave-one-out predictions that
        ``calibration="temperature"`` and ``encoder_weight="loo"`` read has an example of its class: each is a
        prediction of a text of an unseen class. They would flatten the probabilities (``benchmarks/README.md``,
        "The temperature at one text a class"); the fit keeps ``T = 1`` (its prior's mode) and the evidence's
        encoder weight, and says so."""
        if has_repeated_class(self._training_codes()):
            return
        kept = [
            what
            for what, on in (
                ("temperature_ = 1", self.calibration == "temperature"),
                ("the evidence's encoder weight", self.encoder_weight == "loo"),
            )
            if on
        ]
        warn(
            f"every one of the {len(self.classes_)} classes has a single training document, so no leave-one-out "
            f"prediction has an example of its class: the fit keeps {' and '.join(kept)}",
            UserWarning,
            stacklevel=4,
        )

    def _loo_log_proba(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``n x C`` log probabilities of the leave-one-out predictions on the training documents
        (the expected softmax of :meth:`leave_one_out_latents`) and the training labels' codes."""
        proba, *_ = self._loo_predictions()
        return torch.log(proba.clamp_min(1e-300)).cpu().numpy(), self._training_codes()

    def _training_codes(self) -> np.ndarray:
        """The ``n`` training labels' class codes (positions in ``classes_``), as the posterior holds them."""
        return self.likelihood_.targets.cpu().numpy().astype(int)

    def _loo_predictions(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The training documents' leave-one-out predictive probabilities (the expected softmax of
        :meth:`leave_one_out_latents`, untempered), latent variances and latent means, ``n x C`` each."""
        mean, var = self.leave_one_out_latents()
        with torch.no_grad():
            return expected_softmax(mean, var, self.predict_samples, self._class_seeds()), var, mean

    def leave_one_out_predict_proba(self) -> np.ndarray:
        r"""``n x n_classes``: each training document's predictive probabilities under the GP of the others
        (Dirichlet inference), tempered as :meth:`predict_proba`'s are: the expected softmax of
        :meth:`leave_one_out_latents` (Rasmussen & Williams, eq. 5.12), from the fit's one factorization (no refit).
        Their argmax is the class a reject option groups each labelled text by
        (:class:`~lvgp.models.open_set.OpenSetClassifier` with ``class_conditional=True``); their log loss, the
        labelled texts' leave-one-out log loss.

        Raises:
            ValueError: the inference is not ``"dirichlet"``.
        """
        self._check_leave_one_out("leave_one_out_predict_proba")
        # the reference's own: one leave-one-out pass serves its scores and these (kept between calls)
        return np.array(self.novelty_reference().proba, copy=True)

    def _loo_unreliable(self) -> str | None:
        """``part_selection="loo"`` cannot choose when a class has a single training document: left out,
        that document's class has no example, every composition predicts it badly, and the least confident
        one scores best (on the active study's dev runs at one text a class it kept compositions that
        classified at chance or below)."""
        single = single_document_classes(self._training_codes(), self.classes_)
        if single is None:
            return None
        return (
            f"{single[0]} of {single[1]} classes have a single training document ({single[2]}); the "
            "leave-one-out scores need at least two a class"
        )

    def _loo_log_predictive(self, loo: tuple[np.ndarray, np.ndarray] | None = None) -> torch.Tensor:
        """``part_selection="loo"`` (Dirichlet inference): the ``n`` log leave-one-out probabilities of the
        training labels, tempered by the temperature fitted on them where ``calibration="temperature"``
        (as the predictions will be); ``loo``: :meth:`_loo_log_proba`'s result, if already computed."""
        return self._loo_tempered(loo)[0]

    def _loo_tempered(self, loo: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[torch.Tensor, float]:
        """:meth:`_loo_log_predictive`'s ``n`` log probabilities and the temperature they are tempered by (1 where
        ``calibration`` is not ``"temperature"``)."""
        log_p, truth = self._loo_log_proba() if loo is None else loo
        temperature = self._fit_temperature((log_p, truth)) if self.calibration == "temperature" else 1.0
        return torch.from_numpy(_tempered_log_proba(log_p, temperature)[np.arange(len(truth)), truth]), temperature

    def _temper(self, proba: np.ndarray) -> np.ndarray:
        """Probabilities tempered by the fitted :math:`T` (``calibration="temperature"``; :func:`_tempered_proba`)."""
        return _tempered_proba(proba, getattr(self, "temperature_", 1.0))

    def _held_out(self, X: Documents, y: TensorLike) -> tuple[np.ndarray, np.ndarray, int | None]:
        """The stratified training and validation rows of early stopping (and the vocabulary size
        of padded input, which the held-out part must keep); no validation rows, with a warning,
        when the classes leave none."""
        from ...base.splits import early_stopping_split

        encoder = DocumentEncoder(self.vocabulary, self.num_words)
        with warnings.catch_warnings():  # validates X before it is split, under the fit's own policy (which warns)
            warnings.simplefilter("ignore", EmptyDocumentsWarning)
            x = encoder.fit_transform(X, "X", allow_empty=self.sentence_encoder is not None, on_empty=self.on_empty)
        n = x.shape[0]
        _, codes = check_labels(y, n)
        stopping = self._stopping()
        train, dev = early_stopping_split(n, float(stopping.validation_fraction), self._fit_streams().root, codes)
        if not len(dev):
            untempered = self._held_out_temperature()
            warn(
                f"early_stopping: {n} documents of {codes.max() + 1} classes leave no validation part; "
                "fitted with the full budget (the optimizer's max_iter, or max_steps / max_epochs)"
                + ("; calibration='temperature' keeps T = 1 (no held-out text to fit it to)" if untempered else ""),
                UserWarning,
                stacklevel=4,
            )
        return train, dev, encoder.num_words if encoder.kind == "padded" else None

    def _fit_kept_best(
        self, X: Documents, y: TensorLike, unlabeled: Documents | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``early_stopping="keep-best"``: fit on the training part, validated on the held-out part,
        and keep the best validated iterate (no refit). Returns the held-out texts' log probabilities
        under it and their classes where the temperature reads them (:meth:`_held_out_log_proba`; else, or where
        no part was held out, ``None``)."""
        train, dev, num_words = self._held_out(X, y)
        if not len(dev):
            self._fit(X, y, unlabeled=unlabeled)
            return None
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
        return self._held_out_log_proba(take_documents(X, dev), labels[dev]) if self._held_out_temperature() else None

    def _early_stopping_budget(
        self, X: Documents, y: TensorLike, unlabeled: Documents | None = None
    ) -> tuple[int | None, list[float], tuple[np.ndarray, np.ndarray] | None]:
        """The best iteration count (and the validation curve) of a fit on a stratified part of
        ``X`` scored on the rest, and the held-out texts' log probabilities under that fit's best iterate
        with their classes (:meth:`_held_out_log_proba`, where ``calibration="temperature"`` reads them);
        ``(None, [], None)`` with a warning when no part can be held out."""
        from sklearn.base import clone

        train, dev, num_words = self._held_out(X, y)
        if not len(dev):
            return None, [], None
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
        held_out = (
            probe._held_out_log_proba(take_documents(X, dev), labels[dev]) if self._held_out_temperature() else None
        )
        return probe.best_iter_, probe.validation_curve_, held_out

    def _held_out_log_proba(self, X_dev: Documents, y_dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``calibration="temperature"`` without closed-form leave-one-out predictions: the ``n x C`` log
        probabilities of early stopping's held-out texts ``X_dev`` under this fit (untempered: the fit's
        ``temperature_`` is 1 then), and their labels' class codes; a held-out text of a class the fit never
        saw (possible where a class has a single text) is left out of both (its log probability is the
        floor's, whatever ``T``)."""
        with warnings.catch_warnings():  # counted by the final model's predictions
            warnings.simplefilter("ignore", UnseenWordsWarning)
            warnings.simplefilter("ignore", EmptyDocumentsWarning)
            proba = self.predict_proba(X_dev)
        known = np.isin(y_dev, self.classes_)
        codes = np.searchsorted(self.classes_, np.asarray(y_dev)[known])
        return np.log(np.maximum(proba[known], 1e-300)), codes

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
        strategy = self._inference_strategy()
        compact = strategy.mini_batches and self.sentence_encoder is None
        # with a sentence encoder a text without a known word is still a document: its vector
        x = self.encoder_.fit_transform(
            X,
            "X",
            unlabeled=unlabeled,
            compact=compact,
            allow_empty=self.sentence_encoder is not None,
            on_empty=self.on_empty,
        )
        x = self._with_encoder(x, X, "X")
        self.classes_, codes = check_labels(y, x.shape[0])
        self.class_prior_ = np.bincount(codes) / len(codes)
        self._mc_draws = "by-class"  # files saved before hold none: their draws are by position
        self._train = (x, codes)  # what save() writes: the model is rebuilt from them on load
        if strategy.mini_batches and process_group()[1] > 1:
            check_same_model(self.random_state, "LDKGPClassifier")
        seed = self._fit_streams().root
        self.device_ = check_device(self.device)
        self.evidence_documents_ = self._evidence_rows(codes)
        copies = strategy.dense_copies(self)
        if copies is not None and self.evidence_documents_ is not None and self.inference == "dirichlet":
            # the subset's fit holds its copies at m x m; the posterior four at n x n (the kernel matrix, the
            # shifted one, its factor and inverse). (The Laplace mode on all documents holds its per-class
            # copies at n x n: its guard stands.)
            m = len(self.evidence_documents_)
            copies = max(4, -(-copies * m * m // (x.shape[0] ** 2)))
        if copies is not None:  # dense n x n covariances and factors, and their gradients
            check_dense_memory(
                x.shape[0],
                copies,
                self.device_,
                f"the {self.inference} GP classifier on {x.shape[0]:,} documents and {len(self.classes_)} classes",
                "Pass fewer documents, or inference='variational' (mini-batches on inducing documents).",
            )
        self.validation_curve_, self.best_iter_ = [], None

        def fit_one() -> None:
            with default_dtype(torch.float64):
                validate = None if validation is None else self._validation_loss(*validation)
                # an inference that draws from torch's global generator (gpytorch's Monte Carlo ELBO) is
                # seeded inside a forked scope: fits are reproducible and the caller's stream is untouched
                with seeded_torch(seed) if strategy.global_draws else contextlib.nullcontext():
                    strategy.fit(self, x, codes, seed, budget, validate)

        self._fit_parts(fit_one, x.shape[0])
        strategy.after_fit(self)  # the kept fit's checks, not every sub-composition's
        self.model_.eval()
        self.likelihood_.eval()

    def _evidence_rows(self, codes: np.ndarray) -> np.ndarray | None:
        """``max_evidence_documents``: the sorted rows of a class-stratified random subset of that many
        training documents (each class its share, at least one document; the largest remainders take
        what the floors leave), or ``None`` when the evidence reads every document."""
        m, n = self.max_evidence_documents, len(codes)
        if m is None or n <= m:
            return None
        counts = np.bincount(codes)
        share = counts * (m / n)
        take = np.minimum(np.maximum(1, np.floor(share)).astype(int), counts)
        for c in np.argsort(-(share - np.floor(share)), kind="stable"):
            if take.sum() >= m:
                break
            take[c] += take[c] < counts[c]
        rng = self._fit_streams().numpy("evidence documents")
        rows = [rng.choice(np.flatnonzero(codes == c), size=int(k), replace=False) for c, k in enumerate(take)]
        return np.sort(np.concatenate(rows))

    def _inference_strategy(self) -> Inference:
        """The strategy object of ``inference=`` (:data:`~lvgp.models.gpc.inference.INFERENCE_STRATEGIES`)."""
        return INFERENCE_STRATEGIES[self.inference]

    def _posterior(self) -> Any:
        """What prediction computes once for all blocks of a call (the inference's ``posterior``), kept
        for the next call while the model, the likelihood and their parameters and buffers are those it
        was computed from (compared by value: early stopping predicts between the fit's steps): the
        leave-one-out predictions of the temperature and every later ``predict_proba`` share one (a
        shared Dirichlet posterior is a factorization of the ``n x n`` kernel matrix and holds its
        inverse). It lives in a :class:`~lvgp.base.snapshot.KeptResult` that a fit (or a load) creates,
        so that predicting leaves the estimator's ``__dict__`` as it was; pickles and copies start without it."""
        box = self.__dict__.get("_kept_posterior")
        if box is None:
            return self._inference_strategy().posterior(self)
        state = gp_state(self.model_, self.likelihood_)
        owners = (self.model_, self.likelihood_)
        kept = box.get(state, owners=owners)
        if kept is not None:
            return kept
        return box.put(self._inference_strategy().posterior(self), state, owners=owners)

    def _block_latents(
        self, xb: torch.Tensor, posterior: Any
    ) -> tuple[torch.Tensor, torch.Tensor, gpytorch.distributions.MultivariateNormal | None]:
        """The latent functions' posterior at one block ``xb`` of documents (the inference's
        ``block_latents``): means ``n x C`` (``n x 1`` for the binary variational classifier), the
        variances (the Laplace inference's ``n x C x C`` covariances), and gpytorch's ``f`` where the
        probabilities need it."""
        return self._inference_strategy().block_latents(self, xb, posterior)

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
                "evidence_documents": _plain_rows(getattr(self, "evidence_documents_", None)),
                "objective": getattr(self, "objective_", None),
                "loo_loss_curve": list(getattr(self, "loo_loss_curve_", [])),
                "median_words": getattr(self, "median_words_", None),
                "encoder_weight_factor": getattr(self, "encoder_weight_factor_", None),
                "encoder_weight_scores": getattr(self, "encoder_weight_scores_", None),
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
        est._kept_posterior = KeptResult()
        est._kept_novelty_reference = KeptResult()
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
            est._inference_strategy().build(est, x, codes, seed)
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
        rows = fit.get("evidence_documents")  # saved before max_evidence_documents: every document
        est.evidence_documents_ = None if rows is None else np.asarray(rows, dtype=np.int64)
        est._restore_parts(fit)
        est.median_words_ = fit.get("median_words")  # saved before encoder_weight=: None, as the evidence's weight
        est.encoder_weight_factor_ = fit.get("encoder_weight_factor")
        est.encoder_weight_scores_ = fit.get("encoder_weight_scores")
        if fit.get("objective") is not None:  # saved before objective=: no attribute, as before
            est.objective_, est.loo_loss_curve_ = fit["objective"], list(fit["loo_loss_curve"])

    def _class_seeds(self) -> list[int] | None:
        """The Monte Carlo draws' streams: one per class label (:func:`class_draw_seeds`), or
        ``None`` (by position) for a file saved before they were."""
        return class_draw_seeds(self.classes_) if getattr(self, "_mc_draws", "by-position") == "by-class" else None

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
        # texts unpadded, each block padded to its own longest document (a padded corpus is as wide as its
        # longest: 20ng's pool 11,173 x 4,299); padded ids as given, int32 ids cast block by block
        word_vectors = modules[0] if len(modules) == 1 else None
        with self.encoder_.predicting_unpadded(X, word_vectors, compact=True) as x:
            documents = RaggedDocuments(x, self._document_features(X, "X"))
            # a document without a known word is left out only where no part of the kernel reads it: with a
            # sentence encoder its vector does
            empty = (documents.lengths == 0) & (self.sentence_encoder is None)
            read = documents.take(torch.nonzero(~empty).ravel())
            # blocks of like lengths: a block is as wide as its longest document (20ng's pool: a sixth of the
            # padded entries of blocks in row order); every result is written back by its rows
            blocks = ((read.rows[idx].to(self.device_), xb.to(self.device_)) for idx, xb in read.blocks(block))
            with torch.no_grad(), exact_numerics(), warnings.catch_warnings():
                warnings.simplefilter("ignore", GPInputWarning)
                yield len(documents), empty, blocks

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
        mean_out, var_out, prior, _ = self._latent_and_prior(X, block, "predict_latent")
        return (mean_out, var_out, prior) if return_prior else (mean_out, var_out)

    def predict_latent_cross(self, X: Documents, Z: Documents, block: int = 256) -> LatentCross:
        r"""The latent functions' joint posterior at two sets of documents, class by class: the means and
        variances at ``X`` (``n x C``) and at ``Z`` (``m x C``), and each class's covariances between them,
        :math:`\operatorname{cov}(f_c(\mathbf x_i), f_c(\mathbf z_j)) = k(\mathbf x_i, \mathbf z_j) - \mathbf
        k_i^\top \mathbf K_c^{-1} \mathbf k_j` (``C x n x m``; R&W eq. 2.24 of the ``C`` regressions of
        Milios et al. 2018, independent a posteriori). What a prediction-oriented acquisition reads
        (:func:`lvgp.models.acquisition.epig`). The Dirichlet inference only (``ValueError`` otherwise). A
        document no part of the kernel reads gets the latent prior and no covariance (a warning counts
        them). ``block``: the ``X`` documents a pass; all of ``Z`` is in every pass (``C x block x m``)."""
        check_is_fitted(self, "model_")
        strategy = self._inference_strategy()
        if not strategy.cross_covariances:
            raise ValueError(
                f"predict_latent_cross needs inference='dirichlet' (independent latents a class); got "
                f"inference={self.inference!r}"
            )
        both, n = stack_documents(X, Z)
        with self._prediction_blocks(both, block) as (total, empty, blocks):
            posterior = self._posterior()
            parts = list(blocks)
            prior_mean, scale = self._unread_prior(strategy, strategy.intercept_variance(self))
            width = len(prior_mean)
            mean = prior_mean.expand(total, width).clone()
            var = scale.expand(total, width).clone()
            cov = torch.zeros(width, n, total - n, dtype=mean.dtype, device=self.device_)
            z_parts = [(idx[idx >= n], xb[idx >= n]) for idx, xb in parts if (idx >= n).any()]
            if z_parts:
                z_rows = torch.cat([idx for idx, _ in z_parts])
                z_width = max(xb.shape[-1] for _, xb in z_parts)
                zb = torch.cat([pad_to_width(xb, z_width) for _, xb in z_parts])
                z_mean, z_var, _ = self._block_latents(zb, posterior)
                mean[z_rows], var[z_rows] = z_mean, strategy.marginal_variances(z_var)
                target = strategy.cross_target(self, zb, posterior)  # once for every block of X
                for idx, xb in parts:
                    rows = idx[idx < n]
                    if len(rows):
                        x_mean, x_var, x_cov = strategy.block_cross_latents(self, xb[idx < n], target, posterior)
                        mean[rows], var[rows] = x_mean, x_var
                        cov[:, rows[:, None], (z_rows - n)[None, :]] = x_cov
            else:  # every Z document empty: the X documents' marginals alone
                for idx, xb in parts:
                    x_mean, x_var, _ = self._block_latents(xb, posterior)
                    mean[idx], var[idx] = x_mean, strategy.marginal_variances(x_var)
            if empty.any():
                warn(
                    f"predict_latent_cross: {int(empty.sum())} of {total} documents of X and Z have no known word: "
                    "given the latent prior and no covariance (no part of the kernel reads them)",
                    EmptyDocumentsWarning,
                    stacklevel=2,
                )
        mean_host, var_host = to_host(mean), to_host(var)
        return LatentCross(mean_host[:n], var_host[:n], mean_host[n:], var_host[n:], to_host(cov))

    def observation_noise(self) -> np.ndarray:
        r"""The noise variance of one more labelled document in each class's regression on the transformed
        labels (Milios et al. 2018, eq. 7): ``C x 2``, column 0 where the document's label is another class
        (:math:`\log(1/\alpha_\epsilon + 1)`), column 1 where it is the class itself (:math:`\log(1/(1 +
        \alpha_\epsilon) + 1)`), each plus the class's learned additional noise. With
        :meth:`predict_latent_cross`'s covariances, what conditioning the latent posterior on a text yet to be
        labelled reads (:func:`lvgp.models.acquisition.conditioned_power_batch`). The Dirichlet inference only
        (``ValueError`` otherwise)."""
        check_is_fitted(self, "model_")
        if not self._inference_strategy().cross_covariances:
            raise ValueError(f"observation_noise needs inference='dirichlet'; got inference={self.inference!r}")
        eps = float(self.likelihood_.alpha_epsilon)
        labels = np.log(1.0 / np.array([eps, 1.0 + eps]) + 1.0)  # another class's label, the class's own
        extra = to_host(self.likelihood_.second_noise.detach()).reshape(-1, 1)  # 1 (shared) or C x 1
        return np.broadcast_to(labels[None, :] + extra, (len(self.classes_), 2)).astype(np.float64).copy()

    def _latent_and_prior(
        self, X: Documents, block: int, caller: str, with_proba: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Means, variances and prior variances ``n x C`` of the latent functions (:meth:`predict_latent`),
        and with ``with_proba`` the probabilities :meth:`predict_proba` gives, from the same latent pass
        (else ``None``)."""
        strategy = self._inference_strategy()
        intercept = strategy.intercept_variance(self)  # the prior's part beyond the kernel's
        with self._prediction_blocks(X, block) as (n, empty, blocks):
            posterior = self._posterior()
            out: list[torch.Tensor | None] = [None, None, None]
            proba = self._class_prior_rows(n) if with_proba else None
            for idx, xb in blocks:
                mean, var, f = self._block_latents(xb, posterior)
                if proba is not None:
                    proba[idx] = strategy.block_proba(self, mean, var, f)
                var = strategy.marginal_variances(var)
                prior = self._prior_variances(xb, intercept)
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
                prior_mean, scale = self._unread_prior(strategy, intercept)
                width = len(prior_mean)
                for k, value in enumerate((prior_mean, scale, scale)):
                    if out[k] is None:
                        out[k] = torch.empty(n, width, dtype=value.dtype, device=self.device_)
                    out[k][rows] = value  # type: ignore[index]
        if out[0] is None:  # no document at all: every output has no row, one column a latent function
            prior_mean, _ = self._unread_prior(strategy, intercept)
            out = [prior_mean.new_empty(0, len(prior_mean)) for _ in out]
        mean, var, prior = (to_host(t) for t in out)  # type: ignore[arg-type]
        return mean, var, prior, None if proba is None else self._tempered_known(proba, empty)

    def _unread_prior(self, strategy: Inference, intercept: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
        """The latents' prior means and variances (one a latent function) at a document no part of the kernel
        reads: the classes' constant means, and their output scales plus the inference's ``intercept``."""
        width = strategy.latent_width(self)
        prior_mean = self.model_.mean_module.constant.reshape(-1).expand(width)
        return prior_mean, (self.model_.covar_module.outputscale + intercept).reshape(-1).expand(width)

    def _prior_variances(self, xb: torch.Tensor, intercept: torch.Tensor | float) -> torch.Tensor:
        """The latent prior variances at documents ``xb``: ``n x C``, or ``n x 1`` where the classes share
        one kernel (the kernel's diagonal plus the inference's ``intercept``)."""
        prior = self.model_.covar_module(xb, diag=True) + intercept
        return prior[:, None] if prior.dim() == 1 else prior.mT

    def predict_proba(self, X: Documents, block: int = 256) -> np.ndarray:
        """``n x n_classes`` predictive probabilities (latent posterior integrated out); without a
        ``sentence_encoder``, a document without any known word gets the training class frequencies
        (with a warning); with one, it is read through its vector (the word part of the kernel giving
        it the empty set's value).
        ``block``: documents per batch (gpytorch's exact predictive forms each block's full
        covariance: memory grows with ``block``, time hardly)."""
        with self._prediction_blocks(X, block) as (n, empty, blocks):
            out = self._class_prior_rows(n)
            if empty.any():
                warn(
                    f"{int(empty.sum())} of {n} documents have no known word: given the training class frequencies",
                    EmptyDocumentsWarning,
                    stacklevel=2,
                )
            posterior = self._posterior()
            for idx, xb in blocks:
                mean, var, f = self._block_latents(xb, posterior)
                out[idx] = self._inference_strategy().block_proba(self, mean, var, f)
        return self._tempered_known(out, empty)

    def _class_prior_rows(self, n: int) -> torch.Tensor:
        """``n x C`` rows of the training class frequencies: the probabilities of documents without a known
        word, which the blocks of known documents overwrite."""
        return torch.tensor(np.tile(self.class_prior_, (n, 1)), device=self.device_)

    def _tempered_known(self, proba: torch.Tensor, empty: torch.Tensor) -> np.ndarray:
        """``proba`` on the host, the known documents' rows tempered (empty documents keep the training
        frequencies)."""
        out, known = to_host(proba), to_host(torch.nonzero(~empty).ravel())
        out[known] = self._temper(out[known])
        return out

    def score_samples(self, X: Documents, block: int = 256) -> np.ndarray:
        r"""``n`` novelty scores of the documents ``X``, higher meaning more typical of the training
        classes (scikit-learn's convention; :mod:`lvgp.base.novelty`), as ``novelty_score`` says: minus the
        entropy of :meth:`predict_proba` (``"entropy"``), its largest probability (``"max-probability"``),
        or minus the mean over the classes of the latent posterior variance over the prior variance
        (``"variance"``, in :math:`[-1, 0]`; :meth:`predict_latent`), or the log-sum-exp of the latent
        means (``"energy"``: the Dirichlet inference's log total evidence), or minus the mean of the
        normalized entropy's and the variance ratio's quantiles among the training documents'
        leave-one-out ones (``"entropy-variance"``, in :math:`[-1, 0]`: :meth:`novelty_reference`,
        :func:`~lvgp.base.novelty.reference_quantiles`), or the same of minus the energy and the variance
        ratio (``"energy-variance"``), or minus the variance ratio of the class with the largest latent mean
        (``"class-variance"``, in :math:`[-1, 0]`: :func:`~lvgp.base.novelty.class_variance_ratio`), or the
        same as ``"energy-variance"`` with that ratio in place of the classes' average
        (``"energy-class-variance"``), or the energy minus the classes' mean leave-one-out energies weighed by
        the predictive probabilities (``"centred-energy"``: :func:`~lvgp.base.novelty.centred_energy_novelty`),
        or the energy plus the shortfalls of those means from their overall mean, weighed likewise
        (``"lifted-energy"``: :func:`~lvgp.base.novelty.lifted_energy_novelty`)."""
        check_params(self)
        return self._novelty_scores(X, (self.novelty_score,), block, "score_samples")[self.novelty_score]

    def novelty_scores(
        self,
        X: Documents,
        kinds: tuple[str, ...] | list[str] | None = None,
        block: int = 256,
        *,
        return_proba: bool = False,
    ) -> dict[str, np.ndarray] | tuple[dict[str, np.ndarray], np.ndarray]:
        r"""Several novelty scores of the documents ``X`` from one prediction, by name: each ``n`` values,
        what :meth:`score_samples` returns with ``novelty_score`` set to it (:mod:`lvgp.base.novelty`). The
        probability scores alone take :meth:`predict_proba`; any other takes one latent pass
        (:meth:`predict_latent`, with the probabilities where a score needs them) and the leave-one-out
        :meth:`novelty_reference` where one of :data:`~lvgp.base.novelty.REFERENCE_SCORES` is asked for
        (:func:`~lvgp.base.novelty.latent_novelty_scores`).

        Args:
            X: the documents (or texts), ``n``.
            kinds: values of ``novelty_score``; default: every score the inference offers (all of
                :data:`~lvgp.base.novelty.NOVELTY_SCORES` with ``inference="dirichlet"``, all but the
                reference scores otherwise).
            block: documents a latent pass.
            return_proba: also return :meth:`predict_proba`'s ``n x C`` probabilities, from the same pass (a
                classifier that rejects texts below a threshold reads both: one prediction, not two).

        Returns:
            The scores by name; with ``return_proba``, ``(scores, probabilities)``.

        Raises:
            ValueError: a kind is not a novelty score, or is a reference score and the inference is not
                ``"dirichlet"``.
        """
        return self._novelty_scores(X, kinds, block, "novelty_scores", return_proba=return_proba)

    def _novelty_scores(
        self,
        X: Documents,
        kinds: tuple[str, ...] | list[str] | None,
        block: int,
        caller: str,
        return_proba: bool = False,
    ) -> Any:
        """:meth:`novelty_scores`; ``caller``: the method a warning names."""
        check_is_fitted(self, "model_")
        strategy = self._inference_strategy()
        if kinds is None:
            kinds = tuple(k for k in NOVELTY_SCORES if strategy.leave_one_out or k not in REFERENCE_SCORES)
        kinds = tuple(kinds)
        for kind in kinds:
            if kind not in NOVELTY_SCORES:
                raise ValueError(f"kinds must be among {NOVELTY_SCORES}; got {kind!r}")
            self._check_novelty_score(strategy, kind)
        if all(kind in PROBABILITY_SCORES for kind in kinds):
            probabilities = self.predict_proba(X, block)
            scores = {kind: probability_novelty(probabilities, kind) for kind in kinds}
            return (scores, probabilities) if return_proba else scores
        reference = self.novelty_reference() if any(k in REFERENCE_SCORES for k in kinds) else None
        with_proba = return_proba or any(k in PROBABILITY_READING_SCORES for k in kinds)
        mean, var, prior, proba = self._latent_and_prior(X, block, caller, with_proba=with_proba)
        scores = latent_novelty_scores(kinds, mean, var, prior, proba=proba, reference=reference)
        return (scores, proba) if return_proba else scores

    def predict(self, X: Documents) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
