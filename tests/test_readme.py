"""The README is a contract: every Python snippet of README.md and the getting-started page runs as
written (the page's blocks in order, in one fresh interpreter); every ``lvgp compare`` command in the
README's and the documentation's shell blocks names only options its study has (checked by the CLI's
own parser) and writes under ``runs/``, never into the committed ``results/`` (the commands that made
those results, in ``results/README.md``'s shell blocks, are parsed too); every ``make`` target
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


#: the commands that made the committed results (``results/README.md``, which the docs' results pages
#: include): they parse too (they may write into ``results/``)
RESULTS_COMPARE = [
    ("results/README.md", c) for c in _shell_commands(ROOT / "results" / "README.md") if c.startswith("lvgp compare")
]


def test_the_pages_show_compare_commands():
    assert len(COMPARE) >= 6 and len(RESULTS_COMPARE) >= 10


@pytest.mark.parametrize(
    "page, command", COMPARE + RESULTS_COMPARE, ids=[f"{p}:{c[:60]}" for p, c in COMPARE + RESULTS_COMPARE]
)
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
    files there) with one thread; the fits at the pages' settings converge and cover (no
    ConvergenceWarning, no UncertaintyWarning)."""
    blocks = _python_blocks(page)
    assert blocks
    script = tmp_path / "snippets.py"
    script.write_text("\n\n".join(blocks))
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LVGP_THREADS": "1", "PYTHONWARNINGS": "default"}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for warning in ("ConvergenceWarning", "UncertaintyWarning"):
        assert warning not in proc.stderr, proc.stderr[-3000:]


@pytest.mark.parametrize("page, command", COMPARE, ids=[f"{p}:{c[:60]}" for p, c in COMPARE])
def test_compare_commands_write_under_runs(page, command):
    argv = shlex.split(command)
    if "--help" in argv or "--report-only" in argv:
        return
    out = argv[argv.index("--out") + 1]
    assert out.startswith("runs/"), f"{page}: `{command}` writes into {out}, not under runs/"


#: how each study's README command is cut down to run in seconds: the same methods and code path,
#: one split, tiny sizes and budgets, the first value of every grid
_SMALL = {
    "regression": dict(splits=1, train_size=60, dev_size=30, test_size=30, max_iter=3, vb_max_iter=3, sparse_epochs=1),
    "topics": dict(folds=2, max_iter=2, documents=300),
    "categorical": dict(splits=1, max_iter=5, impute_iter=5, inducing=8),
    "classification": dict(splits=1, train_sizes=(20,), test_size=40, max_iter=3, ldk_max_iter=2, max_features=200),
    "matching": dict(sets=1, train=60, dev=10, test=10, max_iter=2, cca_components=(8,)),
    "open-set": dict(splits=1, per_class=(3,), test_size=60, ldk_max_iter=2),
    "active": dict(splits=1, budget=12, batch=4, pool_size=200, test_size=40, ldk_max_iter=2),
}


def _reduced(study):
    import dataclasses

    changes = {k: v for k, v in _SMALL[study.kind].items() if hasattr(study, k)}
    for field in dataclasses.fields(study):
        value = getattr(study, field.name)
        if isinstance(value, tuple) and field.name not in ("methods", "train_sizes", "drop_columns") and len(value) > 1:
            changes.setdefault(field.name, value[:1])  # the first value of every grid
    return dataclasses.replace(study, **changes)


#: each distinct command once (the README's and a docs page's are often the same text: one cut-down run shows both
#: run), named by the first page that shows it
_FIRST_PAGE: dict[str, tuple[str, str]] = {}
for _page, _command in COMPARE:
    if "--ray" in _command or "--help" in _command or "--report-only" in _command or "my_" in _command:
        continue  # Ray's own test; not a run; a summary's re-read; my_*: a user's own file
    _FIRST_PAGE.setdefault(_command, (_page, _command))
RUNNABLE = list(_FIRST_PAGE.values())


@pytest.mark.network
@pytest.mark.parametrize("page, command", RUNNABLE, ids=[f"{p}:{c[:60]}" for p, c in RUNNABLE])
def test_every_compare_command_runs_cut_down(page, command, tmp_path):
    """Every README/docs study command (each distinct text once) runs, its methods and code path unchanged, with one
    split, tiny sizes and the first value of each grid (the full commands take minutes to hours; their times are stated
    beside them)."""
    from lvgp.experiments.study import study_from_options

    args = build_parser().parse_args(shlex.split(command)[1:])
    study = _reduced(study_from_options(args.study_class, args))
    summary = study.run(tmp_path / "out", progress=False)
    assert not summary["failures"], summary["failures"]
    assert summary["records"]
