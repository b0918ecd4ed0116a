"""Where does the latent SMM lose to the linear SVM? Its dev-chosen setting, changed one thing
at a time, against the SVMs that its identity word kernel reduces to (20ng; r8 with
``--dataset r8``).

20ng under the thesis's 1% word cut, the classification study's samples at 200 and 500 training
documents, the full test split. For each sample, the latent SMM is refit at the setting its dev
part chose in ``results/classification/20ng-thesis`` (``r8-thesis``) (q, rho / gamma, C; 50 L-BFGS iterations),
then with one change:

* ``init_scale=1``: the initial word vectors at unit scale instead of the prior's
  (rho/gamma)^(-1/2), which at a weak prior spreads the words so far apart that the RBF word
  kernel is the identity and stays there (its gradient vanishes);
* ``level2="cosine"``: the normalized linear level-2 kernel;
* ``word_weighting="idf"``: idf-weighted mean embeddings;
* both.

With the identity word kernel, a document's mean embedding is its L1-normalized term-frequency
vector, so the SVMs on term frequencies (L1 / L2 normalized, raw or idf-weighted, linear kernel,
the same C) are the limits of these machines. The study's linear SVM (tf-idf, C by
cross-validation) is the reference. Also printed: the learned word vectors' root mean square
against the prior's standard deviation, and the mean off-diagonal entry of the word Gram (0: the
identity kernel). Fixed settings, no selection: a diagnostic recorded in benchmarks/README.md.

One thread.

    python benchmarks/latent_smm_word_kernel.py [--dataset r8] [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from lvgp import LBFGS
from lvgp.experiments.executors import limit_threads

RESULTS = Path(__file__).resolve().parent.parent / "results" / "classification"


def chosen_settings(dataset: str) -> dict[tuple[int, int], dict]:
    """(train size, sample) -> the latent SMM's dev-chosen setting in canonical form (gamma = 1),
    from the committed study under the thesis's protocol."""
    records = json.loads((RESULTS / f"{dataset}-thesis" / "results.json").read_text())
    return {(r["train_size"], r["split"]): r["fitted"] for r in records if r["method"] == "latent-smm"}


def word_kernel_summary(smm) -> tuple[float, float]:
    """(root mean square of the learned vectors, mean off-diagonal entry of the word Gram)."""
    with torch.no_grad():
        latent = smm.kernel_.latent
        gram = smm.kernel_.embedding_gram(latent, latent)
        n = gram.shape[-1]
        off = (gram.sum() - gram.diagonal().sum()) / (n * (n - 1))
        return float(latent.pow(2).mean().sqrt()), float(off)


def frequency_svms(encoder, x_train, y_train, x_test, C: float) -> dict[str, np.ndarray]:
    """Predictions of linear-kernel SVMs on term-frequency vectors: the identity word kernel's limits."""
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.preprocessing import normalize
    from sklearn.svm import SVC

    from lvgp.bow.padded import padded_to_counts

    counts = [padded_to_counts(encoder.transform(x), encoder.num_words) for x in (x_train, x_test)]
    idf = TfidfTransformer(norm=None).fit(counts[0])
    out = {}
    for name, (a, b), norm in [
        ("SVM on tf, L1 (= uniform, linear, identity word kernel)", counts, "l1"),
        ("SVM on tf, L2 (= uniform, cosine, identity)", counts, "l2"),
        ("SVM on tf-idf, L2 (= idf, cosine, identity)", [idf.transform(c) for c in counts], "l2"),
    ]:
        a, b = normalize(a, norm=norm), normalize(b, norm=norm)
        svm = SVC(C=C, kernel="precomputed").fit((a @ a.T).toarray(), y_train)
        out[name] = svm.predict((b @ a.T).toarray())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="one sample at 200, 300 random test documents, 3 iterations, two variants"
    )
    parser.add_argument("--dataset", default="20ng", choices=("20ng", "r8"))
    args = parser.parse_args()
    limit_threads(1)
    warnings.simplefilter("ignore")  # the fixed L-BFGS budget warns by design

    from lvgp.baselines.text_classifiers import BowClassifier
    from lvgp.experiments.classification import ClassificationStudy, prepare_cell
    from lvgp.kernels import LDKSpec
    from lvgp.models.latent_smm import LatentSMMClassifier

    sizes, samples = ((200,), 1) if args.quick else ((200, 500), 3)
    max_iter = 3 if args.quick else 50
    settings = chosen_settings(args.dataset)
    study = ClassificationStudy(
        dataset=args.dataset, min_df_fraction=0.01, splits=3, train_sizes=sizes, test_size=300 if args.quick else None
    )
    print(f"{args.dataset}, 1% cut, {samples} sample(s) per size; test accuracy (mean over samples, then per sample)")
    print(
        "| train size | classifier | test accuracy | per sample | vector rms / prior std | mean word similarity | s |"
    )
    print("|---|---|---|---|---|---|---|")
    for size in sizes:
        rows: dict[str, list] = {}
        for s in range(samples):
            x_train, y_train, x_test, y_test, _ = prepare_cell(study, s, size)
            fitted = settings[(size, s)]
            variants = {
                "latent SMM, dev-chosen setting": {},
                "  + init_scale = 1": {"init_scale": 1.0},
                "  + cosine level-2": {"level2": "cosine"},
                "  + idf weights": {"word_weighting": "idf"},
                "  + cosine level-2 and idf weights": {"level2": "cosine", "word_weighting": "idf"},
            }
            if args.quick:  # a smoke run: the dev-chosen setting and one change
                variants = dict(list(variants.items())[:2])
            for name, change in variants.items():
                start = time.perf_counter()
                setting = {**fitted, **change}
                spec = {k: v for k, v in setting.items() if k != "C"}
                smm = LatentSMMClassifier(  # the study's seed
                    LDKSpec(**spec), C=setting["C"], optimizer=LBFGS(max_iter=max_iter), random_state=s
                )
                smm.fit(x_train, y_train)
                accuracy = float(np.mean(smm.predict(x_test) == y_test))
                rms, similarity = word_kernel_summary(smm)
                detail = (rms / fitted["rho"] ** -0.5, similarity)
                rows.setdefault(name, []).append((accuracy, detail, time.perf_counter() - start))
            start = time.perf_counter()
            limits = frequency_svms(smm.encoder_, x_train, y_train, x_test, fitted["C"])
            seconds = (time.perf_counter() - start) / len(limits)
            for name, predicted in limits.items():
                rows.setdefault(name, []).append((float(np.mean(predicted == y_test)), None, seconds))
            start = time.perf_counter()
            predicted = BowClassifier("svm", random_state=s).fit(x_train, y_train).predict(x_test)
            rows.setdefault("the study's linear SVM (tf-idf, C by CV)", []).append(
                (float(np.mean(predicted == y_test)), None, time.perf_counter() - start)
            )
        for name, results in rows.items():
            accuracy = [r[0] for r in results]
            per = " / ".join(f"{a:.3f}" for a in accuracy)
            details = [r[1] for r in results if r[1] is not None]
            rms = " / ".join(f"{d[0]:.2f}" for d in details) or "-"
            similarity = " / ".join(f"{d[1]:.1e}" for d in details) or "-"
            seconds = sum(r[2] for r in results)
            print(f"| {size} | {name} | {np.mean(accuracy):.3f} | {per} | {rms} | {similarity} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
