"""Gradient-based fitting shared by lvgp's models, two loops returning one :class:`FitResult`:

* :func:`minimize` -- deterministic full-batch fits by L-BFGS (scipy's L-BFGS-B, the Liu & Nocedal
  code the GP-LVSM paper uses), stopped by a rule passed in (:class:`RelativeChangeStopping`);
* :func:`fit_stochastic` -- the one torch loop: every fit by torch's optimizers (Adam on a full-batch
  objective, deterministic or not; mini-batch SVI of the sparse GP-LVSM, the
  variational GP classifier, sLDA and the mini-batch matcher; the Monte Carlo ELBO of CLGP; the
  Monte Carlo objective of the GP-LVSM's variational word vectors; the SVI of the GP covariate
  embedding): the caller's iteration (a step or an epoch) in a loop with a stopping rule passed in
  (:class:`PlateauStopping`, :class:`BestOfWindowStopping`), one early-stopping policy on a
  validation score (keep the best iterate), losses read back from the device in windows, a
  progress bar, and one Ctrl-C behaviour.

Both stop on Ctrl-C cleanly: the fit ends where it is (``interrupted``, a ``RuntimeWarning``, never
counted as converged); :func:`minimize` and :func:`fit_stochastic` with validation keep the best
parameters seen. Budgets are named by their unit: ``max_iter`` (optimizer iterations on the whole
data), ``max_epochs`` (passes over the data), ``max_steps`` (mini-batch steps)."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize
import torch
from linear_operator.utils.errors import NanError, NotPSDError
from sklearn.exceptions import ConvergenceWarning

from ..warnings import warn as warn_user
from .device import LossBuffer
from .progress import progress_bar

#: what the fitting loops do on Ctrl-C: ``"keep"`` (the default, for a user at the keyboard: stop,
#: warn, keep the best parameters so far) or ``"raise"`` (let the ``KeyboardInterrupt`` through: a
#: comparative study must never record an interrupted fit as a result; :func:`interrupts_raise`)
INTERRUPTS: contextvars.ContextVar[str] = contextvars.ContextVar("lvgp_interrupts", default="keep")


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """Inside, Ctrl-C ends a fit by raising ``KeyboardInterrupt`` instead of keeping its best
    parameters (:data:`INTERRUPTS`)."""
    token = INTERRUPTS.set("raise")
    try:
        yield
    finally:
        INTERRUPTS.reset(token)


def reraise_interrupts() -> None:
    """Called in a loop's ``except KeyboardInterrupt:`` before it keeps what it has: re-raise when
    interrupts must end the caller (:data:`INTERRUPTS` is ``"raise"``)."""
    if INTERRUPTS.get() == "raise":
        raise KeyboardInterrupt


def diverged(err: Exception, what: str, at: str, advice: str, buffer: LossBuffer | None = None) -> FloatingPointError:
    """The error of a fit whose parameters left finite values, raised where that shows first: a
    covariance of NaN entries fails its Cholesky (linear_operator's ``NanError``, torch's
    ``LinAlgError``), a distribution refuses non-finite parameters, a step overflows the parameters'
    dtype -- before a non-finite loss is read back. A loss still waiting in ``buffer`` that is already
    non-finite names the first step that diverged (its ``FloatingPointError`` is raised); otherwise
    the error names ``at`` (the iteration that failed), what failed there, and ``advice`` (what to
    change: ``"lower lr"``)."""
    if buffer is not None:
        try:
            buffer.flush()
        except FloatingPointError as found:
            found.__cause__ = err
            return found
    first = (str(err).strip().splitlines() or [""])[0][:200]
    failure = FloatingPointError(
        f"{what} diverged at {at}: the parameters left finite values ({type(err).__name__}: {first}); {advice}"
    )
    failure.__cause__ = err
    return failure


#: a parameter beyond this magnitude has diverged: no unconstrained parameter of lvgp's models means
#: anything there (their exp and squares overflow), though it is still a finite float64
DIVERGED_MAGNITUDE = 1e100


def left_finite_values(parameters: Iterable[torch.Tensor]) -> bool:
    """Whether any of ``parameters`` holds a NaN, an infinity or a value beyond
    :data:`DIVERGED_MAGNITUDE`."""
    return any(
        not bool((torch.isfinite(p.detach()) & (p.detach().abs() < DIVERGED_MAGNITUDE)).all()) for p in parameters
    )


@contextlib.contextmanager
def divergence_named(
    what: str,
    at: str,
    advice: str,
    parameters: Callable[[], Iterable[torch.Tensor]] | None = None,
    buffer: LossBuffer | None = None,
) -> Iterator[None]:
    """Inside, an error that shows the fit's parameters diverged becomes :func:`diverged`'s
    ``FloatingPointError`` (naming ``at``, the iteration, and ``advice``): linear_operator's
    ``NanError`` (a covariance of NaN entries), a step that overflows the parameters' dtype, or --
    given ``parameters``, a callable returning the fitted tensors -- any ``RuntimeError`` or
    ``ValueError`` raised while one of them has left finite values (:func:`left_finite_values`).
    Other errors pass through as they are. The one divergence check of :func:`fit_stochastic` and
    :func:`minimize`."""
    try:
        yield
    except NanError as err:
        raise diverged(err, what, at, advice, buffer) from err
    except (RuntimeError, ValueError) as err:  # torch's LinAlgError is a RuntimeError
        overflow = isinstance(err, RuntimeError) and "without overflow" in str(err)
        if overflow or (parameters is not None and left_finite_values(parameters())):
            raise diverged(err, what, at, advice, buffer) from err
        raise


def _log_density(prior: Any, value: torch.Tensor) -> torch.Tensor:
    r"""``prior``'s log density summed over ``value``: :math:`-\infty` where a value lies outside its
    support (checked here, so torch's argument validation does not raise)."""
    try:
        support = prior.support
    except NotImplementedError:  # a prior that does not say: torch's own check decides
        support = None
    if support is not None and not bool(support.check(value.detach()).all()):
        return value.sum() * 0.0 - math.inf  # on the graph, so a caller's backward() still runs
    return prior.log_prob(value).sum()


def log_prior(
    module: torch.nn.Module, exclude: torch.nn.Module | Sequence[torch.nn.Module] | None = None
) -> torch.Tensor:
    r"""The sum of the log densities of the gpytorch priors registered in ``module`` at their
    parameters' current values (what gpytorch's marginal log likelihoods add for MAP-II), leaving
    out the priors registered inside ``exclude`` (a sub-module whose prior the caller counts its own
    way, e.g. the word vectors' :math:`\frac\rho2\sum_v\|\mathbf x_v\|^2` through ``penalty()``).
    A zero scalar when there are none (``exclude`` may be several modules).

    A value outside a prior's support (a positive weight whose softplus underflowed to exactly 0 at a
    line search's far trial point) has log density :math:`-\infty`: the objective is infinite there,
    and an L-BFGS fit rejects the point (:func:`minimize`) where torch's support check would have raised
    a ``ValueError``."""
    excluded = [] if exclude is None else [exclude] if isinstance(exclude, torch.nn.Module) else list(exclude)
    skip = {id(m) for part in excluded for m in part.modules()}
    total: torch.Tensor | None = None
    for _, prior_module, prior, closure, _ in module.named_priors():  # type: ignore[operator]
        if id(prior_module) in skip:
            continue
        term = _log_density(prior, closure(prior_module))
        total = term if total is None else total + term
    if total is None:
        first = next(module.parameters(), None)
        if first is None:
            return torch.zeros((), dtype=torch.float64)
        return torch.zeros((), dtype=first.dtype, device=first.device)
    return total


@dataclass
class FitResult:
    """What happened during fitting."""

    n_iter: int = 0
    converged: bool = False
    message: str = ""
    loss_curve: list[float] = field(default_factory=list)
    validation_curve: list[float] = field(default_factory=list)
    best_iter: int | None = None
    interrupted: bool = False
    stopped_early: bool = False

    def warn_if_unconverged(
        self, what: str, advice: str = "increase max_iter or tol", unit: str = "iterations", stacklevel: int = 2
    ) -> None:
        """A ``ConvergenceWarning`` when the budget ended the fit (not convergence, not Ctrl-C):
        "``what`` did not converge in N ``unit`` (why); ``advice``". ``stacklevel`` as for
        ``warnings.warn`` called where this is called."""
        if not self.converged and not self.interrupted:
            warn_user(
                f"{what} did not converge in {self.n_iter} {unit} ({self.message}); {advice}",
                ConvergenceWarning,
                stacklevel=stacklevel + 1,
            )


def _window_and_tol(window: int, tol: float) -> tuple[int, float]:
    """A window rule's settings, checked: ``window >= 1``, ``tol`` finite and ``>= 0``."""
    if window < 1 or not math.isfinite(tol) or tol < 0:
        raise ValueError(f"window must be >= 1 and tol finite and >= 0; got {window!r}, {tol!r}")
    return int(window), float(tol)


class PlateauStopping:
    """The one stopping rule of lvgp's stochastic fits (:func:`fit_stochastic`: mini-batch SVI of the
    sparse GP-LVSM, the variational GP classifier and sLDA, the Monte Carlo ELBO of CLGP): the
    losses are cut into consecutive windows of
    ``window`` values (steps or epochs: the loop's unit), the first ``start`` (a warm-up) not
    judged; at the end of every window from the second on, the fit has converged when the mean of
    that window is less than ``tol`` (relative) below the mean of the window before.

    A budget that ends the fit first gets a ``ConvergenceWarning`` from :meth:`warn` that names
    the budget and says whether the rule was ever applied (a budget shorter than two windows
    never lets it run). Ctrl-C is the caller's: it warns that the fit was interrupted, never that
    it did not converge.

    Example::

        rule = PlateauStopping(window=100, tol=1e-4)
        for step in range(max_steps):
            if rule.update(loss_of_the_step):
                break
        rule.warn("sparse GP-LVSM", "max_steps", unit="steps")
    """

    def __init__(self, window: int, tol: float, start: int = 0) -> None:
        self.window, self.tol = _window_and_tol(window, tol)
        self.start = int(start)
        self.losses: list[float] = []
        self.checks = 0
        self.converged = False

    @property
    def first_check(self) -> int:
        """How many losses the rule needs before it is applied the first time."""
        return self.start + 2 * self.window

    def applies_at(self, n: int) -> bool:
        """Whether the rule is applied when the ``n``-th loss arrives (a loop that reads its losses
        back in batches reads them at least there)."""
        return n >= self.first_check and (n - self.start) % self.window == 0

    def update(self, loss: float) -> bool:
        """Record one loss; ``True`` once converged."""
        self.losses.append(float(loss))
        w = self.window
        if self.applies_at(len(self.losses)):
            before = float(np.mean(self.losses[-2 * w : -w]))
            recent = float(np.mean(self.losses[-w:]))
            self.checks += 1
            self.converged = before - recent <= self.tol * abs(before)
        return self.converged

    def observe(self, values: Sequence[float]) -> bool:
        """Record the losses read back together (in order); ``True`` once converged. Every loss is
        recorded, also after the one that converges."""
        return any([self.update(v) for v in values])  # a list: the rule sees every loss

    def describe(self, unit: str) -> str:
        """Why a fit this rule stopped converged (:attr:`FitResult.message`)."""
        return f"the mean loss of {self.window} {unit} fell by less than tol={self.tol:g}"

    def warn(self, what: str, budget: str, unit: str = "steps", stacklevel: int = 2) -> None:
        """The ``ConvergenceWarning`` of a fit that ``budget`` (the parameter's name, e.g.
        ``"max_epochs"``) ended before the rule was met; nothing once converged."""
        if self.converged:
            return
        n = len(self.losses)
        if self.checks == 0:
            why = (
                f"the rule was never applied: it compares the mean losses of two windows of {self.window} "
                f"{unit} and needs {self.first_check}"
            )
        else:
            why = f"the mean loss of the last {self.window} {unit} still fell by more than tol={self.tol:g}"
        warn_user(
            f"{what} did not converge in {n} {unit}, the budget {budget} ended it ({why}); increase {budget}",
            ConvergenceWarning,
            stacklevel=stacklevel + 1,
        )


class RelativeChangeStopping:
    """The stopping rule of full-batch L-BFGS in :func:`minimize`: converged when an iteration lowers
    the objective by less than ``tol`` relative to ``max(|f_k|, |f_k+1|, 1)`` (scipy L-BFGS-B's
    ``ftol``), or when the projected gradient falls below ``gtol``."""

    def __init__(self, tol: float = 1e-7, gtol: float = 1e-9) -> None:
        if not (math.isfinite(tol) and tol >= 0 and math.isfinite(gtol) and gtol >= 0):
            raise ValueError(f"tol and gtol must be finite and >= 0; got {tol!r}, {gtol!r}")
        self.tol, self.gtol = float(tol), float(gtol)

    def scipy_options(self) -> dict[str, float]:
        """The options of ``scipy.optimize.minimize(method="L-BFGS-B")`` that carry the rule."""
        return {"ftol": self.tol, "gtol": self.gtol}


class BestOfWindowStopping:
    """The stopping rule of Adam on a full-batch objective in :func:`fit_stochastic` (a deterministic
    one, or the Monte Carlo objective of variational word vectors): converged when the best loss of the last
    ``window`` iterations improves on the best loss before them by less than ``tol`` relative to
    ``max(1, |best before|)``; judged whenever losses are read back (it asks for no read-back of its
    own), once more than two windows have passed. One rule object per fit: it keeps the losses it
    has observed."""

    def __init__(self, window: int = 10, tol: float = 1e-7) -> None:
        self.window, self.tol = _window_and_tol(window, tol)
        self.losses: list[float] = []
        self.checks = 0
        # running minima of a loss sequence judged before (its identity and length): each judgement
        # then costs the window, not the whole curve (a long fit judged at every step was quadratic)
        self._prefix: tuple[int, float, list[float]] = (0, math.nan, [])

    def _best_before(self, losses: Sequence[float], end: int) -> float:
        """``min(losses[:end])``, from the running minima of ``losses`` kept between calls (a
        sequence that only grows: the same object, its last judged value unchanged)."""
        key, last, minima = self._prefix
        if key != id(losses) or len(minima) > len(losses) or (minima and losses[len(minima) - 1] != last):
            minima = []
        for value in losses[len(minima) : end]:
            minima.append(min(minima[-1], value) if minima else value)
        self._prefix = (id(losses), losses[len(minima) - 1], minima)
        return minima[end - 1]

    def converged(self, losses: Sequence[float]) -> bool:
        """Whether the losses so far (one per iteration) meet the rule."""
        w = self.window
        if len(losses) <= 2 * w:
            return False
        before, recent = self._best_before(losses, len(losses) - w), min(losses[-w:])
        return before - recent <= self.tol * max(1.0, abs(before))

    def applies_at(self, n: int) -> bool:
        """Never a read-back of its own: the rule is judged at the loop's read-backs."""
        return False

    def observe(self, values: Sequence[float]) -> bool:
        """Record the losses read back together and judge the rule on all of them so far."""
        if not values:
            return False
        self.losses.extend(float(v) for v in values)
        self.checks += len(self.losses) > 2 * self.window
        return self.converged(self.losses)

    @property
    def message(self) -> str:
        return self.describe("iterations")

    def describe(self, unit: str) -> str:
        """Why a fit this rule stopped converged (:attr:`FitResult.message`)."""
        return f"relative improvement below tol={self.tol} over {self.window} {unit}"

    def warn(self, what: str, budget: str, unit: str = "iterations", stacklevel: int = 2) -> None:
        """The ``ConvergenceWarning`` of a fit that ``budget`` ended before the rule was met."""
        n = len(self.losses)
        if self.checks == 0:
            why = f"the rule was never applied: it compares the best losses of windows of {self.window} {unit}"
        else:
            why = f"the best loss of the last {self.window} {unit} still improved by more than tol={self.tol:g}"
        warn_user(
            f"{what} did not converge in {n} {unit}, the budget {budget} ended it ({why}); increase {budget}",
            ConvergenceWarning,
            stacklevel=stacklevel + 1,
        )


#: the stopping rules :func:`fit_stochastic` takes (objects with ``window``, ``applies_at(n)``,
#: ``observe(values)``, ``describe(unit)`` and ``warn(...)``)
class SuccessiveChangeStopping:
    """The stopping rule of variational EM (supervised LDA's, in :func:`fit_stochastic`): converged when
    an iteration changes the objective by less than ``tol`` relative to the one before,
    :math:`|f_k - f_{k-1}| < \\mathrm{tol}\\,|f_{k-1}|` (the paper's "0.01%" at ``tol=1e-4``), judged at
    every iteration from the second."""

    window = 1

    def __init__(self, tol: float) -> None:
        if not (math.isfinite(tol) and tol >= 0):
            raise ValueError(f"tol must be finite and >= 0; got {tol!r}")
        self.tol = float(tol)
        self.losses: list[float] = []
        self.converged = False

    def applies_at(self, n: int) -> bool:
        return n >= 2

    def update(self, loss: float) -> bool:
        """Record one loss; ``True`` once converged."""
        self.losses.append(float(loss))
        if len(self.losses) >= 2 and not self.converged:
            before, now = self.losses[-2], self.losses[-1]
            self.converged = abs(now - before) / abs(before) < self.tol
        return self.converged

    def observe(self, values: Sequence[float]) -> bool:
        return any([self.update(v) for v in values])

    def describe(self, unit: str) -> str:
        return f"the objective changed by less than tol={self.tol:g} (relative) in one of the {unit}"

    def warn(self, what: str, budget: str, unit: str = "iterations", stacklevel: int = 2) -> None:
        """The ``ConvergenceWarning`` of a fit that ``budget`` ended before the rule was met."""
        if not self.converged:
            warn_user(
                f"{what} did not converge in {len(self.losses)} {unit}, the budget {budget} ended it; increase {budget}",
                ConvergenceWarning,
                stacklevel=stacklevel + 1,
            )


StochasticRule = PlateauStopping | BestOfWindowStopping | SuccessiveChangeStopping


def fit_stochastic(
    iteration: Callable[[int], torch.Tensor],
    *,
    max_iter: int,
    rule: StochasticRule | None,
    what: str,
    budget: str = "max_iter",
    unit: str = "iterations",
    validate: Callable[[], float] | None = None,
    validation_interval: int = 1,
    n_iter_no_change: int = 10,
    state: tuple[Callable[[], Any], Callable[[Any], None]] | None = None,
    exhausted: Callable[[], str | None] | None = None,
    read_every: int | None = None,
    parameters: Callable[[], Iterable[torch.Tensor]] | None = None,
    warn: bool = True,
    stacklevel: int = 2,
    advice: str = "lower lr",
    desc: str = "fit",
    verbose: bool = False,
) -> FitResult:
    """The stochastic training loop of every iterative estimator: ``iteration(i)`` runs iteration
    ``i`` (one step or one epoch, the caller's unit) and returns its loss as a scalar tensor (left
    on the device); at most ``max_iter`` of them.

    Stopping, in this order after an iteration:

    * ``validate`` (a score to minimize on held-out data, evaluated after every
      ``validation_interval``-th iteration; ``None``: none): stopped early after ``n_iter_no_change``
      iterations without improvement; with ``state`` = ``(snapshot, restore)`` the best evaluated
      iteration's parameters are restored at the end (the keep-best policy; without it the caller
      reads ``best_iter`` to refit on all data). The iteration is scored before the rule is judged,
      so that the last iterate of a converged fit is kept when it is the best;
    * ``rule`` (an object passed in, ``None``: none): :class:`PlateauStopping` (converged when the
      mean loss of a window is less than its ``tol`` below the window before) or
      :class:`BestOfWindowStopping` (the best loss of a window against the best before it, judged at
      every read-back);
    * ``exhausted()`` (optional): the name of another budget that ends the fit now (e.g.
      ``"max_epochs"`` of a step-counted fit), or ``None``;
    * the budget ``max_iter`` (named ``budget`` in messages).

    The losses are read back from the device in windows: every ``read_every`` iterations (default:
    the rule's window, and the iterations where :class:`PlateauStopping` decides; every
    ``validation_interval`` iterations with ``validate``; the last iteration), and a non-finite loss
    raises a ``FloatingPointError`` naming the iteration. So does an iteration that fails because the
    parameters diverged (:func:`divergence_named`; ``parameters``: a callable returning the fitted
    tensors). When a budget ends the fit before the rule,
    a ``ConvergenceWarning`` names it (``warn``). Ctrl-C ends the fit where it is, with a
    ``RuntimeWarning``: ``interrupted``, never converged, the best validated parameters kept.
    """
    if validation_interval < 1:
        raise ValueError(f"validation_interval must be >= 1; got {validation_interval!r}")
    result = FitResult()
    if validate is not None:
        every = int(validation_interval)
    else:
        every = int(read_every or (rule.window if rule is not None else max_iter))
    buffer = LossBuffer(every, what, advice)
    bar = progress_bar(total=max_iter, desc=desc, verbose=verbose)
    best = _Best(math.inf, [], 0)
    best_state: Any = None
    ended_by = budget

    def record(values: list[float] | None) -> bool:
        values = values or []
        result.loss_curve.extend(values)
        if values:
            bar.set_postfix(loss=f"{values[-1]:.5g}", refresh=False)  # drawn by the next timed update
        return rule is not None and rule.observe(values)

    try:
        for it in range(max_iter):
            reason = exhausted() if exhausted is not None else None
            if reason is not None:
                ended_by = reason
                break
            with divergence_named(what, f"{unit.rstrip('s')} {it + 1}", advice, parameters, buffer):
                loss = iteration(it)
            bar.update(1)
            flush = it + 1 == max_iter or (rule is not None and rule.applies_at(it + 1))
            by_rule = record(buffer.append(loss, flush=flush))
            if validate is not None and (it + 1) % validation_interval == 0:  # decides before the rule
                score = _finite_score(validate(), what, it + 1, unit)
                result.validation_curve.append(score)
                if score < best.score:
                    best.score, best.iter = score, it + 1
                    best_state = state[0]() if state is not None else None
                elif it + 1 - best.iter >= n_iter_no_change:
                    result.converged = result.stopped_early = True
                    result.message = f"early stopping: no validation improvement in {n_iter_no_change} {unit}"
                    break
            if by_rule:
                result.converged = True
                result.message = rule.describe(unit)  # type: ignore[union-attr]
                break
        record(buffer.flush())
    except KeyboardInterrupt:
        bar.close()
        reraise_interrupts()
        result.loss_curve.extend(buffer.flush())
        result.interrupted = True
        result.message = f"interrupted after {len(result.loss_curve)} {unit}"
        warn_user(
            f"{what}: fitting interrupted after {len(result.loss_curve)} {unit}",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
        )
    finally:
        bar.close()
    result.n_iter = len(result.loss_curve)
    if validate is not None and best.iter:
        result.best_iter = best.iter
        if best_state is not None:
            state[1](best_state)  # type: ignore[index]
    if not result.converged and not result.interrupted:
        if not result.message:
            result.message = f"the budget {ended_by} ended the fit"
        if warn and validate is not None:
            warn_user(
                f"{what}: the validation score still improved after {result.n_iter} {unit}; increase {ended_by}",
                ConvergenceWarning,
                stacklevel=stacklevel + 1,
            )
        elif warn and rule is not None:
            rule.warn(what, ended_by, unit=unit, stacklevel=stacklevel + 1)
    return result


class _Params:
    """Flat float64 view of a list of parameters (for scipy)."""

    def __init__(self, params: Sequence[torch.nn.Parameter]):
        self.params = list(params)

    def get(self) -> np.ndarray:
        return torch.cat([p.detach().reshape(-1) for p in self.params]).cpu().double().numpy()

    def set(self, x: np.ndarray) -> None:
        offset = 0
        with torch.no_grad():
            for p in self.params:
                k = p.numel()
                p.copy_(torch.from_numpy(x[offset : offset + k]).view_as(p).to(p))
                offset += k

    def grad(self) -> np.ndarray:
        return (
            torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in self.params])
            .cpu()
            .double()
            .numpy()
        )

    def snapshot(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.params]

    def restore(self, values: list[torch.Tensor]) -> None:
        with torch.no_grad():
            for p, v in zip(self.params, values):
                p.copy_(v)


def torch_adam(params: Iterable[torch.Tensor], lr: float, fused: bool = False) -> torch.optim.Adam:
    """torch's Adam (its defaults but ``lr``) in the multi-tensor form (``foreach=True``): each update a
    few operators over all the parameters instead of about ten per parameter, as torch already runs it
    on CUDA. The same values as its per-parameter loop, bit for bit on a CPU (tested). ``fused``: torch's
    fused implementation instead (one operator an update, its step counts kept as tensors: no read on
    the host; values equal to rounding), for the compiled sparse step."""
    if fused:
        return torch.optim.Adam(params, lr=float(lr), fused=True)
    return torch.optim.Adam(params, lr=float(lr), foreach=True)


def fit_adam(
    params: Sequence[torch.nn.Parameter],
    objective: Callable[[], torch.Tensor],
    *,
    lr: float,
    max_iter: int,
    rule: BestOfWindowStopping | None,
    what: str = "the objective",
    validate: Callable[[], float] | None = None,
    validation_interval: int = 1,
    n_iter_no_change: int = 10,
    warn: bool = True,
    stacklevel: int = 2,
    advice: str = "lower lr",
    desc: str = "fit",
    verbose: bool = False,
) -> FitResult:
    """Adam on a full-batch ``objective()`` (deterministic, or a Monte Carlo average that draws anew
    at each call) as an iteration of :func:`fit_stochastic`, the one torch loop: one step an
    iteration, its loss that of the parameters before the step; stopped by ``rule`` (a
    :class:`BestOfWindowStopping`), by the validation score's patience (the best validated parameters
    kept), the budget, or Ctrl-C (the fit ends where it is). The parameters that require a gradient
    are fitted."""
    params = [p for p in params if p.requires_grad]
    optimizer = torch_adam(params, lr)

    def step(it: int) -> torch.Tensor:
        for p in params:
            p.grad = None
        loss = objective()
        loss.backward()
        optimizer.step()
        return loss

    return fit_stochastic(
        step,
        max_iter=max_iter,
        rule=rule,
        what=what,
        validate=validate,
        validation_interval=validation_interval,
        n_iter_no_change=n_iter_no_change,
        state=parameter_state(params),
        warn=warn,
        stacklevel=stacklevel + 1,
        advice=advice,
        parameters=lambda: params,
        desc=desc,
        verbose=verbose,
    )


def parameter_state(
    params: Sequence[torch.nn.Parameter],
) -> tuple[Callable[[], list[torch.Tensor]], Callable[[list[torch.Tensor]], None]]:
    """``(snapshot, restore)`` of the values of ``params``: :func:`fit_stochastic`'s ``state`` for
    keeping the best validated iterate of a fit whose state is its parameters."""
    flat = _Params(params)
    return flat.snapshot, flat.restore


class _EarlyStop(Exception):
    pass


def _finite_score(value: Any, what: str, iteration: int, unit: str = "iterations") -> float:
    """A validation score as a float; a ``FloatingPointError`` naming the iteration when it is not
    finite (the best iterate would otherwise be chosen among NaNs: none, or the first)."""
    score = float(value)
    if not math.isfinite(score):
        raise FloatingPointError(
            f"{what}: the validation score became {score} after {iteration} {unit}: the predictions on the "
            "held-out documents are not finite (a diverged fit, or held-out documents the model cannot score)"
        )
    return score


@dataclass
class _Best:
    """The best iterate seen (by validation score, else by objective)."""

    score: float
    values: list[torch.Tensor]
    iter: int


def minimize(
    params: Sequence[torch.nn.Parameter],
    objective: Callable[[], torch.Tensor],
    *,
    max_iter: int = 500,
    tol: float = 1e-7,
    validate: Callable[[], float] | None = None,
    validation_interval: int = 1,
    n_iter_no_change: int = 10,
    stopping: RelativeChangeStopping | None = None,
    verbose: bool = False,
    desc: str = "fit",
) -> FitResult:
    """Minimize a deterministic full-batch ``objective()`` (a scalar tensor) over ``params`` by scipy's
    L-BFGS-B with exact gradients: converged when the relative decrease of the objective falls below
    ``tol`` or the projected gradient vanishes. (Adam, and every stochastic objective, runs in
    :func:`fit_stochastic`, the one torch loop.)

    Args:
        validate: a score to *minimize* on held-out data, evaluated every
            ``validation_interval`` iterations; when given, fitting stops after
            ``n_iter_no_change`` iterations without improvement (the patience) and the parameters
            of the best evaluated iteration are restored.
        stopping: the stopping rule, an object passed in (as botorch's ``fit`` takes its optimizer):
            :class:`RelativeChangeStopping`; ``None``: the rule with ``tol``.
        verbose: show a tqdm progress bar.

    A ``KeyboardInterrupt`` stops fitting; the best parameters seen (by validation score
    if given, else by objective) are kept and ``result.interrupted`` is set. Without any parameter
    that requires a gradient the objective is evaluated once (``n_iter`` 0, converged). A trial point
    of the line search where the objective fails -- a covariance that is not positive definite, a
    loss that is not finite -- is rejected and the search backtracks (``result.message`` counts such
    points); the starting point failing raises.
    """
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}")
    if stopping is None:
        stopping = RelativeChangeStopping(tol)
    if not isinstance(stopping, RelativeChangeStopping):
        raise TypeError(f"stopping: L-BFGS takes a RelativeChangeStopping; got {type(stopping).__name__}")
    flat = _Params([p for p in params if p.requires_grad])
    result = FitResult()
    if not flat.params:
        with torch.no_grad():
            result.loss_curve.append(float(objective()))
        result.converged, result.message = True, "no parameters to fit: the objective evaluated once"
        return result
    best = _Best(math.inf, flat.snapshot(), 0)
    bar = progress_bar(total=max_iter, desc=desc, verbose=verbose)

    def evaluate() -> torch.Tensor:
        for p in flat.params:
            p.grad = None
        with divergence_named(desc, f"iteration {result.n_iter + 1}", _ADVICE, lambda: flat.params):
            loss = objective()
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"the objective became {loss.item()} at iteration {result.n_iter}: the parameters diverged; {_ADVICE}"
            )
        loss.backward()
        return loss

    def end_of_iteration(loss: float) -> None:
        # the parameters are those of the iteration just ended (scipy's callback sets them)
        result.n_iter += 1
        result.loss_curve.append(loss)
        bar.update(1)
        postfix = {"loss": f"{loss:.5g}"}
        score = loss
        if validate is not None:
            score = math.inf
            if result.n_iter % validation_interval == 0:
                score = _finite_score(validate(), desc, result.n_iter)
                result.validation_curve.append(score)
                postfix["val"] = f"{score:.4g}"
        if score < best.score:
            best.score, best.values, best.iter = score, flat.snapshot(), result.n_iter
        bar.set_postfix(postfix, refresh=False)  # drawn by the next timed update
        if validate is not None and result.n_iter - best.iter >= n_iter_no_change:
            result.stopped_early = True
            raise _EarlyStop

    try:
        _run_lbfgs(flat, evaluate, end_of_iteration, max_iter, stopping, result)
    except _EarlyStop:
        result.converged = True
        result.message = f"early stopping: no validation improvement in {n_iter_no_change} iterations"
    except KeyboardInterrupt:
        bar.close()
        reraise_interrupts()
        result.interrupted = True
        result.message = f"interrupted at iteration {result.n_iter}"
        warn_user(
            f"fitting interrupted at iteration {result.n_iter}; keeping the parameters of iteration {best.iter}",
            RuntimeWarning,
            stacklevel=2,
        )
    finally:
        bar.close()
    if validate is not None or result.interrupted:
        flat.restore(best.values)
        result.best_iter = best.iter
    return result


#: what to change when a full-batch fit diverges
_ADVICE = "lower lr, raise rho, or try the other optimizer"


#: what an objective raises at a point where its covariance is not positive definite or not finite
#: (a Cholesky that fails, linear_operator's refusal, :func:`diverged`'s error, a non-finite loss)
_FAILED_AT_A_POINT = (torch.linalg.LinAlgError, NotPSDError, FloatingPointError)


def _run_lbfgs(
    flat: _Params,
    evaluate: Callable[[], torch.Tensor],
    end_of_iteration: Callable[[float], None],
    max_iter: int,
    rule: RelativeChangeStopping,
    result: FitResult,
) -> None:
    """scipy's L-BFGS-B over ``flat``. A trial point of the line search where the objective fails
    (:data:`_FAILED_AT_A_POINT`, or its gradient is not finite; after a first point that did not) is
    rejected as botorch's scipy fit does: its loss is infinite, so the line search backtracks towards
    the last accepted iterate. The fit goes on; ``result.message`` counts the rejected points, and a fit
    whose last iteration's line search rejected one has not converged. (The starting point failing
    raises.)"""
    rejected: list[str] = []
    started = [False]  # the starting point evaluated
    last_rejected = [-1]  # the iterations accepted when a point was last rejected

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        flat.set(x)
        try:
            loss = evaluate()
            grad = flat.grad()
            if not np.isfinite(grad).all():  # a finite loss whose gradient overflows: scipy's next x is NaN
                raise FloatingPointError(f"the gradient is not finite at iteration {result.n_iter + 1}")
        except _FAILED_AT_A_POINT as err:
            if not started[0]:
                raise
            rejected.append(f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:160]}")
            last_rejected[0] = result.n_iter
            return math.inf, np.zeros_like(x)
        started[0] = True
        return loss.item(), grad

    def callback(intermediate_result: scipy.optimize.OptimizeResult) -> None:
        flat.set(intermediate_result.x)
        end_of_iteration(float(intermediate_result.fun))

    res = scipy.optimize.minimize(
        fun,
        flat.get(),
        jac=True,
        method="L-BFGS-B",
        callback=callback,
        options={"maxiter": max_iter, **rule.scipy_options(), "maxcor": 20},
    )
    flat.set(res.x)
    # scipy may call it converged on the short step that backtracking left: not where that step's
    # line search rejected a point (the iteration after the rejection must be a whole one)
    result.converged = bool(res.success) and last_rejected[0] < result.n_iter - 1
    result.message = str(res.message)
    if rejected:
        result.message += (
            f"; {len(rejected)} trial point(s) of the line search rejected, the objective or its gradient "
            f"failing there (first: {rejected[0]}; last at iteration {last_rejected[0] + 1})"
        )
