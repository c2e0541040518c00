"""``ember.distributions``: PyTorch's ``torch.distributions`` on ember tensors.

Parameterizable probability distributions with sampling (``sample``, and ``rsample`` whose
samples carry gradients to the parameters where ``has_rsample``), ``log_prob``,
``entropy``, moments, ``cdf``/``icdf``, ``support`` and ``arg_constraints``
(:mod:`.constraints`), bijective :mod:`.transforms` with ``TransformedDistribution``, and
``kl_divergence`` with its :func:`register_kl` registry::

    >>> import ember.tensor as et
    >>> from ember.distributions import Normal, kl_divergence
    >>> p = Normal(et.tensor([0.0]), et.tensor([1.0]))
    >>> p.log_prob(et.tensor([0.0]))
    tensor([-0.9189])
    >>> kl_divergence(p, Normal(et.tensor([1.0]), et.tensor([1.0])))
    tensor([0.5000])
"""
from __future__ import annotations

from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .constraints import Constraint
from .continuous import (
                         Beta,
                         Cauchy,
                         Chi2,
                         Dirichlet,
                         Exponential,
                         Gamma,
                         Laplace,
                         Normal,
                         StudentT,
                         Uniform,
)
from .counts import Multinomial, NegativeBinomial
from .discrete import (
                         Bernoulli,
                         Binomial,
                         Categorical,
                         Geometric,
                         OneHotCategorical,
                         OneHotCategoricalStraightThrough,
                         Poisson,
)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .matrix import LKJCholesky, Wishart
from .mixture import MixtureSameFamily
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .relaxed import (
                         ExpRelaxedCategorical,
                         LogitRelaxedBernoulli,
                         RelaxedBernoulli,
                         RelaxedOneHotCategorical,
)
from .transformed_distribution import (
                         Gumbel,
                         HalfCauchy,
                         HalfNormal,
                         LogNormal,
                         TransformedDistribution,
)
from .transformed_families import InverseGamma, Kumaraswamy, LogisticNormal, Pareto, Weibull
from .transforms import (
                         AbsTransform,
                         AffineTransform,
                         CatTransform,
                         ComposeTransform,
                         CorrCholeskyTransform,
                         CumulativeDistributionTransform,
                         ExpTransform,
                         IndependentTransform,
                         LowerCholeskyTransform,
                         PositiveDefiniteTransform,
                         PowerTransform,
                         ReshapeTransform,
                         SigmoidTransform,
                         SoftmaxTransform,
                         SoftplusTransform,
                         StackTransform,
                         StickBreakingTransform,
                         TanhTransform,
                         Transform,
                         identity_transform,
)
from .univariate import ContinuousBernoulli, FisherSnedecor, GeneralizedPareto, VonMises

__version__ = "0.1.0"

__all__ = [
    "__version__", "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial",
    "CatTransform", "Categorical", "Cauchy", "Chi2", "ComposeTransform", "Constraint",
    "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential",
    "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
    "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform",
    "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
    "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises",
    "Weibull", "Wishart", "biject_to", "constraints", "identity_transform", "kl_divergence",
    "register_kl", "transform_to", "transforms",
]
