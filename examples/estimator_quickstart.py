"""GP-LVSM as a scikit-learn estimator: fit, predict with uncertainty, tune, save, reload.

python examples/estimator_quickstart.py [--tiny]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV

from lvgp import LBFGS, Adam, GPLVSMRegressor
from lvgp.datasets import make_synonym_regression
from lvgp.kernels import LDKSpec


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args(argv)

    corpus = make_synonym_regression(n=60 if args.tiny else 300, noise=0.05, random_state=1)
    half = len(corpus.y) // 2
    X_train, y_train = corpus.texts[:half], corpus.y[:half]
    X_test, y_test = corpus.texts[half:], corpus.y[half:]
    max_iter = 10 if args.tiny else 200

    # L-BFGS converges here in about 630 iterations (a --tiny run stops early: its warnings say so)
    lbfgs = LBFGS(max_iter=10 if args.tiny else 1000)
    reg = GPLVSMRegressor(LDKSpec(latent_dim=2, rho=1.0), optimizer=lbfgs, random_state=0)
    reg.fit(X_train, y_train)
    mean, std = reg.predict(X_test, return_std=True)
    print(f"test RMSE {np.sqrt(np.mean((mean - y_test) ** 2)):.4f}; mean predictive std {std.mean():.4f}")

    grid = GridSearchCV(
        GPLVSMRegressor(optimizer=Adam(max_iter=max_iter), random_state=0),
        {"kernel__latent_dim": [1, 2], "kernel__rho": [0.1, 1.0, 10.0]},
        cv=2,
        scoring="neg_root_mean_squared_error",
    )
    grid.fit(X_train, y_train)
    print("best by 2-fold CV:", grid.best_params_)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gplvsm.pt"
        reg.save(path)
        again = GPLVSMRegressor.load(path)
        assert np.array_equal(again.predict(X_test), mean)
        print(f"saved to and reloaded from {path.name}: identical predictions")

    words = reg.vocabulary_.words
    first = corpus.positive_words[0][0]
    print(f"latent vector of '{first}':", np.round(reg.word_vectors_[words.index(first)], 3))


if __name__ == "__main__":
    main()
