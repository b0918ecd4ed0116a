"""Sphinx configuration: ``make docs`` (``python -m sphinx -W -b html docs docs/_build/html``)."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

project = "lvgp"
author = "the lvgp developers"
copyright = "2026, the lvgp developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_nb",
]
autosummary_generate = True
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # lvgp's own inherited methods (fit/predict/save/load of the estimator bases) appear on every
    # estimator's page; what torch, gpytorch, pyro and scikit-learn's bases bring does not
    "inherited-members": "BaseEstimator, RegressorMixin, ClassifierMixin, TransformerMixin, Module, Kernel, "
    "ExactGP, ApproximateGP, GP, PyroModule, object",
    # scikit-learn's generated metadata-routing methods (their docstrings cite sklearn's glossary)
    "exclude-members": "set_fit_request, set_predict_request, set_score_request, set_transform_request, "
    "set_partial_fit_request, set_decision_function_request, set_predict_proba_request, get_metadata_routing",
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# docstrings are Google style ("Args:", "Returns:")
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# the notebooks are rendered with the outputs they were committed with, never re-executed here
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

html_theme = "furo"
html_title = "lvgp"

# the tutorials are the committed notebooks, copied in at build time (one source of truth)
_tutorials = Path(__file__).parent / "tutorials"
_tutorials.mkdir(exist_ok=True)
for _nb in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
    shutil.copyfile(_nb, _tutorials / _nb.name)
