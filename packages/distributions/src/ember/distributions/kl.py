"""``kl_divergence(p, q)`` and its registry (``torch.distributions.kl``).

Implementations are registered per pair of distribution types with :func:`register_kl`;
:func:`kl_divergence` dispatches on the most specific registered pair (by method resolution
order) and raises NotImplementedError when none matches.
"""
from __future__ import annotations

import math
import warnings

import ember.tensor as et

from .continuous import Beta, Cauchy, Dirichlet, Exponential, Gamma, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily, bregman_terms
from .independent import Independent
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal, batch_mahalanobis
from .transformed_distribution import Gumbel, HalfNormal, TransformedDistribution
from .transformed_families import Pareto
from .univariate import ContinuousBernoulli
from .utils import euler_constant, softplus, sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def register_kl(type_p, type_q):
    """Decorator registering a pairwise function ``kl(p, q) -> Tensor``::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q):
            ...

    Lookup returns the most specific pair by inheritance; register the more specific pair
    yourself when two registrations are ambiguous (a RuntimeWarning says so).
    """
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented

    def rank(m):
        return type_p.__mro__.index(m[0]), type_q.__mro__.index(m[1])

    left = min(matches, key=rank)
    right = min(matches, key=lambda m: rank(m)[::-1])
    left_fun, right_fun = _KL_REGISTRY[left], _KL_REGISTRY[right]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left[0].__name__}, {right[1].__name__})",
                      RuntimeWarning, stacklevel=3)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution):
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, batched over the batch shape."""
    key = type(p), type(q)
    try:
        fun = _KL_MEMOIZE[key]
    except KeyError:
        fun = _dispatch_kl(*key)
        _KL_MEMOIZE[key] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
            f"q type {q.__class__.__name__}")
    return fun(p, q)


def _inf_like(t):
    return et.full_like(t, math.inf)


def _where_inf(cond, value):
    return et.where(cond, _inf_like(value), value)


def _xlogx(x):
    return et.xlogy(x, x)


# --- same family ----------------------------------------------------------------------

@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _where_inf(q.probs == 0, t1)
    t1 = et.where(p.probs == 0, et.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _where_inf(q.probs == 1, t2)
    t2 = et.where(p.probs == 1, et.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1 = p.concentration1, p.concentration0
    a2, b2 = q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    t1 = et.lgamma(a2) + et.lgamma(b2) + et.lgamma(s1)
    t2 = et.lgamma(a1) + et.lgamma(b1) + et.lgamma(s2)
    t3 = (a1 - a2) * et.digamma(a1)
    t4 = (b1 - b2) * et.digamma(b1)
    t5 = (s2 - s1) * et.digamma(s1)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    kl = p.total_count * (p.probs * (softplus(-q.logits) - softplus(-p.logits))
                          + (1 - p.probs) * (softplus(q.logits) - softplus(p.logits)))
    return _where_inf(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _where_inf((q.probs == 0).expand_as(t), t)
    t = et.where((p.probs == 0).expand_as(t), et.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + et.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - et.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer between the natural parameters (the
    gradient of ``F`` at ``p``'s parameters by autograd)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    log_norm, grads = bregman_terms(p, p_params)
    result = q._log_normalizer(*q_params) - log_norm
    for pt, qt, g in zip(p_params, q_params, grads):
        result = result - sum_rightmost((qt - pt) * g, len(q.event_shape))
    return result


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _where_inf(p.scale < q.scale, result)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = et.lgamma(sum_p) - et.lgamma(sum_q)
    t2 = (et.lgamma(p.concentration) - et.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = et.digamma(p.concentration) - et.digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rate_ratio.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * et.log(p.rate / q.rate)
    t2 = et.lgamma(q.concentration) - et.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * et.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = et.exp(ct2 + et.lgamma(1 + ct1) - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - et.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * et.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _where_inf((q.low > p.low) | (q.high < p.high), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


def _mvn_kl(p_loc, p_L, q_loc, q_L, n):
    """KL between N(p_loc, p_L p_L^T) and N(q_loc, q_L q_L^T) from Cholesky factors."""
    half_term1 = (q_L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p_L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    batch = et.broadcast_shapes(tuple(q_L.shape[:-2]), tuple(p_L.shape[:-2]))
    qL = q_L.expand(tuple(batch) + (n, n))
    pL = p_L.expand(tuple(batch) + (n, n))
    term2 = et.linalg.solve_triangular(qL, pL, upper=False).pow(2).sum((-2, -1))
    term3 = batch_mahalanobis(q_L, q_loc - p_loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


def _check_mvn_shapes(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")


def _tril(d):
    if isinstance(d, MultivariateNormal):
        return d._unbroadcasted_scale_tril
    W = d._unbroadcasted_cov_factor
    return et.linalg.cholesky(et.matmul(W, W.mT) + et.diag_embed(d._unbroadcasted_cov_diag))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    _check_mvn_shapes(p, q)
    return _mvn_kl(p.loc, _tril(p), q.loc, _tril(q), p.event_shape[0])


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Low Rank Multivariate Normals with "
                         "different event shapes cannot be computed")
    return _mvn_kl(p.loc, _tril(p), q.loc, _tril(q), p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_mvn_shapes(p, q)
    return _mvn_kl(p.loc, _tril(p), q.loc, _tril(q), p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_mvn_shapes(p, q)
    return _mvn_kl(p.loc, _tril(p), q.loc, _tril(q), p.event_shape[0])


# --- across families (finite where the supports nest, +inf where they do not) ------------

def _infinite(p, q):
    return _inf_like(_batch_tensor(p, q))


def _batch_tensor(p, q):
    shape = et.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    t = p.mean
    return et.zeros(tuple(shape), dtype=t.dtype, device=t.device)


for _p, _q in [(Poisson, Bernoulli), (Poisson, Binomial),
               (Beta, Pareto), (ContinuousBernoulli, Pareto),
               (Exponential, ContinuousBernoulli), (Exponential, Pareto),
               (Gamma, ContinuousBernoulli), (Gamma, Pareto),
               (Gumbel, ContinuousBernoulli), (Gumbel, Pareto),
               (Laplace, ContinuousBernoulli), (Laplace, Pareto),
               (Normal, ContinuousBernoulli), (Normal, Pareto),
               (Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform),
               (Exponential, Beta), (Exponential, Uniform), (Gamma, Beta), (Gamma, Uniform),
               (Gumbel, Beta), (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Uniform),
               (Laplace, Beta), (Laplace, Exponential), (Laplace, Gamma), (Laplace, Uniform),
               (Normal, Beta), (Normal, Exponential), (Normal, Gamma), (Normal, Uniform)]:
    register_kl(_p, _q)(_infinite)


def _to_normal(p, q, mean, var, neg_entropy):
    """KL(p || Normal q) from p's mean, variance and negative entropy."""
    return (neg_entropy + q.scale.log() + _HALF_LOG_2PI
            + (var + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2)))


def _to_gumbel(q, ez_num, e_exp_neg_x, neg_entropy):
    """KL(p || Gumbel q) given E[x] (``ez_num``), E[exp(-x / q.scale)] and -H(p)."""
    return (neg_entropy + q.scale.log() + (ez_num - q.loc) / q.scale
            + et.exp(q.loc / q.scale) * e_exp_neg_x)


def _to_exponential(p, q, mean):
    """KL(p || Exponential q) from p's mean."""
    return -p.entropy() - q.rate.log() + q.rate * mean


def _to_gamma(p, q, mean, e_log_x):
    """KL(p || Gamma q) from p's mean and E[log x]."""
    return (-p.entropy() - q.concentration * q.rate.log() + et.lgamma(q.concentration)
            - (q.concentration - 1) * e_log_x + q.rate * mean)


def _to_continuous_bernoulli(p, q):
    """KL(p || ContinuousBernoulli q) for p on the unit interval."""
    return -p.entropy() - p.mean * q.logits - et.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log q(k) = k log(rate) - rate for k in {0, 1}
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return _to_continuous_bernoulli(p, q)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return _to_exponential(p, q, p.mean)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    a, b = p.concentration1, p.concentration0
    return _to_gamma(p, q, p.mean, et.digamma(a) - et.digamma(a + b))


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _where_inf((q.low > 0) | (q.high < 1), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return _to_exponential(p, q, p.mean)


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _where_inf((q.low >= 0) | (q.high <= 1), result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    return _to_gamma(p, q, p.mean, -euler_constant - p.rate.log())


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    e_exp = p.rate / (p.rate + 1 / q.scale)
    return _to_gumbel(q, p.mean, e_exp, -p.entropy())


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return _to_exponential(p, q, p.concentration / p.rate)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    e_exp = (1 + 1 / (p.rate * q.scale)).pow(-p.concentration)
    return _to_gumbel(q, p.mean, e_exp, -p.entropy())


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    e_exp = et.exp(-p.loc / q.scale + p.scale.pow(2) / (2 * q.scale.pow(2)))
    return _to_gumbel(q, p.mean, e_exp, -p.entropy())


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    d = p.loc - q.loc
    e_abs = (p.scale * math.sqrt(2 / math.pi) * et.exp(-d.pow(2) / (2 * p.scale.pow(2)))
             + d * et.erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + (2 * q.scale).log() + e_abs / q.scale


def _pareto_e_log(p):
    """E[log x] for x ~ Pareto(scale, alpha)."""
    return p.scale.log() + p.alpha.reciprocal()


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    return _where_inf(p.alpha <= 1, _to_exponential(p, q, p.mean))


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    return _where_inf(p.alpha <= 1, _to_gamma(p, q, p.mean, _pareto_e_log(p)))


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    return _where_inf(p.alpha <= 2, _to_normal(p, q, p.mean, p.variance, -p.entropy()))


def _uniform_e_log(lo, hi):
    """E[log x] for x ~ Uniform(lo, hi), lo >= 0."""
    return (_xlogx(hi) - hi - _xlogx(lo) + lo) / (hi - lo)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    e_log_x = _uniform_e_log(p.low, p.high)
    e_log_1mx = _uniform_e_log(1 - p.high, 1 - p.low)
    a, b = q.concentration1, q.concentration0
    lbeta = et.lgamma(a) + et.lgamma(b) - et.lgamma(a + b)
    result = -width.log() - (a - 1) * e_log_x - (b - 1) * e_log_1mx + lbeta
    return _where_inf((p.high > 1) | (p.low < 0), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    return _where_inf((p.high >= 1) | (p.low <= 0), _to_continuous_bernoulli(p, q))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    log_norm = (q.alpha * q.scale.pow(q.alpha) * width).log()
    result = (q.alpha + 1) * _uniform_e_log(p.low, p.high) - log_norm
    return _where_inf(p.low < q.scale, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    return _where_inf(p.low < 0, _to_exponential(p, q, p.mean))


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    return _where_inf(p.low < 0, _to_gamma(p, q, p.mean, _uniform_e_log(p.low, p.high)))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    width = p.high - p.low
    e_exp = q.scale * (et.exp(-p.low / q.scale) - et.exp(-p.high / q.scale)) / width
    return _to_gumbel(q, (p.high + p.low) / 2, e_exp, -width.log())


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance, -p.entropy())
