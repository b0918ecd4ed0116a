r"""Latent support measure machine (thesis ch. 4, eqs. 4.18-4.23).

Documents are the kernel mean embeddings of latent word vectors (LDK, RBF embedding kernel,
linear level 2 by default); a support measure machine separates them while the word
vectors are learned. The primal (eq. 4.18) becomes the min-max problem (eq. 4.19)

.. math:: \min_{X,\theta}\ g(X,\theta),\qquad g(X,\theta) = \max_{A}\ \sum_i a_i
    - \tfrac12\sum_{ij} a_i a_j y_i y_j K(m(X_i), m(X_j)) + \tfrac\rho2\sum_t\|\mathbf x_t\|^2,
    \quad 0\le a_i\le C,\ \sum_i a_i y_i = 0.

For fixed :math:`X, \theta` the inner maximization is the SVM dual (eq. 4.20), solved by LIBSVM
(scikit-learn's ``SVC(kernel="precomputed")``, as in the thesis). The thesis alternates it with a
quasi-Newton minimization of eq. 4.21 over :math:`X, \theta` at fixed :math:`\bar A`. lvgp runs the
quasi-Newton method (L-BFGS) on :math:`g` itself: by Danskin's theorem
:math:`\nabla g = \nabla_{X,\theta} L(\bar A, X, \theta)` at the dual optimum :math:`\bar A` (the
gradient of eq. 4.21, eq. 4.22), so every evaluation of :math:`g` solves the duals and every
gradient is that of eq. 4.21 at them -- the alternation, with L-BFGS's line search accepting only
steps that lower :math:`g` (the objective of eq. 4.19 never increases; fixing :math:`\bar A` for a
whole inner minimization can overshoot, since eq. 4.21 rewards growing the margin terms of
support vectors that the next dual drops).

Multi-class (``multi_class``): one-versus-one (as in the thesis; LIBSVM's) or one-versus-rest. The
machines share the word vectors, and :math:`g` is the sum of their dual objectives plus one prior
term. One-vs-one: all :math:`k(k-1)/2` duals come from one LIBSVM call on the full Gram (LIBSVM
trains one-vs-one internally); prediction (eq. 4.23) by the pairs' votes. One-vs-rest: one binary
machine per class against all the others on the same Gram; prediction by the largest decision
value (as scikit-learn's ``LinearSVC``). With a few documents per class one-vs-rest classifies
much better (``results/README.md``).

Word vectors (:mod:`lvgp.kernels.word_vectors`): free, or tied to pretrained embeddings
(``word_embeddings``: :math:`\mathbf x_v = W\mathbf e_v + \boldsymbol\delta_v` with the penalty on
:math:`\boldsymbol\delta`; words unseen in training that have an embedding enter prediction with
:math:`W\mathbf e_v`). Initialization draws from the prior :math:`\mathcal N(0, \rho^{-1} I)` (the
projected embeddings at the same scale): with the RBF embedding kernel the model then depends on
:math:`(\gamma, \rho)` only through :math:`\rho/\gamma` (substitute :math:`\mathbf z = \sqrt\gamma\,\mathbf x`),
which :func:`equivalent_rho` uses to share fits across a :math:`(\gamma, \rho)` grid.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Self

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

from .._random import NUMERICS_SEED, Streams
from .._typing import Documents, TensorLike
from ..base.constraints import RUNTIME, Boolean, Options, Real, check_params, documents_input
from ..base.device import check_device, state_to_cpu, to_host
from ..base.encoding import BagOfWordsInputMixin, DocumentEncoder
from ..base.fit_options import LBFGS, FitOptionsArgument, FitOptionsMixin
from ..base.fitting import minimize
from ..base.novelty import decision_novelty, probability_novelty
from ..base.persistence import classes_from_plain, classes_to_plain
from ..base.platt import platt_probabilities, platt_sigmoids
from ..base.targets import check_labels
from ..bow.padded import trim_to_longest
from ..bow.vocabulary import Vocabulary
from ..kernels import LatentDistributionKernel
from ..kernels.assembly import assemble_covariance
from ..kernels.document import allow_empty_documents
from ..kernels.latent_distribution import collapsed_bandwidth, rescale_latent_space
from ..kernels.spec import KernelArg, KernelArgument, LDKSpec
from ..warnings import EmptyDocumentsWarning, warn
from .mixins import FittedVocabularyMixin, KernelParamsMixin, SavedParamsMixin, word_source
from .prediction_blocks import RaggedDocuments

__all__ = ["LatentSMMClassifier", "WARM_START_PARAMS", "MULTI_CLASS", "equivalent_rho", "pairwise_duals"]

#: how several classes are separated: pairwise machines with votes (LIBSVM's, the thesis), or one
#: machine per class against the rest
MULTI_CLASS = ("ovo", "ovr")

#: what may differ between a fit and the warm-started fit after it (``warm_start=True``): the SVM's
#: box and the optimizer's settings; everything else defines the word vectors being continued
WARM_START_PARAMS = frozenset({"C", "optimizer", "svm_tol", "warm_start", "verbose", "device", "random_state"})


def equivalent_rho(rho: float, gamma: float) -> float:
    r"""The :math:`\rho` that, at :math:`\gamma = 1`, gives the same latent SMM as :math:`(\gamma, \rho)`
    with a fixed RBF embedding bandwidth and prior-scaled initialization: :math:`\rho/\gamma`
    (the substitution :math:`\mathbf z = \sqrt\gamma\,\mathbf x` maps one model onto the other;
    :func:`~lvgp.kernels.latent_distribution.collapsed_bandwidth`)."""
    return collapsed_bandwidth("rbf", rho, gamma, learn_gamma=False)[1]


def _same(a: object, b: object) -> bool:
    """Whether two parameter values are the same setting (arrays and embeddings by identity)."""
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # arrays compare elementwise
        return False


def pairwise_duals(svc: SVC, n: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    r"""The one-vs-one machines of a fitted multi-class ``SVC``: an ``n x P`` matrix whose column
    ``p`` holds :math:`a_i y_i` of pair ``p`` (zero off its support vectors), the ``P`` offsets,
    and the pairs ``(i, j)`` of class indices, each machine positive for class ``i``.

    LIBSVM's layout (scikit-learn ``SVC.dual_coef_``): for the pair ``(i, j)``, the coefficients
    of class ``i``'s support vectors are in row ``j - 1`` and those of class ``j``'s in row ``i``;
    scikit-learn negates them for two classes (positive for ``classes_[1]`` there)."""
    k = len(svc.classes_)
    starts = np.concatenate([[0], np.cumsum(svc.n_support_)])
    pairs = list(itertools.combinations(range(k), 2))
    beta = np.zeros((n, len(pairs)))
    for p, (i, j) in enumerate(pairs):
        si, sj = slice(starts[i], starts[i + 1]), slice(starts[j], starts[j + 1])
        beta[svc.support_[si], p] = svc.dual_coef_[j - 1, si]
        beta[svc.support_[sj], p] = svc.dual_coef_[i, sj]
    intercept = np.asarray(svc.intercept_, dtype=np.float64).copy()
    if k == 2:
        beta, intercept = -beta, -intercept
    return beta, intercept, pairs


class OneVersusRestSVC:
    """One LIBSVM machine per class against the rest, on a precomputed kernel (``SVC`` with ``C``,
    ``tol`` and a fixed ``random_state``); two classes are one machine (positive for the second)."""

    def __init__(self, C: float, tol: float) -> None:
        self.C, self.tol = C, tol

    def fit(self, gram: np.ndarray, codes: np.ndarray) -> OneVersusRestSVC:
        k = int(codes.max()) + 1
        targets = [codes == 1] if k == 2 else [codes == c for c in range(k)]
        self.machines_ = [
            SVC(C=self.C, kernel="precomputed", tol=self.tol, random_state=NUMERICS_SEED).fit(gram, t.astype(int))
            for t in targets
        ]
        return self

    def duals(self, n: int) -> np.ndarray:
        r"""``n x M``: column ``m`` holds :math:`a_i y_i` of machine ``m`` (positive for its class)."""
        beta = np.zeros((n, len(self.machines_)))
        for m, svc in enumerate(self.machines_):
            beta[svc.support_, m] = svc.dual_coef_[0]
        return beta

    def decision_function(self, cross: np.ndarray) -> np.ndarray:
        """``n x k`` decision values (``n`` for two classes: positive for the second)."""
        values = np.stack([svc.decision_function(cross) for svc in self.machines_], axis=1)
        return values[:, 0] if len(self.machines_) == 1 else values

    def predict(self, cross: np.ndarray) -> np.ndarray:
        """Class codes: the machine with the largest decision value."""
        values = self.decision_function(cross)
        return (values > 0).astype(int) if values.ndim == 1 else values.argmax(axis=1)


class LatentSMMClassifier(
    FittedVocabularyMixin,
    KernelParamsMixin,
    FitOptionsMixin,
    SavedParamsMixin,
    BagOfWordsInputMixin,
    ClassifierMixin,
    BaseEstimator,
):
    r"""Latent support measure machine (thesis ch. 4): an SVM on kernel mean embeddings of
    learned latent word vectors.

    Args:
        kernel: the LDK, an :class:`~lvgp.kernels.LDKSpec` (``None``, the default: ``LDKSpec(rho=0.1)``, learned word
            vectors of dimension 2, the RBF embedding of bandwidth ``gamma`` (eq. 3.7), the linear level 2).
            Here the spec's ``rho`` is the weight of the L2 term on the latent vectors (eq. 4.18a; on their
            residuals when tied to ``word_embeddings``), ``0`` or ``None``: no penalty; ``learn_gamma``
            includes gamma in the minimization (theta of eq. 4.21; off by default: with the prior it only
            rescales the latent space, see the module docstring); ``embedding`` is ``"rbf"`` or ``"linear"``
            (explicit mean embeddings, no word Gram: fast for large vocabularies); ``identity_weight``
            :math:`\lambda` is fixed (a larger kernel only enlarges the margin, so the min-max objective
            cannot choose it: choose it on dev data); ``learn_word_vectors=False`` makes the machine an SVM
            on the fixed kernel, fitted once. ``init_scale``: the standard deviation of the initial word
            vectors (or projected embeddings) as fitted, of :math:`\sqrt\gamma\,\mathbf x_v` (of
            :math:`\mathbf x_v` with ``learn_gamma``); ``None`` (default): the prior's,
            :math:`\sqrt{\gamma/\rho}`, which makes the fit depend on :math:`(\gamma, \rho)` only through
            :math:`\rho/\gamma`. Under a weak prior that draw spreads the words so far apart that the RBF
            word kernel starts (and, its gradient vanishing, stays) at the identity: the machine is then an
            SVM on term frequencies. ``approximation="auto"``: the exact LDK up to ``max_exact_words``
            distinct training words, then Nystrom (``kernel_kind_`` says which).
        C: SVM box constraint.
        multi_class: ``"ovo"`` (the thesis: LIBSVM's one-vs-one machines and votes) or ``"ovr"``
            (one machine per class against the rest; see the module docstring).
        optimizer: ``None`` or an :class:`~lvgp.LBFGS` on eq. 4.19; unset fields take the defaults
            ``max_iter=300`` iterations and ``tol=1e-6``, the relative decrease of the objective at which
            L-BFGS stops.
        warm_start: when fitted already, ``fit`` continues from the fitted word vectors (and
            vocabulary) instead of a fresh draw, as scikit-learn's ``warm_start``: a path over
            ``C`` (:data:`WARM_START_PARAMS` may change between the fits; the documents must be the
            previous fit's). :class:`~lvgp.experiments.selection.DevSelected` walks the dev grid's
            C values this way.
        svm_tol: LIBSVM's stopping tolerance for the duals (tight: the gradient is exact at the
            dual optimum only).
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (unfitted: fitted on the training texts).
        num_words: for padded-tensor input, the vocabulary size.
        random_state: seed of the initialization.
        verbose: progress bar.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.
        on_empty: a training text without a word of the vocabulary: ``"raise"`` (the default: a ``ValueError``
            naming the rows) or ``"keep"`` (a linear or cosine level 2): it is kept as the empty set, the zero mean
            embedding (its kernel row 0, as the predictions read such a text: decided by the offsets alone), with an
            ``EmptyDocumentsWarning`` that counts and names them; for short texts of stop words alone.

    Fitted: ``classes_``, ``kernel_`` (the LDK with the learned word vectors), ``svc_`` (LIBSVM
    on the final training Gram), ``objective_curve_`` (eq. 4.19 per L-BFGS iteration),
    ``n_iter_``, ``converged_``, ``word_vectors_``, ``fit_seconds_``, ``n_evaluations_``, ``platt_sigmoids_``
    (each machine's Platt sigmoid :math:`(A, B)`, :meth:`predict_proba`'s; :mod:`lvgp.base.platt`).
    A ``ConvergenceWarning`` says when the optimizer's ``max_iter`` ends the fit first; Ctrl-C keeps the
    best vectors so far.
    """

    _default_kernel: dict[str, Any] = {"rho": 0.1}
    _first_format_version = 1  # files of lvgp 0.1 load
    _optimizer_defaults = (LBFGS(max_iter=300, tol=1e-6),)

    def __init__(
        self,
        kernel: KernelArg = None,
        *,
        C: float = 32.0,
        multi_class: str = "ovo",
        optimizer: LBFGS | None = None,
        svm_tol: float = 1e-5,
        warm_start: bool = False,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
        on_empty: str = "raise",
    ):
        self.kernel = kernel
        self.C = C
        self.multi_class = multi_class
        self.optimizer = optimizer
        self.svm_tol = svm_tol
        self.warm_start = warm_start
        self.vocabulary = vocabulary
        self.num_words = num_words
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.on_empty = on_empty

    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        "optimizer": [None, FitOptionsArgument(LBFGS, name="optimizer")],
        **documents_input(),
        "kernel": [
            KernelArgument(
                specs_only=True,
                takes={
                    "embedding": ("rbf", "linear"),
                    "variational": (False,),
                    "identity_weight_prior_sd": (None,),
                    "length_kernel": (False,),
                },
                why="the latent SMM's objective is the SVM's, not a likelihood",
            )
        ],
        "C": [Real(0, open_low=True)],
        # LIBSVM's stopping tolerance: below 1e-10 it iterates without end in double precision
        "svm_tol": [Real(1e-10)],
        "warm_start": [Boolean()],
        "multi_class": [Options(*MULTI_CLASS)],
        "on_empty": [Options("raise", "keep")],
    }

    def _check_params(self) -> LDKSpec:
        check_params(self)
        spec: LDKSpec = self._checked_spec()
        if self.on_empty == "keep" and spec.level2 not in ("linear", "cosine"):
            raise ValueError(
                "on_empty='keep' needs the spec's level2 'linear' or 'cosine', where the empty set's kernel value is 0 "
                f"as its predictions give a text without a known word; got level2={spec.level2!r}"
            )
        return spec

    kernel_: LatentDistributionKernel

    # ------------------------------------------------------------------ the dual
    def _svc(self, gram: np.ndarray) -> SVC | OneVersusRestSVC:
        if self.multi_class == "ovr":
            return OneVersusRestSVC(self.C, self.svm_tol).fit(gram, self._y)
        # a fixed random_state: LIBSVM would otherwise draw its seed from numpy's global state
        svc = SVC(
            C=self.C, kernel="precomputed", tol=self.svm_tol, decision_function_shape="ovo", random_state=NUMERICS_SEED
        )
        return svc.fit(gram, self._y)

    def _duals(self, svc: SVC | OneVersusRestSVC) -> np.ndarray:
        r"""``n x M``: :math:`a_i y_i` of each of the ``M`` machines (pairs, or classes against the rest)."""
        if isinstance(svc, OneVersusRestSVC):
            return svc.duals(len(self._y))
        return pairwise_duals(svc, len(self._y))[0]

    def _objective(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`g` of eq. 4.19 as a tensor whose value is :math:`g(X, \theta)` and whose gradient is
        Danskin's, :math:`\nabla_{X,\theta}L(\bar A, X, \theta)` (eq. 4.22) at the dual optimum :math:`\bar A`."""
        gram = self.kernel_(x).to_dense()
        # LIBSVM solves the dual on the host: one read-back of the Gram per evaluation (as L-BFGS's)
        host = to_host(gram)
        svc = self._svc(host)
        beta = torch.from_numpy(self._duals(svc)).to(gram.device)
        self._last_solved = (host, svc)  # the machine fit keeps the last evaluation's
        margin = 0.5 * (beta * (gram @ beta)).sum()  # sum over machines of 1/2 sum_ij a_i a_j y_i y_j K_ij
        return beta.abs().sum() - margin + self.kernel_.word_vectors.penalty()

    # ------------------------------------------------------------------ fit
    def fit(self, X: Documents, y: TensorLike, unlabeled: Documents | None = None) -> Self:
        """Fit on training documents ``X`` (texts, counts or a padded tensor) and labels ``y``;
        ``unlabeled``: further texts that ``word_embeddings="corpus"`` learns word vectors from.
        With ``warm_start`` and a previous fit, continue from its word vectors (same documents)."""
        spec = self._check_params()
        rbf = spec.embedding == "rbf"
        rho, gamma = float(spec.rho or 0.0), float(spec.gamma)
        # with a fixed gamma, fit in z = sqrt(gamma) x at (1, rho / gamma) and map back at the end
        fit_gamma, fit_rho = collapsed_bandwidth(spec.embedding, rho, gamma, spec.learn_gamma)
        self.device_ = check_device(self.device)
        if self.warm_start and hasattr(self, "kernel_"):
            x = self._continue(X, y)
            if rbf and fit_gamma != gamma:
                rescale_latent_space(self.kernel_, gamma**0.5, fit_rho, fit_gamma)
        else:
            x = self._start(X, y, unlabeled, spec, fit_gamma, fit_rho)
        self.kernel_ = self.kernel_.to(self.device_)
        x = x.to(self.device_)
        self._x = x
        self._fitted_params = self.get_params(deep=False)
        self.n_evaluations_ = 0

        initial: list[float] = []

        def objective() -> torch.Tensor:
            self.n_evaluations_ += 1
            value = self._objective(x)
            if not initial:  # L-BFGS-B evaluates the starting point first
                initial.append(value.item())
            return value

        start = time.perf_counter()
        params = [p for p in self.kernel_.parameters() if p.requires_grad]
        optimizer = self._optimizer_options()
        result = minimize(
            params,
            objective,
            max_iter=int(optimizer.max_iter),
            tol=float(optimizer.tol),
            verbose=self.verbose,
            desc="latent SMM",
        )
        with torch.no_grad():
            final = self._objective(x).item()  # the duals at the final vectors
            gram, svc = self._last_solved  # the fitted kernel's Gram (Platt's machines are fitted on it)
            if rbf and fit_gamma != gamma:  # back from z = sqrt(gamma) x: the same kernel values
                rescale_latent_space(self.kernel_, gamma**-0.5, rho, gamma)
                # the duals of the Gram the fitted kernel gives (equal up to rounding): what a saved
                # and reloaded machine solves again, to the bit
                gram = to_host(self.kernel_(x).to_dense())
                svc = self._svc(gram)
        del self._last_solved
        self.svc_ = svc
        self._fit_platt(gram)
        self.objective_curve_ = [*initial, *result.loss_curve[:-1], final]
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.fit_seconds_ = time.perf_counter() - start
        result.warn_if_unconverged("latent SMM", unit="L-BFGS iterations", stacklevel=2)
        return self

    def _start(
        self, X: Documents, y: TensorLike, unlabeled: Documents | None, spec: LDKSpec, fit_gamma: float, fit_rho: float
    ) -> torch.Tensor:
        """A fresh fit's encoder, labels, word vectors (drawn from the prior) and kernel; the encoded ``X``."""
        self.encoder_ = DocumentEncoder(
            self.vocabulary, self.num_words, word_source(spec.word_embeddings, None, self.device)
        )
        x = self.encoder_.fit_transform(X, "X", unlabeled=unlabeled, on_empty=self.on_empty)
        self.classes_, self._y = check_labels(y, x.shape[0])
        seed = Streams(self.random_state).root
        if spec.init_scale is not None:
            scale = float(spec.init_scale)
        else:
            scale = fit_rho**-0.5 if fit_rho > 0 else 1.0  # initial draws from the prior
        fitted = spec.replace(rho=fit_rho if fit_rho > 0 else None, gamma=fit_gamma, init_scale=scale)
        words = self.encoder_.vocabulary.words if self.encoder_.vocabulary is not None else None
        covariance = assemble_covariance(
            fitted,
            self.encoder_.num_words,
            x,
            word_features=self.encoder_.word_features,
            words=words,
            seed=seed,
            scale=False,
        )
        self.kernel_, self.kernel_kind_ = covariance.kernel, covariance.kind
        if self.on_empty == "keep":
            allow_empty_documents(self.kernel_)
        if spec.identity_weight is not None:
            self.kernel_.raw_identity_weight.requires_grad_(False)
        return x

    def _continue(self, X: Documents, y: TensorLike) -> torch.Tensor:
        """``warm_start``: the previous fit's documents, checked, and its labels re-read (``unlabeled``
        is not used: the word vectors it fed were learned by the first fit)."""
        before = self._fitted_params
        changed = sorted(
            name
            for name, value in self.get_params(deep=False).items()
            if name not in WARM_START_PARAMS and name != "kernel" and not _same(value, before[name])
        )
        spec, fitted_spec = (
            self._spec,
            before["kernel"] if before["kernel"] is not None else LDKSpec(**self._default_kernel),
        )
        changed += [
            f"kernel.{name}"
            for name, value in spec.get_params().items()
            if not _same(value, getattr(fitted_spec, name))
        ]
        if changed:
            raise ValueError(
                f"warm_start continues the previous fit, which had other {', '.join(changed)}: only "
                f"{sorted(WARM_START_PARAMS)} may change (set warm_start=False to start afresh)"
            )
        x = self.encoder_.transform(X, "X")
        previous = self._x.cpu()
        if x.shape[0] != previous.shape[0] or not torch.equal(trim_to_longest(x), trim_to_longest(previous)):
            raise ValueError(
                "warm_start continues the previous fit: X must hold the documents it was fitted on "
                f"({previous.shape[0]} documents; got {x.shape[0]}, or other words)"
            )
        classes, self._y = check_labels(y, x.shape[0])
        if not np.array_equal(classes, self.classes_):
            raise ValueError(f"warm_start continues the previous fit, whose classes were {self.classes_.tolist()}")
        return x

    # ------------------------------------------------------------------ persistence
    _fitted_attribute = "svc_"

    def _fitted_payload(self) -> dict:
        """The vocabulary, the training documents and labels, the kernel's state, Platt's sigmoids;
        :meth:`load` solves the SVM dual again on the same Gram (LIBSVM is deterministic)."""
        return {
            "platt_sigmoids": torch.from_numpy(np.array(self.platt_sigmoids_, dtype=np.float64)),
            "encoder": self.encoder_.to_dict(),
            "classes": classes_to_plain(self.classes_),
            "train_x": self._x.cpu().clone(),
            "train_codes": torch.from_numpy(np.asarray(self._y, dtype=np.int64)),
            "kernel": state_to_cpu(self.kernel_.state_dict()),
            "fit": {
                "objective_curve": list(self.objective_curve_),
                "n_iter": self.n_iter_,
                "converged": self.converged_,
                "fit_seconds": self.fit_seconds_,
                "n_evaluations": self.n_evaluations_,
            },
        }

    def _restore_fitted(self, payload: dict) -> None:
        est = self
        est.encoder_ = DocumentEncoder.from_dict(payload["encoder"])
        est.classes_ = classes_from_plain(payload["classes"])
        x, est._y = payload["train_x"], payload["train_codes"].numpy()
        spec = est._spec
        words = est.encoder_.vocabulary.words if est.encoder_.vocabulary is not None else None
        covariance = assemble_covariance(
            spec, est.encoder_.num_words, x, word_features=est.encoder_.word_features, words=words, scale=False
        )
        kernel = covariance.kernel
        if est.on_empty == "keep":
            allow_empty_documents(kernel)
        kernel.load_state_dict(payload["kernel"])
        fit = payload["fit"]
        est.device_ = check_device(est.device)
        est.kernel_, est._x = kernel.to(est.device_), x.to(est.device_)
        est.kernel_kind_ = covariance.kind
        est._fitted_params = est.get_params(deep=False)
        with torch.no_grad():
            gram = to_host(est.kernel_(est._x).to_dense())
        est.svc_ = est._svc(gram)
        if "platt_sigmoids" in payload:
            est.platt_sigmoids_ = payload["platt_sigmoids"].numpy()
        else:  # a file saved before the sigmoids were (they came from LIBSVM's folds then: close, not equal)
            est._fit_platt(gram)
        est.objective_curve_, est.n_iter_, est.converged_ = (
            list(fit["objective_curve"]),
            fit["n_iter"],
            fit["converged"],
        )
        est.fit_seconds_, est.n_evaluations_ = fit["fit_seconds"], fit["n_evaluations"]

    @property
    def word_vectors_(self) -> np.ndarray:
        """``num_words x latent_dim`` learned word vectors."""
        check_is_fitted(self, "kernel_")
        return to_host(self.kernel_.word_vectors.mean).copy()

    # ------------------------------------------------------------------ predict
    def _cross_gram(self, X: Documents) -> np.ndarray:
        """``n x n_train`` kernel values of new documents against the training documents; documents
        without any known word have the zero mean embedding (``K = 0``: decided by the offsets alone).

        Texts are read unpadded (:meth:`DocumentEncoder.predicting_unpadded`) and computed in blocks of
        :data:`~lvgp.models.prediction_blocks.PREDICT_BLOCK` documents of like lengths, each padded to its own
        longest: a padded corpus is as wide as its longest document (20ng's test split: 9,679 words, the median
        159), and the kernel's cost and memory grow with the width and the rows of a call. Every value is written
        back by its row."""
        check_is_fitted(self, "svc_")
        with self.encoder_.predicting_unpadded(X, self.kernel_.word_vectors) as x:
            documents = RaggedDocuments(x, None)
            n, empty = len(documents), documents.lengths == 0
            cross = np.zeros((n, self._x.shape[0]))
            if empty.any():
                warn(
                    f"{int(empty.sum())} of {n} documents have no known word: decided by the offsets b alone",
                    EmptyDocumentsWarning,
                    stacklevel=3,
                )
            docs = documents.take(torch.nonzero(~empty).ravel())
            with torch.no_grad():
                for idx, block in docs.blocks():
                    cross[docs.rows[idx].numpy()] = to_host(self.kernel_(block.to(self.device_), self._x).to_dense())
        return cross

    def decision_function(self, X: Documents) -> np.ndarray:
        """Decision values (eq. 4.23 before the sign). One-vs-one: ``n x n_pairs``, positive for the
        first class of each pair (``pairs_``); one-vs-rest: ``n x n_classes``, each class's machine
        against the rest. Two classes: one machine in both, ``n x 1``, positive for ``classes_[0]``."""
        check_is_fitted(self, "svc_")
        values = self.svc_.decision_function(self._cross_gram(X))
        if values.ndim == 1:  # two classes: scikit-learn's machine is positive for classes_[1]
            return -values[:, None]
        return values

    def class_decision_function(self, X: Documents) -> np.ndarray | None:
        """``n x n_classes`` decision values, one column per class (the larger, the more that class):
        one-vs-rest's machines, or for two classes the machine and its negative; ``None`` for one-vs-one
        with more than two classes (pairwise values do not rank classes)."""
        values = self.decision_function(X)
        if values.shape[1] == 1:
            return np.hstack([values, -values])
        return values if isinstance(self.svc_, OneVersusRestSVC) else None

    @property
    def pairs_(self) -> list[tuple]:
        """The class pairs of :meth:`decision_function`'s columns (one-vs-one)."""
        check_is_fitted(self, "svc_")
        if isinstance(self.svc_, OneVersusRestSVC):
            raise AttributeError("pairs_: a one-vs-rest machine has one column per class (classes_)")
        return [(self.classes_[a], self.classes_[b]) for a, b in itertools.combinations(range(len(self.classes_)), 2)]

    @property
    def novelty_score(self) -> str:
        """The score :meth:`score_samples` returns: ``"max-decision"`` where the machines rank the classes
        (one-vs-rest, or a fitted two-class machine), else ``"entropy"`` (one-vs-one, before a fit of
        two classes shows that one machine ranks them)."""
        if hasattr(self, "svc_"):  # the fitted machines, as class_decision_function reads them
            ranks = isinstance(self.svc_, OneVersusRestSVC) or len(self.classes_) == 2
        else:
            ranks = self.multi_class == "ovr"
        return "max-decision" if ranks else "entropy"

    def score_samples(self, X: Documents) -> np.ndarray:
        """``n`` novelty scores of the documents ``X`` (higher: more typical of the training classes;
        :mod:`lvgp.base.novelty`): the largest of :meth:`class_decision_function`'s values (one-vs-rest,
        or two classes); for one-vs-one with more classes, whose pairwise values rank no class, minus the
        entropy of :meth:`predict_proba`'s Platt probabilities."""
        values = self.class_decision_function(X)
        if values is not None:
            return decision_novelty(values)
        return probability_novelty(self.predict_proba(X), "entropy")

    def predict(self, X: Documents) -> np.ndarray:
        """One-vs-one voting of the pairwise machines (LIBSVM's), or one-vs-rest's largest decision value."""
        check_is_fitted(self, "svc_")
        return self.classes_[self.svc_.predict(self._cross_gram(X))]

    def predict_proba(self, X: Documents) -> np.ndarray:
        r"""``n x n_classes`` class probabilities by Platt scaling, LIBSVM's algorithm for
        ``SVC(probability=True)`` (:mod:`lvgp.base.platt`; scikit-learn removes that option in 1.11) on the
        fitted kernel (its word vectors fixed): sigmoids of the machines' decision values, fitted to decision
        values cross-validated in 5 folds over the training documents (Platt 1999; Lin, Lin & Weng 2007), then
        for one-vs-one the pairs coupled (Wu, Lin & Weng 2004); for one-vs-rest each class's sigmoid,
        normalized over the classes. The sigmoids are fitted at the end of ``fit`` (deterministic: the folds
        take ``NUMERICS_SEED``) and saved with the machine. As with scikit-learn's ``SVC``, the most probable
        class can differ from :meth:`predict`'s vote on a few documents."""
        check_is_fitted(self, "svc_")
        return platt_probabilities(self.decision_function(X), self.platt_sigmoids_, self._platt_scheme())

    def _platt_scheme(self) -> str:
        """How :mod:`lvgp.base.platt` reads :meth:`decision_function`'s columns."""
        if len(self.classes_) == 2:
            return "binary"  # one machine, positive for classes_[0]
        return "ovr" if isinstance(self.svc_, OneVersusRestSVC) else "ovo"

    def _fit_platt(self, gram: np.ndarray) -> None:
        """Platt's sigmoids of the machines on the training ``gram`` (``platt_sigmoids_``, ``M x 2``: at the
        end of ``fit``, so that ``predict_proba`` changes no attribute, as scikit-learn's conventions ask)."""
        self.platt_sigmoids_ = platt_sigmoids(
            gram, self._y, self._platt_scheme(), C=self.C, tol=self.svm_tol, seed=NUMERICS_SEED
        )
