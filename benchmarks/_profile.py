"""cProfile helpers shared by the benchmark scripts: run a call under the profiler and print
its top functions by own time as a markdown table (the form benchmarks/README.md keeps)."""

from __future__ import annotations

import cProfile
import io
import pstats

from _before import ROOT


def profile_table(text: str) -> str:
    """cProfile's top lines as markdown rows: own seconds, calls, function."""
    rows = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[0].replace("/", "").isdigit() and parts[1].replace(".", "").isdigit():
            name = parts[5].replace(str(ROOT) + "/", "")
            name = name.split("site-packages/")[-1]
            if "/before/lvgp/" in name:  # the extracted package of the code before
                name = "(before) lvgp/" + name.split("/before/lvgp/", 1)[1]
            rows.append(f"| {float(parts[1]):.2f} | {parts[0]} | `{name}` |")
    return "| own s | calls | function |\n|---|---|---|\n" + "\n".join(rows)


def stats_text(prof: cProfile.Profile, top: int = 10) -> str:
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def profiled(fn, *args, top: int = 10, **kwargs):
    """``fn(*args, **kwargs)`` under cProfile: (its result, the markdown table of the top
    ``top`` functions by own time)."""
    prof = cProfile.Profile()
    result = prof.runcall(fn, *args, **kwargs)
    return result, profile_table(stats_text(prof, top))
