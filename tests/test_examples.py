"""Every example script runs with tiny settings; an example not listed here fails the suite."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests._forked_run import run_script

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"

# script name -> extra arguments (each example takes --tiny)
EXAMPLES = {
    "gpytorch_composition.py": [],
    "estimator_quickstart.py": [],
    "slda_quickstart.py": [],
}


def test_every_example_is_listed():
    found = {p.name for p in EXAMPLES_DIR.glob("*.py")}
    assert found == set(EXAMPLES), f"unlisted: {found - set(EXAMPLES)}; missing: {set(EXAMPLES) - found}"


@contextlib.contextmanager
def leaves_no_temporary_files(monkeypatch):
    """The block's runs with ``TMPDIR`` a fresh folder of their own, which must be empty at the end: a script
    run without ``--out`` cleans its temporary folders up, also after many runs (a short path, under the
    system's temporary directory, for the programs that put a socket there). torch's compiler keeps its cache
    where it would be without this (``TORCHINDUCTOR_CACHE_DIR``, else its default in the system's temporary
    directory): a cache meant to stay, which a fresh folder would also make cold at every run."""
    inductor_cache = Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", os.environ.get("TORCHINDUCTOR_CACHE_DIR", str(inductor_cache)))
    with tempfile.TemporaryDirectory(prefix="lvgp-smoke-") as folder:
        monkeypatch.setenv("TMPDIR", folder)
        yield
        left = sorted(p.name for p in Path(folder).iterdir())
        assert not left, f"left in the temporary directory: {left}"


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_runs(script, monkeypatch):
    with leaves_no_temporary_files(monkeypatch):
        proc = run_script(EXAMPLES_DIR / script, ["--tiny", *EXAMPLES[script]], timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cli_help():
    out = run_script("-m lvgp", ["--help"], timeout=120)  # python -m lvgp --help, forked (tests/_forked_run.py)
    assert out.returncode == 0 and "demo" in out.stdout and "compare" in out.stdout


@pytest.mark.network
def test_demo_runs_on_real_data(tmp_path):
    out = run_script("-m lvgp", ["demo", "--tiny", "--out", str(tmp_path)], timeout=900)
    assert out.returncode == 0, out.stderr
    assert "Amazon review snippets" in out.stdout and "GP-LVSM (lvgp's default)" in out.stdout
    assert "95% cover" in out.stdout and "NLPD" in out.stdout and "MAP GP-LVSM loses on single sentences" in out.stdout


BENCHMARKS_DIR = EXAMPLES_DIR.parent / "benchmarks"
# benchmark script -> text its --quick output must contain (timings are recorded in
# benchmarks/README.md, never asserted); scripts reading real data run under the network marker
BENCHMARKS = {
    "ldk_gram.py": "speed-up",
    "mahalanobis_cost.py": "speed-up",
    "epig_cost.py": "largest relative difference between the two",
    "epig_estimator.py": "| second order, 64 draws a text |",
    "active_round.py": "largest difference between the two codes' results",
    "exact_predict_unpadded.py": "largest relative difference between the two codes' predictions",
    "platt_scaling.py": "Platt's probabilities: LIBSVM's against written out, in one run",
    "tokenize_ascii.py": "encoded test sets: equal",
    "clgp_step.py": "ratio to N=",
    "clgp_fit.py": "fit speed-up",
    "clgp_xor.py": "final ELBO",
    "gp_embedding_fit.py": "fit speed-up",
    "laplace_classifier.py": "| r8 | 30 | laplace |",
    "sparse_gplvsm.py": "ratio us/doc",
    "step_anatomy.py": "the ELBO by hand saves",
    "fused_step.py": "| fused (eager) |",
    "ldk_random_features.py": "memory ratio",
    "scale_out.py": "identical step losses",
    "slda_tomotopy.py": "held-out pR^2",
    "ldk_classifiers.py": "held-out accuracy",
    "ldk_gpc_convergence.py": "held-out accuracy against",
    "gpc_features_vs_svm.py": "Dirichlet GPC, linear kernel on tf-idf",
    "latent_smm_word_kernel.py": "identity word kernel",
    "nystrom_pooling.py": "whole / now",
    "ldk_cells.py": "dev selection s",
    "ldk_plus_design.py": "ldk-gpc-plus",
    "gpu.py": '"part": "gram"',
    "default_coverage.py": "| amazon-snippets | 36 |",
    "gpc_calibration.py": "+ temperature on leave-one-out predictions",
    "encoder_throughput.py": "| bfloat16 / before |",
    "encoder_precision.py": "| quick | 40 |",
    "encoder_design.py": "(a) contextual word vectors in place of GloVe",
    "variational_encoder_gpc.py": "| synthetic | 160 | variational, T from early stopping's held-out texts |",
    "threads_under_load.py": "| beside one idle stand-in (--quick) |",
    "torchrun_steps.py": "| processes | s a step |",
    "matching_speed.py": "The arithmetic floor of one evaluation",
    "matching_stopping.py": "| tol | patience |",
    "large_n.py": "| variational-gpc | now | 1,000 |",
    "fused_host_tables.py": "speed-up of the host's share on a GPU",
    "sparse_auto_rule.py": "| auto chooses |",
    "open_set_dev.py": "The GP classifiers' scores, mean AUROC over every (corpus, size, GP method): ",
    "open_set_score_selection_dev.py": "chosen score ",
    "open_set_accuracy_dev.py": "| toy | 5 | gp-laplace-many-draws | 2 | ",
    "open_set_calibration_dev.py": "| toy | 5 | gp-loo-balanced-as-new | 1 | ",
    "open_set_threshold_dev.py": "| toy | 5 | leave-one-out | 1 | ",
    "softmax_nodes.py": "| 15 | 1 | Latin hypercube nodes | 256 |",
    "softmax_close_calls.py": "| 15 | 1 | 256, close calls by the error after the linear control (z = 2) again at 4,096 |",
    "dirichlet_evidence.py": "| one factorization (s) | speed-up |",
    "part_selection_dev.py": "*loo's pick - sum*",
    "tfidf_baseline_dev.py": "| amazon-snippets | sublinear-stop-negations |",
    "bow_baseline_dev.py": "The rule's choice: ",
    "gp_embedding_dev.py": "The rule's choice: ",
    "laplace_linear_ablation.py": "| r8 | 50 | laplace s=CV, predictive |",
    "softmax_gp_exact.py": "| r8 | 50 | exact s=evidence, span only |",
    "gp_vocabulary_dev.py": "| r8 | 50 | negations |",
    "laplace_cost.py": "| 60 | 6 | 1 |",
    "evidence_subset_dev.py": "| 0 | 30 |",
    "intent_scale.py": "| 20 | 240 | 100 |",
    "predict_latency.py": "3. GPEmbeddingLogisticRegression.predict_proba",
    "sparse_predict.py": "the same predictions from every path to rounding",
    "minibatch_size.py": "| batch | steps | epochs | CPU ms / step, setup included |",
    "power_beta_dev.py": "The selection's choice on toy: beta = ",
    "active_paired.py": "| accuracy at the labels | 0.6300 | 0.6100 | +0.0200 ± 0.0000 | 3 of 3 |",
    "point_cloud_dev.py": 'cross {"learner": "gp-pool", "labelled by": "random"',
    "cluster_spectrum_cost.py": "now against dense, whole (before, to 8,192): largest eigenvalue difference",
    "joined_cloud_cost.py": "the search's neighbours: equal; search speed-up",
    "unseen_words_cost.py": "the two codes' ids and warnings: equal",
}
NEEDS_DATA = {
    "laplace_classifier.py",
    "slda_tomotopy.py",
    "ldk_cells.py",
    "ldk_classifiers.py",
    "ldk_gpc_convergence.py",
    "clgp_fit.py",
    "gp_embedding_fit.py",
    "gpc_features_vs_svm.py",
    "latent_smm_word_kernel.py",
    "ldk_plus_design.py",
    "default_coverage.py",
    "gpc_calibration.py",
    "tfidf_baseline_dev.py",
    "bow_baseline_dev.py",
    "gp_embedding_dev.py",
    "laplace_linear_ablation.py",
    "softmax_gp_exact.py",
    "gp_vocabulary_dev.py",
}


#: quick runs that ``benchmarks/gpu_all.sh --dry-run`` makes with the same options: where bash and timeout
#: are at hand, tests/test_gpu_all.py checks their output in its logs and they are not run a second time here
GPU_DRY_RUN_PARTS = {
    "gpu.py": "gpu",
    "large_n.py": "large-50k",
    "fused_host_tables.py": "host-tables",
    "encoder_throughput.py": "encoder",
    "intent_scale.py": "intent",
}
DRY_RUN_POSSIBLE = shutil.which("bash") is not None and shutil.which("timeout") is not None


def test_every_benchmark_is_listed():
    assert {p.name for p in BENCHMARKS_DIR.glob("[!_]*.py")} == set(BENCHMARKS)  # _helpers are not scripts


def test_every_commit_a_benchmark_names_is_in_the_history():
    """A benchmark's code "before" is extracted with ``git archive`` (``benchmarks/_before.py``): a commit amended
    away is still in the working checkout's object store (and in a local ``git clone``'s), but not in a clone
    from the remote, where the benchmark's quick run fails. Every abbreviated hash (seven hex digits, a letter
    and a digit among them) a script names must be an ancestor of ``HEAD``."""
    root = BENCHMARKS_DIR.parent
    if not (root / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    named = {
        (script.name, commit)
        for script in sorted(BENCHMARKS_DIR.glob("*.py"))
        for commit in re.findall(r"\b[0-9a-f]{7}\b", script.read_text())
        if re.search("[a-f]", commit) and re.search("[0-9]", commit)
    }
    assert named, "no commit found: the pattern no longer matches how the scripts name them"
    outside = [
        (name, commit)
        for name, commit in sorted(named)
        if subprocess.run(["git", "-C", str(root), "merge-base", "--is-ancestor", commit, "HEAD"]).returncode != 0
    ]
    assert not outside, f"commits not in HEAD's history: {outside}"


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(s, marks=pytest.mark.network) if s in NEEDS_DATA else s
        for s in sorted(BENCHMARKS)
        if not (DRY_RUN_POSSIBLE and s in GPU_DRY_RUN_PARTS)
    ],
)
def test_benchmark_runs_in_quick_mode(script, monkeypatch):
    # the before/now children forked from the benchmark's process (benchmarks/_before.py): a smoke run
    monkeypatch.setenv("LVGP_BENCHMARK_FORK", "1")
    with leaves_no_temporary_files(monkeypatch):
        out = run_script(BENCHMARKS_DIR / script, ["--quick"], timeout=900)
        assert out.returncode == 0, out.stderr
    assert BENCHMARKS[script] in out.stdout


def test_intent_scale_writes_the_open_set_studys_files(tmp_path):
    """``intent_scale.py --study-files``: the TSVs of the study run at an intent set's sizes (benchmarks/README.md),
    which the open-set study reads with ``--unknown-label oos --test-dataset``."""
    from lvgp.experiments.cli import main

    args = ["--study-files", str(tmp_path), "--classes", "3", "--per-class", "2,4"]
    out = run_script(BENCHMARKS_DIR / "intent_scale.py", args, timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"--dataset {tmp_path / 'train.tsv'} --test-dataset {tmp_path / 'test.tsv'}" in out.stdout
    train = [line.split("\t") for line in (tmp_path / "train.tsv").read_text().splitlines()]
    test = [line.split("\t") for line in (tmp_path / "test.tsv").read_text().splitlines()]
    assert train[0] == test[0] == ["text", "label"]
    assert sorted({row[1] for row in train[1:]}) == ["intent0", "intent1", "intent2", "oos"]
    assert [row[1] for row in train[1:]].count("oos") == 100 and len(train) == 1 + 3 * 4 + 100
    assert [row[1] for row in test[1:]].count("oos") == 1000 and len(test) == 1 + 3 * 30 + 1000
    argv = [
        "compare",
        "open-set",
        "--dataset",
        str(tmp_path / "train.tsv"),
        "--test-dataset",
        str(tmp_path / "test.tsv"),
    ]
    argv += ["--unknown-label", "oos", "--per-class", "4", "--splits", "1", "--methods", "svm"]
    assert main([*argv, "--out", str(tmp_path / "run"), "--quiet"]) == 0
    (record,) = json.loads((tmp_path / "run" / "results.json").read_text())
    assert (record["n_train"], record["n_in_scope"], record["n_out_of_scope"]) == (12, 90, 1000)


#: documentation pages whose ```python blocks must run as written (on tiny data)
DOC_PAGES = [
    "getting_started.md",
    *(f"models/{page}.md" for page in ("ldk", "gplvsm", "classification", "matching", "baselines", "studies")),
    "models/encoders.md",
    "models/uncertainty.md",
]


@pytest.mark.parametrize("page", DOC_PAGES)
def test_documentation_snippets_run(page, tmp_path, monkeypatch):
    import re

    if page in ("models/encoders.md", "models/uncertainty.md"):
        pytest.importorskip("transformers")
        monkeypatch.setenv("LVGP_DATA", str(tmp_path))  # the stand-in encoder's cache stays out of the user's

    text = (EXAMPLES_DIR.parent / "docs" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"docs/{page} has no python block"
    namespace: dict = {}
    for block in blocks:
        # a block inside a list item is indented with it
        exec(compile(textwrap.dedent(block), f"docs/{page}", "exec"), namespace)  # noqa: S102 -- our own docs


def test_a_forked_run_is_the_scripts_own_run(tmp_path, monkeypatch):
    """``run_script`` (tests/_forked_run.py) gives what ``python SCRIPT ARGS`` gives: the argv, ``__name__``, the
    script's folder on ``sys.path``, the caller's environment, its output and exit status -- from the
    forkserver and, where a platform has none, from a subprocess."""
    import multiprocessing

    folder = tmp_path / "a folder"  # a space in the path: one argument all the same
    folder.mkdir()
    (folder / "helper_module.py").write_text("VALUE = 41\n")
    script = folder / "script.py"
    script.write_text(
        "import os, sys\nfrom helper_module import VALUE\n"
        "print(__name__, sys.argv[1:], VALUE + 1, os.environ['LVGP_FORKED_RUN_CHECK'])\n"
        "print('to stderr', file=sys.stderr)\nraise SystemExit(3)\n"
    )
    monkeypatch.setenv("LVGP_FORKED_RUN_CHECK", "the caller's")  # set after the server may have started
    for forkserver in (True, False):
        if not forkserver:
            monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
        out = run_script(script, ["--quick", "x"], timeout=120)
        expected = "__main__ ['--quick', 'x'] 42 the caller's\n"
        assert (out.returncode, out.stdout, out.stderr) == (3, expected, "to stderr\n")
        # "-m NAME": python -m NAME, run from the working folder (first on sys.path), argv[0] the module's file
        out = run_script("-m script", ["--quick", "x"], timeout=120, cwd=folder)
        assert (out.returncode, out.stdout, out.stderr) == (3, expected, "to stderr\n")


def test_a_benchmarks_child_gives_the_same_forked_or_not(tmp_path, monkeypatch):
    """``benchmarks/_before.py``: ``run_code`` and ``run_child`` give the same results from a fresh
    interpreter and, under ``LVGP_BENCHMARK_FORK=1`` (the smoke runs), from a fork of the caller: the
    other package's ``lvgp`` in place of the one loaded, the thread setting, the argument, the exit
    status, the error output."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("_before_under_test", BENCHMARKS_DIR / "_before.py")
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    other = tmp_path / "other"
    (other / "lvgp").mkdir(parents=True)
    (other / "lvgp" / "__init__.py").write_text("WHICH = 'the other'\n")
    code = (
        "import json, os, sys, torch, lvgp\nargs = json.loads(sys.argv[1])\n"
        "print('a line before')\nprint(json.dumps({'which': getattr(lvgp, 'WHICH', 'today'), 'x': args['x'], "
        "'omp': os.environ.get('OMP_NUM_THREADS'), 'threads': torch.get_num_threads()}))"
    )
    script = tmp_path / "script.py"
    script.write_text("import sys\nprint(sys.argv[1:], __name__)\nprint('to stderr', file=sys.stderr)\nsys.exit(3)\n")
    seen = {}
    for fork in ("0", "1"):
        monkeypatch.setenv("LVGP_BENCHMARK_FORK", fork)
        assert before._may_fork() == (fork == "1")
        seen[fork] = before.run_code(code, other, {"x": 1}, omp_threads="2")
        with pytest.raises(RuntimeError, match="ValueError: boom"):
            before.run_code("raise ValueError('boom')", before.ROOT, {})
        child = before.run_child(script, ["--one", "2"])
        assert (child.returncode, child.stdout, child.stderr) == (3, "['--one', '2'] __main__\n", "to stderr\n")
        with pytest.raises(subprocess.CalledProcessError):
            before.run_child(script, [], check=True)
    # a fork sets torch's threads by OMP_NUM_THREADS, as torch does at import (where MKL_NUM_THREADS, set
    # by this suite's conftest, does not decide it)
    assert seen["1"].pop("threads") == 2
    seen["0"].pop("threads")
    assert seen["0"] == seen["1"] == {"which": "the other", "x": 1, "omp": "2"}, json.dumps(seen)
    # today's tree: the lvgp loaded here, kept in the fork (still LVGP_BENCHMARK_FORK=1)
    assert before.run_code(code, before.ROOT, {"x": 2}) == {"which": "today", "x": 2, "omp": "1", "threads": 1}
    import lvgp

    assert not hasattr(lvgp, "WHICH")  # the caller's lvgp is its own
