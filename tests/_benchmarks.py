"""A benchmark script imported as a module, for the tests of what it defines (its sibling scripts
importable while it loads, as when it runs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS_DIR = Path(__file__).resolve().parent.parent / "benchmarks"


def benchmark_module(script: str, name: str) -> ModuleType:
    """``benchmarks/<script>`` loaded as module ``name`` (not run: its ``main`` is not called)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS_DIR / script)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS_DIR))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS_DIR))
    return module
