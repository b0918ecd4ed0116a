"""``benchmarks/gpu_all.sh`` (issue 60): the GPU figures one script away. On a CPU its ``--dry-run``
runs every part at tiny sizes and prints the one table; the table's reader is checked on logs whose
figures are known (one of each part's output formats, as the scripts print them)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_examples import BENCHMARKS, DRY_RUN_POSSIBLE, GPU_DRY_RUN_PARTS

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("_gpu_table", ROOT / "benchmarks" / "_gpu_table.py")
gpu_table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_table)

LARGE = """device: NVIDIA H200; 2 thread(s); 256 inducing documents, batches of 256
| model | code | n | epoch s | us / doc | steps | step ms | setup s | peak MiB | peak less data MiB | ops / step | host reads / step | GPU busy |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| sparse-gplvsm | now | 1,000,000 | 72.9 | 73 | 200 | 102.2 | 52.6 | 26632 | 900 | 634 | 18 | 41% |
| svgp-dense | now | 1,000,000 | 20.0 | 20 | 200 | 13.8 | 5.2 | 4239 | 100 | 353 | 4 | 80% |
| sparse-gplvsm | now, compiled | 1,000,000 | 60.1 | 60 | 200 | 9.1 | 80.3 | 26632 | 900 | 58 | 3 | 64% |
sparse-gplvsm (now) at n = 1,000,000: 200 of the epoch's 3,907 steps run; the epoch extrapolated: 52.6 s of setup + 3,907 steps = 452 s
sparse-gplvsm step / svgp-dense step at n = 1,000,000: 7.4x
"""


def test_the_table_reads_each_parts_figures_and_judges_the_goals(tmp_path):
    (tmp_path / "parts.tsv").write_text(
        "tests\t0\t40\tpytest\ngpu\t0\t30\tgpu.py\nlarge-1m\t0\t100\tlarge_n.py\nhost-tables\t0\t20\tfused_host_tables.py\n"
        "encoder\t124\t60\tencoder_throughput.py\nintent\t0\t50\tintent_scale.py\n"
    )
    (tmp_path / "intent.log").write_text(
        "| a class | documents | evidence of | L-BFGS iterations | the last mode's Newton steps | fit s | predict s | "
        "peak GiB | GPU peak GiB | accuracy | OOS AUROC |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
        "| 100 | 15,000 | all | 38 | - | 28.9 | 0.3 | 1.6 | 10.2 | 0.937 | 1.000 |\n"
    )
    (tmp_path / "host-tables.log").write_text(
        "| code | bags ms | bags + table ms | host's tables a step ms | / before |\n|---|---|---|---|---|\n"
        "| e1c23d7 | 4.51 | 8.07 | 15.11 | 1.00x |\n| now, on a GPU (cosines there) | 2.67 | 2.51 | 2.51 | 0.17x |\n"
        "table_cosines on cuda (synchronized, median): 0.434 ms\n"
    )
    (tmp_path / "tests.log").write_text("....\n12 passed, 1 skipped in 30.1s\n")
    (tmp_path / "gpu.log").write_text('{"part": "gram", "cpu": {}, "gpu": {}, "cpu_over_gpu": 41.5}\n')
    (tmp_path / "large-1m.log").write_text(LARGE)
    (tmp_path / "encoder.log").write_text(
        "| texts | tokens (mean) | threads | float32 docs/s | bfloat16 docs/s | bfloat16 / float32 | min cosine | "
        "tf-idf docs/s |\n|---|---|---|---|---|---|---|---|\n| 20ng | 176 | 1 | 2259.0 | 4100.0 | **1.81x** | 0.99995 | 1686 |\n"
    )
    rows = {(r[0], r[1]): r[2:] for r in _rows(tmp_path)}
    assert rows["tests", "device tests"] == ["12 passed, 1 skipped in 30.1s", "all pass", "yes"]
    assert rows["gpu", "gpu.py gram: CPU time / GPU time"][0] == "41.5x"
    name = "sparse-gplvsm at n = 1,000,000"
    assert rows["large-1m", f"{name}: ops (GPU: kernels) / step"] == ["634", "<= 60", "**no**"]
    assert rows["large-1m", f"{name}: GPU busy"] == ["41%", ">= 50%", "**no**"]
    compiled = "sparse-gplvsm (compiled) at n = 1,000,000"  # the fused step (MiniBatch(compile=True)), beside it
    assert rows["large-1m", f"{compiled}: ops (GPU: kernels) / step"] == ["58", "<= 60", "yes"]
    assert rows["large-1m", f"{compiled}: GPU busy"] == ["64%", ">= 50%", "yes"]
    assert rows["large-1m", "svgp-dense at n = 1,000,000: GPU busy"][2] == "yes"
    assert rows["large-1m", "sparse-gplvsm step / svgp-dense step (n = 1,000,000)"] == ["7.4x", "<= 2.0x", "**no**"]
    assert rows["large-1m", "sparse-gplvsm epoch at n = 1,000,000 (extrapolated)"] == ["452 s", "< 60 s", "**no**"]
    assert rows["encoder", "encoder, 20ng (176 tokens): bfloat16 docs/s"][0] == "4100.0"
    assert rows["encoder", "status, seconds"][0] == "timed out, 60 s"
    assert rows["host-tables", "host's tables of a fused step, e1c23d7: ms"][0] == "15.11"
    assert rows["host-tables", "host's tables of a fused step, now, on a GPU (cosines there): ms"][0] == "2.51"
    assert rows["host-tables", "table_cosines on cuda: ms"][0] == "0.434"
    assert rows["intent", "intent_scale, 15,000 documents, the evidence of all: fit s / predict s"][0] == "28.9 / 0.3"
    assert rows["all", "seconds"] == ["300 s", "< 480 s", "yes"]
    # a run of the parts PARTS= named: their seconds, the whole run's goal not judged on them
    rows = {(r[0], r[1]): r[2:] for r in _rows(tmp_path, PARTS="tests,gpu,large-1m,host-tables,encoder,intent")}
    assert rows["all", "seconds (the parts PARTS named)"] == ["300 s", "", ""] and ("all", "seconds") not in rows


def _rows(logs: Path, **env: str) -> list[list[str]]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "_gpu_table.py"), str(logs)],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "PARTS"}, **env},
    )
    assert out.returncode == 1  # a part timed out: said, and the exit status says it
    assert "parts that did not finish: encoder" in out.stdout
    lines = [line for line in out.stdout.splitlines() if line.startswith("| ") and not line.startswith("| part")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


@pytest.mark.slow
@pytest.mark.skipif(not DRY_RUN_POSSIBLE, reason="needs bash and timeout")
def test_the_dry_run_runs_every_part_on_the_cpu(tmp_path):
    # the benchmarks' children forked from their parents (benchmarks/_before.py), as in their own smoke
    # runs (tests/test_examples.py): 3-4 s of imports saved a child; a GPU run starts fresh interpreters
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "LOGS": str(tmp_path / "logs"),
        "OMP_NUM_THREADS": "1",
        "LVGP_BENCHMARK_FORK": "1",
    }
    out = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_all.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for part in ("tests", "gpu", "large-50k", "large-1m", "host-tables", "encoder", "intent"):
        assert f"| {part} | status, seconds | ok," in out.stdout
    assert "sparse-gplvsm at n = 1,000: ops (GPU: kernels) / step" in out.stdout
    assert "sparse-gplvsm step / svgp-dense step (n = 1,000)" in out.stdout
    assert "sparse-gplvsm epoch at n = 2,000 (extrapolated)" in out.stdout
    assert "encoder, 20ng" in out.stdout
    # the quick runs tests/test_examples.py leaves to this one print what it expects of them
    for script, part in GPU_DRY_RUN_PARTS.items():
        assert BENCHMARKS[script] in (tmp_path / "logs" / f"{part}.log").read_text(), script


@pytest.mark.skipif(not DRY_RUN_POSSIBLE, reason="needs bash and timeout")
def test_parts_runs_the_parts_it_names_and_refuses_a_name_it_does_not_know(tmp_path):
    # the device tool's command lasts at most 10 minutes and the parts' limits add up to 12: PARTS splits a run.
    # PYTHON=echo: each part's command is printed to its log, not run (the parts themselves: the dry run above)
    env = {**os.environ, "PYTHON": "echo", "LOGS": str(tmp_path / "logs")}
    script = str(ROOT / "benchmarks" / "gpu_all.sh")
    out = subprocess.run(
        ["bash", script, "--dry-run"], capture_output=True, text=True, env={**env, "PARTS": "gpu,encoder"}, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr
    ran = [line.split("\t")[:2] for line in (tmp_path / "logs" / "parts.tsv").read_text().splitlines()]
    assert ran == [["gpu", "0"], ["encoder", "0"]]
    assert sorted(path.name for path in (tmp_path / "logs").iterdir()) == ["encoder.log", "gpu.log", "parts.tsv"]
    assert (tmp_path / "logs" / "encoder.log").read_text() == "benchmarks/encoder_throughput.py --quick\n"
    assert out.stdout == f"benchmarks/_gpu_table.py {tmp_path / 'logs'}\n"  # the table of the parts that ran
    out = subprocess.run(
        ["bash", script, "--dry-run"],
        capture_output=True,
        text=True,
        env={**env, "PARTS": "tests,larg-50k", "LOGS": str(tmp_path / "refused")},
        timeout=60,
    )
    assert out.returncode == 2
    assert "PARTS: no part is named 'larg-50k'" in out.stderr and "large-50k-compiled-gpc" in out.stderr
    assert not (tmp_path / "refused").exists()  # refused before any part ran


def test_every_part_the_script_runs_is_a_name_parts_takes():
    """``KNOWN_PARTS`` (what ``PARTS=`` accepts) lists the names of the script's ``part`` calls, both modes' alike:
    a part added without its name there would be refused by ``PARTS=``."""
    import re

    script = (ROOT / "benchmarks" / "gpu_all.sh").read_text()
    known = re.search(r'^KNOWN_PARTS="([^"]*)"', script, flags=re.M).group(1).split()
    called = re.findall(r"^\s+part (\S+) \d+ ", script, flags=re.M)
    assert set(called) == set(known) and len(known) == len(set(known))
    assert len(called) > len(known)  # the dry run's calls and the GPU run's
