"""The tiny random encoder of the benchmarks' ``--quick`` runs, one helper for all: a small random BERT over
``words`` that the pretrained encoder's name resolves to for the rest of the run (no download), its encodings
cached in a temporary folder (``LVGP_DATA``) that ``scratch`` removes at its exit, out of the user's cache."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any


def quick_encoder(scratch: contextlib.ExitStack, words: list[str]) -> Any:
    """The stand-in :class:`~lvgp.encoders.SentenceEncoder` (hidden size 16), installed as the shared encoder."""
    from lvgp.encoders import SentenceEncoder, sentence

    os.environ["LVGP_DATA"] = scratch.enter_context(tempfile.TemporaryDirectory())
    tiny = SentenceEncoder.from_config({"hidden_size": 16, "intermediate_size": 32}, words=words, seed=0)
    sentence.shared_encoder = lambda name="x", device="cpu": tiny  # noqa: ARG005 -- no download
    return tiny
