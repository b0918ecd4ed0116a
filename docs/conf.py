"""Sphinx configuration: ``make docs`` (``python -m sphinx -W -b html docs docs/_build/html``)."""

from __future__ import annotations

import importlib.util
import os
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
# links into torch, gpytorch, pyro, scikit-learn and numpy's docs where the build can reach them:
# `LVGP_DOCS_ONLINE=1 make docs`; CI and offline builds leave them out (intersphinx would fetch)
if os.environ.get("LVGP_DOCS_ONLINE") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "torch": ("https://pytorch.org/docs/stable", None),
        "gpytorch": ("https://docs.gpytorch.ai/en/stable", None),
        "pyro": ("https://docs.pyro.ai/en/stable", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
    }
autosummary_generate = True
autodoc_default_options = {
    "members": True,
    # every public name of a module, not only its __all__: the autosummary tables list them all
    # (and the docstrings refer to them), so each needs its entry
    "ignore-module-all": True,
    "show-inheritance": True,
    # lvgp's own inherited methods (fit/predict/save/load of the estimator bases) and scikit-learn's
    # score appear on every estimator's page; the rest of what torch, gpytorch, pyro and
    # scikit-learn's bases bring does not
    "inherited-members": "BaseEstimator, TransformerMixin, Module, Kernel, ExactGP, ApproximateGP, GP, PyroModule, object",
    # scikit-learn's generated metadata-routing methods (their docstrings cite sklearn's glossary)
    "exclude-members": "set_fit_request, set_predict_request, set_score_request, set_transform_request, "
    "set_partial_fit_request, set_decision_function_request, set_predict_proba_request, get_metadata_routing",
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# lvgp's input aliases by name, not expanded into numpy's ArrayLike union (the modules postpone
# their annotations, so autodoc sees the names)
autodoc_type_aliases = {name: f"lvgp._typing.{name}" for name in ("TensorLike", "Documents", "EmbeddingsSpec")}
# an alias inside a union (``Documents | None``) is stringified by its repr, which sphinx 9 gives as
# "TypeAliasForwardRef('lvgp._typing.Documents')": shown by its name instead
from sphinx.util.inspect import TypeAliasForwardRef  # noqa: E402

TypeAliasForwardRef.__repr__ = lambda self: self.name  # type: ignore[method-assign]

# docstrings are Google style ("Args:", "Returns:")
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# the notebooks are rendered with the outputs they were committed with, never re-executed here
nb_execution_mode = "off"
# Markdown outputs of the notebooks (display(Markdown(table))) rendered with MyST, which has tables
nb_render_markdown_format = "myst"
myst_enable_extensions = ["dollarmath", "amsmath"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_mathjax", "**.ipynb_checkpoints"]

html_theme = "furo"
html_title = "lvgp"
html_static_path = ["_static"]
html_css_files = ["lvgp.css"]

# MathJax bundled with the site (MathJax 2.7 from the jupyter-server-mathjax package, a dev
# dependency), so that offline readers see typeset math, not raw LaTeX; the CDN only without it. The
# package's files are found without importing it (its import loads jupyter_server and jsonschema:
# 1.5-2 s of every build)
_mathjax_spec = importlib.util.find_spec("jupyter_server_mathjax")  # None where the dev extra is not installed
if _mathjax_spec is not None and _mathjax_spec.submodule_search_locations:
    _mathjax_package_dir = Path(next(iter(_mathjax_spec.submodule_search_locations)))
    _mathjax_static = Path(__file__).parent / "_mathjax"
    if not (_mathjax_static / "mathjax" / "MathJax.js").exists():
        shutil.copytree(_mathjax_package_dir / "static", _mathjax_static / "mathjax", dirs_exist_ok=True)
    html_static_path = ["_static", "_mathjax"]
    mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
    # Every page showed raw LaTeX (issue 59), for two reasons: the bundle ships MathJax's STIX-Web fonts
    # only (its default TeX web fonts failed to load, jax/output/HTML-CSS/fonts/TeX/fontdata.js), and
    # MyST marks each page's section "tex2jax_ignore" and its math "math" (it configures MathJax 3's
    # processHtmlClass; MathJax 2 reads tex2jax's processClass). tests/test_docs.py opens the pages
    # in Chromium and looks for raw LaTeX.
    mathjax2_config = {
        "tex2jax": {
            "inlineMath": [["\\(", "\\)"]],
            "displayMath": [["\\[", "\\]"]],
            "processClass": "tex2jax_process|mathjax_process|math|output_area",
        },
        "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web", "imageFont": None},
        "SVG": {"font": "STIX-Web"},
    }

# the tutorials are the committed notebooks, copied in at build time (one source of truth)
_tutorials = Path(__file__).parent / "tutorials"
_tutorials.mkdir(exist_ok=True)
for _nb in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
    shutil.copyfile(_nb, _tutorials / _nb.name)

# autosummary ends a summary at the first ". " unless it ends a well-known abbreviation: the
# docstrings cite "thesis ch. 3", "paper eq. 19" and "alg. 3.3", which would otherwise cut them short
import sphinx.ext.autosummary as _autosummary  # noqa: E402

_autosummary.WELL_KNOWN_ABBREVIATIONS = (
    *_autosummary.WELL_KNOWN_ABBREVIATIONS,
    *(f"{sep}{abbr}." for sep in " (" for abbr in ("ch", "eq", "eqs", "alg")),
)


def _lookup(dotted: str):
    """The object at a dotted path (a module, then attributes), or ``None``."""
    import importlib

    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def _canonical_lvgp_reference(app, env, node, contnode):
    """Resolve ``lvgp.X`` as the docstrings write it (the public alias, e.g.
    ``lvgp.LatentDistributionKernel``) to where autodoc documented it (its defining module)."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("lvgp."):
        return None
    obj = _lookup(target)
    if obj is None:
        return None
    domain = env.get_domain("py")
    obj = getattr(obj, "fget", None) or obj  # a property: where its getter is defined
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module and qualname:
        canonical = f"{module}.{qualname}"
    else:  # a constant (lvgp.PAD): the one documented lvgp object of that name holding it
        name = target.rsplit(".", 1)[-1]
        found = [
            key
            for key in domain.objects
            if key.startswith("lvgp.")
            and key.rsplit(".", 1)[-1] == name
            and getattr(_lookup(key.rsplit(".", 1)[0]), name, None) is obj
        ]
        canonical = found[0] if len(found) == 1 else target
    if canonical == target:
        return None
    return domain.resolve_xref(env, node.get("refdoc"), app.builder, node.get("reftype"), canonical, node, contnode)


def _public_bases(app, name, obj, options, bases):
    """List lvgp's private helper classes (``_TopicModelBase``, the mixins of the private
    ``kernels._hyper``) under "Bases:" as their public bases."""

    def public(cls):
        private = cls.__name__.startswith("_") or "._" in cls.__module__
        if cls.__module__.startswith("lvgp") and private:
            return [b for base in cls.__bases__ for b in public(base)]
        return [cls]

    bases[:] = list(dict.fromkeys(b for base in bases for b in public(base)))


_SKLEARN_SCORE = {
    "RegressorMixin.score": "The coefficient of determination R^2 of ``predict(X)`` against ``y`` "
    "(scikit-learn's ``RegressorMixin.score``; ``sample_weight`` optional).",
    "ClassifierMixin.score": "The mean accuracy of ``predict(X)`` against ``y`` "
    "(scikit-learn's ``ClassifierMixin.score``; ``sample_weight`` optional).",
    "BaseEstimator.get_params": "The estimator's parameters as a dict (scikit-learn's ``get_params``): with "
    "``deep=True`` also those of nested estimators and the fields of an ``LDKSpec`` kernel as "
    "``kernel__<field>``.",
    "BaseEstimator.set_params": "Set parameters and return the estimator (scikit-learn's ``set_params``; "
    "``name__param`` for a nested estimator's).",
}


def _sklearn_score_docstring(app, what, name, obj, options, lines):
    """scikit-learn's ``score`` docstrings cite its own docs' labels; on lvgp's estimator pages
    they are replaced by one line that says what the score is."""
    text = _SKLEARN_SCORE.get(getattr(obj, "__qualname__", ""))
    if text is not None:
        lines[:] = [text]


def _prose_attribute_docstring(app, what, name, obj, options, lines):
    """napoleon reads the first line of an attribute's docstring as ``type: description``; lvgp's
    attribute comments are prose ("what it is: ...", their types the annotations): a first line of one
    zero-width space (no colon; napoleon drops blank ones) keeps it from rendering their first clause as
    a 'Type' field."""
    if what in ("attribute", "data", "property") and lines and lines[0].strip():
        lines.insert(0, "\u200b")


def setup(app):
    app.connect("autodoc-process-docstring", _prose_attribute_docstring, priority=400)  # before napoleon's
    app.connect("autodoc-process-docstring", _sklearn_score_docstring)
    app.connect("missing-reference", _canonical_lvgp_reference)
    app.connect("autodoc-process-bases", _public_bases)
