"""Every LDK model with the word kernel that contains the bag of words (issue 26): each against an
independent reference where one exists (a GP regression computed by hand from the loop reference
of the kernel, the SVM on tf-idf, identical-token matching), word vectors learned from the corpus
and unlabeled documents, and the calibration metrics of the classification study."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize
from sklearn.svm import SVC

from lvgp import (
    LBFGS,
    Adam,
    GPLVSMRegressor,
    LatentSMMClassifier,
    LDKGPClassifier,
    LDKMatcher,
    MiniBatch,
    SparseGPLVSMRegressor,
)
from lvgp.base.embeddings import CombinedEmbeddings, corpus_embeddings
from lvgp.base.metrics import expected_calibration_error, log_loss, reliability_bins, reliability_curve
from lvgp.bow.padded import padded_to_counts
from lvgp.bow.vocabulary import Vocabulary
from lvgp.bow.weighting import idf_weights
from lvgp.datasets import WordEmbeddings
from lvgp.kernels import LDKSpec
from lvgp.kernels.random_features import balanced_identity_weight
from lvgp.warnings import UnseenWordsWarning

from . import reference as ref

POS, NEG = "good great fine nice superb".split(), "bad awful poor dull terrible".split()
NEUTRAL = "film plot acting music story scene cast".split()


def reviews(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    texts = [" ".join(rng.choice(POS if label else NEG, 2).tolist() + rng.choice(NEUTRAL, 4).tolist()) for label in y]
    return texts, y


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def test_gplvsm_with_the_identity_part_predicts_the_gp_of_its_kernel():
    """Eqs. 19 and 21 computed by hand from the loop reference of the combined word kernel (idf
    weights, lambda fitted) equal the estimator's predictions."""
    texts, y = reviews(30)
    reg = GPLVSMRegressor(
        LDKSpec(word_weighting="idf", identity_weight=0.5), optimizer=LBFGS(max_iter=15), random_state=0
    ).fit(texts, y)
    ldk = reg.model_.ldk
    assert ldk.has_identity and abs(ldk.identity_weight.item() - 0.5) > 1e-6  # fitted, not left where it started
    x = reg._encoder.transform(texts)
    test = ["great film", "awful plot acting", "superb superb music"]
    xs = reg._encoder.transform(test)
    X = ldk.latent.detach().numpy()
    hp = dict(gamma=ldk.gamma.item(), weights=ldk.word_weights.numpy(), identity=ldk.identity_weight.item())
    k_train = ref.ldk_gram(X, x.numpy(), x.numpy(), "rbf", "linear", **hp)
    k_cross = ref.ldk_gram(X, xs.numpy(), x.numpy(), "rbf", "linear", **hp)
    k_test = np.diag(ref.ldk_gram(X, xs.numpy(), xs.numpy(), "rbf", "linear", **hp))
    targets = (y - reg.y_mean_) / reg.y_std_
    mean, var = ref.gp_predict(
        k_train,
        k_cross,
        k_test,
        targets,
        reg.model_.covar_module.outputscale.item(),
        reg.likelihood_.noise.item(),
        reg.model_.mean_module.constant.item(),
    )
    pred, std = reg.predict(test, return_std=True)
    np.testing.assert_allclose(pred, mean * reg.y_std_ + reg.y_mean_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(std, np.sqrt(var) * reg.y_std_, rtol=1e-7, atol=1e-8)


def test_balanced_start_weighs_both_parts_alike(monkeypatch):
    texts, y = reviews(20)
    reg = GPLVSMRegressor(LDKSpec(identity_weight="balanced"), optimizer=LBFGS(max_iter=1), random_state=0)
    model = reg.fit(texts, y).model_  # one iteration: lambda near its start
    ldk = model.ldk
    x = reg._encoder.transform(texts)
    with torch.no_grad():
        from lvgp.kernels.mean_embedding import DocumentSet, bag_of_words_self

        documents = DocumentSet(*ldk._weights(x, torch.float64))
        latent = ldk._latent_self(documents, ldk.latent).mean()
        bow = bag_of_words_self(documents).mean()
    assert balanced_identity_weight(ldk, x) == pytest.approx(float(latent / bow))
    # over many documents: the means of every k-th one (its cost flat in n)
    from lvgp.kernels import random_features

    monkeypatch.setattr(random_features, "_BALANCE_DOCUMENTS", 7)
    assert balanced_identity_weight(ldk, x) == balanced_identity_weight(ldk, x[::3])
    monkeypatch.undo()
    with pytest.raises(ValueError, match="identity_weight must be None or a finite real number > 0 or 'balanced'"):
        GPLVSMRegressor(LDKSpec(identity_weight="half")).fit(texts, y)
    with pytest.raises(ValueError, match="identity_weight must be > 0"):
        GPLVSMRegressor(LDKSpec(identity_weight=0.0)).fit(texts, y)


def test_sparse_and_gp_classifier_fit_lambda_by_their_objectives():
    texts, y = reviews(40)
    sparse = SparseGPLVSMRegressor(
        LDKSpec(word_weighting="idf", identity_weight=1.0), optimizer=MiniBatch(max_steps=40), random_state=0
    ).fit(texts, y.astype(float))
    kernel = sparse.model_.covar_module.base_kernel
    assert kernel.has_identity and kernel.word_weights is not None
    assert abs(kernel.identity_weight.item() - 1.0) > 1e-4 and np.isfinite(sparse.predict(texts[:5])).all()
    gpc = LDKGPClassifier(
        LDKSpec(rho=0.1, embedding="linear", level2="cosine", identity_weight=1.0),
        optimizer=LBFGS(max_iter=20),
        random_state=0,
    )
    gpc.fit(texts, y)
    assert gpc.kernel_kind_ == "exact" and abs(gpc.model_.ldk.identity_weight.item() - 1.0) > 1e-4
    proba = gpc.predict_proba(texts[:7])
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    assert (gpc.predict(texts) == y).mean() > 0.9


def test_latent_smm_in_the_bag_of_words_limit_is_the_svm_on_tfidf():
    """Closed form: with lambda = 1e8 and the cosine level-2 kernel the latent part is negligible,
    and lambda stays where it was put (it is chosen on dev, not by the min-max objective): the latent
    SMM is LIBSVM on the cosine kernel of L2-normalized tf-idf vectors."""
    texts, y = reviews(40, seed=3)
    smm = LatentSMMClassifier(
        LDKSpec(rho=0.1, embedding="linear", level2="cosine", word_weighting="idf", identity_weight=1e8),
        C=2.0,
        optimizer=LBFGS(max_iter=5),
        random_state=0,
    ).fit(texts, y)
    assert smm.kernel_.identity_weight.item() == pytest.approx(1e8)
    x = smm.encoder_.transform(texts)
    counts = padded_to_counts(x, smm.encoder_.num_words)
    tfidf = normalize(TfidfTransformer().fit_transform(counts))
    gram = (tfidf @ tfidf.T).toarray()
    svm = SVC(C=2.0, kernel="precomputed", decision_function_shape="ovo", tol=smm.svm_tol).fit(gram, y)
    np.testing.assert_allclose(smm.decision_function(texts), -svm.decision_function(gram)[:, None], atol=1e-4)
    np.testing.assert_array_equal(smm.predict(texts), svm.predict(gram))


def test_matching_identity_part_acts_on_tied_tokens():
    """With tied tokens the identity word kernel compares a source and a target document through
    their shared tokens: identical token lists match perfectly. Without tying, the two sides share
    no ids, and the identity part cannot link them."""
    texts, _ = reviews(30, seed=4)
    tied = LDKMatcher(
        LDKSpec(latent_dim=2, rho=0.01, identity_weight=1.0),
        tie_identical_tokens=True,
        optimizer=LBFGS(max_iter=20),
        random_state=0,
    )
    tied.fit(texts, texts)
    assert tied.kernel_.has_identity and abs(tied.kernel_.identity_weight.item() - 1.0) > 1e-4
    assert (tied.true_target_ranks(texts, texts) == 0).mean() > 0.8
    # the identity part alone: zero latent vectors, and the distance of identical documents is zero
    with torch.no_grad():
        tied.kernel_.word_vectors.raw_latent.zero_()
        d = tied.distances(texts[:5], texts[:5])
    assert np.allclose(np.diag(d), 0.0, atol=1e-12) and (d + np.eye(5) > 1e-6).all()
    untied = LDKMatcher(
        LDKSpec(latent_dim=2, rho=0.01, identity_weight=1.0), optimizer=LBFGS(max_iter=1), random_state=0
    ).fit(texts, texts)
    assert untied.shared_tokens_ == 0
    with torch.no_grad():
        untied.kernel_.word_vectors.raw_latent.zero_()
        d = untied.distances(texts[:5], texts[:5])
    # no cross term: d(i, j) = |phi_i|^2 + |phi_j|^2, the sides share no word ids
    np.testing.assert_allclose(d - d[:, :1] - d[:1, :] + d[0, 0], 0.0, atol=1e-12)


def test_matching_in_the_rkhs_of_the_cosine_kernel_ranks_by_the_kernel():
    """level2="cosine" with the separate identity part: d(s, t) = K(s, s) + K(t, t) - 2 K(s, t) of the
    whole document kernel (loop reference), which is 2 (1 + lambda) - 2 K(s, t) for non-empty
    documents -- no length penalty from words the other side cannot share; the linear level 2 keeps
    the squared MMD."""
    texts, _ = reviews(30, seed=6)
    options = dict(tie_identical_tokens=True, optimizer=LBFGS(max_iter=5), random_state=0, dtype="float64")
    spec = LDKSpec(latent_dim=2, rho=0.01, word_weighting="idf")
    cosine = LDKMatcher(spec.replace(level2="cosine", identity_weight=0.7, identity_form="separate"), **options).fit(
        texts, texts
    )
    kernel = cosine.kernel_
    xs, xt = cosine._encode(texts[:6], texts[:6])
    X = kernel.latent.detach().numpy()
    hp = dict(
        gamma=kernel.gamma.item(),
        weights=kernel.word_weights.numpy(),
        identity=kernel.identity_weight.item(),
        identity_form="separate",
    )
    cross = ref.ldk_gram(X, xs.numpy(), xt.numpy(), "rbf", "cosine", **hp)
    lam = kernel.identity_weight.item()
    np.testing.assert_allclose(cosine.distances(texts[:6], texts[:6]), 2 * (1 + lam) - 2 * cross, atol=1e-10)
    fixed = LDKMatcher(
        LDKSpec(latent_dim=8, rho=0.01, level2="cosine", identity_weight=0.7, identity_form="separate"),
        **options,
        learn_identity_weight=False,
    )
    assert fixed.fit(texts, texts).kernel_.identity_weight.item() == pytest.approx(0.7)  # chosen on dev, not fitted
    linear = LDKMatcher(LDKSpec(latent_dim=8, rho=0.01, identity_weight=0.7), **options).fit(texts, texts)
    xs, xt = linear._encode(texts[:6], texts[:6])
    with torch.no_grad():
        np.testing.assert_allclose(
            linear.distances(texts[:6], texts[:6]), linear.kernel_.squared_mmd(xs, xt).numpy(), atol=1e-12
        )


def test_corpus_embeddings_cover_words_of_the_unlabeled_documents():
    texts, y = reviews(40)
    extra = ["the soundtrack was superb", "a dreadful soundtrack", "dreadful acting and a dreadful plot"] * 5
    vocab = Vocabulary().fit(texts)
    table = corpus_embeddings(texts + extra, vocab, dim=4)
    assert "dreadful" in table and "soundtrack" in table and "dreadful" not in vocab
    assert set(vocab.words) <= set(table.words) | {w for w in vocab.words if w not in table}
    reg = GPLVSMRegressor(LDKSpec(word_embeddings="corpus"), optimizer=LBFGS(max_iter=5), random_state=0)
    reg.fit(texts, y.astype(float), unlabeled=extra)
    assert reg._encoder.n_unlabeled == len(extra) and reg._encoder.word_features is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg.predict(["dreadful soundtrack"])  # both words only in the unlabeled documents: they have vectors
    assert not [w for w in caught if issubclass(w.category, UnseenWordsWarning)]
    # several tables side by side: dimensions add up, a word found in either is found
    own = WordEmbeddings("own", POS, np.eye(5))
    both = GPLVSMRegressor(LDKSpec(word_embeddings=("corpus", own)), optimizer=LBFGS(max_iter=3), random_state=0)
    both.fit(texts, y.astype(float), unlabeled=extra)
    assert isinstance(both._encoder.embeddings, CombinedEmbeddings)
    assert both._encoder.word_features.shape[1] == both._encoder.embeddings.dim
    with pytest.warns(UserWarning, match="unlabeled documents are not used"):
        GPLVSMRegressor(optimizer=Adam(max_iter=2), random_state=0).fit(texts, y.astype(float), unlabeled=extra)


def test_a_model_with_corpus_vectors_reloads_and_refits(tmp_path):
    texts, y = reviews(30)
    extra = ["the soundtrack was superb", "a dreadful soundtrack"] * 5
    own = WordEmbeddings("own", POS + NEG, np.random.default_rng(0).normal(size=(10, 3)))
    reg = GPLVSMRegressor(LDKSpec(word_embeddings=("corpus", own)), optimizer=LBFGS(max_iter=3), random_state=0)
    reg.fit(texts, y.astype(float), unlabeled=extra)
    reg.save(tmp_path / "m.pt")
    again = GPLVSMRegressor.load(tmp_path / "m.pt")
    test = ["dreadful soundtrack", "great film"]
    np.testing.assert_array_equal(again.predict(test), reg.predict(test))
    embeddings = again.kernel.word_embeddings
    assert embeddings[0] == "corpus" and embeddings[1].words == own.words
    refit = clone(again).fit(texts, y.astype(float), unlabeled=extra)
    np.testing.assert_allclose(refit.predict(test), reg.predict(test), rtol=1e-10)


def test_calibration_metrics_closed_forms():
    classes = np.array(["a", "b"])
    proba = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    y = np.array(["a", "b", "b", "b"])
    assert log_loss(proba, classes, y) == pytest.approx(-np.mean(np.log([0.9, 0.2, 0.7, 0.4])))
    bins = reliability_bins(proba, classes, y, bins=5)
    # confidences 0.9 (right), 0.8 (wrong), 0.7 (right), 0.6 (wrong): bins [0.8,1): 2, [0.6,0.8): 2
    assert bins["count"] == [0, 0, 0, 2, 2]
    expected = (abs(0.9 + 0.8 - 1) + abs(0.7 + 0.6 - 1)) / 4
    assert expected_calibration_error(bins) == pytest.approx(expected)
    assert log_loss(np.array([[1.0, 0.0]]), classes, np.array(["c"])) == pytest.approx(-np.log(1e-300))
    # two samples pooled: the mean confidence and the accuracy of each non-empty bin
    confidence, accuracy = reliability_curve([bins, reliability_bins(proba[:1], classes, y[:1], bins=5)])
    np.testing.assert_allclose(confidence, [(0.7 + 0.6) / 2, (0.9 + 0.8 + 0.9) / 3])
    np.testing.assert_allclose(accuracy, [1 / 2, 2 / 3])
    # integer weights: each document repeated that many times
    weights = np.array([2, 0, 1, 3])
    repeated = reliability_bins(np.repeat(proba, weights, axis=0), classes, np.repeat(y, weights), bins=5)
    weighted = reliability_bins(proba, classes, y, bins=5, sample_weight=weights)
    for key in ("count", "confidence", "correct"):
        np.testing.assert_allclose(weighted[key], repeated[key])
    assert expected_calibration_error(weighted) == pytest.approx(expected_calibration_error(repeated))
    with pytest.raises(ValueError, match="sample_weight"):
        reliability_bins(proba, classes, y, sample_weight=[1.0, -1.0, 1.0, 1.0])


def test_the_svm_baselines_probabilities_are_platts_and_its_predictions_its_own():
    from lvgp.baselines.text_classifiers import BowClassifier

    texts, y = reviews(60, seed=5)
    labels = np.where(y == 1, "pos", np.where(np.arange(60) % 3 == 0, "neu", "neg"))
    svm = BowClassifier("svm", random_state=0).fit(texts, labels)
    test = texts[:20]
    proba = svm.predict_proba(test)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(svm.predict(test), svm.model_.predict(svm._features(test)))
    assert list(svm.calibrated_.classes_) == list(svm.classes_)


def test_unlabeled_pool_holds_neither_training_nor_test_documents(tmp_path):
    from lvgp.experiments.classification import ClassificationStudy, _sample, unlabeled_pool

    rng = np.random.default_rng(0)
    lines = ["text\tlabel"] + [f"{' '.join(rng.choice(POS + NEG + NEUTRAL, 5))} d{i}\t{'ab'[i % 2]}" for i in range(60)]
    (tmp_path / "c.tsv").write_text("\n".join(lines) + "\n")
    study = ClassificationStudy(dataset=str(tmp_path / "c.tsv"), train_sizes=(10,), test_size=20, unlabeled="pool")
    _, texts, _, train, test = _sample(study, 0, 10)
    pool = unlabeled_pool(study, 0, 10)
    assert len(pool) == 60 - 10 - 20
    assert not set(pool) & ({texts[i] for i in train} | {texts[i] for i in test})


def test_idf_weights_are_scikit_learns():
    texts, _ = reviews(25)
    vocab = Vocabulary().fit(texts)
    x = vocab.encode(texts)
    np.testing.assert_allclose(idf_weights(x, len(vocab)), TfidfTransformer().fit(vocab.counts(texts)).idf_)


EMBEDDED = WordEmbeddings(
    "toy", POS + NEG + NEUTRAL, np.random.default_rng(5).normal(size=(len(POS + NEG + NEUTRAL), 4))
)


@pytest.mark.parametrize(
    "make",
    [
        lambda spec: GPLVSMRegressor(spec, optimizer=LBFGS(max_iter=5), random_state=0),
        lambda spec: SparseGPLVSMRegressor(spec, optimizer=MiniBatch(max_steps=5), num_inducing=8, random_state=0),
        lambda spec: LDKGPClassifier(spec, optimizer=LBFGS(max_iter=5), random_state=0),
        lambda spec: LatentSMMClassifier(spec.replace(embedding="linear"), optimizer=LBFGS(max_iter=5), random_state=0),
    ],
    ids=["GPLVSMRegressor", "SparseGPLVSMRegressor", "LDKGPClassifier", "LatentSMMClassifier"],
)
def test_fixed_word_vectors_are_the_embeddings_and_stay(make, tmp_path):
    """learn_word_vectors=False: the kernel's word vectors are the pretrained embeddings themselves,
    rescaled by one number (latent_dim is theirs), and fitting leaves them where they were; without
    embeddings there is nothing to fix them to."""
    texts, y = reviews(30, seed=2)
    model = make(LDKSpec(word_embeddings=EMBEDDED, learn_word_vectors=False, latent_dim=2))
    model.fit(texts, y.astype(float) if "Regressor" in type(model).__name__ else y)
    vectors = model.word_vectors_
    encoder = getattr(model, "encoder_", None) or getattr(model, "_encoder", None)
    words = encoder.vocabulary.words
    table = EMBEDDED.vectors[[EMBEDDED.index[w] for w in words]]
    assert vectors.shape == (len(words), 4)
    ratio = vectors / table
    np.testing.assert_allclose(ratio, ratio.flat[0], rtol=1e-10)  # one scale for every word and coordinate
    kernel = next(m for m in model.__dict__.values() if isinstance(m, torch.nn.Module)).modules()
    word_vectors = next(m for m in kernel if hasattr(m, "trainable"))
    assert not word_vectors.trainable and not any(p.requires_grad for p in word_vectors.parameters())
    with pytest.raises(ValueError, match="learn_word_vectors=False fixes the word vectors to pretrained embeddings"):
        make(LDKSpec(learn_word_vectors=False)).fit(texts, y)


def test_shared_class_hyperparameters_give_the_sum_of_the_classes_exact_gps():
    """class_hyperparameters="shared": one output scale and one additional noise for every class; the
    objective is then the sum over classes of exact GP log likelihoods computed by hand (numpy) from
    the kernel's Gram, the classes' Dirichlet targets and noises."""
    texts, y = reviews(24, seed=4)
    y = np.array(["a", "b", "c"])[np.arange(24) % 3]
    gpc = LDKGPClassifier(
        LDKSpec(
            rho=0.1,
            embedding="linear",
            level2="cosine",
            word_embeddings=EMBEDDED,
            learn_word_vectors=False,
            identity_weight="balanced",
            identity_form="separate",
        ),
        class_hyperparameters="shared",
        alpha_epsilon=1e-6,
        optimizer=LBFGS(max_iter=10),
        random_state=0,
    ).fit(texts, y)
    model, likelihood = gpc.model_, gpc.likelihood_
    assert model.covar_module.outputscale.numel() == 1 and likelihood.second_noise.numel() == 1
    x = model.train_inputs[0]
    with torch.no_grad():
        gram = model.covar_module.base_kernel(x).to_dense().numpy() * model.covar_module.outputscale.item()
        targets = likelihood.transformed_targets.numpy()
        fixed = likelihood.noise_covar.noise.numpy()  # C x n, the Dirichlet moment-matched noise
        means = model.mean_module.constant.numpy().ravel()
        extra = likelihood.second_noise.item()
        expected = 0.0
        for c in range(3):
            cov = gram + np.diag(fixed[c] + extra)
            r = targets[c] - means[c]
            sign, logdet = np.linalg.slogdet(cov)
            expected += -0.5 * r @ np.linalg.solve(cov, r) - 0.5 * logdet - 0.5 * len(r) * np.log(2 * np.pi)
        model.train(), likelihood.train()
        got = likelihood(model(x)).log_prob(likelihood.transformed_targets).sum().item()
        model.eval(), likelihood.eval()
    assert got == pytest.approx(expected, rel=1e-10)
    np.testing.assert_allclose(gpc.predict_proba(texts).sum(1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="class_hyperparameters must be one of"):
        LDKGPClassifier(class_hyperparameters="pooled").fit(texts, y)


def test_corpus_vectors_are_learned_once_per_set_of_documents():
    """A grid of fits on the same documents (a dev selection) learns the corpus vectors once: the
    same inputs give the same table object; other documents or settings, another table."""
    texts, _ = reviews(40, seed=7)
    vocab = Vocabulary(stop_words=None).fit(texts)
    first = corpus_embeddings(texts, vocab, dim=3)
    assert corpus_embeddings(list(texts), vocab, dim=3) is first
    assert corpus_embeddings(texts[:-1], vocab, dim=3) is not first
    assert corpus_embeddings(texts, vocab, dim=2) is not first


@pytest.mark.parametrize("inference", ["dirichlet", "variational"])
def test_a_prior_on_lambda_joins_the_gp_classifiers_objective(inference):
    """identity_weight_prior_sd: a log-normal prior on lambda around its start enters the
    objective (MAP-II): a tight prior holds lambda at its start, which the marginal likelihood alone
    moves; the log prior is exactly gpytorch's LogNormal density."""
    from gpytorch.priors import LogNormalPrior

    from lvgp.base.fitting import log_prior

    texts, y = reviews(40)
    spec = LDKSpec(rho=0.1, identity_weight=1.0, embedding="linear", level2="cosine")
    optimizer = MiniBatch(max_epochs=30) if inference == "variational" else LBFGS(max_iter=30)
    options = dict(inference=inference, random_state=0, optimizer=optimizer)
    free = LDKGPClassifier(spec, **options).fit(texts, y)
    held = LDKGPClassifier(spec.replace(identity_weight_prior_sd=1e-4), **options).fit(texts, y)
    assert abs(free.model_.covar_module.base_kernel.identity_weight.item() - 1.0) > 1e-3
    kernel = held.model_.covar_module.base_kernel
    assert abs(kernel.identity_weight.item() - 1.0) < 1e-3
    prior = kernel.identity_weight_prior  # centred at the start: log 1 = 0, to the constraint's rounding
    assert abs(prior.loc.item()) < 1e-6 and prior.scale.item() == pytest.approx(1e-4)
    expected = LogNormalPrior(prior.loc, torch.full_like(prior.loc, 1e-4)).log_prob(kernel.identity_weight).sum()
    torch.testing.assert_close(log_prior(held.model_, exclude=kernel.word_vectors), expected)
    free_kernel = free.model_.covar_module.base_kernel
    assert log_prior(free.model_, exclude=free_kernel.word_vectors).item() == 0.0  # the word vectors' own prior aside
    with pytest.raises(ValueError, match="identity_weight_prior_sd needs identity_weight"):
        LDKGPClassifier(LDKSpec(rho=0.1, identity_weight_prior_sd=1.0), optimizer=LBFGS(max_iter=2)).fit(texts, y)
