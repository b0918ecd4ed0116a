"""lvgp's command-line interface: ``python -m lvgp`` or the ``lvgp`` console command."""

from __future__ import annotations

import argparse
import sys
import typing


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``lvgp compare regression: error: ...``, exit 2), not
    the usage block first."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """An argparse ``type``: a positive integer (``--jobs 0`` and ``--jobs -3`` are refused, naming
    the option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {value}")
    return value


def _add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every study shares: executor, output directory, progress."""
    parser.add_argument("--jobs", type=positive_int, default=1, help="run cells in J local processes")
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch and BLAS threads per cell (default: the cores free when the study starts -- the usable cores "
        "minus the load average -- divided by --jobs)",
    )
    parser.add_argument(
        "--ray", default=None, metavar="ADDRESS", help="run cells on a Ray cluster ('local' starts one)"
    )
    parser.add_argument("--out", required=True, help="output directory (created; reused to resume)")
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (repeatable): a module that registers methods of your own "
        "(lvgp.experiments.registry.register_method), then named in --methods; the processes of --jobs import it too",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run no cell: write the tables and figures from the cells already in --out",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="--out holds cells of a study with other settings: delete them and recompute (refused otherwise)",
    )


def make_executor(jobs: int = 1, ray: str | None = None, report_only: bool = False, threads: int | None = None):
    """The executor for ``--jobs``/``--ray``/``--report-only``/``--threads``."""
    from .executors import InProcessExecutor, ProcessExecutor, ReportOnlyExecutor

    if report_only:
        return ReportOnlyExecutor()
    if ray is not None:
        from .ray_executor import RayExecutor

        return RayExecutor(ray, threads_per_cell=threads or 1)
    return InProcessExecutor(threads) if jobs <= 1 else ProcessExecutor(jobs, threads)


def build_parser() -> argparse.ArgumentParser:
    """The ``lvgp`` command line: ``demo``, ``compare KIND`` (one subcommand per registered study,
    its options from the study's fields) and ``--version``."""
    from .._version import __version__
    from .registry import methods, studies
    from .study import add_study_options

    parser = _Parser(
        prog="lvgp",
        description="Gaussian-process models for bag-of-words data (LDK, GP-LVSM) and comparative studies.",
    )
    parser.add_argument("--version", action="version", version=f"lvgp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser("demo", help="fit GP-LVSM against baselines on real review data and print a table")
    demo.add_argument("--tiny", action="store_true", help="a short run on small sets (for tests)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", default="runs/demo", help="where the study files go (default runs/demo)")
    demo.set_defaults(run=_run_demo)

    compare = sub.add_parser("compare", help="comparative studies: every method on the same splits of real data")
    kinds = compare.add_subparsers(dest="study", metavar="STUDY", parser_class=_Parser)
    compare.set_defaults(run=lambda args: _no_study(compare))
    for name, cls in sorted(studies().items()):
        study_parser = kinds.add_parser(name, help=cls.help, description=cls.description or cls.help)
        add_study_options(study_parser, cls, tuple(methods(name)))
        _add_runner_arguments(study_parser)
        study_parser.set_defaults(run=_run_study, study_class=cls)
    return parser


def _no_study(compare: argparse.ArgumentParser) -> int:
    """``lvgp compare`` without a study: its help (the studies), exit 2."""
    compare.print_help(sys.stderr)
    return 2


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(tiny=args.tiny, seed=args.seed, out=args.out)
    return 0


def _run_study(args: argparse.Namespace) -> int:
    """Run a study with the executor the options ask for; print its table; 1 if cells failed.
    ``--report-only`` takes the study's settings from ``--out/study.json`` where there is one (the
    other options are then ignored); on a directory without ``cells/`` (a committed study) it
    rewrites the table from ``results.json``."""
    from pathlib import Path

    from .study import load_study, study_from_options

    out = Path(args.out)
    if args.report_only and (out / "study.json").exists():
        study = load_study(out)
        if type(study) is not args.study_class:
            raise ValueError(f"{out}/study.json is a {study.kind} study, not {args.study_class.kind}")
    else:
        study = study_from_options(args.study_class, args)
    if args.report_only and not (out / "cells").is_dir() and (out / "results.json").exists():
        summary = study.report(out)
        print(summary["table"])
        what = "the table and the figures were" if study.figures_from_records else "the table was"
        print(
            f"report only: no cells/ in --out, so {what} rewritten from results.json"
            + ("" if study.figures_from_records else " (figures need the cells)")
        )
        return 0
    executor = make_executor(args.jobs, args.ray, args.report_only, args.threads)
    summary = study.run(args.out, executor, progress=not args.quiet, force=args.force)
    print(summary["table"])
    if args.report_only:  # (a merged or edited results.json beside cells/ is rewritten from the cells)
        print(
            f"report only: results.json and the table rebuilt from {out / 'cells'} ({len(summary['records'])} records)"
        )
    if getattr(executor, "skipped", 0):
        print(f"report only: {executor.skipped} cells not run (shown as '–' or left out of the means)")
    for cell, error in summary["failures"]:
        print(f"FAILED {cell}: {error.strip().splitlines()[-1]}")
    return 1 if summary["failures"] else 0


class _Terminated(KeyboardInterrupt):
    """SIGTERM (what ``kill`` and job schedulers send), raised where Ctrl-C's ``KeyboardInterrupt``
    is: a study ends the same way (its finished cells kept, the one being fitted not recorded)."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated


def _plugin_arguments(argv: list[str]) -> list[str]:
    """The modules of every ``--plugin MODULE`` (or ``--plugin=MODULE``) in ``argv``, read by argparse before the
    parser is built, whose ``--methods`` lists the plugins' methods."""
    early = argparse.ArgumentParser(prog="lvgp", add_help=False, allow_abbrev=False)
    early.add_argument("--plugin", action="append", default=[])
    return early.parse_known_args(argv)[0].plugin


def main(argv: list[str] | None = None) -> int:
    """Run the ``lvgp`` command with ``argv`` (default: the process's arguments); the exit status."""
    import signal
    import threading

    from ..warnings import short_format
    from .registry import load_plugins

    try:  # the plugins register their methods before the parser lists them
        load_plugins(_plugin_arguments(sys.argv[1:] if argv is None else argv))
    except ValueError as err:
        print(f"lvgp: error: {err}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 0
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        with short_format("lvgp: "):  # one line a warning, as an error: not the frame it was attributed to
            return args.run(args)
    except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, ImportError) as err:
        # bad input or a missing extra: one line
        parser.exit(2, f"lvgp: error: {err}\n")
    except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM: one line (a study's says how to resume), not a traceback
        # the fit loops and the study re-raise it as their own interrupt: SIGTERM's is in the chain
        cause: BaseException | None = err
        terminated = False
        while cause is not None and not terminated:
            terminated, cause = isinstance(cause, _Terminated), cause.__context__
        message = str(err) or "interrupted"
        print(f"\nlvgp: {'terminated (SIGTERM); ' if terminated else ''}{message}", file=sys.stderr)
        return 128 + (signal.SIGTERM if terminated else signal.SIGINT)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
