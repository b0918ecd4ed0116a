"""``LDKGPClassifier(on_empty="keep")``: training texts without a word of the vocabulary (short queries of stop words)
kept as the empty set, where no sentence encoder reads them. Checked against the GP regression on the transformed
labels written out with the empty documents' kernel rows zero (the kernel evaluated on the other documents alone)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from lvgp.bow.padded import pad_to_common_width
from lvgp.kernels import BagOfWordsSpec, LDKSpec
from lvgp.models.gpc import LDKGPClassifier
from lvgp.warnings import EmptyDocumentsWarning

TEXTS = [
    "great film",
    "no",
    "awful film",
    "what is it",
    "great acting great music",
    "awful plot",
    "a fine cast",
    "dull plot",
    "great fun",
    "it is not",
    "dull acting",
    "fine music",
]
LABELS = ["good", "bad", "bad", "bad", "good", "bad", "good", "bad", "good", "good", "bad", "good"]
EMPTY = [1, 3, 9]  # of stop words alone


def kernel_of_the_others(covar, inputs, known, x_test) -> tuple[np.ndarray, np.ndarray]:
    """The training Gram of a model that kept the empty texts, checked to be the kernel of the ``known`` documents
    alone (no padding-only row passes the kernel's check there) with zero rows and columns around it (``n x n``,
    returned), and the new documents' ``x_test`` cross-covariance with the known ones, zero columns at the others
    (``t x n``)."""
    n = inputs.shape[0]
    with torch.no_grad():
        whole = covar(inputs).to_dense().numpy()
        others = np.zeros((n, n))
        others[np.ix_(known, known)] = covar(inputs[known]).to_dense().numpy()
        x_test, x_known = pad_to_common_width(x_test, inputs[known])
        cross = np.zeros((x_test.shape[0], n))
        cross[:, known] = covar(x_test, x_known).to_dense().numpy()
    np.testing.assert_allclose(whole, others, rtol=1e-12, atol=1e-14)
    assert (whole[[i for i in range(n) if i not in known]] == 0).all()
    return others, cross


def _classifier(**params) -> LDKGPClassifier:
    return LDKGPClassifier(BagOfWordsSpec(), class_hyperparameters="shared", random_state=0, **params)


# refused by default, the error offering on_empty="keep"; a covariance with no document kernel refused; the
# variational inference's keep: tests/test_sparse_empty_documents.py


def test_kept_empty_texts_are_zero_rows_of_the_kernel_in_the_gp_regression_written_out():
    with pytest.warns(EmptyDocumentsWarning, match=r"3 of 12 training documents .*rows \[1, 3, 9\].*kept as the empty"):
        clf = _classifier(on_empty="keep").fit(TEXTS, LABELS)
    model, lik = clf.model_, clf.likelihood_
    inputs = model.train_inputs[0]
    known = [i for i in range(len(TEXTS)) if i not in EMPTY]
    test = ["great plot", "awful music", "fine"]
    K, cross = kernel_of_the_others(model.covar_module, inputs, known, clf.encoder_.transform(test))
    with torch.no_grad():
        noise = (lik.noise_covar.noise + lik.second_noise_covar.noise).numpy()  # C x n
        targets, means = lik.transformed_targets.numpy(), model.mean_module.constant.numpy().ravel()
    mean, _ = clf.predict_latent(test)
    for c in range(len(clf.classes_)):  # R&W eq. 2.23 on the transformed labels (Milios et al. 2018, eq. 8)
        written = means[c] + cross @ np.linalg.solve(K + np.diag(noise[c]), targets[c] - means[c])
        np.testing.assert_allclose(mean[:, c], written, rtol=1e-8, atol=1e-10)
    # an empty text informs the classes' constant means alone: a fit without them has other means
    rest = _classifier().fit([TEXTS[i] for i in known], [LABELS[i] for i in known])
    assert not np.allclose(rest.model_.mean_module.constant.detach().numpy(), means)


@pytest.mark.parametrize(
    "params",
    [{"inference": "laplace"}, {"calibration": "temperature", "novelty_score": "lifted-energy"}, {"kernel": "ldk"}],
    ids=["laplace", "temperature", "ldk"],
)
def test_kept_empty_texts_fit_every_inference_and_reload_bit_exactly(params, tmp_path):
    params = dict(params)
    if params.pop("kernel", None) == "ldk":
        clf = LDKGPClassifier(LDKSpec(latent_dim=2, rho=0.5), random_state=0, on_empty="keep", **params)
    else:
        clf = _classifier(on_empty="keep", **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(TEXTS, LABELS)
        proba = clf.predict_proba(["great plot", "no", "dull film"])
        scores = clf.score_samples(["great plot", "dull film"])
    assert np.isfinite(proba).all() and np.isfinite(scores).all()
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(proba[1], clf.class_prior_)  # a test text of no known word: the class frequencies
    assert (proba[[0, 2]].argmax(1) == [clf.classes_.tolist().index("good"), clf.classes_.tolist().index("bad")]).all()
    clf.save(tmp_path / "gpc.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = LDKGPClassifier.load(tmp_path / "gpc.pt")
        assert loaded.on_empty == "keep"
        np.testing.assert_array_equal(loaded.predict_proba(["great plot", "no", "dull film"]), proba)


def test_the_classification_studys_plus_gp_keeps_empty_texts_with_every_inference():
    """``ldk-gpc-plus`` (the classification study's default GP) keeps a labelled text of stop words alone, where its
    cell failed on short texts, with every ``--gpc-inference`` (the variational one's inducing documents are the
    others)."""
    from types import SimpleNamespace

    from lvgp.datasets import WordEmbeddings
    from lvgp.experiments.registry import _METHODS

    words = ["great", "film", "awful", "acting", "music", "plot", "fine", "cast", "dull", "fun"]
    glove_like = WordEmbeddings("toy", words, np.random.default_rng(0).normal(size=(len(words), 3)))
    models = {}
    for inference in ("dirichlet", "laplace", "variational"):
        options = SimpleNamespace(
            gpc_inference=inference,
            gpc_objective="evidence",
            embeddings=glove_like,
            unlabeled="none",
            ldk_max_iter=5,
            cell_seed=lambda cell: 0,
        )
        models[inference] = _METHODS["classification"]["ldk-gpc-plus"].build(options, {}, None)
        assert models[inference].on_empty == "keep"
    for inference in ("dirichlet", "variational"):
        with pytest.warns(EmptyDocumentsWarning, match=r"3 of 12 training documents"):
            proba = models[inference].fit(TEXTS, LABELS).predict_proba(["fine plot"])
        assert np.isfinite(proba).all()


def test_the_latent_smm_keeps_empty_texts_as_the_zero_embedding_its_predictions_give_them(tmp_path):
    """``LatentSMMClassifier(on_empty="keep")``: a training text of stop words alone is a zero row of the Gram (the
    zero mean embedding, as its predictions read such a text), the machine is LIBSVM's on that Gram, and a saved
    machine reloads to the bit; an RBF level 2, whose empty set is not 0, is refused."""
    from sklearn.svm import SVC

    from lvgp import LatentSMMClassifier

    spec = LDKSpec(latent_dim=2, rho=0.5, level2="cosine")
    with pytest.raises(ValueError, match="on_empty='keep'"):
        LatentSMMClassifier(spec, random_state=0).fit(TEXTS, LABELS)
    with pytest.warns(EmptyDocumentsWarning, match=r"3 of 12 training documents .*rows \[1, 3, 9\]"):
        smm = LatentSMMClassifier(spec, C=2.0, random_state=0, on_empty="keep").fit(TEXTS, LABELS)
    with torch.no_grad():
        gram = smm.kernel_(smm._x).to_dense().numpy()
    assert (gram[EMPTY] == 0).all() and (gram[:, EMPTY] == 0).all()
    reference = SVC(C=2.0, kernel="precomputed", tol=smm.svm_tol, random_state=0).fit(gram, LABELS)
    test = ["great plot", "dull film", "no"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyDocumentsWarning)
        cross = smm._cross_gram(test)  # the new texts' kernel rows ("no": zeros)
        decision = smm.decision_function(test)
    assert (cross[2] == 0).all()
    # the one pair's machine (lvgp's sign: the pair's first class positive, LIBSVM's the second)
    np.testing.assert_allclose(decision[:, 0], -reference.decision_function(cross), rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyDocumentsWarning)
        np.testing.assert_array_equal(smm.predict(test), reference.predict(cross))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyDocumentsWarning)
        smm.save(tmp_path / "smm.pt")
        loaded = LatentSMMClassifier.load(tmp_path / "smm.pt")
        np.testing.assert_array_equal(loaded.decision_function(test), decision)
    with pytest.raises(ValueError, match="level2 'linear' or 'cosine'"):
        LatentSMMClassifier(LDKSpec(latent_dim=2, level2="rbf"), on_empty="keep").fit(TEXTS, LABELS)
