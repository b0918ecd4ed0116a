# %% [markdown]
# # A comparative regression study
#
# `lvgp compare regression` runs every method on the same splits (the GP-LVSM paper's Table 2
# protocol: disjoint train/dev/test, vocabulary from train, standardized targets,
# hyper-parameters chosen on dev, test RMSE). This notebook runs a small study from Python,
# then reads its table and figures. The committed full studies are under `results/regression`.
#
# Set `CI=1` for a smoke run.

# %% tags=["hide-input"]
import json
import os
import warnings
from pathlib import Path

import torch
from IPython.display import Image, Markdown, display
from tqdm import TqdmWarning

# without ipywidgets, progress bars are text: no need to say so in every output
warnings.filterwarnings("ignore", category=TqdmWarning)
import lvgp.warnings  # after that filter: importing lvgp imports tqdm.auto

# warnings as one line each ("Category: message"), without the paths of the machine that ran them
lvgp.warnings.use_short_format()
smoke_test = "CI" in os.environ
# intra-op threads, set deliberately: OpenMP threads spinning against another busy process
# slowed one fit 16x on a 2-core machine; raise LVGP_THREADS on a machine of your own
torch.set_num_threads(int(os.environ.get("LVGP_THREADS", "1")))
out = Path(os.environ.get("LVGP_RESULTS", "runs")) / "notebook-study"

# %%
from lvgp.experiments.executors import InProcessExecutor
from lvgp.experiments.regression import RegressionStudy

# %%
study = RegressionStudy(
    dataset="amazon-reviews",  # the 300 Amazon reviews, sentences joined, mean rating
    splits=1 if smoke_test else 5,
    train_size=100,
    dev_size=100,
    test_size=100,
    latent_dims=(1, 2) if smoke_test else (1, 2, 4),
    rhos=(1.0, 10.0) if smoke_test else (0.1, 1.0, 10.0),
    max_iter=15 if smoke_test else 300,
    # the smoke run leaves out lasso and the elastic net (ridge's code path, 64 fits on their grids);
    # "tfidf-ridge" is the ridge a practitioner runs, on tf-idf of the texts as written
    methods=("gplvsm", "gp-rbf", "ridge", "tfidf-ridge") + (() if smoke_test else ("lasso", "elasticnet")),
)
summary = study.run(out, InProcessExecutor())

# %% [markdown]
# ## The table (mean ± std of test RMSE over splits; best in bold)

# %%
display(Markdown((out / "table.md").read_text()))

# %% [markdown]
# ## One record per method and split: what was chosen on dev

# %%
for r in json.loads((out / "results.json").read_text())[:6]:
    print(r["method"], r["split"], round(r["rmse"], 3), r["hyperparameters"], f"{r['fit_seconds']:.1f}s")

# %% [markdown]
# ## Figures: RMSE against q (rho fixed) and against rho (q fixed), and the word map

# %%
for name in ("rmse_vs_q.png", "rmse_vs_rho.png", "word_map.png"):
    display(Image(filename=str(out / name)))

# %% [markdown]
# Running it again resumes: finished cells are read from `out/cells` and not refitted.

# %%
again = study.run(out, InProcessExecutor(), progress=False)
print(len(again["records"]), "records, nothing recomputed")
