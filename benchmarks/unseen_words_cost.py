"""Encoding texts with many unseen words, the code before against now in one run (each code in its own process, one
thread): a vocabulary fitted on a few labelled texts (an active learner's first rounds: 20ng's first 200 training
texts), then every text of the pool and the test split encoded (``encode_ragged``, as the GP classifiers' predictions
do) round after round, tokens memoized after the first. Most documents then hold words the vocabulary has not: the
:class:`~lvgp.warnings.UnseenWordsWarning` counts the distinct ones, which the code before gathered token by token
in Python (``benchmarks/README.md``, "``joined_cloud_cost.py`` -- the words' part reads each input once"). Printed:
the seconds of the rounds after the first, their ratio, and whether the two codes' ids and warnings are equal.

    python benchmarks/unseen_words_cost.py             # the run recorded in benchmarks/README.md
    python benchmarks/unseen_words_cost.py --quick     # a synthetic corpus, seconds: the tests'
"""

from __future__ import annotations

import argparse

from _before import run_before_and_now

BEFORE = "c4c5020"

CHILD = r"""
import hashlib, json, sys, time, warnings
import torch
args = json.loads(sys.argv[1])
torch.set_num_threads(1)
from lvgp import Vocabulary
if args["quick"]:
    from lvgp.datasets import make_synonym_regression
    texts = list(make_synonym_regression(n=600, noise=0.1, random_state=0).texts)
    texts = [t + f" extra{i % 97} word{i}" for i, t in enumerate(texts)]
    labelled, read = texts[:20], texts
else:
    from lvgp.datasets import load_text_classification
    data = load_text_classification(args["dataset"])
    labelled, read = list(data.train_texts)[: args["labelled"]], list(data.train_texts) + list(data.test_texts)
vocab = Vocabulary().fit(labelled)
seconds, digests, messages = [], [], []
for r in range(args["rounds"]):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        ragged, _ = vocab.encode_ragged(read)
        seconds.append(time.perf_counter() - start)
    messages.append([str(w.message) for w in caught])
    digests.append(hashlib.sha256(ragged.padded().numpy().tobytes()).hexdigest())
print(json.dumps({"seconds": seconds, "digests": digests, "messages": messages, "words": len(vocab),
                  "labelled": len(labelled), "read": len(read)}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus (the test suite's run)")
    parser.add_argument("--dataset", default="20ng", help="a text classification set (train and test read)")
    parser.add_argument(
        "--labelled", type=int, default=200, help="the first training texts the vocabulary is fitted on"
    )
    parser.add_argument("--rounds", type=int, default=6, help="encodings of every text (the first fills the memo)")
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code before (default {BEFORE})")
    args = parser.parse_args(argv)
    job = {"quick": args.quick, "dataset": args.dataset, "labelled": args.labelled, "rounds": max(2, args.rounds)}
    before, now = run_before_and_now(CHILD, args.before, job)
    name = "a synthetic corpus" if args.quick else args.dataset
    print(
        f"Vocabulary() of {name}'s first {now['labelled']} texts ({now['words']} words), encode_ragged of "
        f"{now['read']} texts {job['rounds']} times, one thread; the code before is {args.before}\n"
    )
    print("| code | first round s | each later round s |\n|---|---|---|")
    later = {}
    for code, out in (("before", before), ("now", now)):
        later[code] = sum(out["seconds"][1:]) / (len(out["seconds"]) - 1)
        print(f"| {code} | {out['seconds'][0]:.2f} | {later[code]:.3f} |")
    print(f"\nspeed-up of a later round: {later['before'] / later['now']:.2f}x")
    same = before["digests"] == now["digests"] and before["messages"] == now["messages"]
    print(f"the two codes' ids and warnings: {'equal' if same else 'DIFFERENT'}")
    print(f"the warning: {now['messages'][0][0] if now['messages'][0] else '(none)'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
