"""Latent SMM (thesis ch. 4): the objective of eq. 4.19 never increases across outer
iterations, the dual matches scikit-learn's SVM on the same Gram, synonyms unseen together
in training are classified through their learned vectors better than by a BoW SVM, and
one-versus-one multi-class."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.svm import SVC

from lvgp.datasets import make_synonym_regression
from lvgp.models.latent_smm import LatentSMMClassifier


def synonym_classification(n, seed):
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=seed)
    return corpus.texts, np.where(corpus.y > np.median(corpus.y), "pos", "neg")


def test_objective_never_increases_and_duals_match_sklearn():
    x, y = synonym_classification(80, 0)
    smm = LatentSMMClassifier(latent_dim=2, rho=0.1, C=1.0, max_outer=15, random_state=0).fit(x, y)
    curve = np.array(smm.objective_curve_)
    assert len(curve) >= 3 and np.all(np.diff(curve) <= 1e-9)
    # the stored machine is scikit-learn's SVM on the final Gram (decision values agree)
    with torch.no_grad():
        gram = smm.kernel_(smm._x).to_dense().numpy()
    labels = np.where(smm._y == 0, 1, -1)
    svc = SVC(C=1.0, kernel="precomputed").fit(gram, labels)
    ours = smm.decision_function(x)[:, 0]
    np.testing.assert_allclose(ours, svc.decision_function(gram) * (1 if svc.classes_[1] == 1 else -1), atol=1e-6)


def test_latent_smm_beats_the_bow_svm_on_synonyms():
    x, y = synonym_classification(300, 1)
    train, test = slice(0, 60), slice(60, 300)
    smm = LatentSMMClassifier(latent_dim=2, rho=0.1, C=1.0, max_outer=40, random_state=0).fit(x[train], y[train])
    smm_acc = np.mean(smm.predict(x[test]) == y[test])
    vec = CountVectorizer().fit(x[train])
    svm = SVC(kernel="rbf", C=1.0, gamma="scale").fit(vec.transform(x[train]), y[train])
    svm_acc = np.mean(svm.predict(vec.transform(x[test])) == y[test])
    assert smm_acc > svm_acc + 0.05, (smm_acc, svm_acc)


def test_multiclass_one_versus_one_and_bad_input():
    corpus = make_synonym_regression(n=90, noise=0.0, random_state=2)
    y = np.digitize(corpus.y, np.quantile(corpus.y, [1 / 3, 2 / 3]))
    smm = LatentSMMClassifier(max_outer=5, random_state=0).fit(corpus.texts, y)
    assert smm.decision_function(corpus.texts).shape == (90, 3) and len(smm.pairs_) == 3
    assert set(smm.predict(corpus.texts)) <= {0, 1, 2}
    assert np.mean(smm.predict(corpus.texts) == y) > 0.5
    with pytest.raises(ValueError, match="single class"):
        LatentSMMClassifier().fit(corpus.texts[:10], [1] * 10)
    with pytest.raises(ValueError, match="one label per document"):
        LatentSMMClassifier().fit(corpus.texts[:10], [1, 2])
