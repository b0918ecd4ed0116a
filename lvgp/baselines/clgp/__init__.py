"""The categorical latent Gaussian process (Gal et al. 2015), its linear LGM, and the
frequency baselines, for distribution estimation and imputation of categorical data."""

from .estimators import (
    CLGP,
    BigramDirichletMultinomial,
    CategoricalTable,
    MultinomialModel,
    UniformModel,
    UnigramDirichletMultinomial,
    hide_each_value,
    hide_one_value,
    imputation_perplexity,
)
from .model import CategoricalLatentGP

__all__ = [
    "CLGP",
    "CategoricalLatentGP",
    "CategoricalTable",
    "UniformModel",
    "MultinomialModel",
    "UnigramDirichletMultinomial",
    "BigramDirichletMultinomial",
    "hide_each_value",
    "hide_one_value",
    "imputation_perplexity",
]
