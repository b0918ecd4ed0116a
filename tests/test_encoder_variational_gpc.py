"""The variational GP classifier with a sentence encoder beside its words: inducing documents packed
as the training documents are (``[encoder vector | word ids]``), chosen by k-means++ on the words and
the vectors together.

References: k-means++ on the dense side-by-side vectors built by hand (scikit-learn's seeding, the
same centres); ``q(f)`` at packed documents by the SVGP's equations written out with dense matrices
and a kernel assembled by hand (the word part on the ids plus mu times the cosine of the vectors),
against lvgp's marginals and gpytorch's own ``q(f)``; a batch cut to its longest text against the
same batch at the corpus's width (the cut keeps every vector column and word); a saved classifier
reloaded to the bit; the classification study's encoder methods with ``--gpc-inference variational``."""

from __future__ import annotations

import json
import math
import warnings

import gpytorch
import numpy as np
import pytest
import torch
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import normalize

pytest.importorskip("transformers")

from lvgp import LDKGPClassifier, MiniBatch  # noqa: E402
from lvgp.base.numerics import exact_numerics  # noqa: E402
from lvgp.bow.padded import PAD, documents_at, pad_to_common_width, padded_to_counts  # noqa: E402
from lvgp.kernels import LDKSpec, shared_evaluation  # noqa: E402
from lvgp.kernels.packed import FeatureKernel, WordSetKernel, packed_widths  # noqa: E402
from lvgp.models.inducing import choose_inducing_documents, whitened_softmax_elbo  # noqa: E402
from lvgp.warnings import UnseenWordsWarning  # noqa: E402

FOOD = ["a plate of sushi", "the pasta was tasty", "a bowl of ramen", "fresh bread and butter", "rice and fish"]
TECH = ["my laptop froze", "the keyboard broke", "python code crashed", "a new graphics card", "the disk failed"]
FILM = ["a great film", "the actors were brilliant", "a dull plot", "the movie was long", "a funny scene"]
STOPS = ["I am OK", "it is a TV"]  # the default vocabulary keeps none of their words: the encoder reads them
TEXTS = FOOD * 2 + TECH * 2 + FILM * 2 + STOPS
LABELS = np.array(["food"] * 10 + ["tech"] * 10 + ["film"] * 10 + ["food", "tech"])
NEW = ["grilled fish", "my computer crashed", "an actress", "sushi and code"]
SPEC = LDKSpec(latent_dim=2, rho=0.1, identity_weight="balanced")


@pytest.fixture
def encoder(tiny_encoder):
    return tiny_encoder(sorted({w for t in TEXTS + NEW for w in t.lower().split()}), 1)


def _fit(encoder, **options):
    options = {
        "sentence_encoder": encoder,
        "inference": "variational",
        "num_inducing": 8,
        "optimizer": MiniBatch(batch_size=10, max_epochs=8),
        "random_state": 0,
        **options,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LDKGPClassifier(SPEC, **options).fit(TEXTS, LABELS)


def _strategy(clf):
    return clf.model_.variational_strategy.base_variational_strategy


def _packed_training(clf):
    return clf._train[0]


def test_the_inducing_documents_are_training_rows_chosen_on_words_and_vectors_alike(encoder):
    clf = _fit(encoder)
    x, d = _packed_training(clf), encoder.dim
    ids, vectors = x[:, d:].long(), x[:, :d]
    inducing = _strategy(clf).inducing_points
    assert inducing.dtype == torch.float64 and inducing.shape[0] == 8
    width = inducing.shape[1]  # each an unchanged training row, cut to the longest of them
    same = (inducing[:, None, :] == x[None, :, :width]).all(-1)
    assert same.any(1).all() and len(set(same.float().argmax(1).tolist())) == 8
    idx = choose_inducing_documents(ids, clf.encoder_.num_words, 8, "kmeans++", 0, vectors)
    # by hand: scikit-learn's seeding on the dense side-by-side vectors, each part normalized, times 1/sqrt 2
    counts = normalize(padded_to_counts(ids, clf.encoder_.num_words).toarray().astype(np.float64))
    dense = np.hstack([counts, normalize(vectors.numpy())]) / math.sqrt(2)
    _, chosen = kmeans_plusplus(dense, 8, random_state=0)
    np.testing.assert_array_equal(idx, np.sort(chosen))
    # a text of stop words alone is a candidate (its vector is a point of the kernel's input), and with
    # as many inducing documents as texts every text is one
    assert ids[-2:].eq(PAD).all()
    np.testing.assert_array_equal(
        choose_inducing_documents(ids, clf.encoder_.num_words, 100, "kmeans++", 0, vectors), np.arange(len(TEXTS))
    )
    with pytest.raises(ValueError, match="features must hold a vector a document: 3 rows for 32"):
        choose_inducing_documents(ids, clf.encoder_.num_words, 8, "kmeans++", 0, vectors[:3])


def test_q_f_at_packed_documents_is_the_svgp_marginal_of_the_kernel_by_hand(encoder):
    clf = _fit(encoder)
    model, likelihood = clf.model_, clf.likelihood_
    x, d = _packed_training(clf), encoder.dim
    rows = torch.tensor([0, 3, 11, 17, 24, 30, 31])  # the last two: no known word
    batch = documents_at(x, rows, packed_widths(x, d)[rows])
    strategy = _strategy(clf)
    z = strategy.inducing_points
    word_part, encoder_part = model.covar_module.base_kernel.kernels
    assert isinstance(word_part, WordSetKernel) and isinstance(encoder_part, FeatureKernel)

    def kernel(a, b):  # the word kernel on the ids plus mu times the cosine of the vectors, a class's scale
        unit_a = torch.nn.functional.normalize(a[:, :d], dim=-1)
        unit_b = torch.nn.functional.normalize(b[:, :d], dim=-1)
        ids_a, ids_b = pad_to_common_width(a[:, d:].long(), b[:, d:].long())
        words = word_part.base.forward(ids_a, ids_b).to_dense()  # (the empty set's row where no word)
        both = words + encoder_part.base.variance.squeeze() * unit_a @ unit_b.T
        return model.covar_module.outputscale.reshape(-1, 1, 1) * both  # C x |a| x |b|

    model.train()
    with torch.no_grad(), exact_numerics():
        jitter = strategy.jitter_val
        k_zz, k_zx = kernel(z, z), kernel(z, batch)
        k_xx = kernel(batch, batch).diagonal(dim1=-2, dim2=-1)
        chol = torch.linalg.cholesky(k_zz + jitter * torch.eye(len(z), dtype=torch.float64))
        a = torch.linalg.solve_triangular(chol, k_zx, upper=False)  # C x M x B
        m, s = strategy.variational_moments()
        mean = model.mean_module.constant.reshape(-1, 1) + (a.mT @ m.unsqueeze(-1)).squeeze(-1)
        var = k_xx + jitter + (a * ((s @ s.mT - torch.eye(len(z), dtype=torch.float64)) @ a)).sum(-2)
        mine_mean, mine_var = strategy.training_marginals(batch)
        torch.testing.assert_close(mine_mean, mean, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(mine_var, var, rtol=1e-10, atol=1e-12)
        q_f = model(batch)  # gpytorch's multitask q(f): B x C
        torch.testing.assert_close(q_f.mean, mean.mT, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(q_f.variance, var.mT, rtol=1e-10, atol=1e-12)
        # the step's ELBO reads those marginals: its likelihood term at the same draws, by hand
        y = torch.as_tensor(np.searchsorted(clf.classes_, LABELS[rows.numpy()]))
        draws = torch.randn(5, len(rows), 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(TEXTS), combine_terms=False)
        _, kl, log_prior = mll(q_f, y)
        f = mean.mT + var.mT.sqrt() * draws
        expected = torch.log_softmax(f, -1)[:, torch.arange(len(rows)), y].mean(0).mean()
        elbo = whitened_softmax_elbo(mll, batch, y, draws)
        assert float(elbo) == pytest.approx(float(expected - kl + log_prior), rel=1e-10)


def test_a_batch_cut_to_its_longest_text_keeps_every_vector_column_and_word(encoder):
    clf = _fit(encoder)
    x, d = _packed_training(clf), encoder.dim
    mll = gpytorch.mlls.VariationalELBO(clf.likelihood_, clf.model_, num_data=len(TEXTS))
    clf.model_.train()
    widths = packed_widths(x, d)
    # a vector that reads as padding is not: the widths are the words' (at least one column) beyond d
    with_pad_value = x.clone()
    with_pad_value[:, 0] = PAD
    torch.testing.assert_close(packed_widths(with_pad_value, d), widths, rtol=0, atol=0)
    for rows in (torch.tensor([0, 1, 2]), torch.tensor([30, 31]), torch.arange(len(TEXTS))):
        cut = documents_at(x, rows, widths[rows])
        assert cut.shape[1] < x.shape[1] or len(rows) == len(TEXTS)
        if rows[0] == 30:  # texts of no known word: one column of PAD beside the vectors
            assert cut.shape[1] == d + 1 and cut[:, d:].eq(PAD).all()
        y = torch.as_tensor(np.searchsorted(clf.classes_, LABELS[rows.numpy()]))
        draws = torch.randn(4, len(rows), 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
        with torch.no_grad(), exact_numerics(), shared_evaluation(clf.model_):
            loss_cut = whitened_softmax_elbo(mll, cut, y, draws)
        with torch.no_grad(), exact_numerics(), shared_evaluation(clf.model_):
            loss_full = whitened_softmax_elbo(mll, x[rows], y, draws)
        assert float(loss_cut) == pytest.approx(float(loss_full), rel=1e-12)


def test_a_mini_batch_fit_predicts_every_text_and_reloads_to_the_bit(encoder, tmp_path):
    clf = _fit(encoder, sentence_encoder="all-MiniLM-L6-v2", optimizer=MiniBatch(batch_size=10, max_epochs=40))
    assert clf.n_iter_ == 40 and np.isfinite(clf.loss_curve_).all()
    assert clf.loss_curve_[-1] < clf.loss_curve_[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnseenWordsWarning)
        proba = clf.predict_proba(NEW)
        np.testing.assert_allclose(clf.predict_proba(NEW, block=1), proba, rtol=1e-9, atol=1e-12)
        scores = clf.score_samples(NEW)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert np.isfinite(scores).all()
    assert clf.score(TEXTS, LABELS) > 0.9  # the words tell the classes apart
    path = tmp_path / "gpc.pt"
    clf.save(path)
    loaded = LDKGPClassifier.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnseenWordsWarning)
        np.testing.assert_array_equal(loaded.predict_proba(NEW), proba)
    torch.testing.assert_close(_strategy(loaded).inducing_points, _strategy(clf).inducing_points, rtol=0, atol=0)


def test_the_classification_studys_encoder_methods_run_with_the_variational_inference(toy_topics_tsv, tmp_path):
    from lvgp.experiments.cli import main

    methods = "encoder-gpc,bow-gpc-encoder"
    argv = ["compare", "classification", "--dataset", toy_topics_tsv, "--train-sizes", "24", "--splits", "1"]
    argv += ["--methods", methods, "--gpc-inference", "variational", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    records = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {r["method"] for r in records} == set(methods.split(","))
    for record in records:
        assert 0 <= record["accuracy"] <= 1 and np.isfinite(record["log_loss"])
    with pytest.raises(SystemExit):  # a selection among sub-compositions needs an evidence or closed-form LOO
        main([*argv, "--part-selection", "loo", "--out", str(tmp_path / "loo")])


def test_inducing_documents_of_no_known_word_keep_one_word_column(encoder, monkeypatch):
    """Inducing documents cut to their widest: where every one is a text of stop words alone, one column of
    ``PAD`` stays beside the vectors (cut to the vectors alone, they were no packed documents)."""
    import lvgp.models.gpc.inference as inference

    monkeypatch.setattr(inference, "choose_inducing_documents", lambda *args: np.array([30, 31]))
    clf = _fit(encoder, optimizer=MiniBatch(max_epochs=3))
    inducing = _strategy(clf).inducing_points
    assert inducing.shape == (2, encoder.dim + 1) and inducing[:, encoder.dim :].eq(PAD).all()
    torch.testing.assert_close(inducing[:, : encoder.dim], _packed_training(clf)[30:, : encoder.dim])
    assert np.isfinite(clf.loss_curve_).all()
