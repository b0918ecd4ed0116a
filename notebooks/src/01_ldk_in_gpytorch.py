# %% [markdown]
# # The latent distribution kernel in gpytorch
#
# `lvgp.LatentDistributionKernel` (LDK) is a gpytorch kernel over **padded word-index sets**:
# every word has a learned latent vector, a document is the kernel mean embedding of its
# words' vectors, and two documents are compared by a level-2 kernel over those embeddings
# (thesis eqs. 3.1-3.11). This notebook builds documents, looks at the kernel, composes it
# with other kernels in a gpytorch `ExactGP`, trains it, and draws the learned word map.
#
# Set `CI=1` in the environment for a seconds-long smoke run.

# %% tags=["hide-input"]
import os
import warnings

from tqdm import TqdmWarning

# without ipywidgets, progress bars are text: no need to say so in every output (set before
# gpytorch and lvgp are imported: they import tqdm.auto, which says it)
warnings.filterwarnings("ignore", category=TqdmWarning)
import gpytorch
import matplotlib.pyplot as plt
import numpy as np
import torch

import lvgp.warnings

# warnings as one line each ("Category: message"), without the paths of the machine that ran them
lvgp.warnings.use_short_format()
smoke_test = "CI" in os.environ
# intra-op threads, set deliberately: OpenMP threads spinning against another busy process
# slowed one fit 16x on a 2-core machine; raise LVGP_THREADS on a machine of your own
torch.set_num_threads(int(os.environ.get("LVGP_THREADS", "1")))
torch.set_default_dtype(torch.float64)
n_docs, n_steps = (60, 10) if smoke_test else (300, 400)

# %%
import lvgp
from lvgp.datasets import make_synonym_regression

# %% [markdown]
# ## Documents as padded word-index sets
# A synthetic corpus in which two disjoint groups of synonyms carry one signal: documents
# use positive/negative words of *one* group only, so a bag-of-words kernel never sees that
# `posaa` (group 0) and `posai` (group 1) mean the same thing.

# %%
corpus = make_synonym_regression(n=n_docs, noise=0.05, random_state=0)
vocab = lvgp.Vocabulary().fit(corpus.texts)
x = vocab.encode(corpus.texts)  # n x L torch.long, padded with lvgp.PAD
y = torch.as_tensor(corpus.y)
print(corpus.texts[0], "->", x[0].tolist())
print("vocabulary:", len(vocab), "words; padded shape", tuple(x.shape), "; PAD =", lvgp.PAD)

# %% [markdown]
# ## The kernel itself
# Nine kernels: embedding kernel (linear, RBF, polynomial, or any gpytorch kernel on R^q) x
# level-2 kernel (linear, RBF, polynomial). Hyper-parameters carry the thesis's names.

# %%
ldk = lvgp.LatentDistributionKernel(len(vocab), latent_dim=2, embedding="rbf", level2="rbf", zeta=2.0, seed=0)
print(ldk)
print("gamma", ldk.gamma.item(), "zeta", ldk.zeta.item(), "rho", ldk.rho)
with torch.no_grad():
    K = ldk(x[:5]).to_dense()
print(np.round(K.numpy(), 3))

# %% [markdown]
# Any gpytorch kernel on R^q can serve as the embedding kernel, e.g. a Matern kernel:

# %%
matern = lvgp.LatentDistributionKernel(len(vocab), 2, embedding=gpytorch.kernels.MaternKernel(nu=1.5), seed=0)
with torch.no_grad():
    print(np.round(matern(x[:3], x[3:6]).to_dense().numpy(), 3))

# %% [markdown]
# ## Composition in an ExactGP
# A sum of an RBF-embedding LDK and a linear-embedding LDK, each scaled, times nothing else
# -- any gpytorch algebra works. Training with `ExactMarginalLogLikelihood` maximizes the
# GP-LVSM log posterior (eq. 11) divided by n, because each LDK registers the Gaussian
# prior N(0, 1/rho) of its latent vectors.

# %%
n_train = n_docs // 2


class Model(gpytorch.models.ExactGP):
    def __init__(self, x, y):
        super().__init__(x, y, gpytorch.likelihoods.GaussianLikelihood())
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(
            lvgp.LatentDistributionKernel(len(vocab), 2, "rbf", rho=1.0, seed=0)
        ) + gpytorch.kernels.ScaleKernel(lvgp.LatentDistributionKernel(len(vocab), 2, "linear", rho=10.0, seed=1))

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


model = Model(x[:n_train], y[:n_train])
mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
losses = []
model.train()
for _ in range(n_steps):
    optimizer.zero_grad()
    loss = -mll(model(x[:n_train]), y[:n_train])
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
plt.plot(losses)
plt.xlabel("Adam step")
plt.ylabel("-log posterior / n")
plt.show()

# %% [markdown]
# ## Predictions with uncertainty

# %%
model.eval()
with torch.no_grad(), lvgp.exact_numerics():
    pred = model.likelihood(model(x[n_train:]))
lo, hi = pred.confidence_region()
rmse = (pred.mean - y[n_train:]).pow(2).mean().sqrt().item()
print(f"held-out RMSE {rmse:.3f}; target std {y[n_train:].std().item():.3f}")
order = torch.argsort(y[n_train:])
plt.plot(y[n_train:][order], "k.", label="target")
plt.plot(pred.mean[order], label="predictive mean")
plt.fill_between(range(len(order)), lo[order], hi[order], alpha=0.3, label="2 sd")
plt.legend()
plt.show()

# %% [markdown]
# ## The learned word map
# The RBF-embedding LDK's latent vectors: synonyms of both groups gather by polarity.

# %%
latent = model.covar_module.kernels[0].base_kernel.latent.detach().numpy()
for words, colour, label in [
    (corpus.positive_words[0] + corpus.positive_words[1], "tab:blue", "positive"),
    (corpus.negative_words[0] + corpus.negative_words[1], "tab:red", "negative"),
    (corpus.neutral_words, "tab:gray", "neutral"),
]:
    ids = [vocab.index(w) for w in words if w in vocab]
    plt.scatter(latent[ids, 0], latent[ids, 1], c=colour, label=label, s=15)
plt.legend()
plt.title("latent word vectors")
plt.show()

# %% [markdown]
# ## Batch shapes
# A kernel with `batch_shape=[2]` holds two independent sets of latent vectors; batched
# inputs broadcast as with any gpytorch kernel.

# %%
batched = lvgp.LatentDistributionKernel(len(vocab), 2, batch_shape=torch.Size([2]), seed=0)
with torch.no_grad():
    print(batched(x[:4]).to_dense().shape, batched(x[:4].expand(2, 4, -1), diag=True).shape)
