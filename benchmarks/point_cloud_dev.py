"""The pool GP's settings chosen on 20ng's training part alone (issue 57): the active-learning study's
protocol (one text a class, batches of 10) with its pool and its "test" documents both drawn from the
training part (5,000 and 3,000 texts, disjoint), so that no test document is read.

Prints each strategy's learning curve and area under it, one seed a run:

    python benchmarks/point_cloud_dev.py --strategies gp-power-entropy,gp-pool-power-entropy,random --budget 200
    python benchmarks/point_cloud_dev.py --quick      # tiny, for the tests

``--epig-estimator`` sets EPIG's estimator for the run (``"monte-carlo"`` or ``"second-order"``:
``lvgp.models.acquisition.epig``). ``--vocabulary-from pool`` fits the word parts on the whole pool (the study's
option); ``--dataset r8`` takes r8's training part (5,485 texts: pass ``--pool 3000 --held-out 2000``); ``--part-selection loo``: the
GP learners keep, at every refit, the sub-composition of their kernel's top sum with the best leave-one-out
log predictive (one-standard-error rule; ``LDKGPClassifier(part_selection="loo")``). ``--gpc-objective loo``:
the GP learners' hyper-parameters by the leave-one-out log probability of the labelled texts after the
evidence (with a class of one labelled text, the evidence's, with a warning). ``--cross-fit``: then
each strategy's learner fitted on each strategy's labelled texts at the budget, scored on the held-out
texts (``cross`` lines, with the GP learners' fitted part weights): is it the texts a learner chose or its
predictor that ends its curve where it ends.

With ``--grid``, the kernels of the pool first, on the same split: a kernel-ridge proxy (centred one-hot
targets, noise a tenth of the mean prior variance) trained on 1, 5, 10 and 20 pool texts a class (three
draws) and scored on the held-out texts, for the encoder's cosine, an RBF kernel on its unit vectors,
that kernel deformed by the pool (``PointCloudKernel``) and the cosine plus the pool's cluster kernel
(``ClusterKernel``) at several settings; the deformed kernel's prior variance on the pool and off it;
and the study's GP classifier with and without the cluster part at 1, 5 and 10 texts a class:

    python benchmarks/point_cloud_dev.py --grid --threads 2
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default="gp-power-entropy,gp-pool-power-entropy,random")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--dataset", default="20ng", help="20ng or r8: its training part alone")
    parser.add_argument(
        "--vocabulary-from",
        default="labelled",
        choices=("labelled", "pool"),
        help="the word parts fitted on each round's labelled texts or on the whole pool (ActiveStudy's option)",
    )
    parser.add_argument(
        "--part-selection",
        default="none",
        choices=("none", "loo"),
        help="the GP learners' part selection: their kernel as composed, or the sub-composition of its top sum "
        "(the words, the encoder, the pool's cluster part) kept by the leave-one-out log predictive at every refit",
    )
    parser.add_argument(
        "--gpc-objective",
        default="evidence",
        choices=("evidence", "loo"),
        help="what the GP learners' hyper-parameters maximize (the study's --gpc-objective)",
    )
    parser.add_argument(
        "--epig-estimator",
        default=None,
        choices=("monte-carlo", "second-order"),
        help="EPIG's estimator (lvgp.models.acquisition.epig; default: the study's, EPIG_ESTIMATOR)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", type=int, default=5000)
    parser.add_argument("--held-out", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a synthetic corpus and a tiny budget")
    parser.add_argument("--grid", action="store_true", help="the kernels' proxy grid and the classifier check")
    parser.add_argument(
        "--cross-fit",
        action="store_true",
        help="then every strategy's learner fitted on every strategy's labelled texts at the budget (--quick: always)",
    )
    args = parser.parse_args(argv)

    import warnings
    from pathlib import Path

    import numpy as np

    from lvgp.experiments import active
    from lvgp.experiments.executors import limit_threads

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    if args.epig_estimator is not None:  # read by lvgp.models.acquisition.epig, where it lives
        from lvgp.models import acquisition

        acquisition.EPIG_ESTIMATOR = args.epig_estimator

    #: strategy -> the texts and labels of its run's last fit (the labelled set at the budget)
    final_sets: dict[str, tuple[list, np.ndarray]] = {}

    @dataclasses.dataclass(frozen=True)
    class SelectingStudy(active.ActiveStudy):
        part_selection = args.part_selection  # (a class variable of the study, read by its GP learners)

        def estimator(self, cell):
            model = super().estimator(cell)
            fit = model.fit

            def recording_fit(X, y, **kwargs):
                final_sets[cell["method"]] = (list(X), np.asarray(y))
                return fit(X, y, **kwargs)

            model.fit = recording_fit
            return model

    sys.path.insert(0, str(Path(__file__).parent))
    from open_set_dev import training_part_split

    @dataclasses.dataclass(frozen=True)
    class DevStudy(SelectingStudy):
        def split(self, split: int) -> active.ActiveSplit:  # the training part alone
            rng = np.random.default_rng([args.seed, split, 57])
            return training_part_split(self.dataset, rng, args.pool, args.held_out, False, False)

    with contextlib.ExitStack() as scratch:  # the quick run's toy corpus, removed at the end
        strategies = tuple(args.strategies.split(","))
        if args.quick:  # the toy corpus and tiny encoder of open_set_dev.py, its own rows held out
            sys.path.insert(0, str(Path(__file__).parent))
            from open_set_dev import scratch_folder, toy_corpus

            path = scratch.enter_context(scratch_folder(None, "point-cloud-dev-")) / "toy.tsv"
            toy_corpus(path)
            study = SelectingStudy(
                dataset=str(path),
                budget=12,
                batch=4,
                splits=1,
                strategies=strategies,
                ldk_max_iter=5,
                vocabulary_from=args.vocabulary_from,
                gpc_objective=args.gpc_objective,
            )
        else:
            study = DevStudy(
                dataset=args.dataset,
                budget=args.budget,
                batch=10,
                splits=1,
                strategies=strategies,
                vocabulary_from=args.vocabulary_from,
                gpc_objective=args.gpc_objective,
            )
        if args.grid and not args.quick:
            grid(study, args)
            return 0
        for strategy in study.strategies:
            record = active.run_cell(study, {"method": strategy, "split": 0, "params": {}})
            curve = {p["labels"]: round(p["accuracy"], 4) for p in record["curve"]}
            print(
                "strategy "
                + json.dumps(
                    {
                        "strategy": strategy,
                        "aulc": round(record["aulc"], 4),
                        "final": record["final_accuracy"],
                        "seconds": round(record["fit_seconds"] + record["acquire_seconds"], 1),
                        "curve": curve,
                    }
                ),
                flush=True,
            )
        if args.cross_fit or args.quick:
            cross_fit(study, final_sets)
        return 0


def cross_fit(study, final_sets: dict) -> None:
    """Every strategy's learner fitted on every strategy's labelled texts at the budget, scored on the
    held-out texts: whether a learner's curve ends where it does through its choice of texts or through
    its predictor (``--cross-fit``)."""
    import collections

    import numpy as np

    from lvgp.experiments import active

    split = study.split(0)
    learners: dict[str, str] = {}  # learner ("gp", "gp-pool", "logreg") -> a strategy that has it
    for strategy in study.strategies:
        learners.setdefault(active.STRATEGIES[strategy][0], strategy)
    for learner, strategy in learners.items():
        for chooser, (texts, labels) in final_sets.items():
            cell = {"method": strategy, "split": 0, "params": {}}
            model = active.ActiveStudy.estimator(study, cell)  # not the recording one
            if study.vocabulary_from == "pool" and learner == "logreg":  # the pool's other texts, as run_cell
                labelled, rest = collections.Counter(texts), []
                for text in split.pool_texts:
                    if labelled[text] > 0:
                        labelled[text] -= 1
                    else:
                        rest.append(text)
                model.fit(texts, labels, unlabeled=rest)
            else:
                model.fit(texts, labels)
            predicted = model.classes_[np.argmax(model.predict_proba(split.test_texts), axis=1)]
            accuracy = round(float(np.mean(predicted == split.test_labels)), 4)
            line = {"learner": learner, "labelled by": chooser, "accuracy": accuracy}
            if learner != "logreg":  # the fitted weights of the kernel's parts (the words, the encoder, the pool)
                line["part weights"] = part_weights(model)
            print("cross " + json.dumps(line), flush=True)


def part_weights(model) -> list[float]:
    """The fitted weights of a GP classifier's top sum's parts, in the sum's order: a part's own output
    scale (``ScaleKernel``) or its linear kernel's variance (the encoder's cosine), 1 for a part without
    one (the words' cosine, weighed by the classes' output scales alone); means over the classes."""
    from gpytorch.kernels import AdditiveKernel

    top = next(m for m in model.model_.covar_module.modules() if isinstance(m, AdditiveKernel))
    weights = []
    for part in top.kernels:
        scale = getattr(part, "outputscale", None)
        if scale is None:
            scale = getattr(getattr(part, "base", None), "variance", None)
        weights.append(1.0 if scale is None else round(float(scale.detach().mean()), 4))
    return weights


def grid(study, args) -> None:
    """The proxy grid, the deformed kernel's variances on and off the pool, and the classifier check
    (module docstring)."""
    import warnings

    import numpy as np
    import torch
    from gpytorch.kernels import LinearKernel, RBFKernel

    from lvgp.encoders import resolve_encoder
    from lvgp.experiments import active
    from lvgp.kernels import ClusterKernel, PointCloudKernel

    split = study.split(0)
    encoder = resolve_encoder(study.encoder, study.device)

    def unit(texts):
        return torch.nn.functional.normalize(
            torch.as_tensor(np.asarray(encoder.encode(texts)), dtype=torch.float64), dim=-1
        )

    pool, held = unit(split.pool_texts), unit(split.test_texts)
    classes = np.unique(split.pool_labels)
    sizes = (1, 5, 10, 20)
    draws = {
        (n, d): np.concatenate(
            [
                np.random.default_rng([args.seed, n, d]).choice(
                    np.flatnonzero(split.pool_labels == c), n, replace=False
                )
                for c in classes
            ]
        )
        for n in sizes
        for d in range(3)
    }

    def rbf(lengthscale):
        k = RBFKernel().double()
        k.lengthscale = lengthscale
        return k

    def cosine():
        return LinearKernel().double()

    def proxy(kernel) -> list[float]:
        scores = []
        for n in sizes:
            accuracy = []
            for d in range(3):
                rows = draws[n, d]
                with torch.no_grad():
                    train = kernel(pool[rows], pool[rows]).to_dense()
                    cross = kernel(held, pool[rows]).to_dense()
                targets = torch.as_tensor((split.pool_labels[rows][:, None] == classes[None]).astype(float))
                targets = targets - targets.mean(0)
                noise = 0.1 * train.diagonal().mean()
                alpha = torch.linalg.solve(train + noise * torch.eye(len(rows), dtype=train.dtype), targets)
                accuracy.append(float(np.mean(classes[(cross @ alpha).argmax(1).numpy()] == split.test_labels)))
            scores.append(float(np.mean(accuracy)))
        return scores

    print("| kernel (proxy: kernel ridge) | " + " | ".join(f"{n} a class" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))

    def row(name, kernel):
        print(f"| {name} | " + " | ".join(f"{a:.3f}" for a in proxy(kernel)) + " |", flush=True)

    row("cosine", cosine())
    row("RBF 0.5", rbf(0.5))
    for lengthscale, gamma, power in (
        (0.5, 10.0, 2),
        (0.5, 100.0, 2),
        (0.5, 1000.0, 2),
        (0.5, 100.0, 1),
        (1.0, 100.0, 2),
    ):
        row(
            f"RBF {lengthscale} deformed, gamma {gamma:g}, p {power}",
            PointCloudKernel(rbf(lengthscale), pool, gamma=gamma, power=power),
        )
    for per_class in (1, 1.5, 2, 2.5):
        for power in (0.0, 6.0):
            cluster = ClusterKernel(pool, n_components=int(per_class * len(classes)), power=power)
            row(f"cosine + cluster, {per_class:g} eigenvectors a class, t {power:g}", cosine() + cluster)
    print("\n| deformed RBF (gamma 100, p 2) | prior variance on the pool | off it (held-out texts) |\n|---|---|---|")
    for lengthscale in (0.5, 1.0, 2.0):
        deformed = PointCloudKernel(rbf(lengthscale), pool)
        with torch.no_grad():
            on, off = deformed(pool[:300], diag=True).mean(), deformed(held[:300], diag=True).mean()
        print(f"| length scale {lengthscale} | {on:.3f} | {off:.3f} |", flush=True)
    print("\n| the study's GP classifier (predict_proba's accuracy) | 1 a class | 5 | 10 |\n|---|---|---|---|")
    results = {"plain": [], "with the pool's cluster kernel": []}
    for n in (1, 5, 10):
        rows = draws[n, 0]
        texts, labels = [split.pool_texts[i] for i in rows], split.pool_labels[rows]
        for name, build in (("plain", active._gp), ("with the pool's cluster kernel", active._gp_pool)):
            model = build(study, {"method": "dev", "split": 0, "params": {}}, None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(texts, labels)
            proba = model.predict_proba(split.test_texts)
            results[name].append(float(np.mean(model.classes_[proba.argmax(1)] == split.test_labels)))
    for name, scores in results.items():
        print(f"| {name} | " + " | ".join(f"{a:.3f}" for a in scores) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
