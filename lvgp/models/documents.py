"""What lvgp's scikit-learn estimators accept as ``X``, and its conversion to padded tensors.

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
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import scipy.sparse as sp
import torch

from ..bow.padded import PAD, check_padded, counts_to_padded
from ..bow.vocabulary import Vocabulary
from ..warnings import EmptyDocumentsWarning

KINDS = ("texts", "counts", "padded")


def input_kind(X) -> str:
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
    raise TypeError(
        "X must be a list of texts (strings or token lists), a document-term count matrix "
        f"(scipy.sparse or numpy), or a padded torch.long tensor; got {type(X).__name__}"
    )


class DocumentEncoder:
    """Fitted conversion of estimator inputs to padded word-index tensors.

    Args:
        vocabulary: for text input, a :class:`~lvgp.Vocabulary` (fitted: used as is;
            unfitted: a copy is fitted on the training texts) or ``None`` for the default.
        num_words: for padded input, the vocabulary size (default: largest id + 1).
    """

    def __init__(self, vocabulary: Vocabulary | None = None, num_words: int | None = None):
        self.vocabulary_template = vocabulary
        self.num_words_option = num_words
        self.kind: str | None = None
        self.vocabulary: Vocabulary | None = None
        self.num_words: int | None = None

    def fit_transform(self, X, name: str = "X") -> torch.Tensor:
        """Fit on training documents and encode them (empty documents raise)."""
        self.kind = input_kind(X)
        if self.kind == "texts":
            docs = list(X)
            template = self.vocabulary_template
            if template is not None and template.is_fitted:
                self.vocabulary = template
            else:
                self.vocabulary = copy.deepcopy(template) if template is not None else Vocabulary()
                self.vocabulary.fit(docs)
            self.num_words = len(self.vocabulary)
            return self.vocabulary.encode(docs, on_empty="raise", name=name)
        if self.kind == "counts":
            self.num_words = int(X.shape[1])
            x = counts_to_padded(X, name)
        else:
            x = check_padded(X, name).long()  # integer ids only: floats are an error, not rounded
            if x.dim() != 2:
                raise ValueError(f"{name} must be an (n x L) padded tensor; got shape {tuple(x.shape)}")
            largest = int(x.max()) + 1 if x.numel() else 0
            if self.num_words_option is not None and largest > self.num_words_option:
                raise ValueError(f"{name} holds word id {largest - 1} >= num_words={self.num_words_option}")
            self.num_words = int(self.num_words_option or largest)
        check_padded(x, name, self.num_words)
        return x

    def transform(self, X, name: str = "X") -> torch.Tensor:
        """Encode documents with the fitted state; documents without known words become
        padding-only rows (see :func:`empty_rows`)."""
        if self.kind is None:
            raise RuntimeError("the encoder is not fitted")
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
        x = check_padded(X, name, self.num_words, allow_empty=True).long()
        if x.dim() != 2:
            raise ValueError(f"{name} must be an (n x L) padded tensor; got shape {tuple(x.shape)}")
        return x

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "num_words": self.num_words,
            "vocabulary": self.vocabulary.to_dict() if self.vocabulary is not None else None,
        }

    @classmethod
    def from_dict(cls, state: dict) -> DocumentEncoder:
        enc = cls()
        enc.kind = state["kind"]
        enc.num_words = state["num_words"]
        enc.vocabulary = Vocabulary.from_dict(state["vocabulary"]) if state["vocabulary"] is not None else None
        return enc


def empty_rows(x: torch.Tensor) -> torch.Tensor:
    """Boolean mask of padding-only rows of an ``n x L`` tensor."""
    return (x == PAD).all(-1)


def check_targets_array(y, n: int, name: str = "y") -> np.ndarray:
    """Validate regression targets: numeric, finite, ``n`` rows; returns float64 ``(n,)`` or ``(n, B)``."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be numeric regression targets ({err})") from err
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (n,) or (n, num_outputs); got {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but X has {n} documents")
    bad = ~np.isfinite(arr.reshape(n, -1)).all(-1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(
            f"{name} holds NaN or infinite values in rows {rows[:10].tolist()}{' ...' if rows.size > 10 else ''}"
        )
    return arr
