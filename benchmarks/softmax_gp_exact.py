r"""Laplace or the model? Exact inference in the linear softmax GP (Bayesian multinomial logistic regression)
by elliptical slice sampling, against the Laplace approximation and logistic regression (issue 56, section 3).

``laplace_linear_ablation.py`` found the Laplace GP on logistic regression's own features
(``[tf-idf | encoder]``, kernel :math:`s[F\,1][F\,1]^\top`) at its mode equal to logistic regression, but its
predictive (R&W alg. 3.4) under-confident at every s. Two explanations: the Gaussian at the mode is a
poor fit to a skewed posterior (Nickisch & Rasmussen 2008 found Laplace's probabilities too cautious), or
the model itself -- weights :math:`\mathbf w_c \sim \mathcal N(0, sI)` -- predicts worse than the CV-tuned
point estimate. Sampling the exact posterior separates them. The posterior over the training latents
:math:`\mathbf f_c = [F\,1]\mathbf w_c \sim \mathcal N(0, sG)`, :math:`G = [F\,1][F\,1]^\top`, is sampled by
elliptical slice sampling (Murray, Adams & MacKay 2010: each step an ellipse through the state and a draw of
the prior, shrunk until the softmax likelihood passes a slice), and a dev text's latents given the training
ones are Gaussian, :math:`f_{*c} \mid \mathbf f_c \sim \mathcal N(\mathbf g_*^\top G^{-1}\mathbf f_c,\;
s(\mathbf x_*^\top\mathbf x_* - \mathbf g_*^\top G^{-1}\mathbf g_*))` (:math:`\mathbf g_* = [F\,1]\mathbf x_*`):
the predictive is the softmax averaged over the draws and that Gaussian. Rows:

1. ``logreg``: logistic regression, C by stratified 3-fold CV on the log loss (the study's baseline);
2. ``laplace s=evidence``: the Laplace GP, s by its approximate evidence, alg. 3.4's predictive;
3. ``exact s=evidence``: the same s, the exact posterior's predictive;
4. ``exact s=evidence, span only``: the same draws, without the variance of the dev text's part outside the
   training texts' span (:math:`s\lVert\mathbf x_{*\perp}\rVert^2`: the weights of words no training
   text has), the part a point estimate never sees;
5. ``exact s=C``: the exact predictive at logistic regression's C.

Two chains a fit (different seeds, ``--steps`` steps, the first half dropped); ``chains' gap`` is the
largest difference between their dev log losses, the convergence check. Dev documents and samples as
``tfidf_baseline_dev.py``, the tf-idf part the baseline's default.

    python benchmarks/softmax_gp_exact.py [--quick] [--datasets r8,20ng] [--sizes 50,200,500] [--samples 3]
        [--steps 20000] [--threads 1]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from laplace_linear_ablation import LinearLaplace, design  # noqa: E402

#: samples kept a chain (evenly spaced over its second half), and the draws of a dev text's latents a sample
KEPT, DRAWS = 250, 8


def elliptical_slice_chain(
    root: torch.Tensor, Y: torch.Tensor, steps: int, generator: torch.Generator
) -> tuple[torch.Tensor, float]:
    r"""Elliptical slice sampling (Murray, Adams & MacKay 2010, fig. 2) of :math:`p(\mathbf f \mid \mathbf y)
    \propto \prod_i \mathrm{softmax}(\mathbf f_i)_{y_i}\, \prod_c \mathcal N(\mathbf f_c; 0, LL^\top)`.

    ``root``: ``n x n`` lower Cholesky factor of the prior covariance (shared by the ``C`` classes); ``Y``:
    ``C x n`` one-hot labels. Returns ``KEPT x C x n`` states spread over the second half of ``steps``, and
    the last state's log likelihood."""
    C, n = Y.shape

    def log_likelihood(f: torch.Tensor) -> float:
        return float((Y * f).sum() - torch.logsumexp(f, 0).sum())

    f = torch.zeros(C, n, dtype=root.dtype)
    current = log_likelihood(f)
    keep = set(np.linspace(steps // 2, steps - 1, KEPT).round().astype(int).tolist())
    kept = []
    for step in range(steps):
        nu = (root @ torch.randn(n, C, generator=generator, dtype=root.dtype)).mT
        threshold = current + math.log(float(torch.rand((), generator=generator)))
        angle = float(torch.rand((), generator=generator)) * 2 * math.pi
        low, high = angle - 2 * math.pi, angle
        while True:
            proposal = f * math.cos(angle) + nu * math.sin(angle)
            value = log_likelihood(proposal)
            if value > threshold:
                f, current = proposal, value
                break
            low, high = (angle, high) if angle < 0 else (low, angle)
            angle = float(torch.rand((), generator=generator)) * (high - low) + low
        if step in keep:
            kept.append(f)
    return torch.stack(kept), current


class ExactLinearSoftmax:
    """The softmax GP with kernel ``s [F 1][F 1]^T`` for every class, its posterior sampled (module docstring)."""

    def __init__(self, features: np.ndarray, codes: np.ndarray, n_classes: int, s: float):
        self.F = design(features)
        n = self.F.shape[0]
        self.G = self.F @ self.F.mT + 1e-8 * torch.eye(n, dtype=torch.float64)
        self.G_root = torch.linalg.cholesky(self.G)
        self.Y = torch.nn.functional.one_hot(torch.from_numpy(codes).long(), n_classes).mT.double()
        self.s = s

    def sample(self, steps: int, seed: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        draws, _ = elliptical_slice_chain(math.sqrt(self.s) * self.G_root, self.Y, steps, generator)
        return draws

    def proba(self, draws: torch.Tensor, features: np.ndarray, span_only: bool = False, seed: int = 0) -> np.ndarray:
        """``m x C`` predictive probabilities of the dev texts, averaged over ``draws`` (``T x C x n``)."""
        Ft = design(features)
        cross = self.F @ Ft.mT  # n x m
        A = torch.cholesky_solve(cross, self.G_root)  # G^-1 g_*
        mean = draws @ A  # T x C x m
        if span_only:
            return torch.softmax(mean, 1).mean(0).mT.numpy()
        var = self.s * ((Ft * Ft).sum(-1) - (cross * A).sum(0)).clamp_min(0)  # m
        generator = torch.Generator().manual_seed(seed)
        T, C, m = mean.shape
        out = torch.zeros(C, m, dtype=mean.dtype)
        for _ in range(DRAWS):  # one draw of every text's latents a pass, to keep T x C x m in memory
            eps = torch.randn(T, C, m, generator=generator, dtype=mean.dtype)
            out += torch.softmax(mean + eps * var.sqrt(), 1).mean(0)
        return (out / DRAWS).mT.numpy()


def main(argv=None) -> int:
    from tfidf_baseline_dev import (
        bench_encoder,
        concatenation_dev_cells,
        dev_scores,
        encoder_dev_grid,
        encoder_dev_parser,
        logistic_regression,
    )

    parser = encoder_dev_parser(
        __doc__,
        "r8 at 50 documents, one sample, 200 dev documents, 400 steps a chain, a tiny random encoder (its "
        "numbers mean nothing)",
    )
    parser.add_argument("--steps", type=int, default=20000, help="elliptical slice steps a chain")
    parser.set_defaults(sizes="50,200,500", threads=1)
    args = parser.parse_args(argv)
    from lvgp.models.gpc.models import class_draw_seeds

    datasets, sizes, samples, n_dev = encoder_dev_grid(args, 200)
    steps = 400 if args.quick else args.steps
    encoder, cache = bench_encoder(args.encoder, args.quick)
    rows = (
        "logreg",
        "laplace s=evidence",
        "exact s=evidence",
        "exact s=evidence, span only",
        "exact s=C",
    )
    print(f"{steps} steps a chain, 2 chains a fit, {KEPT} states kept a chain")
    print("| corpus | documents | row | dev accuracy | log loss | ECE | s (per sample) | chains' gap | fit s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dataset in datasets:
        scores: dict[tuple[int, str], list] = {}
        cells = concatenation_dev_cells(dataset, samples, sizes, n_dev, encoder, cache, "sublinear-stop-negations")
        for split, size, f_train, codes, classes, f_dev, y_dev in cells:
            out: dict[str, tuple] = {}
            start = time.perf_counter()
            lr = logistic_regression(f_train, classes[codes], split)
            out["logreg"] = (
                *dev_scores(lr.predict_proba(f_dev), classes, y_dev),
                lr.C,
                0.0,
                time.perf_counter() - start,
            )
            start = time.perf_counter()
            laplace = LinearLaplace(f_train, codes, len(classes), class_draw_seeds(classes)).fit()
            s_evidence = math.exp(laplace.log_s)
            proba = laplace.proba(f_dev, predictive=True)
            out["laplace s=evidence"] = (
                *dev_scores(proba, classes, y_dev),
                s_evidence,
                0.0,
                time.perf_counter() - start,
            )
            for name, s in (("evidence", s_evidence), ("C", float(lr.C))):
                start = time.perf_counter()
                model = ExactLinearSoftmax(f_train, codes, len(classes), s)
                chains = [model.sample(steps, seed=100003 * split + 11 * size + k) for k in (0, 1)]
                seconds = (time.perf_counter() - start) / 2
                span_only = (False, True) if name == "evidence" else (False,)
                for only in span_only:
                    per_chain = [dev_scores(model.proba(d, f_dev, span_only=only), classes, y_dev) for d in chains]
                    gap = abs(per_chain[0][1] - per_chain[1][1])
                    pooled = dev_scores(model.proba(torch.cat(chains), f_dev, span_only=only), classes, y_dev)
                    row = f"exact s={name}" + (", span only" if only else "")
                    out[row] = (*pooled, s, gap, seconds)
            for row, values in out.items():
                scores.setdefault((size, row), []).append(values)
        for size in sizes:
            for row in rows:
                values = scores[(size, row)]
                a, b, c, _, _, sec = np.mean(values, axis=0)
                s = "/".join(f"{v[3]:.3g}" for v in values)
                gap = max(v[4] for v in values)
                print(f"| {dataset} | {size} | {row} | {a:.3f} | {b:.3f} | {c:.3f} | {s} | {gap:.3f} | {sec:.1f} |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
