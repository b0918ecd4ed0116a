r"""The bag-of-words kernel: documents compared through their (idf-)weighted word measures.

A document :math:`D_i` is the normalized measure :math:`\phi_i` of its words,
:math:`\phi_{iv} = \mathrm{count}_{iv} w_v / \sum_{v'} \mathrm{count}_{iv'} w_{v'}` with uniform
weights (term frequencies, L1-normalized) or inverse document frequencies :math:`w_v` (tf-idf,
L1-normalized). Two documents are compared by a level-2 kernel (:mod:`lvgp.kernels.level2`) of
:math:`\langle\phi_i,\phi_j\rangle`: ``"linear"`` is :math:`\langle\phi_i,\phi_j\rangle` itself, ``"cosine"``
is the cosine of the two tf(-idf) vectors -- scikit-learn's ``TfidfVectorizer`` followed by
``normalize`` and a linear kernel --, ``"rbf"`` and ``"poly"`` act on the same inner products.

It is the latent distribution kernel whose word kernel is the identity
(:class:`~lvgp.LatentDistributionKernel` with ``identity_weight`` and no latent part), on its own,
so that it composes like any gpytorch kernel::

    ScaleKernel(BagOfWordsKernel(V, word_weights=idf)) + ScaleKernel(LatentDistributionKernel(V, q))

Cost: a sparse product of the documents' weight matrices,
:math:`O(\sum_v \mathrm{df}^{(1)}_v \mathrm{df}^{(2)}_v)`; no ``V x V`` matrix and no parameters.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .._typing import TensorLike
from ..base.validation import check_number
from ..bow.padded import PAD, check_padded
from . import mean_embedding as me
from .document import DocumentKernel
from .level2 import LEVEL2_KERNELS, Level2Kernel

__all__ = ["BagOfWordsKernel"]


class BagOfWordsKernel(DocumentKernel):
    r"""Kernel between documents as their tf or tf-idf word measures (module docstring).

    Args:
        num_words: vocabulary size :math:`V` (word ids in ``[0, V)``).
        level2: ``"linear"`` (:math:`\langle\phi_i,\phi_j\rangle`), ``"cosine"`` (the cosine of the
            tf(-idf) vectors), ``"rbf"``, ``"poly"``, or a :class:`~lvgp.kernels.level2.Level2Kernel`.
        word_weights: ``None`` (term frequencies) or ``num_words`` positive weights, e.g.
            :func:`lvgp.bow.weighting.idf_weights` of the training documents (tf-idf).
        sublinear_tf: a word's count :math:`c` in a document enters as :math:`1 + \ln c` (scikit-learn's
            ``TfidfVectorizer(sublinear_tf=True)``): a word repeated ten times weighs 3.3 times a word
            said once, not ten times.
        **options: the level-2 kernel's hyper-parameters (``zeta``, ``c``, ``d`` and their
            ``*_prior``, ``*_constraint``) and gpytorch's ``batch_shape``, ``active_dims``, ``eps``.

    Example:
        >>> import torch
        >>> x = torch.tensor([[0, 1, 1], [1, 2, -1]])  # two documents, -1 = PAD
        >>> BagOfWordsKernel(3, "cosine")(x).to_dense()  # the cosine of the counts (1, 2, 0) and (0, 1, 1)
        tensor([[1.0000, 0.6325],
                [0.6325, 1.0000]])
    """

    def __init__(
        self,
        num_words: int,
        level2: str | Level2Kernel = "linear",
        *,
        word_weights: TensorLike | None = None,
        sublinear_tf: bool = False,
        **options: Any,
    ) -> None:
        check_number("num_words", num_words, integer=True, minimum=1)
        if not isinstance(sublinear_tf, bool):
            raise TypeError(f"sublinear_tf must be True or False; got {sublinear_tf!r}")
        level2_names = {name for cls in LEVEL2_KERNELS.values() for name in cls.options}
        unknown = set(options) - level2_names - {"batch_shape", "active_dims", "eps"}
        if unknown:
            raise TypeError(f"BagOfWordsKernel got unknown arguments {sorted(unknown)}")
        super().__init__(
            level2,
            level2_options={k: v for k, v in options.items() if k in level2_names},
            **{k: v for k, v in options.items() if k not in level2_names},
        )
        self._num_words = int(num_words)
        # dtype and device of the kernel's values (moves with .double(), .to(...); not saved)
        self.register_buffer("_probe", torch.zeros(()), persistent=False)
        self._set_word_weights(word_weights, self._num_words)
        self.sublinear_tf = sublinear_tf

    @property
    def num_words(self) -> int:
        return self._num_words

    def _weights_setting(self) -> tuple:
        return (*super()._weights_setting(), self.sublinear_tf)  # the counts decide the weights too

    def _weights(self, x: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        r"""The documents' token weights (:meth:`DocumentKernel._weights`); with ``sublinear_tf`` each token
        of a word said :math:`c` times in its document weighs :math:`(1 + \ln c) / c` of it, so that the
        word's bag entry is :math:`(1 + \ln c)\,w_v`, L1-normalized again."""
        ids, weights = super()._weights(x, dtype)
        if not self.sublinear_tf or x.numel() == 0:
            return ids, weights
        row = torch.arange(x[..., 0].numel(), device=x.device).view(x.shape[:-1]).unsqueeze(-1)  # batches too
        key = torch.where(x != PAD, row * (self.num_words + 1) + x + 1, 0)  # padding: key 0, weight 0
        _, position, counts = torch.unique(key, return_inverse=True, return_counts=True)
        c = counts[position].to(dtype)
        weights = weights * (1 + torch.log(c)) / c
        return ids, weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)

    def _forward_state(self) -> Tensor:
        return self._probe

    def mean_embedding_gram(
        self, x1: Tensor, x2: Tensor, symmetric: bool = False, latent: Tensor | None = None
    ) -> Tensor:
        return self._bag_of_words_inner_products().gram(x1, x2, symmetric, self._probe)

    def paired_inner(self, x1: Tensor, x2: Tensor, latent: Tensor | None = None) -> Tensor:
        return self._bag_of_words_inner_products().paired(x1, x2, self._probe)

    def self_inner(self, x: Tensor, latent: Tensor | None = None) -> Tensor:
        return self._bag_of_words_inner_products().norms(x, self._probe)

    def features(self, x: Tensor) -> Tensor:
        """The documents' weighted word measures :math:`\\phi` as a sparse ``n x num_words`` tensor."""
        check_padded(x, "x", self.num_words, allow_empty=True)
        if x.dim() != 2:
            raise ValueError(f"x must be an (n x L) padded tensor; got shape {tuple(x.shape)}")
        ids, w = self._weights(x.long(), self._probe.dtype)
        b = me.bags(ids, w)
        index = torch.stack([b.rows(), b.words])
        return torch.sparse_coo_tensor(index, b.weights, (x.shape[0], self.num_words), check_invariants=False)

    def extra_repr(self) -> str:
        weights = "tf-idf" if self.word_weights is not None else "tf"
        return f"num_words={self.num_words}, {'sublinear ' if self.sublinear_tf else ''}{weights}"
