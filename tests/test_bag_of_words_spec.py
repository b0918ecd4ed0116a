"""``BagOfWordsSpec``: the tf-idf kernel as an estimator's ``kernel=``, built on the training documents as an
``LDKSpec`` is. Checked against scikit-learn's tf-idf vectors (closed form), against the studies' hand-written
factories (the same predictions to the bit), and through save/load, ``set_params`` and a grid search."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch
from gpytorch.kernels import ScaleKernel
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import normalize

from lvgp import LBFGS, BagOfWordsSpec, GPLVSMRegressor, LDKGPClassifier, Vocabulary
from lvgp.base.constraints import ParameterError
from lvgp.kernels import BagOfWordsKernel

TOPICS = {"pos": "good great fine nice", "neg": "bad awful poor dull", "money": "tax bank money loan"}
TEST = ["good bank loan", "awful fine film", "nothing known here", "tax tax tax money"]


def _corpus(per_class=8, seed=0):
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(TOPICS[c].split(), 4)) + f" note{i % 3}" for i in range(per_class) for c in TOPICS]
    return texts, np.array([c for _ in range(per_class) for c in TOPICS])


@pytest.mark.parametrize("sublinear_tf", [False, True])
def test_the_default_is_scikit_learns_tfidf_cosine(sublinear_tf):
    """The built kernel's Gram is the linear kernel of scikit-learn's ``TfidfVectorizer`` rows (smoothed idf of
    the training documents, L2-normalized), on the training and on new documents."""
    texts, _ = _corpus()
    texts = [t + " good good good" * (i % 2) for i, t in enumerate(texts)]  # repeated words: sublinear counts
    vocab = Vocabulary().fit(texts)
    kernel = BagOfWordsSpec(sublinear_tf=sublinear_tf).build(len(vocab), vocab.encode(texts))
    assert isinstance(kernel, BagOfWordsKernel)
    options = dict(vocabulary=vocab.words, tokenizer=vocab.tokenize, lowercase=False, token_pattern=None)
    tfidf = TfidfVectorizer(smooth_idf=True, sublinear_tf=sublinear_tf, norm=None, **options).fit(texts)
    new = ["good bank loan", "tax tax tax money", "awful fine note1"]
    a, b = normalize(tfidf.transform(texts)), normalize(tfidf.transform(new))
    with torch.no_grad():
        gram = kernel(vocab.encode(texts), vocab.encode(new)).to_dense().numpy()
    np.testing.assert_allclose(gram, (a @ b.T).toarray(), rtol=1e-12, atol=1e-12)
    assert kernel(vocab.encode(texts)).to_dense().dtype == torch.float64


def test_the_fields_are_checked_and_named():
    with pytest.raises(ParameterError, match=r"kernel\.level2"):
        LDKGPClassifier(BagOfWordsSpec(level2="tfidf")).fit(*_corpus())
    with pytest.raises(ParameterError, match=r"kernel\.word_weighting"):
        GPLVSMRegressor(BagOfWordsSpec(word_weighting="bm25")).fit(_corpus()[0], np.arange(24.0))
    with pytest.raises(ParameterError, match=r"a BagOfWordsSpec instance, not the class"):
        LDKGPClassifier(BagOfWordsSpec).fit(*_corpus())
    with pytest.raises(TypeError, match="BagOfWordsSpec has no field latent_dim"):
        LDKGPClassifier(BagOfWordsSpec()).set_params(kernel__latent_dim=3)


def _classifier(kernel, **options):
    return LDKGPClassifier(
        kernel,
        class_hyperparameters="shared",
        alpha_epsilon=1e-6,
        calibration="temperature",
        novelty_score="lifted-energy",
        optimizer=LBFGS(max_iter=20),
        random_state=0,
        **options,
    )


def _outputs(model):
    return model.predict_proba(TEST), model.score_samples(TEST)


def test_with_an_encoder_it_is_the_open_set_studys_kernel_to_the_bit(tiny_encoder):
    """``LDKGPClassifier(BagOfWordsSpec(), sentence_encoder=..., encoder_kernel=...)`` is the studies' hand-written
    factory (the tf-idf cosine beside the encoder's part, :func:`~lvgp.kernels.packed.beside_encoder`):
    ``gpc-bow-encoder-rbf`` and ``gpc-bow-encoder`` of the open-set study give the same probabilities and
    novelty scores. Without an encoder, the sublinear spec taken as a spec (assembled, no output scale in a
    classifier) gives what ``gpc-bow``'s factory (which builds the same spec's kernel) gives as a user kernel."""
    from lvgp.experiments.open_set import _bag_of_words_beside_encoder, _tfidf_cosine

    encoder = tiny_encoder(None, 0)
    texts, labels = _corpus()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for part in ("rbf", "cosine"):
            study = _classifier(_bag_of_words_beside_encoder(part)(encoder.dim), sentence_encoder=encoder)
            spec = _classifier(BagOfWordsSpec(), sentence_encoder=encoder, encoder_kernel=part)
            study.set_params(encoder_weight="loo").fit(texts, labels)
            spec.set_params(encoder_weight="loo").fit(texts, labels)
            for a, b in zip(_outputs(study), _outputs(spec)):
                np.testing.assert_array_equal(b, a)
            assert spec.kernel_kind_ == "exact" and study.kernel_kind_ == "user"
        study = _classifier(functools.partial(_tfidf_cosine, sublinear_tf=True)).fit(texts, labels)
        spec = _classifier(BagOfWordsSpec(sublinear_tf=True)).fit(texts, labels)
        for a, b in zip(_outputs(study), _outputs(spec)):
            np.testing.assert_array_equal(b, a)


def test_the_docs_study_gp_is_the_open_set_studys_classifier_setting_for_setting(tiny_encoder):
    """docs/models/uncertainty.md's ``study_gp`` has every setting of the open-set study's ``gpc-bow-encoder-rbf``
    (its vocabulary, L-BFGS budget, evidence subset, score, ...) but the cell's seed; its kernel, given as a spec
    and ``encoder_kernel``, is the study's hand-written factory to the bit (the test above)."""
    import re
    import textwrap
    from pathlib import Path

    from lvgp.experiments.open_set import OpenSetStudy
    from lvgp.experiments.registry import _METHODS

    tiny_encoder(None, 0)  # the study's encoder name resolves to a tiny random one (its dimension read here)
    page = (Path(__file__).resolve().parent.parent / "docs" / "models" / "uncertainty.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, flags=re.S) if "study_gp =" in b]
    namespace: dict = {}
    exec(compile(textwrap.dedent(block), "docs/models/uncertainty.md", "exec"), namespace)  # noqa: S102 -- our docs
    docs = namespace["study_gp"].get_params(deep=False)
    cell = {"method": "gpc-bow-encoder-rbf", "split": 0, "per_class": 10, "params": {}}
    model = _METHODS["open-set"]["gpc-bow-encoder-rbf"].build(OpenSetStudy(dataset="r8", unknown_classes=2), cell, None)
    built = model.get_params(deep=False)
    assert docs["kernel"] == BagOfWordsSpec() and docs["encoder_kernel"] == "rbf"  # the factory's equal, above
    assert docs["vocabulary"] == built["vocabulary"]  # unfitted: their settings
    assert repr(docs["optimizer"]) == repr(built["optimizer"])
    skip = {"kernel", "encoder_kernel", "optimizer", "random_state"}
    assert {k: v for k, v in docs.items() if k not in skip} == {k: v for k, v in built.items() if k not in skip}


def test_a_saved_model_holds_its_spec_and_reloads_bit_identically(tmp_path, tiny_encoder):
    """The file holds the spec's fields: ``load`` needs no ``kernel=`` (a user factory's file does) and refuses
    one; the loaded classifier predicts to the bit."""
    tiny_encoder(None, 0)  # the encoder's name resolves to a tiny random one
    texts, labels = _corpus()
    model = _classifier(BagOfWordsSpec(sublinear_tf=True), sentence_encoder="all-MiniLM-L6-v2", encoder_kernel="rbf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(texts, labels)
        model.save(tmp_path / "model.pt")
        again = LDKGPClassifier.load(tmp_path / "model.pt")
        assert again.kernel == BagOfWordsSpec(sublinear_tf=True)
        for a, b in zip(_outputs(model), _outputs(again)):
            np.testing.assert_array_equal(b, a)
    with pytest.raises(ValueError, match="fitted with a BagOfWordsSpec, which it holds: load it without kernel="):
        LDKGPClassifier.load(tmp_path / "model.pt", kernel=BagOfWordsSpec())


def test_a_regressor_scales_it_as_a_spec_and_a_grid_searches_its_fields():
    """In a regressor the spec gets the output scale an LDKSpec gets (a user's kernel is taken as it is);
    ``kernel__sublinear_tf`` is a grid's parameter like an LDKSpec's fields."""
    texts, labels = _corpus()
    y = (labels == "pos") + 0.1 * np.arange(len(texts)) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        regressor = GPLVSMRegressor(BagOfWordsSpec(), optimizer=LBFGS(max_iter=10)).fit(texts, y)
        assert isinstance(regressor.model_.covar_module, ScaleKernel)
        assert isinstance(regressor.model_.covar_module.base_kernel, BagOfWordsKernel)
        search = GridSearchCV(_classifier(BagOfWordsSpec()), {"kernel__sublinear_tf": [False, True]}, cv=2)
        search.fit(texts, labels)
    assert search.best_estimator_.kernel == BagOfWordsSpec(sublinear_tf=search.best_params_["kernel__sublinear_tf"])
    assert len(search.cv_results_["params"]) == 2
