"""``python -m lvgp``: the command-line interface (see ``python -m lvgp --help``)."""

from .experiments.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
