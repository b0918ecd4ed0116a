"""Supervised LDA: the paper's variational EM (reference) and the Pyro SVI model, on data
drawn from the generative process; every GLM response; bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pyro
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone

from lvgp import EM, MiniBatch
from lvgp.datasets.synthetic import make_slda_corpus
from lvgp.models.slda import LDARegression, SLDAClassifier, SLDARegressor, SupervisedLDAEM
from lvgp.models.slda.em import expected_zbar_outer


@pytest.fixture(autouse=True)
def clean_param_store():
    pyro.clear_param_store()
    yield
    pyro.clear_param_store()


@pytest.fixture(scope="module")
def corpus():
    return make_slda_corpus(n_docs=400, n_topics=4, vocab_size=120, doc_len=(40, 70), sigma=0.1, random_state=1)


def matched(topics_hat: np.ndarray, topics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Total-variation distances after the best permutation, and that permutation."""
    V = topics_hat.shape[1]
    cost = 0.5 * np.abs(topics_hat[:, None, :] - topics[None, :, :V]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols], cols


def pr2(y, pred):
    return 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)


def test_expected_zbar_outer_is_eq_5():
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.ones(3), size=(1, 6))  # one document, 6 words, 3 topics
    mask = np.ones((1, 6), dtype=bool)
    analytic = expected_zbar_outer(phi, mask, np.array([6]))[0]
    z = np.stack([rng.multinomial(1, p, size=200000) for p in phi[0]], axis=1)  # draws x words x topics
    zbar = z.mean(1)
    mc = np.einsum("sk,sl->kl", zbar, zbar) / len(zbar)
    np.testing.assert_allclose(analytic, mc, atol=3e-3)


def test_em_elbo_never_decreases(corpus):
    em = SupervisedLDAEM(4, max_iter=30, tol=0).fit(corpus.docs[:300], corpus.y[:300], vocab_size=120)
    elbo = np.array(em.result_.elbo)
    assert len(elbo) == 30
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:]))


def test_em_and_svi_recover_the_truth_and_agree(corpus):
    train, test = slice(0, 300), slice(300, None)
    x = torch.from_numpy(corpus.docs)
    oracle = pr2(corpus.y[test], corpus.zbar[test] @ corpus.eta)
    fits = {}
    for inference in ("em", "svi"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svi = MiniBatch(batch_size=100, max_epochs=150, lr=0.05)
            model = SLDARegressor(4, inference=inference, optimizer=svi if inference == "svi" else None, random_state=0)
            model.fit(x[train], corpus.y[train])
            pred = model.predict(x[test])
        tv, perm = matched(np.exp(model.engine_.log_beta_), corpus.topics)
        assert tv.max() < 0.12, (inference, tv)
        np.testing.assert_allclose(model.eta_[np.argsort(perm)], corpus.eta, atol=0.2)
        assert pr2(corpus.y[test], pred) > oracle - 0.03, (inference, pr2(corpus.y[test], pred), oracle)
        fits[inference] = pred
    assert np.corrcoef(fits["em"], fits["svi"])[0, 1] > 0.98


def test_lda_regression_baseline_and_heldout_likelihood(corpus):
    x = torch.from_numpy(corpus.docs)
    lda = LDARegression(4, random_state=0).fit(x[:300], corpus.y[:300])
    slda = SLDARegressor(4, inference="em", random_state=0).fit(x[:300], corpus.y[:300])
    for model in (lda, slda):
        per_word = model.heldout_log_likelihood_per_word(x[300:])
        assert -np.log(120) < per_word < 0  # better than uniform over the vocabulary
    assert np.isfinite(lda.predict(x[300:])).all()


def test_bernoulli_categorical_and_poisson_responses_run_end_to_end():
    for response, cls in (("bernoulli", SLDAClassifier), ("categorical", SLDAClassifier), ("poisson", SLDARegressor)):
        eta = 6 * (np.eye(3) - 1 / 3) if response == "categorical" else None  # topic k favours class k
        data = make_slda_corpus(
            n_docs=200, n_topics=3, vocab_size=60, doc_len=(30, 50), response=response, eta=eta, random_state=2
        )
        x = torch.from_numpy(data.docs)
        kwargs = {"response": "poisson"} if response == "poisson" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimizer = MiniBatch(max_epochs=40, batch_size=50, lr=0.05)
            model = cls(3, optimizer=optimizer, random_state=0, **kwargs).fit(x[:150], data.y[:150])
        pred = model.predict(x[150:])
        if cls is SLDAClassifier:
            proba = model.predict_proba(x[150:])
            assert proba.shape == (50, len(model.classes_)) and np.allclose(proba.sum(1), 1)
            majority = np.mean(data.y[150:] == np.bincount(data.y[:150].astype(int)).argmax())
            assert np.mean(pred == data.y[150:]) > majority + 0.1, response
            assert len(model.topics_) == 3 and len(model.topics_[0]["words"]) == 10
        else:
            assert np.all(pred > 0) and np.corrcoef(pred, data.y[150:])[0, 1] > 0.5


def test_estimator_conventions_and_topics_on_texts():
    texts = [
        "good great fine film",
        "bad awful poor film",
        "great good plot",
        "awful bad plot",
        "fine good acting",
        "poor awful acting",
    ] * 5
    y = np.array([1.0, -1.0, 1.0, -1.0, 0.8, -0.9] * 5)
    model = SLDARegressor(2, inference="em", random_state=0)
    assert clone(model).get_params() == model.get_params()
    assert model.fit(texts, y) is model
    topics = model.topics_
    assert [t["eta"] for t in topics] == sorted(t["eta"] for t in topics)
    negative, positive = topics[0]["words"][:3], topics[-1]["words"][:3]
    assert {"bad", "awful", "poor"} & set(negative) and {"good", "great", "fine"} & set(positive)
    assert model.score(texts, y) > 0.5


def test_bad_input_gives_clear_errors():
    texts = ["good film", "bad film"] * 3
    with pytest.raises(ValueError, match="non-negative integer counts"):
        SLDARegressor(2).fit(np.array([[1, -1], [2, 0]]), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"empty documents .* rows \[1\]"):
        SLDARegressor(2).fit(np.array([[1, 2], [0, 0], [3, 1]]), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-negative integer counts in y"):
        SLDARegressor(2, response="poisson").fit(texts, [1.5, 2, 3, 1, 0, 2])
    with pytest.raises(TypeError, match="numeric regression targets"):
        SLDARegressor(2).fit(texts, ["a"] * 6)
    with pytest.raises(ValueError, match="single class"):
        SLDAClassifier(2).fit(texts, ["pos"] * 6)
    with pytest.raises(ValueError, match="Gaussian response only"):
        SLDARegressor(2, inference="em", response="poisson").fit(texts, [1, 2, 3, 1, 0, 2])
    with pytest.raises(ValueError, match="n_topics must be >= 2"):
        SupervisedLDAEM(1)


def test_topic_study_and_regression_methods_end_to_end(tmp_path):
    from lvgp.datasets import make_synonym_regression
    from lvgp.experiments.cli import main

    data = make_synonym_regression(n=80, noise=0.05, random_state=3)
    tsv = tmp_path / "toy.tsv"
    tsv.write_text("text\ttarget\n" + "".join(f"{t}\t{y:.4f}\n" for t, y in zip(data.texts, data.y)))
    out = tmp_path / "topics"
    assert (
        main(
            [
                "compare",
                "topics",
                "--dataset",
                str(tsv),
                "--folds",
                "3",
                "--topics",
                "2,3",
                "--max-iter",
                "5",
                "--min-df",
                "1",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert {(r["method"], r["K"]) for r in summary} == {
        ("slda", 2),
        ("slda", 3),
        ("lda-regression", 2),
        ("lda-regression", 3),
        ("lasso", None),
    }
    assert all(len(r["pr2_per_fold"]) == 3 for r in summary)
    assert (out / "pr2_vs_K.png").stat().st_size > 1000 and "| K |" in (out / "table.md").read_text()
    # the sLDA cells record the EM's initial eta scale and the dev scores that chose it
    cell = json.loads(next((out / "cells" / "slda").rglob("*.json")).read_text())
    assert cell["em_eta_scale"] in (1.0, 0.5, 0.25) and set(cell["em_eta_scale_dev_mse"]) == {"1.0", "0.5", "0.25"}
    reg = tmp_path / "reg"
    assert (
        main(
            [
                "compare",
                "regression",
                "--dataset",
                str(tsv),
                "--splits",
                "1",
                "--train-size",
                "40",
                "--dev-size",
                "20",
                "--methods",
                "slda,lda-regression",
                "--topics",
                "2,3",
                "--min-df",
                "1",
                "--out",
                str(reg),
                "--quiet",
            ]
        )
        == 0
    )
    records = json.loads((reg / "results.json").read_text())
    assert {r["method"] for r in records} == {"slda", "lda-regression"}
    assert all(r["hyperparameters"]["K"] in (2, 3) for r in records)


@pytest.mark.parametrize("inference", ["em", "svi"])
def test_targets_are_standardized_inside_and_predictions_come_back_in_their_units(corpus, inference):
    """A constant target (once a LinAlgError in the EM) fits and is predicted exactly; an
    affine change of the targets (y -> 1000 + 50 y) changes the predictions the same way."""
    n = 100  # the properties hold at any size and budget: small ones keep the three fits quick
    x = torch.from_numpy(corpus.docs[:n])
    optimizer = MiniBatch(batch_size=100, lr=0.05, max_epochs=40)
    settings = dict(inference=inference, random_state=0)
    settings.update(optimizer=optimizer) if inference == "svi" else settings.update(optimizer=EM(max_iter=10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        constant = SLDARegressor(4, **settings).fit(x, np.full(n, 100.0))  # the default: "auto" for the EM
        np.testing.assert_allclose(constant.predict(x[:20]), 100.0, atol=0.05)
        # the affine pair: one EM fit each, its initial scale given ("auto" fits every candidate on dev first)
        if inference == "em":
            settings.update(em_eta_scale=1.0)
        base = SLDARegressor(4, **settings).fit(x, corpus.y[:n])
        shifted = SLDARegressor(4, **settings).fit(x, 1000 + 50 * corpus.y[:n])
        np.testing.assert_allclose(shifted.predict(x), 1000 + 50 * base.predict(x), rtol=1e-5, atol=1e-3)


def test_em_initial_eta_scale_is_the_grid_it_names(corpus):
    em = SupervisedLDAEM(4, max_iter=1, eta_scale=0.25)
    em.vocab_size_ = 120
    ids = corpus.docs[:50]
    em._initialize(ids, ids >= 0, corpus.y[:50])
    np.testing.assert_allclose(em.eta_, 0.25 * np.linspace(-1, 1, 4))
    with pytest.raises(ValueError, match="eta_scale must be a finite number > 0; got 0"):
        SupervisedLDAEM(4, eta_scale=0)


def test_em_eta_scale_is_chosen_on_dev_and_the_final_fit_is_that_scales_fit(corpus):
    x, y = torch.from_numpy(corpus.docs[:200]), corpus.y[:200]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = SLDARegressor(4, inference="em", optimizer=EM(max_iter=15), random_state=3).fit(x, y)
        chosen = auto.em_eta_scale_
        scores = auto.em_eta_scale_dev_mse_
        assert set(scores) == {1.0, 0.5, 0.25} and chosen == min(scores, key=scores.get)
        assert all(np.isfinite(v) and v > 0 for v in scores.values())
        fixed = SLDARegressor(4, inference="em", optimizer=EM(max_iter=15), em_eta_scale=chosen, random_state=3).fit(
            x, y
        )
    # the refit on all documents is exactly the fixed-scale fit
    np.testing.assert_array_equal(auto.eta_, fixed.eta_)
    assert fixed.em_eta_scale_dev_mse_ == {} and fixed.em_eta_scale_ == chosen
    with pytest.raises(TypeError, match="em_eta_scale must be"):
        SLDARegressor(inference="em", em_eta_scale=[1.0]).fit(x, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refit_eta_is_least_squares_on_the_unsupervised_topic_frequencies(corpus):
    x, y = torch.from_numpy(corpus.docs[:200]), corpus.y[:200] * 3.0 + 1.0
    svi = SLDARegressor(4, optimizer=MiniBatch(batch_size=100, max_epochs=5), random_state=0).fit(x, y)
    assert svi.refit_eta_  # the SVI's default
    zbar = svi.transform(x)
    standardized = (y - svi.y_mean_) / svi.y_std_
    eta = np.linalg.lstsq(zbar, standardized, rcond=None)[0]
    np.testing.assert_allclose(svi.eta_, eta * svi.y_std_ + svi.y_mean_, rtol=1e-10)
    np.testing.assert_allclose(svi.predict(x), zbar @ svi.eta_, rtol=1e-12)
    # the same SVI fit without the refit keeps the eta of its M-steps
    kept = SLDARegressor(4, optimizer=MiniBatch(batch_size=100, max_epochs=5), random_state=0, refit_eta=False).fit(
        x, y
    )
    assert not kept.refit_eta_ and not np.allclose(kept.eta_, svi.eta_)
    np.testing.assert_array_equal(kept.transform(x), zbar)  # the topics are the same
    # the EM keeps the paper's eta unless asked
    em = SLDARegressor(4, inference="em", optimizer=EM(max_iter=3), em_eta_scale=1.0, random_state=0).fit(x, y)
    assert not em.refit_eta_
    counts = np.round(np.abs(y)).astype(int)
    assert (
        not SLDARegressor(4, response="poisson", optimizer=MiniBatch(max_epochs=2), random_state=0)
        .fit(x, counts)
        .refit_eta_
    )
    with pytest.raises(ValueError, match="refit_eta"):
        SLDARegressor(4, response="poisson", optimizer=MiniBatch(max_epochs=2), refit_eta=True, random_state=0).fit(
            x, counts
        )
