"""GP classification with LDK.

Dirichlet inference: the transformed labels and noise are Milios et al.'s closed forms, the
objective is the sum of the classes' exact log marginal likelihoods (against a numpy
reference on the loop LDK) plus the word vectors' log prior once, multi-class accuracy on a
synthetic task, deterministic probabilities. Variational inference: binary probabilities
calibrated on a task whose true class probabilities are known, multi-class softmax against
gpytorch's own marginal. Early stopping: the held-out score against a fit rebuilt by hand,
the final model against a plain fit with the chosen budget. Bad input."""

from __future__ import annotations

import math
import warnings

import gpytorch
import numpy as np
import pytest
import sklearn
import torch
from sklearn.exceptions import ConvergenceWarning

from lvgp import LBFGS, EarlyStopping, MiniBatch, Vocabulary
from lvgp.datasets import make_synonym_regression, synonym_embeddings
from lvgp.kernels import LDKSpec
from lvgp.kernels.spec import tied_projection_scale
from lvgp.models.gpc import LDKGPClassifier
from lvgp.warnings import UnseenWordsWarning

from . import reference as ref


def calibrated_task(n, seed):
    """Labels drawn from p(y=1 | doc) = sigmoid(3 * standardized score): known probabilities."""
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=seed)
    score = (corpus.y - corpus.y.mean()) / corpus.y.std()
    p = 1 / (1 + np.exp(-3 * score))
    y = (np.random.default_rng(seed).random(n) < p).astype(int)
    return corpus.texts, y, p


def three_classes(n, seed):
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=seed)
    return corpus.texts, np.digitize(corpus.y, np.quantile(corpus.y, [1 / 3, 2 / 3]))


def test_dirichlet_objective_is_the_sum_of_exact_marginal_likelihoods_plus_the_prior():
    x, y = three_classes(30, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.5), optimizer=LBFGS(max_iter=3), random_state=0).fit(x, y)
    lik, model = clf.likelihood_, clf.model_
    codes = np.searchsorted(clf.classes_, y)
    # Milios et al. (2018): alpha = 1[y = c] + eps, sigma^2 = log(1 / alpha + 1), y~ = log alpha - sigma^2 / 2
    alpha = np.where(np.arange(3)[None, :] == codes[:, None], 1.01, 0.01)
    sigma2 = np.log(1 / alpha + 1)
    np.testing.assert_allclose(lik.transformed_targets.numpy(), (np.log(alpha) - sigma2 / 2).T, rtol=1e-12)
    extra = lik.second_noise.detach().numpy().reshape(3, 1)  # learned per class
    np.testing.assert_allclose(lik.noise.detach().numpy() - extra, sigma2.T, rtol=1e-10)
    # the objective: sum_c log N(y~_c | m_c, s_c K + diag(sigma2_c) + s2_c) - rho/2 ||X||^2 (once)
    train = model.train_inputs[0]
    vectors = model.ldk.latent.detach().numpy()
    K = ref.ldk_gram(vectors, train.numpy(), train.numpy(), "rbf", "linear", gamma=model.ldk.gamma.item())
    total = 0.0
    for c in range(3):
        cov = model.covar_module.outputscale[c].item() * K + np.diag(sigma2[:, c] + extra[c, 0])
        diff = lik.transformed_targets[c].numpy() - model.mean_module.constant[c].item()
        _, logdet = np.linalg.slogdet(cov)
        total += -0.5 * (diff @ np.linalg.solve(cov, diff) + logdet + 30 * math.log(2 * math.pi))
    total -= 0.5 * 0.5 * (model.ldk.word_vectors.residual.detach().numpy() ** 2).sum()
    model.train()
    lik.train()
    with torch.no_grad():
        ours = lik(model(train)).log_prob(lik.transformed_targets).sum() - model.ldk.word_vectors.penalty()
    assert abs(ours.item() - total) < 1e-8 * abs(total)


@pytest.mark.parametrize("alpha_epsilon", [0.01, 1e-6])
def test_shared_dirichlet_evidence_is_gpytorchs_per_class_evidence_with_its_gradients(alpha_epsilon):
    """One factorization for all classes (lvgp.models.dirichlet, Woodbury and the determinant lemma)
    against gpytorch's batched log probability, which factors each class's covariance: the values and
    every parameter's gradient, at a fitted point and with unequal classes (one of a single document)."""
    from lvgp.models.dirichlet import shared_dirichlet_log_evidence

    x, y = three_classes(40, 5)
    y = np.where(np.arange(40) == 7, 3, y)  # a fourth class of one document
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=0.5),
            class_hyperparameters="shared",
            alpha_epsilon=alpha_epsilon,
            optimizer=LBFGS(max_iter=5),
            random_state=0,
        ).fit(x, y)
    model, lik = clf.model_, clf.likelihood_
    model.train()
    lik.train()
    train = model.train_inputs[0]
    params = [p for p in model.parameters() if p.requires_grad] + [p for p in lik.parameters() if p.requires_grad]

    def grads(value):
        return torch.autograd.grad(value, params, allow_unused=True)

    reference = lik(model(train)).log_prob(lik.transformed_targets).sum()
    ours = shared_dirichlet_log_evidence(
        model.covar_module(train).to_dense(),
        model.mean_module.constant.reshape(-1),
        lik.noise_covar.noise + lik.second_noise_covar.noise,
        lik.transformed_targets,
    )
    assert ours.item() == pytest.approx(reference.item(), rel=1e-10)
    for a, b in zip(grads(ours), grads(reference)):
        if a is None or b is None:
            assert a is None and b is None
            continue
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="must be n x n, C, C x n and C x n"):
        shared_dirichlet_log_evidence(torch.eye(3), torch.zeros(2), torch.ones(2, 4), torch.ones(2, 4))


@pytest.mark.parametrize("group_entries", [2**24, 40])
def test_shared_dirichlet_evidence_gradient_is_finite_differences_and_a_per_class_loop(monkeypatch, group_entries):
    """The closed-form gradient of the shared evidence (lvgp.models.dirichlet._SharedEvidence) against
    finite differences in every argument (gradcheck), and the value against a slow loop of one dense
    Gaussian a class; classes of unequal sizes (one of a single document, one with none), in one padded
    group of classes or, with a tiny budget, one class a group."""
    from lvgp.models import dirichlet

    monkeypatch.setattr(dirichlet, "_GROUP_ENTRIES", group_entries)
    g = torch.Generator().manual_seed(3)
    n, C = 9, 4
    F = torch.randn(n, 3, generator=g, dtype=torch.float64)
    K = (F @ F.mT + 0.1 * torch.eye(n, dtype=torch.float64)).requires_grad_()
    codes = torch.tensor([0, 0, 0, 0, 1, 1, 2, 0, 1])  # class 3 has no document
    noise = torch.full((C, n), 0.9, dtype=torch.float64)
    noise[codes, torch.arange(n)] = 0.3 + 0.05 * torch.arange(n, dtype=torch.float64)
    noise.requires_grad_()
    means = torch.randn(C, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randn(C, n, generator=g, dtype=torch.float64, requires_grad=True)
    value = dirichlet.shared_dirichlet_log_evidence(K, means, noise, targets)
    reference = 0.0
    for c in range(C):
        cov = K.detach() + torch.diag(noise[c].detach())
        reference += (
            torch.distributions.MultivariateNormal(means[c].detach().expand(n), cov)
            .log_prob(targets[c].detach())
            .item()
        )
    assert value.item() == pytest.approx(reference, rel=1e-12)

    def evidence(K, means, noise, targets):
        return dirichlet.shared_dirichlet_log_evidence((K + K.mT) / 2, means, noise, targets)

    assert torch.autograd.gradcheck(evidence, (K, means, noise, targets), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_the_evidence_of_a_subset_fits_the_subsets_hyperparameters_and_conditions_on_every_document(tmp_path):
    """max_evidence_documents: the hyper-parameters are a fit's on the stratified subset alone (a kernel
    with no data-dependent part and no prior, the additional noise's too: the scaled objective is the subset's own
    per document),
    the posterior conditions on all documents; the subset is stratified, of the asked size and
    reproducible; m >= n changes nothing; it needs the shared Dirichlet inference."""
    from lvgp import BagOfWordsKernel

    texts, y = three_classes(60, 4)
    vocab = Vocabulary().fit(texts)

    def classifier(**options):
        return LDKGPClassifier(
            lambda num_words: BagOfWordsKernel(num_words, "cosine"),
            vocabulary=vocab,
            class_hyperparameters="shared",
            optimizer=LBFGS(max_iter=15),
            noise_prior_sd=None,
            random_state=0,
            **options,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        subset = classifier(max_evidence_documents=20).fit(texts, y)
        rows = subset.evidence_documents_
        alone = classifier().fit([texts[i] for i in rows], y[rows])
        every = classifier().fit(texts, y)
        same = classifier(max_evidence_documents=60).fit(texts, y)
    assert len(rows) == 20 and len(set(rows.tolist())) == 20
    assert sorted(np.bincount(y[rows]).tolist()) == sorted(np.round(np.bincount(y) * 20 / 60).astype(int).tolist())
    assert np.array_equal(classifier(max_evidence_documents=20).fit(texts, y).evidence_documents_, rows)
    fitted = dict(subset.model_.named_parameters()) | dict(subset.likelihood_.named_parameters())
    reference = dict(alone.model_.named_parameters()) | dict(alone.likelihood_.named_parameters())
    for name, value in reference.items():
        np.testing.assert_allclose(fitted[name].detach().numpy(), value.detach().numpy(), rtol=1e-6, atol=1e-8)
    # the posterior: every training document, not the subset's
    assert subset._posterior().alpha.shape == (60, 3)
    assert not np.allclose(subset.predict_proba(texts), alone.predict_proba(texts))
    assert same.evidence_documents_ is None
    np.testing.assert_array_equal(same.predict_proba(texts), every.predict_proba(texts))
    subset.save(tmp_path / "subset.pt")
    loaded = LDKGPClassifier.load(
        tmp_path / "subset.pt", kernel=lambda num_words: BagOfWordsKernel(num_words, "cosine")
    )
    np.testing.assert_array_equal(loaded.evidence_documents_, rows)
    with pytest.raises(ValueError, match="max_evidence_documents needs inference=.laplace., or .dirichlet. with"):
        LDKGPClassifier(max_evidence_documents=20).fit(texts, y)
    with pytest.raises(ValueError, match="max_evidence_documents"):
        classifier(max_evidence_documents=1).fit(texts, y)


def test_the_posterior_is_computed_once_for_the_temperature_and_the_predictions(monkeypatch):
    """The shared Dirichlet posterior (one factorization) is kept from the temperature's leave-one-out
    predictions to every predict_proba, to the same probabilities as one computed afresh; a changed
    parameter, a new fit, a pickle drop it."""
    import copy
    import pickle

    from lvgp.models.gpc.inference import DirichletInference

    texts, y = three_classes(45, 8)
    calls = []
    computed = DirichletInference.posterior

    def counted(self, est):
        calls.append(1)
        return computed(self, est)

    monkeypatch.setattr(DirichletInference, "posterior", counted)
    clf = LDKGPClassifier(
        LDKSpec(latent_dim=2, rho=0.5),
        class_hyperparameters="shared",
        calibration="temperature",
        optimizer=LBFGS(max_iter=8),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(texts, y)
    assert len(calls) == 1  # the temperature's leave-one-out predictions
    proba = clf.predict_proba(texts)
    again = clf.predict_proba(texts)
    assert len(calls) == 1
    np.testing.assert_array_equal(proba, again)
    clf._kept_posterior.clear()
    np.testing.assert_array_equal(clf.predict_proba(texts), proba)  # afresh: the same bits
    assert len(calls) == 2
    assert clf._kept_posterior.value is not None
    assert pickle.loads(pickle.dumps(clf))._kept_posterior.value is None
    assert copy.deepcopy(clf)._kept_posterior.value is None
    with torch.no_grad():
        clf.model_.covar_module.raw_outputscale.add_(0.5)
    changed = clf.predict_proba(texts)
    assert len(calls) == 3 and not np.allclose(changed, proba)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(texts[:30], y[:30])
    assert len(calls) == 4  # a new fit, a new posterior
    assert clf._posterior().alpha.shape == (30, 3)


def test_shared_dirichlet_predictions_are_gpytorchs_per_class_ones():
    """The latent posterior at test documents from one factorization for all classes equals gpytorch's
    exact prediction, which factors each class's covariance (a fourth class of one document; test
    documents wider than the training ones)."""
    x, y = three_classes(40, 6)
    y = np.where(np.arange(40) == 3, 3, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=0.5), class_hyperparameters="shared", optimizer=LBFGS(max_iter=8), random_state=0
        ).fit(x, y)
    test = [" ".join([t] * 3) for t in three_classes(12, 7)[0]]  # three times as long: wider padded rows
    with clf._prediction_blocks(test, 5) as (_, _, blocks):
        posterior = clf._posterior()
        for _, xb in blocks:
            ours = clf._block_latents(xb, posterior)
            gpytorch_s = clf._block_latents(xb, None)  # gpytorch's exact prediction
            np.testing.assert_allclose(ours[0].numpy(), gpytorch_s[0].numpy(), rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(ours[1].numpy(), gpytorch_s[1].numpy(), rtol=1e-7, atol=1e-10)


def test_predictions_in_blocks_of_like_lengths_are_each_documents_own_and_padding_may_sit_anywhere():
    """The prediction blocks take the documents in order of their lengths (a block as wide as its
    longest): every result lands in its own row, equal to one document a block's; padded ids with
    padding before a row's words predict as the same rows left-aligned (they were cut to their number
    of words before)."""
    from lvgp import PAD

    x, y = three_classes(40, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.5), optimizer=LBFGS(max_iter=5), random_state=0).fit(x, y)
    rng = np.random.default_rng(1)
    short = three_classes(12, 7)[0]
    test = [" ".join([t] * int(rng.integers(1, 6))) for t in short]  # lengths 1-5 times the texts', shuffled
    one, blocks = clf.predict_proba(test, block=1), clf.predict_proba(test, block=5)
    np.testing.assert_allclose(blocks, one, rtol=1e-12, atol=1e-14)
    cross, cross_one = (
        clf.predict_latent_cross(test[:7], test[7:], block=3),
        clf.predict_latent_cross(test[:7], test[7:], block=1),
    )
    for got, expected in zip(cross, cross_one):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    ids = clf.encoder_.transform(test[:4])
    shifted = torch.full((4, ids.shape[1] + 3), PAD)
    shifted[:, 3:] = ids  # three columns of padding before every row's words
    np.testing.assert_allclose(clf.predict_proba(shifted), clf.predict_proba(ids), rtol=1e-12, atol=1e-14)


def _tied_classifier(n: int, n_fit: int):
    """A synonym corpus of ``n`` texts and a classifier fitted on its first ``n_fit`` (above or below the median
    target), its word vectors tied to the corpus's pretrained embeddings (three L-BFGS steps)."""
    corpus = make_synonym_regression(n=n, noise=0.0, random_state=0)
    embeddings, _ = synonym_embeddings(corpus, random_state=0)
    labels = (corpus.y > np.median(corpus.y)).astype(int)
    clf = LDKGPClassifier(
        LDKSpec(latent_dim=2, rho=0.1, word_embeddings=embeddings), optimizer=LBFGS(max_iter=3), random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(corpus.texts[:n_fit], labels[:n_fit])
    return corpus, clf


def test_texts_predict_unpadded_as_through_the_whole_padded_corpus(monkeypatch):
    """Texts are encoded without padding for prediction and each block padded to its own longest
    (:meth:`DocumentEncoder.predicting_unpadded`): the same predictions as through the corpus padded to its
    longest text (:meth:`DocumentEncoder.predicting`, before), also where unseen words with a pretrained
    vector are extra words of the kernel and where a text has no known word."""
    from lvgp.base.encoding import DocumentEncoder

    corpus, clf = _tied_classifier(n=80, n_fit=20)
    test = [*corpus.texts[20:], "qqqq zzzz"]
    added = clf.encoder_.vocabulary.encode_ragged(test, clf.encoder_._available_embeddings())[1]
    assert added, "no unseen word with a vector: the extension is not exercised"

    def predictions():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return (clf.predict_proba(test, block=7), *clf.predict_latent_cross(test[:25], test[25:], block=6))

    unpadded = predictions()
    monkeypatch.setattr(DocumentEncoder, "predicting_unpadded", DocumentEncoder.predicting)
    for got, expected in zip(unpadded, predictions()):
        np.testing.assert_array_equal(got, expected)


def test_padded_ids_predict_with_word_vectors_tied_to_embeddings():
    """A classifier fitted on texts with word vectors tied to pretrained embeddings predicts padded ids of its
    vocabulary (``encoder_.transform``'s) as it predicts the texts they came from (no word unseen: nothing to
    add). They raised a ``TypeError`` before: the tied path tokenized every input as text."""
    corpus, clf = _tied_classifier(n=60, n_fit=30)
    texts = corpus.texts[:10]  # training texts: every word known
    np.testing.assert_array_equal(clf.predict_proba(clf.encoder_.transform(texts)), clf.predict_proba(texts))


def test_dirichlet_classifier_learns_synonyms_and_predicts_deterministically():
    x, y = three_classes(240, 5)
    clf = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.1), optimizer=LBFGS(max_iter=60), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x[:120], y[:120])
    accuracy = np.mean(clf.predict(x[120:]) == y[120:])
    assert accuracy > 0.6, accuracy  # chance 1/3
    first = clf.predict_proba(x[120:])
    clf.predict_proba(x[:50])  # other data in between changes nothing
    np.testing.assert_array_equal(first, clf.predict_proba(x[120:]))
    assert np.allclose(first.sum(1), 1) and first.shape == (120, 3)
    with pytest.warns(UserWarning, match="no known word"):
        empty = clf.predict_proba(["", "qqqq zzzz"])
    np.testing.assert_allclose(empty, np.tile(clf.class_prior_, (2, 1)))


def _temperature_criterion(log_p, codes, t):
    """What calibration="temperature" minimizes, written out: the mean log loss of the leave-one-out log
    probabilities ``log_p`` (``n x C``) of the labels ``codes`` tempered by ``t``, plus the prior log T ~ N(0, sd^2)
    per document."""
    from lvgp.models.gpc import TEMPERATURE_PRIOR_SD

    n = len(codes)
    z = log_p / t
    z = z - z.max(1, keepdims=True)
    return -np.mean(z[np.arange(n), codes] - np.log(np.exp(z).sum(1))) + np.log(t) ** 2 / (
        2 * TEMPERATURE_PRIOR_SD**2 * n
    )


@pytest.mark.parametrize("hyperparameters", ["per-class", "shared"])
def test_temperature_is_fitted_on_leave_one_out_predictions_equal_to_refits_without_each_document(hyperparameters):
    """calibration="temperature": the closed-form leave-one-out latents equal the exact GP posterior of
    each class given the other documents (a loop over the documents, the fitted hyper-parameters), and
    the temperature minimizes the log loss of their expected softmax. With shared hyper-parameters the
    latents come from one factorization for all classes (lvgp.models.dirichlet)."""
    x, y = three_classes(40, 6)
    flip = np.random.default_rng(0).random(len(y)) < 0.3  # noisy labels: an interior optimum of T
    y = np.where(flip, (y + 1) % 3, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LDKGPClassifier(
            LDKSpec(latent_dim=2, rho=0.5),
            class_hyperparameters=hyperparameters,
            optimizer=LBFGS(max_iter=10),
            calibration="temperature",
            random_state=0,
        )
        clf.fit(x, y)
    mean, var = clf.leave_one_out_latents()
    model, lik = clf.model_, clf.likelihood_
    train = model.train_inputs[0]
    with torch.no_grad():
        K = model.covar_module(train).to_dense().numpy()  # C x n x n (the output scales included)
        noise = lik.noise.numpy()  # C x n: the fixed Dirichlet noise plus the learned one
        targets, means = lik.transformed_targets.numpy(), model.mean_module.constant.numpy().ravel()
    expected_mean, expected_var = ref.dirichlet_leave_one_out(K, noise, targets, means)
    np.testing.assert_allclose(mean.numpy(), expected_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var.numpy(), expected_var, rtol=1e-6, atol=1e-9)
    # the temperature is the minimizer of the leave-one-out log loss
    from lvgp.models.gpc import expected_softmax

    log_p = np.log(expected_softmax(mean, var, clf.predict_samples, clf._class_seeds()).numpy())

    def loss(t):
        return _temperature_criterion(log_p, y, t)

    t = clf.temperature_
    assert t != 1.0 and loss(t) <= min(loss(t * 1.05), loss(t / 1.05), loss(1.0))
    raw = clf.set_params(calibration=None)  # the probabilities are the raw ones tempered by t
    tempered = clf.predict_proba(x[:5])
    clf.temperature_ = 1.0
    p = raw.predict_proba(x[:5]) ** (1 / t)
    np.testing.assert_allclose(tempered, p / p.sum(1, keepdims=True), rtol=1e-10)
    with pytest.raises(ValueError, match="inference='dirichlet'"):
        LDKGPClassifier(inference="variational", calibration="temperature").fit(x, y)


def test_one_text_a_class_keeps_the_temperature_at_one_and_says_so():
    """With a single training document a class, each leave-one-out prediction is of a text whose class has no
    example left: the log loss of those predictions is least at a flattening temperature (computed here by hand),
    which would carry no information about the classes' texts. The fit keeps T = 1 with a warning; one class with a
    second document gives the predictions something to say, and the temperature is fitted again, silently."""
    from lvgp.models.gpc import expected_softmax

    x, y = three_classes(40, 6)
    first = [int(np.flatnonzero(y == c)[0]) for c in range(3)]
    options = dict(optimizer=LBFGS(max_iter=10), calibration="temperature", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(UserWarning, match="every one of the 3 classes has a single training document"):
            single = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.5), **options).fit([x[i] for i in first], y[first])
    assert single.temperature_ == 1.0
    mean, var = single.leave_one_out_latents()
    log_p = np.log(expected_softmax(mean, var, single.predict_samples, single._class_seeds()).numpy())
    codes = np.searchsorted(single.classes_, y[first])

    # what the guard keeps out: the criterion would flatten the probabilities
    assert _temperature_criterion(log_p, codes, 2.0) < _temperature_criterion(log_p, codes, 1.0)
    second = first + [int(np.flatnonzero(y == 0)[1])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # a UserWarning: the later filter comes first
        fitted = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.5), **options).fit([x[i] for i in second], y[second])
    assert fitted.temperature_ != 1.0 and fitted.temperature_ == pytest.approx(fitted._fit_temperature())


def test_a_dirichlet_fit_whose_noise_holds_the_labels_warns_that_it_found_no_signal():
    """A fit with signal stays silent (noise share well below the ceiling); the same classifier with its output
    scale near zero and a large additional noise -- the evidence's noise-only mode that one labelled text a class
    can reach -- warns ``NoSignalWarning`` with the share, computed here class by class from the likelihood's
    transformation noises."""
    from lvgp.base.numerics import NOISE_CEILING
    from lvgp.models.gpc.inference import DirichletInference
    from lvgp.warnings import NoSignalWarning

    rng = np.random.default_rng(2)
    pos, neg = ["good", "great", "fine", "nice"], ["bad", "awful", "dull", "weak"]
    x = [" ".join(rng.choice(pos, 3)) for _ in range(6)] + [" ".join(rng.choice(neg, 3)) for _ in range(6)]
    y = ["pos"] * 6 + ["neg"] * 6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = LDKGPClassifier(optimizer=LBFGS(max_iter=20), random_state=0).fit(x, y)
    assert not [w for w in caught if issubclass(w.category, NoSignalWarning)]
    model, likelihood = clf.model_, clf.likelihood_
    with torch.no_grad():
        # an output scale that leaves the noise about 0.97 of the prior variance: counting the additional noise twice
        # would print 0.98
        model.covar_module.outputscale = torch.full_like(model.covar_module.outputscale, 1.0)
        unit = float(model.covar_module(model.train_inputs[0], diag=True).mean())
        model.covar_module.outputscale = torch.full_like(model.covar_module.outputscale, 1.5 / unit)
        likelihood.second_noise = torch.full_like(likelihood.second_noise, 50.0)
        diag = model.covar_module(model.train_inputs[0], diag=True)
        transformation = likelihood.noise_covar.noise  # C x n, the additional noise (50) not included
        shares = [
            float(((transformation[c] + 50.0) / (diag + transformation[c] + 50.0)).mean())
            for c in range(len(clf.classes_))
        ]
    assert min(shares) > NOISE_CEILING
    with pytest.warns(NoSignalWarning, match=rf"noise holds {min(shares):.4f} or more of the prior variance"):
        DirichletInference().after_fit(clf)


def test_the_noise_prior_keeps_one_text_a_class_out_of_the_noise_only_mode():
    """Eight classes of one labelled text each, their words disjoint: the evidence alone
    (``noise_prior_sd=None``) explains every label by the additional noise -- output scale near 0, one class
    for every text, ``NoSignalWarning`` -- where the default log-normal prior on that noise keeps the signal:
    no warning, every labelled text and a new text of each class classified right."""
    from lvgp.warnings import NoSignalWarning

    topics = [[chr(97 + c) * 3 + chr(97 + j) + "ing" for j in range(6)] for c in range(8)]
    rng = np.random.default_rng(0)
    x = [" ".join(rng.choice(words[:4], 4)) for words in topics]
    # a new text of each class: its labelled text's most frequent word and a word not seen in training
    new = [f"{max(text.split(), key=text.split().count)} {words[5]}" for text, words in zip(x, topics)]
    y = [f"topic{c}" for c in range(8)]
    settings = {"alpha_epsilon": 1e-6, "class_hyperparameters": "shared", "random_state": 0}
    with pytest.warns(NoSignalWarning, match="found no signal"):
        alone = LDKGPClassifier(noise_prior_sd=None, **settings).fit(x, y)
    assert float(alone.model_.covar_module.outputscale.max()) < 0.01
    assert len(set(alone.predict(x))) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoSignalWarning)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnseenWordsWarning)
            clf = LDKGPClassifier(**settings).fit(x, y)
            assert list(clf.predict(x)) == y and list(clf.predict(new)) == y
    assert clf.noise_prior_sd == 1.0 and float(clf.model_.covar_module.outputscale.max()) > 1.0


@pytest.mark.parametrize("sd", [0.5, 1.0, 2.0])
def test_the_noise_prior_is_gpytorchs_log_normal_around_the_start(sd):
    """``DirichletInference.noise_log_prior`` is gpytorch's ``LogNormalPrior(log 0.1, sd)`` at the additional
    noises, summed over the classes, up to a constant (compared at two values of each class's noise); ``None``
    without ``noise_prior_sd``."""
    from gpytorch.priors import LogNormalPrior

    from lvgp.models.gpc.inference import ADDITIONAL_NOISE_START, DirichletInference

    x, y = ["good great fine", "bad awful dull", "fine nice good", "dull weak bad"], ["pos", "neg", "pos", "neg"]
    clf = LDKGPClassifier(optimizer=LBFGS(max_iter=2), noise_prior_sd=sd, random_state=0).fit(x, y)
    likelihood = clf.likelihood_
    reference = LogNormalPrior(torch.tensor(math.log(ADDITIONAL_NOISE_START), dtype=torch.float64), torch.tensor(sd))
    log_density = DirichletInference.noise_log_prior(clf, likelihood)
    values = []
    for noises in ([0.03, 2.0], [0.5, 0.007]):
        with torch.no_grad():
            likelihood.second_noise = torch.tensor(noises, dtype=torch.float64).reshape(likelihood.second_noise.shape)
            values.append((float(log_density()), float(reference.log_prob(likelihood.second_noise).sum())))
    assert values[0][0] - values[1][0] == pytest.approx(values[0][1] - values[1][1], rel=1e-12)
    assert DirichletInference.noise_log_prior(clf.set_params(noise_prior_sd=None), likelihood) is None


@pytest.mark.skipif(
    tuple(int(part) for part in sklearn.__version__.split(".")[:2]) < (1, 8),
    reason="CalibratedClassifierCV(method='temperature') is scikit-learn 1.8's",
)
def test_held_out_texts_temper_the_classifier_through_scikit_learns_calibration():
    """A user with labelled texts held out from the fit tempers the fitted classifier on them with scikit-learn's
    ``CalibratedClassifierCV(FrozenEstimator(clf), method="temperature")`` (texts in, no refit): its probabilities
    are ``softmax(beta log p)`` of the classifier's own, ``beta`` the calibrator's, and its classes and decisions
    the classifier's."""
    from scipy.special import softmax
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    rng = np.random.default_rng(5)
    topics = {"film": ["film", "actor", "scene", "plot"], "bank": ["bank", "loan", "rate", "money"]}
    shared = ["good", "day", "new", "big", "time", "film", "bank"]  # shared words make close calls

    def texts(n):
        labels = rng.choice(sorted(topics), n)
        return [" ".join([*rng.choice(topics[c], 1), *rng.choice(shared, 3)]) for c in labels], labels

    (x, y), (held, held_y), (test, _) = texts(30), texts(30), texts(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LDKGPClassifier(optimizer=LBFGS(max_iter=10), random_state=0).fit(x, y)
        calibrated = CalibratedClassifierCV(FrozenEstimator(clf), method="temperature").fit(held, held_y)
        proba, own = calibrated.predict_proba(test), clf.predict_proba(test)
    (calibrator,) = calibrated.calibrated_classifiers_[0].calibrators
    np.testing.assert_allclose(proba, softmax(calibrator.beta_ * np.log(own), axis=1), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(calibrated.classes_, clf.classes_)
    np.testing.assert_array_equal(calibrated.predict(test), clf.predict(test))
    assert 0 < calibrator.beta_ < 50 and not np.allclose(proba, own)


@pytest.mark.parametrize("latent_dim", [2, 4, 16, 64])
def test_tied_word_vectors_start_at_a_squared_norm_that_does_not_grow_with_q(latent_dim):
    """GloVe-tied vectors start as W e_v with W drawn at tied_projection_scale(q): mean squared
    norm about min(q, 4), so the RBF word kernel does not start near the identity at large q;
    up to q = 4 the scale is 1, the draw of make_word_vectors' default."""
    corpus = make_synonym_regression(n=60, noise=0.0, random_state=0)
    embeddings, _ = synonym_embeddings(corpus, random_state=0)
    clf = LDKGPClassifier(
        LDKSpec(latent_dim=latent_dim, rho=0.1, word_embeddings=embeddings), optimizer=LBFGS(max_iter=1), random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(corpus.texts, (corpus.y > np.median(corpus.y)).astype(int))
    x = clf.encoder_.transform(corpus.texts)
    start = clf._kernel(0, x).word_vectors.vectors.detach()
    mean_sq = float(start.pow(2).sum(-1).mean())
    assert 0.5 * min(latent_dim, 4) < mean_sq < 2 * min(latent_dim, 4), mean_sq
    assert tied_projection_scale(latent_dim) == (1.0 if latent_dim <= 4 else (4 / latent_dim) ** 0.5)


def test_variational_binary_probabilities_are_calibrated():
    x, y, p = calibrated_task(700, 0)
    clf = LDKGPClassifier(
        inference="variational",
        num_inducing=64,
        optimizer=MiniBatch(batch_size=128, max_epochs=60, lr=0.03),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x[:400], y[:400])
    proba = clf.predict_proba(x[400:])[:, 1]
    assert np.all((proba > 0) & (proba < 1))
    # reliability: in bins of predicted probability, the mean prediction is close to the true mean probability
    bins = np.digitize(proba, [0.2, 0.4, 0.6, 0.8])
    gaps = [abs(proba[bins == b].mean() - p[400:][bins == b].mean()) for b in range(5) if (bins == b).sum() >= 15]
    assert len(gaps) >= 3 and max(gaps) < 0.15, gaps
    assert np.mean(clf.predict(x[400:]) == y[400:]) > 0.7


def test_variational_multiclass_softmax_and_bad_input():
    x, y = three_classes(150, 1)
    clf = LDKGPClassifier(
        inference="variational", num_inducing=32, optimizer=MiniBatch(max_epochs=200, lr=0.05), random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x[:100], y[:100])
    proba = clf.predict_proba(x[100:])
    assert proba.shape == (50, 3) and np.allclose(proba.sum(1), 1)
    assert np.mean(clf.predict(x[100:]) == y[100:]) > 0.5  # chance: 1/3
    # the softmax predictive probabilities (own Monte Carlo over the latent marginals) agree
    # with gpytorch's SoftmaxLikelihood marginal within Monte Carlo error
    clf.set_params(predict_samples=4000)
    ours = clf.predict_proba(x[100:110])
    xx = clf.encoder_.transform(x[100:110], "X")
    with torch.no_grad(), gpytorch.settings.num_likelihood_samples(4000):
        theirs = clf.likelihood_(clf.model_(xx)).probs.mean(0).numpy()
    assert np.abs(ours - theirs).max() < 0.03
    with pytest.raises(ValueError, match="single class"):
        LDKGPClassifier().fit(x[:10], [0] * 10)
    with pytest.raises(ValueError, match="inference must be one of"):
        LDKGPClassifier(inference="expectation-propagation").fit(x[:10], y[:10])
    with pytest.raises(ValueError, match=r"kernel\.rho must be >= 0"):
        LDKGPClassifier(LDKSpec(rho=-1.0)).fit(x[:10], y[:10])


def test_early_stopping_scores_a_held_out_part_and_refits_all_documents_for_the_best_iteration():
    from lvgp._random import derive_seed
    from lvgp.base.splits import dev_split

    x, y = three_classes(90, 2)
    kw = dict(kernel=LDKSpec(latent_dim=2, rho=0.1), random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LDKGPClassifier(early_stopping=EarlyStopping(n_iter_no_change=4), optimizer=LBFGS(max_iter=40), **kw).fit(
            x, y
        )
        best, curve = clf.best_iter_, clf.validation_curve_
        assert 1 <= best <= 40 and len(curve) >= best
        assert best == int(np.argmin(curve)) + 1  # scored after every iteration
        assert len(curve) == 40 or len(curve) == best + 4  # the budget, or n_iter_no_change past the best
        # reference 1: the held-out fit, rebuilt by hand, scores min(curve) on the held-out part
        _, codes = np.unique(y, return_inverse=True)
        train, dev = dev_split(codes, derive_seed(3), 0.25)
        probe = LDKGPClassifier(optimizer=LBFGS(max_iter=best), **kw).fit([x[i] for i in train], y[train])
        proba = probe.predict_proba([x[i] for i in dev])
        nll = -np.mean(np.log(proba[np.arange(len(dev)), y[dev]]))
        assert abs(nll - min(curve)) < 1e-6 * abs(nll)
        # reference 2: the final model is a plain fit on all documents with best_iter iterations
        plain = LDKGPClassifier(optimizer=LBFGS(max_iter=best), **kw).fit(x, y)
    assert clf.n_iter_ == plain.n_iter_ <= best
    np.testing.assert_allclose(clf.predict_proba(x[:20]), plain.predict_proba(x[:20]), rtol=1e-10)
    assert plain.best_iter_ is None and plain.validation_curve_ == []


def test_early_stopping_inputs_and_variational_epochs():
    x, y = three_classes(60, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # padded input: the held-out part may hold the largest word id
        ids = Vocabulary().fit(x).encode(x)
        clf = LDKGPClassifier(
            early_stopping=EarlyStopping(n_iter_no_change=3), optimizer=LBFGS(max_iter=15), random_state=0
        ).fit(ids, y)
        assert clf.encoder_.num_words == int(ids.max()) + 1 and clf.best_iter_ >= 1
        var = LDKGPClassifier(
            inference="variational",
            num_inducing=16,
            early_stopping=EarlyStopping(n_iter_no_change=3),
            optimizer=MiniBatch(max_epochs=12),
            random_state=0,
        ).fit(x, y)
    assert 1 <= var.best_iter_ <= 12 and var.best_iter_ == int(np.argmin(var.validation_curve_)) + 1
    assert var.n_iter_ == var.best_iter_  # the refit runs exactly the chosen number of epochs
    with pytest.warns(UserWarning, match="no validation part"):
        LDKGPClassifier(early_stopping=True, optimizer=LBFGS(max_iter=3)).fit(x[:3], [0, 1, 2])
    with pytest.raises(ValueError, match="validation_fraction"):
        LDKGPClassifier(early_stopping=EarlyStopping(validation_fraction=1.5)).fit(x, y)


SAVE_CASES = {
    "dirichlet, per-class": dict(),
    "dirichlet, shared, identity part with a prior, fixed embeddings": dict(
        class_hyperparameters="shared",
        kernel=LDKSpec.plus("synonyms", rho=0.1, identity_weight_prior_sd=0.5),
    ),
    "dirichlet, random features": dict(kernel=LDKSpec(rho=0.1, approximation="rff", num_features=64)),
    "dirichlet, temperature": dict(calibration="temperature"),
    "dirichlet, shared, the evidence of a subset": dict(
        class_hyperparameters="shared", calibration="temperature", max_evidence_documents=12
    ),
    "dirichlet, a user kernel": dict(kernel="user"),
    "variational, three classes": dict(inference="variational", num_inducing=16, optimizer=MiniBatch(max_epochs=5)),
    "variational, two classes": dict(
        inference="variational", num_inducing=16, optimizer=MiniBatch(max_epochs=5), binary=True
    ),
}


@pytest.mark.parametrize("case", list(SAVE_CASES))
def test_a_saved_classifier_reloads_and_predicts_bit_identically(case, tmp_path):
    """save() / load() with torch.load(weights_only=True): the same probabilities to the last bit,
    labels of their own dtype, the fit's record, any device (here the CPU); another file is refused."""
    options = dict(SAVE_CASES[case])
    texts, y = three_classes(45, 2)
    if options.pop("binary", False):
        y = np.where(y == 2, "pos", "neg")
    spec = options.get("kernel")
    user = None
    if spec == "user":  # a gpytorch kernel over padded word-index sets, with the vocabulary it was built for
        from gpytorch.kernels import ScaleKernel

        from lvgp import BagOfWordsKernel, LatentDistributionKernel, Vocabulary

        vocab = Vocabulary().fit(texts[:30])
        user = ScaleKernel(BagOfWordsKernel(len(vocab))) + LatentDistributionKernel(len(vocab), 2, seed=0)
        options.update(kernel=user, vocabulary=vocab)
    elif spec is not None and spec.word_embeddings == "synonyms":
        corpus = make_synonym_regression(n=45, noise=0.0, random_state=2)  # three_classes's corpus
        options["kernel"] = spec.replace(word_embeddings=synonym_embeddings(corpus, random_state=0)[0])
    clf = LDKGPClassifier(
        **{"kernel": LDKSpec(latent_dim=2, rho=0.1), "optimizer": LBFGS(max_iter=8), "random_state": 0, **options}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(texts[:30], y[:30])
    clf.save(tmp_path / "gpc.pt")
    if user is not None:
        with pytest.raises(ValueError, match=r"fitted with a user kernel .* pass the same kernel or factory"):
            LDKGPClassifier.load(tmp_path / "gpc.pt")
    loaded = LDKGPClassifier.load(tmp_path / "gpc.pt", device="cpu", kernel=user)
    np.testing.assert_array_equal(loaded.predict_proba(texts[30:]), clf.predict_proba(texts[30:]))
    np.testing.assert_array_equal(loaded.predict(texts[30:]), clf.predict(texts[30:]))
    assert loaded.classes_.dtype == clf.classes_.dtype
    params, saved = loaded.get_params(deep=False), clf.get_params(deep=False) | {"device": "cpu"}
    table = getattr(params.pop("kernel"), "word_embeddings", None)
    saved_table = getattr(saved.pop("kernel"), "word_embeddings", None)
    assert params == saved
    if saved_table is not None:  # a table of one's own travels whole
        assert table.words == saved_table.words and np.array_equal(table.vectors, saved_table.vectors)
    assert (loaded.n_iter_, loaded.loss_curve_, loaded.kernel_kind_) == (clf.n_iter_, clf.loss_curve_, clf.kernel_kind_)
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a saved LDKGPClassifier"):
        LDKGPClassifier.load(tmp_path / "other.pt")


def test_the_variational_start_takes_no_batched_lu_and_fits_on_two_threads():
    """gpytorch starts q(u) by inverting the prior covariance with a batched LU, which torch runs
    from several threads at once into MKL's non-thread-safe row swaps (pytorch/pytorch#141358): 4
    classes and 256 inducing documents on 2 threads hung. The start by Cholesky is gpytorch's
    start, and the fit finishes on 2 threads (in a subprocess: a hang fails by its timeout)."""
    import subprocess
    import sys

    from gpytorch.variational import NaturalVariationalDistribution

    from lvgp.models.gpc import _NaturalDistribution

    prior = gpytorch.distributions.MultivariateNormal(
        torch.zeros(3, 20, dtype=torch.float64), torch.eye(20, dtype=torch.float64).expand(3, 20, 20) * 2.0
    )
    ours = _NaturalDistribution(20, batch_shape=torch.Size([3])).double()
    theirs = NaturalVariationalDistribution(20, batch_shape=torch.Size([3])).double()
    for dist in (ours, theirs):
        torch.manual_seed(0)
        dist.initialize_variational_distribution(prior)
    torch.testing.assert_close(ours.natural_vec, theirs.natural_vec, rtol=0, atol=1e-15)
    torch.testing.assert_close(ours.natural_mat, theirs.natural_mat, rtol=0, atol=1e-15)
    script = (
        "import numpy as np, torch, warnings\n"
        "torch.set_num_threads(2)\n"
        "from lvgp import MiniBatch\n"
        "from lvgp.models.gpc import LDKGPClassifier\n"
        "warnings.simplefilter('ignore')\n"
        "g = np.random.default_rng(0)\n"
        "X = torch.from_numpy(g.integers(0, 300, size=(300, 8)))\n"
        "y = g.integers(0, 4, size=300)\n"
        "LDKGPClassifier(inference='variational', num_inducing=256, optimizer=MiniBatch(batch_size=128, max_epochs=1),\n"
        "                num_words=300, random_state=0).fit(X, y)\n"
        "print('fitted')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0 and "fitted" in out.stdout, out.stderr[-2000:]
    assert "DLASWP" not in out.stdout + out.stderr


def test_a_natural_gradient_step_that_breaks_q_u_is_undone_and_the_step_size_halved(monkeypatch):
    """A natural-gradient step of q(u) from a noisy mini-batch estimate of the likelihood's curvature,
    scaled by n, can leave -2 x the natural covariance parameter not positive definite (the default
    ngd_lr = 0.1 did, at 50,000 documents in batches of 256: benchmarks/large_n.py). The fit undoes
    such a step and halves ngd_lr, says so, and predicts; without the retries it ends in a CovarianceError."""
    import re

    import lvgp.models.gpc.inference as gpc
    from lvgp.base.numerics import CovarianceError
    from lvgp.datasets import make_zipf_topic_documents

    data = make_zipf_topic_documents(1000, num_words=500, max_length=20, random_state=0)
    x = torch.from_numpy(data.X.astype(np.int64))

    def classifier() -> LDKGPClassifier:
        return LDKGPClassifier(
            inference="variational",
            num_inducing=16,
            optimizer=MiniBatch(batch_size=64, max_epochs=2, ngd_lr=0.5),
            num_words=500,
            random_state=0,
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = classifier().fit(x, data.labels)
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning) and "undone" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    undone = int(re.search(r"classifier: (\d+) natural-gradient", said[0]).group(1))
    assert undone >= 1 and clf.ngd_lr_ == 0.5 / 2**undone
    proba = clf.predict_proba(x[:50])
    assert np.isfinite(proba).all() and np.allclose(proba.sum(1), 1)
    monkeypatch.setattr(gpc, "_NGD_BACKOFF", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CovarianceError, match=r"lower the optimizer's ngd_lr"):
            classifier().fit(x, data.labels)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_variational_classifier_keeps_an_int32_corpus_and_saves_and_reloads_it(tmp_path, record_int32_casts):
    """Mini-batch inference keeps a padded int32 corpus as given (batches cast to int64): the same
    fit as on its int64 copy to the bit, no int64 copy of the corpus, and a saved model (which holds
    its training documents) reloads to the same probabilities."""
    from lvgp.datasets import make_zipf_topic_documents

    data = make_zipf_topic_documents(240, num_words=1_500, max_length=30, random_state=1)
    x32 = torch.as_tensor(data.X)

    def fit(x: torch.Tensor) -> LDKGPClassifier:
        est = LDKGPClassifier(
            inference="variational",
            num_inducing=12,
            num_words=1_500,
            random_state=0,
            optimizer=MiniBatch(batch_size=60, max_epochs=2),
        )
        return est.fit(x, data.labels)

    wide = fit(x32.long())
    with record_int32_casts() as cast:
        compact = fit(x32)
        blocks = compact.predict_proba(x32, block=50)  # predictions in blocks: each block cast
    assert cast and max(cast) < x32.numel()
    np.testing.assert_array_equal(blocks, wide.predict_proba(x32.long(), block=50))
    assert compact._train[0].data_ptr() == x32.data_ptr()  # the caller's tensor, not a copy
    assert compact.loss_curve_ == wide.loss_curve_
    proba = compact.predict_proba(x32[:30])
    np.testing.assert_array_equal(proba, wide.predict_proba(x32[:30].long()))
    compact.save(tmp_path / "gpc.pt")
    np.testing.assert_array_equal(LDKGPClassifier.load(tmp_path / "gpc.pt").predict_proba(x32[:30]), proba)


def test_the_studies_offer_every_inference():
    """``--gpc-inference`` lists the inferences of INFERENCE_STRATEGIES (the studies import no model at
    start-up, so the list is written out there): a new inference cannot be left out."""
    import dataclasses

    from lvgp.experiments.classification import ClassificationStudy
    from lvgp.models.gpc import INFERENCES

    field = next(f for f in dataclasses.fields(ClassificationStudy) if f.name == "gpc_inference")
    assert set(field.metadata["choices"]) == set(INFERENCES)


def test_expected_softmax_in_blocks_of_rows_is_the_whole_ones(monkeypatch):
    """Many documents and classes are averaged in blocks of rows (memory: draws x rows x classes); the
    probabilities are the whole tensor's to rounding, with the same draws a class."""
    from lvgp.models.gpc import models

    g = torch.Generator().manual_seed(0)
    mean = torch.randn(50, 7, generator=g, dtype=torch.float64)
    var = torch.rand(50, 7, generator=g, dtype=torch.float64)
    whole = models.expected_softmax(mean, var, 64, list(range(7)))
    # the formula written out (out of place; the function adds the mean into the draws in place): to the bit
    written = torch.softmax(mean + var.sqrt() * models.class_draws(64, list(range(7)), mean.dtype).unsqueeze(1), -1)
    assert torch.equal(whole, written.mean(0))
    monkeypatch.setattr(models, "_SOFTMAX_BLOCK", 64 * 7 * 6)  # six rows a block
    blocked = models.expected_softmax(mean, var, 64, list(range(7)))
    np.testing.assert_allclose(blocked.numpy(), whole.numpy(), rtol=0, atol=1e-15)
    assert blocked.shape == (50, 7)


def test_expected_softmax_has_a_finite_gradient_where_a_variance_is_zero_or_below():
    """A leave-one-out variance rounded to zero or below is clamped to zero: the probabilities are those of a variance
    of zero, and the gradient is finite there (zero for that variance: ``clamp_min(0).sqrt()`` made it NaN, which the
    leave-one-out fit's optimizer had to reject), the autograd of the square root elsewhere."""
    from lvgp.models.gpc import models

    g = torch.Generator().manual_seed(1)
    mean = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    var = torch.rand(4, 3, generator=g, dtype=torch.float64) + 0.1
    var[0, 1], var[2, 0] = 0.0, -1e-12
    var.requires_grad_(True)
    proba = models.expected_softmax(mean, var, 32, [5, 6, 7])
    clamped = var.detach().clamp_min(0)
    torch.testing.assert_close(proba, models.expected_softmax(mean.detach(), clamped, 32, [5, 6, 7]), rtol=0, atol=0)
    (proba * torch.arange(1.0, 4.0, dtype=torch.float64)).sum().backward()
    assert torch.isfinite(var.grad).all() and torch.isfinite(mean.grad).all()
    assert var.grad[0, 1] == 0 and var.grad[2, 0] == 0
    positive = var.detach()[1:2].clone().requires_grad_(True)  # the square root's own gradient where var > 0
    reference = torch.softmax(
        mean.detach()[1:2] + positive.sqrt() * models.class_draws(32, [5, 6, 7], torch.float64).unsqueeze(1), -1
    )
    (reference.mean(0) * torch.arange(1.0, 4.0, dtype=torch.float64)).sum().backward()
    torch.testing.assert_close(var.grad[1:2], positive.grad)


@pytest.mark.parametrize("inference", ["dirichlet", "laplace"])
def test_a_budget_that_ends_the_fit_advises_by_what_the_kernel_fits(inference):
    """The ConvergenceWarning of an evidence fit its budget ended: with MAP word vectors the advice says the budget
    acts as an early stop and offers early_stopping (converging over-fits them: ``ldk_gpc_convergence.py``); a kernel
    without fitted word vectors gets the plain advice."""
    from lvgp.kernels import BagOfWordsSpec

    x, y = three_classes(30, 4)
    for kernel, advice in (
        (LDKSpec(latent_dim=2, rho=0.5), "with MAP word vectors the budget acts as an early stop"),
        (BagOfWordsSpec(), "increase max_iter or tol$"),
    ):
        with pytest.warns(ConvergenceWarning, match=f"GP classifier did not converge in 2 L-BFGS iterations.*{advice}"):
            LDKGPClassifier(kernel, inference=inference, optimizer=LBFGS(max_iter=2), random_state=0).fit(x, y)


def test_the_softmax_nodes_are_a_latin_hypercube_of_the_normal_a_class_keeps_wherever_it_sorts():
    """Each class's nodes are the midpoint quantiles of the standard normal in its own stream's order (their mean
    exactly 0); a class keeps its column wherever it sorts; and at the same number of nodes the expected softmax is
    nearer a many-node reference than with independent normal draws (on a fixed random case)."""
    from scipy.stats import norm

    from lvgp._random import torch_generator
    from lvgp.models.gpc import models

    nodes = models.class_draws(100, [11, 12, 13], torch.float64)
    quantiles = norm.ppf((np.arange(100) + 0.5) / 100)
    for c in range(3):
        np.testing.assert_allclose(np.sort(nodes[:, c].numpy()), quantiles, rtol=0, atol=1e-12)
    assert torch.all(nodes.mean(0).abs() < 1e-14)
    assert not torch.equal(nodes[:, 0], nodes[:, 1])  # each class its own order
    assert torch.equal(models.class_draws(100, [13, 11], torch.float64), nodes[:, [2, 0]])
    g = torch.Generator().manual_seed(1)
    mean = torch.randn(400, 6, generator=g, dtype=torch.float64)
    var = 4 * torch.rand(400, 6, generator=g, dtype=torch.float64)
    reference = models.expected_softmax(mean, var, 2**16, list(range(100, 106)))
    seeds = list(range(6))
    ours = models.expected_softmax(mean, var, 256, seeds)
    independent = torch.stack([torch.randn(256, dtype=torch.float64, generator=torch_generator(s)) for s in seeds], -1)
    plain = torch.softmax(mean + var.sqrt() * independent.unsqueeze(1), -1).mean(0)
    assert (ours - reference).abs().mean() < 0.5 * (plain - reference).abs().mean()
