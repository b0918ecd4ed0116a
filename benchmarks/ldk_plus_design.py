"""How ``ldk-gpc-plus`` and ``latent-smm-plus`` were designed: one change at a time, scored on dev
documents (never a test split).

The design question of issue 26: an LDK that contains the bag of words, ``K = latent part + lambda x
tf-idf part``. Each row changes one thing and is scored on **dev documents**: 2,000 documents of the
corpus's *training* part that were not drawn for the labelled sample (their labels are used for
scoring only; the test split is never read). r8 and 20ng, the classification study's samples and 1%
vocabulary cut, GloVe 6B 50d, one thread.

GP classifier rows (accuracy and log loss on the dev documents):

1. the previous design: GloVe-tied q = 16 vectors learned by MAP (rho 10), the cosine of the joint
   kernel, alpha_eps 0.01, per-class output scales and noises (50 L-BFGS iterations);
2. the word vectors fixed to GloVe (``learn_word_vectors=False``);
3. the cosine of each part, added (``identity_form="separate"``);
4. the Dirichlet pseudo-count alpha_eps 1e-6;
5. one output scale and noise for all classes (``class_hyperparameters="shared"``);
6. a log-normal prior on lambda around its balanced start, sd 2 / 1 / 0.5
   (``identity_weight_prior_sd``; 0.5 = ``ldk-gpc-plus``).

Latent SMM rows (accuracy; fixed GloVe vectors, separate cosine parts, lambda in {0.5, 1, 2} and C in
the thesis grid by 3-fold CV inside the sample):

7. one-vs-one (LIBSVM's, the thesis);
8. one-vs-rest;
9. ties in CV accuracy broken by the CV hinge loss = ``latent-smm-plus``.

References: the linear SVM and logistic regression on tf-idf (C by 3-fold CV).

    python benchmarks/ldk_plus_design.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200] [--samples 3]
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings

import numpy as np

from lvgp import LBFGS
from lvgp.kernels import LDKSpec


@functools.lru_cache(maxsize=64)
def dev_documents(dataset: str, split: int, size: int, n_dev: int = 2000):
    """The study's training sample (after the 1% cut) and ``n_dev`` other documents of the training part."""
    from lvgp.bow.vocabulary import Vocabulary
    from lvgp.experiments.classification import ClassificationStudy, _sample

    study = ClassificationStudy(dataset=dataset, min_df_fraction=0.01)
    _, pool_texts, pool_labels, train, _ = _sample(study, split, size)
    rest = np.setdiff1d(np.arange(len(pool_labels)), train)
    rest = np.random.default_rng([split, size, 7]).choice(rest, min(n_dev, len(rest)), replace=False)
    vocab = Vocabulary(min_df=0.01).fit([pool_texts[i] for i in train])

    def cut(indices):
        return [" ".join(t for t in vocab.tokenize(pool_texts[i]) if t in vocab) for i in indices]

    x_train, x_dev = cut(train), cut(rest)
    keep = np.array([bool(t) for t in x_train])
    return [t for t, k in zip(x_train, keep) if k], pool_labels[train][keep], x_dev, pool_labels[rest]


def dev_parser(description: str, sizes: str, samples: int, quick: str) -> argparse.ArgumentParser:
    """The options of the benchmarks that score on :func:`dev_documents`: ``--quick`` (its help:
    ``quick``), ``--datasets``, ``--sizes`` and ``--samples`` (their defaults ``sizes``, ``samples``)."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--sizes", default=sizes)
    parser.add_argument("--samples", type=int, default=samples)
    return parser


def dev_grid(args: argparse.Namespace) -> tuple[list[str], list[int], int, int]:
    """``(datasets, sizes, samples, dev documents)`` of :func:`dev_parser`'s options (``--quick``: r8 at
    30 documents, one sample, 200 dev documents), one torch thread, warnings off."""
    from lvgp.experiments.executors import limit_threads

    limit_threads(1)
    warnings.simplefilter("ignore")
    if args.quick:
        return ["r8"], [30], 1, 200
    return args.datasets.split(","), [int(s) for s in args.sizes.split(",")], args.samples, 2000


def rows(quick: bool) -> list[tuple[str, object]]:
    from lvgp.baselines.text_classifiers import BowClassifier
    from lvgp.experiments.classification import PLUS_GPC_PRIOR_SD, THESIS_CS
    from lvgp.experiments.selection import DevSelected
    from lvgp.models.gpc import LDKGPClassifier
    from lvgp.models.latent_smm import LatentSMMClassifier

    iters = 5 if quick else 300
    plus = LDKSpec.plus("glove-6b-50d", rho=0.1)  # the -plus kernel (ldk-gpc-plus adds the prior on lambda)
    old = LDKSpec(16, 10.0, "linear", "cosine", word_weighting="idf", word_embeddings="glove-6b-50d")
    old = old.replace(identity_weight="balanced")
    gpc = [
        (
            "1 GPC: previous (tied q=16 learned, joint cosine, eps 0.01)",
            old,
            dict(optimizer=LBFGS(max_iter=5 if quick else 50)),
        ),
        ("2 GPC: + vectors fixed to GloVe", plus.replace(identity_form="joint"), dict(optimizer=LBFGS(max_iter=iters))),
        ("3 GPC: + cosine of each part added", plus, dict(optimizer=LBFGS(max_iter=iters))),
        ("4 GPC: + alpha_eps 1e-6", plus, dict(alpha_epsilon=1e-6, optimizer=LBFGS(max_iter=iters))),
        (
            "5 GPC: + shared class hyper-parameters",
            plus,
            dict(alpha_epsilon=1e-6, class_hyperparameters="shared", optimizer=LBFGS(max_iter=iters)),
        ),
    ]
    gpc += [
        (
            f"6 GPC: + prior on lambda, sd {sd:g}" + (" (ldk-gpc-plus)" if sd == PLUS_GPC_PRIOR_SD else ""),
            plus.replace(identity_weight_prior_sd=sd),
            dict(alpha_epsilon=1e-6, class_hyperparameters="shared", optimizer=LBFGS(max_iter=iters)),
        )
        for sd in (2.0, 1.0, 0.5)
    ]
    out: list[tuple[str, object]] = [
        ("linear SVM (tf-idf)", BowClassifier("svm", random_state=0)),
        ("logreg (tf-idf)", BowClassifier("logreg", random_state=0)),
    ]
    out += [(name, LDKGPClassifier(spec, random_state=0, **options)) for name, spec, options in gpc]
    grid = {"C": list(THESIS_CS), "identity_weight": [0.5, 1.0, 2.0]}
    if quick:  # the code path: two values of each (three folds still)
        grid = {"C": list(THESIS_CS)[:2], "identity_weight": [0.5, 1.0]}

    class FirstOfTies(DevSelected):
        """DevSelected without the hinge tie-break (the first of the tied settings)."""

        @staticmethod
        def _dev_tiebreak(model, X, y):
            return None

    for name, multi_class, selector in (
        ("7 SMM: one-vs-one", "ovo", FirstOfTies),
        ("8 SMM: one-vs-rest", "ovr", FirstOfTies),
        ("9 SMM: + hinge tie-break (latent-smm-plus)", "ovr", DevSelected),
    ):
        smm = LatentSMMClassifier(plus.replace(identity_weight=1.0), multi_class=multi_class, random_state=0)
        out.append((name, selector(smm, grid, 0, folds=3)))
    return out


def main(argv=None) -> int:
    parser = dev_parser(__doc__, "50,100,200", 3, "r8 at 30 documents, one sample, 200 dev documents")
    args = parser.parse_args(argv)
    from lvgp.base.metrics import log_loss

    datasets, sizes, samples, n_dev = dev_grid(args)
    for dataset in datasets:
        results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
        for size in sizes:
            for split in range(samples):
                x_train, y_train, x_dev, y_dev = dev_documents(dataset, split, size, n_dev)
                for name, model in rows(args.quick):
                    start = time.perf_counter()
                    model.fit(x_train, y_train)
                    seconds = time.perf_counter() - start
                    accuracy = float(np.mean(model.predict(x_dev) == y_dev))
                    loss = (
                        log_loss(model.predict_proba(x_dev), model.classes_, y_dev)
                        if hasattr(model, "predict_proba")
                        else np.nan
                    )
                    results.setdefault((name, size), []).append((accuracy, loss, seconds))
        print(f"\n{dataset}: dev accuracy / dev log loss (mean over {samples} samples), fit seconds")
        print("| step | " + " | ".join(f"{n} documents" for n in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for name, _ in rows(args.quick):
            cells = []
            for size in sizes:
                acc, loss, sec = np.mean(results[(name, size)], axis=0)
                cells.append(f"{acc:.3f}" + ("" if np.isnan(loss) else f" / {loss:.3f}") + f" ({sec:.1f} s)")
            print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
