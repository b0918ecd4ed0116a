"""LDK with random Fourier features / Nystrom landmarks: unbiasedness and convergence of the
approximation to the exact LDK as D grows, exactness of Nystrom with every word as a
landmark, gradients, and use inside a gpytorch model."""

from __future__ import annotations

import warnings

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from torch.func import functional_call

from lvgp import LBFGS, PAD, Adam, LatentDistributionKernel
from lvgp.kernels import LDKSpec, RandomFeatureLDK, gram_approximation_error
from lvgp.warnings import PerformanceWarning

V, Q = 30, 2


def docs(n=25, width=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, V, (n, width), generator=g)
    x[torch.arange(width)[None, :] >= torch.randint(1, width + 1, (n,), generator=g)[:, None]] = PAD
    return x


def pair(level2="linear", **kwargs):
    exact = LatentDistributionKernel(V, Q, "rbf", level2, gamma=0.8, seed=0).double()
    approx = RandomFeatureLDK(V, Q, "rbf", level2, gamma=0.8, seed=0, **kwargs).double()
    approx.load_state_dict(exact.state_dict(), strict=False)
    return exact, approx


@pytest.mark.parametrize("level2", ["linear", "rbf", "poly"])
def test_rff_error_shrinks_like_one_over_sqrt_d(level2):
    x = docs()
    errors = [
        gram_approximation_error(*pair(level2, features="rff", num_features=d, feature_seed=1), x)
        for d in (64, 1024, 16384)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03


def test_rff_is_unbiased():
    x = docs(8)
    exact, _ = pair()
    mean = sum(pair(features="rff", num_features=64, feature_seed=s)[1](x).to_dense() for s in range(300)) / 300
    k = exact(x).to_dense().detach()
    assert float((mean.detach() - k).abs().max()) < 0.02


def test_nystrom_with_every_word_as_landmark_is_exact():
    x = docs()
    exact, approx = pair("rbf", features="nystrom", num_features=V, jitter=1e-12)
    assert gram_approximation_error(exact, approx, x) < 1e-6
    exact, approx = pair(features="nystrom", num_features=10)
    assert 0 < gram_approximation_error(exact, approx, x) < 1


def test_nystrom_document_features_pool_before_the_solve():
    """The Nystrom mean embeddings are solved for after pooling the landmark-kernel columns over
    each document (m^2 n); they equal the documents' weighted sums of the words' own Nystrom
    features (m^2 V_d, the formula), in value and gradient."""
    from lvgp.kernels import mean_embedding as me

    x = docs(n=12)
    _, approx = pair(features="nystrom", num_features=8)
    latent = approx.latent.detach().clone().requires_grad_(True)
    d = approx._prepare(x, latent.dtype)
    words, _ = d.distinct()
    by_word = me.bag_product(d.bags(), approx.word_features_map(latent.index_select(-2, words), latent))
    pooled = approx._features(d, latent)
    torch.testing.assert_close(pooled, by_word, rtol=1e-10, atol=1e-12)
    w = torch.randn(pooled.shape, dtype=pooled.dtype, generator=torch.Generator().manual_seed(1))
    (g_pooled,) = torch.autograd.grad((pooled * w).sum(), latent)
    (g_word,) = torch.autograd.grad((by_word * w).sum(), latent)
    torch.testing.assert_close(g_pooled, g_word, rtol=1e-9, atol=1e-12)


def test_rbf_pooled_blocks_equal_the_whole_gram_in_value_and_gradient(monkeypatch):
    """rbf_pooled (the Nystrom landmark columns pooled block by block, never the whole m x V Gram)
    against C @ rbf_gram(...)^T, across many blocks, with words in no document and an empty row;
    its hand-written backward against finite differences (gradcheck), gamma included."""
    from lvgp.kernels import embedding

    monkeypatch.setattr(embedding, "_POOLED_BLOCK", 16)  # blocks of 16 // 5 -> 16 columns: 4 blocks
    g = torch.Generator().manual_seed(3)
    xa, xb = torch.randn(5, 2, generator=g, dtype=torch.float64), torch.randn(57, 2, generator=g, dtype=torch.float64)
    gamma = torch.tensor(0.7, dtype=torch.float64)
    rows = torch.tensor([0, 0, 0, 2, 2, 3, 3, 3, 3, 1])  # row 4 empty
    cols = torch.tensor([0, 17, 56, 3, 40, 17, 18, 33, 50, 2])  # most columns in no row
    weights = torch.rand(len(rows), generator=g, dtype=torch.float64)
    for n in (5, 40):  # more documents than a block has columns too
        dense = torch.zeros(n, 57, dtype=torch.float64).index_put_((rows, cols), weights, accumulate=True)
        expected = dense @ embedding.rbf_gram(xa, xb, gamma).mT
        pooled = embedding.rbf_pooled(xa, xb, gamma, rows, cols, weights, n)
        torch.testing.assert_close(pooled, expected, rtol=1e-13, atol=1e-300)
        torch.autograd.gradcheck(
            lambda a, b, c, n=n: embedding.rbf_pooled(a, b, c, rows, cols, weights, n),
            tuple(t.clone().requires_grad_() for t in (xa, xb, gamma)),
        )


def test_rbf_pooled_takes_exp_alone_only_where_no_exponent_nears_the_cut_off(monkeypatch):
    """A block is its product and one exp where every exponent is bounded far above exp's subnormal
    range (through the landmarks' centre), else the clamped exp with its cut-off to 0. Both equal
    C @ rbf_gram(...)^T in value and gradient; far vectors take the cut-off (entries exactly 0)."""
    from lvgp.kernels import embedding

    monkeypatch.setattr(embedding, "_POOLED_BLOCK", 16)
    g = torch.Generator().manual_seed(4)
    rows = torch.randint(0, 6, (60,), generator=g)
    cols = torch.randint(0, 40, (60,), generator=g)
    weights = torch.rand(60, generator=g, dtype=torch.float64)
    dense = torch.zeros(6, 40, dtype=torch.float64).index_put_((rows, cols), weights, accumulate=True)
    for spread, bounded in ((1.0, True), (60.0, False)):
        xa = spread * torch.randn(5, 2, generator=g, dtype=torch.float64)
        xb = spread * torch.randn(40, 2, generator=g, dtype=torch.float64)
        gamma = torch.tensor(0.7, dtype=torch.float64)
        assert embedding._exponents_bounded(xa, xb, gamma) is bounded
        gram = embedding.rbf_gram(xa, xb, gamma)
        if not bounded:  # some exponents below -707: the cut-off's zeros
            assert (gram == 0).any()
        pooled = embedding.rbf_pooled(xa, xb, gamma, rows, cols, weights, 6)
        # far apart, the product's exponents lose |a|^2 gamma ulps to cancellation (1e-13 relative here)
        torch.testing.assert_close(pooled, dense @ gram.mT, rtol=1e-13 if bounded else 1e-11, atol=1e-300)
        torch.autograd.gradcheck(
            lambda a, b, c: embedding.rbf_pooled(a, b, c, rows, cols, weights, 6),
            tuple(t.clone().requires_grad_() for t in (xa, xb, gamma)),
        )


def test_rbf_pooled_takes_one_block_off_the_cpu(monkeypatch):
    """Issue 60: blocks in cache are a CPU's; on a GPU each block is a dozen launches forward and a
    dozen backward, so there the whole Gram is one block. One block (what a GPU runs) equals the
    CPU's blocks in value and gradient."""
    from lvgp.kernels import embedding

    assert embedding.pooled_block_columns(256, 24_000, torch.device("cpu")) == embedding._POOLED_BLOCK // 256
    assert embedding.pooled_block_columns(256, 24_000, torch.device("cuda")) == 24_000
    assert embedding.pooled_block_columns(256, 3, torch.device("cuda")) == 16
    g = torch.Generator().manual_seed(5)
    xa, xb = torch.randn(6, 3, generator=g, dtype=torch.float64), torch.randn(300, 3, generator=g, dtype=torch.float64)
    gamma = torch.tensor(0.4, dtype=torch.float64)
    rows = torch.randint(0, 8, (200,), generator=g)
    cols = torch.randint(0, 300, (200,), generator=g)
    weights = torch.rand(200, generator=g, dtype=torch.float64)

    def value_and_gradients(block_entries):
        monkeypatch.setattr(embedding, "_POOLED_BLOCK", block_entries)
        a, b, c = (t.clone().requires_grad_() for t in (xa, xb, gamma))
        pooled = embedding.rbf_pooled(a, b, c, rows, cols, weights, 8)
        pooled.pow(2).sum().backward()
        return pooled.detach(), a.grad, b.grad, c.grad

    blocks = value_and_gradients(16 * 6)  # 16 columns a block: 19 blocks
    # one block, as off the CPU (benchmarks/large_n.py --one-block: 2**62 entries; a plan padded its
    # transposed blocks' row pointers to the block's columns, 2**62 // 6 of them, before it took at
    # most m2)
    one = value_and_gradients(2**62)
    for x, y in zip(blocks, one):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-14)


def test_gradients_flow_to_latent_vectors_and_gamma():
    x = docs(6)
    _, approx = pair(features="rff", num_features=32)
    torch.autograd.gradcheck(
        lambda lat: _gram_with(approx, lat, x), (approx.word_vectors.raw_latent.detach().clone().requires_grad_(),)
    )
    approx(x).to_dense().sum().backward()
    assert approx.embedding.raw_gamma.grad is not None and torch.isfinite(approx.word_vectors.raw_latent.grad).all()


def _gram_with(kernel, latent, x):
    """The Gram with ``latent`` substituted, evaluated eagerly (see tests/test_ldk.py)."""
    with gpytorch.settings.lazily_evaluate_kernels(False):
        return functional_call(kernel, {"word_vectors.raw_latent": latent}, (x,)).to_dense()


def test_bad_arguments():
    with pytest.raises(ValueError, match="RBF"):
        RandomFeatureLDK(V, Q, "poly", features="rff")
    with pytest.raises(ValueError, match="features"):
        RandomFeatureLDK(V, Q, features="orf")
    with pytest.raises(ValueError, match="landmarks exceed"):
        RandomFeatureLDK(V, Q, features="nystrom", num_features=V + 1)
    with pytest.raises(ValueError, match="unbatched"):
        RandomFeatureLDK(V, Q, batch_shape=torch.Size([2]))
    assert np.isfinite(RandomFeatureLDK(V, Q, num_features=8)(docs()).to_dense().detach().numpy()).all()


@pytest.mark.parametrize("approximation", ["auto", "rff"])
def test_regressor_takes_the_approximation_of_its_spec(tmp_path, approximation):
    """LDKSpec's one "auto" rule: Nystrom (frequent words as landmarks) beyond max_exact_words
    distinct training words; "rff" asked for by name. Either reloads bit-identically."""
    from lvgp import GPLVSMRegressor
    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=80, random_state=0)
    spec = LDKSpec(num_features=16, max_exact_words=10, approximation=approximation)
    reg = GPLVSMRegressor(spec, optimizer=LBFGS(max_iter=5), random_state=0).fit(corpus.texts[:60], corpus.y[:60])
    assert reg.kernel_kind_ == ("nystrom" if approximation == "auto" else "rff")
    assert isinstance(reg.model_.covar_module.base_kernel, RandomFeatureLDK)
    pred = reg.predict(corpus.texts[60:])
    assert np.isfinite(pred).all()
    reg.save(tmp_path / "approx.pt")
    again = GPLVSMRegressor.load(tmp_path / "approx.pt")
    assert np.array_equal(again.predict(corpus.texts[60:]), pred)
    exact = GPLVSMRegressor(optimizer=Adam(max_iter=5), random_state=0).fit(corpus.texts[:60], corpus.y[:60])
    assert not isinstance(exact.model_.covar_module.base_kernel, RandomFeatureLDK)


def test_sparse_regressor_applies_the_auto_rule_to_a_step(tmp_path):
    """The sparse regressor's "auto" is the spec's rule on the words of one step -- the inducing
    documents and a batch -- not on the corpus's (its step costs the Gram of those; it was the exact
    LDK whatever the vocabulary): Nystrom beyond max_exact_words of them, exact at or below (though
    the corpus has more); the Nystrom fit predicts with finite variances and reloads bit-identically."""
    from lvgp import MiniBatch, SparseGPLVSMRegressor
    from lvgp.bow.padded import pad_to_common_width
    from lvgp.datasets import make_synonym_regression
    from lvgp.models.inducing import step_approximation

    corpus = make_synonym_regression(n=80, random_state=0)
    texts, y = corpus.texts[:60], corpus.y[:60]

    def fit(**spec_changes):
        spec = LDKSpec.variational_bow(num_features=24, **spec_changes)
        options = MiniBatch(max_steps=3, batch_size=4)
        return SparseGPLVSMRegressor(spec, num_inducing=2, optimizer=options, random_state=0).fit(texts, y)

    reg = fit(max_exact_words=10)
    assert reg.kernel_kind_ == "nystrom"
    # the file holds the inducing documents alone, with fewer distinct words than the landmarks
    inducing = reg.model_.variational_strategy.inducing_points
    assert torch.unique(inducing[inducing != PAD]).numel() < len(reg.model_.covar_module.base_kernel.landmarks) == 24
    mean, std = reg.predict(corpus.texts[60:], return_std=True)
    assert np.isfinite(mean).all() and (std > 0).all()
    reg.save(tmp_path / "sparse.pt")
    again = SparseGPLVSMRegressor.load(tmp_path / "sparse.pt")
    assert np.array_equal(again.predict(corpus.texts[60:]), mean)

    # the words of the step the rule counts, and the corpus's, around max_exact_words
    x = reg.encoder_.transform(texts)
    seed = 5
    rows = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))[:4]
    step = torch.cat(pad_to_common_width(inducing, x[rows]))
    step_words = torch.unique(step[step != PAD]).numel()
    corpus_words = torch.unique(x[x != PAD]).numel()
    assert step_words < corpus_words
    spec = LDKSpec.variational_bow(max_exact_words=step_words)
    assert step_approximation(spec, x, inducing, 4, seed) == "exact"
    assert spec.approximation_for(x) == "nystrom"  # the corpus rule would have taken Nystrom
    assert step_approximation(spec.replace(max_exact_words=step_words - 1), x, inducing, 4, seed) == "nystrom"
    assert fit().kernel_kind_ == "exact"  # the default 2,048 words


def lvgp_vocabulary(texts):
    """``texts`` encoded with a vocabulary fitted on them (what the estimators' default builds)."""
    from lvgp import Vocabulary

    return Vocabulary().fit(texts).encode(texts)


def test_variational_classifier_applies_the_auto_rule_to_a_step():
    """The variational GP classifier decides "auto" as the sparse regressor does: on a step's words
    with mini-batches (exact where a step holds at most max_exact_words), on the training documents'
    with its default full batch (Nystrom where the corpus holds more)."""
    from lvgp import LDKGPClassifier, MiniBatch
    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=80, random_state=0)
    texts, labels = corpus.texts[:60], (np.asarray(corpus.y[:60]) > 0).astype(int)

    def kind(batch_size, max_exact_words):
        spec = LDKSpec(num_features=16, max_exact_words=max_exact_words)
        options = MiniBatch(batch_size=batch_size, max_epochs=1)
        clf = LDKGPClassifier(spec, inference="variational", num_inducing=2, optimizer=options, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one epoch: the budget ends the fit
            return clf.fit(texts, labels).kernel_kind_

    x = lvgp_vocabulary(texts)
    corpus_words = torch.unique(x[x != PAD]).numel()
    assert kind(None, corpus_words - 1) == "nystrom"  # full batch: the corpus's words
    assert kind(None, corpus_words) == "exact"
    assert kind(2, corpus_words - 1) == "exact"  # two inducing documents and two more: fewer words


def test_a_sparse_file_of_the_exact_auto_rule_loads_exact(tmp_path):
    """A file written when the sparse regressor's "auto" meant the exact LDK (whatever the vocabulary)
    loads as the exact model it holds, not as the Nystrom one today's rule would build."""
    from lvgp import MiniBatch, SparseGPLVSMRegressor
    from lvgp.datasets import make_synonym_regression

    corpus = make_synonym_regression(n=80, random_state=0)
    spec = LDKSpec.variational_bow(max_exact_words=10, approximation="exact")
    options = MiniBatch(max_steps=3, batch_size=16)
    reg = SparseGPLVSMRegressor(spec, num_inducing=2, optimizer=options, random_state=0)
    with pytest.warns(Warning):  # the step budget ends the fit
        reg.fit(corpus.texts[:60], corpus.y[:60])
    reg.save(tmp_path / "exact.pt")
    payload = torch.load(tmp_path / "exact.pt", weights_only=True)
    (tag,) = payload["params"]["kernel"]
    payload["params"]["kernel"][tag]["approximation"] = "auto"  # as the old files say
    torch.save(payload, tmp_path / "old.pt")
    again = SparseGPLVSMRegressor.load(tmp_path / "old.pt")
    assert again.kernel_kind_ == "exact" and again.kernel.approximation == "auto"
    assert np.array_equal(again.predict(corpus.texts[60:]), reg.predict(corpus.texts[60:]))


def test_frequent_words_are_the_words_in_most_documents_ties_by_id():
    """Nystrom's landmarks: the m words in the most documents (a word repeated in a document counts
    once; ties: the smaller id), against a loop over the documents."""
    from lvgp.kernels.random_features import frequent_words

    rng = np.random.default_rng(0)
    for _ in range(50):
        n, width, vocab, m = (
            int(v) for v in (rng.integers(1, 30), rng.integers(1, 12), rng.integers(1, 40), rng.integers(1, 50))
        )
        x = torch.from_numpy(rng.integers(-1, vocab, size=(n, width)))
        df: dict[int, int] = {}
        for row in x.tolist():
            for w in set(row) - {PAD}:
                df[w] = df.get(w, 0) + 1
        expected = sorted(sorted(df, key=lambda w: (-df[w], w))[:m])
        assert frequent_words(x, m).tolist() == expected
    assert frequent_words(torch.full((3, 4), PAD), 5).numel() == 0


def test_the_auto_rule_counts_the_distinct_training_words():
    """approximation="auto": Nystrom above max_exact_words distinct words (counted from document
    frequencies, without a copy of every id), against torch.unique of the ids."""
    rng = np.random.default_rng(1)
    for _ in range(50):
        n, width, vocab, most = (
            int(v) for v in (rng.integers(1, 40), rng.integers(1, 10), rng.integers(1, 60), rng.integers(0, 30))
        )
        x = torch.from_numpy(rng.integers(-1, vocab, size=(n, width)))
        expected = "nystrom" if int(torch.unique(x[x != PAD]).numel()) > most else "exact"
        assert LDKSpec(max_exact_words=most).approximation_for(x) == expected
    assert LDKSpec(max_exact_words=0).approximation_for(torch.full((2, 3), PAD)) == "exact"


def test_a_build_counts_the_documents_per_word_once(monkeypatch):
    """LDKSpec.build counts the training documents per word once for the auto rule, the idf weights
    and the Nystrom landmarks (each a pass over the corpus), and gets what each counts alone."""
    import lvgp.kernels.spec as spec_module
    from lvgp.bow.padded import document_frequencies
    from lvgp.bow.weighting import idf_weights
    from lvgp.kernels.random_features import frequent_words

    x = torch.from_numpy(np.random.default_rng(2).integers(-1, 30, size=(40, 8)))
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return document_frequencies(*args, **kwargs)

    monkeypatch.setattr(spec_module, "document_frequencies", counted)
    spec = LDKSpec(max_exact_words=3, num_features=5, word_weighting="idf")
    kernel = spec.build(32, x)
    assert len(calls) == 1 and isinstance(kernel, RandomFeatureLDK)
    assert torch.equal(kernel.landmarks, frequent_words(x, 5))
    alone = RandomFeatureLDK(32, 2, features="nystrom", landmarks=frequent_words(x, 5), word_weights=idf_weights(x, 32))
    torch.testing.assert_close(kernel.word_weights, alone.word_weights, rtol=0, atol=0)


def _pooled_value_and_gradients(rows, cols, weights, n, *tensors):
    from lvgp.kernels import embedding

    a, b, c = (t.clone().requires_grad_() for t in tensors)
    pooled = embedding.rbf_pooled(a, b, c, rows, cols, weights, n)
    (pooled.pow(2).sum() + pooled.sum()).backward()
    return pooled.detach(), a.grad, b.grad, c.grad


def _pooled_inputs():
    g = torch.Generator().manual_seed(11)
    xa, xb = torch.randn(6, 2, generator=g, dtype=torch.float64), torch.randn(70, 2, generator=g, dtype=torch.float64)
    xb[-1] = 40.0  # a word whose Gram entries fall below the cut-off (set to 0, not subnormal)
    gamma = torch.tensor(0.9, dtype=torch.float64)
    rows = torch.randint(0, 5, (60,), generator=g)
    cols = torch.randint(0, 70, (60,), generator=g)
    cols[0] = 69
    weights = torch.rand(60, generator=g, dtype=torch.float64)
    return (rows, cols, weights, 5), (xa, xb, gamma)


def test_compiled_blocks_equal_the_eager_blocks(monkeypatch):
    """Issue 60: inside compiled_blocks() the blocks of rbf_pooled's Gram come from torch.compile's
    fused loop; value and gradients (gamma's included) equal the eager arithmetic's to rounding, over
    several blocks of two widths (the last block narrower: a second compiled shape)."""
    from lvgp.kernels import embedding

    monkeypatch.setattr(embedding, "_POOLED_BLOCK", 96)  # 96 // 6 = 16 columns a block: 5 blocks, the last of 6
    monkeypatch.setitem(embedding._COMPILED, "failed", None)
    sparse, dense = _pooled_inputs()
    eager = _pooled_value_and_gradients(*sparse, *dense)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)  # compiling must work here (a C++ compiler is at hand)
        with embedding.compiled_blocks():
            compiled = _pooled_value_and_gradients(*sparse, *dense)
    assert embedding._COMPILED["failed"] is None and not embedding._COMPILED["enabled"]
    for got, expected in zip(compiled, eager):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-300)


def test_compiled_blocks_fall_back_to_eager_with_a_warning(monkeypatch):
    """Where torch.compile fails (no C++ compiler, an unsupported platform), compiled_blocks warns once
    and computes eagerly: the same values as without it, and no second attempt."""
    from lvgp.kernels import embedding

    calls = []

    def broken(*args):
        calls.append(1)
        raise RuntimeError("no C++ compiler found")

    monkeypatch.setitem(embedding._COMPILED, "block", broken)
    monkeypatch.setitem(embedding._COMPILED, "failed", None)
    sparse, dense = _pooled_inputs()
    eager = _pooled_value_and_gradients(*sparse, *dense)
    with pytest.warns(PerformanceWarning, match="no C\\+\\+ compiler found"):
        with embedding.compiled_blocks():
            fallen_back = _pooled_value_and_gradients(*sparse, *dense)
    assert len(calls) == 1 and "RuntimeError" in embedding._COMPILED["failed"]
    for got, expected in zip(fallen_back, eager):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("model", ["sparse", "variational-gpc"])
def test_a_compiled_fit_takes_the_eager_fits_steps(monkeypatch, model):
    """Issue 60: ``MiniBatch(compile=True)`` (the Nystrom blocks from torch.compile) takes the steps of
    the eager fit: the step losses agree to 1e-10 (relative) over several steps of many blocks, and so
    do the fitted predictions; ``compile`` is refused by an estimator that has no such step."""
    from lvgp import LDKGPClassifier, LDKMatcher, MiniBatch, SparseGPLVSMRegressor
    from lvgp.datasets import make_synonym_regression
    from lvgp.kernels import embedding

    monkeypatch.setattr(embedding, "_POOLED_BLOCK", 48)  # 24 landmarks: blocks of 16 words
    monkeypatch.setitem(embedding._COMPILED, "failed", None)
    corpus = make_synonym_regression(n=80, random_state=0)
    texts, y = corpus.texts[:60], corpus.y[:60]
    spec = LDKSpec.variational_bow(num_features=24, approximation="nystrom")

    def fit(compile):
        if model == "sparse":
            options = MiniBatch(max_steps=4, batch_size=16, compile=compile)
            est = SparseGPLVSMRegressor(spec, num_inducing=8, optimizer=options, random_state=0)
            return est.fit(texts, y), est.step_losses_
        options = MiniBatch(max_epochs=3, batch_size=16, compile=compile)
        labels = (np.asarray(y) > np.median(y)).astype(int)
        kernel = LDKSpec(rho=0.1, num_features=24, approximation="nystrom")
        est = LDKGPClassifier(kernel, inference="variational", num_inducing=8, optimizer=options, random_state=0)
        return est.fit(texts, labels), est.loss_curve_

    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        eager, eager_losses = fit(False)
        compiled, compiled_losses = fit(True)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-10)
    predict = (
        (lambda e: e.predict(corpus.texts[60:]))
        if model == "sparse"
        else (lambda e: e.predict_proba(corpus.texts[60:]))
    )
    np.testing.assert_allclose(predict(compiled), predict(eager), rtol=1e-9)
    with pytest.raises(ValueError, match="compile"):
        LDKMatcher(optimizer=MiniBatch(compile=True)).fit(texts[:10], texts[10:20])


def test_kept_blocks_give_the_same_values_and_survive_a_second_backward(monkeypatch):
    """Issue 60: inside kept_blocks() the forward keeps its Gram's blocks for the backward (in buffers
    the next call reuses): the same value and gradients to the last bit as forming them again; a
    second backward of the same graph (retain_graph) forms them again, since the first gave its
    buffer back; outside the block no buffer is held."""
    from lvgp.kernels import embedding

    monkeypatch.setattr(embedding, "_POOLED_BLOCK", 96)
    sparse, dense = _pooled_inputs()
    formed_again = _pooled_value_and_gradients(*sparse, *dense)
    with embedding.kept_blocks():
        for _ in range(2):  # the second call reuses the first call's buffer
            kept = _pooled_value_and_gradients(*sparse, *dense)
            assert len(embedding._KEPT["spare"]) == 1
            for got, expected in zip(kept, formed_again):
                torch.testing.assert_close(got, expected, rtol=0, atol=0)
        a, b, c = (t.clone().requires_grad_() for t in dense)
        pooled = embedding.rbf_pooled(a, b, c, *sparse)
        first = torch.autograd.grad(pooled.sum(), (a, b, c), retain_graph=True)  # gives its buffer back
        other = embedding.rbf_pooled(a, b * 1.5, c, *sparse)  # takes that buffer and writes its own blocks
        second = torch.autograd.grad(pooled.sum(), (a, b, c))  # forms its blocks again
        assert other.requires_grad
        for x, y in zip(first, second):
            torch.testing.assert_close(x, y, rtol=1e-14, atol=0)
    assert embedding._KEPT["spare"] == [] and not embedding._KEPT["enabled"]
