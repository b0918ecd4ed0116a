r"""Is a text one of the training classes at all? Novelty scores of classifiers and the open-set metrics.

Every classifier in lvgp has ``score_samples(X)``, scikit-learn's novelty convention: one number a
document, **higher meaning more typical of the training classes**. What it is made of:

* ``"entropy"`` -- minus the entropy :math:`\sum_c p_c \log p_c` of the predictive probabilities
  (the default of every classifier that gives probabilities but the GP classifier: it falls both when
  the classes are confused and, for a GP, when the latent posterior is wide);
* ``"max-probability"`` -- the largest predictive probability (Hendrycks & Gimpel 2017);
* ``"variance"`` -- (GP classifiers) minus the mean over the classes of the latent posterior
  variance divided by the latent prior variance at the document, :math:`-\frac1C \sum_c
  \mathbb V[f_c(x) \mid \mathcal D] / k_c(x, x)`, in :math:`[-1, 0]`: -1 where the training documents
  say nothing about :math:`x`. Distance-aware only with a kernel that is (a stationary part: SNGP's
  argument): with a linear or cosine kernel and more documents than dimensions, the posterior
  variance is small everywhere in the training documents' span;
* ``"energy"`` -- (GP classifiers) :math:`\log \sum_c \exp \mu_c(x)` of the latent posterior means
  :math:`\mu_c`: for the Dirichlet inference the log of the total pseudo-count (the Dirichlet
  evidence, Milios et al. 2018) at the posterior median, which falls where no class has evidence,
  whether the classes are confused or not; for the softmax inferences minus the free energy of the
  logits (Liu, Wang, Owens & Li, NeurIPS 2020). The GP classifier's default: on dev documents of
  held-out classes it ranked them at or above the entropy on average, by a rule fixed before the draws
  it was chosen on (``benchmarks/README.md``, ``open_set_dev.py``);
* ``"entropy-variance"`` -- (GP classifiers, Dirichlet inference) the entropy and the variance ratio
  together, each on the scale of in-scope texts the model did not fit: minus the mean of the two
  scores' quantiles among the training documents' leave-one-out scores (:func:`reference_quantiles`;
  each a conformal p-value), in :math:`[-1, 0]`. The two disagree on which new topics they catch (on
  20ng's dev documents, one is the better on some draws of held-out classes and the other on others:
  ``benchmarks/README.md``, ``open_set_dev.py``);
* ``"energy-variance"`` -- (GP classifiers, Dirichlet inference) the same with the energy in place of
  the entropy: minus the mean of minus the energy's quantile and the variance ratio's among the
  training documents' leave-one-out ones (:func:`energy_variance_novelty`), in :math:`[-1, 0]`;
* ``"class-variance"`` -- (GP classifiers) minus the variance ratio of one class, the one with the
  largest latent mean, :math:`-\mathbb V[f_{\hat c}(x) \mid \mathcal D] / k_{\hat c}(x, x)` with
  :math:`\hat c = \arg\max_c \mu_c(x)` (:func:`class_variance_ratio`), in :math:`[-1, 0]`. Class-conditional,
  as the Mahalanobis distance to the nearest class mean is: the Dirichlet inference gives each class's
  latent function low noise at that class's own documents only, so the predicted class's variance is small
  near its own documents, where the classes' average also falls near other classes' documents (on dev
  documents of held-out classes it ranked them above ``"variance"`` on nearly every draw:
  ``benchmarks/README.md``, "The predicted class's variance");
* ``"energy-class-variance"`` -- (GP classifiers, Dirichlet inference) ``"energy-variance"`` with the
  predicted class's variance ratio in place of the classes' average (:func:`energy_class_variance_novelty`;
  its reference: each training document's leave-one-out variance ratio of the class with its largest
  leave-one-out latent mean);
* ``"centred-energy"`` -- (GP classifiers, Dirichlet inference) the energy minus the mean energy of the in-scope
  texts of the class the text is predicted to be: :math:`\log \sum_c \exp \mu_c(x) - \sum_c p_c(x)\, \bar E_c`,
  with :math:`p` the predictive probabilities and :math:`\bar E_c` the mean of the leave-one-out energies of
  class :math:`c`'s training documents (:func:`class_reference_energies`; :func:`centred_energy_novelty`).
  Where a class's own texts are spread out, its in-scope texts have little evidence and a low energy, and the
  plain energy takes them for new; centred, each text is compared with its own class's texts (per-class
  thresholds, as open-set recognition sets them: Bendale & Boult 2016). Not a default: on fresh dev draws it
  helped on some corpora with few labelled texts a class and cost on others, where a handful of leave-one-out
  energies a class make a noisy mean (``benchmarks/README.md``, "Rule 23");
* ``"lifted-energy"`` -- (GP classifiers, Dirichlet inference) the energy lifted for spread-out classes alone:
  :math:`\log \sum_c \exp \mu_c(x) + \sum_c p_c(x) \max(0, \bar E - \bar E_c)`, with :math:`\bar E` the mean
  leave-one-out energy of all training documents (:func:`lifted_energy_novelty`). A text predicted to be a class
  whose own texts are less typical than the average training text is lifted by that shortfall; otherwise it
  keeps its energy. ``"centred-energy"`` also pushes the texts of tight classes down, and a new topic near a
  tight class with them (``benchmarks/README.md``, "Rule 24");
* ``"max-decision"`` -- (SVMs) the largest decision value over the classes (:math:`|d|` for two).

The score is fixed before any out-of-scope text is seen: by the estimator's documented default or
its ``novelty_score`` argument; never chosen on out-of-scope data.

:func:`open_set_metrics` scores a novelty score against which documents are out of scope: the area
under the ROC curve and the average precision with out-of-scope as the positive class, and the share
of out-of-scope documents accepted at 95% recall of the in-scope ones (FPR95).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "PROBABILITY_SCORES",
    "NOVELTY_SCORES",
    "REFERENCE_SCORES",
    "CLASS_ENERGY_SCORES",
    "probability_novelty",
    "decision_novelty",
    "latent_energy",
    "variance_novelty",
    "normalized_entropy",
    "reference_quantiles",
    "entropy_variance_novelty",
    "energy_variance_novelty",
    "class_variance_ratio",
    "energy_class_variance_novelty",
    "class_reference_energies",
    "centred_energy_novelty",
    "lifted_energy_novelty",
    "latent_novelty_scores",
    "leave_one_out_novelty",
    "conformal_threshold",
    "conformal_references_needed",
    "class_conditional_thresholds",
    "NoveltyReference",
    "open_set_metrics",
    "ProbabilityNoveltyMixin",
    "NOVELTY_SCORE_NAMES",
]

#: the novelty scores made of predictive probabilities
PROBABILITY_SCORES = ("entropy", "max-probability")
#: every novelty score a GP classifier offers (``LDKGPClassifier(novelty_score=...)``)
NOVELTY_SCORES = (
    *PROBABILITY_SCORES,
    "variance",
    "energy",
    "entropy-variance",
    "energy-variance",
    "class-variance",
    "energy-class-variance",
    "centred-energy",
    "lifted-energy",
)
#: the scores made of the classes' mean leave-one-out energies (:func:`class_reference_energies`)
CLASS_ENERGY_SCORES = ("centred-energy", "lifted-energy")
#: the novelty scores made of the training documents' leave-one-out scores (Dirichlet inference:
#: :class:`NoveltyReference`): quantiles among them, or the classes' mean energies
REFERENCE_SCORES = ("entropy-variance", "energy-variance", "energy-class-variance", *CLASS_ENERGY_SCORES)
#: the GP scores that read the predictive probabilities beside the latent posterior
PROBABILITY_READING_SCORES = (*PROBABILITY_SCORES, "entropy-variance", *CLASS_ENERGY_SCORES)
#: the fewest training documents of a class whose leave-one-out energies give its mean for :data:`CLASS_ENERGY_SCORES`;
#: a class with fewer gets the mean over all training documents (a single document left out has no example of its
#: class: its energy says nothing of the class's texts)
CLASS_REFERENCE_MIN_DOCUMENTS = 3
#: recall of the in-scope documents at which FPR95 is read
IN_SCOPE_RECALL = 0.95
#: points of the ROC curve a record keeps (the curve is drawn from them)
ROC_POINTS = 101


def probability_novelty(proba: np.ndarray, kind: str = "entropy") -> np.ndarray:
    r"""The novelty score ``kind`` of ``n x C`` predictive probabilities (higher: more typical):
    ``"entropy"``: :math:`\sum_c p_c \log p_c` (minus the entropy); ``"max-probability"``: :math:`\max_c p_c`.

    Raises:
        ValueError: ``kind`` is not one of :data:`PROBABILITY_SCORES`, or ``proba`` is not ``n x C``.
    """
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2:
        raise ValueError(f"proba must be n x C; got shape {proba.shape}")
    if kind == "entropy":
        return np.sum(proba * np.log(np.clip(proba, 1e-300, None)), axis=1)
    if kind == "max-probability":
        return proba.max(axis=1)
    raise ValueError(f"kind must be one of {PROBABILITY_SCORES}; got {kind!r}")


def latent_energy(mean: np.ndarray) -> np.ndarray:
    r"""The ``"energy"`` score of ``n x C`` latent means (or logits): :math:`\log \sum_c \exp \mu_c`.

    One column (a binary classifier's single latent function :math:`\mu` of the second class: the variational
    GP classifier's probit latent, a logistic regression's log odds) is read as the two classes' latents
    :math:`(-\mu/2, \mu/2)`, symmetric as the two-class softmax is -- the binary logistic GP with kernel
    :math:`K` is the two-class softmax GP with kernel :math:`K/2`, whose posterior mode's latents sum to zero
    (the mode is :math:`K (y - \pi)`; Rasmussen & Williams 2006, sec. 3.5) -- so that the score is
    :math:`|\mu|/2 + \log(1 + e^{-|\mu|})` and does not depend on which class is the second. (Read as
    :math:`(0, \mu)`, a text sure of the first class would score below one with no evidence at all.)"""
    from scipy.special import logsumexp

    mean = np.asarray(mean, dtype=np.float64)
    if mean.ndim != 2:
        raise ValueError(f"mean must be n x C; got shape {mean.shape}")
    if mean.shape[1] == 1:
        mean = np.hstack([-mean / 2, mean / 2])
    return logsumexp(mean, axis=1)


def variance_novelty(var: np.ndarray, prior: np.ndarray) -> np.ndarray:
    r"""The ``"variance"`` score of latent posterior variances ``var`` and prior variances ``prior``
    (both ``n x C``): :math:`-\frac1C \sum_c \min(1, \mathbb V[f_c] / k_c(x, x))`, in :math:`[-1, 0]`."""
    ratio = np.asarray(var, dtype=np.float64) / np.maximum(np.asarray(prior, dtype=np.float64), 1e-300)
    return -np.mean(np.clip(ratio, 0.0, 1.0), axis=1)


def class_variance_ratio(mean: np.ndarray, var: np.ndarray, prior: np.ndarray) -> np.ndarray:
    r"""The variance ratio of the class with the largest latent mean: :math:`\min(1, \mathbb V[f_{\hat c}] /
    k_{\hat c}(x, x))`, :math:`\hat c = \arg\max_c \mu_c(x)` (the first on ties), of ``n x C`` latent means
    ``mean``, posterior variances ``var`` and prior variances ``prior``; one column (a binary classifier's
    single latent function) is its own class. ``n`` values in :math:`[0, 1]`, higher the less typical (minus
    the ``"class-variance"`` score).

    Raises:
        ValueError: the three are not ``n x C`` arrays of one shape.
    """
    mean, var, prior = (np.asarray(a, dtype=np.float64) for a in (mean, var, prior))
    if mean.ndim != 2 or var.shape != mean.shape or prior.shape != mean.shape:
        raise ValueError(
            f"mean, var and prior must be n x C arrays of one shape; got {mean.shape}, {var.shape} and {prior.shape}"
        )
    rows, top = np.arange(len(mean)), np.argmax(mean, axis=1)
    return np.clip(var[rows, top] / np.maximum(prior[rows, top], 1e-300), 0.0, 1.0)


def normalized_entropy(proba: np.ndarray) -> np.ndarray:
    r"""The entropy of ``n x C`` probabilities over its largest value :math:`\log C`: ``n`` values in
    :math:`[0, 1]` (higher: less certain)."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[1] < 2:
        raise ValueError(f"proba must be n x C with C >= 2; got shape {proba.shape}")
    return -probability_novelty(proba, "entropy") / np.log(proba.shape[1])


def reference_quantiles(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    r"""Each of ``values``' mid-quantile among ``reference`` (``m`` scores of in-scope documents):
    :math:`(\#\{r < v\} + \#\{r \le v\}) / 2m`, in :math:`[0, 1]` -- the share of the reference
    below ``v``, ties counted half (a conformal p-value of ``v``'s novelty where higher values are the
    more novel). ``n`` values."""
    reference = np.sort(np.asarray(reference, dtype=np.float64).ravel())
    if reference.size == 0 or not np.isfinite(reference).all():
        raise ValueError("reference must hold at least one finite score")
    values = np.asarray(values, dtype=np.float64)
    below = np.searchsorted(reference, values, side="left")
    at_or_below = np.searchsorted(reference, values, side="right")
    return (below + at_or_below) / (2.0 * reference.size)


class NoveltyReference(NamedTuple):
    r"""In-scope documents' scores that :data:`REFERENCE_SCORES` put a text's scores among, ``m`` values
    each, all higher the less typical (a GP classifier's ``novelty_reference()``: its training documents'
    leave-one-out ones)."""

    #: the :func:`normalized_entropy` of the (tempered) predictive probabilities, in :math:`[0, 1]`
    entropy: np.ndarray
    #: the variance ratio, minus :func:`variance_novelty`, in :math:`[0, 1]`
    variance: np.ndarray
    #: minus the :func:`latent_energy` of the latent means
    energy: np.ndarray
    #: the :func:`class_variance_ratio`, in :math:`[0, 1]`
    class_variance: np.ndarray
    #: ``C`` values: each class's mean leave-one-out :func:`latent_energy` (:func:`class_reference_energies`;
    #: higher: the class's texts more typical), what ``"centred-energy"`` subtracts
    class_energy: np.ndarray | None = None
    #: minus each document's ``"centred-energy"`` score (:func:`centred_energy_novelty` of its leave-one-out
    #: latent means and tempered probabilities)
    centred_energy: np.ndarray | None = None
    #: minus each document's ``"lifted-energy"`` score (:func:`lifted_energy_novelty` of the same, the mean of
    #: ``-energy`` the overall reference)
    lifted_energy: np.ndarray | None = None
    #: ``m x C``: the (tempered) predictive probabilities themselves, whose argmax groups each document by the
    #: class predicted for it (:func:`class_conditional_thresholds`)
    proba: np.ndarray | None = None


def entropy_variance_novelty(
    proba: np.ndarray, var: np.ndarray, prior: np.ndarray, reference: NoveltyReference
) -> np.ndarray:
    r"""The ``"entropy-variance"`` score: minus the mean of the :func:`normalized_entropy` of ``proba``'s
    quantile among ``reference.entropy`` and the variance ratio's (minus :func:`variance_novelty` of
    ``var``, ``prior``) among ``reference.variance`` (:func:`reference_quantiles`; the references:
    in-scope documents' scores, a GP classifier's ``novelty_reference()``), in :math:`[-1, 0]`. ``n``
    values."""
    variance = reference_quantiles(-variance_novelty(var, prior), reference.variance)
    return -(reference_quantiles(normalized_entropy(proba), reference.entropy) + variance) / 2


def energy_variance_novelty(
    mean: np.ndarray, var: np.ndarray, prior: np.ndarray, reference: NoveltyReference
) -> np.ndarray:
    r"""The ``"energy-variance"`` score: minus the mean of minus the :func:`latent_energy` of the
    ``n x C`` latent means ``mean``'s quantile among ``reference.energy`` and the variance ratio's
    (minus :func:`variance_novelty` of ``var``, ``prior``) among ``reference.variance``
    (:func:`reference_quantiles`), in :math:`[-1, 0]`. ``n`` values."""
    variance = reference_quantiles(-variance_novelty(var, prior), reference.variance)
    return -(reference_quantiles(-latent_energy(mean), reference.energy) + variance) / 2


def energy_class_variance_novelty(
    mean: np.ndarray, var: np.ndarray, prior: np.ndarray, reference: NoveltyReference
) -> np.ndarray:
    r"""The ``"energy-class-variance"`` score: minus the mean of minus the :func:`latent_energy` of the
    ``n x C`` latent means ``mean``'s quantile among ``reference.energy`` and the predicted class's variance
    ratio's (:func:`class_variance_ratio` of ``mean``, ``var``, ``prior``) among ``reference.class_variance``
    (:func:`reference_quantiles`), in :math:`[-1, 0]`. ``n`` values."""
    variance = reference_quantiles(class_variance_ratio(mean, var, prior), reference.class_variance)
    return -(reference_quantiles(-latent_energy(mean), reference.energy) + variance) / 2


def class_reference_energies(
    energy: np.ndarray, codes: np.ndarray, n_classes: int, min_documents: int = CLASS_REFERENCE_MIN_DOCUMENTS
) -> np.ndarray:
    r"""Each class's :math:`\bar E_c` for ``"centred-energy"``: the mean of ``energy`` (``m`` in-scope documents'
    :func:`latent_energy`, a GP classifier's leave-one-out ones) over the documents of class ``c`` (``codes``:
    ``m`` class codes in ``[0, n_classes)``), or over all ``m`` documents for a class with fewer than
    ``min_documents``. ``n_classes`` values.

    Raises:
        ValueError: ``energy`` and ``codes`` differ in length or are empty, or a code is outside ``[0, n_classes)``.
    """
    energy = np.asarray(energy, dtype=np.float64).ravel()
    codes = np.asarray(codes).ravel()
    if energy.size == 0 or energy.size != codes.size:
        raise ValueError(f"energy and codes must be of one non-zero length; got {energy.size} and {codes.size}")
    if codes.min() < 0 or codes.max() >= int(n_classes):
        raise ValueError(f"codes must lie in [0, {int(n_classes)}); got {codes.min()} to {codes.max()}")
    counts = np.bincount(codes, minlength=int(n_classes))
    sums = np.bincount(codes, weights=energy, minlength=int(n_classes))
    means = sums / np.maximum(counts, 1)
    return np.where(counts >= int(min_documents), means, energy.mean())


def centred_energy_novelty(mean: np.ndarray, proba: np.ndarray, class_energy: np.ndarray) -> np.ndarray:
    r"""The ``"centred-energy"`` score: :math:`\log \sum_c \exp \mu_c(x) - \sum_c p_c(x)\, \bar E_c`, the
    :func:`latent_energy` of the ``n x C`` latent means ``mean`` minus the classes' reference energies
    ``class_energy`` (``C``: :func:`class_reference_energies`) weighed by the ``n x C`` predictive
    probabilities ``proba``. ``n`` values, higher: more typical.

    Raises:
        ValueError: the shapes disagree.
    """
    proba = np.asarray(proba, dtype=np.float64)
    class_energy = np.asarray(class_energy, dtype=np.float64).ravel()
    if proba.ndim != 2 or proba.shape[1] != class_energy.size:
        raise ValueError(f"proba must be n x C with C = {class_energy.size} (class_energy); got shape {proba.shape}")
    return latent_energy(mean) - proba @ class_energy


def lifted_energy_novelty(
    mean: np.ndarray, proba: np.ndarray, class_energy: np.ndarray, overall_energy: float
) -> np.ndarray:
    r"""The ``"lifted-energy"`` score: :math:`\log \sum_c \exp \mu_c(x) + \sum_c p_c(x) \max(0, \bar E - \bar
    E_c)`, the :func:`latent_energy` of the ``n x C`` latent means ``mean`` plus, weighed by the ``n x C``
    predictive probabilities ``proba``, how far each class's reference energy ``class_energy`` (``C``:
    :func:`class_reference_energies`) falls short of ``overall_energy`` (:math:`\bar E`, the mean over all
    in-scope documents). Equal to :func:`centred_energy_novelty` with the references capped at
    :math:`\bar E`, plus :math:`\bar E`. ``n`` values, higher: more typical.

    Raises:
        ValueError: the shapes disagree, or ``overall_energy`` is not finite.
    """
    if not np.isfinite(overall_energy):
        raise ValueError(f"overall_energy must be finite; got {overall_energy!r}")
    capped = np.minimum(np.asarray(class_energy, dtype=np.float64).ravel(), float(overall_energy))
    return centred_energy_novelty(mean, proba, capped) + float(overall_energy)


def latent_novelty_scores(
    kinds: Any,
    mean: np.ndarray,
    var: np.ndarray,
    prior: np.ndarray,
    *,
    proba: np.ndarray | None = None,
    reference: NoveltyReference | None = None,
) -> dict[str, np.ndarray]:
    r"""The novelty scores ``kinds`` (values of :data:`NOVELTY_SCORES`) of one latent pass of a GP classifier,
    by name: ``n x C`` latent posterior means ``mean``, variances ``var`` and prior variances ``prior``, the
    predictive probabilities ``proba`` (``n x C``; the probability scores and ``"entropy-variance"`` need
    them) and the training documents' leave-one-out ``reference`` (:data:`REFERENCE_SCORES` need it). What
    a GP classifier's ``score_samples`` and ``novelty_scores`` compute, each score from the same pass.

    Raises:
        ValueError: a kind is not a GP classifier's score, or needs ``proba`` or ``reference`` and is not given it.
    """
    out: dict[str, np.ndarray] = {}
    for kind in kinds:
        if kind not in NOVELTY_SCORES:
            raise ValueError(f"kinds must be among {NOVELTY_SCORES}; got {kind!r}")
        if proba is None and kind in PROBABILITY_READING_SCORES:
            raise ValueError(f"the novelty score {kind!r} is made of the predictive probabilities: pass proba")
        if reference is None and kind in REFERENCE_SCORES:
            raise ValueError(f"the novelty score {kind!r} needs the leave-one-out reference: pass reference")
        if kind in CLASS_ENERGY_SCORES and reference.class_energy is None:  # type: ignore[union-attr]
            raise ValueError(f"the novelty score {kind!r} needs reference.class_energy")
        if kind in PROBABILITY_SCORES:
            out[kind] = probability_novelty(proba, kind)  # type: ignore[arg-type]
        elif kind == "energy":
            out[kind] = latent_energy(mean)
        elif kind == "variance":
            out[kind] = variance_novelty(var, prior)
        elif kind == "class-variance":
            out[kind] = -class_variance_ratio(mean, var, prior)
        elif kind == "entropy-variance":
            out[kind] = entropy_variance_novelty(proba, var, prior, reference)  # type: ignore[arg-type]
        elif kind == "energy-variance":
            out[kind] = energy_variance_novelty(mean, var, prior, reference)  # type: ignore[arg-type]
        elif kind == "centred-energy":
            out[kind] = centred_energy_novelty(mean, proba, reference.class_energy)  # type: ignore[arg-type,union-attr]
        elif kind == "lifted-energy":
            overall = -float(np.mean(reference.energy))  # type: ignore[union-attr]
            out[kind] = lifted_energy_novelty(mean, proba, reference.class_energy, overall)  # type: ignore[arg-type,union-attr]
        else:  # "energy-class-variance"
            out[kind] = energy_class_variance_novelty(mean, var, prior, reference)  # type: ignore[arg-type]
    return out


#: the novelty scores a :class:`NoveltyReference` gives for the in-scope documents behind it (every GP score
#: but the largest probability, which it does not hold): :func:`leave_one_out_novelty`
LEAVE_ONE_OUT_SCORES = tuple(kind for kind in NOVELTY_SCORES if kind != "max-probability")


def leave_one_out_novelty(reference: NoveltyReference, kind: str, n_classes: int) -> np.ndarray:
    r"""The novelty score ``kind`` of the in-scope documents behind ``reference`` (a GP classifier's
    training documents' leave-one-out scores: ``novelty_reference()``), on the scale its ``score_samples``
    gives a new text, higher meaning more typical: ``m`` values. Scored beside new texts, the two sides are
    one score (:func:`~lvgp.models.gpc.score_selection.choose_novelty_score` ranks held-out classes' texts
    against them).

    * ``"energy"``: minus ``reference.energy``; ``"entropy"``: minus the normalized entropy times
      :math:`\log C` (``n_classes``: :math:`C`); ``"variance"``, ``"class-variance"``: minus the ratios;
      ``"centred-energy"``, ``"lifted-energy"``: minus ``reference.centred_energy``, ``reference.lifted_energy``;
    * ``"entropy-variance"``, ``"energy-variance"``, ``"energy-class-variance"``: minus the mean of the two
      parts' :func:`reference_quantiles` among the reference itself (each document among all, itself
      included, as a new text is).

    Raises:
        ValueError: ``kind`` is not one of :data:`LEAVE_ONE_OUT_SCORES` (``"max-probability"``: the
            reference does not hold the leave-one-out probabilities), or ``n_classes`` is below 2.
    """
    if kind not in LEAVE_ONE_OUT_SCORES:
        raise ValueError(f"kind must be one of {LEAVE_ONE_OUT_SCORES}; got {kind!r}")
    if int(n_classes) < 2:
        raise ValueError(f"n_classes must be at least 2; got {n_classes!r}")
    energy, variance = np.asarray(reference.energy, float), np.asarray(reference.variance, float)
    class_variance = np.asarray(reference.class_variance, float)
    if kind == "energy":
        return -energy
    if kind == "entropy":
        return -np.asarray(reference.entropy, float) * np.log(int(n_classes))
    if kind == "variance":
        return -variance
    if kind == "class-variance":
        return -class_variance
    if kind in CLASS_ENERGY_SCORES:
        field = kind.replace("-", "_")
        values = getattr(reference, field)
        if values is None:
            raise ValueError(f"the novelty score {kind!r} needs reference.{field}")
        return -np.asarray(values, float)
    first = np.asarray(reference.entropy, float) if kind == "entropy-variance" else energy
    second = class_variance if kind == "energy-class-variance" else variance
    return -(reference_quantiles(first, first) + reference_quantiles(second, second)) / 2


def conformal_threshold(scores: Any, keep: float = IN_SCOPE_RECALL) -> float:
    r"""The threshold on a novelty score that accepts (``score >= threshold``) at least the share ``keep`` of
    in-scope texts, from ``m`` in-scope reference ``scores`` (held-out texts', cross-validated ones', or a GP's
    leave-one-out ones: texts the model did not fit): the :math:`k`-th smallest with
    :math:`k = \lfloor (m + 1)(1 - \mathrm{keep}) \rfloor`, the split-conformal rule (Vovk, Gammerman & Shafer
    2005; Angelopoulos & Bates 2021, eq. 1 read for the lower tail). When a new in-scope text's score and the
    reference scores are exchangeable, it is accepted with probability at least ``keep``; a reference that holds
    more typical texts than new in-scope ones (in-sample scores) breaks that, and the threshold is too high.
    With fewer than :math:`1 / (1 - \mathrm{keep}) - 1` reference scores no threshold can promise it:
    :math:`-\infty` (every text accepted), with a ``RuntimeWarning``.

    Raises:
        ValueError: ``keep`` is not in (0, 1), or the scores are empty or not finite (naming the rows).
    """
    from warnings import warn

    keep = float(keep)
    if not 0.0 < keep < 1.0:
        raise ValueError(f"keep must be in (0, 1); got {keep!r}")
    values = np.asarray(scores, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("scores is empty: the threshold needs in-scope reference scores")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"scores must be finite; {bad.size} are not, in rows {bad[:10].tolist()}")
    k = int(np.floor((values.size + 1) * (1.0 - keep) + 1e-9))
    if k < 1:
        warn(
            f"{values.size} reference scores cannot promise keep={keep}: the threshold is -inf (every text "
            f"accepted); {int(np.ceil(1.0 / (1.0 - keep) - 1.0 - 1e-9))} are needed",
            RuntimeWarning,
            stacklevel=2,
        )
        return float("-inf")
    return float(np.partition(values, k - 1)[k - 1])


def conformal_references_needed(keep: float) -> int:
    r"""The fewest reference scores with which :func:`conformal_threshold` can promise ``keep``:
    :math:`\lceil 1 / (1 - \mathrm{keep}) \rceil - 1` (19 for 0.95, 9 for 0.9)."""
    keep = float(keep)
    if not 0.0 < keep < 1.0:
        raise ValueError(f"keep must be in (0, 1); got {keep!r}")
    return max(1, int(np.ceil(1.0 / (1.0 - keep) - 1e-9)) - 1)


def class_conditional_thresholds(
    scores: Any, groups: Any, n_groups: int, keep: float = IN_SCOPE_RECALL
) -> tuple[np.ndarray, np.ndarray]:
    r"""Mondrian split-conformal thresholds (Vovk, Gammerman & Shafer 2005, ch. 4.5): one for each of
    ``n_groups`` groups, the :func:`conformal_threshold` of the reference ``scores`` in that group alone
    (``groups``: ``m`` codes in ``[0, n_groups)``; for a reject option, the class the classifier predicts for
    each reference text, which it predicts for a new text too). A new in-scope text of group :math:`g` whose
    score is exchangeable with group :math:`g`'s reference scores is accepted with probability at least
    ``keep`` *within its group*, so for any mix of groups among new texts; a single pooled threshold promises
    ``keep`` only for the reference's mix. A group with fewer than :func:`conformal_references_needed`
    reference scores cannot promise it and takes the pooled threshold of all ``m`` scores instead.

    Returns:
        ``(thresholds, pooled)``: ``n_groups`` thresholds and a boolean mask of the groups given the pooled one.

    Raises:
        ValueError: ``keep`` out of (0, 1); ``scores`` and ``groups`` of different lengths; a code outside
            ``[0, n_groups)``; scores empty or not finite (:func:`conformal_threshold`).
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    codes = np.asarray(groups).ravel()
    if codes.shape != values.shape:
        raise ValueError(f"groups has {codes.size} entries for {values.size} scores")
    n_groups = int(n_groups)
    if codes.size and (not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() >= n_groups):
        bad = np.flatnonzero(~np.isin(codes, np.arange(n_groups)))
        raise ValueError(f"groups must be codes in [0, {n_groups}); rows {bad[:10].tolist()} are not")
    needed = conformal_references_needed(keep)
    counts = np.bincount(codes.astype(np.int64), minlength=n_groups) if codes.size else np.zeros(n_groups, int)
    pooled = counts < needed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the caller says which groups share the pooled one
        shared = conformal_threshold(values, keep)
    out = np.full(n_groups, shared)
    for group in np.flatnonzero(~pooled):
        out[group] = conformal_threshold(values[codes == group], keep)
    return out, pooled


def decision_novelty(decision: np.ndarray) -> np.ndarray:
    """The largest decision value of each document: ``n x C`` values, or ``n`` of a binary
    classifier (the positive class's; the negative class's is minus it, so the largest is :math:`|d|`)."""
    decision = np.asarray(decision, dtype=np.float64)
    return np.abs(decision) if decision.ndim == 1 else decision.max(axis=1)


def open_set_metrics(score: np.ndarray, out_of_scope: np.ndarray) -> dict[str, Any]:
    """How well a novelty ``score`` (higher: more typical) tells the ``out_of_scope`` documents (a
    boolean mask) from the others.

    Returns:
        ``oos_auroc`` (the area under the ROC curve, out-of-scope the positive class scored by
        ``-score``), ``oos_aupr`` (its average precision), ``oos_fpr95`` (the share of out-of-scope
        documents scored at or above the threshold that keeps 95% of the in-scope ones), and ``roc``:
        ``{"fpr", "tpr"}`` at :data:`ROC_POINTS` false-positive rates from 0 to 1 (the curve's
        largest true-positive rate at each).

    Raises:
        ValueError: lengths differ, a score is not finite (rows named), or either side is empty.
    """
    from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

    score = np.asarray(score, dtype=np.float64).ravel()
    out = np.asarray(out_of_scope, dtype=bool).ravel()
    if len(score) != len(out):
        raise ValueError(f"score has {len(score)} values and out_of_scope {len(out)}; they must be equal")
    bad = np.flatnonzero(~np.isfinite(score))
    if len(bad):
        raise ValueError(f"score is not finite at {len(bad)} rows (first: {bad[:5].tolist()})")
    if out.all() or not out.any():
        raise ValueError("out_of_scope must mark some documents, and not all of them")
    threshold = np.quantile(score[~out], 1 - IN_SCOPE_RECALL, method="lower")
    fpr, tpr, _ = roc_curve(out, -score)
    grid = np.linspace(0, 1, ROC_POINTS)
    # the step function's value at each grid point: the largest TPR reached at an FPR <= it
    at = np.searchsorted(fpr, grid, side="right") - 1
    return {
        "oos_auroc": float(roc_auc_score(out, -score)),
        "oos_aupr": float(average_precision_score(out, -score)),
        "oos_fpr95": float(np.mean(score[out] >= threshold)),
        "roc": {"fpr": grid.tolist(), "tpr": tpr[at].tolist()},
    }


#: every name a classifier's ``novelty_score`` takes: the GP's scores, an SVM's largest decision value
#: and the encoder detectors' own
NOVELTY_SCORE_NAMES = (*NOVELTY_SCORES, "max-decision", "mahalanobis", "nearest-cosine")


class ProbabilityNoveltyMixin:
    """``score_samples`` of a classifier with ``predict_proba``: minus the predictive entropy
    (:func:`probability_novelty`)."""

    #: the score :meth:`score_samples` returns (every classifier says which, by this name)
    novelty_score = "entropy"

    def score_samples(self, X: Any) -> np.ndarray:
        """``n`` novelty scores of the documents ``X``: minus the predictive entropy (higher means more
        typical of the training classes; :mod:`lvgp.base.novelty`)."""
        return probability_novelty(self.predict_proba(X), "entropy")  # type: ignore[attr-defined]
