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
  the latent posterior (:func:`bald`); the latent variance ratio (:mod:`lvgp.base.novelty`'s
  ``"variance"``).
* ``logreg-entropy`` -- logistic regression on ``[tf-idf | encoder]`` chooses by its predictive
  entropy and predicts (uncertainty sampling, what labelling tools ship).
* ``random`` -- random texts, logistic regression predicting; ``random-gp`` -- random texts, the GP
  predicting.
* ``gp-power-entropy``, ``gp-power-bald`` (not in the default set) -- stochastic batch acquisition
  (Kirsch, Farquhar, Atighehchian, Jesson, Branchaud-Charron & Gal, TMLR 2023, "power"
  acquisition): the batch is drawn without replacement with probabilities proportional to the
  score (entropy, BALD) to the power :math:`\beta` (``--power-beta``, default 1, their default;
  :func:`power_batch`), where the other strategies take the top ``--batch``: a batch of many
  near-identical top texts is what a top-k batch risks with many classes.
* ``gp-power-epig``, ``gp-pool-power-epig`` -- the power acquisition of EPIG (Bickford Smith et al.,
  AISTATS 2023; :func:`epig`): the information a text's label gives about the labels of ``--epig-targets``
  (100) target texts drawn afresh from the unlabelled pool every round; ``gp-pool-power-epig`` with the pool's
  cluster kernel (``gp-pool-*``, below).
* ``gp-pool-greedy-epig`` -- ``gp-pool-power-epig``'s batch chosen one text after another, each text's EPIG
  recomputed with the latent posterior conditioned on the texts chosen before it (:func:`conditioned_power_batch`),
  its keys at the exponent ``--greedy-beta`` (default 2): two texts that tell the same thing are not both drawn, so
  the draw can be greedier. In the default set: the studies' best acquisition (``benchmarks/power_beta_dev.py``).
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

``--random-share``: the share of each acquired batch drawn at random from the unlabelled texts its
acquisition left (default 0: the whole batch the acquisition's). ``--power-beta``, ``--greedy-beta``, ``--epig-targets``
and ``--random-share`` away from their defaults are named in the table's note; their defaults are the
settings that dev draws of the training parts kept (``benchmarks/power_beta_dev.py``).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from .._random import Streams, numpy_generator
from ..base.constraints import Integer, Real
from ..base.metrics import log_loss
from ..base.novelty import probability_novelty, variance_novelty
from ..datasets.loaders import corpus_names
from .classification import _encoder_logreg, _style
from .open_set import (  # the pool GP's cluster settings lived here before: still importable from here
    POOL_COMPONENTS_PER_CLASS,  # noqa: F401
    POOL_NEIGHBOURS,  # noqa: F401
    POOL_POWER,  # noqa: F401
    classification_corpus,
)
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
#: the exponent of the power acquisitions, ``--power-beta``'s default (Kirsch et al. 2023's default; greedier and
#: flatter exponents tried on dev draws and not adopted: ``benchmarks/power_beta_dev.py``)
POWER_BETA = 1.0
#: latent draws of BALD's expectation
BALD_SAMPLES = 64
#: latent draws of each text in EPIG (:func:`epig`; with ``"monte-carlo"``, of each candidate-target pair)
EPIG_SAMPLES = 64
#: how :func:`epig` computes each pair's mutual information: ``"second-order"``, its expansion in the pair's latent
#: covariances, or ``"monte-carlo"``, from the table of the pair's draws (the study's until 2026-12-03, whose
#: upward bias was most of every score: ``benchmarks/README.md``, "EPIG's estimator")
EPIG_ESTIMATOR = "second-order"
#: target texts of EPIG, drawn from the unlabelled pool every round (the texts whose labels matter),
#: ``--epig-targets``'s default (300 tried on dev draws and not adopted: ``benchmarks/power_beta_dev.py``)
EPIG_TARGETS = 100
#: the share of each batch an acquiring strategy draws at random from the unlabelled pool, the rest its
#: acquisition's, ``--random-share``'s default (rounded to whole texts; 0: every text its acquisition's, the studies'
#: protocol; 0.2 tried on dev draws and not adopted: ``benchmarks/power_beta_dev.py``)
RANDOM_SHARE = 0.0
#: :func:`conditioned_power_batch`'s candidates: this many times the batch, the texts of the highest power keys
GREEDY_SHORTLIST = 10
#: the exponent of the conditioned batch (``gp-pool-greedy-epig``), ``--greedy-beta``'s default: conditioning keeps a
#: greedier draw from taking alike texts (chosen on dev draws against ``gp-pool-power-epig`` at beta 1, where 1 for
#: the conditioned batch was level: ``benchmarks/power_beta_dev.py``)
GREEDY_BETA = 2.0
#: the entries of :func:`epig`'s largest array a chunk of candidates (each: target x draw x class, or its joint
#: tables' target x class x class where the classes outnumber the draws); 2^20, 8 MB of float64: smaller chunks
#: stay in cache, 2^22 took 1.2x and 2^23 1.5x the time on 20ng's 20 classes (``benchmarks/epig_cost.py``)
_EPIG_CHUNK = 2**20


def bald(mean: np.ndarray, var: np.ndarray, n_samples: int = BALD_SAMPLES, seed: int = 0) -> np.ndarray:
    r"""BALD's mutual information between a text's label and the latent functions (Houlsby, Huszár,
    Ghahramani & Lengyel 2011), under independent Gaussian latents ``mean``, ``var`` (``n x C``):
    :math:`H[\tfrac1S \sum_s \mathrm{softmax}(f_s)] - \tfrac1S \sum_s H[\mathrm{softmax}(f_s)]` over ``n_samples``
    draws :math:`f_s` (the same standard normal draws for every text, from ``seed``). One latent
    column (a binary classifier's) is read as the logits :math:`(0, f)`. ``n`` values, at least 0."""
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    if mean.shape != var.shape or mean.ndim != 2:
        raise ValueError(f"mean and var must both be n x C; got {mean.shape} and {var.shape}")
    eps = numpy_generator(seed).standard_normal((n_samples, 1, mean.shape[1]))
    f = mean[None] + np.sqrt(np.clip(var, 0, None))[None] * eps  # S x n x C
    if f.shape[-1] == 1:
        f = np.concatenate([np.zeros_like(f), f], axis=-1)
    f -= f.max(axis=-1, keepdims=True)
    p = np.exp(f)
    p /= p.sum(axis=-1, keepdims=True)

    def entropy(q: np.ndarray) -> np.ndarray:
        return -np.sum(q * np.log(np.clip(q, 1e-300, None)), axis=-1)

    return np.clip(entropy(p.mean(axis=0)) - entropy(p).mean(axis=0), 0.0, None)


def epig(
    mean: np.ndarray,
    var: np.ndarray,
    target_mean: np.ndarray,
    target_var: np.ndarray,
    cov: np.ndarray,
    n_samples: int = EPIG_SAMPLES,
    seed: int = 0,
    estimator: str | None = None,
) -> np.ndarray:
    r"""The expected predictive information gain of each candidate text (EPIG; Bickford Smith, Kirsch,
    Farquhar, Gal, Foster & Rainforth, AISTATS 2023): the mutual information between its label and the
    label of a target text, averaged over the targets, :math:`\tfrac1m \sum_j I(y; y^*_j \mid \mathbf x,
    \mathbf x^*_j)`, under the joint predictive :math:`p(y, y^*) = \mathbb E_f[\mathrm{softmax}(f(\mathbf
    x))_y\, \mathrm{softmax}(f(\mathbf x^*))_{y^*}]`. Where BALD values what a label says about the latent
    functions anywhere, EPIG values only what it says about the labels of the targets (texts like
    those the classifier will be asked about): it passes over outliers whose label informs nothing else.

    The latents are the classifier's, independent across the classes with each class's pair jointly
    Gaussian: candidate means and variances ``mean``, ``var`` (``n x C``), targets' ``target_mean``,
    ``target_var`` (``m x C``), their covariances ``cov`` (``C x n x m``;
    :meth:`~lvgp.models.LDKGPClassifier.predict_latent_cross`). One latent column (a binary classifier's) is read
    as the logits :math:`(0, f)`. ``n`` values, at least 0. ``estimator`` (default :data:`EPIG_ESTIMATOR`):

    * ``"monte-carlo"``: each pair's expectation by ``n_samples`` draws, the same standard normal draws
      :math:`\epsilon, \epsilon'` for every pair (from ``seed``): :math:`f = \mu + \sqrt v\,\epsilon`,
      :math:`f^* = \mu^* + (c/\sqrt v)\,\epsilon + \sqrt{v^* - c^2/v}\,\epsilon'` (the pair's Cholesky factor);
      the mutual information is that of the draws' joint table. That table's information is biased upwards: a
      pair with no covariance at all gets the information of ``n_samples`` independent draws' table, which on
      the active study's pools is most of every score.
    * ``"second-order"``: the mutual information to second order in the covariances, with no pair's draws.
      For weakly dependent labels :math:`I(y; y^*) = \tfrac12 \sum_{c,d} \mathrm{Cov}(p_c, p^*_d)^2 / (\bar p_c
      \bar p^*_d) + O(\mathrm{Cov}^3)` (half the :math:`\chi^2` divergence of the joint from its margins'
      product), and for jointly Gaussian latents :math:`\mathrm{Cov}(p_c(f), p^*_d(f^*)) = \sum_k c_k\,
      \mathbb E[\partial_k p_c]\, \mathbb E[\partial_k p^*_d] + O(c^2)` (Stein's lemma, each class's latents
      independent of the others'). So :math:`I \approx \tfrac12\, \mathbf c^\top (M \circ M^*)\, \mathbf c` with
      :math:`M = \tilde G^\top \tilde G`, :math:`\tilde G_{ck} = \mathbb E[p_c(\delta_{ck} - p_k)] /
      \sqrt{\bar p_c}` (the softmax's mean Jacobian, from ``n_samples`` draws of each text's own latents) and
      :math:`M^*` the target's; capped at the smaller of the two labels' predictive entropies, a bound on any
      mutual information. Exact as the covariances vanish, the regime of a pool's texts against random targets;
      it falls short of the information as the correlations near 1 and the latents' variances grow (the softmax
      saturating), ranking such pairs above weaker ones still (``benchmarks/README.md``, "EPIG's estimator", says
      by how much)."""
    mean, var = np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
    target_mean, target_var = np.asarray(target_mean, dtype=np.float64), np.asarray(target_var, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    n, C = mean.shape if mean.ndim == 2 else (-1, -1)
    m = target_mean.shape[0] if target_mean.ndim == 2 else -1
    if (
        min(n, m) < 0
        or var.shape != mean.shape
        or target_mean.shape != (m, C)
        or target_var.shape != (m, C)
        or cov.shape != (C, n, m)
    ):
        raise ValueError(
            f"mean and var must be n x C, target_mean and target_var m x C and cov C x n x m; got {mean.shape}, "
            f"{var.shape}, {target_mean.shape}, {target_var.shape} and {cov.shape}"
        )
    if n_samples < 1:
        raise ValueError(f"n_samples must be at least 1; got {n_samples}")
    estimator = EPIG_ESTIMATOR if estimator is None else estimator
    if estimator == "second-order":
        return _epig_second_order(mean, var, target_mean, target_var, cov, n_samples, seed)
    if estimator != "monte-carlo":
        raise ValueError(f"estimator must be 'monte-carlo' or 'second-order'; got {estimator!r}")
    draws = numpy_generator(seed).standard_normal((2, n_samples, C))
    eps, eps_target = torch.from_numpy(draws[0]), torch.from_numpy(draws[1])
    sd = torch.from_numpy(np.sqrt(np.clip(var, 0.0, None)))
    mu, mu_t, var_t = torch.from_numpy(mean), torch.from_numpy(target_mean), torch.from_numpy(target_var)
    # the target's regression on the candidate's draw: c / sqrt(v), and what is left of its variance
    loading = torch.from_numpy(cov).permute(1, 2, 0) / torch.where(sd > 0, sd, 1.0)[:, None, :]  # n x m x C
    loading = torch.where(sd[:, None, :] > 0, loading, 0.0)
    labels = 2 if C == 1 else C  # a binary classifier's one latent column is the logits (0, f)
    out = np.empty(n)
    # per candidate: its targets' draws (S x m x C) and its joint tables (C' x m x C'), the larger at once
    chunk = max(1, _EPIG_CHUNK // max(1, m * labels * max(n_samples, labels)))
    for start in range(0, n, chunk):
        rows = slice(start, min(n, start + chunk))
        b = rows.stop - rows.start
        p = _softmax_last(mu[rows, None, :] + sd[rows, None, :] * eps)  # b x S x C'
        load = loading[rows]  # b x m x C
        rest = (var_t[None] - load * load).clamp_min(0.0).sqrt()  # b x m x C
        # the targets' draws, b x S x m x C: one array, the other two terms added in place
        f_t = eps[None, :, None, :] * load[:, None, :, :]
        f_t.addcmul_(eps_target[None, :, None, :], rest[:, None, :, :]).add_(mu_t[None, None])
        p_t = _softmax_last(f_t, inplace=True)  # b x S x m x C'
        # the joint tables p(y = c, y* = d) of each pair: one matrix product a candidate over its draws
        joint = torch.bmm(p.transpose(1, 2), p_t.reshape(b, n_samples, m * labels))
        joint = joint.div_(n_samples).reshape(b, labels, m, labels)  # b x C' x m x C'
        # I(y; y*) = sum p log p of the table minus those of its two margins
        information = (
            _xlogx_sum(joint, (1, 3)) - _xlogx_sum(joint.sum(3), (1,)) - _xlogx_sum(joint.sum(1), (2,))
        )  # b x m
        out[rows] = information.mean(-1).clamp_min(0.0).numpy()
    return out


def _epig_second_order(
    mean: np.ndarray,
    var: np.ndarray,
    target_mean: np.ndarray,
    target_var: np.ndarray,
    cov: np.ndarray,
    n_samples: int,
    seed: int,
) -> np.ndarray:
    """:func:`epig`'s ``"second-order"`` estimator (its docstring): each text's weighted mean Jacobian product
    ``M`` (``K x K``, ``K`` latent columns) from its own draws, then per pair ``c^T (M o M*) c / 2``, capped."""
    C = mean.shape[1]
    eps = torch.from_numpy(numpy_generator(seed).standard_normal((n_samples, C)))

    def moments(mu: np.ndarray, v: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """``M`` of each text (``t x K x K``) and the entropy of its mean predictive (``t``)."""
        f = torch.from_numpy(mu)[:, None, :] + torch.from_numpy(np.sqrt(np.clip(v, 0.0, None)))[:, None, :] * eps
        p = _softmax_last(f, inplace=True)  # t x S x L (L = 2 for one column: the logits (0, f))
        p_bar = p.mean(1)  # t x L
        if C == 1:  # d p_c / d f = p_c (delta_c1 - p_1): the column of the second logit
            jacobian = (p * (torch.tensor([0.0, 1.0], dtype=p.dtype) - p[..., 1:])).mean(1)[..., None]  # t x 2 x 1
        else:  # E[diag(p) - p p^T]
            jacobian = torch.diag_embed(p_bar) - torch.einsum("tsc,tsk->tck", p, p) / n_samples
        weighted = jacobian / p_bar.clamp_min(1e-300).sqrt()[..., None]
        entropy = -_xlogx_sum(p_bar, (-1,))
        return weighted.transpose(1, 2) @ weighted, entropy

    M_t, entropy_t = moments(target_mean, target_var)
    n, m = mean.shape[0], target_mean.shape[0]
    c = torch.from_numpy(cov).permute(1, 2, 0)  # n x m x K
    out = np.empty(n)
    # a chunk of candidates: their pairs' outer products (b x m x K x K) and their own draws (b x S x L), the larger
    chunk = max(1, _EPIG_CHUNK // max(1, m * C * C, n_samples * max(C, 2)))
    for start in range(0, n, chunk):
        rows = slice(start, min(n, start + chunk))
        b = rows.stop - rows.start
        M, entropy = moments(mean[rows], var[rows])
        outer = c[rows, :, :, None] * c[rows, :, None, :]  # b x m x K x K
        outer.mul_(M_t[None])
        information = torch.bmm(outer.reshape(b, m, C * C), M.reshape(b, C * C, 1))[..., 0] / 2  # b x m
        information = torch.minimum(information, torch.minimum(entropy[:, None], entropy_t[None]))
        out[rows] = information.mean(-1).clamp_min(0.0).numpy()
    return out


def _softmax_last(f: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """The softmax over the last dimension (one column ``f``: the logits ``(0, f)``), by an explicit
    max-shifted exp: on the short class dimensions of :func:`epig` several times faster than
    :func:`torch.softmax` (``benchmarks/epig_cost.py``); ``inplace``: ``f`` itself is overwritten."""
    if f.shape[-1] == 1:
        f, inplace = torch.cat([torch.zeros_like(f), f], dim=-1), True
    f = f.sub_(f.amax(-1, keepdim=True)) if inplace else f - f.amax(-1, keepdim=True)
    f.exp_()
    return f.div_(f.sum(-1, keepdim=True))


def _xlogx_sum(p: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    r""":math:`\sum p \log p` over ``dims`` (0 where ``p`` is 0; in place of :func:`torch.special.xlogy`, half
    its time here)."""
    return p.clamp_min(1e-300).log_().mul_(p).sum(dims)


def power_batch(scores: np.ndarray, k: int, rng: np.random.Generator, beta: float = POWER_BETA) -> np.ndarray:
    r"""``k`` distinct positions of ``scores`` (each at least 0) drawn without replacement with
    probabilities proportional to :math:`s_i^\beta`, one after another (Kirsch et al. 2023's power
    acquisition), by the Gumbel-top-k trick: the ``k`` largest :math:`\beta\log s_i + G_i` with
    :math:`G_i` standard Gumbel. A score of 0 is drawn only after every positive one."""
    scores = _checked_power_draw(scores, k, "scores must be a vector of finite numbers at least 0")
    return np.argsort(-_power_keys(scores, rng.gumbel(size=len(scores)), beta), kind="stable")[:k]


def _checked_power_draw(scores: np.ndarray, k: int, message: str) -> np.ndarray:
    """``scores`` as a float64 vector, ``ValueError(message)`` unless finite and at least 0, and ``k`` in range."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or (scores < 0).any() or not np.isfinite(scores).all():
        raise ValueError(message)
    if not 0 <= k <= len(scores):
        raise ValueError(f"k must be in [0, {len(scores)}]; got {k}")
    return scores


def _power_keys(scores: np.ndarray, gumbel: np.ndarray, beta: float) -> np.ndarray:
    r"""The power acquisition's keys :math:`\beta\log s_i + G_i` (a score of 0: minus infinity)."""
    with np.errstate(divide="ignore"):
        return beta * np.log(scores) + gumbel


def conditioned_power_batch(
    model: Any,
    texts: list[str],
    targets: list[str],
    scores: np.ndarray,
    k: int,
    rng: np.random.Generator,
    beta: float = POWER_BETA,
    seed: int = 0,
    shortlist: int = GREEDY_SHORTLIST,
) -> np.ndarray:
    r"""``k`` distinct positions of ``texts`` chosen one after another, each by the power acquisition of its
    EPIG given the texts chosen before it: :func:`power_batch`'s keys :math:`\beta\log s_i + G_i` (the same Gumbel
    draws from ``rng``), each text's score :math:`s_i` recomputed after every choice with the latent posterior
    conditioned on the chosen texts' labels (a batch-aware acquisition in the manner of BatchBALD, Kirsch, van
    Amersfoort & Gal 2019, with the power acquisition's draws). Where a label adds no precision (an infinite noise),
    the batch is :func:`power_batch`'s to the text.

    ``scores``: the texts' :func:`epig` against the ``targets`` (``n``, at least 0); ``model``: the fitted Dirichlet
    classifier they came from. Only the ``shortlist`` times ``k`` texts of the highest keys are candidates
    (conditioning lowers keys; a text further down would need every candidate above it to fall below its key): their
    joint posterior with the targets and with one another comes from one
    :meth:`~lvgp.models.LDKGPClassifier.predict_latent_cross`. Conditioning on a chosen text :math:`s`, class by class
    (R&W eq. 2.24 with one more noisy observation): :math:`c(a, b) \leftarrow c(a, b) - c(a, s)\,c(s, b)\,w`, for
    the candidates' and targets' variances and covariances alike, with :math:`w = \mathbb E_y[1/(v_s + \sigma^2_y)]`
    the precision the label adds in expectation over the classifier's predictive :math:`p(y)` (its noise
    :math:`\sigma^2_y`, :meth:`~lvgp.models.LDKGPClassifier.observation_noise`, is smaller in the label's own class);
    the latent means are kept (their expectation over the label). ``k`` positions, in the order chosen."""
    message = f"scores must be {len(texts)} finite numbers at least 0, one a text"
    if np.shape(scores) != (len(texts),):
        raise ValueError(message)
    scores = _checked_power_draw(scores, k, message)
    if shortlist < 1:
        raise ValueError(f"shortlist must be at least 1; got {shortlist}")
    gumbel = rng.gumbel(size=len(scores))
    order = np.argsort(-_power_keys(scores, gumbel, beta), kind="stable")
    short = order[: min(len(order), shortlist * k)]
    if k <= 1 or len(short) <= k:
        return order[:k]
    m, candidates = len(targets), [texts[i] for i in short]
    cross = model.predict_latent_cross(candidates, list(targets) + candidates)
    mean, var = cross.x_mean, cross.x_var.copy()  # L x C
    target_mean, target_var = cross.z_mean[:m], cross.z_var[:m].copy()  # m x C
    to_targets, among = cross.cov[:, :, :m].copy(), cross.cov[:, :, m:].copy()  # C x L x m, C x L x L
    proba = np.asarray(model.predict_proba(candidates), dtype=np.float64)  # L x C
    noise = np.asarray(model.observation_noise(), dtype=np.float64)  # C x 2: another class's label, its own
    left = np.ones(len(short), dtype=bool)
    chosen: list[int] = []
    current = scores[short]
    for step in range(k):
        if step:
            current = epig(mean, var, target_mean, target_var, to_targets, seed=seed)
        s = int(np.argmax(np.where(left, _power_keys(current, gumbel[short], beta), -np.inf)))
        chosen.append(s)
        left[s] = False
        v = np.clip(np.diagonal(among, axis1=1, axis2=2)[:, s], 0.0, None)  # C: the chosen text's variances now
        w = proba[s] / (v + noise[:, 1]) + (1.0 - proba[s]) / (v + noise[:, 0])  # C
        var, target_var = condition_on_text(among, to_targets, var, target_var, s, w)
    return short[chosen]


def condition_on_text(
    among: np.ndarray, to_targets: np.ndarray, var: np.ndarray, target_var: np.ndarray, s: int, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""One more observation of candidate ``s``'s latents, of precision ``w`` a class (``C``; :math:`1/(v_s +
    \sigma^2)` for a noise :math:`\sigma^2`): the candidates' covariances ``among`` (``C x L x L``) and to the
    targets ``to_targets`` (``C x L x m``) updated in place, :math:`c(a, b) - c(a, s)\,c(s, b)\,w` (R&W eq. 2.24);
    the candidates' and targets' variances ``var`` (``L x C``) and ``target_var`` (``m x C``) returned updated (at
    least 0)."""
    a, b = among[:, :, s].copy(), to_targets[:, s, :].copy()  # C x L, C x m
    among -= (w[:, None] * a)[:, :, None] * a[:, None, :]
    to_targets -= (w[:, None] * a)[:, :, None] * b[:, None, :]
    return np.clip(var - (w[:, None] * a * a).T, 0.0, None), np.clip(target_var - (w[:, None] * b * b).T, 0.0, None)


# ------------------------------------------------------------------ the learners
def _gp(study, cell, data):
    return _gp_on_texts(study, cell, "cosine")


def _gp_on_texts(study: ActiveStudy, cell: dict, encoder_parts: Any) -> Any:
    """The study's GP classifier, the cosine of the tf-idf vectors beside ``encoder_parts`` on the encoder's
    vectors; with ``--vocabulary-from pool`` its vocabulary and idf the pool's (:func:`pool_vocabulary`)."""
    from .classification import _gp_classifier_on_texts
    from .open_set import _bag_of_words_beside_encoder

    if study.vocabulary_from == "labelled":
        return _gp_classifier_on_texts(study, cell, _bag_of_words_beside_encoder(encoder_parts))
    vocabulary, idf = pool_vocabulary(study, cell["split"])
    model = _gp_classifier_on_texts(study, cell, _bag_of_words_beside_encoder(encoder_parts, idf))
    return model.set_params(vocabulary=vocabulary)


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
    """The cluster part of ``gp-pool``: :func:`~lvgp.experiments.open_set.cluster_kernel_of_texts` of the
    whole pool's texts (labelled and unlabelled), with 2 eigenvectors a class, made once a seed."""
    from .open_set import cluster_kernel_of_texts

    data = study.split(split)
    return cluster_kernel_of_texts(study.encoder, study.device, data.pool_texts, len(np.unique(data.pool_labels)))


def _gp_pool(study, cell, data):
    """``_gp``'s kernel plus a third part, the pool's cluster kernel on the encoder's unit vectors, with
    its own weight (log-normal prior around the balanced start, as the encoder's cosine)."""
    part = pool_kernel(study, cell["split"])  # no parameters: every fit shares it
    return _gp_on_texts(study, cell, ("cosine", part))


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


def acquisition_scores(
    model: Any, acquisition: str, texts: list[str], seed: int, targets: list[str] | None = None
) -> np.ndarray:
    """Higher: label sooner. ``entropy``: the predictive entropy; ``bald``: :func:`bald` of the
    latent posterior; ``variance``: the latent variance ratio (minus ``score_samples``'s
    ``"variance"``); ``epig``: :func:`epig` of the joint latent posterior at ``texts`` and the
    ``targets`` (:meth:`~lvgp.models.LDKGPClassifier.predict_latent_cross`)."""
    if acquisition == "entropy":
        return -probability_novelty(model.predict_proba(texts), "entropy")
    if acquisition == "epig":
        if not targets:
            raise ValueError("the epig acquisition needs target texts")
        cross = model.predict_latent_cross(texts, targets)
        return epig(cross.x_mean, cross.x_var, cross.z_mean, cross.z_var, cross.cov, seed=seed)
    mean, var, prior = model.predict_latent(texts, return_prior=True)
    if acquisition == "bald":
        return bald(mean, var, seed=seed)
    if acquisition == "variance":
        return -variance_novelty(var, prior)
    raise ValueError(f"unknown acquisition {acquisition!r}")


def choose_texts_to_label(
    model: Any,
    texts: list[str],
    k: int,
    *,
    targets: list[str] | None = None,
    n_targets: int = EPIG_TARGETS,
    beta: float = GREEDY_BETA,
    random_state: int | np.random.Generator | None = None,
    seed: int = 0,
) -> np.ndarray:
    r"""The ``k`` texts of the unlabelled ``texts`` to label next: the positions (``k`` distinct ints, in the order
    chosen) that the active study's default acquisition (``gp-pool-greedy-epig``) picks for the fitted Dirichlet
    classifier ``model`` (an :class:`~lvgp.models.LDKGPClassifier`). Each text's :func:`epig` against the
    ``targets`` -- texts like those the classifier will be asked about; by default ``n_targets`` of ``texts`` drawn
    without replacement from ``random_state`` -- then the batch drawn one text at a time, in proportion to the
    scores to the power ``beta``, each text's EPIG recomputed given the texts chosen before it
    (:func:`conditioned_power_batch`). ``seed``: EPIG's standard normal draws. The study's rounds call it with their
    own target texts and generators.

    Label the chosen texts, add them to the labelled ones and refit: a loop a few lines long (the notebook "Uncertainty
    at work")."""
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a non-empty list of strings, the unlabelled texts")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= len(texts):
        raise ValueError(f"k must be an int in [0, {len(texts)}] (the number of texts); got {k!r}")
    rng = random_state if isinstance(random_state, np.random.Generator) else numpy_generator(random_state)
    if targets is None:
        if isinstance(n_targets, bool) or not isinstance(n_targets, (int, np.integer)) or n_targets < 1:
            raise ValueError(f"n_targets must be an int at least 1; got {n_targets!r}")
        targets = [texts[i] for i in rng.choice(len(texts), min(int(n_targets), len(texts)), replace=False)]
    elif not targets or not all(isinstance(t, str) for t in targets):
        raise TypeError("targets must be a non-empty list of strings")
    scores = np.clip(acquisition_scores(model, "epig", texts, seed, list(targets)), 0.0, None)
    return conditioned_power_batch(model, texts, list(targets), scores, int(k), rng, beta, seed)


def run_cell(study: ActiveStudy, cell: dict) -> dict:
    """One strategy on one seed: the learning curve from one text a class to the budget."""
    strategy = cell["method"]
    _, acquisition = STRATEGIES[strategy]
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
            model = study.estimator(cell)
            x = [split.pool_texts[i] for i in labelled]
            start = time.perf_counter()
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
            if acquisition == "random":
                chosen = rng.choice(unlabelled, take, replace=False)
            else:
                pool = [split.pool_texts[i] for i in unlabelled]
                # a power acquisition draws its batch in proportion to its score; the others take the top
                targets = None
                if acquisition.endswith("epig"):  # the targets: unlabelled texts, drawn afresh every round
                    drawn = target_rng.choice(len(pool), min(study.epig_targets, len(pool)), replace=False)
                    targets = [pool[i] for i in drawn]
                n_random = int(round(study.random_share * take))
                if acquisition == "greedy-epig":  # the user's function, with the round's targets and generators
                    picked = choose_texts_to_label(
                        model, pool, take - n_random, targets=targets, beta=study.greedy_beta, random_state=power_rng,
                        seed=bald_seed,
                    )  # fmt: skip
                    chosen = unlabelled[picked]
                else:
                    scores = acquisition_scores(model, acquisition.removeprefix("power-"), pool, bald_seed, targets)
                    if acquisition.startswith("power-"):  # drawn by the power keys: scores at least 0
                        picked = power_batch(np.clip(scores, 0.0, None), take - n_random, power_rng, study.power_beta)
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
    """The acquisition's settings of ``study`` that are not the studies' protocol (``--power-beta``,
    ``--greedy-beta``, ``--epig-targets``, ``--random-share`` away from their defaults), as the table's note names
    them."""
    notes = []
    if study.power_beta != POWER_BETA:
        notes.append(f"Power acquisitions' exponent {study.power_beta:g} (--power-beta; default {POWER_BETA:g})")
    if study.greedy_beta != GREEDY_BETA:
        notes.append(f"The conditioned batch's exponent {study.greedy_beta:g} (--greedy-beta; default {GREEDY_BETA:g})")
    if study.epig_targets != EPIG_TARGETS:
        notes.append(f"EPIG's target texts {study.epig_targets} a round (--epig-targets; default {EPIG_TARGETS})")
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
