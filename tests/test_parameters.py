"""Parameter validation of every estimator (issues 28 and 30): each class has one constraints table
that covers exactly its parameters, and ``fit`` reads it first -- every bad value (0, -1, NaN, inf,
a float where an integer is expected, a wrong type) raises a ``ValueError`` / ``TypeError`` that
names the parameter, before any work."""

from __future__ import annotations

import math
import numbers

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lvgp
from lvgp.base.constraints import Integer, Real, check_params
from lvgp.kernels import LDKSpec
from lvgp.kernels.spec import KernelArgument

TEXTS = ["good film", "bad film", "great plot", "awful plot", "fine acting", "poor acting"]
LABELS = np.array([1, 0, 1, 0, 1, 0])


#: every estimator of lvgp.models and lvgp.baselines, found by walking them (a new one cannot be left out)
ESTIMATORS = lvgp.all_estimators()


def test_every_exported_estimator_is_covered():
    names = {cls.__name__ for cls in ESTIMATORS}
    from sklearn.base import BaseEstimator

    exported = {
        n for n in lvgp.__all__ if isinstance(getattr(lvgp, n), type) and issubclass(getattr(lvgp, n), BaseEstimator)
    }
    assert exported <= names
    assert {"GPLVSMRegressor", "SparseGPLVSMRegressor", "LDKGPClassifier", "LatentSMMClassifier", "LDKMatcher"} <= names
    assert {"CLGP", "SLDARegressor", "SLDAClassifier", "LDARegression", "GPRBFRegressor"} <= names


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_arguments_after_the_first_are_keyword_only(cls):
    """``Estimator(first, *, ...)``: the kernel, encoder or model kind may be positional, nothing after it
    (issue 38), so that adding or reordering a parameter never changes what a call means."""
    import inspect

    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert sum(p.kind == p.POSITIONAL_OR_KEYWORD for p in params) <= 1


def fit_args(cls: type) -> tuple:
    """Tiny valid training data for ``cls.fit``."""
    if cls.__name__ in ("LDKMatcher", "KernelCCAMatcher"):
        return (TEXTS, [t.upper() for t in TEXTS])
    if cls.__name__ in ("CLGP", "UnigramDirichletMultinomial", "BigramDirichletMultinomial"):
        return (np.array([[0, 1], [1, 0], [0, 0], [1, 1]]), [2, 2])
    if "Regress" in cls.__name__ or cls.__name__ == "LDARegression":
        return (TEXTS, LABELS.astype(float))
    return (TEXTS, LABELS)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_the_constraints_table_covers_exactly_the_parameters(cls):
    params = set(cls().get_params(deep=False))
    assert set(cls._parameter_constraints) == params
    check_params(cls())  # the defaults are valid


def _numeric(cls: type) -> list[tuple[str, list]]:
    return [
        (name, constraints)
        for name, constraints in cls._parameter_constraints.items()
        if any(isinstance(c, (Integer, Real)) for c in constraints)
    ]


def _accepted(constraints: list, value) -> bool:
    if value is None:
        return None in constraints
    typed = [c for c in constraints if c is not None and c.accepts_type(value)]
    return any(c.problem(value) is None for c in typed)


def _spec_fields() -> list[tuple[str, list]]:
    """The numeric fields of LDKSpec, as ``kernel__<field>`` parameters of the LDK estimators."""
    from lvgp.kernels.spec import _CONSTRAINTS

    return [
        (f"kernel__{name}", constraints)
        for name, constraints in _CONSTRAINTS.items()
        if any(isinstance(c, (Integer, Real)) for c in constraints)
    ]


LDK_ESTIMATORS = [
    cls
    for cls in ESTIMATORS
    if any(isinstance(c, KernelArgument) for c in cls._parameter_constraints.get("kernel", []))
]
CASES = [(cls, name, constraints) for cls in ESTIMATORS for name, constraints in _numeric(cls)]
CASES += [(cls, name, constraints) for cls in LDK_ESTIMATORS for name, constraints in _spec_fields()]


def _shown(name: str) -> str:
    """How an error names the parameter: ``kernel.rho`` for the spec's field ``kernel__rho``."""
    return name.replace("__", r"\.")


def test_every_ldk_estimator_takes_a_kernel():
    assert {c.__name__ for c in LDK_ESTIMATORS} == {
        "GPLVSMRegressor",
        "SparseGPLVSMRegressor",
        "LDKGPClassifier",
        "LatentSMMClassifier",
        "LDKMatcher",
    }


@pytest.mark.parametrize("cls,name,constraints", CASES, ids=[f"{c.__name__}.{n}" for c, n, _ in CASES])
def test_fit_rejects_every_bad_number_naming_the_parameter(cls, name, constraints):
    bad = [v for v in (0, -1, math.nan, math.inf, 2.5, "x") if not _accepted(constraints, v)]
    assert bad, f"{cls.__name__}.{name} accepts 0, -1, NaN, inf, 2.5 and a string"
    for value in bad:
        est = cls().set_params(**{name: value})
        with pytest.raises((ValueError, TypeError), match=rf"^{_shown(name)} must be"):
            est.fit(*fit_args(cls))


@given(
    index=st.integers(0, len(CASES) - 1),
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(2**40), 2**40),
        st.none(),
        st.booleans(),
        st.text(max_size=3),
    ),
)
def test_the_check_agrees_with_the_table_on_any_value(index, value):
    """Any value: ``check_params`` accepts it exactly when the table does, and a rejection names
    the parameter (property-based, over every numeric parameter of every estimator)."""
    cls, name, constraints = CASES[index]
    est = cls().set_params(**{name: value})
    if _accepted(constraints, value):
        try:
            check_params(est)
        except ValueError as err:
            # a spec field may need another: the message names the spec field at fault, e.g.
            # identity_weight_prior_sd without identity_weight, or rho=None with variational=True
            assert name.startswith("kernel__") and str(err).startswith("kernel."), err
    else:
        with pytest.raises((ValueError, TypeError), match=rf"^{_shown(name)} must be"):
            check_params(est)


def test_integers_of_numpy_are_integers_and_bools_are_not():
    reg = lvgp.GPLVSMRegressor(LDKSpec(latent_dim=np.int64(3)), optimizer=lvgp.LBFGS(max_iter=np.int32(2)))
    check_params(reg)
    with pytest.raises(TypeError, match=r"kernel\.latent_dim must be an integer"):
        check_params(reg.set_params(kernel__latent_dim=True))
    assert isinstance(np.int64(3), numbers.Integral)


FIT_OPTION_ESTIMATORS = [cls for cls in ESTIMATORS if getattr(cls, "_optimizer_defaults", ())]


@pytest.mark.parametrize("cls", FIT_OPTION_ESTIMATORS, ids=lambda c: c.__name__)
def test_fit_options_an_estimator_cannot_use_are_refused_with_the_other_parameters(cls):
    """Issue 38: ``optimizer=`` of a kind the estimator does not take (a ``TypeError`` naming the kinds
    it takes), or with a field it has no use for (a ``ValueError`` naming ``optimizer.<field>``), fails
    in ``check_params`` -- where ``fit`` starts -- before any work."""
    from lvgp.base import fit_options

    kinds = {type(d) for d in cls._optimizer_defaults}
    other = next(k for k in (fit_options.LBFGS, fit_options.Adam, fit_options.MiniBatch) if k not in kinds)
    with pytest.raises(TypeError, match="optimizer must be None or"):
        check_params(cls(optimizer=other()))
    for field in cls._unused_optimizer_fields:
        kind = next(k for k in kinds if field in k().get_params())
        with pytest.raises(ValueError, match=rf"optimizer\.{field}: {cls.__name__} does not use it"):
            check_params(cls(optimizer=kind(**{field: True if field == "compile" else 1})))
    check_params(cls())  # the defaults pass
    assert {type(d) for d in cls._optimizer_defaults} <= set(fit_options.FitOptions.__subclasses__())


@pytest.mark.parametrize(
    "cls, setting, value, wrong",
    [
        ("LDKGPClassifier", "inference", "dirichlet", "MiniBatch"),
        ("GPEmbeddingLogisticRegression", "posterior", "normal", "LBFGS"),
    ],
)
def test_an_optimizer_of_another_kind_than_the_setting_fits_by_is_refused(cls, setting, value, wrong):
    """Where a setting decides how the estimator fits (the GP classifier's inference, the covariate
    embedding's posterior), an optimizer of another kind is a ValueError naming both."""
    from lvgp.base import fit_options

    estimator = getattr(lvgp, cls)(**{setting: value, "optimizer": getattr(fit_options, wrong)()})
    with pytest.raises(ValueError, match=rf"optimizer: {setting}='{value}' fits by lvgp\."):
        check_params(estimator)
