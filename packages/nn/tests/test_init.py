"""ember.nn.init: gains, fans, the distributions' moments and supports, generators."""
import math

import numpy as np
import pytest

import ember.tensor as et
from ember.nn import init


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError):
        init.calculate_gain("foo")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(et.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError):
        init._calculate_fan_in_and_fan_out(et.empty(5))


def _stats(t):
    a = t.numpy().ravel()
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_normal_constant():
    t = init.uniform_(et.empty(200, 200), -2, 3)
    m, s, lo, hi = _stats(t)
    assert lo >= -2 and hi < 3 and abs(m - 0.5) < 0.05 and abs(s - 5 / math.sqrt(12)) < 0.05
    t = init.normal_(et.empty(200, 200), 1.0, 2.0)
    m, s, _, _ = _stats(t)
    assert abs(m - 1) < 0.05 and abs(s - 2) < 0.05
    assert init.constant_(et.empty(3), 0.5).tolist() == [0.5] * 3
    assert init.ones_(et.empty(2)).tolist() == [1.0, 1.0]
    assert init.zeros_(et.ones(2)).tolist() == [0.0, 0.0]


def test_trunc_normal():
    t = init.trunc_normal_(et.empty(300, 300), mean=0.5, std=1.0, a=-1.0, b=2.0)
    m, s, lo, hi = _stats(t)
    assert lo >= -1 and hi <= 2
    # truncated N(0.5, 1) on [-1, 2] is symmetric around 0.5
    assert abs(m - 0.5) < 0.02 and 0.6 < s < 0.8


def test_xavier_kaiming():
    t = et.empty(300, 200)
    bound = math.sqrt(6 / 500)
    m, s, lo, hi = _stats(init.xavier_uniform_(t))
    assert -bound <= lo and hi <= bound and abs(s - bound / math.sqrt(3)) < 0.003
    m, s, _, _ = _stats(init.xavier_normal_(t, gain=2.0))
    assert abs(s - 2 * math.sqrt(2 / 500)) < 0.003
    m, s, lo, hi = _stats(init.kaiming_uniform_(t, a=math.sqrt(5)))
    assert hi <= 1 / math.sqrt(200) and lo >= -1 / math.sqrt(200)
    m, s, _, _ = _stats(init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"))
    assert abs(s - math.sqrt(2 / 300)) < 0.003


def test_eye_dirac_orthogonal_sparse():
    np.testing.assert_array_equal(init.eye_(et.empty(2, 3)).numpy(), np.eye(2, 3))
    w = init.dirac_(et.empty(4, 2, 3, 3), groups=2)
    a = w.numpy()
    assert a.sum() == 4 and a[0, 0, 1, 1] == 1 and a[3, 1, 1, 1] == 1
    q = init.orthogonal_(et.empty(6, 10)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(6), atol=1e-5)
    q = init.orthogonal_(et.empty(10, 3, 2), gain=2.0).numpy().reshape(10, 6)
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(6), atol=1e-4)
    s = init.sparse_(et.empty(10, 7), 0.3).numpy()
    assert np.all((s == 0).sum(0) >= 3)
    with pytest.raises(ValueError):
        init.eye_(et.empty(2, 2, 2))


def test_generator_reproducible():
    g1, g2 = et.Generator().manual_seed(3), et.Generator().manual_seed(3)
    a = init.kaiming_uniform_(et.empty(5, 5), generator=g1)
    b = init.kaiming_uniform_(et.empty(5, 5), generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_init_under_no_grad_on_parameter():
    from ember.nn import Parameter

    p = Parameter(et.empty(3, 4))
    init.xavier_uniform_(p)
    assert p.requires_grad and p.grad_fn is None
