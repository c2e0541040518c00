"""Random sampling: determinism, generator state, dtypes, distributions and errors."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _random as R

N = 100_000


@pytest.fixture(autouse=True)
def _restore_rng():
    state = et.get_rng_state()
    yield
    et.set_rng_state(state)


def a(x):
    return np.asarray(x._data)


# --------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("fn", [
    lambda g: et.rand(5, 3, generator=g),
    lambda g: et.randn(7, generator=g),
    lambda g: et.randint(0, 100, (9,), generator=g),
    lambda g: et.randperm(10, generator=g),
    lambda g: et.normal(1.0, 2.0, (4,), generator=g),
    lambda g: et.multinomial(et.tensor([1.0, 2.0, 3.0]), 2, generator=g),
    lambda g: et.bernoulli(et.full((8,), 0.5), generator=g),
    lambda g: et.poisson(et.full((8,), 3.0), generator=g),
    lambda g: et.zeros(6).exponential_(generator=g),
    lambda g: et.zeros(6).cauchy_(generator=g),
])
def test_same_seed_same_numbers(fn):
    x = fn(et.Generator().manual_seed(123))
    y = fn(et.Generator().manual_seed(123))
    z = fn(et.Generator().manual_seed(124))
    np.testing.assert_array_equal(a(x), a(y))
    if a(x).size > 3:  # tiny outputs may coincide under another seed
        assert not np.array_equal(a(x), a(z))


def test_manual_seed_resets_the_global_stream():
    et.manual_seed(7)
    x = et.rand(10)
    et.randn(3)
    et.manual_seed(7)
    np.testing.assert_array_equal(a(et.rand(10)), a(x))
    assert et.initial_seed() == 7


def test_consecutive_draws_differ():
    et.manual_seed(0)
    assert not np.array_equal(a(et.rand(10)), a(et.rand(10)))


def test_manual_seed_returns_generator_and_accepts_negative_seed():
    g = et.Generator()
    assert g.manual_seed(5) is g
    assert et.manual_seed(1) is et.default_generator
    g.manual_seed(-1)
    assert g.initial_seed() == 2**64 - 1
    with pytest.raises(RuntimeError, match="Overflow"):
        g.manual_seed(2**64)
    with pytest.raises(TypeError):
        g.manual_seed(1.5)


def test_default_seed_matches_pytorch():
    assert et.Generator().initial_seed() == 67280421310721


def test_seed_returns_the_seed_in_use():
    s = et.seed()
    assert et.initial_seed() == s
    x = et.rand(4)
    et.manual_seed(s)
    np.testing.assert_array_equal(a(et.rand(4)), a(x))


def test_generator_is_independent_of_global_stream():
    g = et.Generator().manual_seed(3)
    x = et.rand(5, generator=g)
    et.manual_seed(99)
    et.rand(100)
    g2 = et.Generator().manual_seed(3)
    np.testing.assert_array_equal(a(et.rand(5, generator=g2)), a(x))


def test_get_set_state_replays():
    g = et.Generator().manual_seed(11)
    et.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is et.uint8 and state.dim() == 1
    x = et.randn(9, generator=g)  # float32 normals use NumPy's buffered 32-bit half words
    y = et.rand(4, dtype=et.float64, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(a(et.randn(9, generator=g)), a(x))
    np.testing.assert_array_equal(a(et.rand(4, dtype=et.float64, generator=g)), a(y))


def test_rng_state_round_trips_through_save(tmp_path):
    et.manual_seed(5)
    et.rand(1)
    et.save({"rng": et.get_rng_state()}, tmp_path / "rng.ckpt")
    x = et.rand(6)
    et.set_rng_state(et.load(tmp_path / "rng.ckpt")["rng"])
    np.testing.assert_array_equal(a(et.rand(6)), a(x))
    buf = io.BytesIO()
    et.save(et.get_rng_state(), buf)
    buf.seek(0)
    assert np.array_equal(a(et.load(buf)), a(et.get_rng_state()))


def test_set_state_validates():
    g = et.Generator()
    with pytest.raises(RuntimeError, match="wrong size"):
        g.set_state(et.zeros(3, dtype=et.uint8))
    with pytest.raises(RuntimeError, match="uint8"):
        g.set_state(et.zeros(48))
    with pytest.raises(TypeError):
        g.set_state(b"\x00" * 48)


def test_fork_rng_restores_state():
    et.manual_seed(0)
    with et.fork_rng():
        et.rand(100)
    x = et.rand(3)
    et.manual_seed(0)
    np.testing.assert_array_equal(a(et.rand(3)), a(x))


# --------------------------------------------------------------------------- dtypes, shapes
def test_factory_dtypes_and_shapes():
    assert et.rand(2, 3).dtype is et.float32 and et.rand(2, 3).shape == (2, 3)
    assert et.rand((2, 3)).shape == (2, 3)
    assert et.rand(2, dtype=et.float64).dtype is et.float64
    assert et.rand(2, dtype=et.float16).dtype is et.float16
    assert et.randn(4, dtype=et.float16).dtype is et.float16
    assert et.randn(2, 2).dtype is et.float32
    assert et.randint(5, (3,)).dtype is et.int64
    assert et.randint(0, 5, (3,), dtype=et.int32).dtype is et.int32
    assert et.randint(0, 5, (3,), dtype=et.float32).dtype is et.float32
    assert et.randint(0, 2, (3,), dtype=et.bool).dtype is et.bool
    assert et.randint(high=4, size=(2, 2)).shape == (2, 2)
    assert et.randperm(5).dtype is et.int64
    assert et.randperm(5, dtype=et.int32).dtype is et.int32
    assert et.normal(0.0, 1.0, (2, 3)).dtype is et.float32
    assert et.normal(0.0, 1.0, size=(2,), dtype=et.float64).dtype is et.float64
    assert et.rand(0, 3).shape == (0, 3)
    assert et.rand(()).shape == ()


def test_default_dtype_is_followed():
    et.set_default_dtype(et.float64)
    try:
        assert et.rand(2).dtype is et.float64
        assert et.randn(2).dtype is et.float64
    finally:
        et.set_default_dtype(et.float32)


def test_like_functions():
    x = et.zeros(2, 3, dtype=et.float64)
    assert et.rand_like(x).dtype is et.float64 and et.rand_like(x).shape == (2, 3)
    assert et.randn_like(x, dtype=et.float32).dtype is et.float32
    i = et.zeros(4, dtype=et.int32)
    r = et.randint_like(i, 10)
    assert r.dtype is et.int32 and a(r).min() >= 0 and a(r).max() < 10
    r = et.randint_like(i, 5, 7)
    assert set(a(r).tolist()) <= {5, 6}


def test_float32_is_drawn_directly_not_cast_from_float64():
    # NumPy's float32 path yields multiples of 2**-24 everywhere in [0, 1); a float64 draw
    # rounded to float32 would have finer steps below 0.5.
    x = a(et.rand(N))
    assert x.dtype == np.float32
    scaled = x.astype(np.float64) * 2.0**24
    np.testing.assert_array_equal(scaled, np.floor(scaled))
    assert (x < 0.5).any()


def test_randperm_is_a_permutation():
    assert sorted(a(et.randperm(1000)).tolist()) == list(range(1000))
    assert et.randperm(0).shape == (0,)


def test_in_place_samplers_return_self_and_bump_version():
    for name, args in [("uniform_", ()), ("normal_", ()), ("bernoulli_", (0.5,)),
                       ("random_", (10,)), ("exponential_", ()), ("geometric_", (0.5,)),
                       ("cauchy_", ()), ("log_normal_", ())]:
        x = et.zeros(5)
        v = x._version
        out = getattr(x, name)(*args)
        assert out is x, name
        assert x._version == v + 1, name
        assert x.dtype is et.float32, name


def test_in_place_samplers_are_non_differentiable_registry_ops():
    for name in ["uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_",
                 "cauchy_", "log_normal_"]:
        op = et.OPS[name]
        assert op.inplace and not op.differentiable, name
    for name in ["bernoulli", "multinomial", "poisson"]:
        assert not et.OPS[name].differentiable


def test_in_place_sampler_writes_through_non_contiguous_view():
    base = et.zeros(4, 6)
    view = base.t()
    assert not view.is_contiguous()
    view.uniform_(2.0, 3.0)
    b = a(base)
    assert (b >= 2.0).all() and (b < 3.0).all()
    base2 = et.zeros(4, 6)
    base2.narrow(1, 1, 2).normal_(5.0, 0.1)
    b2 = a(base2)
    assert (b2[:, [0, 3, 4, 5]] == 0).all()
    assert (np.abs(b2[:, 1:3] - 5.0) < 1.0).all()


def test_in_place_samplers_keep_float16_and_float64():
    for dt in (et.float16, et.float64):
        x = et.zeros(1000, dtype=dt).uniform_()
        assert x.dtype is dt and 0 <= a(x).min() and a(x).max() <= 1
        assert et.zeros(10, dtype=dt).normal_().dtype is dt
        assert et.zeros(10, dtype=dt).log_normal_().dtype is dt


def test_random_in_place_ranges():
    x = et.zeros(N, dtype=et.int64).random_(3, 7)
    assert set(np.unique(a(x)).tolist()) == {3, 4, 5, 6}
    x = et.zeros(N, dtype=et.int64).random_(4)
    assert set(np.unique(a(x)).tolist()) == {0, 1, 2, 3}
    x = et.zeros(1000, dtype=et.uint8).random_()
    assert a(x).max() > 200
    b = et.zeros(1000, dtype=et.bool).random_()
    assert set(np.unique(a(b)).tolist()) == {False, True}
    f = et.zeros(1000).random_()
    assert a(f).min() >= 0 and a(f).max() <= 2**24 and (a(f) == np.floor(a(f))).all()
    f = et.zeros(100).random_(**{"from": -3, "to": 0})
    assert a(f).min() >= -3 and a(f).max() <= -1
    with pytest.raises(RuntimeError, match="to be at most 256"):
        et.zeros(3, dtype=et.uint8).random_(0, 300)


# --------------------------------------------------------------------------- distributions
def _moments(x):
    v = a(x).astype(np.float64)
    return v.mean(), v.std()


def test_rand_uniform_moments_and_range():
    x = a(et.rand(N))
    assert x.min() >= 0 and x.max() < 1
    m, s = _moments(et.rand(N))
    assert abs(m - 0.5) < 0.01 and abs(s - 1 / math.sqrt(12)) < 0.01


def test_randn_moments():
    for dt in (et.float32, et.float64, et.float16):
        m, s = _moments(et.randn(N, dtype=dt))
        assert abs(m) < 0.02 and abs(s - 1) < 0.02, dt


def test_normal_forms():
    m, s = _moments(et.normal(2.0, 3.0, (N,)))
    assert abs(m - 2) < 0.05 and abs(s - 3) < 0.05
    mean = et.full((N,), -1.0)
    m, s = _moments(et.normal(mean, 0.5))
    assert abs(m + 1) < 0.02 and abs(s - 0.5) < 0.02
    std = et.full((N,), 2.0)
    m, s = _moments(et.normal(4.0, std))
    assert abs(m - 4) < 0.05 and abs(s - 2) < 0.05
    out = et.normal(et.zeros(N, 1), et.full((1, 2), 1.0))
    assert out.shape == (N, 2)
    x = a(et.normal(et.tensor([0.0, 100.0]).expand(N, 2), et.tensor([1.0, 0.001])))
    assert abs(x[:, 0].mean()) < 0.02 and abs(x[:, 1].mean() - 100) < 0.001
    assert et.normal(et.zeros(3, dtype=et.float64), 1.0).dtype is et.float64


def test_uniform_normal_in_place_moments():
    m, s = _moments(et.zeros(N).uniform_(-2.0, 5.0))
    assert abs(m - 1.5) < 0.05 and abs(s - 7 / math.sqrt(12)) < 0.05
    m, s = _moments(et.zeros(N).normal_(3.0, 0.25))
    assert abs(m - 3) < 0.01 and abs(s - 0.25) < 0.01


def test_exponential_geometric_lognormal_cauchy():
    m, s = _moments(et.zeros(N).exponential_(2.0))
    assert abs(m - 0.5) < 0.01 and abs(s - 0.5) < 0.01
    g = a(et.zeros(N).geometric_(0.25))
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.1
    ln = a(et.zeros(N, dtype=et.float64).log_normal_(0.0, 0.5))
    assert ln.min() > 0 and abs(ln.mean() - math.exp(0.125)) < 0.02
    c = a(et.zeros(N, dtype=et.float64).cauchy_(1.0, 2.0))
    assert abs(np.median(c) - 1.0) < 0.05
    q1, q3 = np.percentile(c, [25, 75])
    assert abs((q3 - q1) / 2 - 2.0) < 0.1


def test_bernoulli():
    p = a(et.bernoulli(et.full((N,), 0.3)))
    assert set(np.unique(p).tolist()) == {0.0, 1.0} and abs(p.mean() - 0.3) < 0.01
    probs = et.tensor([0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(a(et.bernoulli(probs)), [0, 1, 0, 1])
    x = a(et.bernoulli(et.zeros(N, dtype=et.float64), 0.75))
    assert abs(x.mean() - 0.75) < 0.01
    y = a(et.zeros(N).bernoulli_(0.2))
    assert abs(y.mean() - 0.2) < 0.01
    z = a(et.zeros(N, 2).bernoulli_(et.tensor([0.1, 0.9])))
    assert abs(z[:, 0].mean() - 0.1) < 0.01 and abs(z[:, 1].mean() - 0.9) < 0.01
    assert et.bernoulli(et.full((3,), 0.5, dtype=et.float64)).dtype is et.float64
    assert et.zeros(5, dtype=et.int64).bernoulli_(0.5).dtype is et.int64


def test_poisson():
    x = et.poisson(et.full((N,), 4.0))
    m, s = _moments(x)
    assert x.dtype is et.float32 and abs(m - 4) < 0.05 and abs(s**2 - 4) < 0.1
    assert (a(x) == np.floor(a(x))).all()


def test_randint_uniform_counts():
    x = a(et.randint(-2, 3, (N,)))
    assert x.min() == -2 and x.max() == 2
    counts = np.bincount(x + 2)
    assert (np.abs(counts / N - 0.2) < 0.01).all()


def test_multinomial_with_replacement_frequencies():
    w = et.tensor([1.0, 0.0, 3.0, 6.0])
    x = a(et.multinomial(w, N, replacement=True))
    assert x.dtype == np.int64 and x.shape == (N,)
    freq = np.bincount(x, minlength=4) / N
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.3, 0.6], atol=0.01)
    assert (x != 1).all()


def test_multinomial_without_replacement():
    w = et.tensor([[1.0, 0.0, 2.0, 3.0, 0.5], [5.0, 1.0, 1.0, 0.0, 1.0]])
    for _ in range(50):
        x = a(et.multinomial(w, 4))
        assert x.shape == (2, 4)
        assert len(set(x[0])) == 4 and 1 not in x[0]
        assert len(set(x[1])) == 4 and 3 not in x[1]
    # first draw follows the weights
    firsts = a(et.multinomial(et.tensor([1.0, 3.0]).expand(N, 2), 1))[:, 0]
    assert abs(firsts.mean() - 0.75) < 0.01


# --------------------------------------------------------------------------- errors
def test_randint_error_message():
    with pytest.raises(RuntimeError) as e:
        et.randint(5, 3, (2,))
    assert str(e.value) == ("random_ expects 'from' to be less than 'to', but got "
                            "from=5 >= to=3")
    with pytest.raises(RuntimeError, match="from=3 >= to=3"):
        et.randint(3, 3, (2,))
    with pytest.raises(RuntimeError, match="from=0 >= to=0"):
        et.zeros(2, dtype=et.int64).random_(0, 0)


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="element < 0"):
        et.multinomial(et.tensor([0.5, -0.1, 0.6]), 1)
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        et.multinomial(et.tensor([1.0, 0.0, 0.0]), 2)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        et.multinomial(et.tensor([1.0, 2.0]), 3)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        et.multinomial(et.tensor([0.0, 0.0]), 1, replacement=True)
    with pytest.raises(RuntimeError, match="n_sample <= 0"):
        et.multinomial(et.tensor([1.0]), 0)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        et.multinomial(et.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="floating-point"):
        et.multinomial(et.tensor([1, 2]), 1)
    with pytest.raises(RuntimeError, match="inf"):
        et.multinomial(et.tensor([1.0, float("nan")]), 1)


def test_sampler_errors():
    with pytest.raises(RuntimeError, match="floating-point dtype"):
        et.rand(3, dtype=et.int64)
    with pytest.raises(RuntimeError, match="floating-point"):
        et.zeros(3, dtype=et.int64).uniform_()
    with pytest.raises(RuntimeError, match="floating-point"):
        et.zeros(3, dtype=et.int64).normal_()
    with pytest.raises(RuntimeError, match="from=2 > to=1"):
        et.zeros(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        et.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        et.normal(et.zeros(3), et.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        et.zeros(3).normal_(0, -2)
    with pytest.raises(RuntimeError, match="lambda > 0.0"):
        et.zeros(3).exponential_(0)
    with pytest.raises(RuntimeError, match=r"\(0, 1\)"):
        et.zeros(3).geometric_(1.5)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        et.bernoulli(et.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        et.zeros(3).bernoulli_(2.0)
    with pytest.raises(RuntimeError, match="non-negative"):
        et.poisson(et.tensor([-1.0]))
    with pytest.raises(RuntimeError, match="non-negative"):
        et.randperm(-1)
    with pytest.raises(RuntimeError, match="negative dimension"):
        et.rand(-1)
    with pytest.raises(TypeError):
        et.normal(0.0, 1.0)
    with pytest.raises(TypeError):
        et.randint(5)
    with pytest.raises(TypeError, match="Generator"):
        et.rand(2, generator=np.random.default_rng())


def test_generator_device_and_repr():
    g = et.Generator("cpu")
    assert g.device == et.device("cpu") and "cpu" in repr(g)
    assert R.default_generator.device.type == "cpu"
