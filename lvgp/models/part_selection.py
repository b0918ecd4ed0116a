"""``part_selection``: the estimators' fit over the sub-compositions of their kernel's top sum, keeping
the one of the highest evidence with BIC's Occam factor (``"evidence"``) or of the highest leave-one-out
log predictive probability (``"loo"``; :mod:`lvgp.kernels.composition`)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
from gpytorch.kernels import Kernel

from .._random import torch_generator
from ..kernels.composition import count_hyperparameters, occam_score, part_names, part_subsets, restrict_to_parts
from ..kernels.spec import variational_word_vectors, word_vector_modules
from ..kernels.word_vectors import VariationalWordVectors
from ..warnings import warn

__all__ = ["PartSelectionMixin", "check_evidence_comparable", "plain_part_scores"]

T = TypeVar("T")


def check_evidence_comparable(kernel: Kernel) -> None:
    """Refuse a kernel whose word vectors are fitted as points (MAP): its fitted objective is a log
    posterior density of ``V x q`` coordinates, not an evidence, and no Occam factor of a few
    hyper-parameters makes it comparable with a sub-composition's. Variational word vectors (their
    ELBO integrates them out) and fixed ones (pretrained, not fitted) are comparable."""
    fitted = [
        m
        for m in word_vector_modules(kernel)
        if not isinstance(m, VariationalWordVectors) and any(p.requires_grad for p in m.parameters())
    ]
    if fitted:
        raise ValueError(
            "part_selection='evidence' compares the sub-compositions' evidence, and the kernel fits its word "
            "vectors as points (MAP: a log posterior density, not an evidence). Use variational word vectors "
            "(LDKSpec(variational=True), GPLVSMRegressor), fixed ones (LDKSpec(learn_embeddings=False) with "
            "word_embeddings=...), a kernel without latent word vectors, or part_selection=None"
        )


def plain_part_scores(scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``part_scores_`` with each entry's ``parts`` a list (for a JSON record or a saved file)."""
    return [dict(score, parts=list(score["parts"])) for score in scores]


class PartSelectionMixin:
    """The loop of ``part_selection`` (:meth:`_fit_parts`). The estimator's kernel builder applies
    :meth:`_restricted` to the kernel it builds, and :meth:`_fitted_log_evidence` gives the objective a fit
    reached. Fitted attributes: ``selected_parts_`` (the names of the kept parts,
    :func:`~lvgp.kernels.composition.part_names`; every part without selection) and, with selection,
    ``part_scores_``: one dict per sub-composition (``parts``, ``score``, and ``log_evidence`` and
    ``n_hyperparameters``, or ``loo_log_predictive`` and, against the full sum, ``loo_gain``,
    ``loo_gain_se`` and ``eligible``), in the order fitted."""

    part_selection: str | None = None
    #: the positions of the top sum's parts the kernel builder keeps (``None``: all)
    _parts: tuple[int, ...] | None = None

    def _restricted(self, kernel: Kernel) -> Kernel:
        """``kernel`` (as just built) reduced to :attr:`_parts`, checked for a comparable evidence when
        parts are selected by it."""
        if self.part_selection == "evidence":
            check_evidence_comparable(kernel)
        if self._parts is not None:
            restrict_to_parts(kernel, self._parts)
        return kernel

    def _fitted_log_evidence(self) -> float:
        """The fitted objective: the log evidence (or its approximation or bound) plus the
        hyper-parameters' log priors, at the fitted parameters."""
        raise NotImplementedError

    def _loo_log_predictive(self) -> torch.Tensor:
        """Each training document's log predictive probability of its target given the others, at the
        fitted hyper-parameters (``part_selection="loo"``): ``n`` values."""
        raise NotImplementedError

    def _covariance(self) -> Kernel:
        return self.model_.covar_module  # type: ignore[attr-defined]

    def _n_hyperparameters(self) -> int:
        model, likelihood = self.model_, self.likelihood_  # type: ignore[attr-defined]
        return count_hyperparameters(torch.nn.ModuleList([model, likelihood]), variational_word_vectors(model))

    def _loo_unreliable(self) -> str | None:
        """Why the leave-one-out scores cannot choose among the sub-compositions of this fit (``None``:
        they can). A classifier says so when a class has a single training document (:meth:`_fit_parts`
        then keeps the full sum)."""
        return None

    def _fit_parts(self, fit_one: Callable[[], T], n: int) -> T:
        """``fit_one()`` (a fit with the kernel builder keeping :attr:`_parts`) once without selection;
        with it, once for each sub-composition of the top sum (the full sum first), keeping the fitted
        state of the best score (ties: the earlier, larger one): the
        :func:`~lvgp.kernels.composition.occam_score` (``"evidence"``), or the leave-one-out log predictive
        probability (``"loo"``) of the sum and of the sub-compositions whose gain over the sum exceeds one
        standard error of the sum of the documents' paired gains (the sum is kept unless the documents
        say otherwise). With ``"loo"``, a fit whose leave-one-out scores cannot choose
        (:meth:`_loo_unreliable`: a class of one training document) keeps the full sum, with a warning.
        Returns the kept fit's ``fit_one()`` value."""
        self._parts = None
        result = fit_one()
        names = part_names(self._covariance())
        unreliable = self._loo_unreliable() if self.part_selection == "loo" and len(names) > 1 else None
        if unreliable is not None:
            warn(
                f"part_selection='loo' kept the whole kernel ({' + '.join(names)}): {unreliable}",
                UserWarning,
                stacklevel=4,
            )
        if self.part_selection is None or len(names) < 2 or unreliable is not None:
            self.selected_parts_ = names
            if self.part_selection is not None:
                self.part_scores_ = [self._part_score(names, tuple(range(len(names))), n)]
            return result
        scores: list[dict[str, Any]] = []
        best: tuple[float, dict[str, Any], T] | None = None
        for keep in part_subsets(len(names)):
            if len(keep) < len(names):
                self._parts = keep
                result = fit_one()
            score = self._part_score(names, keep, n)
            scores.append(score)
            if score.get("eligible", True) and (best is None or score["score"] > best[0]):
                best = (score["score"], dict(vars(self)), result)
        assert best is not None
        vars(self).update(best[1])
        vars(self).pop("_loo_reference", None)  # the scoring's, not the fitted estimator's
        kept = tuple(range(len(names))) if self._parts is None else self._parts
        self.selected_parts_ = tuple(names[i] for i in kept)
        self.part_scores_ = scores
        return best[2]

    def _saved_parts(self) -> dict[str, Any]:
        """What a file keeps of the selection: the kept positions, their names (as fitted: a part kept alone
        keeps its name in the full sum) and the scores."""
        return {
            "parts": None if self._parts is None else list(self._parts),
            "selected_parts": list(getattr(self, "selected_parts_", ())),
            "part_scores": plain_part_scores(getattr(self, "part_scores_", [])),
        }

    def _restore_parts(self, saved: dict[str, Any]) -> None:
        """``selected_parts_`` and ``part_scores_`` of a loaded estimator from :meth:`_saved_parts`'s record
        (its kernel rebuilt with :attr:`_parts`; files without the record: every part of the kernel)."""
        names = saved.get("selected_parts")
        self.selected_parts_ = tuple(names) if names else part_names(self._covariance())
        if self.part_selection is not None:
            self.part_scores_ = [dict(score, parts=tuple(score["parts"])) for score in saved.get("part_scores", [])]

    def _part_score(self, names: tuple[str, ...], keep: tuple[int, ...], n: int) -> dict[str, Any]:
        parts = tuple(names[i] for i in keep)
        if self.part_selection == "loo":
            documents = self._loo_log_predictive().double().cpu()
            if len(keep) == len(names):  # the full sum: the reference of the others
                self._loo_reference = documents
                return {"parts": parts, "loo_log_predictive": float(documents.sum()), "score": float(documents.sum())}
            gain = documents - self._loo_reference
            se = float(gain.std() * math.sqrt(len(gain))) if len(gain) > 1 else math.inf
            return {
                "parts": parts,
                "loo_log_predictive": float(documents.sum()),
                "loo_gain": float(gain.sum()),
                "loo_gain_se": se,
                "eligible": bool(float(gain.sum()) > se),
                "score": float(documents.sum()),
            }
        evidence = self._fitted_log_evidence()
        k = self._n_hyperparameters()
        return {"parts": parts, "log_evidence": evidence, "n_hyperparameters": k, "score": occam_score(evidence, k, n)}


@contextlib.contextmanager
def fixed_draws(modules: list, seed: int) -> Iterator[None]:
    """The variational word vectors ``modules`` draw from a fresh generator seeded ``seed`` inside the
    block (an evidence estimated the same way for every sub-composition); their own streams after."""
    saved = [m.sample_generator for m in modules]
    try:
        for m in modules:
            m.sample_generator = torch_generator(seed)
        yield
    finally:
        for m, g in zip(modules, saved, strict=True):
            m.sample_generator = g
