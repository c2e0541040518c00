"""The CPU trunc_divide kernel (``kernels/cpu/elementwise.py``, ``div(rounding_mode='trunc')``)
against NumPy: ``trunc(a / b)`` with the quotient rounded to the dtype (special values, signed
zeros, broadcasting, strided, 0-d and empty operands, numbers, float16 through float32),
integers exactly (Python's integers as the oracle), and the op's dtypes and errors."""
import numpy as np
import pytest

import ember.tensor as et
from ember.tensor.kernels.cpu import elementwise as E


def _same(r, ref):
    return r.shape == ref.shape and r.dtype == ref.dtype and bool(
        ((r == ref) & (np.signbit(r) == np.signbit(ref)) | (np.isnan(r) & np.isnan(ref))).all())


def _ref(a, b, dt):
    with np.errstate(all="ignore"):
        return np.trunc(np.true_divide(a, b, dtype=dt)).astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_specials(dt):
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.5, -7.0, 3.0,
                   np.finfo(dt).max, np.finfo(dt).tiny], dt)
    a, b = np.repeat(sp, sp.size), np.tile(sp, sp.size)
    with np.errstate(all="raise"):  # no NumPy floating-point warning from the loop
        r = E.trunc_divide(a, b)
    assert _same(r, _ref(a, b, dt))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_broadcast_strided_scalars(dt):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 7)) * 10).astype(dt)
    y = rng.standard_normal((7,)).astype(dt)
    cases = [(x, x[::-1]), (x, y), (y, x), (x, x[:, :1]), (x[:, :1], y), (x, 1.5), (-3, x),
             (x[:, ::2], y[::2]), (x.T, x.T[:, :1]), (np.asarray(dt(7)), np.asarray(dt(-2))),
             (np.zeros((0, 7), dt), y), (x.reshape(5, 7, 1), y.reshape(1, 1, 7))]
    work = np.float32 if dt == np.float16 else dt  # float16: computed in float32, rounded once
    for a, b in cases:
        ref = _ref(np.asarray(a, dt).astype(work), np.asarray(b, dt).astype(work), work)
        assert _same(E.trunc_divide(a, b), ref.astype(dt)), (a, b)
    out = np.empty((5, 7), np.float64)
    assert E.trunc_divide(x, y, out=out) is out
    assert _same(out, _ref(x.astype(work), y.astype(work), work).astype(np.float64))


def _tdiv(p: int, q: int) -> int:
    """C's truncating integer division, in Python's integers."""
    m = abs(p) // abs(q)
    return m if (p < 0) == (q < 0) else -m


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8])
def test_integers_exact(dt):
    rng = np.random.default_rng(1)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    b = rng.integers(1, 9, 300).astype(dt)
    if info.min < 0:
        b = (b * rng.choice([-1, 1], 300)).astype(dt)
    want = np.array([_tdiv(int(p), int(q)) for p, q in zip(a, b)]).astype(dt)
    r = E.trunc_divide(a, b)
    assert r.dtype == dt and (r == want).all()
    assert (E.trunc_divide(a, 3) == np.array([_tdiv(int(p), 3) for p in a]).astype(dt)).all()
    if info.min < 0:  # the minimum divided by -1 wraps, as NumPy's //
        assert E.trunc_divide(np.array([info.min], dt), np.array([-1], dt))[0] == info.min


def test_bad_dtypes():
    with pytest.raises(TypeError):
        E.trunc_divide(np.array([1 + 1j]), np.array([2 + 0j]))


def test_op_dtypes_and_errors():
    x = et.tensor([[7.5, -7.5, -0.0], [1.0, 2.0, 3.0]])
    assert _same(et.div(x, 2, rounding_mode="trunc").numpy(),
                 np.array([[3.0, -3.0, -0.0], [0.0, 1.0, 1.0]], np.float32))
    i = et.tensor([2 ** 62 + 1, -7, 7])  # int64 exactly (a float quotient would round)
    r = et.div(i, et.tensor([3, 2, -2]), rounding_mode="trunc")
    assert r.dtype == et.int64 and r.tolist() == [(2 ** 62 + 1) // 3, -3, -3]
    assert et.div(i, 2.5, rounding_mode="trunc").dtype == et.float32
    b = et.div(x.bfloat16(), 3.0, rounding_mode="trunc")
    assert b.dtype == et.bfloat16 and b.float().tolist() == [[2.0, -2.0, -0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        et.div(i, et.tensor([1, 0, 1]), rounding_mode="trunc")
    with pytest.raises(NotImplementedError, match="Bool"):
        et.div(et.tensor([True]), et.tensor([True]), rounding_mode="trunc")
    with pytest.raises(NotImplementedError, match="Complex"):
        et.div(et.tensor([1 + 1j]), et.tensor([2 + 0j]), rounding_mode="trunc")
    with pytest.raises(RuntimeError, match="size"):
        et.div(et.ones(2, 3), et.ones(4), rounding_mode="trunc")
