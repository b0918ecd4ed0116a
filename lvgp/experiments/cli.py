"""lvgp's command-line interface: ``python -m lvgp`` or the ``lvgp`` console command."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lvgp",
        description="Gaussian-process models for bag-of-words data (LDK, GP-LVSM) and comparative studies.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="fit GP-LVSM against baselines and print a table")
    demo.add_argument("--tiny", action="store_true", help="a seconds-long run (for tests)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=_run_demo)
    return parser


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(tiny=args.tiny, seed=args.seed)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 0
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
