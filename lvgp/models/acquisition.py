"""Which texts to label next: acquisition scores of a fitted GP classifier's predictive and latent posterior,
and the batch drawn from them (issue 57).

* :func:`choose_texts_to_label` -- the user's call: the ``k`` unlabelled texts to label next for a fitted Dirichlet
  :class:`~lvgp.models.LDKGPClassifier`, by EPIG with the batch conditioned on its own texts (the active study's
  default acquisition, ``lvgp compare active``'s ``gp-pool-greedy-epig``).
* :func:`acquisition_scores` -- a score a text (higher: label sooner): the predictive entropy, :func:`bald`, the
  latent variance ratio, or :func:`epig` against target texts.
* :func:`power_batch` -- a batch drawn in proportion to the scores to a power (Kirsch et al. 2023);
  :func:`conditioned_power_batch` -- the same keys, each text's EPIG recomputed given the texts chosen before it
  (:func:`condition_on_text`).

The study that measures them, strategy by strategy, is :mod:`lvgp.experiments.active`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._random import numpy_generator
from ..base.novelty import probability_novelty, variance_novelty
from ..base.validation import check_count
from ..encoders.sentence import check_texts

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
    texts = check_texts(texts)  # a list of strings, a bad row named
    if not texts:
        raise TypeError("texts must be a non-empty list of strings, the unlabelled texts")
    if getattr(model, "inference", "dirichlet") != "dirichlet":  # (a model of other kind: its predict_latent_cross)
        raise ValueError(
            "model must be an LDKGPClassifier fitted with inference='dirichlet' (EPIG reads its independent latents "
            f"a class and their cross-covariances); got {type(model).__name__} with "
            f"inference={getattr(model, 'inference', None)!r}"
        )
    k = check_count("k", k, minimum=0, maximum=len(texts))  # at most the number of texts
    rng = numpy_generator(random_state)  # a Generator as it is
    if targets is None:
        n_targets = check_count("n_targets", n_targets)
        targets = [texts[i] for i in rng.choice(len(texts), min(n_targets, len(texts)), replace=False)]
    else:
        targets = check_texts(targets, "targets")
        if not targets:
            raise TypeError("targets must be a non-empty list of strings")
    scores = np.clip(acquisition_scores(model, "epig", texts, seed, targets), 0.0, None)
    return conditioned_power_batch(model, texts, targets, scores, k, rng, beta, seed)
