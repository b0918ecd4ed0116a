"""The variational GP classifier's step (issue 60): its softmax ELBO by hand against gpytorch's terms and
a loop over the documents' marginals, and its fused objective (a function of tensors, bags built on the
host, a natural-parameter ``q(v)`` with gpytorch's natural gradients) against that eager step -- the same
loss and gradients to 1e-10 in float64, a fit with ``compile=True`` on the eager fit's trajectory, the
retake of a step whose factorization failed, a clean fallback where compiling fails, and one graph."""

from __future__ import annotations

import warnings

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lvgp import LDKGPClassifier, MiniBatch
from lvgp.base.numerics import exact_numerics
from lvgp.bow.padded import PAD, document_lengths, documents_at
from lvgp.datasets import make_zipf_topic_documents
from lvgp.kernels import LDKSpec, shared_evaluation
from lvgp.kernels.document import allow_empty_documents
from lvgp.models import fused_step
from lvgp.models.fused_step import FusedClassifierObjective, unsupported_classifier
from lvgp.models.inducing import whitened_softmax_elbo
from lvgp.warnings import PerformanceWarning

NYSTROM = LDKSpec(**LDKGPClassifier._default_kernel).replace(approximation="nystrom")


@pytest.fixture(scope="module")
def corpus():
    return make_zipf_topic_documents(240, num_words=1500, max_length=40, random_state=0)  # 4 classes


def _fitted(corpus, epochs=2, on_cpu=True, kernel=NYSTROM, labels=None, class_hyperparameters="per-class", **options):
    """A fitted variational classifier (batches of 32, 12 inducing documents); with ``compile=True``, its
    fused step taken on this CPU (``fused_steps``)."""
    with warnings.catch_warnings(), fused_step.fused_steps(on_cpu):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LDKGPClassifier(
            kernel,
            inference="variational",
            num_inducing=12,
            optimizer=MiniBatch(batch_size=32, max_epochs=epochs, **options),
            num_words=corpus.num_words,
            class_hyperparameters=class_hyperparameters,
            random_state=0,
        ).fit(torch.from_numpy(corpus.X), corpus.labels if labels is None else labels)


def _batch(clf, corpus, rows):
    x = torch.from_numpy(corpus.X).long()
    rows = torch.as_tensor(list(rows))
    codes = torch.as_tensor(np.searchsorted(clf.classes_, corpus.labels))
    return documents_at(x, rows, document_lengths(x)[rows]), codes[rows]


def _draws(clf, batch, seed, samples=10):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(samples, batch, len(clf.classes_), dtype=torch.float64, generator=generator)


def _loss_and_gradients(clf, objective):
    """The loss and the gradient of every trained parameter (the natural parameters' included)."""
    model, likelihood = clf.model_, clf.likelihood_
    model.train()
    likelihood.train()
    params = [p for p in [*model.parameters(), *likelihood.parameters()] if p.requires_grad]
    for p in params:
        p.grad = None
    with exact_numerics(), shared_evaluation(model):
        loss = objective()
    loss.backward()
    return loss.detach(), [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in params]


def _eager_step(clf, x, y, draws, n):
    """The classifier's eager step: minus ``whitened_softmax_elbo`` (gpytorch's natural-parameter map)."""
    mll = gpytorch.mlls.VariationalELBO(clf.likelihood_, clf.model_, num_data=n)
    return -whitened_softmax_elbo(mll, x, y, draws)


def test_the_softmax_elbo_by_hand_is_gpytorchs_terms_and_a_loop_over_the_marginals(corpus):
    """``whitened_softmax_elbo``: its marginals are gpytorch's ``q(f)``'s, its KL and prior gpytorch's
    ``VariationalELBO`` terms, its Monte Carlo term a loop over documents and draws of
    ``log softmax(mu_i + sigma_i * eps_si)[y_i]``; and with many draws it estimates the expectation that
    gpytorch's ``SoftmaxLikelihood`` estimates from its own (joint) draws."""
    clf = _fitted(corpus, epochs=1)
    model, likelihood = clf.model_, clf.likelihood_
    x, y = _batch(clf, corpus, range(20))
    n = len(corpus.labels)
    draws = _draws(clf, len(y), seed=3, samples=7)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n, combine_terms=False)
    model.train()
    with torch.no_grad(), exact_numerics():
        strategy = model.variational_strategy.base_variational_strategy
        mean, variance = strategy.training_marginals(x)
        q_f = model(x)  # gpytorch's multitask q(f): B x C
        torch.testing.assert_close(mean.mT, q_f.mean, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(variance.mT, q_f.variance, rtol=1e-10, atol=1e-12)
        _, kl, log_prior = mll(q_f, y)  # gpytorch's terms (its likelihood term draws its own samples)
        total = whitened_softmax_elbo(mll, x, y, draws)
        loop = 0.0
        for i in range(len(y)):
            for s in range(draws.shape[0]):
                f = mean[:, i] + variance[:, i].sqrt() * draws[s, i]
                loop += float(torch.log_softmax(f, 0)[y[i]]) / draws.shape[0]
        assert float(total) == pytest.approx(loop / len(y) - float(kl) + float(log_prior), rel=1e-12)
        # the same expectation as gpytorch's estimate from its joint draws, within the Monte Carlo error
        many = _draws(clf, len(y), seed=4, samples=20_000)
        torch.manual_seed(0)  # 20,000 of gpytorch's draws in ten calls: one call of 20,000 took 20 s, of 2,000 0.2 s
        with gpytorch.settings.num_likelihood_samples(2_000):
            theirs = torch.stack([likelihood.expected_log_prob(y, q_f) for _ in range(10)]).mean(0)
        f = mean.mT + variance.mT.sqrt() * many
        mine = torch.log_softmax(f, -1).gather(-1, y.expand(f.shape[:-1]).unsqueeze(-1)).squeeze(-1).mean(0)
        assert float((mine - theirs).abs().max()) < 0.02


@pytest.mark.parametrize(
    "rows, scales, empty",
    [
        (range(32), "per-class", []),
        (range(200, 205), "per-class", []),
        (range(32), "shared", []),
        (range(32), "per-class", [3, 10, 20]),
    ],
    ids=["more documents than inducing ones", "fewer", "one output scale for all classes", "kept texts without a word"],
)
def test_the_fused_objective_is_the_eager_steps_loss_and_gradients(corpus, rows, scales, empty):
    """Against the eager step on one batch and one set of draws: the loss to 1e-12, every gradient (the
    natural parameters' natural gradients, through gpytorch's map there and ``_NaturalMoments`` here)
    to 1e-10 relative; other draws, another loss. ``empty``: rows made padding-only, read as the empty set
    (``on_empty="keep"``: the kernel's ``allow_empty``)."""
    clf = _fitted(corpus, class_hyperparameters=scales)
    assert unsupported_classifier(clf.model_, clf.likelihood_) is None
    x, y = _batch(clf, corpus, rows)
    if empty:
        allow_empty_documents(clf.model_.covar_module)
        x = x.clone()
        x[empty] = PAD
    n = len(corpus.labels)
    draws = _draws(clf, len(y), seed=7)
    reference, reference_grads = _loss_and_gradients(clf, lambda: _eager_step(clf, x, y, draws, n))
    objective = FusedClassifierObjective(clf.model_, clf.likelihood_, n)
    loss, grads = _loss_and_gradients(clf, lambda: objective(x, y, draws))
    assert objective.usable()
    assert float(loss) == pytest.approx(float(reference), rel=1e-12)
    assert len(grads) == 5 and all(g.abs().max() > 0 for g in reference_grads)
    for mine, theirs in zip(grads, reference_grads):
        assert float((mine - theirs).norm() / theirs.norm()) < 1e-10
    other = objective(x.numpy(), y, _draws(clf, len(y), seed=8))  # a NumPy batch, as the fit passes it
    assert float(other.detach()) != pytest.approx(float(loss), rel=1e-6)


def test_a_fit_with_compile_follows_the_eager_trajectory(corpus, monkeypatch):
    """``MiniBatch(compile=True)`` inside ``fused_steps()``: the steps after the first take the fused
    objective (``torch.compile`` made the identity here: the inductor build is
    ``benchmarks/fused_step.py``'s), with the same draws: the same losses and probabilities to rounding.
    Outside it, on a CPU, the fit compiles the Nystrom blocks instead."""
    calls = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: calls.append((fn, kw)) or fn)
    eager = _fitted(corpus, epochs=3)
    fused = _fitted(corpus, epochs=3, compile=True)
    assert calls == [(fused_step.packed_softmax_objective, {"dynamic": True})]
    np.testing.assert_allclose(fused.loss_curve_, eager.loss_curve_, rtol=1e-10)
    x = torch.from_numpy(corpus.X[:30])
    np.testing.assert_allclose(fused.predict_proba(x), eager.predict_proba(x), rtol=1e-8, atol=1e-10)
    calls.clear()
    _fitted(corpus, epochs=1, compile=True, on_cpu=False)
    assert all(fn is not fused_step.packed_softmax_objective for fn, _ in calls)


def test_a_failed_factorization_retakes_the_step_eagerly(corpus, monkeypatch):
    """A failed Cholesky factorization (here: every fused step's natural parameters, by its status) takes
    the step again through the eager objective -- whose gpytorch map adds jitter or raises, and the fit
    undoes the natural-gradient step -- so the fit is the eager fit; floored variances warn."""
    from linear_operator.utils.warnings import NumericalWarning

    from lvgp.models.gpc import inference

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)
    original = fused_step.fused_softmax_objective

    def failing(*args):
        loss, status = original(*args)
        return loss, status + torch.tensor([1, 0, 0, 1])

    monkeypatch.setattr(fused_step, "fused_softmax_objective", failing)
    eager_calls = []
    by_hand = inference.whitened_softmax_elbo
    monkeypatch.setattr(inference, "whitened_softmax_elbo", lambda *a: eager_calls.append(1) or by_hand(*a))
    eager = _fitted(corpus, epochs=1)
    eager_calls.clear()
    with pytest.warns(NumericalWarning, match="rounded up"):
        retaken = _fitted(corpus, epochs=1, compile=True)
    assert len(eager_calls) == 8  # 240 documents in batches of 32: every step eager, the first and the 7 retaken
    np.testing.assert_allclose(retaken.loss_curve_, eager.loss_curve_, rtol=1e-12)


def test_a_failed_compile_falls_back_to_the_same_function_eagerly(corpus, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: broken)
    eager = _fitted(corpus, epochs=2)
    with pytest.warns(PerformanceWarning, match="fused classifier step failed .*no C\\+\\+ compiler"):
        fused = _fitted(corpus, epochs=2, compile=True)
    np.testing.assert_allclose(fused.loss_curve_, eager.loss_curve_, rtol=1e-10)


def test_the_objective_is_one_graph_for_torch_compile(corpus):
    """Dynamo captures the whole function, the natural parameters' ``autograd.Function`` included
    (``fullgraph=True``, dynamic shapes; ``backend="eager"``: the capture alone), with the eager values."""
    torch._dynamo.reset()
    clf = _fitted(corpus, epochs=1)
    x, y = _batch(clf, corpus, range(24))
    n = len(corpus.labels)
    draws = _draws(clf, len(y), seed=1)
    objective = FusedClassifierObjective(clf.model_, clf.likelihood_, n)
    reference, reference_grads = _loss_and_gradients(clf, lambda: objective(x, y, draws))
    objective.function = torch.compile(
        fused_step.packed_softmax_objective, backend="eager", fullgraph=True, dynamic=True
    )
    loss, grads = _loss_and_gradients(clf, lambda: objective(x, y, draws))
    assert float(loss) == pytest.approx(float(reference), rel=1e-12)
    for mine, theirs in zip(grads, reference_grads):
        assert float((mine - theirs).norm() / theirs.norm()) < 1e-10


def test_unsupported_classifiers_say_why_and_keep_the_eager_step(corpus):
    binary = _fitted(corpus, epochs=1, labels=corpus.labels % 2)
    assert "binary" in unsupported_classifier(binary.model_, binary.likelihood_)
    exact = _fitted(corpus, epochs=1, kernel=NYSTROM.replace(approximation="exact"))
    assert "Nystrom" in unsupported_classifier(exact.model_, exact.likelihood_)
    with pytest.raises(ValueError, match="does not apply: the kernel is not an LDK with a Nystrom map"):
        FusedClassifierObjective(exact.model_, exact.likelihood_, 10)
    clf = _fitted(corpus, epochs=1)
    assert "SoftmaxLikelihood" in unsupported_classifier(clf.model_, gpytorch.likelihoods.BernoulliLikelihood())
