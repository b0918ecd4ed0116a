r"""The categorical latent Gaussian process (CLGP; Gal, Chen & Ghahramani, ICML 2015) and its
linear counterpart, the latent Gaussian model (LGM), in Pyro.

The paper's extracted text lost its formulas; the model below is rebuilt from its prose,
the appendix code listing and the sparse-GP literature it cites (Titsias 2009; Titsias &
Lawrence 2010). For rows :math:`n=1..N`, categorical variables :math:`d=1..D` with
:math:`K_d` values, latent dimension :math:`Q` and :math:`M` inducing inputs :math:`Z`
(shared by all variables):

.. math::
    \mathbf x_n &\sim \mathcal N(0, I_Q) \\
    \mathbf u_{dk} &\sim \mathcal N(0, K_{MM}) \quad (k = 1..K_d) \\
    f_{ndk} \mid \mathbf x_n, \mathbf u_{dk} &\sim \mathcal N\big(\mathbf k_{Mn}^\top K_{MM}^{-1}\mathbf u_{dk},\;
        k_{nn} - \mathbf k_{Mn}^\top K_{MM}^{-1}\mathbf k_{Mn}\big) \\
    y_{nd} \mid \mathbf f_{nd} &\sim \mathrm{Categorical}(\mathrm{softmax}(\mathbf f_{nd}))

with the ARD RBF covariance :math:`k(\mathbf x, \mathbf x') = \sigma_f^2\exp(-\frac12\sum_q (x_q - x'_q)^2/\ell_q^2)`.
:math:`q(U_d)` is parametrized through the whitened variable :math:`V_d = L_{MM}^{-1}U_d`
(:math:`K_{MM} = L_{MM}L_{MM}^\top`): :math:`q(\mathbf v_{dk}) = \mathcal N(\mathbf m_{dk}, S_d S_d^\top)`
is the same family as the paper's :math:`q(\mathbf u_{dk}) = \mathcal N(\boldsymbol\mu_{dk}, L_d L_d^\top)`
(:math:`\boldsymbol\mu = L_{MM}\mathbf m`, :math:`L_d = L_{MM}S_d`), but its KL to :math:`p(\mathbf v) = \mathcal N(0, I)`
stays well conditioned when inducing inputs crowd together.
Variational posterior (paper eqs. 7, 18-19):
:math:`q(\mathbf X) = \prod_n \mathcal N(\mathbf m_n, \mathrm{diag}\,\mathbf s_n^2)`,
:math:`q(\mathbf U_d) = \prod_k \mathcal N(\boldsymbol\mu_{dk}, L_d L_d^\top)` (the covariance shared
by the :math:`K_d` categories of variable :math:`d`, Cholesky-parametrized), and
:math:`q(F \mid X, U) = p(F \mid X, U)`. The ELBO (eqs. 14-15, 26)

.. math:: \mathcal L = \sum_{n,d\,\text{observed}} \mathbb E_q[\log \mathrm{softmax}(\mathbf f_{nd})_{y_{nd}}]
        - \sum_d \mathrm{KL}(q(\mathbf U_d)\|p(\mathbf U_d)) - \sum_n \mathrm{KL}(q(\mathbf x_n)\|p(\mathbf x_n))

has its expected log likelihood estimated by Monte Carlo with reparameterized samples of
:math:`X`, :math:`U` and :math:`F` (eqs. 20-22, 27-28) and its KL terms computed analytically
(Pyro's ``TraceMeanField_ELBO``; the :math:`F` terms cancel exactly because the guide
samples :math:`F` from the model's conditional). Missing entries are masked out of the
likelihood.

LGM (section 5.1): the same model with a linear covariance and :math:`U` point-estimated
without a prior (no KL on :math:`U`), "following the model specification in Khan et al.
(2012)". With a linear covariance :math:`k(\mathbf x,\mathbf x') = \mathbf x^\top V\mathbf x' + c`
the sparse-GP mean :math:`\mathbf k_{Mn}^\top K_{MM}^{-1}\mathbf u` is an affine function of
:math:`\mathbf x_n` and the conditional variance vanishes once :math:`M \ge Q+1`; since
:math:`K_{MM}` then has rank :math:`Q+1` (the inducing parametrization is degenerate), the LGM
is implemented in that equivalent explicit form, :math:`\mathbf f_{nd} = W_d\mathbf x_n + \mathbf b_d`
with :math:`W_d, \mathbf b_d` point estimates.
"""

from __future__ import annotations

import functools
import math

import pyro
import pyro.distributions as dist
import torch
from pyro.nn import PyroModule, pyro_method
from torch import Tensor

from ..._random import torch_generator
from ...base.pyro import pyro_param
from ...kernels.latent_distribution import rbf_gram

COVARIANCES = ("rbf", "linear")
#: the most numbers in one tensor of a chunk of samples of :meth:`CategoricalLatentGP.predictive_probabilities`
#: (2^22: 32 MiB in float64)
PREDICT_CHUNK_NUMBERS = 2**22


def log_softmax_at(logits: Tensor, index: Tensor) -> Tensor:
    """``log_softmax(logits, -1)`` at ``index`` only, ``logits[index] - logsumexp(logits)``.

    Shapes: ``(*batch, K)`` logits and ``(*batch,)`` long indices -> ``(*batch,)``. The same values as ``torch.log_softmax`` then
    ``gather``, computed from the running maximum directly: with few categories (K = 10) torch's
    log_softmax kernel and its backward cost several times more (benchmarks/README.md, CLGP)."""
    top = logits.detach().amax(-1, keepdim=True)
    log_norm = top.squeeze(-1) + torch.log(torch.exp(logits - top).sum(-1))
    return logits.gather(-1, index.unsqueeze(-1)).squeeze(-1) - log_norm


class CategoricalLatentGP(PyroModule):
    """CLGP (``covariance="rbf"``) or LGM (``covariance="linear"``, point-estimated U).

    Args:
        cardinalities: ``K_d`` for every variable.
        n_rows: number of rows with their own q(x) (training rows).
        latent_dim: Q.
        num_inducing: M.
        covariance: ``"rbf"`` (CLGP) or ``"linear"`` (LGM).
        jitter: added to the diagonal of K_MM.
        seed: seed of the random initialization (paper section 5: latent means N(0, 1),
            latent standard deviations 0.1, length-scales 0.1; inducing-output means small so
            that every value starts equally likely).
    """

    def __init__(
        self,
        cardinalities: list[int],
        n_rows: int,
        latent_dim: int = 2,
        num_inducing: int = 50,
        covariance: str = "rbf",
        jitter: float = 1e-6,
        seed: int | None = None,
        lengthscale_init: float = 0.1,
    ):
        super().__init__()
        if covariance not in COVARIANCES:
            raise ValueError(f"covariance must be one of {COVARIANCES}; got {covariance!r}")
        g = torch_generator(seed) if seed is not None else None
        Q, M = latent_dim, num_inducing
        self.cardinalities = [int(k) for k in cardinalities]
        self.covariance = covariance
        self.jitter = jitter
        self.Q, self.M = Q, M
        self.x_loc = pyro_param(torch.randn(n_rows, Q, generator=g))
        self.x_scale = pyro_param(torch.full((n_rows, Q), 0.1), constraint=dist.constraints.positive)
        if covariance == "rbf":
            self.inducing = pyro_param(torch.randn(M, Q, generator=g))
            self.signal_variance = pyro_param(torch.tensor(1.0), constraint=dist.constraints.positive)
            self.lengthscale = pyro_param(torch.full((Q,), lengthscale_init), constraint=dist.constraints.positive)
        for d, k in enumerate(self.cardinalities):
            if covariance == "rbf":
                setattr(self, f"v_loc_{d}", pyro_param(0.01 * torch.randn(k, M, generator=g)))
                setattr(self, f"v_tril_{d}", pyro_param(torch.eye(M), constraint=dist.constraints.lower_cholesky))
            else:
                setattr(self, f"weight_{d}", pyro_param(0.01 * torch.randn(k, Q, generator=g)))
                setattr(self, f"bias_{d}", pyro_param(torch.zeros(k)))
        self._cache: tuple | None = None
        #: weight of the KL of q(x) in the ELBO (1 = the ELBO; < 1 during a warm-up)
        self.kl_x_weight = 1.0

    # ------------------------------------------------------------------ covariance
    def kernel(self, a: Tensor, b: Tensor) -> Tensor:
        """ARD RBF covariance: ``... x n x Q``, ``... x m x Q`` -> ``... x n x m``."""
        unit = torch.ones((), dtype=a.dtype, device=a.device)
        return self.signal_variance * rbf_gram(a / self.lengthscale, b / self.lengthscale, unit)

    def conditional(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """For latent points ``x`` (``... x n x Q``): W = L_MM^-1 K_Mn (``... x M x n``), so that
        the conditional mean of f is W^T v for whitened v, and the conditional variances
        k_nn - k_Mn^T K_MM^-1 k_Mn = k_nn - ||W_:n||^2 (``... x n``) -- shared by all variables.
        The guide and the replayed model see the same sample of ``x``: the result is reused.
        Not ``pyro.contrib.gp.util.conditional``: x comes in batches of particles (``S x n x Q``),
        which its 2-d kernels cannot take (tests/test_library_references.py checks the two agree)."""
        if self._cache is not None and self._cache[0] is x:
            return self._cache[1]
        z = self.inducing
        kmm = self.kernel(z, z) + self.jitter * torch.eye(self.M, dtype=z.dtype, device=z.device)
        chol = torch.linalg.cholesky(kmm)
        kmn = self.kernel(z, x)  # ... x M x n
        w = torch.linalg.solve_triangular(chol, kmn, upper=False)
        var = (self.signal_variance - w.pow(2).sum(-2)).clamp_min(1e-10)
        self._cache = (x, (w, var))
        return w, var

    def function_moments(self, d: int, x: Tensor, v: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """Mean (``... x n x K_d``) and standard deviation (``... x n x 1``, ``None`` for the
        LGM) of f_d given x and (CLGP) a sample of the whitened V_d."""
        if self.covariance == "linear":
            return x @ getattr(self, f"weight_{d}").mT + getattr(self, f"bias_{d}"), None
        if v is None:
            raise ValueError("the CLGP's function moments need a sample of V")
        w, var = self.conditional(x)
        if v.dim() > 2:
            # vectorized particles: V (a site outside the rows plate) has batch shape (S, 1),
            # x has (S, n); align the particle dims instead of broadcasting S x S
            v = v.reshape(-1, *v.shape[-2:])
        return w.mT @ v.mT, var.sqrt().unsqueeze(-1)

    # ------------------------------------------------------------------ model and guide
    @pyro_method
    def model(self, y: Tensor, observed: Tensor) -> None:
        """``y``: ``n x D`` long codes of the training rows (anything where missing);
        ``observed``: ``n x D`` bool."""
        n = y.shape[0]
        dtype, device = self.x_loc.dtype, self.x_loc.device
        with pyro.plate("rows", n, dim=-1), pyro.poutine.scale(scale=self.kl_x_weight):
            zeros = torch.zeros(n, self.Q, dtype=dtype, device=device)
            x = pyro.sample("x", dist.Normal(zeros, 1.0, validate_args=False).to_event(1))
        for d, k in enumerate(self.cardinalities):
            u = None
            if self.covariance == "rbf":
                eye = torch.eye(self.M, dtype=dtype, device=device)
                prior = dist.MultivariateNormal(
                    torch.zeros(k, self.M, dtype=dtype, device=device), scale_tril=eye, validate_args=False
                )
                u = pyro.sample(f"v_{d}", prior.to_event(1))
            mean, sd = self.function_moments(d, x, u)
            with pyro.plate(f"rows_{d}", n, dim=-1):
                f = mean
                if sd is not None:
                    f = pyro.sample(f"f_{d}", dist.Normal(mean, sd, validate_args=False).to_event(1))
                pyro.sample(
                    f"y_{d}",
                    dist.Categorical(logits=f, validate_args=False).mask(observed[:, d]),
                    obs=y[:, d].clamp(0, k - 1),
                )

    @pyro_method
    def guide(self, y: Tensor, observed: Tensor) -> None:
        n = y.shape[0]
        with pyro.plate("rows", n, dim=-1), pyro.poutine.scale(scale=self.kl_x_weight):
            x = pyro.sample("x", dist.Normal(self.x_loc, self.x_scale, validate_args=False).to_event(1))
        if self.covariance == "linear":
            return
        for d in range(len(self.cardinalities)):
            q_v = dist.MultivariateNormal(
                getattr(self, f"v_loc_{d}"), scale_tril=getattr(self, f"v_tril_{d}"), validate_args=False
            )
            u = pyro.sample(f"v_{d}", q_v.to_event(1))
            mean, sd = self.function_moments(d, x, u)
            assert sd is not None  # the CLGP (rbf) branch: only the LGM has no F noise
            with pyro.plate(f"rows_{d}", n, dim=-1):
                pyro.sample(f"f_{d}", dist.Normal(mean, sd, validate_args=False).to_event(1))

    # ------------------------------------------------------------------ the ELBO, vectorized
    def _stacked_v(self) -> tuple[Tensor, Tensor, Tensor]:
        """q(V) of all variables at once: means ``D x K x M`` (categories padded to ``K =
        max K_d``), Cholesky factors ``D x M x M``, and the ``D x K`` mask of real categories."""
        k_max = max(self.cardinalities)
        dtype = self.x_loc.dtype
        locs, valid = [], torch.zeros(len(self.cardinalities), k_max, dtype=torch.bool, device=self.x_loc.device)
        for d, k in enumerate(self.cardinalities):
            loc = getattr(self, f"v_loc_{d}")
            locs.append(torch.cat([loc, loc.new_zeros(k_max - k, self.M)]) if k < k_max else loc)
            valid[d, :k] = True
        trils = torch.stack([getattr(self, f"v_tril_{d}") for d in range(len(self.cardinalities))])
        return torch.stack(locs).to(dtype), trils, valid

    def elbo(
        self,
        y: Tensor,
        observed: Tensor,
        samples: int = 5,
        x_loc: Tensor | None = None,
        x_scale: Tensor | None = None,
        kl_x_weight: float | None = None,
        generator: torch.Generator | None = None,
        shared_noise: bool = False,
    ) -> Tensor:
        r"""A Monte Carlo estimate of the ELBO (module docstring), all variables and ``samples``
        particles in one batch: the same estimator Pyro's ``TraceMeanField_ELBO`` computes from
        :meth:`model` and :meth:`guide` (analytic KLs of q(x) and q(V); reparameterized samples of
        x, V and F for the expected log likelihood; the F terms cancel), without its per-site
        tracing (five times faster on the breast-cancer table; tested equal in expectation).
        ``x_loc``/``x_scale``: q(x) of other rows (imputation), default the training rows';
        ``kl_x_weight``: default the module's (warm-up); ``shared_noise``: every row gets the same
        draws (common random numbers: a row's estimate does not depend on the other rows)."""
        x_loc = self.x_loc if x_loc is None else x_loc
        x_scale = self.x_scale if x_scale is None else x_scale
        weight = self.kl_x_weight if kl_x_weight is None else kl_x_weight
        dtype = x_loc.dtype
        n = x_loc.shape[0]
        rows = 1 if shared_noise else n
        device = x_loc.device  # the generator, if any, must be on it
        x = x_loc + x_scale * torch.randn(
            samples, rows, x_loc.shape[1], generator=generator, dtype=dtype, device=device
        )  # S x n x Q
        codes = y.clamp_min(0)
        if self.covariance == "linear":
            loglik = x.new_zeros(())
            for d, k in enumerate(self.cardinalities):
                f = x @ getattr(self, f"weight_{d}").mT + getattr(self, f"bias_{d}")  # S x n x K_d
                logp = log_softmax_at(f, codes[:, d].clamp_max(k - 1).expand(samples, n))
                loglik = loglik + (logp * observed[:, d]).sum()
            kl_v = x.new_zeros(())
        else:
            self._cache = None
            w, var = self.conditional(x)  # S x M x n, S x n
            self._cache = None
            locs, trils, valid = self._stacked_v()  # D x K x M, D x M x M, D x K
            eps_v = torch.randn(samples, *locs.shape, generator=generator, dtype=dtype, device=device)
            v = locs + eps_v @ trils.mT  # S x D x K x M
            mean = torch.einsum("smn,sdkm->sndk", w, v)
            eps_f = torch.randn(samples, rows, *mean.shape[2:], generator=generator, dtype=dtype, device=device)
            f = mean + var.sqrt()[..., None, None] * eps_f
            f = f.masked_fill(~valid, -math.inf)
            logp = log_softmax_at(f, codes.expand(samples, n, -1))
            loglik = (logp * observed).sum()
            # KL(N(m, S S^T) || N(0, I)) per category, S shared by a variable's K_d categories
            trace = trils.pow(2).sum((-2, -1))  # D
            logdet = 2 * torch.log(trils.diagonal(dim1=-2, dim2=-1).abs()).sum(-1)  # D
            counts = valid.sum(-1).to(dtype)
            kl_v = 0.5 * (counts * (trace - self.M - logdet) + locs.pow(2).sum((-2, -1))).sum()
        kl_x = 0.5 * (x_loc.pow(2) + x_scale.pow(2) - 1 - 2 * torch.log(x_scale)).sum()
        return loglik / samples - kl_v - weight * kl_x

    # ------------------------------------------------------------------ prediction
    @torch.no_grad()
    def predictive_probabilities(
        self,
        loc: Tensor,
        scale: Tensor,
        samples: int = 100,
        generator: torch.Generator | None = None,
        shared_noise: bool = False,
    ) -> list[Tensor]:
        """Monte Carlo estimates of p(y_nd = k | data) for every row of q(x) = N(``loc``,
        ``scale**2``) and variable: the average over samples of x ~ q(x_n), U ~ q(U),
        F ~ p(F | x, U) of softmax(f_nd); ``shared_noise``: every row gets the same draws. The
        draws are those of a loop over the samples; the samples are computed in batches of them."""
        n_rows = loc.shape[0]
        out = [torch.zeros(n_rows, k, dtype=loc.dtype, device=loc.device) for k in self.cardinalities]
        draw = functools.partial(torch.randn, generator=generator, dtype=loc.dtype, device=loc.device)
        rows = 1 if shared_noise else n_rows
        rbf = self.covariance == "rbf"
        # the draws in the order of a loop over the samples (x, then per variable V and F), so that the
        # estimate does not depend on the chunking; the samples of a chunk computed as one batch, a
        # chunk's largest tensor (chunk x rows x max(K, M)) at most PREDICT_CHUNK_NUMBERS numbers
        width = max(max(self.cardinalities), self.M if rbf else 1, loc.shape[1])
        chunk = max(1, min(samples, PREDICT_CHUNK_NUMBERS // max(1, n_rows * width)))
        for start in range(0, samples, chunk):
            size = min(chunk, samples - start)
            x_noise: list[Tensor] = []
            v_noise: list[list[Tensor]] = [[] for _ in self.cardinalities]
            f_noise: list[list[Tensor]] = [[] for _ in self.cardinalities]
            for _ in range(size):
                x_noise.append(draw(rows, loc.shape[1]))
                for d, k in enumerate(self.cardinalities):
                    if rbf:
                        v_noise[d].append(draw(k, self.M))
                        f_noise[d].append(draw(rows, k))
            x = loc + scale * torch.stack(x_noise)  # size x n x Q
            self._cache = None
            for d in range(len(self.cardinalities)):
                u = None
                if rbf:
                    u = getattr(self, f"v_loc_{d}") + torch.stack(v_noise[d]) @ getattr(self, f"v_tril_{d}").mT
                mean, sd = self.function_moments(d, x, u)  # size x n x K_d
                f = mean if sd is None else mean + sd * torch.stack(f_noise[d])
                out[d] += torch.softmax(f, -1).sum(0)
            self._cache = None
        return [p / samples for p in out]
