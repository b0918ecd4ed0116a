"""What the comparative studies know: every study, and every method each study can run.

A **method** is one entry (:class:`Method`): its name on the command line, its label in tables
and figures, a factory that builds the unfitted estimator for one cell, and how its
hyper-parameters are chosen on dev data (``selection``: a grid over cells, or a choice inside each
cell; :mod:`lvgp.experiments.selection`). Registering a method makes it known to its study's
``--methods``, to the tables and to the figures; nothing else is edited::

    from lvgp.experiments.registry import register_method
    from lvgp.experiments.selection import InnerDev

    @register_method("classification", "my-svm", "My SVM (BoW)", selection=InnerDev(lambda study: {"C": [0.1, 1, 10]}))
    def my_svm(study, cell, data):
        return MySVMClassifier(random_state=study.cell_seed(cell))

A **study** is a frozen dataclass of options that subclasses :class:`~lvgp.experiments.study.Study`
and is registered with :func:`register_study`; the CLI (``lvgp compare KIND``) lists the
registered studies.

**Your own methods on the command line**: a module that registers them is a *plugin*,
``lvgp compare KIND --plugin MODULE --methods my-svm,svm ...`` imports it (the current directory
first, as ``python -m`` does) before the options are read; :func:`load_plugins` records it in the
environment variable :data:`PLUGINS_ENV`, so the processes of ``--jobs`` import it too before they
look a method up (``--ray`` passes the variable to its workers, which must find the module: installed, or
on their ``PYTHONPATH``). A resumed or ``--report-only`` run needs the same ``--plugin`` again (a
study's files name its methods, not where they came from).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .selection import CellGrid, InnerDev

__all__ = [
    "Method",
    "PLUGINS_ENV",
    "register_method",
    "methods",
    "method",
    "default_methods",
    "register_study",
    "studies",
    "load_plugins",
]

#: the environment variable that names the plugin modules (comma-separated) every process of a study imports
#: before it looks a method up (:func:`load_plugins` sets it)
PLUGINS_ENV = "LVGP_PLUGINS"

#: ``build(study, cell, data)``: the unfitted estimator of one cell (``data``: what the study
#: prepared for the cell's split, e.g. its vocabulary)
Factory = Callable[[Any, dict, Any], Any]


@dataclass(frozen=True)
class Method:
    """One method of one study.

    Attributes:
        name: its name on the command line (``--methods``) and in the records.
        label: its name in tables and figures.
        build: ``build(study, cell, data)`` -> the unfitted estimator of the cell.
        selection: how the hyper-parameters are chosen on dev data
            (:mod:`lvgp.experiments.selection`): :class:`~lvgp.experiments.selection.CellGrid` (a
            grid over cells; the study's report chooses among them),
            :class:`~lvgp.experiments.selection.InnerDev` (a choice inside each cell: the study
            wraps the cell's estimator in :class:`~lvgp.experiments.selection.DevSelected`), or
            ``None`` (one cell; a method that chooses its own hyper-parameters inside ``fit``).
        uses_dev: the estimator's ``fit`` takes the split's dev data (early stopping, tuning)
            where the study has a dev split.
        uses_unlabeled: the estimator's ``fit`` takes unlabeled documents (``unlabeled=``) when the
            study offers them (``--unlabeled pool``).
        default: part of the study's default ``--methods``.
        description: one line for the documentation.
        raw_texts: the estimator reads the cell's documents as written, not as the study's
            vocabulary cut left them (``--min-df-fraction``; a sentence encoder needs the word order
            and the function words): the same documents, the training ones the cut left empty
            dropped as for every method.
        family: a tag that reports and figures select methods by, instead of their names (e.g.
            ``"gplvsm-grid"``: a GP-LVSM whose cells are a grid over q and rho, drawn as the paper's
            curves and word map); ``""``: none.
        record: ``record(estimator, cell, data)`` -> further fields of the cell's record that only
            this method has (chosen settings, coefficients, word vectors), or ``None``; ``data`` is
            what the study's cell trained on (the regression study's split; the classification
            study's training texts and labels).
    """

    name: str
    label: str
    build: Factory
    selection: CellGrid | InnerDev | None = None
    uses_dev: bool = False
    uses_unlabeled: bool = False
    default: bool = False
    description: str = ""
    raw_texts: bool = False
    family: str = ""
    record: Callable[[Any, dict, Any], dict] | None = None

    def settings(self, study: Any) -> list[dict]:
        """The cells' settings: the :class:`~lvgp.experiments.selection.CellGrid`'s, else one, ``{}``."""
        return self.selection.settings(study) if isinstance(self.selection, CellGrid) else [{}]


#: the family of the GP-LVSM methods whose cells are a grid over q and rho: the regression figures draw
#: their curves and word map (``Method.family``)
GRID_FAMILY = "gplvsm-grid"

_METHODS: dict[str, dict[str, Method]] = {}
_STUDIES: dict[str, Any] = {}


def register_method(
    tasks: str | tuple[str, ...],
    name: str,
    label: str,
    *,
    selection: CellGrid | InnerDev | None = None,
    uses_dev: bool = False,
    uses_unlabeled: bool = False,
    default: bool = False,
    description: str = "",
    raw_texts: bool = False,
    family: str = "",
    record: Callable[[Any, dict, Any], dict] | None = None,
) -> Callable[[Factory], Factory]:
    """Decorator: register ``build`` as method ``name`` of the study kind(s) ``tasks`` (the other
    arguments are :class:`Method`'s)."""

    def decorate(build: Factory) -> Factory:
        for task in (tasks,) if isinstance(tasks, str) else tasks:
            known = _METHODS.setdefault(task, {})
            if name in known and known[name].build is not build:
                raise ValueError(f"method {name!r} is already registered for the {task} study")
            known[name] = Method(
                name,
                label,
                build,
                selection,
                uses_dev,
                uses_unlabeled,
                default,
                description,
                raw_texts,
                family,
                record,
            )
        return build

    return decorate


_LOADED_PLUGINS: set[str] = set()


def load_plugins(modules: Iterable[str]) -> None:
    """Import the plugin ``modules`` (each registers methods with :func:`register_method`), the current
    directory searched first as ``python -m`` does, and add them to :data:`PLUGINS_ENV`, which the processes a
    study starts inherit. A module that cannot be imported is a ``ValueError`` naming it and why."""
    names = [m.strip() for m in modules if m.strip()]
    if names and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        if name in _LOADED_PLUGINS:
            continue
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 -- any failure of the user's module is reported as its own
            raise ValueError(f"--plugin {name}: the module cannot be imported ({type(err).__name__}: {err})") from err
        _LOADED_PLUGINS.add(name)
    listed = [m for m in os.environ.get(PLUGINS_ENV, "").split(",") if m]
    os.environ[PLUGINS_ENV] = ",".join(dict.fromkeys(listed + names))


def _plugins_from_environment() -> None:
    """Import the modules :data:`PLUGINS_ENV` names that this process has not (a worker of ``--jobs``)."""
    listed = [m for m in os.environ.get(PLUGINS_ENV, "").split(",") if m]
    if any(m not in _LOADED_PLUGINS for m in listed):
        load_plugins(listed)


def methods(task: str) -> dict[str, Method]:
    """The methods of the study kind ``task``, in registration order (the plugins' of :data:`PLUGINS_ENV`
    included)."""
    _plugins_from_environment()
    return dict(_METHODS.get(task, {}))


def method(task: str, name: str) -> Method:
    """Method ``name`` of ``task`` (``ValueError`` naming the known ones otherwise)."""
    known = methods(task)
    if name not in known:
        raise ValueError(
            f"unknown method {name!r}; known: {', '.join(known)} (a method of your own: register it in a module, "
            "lvgp.experiments.registry.register_method, and pass --plugin MODULE)"
        )
    return known[name]


def default_methods(task: str) -> tuple[str, ...]:
    """The names of ``task``'s methods registered with ``default=True``."""
    _plugins_from_environment()
    return tuple(name for name, m in _METHODS.get(task, {}).items() if m.default)


def register_study(cls: type) -> type:
    """Class decorator: register a study class under its ``kind``."""
    _STUDIES[cls.kind] = cls  # type: ignore[attr-defined]
    return cls


def studies() -> dict[str, Any]:
    """Every registered study class by kind (the package ``lvgp.experiments`` registers the
    built-in ones when it is imported)."""
    return dict(_STUDIES)
