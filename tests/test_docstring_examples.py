"""Runnable documentation: the ``Example:`` blocks of lvgp's docstrings run and print what they say (each module's
examples in one namespace, as ``pytest --doctest-modules`` runs them). Examples that need the pretrained encoder
or a fit are marked ``# doctest: +SKIP`` where they stand."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "lvgp"
MODULES = sorted(
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    for path in PACKAGE.rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8")
)


def test_the_package_has_docstring_examples():
    assert "lvgp.kernels.spec" in MODULES and "lvgp.kernels.bag_of_words" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has '>>> ' in its source but no docstring example was found"
    failures: list[str] = []
    for test in tests:
        runner.run(test, out=failures.append)
    assert not failures, "".join(failures)
    assert runner.summarize(verbose=False).failed == 0
