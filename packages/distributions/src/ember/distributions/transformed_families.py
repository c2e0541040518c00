"""Families defined as transforms of a simpler base: InverseGamma, Kumaraswamy,
LogisticNormal, Pareto and Weibull."""
from __future__ import annotations

import math

import ember.tensor as et

from . import constraints
from .continuous import Exponential, Gamma, Normal, Uniform
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all, euler_constant

__all__ = ["InverseGamma", "Kumaraswamy", "LogisticNormal", "Pareto", "Weibull"]


def _inf_unless(cond, value):
    return et.where(cond, value, et.full_like(value, math.inf))


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -et.ones((), dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(InverseGamma, batch_shape, _instance)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        c = self.concentration
        return _inf_unless(c > 1, self.rate / (c - 1))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        return _inf_unless(c > 2, self.rate.square() / ((c - 1).square() * (c - 2)))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + et.lgamma(c) - (1 + c) * et.digamma(c)


def _kumaraswamy_moment(a, b, n):
    """``E[X^n]`` for ``X ~ Kumaraswamy(a, b)``: ``b B(1 + n / a, b)``."""
    arg = 1 + n / a
    return b * et.exp(et.lgamma(arg) + et.lgamma(b) - et.lgamma(arg + b))


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on (0, 1) with ``concentration1`` (a) and
    ``concentration0`` (b): ``(1 - (1 - U)^(1/b))^(1/a)`` for uniform ``U``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base_dist = Uniform(et.zeros_like(self.concentration0),
                            et.ones_like(self.concentration0), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(Kumaraswamy, batch_shape, _instance,
                                   "concentration1", "concentration0")

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1))^(1/a) where a, b >= 1 (PyTorch 2.13's formula returns NaN
        # for every b > 1)
        a, b = self.concentration1, self.concentration0
        defined = (b >= 1) & (a >= 1)
        a = et.where(defined, a, et.full_like(a, 2.0))
        b = et.where(defined, b, et.full_like(b, 2.0))
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return et.where(defined, mode, et.full_like(mode, math.nan))

    @property
    def variance(self):
        second = _kumaraswamy_moment(self.concentration1, self.concentration0, 2)
        return second - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = et.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()


class LogisticNormal(TransformedDistribution):
    """The logistic-normal distribution on the simplex: stick breaking applied to
    independent ``Normal(loc, scale)`` coordinates (K of them give a point of the
    (K+1)-simplex)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(LogisticNormal, batch_shape, _instance)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale


class Pareto(TransformedDistribution):
    """Pareto type I distribution with ``scale`` (the minimum) and shape ``alpha``:
    ``scale * exp(E)`` for ``E ~ Exponential(alpha)``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(Pareto, batch_shape, _instance, "scale", "alpha")

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """Two-parameter Weibull distribution with ``scale`` and ``concentration`` (shape k):
    ``scale * E^(1/k)`` for ``E ~ Exponential(1)``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(et.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, self._transforms(), validate_args=validate_args)

    def _transforms(self):
        return [PowerTransform(exponent=self.concentration_reciprocal),
                AffineTransform(loc=0, scale=self.scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape),
                                         new._transforms(), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * et.exp(et.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (et.exp(et.lgamma(1 + 2 * r))
                                    - et.exp(2 * et.lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + et.log(self.scale * r) + 1
