"""lvgp's sLDA against tomotopy 0.14's SLDAModel (C++ collapsed Gibbs sampling), side by side
in one run, on the same documents: movie review snippets (Hutto & Gilbert 2014), 8,605
training and 2,000 test sentences, stop words and tokens shorter than 3 letters removed,
words occurring fewer than 2 times in the training sentences removed. Ridge on word
frequencies as a reference point.

    pip install tomotopy==0.14.0      # optional benchmark dependency
    python benchmarks/slda_tomotopy.py [--topics 20] [--quick] [--profile]

Prints fit seconds and held-out predictive R^2 for each. Without tomotopy installed, the
lvgp rows are printed and tomotopy's are marked missing.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from _profile import profiled

from lvgp import EM, MiniBatch, Vocabulary
from lvgp.baselines.linear import DevTunedLinearRegression
from lvgp.datasets import load_review_snippets
from lvgp.models.slda import SLDARegressor


def pr2(y, pred) -> float:
    return float(1 - np.sum((y - pred) ** 2) / np.sum((y - np.mean(y)) ** 2))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--domain", default="movie", choices=("movie", "amazon"), help="review snippets of this domain")
    parser.add_argument("--quick", action="store_true", help="500 training and 300 test sentences, few iterations")
    parser.add_argument("--gibbs-iterations", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--profile", action="store_true", help="profile the SVI fit (top functions by own time)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    corpus = load_review_snippets(args.domain)
    perm = np.random.default_rng(0).permutation(len(corpus))
    # movie: 8,605 training sentences (the earlier runs); amazon (3,708 sentences): 70% of them
    n_train = 500 if args.quick else min(8605, int(0.7 * len(corpus)))
    n_test = 300 if args.quick else 2000
    train, test = perm[:n_train], perm[n_train : n_train + n_test]
    texts = np.array(corpus.texts, dtype=object)
    y_train, y_test = corpus.y[train], corpus.y[test]
    vocab = Vocabulary(min_df=1, min_token_len=3).fit(texts[train])
    counts = np.asarray(vocab.counts(list(texts[train])).sum(axis=0)).ravel()
    vocab = Vocabulary.from_words([w for w, c in zip(vocab.words, counts) if c >= 2], min_token_len=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_tokens = [[w for w in vocab.tokenize(t) if w in vocab] for t in texts[train]]
        test_tokens = [[w for w in vocab.tokenize(t) if w in vocab] for t in texts[test]]
    keep_train = np.array([len(t) > 0 for t in train_tokens], dtype=bool)
    keep_test = np.array([len(t) > 0 for t in test_tokens], dtype=bool)
    train_tokens = [t for t, k in zip(train_tokens, keep_train) if k]
    test_tokens = [t for t, k in zip(test_tokens, keep_test) if k]
    y_train, y_test = y_train[keep_train], y_test[keep_test]
    K = args.topics
    print(
        f"{args.domain} snippets: {len(train_tokens)} train / {len(test_tokens)} test sentences with known words, "
        f"{len(vocab)} words, K={K}"
    )
    rows = []
    profile = ""

    ridge = DevTunedLinearRegression("ridge", features="frequencies", vocabulary=vocab)
    start = time.perf_counter()
    ridge.fit(train_tokens, y_train)
    rows.append(
        (
            "ridge on word frequencies (5-fold CV alpha)",
            time.perf_counter() - start,
            pr2(y_test, ridge.predict(test_tokens)),
        )
    )

    # the EM with its initial eta scale chosen on dev (the default), the SVI (its default: eta refitted
    # on the unsupervised topic frequencies), the EM at the paper's fixed scale 1, the SVI without the refit
    runs = (("em", "auto", None), ("svi", "auto", None), ("em", 1.0, None), ("svi", "auto", False))
    for inference, eta_scale, refit in runs:
        model = SLDARegressor(
            K,
            inference=inference,
            refit_eta=refit,
            vocabulary=vocab,
            random_state=0,
            em_eta_scale=eta_scale,
            # each inference takes its own kind of optimizer (EM iterations, SVI epochs)
            optimizer=EM(max_iter=10 if args.quick else 100)
            if inference == "em"
            else MiniBatch(max_epochs=5 if args.quick else 300),
        )
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if args.profile and inference == "svi":
                _, profile = profiled(model.fit, train_tokens, y_train, top=12)
            else:
                model.fit(train_tokens, y_train)
        seconds = time.perf_counter() - start
        what = f"lvgp sLDA, {inference} ({model.n_iter_} iterations, eta {'refitted' if model.refit_eta_ else 'of the M-step'}"
        if inference == "em":
            chosen = {k: round(v, 4) for k, v in model.em_eta_scale_dev_mse_.items()}
            what += f", eta scale {model.em_eta_scale_:g}" + (f" chosen on dev from {chosen}" if chosen else "")
        rows.append((what + ")", seconds, pr2(y_test, model.predict(test_tokens))))

    try:
        import tomotopy as tp
    except ImportError:
        rows.append(("tomotopy SLDAModel: not installed (pip install tomotopy==0.14.0)", float("nan"), float("nan")))
    else:
        mdl = tp.SLDAModel(k=K, vars="l", seed=0)
        for tokens, target in zip(train_tokens, y_train):
            mdl.add_doc(tokens, y=[float(target)])
        iterations = 50 if args.quick else args.gibbs_iterations
        start = time.perf_counter()
        mdl.train(iterations, workers=2)
        seconds = time.perf_counter() - start
        docs = [mdl.make_doc(tokens) for tokens in test_tokens]
        mdl.infer(docs, workers=2)
        pred = np.array([mdl.estimate(doc)[0] for doc in docs])
        rows.append(
            (f"tomotopy 0.14 SLDAModel (Gibbs, {iterations} iterations, 2 workers)", seconds, pr2(y_test, pred))
        )

    width = max(len(r[0]) for r in rows)
    print(f"\n{'method':<{width}}  fit seconds  held-out pR^2")
    for name, seconds, score in rows:
        print(f"{name:<{width}}  {seconds:11.1f}  {score:13.3f}")
    em_seconds, em_pr2 = rows[1][1], rows[1][2]
    svi_seconds, svi_pr2 = rows[2][1], rows[2][2]
    paper_seconds, paper_pr2 = rows[3][1], rows[3][2]
    print(
        f"\nSVI / EM wall time: {svi_seconds / em_seconds:.2f}x (target <= 2); pR^2 SVI - EM: {svi_pr2 - em_pr2:+.3f} (target >= -0.01)"
        f"\nagainst the EM at the paper's eta scale 1: {svi_seconds / paper_seconds:.2f}x; pR^2 SVI - EM: {svi_pr2 - paper_pr2:+.3f}"
    )
    if profile:
        print(f"\nProfile of the SVI fit (cProfile, own time; the profiler adds overhead):\n\n{profile}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
