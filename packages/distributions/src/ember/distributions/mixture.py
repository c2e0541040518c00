"""MixtureSameFamily: a mixture whose components are the batch of one distribution."""
from __future__ import annotations

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Size

from . import constraints
from .discrete import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture of the ``k`` components that form the rightmost batch dim of
    ``component_distribution``, weighted by the Categorical ``mixture_distribution`` (over
    ``k`` categories, its batch broadcastable with the remaining batch dims)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "torch.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 "compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        batch_shape = Size(batch_shape)
        new._component_distribution = self._component_distribution.expand(
            tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        return self._expanded(new, batch_shape)

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _sum_components(self, x):
        return x.sum(-1 - self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return self._sum_components(probs * self.component_distribution.mean)

    @property
    def variance(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        comp = self.component_distribution
        mean_cond_var = self._sum_components(probs * comp.variance)
        var_cond_mean = self._sum_components(probs * (comp.mean - self._pad(self.mean)).pow(2.0))
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = et.log_softmax(self.mixture_distribution.logits, dim=-1)
        return et.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape=Size()):
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(es) + 1))
            index = index.expand(tuple(mix_sample.shape) + (1,) + es)
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  "
                f"{self.component_distribution})")
