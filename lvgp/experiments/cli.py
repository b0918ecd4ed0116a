"""lvgp's command-line interface: ``python -m lvgp`` or the ``lvgp`` console command."""

from __future__ import annotations

import argparse
import sys


def _add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every study shares: executor, output directory, progress."""
    parser.add_argument("--jobs", type=int, default=1, help="run cells in J local processes")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per cell (default: cores // jobs; set 1 when other processes share the cores)",
    )
    parser.add_argument(
        "--ray", default=None, metavar="ADDRESS", help="run cells on a Ray cluster ('local' starts one)"
    )
    parser.add_argument("--out", required=True, help="output directory (created; reused to resume)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run no cell: write the tables and figures from the cells already in --out",
    )


#: study name -> (module, study class, runner, method list, help, description)
STUDIES = {
    "regression": (
        "regression",
        "RegressionStudy",
        "run_regression_study",
        "GP-LVSM vs baselines on review ratings (the GP-LVSM paper's Table 2 protocol)",
        "Per split: disjoint train/dev/test, vocabulary from train, targets standardized with train statistics, "
        "hyper-parameters chosen on dev, test RMSE in standardized units. Resumable: cells already in --out are not "
        "recomputed.",
    ),
    "topics": (
        "topics",
        "TopicStudy",
        "run_topic_study",
        "sLDA vs LDA+regression vs lasso: K-fold predictive R^2 against the number of topics (sLDA paper, Fig. 2)",
        None,
    ),
    "categorical": (
        "categorical",
        "CategoricalStudy",
        "run_categorical_study",
        "CLGP vs LGM vs frequency models: imputation perplexity on categorical data (Gal et al. 2015)",
        None,
    ),
    "classification": (
        "classification",
        "ClassificationStudy",
        "run_classification_study",
        "LDK classifiers, GP covariate-embedding logistic regression and BoW baselines against the training size",
        "Per split and size: a stratified training sample from the training part; the standard test split (20ng, r8, "
        "r52) or the held-out rest of a TSV for testing; baselines tuned by CV inside the sample, the LDK classifiers "
        "on a dev part of it. --min-df-fraction 0.01 applies the thesis's vocabulary cut to every method.",
    ),
    "matching": (
        "matching",
        "MatchingStudy",
        "run_matching_study",
        "cross-domain document matching: LDK vs CCA and kernel CCA (thesis ch. 6)",
        "Per set: disjoint train/dev/test pairs (one per description family), every grid setting fitted on train, "
        "the best by dev mean Precision@1..50 reported on test. Resumable.",
    ),
}


def _study_module(name: str):
    import importlib

    return importlib.import_module(f"lvgp.experiments.{STUDIES[name][0]}")


def build_parser() -> argparse.ArgumentParser:
    from .study import add_study_options

    parser = argparse.ArgumentParser(
        prog="lvgp",
        description="Gaussian-process models for bag-of-words data (LDK, GP-LVSM) and comparative studies.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="fit GP-LVSM against baselines on real review data and print a table")
    demo.add_argument("--tiny", action="store_true", help="a short run on small sets (for tests)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", default="runs/demo", help="where the study files go (default runs/demo)")
    demo.set_defaults(run=_run_demo)

    compare = sub.add_parser("compare", help="comparative studies: every method on the same splits of real data")
    studies = compare.add_subparsers(dest="study", metavar="STUDY")
    for name, (_, cls_name, _, help_text, description) in STUDIES.items():
        module = _study_module(name)
        study_parser = studies.add_parser(name, help=help_text, description=description or help_text)
        add_study_options(study_parser, getattr(module, cls_name), module.METHODS)
        _add_runner_arguments(study_parser)
        study_parser.set_defaults(run=_run_study, study_name=name)
    return parser


def _execute(runner, study, args: argparse.Namespace) -> int:
    """Run a study with the executor the options ask for; print its table; 1 if cells failed."""
    from .executors import make_executor

    executor = make_executor(args.jobs, args.ray, args.report_only, args.threads)
    summary = runner(study, args.out, executor, progress=not args.quiet)
    print(summary["table"])
    if getattr(executor, "skipped", 0):
        print(f"report only: {executor.skipped} cells not run (shown as '–' or left out of the means)")
    for cell, error in summary["failures"]:
        print(f"FAILED {cell}: {error.strip().splitlines()[-1]}")
    return 1 if summary["failures"] else 0


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(tiny=args.tiny, seed=args.seed, out=args.out)
    return 0


def _run_study(args: argparse.Namespace) -> int:
    from .study import study_from_options

    _, cls_name, runner, _, _ = STUDIES[args.study_name]
    module = _study_module(args.study_name)
    study = study_from_options(getattr(module, cls_name), args)
    return _execute(getattr(module, runner), study, args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 0
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError, ImportError) as err:  # bad input or a missing extra: a clear message
        parser.exit(2, f"lvgp: error: {err}\n")


if __name__ == "__main__":
    sys.exit(main())
