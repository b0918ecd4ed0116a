"""The version of lvgp (one place: the package, the wheel, the docs and the CLI read it)."""

__version__ = "0.2.0"
