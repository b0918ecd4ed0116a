r"""Supervised LDA with a Gaussian response by variational EM, faithful to Blei & McAuliffe
(NIPS 2007), section 2 -- the reference implementation; also unsupervised LDA (the same
code with the response switched off).

Model: :math:`\theta_d \sim \mathrm{Dir}(\alpha)`, :math:`z_{dn} \mid \theta_d \sim \mathrm{Mult}(\theta_d)`,
:math:`w_{dn} \mid z_{dn} \sim \mathrm{Mult}(\beta_{z_{dn}})`,
:math:`y_d \mid z_{d,1:N} \sim \mathcal N(\eta^\top \bar z_d, \sigma^2)`, :math:`\bar z_d = \frac1N\sum_n z_{dn}`.

E-step, per document, block coordinate ascent on the ELBO (eq. 2) under
:math:`q(\theta)q(z) = \mathrm{Dir}(\gamma)\prod_n\mathrm{Cat}(\phi_n)`:

* eq. 6: :math:`\gamma \leftarrow \alpha + \sum_n \phi_n`
* eq. 7: :math:`\phi_j \propto \exp\{\Psi(\gamma) - \Psi(\textstyle\sum\gamma) + \log\beta_{:,w_j} + \frac{y}{N\sigma^2}\eta - \frac{2(\eta^\top\phi_{-j})\eta + \eta\circ\eta}{2N^2\sigma^2}\}`,
  word by word (each update sees the current :math:`\phi_{-j} = \sum_{n\ne j}\phi_n`);
  documents are processed in parallel (vectorised), words in sequence.

M-step (corpus level):

* eq. 8: :math:`\beta_{kw} \propto \sum_{d,n} 1(w_{dn}=w)\phi_{dnk}`
* eq. 10: :math:`\eta \leftarrow \mathbb E[A^\top A]^{-1}\mathbb E[A]^\top y`, with :math:`\mathbb E[\bar Z\bar Z^\top]` of eq. 5
* eq. 11: :math:`\sigma^2 \leftarrow \frac1D\{y^\top y - y^\top\mathbb E[A]\eta\}`

:math:`\alpha` is fixed to :math:`1/K` (as in the paper) unless ``learn_alpha`` (Newton updates of
a symmetric :math:`\alpha`, Blei et al. 2003, appendix A.4.2). Prediction (eqs. 12-13):
:math:`\eta^\top\bar\phi` with :math:`\phi` from the E-step *without* the response terms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.special import digamma, gammaln, polygamma

from ..._random import numpy_generator
from ...base.fitting import SuccessiveChangeStopping, fit_stochastic
from ...warnings import EmptyDocumentsWarning, UnseenWordsWarning, warn

PAD = -1


@dataclass
class EMResult:
    elbo: list[float] = field(default_factory=list)  #: corpus ELBO after every EM iteration
    n_iter: int = 0
    converged: bool = False


def _as_docs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded ids -> (ids with padding as 0, mask, lengths)."""
    x = np.asarray(x)
    mask = x != PAD
    lengths = mask.sum(1)
    if np.any(lengths == 0):
        rows = np.flatnonzero(lengths == 0)
        raise ValueError(f"documents must not be empty; empty rows {rows[:10].tolist()}")
    return np.where(mask, x, 0), mask, lengths


def expected_zbar_outer(phi: np.ndarray, mask: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    r"""Eq. 5 per document: :math:`\mathbb E[\bar Z\bar Z^\top] = \frac1{N^2}\big((\sum\phi)(\sum\phi)^\top - \sum_n\phi_n\phi_n^\top + \mathrm{diag}\sum\phi\big)`.
    ``phi``: D x L x K (zero on padding). Returns D x K x K."""
    s = phi.sum(1)
    outer = s[:, :, None] * s[:, None, :] - np.einsum("dnk,dnl->dkl", phi, phi)
    outer[:, np.arange(phi.shape[2]), np.arange(phi.shape[2])] += s
    return outer / (lengths.astype(float) ** 2)[:, None, None]


class SupervisedLDAEM:
    """Variational EM for sLDA with a Gaussian response (``supervised=True``) or LDA.

    Args:
        n_topics: K.
        alpha: Dirichlet parameter (scalar, symmetric); default ``1/K``.
        learn_alpha: Newton updates of the symmetric alpha in the M-step.
        max_iter, tol: EM stops when the relative change of the corpus ELBO is below ``tol``
            (the paper: 1e-4, "0.01%").
        e_max_iter, e_tol: per-document coordinate ascent stops when every document's
            ELBO changes by less than ``e_tol`` relative (the paper: 1e-4).
        init: ``"paper"`` (uniform topics, eta on a grid in [-1, 1], sigma^2 the response
            variance) or ``"random"`` (topics perturbed at random; needed for unsupervised LDA).
        eta_scale: the initial eta is the grid on ``[-eta_scale, eta_scale]`` (the paper: 1, in
            the response's units; the fit depends on it, see ``SLDARegressor(em_eta_scale=...)``).
        random_state: the random initialization's seed (an int: ``numpy.random.default_rng`` of it, the
            one stream an estimator's ``Streams`` hands it), a numpy ``Generator`` (drawn from), or
            ``None`` (fresh entropy).
    """

    def __init__(
        self,
        n_topics: int,
        alpha: float | None = None,
        learn_alpha: bool = False,
        supervised: bool = True,
        max_iter: int = 100,
        tol: float = 1e-4,
        e_max_iter: int = 50,
        e_tol: float = 1e-4,
        init: str = "paper",
        eta_scale: float = 1.0,
        random_state: int | None = None,
    ):
        if n_topics < 2:
            raise ValueError(f"n_topics must be >= 2; got {n_topics}")
        self.K = n_topics
        self.alpha = 1.0 / n_topics if alpha is None else float(alpha)
        self.learn_alpha = learn_alpha
        self.supervised = supervised
        self.max_iter, self.tol = max_iter, tol
        self.e_max_iter, self.e_tol = e_max_iter, e_tol
        self.init = init
        if not (math.isfinite(eta_scale) and eta_scale > 0):
            raise ValueError(f"eta_scale must be a finite number > 0; got {eta_scale!r}")
        self.eta_scale = float(eta_scale)
        self.random_state = random_state

    # ------------------------------------------------------------------ E-step
    def doc_elbo(
        self,
        ids: np.ndarray,
        mask: np.ndarray,
        lengths: np.ndarray,
        phi: np.ndarray,
        gamma: np.ndarray,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        """The per-document ELBO of eq. 2 (without the response term when ``y`` is None)."""
        K, alpha = self.K, self.alpha
        dig = digamma(gamma) - digamma(gamma.sum(1, keepdims=True))  # E[log theta]
        log_beta = self.log_beta_[:, ids].transpose(1, 2, 0)  # D x L x K
        safe_phi = np.where(phi > 0, phi, 1.0)
        elbo = (
            gammaln(K * alpha)
            - K * gammaln(alpha)
            + ((alpha - 1) * dig).sum(1)  # E log p(theta)
            + np.einsum("dnk,dk->d", phi, dig)  # E log p(z | theta)
            + np.einsum("dnk,dnk->d", phi, log_beta * mask[:, :, None])  # E log p(w | z)
            - gammaln(gamma.sum(1))
            + gammaln(gamma).sum(1)
            - ((gamma - 1) * dig).sum(1)  # H(q(theta))
            - np.einsum("dnk,dnk->d", phi, np.log(safe_phi))  # H(q(z))
        )
        if y is not None:
            eta = self.eta_
            total = phi.sum(1)
            ez = total / lengths[:, None]
            # eta^T E[zbar zbar^T] eta via eq. 5 without forming K x K matrices
            quad = ((total @ eta) ** 2 - ((phi @ eta) ** 2).sum(1) + total @ (eta * eta)) / lengths**2
            elbo += -0.5 * np.log(2 * np.pi * self.sigma2_) - (y**2 - 2 * y * (ez @ self.eta_) + quad) / (
                2 * self.sigma2_
            )
        return elbo

    def e_step(
        self, x: np.ndarray, y: np.ndarray | None = None, init: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Coordinate ascent (eqs. 6-7) for every document; the response terms only when ``y``
        is given. ``init``: (phi, gamma) to start from (EM warm-starts each E-step from the
        previous one, so the ELBO can only increase). Returns phi (D x L x K, zero on
        padding) and gamma (D x K)."""
        ids, mask, lengths = _as_docs(x)
        D, L = ids.shape
        K = self.K
        log_beta = self.log_beta_[:, ids].transpose(1, 2, 0)  # D x L x K
        if init is None:
            phi = np.repeat(np.where(mask, 1.0 / K, 0.0)[:, :, None], K, axis=2)
            gamma = self.alpha + lengths[:, None] / K * np.ones(K)
        else:
            phi, gamma = init[0].copy(), self.alpha + init[0].sum(1)
        n = lengths.astype(float)[:, None]
        supervised = y is not None
        if y is not None:
            eta, s2 = self.eta_, self.sigma2_
            lin = (y[:, None] / (n * s2)) * eta[None, :]  # (y / N sigma^2) eta
            quad_scale = 1.0 / (2 * n**2 * s2)
        old = self.doc_elbo(ids, mask, lengths, phi, gamma, y)
        active = np.ones(D, dtype=bool)
        for _ in range(self.e_max_iter):
            dig = digamma(gamma) - digamma(gamma.sum(1, keepdims=True))
            total = phi.sum(1)  # D x K
            for j in range(L):
                rows = mask[:, j] & active
                if not rows.any():
                    continue
                logits = dig[rows] + log_beta[rows, j]
                if supervised:
                    phi_rest = total[rows] - phi[rows, j]
                    logits = logits + lin[rows] - quad_scale[rows] * (2 * (phi_rest @ eta)[:, None] * eta + eta * eta)
                logits -= logits.max(1, keepdims=True)
                new = np.exp(logits)
                new /= new.sum(1, keepdims=True)
                total[rows] += new - phi[rows, j]
                phi[rows, j] = new
            gamma = self.alpha + phi.sum(1)  # eq. 6
            elbo = self.doc_elbo(ids, mask, lengths, phi, gamma, y)
            change = np.abs(elbo - old) / np.maximum(np.abs(old), 1e-12)
            active &= change >= self.e_tol
            old = elbo
            if not active.any():
                break
        return phi, gamma

    # ------------------------------------------------------------------ M-step and fitting
    def _m_step(
        self, ids: np.ndarray, mask: np.ndarray, lengths: np.ndarray, phi: np.ndarray, y: np.ndarray | None
    ) -> None:
        counts = np.zeros((self.K, self.vocab_size_))
        np.add.at(counts.T, ids[mask], phi[mask])  # eq. 8: expected counts of topic-word
        # a floor of 1e-100 keeps log beta finite where phi underflowed to 0 (changes nothing else)
        counts += 1e-100
        self.log_beta_ = np.log(counts / counts.sum(1, keepdims=True))
        if self.supervised:
            assert y is not None
            ea = phi.sum(1) / lengths[:, None]  # E[A], rows phi-bar_d
            eata = expected_zbar_outer(phi, mask, lengths).sum(0)  # E[A^T A]
            self.eta_ = np.linalg.solve(eata, ea.T @ y)  # eq. 10
            self.sigma2_ = max(float((y @ y - y @ ea @ self.eta_) / len(y)), 1e-12)  # eq. 11
        if self.learn_alpha:
            self._update_alpha(phi, lengths)

    def _update_alpha(self, phi: np.ndarray, lengths: np.ndarray, iters: int = 20) -> None:
        """Newton's method on a symmetric alpha (Blei et al. 2003, A.4.2), in log space."""
        gamma = self.alpha + phi.sum(1)
        ss = (digamma(gamma) - digamma(gamma.sum(1, keepdims=True))).sum()
        D, K = gamma.shape
        log_a = math.log(self.alpha)
        for _ in range(iters):
            a = math.exp(log_a)
            grad = D * K * (digamma(K * a) - digamma(a)) + ss
            hess = D * K * (K * polygamma(1, K * a) - polygamma(1, a))
            step = grad / (hess * a + grad)
            log_a -= step
            if abs(step) < 1e-8:
                break
        self.alpha = float(np.clip(math.exp(log_a), 1e-6, 1e3))

    def _initialize(self, ids: np.ndarray, mask: np.ndarray, y: np.ndarray | None) -> None:
        rng = numpy_generator(self.random_state)
        K, V = self.K, self.vocab_size_
        if self.init == "paper":
            self.log_beta_ = np.full((K, V), -math.log(V))
        elif self.init == "random":
            beta = rng.gamma(100.0, 0.01, size=(K, V))
            self.log_beta_ = np.log(beta / beta.sum(1, keepdims=True))
        else:
            raise ValueError(f"init must be 'paper' or 'random'; got {self.init!r}")
        if self.supervised:
            # a grid on [-eta_scale, eta_scale]
            self.eta_ = self.eta_scale * np.linspace(-1, 1, K) if K > 1 else np.zeros(1)
            assert y is not None
            self.sigma2_ = float(np.var(y)) if np.var(y) > 0 else 1.0

    def fit(self, x: np.ndarray, y: np.ndarray | None = None, vocab_size: int | None = None) -> SupervisedLDAEM:
        """Fit on padded word ids ``x`` (D x L) and responses ``y`` (D,)."""
        ids, mask, lengths = _as_docs(x)
        if self.supervised:
            if y is None:
                raise ValueError("supervised sLDA needs y")
            y = np.asarray(y, dtype=float)
            if y.shape != (ids.shape[0],) or not np.all(np.isfinite(y)):
                raise ValueError("y must be finite real responses, one per document")
        else:
            y = None
        self.vocab_size_ = int(vocab_size or (ids[mask].max() + 1))
        self.seen_words_ = np.bincount(ids[mask], minlength=self.vocab_size_) > 0
        self._initialize(ids, mask, y)
        self.result_ = EMResult()
        state: list[Any] = [None]  # the last E-step's (phi, gamma): the next one starts from it

        def iteration(it: int) -> torch.Tensor:
            """One EM iteration; its loss, minus the corpus ELBO after the M-step."""
            phi, gamma = state[0] = self.e_step(x, y, init=state[0])
            self._m_step(ids, mask, lengths, phi, y)
            elbo = float(self.doc_elbo(ids, mask, lengths, phi, self.alpha + phi.sum(1), y).sum())
            return torch.tensor(-elbo, dtype=torch.float64)

        # the one loop of lvgp's iterative fits: its Ctrl-C (the fit ends after the last whole
        # iteration), its progress bar; the estimators warn when the budget ended it
        result = fit_stochastic(
            iteration,
            max_iter=int(self.max_iter),
            rule=SuccessiveChangeStopping(self.tol),
            what="the EM's corpus ELBO",
            unit="EM iterations",
            read_every=1,
            warn=False,
            desc="EM",
        )
        self.result_.elbo = [-v for v in result.loss_curve]
        self.result_.n_iter, self.result_.converged = result.n_iter, result.converged
        return self

    @classmethod
    def from_parameters(
        cls,
        log_beta: np.ndarray,
        alpha: float,
        eta: np.ndarray | None = None,
        seen_words: np.ndarray | None = None,
        **options: Any,
    ) -> SupervisedLDAEM:
        """An inference engine for fitted parameters (e.g. from the Pyro model): E-steps,
        ``transform``, held-out likelihood. ``eta`` may be ``C x K`` (categorical)."""
        K, V = log_beta.shape
        engine = cls(K, alpha=alpha, supervised=eta is not None, **options)
        engine.log_beta_ = np.asarray(log_beta, dtype=float)
        engine.vocab_size_ = V
        engine.seen_words_ = np.ones(V, dtype=bool) if seen_words is None else np.asarray(seen_words, dtype=bool)
        if eta is not None:
            engine.eta_ = np.asarray(eta, dtype=float)
        return engine

    # ------------------------------------------------------------------ persistence
    _SETTINGS = ("K", "alpha", "learn_alpha", "supervised", "max_iter", "tol", "e_max_iter", "e_tol", "init")

    def to_state(self) -> dict:
        """The fitted engine as plain values and tensors (``torch.load(weights_only=True)`` reads
        them): its settings, the topics, the seen words, the response's parameters and the EM's
        record; :meth:`from_state` inverts it."""
        import torch

        state: dict[str, Any] = {name: getattr(self, name) for name in self._SETTINGS}
        state["eta_scale"] = self.eta_scale
        state["log_beta"] = torch.from_numpy(np.array(self.log_beta_, dtype=np.float64))
        state["seen_words"] = torch.from_numpy(np.asarray(self.seen_words_, dtype=bool).copy())
        for name in ("eta_", "sigma2_"):
            if hasattr(self, name):
                value = getattr(self, name)
                state[name] = torch.from_numpy(np.array(value, dtype=np.float64)) if name == "eta_" else float(value)
        if hasattr(self, "result_"):
            state["result"] = {
                "elbo": list(self.result_.elbo),
                "n_iter": self.result_.n_iter,
                "converged": self.result_.converged,
            }
        return state

    @classmethod
    def from_state(cls, state: dict) -> SupervisedLDAEM:
        """The engine :meth:`to_state` wrote."""
        engine = cls(int(state["K"]), eta_scale=float(state["eta_scale"]))
        for name in cls._SETTINGS:
            setattr(engine, name, state[name])
        engine.log_beta_ = state["log_beta"].numpy()
        engine.vocab_size_ = engine.log_beta_.shape[1]
        engine.seen_words_ = state["seen_words"].numpy()
        if "eta_" in state:
            engine.eta_ = state["eta_"].numpy()
        if "sigma2_" in state:
            engine.sigma2_ = float(state["sigma2_"])
        if "result" in state:
            engine.result_ = EMResult(
                list(state["result"]["elbo"]), state["result"]["n_iter"], state["result"]["converged"]
            )
        return engine

    # ------------------------------------------------------------------ prediction
    def _known(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Held-out documents with words never seen in training dropped (counted in an
        UnseenWordsWarning), and a mask of the documents that keep at least one word."""
        x = np.asarray(x)
        valid = x != PAD
        unseen = valid & ~self.seen_words_[np.where(valid, np.clip(x, 0, self.vocab_size_ - 1), 0)]
        unseen |= valid & (x >= self.vocab_size_)
        if unseen.any():
            warn(
                f"dropped {int(unseen.sum())} tokens of words unseen in training, in {int(unseen.any(1).sum())} of "
                f"{len(x)} documents",
                UnseenWordsWarning,
                stacklevel=3,
            )
        x = np.where(unseen, PAD, x)
        return x, (x != PAD).any(1)

    def transform(self, x: np.ndarray) -> np.ndarray:
        """E_q[z-bar] (D x K) from the E-step without the response (eqs. 12-13). A document
        with no word seen in training gets the prior mean of z-bar, alpha / sum(alpha)."""
        x, nonempty = self._known(x)
        out = np.full((len(x), self.K), 1.0 / self.K)
        if nonempty.any():
            ids, mask, lengths = _as_docs(x[nonempty])
            phi, _ = self.e_step(x[nonempty], None)
            out[nonempty] = phi.sum(1) / lengths[:, None]
        return out

    def predict(self, x: np.ndarray) -> np.ndarray:
        r""":math:`\eta^\top\mathbb E_q[\bar Z]` (eq. 13)."""
        return self.transform(x) @ self.eta_

    def heldout_log_likelihood_per_word(self, x: np.ndarray) -> float:
        """The variational lower bound of log p(w) of held-out documents, per word (words
        unseen in training are left out, with a warning)."""
        x, nonempty = self._known(x)
        if not nonempty.any():
            raise ValueError("no held-out document has a word seen in training: the per-word likelihood is undefined")
        if not nonempty.all():
            warn(
                f"{int((~nonempty).sum())} of {len(x)} held-out documents have no word seen in training and are "
                "left out of the per-word likelihood",
                EmptyDocumentsWarning,
                stacklevel=3,
            )
        x = x[nonempty]
        ids, mask, lengths = _as_docs(x)
        phi, gamma = self.e_step(x, None)
        return float(self.doc_elbo(ids, mask, lengths, phi, gamma, None).sum() / lengths.sum())
