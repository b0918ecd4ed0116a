r"""``LDKSpec``: the settings of an estimator's latent distribution kernel, as one object.

An lvgp estimator (:class:`~lvgp.GPLVSMRegressor`, :class:`~lvgp.SparseGPLVSMRegressor`,
:class:`~lvgp.LDKGPClassifier`, :class:`~lvgp.LatentSMMClassifier`, :class:`~lvgp.LDKMatcher`) takes
its kernel as ``kernel=``. An :class:`LDKSpec` describes an LDK whose vocabulary, word weights and
pretrained word features are only known once the estimator has seen its training documents;
:meth:`LDKSpec.build` makes the kernel then. It is the one place where

* the settings are checked (:meth:`LDKSpec.check`, the same table for every estimator);
* ``approximation="auto"`` is decided (:meth:`LDKSpec.approximation_for`);
* ``identity_weight="balanced"`` is resolved (:func:`~lvgp.kernels.random_features.balanced_identity_weight`);
* the presets live (:meth:`LDKSpec.plus`).

A spec is frozen (``spec.replace(rho=0.1)`` makes a new one) and speaks scikit-learn's parameter
protocol: ``get_params`` lists its fields, so ``GridSearchCV(GPLVSMRegressor(), {"kernel__rho": [0.1,
1.0]})`` and ``clone`` work (the estimators' ``set_params`` replace the spec).

The GP estimators also take a ready gpytorch kernel over padded word-index sets, or a factory
``callable(num_words) -> Kernel`` for a vocabulary learned in ``fit`` -- or
``callable(num_words, documents) -> Kernel``, given the padded training documents too, for kernels
that read them (idf weights, a balanced start) (:func:`resolve_kernel`).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from collections.abc import Mapping
from typing import Any, Self

import numpy as np
import torch
from gpytorch.kernels import Kernel

from .._typing import EmbeddingsSpec
from ..base.constraints import (
    Boolean,
    Constraint,
    Embeddings,
    Instance,
    Integer,
    IsCallable,
    Options,
    Real,
    check_values,
)
from ..base.numerics import default_dtype
from ..bow.padded import document_frequencies
from ..bow.weighting import WORD_WEIGHTINGS, Frequencies, word_weights
from ._hyper import register_log_normal_prior
from .document_length import DocumentLengthKernel
from .embedding import EMBEDDINGS
from .latent_distribution import IDENTITY_FORMS, LatentDistributionKernel
from .level2 import LEVEL2_KERNELS
from .random_features import (
    FEATURE_MAPS,
    RandomFeatureLDK,
    auto_approximation,
    balanced_identity_weight,
    frequent_words,
)
from .word_vectors import VariationalWordVectors, WordVectors, make_word_vectors

__all__ = [
    "LDKSpec",
    "BagOfWordsSpec",
    "APPROXIMATIONS",
    "KernelArg",
    "resolve_kernel",
    "check_kernel_arg",
    "KernelArgument",
    "kernel_num_words",
    "word_vector_modules",
    "variational_word_vectors",
    "tied_projection_scale",
]

#: ``approximation`` of a spec: the one ``"auto"`` rule, the exact LDK, or a feature map
APPROXIMATIONS = ("auto", "exact", *FEATURE_MAPS)

#: what an estimator's ``kernel=`` accepts: ``None`` (the estimator's default spec), an
#: :class:`LDKSpec`, a :class:`BagOfWordsSpec`, a gpytorch ``Kernel`` or a factory ``callable(num_words) -> Kernel``
KernelArg = Any


def tied_projection_scale(latent_dim: int) -> float:
    r"""Initial per-coordinate standard deviation of the projected embeddings :math:`W\mathbf e_v`
    of word vectors tied to pretrained ones: :math:`\min(1, \sqrt{4/q})`, so that their expected
    squared norm is :math:`\min(q, 4)`.

    At unit scale for every :math:`q` it is :math:`q`: two words start about :math:`2q` apart, and
    the RBF word kernel :math:`e^{-\|x_v - x_w\|^2/2}` starts near the identity for large :math:`q`,
    and a short fit from there learns little (``results/README.md``). Unit scale is kept up to :math:`q = 4` (the thesis's
    grid), where the fits are unchanged."""
    return min(1.0, (4.0 / latent_dim) ** 0.5)


def _positive_or_balanced() -> list:
    return [None, Real(0, open_low=True), Options("balanced")]


#: the checks of every field (``lvgp.base.constraints``)
_CONSTRAINTS: dict[str, list] = {
    "latent_dim": [Integer(1)],
    "rho": [None, Real(0)],
    "embedding": [Options(*EMBEDDINGS)],
    "level2": [Options(*LEVEL2_KERNELS)],
    "gamma": [Real(0, open_low=True)],
    "learn_gamma": [Boolean()],
    "word_weighting": [Options(*WORD_WEIGHTINGS)],
    "word_embeddings": [None, Embeddings()],
    "learn_word_vectors": [Boolean()],
    "variational": [Boolean()],
    "latent_scale_init": [Real(0, open_low=True)],
    "latent_init": [None, IsCallable(), Instance(np.ndarray, torch.Tensor, list, tuple, name="an array")],
    # the initial vectors must stay within the range where squared distances are finite
    "init_scale": [None, Real(0, 1e100, open_low=True)],
    "identity_weight": _positive_or_balanced(),
    "identity_weight_prior_sd": [None, Real(0, open_low=True)],
    "identity_form": [Options(*IDENTITY_FORMS)],
    "length_kernel": [Boolean()],
    "approximation": [Options(*APPROXIMATIONS)],
    "num_features": [Integer(1)],
    "max_exact_words": [Integer(1)],
    "options": [None, Instance(Mapping, name="a dict of LatentDistributionKernel arguments")],
}


class _FrozenFields:
    """scikit-learn's protocol for the frozen dataclasses of kernel settings (:class:`LDKSpec`,
    :class:`BagOfWordsSpec`): ``get_params`` (their fields), ``replace`` and ``clone`` sharing them."""

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (an unknown name is a ``TypeError`` naming it)."""
        unknown = sorted(set(changes) - set(self.get_params()))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} has no field {', '.join(unknown)}; its fields: {sorted(self.get_params())}"
            )
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The fields, as scikit-learn's ``get_params`` (for ``clone`` and ``kernel__*`` grids)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def __sklearn_clone__(self) -> Self:
        return self  # frozen: a clone may share it


@dataclasses.dataclass(frozen=True)
class LDKSpec(_FrozenFields):
    r"""The latent distribution kernel an lvgp estimator builds on its training documents.

    Args:
        latent_dim: :math:`q`, the dimension of the latent word vectors (with
            ``learn_word_vectors=False``: the pretrained vectors' own dimension is used).
        rho: precision :math:`\rho` of the Gaussian prior :math:`\mathcal N(0, \rho^{-1}I)` of the
            word vectors (GP-LVSM eq. 11; on their residuals when tied to ``word_embeddings``);
            ``None`` or ``0``: no prior.
        embedding: the embedding kernel, ``"rbf"`` (eq. 3.7), ``"linear"`` (eq. 3.6) or ``"poly"`` (eq. 3.8).
        level2: ``"linear"`` (eq. 3.9), ``"rbf"``, ``"poly"`` or ``"cosine"``.
        gamma: the RBF embedding's bandwidth :math:`\gamma`.
        learn_gamma: fit :math:`\gamma` too. Off by default: the RBF embedding depends on the word
            vectors only through :math:`\sqrt\gamma\,\mathbf x_v`, so a learned :math:`\gamma` rescales
            the prior's precision to :math:`\rho/\gamma` and can void it.
        word_weighting: ``"uniform"`` (the thesis: a document is the mean of its words) or ``"idf"``
            (the idf-weighted measure, idf from the training documents).
        word_embeddings: ``None``, or pretrained word vectors the latent vectors are tied to
            (:math:`\mathbf x_v = W\mathbf e_v + \boldsymbol\delta_v`; :mod:`lvgp.base.embeddings`: a name
            such as ``"glove-6b-50d"``, a :class:`~lvgp.datasets.WordEmbeddings`, ``"corpus"``,
            ``"contextual"`` (:class:`~lvgp.encoders.ContextualWordEmbeddings`, with the estimator's
            ``sentence_encoder``) or a tuple of these); needs text input. Words unseen in training that have a vector enter prediction
            with their embedding-implied vectors.
        learn_word_vectors: ``False`` fixes the word vectors to the pretrained ``word_embeddings``
            themselves: a kernel of fixed word similarities whose other hyper-parameters are fitted.
        variational: a Gaussian posterior :math:`q(\mathbf X)` over the word vectors instead of the
            MAP point (:class:`~lvgp.kernels.VariationalWordVectors`; the GP-LVSM regressors, Adam).
        latent_scale_init: the variational posterior's initial standard deviation, as a fraction of
            the prior's.
        latent_init: initial word vectors: ``None`` (draws from the prior, or zero residuals with
            ``word_embeddings``), a ``num_words x latent_dim`` array, or a callable
            ``f(words, num_words, latent_dim)`` returning one (``words``: the vocabulary's words, or ``None``).
            ``save()`` writes an array (a reloaded estimator fitted again starts from it) and refuses a
            callable.
        init_scale: the standard deviation of the initial draw of the word vectors (and of the projected
            embeddings); ``None``: the prior's for the vectors, :func:`tied_projection_scale` for the
            projection.
        identity_weight: ``None`` (the thesis's word kernel) or the initial :math:`\lambda` of the word
            kernel :math:`\lambda\delta_{vw} + k(\mathbf x_v, \mathbf x_w)`, which contains the bag of
            words; ``"balanced"``: where both parts weigh alike in the training documents'
            self-similarities (:func:`~lvgp.kernels.random_features.balanced_identity_weight`).
        identity_weight_prior_sd: ``None`` or the standard deviation :math:`s` of a log-normal prior
            on :math:`\lambda` centred at its initial value (MAP-II).
        identity_form: ``"joint"`` (the identity inside the word kernel) or ``"separate"`` (the
            level-2 kernel of each part, added; :class:`~lvgp.LatentDistributionKernel`).
        length_kernel: multiply the LDK by a learned :class:`~lvgp.kernels.DocumentLengthKernel`.
        approximation: ``"auto"`` (:meth:`approximation_for`), ``"exact"``, ``"nystrom"`` (landmark
            words: the ``num_features`` words in most training documents) or ``"rff"`` (random
            Fourier features of the RBF embedding; :class:`~lvgp.kernels.RandomFeatureLDK`).
        num_features: the feature map's dimension (landmarks, or random features).
        max_exact_words: ``"auto"`` keeps the exact LDK up to this many distinct training words.
        options: further :class:`~lvgp.LatentDistributionKernel` arguments (``a``, ``b``, ``zeta``,
            ``c``, ``d``, their priors and constraints).

    Example:
        >>> spec = LDKSpec(latent_dim=4, rho=0.1, level2="cosine")
        >>> spec.replace(rho=1.0).rho
        1.0
    """

    latent_dim: int = 2
    rho: float | None = 1.0
    embedding: str = "rbf"
    level2: str = "linear"
    _: dataclasses.KW_ONLY
    gamma: float = 1.0
    learn_gamma: bool = False
    word_weighting: str = "uniform"
    word_embeddings: EmbeddingsSpec = None
    learn_word_vectors: bool = True
    variational: bool = False
    latent_scale_init: float = 0.5
    latent_init: Any = dataclasses.field(default=None, compare=False)
    init_scale: float | None = None
    identity_weight: float | str | None = None
    identity_weight_prior_sd: float | None = None
    identity_form: str = "joint"
    length_kernel: bool = False
    approximation: str = "auto"
    num_features: int = 512
    max_exact_words: int = 2048
    options: Mapping[str, Any] | None = None

    def __repr__(self) -> str:
        """The fields that differ from a preset's, as the call that makes the spec (scikit-learn
        prints estimators so): from the defaults (``LDKSpec(...)``; with none changed
        ``LDKSpec.paper()``, which they are), or from :meth:`variational_bow` or :meth:`plus` where
        fewer fields differ from theirs."""
        best: tuple[str, list[str]] | None = None
        for name, preset in _presets().items():
            changed = []
            for f in dataclasses.fields(self):
                value, base = getattr(self, f.name), getattr(preset, f.name)
                if value is base or (f.name != "latent_init" and _equal(value, base)):
                    continue
                changed.append(f"{f.name}={_short_repr(value)}")
            if best is None or len(changed) < len(best[1]):
                best = (name, changed)
        assert best is not None
        name, changed = best
        return f"{'LDKSpec.paper' if name == 'LDKSpec' and not changed else name}({', '.join(changed)})"

    # ------------------------------------------------------------------ presets
    @classmethod
    def paper(cls, latent_dim: int = 2, rho: float = 1.0, **changes: Any) -> LDKSpec:
        """GP-LVSM's kernel (AAAI 2015): MAP word vectors under the prior, the RBF embedding and the
        linear level 2 (``LDKSpec()``'s defaults). Its predictive intervals on short texts are far too
        narrow (:meth:`variational_bow`)."""
        return cls(latent_dim, rho, "rbf", "linear", **changes)

    @classmethod
    def variational_bow(cls, latent_dim: int = 2, rho: float = 1.0, **changes: Any) -> LDKSpec:
        r"""The GP-LVSM regressors' default: the LDK that contains the bag of words (the cosine of the
        mean embeddings plus :math:`\lambda` times the tf-idf cosine, :math:`\lambda` starting balanced)
        over *variational* word vectors -- a Gaussian posterior :math:`q(\mathbf X)` whose KL to the prior
        replaces the MAP penalty (the Bayesian GP-LVM's treatment). Chosen on development sentences of
        the review snippets (``benchmarks/default_coverage.py``): the paper's MAP vectors let the marginal
        likelihood interpolate a few hundred short texts and drive the noise to its floor (95% intervals
        that cover a small share of held-out targets); variational vectors alone learn too little from
        them (the KL of ``V x q`` coordinates outweighs the fit); beside the bag of words their intervals
        cover near their level on held-out ratings (the figures: ``benchmarks/README.md``)."""
        settings: dict[str, Any] = dict(
            variational=True,
            identity_weight="balanced",
            word_weighting="idf",
            level2="cosine",
            identity_form="separate",
        )
        return cls(latent_dim, rho, **{**settings, **changes})

    @classmethod
    def plus(cls, word_embeddings: EmbeddingsSpec = "glove-6b-50d", **changes: Any) -> LDKSpec:
        r"""The LDK that contains the bag of words, on fixed pretrained word vectors: the word kernel
        :math:`\lambda\delta_{vw} + \mathbf e_v^\top\mathbf e_w`, idf weights, and the cosine of each
        part added, :math:`K = \cos(\text{mean embeddings}) + \lambda\cos(\text{tf-idf})`, with
        :math:`\lambda` starting balanced. Chosen on dev documents of r8 and 20ng (``results/README.md``):
        learned vectors over-fit a few hundred labelled documents, and the joint cosine weighs the bag of
        words by document length. The ``-plus`` study methods use it."""
        settings: dict[str, Any] = dict(
            embedding="linear",
            level2="cosine",
            word_weighting="idf",
            word_embeddings=word_embeddings,
            learn_word_vectors=False,
            identity_weight="balanced",
            identity_form="separate",
        )
        return cls(**{**settings, **changes})

    # ------------------------------------------------------------------ checks
    def check(self, name: str = "kernel") -> LDKSpec:
        """``TypeError``/``ValueError`` naming the field (``kernel.latent_dim``) for a bad setting;
        returns the spec."""
        check_values(self.get_params(), _CONSTRAINTS, prefix=f"{name}.")
        if self.variational and not self.learn_word_vectors:
            raise ValueError(
                f"{name}.variational fits a posterior over the word vectors: it needs learn_word_vectors=True"
            )
        if self.variational and not self.rho:
            raise ValueError(f"{name}.variational needs a prior on the word vectors: a positive rho")
        if not self.learn_word_vectors and self.word_embeddings is None:
            raise ValueError(
                f"{name}.learn_word_vectors=False fixes the word vectors to pretrained embeddings: set its "
                "word_embeddings (and pass texts, or counts with a vocabulary)"
            )
        from ..base.embeddings import is_learned_source

        for part in _parts(self.word_embeddings):
            if isinstance(part, str) and not is_learned_source(part):
                from ..datasets.loaders import embedding_names

                if part not in embedding_names():
                    raise ValueError(
                        f"{name}.word_embeddings: unknown word embeddings {part!r}; known: {embedding_names()}, "
                        "'corpus' (learned from the training texts), 'contextual' (their contextual vectors from a sentence "
                        "encoder), or a WordEmbeddings table"
                    )
        if self.approximation == "rff" and self.embedding != "rbf":
            raise ValueError(f"{name}.approximation='rff' approximates the RBF embedding kernel: use embedding='rbf'")
        if self.identity_weight_prior_sd is not None and self.identity_weight is None:
            raise ValueError(
                f"{name}.identity_weight_prior_sd needs identity_weight (the word kernel's identity part); "
                "set identity_weight to a number or 'balanced'"
            )
        return self

    # ------------------------------------------------------------------ building
    def approximation_for(self, documents: torch.Tensor, frequencies: Frequencies | None = None) -> str:
        """The one ``"auto"`` rule of every LDK estimator: the exact LDK unless the padded training
        ``documents`` hold more than ``max_exact_words`` distinct words (the exact word Gram costs
        their number squared in time and memory per evaluation), then ``"nystrom"``; a linear
        embedding is always exact (its mean embeddings are explicit vectors). Other settings are
        returned as they are. ``frequencies``: the documents' documents per word, where the caller
        has them."""
        if self.approximation != "auto":
            return self.approximation
        return auto_approximation(documents, self.embedding, int(self.max_exact_words), frequencies)

    def initial_vectors(self, num_words: int, words: list[str] | None) -> np.ndarray | None:
        """``latent_init`` resolved: ``None`` or a checked ``num_words x latent_dim`` array."""
        init = self.latent_init
        if init is None:
            return None
        if callable(init):
            init = init(words, num_words, self.latent_dim)
        init = np.asarray(init, dtype=np.float64)
        if init.shape != (num_words, self.latent_dim):
            raise ValueError(
                f"kernel.latent_init must have shape (num_words, latent_dim) = ({num_words}, {self.latent_dim}); "
                f"got {init.shape}"
            )
        return init

    def word_vectors(
        self,
        num_words: int,
        *,
        word_features: Any = None,
        words: list[str] | None = None,
        seed: int | None = 0,
    ) -> WordVectors:
        """The word vectors of the kernel (float64): learned (MAP, point or variational, tied to
        ``word_features`` when given), or with ``learn_word_vectors=False`` the pretrained features
        themselves, fixed."""
        with default_dtype(torch.float64):
            if not self.learn_word_vectors:
                if word_features is None:
                    raise ValueError(
                        "kernel.learn_word_vectors=False fixes the word vectors to pretrained embeddings: set the "
                        "spec's word_embeddings (and pass texts, or counts with a vocabulary)"
                    )
                features = torch.as_tensor(word_features)
                return make_word_vectors(
                    num_words,
                    int(features.shape[-1]),
                    rho=None,
                    word_features=features,
                    projection_init="identity",
                    trainable=False,
                )
            scale = self.init_scale
            return make_word_vectors(
                num_words,
                self.latent_dim,
                rho=float(self.rho) if self.rho else None,
                variational=self.variational,
                word_features=word_features,
                init=self.initial_vectors(num_words, words),
                seed=seed,
                scale_init=self.latent_scale_init,
                init_scale=None if scale is None else float(scale),
                projection_scale=tied_projection_scale(self.latent_dim) if scale is None else float(scale),
            )

    def build(
        self,
        num_words: int,
        documents: torch.Tensor,
        *,
        word_features: Any = None,
        words: list[str] | None = None,
        seed: int = 0,
        vectors: WordVectors | None = None,
    ) -> Kernel:
        """The kernel on padded training ``documents`` (``n x L``) over ``num_words`` words: an
        unscaled :class:`~lvgp.LatentDistributionKernel` (or :class:`~lvgp.kernels.RandomFeatureLDK`),
        times a :class:`~lvgp.kernels.DocumentLengthKernel` with ``length_kernel``; float64.

        ``word_features``: the vocabulary's pretrained vectors (``num_words x h``, from the estimator's
        encoder; needed with ``word_embeddings``); ``words``: the vocabulary's words (for a callable
        ``latent_init``); ``seed``: the initial draw and the feature map's; ``vectors``: ready word
        vectors instead of :meth:`word_vectors`. The gradient of ``gamma`` is off unless
        ``learn_gamma``; the identity weight carries its log-normal prior with
        ``identity_weight_prior_sd``."""
        self.check()
        if vectors is None:
            vectors = self.word_vectors(num_words, word_features=word_features, words=words, seed=seed)
        # the documents per word, counted once for the auto rule, the idf weights and the landmarks
        frequencies = functools.cache(
            lambda: document_frequencies(documents.reshape(-1, documents.shape[-1]), num_words)
        )
        kind = self.approximation_for(documents, frequencies)
        options: dict[str, Any] = dict(self.options or {})
        if self.embedding == "rbf":
            options.setdefault("gamma", float(self.gamma))
        identity = self.identity_weight
        with default_dtype(torch.float64):
            common: dict[str, Any] = dict(
                embedding=self.embedding,
                level2=self.level2,
                word_vectors=vectors,
                word_weights=word_weights(documents, num_words, self.word_weighting, frequencies),
                identity_weight=1.0 if isinstance(identity, str) else _plain_float(identity),
                identity_form=self.identity_form,
                **options,
            )
            if kind == "exact":
                ldk: LatentDistributionKernel = LatentDistributionKernel(**common)
            else:
                landmarks = (
                    frequent_words(documents, int(self.num_features), frequencies) if kind == "nystrom" else None
                )
                ldk = RandomFeatureLDK(
                    features=kind,
                    num_features=int(self.num_features) if landmarks is None else len(landmarks),
                    landmarks=landmarks,
                    feature_seed=seed,
                    **common,
                )
            if identity == "balanced":
                ldk.identity_weight = balanced_identity_weight(ldk, documents)
            if self.identity_weight_prior_sd is not None:
                register_log_normal_prior(ldk, "identity_weight", float(self.identity_weight_prior_sd))
            if hasattr(ldk.embedding, "raw_gamma"):
                ldk.embedding.raw_gamma.requires_grad_(bool(self.learn_gamma))
            kernel: Kernel = ldk * DocumentLengthKernel() if self.length_kernel else ldk
        return kernel.double()

    # ------------------------------------------------------------------ persistence
    def to_plain(self) -> dict[str, Any]:
        """The fields as plain values that ``torch.load(weights_only=True)`` reads back (a table of
        embeddings written whole); ``TypeError`` for what cannot be saved (a callable ``latent_init``,
        prior objects in ``options``): :meth:`from_plain` inverts it."""
        from ..base.embeddings import spec_to_plain
        from ..base.persistence import plain_value

        out: dict[str, Any] = {}
        for name, value in self.get_params().items():
            if name == "latent_init":
                # the saved parameters supersede the initial state, but a reloaded estimator that is
                # fitted again starts from it: saved as the array, or refused
                if callable(value):
                    raise TypeError(
                        "save() cannot write kernel.latent_init, a callable: pass the array it returns "
                        "(LDKSpec(latent_init=init(words)))"
                    )
                value = plain_value(value, "kernel.latent_init")
            elif name == "word_embeddings":
                value = spec_to_plain(value)
            else:
                value = plain_value(value, f"kernel.{name}")
            out[name] = value
        return out

    @classmethod
    def from_plain(cls, values: Mapping[str, Any]) -> LDKSpec:
        from ..base.embeddings import spec_from_plain

        values = dict(values)
        if isinstance(values.get("latent_init"), torch.Tensor):  # written from an array
            values["latent_init"] = values["latent_init"].numpy()
        if "word_embeddings" in values:
            values["word_embeddings"] = spec_from_plain(values["word_embeddings"])
        return cls(**values)


_BAG_OF_WORDS_CONSTRAINTS: dict[str, list] = {
    "level2": [Options(*LEVEL2_KERNELS)],
    "word_weighting": [Options(*WORD_WEIGHTINGS)],
    "sublinear_tf": [Boolean()],
}


@dataclasses.dataclass(frozen=True)
class BagOfWordsSpec(_FrozenFields):
    r"""The bag-of-words kernel an lvgp estimator builds on its training documents, as an
    :class:`LDKSpec` is the latent distribution kernel: :class:`~lvgp.kernels.BagOfWordsKernel` with the
    inverse document frequencies of the training documents (the defaults: the cosine of the tf-idf
    vectors, scikit-learn's ``TfidfVectorizer`` with ``smooth_idf=True`` and L2-normalized rows).

    Where an :class:`LDKSpec` would stand (``kernel=`` of :class:`~lvgp.LDKGPClassifier`,
    :class:`~lvgp.GPLVSMRegressor`, ...), the estimator builds it on its training documents; with a
    ``sentence_encoder``, the encoder's part ``encoder_kernel`` goes beside it with its own weight
    :math:`\mu`, starting where both parts weigh alike, as beside a spec's LDK
    (:func:`~lvgp.kernels.packed.beside_encoder`): the tf-idf cosine plus :math:`\mu` times an RBF
    kernel of the encoder's unit vectors is ``LDKGPClassifier(BagOfWordsSpec(),
    sentence_encoder="all-MiniLM-L6-v2", encoder_kernel="rbf")``, the open-set study's
    ``gpc-bow-encoder-rbf`` kernel. ``save`` writes its fields, so that ``load`` needs no ``kernel=``;
    ``set_params(kernel__sublinear_tf=True)`` and ``GridSearchCV`` grids over ``kernel__*`` work as for
    an :class:`LDKSpec`. It is also a factory ``spec(num_words, documents)`` (:meth:`build`), which any
    ``kernel=`` that takes one accepts.

    Args:
        level2: ``"cosine"`` (the cosine of the tf(-idf) vectors), ``"linear"``
            (:math:`\langle\phi_i, \phi_j\rangle` of the L1-normalized word measures), ``"rbf"`` or ``"poly"``
            (their hyper-parameters fitted with the model's).
        word_weighting: ``"idf"`` (the training documents' smoothed inverse document frequencies,
            :func:`~lvgp.bow.weighting.idf_weights`) or ``"uniform"`` (term frequencies).
        sublinear_tf: a word said :math:`c` times in a document counts :math:`1 + \ln c`
            (``TfidfVectorizer(sublinear_tf=True)``).

    Example:
        >>> import torch
        >>> docs = torch.tensor([[0, 1, 1], [1, 2, -1], [2, -1, -1]])  # padded word ids, -1 = PAD
        >>> kernel = BagOfWordsSpec().build(3, docs)  # the idf of these three documents
        >>> kernel(docs).to_dense().numpy().round(3)  # the cosines of their tf-idf vectors
        array([[1.   , 0.591, 0.   ],
               [0.591, 1.   , 0.707],
               [0.   , 0.707, 1.   ]])
    """

    level2: str = "cosine"
    word_weighting: str = "idf"
    sublinear_tf: bool = False

    def check(self, name: str = "kernel") -> BagOfWordsSpec:
        """``TypeError``/``ValueError`` naming the field (``kernel.level2``) for a bad setting; returns the spec."""
        check_values(self.get_params(), _BAG_OF_WORDS_CONSTRAINTS, prefix=f"{name}.")
        return self

    def build(self, num_words: int, documents: torch.Tensor) -> Kernel:
        """The float64 :class:`~lvgp.kernels.BagOfWordsKernel` of ``num_words`` words, its idf (with
        ``word_weighting="idf"``) from the training ``documents`` (``n x L`` padded word ids, documents
        without a word counted among the ``n``)."""
        from .bag_of_words import BagOfWordsKernel

        self.check()
        weights = word_weights(documents, num_words, self.word_weighting)
        return BagOfWordsKernel(num_words, self.level2, word_weights=weights, sublinear_tf=self.sublinear_tf).double()

    def __call__(self, num_words: int, documents: torch.Tensor) -> Kernel:
        """:meth:`build`: a spec is a kernel factory ``(num_words, documents) -> Kernel`` too."""
        return self.build(num_words, documents)

    def to_plain(self) -> dict[str, Any]:
        """The fields as plain values (``torch.load(weights_only=True)`` reads them); :meth:`from_plain`
        inverts it."""
        return dict(self.get_params())

    @classmethod
    def from_plain(cls, values: Mapping[str, Any]) -> BagOfWordsSpec:
        return cls(**values)


@functools.cache
def _presets() -> dict[str, LDKSpec]:
    """The presets :meth:`LDKSpec.__repr__` writes a spec from, in order of preference on a tie."""
    return {
        "LDKSpec": LDKSpec(),
        "LDKSpec.variational_bow": LDKSpec.variational_bow(),
        "LDKSpec.plus": LDKSpec.plus(),
    }


def _parts(embeddings: Any) -> tuple:
    if embeddings is None:
        return ()
    return tuple(embeddings) if isinstance(embeddings, (tuple, list)) else (embeddings,)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare elementwise
        return False


def _short_repr(value: Any) -> str:
    """Tables of embeddings and arrays by name and shape, not their numbers."""
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_short_repr(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else f"({inner})"
    if hasattr(value, "lookup") and hasattr(value, "name"):
        return f"<{type(value).__name__} {value.name!r}>"
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return f"<array {tuple(value.shape)}>"
    return repr(value)


def _plain_float(value: Any) -> float | None:
    return None if value is None else float(value)


# ------------------------------------------------------------------ kernel= of the estimators
def _takes_documents(factory: Any) -> bool:
    """Whether a kernel factory takes a second positional argument (the training documents)."""
    import inspect

    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def resolve_kernel(
    kernel: Any,
    num_words: int,
    documents: torch.Tensor,
    *,
    name: str = "kernel",
) -> Kernel:
    """The user's kernel an estimator's ``kernel=`` stands for, on its padded training ``documents``: a
    factory called with ``num_words`` (and ``documents``, where it takes a second positional argument),
    or a gpytorch ``Kernel`` copied (fitting never changes the estimator's parameter). A kernel whose word
    count (:func:`kernel_num_words`) is below the vocabulary's is a ``ValueError`` that says what to pass.
    (An :class:`LDKSpec` is built by :meth:`LDKSpec.build`; :func:`lvgp.kernels.assembly.assemble_covariance`
    takes either.)"""
    if isinstance(kernel, LDKSpec):
        raise TypeError(f"{name}: an LDKSpec is built by LDKSpec.build (or lvgp.kernels.assembly.assemble_covariance)")
    if isinstance(kernel, Kernel):
        import copy

        built = copy.deepcopy(kernel)
        where = "a gpytorch Kernel"
    elif callable(kernel):
        # a factory sees int64 ids, as documented, whatever dtype the estimator keeps the corpus in
        built = kernel(num_words, documents.long()) if _takes_documents(kernel) else kernel(num_words)
        if not isinstance(built, Kernel):
            raise TypeError(f"{name}: the factory returned {type(built).__name__}, not a gpytorch Kernel")
        where = "the kernel the factory returned"
    else:
        raise TypeError(
            f"{name} must be an lvgp LDKSpec, a gpytorch Kernel over padded word-index sets, or a factory "
            f"callable(num_words) -> Kernel; got {type(kernel).__name__}"
        )
    have = kernel_num_words(built)
    if have is not None and have < num_words:
        raise ValueError(
            f"{name}: {where} takes {have} words but the vocabulary has {num_words}: pass the fitted vocabulary= the "
            "kernel was built for, or a factory callable(num_words) -> Kernel"
        )
    return built.double()


def check_kernel_arg(kernel: Any, name: str = "kernel") -> None:
    """The checks ``fit`` runs on ``kernel=`` before any work (a spec's fields; the type otherwise;
    ``None``, the estimator's default spec, passes)."""
    if kernel is None:
        return
    if isinstance(kernel, (LDKSpec, BagOfWordsSpec)):
        kernel.check(name)
    elif isinstance(kernel, type):
        raise TypeError(f"{name} must be {_class_problem(kernel)}; got {kernel!r}")
    elif not (isinstance(kernel, Kernel) or callable(kernel)):
        raise TypeError(
            f"{name} must be an lvgp LDKSpec, a gpytorch Kernel over padded word-index sets, or a factory "
            f"callable(num_words) -> Kernel; got {kernel!r} ({type(kernel).__name__})"
        )


def _class_problem(cls: type) -> str:
    """What to pass instead of a class (``GPLVSMRegressor(BagOfWordsKernel)``): a class is callable,
    but calling it with the vocabulary size (and the documents) is not what it is made for."""
    name = cls.__name__
    if issubclass(cls, Kernel):
        return (
            f"a kernel instance or a factory, not the class {name}: pass {name}(...), or a function of num_words "
            f"that returns one (def kernel(num_words): return {name}(...))"
        )
    if cls is LDKSpec:
        return "an LDKSpec instance, not the class: pass LDKSpec(...) (or None for the default)"
    if cls is BagOfWordsSpec:
        return "a BagOfWordsSpec instance, not the class: pass BagOfWordsSpec(...)"
    return f"an LDKSpec, a gpytorch Kernel or a factory function, not the class {name}"


class KernelArgument(Constraint):
    """The constraint of an estimator's ``kernel=`` (``lvgp.base.constraints``): ``None`` (the
    estimator's default spec), an :class:`LDKSpec` whose fields are checked here (the errors name
    ``kernel.<field>``), or -- unless ``specs_only`` -- a :class:`BagOfWordsSpec` (checked the same way), a
    gpytorch ``Kernel`` or a factory.

    ``takes``: the estimator's capabilities, declared in its constraint table: spec field -> the values
    it can take (a spec with another value is a ``ParameterError`` naming every such field, the values
    taken and ``why``)."""

    def __init__(self, specs_only: bool = False, takes: dict[str, tuple] | None = None, why: str = "") -> None:
        self.specs_only = specs_only
        self.takes = dict(takes or {})
        self.why = why

    def accepts_type(self, value: Any) -> bool:
        if value is None or isinstance(value, LDKSpec):
            return True
        return not self.specs_only and (isinstance(value, Kernel) or callable(value))

    def problem(self, value: Any) -> str | None:
        if isinstance(value, LDKSpec):
            value.check("kernel")  # raises, naming the field
            self.check_capabilities(value)
        if isinstance(value, BagOfWordsSpec):
            value.check("kernel")
        if isinstance(value, type):
            return _class_problem(value)
        return None

    def check_capabilities(self, spec: LDKSpec) -> None:
        """A ``ParameterError`` naming the fields of ``spec`` with values the estimator cannot take."""
        from ..base.constraints import ParameterError

        bad = [f for f, allowed in self.takes.items() if not any(getattr(spec, f) == a for a in allowed)]
        if bad:
            taken = "; ".join(f"kernel.{f} takes {' or '.join(map(repr, self.takes[f]))}" for f in bad)
            got = ", ".join(f"kernel.{f}={getattr(spec, f)!r}" for f in bad)
            raise ParameterError(f"{got}: {taken} here{f' ({self.why})' if self.why else ''}")

    def describe(self) -> str:
        if self.specs_only:
            return "None or an lvgp LDKSpec"
        return (
            "None, an lvgp LDKSpec or BagOfWordsSpec, a gpytorch Kernel over padded word-index sets, or a factory "
            "callable(num_words)"
        )


def kernel_num_words(kernel: Kernel) -> int | None:
    """The smallest vocabulary size among the word-index kernels inside ``kernel`` (``None``: none)."""
    sizes = [
        int(m.num_words)
        for m in kernel.modules()
        if isinstance(getattr(m, "num_words", None), numbers.Integral) and not isinstance(m, WordVectors)
    ]
    return min(sizes) if sizes else None


def word_vector_modules(kernel: torch.nn.Module) -> list[WordVectors]:
    """The distinct word-vector modules inside ``kernel`` (a shared one once)."""
    seen: dict[int, WordVectors] = {}
    for module in kernel.modules():
        if isinstance(module, WordVectors):
            seen.setdefault(id(module), module)
    return list(seen.values())


def variational_word_vectors(kernel: torch.nn.Module) -> list[VariationalWordVectors]:
    """The distinct variational word-vector modules inside ``kernel``."""
    return [m for m in word_vector_modules(kernel) if isinstance(m, VariationalWordVectors)]
