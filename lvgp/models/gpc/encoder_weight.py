r"""``encoder_weight="loo"``: the sentence encoder's weight beside the words, chosen by the labels.

The composed kernel :math:`s\,(k_{\text{words}} + \mu\,k_{\text{encoder}})`
(:func:`~lvgp.kernels.packed.beside_encoder`) has its encoder weight :math:`\mu` fitted by the evidence of the
Dirichlet classifier's transformed-label regressions. On long texts that evidence weighs the encoder several
times more than the labels' own predictive log loss does (``benchmarks/README.md``, "The encoder part's
weight", rules 15-20). After the evidence's fit, :func:`select_encoder_weight` scales :math:`\mu` (every encoder
part's) by the factor :math:`f \in \{1/8, 1/4, 1/2, 1\}` of the least tempered leave-one-out log loss of the
training labels (closed-form, Rasmussen & Williams eqs. 5.10-5.12, as ``part_selection="loo"`` reads it; the
temperature refitted at each factor, as the predictions will be), where :math:`f < 1` must pass two guards
against the evidence's own weight :math:`f = 1`:

(i) its mean paired gain in leave-one-out log probability,
:math:`\bar g = \frac1n\sum_i [\log p^{(f)}_{-i}(y_i) - \log p^{(1)}_{-i}(y_i)]`, exceeds one standard error
of the :math:`n` per-document differences (the criterion's noise with few labels);

(ii) its leave-one-out accuracy is at least :math:`f = 1`'s minus one document (:math:`1/n`): the log loss
can prefer a smoother, better calibrated kernel that ranks worse.

The choice is made only where the training documents' median length is at least :data:`LONG_TEXT_WORDS`
words: on short texts (12 and 20 words) the factors the guards let through lost accuracy on held-out documents,
and the evidence's weight is kept (``encoder_weight_factor_`` 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ...kernels.composition import encoder_part_weights, part_names

if TYPE_CHECKING:
    from .estimator import LDKGPClassifier

__all__ = [
    "ENCODER_WEIGHTS",
    "ENCODER_WEIGHT_FACTORS",
    "LONG_TEXT_WORDS",
    "median_words",
    "weighable_encoder_parts",
    "select_encoder_weight",
]

#: the values of :class:`~lvgp.LDKGPClassifier`'s ``encoder_weight``: the evidence's, or the labels' choice
ENCODER_WEIGHTS = ("evidence", "loo")
#: the multiples of the evidence's encoder weight ``encoder_weight="loo"`` chooses among (the last, 1, its own)
ENCODER_WEIGHT_FACTORS = (0.125, 0.25, 0.5, 1.0)
#: the median length (words) of the training documents from which ``encoder_weight="loo"`` chooses; below it
#: the evidence's weight stays (``benchmarks/README.md``, rules 19 and 20: at 20 words it still lost accuracy)
LONG_TEXT_WORDS = 40


def median_words(texts: Any) -> float:
    """The median length of ``texts`` in whitespace-separated words: what :data:`LONG_TEXT_WORDS` is compared with
    (the sentence encoder reads texts only, so the length is the texts', not the vocabulary's)."""
    return float(np.median([len(str(text).split()) for text in texts]))


def weighable_encoder_parts(kernel: torch.nn.Module) -> list[tuple[torch.nn.Module, str]]:
    """The encoder parts' weights of ``kernel`` (:func:`~lvgp.kernels.composition.encoder_part_weights`) where its
    top sum has another part beside them; ``[]`` where there is nothing to weigh them against (no encoder part, or
    part selection kept a single part)."""
    return encoder_part_weights(kernel) if len(part_names(kernel)) >= 2 else []


def select_encoder_weight(
    model: LDKGPClassifier,
    factors: tuple[float, ...] = ENCODER_WEIGHT_FACTORS,
    guarded: bool = True,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, list[dict[str, Any]]]:
    """Scale the encoder parts' weights of ``model`` (a fitted Dirichlet :class:`~lvgp.LDKGPClassifier` whose
    kernel's top sum has a sentence encoder's part) by the chosen factor of ``factors`` (the last must be 1,
    the evidence's own weight) with the temperature fitted to that factor's predictions (``calibration="temperature"``).

    Returns the factor and one dict a factor: ``factor``, ``loo_log_loss`` (tempered), ``loo_gain`` and
    ``loo_gain_se`` (the mean paired gain in log probability over factor 1 and its standard error),
    ``loo_accuracy`` and ``eligible`` (both guards passed; factor 1 always). ``guarded=False``: the least
    loss among all factors (ties: the larger factor), every factor eligible. ``reference``: the fitted model's
    leave-one-out predictions (``model._loo_log_proba()`` at the evidence's weight, factor 1), where the caller
    has them (the estimator's fit, from its temperature): factor 1's are not computed again."""
    if not factors or factors[-1] != 1.0:
        raise ValueError(f"factors: the last must be 1.0 (the evidence's own weight); got {factors}")
    weights = weighable_encoder_parts(model.model_.covar_module)
    if not weights:
        raise ValueError(
            "encoder_weight='loo' scales the weight of a sentence encoder's part beside the words, and the "
            "kernel's top sum has none (sentence_encoder=... builds one)"
        )
    fitted = [getattr(module, name).detach().clone() for module, name in weights]

    def set_factor(factor: float) -> None:
        with torch.no_grad():
            for (module, name), weight in zip(weights, fitted):
                setattr(module, name, weight * factor)

    temperatures, log_predictive, accuracy = [], [], []
    for factor in factors:
        set_factor(factor)
        log_p, truth = reference if factor == 1.0 and reference is not None else model._loo_log_proba()
        tempered, temperature = model._loo_tempered((log_p, truth))  # tempered as the predictions are
        log_predictive.append(tempered.numpy())
        temperatures.append(temperature)
        accuracy.append(float(np.mean(np.argmax(log_p, axis=1) == truth)))
    n = len(log_predictive[-1])
    scores = []
    for factor, values, right in zip(factors, log_predictive, accuracy):
        gain = values - log_predictive[-1]
        se = float(gain.std(ddof=1) / np.sqrt(n)) if n > 1 else float("inf")
        eligible = factor == 1.0 or not guarded or (gain.mean() > se and right >= accuracy[-1] - 1.0 / n)
        scores.append(
            {
                "factor": float(factor),
                "loo_log_loss": -float(values.mean()),
                "loo_gain": float(gain.mean()),
                "loo_gain_se": se if factor != 1.0 else 0.0,
                "loo_accuracy": right,
                "eligible": bool(eligible),
            }
        )
    least = min(s["loo_log_loss"] for s in scores if s["eligible"])
    best = max(i for i, s in enumerate(scores) if s["eligible"] and s["loo_log_loss"] == least)
    set_factor(factors[best])
    model.temperature_ = temperatures[best]  # the one the chosen factor's predictions were tempered by
    return float(factors[best]), scores
