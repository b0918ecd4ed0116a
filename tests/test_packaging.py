"""What a user installs: ``python -m build`` makes an sdist and a wheel that ``twine check``
accepts (with the dev tools; otherwise pip builds the wheel); the wheel ships the ``lvgp`` package
alone (no tests, results, notebooks or benchmarks); installed into a fresh folder it imports, fits
a tiny model and runs its CLI away from the source tree."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=600, **kwargs)


def _build(out: Path) -> Path:
    """The wheel (and, with ``build``, the sdist, both checked by ``twine`` when it is there),
    built without isolation: no network needed."""
    if importlib.util.find_spec("build") is not None:
        built = _run("-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT))
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
        assert len(list(out.glob("lvgp-*.tar.gz"))) == 1
        if importlib.util.find_spec("twine") is not None:
            checked = _run("-m", "twine", "check", "--strict", *map(str, out.glob("lvgp-*")))
            assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    else:
        built = _run("-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(out))
        assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = out.glob("lvgp-*.whl")
    return wheel


@pytest.mark.skipif(not (ROOT / "pyproject.toml").exists(), reason="not a source checkout")
def test_the_package_builds_ships_lvgp_alone_and_works_installed(tmp_path):
    pytest.importorskip("setuptools")  # the build backend, used without isolation
    wheel = _build(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"lvgp", next(t for t in tops if t.endswith(".dist-info"))}, tops
    for part in ("lvgp/datasets/registry.py", "lvgp/experiments/cli.py", "lvgp/kernels/latent_distribution.py"):
        assert part in names
    assert "lvgp/py.typed" in names  # PEP 561: mypy reads lvgp's annotations (issue 59)

    site = tmp_path / "site"
    installed = _run("-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel))
    assert installed.returncode == 0, installed.stderr[-2000:]
    # away from the source tree, so that the installed copy is the one imported
    away = {"cwd": tmp_path, "env": {**os.environ, "PYTHONPATH": str(site)}}
    # one interpreter a check of the installed copy (each imports lvgp: 3-4 s on two cores)
    fit = (
        "import lvgp; print(lvgp.__file__); texts = ['good film', 'bad film', 'great plot', 'awful plot'] * 2; "
        "reg = lvgp.GPLVSMRegressor(optimizer=lvgp.Adam(max_iter=3), random_state=0).fit(texts, [1.0, -1.0, 1.0, -1.0] * 2); "
        "print(reg.predict(['good plot']))"
    )
    fitted = _run("-W", "ignore", "-c", fit, **away)
    assert fitted.returncode == 0, fitted.stderr[-2000:]
    assert fitted.stdout.startswith(str(site)), fitted.stdout  # the installed copy is the one imported
    cli = _run(str(site / "bin" / "lvgp"), "compare", "--help", **away)  # the console script pip wrote
    assert cli.returncode == 0 and "classification" in cli.stdout, cli.stderr[-2000:]
    if importlib.util.find_spec("mypy") is not None:  # the installed package's annotations are read, not Any
        (tmp_path / "user.py").write_text("import lvgp\nwrong: int = lvgp.Vocabulary()\n")
        # lvgp's dependencies not analysed (their names Any): what is checked is lvgp's own, in 2 s instead of 10
        (tmp_path / "mypy.ini").write_text(
            "[mypy]\n[mypy-torch.*,gpytorch.*,pyro.*,sklearn.*,scipy.*,transformers.*]\nfollow_imports = skip\n"
        )
        checked = _run("-m", "mypy", "--config-file", "mypy.ini", "--no-incremental", "user.py", **away)
        assert 'expression has type "Vocabulary"' in checked.stdout, checked.stdout[-2000:]


def test_the_version_option_prints_the_packages_version(capsys):
    from lvgp import __version__
    from lvgp.experiments.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"lvgp {__version__}\n"
