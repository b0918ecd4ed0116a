"""Regression tests for the defects of the second outside fuzz (issue 59), numbered as the issue
numbers them; each is a correct result or a clear error naming the argument. The encoder's cache
(defects 1 and 2) is in ``test_encoder_cache.py``, its other defects (3-5) in ``test_encoders.py``,
the int16 corpora (defect 6) in ``test_id_dtypes.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from gpytorch.kernels import RBFKernel, ScaleKernel

import lvgp
from lvgp import LBFGS, Adam, GPLVSMRegressor, LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor
from lvgp.base.constraints import check_params
from lvgp.kernels import BagOfWordsKernel, LDKSpec
from lvgp.models.slda import SLDARegressor

from .reference import untempered_proba

TEXTS = [
    "a great film",
    "an awful film",
    "great acting and great music",
    "an awful plot",
    "a dull plot",
    "great fun",
    "dull acting",
    "a great plot",
] * 3
Y = np.array([1.0, -1.0, 1.3, -0.9, -0.6, 1.1, -0.5, 0.9] * 3)


def _quiet_fit(est, x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(x, y)


@pytest.mark.parametrize(
    "estimator",
    [
        GPLVSMRegressor(optimizer=Adam(lr=100), random_state=0),
        SparseGPLVSMRegressor(optimizer=MiniBatch(lr=100), random_state=0),
    ],
    ids=["GPLVSMRegressor-Adam", "SparseGPLVSMRegressor-MiniBatch"],
)
def test_a_diverging_fit_says_lower_the_learning_rate(estimator):
    """Defect 7: a large learning rate ended in a bare NanError from the Cholesky."""
    with pytest.raises(FloatingPointError, match=r"(diverged|became nan).*(lower lr|smaller learning rate)") as info:
        _quiet_fit(estimator, TEXTS, Y)
    assert "NanError" in type(info.value.__cause__).__name__


@pytest.mark.parametrize(
    "estimator,name",
    [
        (GPLVSMRegressor(noise_init=10**400), "noise_init"),
        (GPLVSMRegressor(optimizer=LBFGS(tol=10**400)), r"optimizer\.tol"),
        (SparseGPLVSMRegressor(optimizer=MiniBatch(lr=-(10**400))), r"optimizer\.lr"),
        (GPLVSMRegressor(LDKSpec(rho=10**400)), r"kernel\.rho"),
    ],
)
def test_integers_beyond_float64_are_named(estimator, name):
    """Defect 8: ``10**400`` crashed the check with an OverflowError naming nothing (and a message
    would print all 401 digits)."""
    with pytest.raises(ValueError, match=rf"^{name} must be .*finite") as info:
        check_params(estimator)
    assert len(str(info.value)) < 300


def test_em_slda_refuses_an_optimizer_it_would_ignore():
    """Defect 9: ``SLDARegressor(inference="em")`` silently ignored ``optimizer=``."""
    with pytest.raises(ValueError, match=r"^optimizer: inference='em' fits by lvgp.EM"):
        SLDARegressor(inference="em", optimizer=MiniBatch(lr=1e-9)).fit(TEXTS, Y)
    check_params(SLDARegressor(inference="em"))
    check_params(SLDARegressor(inference="svi", optimizer=MiniBatch(lr=1e-3)))


@pytest.mark.parametrize("cls", [BagOfWordsKernel, ScaleKernel, RBFKernel, LDKSpec])
@pytest.mark.parametrize("estimator", [GPLVSMRegressor, SparseGPLVSMRegressor, LDKGPClassifier])
def test_a_kernel_class_instead_of_an_instance_says_so(estimator, cls):
    """Defect 10: a kernel class was called as a factory and failed with a message about level2,
    active_dims or zeros()."""
    with pytest.raises((TypeError, ValueError), match=rf"^kernel must be .*not the class.*{cls.__name__}\("):
        check_params(estimator(cls))
    for specs_only in (lvgp.LatentSMMClassifier, lvgp.LDKMatcher):
        with pytest.raises(TypeError, match="^kernel must be"):
            check_params(specs_only(cls))


def test_a_factory_function_and_an_instance_still_work():
    def factory(num_words):
        return ScaleKernel(BagOfWordsKernel(num_words))

    vocab = lvgp.Vocabulary().fit(TEXTS)
    for kernel in (factory, ScaleKernel(BagOfWordsKernel(len(vocab)))):
        est = _quiet_fit(GPLVSMRegressor(kernel, vocabulary=vocab, optimizer=LBFGS(max_iter=3)), TEXTS, Y)
        assert np.isfinite(est.predict(TEXTS[:3])).all()
    assert torch.get_default_dtype() == torch.float32


def test_an_array_latent_init_is_saved_and_a_callable_refused(tmp_path):
    """Defect 11: ``LDKSpec(latent_init=array)`` was dropped on save; the reloaded model refitted
    from another start (predictions 0.69 apart)."""
    vocab = lvgp.Vocabulary().fit(TEXTS)
    init = np.random.default_rng(0).normal(size=(len(vocab), 2))
    est = _quiet_fit(
        GPLVSMRegressor(LDKSpec(latent_init=init), vocabulary=vocab, optimizer=LBFGS(max_iter=5), random_state=0),
        TEXTS,
        Y,
    )
    est.save(tmp_path / "m.pt")
    loaded = GPLVSMRegressor.load(tmp_path / "m.pt")
    np.testing.assert_array_equal(loaded.kernel.latent_init, init)
    np.testing.assert_array_equal(loaded.predict(TEXTS[:4]), est.predict(TEXTS[:4]))
    refit = _quiet_fit(loaded, TEXTS, Y)
    np.testing.assert_array_equal(refit.predict(TEXTS[:4]), est.predict(TEXTS[:4]))

    def draw(words, num_words, latent_dim):
        return init

    est = _quiet_fit(
        GPLVSMRegressor(LDKSpec(latent_init=draw), vocabulary=vocab, optimizer=LBFGS(max_iter=2)), TEXTS, Y
    )
    with pytest.raises(TypeError, match="kernel.latent_init, a callable"):
        est.save(tmp_path / "c.pt")


def test_distributed_with_an_unpicklable_factory_names_it():
    """Defect 12: a lambda as the kernel factory failed inside spawn's pickling, naming nothing."""
    est = SparseGPLVSMRegressor(
        lambda num_words: ScaleKernel(BagOfWordsKernel(num_words)), distributed=True, world_size=2
    )
    with pytest.raises(ValueError, match=r"^kernel: distributed=True sends the parameters to 2 new processes"):
        est.fit(TEXTS, Y)


def test_tempered_probabilities_leave_empty_documents_at_the_training_frequencies():
    """Defect 13: with ``calibration="temperature"`` empty documents got tempered class frequencies,
    not the training frequencies ``predict_proba`` documents."""
    labels = (Y > 0).astype(int)
    labels[:5] = 1  # unequal class frequencies: tempering would move them
    est = _quiet_fit(
        LDKGPClassifier(LDKSpec(latent_dim=2), calibration="temperature", optimizer=LBFGS(max_iter=5), random_state=0),
        TEXTS,
        labels,
    )
    assert est.temperature_ != 1.0
    with pytest.warns(lvgp.warnings.EmptyDocumentsWarning):
        proba = est.predict_proba(["zzz unknown", "a great film"])
    np.testing.assert_array_equal(proba[0], est.class_prior_)
    untempered = untempered_proba(est, ["a great film"])
    np.testing.assert_allclose(proba[1], est._temper(untempered)[0], rtol=1e-12)
    assert not np.allclose(proba[1], untempered[0])
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)


@pytest.fixture
def encoder_regressor(tiny_encoder):
    from lvgp.baselines.encoder import EncoderGPRegressor

    encoder = tiny_encoder(["great", "awful", "film", "plot", "dull", "fun", "acting", "music"], 0)
    return lambda **kw: EncoderGPRegressor(encoder, optimizer=LBFGS(max_iter=20), **kw)


def test_the_encoder_gp_takes_2d_targets_as_independent_outputs(encoder_regressor):
    """Defect 14: ``EncoderGPRegressor`` crashed on 2-D targets, which the GP-LVSM regressors take.
    Reference: each column fitted alone gives the same predictions (up to where L-BFGS stops: the
    joint fit stops on the summed objective). Each text's three copies get different targets: with equal
    ones the evidence is largest at a vanishing length-scale (1e-13, every text its own island), where a
    prediction at a training text turns on the last bit of a distance and falls to the prior mean."""
    y = Y + np.random.default_rng(0).normal(0, 0.2, len(Y))
    y2 = np.column_stack([y, 10 - 3 * y + np.sin(np.arange(len(Y)))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = encoder_regressor().fit(TEXTS, y2)
        mean, std = both.predict(TEXTS[:5], return_std=True)
        assert mean.shape == std.shape == (5, 2) and both.noise_.shape == (2,)
        for column in range(2):
            alone = encoder_regressor().fit(TEXTS, y2[:, column])
            m, s = alone.predict(TEXTS[:5], return_std=True)
            np.testing.assert_allclose(mean[:, column], m, rtol=1e-3, atol=1e-4)
            np.testing.assert_allclose(std[:, column], s, rtol=2e-3)
            np.testing.assert_allclose(both.noise_[column], alone.noise_, rtol=2e-3)
            assert alone.lengthscale_ > 1e-6  # far above a distance's rounding: not the degenerate fit above


def test_the_encoder_gp_warns_when_its_noise_sits_at_the_floor(encoder_regressor):
    """Defect 15: no ``UncertaintyWarning`` with the noise at its floor (std 0.01 on constant
    targets), where the other GP regressors warn."""
    with pytest.warns(lvgp.warnings.UncertaintyWarning, match="EncoderGPRegressor: the fitted noise is"):
        est = encoder_regressor().fit(TEXTS, np.full(len(TEXTS), 3.0))
    np.testing.assert_allclose(est.predict(TEXTS[:3]), 3.0)


POSITIVE = [
    "I loved this movie", "a wonderful film", "great acting and a great story", "truly excellent",
    "the best film of the year", "brilliant and moving", "an amazing performance", "I enjoyed every minute",
    "a delightful comedy", "superb direction", "beautiful photography", "a masterpiece", "fantastic cast",
    "highly recommended", "funny and charming", "a joy to watch", "wonderful music", "great fun", "excellent script",
]  # fmt: skip
NEGATIVE = [
    "I hated this movie", "a terrible film", "awful acting and a boring story", "truly dreadful",
    "the worst film of the year", "dull and tedious", "a horrible performance", "I regretted every minute",
    "a painful comedy", "poor direction", "ugly photography", "a disaster", "terrible cast", "not recommended",
    "boring and silly", "a chore to watch", "awful music", "no fun", "bad script",
]  # fmt: skip


def test_a_regressor_that_finds_no_signal_says_so():
    """Newcomer stumble: on 38 clear sentiment sentences whose words rarely repeat, the default
    ``GPLVSMRegressor`` learned nothing (noise 0.998 of the standardized variance, training R^2
    0.04), silently."""
    y = np.r_[np.ones(len(POSITIVE)), -np.ones(len(NEGATIVE))]
    with pytest.warns(lvgp.warnings.NoSignalWarning, match=r"the fitted noise is (0\.9\d*|1) of the training targets"):
        est = GPLVSMRegressor(random_state=0).fit(POSITIVE + NEGATIVE, y)
    assert float(est.likelihood_.noise) > 0.95


@pytest.mark.parametrize("inference", ["dirichlet"])
def test_class_probabilities_do_not_depend_on_how_the_labels_sort(inference):
    """The Monte Carlo draws were assigned by class position: a change of the labels' sort order
    moved ``predict_proba`` by up to 0.037 at 256 draws. Each class now draws from a stream named by
    its label: the labels 1, 2 and 10 as integers (sorted 1, 2, 10) and as strings (sorted '1',
    '10', '2') predict the same. (The variational inference's fit draws by position too: its ELBO's
    Monte Carlo and q(u)'s start; the docstring says so.)"""
    labels = np.array([1, 2, 1, 2, 2, 1, 10, 10] * 3)
    options = {"optimizer": LBFGS(max_iter=10)} if inference == "dirichlet" else {"optimizer": MiniBatch(max_epochs=5)}

    def fitted(y):
        return _quiet_fit(
            LDKGPClassifier(LDKSpec(latent_dim=2), inference=inference, predict_samples=64, random_state=0, **options),
            TEXTS,
            y,
        )

    numbers, strings = fitted(labels), fitted(labels.astype(str))
    assert list(numbers.classes_) == [1, 2, 10] and list(strings.classes_) == ["1", "10", "2"]
    order = [list(strings.classes_).index(str(c)) for c in numbers.classes_]
    test = ["great plot", "awful film and dull acting", "music"]
    np.testing.assert_allclose(strings.predict_proba(test)[:, order], numbers.predict_proba(test), atol=1e-9)


def test_expected_softmax_draws_follow_the_classes():
    from lvgp.models.gpc import class_draw_seeds, expected_softmax

    rng = np.random.default_rng(0)
    mean, var = torch.from_numpy(rng.normal(size=(5, 4))), torch.from_numpy(rng.uniform(0.1, 2, size=(5, 4)))
    seeds = class_draw_seeds(np.array(["a", "b", "c", "d"]))
    perm = [2, 0, 3, 1]
    out = expected_softmax(mean, var, 32, seeds)
    permuted = expected_softmax(mean[:, perm], var[:, perm], 32, [seeds[i] for i in perm])
    torch.testing.assert_close(permuted, out[:, perm], atol=1e-15, rtol=0)
    with pytest.raises(ValueError, match="class_seeds: 3 seeds for 4 classes"):
        expected_softmax(mean, var, 32, seeds[:3])


def test_the_svm_baselines_probabilities_are_reproducible():
    """Newcomer stumble: ``BowClassifier.fit`` called ``platt_scaling`` without ``random_state``, so
    the calibration folds drew fresh entropy (four fits with ``random_state=0`` differed by up to
    0.26; the study's ``svm`` log loss moved between identical runs)."""
    from lvgp.baselines.text_classifiers import BowClassifier

    labels = (Y > 0).astype(int)
    runs = [BowClassifier("svm", random_state=0).fit(TEXTS, labels).predict_proba(TEXTS[:6]) for _ in range(4)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])


@pytest.mark.parametrize("inference", ["em", "svi"])
def test_slda_on_constant_targets_warns_about_its_standard_deviation(inference):
    """``SLDARegressor`` on constant targets gave a standard deviation of 1e-6 without a warning."""
    with pytest.warns(lvgp.warnings.UncertaintyWarning, match=r"sLDA \(\w+\): the fitted noise is"):
        est = SLDARegressor(n_topics=2, inference=inference, random_state=0).fit(TEXTS, np.full(len(TEXTS), 4.0))
    mean, std = est.predict(TEXTS[:3], return_std=True)
    np.testing.assert_allclose(mean, 4.0, atol=1e-6)
    assert (std < 1e-2).all()


def test_an_encoder_composition_fits_without_jitter_warnings(tiny_encoder):
    """Newcomer stumble: linear_operator's jitter ``NumericalWarning`` appeared at most encoder fits.
    The cosine Gram of the sentence vectors came back low-rank; added to the dense LDK Gram it made
    linear_operator Cholesky-factor the (singular) LDK part in every evaluation. It is dense now."""
    from linear_operator.utils.warnings import NumericalWarning

    tiny_encoder(["great", "awful", "film", "plot"], 0)
    labels = (Y > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalWarning)
        warnings.filterwarnings("ignore", category=lvgp.warnings.LVGPWarning)
        warnings.filterwarnings("ignore", message=".*did not converge.*")
        clf = LDKGPClassifier(sentence_encoder="all-MiniLM-L6-v2", optimizer=LBFGS(max_iter=15), random_state=0)
        proba = clf.fit(TEXTS, labels).predict_proba(TEXTS[:4])
    np.testing.assert_allclose(proba.sum(1), 1.0)


def test_a_warning_is_shown_once_under_the_default_filter_even_through_catch_warnings(capsys):
    """Newcomer stumble: under ``GridSearchCV`` the examples printed one ``UnseenWordsWarning`` six
    times: every ``warnings.catch_warnings()`` (one per candidate's fit) resets Python's record of
    what it showed. lvgp keeps its own under the ``"default"`` action; ``"always"`` shows every one."""
    import subprocess
    import sys

    script = (
        "import warnings\n"
        "from lvgp.warnings import UnseenWordsWarning, warn\n"
        "def emit():\n"
        "    warn('dropped 3 tokens of test (issue 59)', UnseenWordsWarning)\n"
        "for _ in range(6):\n"
        "    with warnings.catch_warnings():\n"
        "        pass\n"
        "    emit()\n"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stderr
    assert shown.count("dropped 3 tokens of test") == 1, shown
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            lvgp.warnings.warn("dropped 4 tokens of test (issue 59)", lvgp.warnings.UnseenWordsWarning)
    assert len(caught) == 3


@pytest.mark.parametrize(
    "spec, shown",
    [
        (LDKSpec.paper(), "LDKSpec.paper()"),
        (LDKSpec.variational_bow(latent_dim=3), "LDKSpec.variational_bow(latent_dim=3)"),
        (LDKSpec.plus(rho=2.0), "LDKSpec.plus(rho=2.0)"),
        (LDKSpec(level2="cosine"), "LDKSpec(level2='cosine')"),
    ],
)
def test_a_spec_prints_as_the_call_that_makes_it(spec, shown):
    """``LDKSpec.paper(...)`` printed as ``LDKSpec()``; a preset now prints as itself, and the text
    evaluates to an equal spec."""
    assert repr(spec) == shown
    assert eval(shown, {"LDKSpec": LDKSpec}) == spec


def test_scoring_on_the_training_texts_leaks_no_gpytorch_warning(tiny_encoder):
    """Newcomer stumble: ``LDKGPClassifier.score`` on the training texts leaked gpytorch's
    ``GPInputWarning`` ("Did you forget to call model.train()?"); predicting there is legitimate."""
    from gpytorch.utils.warnings import GPInputWarning

    from lvgp.baselines.encoder import EncoderGPRegressor

    labels = (Y > 0).astype(int)
    clf = _quiet_fit(LDKGPClassifier(LDKSpec(latent_dim=2), optimizer=LBFGS(max_iter=5), random_state=0), TEXTS, labels)
    encoder = tiny_encoder(["great", "awful", "film", "plot"], 0)
    reg = _quiet_fit(EncoderGPRegressor(encoder, optimizer=LBFGS(max_iter=5)), TEXTS, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GPInputWarning)
        assert 0 <= clf.score(TEXTS, labels) <= 1
        assert np.isfinite(reg.score(TEXTS, Y))


def test_a_few_documents_cannot_drive_the_temperature_to_its_bound():
    """Issue 56: ``calibration="temperature"`` on the README's six texts fitted T = 0.06 and turned 0.93
    into 1.0 (and the encoder GPs' small-study log loss to 1.8-4.9 against uniform's 1.1). With the
    prior on log T, T stays near 1 on six documents."""
    texts = TEXTS[:6]  # the README's six texts
    labels = ["pos", "neg", "pos", "neg", "neg", "pos"]
    clf = _quiet_fit(
        LDKGPClassifier(LDKSpec(rho=0.1, identity_weight="balanced"), calibration="temperature", random_state=0),
        texts,
        labels,
    )
    assert 0.3 < clf.temperature_ < 3
    proba = clf.predict_proba(["great plot", "awful acting"])
    assert proba.min() > 1e-4
