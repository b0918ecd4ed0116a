"""Distribution estimation and imputation for multivariate categorical data: the CLGP and
LGM (Pyro) and the frequency baselines of Gal et al. (2015), section 5.2.

Data are ``n x D`` integer codes (``-1`` = missing) with ``cardinalities[d]`` values in
column ``d``; :class:`CategoricalTable` makes them from strings. Every model offers
``fit(codes)`` and ``predict_proba(codes)``: for each column, the probabilities of its
values in each row given the row's observed entries (imputation).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Self

import numpy as np
import pyro
import torch
from pyro.infer import TraceMeanField_ELBO
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..._random import NUMERICS_SEED, Streams, numpy_generator, torch_generator
from ...base.constraints import RUNTIME, Boolean, Integer, Options, Real, check_params
from ...base.device import FLOAT_DTYPES, check_device, state_to_cpu, to_host
from ...base.fit_options import Adam, FitOptionsArgument, FitOptionsMixin, RMSprop
from ...base.fitting import PlateauStopping, fit_stochastic
from ...warnings import warn
from ..mixins import SavedParamsMixin
from .model import CategoricalLatentGP

MISSING = -1


class CategoricalTable:
    """Strings (``None`` = missing) <-> integer codes, column by column. Categories are
    sorted (numerically when every value of a column is a number, else as strings).

    Fit it on every value the columns can take (e.g. the whole data set): the set of
    categories is domain knowledge, not a frequency estimate, and a test value outside it
    could only be given probability zero.
    """

    def fit(self, columns: list[str], values: np.ndarray) -> CategoricalTable:
        self.columns = list(columns)
        self.categories = []
        for j, name in enumerate(self.columns):
            seen = sorted({v for v in values[:, j] if v is not None}, key=_sort_key)
            if not seen:
                raise ValueError(f"column {name!r} has no observed value (all missing)")
            if len(seen) < 2:
                raise ValueError(f"column {name!r} takes a single value ({seen[0]!r}): nothing to model; drop it")
            self.categories.append(seen)
        return self

    @property
    def cardinalities(self) -> list[int]:
        return [len(c) for c in self.categories]

    def encode(self, values: np.ndarray) -> np.ndarray:
        codes = np.full(values.shape, MISSING, dtype=np.int64)
        for j, cats in enumerate(self.categories):
            index = {v: i for i, v in enumerate(cats)}
            for i, v in enumerate(values[:, j]):
                if v is None:
                    continue
                if v not in index:
                    raise ValueError(f"column {self.columns[j]!r} row {i}: value {v!r} is not a known category")
                codes[i, j] = index[v]
        return codes


def _sort_key(v: str) -> tuple:
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


def check_codes(codes: np.ndarray, cardinalities: list[int], name: str = "codes") -> np.ndarray:
    """``codes`` (``n x D``, -1 = missing) checked against the columns' ``cardinalities``, as a
    contiguous int64 copy; a ``ValueError``/``TypeError`` naming ``name`` otherwise."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != len(cardinalities):
        raise ValueError(f"{name} must be n x {len(cardinalities)}; got shape {codes.shape}")
    if not np.issubdtype(codes.dtype, np.integer):
        raise TypeError(f"{name} must hold integer codes (-1 = missing); got {codes.dtype}")
    bad = (codes < MISSING) | (codes >= np.asarray(cardinalities))
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise ValueError(f"{name} holds codes outside [-1, K_d) at (row, column) {list(zip(rows[:5], cols[:5]))}")
    return np.ascontiguousarray(codes, dtype=np.int64)  # views of any strides (codes[::-1]) and int width


# ------------------------------------------------------------------ CLGP and LGM


_JITTER = {"float64": 1e-6, "float32": 1e-4}  # added to K_MM's diagonal
LATENT_SCALES = ("auto", "paper", "joint")


def paper_scale_step(iteration: int) -> float:
    """The step size of the paper code's gradient ascent on log s (q(x)'s standard deviations) at
    ``iteration`` (0-based): learning rate 1e-2 times its ``learning_rate_adapt`` 0.2 times the decay
    100 / (t + 100) (``CLGP_opt.opt_one_step``, github.com/yaringal/CLGP)."""
    return 1e-2 * 0.2 * 100 / (iteration + 100)


class CLGP(FitOptionsMixin, SavedParamsMixin, BaseEstimator):
    """The categorical latent Gaussian process (``covariance="rbf"``) or the linear LGM
    (``covariance="linear"``), fitted by maximizing the Monte Carlo ELBO.

    Args:
        latent_dim, num_inducing: Q and M.
        covariance: ``"rbf"`` (CLGP) or ``"linear"`` (LGM: no KL on U).
        elbo_samples: Monte Carlo samples of (X, U, F) per ELBO evaluation (vectorized).
        optimizer: ``None`` or an :class:`~lvgp.RMSprop` (the paper) or :class:`~lvgp.Adam`, over the
            training data (full batch); unset fields take the defaults ``max_iter=500`` iterations,
            ``lr=0.01``, ``tol=1e-4`` and ``convergence_window=50``: after the warm-up, fitting stops
            when the mean loss of the last ``convergence_window`` steps is less than ``tol`` (relative)
            below the ones before; a ``ConvergenceWarning`` when ``max_iter`` ends it.
        init: initial latent means: ``"pca"`` (the first Q principal components of the
            one-hot rows, missing entries at their column means, scaled to unit variance;
            the usual GP-LVM initialization, and inducing inputs on a random subset of them) or
            ``"random"`` (N(0, I) as in the paper's section 5).
        lengthscale_init: initial ARD length-scales (the paper: 0.1, relative to its random
            initialization; 1.0 matches unit-variance PCA coordinates).
        latent_scale: how the standard deviations s of q(x) (training rows, and new rows at
            imputation) are fitted. ``"auto"`` (default): each of the two rules below is fitted
            on 80% of the training rows, every observed value of the other 20% is imputed in
            turn from the rest of its row, and the rule with the lower dev perplexity is refitted
            on every row (three fits in all; a tie goes to ``"joint"``; the choice and the dev
            perplexities are kept as ``latent_scale_`` and ``latent_scale_dev_perplexity_``).
            ``"paper"``: as in the paper's code
            (``CLGP_theano_opt.py`` of github.com/yaringal/CLGP), plain gradient ascent on
            log s with the decaying step ``0.002 * 100 / (t + 100)`` at iteration t, while
            everything else takes the ``optimizer``'s steps; s then stays near its start (0.1).
            ``"joint"``: s takes the ``optimizer``'s
            steps like every other parameter, so the ELBO is maximized over s too. The two are
            different estimators: on XOR (section 5.1.1) ``"paper"`` reaches the paper's
            perplexity and ``"joint"`` a better ELBO with a worse perplexity, because the ELBO's
            own optimum encodes the rows vaguely (the figures: ``results/README.md``,
            "Categorical imputation"; ``benchmarks/clgp_xor.py --bound``).
        kl_warmup: fraction of the optimizer's ``max_iter`` over which the weight of KL(q(x)||p(x)) rises
            linearly from 0 to 1 (then the objective is the exact ELBO). Without it the
            optimizer tends to collapse q(x) onto the prior first (an uninformative local
            optimum the KL makes cheap); 0 disables it.
        impute_iter: iterations fitting q(x) of new rows (global parameters fixed).
        predict_samples: Monte Carlo samples for predictive probabilities.
        restarts: independent fits from different random starts; the one with the best final
            training ELBO is kept (never chosen by test data).
        dtype: ``"float32"`` (default: the Monte Carlo ELBO's noise is far above float32's
            rounding, and a breast-cancer fit is faster with the same perplexity:
            ``benchmarks/clgp_fit.py``) or ``"float64"``; the jitter on K_MM's diagonal
            is 1e-4 and 1e-6 respectively.
        random_state, verbose.
        device: where fitting and prediction compute: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"`` or a
            ``torch.device`` (:mod:`lvgp.base.device`); predictions come back as numpy arrays.

    ``fit(codes, cardinalities)`` learns from ``n x D`` codes (-1 = missing, masked out
    of the likelihood); ``predict_proba(codes)`` infers q(x) for each new row from its
    observed entries with the global parameters fixed, then returns, per column, the
    predictive probabilities of its values. Fitted: ``model_``, ``elbo_curve_`` (per
    observed entry), ``latent_means_`` (n x Q), ``restart_elbos_``, ``n_iter_``, ``converged_``,
    ``latent_scale_`` (the rule used for q(x)'s scales) and ``latent_scale_dev_perplexity_``.
    The ELBO is evaluated by :meth:`CategoricalLatentGP.elbo` (all variables and Monte Carlo
    particles in one batch; Pyro's ``TraceMeanField_ELBO`` of the model and guide in
    expectation), with random numbers from local generators seeded by ``random_state``.
    """

    def __init__(
        self,
        latent_dim: int = 2,
        *,
        num_inducing: int = 50,
        covariance: str = "rbf",
        elbo_samples: int = 5,
        optimizer: RMSprop | Adam | None = None,
        init: str = "pca",
        lengthscale_init: float = 1.0,
        latent_scale: str = "auto",
        kl_warmup: float = 0.5,
        impute_iter: int = 300,
        predict_samples: int = 200,
        restarts: int = 1,
        alternate: bool = False,
        dtype: str = "float32",
        random_state: int | None = None,
        device: str | torch.device = "cpu",
        verbose: bool = False,
    ):
        self.latent_dim = latent_dim
        self.num_inducing = num_inducing
        self.covariance = covariance
        self.elbo_samples = elbo_samples
        self.optimizer = optimizer
        self.init = init
        self.lengthscale_init = lengthscale_init
        self.latent_scale = latent_scale
        self.kl_warmup = kl_warmup
        self.impute_iter = impute_iter
        self.predict_samples = predict_samples
        self.restarts = restarts
        self.alternate = alternate
        self.dtype = dtype
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _elbo(self) -> TraceMeanField_ELBO:
        """Pyro's ELBO of :meth:`CategoricalLatentGP.model` / ``guide`` (the reference the
        vectorized :meth:`CategoricalLatentGP.elbo` used for fitting is tested against)."""
        return TraceMeanField_ELBO(num_particles=self.elbo_samples, vectorize_particles=True, max_plate_nesting=1)

    # Pyro syncs PyroModule parameters with its *global* param store by name, so a second
    # model in one process would silently adopt the first one's tensors; every use of a model
    # runs with module-local parameters instead.
    _optimizer_defaults = (
        RMSprop(max_iter=500, lr=0.01, tol=1e-4, convergence_window=50),
        Adam(max_iter=500, lr=0.01, tol=1e-4, convergence_window=50),
    )

    _local_params = staticmethod(lambda: pyro.settings.context(module_local_params=True))

    _parameter_constraints: dict[str, list] = {
        **RUNTIME,
        "latent_dim": [Integer(1)],
        "num_inducing": [Integer(1)],
        "covariance": [Options("rbf", "linear")],
        "elbo_samples": [Integer(1)],
        "optimizer": [None, FitOptionsArgument(RMSprop, Adam, name="optimizer")],
        "init": [Options("pca", "random")],
        "lengthscale_init": [Real(0, open_low=True)],
        "latent_scale": [Options(*LATENT_SCALES)],
        "kl_warmup": [Real(0, 1)],
        "impute_iter": [Integer(1)],
        "predict_samples": [Integer(1)],
        "restarts": [Integer(1)],
        "alternate": [Boolean()],
        "dtype": [Options(*FLOAT_DTYPES)],
    }

    def _check_params(self) -> None:
        check_params(self)

    def _optimize(
        self,
        model: CategoricalLatentGP,
        params: list[torch.Tensor],
        loss_fn: Callable[[], torch.Tensor],
        iters: int,
        desc: str,
        warmup: int = 0,
        latent: list[torch.Tensor] | None = None,
        scales: list[torch.Tensor] | None = None,
        stop_early: bool = True,
    ) -> tuple[list[float], PlateauStopping | None]:
        """Adam or RMSprop on ``loss_fn`` (a negative Monte Carlo ELBO) for at most ``iters``
        steps; after the KL warm-up, stopped by :class:`~lvgp.base.fitting.PlateauStopping` over
        windows of 50 steps (``stop_early=False``: all ``iters`` steps). Returns the losses and
        the rule (``None`` when Ctrl-C ended the fit: no convergence warning on top of that one). With ``latent`` (the q(x)
        parameters, among ``params``), every iteration first steps the other parameters with
        q(x) fixed, then q(x) with the others fixed (the paper's section 4 schedule). ``scales``
        (the unconstrained log standard deviations of q(x), among ``params``) take
        :func:`paper_scale_step` gradient steps when ``latent_scale="paper"``."""
        optimizer = self._optimizer_options()
        make = torch.optim.RMSprop if isinstance(optimizer, RMSprop) else torch.optim.Adam
        slow = {id(t) for t in scales} if scales and self._scale_rule() == "paper" else set()
        latent_ids = {id(t) for t in latent or []}
        groups = [[t for t in params if id(t) not in latent_ids]] + ([list(latent)] if latent else [])
        steps: list[list[torch.optim.Optimizer]] = []
        scale_steps: list[torch.optim.Optimizer] = []  # plain SGD on the slow scales, step size set per iteration
        for group in groups:
            fast = [t for t in group if id(t) not in slow]
            steps.append([make(fast, lr=float(optimizer.lr))] if fast else [])
            if any(id(t) in slow for t in group):
                scale_steps.append(torch.optim.SGD([t for t in group if id(t) in slow], lr=paper_scale_step(0)))
                steps[-1].append(scale_steps[-1])
        everything = [opt for phase in steps for opt in phase]

        def iteration(it: int) -> torch.Tensor:
            # KL warm-up: the weight of KL(q(x)||p(x)) rises linearly to 1 (then the exact ELBO)
            model.kl_x_weight = min(1.0, (it + 1) / warmup) if warmup else 1.0
            for opt in scale_steps:
                opt.param_groups[0]["lr"] = paper_scale_step(it)
            for phase in steps:
                for opt in everything:
                    opt.zero_grad()
                loss = loss_fn()
                loss.backward()
                for opt in phase:
                    opt.step()
            return loss

        rule = (
            PlateauStopping(int(optimizer.convergence_window), float(optimizer.tol), start=warmup)
            if stop_early
            else None
        )
        try:
            # the losses stay on the device, read back where the rule decides (and at least every 50
            # iterations); imputation (no early stop) reads them once at the end
            result = fit_stochastic(
                iteration,
                max_iter=iters,
                rule=rule,
                what=desc,
                budget="max_iter",
                unit="iterations",
                read_every=50 if stop_early else iters,
                parameters=lambda: params,
                advice="lower lr",
                warn=False,  # the fit warns for the restart it keeps
                stacklevel=3,
                desc=desc,
                verbose=self.verbose,
            )
        finally:
            model.kl_x_weight = 1.0
        # no rule after Ctrl-C: no convergence warning on top of the interruption's
        return list(result.loss_curve), None if result.interrupted else rule

    def fit(self, codes: np.ndarray, cardinalities: list[int]) -> Self:
        """Fit on ``n x D`` codes (-1 = missing). With ``restarts > 1``, that many fits from
        different random starts; the one with the best final training ELBO is kept."""
        self._check_params()
        codes = check_codes(codes, cardinalities)
        observed = codes >= 0
        if not observed.any(0).all():
            raise ValueError(f"columns {np.flatnonzero(~observed.any(0)).tolist()} have no observed value")
        self.cardinalities_ = list(cardinalities)
        self.device_ = check_device(self.device)
        start = time.perf_counter()  # fit_seconds_ includes the dev fits of latent_scale="auto"
        # random_state is read once: the restarts' starts and the predictions' draws, by position as
        # before they had names (their values kept); the dev split of latent_scale="auto" from the root
        restarts = tuple(f"restart {i}" for i in range(self.restarts))
        streams = Streams(self.random_state, positions=(*restarts, "predictive draws"))
        if self.latent_scale == "auto":
            self.latent_scale_, self.latent_scale_dev_perplexity_ = self._select_latent_scale(
                codes, numpy_generator(streams.root)
            )
        else:
            self.latent_scale_, self.latent_scale_dev_perplexity_ = self.latent_scale, {}
        self._predict_seed = streams.seed("predictive draws")
        best = None
        self.restart_elbos_ = []
        with self._local_params():
            for name in restarts:
                run = self._fit_once(codes, observed, streams.seed(name))
                self.restart_elbos_.append(run["final_elbo"])
                if best is None or run["final_elbo"] > best["final_elbo"]:
                    best = run
        assert best is not None
        self.model_, self.elbo_curve_, rule = best["model"], best["curve"], best["rule"]
        self.converged_ = rule is None or rule.converged
        self.n_iter_ = len(self.elbo_curve_)
        self.fit_seconds_ = time.perf_counter() - start
        self.latent_means_ = to_host(self.model_.x_loc).copy()
        if rule is not None:
            rule.warn("CLGP" if self.covariance == "rbf" else "LGM", "max_iter", unit="iterations")
        return self

    # ------------------------------------------------------------------ persistence
    _saved_attributes = (
        "cardinalities_",
        "latent_scale_",
        "latent_scale_dev_perplexity_",
        "restart_elbos_",
        "elbo_curve_",
        "converged_",
        "n_iter_",
        "fit_seconds_",
        "latent_means_",
        "_predict_seed",
    )

    def _fitted_payload(self) -> dict:
        """The model's state, the PCA that starts new rows' q(x) (``init="pca"``) and the fitted
        attributes; a loaded CLGP imputes and predicts bit-identically (its Monte Carlo draws are
        seeded by the seed drawn at fit, which the file keeps)."""
        pca = getattr(self, "_pca", None) if self.init == "pca" else None
        return {
            "model": state_to_cpu(self.model_.state_dict()),
            "pca": None if pca is None else pca.to_state(),
            "attributes": self._attribute_values(),
        }

    def _restore_fitted(self, payload: dict) -> None:
        self._restore_attributes(payload["attributes"])
        self.device_ = check_device(self.device)
        model = CategoricalLatentGP(
            self.cardinalities_,
            len(self.latent_means_),
            self.latent_dim,
            self.num_inducing,
            self.covariance,
            seed=NUMERICS_SEED,  # the initial values, overwritten by the saved state
            lengthscale_init=self.lengthscale_init,
            jitter=_JITTER[self.dtype],
        ).to(FLOAT_DTYPES[self.dtype])
        with self._local_params():
            model.load_state_dict(payload["model"])
        self.model_ = model.to(self.device_)
        if payload["pca"] is not None:
            self._pca = _OneHotPCA.from_state(payload["pca"])

    def _scale_rule(self) -> str:
        """The rule for q(x)'s scales in use: the fitted choice once ``fit`` has made it."""
        return getattr(self, "latent_scale_", self.latent_scale)

    def _select_latent_scale(self, codes: np.ndarray, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        """``latent_scale="auto"``: fit each rule on 80% of the rows and impute each observed value
        of the other 20% (rows with at least two observed values) from the rest of its row; the
        lower dev perplexity wins, ``"joint"`` on a tie or when fewer than 5 rows can be held out."""
        usable = np.flatnonzero((codes >= 0).sum(1) >= 2)  # rows with a value to impute from another
        n_dev = int(round(0.2 * len(usable)))
        if n_dev < 5:
            warn(
                f"latent_scale='auto': {len(usable)} of {len(codes)} rows have two observed values, too few to "
                "hold out 5 for choosing the rule on dev; using 'joint'",
                UserWarning,
                stacklevel=3,
            )
            return "joint", {}
        dev = rng.choice(usable, n_dev, replace=False)
        rest = np.setdiff1d(np.arange(len(codes)), dev)
        if not (codes[rest] >= 0).any(0).all():
            return "joint", {}  # the 80% would miss a column entirely
        partial, columns, values = hide_each_value(codes[dev])
        scores = {}
        for rule in ("paper", "joint"):
            trial = clone(self).set_params(latent_scale=rule, verbose=False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # the final fit warns, if it must
                trial.fit(codes[rest], self.cardinalities_)
            scores[rule] = imputation_perplexity(trial, partial, columns, values)
        return ("paper" if scores["paper"] < scores["joint"] else "joint"), scores

    def _fit_once(self, codes: np.ndarray, observed: np.ndarray, seed: int) -> dict:
        """One fit from the start that ``seed`` draws; every random number comes from local
        generators (none from torch's, numpy's or Python's global state)."""
        model = CategoricalLatentGP(
            self.cardinalities_,
            len(codes),
            self.latent_dim,
            self.num_inducing,
            self.covariance,
            seed=seed,
            lengthscale_init=self.lengthscale_init,
            jitter=_JITTER[self.dtype],
        ).to(FLOAT_DTYPES[self.dtype])
        device = self.device_
        if self.init == "pca":
            self._pca = _OneHotPCA(self.cardinalities_, self.latent_dim).fit(codes)
            with torch.no_grad():
                model.x_loc = torch.from_numpy(self._pca.transform(codes)).to(model.x_loc.dtype)
                if self.covariance == "rbf":  # inducing inputs on a random subset of the latent means
                    rows = numpy_generator(seed).choice(
                        len(codes), self.num_inducing, replace=len(codes) < self.num_inducing
                    )
                    model.inducing = torch.from_numpy(self._pca.transform(codes[rows])).to(model.x_loc.dtype)
        model = model.to(device)
        y, mask = torch.from_numpy(codes).to(device), torch.from_numpy(observed).to(device)
        generator = torch_generator(seed, device)
        n_obs = float(observed.sum())
        budget = int(self._optimizer_options().max_iter)
        curve, rule = self._optimize(
            model,
            list(model.parameters()),
            lambda: -model.elbo(y, mask, self.elbo_samples, generator=generator),
            budget,
            "CLGP" if self.covariance == "rbf" else "LGM",
            warmup=int(Fraction(self.kl_warmup) * budget),  # exact: a budget of 10**400 is no float
            latent=[p for n, p in model.named_parameters() if n.startswith(("x_loc", "x_scale"))]
            if self.alternate
            else None,
            scales=[p for n, p in model.named_parameters() if n.startswith("x_scale")],
        )
        with torch.no_grad():  # the final ELBO, with many samples (restarts are compared by it)
            final = float(np.mean([model.elbo(y, mask, 20, generator=generator).item() for _ in range(5)])) / n_obs
        return {"model": model, "curve": [-v / n_obs for v in curve], "rule": rule, "final_elbo": final}

    def infer_rows(self, codes: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """q(x) of new rows, fitted to their observed entries with the global parameters fixed:
        their means and standard deviations (``n x Q``). Nothing is stored in the model, and the
        Monte Carlo draws come from a generator seeded at fit time: the result is a function of
        the fitted model and ``codes`` alone."""
        check_is_fitted(self, "model_")
        with self._local_params():
            return self._infer_rows(codes)

    def _infer_rows(self, codes: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        codes = check_codes(codes, self.cardinalities_)
        model = self.model_
        dtype, device = model.x_loc.dtype, model.x_loc.device
        init = self._pca.transform(codes) if self.init == "pca" else np.zeros((len(codes), self.latent_dim))
        loc = torch.tensor(init, dtype=dtype, device=device, requires_grad=True)
        raw_scale = torch.full(
            (len(codes), self.latent_dim), math.log(0.1), dtype=dtype, device=device, requires_grad=True
        )
        y, mask = torch.from_numpy(codes).to(device), torch.from_numpy(codes >= 0).to(device)
        generator = torch_generator(self._predict_seed, device)
        frozen = [p for p in model.parameters() if p.requires_grad]
        for p in frozen:
            p.requires_grad_(False)
        try:
            # every row sees the same Monte Carlo draws and the same number of steps, and the
            # optimizers act elementwise: a row's q(x) does not depend on the other rows of the batch
            self._optimize(
                model,
                [loc, raw_scale],
                lambda: (
                    -model.elbo(
                        y,
                        mask,
                        self.elbo_samples,
                        x_loc=loc,
                        x_scale=raw_scale.exp(),
                        generator=generator,
                        shared_noise=True,
                    )
                ),
                self.impute_iter,
                "impute",
                scales=[raw_scale],
                stop_early=False,
            )
        finally:
            for p in frozen:
                p.requires_grad_(True)
        return loc.detach(), raw_scale.detach().exp()

    def predict_proba(self, codes: np.ndarray) -> list[np.ndarray]:
        """Per column, ``n x K_d`` predictive probabilities of each row's values given its
        observed entries (a pure function of the fitted model and ``codes``)."""
        loc, scale = self.infer_rows(codes)
        g = Streams.of_seed(self._predict_seed).torch("predictive draws", loc.device)
        with self._local_params():
            probs = self.model_.predictive_probabilities(
                loc, scale, self.predict_samples, generator=g, shared_noise=True
            )
        # float64 rows renormalized, whatever the model's dtype (float32 rows sum to 1 +- 1e-7)
        out = [to_host(p).astype(np.float64) for p in probs]
        return [p / p.sum(1, keepdims=True) for p in out]


class _OneHotPCA:
    """Principal components of one-hot encoded rows (missing entries at the column mean)."""

    def __init__(self, cardinalities: list[int], n_components: int):
        self.cardinalities, self.n_components = cardinalities, n_components

    def _one_hot(self, codes: np.ndarray) -> np.ndarray:
        blocks = []
        for d, k in enumerate(self.cardinalities):
            block = np.zeros((len(codes), k))
            seen = codes[:, d] >= 0
            block[np.flatnonzero(seen), codes[seen, d]] = 1.0
            block[~seen] = self.means[d] if hasattr(self, "means") else 1.0 / k
            blocks.append(block)
        return np.concatenate(blocks, axis=1)

    def fit(self, codes: np.ndarray) -> _OneHotPCA:
        self.means = []
        for d, k in enumerate(self.cardinalities):
            col = codes[:, d]
            self.means.append(np.bincount(col[col >= 0], minlength=k) / max(1, (col >= 0).sum()))
        data = self._one_hot(codes)
        self.center = data.mean(0)
        _, _, vt = np.linalg.svd(data - self.center, full_matrices=False)
        components = vt[: self.n_components]
        scores = (data - self.center) @ components.T
        scale = scores.std(0) + 1e-12
        # fewer components than latent dimensions (few rows or one-hot columns): the rest start at 0
        missing = self.n_components - len(components)
        self.components = np.vstack([components, np.zeros((missing, data.shape[1]))])
        self.scale = np.concatenate([scale, np.ones(missing)])
        return self

    def transform(self, codes: np.ndarray) -> np.ndarray:
        return ((self._one_hot(codes) - self.center) @ self.components.T) / self.scale

    def to_state(self) -> dict:
        """The fitted components as tensors and plain values (:meth:`from_state` inverts it)."""
        return {
            "cardinalities": list(self.cardinalities),
            "n_components": self.n_components,
            "means": [torch.from_numpy(m.copy()) for m in self.means],
            "center": torch.from_numpy(self.center.copy()),
            "components": torch.from_numpy(self.components.copy()),
            "scale": torch.from_numpy(self.scale.copy()),
        }

    @classmethod
    def from_state(cls, state: dict) -> _OneHotPCA:
        pca = cls(list(state["cardinalities"]), int(state["n_components"]))
        pca.means = [m.numpy() for m in state["means"]]
        pca.center, pca.components, pca.scale = (state[k].numpy() for k in ("center", "components", "scale"))
        return pca


def hide_one_value(codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The imputation protocol: in every row hide one observed value chosen at random.
    Returns the partially observed rows, and the hidden columns and values."""
    partial = codes.copy()
    columns = np.empty(len(codes), dtype=int)
    for i, row in enumerate(codes):
        observed = np.flatnonzero(row >= 0)
        if len(observed) < 2:
            raise ValueError(f"row {i} has fewer than two observed values: nothing is left to impute from")
        columns[i] = rng.choice(observed)
    values = codes[np.arange(len(codes)), columns]
    partial[np.arange(len(codes)), columns] = MISSING
    return partial, columns, values


def hide_each_value(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every observed value of every row hidden in turn: one partially observed copy of a row per
    observed value (rows need two observed values), with the hidden columns and values, as
    :func:`hide_one_value` returns them."""
    rows, columns = np.nonzero(codes >= 0)
    partial = codes[rows].copy()
    partial[np.arange(len(rows)), columns] = MISSING
    if ((partial >= 0).sum(1) < 1).any():
        raise ValueError("hide_each_value: every row needs at least two observed values")
    return partial, columns, codes[rows, columns]


def imputation_perplexity(model: Any, partial: np.ndarray, columns: np.ndarray, values: np.ndarray) -> float:
    """exp(-mean log p(hidden value | the rest of its row)) -- the paper's test perplexity."""
    probs = model.predict_proba(partial)
    p = np.array([probs[d][i, v] for i, (d, v) in enumerate(zip(columns, values))])
    with np.errstate(divide="ignore"):
        return float(np.exp(-np.mean(np.log(p))))
