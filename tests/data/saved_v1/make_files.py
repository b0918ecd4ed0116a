"""Files saved by lvgp 0.1.0 before the kernel= change (format /1), for the compatibility test."""

import json
import warnings

import numpy as np

import lvgp
from lvgp.datasets import WordEmbeddings

warnings.simplefilter("ignore")
texts = [
    "good film great acting",
    "bad film awful plot",
    "great plot good music",
    "awful acting bad music",
    "good acting great film",
    "bad plot awful film",
    "great music good plot",
    "awful film bad acting",
]
y = np.array([1.0, -1.0, 1.2, -0.9, 1.1, -1.2, 0.8, -0.7])
labels = np.array(["pos", "neg"] * 4)
words = ["good", "great", "bad", "awful", "film", "plot", "acting", "music"]
table = WordEmbeddings("toy", words, np.random.default_rng(0).normal(size=(8, 3)))
out = {}
cases = {
    "gplvsm_map": lvgp.GPLVSMRegressor(latent_dim=2, rho=1.0, max_iter=5, random_state=0),
    "gplvsm_plus": lvgp.GPLVSMRegressor(
        embedding="linear",
        level2="cosine",
        word_embeddings=table,
        learn_word_vectors=False,
        word_weighting="idf",
        identity_weight="balanced",
        identity_form="separate",
        max_iter=5,
        random_state=0,
    ),
    "gplvsm_vb": lvgp.GPLVSMRegressor(
        variational=True,
        optimizer="adam",
        max_iter=5,
        word_embeddings=table,
        length_kernel=True,
        predict_samples=4,
        random_state=0,
    ),
    "gpc_dirichlet": lvgp.LDKGPClassifier(max_iter=5, random_state=0),
    "gpc_plus": lvgp.LDKGPClassifier(
        embedding="linear",
        level2="cosine",
        word_embeddings=table,
        learn_word_vectors=False,
        word_weighting="idf",
        identity_weight="balanced",
        identity_weight_prior_sd=0.5,
        identity_form="separate",
        class_hyperparameters="shared",
        max_iter=5,
        random_state=0,
    ),
}
test = ["good music", "awful plot bad"]
for name, est in cases.items():
    if "gpc" in name:
        est.fit(texts, labels)
        pred = est.predict_proba(test)
    else:
        est.fit(texts, y)
        pred = np.stack(est.predict(test, return_std=True))
    est.save(f"/tmp/v1/{name}.pt")
    out[name] = pred.tolist()
json.dump(out, open("/tmp/v1/predictions.json", "w"))
print(out)
