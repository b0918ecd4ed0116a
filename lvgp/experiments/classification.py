"""The text classification study (Andrade et al. 2018, section 3; thesis ch. 4.5): accuracy
and macro-F1 against the number of labelled training documents.

Protocol: for every split and training size, a stratified sample of ``train_size``
documents is drawn from the data set's training part (seeded by split and size; each class
gets at least one document when ``train_size`` allows it) and every method is fitted on it;
testing uses the standard test split (20ng, r8, r52) or, for a TSV, every document not
drawn for training at that size (up to ``test_size`` of them, drawn once per split).

The thesis's protocol (``--min-df-fraction 0.01``): words in fewer than that fraction of the
training documents are removed -- for every method of the cell, by giving each the texts
reduced to the words that pass (tokenized as :class:`~lvgp.Vocabulary` does: lower-case
letters, at least 3, no English stop words). Training documents left empty are dropped and
test documents left empty kept (each method's documented empty-document policy applies);
both are counted in the cell's record. The LDK classifiers choose every hyper-parameter of
the thesis's grids on a stratified 25% dev part of the training sample (q, rho, gamma and C
for the latent SMM; q and rho for the GP classifier, and its Dirichlet pseudo-count with
``--alpha-epsilons``; ``--dev-folds k`` uses stratified k-fold CV instead,
``--dev-scoring log-likelihood`` scores the GP classifiers by their log predictive
probability of the true class) and refit on the whole sample; the
baselines choose theirs by cross-validation inside the sample. Embeddings: GloVe 6B 50d.
Every warning raised while a method fits and predicts is counted in the cell's record.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._random import study_generator
from ..base.constraints import Integer, Real
from ..base.fit_options import LBFGS
from ..base.metrics import ECE_BINS, expected_calibration_error, log_loss, reliability_bins, reliability_curve
from ..datasets.loaders import corpus_names, load_corpus
from .registry import default_methods, register_method, register_study
from .selection import DEV_SCORINGS, DevSelected, InnerDev
from .study import (
    DEVICE_HELP,
    PARTIAL_NOTE,
    SizedCells,
    Study,
    check_encoder_methods,
    encoder_precision_option,
    gpc_objective_option,
    mean_cell,
    option,
    recorded_warnings,
)

BUILTIN = corpus_names("classification")
#: the thesis's grids (sec. 4.5): C in 2^-3, 2^-1, ..., 2^7; gamma in 10^-3 ... 10^3; rho; q
THESIS_CS = tuple(2.0**k for k in range(-3, 8, 2))
THESIS_GAMMAS = tuple(10.0**k for k in range(-3, 4))
THESIS_RHOS = (0.01, 0.1, 1.0)
THESIS_LATENT_DIMS = (2, 3, 4)


# ------------------------------------------------------------------ the methods (in table order)
@register_method(
    "classification",
    "gp-embed-logreg",
    "GP covariate embedding",
    default=True,
    record=lambda model, cell, data: dict(  # data: the cell's (training texts, labels)
        lengthscale=model.lengthscale_, noise=model.noise_, C=model.C_, n_covariates=len(model.words_)
    ),
    description="logistic regression on the tf-idf vectors smoothed by a GP over the words' GloVe vectors "
    "(Andrade et al. 2018); C by stratified 3-fold CV, the length-scale and noise by the joint MAP; a training text "
    "with no word of an embedding kept, the biases alone as its logits (on_empty='keep')",
)
def _gp_embed_logreg(study, cell, data):
    from ..baselines.gp_embedding import GPEmbeddingLogisticRegression

    return GPEmbeddingLogisticRegression(
        embeddings=study.embeddings,
        max_features=study.max_features,
        optimizer=LBFGS(max_iter=study.max_iter),
        random_state=study.cell_seed(cell),
        on_empty="keep",  # a text of stop words alone: a zero covariate row, as its predictions read one
    )


@register_method(
    "classification",
    "logreg",
    "LogReg (BoW)",
    default=True,
    record=lambda model, cell, data: dict(C=model.C_),
    description="logistic regression on tf-idf (default_tfidf: sublinear counts of the texts as written, the stop "
    "words but the negations), C in 0.1 ... 1e4 by stratified 3-fold CV on the log loss",
)
def _logreg(study, cell, data):  # tf-idf as practitioners run it, chosen on dev (benchmarks/bow_baseline_dev.py)
    from ..baselines.text_classifiers import TfidfLogisticRegression

    return TfidfLogisticRegression(random_state=study.cell_seed(cell))


@register_method("classification", "mean-embedding", "Mean embedding", default=True)
def _mean_embedding(study, cell, data):
    from ..baselines.text_classifiers import MeanEmbeddingClassifier

    return MeanEmbeddingClassifier(embeddings=study.embeddings, random_state=study.cell_seed(cell))


@register_method("classification", "bag-of-clusters", "Bag of clusters", default=True)
def _bag_of_clusters(study, cell, data):
    from ..baselines.text_classifiers import BagOfClustersClassifier

    return BagOfClustersClassifier(embeddings=study.embeddings, random_state=study.cell_seed(cell))


@register_method(
    "classification",
    "svm",
    "Linear SVM (BoW)",
    default=True,
    description="linear SVM on default_tfidf's features, C in 0.1 ... 100 by stratified 3-fold CV on accuracy "
    "(probabilities: Platt's)",
)
def _linear_svm(study, cell, data):  # default_tfidf's features, chosen on dev (bow_baseline_dev.py --svm)
    from ..baselines.encoder import default_tfidf
    from ..baselines.text_classifiers import BowClassifier

    return BowClassifier(model="svm", vectorizer=default_tfidf(), random_state=study.cell_seed(cell))


@register_method("classification", "slda", "sLDA (20 topics)")
def _slda(study, cell, data):
    from ..models.slda import SLDAClassifier

    return SLDAClassifier(20, random_state=study.cell_seed(cell))


def _smm_grid(study) -> dict[str, list]:
    return {
        "latent_dim": sorted(study.latent_dims),
        "rho": sorted(study.rhos, reverse=True),
        "gamma": sorted(study.gammas),
        "C": sorted(study.smm_cs),
        "level2": list(study.level2s),
        "word_weighting": list(study.word_weightings),
    }


def _smm_canonical(params: dict) -> dict:
    """The same latent SMM fit (exactly): gamma 1 and rho / gamma."""
    from ..models.latent_smm import equivalent_rho

    return {**params, "rho": float(f"{equivalent_rho(params['rho'], params['gamma']):.12g}"), "gamma": 1.0}


def _latent_smm(glove: bool):
    def build(study, cell, data):
        from ..kernels.spec import LDKSpec
        from ..models.latent_smm import LatentSMMClassifier

        return LatentSMMClassifier(
            LDKSpec(rho=0.1, word_embeddings=study.embeddings if glove else None),
            optimizer=LBFGS(max_iter=study.ldk_max_iter),
            random_state=study.cell_seed(cell),
        )

    return build


_SMM_SELECTION = InnerDev(_smm_grid, canonical=_smm_canonical, path="C")
register_method("classification", "latent-smm", "Latent SMM", selection=_SMM_SELECTION)(_latent_smm(glove=False))
register_method("classification", "latent-smm-glove", "Latent SMM (GloVe-tied)", selection=_SMM_SELECTION)(
    _latent_smm(glove=True)
)


def _gpc_grid(study) -> dict[str, list]:
    grid = {
        "latent_dim": sorted(study.latent_dims),
        "rho": sorted(study.rhos, reverse=True),
        "alpha_epsilon": sorted(study.alpha_epsilons, reverse=True),
        "level2": list(study.level2s),
        "word_weighting": list(study.word_weightings),
    }
    if study.gpc_inference != "dirichlet":  # the Dirichlet pseudo-count means nothing to the others
        del grid["alpha_epsilon"]
    return grid


#: the family of the GP classification methods that read the texts through the sentence encoder
#: (``Method.family``)
ENCODER_GPC_FAMILY = "gpc-encoder"


def with_gpc_inference(model, study):
    """A GP classification method's classifier with the study's ``--gpc-inference``: the Dirichlet
    inference as built (its hyper-parameters by ``--gpc-objective``), the Laplace inference of the softmax
    likelihood (untempered), or the variational one, tempered where the method is (``calibration="temperature"``:
    ``T`` from early stopping's held-out texts, whose fit also chooses the epochs; its softmax GP is as
    under-confident as the Laplace one's, ``benchmarks/README.md``, "variational_encoder_gpc.py")."""
    if study.gpc_inference == "dirichlet":
        return model.set_params(objective=study.gpc_objective)
    # the variational inference has no evidence to take of a subset (max_evidence_documents)
    if study.gpc_inference == "variational":  # mini-batch fits: the estimator's own optimizer
        tempered = model.calibration == "temperature"
        return model.set_params(
            inference="variational", optimizer=None, max_evidence_documents=None, early_stopping=tempered
        )
    # the Laplace inference's evidence costs C n^3 an evaluation: a method that takes a subset's evidence
    # (fixed word vectors, _ldk_gpc_plus) takes it beyond LAPLACE_EVIDENCE_DOCUMENTS (the mode and the
    # predictions on every document); learned word vectors (ldk-gpc) read every document
    subset = None if model.max_evidence_documents is None else LAPLACE_EVIDENCE_DOCUMENTS
    return model.set_params(inference=study.gpc_inference, calibration=None, max_evidence_documents=subset)


def _ldk_gpc(glove: bool):
    def build(study, cell, data):
        from ..kernels.spec import LDKSpec
        from ..models.gpc import LDKGPClassifier

        model = LDKGPClassifier(
            LDKSpec(rho=0.1, word_embeddings=study.embeddings if glove else None),
            optimizer=LBFGS(max_iter=study.ldk_max_iter),
            random_state=study.cell_seed(cell),
        )
        return with_gpc_inference(model, study)

    return build


register_method("classification", "ldk-gpc", "GP classifier (LDK)", selection=InnerDev(_gpc_grid))(
    _ldk_gpc(glove=False)
)
register_method("classification", "ldk-gpc-glove", "GP classifier (LDK, GloVe-tied)", selection=InnerDev(_gpc_grid))(
    _ldk_gpc(glove=True)
)


def _kernel_svm(kernel: str):
    def build(study, cell, data):
        from ..baselines.text_classifiers import KernelSVMClassifier

        return KernelSVMClassifier(kernel=kernel, random_state=study.cell_seed(cell))

    return build


register_method("classification", "svm-rbf", "RBF SVM (BoW)")(_kernel_svm("rbf"))
register_method("classification", "svm-poly", "Quadratic SVM (BoW)")(_kernel_svm("poly"))


# ------------------------------------------------------------------ LDK that contains the bag of words
def plus_embeddings(study) -> str | tuple[str, str]:
    """The -plus methods' word vectors: GloVe, and with ``--unlabeled pool`` also vectors learned
    from the training and unlabeled documents (``"corpus"``)."""
    return (study.embeddings, "corpus") if study.unlabeled == "pool" else study.embeddings


def _ldk_gpc_plus(study, cell, data):
    """The settings of ``ldk-gpc-plus``, the GP classifiers of the studies built on it share (with a sentence
    encoder, other kernels, ...)."""
    from ..kernels.spec import LDKSpec
    from ..models.gpc import LDKGPClassifier

    model = LDKGPClassifier(
        LDKSpec.plus(plus_embeddings(study), rho=0.1, identity_weight_prior_sd=PLUS_GPC_PRIOR_SD),
        class_hyperparameters="shared",
        alpha_epsilon=1e-6,
        calibration="temperature",
        optimizer=LBFGS(max_iter=max(study.ldk_max_iter, PLUS_GPC_MAX_ITER)),
        random_state=study.cell_seed(cell),
        max_evidence_documents=GPC_EVIDENCE_DOCUMENTS,
    )
    return with_gpc_inference(model, study)


@register_method(
    "classification",
    "ldk-gpc-plus",
    "GP classifier (LDK+BoW)",
    uses_unlabeled=True,
    default=True,
    description="Dirichlet GP classifier on the LDK+BoW kernel; lambda (the mix, under a log-normal prior around "
    "the balanced start) and one output scale and noise for all classes fitted by the marginal likelihood; the "
    "probabilities tempered by the temperature of its leave-one-out predictions (calibration='temperature'); a "
    "training text with no word of the vocabulary kept as the empty set (on_empty='keep')",
)
def _ldk_gpc_plus_method(study, cell, data):
    # a text of stop words alone: a zero kernel row, as a zero tf-idf row (never an inducing document)
    return _ldk_gpc_plus(study, cell, data).set_params(on_empty="keep")


#: L-BFGS budget of ldk-gpc-plus (a few hyper-parameters: it converges in 30-150 iterations)
PLUS_GPC_MAX_ITER = 300
#: the shared Dirichlet GP classifiers' hyper-parameters from the evidence of at most this many training
#: documents (a stratified subset; the posterior conditions on all): no committed cell has more, an intent
#: set of 150 classes at 100 a class (15,000) fits in minutes instead of hours; chosen on dev documents
#: (benchmarks/evidence_subset_dev.py)
GPC_EVIDENCE_DOCUMENTS = 2000
#: the same for --gpc-inference laplace, whose evaluation costs C n^3: the largest committed Laplace cell
#: (500 documents) reads every document; on 20ng dev documents a subset of 250 of 500 matched the whole
#: evidence, and 1,500 documents of 150 classes fit in 11.5 minutes from 300 instead of 30-60
#: (benchmarks/README.md, evidence_subset_dev.py and intent_scale.py)
LAPLACE_EVIDENCE_DOCUMENTS = 500
#: sd of ldk-gpc-plus's log-normal prior on lambda around the balanced start, chosen on dev documents
#: from {0.5, 1, 2} (benchmarks/ldk_plus_design.py): without it, the marginal likelihood of 50 20ng
#: documents switches the GloVe part off (lambda ~ 500) and loses 0.05 in dev accuracy
PLUS_GPC_PRIOR_SD = 0.5
#: lambda of the latent SMM's kernel cos(mean embeddings) + lambda * cos(tf-idf), chosen on dev with C
PLUS_SMM_IDENTITY_WEIGHTS = (0.5, 1.0, 2.0)


def _plus_smm_grid(study) -> dict[str, list]:
    return {"C": sorted(study.smm_cs), "identity_weight": list(PLUS_SMM_IDENTITY_WEIGHTS)}


@register_method(
    "classification",
    "latent-smm-plus",
    "Latent SMM (LDK+BoW)",
    selection=InnerDev(_plus_smm_grid, folds=3),
    uses_unlabeled=True,
    default=True,
    description="one-vs-rest SMM on the LDK+BoW kernel; lambda and C chosen by 3-fold CV inside the sample; a "
    "training text with no word of the vocabulary kept as the zero mean embedding (on_empty='keep')",
)
def _latent_smm_plus(study, cell, data):
    from ..kernels.spec import LDKSpec
    from ..models.latent_smm import LatentSMMClassifier

    # lambda is a dev-grid setting of the machine (the default 1 until the grid sets it)
    return LatentSMMClassifier(
        LDKSpec.plus(plus_embeddings(study), rho=0.1, identity_weight=1.0),
        multi_class="ovr",
        optimizer=LBFGS(max_iter=study.ldk_max_iter),
        random_state=study.cell_seed(cell),
        on_empty="keep",  # a text of stop words alone: a zero row of the Gram, as its predictions read one
    )


# ------------------------------------------------------------------ pretrained sentence encoders
#: C of the encoder's logistic regression, chosen by stratified 3-fold CV on the log loss (its
#: unit vectors need weak regularization: on r8 the search chose the largest of 0.1 ... 1000)
ENCODER_CS = (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)


def _encoder_logreg(tfidf: bool):
    def build(study, cell, data):
        from ..baselines.encoder import EncoderLogisticRegression

        return EncoderLogisticRegression(
            study.encoder,
            tfidf=tfidf,
            min_df=float(study.min_df_fraction) if study.min_df_fraction > 0 else 1,
            Cs=ENCODER_CS,
            device=study.device,
            random_state=study.cell_seed(cell),
        )

    return build


register_method(
    "classification",
    "encoder-logreg",
    "LogReg (encoder)",
    raw_texts=True,
    description="logistic regression on the pretrained sentence encoder's vectors (--encoder) of the texts as "
    "written; C by stratified 3-fold CV on the log loss inside the sample",
)(_encoder_logreg(tfidf=False))
register_method(
    "classification",
    "tfidf-encoder-logreg",
    "LogReg (tf-idf + encoder)",
    raw_texts=True,
    description="logistic regression on [tf-idf | encoder vectors] (default_tfidf: sublinear counts, the stop "
    "words but the negations, the study's min_df cut); C by stratified 3-fold CV on the log loss",
)(_encoder_logreg(tfidf=True))


@register_method(
    "classification",
    "encoder-gpc",
    "GP classifier (encoder)",
    raw_texts=True,
    family=ENCODER_GPC_FAMILY,
    description="Dirichlet GP classifier on the cosine of the encoder's vectors alone (one output scale and noise "
    "for all classes, tempered as ldk-gpc-plus)",
)
def _encoder_gpc(study, cell, data):
    from gpytorch.kernels import LinearKernel

    from ..kernels.packed import FeatureKernel

    return _gp_classifier_on_texts(study, cell, lambda dim: FeatureKernel(LinearKernel(), dim, normalize=True))


def _gp_classifier_on_texts(study, cell, kernel_of_dim=None):
    """``ldk-gpc-plus``'s classifier (its settings) reading the texts through the study's sentence
    encoder, its word parts the study's vocabulary cut; with ``kernel_of_dim``, the kernel that makes
    for the encoder's dimension ``d`` in place of the ``-plus`` spec."""
    from ..encoders import resolve_encoder

    model = _ldk_gpc_plus(study, cell, None)
    if kernel_of_dim is not None:
        model.set_params(kernel=kernel_of_dim(resolve_encoder(study.encoder, study.device).dim))
    return model.set_params(
        sentence_encoder=study.encoder,
        vocabulary=_cut_vocabulary(study),
        device=study.device,
        part_selection=None if study.part_selection == "none" else study.part_selection,
    )


@register_method(
    "classification",
    "ldk-gpc-encoder",
    "GP classifier (LDK+BoW+encoder)",
    raw_texts=True,
    family=ENCODER_GPC_FAMILY,
    uses_unlabeled=True,
    description="ldk-gpc-plus with the encoder's part beside the LDK+BoW kernel: mu times the cosine of the "
    "encoder's vectors, mu under a log-normal prior around the balanced start; lambda, mu, the output scale and "
    "noise fitted by the marginal likelihood; the word part reads the study's vocabulary cut, the encoder the texts "
    "as written",
)
def _ldk_gpc_encoder(study, cell, data):
    return _gp_classifier_on_texts(study, cell)


def _bag_of_words_beside_encoder(dim: int):
    """The kernel factory of ``bow-gpc-encoder``: the cosine of the tf-idf vectors (idf of the training
    documents) plus mu times the cosine of the encoder's vectors (:func:`~lvgp.kernels.packed.beside_encoder`)."""

    def factory(num_words, documents):
        from ..kernels import BagOfWordsSpec
        from ..kernels.packed import beside_encoder

        # documents: the training documents' word ids (the classifier unpacks them)
        return beside_encoder(BagOfWordsSpec().build(num_words, documents), documents, dim, "cosine")

    return factory


@register_method(
    "classification",
    "bow-gpc-encoder",
    "GP classifier (BoW+encoder)",
    raw_texts=True,
    family=ENCODER_GPC_FAMILY,
    description="ldk-gpc-encoder without the LDK: the cosine of the tf-idf vectors plus mu times the cosine of the "
    "encoder's vectors, mu (log-normal prior around the balanced start), the output scale and noise fitted by the "
    "marginal likelihood; the kernel of tfidf-encoder-logreg with its mix learned (benchmarks/encoder_design.py)",
)
def _bow_gpc_encoder(study, cell, data):
    return _gp_classifier_on_texts(study, cell, _bag_of_words_beside_encoder)


def _cut_vocabulary(study):
    """The vocabulary of the study's cut (``--min-df-fraction``), unfitted: the raw-text GP methods'
    word parts read the words the cut leaves (every word without a cut)."""
    from ..bow.vocabulary import Vocabulary

    return Vocabulary(min_df=float(study.min_df_fraction)) if study.min_df_fraction > 0 else None


@register_study
@dataclass(frozen=True)
class ClassificationStudy(SizedCells, Study):
    size_option = "train_sizes"
    size_key = "train_size"
    kind = "classification"
    inner_dev_selection = True
    help = "LDK classifiers, GP covariate-embedding logistic regression and BoW baselines against the training size"
    description = (
        "Per split and size: a stratified training sample from the training part; the standard test split (20ng, r8, "
        "r52) or the held-out rest of a TSV for testing; baselines tuned by CV inside the sample, the LDK classifiers "
        "on a dev part of it. --min-df-fraction 0.01 applies the thesis's vocabulary cut to every method."
    )

    dataset: str = option(help="20ng, r8, r52, or PATH.tsv (columns text and label)")
    train_sizes: tuple[int, ...] = option((50, 100, 200, 500), "training sample sizes")
    splits: int = option(5, "stratified training samples per size")
    methods: tuple[str, ...] = option(default_methods("classification"))
    test_size: int | None = option(None, "subsample the test documents (default: all)")
    min_df_fraction: float = option(
        0.0,
        "remove words in fewer than this fraction of the training documents, for every method (thesis: 0.01)",
        check=Real(0, 1, open_high=True),
    )
    embeddings: str = option("glove-6b-50d", "pretrained word vectors of the embedding and -glove methods")
    encoder: str = option(
        "all-MiniLM-L6-v2", "pretrained sentence encoder of the encoder methods (lvgp.encoders.ENCODERS)"
    )
    encoder_precision: str = encoder_precision_option()
    max_features: int = option(2000, "covariates of gp-embed-logreg (most frequent words)")
    max_iter: int = option(30, "L-BFGS iterations of gp-embed-logreg")
    ldk_max_iter: int = option(50, "L-BFGS iterations of every latent-smm and ldk-gpc fit")
    latent_dims: tuple[int, ...] = option(THESIS_LATENT_DIMS, "grid over q of the LDK classifiers")
    rhos: tuple[float, ...] = option(THESIS_RHOS, "grid over rho of the LDK classifiers")
    alpha_epsilons: tuple[float, ...] = option(
        (0.01,), "grid over the Dirichlet pseudo-count alpha_epsilon of ldk-gpc (Milios et al.'s default: 0.01)"
    )
    gammas: tuple[float, ...] = option(THESIS_GAMMAS, "grid over the RBF embedding bandwidth of latent-smm")
    level2s: tuple[str, ...] = option(
        ("linear",),
        "grid over the level-2 kernel of the LDK classifiers: linear (the thesis), cosine (the linear one "
        "normalized), rbf, poly; several are chosen on dev",
    )
    word_weightings: tuple[str, ...] = option(
        ("uniform",),
        "grid over the LDK classifiers' word weights in a document's mean embedding: uniform (the thesis) or idf; "
        "several are chosen on dev",
    )
    smm_cs: tuple[float, ...] = option(THESIS_CS, "grid over C of latent-smm")
    dev_path_iter: int = option(
        10,
        "latent-smm's dev grid walks C as a warm-started path per (q, rho/gamma): the largest C fitted with "
        "--ldk-max-iter iterations, each next one continued from it for this many; 0 fits every setting from the "
        "prior (the thesis; about 3x the time)",
        before=0,  # studies written before the path fitted every setting from the prior
        check=Integer(0),
    )
    dev_folds: int = option(
        1, "LDK classifiers' selection: 1 = one stratified 25%% dev part (the thesis); k > 1 = stratified k-fold"
    )
    gpc_inference: str = option(
        "dirichlet",
        "inference of every GP classification method (ldk-gpc*, encoder-gpc, bow-gpc-encoder): dirichlet (exact "
        "GPs on Dirichlet-transformed labels, tempered where the method says), laplace (the softmax likelihood, its "
        "Laplace approximation) or variational (softmax SVGP on inducing documents, mini-batches)",
        choices=("dirichlet", "laplace", "variational"),
        before="dirichlet",
    )
    gpc_objective: str = gpc_objective_option()
    part_selection: str = option(
        "none",
        "the encoder GP classifiers' composition (bow-gpc-encoder, ldk-gpc-encoder): none (the sum of the word "
        "and encoder parts as built), loo (each sub-composition fitted; one replaces the sum where its leave-one-out "
        "log probability of the training labels is higher by more than a standard error) or evidence (the highest "
        "evidence with BIC's Occam factor; lvgp.kernels.composition)",
        choices=("none", "loo", "evidence"),
        before="none",
    )
    dev_scoring: str = option(
        "accuracy",
        "what the LDK GP classifiers' selection maximizes on dev: accuracy (the thesis) or log-likelihood "
        "(mean log predictive probability of the true class); the latent SMM always uses accuracy",
        choices=DEV_SCORINGS,
    )
    unlabeled: str = option(
        "none",
        "unlabeled documents for the methods that learn word vectors from them (the -plus methods' 'corpus' "
        "vectors): none, or pool (the rest of the training split, never test documents)",
        choices=("none", "pool"),
    )
    seed: int = option(0, "seed of the samples and the methods", check=Integer(0))
    device: str = option("cpu", DEVICE_HELP)

    @property
    def n_splits(self) -> int:
        return self.splits

    def validate(self) -> None:
        from ..bow.weighting import WORD_WEIGHTINGS
        from ..kernels import LEVEL2_KERNELS

        super().validate()
        for name, known in (("level2s", LEVEL2_KERNELS), ("word_weightings", WORD_WEIGHTINGS)):
            values = getattr(self, name)
            if not values or any(v not in known for v in values):
                raise ValueError(f"{name} must name values from {tuple(known)}; got {values!r}")
        if int(self.dev_path_iter) != self.dev_path_iter or self.dev_path_iter < 0:
            raise ValueError(f"dev_path_iter must be a non-negative integer; got {self.dev_path_iter!r}")
        check_encoder_methods(self)
        encoders = [m for m in self.methods if self.method(m).family == ENCODER_GPC_FAMILY]
        if self.gpc_objective == "loo" and self.gpc_inference != "dirichlet":
            raise ValueError(
                f"--gpc-objective loo needs --gpc-inference dirichlet (closed-form leave-one-out predictions); got "
                f"--gpc-inference {self.gpc_inference}"
            )
        if self.gpc_inference == "variational" and encoders and self.part_selection != "none":
            raise ValueError(
                f"--part-selection {self.part_selection} compares what each sub-composition of {', '.join(encoders)} "
                "reaches by an evidence or closed-form leave-one-out predictions, which --gpc-inference variational "
                "has not: use dirichlet (or laplace with evidence), or --part-selection none"
            )

    def check_data(self) -> None:
        for n in self.train_sizes:  # bad input fails here, before any cell runs
            prepare(self, 0, n)

    def run_cell(self, cell: dict) -> dict:
        return run_cell(self, cell)

    def encoder_texts(self, split: int, size: int) -> Iterable[Sequence[str]]:
        """A cell's training and test documents (the methods of a split and size read the same; the test
        documents are every cell's, unless ``test_size`` subsamples them per split)."""
        return raw_cell_texts(self, split, size)

    def table(self, records: list[dict]) -> str:
        return table_markdown(records, self)

    figures_from_records = True

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        accuracy_figure(records, self, out / "accuracy_vs_train_size.png")
        reliability_figure(records, self, out / "reliability.png")


def check_sizes(study: ClassificationStudy, n: int) -> None:
    """A ``ValueError`` naming the options when a file of ``n`` labelled texts cannot hold the
    study's largest training size and a test part (the test documents are the file's rows not drawn
    for training at the largest size, or ``--test-size`` of them)."""
    largest = max(study.train_sizes)
    sizes = ",".join(str(s) for s in study.train_sizes)
    if study.test_size:
        if largest + study.test_size > n:
            raise ValueError(
                f"{study.dataset} has {n} rows: the largest of --train-sizes {sizes} ({largest}) and --test-size "
                f"{study.test_size} need {largest + study.test_size}; pass smaller --train-sizes or --test-size"
            )
    elif largest >= n:
        raise ValueError(
            f"{study.dataset} has {n} rows: the largest of --train-sizes {sizes} ({largest}) leaves none for testing "
            f"(the test documents are the rows not drawn for training); pass --train-sizes below {n}, e.g. "
            f"--train-sizes {max(2, n // 4)},{max(2, n // 2)}"
        )


def stratified_sample(labels: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` indices with class proportions kept (largest remainders), at least one per
    class when ``size`` >= the number of classes."""
    classes, codes = np.unique(labels, return_inverse=True)
    if size > len(labels):
        raise ValueError(f"train size {size} exceeds the {len(labels)} available training documents")
    if size < 2:
        raise ValueError("a training size needs at least two documents")
    counts = np.bincount(codes)
    share = counts / counts.sum() * size
    take = np.floor(share).astype(int)
    floor = 1 if size >= len(classes) else 0
    take = np.maximum(take, floor)
    while take.sum() > size:  # remove from the most over-served class that keeps its minimum
        take[np.argmax(np.where(take > floor, take - share, -np.inf))] -= 1
    while take.sum() < size:
        take[np.argmax(np.where(take < counts, share - take, -np.inf))] += 1
    return np.sort(
        np.concatenate([rng.choice(np.flatnonzero(codes == c), t, replace=False) for c, t in enumerate(take)])
    )


def _sample(study: ClassificationStudy, split: int, train_size: int):
    """The corpus, the training pool's texts and labels, the indices drawn for training, and the
    test indices of a TSV corpus (``None`` for a built-in one: its standard test split)."""
    corpus = load_corpus(study.dataset, "classification")
    pool_texts, pool_labels = corpus.train_texts, corpus.train_labels
    if study.dataset in BUILTIN:
        rng = study_generator(study.seed, "classification pool", split, train_size)
        return corpus, pool_texts, pool_labels, stratified_sample(pool_labels, train_size, rng), None
    rng = study_generator(study.seed, "classification pool", split)
    order = rng.permutation(len(pool_labels))
    check_sizes(study, len(pool_labels))
    n_test = study.test_size or (len(pool_labels) - max(study.train_sizes))
    test, rest = order[:n_test], order[n_test:]
    train = rest[
        stratified_sample(
            pool_labels[rest], train_size, study_generator(study.seed, "classification sample", split, train_size)
        )
    ]
    return corpus, pool_texts, pool_labels, train, test


@functools.lru_cache(maxsize=32)
def prepare(study: ClassificationStudy, split: int, train_size: int):
    """One split's training sample of ``train_size`` documents, its unlabeled pool and the test documents."""
    corpus, pool_texts, pool_labels, train, test = _sample(study, split, train_size)
    if test is None:
        x_test, y_test = list(corpus.test_texts), np.asarray(corpus.test_labels)
    else:
        x_test, y_test = [pool_texts[i] for i in test], pool_labels[test]
    if study.test_size and study.dataset in BUILTIN and study.test_size < len(y_test):
        keep = np.sort(
            study_generator(study.seed, "classification test subsample", split).choice(
                len(y_test), study.test_size, replace=False
            )
        )
        x_test, y_test = [x_test[i] for i in keep], y_test[keep]
    return [pool_texts[i] for i in train], pool_labels[train], x_test, y_test


@functools.lru_cache(maxsize=8)
def unlabeled_pool(study: ClassificationStudy, split: int, train_size: int) -> list[str]:
    """``--unlabeled pool``: the training part's documents not drawn for training (their labels
    unused), never a test document."""
    _, pool_texts, _, train, test = _sample(study, split, train_size)
    taken = set(train.tolist()) | (set() if test is None else set(test.tolist()))
    return [t for i, t in enumerate(pool_texts) if i not in taken]


@functools.lru_cache(maxsize=32)
def prepare_cell(study: ClassificationStudy, split: int, train_size: int):
    """:func:`prepare`'s texts after the study's vocabulary cut (``min_df_fraction``), and what
    the cut did: ``x_train, y_train, x_test, y_test, info``."""
    x_train, y_train, x_test, y_test = prepare(study, split, train_size)
    if not study.min_df_fraction > 0:
        return x_train, y_train, x_test, y_test, {}
    from ..bow.vocabulary import Vocabulary

    vocab = Vocabulary(min_df=float(study.min_df_fraction)).fit(x_train)

    def cut(texts):
        return [" ".join(t for t in vocab.tokenize(doc) if t in vocab) for doc in texts]

    x_train, x_test = cut(x_train), cut(x_test)
    keep = np.array([bool(t) for t in x_train])
    info = {
        "min_df_fraction": study.min_df_fraction,
        "vocabulary_size": len(vocab),
        "dropped_empty_train": int((~keep).sum()),
        "empty_test": int(sum(not t for t in x_test)),
    }
    return [t for t, k in zip(x_train, keep) if k], y_train[keep], x_test, y_test, info


def raw_cell_texts(study: ClassificationStudy, split: int, train_size: int) -> tuple[list[str], list[str]]:
    """The documents of :func:`prepare_cell` as written (for the methods with ``raw_texts``): the
    training documents the vocabulary cut left empty are dropped here too, so that every method
    of a cell sees the same documents."""
    x_train, _, x_test, _ = prepare(study, split, train_size)
    if not study.min_df_fraction > 0:
        return list(x_train), list(x_test)
    from ..bow.vocabulary import Vocabulary

    vocab = Vocabulary(min_df=float(study.min_df_fraction)).fit(x_train)
    keep = [any(t in vocab for t in vocab.tokenize(doc)) for doc in x_train]
    return [t for t, k in zip(x_train, keep) if k], list(x_test)


def run_cell(study: ClassificationStudy, cell: dict) -> dict:
    """Fit one method on one split and training size; test accuracy, macro F1, log loss and timings."""
    from sklearn.metrics import accuracy_score, f1_score

    size = cell["params"]["train_size"]
    x_train, y_train, x_test, y_test, cut = prepare_cell(study, cell["split"], size)
    if study.method(cell["method"]).raw_texts:
        x_train, x_test = raw_cell_texts(study, cell["split"], size)
    model = study.estimator(cell)
    unlabeled = None
    if study.unlabeled == "pool" and study.method(cell["method"]).uses_unlabeled:
        unlabeled = unlabeled_pool(study, cell["split"], size)
        cut = {**cut, "unlabeled": "pool", "n_unlabeled": len(unlabeled)}
    with recorded_warnings() as warned:
        start = time.perf_counter()
        model.fit(x_train, y_train, **({} if unlabeled is None else {"unlabeled": unlabeled}))
        seconds = time.perf_counter() - start
        encode_seconds = getattr(model, "encode_seconds_", None)  # the fit's encoding, before predicting
        pred = model.predict(x_test)
        proba = model.predict_proba(x_test) if hasattr(model, "predict_proba") else None
    record = {
        "train_size": size,
        "accuracy": float(accuracy_score(y_test, pred)),
        "macro_f1": float(f1_score(y_test, pred, average="macro", labels=np.unique(np.concatenate([y_test, y_train])))),
        "fit_seconds": seconds,
        "n_train": len(y_train),
        "n_test": len(y_test),
        "n_classes_train": int(len(np.unique(y_train))),
        **cut,
        "warnings": warned,
    }
    if proba is not None:  # calibration: every method that gives probabilities
        bins = reliability_bins(proba, model.classes_, y_test)
        record.update(log_loss=log_loss(proba, model.classes_, y_test), ece=expected_calibration_error(bins))
        record["reliability"] = bins
    if isinstance(model, DevSelected):
        record.update(
            chosen=model.best_params_, fitted=model.fitted_params_, selection_seconds=model.selection_seconds_
        )
        if model.path is not None:
            record["dev_path"] = {"param": model.path, "max_iter": model.path_max_iter}
        name = "dev_" + model.scoring.replace("-", "_")
        record["dev_scores"] = [{**params, name: score} for params, score in model.dev_scores_]
        if model.dev_hinge_:  # the tie-break of equal dev accuracies
            record["dev_hinge"] = [{**params, "dev_hinge": loss} for params, loss in model.dev_hinge_]
        model = model.model_
    elif hasattr(model, "best_params_"):
        record["chosen"] = model.best_params_
    if hasattr(model, "n_iter_") and hasattr(model, "converged_"):
        record.update(n_iter=int(model.n_iter_), converged=bool(model.converged_))
    if hasattr(model, "part_scores_"):  # part_selection: the composition kept, and each one's score
        from ..models.part_selection import plain_part_scores

        record.update(selected_parts=list(model.selected_parts_), part_scores=plain_part_scores(model.part_scores_))
    if encode_seconds is not None:  # the encoder's share of fit_seconds (counted apart)
        record["encode_seconds"] = encode_seconds
    method = study.method(cell["method"])
    if method.record is not None:
        record.update(method.record(model, cell, (x_train, y_train)))
    return record


def _metric_table(
    records: list[dict], study: ClassificationStudy, key: str, higher_is_better: bool, extra=None
) -> tuple[list[str], list[str]]:
    """Rows of ``key`` (mean ± std over samples) per training size and method, the best per row in
    bold; ``extra(values_of_records)`` appends to a cell. Returns the table's lines and its methods."""
    methods = [m for m in study.methods if any(r["method"] == m and r.get(key) is not None for r in records)]
    lines = ["| train size | " + " | ".join(study.label(m) for m in methods) + " |", "|---|" + "---|" * len(methods)]
    pick = max if higher_is_better else min
    for n in study.train_sizes:
        stats = {}
        for m in methods:
            rows = [r for r in records if r["method"] == m and r["train_size"] == n and r.get(key) is not None]
            if rows:
                stats[m] = rows
        best = pick((np.mean([r[key] for r in v]) for v in stats.values()), default=None)
        cells = []
        for m in methods:
            if m not in stats:
                cells.append("–")
                continue
            values = [r[key] for r in stats[m]]
            cell = mean_cell(values, study.splits, bold=np.mean(values) == best)
            cells.append(cell + (extra(stats[m]) if extra else ""))
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines, methods


def table_markdown(records: list[dict], study: ClassificationStudy) -> str:
    """The accuracy table; where methods recorded probabilities, a table of their test log loss
    with the expected calibration error of the pooled samples."""
    lines, _ = _metric_table(records, study, "accuracy", higher_is_better=True)
    text = "\n".join(lines) + (
        f"\n\n{study.dataset}: test accuracy, mean ± std over {study.splits} stratified training samples per size "
        f"(macro-F1 in results.json); best per row in bold; {PARTIAL_NOTE}, '–': none run.\n"
    )
    if not any(r.get("log_loss") is not None for r in records):
        return text

    def pooled_ece(rows: list[dict]) -> str:
        binned = [r["reliability"] for r in rows if "reliability" in r]
        if not binned:
            return ""
        summed = {k: np.sum([b[k] for b in binned], axis=0) for k in ("count", "confidence", "correct")}
        return f" [{expected_calibration_error(summed):.3f}]"

    lines, _ = _metric_table(records, study, "log_loss", higher_is_better=False, extra=pooled_ece)
    return text + (
        "\n"
        + "\n".join(lines)
        + "\n\nTest log loss (mean negative log probability of the true class; lower is better), "
        f"mean ± std over the samples, and in brackets the expected calibration error of the pooled samples "
        f"({ECE_BINS} equal-width confidence bins); the linear SVM's probabilities are Platt's.\n"
    )


def save_with_legend_below(fig: Any, handles: list, labels: list[str], path: Path, **options: Any) -> None:
    """``fig`` laid out, a legend of ``labels`` below its panels (three columns, as many rows as it
    needs; ``options`` go to ``fig.legend``), saved to ``path`` cropped to take the legend in. The
    reliability diagrams' and the open-set ROC figure's."""
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=min(3, len(labels)), **options)
    fig.savefig(path, dpi=120, bbox_inches="tight")


def _style(i: int) -> dict:
    """Line style of the ``i``-th method: matplotlib's ten colours, then the same with dashed lines
    and square markers (a study of more than ten methods stays readable)."""
    return {"color": f"C{i % 10}", "ls": "-" if i < 10 else "--", "marker": "o" if i < 10 else "s"}


def reliability_figure(records: list[dict], study: ClassificationStudy, path: Path) -> None:
    """Reliability diagrams, one panel per training size: accuracy against confidence in the
    equal-width bins, the samples pooled, for every method that gives probabilities."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [n for n in study.train_sizes if any(r["train_size"] == n and "reliability" in r for r in records)]
    if not sizes:
        return
    cols = min(2, len(sizes))  # two panels a row: readable at a page's width
    rows = -(-len(sizes) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.9 * rows), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, n in zip(axes.flat, sizes):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
        for i, m in enumerate(study.methods):
            binned = [
                r["reliability"] for r in records if r["method"] == m and r["train_size"] == n and "reliability" in r
            ]
            if not binned:
                continue
            (handles[study.label(m)],) = ax.plot(*reliability_curve(binned), ms=4, lw=1.2, **_style(i))
        ax.set_title(f"{n} training documents", fontsize=10)
        ax.set_xlabel("confidence")
        ax.set_ylabel("accuracy")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
    for ax in axes.flat[len(sizes) :]:
        ax.set_visible(False)
    fig.suptitle(f"{study.dataset}: reliability ({ECE_BINS} confidence bins, samples pooled)", fontsize=11)
    save_with_legend_below(fig, list(handles.values()), list(handles.keys()), path, fontsize=8)
    plt.close(fig)


def accuracy_figure(records: list[dict], study: ClassificationStudy, path: Path) -> None:
    """Test accuracy against the training size, one line per method (mean ± std over samples)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for i, m in enumerate(study.methods):
        sizes = [n for n in study.train_sizes if any(r["method"] == m and r["train_size"] == n for r in records)]
        if not sizes:
            continue
        acc = [[r["accuracy"] for r in records if r["method"] == m and r["train_size"] == n] for n in sizes]
        ax.errorbar(
            sizes,
            [np.mean(a) for a in acc],
            yerr=[np.std(a) for a in acc],
            capsize=3,
            label=study.label(m),
            **_style(i),
        )
    ax.set_xscale("log")
    # the training sizes as plain numbers, and no minor labels (3x10^2, 4x10^2 crowd a log axis)
    from matplotlib.ticker import NullFormatter, NullLocator

    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(list(study.train_sizes), [str(n) for n in study.train_sizes])
    ax.set_xlabel("labelled training documents")
    ax.set_ylabel("test accuracy")
    ax.set_title(study.dataset)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))  # beside the lines, not on them
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
