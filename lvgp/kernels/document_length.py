r"""A rank-one kernel on document lengths, to undo LDK's length normalization in part.

The kernel mean embedding averages over a document's words, so GP-LVSM with a linear
level-2 kernel models :math:`f(D) = \frac{1}{|D|}\sum_{v \in D} g(\mathbf x_v)`: two
sentiment words in a long review count as much as one in a short one. Multiplying LDK by

.. math:: k_\ell(D_i, D_j) = (|D_i|\,|D_j|)^{p}, \qquad 0 \le p \le 1,

rescales the embeddings to :math:`|D|^{p}\, m(\mathbf X)`: ``p = 0`` is the thesis's mean
embedding, ``p = 1`` the sum of the words' features, and a learned ``p`` lets the marginal
likelihood choose. The product is positive semi-definite (a Schur product with a rank-one
PSD kernel). Not in the papers: an lvgp extension, off in ``GPLVSMRegressor`` by default.
"""

from __future__ import annotations

from typing import Any

from gpytorch.constraints import Interval
from gpytorch.kernels import Kernel
from gpytorch.priors import Prior
from torch import Tensor

from ..bow.padded import check_padded, document_lengths, pad_to_common_width
from ._hyper import constrained_property, register_constrained


class DocumentLengthKernel(Kernel):
    r""":math:`k(D_i, D_j) = (|D_i||D_j|)^p` on padded word-index sets (``|D|`` counts repeats).

    Args:
        exponent: initial :math:`p`.
        exponent_constraint: default ``Interval(0, 1)``.
        exponent_prior: optional gpytorch prior on :math:`p`.
    """

    has_lengthscale = False
    #: padding-only rows are documents of length 0, whose value is :math:`0^p = 0`, rather than an error
    #: (:func:`~lvgp.kernels.document.allow_empty_documents` sets it, as on the document kernels beside it)
    allow_empty: bool = False

    def __init__(
        self,
        exponent: float = 0.5,
        exponent_constraint: Interval | None = None,
        exponent_prior: Prior | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        register_constrained(
            self, "exponent", exponent, exponent_constraint or Interval(0.0, 1.0), exponent_prior, self.batch_shape
        )

    exponent = constrained_property("exponent", "The exponent p, shape ``batch_shape``.")

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Tensor:
        check_padded(x1, "x1", allow_empty=self.allow_empty)
        check_padded(x2, "x2", allow_empty=self.allow_empty)
        p = self.exponent.view(*self.batch_shape, 1)
        dtype = self.raw_exponent.dtype
        l1 = document_lengths(x1).to(dtype).pow(p)  # 0 at the empty set (p > 0; torch's gradient in p is 0 there)
        l2 = document_lengths(x2).to(dtype).pow(p)
        if diag:
            return l1 * l2
        return l1.unsqueeze(-1) * l2.unsqueeze(-2)

    def __call__(self, x1: Tensor, x2: Tensor | None = None, diag: bool = False, **params: Any) -> Any:
        if x2 is not None and x1.shape[-1] != x2.shape[-1]:
            x1, x2 = pad_to_common_width(x1, x2)
        return super().__call__(x1, x2, diag=diag, **params)
