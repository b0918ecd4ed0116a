r"""A GP classifier's novelty score chosen by its labelled texts alone (issue 57).

No out-of-scope text is at hand when a detector is built, but the labelled texts hold classes: hold
some of them out, fit on the rest, and score the held-out classes' texts (out of scope) against the kept
texts' leave-one-out scores (in scope, not fitted: Rasmussen & Williams, eq. 5.12, at no refit). Over a
few such draws, the candidate score with the larger mean AUROC is the one to use
(:func:`choose_novelty_score`). The issue allows a score "selected on in-scope dev data only"; this is
that selection, with known classes standing in for unknown ones.

    from lvgp.models.gpc.score_selection import choose_novelty_score

    choice = choose_novelty_score(LDKGPClassifier(...), texts, labels, random_state=seed)
    clf = LDKGPClassifier(..., novelty_score=choice.score).fit(texts, labels)

Each draw refits the classifier on the kept classes' texts: ``n_draws`` fits of about
``1 - held_out_fraction`` of the texts.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..._random import numpy_generator
from ...base.novelty import LEAVE_ONE_OUT_SCORES, leave_one_out_novelty, open_set_metrics
from ...warnings import EmptyDocumentsWarning, LVGPWarning, UnseenWordsWarning, warn

#: the candidates :func:`choose_novelty_score` compares by default: the energy (the classifier's default) and
#: the energy with the predicted class's variance ratio
DEFAULT_CANDIDATES = ("energy", "energy-class-variance")


class NoveltyScoreChoice(NamedTuple):
    """What :func:`choose_novelty_score` found."""

    #: the chosen score, a value of ``LDKGPClassifier(novelty_score=...)``
    score: str
    #: each candidate's mean AUROC over the draws: held-out classes' texts against the kept texts
    aurocs: dict[str, float]
    #: the classes held out in each draw
    held_out: list[np.ndarray]


def choose_novelty_score(
    estimator: Any,
    X: Sequence[Any],
    y: Any,
    candidates: Sequence[str] = DEFAULT_CANDIDATES,
    *,
    n_draws: int = 4,
    held_out_fraction: float = 0.25,
    random_state: int | np.random.Generator | None = None,
) -> NoveltyScoreChoice:
    r"""Choose among ``candidates`` the novelty score that best tells held-out known classes from the rest.

    In each of ``n_draws`` draws, ``round(held_out_fraction * C)`` of the ``C`` classes of ``y`` (at least
    one, at most ``C - 2``) are held out and a clone of ``estimator`` is fitted on the other classes' texts.
    Each candidate scores the held-out texts (out of scope; ``novelty_scores``: one latent pass for all the
    candidates) and the kept texts by their leave-one-out predictions
    (:func:`~lvgp.base.novelty.leave_one_out_novelty`: in scope, on the same scale); its AUROC (out of scope the
    positive class) is averaged over the draws. The largest mean wins, a tie going to the earlier candidate.

    The held-out classes' words are often missing from a draw's vocabulary, and some of their texts may have
    no known word at all: that is what a new class looks like, so scoring them raises no
    :class:`~lvgp.warnings.UnseenWordsWarning` or :class:`~lvgp.warnings.EmptyDocumentsWarning` (the fits'
    and every other warning pass through). Where every draw gives every candidate the same AUROC (for
    example held-out texts that share no word with the kept ones: each score ranks them all as new), the
    draws cannot tell the candidates apart and an :class:`~lvgp.warnings.LVGPWarning` says that the first
    candidate is returned by default.

    Args:
        estimator: an unfitted or fitted :class:`~lvgp.LDKGPClassifier` with the Dirichlet inference (its
            parameters are cloned; it is not refitted).
        X: the labelled texts (or documents the estimator reads), ``n``.
        y: their ``n`` labels, at least 3 classes.
        candidates: values of ``novelty_score`` but ``"max-probability"``
            (:data:`~lvgp.base.novelty.LEAVE_ONE_OUT_SCORES`); the first wins ties.
        n_draws: draws of held-out classes.
        held_out_fraction: the share of the classes held out in a draw.
        random_state: the draws' seed (or a ``numpy.random.Generator``).

    Returns:
        :class:`NoveltyScoreChoice`: the score, each candidate's mean AUROC, the classes held out.

    Raises:
        ValueError: the estimator's inference is not ``"dirichlet"``; a candidate is not a leave-one-out
            score; fewer than 3 classes; ``X`` and ``y`` of different lengths; ``n_draws`` below 1 or
            ``held_out_fraction`` outside (0, 1).
    """
    from sklearn.base import clone

    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must name at least one novelty score")
    bad = [c for c in candidates if c not in LEAVE_ONE_OUT_SCORES]
    if bad:
        raise ValueError(f"candidates must be among {LEAVE_ONE_OUT_SCORES}; got {bad}")
    if getattr(estimator, "inference", None) != "dirichlet":
        raise ValueError(
            "choose_novelty_score needs an LDKGPClassifier with inference='dirichlet' (the kept texts' "
            f"leave-one-out scores); got {type(estimator).__name__} with inference={getattr(estimator, 'inference', None)!r}"
        )
    if not (isinstance(n_draws, (int, np.integer)) and n_draws >= 1):
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}")
    if not 0 < float(held_out_fraction) < 1:
        raise ValueError(f"held_out_fraction must be in (0, 1); got {held_out_fraction!r}")
    y = np.asarray(y)
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} texts and y {len(y)} labels; they must be equal")
    classes = np.unique(y)
    if len(classes) < 3:
        raise ValueError(
            f"y has {len(classes)} classes; holding some out needs at least 3 (two to fit on, one held out)"
        )
    n_held = min(max(1, round(float(held_out_fraction) * len(classes))), len(classes) - 2)
    rng = numpy_generator(random_state)  # a Generator as it is
    aurocs: dict[str, list[float]] = {c: [] for c in candidates}
    held_out = []
    for _ in range(int(n_draws)):
        hold = np.sort(rng.choice(classes, n_held, replace=False))
        out = np.isin(y, hold)
        kept_rows, out_rows = np.flatnonzero(~out), np.flatnonzero(out)
        model = clone(estimator).fit([X[int(i)] for i in kept_rows], y[kept_rows])
        reference = model.novelty_reference()
        outside_texts = [X[int(i)] for i in out_rows]
        mask = np.r_[np.zeros(len(kept_rows), bool), np.ones(len(out_rows), bool)]
        with warnings.catch_warnings():  # the held-out classes' words: unseen by design
            warnings.simplefilter("ignore", UnseenWordsWarning)
            warnings.simplefilter("ignore", EmptyDocumentsWarning)
            outside = model.novelty_scores(outside_texts, candidates)  # every candidate from one latent pass
        for kind in candidates:
            inside = leave_one_out_novelty(reference, kind, len(model.classes_))
            aurocs[kind].append(open_set_metrics(np.concatenate([inside, outside[kind]]), mask)["oos_auroc"])
        held_out.append(hold)
    means = {kind: float(np.mean(values)) for kind, values in aurocs.items()}
    if len(candidates) > 1 and all(len(set(draw)) == 1 for draw in zip(*aurocs.values())):
        warn(
            f"choose_novelty_score: every candidate scored the same AUROC in each of the {int(n_draws)} draws "
            f"({', '.join(f'{a:.3f}' for a in aurocs[candidates[0]])}), so the draws cannot tell them apart; "
            f"{candidates[0]!r}, the first candidate, is returned by default. Held-out texts that share no word "
            "with the kept ones look new to every score: more texts, or words shared between classes, make "
            "the draws informative",
            LVGPWarning,
            stacklevel=2,
        )
    best = max(means.values())
    return NoveltyScoreChoice(next(k for k in candidates if means[k] == best), means, held_out)
