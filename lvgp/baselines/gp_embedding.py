r"""GP covariate-embedding logistic regression (Andrade, Tamura & Tsuchida, Pattern
Recognition Letters 2018), hosted in Pyro.

Every covariate (word) :math:`j = 1..p` has an embedding :math:`\mathbf e_j \in \mathbb R^h`.
A document's observed covariate vector :math:`\mathbf x \in \mathbb R^p` (counts or tf-idf) is
a noisy observation of a noise-free vector :math:`\mathbf f` drawn from a zero-mean GP over
the embeddings with the squared-exponential covariance (paper section 2.1)

.. math:: k(\mathbf e_{j_1}, \mathbf e_{j_2}) = \exp\big(-\tfrac{1}{2l^2}\|\mathbf e_{j_1} - \mathbf e_{j_2}\|^2\big),
    \qquad x_j = f_j + \epsilon,\ \epsilon \sim \mathcal N(0, \sigma^2),

whose MAP estimate is :math:`\hat{\mathbf f} = S_\theta\mathbf x` with the smoothing matrix
:math:`S_\theta = K_l(K_l + \sigma^2 I)^{-1}` (eqs. 2-3). The class probabilities are a
logistic regression on :math:`\hat{\mathbf f}` (section 2.2): binary
:math:`p(y=1\mid\mathbf x) = \mathrm{sigmoid}(\boldsymbol\psi^\top S_\theta\mathbf x + b)`, multi-class
:math:`\mathrm{softmax}(\Psi^\top S_\theta\mathbf x + \mathbf b)`.

Estimation (the paper's section 2.3 did not survive extraction; its abstract says the
covariance function is adjusted to the training data by maximum likelihood). lvgp maximizes
the joint log density of the training data under the generative model, jointly over
:math:`\theta = \{l, \sigma\}`, :math:`\Psi` and :math:`\mathbf b`:

.. math:: \max_{\theta, \Psi, \mathbf b}\ \sum_i \log p(y_i \mid S_\theta\mathbf x_i, \Psi, \mathbf b)
    + \sum_i \log \mathcal N(\mathbf x_i \mid 0, a^2(K_l + \sigma^2 I))
    - \frac{1}{2C}\|\Psi\|_F^2 - \frac{1}{2\cdot 10^2}\|\mathbf b\|^2,

the second term being section 2.1's model of the observed covariates (with an overall scale
:math:`a^2`, profiled out, which leaves :math:`S_\theta` unchanged; its sum runs over the documents with a
covariate: a training text without one, kept by ``on_empty="keep"``, has the biases alone as its logits and enters
the first term only). Without it
(``covariate_likelihood=False``: the label likelihood alone) the optimum drifts to
:math:`\sigma \to 0`, :math:`S_\theta \to I`: the eigenvalues of :math:`S_\theta` are
:math:`\lambda/(\lambda+\sigma^2) \le 1`, and un-shrunk features make every weight cheaper
under the penalty, so the label likelihood alone always prefers no smoothing (observed on
synthetic data). The weights are MAP under :math:`\Psi_{jc} \sim \mathcal N(0, C)` (scikit-learn's ``C`` convention) and a
weak prior on the bias -- the Pyro ``model``'s log joint, minimized in the rotated weights below
by L-BFGS (:func:`~lvgp.base.fitting.minimize`) on the (deterministic) loss; ``posterior="normal"``
fits a mean-field Gaussian ``AutoNormal`` posterior over :math:`\Psi, \mathbf b` by SVI instead,
with predictions averaged over it.
``C="auto"`` chooses ``C`` by stratified cross-validation of the logistic regression on
:math:`S_{\theta_0}\mathbf x` at the initial :math:`\theta_0` (a convex problem, scikit-learn's
``GridSearchCV`` on the project's folds, log-loss; with more covariates than documents the
features are first projected on their row space, which changes no prediction of an L2-penalized
model; the joint fit then starts from that solution), since a likelihood cannot choose its own penalty.

Cost. :math:`S_\theta` is never formed. The MAP fit (``posterior="map"``) uses one
eigendecomposition :math:`K_l = U\Lambda U^\top` per length-scale :math:`l`, after which every
:math:`\sigma` is cheap: in rotated weights :math:`\tilde\Psi = U^\top\Psi` (the Gaussian prior on
:math:`\Psi` is rotation invariant) the logits are :math:`(XU)\,\mathrm{diag}(\lambda/(\lambda+\sigma^2))\,\tilde\Psi`
and the covariate likelihood needs :math:`\sum_i\|(x_iU)\|^2_{(\Lambda+\sigma^2I)^{-1}}` and
:math:`\sum\log(\lambda+\sigma^2)`: the inner MAP over :math:`(\sigma, \Psi, \mathbf b)` costs
:math:`O(npC)` per evaluation, no factorization. The length-scale is searched in one dimension
(bounded Brent on :math:`\log l`, a handful of eigendecompositions): first for the covariate
likelihood alone (the starting :math:`\theta_0`), then around it for the joint objective. (A
Nystrom covariance would avoid the :math:`O(p^3)` eigendecompositions, but on 50-dimensional GloVe
vectors it reproduces :math:`S_\theta\mathbf x` with 38-63% relative error at 200-1,000 landmarks:
the spectrum of :math:`K_l` is too flat.) The Pyro ``model`` below states the same objective and
serves ``posterior="normal"`` (SVI).

New covariates at prediction time (words with an embedding that never occurred in training):
with the enlarged covariance :math:`K' = \begin{pmatrix}K & B\\ B^\top & D\end{pmatrix}`
(:math:`r` new words) and no fitted weight for them (:math:`\Psi' = [\Psi; 0]`, the prior mean),
the block inverse gives

.. math:: S'\Psi' = \Psi' - \sigma^2 \begin{pmatrix} A + G\Sigma^{-1}B^\top A \\ -\Sigma^{-1}B^\top A\end{pmatrix},
    \quad A = (K+\sigma^2I)^{-1}\Psi,\ G = (K+\sigma^2I)^{-1}B,\ \Sigma = D + \sigma^2I - B^\top G,

which reuses the training factorization: :math:`O(p^2 r + r^3)`, linear in :math:`r` while
:math:`r \ll p`, instead of :math:`O((p+r)^3)`; a new word's effective weight is what its
similarity to the training words implies.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pyro
import pyro.distributions as dist
import scipy.optimize
import scipy.sparse as sp
import torch
from pyro.infer import Trace_ELBO
from pyro.infer.autoguide import AutoNormal
from pyro.nn import PyroModule
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import normalize
from sklearn.utils.validation import check_is_fitted
from torch import Tensor

from .._random import NUMERICS_SEED, Streams, seeded_torch, torch_generator
from ..base.constraints import RUNTIME, Boolean, Embeddings, Instance, Integer, Options, Real, check_params
from ..base.device import check_device, state_to_cpu, to_host
from ..base.embeddings import ppmi_svd_embeddings
from ..base.fit_options import LBFGS, Adam, FitOptions, FitOptionsArgument, FitOptionsMixin
from ..base.fitting import fit_stochastic, minimize
from ..base.novelty import ProbabilityNoveltyMixin
from ..base.numerics import CovarianceError
from ..base.persistence import classes_from_plain, classes_to_plain
from ..base.pyro import pyro_param, svi_step
from ..base.splits import stratified_folds
from ..base.targets import check_labels
from ..bow.padded import _rows_text
from ..bow.vocabulary import Vocabulary
from ..kernels.latent_distribution import rbf_gram
from ..models.mixins import SavedParamsMixin
from ..warnings import EmptyDocumentsWarning, UnseenWordsWarning, warn

__all__ = [
    "GPEmbeddingLogisticRegression",
    "CovariateSmoother",
    "rbf_covariance",
    "smoothing_matrix",
    "smoothed_weights",
    "extended_smoothed_weights",
]


def rbf_covariance(a: Tensor, b: Tensor, lengthscale: Tensor) -> Tensor:
    """K_l between embeddings ``a`` (``p x h``) and ``b`` (``r x h``): ``p x r``; the LDK's
    :func:`~lvgp.kernels.latent_distribution.rbf_gram` on inputs scaled by the lengthscale
    (tests/test_library_references.py checks it against gpytorch's ``RBFKernel``)."""
    return rbf_gram(a / lengthscale, b / lengthscale, torch.ones((), dtype=a.dtype))


def heldout_log_likelihood(estimator, X, y) -> float:
    """Summed log-probability of the held-out labels (a ``GridSearchCV`` scorer). A class absent
    from the fold's training part (rare classes stay in training, so a held-out document's
    class can be missing there) gets probability 1e-12 instead of making the score undefined:
    scikit-learn's ``neg_log_loss`` raises on such a fold, and ``GridSearchCV`` then scores
    every C as NaN and picks the first, i.e. the smallest."""
    y = np.asarray(y)
    proba = np.full(len(y), 1e-12)
    known = np.isin(y, estimator.classes_)
    columns = np.searchsorted(estimator.classes_, y[known])
    proba[known] = estimator.predict_proba(X[known])[np.arange(known.sum()), columns]
    return float(np.log(np.clip(proba, 1e-12, 1)).sum())


def _cholesky(matrix: Tensor, what: str) -> Tensor:
    chol, info = torch.linalg.cholesky_ex(matrix)
    if int(info) != 0:
        raise CovarianceError(
            f"Cholesky factorization of {what} failed (leading minor {int(info)} not positive); "
            "the noise sigma is too small for these embeddings: raise min_noise"
        )
    return chol


def smoothing_matrix(embeddings: Tensor, lengthscale: Tensor, noise: Tensor) -> Tensor:
    """S_theta = K_l (K_l + sigma^2 I)^-1 (paper eq. 3), ``p x p``; for tests and inspection
    (the model itself never forms it)."""
    k = rbf_covariance(embeddings, embeddings, lengthscale)
    eye = torch.eye(len(k), dtype=k.dtype, device=k.device)
    chol = _cholesky(k + noise**2 * eye, "K_l + sigma^2 I")
    return torch.cholesky_solve(k, chol).mT  # (K+s I)^-1 K = K (K+s I)^-1 transposed; both symmetric products


#: the draws of ``predict_proba`` (posterior="normal") are taken in chunks of about this many weights or
#: logits (32 MiB in float64)
_DRAW_CHUNK_ELEMENTS = 2**22


def smoothed_weights(embeddings: Tensor, lengthscale: Tensor, noise: Tensor, psi: Tensor) -> tuple[Tensor, Tensor]:
    """S_theta Psi (``p x C``) = Psi - sigma^2 (K_l + sigma^2 I)^-1 Psi, and the Cholesky factor
    of K_l + sigma^2 I (differentiable in all arguments)."""
    k = rbf_covariance(embeddings, embeddings, lengthscale)
    chol = _cholesky(k + noise**2 * torch.eye(len(k), dtype=k.dtype, device=k.device), "K_l + sigma^2 I")
    return psi - noise**2 * torch.cholesky_solve(psi, chol), chol


def extended_smoothed_weights(
    embeddings: Tensor,
    new_embeddings: Tensor,
    lengthscale: Tensor,
    noise: Tensor,
    psi: Tensor,
    chol: Tensor | Callable[[Tensor], Tensor],
) -> Tensor:
    """S' [Psi; 0] for the enlarged covariate set (training words, then ``r`` new words):
    ``(p + r) x C``, by the block inverse in the module docstring, reusing a factorization of
    K_l + sigma^2 I of the training words: ``chol``, its Cholesky factor, or a function solving
    with it. Cost O(p^2 r + r^3)."""
    s2 = noise**2
    solve = chol if callable(chol) else functools.partial(_cholesky_solve, chol)
    b = rbf_covariance(embeddings, new_embeddings, lengthscale)  # p x r
    d = rbf_covariance(new_embeddings, new_embeddings, lengthscale)  # r x r
    a = solve(psi)  # p x C
    g = solve(b)  # p x r
    schur = d + s2 * torch.eye(len(d), dtype=d.dtype, device=d.device) - b.mT @ g
    schur_chol = _cholesky(schur, "the Schur complement of the new covariates")
    t = torch.cholesky_solve(b.mT @ a, schur_chol)  # r x C: Sigma^-1 B^T A
    return torch.cat([psi - s2 * (a + g @ t), s2 * t], dim=0)


def _cholesky_solve(chol: Tensor, rhs: Tensor) -> Tensor:
    return torch.cholesky_solve(rhs, chol)


def _eigen_solve(u: Tensor, lam: Tensor, s2: Tensor, rhs: Tensor) -> Tensor:
    """(K_l + sigma^2 I)^-1 rhs through K_l = U diag(lam) U^T."""
    return u @ ((u.mT @ rhs) / (lam + s2).unsqueeze(-1))


def _solver_of(factors: dict[str, Tensor]) -> Callable[[Tensor], Tensor]:
    """The solve with K_l + sigma^2 I of the fitted model: by its Cholesky factor (``{"chol"}``) or
    its eigendecomposition (``{"u", "lam", "s2"}``); the factors are what ``save`` keeps."""
    if "chol" in factors:
        return functools.partial(_cholesky_solve, factors["chol"])
    return functools.partial(_eigen_solve, factors["u"], factors["lam"], factors["s2"])


#: tolerance of the length-scale searches on log l (5%: the objective is flat near its optimum)
_LOG_L_TOL = 0.05


class EigenCovariance:
    r""":math:`K_l + \sigma^2 I` for one length-scale through :math:`K_l = U\Lambda U^\top`, and the
    documents' covariates rotated, :math:`XU` (``n x p``): after the :math:`O(p^3)` decomposition,
    every quantity of the objective costs :math:`O(p)` or :math:`O(npC)` for any :math:`\sigma`."""

    def __init__(
        self,
        embeddings: Tensor,
        lengthscale: float,
        x: sp.csr_matrix,
        search: bool = False,
        x_device: Tensor | None = None,
    ):
        self.lengthscale = float(lengthscale)
        k = rbf_covariance(
            embeddings, embeddings, torch.tensor(self.lengthscale, dtype=embeddings.dtype, device=embeddings.device)
        )
        if search:
            # a length-scale search only ranks candidates: a float32 decomposition (2.2x faster at
            # p = 2,000; eigenvalue errors ~1e-3 against sigma^2 ~ 4) is enough, and the final
            # model is refit from a float64 one
            lam32, u32 = torch.linalg.eigh(k.float())
            lam, u = lam32.to(k.dtype), u32.to(k.dtype)
        else:
            lam, u = torch.linalg.eigh(k)
        self.lam, self.u = lam.clamp_min(0), u
        if u.device.type == "cpu":  # scipy's sparse product (the CPU path, as it always was)
            self.xu = torch.from_numpy(np.asarray(x @ u.numpy()))  # n x p
        else:  # on a device: torch's sparse product with the covariates moved there once (x_device)
            sparse = x_device if x_device is not None else _as_torch_sparse(x).to(u.device)
            self.xu = torch.sparse.mm(sparse, u)
        self.xu_sq = self.xu.pow(2).sum(0)  # p: the rotated covariates' energy per eigenvector
        self.n = x.shape[0]
        #: the documents with a covariate: an all-zero row (``on_empty="keep"``) observes none
        self.n_observed = int((np.asarray(abs(x).sum(1)).ravel() > 0).sum())

    def shrinkage(self, s2: Tensor) -> Tensor:
        """Eigenvalues of S_theta: lambda / (lambda + sigma^2)."""
        return self.lam / (self.lam + s2)

    def covariate_log_likelihood(self, s2: Tensor) -> Tensor:
        """log p(X | theta) with a^2 profiled out (as :meth:`CovariateSmoother.covariate_log_likelihood`), over
        the documents with a covariate."""
        n, p = self.n_observed, len(self.lam)
        quad = (self.xu_sq / (self.lam + s2)).sum()
        logdet = torch.log(self.lam + s2).sum()
        return -0.5 * n * p * (torch.log(2 * math.pi * quad / (n * p)) + 1) - 0.5 * n * logdet

    def solve(self, rhs: Tensor, s2: Tensor) -> Tensor:
        """(K_l + sigma^2 I)^-1 rhs."""
        return _eigen_solve(self.u, self.lam, s2, rhs)


class CovariateSmoother(PyroModule):
    """The Pyro model: ``theta = {l, sigma}`` as constrained parameters, ``Psi`` and ``b`` as
    latent sites with Gaussian priors (the estimator's MAP minimizes this model's negative log
    joint in rotated weights; ``posterior="normal"``: a Gaussian posterior by ``AutoNormal``).

    Args:
        embeddings: ``p x h`` covariate embeddings.
        n_outputs: 1 (binary, Bernoulli-logistic) or the number of classes (softmax).
        prior_variance: C, the prior variance of every weight.
        lengthscale, noise: initial l and sigma; ``min_noise`` bounds sigma from below.
    """

    def __init__(
        self,
        embeddings: Tensor,
        n_outputs: int,
        prior_variance: float,
        lengthscale: float,
        noise: float,
        min_noise: float = 1e-3,
    ):
        super().__init__()
        self.register_buffer("embeddings", embeddings)
        self.n_outputs = n_outputs
        self.prior_variance = prior_variance
        dtype = embeddings.dtype
        device = embeddings.device
        self.lengthscale = pyro_param(
            torch.tensor(lengthscale, dtype=dtype, device=device), constraint=dist.constraints.positive
        )
        self.noise = pyro_param(
            torch.tensor(noise, dtype=dtype, device=device), constraint=dist.constraints.greater_than(min_noise)
        )

    def logits(self, x: Tensor, psi: Tensor, bias: Tensor) -> tuple[Tensor, Tensor]:
        """``x``: ``n x p`` (sparse or dense) -> ``n x n_outputs`` logits (eq. 3 then the GLM),
        and the Cholesky factor of K_l + sigma^2 I."""
        weights, chol = smoothed_weights(self.embeddings, self.lengthscale, self.noise, psi)
        return (torch.sparse.mm(x, weights) if x.is_sparse else x @ weights) + bias, chol

    @staticmethod
    def covariate_log_likelihood(x: Tensor, chol: Tensor) -> Tensor:
        """log p(X | theta) with the scale a^2 profiled out: every document's covariate vector
        x_i ~ N(0, a^2 (K_l + sigma^2 I)) (section 2.1's generative model with an overall scale,
        which leaves S_theta unchanged); a^2 = sum_i x_i^T (K_l + sigma^2 I)^-1 x_i / (n p), over the n
        documents with a covariate (an all-zero row, kept by ``on_empty="keep"``, observes none)."""
        dense = x.to_dense() if x.is_sparse else x
        n, p = int(dense.abs().sum(-1).gt(0).sum()), x.shape[1]
        if n == 0:  # no document observes a covariate: an empty sum
            return chol.new_zeros(())
        dense_t = dense.mT
        quad = torch.linalg.solve_triangular(chol, dense_t, upper=False).pow(2).sum()
        logdet = 2 * torch.log(torch.diagonal(chol)).sum()
        scale = quad / (n * p)
        return -0.5 * n * p * (torch.log(2 * math.pi * scale) + 1) - 0.5 * n * logdet

    def model(self, x: Tensor, y: Tensor | None = None, covariate_likelihood: bool = True):
        p, dtype, device = self.embeddings.shape[0], self.embeddings.dtype, self.embeddings.device
        zeros = torch.zeros(p, self.n_outputs, dtype=dtype, device=device)
        psi = pyro.sample("psi", dist.Normal(zeros, math.sqrt(self.prior_variance)).to_event(2))
        bias = pyro.sample(
            "bias", dist.Normal(torch.zeros(self.n_outputs, dtype=dtype, device=device), 10.0).to_event(1)
        )
        logits, chol = self.logits(x, psi, bias)
        if covariate_likelihood:
            pyro.factor("covariates", self.covariate_log_likelihood(x, chol))
        with pyro.plate("docs", x.shape[0]):
            if self.n_outputs == 1:
                return pyro.sample("y", dist.Bernoulli(logits=logits.squeeze(-1)), obs=y)
            return pyro.sample("y", dist.Categorical(logits=logits), obs=y)


def _as_torch_sparse(x: sp.spmatrix) -> Tensor:
    coo = sp.coo_matrix(x)
    index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float64))
    # scipy's row and column indices are in range: torch's check (a warning while neither is asked for) is not needed
    return torch.sparse_coo_tensor(index, values, tuple(coo.shape), check_invariants=False).coalesce()


class GPEmbeddingLogisticRegression(
    ProbabilityNoveltyMixin, FitOptionsMixin, SavedParamsMixin, ClassifierMixin, BaseEstimator
):
    """Logistic regression on GP-smoothed bag-of-words vectors (Andrade et al. 2018), a
    scikit-learn classifier.

    Args:
        embeddings: ``"glove-6b-50d"`` (lvgp's loader), a :class:`~lvgp.datasets.WordEmbeddings`,
            or, for count-matrix input, a ``p x h`` array (row j = covariate j).
        missing_words: training words without an embedding: ``"drop"`` (removed, with a
            warning counting them) or ``"ppmi"`` (vectors from the truncated SVD of the PPMI
            co-occurrence of the training texts plus ``unlabeled_texts``, mapped into the
            embedding space by least squares on the words that have both).
        unlabeled_texts: extra texts for ``missing_words="ppmi"``.
        features: ``"tfidf"`` (L2-normalized, idf from training documents) or ``"counts"``.
        C: prior variance of the weights (inverse L2 strength, scikit-learn's convention), or
            ``"auto"``: chosen by stratified ``cv``-fold cross-validation (log likelihood) over
            ``Cs`` at the initial theta, the grid extended tenfold while the best is at an edge.
        lengthscale: the initial l (default: the median distance between embeddings).
        noise: the initial sigma.
        learn_theta: fit l and sigma jointly with the weights (else keep the initial values).
        covariate_likelihood: include log p(X | theta) in the objective (see the module
            docstring; ``False`` fits theta by the label likelihood alone).
        posterior: ``"map"`` (L-BFGS on the log joint) or ``"normal"`` (AutoNormal, SVI with Adam).
        new_words: at prediction time, words with an embedding but absent from training enter
            as new covariates (block update, see the module docstring); at most
            ``max_new_words`` of them per call (the most frequent; the rest are dropped with a
            warning).
        vocabulary: a :class:`~lvgp.Vocabulary` template for text input.
        max_features: keep the most frequent training words (the covariance is p x p; each
            objective evaluation factorizes it, so fitting theta costs tens of O(p^3/3)
            factorizations: the time grows with the cube of the words kept).
        optimizer: ``None`` or the posterior's: an :class:`~lvgp.LBFGS` for ``"map"`` (defaults
            ``max_iter=30`` iterations, ``tol=1e-10``), an :class:`~lvgp.Adam` for ``"normal"``
            (defaults ``max_iter=30`` SVI steps, ``lr=0.05``; its budget alone ends the fit, so it takes no
            ``tol`` or ``convergence_window``).
        predict_samples: posterior draws averaged by ``predict_proba`` (``posterior="normal"``).
        on_empty: a training text without a covariate -- no word of the vocabulary with an embedding, or blank --
            or a count-matrix row of zeros: ``"raise"`` (the default: a ``ValueError`` naming the rows) or
            ``"keep"`` (an ``EmptyDocumentsWarning`` counts and names them): its covariate vector is zero, so its
            logits are the biases alone, as a new text's without a known word are; it enters the labels'
            likelihood (it informs the biases) and not the covariates' (it observes no covariate, so
            the log p(X | theta) of the module docstring sums over the other documents).
        device: where the covariance, its eigendecompositions and the fits compute: ``"cpu"``
            (default), ``"cuda"``, ``"cuda:1"`` or a ``torch.device`` (:mod:`lvgp.base.device`); the
            vocabulary, the choice of ``C`` (scikit-learn) and the predictions' sparse products stay on
            the host, and predictions come back as numpy arrays.

    Fitted: ``classes_``, ``lengthscale_``, ``noise_``, ``C_``, ``words_`` (covariates),
    ``smoothed_weights_`` (``p x C``: S_theta Psi, the effective weight of each observed word),
    ``top_words(n)``, ``loss_curve_``, ``fit_seconds_``.
    """

    vocabulary_: Vocabulary | None
    _map_converged: bool

    def __init__(
        self,
        embeddings="glove-6b-50d",
        *,
        missing_words: str = "drop",
        unlabeled_texts=None,
        features: str = "tfidf",
        C="auto",
        Cs=(0.1, 1.0, 10.0, 100.0),
        cv: int = 3,
        lengthscale: float | None = None,
        noise: float = 1.0,
        min_noise: float = 1e-3,
        learn_theta: bool = True,
        covariate_likelihood: bool = True,
        posterior: str = "map",
        new_words: bool = True,
        max_new_words: int = 2000,
        vocabulary: Vocabulary | None = None,
        max_features: int | None = 2000,
        optimizer: LBFGS | Adam | None = None,
        predict_samples: int = 50,
        on_empty: str = "raise",
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
    ):
        self.embeddings = embeddings
        self.missing_words = missing_words
        self.unlabeled_texts = unlabeled_texts
        self.features = features
        self.C = C
        self.Cs = Cs
        self.cv = cv
        self.lengthscale = lengthscale
        self.noise = noise
        self.min_noise = min_noise
        self.learn_theta = learn_theta
        self.covariate_likelihood = covariate_likelihood
        self.posterior = posterior
        self.new_words = new_words
        self.max_new_words = max_new_words
        self.vocabulary = vocabulary
        self.max_features = max_features
        self.optimizer = optimizer
        self.predict_samples = predict_samples
        self.on_empty = on_empty
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # ------------------------------------------------------------------ inputs
    def _embedding_table(self):
        from ..datasets.loaders import WordEmbeddings, load_word_embeddings

        if isinstance(self.embeddings, str):
            return load_word_embeddings(self.embeddings)
        if isinstance(self.embeddings, WordEmbeddings):
            return self.embeddings
        return None

    def _check_inputs(self, X) -> tuple[bool, int]:
        """Whether ``X`` is a count matrix (else texts), and its number of documents."""
        if isinstance(X, str):
            raise TypeError("X must be a list of texts or a count matrix, not a single string")
        is_counts = sp.issparse(X) or isinstance(X, np.ndarray)
        if not is_counts:
            if torch.is_tensor(X):
                raise TypeError(
                    "X must be a list of texts or a count matrix, not a tensor (padded word ids have no words "
                    "for the embeddings)"
                )
            bad = [i for i, t in enumerate(X) if not isinstance(t, str)]
            if bad:
                raise TypeError(f"X: non-string documents at rows {bad[:10]} ({type(X[bad[0]]).__name__})")
            empty = [i for i, t in enumerate(X) if not t.strip()]
            if empty and self.on_empty == "raise":
                raise ValueError(
                    f"X: {len(empty)} empty documents (rows {_rows_text(empty)}); remove "
                    "them from X (and y), or pass on_empty='keep' to keep them with the biases alone as their logits"
                )
        return is_counts, X.shape[0] if is_counts else len(X)

    def _weights_of(self, counts: sp.csr_matrix, idf: np.ndarray | None = None) -> sp.csr_matrix:
        """Counts, or L2-normalized tf-idf with the training idf (extended by ``idf`` for the
        new words of a prediction: the idf of a word in no training document)."""
        x = sp.csr_matrix(counts, dtype=np.float64)
        if self.features == "counts":
            return x
        return sp.csr_matrix(normalize(x.multiply((self.idf_ if idf is None else idf)[None, :])))

    # ------------------------------------------------------------------ fit
    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        "optimizer": [None, FitOptionsArgument(LBFGS, Adam, name="optimizer")],
        "embeddings": [Embeddings(), Instance(np.ndarray, name="a p x h array (count-matrix input)")],
        "missing_words": [Options("drop", "ppmi")],
        "unlabeled_texts": [None, Instance(list, tuple, name="a list of texts")],
        "features": [Options("tfidf", "counts")],
        "C": [Options("auto"), Real(0, open_low=True)],
        "Cs": [Instance(list, tuple, np.ndarray, name="a sequence of positive numbers")],
        "cv": [Integer(2)],
        "lengthscale": [None, Real(0, open_low=True)],
        "noise": [Real(0, open_low=True)],
        "min_noise": [Real(0, open_low=True)],
        "learn_theta": [Boolean()],
        "covariate_likelihood": [Boolean()],
        "posterior": [Options("map", "normal")],
        "new_words": [Boolean()],
        "max_new_words": [Integer(0)],
        "vocabulary": [None, Instance(Vocabulary, name="an lvgp.Vocabulary")],
        "max_features": [None, Integer(1)],
        "predict_samples": [Integer(1)],
        "on_empty": [Options("raise", "keep")],
    }

    _optimizer_defaults = (LBFGS(max_iter=30, tol=1e-10), Adam(max_iter=30, lr=0.05))
    _optimizer_kind_set_by = "posterior"

    def _default_optimizer_kind(self) -> type[FitOptions]:
        return LBFGS if self.posterior == "map" else Adam

    def fit(self, X, y):
        check_params(self)
        if isinstance(self.optimizer, Adam) and (self.optimizer.tol, self.optimizer.convergence_window) != (None, None):
            raise ValueError(
                "optimizer: the normal posterior's SVI runs its budget (max_iter) to the end: it takes no tol or "
                "convergence_window"
            )
        is_counts, n = self._check_inputs(X)
        self.classes_, y_codes = check_labels(y, n)
        # random_state is read once, here: the fit's draws and the posterior draws of every later
        # predict_proba (which neither differ from call to call nor advance a Generator passed in)
        streams = Streams(self.random_state)
        seed, self._prediction_seed = streams.root, streams.seed("predict_proba")
        start = time.perf_counter()
        if is_counts:
            counts, emb = self._fit_counts_input(X)
        else:
            counts, emb = self._fit_text_input(list(X))
        empty = np.flatnonzero(np.asarray(counts.sum(1)).ravel() == 0).tolist()
        if len(empty) == counts.shape[0]:
            raise ValueError(
                f"X: none of the {counts.shape[0]} training documents has a covariate (a word with an embedding)"
            )
        if empty:
            listed = f"rows {_rows_text(empty)}"
            if self.on_empty == "raise":
                raise ValueError(
                    f"X: {len(empty)} training documents have no covariate left (no word with an embedding; {listed}); "
                    "remove them from X (and y), or pass on_empty='keep' to keep them with the biases alone as their "
                    "logits"
                )
            warn(
                f"X: {len(empty)} of {counts.shape[0]} training documents have no covariate (no word with an "
                f"embedding; {listed}); kept (on_empty='keep'): their logits are the biases alone, and they are out "
                "of the covariates' likelihood",
                EmptyDocumentsWarning,
                stacklevel=2,
            )
        self.idf_ = TfidfTransformer(smooth_idf=True).fit(counts).idf_  # ln((1 + n)/(1 + df)) + 1
        self._idf_unseen = math.log(1 + counts.shape[0]) + 1.0
        x = self._weights_of(counts)
        self.embeddings_ = emb
        self.device_ = device = check_device(self.device)
        e = torch.from_numpy(emb).to(device)
        self._x_device = None if device.type == "cpu" else _as_torch_sparse(x).to(device)
        if self.lengthscale is None:
            # the median heuristic on a fixed subsample: a statistic of the embeddings, not a random draw
            sub = e[torch.randperm(len(e), generator=torch_generator(NUMERICS_SEED))[:1000]]
            lengthscale = float(torch.cdist(sub, sub).median().clamp_min(1e-6))
        else:
            lengthscale = float(self.lengthscale)
        n_out = 1 if len(self.classes_) == 2 else len(self.classes_)
        noise = max(float(self.noise), self.min_noise * 1.01)
        if self.learn_theta and self.covariate_likelihood:  # start from the covariate ML (2 parameters)
            lengthscale, noise = self._covariate_ml(e, x, lengthscale, noise)
        cov = EigenCovariance(e, lengthscale, x, x_device=self._x_device)
        # C: fixed, or by cross-validation of the convex problem at the initial theta (rotated
        # features: the penalty, hence the problem, is rotation invariant)
        z0 = to_host(cov.xu * cov.shrinkage(torch.tensor(noise**2, dtype=e.dtype, device=device)))
        self.C_ = self._choose_C(z0, y_codes) if self.C == "auto" else float(self.C)
        init = LogisticRegression(C=self.C_, max_iter=2000).fit(z0, y_codes)
        coef = init.coef_.T if n_out > 1 else init.coef_.T[:, :1]
        psi0 = cov.u @ torch.from_numpy(np.ascontiguousarray(coef)).to(device)  # back from the rotated features
        bias0 = torch.from_numpy(np.atleast_1d(init.intercept_)[:n_out].copy()).to(device)
        targets = torch.from_numpy(y_codes.astype(np.float64 if n_out == 1 else np.int64)).to(device)
        if self.posterior == "map":
            psi, bias, noise, final = self._fit_map(e, x, cov, targets, n_out, psi0, bias0, noise)
            lengthscale = final.lengthscale
            self.model_ = CovariateSmoother(e, n_out, self.C_, lengthscale, noise, self.min_noise)
            self._psi, self.bias_ = psi, bias
            s2 = torch.tensor(noise**2, dtype=e.dtype, device=device)
            self.smoothed_weights_ = final.u @ (final.shrinkage(s2).unsqueeze(-1) * (final.u.mT @ psi))
            self._solver_factors = {"u": final.u, "lam": final.lam, "s2": s2}
            self._solver = _solver_of(self._solver_factors)
        else:
            # module-local parameters; pyro's sampling draws from torch's global generator: seeded
            # inside a forked scope, the caller's random stream is left as it was
            with pyro.settings.context(module_local_params=True), seeded_torch(seed):
                self.model_ = CovariateSmoother(e, n_out, self.C_, lengthscale, noise, self.min_noise)
                self._fit_pyro(_as_torch_sparse(x).to(device), targets, {"psi": psi0, "bias": bias0})
        self.lengthscale_ = float(self.model_.lengthscale.detach())
        self.noise_ = float(self.model_.noise.detach())
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _fit_text_input(self, texts: list[str]):
        template = self.vocabulary or Vocabulary(min_df=1)
        vocab = Vocabulary(
            **{k: getattr(template, k) for k in ("min_df", "max_df", "stop_words", "min_token_len", "lowercase")},
            max_features=self.max_features,
        ).fit(texts)
        table = self._embedding_table()
        if table is None:
            raise TypeError("for text input, embeddings must be a name such as 'glove-6b-50d' or a WordEmbeddings")
        words = vocab.words
        vectors, found = table.lookup(words)
        vectors = vectors.astype(np.float64)
        counts = vocab.counts(texts)
        if not found.all():
            missing = [w for w, f in zip(words, found) if not f]
            tokens = int(np.asarray(counts[:, ~found].sum()))
            if self.missing_words == "drop":
                warn(
                    f"{len(missing)} training words ({tokens} tokens) have no embedding and are dropped "
                    f"(e.g. {missing[:5]}); missing_words='ppmi' learns vectors for them",
                    UnseenWordsWarning,
                    stacklevel=3,
                )
                words = [w for w, f in zip(words, found) if f]
                vectors, counts = vectors[found], counts[:, found]
            else:
                vectors[~found] = self._ppmi_vectors(vocab, texts, vectors, found)
        self.words_ = list(words)
        self.vocabulary_ = Vocabulary.from_words(
            self.words_, **{k: getattr(vocab, k) for k in ("stop_words", "min_token_len", "lowercase")}
        )
        self._table = table
        return sp.csr_matrix(counts), vectors

    def _ppmi_vectors(self, vocab: Vocabulary, texts: list[str], vectors: np.ndarray, found: np.ndarray) -> np.ndarray:
        extra = list(self.unlabeled_texts or [])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnseenWordsWarning)
            counts = vocab.counts(texts + extra)
        learned = ppmi_svd_embeddings(counts, dim=min(100, max(2, len(vocab.words) // 4)), random_state=NUMERICS_SEED)
        if found.sum() < 2:
            raise ValueError("missing_words='ppmi' needs words with pretrained vectors to map the learned ones")
        # least-squares map from the PPMI space into the pretrained space, fitted on shared words
        design = np.hstack([learned[found], np.ones((found.sum(), 1))])
        mapping, *_ = np.linalg.lstsq(design, vectors[found], rcond=None)
        return np.hstack([learned[~found], np.ones(((~found).sum(), 1))]) @ mapping

    def _fit_counts_input(self, X):
        counts = sp.csr_matrix(X, dtype=np.float64)
        if counts.nnz and counts.data.min() < 0:
            raise ValueError("X: negative counts")
        emb = self.embeddings
        if isinstance(emb, str) or not hasattr(emb, "shape"):
            raise TypeError("for count-matrix input, embeddings must be a p x h array (row j = column j of X)")
        emb = np.asarray(emb, dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != counts.shape[1]:
            raise ValueError(
                f"embeddings must be {counts.shape[1]} x h for X with {counts.shape[1]} columns; got {emb.shape}"
            )
        self.words_ = [str(j) for j in range(counts.shape[1])]
        self.vocabulary_ = None
        self._table = None
        return counts, emb

    def _best_noise(self, cov: EigenCovariance, noise: float) -> tuple[float, float]:
        """sigma maximizing the covariate likelihood at ``cov``'s length-scale (bounded Brent on
        log(sigma - min_noise)), and the maximum."""

        def loss(t: float) -> float:
            s2 = torch.tensor((self.min_noise + math.exp(t)) ** 2, dtype=cov.lam.dtype, device=cov.lam.device)
            return -float(cov.covariate_log_likelihood(s2)) / cov.n

        start = math.log(max(noise - self.min_noise, 1e-6))
        res = scipy.optimize.minimize_scalar(loss, bounds=(start - 8, start + 8), method="bounded")
        return self.min_noise + math.exp(res.x), -res.fun

    def _covariate_ml(self, e: Tensor, x: sp.csr_matrix, lengthscale: float, noise: float) -> tuple[float, float]:
        """theta maximizing log p(X | theta) alone, the starting point of the joint fit: bounded
        Brent on log l (one eigendecomposition each), sigma optimal for each l."""
        cache: dict[float, tuple[float, float]] = {}

        def loss(log_l: float) -> float:
            cov = EigenCovariance(e, math.exp(log_l), x, search=True, x_device=self._x_device)
            cache[log_l] = self._best_noise(cov, noise)
            return -cache[log_l][1]

        center = math.log(lengthscale)
        res = scipy.optimize.minimize_scalar(
            loss, bounds=(center - 1.5, center + 1.5), method="bounded", options={"xatol": _LOG_L_TOL, "maxiter": 12}
        )
        return math.exp(res.x), cache[res.x][0]

    def _negative_log_posterior(
        self, cov: EigenCovariance, y: Tensor, n_out: int, rotated: Tensor, bias: Tensor, sigma: Tensor
    ) -> Tensor:
        r"""The MAP objective per document at ``cov``'s length-scale, in rotated weights
        :math:`\tilde\Psi = U^\top\Psi`: :math:`-[\log p(\mathbf y\mid\Psi,\mathbf b,\theta) + \log
        p(X\mid\theta) - \|\Psi\|_F^2/2C - \|\mathbf b\|^2/2\cdot10^2] / n` (the module docstring's
        objective; the Pyro ``model``'s negative log joint up to constants)."""
        s2 = sigma**2
        logits = cov.xu @ (cov.shrinkage(s2).unsqueeze(-1) * rotated) + bias
        if n_out == 1:
            loglik = -torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y, reduction="sum")
        else:
            loglik = -torch.nn.functional.cross_entropy(logits, y, reduction="sum")
        if self.covariate_likelihood:
            loglik = loglik + cov.covariate_log_likelihood(s2)
        prior = rotated.pow(2).sum() / (2 * self.C_) + bias.pow(2).sum() / (2 * 100.0)
        return -(loglik - prior) / cov.n

    def _map_at(
        self, cov: EigenCovariance, y: Tensor, n_out: int, psi: Tensor, bias: Tensor, noise: float
    ) -> tuple[float, Tensor, Tensor, float, bool]:
        """The MAP over (sigma, Psi, b) at ``cov``'s length-scale, by L-BFGS from (``psi``, ``bias``,
        ``noise``): the negative log posterior per document, the optimum, and whether L-BFGS converged."""
        dtype = cov.lam.dtype
        rotated = (cov.u.mT @ psi).clone().requires_grad_(True)
        b = bias.clone().requires_grad_(True)
        raw = torch.tensor(
            math.log(max(noise - self.min_noise, 1e-6)),
            dtype=dtype,
            device=cov.lam.device,
            requires_grad=self.learn_theta,
        )
        params = [rotated, b] + ([raw] if self.learn_theta else [])

        def objective() -> Tensor:
            return self._negative_log_posterior(cov, y, n_out, rotated, b, self.min_noise + raw.exp())

        optimizer = self._optimizer_options()
        result = minimize(params, objective, max_iter=int(optimizer.max_iter), tol=float(optimizer.tol))
        self.loss_curve_.extend(result.loss_curve)
        with torch.no_grad():
            value = float(objective())
        return value, cov.u @ rotated.detach(), b.detach(), float(self.min_noise + raw.detach().exp()), result.converged

    def _fit_map(
        self,
        e: Tensor,
        x: sp.csr_matrix,
        cov: EigenCovariance,
        y: Tensor,
        n_out: int,
        psi: Tensor,
        bias: Tensor,
        noise: float,
    ) -> tuple[Tensor, Tensor, float, EigenCovariance]:
        """The joint MAP: inner L-BFGS over (sigma, Psi, b) at a length-scale (:meth:`_map_at`),
        bounded Brent on log l around the starting one (``learn_theta``). Returns Psi, b, sigma
        and the float64 decomposition at the chosen length-scale."""
        self.loss_curve_: list[float] = []
        best: dict[str, Any] = {"value": math.inf}
        stopped = []  # the length-scales whose inner run stopped at max_iter

        def at(log_l: float) -> float:
            same = abs(math.log(cov.lengthscale) - log_l) < 1e-12
            c = cov if same else EigenCovariance(e, math.exp(log_l), x, search=True, x_device=self._x_device)
            start: dict[str, Any] = best if "psi" in best else {"psi": psi, "bias": bias, "noise": noise}
            value, p_, b_, s_, converged = self._map_at(c, y, n_out, start["psi"], start["bias"], start["noise"])
            stopped.extend([] if converged else [c.lengthscale])
            if value < best["value"]:
                best.update(
                    value=value, psi=p_, bias=b_, noise=s_, lengthscale=c.lengthscale, cov=c, converged=converged
                )
            return value

        center = math.log(cov.lengthscale)
        at(center)
        if self.learn_theta:
            scipy.optimize.minimize_scalar(
                at, bounds=(center - 0.5, center + 0.5), method="bounded", options={"xatol": _LOG_L_TOL, "maxiter": 8}
            )
            if abs(math.log(best["lengthscale"]) - center) > 1e-12:  # chosen on a float32 decomposition:
                exact = EigenCovariance(e, best["lengthscale"], x, x_device=self._x_device)  # refit from a float64 one
                _, best["psi"], best["bias"], best["noise"], best["converged"] = self._map_at(
                    exact, y, n_out, best["psi"], best["bias"], best["noise"]
                )
                best["cov"] = exact
        # the fitted model's own run, and the search's: a candidate stopped early scores worse than its optimum
        self._map_converged = bool(best["converged"])
        max_iter = self._optimizer_options().max_iter
        if not self._map_converged:
            warn(
                f"the MAP fit did not converge in max_iter={max_iter} L-BFGS iterations; increase the optimizer's "
                "max_iter",
                ConvergenceWarning,
                stacklevel=4,
            )
        elif stopped:
            warn(
                f"the length-scale search's MAP runs stopped at max_iter={max_iter} L-BFGS iterations at "
                f"{len(stopped)} of the length-scales it tried (the fitted one converged; a run stopped early scores "
                "its length-scale worse than its optimum would); increase the optimizer's max_iter",
                ConvergenceWarning,
                stacklevel=4,
            )
        return best["psi"], best["bias"], best["noise"], best["cov"]

    def _choose_C(self, z: np.ndarray, y: np.ndarray) -> float:
        """C maximizing the cross-validated log likelihood over ``Cs`` (scikit-learn's
        ``GridSearchCV`` on the project's stratified folds); when the best is the largest
        (smallest) value, the grid is extended by factors of 10 (at most 3 times). With more
        features than documents they are projected on their row space first (the same
        predictions for an L2-penalized model, fewer features)."""
        # classes with a single document stay in training; the folds are fixed (NUMERICS_SEED): C is then
        # a function of the data, as a grid search's over scikit-learn's unshuffled folds is
        folds = stratified_folds(y, self.cv, NUMERICS_SEED)
        if not folds:
            warn(
                f"too few documents per class to cross-validate C; using C={max(self.Cs)}", RuntimeWarning, stacklevel=3
            )
            return float(max(self.Cs))
        if z.shape[1] > z.shape[0]:
            u, sv, _ = np.linalg.svd(z, full_matrices=False)
            z = u * sv
        grid = sorted(float(c) for c in self.Cs)
        for _ in range(4):
            search = GridSearchCV(
                LogisticRegression(max_iter=2000),
                {"C": grid},
                cv=folds,
                scoring=heldout_log_likelihood,
                error_score="raise",  # a failing fold must not rank a C silently (a NaN score ranks first)
            ).fit(z, y)
            best = float(search.best_params_["C"])
            if best == grid[-1] and len(grid) < len(self.Cs) + 3:
                grid = grid + [best * 10]
            elif best == grid[0] and len(grid) < len(self.Cs) + 3:
                grid = [best / 10] + grid
            else:
                break
        return best

    def _fit_pyro(self, x: Tensor, y: Tensor, init_values: dict) -> None:
        """``posterior="normal"``: a Gaussian posterior over (Psi, b) (pyro's ``AutoNormal``) by SVI on
        the Monte Carlo ELBO with Adam, in the shared stochastic loop. (``posterior="map"`` fits in
        :meth:`_fit_map`, by :func:`~lvgp.base.fitting.minimize`.)"""
        from pyro.infer.autoguide.initialization import init_to_value

        model = self.model_
        if not self.learn_theta:
            model.lengthscale_unconstrained.requires_grad_(False)
            model.noise_unconstrained.requires_grad_(False)
        model_fn = functools.partial(model.model, covariate_likelihood=self.covariate_likelihood)
        self.guide_ = AutoNormal(model_fn, init_loc_fn=init_to_value(values=init_values), init_scale=0.01)
        self.guide_(x, y)  # create the guide's parameters
        elbo = Trace_ELBO()
        optimizer = self._optimizer_options()
        adam = pyro.optim.Adam({"lr": float(optimizer.lr)})  # type: ignore[attr-defined]  # generated at import
        result = fit_stochastic(
            lambda it: svi_step(elbo, adam, model_fn, self.guide_, x, y),
            max_iter=int(optimizer.max_iter),
            rule=None,  # the budget alone (the estimator has no tolerance)
            what="GP covariate embedding (SVI)",
            advice="lower lr",
            parameters=lambda: [*model.parameters(), *self.guide_.parameters()],
            unit="iterations",
            read_every=50,
            stacklevel=3,
            desc="GP covariate embedding",
            verbose=self.verbose,
        )
        self.loss_curve_ = list(result.loss_curve)
        with torch.no_grad():
            psi, bias = self._posterior_means()
            self.smoothed_weights_, chol = smoothed_weights(model.embeddings, model.lengthscale, model.noise, psi)
            self._solver_factors = {"chol": chol}
            self._solver = _solver_of(self._solver_factors)
            self._psi, self.bias_ = psi, bias

    def _posterior_means(self) -> tuple[Tensor, Tensor]:
        with pyro.settings.context(module_local_params=True):
            median = self.guide_.median()
        return median["psi"].detach(), median["bias"].detach()

    # ------------------------------------------------------------------ persistence
    _fitted_attribute = "smoothed_weights_"
    _saved_attributes = (
        "words_",
        "idf_",
        "_idf_unseen",
        "embeddings_",
        "C_",
        "lengthscale_",
        "noise_",
        "fit_seconds_",
        "loss_curve_",
        "_map_converged",
        "_prediction_seed",
    )

    def _fitted_payload(self) -> dict:
        """The covariates (words, vocabulary, idf, embeddings), the fitted weights and the
        factorization that extends them to new words, the Pyro model's state and, for the normal
        posterior, the guide's; a loaded classifier predicts bit-identically."""
        tensors = {"psi": self._psi, "bias": self.bias_, "smoothed_weights": self.smoothed_weights_}
        return {
            "classes": classes_to_plain(self.classes_),
            "vocabulary": None if self.vocabulary_ is None else self.vocabulary_.to_dict(),
            "attributes": self._attribute_values(),
            "tensors": {k: state_to_cpu(v.detach()) for k, v in tensors.items()},
            "solver": {k: state_to_cpu(v.detach()) for k, v in self._solver_factors.items()},
            "model": state_to_cpu(self.model_.state_dict()),
            "guide": state_to_cpu(self.guide_.state_dict()) if self.posterior == "normal" else None,
        }

    def _restore_fitted(self, payload: dict) -> None:
        self.classes_ = classes_from_plain(payload["classes"])
        plain = payload["vocabulary"]
        self.vocabulary_ = None if plain is None else Vocabulary.from_dict(plain)
        self._restore_attributes(payload["attributes"])
        self._table = None if self.vocabulary_ is None else self._embedding_table()
        self.device_ = device = check_device(self.device)
        self._x_device = None
        tensors = {k: v.to(device) for k, v in payload["tensors"].items()}
        self._psi, self.bias_, self.smoothed_weights_ = tensors["psi"], tensors["bias"], tensors["smoothed_weights"]
        self._solver_factors = {k: v.to(device) for k, v in payload["solver"].items()}
        self._solver = _solver_of(self._solver_factors)
        e = torch.from_numpy(self.embeddings_).to(device)
        n_out = self._psi.shape[1]
        with pyro.settings.context(module_local_params=True):
            self.model_ = CovariateSmoother(e, n_out, self.C_, self.lengthscale_, self.noise_, self.min_noise)
            self.model_.load_state_dict(payload["model"])
            if payload["guide"] is not None:
                from pyro.infer.autoguide.initialization import init_to_value

                model_fn = functools.partial(self.model_.model, covariate_likelihood=self.covariate_likelihood)
                self.guide_ = AutoNormal(
                    model_fn, init_loc_fn=init_to_value(values={"psi": self._psi, "bias": self.bias_})
                )
                # the guide's sites are set up by one run of the model: one empty document
                # stands for the data (the sites' shapes do not depend on it)
                x = torch.zeros(1, len(e), dtype=e.dtype, device=device).to_sparse()
                y = torch.zeros(1, dtype=torch.float64 if n_out == 1 else torch.int64, device=device)
                with seeded_torch(NUMERICS_SEED):
                    self.guide_(x, y)
                self.guide_.load_state_dict(payload["guide"])

    # ------------------------------------------------------------------ predict
    def _transform(self, X) -> tuple[sp.csr_matrix, Tensor | None]:
        """Document weights over the covariates (training words, then the new words of this
        call) and the new words' embeddings (``None`` when there are none)."""
        if self.vocabulary_ is None:  # count-matrix input
            counts = sp.csr_matrix(X, dtype=np.float64)
            if counts.shape[1] != len(self.words_):
                raise ValueError(f"X has {counts.shape[1]} columns; the model was fitted on {len(self.words_)}")
            return self._weights_of(counts), None
        if isinstance(X, str):
            raise TypeError("X must be a list of texts, not a single string")
        texts = list(X)
        tokens = [self.vocabulary_.tokenize(t) for t in texts]
        known = set(self.words_)
        new_words: list[str] = []
        if self.new_words:
            freq: dict[str, int] = {}
            for doc in tokens:
                for w in doc:
                    if w not in known and w in self._table:
                        freq[w] = freq.get(w, 0) + 1
            ranked = sorted(freq, key=lambda w: (-freq[w], w))
            new_words = ranked[: self.max_new_words]
            if len(ranked) > len(new_words):
                warn(
                    f"{len(ranked) - len(new_words)} new words with an embedding beyond max_new_words="
                    f"{self.max_new_words} are dropped",
                    UnseenWordsWarning,
                    stacklevel=3,
                )
        index = {w: i for i, w in enumerate(self.words_ + new_words)}
        rows, cols, unknown = [], [], 0
        for i, doc in enumerate(tokens):
            for w in doc:
                j = index.get(w)
                if j is None:
                    unknown += 1
                else:
                    rows.append(i)
                    cols.append(j)
        if unknown:
            warn(
                f"{unknown} test tokens are neither training words nor words with an embedding; dropped",
                UnseenWordsWarning,
                stacklevel=3,
            )
        counts = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(texts), len(index)))
        counts.sum_duplicates()
        empty = np.flatnonzero(np.diff(counts.indptr) == 0)
        if len(empty):
            warn(
                f"{len(empty)} of {len(texts)} documents have no known word (rows {empty[:10].tolist()}); "
                "their logits are the biases alone",
                EmptyDocumentsWarning,
                stacklevel=3,
            )
        idf = np.concatenate([self.idf_, np.full(len(new_words), self._idf_unseen)])
        x = self._weights_of(counts, idf)
        if not new_words:
            return x, None
        vectors, _ = self._table.lookup(new_words)
        return x, torch.from_numpy(vectors.astype(np.float64)).to(self.device_)

    @staticmethod
    def _probabilities(logits: np.ndarray) -> np.ndarray:
        if logits.shape[1] == 1:
            p = expit(logits[:, 0])
            return np.stack([1 - p, p], axis=1)
        return softmax(logits, axis=1)

    def decision_function(self, X) -> np.ndarray:
        """Logits at the posterior mode (median): ``n`` (binary) or ``n x n_classes``."""
        check_is_fitted(self, "smoothed_weights_")
        x, new_vectors = self._transform(X)
        with torch.no_grad():
            weights = self.smoothed_weights_ if new_vectors is None else self._smoothed(self._psi, new_vectors)
        logits = np.asarray(x @ to_host(weights)) + to_host(self.bias_)
        return logits[:, 0] if logits.shape[1] == 1 else logits

    def predict_proba(self, X) -> np.ndarray:
        """``n x n_classes`` probabilities: at the MAP (``posterior="map"``) or averaged over
        ``predict_samples`` draws of the Gaussian posterior (``posterior="normal"``)."""
        check_is_fitted(self, "smoothed_weights_")
        if self.posterior == "map":
            logits = self.decision_function(X)
            return self._probabilities(logits[:, None] if logits.ndim == 1 else logits)
        x, new_vectors = self._transform(X)
        with torch.no_grad(), pyro.settings.context(module_local_params=True):
            (psi_loc, psi_scale), (bias_loc, bias_scale) = (
                tuple(t.detach() for t in self.guide_._get_loc_and_scale(name)) for name in ("psi", "bias")
            )
        p, c = psi_loc.shape
        # Psi ~ N(loc, diag scale^2) and b likewise (AutoNormal; both sites are real-valued, so a draw is
        # loc + scale * eps). S' [Psi; 0] is linear in Psi: a chunk of k draws is one solve with k * C
        # right-hand sides, not k factorizations of K_l + sigma^2 I
        rows_of_weights = p + (0 if new_vectors is None else len(new_vectors))
        k = max(1, min(self.predict_samples, _DRAW_CHUNK_ELEMENTS // (c * max(rows_of_weights, x.shape[0]))))
        total = np.zeros((x.shape[0], max(c, 2)))
        # the posterior draws are seeded by the seed drawn at fit: every call gives the same
        # probabilities, and neither random_state nor the caller's torch stream moves
        with torch.no_grad(), seeded_torch(self._prediction_seed):
            for start in range(0, self.predict_samples, k):
                draws = min(k, self.predict_samples - start)
                psi = psi_loc + psi_scale * torch.randn((draws, p, c), dtype=psi_loc.dtype, device=psi_loc.device)
                bias = bias_loc + bias_scale * torch.randn((draws, c), dtype=bias_loc.dtype, device=bias_loc.device)
                weights = self._smoothed(psi.permute(1, 0, 2).reshape(p, draws * c), new_vectors)
                logits = np.asarray(x @ to_host(weights)).reshape(x.shape[0], draws, c) + to_host(bias)
                if c == 1:
                    positive = expit(logits[..., 0]).sum(1)
                    total += np.stack([draws - positive, positive], axis=1)
                else:
                    total += softmax(logits, axis=2).sum(1)
        return total / self.predict_samples

    def _smoothed(self, psi: Tensor, new_vectors: Tensor | None) -> Tensor:
        """S_theta Psi (``p x m``: the mode's C columns, or posterior draws stacked as k C columns) with
        the fitted factorization of K_l + sigma^2 I; with new covariates, S' [Psi; 0] (``(p + r) x m``)."""
        m = self.model_
        if new_vectors is None:
            return psi - m.noise**2 * self._solver(psi)
        return extended_smoothed_weights(m.embeddings, new_vectors, m.lengthscale, m.noise, psi, self._solver)

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def top_words(self, n: int = 10) -> dict:
        """Per class, the ``n`` words with the largest effective weight S_theta Psi (for a
        binary problem: the positive class, and the negative one by the most negative)."""
        check_is_fitted(self, "smoothed_weights_")
        w = to_host(self.smoothed_weights_)
        if w.shape[1] == 1:
            cols = {self.classes_[1]: w[:, 0], self.classes_[0]: -w[:, 0]}
        else:
            cols = {c: w[:, k] for k, c in enumerate(self.classes_)}
        return {c: [(self.words_[j], float(v[j])) for j in np.argsort(-v)[:n]] for c, v in cols.items()}
