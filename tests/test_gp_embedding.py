"""GP covariate-embedding logistic regression (Andrade et al. 2018) and the text
classification baselines: S against a dense solve, gradients by finite differences, the
new-covariate block update against recomputing S, a synthetic problem where smoothing over
embeddings must help, scikit-learn conventions, bad input, and the classification study."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pyro
import pytest
import scipy.sparse as sp
import torch
from scipy.special import expit, softmax
from sklearn.base import clone

from lvgp import LBFGS, Adam, Vocabulary
from lvgp.base.embeddings import ppmi_svd_embeddings
from lvgp.base.splits import dev_split, stratified_folds
from lvgp.baselines.gp_embedding import (
    CovariateSmoother,
    GPEmbeddingLogisticRegression,
    extended_smoothed_weights,
    rbf_covariance,
    smoothed_weights,
    smoothing_matrix,
)
from lvgp.baselines.text_classifiers import BagOfClustersClassifier, BowClassifier, MeanEmbeddingClassifier
from lvgp.datasets.loaders import WordEmbeddings
from lvgp.experiments.classification import stratified_sample
from lvgp.warnings import EmptyDocumentsWarning

D = torch.float64


@pytest.fixture(autouse=True)
def clean_param_store():
    pyro.clear_param_store()
    yield
    pyro.clear_param_store()


def test_smoothing_matrix_matches_a_dense_solve_and_a_loop_kernel():
    g = torch.Generator().manual_seed(0)
    e = torch.randn(40, 3, generator=g, dtype=D)
    ls, s = torch.tensor(1.1, dtype=D), torch.tensor(0.6, dtype=D)
    k = rbf_covariance(e, e, ls)
    for i in range(0, 40, 7):
        for j in range(0, 40, 5):
            assert abs(k[i, j].item() - np.exp(-0.5 * float(((e[i] - e[j]) ** 2).sum()) / 1.1**2)) < 1e-12
    dense = k.numpy() @ np.linalg.inv(k.numpy() + 0.36 * np.eye(40))
    np.testing.assert_allclose(smoothing_matrix(e, ls, s).numpy(), dense, atol=1e-10)
    psi = torch.randn(40, 2, generator=g, dtype=D)
    weights, _ = smoothed_weights(e, ls, s, psi)
    np.testing.assert_allclose(weights.numpy(), dense @ psi.numpy(), atol=1e-10)


def test_new_covariates_block_update_equals_recomputing_S():
    g = torch.Generator().manual_seed(1)
    e, new = torch.randn(60, 4, generator=g, dtype=D), torch.randn(9, 4, generator=g, dtype=D)
    ls, s = torch.tensor(1.5, dtype=D), torch.tensor(0.4, dtype=D)
    psi = torch.randn(60, 3, generator=g, dtype=D)
    _, chol = smoothed_weights(e, ls, s, psi)
    fast = extended_smoothed_weights(e, new, ls, s, psi, chol)
    full = smoothing_matrix(torch.cat([e, new]), ls, s) @ torch.cat([psi, torch.zeros(9, 3, dtype=D)])
    torch.testing.assert_close(fast, full, atol=1e-10, rtol=1e-9)


def test_objective_gradients_in_l_and_sigma_match_finite_differences():
    g = torch.Generator().manual_seed(2)
    p, n = 25, 30
    e = torch.randn(p, 3, generator=g, dtype=D)
    x = (torch.rand(n, p, generator=g, dtype=D) < 0.15).to(D)
    y = torch.randint(0, 3, (n,), generator=g)
    psi, bias = torch.randn(p, 3, generator=g, dtype=D), torch.randn(3, generator=g, dtype=D)

    def objective(log_l, log_s):
        weights, chol = smoothed_weights(e, log_l.exp(), log_s.exp(), psi)
        logits = x @ weights + bias
        label = torch.distributions.Categorical(logits=logits).log_prob(y).sum()
        return label + CovariateSmoother.covariate_log_likelihood(x, chol)

    theta = (torch.tensor(0.2, dtype=D, requires_grad=True), torch.tensor(-0.3, dtype=D, requires_grad=True))
    assert torch.autograd.gradcheck(objective, theta)
    # and the covariate likelihood against a direct multivariate-normal evaluation (a^2 fixed at its optimum)
    k = rbf_covariance(e, e, torch.tensor(1.2, dtype=D)) + 0.5**2 * torch.eye(p, dtype=D)
    a2 = torch.einsum("ip,pq,iq->", x, torch.linalg.inv(k), x) / (n * p)
    direct = torch.distributions.MultivariateNormal(torch.zeros(p, dtype=D), a2 * k).log_prob(x).sum()
    torch.testing.assert_close(CovariateSmoother.covariate_log_likelihood(x, torch.linalg.cholesky(k)), direct)


@pytest.mark.parametrize("n_out", [1, 3])
def test_the_map_objective_is_the_pyro_models_negative_log_joint(n_out):
    """The MAP fit minimizes, in rotated weights through one eigendecomposition, the Pyro model's
    negative log joint (priors, covariate factor, label likelihood): differences between points in
    (Psi, b, sigma) agree with the model's traced log density, which solves with a Cholesky factor."""
    from lvgp.baselines.gp_embedding import EigenCovariance, _as_torch_sparse

    g = torch.Generator().manual_seed(3)
    p, n, C, lengthscale, min_noise = 20, 25, 2.5, 1.3, 1e-3
    e = torch.randn(p, 3, generator=g, dtype=D)
    x = sp.csr_matrix((torch.rand(n, p, generator=g, dtype=D) < 0.2).to(D).numpy())
    y = torch.randint(0, max(2, n_out), (n,), generator=g)
    y = y.to(D) if n_out == 1 else y
    est = GPEmbeddingLogisticRegression(C=C, min_noise=min_noise)
    est.C_ = C
    cov = EigenCovariance(e, lengthscale, x)
    xt = _as_torch_sparse(x)

    def fast(psi, bias, sigma):
        rotated = cov.u.mT @ psi
        return float(est._negative_log_posterior(cov, y, n_out, rotated, bias, torch.tensor(sigma, dtype=D))) * n

    def pyro_model(psi, bias, sigma):
        model = CovariateSmoother(e, n_out, C, lengthscale, sigma, min_noise)
        conditioned = pyro.poutine.condition(model.model, data={"psi": psi, "bias": bias})
        with pyro.settings.context(module_local_params=True), torch.no_grad():
            return -float(pyro.poutine.trace(conditioned).get_trace(xt, y).log_prob_sum())

    points = [
        (torch.randn(p, n_out, generator=g, dtype=D), torch.randn(n_out, generator=g, dtype=D), sigma)
        for sigma in (0.4, 0.4, 0.9)
    ]
    fast_values = [fast(*point) for point in points]
    pyro_values = [pyro_model(*point) for point in points]
    for a in range(1, 3):
        assert fast_values[a] - fast_values[0] == pytest.approx(pyro_values[a] - pyro_values[0], rel=1e-9, abs=1e-7)


def clustered_documents(n=300, p=300, h=2, words=8, seed=0):
    """Documents whose words cluster around a point in embedding space; the label is the side
    of that point: a word's class signal is shared by its embedding neighbours."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(p, h))
    rows, cols, y = [], [], []
    for i in range(n):
        centre = rng.normal(size=h)
        prob = np.exp(-((emb - centre) ** 2).sum(1) / 0.3)
        chosen = rng.choice(p, size=words, p=prob / prob.sum())
        rows += [i] * words
        cols += list(chosen)
        y.append(int(centre[0] > 0))
    x = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, p))
    x.sum_duplicates()
    return x, np.array(y), emb


def test_smoothing_helps_with_few_labels_and_needs_the_covariate_likelihood():
    x, y, emb = clustered_documents()
    train, test = slice(0, 40), slice(100, 300)
    model = GPEmbeddingLogisticRegression(embeddings=emb, random_state=0).fit(x[train], y[train])
    smoothed = np.mean(model.predict(x[test]) == y[test])
    label_only = GPEmbeddingLogisticRegression(embeddings=emb, covariate_likelihood=False, random_state=0)
    label_only.fit(x[train], y[train])

    def texts(rows):
        return [" ".join("wd" + chr(97 + j // 26) + chr(97 + j % 26) for j in row.indices) for row in rows]

    bow = BowClassifier().fit(texts(x[train]), y[train])
    bow_acc = np.mean(bow.predict(texts(x[test])) == y[test])
    assert smoothed > bow_acc + 0.08, (smoothed, bow_acc)
    assert model.noise_ > 0.1 and model.lengthscale_ > 0.1  # real smoothing
    assert label_only.noise_ < 0.05  # the label likelihood alone drifts to S = I (see the docstring)
    proba = model.predict_proba(x[test])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert set(model.top_words(3)) == {0, 1}


def glove_like(words, h=8, seed=0):
    """A WordEmbeddings table where words sharing a first letter lie close together."""
    rng = np.random.default_rng(seed)
    centres = {c: rng.normal(size=h) * 3 for c in "abcdefghijklmnopqrstuvwxyz"}
    vectors = np.stack([centres[w[0]] + 0.3 * rng.normal(size=h) for w in words])
    return WordEmbeddings("toy", list(words), vectors)


def letter_corpus(n, seed, letters_pos="pqr", letters_neg="fgh", vocab=None):
    rng = np.random.default_rng(seed)
    vocab = vocab or [a + b + c for a in letters_pos + letters_neg for b in "aeiou" for c in "klmn"]
    pos = [w for w in vocab if w[0] in letters_pos]
    neg = [w for w in vocab if w[0] in letters_neg]
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        pool = pos if label else neg
        texts.append(" ".join(rng.choice(pool, 5)))
        labels.append("pos" if label else "neg")
    return texts, np.array(labels), vocab


def test_text_input_new_words_and_estimator_conventions():
    texts, labels, vocab = letter_corpus(120, 0)
    table = glove_like(vocab + ["zzz"])
    train_words_only = Vocabulary(min_df=1).fit(texts[:12]).words  # (stop words such as "him" go)
    model = GPEmbeddingLogisticRegression(embeddings=table, random_state=0)
    assert model.fit(texts[:12], labels[:12]) is model
    assert set(model.words_) == set(train_words_only)
    assert list(model.classes_) == ["neg", "pos"]
    # test documents made only of words never seen in training: the block update gives them weights
    unseen = [w for w in vocab if w not in set(train_words_only)]
    new_docs = [" ".join([w for w in unseen if w[0] in "pqr"][:4]), " ".join([w for w in unseen if w[0] in "fgh"][:4])]
    assert list(model.predict(new_docs)) == ["pos", "neg"]
    no_new = clone(model).set_params(new_words=False).fit(texts[:12], labels[:12])
    with pytest.warns(Warning, match="neither training words"):
        assert np.allclose(no_new.predict_proba(new_docs), no_new.predict_proba(new_docs)[0])  # no information
    params = model.get_params()
    assert params["embeddings"] is table and "C" in params
    assert np.mean(model.predict(texts[12:]) == labels[12:]) > 0.9


def test_missing_words_policies():
    texts, labels, vocab = letter_corpus(60, 1)
    table = glove_like([w for w in vocab if not w.endswith("k")])
    with pytest.warns(Warning, match="no embedding and are dropped"):
        dropped = GPEmbeddingLogisticRegression(embeddings=table, random_state=0).fit(texts, labels)
    assert not any(w.endswith("k") for w in dropped.words_)
    learned = GPEmbeddingLogisticRegression(embeddings=table, missing_words="ppmi", random_state=0).fit(texts, labels)
    assert any(w.endswith("k") for w in learned.words_)
    assert np.isfinite(learned.embeddings_).all()
    # two groups of three words that co-occur within their group only
    docs = np.array(
        [
            [1, 1, 0, 0, 0, 0],
            [0, 1, 1, 0, 0, 0],
            [1, 0, 1, 0, 0, 0],
            [1, 1, 1, 0, 0, 0],
            [0, 0, 0, 1, 1, 0],
            [0, 0, 0, 0, 1, 1],
            [0, 0, 0, 1, 0, 1],
            [0, 0, 0, 1, 1, 1],
        ]
    )
    vectors = ppmi_svd_embeddings(sp.csr_matrix(docs), 2, random_state=0)
    assert vectors.shape == (6, 2)
    cos = vectors @ vectors.T / np.outer(np.linalg.norm(vectors, axis=1), np.linalg.norm(vectors, axis=1))
    assert cos[0, 1] > 0.99 and cos[0, 2] > 0.99 and abs(cos[0, 3]) < 0.01


def test_variational_predictions_are_the_posterior_expectation_of_the_sigmoid():
    """posterior="normal": with Psi ~ N(mu, diag s^2) and b ~ N(m_b, s_b^2) (AutoNormal), the
    logit of a document is Gaussian, N(x S mu + m_b, sum_j (x S)_j^2 s_j^2 + s_b^2), so its
    probability is a 1-d integral: Gauss-Hermite quadrature is the reference for the Monte
    Carlo average over ``predict_samples`` draws (4,000: standard error < 0.008)."""
    x, y, emb = clustered_documents(n=120, p=80, seed=3)
    model = GPEmbeddingLogisticRegression(
        embeddings=emb, posterior="normal", optimizer=Adam(max_iter=60), predict_samples=4000, random_state=0
    ).fit(x[:60], y[:60])
    proba = model.predict_proba(x[60:])
    assert proba.shape == (60, 2)
    np.testing.assert_allclose(proba.sum(1), 1)
    np.testing.assert_array_equal(proba, model.predict_proba(x[60:]))  # seeded: a pure function
    with torch.no_grad():
        mu, s, mb, sb = (t.detach() for name in ("psi", "bias") for t in model.guide_._get_loc_and_scale(name))
        m = model.model_
        smoothing, _ = smoothed_weights(m.embeddings, m.lengthscale, m.noise, torch.eye(80, dtype=D))
    weights_of_words = model._transform(x[60:])[0].toarray()  # tf-idf document weights, n x p
    xs = weights_of_words @ smoothing.numpy()  # n x p: the logit's coefficients on Psi
    mean = xs @ mu.numpy()[:, 0] + mb.numpy()[0]
    std = np.sqrt((xs**2) @ (s.numpy()[:, 0] ** 2) + sb.numpy()[0] ** 2)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)  # for the standard normal density
    reference = (weights * expit(mean[:, None] + std[:, None] * nodes)).sum(1) / weights.sum()
    assert std.max() > 0.05  # the posterior spread matters, so this is not the MAP in disguise
    np.testing.assert_allclose(proba[:, 1], reference, atol=0.03)
    assert np.mean(model.predict(x[60:]) == y[60:]) > 0.7


def test_variational_predictions_with_new_words_and_three_classes_in_chunks(monkeypatch):
    """The draws' path with new covariates (S' [Psi; 0], the block update) and a softmax: the logits
    of the C classes are independent Gaussians under the mean-field posterior, so a product
    Gauss-Hermite grid is the reference, for the draws taken in one chunk (one solve) and one at a
    time."""
    from lvgp.baselines import gp_embedding as module
    from lvgp.baselines.gp_embedding import extended_smoothed_weights

    rng = np.random.default_rng(5)
    groups = {"a": "pqr", "b": "fgh", "c": "stu"}
    vocab = [a + v + c for letters in groups.values() for a in letters for v in "aeiou" for c in "klmn"]
    table = glove_like(vocab, seed=1)
    seen = [w for w in vocab if w[1] in "aei"]  # the training texts use these; "o", "u" words are new
    texts, labels = [], []
    for i in range(60):
        label = "abc"[i % 3]
        texts.append(" ".join(rng.choice([w for w in seen if w[0] in groups[label]], 5)))
        labels.append(label)
    model = GPEmbeddingLogisticRegression(
        embeddings=table, posterior="normal", optimizer=Adam(max_iter=40), predict_samples=3000, random_state=0
    ).fit(texts, labels)
    new_docs = [" ".join([w for w in vocab if w[0] == letter and w[1] in "ou"][:4]) for letter in "pfs"]
    x, new_vectors = model._transform(new_docs)
    assert new_vectors is not None and len(new_vectors) > 0
    whole = model.predict_proba(new_docs)
    monkeypatch.setattr(module, "_DRAW_CHUNK_ELEMENTS", 1)  # one draw a chunk
    np.testing.assert_allclose(model.predict_proba(new_docs), whole, atol=0.03)
    m = model.model_
    with torch.no_grad():
        (mu, s), (mb, sb) = (
            (a.detach().numpy(), b.detach().numpy()) for a, b in map(model.guide_._get_loc_and_scale, ("psi", "bias"))
        )
        smoothing = extended_smoothed_weights(
            m.embeddings, new_vectors, m.lengthscale, m.noise, torch.eye(len(mu), dtype=D), model._solver
        ).numpy()  # (p + r) x p: S' [Psi; 0] = smoothing @ Psi
    xs = np.asarray(x @ smoothing)
    mean, std = xs @ mu + mb, np.sqrt((xs**2) @ (s**2) + sb**2)  # n x 3
    assert std.max() > 0.05
    nodes, weights = np.polynomial.hermite_e.hermegauss(16)
    grid = np.stack(np.meshgrid(nodes, nodes, nodes, indexing="ij"), -1).reshape(-1, 3)
    w = np.prod(np.stack(np.meshgrid(weights, weights, weights, indexing="ij"), -1).reshape(-1, 3), 1)
    logits = mean[:, None, :] + std[:, None, :] * grid[None]
    reference = (w[None, :, None] * softmax(logits, axis=2)).sum(1) / w.sum()
    np.testing.assert_allclose(whole, reference, atol=0.03)
    assert list(model.classes_[whole.argmax(1)]) == ["a", "b", "c"]


def test_a_generator_as_random_state_is_read_at_fit_only():
    """Issue 58's bug: predict_proba drew a new seed from random_state at every call, so with a
    Generator two calls differed (by up to 0.0012) and each advanced the user's generator. The seed
    of the posterior draws is drawn once, at fit, as a named child of the fit's seed."""
    x, y, emb = clustered_documents(n=80, p=40, seed=4)
    options = dict(embeddings=emb, posterior="normal", optimizer=Adam(max_iter=10), predict_samples=50)
    rng = np.random.default_rng(0)
    model = GPEmbeddingLogisticRegression(**options, random_state=rng).fit(x[:40], y[:40])
    state = rng.bit_generator.state
    first = model.predict_proba(x[40:])
    np.testing.assert_array_equal(first, model.predict_proba(x[40:]))
    assert rng.bit_generator.state == state  # predicting consumed nothing of the user's generator
    # the same Generator state at fit: the same fit and the same predictions
    again = GPEmbeddingLogisticRegression(**options, random_state=np.random.default_rng(0)).fit(x[:40], y[:40])
    np.testing.assert_array_equal(again.predict_proba(x[40:]), first)
    # an int: the fit's seed as before (derive_seed), the predictions' its named child stream
    from lvgp._random import child_seed, derive_seed

    seeded = GPEmbeddingLogisticRegression(**options, random_state=7).fit(x[:40], y[:40])
    assert seeded._prediction_seed == child_seed(derive_seed(7), "predict_proba")


def test_bad_input():
    texts, labels, vocab = letter_corpus(20, 2)
    table = glove_like(vocab)
    with pytest.raises(ValueError, match="single class"):
        GPEmbeddingLogisticRegression(embeddings=table).fit(texts, ["a"] * 20)
    with pytest.raises(ValueError, match="unknown embedding"):
        GPEmbeddingLogisticRegression(embeddings="word2vec-xyz").fit(texts, labels)
    with pytest.raises(ValueError, match="rows \\[3\\]"):
        GPEmbeddingLogisticRegression(embeddings=table).fit(texts[:3] + ["  "] + texts[4:], labels)
    with pytest.raises(ValueError, match="one label per document"):
        GPEmbeddingLogisticRegression(embeddings=table).fit(texts, labels[:5])
    with pytest.raises(TypeError, match="p x h array"):
        GPEmbeddingLogisticRegression(embeddings="glove-6b-50d").fit(sp.csr_matrix(np.eye(4)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="single class"):
        BowClassifier().fit(texts, ["a"] * 20)
    with pytest.raises(ValueError, match="empty documents"):
        BowClassifier().fit(texts[:19] + [""], labels)


def test_embedding_baselines():
    texts, labels, vocab = letter_corpus(80, 4)
    table = glove_like(vocab)
    for model in (
        MeanEmbeddingClassifier(embeddings=table),
        BagOfClustersClassifier(embeddings=table, n_clusters=6),
        BowClassifier(model="svm"),
    ):
        model.fit(texts[:40], labels[:40])
        assert np.mean(model.predict(texts[40:]) == labels[40:]) > 0.9, model
        # an empty test document is the zero feature vector: predicted, with a warning counting it
        with pytest.warns(EmptyDocumentsWarning, match="1 of 3 documents are empty"):
            pred = model.predict(texts[40:42] + [""])
        assert len(pred) == 3 and pred[-1] in model.classes_


def test_kept_empty_documents_observe_no_covariate_and_have_the_biases_as_logits():
    """``on_empty="keep"``: a training document without a covariate (an all-zero row) is out of the covariates'
    likelihood -- the direct multivariate-normal sum over the other rows -- and its label term is the softmax of
    the biases alone: the fast MAP objective on rows with zero ones added is the objective on the others plus
    those label terms, and the Pyro model's log joint agrees."""
    from lvgp.baselines.gp_embedding import EigenCovariance, _as_torch_sparse

    g = torch.Generator().manual_seed(5)
    p, n, C, lengthscale, sigma = 15, 20, 2.0, 1.1, 0.7
    e = torch.randn(p, 3, generator=g, dtype=D)
    dense = (torch.rand(n, p, generator=g, dtype=D) < 0.25).to(D)
    dense[dense.sum(1) == 0, 0] = 1.0
    y = torch.randint(0, 3, (n + 2,), generator=g)
    with_empty = torch.cat([dense[:4], torch.zeros(2, p, dtype=D), dense[4:]])  # rows 4 and 5 empty
    y_empty, y_rest = y[4:6], torch.cat([y[:4], y[6:]])
    psi, bias = torch.randn(p, 3, generator=g, dtype=D), torch.randn(3, generator=g, dtype=D)
    k = rbf_covariance(e, e, torch.tensor(lengthscale, dtype=D)) + sigma**2 * torch.eye(p, dtype=D)
    a2 = torch.einsum("ip,pq,iq->", dense, torch.linalg.inv(k), dense) / (n * p)
    direct = torch.distributions.MultivariateNormal(torch.zeros(p, dtype=D), a2 * k).log_prob(dense).sum()
    s2 = torch.tensor(sigma**2, dtype=D)
    torch.testing.assert_close(
        EigenCovariance(e, lengthscale, sp.csr_matrix(with_empty.numpy())).covariate_log_likelihood(s2), direct
    )
    torch.testing.assert_close(CovariateSmoother.covariate_log_likelihood(with_empty, torch.linalg.cholesky(k)), direct)
    est = GPEmbeddingLogisticRegression(C=C)
    est.C_ = C

    def fast(x, labels):
        cov = EigenCovariance(e, lengthscale, sp.csr_matrix(x.numpy()))
        return float(
            est._negative_log_posterior(cov, labels, 3, cov.u.mT @ psi, bias, torch.tensor(sigma, dtype=D))
        ) * len(x)

    empty_label_terms = -float(torch.log_softmax(bias, 0)[y_empty].sum())
    assert fast(with_empty, y) == pytest.approx(fast(dense, y_rest) + empty_label_terms, rel=1e-10)
    model = CovariateSmoother(e, 3, C, lengthscale, sigma)
    conditioned = pyro.poutine.condition(model.model, data={"psi": psi, "bias": bias})
    with pyro.settings.context(module_local_params=True), torch.no_grad():
        joint = [
            float(
                pyro.poutine.trace(conditioned).get_trace(_as_torch_sparse(sp.csr_matrix(x.numpy())), t).log_prob_sum()
            )
            for x, t in ((with_empty, y), (dense, y_rest))
        ]
    assert joint[0] - joint[1] == pytest.approx(-empty_label_terms, rel=1e-10)


@pytest.mark.parametrize("posterior", ["map", "normal"])
def test_on_empty_keep_fits_texts_without_a_covariate(posterior, tmp_path):
    texts, labels, vocab = letter_corpus(40, 2)
    table = glove_like(vocab)
    kept = texts[:3] + ["  ", "the and of it"] + texts[5:]  # blank, and stop words alone
    with pytest.raises(ValueError, match=r"rows \[3\].*on_empty='keep'"):
        GPEmbeddingLogisticRegression(embeddings=table).fit(kept, labels)
    with pytest.raises(ValueError, match=r"rows \[4\].*on_empty='keep'"):
        GPEmbeddingLogisticRegression(embeddings=table).fit(texts[:4] + ["the and of it"] + texts[5:], labels)
    optimizer = LBFGS(max_iter=100) if posterior == "map" else Adam(max_iter=20)
    est = GPEmbeddingLogisticRegression(
        embeddings=table, on_empty="keep", posterior=posterior, optimizer=optimizer, random_state=0
    )
    with pytest.warns(EmptyDocumentsWarning, match=r"2 of 40 training documents have no covariate .*rows \[3, 4\]"):
        est.fit(kept, labels)
    # a text without a known word: the biases alone, as at prediction time
    with pytest.warns(EmptyDocumentsWarning, match="no known word"):
        proba = est.predict_proba(["the", ""])
    if posterior == "map":
        bias = float(est.bias_[0])
        np.testing.assert_allclose(proba, [[1 - expit(bias), expit(bias)]] * 2, rtol=1e-12)
    assert np.mean(est.predict(texts[5:]) == labels[5:]) > 0.9
    est.save(tmp_path / "kept.pt")
    loaded = GPEmbeddingLogisticRegression.load(tmp_path / "kept.pt")
    assert loaded.on_empty == "keep"
    np.testing.assert_array_equal(loaded.predict_proba(texts[5:]), est.predict_proba(texts[5:]))
    counts = sp.csr_matrix(np.vstack([np.eye(6), np.zeros((1, 6)), np.eye(6)]))
    emb = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match=r"rows \[6\]"):
        GPEmbeddingLogisticRegression(embeddings=emb, C=1.0).fit(counts, [0, 1] * 6 + [0])
    with pytest.raises(ValueError, match="none of the 3 training documents"):
        GPEmbeddingLogisticRegression(embeddings=emb, C=1.0, on_empty="keep").fit(sp.csr_matrix((3, 6)), [0, 1, 0])


def test_the_convergence_warning_says_whether_the_fitted_run_or_the_search_stopped_early():
    """The warning names what stopped at ``max_iter``: the fitted length-scale's own L-BFGS run (the model is not
    at its optimum) or only runs at length-scales the search tried (the fitted one converged)."""
    from sklearn.exceptions import ConvergenceWarning

    texts, labels, vocab = letter_corpus(40, 2)
    table = glove_like(vocab)
    kept = texts[:3] + ["  ", "the and of it"] + texts[5:]

    def fit(max_iter):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = GPEmbeddingLogisticRegression(
                embeddings=table, on_empty="keep", optimizer=LBFGS(max_iter=max_iter), random_state=0
            ).fit(kept, labels)
        return model, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]

    model, messages = fit(5)
    assert not model._map_converged and len(messages) == 1 and "the MAP fit did not converge" in messages[0]
    model, messages = fit(30)
    assert model._map_converged and len(messages) == 1
    assert re.search(r"search's MAP runs stopped at max_iter=30 .* at \d+ of the length-scales", messages[0])
    model, messages = fit(300)
    assert model._map_converged and messages == []


def test_the_classification_studys_gp_embedding_keeps_texts_without_a_covariate():
    from types import SimpleNamespace

    from lvgp.experiments.registry import _METHODS

    options = SimpleNamespace(embeddings="glove-6b-50d", max_features=100, max_iter=5, cell_seed=lambda cell: 0)
    assert _METHODS["classification"]["gp-embed-logreg"].build(options, {}, None).on_empty == "keep"


def test_stratified_sample_keeps_every_class():
    labels = np.array(["a"] * 90 + ["b"] * 9 + ["c"] * 1)
    idx = stratified_sample(labels, 10, np.random.default_rng(0))
    assert len(idx) == 10 and set(labels[idx]) == {"a", "b", "c"}
    with pytest.raises(ValueError, match="exceeds"):
        stratified_sample(labels, 101, np.random.default_rng(0))


def test_dev_split_keeps_singleton_classes_in_training():
    """Singleton classes (r8's smallest at 50-200 documents) must not disable dev selection."""
    labels = np.array(list("aaaabbbbbbcd"))
    train, dev = dev_split(labels, 0)
    assert len(dev) == 3 and set(labels[dev]) == {"a", "b"} and {"c", "d"} <= set(labels[train])
    assert sorted(np.concatenate([train, dev])) == list(range(12))
    train, dev = dev_split(np.array(list("abcd")), 0)  # nothing to split: all for training
    assert len(dev) == 0 and len(train) == 4


def test_dev_split_with_more_classes_than_a_quarter_of_the_documents():
    """20ng at 50 documents: 20 classes of 2-3 documents, 25% would be 13 dev documents for 20
    classes; the dev part then takes one document of every class (and training keeps one)."""
    labels = np.repeat(np.arange(20), [3] * 10 + [2] * 10)
    train, dev = dev_split(labels, 0)
    assert len(dev) == 20 and set(labels[dev]) == set(labels[train]) == set(range(20))
    assert sorted(np.concatenate([train, dev])) == list(range(50))
    train, dev = dev_split(np.repeat(np.arange(8), [10, 8, 6, 6, 6, 6, 4, 4]), 0)  # r8-like: 25% as before
    assert len(dev) == 13
    train, dev = dev_split(np.array(list("aabbc")), 0)  # 2 classes with 2: one each way
    assert len(dev) == 2


def test_stratified_folds_keep_rare_classes_in_training():
    from sklearn.model_selection import StratifiedKFold

    labels = np.array(list("aaaaaabbbbbbbbbcddd"))  # c: a single document
    folds = stratified_folds(labels, 3, 0)
    assert len(folds) == 3
    tested = np.concatenate([te for _, te in folds])
    assert sorted(tested) == sorted(np.flatnonzero(labels != "c"))  # every other row scored once
    for train, test in folds:
        assert "c" in set(labels[train]) and not set(train) & set(test)
    assert len(stratified_folds(labels[:-1], 3, 0)) == 2  # d with two documents: two folds
    # without rare classes: exactly scikit-learn's StratifiedKFold
    balanced = np.repeat(list("abc"), 5)
    ours = stratified_folds(balanced, 3, 4)
    theirs = StratifiedKFold(3, shuffle=True, random_state=4).split(np.zeros(15), balanced)
    for (tr1, te1), (tr2, te2) in zip(ours, theirs):
        assert list(tr1) == list(tr2) and list(te1) == list(te2)
    assert stratified_folds(np.array(list("abc")), 3) == []


def test_compare_classification_cli_on_a_tsv(tmp_path):
    from lvgp.experiments.cli import main

    texts, labels, _ = letter_corpus(80, 5)
    path = tmp_path / "data.tsv"
    path.write_text("text\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in zip(texts, labels)))
    out = tmp_path / "study"
    argv = [
        "compare",
        "classification",
        "--dataset",
        str(path),
        "--train-sizes",
        "10,20",
        "--splits",
        "2",
        "--methods",
        "logreg,svm",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())
    assert len(records) == 2 * 2 * 2
    assert all({"method", "split", "train_size", "accuracy", "macro_f1"} <= set(r) for r in records)
    assert (out / "accuracy_vs_train_size.png").stat().st_size > 1000
    assert "LogReg" in (out / "table.md").read_text()
    # --report-only: tables from the finished cells, nothing run (mean-embedding shows as missing)
    cells_before = sorted(out.rglob("cells/**/*.json"))
    argv = [
        "compare",
        "classification",
        "--dataset",
        str(path),
        "--train-sizes",
        "10,20",
        "--splits",
        "2",
        "--methods",
        "logreg,svm,mean-embedding",
        "--out",
        str(out),
        "--quiet",
        "--report-only",
    ]
    assert main(argv) == 0
    assert sorted(out.rglob("cells/**/*.json")) == cells_before
    assert len(json.loads((out / "results.json").read_text())) == 8
    assert "Mean embedding" not in (out / "table.md").read_text()
    # every other classifier plugs into the same runner (one small cell each)
    others = tmp_path / "others"
    argv = [
        "compare",
        "classification",
        "--dataset",
        str(path),
        "--train-sizes",
        "16",
        "--splits",
        "1",
        "--methods",
        "slda,svm-rbf,svm-poly,latent-smm,ldk-gpc",
        # small dev grids for the LDK classifiers (the thesis's grid is 162 latent-SMM fits)
        "--latent-dims",
        "2",
        "--rhos",
        "0.1,1",
        "--gammas",
        "1",
        "--smm-cs",
        "1,8",
        "--ldk-max-iter",
        "10",
        "--out",
        str(others),
        "--quiet",
    ]
    assert main(argv) == 0
    records = json.loads((others / "results.json").read_text())
    assert sorted(r["method"] for r in records) == sorted(["slda", "svm-rbf", "svm-poly", "latent-smm", "ldk-gpc"])


def test_C_search_scores_folds_that_miss_a_class():
    """A class with two documents lands in one fold's held-out part only: that fold's training
    part lacks it. The held-out log likelihood gives it 1e-12 instead of NaN; with
    scikit-learn's neg_log_loss every C scored NaN and the search took the smallest C."""
    from sklearn.linear_model import LogisticRegression

    from lvgp.baselines.gp_embedding import heldout_log_likelihood

    rng = np.random.default_rng(0)
    y = np.array([0] * 20 + [1] * 20 + [2] * 2)
    z = rng.normal(size=(42, 5)) + 3 * np.eye(5)[np.minimum(y, 4)]
    model = LogisticRegression().fit(z[y < 2], y[y < 2])
    score = heldout_log_likelihood(model, z, y)
    expected = np.log(model.predict_proba(z[y < 2])[np.arange(40), y[y < 2]]).sum() + 2 * np.log(1e-12)
    assert np.isfinite(score) and np.isclose(score, expected)
    chooser = GPEmbeddingLogisticRegression(embeddings=np.eye(5), Cs=(0.01, 1.0, 100.0))
    assert chooser._choose_C(z, y) >= 1.0  # separable classes: not the smallest C
