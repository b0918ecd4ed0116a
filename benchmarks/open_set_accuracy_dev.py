"""In-scope accuracy of the open-set GP against logistic regression on ``[tf-idf | encoder]``, draw by draw,
and where the GP loses it (issue 57).

The open-set study's draws (unknown classes, N labelled texts a known class) on a corpus's training part
alone, as ``open_set_dev.py`` writes it, each text cut to its first ``--first-words`` words where given
(``--scored dev``: the in-scope documents of the training part's unlabelled rest, every one of them), or the
built-in corpus's standard test split (``--scored test``: the same seeds draw the same unknown classes and
labelled texts; its texts whole). Each draw fits logistic regression
(``tfidf-encoder-logreg``) and the rows of ``--rows``:

- ``gp``: the study's ``gpc-bow-encoder-rbf`` (tf-idf cosine plus an RBF kernel of the encoder's vectors,
  the Dirichlet inference, hyper-parameters by the evidence);
- ``gp-latent-mean``: ``gp``'s fit, each text's class the one of the largest latent mean (the argmax of the
  regressions' posterior means, the plug-in decision) in place of the largest predictive probability (the
  expected softmax over the latent Gaussian, Milios et al.'s predictive, which ``predict`` returns);
- ``gp-logreg-features``: the same classifier with a linear kernel on logistic regression's own features
  (its fitted ``[tf-idf | encoder]`` vectors, each scaled to unit length): the kernel of the baseline, the GP's
  inference;
- ``gp-loo``: ``gp`` with ``objective="loo"`` (the hyper-parameters by the leave-one-out log probability);
- ``gp-laplace``: ``gp`` with the Laplace inference as the studies' ``--gpc-inference laplace`` takes it (the
  evidence of at most ``LAPLACE_EVIDENCE_DOCUMENTS``, no tempering), the novelty score ``energy`` and the encoder's
  weight by the evidence (the others need the Dirichlet inference);
  ``gp-laplace-many-draws``: its fit, its expected softmax (over the latents' correlated Gaussian a text) from
  ``MANY_DRAWS`` nodes in place of 256, and from each of ``--laplace-nodes`` (rows ``gp-laplace N nodes``);
- ``gp-output-scale``: ``gp``'s fit with its output scale multiplied by each of ``--output-scales`` after the
  evidence's fit (rows ``gp x c``: the regularization of the regressions on the transformed labels, stronger
  below 1), and ``gp loo-scale``: the multiplier of the smallest leave-one-out log loss of the training labels
  (the tempered expected softmax of the closed-form leave-one-out latents, the temperature refitted at each);
- ``gp-kernel-logreg``: logistic regression on ``gp``'s fitted kernel (kernel logistic regression: the
  representer theorem's features :math:`K_{tt}^{1/2}` of the labelled texts and :math:`K_{dt} K_{tt}^{-1/2}` of the
  scored ones, the kernel's own weights and length-scale as the evidence fitted them), C by the baseline's own
  cross-validation (:func:`~lvgp.baselines.encoder.logistic_regression_cv`, the same Cs): the GP's kernel with
  logistic regression's inference, the posterior mode of a softmax likelihood at a prior scale chosen by
  cross-validated log loss; ``gp-kernel-logreg-s``: the same at C = 1 with the kernel times ``gp``'s output scale
  (the mode at the evidence's prior scale);
- ``gp-many-draws``: ``gp``'s fit, its expected softmax from ``MANY_DRAWS`` Monte Carlo draws of the latent
  functions in place of the classifier's 256 (``predict_samples``): how much of the accuracy the predictive's
  Monte Carlo error moves.

Prints, per corpus and size, each row's mean accuracy, its difference from logistic regression's on the same
draw (mean, standard deviation over the draws, draws ahead) and the texts one of the two classifies right
and the other wrong, summed over the draws.

    python benchmarks/open_set_accuracy_dev.py                        # r8, seeds 36-41: 18 draws, dev documents
    python benchmarks/open_set_accuracy_dev.py --scored test --rows gp
    python benchmarks/open_set_accuracy_dev.py --rows gp-output-scale
    python benchmarks/open_set_accuracy_dev.py --datasets r52 --first-words 12 --rows gp,gp-logreg-features
    python benchmarks/open_set_accuracy_dev.py --quick                # a toy corpus and a tiny random encoder
"""

from __future__ import annotations

import argparse
import types
import warnings

import numpy as np
from open_set_dev import (
    dev_study,
    difference_cells,
    draw_arguments,
    draw_runs,
    draw_seeds,
    scratch_folder,
)  # (the sibling script: benchmarks/ is on the path)

ROWS = (
    "gp",
    "gp-latent-mean",
    "gp-logreg-features",
    "gp-loo",
    "gp-laplace",
    "gp-laplace-many-draws",
    "gp-output-scale",
    "gp-kernel-logreg",
    "gp-kernel-logreg-s",
    "gp-many-draws",
)
#: the rows that read the study GP's one fit
STUDY_FIT_ROWS = (
    "gp",
    "gp-latent-mean",
    "gp-output-scale",
    "gp-kernel-logreg",
    "gp-kernel-logreg-s",
    "gp-many-draws",
)
#: the Monte Carlo draws of the expected softmax of row ``gp-many-draws`` (the classifier's default: 256)
MANY_DRAWS = 16384
BASELINE = "tfidf-encoder-logreg"
GP = "gpc-bow-encoder-rbf"


def logreg_features_gp(gp, logreg, texts: list[str]):
    """A GP classifier with the settings of the (unfitted) study GP ``gp`` whose kernel is linear on the fitted
    ``logreg``'s features of ``texts`` (each row scaled to unit length: :class:`~lvgp.kernels.FeatureKernel`),
    looked up by text."""
    import torch
    from gpytorch.kernels import LinearKernel

    from lvgp.kernels import FeatureKernel

    table = dict(zip(texts, torch.as_tensor(np.asarray(logreg._features(texts).todense()))))
    dim = len(next(iter(table.values())))

    class LogRegFeaturesGP(type(gp)):
        """The encoder's part reads logistic regression's features of each text."""

        def _sentence_encoder(self):
            return types.SimpleNamespace(dim=dim)

        def _encoder_features(self, X, name):
            return torch.stack([table[t] for t in X])

    params = gp.get_params(deep=False)
    params["kernel"] = FeatureKernel(LinearKernel(), dim, normalize=True)
    return LogRegFeaturesGP(**params)


def output_scale_predictions(gp, texts: list[str], scales: list[float]) -> dict[str, np.ndarray]:
    """The fitted ``gp``'s predictions of ``texts`` with its output scale multiplied by each of ``scales`` (rows
    ``gp x c``) and at the multiplier of the smallest tempered leave-one-out log loss (``gp loo-scale``, the
    first on ties); the output scale is restored."""
    import torch

    scale_kernel = gp.model_.covar_module
    fitted = scale_kernel.outputscale.detach().clone()
    rows, losses = {}, []
    try:
        for c in scales:
            with torch.no_grad():
                scale_kernel.outputscale = fitted * c
            losses.append(-float(gp._loo_log_predictive().mean()))  # tempered as the predictions are
            rows[f"gp x {c:g}"] = np.asarray(gp.predict(texts))
    finally:
        with torch.no_grad():
            scale_kernel.outputscale = fitted
    rows["gp loo-scale"] = rows[f"gp x {scales[int(np.argmin(losses))]:g}"]
    return rows


def kernel_features(train: np.ndarray, cross: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Features whose inner products are the kernel: ``U sqrt(L)`` of the ``m x m`` kernel matrix ``train`` of the
    labelled texts (``train = U L U^T``, eigenvalues below 1e-10 of the largest dropped) and ``cross U / sqrt(L)``
    of the ``n x m`` cross-kernel ``cross`` of other texts (their projection on the labelled texts' span, where the
    representer theorem puts a kernel method's solution)."""
    lam, vectors = np.linalg.eigh(train)
    keep = lam > lam.max() * 1e-10
    lam, vectors = lam[keep], vectors[:, keep]
    return vectors * np.sqrt(lam), cross @ vectors / np.sqrt(lam)


def kernel_logreg_predictions(
    gp, logreg, x: list[str], y: np.ndarray, texts: list[str], seed: int
) -> dict[str, np.ndarray]:
    """Rows ``gp-kernel-logreg`` and ``gp-kernel-logreg-s`` (module docstring) of the fitted ``gp`` (one shared
    kernel for the classes), trained on ``x``, ``y``, predicting ``texts``; C among the baseline ``logreg``'s Cs by
    folds shuffled by ``seed``."""
    import torch
    from sklearn.linear_model import LogisticRegression

    from lvgp.baselines.encoder import logistic_regression_cv

    documents = list(x) + list(texts)
    # the kernel reads the documents as the GP's prediction does (tf-idf words and encoder vectors packed)
    with gp._prediction_blocks(documents, len(documents)) as (n, _, blocks):
        ((rows, packed),) = list(blocks)
        if len(rows) != n:
            raise ValueError("a document no part of the kernel reads")
        # the block holds the documents sorted by length: each document's position in it, in document order
        position = torch.argsort(rows)
        packed = packed[position]
        kernel = gp.model_.covar_module.base_kernel(packed, packed[: len(x)]).to_dense().detach().cpu().numpy()
        (train_inputs,) = gp.model_.train_inputs  # the fit's own labelled texts, in their order
        fitted = gp.model_.covar_module.base_kernel(train_inputs).to_dense().detach().cpu().numpy()
    if kernel.ndim != 2:
        raise ValueError("gp-kernel-logreg needs one kernel for the classes (class_hyperparameters='shared')")
    if not np.allclose(kernel[: len(x)], fitted, rtol=1e-8, atol=1e-10):
        raise AssertionError("the labelled texts' kernel differs from the fit's: documents out of order")
    train, cross = kernel_features(kernel[: len(x)], kernel[len(x) :])
    cv = logistic_regression_cv(train, np.asarray(y), logreg.Cs, seed)
    scale = float(np.sqrt(gp.model_.covar_module.outputscale.detach().cpu()))
    fixed = LogisticRegression(C=1.0, max_iter=10_000).fit(train * scale, np.asarray(y))
    return {"gp-kernel-logreg": cv.predict(cross), "gp-kernel-logreg-s": fixed.predict(cross * scale)}


def draws(args) -> list[dict]:
    """One record per (corpus, seed, split, size, row): the in-scope documents' true and predicted labels."""
    from lvgp.experiments.classification import LAPLACE_EVIDENCE_DOCUMENTS
    from lvgp.experiments.open_set import OpenSetStudy

    with scratch_folder(args.out, "open-set-accuracy-") as root:
        runs = draw_runs(root, args)
        records = []
        for run in runs:
            corpus, sizes = run[0], run[3]
            for seed in args.seeds:
                if args.scored == "test":
                    study = OpenSetStudy(
                        dataset=corpus, unknown_classes=run[2], per_class=sizes, splits=run[4], seed=seed, methods=(GP,)
                    )
                else:
                    study = dev_study(run, [GP, BASELINE], seed, args.quick)
                for split in range(run[4]):
                    data = study.split(split)
                    inside = ~data.out_of_scope
                    texts = [t for t, keep in zip(data.test_texts, inside) if keep]
                    labels = data.test_labels[inside]
                    for n in sizes:
                        x, y = data.training(n)

                        def estimator(method, n=n, split=split, study=study):
                            return study.estimator({"method": method, "split": split, "params": {"per_class": n}})

                        logreg = estimator(BASELINE).fit(x, y)
                        predictions = {BASELINE: np.asarray(logreg.predict(texts))}
                        study_gp = None  # the study's GP, fitted once for every row that reads its fit
                        laplace_gp = None  # the Laplace inference's, once for both of its rows
                        for row in args.rows.split(","):
                            if row in STUDY_FIT_ROWS:
                                if study_gp is None:
                                    study_gp = estimator(GP).fit(x, y)
                                if row == "gp":
                                    predictions[row] = np.asarray(study_gp.predict(texts))
                                elif row == "gp-many-draws":
                                    saved, study_gp.predict_samples = study_gp.predict_samples, MANY_DRAWS
                                    try:
                                        predictions[row] = np.asarray(study_gp.predict(texts))
                                    finally:
                                        study_gp.predict_samples = saved
                                elif row == "gp-output-scale":
                                    predictions.update(output_scale_predictions(study_gp, texts, args.output_scales))
                                elif row.startswith("gp-kernel-logreg"):  # both rows from one kernel matrix
                                    if row not in predictions:
                                        predictions.update(
                                            kernel_logreg_predictions(study_gp, logreg, x, y, texts, seed)
                                        )
                                else:
                                    latent_mean = study_gp.predict_latent(texts)[0]
                                    predictions[row] = study_gp.classes_[np.argmax(latent_mean, axis=1)]
                                continue
                            if row.startswith("gp-laplace"):
                                if laplace_gp is None:
                                    laplace_gp = estimator(GP).set_params(
                                        inference="laplace",
                                        calibration=None,
                                        novelty_score="energy",
                                        encoder_weight="evidence",
                                        max_evidence_documents=LAPLACE_EVIDENCE_DOCUMENTS,
                                    )
                                    laplace_nodes = laplace_gp.fit(x, y).predict_samples
                                if row == "gp-laplace":
                                    counts = {row: laplace_nodes}
                                else:
                                    counts = {f"gp-laplace {c} nodes": c for c in args.laplace_nodes}
                                    counts[row] = MANY_DRAWS
                                for name, count in counts.items():
                                    laplace_gp.set_params(predict_samples=count)
                                    predictions[name] = np.asarray(laplace_gp.predict(texts))
                                continue
                            gp = estimator(GP)
                            if row == "gp-logreg-features":
                                gp = logreg_features_gp(gp, logreg, list(x) + texts)
                            elif row == "gp-loo":
                                gp.set_params(objective="loo")
                            predictions[row] = np.asarray(gp.fit(x, y).predict(texts))
                        for row, pred in predictions.items():
                            records.append(dict(corpus=corpus, seed=seed, split=split, per_class=n, row=row, pred=pred))
                        records.append(dict(corpus=corpus, seed=seed, split=split, per_class=n, row=None, pred=labels))
                    print(f"{corpus} seed {seed} split {split}: {len(labels)} in-scope documents", flush=True)
        return records


def table(records: list[dict]) -> str:
    """Each row against logistic regression, draw by draw (module docstring)."""
    by_draw: dict[tuple, dict] = {}
    for r in records:
        by_draw.setdefault((r["corpus"], r["per_class"], r["seed"], r["split"]), {})[r["row"]] = r["pred"]
    lines = [
        "| corpus | labelled a class | row | draws | accuracy | minus LogReg | sd | draws ahead | texts it alone / "
        "LogReg alone gets right |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus in dict.fromkeys(k[0] for k in by_draw):
        for n in sorted({k[1] for k in by_draw if k[0] == corpus}):
            cells = [v for k, v in by_draw.items() if k[:2] == (corpus, n)]
            rows = [row for row in cells[0] if row is not None]
            for row in rows:
                ours = [np.mean(c[row] == c[None]) for c in cells]
                diffs = np.array([np.mean(c[row] == c[None]) - np.mean(c[BASELINE] == c[None]) for c in cells])
                alone = sum(int(np.sum((c[row] == c[None]) & (c[BASELINE] != c[None]))) for c in cells)
                theirs = sum(int(np.sum((c[row] != c[None]) & (c[BASELINE] == c[None]))) for c in cells)
                if row == BASELINE:
                    lines.append(f"| {corpus} | {n} | {row} | {len(cells)} | {np.mean(ours):.4f} | – | – | – | – |")
                    continue
                lines.append(
                    f"| {corpus} | {n} | {row} | {len(cells)} | {np.mean(ours):.4f} | {difference_cells(diffs)} | "
                    f"{alone} / {theirs} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(parser, "r8", "36,37,38,39,40,41", quick_seed="1,2", first_words=0)
    parser.add_argument("--rows", default=",".join(ROWS), help=f"among {', '.join(ROWS)}")
    parser.add_argument(
        "--scored",
        default="dev",
        choices=("dev", "test"),
        help="the training part's unlabelled rest (dev) or the built-in corpus's test split (test)",
    )
    parser.add_argument(
        "--output-scales",
        default="0.125,0.25,0.5,1,2",
        help="the row gp-output-scale's multipliers of the fitted output scale",
    )
    parser.add_argument(
        "--laplace-nodes",
        default="1024,4096",
        help="the row gp-laplace-many-draws' other node counts of the expected softmax (besides MANY_DRAWS)",
    )
    args = parser.parse_args()
    args.laplace_nodes = [int(c) for c in args.laplace_nodes.split(",") if c]
    if args.quick and args.scored == "test":
        parser.error("--quick reads a toy corpus of training texts alone: --scored dev")
    if args.first_words and args.scored == "test":
        parser.error("--first-words cuts the training part's texts: --scored dev")
    draw_seeds(args)
    args.output_scales = [float(c) for c in args.output_scales.split(",")]
    if args.quick:
        args.rows = (
            "gp,gp-latent-mean,gp-logreg-features,gp-output-scale,gp-kernel-logreg,gp-many-draws,gp-laplace,"
            "gp-laplace-many-draws"
        )
    unknown = sorted(set(args.rows.split(",")) - set(ROWS))
    if unknown:
        parser.error(f"--rows: unknown {', '.join(unknown)}; choose among {', '.join(ROWS)}")

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    records = draws(args)
    print(f"\nIn-scope accuracy of {args.scored} documents against {BASELINE}'s on the same draws\n")
    print(table(records))


if __name__ == "__main__":
    main()
