"""A classifier with a reject option (issue 57): ``conformal_threshold``, the GP classifier's
``novelty_threshold`` and ``lvgp.OpenSetClassifier``, each against an independent computation (a sort, a hand
loop over the folds, the scores themselves) and a coverage check on held-out in-scope texts."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import lvgp
from lvgp import LBFGS, LDKGPClassifier, OpenSetClassifier
from lvgp.base.novelty import conformal_threshold, leave_one_out_novelty
from lvgp.base.splits import stratified_folds
from lvgp.baselines.text_classifiers import TfidfLogisticRegression

WORDS = {
    "film": "film actor scene cast director plot screen movie drama comedy".split(),
    "sport": "goal match striker keeper league coach penalty score team season".split(),
    "food": "sushi rice soup kitchen chef recipe bread oven salt sauce".split(),
}


def _texts(label: str, n: int, rng: np.random.Generator) -> list[str]:
    return [" ".join(rng.choice(WORDS[label], 6)) for _ in range(n)]


def _gp(**kwargs) -> LDKGPClassifier:
    return LDKGPClassifier(optimizer=LBFGS(max_iter=15), random_state=0, **kwargs)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = _texts("film", 15, rng) + _texts("sport", 15, rng)
    y = np.array(["film"] * 15 + ["sport"] * 15)
    held_out = _texts("film", 150, rng) + _texts("sport", 150, rng)
    # out of scope: the food words, each text with one known word among them (no text is empty)
    new = [f"{t} {w}" for t, w in zip(_texts("food", 100, rng), rng.choice(WORDS["film"], 100), strict=True)]
    return x, y, held_out, new


@pytest.fixture(scope="module")
def fitted(data):
    x, y, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return OpenSetClassifier(_gp(), unknown_label="oos").fit(x, y)


@contextlib.contextmanager
def _scored_by(gp: LDKGPClassifier, score: str):
    """The fitted classifier with ``novelty_score=score`` for the block, its own score after it."""
    own = gp.novelty_score
    try:
        yield gp.set_params(novelty_score=score)
    finally:
        gp.set_params(novelty_score=own)


# ------------------------------------------------------------------ the conformal quantile
def test_the_conformal_threshold_is_the_kth_smallest_score():
    scores = np.random.default_rng(1).normal(size=99)
    for keep in (0.5, 0.9, 0.95, 0.99):
        k = int(np.floor(100 * (1 - keep) + 1e-9))
        assert conformal_threshold(scores, keep) == np.sort(scores)[k - 1]
    assert conformal_threshold(np.arange(19.0), 0.95) == 0.0  # k = 1 at m = 19: the smallest


def test_the_conformal_threshold_keeps_at_least_keep_of_exchangeable_scores():
    """The guarantee, over many draws: a new score drawn as the reference ones are is accepted with
    probability at least ``keep`` (and not much more: the rule is tight up to 1 / (m + 1))."""
    rng = np.random.default_rng(2)
    m, keep, trials = 40, 0.9, 4000
    accepted = [rng.normal() >= conformal_threshold(rng.normal(size=m), keep) for _ in range(trials)]
    k = np.floor((m + 1) * (1 - keep))
    assert np.mean(accepted) == pytest.approx(1 - k / (m + 1), abs=3 * np.sqrt(0.1 * 0.9 / trials))
    assert np.mean(accepted) >= keep - 2 * np.sqrt(keep * (1 - keep) / trials)


def test_too_few_scores_accept_every_text_with_a_warning():
    with pytest.warns(RuntimeWarning, match="18 reference scores cannot promise keep=0.95.*19 are needed"):
        assert conformal_threshold(np.zeros(18), 0.95) == -np.inf


@pytest.mark.parametrize(
    "scores, keep, match",
    [
        ([1.0, 2.0], 1.0, r"keep must be in \(0, 1\); got 1.0"),
        ([1.0, 2.0], 0, r"keep must be in \(0, 1\)"),
        ([], 0.9, "scores is empty"),
        ([1.0, np.nan, 2.0, np.inf], 0.9, r"scores must be finite; 2 are not, in rows \[1, 3\]"),
    ],
)
def test_bad_scores_or_keep_are_refused(scores, keep, match):
    with pytest.raises(ValueError, match=match):
        conformal_threshold(scores, keep)


# ------------------------------------------------------------------ the GP classifier's own threshold
@pytest.mark.parametrize("score", ["energy", "lifted-energy", "entropy", "energy-variance"])
def test_novelty_threshold_is_the_conformal_quantile_of_the_leave_one_out_scores(fitted, score):
    with _scored_by(fitted.classifier_, score) as gp:
        loo = leave_one_out_novelty(gp.novelty_reference(), score, 2)
        assert gp.novelty_threshold(0.9) == conformal_threshold(loo, 0.9)
        if score == "energy":  # the energies themselves: minus the reference's minus energies
            assert gp.novelty_threshold(0.9) == np.sort(-np.asarray(gp.novelty_reference().energy))[2]


def test_novelty_threshold_refuses_what_has_no_leave_one_out_reference(fitted, data):
    with _scored_by(fitted.classifier_, "max-probability") as gp:
        with pytest.raises(ValueError, match="novelty_score='max-probability' has no leave-one-out reference"):
            gp.novelty_threshold()
    with pytest.raises(ValueError, match=r"keep must be in \(0, 1\)"):
        fitted.classifier_.novelty_threshold(1.5)
    x, y, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        laplace = _gp(inference="laplace").fit(x, y)
    with pytest.raises(ValueError, match="novelty_threshold needs inference='dirichlet'"):
        laplace.novelty_threshold()


def test_novelty_scores_with_the_probabilities_is_one_pass_of_what_both_give(fitted, data):
    gp, (_, _, held_out, new) = fitted.classifier_, data
    texts = held_out[:20] + new[:10]
    scores, proba = gp.novelty_scores(texts, ("lifted-energy", "variance"), return_proba=True)
    np.testing.assert_array_equal(proba, gp.predict_proba(texts))
    alone = gp.novelty_scores(texts, ("lifted-energy", "variance"))
    for kind in alone:
        np.testing.assert_array_equal(scores[kind], alone[kind])
    by_probability, proba_again = gp.novelty_scores(texts, ("entropy",), return_proba=True)
    np.testing.assert_array_equal(proba_again, proba)
    np.testing.assert_allclose(by_probability["entropy"], (proba * np.log(proba)).sum(1), rtol=1e-12)


# ------------------------------------------------------------------ OpenSetClassifier
def test_the_gp_wrapped_takes_its_leave_one_out_threshold_and_rejects_below_it(fitted, data):
    _, _, held_out, new = data
    assert fitted.threshold_source_ == "leave-one-out"
    assert fitted.threshold_ == fitted.classifier_.novelty_threshold(0.95)
    texts = held_out[:40] + new[:40]
    scores = fitted.classifier_.score_samples(texts)
    labels = fitted.classifier_.predict(texts)
    got = fitted.predict(texts)
    np.testing.assert_array_equal(got, np.where(scores < fitted.threshold_, "oos", labels))
    np.testing.assert_array_equal(fitted.decision_function(texts), scores - fitted.threshold_)
    same_labels, rejected = fitted.predict_with_rejection(texts)
    np.testing.assert_array_equal(same_labels, labels)
    np.testing.assert_array_equal(rejected, scores < fitted.threshold_)
    np.testing.assert_array_equal(fitted.predict_proba(texts), fitted.classifier_.predict_proba(texts))
    assert list(fitted.classes_) == ["film", "sport"] and fitted.novelty_score == "energy"


def test_the_threshold_keeps_the_held_out_in_scope_texts_and_rejects_new_ones(fitted, data):
    """Coverage on texts the model never saw: about ``keep`` of the in-scope ones accepted (the
    leave-one-out threshold errs on the safe side where the kernel learns nothing from the left-out text)."""
    _, _, held_out, new = data
    # 30 labelled texts: the threshold is the least leave-one-out score (k = 1), a noisy quantile: over five
    # draws of such data the share kept was 0.90-1.00, 0.96 on average
    assert 0.85 <= np.mean(fitted.predict(held_out) != "oos") <= 1.0
    # a new topic's words are unseen (dropped, the library's policy): a text of none of the known words gets the
    # latent prior, the least evidence, and is rejected
    rng = np.random.default_rng(3)
    with pytest.warns(lvgp.warnings.EmptyDocumentsWarning, match="20 of 20 documents have no known word"):
        assert np.all(fitted.predict(_texts("food", 20, rng)) == "oos")


def test_the_cross_validated_threshold_is_a_hand_loop_over_the_folds(data):
    x, y, _, _ = data
    clf = OpenSetClassifier(TfidfLogisticRegression(Cs=(1.0, 10.0)), cv=3, random_state=4).fit(x, y)
    assert clf.threshold_source_ == "cross-validation"  # "auto" without novelty_threshold
    scores = np.empty(len(x))
    for train, test in stratified_folds(y, 3, 4):
        model = TfidfLogisticRegression(Cs=(1.0, 10.0)).fit([x[i] for i in train], y[train])
        scores[test] = model.score_samples([x[i] for i in test])
    k = int(np.floor(31 * 0.05))
    assert clf.threshold_ == pytest.approx(np.sort(scores)[k - 1], rel=1e-12)
    np.testing.assert_allclose(np.sort(clf.reference_scores_), np.sort(scores), rtol=1e-12)


def test_auto_cross_validates_a_gp_without_leave_one_out_scores(data):
    """``"auto"`` takes the folds where the GP has no leave-one-out reference of its score; ``"leave-one-out"``
    says why it cannot."""
    x, y, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = OpenSetClassifier(_gp(novelty_score="max-probability"), cv=2, random_state=0).fit(x, y)
        assert clf.threshold_source_ == "cross-validation" and clf.reference_scores_.shape == (30,)
        assert clf.threshold_ == conformal_threshold(clf.reference_scores_, 0.95)
        with pytest.raises(ValueError, match="novelty_score='max-probability' has no leave-one-out reference"):
            OpenSetClassifier(_gp(novelty_score="max-probability"), threshold="leave-one-out").fit(x, y)


def test_a_given_threshold_is_kept_and_the_labels_fall_back_to_objects(data):
    x, y, _, new = data
    codes = (y == "sport").astype(int)
    clf = OpenSetClassifier(TfidfLogisticRegression(Cs=(1.0,)), threshold=-0.1, unknown_label="none").fit(x, codes)
    assert clf.threshold_ == -0.1 and clf.threshold_source_ == "given" and clf.reference_scores_.size == 0
    got = clf.predict(new[:20] + x[:5])
    assert got.dtype == object and set(got.tolist()) <= {0, 1, "none"}
    scores = clf.score_samples(new[:20] + x[:5])
    assert [g == "none" for g in got] == list(scores < -0.1)


def test_the_wrapper_follows_scikit_learns_conventions(data):
    x, y, _, _ = data
    clf = OpenSetClassifier(TfidfLogisticRegression(), keep=0.9, random_state=0)
    assert clone(clf).get_params()["keep"] == 0.9
    clf.set_params(classifier__Cs=(1.0,), cv=2)
    assert clf.get_params()["classifier__Cs"] == (1.0,) and not hasattr(clf, "threshold_")
    assert clf.fit(x, y) is clf and clf.score(x, y) > 0.8
    assert OpenSetClassifier().novelty_score == LDKGPClassifier().novelty_score
    assert isinstance(lvgp.OpenSetClassifier(), OpenSetClassifier)


def test_bad_arguments_name_themselves(data):
    x, y, _, _ = data
    with pytest.raises(ValueError, match=r"y: 2 rows are labelled unknown_label='oos' \(rows \[3, 7\]\)"):
        OpenSetClassifier(TfidfLogisticRegression(), unknown_label="oos").fit(
            x, ["oos" if i in (3, 7) else label for i, label in enumerate(y)]
        )
    with pytest.raises(ValueError, match="threshold='leave-one-out' needs a classifier with novelty_threshold"):
        OpenSetClassifier(TfidfLogisticRegression(), threshold="leave-one-out").fit(x, y)
    with pytest.raises(TypeError, match=r"must have fit, predict, score_samples \(reject_score=None\); Ridge lacks"):
        from sklearn.linear_model import Ridge

        OpenSetClassifier(Ridge()).fit(x, y)
    with pytest.raises(ValueError, match=r"^keep must be"):
        OpenSetClassifier(keep=1.0).fit(x, y)
    with pytest.raises(ValueError, match=r"^threshold must be"):
        OpenSetClassifier(threshold="held-out").fit(x, y)
    with pytest.raises(ValueError, match="needs two folds"):
        OpenSetClassifier(TfidfLogisticRegression(), threshold="cross-validation").fit(x[:2], ["a", "b"])


def test_save_and_load_keep_the_classifier_and_its_threshold(fitted, data, tmp_path):
    """Bit-identical predictions after a round trip (``tests/test_persistence_all.py`` checks every output); the
    loaded wrapper's ``classifier`` is an unfitted copy of the saved one's parameters."""
    _, _, held_out, new = data
    fitted.save(tmp_path / "flagger.pt")
    again = OpenSetClassifier.load(tmp_path / "flagger.pt")
    assert again.threshold_ == fitted.threshold_ and again.threshold_source_ == "leave-one-out"
    np.testing.assert_array_equal(again.reference_scores_, fitted.reference_scores_)
    np.testing.assert_array_equal(again.predict(held_out[:10] + new[:10]), fitted.predict(held_out[:10] + new[:10]))
    assert again.classifier.get_params() == fitted.classifier_.get_params()
    assert again.unknown_label == "oos" and not hasattr(again.classifier, "model_")
    # the classifier's own file is not a wrapper's, and the wrapper's is not the classifier's
    fitted.classifier_.save(tmp_path / "gp.pt")
    with pytest.raises(ValueError, match="is not a saved OpenSetClassifier"):
        OpenSetClassifier.load(tmp_path / "gp.pt")
    with pytest.raises(ValueError, match="is not a saved LDKGPClassifier"):
        LDKGPClassifier.load(tmp_path / "flagger.pt")


def test_what_a_file_cannot_hold_is_refused_before_writing(data, tmp_path):
    from gpytorch.kernels import RBFKernel

    x, y, _, _ = data
    sklearn_inside = OpenSetClassifier(TfidfLogisticRegression(Cs=(1.0,)), cv=2).fit(x, y)
    with pytest.raises(TypeError, match="TfidfLogisticRegression, has no lvgp file; save this wrapper with joblib"):
        sklearn_inside.save(tmp_path / "a.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        own_kernel = OpenSetClassifier(
            _gp(kernel=lvgp.BagOfWordsSpec(), sentence_encoder=None, encoder_kernel=[RBFKernel()]), cv=2
        )
    assert not (tmp_path / "a.pt").exists()
    with pytest.raises(TypeError, match=r"save: the classifier's encoder_kernel holds a gpytorch kernel"):
        own_kernel.classifier_ = own_kernel.classifier  # unfitted, but its parameters are what save reads
        own_kernel._check_savable()


@pytest.mark.parametrize(
    "module, name, match",
    [
        ("os", "system", "not an lvgp estimator"),
        ("lvgp.models.gpc", "Nothing", "is not in this lvgp"),
        ("lvgp.baselines.text_classifiers", "TfidfLogisticRegression", "is not a classifier lvgp saves"),
        ("lvgp.models.regressor", "GPLVSMRegressor", "is not a classifier lvgp saves"),
    ],
)
def test_a_file_names_only_lvgp_classifiers_that_save(module, name, match):
    """A saved wrapper names its classifier's class; nothing outside lvgp is imported on a file's word."""
    from lvgp.models.open_set import _saved_classifier_class

    with pytest.raises(ValueError, match=match):
        _saved_classifier_class(module, name)
    assert _saved_classifier_class("lvgp.models.gpc.estimator", "LDKGPClassifier") is LDKGPClassifier


# ------------------------------------------------------------------ one threshold per predicted class
def test_the_class_conditional_thresholds_are_each_groups_conformal_quantile_or_the_pooled_one():
    from lvgp.base.novelty import class_conditional_thresholds, conformal_references_needed

    assert [conformal_references_needed(k) for k in (0.5, 0.9, 0.95, 0.99)] == [1, 9, 19, 99]
    rng = np.random.default_rng(5)
    scores, groups = rng.normal(size=70), np.repeat([0, 1, 2, 3], [30, 25, 10, 5])
    thresholds, pooled = class_conditional_thresholds(scores, groups, 5, 0.9)
    for group, size in ((0, 30), (1, 25)):
        k = int(np.floor((size + 1) * 0.1 + 1e-9))
        assert thresholds[group] == np.sort(scores[groups == group])[k - 1]
    # 10 scores promise 0.9 (k = 1, the least); 5 and none do not: the pooled threshold, k = 7 of 70
    assert thresholds[2] == scores[groups == 2].min()
    assert thresholds[3] == thresholds[4] == np.sort(scores)[6]
    assert pooled.tolist() == [False, False, False, True, True]
    # at the least number of scores that promises keep the threshold is finite, one fewer is the pooled one
    for keep in (0.9, 0.95):
        m = conformal_references_needed(keep)
        assert np.isfinite(conformal_threshold(np.zeros(m), keep))
        with pytest.warns(RuntimeWarning, match="cannot promise"):
            conformal_threshold(np.zeros(m - 1), keep)


def test_class_conditional_thresholds_keep_keep_within_each_class_whatever_the_mix():
    """Two classes whose in-scope scores sit apart: one pooled threshold keeps ``keep`` of an even mix only, and
    of the lower class far less; a threshold per class keeps ``keep`` of each, so of any mix (simulated draws)."""
    from lvgp.base.novelty import class_conditional_thresholds

    rng = np.random.default_rng(6)
    keep, m, trials = 0.9, 40, 2000
    pooled_kept, own_kept = np.zeros((trials, 2)), np.zeros((trials, 2))
    for t in range(trials):
        reference = np.concatenate([rng.normal(0.0, 1.0, m), rng.normal(-2.0, 1.0, m)])
        groups = np.repeat([0, 1], m)
        new = rng.normal([0.0, -2.0], 1.0)  # one new in-scope text of each class
        own, _ = class_conditional_thresholds(reference, groups, 2, keep)
        pooled_kept[t] = new >= conformal_threshold(reference, keep)
        own_kept[t] = new >= own
    tolerance = 3 * np.sqrt(keep * (1 - keep) / trials)
    assert np.all(own_kept.mean(0) >= keep - tolerance) and np.all(own_kept.mean(0) <= keep + 0.05)
    assert pooled_kept.mean() >= keep - tolerance  # the reference's even mix: kept
    assert pooled_kept.mean(0)[1] < 0.85 < 0.97 < pooled_kept.mean(0)[0]  # but not within either class


@pytest.mark.parametrize(
    "scores, groups, match",
    [
        ([1.0, 2.0, 3.0], [0, 1], "groups has 2 entries for 3 scores"),
        ([1.0, 2.0, 3.0], [0, 2, 1], r"groups must be codes in \[0, 2\); rows \[1\] are not"),
        ([1.0, 2.0], [0.0, 1.0], r"groups must be codes in \[0, 2\)"),
    ],
)
def test_bad_groups_are_refused(scores, groups, match):
    from lvgp.base.novelty import class_conditional_thresholds

    with pytest.raises(ValueError, match=match):
        class_conditional_thresholds(scores, groups, 2, 0.5)


def test_leave_one_out_probabilities_are_the_expected_softmax_of_the_leave_one_out_latents(fitted, data):
    """Against a Monte Carlo average of the softmax over draws of the leave-one-out latents (numpy's own
    draws, many more than the estimator's), tempered as ``predict_proba`` is."""
    from scipy.special import softmax

    gp = fitted.classifier_
    proba = gp.leave_one_out_predict_proba()
    assert proba.shape == (30, 2)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    mean, var = (t.numpy() for t in gp.leave_one_out_latents())
    draws = mean + np.sqrt(var) * np.random.default_rng(7).normal(size=(20000, *mean.shape))
    np.testing.assert_allclose(proba, gp._temper(softmax(draws, axis=-1).mean(0)), atol=0.02)
    # each text's class is put first by the others on these well-separated toy classes
    assert np.mean(gp.classes_[proba.argmax(1)] == data[1]) >= 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        laplace = _gp(inference="laplace").fit(data[0], data[1])
    with pytest.raises(ValueError, match="leave_one_out_predict_proba needs inference='dirichlet'"):
        laplace.leave_one_out_predict_proba()


def test_class_conditional_gp_thresholds_group_the_leave_one_out_scores_by_their_predicted_class(data):
    x, y, held_out, new = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = OpenSetClassifier(_gp(), keep=0.9, unknown_label="oos", class_conditional=True).fit(x, y)
    gp = clf.classifier_
    loo = leave_one_out_novelty(gp.novelty_reference(), gp.novelty_score, 2)
    predicted = gp.classes_[gp.leave_one_out_predict_proba().argmax(1)]
    np.testing.assert_array_equal(clf.reference_scores_, loo)
    np.testing.assert_array_equal(clf.reference_predictions_, predicted)
    assert clf.threshold_ == conformal_threshold(loo, 0.9)  # the pooled one, as without class_conditional
    for c, label in enumerate(clf.classes_):
        assert clf.class_thresholds_[c] == conformal_threshold(loo[predicted == label], 0.9)
    texts = held_out[:40] + new[:40]
    scores, labels = gp.score_samples(texts), gp.predict(texts)
    own = clf.class_thresholds_[(labels == "sport").astype(int)]
    np.testing.assert_array_equal(clf.predict(texts), np.where(scores < own, "oos", labels))
    np.testing.assert_allclose(clf.decision_function(texts), scores - own, rtol=1e-12)
    labels_again, rejected = clf.predict_with_rejection(texts)
    np.testing.assert_array_equal(labels_again, labels)
    np.testing.assert_array_equal(rejected, scores < own)


def test_class_conditional_cross_validated_thresholds_are_a_hand_loop_over_the_folds(data):
    x, y, _, _ = data
    clf = OpenSetClassifier(
        TfidfLogisticRegression(Cs=(1.0, 10.0)), keep=0.9, cv=3, random_state=4, class_conditional=True
    ).fit(x, y)
    scores, predicted = np.empty(len(x)), np.empty(len(x), dtype=object)
    for train, test in stratified_folds(y, 3, 4):
        model = TfidfLogisticRegression(Cs=(1.0, 10.0)).fit([x[i] for i in train], y[train])
        scores[test] = model.score_samples([x[i] for i in test])
        predicted[test] = model.predict([x[i] for i in test])
    for c, label in enumerate(clf.classes_):
        mine = np.sort(scores[predicted == label])
        k = int(np.floor((mine.size + 1) * 0.1 + 1e-9))
        assert clf.class_thresholds_[c] == pytest.approx(mine[k - 1], rel=1e-12)


def test_a_class_with_too_few_reference_texts_takes_the_pooled_threshold_with_a_warning(fitted, data):
    """keep=0.95 needs 19 texts predicted as a class; the toy classes have 15 each."""
    x, y, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = OpenSetClassifier(_gp(), class_conditional=True)
    with pytest.warns(UserWarning, match=r"2 of 2 classes have fewer than 19 reference texts.*'film' \(1\d\)"):
        clf.fit(x, y)
    np.testing.assert_array_equal(clf.class_thresholds_, [fitted.threshold_] * 2)
    assert clf.threshold_ == fitted.threshold_


def test_class_conditional_with_a_number_is_refused_and_the_thresholds_are_saved(data, tmp_path):
    x, y, held_out, new = data
    with pytest.raises(ValueError, match=r"class_conditional=True .* with a number as threshold \(-0.5\)"):
        OpenSetClassifier(TfidfLogisticRegression(), threshold=-0.5, class_conditional=True).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = OpenSetClassifier(_gp(), keep=0.9, class_conditional=True).fit(x, y)
    clf.save(tmp_path / "per-class.pt")
    again = OpenSetClassifier.load(tmp_path / "per-class.pt")
    assert again.class_conditional
    np.testing.assert_array_equal(again.class_thresholds_, clf.class_thresholds_)
    np.testing.assert_array_equal(again.reference_predictions_, clf.reference_predictions_)
    texts = held_out[:20] + new[:20]
    np.testing.assert_array_equal(again.decision_function(texts), clf.decision_function(texts))
    # a file written before class_conditional existed: every class at the pooled threshold
    payload = clf._fitted_payload()
    del payload["class_thresholds"], payload["reference_predictions"]
    old = OpenSetClassifier(_gp(), keep=0.9)
    old._restore_fitted(payload)
    np.testing.assert_array_equal(old.class_thresholds_, [clf.threshold_] * 2)


# ------------------------------------------------------------------ a score read off a classifier without score_samples
def _pipeline_logreg(C: float = 1.0):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfVectorizer(), LogisticRegression(C=C))


def test_a_scikit_learn_pipeline_is_wrapped_by_its_probabilities_entropy(data):
    """A ``Pipeline`` has no ``score_samples``: ``reject_score="entropy"`` reads minus the entropy of its
    ``predict_proba``, its threshold from the folds (a hand loop here), its labels the same call's argmax."""
    from lvgp.base.novelty import probability_novelty

    x, y, held_out, new = data
    with pytest.raises(TypeError, match=r"lacks score_samples; reject_score='entropy' reads the score off"):
        OpenSetClassifier(_pipeline_logreg()).fit(x, y)
    clf = OpenSetClassifier(_pipeline_logreg(), keep=0.9, cv=3, random_state=2, reject_score="entropy").fit(x, y)
    assert clf.threshold_source_ == "cross-validation" and clf.novelty_score == "entropy"
    scores = np.empty(len(x))
    for train, test in stratified_folds(y, 3, 2):
        fold = _pipeline_logreg().fit([x[i] for i in train], y[train])
        scores[test] = probability_novelty(fold.predict_proba([x[i] for i in test]), "entropy")
    assert clf.threshold_ == pytest.approx(conformal_threshold(scores, 0.9), rel=1e-12)
    texts = held_out[:30] + new[:30]
    proba = clf.classifier_.predict_proba(texts)
    own = (proba * np.log(proba)).sum(1)
    np.testing.assert_allclose(clf.score_samples(texts), own, rtol=1e-12)
    expected = np.where(own < clf.threshold_, "out-of-scope", clf.classes_[proba.argmax(1)])
    np.testing.assert_array_equal(clf.predict(texts), expected)
    np.testing.assert_array_equal(clf.classifier_.predict(texts), clf.classes_[proba.argmax(1)])


def test_a_wrapped_pipeline_composes_with_grid_search(data):
    from sklearn.model_selection import GridSearchCV

    x, y, _, _ = data
    wrapper = OpenSetClassifier(_pipeline_logreg(), keep=0.9, cv=3, random_state=0, reject_score="max-probability")
    search = GridSearchCV(wrapper, {"classifier__logisticregression__C": [0.1, 10.0]}, cv=2).fit(x, y)
    assert search.best_estimator_.classifier_.named_steps["logisticregression"].C in (0.1, 10.0)
    assert search.best_estimator_.reject_score == "max-probability"


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_largest_decision_value_of_a_linear_svm(data, n_classes):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    x, y, held_out, new = data
    if n_classes == 3:
        x, y = x + new[:15], np.concatenate([y, ["food"] * 15])
    svm = make_pipeline(TfidfVectorizer(), LinearSVC())
    with pytest.raises(TypeError, match=r"must have fit, predict_proba \(reject_score='entropy'\); Pipeline lacks"):
        OpenSetClassifier(svm, reject_score="entropy").fit(x, y)
    clf = OpenSetClassifier(svm, keep=0.9, cv=3, random_state=1, reject_score="max-decision").fit(x, y)
    texts = held_out[:20] + new[20:40]
    decision = clf.classifier_.decision_function(texts)
    if n_classes == 2:  # one value a text, the second class's: the largest of (-d, d) is |d|
        own, labels = np.abs(decision), clf.classes_[(decision > 0).astype(int)]
    else:
        own, labels = decision.max(1), clf.classes_[decision.argmax(1)]
    np.testing.assert_array_equal(clf.score_samples(texts), own)
    np.testing.assert_array_equal(labels, clf.classifier_.predict(texts))
    np.testing.assert_array_equal(clf.predict(texts), np.where(own < clf.threshold_, "out-of-scope", labels))


def test_a_score_read_off_the_outputs_takes_the_folds_not_the_leave_one_out_threshold(data):
    x, y, _, _ = data
    with pytest.raises(ValueError, match=r"with reject_score='entropy' the threshold is cross-validated"):
        OpenSetClassifier(_gp(), threshold="leave-one-out", reject_score="entropy").fit(x, y)
    with pytest.raises(ValueError, match=r"^reject_score must be"):
        OpenSetClassifier(_pipeline_logreg(), reject_score="energy").fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp = OpenSetClassifier(_gp(), cv=2, random_state=0, reject_score="max-probability").fit(x, y)
    assert gp.threshold_source_ == "cross-validation" and gp.novelty_score == "max-probability"
    np.testing.assert_allclose(gp.score_samples(x[:5]), gp.classifier_.predict_proba(x[:5]).max(1), rtol=1e-12)
