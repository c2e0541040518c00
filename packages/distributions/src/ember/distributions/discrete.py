"""Discrete families: Bernoulli, Categorical, OneHotCategorical, Poisson, Binomial,
Geometric."""
from __future__ import annotations

import math
from numbers import Number

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Size

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import (
    broadcast_all,
    broadcast_params,
    lazy_property,
    logits_to_probs,
    one_hot,
    probs_to_logits,
    softplus,
    standard_uniform,
)

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Poisson"]

_BOTH = "Either `probs` or `logits` must be specified, but not both."


def _set_probs_or_logits(dist, probs, logits):
    """Set ``dist.probs`` or ``dist.logits``, whichever is given (exactly one must be), as a
    tensor; returns it and the batch shape (empty for a number)."""
    if (probs is None) == (logits is None):
        raise ValueError(_BOTH)
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    (param,) = broadcast_all(value)
    setattr(dist, name, param)
    return param, (Size() if isinstance(value, Number) else param.shape)


def _set_count_and_param(dist, total_count, probs, logits):
    """Set ``dist.total_count`` and ``dist.probs`` or ``dist.logits`` (exactly one given),
    broadcast together, the count in the parameter's dtype; returns the batch shape."""
    if (probs is None) == (logits is None):
        raise ValueError(_BOTH)
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    count, param = broadcast_all(total_count, value)
    dist.total_count = count.to(param.dtype)
    setattr(dist, name, param)
    dist._param = param
    return param.shape


def _param_of(dist):
    """The parameter ``dist`` was expanded with: ``logits`` when it holds them, else
    ``probs``."""
    return dist.logits if "logits" in dist.__dict__ else dist.probs


def _support_values(values, batch_shape, expand):
    """``enumerate_support``: the values along a new leading dim, broadcast to (or, with
    ``expand``, expanded to) the batch shape."""
    values = values.view((-1,) + (1,) * len(batch_shape))
    if expand:
        values = values.expand((-1,) + tuple(batch_shape))
    return values


def _bce_with_logits(logits, target):
    """Elementwise binary cross entropy of ``target`` against ``sigmoid(logits)``."""
    return softplus(logits) - logits * target


class _BinaryParameterized(Distribution):
    """A family parameterized by a probability ``probs`` or its ``logits`` (whichever was
    given is ``_param``; the other is computed on first use)."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    def _expand_binary(self, cls, batch_shape, _instance, *names):
        """``expand`` of the parameters ``names`` and whichever of probs and logits this
        distribution holds."""
        new = self._expand_params(cls, batch_shape, _instance, *names, "probs", "logits")
        new._param = _param_of(new)
        return new


class Bernoulli(_BinaryParameterized, ExponentialFamily):
    """Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._param, batch_shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Bernoulli, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return et.where(self.probs == 0.5, et.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return et.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (et.logit(self.probs),)

    def _log_normalizer(self, x):
        return et.log1p(et.exp(x))

    def enumerate_support(self, expand=True):
        values = et.arange(2, dtype=self._param.dtype, device=self._param.device)
        return _support_values(values, self._batch_shape, expand)


class Categorical(Distribution):
    """Categorical distribution over ``{0, ..., K-1}`` with (unnormalized) ``probs`` or
    ``logits`` along the last dim."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError(_BOTH)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(param_shape))
        new._param = _param_of(new)
        new._num_events = self._num_events
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return et.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                       device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return et.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                       device=self.probs.device)

    def sample(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            n = max(sample_shape.numel(), 1)
            samples_2d = et.multinomial(probs_2d, n, True).T
            return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = et.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = et.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = et.arange(self._num_events, dtype=et.int64, device=self._param.device)
        return _support_values(values, self._batch_shape, expand)


class OneHotCategorical(Distribution):
    """Categorical distribution whose samples are one-hot vectors of size K."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(OneHotCategorical, batch_shape, _instance, "_categorical")

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return one_hot(probs.argmax(-1), probs.shape[-1], probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, self._categorical._num_events, probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = et.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical with a straight-through gradient estimator: ``rsample`` returns
    the one-hot sample, with the gradient of ``probs`` passed through it (Bengio et al.,
    2013)."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class Poisson(ExponentialFamily):
    """Poisson distribution with ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,), batch_shape = broadcast_params(rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, "rate")

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return et.poisson(self.rate.expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - et.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (et.log(self.rate),)

    def _log_normalizer(self, x):
        return et.exp(x)


class Binomial(_BinaryParameterized):
    """Binomial distribution: successes in ``total_count`` Bernoulli trials with ``probs``
    (or ``logits``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        batch_shape = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Binomial, batch_shape, _instance, "total_count")

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            n = self.total_count.expand(shape)
            p = self.probs.expand(shape)
            max_n = int(n.max().item()) if n.numel() else 0
            if max_n == 0:
                return et.zeros(shape, dtype=p.dtype, device=p.device)
            u = standard_uniform((max_n,) + shape, p.dtype, p.device)
            trial = et.arange(max_n, dtype=p.dtype, device=p.device).view(
                (max_n,) + (1,) * len(shape))
            hits = (u < p) & (trial < n)
            return hits.to(p.dtype).sum(0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_choose = et.lgamma(n + 1) - et.lgamma(value + 1) - et.lgamma(n - value + 1)
        # k * logit - n * log(1 + exp(logit)), stable in both tails
        return log_choose + value * self.logits - n * softplus(self.logits)

    def _homogeneous_total_count(self, op):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count.min() == total_count).item()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{op}`.")
        return total_count

    def entropy(self):
        self._homogeneous_total_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(et.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_total_count("enumerate_support")
        values = et.arange(1 + total_count, dtype=self._param.dtype,
                           device=self._param.device)
        return _support_values(values, self._batch_shape, expand)


class Geometric(_BinaryParameterized):
    """Number of failures before the first success in Bernoulli trials with ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._param, batch_shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                invalid_value = value[~valid]
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{invalid_value}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return et.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        tiny = et.finfo(self.probs.dtype).tiny
        with no_grad():
            u = standard_uniform(shape, self.probs.dtype, self.probs.device).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # the k = 0 term of a certain success: 0 * log(0) is 0
        probs_fail = et.where((probs == 1) & (value == 0), et.zeros_like(probs), probs)
        return value * (-probs_fail).log1p() + self.probs.log()

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs) / self.probs


