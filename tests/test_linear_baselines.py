"""The dev-tuned linear baselines against a hand loop over the same candidates, and the
text classifiers' scikit-learn conventions (they take raw texts only, so scikit-learn's
generated-array checks in test_sklearn_checks.py cannot run on them)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import ElasticNet, Ridge
from sklearn.model_selection import GridSearchCV

from lvgp.baselines.linear import DevTunedLinearRegression, TfidfRidge
from lvgp.baselines.text_classifiers import BowClassifier, KernelSVMClassifier, TfidfLogisticRegression


def word_corpus(n, seed=0):
    rng = np.random.default_rng(seed)
    docs = [[int(w) for w in rng.integers(0, 30, size=rng.integers(3, 10))] for _ in range(n)]
    y = np.array([np.mean(d) / 10 + rng.normal(0, 0.1) for d in docs])
    texts = [" ".join("wd" + chr(97 + w // 26) + chr(97 + w % 26) for w in d) for d in docs]
    return texts, y


def counts_of(model, texts):
    return model.vocabulary_.counts(texts)


@pytest.mark.parametrize("kind", ["ridge", "elasticnet"])
def test_dev_choice_matches_a_hand_loop_and_the_model_never_sees_the_dev_rows(kind):
    texts, y = word_corpus(90)
    alphas, ratios = (0.01, 0.1, 1.0, 10.0), (0.2, 0.8)
    model = DevTunedLinearRegression(kind, alphas=alphas, l1_ratios=ratios).fit(texts[:60], y[:60], texts[60:], y[60:])
    F, F_val = counts_of(model, texts[:60]), counts_of(model, texts[60:])
    reference = {}
    for a in alphas:
        for r in ratios if kind == "elasticnet" else (None,):
            m = Ridge(alpha=a) if r is None else ElasticNet(alpha=a, l1_ratio=r, max_iter=20000)
            m.fit(F, y[:60])
            reference[(a, r)] = float(np.sqrt(np.mean((m.predict(F_val) - y[60:]) ** 2)))
    assert model.search_.keys() == reference.keys()
    np.testing.assert_allclose([model.search_[k] for k in reference], list(reference.values()), rtol=1e-6)
    best = min(reference, key=reference.get)
    assert (model.alpha_, model.l1_ratio_) == best
    refit = (
        Ridge(alpha=best[0]) if best[1] is None else ElasticNet(alpha=best[0], l1_ratio=best[1], max_iter=20000)
    ).fit(F, y[:60])
    np.testing.assert_allclose(model.predict(texts[60:]), refit.predict(F_val), rtol=1e-6, atol=1e-9)


def test_the_tfidf_ridge_is_a_hand_loop_over_alpha_on_scikit_learns_tfidf():
    """``TfidfRidge``: the default vectorizer (sublinear tf-idf, the stop words but the negations) fitted on the
    training texts alone, alpha the dev-best of a hand loop, the ridge refit on the training texts; without a dev
    split the folds choose; a vectorizer of one's own is cloned, never fitted; bad arguments are named."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from lvgp.baselines.encoder import default_tfidf

    texts, y = word_corpus(90)
    alphas = (0.01, 0.1, 1.0, 10.0)
    model = TfidfRidge(alphas=alphas).fit(texts[:60], y[:60], texts[60:], y[60:])
    tfidf = default_tfidf().fit(texts[:60])
    F, F_val = tfidf.transform(texts[:60]), tfidf.transform(texts[60:])
    rmse = {a: float(np.sqrt(np.mean((Ridge(alpha=a).fit(F, y[:60]).predict(F_val) - y[60:]) ** 2))) for a in alphas}
    assert model.alpha_ == min(rmse, key=rmse.get) and model.dev_rmse_ == pytest.approx(min(rmse.values()), rel=1e-9)
    refit = Ridge(alpha=model.alpha_).fit(F, y[:60])
    np.testing.assert_allclose(model.predict(texts[60:]), refit.predict(F_val), rtol=1e-9, atol=1e-12)
    assert model.tfidf_.vocabulary_ == tfidf.vocabulary_  # the dev texts' words are no features
    folds = TfidfRidge(alphas=(0.01, 1.0, 100.0), cv=3, random_state=0).fit(texts, y)
    assert folds.alpha_ in (0.01, 1.0, 100.0)
    own = TfidfVectorizer(min_df=2)
    assert TfidfRidge(vectorizer=own).fit(texts, y).tfidf_.min_df == 2 and not hasattr(own, "vocabulary_")
    assert clone(TfidfRidge(vectorizer=own)).get_params()["vectorizer"] is not own
    with pytest.raises(ValueError, match="min_df=2 applies to the default vectorizer"):
        TfidfRidge(vectorizer=own, min_df=2).fit(texts, y)
    with pytest.raises(ValueError, match="both X_val and y_val"):
        TfidfRidge().fit(texts, y, X_val=texts)
    with pytest.raises(TypeError, match="vectorizer"):
        TfidfRidge(vectorizer="tfidf").fit(texts, y)


def test_without_a_dev_split_the_folds_choose_and_bad_arguments_are_named():
    texts, y = word_corpus(60)
    model = DevTunedLinearRegression("ridge", alphas=(0.01, 1.0, 100.0), cv=3).fit(texts, y)
    assert model.alpha_ in (0.01, 1.0, 100.0) and len(model.search_) == 3
    with pytest.raises(ValueError, match="both X_val and y_val"):
        DevTunedLinearRegression().fit(texts, y, X_val=texts)
    with pytest.raises(ValueError, match="kind"):
        DevTunedLinearRegression("lars").fit(texts, y)


def test_the_tfidf_logistic_regression_is_a_hand_loop_over_c_on_the_log_loss():
    """``TfidfLogisticRegression``: the default vectorizer fitted on the training texts, C the best mean held-out
    log loss of a hand loop over the same stratified folds, the model refit on every text; a vectorizer of one's own
    is cloned; empty texts refused at fit (rows named), counted at prediction; bad arguments named."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    from lvgp._random import sklearn_random_state
    from lvgp.base.splits import stratified_folds
    from lvgp.baselines.encoder import default_tfidf
    from lvgp.warnings import EmptyDocumentsWarning

    texts, y = word_corpus(90)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(str)
    Cs = (0.1, 10.0, 1000.0)
    model = TfidfLogisticRegression(Cs=Cs, random_state=3).fit(texts, labels)
    tfidf = default_tfidf().fit(texts)
    F = tfidf.transform(texts)
    folds = stratified_folds(labels, 3, sklearn_random_state(3))
    loss = {
        C: np.mean(
            [
                log_loss(
                    labels[test],
                    LogisticRegression(C=C, max_iter=5000).fit(F[train], labels[train]).predict_proba(F[test]),
                )
                for train, test in folds
            ]
        )
        for C in Cs
    }
    assert model.C_ == min(loss, key=loss.get) and model.tfidf_.vocabulary_ == tfidf.vocabulary_
    reference = LogisticRegression(C=model.C_, max_iter=5000).fit(F, labels)
    np.testing.assert_allclose(model.predict_proba(texts[:9]), reference.predict_proba(F[:9]), rtol=1e-6, atol=1e-9)
    assert list(model.predict(texts[:9])) == list(reference.predict(F[:9]))
    p = model.predict_proba(texts[:9])
    np.testing.assert_allclose(model.score_samples(texts[:9]), np.sum(p * np.log(p), axis=1), rtol=1e-9)
    assert TfidfLogisticRegression().fit(texts, labels).C_ in (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)
    own = TfidfVectorizer(min_df=2)
    assert TfidfLogisticRegression(vectorizer=own).fit(texts, labels).tfidf_.min_df == 2
    assert not hasattr(own, "vocabulary_")
    with pytest.raises(ValueError, match="min_df=2 applies to the default vectorizer"):
        TfidfLogisticRegression(vectorizer=own, min_df=2).fit(texts, labels)
    with pytest.raises(TypeError, match="vectorizer"):
        TfidfLogisticRegression(vectorizer="tfidf").fit(texts, labels)
    with pytest.raises(ValueError, match=r"empty documents at rows \[4\]"):
        TfidfLogisticRegression().fit(texts[:4] + [" "] + texts[5:], labels)
    with pytest.warns(EmptyDocumentsWarning, match="1 of 2 documents are empty"):
        assert model.predict_proba(["", texts[0]]).shape == (2, 3)


def test_the_bow_svm_on_a_vectorizer_is_the_svm_on_its_features_by_hand():
    """``BowClassifier(vectorizer=...)``: the vectorizer (cloned) fitted on the training texts, the SVM's C the CV's of
    :func:`tuned_linear_classifier` on its features, Platt's sigmoids on them; no lvgp vocabulary is kept (nor one of
    an earlier fit); without a vectorizer the paper's features as before."""
    from lvgp.baselines.encoder import default_tfidf
    from lvgp.baselines.text_classifiers import platt_scaling, tuned_linear_classifier

    texts, y = word_corpus(90)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(str)
    own = default_tfidf()
    model = BowClassifier("svm", vectorizer=own, random_state=2).fit(texts, labels)
    assert not hasattr(own, "vocabulary_") and not hasattr(model, "vocabulary_")
    F = default_tfidf().fit(texts).transform(texts)
    svm = tuned_linear_classifier(F, labels, "svm", model.Cs, 2)
    assert model.model_.C == svm.C
    np.testing.assert_allclose(model.decision_function(texts[:7]), svm.decision_function(F[:7]), rtol=1e-9)
    sigmoids = platt_scaling(svm, F, labels, random_state=2)
    np.testing.assert_allclose(model.predict_proba(texts[:7]), sigmoids.predict_proba(F[:7]), rtol=1e-9)
    paper = BowClassifier("svm", random_state=2).fit(texts, labels)
    assert hasattr(paper, "vocabulary_")
    assert not hasattr(paper.set_params(vectorizer=default_tfidf()).fit(texts, labels), "vocabulary_")
    with pytest.raises(TypeError, match="vectorizer"):
        BowClassifier(vectorizer="tfidf").fit(texts, labels)


@pytest.mark.parametrize(
    "estimator",
    [BowClassifier(Cs=(1.0,)), KernelSVMClassifier(kernel="rbf", random_state=0), TfidfLogisticRegression(Cs=(1.0,))],
)
def test_text_classifiers_follow_scikit_learn_conventions(estimator):
    texts, y = word_corpus(60)
    labels = np.where(y > np.median(y), "high", "low")
    with pytest.raises(NotFittedError):
        clone(estimator).predict(texts)
    assert clone(estimator).get_params() == estimator.get_params()
    fitted = clone(estimator).fit(texts, labels)
    assert fitted is not None and set(fitted.classes_) == {"high", "low"}
    assert not hasattr(estimator, "model_")  # fit on the clone left the prototype unfitted
    key = "kernel" if isinstance(estimator, KernelSVMClassifier) else "Cs"
    values = [(0.1,), (10.0,)] if key == "Cs" else ["rbf", "poly"]
    search = GridSearchCV(estimator, {key: values}, cv=2).fit(texts, labels)
    assert search.best_params_[key] in values
    assert search.predict(texts[:5]).shape == (5,)
