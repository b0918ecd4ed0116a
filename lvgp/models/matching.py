r"""Cross-domain matching of bag-of-words documents with the latent distribution kernel
(thesis ch. 6).

Source words :math:`f` and target words :math:`g` get latent vectors :math:`\mathbf x_f, \mathbf y_g`
in one shared space :math:`\mathbb R^q`. A document is the kernel mean embedding of its
words' vectors (eq. 6.3) and the distance between a source and a target document is the
squared MMD (eq. 6.4)

.. math:: d(\mathbf X_i, \mathbf Y_j) = \|m(\mathbf X_i) - m(\mathbf Y_j)\|^2_{\mathcal H_k},
    \qquad k(\mathbf x, \mathbf y) = \exp(-\tfrac{\gamma}{2}\|\mathbf x - \mathbf y\|^2).

The true target of source :math:`i` is modelled by a softmax over the targets (eq. 6.5); MAP
with the Gaussian priors of eq. 6.6 minimizes (eq. 6.8)

.. math:: \mathcal L = \sum_i \Big\{ d(\mathbf X_i, \mathbf Y_i) + \log\sum_j \exp(-d(\mathbf X_i, \mathbf Y_j)) \Big\}
    + \frac\rho2\Big(\sum_f\|\mathbf x_f\|^2 + \sum_g\|\mathbf y_g\|^2\Big).

Implementation: one :class:`~lvgp.LatentDistributionKernel` over the union of the two
vocabularies (target word ids offset by the source vocabulary size; RBF embedding kernel,
linear level 2), whose :meth:`~lvgp.LatentDistributionKernel.squared_mmd` gives all
:math:`n \times n` distances through sparse products (no loop over word pairs); autograd
gives the gradients of eqs. 6.9-6.14 (checked against finite differences in the tests).
Optimization: L-BFGS on the full objective (the default, as in the thesis, for up to a few
thousand pairs), or Adam on mini-batches of ``batch_size`` pairs whose targets serve as each
other's negatives (sampled negatives; the loss is rescaled to the full data).
Initialization as in the thesis: PCA of the concatenated source and target word-frequency
matrices (a word's vector is its loading on the first ``q`` components, standardized); or from
what tf-idf CCA already knows (``init="cca"``: the canonical weights of regularized linear CCA
on the training pairs) or from the joint SVD of the cross-covariance of the paired frequency
matrices (``init="svd"``, partial least squares).

Beyond the thesis (off by default): ``level2`` other than ``"linear"`` (and ``identity_form``) measures
:math:`d` in the RKHS of the whole document kernel, :math:`d(s, t) = K(s, s) + K(t, t) - 2K(s, t)`
(the squared MMD for the linear level 2): with the cosine level 2 every document has norm 1 (or
:math:`1 + \lambda` with the separate identity part), so the ranking compares directions and no
document is nearer to all others for being long or short. ``tie_identical_tokens`` gives a token spelled identically in
both languages (package names, numbers, technical terms) one latent vector; ``source_embeddings``
/ ``target_embeddings`` tie the vectors to pretrained embeddings of each language where one
exists (:math:`\mathbf x_v = W\mathbf e_v + \boldsymbol\delta_v`, :mod:`lvgp.kernels.word_vectors`),
and words unseen in training that have an embedding enter ranking with :math:`W\mathbf e_v`.

With the RBF kernel fixed, the model depends on :math:`(\gamma, \rho)` only through
:math:`\rho/\gamma` (substitute :math:`\mathbf z = \sqrt\gamma\,\mathbf x`; the initial layouts are
given in :math:`\mathbf z`): the fit runs at :math:`\gamma = 1`, :math:`\rho/\gamma` and maps back, so
every :math:`(\gamma, \rho)` with the same ratio gives the identical matcher.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.utils.extmath import randomized_svd
from sklearn.utils.validation import check_is_fitted
from torch import Tensor
from torch.autograd.function import once_differentiable

from .._random import NUMERICS_SEED, Streams, torch_generator
from .._typing import EmbeddingsSpec
from ..base.constraints import RUNTIME, Boolean, Embeddings, Integer, Options, Real, check_params
from ..base.device import FLOAT_DTYPES, check_device, state_to_cpu, to_host
from ..base.embeddings import embedding_features, embeddings_from_dict, embeddings_to_dict, resolve_embeddings
from ..base.fit_options import LBFGS, EarlyStopping, FitOptionsArgument, FitOptionsMixin, MiniBatch
from ..base.fitting import FitResult, PlateauStopping, fit_stochastic, minimize, parameter_state, torch_adam
from ..base.linalg import dual_cca
from ..base.numerics import default_dtype
from ..bow.padded import PAD, pad_to_common_width, padded_to_counts
from ..bow.vocabulary import Vocabulary
from ..kernels import make_word_vectors
from ..kernels.latent_distribution import collapsed_bandwidth, rescale_latent_space
from ..kernels.spec import KernelArg, KernelArgument, LDKSpec
from ..warnings import EmptyDocumentsWarning, UnseenWordsWarning, warn
from .mixins import KernelParamsMixin, SavedParamsMixin

__all__ = ["LDKMatcher", "precision_at", "INITS"]

INITS = ("pca", "random", "cca", "svd")


class _SoftmaxMatchingLoss(torch.autograd.Function):
    r"""Eq. 6.8's data term :math:`\sum_i \big(d_{ii} + \log\sum_j e^{-d_{ij}}\big)` of an ``n x n``
    distance matrix, summed in float64 whatever ``d``'s dtype: the values of
    ``(d.double().diagonal() + torch.logsumexp(-d.double(), 1)).sum()``, the same operations on one
    float64 copy of ``d`` worked in place. The gradient :math:`\delta_{ij} - p_{ij}` (the row-wise
    softmax of :math:`-d`) comes back in ``d``'s dtype. Autograd's path was slower
    (``benchmarks/README.md``, matching): a dozen float64 ``n x n`` temporaries (the negation, the
    subtraction of the row maxima, two ``exp``, the diagonal's scatter, the casts)."""

    @staticmethod
    def forward(ctx: Any, d: Tensor) -> Tensor:
        work = d.to(torch.float64, copy=True)
        # logsumexp(-d) as torch computes it: max(-d) + log(sum(exp(-d - max(-d)))), max(-d) = -min(d)
        low = work.amin(1, keepdim=True)
        work.sub_(low).neg_().exp_()  # exp(-d_ij + min_j d_ij), in (0, 1]
        total = work.sum(1, keepdim=True)
        lse = total.log().sub_(low).squeeze(1)
        ctx.save_for_backward(work, total)
        ctx.dtype = d.dtype
        return (d.diagonal().double() + lse).sum()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        work, total = ctx.saved_tensors
        out = torch.div(work, total).mul_(-grad)  # -grad * p_ij
        out.diagonal().add_(grad)
        return out.to(ctx.dtype)


def precision_at(ranks: np.ndarray, max_r: int = 50) -> dict[int, float]:
    """Precision@R of eq. 6.15 for R = 1..max_r from the (0-based) rank of each query's
    true target: the fraction of queries whose true target is among the first R."""
    ranks = np.asarray(ranks)
    return {r: float(np.mean(ranks < r)) for r in range(1, max_r + 1)}


def _texts(X: Sequence[str], name: str) -> list[str]:
    if isinstance(X, str):
        raise TypeError(f"{name} must be a list of texts, not a single string")
    X = list(X)
    if not X:
        raise ValueError(f"{name} is empty")
    return X


def _leading_svd(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` leading singular triplets of ``matrix`` (randomized when ``k`` is well below its
    rank bound, exact otherwise; ``k <= 0`` gives empty factors: a side with a single word)."""
    m, n = matrix.shape
    if k <= 0:
        return np.zeros((m, 0)), np.zeros(0), np.zeros((0, n))
    if 2 * k < min(m, n):  # only the first k components are needed
        return randomized_svd(matrix, k, random_state=NUMERICS_SEED)  # stands in for the exact SVD
    u, sigma, vt = np.linalg.svd(matrix, full_matrices=False)
    return u[:, :k], sigma[:k], vt[:k]


def _standardized(loadings: np.ndarray) -> np.ndarray:
    return loadings / (loadings.std(0, keepdims=True) + 1e-12)


#: the matcher's kernel: the RBF embedding's exact LDK over learned vectors (its capabilities)
_KERNEL = KernelArgument(
    specs_only=True,
    takes={
        "embedding": ("rbf",),
        "word_embeddings": (None,),
        "learn_word_vectors": (True,),
        "variational": (False,),
        "identity_weight_prior_sd": (None,),
        "length_kernel": (False,),
        "approximation": ("auto", "exact"),
        "latent_init": (None,),
        "options": (None, {}),
    },
    why="LDKMatcher fits the RBF embedding's exact LDK over learned vectors; word embeddings: "
    "source_embeddings / target_embeddings; the start: init",
)


class LDKMatcher(KernelParamsMixin, FitOptionsMixin, SavedParamsMixin, BaseEstimator):
    r"""Matching source documents to target documents (e.g. across languages) with LDK.

    Args:
        kernel: the LDK over both vocabularies, an :class:`~lvgp.kernels.LDKSpec` (``None``, the default:
            ``LDKSpec(latent_dim=8, rho=0.01)``). Its ``latent_dim`` is q; ``rho`` the precision of the
            Gaussian prior on every latent vector (0 or ``None``: no prior); ``gamma`` the RBF embedding
            bandwidth (eq. 6.12's gamma; the embedding is the RBF one), fitted too with ``learn_gamma``
            (then the fit runs in the given parameterization, without the rho/gamma collapse);
            ``word_weighting="idf"`` makes a document the idf-weighted measure of its words' vectors (idf
            over the training documents of both sides); ``identity_weight`` the initial :math:`\lambda`
            of the word kernel :math:`\lambda\delta_{vw} + k(\mathbf x_v, \mathbf y_w)`, fitted with the
            vectors by eq. 6.8 (the identity part compares words by their kernel ids, so across the two
            sides it acts on tokens tied by ``tie_identical_tokens``); ``level2``: ``"linear"`` (the
            thesis: :math:`d` is the squared MMD) or another level-2 kernel (``"cosine"``, ``"rbf"``,
            ``"poly"``), :math:`d` then the squared distance in its RKHS (module docstring);
            ``identity_form="separate"`` with the cosine normalizes the identity part on its own, so that
            a target's length does not enter its distance through words the source cannot share. Word
            embeddings are per side (below), not the spec's.
        tie_identical_tokens: a token spelled identically on both sides has one latent vector.
        init: ``"pca"`` (the thesis), ``"cca"`` (regularized linear CCA on tf-idf, the canonical
            weights of the first q directions), ``"svd"`` (the SVD of the cross-covariance of the
            paired word frequencies) or ``"random"`` (draws from the prior).
        source_embeddings: ``None`` or word vectors of the source side the latent
            vectors are tied to (:mod:`lvgp.base.embeddings`: a name, a
            :class:`~lvgp.datasets.WordEmbeddings`, ``"corpus"`` -- learned from that side's training
            texts --, or a tuple of these; of one dimension when both are given).
        target_embeddings: the same for the target side.
        learn_identity_weight: fit :math:`\lambda` by eq. 6.8 (default) or keep it where it was put
            (to choose it on dev pairs: eq. 6.8 rewards the identical tokens of the training pairs
            and drives :math:`\lambda` up past where dev precision peaks).
        optimizer: ``None`` or an :class:`~lvgp.LBFGS` for the full softmax (defaults ``max_iter=300``,
            ``tol=1e-6``: L-BFGS stops when an iteration lowers eq. 6.8 by less than this, relative), or
            a :class:`~lvgp.MiniBatch` for Adam on mini-batches of ``batch_size`` pairs (required) with
            in-batch negatives, for large n (defaults ``max_epochs=300``, ``lr=0.05``, ``tol=1e-6``,
            ``convergence_window=10``: it stops when the mean mini-batch loss of the last
            ``convergence_window`` epochs is less than ``tol`` (relative) below the mean of the window
            before; :class:`~lvgp.base.fitting.PlateauStopping`, in
            :func:`~lvgp.base.fitting.fit_stochastic`). A ``ConvergenceWarning`` says when the budget
            ends the fit first.
        early_stopping: ``True`` (default) or an :class:`~lvgp.EarlyStopping` whose
            ``n_iter_no_change`` (default 10) is the patience: with validation pairs (``fit(...,
            source_val=, target_val=)``), stop when their mean Precision@R over R = 1..50 (eq. 6.15, the
            area under the precision curve, as the study's dev score) has not improved for this many
            iterations (epochs), and keep the best iterate; ``False``: score them every iteration, run
            the whole budget and keep the best iterate. The validation data are the pairs given, so
            ``validation_fraction`` and ``policy`` do not apply. (Eq. 6.8's loss on the validation pairs keeps falling after their precision
            peaks: it rewards confident rankings, not correct ones.)
        min_df: the vocabulary filter of each side (fitted on the training texts): a word in at least
            this many (or this share of) training documents.
        max_features: the most frequent words each side keeps (``None``: all).
        random_state: seed of the initialization and the mini-batches.
        verbose: a progress bar.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.
        dtype: the kernel's arithmetic, ``"float32"`` (default) or ``"float64"``; the loss is summed in
            float64 either way, and L-BFGS keeps its iterate in float64. The matcher is not a GP (no
            Cholesky, no predictive variance): float32 halves the time of an evaluation (the word Grams
            and their sparse products are memory-bound) for the same test Precision@1 over the 10
            Debian sets (``benchmarks/matching_speed.py``, ``results/README.md``).

    Fitted: ``source_vocabulary_``, ``target_vocabulary_``, ``dropped_pairs_`` (training pairs left out: a
    side without any vocabulary word), ``target_ids_`` (kernel id of each
    target word), ``kernel_`` (the LDK over both vocabularies), ``source_vectors_`` /
    ``target_vectors_`` (``V x q``), ``shared_tokens_`` (how many target words are tied),
    ``loss_curve_``, ``validation_curve_``, ``best_iter_``, ``n_iter_``, ``converged_``, ``fit_seconds_``.

    Unseen words at ranking time are dropped with a counted warning (except words with a
    pretrained vector, see above); a document left without known words raises a ``ValueError``
    naming its row.
    """

    _default_kernel: dict[str, Any] = {"latent_dim": 8, "rho": 0.01}
    _first_format_version = 1  # files of lvgp 0.1 load
    _optimizer_defaults = (
        LBFGS(max_iter=300, tol=1e-6),
        MiniBatch(max_epochs=300, lr=0.05, tol=1e-6, convergence_window=10),
    )
    _unused_optimizer_fields = ("max_steps", "ngd_lr", "compile")
    _early_stopping_default = EarlyStopping(n_iter_no_change=10)
    #: parameters renamed since files were written (the patience went into ``early_stopping``)
    _renamed_params = {"n_iter_no_change": "early_stopping"}

    @classmethod
    def _restored_params(cls, params: dict, kernel: Any = None, path: Any = None) -> dict:
        params = super()._restored_params(params, kernel, path)
        if isinstance(params.get("n_iter_no_change"), int):  # files before early_stopping= (issue 58)
            params["n_iter_no_change"] = EarlyStopping(n_iter_no_change=params["n_iter_no_change"])
        return params

    def _patience(self) -> int:
        """Iterations (epochs) without a better validation score before the fit stops: early
        stopping's ``n_iter_no_change``, or the whole budget when it is off."""
        stopping = self._early_stopping_options()
        if stopping is None:
            options = self._optimizer_options()
            budget = options.max_iter if isinstance(options, LBFGS) else options.max_epochs
            assert budget is not None  # filled from the defaults
            return int(budget)
        return int(stopping.n_iter_no_change)

    @classmethod
    def _flat_fit_options(cls, params: dict) -> dict:
        """Files before format 3: ``batch_size=None`` was L-BFGS for ``max_iter`` iterations, an integer
        Adam on mini-batches for ``max_iter`` epochs."""
        flat = {k: params.pop(k) for k in ("batch_size", "max_iter", "tol", "convergence_window", "lr") if k in params}
        if flat.get("batch_size") is None:
            params["optimizer"] = LBFGS(max_iter=flat.get("max_iter"), tol=flat.get("tol"))
        else:
            params["optimizer"] = MiniBatch(
                batch_size=flat["batch_size"],
                max_epochs=flat.get("max_iter"),
                lr=flat.get("lr"),
                tol=flat.get("tol"),
                convergence_window=flat.get("convergence_window"),
            )
        return params

    def _check_fit_options(self) -> None:
        super()._check_fit_options()
        fields = ("validation_fraction", "validation_interval", "policy")
        unused = [f for f in fields if getattr(self.early_stopping, f, None) is not None]
        if unused:
            raise ValueError(
                f"early_stopping.{unused[0]}: LDKMatcher validates on the pairs given to fit, every iteration; "
                "it takes n_iter_no_change only"
            )
        if isinstance(self.optimizer, MiniBatch) and (self.optimizer.batch_size or 0) < 2:
            raise ValueError(
                "optimizer.batch_size: the matcher's mini-batches take their negatives from the batch: give at "
                f"least 2 pairs a batch; got {self.optimizer.batch_size!r}"
            )

    def __init__(
        self,
        kernel: KernelArg = None,
        *,
        tie_identical_tokens: bool = False,
        init: str = "pca",
        source_embeddings: EmbeddingsSpec = None,
        target_embeddings: EmbeddingsSpec = None,
        learn_identity_weight: bool = True,
        optimizer: LBFGS | MiniBatch | None = None,
        early_stopping: bool | EarlyStopping = True,
        min_df: int = 1,
        max_features: int | None = None,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        dtype: str = "float32",
        verbose: bool = False,
    ):
        self.kernel = kernel
        self.tie_identical_tokens = tie_identical_tokens
        self.init = init
        self.source_embeddings = source_embeddings
        self.target_embeddings = target_embeddings
        self.learn_identity_weight = learn_identity_weight
        self.optimizer = optimizer
        self.early_stopping = early_stopping
        self.min_df = min_df
        self.max_features = max_features
        self.random_state = random_state
        self.device = device
        self.dtype = dtype
        self.verbose = verbose

    def _check_kernel(self) -> LDKSpec:
        spec: LDKSpec = self._checked_spec()
        return spec

    # ------------------------------------------------------------------ vocabularies and encoding
    def _layout(self) -> None:
        """Kernel ids: source words first; target words after them, or a tied source word's id."""
        vs = len(self.source_vocabulary_)
        ids, extra = np.empty(len(self.target_vocabulary_), dtype=np.int64), 0
        for j, word in enumerate(self.target_vocabulary_.words):
            if self.tie_identical_tokens and word in self.source_vocabulary_:
                ids[j] = self.source_vocabulary_.index(word)
            else:
                ids[j] = vs + extra
                extra += 1
        self.target_ids_ = ids
        self.shared_tokens_ = len(ids) - extra
        self.num_words_ = vs + extra

    def _target_to_kernel(self, xt: torch.Tensor, extra_ids: np.ndarray | None = None) -> torch.Tensor:
        table = torch.from_numpy(
            self.target_ids_ if extra_ids is None else np.concatenate([self.target_ids_, extra_ids])
        )
        return torch.where(xt == PAD, xt, table[xt.clamp_min(0)])

    def _encode_words(
        self, source: list[str], target: list[str], on_empty: str = "raise"
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded ids of each side in its own vocabulary (the target's not yet in kernel ids)."""
        xs = self.source_vocabulary_.encode(source, name="source_texts", on_empty=on_empty)
        return xs, self.target_vocabulary_.encode(target, name="target_texts", on_empty=on_empty)

    def _encode(
        self, source: list[str], target: list[str], on_empty: str = "raise"
    ) -> tuple[torch.Tensor, torch.Tensor]:
        xs, xt = self._encode_words(source, target, on_empty)
        return xs, self._target_to_kernel(xt)

    def _side_features(self, side: str, embeddings: Any, vocabulary: Vocabulary, texts: list[str]) -> np.ndarray | None:
        """Scaled vectors of one side's words (the table and the scale are kept for unseen words)."""
        if embeddings is None:
            return None
        table = resolve_embeddings(embeddings, texts, vocabulary)
        self.embedding_tables_[side] = table
        features, self.feature_scales_[side] = embedding_features(vocabulary.words, table, stacklevel=5)
        return features

    def _word_features(self, source: list[str], target: list[str]) -> np.ndarray | None:
        """``num_words x h`` features: source words from the source embeddings, untied target
        words from the target embeddings, a tied word from the source's (else the target's)."""
        self.feature_scales_: dict[str, float] = {}
        self.embedding_tables_: dict[str, Any] = {}
        fs = self._side_features("source", self.source_embeddings, self.source_vocabulary_, source)
        ft = self._side_features("target", self.target_embeddings, self.target_vocabulary_, target)
        if fs is None and ft is None:
            return None
        if fs is not None and ft is not None and fs.shape[1] != ft.shape[1]:
            raise ValueError(
                f"source_embeddings ({fs.shape[1]}-d) and target_embeddings ({ft.shape[1]}-d) must have one dimension"
            )
        h = fs.shape[1] if fs is not None else ft.shape[1]  # type: ignore[union-attr]  # one of them is set
        out = np.zeros((self.num_words_, h))
        vs = len(self.source_vocabulary_)
        if fs is not None:
            out[:vs] = fs
        if ft is not None:
            for j, k in enumerate(self.target_ids_):
                if k >= vs or not out[k].any():
                    out[k] = ft[j]
        return out

    @staticmethod
    def _frequencies(counts: sp.csr_matrix) -> sp.csr_matrix:
        """Term frequencies: each row of a count matrix divided by its total (an empty row stays 0)."""
        return sp.diags(1.0 / np.maximum(np.asarray(counts.sum(1)).ravel(), 1)) @ counts

    def _merge(self, source_part: np.ndarray, target_part: np.ndarray) -> np.ndarray:
        """Per-word loadings of both sides in kernel ids (tied words: the mean of both)."""
        out = np.zeros((self.num_words_, source_part.shape[1]))
        counts = np.zeros(self.num_words_)
        vs = len(self.source_vocabulary_)
        out[:vs], counts[:vs] = source_part, 1
        np.add.at(out, self.target_ids_, target_part)
        np.add.at(counts, self.target_ids_, 1)
        return out / counts[:, None]

    def _initial_layout(self, source_ids: torch.Tensor, target_ids: torch.Tensor) -> np.ndarray | None:
        """The initial word vectors (``num_words x q``, unit standard deviation per dimension), from
        the training pairs' padded ids in each side's vocabulary (the counts of the texts, without
        tokenizing them again)."""
        if self.init == "random":
            return None
        q = self._spec.latent_dim
        counts_s = padded_to_counts(source_ids, len(self.source_vocabulary_))
        counts_t = padded_to_counts(target_ids, len(self.target_vocabulary_))
        if self.init in ("pca", "svd"):
            fs, ft = self._frequencies(counts_s), self._frequencies(counts_t)
        if self.init == "pca":
            f = sp.hstack([fs, ft]).toarray()
            f -= f.mean(0)
            _, _, vt = _leading_svd(f, min(q, min(f.shape) - 1))
            k = vt.shape[0]
            loadings = np.zeros((f.shape[1], q))
            loadings[:, :k] = vt.T
            vs = fs.shape[1]
            return _standardized(self._merge(loadings[:vs], loadings[vs:]))
        if self.init == "svd":  # the joint SVD of the cross-covariance: partial least squares
            cs, ct = fs.toarray(), ft.toarray()
            cross = (cs - cs.mean(0)).T @ (ct - ct.mean(0))
            u, sigma, vt = _leading_svd(cross, min(q, min(cross.shape)))
            k = len(sigma)
            left, right = np.zeros((cross.shape[0], q)), np.zeros((cross.shape[1], q))
            left[:, :k], right[:, :k] = u * np.sqrt(sigma), vt.T * np.sqrt(sigma)
            return _standardized(self._merge(left, right))
        # "cca": the primal weights F^T alpha of regularized linear CCA on centred tf-idf vectors
        ts = TfidfTransformer().fit_transform(counts_s).toarray()
        tt = TfidfTransformer().fit_transform(counts_t).toarray()
        ts -= ts.mean(0)
        tt -= tt.mean(0)
        components = min(q, len(ts) - 1)
        alpha, beta, _ = dual_cca(ts @ ts.T, tt @ tt.T, reg=0.1, components=components)
        left, right = np.zeros((ts.shape[1], q)), np.zeros((tt.shape[1], q))
        left[:, :components], right[:, :components] = ts.T @ alpha, tt.T @ beta
        return _standardized(self._merge(left, right))

    # ------------------------------------------------------------------ fit
    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        "optimizer": [None, FitOptionsArgument(LBFGS, MiniBatch, name="optimizer")],
        "early_stopping": [Boolean(), FitOptionsArgument(EarlyStopping, name="early_stopping")],
        "kernel": [_KERNEL],
        "learn_identity_weight": [Boolean()],
        "tie_identical_tokens": [Boolean()],
        "init": [Options(*INITS)],
        "source_embeddings": [None, Embeddings()],
        "target_embeddings": [None, Embeddings()],
        "min_df": [Integer(1), Real(0, 1, open_low=True)],
        "max_features": [None, Integer(1)],
        "dtype": [Options(*FLOAT_DTYPES)],
    }

    def fit(
        self,
        source_texts: Sequence[str],
        target_texts: Sequence[str],
        source_val: Sequence[str] | None = None,
        target_val: Sequence[str] | None = None,
    ) -> Self:
        """Fit on aligned training pairs (``source_texts[i]`` matches ``target_texts[i]``);
        ``source_val``/``target_val``: aligned validation pairs for early stopping."""
        source, target = _texts(source_texts, "source_texts"), _texts(target_texts, "target_texts")
        if len(source) != len(target):
            raise ValueError(
                f"source_texts and target_texts must be aligned pairs; got {len(source)} and {len(target)}"
            )
        check_params(self)
        spec = self._check_kernel()
        if len(source) < 2:
            raise ValueError("matching needs at least two training pairs")
        self.source_vocabulary_ = Vocabulary(min_df=self.min_df, max_features=self.max_features).fit(source)
        self.target_vocabulary_ = Vocabulary(min_df=self.min_df, max_features=self.max_features).fit(target)
        self._layout()
        with warnings.catch_warnings():  # training words below min_df are filtered by design, not "unseen"
            warnings.simplefilter("ignore", UnseenWordsWarning)
            xs, xt_words = self._encode_words(source, target, on_empty="keep")  # the start counts these
            xt = self._target_to_kernel(xt_words)
            # a pair one of whose sides keeps no vocabulary word (all its words below min_df) has no
            # bag of words there: it is left out of training, counted
            empty = ((xs == PAD).all(-1) | (xt == PAD).all(-1)).numpy()
            self.dropped_pairs_ = int(empty.sum())
            if empty.any():
                keep = np.flatnonzero(~empty)
                if len(keep) < 2:
                    raise ValueError(
                        f"matching needs at least two training pairs with a vocabulary word on both sides; "
                        f"{len(keep)} of {len(source)} have one (min_df={self.min_df})"
                    )
                source, target = [source[i] for i in keep], [target[i] for i in keep]
                rows = torch.from_numpy(keep)
                xs, xt, xt_words = xs[rows], xt[rows], xt_words[rows]
            layout = self._initial_layout(xs, xt_words)
        if self.dropped_pairs_:
            warn(
                f"{self.dropped_pairs_} of {self.dropped_pairs_ + len(source)} training pairs have a side without any "
                f"vocabulary word (min_df={self.min_df}): left out of training",
                EmptyDocumentsWarning,
            )
        features = self._word_features(source, target)
        # one common width, once: the kernel keeps the derived sets (distinct words, bags, the
        # bag-of-words Gram) of the tensors it is evaluated on, and padding at every evaluation
        # would hand it new tensors each time
        xs, xt = pad_to_common_width(xs, xt)
        seed = Streams(self.random_state).root
        # with a fixed gamma, fit in z = sqrt(gamma) x at gamma 1 and prior rho / gamma (map back below)
        rho, gamma = float(spec.rho or 0.0), float(spec.gamma)
        fit_gamma, fit_rho = collapsed_bandwidth("rbf", rho, gamma, spec.learn_gamma)
        with default_dtype(torch.float64):
            vectors = make_word_vectors(
                self.num_words_,
                spec.latent_dim,
                rho=fit_rho if fit_rho > 0 else None,
                word_features=features,
                seed=seed,
                init_scale=fit_rho**-0.5 if fit_rho > 0 else 1.0,
            )
            if layout is not None:
                if features is not None:  # the layout as far as the embeddings explain it
                    vectors.fit_projection(layout)
                else:
                    vectors.vectors = layout
            both = torch.cat([xs, xt])
            fitted = spec.replace(rho=fit_rho if fit_rho > 0 else None, gamma=fit_gamma, approximation="exact")
            self.kernel_ = fitted.build(self.num_words_, both, seed=seed, vectors=vectors)
        if self.kernel_.has_identity:
            self.kernel_.raw_identity_weight.requires_grad_(self.learn_identity_weight)
        self.device_ = check_device(self.device)
        self.kernel_ = self.kernel_.to(device=self.device_, dtype=FLOAT_DTYPES[self.dtype])
        xs, xt = xs.to(self.device_), xt.to(self.device_)
        params = [p for p in self.kernel_.parameters() if p.requires_grad]
        n = len(source)
        validation = self._validation(source_val, target_val)
        start = time.perf_counter()
        optimizer = self._optimizer_options()
        full_batch = isinstance(optimizer, LBFGS)
        if full_batch:
            result = minimize(
                params,
                lambda: self._loss(xs, xt),
                max_iter=int(optimizer.max_iter),
                tol=float(optimizer.tol),
                validate=validation,
                n_iter_no_change=self._patience(),
                verbose=self.verbose,
                desc="LDK matching",
            )
        else:  # a stochastic objective: the one loop of stochastic fits
            result = self._fit_minibatches(optimizer, params, xs, xt, n, seed, validation)
        if fit_gamma != gamma:  # back from z = sqrt(gamma) x: the same distances
            rescale_latent_space(self.kernel_, gamma**-0.5, rho, gamma)
        self.fit_seconds_ = time.perf_counter() - start
        self.loss_curve_, self.n_iter_, self.converged_ = list(result.loss_curve), result.n_iter, result.converged
        self.validation_curve_, self.best_iter_ = list(result.validation_curve), result.best_iter
        if full_batch:  # fit_stochastic warns for the mini-batch fit itself
            result.warn_if_unconverged(
                "LDK matching",
                "increase the optimizer's max_iter, or pass validation pairs to stop early",
                unit="L-BFGS iterations",
                stacklevel=2,
            )
        latent = to_host(self.kernel_.word_vectors.mean)
        self.source_vectors_ = latent[: len(self.source_vocabulary_)].copy()
        self.target_vectors_ = latent[self.target_ids_].copy()
        return self

    def _fit_minibatches(
        self,
        optimizer: Any,
        params: list[torch.nn.Parameter],
        xs: torch.Tensor,
        xt: torch.Tensor,
        n: int,
        seed: int,
        validation: Callable[[], float] | None,
    ) -> FitResult:
        """Adam on mini-batches with in-batch negatives, an epoch an iteration of
        :func:`~lvgp.base.fitting.fit_stochastic`: the plateau rule on the epochs' mean losses
        (the optimizer's ``convergence_window`` and ``tol``), early stopping on the validation pairs
        (``early_stopping.n_iter_no_change`` epochs), keeping the best epoch's parameters."""
        g = torch_generator(seed)
        batch = int(optimizer.batch_size)
        batches = max(1, n // batch)
        opt = torch_adam(params, optimizer.lr)

        def epoch(it: int) -> torch.Tensor:
            perm = torch.randperm(n, generator=g)
            total = torch.zeros((), dtype=torch.float64, device=xs.device)
            for b in range(batches):
                idx = perm[b * batch : (b + 1) * batch].to(xs.device)
                opt.zero_grad()
                loss = self._loss(xs[idx], xt[idx], scale=n / len(idx))
                loss.backward()
                opt.step()
                total = total + loss.detach()
            return total / batches

        return fit_stochastic(
            epoch,
            max_iter=int(optimizer.max_epochs),
            rule=PlateauStopping(int(optimizer.convergence_window), float(optimizer.tol)),
            what="LDK matching (mini-batches)",
            budget="max_epochs",
            unit="epochs",
            validate=validation,
            n_iter_no_change=self._patience(),
            state=parameter_state(params),
            stacklevel=4,
            advice="lower lr",
            parameters=lambda: params,
            desc="LDK matching",
            verbose=bool(self.verbose),
        )

    # ------------------------------------------------------------------ persistence
    _fitted_attribute = "kernel_"

    def _fitted_payload(self) -> dict:
        """Both vocabularies, the word embeddings each side resolved to, the kernel's state."""
        sides = {"source": self.source_embeddings, "target": self.target_embeddings}
        return {
            "source_vocabulary": self.source_vocabulary_.to_dict(),
            "target_vocabulary": self.target_vocabulary_.to_dict(),
            "embedding_tables": {
                side: embeddings_to_dict(sides[side], table) for side, table in self.embedding_tables_.items()
            },
            "feature_scales": dict(self.feature_scales_),
            "dropped_pairs": getattr(self, "dropped_pairs_", None),
            "kernel": state_to_cpu(self.kernel_.state_dict()),
            "fit": {
                "loss_curve": list(self.loss_curve_),
                "validation_curve": list(self.validation_curve_),
                "best_iter": self.best_iter_,
                "n_iter": self.n_iter_,
                "converged": self.converged_,
                "fit_seconds": self.fit_seconds_,
            },
        }

    def _restore_fitted(self, payload: dict) -> None:
        est = self
        if "dtype" not in payload.get("params", {}):  # written before dtype= (the kernel was float64)
            est.dtype = "float64"
        est.source_vocabulary_ = Vocabulary.from_dict(payload["source_vocabulary"])
        est.target_vocabulary_ = Vocabulary.from_dict(payload["target_vocabulary"])
        est._layout()
        est.embedding_tables_ = {}
        for side, state in payload["embedding_tables"].items():
            spec, table = embeddings_from_dict(state)
            est.embedding_tables_[side] = table if table is not None else resolve_embeddings(spec)
        est.feature_scales_ = dict(payload["feature_scales"])
        if payload.get("dropped_pairs") is not None:  # files written before, and loaded matchers of them, hold none
            est.dropped_pairs_ = payload["dropped_pairs"]
        state = payload["kernel"]
        spec = est._check_kernel()
        features = state.get("word_vectors.word_features")
        with default_dtype(torch.float64):
            vectors = make_word_vectors(  # a local generator's start, overwritten by the saved state
                est.num_words_,
                spec.latent_dim,
                rho=float(spec.rho) if spec.rho else None,
                word_features=features,
                seed=NUMERICS_SEED,
            )
            documents = torch.arange(est.num_words_).unsqueeze(0)  # every word once: the shapes, not the values
            est.kernel_ = spec.replace(approximation="exact").build(est.num_words_, documents, vectors=vectors)
        est.kernel_.load_state_dict(state)
        fit = payload["fit"]
        est.device_ = check_device(est.device)
        est.kernel_ = est.kernel_.to(device=est.device_, dtype=FLOAT_DTYPES[est.dtype])
        latent = to_host(est.kernel_.word_vectors.mean)
        est.source_vectors_ = latent[: len(est.source_vocabulary_)].copy()
        est.target_vectors_ = latent[est.target_ids_].copy()
        est.loss_curve_, est.validation_curve_ = list(fit["loss_curve"]), list(fit["validation_curve"])
        est.best_iter_, est.n_iter_, est.converged_ = fit["best_iter"], fit["n_iter"], fit["converged"]
        est.fit_seconds_ = fit["fit_seconds"]

    def _validation(
        self, source_val: Sequence[str] | None, target_val: Sequence[str] | None
    ) -> Callable[[], float] | None:
        """Minus the mean validation Precision@1..50 as a closure for :func:`minimize`, or ``None``."""
        if source_val is None and target_val is None:
            return None
        if source_val is None or target_val is None:
            raise ValueError("pass both source_val and target_val, or neither")
        sv, tv = _texts(source_val, "source_val"), _texts(target_val, "target_val")
        if len(sv) != len(tv):
            raise ValueError(f"source_val and target_val must be aligned pairs; got {len(sv)} and {len(tv)}")
        with warnings.catch_warnings():  # unseen validation words: dropped by the documented policy
            warnings.simplefilter("ignore", UnseenWordsWarning)
            xs = self.source_vocabulary_.encode(sv, on_empty="keep", name="source_val")
            xt = self._target_to_kernel(self.target_vocabulary_.encode(tv, on_empty="keep", name="target_val"))
        xs, xt = (x.to(self.device_) for x in pad_to_common_width(xs, xt))  # once (as in fit)

        def score() -> float:
            with torch.no_grad():
                d = self._distance(xs, xt, allow_empty=True)
            ranks = to_host((d < d.diagonal().unsqueeze(1)).sum(1))
            return -float(np.mean(list(precision_at(ranks, min(50, len(ranks))).values())))

        return score

    def _distance(self, xs: torch.Tensor, xt: torch.Tensor, allow_empty: bool = False) -> torch.Tensor:
        """:math:`d` of eq. 6.4 between every source and target document: the squared MMD (linear
        level 2), or the squared distance in the RKHS of the document kernel (module docstring); a
        padding-only row (``allow_empty``) is the zero embedding."""
        if self._spec.level2 == "linear":
            return self.kernel_.squared_mmd(xs, xt, allow_empty=allow_empty)
        return self.kernel_.squared_rkhs_distance(xs, xt, allow_empty=allow_empty)

    def _loss(self, xs: torch.Tensor, xt: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """Eq. 6.8 (the softmax terms over the given pairs, times ``scale``)."""
        nll = _SoftmaxMatchingLoss.apply(self._distance(xs, xt)) * scale  # summed in float64
        return nll + self.kernel_.word_vectors.penalty().double()

    # ------------------------------------------------------------------ predict
    def distances(
        self, source_texts: Sequence[str], target_texts: Sequence[str], on_empty: str = "raise"
    ) -> np.ndarray:
        """Eq. 6.4 between every source and every target document: ``n_s x n_t``. A document
        without any known word raises a ``ValueError`` naming its row, or with
        ``on_empty="keep"`` is the zero measure (its distances are the other documents' norms)."""
        check_is_fitted(self, "kernel_")
        source, target = _texts(source_texts, "source_texts"), _texts(target_texts, "target_texts")
        vectors = self.kernel_.word_vectors
        es = self.embedding_tables_.get("source") if vectors.word_features is not None else None
        et = self.embedding_tables_.get("target") if vectors.word_features is not None else None
        if es is None and et is None:
            xs, xt = self._encode(source, target, on_empty)
            with torch.no_grad():
                return to_host(self._distance(xs.to(self.device_), xt.to(self.device_), allow_empty=on_empty == "keep"))
        # words unseen in training that have a vector on their side enter with W e_v
        xs, added_s = self.source_vocabulary_.encode_extended(source, es or (), name="source_texts", on_empty=on_empty)
        vs = len(self.source_vocabulary_)
        xs = torch.where(xs >= vs, xs + (self.num_words_ - vs), xs)  # new source words come after all trained ones
        xt_local, added_t = self.target_vocabulary_.encode_extended(
            target, et or (), name="target_texts", on_empty=on_empty
        )
        # extra words: the source's first (ids from num_words_), then the target's (tied to an
        # identical source extra word when tokens are tied)
        rows = [es.lookup(added_s)[0] / self.feature_scales_["source"]] if es is not None and added_s else []
        target_extra: list[int] = []
        own: list[str] = []
        for word in added_t:
            if self.tie_identical_tokens and word in added_s:
                target_extra.append(self.num_words_ + added_s.index(word))
            else:
                target_extra.append(self.num_words_ + len(added_s) + len(own))
                own.append(word)
        if et is not None and own:
            rows.append(et.lookup(own)[0] / self.feature_scales_["target"])
        xt = self._target_to_kernel(xt_local, np.array(target_extra, dtype=np.int64))
        with contextlib.ExitStack() as stack, torch.no_grad():
            if rows:
                stack.enter_context(vectors.extra_words(np.concatenate(rows).astype(np.float64)))
            return to_host(self._distance(xs.to(self.device_), xt.to(self.device_), allow_empty=on_empty == "keep"))

    def rank(self, source_texts: Sequence[str], target_texts: Sequence[str], on_empty: str = "raise") -> np.ndarray:
        """For every source document, the target indices from nearest to farthest: ``n_s x n_t``
        (``on_empty`` as for :meth:`distances`)."""
        return np.argsort(self.distances(source_texts, target_texts, on_empty), axis=1, kind="stable")

    def true_target_ranks(self, source_texts: Sequence[str], target_texts: Sequence[str]) -> np.ndarray:
        """0-based rank of target i among all targets for source i (aligned test pairs). A pair
        whose source or true target has no known word cannot be matched: it gets the worst rank
        ``n - 1`` (counted in an :class:`~lvgp.warnings.EmptyDocumentsWarning`), never a tie in its
        favour."""
        source, target = _texts(source_texts, "source_texts"), _texts(target_texts, "target_texts")
        if len(source) != len(target):
            raise ValueError("true_target_ranks needs aligned pairs (as many sources as targets)")
        with warnings.catch_warnings():  # counted below, once, for the pairs
            warnings.simplefilter("ignore", EmptyDocumentsWarning)
            d = self.distances(source, target, on_empty="keep")
        empty = self._empty(source, self.source_vocabulary_) | self._empty(target, self.target_vocabulary_)
        ranks = (d < d.diagonal()[:, None]).sum(1)
        if empty.any():
            warn(
                f"{int(empty.sum())} of {len(ranks)} pairs have a document without any known word: ranked last",
                EmptyDocumentsWarning,
                stacklevel=2,
            )
            ranks[empty] = len(ranks) - 1
        return ranks

    def _empty(self, texts: list[str], vocabulary: Vocabulary) -> np.ndarray:
        """Documents with no word the model can place (in the vocabulary, or with a pretrained
        vector when embeddings are tied)."""
        side = "source" if vocabulary is self.source_vocabulary_ else "target"
        table = self.embedding_tables_.get(side) if self.kernel_.word_vectors.word_features is not None else None
        return np.array(
            [
                not any(t in vocabulary or (table is not None and t in table) for t in vocabulary.tokenize(doc))
                for doc in texts
            ]
        )
