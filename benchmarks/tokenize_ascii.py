"""Tokenizing texts, the code before against now in one run (each code in its own process, one thread):
``Vocabulary(min_df=2).fit(train)`` and ``encode(test)`` of a corpus, every text tokenized once (a fresh
process: the token memo is empty).

Before, every text went through the Unicode token pattern (a letter of any alphabet, then letters or combining
marks) and a filter of short tokens; now an ASCII text goes through runs of ASCII letters of the shortest
length or more, which are the same tokens. Printed: the seconds of each step, their ratios, and whether the two
codes' vocabularies and encoded test sets are equal.

    python benchmarks/tokenize_ascii.py                # benchmarks/README.md, "Tokenizing ASCII texts"
    python benchmarks/tokenize_ascii.py --quick        # a synthetic corpus, seconds: the tests'
"""

from __future__ import annotations

import argparse

from _before import run_before_and_now

BEFORE = "49e91a2"

CHILD = r"""
import hashlib, json, sys, time, warnings
import torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
warnings.simplefilter("ignore")  # the test split's unseen words and empty documents
from lvgp import Vocabulary
if args["quick"]:
    from lvgp.datasets import make_synonym_regression
    texts = list(make_synonym_regression(n=400, noise=0.1, random_state=0).texts)
    texts = [t + (" Café, naïve 42 x_y" if i % 7 == 0 else ", 42 x_y.") for i, t in enumerate(texts)]
    train, test = texts[:300], texts[300:]
else:
    from lvgp.datasets import load_text_classification
    data = load_text_classification(args["dataset"])
    train, test = list(data.train_texts), list(data.test_texts)
start = time.perf_counter()
vocab = Vocabulary(min_df=2).fit(train)
fit = time.perf_counter() - start
start = time.perf_counter()
ids = vocab.encode(test, on_empty="keep")
encode = time.perf_counter() - start
digest = hashlib.sha256("\n".join(vocab.words).encode() + ids.numpy().tobytes()).hexdigest()
print(json.dumps({"fit": fit, "encode": encode, "digest": digest, "words": len(vocab.words),
                  "train": len(train), "test": len(test), "chars": sum(map(len, train + test)),
                  "ascii": sum(t.isascii() for t in train + test)}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus (the test suite's run)")
    parser.add_argument("--dataset", default="20ng", help="a text classification set (train fitted, test encoded)")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    job = {"quick": args.quick, "dataset": args.dataset}
    before, now = run_before_and_now(CHILD, args.before, job)
    name = "a synthetic corpus" if args.quick else args.dataset
    print(
        f"Vocabulary(min_df=2) of {name}: fit on {now['train']} texts, encode {now['test']} "
        f"({now['chars'] / 1e6:.1f} M characters, {now['ascii']} of {now['train'] + now['test']} texts ASCII; "
        f"{now['words']} words), one thread; the code before is {args.before}\n"
    )
    print("| code | fit s | encode s |\n|---|---|---|")
    for code, out in (("before", before), ("now", now)):
        print(f"| {code} | {out['fit']:.2f} | {out['encode']:.2f} |")
    total = (before["fit"] + before["encode"]) / (now["fit"] + now["encode"])
    print(
        f"\nspeed-up: fit {before['fit'] / now['fit']:.2f}x, encode {before['encode'] / now['encode']:.2f}x, "
        f"both {total:.2f}x"
    )
    same = before["digest"] == now["digest"]
    print(f"the two codes' vocabularies and encoded test sets: {'equal' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
