"""The sentence encoder's on-disk cache under the conditions a shared machine gives it (issue 59,
fuzz defects 1 and 2 and the smaller cache items): read-only, in a folder that cannot be made, on
a full disk, shared by two processes, holding unusable vectors. In each, ``encode`` returns the
vectors of the cache-free computation, never renames a readable file, and warns once.

Permissions do not bind root (CI runs as root), so a read-only file is SQLite's own read-only
mode, and a full disk SQLite's own error, put in the way of lvgp's connection."""

from __future__ import annotations

import sqlite3
import warnings

import pytest
import torch

pytest.importorskip("transformers")

from lvgp.encoders import SentenceEncoder  # noqa: E402
from lvgp.warnings import CacheWarning  # noqa: E402

TEXTS = ["the film was a fine film", "a dull plot", "", "plot twists, fine acting and a dull ending!"]
NEW = ["a new text", "another new text"]


@pytest.fixture
def encoder(tmp_path, monkeypatch):
    monkeypatch.setenv("LVGP_DATA", str(tmp_path / "data"))
    return SentenceEncoder.from_config(words=["film", "fine", "dull", "plot"], seed=5)


def _stored(path) -> dict[str, bytes]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, vector FROM vectors").fetchall())


def _recorded(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, [w for w in caught if issubclass(w.category, CacheWarning)]


def test_a_read_only_cache_is_read_and_kept(encoder, monkeypatch):
    """Fuzz defect 1: adding one text to a readable, unwritable cache renamed the whole valid file
    'vectors.damaged'."""
    first = encoder.encode(TEXTS)
    path = encoder._cache().path
    before = _stored(path)
    connect = sqlite3.connect

    def read_only(database, *args, **kwargs):
        if kwargs.pop("uri", False):
            return connect(database, *args, uri=True, **kwargs)
        return connect(f"file:{database}?mode=ro", *args, uri=True, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", read_only)
    # stored vectors come from the file: changed there, the change is what comes back
    out, caught = _recorded(lambda: encoder.encode(TEXTS + NEW))
    torch.testing.assert_close(out[: len(TEXTS)], first, atol=0, rtol=0)
    torch.testing.assert_close(out[len(TEXTS) :], encoder.encode(NEW, cache=False), atol=0, rtol=0)
    assert len(caught) == 1 and "cannot be written" in str(caught[0].message) and str(path) in str(caught[0].message)
    # once per file and process; the file untouched, nothing set aside
    _, again = _recorded(lambda: encoder.encode(["a third new text"]))
    assert again == []
    monkeypatch.setattr(sqlite3, "connect", connect)
    assert _stored(path) == before and sorted(p.name for p in path.parent.iterdir()) == ["vectors.sqlite"]


def test_a_cache_folder_that_cannot_be_made_is_no_cache(encoder, tmp_path, monkeypatch):
    """Fuzz defect 2: NotADirectoryError (or PermissionError from the rename) failed encode()."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LVGP_DATA", str(blocker))
    out, caught = _recorded(lambda: encoder.encode(TEXTS))
    torch.testing.assert_close(out, encoder.encode(TEXTS, cache=False), atol=0, rtol=0)
    assert len(caught) == 1 and "cannot be written" in str(caught[0].message)
    assert blocker.read_text() == "not a folder"


def test_a_full_disk_keeps_what_is_stored(encoder, monkeypatch):
    encoder.encode(TEXTS)
    path = encoder._cache().path
    before = _stored(path)
    connect = sqlite3.connect

    class FullDisk:
        def __init__(self, db):
            self.db = db

        def __getattr__(self, name):
            return getattr(self.db, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.db.__exit__(*exc)

        def executemany(self, *args):
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: FullDisk(connect(*a, **k)))
    out, caught = _recorded(lambda: encoder.encode(TEXTS + NEW))
    torch.testing.assert_close(out, encoder.encode(TEXTS + NEW, cache=False), atol=1e-6, rtol=0)
    assert len(caught) == 1 and "disk is full" in str(caught[0].message)
    monkeypatch.setattr(sqlite3, "connect", connect)
    assert _stored(path) == before and path.exists()


def test_a_damaged_file_that_cannot_be_moved_is_left_and_not_used(encoder, monkeypatch):
    encoder.encode(TEXTS)
    path = encoder._cache().path
    path.write_bytes(b"damaged" * 100)

    def refuse(self, target):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(path), "replace", refuse)
    out, caught = _recorded(lambda: encoder.encode(TEXTS))
    torch.testing.assert_close(out, encoder.encode(TEXTS, cache=False), atol=1e-6, rtol=0)
    assert caught and "cannot be moved aside" in str(caught[0].message)


@pytest.mark.parametrize("bad", ["nan", "short"])
def test_unusable_stored_vectors_are_recomputed_and_replaced(encoder, bad):
    """A NaN vector inside a readable cache was returned as NaN; one of the wrong size was
    recomputed at every call but never replaced."""
    first = encoder.encode(TEXTS)
    path = encoder._cache().path
    key = encoder._text_key(TEXTS[1])
    value = torch.full((encoder.dim,), float("nan")) if bad == "nan" else torch.ones(3)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE vectors SET vector = ? WHERE key = ?", (value.numpy().tobytes(), key))
    out = encoder.encode(TEXTS)
    torch.testing.assert_close(out, first, atol=1e-6, rtol=0)
    stored = torch.frombuffer(bytearray(_stored(path)[key]), dtype=torch.float32)
    torch.testing.assert_close(stored, first[1], atol=1e-6, rtol=0)


def _encode_in_a_process(folder: str, texts: list[str], queue) -> None:
    import os

    os.environ["LVGP_DATA"] = folder
    torch.set_num_threads(1)
    encoder = SentenceEncoder.from_config(words=["film", "fine", "dull", "plot"], seed=5)
    queue.put((texts, encoder.encode(texts, batch_size=1).tolist()))


def test_two_processes_share_one_cache(encoder, tmp_path):
    """Two processes encode overlapping lists into one file at once: both get the cache-free
    vectors, and the file holds every text once."""
    texts = [f"text number {i} with a fine film" for i in range(40)]
    # two processes forked from the smoke runs' server (torch, transformers and lvgp imported there once;
    # tests/_forked_run.py), or spawned where the platform has no forkserver: each its own process and connection
    from tests._forked_run import process_context

    context = process_context()
    queue = context.Queue()
    workers = [
        context.Process(target=_encode_in_a_process, args=(str(tmp_path / "data"), part, queue))
        for part in (texts[:30], texts[10:])
    ]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=240) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    expected = encoder.encode(texts, cache=False)
    for part, vectors in results:
        rows = [texts.index(t) for t in part]
        torch.testing.assert_close(torch.tensor(vectors), expected[rows], atol=1e-6, rtol=0)
    assert len(_stored(encoder._cache().path)) == len(texts)
    torch.testing.assert_close(encoder.encode(texts), expected, atol=1e-6, rtol=0)
