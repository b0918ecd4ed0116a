"""The encoder baselines (issue 37) on a tiny random BERT: each against an independent computation
(scikit-learn's own search and model on the encoder's vectors; the closed-form GP posterior)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV

pytest.importorskip("transformers")

from lvgp import LBFGS
from lvgp.base.splits import stratified_folds  # noqa: E402
from lvgp.baselines.encoder import EncoderGPRegressor, EncoderLogisticRegression, EncoderRidge  # noqa: E402
from lvgp.encoders import SentenceEncoder  # noqa: E402

WORDS = ["good", "bad", "film", "plot", "great", "awful", "fine", "poor", "acting", "story"]
TEXTS = [
    "good film",
    "bad film",
    "great plot",
    "awful plot",
    "fine acting",
    "poor acting",
    "good story",
    "bad story",
    "great film and fine acting",
    "awful story, poor plot",
    "a fine film",
    "a poor film",
]
LABELS = np.array([1, 0] * 6)
Y = np.array([1.0, -1.0, 1.2, -0.8, 0.7, -0.9, 1.1, -1.2, 1.5, -1.4, 0.8, -0.6])


@pytest.fixture
def encoder(tmp_path, monkeypatch):
    monkeypatch.setenv("LVGP_DATA", str(tmp_path))
    return SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, words=WORDS, seed=1)


def test_logistic_regression_is_scikit_learns_on_the_encoder_vectors(encoder):
    est = EncoderLogisticRegression(encoder, Cs=(0.1, 10.0, 1000.0), random_state=0).fit(TEXTS, LABELS)
    features = encoder.encode(TEXTS).double().numpy()
    search = GridSearchCV(
        LogisticRegression(max_iter=5000),
        {"C": [0.1, 10.0, 1000.0]},
        cv=stratified_folds(LABELS, 3, 0),
        scoring="neg_log_loss",
    ).fit(features, LABELS)
    assert est.C_ == search.best_params_["C"]
    reference = LogisticRegression(C=est.C_, max_iter=5000).fit(features, LABELS)
    test = ["good acting", "poor story"]
    np.testing.assert_allclose(
        est.predict_proba(test), reference.predict_proba(encoder.encode(test).double().numpy()), rtol=1e-6
    )
    assert list(est.classes_) == [0, 1]
    # tf-idf beside the vectors: one column per training word, then the encoder's
    both = EncoderLogisticRegression(encoder, tfidf=True, random_state=0).fit(TEXTS, LABELS)
    assert both.model_.coef_.shape == (1, len(both.tfidf_.vocabulary_) + encoder.dim)
    # a clone holds its own copy of the encoder and fits the same model
    np.testing.assert_allclose(clone(est).fit(TEXTS, LABELS).predict_proba(test), est.predict_proba(test))


def test_the_default_tf_idf_part_is_sublinear_and_keeps_the_negations(encoder):
    """tfidf=True: scikit-learn's TfidfVectorizer with sublinear counts, its English stop words out but
    the negations, the rows L2-normalized, beside the encoder's vectors (checked against the features
    built by hand); a vectorizer of one's own is cloned, and min_df then belongs to it."""
    from scipy import sparse
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

    from lvgp.bow.vocabulary import NEGATIONS

    texts = ["not a good film", "good good good film", "the film is not bad", "never bad, not good"] * 3
    labels = np.array([0, 1, 1, 0] * 3)
    est = EncoderLogisticRegression(encoder, tfidf=True, Cs=(1.0,), random_state=0).fit(texts, labels)
    words = set(est.tfidf_.vocabulary_)
    assert {"not", "never", "good", "bad", "film"} <= words and not words & {"the", "is"}
    hand = TfidfVectorizer(sublinear_tf=True, stop_words=sorted(ENGLISH_STOP_WORDS - NEGATIONS)).fit(texts)
    features = sparse.hstack([hand.transform(texts), sparse.csr_matrix(encoder.encode(texts).double().numpy())])
    reference = LogisticRegression(C=1.0, max_iter=5000).fit(features, labels)
    np.testing.assert_allclose(est.model_.coef_, reference.coef_, rtol=1e-6, atol=1e-8)
    # sublinear counts: "good" three times weighs 1 + log 3 times its idf
    row = est.tfidf_.transform(["good good good film"]).toarray()[0]
    good, film = est.tfidf_.vocabulary_["good"], est.tfidf_.vocabulary_["film"]
    ratio = (1 + np.log(3)) * est.tfidf_.idf_[good] / est.tfidf_.idf_[film]
    assert row[good] / row[film] == pytest.approx(ratio) and np.linalg.norm(row) == pytest.approx(1.0)
    # a vectorizer of one's own: cloned (left unfitted), its min_df its own
    mine = TfidfVectorizer(ngram_range=(1, 2))
    both = EncoderLogisticRegression(encoder, tfidf=mine, Cs=(1.0,), random_state=0).fit(texts, labels)
    assert "not good" in both.tfidf_.vocabulary_ and not hasattr(mine, "vocabulary_")
    with pytest.raises(ValueError, match="min_df=2 applies to tfidf=True"):
        EncoderLogisticRegression(encoder, tfidf=mine, min_df=2).fit(texts, labels)
    # the regression baseline reads the same part; min_df reaches the default vectorizer
    ridge = EncoderRidge(encoder, tfidf=True, min_df=2, alphas=(1.0,)).fit(texts, np.arange(12.0))
    assert ridge.tfidf_.min_df == 2 and "not" in ridge.tfidf_.vocabulary_


def test_unlabeled_texts_extend_the_tf_idf_part_and_change_nothing_else(encoder):
    """fit(..., unlabeled=U): the tf-idf part is fitted on X and U (its vocabulary and idf those of the
    default vectorizer fitted on both), the model on X's features alone, which are then X's rows of that
    vectorizer beside the encoder's vectors (checked against logistic regression on features built by
    hand); ridge reads the same part; without a tf-idf part U is unused, with a warning."""
    from scipy import sparse

    from lvgp.baselines.encoder import default_tfidf

    labelled, unlabeled = list(TEXTS[:6]), list(TEXTS[6:]) + ["a story of rain and wind"]
    est = EncoderLogisticRegression(encoder, tfidf=True, Cs=(1.0,), random_state=0)
    est.fit(labelled, LABELS[:6], unlabeled=unlabeled)
    hand = default_tfidf().fit(labelled + unlabeled)
    assert est.tfidf_.vocabulary_ == hand.vocabulary_ and "rain" in hand.vocabulary_ and est.n_unlabeled_ == 7
    np.testing.assert_allclose(est.tfidf_.idf_, hand.idf_)
    features = sparse.hstack([hand.transform(labelled), sparse.csr_matrix(encoder.encode(labelled).double().numpy())])
    reference = LogisticRegression(C=1.0, max_iter=5000).fit(features, LABELS[:6])
    np.testing.assert_allclose(est.model_.coef_, reference.coef_, rtol=1e-6, atol=1e-8)
    alone = EncoderLogisticRegression(encoder, tfidf=True, Cs=(1.0,), random_state=0).fit(labelled, LABELS[:6])
    assert len(alone.tfidf_.vocabulary_) < len(hand.vocabulary_) and alone.n_unlabeled_ == 0
    ridge = EncoderRidge(encoder, tfidf=True, alphas=(1.0,)).fit(labelled, Y[:6], unlabeled=unlabeled)
    assert ridge.tfidf_.vocabulary_ == hand.vocabulary_ and ridge.n_unlabeled_ == 7
    with pytest.warns(UserWarning, match="7 unlabeled texts are not used"):
        EncoderLogisticRegression(encoder, Cs=(1.0,)).fit(labelled, LABELS[:6], unlabeled=unlabeled)
    with pytest.raises(TypeError, match="unlabeled must hold strings"):
        est.fit(labelled, LABELS[:6], unlabeled=["fine", 3])


def test_ridge_takes_the_alpha_of_the_lowest_dev_rmse(encoder):
    train, dev = slice(0, 8), slice(8, 12)
    alphas = (0.01, 1.0, 100.0)
    est = EncoderRidge(encoder, alphas=alphas).fit(TEXTS[train], Y[train], X_val=TEXTS[dev], y_val=Y[dev])
    f_train, f_dev = (encoder.encode(TEXTS[s]).double().numpy() for s in (train, dev))
    rmse = {a: np.sqrt(np.mean((Ridge(alpha=a).fit(f_train, Y[train]).predict(f_dev) - Y[dev]) ** 2)) for a in alphas}
    assert est.alpha_ == min(rmse, key=rmse.get)
    assert est.dev_rmse_ == pytest.approx(rmse[est.alpha_])
    np.testing.assert_allclose(est.predict(TEXTS[dev]), Ridge(alpha=est.alpha_).fit(f_train, Y[train]).predict(f_dev))
    with pytest.raises(ValueError, match="both X_val and y_val"):
        EncoderRidge(encoder).fit(TEXTS, Y, X_val=TEXTS)


def test_gp_predicts_the_closed_form_posterior(encoder):
    est = EncoderGPRegressor(encoder, optimizer=LBFGS(max_iter=30)).fit(TEXTS, Y)
    x = encoder.encode(TEXTS).double()
    test = ["good acting", "poor story", "film"]
    xs = encoder.encode(test).double()
    scale = float(est.model_.covar_module.outputscale.detach())
    ell = est.lengthscale_
    noise = float(est.likelihood_.noise.detach())
    constant = float(est.model_.mean_module.constant.detach())

    def rbf(a, b):
        return scale * torch.exp(-0.5 * torch.cdist(a, b) ** 2 / ell**2)

    z = torch.as_tensor((Y - Y.mean()) / Y.std())
    K = rbf(x, x) + noise * torch.eye(len(TEXTS), dtype=torch.float64)
    Ks = rbf(xs, x)
    mean = constant + Ks @ torch.linalg.solve(K, z - constant)
    var = scale - (Ks * torch.linalg.solve(K, Ks.T).T).sum(-1) + noise
    got_mean, got_std = est.predict(test, return_std=True)
    np.testing.assert_allclose(got_mean, mean.numpy() * Y.std() + Y.mean(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_std, var.sqrt().numpy() * Y.std(), rtol=1e-6, atol=1e-8)
    assert est.noise_ == pytest.approx(noise * Y.std() ** 2)


def test_bad_inputs_are_named(encoder):
    with pytest.raises(TypeError, match="single string"):
        EncoderLogisticRegression(encoder).fit("good film", [1])
    with pytest.raises(TypeError, match=r"rows \[1\]"):
        EncoderRidge(encoder).fit(["good", 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="encoder"):
        EncoderLogisticRegression("no-such-model").fit(TEXTS, LABELS)
    with pytest.raises(ValueError, match="NaN|finite"):
        EncoderGPRegressor(encoder).fit(TEXTS, np.r_[Y[:-1], np.nan])


def test_a_rare_class_missing_from_a_held_out_fold_is_scored(encoder):
    """stratified_folds keeps a class of one document in every training part: the held-out folds
    lack it, and the log loss is still scored over the model's classes (no failed fold)."""
    labels = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 2])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn's "Scoring failed" is a warning
        est = EncoderLogisticRegression(encoder, Cs=(0.1, 1000.0), random_state=0).fit(TEXTS, labels)
    assert list(est.classes_) == [0, 1, 2] and est.best_params_ == {"C": est.C_}
    assert est.encode_seconds_ > 0
