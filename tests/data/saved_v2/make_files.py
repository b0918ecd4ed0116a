"""Files saved by lvgp 0.2.0 before the fit options became objects (format /2: ``max_iter=``,
``lr=``, ``early_stopping=``, ... as the estimator's own arguments), for the compatibility test.
Made at commit 92ddf8b:

    git worktree add /tmp/v2code 92ddf8b && cd /tmp/v2code && python tests/data/saved_v2/make_files.py OUT
"""

import json
import sys
import warnings

import numpy as np

import lvgp
from lvgp.kernels import LDKSpec

warnings.simplefilter("ignore")
out_dir = sys.argv[1]
texts = [
    "good film great acting",
    "bad film awful plot",
    "great plot good music",
    "awful acting bad music",
    "good acting great film",
    "bad plot awful film",
    "great music good plot",
    "awful film bad acting",
] * 2
y = np.array([1.0, -1.0, 1.2, -0.9, 1.1, -1.2, 0.8, -0.7] * 2)
labels = np.array(["pos", "neg"] * 8)
test = ["good music", "awful plot bad"]
cases = {
    "gplvsm_map": lvgp.GPLVSMRegressor(
        LDKSpec.paper(), max_iter=5, tol=1e-6, early_stopping=True, n_iter_no_change=3, random_state=0
    ),
    "gplvsm_default": lvgp.GPLVSMRegressor(max_iter=5, lr=0.1, convergence_window=4, random_state=0),
    "gpc_dirichlet": lvgp.LDKGPClassifier(
        max_iter=5, early_stopping="keep-best", validation_fraction=0.3, random_state=0
    ),
    "gpc_variational": lvgp.LDKGPClassifier(
        inference="variational", num_inducing=4, max_epochs=3, batch_size=4, ngd_lr=0.2, random_state=0
    ),
    "sparse": lvgp.SparseGPLVSMRegressor(num_inducing=4, batch_size=4, max_steps=5, lr=0.05, random_state=0),
    "latent_smm": lvgp.LatentSMMClassifier(LDKSpec(latent_dim=2, rho=0.1), max_iter=5, random_state=0),
    "matcher": lvgp.LDKMatcher(LDKSpec(latent_dim=2, rho=0.01), max_iter=5, random_state=0),
    "matcher_minibatch": lvgp.LDKMatcher(LDKSpec(latent_dim=2, rho=0.01), batch_size=4, max_iter=3, random_state=0),
}
predictions = {}
for name, est in cases.items():
    if name.startswith("matcher"):
        est.fit(texts, [t.upper() for t in texts])
        pred = est.distances(test, [t.upper() for t in test])
    elif name.startswith(("gpc", "latent")):
        est.fit(texts, labels)
        pred = est.decision_function(test) if name == "latent_smm" else est.predict_proba(test)
    else:
        est.fit(texts, y)
        pred = np.stack(est.predict(test, return_std=True))
    est.save(f"{out_dir}/{name}.pt")
    predictions[name] = np.asarray(pred).tolist()
with open(f"{out_dir}/predictions.json", "w") as f:
    json.dump(predictions, f, indent=1)
print(sorted(predictions))
