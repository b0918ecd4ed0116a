"""Full-page screenshots of the built site in headless Chromium: the home page, an API page, a
tutorial, the results page and the text-classification results, to look at what a reader sees (``make docs`` first).

    python docs/screenshots.py [OUT_DIR]     # default docs/_build/screenshots

Needs a Chromium binary (Debian: ``apt-get install chromium``); serves ``docs/_build/html`` on a
local port for the duration and writes one PNG per page.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HTML = Path(__file__).resolve().parent / "_build" / "html"
PAGES = {
    "home": "index.html",
    "api-gplvsm-regressor": "generated/lvgp.models.regressor.html",
    "tutorial-gplvsm": "tutorials/02_gplvsm_reviews.html",
    "results": "results.html",
    "results-classification": "results/classification.html",
    "uncertainty": "models/uncertainty.html",
    "results-open-set": "results/open_set.html",
    "results-active": "results/active.html",
    "tutorial-uncertainty": "tutorials/07_uncertainty_at_work.html",
}
#: the window's height in pixels: long pages are shot to this depth (Chromium's limit is 16,384)
HEIGHT = 16000


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 -- the base class's signature
        pass


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else HTML.parent / "screenshots"
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        print("no Chromium found (apt-get install chromium)")
        return 1
    if not (HTML / "index.html").exists():
        print(f"no built site in {HTML}: run make docs first")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for name, page in PAGES.items():
            with tempfile.TemporaryDirectory() as profile:
                subprocess.run(
                    [
                        browser,
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-quic",
                        "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        f"--user-data-dir={profile}",
                        f"--window-size=1280,{HEIGHT}",
                        f"--screenshot={out / (name + '.png')}",
                        f"http://127.0.0.1:{server.server_port}/{page}",
                    ],
                    capture_output=True,
                    timeout=120,
                    check=True,
                )
            print(out / (name + ".png"))
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
