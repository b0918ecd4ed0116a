"""Comparative studies and the command-line interface.

Importing the package registers the built-in studies and their methods
(:mod:`lvgp.experiments.registry`): regression, topics, categorical, classification, matching, open-set, active.
"""

from . import active, categorical, classification, matching, open_set, regression, topics  # noqa: F401  (they register)
