"""The Laplace inference of the GP classifier against the Dirichlet one (issue 56): ``ldk-gpc-plus`` as
the classification study builds it (its kernel, shared class hyper-parameters, L-BFGS), with
``inference="dirichlet"`` and its temperature (the study's method) and with ``inference="laplace"``
(``--gpc-inference laplace``), in one run on the same documents.

Scored on dev documents only (``ldk_plus_design.dev_documents``: 2,000 documents of each corpus's
training part not drawn for the labelled sample): accuracy, log loss, expected calibration error
(15 bins), the fit's seconds and L-BFGS iterations, and the Laplace fit's seconds per L-BFGS iteration of
its objective (one thread). r8 and 20ng, the thesis's 1% cut, GloVe 6B 50d.

    python benchmarks/laplace_classifier.py [--quick] [--datasets r8,20ng] [--sizes 200,500] [--samples 1]
        [--figures FOLDER]

``--figures`` also draws, per corpus, the reliability diagram of the Dirichlet inference's probabilities
before and after its temperature, the Laplace inference's, and logistic regression's on sublinear tf-idf
of the same documents (C by stratified CV on the log loss).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def classifier(inference: str, quick: bool):
    """``ldk-gpc-plus`` as the study builds it, with ``--gpc-inference inference``."""
    from lvgp.experiments.classification import ClassificationStudy, _ldk_gpc_plus

    study = ClassificationStudy(dataset="r8", min_df_fraction=0.01, gpc_inference=inference)
    model = _ldk_gpc_plus(study, {"split": 0}, None).set_params(random_state=0)
    if quick:
        model.set_params(optimizer__max_iter=5)
    return model


def main(argv=None) -> int:
    from ldk_plus_design import dev_documents, dev_grid, dev_parser

    parser = dev_parser(__doc__, "200,500", 1, "r8 at 30 documents, 200 dev documents, 5 iterations")
    parser.add_argument(
        "--figures",
        default=None,
        help="a folder: one reliability diagram a corpus (Dirichlet, Dirichlet + temperature, Laplace, logistic "
        "regression on tf-idf), the dev documents of every sample pooled",
    )
    args = parser.parse_args(argv)
    from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins

    datasets, sizes, samples, n_dev = dev_grid(args)
    pooled: dict[tuple[str, int, str], list[dict]] = {}  # (corpus, size, variant) -> reliability bins
    print(
        "| corpus | documents | inference | dev accuracy | log loss | ECE | fit s | L-BFGS iterations | s an iteration |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for dataset in datasets:
        for size in sizes:
            for inference in ("dirichlet", "laplace"):
                scores, seconds, iterations, per_evaluation = [], [], [], []
                for split in range(samples):
                    x_train, y_train, x_dev, y_dev = dev_documents(dataset, split, size, n_dev)
                    model = classifier(inference, args.quick)
                    start = time.perf_counter()
                    model.fit(x_train, y_train)
                    seconds.append(time.perf_counter() - start)
                    iterations.append(model.n_iter_)
                    if inference == "laplace":  # per L-BFGS iteration (its line search may evaluate more than once)
                        per_evaluation.append(seconds[-1] / max(1, len(model.loss_curve_)))
                    proba = model.predict_proba(x_dev)
                    accuracy = float(np.mean(model.classes_[proba.argmax(1)] == y_dev))
                    ece = expected_calibration_error(reliability_bins(proba, model.classes_, y_dev))
                    scores.append((accuracy, log_loss(proba, model.classes_, y_dev), ece))
                    if args.figures:
                        variants = {"Laplace": proba} if inference == "laplace" else {"Dirichlet + temperature": proba}
                        if inference == "dirichlet":  # the same fit's probabilities before tempering
                            tempered, model.temperature_ = model.temperature_, 1.0
                            variants["Dirichlet"] = model.predict_proba(x_dev)
                            model.temperature_ = tempered
                            variants["logistic regression (tf-idf)"] = logistic_regression(x_train, y_train, x_dev)
                        for name, p in variants.items():
                            classes = model.classes_
                            pooled.setdefault((dataset, size, name), []).append(reliability_bins(p, classes, y_dev))
                acc, loss, ece = np.mean(scores, axis=0)
                evaluation = f"{np.mean(per_evaluation):.2f}" if per_evaluation else "-"
                print(
                    f"| {dataset} | {size} | {inference} | {acc:.3f} | {loss:.3f} | {ece:.3f} | {np.mean(seconds):.1f} "
                    f"| {np.mean(iterations):.0f} | {evaluation} |",
                    flush=True,
                )
    if args.figures:
        for dataset in datasets:
            reliability_figure(pooled, dataset, sizes, Path(args.figures) / f"{dataset}_reliability.png")
    return 0


def logistic_regression(x_train, y_train, x_dev) -> np.ndarray:
    """Probabilities of logistic regression on sublinear tf-idf as practitioners run it: C by stratified
    3-fold CV on the log loss (fewer folds where a class has fewer documents)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.pipeline import make_pipeline

    folds = int(max(2, min(3, np.bincount(np.unique(y_train, return_inverse=True)[1]).min())))
    model = make_pipeline(
        TfidfVectorizer(sublinear_tf=True),
        LogisticRegressionCV(Cs=10, cv=folds, scoring="neg_log_loss", max_iter=2000),
    ).fit(x_train, y_train)
    return model.predict_proba(x_dev)


def reliability_figure(pooled: dict, dataset: str, sizes: list[int], path: Path) -> None:
    """One panel a training size: accuracy against confidence in the equal-width bins of the pooled samples."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lvgp.base.metrics import reliability_curve

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 5.2), squeeze=False)
    styles = {"Dirichlet": "C0o--", "Dirichlet + temperature": "C0s-", "Laplace": "C3^-"}
    styles["logistic regression (tf-idf)"] = "C2D-"
    for ax, size in zip(axes.flat, sizes):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls=":")
        for name, style in styles.items():
            binned = pooled.get((dataset, size, name))
            if not binned:
                continue
            ax.plot(*reliability_curve(binned), style, ms=4, lw=1.2, label=name)
        ax.set(title=f"{size} training documents", xlabel="confidence", ylabel="accuracy", xlim=(0, 1), ylim=(0, 1))
        ax.set_aspect("equal")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(f"{dataset}: reliability on dev documents (ldk-gpc-plus's kernel, samples pooled)", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
