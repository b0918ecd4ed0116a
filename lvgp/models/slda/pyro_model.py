r"""Supervised LDA in Pyro (Blei & McAuliffe, NIPS 2007), every GLM response of section 2.3,
trained by stochastic variational inference on mini-batches of documents.

Generative model (per document :math:`d`): :math:`\theta_d \sim \mathrm{Dir}(\alpha)`,
:math:`z_{dn} \sim \mathrm{Mult}(\theta_d)`, :math:`w_{dn} \sim \mathrm{Mult}(\beta_{z_{dn}})`,
:math:`y_d \sim \mathrm{GLM}(\eta^\top\bar z_d)` with the canonical link: Gaussian
:math:`\mathcal N(\eta^\top\bar z, \sigma^2)`, Bernoulli :math:`\sigma(\eta^\top\bar z)`,
categorical :math:`\mathrm{softmax}(H\bar z)` (one row of :math:`H` per class), Poisson
:math:`\exp(\eta^\top\bar z)`. The topics :math:`\beta`, :math:`\eta` (:math:`H`) and
:math:`\sigma` are point estimates (maximum likelihood, as in the paper), :math:`\alpha`
is fixed to :math:`1/K` unless learned.

How the guide treats the per-document variables (and why):

* :math:`z` is **summed out** of the word likelihood exactly,
  :math:`p(w_{dn}\mid\theta_d) = \sum_k \theta_{dk}\beta_{k,w_{dn}}`. It cannot be
  enumerated jointly with the response (which couples all of a document's :math:`z_{dn}`
  through :math:`\bar z`), and a mean-field categorical :math:`q(z)` would need
  high-variance score-function gradients. Given :math:`\theta_d` and the words, the
  :math:`z_{dn}` are independent with :math:`r_{dnk} \propto \theta_{dk}\beta_{k,w_{dn}}`, so
  :math:`\eta^\top\bar z` has exact conditional mean :math:`m_d = \eta^\top\bar r_d` and variance
  :math:`v_d = N^{-2}\sum_n[\sum_k r_{dnk}\eta_k^2 - (\eta^\top r_{dn})^2]`. The response term
  uses them: Gaussian :math:`\mathcal N(y \mid m_d, \sigma^2 + v_d)` (moment matching),
  Bernoulli/categorical with the probit-style correction :math:`\sigma(m/\sqrt{1+\pi v/8})`,
  Poisson with rate :math:`\exp(m + v/2)` -- second-order approximations in the spirit of
  the paper's eq. 19.
* :math:`\theta_d` has a Dirichlet guide :math:`\mathrm{Dir}(\gamma_d)` whose :math:`\gamma_d`
  is **computed, not learned**: ``sweeps`` rounds of the paper's closed-form coordinate
  ascent (eqs. 6-7) at the current global parameters, warm-started from the document's
  :math:`\gamma_d` of its previous visit (the estimators keep one per document), without
  gradient (:meth:`local_dirichlet`) -- the local step of stochastic variational inference (Hoffman
  et al., 2013). With mini-batches a stored per-document parameter would be updated only
  when its document is drawn, and an amortized encoder adds an amortization gap and
  parameters of its own; the local optimum needs neither and costs ``O(sweeps L K)`` per
  document. Since :math:`\gamma_d` (nearly) maximizes the bound, the gradient of the ELBO
  through it vanishes to first order, so stopping the gradient there is sound.

Prediction follows eqs. 12-13 and 22: the variational E-step for :math:`\phi` *without* the
response terms (the same coordinate ascent as the EM reference), then
:math:`\mathbb E[Y] = \mu(\eta^\top\bar\phi)`.
"""

from __future__ import annotations

import math

import numpy as np
import pyro
import pyro.distributions as dist
import torch
import torch.nn.functional as F
from pyro.nn import PyroModule, pyro_method

from ...base.pyro import pyro_param

RESPONSES = ("gaussian", "bernoulli", "categorical", "poisson")


class SupervisedLDA(PyroModule):
    """sLDA as a ``PyroModule`` with ``model`` and ``guide``.

    Args:
        vocab_size: V.
        n_topics: K.
        response: ``"gaussian"``, ``"bernoulli"``, ``"categorical"`` or ``"poisson"``.
        n_classes: number of classes (categorical response).
        alpha: symmetric Dirichlet parameter (default ``1/K``); ``learn_alpha`` learns it.
        sweeps: coordinate-ascent rounds of the guide's local step per mini-batch.

    Inputs of ``model``/``guide``: ``ids`` (``B x L`` long, padded with -1), ``y`` (``B``:
    float, class index or count; ``None`` to sample), ``n_docs`` (corpus size, for the
    mini-batch scaling of the ``documents`` plate).
    """

    def __init__(
        self,
        vocab_size: int,
        n_topics: int,
        response: str = "gaussian",
        n_classes: int | None = None,
        alpha: float | None = None,
        learn_alpha: bool = False,
        sweeps: int = 3,
    ):
        super().__init__()
        if response not in RESPONSES:
            raise ValueError(f"response must be one of {RESPONSES}; got {response!r}")
        if response == "categorical" and (n_classes is None or n_classes < 2):
            raise ValueError("a categorical response needs n_classes >= 2")
        self.V, self.K, self.response = vocab_size, n_topics, response
        self.n_classes = n_classes
        self.topic_logits = pyro_param(0.01 * torch.randn(n_topics, vocab_size))
        eta_shape: tuple[int, ...] = (int(n_classes or 0), n_topics) if response == "categorical" else (n_topics,)
        eta0 = torch.linspace(-1, 1, n_topics) if response != "categorical" else 0.01 * torch.randn(eta_shape)
        self.eta = pyro_param(eta0.expand(eta_shape).clone())
        if response == "gaussian":
            self.sigma = pyro_param(torch.tensor(1.0), constraint=dist.constraints.positive)
        alpha = 1.0 / n_topics if alpha is None else float(alpha)
        if learn_alpha:
            self.alpha = pyro_param(torch.tensor(alpha), constraint=dist.constraints.positive)
        else:
            self.register_buffer("alpha", torch.tensor(alpha))
        self.sweeps = sweeps

    # ------------------------------------------------------------------ pieces
    @property
    def topics(self) -> torch.Tensor:
        """K x V topic-word distributions beta."""
        return F.softmax(self.topic_logits, dim=-1)

    def linear_predictor_moments(self, theta: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact conditional mean and variance of eta^T z-bar given theta and the words
        (``B`` each; ``B x C`` for a categorical response)."""
        mask = (ids >= 0).to(theta.dtype)
        n = mask.sum(-1).clamp_min(1)
        beta_w = self.topics[:, ids.clamp_min(0)].permute(1, 2, 0)  # B x L x K
        r = theta.unsqueeze(1) * beta_w
        r = r / r.sum(-1, keepdim=True) * mask.unsqueeze(-1)  # posterior of z_n given theta, w_n
        eta = self.eta if self.eta.dim() == 2 else self.eta.unsqueeze(0)  # C x K
        means = torch.einsum("blk,ck->bc", r, eta) / n.unsqueeze(-1)
        second = torch.einsum("blk,ck->bc", r, eta * eta)
        first_sq = torch.einsum("blk,ck->blc", r, eta).pow(2).sum(1)
        var = (second - first_sq) / n.pow(2).unsqueeze(-1)
        if self.response != "categorical":
            return means.squeeze(-1), var.squeeze(-1)
        return means, var

    def response_distribution(self, mean: torch.Tensor, var: torch.Tensor) -> dist.TorchDistribution:
        """p(y | theta, w) with z summed out, to second order (see the module docstring)."""
        if self.response == "gaussian":
            return dist.Normal(mean, (self.sigma**2 + var).sqrt())
        if self.response == "poisson":
            return dist.Poisson(torch.exp(mean + 0.5 * var))
        scaled = mean / torch.sqrt(1 + math.pi * var / 8)
        if self.response == "bernoulli":
            return dist.Bernoulli(logits=scaled)
        return dist.Categorical(logits=scaled)

    # ------------------------------------------------------------------ model and guide
    @pyro_method
    def model(
        self,
        ids: torch.Tensor,
        y: torch.Tensor | None = None,
        n_docs: int | None = None,
        gamma_init: torch.Tensor | None = None,
    ) -> torch.Tensor:
        mask = ids >= 0
        beta = self.topics
        alpha = self.alpha.expand(self.K)
        with pyro.plate("documents", n_docs or ids.shape[0], subsample_size=ids.shape[0]):
            theta = pyro.sample("theta", dist.Dirichlet(alpha))
            # words, z summed out: sum_n log sum_k theta_k beta_{k, w_n}
            word_probs = theta @ beta  # B x V
            log_p = torch.log(word_probs.gather(1, ids.clamp_min(0)).clamp_min(1e-30))
            pyro.factor("words", (log_p * mask).sum(-1))
            mean, var = self.linear_predictor_moments(theta, ids)
            return pyro.sample("y", self.response_distribution(mean, var), obs=y)

    @torch.no_grad()
    def local_dirichlet(
        self, ids: torch.Tensor, y: torch.Tensor | None = None, gamma_init: torch.Tensor | None = None
    ) -> torch.Tensor:
        """gamma_d of q(theta_d) = Dir(gamma_d): ``sweeps`` rounds of the paper's closed-form
        coordinate ascent (eqs. 6-7, all words of a document updated together from the
        previous round's phi) at the current global parameters, starting from ``gamma_init``
        (a warm start: the document's gamma of the previous epoch) or the uniform
        ``alpha + N/K``. The Gaussian response's terms of eq. 7 enter when ``y`` is given;
        other responses use the LDA updates. The result is kept in ``last_gamma``."""
        mask = (ids >= 0).to(self.topic_logits.dtype)
        n = mask.sum(-1, keepdim=True).clamp_min(1)
        log_beta_w = torch.log_softmax(self.topic_logits, -1)[:, ids.clamp_min(0)].permute(1, 2, 0)  # B x L x K
        alpha = self.alpha.expand(self.K)
        gamma = alpha + n / self.K if gamma_init is None else gamma_init.to(mask.dtype)
        log_theta = torch.digamma(gamma) - torch.digamma(gamma.sum(-1, keepdim=True))
        phi = torch.softmax(log_theta.unsqueeze(1) + log_beta_w, -1) * mask.unsqueeze(-1)
        use_y = y is not None and self.response == "gaussian"
        if use_y:
            assert y is not None
            eta, s2 = self.eta, self.sigma**2
            lin = (y.unsqueeze(-1) / (n * s2)) * eta
        for _ in range(self.sweeps):
            logits = (
                torch.digamma(gamma).unsqueeze(1) - torch.digamma(gamma.sum(-1, keepdim=True)).unsqueeze(1) + log_beta_w
            )
            if use_y:
                rest = (phi.sum(1, keepdim=True) - phi) @ eta  # eta^T phi_{-j}, B x L
                logits = (
                    logits
                    + lin.unsqueeze(1)
                    - (2 * rest.unsqueeze(-1) * eta + eta * eta) / (2 * n.unsqueeze(-1) ** 2 * s2)
                )
            phi = torch.softmax(logits, -1) * mask.unsqueeze(-1)
            gamma = alpha + phi.sum(1)
        self.last_gamma = gamma
        return gamma

    @pyro_method
    def guide(
        self,
        ids: torch.Tensor,
        y: torch.Tensor | None = None,
        n_docs: int | None = None,
        gamma_init: torch.Tensor | None = None,
    ) -> None:
        with pyro.plate("documents", n_docs or ids.shape[0], subsample_size=ids.shape[0]):
            pyro.sample("theta", dist.Dirichlet(self.local_dirichlet(ids, y, gamma_init)))

    # ------------------------------------------------------------------ prediction
    def glm_mean(self, zbar: torch.Tensor) -> torch.Tensor:
        """mu(eta^T zbar) (eq. 22, at the variational mean of zbar): the mean response, or
        class probabilities (B x C) for a categorical response."""
        lin = zbar @ self.eta.T if self.eta.dim() == 2 else zbar @ self.eta
        if self.response == "gaussian":
            return lin
        if self.response == "poisson":
            return torch.exp(lin)
        if self.response == "bernoulli":
            return torch.sigmoid(lin)
        return torch.softmax(lin, dim=-1)

    def log_beta(self) -> np.ndarray:
        return torch.log_softmax(self.topic_logits, dim=-1).detach().double().cpu().numpy()
