"""The open-set study (issue 57): is a text one of the training classes at all?

Protocol, per split (``--splits``): ``--unknown-classes K`` classes are drawn (seeded by the study's
seed and the split) and never trained on; with ``--unknown-label LABEL`` the rows of that label are
out of scope too, and test-only. From each known class's training texts, the first ``N`` of a
permutation drawn per split and class are labelled (``--per-class N1,N2,...``: the samples are
nested, a class with fewer texts gives all of them). The test documents are the standard test split
(20ng, r8), the rows of ``--test-dataset``, or for a TSV alone the rows not labelled at the largest
size (every row of an unknown class or label among them); ``--test-size`` subsamples them. The
test documents of known classes are in scope, the others out of scope (a test label that no training
row has, besides ``--unknown-label``, too: the study warns with their counts).

``--unlabeled-texts`` gives the methods that read unlabelled texts (``gpc-pool-bow-encoder-rbf``) the
training file's texts that are not test documents, their labels unread: the known classes' alone
(``known-classes``: the protocol's unknown classes are never trained on), or all of them (``all``: the
unknown classes' too, open-world semi-supervised learning, where unlabelled traffic holds texts of no
known class). The other methods read the labelled texts alone.

Every method is fitted on the labelled texts and records, on the in-scope test documents, the
accuracy, macro-F1, log loss and expected calibration error; on all test documents its novelty score
(``score_samples``: higher is more typical, :mod:`lvgp.base.novelty`) against which are out of scope:
``oos_auroc``, ``oos_aupr`` (out of scope the positive class), ``oos_fpr95`` (the out-of-scope share
accepted at 95% recall of the in-scope documents) and the ROC curve. The headline score is each
method's own, fixed before any out-of-scope text is seen (the estimator's default); the record's
``scores`` holds the same metrics for every other score the method offers (the predictive entropy
and the largest probability of every probabilistic classifier, the latent variance ratio of the GP
classifiers, the largest decision value of the SVM), for the analysis, never for a choice.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._random import Streams
from ..base.constraints import Integer, Real
from ..base.metrics import ECE_BINS, expected_calibration_error, log_loss, reliability_bins
from ..base.novelty import (
    PROBABILITY_READING_SCORES,
    PROBABILITY_SCORES,
    REFERENCE_SCORES,
    latent_energy,
    latent_novelty_scores,
    open_set_metrics,
    probability_novelty,
)
from ..datasets.loaders import corpus_names, load_corpus
from .classification import (
    ENCODER_GPC_FAMILY,
    _encoder_logreg,
    _gp_classifier_on_texts,
    _ldk_gpc_plus_method,
    _linear_svm,
    _style,
    save_with_legend_below,
)
from .cluster_parts import (  # the cluster parts' settings lived here before: still importable from here
    POOL_COMPONENTS_PER_CLASS,  # noqa: F401
    POOL_NEIGHBOURS,  # noqa: F401
    POOL_POWER,  # noqa: F401
    cluster_kernel_of_texts,
    cluster_part_settings,  # noqa: F401
)
from .joined_cloud import words_cluster_kernel_of_texts
from .registry import default_methods, register_method, register_study
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

KIND = "open-set"
BUILTIN = corpus_names("classification")


# ------------------------------------------------------------------ the methods (in table order)
def _tfidf_cosine(num_words, documents, idf=None, sublinear_tf=False):
    """The cosine of the tf-idf vectors: idf of the training documents' word ids ``documents``, or
    ``idf`` (``num_words`` weights, e.g. of a larger set of texts the vocabulary was fitted on); with
    ``sublinear_tf``, counts as ``1 + ln count`` (:class:`~lvgp.kernels.BagOfWordsKernel`; without ``idf``,
    :class:`~lvgp.kernels.BagOfWordsSpec`'s kernel)."""
    from ..kernels import BagOfWordsKernel, BagOfWordsSpec

    if idf is None:
        return BagOfWordsSpec(sublinear_tf=sublinear_tf).build(num_words, documents)
    if len(idf) != num_words:
        raise ValueError(f"idf has {len(idf)} weights for a vocabulary of {num_words} words")
    return BagOfWordsKernel(num_words, "cosine", word_weights=idf, sublinear_tf=sublinear_tf).double()


def _bag_of_words_beside_encoder(kind: Any, idf=None, sublinear_tf=False, fit_weights=True, lengthscale=None):
    """The kernel factory of the BoW+encoder GP classifiers: the cosine of the tf-idf vectors plus
    :math:`\\mu` times the encoder's part ``kind`` (``"cosine"``, or ``"rbf"``: stationary on the unit
    vectors, so distance-aware; or several parts, names or gpytorch kernels on the unit vectors, each
    with its own weight; :func:`~lvgp.kernels.packed.beside_encoder`). ``idf``: the tf-idf's weights
    (default: the training documents' idf); ``sublinear_tf``: counts as ``1 + ln count``;
    ``fit_weights=False``: each weight stays where both parts weigh alike; ``lengthscale``: the RBF parts'
    length-scale held there (:func:`~lvgp.kernels.packed.beside_encoder`)."""

    def of_dim(dim: int):
        def factory(num_words, documents):
            from ..kernels.packed import beside_encoder

            words = _tfidf_cosine(num_words, documents, idf, sublinear_tf)
            return beside_encoder(words, documents, dim, kind, fit_weights=fit_weights, lengthscale=lengthscale)

        return factory

    return of_dim


def _encoder_alone(kind: str):
    def of_dim(dim: int):
        from gpytorch.kernels import LinearKernel, RBFKernel

        from ..kernels.packed import FeatureKernel

        return FeatureKernel(LinearKernel() if kind == "cosine" else RBFKernel(), dim, normalize=True)

    return of_dim


#: the tf-idf GPs' (``gpc-bow``, ``gpc-bow-encoder``, ``gpc-bow-encoder-rbf``) shortest token: two letters, the
#: study's vocabulary otherwise (every English stop word out). Earned on fresh dev draws of r8 and 20ng by a rule
#: fixed before them (``benchmarks/README.md``, "Rule 27"), after the SVM's lead at 50 r8 texts a class was traced
#: to the words lvgp's three-letter vocabulary dropped (*vs* marks r8's *earn*)
TFIDF_GP_MIN_TOKEN_LEN = 2


def _tfidf_gp_vocabulary(study):
    """The tf-idf GPs' vocabulary, unfitted: the study's cut (``--min-df-fraction``; none: every word) of tokens of
    :data:`TFIDF_GP_MIN_TOKEN_LEN` letters or more, scikit-learn's English stop words out."""
    from ..bow.vocabulary import Vocabulary

    return Vocabulary(min_df=float(study.min_df_fraction) or 1, min_token_len=TFIDF_GP_MIN_TOKEN_LEN)


def _gp_method(kernel_of_dim, novelty_score: str, encoder_weight: str = "evidence", tfidf_words: bool = False):
    def build(study, cell, data):
        model = _gp_classifier_on_texts(study, cell, kernel_of_dim)
        if tfidf_words:
            model.set_params(vocabulary=_tfidf_gp_vocabulary(study))
        return model.set_params(novelty_score=novelty_score, encoder_weight=encoder_weight)

    return build


#: ``gpc-bow-encoder-rbf``'s encoder part: its weight fitted by the evidence (``True``) or held where both parts
#: weigh alike (``False``), and its RBF length-scale held at this value (``None``: fitted)
FIT_ENCODER_WEIGHT = True
ENCODER_RBF_LENGTHSCALE: float | None = None
#: ``gpc-bow-encoder-rbf``'s ``LDKGPClassifier(encoder_weight=)``: after the evidence's fit, the encoder weight the
#: labels' leave-one-out predictions choose behind two guards, on texts of 40 words and more in median
#: (:mod:`lvgp.models.gpc.encoder_weight`). Earned on dev documents by a rule fixed before its draws
#: (``benchmarks/README.md``, "Rule 19", "Rule 20"): the energy AUROC and the accuracy up on long texts, short
#: texts unchanged
ENCODER_WEIGHT = "loo"

#: the novelty score of the GP classifiers whose kernel has a stationary (RBF) part on the encoder's vectors: the
#: lifted energy, as every other GP's (:data:`GP_NOVELTY_SCORE`). Chosen on dev documents by rules fixed before the
#: draws: on r8's and 20ng's training parts the energy and the predicted class's latent variance ratio together
#: (``"energy-class-variance"``) was ahead (``benchmarks/README.md``, "The energy and the variance together", "The
#: predicted class's variance");
#: on a wider dev suite, with r52's 52 classes and texts cut to their first 12 words beside them, the energy
#: was ahead by 0.015 on average (0.06 on r52, 0.03 behind on 20ng: "Rule 12"). Since rule 24, the energy lifted
#: for spread-out classes (``"lifted-energy"``): on fresh dev draws of the same suite it was ahead of the energy on
#: average and behind it nowhere beyond the rule's floor, for this GP and for the tf-idf GP ("Rule 24")
STATIONARY_GP_NOVELTY_SCORE = "lifted-energy"
#: the novelty score of the study's other GP classifiers (``gpc-bow``, ``gpc-bow-encoder``, ``gpc-encoder``):
#: rule 24 moved them with the stationary ones, as it earned its floor and mean on the tf-idf GP's cells too
GP_NOVELTY_SCORE = "lifted-energy"
_SCORE_WHAT = {
    "lifted-energy": "the log-sum-exp of the latent means plus the predicted classes' shortfalls of their labelled "
    "texts' mean leave-one-out one from all labelled texts' (LDKGPClassifier(novelty_score='lifted-energy'))",
}

for _name, _label, _kernel, _default, _score, _weight, _tfidf, _what in (
    (
        "gpc-bow-encoder-rbf",
        "GP classifier (BoW + encoder RBF)",
        _bag_of_words_beside_encoder("rbf", fit_weights=FIT_ENCODER_WEIGHT, lengthscale=ENCODER_RBF_LENGTHSCALE),
        True,
        STATIONARY_GP_NOVELTY_SCORE,
        ENCODER_WEIGHT,
        True,
        "the cosine of the tf-idf vectors plus mu times an RBF kernel of the encoder's unit vectors (stationary: "
        "its posterior variance grows away from the training texts); on texts of 40 words and more (median), mu "
        "chosen after the fit by the labels' leave-one-out predictions (encoder_weight='loo')",
    ),
    (
        "gpc-bow-encoder",
        "GP classifier (BoW + encoder)",
        _bag_of_words_beside_encoder("cosine"),
        True,
        GP_NOVELTY_SCORE,
        "evidence",
        True,
        "the classification study's bow-gpc-encoder: the cosine of the tf-idf vectors plus mu times the cosine of "
        "the encoder's vectors",
    ),
    (
        "gpc-encoder-rbf",
        "GP classifier (encoder RBF)",
        _encoder_alone("rbf"),
        True,
        STATIONARY_GP_NOVELTY_SCORE,
        "evidence",
        False,
        "an RBF kernel of the encoder's unit vectors alone (SNGP's stationary kernel on frozen features)",
    ),
    (
        "gpc-encoder",
        "GP classifier (encoder)",
        _encoder_alone("cosine"),
        False,
        GP_NOVELTY_SCORE,
        "evidence",
        False,
        "the cosine of the encoder's vectors",
    ),
):
    register_method(
        KIND,
        _name,
        _label,
        raw_texts=True,
        family=ENCODER_GPC_FAMILY,
        default=_default,
        description=f"Dirichlet GP classifier on {_what}; the weights, output scale and noise fitted by the "
        f"marginal likelihood, the probabilities tempered as ldk-gpc-plus; novelty score: {_SCORE_WHAT[_score]}",
    )(_gp_method(_kernel, _score, _weight, _tfidf))


@register_method(
    KIND,
    "gpc-bow",
    "GP classifier (BoW)",
    default=True,
    description="Dirichlet GP classifier on the cosine of the tf-idf vectors alone (no encoder; sublinear counts, "
    "1 + ln c, chosen on dev documents: benchmarks/open_set_dev.py --gp-tf; tokens of two letters or more, rule 27), "
    "settings as the encoder GP classifiers'; a labelled text with no word of its vocabulary (a query of stop words) "
    "is kept as the empty set, a zero row of its kernel (LDKGPClassifier(on_empty='keep')); "
    f"novelty score: {_SCORE_WHAT[GP_NOVELTY_SCORE]}",
)
def _gpc_bow(study, cell, data):
    model = _ldk_gpc_plus_method(study, cell, None)  # its settings, a text of stop words alone kept among them
    kernel = functools.partial(_tfidf_cosine, sublinear_tf=GPC_BOW_SUBLINEAR_TF)
    return model.set_params(
        kernel=kernel, vocabulary=_tfidf_gp_vocabulary(study), device=study.device, novelty_score=GP_NOVELTY_SCORE
    )


#: ``gpc-bow``'s tf-idf counts a word said c times as 1 + ln c: chosen on dev documents of r8's and 20ng's
#: training parts by a rule fixed before the draws (``benchmarks/README.md``, "Sublinear counts")
GPC_BOW_SUBLINEAR_TF = True


#: ``--unlabeled-words``' default: the cluster part of the unlabelled texts' encoder vectors alone (``"none"``), or
#: beside it a second cluster part whose cloud joins each text's encoder vector to its words' coordinates (``"lsa"``:
#: the active study's ``--pool-words`` default); tried on dev draws (``benchmarks/open_set_dev.py --unlabeled-words``)
UNLABELED_WORDS = "none"

#: the methods that read the split's unlabelled texts (:meth:`OpenSetSplit.cloud_texts`)
CLOUD_METHODS = ("gpc-pool-bow-encoder-rbf",)


@functools.lru_cache(maxsize=2)
def cloud_kernel(study: OpenSetStudy, split: int) -> Any:
    """``gpc-pool-bow-encoder-rbf``'s cluster part: :func:`cluster_kernel_of_texts` of the split's
    :meth:`OpenSetSplit.cloud_texts` (``--unlabeled-texts``; their labels never read), 2 eigenvectors a *known*
    class; made once a split (it has no parameters: the cells of a split share it)."""
    data = study.split(split)
    return cluster_kernel_of_texts(study.encoder, study.device, data.cloud_texts(), len(data.known))


@register_method(
    KIND,
    "gpc-pool-bow-encoder-rbf",
    "GP classifier (BoW + encoder RBF + unlabelled texts)",
    raw_texts=True,
    family=ENCODER_GPC_FAMILY,
    description="gpc-bow-encoder-rbf's kernel plus a third part with its own weight: the cluster kernel of the "
    "unlabelled texts of --unlabeled-texts (known-classes or all; labelled texts among them, no label read), as the "
    "active study's gp-pool; with --unlabeled-words lsa a fourth, the cluster kernel of those texts' encoder vectors "
    "joined to their words (the active study's --pool-words lsa); novelty score: the stationary GPs' (the lifted "
    "energy). "
    "Semi-supervised: the baselines do not read the unlabelled texts",
)
def _gpc_pool(study, cell, data):
    parts: tuple[Any, ...] = ("rbf", cloud_kernel(study, cell["split"]))
    if study.unlabeled_words == "lsa":
        parts += (cloud_words_kernel(study, cell["split"]),)
    return _gp_method(_bag_of_words_beside_encoder(parts), STATIONARY_GP_NOVELTY_SCORE)(study, cell, data)


@functools.lru_cache(maxsize=2)
def cloud_words_kernel(study: OpenSetStudy, split: int) -> Any:
    """``--unlabeled-words lsa``: ``gpc-pool-bow-encoder-rbf``'s fourth part, with its own weight,
    :func:`~lvgp.experiments.joined_cloud.words_cluster_kernel_of_texts` of the split's
    :meth:`OpenSetSplit.cloud_texts` (each text's encoder vector joined to its words' coordinates; no label read),
    reading the test documents too; 2 eigenvectors a *known* class, as :func:`cloud_kernel`; made once a split."""
    data = study.split(split)
    return words_cluster_kernel_of_texts(
        study.encoder, study.device, data.cloud_texts(), data.test_texts, len(data.known)
    )


@register_method(
    KIND,
    "gpc-ldk-encoder",
    "GP classifier (LDK+BoW+encoder)",
    raw_texts=True,
    family=ENCODER_GPC_FAMILY,
    description="the classification study's ldk-gpc-encoder (learned word vectors; slower)",
)
def _ldk_gpc_encoder(study, cell, data):
    return _gp_classifier_on_texts(study, cell)


register_method(
    KIND,
    "tfidf-encoder-logreg",
    "LogReg (tf-idf + encoder)",
    raw_texts=True,
    default=True,
    description="logistic regression on [tf-idf | encoder vectors], C by stratified 3-fold CV on the log loss; "
    "novelty score: minus the predictive entropy",
)(_encoder_logreg(tfidf=True))
register_method(
    KIND,
    "encoder-logreg",
    "LogReg (encoder)",
    raw_texts=True,
    default=True,
    description="logistic regression on the encoder's vectors; novelty score: minus the predictive entropy",
)(_encoder_logreg(tfidf=False))


@register_method(
    KIND,
    "encoder-mahalanobis",
    "Mahalanobis (encoder)",
    raw_texts=True,
    default=True,
    description="class means and one Ledoit-Wolf-shrunk covariance on the encoder's vectors; novelty score: minus "
    "the squared Mahalanobis distance to the nearest class mean (Lee et al. 2018)",
)
def _encoder_mahalanobis(study, cell, data):
    from ..baselines.encoder import EncoderMahalanobis

    return EncoderMahalanobis(study.encoder, device=study.device)


@register_method(
    KIND,
    "encoder-knn",
    "Nearest neighbour (encoder)",
    raw_texts=True,
    default=True,
    description="the class of the closest training text; novelty score: the cosine to the closest training text",
)
def _encoder_knn(study, cell, data):
    from ..baselines.encoder import EncoderNearestNeighbor

    return EncoderNearestNeighbor(study.encoder, device=study.device)


register_method(
    KIND,
    "svm",
    "Linear SVM (tf-idf)",
    default=True,
    description="linear SVM on tf-idf vectors of the texts as written (default_tfidf), C by CV (probabilities: "
    "Platt's); novelty score: the largest decision value",
)(_linear_svm)  # the classification study's


# ------------------------------------------------------------------ the data
@dataclass(frozen=True)
class OpenSetSplit:
    """One split: the labelled texts of each known class in a nested order, the test documents and
    which of them are out of scope."""

    unknown: tuple[str, ...]
    known: tuple[str, ...]
    #: per known class, its training texts' indices in the pool, in the split's order
    order: dict[str, np.ndarray]
    pool_texts: list[str]
    pool_labels: np.ndarray
    test_texts: list[str]
    test_labels: np.ndarray
    out_of_scope: np.ndarray
    #: the rows of ``pool_texts`` (the training file) that the methods reading unlabelled texts read (their
    #: point cloud; ``--unlabeled-texts``): none; the known classes' rows, labelled or not; or every row that is
    #: not a test document (of every class, the unknown ones' and ``--unknown-label``'s too). A test document is
    #: never among them
    cloud_rows: np.ndarray
    #: the test labels of no training row (out of scope: a test file's own out-of-scope label, or a misspelt one)
    unseen_labels: tuple[str, ...]

    def training(self, per_class: int) -> tuple[list[str], np.ndarray]:
        """The first ``per_class`` texts of each known class (all of a class with fewer)."""
        rows = np.sort(np.concatenate([self.order[c][:per_class] for c in self.known]))
        return [self.pool_texts[i] for i in rows], self.pool_labels[rows]

    def cloud_texts(self) -> list[str]:
        """The texts of :attr:`cloud_rows`, the unlabelled texts a semi-supervised method may read."""
        return [self.pool_texts[i] for i in self.cloud_rows]


@functools.lru_cache(maxsize=4)
def classification_corpus(dataset: str):
    """:func:`~lvgp.datasets.loaders.load_corpus` of a classification data set, kept for the cells of a process."""
    return load_corpus(dataset, "classification")


@register_study
@dataclass(frozen=True)
class OpenSetStudy(SizedCells, Study):
    size_option = "per_class"
    size_key = "per_class"
    kind = KIND
    help = "out-of-scope detection: classes never trained on, the GP's uncertainty against the strong simple detectors"
    description = (
        "Per split: --unknown-classes K classes drawn and never trained on (and/or the rows of --unknown-label), N "
        "labelled texts a known class (--per-class), the test documents of unknown classes out of scope. Records the "
        "in-scope accuracy, log loss and ECE and the out-of-scope AUROC, AUPR and FPR95 of each method's novelty score "
        "(score_samples), with the ROC curves."
    )

    dataset: str = option(help="20ng, r8, r52, or PATH.tsv (columns text and label)")
    unknown_classes: int = option(
        0, "classes drawn per split, never trained on (their test documents out of scope)", check=Integer(0)
    )
    unknown_label: str | None = option(None, "rows with this label are out of scope and test-only")
    test_dataset: str | None = option(None, "a separate test file PATH.tsv (columns text and label)")
    per_class: tuple[int, ...] = option((10, 50), "labelled texts a known class")
    splits: int = option(3, "splits (unknown classes and labelled samples drawn per split)")
    methods: tuple[str, ...] = option(default_methods(KIND))
    test_size: int | None = option(None, "subsample the test documents (default: all)")
    min_df_fraction: float = option(
        0.0,
        "the encoder methods' tf-idf and word parts leave out words in fewer than this fraction of the training texts "
        "(0: every word)",
        check=Real(0, 1, open_high=True),
    )
    encoder: str = option(
        "all-MiniLM-L6-v2", "pretrained sentence encoder of the encoder methods (lvgp.encoders.ENCODERS)"
    )
    encoder_precision: str = encoder_precision_option()
    embeddings: str = option("glove-6b-50d", "pretrained word vectors of gpc-ldk-encoder's word part")
    ldk_max_iter: int = option(50, "L-BFGS iterations of the GP classifiers (at least 300 where they need it)")
    gpc_objective: str = gpc_objective_option()
    unlabeled_texts: str = option(
        "none",
        "the unlabelled texts of the methods that read them (gpc-pool-bow-encoder-rbf): none; known-classes: the "
        "known classes' training texts, labelled or not (the unknown classes' never read); all: every training text "
        "that is not a test document, the unknown classes' and --unknown-label's too (open-world semi-supervised "
        "learning: the unknown classes are then not 'never trained on')",
        choices=("none", "known-classes", "all"),
        before="none",
    )
    unlabeled_words: str = option(
        UNLABELED_WORDS,
        "the cluster parts of the methods that read unlabelled texts (gpc-pool-bow-encoder-rbf): the encoder's "
        "vectors alone (none), or also a second cluster part, its cloud each text's encoder vector joined to its "
        "words (the unlabelled texts' tf-idf reduced by a truncated SVD: lsa; the active study's --pool-words)",
        choices=("none", "lsa"),
        before="none",
    )
    reject_keep: float | None = option(
        None,
        "also record each method's reject option at a threshold chosen from its labelled texts alone to keep this "
        "share of in-scope texts (lvgp.OpenSetClassifier's: the GP classifiers' leave-one-out scores, the others' "
        "5-fold cross-validated ones; 5 more fits a cell): reject_kept and reject_oos_accepted (default: not "
        "recorded)",
        check=Real(0, 1, open_low=True, open_high=True),
    )
    seed: int = option(0, "seed of the unknown classes, the samples and the methods", check=Integer(0))
    device: str = option("cpu", DEVICE_HELP)

    #: what the shared GP-classifier builders read: no unlabeled pool, the Dirichlet inference
    unlabeled: ClassVar[str] = "none"
    gpc_inference: ClassVar[str] = "dirichlet"
    part_selection: ClassVar[str] = "none"
    cell_choosing_options: ClassVar[tuple[str, ...]] = ("methods", "splits", "per_class")

    @property
    def n_splits(self) -> int:
        return self.splits

    def validate(self) -> None:
        super().validate()
        if not self.unknown_classes and self.unknown_label is None:
            raise ValueError("nothing is out of scope: pass --unknown-classes K (K >= 1) and/or --unknown-label LABEL")
        if self.test_dataset is not None and self.dataset in BUILTIN:
            raise ValueError(f"--test-dataset replaces a TSV's held-out rows; {self.dataset} has its own test split")
        check_encoder_methods(self)
        reading = [m for m in self.methods if m in CLOUD_METHODS]
        if reading and self.unlabeled_texts == "none":
            raise ValueError(
                f"{', '.join(reading)} reads unlabelled texts: pass --unlabeled-texts known-classes (the known classes' "
                "training texts) or all (every training text that is not a test document)"
            )

    def check_data(self) -> None:
        from ..warnings import warn

        split = self.split(0)  # bad input fails here, before any cell runs
        # a test label no training row has is out of scope (a test file's own out-of-scope label): said with counts,
        # so that a misspelt in-scope label is not scored as out of scope unnoticed
        labels, counts = np.unique(split.test_labels, return_counts=True)
        named = set(split.unseen_labels) - {self.unknown_label}
        unseen = {str(c): int(n) for c, n in zip(labels.tolist(), counts.tolist()) if c in named}
        if unseen:
            n = sum(unseen.values())
            warn(
                f"{n} test document{'s' if n > 1 else ''} of {self.test_dataset or self.dataset} "
                f"{'carry' if n > 1 else 'carries'} a label of no training row "
                f"({dict(list(unseen.items())[:5])}{' ...' if len(unseen) > 5 else ''}): "
                f"{'they count' if n > 1 else 'it counts'} as out of scope, "
                "as the unknown classes' test documents do",
                UserWarning,
                stacklevel=2,
            )
        small = {c: len(split.order[c]) for c in split.known if len(split.order[c]) < max(self.per_class)}
        if small:
            one = len(small) == 1
            warn(
                f"{len(small)} known {'class has' if one else 'classes have'} fewer training texts than --per-class "
                f"{max(self.per_class)} (e.g. {dict(list(small.items())[:3])}): "
                f"{'it gives all of its' if one else 'they give all of theirs'}",
                UserWarning,
                stacklevel=2,
            )

    @functools.lru_cache(maxsize=8)  # noqa: B019  (frozen, hashable; a few splits)
    def split(self, split: int) -> OpenSetSplit:
        """The split's unknown classes, labelled orders and test documents (module docstring)."""
        corpus = classification_corpus(self.dataset)
        labels = np.asarray(corpus.train_labels).astype(str)
        texts = list(corpus.train_texts)
        classes = sorted(set(labels.tolist()))
        candidates = [c for c in classes if c != self.unknown_label]
        if self.unknown_classes > len(candidates) - 2:
            raise ValueError(
                f"--unknown-classes {self.unknown_classes}: {self.dataset} has {len(candidates)} classes and at least 2 "
                f"must stay known; pass at most {len(candidates) - 2}"
            )
        rng = Streams.of_seed(self.seed).numpy(f"open-set split {split}")
        unknown = tuple(sorted(rng.choice(candidates, self.unknown_classes, replace=False).tolist()))
        known = tuple(c for c in candidates if c not in unknown)
        out_labels = set(unknown) | ({self.unknown_label} if self.unknown_label is not None else set())
        order = {c: rng.permutation(np.flatnonzero(labels == c)) for c in known}
        if self.dataset in BUILTIN or self.test_dataset is not None:
            test = corpus if self.test_dataset is None else classification_corpus(self.test_dataset)
            own_split = len(test.test_texts) > 0  # a built-in corpus's test split; a TSV's rows
            test_texts = list(test.test_texts if own_split else test.train_texts)
            test_labels = np.asarray(test.test_labels if own_split else test.train_labels).astype(str)
            test_rows = None  # no test document is a row of the training file
        else:  # a TSV alone: the rows not labelled at the largest size
            labelled = np.concatenate([order[c][: max(self.per_class)] for c in known])
            rest = np.setdiff1d(np.arange(len(labels)), labelled)
            test_texts, test_labels = [texts[i] for i in rest], labels[rest]
            test_rows = rest
        if self.unknown_label is not None and self.unknown_label not in set(classes) | set(test_labels.tolist()):
            raise ValueError(
                f"--unknown-label {self.unknown_label!r} is the label of no row of {self.dataset}"
                + ("" if self.test_dataset is None else f" or {self.test_dataset}")
                + f" (labels: {', '.join(classes[:8])}{', ...' if len(classes) > 8 else ''})"
            )
        # a test label never seen in training is out of scope too (a test file's own out-of-scope label)
        unseen = sorted(set(test_labels.tolist()) - set(classes))
        out = np.isin(test_labels, list(out_labels)) | np.isin(test_labels, unseen)
        if self.test_size and self.test_size < len(test_labels):
            keep = np.sort(
                Streams.of_seed(self.seed)
                .numpy(f"open-set test {split}")
                .choice(len(test_labels), self.test_size, replace=False)
            )
            test_texts, test_labels, out = [test_texts[i] for i in keep], test_labels[keep], out[keep]
            test_rows = None if test_rows is None else test_rows[keep]
        if out.all() or not out.any():
            # a TSV alone: its in-scope test documents are the known classes' rows beyond the largest size
            largest = max(len(order[c]) for c in known)
            alone = (
                f" (a file alone: its in-scope test documents are the known classes' rows beyond --per-class "
                f"{max(self.per_class)}, and no known class has more than {largest})"
                if test_rows is not None and largest <= max(self.per_class)
                else ""
            )
            raise ValueError(
                f"split {split} of {self.dataset}: {int(out.sum())} of {len(out)} test documents are out of scope"
                f"{alone}; the study needs some in scope and some out (check --unknown-classes, --unknown-label, "
                "--test-dataset, --per-class)"
            )
        cloud = np.arange(len(labels)) if test_rows is None else np.setdiff1d(np.arange(len(labels)), test_rows)
        if self.unlabeled_texts == "none":
            cloud = cloud[:0]
        elif self.unlabeled_texts == "known-classes":
            cloud = cloud[np.isin(labels[cloud], known)]
        return OpenSetSplit(unknown, known, order, texts, labels, test_texts, test_labels, out, cloud, tuple(unseen))

    def run_cell(self, cell: dict) -> dict:
        return run_cell(self, cell)

    def encoder_texts(self, split: int, size: int) -> Iterable[Sequence[str]]:
        """A split's labelled texts at ``size`` a class, its test documents, and with a method of
        :data:`CLOUD_METHODS` its unlabelled texts."""
        data = self.split(split)
        cloud = (data.cloud_texts(),) if len(data.cloud_rows) and set(CLOUD_METHODS) & set(self.methods) else ()
        return (data.training(size)[0], data.test_texts, *cloud)

    def table(self, records: list[dict]) -> str:
        return table_markdown(records, self)

    figures_from_records = True

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        roc_figure(records, self, out / "roc.png")


# ------------------------------------------------------------------ one cell
def novelty_scores(model: Any, X: list[str], proba: np.ndarray | None) -> tuple[str, dict[str, np.ndarray]]:
    """The method's own novelty score's name and every score it offers, by name: ``score_samples``'s
    (its name: the classifier's ``novelty_score``, which every classifier of lvgp says; first), the
    probability scores of ``proba``, a GP classifier's ``"variance"``, ``"energy"``, ``"class-variance"`` and
    (Dirichlet inference) ``"entropy-variance"``, ``"centred-energy"``, ``"lifted-energy"``, ``"energy-variance"`` and
    ``"energy-class-variance"``, and the
    energy of logistic regression's logits.

    Each score ``score_samples`` would compute from a prediction in hand is taken from it: the
    probability scores from ``proba``, a GP's latent scores from one latent pass (one prediction of
    each kind, not two; ``tests/test_open_set.py`` checks that they equal ``score_samples``)."""
    name = model.novelty_score
    scores: dict[str, np.ndarray] = {}
    if proba is not None:
        for kind in PROBABILITY_SCORES:
            scores[kind] = probability_novelty(proba, kind)
    # (an SVM's own score is already its largest decision value)
    if hasattr(model, "predict_latent"):  # one latent pass for all of them
        mean, var, prior = model.predict_latent(X, return_prior=True)
        kinds = ["variance", "energy", "class-variance"]
        reference = None
        if getattr(model, "inference", None) == "dirichlet":
            # the scores read against the training documents' leave-one-out ones
            reference = model.novelty_reference()
            reading = [k for k in REFERENCE_SCORES if k in PROBABILITY_READING_SCORES]  # these need proba
            kinds += (reading if proba is not None else []) + [k for k in REFERENCE_SCORES if k not in reading]
        scores.update(latent_novelty_scores(kinds, mean, var, prior, proba=proba, reference=reference))
    elif name == "entropy" and hasattr(model, "decision_function"):
        # logistic regression's logits: minus their free energy
        logits = np.asarray(model.decision_function(X), dtype=np.float64)
        scores["energy"] = latent_energy(logits[:, None] if logits.ndim == 1 else logits)
    own = scores.pop(name) if name in scores else model.score_samples(X)
    return name, {name: own, **scores}


def run_cell(study: OpenSetStudy, cell: dict) -> dict:
    """Fit one method on one split's labelled texts; in-scope accuracy, log loss and ECE; out-of-scope
    AUROC, AUPR and FPR95 of every novelty score."""
    from sklearn.metrics import accuracy_score, f1_score

    n = cell["params"]["per_class"]
    split = study.split(cell["split"])
    x_train, y_train = split.training(n)
    inside = ~split.out_of_scope
    with recorded_warnings() as warned:
        start = time.perf_counter()  # the model's making counted: the unlabelled texts' cluster parts, once a split
        model = study.estimator(cell)
        model.fit(x_train, y_train)
        seconds = time.perf_counter() - start
        encode_seconds = getattr(model, "encode_seconds_", None)
        start = time.perf_counter()
        proba = model.predict_proba(split.test_texts) if hasattr(model, "predict_proba") else None
        pred = model.classes_[np.argmax(proba, axis=1)] if proba is not None else model.predict(split.test_texts)
        name, scores = novelty_scores(model, split.test_texts, proba)
        predict_seconds = time.perf_counter() - start
    y_in = split.test_labels[inside]
    record: dict[str, Any] = {
        "per_class": n,
        "n_train": len(y_train),
        "n_in_scope": int(inside.sum()),
        "n_out_of_scope": int((~inside).sum()),
        "unknown_classes": list(split.unknown),
        "accuracy": float(accuracy_score(y_in, pred[inside])),
        "macro_f1": float(f1_score(y_in, pred[inside], average="macro", labels=np.unique(y_in))),
        "fit_seconds": seconds,
        "predict_seconds": predict_seconds,
        "novelty_score": name,
        "warnings": warned,
    }
    if proba is not None:
        bins = reliability_bins(proba[inside], model.classes_, y_in)
        record.update(
            log_loss=log_loss(proba[inside], model.classes_, y_in),
            ece=expected_calibration_error(bins),
            reliability=bins,
        )
    if encode_seconds is not None:
        record["encode_seconds"] = encode_seconds
    if cell["method"] in CLOUD_METHODS:
        # the texts of its point cloud, labelled ones among them
        record.update(
            unlabeled_texts=study.unlabeled_texts,
            unlabeled_words=study.unlabeled_words,
            n_unlabeled=len(split.cloud_rows),
        )
    if study.reject_keep is not None:
        with recorded_warnings() as warned_reject:
            record.update(reject_option(model, x_train, y_train, scores[name], split.out_of_scope, study, cell))
        record["reject_warnings"] = warned_reject  # the folds' fits warn apart from the cell's
    measured = {kind: open_set_metrics(values, split.out_of_scope) for kind, values in scores.items()}
    record.update(measured[name])
    record["scores"] = {kind: {k: v for k, v in m.items() if k != "roc"} for kind, m in measured.items()}
    return record


#: folds of the reject option's cross-validated thresholds (``--reject-keep``)
REJECT_FOLDS = 5


def reject_option(
    model: Any, x_train: list[str], y_train: np.ndarray, score: np.ndarray, out: np.ndarray, study: Any, cell: dict
) -> dict[str, Any]:
    """The record's fields of ``--reject-keep``: the threshold :class:`lvgp.OpenSetClassifier` would choose for the
    fitted ``model`` from its labelled texts alone (its leave-one-out scores where it offers them, else
    ``REJECT_FOLDS`` cross-validated folds of clones of it: :func:`lvgp.models.open_set.reject_threshold`), and the shares of the in-scope and
    out-of-scope test documents whose own score ``score`` is at or above it."""
    from ..models.open_set import reject_threshold

    start = time.perf_counter()
    chosen = reject_threshold(
        model, x_train, y_train, float(study.reject_keep), "auto", REJECT_FOLDS, study.cell_seed(cell)
    )
    accepted = np.asarray(score) >= chosen.threshold
    return {
        "reject_threshold": float(chosen.threshold),
        "reject_threshold_source": chosen.source,
        "reject_kept": float(np.mean(accepted[~out])),
        "reject_oos_accepted": float(np.mean(accepted[out])),
        "reject_seconds": time.perf_counter() - start,
    }


# ------------------------------------------------------------------ the report
def _rows(records: list[dict], method: str, n: int) -> list[dict]:
    return [r for r in records if r["method"] == method and r["per_class"] == n]


def table_markdown(records: list[dict], study: OpenSetStudy) -> str:
    """The out-of-scope AUROC, FPR95 and in-scope accuracy and log loss per method and size (mean ±
    std over splits, the best per column in bold), then every score's AUROC."""
    methods = [m for m in study.methods if any(r["method"] == m for r in records)]
    columns = [
        ("oos_auroc", "AUROC", True),
        ("oos_aupr", "AUPR", True),
        ("oos_fpr95", "FPR95", False),
        ("accuracy", "accuracy", True),
        ("log_loss", "log loss", False),
        ("ece", "ECE", False),
    ]
    lines = []
    for n in study.per_class:
        lines += [f"**{n} labelled texts a known class**", ""]
        lines += ["| method | score | " + " | ".join(c[1] for c in columns) + " |", "|---|---|" + "---|" * len(columns)]
        best = {}
        for key, _, higher in columns:
            means = [
                np.mean(v) for m in methods if (v := [r[key] for r in _rows(records, m, n) if r.get(key) is not None])
            ]
            best[key] = (max if higher else min)(means) if means else None
        for m in methods:
            rows = _rows(records, m, n)
            if not rows:
                continue
            cells = []
            for key, _, _ in columns:
                values = [r[key] for r in rows if r.get(key) is not None]
                cells.append(mean_cell(values, study.splits, bold=np.mean(values) == best[key]) if values else "–")
            lines.append(f"| {study.label(m)} | {rows[0]['novelty_score']} | " + " | ".join(cells) + " |")
        lines.append("")
    first = next(iter(records), {})
    text = "\n".join(lines) + (
        f"\n{study.dataset}: {first.get('n_in_scope', '?')} in-scope and {first.get('n_out_of_scope', '?')} out-of-scope "
        f"test documents (split 0); mean ± std over {study.splits} splits, the best per column in bold; {PARTIAL_NOTE}. "
        "AUROC and AUPR: out of scope the positive class, ranked by the method's own novelty score (`score`, fixed "
        "before testing); FPR95: the out-of-scope share accepted at 95% recall of the in-scope documents; accuracy, "
        f"log loss and ECE ({ECE_BINS} bins) on the in-scope documents.\n"
    )
    if reading := [m for m in methods if m in CLOUD_METHODS]:
        words = study.unlabeled_words
        text += (
            f"\n{', '.join(reading)}: unlabelled texts {study.unlabeled_texts} "
            f"(--unlabeled-texts); a cluster part of their encoder vectors joined to their words: {words} "
            "(--unlabeled-words).\n"
        )
    text += reject_markdown(records, study, methods)
    text += paired_markdown(records, study, methods)
    kinds = sorted({k for r in records for k in r.get("scores", {})})
    lines = ["", "Every novelty score's AUROC (analysis only: each method's headline is its own score above)", ""]
    lines += ["| method | labelled a class | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    for m in methods:
        for n in study.per_class:
            rows = _rows(records, m, n)
            if not rows:
                continue
            cells = []
            for kind in kinds:
                values = [r["scores"][kind]["oos_auroc"] for r in rows if kind in r.get("scores", {})]
                cells.append(f"{np.mean(values):.3f}" if values else "–")
            lines.append(f"| {study.label(m)} | {n} | " + " | ".join(cells) + " |")
    return text + "\n".join(lines) + "\n"


def reject_markdown(records: list[dict], study: OpenSetStudy, methods: list[str]) -> str:
    """With ``--reject-keep``: each method's reject option at the threshold it chose from its labelled texts alone,
    the in-scope test share kept and the out-of-scope share accepted (mean ± std over splits; in bold, the least
    accepted per size among the methods that kept at least the share asked for on average: a threshold that keeps
    fewer in-scope texts accepts fewer of both); empty without."""
    if not any("reject_kept" in r for r in records):
        return ""
    keep = getattr(study, "reject_keep", None)
    lines = [
        "",
        f"At each method's own threshold, chosen from its labelled texts alone to keep {keep} of the in-scope texts "
        "(`--reject-keep`; lvgp.OpenSetClassifier's: the GP classifiers' leave-one-out scores, the others' "
        f"{REJECT_FOLDS}-fold cross-validated ones): the in-scope test texts kept, the out-of-scope ones accepted (in "
        f"bold the fewest accepted among the methods that kept at least {keep} on average)",
        "",
        "| method | labelled a class | threshold from | in-scope kept | out-of-scope accepted |",
        "|---|---|---|---|---|",
    ]
    for n in study.per_class:
        rows_of = {m: [r for r in _rows(records, m, n) if "reject_kept" in r] for m in methods}
        accepted = {m: [r["reject_oos_accepted"] for r in rows] for m, rows in rows_of.items()}
        kept_enough = [
            np.mean(accepted[m])
            for m, rows in rows_of.items()
            if rows and np.mean([r["reject_kept"] for r in rows]) >= keep
        ]
        least = min(kept_enough, default=None)
        for m in methods:
            rows = rows_of[m]
            if not rows:
                continue
            sources = sorted({r["reject_threshold_source"] for r in rows})
            kept = mean_cell([r["reject_kept"] for r in rows], study.splits)
            bold = (
                least is not None
                and np.mean([r["reject_kept"] for r in rows]) >= keep
                and np.mean(accepted[m]) == least
            )
            lines.append(
                f"| {study.label(m)} | {n} | {', '.join(sources)} | {kept} | "
                f"{mean_cell(accepted[m], study.splits, bold=bold)} |"
            )
    return "\n".join(lines) + "\n"


#: the columns the paired comparison reads: (record key, heading)
PAIRED_COLUMNS = (("oos_auroc", "AUROC"), ("accuracy", "accuracy"))


def paired_differences(records: list[dict], first: str, other: str, n: int, key: str) -> np.ndarray:
    """``first``'s ``key`` minus ``other``'s, split by split, over the splits both ran at ``n`` a class
    (in split order; empty when they share none)."""
    a = {r["split"]: r[key] for r in _rows(records, first, n) if r.get(key) is not None}
    b = {r["split"]: r[key] for r in _rows(records, other, n) if r.get(key) is not None}
    return np.array([a[s] - b[s] for s in sorted(set(a) & set(b))], dtype=float)


def paired_cell(diffs: np.ndarray) -> str:
    """``mean ± standard error (k of m ahead)`` of per-split differences (``–`` with none; no standard
    error from one split)."""
    if len(diffs) == 0:
        return "–"
    se = f" ± {diffs.std(ddof=1) / np.sqrt(len(diffs)):.3f}" if len(diffs) > 1 else ""
    return f"{diffs.mean():+.3f}{se} ({int((diffs > 0).sum())} of {len(diffs)} ahead)"


def paired_markdown(records: list[dict], study: OpenSetStudy, methods: list[str]) -> str:
    """The study's first method against each other method, split by split (a paired comparison: a
    split's unknown classes and labelled texts, which move every method together, cancel): the mean
    difference of the AUROC and of the in-scope accuracy with its standard error over the splits, and in
    how many splits the first method is ahead. Empty with fewer than two methods."""
    if len(methods) < 2:
        return ""
    first = methods[0]
    lines = [
        "",
        f"{study.label(first)} minus each method, split by split (mean ± standard error over the splits both ran; "
        f"in how many it is ahead)",
        "",
        "| method | labelled a class | " + " | ".join(h for _, h in PAIRED_COLUMNS) + " |",
        "|---|---|" + "---|" * len(PAIRED_COLUMNS),
    ]
    for m in methods[1:]:
        for n in study.per_class:
            cells = [paired_cell(paired_differences(records, first, m, n, key)) for key, _ in PAIRED_COLUMNS]
            if any(c != "–" for c in cells):
                lines.append(f"| {study.label(m)} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def roc_figure(records: list[dict], study: OpenSetStudy, path: Path) -> None:
    """The out-of-scope ROC curves, one panel per size: the true-positive rate (out-of-scope texts
    flagged) against the false-positive rate (in-scope texts flagged), averaged over the splits; one
    legend entry a method below the panels, its mean AUROC at each size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [n for n in study.per_class if any(r["per_class"] == n and "roc" in r for r in records)]
    if not sizes:
        return
    # square panels side by side and one legend below them: a method's colour and its AUROC at each size
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(4.2 * len(sizes), 6.0), 4.3), squeeze=False)
    handles: dict[str, Any] = {}
    aurocs: dict[str, list[str]] = {}
    for ax, n in zip(axes.flat, sizes):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
        for i, m in enumerate(study.methods):
            rows = [r for r in _rows(records, m, n) if "roc" in r]
            if not rows:
                continue
            fpr = np.asarray(rows[0]["roc"]["fpr"])
            tpr = np.mean([r["roc"]["tpr"] for r in rows], axis=0)
            auroc = np.mean([r["oos_auroc"] for r in rows])
            style = {**_style(i), "marker": None}
            (handles[m],) = ax.plot(fpr, tpr, lw=1.4, **style)
            aurocs.setdefault(m, []).append(f"{auroc:.3f} at {n}")
        ax.set_title(f"{n} labelled texts a known class", fontsize=10)
        ax.set_xlabel("in-scope texts flagged (FPR)")
        ax.set_ylabel("out-of-scope texts flagged (TPR)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
    labels = [f"{study.label(m)}\nAUROC {', '.join(aurocs[m])}" for m in handles]
    fig.suptitle(f"{study.dataset}: out-of-scope ROC (mean over splits)", fontsize=11)
    save_with_legend_below(fig, list(handles.values()), labels, path, fontsize=7.5, labelspacing=0.9)
    plt.close(fig)
