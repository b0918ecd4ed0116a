"""Shared test configuration: one torch thread per test process (``make test`` runs two workers, one
per core; torch's OpenMP threads would otherwise spin against each other), and hypothesis profiles
(``HYPOTHESIS_PROFILE=dev`` for a deeper run). gpytorch is imported here so that the xdist
controller has it whole before a worker reports one of its warnings: importing it from inside that
report hit gpytorch's circular ``kernels``/``variational`` imports and crashed a worker."""

from __future__ import annotations

import os

# before torch is imported anywhere: subprocesses (the examples, the CLI, notebooks) inherit it
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import gpytorch  # noqa: E402, F401 -- imported whole here: pytest-xdist's controller imports a warning's module
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# kernels and estimators are slow next to what hypothesis expects: no deadline, few examples in CI
settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def tiny_encoder(tmp_path, monkeypatch):
    """``make(words, seed)``: a tiny random BERT (lvgp.encoders) that the pretrained encoder's name
    resolves to for the rest of the test (what a saved file names is reloaded by name), its
    encodings cached under ``tmp_path``: tests never download the real model."""
    pytest.importorskip("transformers")
    from lvgp.encoders import SentenceEncoder
    from lvgp.encoders import sentence as sentence_module

    monkeypatch.setenv("LVGP_DATA", str(tmp_path))

    def make(words, seed):
        tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, words=words, seed=seed)
        monkeypatch.setattr(sentence_module, "shared_encoder", lambda name="x", device="cpu": tiny)
        return tiny

    return make


@pytest.fixture
def toy_topics_tsv(tmp_path, tiny_encoder):
    """The path of a TSV (columns text and label) of three made-up topics, 20 texts each, for the
    studies' tests; the pretrained encoder's name resolves to a tiny random BERT (``tiny_encoder``)."""
    import numpy as np

    tiny_encoder(None, 0)
    rng = np.random.default_rng(2)
    words = {"pos": "good great fine nice", "neg": "bad awful poor dull", "money": "tax bank money loan"}
    rows = [" ".join(rng.choice(words[c].split(), 4)) + f" note {i}\t{c}" for i in range(20) for c in words]
    path = tmp_path / "toy.tsv"
    path.write_text("\n".join(["text\tlabel", *rows]) + "\n")
    return str(path)


@pytest.fixture
def record_int32_casts(monkeypatch):
    """``with record_int32_casts() as sizes:``: inside the block, every ``Tensor.long()`` of an int32
    tensor appends that tensor's number of elements to ``sizes`` (to check that an estimator casts an
    int32 corpus batch by batch, never whole)."""
    import contextlib

    @contextlib.contextmanager
    def recording():
        sizes: list[int] = []
        long = torch.Tensor.long

        def recorded(self, *args, **kwargs):
            if self.dtype == torch.int32:
                sizes.append(self.numel())
            return long(self, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(torch.Tensor, "long", recorded)
            yield sizes

    return recording


@pytest.fixture
def isolated_registry(monkeypatch):
    """``lvgp.experiments.registry`` with the methods, the loaded plugins, the plugins' environment variable and
    ``sys.path`` as they were once the test ends (a plugin left in the environment would be imported by every study's
    worker process after it); ``benchmarks/plugins`` first on the path. Returns the registry module."""
    import sys
    from pathlib import Path

    from lvgp.experiments import registry

    monkeypatch.setattr(registry, "_METHODS", {k: dict(v) for k, v in registry._METHODS.items()})
    monkeypatch.setattr(registry, "_LOADED_PLUGINS", set())
    monkeypatch.setenv(registry.PLUGINS_ENV, "")
    plugins = Path(__file__).resolve().parent.parent / "benchmarks" / "plugins"
    monkeypatch.setattr(sys, "path", [str(plugins), *sys.path])
    for name in ("vocabulary_diagnostic", "svm_features_diagnostic"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return registry
