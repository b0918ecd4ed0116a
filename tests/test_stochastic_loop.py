"""One stochastic training loop (lvgp.base.fitting.fit_stochastic) for every iterative estimator:
each estimator's fit, fed a constructed loss curve, stops exactly where the plateau rule's
definition says (an independent re-implementation below), and Ctrl-C ends each the same way."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

import lvgp
import lvgp.baselines.gp_embedding as gp_embedding
import lvgp.models.clgp.estimators as clgp_estimators
import lvgp.models.gpc.inference as gpc
import lvgp.models.matching as matching
import lvgp.models.slda.estimators as slda_estimators
import lvgp.models.sparse as sparse
from lvgp import LBFGS, Adam, EarlyStopping, MiniBatch, RMSprop
from lvgp.base import fitting
from lvgp.datasets import WordEmbeddings, make_synonym_regression
from lvgp.kernels import LDKSpec


def curve(i: int) -> float:
    """The constructed loss of iteration ``i`` (0-based): a decay onto a plateau at 1."""
    return 1.0 + 10.0 * math.exp(-i / 7.0)


def plateau_stop(window: int, tol: float, start: int, n: int) -> int:
    """Where the rule says the fit converges on ``curve``: the first count of losses ``k`` (``start +
    2 window``, then every ``window``) with mean(losses[k-2w:k-w]) - mean(losses[k-w:k]) <= tol
    |mean(losses[k-2w:k-w])|; ``n`` if never within ``n``."""
    losses = [curve(i) for i in range(n)]
    for k in range(start + 2 * window, n + 1, window):
        before, recent = np.mean(losses[k - 2 * window : k - window]), np.mean(losses[k - window : k])
        if before - recent <= tol * abs(before):
            return k
    return n


#: the real loop, kept before any test patches fitting.fit_stochastic (fit_adam calls it from there)
_REAL_LOOP = fitting.fit_stochastic


class Spy:
    """Wraps the real loop: the estimator's iterations still run (the model stays a real fit), but
    the loss each returns is replaced by ``curve`` (or iteration ``interrupt_at`` raises Ctrl-C)."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.calls: list[dict] = []
        self.interrupt_at = interrupt_at

    def __call__(self, iteration, **options):
        def constructed(it: int) -> torch.Tensor:
            if it == self.interrupt_at:
                raise KeyboardInterrupt
            loss = iteration(it)
            return torch.tensor(curve(it), dtype=torch.float64, device=loss.device)

        result = _REAL_LOOP(constructed, **options)
        self.calls.append({"rule": options["rule"], "max_iter": options["max_iter"], "result": result})
        return result


def _regression_data(n=80):
    corpus = make_synonym_regression(n=n, noise=0.1, random_state=0)
    return corpus.texts, corpus.y


def _classes(n=60):
    texts, y = _regression_data(n)
    return texts, np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))


def _sparse(**kw):
    texts, y = _regression_data()
    optimizer = MiniBatch(batch_size=16, **kw)
    return sparse.SparseGPLVSMRegressor(num_inducing=8, optimizer=optimizer, random_state=0).fit(texts, y)


def _gpc(**kw):
    texts, y = _classes()
    optimizer = MiniBatch(max_epochs=kw.pop("max_iter"), **kw)
    return lvgp.LDKGPClassifier(inference="variational", num_inducing=8, optimizer=optimizer, random_state=0).fit(
        texts, y
    )


def _clgp(**kw):
    codes = np.random.default_rng(0).integers(0, 3, size=(30, 4))
    optimizer = RMSprop(**kw)
    return clgp_estimators.CLGP(latent_dim=2, num_inducing=8, optimizer=optimizer, random_state=0, kl_warmup=0.0).fit(
        codes, [3] * 4
    )


def _slda(**kw):
    texts, y = _regression_data()
    optimizer = MiniBatch(batch_size=40, max_epochs=kw.pop("max_iter"), **kw)
    return slda_estimators.SLDARegressor(3, inference="svi", optimizer=optimizer, random_state=0).fit(texts, y)


def _slda_classifier(**kw):
    texts, labels = _classes()
    optimizer = MiniBatch(batch_size=40, max_epochs=kw.pop("max_iter"), **kw)
    return slda_estimators.SLDAClassifier(3, optimizer=optimizer, random_state=0).fit(texts, labels)


def _matcher(**kw):
    from tests.test_matching import bilingual_corpus

    source, target = bilingual_corpus(80, seed=0)
    optimizer = MiniBatch(batch_size=20, max_epochs=kw.pop("max_iter"), **kw)
    return matching.LDKMatcher(LDKSpec(latent_dim=2, rho=0.01), optimizer=optimizer, random_state=0).fit(source, target)


# estimator, its module, the options that set its rule (window, tol) and budget, the rule's window
ESTIMATORS = {
    "SparseGPLVSMRegressor": (_sparse, sparse, dict(convergence_window=10, tol=1e-3, max_steps=400), 10),
    "LDKGPClassifier (variational)": (_gpc, gpc, dict(tol=1e-3, max_iter=400), 10),
    "CLGP": (_clgp, clgp_estimators, dict(tol=1e-3, max_iter=400), 50),
    "SLDARegressor (svi)": (_slda, slda_estimators, dict(convergence_window=10, tol=1e-3, max_iter=400), 10),
    "SLDAClassifier": (_slda_classifier, slda_estimators, dict(convergence_window=10, tol=1e-3, max_iter=400), 10),
    "LDKMatcher (mini-batches)": (_matcher, matching, dict(convergence_window=10, tol=1e-3, max_iter=400), 10),
}


#: estimators whose base trains through fit_stochastic but which never do, and why
NOT_STOCHASTIC = {"LDARegression": "its own fit: LDA by variational EM, then least squares"}


def test_every_estimator_with_a_stochastic_fit_is_tested_here():
    """Every estimator (``lvgp.all_estimators()``) whose module trains through ``fit_stochastic`` has a
    case above (GPEmbeddingLogisticRegression: its Ctrl-C case below)."""
    import inspect

    from lvgp.models.estimator_base import ExactGPRegressorBase

    tested = {name.split(" ")[0] for name in ESTIMATORS} | {"GPEmbeddingLogisticRegression", "GPLVSMRegressor"}
    estimators = lvgp.all_estimators()
    for cls in estimators:
        for owner in cls.__mro__:  # the class, or a base that is no estimator of its own, it trains through
            if owner is not cls and owner in estimators:
                continue
            module = inspect.getmodule(owner)
            loops = (getattr(module, "fit_stochastic", None), getattr(module, "fit_adam", None))
            strategies = getattr(module, "INFERENCE_STRATEGIES", {})  # the classifier's: fit by its inferences
            if fitting.fit_stochastic not in loops and fitting.fit_adam not in loops and not strategies:
                continue
            sources = inspect.getsource(owner) + "".join(inspect.getsource(type(s)) for s in strategies.values())
            if "fit_stochastic" not in sources and "fit_adam" not in sources:
                continue
            if (
                owner is ExactGPRegressorBase
                and cls._stochastic_objective is ExactGPRegressorBase._stochastic_objective
            ):
                continue  # an exact GP whose objective is never a Monte Carlo estimate
            if cls.__name__ in NOT_STOCHASTIC:
                continue
            assert cls.__name__ in tested, f"{cls.__name__} trains through fit_stochastic but has no case here"


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_stochastic_fit_stops_by_the_plateau_rule(name, monkeypatch):
    make, module, options, window = ESTIMATORS[name]
    spy = Spy()
    monkeypatch.setattr(module, "fit_stochastic", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(**{k: v for k, v in options.items()})
    main = spy.calls[0]  # the training fit (CLGP's imputation loops come after it)
    rule = main["rule"]
    assert rule.window == window and rule.tol == options["tol"]
    expected = plateau_stop(window, options["tol"], rule.start, main["max_iter"])
    assert expected < main["max_iter"]  # the constructed curve converges within the budget
    assert main["result"].n_iter == expected and main["result"].converged
    assert model.converged_ and model.n_iter_ == expected


@pytest.mark.parametrize("name", [*ESTIMATORS, "GPEmbeddingLogisticRegression (svi)"])
def test_ctrl_c_ends_every_stochastic_fit_the_same_way(name, monkeypatch):
    if name.startswith("GPEmbedding"):

        def make(**kw):
            texts, y = _classes(40)
            words = sorted({w for t in texts for w in t.split()})
            table = WordEmbeddings("toy", words, np.random.default_rng(0).normal(size=(len(words), 3)))
            return gp_embedding.GPEmbeddingLogisticRegression(
                embeddings=table, posterior="normal", optimizer=Adam(max_iter=20), random_state=0
            ).fit(texts, y)

        module, options = gp_embedding, {}
    else:
        make, module, options, _ = ESTIMATORS[name]
    spy = Spy(interrupt_at=7)
    monkeypatch.setattr(module, "fit_stochastic", spy)
    with pytest.warns(RuntimeWarning, match="fitting interrupted after 7"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            make(**options)
    result = spy.calls[0]["result"]
    assert result.interrupted and not result.converged and result.n_iter == 7


def test_the_loop_reads_losses_back_in_windows_and_keeps_the_best_validated_iterate():
    reads: list[int] = []
    original = fitting.LossBuffer.flush

    def counting(self):
        values = original(self)
        if values:
            reads.append(len(values))
        return values

    value = torch.zeros(())
    scores = iter([5.0, 4.0, 3.0, 3.5, 3.6, 3.7, 3.8])
    state = {"x": 0}

    def iteration(it):
        state["x"] = it + 1
        return value + curve(it)

    fitting.LossBuffer.flush = counting
    try:
        result = fitting.fit_stochastic(
            iteration, max_iter=100, rule=fitting.PlateauStopping(10, 1e-3), what="toy", unit="steps"
        )
        assert reads and all(r == 10 for r in reads)  # one read-back per window
        kept = fitting.fit_stochastic(
            iteration,
            max_iter=100,
            rule=None,
            what="toy",
            validate=lambda: next(scores),
            n_iter_no_change=4,
            state=(lambda: dict(state), lambda s: state.update(s)),
        )
    finally:
        fitting.LossBuffer.flush = original
    assert result.converged and result.n_iter == plateau_stop(10, 1e-3, 0, 100)
    assert kept.stopped_early and kept.best_iter == 3 and state["x"] == 3  # the best iterate restored
    with pytest.warns(ConvergenceWarning, match="the budget max_steps ended it"):
        fitting.fit_stochastic(
            iteration, max_iter=30, rule=fitting.PlateauStopping(10, 0.0), what="toy", budget="max_steps", unit="steps"
        )


def test_early_stopping_policies_are_chosen_by_name():
    """EarlyStopping(policy=...) names the policy (lvgp.base.fit_options.EARLY_STOPPING): "keep-best" keeps the
    held-out fit's best iterate, "refit" refits on every training document for the best iteration
    count; True is each estimator's default (keep-best for the regressors, refit for the GP
    classifier, as before)."""
    from lvgp import GPLVSMRegressor, LDKGPClassifier

    texts, y = _regression_data(60)
    options = dict(kernel=LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=40), random_state=0)
    kept = GPLVSMRegressor(early_stopping=EarlyStopping(n_iter_no_change=3, policy="keep-best"), **options).fit(
        texts, y
    )
    default = GPLVSMRegressor(early_stopping=EarlyStopping(n_iter_no_change=3), **options).fit(texts, y)
    refit = GPLVSMRegressor(early_stopping=EarlyStopping(n_iter_no_change=3, policy="refit"), **options).fit(texts, y)
    n_held_in = kept.model_.train_inputs[0].shape[0]
    assert n_held_in == 54 and default.model_.train_inputs[0].shape[0] == n_held_in
    np.testing.assert_array_equal(kept.predict(texts[:5]), default.predict(texts[:5]))
    assert refit.model_.train_inputs[0].shape[0] == 60 and refit.n_iter_ == kept.fit_result_.best_iter
    with pytest.raises(TypeError, match="early_stopping must be"):
        GPLVSMRegressor(early_stopping="best").fit(texts, y)
    with pytest.raises(ValueError, match="early_stopping.policy must be"):
        GPLVSMRegressor(early_stopping=EarlyStopping(policy="best")).fit(texts, y)

    texts, labels = _classes(60)
    gpc_options = dict(kernel=LDKSpec(latent_dim=2, rho=0.1), optimizer=LBFGS(max_iter=30), random_state=0)
    held = LDKGPClassifier(early_stopping=EarlyStopping(n_iter_no_change=3, policy="keep-best"), **gpc_options).fit(
        texts, labels
    )
    again = LDKGPClassifier(early_stopping=EarlyStopping(n_iter_no_change=3), **gpc_options).fit(texts, labels)
    assert held.model_.train_inputs[0].shape[0] < 60 and held.best_iter_ is not None
    assert again.model_.train_inputs[0].shape[0] == 60 and again.n_iter_ == again.best_iter_
    assert held.num_words is None  # the parameter is left as it was given


def test_one_hold_out_helper_for_every_estimator_that_stops_early():
    """Issue 38: the regressors' random fraction and the classifier's stratified split come from one
    helper (lvgp.base.splits.early_stopping_split); the regressors' rows are those of the rule they had."""
    from lvgp.base.splits import dev_split, early_stopping_split

    train, val = early_stopping_split(50, 0.1, 7)
    perm = np.random.default_rng(7).permutation(50)  # the estimators' rule before the helper
    assert list(val) == sorted(perm[:5]) and list(train) == sorted(perm[5:])
    labels = np.array([0, 1] * 10)
    for got, expected in zip(early_stopping_split(20, 0.25, 3, labels), dev_split(labels, 3, 0.25)):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match="at least 3 training documents"):
        early_stopping_split(2, 0.5, 0)


def best_of_window_stop(window: int, tol: float, every: int, n: int) -> int:
    """Where the best-of-window rule says the fit converges on ``curve``, judged at every
    ``every``-th loss: the first such count ``k > 2 window`` with min(losses[:k-w]) -
    min(losses[k-w:k]) <= tol max(1, |min(losses[:k-w])|); ``n`` if never within ``n``."""
    losses = [curve(i) for i in range(n)]
    for k in [*range(every, n + 1, every), n]:
        if k <= 2 * window:
            continue
        before, recent = min(losses[: k - window]), min(losses[k - window : k])
        if before - recent <= tol * max(1.0, abs(before)):
            return k
    return n


def _variational_gplvsm(**kw):
    from lvgp import GPLVSMRegressor

    texts, y = _regression_data(60)
    spec = LDKSpec(latent_dim=2, rho=1.0, variational=True)
    return GPLVSMRegressor(spec, optimizer=Adam(**kw), predict_samples=2, random_state=0).fit(texts, y)


def test_the_variational_gp_lvsm_trains_in_the_shared_loop_by_the_best_of_window_rule(monkeypatch):
    """Issue 38: the Monte Carlo objective of variational word vectors runs through fit_stochastic
    (no longer minimize's Adam path; issue 58: through fit_adam, as every Adam fit), stopped by the
    best-of-window rule passed in, read back once a window; Ctrl-C ends it as it ends every stochastic fit."""
    spy = Spy()
    monkeypatch.setattr(fitting, "fit_stochastic", spy)  # fit_adam's loop
    model = _variational_gplvsm(convergence_window=6, tol=1e-3, max_iter=300)
    (call,) = spy.calls
    assert isinstance(call["rule"], fitting.BestOfWindowStopping) and call["rule"].window == 6
    expected = best_of_window_stop(6, 1e-3, 6, 300)
    assert expected < 300 and model.n_iter_ == expected and model.converged_
    assert model.fit_result_.message == "relative improvement below tol=0.001 over 6 iterations"

    spy = Spy(interrupt_at=7)
    monkeypatch.setattr(fitting, "fit_stochastic", spy)
    with pytest.warns(RuntimeWarning, match="fitting interrupted after 7"):
        _variational_gplvsm(max_iter=50)
    assert spy.calls[0]["result"].interrupted and spy.calls[0]["result"].n_iter == 7


@pytest.mark.parametrize("validation", [None, 1, 4])
def test_fit_adam_matches_a_plain_loop_of_adam_steps_bit_for_bit(validation):
    """A reference loop written out (issue 58: ``minimize`` is L-BFGS only; Adam runs in the one torch
    loop): on a deterministic objective, ``fit_adam`` gives the losses, validation scores, stop and
    parameters of plain Adam steps with the best-of-window rule judged every window (every
    ``validation`` iterations when validating: scored first, then the patience, then the rule), the
    best validated parameters restored."""
    target = torch.linspace(-1.0, 2.0, 5, dtype=torch.float64)
    lr, max_iter, tol, window, patience = 0.05, 400, 1e-6, 7, 15

    def problem():
        x = torch.nn.Parameter(torch.zeros(5, dtype=torch.float64))
        return x, (lambda: ((x - target) ** 2).sum() + 0.1 * x.abs().sum())

    def score_of(x):
        return lambda: float(((x.detach() - 1.5) ** 2).sum())  # a validation score with an interior best

    x_ref, objective = problem()
    adam = torch.optim.Adam([x_ref], lr=lr)
    rule = fitting.BestOfWindowStopping(window, tol)
    losses, scores, best = [], [], (float("inf"), None, 0)
    converged = stopped = False
    every = validation or window
    for it in range(max_iter):
        x_ref.grad = None
        loss = objective()
        loss.backward()
        adam.step()
        losses.append(loss.item())
        n = it + 1
        if validation and n % validation == 0:
            scores.append(score_of(x_ref)())
            if scores[-1] < best[0]:
                best = (scores[-1], x_ref.detach().clone(), n)
            if n - best[2] >= patience:
                stopped = converged = True
                break
        if n % every == 0 and rule.converged(losses):
            converged = True
            break
    if validation:
        with torch.no_grad():
            x_ref.copy_(best[1])

    x, objective = problem()
    result = fitting.fit_adam(
        [x],
        objective,
        lr=lr,
        max_iter=max_iter,
        rule=fitting.BestOfWindowStopping(window, tol),
        what="toy",
        validate=score_of(x) if validation else None,
        validation_interval=validation or 1,
        n_iter_no_change=patience,
        warn=False,
    )
    assert result.loss_curve == losses and result.validation_curve == scores
    assert (result.n_iter, result.converged, result.stopped_early) == (len(losses), converged, stopped)
    assert result.best_iter == (best[2] if validation else None)
    assert result.converged and result.n_iter < max_iter
    assert torch.equal(x, x_ref)


def test_the_last_iterate_is_scored_before_the_rule_ends_the_fit():
    """When the rule converges at an iteration that is also the best validated one, that iterate is
    the one kept (the loop scores before it judges the rule)."""
    state = {"x": 0}

    def iteration(it):
        state["x"] = it + 1
        return torch.tensor(1.0)  # a flat loss: the plateau rule converges at its first check (20)

    result = fitting.fit_stochastic(
        iteration,
        max_iter=100,
        rule=fitting.PlateauStopping(10, 1e-3),
        what="toy",
        validate=lambda: -float(state["x"]),  # every iteration better than the last
        state=(lambda: dict(state), lambda s: state.update(s)),
    )
    assert result.converged and result.n_iter == 20
    assert result.best_iter == 20 and state["x"] == 20 and len(result.validation_curve) == 20


def test_the_slda_em_runs_in_the_one_loop_with_its_rule_and_ctrl_c(monkeypatch):
    """Issue 58: the sLDA's variational EM is an iteration of fit_stochastic: its convergence rule (the
    corpus ELBO's relative change below tol, the paper's) is SuccessiveChangeStopping; Ctrl-C ends it
    after the last whole iteration with the loop's warning, never counted as converged."""
    import lvgp.models.slda.em as em
    from lvgp.datasets import make_slda_corpus

    corpus = make_slda_corpus(n_docs=40, n_topics=3, vocab_size=30, doc_len=(8, 14), random_state=0)
    docs = torch.from_numpy(corpus.docs)
    spy = Spy()
    monkeypatch.setattr(em, "fit_stochastic", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lvgp.SLDARegressor(3, inference="em", optimizer=lvgp.EM(max_iter=30), random_state=0).fit(docs, corpus.y)
    assert all(isinstance(call["rule"], fitting.SuccessiveChangeStopping) for call in spy.calls)
    rule = fitting.SuccessiveChangeStopping(1e-3)
    assert not rule.update(-100.0) and not rule.update(-110.0) and rule.update(-110.05)

    monkeypatch.setattr(em, "fit_stochastic", Spy(interrupt_at=3))
    with pytest.warns(RuntimeWarning, match="fitting interrupted after 3 EM iterations"):
        model = lvgp.SLDARegressor(3, inference="em", optimizer=lvgp.EM(max_iter=30), em_eta_scale=1.0).fit(
            docs, corpus.y
        )
    assert model.n_iter_ == 3 and not model.converged_


def test_adam_in_its_multi_tensor_form_is_the_per_parameter_loop_bit_for_bit():
    """``lvgp.base.fitting.torch_adam`` (``foreach=True``: a few operators a step over all parameters) gives
    the values of torch's per-parameter loop, to the bit, on parameters of several shapes and scales."""
    from lvgp.base.fitting import torch_adam

    def trajectory(make):
        g = torch.Generator().manual_seed(0)
        params = [
            torch.randn(shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in ((), (3,), (4, 5))
        ]
        target = [torch.randn(p.shape, generator=g, dtype=torch.float64) * 10 for p in params]
        opt = make(params)
        for _ in range(50):
            opt.zero_grad()
            sum(((p - t) ** 4).sum() + (p * t).sin().sum() for p, t in zip(params, target)).backward()
            opt.step()
        return [p.detach().clone() for p in params]

    multi = trajectory(lambda params: torch_adam(params, lr=0.05))
    loop = trajectory(lambda params: torch.optim.Adam(params, lr=0.05, foreach=False))
    assert all(torch.equal(a, b) for a, b in zip(multi, loop))
    assert not torch.equal(multi[2], trajectory(lambda params: torch.optim.Adam(params, lr=0.04, foreach=False))[2])
