"""Count distributions over several trials: NegativeBinomial and Multinomial."""
from __future__ import annotations

import math

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Size

from . import constraints
from .continuous import Gamma
from .discrete import Binomial, Categorical, _BinaryParameterized, _set_count_and_param
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, one_hot, softplus

__all__ = ["Multinomial", "NegativeBinomial"]


class NegativeBinomial(_BinaryParameterized):
    """Number of successes before ``total_count`` failures in Bernoulli trials whose
    success probability is ``probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        batch_shape = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(NegativeBinomial, batch_shape, _instance, "total_count")

    @property
    def mean(self):
        return self.total_count * et.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / et.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # the Poisson rate of the Gamma-Poisson mixture
        return Gamma(concentration=self.total_count, rate=et.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with no_grad():
            rate = self._gamma.sample(sample_shape)
            return et.poisson(rate.contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        # n log(1 - p) + k log(p), with log p = -softplus(-logits)
        log_unnormalized = -n * softplus(self.logits) - value * softplus(-self.logits)
        # log C(n + k - 1, k); for n = k = 0 (a certain 0) it is 0: there the count is
        # replaced by 1, which gives 0 without an inf - inf on the way
        n = et.where(n + value == 0.0, et.ones_like(n), n)
        log_normalization = -et.lgamma(n + value) + et.lgamma(1.0 + value) + et.lgamma(n)
        return log_unnormalized - log_normalization


class Multinomial(Distribution):
    """Counts of each of K categories in ``total_count`` draws from a Categorical with
    ``probs`` (or ``logits``). ``total_count`` must be one int; ``log_prob`` does not need
    it (any total is scored)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Multinomial, batch_shape, _instance, "_categorical")
        new.total_count = self.total_count
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        with no_grad():
            draws = self._categorical.sample(Size((self.total_count,)) + sample_shape)
            k = self._categorical._num_events
            counts = one_hot(draws, k, self.probs.dtype).sum(0)
            return counts.reshape(tuple(self._extended_shape(sample_shape)))

    def entropy(self):
        n = self.total_count
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = et.exp(self._binomial.log_prob(support))
        weights = et.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum((0, -1))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # 0 * log(0) counts as 0
        logits = et.where((value == 0) & (logits == -math.inf), et.zeros_like(logits), logits)
        log_factorial_n = et.lgamma(value.sum(-1) + 1)
        log_factorial_xs = et.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
