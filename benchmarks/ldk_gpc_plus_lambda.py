"""Why ``ldk-gpc-plus`` trails the linear SVM (results/README.md, "The LDK that contains the bag
of words"): the identity weight lambda that the marginal likelihood chooses, and the accuracy
with lambda frozen, on one r8 cell of the classification study.

Setting: r8, split 0 at 100 training documents (``--quick``: 30), the study's 1% cut and the
``-plus`` kernel (GloVe-tied q = 16, linear embedding, idf, cosine), rho 10 and alpha_eps 0.01
(the dev-chosen values of that cell). Prints, for the study's 50 L-BFGS iterations and for a
fit run to convergence, lambda at the end and the value where both parts would weigh alike;
then accuracy and log loss with lambda frozen at balanced x {1, 30, 1e6} (1e6: the tf-idf
kernel), and the linear SVM's accuracy on the same cell. One thread.

    python benchmarks/ldk_gpc_plus_lambda.py [--quick]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 documents, few iterations (for the tests)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")

    from lvgp.baselines.text_classifiers import BowClassifier
    from lvgp.experiments.classification import PLUS_KERNEL, ClassificationStudy, prepare_cell
    from lvgp.kernels.random_features import balanced_identity_weight
    from lvgp.models.gpc import LDKGPClassifier

    size = 30 if args.quick else 100
    study = ClassificationStudy(dataset="r8", train_sizes=(size,), splits=3, min_df_fraction=0.01)
    x_train, y_train, x_test, y_test, _ = prepare_cell(study, 0, size)
    y_test = np.asarray(y_test)
    options = dict(PLUS_KERNEL, word_embeddings=study.embeddings, rho=10.0, alpha_epsilon=0.01, random_state=0)

    def scores(model) -> tuple[float, float]:
        proba = model.predict_proba(x_test)
        known = np.isin(y_test, model.classes_)
        p = proba[np.flatnonzero(known), np.searchsorted(model.classes_, y_test[known])]
        return float((model.predict(x_test) == y_test).mean()), float(-np.mean(np.log(np.maximum(p, 1e-300))))

    def identity_kernel(model):
        return next(m for m in model.model_.modules() if getattr(m, "identity_weight", None) is not None)

    print("| L-BFGS budget | iterations | lambda at the end | balanced lambda at the end | accuracy | log loss |")
    print("|---|---|---|---|---|---|")
    for budget in (5, 20) if args.quick else (50, 1000):
        model = LDKGPClassifier(**options, identity_weight="balanced", max_iter=budget).fit(x_train, y_train)
        kernel = identity_kernel(model)
        balanced = balanced_identity_weight(kernel, model.encoder_.transform(x_train))
        accuracy, loss = scores(model)
        print(
            f"| {budget} | {model.n_iter_} | {float(kernel.identity_weight.mean()):.3g} | {balanced:.4g} | "
            f"{accuracy:.3f} | {loss:.3f} |"
        )

    class FrozenLambda(LDKGPClassifier):
        """lambda fixed at ``factor`` x its balanced start (not fitted)."""

        factor = 1.0

        def _kernel(self, seed, x):
            kernel = super()._kernel(seed, x)
            with torch.no_grad():
                kernel.identity_weight = float(kernel.identity_weight.mean()) * self.factor
            kernel.raw_identity_weight.requires_grad_(False)
            return kernel

    print("\n| lambda frozen at | accuracy | log loss |\n|---|---|---|")
    for factor in (1.0, 30.0, 1e6):
        FrozenLambda.factor = factor
        model = FrozenLambda(**options, identity_weight="balanced", max_iter=5 if args.quick else 50)
        accuracy, loss = scores(model.fit(x_train, y_train))
        print(f"| balanced x {factor:g} | {accuracy:.3f} | {loss:.3f} |")
    svm = BowClassifier(model="svm", random_state=0).fit(x_train, y_train)
    print(f"\nlinear SVM (BoW) accuracy on the same cell: {float((svm.predict(x_test) == y_test).mean()):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
