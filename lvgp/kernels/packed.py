r"""Documents that carry two inputs through gpytorch: their encoder features and their word-index
set, packed into one tensor (issue 37).

gpytorch's ``ExactGP`` keeps its training inputs as tensors and concatenates the training and test
inputs at prediction; a kernel is called with one tensor per side. A document with a sentence
encoder's vector (``d`` floats, :mod:`lvgp.encoders.sentence`) and a padded word-index set (``L`` ids) is one
float64 row ``[features | word ids]`` (:func:`pack_documents`): word ids below :math:`2^{53}` are
exact in float64 and :data:`lvgp.PAD` stays ``-1``. The features come first, at a fixed width
``d``, and the word ids last, so that :class:`lvgp.PaddedExactGP` pads packed documents of
different widths as it pads word-index sets (padding with ``PAD`` on the right).

Each part of a kernel reads its own columns, and the parts compose as gpytorch kernels do:

* :class:`FeatureKernel` -- any gpytorch kernel on :math:`\mathbb R^d` (``LinearKernel``,
  ``RBFKernel``, ``MaternKernel``) on the features, L2-normalized or not (the linear kernel of
  normalized vectors is the cosine kernel);
* :class:`WordSetKernel` -- a kernel over padded word-index sets
  (:class:`~lvgp.kernels.BagOfWordsKernel`, :class:`~lvgp.LatentDistributionKernel`) on the word ids.

Example (the three-part kernel: bag of words, LDK and encoder, each with its own scale)::

    x = pack_documents(vocab.encode(texts), encoder.encode(texts))
    d = encoder.dim
    covar = (
        ScaleKernel(WordSetKernel(BagOfWordsKernel(len(vocab)), d))
        + ScaleKernel(WordSetKernel(LatentDistributionKernel(len(vocab), 2), d))
        + ScaleKernel(FeatureKernel(RBFKernel(), d))
    )
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch
from gpytorch.kernels import Kernel
from linear_operator.operators import LinearOperator
from torch import Tensor

from ..base.constraints import Constraint
from ..bow.padded import PAD, check_padded, document_lengths, pad_to_common_width, padded_source
from .document import DocumentKernel

__all__ = [
    "ENCODER_KERNELS",
    "EncoderKernelArgument",
    "FeatureKernel",
    "WordSetKernel",
    "beside_encoder",
    "encoder_kernel_parts",
    "encoder_part",
    "fresh_encoder_kinds",
    "pack_documents",
    "packed_widths",
    "unpack_documents",
]

#: float64 holds every integer up to this exactly
_EXACT_IDS = 2**53


def pack_documents(padded: Tensor, features: Tensor) -> Tensor:
    r"""``[features | word ids]`` as one float64 tensor: ``*B x n x L`` padded word-index sets and
    ``*B x n x d`` features -> ``*B x n x (d + L)``.

    Raises:
        TypeError: ``padded`` is not an integer tensor, or ``features`` not a floating one.
        ValueError: the two disagree on the number of documents (both counts named), a feature is
            not finite (the rows named), or a word id is beyond float64's exact integers.
    """
    if not torch.is_tensor(padded) or padded.dtype.is_floating_point or padded.dtype == torch.bool:
        raise TypeError(f"padded must be an integer tensor of word ids; got {getattr(padded, 'dtype', type(padded))}")
    if not torch.is_tensor(features) or not features.dtype.is_floating_point:
        raise TypeError(f"features must be a floating tensor; got {getattr(features, 'dtype', type(features))}")
    if padded.dim() < 2 or features.dim() != padded.dim() or features.shape[:-1] != padded.shape[:-1]:
        raise ValueError(
            f"padded (shape {tuple(padded.shape)}) and features (shape {tuple(features.shape)}) must hold the same "
            "documents: ... x n x L and ... x n x d"
        )
    finite = torch.isfinite(features).all(-1)
    if not finite.all():
        rows = torch.nonzero(~finite.reshape(-1)).flatten()[:10].tolist()
        raise ValueError(f"features has NaN or infinite values in rows {rows}")
    if padded.numel() and int(padded.max()) >= _EXACT_IDS:
        raise ValueError("padded holds word ids beyond 2**53, which float64 does not hold exactly")
    return torch.cat([features.to(torch.float64), padded.to(torch.float64)], dim=-1)


def unpack_documents(x: Tensor, feature_dim: int) -> tuple[Tensor, Tensor]:
    """The padded word-index sets (``*B x n x L`` long) and features (``*B x n x d``) of packed
    documents ``x`` (:func:`pack_documents`)."""
    if x.shape[-1] <= feature_dim:
        raise ValueError(
            f"packed documents of width {x.shape[-1]} hold no word ids beside {feature_dim} features "
            "(pack_documents(padded, features) makes them)"
        )
    return x[..., feature_dim:].long(), x[..., :feature_dim]


def packed_widths(x: Tensor, feature_dim: int) -> Tensor:
    """The columns each packed document ``x`` (``n x (d + L)``, :func:`pack_documents`) needs: its ``d``
    features and its words, at least one word column (a document of no known word keeps one ``PAD``, so
    that a batch of such documents cut to its widest, :func:`~lvgp.bow.padded.documents_at`, is still
    packed). ``n`` int64; the features are never read as padding, whatever their values."""
    return document_lengths(x[..., feature_dim:]).clamp_min(1) + feature_dim


def _check_feature_dim(feature_dim: Any) -> int:
    if isinstance(feature_dim, bool) or not isinstance(feature_dim, int) or feature_dim < 1:
        raise ValueError(f"feature_dim must be a positive integer (the encoder's dimension); got {feature_dim!r}")
    return feature_dim


def _check_packed(x: Tensor, name: str, feature_dim: int) -> None:
    if not torch.is_tensor(x) or not x.dtype.is_floating_point:
        raise TypeError(
            f"{name} must be packed documents, a floating tensor [features | word ids] (pack_documents); "
            f"got {getattr(x, 'dtype', type(x))}"
        )
    if x.shape[-1] <= feature_dim:
        raise ValueError(
            f"{name} has {x.shape[-1]} columns: packed documents hold {feature_dim} features and at least one word id"
        )


class _PackedKernel(Kernel):
    """Calls pad packed documents of different widths to a common width first (as
    :class:`~lvgp.kernels.DocumentKernel` pads word-index sets): gpytorch's ``Kernel.__call__``
    needs one width. Wrapped in ``ScaleKernel`` or a sum, pad them yourself
    (:func:`lvgp.pad_to_common_width`), or use :class:`lvgp.PaddedExactGP`, which does."""

    def __call__(self, x1: Tensor, x2: Tensor | None = None, diag: bool = False, **params: Any) -> Any:
        if x2 is not None and torch.is_tensor(x1) and torch.is_tensor(x2) and x1.shape[-1] != x2.shape[-1]:
            x1, x2 = pad_to_common_width(x1, x2)
        return super().__call__(x1, x2, diag=diag, **params)


class FeatureKernel(_PackedKernel):
    r"""``base`` on the feature columns of packed documents (module docstring).

    Args:
        base: a gpytorch kernel on :math:`\mathbb R^d` (``LinearKernel``, ``RBFKernel``,
            ``MaternKernel``, ...; no output scale: wrap this kernel in ``ScaleKernel``).
        feature_dim: ``d``, the number of feature columns.
        normalize: L2-normalize the features first (the encoders of :mod:`lvgp.encoders.sentence` return
            unit vectors already; ``LinearKernel`` on unit vectors is the cosine kernel).

    Shapes: ``x1``: ``... x n1 x (d + L1)``, ``x2``: ``... x n2 x (d + L2)`` -> ``... x n1 x n2``.
    """

    has_lengthscale = False

    def __init__(self, base: Kernel, feature_dim: int, *, normalize: bool = False, **kwargs: Any) -> None:
        if not isinstance(base, Kernel):
            raise TypeError(f"base must be a gpytorch Kernel on the features; got {type(base).__name__}")
        kwargs.setdefault("batch_shape", base.batch_shape)
        super().__init__(**kwargs)
        self.base = base
        self.feature_dim = _check_feature_dim(feature_dim)
        self.normalize = bool(normalize)

    @property
    def is_stationary(self) -> bool:
        return bool(self.base.is_stationary)

    def features(self, x: Tensor, name: str = "x") -> Tensor:
        """The (normalized) feature columns of packed documents ``x``: ``*B x n x d``."""
        _check_packed(x, name, self.feature_dim)
        f = x[..., : self.feature_dim]
        return torch.nn.functional.normalize(f, p=2, dim=-1) if self.normalize else f

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Any:
        f1 = self.features(x1, "x1")
        f2 = f1 if x2 is x1 else self.features(x2, "x2")
        out = self.base.forward(f1, f2, diag=diag, **params)
        # dense: a low-rank Gram (LinearKernel's root, d < n) added to a dense one makes linear_operator
        # Cholesky-factor the dense part (add_low_rank), with jitter warnings where it is singular
        return out.to_dense() if isinstance(out, LinearOperator) else out


class WordSetKernel(_PackedKernel):
    r"""``base`` on the word-index sets of packed documents (module docstring).

    Args:
        base: a kernel over padded word-index sets (:class:`~lvgp.kernels.BagOfWordsKernel`,
            :class:`~lvgp.LatentDistributionKernel`, ...).
        feature_dim: ``d``, the number of feature columns in front of the word ids.

    Shapes: ``x1``: ``... x n1 x (d + L1)``, ``x2``: ``... x n2 x (d + L2)`` -> ``... x n1 x n2``.
    The word ids of the last packed tensors are kept (a small cache keyed by the tensor's
    storage and version), so that an optimizer evaluating the kernel on the same training
    documents at every step hits ``base``'s own cache of document sets.
    """

    has_lengthscale = False

    def __init__(self, base: Kernel, feature_dim: int, **kwargs: Any) -> None:
        if not isinstance(base, Kernel):
            raise TypeError(f"base must be a gpytorch Kernel over word-index sets; got {type(base).__name__}")
        kwargs.setdefault("batch_shape", base.batch_shape)
        super().__init__(**kwargs)
        self.base = base
        self.feature_dim = _check_feature_dim(feature_dim)

    def word_ids(self, x: Tensor, name: str = "x") -> Tensor:
        """The padded word-index sets of packed documents ``x``: ``*B x n x L`` long, checked
        (ids below the kernel's ``num_words``; :data:`~lvgp.PAD` pads). For a copy that
        :func:`~lvgp.pad_to_width` padded (:func:`~lvgp.bow.padded.padded_source`), its source's
        word ids, as wide as the source's (padding changes no kernel value)."""
        _check_packed(x, name, self.feature_dim)
        source = padded_source(x)
        if source is not None:
            return self.word_ids(source, name)
        key = (x.untyped_storage().data_ptr(), x.storage_offset(), tuple(x.stride()), tuple(x.shape), x._version)
        cache = self.__dict__.setdefault("_word_ids", OrderedDict())
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit[1]
        columns = x[..., self.feature_dim :]
        ids = columns.long()
        if not torch.equal(ids.to(columns.dtype), columns):
            rows = torch.nonzero((ids.to(columns.dtype) != columns).any(-1).reshape(-1)).flatten()[:10].tolist()
            raise ValueError(
                f"{name} has word ids that are not integers in rows {rows}: were they packed with features?"
            )
        if isinstance(self.base, DocumentKernel):
            # a document with no known word is still a document beside the encoder's part: the word
            # kernel gives it its empty-set value (the zero mean embedding: 0 at a linear or cosine
            # level 2, exp(-gamma ||m||^2) at an RBF one)
            check_padded(ids, name, self.base.num_words, allow_empty=True)
        elif (ids < PAD).any():
            raise ValueError(f"{name} has word ids below PAD ({PAD})")
        cache[key] = (x, ids)
        while len(cache) > 4:
            cache.popitem(last=False)
        return ids

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_word_ids", None)
        return state

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Any:
        w1 = self.word_ids(x1, "x1")
        w2 = w1 if x2 is x1 else self.word_ids(x2, "x2")
        if w1.shape[-1] != w2.shape[-1]:
            w1, w2 = pad_to_common_width(w1, w2)
        return self.base.forward(w1, w2, diag=diag, **params)


#: the encoder parts :func:`encoder_part` builds
ENCODER_KERNELS = ("cosine", "rbf", "matern")
#: the encoder parts with a length-scale (``encoder_part(lengthscale=...)``)
STATIONARY_ENCODER_KERNELS = ("rbf", "matern")


def encoder_kernel_parts(kind: Any) -> list:
    """The parts of an ``encoder_kernel`` value as a list: a list or tuple's items, or the single name or kernel."""
    return list(kind) if isinstance(kind, (list, tuple)) else [kind]


class EncoderKernelArgument(Constraint):
    r"""The constraint of the estimators' ``encoder_kernel=`` (``lvgp.base.constraints``): a name of
    :data:`~lvgp.kernels.packed.ENCODER_KERNELS`, a gpytorch ``Kernel`` instance on :math:`\mathbb R^d` (it is
    copied at every fit: fitting never changes the parameter), or a non-empty list or tuple of those (one encoder
    part each, each with its own weight: :func:`beside_encoder`)."""

    def accepts_type(self, value: Any) -> bool:
        items = encoder_kernel_parts(value)
        return all(isinstance(one, (str, Kernel)) for one in items)

    def problem(self, value: Any) -> str | None:
        items = encoder_kernel_parts(value)
        if not items:
            return "a non-empty list"
        names = [one for one in items if isinstance(one, str)]
        return None if all(one in ENCODER_KERNELS for one in names) else self.describe()

    def describe(self) -> str:
        return (
            f"one of {ENCODER_KERNELS}, a gpytorch Kernel instance on the encoder's vectors, or a non-empty list of "
            "those"
        )


def fresh_encoder_kinds(kind: str | Kernel | Sequence[str | Kernel]) -> tuple[str | Kernel, ...]:
    """``encoder_kernel``'s parts as a tuple, a gpytorch ``Kernel`` among them deep-copied (a fit moves its
    copy's parameters, never the user's object; each call gives new copies, so that no two models share
    one)."""
    import copy

    return tuple(copy.deepcopy(one) if isinstance(one, Kernel) else one for one in encoder_kernel_parts(kind))


def encoder_part(
    kind: str | Kernel,
    feature_dim: int,
    *,
    weight: float = 1.0,
    weight_prior_sd: float | None = 0.5,
    fit_weight: bool = True,
    lengthscale: float | None = None,
) -> Kernel:
    r"""The encoder's part of a composed kernel over packed documents, with its own weight
    :math:`\mu`: ``"cosine"`` -- :math:`\mu\,\langle e_i, e_j\rangle / \|e_i\|\|e_j\|` (the linear kernel of the
    normalized vectors, its variance the weight); ``"rbf"`` / ``"matern"`` (5/2) -- :math:`\mu` times
    the kernel of the normalized vectors (``ScaleKernel``); a gpytorch ``Kernel`` on :math:`\mathbb R^d`
    (e.g. a :class:`~lvgp.kernels.ClusterKernel` of the unlabelled texts' vectors) -- :math:`\mu`
    times that kernel of the normalized vectors.

    Args:
        weight: :math:`\mu`'s start (e.g. where both parts weigh alike on the training documents).
        weight_prior_sd: a log-normal prior on :math:`\mu` with median ``weight`` and this sd of
            :math:`\log\mu` (``None``: no prior), as the LDK+BoW classifier's prior on its identity
            weight: with few documents the marginal likelihood can switch a part off.
        fit_weight: ``False``: :math:`\mu` stays at ``weight`` (its raw parameter does not require a
            gradient, so no fit moves it); the part's other parameters (an RBF's length-scale) are fitted.
        lengthscale: ``"rbf"`` / ``"matern"``: the length-scale held at this value (not fitted; ``None``: fitted
            from gpytorch's start). On unit vectors the RBF with length-scale 1 is :math:`\exp(\cos - 1)`.
    """
    from gpytorch.kernels import LinearKernel, MaternKernel, RBFKernel, ScaleKernel
    from gpytorch.priors import LogNormalPrior

    if not isinstance(kind, Kernel) and kind not in ENCODER_KERNELS:
        raise ValueError(f"encoder_kernel must be one of {ENCODER_KERNELS} or a gpytorch Kernel; got {kind!r}")
    if not (isinstance(weight, (int, float)) and weight > 0 and weight < float("inf")):
        raise ValueError(f"weight must be a positive finite number; got {weight!r}")
    if lengthscale is not None:
        if kind not in STATIONARY_ENCODER_KERNELS:
            raise ValueError(f"lengthscale fixes the length-scale of an 'rbf' or 'matern' part; got kind={kind!r}")
        if not (isinstance(lengthscale, (int, float)) and 0 < lengthscale < float("inf")):
            raise ValueError(f"lengthscale must be a positive finite number or None; got {lengthscale!r}")
    prior = None if weight_prior_sd is None else LogNormalPrior(float(torch.log(torch.tensor(weight))), weight_prior_sd)
    if isinstance(kind, str) and kind == "cosine":
        base = LinearKernel(variance_prior=prior)
        base.variance = torch.tensor(float(weight))
        base.raw_variance.requires_grad_(bool(fit_weight))
        return FeatureKernel(base, feature_dim, normalize=True)
    inner = kind if isinstance(kind, Kernel) else RBFKernel() if kind == "rbf" else MaternKernel(nu=2.5)
    if lengthscale is not None:
        inner.lengthscale = float(lengthscale)
        inner.raw_lengthscale.requires_grad_(False)
    part = ScaleKernel(FeatureKernel(inner, feature_dim, normalize=True), outputscale_prior=prior)
    part.outputscale = torch.tensor(float(weight))
    part.raw_outputscale.requires_grad_(bool(fit_weight))
    return part


def beside_encoder(
    word_kernel: Kernel,
    word_ids: Tensor,
    feature_dim: int,
    kind: str | Kernel | Sequence[str | Kernel],
    *,
    fit_weights: bool = True,
    lengthscale: float | None = None,
) -> Kernel:
    r"""``word_kernel`` on the word ids of packed documents plus the encoder's part
    (:func:`encoder_part`), :math:`\mu` starting where both parts weigh alike: the mean
    self-similarity of ``word_kernel`` on the training documents ``word_ids`` (the encoder's parts
    have unit self-similarity on normalized vectors). What the estimators' ``sentence_encoder=``
    builds around their spec's kernel. Documents without a word (texts the encoder reads alone) are
    left out of that mean; without any document with a word, :math:`\mu` starts at 1. Several
    ``kind``\ s: one encoder part each, each with its own weight starting there. ``fit_weights=False``: the
    weights stay there (:func:`encoder_part`'s ``fit_weight``): both parts weigh alike whatever the evidence
    prefers; ``lengthscale``: the ``"rbf"`` / ``"matern"`` parts' length-scale held there (with the weight held
    and the length-scale free, the evidence can switch an RBF part off by a long length-scale instead)."""
    with_words = word_ids[(word_ids != PAD).any(-1)]
    balance = 1.0
    if len(with_words):
        with torch.no_grad():
            balance = float(word_kernel(with_words, diag=True).mean())
    kinds = encoder_kernel_parts(kind)
    if not kinds:
        raise ValueError("kind must name at least one encoder part")
    total: Kernel = WordSetKernel(word_kernel, feature_dim)
    for one in kinds:
        fixed = lengthscale if isinstance(one, str) and one in STATIONARY_ENCODER_KERNELS else None
        total = total + encoder_part(one, feature_dim, weight=balance, fit_weight=fit_weights, lengthscale=fixed)
    return total
