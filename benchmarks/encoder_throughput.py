"""Throughput of the sentence encoder (issue 37): documents a second of
``SentenceEncoder.pretrained("all-MiniLM-L6-v2").encode`` (the on-disk cache off) on short texts
(the Amazon review snippets) and long ones (20 newsgroups posts, truncated at 256 tokens), on 1 and 2
torch threads and on CUDA where there is one; beside it, in the same run, the reference a user
pays anyway: tf-idf vectors of the same texts (``lvgp.Vocabulary`` + scikit-learn's
``TfidfTransformer``), and the ratio.

    python benchmarks/encoder_throughput.py [--docs 400] [--threads 1,2] [--device cpu] [--quick]

``--quick``: a tiny random BERT (nothing downloaded) on 20 texts: the code path, not the numbers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


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
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from lvgp.encoders import SentenceEncoder

    start = time.perf_counter()
    if args.quick:
        args.docs, args.threads = 20, "1"
        encoder = SentenceEncoder.from_config(max_length=256, device=args.device)
    else:
        encoder = SentenceEncoder.pretrained("all-MiniLM-L6-v2", device=args.device)
    print(f"loading the model: {time.perf_counter() - start:.1f} s; device {args.device}", end="")
    if args.device.startswith("cuda"):
        print(f" ({torch.cuda.get_device_name(torch.device(args.device))})", end="")
    print()
    print("| texts | tokens (mean) | threads | docs/s | tf-idf docs/s | encoder / tf-idf time |")
    print("|---|---|---|---|---|---|")
    for name in ("amazon-snippets", "20ng"):
        docs = texts(name, args.docs)
        tokens = np.mean([len(encoder.tokenizer.encode(d).ids) for d in docs])
        for threads in [int(t) for t in args.threads.split(",")]:
            torch.set_num_threads(threads)
            encoder.encode(docs[:32], cache=False)  # warm-ups
            tfidf_seconds(docs[:32])
            start = time.perf_counter()
            encoder.encode(docs, cache=False)
            seconds = time.perf_counter() - start
            reference = tfidf_seconds(docs)
            print(
                f"| {name} | {tokens:.0f} | {threads} | {len(docs) / seconds:.1f} | {len(docs) / reference:.0f} | "
                f"{seconds / reference:.1f}x |"
            )


if __name__ == "__main__":
    main()
