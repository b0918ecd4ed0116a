"""``GPLVSMRegressor``: GP-LVSM as a scikit-learn estimator."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import torch
from gpytorch.kernels import ScaleKernel
from sklearn.utils.validation import check_is_fitted

from .._typing import EmbeddingsSpec
from ..base.constraints import Boolean, Instance, Integer, IsCallable, Options, Real
from ..base.numerics import default_dtype
from ..bow.padded import PAD
from ..bow.vocabulary import Vocabulary
from ..bow.weighting import word_weights
from ..kernels.document_length import DocumentLengthKernel
from ..kernels.latent_distribution import LatentDistributionKernel
from ..kernels.random_features import RandomFeatureLDK, balanced_identity_weight, identity_start
from ..warnings import MemoryBudgetWarning
from .estimator_base import ExactGPRegressorBase, estimator_word_vectors, ldk_options
from .gplvsm import GPLVSM

if TYPE_CHECKING:
    from ..kernels.word_vectors import WordVectors


class GPLVSMRegressor(ExactGPRegressorBase):
    r"""GP-LVSM regression on bag-of-words documents (Yoshikawa et al., AAAI 2015).

    Default (the paper): fits the latent word vectors :math:`\mathbf X`, the output scale
    :math:`\alpha^{-1}`, the noise :math:`\beta^{-1}` and the mean by maximizing the log
    posterior of eq. 11 (:class:`~lvgp.LogPosterior`), then predicts with eqs. 19 and 21.

    Three extensions (not in the papers, each off by default) address what a plain MAP fit
    does on short real texts -- overfitting of the ~``V q`` free word coordinates, and the
    length normalization of the mean embedding:

    * ``variational=True``: a Gaussian posterior :math:`q(\mathbf X)` replaces the point
      estimate, its KL to the prior replaces the MAP penalty (as in the Bayesian GP-LVM),
      and the expected log likelihood is estimated by reparameterized Monte Carlo samples
      (Adam); predictions are the moments of the mixture over ``predict_samples`` draws.
    * ``word_embeddings``: the latent means are tied to pretrained word vectors,
      :math:`\mu_v = W e_v + \delta_v`, with the projection :math:`W` learned and the prior
      on the residual :math:`\delta_v` (words without a vector keep a free residual).
    * ``length_kernel=True``: LDK times :class:`~lvgp.kernels.DocumentLengthKernel`
      (:math:`(|D_i||D_j|)^p`, :math:`p` learned in [0, 1]).

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
            when their RMSE has not improved for ``n_iter_no_change`` iterations (``fit(..., X_val=,
            y_val=)`` supplies an explicit set instead); then keep the best iterate (``True`` or
            ``"keep-best"``) or refit on all the training documents for the best iteration count
            (``"refit"``; :data:`~lvgp.base.fitting.EARLY_STOPPING`).
        validation_fraction, n_iter_no_change: the held-out share of the training documents and
            the patience (iterations without improvement) of ``early_stopping``.
        normalize_y: standardize targets (per output) before fitting; predictions are
            returned in the original units.
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (unfitted: fitted on the
            training texts; fitted: used as is); ``None`` uses ``Vocabulary()``.
        num_words: for padded-tensor input, the vocabulary size (default: largest id + 1).
        latent_init: initial word vectors: ``None`` (draws from the prior, or zero residuals
            with ``word_embeddings``), a ``num_words x latent_dim`` array, or a callable
            ``f(words, num_words, latent_dim)`` returning one (``words``: the vocabulary's
            word list, or ``None``).
        variational: fit a Gaussian posterior over the word vectors (needs ``optimizer="adam"``).
        latent_scale_init: initial posterior standard deviation, as a fraction of the prior's.
        elbo_samples: Monte Carlo samples per objective evaluation (variational).
        predict_samples: Monte Carlo samples per prediction (variational); validation
            during early stopping uses a quarter of them.
        word_embeddings: ``None``, the name of an embedding known to
            :func:`lvgp.datasets.load_word_embeddings` (e.g. ``"glove-6b-50d"``), a
            :class:`~lvgp.datasets.WordEmbeddings`, ``"corpus"`` (vectors learned from the training
            texts and ``fit(..., unlabeled=...)``), or a tuple of these (:mod:`lvgp.base.embeddings`);
            needs text input. Vectors are scaled to
            unit mean norm; vocabulary words without one are counted in a
            :class:`~lvgp.warnings.MissingEmbeddingsWarning`.
        length_kernel: multiply LDK by a learned document-length kernel.
        identity_weight: ``None`` (the paper's word kernel) or the initial :math:`\lambda` of the word
            kernel :math:`\lambda\delta_{vw} + k(\mathbf x_v, \mathbf x_w)`, which contains the bag of
            words (:class:`~lvgp.LatentDistributionKernel`); fitted with the other parameters.
            ``"balanced"``: start where both parts weigh alike in the training documents'
            self-similarities (:func:`~lvgp.kernels.random_features.balanced_identity_weight`).
        identity_form: ``"joint"`` (the identity inside the word kernel) or ``"separate"`` (the
            level-2 kernel of each part, added; :class:`~lvgp.LatentDistributionKernel`).
        learn_word_vectors: ``False`` fixes the word vectors to the pretrained ``word_embeddings``
            themselves (``latent_dim`` is then their dimension): GP regression on a kernel of fixed
            word similarities (and the bag of words with ``identity_weight``), whose hyper-parameters
            the marginal likelihood fits.
        word_weighting: ``"uniform"`` (the paper: a document is the mean of its words) or ``"idf"``
            (the idf-weighted measure, idf from the training documents).
        validation_interval: evaluate the validation score every this many iterations
            (default 1, or 10 for variational models).
        approximation: ``"auto"`` (the exact LDK unless the Gram of the distinct training
            words would exceed ``memory_budget_gib``: then an approximation, with a
            ``MemoryBudgetWarning``), ``"exact"``, ``"rff"`` (random Fourier features, RBF
            embedding) or ``"nystrom"`` (landmark words); see :class:`lvgp.kernels.RandomFeatureLDK`.
        num_features: D of the approximation.
        memory_budget_gib: the budget of ``approximation="auto"``.
        random_state: seed for the initialization, the validation split and Monte Carlo samples.
        verbose: show a progress bar during fitting.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.

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
        noise_init: float = 0.5,
        outputscale_init: float = 1.0,
        optimizer: str = "lbfgs",
        max_iter: int = 300,
        lr: float = 0.05,
        tol: float = 1e-7,
        early_stopping: bool | str = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 20,
        normalize_y: bool = True,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        latent_init: np.ndarray | Callable | None = None,
        variational: bool = False,
        latent_scale_init: float = 0.5,
        elbo_samples: int = 1,
        predict_samples: int = 32,
        word_embeddings: EmbeddingsSpec = None,
        length_kernel: bool = False,
        identity_weight: float | str | None = None,
        identity_form: str = "joint",
        learn_word_vectors: bool = True,
        word_weighting: str = "uniform",
        validation_interval: int | None = None,
        approximation: str = "auto",
        num_features: int = 2048,
        memory_budget_gib: float = 4.0,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
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
        self.variational = variational
        self.latent_scale_init = latent_scale_init
        self.elbo_samples = elbo_samples
        self.predict_samples = predict_samples
        self.word_embeddings = word_embeddings
        self.length_kernel = length_kernel
        self.identity_weight = identity_weight
        self.identity_form = identity_form
        self.learn_word_vectors = learn_word_vectors
        self.word_weighting = word_weighting
        self.validation_interval = validation_interval
        self.approximation = approximation
        self.num_features = num_features
        self.memory_budget_gib = memory_budget_gib
        self.random_state = random_state
        self.device = device
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

    _parameter_constraints: dict[str, list] = {
        **ExactGPRegressorBase._parameter_constraints,
        **ldk_options(),
        "train_gamma": [Boolean()],
        "kernel_options": [None, Instance(dict, name="a dict of LatentDistributionKernel arguments")],
        "latent_init": [None, IsCallable(), Instance(np.ndarray, torch.Tensor, list, tuple, name="an array")],
        "variational": [Boolean()],
        "latent_scale_init": [Real(0, open_low=True)],
        "elbo_samples": [Integer(1)],
        "predict_samples": [Integer(1)],
        "length_kernel": [Boolean()],
        "validation_interval": [None, Integer(1)],
        "approximation": [Options("auto", "exact", "rff", "nystrom")],
        "num_features": [Integer(1)],
        "memory_budget_gib": [Real(0, open_low=True)],
    }

    def _check_params(self) -> None:
        super()._check_params()
        if self.variational and self.optimizer != "adam":
            raise ValueError("variational=True has a stochastic (Monte Carlo) objective: use optimizer='adam'")
        if self.variational and not self.learn_word_vectors:
            raise ValueError(
                "variational=True fits a posterior over the word vectors: it needs learn_word_vectors=True"
            )

    def _word_embeddings(self) -> Any:
        return self.word_embeddings

    def _word_vectors(self) -> WordVectors:
        return self.model_.ldk.word_vectors

    def _build_model(
        self, inputs: torch.Tensor, targets: torch.Tensor, seed: int, state_dict: dict | None = None
    ) -> GPLVSM:
        if not isinstance(self.embedding, str):
            raise TypeError("GPLVSMRegressor takes embedding='linear', 'rbf' or 'poly'; use GPLVSM for custom kernels")
        options = dict(self.kernel_options or {})
        if self.embedding == "rbf":
            options.setdefault("gamma", self.gamma)
        features = self._encoder.word_features
        if state_dict is not None and features is None:  # a file of lvgp 0.1, whose encoder did not save them
            features = next((v for k, v in state_dict.items() if k.endswith("word_vectors.word_features")), None)
        kind = self._kernel_kind(inputs)
        if kind != "exact":
            options.update(features=kind, num_features=self.num_features, feature_seed=seed)
        with default_dtype(torch.float64):
            vectors = estimator_word_vectors(
                self,
                self.num_words_,
                features,
                rho=self.rho,
                variational=self.variational,
                init=self._initial_latent() if state_dict is None and self.learn_word_vectors else None,
                seed=seed,
                scale_init=self.latent_scale_init,
            )
            ldk = (LatentDistributionKernel if kind == "exact" else RandomFeatureLDK)(
                embedding=self.embedding,
                level2=self.level2,
                word_vectors=vectors,
                word_weights=word_weights(inputs, self.num_words_, self.word_weighting),
                identity_weight=identity_start(self.identity_weight),
                identity_form=self.identity_form,
                **options,
            )
            if self.identity_weight == "balanced" and state_dict is None:
                ldk.identity_weight = balanced_identity_weight(ldk, inputs)
            inner = ldk * DocumentLengthKernel() if self.length_kernel else ldk
            model = GPLVSM(inputs, targets, num_words=self.num_words_, mean=self.mean, kernel=ScaleKernel(inner))
        self._init_hyperparameters(model)
        if self.embedding == "rbf" and not self.train_gamma:
            ldk.embedding.raw_gamma.requires_grad_(False)
        if self.variational:
            ldk.word_vectors.sample_generator = torch.Generator().manual_seed(seed + 1)
        return model

    def _kernel_kind(self, inputs: torch.Tensor) -> str:
        """``"exact"``, ``"rff"`` or ``"nystrom"``: with ``approximation="auto"``, the exact LDK
        unless the Gram of the distinct training words (u^2 float64 entries, about four live
        copies with autograd) would exceed ``memory_budget_gib``; then random Fourier features
        (RBF embedding) or Nystrom landmarks (other embeddings), with a warning."""
        if self.approximation in ("exact", "rff", "nystrom"):
            return self.approximation
        if self.approximation != "auto":
            raise ValueError(f"approximation must be 'auto', 'exact', 'rff' or 'nystrom'; got {self.approximation!r}")
        u = int(torch.unique(inputs[inputs != PAD]).numel())
        need = 4 * 8 * u**2 / 2**30
        if need <= self.memory_budget_gib:
            return "exact"
        kind = "rff" if self.embedding == "rbf" else "nystrom"
        warnings.warn(
            f"the exact LDK over {u} distinct training words needs about {need:.1f} GiB (> memory_budget_gib="
            f"{self.memory_budget_gib}); using the {kind} approximation with num_features={self.num_features} "
            "(set approximation='exact' to insist)",
            MemoryBudgetWarning,
            stacklevel=5,
        )
        return kind

    def _validation_interval(self) -> int:
        if self.validation_interval is not None:
            return int(self.validation_interval)
        return 10 if self.variational else 1

    def _latent_samples(self, purpose: str) -> int:
        if not self.variational:
            return 1
        return {"train": self.elbo_samples, "predict": self.predict_samples}.get(
            purpose, max(1, self.predict_samples // 4)
        )

    def _draw_latent_sample(self, generator: torch.Generator | None) -> None:
        if generator is None:
            self.model_.ldk.word_vectors.use_mean()
        else:
            self.model_.ldk.word_vectors.resample(generator)

    @property
    def word_vectors_(self) -> np.ndarray:
        """``num_words x latent_dim`` latent word vectors (posterior means if variational)."""
        check_is_fitted(self, "model_")
        return self.model_.ldk.word_vectors.mean.detach().cpu().numpy().copy()

    def _saved_params(self) -> dict:
        params = super()._saved_params()
        params["latent_init"] = None  # shaped only the initial state, which the saved parameters supersede
        options = params.get("kernel_options") or {}
        if any(not isinstance(v, (int, float, str, bool, type(None))) for v in options.values()):
            raise TypeError("save() supports plain-valued kernel_options only (no prior or constraint objects)")
        return params

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device | None = None) -> Self:
        est = super().load(path, device)
        # files of lvgp 0.1 saved a custom embedding table's name in place of the parameter; the
        # table itself travelled with the encoder: restore the parameter from it (refitting works)
        table = est._encoder.embeddings
        if (
            isinstance(est.word_embeddings, str)
            and table is not None
            and getattr(table, "name", None) == est.word_embeddings
        ):
            est.word_embeddings = table
        return est
