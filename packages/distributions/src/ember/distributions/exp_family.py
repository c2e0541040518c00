"""``ExponentialFamily``: the base of the families whose density is
``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))`` (``torch.distributions.ExponentialFamily``).
"""
from __future__ import annotations

from ember.autograd import enable_grad, grad

from .distribution import Distribution

__all__ = ["ExponentialFamily", "bregman_terms"]


def bregman_terms(dist, natural_params):
    """``F(theta)`` at ``natural_params`` (detached copies that require grad) and its
    gradient ``dF/dtheta`` (with a graph, so that results stay differentiable), for a
    family's log normalizer ``F``."""
    with enable_grad():
        log_norm = dist._log_normalizer(*natural_params)
        grads = grad(log_norm.sum(), natural_params, create_graph=True)
    return log_norm, grads


class ExponentialFamily(Distribution):
    """A distribution of an exponential family: a subclass gives its natural parameters
    (``_natural_params``), its log normalizer ``F`` (``_log_normalizer``) and the expected
    log carrier measure ``E[k(x)]`` (``_mean_carrier_measure``). The entropy is then the
    Bregman divergence ``F(theta) - <theta, dF/dtheta> - E[k(x)]``, with ``dF/dtheta`` by
    autograd; ``kl_divergence`` between two members of one family works the same way."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        log_norm, grads = bregman_terms(self, nparams)
        result = log_norm - self._mean_carrier_measure
        batch = tuple(self._batch_shape)
        for theta, g in zip(nparams, grads):
            result = result - (theta * g).reshape(batch + (-1,)).sum(-1)
        return result

