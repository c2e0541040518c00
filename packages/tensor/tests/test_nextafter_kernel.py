"""The CPU nextafter kernel (``kernels/cpu/elementwise.py``) against NumPy's libm-based loop:
every pair of special values (zeros of both signs, infinities, NaN, extremes, subnormals),
float16 / float32 / float64, broadcasting, strided and 0-d operands, numbers."""
import numpy as np
import pytest

import ember.tensor as et
from ember.tensor.kernels.cpu import elementwise as E


def _c_nextafter(a, b):
    """C's (and PyTorch's) nextafter: ``b`` where ``a == b`` (NumPy's float16 gives ``a``)."""
    with np.errstate(all="ignore"):
        r = np.nextafter(a, b)
    return np.where((a == 0) & (b == 0), b, r)


def _same(r, ref):
    return r.shape == ref.shape and r.dtype == ref.dtype and bool(
        ((r == ref) & (np.signbit(r) == np.signbit(ref)) | (np.isnan(r) & np.isnan(ref))).all())


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_specials(dt):
    fi = np.finfo(dt)
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.max, -fi.max, fi.tiny,
                   -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, 2.0, -2.5], dt)
    a, b = np.repeat(sp, sp.size), np.tile(sp, sp.size)
    with np.errstate(all="raise"):  # no floating-point flag
        r = E.nextafter(a, b)
    assert _same(r, _c_nextafter(a, b))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_broadcast_strided_scalars(dt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7)).astype(dt)
    y = rng.standard_normal((7,)).astype(dt)
    cases = [(x, y), (y, x), (x, 1.0), (2.0, x), (x[:, ::2], y[::2]), (x.T, x.T[:, :1]),
             (np.asarray(dt(1)), np.asarray(dt(2))), (np.zeros((0, 3), dt), y[:3])]
    for a, b in cases:
        assert _same(E.nextafter(a, b), _c_nextafter(np.asarray(a, dt), np.asarray(b, dt)))
    with pytest.raises(ValueError):
        E.nextafter(x, y[:3])
    with pytest.raises(TypeError):
        E.nextafter(np.arange(3), np.arange(3))


def test_op_out_and_inplace():
    x = et.tensor([0.0, 1.0, -1.0, float("inf")], dtype=et.float32)
    y = et.tensor([-0.0, 2.0, -2.0, 0.0], dtype=et.float32)
    ref = _c_nextafter(x.numpy(), y.numpy())
    assert _same(et.nextafter(x, y).numpy(), ref)
    out = et.empty(4, dtype=et.float32)
    et.nextafter(x, y, out=out)
    assert _same(out.numpy(), ref)
    x.nextafter_(y)
    assert _same(x.numpy(), ref)
