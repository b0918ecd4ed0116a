"""How an estimator fits, as objects: the optimizer (``optimizer=``) and early stopping on held-out
data (``early_stopping=``), in the manner of botorch's ``fit.py``, which takes its optimizer as an
argument, and of :class:`~lvgp.kernels.LDKSpec`, which does the same for the kernel.

* :class:`LBFGS` -- scipy's L-BFGS-B on a deterministic full-batch objective
  (:func:`~lvgp.base.fitting.minimize`);
* :class:`Adam` -- Adam on the full-batch objective: a deterministic one in
  :func:`~lvgp.base.fitting.minimize`, a Monte Carlo one in :func:`~lvgp.base.fitting.fit_stochastic`;
* :class:`RMSprop` -- RMSprop on the full-batch objective (the categorical latent GP's);
* :class:`EM` -- variational EM, closed-form steps over the whole corpus (supervised LDA's);
* :class:`MiniBatch` -- stochastic steps over mini-batches of the training data
  (:func:`~lvgp.base.fitting.fit_stochastic`);
* :class:`EarlyStopping` -- score held-out data while fitting and stop when it stops improving.

Every field defaults to ``None``, which stands for *the estimator's* default (each estimator's
docstring lists them): ``GPLVSMRegressor(LDKSpec.paper(), optimizer=LBFGS(max_iter=50))`` changes the
budget and keeps the estimator's tolerance. The objects are frozen (``options.replace(lr=0.1)`` makes
a new one) and speak scikit-learn's parameter protocol, so that ``clone``, ``get_params(deep=True)``,
``set_params(optimizer__max_iter=50)`` and ``GridSearchCV(est, {"optimizer__lr": [0.01, 0.1]})`` work;
a saved estimator writes them as their fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Self

from .constraints import Boolean, Constraint, Integer, Options, Real, check_values

__all__ = [
    "FitOptions",
    "LBFGS",
    "Adam",
    "RMSprop",
    "EM",
    "MiniBatch",
    "EarlyStopping",
    "FitOptionsArgument",
    "FitOptionsMixin",
    "EARLY_STOPPING",
]

#: the early-stopping policies: after the held-out fit, keep its best iterate (``"keep-best"``) or
#: refit on all the training data for the best iteration count (``"refit"``)
EARLY_STOPPING = ("keep-best", "refit")


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """The base of the fit-option objects: frozen fields, ``None`` for the estimator's default."""

    #: the constraints of the fields (``None`` is always allowed: the estimator's default)
    _constraints: ClassVar[dict[str, list]] = {}

    def __repr__(self) -> str:
        """The fields that are set (as scikit-learn prints estimators)."""
        fields = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items() if v is not None)
        return f"{type(self).__name__}({fields})"

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The fields, as scikit-learn's ``get_params`` (for ``clone`` and ``optimizer__*`` grids)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __sklearn_clone__(self) -> Self:
        return self  # frozen: a clone may share it

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (an unknown name is a ``TypeError`` naming it and the fields)."""
        unknown = sorted(set(changes) - set(self.get_params()))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} has no field {', '.join(unknown)}; its fields: {sorted(self.get_params())}"
            )
        return dataclasses.replace(self, **changes)

    def check(self, name: str) -> Self:
        """``TypeError``/``ValueError`` naming the field (``optimizer.max_iter``) for a bad value."""
        table = {k: [None, *v] for k, v in self._constraints.items()}
        check_values(self.get_params(), table, prefix=f"{name}.")
        return self

    def filled(self, defaults: FitOptions) -> Self:
        """This object with each ``None`` field taken from ``defaults`` (an estimator's default
        options, of the same type or another: a field it lacks stays ``None``)."""
        given = defaults.get_params()
        return self.replace(**{k: given.get(k) for k, v in self.get_params().items() if v is None})

    def to_plain(self) -> dict[str, Any]:
        """``{"type": name, "fields": {...}}``, plain values a saved file holds."""
        return {"type": type(self).__name__, "fields": self.get_params()}

    @staticmethod
    def from_plain(plain: dict[str, Any]) -> FitOptions:
        """The object :meth:`to_plain` wrote."""
        kinds = {cls.__name__: cls for cls in FitOptions.__subclasses__()}  # every kind, EM included
        if plain.get("type") not in kinds:
            raise TypeError(f"unknown fit options {plain.get('type')!r}; known: {sorted(kinds)}")
        return kinds[plain["type"]](**plain["fields"])


_BUDGET = [Integer(1)]
_TOL = [Real(0)]
_LR = [Real(0, open_low=True)]


@dataclasses.dataclass(frozen=True, repr=False)
class LBFGS(FitOptions):
    """scipy's L-BFGS-B on the full-batch objective (a deterministic one).

    Args:
        max_iter: the budget in iterations.
        tol: converged when the objective decreases by less than this, relative, in an iteration.
    """

    max_iter: int | None = None
    tol: float | None = None

    _constraints: ClassVar[dict[str, list]] = {"max_iter": _BUDGET, "tol": _TOL}


@dataclasses.dataclass(frozen=True, repr=False)
class Adam(FitOptions):
    """Adam on the full-batch objective: a deterministic one, or a Monte Carlo estimate (variational
    word vectors), then stopped by :class:`~lvgp.base.fitting.BestOfWindowStopping`.

    Args:
        max_iter: the budget in iterations.
        lr: the learning rate.
        tol: converged when the best objective of the last ``convergence_window`` iterations improves
            by less than this, relative, on the best before.
        convergence_window: that window, in iterations.
    """

    max_iter: int | None = None
    lr: float | None = None
    tol: float | None = None
    convergence_window: int | None = None

    _constraints: ClassVar[dict[str, list]] = {
        "max_iter": _BUDGET,
        "lr": _LR,
        "tol": _TOL,
        "convergence_window": [Integer(1)],
    }


@dataclasses.dataclass(frozen=True, repr=False)
class RMSprop(FitOptions):
    """RMSprop on the full-batch objective (the categorical latent GP paper's optimizer); the fields
    mean what :class:`Adam`'s do.

    Args:
        max_iter: the budget in iterations.
        lr: the learning rate.
        tol: converged when the objective's plateau (the estimator's rule over ``convergence_window``)
            improves by less than this, relative.
        convergence_window: that window, in iterations.
    """

    max_iter: int | None = None
    lr: float | None = None
    tol: float | None = None
    convergence_window: int | None = None

    _constraints: ClassVar[dict[str, list]] = Adam._constraints


@dataclasses.dataclass(frozen=True, repr=False)
class EM(FitOptions):
    """Variational EM, a closed-form E-step and M-step per iteration over the whole corpus (supervised
    LDA's, Blei & McAuliffe 2007).

    Args:
        max_iter: the budget in EM iterations.
        tol: converged when an iteration changes the corpus ELBO by less than this, relative (the
            paper: 1e-4, "0.01%").
    """

    max_iter: int | None = None
    tol: float | None = None

    _constraints: ClassVar[dict[str, list]] = {"max_iter": [Integer(1)], "tol": [Real(0, open_low=True)]}


@dataclasses.dataclass(frozen=True, repr=False)
class MiniBatch(FitOptions):
    """Stochastic steps over mini-batches of the training data (a fresh permutation each epoch).

    Args:
        batch_size: training documents (or pairs) per step.
        max_steps: the budget in steps (where the estimator counts steps).
        max_epochs: the budget in passes over the data (a cap beside ``max_steps`` where both are
            counted).
        lr: Adam's learning rate.
        tol: converged when the loss's plateau (the estimator's rule over ``convergence_window``)
            improves by less than this, relative.
        convergence_window: the plateau's window.
        ngd_lr: the natural-gradient step size of a variational distribution over inducing values, in
            (0, 1] (:class:`~lvgp.LDKGPClassifier`; an estimator without one refuses it).
        compile: ``torch.compile`` in the fit. :class:`~lvgp.SparseGPLVSMRegressor` and the variational
            :class:`~lvgp.LDKGPClassifier` of more than two classes, on a GPU, with their default kernels and a
            Nystrom map (what ``approximation="auto"`` picks at review lengths; the conditions:
            :func:`lvgp.models.fused_step.unsupported` and :func:`~lvgp.models.fused_step.unsupported_classifier`),
            in one process: the steps after the first evaluate the fused objective (:mod:`lvgp.models.fused_step`:
            bags built on the host, the kernel and the ELBO one compiled graph, forward and backward) with
            torch's fused Adam -- the eager step's values to rounding with a small fraction of its operators,
            each of which a GPU launches. On a CPU those steps were slower than the eager ones (their
            hand-blocked landmark columns), after a warm-up of about a minute on a fresh machine
            (:func:`~lvgp.models.fused_step.fused_steps` takes them there too); so on a CPU, as for other
            kernels, the Nystrom LDK's blocks come from ``torch.compile`` instead
            (:func:`lvgp.kernels.compiled_blocks`: less time a step at review lengths on some CPUs and
            more on others; on a GPU it changes nothing for them). The figures: ``benchmarks/README.md``.
            Values move by rounding; where compiling fails it warns and computes eagerly. Default off.
    """

    batch_size: int | None = None
    max_steps: int | None = None
    max_epochs: int | None = None
    lr: float | None = None
    tol: float | None = None
    convergence_window: int | None = None
    ngd_lr: float | None = None
    compile: bool | None = None

    _constraints: ClassVar[dict[str, list]] = {
        "batch_size": [Integer(1)],
        "max_steps": _BUDGET,
        "max_epochs": _BUDGET,
        "lr": _LR,
        "tol": _TOL,
        "convergence_window": [Integer(1)],
        "ngd_lr": [Real(0, 1, open_low=True)],
        "compile": [Boolean()],
    }


@dataclasses.dataclass(frozen=True, repr=False)
class EarlyStopping(FitOptions):
    """Hold out part of the training data (or score the validation set ``fit`` is given), score it
    while fitting, and stop when it has not improved for ``n_iter_no_change`` scorings' worth of
    iterations.

    Args:
        validation_fraction: the held-out share of the training documents.
        n_iter_no_change: the patience, in iterations (epochs for mini-batch fits).
        validation_interval: score every this many iterations.
        policy: then keep the held-out fit's best iterate (``"keep-best"``) or refit on all the
            training documents for the best iteration count (``"refit"``).
    """

    validation_fraction: float | None = None
    n_iter_no_change: int | None = None
    validation_interval: int | None = None
    policy: str | None = None

    _constraints: ClassVar[dict[str, list]] = {
        "validation_fraction": [Real(0, 1, open_low=True, open_high=True)],
        "n_iter_no_change": [Integer(1)],
        "validation_interval": [Integer(1)],
        "policy": [Options(*EARLY_STOPPING)],
    }


class FitOptionsArgument(Constraint):
    """The constraint of an estimator's ``optimizer=`` or ``early_stopping=``: one of ``kinds``, whose
    fields are checked here (the errors name ``optimizer.<field>``)."""

    def __init__(self, *kinds: type[FitOptions], name: str) -> None:
        self.kinds, self.name = kinds, name

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, self.kinds)

    def problem(self, value: Any) -> str | None:
        value.check(self.name)  # raises, naming the field
        return None

    def describe(self) -> str:
        names = [f"lvgp.{k.__name__}(...)" for k in self.kinds]
        return ", ".join(names[:-1]) + (" or " if len(names) > 1 else "") + names[-1]


#: the first format of saved estimators whose parameters hold fit-option objects (formats 1 and 2 hold
#: the flat arguments below)
FIT_OPTIONS_FORMAT = 3

#: the flat arguments that the fit-option objects replaced (saved files of formats 1 and 2 hold them)
_FLAT_OPTIMIZER_FIELDS = (
    "max_iter",
    "lr",
    "tol",
    "convergence_window",
    "batch_size",
    "max_steps",
    "max_epochs",
    "ngd_lr",
)
_FLAT_EARLY_STOPPING_FIELDS = ("validation_fraction", "n_iter_no_change", "validation_interval")


class FrozenParamsMixin:
    """``set_params`` of an estimator whose parameters hold frozen objects (fit options, an
    :class:`~lvgp.kernels.LDKSpec`): ``set_params(<param>__<field>=value)`` replaces the object by a
    copy with that field changed (scikit-learn would set the field in place, which a frozen object
    refuses), so that ``GridSearchCV`` grids over its fields work. A mixin declares a parameter
    frozen by a method ``_replaced_<param>(fields) -> object``; the rest goes to scikit-learn's
    ``set_params``. The one ``set_params`` of lvgp's estimators: the mixins that add frozen
    parameters (:class:`FitOptionsMixin`, ``lvgp.models.mixins.KernelParamsMixin``) give the
    replacement, not another ``set_params``, so their order in a class's bases does not matter."""

    get_params: Callable[..., dict]

    def set_params(self, **params: Any) -> Any:
        """Set parameters (scikit-learn's protocol) and return the estimator: ``<param>__<field>`` of a
        frozen parameter sets that field (a new object replaces the frozen one)."""
        nested: dict[str, dict[str, Any]] = {}
        rest: dict[str, Any] = {}
        for key, value in params.items():
            head, sep, field = key.partition("__")
            if sep and hasattr(self, f"_replaced_{head}"):
                nested.setdefault(head, {})[field] = value
            else:
                rest[key] = value
        if rest:
            super().set_params(**rest)  # type: ignore[misc]  # BaseEstimator's
        for head, fields in nested.items():
            if head not in self.get_params(deep=False):
                raise ValueError(f"{head}__{next(iter(fields))}: {type(self).__name__} has no {head} parameter")
            setattr(self, head, getattr(self, f"_replaced_{head}")(fields))
        return self


class FitOptionsMixin(FrozenParamsMixin):
    """``optimizer=`` and ``early_stopping=`` of an estimator (:mod:`lvgp.base.fit_options`): a field
    left ``None`` is the estimator's default (:attr:`_optimizer_defaults`, one per kind of optimizer it
    takes, and :attr:`_early_stopping_default`); ``set_params(optimizer__lr=...)`` replaces the frozen
    object (scikit-learn would set the field in place), so that ``GridSearchCV`` grids over its fields
    work."""

    #: the estimator's defaults, one object per kind of optimizer it takes; ``optimizer=None`` is the
    #: kind :meth:`_default_optimizer_kind` names (the first, unless the estimator decides otherwise)
    _optimizer_defaults: tuple[FitOptions, ...] = ()
    #: the estimator's default early stopping (``None``: it takes none)
    _early_stopping_default: EarlyStopping | None = None
    #: fields of its optimizers' kinds that the estimator has no use for (setting one is an error)
    _unused_optimizer_fields: tuple[str, ...] = ()
    #: the parameter whose value decides the kind of optimizer (e.g. the GP classifier's ``inference``):
    #: ``optimizer=`` must then be that kind (:meth:`_default_optimizer_kind`); ``None``: any it takes
    _optimizer_kind_set_by: str | None = None
    optimizer: Any
    early_stopping: Any
    get_params: Callable[..., dict]

    def _replaced_optimizer(self, fields: dict[str, Any]) -> FitOptions:
        """``optimizer__<field>=``: the optimizer with ``fields`` changed (with ``optimizer=None``, one
        of the default kind)."""
        current = self.optimizer if self.optimizer is not None else self._default_optimizer_kind()()
        return current.replace(**fields)

    def _replaced_early_stopping(self, fields: dict[str, Any]) -> FitOptions:
        """``early_stopping__<field>=``: the early stopping with ``fields`` changed (``True``: the
        default's); refused while early stopping is off."""
        current = EarlyStopping() if self.early_stopping is True else self.early_stopping
        if not isinstance(current, FitOptions):
            raise ValueError(
                f"early_stopping__{next(iter(fields))}: early stopping is off (early_stopping={current!r}); pass "
                "early_stopping=lvgp.EarlyStopping(...) to set its fields"
            )
        return current.replace(**fields)

    def _check_fit_options(self) -> None:
        """The fit options as this estimator takes them (a kind it takes, no field it has no use for),
        checked with the other parameters before any work (:func:`~lvgp.base.constraints.check_params`)."""
        optimizer = self._optimizer_options()
        stopping = self._early_stopping_options()
        if stopping is not None and stopping.validation_interval is not None:
            # early stopping scores every validation_interval iterations (epochs): one beyond the
            # budget would score nothing, and a refit would get no iteration count
            name = next((f for f in ("max_iter", "max_epochs") if getattr(optimizer, f, None) is not None), None)
            if name is not None and int(stopping.validation_interval) > int(getattr(optimizer, name)):
                raise ValueError(
                    f"early_stopping.validation_interval={stopping.validation_interval} exceeds the optimizer's "
                    f"{name}={getattr(optimizer, name)}: nothing would be validated; take an interval of at most "
                    f"{getattr(optimizer, name)}"
                )
        setting = self._optimizer_kind_set_by
        wanted = self._default_optimizer_kind()
        if setting is not None and self.optimizer is not None and not isinstance(self.optimizer, wanted):
            raise ValueError(
                f"optimizer: {setting}={getattr(self, setting)!r} fits by lvgp.{wanted.__name__}(...); "
                f"got {self.optimizer!r}"
            )

    def _default_optimizer_kind(self) -> type[FitOptions]:
        """The kind of optimizer ``optimizer=None`` stands for."""
        return type(self._optimizer_defaults[0])

    def _optimizer_options(self) -> Any:
        """The optimizer of the fit, every field filled (the user's fields, then the estimator's
        defaults for its kind)."""
        chosen = self._default_optimizer_kind()() if self.optimizer is None else self.optimizer
        default = next((d for d in self._optimizer_defaults if type(d) is type(chosen)), None)
        if default is None:
            raise TypeError(f"optimizer: {type(self).__name__} takes {self._optimizer_kinds_text()}; got {chosen!r}")
        unused = [f for f in self._unused_optimizer_fields if getattr(chosen, f, None) is not None]
        if unused:
            raise ValueError(
                f"optimizer.{unused[0]}: {type(self).__name__} does not use it ({type(chosen).__name__}'s fields "
                f"it uses: {[f for f in chosen.get_params() if f not in self._unused_optimizer_fields]})"
            )
        return chosen.filled(default)

    def _optimizer_kinds_text(self) -> str:
        return " or ".join(f"lvgp.{type(d).__name__}(...)" for d in self._optimizer_defaults)

    def _early_stopping_options(self) -> Any:
        """Early stopping (an :class:`EarlyStopping`), every field filled, or ``None`` when it is off."""
        chosen = getattr(self, "early_stopping", None)  # None: the estimator takes none
        if chosen is False or chosen is None:
            return None
        chosen = EarlyStopping() if chosen is True else chosen
        assert self._early_stopping_default is not None
        return chosen.filled(self._early_stopping_default)

    def _stopping(self) -> Any:
        """The validation's settings: ``early_stopping``'s, or the defaults when it is off (a
        validation set given to ``fit`` is scored all the same)."""
        stopping = self._early_stopping_options()
        if stopping is None:
            assert self._early_stopping_default is not None
            return self._early_stopping_default
        return stopping

    @classmethod
    def _legacy_optimizer_kind(cls, flat: dict[str, Any], params: dict[str, Any]) -> type[FitOptions]:
        """The kind of optimizer a file of format 1 or 2 fitted with, from its flat fit arguments
        (``flat``) and its other arguments (``params``, the kernel among them)."""
        return type(cls._optimizer_defaults[0])

    @classmethod
    def _flat_fit_options(cls, params: dict) -> dict:
        """A file of formats 1 and 2 held the fit options as flat arguments (``max_iter=``, ``lr=``,
        ``early_stopping=True``, ``n_iter_no_change=``, ...): gathered here into the objects."""
        flat = {k: params.pop(k) for k in (*_FLAT_OPTIMIZER_FIELDS, "optimizer") if k in params}
        kind = cls._legacy_optimizer_kind(flat, params)
        fields = set(kind().get_params())
        params["optimizer"] = kind(**{k: v for k, v in flat.items() if k in fields})
        stopping = {k: params.pop(k) for k in _FLAT_EARLY_STOPPING_FIELDS if k in params}
        if cls._early_stopping_default is not None:
            on = params.get("early_stopping", False)
            policy = on if isinstance(on, str) else None
            params["early_stopping"] = EarlyStopping(**stopping, policy=policy) if on else False
        return params
