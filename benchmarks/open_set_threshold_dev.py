r"""An out-of-scope threshold without held-out texts: leave-one-out and cross-validated scores, on dev documents (issue 57).

A user who deploys ``score_samples`` needs a threshold: texts scored below it are flagged as out of scope. The
studies report FPR95, the share of out-of-scope texts accepted at the threshold that keeps 95% of the in-scope
test texts -- a threshold read off the very texts it is scored on. A user has in-scope texts held out from
training, or has not. Without them, :class:`lvgp.OpenSetClassifier` takes the split-conformal quantile
(:func:`lvgp.base.novelty.conformal_threshold`) of in-scope scores of texts the model did not fit:

* ``leave-one-out``: the study GP's own ``novelty_threshold()`` -- each labelled text scored, by the GP's
  ``novelty_score`` (the lifted energy), under the GP of the other labelled texts, from the fit's one
  factorization (no refit);
* ``cross-validation``: each labelled text scored by the GP fitted on the other folds (5 stratified folds);
* ``in-sample``: the training texts' own scores, the optimistic threshold the docs warn about;
* ``leave-one-out-as-new``: the conformal quantile of the same leave-one-out scores, each labelled text with its
  words that no other labelled text has dropped, as a new text's unseen words are (``open_set_calibration_dev.py``'s
  :func:`loo_as_new_latents`; the reference's class energies kept): how much of the threshold's caution is the
  words of a text's own in its tf-idf norm;
* ``leave-one-out-class``: ``class_conditional=True``'s thresholds, one per predicted class, from the same
  leave-one-out scores grouped by the class each text's leave-one-out probabilities put first (a class with
  fewer than 19 such texts takes the pooled one: at 10 texts a class, most).

Beside them, the same for the study's logistic regression on ``[tf-idf | encoder]`` (``tfidf-encoder-logreg``,
the entropy), whose only way is ``cross-validation`` (``logreg-cross-validation``, and its class-conditional
thresholds ``logreg-cross-validation-class``). ``oracle`` and
``logreg-oracle``: the 5% quantile of the in-scope dev documents' own scores (the studies' FPR95).

The open-set study's draws (unknown classes, N labelled texts a known class) on a corpus's training part alone,
as ``open_set_dev.py`` writes it (texts cut to their first ``--first-words`` words where asked), scored on dev
documents of the training part's unlabelled rest. Each threshold's row, draw by draw: the share of in-scope dev
documents kept (the target: 0.95) and of out-of-scope ones accepted (``fpr``), and the in-scope share kept within
each predicted class (of those with at least ``CLASS_MIN`` in-scope dev documents predicted as them): its mean
distance from 0.95 (``class_gap``) and its least (``worst_class``). Then the rows' means per corpus and size.
``benchmarks/README.md``, "A threshold without held-out texts" and "One threshold per predicted class", reads it.

    python benchmarks/open_set_threshold_dev.py                       # r8, 20ng, r52, seed 94
    python benchmarks/open_set_threshold_dev.py --datasets 20ng,r52 --first-words 12
    python benchmarks/open_set_threshold_dev.py --quick               # a toy corpus, a tiny random encoder
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from open_set_calibration_dev import loo_as_new_latents  # (the sibling scripts: benchmarks/ is on the path)
from open_set_dev import (
    dev_study,
    draw_arguments,
    draw_runs,
    draw_seeds,
    scratch_folder,
)  # (the sibling script: benchmarks/ is on the path)

from lvgp.base.novelty import class_conditional_thresholds, conformal_threshold
from lvgp.models.open_set import reject_threshold

GP = "gpc-bow-encoder-rbf"
LOGREG = "tfidf-encoder-logreg"
#: the in-scope share a threshold should keep
RECALL = 0.95
#: the folds of the cross-validated thresholds
FOLDS = 5
#: the fewest in-scope dev documents predicted as a class for its own share kept to count
CLASS_MIN = 20
ROWS = (
    "leave-one-out",
    "leave-one-out-as-new",
    "leave-one-out-class",
    "cross-validation",
    "in-sample",
    "oracle",
    "logreg-cross-validation",
    "logreg-cross-validation-class",
    "logreg-oracle",
)


def as_new_threshold(gp, feature_dim: int, drop_unshared: bool = True) -> float:
    """The conformal quantile of the GP's lifted energies of its labelled texts left out *as new texts*: each
    predicted by the GP of the others with its words of no other labelled text dropped
    (:func:`open_set_calibration_dev.loo_as_new_latents`), its probabilities the expected softmax tempered as
    ``predict_proba``'s, the reference's class energies and mean energy those of ``novelty_reference()``
    (``drop_unshared=False``: no word dropped, the classifier's own ``novelty_threshold``)."""
    from lvgp.base.novelty import lifted_energy_novelty
    from lvgp.models.gpc.models import expected_softmax

    if gp.novelty_score != "lifted-energy":
        raise ValueError(f"as_new_threshold reads the lifted energy; the GP scores by {gp.novelty_score!r}")
    mean, var = loo_as_new_latents(gp, feature_dim, drop_unshared)
    proba = gp._temper(expected_softmax(mean, var, gp.predict_samples, gp._class_seeds()).cpu().numpy())
    reference = gp.novelty_reference()
    overall = -float(np.mean(reference.energy))
    scores = lifted_energy_novelty(mean.cpu().numpy(), proba, reference.class_energy, overall)
    return conformal_threshold(scores, RECALL)


def class_shares(accepted: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    """The in-scope dev documents' share kept within each predicted class with at least ``CLASS_MIN`` of them:
    the mean of |share - RECALL| over those classes and the least share (NaN where no class has enough)."""
    shares = [accepted[predicted == c].mean() for c in np.unique(predicted) if (predicted == c).sum() >= CLASS_MIN]
    if not shares:
        return float("nan"), float("nan")
    return float(np.mean(np.abs(np.asarray(shares) - RECALL))), float(min(shares))


def class_thresholds(reference, classes: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Each dev document's threshold under ``class_conditional=True``: its predicted class's, from a
    :class:`lvgp.models.open_set.RejectReference` with the reference texts' predicted classes."""
    index = {c: i for i, c in enumerate(classes.tolist())}
    codes = np.asarray([index[c] for c in reference.predicted.tolist()])
    per_class, _ = class_conditional_thresholds(reference.scores, codes, len(classes), RECALL)
    return per_class[np.asarray([index[c] for c in predicted.tolist()])]


def thresholds(gp, x_train, inside_scores: np.ndarray) -> dict[str, float]:
    """The GP's thresholds on its ``score_samples``' scale (higher, more typical): its ``novelty_threshold`` (the
    conformal quantile of the labelled texts' leave-one-out scores), the conformal quantile of their own
    in-sample scores, and the 5% quantile of the in-scope dev documents' (``oracle``)."""
    return {
        "leave-one-out": float(gp.novelty_threshold(RECALL)),
        "in-sample": conformal_threshold(gp.score_samples(x_train), RECALL),
        "oracle": float(np.quantile(inside_scores, 1.0 - RECALL, method="lower")),
    }


def open_set_classifier(estimator, seed: int):
    """``estimator`` with a reject option whose threshold is cross-validated (``FOLDS`` folds)."""
    from lvgp import OpenSetClassifier

    return OpenSetClassifier(estimator, keep=RECALL, threshold="cross-validation", cv=FOLDS, random_state=seed)


def draws(args) -> list[dict]:
    """One record per (corpus, seed, split, size, threshold)."""
    from lvgp.encoders import resolve_encoder

    with scratch_folder(args.out, "open-set-threshold-") as root:
        runs = draw_runs(root, args, args.dev_size)
        records = []
        for run in runs:
            corpus, sizes = run[0], run[3]
            for seed in args.seeds:
                study = dev_study(run, [GP, LOGREG], seed, args.quick)
                feature_dim = resolve_encoder(study.encoder, study.device).dim
                for split in range(run[4]):
                    data = study.split(split)
                    out = np.asarray(data.out_of_scope)
                    for n in sizes:
                        x, y = data.training(n)
                        found = {}
                        for method in (GP, LOGREG):
                            cell = {"method": method, "split": split, "params": {"per_class": n}}
                            start = time.perf_counter()
                            model = open_set_classifier(study.estimator(cell), seed).fit(x, y)
                            seconds = time.perf_counter() - start
                            scores, predicted = model._scores_and_labels(list(data.test_texts))
                            if method == GP:
                                rows = thresholds(model.classifier_, x, scores[~out])
                                rows["cross-validation"] = model.threshold_
                                loo = reject_threshold(
                                    model.classifier_, x, y, RECALL, "leave-one-out", return_predictions=True
                                )
                                rows["leave-one-out-class"] = class_thresholds(loo, model.classes_, predicted)
                                rows["leave-one-out-as-new"] = as_new_threshold(model.classifier_, feature_dim)
                            else:
                                oracle = float(np.quantile(scores[~out], 1.0 - RECALL, method="lower"))
                                folds = reject_threshold(
                                    model.classifier_,
                                    x,
                                    y,
                                    RECALL,
                                    "cross-validation",
                                    FOLDS,
                                    seed,
                                    return_predictions=True,
                                )
                                rows = {
                                    "logreg-cross-validation": model.threshold_,
                                    "logreg-cross-validation-class": class_thresholds(folds, model.classes_, predicted),
                                    "logreg-oracle": oracle,
                                }
                            for row, threshold in rows.items():
                                found[row] = (threshold, scores, predicted, seconds)
                        for row in ROWS:
                            threshold, scores, predicted, seconds = found[row]
                            accepted = scores >= threshold
                            gap, worst = class_shares(accepted[~out], np.asarray(predicted)[~out])
                            record = {
                                "corpus": corpus,
                                "seed": seed,
                                "split": split,
                                "per_class": n,
                                "row": row,
                                "threshold": float(np.mean(threshold)),
                                "kept": float(np.mean(accepted[~out])),
                                "fpr": float(np.mean(accepted[out])),
                                "class_gap": gap,
                                "worst_class": worst,
                                "fit_seconds": seconds,
                            }
                            records.append(record)
                            print(
                                f"| {corpus} | {n} | {seed}/{split} | {row} | {record['threshold']:.3f} | "
                                f"{record['kept']:.3f} | {record['fpr']:.3f} | {gap:.3f} | {worst:.3f} |",
                                flush=True,
                            )
        return records


def table(records: list[dict]) -> str:
    """Each row's means over the draws, per corpus and size: the in-scope share kept (and the draws' range), the
    out-of-scope share accepted."""
    lines = [
        "| corpus | labelled a class | threshold | draws | in-scope kept (range) | mean \\|kept - 0.95\\| "
        "| out-of-scope accepted | predicted classes' mean \\|kept - 0.95\\| | least class's kept |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        for n in sorted({r["per_class"] for r in records if r["corpus"] == corpus}):
            for row in ROWS:
                cell = [r for r in records if (r["corpus"], r["per_class"], r["row"]) == (corpus, n, row)]
                if not cell:
                    continue
                kept = [r["kept"] for r in cell]
                lines.append(
                    f"| {corpus} | {n} | {row} | {len(cell)} | {np.mean(kept):.3f} ({min(kept):.3f}-{max(kept):.3f}) "
                    f"| {np.mean(np.abs(np.asarray(kept) - RECALL)):.3f} | {np.mean([r['fpr'] for r in cell]):.3f} "
                    f"| {np.nanmean([r['class_gap'] for r in cell]):.3f} "
                    f"| {np.nanmean([r['worst_class'] for r in cell]):.3f} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(parser, "r8,20ng,r52", "94", first_words=0)
    parser.add_argument("--dev-size", type=int, default=2000, help="dev documents a split (0: every one)")
    args = parser.parse_args()
    draw_seeds(args)

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    print(
        "| corpus | a class | seed/split | threshold | value (mean) | in-scope kept | out-of-scope accepted "
        "| classes' gap | least class |\n|---|---|---|---|---|---|---|---|---|"
    )
    records = draws(args)
    print(f"\nEach threshold's means over the draws (dev documents; the target keeps {RECALL:.2f} of the in-scope)\n")
    print(table(records))
    pooled = (
        ("leave-one-out", "leave-one-out-class"),
        ("logreg-cross-validation", "logreg-cross-validation-class"),
        ("leave-one-out", "leave-one-out-as-new"),
    )
    for one, per_class in pooled:
        a = [r for r in records if r["row"] == one]
        b = [r for r in records if r["row"] == per_class]
        print(
            f"\n{per_class} minus {one}, all {len(a)} draws: mean |kept - 0.95| "
            f"{np.mean([abs(r['kept'] - RECALL) for r in b]) - np.mean([abs(r['kept'] - RECALL) for r in a]):+.4f}, "
            f"out of scope accepted {np.mean([r['fpr'] for r in b]) - np.mean([r['fpr'] for r in a]):+.4f}, "
            f"classes' gap {np.nanmean([r['class_gap'] for r in b]) - np.nanmean([r['class_gap'] for r in a]):+.4f}, "
            f"least class {np.nanmean([r['worst_class'] for r in b]) - np.nanmean([r['worst_class'] for r in a]):+.4f}"
        )


if __name__ == "__main__":
    main()
