r"""Latent word vectors: what a :class:`~lvgp.LatentDistributionKernel` embeds documents with.

Every word :math:`v` of a vocabulary of size :math:`V` has a latent vector
:math:`\mathbf x_v \in \mathbb R^q`. How the vectors are estimated is a choice separate from the
kernel, in the pattern of gpytorch's ``PointLatentVariable`` / ``MAPLatentVariable`` /
``VariationalLatentVariable`` (``gpytorch/models/gplvm/latent_variable.py``):

* :class:`PointWordVectors` -- free parameters, no prior (maximum likelihood);
* :class:`MAPWordVectors` -- free parameters with the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)`
  of the GP-LVSM paper (eq. 11) and the thesis (eq. 4.18a, 6.6), registered as the gpytorch prior
  ``latent_prior`` (so ``ExactMarginalLogLikelihood`` adds it) and available as
  :meth:`~WordVectors.penalty` (:math:`\frac\rho2\sum_v\|\mathbf x_v\|^2`) for objectives that are not
  gpytorch likelihoods (latent SMM, matching);
* :class:`VariationalWordVectors` -- a factorized Gaussian :math:`q(\mathbf X)`, sampled by
  reparameterization at every training evaluation, whose KL to the prior is registered as a
  gpytorch added loss term (the Bayesian GP-LVM's treatment).

Each variant can be **tied to pretrained word embeddings** :math:`\mathbf e_v \in \mathbb R^h`
(``word_features``): the vector (or posterior mean) is :math:`W\mathbf e_v + \boldsymbol\delta_v` with the
projection :math:`W` (``h x q``) learned and the prior placed on the residual
:math:`\boldsymbol\delta_v`. A word without a pretrained vector has :math:`\mathbf e_v = 0`, i.e. a free
residual. Words never seen in training but with a pretrained vector get
:math:`W\mathbf e_v` -- their posterior mean, since no data moved their residual from the prior's
mean -- inside :meth:`WordVectors.extra_words`.

The vectors a kernel uses are :attr:`WordVectors.vectors` (``*batch_shape x V x q``). One module
can be shared by several kernels (e.g. a sum of two LDKs with different embedding kernels):
gpytorch counts its prior once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any, NamedTuple

import gpytorch
import torch
from gpytorch.constraints import Positive
from gpytorch.mlls import AddedLossTerm
from gpytorch.priors import NormalPrior
from torch import Tensor, nn

from .._random import restored_torch_generator, torch_generator
from .._typing import TensorLike
from ..base.shapes import broadcast_shapes
from ..base.validation import check_number
from ._hyper import BatchedTensorsMixin, constrained_property, get_attribute, register_constrained, set_attribute

__all__ = [
    "WordVectors",
    "PointWordVectors",
    "MAPWordVectors",
    "VariationalWordVectors",
    "make_word_vectors",
    "PROJECTION_INITS",
]

#: how the projection of tied word vectors starts: a Gaussian draw, or the identity
PROJECTION_INITS = ("random", "identity")


def _check_rho(rho: float) -> float:
    rho = float(rho)
    if not rho > 0 or rho == float("inf"):
        raise ValueError(f"rho must be a positive finite precision; got {rho!r}")
    return rho


class WordVectors(BatchedTensorsMixin, gpytorch.Module):
    r"""Base class: ``num_words`` latent vectors of dimension ``latent_dim`` (point estimates).

    Args:
        num_words: vocabulary size :math:`V`.
        latent_dim: :math:`q`.
        batch_shape: one independent set of vectors per batch member (``*batch_shape x V x q``).
        word_features: optional ``V x h`` pretrained embeddings :math:`\mathbf e_v` (rows of zeros
            for words without one); the vectors become :math:`W\mathbf e_v + \boldsymbol\delta_v`.
        init: initial vectors (``V x q`` or ``*batch_shape x V x q`` array); ``None`` draws the
            residuals from :math:`\mathcal N(0, \text{init_scale}^2)` (zero residuals when tied to
            ``word_features``: the projected features carry the initial layout).
        init_scale: standard deviation of the random initialization.
        projection_scale: the initial projection :math:`W` is drawn so that the projected
            features have about this standard deviation per coordinate.
        projection_init: ``"random"`` (default: :math:`W` drawn from a Gaussian) or ``"identity"``
            (:math:`W` a multiple of the identity, ``latent_dim`` equal to the features' dimension:
            the vectors are the pretrained embeddings themselves, rescaled).
        trainable: ``False`` freezes the vectors (residuals and projection): a kernel on fixed
            (e.g. pretrained) word vectors, whose other hyper-parameters are still learned.
        seed: seed of the random initialization (``None``: torch's global generator).
    """

    def __init__(
        self,
        num_words: int,
        latent_dim: int,
        *,
        batch_shape: torch.Size = torch.Size(),
        word_features: TensorLike | None = None,
        init: TensorLike | None = None,
        init_scale: float = 1.0,
        projection_scale: float = 1.0,
        projection_init: str = "random",
        trainable: bool = True,
        seed: int | None = None,
    ):
        super().__init__()
        check_number("num_words", num_words, integer=True, minimum=1)
        check_number("latent_dim", latent_dim, integer=True, minimum=1)
        check_number("init_scale", init_scale, minimum=0)
        check_number("projection_scale", projection_scale, minimum=0)
        self.num_words = int(num_words)
        self.latent_dim = int(latent_dim)
        self.batch_shape = torch.Size(batch_shape)
        shape = torch.Size([*self.batch_shape, num_words, latent_dim])
        generator = torch_generator(seed) if seed is not None else None
        self.register_parameter("raw_latent", nn.Parameter(torch.zeros(shape)))
        self._extra: Tensor | None = None
        self._unbatched = ("word_features",)  # shared by the batch members
        if projection_init not in PROJECTION_INITS:
            raise ValueError(f"projection_init must be one of {PROJECTION_INITS}; got {projection_init!r}")
        self._init_word_features(word_features, generator, projection_scale, projection_init)
        if init is None:
            scale = 0.0 if self.word_features is not None else float(init_scale)
            self.residual = torch.randn(shape, generator=generator, dtype=self.dtype) * scale
        else:
            self.vectors = init
        self.trainable = bool(trainable)
        if not self.trainable:
            for parameter in self.parameters():
                parameter.requires_grad_(False)

    def _init_word_features(
        self,
        word_features: TensorLike | None,
        generator: torch.Generator | None,
        projection_scale: float,
        projection_init: str = "random",
    ) -> None:
        if word_features is None:
            self.word_features = None
            return
        feats = torch.as_tensor(word_features, dtype=self.dtype)
        if feats.dim() != 2 or feats.shape[0] != self.num_words:
            raise ValueError(
                f"word_features must have shape (num_words, h) = ({self.num_words}, h); got {tuple(feats.shape)}"
            )
        if not torch.isfinite(feats).all():
            raise ValueError("word_features holds non-finite values")
        self.register_buffer("word_features", feats.clone())
        mean_sq = feats.pow(2).sum(-1).mean().clamp_min(1e-12)
        if projection_init == "identity":
            if feats.shape[1] != self.latent_dim:
                raise ValueError(
                    f"projection_init='identity' needs latent_dim equal to the word features' dimension "
                    f"{feats.shape[1]}; got latent_dim={self.latent_dim}"
                )
            # E ||W e_v||^2 = q projection_scale^2, as for the random draw
            eye = (
                torch.eye(self.latent_dim, dtype=feats.dtype, device=feats.device)
                .expand(*self.batch_shape, -1, -1)
                .clone()
            )
            projection = eye * (projection_scale * (self.latent_dim / mean_sq) ** 0.5)
        else:
            projection = torch.randn(
                *self.batch_shape, feats.shape[1], self.latent_dim, generator=generator, dtype=feats.dtype
            ) * (projection_scale / mean_sq.sqrt())
        self.register_parameter("projection", nn.Parameter(projection))

    # ------------------------------------------------------------------ values
    @property
    def dtype(self) -> torch.dtype:
        return self.raw_latent.dtype

    @property
    def residual(self) -> Tensor:
        r"""The free part :math:`\boldsymbol\delta` of the vectors (all of it without ``word_features``):
        ``*batch_shape x V x q``; the prior, if any, is placed on it."""
        return self.raw_latent

    @residual.setter
    def residual(self, value: TensorLike) -> None:
        value = self._checked_vectors(value)
        shape = self.raw_latent.shape
        if not torch.isfinite(value).all():
            raise ValueError("latent holds non-finite values")
        with torch.no_grad():
            self.raw_latent.copy_(value.expand(shape))

    def _projected(self, features: Tensor | None) -> Tensor | int:
        return features @ self.projection if features is not None else 0

    @property
    def mean(self) -> Tensor:
        r"""The vectors at their point estimate / posterior mean, :math:`W\mathbf e_v + \boldsymbol\delta_v`:
        ``*batch_shape x num_words_in_use x q`` (words of :meth:`extra_words` appended)."""
        base = self._projected(self.word_features) + self.raw_latent
        if self._extra is None:
            return base
        extra = self._extra @ self.projection
        batch = broadcast_shapes(base.shape[:-2], extra.shape[:-2])
        return torch.cat([base.expand(*batch, *base.shape[-2:]), extra.expand(*batch, *extra.shape[-2:])], dim=-2)

    @property
    def vectors(self) -> Tensor:
        """The vectors a kernel evaluates now: ``*batch_shape x num_words_in_use x latent_dim``
        (the mean; a variational module's current sample). Setting it sets the means."""
        return self.mean

    @vectors.setter
    def vectors(self, value: TensorLike) -> None:
        self._set_means(value)

    def _checked_vectors(self, value: TensorLike) -> Tensor:
        """``value`` as a tensor of the vectors' dtype and device, if its shape expands to the
        vectors' ``*batch_shape x V x q`` (else a ``ValueError`` naming the shapes)."""
        value = torch.as_tensor(value, dtype=self.dtype, device=self.raw_latent.device)
        shape = self.raw_latent.shape
        if value.dim() < 2 or value.shape[-2:] != shape[-2:] or _broadcasts(value.shape, shape) is None:
            raise ValueError(
                f"the vectors (init / latent) must have shape (num_words, latent_dim) = {tuple(shape[-2:])}, or "
                f"*batch_shape x num_words x latent_dim = {tuple(shape)}; got {tuple(value.shape)}"
            )
        return value

    def _set_means(self, value: TensorLike) -> None:
        value = self._checked_vectors(value)
        with torch.no_grad():
            self.residual = value - self._projected(self.word_features)

    def fit_projection(self, vectors: TensorLike) -> None:
        r"""Start from a given layout (``num_words x q``, e.g. PCA loadings): the projection
        :math:`W` by least squares so that :math:`W\mathbf e_v` explains the layout as far as the
        embeddings go, the residuals of words *with* a vector at the prior mean 0 (as in every
        tied model: what an unseen word could not have starts at nothing), those of words without
        one at their layout position."""
        if self.word_features is None:
            raise ValueError("fit_projection needs word_features")
        target = torch.as_tensor(vectors, dtype=self.dtype)
        found = self.word_features.abs().sum(-1) > 0
        solution = torch.linalg.lstsq(self.word_features[found], target[found]).solution
        with torch.no_grad():
            self.projection.copy_(solution.expand_as(self.projection))
        self.residual = torch.where(found.unsqueeze(-1), torch.zeros_like(target), target)

    @property
    def num_words_in_use(self) -> int:
        """``num_words`` plus the words appended by an active :meth:`extra_words`."""
        return self.num_words + (0 if self._extra is None else self._extra.shape[0])

    @property
    def rho(self) -> float | None:
        """Precision of the Gaussian prior on the residuals, or ``None`` for no prior."""
        return None

    def penalty(self) -> Tensor:
        r"""The negative log prior up to a constant, :math:`\frac\rho2\sum_v\|\boldsymbol\delta_v\|^2`
        (zero without a prior): the regularizer of objectives that are not gpytorch likelihoods."""
        return self.raw_latent.new_zeros(())

    def sample_for_training(self) -> None:
        """Called by the kernel before each training-mode evaluation (variational modules draw a new sample)."""

    # ------------------------------------------------------------------ unseen words
    @contextlib.contextmanager
    def extra_words(self, features: TensorLike) -> Iterator[int]:
        r"""Temporarily append words unseen in training that have pretrained vectors
        (``U x h``, in the same units as ``word_features``): inside the block they are word ids
        ``num_words .. num_words + U - 1`` with vectors :math:`W\mathbf e_v` (the residual at the
        prior mean: no training document moved it). Yields ``num_words`` (the first new id).
        Nothing is stored: on exit the module is as before."""
        if self.word_features is None:
            raise ValueError("extra_words needs word vectors tied to word_features (pretrained embeddings)")
        if self._extra is not None:
            raise RuntimeError("extra_words blocks do not nest")
        feats = torch.as_tensor(features, dtype=self.dtype, device=self.raw_latent.device)
        if feats.dim() != 2 or feats.shape[1] != self.word_features.shape[1]:
            raise ValueError(
                f"features of extra words must have shape (U, {self.word_features.shape[1]}); got {tuple(feats.shape)}"
            )
        if not torch.isfinite(feats).all():
            raise ValueError("features of extra words hold non-finite values")
        self._extra = feats
        try:
            yield self.num_words
        finally:
            self._extra = None

    def extra_repr(self) -> str:
        tied = f", tied to {self.word_features.shape[1]}-d features" if self.word_features is not None else ""
        frozen = ", fixed" if not self.trainable else ""
        return f"num_words={self.num_words}, latent_dim={self.latent_dim}, rho={self.rho}{tied}{frozen}"


class PointWordVectors(WordVectors):
    """Point estimates without a prior (see :class:`WordVectors` for the arguments)."""


class MAPWordVectors(WordVectors):
    r"""Point estimates with the Gaussian prior :math:`\mathcal N(0, \rho^{-1} I)` on every residual,
    registered as the gpytorch prior ``latent_prior`` (MAP training with gpytorch's marginal
    log likelihoods). The random initialization draws from the prior unless ``init_scale`` is given.

    Args:
        rho: the prior precision :math:`\rho`; other arguments as for :class:`WordVectors`.
    """

    def __init__(
        self, num_words: int, latent_dim: int, rho: float = 1.0, *, init_scale: float | None = None, **kwargs: Any
    ) -> None:
        rho = _check_rho(rho)
        super().__init__(num_words, latent_dim, init_scale=rho**-0.5 if init_scale is None else init_scale, **kwargs)
        self._register_prior(rho)

    def _register_prior(self, rho: float) -> None:
        self.register_prior(
            "latent_prior",
            NormalPrior(0.0, rho**-0.5),
            partial(get_attribute, "residual"),
            partial(set_attribute, "residual"),
        )

    @property
    def rho(self) -> float:
        return float(self.latent_prior.scale.pow(-2))

    @rho.setter
    def rho(self, value: float) -> None:
        self.latent_prior.scale.fill_(_check_rho(value) ** -0.5)

    def penalty(self) -> Tensor:
        return 0.5 * self.rho * self.raw_latent.pow(2).sum()


class NegativeLatentKL(AddedLossTerm):
    r""":math:`-\mathrm{KL}(q(\mathbf X)\|p(\mathbf X))` of :class:`VariationalWordVectors` as a gpytorch
    added loss term. ``ExactMarginalLogLikelihood`` *adds* such terms to the log likelihood before
    dividing by ``n``, so with it (and :class:`lvgp.LogPosterior`) the objective is the Monte Carlo
    ELBO divided by ``n``."""

    def __init__(self, word_vectors: VariationalWordVectors) -> None:
        super().__init__()
        self.word_vectors = word_vectors

    def loss(self, *params: Any) -> Tensor:
        return -self.word_vectors.kl()


class _SavedGenerator(NamedTuple):
    """A ``torch.Generator`` as pickling keeps it: its device and its state (``get_state()``)."""

    device: str
    state: Tensor


class VariationalWordVectors(MAPWordVectors):
    r"""A factorized Gaussian posterior :math:`q(x_{vk}) = \mathcal N(W\mathbf e_v + \delta_{vk}, s_{vk}^2)`
    with the prior :math:`\mathcal N(0, \rho^{-1})` on the residual. In training mode the kernel
    draws a new reparameterized sample at every evaluation (:meth:`sample_for_training`); in eval
    mode it uses the means. The KL is a gpytorch added loss term (``latent_kl``), not a prior.

    Args:
        rho: prior precision (required).
        scale_init: initial posterior standard deviation, as a fraction of the prior's.
        **kwargs: the other arguments, as for :class:`WordVectors`.
    """

    def __init__(
        self, num_words: int, latent_dim: int, rho: float = 1.0, *, scale_init: float = 0.5, **kwargs: Any
    ) -> None:
        if not kwargs.get("trainable", True):
            raise ValueError("variational word vectors are a posterior to fit: trainable=False does not apply")
        super().__init__(num_words, latent_dim, rho, **kwargs)
        if not scale_init > 0:
            raise ValueError(f"latent_scale_init must be positive; got {scale_init!r}")
        shape = self.raw_latent.shape
        register_constrained(self, "latent_scale", scale_init * self.rho**-0.5, Positive(), None, shape)
        self.register_buffer("latent_noise", torch.zeros(shape, dtype=self.dtype))
        #: generator of the training-mode samples, or ``None`` for torch's global generator
        self.sample_generator: torch.Generator | None = None
        self.register_added_loss_term("latent_kl")
        self.update_added_loss_term("latent_kl", NegativeLatentKL(self))

    def __getstate__(self) -> dict[str, Any]:
        """The module's state for pickling and ``copy.deepcopy``, ``sample_generator`` as its device and state
        (torch 2.2, which the package admits, cannot pickle a ``torch.Generator``; 2.13 can)."""
        state = dict(super().__getstate__())
        generator = state.get("sample_generator")
        if isinstance(generator, torch.Generator):
            state["sample_generator"] = _SavedGenerator(str(generator.device), generator.get_state())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        saved = state.get("sample_generator")
        if isinstance(saved, _SavedGenerator):
            state = {**state, "sample_generator": restored_torch_generator(saved.device, saved.state)}
        super().__setstate__(state)

    def _register_prior(self, rho: float) -> None:
        # the prior enters through the KL (an added loss term), not as a gpytorch prior
        self.latent_prior = NormalPrior(0.0, rho**-0.5)

    latent_scale = constrained_property("latent_scale", "Posterior standard deviations, ``*batch_shape x V x q``.")
    #: the standard normal draw of the current sample (zeros: the means)
    latent_noise: Tensor

    @property
    def vectors(self) -> Tensor:
        """The current sample ``mean + latent_scale * latent_noise`` (the mean in eval mode).
        Words of :meth:`extra_words` enter at their mean."""
        noise = self.latent_scale * self.latent_noise
        if self._extra is not None:
            noise = torch.cat([noise, noise.new_zeros(*noise.shape[:-2], self._extra.shape[0], noise.shape[-1])], -2)
        return self.mean + noise

    @vectors.setter
    def vectors(self, value: TensorLike) -> None:
        self._set_means(value)

    def resample(self, generator: torch.Generator | None = None) -> None:
        """Draw a new sample of the vectors from q(X) (used until the next call). The draw replaces
        the buffer rather than writing into it: the graph of an earlier sample (several samples per
        objective, ``elbo_samples >= 2``) still needs the noise it was drawn with."""
        self._replace_noise(torch.randn(self.latent_noise.shape, generator=generator, dtype=self.dtype))

    def _resample_for_training(self, generator: torch.Generator | None) -> None:
        """:meth:`resample` for a training step: the standard normal draws made in float32 and widened
        to the vectors' dtype. A CPU draws float32 normals several times as fast as float64 ones (one
        draw per word and dimension at every step: ``benchmarks/README.md``, issue 60), and the Monte
        Carlo sample of a step is no less a sample for its noise's 24-bit mantissa. Predictions keep
        :meth:`resample`'s draws, so that a saved model predicts what it predicted."""
        self._replace_noise(torch.randn(self.latent_noise.shape, generator=generator, dtype=torch.float32))

    def _replace_noise(self, noise: Tensor) -> None:
        self.latent_noise = noise.to(device=self.latent_noise.device, dtype=self.dtype)

    def use_mean(self) -> None:
        """Evaluate at the means of q(X) (the default in eval mode)."""
        self.latent_noise = torch.zeros_like(self.latent_noise)

    def sample_for_training(self) -> None:
        if self.training and not getattr(self, "_held", False):  # each training evaluation is one sample
            self._resample_for_training(self.sample_generator)

    @contextlib.contextmanager
    def one_sample(self, generator: torch.Generator | None = None) -> Iterator[None]:
        """Draw one sample and keep it for every kernel evaluation inside the block: a sparse GP's
        step evaluates the kernel several times (``K_ZZ``, ``K_ZX``, ``diag K_XX``), all of which must
        see the same sample of the word vectors. A training step's sample
        (:meth:`_resample_for_training`: float32 normal draws, widened)."""
        self._resample_for_training(generator if generator is not None else self.sample_generator)
        self._held = True
        try:
            yield
        finally:
            self._held = False

    def kl(self) -> Tensor:
        r""":math:`\mathrm{KL}(q(\mathbf X)\,\|\,p(\mathbf X)) = \frac12\sum[\rho(\delta^2 + s^2) - 1 - \log(\rho s^2)]`."""
        rho = self.latent_prior.scale.pow(-2)
        var = self.latent_scale.pow(2)
        return 0.5 * (rho * (self.raw_latent.pow(2) + var) - 1 - torch.log(rho * var)).sum()

    def penalty(self) -> Tensor:
        return self.kl()

    def train(self, mode: bool = True) -> VariationalWordVectors:
        """As ``nn.Module.train``; in eval mode the vectors return to their means."""
        out = super().train(mode)
        if not mode:
            self.use_mean()
        return out


def _broadcasts(a: torch.Size, b: torch.Size) -> torch.Size | None:
    """``broadcast_shapes(a, b)`` when it is ``b`` (``a`` expands to ``b``), else ``None``."""
    try:
        return b if broadcast_shapes(a, b) == b else None
    except RuntimeError:
        return None


def make_word_vectors(
    num_words: int,
    latent_dim: int,
    *,
    rho: float | None = 1.0,
    variational: bool = False,
    word_features: TensorLike | None = None,
    init: TensorLike | None = None,
    seed: int | None = None,
    scale_init: float = 0.5,
    init_scale: float | None = None,
    projection_scale: float = 1.0,
    projection_init: str = "random",
    trainable: bool = True,
    batch_shape: torch.Size = torch.Size(),
) -> WordVectors:
    """The variant the flags ask for: :class:`VariationalWordVectors` (``variational=True``, needs
    ``rho``), :class:`MAPWordVectors` (``rho`` given) or :class:`PointWordVectors` (``rho=None``);
    the other arguments are :class:`WordVectors`'s."""
    common: dict[str, Any] = dict(
        batch_shape=batch_shape,
        word_features=word_features,
        init=init,
        seed=seed,
        projection_scale=projection_scale,
        projection_init=projection_init,
        trainable=trainable,
    )
    if variational:
        if rho is None:
            raise ValueError("variational latent vectors need a prior: pass a precision rho")
        return VariationalWordVectors(
            num_words, latent_dim, rho, scale_init=scale_init, init_scale=init_scale, **common
        )
    if rho is not None:
        return MAPWordVectors(num_words, latent_dim, rho, init_scale=init_scale, **common)
    return PointWordVectors(num_words, latent_dim, init_scale=1.0 if init_scale is None else init_scale, **common)
