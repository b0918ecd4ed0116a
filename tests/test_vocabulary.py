"""Vocabulary and padded word-index sets."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from lvgp import PAD, Vocabulary, counts_to_padded, pad_to_common_width, pad_to_width, padded_to_counts
from lvgp.bow.padded import check_padded
from lvgp.warnings import EmptyDocumentsWarning, TruncationWarning, UnseenWordsWarning

DOCS = [
    "The film was GREAT, great acting!",
    "An awful film; awful plot & bad acting (1999).",
    "Great plot, but the ending was bad.",
]


def test_tokenization_rules():
    vocab = Vocabulary()
    assert vocab.tokenize("The film was GREAT, great acting!") == ["film", "great", "great", "acting"]
    assert vocab.tokenize("x1 ab abc_def 12abc über") == ["abc", "def", "abc", "über"]
    assert Vocabulary(min_token_len=1, stop_words=None).tokenize("a b the") == ["a", "b", "the"]
    assert Vocabulary(stop_words=["film"]).tokenize("the film") == ["the"]
    assert Vocabulary(lowercase=False).tokenize("Great great") == ["Great", "great"]
    # pre-tokenized documents are taken verbatim
    assert vocab.tokenize(["The", "a", "x"]) == ["The", "a", "x"]
    with pytest.raises(ValueError, match="stop_words must be"):
        Vocabulary(stop_words="german").tokenize("x")
    with pytest.raises(TypeError, match="a document must be a string"):
        vocab.tokenize(3)


def test_fit_filters_and_alphabetical_ids():
    vocab = Vocabulary().fit(DOCS)
    assert vocab.words == ["acting", "awful", "bad", "ending", "film", "great", "plot"]
    assert len(vocab) == 7 and "plot" in vocab and vocab.index("plot") == 6
    assert Vocabulary(min_df=2).fit(DOCS).words == ["acting", "bad", "film", "great", "plot"]
    assert Vocabulary(max_df=2).fit(DOCS).words == ["acting", "awful", "bad", "ending", "film", "great", "plot"]
    assert Vocabulary(max_df=0.5).fit(DOCS).words == ["awful", "ending"]
    # max_features keeps the most frequent words (corpus counts: great 3, then 2 each; ties alphabetical)
    assert Vocabulary(max_features=2).fit(DOCS).words == ["acting", "great"]
    with pytest.raises(ValueError, match="no word survives"):
        Vocabulary(min_df=4).fit(DOCS)
    with pytest.raises(ValueError, match="at least one training document"):
        Vocabulary().fit([])
    with pytest.raises(RuntimeError, match="not fitted"):
        Vocabulary().encode(DOCS)


def test_encode_is_a_padded_multiset_and_decodes_back():
    vocab = Vocabulary().fit(DOCS)
    x = vocab.encode(DOCS)
    assert x.dtype == torch.long and x.shape == (3, 6)
    assert x[0].tolist() == [4, 5, 5, 0, PAD, PAD]  # film great great acting
    assert vocab.decode(x) == [
        ["film", "great", "great", "acting"],
        ["awful", "film", "awful", "plot", "bad", "acting"],
        ["great", "plot", "ending", "bad"],
    ]
    assert vocab.encode(DOCS, max_len=8).shape == (3, 8)
    check_padded(x, num_words=len(vocab))


def test_encode_counts_unseen_words_and_handles_empty_documents():
    vocab = Vocabulary().fit(DOCS)
    with pytest.warns(
        UnseenWordsWarning, match=r"dropped 3 tokens \(2 distinct words\) not in the vocabulary, in 2 of 3 documents"
    ):
        x = vocab.encode(["great zebra zebra", "plot", "awful unicorn"])
    assert vocab.decode(x) == [["great"], ["plot"], ["awful"]]
    with pytest.raises(ValueError, match=r"docs: 2 documents have no word in the vocabulary .*rows \[0, 2\]"):
        with pytest.warns(UnseenWordsWarning):
            vocab.encode(["zebra", "plot", "the of and"])
    with pytest.warns(EmptyDocumentsWarning, match=r"1 of 2 documents have no word .*rows \[0\]"):
        x = vocab.encode(["the of", "plot"], on_empty="keep")
    assert (x[0] == PAD).all()
    with pytest.warns(TruncationWarning, match=r"truncated 1 documents longer than max_len=2 \(2 tokens dropped\)"):
        x = vocab.encode(DOCS[:1] + ["plot"], max_len=2)
    assert x.shape == (2, 2)


def test_counts_and_padded_conversions_roundtrip():
    vocab = Vocabulary().fit(DOCS)
    counts = vocab.counts(DOCS)
    assert counts.shape == (3, 7) and counts[0, vocab.index("great")] == 2
    padded = counts_to_padded(counts)
    assert (padded_to_counts(padded, 7) != counts).nnz == 0
    assert (padded_to_counts(vocab.encode(DOCS), 7) != counts).nnz == 0
    dense = counts_to_padded(np.array([[0, 2, 1], [0, 0, 0]]))
    assert dense.shape == (2, 3) and sorted(dense[0].tolist()) == [1, 1, 2]
    assert (dense[1] == PAD).all()
    with pytest.raises(ValueError, match=r"non-negative integer counts .*rows \[1\]"):
        counts_to_padded(sp.csr_matrix(np.array([[1.0, 0.0], [0.5, 1.0]])))
    with pytest.raises(ValueError, match=r"non-negative integer counts .*rows \[0\]"):
        counts_to_padded(np.array([[-1, 0]]))


def test_padding_helpers():
    a = torch.tensor([[1, PAD]])
    b = torch.tensor([[2, 3, 4]])
    pa, pb = pad_to_common_width(a, b)
    assert pa.tolist() == [[1, PAD, PAD]] and pb is b
    with pytest.raises(ValueError, match="smaller width"):
        pad_to_width(b, 2)


def test_save_load_and_dict_roundtrip(tmp_path):
    vocab = Vocabulary(min_df=1, stop_words=["film"], min_token_len=4).fit(DOCS)
    vocab.save(tmp_path / "vocab.json")
    again = Vocabulary.load(tmp_path / "vocab.json")
    assert again == vocab and again.words == vocab.words
    assert torch.equal(again.encode(DOCS[:1]), vocab.encode(DOCS[:1]))
    assert not Vocabulary.from_dict(Vocabulary(min_df=3).to_dict()).is_fitted
    with pytest.raises(ValueError, match="not a saved lvgp Vocabulary"):
        Vocabulary.from_dict({"format": "x"})


def test_trim_to_longest_cuts_padding_columns_with_or_without_host_lengths():
    from lvgp.bow import PAD, document_lengths, trim_to_longest

    x = torch.tensor([[3, 1, PAD, PAD, PAD], [2, PAD, PAD, PAD, PAD], [4, 4, 4, PAD, PAD]])
    assert torch.equal(trim_to_longest(x), x[:, :3])
    assert torch.equal(trim_to_longest(x[:2], document_lengths(x)[:2]), x[:2, :2])
    empty = torch.full((2, 4), PAD)
    assert trim_to_longest(empty).shape == (2, 1)  # at least one column


def _tokens_written_out(text: str, lowercase: bool = True, shortest: int = 3, stop=None) -> list[str]:
    """The tokenization rules without the memo: NFC, lower-case, the pattern, the filters."""
    import unicodedata

    from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS, _token_pattern

    stop = ENGLISH_STOP_WORDS if stop is None else stop
    text = unicodedata.normalize("NFC", text)
    text = text.lower() if lowercase else text
    return [t for t in _token_pattern().findall(text) if len(t) >= shortest and t not in stop]


def test_ascii_texts_take_the_ascii_pattern_and_give_the_tokens_of_the_unicode_one(monkeypatch):
    """An ASCII text is tokenized by runs of ASCII letters of the shortest length or more
    (:func:`~lvgp.bow.vocabulary._ascii_token_pattern`, four times as fast): the same tokens and spans as the
    Unicode pattern with its length filter, on random ASCII texts of letters, digits, underscores, punctuation and
    space, for every option; a text with one non-ASCII character takes the Unicode pattern."""
    from lvgp.bow import vocabulary

    monkeypatch.setattr(vocabulary, "TOKENS", vocabulary.TokenMemo())
    rng = np.random.default_rng(0)
    alphabet = np.array(list("abcdeXYZ" * 4 + "0129_'-.,;: \t\n\x7f~"))
    texts = ["".join(rng.choice(alphabet, size=rng.integers(0, 80))) for _ in range(300)]
    texts += ["", "a", "ab abc ABCD", "x1y2zz3www", "___abc___", "DON'T stop", "résumé and cafe"]
    for options in (
        {},
        {"lowercase": False},
        {"min_token_len": 1, "stop_words": None},
        {"min_token_len": 2, "stop_words": ["abc", "xyz"]},
        {"min_token_len": 5, "lowercase": False, "stop_words": None},
    ):
        vocab = Vocabulary(**options)
        stop = vocab._stop_set()
        shortest, lowercase = vocab.min_token_len, vocab.lowercase
        for text in texts:
            expected = _tokens_written_out(text, lowercase=lowercase, shortest=shortest, stop=stop)
            assert vocab.tokenize(text) == expected, (options, text)
            read, spans = vocab.token_spans(text)
            assert [t for t, _, _ in spans] == expected and all(read[a:b] == t for t, a, b in spans)
    assert vocabulary._token_matches("abc", 3)[0] is vocabulary._ascii_token_pattern(3)
    assert vocabulary._token_matches("abc é", 3) == (vocabulary._token_pattern(), 3)
    # options tokenize checks nothing of (fit refuses them) take the Unicode pattern, as before: no empty token
    assert Vocabulary(min_token_len=0, stop_words=None).tokenize("ab, c") == ["ab", "c"]


def test_the_token_memo_serves_the_tokens_of_the_rules_for_each_set_of_options(monkeypatch):
    """A text tokenized again comes from the memo (:class:`~lvgp.bow.vocabulary.TokenMemo`): the same
    tokens as the rules written out, for each set of options (lower-casing, shortest token, stop words
    are part of its key), a fresh list every call, the same words held once (interned)."""
    from lvgp.bow import vocabulary

    memo = vocabulary.TokenMemo()
    monkeypatch.setattr(vocabulary, "TOKENS", memo)
    text = "Great GREAT films, and the Film's ending: no über-cliché"
    for options, expected in (
        ({}, _tokens_written_out(text)),
        ({"lowercase": False}, _tokens_written_out(text, lowercase=False)),
        ({"min_token_len": 1, "stop_words": None}, _tokens_written_out(text, shortest=1, stop=frozenset())),
        ({"stop_words": ["film", "great"]}, _tokens_written_out(text, stop=frozenset({"film", "great"}))),
    ):
        vocab = Vocabulary(**options)
        first = vocab.tokenize(text)
        assert first == expected
        first.append("changed")  # the caller's list, not the memo's
        assert vocab.tokenize(text) == expected
    assert len(memo) == 4  # one entry a set of options
    again = Vocabulary().tokenize("a great film")
    assert again[0] is Vocabulary().tokenize(text)[0]  # "great", held once
    # documents given as tokens are not memoized, and are taken verbatim
    assert Vocabulary().tokenize(["The", "x"]) == ["The", "x"] and len(memo) == 5
    memo.clear()
    assert len(memo) == 0 and Vocabulary().tokenize(text) == _tokens_written_out(text)


def test_the_token_memo_is_bounded_and_forgets_the_least_recent_text_first(monkeypatch):
    from lvgp.bow import vocabulary

    memo = vocabulary.TokenMemo()
    monkeypatch.setattr(vocabulary, "TOKENS", memo)
    monkeypatch.setattr(vocabulary, "TOKEN_MEMO_TOKENS", 12)  # each text counts its tokens plus one
    vocab = Vocabulary()
    texts = [f"alpha beta gamma {word}" for word in ("delta", "epsilon", "zeta", "theta")]  # 4 tokens each
    for text in texts[:2]:
        vocab.tokenize(text)
    assert len(memo) == 2 and memo._tokens == 10
    vocab.tokenize(texts[0])  # the first is now the most recent
    vocab.tokenize(texts[2])  # over the bound: the second goes
    key = (texts[1], True, 3, vocabulary.ENGLISH_STOP_WORDS)
    assert memo.get(key) is None and memo.get((texts[0], *key[1:])) is not None and memo._tokens == 10
    vocab.tokenize("apple banana cherry dates elder figs grape honeydew kiwi lemon mango nectarine")  # 13: not held
    assert len(memo) == 2
    monkeypatch.setattr(vocabulary, "TOKEN_MEMO_TOKENS", 0)  # off
    memo.clear()
    assert vocab.tokenize(texts[3]) == ["alpha", "beta", "gamma", "theta"] and len(memo) == 0


def test_ragged_ids_pad_every_row_as_a_loop_would_also_when_truncating():
    """:meth:`~lvgp.bow.RaggedIds.padded`'s one flat assignment against a row-by-row loop: empty rows, rows
    longer than ``width``, a selection of rows in any order (repeated too), no row."""
    from lvgp.bow import RaggedIds

    rng = np.random.default_rng(0)
    ids = [list(rng.integers(0, 50, size=n)) for n in (0, 3, 7, 1, 0, 12)]
    ragged = RaggedIds.from_rows(ids)
    assert len(ragged) == 6 and ragged.lengths.tolist() == [0, 3, 7, 1, 0, 12]

    def loop(rows, width):
        expected = np.full((len(rows), width), PAD, dtype=np.int64)
        for i, row in enumerate(rows):
            expected[i, : min(len(row), width)] = row[:width]
        return expected

    for width in (1, 5, 12, 20):
        np.testing.assert_array_equal(ragged.padded(width=width).numpy(), loop(ids, width))
    np.testing.assert_array_equal(ragged.padded().numpy(), loop(ids, 12))  # the longest row's width
    for rows in ([2, 0, 5], [4, 0], [3, 3, 1], np.array([5, 2])):
        picked = [ids[r] for r in rows]
        width = max(1, max(map(len, picked)))
        np.testing.assert_array_equal(ragged.padded(torch.as_tensor(rows)).numpy(), loop(picked, width))
    assert ragged.padded([4, 0]).shape == (2, 1)  # two empty rows: one column of padding
    assert ragged.padded([]).shape == (0, 1) and RaggedIds.from_rows([]).padded().shape == (0, 1)
    assert RaggedIds.from_rows([[4, 2]]).padded(width=3).tolist() == [[4, 2, PAD]]
    with pytest.raises(ValueError, match="offsets"):
        RaggedIds(np.arange(3), np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError, match="offsets"):
        RaggedIds(np.arange(3), np.array([0, 2]))


def test_encode_ragged_gives_the_rows_of_encode_and_its_warning():
    """:meth:`Vocabulary.encode_ragged` holds the ids of :meth:`Vocabulary.encode`'s rows, with and without
    ``extend``, and counts the unseen words alike; a text without a known word is a row of length 0."""
    texts = ["the cat sat", "a dog ran far", "zebra quokka", "the cat and the dog", "cat"]
    vocab = Vocabulary(min_df=1, stop_words=None).fit(texts[:2])
    with pytest.warns(UnseenWordsWarning) as padded_warning:
        padded = vocab.encode(texts, on_empty="keep")
    with pytest.warns(UnseenWordsWarning) as ragged_warning:
        ragged, added = vocab.encode_ragged(texts)
    assert added == [] and str(ragged_warning[0].message) == str(padded_warning[0].message)
    assert torch.equal(ragged.padded(), padded) and ragged.lengths[2] == 0
    extend = {"zebra", "and"}
    with pytest.warns(UnseenWordsWarning):
        padded, added_padded = vocab.encode_extended(texts, extend, on_empty="keep")
    with pytest.warns(UnseenWordsWarning):
        ragged, added = vocab.encode_ragged(texts, extend)
    assert added == added_padded == ["zebra", "and"] and torch.equal(ragged.padded(), padded)
    with pytest.raises(TypeError, match="pool must be a sequence"):
        vocab.encode_ragged("the cat", name="pool")


def test_left_aligned_moves_padding_after_each_rows_words():
    from lvgp.bow.padded import left_aligned

    x = torch.tensor([[PAD, 3, PAD, 5], [1, 2, PAD, PAD], [PAD, PAD, PAD, PAD]])
    assert torch.equal(left_aligned(x), torch.tensor([[3, 5, PAD, PAD], [1, 2, PAD, PAD], [PAD] * 4]))
    aligned = torch.tensor([[4, 4, PAD], [7, PAD, PAD]])
    assert left_aligned(aligned) is aligned  # nothing to move: the tensor itself
    batched = torch.stack([x, x.flip(0)])
    assert torch.equal(left_aligned(batched)[1], left_aligned(x.flip(0)))
    # every estimator's encoder: what it fits on and predicts at is left-aligned (the blocks and mini-batches
    # are cut to their rows' number of words)
    from lvgp.base.encoding import DocumentEncoder

    encoder = DocumentEncoder()
    aligned_x = left_aligned(x)
    assert torch.equal(encoder.fit_transform(x[:2]), aligned_x[:2])
    assert torch.equal(encoder.transform(x), aligned_x) and torch.equal(encoder.transform(x, compact=True), aligned_x)


def test_the_repr_shows_the_size_and_every_setting_that_is_not_the_default():
    """Two vocabularies that tokenize differently never print alike (the open-set study's two-letter tokens printed as
    the default before); a stop-word list prints as its length."""
    assert repr(Vocabulary()) == "Vocabulary(size=unfitted)"
    assert repr(Vocabulary(min_token_len=2)) == "Vocabulary(size=unfitted, min_token_len=2)"
    assert repr(Vocabulary(min_df=2, stop_words=["a", "b"], lowercase=False)) == (
        "Vocabulary(size=unfitted, min_df=2, stop_words=<2 words>, lowercase=False)"
    )
    assert repr(Vocabulary(stop_words=None).fit(["good film", "bad film"])) == "Vocabulary(size=3, stop_words=None)"
