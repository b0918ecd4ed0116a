"""lvgp: Gaussian-process models for bag-of-words data."""
from .bow.padded import PAD
from .bow.vocabulary import Vocabulary
from .kernels.latent_distribution import LatentDistributionKernel
from .models.gplvsm import GPLVSM, LogPosterior
from .models.regressor import GPLVSMRegressor
