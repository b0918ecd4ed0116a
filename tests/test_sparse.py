"""Sparse variational GP-LVSM: with every training document as an inducing point it is the
exact GP-LVSM (GPflow-style equivalence: the ELBO at the optimal q(v) equals the exact log
marginal likelihood, trained ELBOs never exceed it, predictions coincide), mini-batch
training learns, and the estimator's input handling."""

from __future__ import annotations

import contextlib
import warnings

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lvgp import LBFGS, GPLVSMRegressor, LatentDistributionKernel, MiniBatch, Vocabulary
from lvgp.base.numerics import exact_numerics
from lvgp.bow.padded import PAD, pad_to_common_width
from lvgp.datasets import make_synonym_regression
from lvgp.kernels import LDKSpec, make_word_vectors, shared_evaluation
from lvgp.kernels.spec import variational_word_vectors
from lvgp.models.inducing import choose_inducing_documents
from lvgp.models.sparse import SparseGPLVSM, SparseGPLVSMRegressor
from lvgp.warnings import EmptyDocumentsWarning


class ExactLDK(gpytorch.models.ExactGP):
    def __init__(self, x, y, likelihood, kernel):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def setup(n=40):
    corpus = make_synonym_regression(n=n, noise=0.1, random_state=0)
    vocab = Vocabulary(min_df=1).fit(corpus.texts)
    x = vocab.encode(corpus.texts)
    y = torch.as_tensor((corpus.y - corpus.y.mean()) / corpus.y.std())
    kernel = LatentDistributionKernel(len(vocab), 2, "rbf", "linear", rho=1.0, seed=0).double()
    # a tiny jitter: K has eigenvalues near 1e-6 here, and the bound loosens by O(jitter / lambda_min)
    # (measured: gap 5e-3 per datum with jitter 1e-6, 1e-6 with 1e-8, 6e-10 with 1e-10)
    sparse = SparseGPLVSM(x, kernel, jitter=1e-10).double()
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()
    likelihood.noise = torch.tensor(0.3, dtype=torch.float64)
    sparse.covar_module.outputscale = torch.tensor(1.3, dtype=torch.float64)
    exact = ExactLDK(x, y, likelihood, kernel).double()
    exact.covar_module = sparse.covar_module  # the very same kernel, hyper-parameters and word vectors
    exact.mean_module = sparse.mean_module
    return x, y, sparse, exact, likelihood


def set_optimal_q(sparse, x, y, noise):
    """The optimal whitened q(v) for Z = X (Titsias 2009): q(u) = p(f | y)."""
    with torch.no_grad():
        k = sparse.covar_module(x).to_dense()
        jitter = sparse.variational_strategy.jitter_val
        chol = torch.linalg.cholesky(k + jitter * torch.eye(len(k), dtype=k.dtype))
        solve = torch.linalg.solve(k + noise * torch.eye(len(k), dtype=k.dtype), torch.eye(len(k), dtype=k.dtype))
        mean_u = k @ solve @ (y - sparse.mean_module.constant)
        cov_u = k - k @ solve @ k
        m_v = torch.linalg.solve_triangular(chol, mean_u[:, None], upper=False)[:, 0]
        a = torch.linalg.solve_triangular(chol, cov_u, upper=False)
        s_v = torch.linalg.solve_triangular(chol, a.mT, upper=False)
        s_v = 0.5 * (s_v + s_v.mT) + 1e-12 * torch.eye(len(k), dtype=k.dtype)
        dist = sparse.variational_strategy._variational_distribution
        dist.variational_mean.copy_(m_v)
        dist.chol_variational_covar.copy_(torch.linalg.cholesky(s_v))
        sparse.variational_strategy.variational_params_initialized.fill_(1)


def _assert_the_sparse_gp_recovers_the_exact_one(x, y, x_inducing, y_inducing, sparse, exact, likelihood) -> float:
    """With every inducing document's target and the optimal q(v), the sparse ELBO on ``x``, ``y`` equals the exact
    GP's log marginal likelihood (per datum, returned), never above it, and the predictions at new documents
    coincide."""
    with exact_numerics():
        exact.train(), likelihood.train()
        exact_mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, exact)(exact(x), y).item()
        set_optimal_q(sparse, x_inducing, y_inducing, likelihood.noise.item())
        sparse.train()
        elbo = gpytorch.mlls.VariationalELBO(likelihood, sparse, num_data=len(y))(sparse(x), y).item()
        assert elbo <= exact_mll + 1e-6
        assert abs(elbo - exact_mll) < 1e-7 * abs(exact_mll), (elbo, exact_mll)
        exact.eval(), sparse.eval(), likelihood.eval()
        with torch.no_grad():
            test = x_inducing[:10].flip(-1)
            pe, ps = exact(test), sparse(test)
        torch.testing.assert_close(ps.mean, pe.mean, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ps.variance, pe.variance, atol=1e-5, rtol=1e-4)
    return exact_mll


def test_all_documents_as_inducing_points_recover_the_exact_gp():
    x, y, sparse, exact, likelihood = setup()
    _assert_the_sparse_gp_recovers_the_exact_one(x, y, x, y, sparse, exact, likelihood)


def test_with_kept_texts_all_other_documents_as_inducing_points_recover_the_exact_gp():
    """The GPflow-style equivalence with texts kept as the empty set (``on_empty="keep"``): training documents with
    padding-only rows, inducing points the others. The exact GP's Gram has zero rows and columns at the kept
    texts (its log marginal likelihood: the others' plus each kept target's ``log N(y; c, noise)``); the sparse
    ELBO at the optimal q(v) -- the others' posterior, which the kept targets do not inform -- equals it, and the
    predictions at new documents coincide."""
    from lvgp.kernels.document import allow_empty_documents

    x_known, y, sparse, exact, likelihood = setup()
    empty = [0, 9, 23]
    x = _with_padding_rows(x_known, empty)
    known = [i for i in range(x.shape[0]) if i not in empty]
    y_all = torch.zeros(x.shape[0], dtype=torch.float64)
    y_all[known] = y
    y_all[empty] = torch.tensor([0.7, -1.2, 0.1], dtype=torch.float64)
    allow_empty_documents(sparse.covar_module)
    exact.set_train_data(x, y_all, strict=False)
    exact_mll = _assert_the_sparse_gp_recovers_the_exact_one(x, y_all, x_known, y, sparse, exact, likelihood)
    # the kept targets' own term: the exact GP's likelihood without them differs by log N(y; c, noise) each
    exact.set_train_data(x_known, y, strict=False)
    with exact_numerics():
        exact.train(), likelihood.train()
        known_mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, exact)(exact(x_known), y).item()
        kept = torch.distributions.Normal(sparse.mean_module.constant, likelihood.noise.sqrt()).log_prob(y_all[empty])
    assert exact_mll * len(y_all) == pytest.approx(known_mll * len(known) + float(kept.sum()), rel=1e-10)


def _with_padding_rows(x: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """``x`` with padding-only rows at ``rows`` of the result, the others in order."""
    out = torch.full((x.shape[0] + len(rows), x.shape[1]), PAD, dtype=x.dtype)
    out[[i for i in range(out.shape[0]) if i not in rows]] = x
    return out


def test_trained_elbo_stays_below_the_exact_log_marginal_likelihood():
    x, y, sparse, exact, likelihood = setup(30)
    n = len(y)
    mll = gpytorch.mlls.VariationalELBO(likelihood, sparse, num_data=n)
    opt = torch.optim.Adam(sparse.variational_strategy._variational_distribution.parameters(), lr=0.05)
    sparse.train(), likelihood.train()
    with exact_numerics():
        for _ in range(150):
            opt.zero_grad()
            loss = -mll(sparse(x), y)
            loss.backward()
            opt.step()
        elbo = mll(sparse(x), y).item()
        exact.train()
        exact_mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, exact)(exact(x), y).item()
    assert elbo <= exact_mll + 1e-8
    assert exact_mll - elbo < 0.05 * abs(exact_mll)


def test_regressor_learns_with_minibatches_and_handles_input():
    corpus = make_synonym_regression(n=400, noise=0.05, random_state=2)
    train, test = slice(0, 300), slice(300, 400)
    reg = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2),
        num_inducing=32,
        optimizer=MiniBatch(batch_size=64, max_epochs=25, lr=0.03),
        random_state=0,
    )
    reg.fit(corpus.texts[train], corpus.y[train])
    assert len(reg.inducing_indices_) == 32 and reg.loss_curve_[-1] < reg.loss_curve_[0]
    mean, std = reg.predict(corpus.texts[test], return_std=True)
    rmse = np.sqrt(np.mean((mean - corpus.y[test]) ** 2))
    assert rmse < 0.6 * corpus.y[test].std(), rmse
    assert np.all(std > 0)
    with pytest.warns(EmptyDocumentsWarning):
        m2 = reg.predict(["qqqq zzzz"] + list(corpus.texts[test][:2]))
    assert np.isfinite(m2).all()
    with pytest.raises(ValueError, match="y"):
        SparseGPLVSMRegressor().fit(corpus.texts[:5], corpus.y[:4])


def test_texts_predict_unpadded_as_through_the_whole_padded_corpus(monkeypatch):
    """The sparse regressor predicts texts without padding them all to the longest
    (:meth:`DocumentEncoder.predicting_unpadded`, each block padded to its own longest): the same means and
    standard deviations as through the padded corpus (:meth:`DocumentEncoder.predicting`), with variational
    word vectors' draws and a text without a known word."""
    from lvgp.base.encoding import DocumentEncoder

    corpus = make_synonym_regression(n=120, noise=0.05, random_state=2)
    reg = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2, variational=True),
        num_inducing=16,
        optimizer=MiniBatch(batch_size=32, max_epochs=2, lr=0.03),
        random_state=0,
    ).fit(corpus.texts[:80], corpus.y[:80])
    test = [" ".join([t] * (1 + i % 4)) for i, t in enumerate(corpus.texts[80:])] + ["qqqq zzzz"]

    def predictions():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyDocumentsWarning)
            return reg.predict(test, return_std=True, block=7)

    unpadded = predictions()
    monkeypatch.setattr(DocumentEncoder, "predicting_unpadded", DocumentEncoder.predicting)
    for got, expected in zip(unpadded, predictions()):
        np.testing.assert_array_equal(got, expected)


def test_kmeanspp_inducing_documents_are_distinct_and_cover_the_corpus():
    """10 topics with disjoint vocabularies (documents of one topic are near each other, those
    of two topics orthogonal): 10 k-means++ documents hit every topic, for every seed, while
    10 random documents miss at least one topic for most seeds."""
    rng = np.random.default_rng(0)
    topics = np.repeat(np.arange(10), [60, 40, 30, 20, 10, 10, 10, 10, 5, 5])  # unbalanced
    width = 6
    x = torch.full((len(topics), width), PAD, dtype=torch.long)
    for i, t in enumerate(topics):
        # three words of the topic's own four, the first one repeated
        words = 4 * t + np.r_[0, 0, 0, rng.choice(np.arange(1, 4), 3, replace=False)]
        x[i] = torch.as_tensor(words)
    random_misses = 0
    for seed in range(10):
        idx = choose_inducing_documents(x, 40, 10, "kmeans++", seed=seed)
        assert len(set(idx.tolist())) == 10
        assert set(topics[idx].tolist()) == set(range(10)), (seed, topics[idx])
        random_idx = choose_inducing_documents(x, 40, 10, "random", seed=seed)
        random_misses += len(set(topics[random_idx].tolist())) < 10
    assert random_misses >= 8  # the test can tell covering from not covering
    corpus = make_synonym_regression(n=200, random_state=3)
    vocab = Vocabulary(min_df=1).fit(corpus.texts)
    assert list(choose_inducing_documents(vocab.encode(corpus.texts), len(vocab), 500, "kmeans++", seed=0)) == list(
        range(200)
    )


def test_kmeanspp_seeding_is_scikit_learns_on_csr_input():
    """choose_inducing_documents hands scikit-learn's k-means++ a CSC matrix whose rows come from
    its CSR form (no CSR transpose at every step): the same documents, centers and products as
    kmeans_plusplus on the plain CSR matrix, for several seeds and sizes."""
    from sklearn.cluster import kmeans_plusplus
    from sklearn.preprocessing import normalize

    from lvgp.bow.padded import padded_to_counts
    from lvgp.datasets import make_zipf_topic_documents
    from lvgp.models.inducing import _RowsFromCSR

    data = make_zipf_topic_documents(600, num_words=2_000, max_length=60, random_state=0)
    x = torch.as_tensor(data.X)
    features = normalize(padded_to_counts(x, data.num_words).astype(np.float64))
    for seed, m in [(0, 16), (1, 40), (7, 100)]:
        centers, reference = kmeans_plusplus(features, m, random_state=seed)
        np.testing.assert_array_equal(
            choose_inducing_documents(x, data.num_words, m, "kmeans++", seed), np.sort(reference)
        )
        again, chosen = kmeans_plusplus(_RowsFromCSR(features), m, random_state=seed)
        np.testing.assert_array_equal(chosen, reference)
        np.testing.assert_array_equal(again, centers)
    wrapped = _RowsFromCSR(features)
    assert (wrapped[[3, 1]] != features[[3, 1]]).nnz == 0 and (wrapped[2:5] != features[2:5]).nnz == 0
    assert (wrapped.copy()[[0]] != features[[0]]).nnz == 0  # derived matrices select rows too


def test_kmeanspp_seeds_among_a_uniform_sample_of_a_large_corpus(monkeypatch):
    """Above max(_KMEANS_POOL, 20 m) documents, k-means++ runs on a uniform sample of that many (its
    cost is O(n m nnz)): the chosen documents are the sample's k-means++ choice, as row indices of
    the whole corpus; below it, every document is a candidate (the choice does not change)."""
    import lvgp.models.inducing as sparse_module

    corpus = make_synonym_regression(n=300, random_state=3)
    vocab = Vocabulary(min_df=1).fit(corpus.texts)
    x = vocab.encode(corpus.texts)
    whole = choose_inducing_documents(x, len(vocab), 5, "kmeans++", seed=1)
    monkeypatch.setattr(sparse_module, "_KMEANS_POOL", 300)
    np.testing.assert_array_equal(choose_inducing_documents(x, len(vocab), 5, "kmeans++", seed=1), whole)
    monkeypatch.setattr(sparse_module, "_KMEANS_POOL", 60)  # a pool of max(60, 20 x 5) = 100 documents
    chosen = choose_inducing_documents(x, len(vocab), 5, "kmeans++", seed=1)
    pool = np.sort(np.random.default_rng(1).choice(300, 100, replace=False))
    monkeypatch.setattr(sparse_module, "_KMEANS_POOL", 10_000)
    np.testing.assert_array_equal(
        chosen, pool[choose_inducing_documents(x[torch.from_numpy(pool)], len(vocab), 5, "kmeans++", 1)]
    )
    assert len(set(chosen.tolist())) == 5


def test_sparse_and_exact_estimators_agree_roughly_on_the_same_data():
    corpus = make_synonym_regression(n=160, noise=0.05, random_state=4)
    exact = GPLVSMRegressor(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=60), random_state=0).fit(
        corpus.texts[:120], corpus.y[:120]
    )
    sparse = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2),
        num_inducing=120,
        optimizer=MiniBatch(batch_size=120, max_epochs=150, lr=0.03),
        random_state=0,
    ).fit(corpus.texts[:120], corpus.y[:120])
    e = np.sqrt(np.mean((exact.predict(corpus.texts[120:]) - corpus.y[120:]) ** 2))
    s = np.sqrt(np.mean((sparse.predict(corpus.texts[120:]) - corpus.y[120:]) ** 2))
    assert s < 1.5 * e + 0.05 * corpus.y.std(), (s, e)


def test_distributed_training_follows_the_single_process_trajectory():
    """2 processes on loopback (gloo), global batches shared between them, gradients
    all-reduced: the per-step ELBO trajectory equals single-process training with the same
    global batch size (the last batch of each epoch is uneven: 70 = 64 + 6 -> shares 3/3)."""
    corpus = make_synonym_regression(n=134, noise=0.1, random_state=5)
    optimizer = MiniBatch(batch_size=64, max_epochs=3, lr=0.03)
    kwargs = dict(kernel=LDKSpec(latent_dim=2), num_inducing=16, optimizer=optimizer, random_state=0)
    single = SparseGPLVSMRegressor(**kwargs).fit(corpus.texts, corpus.y)
    parallel = SparseGPLVSMRegressor(**kwargs, distributed=True, world_size=2).fit(corpus.texts, corpus.y)
    assert len(single.step_losses_) == len(parallel.step_losses_) == 9
    np.testing.assert_allclose(parallel.step_losses_, single.step_losses_, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(parallel.predict(corpus.texts[:20]), single.predict(corpus.texts[:20]), rtol=1e-8)
    with pytest.raises(ValueError, match="world_size"):
        SparseGPLVSMRegressor(distributed=True, world_size=1).fit(corpus.texts, corpus.y)


@pytest.mark.slow
def test_default_budget_fits_1000_documents_as_well_as_the_exact_model():
    """The defaults budget Adam steps, not epochs: on 1,000 documents (4 steps per epoch) they
    used to stop after 80 steps (RMSE 0.372 vs 0.164). Measured with the paper's kernel: sparse
    0.102 after 700 steps (converged), exact 0.098. (With the default kernel, variational word
    vectors beside the bag of words, 64 inducing documents reach 0.19 against the exact model's 0.10:
    the docstring of SparseGPLVSMRegressor.) The exact reference stops at 40 L-BFGS iterations: its
    test RMSE is flat from 40 on (0.0981 at 40, 0.0974 at 80, 0.0977 at its default 300, which took
    54 of the test's 63 s; 80 iterations 14 s, half the test's time)."""
    corpus = make_synonym_regression(n=1500, noise=0.1, random_state=0)
    train, test = slice(0, 1000), slice(1000, 1500)

    def rmse(model):
        return float(np.sqrt(np.mean((model.predict(corpus.texts[test]) - corpus.y[test]) ** 2)))

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="GP-LVSM did not converge")
        exact = GPLVSMRegressor(LDKSpec.paper(), optimizer=LBFGS(max_iter=40), random_state=0)
        exact.fit(corpus.texts[train], corpus.y[train])
    sparse = SparseGPLVSMRegressor(LDKSpec.paper(), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the defaults converge on this data
        sparse.fit(corpus.texts[train], corpus.y[train])
    assert sparse.converged_ and sparse.n_iter_ < sparse._optimizer_options().max_steps
    assert rmse(sparse) <= 1.1 * rmse(exact), (rmse(sparse), rmse(exact))


def test_a_budget_that_ends_first_warns():
    corpus = make_synonym_regression(n=200, random_state=1)
    with pytest.warns(ConvergenceWarning, match="did not converge in 5 steps"):
        model = SparseGPLVSMRegressor(optimizer=MiniBatch(batch_size=64, max_steps=5), random_state=0).fit(
            corpus.texts, corpus.y
        )
    assert model.n_iter_ == 5 and not model.converged_


def test_the_kernel_evaluated_at_once_gives_the_lazy_blocks():
    """On CUDA the sparse model evaluates the kernel of the inducing documents and the batch at
    once (fewer launches); the variational strategy's blocks, hence the ELBO and its gradients and
    the predictions, are those of the lazy evaluation (the CPU path) up to rounding."""
    data = make_synonym_regression(n=60, random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg = SparseGPLVSMRegressor(
            LDKSpec(latent_dim=2), num_inducing=8, optimizer=MiniBatch(batch_size=16, max_steps=6), random_state=0
        )
        reg.fit(data.texts, data.y)
    lazy_mean, lazy_std = reg.predict(data.texts[:20], return_std=True)

    class Evaluated(SparseGPLVSM):
        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x).evaluate_kernel()
            )

    reg.model_.__class__ = Evaluated
    mean, std = reg.predict(data.texts[:20], return_std=True)
    np.testing.assert_allclose(mean, lazy_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(std, lazy_std, rtol=1e-10, atol=1e-12)

    x = reg.encoder_.transform(data.texts[:16])
    targets = torch.as_tensor((data.y[:16] - reg.y_mean_) / reg.y_std_)
    grads = []
    for cls in (SparseGPLVSM, Evaluated):
        reg.model_.__class__ = cls
        reg.model_.train()
        reg.likelihood_.train()
        reg.model_.zero_grad()
        mll = gpytorch.mlls.VariationalELBO(reg.likelihood_, reg.model_, num_data=60)
        with exact_numerics():
            loss = -mll(reg.model_(x[:, : int((x != PAD).sum(-1).max())]), targets)
        loss.backward()
        grads.append((loss.item(), reg.model_.covar_module.base_kernel.word_vectors.raw_latent.grad.clone()))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-10)
    torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-8, atol=1e-12)


def _elbo_step(model, likelihood, x, y, shared):
    """Minus the ELBO of a batch and the gradients of every parameter, in a shared evaluation or not."""
    model.train()
    likelihood.train()
    model.zero_grad()
    likelihood.zero_grad()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=100)
    with exact_numerics(), shared_evaluation(model) if shared else contextlib.nullcontext():
        loss = -mll(model(x), y)
    loss.backward()
    return loss.item(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("approximation", [None, "nystrom"])
def test_a_shared_evaluation_computes_each_sets_norms_once_with_the_same_elbo(monkeypatch, approximation):
    """A sparse step evaluates K_ZZ, K_ZX and diag K_XX. In a shared evaluation the batch's and the
    inducing documents' squared norms (the Nystrom LDK: their document features, and the landmarks'
    Cholesky factor) are computed once each instead of two or three times, and the ELBO and every
    gradient are those of the separate evaluations."""
    from lvgp.kernels import RandomFeatureLDK
    from lvgp.kernels import mean_embedding as me

    corpus = make_synonym_regression(n=60, noise=0.1, random_state=0)
    vocab = Vocabulary(min_df=1).fit(corpus.texts)
    x = vocab.encode(corpus.texts)
    y = torch.as_tensor((corpus.y - corpus.y.mean()) / corpus.y.std())
    common = dict(level2="cosine", identity_weight=0.5, rho=1.0, seed=0)
    if approximation is None:
        kernel = LatentDistributionKernel(len(vocab), 2, "rbf", **common).double()
        counted, name = me, "self_inner"
    else:
        kernel = RandomFeatureLDK(len(vocab), 2, "rbf", features="nystrom", num_features=8, **common).double()
        counted, name = RandomFeatureLDK, "_document_features"
    calls = []
    original = getattr(counted, name)

    def counting(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(counted, name, counting)
    model = SparseGPLVSM(x[:12], kernel).double()
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()
    batch = x[20:36]
    separate = _elbo_step(model, likelihood, batch, y[20:36], shared=False)
    separate_calls, calls[:] = len(calls), []
    shared = _elbo_step(model, likelihood, batch, y[20:36], shared=True)
    # one per set (inducing documents, batch); separately: the batch's norms twice (K_ZX, diag K_XX),
    # or each set's features three times (a Gram, the other side of K_ZX, the norms)
    assert (separate_calls, len(calls)) == ((3, 2) if approximation is None else (6, 2))
    assert shared[0] == pytest.approx(separate[0], rel=1e-12)
    assert shared[1].keys() == separate[1].keys()
    for key, grad in separate[1].items():
        torch.testing.assert_close(shared[1][key], grad, rtol=1e-9, atol=1e-12, msg=key)
    assert "_shared_memo" not in kernel.__dict__  # dropped on leaving the block


def test_a_shared_evaluation_sees_one_draw_and_no_stale_values():
    """Inside a block a variational module's vectors are drawn once (two evaluations agree; outside,
    each evaluation draws); blocks nest; after the block a parameter change is seen; a copy made
    inside a block does not carry its memo."""
    import copy

    corpus = make_synonym_regression(n=30, noise=0.1, random_state=0)
    vocab = Vocabulary(min_df=1).fit(corpus.texts)
    x = vocab.encode(corpus.texts)
    vectors = make_word_vectors(len(vocab), 2, rho=1.0, variational=True, seed=0)
    kernel = LatentDistributionKernel(embedding="rbf", level2="cosine", word_vectors=vectors).double()
    kernel.train()
    with torch.no_grad():
        with shared_evaluation(kernel):
            first = kernel(x[:10], x[10:20]).to_dense()
            with shared_evaluation(kernel):  # nested: the outer block's draw
                torch.testing.assert_close(kernel(x[:10], x[10:20]).to_dense(), first, rtol=0, atol=0)
            assert "_shared_memo" in kernel.__dict__
            assert "_shared_memo" not in copy.deepcopy(kernel).__dict__
        assert not torch.equal(kernel(x[:10], x[10:20]).to_dense(), first)  # a new draw outside
        kernel.eval()  # the means: no draws
        with shared_evaluation(kernel):
            before = kernel(x[:10], diag=False).to_dense()
        kernel.gamma = kernel.gamma * 2
        with shared_evaluation(kernel):
            after = kernel(x[:10], diag=False).to_dense()
        torch.testing.assert_close(after, kernel(x[:10]).to_dense())
        assert not torch.allclose(after, before)
    kernel.train()
    optimizer = torch.optim.SGD(kernel.parameters(), lr=0.1)
    with shared_evaluation(kernel):  # misuse: a step inside the block
        kernel(x[:10]).to_dense().sum().backward()
        optimizer.step()
        with pytest.raises(RuntimeError, match="changed inside shared_evaluation"):
            kernel(x[:10]).to_dense()


def test_the_inducing_documents_set_is_built_once_per_fit(monkeypatch):
    """The inducing documents reach the kernel as a slice of a fresh concatenation with each batch;
    the kernel finds their cached document set by value (distinct words, bags, their bag-of-words
    Gram: once per fit), builds one set a step (the batch), and never reuses a set whose ids were
    changed in place."""
    from lvgp.kernels import mean_embedding as me

    built = []
    original = me.DocumentSet.__init__

    def counting(self, *args):
        built.append(1)
        original(self, *args)

    monkeypatch.setattr(me.DocumentSet, "__init__", counting)
    data = make_synonym_regression(n=80, random_state=4)
    counts = []
    for steps in (3, 6):
        built.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            SparseGPLVSMRegressor(
                LDKSpec(latent_dim=2, identity_weight=0.5),
                num_inducing=8,
                optimizer=MiniBatch(batch_size=16, max_steps=steps),
                random_state=0,
            ).fit(data.texts, data.y)
        counts.append(len(built))
    assert counts[1] - counts[0] == 3  # three more steps: one new set (the batch) each

    kernel = LatentDistributionKernel(10, 2, "rbf", "linear", rho=1.0, seed=0).double()
    x = torch.tensor([[1, 2, PAD], [3, 4, 5]])
    first = kernel._prepare(x, torch.float64)
    assert kernel._prepare(x.clone(), torch.float64) is first  # equal ids, another tensor
    x[0, 0] = 7
    changed = kernel._prepare(x, torch.float64)
    assert changed is not first
    torch.testing.assert_close(changed.ids, torch.tensor([[7, 2, 0], [3, 4, 5]]))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("approximation", ["exact", "nystrom"])
def test_an_int32_corpus_is_kept_as_given_and_fits_as_its_int64_copy(record_int32_casts, approximation):
    """A padded int32 corpus (``make_zipf_topic_documents``'s: a million documents of 512 ids hold 2 GB,
    4 as int64) is not copied to int64: only batches, samples and the inducing documents are cast. The
    fit is the int64 corpus's to the bit: the step losses and the predictions."""
    from lvgp.datasets import make_zipf_topic_documents

    data = make_zipf_topic_documents(300, num_words=2_000, max_length=40, random_state=0)
    x32 = torch.as_tensor(data.X)
    assert x32.dtype == torch.int32

    def fit(x: torch.Tensor) -> SparseGPLVSMRegressor:
        spec = LDKSpec(**SparseGPLVSMRegressor._default_kernel).replace(approximation=approximation)
        est = SparseGPLVSMRegressor(
            spec, num_inducing=16, num_words=2_000, random_state=0, optimizer=MiniBatch(batch_size=64, max_steps=5)
        )
        return est.fit(x, data.y)

    wide = fit(x32.long())
    some = x32[:130]  # two whole blocks and a part
    with record_int32_casts() as cast:
        compact = fit(x32)
        blocks = compact.predict(some, return_std=True, block=64)  # predictions in blocks: each block cast
    assert cast and max(cast) < some.numel()  # batches and samples, never the corpus nor what is predicted
    for a, b in zip(blocks, wide.predict(some.long(), return_std=True, block=64)):
        np.testing.assert_array_equal(a, b)
    assert compact.kernel_kind_ == wide.kernel_kind_ == approximation
    assert compact.step_losses_ == wide.step_losses_
    for a, b in zip(compact.predict(x32[:40], return_std=True), wide.predict(x32[:40].long(), return_std=True)):
        np.testing.assert_array_equal(a, b)


def test_predictions_average_the_closed_form_svgp_mean_over_the_draws_of_the_word_vectors():
    """With variational word vectors (the default kernel) a prediction is the mean over draws of the
    whitened SVGP's predictive mean, ``c + K_XZ L^-T m`` with ``L L^T = K_ZZ + jitter I`` of *that*
    draw (Hensman et al. 2015): here computed in closed form, draw by draw, from the kernel alone.
    gpytorch's strategy keeps K_ZZ's factor between calls in eval mode; the predictions once paired
    every draw after the first with the first draw's factor."""
    from lvgp._random import torch_generator
    from lvgp.bow.padded import pad_to_width
    from lvgp.models.sparse import variational_word_vectors

    corpus = make_synonym_regression(n=240, noise=0.05, random_state=3)
    reg = SparseGPLVSMRegressor(
        num_inducing=16, optimizer=MiniBatch(batch_size=64, max_steps=40, tol=0.0), predict_samples=6, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg.fit(corpus.texts[:200], corpus.y[:200])
    texts = corpus.texts[200:]
    model = reg.model_
    vectors = variational_word_vectors(model.covar_module)
    assert vectors, "the default kernel has variational word vectors"
    strategy = model.variational_strategy
    m = strategy._variational_distribution.variational_mean.detach()
    generator = torch_generator(reg._predict_seed)
    draws = []
    with reg.encoder_.predicting(texts, reg._word_vectors(), compact=True) as x, torch.no_grad(), exact_numerics():
        width = max(x.shape[-1], strategy.inducing_points.shape[-1])
        xs, z = pad_to_width(x, width), pad_to_width(strategy.inducing_points, width)
        for _ in range(reg.predict_samples):
            for v in vectors:
                v.resample(generator)
            k_zz = model.covar_module(z, z).to_dense()
            k_xz = model.covar_module(xs, z).to_dense()
            chol = torch.linalg.cholesky(k_zz + strategy.jitter_val * torch.eye(len(z), dtype=k_zz.dtype))
            whitened = torch.linalg.solve_triangular(chol.mT, m.unsqueeze(-1), upper=True).squeeze(-1)
            draws.append(model.mean_module.constant.detach() + k_xz @ whitened)
        for v in vectors:
            v.use_mean()
    expected = torch.stack(draws).mean(0).numpy() * reg.y_std_ + reg.y_mean_
    np.testing.assert_allclose(reg.predict(texts), expected, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(reg.predict(texts), expected, rtol=1e-8, atol=1e-8)  # and again: nothing kept stale


def _fitted_for_the_elbo(kernel, batch_size, num_inducing=8):
    data = make_synonym_regression(n=60, random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg = SparseGPLVSMRegressor(
            kernel, num_inducing=num_inducing, optimizer=MiniBatch(batch_size=batch_size, max_steps=4), random_state=0
        ).fit(data.texts, data.y)
    x = reg.encoder_.transform(data.texts[:batch_size])
    x = x[:, : int((x != PAD).sum(-1).max())]
    return reg, x, torch.as_tensor((data.y[:batch_size] - reg.y_mean_) / reg.y_std_)


def _terms_and_gradients(reg, elbo):
    """The ELBO's terms of one batch and every parameter's gradient of their sum, one draw of the vectors."""
    model, likelihood = reg.model_, reg.likelihood_
    model.train()
    likelihood.train()
    params = [p for p in [*model.parameters(), *likelihood.parameters()] if p.requires_grad]
    for p in params:
        p.grad = None
    vectors = variational_word_vectors(model.covar_module)
    with exact_numerics(), contextlib.ExitStack() as stack:
        for v in vectors:
            stack.enter_context(v.one_sample(torch.Generator().manual_seed(0)))
        stack.enter_context(shared_evaluation(model))
        terms = elbo()
    sum(terms).backward()
    return [t.detach() for t in terms], [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in params]


@pytest.mark.parametrize("kernel", ["default", "map"])
@pytest.mark.parametrize("batch_size", [16, 6])  # more documents than inducing ones (gpytorch's fused update), fewer
def test_the_step_elbo_by_hand_is_gpytorchs_with_its_gradients(kernel, batch_size):
    """The regressor's step computes the whitened SVGP ELBO itself (``whitened_gaussian_elbo``): its
    terms (expected log-likelihood, KL, log prior) and the gradients of every parameter equal gpytorch's
    ``VariationalELBO`` on the same model, batch and draw of the word vectors, to 1e-10 in float64."""
    from lvgp.models.inducing import whitened_gaussian_elbo

    spec = None if kernel == "default" else LDKSpec(latent_dim=2)
    reg, x, y = _fitted_for_the_elbo(spec, batch_size)
    mll = gpytorch.mlls.VariationalELBO(reg.likelihood_, reg.model_, num_data=60, combine_terms=False)
    reference, reference_grads = _terms_and_gradients(reg, lambda: mll(reg.model_(x), y)[:3])
    terms, grads = _terms_and_gradients(reg, lambda: whitened_gaussian_elbo(mll, x, y)[:3])
    assert len(terms) == 3
    for mine, theirs in zip(terms, reference):
        assert float(mine) == pytest.approx(float(theirs), rel=1e-10, abs=1e-12)
    assert any(g.abs().max() > 0 for g in grads)
    for mine, theirs in zip(grads, reference_grads):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-10 * float(theirs.abs().max()) + 1e-300)
    # combined (the added loss terms of variational vectors subtracted, as gpytorch does), as the regressor
    # takes it for a kernel without variational vectors
    combined = gpytorch.mlls.VariationalELBO(reg.likelihood_, reg.model_, num_data=60)
    (reference,), reference_grads = _terms_and_gradients(reg, lambda: [combined(reg.model_(x), y)])
    (mine,), grads = _terms_and_gradients(reg, lambda: [whitened_gaussian_elbo(combined, x, y)])
    assert float(mine) == pytest.approx(float(reference), rel=1e-10)
    for mine, theirs in zip(grads, reference_grads):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-10 * float(theirs.abs().max()) + 1e-300)


@pytest.mark.filterwarnings("ignore::lvgp.warnings.UnseenWordsWarning")  # the empty document
@pytest.mark.parametrize("kernel", ["default", "map"])
def test_predictions_by_hand_are_gpytorchs(kernel, monkeypatch):
    """``predict`` takes each draw's marginals from ``gaussian_predictive_marginals`` (the SVGP marginals
    without gpytorch's linear operators): means and standard deviations, with and without the noise, equal
    those of gpytorch's ``likelihood(model(x))`` draw by draw, to 1e-12 in float64, over several blocks
    and an empty document (the prior's path). The first block's factors of ``K_ZZ`` (one a draw) are kept
    between calls: a second call computes none and predicts the same; a changed parameter computes them afresh."""
    import lvgp.models.sparse as sparse_module
    from lvgp.models.inducing import gaussian_predictive_marginals

    spec = None if kernel == "default" else LDKSpec(latent_dim=2)
    reg, x, _ = _fitted_for_the_elbo(spec, 16)
    assert bool(variational_word_vectors(reg.model_.covar_module)) == (kernel == "default")
    texts = list(make_synonym_regression(n=40, random_state=9).texts) + ["zzzz qqqq"]

    def gpytorchs(model, likelihood, x, include_noise=True, factors=None, draw=0):
        f = model(x)
        out = likelihood(f) if include_noise else f
        return out.mean, out.variance

    def both(include_noise):
        with pytest.warns(EmptyDocumentsWarning):
            mine = reg.predict(texts, return_std=True, include_noise=include_noise, block=16)
        with monkeypatch.context() as patch, pytest.warns(EmptyDocumentsWarning):
            patch.setattr(sparse_module, "gaussian_predictive_marginals", gpytorchs)
            theirs = reg.predict(texts, return_std=True, include_noise=include_noise, block=16)
        return mine, theirs

    for include_noise in (True, False):
        (mean, std), (ref_mean, ref_std) = both(include_noise)
        np.testing.assert_allclose(mean, ref_mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(std, ref_std, rtol=1e-12)
        assert np.all(std > 0)
    # K_ZZ's factor of each draw is kept between calls: a call evaluates none while the model is unchanged,
    # and predicts what it did; a changed parameter computes them afresh, as a new estimator would
    from lvgp.models.inducing import PaddedVariationalStrategy

    factor = PaddedVariationalStrategy.inducing_factor
    computed = []
    monkeypatch.setattr(PaddedVariationalStrategy, "inducing_factor", lambda self: computed.append(1) or factor(self))
    draws = reg.predict_samples if kernel == "default" else 1
    with pytest.warns(EmptyDocumentsWarning):
        again = reg.predict(texts, return_std=True, block=16)
    assert computed == []
    np.testing.assert_array_equal(again[0], both(True)[0][0])
    with torch.no_grad():
        reg.model_.covar_module.raw_outputscale.add_(0.3)
    with pytest.warns(EmptyDocumentsWarning):
        moved = reg.predict(texts, return_std=True, block=16)
    assert len(computed) == draws
    (_, _), (ref_mean, ref_std) = both(True)
    np.testing.assert_allclose(moved[0], ref_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(moved[1], ref_std, rtol=1e-12)
    assert not np.allclose(moved[1], again[1])
    # a likelihood other than GaussianLikelihood (or a batched strategy) goes through gpytorch's call as it is
    with torch.no_grad(), exact_numerics():
        other = gpytorch.likelihoods.FixedNoiseGaussianLikelihood(torch.full((len(x),), 0.1, dtype=torch.float64))
        mean, variance = gaussian_predictive_marginals(reg.model_, other, x)
        ref_mean, ref_variance = gpytorchs(reg.model_, other, x)
    torch.testing.assert_close(mean, ref_mean, rtol=0, atol=0)
    torch.testing.assert_close(variance, ref_variance, rtol=0, atol=0)


def test_the_step_elbo_by_hand_starts_q_as_gpytorch_does_and_defers_what_it_does_not_write_out():
    """The first call initializes q(v) as gpytorch's first call does (its draw from torch's generator);
    a likelihood other than the Gaussian goes through gpytorch's ELBO as it is."""
    import copy

    from lvgp.models.inducing import whitened_gaussian_elbo

    reg, x, y = _fitted_for_the_elbo(LDKSpec(latent_dim=2), 16)
    reg.model_.variational_strategy.variational_params_initialized.fill_(0)
    other = copy.deepcopy(reg.model_)
    values = []
    for model, elbo in ((reg.model_, whitened_gaussian_elbo), (other, lambda mll, x, y: mll(mll.model(x), y))):
        mll = gpytorch.mlls.VariationalELBO(reg.likelihood_, model, num_data=60)
        with exact_numerics():
            torch.manual_seed(3)
            values.append(float(elbo(mll, x, y)))
        assert bool(model.variational_strategy.variational_params_initialized)
    assert values[0] == pytest.approx(values[1], rel=1e-10)
    torch.testing.assert_close(
        reg.model_.variational_strategy._variational_distribution.variational_mean,
        other.variational_strategy._variational_distribution.variational_mean,
        rtol=0,
        atol=0,
    )
    student = gpytorch.likelihoods.StudentTLikelihood().double()
    mll = gpytorch.mlls.VariationalELBO(student, reg.model_, num_data=60)
    with exact_numerics():
        torch.manual_seed(0)
        expected = float(mll(reg.model_(x), y))
        torch.manual_seed(0)
        assert float(whitened_gaussian_elbo(mll, x, y)) == expected


def test_the_steps_kernel_blocks_at_once_are_the_lazy_ones():
    """``training_blocks``: the one Gram of the inducing documents and the batch (a GPU's way) gives the
    lazy blocks K_ZX, K_ZZ and diag K_XX (a CPU's way) up to rounding."""
    from lvgp.models.inducing import training_blocks

    reg, x, _ = _fitted_for_the_elbo(LDKSpec(latent_dim=2), 16)
    z, x = pad_to_common_width(reg.model_.variational_strategy.inducing_points, x)
    kernel = reg.model_.covar_module
    with torch.no_grad():
        lazy, at_once = training_blocks(kernel, z, x, at_once=False), training_blocks(kernel, z, x, at_once=True)
    assert [tuple(b.shape) for b in lazy] == [(8, 16), (8, 8), (16,)]
    for a, b in zip(lazy, at_once):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_the_step_reads_the_strategys_flags_once_and_finds_the_inducing_documents_by_identity():
    """Host reads (a wait on a GPU): the variational strategy's two flags are read once and then only
    where they were written; the inducing documents, padded once, reach the kernel as one tensor, whose
    document set is found by identity, not by comparing values (``torch.equal``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from lvgp.models.inducing import whitened_gaussian_elbo

    class Reads(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.counts = {"equal": 0, "item": 0}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = {torch.ops.aten.equal.default: "equal", torch.ops.aten._local_scalar_dense.default: "item"}
            if func in name:
                self.counts[name[func]] += 1
            return func(*args, **(kwargs or {}))

    reg, x, y = _fitted_for_the_elbo(LDKSpec(latent_dim=2), 16)
    strategy = reg.model_.variational_strategy
    mll = gpytorch.mlls.VariationalELBO(reg.likelihood_, reg.model_, num_data=60)
    seen = []
    for forget in (False, True, False):  # the batch's sets built by the first call; the flags forgotten
        if forget:
            strategy.__dict__.pop("_flags_seen")
        with exact_numerics(), torch.no_grad(), Reads() as reads:
            whitened_gaussian_elbo(mll, x, y)
        seen.append(reads.counts)
    assert seen[2]["item"] == seen[1]["item"] - 2
    assert seen[1]["equal"] == seen[2]["equal"] == 0
    padded = strategy.__dict__["_padded_inducing"][2]
    whitened_gaussian_elbo(mll, x, y)
    assert strategy.__dict__["_padded_inducing"][2] is padded
    strategy.variational_params_initialized.fill_(0)  # written: read again, and q(v) started anew
    with exact_numerics(), torch.no_grad():
        whitened_gaussian_elbo(mll, x, y)
    assert bool(strategy.variational_params_initialized)
