"""Is it the LDK or the GP classifier? The Dirichlet GP classifier on the linear SVM's own
features, against the linear SVM and the GloVe-tied LDK GP classifier.

r8 under the thesis's 1% word cut, the classification study's 3 samples at 50 / 100 / 200
training documents, the full test split. Per size, mean test accuracy of:

* the linear SVM on tf-idf vectors (the study's ``svm``: C chosen by cross-validation);
* the Dirichlet GP classifier (Milios et al., 2018; the inference of ``LDKGPClassifier``) with a
  linear kernel on the same L2-normalized tf-idf vectors: output scales, constant means and
  extra noise per class fitted by L-BFGS on the exact marginal likelihood;
* the GloVe-tied LDK GP classifier at fixed settings (q = 8, rho = 0.1, 50 L-BFGS iterations);

* an SVM on the Gram matrix of that learned LDK (its word vectors fixed; C in 2^-3 ... 2^7 by
  stratified 3-fold cross-validation): is the Dirichlet classifier the LDK's bottleneck?

the GP classifiers each with the Dirichlet pseudo-count alpha_epsilon = 0.01 (Milios et al.'s
default, the library's) and 0.001. Fixed settings, no selection: a diagnostic of where the gap to
the SVM comes from, recorded in benchmarks/README.md; the study's dev-selected numbers are in
results/README.md.

One thread.

    python benchmarks/gpc_features_vs_svm.py [--quick]
"""

from __future__ import annotations

import argparse
import time
import warnings

import gpytorch
import numpy as np
import torch

from lvgp import LBFGS
from lvgp.experiments.executors import limit_threads
from lvgp.kernels import LDKSpec


class _Dot(gpytorch.kernels.Kernel):
    """Inner products of feature vectors (gpytorch's ``LinearKernel`` would switch the batch of
    class GPs to a prediction strategy that fails on a batched ``ScaleKernel``)."""

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params) -> torch.Tensor:
        return (x1 * x2).sum(-1) if diag else x1 @ x2.mT


class _LinearDirichletGP(gpytorch.models.ExactGP):
    """``C`` exact GPs with a scaled linear kernel on dense features (Dirichlet-transformed labels)."""

    def __init__(self, x: torch.Tensor, likelihood: gpytorch.likelihoods.DirichletClassificationLikelihood):
        super().__init__(x, likelihood.transformed_targets, likelihood)
        batch = torch.Size([likelihood.transformed_targets.shape[0]])
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=batch)
        self.covar_module = gpytorch.kernels.ScaleKernel(_Dot(), batch_shape=batch)

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def linear_dirichlet_gpc(x_train, codes, x_test, alpha_epsilon: float, max_iter: int) -> np.ndarray:
    """Predicted class codes of the Dirichlet GP classifier with a linear kernel."""
    from lvgp.base.fitting import minimize
    from lvgp.models.gpc import expected_softmax

    x = torch.as_tensor(x_train, dtype=torch.float64)
    likelihood = gpytorch.likelihoods.DirichletClassificationLikelihood(
        torch.as_tensor(codes), alpha_epsilon=alpha_epsilon, learn_additional_noise=True, dtype=torch.float64
    )
    model = _LinearDirichletGP(x, likelihood)
    model.train()
    likelihood.train()

    def objective() -> torch.Tensor:
        return -likelihood(model(x)).log_prob(likelihood.transformed_targets).sum() / x.shape[0]

    minimize([p for p in model.parameters() if p.requires_grad], objective, max_iter=max_iter)
    model.eval()
    with torch.no_grad():
        f = model(torch.as_tensor(x_test, dtype=torch.float64))
        return expected_softmax(f.mean.mT, f.variance.mT, 256).argmax(-1).numpy()


def svm_on_learned_ldk(ldk, x_train, y_train, x_test, seed: int) -> np.ndarray:
    """Predictions of an SVM on the Gram matrix of a fitted ``LDKGPClassifier``'s LDK."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    from lvgp.base.splits import stratified_folds
    from lvgp.bow.padded import PAD

    kernel = ldk.model_.ldk
    with torch.no_grad():
        train = ldk.encoder_.transform(x_train)
        gram = kernel(train, train).to_dense().numpy()
        with ldk.encoder_.predicting(x_test, kernel.word_vectors) as test:
            known = ~(test == PAD).all(-1)  # documents without a known word get the majority class
            cross = kernel(test[known], train).to_dense().numpy()
    folds = stratified_folds(y_train, 3, seed) or None
    grid = {"C": [2.0**e for e in range(-3, 8, 2)]}
    svm = GridSearchCV(SVC(kernel="precomputed"), grid, cv=folds).fit(gram, y_train)
    classes, counts = np.unique(y_train, return_counts=True)
    predicted = np.full(len(x_test), classes[np.argmax(counts)], dtype=np.asarray(y_train).dtype)
    predicted[known.numpy()] = svm.predict(cross)
    return predicted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one sample, 20 documents (the test suite runs this)")
    args = parser.parse_args()
    limit_threads(1)  # torch and the BLAS pools: scipy's L-BFGS path must not depend on the machine's load
    warnings.simplefilter("ignore")  # the fixed L-BFGS budgets warn by design

    from sklearn.feature_extraction.text import TfidfTransformer

    from lvgp.baselines.text_classifiers import BowClassifier
    from lvgp.bow.vocabulary import Vocabulary
    from lvgp.experiments.classification import ClassificationStudy, prepare_cell
    from lvgp.models.gpc import LDKGPClassifier

    sizes, samples = ((20,), 1) if args.quick else ((50, 100, 200), 3)
    ldk_iter, alphas = (5, (0.01,)) if args.quick else (50, (0.01, 0.001))
    study = ClassificationStudy(dataset="r8", min_df_fraction=0.01, splits=samples, train_sizes=sizes)
    print(f"r8, 1% cut, {samples} sample(s); test accuracy (mean over samples, then per sample)")
    print("| train size | classifier | alpha_epsilon | test accuracy | per sample | seconds |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        cells = [prepare_cell(study, s, size) for s in range(samples)]
        if args.quick:
            cells = [(xtr, ytr, xte[:200], yte[:200], info) for xtr, ytr, xte, yte, info in cells]
        rows: dict[tuple[str, str], list[float]] = {}
        seconds: dict[tuple[str, str], float] = {}

        def record(key: tuple[str, str], predicted, truth, start: float, rows=rows, seconds=seconds) -> None:
            rows.setdefault(key, []).append(float(np.mean(np.asarray(predicted) == np.asarray(truth))))
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start

        for s, (xtr, ytr, xte, yte, _) in enumerate(cells):
            start = time.perf_counter()
            record(
                ("linear SVM (tf-idf)", "-"),
                BowClassifier("svm", random_state=s).fit(xtr, ytr).predict(xte),
                yte,
                start,
            )
            vocab = Vocabulary().fit(xtr)
            tfidf = TfidfTransformer().fit(vocab.counts(xtr))
            ftr, fte = (tfidf.transform(vocab.counts(t)).toarray() for t in (xtr, xte))
            classes, codes = np.unique(ytr, return_inverse=True)
            for alpha in alphas:
                start = time.perf_counter()
                predicted = classes[linear_dirichlet_gpc(ftr, codes, fte, alpha, max_iter=200)]
                record(("Dirichlet GPC, linear kernel on tf-idf", f"{alpha:g}"), predicted, yte, start)
                start = time.perf_counter()
                ldk = LDKGPClassifier(
                    LDKSpec(latent_dim=8, rho=0.1, word_embeddings="glove-6b-50d"),
                    alpha_epsilon=alpha,
                    optimizer=LBFGS(max_iter=ldk_iter),
                    random_state=s,
                ).fit(xtr, ytr)
                record(("Dirichlet GPC, LDK (GloVe-tied, q = 8)", f"{alpha:g}"), ldk.predict(xte), yte, start)
                start = time.perf_counter()
                record(
                    ("SVM on that learned LDK's Gram", f"{alpha:g}"),
                    svm_on_learned_ldk(ldk, xtr, ytr, xte, s),
                    yte,
                    start,
                )
        for (name, alpha), acc in rows.items():
            per = " / ".join(f"{a:.3f}" for a in acc)
            print(f"| {size} | {name} | {alpha} | {np.mean(acc):.3f} | {per} | {seconds[(name, alpha)]:.0f} |")


if __name__ == "__main__":
    main()
