"""Parity with PyTorch 2.13 for random sampling, printing and checkpoints.

ember's random streams cannot equal PyTorch's (different generators), so sampling is compared
by distribution: dtypes, supports, means and standard deviations over 10**5 draws, and the
exception types of bad calls. Printing is compared string for string.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402
from ember.tensor._printing import set_printoptions  # noqa: E402

N = 100_000


@pytest.fixture(autouse=True)
def _seeds():
    torch.manual_seed(0)
    et.manual_seed(0)
    yield
    torch.set_printoptions(profile="default")
    set_printoptions(profile="default")


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x._data)


def _dtype_name(x):
    return str(x.dtype).split(".")[-1]


# (name, ember call, torch call, expected mean, expected std)
SAMPLERS = [
    ("rand", lambda: et.rand(N), lambda: torch.rand(N), 0.5, 1 / math.sqrt(12)),
    ("rand64", lambda: et.rand(N, dtype=et.float64), lambda: torch.rand(N, dtype=torch.float64),
     0.5, 1 / math.sqrt(12)),
    ("randn", lambda: et.randn(N), lambda: torch.randn(N), 0.0, 1.0),
    ("randn16", lambda: et.randn(N, dtype=et.float16),
     lambda: torch.randn(N, dtype=torch.float16), 0.0, 1.0),
    ("normal", lambda: et.normal(2.0, 3.0, (N,)), lambda: torch.normal(2.0, 3.0, (N,)), 2.0, 3.0),
    ("normal_tensor", lambda: et.normal(et.full((N,), -1.0), et.full((N,), 0.5)),
     lambda: torch.normal(torch.full((N,), -1.0), torch.full((N,), 0.5)), -1.0, 0.5),
    ("uniform_", lambda: et.zeros(N).uniform_(-2, 5), lambda: torch.zeros(N).uniform_(-2, 5),
     1.5, 7 / math.sqrt(12)),
    ("normal_", lambda: et.zeros(N).normal_(3, 0.25), lambda: torch.zeros(N).normal_(3, 0.25),
     3.0, 0.25),
    ("exponential_", lambda: et.zeros(N).exponential_(2.0),
     lambda: torch.zeros(N).exponential_(2.0), 0.5, 0.5),
    ("geometric_", lambda: et.zeros(N).geometric_(0.25), lambda: torch.zeros(N).geometric_(0.25),
     4.0, math.sqrt(0.75) / 0.25),
    ("log_normal_", lambda: et.zeros(N, dtype=et.float64).log_normal_(0.0, 0.5),
     lambda: torch.zeros(N, dtype=torch.float64).log_normal_(0.0, 0.5),
     math.exp(0.125), math.sqrt((math.exp(0.25) - 1) * math.exp(0.25))),
    ("bernoulli", lambda: et.bernoulli(et.full((N,), 0.3)),
     lambda: torch.bernoulli(torch.full((N,), 0.3)), 0.3, math.sqrt(0.21)),
    ("bernoulli_", lambda: et.zeros(N).bernoulli_(0.7), lambda: torch.zeros(N).bernoulli_(0.7),
     0.7, math.sqrt(0.21)),
    ("poisson", lambda: et.poisson(et.full((N,), 4.0)),
     lambda: torch.poisson(torch.full((N,), 4.0)), 4.0, 2.0),
    ("randint", lambda: et.randint(-2, 3, (N,)), lambda: torch.randint(-2, 3, (N,)), 0.0,
     math.sqrt(2.0)),
    ("random_", lambda: et.zeros(N, dtype=et.int64).random_(0, 10),
     lambda: torch.zeros(N, dtype=torch.int64).random_(0, 10), 4.5, math.sqrt(99 / 12)),
]


@pytest.mark.parametrize("name, ours, theirs, mean, std", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_sampler_moments_and_dtype_match_torch(name, ours, theirs, mean, std):
    e, t = ours(), theirs()
    assert _dtype_name(e) == _dtype_name(t)
    assert tuple(e.shape) == tuple(t.shape)
    ev, tv = _np(e).astype(np.float64), _np(t).astype(np.float64)
    tol_m = 5 * std / math.sqrt(N) + 1e-3
    tol_s = 0.02 * std + 1e-3
    for v in (ev, tv):
        assert abs(v.mean() - mean) < tol_m, (name, v.mean())
        assert abs(v.std() - std) < tol_s, (name, v.std())
    assert ev.min() >= tv.min() - 10 * std and ev.max() <= tv.max() + 10 * std


def test_supports_match_torch():
    for e, t in [(et.rand(N), torch.rand(N)), (et.rand(N, dtype=et.float16),
                                                torch.rand(N, dtype=torch.float16))]:
        for v in (_np(e), _np(t)):
            assert v.min() >= 0 and v.max() < 1
    for e, t in [(et.randint(3, 7, (N,)), torch.randint(3, 7, (N,))),
                 (et.bernoulli(et.full((N,), 0.5)), torch.bernoulli(torch.full((N,), 0.5)))]:
        assert set(np.unique(_np(e)).tolist()) == set(np.unique(_np(t)).tolist())
    ef = _np(et.zeros(N).random_())
    tf = _np(torch.zeros(N).random_())
    assert ef.min() >= 0 and ef.max() <= 2**24 and tf.max() <= 2**24
    assert (ef == np.floor(ef)).all() and (tf == np.floor(tf)).all()
    assert sorted(_np(et.randperm(50)).tolist()) == sorted(_np(torch.randperm(50)).tolist())


DTYPE_CALLS = [
    (lambda m: m.rand(2), "rand"),
    (lambda m: m.randn(2, dtype=m.float64), "randn f64"),
    (lambda m: m.randint(0, 5, (2,)), "randint"),
    (lambda m: m.randint(0, 5, (2,), dtype=m.int32), "randint i32"),
    (lambda m: m.randint(0, 5, (2,), dtype=m.float32), "randint f32"),
    (lambda m: m.randperm(4), "randperm"),
    (lambda m: m.multinomial(m.tensor([1.0, 2.0]), 3, replacement=True), "multinomial"),
    (lambda m: m.bernoulli(m.tensor([0.5], dtype=m.float64)), "bernoulli f64"),
    (lambda m: m.poisson(m.tensor([2.0], dtype=m.float64)), "poisson f64"),
    (lambda m: m.rand_like(m.zeros(2, dtype=m.float16)), "rand_like f16"),
    (lambda m: m.randint_like(m.zeros(2, dtype=m.int16), 5), "randint_like i16"),
    (lambda m: m.normal(m.zeros(2, dtype=m.float64), 1.0), "normal tensor f64"),
    (lambda m: m.zeros(2, dtype=m.uint8).random_(), "random_ u8"),
    (lambda m: m.zeros(3, dtype=m.bool).random_(), "random_ bool"),
]


@pytest.mark.parametrize("call, label", DTYPE_CALLS, ids=[c[1] for c in DTYPE_CALLS])
def test_result_dtypes_and_shapes_match_torch(call, label):
    e, t = call(et), call(torch)
    assert _dtype_name(e) == _dtype_name(t), label
    assert tuple(e.shape) == tuple(t.shape), label


def test_multinomial_frequencies_match_torch():
    w = [1.0, 0.0, 3.0, 6.0]
    fe = np.bincount(_np(et.multinomial(et.tensor(w), N, replacement=True)), minlength=4) / N
    ft = np.bincount(_np(torch.multinomial(torch.tensor(w), N, replacement=True)),
                     minlength=4) / N
    np.testing.assert_allclose(fe, ft, atol=0.015)
    rows_e = _np(et.multinomial(et.tensor([[1.0, 2.0, 0.0, 4.0]]).expand(N, 4), 2))
    rows_t = _np(torch.multinomial(torch.tensor([[1.0, 2.0, 0.0, 4.0]]).expand(N, 4), 2))
    for r in (rows_e, rows_t):
        assert (r[:, 0] != r[:, 1]).all() and (r != 2).all()
    np.testing.assert_allclose(np.bincount(rows_e[:, 0], minlength=4) / N,
                               np.bincount(rows_t[:, 0], minlength=4) / N, atol=0.015)


ERRORS = [
    (lambda m: m.randint(5, 3, (2,)), "randint high <= low"),
    (lambda m: m.multinomial(m.tensor([0.5, -0.1]), 1), "multinomial negative"),
    (lambda m: m.multinomial(m.tensor([1.0, 2.0]), 3), "multinomial more than categories"),
    (lambda m: m.normal(0.0, -1.0, (2,)), "normal negative std"),
    (lambda m: m.zeros(2).uniform_(2, 1), "uniform_ from > to"),
    (lambda m: m.zeros(2).exponential_(-1.0), "exponential_ negative"),
    (lambda m: m.bernoulli(m.tensor([1.5])), "bernoulli p > 1"),
    (lambda m: m.zeros(2).random_(3, 3), "random_ empty range"),
]


@pytest.mark.parametrize("call, label", ERRORS, ids=[c[1] for c in ERRORS])
def test_error_types_match_torch(call, label):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(Exception) as ee:
        call(et)
    assert isinstance(ee.value, type(te.value)), (label, te.value, ee.value)


def test_multinomial_too_few_nonzero_categories_is_an_error_in_ember():
    # A deliberate difference: PyTorch 2.13's CPU kernel silently fills the result with
    # zero-weight categories once the non-zero ones are used up; ember raises the error that
    # PyTorch's CUDA kernel and older releases raise, rather than return impossible draws.
    out = torch.multinomial(torch.tensor([1.0, 0.0, 0.0]), 2)
    assert out.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        et.multinomial(et.tensor([1.0, 0.0, 0.0]), 2)


def test_randint_message_matches_torch():
    with pytest.raises(RuntimeError) as te:
        torch.randint(5, 3, (2,))
    with pytest.raises(RuntimeError) as ee:
        et.randint(5, 3, (2,))
    assert str(ee.value) == str(te.value).splitlines()[0]


# --------------------------------------------------------------------------- printing
_rng = np.random.default_rng(0)
PRINT_ARRAYS = [
    np.array([1.0, 2.0], np.float32), np.array([1, 2]), np.array([True, False]),
    np.array(3.5, np.float32), np.array(3.0, np.float32), np.array(7), np.array(True),
    np.array([1e-5, 1e5], np.float32), np.array([0.1, 123.456, -7.5], np.float32),
    np.array([[1, 2], [30, 4]]), _rng.standard_normal((3, 4)).astype(np.float32),
    _rng.standard_normal((2, 3, 4)), np.arange(2000, dtype=np.float32),
    np.arange(2000).reshape(40, 50), _rng.standard_normal((10, 10, 20)).astype(np.float32),
    np.array([np.nan, np.inf, -np.inf, 1.0], np.float32), np.array([np.nan, 1.5], np.float32),
    np.array([0.0, -0.0], np.float32), np.zeros((0, 3), np.float32), np.zeros((0,), np.float32),
    np.zeros((0,), np.int64), np.zeros((2, 0, 3)), np.array([1e10, 1.0], np.float32),
    np.array([1.5e-10]), np.array([100000.0, 3.0], np.float32), np.array([1, 2], np.int32),
    np.array([1, 2], np.uint8), np.array([1.5, 2], np.float16), np.array([1, 2], np.int8),
    np.arange(100, dtype=np.float32) * 1.1, np.arange(30, dtype=np.int64) * 1000,
    np.array([[True, False], [False, True]]), _rng.standard_normal((4, 50)).astype(np.float32),
    np.array([123456789.0], np.float32), np.array([0.0001], np.float32),
    np.array([0.00009], np.float32), np.array([1.0, 1001.0], np.float32),
    np.array([-1e-5, 2.0]), np.array(np.nan, np.float32), np.zeros((3, 0)),
    np.arange(1001).reshape(1001, 1), np.arange(24.0, dtype=np.float32).reshape(2, 3, 4, 1),
    np.arange(9, dtype=np.float64) * 1.5 + 10, np.arange(6, dtype=np.float64) * 1.5 + 10,
]


def _reprs(arr):
    t = repr(torch.from_numpy(arr.copy())).replace("torch.", "ember.")
    return t, repr(et.from_numpy(arr.copy()))


@pytest.mark.parametrize("i", range(len(PRINT_ARRAYS)))
def test_repr_matches_torch(i):
    theirs, ours = _reprs(PRINT_ARRAYS[i])
    assert ours == theirs


@pytest.mark.parametrize("opts", [
    {"precision": 2}, {"threshold": 5}, {"edgeitems": 1, "threshold": 5}, {"linewidth": 40},
    {"sci_mode": True}, {"sci_mode": False}, {"profile": "short"},
    {"edgeitems": 0, "threshold": 3},
], ids=str)
def test_repr_with_print_options_matches_torch(opts):
    torch.set_printoptions(**opts)
    set_printoptions(**opts)
    for arr in [np.arange(10, dtype=np.float32) / 3, np.arange(30).reshape(5, 6),
                np.array([1e-5, 1e5], np.float32), np.arange(64.0).reshape(4, 4, 4)]:
        theirs, ours = _reprs(arr)
        assert ours == theirs


def test_requires_grad_suffix_matches_torch():
    x = et.tensor([1.0, 2.0])
    x._requires_grad = True  # without going through ember.autograd
    assert repr(x) == repr(torch.tensor([1.0, 2.0], requires_grad=True))


# --------------------------------------------------------------------------- checkpoints
def test_checkpoint_tensors_read_back_in_torch_via_safetensors(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    obj = {"state": {0: {"exp_avg": et.randn(3, 2)}}, "w": et.arange(5),
           "h": et.tensor([1.5], dtype=et.float16), "m": et.tensor([True, False])}
    et.save(obj, tmp_path / "ck")
    loaded = safetensors_torch.load_file(str(tmp_path / "ck"))
    np.testing.assert_array_equal(loaded["state.0.exp_avg"].numpy(),
                                  _np(obj["state"][0]["exp_avg"]))
    assert loaded["w"].dtype == torch.int64 and loaded["h"].dtype == torch.float16
    assert loaded["m"].dtype == torch.bool


def test_torch_save_file_is_refused_without_unpickling(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(RuntimeError, match="never unpickles"):
        et.load(path)
