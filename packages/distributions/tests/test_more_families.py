"""The second batch of families, transforms and the constraint registries: values against
scipy.stats / closed forms / quadrature (float64), sampling moments, gradients by finite
differences (gradcheck), validation errors, expand, and KL against Monte Carlo."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

import ember.autograd as ag
import ember.distributions as D
import ember.tensor as et
from ember.distributions import biject_to, constraints, transform_to, transforms
from ember.tensor.extension import unwrap


def T(x, grad=False):
    return et.tensor(np.asarray(x, dtype=np.float64).tolist(), dtype=et.float64,
                     requires_grad=grad)


def N(t):
    return np.asarray(unwrap(t.detach()))


X_POS = np.array([[0.2, 1.3, 2.5], [3.0, 0.05, 9.0]])
X_UNIT = np.array([[0.2, 0.5, 0.9], [0.01, 0.7, 0.33]])
U = np.array([[0.05, 0.5, 0.9], [0.3, 0.75, 0.99]])

# name -> (ember distribution, scipy frozen distribution, values, what scipy checks)
SCIPY = {
    "FisherSnedecor": (lambda: D.FisherSnedecor(T([1.5, 3.0, 6.0]), T([4.5, 5.0, 9.0])),
                       stats.f([1.5, 3.0, 6.0], [4.5, 5.0, 9.0]), X_POS, "lmv"),
    "GeneralizedPareto": (
        lambda: D.GeneralizedPareto(T([0.0, 0.1, -1.0]), T([1.0, 2.0, 0.5]), T([0.3, 0.0, -0.2])),
        stats.genpareto([0.3, 0.0, -0.2], [0.0, 0.1, -1.0], [1.0, 2.0, 0.5]),
        np.array([[0.2, 1.3, -0.5], [3.0, 0.15, 0.9]]), "lmvceiq"),
    "HalfCauchy": (lambda: D.HalfCauchy(T([1.0, 2.0, 0.5])),
                   stats.halfcauchy(scale=[1.0, 2.0, 0.5]), X_POS, "lceiq"),
    "InverseGamma": (lambda: D.InverseGamma(T([2.5, 3.5, 7.0]), T([1.0, 0.5, 3.0])),
                     stats.invgamma([2.5, 3.5, 7.0], scale=[1.0, 0.5, 3.0]), X_POS, "lmvce"),
    "Pareto": (lambda: D.Pareto(T([1.0, 2.0, 0.5]), T([2.5, 3.5, 3.0])),
               stats.pareto([2.5, 3.5, 3.0], scale=[1.0, 2.0, 0.5]),
               np.array([[1.2, 2.3, 2.5], [3.0, 2.05, 9.0]]), "lmvceiq"),
    "Weibull": (lambda: D.Weibull(T([1.0, 2.0, 0.5]), T([0.5, 2.5, 3.0])),
                stats.weibull_min([0.5, 2.5, 3.0], scale=[1.0, 2.0, 0.5]), X_POS, "lmvceiq"),
    "VonMises": (lambda: D.VonMises(T([0.0, 1.0, -1.0]), T([0.5, 2.5, 7.0])),
                 stats.vonmises([0.5, 2.5, 7.0], [0.0, 1.0, -1.0]),
                 np.array([[0.1, 2.0, 3.0], [1.0, 0.3, -0.5]]), "l"),
}


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_against_scipy(name):
    make, ref, x, what = SCIPY[name]
    d = make()
    close = dict(rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpdf(x), **close)
    if "m" in what:
        np.testing.assert_allclose(N(d.mean), ref.mean(), **close)
    if "v" in what:
        np.testing.assert_allclose(N(d.variance), ref.var(), **close)
    if "c" in what:
        np.testing.assert_allclose(N(d.cdf(T(x))), ref.cdf(x), **close)
    if "e" in what:
        np.testing.assert_allclose(N(d.entropy()), ref.entropy(), **close)
    if "i" in what:
        np.testing.assert_allclose(N(d.icdf(T(U))), ref.ppf(U), **close)


def test_von_mises_variance_and_sampling():
    k = np.array([0.5, 2.5, 7.0])
    d = D.VonMises(T([0.0, 1.0, -1.0]), T(k))
    np.testing.assert_allclose(N(d.variance), 1 - special.i1(k) / special.i0(k), rtol=1e-12)
    et.manual_seed(0)
    x = N(d.sample((20000,)))
    assert (x >= -math.pi).all() and (x < math.pi).all()
    # the circular mean resultant length is I1/I0, the mean direction loc
    z = np.exp(1j * x).mean(0)
    np.testing.assert_allclose(np.abs(z), special.i1(k) / special.i0(k), atol=0.015)
    np.testing.assert_allclose(np.angle(z), [0.0, 1.0, -1.0], atol=0.06)


def test_generalized_pareto_support_and_log_functions():
    d = D.GeneralizedPareto(T([0.0, 1.0]), T([1.0, 2.0]), T([-0.5, 0.2]))
    sup = d.support
    np.testing.assert_allclose(N(sup.upper_bound), [2.0, math.inf])
    ref = stats.genpareto([-0.5, 0.2], [0.0, 1.0], [1.0, 2.0])
    x = np.array([0.5, 3.0])
    np.testing.assert_allclose(N(d.log_survival_function(T(x))), ref.logsf(x), rtol=1e-12)
    np.testing.assert_allclose(N(d.log_cdf(T(x))), ref.logcdf(x), rtol=1e-12)
    assert N(d.mode).tolist() == [0.0, 1.0]


def _kumaraswamy_pdf(x, a, b):
    return a * b * x ** (a - 1) * (1 - x ** a) ** (b - 1)


def test_kumaraswamy_against_its_closed_form_and_quadrature():
    a, b = np.array([0.5, 2.5, 7.0]), np.array([1.5, 1.5, 3.0])
    d = D.Kumaraswamy(T(a), T(b))
    np.testing.assert_allclose(N(d.log_prob(T(X_UNIT))), np.log(_kumaraswamy_pdf(X_UNIT, a, b)),
                               rtol=1e-10)
    np.testing.assert_allclose(N(d.cdf(T(X_UNIT))), 1 - (1 - X_UNIT ** a) ** b, rtol=1e-10)
    for i in range(3):
        def pdf(x, i=i):
            return _kumaraswamy_pdf(x, a[i], b[i])
        m1 = integrate.quad(lambda x: x * pdf(x), 0, 1)[0]
        m2 = integrate.quad(lambda x: x * x * pdf(x), 0, 1)[0]
        h = integrate.quad(lambda x: -pdf(x) * np.log(pdf(x)), 0, 1, limit=200)[0]
        assert N(d.mean)[i] == pytest.approx(m1, rel=1e-7)
        assert N(d.variance)[i] == pytest.approx(m2 - m1 ** 2, rel=1e-6)
        assert N(d.entropy())[i] == pytest.approx(h, rel=1e-5, abs=1e-7)
    mode = N(D.Kumaraswamy(T([2.0, 0.5]), T([3.0, 2.0])).mode)
    assert mode[0] == pytest.approx(((2.0 - 1) / (2.0 * 3.0 - 1)) ** 0.5) and np.isnan(mode[1])


def test_continuous_bernoulli_against_quadrature():
    for lam in (0.2, 0.4995, 0.5, 0.9):
        d = D.ContinuousBernoulli(T(lam))

        def pdf(x, d=d):
            return math.exp(d.log_prob(T(x)).item())
        assert integrate.quad(pdf, 0, 1)[0] == pytest.approx(1.0, abs=1e-7)
        m1 = integrate.quad(lambda x: x * pdf(x), 0, 1)[0]
        m2 = integrate.quad(lambda x: x * x * pdf(x), 0, 1)[0]
        h = integrate.quad(lambda x: -pdf(x) * math.log(pdf(x)), 0, 1)[0]
        assert d.mean.item() == pytest.approx(m1, abs=1e-7)
        assert d.variance.item() == pytest.approx(m2 - m1 ** 2, abs=1e-7)
        assert d.entropy().item() == pytest.approx(h, abs=1e-7)
        # inside (0.499, 0.501] the cdf is taken as the identity (PyTorch's approximation)
        tol = 1e-7 if abs(lam - 0.5) > 0.001 else 2e-3
        for x in (0.1, 0.6, 0.95):
            c = integrate.quad(pdf, 0, x)[0]
            assert d.cdf(T(x)).item() == pytest.approx(c, abs=tol)
            assert d.icdf(T(c)).item() == pytest.approx(x, abs=tol)
    d = D.ContinuousBernoulli(T([0.3]), validate_args=False)
    assert N(d.cdf(T([-1.0, 0.0, 1.0, 2.0]))).tolist() == [0.0, 0.0, 1.0, 1.0]


def test_negative_binomial_against_scipy():
    n, p = np.array([2.0, 3.5, 10.0]), np.array([0.2, 0.5, 0.9])
    x = np.array([[0.0, 3.0, 12.0], [1.0, 0.0, 7.0]])
    # ember / torch count successes (probability p) before n failures
    ref = stats.nbinom(n, 1 - p)
    for d in (D.NegativeBinomial(T(n), T(p)),
              D.NegativeBinomial(T(n), logits=T(np.log(p) - np.log1p(-p)))):
        np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpmf(x), rtol=1e-9)
        np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-9)
        np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-9)
    assert D.NegativeBinomial(T(0.0), T(0.5)).log_prob(T(0.0)).item() == 0.0


def test_multinomial_against_scipy():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    x = np.array([[1.0, 2.0, 2.0], [5.0, 0.0, 0.0]])
    for d in (D.Multinomial(5, T(p)), D.Multinomial(5, logits=T(np.log(p) + 1.0))):
        ref = [stats.multinomial(5, r) for r in p]
        np.testing.assert_allclose(N(d.log_prob(T(x))), [r.logpmf(v) for r, v in zip(ref, x)],
                                   rtol=1e-10)
        np.testing.assert_allclose(N(d.entropy()), [r.entropy() for r in ref], rtol=1e-10)
        np.testing.assert_allclose(N(d.mean), 5 * p, rtol=1e-12)
        np.testing.assert_allclose(N(d.variance), 5 * p * (1 - p), rtol=1e-12)
    # a zero probability with a zero count scores log 1
    z = D.Multinomial(2, logits=T([-math.inf, 0.0]))
    assert z.log_prob(T([0.0, 2.0])).item() == 0.0


def test_wishart_against_scipy():
    cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])
    x = np.array([[[3.0, 0.5, 0.2], [0.5, 2.0, 0.1], [0.2, 0.1, 4.0]],
                  [[1.0, -0.2, 0.0], [-0.2, 0.8, 0.3], [0.0, 0.3, 2.0]]])
    ref = stats.wishart(5.5, cov)
    for d in (D.Wishart(T(5.5), covariance_matrix=T(cov)),
              D.Wishart(T(5.5), scale_tril=T(np.linalg.cholesky(cov))),
              D.Wishart(5.5, precision_matrix=T(np.linalg.inv(cov)))):
        np.testing.assert_allclose(N(d.log_prob(T(x))), ref.logpdf(x.transpose(1, 2, 0)),
                                   rtol=1e-10)
        np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-10)
        np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-10)
        np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-10)
        np.testing.assert_allclose(N(d.mode), (5.5 - 4) * cov, rtol=1e-10)
    assert np.isnan(N(D.Wishart(T(3.5), covariance_matrix=T(cov)).mode)).all()


def test_lkj_cholesky_density_integrates_and_samples():
    # dim 2: L = [[1, 0], [r, sqrt(1 - r^2)]], r with density (1-r^2)^(eta-1) / normalizer
    for eta in (0.7, 1.0, 3.0):
        d = D.LKJCholesky(2, T(eta))

        def dens(r, d=d):
            L = T([[1.0, 0.0], [r, math.sqrt(1 - r * r)]])
            return math.exp(d.log_prob(L).item())
        assert integrate.quad(dens, -1, 1)[0] == pytest.approx(1.0, abs=1e-6)
    et.manual_seed(0)
    d = D.LKJCholesky(3, T([0.5, 2.0]))
    L = d.sample((4000,))
    assert tuple(L.shape) == (4000, 2, 3, 3)
    assert bool(constraints.corr_cholesky.check(L).all())
    C = N(L @ L.mT)
    # the off-diagonal correlations of an LKJ(eta) matrix have variance 1 / (2 eta + d - 1)
    np.testing.assert_allclose(C[:, :, 0, 1].var(0), [1 / 3.0, 1 / 6.0], rtol=0.08)
    np.testing.assert_allclose(C[:, :, 0, 1].mean(0), [0.0, 0.0], atol=0.03)


def test_mixture_same_family_against_numpy():
    w = np.array([0.2, 0.3, 0.5])
    loc, scale = np.array([-1.0, 0.5, 2.0]), np.array([0.5, 1.0, 1.5])
    d = D.MixtureSameFamily(D.Categorical(T(w)), D.Normal(T(loc), T(scale)))
    x = np.array([-1.5, 0.0, 0.7, 3.0])
    dens = (w * stats.norm(loc, scale).pdf(x[:, None])).sum(-1)
    np.testing.assert_allclose(N(d.log_prob(T(x))), np.log(dens), rtol=1e-12)
    np.testing.assert_allclose(N(d.cdf(T(x))), (w * stats.norm(loc, scale).cdf(x[:, None])).sum(-1),
                               rtol=1e-12)
    mean = (w * loc).sum()
    assert d.mean.item() == pytest.approx(mean)
    assert d.variance.item() == pytest.approx((w * (scale ** 2 + loc ** 2)).sum() - mean ** 2)
    et.manual_seed(0)
    s = N(d.sample((40000,)))
    assert s.mean() == pytest.approx(mean, abs=0.03)
    mv = D.MixtureSameFamily(D.Categorical(T([[0.3, 0.7]])),
                             D.Independent(D.Normal(T(np.zeros((1, 2, 3))), 1.0), 1))
    assert tuple(mv.sample((5,)).shape) == (5, 1, 3)
    assert tuple(mv.log_prob(T(np.zeros((4, 1, 3)))).shape) == (4, 1)
    assert repr(mv.support) == "MixtureSameFamilyConstraint(IndependentConstraint(Real(), 1))"


def test_logistic_normal_density_matches_change_of_variables():
    loc, scale = np.array([0.3, -1.0]), np.array([0.5, 1.5])
    d = D.LogisticNormal(T(loc), T(scale))
    y = np.array([0.2, 0.3, 0.5])
    # stick breaking: z_i = y_i / (1 - y_0 - ... - y_{i-1}) = sigmoid(x_i - log(K - i)),
    # K = 2 coordinates; the Jacobian dx/dy is triangular
    rest = 1 - np.concatenate([[0.0], np.cumsum(y[:-2])])
    z = y[:-1] / rest
    x = np.log(z / (1 - z)) + np.log([2.0, 1.0])
    ref = (stats.norm(loc, scale).logpdf(x).sum()
           + (-np.log(z) - np.log1p(-z) - np.log(rest)).sum())
    assert d.log_prob(T(y)).item() == pytest.approx(ref, rel=1e-10)
    assert tuple(D.LogisticNormal(0.0, 1.0).sample((3,)).shape) == (3, 2)


# ----------------------------------------------------------------------------- sampling

MOMENTS = {
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(T([0.2, 0.8])),
    "FisherSnedecor": lambda: D.FisherSnedecor(T([5.0, 8.0]), T([12.0, 15.0])),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(T([0.0, 1.0]), T([1.0, 2.0]),
                                                     T([-0.2, 0.1])),
    "InverseGamma": lambda: D.InverseGamma(T([5.0, 8.0]), T([1.0, 2.0])),
    "Kumaraswamy": lambda: D.Kumaraswamy(T([0.5, 3.0]), T([2.0, 1.5])),
    "Pareto": lambda: D.Pareto(T([1.0, 2.0]), T([5.0, 6.0])),
    "Weibull": lambda: D.Weibull(T([1.0, 2.0]), T([0.8, 3.0])),
    "NegativeBinomial": lambda: D.NegativeBinomial(T([2.0, 7.5]), T([0.3, 0.6])),
    "Multinomial": lambda: D.Multinomial(6, T([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
    "OneHotCategoricalStraightThrough": lambda: D.OneHotCategoricalStraightThrough(
        T([0.2, 0.3, 0.5])),
    "Wishart": lambda: D.Wishart(T(6.0), covariance_matrix=T([[2.0, 0.5], [0.5, 1.0]])),
}


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_sample_moments(name):
    et.manual_seed(1234)
    d = MOMENTS[name]()
    n = 40000
    x = d.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape)
    xs, mean, var = N(x), N(d.mean), N(d.variance)
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * np.sqrt(var / n) + 1e-3), (xs.mean(0), mean)
    np.testing.assert_allclose(xs.var(0), var, rtol=0.1, atol=1e-3)
    assert bool(d.support.check(x).all())


def test_sample_carries_no_gradient_and_rsample_flags():
    p = T([0.3, 0.6], grad=True)
    for d in (D.ContinuousBernoulli(p), D.Kumaraswamy(p, p), D.Weibull(p, p)):
        assert d.has_rsample and not d.sample().requires_grad and d.rsample().requires_grad
    for d in (D.NegativeBinomial(T([2.0]), p), D.VonMises(p, p), D.Multinomial(3, p),
              D.MixtureSameFamily(D.Categorical(p), D.Normal(p, 1.0)), D.LKJCholesky(2, p)):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError):
            d.rsample()


# ---------------------------------------------------------------------------- gradients

GRADS = {
    "ContinuousBernoulli": (lambda a: D.ContinuousBernoulli(a), [[0.2, 0.7]], [0.3, 0.9], "lec"),
    "ContinuousBernoulliLogits": (lambda a: D.ContinuousBernoulli(logits=a), [[-1.0, 2.0]],
                                  [0.3, 0.9], "lec"),
    "FisherSnedecor": (lambda a, b: D.FisherSnedecor(a, b), [[1.5, 3.0], [4.5, 5.0]],
                       [0.3, 2.0], "l"),
    "GeneralizedPareto": (lambda a, b, c: D.GeneralizedPareto(a, b, c),
                          [[0.0, 0.5], [1.0, 2.0], [0.3, -0.2]], [0.4, 1.5], "lec"),
    "HalfCauchy": (lambda a: D.HalfCauchy(a), [[0.5, 2.0]], [0.3, 1.5], "lec"),
    "InverseGamma": (lambda a, b: D.InverseGamma(a, b), [[0.7, 2.0], [0.5, 2.0]], [0.3, 1.5],
                     "le"),
    "Kumaraswamy": (lambda a, b: D.Kumaraswamy(a, b), [[0.7, 2.0], [0.5, 2.0]], [0.3, 0.6],
                    "lec"),
    "LogisticNormal": (lambda a, b: D.LogisticNormal(a, b), [[0.3, -1.0], [0.5, 1.5]],
                       [0.2, 0.3, 0.5], "l"),
    "Pareto": (lambda a, b: D.Pareto(a, b), [[0.5, 1.0], [2.5, 3.0]], [1.3, 1.5], "lec"),
    "Weibull": (lambda a, b: D.Weibull(a, b), [[0.5, 1.0], [2.5, 3.0]], [1.3, 0.5], "lec"),
    "VonMises": (lambda a, b: D.VonMises(a, b), [[0.5, -1.0], [0.7, 4.0]], [1.3, 0.5], "l"),
    "NegativeBinomial": (lambda a, b: D.NegativeBinomial(a, logits=b),
                         [[2.0, 3.5], [-0.5, 1.0]], [3.0, 0.0], "l"),
    "Multinomial": (lambda a: D.Multinomial(4, logits=a), [[0.2, -1.0, 0.5]],
                    [1.0, 1.0, 2.0], "le"),
    "LKJCholesky": (lambda a: D.LKJCholesky(3, a), [[0.7, 2.5]], None, "l"),
    "Wishart": (lambda a, b: D.Wishart(a, scale_tril=et.diag_embed(b.exp())),
                [[3.5, 5.0], [0.2, -0.3]], [[2.0, 0.3], [0.3, 1.0]], "le"),
    "MixtureSameFamily": (lambda a, b: D.MixtureSameFamily(D.Categorical(logits=a),
                                                           D.Normal(b, 1.0)),
                          [[0.2, -1.0], [0.5, -0.3]], [0.3], "lc"),
}
_CORR_CHOL = np.linalg.cholesky(np.array([[1.0, 0.3, -0.2], [0.3, 1.0, 0.5], [-0.2, 0.5, 1.0]]))


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradcheck(name):
    build, params, value, what = GRADS[name]
    inputs = tuple(T(p, grad=True) for p in params)
    v = T(_CORR_CHOL if value is None else value)
    assert ag.gradcheck(lambda *ps: build(*ps).log_prob(v), inputs)
    if "e" in what:
        assert ag.gradcheck(lambda *ps: build(*ps).entropy(), inputs)
    if "c" in what:
        assert ag.gradcheck(lambda *ps: build(*ps).cdf(v), inputs)


@pytest.mark.parametrize("name", ["ContinuousBernoulli", "GeneralizedPareto", "HalfCauchy",
                                  "Kumaraswamy", "LogisticNormal", "Pareto", "Weibull"])
def test_gradcheck_rsample(name):
    build, params, _, _ = GRADS[name]
    inputs = tuple(T(p, grad=True) for p in params)

    def f(*ps):
        et.manual_seed(3)  # the same noise at every evaluation
        return build(*ps).rsample((3,))
    assert ag.gradcheck(f, inputs)


def test_gradcheck_wishart_rsample_in_the_scale():
    df = T(5.0)

    def f(b):
        et.manual_seed(3)
        return D.Wishart(df, scale_tril=et.diag_embed(b.exp()) + et.tensor(
            [[0.0, 0.0], [0.4, 0.0]], dtype=et.float64)).rsample((2,))
    assert ag.gradcheck(f, (T([0.2, -0.3], grad=True),))


def test_straight_through_gradient_is_the_probs_gradient():
    logits = T([0.2, -1.0, 0.5], grad=True)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    et.manual_seed(0)
    x = d.rsample()
    assert N(x).sum() == 1.0 and set(N(x).tolist()) <= {0.0, 1.0}
    w = T([1.0, 2.0, 3.0])
    (g,) = ag.grad((x * w).sum(), [logits])
    p = special.softmax([0.2, -1.0, 0.5])
    np.testing.assert_allclose(N(g), p * (np.array([1.0, 2.0, 3.0]) - (p * [1, 2, 3]).sum()),
                               rtol=1e-12)


# ----------------------------------------------------------------------- ExponentialFamily

def test_exponential_family_entropy_and_bregman_kl():
    p, q = D.Normal(T([0.3, -1.0]), T([0.5, 2.0])), D.Normal(T([1.0, 0.0]), T([1.5, 0.7]))
    np.testing.assert_allclose(N(D.ExponentialFamily.entropy(p)), N(p.entropy()), rtol=1e-12)
    from ember.distributions import kl as kl_module
    bregman = kl_module._KL_REGISTRY[D.ExponentialFamily, D.ExponentialFamily]
    np.testing.assert_allclose(N(bregman(p, q)), N(D.kl_divergence(p, q)), rtol=1e-10)
    g, h = D.Gamma(T([2.0]), T([1.5])), D.Gamma(T([0.5]), T([3.0]))
    np.testing.assert_allclose(N(bregman(g, h)), N(D.kl_divergence(g, h)), rtol=1e-10)
    assert isinstance(D.Wishart(T(4.0), covariance_matrix=T(np.eye(2))), D.ExponentialFamily)


# ---------------------------------------------------------------------- KL, Monte Carlo

@pytest.mark.parametrize("p,q", [
    (D.ContinuousBernoulli(T([0.3])), D.ContinuousBernoulli(T([0.8]))),
    (D.ContinuousBernoulli(T([0.3])), D.Normal(T([0.5]), T([0.4]))),
    (D.Beta(T([2.0]), T([3.0])), D.ContinuousBernoulli(T([0.7]))),
    (D.Pareto(T([1.0]), T([4.0])), D.Pareto(T([0.5]), T([2.0]))),
    (D.Pareto(T([1.0]), T([4.0])), D.Gamma(T([2.0]), T([1.0]))),
    (D.Pareto(T([1.0]), T([4.0])), D.Normal(T([1.0]), T([1.0]))),
    (D.Uniform(T([1.2]), T([2.0])), D.Pareto(T([1.0]), T([2.0]))),
    (D.Wishart(T(5.0), covariance_matrix=T([[1.0, 0.2], [0.2, 1.0]])),
     D.Wishart(T(4.0), covariance_matrix=T([[2.0, 0.0], [0.0, 0.5]]))),
])
def test_kl_matches_monte_carlo(p, q):
    et.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = p.sample((100000,))
    mc = N(p.log_prob(x) - q.log_prob(x)).mean(0)
    np.testing.assert_allclose(N(D.kl_divergence(p, q)), mc, rtol=0.03, atol=0.01)


def test_kl_infinite_where_supports_do_not_nest():
    assert math.isinf(D.kl_divergence(D.Normal(0.0, 1.0), D.Pareto(T(1.0), T(2.0))).item())
    assert math.isinf(D.kl_divergence(D.Pareto(T(0.5), T(2.0)), D.Pareto(T(1.0), T(2.0))).item())
    assert math.isinf(D.kl_divergence(D.Pareto(T(1.0), T(0.8)), D.Exponential(T(1.0))).item())
    assert math.isinf(D.kl_divergence(D.Uniform(T(0.0), T(1.0)),
                                      D.ContinuousBernoulli(T(0.3))).item())


# ----------------------------------------------------------------------------- transforms

def _jacobian(f, x):
    """Rows of d f(x) / d x for vectors x, by autograd."""
    y = f(x).reshape(-1)
    return np.stack([N(ag.grad(y[i], [x], retain_graph=True)[0]) for i in range(y.shape[0])])


def test_softplus_and_cdf_transforms():
    t = transforms.SoftplusTransform()
    x = T([-3.0, 0.5, 20.0], grad=True)
    y = t(x)
    np.testing.assert_allclose(N(y), np.logaddexp(0, [-3.0, 0.5, 20.0]), rtol=1e-12)
    np.testing.assert_allclose(N(t.inv(T(N(y)))), N(x), rtol=1e-9)
    (dy,) = ag.grad(y.sum(), [x])
    np.testing.assert_allclose(N(t.log_abs_det_jacobian(x, y)), np.log(N(dy)), rtol=1e-10,
                               atol=1e-15)
    assert t.codomain.check(y).all() and t == transforms.SoftplusTransform()
    c = transforms.CumulativeDistributionTransform(D.Normal(T(0.5), T(2.0)))
    z = c(T([0.0, 1.0]))
    np.testing.assert_allclose(N(z), stats.norm(0.5, 2.0).cdf([0.0, 1.0]), rtol=1e-12)
    np.testing.assert_allclose(N(c.inv(z)), [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(N(c.log_abs_det_jacobian(T([0.0]), z)),
                               stats.norm(0.5, 2.0).logpdf([0.0]), rtol=1e-12)
    assert c.domain is constraints.real and c.with_cache().distribution is c.distribution


def test_corr_cholesky_transform():
    t = transforms.CorrCholeskyTransform()
    x = T([0.3, -1.2, 0.7], grad=True)
    L = t(x)
    assert bool(constraints.corr_cholesky.check(L).all())
    np.testing.assert_allclose(N(t.inv(T(N(L)))), N(x), rtol=1e-9)
    # log|det| of x -> the strictly lower entries of L, a square Jacobian
    jac = _jacobian(lambda v: D.utils.tril_matrix_to_vec(t(v), diag=-1), x)
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, L).item(),
                               np.log(abs(np.linalg.det(jac))), rtol=1e-10)
    assert t.forward_shape((5, 3)) == (5, 3, 3) and t.inverse_shape((5, 3, 3)) == (5, 3)
    with pytest.raises(ValueError, match="not a flattened lower-diagonal number"):
        t.forward_shape((4,))


def test_lower_cholesky_and_positive_definite_transforms():
    x = T([[0.3, 5.0], [-1.2, -0.5]])
    L = transforms.LowerCholeskyTransform()(x)
    np.testing.assert_allclose(N(L), [[math.exp(0.3), 0.0], [-1.2, math.exp(-0.5)]])
    assert constraints.lower_cholesky.check(L).item()
    np.testing.assert_allclose(N(transforms.LowerCholeskyTransform().inv(L)),
                               [[0.3, 0.0], [-1.2, -0.5]], rtol=1e-12)
    P = transforms.PositiveDefiniteTransform()(x)
    np.testing.assert_allclose(N(P), N(L) @ N(L).T, rtol=1e-12)
    assert constraints.positive_definite.check(P).item()
    np.testing.assert_allclose(N(transforms.PositiveDefiniteTransform().inv(P)),
                               [[0.3, 0.0], [-1.2, -0.5]], rtol=1e-10)


def test_cat_and_stack_transforms():
    exp, aff = transforms.ExpTransform(), transforms.AffineTransform(1.0, 3.0)
    cat = transforms.CatTransform([exp, aff], dim=0, lengths=[2, 1])
    x = T([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    y = cat(x)
    np.testing.assert_allclose(N(y)[:2], np.exp(N(x)[:2]))
    np.testing.assert_allclose(N(y)[2], 1 + 3 * N(x)[2])
    np.testing.assert_allclose(N(cat.inv(y)), N(x), rtol=1e-12)
    np.testing.assert_allclose(N(cat.log_abs_det_jacobian(x, y)),
                               np.concatenate([N(x)[:2], np.full((1, 2), math.log(3))]))
    assert cat.bijective and cat.event_dim == 0 and cat.length == 3
    stack = transforms.StackTransform([exp, aff], dim=1)
    x2 = T([[0.1, 0.2], [0.3, 0.4]])
    y2 = stack(x2)
    np.testing.assert_allclose(N(y2), np.stack([np.exp([0.1, 0.3]), 1 + 3 * np.array([0.2, 0.4])],
                                               1))
    np.testing.assert_allclose(N(stack.inv(y2)), N(x2), rtol=1e-12)
    np.testing.assert_allclose(N(stack.log_abs_det_jacobian(x2, y2)),
                               [[0.1, math.log(3)], [0.3, math.log(3)]])
    assert stack.domain.check(x2).all() and stack.codomain.check(y2).all()
    with pytest.raises(AssertionError, match="must equal length 3"):
        cat(T([0.0, 1.0]))
    with pytest.raises(AssertionError, match="out of range"):
        transforms.StackTransform([exp], dim=3)(T([0.0]))
    with pytest.raises(AssertionError):
        transforms.CatTransform([exp, 3])
    assert cat.with_cache(1)._cache_size == 1 and stack.with_cache(1).dim == 1


# ------------------------------------------------------------------ constraint registries

REGISTRY_CASES = [
    (constraints.real, np.array([-2.0, 0.5])),
    (constraints.positive, np.array([-2.0, 0.5])),
    (constraints.greater_than(3.0), np.array([-2.0, 0.5])),
    (constraints.less_than(-1.0), np.array([-2.0, 0.5])),
    (constraints.unit_interval, np.array([-2.0, 0.5])),
    (constraints.interval(-1.0, 4.0), np.array([-2.0, 0.5])),
    (constraints.simplex, np.array([-2.0, 0.5, 1.0])),
    (constraints.corr_cholesky, np.array([-2.0, 0.5, 1.0])),
    (constraints.independent(constraints.positive, 1), np.array([-2.0, 0.5])),
    (constraints.cat([constraints.positive, constraints.real], 0, [1, 1]),
     np.array([-2.0, 0.5])),
    (constraints.stack([constraints.positive, constraints.unit_interval], 0),
     np.array([-2.0, 0.5])),
]


@pytest.mark.parametrize("i", range(len(REGISTRY_CASES)))
def test_biject_to_and_transform_to(i):
    c, x = REGISTRY_CASES[i]
    for registry in (biject_to, transform_to):
        t = registry(c)
        y = t(T(x))
        assert bool(c.check(y).all()), (registry, c)
        if registry is biject_to or c is not constraints.simplex:
            np.testing.assert_allclose(N(t.inv(y)), x, rtol=1e-9)
    assert isinstance(biject_to(constraints.simplex), transforms.StickBreakingTransform)
    assert isinstance(transform_to(constraints.simplex), transforms.SoftmaxTransform)


def test_transform_to_matrix_constraints_and_registry_errors():
    x = T([[0.3, 5.0], [-1.2, -0.5]])
    assert constraints.lower_cholesky.check(transform_to(constraints.lower_cholesky)(x)).item()
    assert constraints.positive_definite.check(
        transform_to(constraints.positive_definite)(x)).item()
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        biject_to(constraints.lower_cholesky)
    with pytest.raises(TypeError):
        biject_to.register(int, lambda c: None)
    reg = D.constraint_registry.ConstraintRegistry()
    reg.register(constraints.boolean)(lambda c: transforms.identity_transform)
    assert reg(constraints.boolean) is transforms.identity_transform


# ----------------------------------------------------------------------------- validation

def test_validation_errors():
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(T([1.5]), validate_args=True)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.ContinuousBernoulli()
    with pytest.raises(ValueError, match="constraint GreaterThan"):
        D.FisherSnedecor(T([1.0]), T([-1.0]))
    with pytest.raises(ValueError, match="constraint HalfOpenInterval"):
        D.NegativeBinomial(T([2.0]), T([1.0]))
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(T([2.0]), T([0.5, 0.5]))
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or "
                                         "equal to 2"):
        D.LKJCholesky(1)
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
        D.Wishart(T(3.0))
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 1"):
        D.Wishart(T(0.5), covariance_matrix=T(np.eye(2)))
    with pytest.warns(UserWarning, match="Low df values detected"):
        D.Wishart(T(1.5), covariance_matrix=T(np.eye(2)))
    with pytest.raises(ValueError, match="needs to be an  instance of"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(T([0.0]), 1.0))
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(T([0.5, 0.5])), D.Normal(T([0.0, 1.0, 2.0]), 1.0))
    with pytest.raises(ValueError, match="constraint GreaterThan"):
        D.Pareto(T([1.0]), T([-2.0]))
    with pytest.raises(ValueError, match="within the support \\(GreaterThanEq"):
        D.Pareto(T([1.0]), T([2.0])).log_prob(T([0.5]))
    with pytest.raises(ValueError, match="within the support \\(CorrCholesky"):
        D.LKJCholesky(2).log_prob(T([[1.0, 0.0], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="within the support \\(Multinomial"):
        D.Multinomial(2, T([0.5, 0.5])).log_prob(T([2.0, 1.0]))


def test_expand():
    cases = [D.ContinuousBernoulli(T([0.3])), D.FisherSnedecor(T([3.0]), T([5.0])),
             D.GeneralizedPareto(T([0.0]), T([1.0]), T([0.1])), D.HalfCauchy(T([1.0])),
             D.InverseGamma(T([2.0]), T([1.0])), D.Kumaraswamy(T([2.0]), T([1.0])),
             D.Pareto(T([1.0]), T([2.0])), D.Weibull(T([1.0]), T([2.0])),
             D.VonMises(T([0.0]), T([1.0])), D.NegativeBinomial(T([2.0]), T([0.5])),
             D.Multinomial(3, T([[0.5, 0.5]])), D.LKJCholesky(2, T([1.0])),
             D.Wishart(T([4.0]), covariance_matrix=T(np.eye(2))),
             D.OneHotCategoricalStraightThrough(T([[0.5, 0.5]])),
             D.LogisticNormal(T([[0.0, 0.0]]), 1.0),
             D.MixtureSameFamily(D.Categorical(T([[0.5, 0.5]])), D.Normal(T([[0.0, 1.0]]), 1.0))]
    for d in cases:
        e = d.expand((3, 1))
        assert type(e) is type(d) and tuple(e.batch_shape) == (3, 1), type(d)
        assert tuple(e.event_shape) == tuple(d.event_shape)
        s = e.sample()
        assert tuple(s.shape) == (3, 1) + tuple(d.event_shape), type(d)
        np.testing.assert_allclose(N(e.log_prob(s)).shape, (3, 1))
