"""The frequency baselines of the CLGP paper (Gal, Chen & Ghahramani 2015, section 5): models of
categorical tables that predict a hidden value from column frequencies (uniform, multinomial,
Dirichlet-multinomial) or from one other observed column (bigram Dirichlet-multinomial). Same
``fit(codes, cardinalities)`` / ``predict_proba(codes)`` interface as :class:`lvgp.CLGP`."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from ..base.constraints import Real, check_params
from ..models.clgp.estimators import check_codes

__all__ = ["UniformModel", "MultinomialModel", "UnigramDirichletMultinomial", "BigramDirichletMultinomial"]


class _FrequencyModel(BaseEstimator):
    _parameter_constraints: dict[str, list] = {}

    def fit(self, codes: np.ndarray, cardinalities: list[int]):
        check_params(self)
        self.cardinalities_ = list(cardinalities)
        self.codes_ = check_codes(codes, cardinalities)
        return self

    def _counts(self, d: int) -> np.ndarray:
        col = self.codes_[:, d]
        return np.bincount(col[col >= 0], minlength=self.cardinalities_[d]).astype(float)


class UniformModel(_FrequencyModel):
    """Every value equally likely."""

    def predict_proba(self, codes):
        return [np.full((len(codes), k), 1.0 / k) for k in self.cardinalities_]


class MultinomialModel(_FrequencyModel):
    """Marginal frequencies of the training data (no smoothing: an unseen value gets 0)."""

    def predict_proba(self, codes):
        out = []
        for d in range(len(self.cardinalities_)):
            c = self._counts(d)
            out.append(np.tile(c / c.sum(), (len(codes), 1)))
        return out


class UnigramDirichletMultinomial(_FrequencyModel):
    """Posterior predictive of a Dirichlet(alpha)-multinomial per column: (n_k + a) / (n + K a)."""

    _parameter_constraints = {"alpha": [Real(0, open_low=True)]}

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def predict_proba(self, codes):
        out = []
        for d, k in enumerate(self.cardinalities_):
            c = self._counts(d)
            out.append(np.tile((c + self.alpha) / (c.sum() + k * self.alpha), (len(codes), 1)))
        return out


class BigramDirichletMultinomial(_FrequencyModel):
    """A Dirichlet(alpha)-multinomial of column d conditioned on one other observed column e:
    (n_{d=k, e=j} + a) / (n_{e=j} + K_d a).

    Which e: for each column d, the other columns are ranked by their empirical mutual
    information with d on the training rows (where both are observed); a row uses the
    highest-ranked column it has observed. A row with no other observed column falls back
    to the unigram model.
    """

    _parameter_constraints = {"alpha": [Real(0, open_low=True)]}

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def fit(self, codes, cardinalities):
        super().fit(codes, cardinalities)
        D = len(cardinalities)
        self.partners_ = []
        for d in range(D):
            scores = [(self._mutual_information(d, e), e) for e in range(D) if e != d]
            self.partners_.append([e for _, e in sorted(scores, reverse=True)])
        return self

    def _joint(self, d: int, e: int) -> np.ndarray:
        both = (self.codes_[:, d] >= 0) & (self.codes_[:, e] >= 0)
        joint = np.zeros((self.cardinalities_[d], self.cardinalities_[e]))
        np.add.at(joint, (self.codes_[both, d], self.codes_[both, e]), 1.0)
        return joint

    def _mutual_information(self, d: int, e: int) -> float:
        joint = self._joint(d, e)
        if joint.sum() == 0:
            return -np.inf
        p = joint / joint.sum()
        pd, pe = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
        nz = p > 0
        return float((p[nz] * np.log(p[nz] / (pd @ pe)[nz])).sum())

    def predict_proba(self, codes):
        codes = check_codes(codes, self.cardinalities_)
        out = []
        for d, k in enumerate(self.cardinalities_):
            c = self._counts(d)
            probs = np.tile((c + self.alpha) / (c.sum() + k * self.alpha), (len(codes), 1))
            for i, row in enumerate(codes):
                e = next((e for e in self.partners_[d] if row[e] >= 0), None)
                if e is not None:
                    column = self._joint(d, e)[:, row[e]]
                    probs[i] = (column + self.alpha) / (column.sum() + k * self.alpha)
            out.append(probs)
        return out
