"""The categorical latent Gaussian process (Gal et al. 2015) and its linear LGM, for distribution
estimation and imputation of categorical data (the frequency baselines the paper compares them
with are in :mod:`lvgp.baselines.frequency`)."""

from .estimators import CLGP, CategoricalTable, hide_each_value, hide_one_value, imputation_perplexity
from .model import CategoricalLatentGP

__all__ = [
    "CLGP",
    "CategoricalLatentGP",
    "CategoricalTable",
    "hide_each_value",
    "hide_one_value",
    "imputation_perplexity",
]
