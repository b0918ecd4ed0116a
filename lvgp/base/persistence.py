"""What lvgp's ``save``/``load`` share: estimator parameters as plain values that
``torch.load(weights_only=True)`` reads back, and reading a saved file with one kind of error.

* :func:`plain_value` turns a parameter into values the safe unpickler accepts: numpy scalars
  become Python numbers, tuples and lists are kept (a tuple tagged, so that it comes back a tuple),
  a ``torch.device`` its string, a numpy ``Generator`` / ``RandomState`` its bit generator's state
  (tagged); anything else is a ``TypeError`` naming the parameter, raised by ``save`` before it
  writes anything. :func:`restored_value` inverts it.
* :func:`read_saved` reads a file written by an estimator's ``save``: a missing, empty,
  truncated, corrupted or foreign file is a ``ValueError`` naming the file and what is wrong (never
  a bare ``EOFError``, ``RuntimeError`` or unpickling error).
"""

from __future__ import annotations

import numbers
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["plain_value", "restored_value", "classes_to_plain", "classes_from_plain", "read_saved", "SavedFileError"]

_TUPLE = "__lvgp_tuple__"
_GENERATOR = "__lvgp_numpy_generator__"
_RANDOM_STATE = "__lvgp_numpy_random_state__"


class SavedFileError(ValueError):
    """A file that is not a readable saved lvgp estimator (a ``ValueError``)."""


def plain_value(value: Any, name: str) -> Any:
    """``value`` as plain values (module docstring); ``TypeError`` naming ``name`` otherwise."""
    if value is None or type(value) in (bool, int, float, str):  # exactly: numpy's float64 is a float
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, np.str_):
        return str(value)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, tuple):
        return {_TUPLE: [plain_value(v, f"{name}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [plain_value(v, f"{name}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: plain_value(v, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(value, np.random.Generator):
        bit = value.bit_generator
        return {_GENERATOR: type(bit).__name__, "state": _plain_state(bit.state)}
    if isinstance(value, np.random.RandomState):
        return {_RANDOM_STATE: _plain_state(value.get_state(legacy=False))}
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return torch.as_tensor(np.asarray(value)).clone()
    raise TypeError(
        f"save() cannot write {name}={value!r} ({type(value).__name__}): only numbers, strings, bools, None, "
        "arrays, numpy random generators and lists, tuples or dicts of these are saved safely"
    )


def _plain_state(state: Any) -> Any:
    if isinstance(state, dict):
        return {k: _plain_state(v) for k, v in state.items()}
    if isinstance(state, np.ndarray):
        return {"__lvgp_array__": state.tolist(), "dtype": state.dtype.str}
    return plain_value(state, "random_state")


def _restored_state(state: Any) -> Any:
    if isinstance(state, dict):
        if "__lvgp_array__" in state:
            return np.asarray(state["__lvgp_array__"], dtype=np.dtype(state["dtype"]))
        return {k: _restored_state(v) for k, v in state.items()}
    return state


def restored_value(value: Any) -> Any:
    """The inverse of :func:`plain_value`."""
    if isinstance(value, list):
        return [restored_value(v) for v in value]
    if isinstance(value, dict):
        if _TUPLE in value:
            return tuple(restored_value(v) for v in value[_TUPLE])
        if _GENERATOR in value:
            bit = getattr(np.random, value[_GENERATOR])()
            bit.state = _restored_state(value["state"])
            return np.random.Generator(bit)
        if _RANDOM_STATE in value:
            rs = np.random.RandomState()
            rs.set_state(_restored_state(value[_RANDOM_STATE]))
            return rs
        return {k: restored_value(v) for k, v in value.items()}
    return value


def classes_to_plain(classes: np.ndarray) -> dict:
    """A classifier's ``classes_`` as plain values: numbers, strings and bytes by value, dates and
    durations (``datetime64`` / ``timedelta64``) as integers of their unit, anything else (an object
    array) element by element through :func:`plain_value` (``TypeError`` naming ``classes_``)."""
    dtype = classes.dtype
    if dtype.kind in "Mm":
        return {"dtype": dtype.str, "values": classes.view(np.int64).tolist()}
    if dtype.kind in "biuf":
        return {"dtype": dtype.str, "values": classes.tolist()}
    if dtype.kind == "U":
        return {"dtype": dtype.str, "values": [str(v) for v in classes.tolist()]}
    if dtype.kind == "S":
        return {"dtype": dtype.str, "values": [list(v) for v in classes.tolist()]}
    return {"dtype": "object", "values": [plain_value(v, f"classes_[{i}]") for i, v in enumerate(classes.tolist())]}


def classes_from_plain(plain: dict) -> np.ndarray:
    """The inverse of :func:`classes_to_plain`."""
    dtype = plain["dtype"]
    if dtype == "object":
        return np.array([restored_value(v) for v in plain["values"]] + [None], dtype=object)[:-1]
    dtype = np.dtype(dtype)
    if dtype.kind in "Mm":
        return np.asarray(plain["values"], dtype=np.int64).view(dtype)
    if dtype.kind == "S":
        return np.array([bytes(v) for v in plain["values"]], dtype=dtype)
    return np.asarray(plain["values"], dtype=dtype)


def read_saved(path: str | Path, what: str, formats: tuple[str, ...]) -> dict:
    """The payload of ``path`` (``torch.load(weights_only=True)``, on the CPU), checked to be a
    dict of one of ``formats`` (the first is the current one; ``what``: the class, for messages); a
    :class:`SavedFileError` (``ValueError``) naming the file and what is wrong for anything else."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise SavedFileError(f"{path} is a directory, not a saved {what}")
    if path.stat().st_size == 0:
        raise SavedFileError(f"{path} is empty: not a saved {what}")
    try:
        payload = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SavedFileError(
            f"{path} holds objects a saved {what} never contains, or is damaged ({first[:200]}); lvgp loads only "
            "what its save() writes, with torch.load(weights_only=True)"
        ) from None
    except Exception as err:  # the unpickler and the zip reader raise many kinds on damaged input
        raise SavedFileError(
            f"{path} is damaged or not a saved {what} ({type(err).__name__}: {str(err)[:200]})"
        ) from None
    if not isinstance(payload, dict) or "format" not in payload:
        raise SavedFileError(f"{path} is not a saved {what} (expected format {formats[0]!r})")
    found = payload["format"]
    if found not in formats:
        family = formats[0].rsplit("/", 1)[0]
        if isinstance(found, str) and found.rsplit("/", 1)[0] == family:
            raise SavedFileError(
                f"{path} is a saved {what} of format {found!r}, which this lvgp {_version()} cannot read (it "
                f"reads {', '.join(map(repr, formats))}): load it with the lvgp that saved it"
            )
        raise SavedFileError(f"{path} is not a saved {what} (format {found!r}; expected {formats[0]!r})")
    return payload


def _version() -> str:
    from .._version import __version__

    return __version__
