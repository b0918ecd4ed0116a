r"""The parts of a composed kernel, and model selection among its sub-compositions.

A composed covariance such as :math:`s\,(k_{\text{words}} + \mu\,k_{\text{encoder}})` (what the
estimators' ``sentence_encoder=`` builds, :func:`~lvgp.kernels.packed.beside_encoder`) is a *sum of
parts* under output scales. A part that does not help should be able to leave: ``part_selection="evidence"``
on :class:`~lvgp.GPLVSMRegressor` and :class:`~lvgp.LDKGPClassifier` fits every non-empty
sub-sum of the top sum (:func:`part_subsets`; the full sum first) and keeps the one of the highest
evidence with BIC's Occam factor (:func:`occam_score`):

.. math::

    \mathrm{score}(M) = \log p(\mathbf y \mid \hat{\boldsymbol\theta}_M, M)
        + \log p(\hat{\boldsymbol\theta}_M \mid M) - \tfrac{k_M}{2}\log n,

with :math:`\hat{\boldsymbol\theta}_M` the fitted hyper-parameters of sub-composition :math:`M` (the objective
each fit maximizes: the exact log marginal likelihood, its Laplace approximation or the ELBO over
variational word vectors, plus the hyper-parameters' log priors), :math:`k_M` their number and
:math:`n` the training documents (Schwarz 1978; the kernel search of Duvenaud et al., ICML 2013, scores
its compositions the same way). Without the Occam factor a sum always wins, up to its priors: each
sub-sum is the sum with a part's weight at zero, so the fitted evidence of the sum is at least theirs
and a redundant part stays at whatever weight its prior holds it (``results/README.md``).

``part_selection="loo"`` scores each sub-composition by the leave-one-out log predictive probability
of the training targets at its fitted hyper-parameters, closed-form from one factorization
(Rasmussen & Williams, eqs. 5.10-5.12; Sundararajan & Keerthi, 2001): for GP regression
:math:`\sum_i \log\mathcal N(y_i \mid \mu_{-i}, \sigma^2_{-i})`, for the Dirichlet GP classifier
:math:`\sum_i \log p_{-i}(y_i)`. It scores what a held-out document would see, where the evidence
scores the training documents' joint density under the hyper-parameters' priors.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from gpytorch.kernels import AdditiveKernel, Kernel, ScaleKernel

__all__ = [
    "top_sum",
    "part_names",
    "part_subsets",
    "restrict_to_parts",
    "count_hyperparameters",
    "occam_score",
    "encoder_part_weights",
    "PART_SELECTIONS",
]

#: the values of the estimators' ``part_selection``: the evidence with BIC's Occam factor, or the
#: leave-one-out log predictive probability of the training targets (Rasmussen & Williams, sec. 5.4.2)
PART_SELECTIONS = ("evidence", "loo")


def top_sum(kernel: Kernel) -> AdditiveKernel | None:
    """The outermost sum of ``kernel``, under any output scales (``ScaleKernel``), or ``None``.

    Example: ``ScaleKernel(WordSetKernel(...) + ScaleKernel(FeatureKernel(...)))`` -> the sum of the two."""
    while isinstance(kernel, ScaleKernel):
        kernel = kernel.base_kernel
    return kernel if isinstance(kernel, AdditiveKernel) else None


def _innermost(kernel: Kernel) -> Kernel:
    while isinstance(kernel, ScaleKernel):
        kernel = kernel.base_kernel
    return kernel


def part_names(kernel: Kernel) -> tuple[str, ...]:
    """Names of the parts of ``kernel``'s top sum, in order: ``"words"`` (a
    :class:`~lvgp.kernels.WordSetKernel`, the word ids of packed documents), ``"encoder"`` (a
    :class:`~lvgp.kernels.FeatureKernel`, the sentence encoder's vectors), else the class name of the
    part under its output scales; a repeated name gets ``"-2"``, ``"-3"``, ... Without a sum, one part
    named the same way."""
    from .packed import FeatureKernel, WordSetKernel

    total = top_sum(kernel)
    parts = list(total.kernels) if total is not None else [kernel]
    names: list[str] = []
    for part in parts:
        inner = _innermost(part)
        name = (
            "words"
            if isinstance(inner, WordSetKernel)
            else "encoder"
            if isinstance(inner, FeatureKernel)
            else type(inner).__name__
        )
        count = sum(1 for n in names if n == name or n.startswith(name + "-"))
        names.append(name if count == 0 else f"{name}-{count + 1}")
    return tuple(names)


def encoder_part_weights(kernel: Kernel) -> list[tuple[torch.nn.Module, str]]:
    r"""The weight :math:`\mu` of each sentence-encoder part of ``kernel``'s top sum (the parts
    :func:`part_names` calls ``"encoder"``), as ``(module, name)`` of its positive parameter: an
    ``"rbf"`` / ``"matern"`` / kernel part's output scale (the ``ScaleKernel`` over its
    :class:`~lvgp.kernels.FeatureKernel`), a ``"cosine"`` part's linear variance
    (:func:`~lvgp.kernels.packed.encoder_part`). ``ValueError`` for an encoder part without either."""
    from gpytorch.kernels import LinearKernel

    from .packed import FeatureKernel

    total = top_sum(kernel)
    parts = list(total.kernels) if total is not None else [kernel]
    weights: list[tuple[torch.nn.Module, str]] = []
    for name, part in zip(part_names(kernel), parts):
        if not name.startswith("encoder"):
            continue
        if isinstance(part, ScaleKernel):
            weights.append((part, "outputscale"))
        elif isinstance(part, FeatureKernel) and isinstance(part.base, LinearKernel):
            weights.append((part.base, "variance"))
        else:
            raise ValueError(
                f"the kernel's part {name!r} ({type(part).__name__}) has no weight: neither an output scale over it "
                "nor a linear kernel's variance (lvgp.kernels.packed.encoder_part builds one)"
            )
    return weights


def part_subsets(n_parts: int) -> list[tuple[int, ...]]:
    """The non-empty subsets of ``range(n_parts)`` as sorted tuples, the full set first, then by size
    (largest first) and position: ``part_subsets(2) == [(0, 1), (0,), (1,)]``."""
    if n_parts < 1:
        raise ValueError(f"n_parts must be at least 1; got {n_parts}")
    subsets = [c for size in range(n_parts, 0, -1) for c in itertools.combinations(range(n_parts), size)]
    return subsets


def restrict_to_parts(kernel: Kernel, keep: tuple[int, ...]) -> Kernel:
    """``kernel`` with its top sum reduced to the parts at positions ``keep`` (in place; returns
    ``kernel``). The parts left out leave the module, so their parameters leave the optimizer and
    the saved state. ``keep`` of every part leaves ``kernel`` as it is."""
    total = top_sum(kernel)
    if total is None:
        if tuple(keep) != (0,):
            raise ValueError(f"keep: the kernel is not a sum (one part, position 0); got {tuple(keep)}")
        return kernel
    n = len(total.kernels)
    keep = tuple(keep)
    if not keep or len(set(keep)) != len(keep) or any(not 0 <= i < n for i in keep):
        raise ValueError(f"keep must be distinct positions among the sum's {n} parts; got {keep}")
    if keep != tuple(range(n)):
        total.kernels = torch.nn.ModuleList([total.kernels[i] for i in keep])
    return kernel


def count_hyperparameters(module: torch.nn.Module, exclude: Sequence[torch.nn.Module] = ()) -> int:
    """The number of scalar parameters of ``module`` that are fitted (``requires_grad``), the
    parameters inside ``exclude`` left out (e.g. variational word vectors, integrated out by the
    ELBO); a parameter shared by several sub-modules counts once."""
    skip = {id(p) for m in exclude for p in m.parameters()}
    seen: set[int] = set()
    total = 0
    for p in module.parameters():
        if p.requires_grad and id(p) not in skip and id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def occam_score(log_evidence: float, n_hyperparameters: int, n: int) -> float:
    r"""The evidence with BIC's Occam factor: ``log_evidence`` :math:`- \frac k2 \log n` (module docstring)."""
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    if n_hyperparameters < 0:
        raise ValueError(f"n_hyperparameters must be non-negative; got {n_hyperparameters}")
    return float(log_evidence) - 0.5 * n_hyperparameters * math.log(n)
