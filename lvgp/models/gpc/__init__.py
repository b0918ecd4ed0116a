r"""GP classification with the latent distribution kernel.

Three inferences, one estimator (:class:`LDKGPClassifier`, :mod:`lvgp.models.gpc.estimator`), each a
strategy object that ``inference=`` selects (:mod:`lvgp.models.gpc.inference`); the gpytorch models
are in :mod:`lvgp.models.gpc.models`. In all three, :math:`C` latent GPs (one
per class; one for a binary probit) share one LDK -- the same word vectors -- with a separate
output scale and constant mean per class, and the word vectors carry the
:math:`\mathcal N(0, \rho^{-1}I)` prior of GP-LVSM.

* ``inference="dirichlet"`` (default): Dirichlet-based GP classification (Milios, Camoriano,
  Michiardi, Rosasco & Filippone, NeurIPS 2018; gpytorch's ``DirichletClassificationLikelihood``).
  The one-hot labels become regression targets in log space,
  :math:`\tilde y_{ic} = \log\alpha_{ic} - \sigma^2_{ic}/2` with
  :math:`\alpha_{ic} = \mathbb 1[y_i = c] + \alpha_\epsilon` and fixed heteroscedastic noise
  :math:`\sigma^2_{ic} = \log(1/\alpha_{ic} + 1)` (moment matching of the Dirichlet's gamma
  marginals), plus a learned homoscedastic noise per class. Each class is then an *exact* GP regression,
  so the word vectors, output scales, means and noise are fitted by L-BFGS on the exact log
  marginal likelihood plus the log prior of the word vectors (as GP-LVSM, eq. 11) -- no
  variational parameters, no stochastic optimizer. Class probabilities are
  :math:`\mathbb E[\exp f_c / \sum_{c'} \exp f_{c'}]` under the GPs' predictive marginals (Monte Carlo
  with fixed draws: predictions are a deterministic function of the model and the input).
* ``inference="laplace"``: the softmax likelihood with the Laplace approximation of the posterior
  of the :math:`C` latent functions (Rasmussen & Williams 2006, alg. 3.3-3.4; :mod:`lvgp.models.laplace`):
  the mode by Newton's method, warm-started between the hyper-parameters' steps; the word vectors,
  output scales, means and mix weights by L-BFGS on the approximate log marginal likelihood (eq. 3.44)
  with its exact gradient (the mode's implicit derivative included) plus the log priors; class
  probabilities the softmax averaged over the test latents' correlated Gaussian. No transformed
  labels and no noise: with a linear kernel on features this is Bayesian multinomial logistic
  regression, whose mode is L2-regularized logistic regression. ``log_marginal_likelihood_``
  holds the approximate log evidence after ``fit``.
* ``inference="variational"``: the likelihood is the softmax (probit for two classes) and each GP a
  whitened SVGP on inducing documents (training documents, k-means++ seeded; see
  :mod:`lvgp.models.inducing`). The variational distributions take natural-gradient steps
  (gpytorch's ``NaturalVariationalDistribution`` with ``NGD``), the word vectors and kernel
  parameters Adam steps on the same ELBO; mini-batches when ``batch_size`` is set. This is the
  scalable option (memory and time independent of ``n`` per step).

All three tie the word vectors to pretrained embeddings on request (``word_embeddings``); words unseen
in training that have an embedding then enter prediction with their embedding-implied vectors.
"""

from .estimator import CLASS_HYPERPARAMETERS, INFERENCES, TEMPERATURE_PRIOR_SD, LatentCross, LDKGPClassifier
from .inference import (
    INFERENCE_STRATEGIES,
    DirichletInference,
    Inference,
    LaplaceInference,
    VariationalInference,
)
from .models import DirichletLDKGP, LDKClassificationGP, _NaturalDistribution, class_draw_seeds, expected_softmax
from .score_selection import NoveltyScoreChoice, choose_novelty_score

__all__ = [
    "LDKGPClassifier",
    "LatentCross",
    "INFERENCES",
    "CLASS_HYPERPARAMETERS",
    "TEMPERATURE_PRIOR_SD",
    "Inference",
    "DirichletInference",
    "LaplaceInference",
    "VariationalInference",
    "INFERENCE_STRATEGIES",
    "DirichletLDKGP",
    "LDKClassificationGP",
    "expected_softmax",
    "class_draw_seeds",
    "_NaturalDistribution",
    "choose_novelty_score",
    "NoveltyScoreChoice",
]
