"""The bag of words inside LDK (issue 26): the word kernel lambda * delta + k(x_v, x_w), and the
BagOfWordsKernel on its own. Closed forms against scikit-learn's tf-idf, the loop reference of the
combined kernel, finite-difference gradients, gpytorch's kernel test-suite, composition."""

from __future__ import annotations

import itertools
import unittest

import gpytorch
import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.preprocessing import normalize
from torch.func import functional_call

from lvgp import PAD, LatentDistributionKernel, Vocabulary
from lvgp.bow.padded import pad_to_common_width
from lvgp.bow.weighting import idf_weights
from lvgp.kernels import EMBEDDINGS, LEVEL2_KERNELS, BagOfWordsKernel, make_word_vectors

from . import reference as ref
from .kernel_suite import NUM_WORDS, WordIndexKernelTestCase

TEXTS = [
    "the cat sat on the mat with another cat",
    "a dog sat on a log",
    "cats and dogs are pets",
    "the mat was red and the log was brown",
    "stock markets fell sharply today",
    "markets rallied as stock prices rose",
    "the dog chased the cat around the mat",
]


@pytest.fixture(autouse=True)
def float64_default():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.fixture(scope="module")
def corpus():
    vocab = Vocabulary().fit(TEXTS)
    return vocab, vocab.encode(TEXTS)


def sklearn_gram(vocab, weighting: str, norm: str) -> np.ndarray:
    """scikit-learn's vectorizer on the same tokens and vocabulary, rows normalized by ``norm``, linear kernel."""
    options = dict(vocabulary=vocab.words, tokenizer=vocab.tokenize, lowercase=False, token_pattern=None)
    if weighting == "idf":
        features = TfidfVectorizer(norm=None, smooth_idf=True, **options).fit_transform(TEXTS)
    else:
        features = CountVectorizer(**options).fit_transform(TEXTS)
    features = normalize(features, norm=norm)
    return (features @ features.T).toarray()


@pytest.mark.parametrize("weighting,level2", list(itertools.product(["tf", "idf"], ["linear", "cosine"])))
def test_closed_form_the_identity_word_kernel_is_scikit_learns_tfidf_kernel(corpus, weighting, level2):
    """With the latent part at zero (linear embedding of zero vectors) or at the identity (RBF
    embedding of vectors far apart), LDK's Gram is the linear kernel of scikit-learn's tf(-idf)
    vectors, L1-normalized (linear level 2, times lambda) or L2-normalized (cosine), to 1e-10; the
    BagOfWordsKernel is the same kernel on its own."""
    vocab, x = corpus
    weights = idf_weights(x, len(vocab)) if weighting == "idf" else None
    expected = sklearn_gram(vocab, weighting, "l1" if level2 == "linear" else "l2")
    lam = 0.7
    zero = LatentDistributionKernel(len(vocab), 3, "linear", level2, word_weights=weights, identity_weight=lam)
    zero.latent = torch.zeros(len(vocab), 3)
    far = LatentDistributionKernel(len(vocab), 3, "rbf", level2, word_weights=weights, identity_weight=lam)
    far.latent = 1e6 * torch.eye(len(vocab), 3) + 1e6 * torch.arange(len(vocab)).unsqueeze(-1)  # far apart
    bow = BagOfWordsKernel(len(vocab), level2, word_weights=weights)
    with torch.no_grad():
        scale = lam if level2 == "linear" else 1.0
        np.testing.assert_allclose(zero(x).to_dense().numpy(), scale * expected, rtol=0, atol=1e-10)
        np.testing.assert_allclose(bow(x).to_dense().numpy(), expected, rtol=0, atol=1e-10)
        # vectors far apart: the word kernel is (lambda + 1) delta
        scale = lam + 1 if level2 == "linear" else 1.0
        np.testing.assert_allclose(far(x).to_dense().numpy(), scale * expected, rtol=0, atol=1e-10)
        # the cross-Gram and the diagonal from their own paths
        np.testing.assert_allclose(bow(x[:3], x[3:]).to_dense().numpy(), expected[:3, 3:], rtol=0, atol=1e-10)
        np.testing.assert_allclose(bow(x, diag=True).numpy(), np.diag(expected), rtol=0, atol=1e-10)
        np.testing.assert_allclose(bow(x[:3], x[3:6], diag=True).numpy(), np.diag(expected[:3, 3:6]), atol=1e-10)
        # identity_form="separate": the latent part's level 2 (0 for zero vectors: the cosine of a zero
        # embedding is 0) plus lambda times the bag of words' -- lambda times scikit-learn's kernel
        separate = LatentDistributionKernel(
            len(vocab), 3, "linear", level2, word_weights=weights, identity_weight=lam, identity_form="separate"
        )
        separate.latent = torch.zeros(len(vocab), 3)
        np.testing.assert_allclose(separate(x).to_dense().numpy(), lam * expected, rtol=0, atol=1e-10)
        np.testing.assert_allclose(separate(x, diag=True).numpy(), lam * np.diag(expected), rtol=0, atol=1e-10)


@pytest.mark.parametrize("weighting,level2", list(itertools.product(["tf", "idf"], ["linear", "cosine"])))
def test_sublinear_counts_are_scikit_learns_sublinear_tf(corpus, weighting, level2):
    """``sublinear_tf=True``: the Gram of scikit-learn's ``TfidfVectorizer(sublinear_tf=True)`` vectors
    (``1 + ln count``), L1- or L2-normalized, to 1e-10 -- the Gram, a cross-Gram, the diagonal, a batch
    of two corpora and the features; repeated words now weigh less than their counts."""
    vocab, x = corpus
    weights = idf_weights(x, len(vocab)) if weighting == "idf" else None
    options = dict(vocabulary=vocab.words, tokenizer=vocab.tokenize, lowercase=False, token_pattern=None)
    features = TfidfVectorizer(norm=None, sublinear_tf=True, use_idf=weighting == "idf", **options).fit_transform(TEXTS)
    features = normalize(features, norm="l1" if level2 == "linear" else "l2")
    expected = (features @ features.T).toarray()
    bow = BagOfWordsKernel(len(vocab), level2, word_weights=weights, sublinear_tf=True)
    with torch.no_grad():
        np.testing.assert_allclose(bow(x).to_dense().numpy(), expected, rtol=0, atol=1e-10)
        np.testing.assert_allclose(bow(x[:3], x[3:]).to_dense().numpy(), expected[:3, 3:], rtol=0, atol=1e-10)
        np.testing.assert_allclose(bow(x, diag=True).numpy(), np.diag(expected), rtol=0, atol=1e-10)
        batch = torch.stack([x, x.flip(0)])  # two corpora: a word's count is its own document's
        np.testing.assert_allclose(bow(batch).to_dense()[1].numpy(), expected[::-1, ::-1], rtol=0, atol=1e-10)
        dense = bow.features(x).to_dense().numpy()
        np.testing.assert_allclose(normalize(dense, norm="l1"), normalize(features.toarray(), norm="l1"), atol=1e-12)
        plain = BagOfWordsKernel(len(vocab), level2, word_weights=weights)(x).to_dense().numpy()
    assert not np.allclose(plain, expected)  # "cat" twice in the first text, "the" dropped: another kernel
    assert "sublinear" in repr(bow)
    bow.sublinear_tf = False  # switched after use: the kept document sets are not reused
    with torch.no_grad():
        np.testing.assert_allclose(bow(x).to_dense().numpy(), plain, rtol=0, atol=1e-12)
    with pytest.raises(TypeError, match="sublinear_tf must be True or False"):
        BagOfWordsKernel(len(vocab), sublinear_tf="yes")


COMBOS = list(itertools.product(EMBEDDINGS, LEVEL2_KERNELS))
HP = dict(gamma=0.7, a=0.5, b=3, zeta=1.3, c=0.4, d=2)
V, Q = 12, 3
X1 = torch.tensor([[0, 1, 1, PAD], [2, 3, 4, 5], [6, PAD, PAD, PAD], [PAD, 7, 7, 7]])
X2 = torch.tensor([[7, 8, PAD], [0, 0, 11], [1, PAD, PAD], [9, 10, 2], [3, 3, 3]])


def plus_kernel(embedding, level2, weights=None, lam=0.6, **kwargs):
    return LatentDistributionKernel(
        V, Q, embedding, level2, seed=1, word_weights=weights, identity_weight=lam, **HP, **kwargs
    )


FORMS = ["joint", "separate"]


def ref_gram(kernel, x1, x2, weights=None):
    hp = {name: getattr(kernel, name) for name in HP if hasattr(kernel.embedding, name) or hasattr(kernel.level2, name)}
    hp = {k: (v if isinstance(v, int) else v.item()) for k, v in hp.items()}
    X = kernel.latent.detach().numpy()
    return torch.from_numpy(
        ref.ldk_gram(
            X,
            x1.numpy(),
            x2.numpy(),
            kernel.embedding_name,
            kernel.level2.name,
            weights=weights,
            identity=kernel.identity_weight.item(),
            identity_form=kernel.identity_form,
            **hp,
        )
    )


@pytest.mark.parametrize("embedding,level2", COMBOS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("form", FORMS)
def test_combined_word_kernel_matches_the_loop_reference(embedding, level2, weighted, form):
    weights = torch.linspace(0.5, 3.0, V) if weighted else None
    k = plus_kernel(embedding, level2, weights, identity_form=form)
    w = None if weights is None else weights.numpy()
    with torch.no_grad():
        torch.testing.assert_close(k(X1, X2).to_dense(), ref_gram(k, X1, X2, w), rtol=0, atol=1e-9)
        torch.testing.assert_close(k(X1).to_dense(), ref_gram(k, X1, X1, w), rtol=0, atol=1e-9)
        torch.testing.assert_close(k(X1, diag=True), ref_gram(k, X1, X1, w).diagonal(), rtol=0, atol=1e-9)
        torch.testing.assert_close(k(X1, X2[:4], diag=True), ref_gram(k, X1, X2[:4], w).diagonal(), rtol=0, atol=1e-9)
        torch.testing.assert_close(k.squared_mmd(X1, X2), _mmd(k, X1, X2, w), rtol=0, atol=1e-9)


def _mmd(k, x1, x2, w):
    """Squared distances of the linear-level-2 embeddings from the loop reference."""
    linear = plus_kernel(k.embedding_name, "linear", None if w is None else torch.from_numpy(w))
    linear.latent = k.latent.detach()
    s1 = ref_gram(linear, x1, x1, w).diagonal()
    s2 = ref_gram(linear, x2, x2, w).diagonal()
    return (s1[:, None] + s2[None, :] - 2 * ref_gram(linear, x1, x2, w)).clamp_min(0)


@pytest.mark.parametrize("embedding,level2", COMBOS)
@pytest.mark.parametrize("form", FORMS)
def test_gradients_in_the_vectors_and_lambda_match_finite_differences(embedding, level2, form):
    k = plus_kernel(embedding, level2, identity_form=form)
    latent = k.word_vectors.raw_latent.detach().clone().requires_grad_(True)
    raw_lambda = k.raw_identity_weight.detach().clone().requires_grad_(True)

    def gram(lat, lam):
        with gpytorch.settings.lazily_evaluate_kernels(False):
            state = {"word_vectors.raw_latent": lat, "raw_identity_weight": lam}
            return functional_call(k, state, (X1, X2)).to_dense()

    jac = torch.autograd.functional.jacobian(gram, (latent, raw_lambda))
    assert jac[1].abs().sum() > 0  # lambda moves the kernel: the check is not vacuous
    assert torch.autograd.gradcheck(gram, (latent, raw_lambda), eps=1e-6, atol=1e-6)


def test_identity_weight_is_a_constrained_parameter_with_a_prior():
    prior = gpytorch.priors.GammaPrior(2.0, 2.0)
    k = LatentDistributionKernel(V, Q, identity_weight=0.5, identity_weight_prior=prior)
    assert abs(k.identity_weight.item() - 0.5) < 1e-12
    assert any(name == "identity_weight_prior" for name, *_ in k.named_priors())
    with pytest.raises(ValueError, match="identity_weight must lie in Positive"):
        k.identity_weight = -1.0
    plain = LatentDistributionKernel(V, Q)
    assert not plain.has_identity
    with pytest.raises(AttributeError, match="no identity part"):
        _ = plain.identity_weight


def test_sum_of_scaled_kernels_is_the_combined_kernel_with_lambda_their_ratio():
    """ScaleKernel(BagOfWordsKernel) + ScaleKernel(LDK) with the linear level-2 kernel equals
    ScaleKernel(LDK with identity part) with lambda = the ratio of the two scales."""
    ldk = LatentDistributionKernel(V, Q, "rbf", "linear", seed=2)
    bow = BagOfWordsKernel(V)
    s_ldk, s_bow = ScaleKernel(ldk), ScaleKernel(bow)
    s_ldk.outputscale, s_bow.outputscale = 1.5, 0.6
    plus = ScaleKernel(LatentDistributionKernel(V, Q, "rbf", "linear", seed=2, identity_weight=0.6 / 1.5))
    plus.outputscale = 1.5
    x1, x2 = pad_to_common_width(X1, X2)  # composites check widths before the kernels see the inputs
    with torch.no_grad():
        torch.testing.assert_close((s_bow + s_ldk)(x1, x2).to_dense(), plus(x1, x2).to_dense(), rtol=1e-12, atol=1e-12)


def test_the_identity_part_builds_no_vocabulary_sized_matrix():
    """Ids up to 10^9: the bag-of-words kernel works on the words present only."""
    big = 10**9
    x = torch.tensor([[big - 1, 5, 5, PAD], [5, 17, PAD, PAD], [big - 1, 17, 3, PAD]])
    k = BagOfWordsKernel(big, "cosine")
    with torch.no_grad():
        K = k(x).to_dense()
    counts = np.array([[1, 2, 0, 0], [0, 1, 1, 0], [1, 0, 1, 1]], dtype=float)  # words big-1, 5, 17, 3
    counts = normalize(counts)
    np.testing.assert_allclose(K.numpy(), counts @ counts.T, atol=1e-12)


def test_bag_of_words_kernel_arguments_and_features(corpus):
    vocab, x = corpus
    with pytest.raises(TypeError, match="word_weights must be None or .* not the name 'idf'"):
        BagOfWordsKernel(len(vocab), word_weights="idf")
    with pytest.raises(ValueError, match="positive finite weights"):
        BagOfWordsKernel(len(vocab), word_weights=np.zeros(len(vocab)))
    with pytest.raises(TypeError, match="num_words must be an integer"):
        BagOfWordsKernel(2.5)
    with pytest.raises(ValueError, match="num_words must be >= 1"):
        BagOfWordsKernel(0)
    with pytest.raises(TypeError, match="unknown arguments"):
        BagOfWordsKernel(3, gamma=2.0)
    assert BagOfWordsKernel(np.int64(3)).num_words == 3
    weights = idf_weights(x, len(vocab))
    phi = BagOfWordsKernel(len(vocab), word_weights=weights).features(x).to_dense().numpy()
    options = dict(vocabulary=vocab.words, tokenizer=vocab.tokenize, lowercase=False, token_pattern=None)
    tfidf = TfidfVectorizer(norm="l1", **options).fit_transform(TEXTS).toarray()
    np.testing.assert_allclose(phi, tfidf, atol=1e-12)


class TestBagOfWordsKernelWithGPyTorchSuite(WordIndexKernelTestCase, unittest.TestCase):
    """gpytorch's own kernel tests with word-index data (as for the LDK)."""

    def create_kernel_no_ard(self, **kwargs):
        return BagOfWordsKernel(NUM_WORDS, "rbf", zeta=2.0, **kwargs)


class TestLDKWithIdentityPartWithGPyTorchSuite(TestBagOfWordsKernelWithGPyTorchSuite):
    def create_kernel_no_ard(self, **kwargs):
        return LatentDistributionKernel(NUM_WORDS, 2, "rbf", "rbf", seed=0, identity_weight=0.5, **kwargs)


class TestLDKWithSeparateIdentityPartWithGPyTorchSuite(TestBagOfWordsKernelWithGPyTorchSuite):
    def create_kernel_no_ard(self, **kwargs):
        return LatentDistributionKernel(
            NUM_WORDS, 2, "rbf", "cosine", seed=0, identity_weight=0.5, identity_form="separate", **kwargs
        )


@pytest.mark.parametrize("level2", list(LEVEL2_KERNELS))
def test_separate_identity_part_is_the_sum_of_the_two_kernels(level2):
    """identity_form="separate" is the LDK without the identity part plus lambda times the
    BagOfWordsKernel of the same level 2 and word weights, composed by hand in gpytorch."""
    weights = torch.linspace(0.5, 3.0, V)
    k = plus_kernel("rbf", level2, weights, lam=0.8, identity_form="separate")
    plain = LatentDistributionKernel(V, Q, "rbf", level2, seed=1, word_weights=weights, **HP)
    bow = ScaleKernel(
        BagOfWordsKernel(V, level2, word_weights=weights, **{k: v for k, v in HP.items() if k in ("zeta", "c", "d")})
    )
    bow.outputscale = 0.8
    by_hand = plain + bow
    x1, x2 = pad_to_common_width(X1, X2)  # a gpytorch sum of kernels takes inputs of one width
    with torch.no_grad():
        for args in ((x1,), (x1, x2)):
            torch.testing.assert_close(k(*args).to_dense(), by_hand(*args).to_dense(), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(k(X1, diag=True), by_hand(X1, diag=True), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="identity_form must be one of"):
        plus_kernel("rbf", level2, identity_form="inside")


def test_word_vectors_with_an_identity_part_in_a_batched_kernel():
    """A batched LDK with the identity part: lambda per batch member, indexing and expanding keep it."""
    k = LatentDistributionKernel(V, Q, "rbf", "cosine", identity_weight=0.5, batch_shape=torch.Size([2]), seed=0)
    k.identity_weight = torch.tensor([0.5, 2.0])
    with torch.no_grad():
        full = k(X1).to_dense()
        for i in range(2):
            vectors = make_word_vectors(V, Q, init=k.latent[i].detach())
            single = LatentDistributionKernel(
                embedding="rbf", level2="cosine", word_vectors=vectors, identity_weight=[0.5, 2.0][i]
            )
            torch.testing.assert_close(full[i], single(X1).to_dense(), rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(k[i](X1).to_dense(), full[i], rtol=1e-12, atol=1e-12)
        assert k.expand_batch(torch.Size([3, 2])).identity_weight.shape == (3, 2)


def test_idf_weights_are_scikit_learns_to_the_last_bit_without_a_count_matrix():
    """idf_weights counts each word's documents by sorting rows (document_frequencies), not through a
    scipy count matrix (25 s for a million documents): the same numbers as TfidfTransformer's idf_,
    bit for bit, for repeated words, padding anywhere in a row, empty rows and chunks of any size."""
    from sklearn.feature_extraction.text import TfidfTransformer

    from lvgp.bow.padded import document_frequencies, padded_to_counts

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.integers(-1, 30, size=(200, 12)))  # PAD (-1) scattered, words repeated
    x[5] = PAD
    counts = padded_to_counts(x, 40)
    for chunk in (1, 7, 65_536):
        np.testing.assert_array_equal(document_frequencies(x, 40, rows_per_chunk=chunk), (counts > 0).sum(0).A1)
    np.testing.assert_array_equal(idf_weights(x, 40), TfidfTransformer(smooth_idf=True).fit(counts).idf_)
    with pytest.raises(ValueError, match="num_words=20"):
        document_frequencies(x, 20)


def test_document_lengths_of_a_large_corpus_are_counted_in_blocks(monkeypatch):
    """document_lengths counts a large corpus in blocks of rows (torch's sum casts the whole mask to
    int64 first): the same lengths, dtype and shape as one count, for blocks that split rows unevenly."""
    import lvgp.bow.padded as padded

    x = torch.from_numpy(np.random.default_rng(0).integers(-1, 5, size=(37, 6)))
    whole = (x != PAD).sum(-1)
    monkeypatch.setattr(padded, "_LENGTH_BLOCK", 4 * 6 + 1)  # 4 rows a block, the last block of 1
    blocked = padded.document_lengths(x)
    assert blocked.dtype == whole.dtype and torch.equal(blocked, whole)
    assert torch.equal(padded.document_lengths(x.reshape(1, 37, 6)), whole.reshape(1, 37))  # batched: at once


def test_the_cross_product_of_two_sets_takes_their_shared_words_only():
    """<phi_i, phi_j> between two different sets through the words they share (each set's own
    words, word 0 and repeated words included) equals the dense product of their weight matrices,
    and with no shared word it is zero."""
    from lvgp.kernels import mean_embedding as me

    g = torch.Generator().manual_seed(5)
    x1 = torch.randint(0, 30, (7, 9), generator=g)
    x2 = torch.randint(20, 60, (5, 6), generator=g)  # words 20..29 shared
    x1[0, :3] = 0
    x1[1, 4:] = PAD
    x2[2, 1:] = PAD
    for a, b in ((x1, x2), (x2, x1), (x1, x2 + 40)):  # the last: nothing shared
        d1, d2 = (me.DocumentSet(*me.document_weights(x, torch.float64)) for x in (a, b))
        dense = [torch.zeros(len(x), 100, dtype=torch.float64) for x in (a, b)]
        for c, x, d in zip(dense, (a, b), (d1, d2)):
            keep = x != PAD
            rows = torch.arange(len(x)).unsqueeze(-1).expand_as(x)[keep]
            c.index_put_((rows, x[keep]), d.weights[keep], accumulate=True)
        torch.testing.assert_close(me.bag_of_words_inner(d1, d2), dense[0] @ dense[1].mT, rtol=1e-14, atol=1e-16)


def test_the_cross_product_on_the_cpu_is_a_csr_product_equal_to_embedding_bags(monkeypatch):
    """On the CPU the cross product's sparse factor is a CSR tensor (torch's product runs on all its
    threads; ``embedding_bag``'s forward on one): the same values as the ``embedding_bag`` path to
    rounding, unbatched and batched, symmetric and not, the same to the bit on one thread and two."""
    from lvgp.kernels import mean_embedding as me

    g = torch.Generator().manual_seed(7)
    x1 = torch.randint(1, 400, (40, 30), generator=g)
    x2 = torch.randint(200, 600, (30, 25), generator=g)
    x1[3, 5:] = PAD
    pairs = [(x1, x2, False), (x1, x1, True), (torch.stack([x1, x1.flip(0)]), x2, False)]

    def products():
        out = []
        for a, b, symmetric in pairs:
            d1 = me.DocumentSet(*me.document_weights(a, torch.float64))
            d2 = d1 if symmetric else me.DocumentSet(*me.document_weights(b, torch.float64))
            out.append(me._bag_of_words_inner(d1, d2, symmetric))
        return out

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = products()
        torch.set_num_threads(2)
        two = products()
    finally:
        torch.set_num_threads(threads)
    sparse = me._bags_csr(me.DocumentSet(*me.document_weights(x1, torch.float64)).bags(), 400)
    assert sparse is not None and sparse.layout == torch.sparse_csr and sparse.crow_indices().dtype == torch.int32
    monkeypatch.setattr(me, "_bags_csr", lambda bags, size: None)  # the embedding_bag path
    bagged = products()
    for a, b, c in zip(one, two, bagged):
        assert torch.equal(a, b)
        torch.testing.assert_close(a, c, rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16])
def test_unique_ids_are_torch_unique_to_the_bit(dtype):
    """The distinct words of a set of documents by marking ids in a table of their range (the CPU's
    path) equal torch.unique's sorted ids and inverse, dtypes included: padding (-1), batched shapes,
    one id, no id, and a range too wide to mark (sorted, as torch.unique)."""
    from lvgp.kernels.mean_embedding import unique_ids

    g = torch.Generator().manual_seed(0)
    cases = [
        torch.randint(PAD, high, shape, generator=g) for shape in [(1,), (5, 7), (3, 4, 9)] for high in (2, 50, 5000)
    ]
    cases += [torch.zeros(0, 4, dtype=torch.long), torch.tensor([7, 30_000, 7, PAD])]
    if dtype != torch.int16:
        cases.append(torch.tensor([3, 200_000, 3]))  # wider than the table: sorted
    for ids in cases:
        ids = ids.to(dtype)
        words, inverse = unique_ids(ids)
        expected_words, expected_inverse = torch.unique(ids, return_inverse=True)
        assert words.dtype == expected_words.dtype and inverse.dtype == expected_inverse.dtype
        assert torch.equal(words, expected_words) and torch.equal(inverse, expected_inverse)
