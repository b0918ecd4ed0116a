"""The README is a contract: every Python snippet of README.md and the getting-started page runs as
written (the page's blocks in order, in one fresh interpreter); every ``lvgp compare`` command in the
README's and the documentation's shell blocks names only options its study has (checked by the CLI's
own parser) and writes under ``runs/``, never into the committed ``results/``; every ``make`` target
the README names exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lvgp.experiments.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def _shell_commands(path: Path) -> list[str]:
    """The commands of a page's ```bash blocks, continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


COMPARE = [
    (p.relative_to(ROOT).as_posix(), c) for p in PAGES for c in _shell_commands(p) if c.startswith("lvgp compare")
]


def test_the_pages_show_compare_commands():
    assert len(COMPARE) >= 6


@pytest.mark.parametrize("page, command", COMPARE, ids=[f"{p}:{c[:60]}" for p, c in COMPARE])
def test_compare_command_names_only_existing_options(page, command):
    argv = shlex.split(command)[1:]
    try:
        args = build_parser().parse_args(argv)  # argparse exits on an unknown option or a bad value
    except SystemExit as exit_:
        if exit_.code == 0 and "--help" in argv:
            return  # help printed: the command is what the page says it is
        pytest.fail(f"{page}: `{command}` does not parse (exit {exit_.code})")
    assert hasattr(args, "run"), command


def test_make_targets_named_in_the_readme_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    named = set(re.findall(r"`make ([\w-]+)", (ROOT / "README.md").read_text()))
    named |= {c.split()[1] for c in _shell_commands(ROOT / "README.md") if c.startswith("make ")}
    assert named and named <= targets, sorted(named - targets)


def _python_blocks(path: Path) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)]


SNIPPET_PAGES = [ROOT / "README.md", ROOT / "docs" / "getting_started.md", ROOT / "docs" / "index.md"]


@pytest.mark.parametrize("page", SNIPPET_PAGES, ids=lambda p: p.name)
def test_every_python_snippet_runs_as_written(page, tmp_path):
    """The page's Python blocks, in order, in one interpreter started in an empty folder (they save
    files there) with one thread."""
    blocks = _python_blocks(page)
    assert blocks
    script = tmp_path / "snippets.py"
    script.write_text("\n\n".join(blocks))
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LVGP_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("page, command", COMPARE, ids=[f"{p}:{c[:60]}" for p, c in COMPARE])
def test_compare_commands_write_under_runs(page, command):
    argv = shlex.split(command)
    if "--help" in argv or "--report-only" in argv:
        return
    out = argv[argv.index("--out") + 1]
    assert out.startswith("runs/"), f"{page}: `{command}` writes into {out}, not under runs/"
