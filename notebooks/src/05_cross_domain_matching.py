# %% [markdown]
# # Cross-domain matching: English and German texts
#
# Thesis ch. 6: English words and German words get latent vectors in one shared space; a
# description is the kernel mean embedding of its words' vectors; the distance between an
# English and a German description is the squared MMD between their embeddings (eq. 6.4). The
# vectors are fitted so that each English description's true German translation is the most
# likely under a softmax over distances (eq. 6.8). No dictionary is given: the pairs alone teach
# which words correspond.
#
# The pairs: the English messages of wagtail's user interface and their German translations
# (its gettext catalogs, fetched once from the package registry), or any JSON-lines file of
# aligned pairs named in `LVGP_PAIRS` (e.g. Debian's package descriptions, the data of the
# committed study). Set `CI=1` for a smoke run. `lvgp compare matching` runs the full protocol
# (several sets, hyper-parameters chosen on dev); its committed results are under `results/matching`.

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
from lvgp import LBFGS, LDKMatcher
from lvgp.baselines.cca import KernelCCAMatcher
from lvgp.experiments.matching import MatchingStudy, prepare
from lvgp.kernels import LDKSpec
from lvgp.models.matching import precision_at

# %% [markdown]
# ## Data: one pair per family of near duplicates
# Texts that share their first 12 words (e.g. the dozens of LibreOffice package descriptions)
# form a family; the splits take one pair per family so that no test query has a near copy in
# training.

# %%
pairs = os.environ.get("LVGP_PAIRS", "wagtail-de")
study = MatchingStudy(
    pairs,
    train=150 if smoke_test else 700,
    dev=20 if smoke_test else 100,
    test=40 if smoke_test else 100,
)
(train_en, train_de), _, (test_en, test_de), _ = prepare(study, 0)
print(len(train_en), "training pairs; e.g.:")
print(train_en[0].split("\n")[0], "<->", train_de[0].split("\n")[0])

# %% [markdown]
# ## Fit LDK matching and the CCA baselines
# The thesis's model (separate vocabularies, a PCA start), and the same model with the tokens
# spelled identically in both languages tied to one vector (product names, placeholders,
# technical terms), started from tf-idf CCA's solution and with idf-weighted documents.

# %%
budget = dict(min_df=1, optimizer=LBFGS(max_iter=15 if smoke_test else 300), random_state=0)
ldk = LDKMatcher(LDKSpec(latent_dim=8, rho=0.01, gamma=1.0), **budget).fit(train_en, train_de)
tied = LDKMatcher(
    LDKSpec(latent_dim=8, rho=0.01, word_weighting="idf"), tie_identical_tokens=True, init="cca", **budget
).fit(train_en, train_de)
print(
    f"LDK: {ldk.fit_seconds_:.1f} s, {ldk.n_iter_} L-BFGS iterations, "
    f"{len(ldk.source_vocabulary_)} English and {len(ldk.target_vocabulary_)} German words; "
    f"tied: {tied.shared_tokens_} tokens shared"
)
cca = KernelCCAMatcher(kernel="linear", n_components=16, reg=0.1, min_df=1).fit(train_en, train_de)
kcca = KernelCCAMatcher(kernel="rbf", n_components=16, reg=0.1, min_df=1).fit(train_en, train_de)

# %% [markdown]
# ## Precision@R on the test pairs (eq. 6.15)

# %%
R = 20
fig, ax = plt.subplots(figsize=(5, 3.5))
for name, model in [("LDK", ldk), ("LDK tied", tied), ("CCA", cca), ("KCCA", kcca)]:
    p = precision_at(model.true_target_ranks(test_en, test_de), R)
    ax.plot(list(p), list(p.values()), label=name)
    print(f"{name:8s} P@1 {p[1]:.2f}  P@5 {p[5]:.2f}  P@10 {p[10]:.2f}")
ax.set_xlabel("R")
ax.set_ylabel("Precision@R")
ax.legend()
plt.show()

# %% [markdown]
# ## What LDK retrieves, and which German words lie nearest to English ones

# %%
# a German text with no word seen in training is the empty measure here (with a warning), not an error
ranking = ldk.rank(test_en[:3], test_de, on_empty="keep")
for i in range(3):
    print("EN:", test_en[i].split("\n")[0])
    for j in ranking[i][:2]:
        print("   ", "*" if j == i else " ", test_de[j].split("\n")[0])

en_words, de_words = ldk.source_vocabulary_.words, ldk.target_vocabulary_.words
counts = np.asarray(ldk.source_vocabulary_.counts(train_en).sum(0)).ravel()
for k in np.argsort(-counts)[:5]:  # the most frequent English words
    v = ldk.source_vectors_[k]
    nearest = np.argsort(((ldk.target_vectors_ - v) ** 2).sum(1))[:5]
    print(f"{en_words[k]:10s} ->", ", ".join(de_words[j] for j in nearest))
