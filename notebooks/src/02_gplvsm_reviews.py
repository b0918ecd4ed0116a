# %% [markdown]
# # GP-LVSM on real review snippets
#
# Amazon review sentences rated by 20 people on [-4, 4] (Hutto & Gilbert, ICWSM 2014; shipped
# in the vaderSentiment 3.3.2 source distribution, fetched once from PyPI by
# `lvgp.datasets.load_review_snippets`). We fit GP-LVSM as in the paper (MAP, RBF embedding,
# linear level-2) and its variational variant, look at the predictive uncertainty, and draw
# the learned word map.
#
# Set `CI=1` for a smoke run (small sets, few iterations).

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
n_train, n_dev, n_test = (150, 100, 200) if smoke_test else (1000, 1000, 1708)
max_iter, vb_iter = (15, 15) if smoke_test else (300, 400)
warnings.filterwarnings("ignore", message=".*did not converge.*")

# %%
from lvgp import LBFGS, Adam, GPLVSMRegressor, Vocabulary
from lvgp.baselines.linear import DevTunedLinearRegression
from lvgp.datasets import load_review_snippets
from lvgp.kernels import LDKSpec

# %%
corpus = load_review_snippets("amazon")
rng = np.random.default_rng(0)
perm = rng.permutation(len(corpus))
train, dev, test = perm[:n_train], perm[n_train : n_train + n_dev], perm[n_train + n_dev : n_train + n_dev + n_test]
texts = np.array(corpus.texts, dtype=object)
mu, sd = corpus.y[train].mean(), corpus.y[train].std()
y = (corpus.y - mu) / sd  # standardized with training statistics, as in the paper
vocab = Vocabulary(min_df=2).fit(texts[train])
# training sentences without any vocabulary word cannot be embedded: drop them (and say so)
keep = np.array([any(w in vocab for w in vocab.tokenize(t)) for t in texts[train]])
print(f"{len(vocab)} words; dropped {(~keep).sum()} empty training sentences")
train = train[keep]
print(texts[train[0]], "->", round(y[train[0]], 2))

# %% [markdown]
# ## GP-LVSM as in the paper (MAP), early-stopped on the development set


# %%
def rmse(model, idx):
    return float(np.sqrt(np.mean((model.predict(list(texts[idx])) - y[idx]) ** 2)))


gplvsm = GPLVSMRegressor(
    LDKSpec(latent_dim=2, rho=10.0), vocabulary=vocab, optimizer=LBFGS(max_iter=max_iter), random_state=0
)
gplvsm.fit(list(texts[train]), y[train], X_val=list(texts[dev]), y_val=y[dev])
ridge = DevTunedLinearRegression("ridge", vocabulary=vocab).fit(list(texts[train]), y[train], list(texts[dev]), y[dev])
print(f"GP-LVSM (MAP) test RMSE {rmse(gplvsm, test):.3f}; ridge {rmse(ridge, test):.3f}")
plt.plot(gplvsm.validation_curve_)
plt.xlabel("L-BFGS iteration")
plt.ylabel("dev RMSE")
plt.title("MAP training: the word vectors start to overfit early")
plt.show()

# %% [markdown]
# ## The variational variant
# A Gaussian posterior over the word vectors (KL to the prior instead of the MAP penalty),
# means tied to GloVe vectors through a learned projection, and a document-length kernel.

# %%
vb = GPLVSMRegressor(
    LDKSpec(latent_dim=2, rho=0.3, word_embeddings="glove-6b-50d", variational=True, length_kernel=True),
    vocabulary=vocab,
    optimizer=Adam(max_iter=vb_iter, lr=0.05),
    predict_samples=8 if smoke_test else 16,
    random_state=0,
)
vb.fit(list(texts[train]), y[train], X_val=list(texts[dev]), y_val=y[dev])
print(f"GP-LVSM (variational) test RMSE {rmse(vb, test):.3f}")

# %% [markdown]
# ## Predictive uncertainty
# How often do the 95% predictive intervals cover the held-out ratings, and do larger
# predictive standard deviations go with larger errors?

# %%
mean, std = vb.predict(list(texts[test]), return_std=True)
err = y[test] - mean
coverage = np.mean(np.abs(err) <= 1.96 * std)
print(f"95% interval coverage on test: {coverage:.3f}")
order = np.argsort(std)
bins = np.array_split(order, 5)
plt.plot(
    [std[b].mean() for b in bins], [np.sqrt(np.mean(err[b] ** 2)) for b in bins], "o-", label="RMSE per std quintile"
)
plt.plot([std.min(), std.max()], [std.min(), std.max()], "k--", lw=1, label="ideal")
plt.xlabel("predictive std")
plt.ylabel("RMSE")
plt.legend()
plt.show()

# %% [markdown]
# ## The word map (paper Fig. 4)
# Frequent training words at their 2-D latent means, coloured by the sign of their ridge weight.

# %%
counts = np.asarray(vocab.counts(list(texts[train])).sum(axis=0)).ravel()
top = np.argsort(-counts)[:50]
for model, title in [(gplvsm, "MAP"), (vb, "variational")]:
    xy = model.word_vectors_[top]
    colours = np.where(ridge.coef_[top] > 0, "tab:blue", "tab:red")
    plt.figure(figsize=(6, 5))
    plt.scatter(xy[:, 0], xy[:, 1], c=colours, s=10)
    for (a, b), w, c in zip(xy, np.array(vocab.words)[top], colours):
        plt.annotate(w, (a, b), fontsize=7, color=c)
    plt.title(f"GP-LVSM ({title}) word vectors")
    plt.show()
