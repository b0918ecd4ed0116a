"""Data-parallel training under torchrun (issue 41): 2 gloo processes on CPU, each fitting the same
estimator on the same data inside a torch.distributed group, follow the single-process trajectory for
the same global batch and seed, to 1e-6 -- the sparse GP-LVSM and the variational GP classifier
(binary: its likelihood is deterministic quadrature; three classes: the softmax ELBO's Monte Carlo draws,
one set a global batch, each process taking its share's columns)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from lvgp import LDKGPClassifier, MiniBatch, SparseGPLVSMRegressor
from lvgp.datasets import make_synonym_regression
from lvgp.kernels import LDKSpec

SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    import torch, torch.distributed as dist
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    from tests.test_torchrun import fit_both
    dist.init_process_group("gloo")
    out = fit_both()
    if dist.get_rank() == 0:
        json.dump(out, open(sys.argv[1], "w"))
    dist.barrier()
    dist.destroy_process_group()
    """
)


def fit_both() -> dict:
    """The two fits, in one process or in every process of a group; their curves and predictions."""
    corpus = make_synonym_regression(n=134, noise=0.1, random_state=5)
    texts, y = list(corpus.texts), np.asarray(corpus.y)
    reg = SparseGPLVSMRegressor(
        LDKSpec(latent_dim=2),
        num_inducing=16,
        optimizer=MiniBatch(batch_size=64, max_epochs=3, lr=0.03),
        random_state=0,
    ).fit(texts, y)
    clf = LDKGPClassifier(
        LDKSpec(latent_dim=2, rho=0.1),
        inference="variational",
        num_inducing=16,
        optimizer=MiniBatch(batch_size=45, max_epochs=4),
        random_state=0,
    ).fit(texts, (y > np.median(y)).astype(int))
    # three classes: the softmax ELBO's Monte Carlo draws, one set a global batch, each process its share's
    three = LDKGPClassifier(
        LDKSpec(latent_dim=2, rho=0.1),
        inference="variational",
        num_inducing=16,
        optimizer=MiniBatch(batch_size=45, max_epochs=3),
        random_state=0,
    ).fit(texts, np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])))
    from lvgp.base.distributed import process_group

    return {
        "world_size": process_group()[1],  # 2 in the torchrun group: each process trained its share
        "reg_steps": list(reg.step_losses_),
        "reg_pred": reg.predict(texts[:20]).tolist(),
        "clf_loss": list(clf.loss_curve_),
        "clf_proba": clf.predict_proba(texts[:20]).tolist(),
        "softmax_loss": list(three.loss_curve_),
        "softmax_proba": three.predict_proba(texts[:20]).tolist(),
    }


def test_two_torchrun_processes_follow_the_single_process_trajectory(tmp_path):
    import os
    from pathlib import Path

    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out.json"
    root = Path(__file__).resolve().parent.parent
    # --standalone: the agent's store listens on a port of its own choosing (a free port chosen here could be
    # taken by another process before torchrun listens on it)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += ["--log-dir", str(tmp_path / "logs")]
    command += [str(script), str(out)]  # (without --log-dir, torchrun leaves a folder in the temporary directory)
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    parallel = json.loads(out.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        single = fit_both()
    assert parallel.pop("world_size") == 2 and single.pop("world_size") == 1
    assert len(parallel["reg_steps"]) == len(single["reg_steps"]) == 9
    for key in single:
        np.testing.assert_allclose(parallel[key], single[key], rtol=1e-6, atol=1e-9, err_msg=key)


def test_inside_a_group_the_fit_needs_an_integer_seed_and_no_local_processes(monkeypatch):
    import lvgp.base.distributed as distributed
    import lvgp.models.gpc.estimator as gpc
    import lvgp.models.sparse as sparse

    for module in (sparse, gpc):
        monkeypatch.setattr(module, "process_group", lambda: (0, 2))
    texts, y = ["good film", "bad film", "good plot", "bad plot"], [1.0, -1.0, 1.0, -1.0]
    with pytest.raises(ValueError, match="random_state=<int>"):
        SparseGPLVSMRegressor(optimizer=MiniBatch(max_steps=2)).fit(texts, y)
    with pytest.raises(ValueError, match="leave it False"):
        SparseGPLVSMRegressor(distributed=True, world_size=2, random_state=0).fit(texts, y)
    with pytest.raises(ValueError, match="random_state=<int>"):
        LDKGPClassifier(inference="variational").fit(texts, [1, 0, 1, 0])
    assert distributed.process_group() == (0, 1)  # not in a group here


def test_the_scaling_page_runs_as_written_under_torchrun(tmp_path):
    """docs/models/scaling.md's training script, launched as the page says (one machine, 2 processes)."""
    import os
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    block = re.findall(r"```python\n(.*?)```", (root / "docs" / "models" / "scaling.md").read_text(), flags=re.S)[0]
    (tmp_path / "train.py").write_text(block)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += ["--log-dir", "logs", "train.py"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    assert SparseGPLVSMRegressor.load(tmp_path / "model.pt").predict(["a b c"]).shape == (1,)


def test_the_scaling_pages_other_snippets_run_as_written():
    """docs/models/scaling.md's python blocks after the training script (which the test above launches
    under torchrun) run in one process, as a reader would paste them."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    blocks = re.findall(r"```python\n(.*?)```", (root / "docs" / "models" / "scaling.md").read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks[1:]:
        exec(compile(block, "docs/models/scaling.md", "exec"), namespace)  # noqa: S102 -- our own documentation
