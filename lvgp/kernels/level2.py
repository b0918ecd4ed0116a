r"""Level-2 kernels: how :class:`~lvgp.LatentDistributionKernel` compares two documents' kernel
mean embeddings :math:`\mu_i, \mu_j` (thesis eqs. 3.9-3.11).

Each level-2 kernel is a function of the inner product :math:`\langle\mu_i,\mu_j\rangle` and, for
some, the squared norms :math:`\|\mu_i\|^2, \|\mu_j\|^2`, applied elementwise by broadcasting:
``inner`` is ``... x n1 x n2``, ``s1`` is ``... x n1 x 1`` and ``s2`` is ``... x 1 x n2`` (the
diagonal path passes ``... x n x 1`` tensors and drops the last dimension), so one
:meth:`Level2Kernel.forward` serves the full Gram, a cross-Gram and ``diag=True``.

* :class:`LinearLevel2` -- :math:`\langle\mu_i,\mu_j\rangle` (eq. 3.9);
* :class:`PolyLevel2` -- :math:`(\langle\mu_i,\mu_j\rangle + c)^d` (eq. 3.10);
* :class:`RBFLevel2` -- :math:`\exp(-\frac\zeta2\|\mu_i - \mu_j\|^2)` (eq. 3.11);
* :class:`CosineLevel2` -- :math:`\langle\mu_i,\mu_j\rangle / (\|\mu_i\|\,\|\mu_j\|)` (not in the
  thesis; the mean embeddings' analogue of L2-normalized tf vectors).

Adding one: a subclass with ``name``, ``options`` (its keyword arguments, which the LDK routes
to it), ``needs_norms`` and its hyper-parameters registered in ``__init__`` (with the kernel's
``batch_shape``), then a row in :data:`LEVEL2_KERNELS` and in the loop reference
(``tests/reference.py``); the LDK's tests iterate over :data:`LEVEL2_KERNELS`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gpytorch
import torch
from gpytorch.constraints import Interval, Positive
from gpytorch.priors import Prior
from torch import Tensor

from ._hyper import BatchedTensorsMixin, check_degree, constrained_property, register_constrained

__all__ = ["Level2Kernel", "LinearLevel2", "PolyLevel2", "RBFLevel2", "CosineLevel2", "LEVEL2_KERNELS"]


class _InverseNorm(torch.autograd.Function):
    r""":math:`r = 1/\sqrt s` for :math:`s > 0` and 0 for :math:`s \le 0`, with the backward
    :math:`\partial r/\partial s = -r^3/2` evaluated as ``((grad * r) * r) * r``: :math:`r^3` alone
    overflows for squared norms below about 1e-26 in float32, where ``grad * r`` is small."""

    @staticmethod
    def forward(ctx: Any, squared_norm: Tensor) -> Tensor:
        positive = squared_norm > 0
        r = torch.where(positive, squared_norm.clamp_min(torch.finfo(squared_norm.dtype).tiny).rsqrt(), 0.0)
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        (r,) = ctx.saved_tensors
        return -0.5 * ((grad * r) * r) * r


def inverse_norm(squared_norm: Tensor) -> Tensor:
    r""":math:`1/\|\mu\|` from :math:`\langle\mu,\mu\rangle`, 0 for a zero embedding (its cosine with
    anything is then 0, as for scikit-learn's normalized zero vectors); gradients finite down to the
    dtype's smallest squared norms (:class:`_InverseNorm`)."""
    return _InverseNorm.apply(squared_norm)


class Level2Kernel(BatchedTensorsMixin, gpytorch.Module):
    """Base class (module docstring). ``batch_shape``: the LDK's; hyper-parameters have this shape."""

    #: the name the LDK's ``level2=`` argument knows it by
    name: ClassVar[str]
    #: keyword arguments of ``__init__`` that the LDK routes here from its own keywords
    options: ClassVar[tuple[str, ...]] = ()
    #: the kernel depends on the documents' squared norms (the LDK computes them only then)
    needs_norms: ClassVar[bool] = False
    #: every document's self-similarity is 1, whatever its embedding (``diag=True`` of a set
    #: with itself needs no computation)
    unit_diagonal: ClassVar[bool] = False
    #: squared norms below the kernel's rounding floor are set to 0 before this kernel sees them
    floors_norms: ClassVar[bool] = False

    def __init__(self, batch_shape: torch.Size = torch.Size()) -> None:
        super().__init__()
        self.batch_shape = torch.Size(batch_shape)

    def _hyper(self, name: str) -> Tensor:
        """Hyper-parameter viewed with two trailing singleton dims, to broadcast with ``inner``."""
        value = getattr(self, name)
        return value.view(*value.shape, 1, 1)

    def forward(self, inner: Tensor, s1: Tensor | None, s2: Tensor | None) -> Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return self.name


class LinearLevel2(Level2Kernel):
    r""":math:`K(i, j) = \langle\mu_i,\mu_j\rangle` (eq. 3.9)."""

    name = "linear"

    def forward(self, inner: Tensor, s1: Tensor | None, s2: Tensor | None) -> Tensor:
        return inner


class PolyLevel2(Level2Kernel):
    r""":math:`K(i, j) = (\langle\mu_i,\mu_j\rangle + c)^d` (eq. 3.10).

    Args:
        c: the bias (initial value); d: the degree (a fixed positive integer, not trained).
        c_prior: optional gpytorch prior; c_constraint: default :class:`~gpytorch.constraints.Positive`.
    """

    name = "poly"
    options = ("c", "d", "c_prior", "c_constraint")
    c = constrained_property("c", "Polynomial level-2 bias (eq. 3.10), shape ``batch_shape``.")

    def __init__(
        self,
        c: float = 1.0,
        d: int = 2,
        c_prior: Prior | None = None,
        c_constraint: Interval | None = None,
        batch_shape: torch.Size = torch.Size(),
    ) -> None:
        super().__init__(batch_shape)
        self.d = d
        register_constrained(self, "c", c, c_constraint or Positive(), c_prior, self.batch_shape)

    @property
    def d(self) -> int:
        """Polynomial level-2 degree (eq. 3.10); fixed, not trained."""
        return self._d

    @d.setter
    def d(self, value: int) -> None:
        self._d = check_degree("d", value)

    def forward(self, inner: Tensor, s1: Tensor | None, s2: Tensor | None) -> Tensor:
        return (inner + self._hyper("c")).pow(self.d)


class RBFLevel2(Level2Kernel):
    r""":math:`K(i, j) = \exp(-\frac\zeta2\{\|\mu_i\|^2 - 2\langle\mu_i,\mu_j\rangle + \|\mu_j\|^2\})` (eq. 3.11).

    Args:
        zeta: the bandwidth :math:`\zeta > 0` (initial value).
        zeta_prior: optional gpytorch prior; zeta_constraint: default :class:`~gpytorch.constraints.Positive`.
    """

    name = "rbf"
    options = ("zeta", "zeta_prior", "zeta_constraint")
    needs_norms = True
    unit_diagonal = True
    zeta = constrained_property("zeta", "RBF level-2 bandwidth (eq. 3.11), shape ``batch_shape``.")

    def __init__(
        self,
        zeta: float = 1.0,
        zeta_prior: Prior | None = None,
        zeta_constraint: Interval | None = None,
        batch_shape: torch.Size = torch.Size(),
    ) -> None:
        super().__init__(batch_shape)
        register_constrained(self, "zeta", zeta, zeta_constraint or Positive(), zeta_prior, self.batch_shape)

    def forward(self, inner: Tensor, s1: Tensor | None, s2: Tensor | None) -> Tensor:
        assert s1 is not None and s2 is not None
        return torch.exp(-0.5 * self._hyper("zeta") * (s1 + s2 - 2 * inner).clamp_min(0))


class CosineLevel2(Level2Kernel):
    r""":math:`K(i, j) = \langle\mu_i,\mu_j\rangle / (\|\mu_i\|\,\|\mu_j\|)`: the linear kernel normalized
    (not in the thesis). With the linear level-2 kernel a document's norm shrinks with its number of
    distinct words, so long documents get small kernel values; this one compares directions only."""

    name = "cosine"
    needs_norms = True
    #: squared norms that are rounding noise (an embedding that cancels out) count as zero
    floors_norms = True

    def forward(self, inner: Tensor, s1: Tensor | None, s2: Tensor | None) -> Tensor:
        assert s1 is not None and s2 is not None
        return inner * inverse_norm(s1) * inverse_norm(s2)


#: the built-in level-2 kernels by name (``LatentDistributionKernel(level2=name)``)
LEVEL2_KERNELS: dict[str, type[Level2Kernel]] = {
    cls.name: cls for cls in (LinearLevel2, PolyLevel2, RBFLevel2, CosineLevel2)
}


def make_level2(level2: str | Level2Kernel, batch_shape: torch.Size, options: dict[str, Any]) -> Level2Kernel:
    """The level-2 object ``level2`` names (built from the ``options`` it accepts), or ``level2`` itself."""
    if isinstance(level2, Level2Kernel):
        return level2
    if not isinstance(level2, str) or level2 not in LEVEL2_KERNELS:
        raise ValueError(f"level2 must be one of {tuple(LEVEL2_KERNELS)} or a Level2Kernel; got {level2!r}")
    cls = LEVEL2_KERNELS[level2]
    return cls(**{k: v for k, v in options.items() if k in cls.options}, batch_shape=batch_shape)
