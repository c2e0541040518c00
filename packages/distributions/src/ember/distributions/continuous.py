"""Univariate continuous families and the Gamma-based ones (Beta, Dirichlet, Chi2,
StudentT)."""
from __future__ import annotations

import math
from numbers import Number

import ember.tensor as et
from ember.tensor import Size

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma_sampling import standard_gamma
from .utils import broadcast_all, broadcast_params, standard_normal, standard_uniform

__all__ = ["Beta", "Cauchy", "Chi2", "Dirichlet", "Exponential", "Gamma", "Laplace",
           "Normal", "StudentT", "Uniform"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class Normal(ExponentialFamily):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + et.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * et.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * et.log(-math.pi / y)


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        (self.low, self.high), batch_shape = broadcast_params(low, high)
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and not bool(et.lt(self.low, self.high).all()):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, _instance, "low", "high")

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        rand = standard_uniform(shape, self.low.dtype, self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return et.log(lb * ub) - et.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return et.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential distribution with rate ``rate``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,), batch_shape = broadcast_params(rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, "rate")

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return et.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = standard_uniform(shape, self.rate.dtype, self.rate.device)
        return -et.log1p(-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - et.exp(-self.rate * value)

    def icdf(self, value):
        return -et.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - et.log(self.rate)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -et.log(-x)


class Laplace(Distribution):
    """Laplace distribution with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = et.finfo(self.loc.dtype).eps
        u = standard_uniform(shape, self.loc.dtype, self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * et.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -et.log(2 * self.scale) - et.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * et.expm1(-z.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * et.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + et.log(2 * self.scale)


class Cauchy(Distribution):
    """Cauchy (Lorentz) distribution with median ``loc`` and half width ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self):
        return et.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype,
                       device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return et.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype,
                       device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = standard_uniform(shape, self.loc.dtype, self.loc.device)
        return self.loc + self.scale * et.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - et.log1p(z ** 2)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return et.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return et.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and ``rate`` (inverse scale).
    ``rsample`` carries implicit reparameterization gradients to ``concentration``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        (self.concentration, self.rate), batch_shape = broadcast_params(concentration, rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, "concentration", "rate")

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=et.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = et.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (et.xlogy(self.concentration, self.rate) + et.xlogy(self.concentration - 1, value)
                - self.rate * value - et.lgamma(self.concentration))

    def entropy(self):
        c = self.concentration
        return c - et.log(self.rate) + et.lgamma(c) + (1.0 - c) * et.digamma(c)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return et.lgamma(x + 1) + (x + 1) * et.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return et.special.gammainc(self.concentration, self.rate * value)


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom (``Gamma(df / 2, 1 / 2)``)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        if isinstance(df, Number):
            df = et.tensor(float(df))
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution with ``concentration`` (its last dim is the event)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) +
                                                      tuple(self.event_shape))
        return self._expanded(new, batch_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        out = gammas / gammas.sum(-1, keepdim=True)
        finfo = et.finfo(out.dtype)
        return out.clamp(min=finfo.tiny, max=1 - finfo.eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (et.xlogy(c - 1.0, value).sum(-1) + et.lgamma(c.sum(-1))
                - et.lgamma(c).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        mask = (self.concentration < 1).all(-1, keepdim=True)
        k = self.concentration.shape[-1]
        onehot = (self.concentration.argmax(-1, keepdim=True) ==
                  et.arange(k, device=mode.device)).to(mode.dtype)
        return et.where(mask, onehot, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return (self.concentration * (con0 - self.concentration) /
                (con0.pow(2) * (con0 + 1)))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (et.lgamma(c).sum(-1) - et.lgamma(a0) - (k - a0) * et.digamma(a0)
                - ((c - 1.0) * et.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return et.lgamma(x).sum(-1) - et.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            concentration = et.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration = et.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Beta, batch_shape, _instance, "_dirichlet")

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = et.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return et.lgamma(x) + et.lgamma(y) - et.lgamma(x + y)

    @property
    def concentration1(self):
        result = self._dirichlet.concentration[..., 0]
        if isinstance(result, Number):
            return et.tensor([result])
        return result

    @property
    def concentration0(self):
        result = self._dirichlet.concentration[..., 1]
        if isinstance(result, Number):
            return et.tensor([result])
        return result


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, ``loc`` and ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(StudentT, batch_shape, _instance,
                                   "df", "loc", "scale", "_chi2")

    @property
    def mean(self):
        return et.where(self.df > 1, self.loc, et.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = et.where(df > 2, finite, et.full_like(finite, math.inf))
        return et.where(df <= 1, et.full_like(m, math.nan), m)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df.dtype, self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * et.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + et.lgamma(0.5 * self.df) - et.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * et.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        half = 0.5 * self.df
        halfp = 0.5 * (self.df + 1)
        lbeta = et.lgamma(half) + math.lgamma(0.5) - et.lgamma(halfp)
        return (self.scale.log() + halfp * (et.digamma(halfp) - et.digamma(half))
                + 0.5 * self.df.log() + lbeta)
