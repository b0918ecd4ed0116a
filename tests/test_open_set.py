"""Out-of-scope detection (issue 57): the novelty scores of every classifier, the open-set metrics,
and the ``lvgp compare open-set`` study; each against an independent computation (loops over the
documents, the closed-form GP posterior, scikit-learn's metrics)."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import ClassifierMixin
from sklearn.covariance import LedoitWolf
from sklearn.metrics import average_precision_score, roc_auc_score

import lvgp
from lvgp import LBFGS, LDKGPClassifier
from lvgp.base.novelty import NOVELTY_SCORES, REFERENCE_SCORES, open_set_metrics, probability_novelty
from lvgp.warnings import EmptyDocumentsWarning

from . import reference as ref

#: the GP classifier's own novelty score, which the tests that try the others set back
DEFAULT_SCORE = LDKGPClassifier().novelty_score

WORDS = {
    "pos": "good great fine nice lovely".split(),
    "neg": "bad awful poor dull weak".split(),
    "money": "tax bank money loan rate".split(),
}


def _texts(label: str, n: int, rng: np.random.Generator) -> list[str]:
    return [" ".join(rng.choice(WORDS[label], 4)) for _ in range(n)]


# ------------------------------------------------------------------ the metrics
def test_open_set_metrics_agree_with_scikit_learn_and_a_loop():
    rng = np.random.default_rng(0)
    out = rng.random(300) < 0.3
    score = rng.normal(size=300) - 1.5 * out  # out of scope: lower, more often
    got = open_set_metrics(score, out)
    assert got["oos_auroc"] == pytest.approx(roc_auc_score(out, -score))
    assert got["oos_aupr"] == pytest.approx(average_precision_score(out, -score))
    # FPR95 by a loop: the largest threshold that keeps 95% of the in-scope documents, the
    # out-of-scope share at or above it
    inside = np.sort(score[~out])
    threshold = max(t for t in inside if np.mean(inside >= t) >= 0.95)
    assert got["oos_fpr95"] == pytest.approx(np.mean(score[out] >= threshold))
    fpr, tpr = np.asarray(got["roc"]["fpr"]), np.asarray(got["roc"]["tpr"])
    assert fpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == 1 and np.all(np.diff(tpr) >= 0)
    # the curve's area on its grid is the AUROC up to the grid's resolution
    trapezoid = getattr(np, "trapezoid", None) or np.trapz  # numpy < 2: trapz
    assert trapezoid(tpr, fpr) == pytest.approx(got["oos_auroc"], abs=0.02)


def test_open_set_metrics_of_a_perfect_and_a_reversed_score():
    out = np.array([False] * 20 + [True] * 10)
    score = np.where(out, -1.0, 1.0) + np.linspace(0, 0.1, 30)
    perfect = open_set_metrics(score, out)
    assert perfect["oos_auroc"] == 1.0 and perfect["oos_aupr"] == pytest.approx(1.0) and perfect["oos_fpr95"] == 0.0
    reversed_ = open_set_metrics(-score, out)
    assert reversed_["oos_auroc"] == 0.0 and reversed_["oos_fpr95"] == 1.0


@pytest.mark.parametrize(
    "score,out,match",
    [
        ([1.0, 2.0], [True], "score has 2 values and out_of_scope 1"),
        ([1.0, np.nan, 3.0], [True, False, False], r"not finite at 1 rows \(first: \[1\]\)"),
        ([1.0, 2.0], [False, False], "must mark some documents"),
    ],
)
def test_open_set_metrics_refuse_bad_input(score, out, match):
    with pytest.raises(ValueError, match=match):
        open_set_metrics(np.asarray(score), np.asarray(out))


def test_probability_novelty_is_minus_the_entropy_or_the_largest_probability():
    proba = np.array([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], [0.7, 0.2, 0.1, 0.0]])
    np.testing.assert_allclose(
        probability_novelty(proba, "entropy"),
        [-np.log(4), 0.0, 0.7 * np.log(0.7) + 0.2 * np.log(0.2) + 0.1 * np.log(0.1)],
    )
    np.testing.assert_allclose(probability_novelty(proba, "max-probability"), [0.25, 1.0, 0.7])
    with pytest.raises(ValueError, match="kind must be one of"):
        probability_novelty(proba, "variance")


def test_every_classifier_has_score_samples():
    """scikit-learn's novelty convention on every classifier of lvgp (``lvgp.all_estimators()``: a new
    one cannot be left out)."""
    classifiers = [c for c in lvgp.all_estimators() if issubclass(c, ClassifierMixin)]
    assert len(classifiers) >= 10
    missing = [c.__name__ for c in classifiers if not callable(getattr(c, "score_samples", None))]
    assert missing == []


def test_every_classifier_says_which_novelty_score_it_returns():
    """Each classifier names the score its ``score_samples`` returns (``novelty_score``: a parameter of the
    GP classifier, a fixed or derived value elsewhere), so a study reads it instead of probing types."""
    from lvgp.base.novelty import NOVELTY_SCORE_NAMES

    classifiers = [c for c in lvgp.all_estimators() if issubclass(c, ClassifierMixin)]
    names = {c.__name__: getattr(c(), "novelty_score", None) for c in classifiers}
    assert {k: v for k, v in names.items() if v not in NOVELTY_SCORE_NAMES} == {}
    assert names["EncoderMahalanobis"] == "mahalanobis" and names["EncoderNearestNeighbor"] == "nearest-cosine"
    assert names["LDKGPClassifier"] == "energy" and names["EncoderLogisticRegression"] == "entropy"
    from lvgp.baselines.text_classifiers import BowClassifier

    assert BowClassifier(model="svm").novelty_score == "max-decision"
    assert lvgp.LatentSMMClassifier(multi_class="ovr").novelty_score == "max-decision"


# ------------------------------------------------------------------ the GP classifier's scores
@pytest.fixture(scope="module")
def fitted_gp():
    rng = np.random.default_rng(0)
    X = _texts("pos", 15, rng) + _texts("neg", 15, rng)
    y = ["pos"] * 15 + ["neg"] * 15
    clf = LDKGPClassifier(class_hyperparameters="shared", optimizer=LBFGS(max_iter=30), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    return clf


def _documents_in_row_order(clf, texts):
    """The documents as the classifier's kernel takes them, in the texts' order (its prediction blocks
    come in order of the documents' lengths), padded to one width."""
    from lvgp.bow.padded import pad_to_width

    with clf._prediction_blocks(texts, 256) as (_, _, blocks):
        parts = list(blocks)
    width = max(xb.shape[-1] for _, xb in parts)
    rows = torch.cat([idx for idx, _ in parts])
    return torch.cat([pad_to_width(xb, width) for _, xb in parts])[torch.argsort(rows)]


def test_gp_probability_scores_are_those_of_its_probabilities(fitted_gp):
    rng = np.random.default_rng(1)
    test = _texts("pos", 4, rng) + ["good bad", "great awful dull"]
    proba = fitted_gp.predict_proba(test)
    for kind in ("entropy", "max-probability"):
        clf = fitted_gp.set_params(novelty_score=kind)
        np.testing.assert_array_equal(clf.score_samples(test), probability_novelty(proba, kind))
    fitted_gp.set_params(novelty_score=DEFAULT_SCORE)


def _noisy_training_covariance(clf) -> torch.Tensor:
    """``C x n x n``: each class's kernel matrix of the training documents plus its Dirichlet noise."""
    model, likelihood = clf.model_, clf.likelihood_
    with torch.no_grad():
        model.train()
        likelihood.train()
        try:
            return likelihood(model(model.train_inputs[0])).covariance_matrix
        finally:
            model.eval()
            likelihood.eval()


def test_gp_latent_posterior_and_variance_score_are_the_closed_form_ones(fitted_gp):
    r"""``predict_latent`` and the ``"variance"`` score against the GP regression posterior of each class
    written out: :math:`k_{**} - k_*^\top K_y^{-1} k_*` with :math:`K_y` the classes' covariance plus their
    Dirichlet noise (R&W eq. 2.26), and :math:`m + k_*^\top K_y^{-1}(\tilde y - m)`."""
    clf = fitted_gp
    rng = np.random.default_rng(2)
    test = _texts("neg", 3, rng) + ["good dull"]
    mean, var = clf.predict_latent(test)
    model, likelihood = clf.model_, clf.likelihood_
    x = model.train_inputs[0]
    xs = clf.encoder_.encode(test)[0] if hasattr(clf.encoder_, "encode") else None
    K_y = _noisy_training_covariance(clf)
    with torch.no_grad():
        if xs is None:
            xs = _documents_in_row_order(clf, test)
        from lvgp.bow.padded import pad_to_common_width

        a, b = pad_to_common_width(x, xs)
        k_star = model.covar_module(a, b).to_dense().expand(len(clf.classes_), -1, -1)  # C x n x m
        k_ss = model.covar_module(xs, diag=True).expand(len(clf.classes_), -1)  # C x m
        m = model.mean_module.constant.reshape(-1, 1)
        solve = torch.linalg.solve(K_y, k_star)
        ref_var = (k_ss - (k_star * solve).sum(-2)).mT.numpy()
        residual = (likelihood.transformed_targets - m).unsqueeze(-1)
        ref_mean = (m + (solve.mT @ residual).squeeze(-1)).mT.numpy()
    np.testing.assert_allclose(var, ref_var, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6, atol=1e-8)
    score = clf.set_params(novelty_score="variance").score_samples(test)
    np.testing.assert_allclose(score, -np.mean(ref_var / k_ss.mT.numpy(), axis=1), rtol=1e-6)
    assert np.all((score >= -1) & (score <= 0))
    clf.set_params(novelty_score=DEFAULT_SCORE)


@pytest.mark.parametrize("block", [256, 2])
def test_gp_latent_cross_covariances_are_the_closed_form_ones(fitted_gp, block):
    r"""``predict_latent_cross`` against each class's GP regression posterior written out:
    :math:`k(a, b) - k_a^\top K_y^{-1} k_b` (R&W eq. 2.24) with :math:`K_y` the classes' covariance plus
    their Dirichlet noise; its marginals are ``predict_latent``'s; a document without a known word gets
    the prior and no covariance."""
    from lvgp.bow.padded import pad_to_common_width

    clf = fitted_gp
    rng = np.random.default_rng(3)
    X = _texts("pos", 2, rng) + ["good dull", "tax bank"]
    Z = _texts("neg", 2, rng) + ["great awful bad"]
    with pytest.warns(EmptyDocumentsWarning, match="predict_latent_cross: 1 of 7 documents"):
        cross = clf.predict_latent_cross(X, Z, block=block)
    C = len(clf.classes_)
    assert cross.x_mean.shape == (4, C) and cross.z_var.shape == (3, C) and cross.cov.shape == (C, 4, 3)
    model = clf.model_
    x = model.train_inputs[0]
    with torch.no_grad():
        xa, xz = _documents_in_row_order(clf, X[:3]), _documents_in_row_order(clf, Z)
        kernel = model.covar_module
        k_a = kernel(*pad_to_common_width(x, xa)).to_dense()
        k_z = kernel(*pad_to_common_width(x, xz)).to_dense()
        k_az = kernel(*pad_to_common_width(xa, xz)).to_dense()
        ref = k_az - k_a.mT @ torch.linalg.solve(_noisy_training_covariance(clf), k_z)  # C x 3 x 3
    np.testing.assert_allclose(cross.cov[:, :3], ref.numpy(), rtol=1e-6, atol=1e-10)
    # the document without a known word: the prior, no covariance with anything
    np.testing.assert_array_equal(cross.cov[:, 3], 0.0)
    np.testing.assert_allclose(cross.x_mean[3], model.mean_module.constant.detach().reshape(-1).expand(C))
    np.testing.assert_allclose(cross.x_var[3], model.covar_module.outputscale.detach().reshape(-1).expand(C))
    mean, var = clf.predict_latent(X[:3])
    np.testing.assert_allclose(cross.x_mean[:3], mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cross.x_var[:3], var, rtol=1e-10, atol=1e-12)
    mean, var = clf.predict_latent(Z)
    np.testing.assert_allclose(cross.z_mean, mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cross.z_var, var, rtol=1e-10, atol=1e-12)
    # a set against itself: the covariances' diagonal is the variances
    same = clf.predict_latent_cross(Z, Z)
    np.testing.assert_allclose(np.diagonal(same.cov, axis1=1, axis2=2).T, var, rtol=1e-8, atol=1e-12)


def test_gp_latent_cross_covariances_per_class_are_gpytorch_joint_posterior_written_out():
    """With per-class hyper-parameters the covariances come from gpytorch's joint prediction at both
    blocks: the same closed form, each class with its own output scale and noise."""
    from lvgp.bow.padded import pad_to_common_width

    rng = np.random.default_rng(5)
    X = _texts("pos", 8, rng) + _texts("neg", 8, rng)
    clf = LDKGPClassifier(class_hyperparameters="per-class", optimizer=LBFGS(max_iter=15), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, ["pos"] * 8 + ["neg"] * 8)
        A, Z = _texts("pos", 2, rng) + ["good dull"], _texts("neg", 2, rng)
        cross = clf.predict_latent_cross(A, Z)
        mean, var = clf.predict_latent(A)
    model = clf.model_
    with torch.no_grad():
        docs = [_documents_in_row_order(clf, texts) for texts in (A, Z)]
        x = model.train_inputs[0]
        kernel = model.covar_module
        k_a = kernel(*pad_to_common_width(x, docs[0])).to_dense()  # C x n x a: each class's output scale
        k_z = kernel(*pad_to_common_width(x, docs[1])).to_dense()
        k_az = kernel(*pad_to_common_width(*docs)).to_dense()
        ref = k_az - k_a.mT @ torch.linalg.solve(_noisy_training_covariance(clf), k_z)
    np.testing.assert_allclose(cross.cov, ref.numpy(), rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(cross.x_mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cross.x_var, var, rtol=1e-8, atol=1e-12)


def test_stack_documents_keeps_each_form():
    import scipy.sparse as sp

    from lvgp.base.encoding import stack_documents
    from lvgp.bow.padded import PAD

    both, n = stack_documents(["a b", "c"], iter(["d"]))
    assert both == ["a b", "c", "d"] and n == 2
    both, n = stack_documents(torch.tensor([[1, 2]]), torch.tensor([[3, 4, 5], [6, PAD, PAD]]))
    assert n == 1 and torch.equal(both, torch.tensor([[1, 2, PAD], [3, 4, 5], [6, PAD, PAD]]))
    dense = np.array([[1, 0, 2], [0, 1, 0]])
    both, n = stack_documents(dense, sp.csr_matrix(dense[:1]))
    assert n == 2 and sp.issparse(both) and np.array_equal(both.toarray(), dense[[0, 1, 0]])
    both, n = stack_documents(dense, dense[1:])
    assert n == 2 and np.array_equal(both, dense[[0, 1, 1]])


def test_gp_latent_cross_covariances_refuse_other_inferences_and_mixed_forms(fitted_gp):
    with pytest.raises(TypeError, match="X and Z must be documents of one form; got texts and padded"):
        fitted_gp.predict_latent_cross(["good"], torch.tensor([[1, 2]]))
    clf = fitted_gp.set_params(inference="laplace")
    try:
        with pytest.raises(ValueError, match="predict_latent_cross needs inference='dirichlet'"):
            clf.predict_latent_cross(["good"], ["bad"])
        with pytest.raises(ValueError, match="observation_noise needs inference='dirichlet'"):
            clf.observation_noise()
    finally:
        clf.set_params(inference="dirichlet")


def test_gp_energy_is_the_log_sum_exp_of_the_latent_means(fitted_gp):
    from scipy.special import logsumexp

    test = ["good great", "bad dull", "good dull"]
    mean, _ = fitted_gp.predict_latent(test)
    clf = fitted_gp.set_params(novelty_score="energy")
    np.testing.assert_allclose(clf.score_samples(test), logsumexp(mean, axis=1), rtol=1e-12)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    from lvgp.base.novelty import latent_energy

    # one latent f (a binary classifier's log odds): the two-class softmax latents (-f/2, f/2), so the score
    # is |f|/2 + log(1 + exp(-|f|)) whichever class is the second, log 2 at no evidence
    f = np.array([[-3.0], [-0.5], [0.0], [0.5], [3.0]])
    np.testing.assert_allclose(latent_energy(f), np.abs(f[:, 0]) / 2 + np.log1p(np.exp(-np.abs(f[:, 0]))), rtol=1e-14)
    np.testing.assert_allclose(latent_energy(f), latent_energy(np.hstack([-f / 2, f / 2])), rtol=1e-14)
    np.testing.assert_array_equal(latent_energy(f), latent_energy(-f))
    assert latent_energy(f)[2] == pytest.approx(np.log(2.0)) and np.all(latent_energy(f)[[0, 1, 3, 4]] > np.log(2.0))


def test_binary_variational_gp_energy_ranks_texts_sure_of_either_class_above_texts_of_no_evidence():
    """The variational classifier's binary fit has one latent function; its energy must not depend on which
    class is the second: read as the logits (0, f), a text sure of the first class scored below an empty one."""
    texts = [
        "good great fine",
        "great good film",
        "fine good acting",
        "bad dull awful",
        "awful bad plot",
        "dull bad weak",
    ]
    test = ["good great", "bad awful", "sushi plate"]  # the last has no known word: the latent prior
    for labels in (["pos"] * 3 + ["neg"] * 3, ["neg"] * 3 + ["pos"] * 3):
        clf = LDKGPClassifier(inference="variational", random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(texts, labels)
            mean, _ = clf.predict_latent(test)
            score = clf.set_params(novelty_score="energy").score_samples(test)
        assert mean.shape == (3, 1) and mean[0, 0] * mean[1, 0] < 0  # the two texts on either side of the prior
        assert score[0] > score[2] and score[1] > score[2]


def test_gp_documents_without_a_known_word_are_the_least_typical_by_variance(fitted_gp):
    clf = fitted_gp.set_params(novelty_score="variance")
    with pytest.warns(EmptyDocumentsWarning, match="score_samples: 1 of 3 documents have no known word"):
        score = clf.score_samples(["good great", "tax bank loan", "bad dull"])
    assert score[1] == -1.0 and score[0] > -1 and score[2] > -1
    clf.set_params(novelty_score=DEFAULT_SCORE)


def test_gp_novelty_score_is_a_checked_parameter_and_saved(fitted_gp, tmp_path):
    assert fitted_gp.get_params()["novelty_score"] == DEFAULT_SCORE == "energy"
    with pytest.raises(ValueError, match="novelty_score"):
        LDKGPClassifier(novelty_score="magic").fit(["good film", "bad film"], [1, 0])
    clf = fitted_gp.set_params(novelty_score="variance")
    clf.save(tmp_path / "gp.pt")
    back = LDKGPClassifier.load(tmp_path / "gp.pt")
    assert back.novelty_score == "variance"
    test = ["good fine", "awful weak"]
    np.testing.assert_array_equal(back.score_samples(test), clf.score_samples(test))
    clf.set_params(novelty_score=DEFAULT_SCORE)


def test_reference_quantiles_count_the_reference_below_ties_half():
    from lvgp.base.novelty import normalized_entropy, reference_quantiles

    reference = np.array([0.3, 0.1, 0.2, 0.2])
    got = reference_quantiles(np.array([0.0, 0.1, 0.2, 0.25, 0.9]), reference)
    want = [sum((r < v) + 0.5 * (r == v) for r in reference) / 4 for v in (0.0, 0.1, 0.2, 0.25, 0.9)]
    np.testing.assert_allclose(got, want)
    assert got[0] == 0.0 and got[-1] == 1.0
    with pytest.raises(ValueError, match="reference"):
        reference_quantiles(np.array([0.5]), np.array([np.nan]))
    np.testing.assert_allclose(normalized_entropy(np.array([[0.5, 0.5], [1.0, 0.0]])), [1.0, 0.0], atol=1e-12)


def test_gp_quantile_scores_are_the_mean_quantile_among_leave_one_out_documents(fitted_gp):
    r"""``"entropy-variance"`` and ``"energy-variance"`` against their definition written out: each
    training document's latent posterior given the *other* documents by an explicit solve per document
    (R&W eq. 2.23-2.24, not the closed-form leave-one-out of eq. 5.12 the estimator uses), its tempered
    expected softmax's normalized entropy, its minus energy and its variance ratio; each test text's two
    scores' shares of those below it (ties half), averaged, negated."""
    from lvgp.models.gpc.models import expected_softmax

    clf = fitted_gp
    model, likelihood = clf.model_, clf.likelihood_
    x = model.train_inputs[0]
    K_y = _noisy_training_covariance(clf)
    with torch.no_grad():
        K = model.covar_module(x).to_dense().expand_as(K_y)
        noise = K_y.diagonal(dim1=-2, dim2=-1) - K.diagonal(dim1=-2, dim2=-1)  # C x n
        means = model.mean_module.constant.reshape(-1)
        n = x.shape[0]
        loo_mean, loo_var = (
            torch.from_numpy(a)
            for a in ref.dirichlet_leave_one_out(
                K.numpy(), noise.numpy(), likelihood.transformed_targets.numpy(), means.numpy()
            )
        )
        proba = expected_softmax(loo_mean, loo_var, clf.predict_samples, clf._class_seeds()).numpy()
    proba = clf._temper(proba)
    ref_entropy = -np.sum(proba * np.log(np.clip(proba, 1e-300, None)), axis=1) / np.log(proba.shape[1])
    ref_variance = np.mean(np.clip(loo_var.numpy() / K.diagonal(dim1=-2, dim2=-1).mT.numpy(), 0, 1), axis=1)
    ref_energy = -torch.logsumexp(loo_mean, dim=1).numpy()
    loo_ratio = loo_var.numpy() / K.diagonal(dim1=-2, dim2=-1).mT.numpy()
    ref_class_variance = np.array([min(1.0, loo_ratio[i, int(torch.argmax(loo_mean[i]))]) for i in range(n)])
    reference = clf.novelty_reference()
    got_entropy, got_variance, got_energy, got_class_variance = reference[:4]
    np.testing.assert_allclose(got_entropy, ref_entropy, atol=1e-8)
    np.testing.assert_allclose(got_variance, ref_variance, atol=1e-8)
    np.testing.assert_allclose(got_energy, ref_energy, atol=1e-8)
    np.testing.assert_allclose(got_class_variance, ref_class_variance, atol=1e-8)

    rng = np.random.default_rng(4)
    test = _texts("pos", 3, rng) + ["good awful", "great dull bad nice"]
    entropy = -probability_novelty(clf.predict_proba(test), "entropy") / np.log(2)
    _, var, prior = clf.predict_latent(test, return_prior=True)
    variance = np.mean(np.clip(var / prior, 0, 1), axis=1)

    def share_below(v, reference):
        return sum((r < v) + 0.5 * (r == v) for r in reference) / len(reference)

    want = [-(share_below(e, ref_entropy) + share_below(v, ref_variance)) / 2 for e, v in zip(entropy, variance)]
    score = clf.set_params(novelty_score="entropy-variance").score_samples(test)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    np.testing.assert_allclose(score, want, atol=1e-9)
    assert np.all((score >= -1) & (score <= 0))
    # "energy-variance": minus the log-sum-exp of the latent means in place of the entropy
    mean, _ = clf.predict_latent(test)
    minus_energy = [-np.log(np.sum(np.exp(row))) for row in mean]
    want = [-(share_below(e, ref_energy) + share_below(v, ref_variance)) / 2 for e, v in zip(minus_energy, variance)]
    score = clf.set_params(novelty_score="energy-variance").score_samples(test)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    np.testing.assert_allclose(score, want, atol=1e-9)
    assert np.all((score >= -1) & (score <= 0)) and len(set(score.tolist())) > 1
    # "energy-class-variance": the variance ratio of the class with the largest latent mean in place of the
    # classes' average, among the training documents' leave-one-out ones of their own such class
    class_variance = [min(1.0, (var / prior)[i, int(np.argmax(mean[i]))]) for i in range(len(test))]
    want = [
        -(share_below(e, ref_energy) + share_below(v, ref_class_variance)) / 2
        for e, v in zip(minus_energy, class_variance)
    ]
    score = clf.set_params(novelty_score="energy-class-variance").score_samples(test)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    np.testing.assert_allclose(score, want, atol=1e-9)
    assert np.all((score >= -1) & (score <= 0)) and len(set(score.tolist())) > 1
    score = clf.set_params(novelty_score="class-variance").score_samples(test)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    np.testing.assert_allclose(score, -np.array(class_variance), atol=1e-12)
    # "centred-energy": each class's mean leave-one-out energy over its own training documents (15 a class: no
    # class falls back on the mean of all), subtracted weighed by the tempered probabilities
    codes = np.searchsorted(clf.classes_, ["pos"] * 15 + ["neg"] * 15)
    class_energy = np.array([np.mean([-ref_energy[i] for i in range(n) if codes[i] == c]) for c in range(2)])
    np.testing.assert_allclose(reference.class_energy, class_energy, atol=1e-8)
    np.testing.assert_allclose(
        reference.centred_energy, [ref_energy[i] + proba[i] @ class_energy for i in range(n)], atol=1e-8
    )
    test_proba = clf.predict_proba(test)
    want = [-e - p @ class_energy for e, p in zip(minus_energy, test_proba)]
    score = clf.set_params(novelty_score="centred-energy").score_samples(test)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    np.testing.assert_allclose(score, want, atol=1e-8)
    # "lifted-energy": each class's mean capped at the mean leave-one-out energy of all training documents, the
    # shortfall added weighed by the tempered probabilities
    overall = np.mean([-e for e in ref_energy])
    shortfall = np.array([max(0.0, overall - class_energy[c]) for c in range(2)])
    assert shortfall.min() == 0.0  # the class above the overall mean is left as it is
    np.testing.assert_allclose(
        reference.lifted_energy, [ref_energy[i] - proba[i] @ shortfall for i in range(n)], atol=1e-8
    )
    want = [-e + p @ shortfall for e, p in zip(minus_energy, test_proba)]
    score = clf.set_params(novelty_score="lifted-energy").score_samples(test)
    clf.set_params(novelty_score=DEFAULT_SCORE)
    np.testing.assert_allclose(score, want, atol=1e-8)


def test_class_reference_energies_are_the_classes_means_or_all_documents_mean():
    """:func:`class_reference_energies` against a loop: a class's mean energy over its own documents, the mean over
    every document for a class with fewer than ``min_documents`` (here one with 2, one with none); bad input named;
    :func:`centred_energy_novelty` the energy minus the probability-weighed means, :func:`lifted_energy_novelty`
    the energy plus the probability-weighed shortfalls from the overall mean."""
    from lvgp.base.novelty import centred_energy_novelty, class_reference_energies, latent_energy, lifted_energy_novelty

    energy = np.array([1.0, 2.0, 3.0, -1.0, -2.0, 0.5, 0.7])
    codes = np.array([0, 0, 0, 1, 1, 2, 2])
    got = class_reference_energies(energy, codes, 4)
    want = [np.mean(energy[codes == c]) if np.sum(codes == c) >= 3 else np.mean(energy) for c in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert got[0] == pytest.approx(2.0) and got[1] == got[2] == got[3] == pytest.approx(np.mean(energy))
    np.testing.assert_allclose(class_reference_energies(energy, codes, 4, min_documents=1)[:3], [2.0, -1.5, 0.6])
    with pytest.raises(ValueError, match="energy and codes must be of one non-zero length"):
        class_reference_energies(energy, codes[:3], 4)
    with pytest.raises(ValueError, match=r"codes must lie in \[0, 2\)"):
        class_reference_energies(energy, codes, 2)
    rng = np.random.default_rng(1)
    mean, proba = rng.normal(size=(5, 4)), rng.dirichlet(np.ones(4), 5)
    np.testing.assert_allclose(
        centred_energy_novelty(mean, proba, got), [latent_energy(mean[i : i + 1])[0] - proba[i] @ got for i in range(5)]
    )
    with pytest.raises(ValueError, match="proba must be n x C with C = 4"):
        centred_energy_novelty(mean, proba[:, :3], got)
    # lifted: the energy plus each class's shortfall from the overall mean, weighed; a class above it adds nothing
    overall = float(np.mean(energy))
    lifted = lifted_energy_novelty(mean, proba, got, overall)
    want = [
        latent_energy(mean[i : i + 1])[0] + sum(proba[i, c] * max(0.0, overall - got[c]) for c in range(4))
        for i in range(5)
    ]
    np.testing.assert_allclose(lifted, want, rtol=1e-13)
    top = np.eye(4)[[0] * 5]  # every text certain of class 0, whose mean (2.0) is above the overall mean
    np.testing.assert_allclose(lifted_energy_novelty(mean, top, got, overall), latent_energy(mean), rtol=1e-13)
    with pytest.raises(ValueError, match="overall_energy must be finite"):
        lifted_energy_novelty(mean, proba, got, float("nan"))
    with pytest.raises(ValueError, match="proba must be n x C with C = 4"):
        lifted_energy_novelty(mean, proba[:, :3], got, overall)


def test_class_variance_ratio_is_the_predicted_classs_ratio():
    """:func:`class_variance_ratio` against a loop: the ratio of the column with the largest mean (the first
    on ties), clipped to [0, 1]; one column is its own class; mismatched shapes are named."""
    from lvgp.base.novelty import class_variance_ratio, variance_novelty

    rng = np.random.default_rng(0)
    mean, var, prior = rng.normal(size=(7, 4)), rng.uniform(0, 2, (7, 4)), rng.uniform(0.5, 1.5, (7, 4))
    mean[0] = [1.0, 3.0, 3.0, 0.0]  # a tie: the first of the two
    want = [min(1.0, var[i, int(np.argmax(mean[i]))] / prior[i, int(np.argmax(mean[i]))]) for i in range(7)]
    got = class_variance_ratio(mean, var, prior)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert got[0] == min(1.0, var[0, 1] / prior[0, 1])
    np.testing.assert_allclose(
        class_variance_ratio(mean[:, :1], var[:, :1], prior[:, :1]), np.minimum(1, var[:, 0] / prior[:, 0])
    )
    # where the predicted class's variance is small, the others' large, the class ratio is small and the mean is not
    near = class_variance_ratio(np.array([[2.0, -1.0, -1.0]]), np.array([[0.05, 0.9, 0.9]]), np.ones((1, 3)))
    assert near[0] == pytest.approx(0.05) and -variance_novelty(np.array([[0.05, 0.9, 0.9]]), np.ones((1, 3)))[0] > 0.6
    with pytest.raises(ValueError, match="mean, var and prior must be n x C arrays of one shape"):
        class_variance_ratio(mean, var[:, :2], prior)


@pytest.mark.parametrize("kind", [*REFERENCE_SCORES, "class-variance"])
def test_gp_quantile_scores_rank_an_unseen_topic_lowest_and_keep_their_reference(fitted_gp, kind):
    clf = fitted_gp.set_params(novelty_score=kind)
    rng = np.random.default_rng(5)
    inside = _texts("pos", 5, rng) + _texts("neg", 5, rng)
    before = dict(clf.__dict__)
    with pytest.warns(EmptyDocumentsWarning, match="score_samples: 1 of 11 documents have no known word") as caught:
        score = clf.score_samples(inside + ["tax bank loan rate"])
    assert len([w for w in caught if issubclass(w.category, EmptyDocumentsWarning)]) == 1
    assert score[-1] == score.min() and score[-1] < np.median(score[:-1])
    first = clf.novelty_reference()
    assert clf.novelty_reference() is first  # kept between calls
    assert clf.__dict__.keys() == before.keys() and all(clf.__dict__[k] is v for k, v in before.items())
    passes = []
    block_latents = clf._block_latents
    clf._block_latents = lambda *a, **k: passes.append(a) or block_latents(*a, **k)
    try:
        clf.score_samples(inside)
    finally:
        del clf._block_latents
    assert len(passes) == 1  # one block of 10 texts, one latent pass for the probabilities and the variances
    clf.set_params(novelty_score=DEFAULT_SCORE)


def test_the_open_set_studys_scores_of_a_gp_are_its_own_score_samples(fitted_gp):
    from lvgp.experiments.open_set import novelty_scores

    test = ["good great fine", "bad awful", "good awful dull", "nice weak"]
    proba = fitted_gp.predict_proba(test)
    passes = []
    latent_and_prior = fitted_gp._latent_and_prior
    fitted_gp._latent_and_prior = lambda *a, **k: passes.append(a) or latent_and_prior(*a, **k)
    try:
        name, scores = novelty_scores(fitted_gp, test, proba)
    finally:
        del fitted_gp._latent_and_prior
    assert name == "energy" and list(scores)[0] == "energy"
    assert len(passes) == 1  # the own score from the same latent pass as the others
    assert set(scores) == set(NOVELTY_SCORES)
    for kind in NOVELTY_SCORES:
        np.testing.assert_allclose(
            scores[kind], fitted_gp.set_params(novelty_score=kind).score_samples(test), atol=1e-12
        )
    fitted_gp.set_params(novelty_score=DEFAULT_SCORE)


def test_a_gp_gives_every_score_from_one_latent_pass(fitted_gp):
    """``novelty_scores``: each score what ``score_samples`` gives with ``novelty_score`` set to it, all the latent
    ones from one pass; the probability scores alone from ``predict_proba``."""
    from lvgp.base.novelty import latent_novelty_scores

    test = ["good great fine", "bad awful", "good awful dull", "nice weak"]
    passes = []
    latent_and_prior = fitted_gp._latent_and_prior
    fitted_gp._latent_and_prior = lambda *a, **k: passes.append(k) or latent_and_prior(*a, **k)
    try:
        every = fitted_gp.novelty_scores(test)
        assert len(passes) == 1 and passes[0]["with_proba"]  # the probabilities from the same pass
        latent = fitted_gp.novelty_scores(test, ["energy", "class-variance"])
        assert len(passes) == 2 and not passes[1]["with_proba"]
        probability = fitted_gp.novelty_scores(test, ("max-probability",))
        assert len(passes) == 2  # predict_proba's own pass
    finally:
        del fitted_gp._latent_and_prior
    assert list(every) == list(NOVELTY_SCORES)  # the Dirichlet inference offers them all
    for kind in NOVELTY_SCORES:
        np.testing.assert_allclose(
            every[kind], fitted_gp.set_params(novelty_score=kind).score_samples(test), atol=1e-12
        )
    fitted_gp.set_params(novelty_score=DEFAULT_SCORE)
    assert list(latent) == ["energy", "class-variance"] and list(probability) == ["max-probability"]
    np.testing.assert_array_equal(latent["energy"], every["energy"])
    np.testing.assert_allclose(probability["max-probability"], every["max-probability"], atol=1e-12)
    with pytest.raises(ValueError, match="kinds must be among"):
        fitted_gp.novelty_scores(test, ["mahalanobis"])
    with pytest.warns(EmptyDocumentsWarning, match="novelty_scores: 1 of 2 documents have no known word"):
        unread = fitted_gp.novelty_scores(["good great", "tax bank loan"], ["variance"])
    assert unread["variance"][1] == -1.0  # the least typical
    mean, var, prior = fitted_gp.predict_latent(test, return_prior=True)
    with pytest.raises(ValueError, match="'entropy-variance' is made of the predictive probabilities: pass proba"):
        latent_novelty_scores(["entropy-variance"], mean, var, prior, reference=fitted_gp.novelty_reference())
    with pytest.raises(ValueError, match="'energy-variance' needs the leave-one-out reference"):
        latent_novelty_scores(["energy-variance"], mean, var, prior)


@pytest.mark.parametrize("inference", ["laplace", "variational"])
def test_every_gp_inference_scores_the_unseen_class_lower(inference):
    rng = np.random.default_rng(3)
    X = _texts("pos", 12, rng) + _texts("neg", 12, rng)
    y = ["pos"] * 12 + ["neg"] * 12
    clf = LDKGPClassifier(inference=inference, random_state=0, predict_samples=64)
    if inference == "laplace":
        clf.set_params(optimizer=LBFGS(max_iter=20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
        mixed = [f"{a} {b}" for a, b in zip(rng.choice(WORDS["pos"], 6), rng.choice(WORDS["neg"], 6))]
        for kind in NOVELTY_SCORES:
            clf.set_params(novelty_score=kind)
            if kind in REFERENCE_SCORES:  # the Dirichlet inference's leave-one-out reference
                with pytest.raises(ValueError, match=f"novelty_score='{kind}' needs inference='dirichlet'"):
                    clf.score_samples(["good"])
                continue
            inside = clf.score_samples(_texts("pos", 6, rng) + _texts("neg", 6, rng))
            mean, var = clf.predict_latent(mixed)
            assert mean.shape == var.shape == (6, 1 if inference == "variational" else 2)
            assert np.all(np.isfinite(inside)) and np.all(var > 0)
        # every score but the reference ones, from one call
        every = clf.novelty_scores(mixed)
        assert list(every) == [k for k in NOVELTY_SCORES if k not in REFERENCE_SCORES]
        for kind, score in every.items():
            np.testing.assert_allclose(score, clf.set_params(novelty_score=kind).score_samples(mixed), atol=1e-12)
        with pytest.raises(ValueError, match="novelty_score='energy-variance' needs inference='dirichlet'"):
            clf.novelty_scores(mixed, ["energy", "energy-variance"])


# ------------------------------------------------------------------ the encoder detectors
@pytest.fixture
def encoder(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from lvgp.encoders import SentenceEncoder

    monkeypatch.setenv("LVGP_DATA", str(tmp_path))
    return SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=1)


def test_mahalanobis_detector_is_the_loop_over_classes_with_ledoit_wolf(encoder):
    from lvgp.baselines.encoder import EncoderMahalanobis

    rng = np.random.default_rng(4)
    X = _texts("pos", 10, rng) + _texts("neg", 10, rng) + _texts("money", 10, rng)
    y = np.array(["pos"] * 10 + ["neg"] * 10 + ["money"] * 10)
    est = EncoderMahalanobis(encoder).fit(X, y)
    vectors = encoder.encode(X).double().numpy()
    means = {c: vectors[y == c].mean(axis=0) for c in est.classes_}
    centred = np.vstack([vectors[i] - means[y[i]] for i in range(len(y))])
    precision = LedoitWolf(assume_centered=True).fit(centred).precision_
    test = ["good fine", "tax loan", "bank good"]
    tv = encoder.encode(test).double().numpy()
    ref = np.array([[-0.5 * (t - means[c]) @ precision @ (t - means[c]) for c in est.classes_] for t in tv])
    np.testing.assert_allclose(est.decision_function(test), ref, rtol=1e-8)
    np.testing.assert_allclose(est.score_samples(test), 2 * ref.max(axis=1), rtol=1e-8)
    np.testing.assert_allclose(est.predict_proba(test).sum(axis=1), 1.0)
    assert list(est.predict(test)) == list(est.classes_[ref.argmax(axis=1)])


def test_squared_mahalanobis_is_the_einsum_also_for_a_singular_precision():
    """The detector's distances as two matrix products through a square root of the precision equal the
    contraction over every difference, for a positive definite precision and a singular one (a pseudo-inverse)."""
    from lvgp.baselines.encoder import _precision_root, _squared_mahalanobis

    rng = np.random.default_rng(9)
    vectors, means = rng.standard_normal((7, 5)), rng.standard_normal((3, 5))
    a = rng.standard_normal((5, 5))
    low = rng.standard_normal((5, 2))
    for precision in (a @ a.T + np.eye(5), low @ low.T):
        diff = vectors[:, None, :] - means[None, :, :]
        reference = np.einsum("ncd,de,nce->nc", diff, precision, diff)
        np.testing.assert_allclose(_squared_mahalanobis(vectors, means, precision), reference, rtol=1e-10, atol=1e-12)
    own = _squared_mahalanobis(means, means, low @ low.T)
    assert (own >= 0.0).all() and np.abs(own.diagonal()).max() < 1e-12  # clipped: rounding never makes it negative
    # through the square root a fitted detector keeps (one eigendecomposition at fit): R R^T is the precision
    root = _precision_root(low @ low.T)
    np.testing.assert_allclose(root @ root.T, low @ low.T, atol=1e-12)
    np.testing.assert_array_equal(
        _squared_mahalanobis(vectors, means, root=root), _squared_mahalanobis(vectors, means, low @ low.T)
    )
    for both in ({"precision": low @ low.T, "root": root}, {}):
        with pytest.raises(TypeError, match="exactly one of precision and root"):
            _squared_mahalanobis(vectors, means, **both)


def test_nearest_neighbour_detector_is_the_largest_cosine(encoder):
    from lvgp.baselines.encoder import EncoderNearestNeighbor

    rng = np.random.default_rng(5)
    X = _texts("pos", 8, rng) + _texts("neg", 8, rng)
    y = np.array(["pos"] * 8 + ["neg"] * 8)
    test = ["good fine", "awful poor", "tax rate"]
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    cos = unit(encoder.encode(test).double().numpy()) @ unit(encoder.encode(X).double().numpy()).T
    est = EncoderNearestNeighbor(encoder).fit(X, y)
    np.testing.assert_allclose(est.score_samples(test), [max(row) for row in cos], rtol=1e-10)
    assert list(est.predict(test)) == [y[int(np.argmax(row))] for row in cos]
    three = EncoderNearestNeighbor(encoder, n_neighbors=3).fit(X, y)
    np.testing.assert_allclose(three.score_samples(test), [np.mean(sorted(row)[-3:]) for row in cos], rtol=1e-10)


# ------------------------------------------------------------------ the study
def _tsv(path, rows: list[tuple[str, str]]) -> str:
    path.write_text("\n".join(["text\tlabel", *(f"{t}\t{label}" for t, label in rows)]) + "\n")
    return str(path)


@pytest.fixture
def corpus(tmp_path, tiny_encoder):
    tiny_encoder(None, 0)  # the pretrained encoder's name resolves to a tiny random BERT
    rng = np.random.default_rng(6)
    words = {**WORDS, "sport": "goal team match score win".split()}
    rows = [(" ".join(rng.choice(words[c], 4)) + f" note {i}", c) for i in range(30) for c in words]
    return _tsv(tmp_path / "toy.tsv", rows)


def test_open_set_study_end_to_end(corpus, tmp_path, capsys):
    from lvgp.experiments.cli import main

    methods = "gpc-bow-encoder-rbf,gpc-encoder,gpc-bow,tfidf-encoder-logreg,encoder-mahalanobis,encoder-knn,svm"
    out = tmp_path / "out"
    argv = ["compare", "open-set", "--dataset", corpus, "--unknown-classes", "1", "--per-class", "4,8"]
    argv += ["--splits", "2", "--ldk-max-iter", "5", "--methods", methods, "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())
    assert len(records) == 7 * 2 * 2
    for r in records:
        assert len(r["unknown_classes"]) == 1
        assert r["n_train"] == 3 * r["per_class"]  # the known classes only, nested samples
        assert r["n_in_scope"] + r["n_out_of_scope"] == 120 - 3 * 8  # the rows not labelled at the largest size
        assert r["n_out_of_scope"] == 30
        for key in ("oos_auroc", "oos_aupr", "oos_fpr95", "accuracy"):
            assert 0 <= r[key] <= 1
        assert len(r["roc"]["tpr"]) == 101 and r["novelty_score"] in r["scores"]
        assert r["scores"][r["novelty_score"]]["oos_auroc"] == r["oos_auroc"]
    by = {(r["method"], r["split"], r["per_class"]): r for r in records}
    assert set(by["gpc-bow-encoder-rbf", 0, 4]["scores"]) == set(NOVELTY_SCORES)
    assert set(by["tfidf-encoder-logreg", 0, 4]["scores"]) == {"entropy", "max-probability", "energy"}
    for method in ("gpc-bow-encoder-rbf", "gpc-encoder", "gpc-bow"):  # every GP's since rule 24 (dev)
        assert by[method, 0, 4]["novelty_score"] == "lifted-energy"
    assert by["svm", 0, 4]["novelty_score"] == "max-decision"
    assert by["encoder-mahalanobis", 0, 4]["novelty_score"] == "mahalanobis"
    assert "log_loss" not in by["encoder-knn", 0, 4]
    table = (out / "table.md").read_text()
    assert "GP classifier (BoW + encoder RBF)" in table and "FPR95" in table and "Every novelty score" in table
    # the paired block: the first method minus each other, split by split, from the records by hand
    diffs = [
        by["gpc-bow-encoder-rbf", s, 8]["oos_auroc"] - by["encoder-mahalanobis", s, 8]["oos_auroc"] for s in (0, 1)
    ]
    cell = f"{np.mean(diffs):+.3f} ± {np.std(diffs, ddof=1) / np.sqrt(2):.3f} ({sum(d > 0 for d in diffs)} of 2 ahead)"
    assert f"| Mahalanobis (encoder) | 8 | {cell} |" in table
    assert "GP classifier (BoW + encoder RBF) minus each method, split by split" in table
    assert (out / "roc.png").stat().st_size > 10_000
    # resumed: the report from the cells alone, and it says so (results.json is rewritten from them)
    capsys.readouterr()
    assert main(["compare", "open-set", "--report-only", "--out", str(out), "--quiet"]) == 0
    assert (
        f"report only: results.json and the table rebuilt from {out / 'cells'} (28 records)" in capsys.readouterr().out
    )


def test_the_study_records_each_methods_reject_option_with_reject_keep(corpus, tmp_path):
    """``--reject-keep``: the GP's threshold is its own ``novelty_threshold`` (leave-one-out), the SVM's the
    conformal quantile of its 5-fold out-of-fold scores, each by hand on the cell's labelled texts; the shares
    are those of the test documents' own scores at or above it; the table shows them."""
    from lvgp.base.novelty import conformal_threshold
    from lvgp.experiments.cli import main
    from lvgp.experiments.open_set import OpenSetStudy
    from lvgp.models.open_set import out_of_fold_scores

    out = tmp_path / "out"
    argv = ["compare", "open-set", "--dataset", corpus, "--unknown-classes", "1", "--per-class", "8", "--splits", "1"]
    argv += ["--ldk-max-iter", "5", "--methods", "gpc-bow,svm", "--reject-keep", "0.9", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = {r["method"]: r for r in json.loads((out / "results.json").read_text())}
    assert records["gpc-bow"]["reject_threshold_source"] == "leave-one-out"
    assert records["svm"]["reject_threshold_source"] == "cross-validation"
    study = OpenSetStudy(
        dataset=corpus, unknown_classes=1, per_class=(8,), splits=1, ldk_max_iter=5, methods=("gpc-bow", "svm")
    )
    split = study.split(0)
    x, y = split.training(8)
    inside = ~split.out_of_scope
    for method in ("gpc-bow", "svm"):
        cell = {"method": method, "split": 0, "params": {"per_class": 8}}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = study.estimator(cell).fit(x, y)
            if method == "gpc-bow":
                threshold = model.novelty_threshold(0.9)
            else:
                threshold = conformal_threshold(
                    out_of_fold_scores(study.estimator(cell), x, y, 5, study.cell_seed(cell)), 0.9
                )
            score = model.score_samples(split.test_texts)
        r = records[method]
        assert r["reject_threshold"] == pytest.approx(threshold, rel=1e-9, abs=1e-12)
        assert r["reject_kept"] == pytest.approx(np.mean(score[inside] >= threshold))
        assert r["reject_oos_accepted"] == pytest.approx(np.mean(score[~inside] >= threshold))
    table = (out / "table.md").read_text()
    assert "At each method's own threshold, chosen from its labelled texts alone to keep 0.9" in table
    assert "| GP classifier (BoW) | 8 | leave-one-out |" in table and "| cross-validation |" in table


def test_the_reject_table_bolds_the_fewest_accepted_among_thresholds_that_kept_enough():
    """A threshold that keeps fewer in-scope texts than asked accepts fewer of both: it is not the best."""
    from types import SimpleNamespace

    from lvgp.experiments.open_set import reject_markdown

    def record(method, kept, accepted):
        return {
            "method": method,
            "split": 0,
            "per_class": 10,
            "reject_kept": kept,
            "reject_oos_accepted": accepted,
            "reject_threshold_source": "cross-validation",
        }

    study = SimpleNamespace(reject_keep=0.95, per_class=(10,), splits=1, label=str)
    table = reject_markdown(
        [record("a", 0.90, 0.10), record("b", 0.96, 0.50), record("c", 0.97, 0.60)], study, ["a", "b", "c"]
    )
    assert "| a | 10 | cross-validation | 0.900 ± 0.000 | 0.100 ± 0.000 |" in table
    assert "| b | 10 | cross-validation | 0.960 ± 0.000 | **0.500 ± 0.000** |" in table
    assert reject_markdown([{"method": "a", "split": 0, "per_class": 10}], study, ["a"]) == ""


def test_paired_differences_are_taken_over_the_splits_both_methods_ran():
    from lvgp.experiments.open_set import paired_cell, paired_differences

    def record(method, split, auroc):
        return {"method": method, "split": split, "per_class": 10, "oos_auroc": auroc}

    records = [
        record("a", 0, 0.9),
        record("a", 1, 0.8),
        record("a", 2, 0.7),
        record("b", 0, 0.85),
        record("b", 2, 0.75),
    ]
    records.append(record("b", 1, None))  # a split without the figure is left out, not counted as a loss
    diffs = paired_differences(records, "a", "b", 10, "oos_auroc")
    np.testing.assert_allclose(diffs, [0.05, -0.05])
    assert paired_cell(diffs) == f"+0.000 ± {0.05:.3f} (1 of 2 ahead)"
    assert paired_cell(diffs[:1]) == "+0.050 (1 of 1 ahead)"  # no standard error from one split
    assert paired_cell(paired_differences(records, "a", "c", 10, "oos_auroc")) == "–"


def test_open_set_study_takes_an_out_of_scope_label_and_a_test_file(corpus, tmp_path):
    from lvgp.experiments.cli import main

    rng = np.random.default_rng(7)
    test_rows = [(" ".join(rng.choice(WORDS["pos"], 3)), "pos"), (" ".join(rng.choice(WORDS["neg"], 3)), "neg")] * 5
    test_rows += [("what time is it", "oos"), ("book me a flight", "oos"), ("tax rate today", "money")] * 3
    test = _tsv(tmp_path / "test.tsv", test_rows)
    out = tmp_path / "out"
    argv = ["compare", "open-set", "--dataset", corpus, "--unknown-label", "oos", "--test-dataset", test]
    argv += ["--per-class", "5", "--splits", "1", "--methods", "encoder-knn,svm", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())
    assert {r["n_out_of_scope"] for r in records} == {6}  # the test file's 'oos' rows
    assert {r["n_in_scope"] for r in records} == {13}
    assert {r["n_train"] for r in records} == {20}  # every class of the training file is known


def test_the_tfidf_gp_keeps_labelled_queries_of_stop_words_alone_and_records_their_count(tiny_encoder, tmp_path):
    """An intent set holds queries of stop words alone ("no", "what is it"): the tf-idf GP (no encoder) keeps them as
    the empty set (``on_empty="keep"``) where it raised, the cell's record counts them in its warnings, and its
    scores are finite; the other methods read them as before."""
    from lvgp.experiments.cli import main

    tiny_encoder(None, 0)
    rng = np.random.default_rng(8)
    rows = [(" ".join(rng.choice(WORDS[c], 3)), c) for c in ("pos", "neg") for _ in range(8)]
    rows += [(text, "no") for text in ("no", "not", "no no", "none", "nothing", "not it", "no not", "never")]
    rows += [("what is it", "oos"), ("can you", "oos")]
    test_rows = [(" ".join(rng.choice(WORDS[c], 3)), c) for c in ("pos", "neg") for _ in range(3)]
    test_rows += [("no", "no"), ("not this", "no"), ("book a flight", "oos"), ("is it", "oos")]
    out = tmp_path / "out"
    argv = ["compare", "open-set", "--dataset", _tsv(tmp_path / "train.tsv", rows), "--unknown-label", "oos"]
    argv += ["--test-dataset", _tsv(tmp_path / "test.tsv", test_rows), "--per-class", "5", "--splits", "1"]
    argv += ["--methods", "gpc-bow,svm", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = {r["method"]: r for r in json.loads((out / "results.json").read_text())}
    bow = records["gpc-bow"]
    assert "error" not in bow and np.isfinite([bow["oos_auroc"], bow["accuracy"], bow["log_loss"]]).all()
    assert re.search(r"5 of 15 training documents have no word .*kept as the empty set", str(bow["warnings"]))
    assert "EmptyDocumentsWarning" not in records["svm"].get("warnings", {})


def test_a_test_label_of_no_training_row_is_out_of_scope_with_a_warning_that_counts_it(corpus, tmp_path):
    """A test file's label that no training row has, besides ``--unknown-label``, is out of scope (a test file's
    own out-of-scope label), and the study says so with its counts: a misspelt in-scope label is not scored as out
    of scope unnoticed."""
    from lvgp.experiments.open_set import OpenSetStudy

    rows = [("good fine", "pos"), ("bad awful", "neg"), ("what time is it", "oos"), ("great nice", "pso")] * 3
    test = _tsv(tmp_path / "test.tsv", rows)
    study = OpenSetStudy(dataset=corpus, unknown_label="oos", test_dataset=test, per_class=(5,))
    with pytest.warns(
        UserWarning,
        match=r"3 test documents of .*test.tsv carry a label of no training row "
        r"\(\{'pso': 3\}\): they count as out of scope, as the unknown classes' test documents do",
    ):
        study.check_data()
    split = study.split(0)
    assert split.out_of_scope.tolist() == [False, False, True, True] * 3
    clean = [r for r in rows if r[1] != "pso"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unseen label, no warning
        OpenSetStudy(
            dataset=corpus, unknown_label="oos", test_dataset=_tsv(tmp_path / "t2.tsv", clean), per_class=(5,)
        ).check_data()


def test_the_unlabelled_texts_are_the_training_files_rows_that_are_not_test_documents(corpus, tmp_path):
    """The point cloud of ``gpc-pool-bow-encoder-rbf`` (``--unlabeled-texts``): a TSV alone lends its test
    documents from its own rows, so they are left out (the rows ``--test-size`` did not draw stay in, labelled
    or not); ``all`` keeps every class's, ``known-classes`` the known classes' alone, ``none`` nothing; with a
    separate test file every training row is in."""
    from lvgp.experiments.open_set import OpenSetStudy

    splits = {
        kind: OpenSetStudy(
            dataset=corpus, unknown_classes=1, per_class=(4, 8), test_size=50, seed=3, unlabeled_texts=kind
        ).split(0)
        for kind in ("all", "known-classes", "none")
    }
    split = splits["all"]
    cloud = set(split.cloud_rows.tolist())
    assert len(cloud) == 120 - 50 and len(split.cloud_texts()) == 70
    labelled = {int(i) for c in split.known for i in split.order[c][:8]}
    assert labelled <= cloud  # the labelled texts are in the cloud too
    assert not set(split.test_texts) & set(split.cloud_texts())  # (the toy rows are distinct texts)
    assert set(split.pool_labels[split.cloud_rows]) == {*split.known, *split.unknown}
    known = splits["known-classes"]
    assert known.cloud_rows.tolist() == [i for i in split.cloud_rows if split.pool_labels[i] in split.known]
    assert labelled <= set(known.cloud_rows.tolist()) and set(known.pool_labels[known.cloud_rows]) == set(known.known)
    assert len(splits["none"].cloud_rows) == 0
    assert known.test_texts == split.test_texts == splits["none"].test_texts  # the option moves no test document
    test = _tsv(tmp_path / "test.tsv", [("good fine", "pos"), ("what time is it", "oos")] * 3)
    split = OpenSetStudy(dataset=corpus, unknown_label="oos", test_dataset=test, unlabeled_texts="all").split(0)
    assert split.cloud_rows.tolist() == list(range(120))


def test_the_pool_gp_adds_the_unlabelled_texts_cluster_kernel(corpus, tmp_path):
    """``gpc-pool-bow-encoder-rbf`` runs in the study and records its cloud's size; its kernel is
    ``gpc-bow-encoder-rbf``'s plus a cluster kernel of the cloud's texts, two eigenvectors a *known* class,
    shared by the cells of a split; its own score is the stationary GPs'."""
    from lvgp.experiments.cli import main
    from lvgp.experiments.open_set import OpenSetStudy, _gpc_pool, cloud_kernel
    from lvgp.kernels import ClusterKernel

    out = tmp_path / "out"
    argv = ["compare", "open-set", "--dataset", corpus, "--unknown-classes", "1", "--per-class", "4", "--splits", "1"]
    argv += ["--test-size", "60", "--ldk-max-iter", "5", "--out", str(out), "--quiet", "--unlabeled-texts", "all"]
    argv += ["--methods", "gpc-pool-bow-encoder-rbf,gpc-bow-encoder-rbf"]
    assert main(argv) == 0
    by = {r["method"]: r for r in json.loads((out / "results.json").read_text())}
    assert by["gpc-pool-bow-encoder-rbf"]["n_unlabeled"] == 60
    assert by["gpc-pool-bow-encoder-rbf"]["unlabeled_texts"] == "all"
    assert "n_unlabeled" not in by["gpc-bow-encoder-rbf"]
    assert by["gpc-pool-bow-encoder-rbf"]["novelty_score"] == "lifted-energy"
    assert 0 <= by["gpc-pool-bow-encoder-rbf"]["oos_auroc"] <= 1
    study = OpenSetStudy(
        dataset=corpus, unknown_classes=1, per_class=(4,), test_size=60, ldk_max_iter=5, unlabeled_texts="all"
    )
    part = cloud_kernel(study, 0)
    assert part is cloud_kernel(study, 0)  # once a split
    assert isinstance(part, ClusterKernel) and part.cloud.shape[0] == 60 and part.n_components == 2 * 3
    x, y = study.split(0).training(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _gpc_pool(study, {"method": "gpc-pool-bow-encoder-rbf", "split": 0, "params": {}}, None).fit(x, y)
    assert [m for m in model.model_.covar_module.modules() if isinstance(m, ClusterKernel)] == [part]


def test_the_unlabeled_words_option_adds_the_words_cluster_part(corpus, tmp_path):
    """``--unlabeled-words lsa``: ``gpc-pool-bow-encoder-rbf``'s kernel gets, beside the encoder's cluster part, the
    joined cloud's (:func:`~lvgp.experiments.joined_cloud.words_cluster_kernel_of_texts` of the split's unlabelled
    texts, reading its test documents), made once a split; the records and the table name the setting; the default
    (``none``) and a study written before the option have the encoder's part alone."""
    from lvgp.experiments.cli import main
    from lvgp.experiments.joined_cloud import JoinedCloudClusterKernel
    from lvgp.experiments.open_set import UNLABELED_WORDS, OpenSetStudy, _gpc_pool, cloud_kernel, cloud_words_kernel
    from lvgp.experiments.study import load_study
    from lvgp.kernels import ClusterKernel

    options = dict(dataset=corpus, unknown_classes=1, per_class=(4,), test_size=60, ldk_max_iter=5)
    study = OpenSetStudy(**options, unlabeled_texts="all", unlabeled_words="lsa")
    assert UNLABELED_WORDS == "none" and OpenSetStudy(**options, unlabeled_texts="all").unlabeled_words == "none"
    words = cloud_words_kernel(study, 0)
    assert words is cloud_words_kernel(study, 0)  # once a split
    split = study.split(0)
    assert isinstance(words, JoinedCloudClusterKernel) and words.cloud.shape[0] == len(split.cloud_rows) == 60
    assert words.n_components == 2 * len(split.known) and len(words.inputs) == 60 + len(split.test_texts)
    x, y = split.training(4)
    cell = {"method": "gpc-pool-bow-encoder-rbf", "split": 0, "params": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _gpc_pool(study, cell, None).fit(x, y)
        proba = model.predict_proba(split.test_texts)  # the test documents are read through their joined vectors
    parts = [m for m in model.model_.covar_module.modules() if isinstance(m, ClusterKernel)]
    assert parts == [cloud_kernel(study, 0), words] and np.allclose(proba.sum(axis=1), 1)
    out = tmp_path / "out"
    argv = ["compare", "open-set", "--dataset", corpus, "--unknown-classes", "1", "--per-class", "4", "--splits", "1"]
    argv += ["--test-size", "60", "--ldk-max-iter", "5", "--out", str(out), "--quiet", "--unlabeled-texts", "all"]
    assert main([*argv, "--methods", "gpc-pool-bow-encoder-rbf", "--unlabeled-words", "lsa"]) == 0
    (record,) = json.loads((out / "results.json").read_text())
    assert record["unlabeled_words"] == "lsa" and record["unlabeled_texts"] == "all"
    table = (out / "table.md").read_text()
    assert "unlabelled texts all (--unlabeled-texts); a cluster part of their encoder vectors joined to" in table
    assert "their words: lsa (--unlabeled-words)" in table
    study_file = json.loads((out / "study.json").read_text())
    study_file.pop("unlabeled_words")  # a study written before the option
    (out / "study.json").write_text(json.dumps(study_file))
    assert load_study(out).unlabeled_words == "none"


@pytest.mark.parametrize(
    "extra,match",
    [
        ([], "nothing is out of scope"),
        (["--unknown-label", "nope"], "--unknown-label 'nope' is the label of no row"),
        (["--unknown-classes", "3"], "--unknown-classes 3: .* has 4 classes and at least 2 must stay known"),
        (["--dataset", "r8", "--test-dataset", "x.tsv", "--unknown-classes", "1"], "has its own test split"),
        (
            ["--unknown-classes", "1", "--per-class", "5,30"],
            ": 30 of 30 test documents are out of scope \\(a file alone: its in-scope test documents are the known "
            "classes' rows beyond --per-class 30, and no known class has more than 30\\)",
        ),
        (
            ["--unknown-classes", "1", "--methods", "gpc-pool-bow-encoder-rbf"],
            "gpc-pool-bow-encoder-rbf reads unlabelled texts: pass --unlabeled-texts",
        ),
    ],
)
def test_open_set_study_refuses_bad_options_before_any_cell(corpus, tmp_path, extra, match, capsys):
    from lvgp.experiments.cli import main

    argv = ["compare", "open-set", "--dataset", corpus, "--methods", "svm", "--out", str(tmp_path / "o"), "--quiet"]
    with pytest.raises(SystemExit) as exited:  # one line, exit 2, as every option error
        main(argv + extra)
    assert exited.value.code == 2
    assert __import__("re").search(match, capsys.readouterr().err)
    assert not (tmp_path / "o" / "cells").exists()


def test_an_exact_gp_classifier_too_large_for_memory_says_so_before_allocating(monkeypatch):
    """15,000 texts of 150 intents hold 150 dense 15,000 x 15,000 covariances: the fit names the sizes
    and the way out instead of being killed by the system (which ends a study's whole process)."""
    import lvgp.base.device as device_module

    monkeypatch.setattr(device_module, "available_memory", lambda device: 2**20)  # 1 MiB free
    X = ["good film", "bad film", "great plot", "awful plot"]
    with pytest.raises(
        MemoryError,
        match=r"the dirichlet GP classifier on 1,200 documents and 2 classes: 6 dense 1,200 x 1,200 float64",
    ):
        LDKGPClassifier(random_state=0).fit(X * 300, ["a", "b"] * 600)
    # shared output scale and noise: one factorization for all classes, whatever their number
    labels = [f"c{i % 40}" for i in range(1200)]
    with pytest.raises(MemoryError, match=r"40 classes: 120 dense"):
        LDKGPClassifier(random_state=0).fit(X * 300, labels)
    with pytest.raises(MemoryError, match=r"40 classes: 6 dense"):
        LDKGPClassifier(class_hyperparameters="shared", random_state=0).fit(X * 300, labels)


def test_the_tf_idf_gps_read_tokens_of_two_letters(toy_topics_tsv):
    """Rule 27 (``benchmarks/README.md``): the study's tf-idf GPs read its vocabulary with tokens of two letters or
    more (every English stop word still out, the study's cut kept); the encoder-alone GPs are as they were."""
    from lvgp.experiments.open_set import OpenSetStudy

    for cut in (0.0, 0.05):
        study = OpenSetStudy(dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, min_df_fraction=cut)
        for method in ("gpc-bow", "gpc-bow-encoder", "gpc-bow-encoder-rbf"):
            vocabulary = study.estimator({"method": method, "split": 0, "params": {"per_class": 3}}).vocabulary
            assert vocabulary.tokenize("shr 12 cts vs 10 cts, it is") == ["shr", "cts", "vs", "cts"]
            assert vocabulary.min_df == (cut or 1)
    assert (
        study.estimator({"method": "gpc-encoder-rbf", "split": 0, "params": {"per_class": 3}}).vocabulary.min_token_len
        == 3
    )


def test_a_cells_fit_seconds_count_the_models_making(corpus, monkeypatch):
    """``gpc-pool-*``'s cluster parts are made with the model, outside ``fit``: a cell's ``fit_seconds`` counts the
    model's making too (here a making that takes 0.3 s)."""
    import time

    from lvgp.experiments import open_set

    study = open_set.OpenSetStudy(dataset=corpus, unknown_classes=1, per_class=(8,), splits=1, methods=("svm",))
    build = open_set.OpenSetStudy.estimator

    def slow_estimator(self, cell, data=None):
        time.sleep(0.3)
        return build(self, cell, data)

    monkeypatch.setattr(open_set.OpenSetStudy, "estimator", slow_estimator)
    record = open_set.run_cell(study, {"method": "svm", "split": 0, "params": {"per_class": 8}})
    assert record["fit_seconds"] >= 0.3 and 0 <= record["accuracy"] <= 1
