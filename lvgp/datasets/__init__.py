"""Data sets: synthetic corpora with known structure, and (see the loaders) real data."""

from .synthetic import SyntheticCorpus, make_synonym_regression

__all__ = ["SyntheticCorpus", "make_synonym_regression"]
