r"""The open-set GP's calibration on dev documents, and where its ECE with few labelled texts comes from (issue 57).

The open-set study's draws (unknown classes, N labelled texts a known class) on a corpus's training part alone, as
``open_set_dev.py`` writes it, each text cut to its first ``--first-words`` words (``0``: whole texts); scored on
every in-scope document of the training part's unlabelled rest. The study's GP (``gpc-bow-encoder-rbf``) is
tempered by the :math:`T` whose tempered leave-one-out predictions of the labelled texts have the least log loss
(``LDKGPClassifier(calibration="temperature")``). Each row, draw by draw:

- ``gp``: the study's GP as fitted;
- ``gp-loo-as-new``: its fit, the temperature refitted on leave-one-out predictions made as a new text's would be:
  a new text's words that no labelled text has are dropped before the tf-idf cosine (the library's policy), while a
  labelled text keeps in its norm the words of no other labelled text; here each labelled text, left out, is
  predicted by the GP of the other labelled texts (the fit's hyper-parameters) with those words dropped
  (:func:`loo_as_new_latents`: one inverse and one matrix product a class);
- ``gp-loo-as-new-short`` (rule 40): ``gp-loo-as-new`` where the labelled texts' median length is below
  :data:`~lvgp.models.gpc.encoder_weight.LONG_TEXT_WORDS` words (:func:`short_texts`), ``gp`` elsewhere;
- ``gp-loo-midpoint``: its fit, the geometric mean of ``gp``'s temperature and ``gp-loo-as-new``'s (each biased one
  way in some corpora: ``benchmarks/README.md``, "Rule 40");
- ``gp-loo-balanced`` and ``gp-loo-balanced-as-new``: its fit, the temperature refitted on leave-one-out
  predictions of one text of every class left out at once (:func:`loo_as_new_latents` with ``balanced=True``), so
  that a left-out text's class keeps as many texts as the others (a text left out alone leaves its class one
  short, a tenth of its texts at 10 a class), its words kept or made as a new text's;
- ``gp-loo-balanced-as-new-short``: ``gp-loo-balanced-as-new`` where the labelled texts are short (rule 40's gate,
  :func:`short_texts`), ``gp`` elsewhere (no rule was written for it: ``benchmarks/README.md``, "The second
  effect");
- ``gp-match`` and ``gp-match-as-new``: its fit, the temperature at which the tempered leave-one-out predictions'
  mean top probability equals their accuracy (:func:`confidence_matching_temperature`: the ECE's own criterion, in
  place of the log loss's), of ``gp``'s and of ``gp-loo-as-new``'s leave-one-out predictions;
- ``gp-min-df-2``: the study's GP with its word part's vocabulary cut to words of at least two labelled texts
  (its own vocabulary with ``min_df=2``: :func:`min_df_2_vocabulary`): the same consistency in the kernel itself;
- ``gp-hindsight`` and ``gp-hindsight-ece``: its fit, the temperature chosen *on the scored documents themselves*
  (hindsight, never a method: what a temperature could do at best), the one of their least log loss and the one of
  their least ECE (:func:`hindsight_ece_temperature`): how much of the ECE is the temperature's estimate from the
  labelled texts and how much a one-parameter tempering cannot remove;
- ``gp-temperature-posterior``: its fit, the probabilities averaged over the temperature's posterior in place of
  tempered at its mode (:func:`temperature_posterior`: the leave-one-out predictions' likelihood times the
  classifier's log-normal prior on :math:`T`, on a grid): with 60-150 labelled texts the mode moves far between
  draws;
- ``gp-cv-temperature``: its fit, the temperature fitted (the classifier's criterion: least log loss, its prior) to
  out-of-fold predictions in place of the closed-form leave-one-out ones: the labelled texts in 5 stratified folds,
  each fold predicted by the GP refitted, hyper-parameters and all, on the other four (:func:`out_of_fold_log_proba`;
  scikit-learn's ``CalibratedClassifierCV(ensemble=False)`` protocol); the leave-one-out predictions use the
  hyper-parameters of a fit that saw the left-out text;
- ``gp-per-class``: the study GP with an output scale and an additional noise a class
  (``class_hyperparameters="per-class"``, the classifier's default; every labelled text in the evidence, which
  the per-class fit needs) in place of the study's one for all classes:
  whether a corpus's classes beside another corpus's calibrate as they do alone when their hyper-parameters are
  their own (``benchmarks/README.md``, "Where `20ng+r52`'s temperature falls short");
- ``gp-lengthscale-1``: the study GP with its encoder RBF's length-scale held at :data:`HELD_LENGTHSCALE` (on unit
  vectors :math:`\exp(\cos - 1)`) in place of the evidence's, its part's weight still fitted: whether the
  shared length-scale the evidence fits is what parts a corpus's leave-one-out predictions from its new texts'
  (``benchmarks/README.md``, "Rule 41");
- ``logreg``: logistic regression on ``[tf-idf | encoder]`` (``tfidf-encoder-logreg``), for scale.
With ``gp`` and another row, a second table pairs each row's draws with ``gp``'s: the differences of the ECE with
classes alike, the accuracy and the AUROC, and the draws where the row is ahead (:func:`paired_table`).

With ``--by-corpus`` (for ``20ng+r52``, whose labels are prefixed by their corpus: ``20ng:...``, ``r52:...``),
each draw's study GP also gets the temperatures fitted (the classifier's criterion) on each corpus's part alone --
its labelled texts' leave-one-out predictions, plain and as new texts', and its scored texts in hindsight -- with
the two parts' accuracies and the shares of labelled and scored texts each part holds (:func:`corpus_breakdown`):
whether the leave-one-out temperature's shortfall there comes from mixing two corpora under one temperature, or
holds within each.

Prints each draw's temperature, the leave-one-out predictions' accuracy and mean top probability at it, the scored
documents' accuracy, mean top probability, ECE, and the ECE with every known class weighted alike (each document
weighted by one over its class's count: a label-shift check where the corpus's classes are uneven), then the rows'
means per corpus and size; and each row's AUROC of out-of-scope dev documents by its own novelty score (the GP's
energy; logistic regression's entropy). ``benchmarks/README.md``, "Balanced short texts" and "What a temperature
could do at best", reads it.

    python benchmarks/open_set_calibration_dev.py                                  # r52 and 20ng cut to 12 words, seed 66
    python benchmarks/open_set_calibration_dev.py --datasets r8,20ng --first-words 0 \
        --rows gp,gp-loo-as-new,gp-match,gp-match-as-new,logreg
    python benchmarks/open_set_calibration_dev.py --rows gp,gp-hindsight,gp-hindsight-ece,gp-temperature-posterior
    python benchmarks/open_set_calibration_dev.py --datasets 20ng+r52 --per-class 10 --rows gp --by-corpus
    python benchmarks/open_set_calibration_dev.py --quick                          # a toy corpus, a tiny random encoder
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from open_set_dev import (
    dev_study,
    draw_arguments,
    draw_runs,
    draw_seeds,
    scratch_folder,
)  # (the sibling script: benchmarks/ is on the path)

from lvgp.experiments.open_set import FIT_ENCODER_WEIGHT, _bag_of_words_beside_encoder  # the study GP's kernel
from lvgp.models.gpc.inference import _tempered_log_proba, _tempered_proba  # how the classifier tempers

#: the rows that read the study GP's one fit
STUDY_FIT_ROWS = (
    "gp",
    "gp-loo-as-new",
    "gp-loo-as-new-short",
    "gp-loo-midpoint",
    "gp-loo-balanced",
    "gp-loo-balanced-as-new",
    "gp-loo-balanced-as-new-short",
    "gp-match",
    "gp-match-as-new",
    "gp-hindsight",
    "gp-hindsight-ece",
    "gp-temperature-posterior",
    "gp-cv-temperature",
)
ROWS = (*STUDY_FIT_ROWS, "gp-min-df-2", "gp-per-class", "gp-lengthscale-1", "logreg")
#: the rows that read the leave-one-out predictions made as new texts' (:func:`loo_as_new_log_proba`)
AS_NEW_ROWS = ("gp-loo-as-new", "gp-match-as-new", "gp-loo-as-new-short", "gp-loo-midpoint")
#: the rows that read leave-one-out predictions of one text a class left out at once (``balanced=True``)
BALANCED_ROWS = ("gp-loo-balanced", "gp-loo-balanced-as-new", "gp-loo-balanced-as-new-short")
GP = "gpc-bow-encoder-rbf"
#: ``gp-lengthscale-1``'s length-scale of the encoder RBF, held
HELD_LENGTHSCALE = 1.0
BASELINE = "tfidf-encoder-logreg"
#: the grid of :math:`\log T` of the hindsight and posterior rows: 241 even steps within the classifier's bounds
#: ``[e^-3, e^3]`` on the temperature
LOG_TEMPERATURE_GRID = np.linspace(-3.0, 3.0, 241)


def balanced_folds(codes) -> np.ndarray:
    """``n`` fold numbers of training texts of class codes ``codes``: the ``k``-th text of each class (in training
    order) in fold ``k``, so that a fold holds one text of every class that has ``k + 1`` texts or more."""
    codes = np.asarray(codes)
    folds = np.empty(len(codes), dtype=np.int64)
    for code in np.unique(codes):
        where = np.flatnonzero(codes == code)
        folds[where] = np.arange(len(where))
    return folds


def loo_as_new_latents(
    gp, feature_dim: int, drop_unshared: bool = True, brute_force: bool = False, balanced: bool = False
):
    r"""``n x C`` latent means and variances: the fitted Dirichlet GP classifier ``gp``'s leave-one-out predictions
    of its training texts, each text predicted by the GP of the other ``n - 1`` texts with the fit's
    hyper-parameters, for each class :math:`c` (R&W eqs. 2.25-2.26 on the Dirichlet transform's targets and
    noises): mean :math:`m_c + k_c(x_i', X_{-i}) A_{c,-i}^{-1} (\tilde y_{c,-i} - m_c)`, variance
    :math:`k_c(x_i', x_i') - k_c(x_i', X_{-i}) A_{c,-i}^{-1} k_c(X_{-i}, x_i')`, :math:`A_c = K_c + \Sigma_c`.
    ``x_i'``: text ``i`` with its word ids that no other training text has dropped (``drop_unshared``; as a new
    text's unseen words are), or ``x_i`` itself (``drop_unshared=False``: the closed-form
    :meth:`~lvgp.LDKGPClassifier.leave_one_out_latents`, R&W eq. 5.12). ``feature_dim``: the width of the
    encoder's features before the word ids in the packed training inputs. The idf stays the fit's (all ``n``).

    From one inverse :math:`G = A_c^{-1}` a class: with :math:`A_{-i}^{-1} = G_{-i,-i} - g g^\top / \gamma`
    (:math:`g = G_{-i,i}`, :math:`\gamma = G_{ii}`) and :math:`\alpha = G (\tilde y - m)`, the mean is
    :math:`m + k'^\top \alpha_{-i} - (k'^\top g) \alpha_i / \gamma` and the variance
    :math:`k(x_i', x_i') - k'^\top G_{-i,-i} k' + (k'^\top g)^2 / \gamma` (``k'``: the cross-covariances
    of ``x_i'``, one matrix product a class for all ``i``). ``brute_force``: one Cholesky factorization of
    :math:`A_{c,-i}` a text instead (the reference the tests compare with).

    ``balanced``: one text of every class left out at once (:func:`balanced_folds`), so that the left-out text's
    class is not one text short of the others (a text left out alone leaves its class ``n_c - 1`` texts against the
    others' ``n_c``: at 10 texts a class a tenth of its support, which a new text's prediction does not lose).
    Each fold :math:`S` is predicted by the GP of the other folds' texts :math:`R`, its texts' words of no text in
    :math:`R` dropped (``drop_unshared``): with :math:`K_{RR}^{-1} = G_{RR} - G_{RS} G_{SS}^{-1} G_{SR}`, the means
    :math:`m_S + k'^\top\alpha - P_{SS} G_{SS}^{-1}\alpha_S` and variances :math:`k(x', x') - (P \circ k')\mathbf 1
    + \mathrm{diag}(P_{SS} G_{SS}^{-1} P_{SS}^\top)`, :math:`P = k' G` (``k'``: the cross-covariances of the
    fold's texts as scored, zero at the fold's own columns): one matrix product a class and a solve of the fold's
    size a fold and class."""
    import torch

    from lvgp.bow.padded import PAD
    from lvgp.models.gpc.inference import DirichletInference

    model, likelihood = gp.model_, gp.likelihood_
    inputs = model.train_inputs[0]
    n = inputs.shape[0]
    words = inputs[:, feature_dim:].long()
    folds = balanced_folds(gp._training_codes()) if balanced else np.arange(n)
    texts_with: dict[int, int] = {}  # word id -> number of training texts that have it
    in_fold: dict[tuple[int, int], int] = {}  # (fold, word id) -> number of the fold's texts that have it
    for row, fold in zip(words, folds):
        for w in set(row[row != PAD].tolist()):
            texts_with[w] = texts_with.get(w, 0) + 1
            in_fold[int(fold), w] = in_fold.get((int(fold), w), 0) + 1
    scored = inputs.clone()
    if drop_unshared:
        for i in range(n):
            fold = int(folds[i])
            kept = [w for w in words[i].tolist() if w != PAD and texts_with[w] > in_fold[fold, w]]
            new = torch.full((words.shape[1],), PAD, dtype=inputs.dtype)
            new[: len(kept)] = torch.tensor(kept, dtype=inputs.dtype)
            scored[i, feature_dim:] = new
    model.train()
    likelihood.train()
    try:
        with torch.no_grad():
            # G = A_c^-1 and alpha = G (y~ - m), the classifier's own (one factorization a class)
            prior, noise, inverse, alpha = DirichletInference.per_class_precision(model, likelihood)
            covariance, prior_mean = prior.covariance_matrix, prior.mean  # C x n x n, C x n
            classes = covariance.shape[0]
            cross = model.covar_module(scored, inputs).to_dense().expand(classes, n, n)  # row i: text i as scored
            own = model.covar_module(scored, diag=True).expand(classes, n)
            residual = likelihood.transformed_targets - prior_mean
            if brute_force:
                mean = torch.empty(classes, n, dtype=covariance.dtype)  # (padded inputs hold integer ids)
                var = torch.empty(classes, n, dtype=covariance.dtype)
                for fold in np.unique(folds):
                    held = torch.as_tensor(np.flatnonzero(folds == fold))
                    rest = torch.as_tensor(np.flatnonzero(folds != fold))
                    factor = torch.linalg.cholesky(covariance[:, rest][:, :, rest] + torch.diag_embed(noise[:, rest]))
                    k = cross[:, held][:, :, rest]  # C x |S| x |R|
                    solved = torch.cholesky_solve(k.mT, factor)  # C x |R| x |S|
                    mean[:, held] = prior_mean[:, held] + (solved * residual[:, rest].unsqueeze(-1)).sum(-2)
                    var[:, held] = own[:, held] - (solved * k.mT).sum(-2)
            elif balanced:
                folds_t = torch.as_tensor(folds)
                off = cross * (folds_t[:, None] != folds_t[None, :]).to(cross.dtype)  # k', the fold's columns 0
                P = off @ inverse  # k' G
                mean = prior_mean + (off @ alpha.unsqueeze(-1)).squeeze(-1)
                var = own - (P * off).sum(-1)
                for fold in np.unique(folds):
                    held = torch.as_tensor(np.flatnonzero(folds == fold))
                    G_ss = inverse[:, held][:, :, held]
                    P_ss = P[:, held][:, :, held]
                    mean[:, held] -= (P_ss @ torch.linalg.solve(G_ss, alpha[:, held].unsqueeze(-1))).squeeze(-1)
                    var[:, held] += (P_ss * torch.linalg.solve(G_ss, P_ss.mT).mT).sum(-1)
            else:
                gamma = inverse.diagonal(dim1=-2, dim2=-1)
                off = cross * (1.0 - torch.eye(n, dtype=cross.dtype))  # k' of each text i, its own entry 0
                k_g = (off * inverse.mT).sum(-1)  # k'^T g
                mean = prior_mean + (off @ alpha.unsqueeze(-1)).squeeze(-1) - k_g * alpha / gamma
                var = own - ((off @ inverse) * off).sum(-1) + k_g**2 / gamma
    finally:
        model.eval()
        likelihood.eval()
    return mean.mT, var.mT.clamp_min(0.0)


def short_texts(texts) -> bool:
    """Rule 40's gate: the labelled texts' :func:`~lvgp.models.gpc.encoder_weight.median_words` (as
    ``LDKGPClassifier(encoder_weight="loo")`` measures it) below
    :data:`~lvgp.models.gpc.encoder_weight.LONG_TEXT_WORDS`."""
    from lvgp.models.gpc.encoder_weight import LONG_TEXT_WORDS, median_words

    return median_words(texts) < LONG_TEXT_WORDS


def loo_as_new_log_proba(
    gp, feature_dim: int, drop_unshared: bool = True, brute_force: bool = False, balanced: bool = False
) -> np.ndarray:
    """``n x C``: the log expected softmax (untempered, the classifier's draws) of :func:`loo_as_new_latents`."""
    import torch

    from lvgp.models.gpc.models import expected_softmax

    mean, var = loo_as_new_latents(gp, feature_dim, drop_unshared, brute_force, balanced)
    proba = expected_softmax(mean, var, gp.predict_samples, gp._class_seeds())
    return torch.log(proba.clamp_min(1e-300)).cpu().numpy()


def calibration(proba: np.ndarray, classes: np.ndarray, labels: np.ndarray, weights=None) -> dict:
    """Accuracy, mean top probability and ECE (the library's :func:`~lvgp.base.metrics.reliability_bins`) of
    ``proba`` (``n x C`` over ``classes``) against ``labels``, each document weighted by ``weights`` (default:
    alike)."""
    from lvgp.base.metrics import expected_calibration_error, reliability_bins

    weights = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
    correct = np.asarray(classes)[proba.argmax(axis=1)] == np.asarray(labels)
    return {
        "accuracy": float(np.average(correct, weights=weights)),
        "confidence": float(np.average(proba.max(axis=1), weights=weights)),
        "ece": expected_calibration_error(reliability_bins(proba, classes, labels, sample_weight=weights)),
    }


def confidence_matching_temperature(log_proba: np.ndarray, truth: np.ndarray) -> float:
    """The temperature in ``[e^-3, e^3]`` at which the tempered ``n x C`` probabilities' mean top probability equals
    their accuracy against the codes ``truth`` (bisection on ``log T``: the mean top probability falls as ``T`` rises;
    the accuracy does not move with ``T``); a bound where no temperature within them reaches it."""
    accuracy = float(np.mean(log_proba.argmax(axis=1) == truth))
    low, high = -3.0, 3.0
    for _ in range(60):
        middle = (low + high) / 2
        if np.exp(_tempered_log_proba(log_proba, float(np.exp(middle)))).max(axis=1).mean() > accuracy:
            low = middle
        else:
            high = middle
    return float(np.exp((low + high) / 2))


def hindsight_ece_temperature(proba: np.ndarray, classes: np.ndarray, labels: np.ndarray) -> float:
    """The temperature of :data:`LOG_TEMPERATURE_GRID` whose tempered ``proba`` (``n x C`` over ``classes``) have the
    least ECE against ``labels`` (the ECE is not smooth in ``T``: a grid, not a minimizer)."""
    grid = np.exp(LOG_TEMPERATURE_GRID)
    eces = [calibration(_tempered_proba(proba, float(t)), classes, labels)["ece"] for t in grid]
    return float(grid[int(np.argmin(eces))])


def temperature_posterior(log_loo: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The temperatures of :data:`LOG_TEMPERATURE_GRID` and their posterior weights: the tempered
    leave-one-out predictions' likelihood of the labels ``truth``, :math:`\prod_i p_{i,y_i}^{(T)}`, times the
    classifier's prior :math:`\log T \sim N(0, 1)` (the same objective whose mode the classifier's temperature
    is, times ``n``), normalized."""
    from lvgp.models.gpc.inference import TEMPERATURE_PRIOR_SD

    log_post = np.array(
        [
            _tempered_log_proba(log_loo, float(np.exp(t)))[np.arange(len(truth)), truth].sum()
            - t**2 / (2 * TEMPERATURE_PRIOR_SD**2)
            for t in LOG_TEMPERATURE_GRID
        ]
    )
    weights = np.exp(log_post - log_post.max())
    return np.exp(LOG_TEMPERATURE_GRID), weights / weights.sum()


def posterior_tempered(proba: np.ndarray, grid: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``proba`` (``n x C``) tempered at each temperature of ``grid`` and averaged with ``weights`` (those of
    negligible weight, below ``1e-6`` of the whole, skipped)."""
    keep = weights > 1e-6
    return sum(w * _tempered_proba(proba, float(t)) for t, w in zip(grid[keep], weights[keep])) / weights[keep].sum()


def min_df_2_vocabulary(words):
    """The row ``gp-min-df-2``'s word list: a copy of the study GP's own unfitted vocabulary ``words`` (its tokens,
    of two letters or more since rule 27, its stop words and every other setting; copied as the classifier's encoder
    copies it) with words of at least two labelled texts alone."""
    import copy

    vocabulary = copy.deepcopy(words)
    vocabulary.min_df = 2
    return vocabulary


def out_of_fold_log_proba(estimator, texts, labels, folds: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``n x C`` log probabilities (untempered; columns ``estimator``'s fitted ``classes_`` after a fit on all
    ``texts``, here the sorted unique ``labels``) of ``folds``-fold stratified out-of-fold predictions: each fold by
    a clone of the unfitted ``estimator`` fitted on the other folds; and the labels' codes. A text whose class no
    other fold holds cannot be predicted out of fold: its row is left out of both (a class of one labelled text)."""
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold

    classes, truth = np.unique(np.asarray(labels), return_inverse=True)
    log_proba = np.full((len(texts), len(classes)), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # classes of fewer texts than folds
        split = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(truth)), truth))
    for train, held in split:
        fold = clone(estimator).fit([texts[i] for i in train], [labels[i] for i in train])
        proba = untempered_proba(fold, [texts[i] for i in held])
        columns = np.searchsorted(classes, fold.classes_)
        rows = np.full((len(held), len(classes)), 1e-300)
        rows[:, columns] = np.maximum(proba, 1e-300)
        known = np.isin(truth[held], columns)
        log_proba[held[known]] = np.log(rows[known] / rows[known].sum(axis=1, keepdims=True))
    kept = ~np.isnan(log_proba[:, 0])
    return log_proba[kept], truth[kept]


def untempered_proba(gp, texts) -> np.ndarray:
    """``gp``'s predictive probabilities of ``texts`` before its temperature (one latent pass, which every row of
    the fit tempers by its own temperature: :func:`gp_record`)."""
    saved = gp.temperature_
    gp.temperature_ = 1.0
    try:
        return gp.predict_proba(texts)
    finally:
        gp.temperature_ = saved


def gp_record(gp, log_loo: np.ndarray, temperature, raw, labels, weights, auroc: float) -> dict:
    """A GP row's record: its temperature, its leave-one-out predictions' accuracy and mean top probability at it,
    the scored documents' calibration (``raw``: :func:`untempered_proba`, tempered as the classifier tempers), alike
    and class-weighted, and ``auroc`` (its novelty score's). ``temperature``: a float, or a grid and its weights
    (:func:`temperature_posterior`; the record's ``T`` is then their weighted mean)."""
    truth = gp._training_codes()
    if isinstance(temperature, tuple):
        grid, posterior = temperature
        loo = posterior_tempered(np.exp(log_loo), grid, posterior)
        proba = posterior_tempered(raw, grid, posterior)
        temperature = float(np.sum(grid * posterior))
    else:
        loo = np.exp(_tempered_log_proba(log_loo, temperature))
        proba = _tempered_proba(raw, temperature)
    scored = calibration(proba, gp.classes_, labels)
    return {
        "T": temperature,
        "loo_accuracy": float(np.mean(loo.argmax(axis=1) == truth)),
        "loo_confidence": float(np.mean(loo.max(axis=1))),
        **scored,
        "ece_balanced": calibration(proba, gp.classes_, labels, weights)["ece"],
        "auroc": auroc,
    }


def hindsight_temperature(gp, raw: np.ndarray, codes: np.ndarray) -> float:
    """The temperature ``gp``'s criterion (least log loss, its prior) fits to scored texts' untempered probabilities
    ``raw`` (``n x C``) and their class indices ``codes``: chosen in hindsight, what one temperature could do."""
    return gp._fit_temperature((np.log(np.maximum(raw, 1e-300)), codes))


def corpus_breakdown(gp, log_loo: np.ndarray, as_new: np.ndarray, raw: np.ndarray, labels) -> list[dict]:
    """``--by-corpus``: for each corpus of a mixed corpus's classes (the labels' prefix before ``":"``), the
    temperatures the classifier's criterion (least log loss, its prior) fits to that corpus's labelled texts'
    leave-one-out predictions (``log_loo``, and ``as_new``: :func:`loo_as_new_log_proba`) and, in hindsight, to its
    scored texts' untempered probabilities ``raw`` (``n x C``, ``labels`` their classes, every one in scope); those
    predictions' accuracies (the leave-one-out's untempered: a temperature moves no argmax); and the share of the
    labelled and of the scored texts the corpus holds. A label without ``":"`` is a corpus of its own."""
    truth = gp._training_codes()
    codes = np.searchsorted(gp.classes_, labels)
    corpus_of = np.array([str(c).split(":", 1)[0] for c in gp.classes_])
    parts = []
    for corpus in dict.fromkeys(corpus_of.tolist()):
        labelled, scored = corpus_of[truth] == corpus, corpus_of[codes] == corpus
        if not labelled.any() or not scored.any():
            continue
        parts.append(
            {
                "part": corpus,
                "labelled_share": float(labelled.mean()),
                "scored_share": float(scored.mean()),
                "T_loo": gp._fit_temperature((log_loo[labelled], truth[labelled])),
                "T_as_new": gp._fit_temperature((as_new[labelled], truth[labelled])),
                "T_hindsight": hindsight_temperature(gp, raw[scored], codes[scored]),
                "loo_accuracy": float(np.mean(log_loo[labelled].argmax(axis=1) == truth[labelled])),
                "accuracy": float(np.mean(raw[scored].argmax(axis=1) == codes[scored])),
            }
        )
    return parts


def own_fit_record(gp, x, y, texts, labels, weights, every_text, out_of_scope) -> dict:
    """The record (:func:`gp_record`) of a row with a GP fit of its own (``gp`` unfitted, a variant of the study's),
    tempered by its own leave-one-out temperature: fitted on the labelled ``x``, ``y``, scored on the in-scope
    ``texts`` (``labels``, class ``weights``), its AUROC over ``every_text`` (``out_of_scope`` the positives)."""
    gp.fit(x, y)
    log_loo, _ = gp._loo_log_proba()
    auroc = auroc_of(gp, every_text, out_of_scope)
    return gp_record(gp, log_loo, gp.temperature_, untempered_proba(gp, texts), labels, weights, auroc)


def balanced_records(gp, feature_dim: int, texts, rows, log_loo, raw, labels, weights, auroc: float) -> dict:
    """The records of :data:`BALANCED_ROWS` in ``rows`` for the study GP ``gp`` fitted on ``texts``: its fit, the
    temperature refitted (the classifier's criterion) on the leave-one-out predictions of one text a class left out
    at once (:func:`loo_as_new_latents` with ``balanced=True``), the texts' words kept (``gp-loo-balanced``) or made
    as new texts' (``gp-loo-balanced-as-new``); ``gp-loo-balanced-as-new-short``: the latter where the labelled
    texts are short (rule 40's gate, :func:`short_texts`), ``gp``'s own temperature on its leave-one-out
    predictions ``log_loo`` elsewhere. ``raw``, ``labels``, ``weights``, ``auroc``: as :func:`gp_record` reads
    them."""
    truth = gp._training_codes()
    scoring = (raw, labels, weights, auroc)
    found = {}
    if "gp-loo-balanced" in rows:
        loo = loo_as_new_log_proba(gp, feature_dim, drop_unshared=False, balanced=True)
        found["gp-loo-balanced"] = gp_record(gp, loo, gp._fit_temperature((loo, truth)), *scoring)
    short = short_texts(texts)
    if "gp-loo-balanced-as-new" in rows or ("gp-loo-balanced-as-new-short" in rows and short):
        loo = loo_as_new_log_proba(gp, feature_dim, balanced=True)
        as_new = gp_record(gp, loo, gp._fit_temperature((loo, truth)), *scoring)
        if "gp-loo-balanced-as-new" in rows:
            found["gp-loo-balanced-as-new"] = as_new
    if "gp-loo-balanced-as-new-short" in rows:
        record = as_new if short else gp_record(gp, log_loo, gp.temperature_, *scoring)
        found["gp-loo-balanced-as-new-short"] = {**record, "short": short}
    return found


def held_lengthscale_kernel(feature_dim: int):
    """``gp-lengthscale-1``'s kernel factory (``LDKGPClassifier(kernel=...)``): the study GP's composed kernel for
    the encoder's dimension ``feature_dim``, its encoder RBF's length-scale held at :data:`HELD_LENGTHSCALE`, the
    part's weight fitted as the study's (:data:`~lvgp.experiments.open_set.FIT_ENCODER_WEIGHT`)."""
    return _bag_of_words_beside_encoder("rbf", fit_weights=FIT_ENCODER_WEIGHT, lengthscale=HELD_LENGTHSCALE)(
        feature_dim
    )


def auroc_of(model, texts, out_of_scope) -> float:
    """The AUROC of ``model``'s own novelty score (``score_samples``, higher: more typical) at telling the
    out-of-scope ``texts`` (the positives) from the in-scope ones."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(out_of_scope, -np.asarray(model.score_samples(texts))))


def draws(args) -> tuple[list[dict], list[dict]]:
    """One record per (corpus, seed, split, size, row); and, with ``--by-corpus``, one per (corpus, seed, split,
    size, part) (:func:`corpus_breakdown`; else none)."""
    from lvgp.encoders import resolve_encoder

    with scratch_folder(args.out, "open-set-calibration-") as root:
        runs = draw_runs(root, args)
        rows = args.rows.split(",")
        records: list[dict] = []
        breakdown: list[dict] = []  # --by-corpus's parts
        for run in runs:
            corpus, sizes = run[0], run[3]
            for seed in args.seeds:
                study = dev_study(run, [GP, BASELINE], seed, args.quick)
                feature_dim = resolve_encoder(study.encoder, study.device).dim
                for split in range(run[4]):
                    data = study.split(split)
                    inside = ~data.out_of_scope
                    texts = [t for t, keep in zip(data.test_texts, inside) if keep]
                    labels = np.asarray(data.test_labels)[inside]
                    every_text, out_of_scope = list(data.test_texts), np.asarray(data.out_of_scope)
                    _, which, counts = np.unique(labels, return_inverse=True, return_counts=True)
                    weights = 1.0 / counts[which]
                    for n in sizes:
                        x, y = data.training(n)

                        def estimator(method, n=n, split=split, study=study):
                            return study.estimator({"method": method, "split": split, "params": {"per_class": n}})

                        found = {}
                        if set(STUDY_FIT_ROWS) & set(rows):
                            gp = estimator(GP).fit(x, y)
                            log_loo, truth = gp._loo_log_proba()
                            auroc = auroc_of(gp, every_text, out_of_scope)  # (the energy: no temperature in it)
                            raw = untempered_proba(gp, texts)
                            if "gp" in rows:
                                found["gp"] = gp_record(gp, log_loo, gp.temperature_, raw, labels, weights, auroc)
                            if "gp-match" in rows:
                                temperature = confidence_matching_temperature(log_loo, truth)
                                found["gp-match"] = gp_record(gp, log_loo, temperature, raw, labels, weights, auroc)
                            if "gp-hindsight" in rows:
                                codes = np.searchsorted(gp.classes_, labels)
                                assert np.array_equal(gp.classes_[codes], labels)  # every scored text in scope
                                temperature = hindsight_temperature(gp, raw, codes)
                                found["gp-hindsight"] = gp_record(gp, log_loo, temperature, raw, labels, weights, auroc)
                            if "gp-hindsight-ece" in rows:
                                temperature = hindsight_ece_temperature(raw, gp.classes_, labels)
                                found["gp-hindsight-ece"] = gp_record(
                                    gp, log_loo, temperature, raw, labels, weights, auroc
                                )
                            if "gp-temperature-posterior" in rows:
                                found["gp-temperature-posterior"] = gp_record(
                                    gp, log_loo, temperature_posterior(log_loo, truth), raw, labels, weights, auroc
                                )
                            if "gp-cv-temperature" in rows:
                                oof = out_of_fold_log_proba(estimator(GP), list(x), list(y), seed=split)
                                found["gp-cv-temperature"] = gp_record(
                                    gp, log_loo, gp._fit_temperature(oof), raw, labels, weights, auroc
                                )
                            if args.by_corpus or set(AS_NEW_ROWS) & set(rows):
                                as_new = loo_as_new_log_proba(gp, feature_dim)  # once for both
                            if args.by_corpus:
                                for part in corpus_breakdown(gp, log_loo, as_new, raw, labels):
                                    part.update(corpus=corpus, seed=seed, split=split, per_class=n)
                                    print(part_line(part), flush=True)
                                    breakdown.append(part)
                            if set(AS_NEW_ROWS) & set(rows):
                                as_new_t = gp._fit_temperature((as_new, truth))  # the classifier's criterion
                                if "gp-loo-as-new" in rows:
                                    found["gp-loo-as-new"] = gp_record(
                                        gp, as_new, as_new_t, raw, labels, weights, auroc
                                    )
                                if "gp-match-as-new" in rows:
                                    temperature = confidence_matching_temperature(as_new, truth)
                                    found["gp-match-as-new"] = gp_record(
                                        gp, as_new, temperature, raw, labels, weights, auroc
                                    )
                                if "gp-loo-midpoint" in rows:  # the two temperatures' geometric mean
                                    temperature = float(np.sqrt(gp.temperature_ * as_new_t))
                                    found["gp-loo-midpoint"] = gp_record(
                                        gp, log_loo, temperature, raw, labels, weights, auroc
                                    )
                                if "gp-loo-as-new-short" in rows:  # rule 40: as new texts' below the median length
                                    short = short_texts(x)
                                    loo, temperature = (as_new, as_new_t) if short else (log_loo, gp.temperature_)
                                    found["gp-loo-as-new-short"] = {
                                        **gp_record(gp, loo, temperature, raw, labels, weights, auroc),
                                        "short": short,
                                    }
                            if set(BALANCED_ROWS) & set(rows):
                                found.update(
                                    balanced_records(gp, feature_dim, x, rows, log_loo, raw, labels, weights, auroc)
                                )
                        scoring = (texts, labels, weights, every_text, out_of_scope)
                        if "gp-min-df-2" in rows:
                            gp = estimator(GP)
                            gp.set_params(vocabulary=min_df_2_vocabulary(gp.vocabulary))
                            found["gp-min-df-2"] = own_fit_record(gp, x, y, *scoring)
                        if "gp-per-class" in rows:
                            gp = estimator(GP).set_params(
                                class_hyperparameters="per-class", max_evidence_documents=None
                            )
                            found["gp-per-class"] = own_fit_record(gp, x, y, *scoring)
                        if "gp-lengthscale-1" in rows:
                            gp = estimator(GP).set_params(kernel=held_lengthscale_kernel(feature_dim))
                            found["gp-lengthscale-1"] = own_fit_record(gp, x, y, *scoring)
                        if "logreg" in rows:
                            logreg = estimator(BASELINE).fit(x, y)
                            proba = logreg.predict_proba(texts)
                            found["logreg"] = {
                                **calibration(proba, logreg.classes_, labels),
                                "ece_balanced": calibration(proba, logreg.classes_, labels, weights)["ece"],
                                "auroc": auroc_of(logreg, every_text, out_of_scope),
                            }
                        for row in rows:
                            record = dict(corpus=corpus, seed=seed, split=split, per_class=n, row=row, **found[row])
                            records.append(record)
                            print(draw_line(record), flush=True)
        return records, breakdown


def _number(record: dict, key: str) -> str:
    return f"{record[key]:.3f}" if key in record else "–"


def draw_line(record: dict) -> str:
    """One draw's row of the printed table."""
    keys = ("T", "loo_accuracy", "loo_confidence", "accuracy", "confidence", "ece", "ece_balanced", "auroc")
    head = f"| {record['corpus']} | {record['per_class']} | {record['seed']}/{record['split']} | {record['row']} | "
    return head + " | ".join(_number(record, k) for k in keys) + " |"


#: the columns of ``--by-corpus``'s lines and table
PART_KEYS = ("labelled_share", "scored_share", "T_loo", "T_as_new", "T_hindsight", "loo_accuracy", "accuracy")


def part_line(part: dict) -> str:
    """One draw's line of ``--by-corpus``: a corpus's part of a mixed corpus (:func:`corpus_breakdown`)."""
    head = f"| {part['corpus']} | {part['per_class']} | {part['seed']}/{part['split']} | {part['part']} | "
    return head + " | ".join(f"{part[k]:.3f}" for k in PART_KEYS) + " |"


def part_table(parts: list[dict]) -> str:
    """``--by-corpus``'s parts' means over the draws, per corpus, size and part."""
    lines = [
        "| corpus | labelled a class | part | draws | labelled share | scored share | T, leave-one-out | T, as new "
        "texts' | T, hindsight | leave-one-out accuracy | accuracy |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in dict.fromkeys((p["corpus"], p["per_class"], p["part"]) for p in parts):
        cell = [p for p in parts if (p["corpus"], p["per_class"], p["part"]) == key]
        means = " | ".join(f"{np.mean([p[k] for p in cell]):.3f}" for k in PART_KEYS)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(cell)} | {means} |")
    return "\n".join(lines)


def table(records: list[dict]) -> str:
    """The rows' means over the draws, per corpus and size: accuracy, mean top probability minus accuracy (above 0:
    over-confident), ECE (mean, and the draws' range), class-weighted ECE, temperature, AUROC."""
    lines = [
        "| corpus | labelled a class | row | draws | accuracy | confidence - accuracy | ECE (range) | ECE, classes "
        "alike | T | AUROC |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        for n in sorted({r["per_class"] for r in records if r["corpus"] == corpus}):
            for row in dict.fromkeys(r["row"] for r in records):
                cell = [r for r in records if (r["corpus"], r["per_class"], r["row"]) == (corpus, n, row)]
                if not cell:
                    continue
                ece = [r["ece"] for r in cell]
                gap = np.mean([r["confidence"] - r["accuracy"] for r in cell])
                temperature = f"{np.mean([r['T'] for r in cell]):.3f}" if "T" in cell[0] else "–"
                lines.append(
                    f"| {corpus} | {n} | {row} | {len(cell)} | {np.mean([r['accuracy'] for r in cell]):.4f} | "
                    f"{gap:+.4f} | {np.mean(ece):.4f} ({min(ece):.3f}-{max(ece):.3f}) | "
                    f"{np.mean([r['ece_balanced'] for r in cell]):.4f} | {temperature} | "
                    f"{np.mean([r['auroc'] for r in cell]):.4f} |"
                )
    return "\n".join(lines)


#: :func:`paired_table`'s differences: the key, its heading, and whether lower is better
PAIRED_KEYS = (("ece_balanced", "ECE, classes alike", True), ("accuracy", "accuracy", False), ("auroc", "AUROC", False))


def paired_table(records: list[dict], reference: str = "gp") -> str:
    """Each row's draws paired with ``reference``'s (the same corpus, size, seed and split), per corpus and size:
    the mean difference (row minus ``reference``) of each of :data:`PAIRED_KEYS`, and the draws where the row is
    ahead (strictly: a lower ECE, a higher accuracy or AUROC); and the differences' mean over the cells."""

    def key(r: dict) -> tuple:
        return r["corpus"], r["per_class"], r["seed"], r["split"]

    base = {key(r): r for r in records if r["row"] == reference}
    heads = " | ".join(f"{head}: minus {reference} (ahead)" for _, head, _ in PAIRED_KEYS)
    lines = [f"| corpus | labelled a class | row | draws | {heads} |", "|---|---|---|---|" + "---|" * len(PAIRED_KEYS)]
    for row in dict.fromkeys(r["row"] for r in records if r["row"] != reference):
        cells: dict[tuple, list[tuple[dict, dict]]] = {}
        for r in records:
            if r["row"] == row and key(r) in base:
                cells.setdefault((r["corpus"], r["per_class"]), []).append((r, base[key(r)]))
        means = {k: [] for k, _, _ in PAIRED_KEYS}
        for (corpus, n), pairs in cells.items():
            parts = []
            for k, _, lower in PAIRED_KEYS:
                diff = np.array([r[k] - b[k] for r, b in pairs])
                ahead = int(np.sum(diff < 0 if lower else diff > 0))
                means[k].append(float(diff.mean()))
                parts.append(f"{diff.mean():+.4f} ({ahead})")
            lines.append(f"| {corpus} | {n} | {row} | {len(pairs)} | {' | '.join(parts)} |")
        if cells:
            average = " | ".join(f"{np.mean(means[k]):+.4f}" for k, _, _ in PAIRED_KEYS)
            lines.append(f"| mean of {len(cells)} cells | | {row} | | {average} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(parser, "r52,20ng", "66", first_words=12)
    parser.add_argument("--rows", default=",".join(ROWS), help=f"among {', '.join(ROWS)}")
    parser.add_argument(
        "--by-corpus",
        action="store_true",
        help="the study GP's temperatures on each corpus's part of a mixed corpus (labels 'corpus:class'; with gp)",
    )
    args = parser.parse_args()
    draw_seeds(args)
    rows = args.rows.split(",")
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        parser.error(f"--rows: unknown {', '.join(unknown)}; choose among {', '.join(ROWS)}")
    if args.by_corpus and not set(STUDY_FIT_ROWS) & set(rows):
        parser.error("--by-corpus reads the study GP's fit: add a row that fits it (gp)")

    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    print(
        "| corpus | a class | seed/split | row | T | leave-one-out accuracy | its mean top probability | accuracy | "
        "mean top probability | ECE | ECE, classes alike | AUROC |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    records, breakdown = draws(args)
    print("\nThe rows' means over the draws (in-scope dev documents; AUROC: the out-of-scope ones against them)\n")
    print(table(records))
    if "gp" in rows and set(rows) - {"gp"}:
        print("\nEach row's draws paired with the study GP's (row minus gp; draws ahead)\n")
        print(paired_table(records))
    if args.by_corpus:
        print("\nThe study GP's temperatures on each corpus's part (--by-corpus), means over the draws\n")
        print(part_table(breakdown))


if __name__ == "__main__":
    main()
