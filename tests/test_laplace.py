"""The multi-class Laplace approximation (``lvgp.models.laplace``; Rasmussen & Williams, alg.
3.3-3.4, eq. 3.44), each output against an independent reference:

* a slow dense Newton's method in numpy on the full ``Cn x Cn`` system (``W = D - Pi Pi^T``
  formed, ``log|I + W^1/2 K W^1/2|`` by ``slogdet``);
* two classes: the softmax GP with kernel ``K`` is scikit-learn's binary logistic Laplace GP with
  kernel ``2K`` (the difference of the two latents; their sum carries no information) -- its
  log marginal likelihood and latent mode;
* a linear kernel ``s X X^T`` on explicit features: the mode is ``X W`` for scikit-learn's
  multinomial ``LogisticRegression(C=s, fit_intercept=False)``;
* the gradient of the log evidence (the mode's implicit derivative included): central finite
  differences, the mode found again at each point;
* the predictive covariance: the dense ``diag(k**) - Q^T (K + W^-1)^-1 Q``;
* the Newton steps by conjugate gradients: the Choleskys' mode, step for step.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import logsumexp, softmax

from lvgp.models.laplace import (
    ClassCovariances,
    expected_softmax_correlated,
    find_mode,
    log_evidence,
    mode_parts,
    predictive,
)


def _rbf(X, Z, lengthscale):
    d = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-0.5 * d / lengthscale**2)


def _problem(n=24, C=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    centers = rng.normal(scale=1.5, size=(C, 2))
    codes = np.argmin(((X[:, None] - centers[None]) ** 2).sum(-1), axis=1)
    codes[:C] = np.arange(C)  # every class present
    Y = np.eye(C)[codes].T  # C x n
    return X, codes, Y


def _dense_reference(Ks, m, Y, iters=200):
    """Newton's method on the full Cn system, in numpy; the mode and log q (eq. 3.44)."""
    C, n = Y.shape
    K = np.zeros((C * n, C * n))
    for c in range(C):
        K[c * n : (c + 1) * n, c * n : (c + 1) * n] = Ks[c]
    mean = np.repeat(m, n)
    y = Y.reshape(-1)
    f = mean.copy()
    for _ in range(iters):
        pi = softmax(f.reshape(C, n), axis=0)
        Pi = np.vstack([np.diag(pi[c]) for c in range(C)])
        W = np.diag(pi.reshape(-1)) - Pi @ Pi.T
        grad = y - pi.reshape(-1)
        # f_new - mean = (K^-1 + W)^-1 (W (f - mean) + grad)
        new = mean + K @ np.linalg.solve(np.eye(C * n) + W @ K, W @ (f - mean) + grad)
        if np.abs(new - f).max() < 1e-13:
            f = new
            break
        f = new
    pi = softmax(f.reshape(C, n), axis=0)
    Pi = np.vstack([np.diag(pi[c]) for c in range(C)])
    W = np.diag(pi.reshape(-1)) - Pi @ Pi.T
    a = np.linalg.solve(K, f - mean)
    _, logdet = np.linalg.slogdet(np.eye(C * n) + W @ K)  # |I + W^1/2 K W^1/2| = |I + W K|
    log_q = -0.5 * a @ (f - mean) + y @ f - logsumexp(f.reshape(C, n), axis=0).sum() - 0.5 * logdet
    return f.reshape(C, n), log_q, W, K


def _tensors(Ks, m, Y):
    return (torch.from_numpy(np.asarray(Ks, dtype=np.float64)), torch.from_numpy(np.asarray(m, dtype=np.float64)),
            torch.from_numpy(np.asarray(Y, dtype=np.float64)))  # fmt: skip


def test_the_mode_and_the_log_evidence_are_the_dense_newtons():
    X, codes, Y = _problem(n=24, C=3)
    Ks = np.stack([s * _rbf(X, X, ell) for s, ell in ((2.0, 0.8), (1.0, 1.3), (3.0, 0.5))])
    m = np.array([0.3, -0.2, 0.1])
    f_ref, log_q_ref, _, _ = _dense_reference(Ks, m, Y)
    K, mt, Yt = _tensors(Ks, m, Y)
    mode = find_mode(K, mt, Yt)
    assert mode.gradient < 1e-10 and mode.n_iter < 30
    np.testing.assert_allclose(mode.f.numpy(), f_ref, atol=1e-9)
    np.testing.assert_allclose(mode.a.numpy(), Y - softmax(f_ref, axis=0), atol=1e-9)  # a = y - pi at the mode
    np.testing.assert_allclose(float(log_evidence(K, mt, Yt, mode)), log_q_ref, rtol=1e-10)
    # warm start from the mode: no step left to take
    again = find_mode(K, mt, Yt, mode.a)
    assert again.n_iter == 0


@pytest.mark.parametrize("shared", [True, False])
def test_conjugate_gradients_find_the_choleskys_mode_step_for_step(shared):
    """find_mode(solver="cg") against alg. 3.3's Choleskys and the dense numpy Newton: the same mode and
    evidence, the same Newton steps, from the prior mean and from a warm start; the covariances dense or
    in parts (a shared base kernel, per-class scales, the intercepts' variance)."""
    X, codes, Y = _problem(n=40, C=4, seed=11)
    base = _rbf(X, X, 0.9)
    scales = np.array([2.0, 2.0, 2.0, 2.0]) if shared else np.array([2.0, 0.7, 3.5, 1.2])
    Ks = scales[:, None, None] * base + 0.5
    m = np.array([0.2, -0.1, 0.0, 0.3])
    f_ref, log_q_ref, _, _ = _dense_reference(Ks, m, Y)
    K, mt, Yt = _tensors(Ks, m, Y)
    parts = ClassCovariances(
        torch.from_numpy(base), torch.tensor(2.0, dtype=torch.float64) if shared else torch.from_numpy(scales),
        torch.tensor(0.5, dtype=torch.float64), 4,
    )  # fmt: skip
    torch.testing.assert_close(parts.dense(), K, rtol=1e-15, atol=1e-15)
    V = torch.randn(4, 40, dtype=torch.float64)
    torch.testing.assert_close(parts.matmul(V), (K @ V.unsqueeze(-1)).squeeze(-1), rtol=1e-13, atol=1e-13)
    if shared:
        assert parts.dense().stride(0) == 0  # expanded, not copied
    cholesky = find_mode(K, mt, Yt, solver="cholesky")
    for covariances in (K, parts):
        cg = find_mode(covariances, mt, Yt, solver="cg")
        assert cg.gradient < 1e-10 and cg.n_iter == cholesky.n_iter and cg.cg_iterations > 0
        np.testing.assert_allclose(cg.f.numpy(), f_ref, atol=1e-9)
        torch.testing.assert_close(cg.f, cholesky.f, atol=1e-11, rtol=0)
        np.testing.assert_allclose(float(log_evidence(K, mt, Yt, cg)), log_q_ref, rtol=1e-10)
    # a warm start half-way: the same mode again
    warm = find_mode(parts, mt, Yt, 0.5 * cholesky.a, solver="cg")
    assert warm.gradient < 1e-10
    torch.testing.assert_close(warm.f, cholesky.f, atol=1e-8, rtol=0)  # a gradient of 1e-10 times K
    # "auto" takes the Choleskys below CG_FROM_DOCUMENTS documents
    assert find_mode(K, mt, Yt).cg_iterations == 0
    with pytest.raises(ValueError, match="solver"):
        find_mode(K, mt, Yt, solver="lu")


def test_two_classes_are_scikit_learns_binary_laplace_gp_with_twice_the_kernel():
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    X, codes, Y = _problem(n=30, C=2, seed=3)
    scale, lengthscale = 1.7, 0.9
    K1 = scale * _rbf(X, X, lengthscale)
    K, m, Yt = _tensors(np.stack([K1, K1]), np.zeros(2), Y)
    mode = find_mode(K, m, Yt)
    ours = float(log_evidence(K, m, Yt, mode))
    kernel = ConstantKernel(2 * scale, "fixed") * RBF(lengthscale, "fixed")
    gpc = GaussianProcessClassifier(kernel, optimizer=None).fit(X, codes)
    theirs = gpc.base_estimator_.log_marginal_likelihood_value_
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    # the latent of the binary GP is the difference of the two classes' latents (class 1 over class 0)
    difference = (mode.f[1] - mode.f[0]).numpy()
    np.testing.assert_allclose(difference, gpc.base_estimator_.f_cached, atol=1e-6)


def test_a_linear_kernel_gives_the_mode_of_multinomial_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    X, codes, Y = _problem(n=40, C=3, seed=5)
    features = np.column_stack([X, X[:, :1] * X[:, 1:], np.ones(len(X))])
    s = 2.5  # the prior variance of the weights: L2 penalty 1 / (2 s), scikit-learn's C = s
    K, m, Yt = _tensors(np.stack([s * features @ features.T] * 3), np.zeros(3), Y)
    mode = find_mode(K, m, Yt, tol=1e-12)
    lr = LogisticRegression(C=s, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(features, codes)
    np.testing.assert_allclose(mode.f.numpy(), (features @ lr.coef_.T).T, atol=1e-5)


def test_the_gradient_of_the_log_evidence_is_the_implicit_one():
    """Central differences of log q in the kernels' scales and lengthscales and the means, the mode
    found again at each point: the one-Newton-step gradient matches them."""
    X, codes, Y = _problem(n=18, C=3, seed=7)
    D = torch.from_numpy(((X[:, None] - X[None]) ** 2).sum(-1))
    Yt = torch.from_numpy(Y)

    def value(params: torch.Tensor, differentiable: bool) -> torch.Tensor:
        log_scale, log_length, m = params[:3], params[3:6], params[6:]
        K = torch.exp(log_scale)[:, None, None] * torch.exp(-0.5 * D / torch.exp(log_length)[:, None, None] ** 2)
        mode = find_mode(K, m, Yt, tol=1e-13)
        return log_evidence(K, m, Yt, mode) if differentiable else log_evidence(K.detach(), m.detach(), Yt, mode)

    theta = torch.tensor([0.5, 0.0, 0.9, -0.3, 0.2, 0.1, 0.4, -0.1, 0.0], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(value(theta, True), theta)
    eps = 1e-5
    numeric = []
    for i in range(len(theta)):
        step = torch.zeros_like(theta)
        step[i] = eps
        with torch.no_grad():
            numeric.append(float(value(theta + step, False) - value(theta - step, False)) / (2 * eps))
    np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_the_predictive_covariance_is_the_dense_formula():
    X, codes, Y = _problem(n=20, C=3, seed=2)
    T = np.random.default_rng(9).normal(size=(5, 2))
    pars = ((2.0, 0.8), (1.0, 1.3), (3.0, 0.5))
    Ks = np.stack([s * _rbf(X, X, ell) for s, ell in pars])
    cross = np.stack([s * _rbf(X, T, ell) for s, ell in pars])  # C x n x n*
    m = np.array([0.1, 0.0, -0.2])
    f_ref, _, W, K_full = _dense_reference(Ks, m, Y)
    K, mt, Yt = _tensors(Ks, m, Y)
    mode = find_mode(K, mt, Yt)
    mean, cov = predictive(torch.from_numpy(cross), torch.from_numpy(np.stack([np.full(5, s) for s, _ in pars])), mt,
                           Yt, mode, mode_parts(K, mode.f))  # fmt: skip
    C, n = Y.shape
    Q = np.zeros((C * n, C, 5))
    for c in range(C):
        Q[c * n : (c + 1) * n, c, :] = cross[c]
    inner = W @ np.linalg.inv(np.eye(C * n) + K_full @ W)  # (K + W^-1)^-1, W singular (rank n(C-1))
    for p in range(5):
        expected = np.diag([s for s, _ in pars]) - Q[:, :, p].T @ inner @ Q[:, :, p]
        np.testing.assert_allclose(cov[p].numpy(), expected, atol=1e-10)
        expected_mean = m + np.array([cross[c][:, p] @ (Y[c] - softmax(f_ref, axis=0)[c]) for c in range(C)])
        np.testing.assert_allclose(mean[p].numpy(), expected_mean, atol=1e-9)


def test_correlated_monte_carlo_follows_the_classes_and_converges():
    rng = np.random.default_rng(1)
    mean = torch.from_numpy(rng.normal(size=(4, 3)))
    A = torch.from_numpy(rng.normal(size=(4, 3, 3)))
    cov = A @ A.mT * 0.3
    seeds = [11, 22, 33]
    out = expected_softmax_correlated(mean, cov, 64, seeds)
    perm = [2, 0, 1]
    moved = expected_softmax_correlated(mean[:, perm], cov[:, perm][:, :, perm], 64, [seeds[i] for i in perm])
    torch.testing.assert_close(moved, out[:, perm], atol=1e-13, rtol=0)
    np.testing.assert_allclose(out.sum(-1).numpy(), 1.0, rtol=1e-12)
    # against a large independent sample
    draws = np.random.default_rng(5).multivariate_normal(mean[0].numpy(), cov[0].numpy(), size=400_000)
    reference = softmax(draws, axis=1).mean(0)
    many = expected_softmax_correlated(mean[:1], cov[:1], 20_000, seeds)[0].numpy()
    np.testing.assert_allclose(many, reference, atol=5e-3)
    with pytest.raises(ValueError, match="2 seeds for 3 classes"):
        expected_softmax_correlated(mean, cov, 8, seeds[:2])


# ------------------------------------------------------------------ LDKGPClassifier(inference="laplace")
WORDS = {0: "good great fine nice happy", 1: "bad awful poor dull sad", 2: "plot actor scene music film"}


def _texts(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    pool = " ".join(WORDS.values()).split()
    texts, labels = [], []
    for i in range(n):
        c = i % 3
        texts.append(" ".join([*rng.choice(WORDS[c].split(), 3), *rng.choice(pool, 2)]))
        labels.append(["pos", "neg", "topic"][c])
    return texts, np.array(labels)


def _laplace_classifier(**options):
    import warnings

    from lvgp import LBFGS, LDKGPClassifier, LDKSpec

    settings = dict(inference="laplace", optimizer=LBFGS(max_iter=20), random_state=0)
    est = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.1), **{**settings, **options})
    texts, labels = _texts(45, 0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*did not converge.*")
        return est.fit(texts, labels)


@pytest.mark.parametrize("class_hyperparameters", ["per-class", "shared"])
def test_the_classifier_fits_the_evidence_and_predicts_from_the_mode(class_hyperparameters, tmp_path):
    clf = _laplace_classifier(class_hyperparameters=class_hyperparameters)
    model = clf.model_
    # log_marginal_likelihood_ is eq. 3.44 at the fitted hyper-parameters and mode
    with torch.no_grad():
        K, m = model.covariance(model.train_x), model.means()
        direct = log_evidence(K, m, model.labels, find_mode(K, m, model.labels))
    np.testing.assert_allclose(clf.log_marginal_likelihood_, float(direct), rtol=1e-9)
    assert clf.loss_curve_[-1] < clf.loss_curve_[0]
    test, truth = _texts(30, 1)
    proba = clf.predict_proba(test)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    assert (clf.predict(test) == truth).mean() > 0.8
    # the predictive mean is the mode's: m + k_*^T (y - pi) (alg. 3.4), at the training documents the mode
    (mode, parts) = model.posterior()
    mean, _ = model.latents(model.train_x, (mode, parts))
    torch.testing.assert_close(mean.mT, mode.f, atol=1e-9, rtol=0)
    # the posterior the fit's last evidence kept is the one rebuilt from mode_a, to the bit
    kept = model._kept_posterior.get(model._state())
    assert kept is not None and kept[1] is parts
    model._kept_posterior.clear()
    (again, again_parts) = model.posterior()
    assert torch.equal(again.f, mode.f) and torch.equal(again_parts.E, parts.E) and torch.equal(again_parts.M, parts.M)
    # a changed parameter drops it
    model._kept_posterior.put((mode, parts), model._state())
    with torch.no_grad():
        model.raw_intercept_variance.add_(0.1)
    assert model._kept_posterior.get(model._state()) is None
    with torch.no_grad():
        model.raw_intercept_variance.sub_(0.1)
    clf.save(tmp_path / "laplace.pt")
    from lvgp import LDKGPClassifier

    loaded = LDKGPClassifier.load(tmp_path / "laplace.pt")
    np.testing.assert_array_equal(loaded.predict_proba(test), proba)
    assert loaded.log_marginal_likelihood_ == clf.log_marginal_likelihood_


@pytest.mark.parametrize("class_hyperparameters", ["per-class", "shared"])
def test_the_classifier_fits_the_same_by_conjugate_gradients(class_hyperparameters, monkeypatch):
    """The classifier's fit with every mode searched by conjugate gradients (CG_FROM_DOCUMENTS lowered to
    0) against the Choleskys' (above it): the same evidence, hyper-parameters and probabilities."""
    import lvgp.models.laplace as laplace

    cholesky = _laplace_classifier(class_hyperparameters=class_hyperparameters)
    monkeypatch.setattr(laplace, "CG_FROM_DOCUMENTS", 0)
    cg = _laplace_classifier(class_hyperparameters=class_hyperparameters)
    np.testing.assert_allclose(cg.log_marginal_likelihood_, cholesky.log_marginal_likelihood_, rtol=1e-8)
    for (name, value), (_, reference) in zip(cg.model_.named_parameters(), cholesky.model_.named_parameters()):
        np.testing.assert_allclose(value.detach().numpy(), reference.detach().numpy(), rtol=1e-6, err_msg=name)
    test, _ = _texts(30, 1)
    np.testing.assert_allclose(cg.predict_proba(test), cholesky.predict_proba(test), atol=1e-7)


def test_the_laplace_evidence_of_a_subset_fits_its_hyperparameters_and_the_mode_reads_every_document():
    """max_evidence_documents with the Laplace inference: the hyper-parameters are a fit's on the subset
    alone (a kernel without data-dependent parts or priors), the mode and log_marginal_likelihood_ are
    every document's (eq. 3.44 at the fitted hyper-parameters)."""
    import warnings

    from lvgp import LBFGS, BagOfWordsKernel, LDKGPClassifier, Vocabulary

    texts, labels = _texts(45, 0)
    vocab = Vocabulary().fit(texts)

    def fit(x, y, **options):
        est = LDKGPClassifier(
            lambda num_words: BagOfWordsKernel(num_words, "cosine"),
            vocabulary=vocab,
            inference="laplace",
            optimizer=LBFGS(max_iter=15),
            random_state=0,
            **options,
        )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*did not converge.*")
            return est.fit(x, y)

    subset = fit(texts, labels, max_evidence_documents=21)
    rows = subset.evidence_documents_
    assert len(rows) == 21 and sorted(np.unique(labels[rows], return_counts=True)[1].tolist()) == [7, 7, 7]
    alone = fit([texts[i] for i in rows], labels[rows])
    for (name, value), (_, reference) in zip(subset.model_.named_parameters(), alone.model_.named_parameters()):
        np.testing.assert_allclose(
            value.detach().numpy(), reference.detach().numpy(), rtol=1e-6, atol=1e-8, err_msg=name
        )
    model = subset.model_
    assert model.mode_a.shape == (3, 45)
    with torch.no_grad():
        K, m = model.covariance(model.train_x), model.means()
        direct = log_evidence(K, m, model.labels, find_mode(K, m, model.labels))
    np.testing.assert_allclose(subset.log_marginal_likelihood_, float(direct), rtol=1e-9)


def test_the_classifier_refuses_what_the_laplace_inference_has_no_use_for():
    from lvgp import LDKGPClassifier, MiniBatch
    from lvgp.base.constraints import check_params

    with pytest.raises(ValueError, match="calibration='temperature' needs inference='dirichlet'"):
        LDKGPClassifier(inference="laplace", calibration="temperature")._check_params()
    with pytest.raises(ValueError, match=r"optimizer: inference='laplace' fits by lvgp\.LBFGS"):
        check_params(LDKGPClassifier(inference="laplace", optimizer=MiniBatch()))


def test_the_classification_study_runs_its_gp_methods_with_the_laplace_inference(tiny_encoder, tmp_path):
    """``--gpc-inference laplace`` applies to every GP classification method (the word kernel's and
    the encoder's), without the Dirichlet methods' temperature."""
    import json

    from lvgp.experiments.cli import main

    tiny_encoder(sorted({w for t in _texts(60, 2)[0] for w in t.split()}), 0)
    texts, labels = _texts(60, 2)
    tsv = tmp_path / "toy.tsv"
    tsv.write_text("text\tlabel\n" + "".join(f"{t}\t{c}\n" for t, c in zip(texts, labels)))
    methods = "ldk-gpc,encoder-gpc,bow-gpc-encoder"
    argv = ["compare", "classification", "--dataset", str(tsv), "--train-sizes", "24", "--splits", "1"]
    argv += ["--ldk-max-iter", "5", "--latent-dims", "2", "--rhos", "1", "--methods", methods, "--quiet"]
    assert main([*argv, "--gpc-inference", "laplace", "--out", str(tmp_path / "out")]) == 0
    records = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {r["method"] for r in records} == set(methods.split(","))
    for record in records:
        assert 0 <= record["accuracy"] <= 1 and np.isfinite(record["log_loss"])
    # five L-BFGS iterations end each fit: the warning names the inference that ran
    warned = next(r for r in records if r["method"] == "ldk-gpc")["warnings"]
    assert "Laplace GP classifier" in warned["ConvergenceWarning"]["first"]
    settings = json.loads((tmp_path / "out" / "study.json").read_text())
    assert settings["gpc_inference"] == "laplace"


def test_separable_texts_keep_a_moderate_scale_with_the_intercept_in_the_covariance():
    """Separable training texts: with free constant means the evidence ran the output scale to ~2e3 and
    the probabilities flat (0.47 mean top probability); with each class's intercept integrated out
    (its variance in the covariance, zero means) the scale stays moderate, the means stay zero, and
    the probabilities follow the words without the flattening warning."""
    import warnings

    from lvgp import LBFGS, LDKGPClassifier
    from lvgp.kernels import BagOfWordsKernel
    from lvgp.warnings import UncertaintyWarning

    texts, labels = _separable_texts()
    settings = dict(inference="laplace", class_hyperparameters="shared", optimizer=LBFGS(max_iter=300), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncertaintyWarning)
        clf = LDKGPClassifier(lambda n: BagOfWordsKernel(n, "cosine"), **settings).fit(texts, labels)
    model = clf.model_
    assert float(model.covar_module.outputscale.detach()) < 200
    assert torch.equal(model.means(), torch.zeros(3, dtype=torch.float64))
    proba = clf.predict_proba(["stock market", "goal team", "storm cloud"])
    assert (proba.argmax(1) == [0, 1, 2]).all() and proba.max(1).min() > 0.6
    # the intercept: the covariance is the scaled kernel plus its variance
    x = model.train_x[:4]
    expected = model.covar_module(x).to_dense() + model.intercept_variance
    torch.testing.assert_close(model.covariance(x)[0], expected, rtol=0, atol=0)


def test_a_laplace_model_saved_with_free_means_loads_and_predicts_as_it_did(tmp_path):
    """A state written before the intercepts moved into the covariance holds fitted constant means and
    no intercept variance: it loads with them and adds no intercept to the covariance; saved again and
    reloaded, the classifier keeps them and predicts what the model in memory predicts, to the bit."""
    from lvgp import LDKGPClassifier

    clf = _laplace_classifier(class_hyperparameters="shared")
    model = clf.model_
    state = {k: v for k, v in model.state_dict().items() if k not in ("intercept_in_kernel", "raw_intercept_variance")}
    state["mean_module.raw_constant"] = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)
    model.load_state_dict(state)
    assert not bool(model.intercept_in_kernel)
    x = model.train_x[:5]
    torch.testing.assert_close(model.covariance(x)[0], model.covar_module(x).to_dense(), rtol=0, atol=0)
    test, _ = _texts(6, 1)
    proba = clf.predict_proba(test)
    clf.save(tmp_path / "old.pt")
    loaded = LDKGPClassifier.load(tmp_path / "old.pt")
    assert not bool(loaded.model_.intercept_in_kernel)
    torch.testing.assert_close(loaded.model_.means(), state["mean_module.raw_constant"])
    np.testing.assert_array_equal(loaded.predict_proba(test), proba)


def _separable_texts():
    rng = np.random.default_rng(0)
    own = [["stock", "market", "shares"], ["match", "goal", "team"], ["rain", "storm", "cloud"]]
    labels = rng.integers(0, 3, 60)
    return [" ".join(rng.choice(own[c], 3)) for c in labels], labels


def test_an_under_confident_laplace_fit_says_so():
    """At a large output scale on separable training texts the mode saturates and the predictive keeps
    most of the prior's variance: the averaged softmax is far flatter than the mode's, and the check
    after a fit warns rather than hand back near-uniform probabilities silently. Labels the words
    cannot separate leave the predictive near its mode: no warning."""
    import warnings

    from lvgp import LBFGS, LDKGPClassifier
    from lvgp.kernels import BagOfWordsKernel
    from lvgp.models.gpc.inference import LaplaceInference
    from lvgp.warnings import UncertaintyWarning

    rng = np.random.default_rng(0)
    texts, labels = _separable_texts()
    settings = dict(inference="laplace", class_hyperparameters="shared", optimizer=LBFGS(max_iter=300), random_state=0)
    clf = LDKGPClassifier(lambda n: BagOfWordsKernel(n, "cosine"), **settings).fit(texts, labels)
    with torch.no_grad():  # the scale free constant means ran to (2e3), its mode found again
        clf.model_.covar_module.outputscale = 2e3
        clf.model_.log_evidence()
    with pytest.warns(UncertaintyWarning, match="under-confident") as record:
        LaplaceInference().after_fit(clf)
    # what the flat latents cost (read off the warning whichever others the block records)
    assert any("a count over the 256 nodes of predict_samples" in str(w.message) for w in record)
    noisy = np.where(rng.random(60) < 0.4, rng.integers(0, 3, 60), labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncertaintyWarning)
        LDKGPClassifier(lambda n: BagOfWordsKernel(n, "cosine"), **settings).fit(texts, noisy)


def test_the_laplace_latent_prior_includes_the_intercepts_variance():
    """predict_latent's prior variances (the "variance" novelty score's denominators) are the model's
    prior covariance's diagonal, the intercept's variance included, for a text without a known word too."""
    import warnings

    from lvgp.warnings import EmptyDocumentsWarning

    clf = _laplace_classifier(class_hyperparameters="shared")
    model = clf.model_
    test, _ = _texts(5, 3)
    _, var, prior = clf.predict_latent(test, return_prior=True)
    v = float(model.intercept_variance)
    assert v > 0 and np.all(prior > v) and np.all(var <= prior + 1e-9)
    scale = float(model.covar_module.outputscale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyDocumentsWarning)
        mean, var, prior = clf.predict_latent(["zzzz qqqq"], return_prior=True)
    np.testing.assert_allclose(mean, 0.0)
    np.testing.assert_allclose(prior, scale + v, rtol=1e-12)
    np.testing.assert_allclose(var, scale + v, rtol=1e-12)


def test_the_studies_take_a_subsets_evidence_only_where_a_method_fixes_its_word_vectors():
    """--gpc-inference: the methods built on ldk-gpc-plus (fixed word vectors) take the Dirichlet
    subset of GPC_EVIDENCE_DOCUMENTS and, with the Laplace inference, LAPLACE_EVIDENCE_DOCUMENTS; the
    variational inference and ldk-gpc (learned word vectors) read every document."""
    from types import SimpleNamespace

    from lvgp import LDKGPClassifier
    from lvgp.experiments import classification as study

    for inference, expected in (
        ("dirichlet", study.GPC_EVIDENCE_DOCUMENTS),
        ("laplace", study.LAPLACE_EVIDENCE_DOCUMENTS),
        ("variational", None),
    ):
        options = SimpleNamespace(gpc_inference=inference, gpc_objective="evidence")
        plus = LDKGPClassifier(class_hyperparameters="shared", max_evidence_documents=study.GPC_EVIDENCE_DOCUMENTS)
        assert study.with_gpc_inference(plus, options).max_evidence_documents == expected
        assert study.with_gpc_inference(LDKGPClassifier(), options).max_evidence_documents is None
