"""``benchmarks/open_set_accuracy_dev.py``'s table (issue 57): each row against logistic regression on the
same draw, the differences and the texts one of the two alone classifies right, counted by hand."""

from __future__ import annotations

import numpy as np

from tests._benchmarks import benchmark_module

acc = benchmark_module("open_set_accuracy_dev.py", "_open_set_accuracy_dev")


def test_the_table_pairs_each_row_with_logistic_regression_draw_by_draw():
    truth = np.array(["a", "a", "b", "b"])

    def draw(seed, logreg, gp):
        common = dict(corpus="c", seed=seed, split=0, per_class=10)
        return [
            {**common, "row": acc.BASELINE, "pred": np.array(logreg)},
            {**common, "row": "gp", "pred": np.array(gp)},
            {**common, "row": None, "pred": truth},
        ]

    records = draw(1, ["a", "a", "b", "a"], ["a", "b", "b", "b"]) + draw(2, ["a", "a", "b", "b"], ["b", "a", "b", "b"])
    lines = acc.table(records).splitlines()
    # draw 1: logreg 3/4, gp 3/4 (gp alone right on text 3, logreg alone on text 1); draw 2: 4/4 against 3/4
    diffs = np.array([0.0, -0.25])
    assert f"| c | 10 | {acc.BASELINE} | 2 | 0.8750 | – | – | – | – |" in lines
    assert f"| c | 10 | gp | 2 | 0.7500 | {diffs.mean():+.4f} | {diffs.std(ddof=1):.4f} | 0 | 1 / 2 |" in lines


def test_the_output_scale_rows_scale_the_fit_and_restore_it():
    import warnings

    import torch

    from lvgp import LBFGS, LDKGPClassifier

    rng = np.random.default_rng(4)
    words = {"pos": ["good", "great", "fine", "nice"], "neg": ["bad", "awful", "dull", "weak"]}
    x = [" ".join(rng.choice(words[c], 3)) for c in ("pos", "neg") for _ in range(12)]
    y = ["pos"] * 12 + ["neg"] * 12
    test = ["good nice", "awful weak", "fine dull bad", "great"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp = LDKGPClassifier(optimizer=LBFGS(max_iter=30), random_state=1).fit(x, y)
        fitted = gp.model_.covar_module.outputscale.detach().clone()
        rows = acc.output_scale_predictions(gp, test, [1e-6, 1.0])
    assert list(rows) == ["gp x 1e-06", "gp x 1", "gp loo-scale"]
    assert torch.equal(gp.model_.covar_module.outputscale, fitted)  # restored
    np.testing.assert_array_equal(rows["gp x 1"], gp.predict(test))
    # a vanishing output scale predicts from the classes' constant means alone: its leave-one-out log loss is
    # about log 2, the fit's far below on a separable corpus, so the leave-one-out choice is the fit
    np.testing.assert_array_equal(rows["gp loo-scale"], rows["gp x 1"])
    assert list(rows["gp x 1"]) == ["pos", "neg", "neg", "pos"]


def test_kernel_features_give_logistic_regression_on_the_features_themselves():
    """With a linear kernel ``K = X X^T``, logistic regression on the kernel's features is logistic regression on
    ``X`` (the penalty ``||w||^2`` is the RKHS norm; the optimum lies in the labelled rows' span)."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 8))  # more rows than dimensions: K is of rank 8
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=30) > 0, "a", "b")
    new = rng.normal(size=(12, 8))
    train, cross = acc.kernel_features(X @ X.T, new @ X.T)
    assert train.shape == (30, 8) and cross.shape == (12, 8)
    np.testing.assert_allclose(train @ train.T, X @ X.T, atol=1e-10)
    np.testing.assert_allclose(cross @ train.T, new @ X.T, atol=1e-10)
    direct = LogisticRegression(C=0.7, tol=1e-10, max_iter=10_000).fit(X, y)
    kernel = LogisticRegression(C=0.7, tol=1e-10, max_iter=10_000).fit(train, y)
    np.testing.assert_allclose(kernel.predict_proba(cross), direct.predict_proba(new), atol=1e-6)
