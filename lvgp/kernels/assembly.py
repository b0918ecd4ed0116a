"""The one kernel assembly of lvgp's estimators: an estimator's ``kernel=`` argument turned into its
model's covariance.

:func:`assemble_covariance` takes what ``kernel=`` may be -- an :class:`~lvgp.kernels.LDKSpec`, a
:class:`~lvgp.kernels.BagOfWordsSpec`, a gpytorch ``Kernel`` over padded word-index sets, or a factory -- and
returns the covariance with what
the estimator asks around it: the spec's approximation decided (``approximation=``, what ``"auto"``
stands for on the documents of a step), the sentence encoder's part beside the words
(:func:`~lvgp.kernels.packed.beside_encoder`), the output scale (``ScaleKernel``), and the kind of the
kernel the estimators report as ``kernel_kind_`` (:func:`kernel_kind`). A user's kernel is taken as
it is (:func:`~lvgp.kernels.spec.resolve_kernel`: copied, its word count checked): no scale, no
encoder part. The word-vector modules of the result are :func:`~lvgp.kernels.spec.word_vector_modules`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from gpytorch.kernels import Kernel, ScaleKernel

from .packed import beside_encoder, fresh_encoder_kinds
from .spec import BagOfWordsSpec, LDKSpec, resolve_kernel

__all__ = ["Covariance", "EncoderPart", "assemble_covariance", "kernel_kind", "KERNEL_KINDS"]

#: the kinds ``kernel_kind_`` reports (the LDK computed exactly, by Nystrom landmark words, by random
#: Fourier features, or a user's kernel taken as it is)
KERNEL_KINDS = ("exact", "nystrom", "rff", "user")


@dataclass(frozen=True)
class EncoderPart:
    """The sentence encoder's part beside the words: the width of its vectors in the packed documents
    (:func:`~lvgp.kernels.packed.pack_documents`) and the estimator's ``encoder_kernel`` (a name of
    ``ENCODER_KERNELS``, a gpytorch ``Kernel``, or a sequence of those: one part each; a kernel is copied
    where the covariance is assembled, :func:`~lvgp.kernels.packed.fresh_encoder_kinds`)."""

    dim: int
    kind: str | Kernel | Sequence[str | Kernel]


@dataclass(frozen=True)
class Covariance:
    """An assembled covariance and its kind (one of :data:`KERNEL_KINDS`)."""

    kernel: Kernel
    kind: str


def kernel_kind(kernel: Kernel) -> str:
    """How the LDK inside ``kernel`` is computed (``"exact"``, ``"nystrom"`` or ``"rff"``): the
    approximation of its first latent-distribution part (``"exact"`` without one)."""
    ldk = next((m for m in kernel.modules() if hasattr(m, "word_vectors")), None)
    return str(getattr(ldk, "features", "exact"))


def assemble_covariance(
    kernel: Any,
    num_words: int,
    documents: torch.Tensor,
    *,
    word_features: Any = None,
    words: list[str] | None = None,
    seed: int = 0,
    approximation: str | None = None,
    encoder: EncoderPart | None = None,
    scale: bool = True,
) -> Covariance:
    """The model's covariance for ``kernel=`` (a spec, a gpytorch ``Kernel`` or a factory). A
    :class:`~lvgp.kernels.BagOfWordsSpec` is built as a spec is (the encoder's part beside it, the output
    scale around it; kind ``"exact"``), its approximation and the word vectors' options unread.

    Args:
        num_words, documents: the vocabulary's size and the training documents' padded word ids
            (``n x L``; the word part of packed documents).
        word_features, words, seed: what :meth:`LDKSpec.build` takes (pretrained vectors of the
            words, the words, the seed of the word vectors' start).
        approximation: what a spec's ``approximation="auto"`` stands for here (the sparse models decide
            it on the documents of a step, a loaded model reads it off its file); ``None``: the spec's
            own rule on ``documents``.
        encoder: the sentence encoder's part beside the words (a spec's kernel only).
        scale: wrap a spec's kernel in a ``ScaleKernel`` (the classifiers scale per class themselves).
    """
    if isinstance(kernel, BagOfWordsSpec):
        built = kernel.build(num_words, documents)
    elif isinstance(kernel, LDKSpec):
        spec = kernel
        if approximation is not None and spec.approximation == "auto":
            spec = spec.replace(approximation=approximation)
        built = spec.build(num_words, documents, word_features=word_features, words=words, seed=seed)
    else:
        return Covariance(resolve_kernel(kernel, num_words, documents), "user")
    kind = kernel_kind(built)
    if encoder is not None:
        built = beside_encoder(built, documents, encoder.dim, fresh_encoder_kinds(encoder.kind)).double()
    return Covariance(ScaleKernel(built) if scale else built, kind)
