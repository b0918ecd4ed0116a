"""Calibration of the GP classifier with the LDK that contains the bag of words (issue 39): ``ldk-gpc-plus``
as the classification study builds it, against the same with its probabilities tempered by a
temperature fitted on the closed-form leave-one-out predictions of its training documents
(``calibration="temperature"``).

Scored on dev documents only (2,000 documents of each corpus's training part not drawn for the
labelled sample; ``ldk_plus_design.dev_documents``): accuracy, log loss and the expected calibration
error (15 equal-width confidence bins, the samples pooled). r8 and 20ng, the thesis's 1% cut, GloVe
6B 50d, one thread.

    python benchmarks/gpc_calibration.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200,500] [--samples 3]
        [--variational]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from lvgp import MiniBatch

sys.path.insert(0, str(Path(__file__).resolve().parent))


def classifier(quick: bool):
    """``ldk-gpc-plus`` as the classification study builds it, with ``calibration="temperature"``: one fit
    gives both rows (the probabilities before and after the temperature)."""
    from lvgp.experiments.classification import ClassificationStudy, _ldk_gpc_plus

    study = ClassificationStudy(dataset="r8", min_df_fraction=0.01, ldk_max_iter=5 if quick else 50)
    model = _ldk_gpc_plus(study, {"split": 0}, None)
    model.set_params(random_state=0, calibration="temperature")
    if quick:
        model.set_params(optimizer__max_iter=5)
    return model


def untempered(model, x):
    """The classifier's probabilities without its temperature."""
    temperature, model.temperature_ = model.temperature_, 1.0
    try:
        return model.predict_proba(x)
    finally:
        model.temperature_ = temperature


ROWS = ("ldk-gpc-plus (before)", "+ temperature on leave-one-out predictions")
VARIATIONAL = "the same kernel, variational softmax (inference='variational')"


def variational(quick: bool):
    """The kernel of ``ldk-gpc-plus`` under the variational softmax likelihood (SVGP; the inducing
    documents are all training documents up to 500)."""
    model = classifier(quick)
    model.set_params(
        inference="variational",
        calibration=None,
        num_inducing=500,
        optimizer=MiniBatch(max_epochs=5 if quick else 300),
    )
    return model


def main(argv=None) -> int:
    from ldk_plus_design import dev_documents, dev_grid, dev_parser

    parser = dev_parser(__doc__, "50,100,200,500", 3, "r8 at 30 documents, one sample, 200 dev documents")
    parser.add_argument(
        "--variational",
        action="store_true",
        help="also the variational softmax (inference='variational') on the kernel",
    )
    args = parser.parse_args(argv)
    from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins

    datasets, sizes, samples, n_dev = dev_grid(args)
    rows = ROWS + ((VARIATIONAL,) if args.variational else ())
    for dataset in datasets:
        print(f"\n{dataset}: dev accuracy / log loss / ECE (mean over {samples} samples; ECE of the pooled samples)")
        cells: dict[str, list[str]] = {row: [] for row in rows}
        seconds, temperatures = [], []
        for size in sizes:
            scores: dict[str, list] = {row: [] for row in rows}
            bins: dict[str, dict | None] = {row: None for row in rows}
            for split in range(samples):
                x_train, y_train, x_dev, y_dev = dev_documents(dataset, split, size, n_dev)
                model = classifier(args.quick)
                start = time.perf_counter()
                model.fit(x_train, y_train)
                seconds.append(time.perf_counter() - start)
                temperatures.append(model.temperature_)
                probas = [untempered(model, x_dev), model.predict_proba(x_dev)]
                if args.variational:
                    probas.append(variational(args.quick).fit(x_train, y_train).predict_proba(x_dev))
                for row, proba in zip(rows, probas):
                    accuracy = float(np.mean(model.classes_[proba.argmax(1)] == y_dev))
                    scores[row].append((accuracy, log_loss(proba, model.classes_, y_dev)))
                    b = reliability_bins(proba, model.classes_, y_dev)
                    bins[row] = b if bins[row] is None else {k: np.add(bins[row][k], b[k]).tolist() for k in b}
            for row in rows:
                acc, loss = np.mean(scores[row], axis=0)
                cells[row].append(f"{acc:.3f} / {loss:.3f} / {expected_calibration_error(bins[row]):.3f}")
            print(f"  {size} documents: temperatures {np.round(temperatures[-samples:], 2).tolist()}", flush=True)
        print("| setting | " + " | ".join(f"{n} documents" for n in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for row in rows:
            print(f"| {row} | " + " | ".join(cells[row]) + " |")
        print(f"(s per fit, temperature included: {np.mean(seconds):.1f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
