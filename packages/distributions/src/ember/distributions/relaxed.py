"""Continuous relaxations (Concrete / Gumbel-softmax): RelaxedBernoulli and
RelaxedOneHotCategorical, with their logit-space bases."""
from __future__ import annotations

import math
from numbers import Number

import ember.tensor as et
from ember.tensor import Size

from . import constraints
from .discrete import Categorical, _BinaryParameterized, _set_probs_or_logits
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import (
    broadcast_all,
    clamp_probs,
    softplus,
    standard_uniform,
)

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "RelaxedOneHotCategorical"]


class LogitRelaxedBernoulli(_BinaryParameterized):
    """The logit of a RelaxedBernoulli sample (Maddison et al., 2017)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._param, batch_shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_binary(LogitRelaxedBernoulli, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(standard_uniform(shape, probs.dtype, probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return _log(self.temperature) + diff - 2 * softplus(diff)


class _RelaxedTransformed(TransformedDistribution):
    """A relaxed distribution defined as a transform of its base: its temperature and its
    parameters are the base distribution's."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_RelaxedTransformed):
    """A relaxed Bernoulli on (0, 1), parameterized by ``temperature`` and ``probs`` or
    ``logits``; samples are reparameterized."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample (the Concrete distribution in log
    space)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ExpRelaxedCategorical, batch_shape, _instance, "_categorical")
        new.temperature = self.temperature
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        u = clamp_probs(standard_uniform(shape, logits.dtype, logits.device))
        gumbels = -((-(u.log())).log())
        scores = (logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = et.broadcast_tensors(self.logits, value)
        temp = self.temperature
        log_scale = math.lgamma(k) + (k - 1) * _log(temp)
        score = logits - value * temp
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedTransformed):
    """A relaxed one-hot categorical on the simplex (Gumbel-softmax), parameterized by
    ``temperature`` and ``probs`` or ``logits``; samples are reparameterized."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)


def _log(t):
    return math.log(t) if isinstance(t, Number) else t.log()
