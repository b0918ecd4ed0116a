"""The mixins of lvgp's estimators: what the LDK estimators, the exact-GP regressors and the Pyro
baselines share beside their models.

* :class:`SavedParamsMixin`: the one ``save``/``load`` template of every estimator (its hooks:
  the fitted payload and its restoration), with the parameters as plain values and the file's format;
* :class:`KernelParamsMixin`: ``kernel=`` of an LDK estimator, ``set_params(kernel__<field>=...)``;
* :class:`SentenceEncoderMixin`: ``sentence_encoder=``, its vectors packed beside the word ids;
* :class:`FittedVocabularyMixin`: ``vocabulary_`` of an estimator that keeps its ``encoder_``;
* :func:`word_source`: a spec's ``"contextual"`` word embeddings resolved to the estimator's encoder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from .._typing import Documents
from ..base.embeddings import spec_from_plain, spec_to_plain
from ..base.fit_options import FIT_OPTIONS_FORMAT, FitOptions, FrozenParamsMixin
from ..bow.vocabulary import Vocabulary
from ..encoders.sentence import SentenceEncoder, check_texts, resolve_encoder
from ..kernels.packed import encoder_kernel_parts, pack_documents

#: the fields of LDKSpec that estimators of lvgp 0.1 (saved files of format /1) took as their own
#: arguments, and the names some of them had there
_LEGACY_SPEC_FIELDS = (
    "latent_dim",
    "rho",
    "embedding",
    "level2",
    "gamma",
    "word_weighting",
    "word_embeddings",
    "learn_word_vectors",
    "variational",
    "latent_scale_init",
    "latent_init",
    "init_scale",
    "identity_weight",
    "identity_weight_prior_sd",
    "identity_form",
    "length_kernel",
    "approximation",
    "num_features",
)
_LEGACY_RENAMES = {"train_gamma": "learn_gamma", "learn_gamma": "learn_gamma", "kernel_options": "options"}
#: arguments of lvgp 0.1 that the one "auto" rule replaced
_LEGACY_DROPPED = ("memory_budget_gib",)

_SPEC_TAG = "__lvgp_ldk_spec__"
_BAG_OF_WORDS_SPEC_TAG = "__lvgp_bag_of_words_spec__"
_USER_KERNEL_TAG = "__lvgp_user_kernel__"
_FIT_OPTIONS_TAG = "__lvgp_fit_options__"


def _saved_specs() -> dict[Any, tuple[str, str]]:
    """The kernel specs a saved file holds by their fields: class -> (its tag in the file, what it is called)."""
    from ..kernels.spec import BagOfWordsSpec, LDKSpec

    return {LDKSpec: (_SPEC_TAG, "an LDKSpec"), BagOfWordsSpec: (_BAG_OF_WORDS_SPEC_TAG, "a BagOfWordsSpec")}


def word_source(word_embeddings: Any, sentence_encoder: Any = None, device: Any = "cpu") -> Any:
    """A spec's ``word_embeddings`` with each ``"contextual"`` part turned into the
    :class:`~lvgp.encoders.ContextualWordEmbeddings` of the estimator's ``sentence_encoder`` (the
    default encoder without one) on its ``device``: the one place the estimators resolve the name."""
    from ..base.embeddings import CONTEXTUAL
    from ..encoders import ContextualWordEmbeddings

    def resolve(part: Any) -> Any:
        if isinstance(part, str) and part == CONTEXTUAL:
            encoder = sentence_encoder if sentence_encoder is not None else "all-MiniLM-L6-v2"
            return ContextualWordEmbeddings(encoder, device=device)
        return part

    if isinstance(word_embeddings, (tuple, list)):
        return tuple(resolve(p) for p in word_embeddings)
    return resolve(word_embeddings)


def check_encoder_named(encoder: Any, param: str) -> None:
    """``save``'s check of an estimator's sentence encoder ``param``: a file names its encoder, so an
    encoder object cannot be saved (``ValueError`` naming the parameter)."""
    if isinstance(encoder, SentenceEncoder):
        raise ValueError(
            f"save: a file names its sentence encoder; pass {param} by name (lvgp.encoders.ENCODERS), not a "
            "SentenceEncoder object"
        )


class SentenceEncoderMixin:
    """``sentence_encoder=`` of the GP estimators (``LDKGPClassifier``, ``GPLVSMRegressor``): the
    encoder resolved on the estimator's ``device``, its vectors of texts packed beside the word ids
    (:func:`~lvgp.kernels.packed.pack_documents`). The seconds spent encoding add up in
    ``_encode_clock``; ``fit`` resets it first and reports it as ``encode_seconds_`` last."""

    sentence_encoder: Any
    device: Any
    verbose: bool

    def _check_savable(self) -> None:
        check_encoder_named(self.sentence_encoder, "sentence_encoder")

    def _sentence_encoder(self) -> Any:
        if self.sentence_encoder is None:
            raise RuntimeError(f"this {type(self).__name__} has no sentence_encoder")
        return resolve_encoder(self.sentence_encoder, self.device)

    def _encoder_features(self, X: Documents, name: str) -> torch.Tensor:
        """The sentence encoder's vectors of the texts ``X``: ``n x d`` float64; with the estimator's
        ``verbose``, a progress bar over the batches the cache does not hold (a first fit on a corpus
        spends most of its time there)."""
        start = time.perf_counter()
        features = self._sentence_encoder().encode(check_texts(X, name), verbose=bool(self.verbose)).double()
        self._encode_clock = getattr(self, "_encode_clock", 0.0) + time.perf_counter() - start
        return features

    def _document_features(self, X: Documents, name: str) -> torch.Tensor | None:
        """What is packed beside the word ids of the texts ``X``: the sentence encoder's ``n x d`` vectors
        (:meth:`_encoder_features`), or ``None`` without a sentence encoder."""
        return None if self.sentence_encoder is None else self._encoder_features(X, name)

    def _with_encoder(self, x: torch.Tensor, X: Documents, name: str) -> torch.Tensor:
        """``x`` packed with :meth:`_document_features` of the texts ``X`` (``x`` itself without a sentence
        encoder)."""
        features = self._document_features(X, name)
        return x if features is None else pack_documents(x, features)


class FittedVocabularyMixin:
    """``vocabulary_`` of an estimator that keeps its :class:`~lvgp.base.encoding.DocumentEncoder` as
    ``encoder_``, as :class:`ExactGPRegressorBase` has it."""

    @property
    def vocabulary_(self) -> Vocabulary | None:
        """The fitted vocabulary (``None`` when fitted on counts or padded word ids)."""
        check_is_fitted(self, "encoder_")
        return self.encoder_.vocabulary  # type: ignore[attr-defined]


def saved_approximation(state_dict: dict) -> str:
    """The LDK's approximation a saved model state was fitted with, read off its buffers."""
    if any(k.endswith("rff_weights") for k in state_dict):
        return "rff"
    if any(k.endswith("landmarks") for k in state_dict):
        return "nystrom"
    return "exact"


class KernelParamsMixin(FrozenParamsMixin):
    """``kernel=`` of an LDK estimator (an :class:`~lvgp.kernels.LDKSpec`, a gpytorch ``Kernel`` or a
    factory): ``set_params(kernel__rho=...)`` replaces the frozen spec (scikit-learn would set the
    field in place), so that ``GridSearchCV`` grids over the spec's fields work; and the kernel's
    part of save/load."""

    kernel: Any
    get_params: Callable[..., dict]
    #: the fields of the spec ``kernel=None`` stands for (``LDKSpec(**_default_kernel)``)
    _default_kernel: dict[str, Any] = {}

    def _replaced_kernel(self, fields: dict[str, Any]) -> Any:
        """``kernel__<field>=``: the kernel's :class:`~lvgp.kernels.LDKSpec` (or
        :class:`~lvgp.kernels.BagOfWordsSpec`) with ``fields`` changed (with ``kernel=None``, the estimator's
        default spec); refused for a user kernel."""
        from ..kernels.spec import BagOfWordsSpec

        spec = self.kernel if isinstance(self.kernel, BagOfWordsSpec) else self._spec
        if spec is None:
            raise ValueError(
                f"kernel__{next(iter(fields))}: kernel__* parameters set fields of an LDKSpec or a BagOfWordsSpec; "
                f"this estimator's kernel is a {type(self.kernel).__name__}"
            )
        return spec.replace(**fields)

    def _assembled_kernel(self, num_words: int, documents: torch.Tensor, **options: Any) -> Any:
        """The model's covariance for ``kernel=`` (:func:`lvgp.kernels.assembly.assemble_covariance`, the
        one assembly; ``options`` are its keyword arguments), its kind kept as ``kernel_kind_``."""
        from ..kernels.assembly import assemble_covariance

        spec = self._spec
        covariance = assemble_covariance(spec if spec is not None else self.kernel, num_words, documents, **options)
        self.kernel_kind_ = covariance.kind
        return covariance.kernel

    def _checked_spec(self) -> Any:
        """The kernel's :class:`~lvgp.kernels.LDKSpec` (``None`` for a user kernel), its fields and the
        estimator's capabilities checked -- those of the spec ``kernel=None`` stands for too, which the
        constraint table (the ``KernelArgument`` of ``_parameter_constraints["kernel"]``) never sees."""
        from ..kernels.spec import KernelArgument

        spec = self._spec
        if spec is not None:
            spec.check()
            for constraint in self._parameter_constraints["kernel"]:  # type: ignore[attr-defined]
                if isinstance(constraint, KernelArgument):
                    constraint.check_capabilities(spec)
        return spec

    @property
    def word_vectors_(self) -> Any:
        """The learned word vectors, ``num_words x latent_dim``, the point estimates or posterior means of
        the fitted kernel's one word-vector module (an ``AttributeError`` for a kernel with none or
        several)."""
        from ..base.device import to_host
        from ..kernels.spec import word_vector_modules

        check_is_fitted(self, "model_")
        modules = word_vector_modules(self.model_.covar_module)  # type: ignore[attr-defined]
        if len(modules) != 1:
            raise AttributeError(f"word_vectors_: the kernel holds {len(modules)} word-vector modules, not one")
        return to_host(modules[0].mean).copy()

    @property
    def _spec(self) -> Any:
        """The kernel's :class:`~lvgp.kernels.LDKSpec` (the estimator's default for ``kernel=None``), or
        ``None`` for a user kernel."""
        from ..kernels.spec import LDKSpec

        if self.kernel is None:
            return LDKSpec(**self._default_kernel)
        return self.kernel if isinstance(self.kernel, LDKSpec) else None


class SavedParamsMixin:
    """What every saved lvgp estimator writes first: its ``get_params()`` as plain values that
    ``torch.load(weights_only=True)`` reads back (:func:`lvgp.base.persistence.plain_value`: numpy
    scalars and generators included; a vocabulary as a dict, an :class:`~lvgp.kernels.LDKSpec` as its
    fields, a table of embeddings whole), and the file's format tag, checked on load. ``save`` refuses
    a value it cannot write back (``TypeError`` naming the parameter) before writing anything.

    A user kernel (a gpytorch ``Kernel`` or a factory) is not pickled: the file records what it was,
    and ``load(path, kernel=...)`` takes the same kernel or factory again to rebuild the model, whose
    saved state then fills it.

    :meth:`save` and :meth:`load` are the one persistence of every lvgp estimator that has it; a class
    gives two hooks: :meth:`_fitted_payload` (what the fit learned, as tensors and plain values) and
    :meth:`_restore_fitted` (that payload put back on a new estimator built from the saved
    parameters), plus ``_fitted_attribute`` (what ``check_is_fitted`` looks for) and, where a value
    cannot be saved by name, :meth:`_check_savable`."""

    get_params: Callable[..., dict]
    #: the current format version (1: lvgp 0.1, the kernel's settings as the estimator's own
    #: arguments; 2: an LDKSpec; 3: fit options as objects)
    _format_version = FIT_OPTIONS_FORMAT
    #: the first format version a file of this class was written in (older ones are refused): 1 for
    #: the estimators that lvgp 0.1 saved, 3 for the ones that got ``save`` with format 3
    _first_format_version = FIT_OPTIONS_FORMAT
    #: the fitted attribute :meth:`save` checks for
    _fitted_attribute = "model_"
    #: parameters renamed since files were written: old name -> new name (read back under the new)
    _renamed_params: dict[str, str] = {}

    # ------------------------------------------------------------------ the template
    def save(self, path: str | Path) -> None:
        """Save the fitted estimator with ``torch.save``: its parameters (``get_params()`` as plain
        values) and what the fit learned, tensors on the CPU whatever the fitting device.
        :meth:`load` reads the file back with ``torch.load(weights_only=True)`` (no arbitrary
        unpickling) and the loaded estimator predicts bit-identically. A parameter that cannot be
        written back is a ``TypeError`` naming it, raised before anything is written."""
        check_is_fitted(self, self._fitted_attribute)
        self._check_savable()
        payload = {"format": self._format(), "params": self._saved_params(), **self._fitted_payload()}
        torch.save(payload, Path(path))

    @classmethod
    def load(
        cls,
        path: str | Path,
        device: str | torch.device | None = None,
        kernel: Any = None,
        encoder_kernel: Any = None,
    ) -> Self:
        """An estimator written by :meth:`save`, read with ``torch.load(weights_only=True)``, on
        ``device`` (default: the device it was fitted on, which must exist here). ``kernel``: for a
        model fitted with a user kernel, the same gpytorch kernel or factory (a file holds its state,
        not its code); ``encoder_kernel``: likewise for a model whose ``encoder_kernel`` held a gpytorch
        kernel (the same value again: the kernel, or the list with the same names and kernels in the same
        places); estimators without such a parameter refuse it. A file ``save`` did not
        write, or a damaged one, is a ``ValueError`` naming the file."""
        from ..base.persistence import SavedFileError

        est, payload = cls._from_saved(path, device, kernel, encoder_kernel)
        try:
            est._restore_fitted(payload)
        except (KeyError, TypeError, AttributeError, IndexError) as err:
            raise SavedFileError(f"{path} is damaged: {type(err).__name__}: {err}") from None
        except RuntimeError as err:  # the saved state does not fit the model the parameters build
            raise ValueError(
                f"{path}: the saved model state does not fit the model its parameters build"
                + (" with the kernel= given" if kernel is not None else "")
                + (" with the encoder_kernel= given" if encoder_kernel is not None else "")
                + f" ({str(err).splitlines()[0][:300]})"
            ) from None
        return est

    def _check_savable(self) -> None:
        """Refuse (``ValueError``) a fitted estimator a file cannot describe; nothing by default."""

    #: fitted attributes saved by value (numbers, strings, lists, dicts of str keys, numpy arrays)
    #: by :meth:`_attribute_values`; those the fit did not set are left out
    _saved_attributes: tuple[str, ...] = ()

    def _attribute_values(self) -> dict:
        """The :attr:`_saved_attributes` the fit set, as plain values (numpy arrays as tensors)."""
        from ..base.persistence import plain_value

        return {name: plain_value(getattr(self, name), name) for name in self._saved_attributes if hasattr(self, name)}

    def _restore_attributes(self, values: dict) -> None:
        """The inverse of :meth:`_attribute_values` (tensors back to numpy arrays)."""
        from ..base.persistence import restored_value

        for name, value in values.items():
            setattr(self, name, value.numpy() if isinstance(value, torch.Tensor) else restored_value(value))

    def _fitted_payload(self) -> dict:
        """What the fit learned, as the entries of the saved file beside ``format`` and ``params``:
        tensors (on the CPU) and plain values only (``torch.load(weights_only=True)`` reads them)."""
        raise NotImplementedError

    def _restore_fitted(self, payload: dict) -> None:
        """Put :meth:`_fitted_payload`'s entries back on this estimator (built from the saved
        parameters), so that it predicts as the saved one did."""
        raise NotImplementedError

    def _saved_params(self) -> dict:
        """``get_params()`` as plain values (``torch.load(weights_only=True)`` can read them)."""
        from ..base.persistence import plain_value

        specs = _saved_specs()
        out: dict[str, Any] = {}
        for name, value in self.get_params(deep=False).items():
            if name == "vocabulary" and value is not None:
                out[name] = value.to_dict()
            elif name.endswith("embeddings") and not isinstance(value, np.ndarray):
                # word_embeddings, the matcher's source_/target_embeddings (an array: as an array)
                out[name] = spec_to_plain(value)  # a table of one's own whole
            elif isinstance(value, FitOptions):
                plain = value.to_plain()
                fields = {k: plain_value(v, f"{name}.{k}") for k, v in plain["fields"].items()}
                out[name] = {_FIT_OPTIONS_TAG: {**plain, "fields": fields}}
            elif name == "encoder_kernel" and not _names_only(value):  # what its kernels were (load takes them)
                parts = [_saved_encoder_kind(one) for one in encoder_kernel_parts(value)]
                out[name] = parts if isinstance(value, (list, tuple)) else parts[0]
            elif name == "kernel":
                if value is None or isinstance(value, str):  # a covariance by name (EncoderGPRegressor)
                    out[name] = value
                elif (tag := next((t for c, (t, _) in specs.items() if isinstance(value, c)), None)) is not None:
                    out[name] = {tag: value.to_plain()}  # a spec, by its fields
                else:
                    out[name] = {_USER_KERNEL_TAG: _describe_kernel(value)}
            else:
                out[name] = plain_value(value, name)
        return out

    @classmethod
    def _restored_params(cls, params: dict, kernel: Any = None, path: Any = None) -> dict:
        from ..base.persistence import restored_value
        from ..kernels.spec import LDKSpec

        params = {
            k: v if k in ("vocabulary", "kernel") or k.endswith("embeddings") else restored_value(v)
            for k, v in params.items()
        }
        for name, value in params.items():
            if isinstance(value, dict) and _FIT_OPTIONS_TAG in value:
                params[name] = FitOptions.from_plain(value[_FIT_OPTIONS_TAG])
        if params.get("vocabulary") is not None:
            params["vocabulary"] = Vocabulary.from_dict(params["vocabulary"])
        for name in [k for k in params if k.endswith("embeddings")]:
            value = params[name]
            params[name] = value.numpy() if isinstance(value, torch.Tensor) else spec_from_plain(value)
        saved = params.get("kernel")
        if isinstance(saved, str) and kernel is not None:
            raise ValueError(f"{path} names its kernel ({saved!r}): load it without kernel=")
        specs = _saved_specs()
        tags = saved if isinstance(saved, dict) else {}
        held = next((c for c, (tag, _) in specs.items() if tag in tags), None)
        if (saved is None or held is not None) and kernel is not None:  # None: the default LDKSpec
            what = specs[held or LDKSpec][1]
            raise ValueError(f"{path} was fitted with {what}, which it holds: load it without kernel=")
        if held is not None:
            params["kernel"] = held.from_plain(tags[specs[held][0]])
        elif isinstance(saved, dict) and _USER_KERNEL_TAG in saved:
            if kernel is None:
                raise ValueError(
                    f"{path} was fitted with a user kernel ({saved[_USER_KERNEL_TAG]}), which a file does not hold: "
                    f"pass the same kernel or factory again, {cls.__name__}.load(path, kernel=...); its saved "
                    "state then fills it"
                )
            params["kernel"] = kernel
        return params

    @classmethod
    def _legacy_params(cls, params: dict, state_keys: Any) -> dict:
        """The arguments of a file of format 1 (lvgp 0.1) in today's form: the kernel's settings
        gathered into an :class:`~lvgp.kernels.LDKSpec`; ``approximation="auto"`` becomes the
        approximation the file's model was fitted with (the old rules differed by estimator)."""
        from ..kernels.spec import LDKSpec

        spec: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for name, value in params.items():
            if name in _LEGACY_SPEC_FIELDS:
                spec[name] = value
            elif name in _LEGACY_RENAMES:
                spec[_LEGACY_RENAMES[name]] = value
            elif name not in _LEGACY_DROPPED:
                rest[name] = value
        if spec.get("approximation", "auto") == "auto":
            spec["approximation"] = saved_approximation(dict.fromkeys(state_keys))
        if spec.get("rho") == 0:
            spec["rho"] = None
        rest["kernel"] = LDKSpec(**spec)
        return rest

    @classmethod
    def _flat_fit_options(cls, params: dict) -> dict:
        """The arguments of a file written before the fit options were objects (formats 1 and 2), in
        today's form (:meth:`FitOptionsMixin._flat_fit_options`); as they are for an estimator without
        fit-option objects."""
        return params

    @classmethod
    def _format(cls) -> str:
        return f"lvgp.{cls.__name__}/{cls._format_version}"

    @classmethod
    def _from_saved(
        cls, path: str | Path, device: str | torch.device | None, kernel: Any = None, encoder_kernel: Any = None
    ) -> tuple[Any, dict]:
        """A new estimator with the saved parameters (on ``device`` where given) and the payload of
        the file ``save`` wrote (:func:`lvgp.base.persistence.read_saved`: a ``ValueError`` naming the
        file for anything it did not write); files of format 1 (lvgp 0.1) are read too."""
        from ..base.persistence import read_saved

        for given, name in ((kernel, "kernel"), (encoder_kernel, "encoder_kernel")):
            if given is not None and name not in cls._get_param_names():  # type: ignore[attr-defined]
                raise TypeError(f"{cls.__name__}.load takes no {name}=: a {cls.__name__} has no {name} parameter")
        payload = read_saved(path, cls.__name__, cls._readable_formats())
        return cls._from_payload(payload, path, device, kernel, encoder_kernel), payload

    @classmethod
    def _readable_formats(cls) -> tuple[str, ...]:
        """The formats :meth:`load` reads, the current one first."""
        versions = range(cls._format_version, cls._first_format_version - 1, -1)
        return tuple(f"lvgp.{cls.__name__}/{v}" for v in versions)

    @classmethod
    def _from_payload(
        cls, payload: dict, path: Any, device: str | torch.device | None, kernel: Any = None, encoder_kernel: Any = None
    ) -> Any:
        """A new estimator with the parameters of a saved ``payload`` (its format checked; ``path``: the file it
        came from, for messages), on ``device`` where given: :meth:`_from_saved` after reading the file, and an
        estimator whose file holds another's (``OpenSetClassifier``'s classifier) for that one."""
        from ..base.persistence import SavedFileError

        legacy = f"lvgp.{cls.__name__}/1"
        if payload.get("format") not in cls._readable_formats():
            raise SavedFileError(f"{path} is damaged: it holds a {payload.get('format')!r}, not a saved {cls.__name__}")
        try:
            params = cls._restored_params(payload["params"], kernel, path)
            if "encoder_kernel" in params or encoder_kernel is not None:
                params["encoder_kernel"] = _restored_encoder_kind(params.get("encoder_kernel"), encoder_kernel, path)
            if payload["format"] == legacy:
                state = payload.get("state_dict", payload.get("model", {}))
                params = cls._legacy_params(params, state.keys())
            if int(payload["format"].rsplit("/", 1)[1]) < FIT_OPTIONS_FORMAT:
                params = cls._flat_fit_options(params)
            for old, new in cls._renamed_params.items():
                if old in params:
                    params[new] = params.pop(old)
        except (KeyError, TypeError, AttributeError) as err:
            raise SavedFileError(
                f"{path} is damaged: its parameters cannot be read ({type(err).__name__}: {err})"
            ) from None
        if device is not None:
            if "device" not in cls._get_param_names():  # type: ignore[attr-defined]
                raise TypeError(f"{cls.__name__}.load takes no device=: a {cls.__name__} computes on the host")
            params["device"] = device
        try:
            return cls(**params)
        except TypeError as err:
            raise SavedFileError(f"{path} is damaged or of another lvgp: its parameters do not fit ({err})") from None


def _names_only(kind: Any) -> bool:
    """Whether ``encoder_kernel`` holds names alone (a file holds them by value)."""
    return all(isinstance(one, str) for one in encoder_kernel_parts(kind))


def _saved_encoder_kind(kind: Any) -> Any:
    """One part of ``encoder_kernel`` as a file holds it: a name as it is, a gpytorch kernel as what it was."""
    return kind if isinstance(kind, str) else {_USER_KERNEL_TAG: _describe_kernel(kind)}


def _restored_encoder_kind(saved: Any, given: Any, path: Any) -> Any:
    """``encoder_kernel`` of a saved estimator: the saved names, or -- where the file held gpytorch kernels,
    which it describes but does not hold -- ``given``, the same value passed to ``load`` again (a ``ValueError``
    naming the file where it is missing or does not match the saved names and places)."""
    items = encoder_kernel_parts(saved)
    if not any(isinstance(one, dict) and _USER_KERNEL_TAG in one for one in items):
        if given is not None:
            raise ValueError(f"{path} names its encoder kernel ({saved!r}): load it without encoder_kernel=")
        return saved
    if given is None:
        raise ValueError(
            f"{path} was fitted with encoder_kernel={saved!r}: a file describes a gpytorch kernel but does not hold "
            "it; pass the same encoder_kernel again, load(path, encoder_kernel=...), and its saved state fills it"
        )
    got = encoder_kernel_parts(given)
    same = isinstance(given, (list, tuple)) == isinstance(saved, list) and len(got) == len(items)
    same = same and all(
        not isinstance(g, str) if isinstance(one, dict) else g == one for one, g in zip(items, got, strict=False)
    )
    if not same:
        raise ValueError(
            f"{path} was fitted with encoder_kernel={saved!r}; the encoder_kernel= given ({given!r}) differs in its "
            "names or places"
        )
    return given


def _describe_kernel(kernel: Any) -> str:
    from gpytorch.kernels import Kernel

    if isinstance(kernel, Kernel):
        text = " ".join(repr(kernel).split())
        return text if len(text) <= 300 else text[:297] + "..."
    return f"factory {getattr(kernel, '__qualname__', type(kernel).__name__)}"
