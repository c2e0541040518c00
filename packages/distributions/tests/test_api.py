"""Sampling moments, gradients (gradcheck in float64) of log_prob, entropy, KL and rsample,
validation errors, expand, transforms and the KL registry."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special as sps

import ember.autograd as ag
import ember.distributions as D
import ember.tensor as et
from ember.distributions import constraints, transforms
from ember.distributions.gamma_sampling import standard_gamma_grad
from ember.tensor.extension import unwrap


def T(x, grad=False):
    return et.tensor(np.asarray(x, dtype=np.float64).tolist(), dtype=et.float64,
                     requires_grad=grad)


def N(t):
    return np.asarray(unwrap(t.detach()))


# ----------------------------------------------------------------------------- sampling

MOMENT_CASES = {
    "Normal": lambda: D.Normal(T([0.5, -1.0]), T([1.0, 2.0])),
    "Uniform": lambda: D.Uniform(T([0.0, -1.0]), T([1.0, 3.0])),
    "Exponential": lambda: D.Exponential(T([0.5, 3.0])),
    "Laplace": lambda: D.Laplace(T([0.5, -1.0]), T([1.0, 2.0])),
    "Gamma": lambda: D.Gamma(T([0.3, 4.0]), T([1.0, 2.0])),
    "Chi2": lambda: D.Chi2(T([1.0, 5.0])),
    "Beta": lambda: D.Beta(T([0.5, 3.0]), T([2.0, 1.5])),
    "Dirichlet": lambda: D.Dirichlet(T([[0.5, 2.0, 3.0], [4.0, 1.0, 1.0]])),
    "StudentT": lambda: D.StudentT(T([5.0, 8.0]), T([0.5, -1.0]), T([1.0, 2.0])),
    "Bernoulli": lambda: D.Bernoulli(T([0.2, 0.7])),
    "Poisson": lambda: D.Poisson(T([0.5, 6.0])),
    "Binomial": lambda: D.Binomial(T([5.0, 12.0]), T([0.2, 0.7])),
    "Geometric": lambda: D.Geometric(T([0.2, 0.7])),
    "OneHotCategorical": lambda: D.OneHotCategorical(T([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
    "MultivariateNormal": lambda: D.MultivariateNormal(
        T([0.5, -1.0]), covariance_matrix=T([[2.0, 0.5], [0.5, 1.0]])),
    "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(
        T([0.5, -1.0]), T([[1.0], [0.5]]), T([0.5, 1.0])),
    "LogNormal": lambda: D.LogNormal(T([0.1, -0.5]), T([0.3, 0.5])),
    "HalfNormal": lambda: D.HalfNormal(T([1.0, 2.0])),
    "Gumbel": lambda: D.Gumbel(T([0.5, -1.0]), T([1.0, 2.0])),
}


@pytest.mark.parametrize("name", sorted(MOMENT_CASES))
def test_sample_moments(name):
    et.manual_seed(1234)
    d = MOMENT_CASES[name]()
    n = 40000
    x = d.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape)
    xs = N(x)
    mean, var = N(d.mean), N(d.variance)
    se = np.sqrt(var / n)
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * se + 1e-3), (xs.mean(0), mean)
    np.testing.assert_allclose(xs.var(0), var, rtol=0.08, atol=1e-3)
    assert bool(d.support.check(x).all())


def test_categorical_sample_frequencies():
    et.manual_seed(0)
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    x = N(D.Categorical(T(p)).sample((30000,)))
    freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(freq, p, atol=0.015)


def test_relaxed_samples_live_on_their_supports():
    et.manual_seed(0)
    rb = D.RelaxedBernoulli(T(0.5), probs=T([0.2, 0.9]))
    x = rb.sample((2000,))
    assert bool(((x > 0) & (x < 1)).all())
    np.testing.assert_allclose(N(x).mean(0), [0.2, 0.9], atol=0.08)
    roh = D.RelaxedOneHotCategorical(T(0.1), probs=T([0.2, 0.3, 0.5]))
    y = roh.sample((4000,))
    assert bool(constraints.simplex.check(y).all())
    # at a low temperature the argmax frequencies approach the probabilities
    freq = np.bincount(N(y).argmax(-1), minlength=3) / 4000
    np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.03)


def test_seeded_sampling_is_reproducible():
    d = D.Gamma(T([0.5, 2.0]), T([1.0, 1.0]))
    et.manual_seed(7)
    a = N(d.sample((5,)))
    et.manual_seed(7)
    b = N(d.sample((5,)))
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------- gradients

GRAD_CASES = {
    "Normal": (lambda a, b: D.Normal(a, b), [[0.3, -1.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "Laplace": (lambda a, b: D.Laplace(a, b), [[0.3, -1.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "Cauchy": (lambda a, b: D.Cauchy(a, b), [[0.3, -1.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "Gumbel": (lambda a, b: D.Gumbel(a, b), [[0.3, -1.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "Gamma": (lambda a, b: D.Gamma(a, b), [[0.7, 2.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "Beta": (lambda a, b: D.Beta(a, b), [[0.7, 2.0], [0.5, 2.0]], [[0.1, 0.6]]),
    "StudentT": (lambda a, b: D.StudentT(a, 0.5, b), [[1.7, 4.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "LogNormal": (lambda a, b: D.LogNormal(a, b), [[0.3, -1.0], [0.5, 2.0]], [[0.1, 1.5]]),
    "Uniform": (lambda a, b: D.Uniform(a, a + b), [[0.3, -1.0], [1.5, 2.0]], [[0.5, 0.2]]),
    "Bernoulli": (lambda a: D.Bernoulli(logits=a), [[0.3, -1.0]], [[1.0, 0.0]]),
    "Binomial": (lambda a: D.Binomial(6, probs=a), [[0.3, 0.8]], [[2.0, 6.0]]),
    "Geometric": (lambda a: D.Geometric(a), [[0.3, 0.8]], [[2.0, 0.0]]),
    "Poisson": (lambda a: D.Poisson(a), [[0.3, 4.0]], [[2.0, 0.0]]),
    "Dirichlet": (lambda a: D.Dirichlet(a), [[0.7, 2.0, 1.5]], [[0.2, 0.3, 0.5]]),
    "Categorical": (lambda a: D.Categorical(logits=a), [[0.7, 2.0, 1.5]], None),
    "MultivariateNormal": (lambda a, b: D.MultivariateNormal(
        a, scale_tril=et.diag_embed(b.exp()) + et.tensor([[0.0, 0.0], [0.4, 0.0]],
                                                          dtype=et.float64)),
        [[0.3, -1.0], [0.1, 0.5]], [[0.1, 1.5]]),
    "LowRankMultivariateNormal": (lambda a, b: D.LowRankMultivariateNormal(
        a, b.unsqueeze(-1), b.exp()), [[0.3, -1.0], [0.1, 0.5]], [[0.1, 1.5]]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_log_prob_and_entropy(name):
    build, params, value = GRAD_CASES[name]
    inputs = tuple(T(p, grad=True) for p in params)
    if value is not None:
        v = T(value[0])
        assert ag.gradcheck(lambda *ps: build(*ps).log_prob(v), inputs)
    else:
        v = et.tensor([0, 2])
        assert ag.gradcheck(lambda *ps: build(*ps).log_prob(v), inputs)
    if name not in ("Poisson",):
        assert ag.gradcheck(lambda *ps: build(*ps).entropy(), inputs)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal",
                                  "Uniform", "MultivariateNormal",
                                  "LowRankMultivariateNormal"])
def test_gradcheck_rsample_location_scale(name):
    build, params, _ = GRAD_CASES[name]
    inputs = tuple(T(p, grad=True) for p in params)

    def f(*ps):
        et.manual_seed(3)  # the same noise at every evaluation
        return build(*ps).rsample((3,))
    assert ag.gradcheck(f, inputs)


def test_gradcheck_rsample_relaxed_and_transformed():
    temp = T(0.6)

    def relaxed(logits):
        et.manual_seed(5)
        return D.RelaxedOneHotCategorical(temp, logits=logits).rsample((2,))

    def relaxed_b(logits):
        et.manual_seed(5)
        return D.RelaxedBernoulli(temp, logits=logits).rsample((2,))

    def tanh_normal(loc, scale):
        et.manual_seed(5)
        base = D.Normal(loc, scale)
        return D.TransformedDistribution(base, [transforms.TanhTransform(),
                                                transforms.AffineTransform(1.0, 2.0)]).rsample()

    assert ag.gradcheck(relaxed, (T([0.3, -1.0, 0.5], grad=True),))
    assert ag.gradcheck(relaxed_b, (T([0.3, -1.0, 0.5], grad=True),))
    assert ag.gradcheck(tanh_normal, (T([0.3, -1.0], grad=True), T([0.5, 1.0], grad=True)))


def test_gamma_implicit_gradient_matches_inverse_cdf_derivative():
    # x = F^-1(u; alpha) at fixed u: dx/dalpha by central differences of scipy's inverse
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 9.0, 40.0, 300.0])
    u = np.array([0.01, 0.3, 0.5, 0.7, 0.99, 0.2, 0.8])
    x = sps.gammaincinv(alpha, u)
    h = alpha * 1e-6
    ref = (sps.gammaincinv(alpha + h, u) - sps.gammaincinv(alpha - h, u)) / (2 * h)
    got = N(standard_gamma_grad(T(alpha), T(x)))
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_gamma_family_rsample_carries_gradients():
    et.manual_seed(0)
    for d, params in [
        (lambda c, r: D.Gamma(c, r), ([0.5, 3.0], [1.0, 2.0])),
        (lambda c, r: D.Beta(c, r), ([0.5, 3.0], [1.0, 2.0])),
        (lambda c, r: D.StudentT(c, 0.0, r), ([2.5, 3.0], [1.0, 2.0])),
        (lambda c, r: D.Dirichlet(et.stack([c, r], -1)), ([0.5, 3.0], [1.0, 2.0])),
    ]:
        ps = [T(p, grad=True) for p in params]
        x = d(*ps).rsample((5,))
        gs = ag.grad(x.sum(), ps)
        assert all(g is not None and np.isfinite(N(g)).all() for g in gs)


def test_gamma_rsample_gradient_is_unbiased_for_the_mean():
    # d/dalpha E[x] = 1/rate for Gamma(alpha, rate)
    et.manual_seed(11)
    alpha = T([0.4, 3.0], grad=True)
    x = D.Gamma(alpha, T([2.0, 0.5])).rsample((20000,))
    (g,) = ag.grad(x.mean(0).sum(), [alpha])
    np.testing.assert_allclose(N(g), [0.5, 2.0], rtol=0.05)


def test_sample_has_no_gradient_and_discrete_rsample_raises():
    loc = T([0.0, 1.0], grad=True)
    assert not D.Normal(loc, 1.0).sample().requires_grad
    assert D.Normal(loc, 1.0).rsample().requires_grad
    for d in (D.Bernoulli(T([0.3])), D.Categorical(T([0.3, 0.7])), D.Poisson(T([1.0]))):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError):
            d.rsample()


@pytest.mark.parametrize("pair", [
    (lambda a, b: D.Normal(a, b), lambda a, b: D.Normal(b - 1, a.exp())),
    (lambda a, b: D.Gamma(a.exp(), b), lambda a, b: D.Gamma(b, a.exp() + 1)),
    (lambda a, b: D.Beta(a.exp(), b), lambda a, b: D.Beta(b, a.exp() + 1)),
    (lambda a, b: D.Laplace(a, b), lambda a, b: D.Normal(b, a.exp())),
    (lambda a, b: D.Dirichlet(et.stack([a.exp(), b], -1)),
     lambda a, b: D.Dirichlet(et.stack([b, a.exp()], -1))),
    (lambda a, b: D.Categorical(logits=et.stack([a, b], -1)),
     lambda a, b: D.Categorical(logits=et.stack([b, a * a], -1))),
    (lambda a, b: D.MultivariateNormal(a, scale_tril=et.diag_embed(b)),
     lambda a, b: D.MultivariateNormal(b, covariance_matrix=et.diag_embed(a.exp()) + 0.1)),
])
def test_gradcheck_kl(pair):
    a, b = T([0.3, -0.4], grad=True), T([0.8, 1.6], grad=True)
    assert ag.gradcheck(lambda x, y: D.kl_divergence(pair[0](x, y), pair[1](x, y)), (a, b))


# ------------------------------------------------------------- KL against Monte Carlo

@pytest.mark.parametrize("p,q", [
    (D.Normal(T([0.3]), T([1.2])), D.Laplace(T([0.0]), T([2.0]))),
    (D.Gamma(T([2.0]), T([1.5])), D.Gumbel(T([0.5]), T([2.0]))),
    (D.Uniform(T([0.2]), T([0.7])), D.Beta(T([2.0]), T([3.0]))),
    (D.Exponential(T([1.3])), D.Gamma(T([2.0]), T([0.5]))),
    (D.Beta(T([2.0]), T([3.0])), D.Normal(T([0.5]), T([0.3]))),
    (D.Bernoulli(T([0.3])), D.Poisson(T([0.8]))),
])
def test_cross_family_kl_matches_monte_carlo(p, q):
    et.manual_seed(0)
    x = p.sample((200000,))
    mc = N(p.log_prob(x) - q.log_prob(x)).mean(0)
    np.testing.assert_allclose(N(D.kl_divergence(p, q)), mc, atol=0.02)


def test_kl_infinite_and_not_implemented():
    assert math.isinf(D.kl_divergence(D.Normal(0.0, 1.0), D.Uniform(0.0, 1.0)).item())
    assert math.isinf(D.kl_divergence(D.Uniform(T([-1.0]), T([2.0])),
                                      D.Uniform(T([0.0]), T([3.0]))).item())
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for "
                                                  "p type Poisson and q type Laplace"):
        D.kl_divergence(D.Poisson(T([1.0])), D.Laplace(0.0, 1.0))
    # two exponential families meet in the Bregman registration, which refuses two families
    with pytest.raises(NotImplementedError, match="The cross KL-divergence between "
                                                  "different exponential families"):
        D.kl_divergence(D.Poisson(T([1.0])), D.Normal(0.0, 1.0))


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    from ember.distributions import kl as kl_module
    before = dict(kl_module._KL_REGISTRY)
    try:
        p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)
        assert D.kl_divergence(p, q).item() == pytest.approx(0.5)

        @D.register_kl(MyNormal, D.Normal)
        def _kl(p, q):
            return et.tensor(42.0)
        assert D.kl_divergence(p, q).item() == 42.0
        assert D.kl_divergence(q, q).item() == 0.0
    finally:
        kl_module._KL_REGISTRY.clear()
        kl_module._KL_REGISTRY.update(before)
        kl_module._KL_MEMOIZE.clear()
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


# ----------------------------------------------------------------------------- validation

def test_parameter_validation_messages():
    with pytest.raises(ValueError) as e:
        D.Normal(0.0, -1.0)
    assert str(e.value) == (
        "Expected parameter scale (Tensor of shape ()) of distribution "
        "Normal(loc: 0.0, scale: -1.0) to satisfy the constraint GreaterThan(lower_bound=0.0), "
        "but found invalid values:\n-1.0")
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but "
                                         "not both."):
        D.Bernoulli(probs=0.3, logits=0.1)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or "
                                         "precision_matrix or scale_tril may be specified."):
        D.MultivariateNormal(T([0.0, 0.0]), T(np.eye(2)), T(np.eye(2)))
    with pytest.raises(ValueError, match="constraint PositiveDefinite"):
        D.MultivariateNormal(T([0.0, 0.0]), covariance_matrix=T([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="constraint IndependentConstraint\\(GreaterThan"):
        D.Dirichlet(T([1.0, -1.0]))
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(T([1.0]), T([0.0]))
    D.Normal(0.0, -1.0, validate_args=False)  # no check when asked not to


def test_value_validation_messages():
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(1.0)
    with pytest.raises(ValueError, match="Value is not broadcastable with "
                                         "batch_shape\\+event_shape"):
        D.Normal(T([0.0, 0.0]), 1.0).log_prob(T([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="The right-most size of value must match "
                                         "event_shape"):
        D.Dirichlet(T([1.0, 1.0])).log_prob(T([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError) as e:
        D.Exponential(1.0).log_prob(T(-1.0))
    assert str(e.value) == (
        "Expected value argument (Tensor of shape ()) to be within the support "
        "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential(rate: 1.0), but "
        "found invalid values:\n-1.0")
    with pytest.raises(ValueError, match="IntegerInterval\\(lower_bound=0, upper_bound=1\\)"):
        D.Categorical(T([0.5, 0.5])).log_prob(T(0.5))


def test_set_default_validate_args():
    try:
        D.Distribution.set_default_validate_args(False)
        d = D.Normal(0.0, -1.0)
        assert np.isnan(d.log_prob(T(0.0)).item())
        with pytest.raises(ValueError):
            D.Normal(0.0, -1.0, validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(3)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)


# ----------------------------------------------------------------------- shapes, expand

def test_expand_and_shapes():
    d = D.Normal(T([0.0, 1.0]), T([1.0, 2.0]))
    e = d.expand((3, 2))
    assert tuple(e.batch_shape) == (3, 2) and tuple(e.sample((4,)).shape) == (4, 3, 2)
    np.testing.assert_allclose(N(e.log_prob(T(0.5))), np.tile(N(d.log_prob(T(0.5))), (3, 1)))
    m = D.MultivariateNormal(T([0.0, 1.0]), scale_tril=T(np.eye(2))).expand((5,))
    assert tuple(m.batch_shape) == (5,) and tuple(m.event_shape) == (2,)
    assert tuple(m.rsample((3,)).shape) == (3, 5, 2)
    c = D.Categorical(T([0.2, 0.8])).expand((4,))
    assert tuple(c.sample().shape) == (4,)
    i = D.Independent(D.Normal(T(np.zeros((3, 2))), 1.0), 1)
    assert tuple(i.batch_shape) == (3,) and tuple(i.event_shape) == (2,)
    assert tuple(i.expand((4, 3)).log_prob(T(np.zeros(2))).shape) == (4, 3)
    for d in (D.Gamma(T([1.0]), 1.0), D.Beta(T([1.0]), 1.0), D.LogNormal(T([0.0]), 1.0),
              D.Gumbel(T([0.0]), 1.0), D.Binomial(3, T([0.5])), D.Chi2(T([2.0])),
              D.RelaxedBernoulli(T(0.5), T([0.3])), D.HalfNormal(T([1.0]))):
        e = d.expand((2, 1))
        assert type(e) is type(d) and tuple(e.batch_shape) == (2, 1)
        assert tuple(e.sample().shape) == (2, 1)


def test_enumerate_support_mode_and_perplexity():
    b = D.Bernoulli(T([0.3, 0.6]))
    assert N(b.enumerate_support()).tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert N(b.mode).tolist() == [0.0, 1.0]
    assert np.isnan(D.Bernoulli(T([0.5])).mode.item())
    assert N(D.Binomial(4, T([0.5])).enumerate_support(False)).ravel().tolist() == [0, 1, 2,
                                                                                      3, 4]
    oh = D.OneHotCategorical(T([0.2, 0.8]))
    assert N(oh.enumerate_support()).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert N(oh.mode).tolist() == [0.0, 1.0]
    np.testing.assert_allclose(D.Categorical(T([0.5, 0.5])).perplexity().item(), 2.0)
    np.testing.assert_allclose(N(D.Dirichlet(T([3.0, 2.0, 1.0])).mode), [2 / 3, 1 / 3, 0.0])
    np.testing.assert_allclose(N(D.Gamma(T([0.5, 3.0]), 2.0).mode), [0.0, 1.0])


# ----------------------------------------------------------------------------- transforms

TRANSFORMS = [
    (transforms.ExpTransform(), [-1.0, 0.5, 2.0]),
    (transforms.AffineTransform(0.5, -2.0), [-1.0, 0.5, 2.0]),
    (transforms.SigmoidTransform(), [-1.0, 0.5, 2.0]),
    (transforms.TanhTransform(), [-1.0, 0.5, 2.0]),
    (transforms.PowerTransform(3.0), [0.3, 0.5, 2.0]),
    (transforms.ComposeTransform([transforms.AffineTransform(1.0, 2.0),
                                  transforms.ExpTransform()]), [-1.0, 0.5, 2.0]),
]


@pytest.mark.parametrize("i", range(len(TRANSFORMS)))
def test_elementwise_transforms_invert_and_jacobian(i):
    t, xs = TRANSFORMS[i]
    x = T(xs, grad=True)
    y = t(x)
    np.testing.assert_allclose(N(t.inv(y)), xs, rtol=1e-10)
    np.testing.assert_allclose(N(t.inv(T(N(y)))), xs, rtol=1e-10)
    # the Jacobian is diagonal: compare with autograd's derivative
    (dy,) = ag.grad(y.sum(), [x])
    np.testing.assert_allclose(N(t.log_abs_det_jacobian(x, y)), np.log(np.abs(N(dy))),
                               rtol=1e-10)
    np.testing.assert_allclose(N(t.inv.log_abs_det_jacobian(y, x)),
                               -np.log(np.abs(N(dy))), rtol=1e-10)
    assert t.domain.check(x).all() and t.codomain.check(y).all()


def test_stick_breaking_and_softmax_transforms():
    t = transforms.StickBreakingTransform()
    x = T([0.3, -1.0, 2.0], grad=True)
    y = t(x)
    assert tuple(y.shape) == (4,) and abs(N(y).sum() - 1) < 1e-12
    np.testing.assert_allclose(N(t.inv(T(N(y)))), N(x), rtol=1e-10)
    # the Jacobian of x -> y[:-1] is square: compare log|det| with autograd's Jacobian
    jac = np.stack([N(ag.grad(t(x)[k], [x])[0]) for k in range(3)])
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).item(),
                               np.log(abs(np.linalg.det(jac))), rtol=1e-10)
    assert t.forward_shape((2, 3)) == (2, 4) and t.inverse_shape((2, 4)) == (2, 3)
    s = transforms.SoftmaxTransform()
    np.testing.assert_allclose(N(s(T([0.0, math.log(3.0)]))), [0.25, 0.75])
    assert repr(transforms.ExpTransform().inv) == "_InverseTransform(ExpTransform())"
    assert transforms.ExpTransform() == transforms.ExpTransform()
    assert transforms.AffineTransform(0.0, 2.0) != transforms.AffineTransform(0.0, 3.0)


def test_abs_transform_and_transform_cache():
    a = transforms.AbsTransform()
    np.testing.assert_allclose(N(a(T([-2.0, 3.0]))), [2.0, 3.0])
    assert not a.bijective
    t = transforms.TanhTransform(cache_size=1)
    x = T([30.0])
    y = t(x)
    assert t.inv(y) is x  # tanh(30) rounds to 1: only the cache can invert it


def test_transformed_distribution_matches_lognormal():
    base = D.Normal(T([0.2, -0.3]), T([0.5, 1.5]))
    td = D.TransformedDistribution(base, [transforms.ExpTransform()])
    ln = D.LogNormal(T([0.2, -0.3]), T([0.5, 1.5]))
    x = T([0.5, 2.0])
    np.testing.assert_allclose(N(td.log_prob(x)), N(ln.log_prob(x)), rtol=1e-12)
    np.testing.assert_allclose(N(td.cdf(x)), N(ln.cdf(x)), rtol=1e-12)
    np.testing.assert_allclose(N(td.icdf(T([0.3, 0.9]))), N(ln.icdf(T([0.3, 0.9]))),
                               rtol=1e-12)
    assert td.has_rsample and repr(td.support) == "GreaterThan(lower_bound=0.0)"
    # a decreasing transform flips the cdf
    neg = D.TransformedDistribution(base, [transforms.AffineTransform(0.0, -1.0)])
    np.testing.assert_allclose(N(neg.cdf(T([0.1, 0.4]))),
                               1 - N(base.cdf(T([-0.1, -0.4]))), rtol=1e-12)


def test_constraints():
    assert N(constraints.positive.check(T([-1.0, 0.0, 1.0]))).tolist() == [False, False, True]
    assert N(constraints.simplex.check(T([[0.2, 0.8], [0.5, 0.6]]))).tolist() == [True, False]
    assert N(constraints.integer_interval(0, 3).check(T([0.0, 1.5, 3.0, 4.0]))).tolist() == [
        True, False, True, False]
    assert constraints.lower_cholesky.check(T([[1.0, 0.0], [2.0, 3.0]])).item()
    assert not constraints.lower_cholesky.check(T([[1.0, 1.0], [2.0, 3.0]])).item()
    assert constraints.positive_definite.check(T([[2.0, 1.0], [1.0, 2.0]])).item()
    assert not constraints.positive_definite.check(T([[1.0, 2.0], [2.0, 1.0]])).item()
    ind = constraints.independent(constraints.real, 1)
    assert ind.event_dim == 1 and repr(ind) == "IndependentConstraint(Real(), 1)"
    assert repr(constraints.interval(0.0, 1.0)) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert constraints.is_dependent(constraints.dependent)
    assert constraints.nonnegative_integer.is_discrete
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(T([1.0]))


def test_gradients_flow_into_parameters_in_float32():
    loc = et.zeros(3, requires_grad=True)
    d = D.Normal(loc, et.ones(3))
    loss = -d.log_prob(d.rsample((4,)).detach()).mean()
    loss.backward()
    assert loc.grad is not None and loc.grad.dtype == et.float32
