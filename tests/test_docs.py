"""The documentation's own references resolve: a nitpicky Sphinx build (``-n``) may warn about
targets in torch, numpy or scikit-learn (no intersphinx offline), never about an ``lvgp`` name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def nitpicky_build(tmp_path_factory):
    """The site built once with ``-n`` (nitpicky): ``(stderr, the html folder)``."""
    if not (ROOT / "docs" / "conf.py").exists():
        pytest.skip("no docs/ in this installation")
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    html = tmp_path_factory.mktemp("docs") / "html"
    # toc_object_entries off: the API pages' right-hand tables of every class and function (Sphinx's own,
    # kept in `make docs`) resolved for every page took a quarter of this build
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-n",
            "-q",
            "-b",
            "html",
            "-D",
            "toc_object_entries=0",
            str(ROOT / "docs"),
            str(html),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stderr, html


def test_the_site_builds_without_a_warning(nitpicky_build):
    """What ``sphinx -W`` enforced in ``make test`` before (issue 60: the site was built twice there,
    once by ``make docs`` and once here): the build's only warnings are the nitpicky build's own,
    references to names of other packages (torch, pathlib, ...) that the offline build cannot link."""
    stderr, _ = nitpicky_build
    problems = [
        line
        for line in stderr.splitlines()
        if ("WARNING" in line or "ERROR" in line) and "reference target not found" not in line
    ]
    assert not problems, "\n".join(problems[:20])


def test_every_lvgp_reference_in_the_docs_resolves(nitpicky_build):
    stderr, _ = nitpicky_build
    unresolved = sorted(set(re.findall(r"reference target not found: (lvgp\S*)", stderr)))
    assert not unresolved, f"unresolved lvgp references in the docs: {unresolved}"


#: pages with equations of each kind: Markdown pages (inline and display math) and API pages
#: (docstring math); the tutorials hold none
MATH_PAGES = [
    "models/ldk.html",
    "models/encoders.html",
    "models/gplvsm.html",
    "generated/lvgp.kernels.latent_distribution.html",
    "generated/lvgp.models.gpc.html",
    "generated/lvgp.kernels.embedding.html",
]
#: math MathJax has not typeset: an element of class "math" whose text still opens with a delimiter
RAW_LATEX = re.compile(r'class="math[^"]*"[^>]*>\s*\\[(\[]')


def test_a_browser_shows_the_equations_typeset(nitpicky_build, tmp_path):
    """Issue 59: opened in a real browser, every page with equations showed raw LaTeX (``\\(\\mathbf
    x_v \\in ...\\)``): the bundled MathJax 2.7 asked for fonts it does not ship, and skipped the
    sections MyST marks ``tex2jax_ignore``. Headless Chromium (Debian's ``chromium``; ``make test``
    installs it where it can) loads each page over HTTP, MathJax runs, and the DOM holds no raw
    LaTeX in a math element; the page also contains math to check."""
    import functools
    import http.server
    import shutil
    import threading

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium)")
    _, html = nitpicky_build

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 -- the base class's signature
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for page in MATH_PAGES:
            assert RAW_LATEX.search((html / page).read_text()), f"{page} has no math to check"
            dom = subprocess.run(
                [
                    browser,
                    *("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"),
                    *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
                    f"--user-data-dir={tmp_path / 'profile'}",
                    "--virtual-time-budget=20000",  # MathJax typesets after the load event
                    "--dump-dom",
                    f"http://127.0.0.1:{server.server_port}/{page}",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            ).stdout
            assert "</html>" in dom, f"{page}: Chromium returned no page"
            raw = RAW_LATEX.findall(dom)
            assert not raw and 'type="math/tex' in dom, f"{page}: {len(raw)} equations not typeset"
    finally:
        server.shutdown()
