"""Synthetic bag-of-words data with a known structure, for tests, demos and notebooks. A standalone
module (numpy only, no lvgp import): benchmarks/large_n.py loads it by path for every code it compares."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np


@dataclass
class SyntheticCorpus:
    """Documents (strings), targets, and the ground truth behind them."""

    texts: list[str]
    y: np.ndarray
    group: np.ndarray  #: which synonym group each document draws its signal words from
    positive_words: list[list[str]]  #: per group
    negative_words: list[list[str]]  #: per group
    neutral_words: list[str]


def make_synonym_regression(
    n: int = 300,
    n_groups: int = 2,
    words_per_polarity: int = 8,
    n_neutral: int = 40,
    doc_len: tuple[int, int] = (4, 10),
    signal_tokens: tuple[int, int] = (1, 3),
    noise: float = 0.1,
    random_state: int | None = None,
) -> SyntheticCorpus:
    """Regression documents in which disjoint word groups carry the same signal.

    Every word has a score: +1 (positive), -1 (negative) or 0 (neutral). Positive (and
    negative) words come in ``n_groups`` disjoint synonym groups: a document draws its
    ``signal_tokens`` signal words from one group only, so words of different groups
    never co-occur. The target is the mean score of the document's words plus Gaussian
    noise -- GP-LVSM's model (paper eq. 3, :math:`f = w^T m(X)`, the document average of a
    function of its words' vectors). A kernel on word identities (BoW) sees no similarity
    between documents of different groups; one that learns word vectors can place
    synonyms together.

    Words are letter-only tokens (``"posab"``, ``"negac"``, ``"neuzz"`` ...), so the default
    :class:`~lvgp.Vocabulary` keeps them all.
    """
    rng = np.random.default_rng(random_state)
    letters = "abcdefghijklmnopqrstuvwxyz"

    def name(prefix: str, i: int) -> str:
        return prefix + letters[i // 26 % 26] + letters[i % 26]

    pos = [[name("pos", g * words_per_polarity + i) for i in range(words_per_polarity)] for g in range(n_groups)]
    neg = [[name("neg", g * words_per_polarity + i) for i in range(words_per_polarity)] for g in range(n_groups)]
    neutral = [name("neu", i) for i in range(n_neutral)]
    texts, ys, groups = [], [], []
    for _ in range(n):
        g = int(rng.integers(n_groups))
        m = int(rng.integers(signal_tokens[0], signal_tokens[1] + 1))
        length = max(m, int(rng.integers(doc_len[0], doc_len[1] + 1)))
        polarity = rng.random(m) < rng.random()  # a document-level positive rate
        words = [rng.choice(pos[g]) if p else rng.choice(neg[g]) for p in polarity]
        words += list(rng.choice(neutral, size=length - m))
        rng.shuffle(words)
        texts.append(" ".join(words))
        ys.append((2 * polarity.sum() - m) / length + noise * rng.standard_normal())
        groups.append(g)
    return SyntheticCorpus(texts, np.asarray(ys), np.asarray(groups), pos, neg, neutral)


@dataclass
class TopicCorpus:
    """Documents drawn from (supervised) LDA, with the truth that generated them."""

    docs: np.ndarray  #: n x L word ids padded with -1
    y: np.ndarray  #: responses
    topics: np.ndarray  #: K x V topic-word distributions
    eta: np.ndarray  #: response coefficients
    zbar: np.ndarray  #: n x K empirical topic frequencies
    theta: np.ndarray  #: n x K topic proportions


def make_slda_corpus(
    n_docs: int = 500,
    n_topics: int = 5,
    vocab_size: int = 100,
    doc_len: tuple[int, int] = (40, 80),
    alpha: float | None = None,
    topic_concentration: float = 0.1,
    eta: np.ndarray | None = None,
    response: str = "gaussian",
    sigma: float = 0.1,
    random_state: int | None = None,
) -> TopicCorpus:
    """Draw documents and responses from the sLDA generative process (Blei & McAuliffe 2007):
    theta ~ Dir(alpha), z_n ~ Mult(theta), w_n ~ Mult(beta_{z_n}), y ~ GLM(eta^T zbar).

    ``response``: ``"gaussian"`` (N(eta^T zbar, sigma^2)), ``"bernoulli"`` (logistic),
    ``"categorical"`` (softmax over the rows of a C x K ``eta``) or ``"poisson"`` (log link).
    Topics are Dirichlet(``topic_concentration``) draws (sparse, distinguishable).
    """
    rng = np.random.default_rng(random_state)
    K, V = n_topics, vocab_size
    alpha = 1.0 / K if alpha is None else alpha
    topics = rng.dirichlet(np.full(V, topic_concentration), size=K)
    if eta is None:
        eta = np.linspace(-2.0, 2.0, K) if response != "categorical" else rng.normal(0, 3.0, size=(3, K))
    eta = np.asarray(eta, dtype=float)
    lengths = rng.integers(doc_len[0], doc_len[1] + 1, size=n_docs)
    docs = np.full((n_docs, lengths.max()), -1, dtype=np.int64)
    zbar = np.zeros((n_docs, K))
    theta = rng.dirichlet(np.full(K, alpha), size=n_docs)
    for d in range(n_docs):
        z = rng.choice(K, size=lengths[d], p=theta[d])
        docs[d, : lengths[d]] = [rng.choice(V, p=topics[k]) for k in z]
        zbar[d] = np.bincount(z, minlength=K) / lengths[d]
    lin = zbar @ eta.T if eta.ndim == 2 else zbar @ eta
    if response == "gaussian":
        y = lin + sigma * rng.standard_normal(n_docs)
    elif response == "bernoulli":
        y = (rng.random(n_docs) < 1 / (1 + np.exp(-lin))).astype(float)
    elif response == "poisson":
        y = rng.poisson(np.exp(lin)).astype(float)
    elif response == "categorical":
        p = np.exp(lin - lin.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        y = np.array([rng.choice(p.shape[1], p=row) for row in p])
    else:
        raise ValueError(f"response must be gaussian, bernoulli, categorical or poisson; got {response!r}")
    return TopicCorpus(docs, y, topics, eta, zbar, theta)


def synonym_embeddings(
    corpus: SyntheticCorpus, dim: int = 8, noise: float = 0.3, synonym_noise: float = 0.05, random_state=None
):
    """Pretrained-like word vectors for a :func:`make_synonym_regression` corpus, and a synonym
    for every signal word that the corpus never uses.

    A word's vector carries its score (+1, -1, 0) in the first coordinate and Gaussian noise
    (``noise``) in the other ``dim - 1``, as pretrained embeddings carry meaning; each signal word
    ``w`` gets a synonym ``"syn" + w`` whose vector is ``w``'s plus ``N(0, synonym_noise^2)``.

    Returns:
        ``(embeddings, synonyms)``: a :class:`~lvgp.datasets.WordEmbeddings` over the corpus's
        words and the synonyms, and the dict signal word -> synonym. Rewrite documents with
        ``" ".join(synonyms.get(w, w) for w in doc.split())``.
    """
    from .loaders import WordEmbeddings

    rng = np.random.default_rng(random_state)
    scores = {w: 1.0 for g in corpus.positive_words for w in g}
    scores.update({w: -1.0 for g in corpus.negative_words for w in g})
    scores.update({w: 0.0 for w in corpus.neutral_words})
    vectors = {w: np.concatenate([[s], noise * rng.standard_normal(dim - 1)]) for w, s in scores.items()}
    synonyms = {w: "syn" + w for w, s in scores.items() if s != 0}
    for w, syn in synonyms.items():
        vectors[syn] = vectors[w] + synonym_noise * rng.standard_normal(dim)
    return WordEmbeddings("synthetic", list(vectors), np.array(list(vectors.values()))), synonyms


@dataclass
class ZipfTopicDocuments:
    """Padded documents drawn by :func:`make_zipf_topic_documents`, with their targets."""

    X: np.ndarray  #: ``n x width`` word ids (``int32``), padding ``-1`` at the end of each row
    y: np.ndarray  #: the regression target: ``theta @ beta`` plus noise, standardized
    labels: np.ndarray  #: the class: the group of topics with the largest share of the document
    lengths: np.ndarray  #: tokens per document (before the cap)
    num_words: int


#: tokens whose topics :func:`make_zipf_topic_documents` draws at once (their comparison with the
#: topic shares: 2**16 x 50 float64, 26 MB)
_TOKEN_SLICE = 2**16


def make_zipf_topic_documents(
    n: int,
    num_words: int = 50_000,
    num_topics: int = 50,
    num_classes: int = 4,
    length_log_mean: float = 4.95,
    length_log_std: float = 0.90,
    max_length: int = 512,
    zipf_exponent: float = 1.07,
    alpha: float = 0.1,
    noise: float = 0.3,
    chunk: int = 20_000,
    random_state: int | None = None,
    n_jobs: int = 1,
) -> ZipfTopicDocuments:
    r"""Documents of an LDA generator with Zipf word frequencies, for benchmarks at large ``n``.

    Each of ``num_topics`` topics is a Zipf law (rank :math:`r` has weight :math:`r^{-s}`,
    ``zipf_exponent`` :math:`s`) over its own random ordering of half the vocabulary, mixed half and
    half with a Zipf law over the whole vocabulary shared by all topics (the common words), so the
    corpus's word frequencies fall off as Zipf's. A document draws :math:`\theta \sim
    \mathrm{Dir}(\alpha)`, a log-normal length (defaults: the ``amazon-reviews`` corpus's token
    counts, median 141, 99th percentile ~1,100; capped at ``max_length``) and each token's topic
    and word. Targets: ``y = theta @ beta + noise * eps`` (``beta`` standard normal per topic),
    standardized; ``labels``: the argmax over ``num_classes`` groups of consecutive topics of the
    document's topic shares.

    Drawn in chunks of ``chunk`` documents (memory: the output and one chunk), each from its own
    child of ``random_state`` (``numpy.random.SeedSequence.spawn``), ``n_jobs`` chunks at a time in
    threads (numpy's array operations release the GIL): the same documents for every ``n_jobs``.
    Returns a
    :class:`ZipfTopicDocuments`: the padded ``int32`` ids as a padded-tensor input of the estimators
    takes them (with ``num_words``).
    """
    if n < 1 or num_words < 2 or num_topics < 1 or not 1 <= num_classes <= num_topics or max_length < 1:
        raise ValueError(
            "make_zipf_topic_documents needs n >= 1, num_words >= 2, 1 <= num_classes <= num_topics, "
            f"max_length >= 1; got n={n}, num_words={num_words}, num_topics={num_topics}, "
            f"num_classes={num_classes}, max_length={max_length}"
        )
    if not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"make_zipf_topic_documents needs n_jobs >= 1 (an int); got n_jobs={n_jobs!r}")
    root = np.random.SeedSequence(random_state)
    topics_seed, beta_seed, *chunk_seeds = root.spawn(2 + (n + chunk - 1) // chunk)
    rng = np.random.default_rng(topics_seed)
    shared = np.arange(1, num_words + 1, dtype=float) ** -zipf_exponent
    shared /= shared.sum()
    own_size = max(1, num_words // 2)
    own_weights = np.arange(1, own_size + 1, dtype=float) ** -zipf_exponent
    own_weights /= own_weights.sum()
    cumulative = np.empty((num_topics, num_words))
    for k in range(num_topics):
        p = 0.5 * shared
        np.add.at(p, rng.permutation(num_words)[:own_size], 0.5 * own_weights)
        cumulative[k] = np.cumsum(p)
    cumulative[:, -1] = 1.0
    beta = np.random.default_rng(beta_seed).standard_normal(num_topics)
    groups = np.arange(num_topics) * num_classes // num_topics
    X = np.full((n, max_length), -1, dtype=np.int32)
    y = np.empty(n)
    labels = np.empty(n, dtype=np.int64)
    lengths = np.empty(n, dtype=np.int64)

    def draw(c: int, seed: np.random.SeedSequence) -> None:  # chunk c, into its own rows
        r = np.random.default_rng(seed)
        lo, hi = c * chunk, min(n, (c + 1) * chunk)
        m = hi - lo
        theta = r.dirichlet(np.full(num_topics, alpha), size=m)
        length = np.maximum(1, np.rint(np.exp(r.normal(length_log_mean, length_log_std, size=m)))).astype(np.int64)
        kept = np.minimum(length, max_length)
        doc = np.repeat(np.arange(m), kept)
        # each token's topic: how many of its document's cumulative topic shares its uniform draw passes,
        # in slices of tokens (the tokens x topics comparison of a whole chunk took 1.4 GB of float64)
        shares, draws = np.cumsum(theta, 1), r.random(len(doc))
        topic = np.empty(len(doc), dtype=np.int64)
        for start in range(0, len(doc), _TOKEN_SLICE):
            at = slice(start, start + _TOKEN_SLICE)
            topic[at] = (draws[at, None] > shares[doc[at]]).sum(1)
        topic = topic.clip(max=num_topics - 1)
        word = np.empty(len(doc), dtype=np.int64)
        u = r.random(len(doc))
        for k in np.unique(topic):
            at = topic == k
            word[at] = np.searchsorted(cumulative[k], u[at], side="right").clip(max=num_words - 1)
        position = np.arange(len(doc)) - np.repeat(np.cumsum(kept) - kept, kept)
        X[lo + doc, position] = word
        y[lo:hi] = theta @ beta + noise * r.standard_normal(m)
        shares = np.zeros((m, num_classes))
        np.add.at(shares.T, groups, theta.T)
        labels[lo:hi] = shares.argmax(1)
        lengths[lo:hi] = length

    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        list(pool.map(draw, range(len(chunk_seeds)), chunk_seeds))
    width = int(min(max_length, lengths.max()))
    y = (y - y.mean()) / (y.std() or 1.0)
    return ZipfTopicDocuments(X[:, :width], y, labels, lengths, num_words)
