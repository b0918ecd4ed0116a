"""``benchmarks/open_set_dev.py``'s whole-bag emulation (issue 57): a GP word list fitted on the labelled
and the scored texts, the idf on the labelled ones, gives the GP's tf-idf cosine of each scored text's
whole bag of words (its unseen words in its norm at the largest idf), checked against that cosine
computed word by word; and the classifier reads it."""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np
import pytest

from lvgp.bow.weighting import idf_weights
from lvgp.kernels import BagOfWordsKernel
from tests._benchmarks import benchmark_module

dev = benchmark_module("open_set_dev.py", "_open_set_dev")

LABELLED = ["good great film great", "bad awful film plot", "money bank loan loan", "bank rate money"]
SCORED = ["great unseen words here film film", "totally novel topic entirely", "bank money", "awful awful plot twist"]


def test_the_whole_bag_vocabulary_gives_the_cosine_of_the_whole_bags():
    vocabulary = dev.whole_bag_vocabulary(LABELLED, SCORED)
    labelled = vocabulary.encode(LABELLED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scored = vocabulary.encode(SCORED, on_empty="keep")
    idf = idf_weights(labelled, len(vocabulary))  # the GP's: its training documents' idf
    kernel = BagOfWordsKernel(len(vocabulary), "cosine", word_weights=idf).double()
    emulated = kernel(scored, labelled).to_dense().detach().numpy()

    # the reference: each text's tf-idf over all its words, df among the labelled texts (0 for a word they lack)
    df = collections.Counter(w for t in LABELLED for w in set(vocabulary.tokenize(t)))
    n = len(LABELLED)

    def bag(text):
        counts = collections.Counter(vocabulary.tokenize(text))
        return {w: c * (math.log((1 + n) / (1 + df[w])) + 1) for w, c in counts.items()}

    def cosine(a, b):
        dot = sum(v * b.get(w, 0.0) for w, v in a.items())
        return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))

    reference = np.array([[cosine(bag(s), bag(t)) for t in LABELLED] for s in SCORED])
    np.testing.assert_allclose(emulated, reference, rtol=1e-12, atol=1e-15)
    # the library's policy drops the unseen words: the first text is then nearer the labelled ones
    dropped = dev.whole_bag_vocabulary(LABELLED, [])
    idf_dropped = idf_weights(dropped.encode(LABELLED), len(dropped))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = dropped.encode(SCORED[:1])
    near = BagOfWordsKernel(len(dropped), "cosine", word_weights=idf_dropped).double()
    assert near(first, dropped.encode(LABELLED)).to_dense()[0, 0].item() > reference[0, 0] + 0.1


def test_the_whole_bag_study_gives_its_gp_classifiers_that_word_list(toy_topics_tsv):
    study = dev.variant_study(whole_bag=True, sublinear_tf=False)(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    study_without = dev.variant_study(whole_bag=False, sublinear_tf=False)(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    cell = {"method": "gpc-bow", "split": 0, "params": {"per_class": 3}}
    model = study.estimator(cell)
    split = study.split(0)
    words = study_without.estimator(cell).vocabulary  # the study's own tokens, unfitted
    expected = dev.whole_bag_vocabulary(split.training(3)[0], split.test_texts, words)
    assert set(model.vocabulary.words) == set(expected.words)
    assert model.vocabulary.min_token_len == words.min_token_len == 2  # the study GP's two-letter tokens kept
    assert study.estimator({**cell, "method": "svm"}).get_params().get("vocabulary") is None


def test_the_sublinear_study_gives_its_tf_idf_gps_sublinear_counts(toy_topics_tsv):
    """``--gp-tf sublinear``: the GP classifiers with a tf-idf part count words as ``1 + ln c`` (their
    fitted kernels' ``BagOfWordsKernel``), their vocabulary the study's; other methods are as they were."""
    from lvgp.kernels import BagOfWordsKernel

    study = dev.variant_study(whole_bag=False, sublinear_tf=True)(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    texts, labels = study.split(0).training(3)
    for method in ("gpc-bow", "gpc-bow-encoder-rbf"):
        model = study.estimator({"method": method, "split": 0, "params": {"per_class": 3}})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(list(texts), labels)
        parts = [m for m in model.model_.covar_module.modules() if isinstance(m, BagOfWordsKernel)]
        assert parts and all(p.sublinear_tf for p in parts), method
        assert model.vocabulary.min_token_len == 2  # the study's own word list (rule 27), fitted on the labelled texts
    assert study.estimator({"method": "svm", "split": 0, "params": {"per_class": 3}}).get_params().get("kernel") is None
    # the study's own (None): gpc-bow sublinear (chosen on dev), the encoder GPs' tf-idf raw; raw (False) for all
    for counts, expected in ((None, {"gpc-bow": True, "gpc-bow-encoder-rbf": False}), (False, {"gpc-bow": False})):
        own = dev.variant_study(whole_bag=False, sublinear_tf=counts)(
            dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
        )
        for method, sublinear in expected.items():
            model = own.estimator({"method": method, "split": 0, "params": {"per_class": 3}})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(list(texts), labels)
            parts = [m for m in model.model_.covar_module.modules() if isinstance(m, BagOfWordsKernel)]
            assert [p.sublinear_tf for p in parts] == [sublinear], (counts, method)


def _fitted_variant_gp(tsv, encoder_weight: str, per_class: int):
    """The study's gpc-bow-encoder-rbf of the toy corpus's first split under ``--encoder-weight``, fitted."""
    study = dev.variant_study(whole_bag=False, sublinear_tf=None, encoder_weight=encoder_weight)(
        dataset=tsv, unknown_classes=1, per_class=(per_class,), splits=1, ldk_max_iter=5
    )
    texts, labels = study.split(0).training(per_class)
    model = study.estimator({"method": "gpc-bow-encoder-rbf", "split": 0, "params": {"per_class": per_class}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(list(texts), labels)


@pytest.mark.parametrize("unit", [False, True])
def test_the_fixed_weight_study_keeps_the_encoder_part_where_both_parts_weigh_alike(toy_topics_tsv, unit):
    """``--encoder-weight fixed`` (and ``fixed-unit``): the tf-idf GPs' encoder part keeps its weight at the tf-idf
    cosine's self-similarity, 1, through the fit (and the RBF its length-scale 1); the counts stay the study's."""
    from lvgp.kernels import BagOfWordsKernel

    model = _fitted_variant_gp(toy_topics_tsv, "fixed-unit" if unit else "fixed", per_class=3)
    part = model.model_.covar_module.base_kernel.kernels[1]
    assert float(part.outputscale) == pytest.approx(1.0, abs=1e-6) and not part.raw_outputscale.requires_grad
    rbf = part.base_kernel.base
    assert (float(rbf.lengthscale) == pytest.approx(1.0, abs=1e-6)) == unit
    bags = [m for m in model.model_.covar_module.modules() if isinstance(m, BagOfWordsKernel)]
    assert [b.sublinear_tf for b in bags] == [False]


def test_the_matern_variant_swaps_the_stationary_part_alone(toy_topics_tsv):
    """``--encoder-part matern`` (rule 21): gpc-bow-encoder-rbf's encoder part is a Matern 5/2 kernel in place of the
    RBF, fitted as the study fits the RBF (weight and length-scale free), and the study's encoder_weight is kept."""
    from gpytorch.kernels import MaternKernel, RBFKernel

    from lvgp.experiments.open_set import OpenSetStudy

    study = dev.variant_study(whole_bag=False, encoder_part="matern")(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    texts, labels = study.split(0).training(3)
    model = study.estimator({"method": "gpc-bow-encoder-rbf", "split": 0, "params": {"per_class": 3}})
    plain = OpenSetStudy(dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5)
    assert (
        model.encoder_weight
        == plain.estimator({"method": "gpc-bow-encoder-rbf", "split": 0, "params": {"per_class": 3}}).encoder_weight
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(list(texts), labels)
    kinds = [type(m) for m in model.model_.covar_module.modules() if isinstance(m, (MaternKernel, RBFKernel))]
    assert kinds == [MaternKernel] and next(
        m for m in model.model_.covar_module.modules() if isinstance(m, MaternKernel)
    ).nu == pytest.approx(2.5)
    part = model.model_.covar_module.base_kernel.kernels[1]
    assert part.raw_outputscale.requires_grad


def _fitted_encoder_part_variant(toy_topics_tsv, encoder_part: str):
    """The ``--encoder-part`` variant study of the toy corpus, its split's 3 labelled texts a class and its
    gpc-bow-encoder-rbf fitted on them."""
    study = dev.variant_study(whole_bag=False, encoder_part=encoder_part)(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    texts, labels = study.split(0).training(3)
    model = study.estimator({"method": "gpc-bow-encoder-rbf", "split": 0, "params": {"per_class": 3}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(list(texts), labels)
    return study, texts, labels, model


def test_the_cosine_rbf_variant_adds_a_cosine_part_beside_the_rbf(toy_topics_tsv):
    """``--encoder-part cosine-rbf`` (rule 25): gpc-bow-encoder-rbf's encoder parts are a cosine and the RBF, each
    with its own fitted weight, beside the tf-idf cosine."""
    from gpytorch.kernels import LinearKernel, RBFKernel

    from lvgp.kernels.composition import encoder_part_weights, part_names

    study, texts, labels, model = _fitted_encoder_part_variant(toy_topics_tsv, "cosine-rbf")
    composed = model.model_.covar_module.base_kernel
    assert part_names(composed) == ("words", "encoder", "encoder-2")
    assert isinstance(composed.kernels[1].base, LinearKernel) and isinstance(
        composed.kernels[2].base_kernel.base, RBFKernel
    )
    assert all(getattr(m, "raw_" + name).requires_grad for m, name in encoder_part_weights(composed))


def test_the_whitening_map_is_the_mahalanobis_metric_at_the_unit_vectors_mean_distance():
    """``whitening_map``: the mapped vectors' squared distances are the Ledoit-Wolf Mahalanobis ones (within the
    classes or overall), computed here pair by pair, times one constant that gives them the unit vectors' mean."""
    from sklearn.covariance import LedoitWolf

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(30, 6)) * np.array([3.0, 1.0, 1.0, 0.5, 0.2, 0.1])
    labels = np.repeat(["a", "b", "c"], 10)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    unit_sq = ((unit[:, None, :] - unit[None, :, :]) ** 2).sum(-1)
    for within in (True, False):
        if within:
            centred = unit.copy()
            for c in "abc":
                centred[labels == c] -= unit[labels == c].mean(axis=0)
        else:
            centred = unit - unit.mean(axis=0)
        precision = LedoitWolf(assume_centered=True).fit(centred).precision_
        by_hand = np.array([[(u - v) @ precision @ (u - v) for v in unit] for u in unit])
        mapped = unit @ dev.whitening_map(vectors, labels, within=within)
        sq = ((mapped[:, None, :] - mapped[None, :, :]) ** 2).sum(-1)
        np.testing.assert_allclose(sq, by_hand * unit_sq.mean() / by_hand.mean(), rtol=1e-8, atol=1e-12)
        assert sq.mean() == pytest.approx(unit_sq.mean())


@pytest.mark.parametrize("part", ["within-rbf", "whitened-rbf"])
def test_the_whitened_variants_give_the_rbf_the_mapped_unit_vectors(toy_topics_tsv, part):
    """``--encoder-part within-rbf`` / ``whitened-rbf``: gpc-bow-encoder-rbf's encoder part is an RBF of the unit
    vectors mapped by ``whitening_map`` of the split's labelled texts, its Gram the RBF of the mapped vectors."""
    import torch
    from gpytorch.kernels import RBFKernel

    from lvgp.encoders import resolve_encoder

    study, texts, labels, model = _fitted_encoder_part_variant(toy_topics_tsv, part)
    vectors = np.asarray(resolve_encoder(study.encoder, study.device).encode(list(texts)))
    matrix = dev.whitening_map(vectors, labels, within=part == "within-rbf")
    whitened = model.model_.covar_module.base_kernel.kernels[1].base_kernel.base
    np.testing.assert_allclose(whitened.matrix.numpy(), matrix, rtol=1e-12)
    assert isinstance(whitened.base, RBFKernel) and whitened.is_stationary
    z = torch.as_tensor(vectors / np.linalg.norm(vectors, axis=1, keepdims=True) @ matrix)
    lengthscale = float(whitened.base.lengthscale.detach())
    expected = torch.exp(-0.5 * torch.cdist(z, z) ** 2 / lengthscale**2)
    unit = torch.nn.functional.normalize(torch.as_tensor(vectors), dim=-1)
    with torch.no_grad():
        got = whitened(unit, unit).to_dense()
    torch.testing.assert_close(got, expected, rtol=1e-8, atol=1e-10)


def test_the_pseudo_count_variant_sets_every_gp_alone(toy_topics_tsv):
    """``--alpha-epsilon`` (rule 22): every GP classifier of the study gets the pseudo-count, the baselines nothing."""
    from lvgp.experiments.open_set import OpenSetStudy

    options = {"dataset": toy_topics_tsv, "unknown_classes": 1, "per_class": (3,), "splits": 1, "ldk_max_iter": 5}
    study = dev.variant_study(whole_bag=False, alpha_epsilon=0.01)(**options)
    plain = OpenSetStudy(**options)
    for method in ("gpc-bow-encoder-rbf", "gpc-bow"):
        cell = {"method": method, "split": 0, "params": {"per_class": 3}}
        assert plain.estimator(cell).alpha_epsilon == 1e-6 and study.estimator(cell).alpha_epsilon == 0.01
    cell = {"method": "tfidf-encoder-logreg", "split": 0, "params": {"per_class": 3}}
    assert study.estimator(cell).get_params() == plain.estimator(cell).get_params()


def test_the_noise_prior_variant_sets_every_gp_alone(toy_topics_tsv):
    """``--noise-prior-sd`` (rule 32): ``none`` switches the GP classifiers' prior off, a number sets its sd, the
    default keeps the library's; the baselines get nothing; anything else is refused, naming the option."""
    from lvgp.experiments.open_set import OpenSetStudy

    options = {"dataset": toy_topics_tsv, "unknown_classes": 1, "per_class": (3,), "splits": 1, "ldk_max_iter": 5}
    assert dev.noise_prior_sd_argument("none") is None and dev.noise_prior_sd_argument("0.5") == 0.5
    for bad in ("0", "-1", "inf"):
        with pytest.raises(ValueError, match="--noise-prior-sd"):
            dev.noise_prior_sd_argument(bad)
    plain = OpenSetStudy(**options)
    for value in (None, 0.5):
        study = dev.variant_study(whole_bag=False, noise_prior_sd=value)(**options)
        for method in ("gpc-bow-encoder-rbf", "gpc-bow"):
            cell = {"method": method, "split": 0, "params": {"per_class": 3}}
            assert plain.estimator(cell).noise_prior_sd == 1.0 and study.estimator(cell).noise_prior_sd == value
        cell = {"method": "tfidf-encoder-logreg", "split": 0, "params": {"per_class": 3}}
        assert study.estimator(cell).get_params() == plain.estimator(cell).get_params()
    cell = {"method": "gpc-bow", "split": 0, "params": {"per_class": 3}}
    assert dev.variant_study(whole_bag=False)(**options).estimator(cell).noise_prior_sd == 1.0


def test_the_inference_variant_builds_the_gps_under_it_scored_by_the_energy(toy_topics_tsv):
    """``--gpc-inference`` (rule 39): every GP classifier of the study under that inference, as the classification
    study's ``with_gpc_inference`` builds it (the Laplace fit untempered, the variational one tempered on early
    stopping's held-out texts), scored by the energy with the fit's own encoder weight; the baselines as they are."""
    from lvgp.experiments.open_set import OpenSetStudy

    options = {"dataset": toy_topics_tsv, "unknown_classes": 1, "per_class": (3,), "splits": 1, "ldk_max_iter": 5}
    plain = OpenSetStudy(**options)
    for inference, calibration in (("laplace", None), ("variational", "temperature")):
        study = dev.variant_study(whole_bag=False, gpc_inference=inference)(**options)
        for method in ("gpc-bow-encoder-rbf", "gpc-bow"):
            cell = {"method": method, "split": 0, "params": {"per_class": 3}}
            model, before = study.estimator(cell), plain.estimator(cell)
            assert before.inference == "dirichlet" and before.novelty_score == "lifted-energy"
            assert (model.inference, model.calibration, model.novelty_score) == (inference, calibration, "energy")
            assert model.encoder_weight == "evidence" and model.kernel is not None
        cell = {"method": "tfidf-encoder-logreg", "split": 0, "params": {"per_class": 3}}
        assert study.estimator(cell).get_params() == plain.estimator(cell).get_params()
    assert OpenSetStudy.gpc_inference == "dirichlet"  # the variant's class, not the study's


def test_the_mixed_corpus_takes_both_corpora_s_larger_classes_each_cut_to_the_cap(monkeypatch):
    """``20ng+r52``: every class of at least MIXED_MIN_TEXTS texts of either corpus, labels prefixed by the corpus,
    each class cut to MIXED_CAP texts drawn without repeats from its own; the smaller classes left out."""
    from types import SimpleNamespace

    from lvgp.datasets import loaders

    monkeypatch.setattr(dev, "MIXED_MIN_TEXTS", 3)
    monkeypatch.setattr(dev, "MIXED_CAP", 4)
    corpora = {
        "20ng": SimpleNamespace(train_texts=[f"ng {i}" for i in range(9)], train_labels=["a"] * 6 + ["b"] * 3),
        "r52": SimpleNamespace(train_texts=[f"re {i}" for i in range(7)], train_labels=["a"] * 2 + ["c"] * 5),
    }
    monkeypatch.setattr(loaders, "load_corpus", lambda name, task: corpora[name])
    corpus = dev.mixed_corpus()
    labels = corpus.train_labels.tolist()
    assert collections.Counter(labels) == {"20ng:a": 4, "20ng:b": 3, "r52:c": 4}  # r52's "a" (2 texts) left out
    assert len(set(corpus.train_texts)) == len(corpus.train_texts) == 11
    for text, label in zip(corpus.train_texts, labels):
        source, i = text.split()
        kept = corpora["20ng" if source == "ng" else "r52"].train_labels[int(i)]
        assert label == f"{'20ng' if source == 'ng' else 'r52'}:{kept}"
    assert dev.UNKNOWN["20ng+r52"] == 5 and corpus.test_texts == []


def test_the_training_tsv_cuts_each_text_to_its_first_words(tmp_path):
    texts = ["one two\tthree four five", "a b", "short text here\nand more", "x y z"]
    labels = ["p", "q", "p", "q"]
    whole = tmp_path / "whole.tsv"
    assert dev.write_training_tsv(whole, texts, labels) == 0
    assert whole.read_text().splitlines() == [
        "text\tlabel",
        "one two three four five\tp",
        "a b\tq",
        "short text here and more\tp",
        "x y z\tq",
    ]
    cut = tmp_path / "cut.tsv"
    assert dev.write_training_tsv(cut, texts, labels, first_words=3) == 1  # "a b": fewer than 3 words
    assert cut.read_text().splitlines() == ["text\tlabel", "one two three\tp", "short text here\tp", "x y z\tq"]


def test_the_dev_runs_take_the_unknown_classes_given(tmp_path, monkeypatch):
    """``--unknown-classes``: every corpus's draws hold that many unknown classes in place of its default."""
    from types import SimpleNamespace

    from lvgp.datasets import loaders

    corpus = SimpleNamespace(train_texts=["one two three", "four five six"], train_labels=["p", "q"])
    monkeypatch.setattr(loaders, "load_corpus", lambda name, task: corpus)
    default = dev.dev_runs(tmp_path, "r8,20ng", "10", 3, 0, False)
    assert [run[2] for run in default] == [dev.UNKNOWN["r8"], dev.UNKNOWN["20ng"]]
    given = dev.dev_runs(tmp_path, "r8,20ng", "10", 3, 0, False, None, 7)
    assert [run[2] for run in given] == [7, 7] and [run[:2] for run in given] == [run[:2] for run in default]


def test_paired_against_pairs_each_draw_with_the_baselines_own():
    """Each method's accuracy minus the baseline's on the same (corpus, seed, split, size), by hand."""

    def record(method, seed, split, n, accuracy):
        return {"corpus": "c", "seed": seed, "split": split, "per_class": n, "method": method, "accuracy": accuracy}

    records = [
        record("lr", 1, 0, 10, 0.90),
        record("lr", 1, 1, 10, 0.80),
        record("lr", 2, 0, 10, 0.70),
        record("gp", 1, 0, 10, 0.95),
        record("gp", 1, 1, 10, 0.75),
        record("gp", 2, 0, 10, 0.72),
        record("gp", 2, 0, 50, 0.99),  # no baseline at 50: no row
    ]
    table = dev.paired_against(records, "lr")
    diffs = np.array([0.05, -0.05, 0.02])
    rows = [line for line in table.splitlines() if line.startswith("| c |")]
    assert rows == [f"| c | 10 | gp | {0.80666667:.4f} | {diffs.mean():+.4f} | {diffs.std(ddof=1):.4f} | 2 of 3 |"]
    # the same pairing of another key: each record's own score's AUROC
    auroc = [{**r, "oos_auroc": 1 - r["accuracy"]} for r in records]
    rows = [line for line in dev.paired_against(auroc, "lr", "oos_auroc").splitlines() if line.startswith("| c |")]
    assert rows == [f"| c | 10 | gp | {1 - 0.80666667:.4f} | {-diffs.mean():+.4f} | {diffs.std(ddof=1):.4f} | 1 of 3 |"]


def test_paired_with_run_pairs_each_method_with_its_run_saved_elsewhere(tmp_path):
    """``--paired-with DIR``: this run's records against the same method's records saved in DIR (per seed), draw
    by draw, in accuracy and in the own score's AUROC."""
    import json

    def record(split, accuracy, auroc):
        return {"method": "gp", "split": split, "per_class": 10, "accuracy": accuracy, "oos_auroc": auroc}

    for seed, values in ((1, [(0.80, 0.70), (0.90, 0.60)]), (2, [(0.70, 0.75), (0.85, 0.80)])):
        (tmp_path / f"seed{seed}").mkdir()
        saved = [record(split, *v) for split, v in enumerate(values)]
        (tmp_path / f"seed{seed}" / "toy.json").write_text(json.dumps(saved))
    ours = [
        {**record(0, 0.82, 0.72), "corpus": "toy", "seed": 1},
        {**record(1, 0.88, 0.66), "corpus": "toy", "seed": 1},
        {**record(0, 0.75, 0.70), "corpus": "toy", "seed": 2},
        {**record(1, 0.85, 0.81), "corpus": "toy", "seed": 2},
    ]
    text = dev.paired_with_run(ours, tmp_path, [1, 2])
    accuracy = np.array([0.02, -0.02, 0.05, 0.0])
    auroc = np.array([0.02, 0.06, -0.05, 0.01])
    assert f"| toy | 10 | gp | {np.mean([0.82, 0.88, 0.75, 0.85]):.4f} | {accuracy.mean():+.4f} | " in text
    assert f"{accuracy.std(ddof=1):.4f} | 2 of 4 |" in text
    assert f"| toy | 10 | gp | {np.mean([0.72, 0.66, 0.70, 0.81]):.4f} | {auroc.mean():+.4f} | " in text
    assert f"minus gp ({tmp_path.name})'s" in text


def test_paired_scores_takes_two_scores_of_the_same_records_draw_by_draw():
    """``--paired-scores A,B``: each method's AUROC under B minus under A, record by record, by hand; a method
    without both scores (a baseline) has no row."""

    def record(method, split, n, a, b=None):
        scores = {"energy": {"oos_auroc": a}} | ({} if b is None else {"centred-energy": {"oos_auroc": b}})
        return {"corpus": "c", "split": split, "per_class": n, "method": method, "scores": scores}

    records = [record("gp", 0, 10, 0.70, 0.75), record("gp", 1, 10, 0.80, 0.78), record("gp", 2, 10, 0.60, 0.66)]
    records += [record("gp", 0, 50, 0.90, 0.91), record("lr", 0, 10, 0.65)]
    rows = [line for line in dev.paired_scores(records, "energy", "centred-energy").splitlines() if "| c |" in line]
    diffs = np.array([0.05, -0.02, 0.06])
    assert rows == [
        f"| c | 10 | gp | 0.7000 | {np.mean([0.75, 0.78, 0.66]):.4f} | {diffs.mean():+.4f} | {diffs.std(ddof=1):.4f} "
        "| 2 of 3 |",
        f"| c | 50 | gp | 0.9000 | 0.9100 | {0.01:+.4f} | – | 1 of 1 |",
    ]


def test_the_leave_one_out_weight_study_picks_the_factor_of_the_least_loss(toy_topics_tsv):
    """``--encoder-weight loo``: after the evidence's fit, the encoder weight is the fitted one times the factor
    whose tempered leave-one-out log loss is the least, recomputed here by hand; the temperature refitted at it."""
    import torch

    from lvgp.models.gpc.encoder_weight import ENCODER_WEIGHT_FACTORS
    from lvgp.models.gpc.estimator import _tempered_log_proba

    model = _fitted_variant_gp(toy_topics_tsv, "loo", per_class=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model.encoder_weight_factor_ in ENCODER_WEIGHT_FACTORS
        part = model.model_.covar_module.base_kernel.kernels[1]
        chosen = part.outputscale.detach().clone()
        fitted = chosen / model.encoder_weight_factor_
        losses = []
        for factor in ENCODER_WEIGHT_FACTORS:
            with torch.no_grad():
                part.outputscale = fitted * factor
            log_p, truth = model._loo_log_proba()
            tempered = _tempered_log_proba(log_p, model._fit_temperature((log_p, truth)))
            losses.append(-np.mean(tempered[np.arange(len(truth)), truth]))
        with torch.no_grad():
            part.outputscale = chosen
        assert model.temperature_ == pytest.approx(model._fit_temperature())
    best = max(i for i, loss in enumerate(losses) if loss == pytest.approx(min(losses), abs=1e-12))
    assert model.encoder_weight_factor_ == ENCODER_WEIGHT_FACTORS[best]


def _encoder_weight_of(model) -> float:
    """A fitted study GP's encoder part's weight (its RBF part's output scale)."""
    return float(model.model_.covar_module.base_kernel.kernels[1].outputscale)


def test_the_long_text_weight_study_keeps_the_evidence_weight_below_its_median_length(toy_topics_tsv, monkeypatch):
    """``--encoder-weight loo-long`` (rule 19): labelled texts whose median length is below
    ``LONG_TEXT_WORDS`` keep the evidence's weight (factor 1, the fit of ``--encoder-weight fitted``); at or above it,
    the guarded choice as ``loo-guarded`` makes it: the library's ``encoder_weight="loo"``."""
    from lvgp.models.gpc import estimator

    monkeypatch.setattr(estimator, "LONG_TEXT_WORDS", 10**6)
    short = _fitted_variant_gp(toy_topics_tsv, "loo-long", per_class=4)
    fitted = _fitted_variant_gp(toy_topics_tsv, "fitted", per_class=4)
    assert short.encoder_weight_factor_ == 1.0 and short.median_words_ < 10**6
    assert _encoder_weight_of(short) == _encoder_weight_of(fitted)
    monkeypatch.setattr(estimator, "LONG_TEXT_WORDS", 0)
    long = _fitted_variant_gp(toy_topics_tsv, "loo-long", per_class=4)
    guarded = _fitted_variant_gp(toy_topics_tsv, "loo-guarded", per_class=4)
    assert long.encoder_weight_factor_ == guarded.encoder_weight_factor_ and _encoder_weight_of(
        long
    ) == _encoder_weight_of(guarded)


def test_the_negations_vocabulary_study_gives_its_tf_idf_gps_the_baselines_words(toy_topics_tsv):
    """``--gp-vocabulary negations`` (rule 26): the GP classifiers with a tf-idf part read scikit-learn's stop words
    but the negations, tokens of two letters or more; every other setting and method is the study's."""
    from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS

    study = dev.variant_study(whole_bag=False, vocabulary="negations")(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    for method in ("gpc-bow", "gpc-bow-encoder-rbf"):
        vocabulary = study.estimator({"method": method, "split": 0, "params": {"per_class": 3}}).vocabulary
        assert vocabulary.min_token_len == 2 and set(vocabulary.stop_words) == set(ENGLISH_STOP_WORDS_BUT_NEGATIONS)
        assert vocabulary.tokenize("it is not an ok film") == ["not", "ok", "film"]
    assert (
        study.estimator({"method": "svm", "split": 0, "params": {"per_class": 3}}).get_params().get("vocabulary")
        is None
    )


def test_the_two_letter_study_gives_its_tf_idf_gps_the_studys_words_and_two_letter_tokens(toy_topics_tsv):
    """``--gp-vocabulary two-letters`` (rule 27): the study's vocabulary (every English stop word out) with tokens of
    two letters; other methods untouched."""
    study = dev.variant_study(whole_bag=False, vocabulary="two-letters")(
        dataset=toy_topics_tsv, unknown_classes=1, per_class=(3,), splits=1, ldk_max_iter=5
    )
    for method in ("gpc-bow", "gpc-bow-encoder-rbf"):
        vocabulary = study.estimator({"method": method, "split": 0, "params": {"per_class": 3}}).vocabulary
        assert vocabulary.tokenize("shr 12 cts vs 10 cts, it is not ok") == ["shr", "cts", "vs", "cts", "ok"]
    assert (
        study.estimator({"method": "svm", "split": 0, "params": {"per_class": 3}}).get_params().get("vocabulary")
        is None
    )
