r"""Kernel or likelihood? The Laplace GP classifier with logistic regression's own linear kernel
against logistic regression (issue 56, section 3's ablation), on dev documents.

With the linear kernel :math:`K_c = s\,FF^\top` on the features :math:`F` of ``tfidf-encoder-logreg``
(the tf-idf part and the encoder's unit vectors side by side), the softmax GP is Bayesian multinomial
logistic regression with weights :math:`\mathbf w_c \sim \mathcal N(0, sI)`: its mode is scikit-learn's
``LogisticRegression(C=s)``'s (``tests/test_laplace.py``). So any
gap between the two is the inference's, and these rows take it apart (one change at a time):

1. ``logreg``: logistic regression, C by stratified 3-fold CV on the log loss (the study's baseline);
2. ``laplace s=C, mode``: the Laplace GP at s = the CV's C, the softmax of its mode (logistic regression
   again, its intercept penalized);
3. ``laplace s=C, predictive``: the same mode, the softmax averaged over the latents' Gaussian (R&W
   alg. 3.4): what the predictive integral does to the probabilities;
4. ``laplace s=evidence, predictive``: s by the approximate evidence (eq. 3.44), alg. 3.4 -- the GP's own
   choices;
5. ``laplace s=evidence, mode``: the same fit, the softmax of its mode;
6. ``laplace s=CV, predictive``: s chosen by the same 3-fold CV as logistic regression, on the Laplace
   predictive's log loss;
7. ``laplace s, means by evidence, predictive``: kernel ``s F F^T`` and free constant class means, both by
   the evidence -- the parametrization of ``LDKGPClassifier(inference="laplace")``.

Rows 1-6 put the intercept inside the kernel (a constant feature whose weight has the prior variance s:
logistic regression with a penalized intercept), with zero means.

Dev documents, samples and the tf-idf part as ``tfidf_baseline_dev.py`` (``--tfidf``), the encoder's
vectors of the texts as written. Also printed: the s of each sample and the fit's seconds.

    python benchmarks/laplace_linear_ablation.py [--quick] [--datasets r8,20ng] [--sizes 50,100,200,500]
        [--samples 3] [--tfidf sublinear]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: Monte Carlo draws of the predictive softmax (the classifier's default is 256)
DRAWS = 512


def design(features: np.ndarray, intercept: bool = True) -> torch.Tensor:
    """The float64 features ``[F 1]`` (``intercept``: a constant column, the intercept as a weight of the
    kernel) or ``F`` alone, as a tensor: the linear kernel's design matrix."""
    features = np.asarray(features, dtype=np.float64)
    return torch.from_numpy(np.column_stack([features, np.ones(len(features))]) if intercept else features)


class LinearLaplace:
    """The softmax GP with kernel ``s [F 1][F 1]^T`` for every class (the intercept a weight of the same
    prior variance, on a constant feature; scikit-learn's ``LogisticRegression(C=s)`` with its intercept
    penalized too) and zero means, or with ``free_means`` kernel ``s F F^T`` and constant class means (the
    parametrization of ``LDKGPClassifier(inference="laplace")``), by the Laplace approximation
    (``lvgp.models.laplace``). ``fit(log_s=None)`` maximizes the evidence over log s (and the free means),
    ``fit(log_s=v)`` at s = exp(v) (over the free means alone)."""

    def __init__(
        self, features: np.ndarray, codes: np.ndarray, n_classes: int, seeds: list[int], free_means: bool = False
    ):
        self.free_means = free_means
        self.F = design(features, intercept=not free_means)
        self.G = self.F @ self.F.mT
        self.Y = torch.nn.functional.one_hot(torch.from_numpy(codes).long(), n_classes).mT.double()
        self.C, self.seeds = n_classes, seeds
        self.a: torch.Tensor | None = None
        self.m = torch.zeros(n_classes, dtype=torch.float64)

    def _evidence(self, log_s: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        from lvgp.models.laplace import find_mode, log_evidence

        K = (torch.exp(log_s) * self.G).expand(self.C, *self.G.shape)
        mode = find_mode(K, m, self.Y, self.a)
        self.a = mode.a
        return log_evidence(K, m, self.Y, mode)

    def fit(self, log_s: float | None = None) -> LinearLaplace:
        from scipy.optimize import minimize

        free_s = log_s is None
        start = np.concatenate([[0.0 if free_s else log_s], np.zeros(self.C)])

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            t = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
            value = -self._evidence(t[0], t[1:])
            (grad,) = torch.autograd.grad(value, t)
            g = grad.numpy().copy()
            g[0] = g[0] if free_s else 0.0
            g[1:] = g[1:] if self.free_means else 0.0
            return float(value), g

        bounds = [(-12.0, 12.0) if free_s else (log_s, log_s)]
        bounds += [(None, None) if self.free_means else (0.0, 0.0)] * self.C
        result = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 200})
        self.log_s, self.m = float(result.x[0]), torch.from_numpy(result.x[1:].copy())
        self.evidence = float(-result.fun)
        return self

    def proba(self, features: np.ndarray, predictive: bool) -> np.ndarray:
        from lvgp.models.laplace import expected_softmax_correlated, find_mode, mode_parts
        from lvgp.models.laplace import predictive as latents

        s = math.exp(self.log_s)
        K = (s * self.G).expand(self.C, *self.G.shape)
        mode = find_mode(K, self.m, self.Y, self.a, tol=1e-10)
        Ft = design(features, intercept=not self.free_means)
        cross = (s * self.F @ Ft.mT).expand(self.C, self.F.shape[0], Ft.shape[0])
        prior = (s * (Ft * Ft).sum(-1)).expand(self.C, Ft.shape[0])
        mean, cov = latents(cross, prior, self.m, self.Y, mode, mode_parts(K, mode.f))
        if not predictive:
            return torch.softmax(mean, -1).numpy()
        return expected_softmax_correlated(mean, cov, DRAWS, self.seeds).numpy()


def cv_scale(features: np.ndarray, codes: np.ndarray, n_classes: int, seeds, folds, grid) -> float:
    """log s by the folds' Laplace predictive log loss over the grid of C."""
    best, best_loss = None, math.inf
    for c in grid:
        losses = []
        for train, test in folds:
            model = LinearLaplace(features[train], codes[train], n_classes, seeds).fit(math.log(c))
            p = model.proba(features[test], predictive=True)
            losses.append(-np.mean(np.log(np.clip(p[np.arange(len(test)), codes[test]], 1e-300, None))))
        if np.mean(losses) < best_loss:
            best, best_loss = c, float(np.mean(losses))
    return math.log(best)


def main(argv=None) -> int:
    from tfidf_baseline_dev import (
        VARIANTS,
        bench_encoder,
        concatenation_dev_cells,
        dev_scores,
        encoder_dev_grid,
        encoder_dev_parser,
        logistic_regression,
    )

    parser = encoder_dev_parser(
        __doc__,
        "r8 at 50 documents, one sample, 200 dev documents, two s for the CV row, a tiny random encoder (its "
        "numbers mean nothing)",
    )
    parser.add_argument("--tfidf", default="sublinear", choices=list(VARIANTS))
    args = parser.parse_args(argv)
    from lvgp.base.splits import stratified_folds
    from lvgp.experiments.classification import ENCODER_CS
    from lvgp.models.gpc.models import class_draw_seeds

    datasets, sizes, samples, n_dev = encoder_dev_grid(args, 200)
    encoder, cache = bench_encoder(args.encoder, args.quick)
    rows = (
        "logreg",
        "laplace s=C, mode",
        "laplace s=C, predictive",
        "laplace s=evidence, predictive",
        "laplace s=evidence, mode",
        "laplace s=CV, predictive",
        "laplace s, means by evidence, predictive",
    )
    print(f"tf-idf part: {args.tfidf}; {DRAWS} draws")
    print("| corpus | documents | row | dev accuracy | log loss | ECE | s (per sample) | fit s |")
    print("|---|---|---|---|---|---|---|---|")
    for dataset in datasets:
        scores: dict[tuple[int, str], list] = {}
        cells = concatenation_dev_cells(dataset, samples, sizes, n_dev, encoder, cache, args.tfidf)
        for split, size, f_train, codes, classes, f_dev, y_dev in cells:
            y_train = classes[codes]
            seeds = class_draw_seeds(classes)
            out: dict[str, tuple[np.ndarray, float, float]] = {}
            start = time.perf_counter()
            lr = logistic_regression(f_train, y_train, split)
            out["logreg"] = (lr.predict_proba(f_dev), float(lr.C), time.perf_counter() - start)
            start = time.perf_counter()
            at_c = LinearLaplace(f_train, codes, len(classes), seeds).fit(math.log(lr.C))
            seconds = time.perf_counter() - start
            out["laplace s=C, mode"] = (at_c.proba(f_dev, False), lr.C, seconds)
            out["laplace s=C, predictive"] = (at_c.proba(f_dev, True), lr.C, seconds)
            start = time.perf_counter()
            own = LinearLaplace(f_train, codes, len(classes), seeds).fit()
            seconds = time.perf_counter() - start
            out["laplace s=evidence, predictive"] = (own.proba(f_dev, True), math.exp(own.log_s), seconds)
            out["laplace s=evidence, mode"] = (own.proba(f_dev, False), math.exp(own.log_s), seconds)
            start = time.perf_counter()
            folds = stratified_folds(y_train, 3, split)
            grid = (1.0, 1000.0) if args.quick else ENCODER_CS
            log_s = cv_scale(f_train, codes, len(classes), seeds, folds, grid) if folds else math.log(1e4)
            cv = LinearLaplace(f_train, codes, len(classes), seeds).fit(log_s)
            out["laplace s=CV, predictive"] = (cv.proba(f_dev, True), math.exp(log_s), time.perf_counter() - start)
            start = time.perf_counter()
            free = LinearLaplace(f_train, codes, len(classes), seeds, free_means=True).fit()
            row = "laplace s, means by evidence, predictive"
            out[row] = (free.proba(f_dev, True), math.exp(free.log_s), time.perf_counter() - start)
            for row, (proba, s, seconds) in out.items():
                scores.setdefault((size, row), []).append((*dev_scores(proba, classes, y_dev), s, seconds))
        for size in sizes:
            for row in rows:
                values = scores[(size, row)]
                a, b, c, _, sec = np.mean(values, axis=0)
                s = "/".join(f"{v[3]:.3g}" for v in values)
                print(f"| {dataset} | {size} | {row} | {a:.3f} | {b:.3f} | {c:.3f} | {s} | {sec:.1f} |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
