"""The bfloat16 encoder against float32 on every text of the study corpora (issue 60): the cosine of
each text's two vectors (the goal: at least 0.995 on every text), and the seconds each path took.

    python benchmarks/encoder_precision.py [--corpora r8,20ng,amazon,movie] [--threads 2]
    python benchmarks/encoder_precision.py --quick      # a tiny random BERT on 40 texts (the code path)

Both paths write the on-disk cache (``$LVGP_DATA/encodings``, one folder a precision), so a study run
afterwards with ``--encoder-precision float32`` or ``bfloat16`` reads its vectors from there (the
accuracy deltas of ``benchmarks/README.md``). A second run reads both caches and only compares.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch


def corpus(name: str) -> list[str]:
    from lvgp.datasets import load_review_snippets, load_text_classification

    if name == "quick":
        return [f"text {i}: " + "a fine plot and a dull film " * (i % 7 + 1) for i in range(40)]
    if name in ("amazon", "movie"):
        return list(load_review_snippets(name).texts)
    data = load_text_classification(name)
    return list(data.train_texts) + list(data.test_texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default="r8,20ng,amazon,movie")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, help="the first N texts of each corpus (a quick look)")
    parser.add_argument("--quick", action="store_true", help="a tiny random BERT on 40 made-up texts, no cache")
    args = parser.parse_args()
    with contextlib.ExitStack() as scratch:  # --quick's cache folder, removed at the end
        torch.set_num_threads(args.threads)
        from lvgp.encoders import SentenceEncoder

        if args.quick:
            import os
            import tempfile

            # the tiny model's vectors stay out of the cache, in a folder removed at exit
            os.environ["LVGP_DATA"] = scratch.enter_context(tempfile.TemporaryDirectory())
            args.corpora = "quick"
            exact, fast = (SentenceEncoder.from_config(max_length=128, precision=p) for p in ("float32", "bfloat16"))
        else:
            exact = SentenceEncoder.pretrained(precision="float32")
            fast = SentenceEncoder.pretrained(precision="bfloat16")
        print(f"{exact!r} against {fast!r}; {args.threads} threads")
        print(
            "| corpus | texts | float32 s | bfloat16 s | min cosine | 0.1% quantile | mean cosine | texts below 0.995 |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for name in args.corpora.split(","):
            texts = corpus(name)[: args.limit]
            seconds = {}
            vectors = {}
            for label, encoder in (("float32", exact), ("bfloat16", fast)):
                start = time.perf_counter()
                vectors[label] = encoder.encode(texts, verbose=True)
                seconds[label] = time.perf_counter() - start
            cosine = (vectors["float32"] * vectors["bfloat16"]).sum(-1).double()
            print(
                f"| {name} | {len(texts):,} | {seconds['float32']:.0f} | {seconds['bfloat16']:.0f} | "
                f"{cosine.min():.5f} | {cosine.quantile(0.001):.5f} | {cosine.mean():.6f} | "
                f"{int((cosine < 0.995).sum())} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
