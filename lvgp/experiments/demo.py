"""The main demo: GP-LVSM against baselines on one data set, as a printed table.

SYNTHETIC for now: a corpus in which two disjoint groups of synonyms carry the same
signal (:func:`lvgp.datasets.make_synonym_regression`). It switches to real review data
when the real-data loaders land.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import RidgeCV

from ..baselines import GPRBFRegressor
from ..datasets import make_synonym_regression
from ..models import GPLVSMRegressor


def run_demo(tiny: bool = False, seed: int = 0) -> list[dict]:
    n = 80 if tiny else 400
    corpus = make_synonym_regression(n=n, noise=0.05, random_state=seed)
    half = n // 2
    X_train, y_train = corpus.texts[:half], corpus.y[:half]
    X_test, y_test = corpus.texts[half:], corpus.y[half:]
    print(f"SYNTHETIC demo data: {n} documents, two disjoint synonym groups carry one signal; {half} train / {n - half} test")

    def ridge():
        return _TfRidge()

    methods = {
        "GP-LVSM (q=2, rho=1)": lambda: GPLVSMRegressor(
            latent_dim=2, rho=1.0, max_iter=30 if tiny else 300, random_state=seed, verbose=not tiny
        ),
        "GP regression (RBF on BoW)": lambda: GPRBFRegressor(max_iter=30 if tiny else 200),
        "Ridge (word frequencies)": ridge,
    }
    rows = []
    for name, make in methods.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X_train, y_train)
        seconds = time.perf_counter() - start
        rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
        rows.append({"method": name, "rmse": rmse, "seconds": seconds})
    width = max(len(r["method"]) for r in rows)
    print(f"\n{'method':<{width}}  test RMSE  fit seconds")
    for r in rows:
        print(f"{r['method']:<{width}}  {r['rmse']:9.4f}  {r['seconds']:11.1f}")
    return rows


class _TfRidge:
    """Ridge on word frequencies, regularization by efficient leave-one-out CV."""

    def fit(self, texts, y):
        self.vec = TfidfVectorizer(use_idf=False, norm="l1")
        self.model = RidgeCV(alphas=np.logspace(-4, 3, 15)).fit(self.vec.fit_transform(texts), y)
        return self

    def predict(self, texts):
        return self.model.predict(self.vec.transform(texts))
