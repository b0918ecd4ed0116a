"""The layering of the package (issue 30): every import -- at module level or inside a function --
points down the layers, and no two modules import each other, directly or around a circle.

Layers, bottom to top: the root utilities (``_typing``, ``_random``, ``_version``, ``warnings``),
``bow``, ``datasets``, ``base``, ``encoders``, ``kernels``, ``models``, ``baselines``, ``experiments``.
Imports under ``if TYPE_CHECKING:`` are annotations only and not counted."""

from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "lvgp"
LAYERS = ["_typing", "_random", "_version", "warnings", "bow", "datasets", "base", "encoders", "kernels", "models"]
LAYERS += ["baselines"]
LAYERS += ["experiments", "__main__", "lvgp"]
RANK = {name: i for i, name in enumerate(LAYERS)}
RANK.update({"_typing": 0, "_random": 0, "_version": 0, "warnings": 0})


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.AST):
    """Import nodes outside ``if TYPE_CHECKING:`` blocks."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skip.update(id(n) for n in ast.walk(node))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in ROOT.rglob("*.py")}
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target] + [f"{target}.{a.name}" for a in node.names]
            else:
                targets = [a.name for a in node.names]
            for t in targets:
                # the module imported: the longest prefix that is a module of the package
                while t and t not in modules:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != name:
                    edges[name].add(t)
    return edges


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lvgp"


def test_no_import_runs_back_up_the_layers():
    upward = sorted(
        (source, target)
        for source, targets in _graph().items()
        for target in targets
        if RANK[_area(target)] > RANK[_area(source)]
    )
    assert upward == []


def test_no_import_circles():
    """No cycle among the modules (package ``__init__`` files re-export their submodules, so the
    edges from a submodule to its own package's ``__init__`` are left out)."""
    edges = _graph()
    edges = {
        m: {t for t in ts if not (t and m.startswith(t + "."))}  # a submodule importing its package
        for m, ts in edges.items()
    }
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
            elif state.get(nxt) is None:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    # a package __init__ importing its submodules and a submodule importing a sibling through the
    # package is not a cycle of logic: keep only cycles that do not pass through an __init__
    packages = {_module(p) for p in ROOT.rglob("__init__.py")}
    real = [c for c in cycles if not any(m in packages for m in c[:-1])]
    assert real == [], real


@pytest.mark.parametrize("package", ["base", "kernels", "models", "baselines", "experiments"])
def test_each_layer_is_a_package(package):
    assert (ROOT / package / "__init__.py").exists()


#: calls that make randomness from a raw seed: only lvgp._random makes them
_SEEDING_CALLS = {"default_rng", "manual_seed", "check_random_state", "randint"}
#: constructors that seed when called on their module (``np.random.RandomState(0)``, ``torch.Generator()``)
_SEEDING_CONSTRUCTORS = {("random", "RandomState"), ("torch", "Generator")}
#: modules left out, with their reasons: persistence rebuilds a generator a user saved (its state,
#: not a seed); the synthetic corpora are one standalone file (no lvgp import) that
#: benchmarks/large_n.py loads by path, so that every code it compares draws the same documents
_SEEDING_EXEMPT = {"persistence.py", "synthetic.py"}
#: lvgp._random's raw seed derivations: the library's code takes its seeds from a Streams object
_RAW_DERIVATIONS = {"derive_seed", "derive_seeds"}


def _name_of(node: ast.AST) -> str:
    """The identifier a node ends in (``self.seed`` -> ``seed``, ``f(x)`` -> ``f``), or ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name_of(node.func)
    if isinstance(node, ast.Subscript):
        return _name_of(node.value)
    return ""


def _seeding_offences(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _name_of(node.func)
            owner = _name_of(getattr(node.func, "value", None))
            if name in _SEEDING_CALLS or (owner, name) in _SEEDING_CONSTRUCTORS:
                found.append((node.lineno, f"{name}(...)"))
            elif name in _RAW_DERIVATIONS:
                found.append((node.lineno, f"{name}(...): take a Streams"))
            elif name == "seed" and owner == "random":
                found.append((node.lineno, "random.seed(...)"))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            operands = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.target, node.value)
            if any("seed" in _name_of(o).lower() for o in operands):
                found.append((node.lineno, "arithmetic on a seed"))
        elif isinstance(node, ast.Subscript) and "seeds" in _name_of(node.value).lower():
            found.append((node.lineno, "a seed taken by position"))
    return found


def test_randomness_comes_from_named_streams():
    """One seeding dialect (issues 30, 58), read from the syntax tree: outside ``lvgp/_random.py`` no
    code seeds a generator itself (``default_rng(``, ``manual_seed(``, ``torch.Generator(``, legacy
    ``RandomState``/``check_random_state``/``randint``), derives raw seeds (``derive_seed``/
    ``derive_seeds``: a fit's seeds come from a ``Streams`` object, by name), takes a seed by position
    (``seeds[-1]``) or computes with a seed (``seed + 1``, ``1000 * seed + split``). The generators
    come from ``Streams``, ``torch_generator``, ``numpy_generator`` and ``study_generator``."""
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "_random.py" or path.name in _SEEDING_EXEMPT:
            continue
        for line, what in _seeding_offences(ast.parse(path.read_text())):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not offenders, "\n".join(offenders)


def test_the_seeding_guard_catches_what_the_regex_missed():
    """The patterns the regex guard before it let through (issue 58) are caught."""
    for source in (
        "s = derive_seed(self.random_state) + 1",
        "with seeded_torch(0): g = torch.Generator().manual_seed(seed)",
        "rng = np.random.default_rng(seed)",
        "seed = 1000 * self.seed + split",
        "predict_seed = seeds[-1]",
        "np.random.seed(0)",
        "rs = np.random.RandomState(0)",
    ):
        assert _seeding_offences(ast.parse(source)), source
    for source in (
        "g = streams.torch('draws')",
        "s = streams.seed('predict')",
        "x = torch_generator(seed)",
        "c = RandomState()",
    ):
        assert not _seeding_offences(ast.parse(source)), source


def test_the_readme_lists_the_layers_in_order():
    """README's Layout table names every package layer, bottom to top, as ``LAYERS`` has them."""
    import re

    readme = (ROOT.parent / "README.md").read_text()
    listed = re.findall(r"^\| `lvgp/(\w+)` \|", readme, flags=re.M)
    packages = [name for name in LAYERS if (ROOT / name).is_dir()]
    assert listed == packages


def test_every_public_module_is_in_the_api_reference():
    """docs/api.md lists the modules by hand (issue 58): a new public module must be added there,
    or this fails (packages' ``__init__`` and ``_private`` modules aside)."""
    import pkgutil
    import re

    import lvgp

    listed = set(re.findall(r"^\s+(lvgp\.[\w.]+)\s*$", (ROOT.parent / "docs" / "api.md").read_text(), re.M))
    public = {
        m.name
        for m in pkgutil.walk_packages(lvgp.__path__, "lvgp.")
        if not m.ispkg and not any(part.startswith("_") for part in m.name.split("."))
    }
    assert sorted(public - listed) == []


#: a figure as a measurement quotes it: a decimal with two or more places, a speed-up, a duration
_MEASURED = re.compile(
    r"(?<![\w.=\-*/^\[(])\d*\.\d{2,}\b|\b\d+(?:\.\d+)?x (?:faster|slower)\b|\b\d+(?:\.\d+)? ?(?:ms|seconds|minutes|hours)\b"
)


def test_docstrings_point_to_measurements_instead_of_quoting_them():
    """Issue 58: the API docs say what a thing is; the results pages and ``benchmarks/README.md`` what it
    scored. A docstring sentence that cites ``results/``, ``benchmarks/`` or a measurement may name the
    page, not copy its figures, which would go stale when the page is rerun (the studies' own modules,
    which write those pages, are left out)."""
    quoting = []
    for path in sorted(ROOT.rglob("*.py")):
        if "experiments" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node, clean=False) or ""
            for sentence in re.split(r"(?<=[.;:])\s+(?=[A-Z(`])", doc):
                cites = "results/" in sentence or "benchmarks/" in sentence or "measured" in sentence
                if cites and _MEASURED.search(sentence):
                    quoting.append(f"{_module(path)}.{getattr(node, 'name', '')}: {' '.join(sentence.split())[:160]}")
    assert not quoting, "\n".join(quoting)


def test_no_text_file_holds_control_characters():
    """A docstring passed through another program's string literal can turn the ``\\a``, ``\\b`` and ``\\f``
    of its LaTeX into control characters (``\\approx`` became a bell and "pprox"): Sphinx builds the page
    without a warning and the equation renders broken. No source, test, benchmark or documentation text
    holds one (line feeds and carriage returns aside), nor a tab: ``\\t`` turns ``\\tfrac`` and ``\\top`` into a
    tab and "frac", "op" the same way, and none of these files indents with tabs."""
    top = ROOT.parent
    files = [*ROOT.rglob("*.py"), *top.glob("tests/*.py"), *top.glob("benchmarks/*.py"), *top.glob("*.md")]
    files += [*top.glob("benchmarks/*.md"), *top.glob("results/*.md"), *top.glob("docs/**/*.md")]
    files += [*top.glob("examples/*.py"), *top.glob("notebooks/src/*.py")]
    control = re.compile(r"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f]")
    found = [
        f"{path.relative_to(top)}:{number}: {line.strip()[:80]!r}"
        for path in files
        if "_build" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)
        if control.search(line)
    ]
    assert not found, "\n".join(found)
