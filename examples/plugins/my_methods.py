"""A plugin of your own methods for ``lvgp compare``: a module that registers them.

    cp examples/plugins/my_methods.py .
    lvgp compare regression --dataset amazon-snippets --plugin my_methods \
        --methods my-ridge-cv,ridge,gp-rbf --splits 3 --jobs 2 --out runs/mine

(``--plugin`` imports the module from the current directory first, as ``python -m`` does, or from
anywhere on the path; the processes of ``--jobs`` import it too). A method's factory gets the study, the
cell and the split's data, and returns an unfitted estimator; the study fits it on the split's
training texts, scores it on the test split beside the built-in methods, and writes the same tables.
"""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline

from lvgp.experiments.registry import register_method


@register_method(
    "regression",
    "my-ridge-cv",
    "Ridge (tf-idf, alpha by CV)",
    description="scikit-learn's RidgeCV on sublinear tf-idf of the training texts, alpha by leave-one-out",
)
def my_ridge_cv(study, cell, data):
    return make_pipeline(TfidfVectorizer(sublinear_tf=True), RidgeCV(alphas=np.logspace(-3, 3, 13)))
