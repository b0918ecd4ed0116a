"""The sparse GP-LVSM's fused objective (issue 60): a function of tensors, its bags built on the host,
against the eager step through the kernel stack -- the same loss and gradients to 1e-10 in float64, the
same tables as the kernel's own bags and floors, a fit with ``compile=True`` on the eager step's
trajectory, a clean fallback where compiling fails, and a whole graph for ``torch.compile``."""

from __future__ import annotations

import warnings

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lvgp import MiniBatch, SparseGPLVSMRegressor
from lvgp.bow.padded import PAD, document_lengths, documents_at
from lvgp.datasets import make_zipf_topic_documents
from lvgp.kernels import LDKSpec
from lvgp.kernels.document import allow_empty_documents
from lvgp.kernels.spec import variational_word_vectors
from lvgp.models import fused_step
from lvgp.models.fused_step import FusedSparseObjective, document_bags, step_table, unsupported
from lvgp.models.sparse import step_loss
from lvgp.warnings import PerformanceWarning

from .test_sparse import _terms_and_gradients

NYSTROM = LDKSpec(**SparseGPLVSMRegressor._default_kernel).replace(approximation="nystrom")


@pytest.fixture(scope="module")
def corpus():
    return make_zipf_topic_documents(240, num_words=1500, max_length=40, random_state=0)


def _fitted(corpus, steps=3, batch_size=32, on_cpu=True, **options):
    """A fitted regressor; with ``compile=True``, its fused step taken on this CPU (``fused_steps``)."""
    with warnings.catch_warnings(), fused_step.fused_steps(on_cpu):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SparseGPLVSMRegressor(
            NYSTROM,
            num_inducing=12,
            optimizer=MiniBatch(batch_size=batch_size, max_steps=steps, **options),
            num_words=corpus.num_words,
            random_state=0,
        ).fit(torch.from_numpy(corpus.X), corpus.y)


def _loss_and_gradients(reg, objective):
    """The loss and every parameter's gradient (``tests/test_sparse.py``'s helper, one term)."""
    (loss,), grads = _terms_and_gradients(reg, lambda: [objective()])
    return loss, grads


def _eager_step(reg, x, y, n, seed):
    """The regressor's eager objective (``lvgp.models.sparse.step_loss``), one draw of the vectors from ``seed``."""
    model, likelihood = reg.model_, reg.likelihood_
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=n, combine_terms=False)
    variational = variational_word_vectors(model.covar_module)
    return step_loss(mll, x, y, variational, torch.Generator().manual_seed(seed))


def _batch(reg, corpus, rows):
    x = torch.from_numpy(corpus.X).long()
    y = torch.as_tensor((corpus.y - reg.y_mean_) / reg.y_std_, dtype=torch.float64)
    rows = torch.as_tensor(rows)
    return documents_at(x, rows, document_lengths(x)[rows]), y[rows]


@pytest.mark.parametrize(
    "rows, empty",
    [(range(32), []), (range(200, 205), []), (range(32), [3, 10, 20])],
    ids=["more documents than inducing ones", "fewer", "kept texts without a word"],
)
def test_the_fused_objective_is_the_eager_steps_loss_and_gradients(corpus, rows, empty):
    """``empty``: rows made padding-only, read as the empty set (``on_empty="keep"``: the kernel's ``allow_empty``),
    whose diagonal is 0 where every other document's is the cosine's 1."""
    reg = _fitted(corpus)
    assert unsupported(reg.model_, reg.likelihood_) is None
    x, y = _batch(reg, corpus, list(rows))
    if empty:
        allow_empty_documents(reg.model_.covar_module)
        x = x.clone()
        x[empty] = PAD
    n = len(corpus.y)
    reference, reference_grads = _loss_and_gradients(reg, lambda: _eager_step(reg, x, y, n, seed=7))
    objective = FusedSparseObjective(reg.model_, reg.likelihood_, n)
    loss, grads = _loss_and_gradients(reg, lambda: objective(x, y, torch.Generator().manual_seed(7)))
    assert float(loss) == pytest.approx(float(reference), rel=1e-12)
    assert all(g.abs().max() > 0 for g in reference_grads)
    for mine, theirs in zip(grads, reference_grads):
        assert float((mine - theirs).norm() / theirs.norm()) < 1e-10  # the 1e-10, relative to each gradient
    # another draw is another loss: the noise is the module's own draw, not a constant
    other = objective(x, y, torch.Generator().manual_seed(8))
    assert float(other.detach()) != pytest.approx(float(loss.detach()), rel=1e-6)


def test_the_host_tables_are_the_kernels_bags_and_floors(corpus):
    """``document_bags``' words, weights and norm floors are those the kernel computes for the same
    documents (its bags over the distinct words, its ``_norm_floor``); ``step_table`` joins the inducing
    documents' and a batch's bags over the distinct words of both."""
    reg = _fitted(corpus, steps=1)
    kernel = reg.model_.covar_module.base_kernel
    x, _ = _batch(reg, corpus, [3, 17, 17, 40, 99])
    x[0, 2] = x[0, 0]  # a repeated word: its weights summed
    bags = document_bags(x.numpy(), kernel.word_weights.numpy(), kernel.num_words)
    d = kernel._prepare(x, torch.float64)
    words, _ = d.distinct()
    reference = torch.zeros(len(x), kernel.num_words, dtype=torch.float64)
    reference[d.bags().rows()[:, None], words[d.bags().words][:, None]] = d.bags().weights[:, None]
    np.testing.assert_allclose(bags.counts.toarray(), reference.numpy(), rtol=1e-15, atol=0)
    torch.testing.assert_close(torch.from_numpy(bags.floor), kernel._norm_floor(x, kernel.latent.detach()))
    z, _ = _batch(reg, corpus, [5, 6])
    inducing = document_bags(z.numpy(), kernel.word_weights.numpy(), kernel.num_words)
    table_words, local, offsets, weights, floor = step_table(inducing, bags)
    np.testing.assert_array_equal(table_words, np.unique(np.concatenate([z[z != PAD], x[x != PAD]])))
    rows = np.repeat(np.arange(7), np.diff(offsets, append=len(local)))
    joined = np.zeros((7, kernel.num_words))
    joined[rows, table_words[local]] = weights
    np.testing.assert_array_equal(joined, np.vstack([inducing.counts.toarray(), bags.counts.toarray()]))
    np.testing.assert_array_equal(floor, np.concatenate([inducing.floor, bags.floor]))


def test_the_table_is_the_same_by_the_vocabulary_marks_and_by_the_sort(corpus):
    """``step_table`` reads the distinct words off a mark per vocabulary word, or, for a vocabulary more than
    16 times the entries, sorts them: the same table either way."""
    rng = np.random.default_rng(0)
    x, z = corpus.X[rng.choice(len(corpus.X), 20, replace=False)], corpus.X[:8]
    marks = step_table(document_bags(z, None, corpus.num_words), document_bags(x, None, corpus.num_words))
    wide = 10**7  # the same documents in a vocabulary of ten million words: the sort
    assert wide > 16 * int((z != PAD).sum() + (x != PAD).sum())
    sort = step_table(document_bags(z, None, wide), document_bags(x, None, wide))
    for mine, theirs in zip(marks, sort, strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_the_cosines_on_a_device_are_the_hosts(corpus, monkeypatch):
    """``table_cosines`` (the dense table's product, a GPU's few launches) gives ``bag_of_words_cosines``'
    values (the host's sparse product), an empty document's row 0 as there; the objective with its cosines
    computed that way (forced here on the CPU) gives the host path's loss and gradients."""
    rng = np.random.default_rng(1)
    x, z = corpus.X[rng.choice(len(corpus.X), 30, replace=False)].copy(), corpus.X[:9]
    x[4] = PAD  # an empty document
    weights = rng.uniform(0.5, 2.0, corpus.num_words)
    inducing, batch = document_bags(z, weights, corpus.num_words), document_bags(x, weights, corpus.num_words)
    words, local, offsets, table_weights, _ = step_table(inducing, batch)
    on_device = fused_step.table_cosines(
        torch.from_numpy(local), torch.from_numpy(offsets), torch.from_numpy(table_weights), 9, len(words)
    )
    host = fused_step.bag_of_words_cosines(inducing, batch)
    assert host.shape == tuple(on_device.shape) == (9, 30) and not host[:, 4].any()
    np.testing.assert_allclose(on_device.numpy(), host, rtol=1e-13, atol=1e-15)
    reg = _fitted(corpus)
    xb, yb = _batch(reg, corpus, range(24))
    objective = FusedSparseObjective(reg.model_, reg.likelihood_, len(corpus.y))
    reference, reference_grads = _loss_and_gradients(reg, lambda: objective(xb, yb, torch.Generator().manual_seed(3)))
    asked, decide = [], fused_step.cosines_on_device
    monkeypatch.setattr(fused_step, "cosines_on_device", lambda *args: asked.append(args) or True)
    loss, grads = _loss_and_gradients(reg, lambda: objective(xb, yb, torch.Generator().manual_seed(3)))
    assert asked and asked[0][0] == torch.device("cpu")
    assert float(loss) == pytest.approx(float(reference), rel=1e-12)
    for mine, theirs in zip(grads, reference_grads):
        assert float((mine - theirs).norm() / theirs.norm()) < 1e-10
    assert not decide(torch.device("cpu"), 512, 1000)  # a CPU keeps the sparse product
    assert decide(torch.device("cuda"), 512, 1000)
    assert not decide(torch.device("cuda"), 2048, 2**16)  # 1 GB of table: the host's


def test_a_fit_with_compile_follows_the_eager_trajectory(corpus, monkeypatch):
    """``MiniBatch(compile=True)``: the steps after the first take the fused objective (here eager:
    ``torch.compile`` made the identity, so that this test does not pay a second inductor build; the
    compiled graph's fit: ``tests/test_random_features.py`` and ``benchmarks/fused_step.py``), on the eager
    fit's draws: the same losses and predictions to rounding."""
    calls = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: calls.append(kw) or fn)
    eager, fused = _fitted(corpus, steps=10), _fitted(corpus, steps=10, compile=True)
    assert calls == [{"dynamic": True}]
    # on a CPU outside fused_steps(), compile=True compiles the Nystrom blocks instead (the fused step is slower
    # there: benchmarks/fused_step.py), whose compiled function is another
    calls.clear()
    _fitted(corpus, steps=3, compile=True, on_cpu=False)
    assert {"dynamic": True} not in calls
    np.testing.assert_allclose(fused.step_losses_, eager.step_losses_, rtol=1e-10)
    x = torch.from_numpy(corpus.X[:20])
    np.testing.assert_allclose(fused.predict(x), eager.predict(x), rtol=1e-9, atol=1e-12)


def test_a_failed_compile_falls_back_to_the_same_function_eagerly(corpus, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: broken)
    eager = _fitted(corpus, steps=6)
    with pytest.warns(PerformanceWarning, match="no C\\+\\+ compiler"):
        fused = _fitted(corpus, steps=6, compile=True)
    np.testing.assert_allclose(fused.step_losses_, eager.step_losses_, rtol=1e-10)


def test_the_objective_is_one_graph_for_torch_compile(corpus):
    """No graph break (``fullgraph=True``: dynamo captures the whole function, with dynamic shapes) and
    the values of the eager function. Dynamo's capture alone (``backend="eager"``, 3 s): AOTAutograd and
    inductor's build (10 s and 20-40 s more here) run in ``benchmarks/fused_step.py``."""
    torch._dynamo.reset()
    reg = _fitted(corpus)
    x, y = _batch(reg, corpus, range(24))
    objective = FusedSparseObjective(reg.model_, reg.likelihood_, len(corpus.y))
    reference, reference_grads = _loss_and_gradients(reg, lambda: objective(x, y, torch.Generator().manual_seed(1)))
    objective.function = torch.compile(fused_step.packed_objective, backend="eager", fullgraph=True, dynamic=True)
    loss, grads = _loss_and_gradients(reg, lambda: objective(x, y, torch.Generator().manual_seed(1)))
    assert float(loss) == pytest.approx(float(reference), rel=1e-12)
    for mine, theirs in zip(grads, reference_grads):
        assert float((mine - theirs).norm() / theirs.norm()) < 1e-10


def test_unsupported_models_say_why_and_keep_the_eager_step(corpus):
    reg = _fitted(corpus, steps=1)
    assert unsupported(reg.model_, gpytorch.likelihoods.StudentTLikelihood()) is not None
    exact = SparseGPLVSMRegressor(
        NYSTROM.replace(approximation="exact"), num_inducing=12, optimizer=MiniBatch(batch_size=32, max_steps=1),
        num_words=corpus.num_words, random_state=0,
    ).fit(torch.from_numpy(corpus.X), corpus.y)  # fmt: skip
    assert "Nystrom" in unsupported(exact.model_, exact.likelihood_)
    with pytest.raises(ValueError, match="does not apply: the kernel is not an LDK with a Nystrom map"):
        FusedSparseObjective(exact.model_, exact.likelihood_, 10)
    assert PAD == -1  # the host tables read padding as -1


def test_a_failed_factorization_retakes_the_step_eagerly_and_floored_variances_warn(corpus, monkeypatch):
    """The fused objective reports its Cholesky factorizations' ``info`` instead of checking them inside
    the step; where one failed, the step is taken again through the eager objective (whose factorization
    adds jitter or raises). Floored variances warn as gpytorch's."""
    from linear_operator.utils.warnings import NumericalWarning

    from lvgp.models import sparse

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)
    original = fused_step.fused_objective

    def failing(*args):
        loss, status = original(*args)
        return loss, status + torch.tensor([1, 0, 1])  # one floored variance, a failed K_ZZ factorization

    monkeypatch.setattr(fused_step, "fused_objective", failing)
    eager_calls = []
    by_hand = sparse.whitened_gaussian_elbo
    monkeypatch.setattr(sparse, "whitened_gaussian_elbo", lambda *a: eager_calls.append(1) or by_hand(*a))
    with pytest.warns(NumericalWarning, match="rounded up"):
        reg = _fitted(corpus, steps=5, compile=True)
    assert len(eager_calls) == 5  # the first step (eager), then each of the four fused steps again
    assert np.isfinite(reg.step_losses_).all() and len(reg.step_losses_) == 5
