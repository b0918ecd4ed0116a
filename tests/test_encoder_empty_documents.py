"""Every text reaches the sentence encoder (issue 56, section 0): with ``sentence_encoder=`` a text
without a known word is still a document -- fitted in training, predicted through its vector --
for the encoder alone and for the encoder beside the word kernel, in both estimators. Before, 6 of
7 new texts got exactly the class frequencies (or the prior), and training texts of stop words
alone were refused, though the encoder reads them.

References: a kernel of the encoder alone never reads the word ids, so its predictions of a text
are the same whether or not the vocabulary knows the text's words (to rounding); a composed
kernel's word part gives such a text the empty set's value (the zero mean embedding), which
``model_`` at the packed row computes. Without an encoder the policy is unchanged: training refuses
such texts, prediction gives the prior with an ``EmptyDocumentsWarning``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from gpytorch.kernels import LinearKernel, ScaleKernel

import lvgp
from lvgp import LBFGS, Adam, GPLVSMRegressor, LDKGPClassifier, LDKSpec, MiniBatch
from lvgp.kernels.packed import FeatureKernel
from lvgp.warnings import EmptyDocumentsWarning

pytest.importorskip("transformers")

FOOD = ["a plate of sushi", "the pasta was tasty", "a bowl of ramen", "fresh bread and butter"]
TECH = ["my laptop froze", "the keyboard broke", "python code crashed", "a new graphics card"]
FILM = ["a great film", "the actors were brilliant", "a dull plot", "the movie was long"]
STOPS = ["I am OK", "it is a TV", "we are here"]  # the default vocabulary keeps none of their words
TEXTS = FOOD * 2 + TECH * 2 + FILM * 2 + STOPS
LABELS = np.array(["food"] * 8 + ["tech"] * 8 + ["film"] * 8 + ["food", "tech", "film"])
NEW = ["grilled fish", "my computer", "an actress", "sushi and code"]  # the first three: no known word
#: the dimension of the tiny encoder's vectors (conftest's tiny_encoder: hidden size 8)
DIM = 8


def encoder_only(num_words: int) -> ScaleKernel:
    """The cosine of the encoder's vectors alone (module level: the estimators may save it)."""
    return ScaleKernel(FeatureKernel(LinearKernel(), DIM, normalize=True))


@pytest.fixture
def encoder(tiny_encoder):
    words = sorted({w for t in TEXTS + NEW for w in t.lower().split()})
    made = tiny_encoder(words, 0)
    assert made.dim == DIM
    return made


def _estimator(kind: str, kernel, **options):
    settings = dict(sentence_encoder="all-MiniLM-L6-v2", optimizer=LBFGS(max_iter=15), random_state=0)
    if kind == "classifier":
        return LDKGPClassifier(kernel, **settings, **options)
    if kind == "laplace-classifier":
        return LDKGPClassifier(kernel, inference="laplace", **settings, **options)
    if kind == "variational-classifier":  # every text an inducing document (27 of the default 128)
        settings["optimizer"] = MiniBatch(batch_size=9, max_epochs=15)
        return LDKGPClassifier(kernel, inference="variational", **settings, **options)
    return GPLVSMRegressor(kernel, **settings, **options)


def _targets(kind: str) -> np.ndarray:
    if kind.endswith("classifier"):
        return LABELS
    return np.array([{"food": 1.0, "tech": -1.0, "film": 0.3}[v] for v in LABELS])


def _outputs(est, texts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lvgp.warnings.UnseenWordsWarning)
        if isinstance(est, LDKGPClassifier):
            return est.predict_proba(texts)
        return np.column_stack(est.predict(texts, return_std=True))


def _quiet_fit(est, texts, y):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*did not converge.*")
        warnings.simplefilter("ignore", lvgp.warnings.UncertaintyWarning)
        return est.fit(texts, y)


@pytest.mark.parametrize("kind", ["classifier", "laplace-classifier", "variational-classifier", "regressor"])
def test_the_encoder_alone_predicts_a_text_whatever_the_vocabulary_knows(encoder, kind):
    y = _targets(kind)
    plain = lvgp.Vocabulary()  # keeps none of STOPS' words, nor most of NEW's
    wide = lvgp.Vocabulary(stop_words=None, min_token_len=1).fit(TEXTS + NEW)  # knows every word
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyDocumentsWarning)  # no text falls back to the frequencies
        narrow_fit = _quiet_fit(_estimator(kind, encoder_only, vocabulary=plain), TEXTS, y)
        narrow = _outputs(narrow_fit, NEW)
    assert (
        (narrow_fit.encoder_ if kind.endswith("classifier") else narrow_fit._encoder)
        .vocabulary.encode(STOPS, on_empty="keep")
        .eq(lvgp.PAD)
        .all()
    )  # the stop-word texts were fitted as all-padding rows
    wide_fit = _quiet_fit(_estimator(kind, encoder_only, vocabulary=wide), TEXTS, y)
    np.testing.assert_allclose(narrow, _outputs(wide_fit, NEW), rtol=1e-9, atol=1e-12)
    if kind in ("classifier", "variational-classifier"):  # and not the class frequencies (every row the same)
        # any more (the Laplace evidence switches this random encoder's part off: near uniform by right)
        assert np.ptp(narrow[:3], axis=0).max() > 1e-6


@pytest.mark.parametrize("kind", ["classifier", "variational-classifier", "regressor"])
def test_the_composed_kernel_reads_a_text_without_a_known_word_through_its_vector(encoder, kind):
    y = _targets(kind)
    classifier = kind.endswith("classifier")
    spec = LDKSpec.plus(word_embeddings=None, learn_word_vectors=True) if classifier else LDKSpec.paper()
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyDocumentsWarning)
        est = _quiet_fit(_estimator(kind, spec), TEXTS, y)
        out = _outputs(est, NEW)
    assert np.isfinite(out).all()
    # the model at the packed rows: the word part gives the empty set's value, the encoder reads the text
    x = est.encoder_.vocabulary.encode(NEW, on_empty="keep") if classifier else None
    if classifier:
        assert x[:3].eq(lvgp.PAD).all()
        assert np.ptp(out[:3], axis=0).max() > 1e-6  # not one row of class frequencies
        packed = est._with_encoder(x, NEW, "X")
        with torch.no_grad():
            f = est.model_(packed)
            from lvgp.models.gpc import expected_softmax

            # n x C: the variational q(f) is multitask, the Dirichlet one a batch of C over n
            mean, var = (f.mean, f.variance) if kind == "variational-classifier" else (f.mean.mT, f.variance.mT)
            direct = expected_softmax(mean, var, est.predict_samples, est._class_seeds()).numpy()
        np.testing.assert_allclose(out, direct, rtol=1e-9, atol=1e-12)
    else:
        prior_std = out[:3, 1]
        assert np.ptp(out[:3, 0]) > 1e-6 and (prior_std > 0).all()  # not the one prior of empty documents


def test_without_an_encoder_the_empty_document_policy_stands():
    with pytest.raises(ValueError, match=r"training documents have no word in the vocabulary"):
        LDKGPClassifier(optimizer=LBFGS(max_iter=2)).fit(TEXTS, LABELS)
    clf = _quiet_fit(LDKGPClassifier(optimizer=LBFGS(max_iter=3), random_state=0), TEXTS[:-3], LABELS[:-3])
    with pytest.warns(EmptyDocumentsWarning, match="given the training class frequencies"):
        proba = clf.predict_proba(["grilled fish"])
    np.testing.assert_array_equal(proba[0], clf.class_prior_)


def test_a_study_on_short_texts_predicts_its_empty_test_texts_through_the_encoder(encoder, tmp_path):
    """The CLI study of the issue: most test texts have no word the vocabulary cut keeps. The encoder
    methods predict them through their vectors (no EmptyDocumentsWarning recorded); the word-only
    classifier gives them the class frequencies, and says so."""
    rng = np.random.default_rng(0)
    keyword = {"food": "tasty food", "tech": "computer trouble", "film": "cinema review"}
    rows = []
    for i in range(60):
        label = ("food", "tech", "film")[i % 3]
        text = {"food": FOOD, "tech": TECH, "film": FILM}[label][rng.integers(4)]
        # two texts of three carry their class's keywords, which the vocabulary cut keeps; the rest
        # only words too rare for it (empty test texts, for the word kernel)
        rows.append(f"{keyword[label]} {text}\t{label}" if i % 9 < 6 else f"{text}\t{label}")
    tsv = tmp_path / "short.tsv"
    tsv.write_text("text\tlabel\n" + "\n".join(rows) + "\n")
    methods = "ldk-gpc,encoder-gpc,bow-gpc-encoder"
    argv = ["compare", "classification", "--dataset", str(tsv), "--train-sizes", "24", "--splits", "1"]
    argv += ["--min-df-fraction", "0.15", "--ldk-max-iter", "3", "--methods", methods]
    argv += ["--out", str(tmp_path / "out"), "--quiet"]
    from lvgp.experiments.cli import main

    assert main(argv) == 0
    records = json.loads((tmp_path / "out" / "results.json").read_text())
    assert all(r["empty_test"] > 0 for r in records)
    for record in records:
        warned = record["warnings"]
        if record["method"] == "ldk-gpc":
            assert "EmptyDocumentsWarning" in warned
        else:
            assert "EmptyDocumentsWarning" not in warned, (record["method"], warned)


def test_the_regressor_with_an_encoder_packs_each_block_as_the_whole_corpus(encoder, monkeypatch):
    """With a sentence encoder the regressor pads the texts block by block and packs each block with its
    texts' vectors (``RaggedDocuments``): the predictions of the whole packed corpus, to rounding, texts
    without a known word included (their vectors read, not the prior)."""
    import lvgp.models.prediction_blocks as prediction_blocks
    from lvgp.base.encoding import DocumentEncoder

    reg = GPLVSMRegressor(sentence_encoder="all-MiniLM-L6-v2", optimizer=Adam(max_iter=15), random_state=0)
    est = _quiet_fit(reg, TEXTS, _targets("regressor"))  # the default kernel: word vectors' draws, the encoder
    monkeypatch.setattr(prediction_blocks, "PREDICT_BLOCK", 3)
    texts = NEW + ["sushi and code and a plate of ramen with fresh bread"] + TEXTS[:5]
    unpadded = _outputs(est, texts)
    monkeypatch.setattr(DocumentEncoder, "predicting_unpadded", DocumentEncoder.predicting)
    np.testing.assert_allclose(unpadded, _outputs(est, texts), rtol=1e-12, atol=1e-12)
    assert np.ptp(unpadded[:3, 0]) > 1e-6  # the encoder reads the texts without a known word
