"""Cross-domain matching with LDK (thesis ch. 6): gradients of eq. 6.8 against finite
differences and against a loop implementation of eqs. 6.4 and 6.8, a synthetic bilingual
corpus generated through a word-to-word dictionary, the CCA baselines, bad input, and the
``lvgp compare matching`` study."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
import torch

from lvgp import LBFGS, MiniBatch
from lvgp.baselines.cca import KernelCCAMatcher
from lvgp.experiments.matching import family_key
from lvgp.kernels import LDKSpec
from lvgp.models.matching import LDKMatcher, precision_at
from lvgp.warnings import EmptyDocumentsWarning


def bilingual_corpus(n, seed=0, vocab=40, topics=6, length=12):
    """Source and target documents generated from the same word sequence through a fixed
    dictionary (source word v <-> target word v)."""
    rng = np.random.default_rng(1234)  # the dictionary and topics are shared by every call
    src_words = ["".join(rng.choice(list("bcdfghklm"), 5)) for _ in range(vocab)]
    tgt_words = ["".join(rng.choice(list("nprstvwxz"), 5)) for _ in range(vocab)]
    topic_words = rng.dirichlet(np.full(vocab, 0.1), size=topics)
    rng = np.random.default_rng(seed)
    source, target = [], []
    for _ in range(n):
        theta = rng.dirichlet(np.full(topics, 0.3))
        words = [rng.choice(vocab, p=topic_words[rng.choice(topics, p=theta)]) for _ in range(length)]
        source.append(" ".join(src_words[w] for w in words))
        target.append(" ".join(tgt_words[w] for w in words))
    return source, target


def loop_objective(matcher: LDKMatcher, source, target) -> float:
    """Eqs. 6.3-6.8 by explicit loops over documents and word pairs."""
    xs, xt = matcher._encode(source, target)
    latent = matcher.kernel_.latent.detach().numpy()
    gamma = float(matcher.kernel_.gamma)

    def k(u, v):
        return math.exp(-0.5 * gamma * float(((u - v) ** 2).sum()))

    def mean_inner(a, b):
        a, b = [w for w in a.tolist() if w >= 0], [w for w in b.tolist() if w >= 0]
        return sum(k(latent[f], latent[g]) for f in a for g in b) / (len(a) * len(b))

    n = len(source)
    d = np.array(
        [
            [mean_inner(xs[i], xs[i]) + mean_inner(xt[j], xt[j]) - 2 * mean_inner(xs[i], xt[j]) for j in range(n)]
            for i in range(n)
        ]
    )
    nll = sum(d[i, i] + math.log(np.exp(-d[i]).sum()) for i in range(n))
    return nll + 0.5 * matcher.kernel.rho * float((latent**2).sum())


def test_objective_matches_loops_and_finite_differences():
    source, target = bilingual_corpus(6, seed=1, vocab=10, length=4)
    m = LDKMatcher(
        LDKSpec(latent_dim=2, rho=0.1, gamma=0.7),
        optimizer=LBFGS(max_iter=1),
        init="random",
        random_state=0,
        dtype="float64",
    ).fit(source, target)
    xs, xt = m._encode(source, target)
    assert abs(m._loss(xs, xt).item() - loop_objective(m, source, target)) < 1e-9
    raw = m.kernel_.word_vectors.raw_latent
    start = raw.detach().clone()
    grad = torch.autograd.grad(m._loss(xs, xt), raw)[0]

    def loss_at(latent):
        with torch.no_grad():
            raw.copy_(latent)
            return m._loss(xs, xt).item()

    eps = 1e-6
    for index in [(0, 0), (3, 1), (len(start) - 1, 0)]:
        bumped = start.clone()
        bumped[index] += eps
        up = loss_at(bumped)
        bumped[index] -= 2 * eps
        down = loss_at(bumped)
        assert abs((up - down) / (2 * eps) - grad[index].item()) < 1e-6 * max(1.0, abs(grad[index].item()))
    loss_at(start)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_softmax_loss_is_logsumexps_and_its_gradient_the_softmax(dtype):
    """Eq. 6.8's data term in one autograd function: the value of the float64 logsumexp formula to
    the last bit, the gradient delta_ij - softmax_ij in d's dtype (to rounding), and gradcheck."""
    from lvgp.models.matching import _SoftmaxMatchingLoss

    g = torch.Generator().manual_seed(3)
    d = (torch.rand(40, 40, generator=g, dtype=dtype) * 8).requires_grad_()
    reference = (d.double().diagonal() + torch.logsumexp(-d.double(), dim=1)).sum()
    value = _SoftmaxMatchingLoss.apply(d)
    assert value.dtype == torch.float64 and value.item() == reference.item()
    (got,) = torch.autograd.grad(2.5 * value, d)
    (want,) = torch.autograd.grad(2.5 * reference, d)
    assert got.dtype == dtype
    torch.testing.assert_close(got, want, rtol=1e-6 if dtype == torch.float32 else 1e-13, atol=1e-7)
    softmax = torch.softmax(-d.detach().double(), dim=1)
    torch.testing.assert_close(got.double(), 2.5 * (torch.eye(40, dtype=torch.float64) - softmax), rtol=1e-5, atol=1e-6)
    if dtype == torch.float64:
        assert torch.autograd.gradcheck(_SoftmaxMatchingLoss.apply, (d[:12, :12].detach().requires_grad_(),))


def test_float32_matcher_agrees_with_float64():
    """The default float32 arithmetic: the same objective and gradient as float64 at the same
    vectors (to float32's rounding), and a float64 loss (save/load: test_persistence)."""
    source, target = bilingual_corpus(30, seed=4, vocab=25, length=6)
    kernel = LDKSpec(latent_dim=3, rho=0.1, gamma=0.7, level2="cosine", identity_weight=0.3)
    double = LDKMatcher(kernel, optimizer=LBFGS(max_iter=3), init="random", random_state=0, dtype="float64").fit(
        source, target
    )
    single = LDKMatcher(kernel, optimizer=LBFGS(max_iter=3), init="random", random_state=0).fit(source, target)
    assert single.dtype == "float32" and single.kernel_.word_vectors.raw_latent.dtype == torch.float32
    with torch.no_grad():
        single.kernel_.word_vectors.raw_latent.copy_(double.kernel_.word_vectors.raw_latent)
    xs, xt = double._encode(source, target)
    raw64, raw32 = double.kernel_.word_vectors.raw_latent, single.kernel_.word_vectors.raw_latent
    loss64, loss32 = double._loss(xs, xt), single._loss(xs, xt)
    assert loss32.dtype == torch.float64
    assert abs(loss32.item() - loss64.item()) < 1e-5 * abs(loss64.item())
    g64 = torch.autograd.grad(loss64, raw64)[0]
    g32 = torch.autograd.grad(loss32, raw32)[0].double()
    assert (g32 - g64).norm() < 1e-4 * g64.norm()
    d64, d32 = double.distances(source, target), single.distances(source, target)
    assert d32.dtype == np.float32 and np.abs(d32 - d64).max() < 1e-5


def test_synthetic_bilingual_corpus_is_matched_almost_perfectly():
    source, target = bilingual_corpus(200, seed=0)
    test_s, test_t = bilingual_corpus(60, seed=1)
    m = LDKMatcher(LDKSpec(latent_dim=6, rho=0.01, gamma=1.0), optimizer=LBFGS(max_iter=150), random_state=0).fit(
        source, target
    )
    p = precision_at(m.true_target_ranks(test_s, test_t), 10)
    assert p[1] > 0.9 and p[5] > 0.98, p
    ranking = m.rank(test_s[:3], test_t)
    assert ranking.shape == (3, 60) and sorted(ranking[0]) == list(range(60))
    assert m.source_vectors_.shape == (len(m.source_vocabulary_), 6)
    assert m.target_vectors_.shape == (len(m.target_vocabulary_), 6)


def test_minibatch_negatives_train_too():
    source, target = bilingual_corpus(160, seed=2)
    test_s, test_t = bilingual_corpus(40, seed=3)
    m = LDKMatcher(
        LDKSpec(latent_dim=6, rho=0.01), optimizer=MiniBatch(batch_size=40, max_epochs=40, lr=0.05), random_state=0
    ).fit(source, target)
    assert precision_at(m.true_target_ranks(test_s, test_t), 5)[5] > 0.8


def test_cca_baselines_match_the_synthetic_corpus_better_than_chance():
    source, target = bilingual_corpus(200, seed=0)
    test_s, test_t = bilingual_corpus(60, seed=1)
    for kernel in ("linear", "rbf"):
        cca = KernelCCAMatcher(kernel=kernel, n_components=10, reg=0.1).fit(source, target)
        assert np.all(np.diff(cca.correlations_) <= 1e-12) and cca.correlations_[0] <= 1 + 1e-9
        p = precision_at(cca.true_target_ranks(test_s, test_t), 5)
        assert p[5] > 0.5, (kernel, p)  # chance: 5/60


def test_linear_cca_correlations_match_the_primal_solution():
    """With a tiny regularization, dual CCA's first correlation equals the primal one computed
    from whitened covariance matrices (independent reference)."""
    rng = np.random.default_rng(0)
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    source = [" ".join(rng.choice(words, 6)) for _ in range(80)]
    target = [s.replace("alpha", "anna").replace("bravo", "berta") for s in source]
    cca = KernelCCAMatcher(kernel="linear", n_components=2, reg=1e-6).fit(source, target)
    x = cca.source_.train.toarray() - cca.source_.train.toarray().mean(0)
    y = cca.target_.train.toarray() - cca.target_.train.toarray().mean(0)

    def inv_sqrt(c):
        w, v = np.linalg.eigh(c)
        w = np.where(w > 1e-10, w, np.inf)
        return (v / np.sqrt(w)) @ v.T

    m = inv_sqrt(x.T @ x) @ x.T @ y @ inv_sqrt(y.T @ y)
    assert abs(np.linalg.svd(m, compute_uv=False)[0] - cca.correlations_[0]) < 1e-4


def _dual_cca_reference(k, l, reg, components):  # noqa: E741
    """Dual CCA as the formula reads: each R = K(K + kappa I)^-1 from an eigendecomposition, a full
    SVD of R_K R_L, and alpha = (K + kappa I)^-1 a."""
    n = len(k)

    def projection(gram):
        kappa = reg * np.trace(gram) / n
        values, vectors = np.linalg.eigh(gram)
        return kappa, (vectors * (values / (values + kappa))) @ vectors.T

    kappa_k, r_k = projection(k)
    kappa_l, r_l = projection(l)
    a, corr, bt = np.linalg.svd(r_k @ r_l)
    alpha = np.linalg.solve(k + kappa_k * np.eye(n), a[:, :components])
    beta = np.linalg.solve(l + kappa_l * np.eye(n), bt[:components].T)
    return alpha, beta, corr[:components]


@pytest.mark.parametrize("rank", [None, 6])
def test_dual_cca_matches_the_eigendecomposition_and_full_svd(rank):
    """The leading directions (Cholesky factors and the leading eigenvectors of M M^T) against the
    formula through eigendecompositions and a full SVD; with rank-6 features and 10 components the
    4 directions without correlation come from the SVD as before."""
    from lvgp.base.linalg import dual_cca

    rng = np.random.default_rng(0)
    n, components = 120, 10
    x, y = rng.normal(size=(n, rank or 40)), rng.normal(size=(n, rank or 50))
    y[:, :4] += 2 * x[:, :4]  # some correlated directions, well separated from the rest
    x, y = x - x.mean(0), y - y.mean(0)
    k, l = x @ x.T, y @ y.T  # noqa: E741
    alpha, beta, corr = dual_cca(k, l, 0.1, components)
    ref_alpha, ref_beta, ref_corr = _dual_cca_reference(k, l, 0.1, components)
    np.testing.assert_allclose(corr, ref_corr, atol=1e-10)
    assert np.all(np.diff(corr) <= 1e-12)
    # directions up to the sign of each pair (alpha and beta flip together); the uncorrelated
    # directions of the rank-deficient case are any orthonormal completion
    kept = ref_corr > 1e-6
    sign = np.sign((alpha * ref_alpha).sum(0))
    scale = np.abs(ref_alpha).max()
    np.testing.assert_allclose((alpha * sign)[:, kept], ref_alpha[:, kept], atol=1e-8 * scale)
    np.testing.assert_allclose((beta * sign)[:, kept], ref_beta[:, kept], atol=1e-8 * np.abs(ref_beta).max())
    assert np.isfinite(alpha).all() and np.isfinite(beta).all()
    # the signs are fixed (svd_flip): the largest entry of each left singular vector is positive
    u = (k + 0.1 * np.trace(k) / n * np.eye(n)) @ alpha
    assert np.all(u[np.abs(u).argmax(0), np.arange(components)] > 0)


def test_bad_input(tmp_path):
    source, target = bilingual_corpus(10)
    with pytest.raises(ValueError, match="aligned pairs"):
        LDKMatcher().fit(source, target[:5])
    with pytest.raises(ValueError, match="empty"):
        LDKMatcher().fit([], [])
    m = LDKMatcher(optimizer=LBFGS(max_iter=2)).fit(source, target)
    with pytest.raises(ValueError, match="row"):
        m.rank(source[:2] + ["zzzzz qqqqq"], target[:3])  # no known word left
    from lvgp.experiments.cli import main

    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"en": s, "de": t}) + "\n" for s, t in zip(source, target)))
    with pytest.raises(SystemExit) as info:
        main(
            [
                "compare",
                "matching",
                "--pairs",
                str(path),
                "--source",
                "en",
                "--target",
                "fr",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:  # fewer pairs than requested
        main(
            [
                "compare",
                "matching",
                "--pairs",
                str(path),
                "--source",
                "en",
                "--target",
                "de",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert info.value.code == 2


def test_family_key_groups_package_families():
    a = "Game (data files)\n0 A.D. is a free, open-source game of ancient warfare with many units and maps"
    b = "Game (common data files)\n0 A.D. is a free, open-source game of ancient warfare with many units and maps"
    assert family_key(a) == family_key(b) != family_key("Editor\nA small text editor")


def test_compare_matching_cli(tmp_path):
    from lvgp.experiments.cli import main

    source, target = bilingual_corpus(90, seed=5)
    path = tmp_path / "pairs.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        for i, (s, t) in enumerate(zip(source, target)):
            fh.write(json.dumps({"id": str(i), "src": f"doc {i}\n{s}", "tgt": t}) + "\n")
    out = tmp_path / "study"
    argv = [
        "compare",
        "matching",
        "--pairs",
        str(path),
        "--source",
        "src",
        "--target",
        "tgt",
        "--train",
        "50",
        "--dev",
        "15",
        "--test",
        "20",
        "--sets",
        "2",
        "--latent-dims",
        "4",
        "--rhos",
        "0.01",
        "--gammas",
        "1",
        "--cca-components",
        "4",
        "--cca-regs",
        "0.1",
        "--max-iter",
        "30",
        "--min-df",
        "1",
        "--no-dedupe-families",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())
    assert {(r["method"], r["set"]) for r in records} == {
        (m, s) for m in ("ldk", "ldk-tied", "cca", "kcca") for s in (0, 1)
    }
    assert all(len(r["precision_at"]) == 50 and r["precision_at"]["50"] == 1.0 for r in records)
    assert (out / "precision_vs_R.png").stat().st_size > 1000
    assert "retrieved 1" in (out / "table.md").read_text()


def shared_token_corpus(n, seed=0, vocab=40, shared=12, topics=6, length=12, noise=0.0):
    """As :func:`bilingual_corpus`, but the first ``shared`` words are spelled identically in
    both languages (package names, numbers, technical terms), and each target word is replaced
    by a random target word with probability ``noise`` (translations are not word for word)."""
    rng = np.random.default_rng(99)
    src_words = ["".join(rng.choice(list("bcdfghklm"), 5)) for _ in range(vocab)]
    tgt_words = src_words[:shared] + ["".join(rng.choice(list("nprstvwxz"), 5)) for _ in range(vocab - shared)]
    topic_words = rng.dirichlet(np.full(vocab, 0.1), size=topics)
    rng = np.random.default_rng(seed)
    source, target = [], []
    for _ in range(n):
        theta = rng.dirichlet(np.full(topics, 0.3))
        words = [rng.choice(vocab, p=topic_words[rng.choice(topics, p=theta)]) for _ in range(length)]
        source.append(" ".join(src_words[w] for w in words))
        noisy = [rng.integers(vocab) if rng.random() < noise else w for w in words]
        target.append(" ".join(tgt_words[w] for w in noisy))
    return source, target, src_words, tgt_words


def test_identical_tokens_share_one_vector():
    src, tgt, _, _ = shared_token_corpus(60)
    m = LDKMatcher(
        LDKSpec(latent_dim=2, rho=0.1), tie_identical_tokens=True, optimizer=LBFGS(max_iter=5), random_state=0
    ).fit(src, tgt)
    shared = set(m.source_vocabulary_.words) & set(m.target_vocabulary_.words)
    assert m.shared_tokens_ == len(shared) > 0
    assert m.kernel_.num_words == len(m.source_vocabulary_) + len(m.target_vocabulary_) - len(shared)
    for word in shared:
        np.testing.assert_array_equal(
            m.source_vectors_[m.source_vocabulary_.index(word)], m.target_vectors_[m.target_vocabulary_.index(word)]
        )
    untied = LDKMatcher(LDKSpec(latent_dim=2, rho=0.1), optimizer=LBFGS(max_iter=5), random_state=0).fit(src, tgt)
    assert untied.shared_tokens_ == 0
    assert untied.kernel_.num_words == len(untied.source_vocabulary_) + len(untied.target_vocabulary_)


def test_tying_initializations_and_early_stopping_use_what_the_pairs_share():
    """Few noisy pairs (30; translations not word for word, a third of the tokens spelled
    identically), 400 held-out pairs, 3 corpora: tying identical tokens ranks better than the
    thesis's untied model (measured +0.03 to +0.08 P@1); every informed start (PCA, CCA, SVD)
    is far better than a random one; and training 30 iterations overfits the 30 pairs (the
    starts rank better), which validation pairs catch."""
    gains, starts = [], []
    for seed in (1, 2, 3):
        src, tgt, _, _ = shared_token_corpus(530, seed=seed, vocab=100, shared=33, length=8, noise=0.2)
        train, val, test = (src[:30], tgt[:30]), (src[30:130], tgt[30:130]), (src[130:], tgt[130:])

        def p_at_1(train=train, test=test, **options):
            m = LDKMatcher(LDKSpec(latent_dim=4, rho=0.01), random_state=0, **options).fit(*train)
            return float(np.mean(m.true_target_ranks(*test) == 0))

        thirty, one = LBFGS(max_iter=30), LBFGS(max_iter=1)
        gains.append(p_at_1(optimizer=thirty, tie_identical_tokens=True) - p_at_1(optimizer=thirty))
        starts.append({init: p_at_1(optimizer=one, init=init) for init in ("pca", "cca", "svd", "random")})
        long = LDKMatcher(LDKSpec(latent_dim=4, rho=0.01), optimizer=LBFGS(max_iter=30), random_state=0).fit(*train)
        stopped = LDKMatcher(LDKSpec(latent_dim=4, rho=0.01), optimizer=LBFGS(max_iter=30), random_state=0).fit(
            *train, *val
        )
        assert stopped.best_iter_ < long.n_iter_ and len(stopped.validation_curve_) >= stopped.best_iter_
        assert np.mean(stopped.true_target_ranks(*test) == 0) > np.mean(long.true_target_ranks(*test) == 0)
    assert np.mean(gains) > 0.02, gains
    for start in starts:
        assert min(start["pca"], start["cca"], start["svd"]) > start["random"] + 0.3, start


def test_gamma_and_rho_act_only_through_their_ratio():
    src, tgt = bilingual_corpus(30)
    a = LDKMatcher(
        LDKSpec(latent_dim=2, rho=0.1, gamma=1.0), optimizer=LBFGS(max_iter=8), random_state=0, dtype="float64"
    ).fit(src, tgt)
    b = LDKMatcher(
        LDKSpec(latent_dim=2, rho=1.0, gamma=10.0), optimizer=LBFGS(max_iter=8), random_state=0, dtype="float64"
    ).fit(src, tgt)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-9)
    np.testing.assert_allclose(a.distances(src, tgt), b.distances(src, tgt), atol=1e-10)
    np.testing.assert_allclose(a.source_vectors_, b.source_vectors_ * np.sqrt(10.0), atol=1e-10)


def test_pairs_with_an_empty_document_are_ranked_last():
    src, tgt = bilingual_corpus(40, seed=3)
    m = LDKMatcher(LDKSpec(latent_dim=2, rho=0.1), optimizer=LBFGS(max_iter=5), random_state=0).fit(src[:30], tgt[:30])
    test_src, test_tgt = list(src[30:]), list(tgt[30:])
    test_src[2] = "unknown words only"
    with pytest.warns(UserWarning, match="1 of 10 pairs have a document without any known word: ranked last"):
        ranks = m.true_target_ranks(test_src, test_tgt)
    assert ranks[2] == 9
    with pytest.raises(ValueError, match=r"rows \[2\]"):
        m.distances(test_src, test_tgt)
    assert np.isfinite(m.distances(test_src, test_tgt, on_empty="keep")).all()


def test_pairs_with_a_side_without_tokens_are_not_usable(tmp_path):
    """'will do nothing' is English stop words only: no bag of words on that side, so the
    study's splits never draw it (the models would raise on an empty document)."""
    from lvgp.experiments.matching import MatchingStudy, prepare

    path = tmp_path / "pairs.jsonl"
    rows = [
        {"id": i, "en": f"alpha{chr(97 + i)} beta{chr(97 + i)} gamma", "de": f"eins{chr(97 + i)} zwei"}
        for i in range(12)
    ]
    rows.append({"id": 99, "en": "will do nothing", "de": "wird nichts tun"})
    path.write_text("\n".join(json.dumps(r) for r in rows))
    study = MatchingStudy(str(path), source="en", target="de", train=8, dev=2, test=2, dedupe_families=False)
    (train, _), (dev, _), (test, _), ids = prepare(study, 0)
    assert "will do nothing" not in train + dev + test and len(train + dev + test) == 12
    with pytest.raises(ValueError, match="1 with an empty side"):
        prepare(MatchingStudy(str(path), source="en", target="de", train=9, dev=2, test=2, dedupe_families=False), 0)


def test_rank_keeps_an_empty_target_when_asked():
    en = ["apple banana cherry", "banana cherry date", "cherry date elder", "date elder figs"] * 3
    de = ["apfel banane kirsche", "banane kirsche dattel", "kirsche dattel holunder", "dattel holunder feige"] * 3
    model = LDKMatcher(LDKSpec(latent_dim=2, rho=0.01), optimizer=LBFGS(max_iter=5), random_state=0).fit(en, de)
    with pytest.raises(ValueError, match="target_texts"):
        model.rank(en[:2], de[:3] + ["zzzz qqqq"])
    with pytest.warns(EmptyDocumentsWarning):
        ranking = model.rank(en[:2], de[:3] + ["zzzz qqqq"], on_empty="keep")
    assert ranking.shape == (2, 4)
