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
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .relaxed import (
                         ExpRelaxedCategorical,
                         LogitRelaxedBernoulli,
                         RelaxedBernoulli,
                         RelaxedOneHotCategorical,
)
from .transformed_distribution import Gumbel, HalfNormal, LogNormal, TransformedDistribution
from .transforms import (
                         AbsTransform,
                         AffineTransform,
                         ComposeTransform,
                         ExpTransform,
                         IndependentTransform,
                         PowerTransform,
                         ReshapeTransform,
                         SigmoidTransform,
                         SoftmaxTransform,
                         StickBreakingTransform,
                         TanhTransform,
                         Transform,
                         identity_transform,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical",
    "Cauchy", "Chi2", "ComposeTransform", "Constraint", "Dirichlet", "Distribution",
    "ExpRelaxedCategorical", "ExpTransform", "Exponential", "Gamma", "Geometric", "Gumbel",
    "HalfNormal", "Independent", "IndependentTransform", "Laplace", "LogNormal",
    "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Poisson", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "identity_transform",
    "kl_divergence", "register_kl", "transforms",
]
