"""``LDKGPClassifier(encoder_weight="loo")`` (benchmarks/README.md, rules 17-19): after the evidence's fit, the
sentence encoder's weight times the factor the labels' tempered leave-one-out predictions choose behind two guards
(recomputed here by hand), kept on short texts; the weights it scales; saved and reloaded bit-exactly; refusals."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from gpytorch.kernels import LinearKernel, RBFKernel, ScaleKernel  # noqa: E402

from lvgp import LBFGS, LDKGPClassifier  # noqa: E402
from lvgp.kernels import BagOfWordsKernel, FeatureKernel, WordSetKernel  # noqa: E402
from lvgp.kernels.composition import encoder_part_weights  # noqa: E402
from lvgp.kernels.packed import beside_encoder  # noqa: E402
from lvgp.models.gpc import encoder_weight as weighting  # noqa: E402
from lvgp.models.gpc.estimator import _tempered_log_proba  # noqa: E402
from tests.test_encoder_gpc import SPEC  # noqa: E402
from tests.test_encoder_gpc import TEXTS as GPC_TEXTS  # noqa: E402
from tests.test_encoder_gpc import WORDS as GPC_WORDS  # noqa: E402
from tests.test_encoder_gpc import _fit as gpc_fit  # noqa: E402

WORDS = [*GPC_WORDS, "fine", "poor"]
SHORT = [*GPC_TEXTS, "fine film", "poor plot"]  # test_encoder_gpc's texts, two more
LABELS = np.array([1, 0] * 6)
# the same texts at weighting.LONG_TEXT_WORDS words and more: 20 times each
LONG = [" ".join([text] * 20) for text in SHORT]
TEST = ["good film plot " * 8, "awful film " * 10, "great plot and a good film " * 4, "bad " * 20]


@pytest.fixture
def encoder(tiny_encoder):
    return tiny_encoder(WORDS, seed=1)


def _fit(encoder, texts, **options):
    """test_encoder_gpc's fit (a shared output scale, 15 L-BFGS steps), tempered, of ``texts`` and ``LABELS``."""
    return gpc_fit(encoder, texts, LABELS, **{"calibration": "temperature", **options})


def _weights(clf) -> list[float]:
    return [float(getattr(module, name).detach()) for module, name in encoder_part_weights(clf.model_.covar_module)]


def _by_hand(clf, factors=weighting.ENCODER_WEIGHT_FACTORS):
    """The guarded choice recomputed on ``clf`` (fitted by the evidence alone): each factor's tempered
    leave-one-out log probabilities and accuracy, the paired gains over 1 and their standard error."""
    ((module, name),) = encoder_part_weights(clf.model_.covar_module)
    fitted = getattr(module, name).detach().clone()
    rows = []
    for factor in factors:
        with torch.no_grad():
            setattr(module, name, fitted * factor)
        log_p, truth = clf._loo_log_proba()
        tempered = _tempered_log_proba(log_p, clf._fit_temperature((log_p, truth)))
        rows.append((tempered[np.arange(len(truth)), truth], float(np.mean(log_p.argmax(1) == truth))))
    with torch.no_grad():
        setattr(module, name, fitted)
    n = len(rows[-1][0])
    eligible = []
    for values, accuracy in rows[:-1]:
        gain = values - rows[-1][0]
        eligible.append(gain.mean() > gain.std(ddof=1) / np.sqrt(n) and accuracy >= rows[-1][1] - 1 / n)
    eligible.append(True)
    losses = [-values.mean() for values, _ in rows]
    least = min(loss for loss, ok in zip(losses, eligible) if ok)
    best = max(
        i for i, (loss, ok) in enumerate(zip(losses, eligible)) if ok and loss == pytest.approx(least, abs=1e-12)
    )
    return factors[best], losses, eligible


@pytest.mark.parametrize("kind", ["cosine", "rbf"])
def test_the_labels_choose_the_encoder_weight_behind_both_guards(encoder, kind):
    """On texts of ``LONG_TEXT_WORDS`` words and more: the evidence's fit, then its encoder weight times the
    factor the guarded leave-one-out choice makes (by hand), the temperature refitted there; the scores
    reported a factor are the hand-computed ones."""
    evidence = _fit(encoder, LONG, encoder_kernel=kind)
    chosen = _fit(encoder, LONG, encoder_kernel=kind, encoder_weight="loo")
    assert evidence.encoder_weight_factor_ is None and evidence.encoder_weight_scores_ is None
    assert chosen.median_words_ >= weighting.LONG_TEXT_WORDS
    factor, losses, eligible = _by_hand(evidence)
    assert chosen.encoder_weight_factor_ == factor
    assert [s["factor"] for s in chosen.encoder_weight_scores_] == list(weighting.ENCODER_WEIGHT_FACTORS)
    np.testing.assert_allclose([s["loo_log_loss"] for s in chosen.encoder_weight_scores_], losses, rtol=1e-9)
    assert [s["eligible"] for s in chosen.encoder_weight_scores_] == eligible
    assert _weights(chosen)[0] == pytest.approx(_weights(evidence)[0] * factor, rel=1e-12)
    assert chosen.temperature_ == pytest.approx(chosen._fit_temperature())
    if factor == 1.0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(chosen.predict_proba(TEST), evidence.predict_proba(TEST), rtol=1e-12)


def test_the_fit_computes_each_factors_leave_one_out_predictions_once(encoder, monkeypatch):
    """The temperature's leave-one-out predictions are the choice's reference at factor 1 (one pass a factor, not
    one more); passing them or recomputing them gives the same choice and the same scores (to the last digits: the
    posterior recomputed after the weight was set back sums in another order)."""
    calls = []
    original = LDKGPClassifier._loo_log_proba

    def counted(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(LDKGPClassifier, "_loo_log_proba", counted)
    chosen = _fit(encoder, LONG, encoder_kernel="rbf", encoder_weight="loo")
    assert len(calls) == len(weighting.ENCODER_WEIGHT_FACTORS)
    evidence = _fit(encoder, LONG, encoder_kernel="rbf")
    again = weighting.select_encoder_weight(evidence)  # factor 1's predictions computed here
    assert again[0] == chosen.encoder_weight_factor_
    for mine, theirs in zip(again[1], chosen.encoder_weight_scores_, strict=True):
        assert mine.keys() == theirs.keys() and mine["eligible"] == theirs["eligible"]
        np.testing.assert_allclose([mine[k] for k in mine], [theirs[k] for k in mine], rtol=1e-10, atol=1e-15)
    assert evidence.temperature_ == pytest.approx(chosen.temperature_, rel=1e-10)
    assert _weights(evidence) == pytest.approx(_weights(chosen), rel=1e-12)


def test_short_texts_keep_the_evidence_weight(encoder):
    """Median length below ``LONG_TEXT_WORDS``: no choice is made, the fit is the evidence's to the bit."""
    evidence = _fit(encoder, SHORT)
    kept = _fit(encoder, SHORT, encoder_weight="loo")
    assert kept.median_words_ == 2.0 and kept.encoder_weight_factor_ == 1.0 and kept.encoder_weight_scores_ == []
    assert _weights(kept) == _weights(evidence) and kept.temperature_ == evidence.temperature_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(kept.predict_proba(TEST), evidence.predict_proba(TEST))


def test_the_chosen_weight_is_saved_and_reloaded_bit_exactly(encoder, tmp_path):
    clf = _fit(encoder, LONG, sentence_encoder="all-MiniLM-L6-v2", encoder_weight="loo")
    clf.save(tmp_path / "gpc.pt")
    loaded = LDKGPClassifier.load(tmp_path / "gpc.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(loaded.predict_proba(TEST), clf.predict_proba(TEST))
    assert loaded.encoder_weight_factor_ == clf.encoder_weight_factor_
    assert loaded.encoder_weight_scores_ == clf.encoder_weight_scores_ and loaded.median_words_ == clf.median_words_


def test_bad_combinations_are_named(encoder):
    with pytest.raises(ValueError, match="encoder_weight='loo' needs inference='dirichlet'"):
        LDKGPClassifier(SPEC, sentence_encoder=encoder, inference="laplace", encoder_weight="loo").fit(LONG, LABELS)
    with pytest.raises(ValueError, match="encoder_weight='loo' scales the weight of the sentence encoder's part"):
        LDKGPClassifier(SPEC, encoder_weight="loo").fit(LONG, LABELS)
    with pytest.raises(ValueError, match="encoder_weight"):
        LDKGPClassifier(SPEC, sentence_encoder=encoder, encoder_weight="labels").fit(LONG, LABELS)
    with pytest.raises(ValueError, match="factors: the last must be 1.0"):
        weighting.select_encoder_weight(_fit(encoder, SHORT), factors=(0.5, 0.25))


def test_encoder_part_weights_name_each_encoder_parts_weight():
    """A cosine part's linear variance, an RBF part's output scale; the words' part has none to give; an encoder
    part without a weight is refused."""
    words = BagOfWordsKernel(8, "cosine").double()
    documents = torch.tensor([[0, 1, -1], [2, 3, 4]])
    kernel = beside_encoder(words, documents, 4, ["cosine", "rbf"])
    weights = encoder_part_weights(ScaleKernel(kernel))
    assert [(type(m).__name__, n) for m, n in weights] == [("LinearKernel", "variance"), ("ScaleKernel", "outputscale")]
    bare = WordSetKernel(words, 4) + FeatureKernel(RBFKernel(), 4, normalize=True)
    with pytest.raises(ValueError, match="part 'encoder' .* has no weight"):
        encoder_part_weights(bare)
    assert encoder_part_weights(WordSetKernel(words, 4) + FeatureKernel(LinearKernel(), 4))[0][1] == "variance"


class _CannedLeaveOneOut:
    """A stand-in for a fitted classifier: a real composed kernel (words + mu RBF, mu = 2) and, per factor of mu,
    the leave-one-out log probabilities of 4 training documents (of 2 classes; the truth all 0) that
    :func:`select_encoder_weight` reads."""

    calibration = "temperature"

    def __init__(self, canned: dict):
        self.canned = canned  # factor -> (per-document log probability of the truth, leave-one-out predictions)
        kernel = beside_encoder(BagOfWordsKernel(8, "cosine").double(), torch.tensor([[0, 1]]), 4, "rbf")
        self.part = kernel.kernels[1]
        self.part.outputscale = torch.tensor(2.0)
        self.model_ = types.SimpleNamespace(covar_module=ScaleKernel(kernel))

    def _factor(self) -> float:
        return round(float(self.part.outputscale.detach()) / 2.0, 6)

    def _loo_log_proba(self):
        predicted = np.array(self.canned[self._factor()][1])
        return np.where(np.arange(2) == predicted[:, None], -0.1, -2.0), np.zeros(4, dtype=int)

    def _loo_tempered(self, loo=None):
        return torch.tensor(self.canned[self._factor()][0], dtype=torch.float64), 1.0


def test_each_guard_vetoes_a_factor_on_canned_leave_one_out_values():
    """1/2 has the least loss but two documents fewer right (guard ii), 1/4 gains less than a standard error
    (guard i), 1/8 passes both and is chosen; unguarded, the least loss (1/2); none passing: the evidence's own."""
    base = ([-0.5, -0.5, -0.5, -0.5], [0, 0, 1, 0])  # 3 of 4 right
    canned = {
        1.0: base,
        0.5: ([-0.1, -0.1, -0.1, -0.1], [0, 1, 1, 1]),  # gain 0.4 (SE 0), 1 of 4 right: guard (ii)
        0.25: ([-0.1, -0.8, -0.1, -0.8], [0, 0, 1, 0]),  # gain 0.05 +- 0.2 (SE): guard (i)
        0.125: ([-0.3, -0.35, -0.3, -0.35], [0, 0, 1, 0]),  # gain 0.175 +- 0.014, 3 of 4 right
    }
    model = _CannedLeaveOneOut(canned)
    factor, scores = weighting.select_encoder_weight(model)
    assert factor == 0.125 and float(model.part.outputscale) == pytest.approx(0.25) and model.temperature_ == 1.0
    assert [s["eligible"] for s in scores] == [True, False, False, True]
    assert scores[1]["loo_gain"] == pytest.approx(0.05) and scores[1]["loo_gain_se"] == pytest.approx(0.2021, abs=1e-4)
    assert weighting.select_encoder_weight(_CannedLeaveOneOut(canned), guarded=False)[0] == 0.5
    model = _CannedLeaveOneOut({1.0: base, 0.5: canned[0.5], 0.25: canned[0.25], 0.125: canned[0.25]})
    assert weighting.select_encoder_weight(model)[0] == 1.0 and float(model.part.outputscale) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "options",
    [
        {"class_hyperparameters": "per-class"},
        {"calibration": None},
        {"part_selection": "loo"},
        {"objective": "loo"},
        {"encoder_kernel": "matern"},
    ],
    ids=["per-class", "untempered", "part-selection", "loo-objective", "matern"],
)
def test_the_choice_composes_with_the_other_options(encoder, options):
    """Per-class hyper-parameters (a weight a class, all scaled alike), no temperature, part selection (a factor
    only where an encoder part stays beside the words), the leave-one-out objective, a Matern part: a factor of the
    grid, the chosen weight in the fitted kernel, finite predictions."""
    evidence = _fit(encoder, LONG, **options)
    chosen = _fit(encoder, LONG, encoder_weight="loo", **options)
    factor = chosen.encoder_weight_factor_
    assert factor in weighting.ENCODER_WEIGHT_FACTORS
    parts = encoder_part_weights(chosen.model_.covar_module)
    evidence_parts = encoder_part_weights(evidence.model_.covar_module)
    if chosen.encoder_weight_scores_:
        np.testing.assert_allclose(
            torch.cat([getattr(m, n).detach().reshape(-1) for m, n in parts]).numpy(),
            factor * torch.cat([getattr(m, n).detach().reshape(-1) for m, n in evidence_parts]).numpy(),
            rtol=1e-12,
        )
    else:  # part selection kept a single part: nothing to weigh
        assert factor == 1.0 and len(chosen.selected_parts_) == 1
    if options.get("calibration", "temperature") is None:
        assert chosen.temperature_ == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(chosen.predict_proba(TEST)).all()


def test_one_text_a_class_keeps_the_evidences_weight_and_says_so(encoder):
    """Long texts, one a class: no leave-one-out prediction has an example of its class, so the choice (and the
    temperature) keep their defaults -- the evidence's weight, T = 1 -- with one warning naming both."""
    texts, labels = [LONG[0], LONG[1]], LABELS[:2]
    assert labels[0] != labels[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = LDKGPClassifier(
            SPEC,
            sentence_encoder=encoder,
            class_hyperparameters="shared",
            optimizer=LBFGS(max_iter=15),
            random_state=0,
            calibration="temperature",
            encoder_weight="loo",
        ).fit(texts, labels)
    said = [str(w.message) for w in caught if "single training document" in str(w.message)]
    assert len(said) == 1 and "temperature_ = 1 and the evidence's encoder weight" in said[0]
    assert clf.median_words_ >= weighting.LONG_TEXT_WORDS
    assert clf.encoder_weight_factor_ == 1.0 and clf.encoder_weight_scores_ == [] and clf.temperature_ == 1.0
    evidence = gpc_fit(encoder, texts, labels, calibration="temperature")
    assert _weights(clf) == _weights(evidence)
