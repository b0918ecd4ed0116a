"""Regression tests for the defects an outside property-based fuzz found (issue 16): each
either a correct result or a clear error naming the argument. The kernel findings (the
batched ``diag``, ``0 x L`` inputs, small integer dtypes) are properties in
``test_properties.py``."""

from __future__ import annotations

import itertools
import unicodedata
import warnings

import numpy as np
import pytest

from lvgp import LBFGS, Adam, GPLVSMRegressor, MiniBatch, RMSprop, SparseGPLVSMRegressor, Vocabulary
from lvgp.base.validation import standardization
from lvgp.datasets import make_synonym_regression
from lvgp.kernels import LDKSpec


@pytest.fixture(scope="module")
def corpus():
    return make_synonym_regression(n=40, noise=0.05, random_state=0)


def _fit(est, x, y):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*did not converge.*")
        return est.fit(x, y)


def test_huge_targets_standardize_and_predict_finite_values(corpus):
    """Finding 1: ``fit(X, y * 1e200)`` gave NaN means and infinite standard deviations."""
    small = _fit(GPLVSMRegressor(optimizer=Adam(max_iter=15), random_state=0), corpus.texts, corpus.y)
    huge = _fit(GPLVSMRegressor(optimizer=Adam(max_iter=15), random_state=0), corpus.texts, corpus.y * 1e200)
    mean, std = huge.predict(corpus.texts[:5], return_std=True)
    assert np.isfinite(mean).all() and np.isfinite(std).all()
    np.testing.assert_allclose(mean / 1e200, small.predict(corpus.texts[:5]), rtol=1e-6)
    mu, sd = standardization(np.array([1e300, -1e300, 3e299]))
    assert np.isfinite(mu) and np.isfinite(sd) and sd > 0


@pytest.mark.parametrize("value", [100.0, -7.5, 0.0])
def test_constant_targets_are_predicted_as_that_constant(corpus, value):
    est = _fit(GPLVSMRegressor(optimizer=Adam(max_iter=5), random_state=0), corpus.texts, np.full(40, value))
    np.testing.assert_allclose(est.predict(corpus.texts[:3]), value)


@pytest.mark.parametrize(
    "estimator,message",
    [
        (GPLVSMRegressor(LDKSpec(gamma=0)), "gamma must be > 0"),
        (GPLVSMRegressor(noise_init=0), "noise_init must be > 0"),
        (GPLVSMRegressor(outputscale_init=-1), "outputscale_init must be > 0"),
        (GPLVSMRegressor(optimizer=Adam(max_iter=0)), "max_iter must be >= 1"),
        (GPLVSMRegressor(LDKSpec(rho=float("nan"))), "rho must be finite"),
        (SparseGPLVSMRegressor(optimizer=MiniBatch(batch_size=0)), "batch_size must be >= 1"),
        (SparseGPLVSMRegressor(LDKSpec(rho=-1)), "rho must be >= 0"),
    ],
)
def test_bad_arguments_name_themselves(corpus, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(corpus.texts, corpus.y)


def test_latent_dim_must_be_an_integer(corpus):
    with pytest.raises(TypeError, match="latent_dim must be an integer"):
        GPLVSMRegressor(LDKSpec(latent_dim=1.5)).fit(corpus.texts, corpus.y)


@pytest.mark.parametrize("estimator", [GPLVSMRegressor(), SparseGPLVSMRegressor()])
def test_fitting_on_no_documents_is_a_clear_error(estimator):
    with pytest.raises(ValueError, match="X holds no documents"):
        estimator.fit([], [])


def test_vocabulary_rejects_bad_filters():
    with pytest.raises(ValueError, match="max_features must be None or a positive integer"):
        Vocabulary(max_features=-1).fit(["one two three"])
    with pytest.raises(ValueError, match="min_df must be"):
        Vocabulary(min_df=0).fit(["one two three"])
    with pytest.raises(TypeError, match="max_df must be an int"):
        Vocabulary(max_df=True).fit(["one two three"])


def test_tokens_are_nfc_and_keep_combining_marks_and_other_scripts():
    vocab = Vocabulary(min_token_len=2, stop_words=None)
    assert vocab.tokenize(unicodedata.normalize("NFD", "café naïve")) == ["café", "naïve"]
    assert vocab.tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert vocab.tokenize("İstanbul") == ["i̇stanbul"]  # lower-cased İ keeps its combining dot
    assert vocab.tokenize("Москва и Київ") == ["москва", "київ"]
    assert vocab.tokenize("x_y 3d don't") == ["don"]


# ------------------------------------------------------------------ issue 28: the newer models
# One test per defect of the second outside fuzz (numbered as in the issue); the property
# tests of the same surfaces are in test_properties.py.


def _clgp_fit(codes, cards, **kwargs):
    import pyro

    from lvgp.models.clgp import CLGP

    pyro.clear_param_store()
    options = dict(
        num_inducing=6, elbo_samples=2, optimizer=Adam(max_iter=20, lr=0.05), impute_iter=15, dtype="float64"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CLGP(**{**options, **kwargs, "random_state": 0}).fit(codes, cards)


def _categorical(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 2, n)], 1), [2, 3, 2]


def test_clgp_rows_do_not_depend_on_the_rest_of_the_batch():
    """Defect 1: four identical rows got 0.49 / 0.55 / 0.53 / 0.52 and permuting rows changed
    values by 0.025 (all rows shared one stream of Monte Carlo draws)."""
    codes, cards = _categorical()
    clgp = _clgp_fit(codes, cards)
    row = np.array([[0, 1, -1]])
    alone = clgp.predict_proba(row)[2]
    four = clgp.predict_proba(np.repeat(row, 4, 0))[2]
    np.testing.assert_allclose(four, np.repeat(alone, 4, 0), rtol=0, atol=1e-12)
    rows = np.array([[0, 1, -1], [1, -1, 0], [-1, 2, 1], [1, 0, -1]])
    order = np.array([2, 0, 3, 1])
    straight, permuted = clgp.predict_proba(rows), clgp.predict_proba(rows[order])
    for a, b in zip(straight, permuted):
        np.testing.assert_allclose(a[order], b, rtol=0, atol=1e-12)


def test_clgp_auto_latent_scale_with_few_usable_rows_warns_and_fits():
    """Defect 2: 50 rows, 6 with two observed values: numpy's 'Cannot take a larger sample'."""
    codes, cards = _categorical(50)
    codes[6:, 1:] = -1  # rows 6.. have one observed value
    with pytest.warns(UserWarning, match="6 of 50 rows have two observed values"):
        from lvgp.models.clgp import CLGP

        CLGP(num_inducing=4, elbo_samples=1, optimizer=RMSprop(max_iter=5), impute_iter=3, random_state=0).fit(
            codes, cards
        )


def test_clgp_pca_start_with_more_latent_dims_than_components():
    """Defect 3: init='pca' with latent_dim above min(rows, one-hot columns): a torch size mismatch."""
    codes, cards = _categorical(5)
    clgp = _clgp_fit(codes, cards, latent_dim=9, num_inducing=3)
    assert clgp.latent_means_.shape == (5, 9) and np.isfinite(clgp.latent_means_).all()


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan")])
def test_clgp_lengthscale_init_is_checked(value):
    """Defect 4: lengthscale_init 0, -1 or NaN ended in a Cholesky LinAlgError."""
    from lvgp.models.clgp import CLGP

    codes, cards = _categorical()
    with pytest.raises(ValueError, match="lengthscale_init"):
        CLGP(lengthscale_init=value, optimizer=RMSprop(max_iter=2)).fit(codes, cards)


def test_clgp_takes_reversed_views():
    """Defect 5: codes[::-1] failed in torch.from_numpy (negative strides)."""
    codes, cards = _categorical()
    a = _clgp_fit(codes[::-1], cards)
    b = _clgp_fit(np.ascontiguousarray(codes[::-1]), cards)
    np.testing.assert_array_equal(a.latent_means_, b.latent_means_)


def _zero_vector_kernel(level2="cosine", **options):
    import torch

    from lvgp.kernels import LatentDistributionKernel

    k = LatentDistributionKernel(4, 2, "linear", level2, **options).double()
    k.latent = torch.zeros(4, 2, dtype=torch.float64)
    return k


def test_cosine_of_a_zero_embedding_is_zero_in_the_gram_and_the_diagonal():
    """Defect 6: a zero mean embedding had k(x, diag=True) = 1 and k(x).diagonal() = 0."""
    import torch

    x = torch.tensor([[0, 1, -1], [2, 3, 3]])
    k = _zero_vector_kernel()
    with torch.no_grad():
        torch.testing.assert_close(k(x, diag=True), k(x).to_dense().diagonal(), rtol=0, atol=0)
        assert k(x, diag=True).abs().max() == 0


def test_cosine_of_vectors_that_cancel_is_zero_in_every_word_order():
    """Defect 7: word vectors summing to zero gave cosine 0 in one order and -1 in another."""
    import torch

    k = _zero_vector_kernel()
    with torch.no_grad():
        k.latent = torch.tensor([[0.1, 0.7], [0.2, -0.3], [-0.3, -0.4], [1.0, 1.0]], dtype=torch.float64)
        other = torch.tensor([[3]])
        values = [k(torch.tensor([list(p)]), other).to_dense().item() for p in itertools.permutations([0, 1, 2])]
    assert values == [0.0] * 6


def test_cosine_gradients_are_finite_at_tiny_vectors_in_float32():
    """Defect 8: in float32, gradients were NaN at vector scale 1e-15 while values were right."""
    import torch

    from lvgp.kernels import LatentDistributionKernel

    k = LatentDistributionKernel(4, 2, "linear", "cosine", seed=0)
    with torch.no_grad():
        k.latent = k.latent * 1e-15
    x = torch.tensor([[0, 1], [2, 3]])
    k(x).to_dense().sum().backward()
    assert torch.isfinite(k.word_vectors.raw_latent.grad).all()


@pytest.mark.parametrize("scale", [1e308, 1e-320])
def test_uniform_word_weights_at_the_extremes_are_the_uniform_measure(scale):
    """Defect 9: uniform weights of 1e308 gave the zero measure, 1e-320 values near 1e-25."""
    import torch

    from lvgp.kernels import LatentDistributionKernel

    x = torch.tensor([[0, 1, -1], [2, 3, 1]])
    plain = LatentDistributionKernel(4, 2, "rbf", "linear", seed=0).double()
    weighted = LatentDistributionKernel(
        4, 2, "rbf", "linear", seed=0, word_weights=torch.full((4,), scale, dtype=torch.float64)
    ).double()
    with torch.no_grad():
        torch.testing.assert_close(weighted(x).to_dense(), plain(x).to_dense(), rtol=1e-12, atol=0)


def test_word_vector_arguments_name_themselves():
    """Defects 10-13: numpy integers rejected; word_weights='idf' failing inside torch;
    projection_scale=nan giving NaN vectors; an init of the wrong batch shape failing in torch."""
    import torch

    from lvgp.kernels import LatentDistributionKernel, make_word_vectors

    assert make_word_vectors(np.int64(5), np.int64(2)).vectors.shape == (5, 2)
    with pytest.raises((TypeError, ValueError), match="word_weights"):
        LatentDistributionKernel(5, 2, word_weights="idf")
    with pytest.raises(ValueError, match="projection_scale"):
        make_word_vectors(5, 2, word_features=np.ones((5, 3)), projection_scale=float("nan"))
    with pytest.raises(ValueError, match="init_scale"):
        make_word_vectors(5, 2, init_scale=float("inf"))
    with pytest.raises(ValueError, match=r"\*batch_shape x num_words x latent_dim = \(2, 5, 2\); got \(3, 5, 2\)"):
        make_word_vectors(5, 2, batch_shape=torch.Size([2]), init=torch.zeros(3, 5, 2))
    assert make_word_vectors(5, 2, batch_shape=torch.Size([2]), init=torch.zeros(1, 5, 2)).vectors.shape == (2, 5, 2)


TEXTS = ["good movie great", "bad film awful", "great acting good", "awful plot bad", "fine good film", "bad bad"]
LABELS = [1, 0, 1, 0, 1, 0]


@pytest.mark.parametrize(
    "make, value",
    [
        ("LDKGPClassifier", 0),  # defect 14: ZeroDivisionError
        ("LDKGPClassifier", -1),  # and a TypeError about complex numbers
        ("LDKMatcher", 0),  # defect 15: inside randomized_svd
        ("LDKMatcher", 2.5),
    ],
)
def test_latent_dim_names_itself(make, value):
    import lvgp

    est = getattr(lvgp, make)(LDKSpec(latent_dim=value), optimizer=LBFGS(max_iter=2))
    with pytest.raises((TypeError, ValueError), match="latent_dim"):
        est.fit(TEXTS, LABELS) if make != "LDKMatcher" else est.fit(TEXTS, TEXTS)


def test_matcher_svd_start_with_a_single_word_side():
    """Defect 16: init='svd' crashed ('n_components ... Got 0') with a one-word side."""
    from lvgp import LDKMatcher

    source = ["hund katze", "katze maus", "hund maus", "maus"]
    for init in ("svd", "pca", "cca", "random"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LDKMatcher(LDKSpec(latent_dim=2, rho=0.01), init=init, optimizer=LBFGS(max_iter=3), random_state=0).fit(
                source, ["dog"] * 4
            )
        assert np.isfinite(m.distances(source, ["dog"] * 4)).all()


@pytest.mark.parametrize(
    "name, value", [("init_scale", 1e300), ("init_scale", float("inf")), ("svm_tol", 0.0), ("svm_tol", -1.0)]
)
def test_latent_smm_scale_and_tolerance_name_themselves(name, value):
    """Defect 17: init_scale=1e300 ended in SVC's 'Input X contains NaN', inf in a message
    without the name, svm_tol=0 was reported as SVC's tol."""
    from lvgp import LatentSMMClassifier

    options = {"kernel": LDKSpec(init_scale=value)} if name == "init_scale" else {name: value}
    with pytest.raises(ValueError, match=name):
        LatentSMMClassifier(**options, optimizer=LBFGS(max_iter=2)).fit(TEXTS, LABELS)


def test_sparse_inducing_is_checked_whatever_n():
    """Defect 18: inducing='bogus' was accepted whenever n <= num_inducing."""
    with pytest.raises(ValueError, match="inducing"):
        SparseGPLVSMRegressor(inducing="bogus", num_inducing=64, optimizer=MiniBatch(max_steps=2)).fit(
            TEXTS, np.arange(6.0)
        )


def test_sparse_convergence_warning_names_the_budget_that_ended_the_fit():
    """Defect 19: max_epochs=3 said 'increase max_steps' and claimed a comparison that never ran."""
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning) as caught:
        SparseGPLVSMRegressor(optimizer=MiniBatch(batch_size=2, max_epochs=3), random_state=0).fit(
            TEXTS, np.arange(6.0)
        )
    message = str([w for w in caught if w.category is ConvergenceWarning][0].message)
    assert "increase max_epochs" in message and "rule was never applied" in message and "max_steps" not in message
    for name, value in (("tol", float("nan")), ("convergence_window", 0), ("max_steps", float("inf"))):
        with pytest.raises((TypeError, ValueError), match=name):
            SparseGPLVSMRegressor(**{name: value}).fit(TEXTS, np.arange(6.0))
    from lvgp import LatentSMMClassifier

    for name, value in (("C", float("inf")), ("max_iter", float("inf"))):
        with pytest.raises((TypeError, ValueError), match=name):
            LatentSMMClassifier(**{name: value}).fit(TEXTS, LABELS)


def test_a_stop_word_document_gets_advice_that_works():
    """Newcomer 1: the error said "pass on_empty='keep'", which no estimator accepted then; the regressor takes it
    now, and each way out the error names works."""
    from lvgp import Vocabulary

    texts, y = ["the of and", *TEXTS[1:]], np.arange(6.0)
    with pytest.raises(ValueError, match=r"rows \[0\].*vocabulary=lvgp.Vocabulary\(stop_words=None\)") as err:
        GPLVSMRegressor(optimizer=Adam(max_iter=2)).fit(texts, y)
    assert "on_empty='keep'" in str(err.value)
    _fit(
        GPLVSMRegressor(optimizer=Adam(max_iter=2), vocabulary=Vocabulary(stop_words=None)), texts, y
    )  # the advice works
    _fit(GPLVSMRegressor(optimizer=Adam(max_iter=2), on_empty="keep"), texts, y)


def test_any_iterable_of_texts_is_documents():
    """Newcomer 2: a generator of texts gave "object of type 'generator' has no len()"."""
    a = _fit(GPLVSMRegressor(optimizer=Adam(max_iter=3), random_state=0), (t for t in TEXTS), np.arange(6.0))
    b = _fit(GPLVSMRegressor(optimizer=Adam(max_iter=3), random_state=0), TEXTS, np.arange(6.0))
    np.testing.assert_array_equal(a.predict(iter(TEXTS[:2])), b.predict(TEXTS[:2]))


@pytest.mark.parametrize("y", [["1", "2", "3", "4", "5", "6"], np.array(["a"] * 6, dtype=object)])
def test_regressors_reject_string_targets(y):
    """Newcomer 3: string targets were converted silently (scikit-learn rejects them)."""
    with pytest.raises(TypeError, match="y must be numeric regression targets"):
        GPLVSMRegressor(optimizer=Adam(max_iter=2)).fit(TEXTS, y)


def test_studies_warn_on_the_console_when_they_drop_rows():
    """Newcomer 4: 'lvgp compare regression' dropped 4 empty training documents silently."""
    from lvgp.experiments.study import warn_dropped
    from lvgp.warnings import EmptyDocumentsWarning

    cells = [{"dropped_empty_train": 4}, {"dropped_empty_train": 0}, {"dropped_empty_train": 2, "rmse": 1.0}]
    with pytest.warns(EmptyDocumentsWarning, match=r"dropped_empty_train: 4 rows dropped in the worst of 2 of 3"):
        warn_dropped(cells)


# ------------------------------------------------------------------ the second outside fuzz (issue 40)
REVIEWS = ["good film great acting", "bad film awful plot", "great plot good music", "awful acting bad music"] * 2
SENTIMENTS = np.array(["pos", "neg"] * 4)


def test_variational_word_vectors_average_several_samples_per_objective():
    """Defect 1: elbo_samples >= 2 crashed (the next sample was written into the buffer the last
    sample's graph still needed). Now the objective is the mean of the samples' objectives."""
    import torch

    reg = GPLVSMRegressor(LDKSpec(variational=True), optimizer=Adam(max_iter=3), elbo_samples=3, random_state=0)
    _fit(reg, REVIEWS, np.arange(8.0))
    assert np.isfinite(reg.loss_curve_).all() and len(reg.loss_curve_) == 3
    vectors = reg.model_.ldk.word_vectors
    first, second = torch.randn(vectors.latent_noise.shape), torch.randn(vectors.latent_noise.shape)
    vectors.latent_noise = first
    assert torch.equal(vectors.latent_noise, first)
    vectors.latent_noise = second  # replaced, not written into: an earlier graph keeps its draw
    assert torch.equal(first, first.clone())


@pytest.mark.parametrize("cls", ["GPLVSMRegressor", "SparseGPLVSMRegressor", "GPRBFRegressor"])
@pytest.mark.parametrize("noise", [1e-5, 1e-4])
def test_noise_init_at_or_below_the_likelihoods_floor_is_refused(cls, noise):
    """Defect 6: noise_init in (0, 1e-4] passed the table and crashed inside gpytorch."""
    import lvgp

    with pytest.raises(ValueError, match=r"^noise_init must be > 0\.0001"):
        getattr(lvgp, cls)(noise_init=noise).fit(REVIEWS, np.arange(8.0))


def test_ngd_lr_is_bounded_and_named():
    """Defect 7: ngd_lr >= 2 ended in linear_operator's NotPSDError without context."""
    from lvgp import LDKGPClassifier

    with pytest.raises(ValueError, match=r"^optimizer.ngd_lr must be <= 1"):
        LDKGPClassifier(inference="variational", optimizer=MiniBatch(ngd_lr=2.0)).fit(REVIEWS, SENTIMENTS)


@pytest.mark.parametrize("block", [-1, 0, 2.5, True])
def test_prediction_blocks_are_positive_integers(block):
    """Defect 8: block=-1 returned the class prior for every row; block=0 a bare range() error."""
    from lvgp import LDKGPClassifier

    clf = _fit(LDKGPClassifier(optimizer=LBFGS(max_iter=3), random_state=0), REVIEWS, SENTIMENTS)
    with pytest.raises((ValueError, TypeError), match="block must be"):
        clf.predict_proba(REVIEWS, block=block)
    sparse = _fit(
        SparseGPLVSMRegressor(optimizer=MiniBatch(max_steps=3), num_inducing=4, random_state=0), REVIEWS, np.arange(8.0)
    )
    with pytest.raises((ValueError, TypeError), match="block must be"):
        sparse.predict(REVIEWS, block=block)


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf")])
def test_the_identity_weight_is_positive(weight):
    """Defect 9: LatentDistributionKernel(identity_weight=0.0) was accepted (raw -inf, lambda stuck)."""
    from lvgp import LatentDistributionKernel

    with pytest.raises(ValueError, match="identity_weight must be None or a finite number > 0"):
        LatentDistributionKernel(5, 2, identity_weight=weight)


def test_float64_word_weights_are_not_rounded_to_float32():
    """Defect 10: word_weights were cast to float32 at construction: the tf-idf cosine of a float64
    kernel was 2.7e-9 off scikit-learn's."""
    import torch
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.preprocessing import normalize

    from lvgp import BagOfWordsKernel
    from lvgp.bow.padded import padded_to_counts
    from lvgp.bow.weighting import idf_weights

    vocab = Vocabulary().fit(REVIEWS)
    x = vocab.encode(REVIEWS)
    idf = idf_weights(x, len(vocab))
    kernel = BagOfWordsKernel(len(vocab), "cosine", word_weights=idf).double()
    assert kernel.word_weights.dtype == torch.float64
    counts = padded_to_counts(x, len(vocab))
    tfidf = normalize(TfidfTransformer().fit_transform(counts)).toarray()
    with torch.no_grad():
        gram = kernel(x).to_dense().numpy()
    np.testing.assert_allclose(gram, tfidf @ tfidf.T, rtol=0, atol=1e-15)
    assert BagOfWordsKernel(len(vocab), word_weights=idf.astype(np.float32)).word_weights.dtype == torch.float32


def test_svm_tol_is_bounded():
    """Also seen: LatentSMMClassifier(svm_tol=1e-300) hung in LIBSVM."""
    from lvgp import LatentSMMClassifier

    with pytest.raises(ValueError, match=r"^svm_tol must be >= 1e-10"):
        LatentSMMClassifier(svm_tol=1e-300).fit(REVIEWS, SENTIMENTS)


def test_the_meta_device_is_refused_at_fit():
    """Also seen: device="meta" passed the device check and failed deep inside."""
    with pytest.raises(ValueError, match="device must be a device that holds data"):
        GPLVSMRegressor(device="meta").fit(REVIEWS, np.arange(8.0))


def test_a_nan_validation_score_is_an_error_not_a_silent_choice():
    """Also seen: minimize kept the initial parameters when the validation score was NaN, and
    fit_stochastic warned that the score "still improved"."""
    import torch

    from lvgp.base.fitting import fit_stochastic, minimize

    p = torch.nn.Parameter(torch.tensor([3.0], dtype=torch.float64))
    with pytest.raises(FloatingPointError, match="validation score became nan after 1"):
        minimize([p], lambda: (p - 1).pow(2).sum(), max_iter=10, validate=lambda: float("nan"))
    with pytest.raises(FloatingPointError, match="validation score became nan after 1 iterations"):
        fit_stochastic(
            lambda it: (p - 1).pow(2).sum().detach(),
            max_iter=5,
            rule=None,
            what="toy",
            validate=lambda: float("nan"),
        )


def test_after_ctrl_c_adam_keeps_the_parameters_that_scored_best():
    """Also seen: after Ctrl-C, Adam kept the parameters one step past the best validated ones. Adam
    runs in the one torch loop (issue 58): with validation, the best validated parameters are kept;
    without, the fit ends where it is, every completed step recorded."""
    import torch

    from lvgp.base.fitting import BestOfWindowStopping, fit_adam

    p = torch.nn.Parameter(torch.tensor([3.0], dtype=torch.float64))
    seen, scored = [], []

    def objective():
        if len(seen) == 6:
            raise KeyboardInterrupt
        seen.append(p.item())
        return (p - 1.0).pow(2).sum()

    def score():
        scored.append(p.item())
        return abs(p.item() - 2.5)  # best at the second step's parameters

    with pytest.warns(RuntimeWarning, match="interrupted"):
        result = fit_adam([p], objective, lr=0.1, max_iter=100, rule=BestOfWindowStopping(3, 0.0), validate=score)
    assert result.interrupted and len(result.loss_curve) == 6
    assert p.item() == scored[int(np.argmin(result.validation_curve))]  # the best validated parameters


def test_unknown_word_embeddings_name_the_parameter():
    """Also seen: word_embeddings='bogus' did not name the parameter."""
    with pytest.raises(ValueError, match=r"kernel\.word_embeddings: unknown word embeddings 'bogus'"):
        GPLVSMRegressor(LDKSpec(word_embeddings="bogus")).fit(REVIEWS, np.arange(8.0))


def test_words_without_a_positive_co_occurrence_get_zero_vectors():
    """Also seen: ppmi_svd_embeddings gave such words noise vectors of ~1e-9 instead of zeros."""
    import scipy.sparse as sp

    from lvgp.base.embeddings import ppmi_svd_embeddings

    counts = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]))
    vectors = ppmi_svd_embeddings(counts, 2, random_state=0)
    assert np.all(vectors[2] == 0.0)  # word 2 co-occurs with nothing


def test_warnings_point_at_the_users_line():
    """User trial: warnings pointed into lvgp's files; now at the line that called lvgp."""
    import lvgp

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = GPLVSMRegressor(optimizer=Adam(max_iter=2)).fit(REVIEWS, np.arange(8.0))  # ConvergenceWarning
        model.predict(["good unknownword", "nothing known here"])  # UnseenWords- and EmptyDocumentsWarning
        lvgp.LDKGPClassifier(optimizer=lvgp.LBFGS(max_iter=2)).fit(REVIEWS, SENTIMENTS)
    kinds = {w.category.__name__ for w in caught}
    assert {"ConvergenceWarning", "UnseenWordsWarning", "EmptyDocumentsWarning"} <= kinds
    assert all(w.filename == __file__ for w in caught), [(w.category.__name__, w.filename) for w in caught]


@pytest.mark.parametrize("inference", ["dirichlet", "laplace", "variational"])
def test_the_gp_classifier_scores_no_documents_as_no_rows(inference):
    """``score_samples([])`` (every novelty score) and ``predict_latent([])`` give no row, as ``predict`` and
    ``predict_proba`` do (it raised an AttributeError: no block filled the latent outputs)."""
    from lvgp import LDKGPClassifier

    x = ["good great fine", "great nice good", "fine good nice", "bad awful dull", "awful weak bad", "dull bad weak"]
    y = ["pos"] * 3 + ["neg"] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimizer = MiniBatch(max_steps=5) if inference == "variational" else LBFGS(max_iter=3)
        clf = LDKGPClassifier(inference=inference, optimizer=optimizer, random_state=0).fit(x, y)
    mean, var = clf.predict_latent([])
    width = clf.predict_latent(["good"])[0].shape[1]  # a latent a class; one for two classes with a probit
    assert mean.shape == var.shape == (0, width)
    assert clf.predict_proba([]).shape == (0, 2) and clf.predict([]).shape == (0,)
    for score in ("energy", "entropy", "max-probability", "variance") + (
        ("lifted-energy",) * (inference == "dirichlet")
    ):
        clf.set_params(novelty_score=score)
        scores = clf.score_samples([])
        assert scores.shape == (0,) and scores.dtype == np.float64, score
