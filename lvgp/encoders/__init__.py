"""Pretrained sentence encoders: texts -> document vectors and contextual word vectors (the
``encoders`` extra: ``pip install 'lvgp[encoders]'``). Like ``lvgp.bow``, this turns texts
into tensors; it imports no kernel, model or study."""

from .sentence import (
    ENCODERS,
    PRECISIONS,
    ContextualWordEmbeddings,
    PretrainedEncoder,
    SentenceEncoder,
    TokenVectors,
    encoder_precision,
    native_bfloat16,
    resolve_encoder,
    shared_encoder,
)

__all__ = [
    "ENCODERS",
    "PRECISIONS",
    "ContextualWordEmbeddings",
    "PretrainedEncoder",
    "SentenceEncoder",
    "TokenVectors",
    "encoder_precision",
    "native_bfloat16",
    "resolve_encoder",
    "shared_encoder",
]
