"""Where a latent SMM fit and an LDK GP classifier fit spend their time, and how fast they are
now against the code before this change (commit ``05639cb``), measured in the same run.

Part 1 -- latent SMM, one setting (q = 2, rho = 0.1, C = 32, gamma = 1), 200 20ng training
documents (the classification study's first sample), words in fewer than 1% of them removed:
* before: the package at ``--before`` (extracted with ``git archive``, run in a subprocess):
  30 outer iterations, each one gradient step with backtracking and 190 separate ``SVC`` fits;
* now: L-BFGS on g = max_A L (Danskin's gradient, one LIBSVM call per evaluation), at the
  study's budget (50 iterations) and to convergence (``--converge-iter``), and the time at which
  its objective first falls below the final objective of the code before.
Each fit is profiled (cProfile, top functions by own time). Accuracy on 1,500 held-out
documents of the training pool (not the test split).

Part 2 -- LDK GP classifier on r8 at 100 training documents (the study's 3 samples, test split):
the RBF SVM's grid search (the study's baseline) against the GP classifier before (variational
softmax, 300 Adam epochs) and now (Dirichlet inference, L-BFGS); the target is the SVM's
accuracy within 20x the SVM's grid-search time.

One thread (``torch.set_num_threads(1)``, ``OMP_NUM_THREADS=1`` for the subprocess).

    python benchmarks/ldk_classifiers.py [--quick] [--before 05639cb]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _before import extract, run_code
from _profile import profile_table, stats_text

from lvgp import LBFGS
from lvgp.kernels import LDKSpec

# runs inside the subprocess with the old package on sys.path; prints one JSON line
_BEFORE_SMM = r"""
import cProfile, io, json, pstats, sys, time, warnings
import numpy as np, torch
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp import Vocabulary
from lvgp.models.latent_smm import LatentSMMClassifier
args = json.loads(sys.argv[1])
data = json.loads(open(args["data"]).read())
vocab = Vocabulary(min_df=0.01).fit(data["train"])
m = LatentSMMClassifier(latent_dim=2, rho=0.1, C=32.0, max_outer=args["outer"], vocabulary=vocab, random_state=0)
prof = cProfile.Profile()
start = time.perf_counter()
prof.enable()
m.fit(data["train"], np.array(data["labels"]))
prof.disable()
seconds = time.perf_counter() - start
acc = float(np.mean(m.predict(data["dev"]) == np.array(data["dev_labels"])))
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(8)
print(json.dumps({"seconds": seconds, "objective": m.objective_curve_[-1], "accuracy": acc,
                  "iterations": m.n_iter_, "profile": out.getvalue()}))
"""

_BEFORE_GPC = r"""
import json, sys, time, warnings
import numpy as np, torch
torch.set_num_threads(1)
warnings.simplefilter("ignore")
from lvgp.models.gpc import LDKGPClassifier
args = json.loads(sys.argv[1])
data = json.loads(open(args["data"]).read())
m = LDKGPClassifier(latent_dim=2, rho=0.1, num_inducing=128, max_epochs=args["epochs"], lr=0.05, random_state=0)
start = time.perf_counter()
m.fit(data["train"], np.array(data["labels"]))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "accuracy": float(np.mean(m.predict(data["test"]) == np.array(data["test_labels"])))}))
"""


def run_before(code: str, package: Path, args: dict) -> dict:
    return run_code(code, package, args)


def smm_data(quick: bool) -> dict:
    from lvgp.datasets import load_corpus
    from lvgp.experiments.classification import stratified_sample

    corpus = load_corpus("20ng", "classification")
    size = 30 if quick else 200
    train = stratified_sample(corpus.train_labels, size, np.random.default_rng([0, 0, size, 2018]))
    rest = np.setdiff1d(np.arange(len(corpus.train_labels)), train)
    dev = np.random.default_rng(1).choice(rest, 100 if quick else 1500, replace=False)
    return {
        "train": [corpus.train_texts[i] for i in train],
        "labels": corpus.train_labels[train].tolist(),
        "dev": [corpus.train_texts[i] for i in dev],
        "dev_labels": corpus.train_labels[dev].tolist(),
    }


def part_smm(args, package: Path, tmp: Path) -> None:
    from lvgp import Vocabulary
    from lvgp.models.latent_smm import LatentSMMClassifier

    data = smm_data(args.quick)
    path = tmp / "smm.json"
    path.write_text(json.dumps(data))
    outer = 3 if args.quick else 30
    before = run_before(_BEFORE_SMM, package, {"data": str(path), "outer": outer})
    vocab = Vocabulary(min_df=0.01).fit(data["train"])
    y = np.array(data["labels"])
    print(f"\n## Latent SMM: 20ng, {len(y)} documents, {len(vocab)} words after the 1% cut, q=2, rho=0.1, C=32\n")

    class Timed(LatentSMMClassifier):
        """Records (seconds since the fit began, g) at every evaluation."""

        def _objective(self, x):
            value = super()._objective(x)
            self.trace.append((time.perf_counter() - self.t0, value.item()))
            return value

    rows = [(f"before ({outer} outer gradient steps)", before["seconds"], before["objective"], before["accuracy"], "")]
    profiles = {"before": before["profile"]}
    for label, budget in (("now, study budget", 5 if args.quick else 50), ("now, to convergence", args.converge_iter)):
        m = Timed(
            LDKSpec(latent_dim=2, rho=0.1), C=32.0, optimizer=LBFGS(max_iter=budget), vocabulary=vocab, random_state=0
        )
        m.trace, m.t0 = [], time.perf_counter()
        prof = cProfile.Profile()
        prof.enable()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(data["train"], y)
        prof.disable()
        seconds = time.perf_counter() - m.t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            acc = float(np.mean(m.predict(data["dev"]) == np.array(data["dev_labels"])))
        reach = next((t for t, v in m.trace if v <= before["objective"]), None)
        note = f"{m.n_iter_} L-BFGS iterations, {m.n_evaluations_} evaluations, converged={m.converged_}"
        if reach is not None:
            note += f"; below the objective of 'before' after {reach:.2f} s ({before['seconds'] / reach:.0f}x faster)"
        rows.append((label, seconds, m.objective_curve_[-1], acc, note))
        profiles[label] = stats_text(prof, 8)
    print("| fit | seconds | objective g | held-out accuracy | notes |\n|---|---|---|---|---|")
    for label, seconds, objective, acc, note in rows:
        ratio = f" ({before['seconds'] / seconds:.1f}x)" if label != rows[0][0] else ""
        print(f"| {label} | {seconds:.1f}{ratio} | {objective:.0f} | {acc:.3f} | {note} |")
    for label, text in profiles.items():
        print(f"\nProfile, {label}:\n\n{profile_table(text)}")


def part_gpc(args, package: Path, tmp: Path) -> None:
    from lvgp.baselines.text_classifiers import KernelSVMClassifier
    from lvgp.experiments.classification import ClassificationStudy, prepare
    from lvgp.models.gpc import LDKGPClassifier

    size = 40 if args.quick else 100
    study = ClassificationStudy("r8", train_sizes=(size,), splits=3, test_size=300 if args.quick else None)
    print(f"\n## LDK GP classifier: r8, {size} training documents, test split\n")
    print(
        "| sample | RBF SVM grid s | RBF SVM acc | GP before s | GP before acc | GP now s | GP now acc | now / (20 x SVM grid) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    splits = 1 if args.quick else 3
    for split in range(splits):
        x_train, y_train, x_test, y_test = prepare(study, split, size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            svm = KernelSVMClassifier("rbf", random_state=0).fit(x_train, y_train)
            svm_s = time.perf_counter() - start
            svm_acc = float(np.mean(svm.predict(x_test) == y_test))
            start = time.perf_counter()
            gpc = LDKGPClassifier(
                LDKSpec(latent_dim=4, rho=0.1), optimizer=LBFGS(max_iter=10 if args.quick else 50), random_state=0
            )
            gpc.fit(x_train, y_train)
            gpc_s = time.perf_counter() - start
            gpc_acc = float(np.mean(gpc.predict(x_test) == y_test))
        before = {"seconds": float("nan"), "accuracy": float("nan")}
        if split == 0:  # the variational fit before this change takes minutes: one sample
            path = tmp / "gpc.json"
            path.write_text(
                json.dumps(
                    {
                        "train": list(x_train),
                        "labels": y_train.tolist(),
                        "test": list(x_test),
                        "test_labels": y_test.tolist(),
                    }
                )
            )
            before = run_before(_BEFORE_GPC, package, {"data": str(path), "epochs": 5 if args.quick else 300})
        print(
            f"| {split} | {svm_s:.2f} | {svm_acc:.3f} | {before['seconds']:.1f} | {before['accuracy']:.3f} | "
            f"{gpc_s:.1f} | {gpc_acc:.3f} | {gpc_s / (20 * svm_s):.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the test suite runs this)")
    parser.add_argument("--before", default="05639cb", help="the commit measured as 'before'")
    parser.add_argument("--converge-iter", type=int, default=1000)
    parser.add_argument("--part", choices=["smm", "gpc", "all"], default="all")
    args = parser.parse_args()
    if args.quick:
        args.converge_iter = 20
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        package = extract(args.before, Path(tmp) / "before")
        if args.part in ("smm", "all"):
            part_smm(args, package, Path(tmp))
        if args.part in ("gpc", "all"):
            part_gpc(args, package, Path(tmp))


if __name__ == "__main__":
    main()
