"""Contextual word vectors for the LDK, two ways, scored on dev documents (issue 37).

The encoder issue asks for the sentence encoder's *contextual* vectors inside the LDK, measured two
ways on dev, keeping what wins:

* **(a) per word type** -- ``word_embeddings="contextual"``
  (:class:`lvgp.encoders.ContextualWordEmbeddings`): a vocabulary word's vector is the mean of its
  contextual token vectors over the training texts (the LDK's fixed word vectors, in place of or
  beside GloVe);
* **(b) per token** -- a document is the distribution of its tokens' contextual vectors; with the RBF
  embedding kernel its mean embedding is a distribution kernel beyond mean pooling (with the linear
  embedding and level 2 it *is* the mean-pooled sentence vector). Computed with random Fourier
  features of the RBF (``--features`` of them; the bandwidth by the median heuristic on the training
  tokens) averaged over each document's tokens: the encoder's part of ``ldk-gpc-encoder`` then takes
  the cosine of these mean embeddings in place of the cosine of the mean-pooled vectors.

The first rows are the references: logistic regression on the encoder's vectors and on their
concatenation with tf-idf (C by stratified CV on the log loss, as the study's methods), and the GP
classifier on exactly the concatenation's kernel (the linear kernel on ``[tf-idf | encoder]``): set
against the logistic regression on the same features, it shows what the Dirichlet GP's likelihood
costs or gains with the kernel held fixed. The other rows are the GP classifier of ``ldk-gpc-encoder`` (Dirichlet GP, one output scale and noise, the
log-normal priors, temperature calibration) with one thing changed. Scored on **dev documents**: other
documents of the corpus's *training* part, never its test split; the classification study's samples
and 1% vocabulary cut for the word parts, the texts as written for the encoder.

    python benchmarks/encoder_design.py [--quick] [--datasets r8,20ng] [--sizes 50,200] [--samples 2]
        [--dev 800] [--threads 2] [--first-sample K] [--rows NAME,...]

A row with the composed kernel's encoder weight chosen by the labels after the fit (``encoder_weight="loo"``,
the open-set study's since rule 19) stands beside the same kernel at the evidence's weight; ``--first-sample``
draws fresh samples past the ones used (``benchmarks/README.md``, "The labels' encoder weight in the
classification study").

``--quick`` runs a tiny random BERT on the synthetic corpus (the code path; its numbers mean nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
import types
import warnings

import numpy as np
import torch
from _threads import add_threads_option, resolve_threads

from lvgp import LBFGS
from lvgp.kernels import LDKSpec


def dev_documents(dataset: str, split: int, size: int, n_dev: int):
    """The study's training sample (raw texts) and ``n_dev`` other documents of the training part."""
    from lvgp.experiments.classification import ClassificationStudy, _sample

    study = ClassificationStudy(dataset=dataset, min_df_fraction=0.01)
    _, pool_texts, pool_labels, train, _ = _sample(study, split, size)
    rest = np.setdiff1d(np.arange(len(pool_labels)), train)
    rest = np.random.default_rng([split, size, 7]).choice(rest, min(n_dev, len(rest)), replace=False)
    return [pool_texts[i] for i in train], pool_labels[train], [pool_texts[i] for i in rest], pool_labels[rest]


def token_distribution_features(encoder, texts: list[str], scale: float | None, features: int, seed: int = 0):
    """(b): each text's mean random Fourier feature of its (ordinary) tokens' contextual vectors,
    ``n x features`` float64, and the RBF's length scale (``scale``; ``None``: the median distance
    between tokens of the first texts)."""
    token_sets = [tv.vectors[~tv.special].double() for tv in encoder.token_vectors(texts)]
    if scale is None:
        sample = torch.cat(token_sets[:50])[:2000]
        scale = float(torch.cdist(sample, sample).median())
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(encoder.dim, features, generator=g, dtype=torch.float64) / scale
    b = torch.rand(features, generator=g, dtype=torch.float64) * 2 * math.pi
    out = torch.stack([(math.sqrt(2 / features) * torch.cos(t @ w + b)).mean(0) for t in token_sets])
    return out, scale


def quick_texts(n: int = 160, seed: int = 0):
    """Three classes of short texts: each class's own words among shared ones (``--quick``)."""
    rng = np.random.default_rng(seed)
    own = [["stock", "market", "shares"], ["match", "goal", "team"], ["rain", "storm", "cloud"]]
    shared = ["today", "report", "people", "city", "week", "news"]
    labels = rng.integers(0, 3, n)
    texts = [" ".join(rng.choice(own[c] + shared, 6)) for c in labels]
    return texts, labels, sorted({w for ws in own for w in ws} | set(shared))


def rows(quick: bool, only: str | None = None) -> list[tuple[str, dict]]:
    """(name, how the row differs from ldk-gpc-encoder)."""
    glove = "corpus" if quick else "glove-6b-50d"  # --quick has no GloVe download
    every = [
        ("logreg on the encoder (encoder-logreg)", dict(logreg=False)),
        ("logreg on tf-idf and encoder concatenated (tfidf-encoder-logreg)", dict(logreg=True)),
        ("GP on the concatenation's kernel (linear on tf-idf and encoder)", dict(alone=True, features="concatenation")),
        ("GP on tf-idf cosine + mu x encoder cosine (no LDK; mu by the marginal likelihood)", dict(bow=True)),
        (
            "GP on tf-idf cosine + mu x encoder cosine, mu chosen by the labels (encoder_weight='loo')",
            dict(bow=True, encoder_weight="loo"),
        ),
        ("encoder-gpc (the encoder's part alone, mean pooled)", dict(alone=True)),
        ("ldk-gpc-encoder (GloVe LDK + BoW + mean pooled)", dict(words=glove)),
        ("ldk-gpc-encoder, the priors on lambda and mu with sd 2", dict(words=glove, prior_sd=2.0)),
        ("ldk-gpc-encoder, no priors on lambda and mu", dict(words=glove, prior_sd=None)),
        ("(a) contextual word vectors in place of GloVe", dict(words="contextual")),
        ("(a) GloVe and contextual word vectors", dict(words=(glove, "contextual"))),
        ("(b) token distribution (RBF) in place of mean pooling", dict(words=glove, features="tokens")),
        ("(a) + (b)", dict(words="contextual", features="tokens")),
    ]
    return [r for r in every if only is None or any(part in r[0] for part in only.split(","))]


def build(change: dict, encoder, vocabulary, features: dict, quick: bool):
    from gpytorch.kernels import LinearKernel

    from lvgp.baselines.encoder import EncoderLogisticRegression
    from lvgp.experiments.classification import ENCODER_CS, PLUS_GPC_MAX_ITER, PLUS_GPC_PRIOR_SD
    from lvgp.kernels import FeatureKernel
    from lvgp.models.gpc import LDKGPClassifier

    options = dict(
        class_hyperparameters="shared",
        alpha_epsilon=1e-6,
        calibration="temperature",
        optimizer=LBFGS(max_iter=5 if quick else PLUS_GPC_MAX_ITER),
        random_state=0,
        sentence_encoder=encoder,
        vocabulary=vocabulary,
    )
    if "logreg" in change:
        return EncoderLogisticRegression(
            encoder, tfidf=change["logreg"], min_df=1 if quick else 0.01, Cs=ENCODER_CS, random_state=0
        )
    if change.get("bow"):

        class BagOfWordsBesideEncoderGPC(LDKGPClassifier):
            """The word part is the cosine of the tf-idf vectors alone (no mean embedding)."""

            def _kernel(self, seed, x):
                from lvgp.bow.weighting import idf_weights
                from lvgp.kernels import BagOfWordsKernel
                from lvgp.kernels.packed import beside_encoder

                ids = x[..., encoder.dim :].long()
                num_words = self.encoder_.num_words
                bow = BagOfWordsKernel(num_words, "cosine", word_weights=idf_weights(ids, num_words)).double()
                self.kernel_kind_ = "bow"
                return beside_encoder(bow, ids, encoder.dim, "cosine").double()

        options["encoder_weight"] = change.get("encoder_weight", "evidence")
        return BagOfWordsBesideEncoderGPC(LDKSpec(rho=0.1), **options)  # the spec is not built
    if "prior_sd" in change:
        sd = change["prior_sd"]

        class LooserPriorsGPC(LDKGPClassifier):
            """ldk-gpc-encoder with another sd of the log-normal priors on lambda and mu."""

            def _kernel(self, seed, x):
                from lvgp.kernels.packed import WordSetKernel, encoder_part

                ids = x[..., encoder.dim :].long()
                words = self.encoder_.vocabulary.words
                word_kernel = self._spec.build(
                    self.encoder_.num_words, ids, word_features=self.encoder_.word_features, words=words, seed=seed
                )
                self.kernel_kind_ = "exact"
                with torch.no_grad():
                    balance = float(word_kernel(ids, diag=True).mean())
                part = encoder_part("cosine", encoder.dim, weight=balance, weight_prior_sd=sd)
                return (WordSetKernel(word_kernel, encoder.dim) + part).double()

        spec = LDKSpec.plus(change["words"], rho=0.1, identity_weight_prior_sd=sd)
        return LooserPriorsGPC(spec, **options)
    table = features.get(change.get("features"))
    dim = encoder.dim if table is None else len(next(iter(table.values())))
    if change.get("alone"):
        kernel: object = FeatureKernel(LinearKernel(), dim, normalize=True)
    else:
        kernel = LDKSpec.plus(change["words"], rho=0.1, identity_weight_prior_sd=PLUS_GPC_PRIOR_SD)
    if table is None:
        return LDKGPClassifier(kernel, **options)

    class OtherFeaturesGPC(LDKGPClassifier):
        """The encoder's part reads other document features (looked up by text)."""

        def _sentence_encoder(self):
            return types.SimpleNamespace(dim=dim)

        def _encoder_features(self, X, name):
            return torch.stack([table[t] for t in X])

    return OtherFeaturesGPC(kernel, **options)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny random BERT on the synthetic corpus")
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--sizes", default="50,200")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument(
        "--first-sample", type=int, default=0, help="the samples' indices start here (fresh draws: past those used)"
    )
    parser.add_argument("--dev", type=int, default=800, help="dev documents per sample")
    parser.add_argument("--features", type=int, default=2048, help="random features of (b)")
    add_threads_option(parser)
    parser.add_argument(
        "--rows", default=None, help="run only the rows whose names contain one of these (comma-separated)"
    )
    args = parser.parse_args(argv)
    resolve_threads(args)
    with contextlib.ExitStack() as scratch:  # --quick's cache folder, removed at the end
        from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins
        from lvgp.baselines.encoder import EncoderLogisticRegression
        from lvgp.bow.vocabulary import Vocabulary
        from lvgp.experiments.executors import limit_threads

        limit_threads(args.threads)
        warnings.simplefilter("ignore")
        if args.quick:
            from _quick_encoder import quick_encoder

            texts, labels, words = quick_texts()
            encoder = quick_encoder(scratch, words)  # its encodings in a folder removed at exit
            data = {("synthetic", 40, 0): (texts[:40], labels[:40], texts[40:], labels[40:])}
            datasets, sizes, samples = ["synthetic"], [40], 1
        else:
            from lvgp.encoders import shared_encoder

            encoder = shared_encoder("all-MiniLM-L6-v2")
            datasets, sizes, samples = args.datasets.split(","), [int(s) for s in args.sizes.split(",")], args.samples
            first = args.first_sample
            data = {
                (d, s, k - first): dev_documents(d, k, s, args.dev)
                for d in datasets
                for s in sizes
                for k in range(first, first + samples)
            }
        for dataset in datasets:
            results: dict[tuple[str, int], list[tuple[float, ...]]] = {}
            for size in sizes:
                for split in range(samples):
                    x_train, y_train, x_dev, y_dev = data[(dataset, size, split)]
                    start = time.perf_counter()
                    chosen = rows(args.quick, args.rows)
                    if any(change.get("features") == "tokens" for _, change in chosen):
                        train_f, scale = token_distribution_features(encoder, x_train, None, args.features)
                        dev_f, _ = token_distribution_features(encoder, x_dev, scale, args.features)
                    else:
                        train_f, dev_f = [torch.zeros(1)] * len(x_train), [torch.zeros(1)] * len(x_dev)
                    token_seconds = time.perf_counter() - start
                    concatenation = EncoderLogisticRegression(encoder, tfidf=True, min_df=1 if args.quick else 0.01)
                    concatenated = [
                        *concatenation._fit_features(x_train).toarray(),
                        *concatenation._features(x_dev).toarray(),
                    ]
                    features = {
                        "tokens": dict(zip(x_train + x_dev, [*train_f, *dev_f])),
                        "concatenation": dict(zip(x_train + x_dev, torch.as_tensor(np.array(concatenated)))),
                    }
                    vocabulary = None if args.quick else Vocabulary(min_df=0.01)
                    for name, change in chosen:
                        model = build(change, encoder, vocabulary, features, args.quick)
                        start = time.perf_counter()
                        model.fit(x_train, y_train)
                        proba = model.predict_proba(x_dev)
                        seconds = time.perf_counter() - start - getattr(model, "encode_seconds_", 0.0)
                        accuracy = float(np.mean(model.classes_[proba.argmax(1)] == y_dev))
                        loss = log_loss(proba, model.classes_, y_dev)
                        ece = expected_calibration_error(reliability_bins(proba, model.classes_, y_dev))
                        results.setdefault((name, size), []).append((accuracy, loss, ece, seconds))
                    print(f"{dataset} {size} sample {split}: token features {token_seconds:.0f} s", flush=True)
            print(
                f"\n{dataset}: dev accuracy / log loss / ECE (mean over {samples} samples, "
                f"{len(y_dev)} dev documents), seconds of fit and prediction beside the encoding"
            )
            print("| row | " + " | ".join(f"{n} documents" for n in sizes) + " |")
            print("|---|" + "---|" * len(sizes))
            for name, _ in rows(args.quick, args.rows):
                cells = []
                for size in sizes:
                    acc, loss, ece, sec = np.mean(results[(name, size)], axis=0)
                    cells.append(f"{acc:.3f} / {loss:.3f} / {ece:.3f} ({sec:.0f} s)")
                print(f"| {name} | " + " | ".join(cells) + " |")
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
