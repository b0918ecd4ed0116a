"""Latent SMM (thesis ch. 4): the one-vs-one duals from one LIBSVM call equal separate
per-pair SVMs, the gradient is Danskin's (finite differences of g = max_A L), the objective of
eq. 4.19 never increases, the (gamma, rho) -> rho/gamma equivalence, synonyms unseen together
in training are classified through their learned vectors better than by a BoW SVM, pretrained
embeddings carry synonyms never seen in training, and bad input."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.svm import SVC

from lvgp import LBFGS
from lvgp.base.novelty import probability_novelty
from lvgp.datasets import make_synonym_regression
from lvgp.kernels import LDKSpec
from lvgp.models.latent_smm import LatentSMMClassifier, equivalent_rho, pairwise_duals


def synonym_classification(n, seed):
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=seed)
    return corpus.texts, np.where(corpus.y > np.median(corpus.y), "pos", "neg")


def three_classes(n, seed):
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=seed)
    return corpus.texts, np.digitize(corpus.y, np.quantile(corpus.y, [1 / 3, 2 / 3]))


def test_one_versus_rest_is_scikit_learns_on_the_same_gram():
    """Reference: with the word vectors fixed (GloVe-like features, no fitting), the one-vs-rest
    latent SMM is scikit-learn's OneVsRestClassifier(SVC(kernel="precomputed")) on its Gram."""
    from sklearn.multiclass import OneVsRestClassifier

    from lvgp.datasets import WordEmbeddings

    x, y = three_classes(90, 4)
    words = sorted({w for t in x for w in t.split()})
    table = WordEmbeddings("toy", words, np.random.default_rng(0).normal(size=(len(words), 4)))
    spec = LDKSpec(
        embedding="linear",
        level2="cosine",
        word_embeddings=table,
        learn_word_vectors=False,
        identity_weight=0.5,
        identity_form="separate",
    )
    options = dict(kernel=spec, C=2.0)
    smm = LatentSMMClassifier(**options, multi_class="ovr")
    smm.fit(x[:60], y[:60])
    assert smm.n_iter_ == 0 and smm.converged_  # nothing to fit: one evaluation
    with torch.no_grad():
        gram = smm.kernel_(smm._x).to_dense().numpy()
        cross = smm.kernel_(smm.encoder_.transform(x[60:]), smm._x).to_dense().numpy()
    codes = np.searchsorted(smm.classes_, y[:60])
    reference = OneVsRestClassifier(SVC(kernel="precomputed", C=2.0, tol=1e-5)).fit(gram, codes)
    np.testing.assert_allclose(smm.decision_function(x[60:]), reference.decision_function(cross), atol=1e-8)
    np.testing.assert_array_equal(smm.predict(x[60:]), smm.classes_[reference.predict(cross)])
    with pytest.raises(AttributeError, match="one-vs-rest"):
        _ = smm.pairs_
    # two classes: one machine, as one-vs-one
    two = np.where(y == 0, "a", "b")
    ovr = LatentSMMClassifier(**options, multi_class="ovr").fit(x, two)
    ovo = LatentSMMClassifier(**options, multi_class="ovo").fit(x, two)
    np.testing.assert_allclose(ovr.decision_function(x), ovo.decision_function(x), atol=1e-8)
    # the novelty score is the fitted machines': one machine ranks two classes; three one-vs-one do not,
    # whatever multi_class says after the fit
    assert ovo.novelty_score == "max-decision" and smm.novelty_score == "max-decision"
    three = LatentSMMClassifier(**options, multi_class="ovo").fit(x[:60], y[:60])
    assert three.set_params(multi_class="ovr").novelty_score == "entropy"
    np.testing.assert_array_equal(three.score_samples(x[60:]), probability_novelty(three.predict_proba(x[60:])))


@pytest.mark.parametrize("k", [2, 4])
def test_one_libsvm_call_gives_every_pairwise_machine(k):
    rng = np.random.default_rng(k)
    feats = rng.normal(size=(60, 5))
    gram = feats @ feats.T
    y = rng.integers(0, k, 60)
    svc = SVC(C=2.0, kernel="precomputed", tol=1e-8, decision_function_shape="ovo").fit(gram, y)
    beta, intercept, pairs = pairwise_duals(svc, 60)
    assert pairs == list(itertools.combinations(range(k), 2))
    for p, (i, j) in enumerate(pairs):
        rows = np.flatnonzero((y == i) | (y == j))
        labels = np.where(y[rows] == i, 1, -1)
        alone = SVC(C=2.0, kernel="precomputed", tol=1e-8).fit(gram[np.ix_(rows, rows)], labels)
        sign = 1.0 if alone.classes_[1] == 1 else -1.0  # scikit-learn is positive for classes_[1]
        expected = np.zeros(60)
        expected[rows[alone.support_]] = sign * alone.dual_coef_[0]
        np.testing.assert_allclose(beta[:, p], expected, atol=1e-6)
        np.testing.assert_allclose(intercept[p], sign * alone.intercept_[0], atol=1e-6)
        # the machine is positive for class i on its own training rows
        decision = gram[rows] @ beta[:, p] + intercept[p]
        assert np.mean(np.sign(decision) == labels) > 0.5


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_gradient_is_danskins_and_objective_never_increases(multi_class):
    x, y = three_classes(40, 0)
    smm = LatentSMMClassifier(
        LDKSpec(latent_dim=2, rho=0.5),
        C=1.0,
        optimizer=LBFGS(max_iter=1),
        svm_tol=1e-10,
        random_state=0,
        multi_class=multi_class,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smm.fit(x, y)
    raw = smm.kernel_.word_vectors.raw_latent
    smm.kernel_.zero_grad()
    smm._objective(smm._x).backward()
    grad = raw.grad.clone()

    def g() -> float:
        with torch.no_grad():
            return smm._objective(smm._x).item()

    rng = np.random.default_rng(0)
    for _ in range(3):
        v, w = rng.integers(raw.shape[0]), rng.integers(raw.shape[1])
        with torch.no_grad():
            raw[v, w] += 1e-5
            up = g()
            raw[v, w] -= 2e-5
            down = g()
            raw[v, w] += 1e-5
        assert abs((up - down) / 2e-5 - grad[v, w].item()) < 1e-4 * max(1.0, abs(grad[v, w].item()))
    # L-BFGS on g: the objective of eq. 4.19 decreases monotonically over iterations
    smm.set_params(optimizer__max_iter=15, svm_tol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smm.fit(x, y)
    curve = np.array(smm.objective_curve_)
    assert len(curve) >= 5 and np.all(np.diff(curve) <= 1e-6 * np.abs(curve[:-1])) and curve[-1] < 0.8 * curve[0]
    # the stored machine is LIBSVM on the final Gram
    with torch.no_grad():
        gram = smm.kernel_(smm._x).to_dense().numpy()
    values = smm.svc_.decision_function(gram)
    np.testing.assert_allclose(values[:, None] if values.ndim == 1 else values, smm.decision_function(x), atol=1e-10)


def test_gamma_and_rho_act_only_through_their_ratio():
    x, y = synonym_classification(60, 3)
    fits = []
    for gamma, rho in [(1.0, 0.2), (4.0, 0.8)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            smm = LatentSMMClassifier(
                LDKSpec(latent_dim=2, rho=rho, gamma=gamma), C=2.0, optimizer=LBFGS(max_iter=10), random_state=0
            )
            fits.append(smm.fit(x, y))
    assert equivalent_rho(0.8, 4.0) == 0.2
    np.testing.assert_allclose(fits[0].objective_curve_, fits[1].objective_curve_, rtol=1e-6)
    np.testing.assert_allclose(fits[0].decision_function(x), fits[1].decision_function(x), atol=1e-6)


def test_latent_smm_beats_the_bow_svm_on_synonyms():
    x, y = synonym_classification(300, 1)
    train, test = slice(0, 60), slice(60, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smm = LatentSMMClassifier(
            LDKSpec(latent_dim=2, rho=0.1), C=1.0, optimizer=LBFGS(max_iter=60), random_state=0
        ).fit(x[train], y[train])
    smm_acc = np.mean(smm.predict(x[test]) == y[test])
    vec = CountVectorizer().fit(x[train])
    svm = SVC(kernel="rbf", C=1.0, gamma="scale").fit(vec.transform(x[train]), y[train])
    svm_acc = np.mean(svm.predict(vec.transform(x[test])) == y[test])
    assert smm_acc > svm_acc + 0.05, (smm_acc, svm_acc)


def test_multiclass_one_versus_one_and_bad_input():
    x, y = three_classes(90, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smm = LatentSMMClassifier(optimizer=LBFGS(max_iter=20), random_state=0).fit(x, y)
    assert smm.decision_function(x).shape == (90, 3) and len(smm.pairs_) == 3
    assert set(smm.predict(x)) <= {0, 1, 2}
    assert np.mean(smm.predict(x) == y) > 0.5
    with pytest.raises(ValueError, match="single class"):
        LatentSMMClassifier().fit(x[:10], [1] * 10)
    with pytest.raises(ValueError, match="one label per document"):
        LatentSMMClassifier().fit(x[:10], [1, 2])
    with pytest.raises(ValueError, match=r"missing labels \(None or NaN\) in rows \[1\]"):
        LatentSMMClassifier().fit(x[:3], [1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="C must be > 0"):
        LatentSMMClassifier(C=0).fit(x, y)


def test_under_a_weak_prior_the_prior_scaled_start_is_an_svm_on_term_frequencies():
    """Closed form: with rho = 1e-8 the initial vectors (std 1e4) are so far apart that the RBF
    word kernel is the identity and its gradient vanishes, so the latent SMM is the SVM on the
    documents' L1-normalized term frequencies (the identity kernel's mean embeddings). A fixed
    ``init_scale`` keeps the words within the kernel's reach, and the vectors are learned."""
    from sklearn.preprocessing import normalize

    from lvgp.bow.padded import padded_to_counts

    x, y = three_classes(90, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        frozen = LatentSMMClassifier(LDKSpec(rho=1e-8), C=8.0, optimizer=LBFGS(max_iter=5), random_state=0).fit(x, y)
        learned = LatentSMMClassifier(
            LDKSpec(rho=1e-8, init_scale=1.0), C=8.0, optimizer=LBFGS(max_iter=5), random_state=0
        ).fit(x, y)
    tf = normalize(padded_to_counts(frozen.encoder_.transform(x), frozen.encoder_.num_words), norm="l1")
    gram = (tf @ tf.T).toarray()
    svm = SVC(C=8.0, kernel="precomputed", decision_function_shape="ovo", tol=frozen.svm_tol).fit(gram, y)
    # the same duals up to LIBSVM's stopping tolerance (svm_tol)
    np.testing.assert_allclose(frozen.decision_function(x), svm.decision_function(gram), atol=1e-4)
    np.testing.assert_array_equal(frozen.predict(x), svm.predict(gram))

    def largest_word_similarity(smm):  # the largest off-diagonal entry of the learned word Gram
        with torch.no_grad():
            gram = smm.kernel_.embedding_gram(smm.kernel_.latent, smm.kernel_.latent)
            return float((gram - torch.diag_embed(gram.diagonal())).max())

    # only the prior term moves the vectors (it shrinks them); the word kernel stays the identity
    assert largest_word_similarity(frozen) < 1e-12
    assert largest_word_similarity(learned) > 0.5
    with pytest.raises(ValueError, match="init_scale"):
        LatentSMMClassifier(LDKSpec(rho=0.1, init_scale=0.0)).fit(x, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("gamma", [1.0, 4.0])
def test_warm_start_continues_from_the_fitted_vectors(gamma):
    x, y = three_classes(40, 2)
    smm = LatentSMMClassifier(
        LDKSpec(latent_dim=2, rho=0.4, gamma=gamma), C=2.0, optimizer=LBFGS(max_iter=4), random_state=0
    ).fit(x, y)
    vectors, final = smm.word_vectors_, smm.objective_curve_[-1]
    # the same C: the continuation starts where the fit ended (through z = sqrt(gamma) x and back)
    smm.set_params(warm_start=True, optimizer__max_iter=3).fit(x, y)
    assert smm.objective_curve_[0] == pytest.approx(final, rel=1e-12)
    assert not np.allclose(smm.word_vectors_, vectors)
    # another C: g of eq. 4.19 at that C and the vectors so far is where the continuation starts
    smm.set_params(C=8.0)
    with torch.no_grad():
        start = smm._objective(smm._x).item()
    smm.fit(x, y)
    assert smm.objective_curve_[0] == pytest.approx(start, rel=1e-12)
    cold = LatentSMMClassifier(
        LDKSpec(latent_dim=2, rho=0.4, gamma=gamma), C=8.0, optimizer=LBFGS(max_iter=3), random_state=0
    ).fit(x, y)
    assert smm.objective_curve_[0] != pytest.approx(cold.objective_curve_[0])
    # warm_start=False starts afresh: bit for bit a new estimator's fit
    smm.set_params(warm_start=False, C=2.0, optimizer__max_iter=4).fit(x, y)
    np.testing.assert_array_equal(smm.word_vectors_, vectors)
    # what defines the vectors may not change; nor may the documents
    smm.set_params(warm_start=True, kernel__latent_dim=3)
    with pytest.raises(ValueError, match="latent_dim"):
        smm.fit(x, y)
    smm.set_params(kernel__latent_dim=2)
    with pytest.raises(ValueError, match="documents it was fitted on"):
        smm.fit(x[:-1], y[:-1])
    with pytest.raises(ValueError, match="documents it was fitted on"):
        smm.fit(x[::-1], y)


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_predict_proba_is_platt_scaling_on_the_fitted_gram(multi_class, tmp_path):
    """Issue 59: the latent SMM had no ``predict_proba``. Its Platt sigmoids are those of
    :mod:`lvgp.base.platt` (tested against loops of the papers' equations in ``tests/test_platt.py``) on the
    fitted Gram, its labels and its scheme, and its probabilities are theirs applied to the machines' decision
    values; the fit raises no warning of scikit-learn's (its ``SVC(probability=True)`` is deprecated since 1.9);
    the probabilities stay close to LIBSVM's, where scikit-learn still has them (other folds: not equal); a saved
    and reloaded machine gives the same bits, and a file saved before the sigmoids were fits them again."""
    from lvgp.base.platt import platt_probabilities, platt_sigmoids

    texts, y = three_classes(45, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", FutureWarning)
        smm = LatentSMMClassifier(
            LDKSpec(latent_dim=2, rho=0.1), multi_class=multi_class, optimizer=LBFGS(max_iter=5), random_state=0
        ).fit(texts, y)
    test = texts[:12]
    proba = smm.predict_proba(test)
    assert proba.shape == (12, 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    with torch.no_grad():
        gram = smm.kernel_(smm._x).to_dense().numpy()
    sigmoids = platt_sigmoids(gram, smm._y, multi_class, C=smm.C, tol=smm.svm_tol, seed=0)
    np.testing.assert_allclose(smm.platt_sigmoids_, sigmoids, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(
        proba, platt_probabilities(smm.decision_function(test), smm.platt_sigmoids_, multi_class)
    )
    assert np.mean(proba.argmax(1) == np.searchsorted(smm.classes_, smm.predict(test))) >= 0.9
    if "probability" in SVC().get_params():  # LIBSVM's own Platt scaling, on its own folds
        cross = smm._cross_gram(test)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            if multi_class == "ovo":
                reference = SVC(C=smm.C, kernel="precomputed", tol=smm.svm_tol, probability=True, random_state=0)
                libsvm = reference.fit(gram, smm._y).predict_proba(cross)
            else:
                machines = [
                    SVC(C=smm.C, kernel="precomputed", tol=smm.svm_tol, probability=True, random_state=0)
                    for _ in range(3)
                ]
                libsvm = np.stack(
                    [m.fit(gram, (smm._y == c).astype(int)).predict_proba(cross)[:, 1] for c, m in enumerate(machines)],
                    axis=1,
                )
                libsvm /= libsvm.sum(1, keepdims=True)
        assert np.abs(proba - libsvm).max() < 0.15 and np.abs(proba - libsvm).mean() < 0.05
    smm.save(tmp_path / "smm.pt")
    np.testing.assert_array_equal(LatentSMMClassifier.load(tmp_path / "smm.pt").predict_proba(test), proba)
    payload = torch.load(tmp_path / "smm.pt", weights_only=True)
    del payload["platt_sigmoids"]
    torch.save(payload, tmp_path / "older.pt")
    np.testing.assert_allclose(LatentSMMClassifier.load(tmp_path / "older.pt").predict_proba(test), proba, atol=1e-9)
    # two classes: the probability of classes_[0] grows with the decision value (positive for it)
    two, labels = synonym_classification(40, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        binary = LatentSMMClassifier(LDKSpec(latent_dim=2, rho=0.1), optimizer=LBFGS(max_iter=5), random_state=0)
        binary.fit(two, labels)
    decision = binary.decision_function(two)[:, 0]
    first = binary.predict_proba(two)[:, 0]
    order = np.argsort(decision)
    assert np.all(np.diff(first[order]) >= -1e-12)


@pytest.mark.filterwarnings("ignore::lvgp.warnings.UnseenWordsWarning")
def test_texts_are_decided_block_by_block_as_through_the_whole_padded_corpus(monkeypatch):
    """``decision_function`` reads texts unpadded and computes the kernel in blocks of like lengths, each
    padded to its own longest (blocks of 7 here): the kernel values of the whole corpus padded at once, in
    every row (texts of very different lengths, one without a known word: zeros and a warning with the
    count), for texts and for padded word ids alike."""
    from lvgp.models import prediction_blocks
    from lvgp.warnings import EmptyDocumentsWarning

    x, y = three_classes(60, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smm = LatentSMMClassifier(optimizer=LBFGS(max_iter=10), random_state=0).fit(x, y)
    test, _ = three_classes(40, 4)
    test = [" ".join([t] * (1 + 9 * (i % 6 == 0))) for i, t in enumerate(test)]  # a tail of long texts
    test[5] = "qqq zzz"  # no known word
    with smm.encoder_.predicting(test, smm.kernel_.word_vectors) as padded, torch.no_grad():
        known = (padded != -1).any(-1)
        expected = np.zeros((len(test), len(x)))
        expected[known.numpy()] = smm.kernel_(padded[known], smm._x).to_dense().numpy()
        ids = padded.clone()
    monkeypatch.setattr(prediction_blocks, "PREDICT_BLOCK", 7)
    for documents in (test, ids):
        with pytest.warns(EmptyDocumentsWarning, match="1 of 40 documents have no known word"):
            cross = smm._cross_gram(documents)
        np.testing.assert_allclose(cross, expected, rtol=1e-12, atol=1e-14)
        assert not cross[5].any() and np.abs(cross[known.numpy()]).min() > 0
    with pytest.warns(EmptyDocumentsWarning):
        values = smm.decision_function(test)
    assert values.shape == (40, 3)  # three pairs
    np.testing.assert_allclose(values, smm.svc_.decision_function(expected), rtol=1e-10, atol=1e-12)
