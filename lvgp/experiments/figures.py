"""Figures of the regression study, like the GP-LVSM paper's Figs. 2-4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; notebooks display the PNGs
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .registry import GRID_FAMILY, methods  # noqa: E402


def grid_methods(kind: str) -> list[str]:
    """The methods of the family ``GRID_FAMILY`` (``lvgp.experiments.registry``), in registration order: the curves and the
    word map draw these."""
    return [name for name, m in methods(kind).items() if m.family == GRID_FAMILY]


def _baselines(ax, records: list[dict], study) -> None:
    grid = grid_methods(study.kind)
    for i, method in enumerate(m for m in methods(study.kind) if m not in grid):
        vals = [r["rmse"] for r in records if r["method"] == method]
        if vals:
            ax.axhline(
                np.mean(vals), ls="--", lw=1, color=f"C{i + 3}", label=f"{study.label(method)} (selected on dev)"
            )


def _curve(
    cells: list[dict],
    records: list[dict],
    out: Path,
    study,
    vary: str,
    fixed: str,
    fixed_value: float,
    xlabel: str,
    log: bool,
):
    """The curve of each GP-LVSM method over ``vary`` at ``fixed`` nearest ``fixed_value``; no file
    (and an old one removed) when the study has no grid of two or more values over ``vary``."""
    series = []
    for i, method in enumerate(grid_methods(study.kind)):
        mine = [c for c in cells if c["method"] == method and vary in c.get("params", {})]
        if not mine:
            continue
        values = sorted({c["params"][fixed] for c in mine})
        at = min(values, key=lambda v: abs(np.log(v) - np.log(fixed_value)) if fixed == "rho" else abs(v - fixed_value))
        xs = sorted({c["params"][vary] for c in mine if c["params"][fixed] == at})
        if len(xs) < 2:
            continue
        stats = [[c["test_rmse"] for c in mine if c["params"][fixed] == at and c["params"][vary] == x] for x in xs]
        series.append((i, method, at, xs, stats))
    if not series:
        Path(out).unlink(missing_ok=True)
        return
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, method, at, xs, stats in series:
        ax.errorbar(
            xs,
            [np.mean(s) for s in stats],
            yerr=[np.std(s) for s in stats],
            marker="o",
            capsize=3,
            color=f"C{i}",
            label=f"{study.label(method)} ({fixed}={at:g})",
        )
    _baselines(ax, records, study)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test RMSE (standardized)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def rmse_vs_q(cells, records, out: Path, study, rho: float = 10.0) -> None:
    """Paper Fig. 2: test RMSE against the latent dimensionality at fixed rho."""
    _curve(cells, records, out, study, "q", "rho", rho, "latent dimensionality q", log=False)


def rmse_vs_rho(cells, records, out: Path, study, q: int = 2) -> None:
    """Paper Fig. 3: test RMSE against the regularizer rho at fixed q."""
    _curve(cells, records, out, study, "rho", "q", q, "regularizer rho", log=True)


#: label offsets tried around a point, in points: to its right, above right, to its left, above
#: left, below right, below left
_OFFSETS = ((3, -3), (3, 4), (-3, -3), (-3, 4), (3, -11), (-3, -11))


def place_labels(fig, ax, xy: np.ndarray, labels: list[str], colours: list[str], fontsize: float = 7) -> int:
    """Annotate the points ``xy`` with ``labels`` in order (the first are placed first), each at the
    first of a few offsets where its box overlaps neither a placed label nor another point; a label
    that fits nowhere is left out. Returns how many were left out."""
    fig.canvas.draw()  # fixes the axes' limits, so that display coordinates are final
    renderer = fig.canvas.get_renderer()
    points = ax.transData.transform(xy)
    placed: list = []
    omitted = 0
    for (x, y), label, colour, own in zip(xy, labels, colours, points):
        for dx, dy in _OFFSETS:
            ha = "left" if dx > 0 else "right"
            text = ax.annotate(
                label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, color=colour, ha=ha
            )
            box = text.get_window_extent(renderer).expanded(1.05, 1.1)
            others = [p for p in points if p is not own and not np.array_equal(p, own)]
            hits_point = any(box.contains(px, py) for px, py in others)
            if not hits_point and not any(box.overlaps(b) for b in placed):
                placed.append(box)
                break
            text.remove()
        else:
            omitted += 1
    return omitted


def word_map(cells, out: Path, study, n_words: int = 60) -> None:
    """Paper Fig. 4: 2-D latent vectors of frequent training words (split 0, the q=2 fit
    chosen on dev), coloured by the sign of the word's ridge coefficient."""
    fig, ax = plt.subplots(figsize=(7, 6))
    grid = grid_methods(study.kind)
    candidates = [c for c in cells if c["method"] in grid and "word_vectors" in c]
    if not candidates:
        ax.text(0.5, 0.5, "no q=2 GP-LVSM fit on split 0 in this study", ha="center", transform=ax.transAxes)
    else:
        best = min(candidates, key=lambda c: (grid.index(c["method"]), c["dev_rmse"]))
        ridge = next((c for c in cells if c["method"] == "ridge" and "coef" in c), None)
        coef = ridge["coef"] if ridge else {}
        words = sorted(best["word_counts"], key=lambda w: -best["word_counts"][w])[:n_words]
        xy = np.array([best["word_vectors"][w] for w in words])
        colours = ["tab:blue" if coef.get(w, 0) > 0 else "tab:red" if coef.get(w, 0) < 0 else "tab:gray" for w in words]
        ax.scatter(xy[:, 0], xy[:, 1], c=colours, s=12)
        omitted = place_labels(fig, ax, xy, words, colours)
        note = f"; {omitted} crowded labels left out" if omitted else ""
        ax.set_title(
            f"{study.label(best['method'])} word vectors (split 0, q=2, rho={best['params']['rho']:g}); "
            f"blue/red: positive/negative ridge coefficient{note}",
            fontsize=8,
        )
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def calibration_curve(records: list[dict], out: Path, study) -> None:
    """Nominal against empirical coverage of the central predictive intervals on test, per method
    (mean over the splits): a calibrated method lies on the diagonal, an over-confident one below
    it. No file for records without calibration curves (written before lvgp 0.2)."""
    methods = [m for m in methods_in(records, study) if all("calibration" in r for r in records if r["method"] == m)]
    if not methods:
        Path(out).unlink(missing_ok=True)
        return
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls=":", label="calibrated")
    for i, method in enumerate(methods):
        curves = [r["calibration"] for r in records if r["method"] == method]
        nominal = curves[0]["nominal"]
        empirical = np.mean([c["empirical"] for c in curves], axis=0)
        style: dict[str, Any] = {"ls": "--", "marker": "s"} if i >= 10 else {"marker": "o"}
        ax.plot(nominal, empirical, lw=1.2, ms=3, color=f"C{i % 10}", label=study.label(method), **style)
    ax.set_xlabel("nominal coverage of the central interval")
    ax.set_ylabel("share of test targets inside")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(f"{study.dataset}: predictive intervals on test", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def methods_in(records: list[dict], study) -> list[str]:
    """The methods of ``records`` in the study's order."""
    return sorted({r["method"] for r in records}, key=study.method_order)
