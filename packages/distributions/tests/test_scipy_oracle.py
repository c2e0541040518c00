"""log_prob, entropy, mean, variance, cdf and icdf against scipy.stats (float64)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import ember.distributions as D
import ember.tensor as et
from ember.tensor.extension import unwrap


def T(x):
    return et.tensor(np.asarray(x, dtype=np.float64).tolist(), dtype=et.float64)


def N(t):
    return np.asarray(unwrap(t.detach()))


P1 = np.array([0.5, 2.0, 7.5])
P2 = np.array([1.5, 0.7, 3.0])
X_REAL = np.array([[-1.0, 0.3, 2.5], [0.0, 4.0, -3.0]])
X_POS = np.array([[0.2, 1.3, 2.5], [3.0, 0.05, 9.0]])
X_UNIT = np.array([[0.2, 0.5, 0.9], [0.01, 0.7, 0.33]])
X_INT = np.array([[0.0, 1.0, 5.0], [2.0, 7.0, 3.0]])

# name -> (ember distribution, scipy frozen distribution, values, methods)
CONTINUOUS = {
    "Normal": (lambda: D.Normal(T(P1 - 1), T(P2)), stats.norm(P1 - 1, P2), X_REAL),
    "Laplace": (lambda: D.Laplace(T(P1 - 1), T(P2)), stats.laplace(P1 - 1, P2), X_REAL),
    "Cauchy": (lambda: D.Cauchy(T(P1 - 1), T(P2)), stats.cauchy(P1 - 1, P2), X_REAL),
    "Gumbel": (lambda: D.Gumbel(T(P1 - 1), T(P2)), stats.gumbel_r(P1 - 1, P2), X_REAL),
    "Uniform": (lambda: D.Uniform(T(-P1), T(P2 + 3)), stats.uniform(-P1, P2 + 3 + P1),
                np.array([[-0.4, 0.3, 2.5], [0.0, 3.0, -3.0]])),
    "Exponential": (lambda: D.Exponential(T(P2)), stats.expon(scale=1 / P2), X_POS),
    "Gamma": (lambda: D.Gamma(T(P1), T(P2)), stats.gamma(P1, scale=1 / P2), X_POS),
    "Chi2": (lambda: D.Chi2(T(P1 + 1)), stats.chi2(P1 + 1), X_POS),
    "Beta": (lambda: D.Beta(T(P1), T(P2)), stats.beta(P1, P2), X_UNIT),
    "StudentT": (lambda: D.StudentT(T(P1 + 2.5), T(P1 - 1), T(P2)),
                 stats.t(P1 + 2.5, P1 - 1, P2), X_REAL),
    "LogNormal": (lambda: D.LogNormal(T(P1 - 1), T(P2)),
                  stats.lognorm(P2, scale=np.exp(P1 - 1)), X_POS),
    "HalfNormal": (lambda: D.HalfNormal(T(P2)), stats.halfnorm(scale=P2), X_POS),
}
DISCRETE = {
    "Poisson": (lambda: D.Poisson(T(P1)), stats.poisson(P1), X_INT),
    "Binomial": (lambda: D.Binomial(T([7.0, 7.0, 7.0]), T([0.2, 0.5, 0.9])),
                 stats.binom(7, [0.2, 0.5, 0.9]), X_INT),
    "Geometric": (lambda: D.Geometric(T([0.2, 0.5, 0.9])),
                  stats.geom([0.2, 0.5, 0.9], loc=-1), X_INT),
    "Bernoulli": (lambda: D.Bernoulli(T([0.2, 0.5, 0.9])), stats.bernoulli([0.2, 0.5, 0.9]),
                  np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_against_scipy(name):
    make, ref, x = CONTINUOUS[name]
    d = make()
    np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpdf(x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-9, atol=1e-12)
    if name not in ("Cauchy",):
        np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-9)
        np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-9)
        np.testing.assert_allclose(N(d.stddev), ref.std(), rtol=1e-9)
    if name not in ("Beta", "Chi2", "StudentT"):
        np.testing.assert_allclose(N(d.cdf(T(x))), ref.cdf(x), rtol=1e-9, atol=1e-12)
    if name not in ("Beta", "Chi2", "StudentT", "Gamma"):
        u = np.array([[0.05, 0.5, 0.9], [0.3, 0.75, 0.99]])
        np.testing.assert_allclose(N(d.icdf(T(u))), ref.ppf(u), rtol=1e-9, atol=1e-12)


def test_studentt_moments_where_undefined():
    d = D.StudentT(T([0.5, 1.5, 3.0]))
    mean, var = N(d.mean), N(d.variance)
    assert np.isnan(mean[0]) and mean[1] == 0 and mean[2] == 0
    assert np.isnan(var[0]) and np.isinf(var[1]) and var[2] == pytest.approx(3.0)


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_against_scipy(name):
    make, ref, x = DISCRETE[name]
    d = make()
    np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpmf(x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-9)
    np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-9)
    if name != "Poisson":  # PyTorch's Poisson has no entropy
        np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-9)


def test_categorical_and_one_hot_against_scipy():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    for d in (D.Categorical(T(p * 4)), D.Categorical(logits=T(np.log(p) + 2))):
        lp = N(d.log_prob(et.tensor([[0, 2], [1, 1]])))
        np.testing.assert_allclose(lp, np.log([[0.2, 0.3], [0.3, 0.1]]), rtol=1e-12)
        np.testing.assert_allclose(N(d.entropy()), [stats.entropy(r) for r in p], rtol=1e-12)
        assert N(d.mode).tolist() == [2, 0]
    oh = D.OneHotCategorical(T(p))
    v = et.tensor(np.eye(3)[[[2, 0]]][0].tolist(), dtype=et.float64)
    np.testing.assert_allclose(N(oh.log_prob(v)), np.log([0.5, 0.6]), rtol=1e-12)
    np.testing.assert_allclose(N(oh.variance), p * (1 - p))


def test_dirichlet_against_scipy():
    a = np.array([0.5, 2.0, 3.5])
    x = np.array([[0.2, 0.3, 0.5], [0.05, 0.9, 0.05]])
    d = D.Dirichlet(T(a))
    ref = stats.dirichlet(a)
    np.testing.assert_allclose(N(d.log_prob(T(x))), [ref.logpdf(r) for r in x], rtol=1e-10)
    np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-12)


def test_multivariate_normals_against_scipy():
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])
    loc = np.array([0.1, -0.4, 1.0])
    x = np.array([[0.0, 1.0, 2.0], [0.5, 0.5, 0.5], [-1.0, 0.0, 3.0]])
    ref = stats.multivariate_normal(loc, cov)
    L = np.linalg.cholesky(cov)
    for d in (D.MultivariateNormal(T(loc), covariance_matrix=T(cov)),
              D.MultivariateNormal(T(loc), scale_tril=T(L)),
              D.MultivariateNormal(T(loc), precision_matrix=T(np.linalg.inv(cov)))):
        np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpdf(x), rtol=1e-10)
        np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-10)
        np.testing.assert_allclose(N(d.covariance_matrix), cov, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(d.precision_matrix), np.linalg.inv(cov), rtol=1e-9)
        np.testing.assert_allclose(N(d.scale_tril), L, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(d.variance), np.diag(cov), rtol=1e-10)
    W = np.array([[1.0, 0.2], [0.5, -0.3], [0.0, 0.7]])
    diag = np.array([0.5, 1.0, 2.0])
    full = W @ W.T + np.diag(diag)
    d = D.LowRankMultivariateNormal(T(loc), T(W), T(diag))
    ref = stats.multivariate_normal(loc, full)
    np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpdf(x), rtol=1e-10)
    np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(N(d.covariance_matrix), full, rtol=1e-12)
    np.testing.assert_allclose(N(d.precision_matrix), np.linalg.inv(full), rtol=1e-9)
    np.testing.assert_allclose(N(d.scale_tril), np.linalg.cholesky(full), rtol=1e-10)
    np.testing.assert_allclose(N(d.variance), np.diag(full), rtol=1e-12)


def test_relaxed_densities_integrate_to_one():
    # RelaxedBernoulli on (0, 1): the density integrates to 1
    d = D.RelaxedBernoulli(T(0.7), probs=T([0.3]))
    x = np.linspace(1e-6, 1 - 1e-6, 200001)[:, None]
    dens = np.exp(N(d.log_prob(T(x))))[:, 0]
    assert np.trapezoid(dens, x[:, 0]) == pytest.approx(1.0, abs=2e-3)
