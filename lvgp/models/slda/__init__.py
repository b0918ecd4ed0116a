"""Supervised LDA (Blei & McAuliffe 2007): the paper's variational EM (reference), a Pyro
model for every GLM response, scikit-learn estimators, and the LDA+regression baseline."""

from .em import SupervisedLDAEM
from .estimators import LDARegression, SLDAClassifier, SLDARegressor
from .pyro_model import SupervisedLDA

__all__ = ["SupervisedLDAEM", "SupervisedLDA", "SLDARegressor", "SLDAClassifier", "LDARegression"]
