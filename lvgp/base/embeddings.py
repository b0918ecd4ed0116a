r"""Word embeddings as the word features latent vectors are tied to.

What an estimator's ``word_embeddings`` may be:

* the name of pretrained vectors known to :func:`lvgp.datasets.load_word_embeddings` (e.g.
  ``"glove-6b-50d"``), or a :class:`~lvgp.datasets.WordEmbeddings` table of your own;
* ``"corpus"``: vectors learned from the documents themselves -- the truncated SVD of the positive
  pointwise mutual information of the words' document co-occurrence (:func:`ppmi_svd_embeddings`)
  in the training documents plus any unlabeled documents passed to ``fit(..., unlabeled=...)``
  (:func:`corpus_embeddings`). They know the words pretrained vectors miss (product names,
  jargon), and words seen only in the unlabeled documents get vectors too;
* ``"contextual"``: vectors learned from the same texts by a pretrained sentence encoder, a word's
  vector the mean of its contextual token vectors
  (:class:`lvgp.encoders.ContextualWordEmbeddings`; the estimators resolve the name with their
  ``sentence_encoder``). Any object with ``learn(texts, vocabulary)`` returning a table is such a
  source (:func:`is_learned_source`);
* several of these, e.g. ``("glove-6b-50d", "corpus")``: a word's vector is the concatenation of
  its vectors in each (each table scaled to unit mean norm; zeros where a table lacks the word),
  :class:`CombinedEmbeddings`.

:func:`resolve_embeddings` turns such a specification into one table.
"""

from __future__ import annotations

import collections
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .._random import NUMERICS_SEED
from ..warnings import MissingEmbeddingsWarning, warn

if TYPE_CHECKING:
    from ..bow.vocabulary import Vocabulary
    from ..datasets.loaders import WordEmbeddings

__all__ = [
    "CORPUS",
    "resolve_embeddings",
    "embedding_features",
    "ppmi_svd_embeddings",
    "corpus_embeddings",
    "CombinedEmbeddings",
    "embeddings_to_dict",
    "embeddings_from_dict",
    "spec_to_plain",
    "spec_from_plain",
]

#: the ``word_embeddings`` name of vectors learned from the training (and unlabeled) documents
CORPUS = "corpus"
#: the ``word_embeddings`` name of contextual vectors learned from them by a sentence encoder
CONTEXTUAL = "contextual"


def is_learned_source(part: Any) -> bool:
    """Whether a ``word_embeddings`` part learns its table from the training texts:
    ``"corpus"``, ``"contextual"`` or an object with ``learn(texts, vocabulary)``."""
    return part in (CORPUS, CONTEXTUAL) if isinstance(part, str) else callable(getattr(part, "learn", None))


def ppmi_svd_embeddings(counts: sp.spmatrix, dim: int, random_state: int | None = None) -> np.ndarray:
    """Word vectors from documents: truncated SVD of the positive pointwise mutual information
    of document-level co-occurrence. ``counts``: ``n x p`` document-term counts; returns
    ``p x dim`` (rows scaled by the square roots of the singular values; zero columns beyond the
    rank)."""
    from sklearn.utils.extmath import randomized_svd

    binary = (sp.csr_matrix(counts) > 0).astype(np.float64)
    co = (binary.T @ binary).tocoo()  # p x p co-occurrence (documents containing both)
    total = co.data.sum()
    row = np.asarray(binary.T @ binary.sum(1)).ravel()  # marginal weight of each word
    with np.errstate(divide="ignore"):
        pmi = np.log(co.data * total / (row[co.row] * row[co.col]))
    keep = (pmi > 0) & (co.row != co.col)
    ppmi = sp.csr_matrix((pmi[keep], (co.row[keep], co.col[keep])), shape=co.shape)
    k = max(1, min(dim, min(ppmi.shape) - 1))
    u, s, _ = randomized_svd(ppmi, k, random_state=random_state)
    out = np.zeros((ppmi.shape[0], dim))
    out[:, :k] = u * np.sqrt(s)
    # a word without a positive co-occurrence has a zero row of PPMI: its vector is zero (the
    # randomized SVD would leave rounding noise of ~1e-9 there, which reads as a direction)
    out[np.asarray(ppmi.getnnz(axis=1)).ravel() == 0] = 0.0
    return out


#: the last tables learned from texts in this process (``"corpus"``, ``"contextual"``), by a digest of
#: their inputs: a grid of fits on the same documents (a study's dev selection) learns them once
_LEARNED_TABLES: collections.OrderedDict[str, Any] = collections.OrderedDict()
_LEARNED_TABLES_SIZE = 8


def remember_table(key: str, learn: Callable[[], Any]) -> Any:
    """The table learned from texts whose inputs digest to ``key``: one of the last few learned in
    this process, else ``learn()``, kept (least recently used out first)."""
    if key in _LEARNED_TABLES:
        _LEARNED_TABLES.move_to_end(key)
        return _LEARNED_TABLES[key]
    table = learn()
    _LEARNED_TABLES[key] = table
    while len(_LEARNED_TABLES) > _LEARNED_TABLES_SIZE:
        _LEARNED_TABLES.popitem(last=False)
    return table


def _digest(docs: list[list[str]], known: set[str], dim: int, min_df: int, max_words: int) -> str:
    h = hashlib.sha256(repr((dim, min_df, max_words, sorted(known))).encode())
    for d in docs:
        h.update("\x1f".join(d).encode())
        h.update(b"\x1e")
    return h.hexdigest()


def corpus_embeddings(
    texts: Iterable[str | Sequence[str]],
    vocabulary: Vocabulary,
    dim: int = 50,
    min_df: int = 2,
    max_words: int = 20000,
) -> WordEmbeddings:
    """``"corpus"`` vectors (module docstring) of the words of ``texts`` (training plus unlabeled
    documents), tokenized as ``vocabulary`` tokenizes: every word of ``vocabulary`` and the words
    in at least ``min_df`` of the texts, the ``max_words`` most frequent in all. Words without a
    positive co-occurrence (a zero vector) are left out. The result is a function of the tokenized
    documents and the settings: the last few are kept (by a digest of them), so fitting a grid of
    models on the same documents learns them once."""
    docs = [vocabulary.tokenize(t) for t in texts]
    known = set(vocabulary.words) if vocabulary.is_fitted else set()
    key = "corpus:" + _digest(docs, known, dim, min_df, max_words)
    return remember_table(key, lambda: _learn_corpus_embeddings(docs, known, dim, min_df, max_words))


def _learn_corpus_embeddings(
    docs: list[list[str]], known: set[str], dim: int, min_df: int, max_words: int
) -> WordEmbeddings:
    from ..datasets.loaders import WordEmbeddings

    df = Counter(w for d in docs for w in set(d))
    ranked = sorted(df, key=lambda w: (-df[w], w))
    words = [w for w in ranked if w in known or df[w] >= min_df][: max(int(max_words), len(known))]
    if len(words) < 2:
        raise ValueError(f"word_embeddings='corpus': the documents have {len(words)} words to learn vectors for")
    index = {w: i for i, w in enumerate(words)}
    rows = [i for i, d in enumerate(docs) for w in d if w in index]
    cols = [index[w] for d in docs for w in d if w in index]
    counts = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(docs), len(words)))
    vectors = ppmi_svd_embeddings(counts, min(dim, len(words) - 1), random_state=NUMERICS_SEED)
    keep = np.linalg.norm(vectors, axis=1) > 0
    return WordEmbeddings(CORPUS, [w for w, k in zip(words, keep) if k], vectors[keep])


class CombinedEmbeddings:
    """Several embedding tables side by side (module docstring): ``lookup`` concatenates a word's
    vectors from every table, each table scaled to unit mean norm over its words, zeros where a
    table lacks the word; a word is found when any table has it."""

    def __init__(self, tables: Sequence[Any]) -> None:
        if len(tables) < 2:
            raise ValueError("CombinedEmbeddings needs at least two tables")
        self.tables = list(tables)
        self.name = "+".join(getattr(t, "name", "table") for t in self.tables)
        self.scales = [float(np.linalg.norm(np.asarray(t.vectors), axis=1).mean()) or 1.0 for t in self.tables]

    def __contains__(self, word: str) -> bool:
        return any(word in t for t in self.tables)

    @property
    def dim(self) -> int:
        return sum(np.asarray(t.vectors).shape[1] for t in self.tables)

    def lookup(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``words`` (``len(words) x dim``) and a boolean mask of those found in any table."""
        parts, found = [], np.zeros(len(words), dtype=bool)
        for table, scale in zip(self.tables, self.scales):
            vectors, mask = table.lookup(words)
            parts.append(np.asarray(vectors, dtype=np.float64) / scale)
            found |= mask
        return np.concatenate(parts, axis=1), found


def _parts(word_embeddings: Any) -> list[Any]:
    return list(word_embeddings) if isinstance(word_embeddings, (tuple, list)) else [word_embeddings]


def resolve_embeddings(
    word_embeddings: Any, texts: Iterable[str | Sequence[str]] | None = None, vocabulary: Vocabulary | None = None
) -> Any:
    """The table a ``word_embeddings`` specification (module docstring) stands for: ``None``; a
    :class:`~lvgp.datasets.WordEmbeddings` as given; a name loaded by
    :func:`lvgp.datasets.load_word_embeddings` (cached per process); ``"corpus"`` learned from
    ``texts`` with ``vocabulary``'s tokenizer (:func:`corpus_embeddings`); a tuple of these as one
    :class:`CombinedEmbeddings`."""
    if word_embeddings is None:
        return None
    tables = []
    for part in _parts(word_embeddings):
        if isinstance(part, str) and part == CORPUS:
            if texts is None or vocabulary is None:
                raise ValueError("word_embeddings='corpus' learns vectors from the training texts: pass texts")
            tables.append(corpus_embeddings(texts, vocabulary))
        elif isinstance(part, str) and part == CONTEXTUAL:
            raise ValueError(
                "word_embeddings='contextual' needs a sentence encoder: the estimators resolve it with their "
                "sentence_encoder; elsewhere pass lvgp.encoders.ContextualWordEmbeddings(encoder)"
            )
        elif is_learned_source(part):
            if texts is None or vocabulary is None:
                raise ValueError(f"word_embeddings={part!r} learns vectors from the training texts: pass texts")
            tables.append(part.learn(list(texts), vocabulary))
        elif isinstance(part, str):
            from ..datasets.loaders import load_word_embeddings

            tables.append(load_word_embeddings(part))
        elif hasattr(part, "lookup"):
            tables.append(part)
        else:
            raise TypeError(
                "word_embeddings must be None, the name of pretrained vectors, 'corpus', 'contextual', a "
                f"WordEmbeddings, or a tuple of these; got {type(part).__name__}"
            )
    return tables[0] if len(tables) == 1 else CombinedEmbeddings(tables)


def needs_texts(word_embeddings: Any) -> bool:
    """Whether the specification learns vectors from the training texts (:func:`is_learned_source`)."""
    return word_embeddings is not None and any(is_learned_source(p) for p in _parts(word_embeddings))


def embeddings_to_dict(spec: Any, table: Any) -> Any:
    """Plain values and tensors for ``torch.load(weights_only=True)``: a named table by its name,
    a table of one's own or learned from the corpus whole (its words and vectors), a combination
    part by part. ``spec`` is what the estimator was given, ``table`` what it resolved to."""
    import torch

    if spec is None:
        return None
    if isinstance(table, CombinedEmbeddings):
        return {"combined": [embeddings_to_dict(s, t) for s, t in zip(_parts(spec), table.tables)]}
    if isinstance(spec, str) and not is_learned_source(spec):
        return spec
    return {
        "name": getattr(table, "name", "custom"),
        "words": list(table.words),
        "vectors": torch.as_tensor(np.asarray(table.vectors)),
    }


def spec_to_plain(spec: Any) -> Any:
    """An estimator's ``word_embeddings`` argument as plain values (names as they are, tables whole):
    saved with the estimator's parameters, so that a reloaded estimator refits with the same table."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, (tuple, list)):
        return [spec_to_plain(p) for p in spec]
    if is_learned_source(spec):
        raise TypeError(
            f"word_embeddings={spec!r} cannot be saved: give the estimator the name 'contextual' (resolved "
            "with its sentence_encoder) instead of the object"
        )
    return embeddings_to_dict(spec, spec)


def spec_from_plain(plain: Any) -> Any:
    """The inverse of :func:`spec_to_plain`."""
    if plain is None or isinstance(plain, str):
        return plain
    if isinstance(plain, list):
        return tuple(spec_from_plain(p) for p in plain)
    return embeddings_from_dict(plain)[1]


def embeddings_from_dict(state: Any) -> tuple[Any, Any]:
    """``(spec, table)`` from :func:`embeddings_to_dict` (a named table stays a name: it is
    loaded when first needed; ``table`` is ``None`` then)."""
    from ..datasets.loaders import WordEmbeddings

    if state is None or isinstance(state, str):
        return state, None
    if "combined" in state:
        parts = [embeddings_from_dict(p) for p in state["combined"]]
        spec = tuple(s if isinstance(s, str) else t for s, t in parts)
        tables = [t if t is not None else resolve_embeddings(s) for s, t in parts]
        return spec, CombinedEmbeddings(tables)
    table = WordEmbeddings(state["name"], list(state["words"]), state["vectors"].numpy())
    return table, table


def embedding_features(words: list[str], embeddings: WordEmbeddings, stacklevel: int = 3) -> tuple[np.ndarray, float]:
    """Pretrained vectors of ``words`` (``len(words) x h`` float64; zero rows for words without
    one, counted in a :class:`~lvgp.warnings.MissingEmbeddingsWarning`) divided by their mean
    norm, and that norm (to scale vectors of later words alike)."""
    name = getattr(embeddings, "name", "word_embeddings")
    vectors, found = embeddings.lookup(words)
    if not found.any():
        raise ValueError(f"no vocabulary word has a vector in {name}")
    if not found.all():
        warn(
            f"{int((~found).sum())} of {found.size} vocabulary words have no vector in {name}: "
            "their latent vectors are free residuals",
            MissingEmbeddingsWarning,
            stacklevel=stacklevel,
        )
    vectors = np.asarray(vectors, dtype=np.float64)
    scale = float(np.linalg.norm(vectors[found], axis=1).mean()) or 1.0
    return vectors / scale, scale
