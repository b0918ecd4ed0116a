"""The Laplace inference of the GP classifier against the Dirichlet one (issue 56): ``ldk-gpc-plus`` as
the classification study builds it (its kernel, shared class hyper-parameters, L-BFGS), with
``inference="dirichlet"`` and its temperature (the study's method) and with ``inference="laplace"``
(``--gpc-inference laplace``), in one run on the same documents.

Scored on dev documents only (``ldk_plus_design.dev_documents``: 2,000 documents of each corpus's
training part not drawn for the labelled sample): accuracy, log loss, expected calibration error
(15 bins), the fit's seconds and L-BFGS iterations, and the Laplace fit's seconds per L-BFGS iteration of
its objective (one thread). r8 and 20ng, the thesis's 1% cut, GloVe 6B 50d.

    python benchmarks/laplace_classifier.py [--quick] [--datasets r8,20ng] [--sizes 200,500] [--samples 1]
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
    args = parser.parse_args(argv)
    from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins

    datasets, sizes, samples, n_dev = dev_grid(args)
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
                acc, loss, ece = np.mean(scores, axis=0)
                evaluation = f"{np.mean(per_evaluation):.2f}" if per_evaluation else "-"
                print(
                    f"| {dataset} | {size} | {inference} | {acc:.3f} | {loss:.3f} | {ece:.3f} | {np.mean(seconds):.1f} "
                    f"| {np.mean(iterations):.0f} | {evaluation} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
