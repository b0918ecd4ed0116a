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
