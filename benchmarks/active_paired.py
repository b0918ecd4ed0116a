"""Paired readings of committed active-learning records (issue 57): seed by seed, one strategy's test accuracy at a
number of labels against another's (the same seed's pool and test documents), in the same study folder or across
two, and the areas under the two curves; mean, standard error of the paired differences, and the seeds ahead.

The seeds are matched by the records' ``split`` (a study's seed); a seed that one side lacks is left out and named.
The numbers are read from the folders' ``results.json`` (what ``tests/test_committed_results.py`` checks against
their tables); nothing is fitted.

    python benchmarks/active_paired.py results/active/20ng-pool-words-18-splits:gp-pool-greedy-epig@200 \
        results/active/20ng-pool-words-18-splits:random@400
    python benchmarks/active_paired.py results/active/20ng-pool-words-18-splits:gp-pool-greedy-epig@200 \
        results/active/20ng-18-splits:gp-pool-greedy-epig@200
    python benchmarks/active_paired.py --quick     # two toy records written on the spot: seconds

Each side is ``FOLDER:STRATEGY@LABELS``; the area is the mean accuracy over a curve's points (the studies' area).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np


def read_side(side: str) -> tuple[str, dict[int, dict]]:
    """``FOLDER:STRATEGY@LABELS`` -> (its name, ``{seed: {"accuracy", "area"}}``); a missing point is an error."""
    try:
        folder, rest = side.rsplit(":", 1)
        strategy, labels = rest.rsplit("@", 1)
        at = int(labels)
    except ValueError:
        raise SystemExit(f"{side!r}: expected FOLDER:STRATEGY@LABELS") from None
    records = json.loads((Path(folder) / "results.json").read_text())
    seeds: dict[int, dict] = {}
    for record in records:
        if record.get("strategy") != strategy:
            continue
        points = {point["labels"]: point["accuracy"] for point in record["curve"]}
        if at not in points:
            raise SystemExit(f"{side}: seed {record['split']}'s curve has no point at {at} labels ({sorted(points)})")
        seeds[int(record["split"])] = {"accuracy": points[at], "area": float(record["aulc"])}
    if not seeds:
        raise SystemExit(f"{side}: no record of strategy {strategy!r} in {folder}/results.json")
    return side, seeds


def paired(first: dict[int, dict], second: dict[int, dict], key: str) -> tuple[float, float, int, int]:
    """Mean and standard error of ``first - second`` over the seeds both hold, the seeds where first is ahead (or
    level), and the number of seeds."""
    common = sorted(set(first) & set(second))
    differences = np.array([first[s][key] - second[s][key] for s in common])
    error = differences.std(ddof=1) / np.sqrt(len(differences)) if len(differences) > 1 else float("nan")
    return float(differences.mean()), float(error), int((differences >= 0).sum()), len(differences)


def report(first_side: str, second_side: str) -> str:
    (a_name, a), (b_name, b) = read_side(first_side), read_side(second_side)
    lines = [f"first:  {a_name}", f"second: {b_name}"]
    only = sorted(set(a) ^ set(b))
    if only:
        lines.append(f"seeds on one side only, left out: {only}")
    common = sorted(set(a) & set(b))
    if not common:
        raise SystemExit(f"no seed in both: {sorted(a)} and {sorted(b)}")
    lines.append(f"seeds: {len(common)} ({', '.join(map(str, common))})")
    lines.append("| reading | first | second | first - second (paired) | seeds first at or ahead |")
    lines.append("|---|---|---|---|---|")
    for key, name in [("accuracy", "accuracy at the labels"), ("area", "area under the curve")]:
        mean, error, ahead, n = paired(a, b, key)
        first_mean = np.mean([a[s][key] for s in common])
        second_mean = np.mean([b[s][key] for s in common])
        lines.append(f"| {name} | {first_mean:.4f} | {second_mean:.4f} | {mean:+.4f} ± {error:.4f} | {ahead} of {n} |")
    return "\n".join(lines)


def _quick() -> str:
    """Two toy folders, three seeds: the paired reading of records written here."""
    with tempfile.TemporaryDirectory() as root:
        for name, shift in [("a", 0.02), ("b", 0.0)]:
            records = [
                {
                    "strategy": "s",
                    "split": seed,
                    "aulc": 0.5 + shift + 0.01 * seed,
                    "curve": [{"labels": 10, "accuracy": 0.6 + shift + 0.01 * seed}],
                }
                for seed in range(3)
            ]
            (Path(root) / name).mkdir()
            (Path(root) / name / "results.json").write_text(json.dumps(records))
        return report(f"{root}/a:s@10", f"{root}/b:s@10")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sides", nargs="*", help="FOLDER:STRATEGY@LABELS, twice: first, then second")
    parser.add_argument("--quick", action="store_true", help="toy records written on the spot")
    args = parser.parse_args(argv)
    if args.quick:
        print(_quick())
        return 0
    if len(args.sides) != 2:
        parser.error("give two sides, FOLDER:STRATEGY@LABELS each")
    print(report(*args.sides))
    return 0


if __name__ == "__main__":
    sys.exit(main())
