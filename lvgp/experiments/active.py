"""The active-learning study (issue 57): which texts to label next.

Protocol, per split (``--splits``: seeds): the pool is the data set's training part (``--pool-size``
subsamples it), the test documents its standard test split (20ng, r8) or, for a TSV, ``--test-size``
rows held out (default: a quarter); ``--test-size`` also subsamples a standard test split. One text a
class is drawn from the pool to start. Then, until ``--budget`` texts are labelled: the strategy's
classifier is fitted on the labelled texts and scored on the test documents (accuracy and log loss:
one point of the record's ``curve``), and the next ``--batch`` texts are the unlabelled pool texts
its acquisition ranks highest. At the budget the classifier is fitted and scored once more.

Strategies (the records' ``strategy``):

* ``gp-entropy``, ``gp-bald``, ``gp-variance`` -- the GP classifier chooses and predicts: the
  predictive entropy of a text; BALD, the mutual information between its label and the latent
  functions (Houlsby et al. 2011), :math:`H[\\bar p] - \\mathbb E_f H[\\mathrm{softmax}(f)]` over draws of
  the latent posterior (:func:`~lvgp.models.acquisition.bald`); the latent variance ratio (:mod:`lvgp.base.novelty`'s
  ``"variance"``).
* ``logreg-entropy`` -- logistic regression on ``[tf-idf | encoder]`` chooses by its predictive
  entropy and predicts (uncertainty sampling, what labelling tools ship).
* ``random`` -- random texts, logistic regression predicting; ``random-gp`` -- random texts, the GP
  predicting.
* ``gp-power-entropy``, ``gp-power-bald`` (not in the default set) -- stochastic batch acquisition
  (Kirsch, Farquhar, Atighehchian, Jesson, Branchaud-Charron & Gal, TMLR 2023, "power"
  acquisition): the batch is drawn without replacement with probabilities proportional to the
  score (entropy, BALD) to the power :math:`\beta` (``--power-beta``, default 1, their default;
  :func:`~lvgp.models.acquisition.power_batch`), where the other strategies take the top ``--batch``: a batch of many
  near-identical top texts is what a top-k batch risks with many classes.
* ``gp-power-epig``, ``gp-pool-power-epig`` -- the power acquisition of EPIG (Bickford Smith et al.,
  AISTATS 2023; :func:`~lvgp.models.acquisition.epig`): the information a text's label gives about the labels
  of ``--epig-targets`` (100) target texts drawn afresh from the unlabelled pool every round; ``gp-pool-power-epig``
  with the pool's cluster kernel (``gp-pool-*``, below).
* ``gp-pool-greedy-epig`` -- ``gp-pool-power-epig``'s batch chosen one text after another, each text's EPIG
  recomputed with the latent posterior conditioned on the texts chosen before it
  (:func:`~lvgp.models.acquisition.conditioned_power_batch`), its keys at the exponent ``--greedy-beta`` (default 2):
  two texts that tell the same thing are not both drawn, so the draw can be greedier. In the default set: the
  studies' best acquisition (``benchmarks/power_beta_dev.py``); a user's call, one round:
  :func:`~lvgp.models.acquisition.choose_texts_to_label`.
* ``gp-pool-entropy``, ``gp-pool-power-entropy``, ``random-gp-pool`` (not in the default set) -- the GP
  with the unlabelled pool's cluster kernel as a third part of its kernel (:func:`pool_kernel`).

The GP classifier is the open-set study's ``gpc-bow-encoder`` (the cosine of the tf-idf vectors
plus :math:`\\mu` times the encoder's cosine, the classification study's ``bow-gpc-encoder``); the
logistic regression the classification study's ``tfidf-encoder-logreg``. The summary adds the area
under each learning curve (the mean accuracy over the curve's points) and the labels each strategy
needs to reach ``random``'s accuracy at the full budget on the same split.

``--vocabulary-from``: the texts the word parts are fitted on. ``labelled`` (the default, the studies
committed before it): the GP's vocabulary and idf and logistic regression's tf-idf vectorizer are
fitted on the labelled texts of each round (20 texts at 20ng's start: a test text's words are mostly
unknown to it). ``pool``: on the whole pool's texts, labelled and unlabelled, once a seed (no label
read; the pool is at hand from the start of pool-based active learning, as the pool GP's cluster
kernel takes it): the vocabulary is the pool's, the idf the pool's document frequencies, and words of
no labelled text still count in a text's norm.

``--encoder-part``: the GP learners' part on the encoder's unit vectors beside the tf-idf cosine, ``cosine`` (the
default) or ``rbf`` (stationary, the open-set study's ``gpc-bow-encoder-rbf``'s part, its length-scale fitted by
the evidence); the pool GP's cluster part stays beside it. ``--encoder-weight``: the weight of the encoder's parts
(the pool's cluster part among them) beside the words, ``evidence`` (the default) or ``loo`` (the labels' choice on
long texts, the open-set study's ``gpc-bow-encoder-rbf``'s: :mod:`lvgp.models.gpc.encoder_weight`).

``--pool-words``: the pool GP's cluster parts. ``none`` (the studies committed before it): the cluster kernel of the
pool's encoder vectors alone. ``lsa`` (the default since 2026-12-06): beside it a second cluster kernel, with its own
weight, whose cloud joins each pool text's encoder vector to its words -- the pool's sublinear tf-idf reduced by a
truncated SVD (:func:`pool_words_kernel`; no label read): the encoder's vectors and the words find different
neighbours, and joined they find more of a text's neighbours in its class than either alone (on 20ng's training part;
encoding a long text whole, in pieces, did not).

``--random-share``: the share of each acquired batch drawn at random from the unlabelled texts its acquisition left
(default 0: the whole batch the acquisition's). ``--power-beta``, ``--greedy-beta``, ``--epig-targets``,
``--encoder-part``, ``--encoder-weight``, ``--pool-words`` and ``--random-share`` away from their defaults are named in
the table's note; their defaults are the settings that dev draws of the training parts kept
(``benchmarks/power_beta_dev.py``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._random import Streams
from ..base.constraints import Integer, Real
from ..base.metrics import log_loss
from ..datasets.loaders import corpus_names
from ..models import acquisition
from ..models.acquisition import (  # the acquisitions lived here before: still importable from here
    BALD_SAMPLES,  # noqa: F401
    EPIG_ESTIMATOR,  # noqa: F401
    EPIG_SAMPLES,  # noqa: F401
    EPIG_TARGETS,
    GREEDY_BETA,
    GREEDY_SHORTLIST,  # noqa: F401
    POWER_BETA,
    acquisition_scores,  # noqa: F401
    bald,  # noqa: F401
    choose_texts_to_label,  # noqa: F401
    condition_on_text,  # noqa: F401
    conditioned_power_batch,  # noqa: F401
    epig,  # noqa: F401
    power_batch,  # noqa: F401
)
from .classification import _encoder_logreg, _style
from .cluster_parts import (  # the pool GP's cluster settings lived here before: still importable from here
    POOL_COMPONENTS_PER_CLASS,  # noqa: F401
    POOL_NEIGHBOURS,  # noqa: F401
    POOL_POWER,  # noqa: F401
    cluster_kernel_of_texts,
)
from .joined_cloud import words_cluster_kernel_of_texts
from .open_set import classification_corpus
from .registry import register_method, register_study
from .study import (
    DEVICE_HELP,
    PARTIAL_NOTE,
    Study,
    check_encoder_methods,
    encoder_precision_option,
    gpc_objective_option,
    mean_cell,
    option,
    recorded_warnings,
)

KIND = "active"
BUILTIN = corpus_names("classification")
#: strategy -> (the learner that chooses and predicts, its acquisition)
STRATEGIES = {
    "gp-entropy": ("gp", "entropy"),
    "gp-bald": ("gp", "bald"),
    "gp-variance": ("gp", "variance"),
    "logreg-entropy": ("logreg", "entropy"),
    "random": ("logreg", "random"),
    "random-gp": ("gp", "random"),
    "gp-power-entropy": ("gp", "power-entropy"),
    "gp-power-bald": ("gp", "power-bald"),
    "gp-pool-entropy": ("gp-pool", "entropy"),
    "gp-pool-power-entropy": ("gp-pool", "power-entropy"),
    "random-gp-pool": ("gp-pool", "random"),
    "gp-power-epig": ("gp", "power-epig"),
    "gp-pool-power-epig": ("gp-pool", "power-epig"),
    "gp-pool-greedy-epig": ("gp-pool", "greedy-epig"),
}
#: the strategies a study runs unless ``--strategies`` names others: the issue's six, and the studies' best
#: acquisition, EPIG with the pool's cluster kernel, the batch conditioned on its own texts (``gp-pool-power-epig``
#: until 2026-12-06; ``benchmarks/README.md``, "The batch conditioned on its own texts")
DEFAULT_STRATEGIES = (
    "gp-entropy",
    "gp-bald",
    "gp-variance",
    "logreg-entropy",
    "random",
    "random-gp",
    "gp-pool-greedy-epig",
)
#: the share of each batch an acquiring strategy draws at random from the unlabelled pool, the rest its
#: acquisition's, ``--random-share``'s default (rounded to whole texts; 0: every text its acquisition's, the studies'
#: protocol; 0.2 tried on dev draws and not adopted: ``benchmarks/power_beta_dev.py``)
RANDOM_SHARE = 0.0
#: the GP learners' part on the encoder's unit vectors beside the tf-idf cosine, ``--encoder-part``'s default:
#: the cosine, the study's GP since it was built (``"rbf"``: the open-set study's stationary part; tried on dev
#: draws: ``benchmarks/power_beta_dev.py``)
ENCODER_PART = "cosine"
#: the GP learners' ``LDKGPClassifier(encoder_weight=)``, ``--encoder-weight``'s default: the evidence's weight of
#: the encoder's parts, the study's GP since it was built (``"loo"``: the open-set study's stationary GP's choice by
#: the labels' leave-one-out predictions on long texts, :mod:`lvgp.models.gpc.encoder_weight`; tried on dev draws:
#: ``benchmarks/power_beta_dev.py``)
ENCODER_WEIGHT = "evidence"
#: ``--pool-words``' default: beside the cluster part of the pool's encoder vectors, a second cluster part whose cloud
#: joins each text's encoder vector to its words' coordinates (``"lsa"``), adopted on dev draws of 20ng's and r8's
#: training parts (``benchmarks/power_beta_dev.py``); ``"none"``: the encoder's cluster part alone, the studies'
#: before it
POOL_WORDS = "lsa"


# ------------------------------------------------------------------ the learners
def _gp(study, cell, data):
    return _gp_on_texts(study, cell, study.encoder_part)


def _gp_on_texts(study: ActiveStudy, cell: dict, encoder_parts: Any) -> Any:
    """The study's GP classifier, the cosine of the tf-idf vectors beside ``encoder_parts`` on the encoder's
    vectors (the learners pass ``--encoder-part``'s), their weight by ``--encoder-weight``; with
    ``--vocabulary-from pool`` its vocabulary and idf the pool's (:func:`pool_vocabulary`)."""
    from .classification import _gp_classifier_on_texts
    from .open_set import _bag_of_words_beside_encoder

    if study.vocabulary_from == "labelled":
        model = _gp_classifier_on_texts(study, cell, _bag_of_words_beside_encoder(encoder_parts))
        return model.set_params(encoder_weight=study.encoder_weight)
    vocabulary, idf = pool_vocabulary(study, cell["split"])
    model = _gp_classifier_on_texts(study, cell, _bag_of_words_beside_encoder(encoder_parts, idf))
    return model.set_params(vocabulary=vocabulary, encoder_weight=study.encoder_weight)


@functools.lru_cache(maxsize=2)
def pool_vocabulary(study: ActiveStudy, split: int) -> tuple[Any, np.ndarray]:
    """``--vocabulary-from pool``: the GP's vocabulary (the study's cut, ``--min-df-fraction`` of the pool's
    texts) fitted on the whole pool's texts, and the pool's idf over it (:func:`~lvgp.bow.weighting.idf_weights`),
    made once a seed."""
    from ..bow.vocabulary import Vocabulary
    from ..bow.weighting import idf_weights
    from .classification import _cut_vocabulary

    texts = study.split(split).pool_texts
    vocabulary = (_cut_vocabulary(study) or Vocabulary()).fit(texts)
    ids = vocabulary.encode(texts, on_empty="keep", name="the pool")
    return vocabulary, idf_weights(ids, len(vocabulary))


@functools.lru_cache(maxsize=2)
def pool_kernel(study: ActiveStudy, split: int) -> Any:
    """The cluster part of ``gp-pool``: :func:`~lvgp.experiments.cluster_parts.cluster_kernel_of_texts` of the
    whole pool's texts (labelled and unlabelled), with 2 eigenvectors a class, made once a seed."""
    data = study.split(split)
    return cluster_kernel_of_texts(study.encoder, study.device, data.pool_texts, len(np.unique(data.pool_labels)))


@functools.lru_cache(maxsize=2)
def pool_words_kernel(study: ActiveStudy, split: int) -> Any:
    """``--pool-words lsa``'s second cluster part:
    :func:`~lvgp.experiments.joined_cloud.words_cluster_kernel_of_texts` whose cloud is the whole pool's texts and
    which reads the test documents too (no label read); 2 eigenvectors a class, as :func:`pool_kernel`; made once a
    seed."""
    data = study.split(split)
    n_classes = len(np.unique(data.pool_labels))
    return words_cluster_kernel_of_texts(study.encoder, study.device, data.pool_texts, data.test_texts, n_classes)


def _gp_pool(study, cell, data):
    """``_gp``'s kernel plus a third part, the pool's cluster kernel on the encoder's unit vectors, with
    its own weight (log-normal prior around the balanced start, as the encoder's cosine); with ``--pool-words
    lsa`` a fourth, :func:`pool_words_kernel`, with its own weight too."""
    part = pool_kernel(study, cell["split"])  # no parameters: every fit shares it
    if study.pool_words == "lsa":
        return _gp_on_texts(study, cell, (study.encoder_part, part, pool_words_kernel(study, cell["split"])))
    return _gp_on_texts(study, cell, (study.encoder_part, part))


_LABELS = {
    "gp-entropy": "GP, entropy",
    "gp-bald": "GP, BALD",
    "gp-variance": "GP, latent variance",
    "logreg-entropy": "LogReg, entropy",
    "random": "random, LogReg",
    "random-gp": "random, GP",
    "gp-power-entropy": "GP, power entropy",
    "gp-power-bald": "GP, power BALD",
    "gp-pool-entropy": "GP + pool, entropy",
    "gp-pool-power-entropy": "GP + pool, power entropy",
    "random-gp-pool": "random, GP + pool",
    "gp-power-epig": "GP, power EPIG",
    "gp-pool-power-epig": "GP + pool, power EPIG",
    "gp-pool-greedy-epig": "GP + pool, power EPIG conditioned in the batch",
}
_LEARNERS = {
    "gp": ("the GP classifier", _gp),
    "gp-pool": ("the GP classifier with the unlabelled pool's cluster kernel as a third part", _gp_pool),
    "logreg": ("logistic regression on [tf-idf | encoder]", _encoder_logreg(tfidf=True)),
}
for _name, (_learner, _acquisition) in STRATEGIES.items():
    register_method(
        KIND,
        _name,
        _LABELS[_name],
        raw_texts=True,
        default=_name in DEFAULT_STRATEGIES,
        description=f"{_LEARNERS[_learner][0]} predicting, texts chosen by {_acquisition}",
    )(_LEARNERS[_learner][1])


# ------------------------------------------------------------------ the study
@dataclass(frozen=True)
class ActiveSplit:
    pool_texts: list[str]
    pool_labels: np.ndarray
    start: np.ndarray  # pool indices labelled first: one a class
    test_texts: list[str]
    test_labels: np.ndarray


@register_study
@dataclass(frozen=True)
class ActiveStudy(Study):
    kind = KIND
    help = "active learning: the texts a GP chooses to label against uncertainty sampling and random texts"
    description = (
        "Per seed: one labelled text a class, then batches of --batch texts chosen from the unlabelled training pool "
        "by each strategy up to --budget labels; after every batch the test accuracy and log loss (the learning curve)."
    )

    dataset: str = option(help="20ng, r8, r52, or PATH.tsv (columns text and label)")
    budget: int = option(200, "labelled texts at the end", check=Integer(2))
    batch: int = option(10, "texts acquired a round")
    splits: int = option(3, "seeds: the first texts, the pool and test subsamples, the random draws")
    strategies: tuple[str, ...] = option(DEFAULT_STRATEGIES, "who chooses the texts and who predicts")
    pool_size: int | None = option(None, "subsample the unlabelled pool (default: the whole training part)")
    test_size: int | None = option(
        None, "subsample the test documents (a TSV: the rows held out, default a quarter of them)"
    )
    min_df_fraction: float = option(
        0.0,
        "the GP's word part and logistic regression's tf-idf leave out words in fewer than this fraction of the "
        "labelled texts (0: every word)",
        check=Real(0, 1, open_high=True),
    )
    encoder: str = option("all-MiniLM-L6-v2", "pretrained sentence encoder (lvgp.encoders.ENCODERS)")
    encoder_precision: str = encoder_precision_option()
    ldk_max_iter: int = option(50, "L-BFGS iterations of the GP classifier (at least 300)")
    vocabulary_from: str = option(
        "labelled",
        "the texts the GP's vocabulary and idf and logistic regression's tf-idf are fitted on: labelled (each "
        "round's labelled texts) or pool (the whole pool's texts, once a seed; no label read)",
        choices=("labelled", "pool"),
    )
    encoder_part: str = option(
        ENCODER_PART,
        "the GP's part on the encoder's unit vectors beside the tf-idf cosine: cosine (linear) or rbf (stationary, "
        "its length-scale fitted by the evidence, as the open-set study's gpc-bow-encoder-rbf)",
        choices=("cosine", "rbf"),
        before="cosine",
    )
    encoder_weight: str = option(
        ENCODER_WEIGHT,
        "the weight of the GP's encoder parts beside the words: evidence (the marginal likelihood's) or loo (after "
        "it, scaled by the factor the labels' leave-one-out predictions choose, on texts of 40 words and more; "
        "LDKGPClassifier(encoder_weight='loo'), as the open-set study's gpc-bow-encoder-rbf)",
        choices=("evidence", "loo"),
        before="evidence",
    )
    pool_words: str = option(
        POOL_WORDS,
        "the pool GP's cluster parts (gp-pool-*): the encoder's vectors alone (none), or also a second cluster part, "
        "its cloud each text's encoder vector joined to its words (the pool's tf-idf reduced by a truncated SVD: lsa)",
        choices=("none", "lsa"),
        before="none",
    )
    gpc_objective: str = gpc_objective_option()
    power_beta: float = option(
        POWER_BETA,
        "the exponent of the power acquisitions (gp-power-*, gp-pool-power-*): a batch is drawn with probabilities "
        "proportional to the score to this power (1: Kirsch et al.'s choice; larger: greedier)",
    )
    greedy_beta: float = option(
        GREEDY_BETA,
        "the exponent of the conditioned batch (gp-pool-greedy-epig): each text drawn with probability proportional "
        "to its EPIG given the texts chosen before it, to this power",
    )
    epig_targets: int = option(
        EPIG_TARGETS, "EPIG's target texts, drawn afresh from the unlabelled pool every round (the *-epig strategies)"
    )
    random_share: float = option(
        RANDOM_SHARE,
        "the share of each batch an acquiring strategy draws at random from the texts its acquisition left "
        "(0: the whole batch the acquisition's)",
        check=Real(0, 1),
    )
    seed: int = option(0, "seed of the study", check=Integer(0))
    device: str = option("cpu", DEVICE_HELP)

    #: what the shared GP-classifier builders read (the learners' kernel has no word vectors): no unlabeled
    #: pool, the Dirichlet inference, the -plus spec's default word vectors (replaced by the kernel)
    unlabeled: ClassVar[str] = "none"
    gpc_inference: ClassVar[str] = "dirichlet"
    part_selection: ClassVar[str] = "none"
    embeddings: ClassVar[str] = "glove-6b-50d"
    cell_choosing_options: ClassVar[tuple[str, ...]] = ("strategies", "splits")
    methods_option: ClassVar[str] = "strategies"

    @property
    def methods(self) -> tuple[str, ...]:  # type: ignore[override]
        """The strategies (the registry's methods of this study)."""
        return self.strategies

    @property
    def n_splits(self) -> int:
        return self.splits

    def validate(self) -> None:
        super().validate()
        if self.batch >= self.budget:
            raise ValueError(f"--batch {self.batch} must be below --budget {self.budget}")
        check_encoder_methods(self)

    def check_data(self) -> None:
        split = self.split(0)
        if len(split.start) >= self.budget:
            raise ValueError(
                f"--budget {self.budget}: the start takes one text of each of the {len(split.start)} classes; pass a "
                "larger budget"
            )
        if self.budget > len(split.pool_labels):
            raise ValueError(f"--budget {self.budget} exceeds the pool's {len(split.pool_labels)} texts")

    @functools.lru_cache(maxsize=4)  # noqa: B019  (frozen and hashable)
    def split(self, split: int) -> ActiveSplit:
        """The pool, the first labelled texts and the test documents of one seed (module docstring)."""
        corpus = classification_corpus(self.dataset)
        texts, labels = list(corpus.train_texts), np.asarray(corpus.train_labels).astype(str)
        rng = Streams.of_seed(self.seed).numpy(f"active split {split}")
        if self.dataset in BUILTIN:
            test_texts, test_labels = list(corpus.test_texts), np.asarray(corpus.test_labels).astype(str)
            if self.test_size and self.test_size < len(test_labels):
                keep = np.sort(rng.choice(len(test_labels), self.test_size, replace=False))
                test_texts, test_labels = [test_texts[i] for i in keep], test_labels[keep]
        else:
            order = rng.permutation(len(labels))
            n_test = self.test_size or len(labels) // 4
            if n_test >= len(labels) - 2:
                raise ValueError(f"--test-size {n_test} leaves no pool of {self.dataset}'s {len(labels)} rows")
            test, rest = order[:n_test], order[n_test:]
            test_texts, test_labels = [texts[i] for i in test], labels[test]
            texts, labels = [texts[i] for i in rest], labels[rest]
        if self.pool_size and self.pool_size < len(labels):
            keep = np.sort(rng.choice(len(labels), self.pool_size, replace=False))
            texts, labels = [texts[i] for i in keep], labels[keep]
        start = np.array([rng.choice(np.flatnonzero(labels == c)) for c in np.unique(labels)])
        return ActiveSplit(texts, labels, start, test_texts, test_labels)

    def cells(self) -> list[dict]:
        return [{"method": m, "split": s, "params": {}} for m in self.strategies for s in range(self.splits)]

    def run_cell(self, cell: dict) -> dict:
        return run_cell(self, cell)

    def summarize(self, cells: list[dict]) -> list[dict]:
        records = sorted(
            ({k: v for k, v in c.items() if k != "params"} for c in cells),
            key=lambda r: (self.method_order(r["method"]), r["split"]),
        )
        for r in records:  # the labels to reach random's accuracy at the full budget, on the same seed
            reference = next((q for q in records if q["method"] == "random" and q["split"] == r["split"]), None)
            r["labels_to_random_final"] = None
            if reference is not None:
                target = reference["curve"][-1]["accuracy"]
                r["labels_to_random_final"] = next((p["labels"] for p in r["curve"] if p["accuracy"] >= target), None)
        return records

    def table(self, records: list[dict]) -> str:
        return table_markdown(records, self)

    figures_from_records = True

    def figures(self, out: Path, cells: list[dict], records: list[dict]) -> None:
        learning_curves(records, self, out / "learning_curves.png")


def run_cell(study: ActiveStudy, cell: dict) -> dict:
    """One strategy on one seed: the learning curve from one text a class to the budget."""
    strategy = cell["method"]
    _, strategy_acquisition = STRATEGIES[strategy]
    split = study.split(cell["split"])
    rng = Streams.of_seed(study.seed).numpy(f"active random {cell['split']}")
    bald_seed = Streams.of_seed(study.seed).seed("bald draws")
    power_rng = Streams.of_seed(study.seed).numpy(f"active power draws {cell['split']}")
    target_rng = Streams.of_seed(study.seed).numpy(f"active epig targets {cell['split']}")
    mixed_rng = Streams.of_seed(study.seed).numpy(f"active mixed random {cell['split']}")
    labelled = list(split.start)
    unlabelled = np.setdiff1d(np.arange(len(split.pool_labels)), labelled)
    # --vocabulary-from pool: the GP reads the pool's vocabulary (its builder); logistic regression's
    # tf-idf is fitted on the labelled texts and the unlabelled rest, the whole pool
    pool_tfidf = study.vocabulary_from == "pool" and STRATEGIES[strategy][0] == "logreg"
    curve: list[dict] = []
    fit_seconds = acquire_seconds = 0.0
    encode_seconds = 0.0
    with recorded_warnings() as warned:
        while True:
            x = [split.pool_texts[i] for i in labelled]
            start = time.perf_counter()  # the model's making counted: the pool's cluster parts, once a seed
            model = study.estimator(cell)
            if pool_tfidf:
                model.fit(x, split.pool_labels[labelled], unlabeled=[split.pool_texts[i] for i in unlabelled])
            else:
                model.fit(x, split.pool_labels[labelled])
            fit_seconds += time.perf_counter() - start
            encode_seconds += getattr(model, "encode_seconds_", 0.0) or 0.0
            proba = model.predict_proba(split.test_texts)
            pred = model.classes_[np.argmax(proba, axis=1)]
            curve.append(
                {
                    "labels": len(labelled),
                    "accuracy": float(np.mean(pred == split.test_labels)),
                    "log_loss": log_loss(proba, model.classes_, split.test_labels),
                }
            )
            take = min(study.batch, study.budget - len(labelled))
            if take <= 0:
                break
            start = time.perf_counter()
            if strategy_acquisition == "random":
                chosen = rng.choice(unlabelled, take, replace=False)
            else:
                pool = [split.pool_texts[i] for i in unlabelled]
                # a power acquisition draws its batch in proportion to its score; the others take the top
                targets = None
                if strategy_acquisition.endswith("epig"):  # the targets: unlabelled texts, drawn afresh a round
                    drawn = target_rng.choice(len(pool), min(study.epig_targets, len(pool)), replace=False)
                    targets = [pool[i] for i in drawn]
                n_random = int(round(study.random_share * take))
                if strategy_acquisition == "greedy-epig":  # the user's call, with the round's targets and generators
                    picked = acquisition.choose_texts_to_label(
                        model, pool, take - n_random, targets=targets, beta=study.greedy_beta, random_state=power_rng,
                        seed=bald_seed,
                    )  # fmt: skip
                    chosen = unlabelled[picked]
                else:
                    score = strategy_acquisition.removeprefix("power-")
                    scores = acquisition.acquisition_scores(model, score, pool, bald_seed, targets)
                    if strategy_acquisition.startswith("power-"):  # drawn by the power keys: scores at least 0
                        scores = np.clip(scores, 0.0, None)
                        picked = acquisition.power_batch(scores, take - n_random, power_rng, study.power_beta)
                    else:
                        picked = np.argsort(-scores, kind="stable")[: take - n_random]
                    chosen = unlabelled[picked]
                if n_random:  # the batch's random part, from the texts its acquisition left
                    rest = np.setdiff1d(unlabelled, chosen)
                    chosen = np.concatenate([chosen, mixed_rng.choice(rest, n_random, replace=False)])
            acquire_seconds += time.perf_counter() - start
            labelled += chosen.tolist()
            unlabelled = np.setdiff1d(unlabelled, chosen)
    accuracies = [p["accuracy"] for p in curve]
    return {
        "strategy": strategy,
        "curve": curve,
        "aulc": float(np.mean(accuracies)),
        "final_accuracy": accuracies[-1],
        "final_log_loss": curve[-1]["log_loss"],
        "n_pool": len(split.pool_labels),
        "n_test": len(split.test_labels),
        "fit_seconds": fit_seconds,
        "acquire_seconds": acquire_seconds,
        "encode_seconds": encode_seconds,
        "warnings": warned,
    }


# ------------------------------------------------------------------ the report
def _at(record: dict, labels: int) -> float | None:
    """The curve's accuracy at the last point with at most ``labels`` labelled texts."""
    points = [p for p in record["curve"] if p["labels"] <= labels]
    return points[-1]["accuracy"] if points else None


def _mean_curve(rows: list[dict]) -> dict[int, float]:
    """Mean accuracy over the seeds at each labelled-text count of the curves."""
    points: dict[int, list[float]] = {}
    for r in rows:
        for p in r["curve"]:
            points.setdefault(p["labels"], []).append(p["accuracy"])
    return {k: float(np.mean(v)) for k, v in points.items()}


def _points_above(rows: list[dict], reference: list[dict] | None) -> str:
    """``"k of n"``: the points where ``rows``' mean curve is above ``reference``'s."""
    if not reference:
        return "–"
    mine, theirs = _mean_curve(rows), _mean_curve(reference)
    shared = sorted(set(mine) & set(theirs))
    return f"{sum(mine[k] > theirs[k] for k in shared)} of {len(shared)}"


def acquisition_settings(study: ActiveStudy) -> list[str]:
    """The acquisition's and the GP's settings of ``study`` that are not the studies' protocol (``--power-beta``,
    ``--greedy-beta``, ``--epig-targets``, ``--encoder-part``, ``--encoder-weight``, ``--pool-words`` where a pool GP
    ran, ``--random-share`` away from their defaults), as the table's note names them."""
    notes = []
    if study.power_beta != POWER_BETA:
        notes.append(f"Power acquisitions' exponent {study.power_beta:g} (--power-beta; default {POWER_BETA:g})")
    if study.greedy_beta != GREEDY_BETA:
        notes.append(f"The conditioned batch's exponent {study.greedy_beta:g} (--greedy-beta; default {GREEDY_BETA:g})")
    if study.epig_targets != EPIG_TARGETS:
        notes.append(f"EPIG's target texts {study.epig_targets} a round (--epig-targets; default {EPIG_TARGETS})")
    if study.encoder_part != ENCODER_PART:
        notes.append(f"The GP's encoder part {study.encoder_part} (--encoder-part; default {ENCODER_PART})")
    if study.encoder_weight != ENCODER_WEIGHT:
        notes.append(f"The GP's encoder weight {study.encoder_weight} (--encoder-weight; default {ENCODER_WEIGHT})")
    if study.pool_words != POOL_WORDS and any(
        STRATEGIES[m][0] == "gp-pool" for m in study.strategies if m in STRATEGIES
    ):
        notes.append(
            "The pool GP's second cluster part, of the texts' encoder vectors joined to their words: "
            f"{study.pool_words} (--pool-words; default {POOL_WORDS})"
        )
    if study.random_share != RANDOM_SHARE:
        notes.append(
            f"A share of {study.random_share:g} of each acquired batch drawn at random (--random-share; default "
            f"{RANDOM_SHARE:g})"
        )
    return notes


def table_markdown(records: list[dict], study: ActiveStudy) -> str:
    """One row a strategy: the area under its learning curve, its accuracy at half and at the full
    budget, its final log loss, the labels it needs to reach random's final accuracy, at how many
    points it is above logistic-regression uncertainty sampling, and the seconds of a run."""
    half = study.budget // 2
    lines = [
        f"| strategy | area under the curve | accuracy at {half} | accuracy at {study.budget} | log loss at "
        f"{study.budget} | labels to random's accuracy at {study.budget} | above LogReg entropy at | s a run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    columns: dict[str, list] = {}
    for m in study.strategies:
        rows = [r for r in records if r["method"] == m]
        if rows:
            columns[m] = rows
    best_aulc = max((np.mean([r["aulc"] for r in rows]) for rows in columns.values()), default=None)
    for m, rows in columns.items():
        half_acc = [a for r in rows if (a := _at(r, half)) is not None]
        reach = [r["labels_to_random_final"] for r in rows]
        reached = [v for v in reach if v is not None]
        if "random" not in columns:  # nothing to reach: not "0 of n reach it"
            reach_text = "– (no random texts in this study)"
        else:
            reach_text = (f"{np.mean(reached):.0f}" if reached else "–") + (
                f" ({len(reached)} of {len(reach)} reach it)" if len(reached) < len(reach) else ""
            )
        seconds = np.mean([r["fit_seconds"] + r["acquire_seconds"] for r in rows])
        above = _points_above(rows, columns.get("logreg-entropy")) if m != "logreg-entropy" else "–"
        lines.append(
            f"| {study.label(m)} | {mean_cell([r['aulc'] for r in rows], study.splits, np.mean([r['aulc'] for r in rows]) == best_aulc)} "
            f"| {mean_cell(half_acc, study.splits)} | {mean_cell([r['final_accuracy'] for r in rows], study.splits)} "
            f"| {mean_cell([r['final_log_loss'] for r in rows], study.splits)} | {reach_text} | {above} | {seconds:.0f} |"
        )
    first = records[0] if records else {}
    return "\n".join(lines) + (
        f"\n\n{study.dataset}: one text a class to start, batches of {study.batch} to {study.budget} labels; "
        f"{first.get('n_pool', '?')} pool and {first.get('n_test', '?')} test documents; test accuracy, mean ± std over "
        f"{study.splits} seeds (area: the mean accuracy over the curve's points; the best in bold); {PARTIAL_NOTE}. "
        "Above LogReg entropy at: the curve's points (labelled-text counts) where the strategy's mean accuracy is above "
        "logistic-regression uncertainty sampling's, of all points. Seconds: the fits and acquisitions of one run, "
        "the encoding apart."
        + (
            " Word parts fitted on the whole pool's texts (--vocabulary-from pool)."
            if study.vocabulary_from == "pool"
            else ""
        )
        + "".join(f" {note}." for note in acquisition_settings(study))
        + "\n"
    )


def learning_curves(records: list[dict], study: ActiveStudy, path: Path) -> None:
    """Test accuracy and log loss against the labelled texts, one line per strategy (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for i, m in enumerate(study.strategies):
        rows = [r for r in records if r["method"] == m]
        if not rows:
            continue
        labels = [p["labels"] for p in rows[0]["curve"]]
        for ax, key in zip(axes, ("accuracy", "log_loss")):
            values = np.mean([[p[key] for p in r["curve"]] for r in rows if len(r["curve"]) == len(labels)], axis=0)
            ax.plot(labels, values, lw=1.4, label=study.label(m), **{**_style(i), "marker": None})
    for ax, name in zip(axes, ("test accuracy", "test log loss")):
        ax.set_xlabel("labelled texts")
        ax.set_ylabel(name)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{study.dataset}: active learning, batches of {study.batch} (mean over {study.splits} seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
