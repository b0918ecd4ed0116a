"""Every fit option at its bounds (issue 59): each field of each kind of ``optimizer=`` (and of
``early_stopping=``) that an estimator takes, set to the extreme values its constraint accepts --
the lowest (``max_iter=1``, ``tol=0``, ``batch_size=1``), the highest or a huge one (``ngd_lr=1``,
``tol=1e300``, ``max_iter=10**400``, ``batch_size=10**12``), just inside an open bound (``lr``
near 0, ``validation_fraction`` near 0 and 1) -- either fits and predicts finite values, or is
refused with a ``ValueError``/``TypeError`` naming ``optimizer.<field>`` (``early_stopping.<field>``),
or -- a learning rate of 1e300 -- diverges with the error that says to lower ``lr``.
Never a crash from inside torch, scipy or the loop.

The estimators and their fits are ``tests/test_device.py``'s cases (every torch estimator, tiny)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from lvgp.base import fit_options
from lvgp.base.constraints import Integer, Real

from .test_device import CASES, Case

#: the extreme values of a field, from its constraint
HUGE_INT = 10**400
#: the fields that are budgets (a huge one is paired with a stopping rule that ends the fit at once)
BUDGETS = ("max_iter", "max_steps", "max_epochs")


def _extremes(constraint) -> list:
    if isinstance(constraint, Integer):
        return [constraint.low if constraint.low is not None else 0, HUGE_INT, 10**12]
    if isinstance(constraint, Real):
        low = constraint.low if constraint.low is not None else -1e300
        high = constraint.high if constraint.high is not None else 1e300
        values = [low if not constraint.open_low else low + 1e-12]
        values.append(high if not constraint.open_high else high - 1e-12)
        return values
    return []


def _cheap(kind: type, estimator: type) -> dict:
    """The other fields of a fit-option object at cheap values (small budgets, short windows), those
    the estimator uses."""
    cheap = {"max_iter": 2, "max_steps": 2, "max_epochs": 2, "convergence_window": 1, "batch_size": 8}
    fields = set(kind().get_params()) - set(getattr(estimator, "_unused_optimizer_fields", ()))
    return {k: v for k, v in cheap.items() if k in fields}


def _cases() -> list[tuple[Case, str, type, str, object]]:
    out = []
    for case in CASES:
        est = case.make()
        kinds = [type(d) for d in getattr(type(est), "_optimizer_defaults", ())]
        unused = set(getattr(type(est), "_unused_optimizer_fields", ()))
        for kind in kinds:
            for field, constraints in kind._constraints.items():
                if field in unused:
                    continue
                for value in _extremes(constraints[0]):
                    out.append((case, "optimizer", kind, field, value))
        if "early_stopping" in est.get_params():
            for field, constraints in fit_options.EarlyStopping._constraints.items():
                for value in _extremes(constraints[0]):
                    out.append((case, "early_stopping", fit_options.EarlyStopping, field, value))
    return out


CASES_AT_BOUNDS = _cases()


def _id(entry) -> str:
    case, argument, kind, field, value = entry
    shown = "10**400" if value == HUGE_INT else repr(value)
    return f"{case.name}-{kind.__name__}.{field}={shown}"


@pytest.mark.parametrize("entry", CASES_AT_BOUNDS, ids=[_id(e) for e in CASES_AT_BOUNDS])
def test_a_fit_option_at_its_bound_fits_or_is_refused_by_name(entry):
    case, argument, kind, field, value = entry
    est = case.make()
    if argument == "optimizer":
        settings = _cheap(kind, type(est))
        if field in BUDGETS and value >= 10**12:
            # a huge budget that the stopping rule ends at once: its checks, not a long fit (CLGP's KL
            # warm-up is a fraction of the budget, documented: off here)
            settings["tol"] = 1e300
            if "kl_warmup" in est.get_params():
                est.set_params(kl_warmup=0.0)
        options = kind(**{**settings, field: value})
    else:  # early stopping, beside a cheap optimizer of the case's kind (or the estimator's default)
        given = est.get_params()["optimizer"]
        chosen = type(given) if given is not None else type(type(est)._optimizer_defaults[0])
        est.set_params(optimizer=chosen(**_cheap(chosen, type(est))))
        options = fit_options.EarlyStopping(**{field: value})
    est.set_params(**{argument: options})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny budgets, windows of one: convergence warnings by design
        try:
            case.fit(est)
        except (ValueError, TypeError) as err:
            message = str(err)
            # the field, or the argument whose kind the case refuses (a variational GP-LVSM takes Adam only)
            named = any(f"{argument}{sep}" in message for sep in (f".{field}", ":", "=")) or f"{field}=" in message
            assert named, f"refused without naming {argument}.{field}: {message}"
            return
        except (FloatingPointError, RuntimeError) as err:  # a learning rate too large: the fit says to lower it
            assert field in ("lr", "ngd_lr") and "lower lr" in str(err), f"{argument}.{field}={value!r}: {err}"
            return
        out = np.asarray(case.predict(est), dtype=float)
    assert np.isfinite(out).all(), f"{argument}.{field}={value!r} predicts non-finite values"
    assert not math.isnan(float(np.sum(out)))
