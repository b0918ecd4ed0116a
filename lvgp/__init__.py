"""lvgp: Gaussian-process models for bag-of-words data.

* :class:`LatentDistributionKernel` -- the latent distribution kernel (LDK), a gpytorch kernel
  over padded word-index sets (:class:`Vocabulary` makes them from texts; :data:`PAD` pads);
  ``identity_weight`` puts the bag of words inside it. :class:`BagOfWordsKernel` -- the tf(-idf)
  kernel on its own. :class:`LDKSpec` -- an estimator's LDK settings (``kernel=``), built on its
  training documents; :class:`BagOfWordsSpec` -- the tf-idf kernel's, the same way.
* :class:`GPLVSM` / :class:`GPLVSMRegressor` -- GP-LVSM as a gpytorch ``ExactGP`` and as a
  scikit-learn estimator, trained by MAP (:class:`LogPosterior`).
* :class:`SLDARegressor` / :class:`SLDAClassifier` -- supervised LDA (Pyro SVI or the paper's EM).
* :class:`GPEmbeddingLogisticRegression` -- logistic regression on GP-smoothed word vectors.
* :class:`CLGP` -- the categorical latent GP (and its linear LGM) for categorical tables.
* :class:`SparseGPLVSMRegressor` -- sparse variational GP-LVSM (inducing documents, mini-batch SVI) for large n.
* :class:`LatentSMMClassifier` / :class:`LDKGPClassifier` -- classification with LDK (latent
  support measure machine; variational GP classification).
* :class:`OpenSetClassifier` -- any of them with a reject option: ``unknown_label`` below a novelty
  threshold chosen from in-scope texts alone (:mod:`lvgp.models.open_set`).
* :class:`LDKMatcher` -- cross-domain matching of documents (e.g. across languages) with LDK.
* :class:`LBFGS`, :class:`Adam`, :class:`RMSprop`, :class:`EM`, :class:`MiniBatch`, :class:`EarlyStopping` -- how an estimator
  fits (``optimizer=``, ``early_stopping=``; :mod:`lvgp.base.fit_options`).
* :mod:`lvgp.baselines` -- the baselines of the comparative studies.
"""

from . import warnings
from ._version import __version__ as __version__
from .base.fit_options import EM, LBFGS, Adam, EarlyStopping, MiniBatch, RMSprop
from .bow import PAD, Vocabulary, counts_to_padded, pad_to_common_width, pad_to_width, padded_to_counts
from .kernels import BagOfWordsKernel, BagOfWordsSpec, LatentDistributionKernel, LDKSpec
from .models import (
    GPLVSM,
    CovarianceError,
    GPLVSMRegressor,
    LatentSMMClassifier,
    LDKGPClassifier,
    LDKMatcher,
    LogPosterior,
    OpenSetClassifier,
    PaddedExactGP,
    SharedKernelExactGP,
    SparseGPLVSMRegressor,
    choose_texts_to_label,
    exact_numerics,
)

# Pyro-based models are imported on first use: ``import lvgp`` stays light.
_LAZY = {
    "SLDARegressor": "lvgp.models.slda",
    "SLDAClassifier": "lvgp.models.slda",
    "LDARegression": "lvgp.models.slda",
    "CLGP": "lvgp.models.clgp",
    "GPEmbeddingLogisticRegression": "lvgp.baselines.gp_embedding",
    "GPRBFRegressor": "lvgp.baselines",
}


def all_estimators() -> list[type]:
    """Every scikit-learn estimator class defined in :mod:`lvgp.models` and :mod:`lvgp.baselines`
    (sorted by name), found by walking their modules as scikit-learn's ``all_estimators`` does: the
    tests feed it to the parameter, device, scikit-learn-check and stochastic-loop checks, so that a
    new estimator cannot be left out of them."""
    import importlib
    import inspect
    import pkgutil

    from sklearn.base import BaseEstimator

    found: dict[str, type] = {}
    for package in ("lvgp.models", "lvgp.baselines"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            module = importlib.import_module(info.name)
            for name, obj in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(obj, BaseEstimator)
                    and obj.__module__ == module.__name__
                    and not name.startswith("_")
                    and not name.endswith("Base")  # shared bases, e.g. ExactGPRegressorBase
                    and not inspect.isabstract(obj)
                    and hasattr(obj, "fit")
                ):
                    found[f"{obj.__module__}.{name}"] = obj
    return [found[key] for key in sorted(found, key=lambda k: k.rsplit(".", 1)[1])]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lvgp' has no attribute {name!r}")


__all__ = [
    "PAD",
    "Vocabulary",
    "counts_to_padded",
    "padded_to_counts",
    "pad_to_width",
    "pad_to_common_width",
    "LatentDistributionKernel",
    "LDKSpec",
    "BagOfWordsSpec",
    "BagOfWordsKernel",
    "LBFGS",
    "Adam",
    "MiniBatch",
    "RMSprop",
    "EM",
    "EarlyStopping",
    "GPLVSM",
    "GPLVSMRegressor",
    "LDKMatcher",
    "OpenSetClassifier",
    "LatentSMMClassifier",
    "LDKGPClassifier",
    "SparseGPLVSMRegressor",
    "LogPosterior",
    "PaddedExactGP",
    "SharedKernelExactGP",
    "CovarianceError",
    "exact_numerics",
    "choose_texts_to_label",
    "warnings",
    "all_estimators",
    *_LAZY,
]
