"""More univariate continuous families: ContinuousBernoulli, FisherSnedecor,
GeneralizedPareto and VonMises."""
from __future__ import annotations

import math

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Size

from . import constraints
from .continuous import Gamma
from .discrete import _bce_with_logits, _BinaryParameterized, _set_probs_or_logits
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import (
    broadcast_params,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    standard_uniform,
)

__all__ = ["ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "VonMises"]


def _nan_unless(cond, value):
    """``value`` where ``cond`` holds, NaN elsewhere."""
    return et.where(cond, value, et.full_like(value, math.nan))


class ContinuousBernoulli(_BinaryParameterized, ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019):
    density proportional to ``probs**x * (1 - probs)**(1 - x)``. Near ``probs = 0.5``
    (inside ``lims``) the normalizer and moments use their Taylor expansions."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._param, batch_shape = _set_probs_or_logits(self, probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_binary(ContinuousBernoulli, batch_shape, _instance)
        new._lims = self._lims
        return new

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return et.where(self._outside_unstable_region(), self.probs,
                        et.full_like(self.probs, self._lims[0]))

    def _stable(self, exact, taylor):
        return et.where(self._outside_unstable_region(), exact, taylor)

    def _cont_bern_log_norm(self):
        """The log normalizer ``log C(probs)`` of the density."""
        p = self._cut_probs()
        below = et.where(p <= 0.5, p, et.zeros_like(p))
        above = et.where(p >= 0.5, p, et.ones_like(p))
        exact = (et.log(et.abs(et.log1p(-p) - et.log(p)))
                 - et.where(p <= 0.5, et.log1p(-2.0 * below), et.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5).pow(2)
        return self._stable(exact, math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x)

    @property
    def mean(self):
        p = self._cut_probs()
        exact = p / (2.0 * p - 1.0) + 1.0 / (et.log1p(-p) - et.log(p))
        x = self.probs - 0.5
        return self._stable(exact, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        p = self._cut_probs()
        exact = (p * (p - 1.0) / (1.0 - 2.0 * p).pow(2)
                 + 1.0 / (et.log1p(-p) - et.log(p)).pow(2))
        x = (self.probs - 0.5).pow(2)
        return self._stable(exact, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(standard_uniform(shape, self.probs.dtype, self.probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = et.broadcast_tensors(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        exact = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = self._stable(exact, value)
        return et.where(value <= 0.0, et.zeros_like(inside),
                        et.where(value >= 1.0, et.ones_like(inside), inside))

    def icdf(self, value):
        p = self._cut_probs()
        exact = ((et.log1p(-p + value * (2.0 * p - 1.0)) - et.log1p(-p))
                 / (et.log(p) - et.log1p(-p)))
        return self._stable(exact, value)

    def entropy(self):
        log_q, log_p = et.log1p(-self.probs), et.log(self.probs)
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        outside = (x <= lo) | (x > hi)
        cut = et.where(outside, x, et.full_like(x, lo))
        exact = et.log(et.abs(et.expm1(cut))) - et.log(et.abs(cut))
        return et.where(outside, exact, 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0)


class FisherSnedecor(Distribution):
    """Fisher-Snedecor's F distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        (self.df1, self.df2), batch_shape = broadcast_params(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(FisherSnedecor, batch_shape, _instance,
                                   "df1", "df2", "_gamma1", "_gamma2")

    @property
    def mean(self):
        df2 = self.df2
        return _nan_unless(df2 > 2, df2 / (df2 - 2))

    @property
    def mode(self):
        df1, df2 = self.df1, self.df2
        return _nan_unless(df1 > 2, (df1 - 2) / df1 * df2 / (df2 + 2))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return _nan_unless(df2 > 4, var)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        tiny = et.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        h1, h2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta = et.lgamma(h1) + et.lgamma(h2) - et.lgamma(h1 + h2)
        return (h1 * ratio.log() + (h1 - 1) * et.log(value)
                - (h1 + h2) * et.log1p(ratio * value) - log_beta)


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution with ``loc``, ``scale`` and ``concentration`` (shape
    xi): exponential at ``concentration = 0``, bounded above for a negative one."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        (self.loc, self.scale, self.concentration), batch_shape = broadcast_params(
            loc, scale, concentration)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                   "loc", "scale", "concentration")

    def _safe_concentration(self):
        """Whether the concentration is (close to) 0, and the concentration with those
        entries replaced by 1 (so that the other branch stays finite)."""
        c = self.concentration
        at_zero = et.isclose(c, et.zeros_like(c))
        return at_zero, et.where(at_zero, et.ones_like(c), c)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(standard_uniform(shape, self.loc.dtype, self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        at_zero, c = self._safe_concentration()
        y = 1 / c + et.ones_like(z)
        nonzero = et.where(y == 0, y, y * et.log1p(c * z))
        return -self.scale.log() - et.where(at_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        at_zero, c = self._safe_concentration()
        return et.where(at_zero, -z, -et.log1p(c * z) / c)

    def log_cdf(self, value):
        return et.log1p(-et.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return et.exp(self.log_cdf(value))

    def icdf(self, value):
        at_zero, c = self._safe_concentration()
        log_u = et.log1p(-value)
        return et.where(at_zero, self.loc - self.scale * log_u,
                        self.loc + self.scale / c * et.expm1(-c * log_u))

    @property
    def mean(self):
        c = self.concentration
        valid = c < 1
        c = et.where(valid, c, et.full_like(c, 0.5))
        return _nan_unless(valid, self.loc + self.scale / (1 - c))

    @property
    def variance(self):
        c = self.concentration
        valid = c < 0.5
        c = et.where(valid, c, et.full_like(c, 0.25))
        return _nan_unless(valid, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return et.broadcast_to(self.scale.log() + self.concentration + 1,
                               tuple(self._batch_shape))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        c = self.concentration
        upper = et.where(c < 0, self.loc - self.scale / c, et.full_like(c, math.inf))
        return constraints.interval(self.loc, upper)


def _log_bessel_i(kappa, order):
    """``log I_order(kappa)`` (modified Bessel function of the first kind, order 0 or 1)
    from the exponentially scaled ``i0e``/``i1e``."""
    scaled = et.special.i0e(kappa) if order == 0 else et.special.i1e(kappa)
    return scaled.log() + kappa


class VonMises(Distribution):
    """The von Mises distribution on the circle: angle ``loc`` and ``concentration``
    (kappa). ``sample`` is Best and Fisher's rejection sampler (in float64); the values
    lie in [-pi, pi)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        (self.loc, self.concentration), _ = broadcast_params(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, "loc", "concentration")

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * et.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_bessel_i(self.concentration, 0))

    @lazy_property
    def _proposal_r(self):
        kappa = self.concentration.detach().to(et.float64)
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return et.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            loc = self.loc.detach().to(et.float64)
            kappa = self.concentration.detach().to(et.float64)
            r = self._proposal_r
            x = et.zeros(shape, dtype=et.float64, device=self.loc.device)
            done = et.zeros(shape, dtype=et.bool, device=self.loc.device)
            while not bool(done.all()):
                u1, u2, u3 = standard_uniform((3,) + shape, et.float64,
                                              self.loc.device).unbind(0)
                z = et.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                accept = accept & ~done
                x = et.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - (_log_bessel_i(k, 1) - _log_bessel_i(k, 0)).exp()


