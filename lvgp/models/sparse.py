r"""Sparse variational GP-LVSM for large n (SVGP, Hensman et al. 2013, with LDK).

Model. :math:`f \sim \mathcal{GP}(\mu, \alpha^{-1} k_{\mathrm{LDK}})` over documents, Gaussian
noise, and the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)` on every latent word vector
(the GP-LVSM paper's eq. 11 prior). The GP is supported on :math:`M` inducing documents
:math:`Z` with a whitened Gaussian :math:`q(\mathbf v)`, :math:`\mathbf u = L_{ZZ}\mathbf v`
(gpytorch's ``VariationalStrategy``). Training maximizes, by mini-batch stochastic gradients,

.. math:: \frac1n\Big[\frac nB\sum_{i\in\text{batch}} \mathbb E_{q(f_i)}\log p(y_i\mid f_i)
    - \mathrm{KL}(q(\mathbf v)\,\|\,\mathcal N(0, I)) + \log p(X\mid\rho)\Big],

gpytorch's ``VariationalELBO`` with the latent-vector prior registered on the kernel: the
prior enters once per epoch's worth of data (divided by ``n`` like the KL), not once per
mini-batch, so it keeps its weight relative to the likelihood whatever the batch size. A step
computes that ELBO's terms itself, from the kernel's blocks and closed forms
(:func:`~lvgp.models.inducing.whitened_gaussian_elbo`: gpytorch's values and gradients, without its
linear operators' bookkeeping).

Inducing points. LDK's inputs are word-index sets, not points of a vector space, so
inducing inputs cannot be moved by gradients. lvgp uses **fixed inducing documents whose
words' latent vectors are learned**: ``M`` training documents chosen once (k-means++ seeding
on the documents' word-frequency vectors, so that they cover the corpus, or uniformly at
random), padded to a common width. Their kernel values change during training because they
share the word vectors with every other document; their words cover the frequent
vocabulary. With all training documents as inducing points the bound is tight (the
equivalence test: the ELBO equals the exact log marginal likelihood at the optimal
:math:`q(\mathbf v)` and the predictions coincide with the exact GP-LVSM).

Cost per step: the LDK Gram of the ``M + B`` documents over their distinct words, plus the
``M x M`` Cholesky: independent of ``n``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any, Self

import gpytorch
import numpy as np
import torch
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.variational import CholeskyVariationalDistribution
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._random import NUMERICS_SEED, Streams, seeded_torch, torch_generator
from .._typing import Documents, TensorLike
from ..base.constraints import RUNTIME, Boolean, Integer, Options, Real, check_params, documents_input
from ..base.device import check_device, state_to_cpu, to_host
from ..base.distributed import backward_on_share, check_same_model, process_group
from ..base.encoding import BagOfWordsInputMixin, DocumentEncoder
from ..base.fit_options import FitOptionsArgument, FitOptionsMixin, MiniBatch
from ..base.fitting import FitResult, PlateauStopping, fit_stochastic, torch_adam
from ..base.numerics import NOISE_FLOOR, exact_numerics, warn_about_fitted_noise
from ..base.snapshot import KeptResult, gp_state
from ..base.targets import check_targets_array, raveled_column
from ..base.validation import check_block, standardization
from ..bow.padded import (
    RaggedIds,
    document_lengths,
    documents_at,
)
from ..bow.vocabulary import Vocabulary
from ..kernels.document import keep_empty_documents, shared_evaluation
from ..kernels.embedding import compiled_blocks, kept_blocks
from ..kernels.spec import (
    KernelArg,
    KernelArgument,
    LDKSpec,
    variational_word_vectors,
    word_vector_modules,
)
from ..warnings import EmptyDocumentsWarning, warn
from .estimator_base import KEPT_PREDICTION_BYTES
from .fused_step import FusedSparseObjective, fused_step_wanted
from .fused_step import unsupported as unsupported_fused
from .inducing import (
    PaddedVariationalStrategy,
    choose_inducing_documents,
    gaussian_predictive_marginals,
    step_approximation,
    whitened_gaussian_elbo,
)
from .mixins import (
    FittedVocabularyMixin,
    KernelParamsMixin,
    SavedParamsMixin,
    saved_approximation,
    word_source,
)

__all__ = ["SparseGPLVSM", "SparseGPLVSMRegressor", "step_loss"]


class SparseGPLVSM(gpytorch.models.ApproximateGP):
    """An ``ApproximateGP`` with ``ScaleKernel(kernel)`` (``scale=False``: ``kernel`` as the covariance
    as it is), a constant mean and whitened inducing documents ``inducing`` (``M x L`` padded long tensor)."""

    def __init__(self, inducing: torch.Tensor, kernel: Kernel, jitter: float = 1e-6, scale: bool = True):
        distribution = CholeskyVariationalDistribution(inducing.shape[0], dtype=torch.float64)
        # jitter given explicitly: gpytorch would look it up by the (long) dtype of the inducing inputs
        strategy = PaddedVariationalStrategy(
            self, inducing, distribution, learn_inducing_locations=False, jitter_val=jitter
        )
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = ScaleKernel(kernel) if scale else kernel

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        # the variational strategy passes the inducing documents and the batch together and slices
        # three blocks out of the result (K_ZZ, K_ZX and diag K_XX). Lazily (gpytorch's default),
        # each block is its own LDK evaluation: the least arithmetic, what a CPU wants (one square
        # Gram over the union of their words costs 25% more there). On a GPU the step is bound by
        # kernel launches, not arithmetic: one evaluation of the whole matrix launches about half
        # as many (benchmarks/gpu.py)
        covar = self.covar_module(x)
        if x.is_cuda:
            covar = covar.evaluate_kernel()
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), covar)


def step_loss(
    mll: gpytorch.mlls.VariationalELBO,
    x: torch.Tensor,
    y: torch.Tensor,
    variational: list[Any],
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Minus the ELBO per datum of a batch ``x``, ``y`` as :class:`SparseGPLVSMRegressor`'s eager step takes
    it (:func:`~lvgp.models.inducing.whitened_gaussian_elbo` in a shared evaluation). With ``variational``
    word vector modules (``mll`` then with ``combine_terms=False``): one draw of them from ``generator`` for
    every kernel evaluation of the step (K_ZZ, K_ZX and diag K_XX see the same vectors), and their KL to
    the prior over the number of training documents."""
    if not variational:
        with shared_evaluation(mll.model):
            return -whitened_gaussian_elbo(mll, x, y)
    with contextlib.ExitStack() as stack:
        for vectors in variational:
            stack.enter_context(vectors.one_sample(generator))
        stack.enter_context(shared_evaluation(mll.model))
        log_likelihood, kl_inducing, log_prior = whitened_gaussian_elbo(mll, x, y)[:3]
    kl_vectors = sum((v.kl() for v in variational), torch.zeros((), dtype=log_likelihood.dtype))
    return -(log_likelihood - kl_inducing + log_prior - kl_vectors / mll.num_data)


#: the streams of the fit's seed beside the batches' order (the root's), drawn by position before
#: they had names (their values kept): the variational word vectors' draws (one a step), the
#: predictions' draws
_STEP_STREAMS = (None, "word-vector draws", "predictive draws")


class SparseGPLVSMRegressor(
    FittedVocabularyMixin,
    KernelParamsMixin,
    FitOptionsMixin,
    SavedParamsMixin,
    BagOfWordsInputMixin,
    RegressorMixin,
    BaseEstimator,
):
    r"""Sparse variational GP-LVSM regression, trained by mini-batch SVI (Adam).

    The default kernel is the exact regressor's, :meth:`LDKSpec.variational_bow()
    <lvgp.kernels.LDKSpec.variational_bow>`: its intervals cover where the paper's MAP kernel's do
    not, but 64 inducing documents summarize the bag-of-words part coarsely: with many training
    sentences its error is that of the exact model with fewer (``benchmarks/README.md``, issue 39). Where the exact model fits in memory, it is the better regressor.

    Args:
        kernel: as for :class:`~lvgp.GPLVSMRegressor`: an :class:`~lvgp.kernels.LDKSpec` (``None``:
            ``LDKSpec.variational_bow()``; built on the training documents, times a learned output scale;
            ``approximation="auto"`` is the spec's rule applied to the documents of a step
            (:func:`step_approximation`): exact up to ``max_exact_words`` distinct words in the inducing
            documents and a batch, then Nystrom with the corpus's most frequent words as landmarks;
            ``kernel_kind_`` says which. Reviews' lengths over a large vocabulary put tens of
            thousands of distinct words in a step, where the exact word Gram makes a step orders of
            magnitude slower than Nystrom's (``benchmarks/large_n.py``); short texts keep the exact
            step, which is the faster below a few thousand words), a gpytorch ``Kernel``
            over padded word-index sets (the
            covariance as it is; give the fitted ``vocabulary=`` it was built for), or a factory
            ``callable(num_words) -> Kernel``.
        num_inducing: M inducing documents (see the module docstring), chosen by ``inducing``
            (``"kmeans++"`` or ``"random"``) among the training documents.
        optimizer: ``None`` or a :class:`~lvgp.MiniBatch`; unset fields take the defaults: ``batch_size=256``
            documents per step; ``max_steps=2000``, the budget in Adam steps (whatever ``n``: 2000 steps
            are 500 epochs of 1,000 documents at batch 256, or 10 epochs of 50,000); ``max_epochs=None``,
            an optional cap on the passes over the data; ``tol=1e-3``: training stops (converged) when
            the mean loss of the last ``convergence_window=100`` steps is less than ``tol`` (relative)
            below the mean of the window before (when the budget ends first, a ``ConvergenceWarning``
            says so); ``lr=0.02``, Adam's step size.
        inducing: how the inducing documents are chosen: ``"kmeans++"`` or ``"random"``.
        noise_init: the initial noise variance (standardized targets), above the likelihood's floor of 1e-4.
        outputscale_init: the initial output scale of a spec's kernel.
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (as for the exact estimator).
        num_words: for padded-tensor input, the vocabulary size. Padded ids in ``int32`` (or ``int16``)
            are kept as given, not copied to ``int64``, in fitting and in prediction: each batch or block
            is cast when taken (a million documents of 512 ids: 2 GB instead of 4).
        distributed: data-parallel training in ``world_size`` local processes under
            ``torch.distributed`` (gloo, loopback); each step's global batch is shared among
            them and the gradients all-reduced, so the trajectory is that of a single process
            with the same ``batch_size`` (up to floating-point summation order).
        world_size: the processes of ``distributed`` training.
        predict_samples: draws of variational word vectors (``LDKSpec(variational=True)``) whose
            predictive mixture a prediction is (mean of the means; mean of the variances plus the
            variance of the means); 1 draw, the means, for point word vectors.
        on_empty: a training text without a word of the vocabulary: ``"raise"`` (the default: a ``ValueError``
            naming the rows) or ``"keep"`` (an :class:`~lvgp.warnings.EmptyDocumentsWarning` counts and names
            them): it is kept as the empty set, as by :class:`~lvgp.GPLVSMRegressor` (0 at a linear or cosine
            level 2: its latent is the constant mean with no variance, and its target enters the ELBO through
            the noise alone). It is never an inducing document. A new text without a known word is predicted with
            the prior either way.
        random_state: seed of the inducing documents, the initialization and the batches.
        verbose: a tqdm progress bar over the steps.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.

    Fitted: ``model_``, ``likelihood_``, ``inducing_indices_``, ``loss_curve_`` (negative
    ELBO per datum and epoch), ``step_losses_`` (per step), ``n_iter_`` (steps), ``converged_``,
    ``word_vectors_``, ``kernel_kind_``, ``fit_seconds_``.
    Ctrl-C stops training after the current step and keeps the parameters reached.
    :meth:`save` / :meth:`load` write and read a fitted model (``torch.load(weights_only=True)``).
    """

    #: ``kernel=None``: :meth:`LDKSpec.variational_bow() <lvgp.kernels.LDKSpec.variational_bow>`
    _default_kernel: dict[str, Any] = LDKSpec.variational_bow().get_params()
    _first_format_version = 1  # files of lvgp 0.1 load
    _optimizer_defaults = (
        MiniBatch(
            batch_size=256, max_steps=2000, max_epochs=None, lr=0.02, tol=1e-3, convergence_window=100, compile=False
        ),
    )
    _unused_optimizer_fields = ("ngd_lr",)

    def __init__(
        self,
        kernel: KernelArg = None,
        *,
        num_inducing: int = 64,
        optimizer: MiniBatch | None = None,
        inducing: str = "kmeans++",
        noise_init: float = 0.5,
        outputscale_init: float = 1.0,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        predict_samples: int = 32,
        distributed: bool = False,
        world_size: int = 2,
        on_empty: str = "raise",
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
    ):
        self.kernel = kernel
        self.num_inducing = num_inducing
        self.optimizer = optimizer
        self.inducing = inducing
        self.noise_init = noise_init
        self.outputscale_init = outputscale_init
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.predict_samples = predict_samples
        self.distributed = distributed
        self.world_size = world_size
        self.on_empty = on_empty
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _kernel(
        self,
        x: torch.Tensor,
        inducing: torch.Tensor,
        seed: int,
        num_words: int,
        word_features: Any,
        words: Any,
        approximation: str | None,
    ) -> Kernel:
        """The covariance: the spec's LDK times an output scale, or the user's kernel as it is.
        ``approximation``: what ``"auto"`` stands for (a saved model's), else :func:`step_approximation`."""
        spec = self._spec
        if spec is not None and spec.approximation == "auto" and approximation is None:
            approximation = step_approximation(spec, x, inducing, self._optimizer_options().batch_size, seed)
        kernel = self._assembled_kernel(
            num_words, x, word_features=word_features, words=words, seed=seed, approximation=approximation
        )
        if isinstance(kernel, ScaleKernel) and spec is not None:
            kernel.outputscale = torch.tensor(float(self.outputscale_init), dtype=torch.float64)
        return kernel

    def _build(
        self,
        x: torch.Tensor,
        seed: int,
        num_words: int,
        word_features: np.ndarray | None = None,
        inducing_indices: np.ndarray | None = None,
        approximation: str | None = None,
    ) -> None:
        """Deterministic in ``seed``: every process of a distributed fit builds the same model.
        ``approximation``: the kernel's, where ``x`` are not the training documents (a saved model's
        inducing documents, from which :func:`step_approximation` would not find the fit's choice)."""
        if inducing_indices is None:
            inducing_indices = choose_inducing_documents(x, num_words, self.num_inducing, self.inducing, seed)
        self.inducing_indices_ = inducing_indices
        inducing = documents_at(x, self.inducing_indices_)
        words = self.encoder_.vocabulary.words if getattr(self, "encoder_", None) and self.encoder_.vocabulary else None
        kernel = self._kernel(x, inducing, seed, num_words, word_features, words, approximation)
        if self.on_empty == "keep":  # the training documents without a known word: the empty set
            keep_empty_documents(kernel)
        self.model_ = SparseGPLVSM(inducing, kernel, scale=False).double()
        self.likelihood_ = gpytorch.likelihoods.GaussianLikelihood().double()
        self.likelihood_.noise = torch.tensor(float(self.noise_init), dtype=torch.float64)

    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        **documents_input(),
        "optimizer": [None, FitOptionsArgument(MiniBatch, name="optimizer")],
        "kernel": [KernelArgument()],
        "num_inducing": [Integer(1)],
        "inducing": [Options("kmeans++", "random")],
        "noise_init": [Real(NOISE_FLOOR, open_low=True)],
        "outputscale_init": [Real(0, open_low=True)],
        "predict_samples": [Integer(1)],
        "distributed": [Boolean()],
        "world_size": [Integer(2)],
        "on_empty": [Options("raise", "keep")],
    }

    def _check_params(self) -> None:
        check_params(self)

    def fit(self, X: Documents, y: TensorLike, unlabeled: Documents | None = None) -> Self:
        """Fit on training documents ``X`` and targets ``y`` (``unlabeled``: further texts that
        ``word_embeddings="corpus"`` learns word vectors from)."""
        self._check_params()
        if self.distributed and self.world_size < 2:
            raise ValueError(f"distributed=True needs world_size >= 2; got {self.world_size}")
        if process_group()[1] > 1:
            if self.distributed:
                raise ValueError(
                    "distributed=True starts local processes of its own; inside a torch.distributed group (torchrun) "
                    "leave it False: each process of the group trains its share"
                )
            check_same_model(self.random_state, "SparseGPLVSMRegressor")
        self.device_ = check_device(self.device)
        if self.distributed and self.device_.type != "cpu":
            raise ValueError(
                f"distributed=True runs CPU processes (gloo): use device='cpu'; got device={self.device!r}"
            )
        if self.distributed:
            _check_picklable(self.get_params(deep=False), self.world_size)
        spec = self._spec
        self.encoder_ = DocumentEncoder(
            self.vocabulary,
            self.num_words,
            None if spec is None else word_source(spec.word_embeddings, None, self.device),
        )
        x = self.encoder_.fit_transform(X, "X", unlabeled=unlabeled, compact=True, on_empty=self.on_empty)
        y = check_targets_array(y, x.shape[0])
        y = raveled_column(y)
        if y.ndim != 1:
            raise ValueError("SparseGPLVSMRegressor takes one target per document (y of shape n)")
        self.y_mean_, self.y_std_ = (float(v) for v in standardization(y))
        targets = torch.from_numpy((y - self.y_mean_) / self.y_std_)
        seed = Streams(self.random_state).root
        self._predict_seed = Streams.of_seed(seed, positions=_STEP_STREAMS).seed("predictive draws")
        self._kept_factors = KeptResult()
        rank, world_size = process_group()
        start = time.perf_counter()
        if self.distributed:
            self._fit_distributed(x, targets, seed)
        else:  # inside a torch.distributed group (torchrun): data-parallel with the group's processes
            self._train(x, targets, seed, self.encoder_.num_words, self.encoder_.word_features, rank, world_size)
        self.fit_seconds_ = time.perf_counter() - start
        self.model_.eval()
        self.likelihood_.eval()
        warn_about_fitted_noise(
            "sparse GP-LVSM",
            self.likelihood_.noise,
            "The default kernel (kernel=None: LDKSpec.variational_bow(), variational word vectors beside the bag of "
            "words) keeps a posterior over the word vectors",
        )
        return self

    def _train(
        self,
        x: torch.Tensor,
        targets: torch.Tensor,
        seed: int,
        num_words: int,
        word_features: np.ndarray | None = None,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        """:meth:`_train_steps` with torch's global generator seeded inside a forked scope (gpytorch
        draws the variational mean's initial jitter from it): reproducible fits, and the caller's
        random stream is left as it was."""
        with seeded_torch(seed):
            self._train_steps(x, targets, seed, num_words, word_features, rank, world_size)

    def _train_steps(
        self,
        x: torch.Tensor,
        targets: torch.Tensor,
        seed: int,
        num_words: int,
        word_features: np.ndarray | None,
        rank: int,
        world_size: int,
    ) -> None:
        """Mini-batch SVI. With ``world_size > 1`` (inside ``torch.distributed``), every process
        draws the same global batches and takes its share ``batch[rank::world_size]``; the
        gradients, weighted by each share's size, are summed by all-reduce, so every step
        follows the gradient of the single-process objective on the global batch -- the
        likelihood term averaged over the batch, the KL of q(v) and the latent-vector prior
        (replicated in every process, weights summing to one) counted once."""
        self._build(x, seed, num_words, word_features)
        device = check_device(self.device)
        self.model_, self.likelihood_ = self.model_.to(device), self.likelihood_.to(device)
        n = x.shape[0]
        # batches are drawn on the host and cut to their longest document by the lengths kept there
        lengths = document_lengths(x)
        host_ids, host_lengths = x.numpy(), lengths.numpy()  # views of the host's tensors (the fused step's batches)
        host_targets = targets.cpu().numpy()
        x_device, targets = x.to(device), targets.to(device)
        variational = variational_word_vectors(self.model_.covar_module)
        # with variational word vectors the ELBO's terms are combined here: gpytorch's VariationalELBO
        # would subtract their KL (an added loss term of the exact GP's convention) without dividing by n
        mll = gpytorch.mlls.VariationalELBO(self.likelihood_, self.model_, num_data=n, combine_terms=not variational)
        params = [p for p in list(self.model_.parameters()) + list(self.likelihood_.parameters()) if p.requires_grad]
        optimizer = self._optimizer_options()
        # MiniBatch(compile=True) on a GPU (a CPU inside fused_steps()) with a kernel the fused objective
        # takes: the steps after the first (which initializes q(v) as gpytorch does) evaluate it, compiled, on
        # bags built on the host, with torch's fused Adam; else the compiled blocks of rbf_pooled (below)
        # (one process: a step taken again eagerly, below, would be one rank's decision alone)
        fused: dict[str, Any] = {
            "objective": None,
            "wanted": bool(optimizer.compile) and bool(variational) and world_size == 1 and fused_step_wanted(device),
        }
        if fused["wanted"] and unsupported_fused(self.model_, self.likelihood_) is not None:
            fused["wanted"] = False
        opt = torch_adam(params, optimizer.lr, fused=fused["wanted"])
        streams = Streams.of_seed(seed, positions=_STEP_STREAMS)
        g = torch_generator(streams.root)  # the batches' order
        samples = streams.torch("word-vector draws")  # the word vectors' draws, one a step

        self.model_.train()
        self.likelihood_.train()
        self.loss_curve_: list[float] = []
        self.step_losses_: list[float] = []
        sizes: list[int] = []  # each step's global batch size, and the step each epoch ended at
        epoch_ends: list[int] = []
        order: dict[str, Any] = {"perm": None, "next": n}  # the current epoch's permutation and position

        def exhausted() -> str | None:  # max_epochs caps the passes over the data
            if order["next"] >= n and optimizer.max_epochs is not None and len(epoch_ends) >= optimizer.max_epochs:
                return "max_epochs"
            return None

        def share_loss(idx: torch.Tensor) -> torch.Tensor:
            idx_device = idx.to(device)
            return step_loss(
                mll, documents_at(x_device, idx_device, lengths[idx]), targets[idx_device], variational, samples
            )

        def fused_backward(rows: np.ndarray) -> torch.Tensor:
            """The fused objective's loss on the documents ``rows`` (its batch taken with NumPy on the host:
            no operator but the targets' one), and its backward."""
            ids = host_ids[rows, : int(host_lengths[rows].max(initial=1))]
            yb = torch.from_numpy(host_targets[rows])
            loss = fused["objective"](ids, yb if device.type == "cpu" else yb.to(device, non_blocking=True), samples)
            loss.backward()
            return loss

        def step(it: int) -> torch.Tensor:
            if order["next"] >= n:  # a new epoch: a new permutation of the documents
                order["perm"], order["next"] = torch.randperm(n, generator=g), 0
                order["rows"] = order["perm"].numpy()  # the same permutation, for the fused step's NumPy batches
            start, stop = order["next"], order["next"] + int(optimizer.batch_size)
            order["next"] = stop
            opt.zero_grad()
            if fused["objective"] is not None:
                loss = fused_backward(order["rows"][start:stop])
                if not fused["objective"].usable(stacklevel=5):
                    # a Cholesky factorization of the fused step failed: the step again, through the eager
                    # objective (its own draw of the vectors), whose factorization adds jitter or says why not
                    opt.zero_grad()
                    loss = backward_on_share(order["perm"][start:stop], share_loss, params, rank, 1, device)
            else:
                loss = backward_on_share(order["perm"][start:stop], share_loss, params, rank, world_size, device)
            opt.step()
            if fused["objective"] is None and fused["wanted"]:
                fused["objective"] = FusedSparseObjective(self.model_, self.likelihood_, n, compile=True)
            sizes.append(min(stop, n) - start)
            if order["next"] >= n:
                epoch_ends.append(it + 1)
            return loss

        # the fused objective's first (eager) step takes the eager blocks: a compiled block would be a warm-up for one step
        with exact_numerics(), compiled_blocks(bool(optimizer.compile) and not fused["wanted"]), kept_blocks():
            # every rank sees the same losses, hence the same decisions; rank 0 reports
            result = fit_stochastic(
                step,
                max_iter=int(optimizer.max_steps),
                rule=PlateauStopping(int(optimizer.convergence_window), float(optimizer.tol)),
                what="sparse GP-LVSM",
                budget="max_steps",
                unit="steps",
                exhausted=exhausted,
                warn=rank == 0,
                stacklevel=4,
                advice="lower lr",
                parameters=lambda: params,
                desc="sparse GP-LVSM",
                verbose=bool(self.verbose) and rank == 0,
            )
        self.step_losses_ = list(result.loss_curve)
        if order["next"] < n and self.step_losses_:  # the epoch the fit stopped in
            epoch_ends.append(len(self.step_losses_))
        # the per-epoch curve: each epoch's step losses weighted by their batch sizes
        losses, weights = np.asarray(self.step_losses_), np.asarray(sizes[: len(self.step_losses_)], dtype=float)
        bounds = [0, *(e for e in epoch_ends if e <= len(losses))]
        self.loss_curve_ = [
            float(np.average(losses[a:b], weights=weights[a:b])) for a, b in zip(bounds, bounds[1:]) if b > a
        ]
        self.converged_ = result.converged
        self.n_iter_ = len(self.step_losses_)
        self.fit_result_ = result

    def _fit_distributed(self, x: torch.Tensor, targets: torch.Tensor, seed: int) -> None:
        import tempfile

        import torch.multiprocessing as mp

        with tempfile.TemporaryDirectory() as tmp:
            # The processes meet through a file, not a port: a free port chosen here could be taken by
            # another process before rank 0 listens on it (EADDRINUSE, seen on CI).
            rendezvous, out = f"{tmp}/rendezvous", f"{tmp}/rank0.pt"
            mp.start_processes(
                _distributed_worker,
                args=(
                    self.world_size,
                    rendezvous,
                    self.get_params(deep=False),
                    x,
                    targets,
                    seed,
                    self.encoder_.num_words,
                    self.encoder_.word_features,
                    out,
                ),
                nprocs=self.world_size,
                join=True,
                start_method="spawn",
            )
            state = torch.load(out, weights_only=True)
        self._build(x, seed, self.encoder_.num_words, self.encoder_.word_features)
        self.model_.load_state_dict(state["model"])
        self.likelihood_.load_state_dict(state["likelihood"])
        self.loss_curve_, self.step_losses_ = state["loss_curve"], state["step_losses"]
        self.converged_, self.n_iter_ = state["converged"], len(state["step_losses"])

    def _word_vectors(self) -> Any:
        modules = word_vector_modules(self.model_.covar_module)
        return modules[0] if len(modules) == 1 else None

    # ------------------------------------------------------------------ persistence
    def _fitted_payload(self) -> dict:
        """The vocabulary, the inducing documents, the model's and likelihood's state (the training
        documents are not saved: the model needs only its inducing documents)."""
        return {
            "encoder": self.encoder_.to_dict(),
            "inducing": state_to_cpu(self.model_.variational_strategy.inducing_points).clone(),
            "inducing_indices": torch.from_numpy(np.asarray(self.inducing_indices_, dtype=np.int64)),
            "y_mean": self.y_mean_,
            "y_std": self.y_std_,
            "predict_seed": self._predict_seed,
            "model": state_to_cpu(self.model_.state_dict()),
            "likelihood": state_to_cpu(self.likelihood_.state_dict()),
            "fit": {
                "loss_curve": list(self.loss_curve_),
                "step_losses": list(self.step_losses_),
                "n_iter": self.n_iter_,
                "converged": self.converged_,
                "fit_seconds": getattr(self, "fit_seconds_", None),
            },
            "fit_result": dataclasses.asdict(self.fit_result_) if hasattr(self, "fit_result_") else None,
        }

    def _restore_fitted(self, payload: dict) -> None:
        est = self
        est.encoder_ = DocumentEncoder.from_dict(payload["encoder"])
        inducing = payload["inducing"]
        est.y_mean_, est.y_std_ = float(payload["y_mean"]), float(payload["y_std"])
        est._predict_seed = int(payload.get("predict_seed", 0))
        est._kept_factors = KeptResult()
        est.device_ = check_device(est.device)
        with seeded_torch(NUMERICS_SEED):  # the variational mean's initial jitter, overwritten by the state
            est._build(
                inducing,
                0,
                est.encoder_.num_words,
                est.encoder_.word_features,
                inducing_indices=np.arange(inducing.shape[0]),
                # files written before "auto" was the spec's rule here hold an exact LDK
                approximation=saved_approximation(payload["model"]),
            )
        est.inducing_indices_ = payload["inducing_indices"].numpy()
        est.model_.load_state_dict(payload["model"])
        est.likelihood_.load_state_dict(payload["likelihood"])
        fit = payload["fit"]
        est.model_, est.likelihood_ = est.model_.to(est.device_), est.likelihood_.to(est.device_)
        est.model_.eval()
        est.likelihood_.eval()
        est.loss_curve_, est.step_losses_ = list(fit["loss_curve"]), list(fit["step_losses"])
        est.n_iter_, est.converged_ = fit["n_iter"], fit["converged"]
        if fit["fit_seconds"] is not None:
            est.fit_seconds_ = fit["fit_seconds"]
        if payload.get("fit_result") is not None:
            est.fit_result_ = FitResult(**payload["fit_result"])

    def predict(
        self, X: Documents, return_std: bool = False, include_noise: bool = True, block: int = 1024
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Posterior predictive mean (and standard deviation) in the original target units.
        Documents without any known word get the prior: the constant mean and the prior
        standard deviation of an average inducing document (with an ``EmptyDocumentsWarning``)."""
        check_is_fitted(self, "model_")
        block = check_block(block)
        # texts unpadded, each block padded to its own longest; int32 ids cast by block
        with self.encoder_.predicting_unpadded(X, self._word_vectors(), compact=True) as x:
            return self._predict_encoded(x, return_std, include_noise, block)

    def _kept_inducing_factors(self, draws: int) -> list[torch.Tensor | None] | None:
        """The Cholesky factors of ``K_ZZ`` (plus jitter) of a prediction's first ``draws`` (or more) draws of the
        word vectors (one without variational vectors), kept between calls while the model and its parameters and
        buffers are those they were computed from (compared by value) and while they fit in
        :data:`~lvgp.models.estimator_base.KEPT_PREDICTION_BYTES`; an entry is ``None`` until a call computes it.
        The draws come from a generator seeded at fit time, so the k-th draw of every call's first block is the same
        (the later blocks' draws continue the generator's stream: their factors are computed each call). ``None``:
        nothing is kept (too large, or an estimator fitted before they were kept). Predicting leaves the
        estimator's ``__dict__`` as it was (the box is made at fit and at load); pickles and copies start without
        them."""
        box = self.__dict__.get("_kept_factors")
        if box is None:
            return None
        m = int(self.model_.variational_strategy.inducing_points.shape[-2])
        if draws * m * m * 8 > KEPT_PREDICTION_BYTES:
            box.clear()
            return None
        state = gp_state(self.model_, self.likelihood_)  # the word vectors at their means, between calls
        return box.slots(draws, state, owners=(self.model_,), key=self._predict_seed)

    def _predict_encoded(
        self, x: torch.Tensor | RaggedIds, return_std: bool, include_noise: bool, block: int
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        device = self.device_
        empty = document_lengths(x) == 0
        mean = torch.empty(len(empty), dtype=torch.float64, device=device)
        std = torch.empty(len(empty), dtype=torch.float64, device=device)
        rows = torch.nonzero(~empty).ravel()
        variational = variational_word_vectors(self.model_.covar_module)
        draws = int(self.predict_samples) if variational else 1
        factors = self._kept_inducing_factors(draws)
        # draws from a generator seeded at fit time: predictions are a function of the fitted model
        generator = torch_generator(self._predict_seed) if variational else None
        with torch.no_grad(), exact_numerics():
            for b in range(0, len(rows), block):
                idx = rows[b : b + block]
                xb = documents_at(x, idx).to(device)
                # with variational word vectors: the moments of the mixture over draws of the vectors
                # (mean of the means; mean of the variances plus variance of the means), as the exact model
                first = torch.zeros(len(idx), dtype=torch.float64, device=device)
                second, variance = torch.zeros_like(first), torch.zeros_like(first)
                for draw in range(draws):
                    for vectors in variational:
                        vectors.resample(generator)
                    with shared_evaluation(self.model_):  # one draw: K_ZX and diag K_XX share the norms
                        draw_mean, draw_variance = gaussian_predictive_marginals(
                            self.model_, self.likelihood_, xb, include_noise, factors if b == 0 else None, draw
                        )
                        first += draw_mean
                        second += draw_mean * draw_mean
                        variance += draw_variance.clamp_min(0)
                for vectors in variational:
                    vectors.use_mean()
                idx = idx.to(device)
                m = first / draws
                mean[idx] = m
                std[idx] = (variance / draws + (second / draws - m * m).clamp_min(0)).sqrt()
            if empty.any():
                warn(
                    f"{int(empty.sum())} documents have no known word; predicted with the prior",
                    EmptyDocumentsWarning,
                    stacklevel=3,
                )
                z = self.model_.variational_strategy.inducing_points
                prior_var = self.model_.covar_module(z, diag=True).mean()
                empty = empty.to(device)
                mean[empty] = self.model_.mean_module.constant.detach()
                std[empty] = (prior_var + (self.likelihood_.noise.squeeze() if include_noise else 0)).sqrt()
        mean_np = to_host(mean) * self.y_std_ + self.y_mean_
        if not return_std:
            return mean_np
        return mean_np, to_host(std) * self.y_std_


def _check_picklable(params: dict[str, Any], world_size: int) -> None:
    """``distributed=True`` sends the parameters to processes started by ``spawn``, which pickles
    them: a ``ValueError`` naming the parameter that cannot be (a lambda or a local function as the
    kernel factory), before any work."""
    import pickle

    for name, value in params.items():
        try:
            pickle.dumps(value)
        except (pickle.PicklingError, AttributeError, TypeError) as err:
            raise ValueError(
                f"{name}: distributed=True sends the parameters to {world_size} new processes, which must pickle "
                f"them, and {value!r} cannot be pickled ({err}); define it at the top level of a module (def "
                "kernel(num_words): ...), not as a lambda or inside a function"
            ) from err


def _distributed_worker(
    rank: int,
    world_size: int,
    rendezvous: str,
    params: dict,
    x: torch.Tensor,
    targets: torch.Tensor,
    seed: int,
    num_words: int,
    word_features: np.ndarray | None,
    out: str,
) -> None:
    """One process of a distributed fit (module level: spawn pickles it by reference)."""
    import os
    import sys

    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world_size)
    try:
        est = SparseGPLVSMRegressor(**{**params, "distributed": False})
        est._train(x, targets, seed, num_words, word_features, rank=rank, world_size=world_size)
        if rank == 0:
            torch.save(
                {
                    "model": est.model_.state_dict(),
                    "likelihood": est.likelihood_.state_dict(),
                    "loss_curve": est.loss_curve_,
                    "step_losses": est.step_losses_,
                    "converged": est.converged_,
                },
                out,
            )
        # Both ranks leave together and skip the C++ teardown: destroying gloo's pairs while the
        # peer closes its sockets aborts a process at random ("terminate called without an active
        # exception"; seen on CI, never locally). Everything is saved, so exit without destructors.
        dist.barrier()
    except BaseException:
        dist.destroy_process_group()
        raise
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
