"""Texts to padded word-index sets."""

from __future__ import annotations

import functools
import itertools
import json
import re
import sys
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ..warnings import EmptyDocumentsWarning, TruncationWarning, UnseenWordsWarning, warn
from .padded import PAD, RaggedIds, _rows_text

#: the negations among scikit-learn's English stop words: words that reverse a sentence's sense
#: ("not good"), which a stop list made for topics drops and a sentiment model needs
NEGATIONS = frozenset(
    {
        "cannot",
        "cant",
        "neither",
        "never",
        "no",
        "nobody",
        "none",
        "noone",
        "nor",
        "not",
        "nothing",
        "nowhere",
        "without",
    }
)
#: scikit-learn's English stop words less :data:`NEGATIONS` (the tf-idf baseline's stop list,
#: :func:`lvgp.baselines.encoder.default_tfidf`; ``Vocabulary(stop_words=...)`` takes it too)
ENGLISH_STOP_WORDS_BUT_NEGATIONS = ENGLISH_STOP_WORDS - NEGATIONS


@functools.lru_cache(maxsize=1)
def _token_pattern() -> re.Pattern:
    """Runs of letters of any alphabet with their combining marks (Unicode category M: Hindi
    vowel signs, the dot of a lower-cased "İ"), starting with a letter; digits, underscores and
    punctuation separate tokens. Python's ``re`` has no ``\\p{M}``: the class of combining marks
    is built once from :mod:`unicodedata`, on first use."""
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    prev = 0
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp))[0] == "M":
            start = cp if start is None else start
            prev = cp
        elif start is not None:
            ranges.append((start, prev))
            start = None
    marks = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(rf"[^\W\d_](?:[^\W\d_]|[{marks}])*")


@functools.lru_cache(maxsize=8)
def _ascii_token_pattern(shortest: int) -> re.Pattern:
    """:func:`_token_pattern`'s tokens of at least ``shortest`` characters, in an ASCII text: runs of at least
    ``shortest`` ASCII letters (such a text has no other letter and no combining mark, and a run too short has no
    match inside it either). The same tokens as the Unicode classes, about four times as fast through Python's
    ``re`` (``benchmarks/README.md``, "Tokenizing ASCII texts")."""
    return re.compile(rf"[A-Za-z]{{{int(shortest)},}}")


def _token_matches(text: str, shortest: int) -> tuple[re.Pattern, int]:
    """The pattern that finds the tokens of ``text`` (:func:`_ascii_token_pattern` where it is ASCII, else
    :func:`_token_pattern`) and the shortest match still to drop (1 where the pattern has no shorter one)."""
    if text.isascii() and isinstance(shortest, int) and shortest >= 1:  # else (unchecked options) as before
        return _ascii_token_pattern(shortest), 1
    return _token_pattern(), shortest


_FORMAT = "lvgp.Vocabulary/1"

#: the tokens :class:`TokenMemo` holds at most, over all its texts (each text counts its tokens plus one):
#: about 32 MB of references to the (interned) tokens, beside the texts it keeps as keys; 0 switches the memo off
TOKEN_MEMO_TOKENS = 2**22


class TokenMemo:
    """The tokens of recently tokenized texts, by the text and the tokenizer's options (lower-casing, the
    shortest token, the stop words): a text tokenized again, by any :class:`Vocabulary` with the same
    options, is a lookup, not a pass of the regular expression. An active learner's pool is tokenized
    again by every round's new vocabulary, a test set by every refit (``benchmarks/README.md``,
    ``active_round.py``). Bounded by :data:`TOKEN_MEMO_TOKENS`, the least recently used text forgotten
    first; the tokens are interned, so that a word of many texts is held once. Tokenizing is a pure
    function of the text and the options: the memo changes no result. :meth:`clear` empties it
    (``lvgp.bow.vocabulary.TOKENS.clear()``)."""

    def __init__(self) -> None:
        self._held: OrderedDict[tuple, tuple[str, ...]] = OrderedDict()
        self._tokens = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> tuple[str, ...] | None:
        """The tokens held for ``key`` (``(text, lowercase, min_token_len, stop words)``), now the most
        recently used, or ``None``."""
        with self._lock:
            hit = self._held.get(key)
            if hit is not None:
                self._held.move_to_end(key)
            return hit

    def put(self, key: tuple, tokens: tuple[str, ...]) -> None:
        """Hold ``tokens`` for ``key``, forgetting the least recently used texts beyond the bound (a text
        of more tokens than the bound is not held)."""
        limit = TOKEN_MEMO_TOKENS
        with self._lock:
            if len(tokens) + 1 > limit or key in self._held:
                return
            self._held[key] = tokens
            self._tokens += len(tokens) + 1
            while self._tokens > limit:
                _, old = self._held.popitem(last=False)
                self._tokens -= len(old) + 1

    def clear(self) -> None:
        """Forget every text."""
        with self._lock:
            self._held.clear()
            self._tokens = 0

    def __len__(self) -> int:
        return len(self._held)


#: the memo every :class:`Vocabulary` tokenizes through
TOKENS = TokenMemo()


def _is_pretokenized(doc) -> bool:
    return isinstance(doc, (list, tuple)) and all(isinstance(t, str) for t in doc)


class Vocabulary:
    """A word <-> id mapping fitted on training texts.

    Tokenization of a string: Unicode NFC normalization (so that "é" written as "e" plus a
    combining accent is one letter), lower-case (if ``lowercase``), split into runs of letters of
    any alphabet with their combining marks (digits, punctuation and underscores separate
    tokens), drop tokens shorter than ``min_token_len`` (in code points) and stop words. A document given as a list of strings is taken
    as already tokenized: its tokens are used verbatim (no lower-casing, stop-word or
    length filter), so callers keep full control over tokenization.

    Word ids are assigned in alphabetical order (as scikit-learn's ``CountVectorizer``
    does), after the ``min_df``/``max_df``/``max_features`` filters.

    The tokens of recently tokenized strings are remembered (:class:`TokenMemo`, bounded by
    :data:`TOKEN_MEMO_TOKENS`): a text seen again, by this vocabulary or another with the same
    tokenizer options, is not tokenized again.

    Args:
        min_df: keep words occurring in at least this many training documents (int)
            or this fraction of them (float in (0, 1]).
        max_df: drop words occurring in more than this many documents (int) or this
            fraction (float). ``1.0`` keeps all.
        max_features: keep only the most frequent words (by corpus frequency, ties
            broken alphabetically).
        stop_words: ``"english"`` (scikit-learn's list), ``None``, or an iterable of words.
        min_token_len: shortest token kept.
        lowercase: lower-case strings before tokenizing.

    Example:
        >>> vocab = Vocabulary(min_token_len=2).fit(["good good film", "bad film"])
        >>> vocab.words
        ['bad', 'film', 'good']
        >>> vocab.encode(["good film", "bad"])
        tensor([[ 2,  1],
                [ 0, -1]])
    """

    def __init__(
        self,
        min_df: int | float = 1,
        max_df: int | float = 1.0,
        max_features: int | None = None,
        stop_words: str | Iterable[str] | None = "english",
        min_token_len: int = 3,
        lowercase: bool = True,
    ):
        self.min_df = min_df
        self.max_df = max_df
        self.max_features = max_features
        self.stop_words = stop_words
        self.min_token_len = min_token_len
        self.lowercase = lowercase
        self._words: list[str] | None = None
        self._index: dict[str, int] | None = None

    # ------------------------------------------------------------------ tokenizing
    def _stop_set(self) -> frozenset[str]:
        if self.stop_words is None:
            return frozenset()
        if isinstance(self.stop_words, str):
            if self.stop_words != "english":
                raise ValueError(f"stop_words must be 'english', None or a list of words; got {self.stop_words!r}")
            return ENGLISH_STOP_WORDS
        return frozenset(self.stop_words)

    def tokenize(self, doc: str | Sequence[str]) -> list[str]:
        """Tokens of one document (see the class docstring for the rules)."""
        if _is_pretokenized(doc):
            return list(doc)
        return list(self._string_tokens(doc, self._stop_set()))

    def _string_tokens(self, doc: object, stop: frozenset[str]) -> tuple[str, ...]:
        """:meth:`tokenize` of a string, through the memo of recent texts (:class:`TokenMemo`); ``stop``:
        :meth:`_stop_set`."""
        if not isinstance(doc, str):
            raise TypeError(f"a document must be a string or a list of string tokens; got {type(doc).__name__}")
        key = (doc, self.lowercase, self.min_token_len, stop)
        tokens = TOKENS.get(key)
        if tokens is None:
            text = unicodedata.normalize("NFC", doc)
            text = text.lower() if self.lowercase else text
            pattern, shortest = _token_matches(text, self.min_token_len)
            found = pattern.findall(text)
            if shortest > 1:
                found = [t for t in found if len(t) >= shortest]
            # the stop words dropped and the tokens interned in C (itertools, map): a sixth of the filter's time
            tokens = tuple(map(sys.intern, itertools.filterfalse(stop.__contains__, found)))
            TOKENS.put(key, tokens)
        return tokens

    def token_spans(self, doc: str) -> tuple[str, list[tuple[str, int, int]]]:
        """The text :meth:`tokenize` reads (``doc`` NFC-normalized, lower-cased if ``lowercase``)
        and each kept token with its character span ``[start, end)`` in that text: what a
        contextual encoder needs to find the vectors of a document's words
        (:meth:`lvgp.encoders.SentenceEncoder.word_vectors`). The tokens are those of
        :meth:`tokenize`, in order."""
        if not isinstance(doc, str):
            raise TypeError(f"token_spans needs a string document; got {type(doc).__name__}")
        text = unicodedata.normalize("NFC", doc)
        text = text.lower() if self.lowercase else text
        stop = self._stop_set()
        pattern, shortest = _token_matches(text, self.min_token_len)
        spans = [
            (m.group(), m.start(), m.end())
            for m in pattern.finditer(text)
            if len(m.group()) >= shortest and m.group() not in stop
        ]
        return text, spans

    def _tokenize_all(self, docs, name: str) -> list[Sequence[str]]:
        """The tokens of every document (read-only sequences: a text's come from the memo)."""
        if isinstance(docs, str):
            raise TypeError(f"{name} must be a sequence of documents, not a single string")
        stop = self._stop_set()
        return [list(d) if _is_pretokenized(d) else self._string_tokens(d, stop) for d in docs]

    # ------------------------------------------------------------------ fitting
    def _check_options(self) -> None:
        def count_or_fraction(name: str, value) -> None:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} must be an int (documents) or a float (fraction); got {value!r}")
            if isinstance(value, (int, np.integer)) and value < 1 or isinstance(value, float) and not 0 < value <= 1:
                raise ValueError(
                    f"{name} must be a positive number of documents or a fraction in (0, 1]; got {value!r}"
                )

        count_or_fraction("min_df", self.min_df)
        count_or_fraction("max_df", self.max_df)
        if self.max_features is not None and (
            isinstance(self.max_features, bool)
            or not isinstance(self.max_features, (int, np.integer))
            or self.max_features < 1
        ):
            raise ValueError(f"max_features must be None or a positive integer; got {self.max_features!r}")
        if (
            isinstance(self.min_token_len, bool)
            or not isinstance(self.min_token_len, (int, np.integer))
            or self.min_token_len < 1
        ):
            raise ValueError(f"min_token_len must be a positive integer; got {self.min_token_len!r}")

    def fit(self, docs: Iterable[str | Sequence[str]]) -> Vocabulary:
        """Learn the vocabulary from training documents; returns ``self``."""
        self._check_options()
        tokens = self._tokenize_all(docs, "docs")
        n = len(tokens)
        if n == 0:
            raise ValueError("docs is empty: a vocabulary needs at least one training document")
        df: Counter[str] = Counter()
        tf: Counter[str] = Counter()
        for toks in tokens:
            tf.update(toks)
            df.update(set(toks))
        lo = self.min_df if isinstance(self.min_df, int) else int(np.ceil(self.min_df * n))
        hi = self.max_df if isinstance(self.max_df, int) else int(np.floor(self.max_df * n))
        kept = [w for w, c in df.items() if lo <= c <= hi]
        if self.max_features is not None and len(kept) > self.max_features:
            kept.sort(key=lambda w: (-tf[w], w))
            kept = kept[: self.max_features]
        if not kept:
            raise ValueError(
                f"no word survives the vocabulary filters (min_df={self.min_df}, max_df={self.max_df}, "
                f"min_token_len={self.min_token_len}, stop_words={self.stop_words!r}) on {n} documents"
            )
        self._set_words(sorted(kept))
        return self

    def _set_words(self, words: list[str]) -> None:
        if len(set(words)) != len(words):
            raise ValueError("vocabulary words must be unique")
        self._words = list(words)
        self._index = {w: i for i, w in enumerate(self._words)}

    @classmethod
    def from_words(cls, words: Iterable[str], **options) -> Vocabulary:
        """A fitted vocabulary with the given words (ids in the given order)."""
        vocab = cls(**options)
        vocab._set_words(list(words))
        return vocab

    def _check_fitted(self) -> None:
        if self._words is None:
            raise RuntimeError("this Vocabulary is not fitted yet: call fit(docs) first")

    @property
    def is_fitted(self) -> bool:
        return self._words is not None

    @property
    def _fitted_words(self) -> list[str]:
        if self._words is None:
            raise RuntimeError("the vocabulary is not fitted; call fit() first")
        return self._words

    @property
    def _fitted_index(self) -> dict[str, int]:
        if self._index is None:
            raise RuntimeError("the vocabulary is not fitted; call fit() first")
        return self._index

    @property
    def words(self) -> list[str]:
        """The words, position = id."""
        self._check_fitted()
        return list(self._fitted_words)

    def __len__(self) -> int:
        self._check_fitted()
        return len(self._fitted_words)

    def __contains__(self, word: str) -> bool:
        self._check_fitted()
        return word in self._fitted_index

    def index(self, word: str) -> int:
        """The id of ``word`` (``KeyError`` if unknown)."""
        self._check_fitted()
        return self._fitted_index[word]

    def __repr__(self) -> str:
        """The size and every setting that is not the default (scikit-learn's ``print_changed_only``), so that two
        vocabularies that tokenize differently never print alike; a stop-word list prints as its length."""
        size = len(self._words) if self._words is not None else "unfitted"
        defaults = Vocabulary().get_config()
        changed = []
        for name, value in self.get_config().items():
            if value != defaults[name]:
                shown = f"<{len(value)} words>" if name == "stop_words" and isinstance(value, list) else repr(value)
                changed.append(f", {name}={shown}")
        return f"Vocabulary(size={size}{''.join(changed)})"

    # ------------------------------------------------------------------ encoding
    def _known_ids(
        self, docs, extend=None, stacklevel: int = 3, name: str = "docs"
    ) -> tuple[list[list[int]], list[str]]:
        """Ids of the known words of each document, and the words appended by ``extend``.

        ``extend``: a container of words (e.g. :class:`~lvgp.datasets.WordEmbeddings`); unknown
        tokens found in it get new ids ``len(self), len(self) + 1, ...`` (in order of first
        appearance; the second return value lists them). The other unknown tokens are dropped
        with an :class:`UnseenWordsWarning` counting tokens, distinct words and documents."""
        self._check_fitted()
        index = self._fitted_index
        added: dict[str, int] = {}
        out: list[list[int]] = []
        dropped_types: set[str] = set()
        dropped_tokens = dropped_docs = 0
        get = index.get
        for toks in self._tokenize_all(docs, name):
            found = list(map(get, toks))  # the lookups by map; the unknown tokens looked at only where there are any
            if None not in found:
                out.append(cast(list[int], found))
                continue
            if extend is not None:  # unknown tokens of extend: new ids, in order of first appearance
                found = [
                    added.setdefault(t, len(index) + len(added)) if i is None and t in extend else i
                    for t, i in zip(toks, found)
                ]
            out.append([i for i in found if i is not None])
            if len(out[-1]) < len(found):
                dropped_tokens += len(found) - len(out[-1])
                dropped_types.update(toks)  # every token, at C speed: the kept ones are taken out once, below
                dropped_docs += 1
        if dropped_tokens:
            dropped_types = {t for t in dropped_types if t not in index and t not in added}
            without = " without a pretrained vector" if extend is not None else ""
            warn(
                f"dropped {dropped_tokens} tokens ({len(dropped_types)} distinct words) not in the vocabulary{without}, "
                f"in {dropped_docs} of {len(out)} documents",
                UnseenWordsWarning,
                stacklevel=stacklevel,
            )
        return out, list(added)

    def encode(
        self,
        docs: Iterable[str | Sequence[str]],
        max_len: int | None = None,
        on_empty: str = "raise",
        name: str = "docs",
    ) -> torch.Tensor:
        """Encode documents as an ``n x L`` ``torch.long`` tensor padded with :data:`lvgp.PAD`.

        Repeated words repeat (a multiset). Words not in the vocabulary are dropped
        with an :class:`~lvgp.warnings.UnseenWordsWarning` that counts the affected
        tokens and documents.

        Args:
            docs: strings, or lists of tokens.
            max_len: the width ``L``. ``None``: the longest encoded document (at least 1).
                Documents longer than ``max_len`` keep their first ``max_len`` words, with
                a :class:`~lvgp.warnings.TruncationWarning` that counts them.
            on_empty: what to do with a document that has no known word: ``"raise"`` a
                ``ValueError`` naming the rows (default), or ``"keep"`` it as a row of
                padding only (with an :class:`~lvgp.warnings.EmptyDocumentsWarning`); the
                models treat such rows explicitly (e.g. ``GPLVSMRegressor.predict``
                returns the prior predictive for them).
        """
        return self._encode(docs, max_len, on_empty, name)[0]

    def encode_extended(
        self,
        docs: Iterable[str | Sequence[str]],
        extend,
        max_len: int | None = None,
        on_empty: str = "raise",
        name: str = "docs",
    ) -> tuple[torch.Tensor, list[str]]:
        """As :meth:`encode`, but words not in the vocabulary that are in ``extend`` (a container
        of words, e.g. pretrained :class:`~lvgp.datasets.WordEmbeddings`) are kept as new ids
        ``len(self), len(self) + 1, ...``; returns the tensor and those words in id order.
        The :class:`~lvgp.warnings.UnseenWordsWarning` counts only the words dropped (in neither)."""
        return self._encode(docs, max_len, on_empty, name, extend)

    def _encode(self, docs, max_len, on_empty, name, extend=None) -> tuple[torch.Tensor, list[str]]:
        if on_empty not in ("raise", "keep"):
            raise ValueError(f"on_empty must be 'raise' or 'keep'; got {on_empty!r}")
        ids, added = self._known_ids(docs, extend, stacklevel=5)
        empty = [i for i, row in enumerate(ids) if not row]
        if empty:
            if on_empty == "raise":
                raise ValueError(
                    f"{name}: {len(empty)} documents have no word in the vocabulary after tokenizing "
                    f"(rows {_rows_text(empty)}); pass on_empty='keep' to keep them as padding-only rows"
                )
            warn(
                f"{name}: {len(empty)} of {len(ids)} documents have no word in the vocabulary (rows {_rows_text(empty)}); "
                "kept as padding-only rows",
                EmptyDocumentsWarning,
                stacklevel=4,
            )
        longest = max((len(r) for r in ids), default=0)
        width = max(longest, 1) if max_len is None else int(max_len)
        if width < 1:
            raise ValueError(f"max_len must be a positive integer; got {max_len!r}")
        too_long = [len(r) - width for r in ids if len(r) > width]
        if too_long:
            warn(
                f"truncated {len(too_long)} documents longer than max_len={width} ({sum(too_long)} tokens dropped)",
                TruncationWarning,
                stacklevel=4,
            )
        return RaggedIds.from_rows(ids).padded(width=width), added

    def encode_ragged(
        self, docs: Iterable[str | Sequence[str]], extend=None, name: str = "docs"
    ) -> tuple[RaggedIds, list[str]]:
        """The known words' ids of each document without padding (:class:`~lvgp.bow.padded.RaggedIds`;
        ``.padded(rows)`` pads a block of them to its own longest document), and the words ``extend``
        added (as :meth:`encode_extended`; ``[]`` without it). Unseen words are dropped with the same
        :class:`~lvgp.warnings.UnseenWordsWarning` as :meth:`encode`'s; a document without a known word is
        a row of length 0 (no warning: the caller decides what it means). ``name`` names ``docs`` in errors."""
        ids, added = self._known_ids(docs, extend, name=name)
        return RaggedIds.from_rows(ids), added

    def fit_encode(self, docs, max_len: int | None = None, on_empty: str = "raise") -> torch.Tensor:
        """``fit(docs)`` then ``encode(docs)``."""
        docs = list(docs)
        return self.fit(docs).encode(docs, max_len=max_len, on_empty=on_empty)

    def counts(self, docs) -> sp.csr_matrix:
        """``n x len(self)`` sparse document-term count matrix (unseen words dropped with a warning)."""
        ids, _ = self._known_ids(docs)
        rows = np.repeat(np.arange(len(ids)), [len(r) for r in ids])
        cols = np.fromiter((i for r in ids for i in r), dtype=np.int64, count=int(rows.size))
        mat = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(len(ids), len(self)))
        mat.sum_duplicates()
        return mat

    def decode(self, x: torch.Tensor) -> list[list[str]]:
        """The words of each row of an ``n x L`` padded tensor (padding skipped)."""
        self._check_fitted()
        if x.dim() != 2:
            raise ValueError(f"x must be a 2-D (n x L) padded tensor; got shape {tuple(x.shape)}")
        words = self._fitted_words
        bad = (x != PAD) & ((x < 0) | (x >= len(words)))
        if bad.any():
            raise ValueError(f"x holds ids outside [0, {len(words)}) in rows {_rows_text(bad.any(-1).nonzero()[:, 0])}")
        return [[words[i] for i in row if i != PAD] for row in x.tolist()]

    # ------------------------------------------------------------------ persistence
    def get_config(self) -> dict:
        stop = (
            self.stop_words if self.stop_words is None or isinstance(self.stop_words, str) else sorted(self.stop_words)
        )
        return {
            "min_df": self.min_df,
            "max_df": self.max_df,
            "max_features": self.max_features,
            "stop_words": stop,
            "min_token_len": self.min_token_len,
            "lowercase": self.lowercase,
        }

    def to_dict(self) -> dict:
        """A plain (JSON-able) description: options and words (``None`` if not fitted)."""
        return {"format": _FORMAT, "config": self.get_config(), "words": self._words}

    @classmethod
    def from_dict(cls, state: dict) -> Vocabulary:
        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            raise ValueError(f"not a saved lvgp Vocabulary (expected format {_FORMAT!r})")
        if state["words"] is None:
            return cls(**state["config"])
        return cls.from_words(state["words"], **state["config"])

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocabulary) and self.get_config() == other.get_config() and self._words == other._words

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value: not hashable
