"""GP-LVSM: the model against direct implementations of eqs. 11, 19, 21 and 5.17, the
estimator's scikit-learn behaviour, persistence, and bad input."""

from __future__ import annotations

import math
import warnings

import gpytorch
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from lvgp import GPLVSM, LBFGS, PAD, Adam, EarlyStopping, GPLVSMRegressor, LogPosterior, Vocabulary
from lvgp.base.fitting import BestOfWindowStopping, fit_adam, minimize
from lvgp.base.numerics import CovarianceError, covariance_errors, default_dtype
from lvgp.baselines import GPRBFRegressor
from lvgp.datasets import make_synonym_regression
from lvgp.kernels import LDKSpec
from lvgp.warnings import EmptyDocumentsWarning, UnseenWordsWarning

from . import reference as ref

V = 15


def random_docs(n, width, seed, num_words=V):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, num_words, (n, width), generator=g)
    lengths = torch.randint(1, width + 1, (n,), generator=g)
    x[torch.arange(width)[None, :] >= lengths[:, None]] = PAD
    return x


def perturbed_model(x, y, seed=0, **kwargs):
    """A float64 GP-LVSM with non-default hyper-parameters."""
    with default_dtype(torch.float64):  # float64 from construction on (priors included)
        model = GPLVSM(x, y, num_words=V, latent_dim=2, rho=2.0, seed=seed, **kwargs)
    model.likelihood.noise = torch.tensor(0.3, dtype=torch.float64)  # a Python float would pass through float32
    model.covar_module.outputscale = torch.tensor(1.7, dtype=torch.float64)
    if hasattr(model.mean_module, "constant"):
        model.mean_module.constant = torch.full_like(model.mean_module.constant, 0.25)
    return model


def ldk_reference(model, a, b):
    ldk = model.ldk
    return ref.ldk_gram(ldk.latent.detach().numpy(), a.numpy(), b.numpy(), "rbf", "linear", gamma=ldk.gamma.item())


def test_training_objective_is_eq_11():
    x = random_docs(20, 5, 0)
    y = torch.randn(20, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    model = perturbed_model(x, y)
    model.train()
    value = LogPosterior(model.likelihood, model)(model(x), y) * 20
    expected = ref.gplvsm_log_posterior(
        ldk_reference(model, x, x), y.numpy(), 1.7, 0.3, 0.25, model.ldk.latent.detach().numpy(), 2.0
    )
    assert abs(value.item() - expected) < 1e-9
    # for one output it is gpytorch's ExactMarginalLogLikelihood
    exact = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)(model(x), y) * 20
    assert abs(exact.item() - expected) < 1e-9


def test_multi_output_objective_is_eq_5_17_with_the_prior_once():
    x = random_docs(18, 4, 2)
    y = torch.randn(18, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    model = perturbed_model(x, y)
    model.train()
    value = LogPosterior(model.likelihood, model)(model(x), model.train_targets) * 18
    expected = ref.gplvsm_log_posterior(
        ldk_reference(model, x, x), y.numpy(), 1.7, 0.3, np.full(3, 0.25), model.ldk.latent.detach().numpy(), 2.0
    )
    assert abs(value.item() - expected) < 1e-9


@pytest.mark.parametrize("outputs", [None, 2])
def test_predictive_mean_and_variance_are_eqs_19_and_21(outputs):
    x = random_docs(25, 6, 4)
    shape = (25,) if outputs is None else (25, outputs)
    y = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    model = perturbed_model(x, y)
    x_test = random_docs(7, 9, 6)  # wider than the training documents
    model.eval()
    with torch.no_grad():
        pred = model.likelihood(model(x_test))
    K = ldk_reference(model, x, x)
    K_cross = ldk_reference(model, x_test, x)
    K_diag = np.diag(ldk_reference(model, x_test, x_test))
    ys = y.numpy().reshape(25, -1)
    for b in range(ys.shape[1]):
        mean, var = ref.gp_predict(K, K_cross, K_diag, ys[:, b], 1.7, 0.3, 0.25)
        got_mean = pred.mean if outputs is None else pred.mean[b]
        got_var = pred.variance if outputs is None else pred.variance[b]
        np.testing.assert_allclose(got_mean.numpy(), mean, rtol=0, atol=1e-9)
        np.testing.assert_allclose(got_var.numpy(), var, rtol=0, atol=1e-9)


def test_training_continues_after_predicting_on_wider_documents():
    """Early stopping alternates training steps and predictions on (possibly wider) dev documents."""
    x = random_docs(20, 4, 10)
    y = torch.randn(20, dtype=torch.float64, generator=torch.Generator().manual_seed(11))
    model = perturbed_model(x, y)
    mll = LogPosterior(model.likelihood, model)
    before = mll(model(x), y).item()
    model.eval()
    with torch.no_grad():
        model(random_docs(3, 9, 12))  # wider than the training documents
    model.train()
    assert mll(model(x), y).item() == before  # the original training tensor is still accepted


def test_multi_output_training_matches_single_output_fits():
    """With the kernel frozen, each output's mean/noise-free predictions equal a single-output model's."""
    x = random_docs(30, 5, 7)
    y = torch.randn(30, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    multi = perturbed_model(x, y)
    multi.eval()
    x_test = random_docs(5, 5, 9)
    with torch.no_grad():
        m_pred = multi(x_test)
        for b in range(2):
            single = perturbed_model(x, y[:, b])
            single.load_state_dict(
                {k: v for k, v in multi.state_dict().items() if "mean_module" not in k}, strict=False
            )
            single.eval()
            s_pred = single(x_test)
            torch.testing.assert_close(m_pred.mean[b], s_pred.mean, rtol=0, atol=1e-10)
            torch.testing.assert_close(m_pred.variance[b], s_pred.variance, rtol=0, atol=1e-10)


def test_gplvsm_beats_gp_rbf_when_disjoint_word_groups_carry_the_same_signal():
    corpus = make_synonym_regression(n=300, words_per_polarity=8, noise=0.05, random_state=0)
    train, test = slice(0, 150), slice(150, None)
    X_train, X_test = corpus.texts[train], corpus.texts[test]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gplvsm = GPLVSMRegressor(LDKSpec(latent_dim=2, rho=1.0), optimizer=LBFGS(max_iter=150), random_state=0).fit(
            X_train, corpus.y[train]
        )
        gprbf = GPRBFRegressor().fit(X_train, corpus.y[train])
    rmse_ldk = np.sqrt(np.mean((gplvsm.predict(X_test) - corpus.y[test]) ** 2))
    rmse_bow = np.sqrt(np.mean((gprbf.predict(X_test) - corpus.y[test]) ** 2))
    assert rmse_ldk < 0.75 * rmse_bow, (rmse_ldk, rmse_bow)
    # the learned word map puts the two groups' synonyms together: positive words of group 1
    # are closer to positive words of group 0 than to its negative words
    W, words = gplvsm.word_vectors_, gplvsm.vocabulary_.words
    centre = {
        (pol, g): W[[words.index(w) for w in getattr(corpus, f"{pol}_words")[g]]].mean(0)
        for pol in ("positive", "negative")
        for g in (0, 1)
    }
    assert np.linalg.norm(centre["positive", 1] - centre["positive", 0]) < np.linalg.norm(
        centre["positive", 1] - centre["negative", 0]
    )


# ---------------------------------------------------------------------------- estimator

TEXTS = [
    "great film lovely acting",
    "awful film terrible plot",
    "lovely story great cast",
    "terrible acting awful story",
    "great great plot",
    "awful cast film",
    "lovely lovely film",
    "terrible plot story",
]
Y = np.array([1.0, -1.0, 0.9, -1.1, 1.2, -0.8, 1.0, -0.9])
SMALL = dict(
    kernel=LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=15), random_state=0, vocabulary=Vocabulary(min_token_len=2)
)


@pytest.fixture(autouse=True)
def quiet_convergence():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*did not converge.*")
        yield


def test_estimator_follows_sklearn_conventions():
    est = GPLVSMRegressor(**SMALL)
    assert est.fit(TEXTS, Y) is est
    params = est.get_params()
    assert params["kernel__latent_dim"] == 2 and params["kernel__rho"] == 1.0
    assert GPLVSMRegressor().get_params()["kernel"] is None  # the default: LDKSpec.variational_bow()
    assert GPLVSMRegressor().set_params(kernel__rho=0.5).kernel == LDKSpec.variational_bow(rho=0.5)
    # optimizer=None: Adam for the variational default's Monte Carlo objective, L-BFGS for the paper's
    assert GPLVSMRegressor()._optimizer_options() == Adam(max_iter=300, lr=0.05, tol=1e-7, convergence_window=20)
    assert GPLVSMRegressor(LDKSpec.paper())._optimizer_options() == LBFGS(max_iter=300, tol=1e-7)
    assert GPLVSMRegressor(optimizer=LBFGS(max_iter=5))._optimizer_options() == LBFGS(max_iter=5, tol=1e-7)
    twin = clone(est)
    assert not hasattr(twin, "model_") and twin.get_params()["optimizer__max_iter"] == 15
    assert twin.optimizer is est.optimizer  # frozen: a clone shares it
    # a field of the fit options is a parameter of set_params and GridSearchCV; the object is replaced
    changed = clone(est).set_params(optimizer__max_iter=7, optimizer__tol=1e-3)
    assert changed.optimizer == LBFGS(max_iter=7, tol=1e-3) and est.optimizer == LBFGS(max_iter=15)
    assert GPLVSMRegressor().set_params(optimizer__lr=0.1).optimizer == Adam(lr=0.1)
    with pytest.raises(ValueError, match="early stopping is off"):
        GPLVSMRegressor().set_params(early_stopping__n_iter_no_change=4)
    assert GPLVSMRegressor(early_stopping=True).set_params(early_stopping__n_iter_no_change=4).early_stopping == (
        EarlyStopping(n_iter_no_change=4)
    )
    with pytest.raises(TypeError, match="LBFGS has no field lr"):
        GPLVSMRegressor(optimizer=LBFGS()).set_params(optimizer__lr=0.1)
    assert est.word_vectors_.shape == (len(est.vocabulary_), 2)
    assert isinstance(est.n_iter_, int) and len(est.loss_curve_) == est.n_iter_
    assert est.model_.ldk.latent.dtype == torch.float64
    mean, std = est.predict(TEXTS, return_std=True)
    assert mean.shape == std.shape == (8,) and np.all(std > 0)
    assert est.score(TEXTS, Y) > 0.5
    _, std_f = est.predict(TEXTS, return_std=True, include_noise=False)
    assert np.all(std_f < std)


def test_grid_search_and_pipeline():
    grid = GridSearchCV(
        GPLVSMRegressor(**SMALL), {"kernel__latent_dim": [1, 2], "kernel__rho": [0.1, 10.0]}, cv=2, error_score="raise"
    )
    grid.fit(TEXTS, Y)
    assert set(grid.best_params_) == {"kernel__latent_dim", "kernel__rho"}
    assert grid.best_estimator_.kernel.latent_dim == grid.best_params_["kernel__latent_dim"]
    # a grid over whole kernels: specs, or a gpytorch kernel
    whole = GridSearchCV(
        GPLVSMRegressor(optimizer=Adam(max_iter=5), vocabulary=Vocabulary(min_token_len=2)),
        {"kernel": [LDKSpec(latent_dim=1), LDKSpec(level2="cosine")]},
        cv=2,
        error_score="raise",
    ).fit(TEXTS, Y)
    assert isinstance(whole.best_params_["kernel"], LDKSpec)
    pipe = make_pipeline(
        CountVectorizer(), GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=15), random_state=0)
    )
    pipe.fit(TEXTS, Y)
    assert pipe.predict(TEXTS).shape == (8,)
    assert pipe[-1].n_features_in_ == len(pipe[0].vocabulary_)


def test_padded_and_count_inputs_give_the_same_fit():
    vocab = Vocabulary(min_token_len=2).fit(TEXTS)
    padded = vocab.encode(TEXTS)
    counts = vocab.counts(TEXTS)
    a = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=10), random_state=1).fit(padded, Y)
    b = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=10), random_state=1).fit(counts, Y)
    np.testing.assert_allclose(a.predict(padded), b.predict(counts), rtol=1e-9, atol=1e-9)
    assert a.num_words_ == b.num_words_ == len(vocab)


def test_multi_output_estimator():
    Y2 = np.stack([Y, -2 * Y + 1], axis=1)
    est = GPLVSMRegressor(**SMALL).fit(TEXTS, Y2)
    mean, std = est.predict(TEXTS, return_std=True)
    assert mean.shape == std.shape == (8, 2)
    assert np.corrcoef(mean[:, 0], Y)[0, 1] > 0.8 and np.corrcoef(mean[:, 1], Y)[0, 1] < -0.8


def test_save_load_is_bit_identical(tmp_path):
    est = GPLVSMRegressor(**SMALL).fit(TEXTS, Y)
    path = tmp_path / "model.pt"
    est.save(path)
    loaded = GPLVSMRegressor.load(path)
    queries = TEXTS + ["great story", "awful lovely plot"]
    m1, s1 = est.predict(queries, return_std=True)
    m2, s2 = loaded.predict(queries, return_std=True)
    assert np.array_equal(m1, m2) and np.array_equal(s1, s2)
    assert loaded.vocabulary_ == est.vocabulary_ and loaded.kernel == est.kernel
    assert loaded.n_iter_ == est.n_iter_
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a saved GPLVSMRegressor"):
        GPLVSMRegressor.load(tmp_path / "other.pt")


def test_early_stopping_keeps_the_best_iterate():
    corpus = make_synonym_regression(n=120, noise=0.05, random_state=1)
    est = GPLVSMRegressor(
        LDKSpec(latent_dim=2),
        optimizer=Adam(max_iter=60, lr=0.05),
        early_stopping=EarlyStopping(n_iter_no_change=5),
        random_state=0,
    )
    est.fit(corpus.texts[:80], corpus.y[:80], X_val=corpus.texts[80:], y_val=corpus.y[80:])
    curve = est.validation_curve_
    assert len(curve) == est.n_iter_ and est.fit_result_.best_iter == int(np.argmin(curve)) + 1
    pred = est.predict(corpus.texts[80:])
    val_rmse = np.sqrt(np.mean(((pred - corpus.y[80:]) / est.y_std_) ** 2))
    assert abs(val_rmse - min(curve)) < 1e-9
    held = GPLVSMRegressor(
        LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=20), early_stopping=True, random_state=0
    ).fit(corpus.texts, corpus.y)
    assert len(held.validation_curve_) == held.n_iter_


def test_unseen_words_and_empty_documents_at_prediction():
    est = GPLVSMRegressor(**SMALL).fit(TEXTS, Y)
    with pytest.warns(UnseenWordsWarning, match="dropped 3 tokens .* in 2 of 3 documents"):
        with pytest.warns(EmptyDocumentsWarning, match="1 of 3 documents have no known word: predicted with the prior"):
            mean, std = est.predict(["great zebra", "quantum physics", "awful plot"], return_std=True)
    assert np.isfinite(mean).all() and np.isfinite(std).all()
    prior_mean = est.model_.mean_module.constant.item() * est.y_std_ + est.y_mean_
    assert abs(mean[1] - prior_mean) < 1e-12
    assert std[1] > std[2]


def test_bad_input_gives_clear_errors():
    est = GPLVSMRegressor(**SMALL)
    with pytest.raises(ValueError, match=r"y holds NaN or infinite values in rows \[2\]"):
        est.fit(TEXTS, np.where(np.arange(8) == 2, np.nan, Y))
    with pytest.raises(ValueError, match="y has 7 rows but X has 8 documents"):
        est.fit(TEXTS, Y[:7])
    with pytest.raises(ValueError, match=r"X: 1 training documents have no word in the vocabulary .*rows \[1\]"):
        est.fit(["great film", "the and of", "awful plot"], [1.0, 0.0, -1.0])
    with pytest.raises(TypeError, match="not a single string"):
        est.fit("great film", [1.0])
    with pytest.raises(TypeError, match=r"X must hold strings; rows \[1, 4\] are not \(NoneType, float: 2 of 8 rows\)"):
        est.fit([t if i not in (1, 4) else (None if i == 1 else float("nan")) for i, t in enumerate(TEXTS)], Y)
    with pytest.raises(TypeError, match="numeric regression targets"):
        est.fit(TEXTS, ["a"] * 8)
    bad = torch.tensor([[0, 1], [2, -3]])
    with pytest.raises(ValueError, match=r"negative word ids other than the padding value .* rows \[1\]"):
        GPLVSMRegressor(**{**SMALL, "vocabulary": None}).fit(bad, [1.0, 2.0])
    with pytest.raises(TypeError, match="integer word ids"):
        GPLVSMRegressor(**{**SMALL, "vocabulary": None}).fit(torch.ones(2, 3), [1.0, 2.0])
    with pytest.raises(ValueError, match="non-negative integer counts"):
        GPLVSMRegressor(**{**SMALL, "vocabulary": None}).fit(
            sp.csr_matrix(np.array([[0.5, 1.0], [1.0, 0.0]])), [1.0, 2.0]
        )
    fitted = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=5), num_words=6).fit(
        torch.tensor([[0, 1], [2, 3], [4, 5]]), [1.0, 2.0, 3.0]
    )
    with pytest.raises(ValueError, match=r"X holds word ids >= num_words=6 .* rows \[0\]"):
        fitted.predict(torch.tensor([[6, 1]]))
    with pytest.raises(TypeError, match="optimizer must be None or lvgp.LBFGS"):
        GPLVSMRegressor(optimizer="sgd").fit(TEXTS, Y)


def test_minimize_stops_cleanly_on_interrupt():
    p = torch.nn.Parameter(torch.linspace(2.0, 3.0, 20, dtype=torch.float64))
    calls = {"n": 0}

    def objective():
        calls["n"] += 1
        if calls["n"] == 8:
            raise KeyboardInterrupt
        return ((p - 1.0) ** 4).sum() + 1e-3 * (p**2).sum()

    with pytest.warns(RuntimeWarning, match="interrupted"):
        result = minimize([p], objective, max_iter=100, tol=0.0)
    assert result.interrupted and result.n_iter >= 1 and result.best_iter == int(np.argmin(result.loss_curve)) + 1
    assert float(p.detach().max()) < 3.0


def test_lbfgs_rejects_a_trial_point_where_the_objective_fails_and_goes_on(monkeypatch):
    """A line search's trial point where the covariance's Cholesky fails (or the loss is not finite) is
    rejected, as botorch's scipy fit does, and L-BFGS goes on from the accepted iterates: the same minimum
    as without the failures, the rejected points counted in the message; the starting point failing
    raises; scipy's success right after a line search that rejected a point is not convergence."""
    import scipy.optimize

    from lvgp.base import fitting
    from lvgp.base.fitting import minimize

    def fit(fail_beyond, start=(100.0, 120.0)):
        p = torch.nn.Parameter(torch.tensor(start, dtype=torch.float64))
        failed = []

        def objective():
            if float(p.detach().abs().max()) > fail_beyond:  # the covariance of a far point: not PD
                failed.append(p.detach().clone())
                torch.linalg.cholesky(-torch.eye(2, dtype=torch.float64))
            return torch.log(torch.cosh(p - 1.0)).sum()  # flat far out: L-BFGS's second step overshoots

        return minimize([p], objective, max_iter=200, tol=1e-12), p.detach(), failed

    free, p_free, none = fit(math.inf)
    guarded, p_guarded, failed = fit(125.0)  # the free fit's trials reach 141
    assert free.converged and not none and len(failed) == 1
    assert "1 trial point(s) of the line search rejected" in guarded.message and "LinAlgError" in guarded.message
    torch.testing.assert_close(p_guarded, p_free, atol=1e-5, rtol=0)
    torch.testing.assert_close(p_guarded, torch.ones(2, dtype=torch.float64), atol=1e-5, rtol=0)
    with pytest.raises(torch.linalg.LinAlgError):
        fit(1.0)  # the starting point itself

    def one_step_then_success(fun, x0, jac, method, callback, options):  # scipy's answer after a rejection
        fun(x0)
        fun(x0 + 500.0)  # rejected
        fun(x0 + 1.0)
        callback(scipy.optimize.OptimizeResult(x=x0 + 1.0, fun=0.0))
        return scipy.optimize.OptimizeResult(x=x0 + 1.0, success=True, message="CONVERGENCE")

    monkeypatch.setattr(fitting.scipy.optimize, "minimize", one_step_then_success)
    last, _, _ = fit(125.0)
    assert not last.converged and last.n_iter == 1 and "rejected" in last.message


def test_a_prior_outside_its_support_is_a_rejected_point_not_an_error():
    """A positive weight under a log-normal prior whose softplus underflows to exactly 0 at a line
    search's far trial point (seen in the active study's part selection: a sub-composition's weight
    driven down): ``log_prior`` gives -inf there (torch's support check would raise a ValueError), the
    objective is infinite, and L-BFGS rejects the point and goes on."""
    from gpytorch.constraints import Positive
    from gpytorch.priors import LogNormalPrior

    from lvgp.base.fitting import log_prior, minimize

    class Weighted(gpytorch.Module):
        def __init__(self, raw):
            super().__init__()
            self.register_parameter("raw_weight", torch.nn.Parameter(torch.tensor([raw], dtype=torch.float64)))
            self.register_constraint("raw_weight", Positive())
            self.register_prior("weight_prior", LogNormalPrior(0.0, 0.5), lambda m: m.weight)

        @property
        def weight(self):
            return self.raw_weight_constraint.transform(self.raw_weight)

    at_zero = Weighted(-800.0)  # softplus(-800) is exactly 0 in float64
    assert float(at_zero.weight.detach()) == 0.0
    assert float(log_prior(at_zero).detach()) == -math.inf
    assert math.isfinite(float(log_prior(Weighted(-700.0)).detach()))
    # a loss falling without bound as the weight shrinks: its far trial points underflow
    module = Weighted(-700.0)
    trials = []

    def objective():
        trials.append(float(module.raw_weight.detach()))
        return -log_prior(module) + 1e4 * module.raw_weight.sum()

    result = minimize(list(module.parameters()), objective, max_iter=30)
    assert min(trials) < -800.0  # a trial point where the weight is exactly 0: rejected, not a ValueError
    assert "rejected" in result.message and "FloatingPointError" in result.message
    # (near the underflow the prior's gradient overflows while its value is finite: rejected too)
    weight = module.weight.detach()
    assert float(weight) > 0.0 and math.isfinite(float(log_prior(module).detach()))


def test_covariance_failure_is_a_clear_error():
    class Broken(gpytorch.kernels.Kernel):
        def forward(self, x1, x2, diag=False, **params):
            n = x1.shape[-2]
            out = -torch.eye(n, dtype=torch.float64)  # negative definite: no jitter rescues it
            return out.diagonal() if diag else out

    x = random_docs(6, 3, 0)
    model = GPLVSM(x, torch.zeros(6, dtype=torch.float64), num_words=V, kernel=Broken()).double()
    mll = LogPosterior(model.likelihood, model)
    with pytest.raises(CovarianceError, match="test model: the covariance matrix is not positive definite"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with covariance_errors("test model", "hint"):
                mll(model(x), model.train_targets)


def test_adams_plateau_window_is_convergence_window_not_the_patience():
    """Issue 38: ``convergence_window`` is Adam's plateau window, ``n_iter_no_change`` only the patience of
    early stopping; without validation the patience changes nothing."""
    target = torch.tensor(3.0, dtype=torch.float64)

    def fit(**options):
        p = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
        window = options.pop("convergence_window")
        rule = BestOfWindowStopping(window, 1e-6)
        return fit_adam([p], lambda: (p - target) ** 2, lr=0.5, max_iter=2000, rule=rule, warn=False, **options)

    short, long = fit(convergence_window=5), fit(convergence_window=50)
    assert short.converged and long.converged and short.n_iter < long.n_iter
    assert fit(convergence_window=5, n_iter_no_change=500).n_iter == short.n_iter
    corpus = make_synonym_regression(n=60, noise=0.1, random_state=0)
    adam = Adam(max_iter=400, tol=1e-4, convergence_window=5)  # the window is the optimizer's, the patience not
    a = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=adam, random_state=0).fit(corpus.texts, corpus.y)
    assert a.fit_result_.n_iter < 400 and a.converged_


def test_stopping_rules_are_objects_passed_in():
    """minimize (L-BFGS) takes its stopping rule as an object (issue 38); the default is the rule with
    tol, and the same object gives the same fit."""
    from lvgp.base.fitting import BestOfWindowStopping, PlateauStopping, RelativeChangeStopping

    def fit(**options):
        p = torch.nn.Parameter(torch.tensor([0.0, 1.0], dtype=torch.float64))
        result = minimize([p], lambda: ((p - 3) ** 4).sum(), max_iter=3000, **options)
        return result, p.detach().clone()

    default = fit(tol=1e-6)
    given = fit(stopping=RelativeChangeStopping(1e-6))
    assert default[0].n_iter == given[0].n_iter and torch.equal(default[1], given[1])
    assert BestOfWindowStopping(2, 0.1).converged([5.0, 4.0, 3.99, 3.98, 3.98])
    assert not BestOfWindowStopping(2, 0.0).converged([5.0, 4.0, 3.0, 2.0, 1.0])
    with pytest.raises(TypeError, match="L-BFGS takes a RelativeChangeStopping"):
        fit(stopping=PlateauStopping(5, 1e-3))


def test_kept_factorizations_give_the_recomputed_predictions_and_are_dropped_when_stale(monkeypatch):
    """A variational regressor keeps each Monte Carlo sample's factorization of the training covariance
    between predict calls: every call gives, to the bit, what factorizing again gives (means and
    standard deviations; the means alone without the variances' solves); a changed parameter, a new fit
    and a pickled or copied estimator start without them."""
    import copy
    import pickle

    import lvgp.models.estimator_base as estimator_base

    corpus = make_synonym_regression(n=80, noise=0.1, random_state=3)
    train, test = corpus.texts[:60], corpus.texts[60:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GPLVSMRegressor(optimizer=Adam(max_iter=3), predict_samples=4, random_state=0).fit(train, corpus.y[:60])

    def calls():
        return [model.predict(test[i : i + 1], return_std=True) for i in range(3)] + [
            model.predict(test, return_std=True)
        ]

    kept = calls()
    strategies = model._kept_predictions.value
    assert len(strategies) == 4 and all(s is not None for s in strategies)
    # the second round: the kept strategies with their kept Cholesky factors
    second = calls()
    assert model._kept_predictions.value is strategies and all("_kept_factor" in s.__dict__ for s in strategies)
    with monkeypatch.context() as patch:
        patch.setattr(estimator_base, "KEPT_PREDICTION_BYTES", 0)  # every call factorizes
        again = calls()
        assert model._kept_predictions.value is None
    for (m1, s1), (m2, s2), (m3, s3) in zip(kept, second, again):
        assert m1.tobytes() == m2.tobytes() == m3.tobytes() and s1.tobytes() == s2.tobytes() == s3.tobytes()
    assert model.predict(test).tobytes() == kept[3][0].tobytes()  # the means without the variances

    with torch.no_grad():
        model.likelihood_.noise = model.likelihood_.noise * 2  # in place, as an optimizer would
    changed = model.predict(test, return_std=True)
    assert not np.array_equal(changed[1], kept[3][1])
    with monkeypatch.context() as patch:
        patch.setattr(estimator_base, "KEPT_PREDICTION_BYTES", 0)
        assert model.predict(test, return_std=True)[1].tobytes() == changed[1].tobytes()
    model.predict(test)
    assert model._kept_predictions.value is not None
    assert pickle.loads(pickle.dumps(model))._kept_predictions.value is None
    assert copy.deepcopy(model)._kept_predictions.value is None
    assert model._kept_predictions.value is not None  # the original keeps them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(train, corpus.y[:60])
    assert model._kept_predictions.value is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: GPLVSMRegressor(optimizer=Adam(max_iter=15), random_state=0),  # variational word vectors' draws
        lambda: GPLVSMRegressor(LDKSpec.paper(), optimizer=LBFGS(max_iter=15), random_state=0),
        lambda: GPRBFRegressor(optimizer=LBFGS(max_iter=15)),
    ],
    ids=["default", "paper", "gp-rbf"],
)
def test_texts_predict_block_by_block_as_through_the_whole_padded_corpus(make, monkeypatch):
    """The exact regressors pad texts block by block, each block of like lengths to its own longest
    (``DocumentEncoder.predicting_unpadded``): the means and standard deviations of the whole padded corpus
    (``predicting``), row by row in the caller's order, with a text without a known word and texts of very
    different lengths in blocks of 7; to rounding (blocks of other rows and widths: 1e-12 relative)."""
    import lvgp.models.prediction_blocks as prediction_blocks
    from lvgp.base.encoding import DocumentEncoder

    corpus = make_synonym_regression(n=120, noise=0.05, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = make().fit(corpus.texts[:60], corpus.y[:60])
    test = [" ".join([t] * (1 + 5 * (i % 3))) for i, t in enumerate(corpus.texts[60:])] + ["qqqq zzzz"]
    monkeypatch.setattr(prediction_blocks, "PREDICT_BLOCK", 7)
    seen = []
    blocks = prediction_blocks.RaggedDocuments.blocks

    def recorded(self, size=None):
        for rows, block in blocks(self, size):
            seen.append(len(rows))
            yield rows, block

    monkeypatch.setattr(prediction_blocks.RaggedDocuments, "blocks", recorded)

    def predictions():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyDocumentsWarning)
            return reg.predict(test, return_std=True)

    unpadded = predictions()
    # the unpadded texts' blocks of 7 (the text without a known word: the prior's, or the model's where it reads it)
    assert max(seen) == 7 and len(test) - 1 <= sum(seen) <= len(test)
    monkeypatch.setattr(DocumentEncoder, "predicting_unpadded", DocumentEncoder.predicting)
    for got, expected in zip(unpadded, predictions()):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert np.isfinite(unpadded[1]).all() and len(unpadded[0]) == len(test)


def test_variational_word_vectors_pickle_and_copy_with_their_generators_state():
    """The training draws' generator survives pickling and ``copy.deepcopy`` by its state (torch 2.2
    cannot pickle a ``torch.Generator``): the copies draw what the original draws next."""
    import copy
    import pickle

    from lvgp.kernels.word_vectors import VariationalWordVectors

    words = VariationalWordVectors(12, 2, rho=1.0, seed=0)
    words.sample_generator = torch.Generator().manual_seed(3)
    words.train()
    words.sample_for_training()  # the generator moved on from its seed
    copies = [pickle.loads(pickle.dumps(words)), copy.deepcopy(words)]
    words.sample_for_training()
    for other in copies:
        assert other.sample_generator is not words.sample_generator
        other.sample_for_training()
        assert torch.equal(other.latent_noise, words.latent_noise)
    plain = VariationalWordVectors(12, 2, rho=1.0, seed=0)  # no generator of its own: torch's global one
    assert pickle.loads(pickle.dumps(plain)).sample_generator is None
