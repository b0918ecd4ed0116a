r"""What lvgp's scikit-learn estimators accept as ``X``, and its conversion to padded tensors.

* texts: a list (or 1-D array) of strings, or of token lists -> a :class:`~lvgp.Vocabulary`
  is fitted on the training texts;
* counts: a scipy.sparse or dense numeric ``n x V`` document-term count matrix (e.g. from
  ``CountVectorizer`` in a ``Pipeline``) -> word ``v`` is column ``v``;
* padded: an ``n x L`` ``torch.long`` tensor of word ids padded with :data:`lvgp.PAD`.

Unseen words at prediction time: texts drop unknown words with an
:class:`~lvgp.warnings.UnseenWordsWarning` counting them; a count matrix must have the
training number of columns; padded ids must be below the training ``num_words``.
Documents left without any known word are kept as padding-only rows and the estimator
says (with a warning) how it predicts them.

Pretrained word embeddings (``word_embeddings``, text input): the encoder gives the
vocabulary's words their vectors (:attr:`DocumentEncoder.word_features`, to tie latent word
vectors to, :mod:`lvgp.kernels.word_vectors`), and at prediction time
:meth:`DocumentEncoder.predicting` keeps words never seen in training that have a pretrained
vector: they enter with their embedding-implied latent vector :math:`W\mathbf e_v`, and the
``UnseenWordsWarning`` counts only the words without any vector.
"""

from __future__ import annotations

import collections.abc
import contextlib
import copy
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import scipy.sparse as sp
import torch

from .._typing import Documents
from ..bow.padded import (
    COMPACT_IDS,
    PAD,
    RaggedIds,
    _rows_text,
    check_padded,
    counts_to_padded,
    left_aligned,
    pad_to_common_width,
)
from ..bow.vocabulary import Vocabulary
from ..warnings import EmptyDocumentsWarning, warn
from .embeddings import embedding_features, embeddings_from_dict, embeddings_to_dict, needs_texts, resolve_embeddings
from .validation import check_string_rows

if TYPE_CHECKING:
    from ..kernels.word_vectors import WordVectors

__all__ = [
    "KINDS",
    "input_kind",
    "stack_documents",
    "BagOfWordsInputMixin",
    "DocumentEncoder",
    "take_documents",
    "empty_rows",
]

KINDS = ("texts", "counts", "padded")


def as_documents(X: Documents, name: str = "X") -> Documents:
    """``X`` itself, or a list of it when it is a one-pass iterable (a generator, a file, a
    ``map``): every estimator accepts any iterable of texts, read once."""
    if isinstance(X, str):
        raise TypeError(f"{name} must be a sequence of documents, not a single string")
    if torch.is_tensor(X) or sp.issparse(X) or isinstance(X, (list, tuple, np.ndarray)):
        return X
    if isinstance(X, collections.abc.Iterator) or (
        hasattr(X, "__iter__") and not isinstance(X, collections.abc.Sequence)
    ):
        return list(X)
    return X


def input_kind(X: Documents) -> str:
    """``"texts"``, ``"counts"`` or ``"padded"`` (``TypeError`` for anything else)."""
    if torch.is_tensor(X):
        return "padded"
    if sp.issparse(X):
        return "counts"
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "biuf":
        return "counts"
    if isinstance(X, str):
        raise TypeError("X must be a sequence of documents, not a single string")
    if isinstance(X, (list, tuple, np.ndarray)) or hasattr(X, "__iter__"):
        docs = list(X)
        if all(isinstance(d, str) for d in docs) or all(
            isinstance(d, (list, tuple)) and all(isinstance(t, str) for t in d) for d in docs
        ):
            return "texts"
        if any(isinstance(d, str) for d in docs):  # texts with some rows of another kind: name them
            check_string_rows(docs, "X")
    raise TypeError(
        "X must be a list of texts (strings or token lists), a document-term count matrix "
        f"(scipy.sparse or numpy), or a padded torch.long tensor; got {type(X).__name__}"
    )


def stack_documents(X: Documents, Z: Documents, names: tuple[str, str] = ("X", "Z")) -> tuple[Documents, int]:
    """``X``'s documents followed by ``Z``'s, in the form they share (texts, a count matrix, padded ids:
    :func:`input_kind`), and ``X``'s number: an estimator's pass over both at once, where the encoder's
    state during a prediction (unseen words' vectors) serves one call. ``TypeError`` when the two
    forms differ."""
    X, Z = as_documents(X, names[0]), as_documents(Z, names[1])
    kind = input_kind(X)
    if input_kind(Z) != kind:
        raise TypeError(f"{names[0]} and {names[1]} must be documents of one form; got {kind} and {input_kind(Z)}")
    if kind == "padded":
        x, z = pad_to_common_width(X, Z)
        return torch.cat([x, z.to(x.dtype)]), X.shape[0]
    if kind == "counts":
        if sp.issparse(X) or sp.issparse(Z):
            return sp.vstack([sp.csr_matrix(X), sp.csr_matrix(Z)]).tocsr(), X.shape[0]
        return np.vstack([X, Z]), X.shape[0]
    return [*X, *Z], len(X)


class BagOfWordsInputMixin:
    """scikit-learn tags of an estimator of bag-of-words documents: it accepts texts, sparse
    count matrices, and dense arrays of non-negative integer counts (scikit-learn's common
    checks then generate count data: ``categorical`` and ``positive_only``)."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.string = True
        tags.input_tags.sparse = True
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        return tags


def _ids(x: torch.Tensor, compact: bool) -> torch.Tensor:
    """Validated padded ids as ``int64``, or as given where ``compact`` and their dtype is one of
    :data:`~lvgp.bow.padded.COMPACT_IDS`."""
    return x if compact and x.dtype in COMPACT_IDS else x.long()


class DocumentEncoder:
    """Fitted conversion of estimator inputs to padded word-index tensors.

    Args:
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (fitted: used as is;
            unfitted: a copy is fitted on the training texts) or ``None`` for the default.
        num_words: for padded input, the vocabulary size (default: largest id + 1).
        word_embeddings: ``None`` or a specification of word embeddings
            (:mod:`lvgp.base.embeddings`: a name such as ``"glove-6b-50d"``, a
            :class:`~lvgp.datasets.WordEmbeddings`, ``"corpus"``, or a tuple of these); needs
            text input. Fitting sets :attr:`word_features`.
    """

    def __init__(
        self,
        vocabulary: Vocabulary | None = None,
        num_words: int | None = None,
        word_embeddings: Any = None,
    ) -> None:
        self.vocabulary_template = vocabulary
        self.num_words_option = num_words
        self.word_embeddings = word_embeddings
        #: the table ``word_embeddings`` resolved to (``None`` until needed)
        self.embeddings: Any = None
        self.kind: str | None = None
        self.vocabulary: Vocabulary | None = None
        #: the vocabulary size once fitted (0 before)
        self.num_words: int = 0
        #: ``num_words x h`` pretrained vectors of the vocabulary (scaled to unit mean norm), or ``None``
        self.word_features: np.ndarray | None = None
        self.feature_scale: float | None = None
        #: how many unlabeled documents the word embeddings were learned from (``"corpus"``)
        self.n_unlabeled: int = 0

    def fit_transform(
        self,
        X: Documents,
        name: str = "X",
        unlabeled: Documents | None = None,
        compact: bool = False,
        allow_empty: bool = False,
        on_empty: str | None = None,
    ) -> torch.Tensor:
        """Fit on training documents and encode them. A document without a known word is an all-padding row:
        ``allow_empty`` fits it silently (a model with a part that reads the texts themselves -- a sentence
        encoder -- reads it); else the estimator's ``on_empty`` decides: ``"keep"`` keeps it with an
        ``EmptyDocumentsWarning`` that counts and names the rows (:func:`warn_kept_empty`), ``"raise"`` raises a
        ``ValueError`` naming them that offers ``on_empty='keep'``, ``None`` (an estimator without the option)
        raises without it. ``unlabeled``: further texts for
        ``word_embeddings="corpus"`` (the vectors are learned from ``X`` and them). ``compact``:
        padded ids given as ``int32`` (or ``int16``) stay in that dtype, not copied to ``int64``
        (the mini-batch estimators take the corpus so and cast each batch: a million documents of
        512 ids hold 2 GB instead of 4)."""
        kept = on_empty == "keep" and not allow_empty
        x = self._encode_training(X, name, unlabeled, compact, allow_empty or kept, on_empty)
        if kept:
            warn_kept_empty(x)
        return x

    def _encode_training(
        self,
        X: Documents,
        name: str,
        unlabeled: Documents | None,
        compact: bool,
        allow_empty: bool,
        on_empty: str | None,
    ) -> torch.Tensor:
        """:meth:`fit_transform`'s fit and encoding; ``allow_empty``: padding-only rows are documents."""
        X = as_documents(X, name)
        self.kind = input_kind(X)
        if (X.shape[0] if hasattr(X, "shape") else len(X)) == 0:
            raise ValueError(f"{name} holds no documents: fitting needs at least one")
        extra = self._unlabeled(unlabeled)
        if self.kind == "texts":
            docs = list(X)
            template = self.vocabulary_template
            if template is not None and template.is_fitted:
                self.vocabulary = template
            else:
                self.vocabulary = copy.deepcopy(template) if template is not None else Vocabulary()
                self.vocabulary.fit(docs)
            self.num_words = len(self.vocabulary)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EmptyDocumentsWarning)
                x = self.vocabulary.encode(docs, on_empty="keep", name=name)
            empty = [] if allow_empty else torch.nonzero(empty_rows(x))[:, 0].tolist()
            if empty:
                raise ValueError(
                    f"{name}: {len(empty)} training documents have no word in the vocabulary after tokenizing "
                    f"(rows {_rows_text(empty)}); remove them from {name} (and y), or "
                    "pass vocabulary=lvgp.Vocabulary(stop_words=None) (and lower min_df) to keep their words"
                    + ("" if on_empty is None else "; or pass on_empty='keep' to keep them as the empty set")
                )
            if self.word_embeddings is not None:
                self.embeddings = resolve_embeddings(self.word_embeddings, docs + extra, self.vocabulary)
                self.word_features, self.feature_scale = embedding_features(
                    self.vocabulary.words, self.embeddings, stacklevel=4
                )
            return x
        if self.word_embeddings is not None:
            raise ValueError(
                f"word_embeddings needs text input (a vocabulary maps words to vectors); {name} is {self.kind}"
            )
        if self.kind == "counts":
            self.num_words = int(X.shape[1])
            if self.num_words == 0:  # worded as scikit-learn's own check words it
                raise ValueError(
                    f"{name}: 0 feature(s) (shape={tuple(X.shape)}) while a minimum of 1 is required (a count matrix "
                    "holds a column a word)"
                )
            x = counts_to_padded(X, name)
        else:
            # integer ids only: floats are an error, not rounded; padding before a word moved after the row's words
            x = left_aligned(_ids(check_padded(X, name, allow_empty=True), compact))
            if x.dim() != 2:
                raise ValueError(f"{name} must be an (n x L) padded tensor; got shape {tuple(x.shape)}")
            largest = int(x.max()) + 1 if x.numel() else 0
            self.num_words = int(self.num_words_option or largest)
            if self.num_words == 0:
                raise ValueError(
                    f"{name} holds no word id (every row only padding): pass num_words= to size the vocabulary"
                )
        check_padded(x, name, self.num_words, allow_empty=True)  # names the rows of ids beyond num_words
        empty = [] if allow_empty else torch.nonzero(empty_rows(x))[:, 0].tolist()
        if empty:
            raise ValueError(
                f"{name} holds empty documents (only padding, or no count) in rows {_rows_text(empty)} ({len(empty)} "
                f"of {x.shape[0]}); remove them from {name} (and y)"
                + ("" if on_empty is None else ", or pass on_empty='keep' to keep them as the empty set")
            )
        return x

    def _unlabeled(self, unlabeled: Documents | None) -> list:
        """The unlabeled texts (``[]`` for ``None``); they feed word embeddings learned from texts only
        (``"corpus"``, ``"contextual"``)."""
        if unlabeled is None:
            return []
        unlabeled = as_documents(unlabeled, "unlabeled")
        if input_kind(unlabeled) != "texts":
            raise TypeError("unlabeled must be texts (strings or token lists): they extend the word embeddings")
        docs = list(unlabeled)
        if docs and not needs_texts(self.word_embeddings):
            warn(
                f"{len(docs)} unlabeled documents are not used: they feed word_embeddings 'corpus' and "
                "'contextual' only",
                UserWarning,
                stacklevel=4,
            )
            return []
        self.n_unlabeled = len(docs)
        return docs

    def transform(self, X: Documents, name: str = "X", compact: bool = False) -> torch.Tensor:
        """Encode documents with the fitted state; documents without known words become
        padding-only rows (see :func:`empty_rows`). ``compact``: as for :meth:`fit_transform`."""
        if self.kind is None:
            raise RuntimeError("the encoder is not fitted")
        X = as_documents(X, name)
        kind = input_kind(X)
        if kind == "texts":
            if self.vocabulary is None:
                raise TypeError(f"{name} is text, but the estimator was fitted on {self.kind} without a vocabulary")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EmptyDocumentsWarning)  # the estimator reports them itself
                return self.vocabulary.encode(list(X), on_empty="keep", name=name)
        if kind == "counts":
            if X.shape[1] != self.num_words:
                raise ValueError(
                    f"{name} has {X.shape[1]} columns but the estimator was fitted on {self.num_words} words"
                )
            return counts_to_padded(X, name)
        x = left_aligned(_ids(check_padded(X, name, self.num_words, allow_empty=True), compact))
        if x.dim() != 2:
            raise ValueError(f"{name} must be an (n x L) padded tensor; got shape {tuple(x.shape)}")
        return x

    @contextlib.contextmanager
    def predicting(
        self, X: Documents, word_vectors: WordVectors | None = None, name: str = "X", compact: bool = False
    ) -> Iterator[torch.Tensor]:
        """Encode documents for prediction (a context manager yielding the padded tensor).

        With pretrained embeddings and ``word_vectors`` (a :class:`~lvgp.kernels.WordVectors`
        tied to :attr:`word_features`), words never seen in training that have a vector are
        kept: inside the block they are extra words of ``word_vectors`` (ids from
        ``num_words``) with their embedding-implied vectors; nothing is stored. Otherwise as
        :meth:`transform` (``compact``: as there, for an estimator that predicts in blocks)."""
        with self._encoded_for_prediction(X, word_vectors, name, compact, ragged=False) as x:
            yield cast(torch.Tensor, x)

    @contextlib.contextmanager
    def predicting_unpadded(
        self, X: Documents, word_vectors: WordVectors | None = None, name: str = "X", compact: bool = False
    ) -> Iterator[torch.Tensor | RaggedIds]:
        """As :meth:`predicting`, for an estimator that pads each block of documents to its own longest
        (a padded corpus is as wide as its longest document): texts yielded unpadded, as
        :class:`~lvgp.bow.padded.RaggedIds` with the same ids as :meth:`predicting`'s rows and the same
        extra words of ``word_vectors`` inside the block; other documents as :meth:`predicting`'s padded
        tensor."""
        with self._encoded_for_prediction(X, word_vectors, name, compact, ragged=True) as x:
            yield x

    @contextlib.contextmanager
    def _encoded_for_prediction(
        self, X: Documents, word_vectors: WordVectors | None, name: str, compact: bool, ragged: bool
    ) -> Iterator[torch.Tensor | RaggedIds]:
        """:meth:`predicting` (``ragged=False``) and :meth:`predicting_unpadded` (``ragged=True``): the
        vocabulary's ids, with the pretrained words' extra ids where ``word_vectors`` are tied to the
        embeddings, or :meth:`transform`'s."""
        docs = as_documents(X, name)
        embeddings, scale = self._available_embeddings(), self.feature_scale
        tied = embeddings is not None and word_vectors is not None and word_vectors.word_features is not None
        tied = tied and scale is not None
        vocabulary = self.vocabulary
        if self.kind != "texts" or vocabulary is None or input_kind(docs) != "texts" or not (tied or ragged):
            yield self.transform(docs, name, compact)
            return
        x: torch.Tensor | RaggedIds
        if ragged:
            x, added = vocabulary.encode_ragged(list(docs), embeddings if tied else None, name=name)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EmptyDocumentsWarning)  # the estimator reports them itself
                x, added = vocabulary.encode_extended(list(docs), embeddings, on_empty="keep", name=name)
        if not added or word_vectors is None or scale is None:  # words are added only where tied
            yield x
            return
        vectors, _ = embeddings.lookup(added)
        with word_vectors.extra_words(np.asarray(vectors, dtype=np.float64) / scale):
            yield x

    def _available_embeddings(self) -> Any:
        if self.word_embeddings is None or self.feature_scale is None:
            return None
        if self.embeddings is None:  # a named table of a reloaded model, loaded when first needed
            try:
                self.embeddings = resolve_embeddings(self.word_embeddings)
            except Exception as err:  # e.g. offline after loading a saved model: unseen words are then dropped
                warn(f"pretrained embeddings unavailable ({err}); unseen words are dropped", RuntimeWarning, 3)
                return None
        return self.embeddings

    def to_dict(self) -> dict:
        """Plain values and tensors (``torch.load(weights_only=True)`` reads them back): named
        embeddings by name, a custom or corpus-learned table whole (its words and vectors), so that
        a reloaded model maps unseen words exactly as before."""
        return {
            "kind": self.kind,
            "num_words": self.num_words,
            "vocabulary": self.vocabulary.to_dict() if self.vocabulary is not None else None,
            "word_embeddings": embeddings_to_dict(self.word_embeddings, self.embeddings),
            "feature_scale": self.feature_scale,
            "word_features": None if self.word_features is None else torch.as_tensor(self.word_features),
            "n_unlabeled": self.n_unlabeled,
        }

    @classmethod
    def from_dict(cls, state: dict) -> DocumentEncoder:
        spec, table = embeddings_from_dict(state.get("word_embeddings"))
        enc = cls(word_embeddings=spec)
        enc.embeddings = table
        enc.kind = state["kind"]
        enc.num_words = state["num_words"]
        enc.vocabulary = Vocabulary.from_dict(state["vocabulary"]) if state["vocabulary"] is not None else None
        enc.feature_scale = state.get("feature_scale")
        features = state.get("word_features")  # saved since lvgp 0.2
        enc.word_features = None if features is None else features.numpy()
        enc.n_unlabeled = state.get("n_unlabeled", 0)
        return enc


def take_documents(X: Documents, rows: np.ndarray) -> Documents:
    """The documents ``rows`` (integer indices) of ``X``, in the same input kind."""
    rows = np.asarray(rows, dtype=np.int64)
    kind = input_kind(X)
    if kind == "padded":
        return X[torch.from_numpy(rows)]
    if kind == "counts":
        return X.tocsr()[rows] if sp.issparse(X) else np.asarray(X)[rows]
    docs = list(X)
    return [docs[i] for i in rows]


def empty_rows(x: torch.Tensor) -> torch.Tensor:
    """Boolean mask of padding-only rows of a padded ``n x L`` tensor of valid ids (batched too), those whose
    largest entry is :data:`PAD` (the smallest valid id): one reduction, no mask of ``x``'s size (a corpus of a
    million documents is read once, as :func:`~lvgp.bow.padded.check_padded` reads it)."""
    if not x.shape[-1]:
        return torch.ones(x.shape[:-1], dtype=torch.bool, device=x.device)
    return x.amax(-1) == PAD


def warn_kept_empty(x: torch.Tensor) -> None:
    """An ``EmptyDocumentsWarning`` that counts and names the padding-only rows of the training documents ``x``
    (``n x L``) an estimator keeps as the empty set (``on_empty="keep"``); none where there are none."""
    empty = torch.nonzero(empty_rows(x)).ravel().tolist()
    if empty:
        warn(
            f"X: {len(empty)} of {x.shape[0]} training documents have no word in the vocabulary (rows "
            f"{_rows_text(empty)}); kept as the empty set (on_empty='keep'): the kernel's value at the zero measure, "
            "0 at a cosine or linear level 2",
            EmptyDocumentsWarning,
        )
