"""lvgp's command-line interface: ``python -m lvgp`` or the ``lvgp`` console command."""

from __future__ import annotations

import argparse
import sys


def _add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every study shares: seed, executor, output directory, progress."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="run cells in J local processes")
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


def build_parser() -> argparse.ArgumentParser:
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
    reg = studies.add_parser(
        "regression",
        help="GP-LVSM vs baselines on review ratings (the GP-LVSM paper's Table 2 protocol)",
        description="Per split: disjoint train/dev/test, vocabulary from train, targets standardized with train "
        "statistics, hyper-parameters chosen on dev, test RMSE in standardized units. Resumable: cells already in "
        "--out are not recomputed.",
    )
    reg.add_argument(
        "--dataset",
        required=True,
        help="amazon-snippets, amazon-reviews, movie-snippets, or PATH.tsv (a header with 'text' and 'target' columns)",
    )
    reg.add_argument("--splits", type=int, default=5)
    reg.add_argument("--train-size", type=int, default=1000)
    reg.add_argument("--dev-size", type=int, default=1000)
    reg.add_argument("--test-size", type=int, default=None, help="default: all remaining documents")
    reg.add_argument(
        "--methods",
        default="gplvsm,gp-rbf,ridge,lasso,elasticnet",
        help="comma-separated, from: gplvsm, gplvsm-vb, gp-rbf, ridge, lasso, elasticnet, slda, lda-regression",
    )
    reg.add_argument("--topics", default="5,10,20,30", help="grid over the number of topics of slda and lda-regression")
    reg.add_argument("--slda-inference", default="em", choices=("em", "svi"))
    reg.add_argument("--latent-dims", default="1,2,4,6,8,10", help="GP-LVSM grid over q")
    reg.add_argument("--rhos", default="0.01,0.1,1,10,100", help="GP-LVSM grid over rho")
    reg.add_argument("--vb-latent-dims", default="2", help="grid over q of gplvsm-vb (and gplvsm-sparse)")
    reg.add_argument("--vb-rhos", default="0.1,0.3,1", help="grid over rho of gplvsm-vb (and gplvsm-sparse)")
    reg.add_argument("--sparse-inducing", type=int, default=64, help="inducing documents of gplvsm-sparse")
    reg.add_argument("--sparse-epochs", type=int, default=30, help="SVI epochs of gplvsm-sparse")
    reg.add_argument("--max-iter", type=int, default=300, help="L-BFGS iterations of gplvsm (early-stopped on dev)")
    reg.add_argument("--vb-max-iter", type=int, default=400, help="Adam iterations of gplvsm-vb (early-stopped on dev)")
    reg.add_argument("--min-df", type=int, default=2, help="vocabulary: minimum document frequency in train")
    _add_runner_arguments(reg)
    reg.set_defaults(run=_run_regression)

    top = studies.add_parser(
        "topics",
        help="sLDA vs LDA+regression vs lasso: K-fold predictive R^2 against the number of topics (sLDA paper, Fig. 2)",
    )
    top.add_argument("--dataset", required=True, help="amazon-snippets, amazon-reviews, movie-snippets, or PATH.tsv")
    top.add_argument("--folds", type=int, default=5)
    top.add_argument("--topics", default="5,10,20,30")
    top.add_argument("--methods", default="slda,lda-regression,lasso")
    top.add_argument("--inference", default="em", choices=("em", "svi"), help="sLDA inference")
    top.add_argument("--max-iter", type=int, default=100, help="EM iterations")
    top.add_argument("--min-df", type=int, default=2)
    _add_runner_arguments(top)
    top.set_defaults(run=_run_topics)

    cat = studies.add_parser(
        "categorical",
        help="CLGP vs LGM vs frequency models: imputation perplexity on categorical data (Gal et al. 2015)",
    )
    cat.add_argument(
        "--dataset", required=True, help="breast-cancer, xor, or PATH.csv (categorical columns; empty = missing)"
    )
    cat.add_argument("--drop-columns", default="", help="comma-separated columns to ignore (e.g. Id)")
    cat.add_argument("--splits", type=int, default=3)
    cat.add_argument("--methods", default="clgp,lgm,uniform,multinomial,unigram-dm,bigram-dm")
    cat.add_argument("--latent-dim", type=int, default=2)
    cat.add_argument("--inducing", type=int, default=50)
    cat.add_argument("--samples", type=int, default=5, help="Monte Carlo samples per ELBO evaluation")
    cat.add_argument("--max-iter", type=int, default=1000)
    cat.add_argument("--lr", type=float, default=0.05)
    cat.add_argument("--optimizer", default="adam", choices=("adam", "rmsprop"))
    cat.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration of the DM baselines")
    cat.add_argument("--color-by", default=None, help="column colouring latent_space.png (default: the last)")
    _add_runner_arguments(cat)
    cat.set_defaults(run=_run_categorical)

    cls = studies.add_parser(
        "classification",
        help="GP covariate-embedding logistic regression vs BoW baselines against the training size",
        description="Per split and size: a stratified training sample from the training part; the standard test "
        "split (20ng, r8, r52) or the held-out rest of a TSV for testing; hyper-parameters by CV inside the sample.",
    )
    cls.add_argument("--dataset", required=True, help="20ng, r8, r52, or PATH.tsv (columns text and label)")
    cls.add_argument("--train-sizes", default="50,100,200,500")
    cls.add_argument("--splits", type=int, default=5)
    cls.add_argument(
        "--methods",
        default="gp-embed-logreg,logreg,mean-embedding,bag-of-clusters,svm",
        help="also: slda (supervised LDA, 20 topics, softmax response)",
    )
    cls.add_argument("--test-size", type=int, default=None, help="subsample the test documents (default: all)")
    cls.add_argument("--max-features", type=int, default=2000, help="covariates of the GP model (most frequent words)")
    cls.add_argument("--max-iter", type=int, default=30, help="L-BFGS iterations of the GP model")
    _add_runner_arguments(cls)
    cls.set_defaults(run=_run_classification)

    mat = studies.add_parser(
        "matching",
        help="cross-domain document matching: LDK vs CCA and kernel CCA (thesis ch. 6)",
        description="Per set: disjoint train/dev/test pairs (one per description family), every grid setting fitted "
        "on train, the best by dev mean Precision@1..50 reported on test. Resumable.",
    )
    mat.add_argument("--pairs", required=True, help="JSON-lines file (optionally .gz) of aligned pairs")
    mat.add_argument("--source", required=True, help="key of the source text in each line")
    mat.add_argument("--target", required=True, help="key of the target text in each line")
    mat.add_argument("--train", type=int, default=1000)
    mat.add_argument("--dev", type=int, default=100)
    mat.add_argument("--test", type=int, default=100)
    mat.add_argument("--sets", type=int, default=10)
    mat.add_argument("--methods", default="ldk,cca,kcca")
    mat.add_argument("--latent-dims", default="8,10,12", help="LDK grid over q")
    mat.add_argument("--rhos", default="0,0.01,0.1", help="LDK grid over rho")
    mat.add_argument("--gammas", default="0.1,1,10,100,1000", help="LDK grid over the RBF bandwidth gamma")
    mat.add_argument("--cca-components", default="8,16,32,64", help="CCA/KCCA grid over the latent dimension")
    mat.add_argument("--cca-regs", default="0.01,0.1,1", help="CCA/KCCA grid over the relative regularization")
    mat.add_argument("--min-df", type=int, default=2)
    mat.add_argument("--max-iter", type=int, default=300, help="L-BFGS iterations of LDK")
    mat.add_argument("--keep-families", action="store_true", help="do not group near-duplicate descriptions")
    _add_runner_arguments(mat)
    mat.set_defaults(run=_run_matching)
    return parser


def _methods(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(m.strip() for m in args.methods.split(",") if m.strip())


def _execute(runner, study, args: argparse.Namespace) -> int:
    """Run a study with the executor the options ask for; print its table; 1 if cells failed."""
    from .executors import make_executor

    executor = make_executor(args.jobs, args.ray, args.report_only)
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


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v.strip())


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def _run_regression(args: argparse.Namespace) -> int:
    from .regression import RegressionStudy, run_regression_study

    study = RegressionStudy(
        dataset=args.dataset,
        splits=args.splits,
        train_size=args.train_size,
        dev_size=args.dev_size,
        test_size=args.test_size,
        seed=args.seed,
        min_df=args.min_df,
        max_iter=args.max_iter,
        vb_max_iter=args.vb_max_iter,
        latent_dims=_ints(args.latent_dims),
        rhos=_floats(args.rhos),
        vb_latent_dims=_ints(args.vb_latent_dims),
        vb_rhos=_floats(args.vb_rhos),
        methods=_methods(args),
        topics=_ints(args.topics),
        slda_inference=args.slda_inference,
        sparse_inducing=args.sparse_inducing,
        sparse_epochs=args.sparse_epochs,
    )
    return _execute(run_regression_study, study, args)


def _run_topics(args: argparse.Namespace) -> int:
    from .topics import TopicStudy, run_topic_study

    study = TopicStudy(
        dataset=args.dataset,
        folds=args.folds,
        topics=_ints(args.topics),
        methods=_methods(args),
        inference=args.inference,
        seed=args.seed,
        min_df=args.min_df,
        max_iter=args.max_iter,
    )
    return _execute(run_topic_study, study, args)


def _run_classification(args: argparse.Namespace) -> int:
    from .classification import ClassificationStudy, run_classification_study

    study = ClassificationStudy(
        dataset=args.dataset,
        train_sizes=_ints(args.train_sizes),
        splits=args.splits,
        methods=_methods(args),
        test_size=args.test_size,
        max_features=args.max_features,
        max_iter=args.max_iter,
        seed=args.seed,
    )
    return _execute(run_classification_study, study, args)


def _run_matching(args: argparse.Namespace) -> int:
    from .matching import MatchingStudy, run_matching_study

    study = MatchingStudy(
        pairs=args.pairs,
        source=args.source,
        target=args.target,
        train=args.train,
        dev=args.dev,
        test=args.test,
        sets=args.sets,
        methods=_methods(args),
        latent_dims=_ints(args.latent_dims),
        rhos=_floats(args.rhos),
        gammas=_floats(args.gammas),
        cca_components=_ints(args.cca_components),
        cca_regs=_floats(args.cca_regs),
        min_df=args.min_df,
        max_iter=args.max_iter,
        dedupe_families=not args.keep_families,
        seed=args.seed,
    )
    return _execute(run_matching_study, study, args)


def _run_categorical(args: argparse.Namespace) -> int:
    from .categorical import CategoricalStudy, run_categorical_study

    study = CategoricalStudy(
        dataset=args.dataset,
        drop_columns=tuple(c.strip() for c in args.drop_columns.split(",") if c.strip()),
        splits=args.splits,
        methods=_methods(args),
        latent_dim=args.latent_dim,
        inducing=args.inducing,
        samples=args.samples,
        max_iter=args.max_iter,
        lr=args.lr,
        optimizer=args.optimizer,
        alpha=args.alpha,
        seed=args.seed,
        color_by=args.color_by,
    )
    return _execute(run_categorical_study, study, args)


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
