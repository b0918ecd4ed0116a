"""``GPLVSMRegressor``: GP-LVSM as a scikit-learn estimator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import torch

from .._random import Streams
from .._typing import Documents
from ..base.constraints import Instance, Integer, Options
from ..base.fit_options import LBFGS, Adam, EarlyStopping, FitOptions
from ..encoders.sentence import ENCODERS, SentenceEncoder
from ..kernels.assembly import EncoderPart
from ..kernels.composition import PART_SELECTIONS
from ..kernels.document import keep_empty_documents
from ..kernels.packed import EncoderKernelArgument
from ..kernels.spec import (
    KernelArg,
    KernelArgument,
    LDKSpec,
    variational_word_vectors,
    word_vector_modules,
)
from .estimator_base import ExactGPRegressorBase
from .gplvsm import GPLVSM
from .mixins import KernelParamsMixin, SentenceEncoderMixin, word_source

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gpytorch.kernels import Kernel

    from ..bow.vocabulary import Vocabulary
    from ..kernels.word_vectors import WordVectors


class GPLVSMRegressor(KernelParamsMixin, SentenceEncoderMixin, ExactGPRegressorBase):
    r"""GP-LVSM regression on bag-of-words documents (Yoshikawa et al., AAAI 2015).

    The kernel is an object (``kernel=``), times a learned output scale :math:`\alpha^{-1}`. The paper's
    (``LDKSpec.paper()``: MAP word vectors of dimension 2 under the prior of precision :math:`\rho = 1`,
    the RBF embedding and the linear level 2) fits the word vectors, the output scale, the noise
    :math:`\beta^{-1}` and the mean by maximizing the log posterior of eq. 11 (:class:`~lvgp.LogPosterior`)
    and predicts with eqs. 19 and 21. On short texts its marginal likelihood interpolates the training
    targets and drives the noise to its floor: its 95% intervals cover a small share of held-out
    targets (an :class:`~lvgp.warnings.UncertaintyWarning` says so; ``results/README.md``). The default (``kernel=None``) is
    :meth:`LDKSpec.variational_bow() <lvgp.kernels.LDKSpec.variational_bow>`: the LDK that contains the bag
    of words over *variational* word vectors (a Gaussian posterior over the vectors, its KL to the prior
    in place of the MAP penalty, the expected log likelihood by reparameterized Monte Carlo samples,
    Adam; predictions are the moments of the mixture over ``predict_samples`` draws), whose intervals
    cover (``benchmarks/README.md``). Other extensions of the spec: ``word_embeddings`` (the vectors tied
    to pretrained ones), ``length_kernel``, the bag of words on fixed pretrained vectors
    (:meth:`LDKSpec.plus <lvgp.kernels.LDKSpec.plus>`).

    Args:
        kernel: ``None`` (``LDKSpec.variational_bow()``), an :class:`~lvgp.kernels.LDKSpec` (built on the training documents, times the output
            scale), a gpytorch ``Kernel`` over padded word-index sets (the covariance as it is, output
            scales included, e.g. ``ScaleKernel(BagOfWordsKernel(V)) + ScaleKernel(LatentDistributionKernel(V,
            2))``; give the fitted ``vocabulary=`` it was built for), or a factory ``callable(num_words) ->
            Kernel`` (for a vocabulary learned in ``fit``). ``kernel__rho`` and the other spec fields are
            parameters of ``set_params`` and ``GridSearchCV``.
        mean: ``"constant"`` (learned) or ``"zero"``.
        noise_init: the initial noise :math:`\beta^{-1}` (in standardized target units when
            ``normalize_y``), above the likelihood's floor of 1e-4.
        outputscale_init: the initial output scale :math:`\alpha^{-1}` of a spec's kernel.
        optimizer: ``None``: :class:`~lvgp.Adam` for variational word vectors (whose Monte Carlo
            objective L-BFGS cannot take), :class:`~lvgp.LBFGS` otherwise (scipy L-BFGS-B, as in the
            paper); or either object. Unset fields take the defaults ``LBFGS(max_iter=300, tol=1e-7)``
            and ``Adam(max_iter=300, lr=0.05, tol=1e-7, convergence_window=20)``. A Monte Carlo
            objective trains in :func:`~lvgp.base.fitting.fit_stochastic`, a deterministic one in
            :func:`~lvgp.base.fitting.minimize`.
        early_stopping: ``False``; ``True`` or an :class:`~lvgp.EarlyStopping`: hold out
            ``validation_fraction`` (default 0.1) of the training documents and stop when their RMSE
            has not improved for ``n_iter_no_change`` (default 20) iterations, scored every
            ``validation_interval`` iterations (default 1, or 10 for variational word vectors); then
            keep the best iterate (``policy="keep-best"``, the default) or refit on all the training
            documents for the best iteration count (``"refit"``). ``fit(..., X_val=, y_val=)``
            supplies an explicit set instead (scored with these settings whether or not early
            stopping is on).
        normalize_y: standardize targets (per output) before fitting; predictions are
            returned in the original units.
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (unfitted: fitted on the
            training texts; fitted: used as is); ``None`` uses ``Vocabulary()``.
        num_words: for padded-tensor input, the vocabulary size (default: largest id + 1).
        elbo_samples: Monte Carlo samples per objective evaluation (variational word vectors).
        predict_samples: Monte Carlo samples per prediction (variational); validation
            during early stopping uses a quarter of them. Each sample's factorization of the
            training covariance is kept between ``predict`` calls while the model is unchanged
            (about ``3 n^2`` float64 numbers a sample, up to
            :data:`~lvgp.models.estimator_base.KEPT_PREDICTION_BYTES` in all; above it, every call
            factorizes again).
        random_state: seed for the initialization, the validation split and Monte Carlo samples.
        verbose: show a progress bar during fitting.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.
        sentence_encoder: ``None``, or a pretrained sentence encoder (a name of
            :data:`lvgp.encoders.ENCODERS`, or a :class:`~lvgp.encoders.SentenceEncoder`) whose vectors of
            the texts enter the kernel beside their words (text input): with a spec, the spec's kernel
            over the word ids plus ``encoder_kernel``'s part with its own weight :math:`\mu`, starting where
            both parts weigh alike on the training documents under a log-normal prior of sd 0.5
            (:func:`~lvgp.kernels.packed.encoder_part`), times the output scale; a user kernel reads the
            packed documents ``[encoder vector | word ids]`` as given. Every text is then a document, also
            one without a vocabulary word (in training too): the encoder reads it, and the word part gives
            it the empty set's value.
        encoder_kernel: the encoder's part with a spec: ``"rbf"`` (default), ``"cosine"`` or ``"matern"``
            (of the normalized vectors), a gpytorch ``Kernel`` instance on the normalized vectors (copied at
            every fit, its parameters fitted with the rest, times the part's weight :math:`\mu`), or a list of
            those (one part each, each with its own weight, e.g. ``["cosine", "rbf"]``); a model fitted with a
            kernel here is saved with what it was, and :meth:`load` takes the same ``encoder_kernel`` again.
            The RBF was chosen on dev sentences of the regression study (``results/README.md``).
        part_selection: ``None`` (default: the kernel as composed), ``"loo"`` or ``"evidence"``: model
            selection among the sub-compositions of the covariance's top sum (with a sentence encoder:
            the words, the encoder, both), each fitted from the same start (three fits for two parts;
            :mod:`lvgp.kernels.composition`). ``"loo"``: the leave-one-out log predictive density of the
            training targets (closed-form, R&W eq. 5.10-5.12), a sub-composition replacing the sum only
            where its gain exceeds one standard error of the documents' paired gains (MAP word vectors saw
            the left-out text: optimistic for the part that holds them); ``"evidence"``: the
            fitted evidence with BIC's Occam factor (variational or fixed word vectors only, not MAP ones).
        on_empty: a training text without a word of the vocabulary, where no ``sentence_encoder`` reads it:
            ``"raise"`` (the default: a ``ValueError`` naming the rows) or ``"keep"`` (an
            :class:`~lvgp.warnings.EmptyDocumentsWarning` counts and names them): it is kept as the empty set, the
            value its document kernels give the zero measure
            (:attr:`~lvgp.kernels.document.DocumentKernel.allow_empty`: 0 at a linear or cosine level 2, so that
            it informs the constant mean alone; :math:`\exp(-\frac\zeta2\|m\|^2)` against a text of mean
            embedding :math:`m` at an RBF one, eq. 3.11), as a sentence encoder's word part gives it. A new text
            without a known word is predicted with the prior either way.

    Fitted attributes: ``model_`` (:class:`~lvgp.GPLVSM`), ``likelihood_``,
    ``vocabulary_`` (for text input, else ``None``), ``num_words_``, ``word_vectors_``
    (``num_words x latent_dim`` numpy), ``kernel_kind_`` (``"exact"``, ``"nystrom"``, ``"rff"``, or
    ``"user"``), ``n_iter_``, ``converged_``, ``loss_curve_`` (negative log posterior / n per
    iteration), ``validation_curve_``, ``fit_result_``, ``selected_parts_`` (the names of the kept parts of
    the covariance's top sum, e.g. ``("words", "encoder")``), with ``part_selection`` ``part_scores_`` (each
    sub-composition's ``score`` and its terms, :class:`~lvgp.models.part_selection.PartSelectionMixin`).

    Example:
        >>> from lvgp.kernels import LDKSpec
        >>> from lvgp import LBFGS
        >>> reg = GPLVSMRegressor(LDKSpec(latent_dim=2, rho=1.0), optimizer=LBFGS(max_iter=50), random_state=0)
        >>> reg.fit(["great film", "awful film", "great acting", "awful plot"], [1.0, -1.0, 1.2, -0.8])  # doctest: +SKIP
        >>> reg.predict(["great plot"], return_std=True)  # doctest: +SKIP
    """

    #: ``kernel=None``: :meth:`LDKSpec.variational_bow() <lvgp.kernels.LDKSpec.variational_bow>`
    _default_kernel: dict[str, Any] = LDKSpec.variational_bow().get_params()

    def __init__(
        self,
        kernel: KernelArg = None,
        *,
        mean: str = "constant",
        noise_init: float = 0.5,
        outputscale_init: float = 1.0,
        optimizer: LBFGS | Adam | None = None,
        early_stopping: bool | EarlyStopping = False,
        normalize_y: bool = True,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        elbo_samples: int = 1,
        predict_samples: int = 32,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
        sentence_encoder: str | SentenceEncoder | None = None,
        encoder_kernel: str | Kernel | Sequence[str | Kernel] = "rbf",
        part_selection: str | None = None,
        on_empty: str = "raise",
    ):
        self.kernel = kernel
        self.mean = mean
        self.noise_init = noise_init
        self.outputscale_init = outputscale_init
        self.optimizer = optimizer
        self.early_stopping = early_stopping
        self.normalize_y = normalize_y
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.elbo_samples = elbo_samples
        self.predict_samples = predict_samples
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.sentence_encoder = sentence_encoder
        self.encoder_kernel = encoder_kernel
        self.part_selection = part_selection
        self.on_empty = on_empty

    _name = "GP-LVSM"
    _calibration_advice = (
        "The default kernel (kernel=None: LDKSpec.variational_bow(), variational word vectors beside the bag of "
        "words) keeps a posterior over the word vectors; the paper's MAP vectors (LDKSpec.paper()) interpolate "
        "short texts"
    )
    _fit_hint = "Try a larger rho, a larger noise_init or kernel.learn_gamma=False."

    def _model_inputs(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def _documents(self, x: torch.Tensor, X: Documents, name: str) -> torch.Tensor:
        return self._with_encoder(x, X, name)

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None, unlabeled: Any = None) -> Self:
        """As :meth:`ExactGPRegressorBase.fit <lvgp.models.estimator_base.ExactGPRegressorBase.fit>`;
        ``encode_seconds_``: the seconds it spent in the sentence encoder (0 without one)."""
        self._encode_clock = 0.0
        super().fit(X, y, X_val=X_val, y_val=y_val, unlabeled=unlabeled)
        self.encode_seconds_ = self._encode_clock
        return self

    def _word_ids(self, x: torch.Tensor) -> torch.Tensor:
        if not x.dtype.is_floating_point:
            return x
        return x[..., self._sentence_encoder().dim :].long()

    @property
    def _empty_documents_use_prior(self) -> bool:  # type: ignore[override]
        """With a sentence encoder every text is a document (its vector), also one without a known
        word: its word part gives the empty set's value, its encoder part reads it."""
        return self.sentence_encoder is None

    @property
    def _fits_empty_documents(self) -> bool:  # type: ignore[override]
        return self.sentence_encoder is not None

    @property
    def _on_empty(self) -> str:  # type: ignore[override]
        return self.on_empty

    _parameter_constraints: dict[str, list] = {
        **ExactGPRegressorBase._parameter_constraints,
        "kernel": [KernelArgument()],
        "elbo_samples": [Integer(1)],
        "predict_samples": [Integer(1)],
        "sentence_encoder": [None, Options(*ENCODERS), Instance(SentenceEncoder)],
        "encoder_kernel": [EncoderKernelArgument()],
        "part_selection": [None, Options(*PART_SELECTIONS)],
        "on_empty": [Options("raise", "keep")],
    }

    def _check_params(self) -> None:
        super()._check_params()
        spec = self._spec
        if spec is not None and spec.variational and isinstance(self.optimizer, LBFGS):
            raise ValueError(
                "kernel.variational=True has a stochastic (Monte Carlo) objective: use optimizer=lvgp.Adam(...) "
                "(or None)"
            )

    def _word_embeddings(self) -> Any:
        spec = self._spec
        return None if spec is None else word_source(spec.word_embeddings, self.sentence_encoder, self.device)

    def _word_vectors(self) -> WordVectors | None:
        modules = word_vector_modules(self.model_.covar_module)
        return modules[0] if len(modules) == 1 else None

    def _build_model(
        self, inputs: torch.Tensor, targets: torch.Tensor, seed: int, state_dict: dict | None = None
    ) -> GPLVSM:
        features = self._encoder.word_features
        if state_dict is not None and features is None:  # a file of lvgp 0.1, whose encoder did not save them
            features = next((v for k, v in state_dict.items() if k.endswith("word_vectors.word_features")), None)
        words = self.vocabulary_.words if self.vocabulary_ is not None else None
        ids = self._word_ids(inputs)
        # the sentence encoder's part beside the words, when the documents carry its vectors
        encoder = None if ids is inputs else EncoderPart(inputs.shape[-1] - ids.shape[-1], self.encoder_kernel)
        covar = self._assembled_kernel(
            self.num_words_, ids, word_features=features, words=words, seed=seed, encoder=encoder
        )
        covar = self._restricted(covar)
        if self.on_empty == "keep" and not self._fits_empty_documents:  # with an encoder, its word part reads them
            keep_empty_documents(covar)
        model = GPLVSM(inputs, targets, num_words=self.num_words_, mean=self.mean, kernel=covar).double()
        self._init_hyperparameters(model)
        variational = variational_word_vectors(model.covar_module)
        if variational and isinstance(self.optimizer, LBFGS):
            raise ValueError(
                "the kernel's word vectors are variational (a Monte Carlo objective): use optimizer=lvgp.Adam(...)"
            )
        for vectors in variational:
            vectors.sample_generator = Streams.of_seed(seed).torch("word-vector-draws")
        return model

    def _default_optimizer_kind(self) -> type[FitOptions]:
        return Adam if self._variational() else LBFGS

    @classmethod
    def _legacy_optimizer_kind(cls, flat: dict[str, Any], params: dict[str, Any]) -> type[FitOptions]:
        """Files before format 3: ``optimizer="auto"`` was Adam for variational word vectors."""
        if flat.get("optimizer", "auto") == "auto":
            spec = params.get("kernel")
            kernel = spec if isinstance(spec, LDKSpec) else LDKSpec(**cls._default_kernel) if spec is None else None
            return Adam if kernel is not None and kernel.variational else LBFGS
        return Adam if flat["optimizer"] == "adam" else LBFGS

    def _stochastic_objective(self) -> bool:
        return self._variational()

    def _validation_interval(self, stopping: EarlyStopping) -> int:
        if stopping.validation_interval is not None:
            return int(stopping.validation_interval)
        return 10 if self._variational() else 1

    def _variational(self) -> bool:
        model = getattr(self, "model_", None)
        if model is not None:
            return bool(variational_word_vectors(model.covar_module))
        spec = self._spec
        return bool(spec is not None and spec.variational)

    def _latent_samples(self, purpose: str) -> int:
        if not self._variational():
            return 1
        return {"train": self.elbo_samples, "predict": self.predict_samples}.get(
            purpose, max(1, self.predict_samples // 4)
        )

    def _draw_latent_sample(self, generator: torch.Generator | None) -> None:
        for vectors in variational_word_vectors(self.model_.covar_module):
            if generator is None:
                vectors.use_mean()
            else:
                vectors.resample(generator)

    def _restore_fitted(self, payload: dict) -> None:
        super()._restore_fitted(payload)
        # files of lvgp 0.1 saved a custom embedding table's name in place of the parameter; the
        # table itself travelled with the encoder: restore the parameter from it (refitting works)
        table = self._encoder.embeddings
        spec = self._spec
        if (
            spec is not None
            and isinstance(spec.word_embeddings, str)
            and table is not None
            and getattr(table, "name", None) == spec.word_embeddings
        ):
            self.kernel = spec.replace(word_embeddings=table)
