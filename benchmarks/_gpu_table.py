"""The one table of ``benchmarks/gpu_all.sh`` (issue 60): every part's status and seconds, and the
figures its output holds against the goals of the large-N issue (41) and of issue 60.

    python benchmarks/_gpu_table.py LOGS      # LOGS: the folder gpu_all.sh wrote

Reads ``LOGS/parts.tsv`` (part, exit status, seconds, command) and each ``LOGS/<part>.log``:
pytest's summary line, ``gpu.py``'s JSON lines, and the markdown tables and closing lines of
``large_n.py``, ``encoder_throughput.py`` and ``intent_scale.py``. With ``PARTS`` set in the environment
(``gpu_all.sh`` exports it), the parts run are not the whole run, and the whole run's time goal is not
judged on them.
A helper of the script, not a benchmark itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

#: the goals of issue 41 (and issue 60's whole run)
LAUNCHES_GOAL = 60
BUSY_GOAL = 0.5
PEER_RATIO_GOAL = 2.0
MILLION_EPOCH_GOAL = 60.0
TOTAL_GOAL = 8 * 60


def tables(text: str) -> list[dict[str, str]]:
    """The rows of every markdown table in ``text``, as dicts keyed by their table's header."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(set(c) <= {"-", ":"} for c in cells):
            rows.append(dict(zip(header, cells)))
    return rows


def number(text: str) -> float | None:
    match = re.search(r"-?[\d,]*\.?\d+", text or "")
    return float(match.group().replace(",", "")) if match else None


def verdict(value: float | None, goal: float, at_most: bool = True) -> str:
    if value is None:
        return "-"
    return "yes" if (value <= goal if at_most else value >= goal) else "**no**"


def figures(part: str, log: str) -> list[tuple[str, str, str, str]]:
    """(figure, value, goal, met) rows of one part's output."""
    out: list[tuple[str, str, str, str]] = []
    if part == "tests":
        summary = [line for line in log.splitlines() if re.search(r"\d+ (passed|failed)", line)]
        if not summary:
            out.append(("device tests", "no summary", "all pass", "-"))
        else:
            passed = "failed" not in summary[-1] and "error" not in summary[-1]
            out.append(("device tests", summary[-1].strip("= "), "all pass", "yes" if passed else "**no**"))
    elif part == "gpu":
        for line in log.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if "cpu_over_gpu" in record:
                    out.append((f"gpu.py {record['part']}: CPU time / GPU time", f"{record['cpu_over_gpu']}x", "", ""))
                elif "skipped" in record:
                    out.append((f"gpu.py {record['part']}", "skipped", "", ""))
    elif part.startswith("large"):
        rows = tables(log)
        for row in rows:
            if "model" not in row or row.get("code") not in ("now", "now, compiled"):
                continue
            compiled = " (compiled)" if row.get("code") == "now, compiled" else ""
            name = f"{row['model']}{compiled} at n = {row['n']}"
            launches = number(row.get("ops / step", ""))
            out.append((f"{name}: step ms", row.get("step ms", "-"), "", ""))
            out.append(
                (
                    f"{name}: ops (GPU: kernels) / step",
                    row.get("ops / step", "-"),
                    f"<= {LAUNCHES_GOAL}",
                    verdict(launches, LAUNCHES_GOAL),
                )
            )
            busy = row.get("GPU busy", "-")
            if busy not in ("", "-"):
                out.append(
                    (f"{name}: GPU busy", busy, f">= {BUSY_GOAL:.0%}", verdict(number(busy) / 100, BUSY_GOAL, False))
                )
        for line in log.splitlines():
            match = re.match(r"(\S+) step / (\S+) step at n = ([\d,]+): ([\d.]+)x", line)
            if match:
                ratio = float(match.group(4))
                out.append(
                    (
                        f"{match.group(1)} step / {match.group(2)} step (n = {match.group(3)})",
                        f"{ratio}x",
                        f"<= {PEER_RATIO_GOAL}x",
                        verdict(ratio, PEER_RATIO_GOAL),
                    )
                )
            match = re.match(r"(\S+) \(now\) at n = ([\d,]+): .* = (\d+) s$", line)
            if match:
                seconds = float(match.group(3))
                goal = MILLION_EPOCH_GOAL if number(match.group(2)) == 1_000_000 else None
                out.append(
                    (
                        f"{match.group(1)} epoch at n = {match.group(2)} (extrapolated)",
                        f"{seconds:.0f} s",
                        f"< {goal:.0f} s" if goal else "",
                        verdict(seconds, goal) if goal else "",
                    )
                )
        for row in rows:
            if (
                row.get("model") == "sparse-gplvsm"
                and row.get("code") == "now"
                and number(row.get("n", "")) == 1_000_000
            ):
                if not any("epoch at n = 1,000,000" in f[0] for f in out):
                    seconds = number(row["epoch s"])
                    out.append(
                        (
                            "sparse-gplvsm epoch at n = 1,000,000",
                            f"{seconds} s",
                            f"< {MILLION_EPOCH_GOAL:.0f} s",
                            verdict(seconds, MILLION_EPOCH_GOAL),
                        )
                    )
    elif part == "host-tables":
        for row in tables(log):
            if "host's tables a step ms" in row:
                out.append(
                    (f"host's tables of a fused step, {row['code']}: ms", row["host's tables a step ms"], "", "")
                )
        for line in log.splitlines():
            match = re.match(r"table_cosines on (\S+) \(synchronized, median\): ([\d.]+) ms", line)
            if match:
                out.append((f"table_cosines on {match.group(1)}: ms", match.group(2), "", ""))
    elif part == "intent":
        for row in tables(log):
            if "fit s" in row:
                name = f"intent_scale, {row.get('documents')} documents, the evidence of {row.get('evidence of')}"
                out.append((f"{name}: fit s / predict s", f"{row['fit s']} / {row.get('predict s', '-')}", "", ""))
    elif part == "encoder":
        for row in tables(log):
            rates = {k: v for k, v in row.items() if k.endswith("docs/s") and not k.startswith("tf-idf")}
            for key, value in rates.items():
                out.append((f"encoder, {row.get('texts')} ({row.get('tokens (mean)')} tokens): {key}", value, "", ""))
    return out


def main(argv: list[str]) -> int:
    logs = Path(argv[0] if argv else "gpu_all_logs")
    parts = [line.split("\t") for line in (logs / "parts.tsv").read_text().splitlines() if line.strip()]
    rows = []
    total = 0
    for name, rc, seconds, _command in parts:
        total += int(seconds)
        status = "ok" if rc == "0" else "timed out" if rc in ("124", "137") else f"failed (exit {rc})"
        rows.append((name, "status, seconds", f"{status}, {seconds} s", "", ""))
        log = logs / f"{name}.log"
        rows += [(name, *f) for f in figures(name, log.read_text(errors="replace") if log.exists() else "")]
    if os.environ.get("PARTS"):  # gpu_all.sh's PARTS= named some parts: the whole run's goal is not judged
        rows.append(("all", "seconds (the parts PARTS named)", f"{total} s", "", ""))
    else:
        rows.append(("all", "seconds", f"{total} s", f"< {TOTAL_GOAL} s", verdict(total, TOTAL_GOAL)))
    print("| part | figure | value | goal | met |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    failed = [name for name, rc, *_ in parts if rc != "0"]
    if failed:
        print(f"parts that did not finish: {', '.join(failed)} (their logs: {logs}/<part>.log)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
