# %% [markdown]
# # The categorical latent GP on the Wisconsin breast-cancer data
#
# Gal, Chen & Ghahramani (2015) model a table of categorical variables with a low-dimensional
# latent point per row and one sparse GP per variable and category (softmax likelihood), fitted
# by a Monte Carlo ELBO. Here: train the CLGP and its linear counterpart (LGM), impute one hidden
# value per test row, compare test perplexities with the frequency baselines, and look at the
# latent space (the paper's Figure 13). `lvgp compare categorical` runs the same protocol over
# several splits; the committed tables are under `results/categorical`.
#
# Set `CI=1` for a smoke run.

# %% tags=["hide-input"]
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
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

# %%
from lvgp import Adam
from lvgp.baselines.frequency import (
    BigramDirichletMultinomial,
    MultinomialModel,
    UniformModel,
    UnigramDirichletMultinomial,
)
from lvgp.datasets import load_breast_cancer
from lvgp.models.clgp import CLGP, CategoricalTable, hide_one_value, imputation_perplexity

# %% [markdown]
# ## The data: 683 complete rows, nine attributes valued 1..10 and the class
# The original Wisconsin table (R's `MASS::biopsy`, fetched once from the package registry and
# cached). Every value is read as a category. The categories of each column come from the whole
# table (the domain); their frequencies only from the training rows.

# %%
columns, values = load_breast_cancer()
complete = np.array([all(v is not None for v in row) for row in values])
values = values[complete]
table = CategoricalTable().fit(columns, values)
codes = table.encode(values)
print(f"{len(codes)} complete rows ({(~complete).sum()} incomplete dropped); columns and cardinalities:")
print(dict(zip(columns, table.cardinalities)))

# %%
rng = np.random.default_rng(0)
perm = rng.permutation(len(codes))
n_train = int(round(0.75 * len(codes)))
train, test = codes[perm[:n_train]], codes[perm[n_train:]]
partial, hidden_columns, hidden_values = hide_one_value(test, rng)
print(f"{len(train)} training rows; {len(test)} test rows, one value hidden in each")

# %% [markdown]
# ## Fit the CLGP and the LGM
# `max_iter` full-batch Adam steps on the Monte Carlo ELBO (5 reparameterized samples of X, U, F
# per step); the KL of q(x) is warmed up over the first half. How q(x)'s standard deviations are
# fitted is chosen on the training rows (`latent_scale="auto"`, the default): the paper code's slow
# gradient ascent, which keeps them near 0.1, or the same optimizer as everything else; each rule
# is fitted on 80% of the training rows and the one that imputes the other 20% better is refitted
# on all of them.

# %%
settings = dict(
    num_inducing=10 if smoke_test else 50,
    elbo_samples=2 if smoke_test else 5,
    optimizer=Adam(max_iter=30 if smoke_test else 1000, lr=0.05),
    impute_iter=20 if smoke_test else 300,
    predict_samples=20 if smoke_test else 200,
    random_state=0,
)
clgp = CLGP(covariance="rbf", **settings).fit(train, table.cardinalities)
lgm = CLGP(covariance="linear", **settings).fit(train, table.cardinalities)
for name, model in (("CLGP", clgp), ("LGM", lgm)):
    dev = ", ".join(f"{rule} {p:.3f}" for rule, p in model.latent_scale_dev_perplexity_.items())
    print(
        f"{name}: {model.fit_seconds_:.1f} s, final ELBO per observed entry {model.elbo_curve_[-1]:.3f}, "
        f"rule for q(x)'s scales {model.latent_scale_!r} (dev perplexity: {dev})"
    )

fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(clgp.elbo_curve_, label="CLGP")
ax.plot(lgm.elbo_curve_, label="LGM")
ax.set_xlabel("iteration")
ax.set_ylabel("ELBO per observed entry")
ax.legend()
plt.show()

# %% [markdown]
# ## Imputation: test perplexity of the hidden values (lower is better)

# %%
models = {
    "Uniform": UniformModel(),
    "Multinomial": MultinomialModel(),
    "Uni-Dir-Mult": UnigramDirichletMultinomial(),
    "Bi-Dir-Mult": BigramDirichletMultinomial(),
}
scores = {
    name: imputation_perplexity(m.fit(train, table.cardinalities), partial, hidden_columns, hidden_values)
    for name, m in models.items()
}
scores["LGM"] = imputation_perplexity(lgm, partial, hidden_columns, hidden_values)
scores["CLGP"] = imputation_perplexity(clgp, partial, hidden_columns, hidden_values)
for name, value in sorted(scores.items(), key=lambda kv: kv[1]):
    print(f"{name:<13} {value:6.3f}")

# %% [markdown]
# ## One test row: the predictive distribution of its hidden value

# %%
row = 0
probs = clgp.predict_proba(partial[row : row + 1])
d, truth = hidden_columns[row], hidden_values[row]
observed = {columns[j]: table.categories[j][c] for j, c in enumerate(partial[row]) if c >= 0}
print("observed:", observed)
print(f"hidden {columns[d]!r} = {table.categories[d][truth]}; CLGP's distribution:")
print({v: round(float(p), 3) for v, p in zip(table.categories[d], probs[d][0])})

# %% [markdown]
# ## The latent space (means of q(x)), coloured by the class
# As in the paper's Figure 13, the two classes occupy different regions, although the class
# is just one of the ten variables the model reconstructs.

# %%
label_column = columns.index("Class") if "Class" in columns else len(columns) - 1
labels = np.array([table.categories[label_column][c] for c in train[:, label_column]])
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for ax, (name, model) in zip(axes, [("CLGP", clgp), ("LGM", lgm)]):
    for i, value in enumerate(sorted(set(labels))):
        sel = labels == value
        ax.scatter(
            model.latent_means_[sel, 0],
            model.latent_means_[sel, 1],
            s=8,
            color=f"C{i}",
            label=f"{columns[label_column]} = {value}",
        )
    ax.set_title(f"{name}: means of q(x)")
    ax.legend()
plt.show()
