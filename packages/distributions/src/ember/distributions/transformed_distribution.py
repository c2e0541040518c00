"""TransformedDistribution and the families defined as transforms of a base:
LogNormal, HalfNormal, Gumbel."""
from __future__ import annotations

import math
from numbers import Number

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Size

from . import constraints
from .continuous import Cauchy, Normal, Uniform
from .distribution import Distribution
from .independent import Independent
from .transforms import AbsTransform, AffineTransform, ComposeTransform, ExpTransform, Transform
from .utils import broadcast_all, euler_constant, sum_rightmost

__all__ = ["Gumbel", "HalfCauchy", "HalfNormal", "LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """``Y = f_n(...f_1(X))`` for ``X ~ base_distribution`` and ``transforms = [f_1, ...,
    f_n]``; ``log_prob`` applies the change-of-variables formula."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = tuple(transform.forward_shape(base_shape))
        expanded_base_shape = tuple(transform.inverse_shape(forward_shape))
        if base_shape != expanded_base_shape:
            base_batch_shape = expanded_base_shape[:len(expanded_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(base_batch_shape)
        reinterpreted_batch_ndims = transform.domain.event_dim - base_event_dim
        if reinterpreted_batch_ndims > 0:
            base_distribution = Independent(base_distribution, reinterpreted_batch_ndims)
        self.base_dist = base_distribution
        transform_change_in_event_dim = (transform.codomain.event_dim
                                         - transform.domain.event_dim)
        event_dim = max(transform.codomain.event_dim,
                        base_event_dim + transform_change_in_event_dim)
        assert len(forward_shape) >= event_dim
        cut = len(forward_shape) - event_dim
        batch_shape = forward_shape[:cut]
        event_shape = forward_shape[cut:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = Size(batch_shape)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        base_batch_shape = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch_shape)
        new.transforms = self.transforms
        return self._expanded(new, batch_shape)

    def _expand_family(self, cls, batch_shape, _instance, *names):
        """``expand`` for a family ``cls`` defined as a transformed distribution: the named
        parameters it keeps itself are expanded, the base distribution with them."""
        new = self._get_checked_instance(cls, _instance)
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        return TransformedDistribution.expand(self, batch_shape, _instance=new)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) -
                                              support.event_dim)
        return support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=Size()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.domain.event_dim)
            y = x
        log_prob = log_prob + sum_rightmost(self.base_dist.log_prob(y),
                                            event_dim - len(self.base_dist.event_shape))
        return log_prob

    def _monotonize_cdf(self, value):
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        value = self.base_dist.cdf(value)
        return self._monotonize_cdf(value)

    def icdf(self, value):
        value = self._monotonize_cdf(value)
        value = self.base_dist.icdf(value)
        for transform in self.transforms:
            value = transform(value)
        return value


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(LogNormal, batch_shape, _instance)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _HalfFolded(TransformedDistribution):
    """``|X|`` for ``X`` of a family symmetric about 0 (``base_dist``, with location 0):
    the density doubles on the nonnegative half."""

    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return et.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = et.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return et.where(value >= 0, log_prob, et.full_like(log_prob, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_HalfFolded):
    """``|X|`` for ``X ~ Normal(0, scale)``."""

    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        base_dist = Normal(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(HalfNormal, batch_shape, _instance)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_HalfFolded):
    """``|X|`` for ``X ~ Cauchy(0, scale)``."""

    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(HalfCauchy, batch_shape, _instance)

    @property
    def mean(self):
        return et.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                       device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution with ``loc`` and ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = et.finfo(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(et.full_like(self.loc, finfo.tiny),
                                et.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-et.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_family(Gumbel, batch_shape, _instance, "loc", "scale")

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return et.exp(-et.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * et.log(-et.log(value))

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
