"""``addcmul`` / ``addcdiv``: the one-pass CPU kernel (float32 / float64 operands of one dtype
and a number ``value``) against NumPy over every row form (whole, row, column, one value, a
strided operand, an operand that broadcasts over several dims), IEEE specials included, and
the other dtypes' steps (``mul`` / ``div`` and ``add``)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et

SHAPES = [((4, 6), (4, 6), (4, 6)), ((4, 6), (4, 6), (6,)), ((4, 6), (4, 1), (6,)),
          ((4, 1), (1, 6), (4, 6)), ((), (5,), (3, 5)), ((2, 3, 4), (3, 1), (2, 1, 4)),
          ((2, 1, 4), (1, 3, 1), (4,)), ((0, 3), (3,), (1, 3)), ((7,), (), ())]


def _ref(x, a, b, value, div):
    """PyTorch's rounding: ``value * a`` in the dtype, then ``* b + x`` rounded once (float32:
    exact in float64, then rounded; float64: within an ulp) or ``/ b`` and ``+ x``."""
    va = np.asarray(value, x.dtype) * a
    with np.errstate(all="ignore"):
        if div:
            return x + va / b
        return (x.astype(np.float64) + va.astype(np.float64) * b).astype(x.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("div", [False, True])
@pytest.mark.parametrize("value", [1, 0.3, -2])
def test_matches_numpy(dtype, shapes, div, value):
    rng = np.random.default_rng(0)
    x, a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    if div:
        b = b + np.where(b < 0, -0.5, 0.5).astype(dtype)
    f = et.addcdiv if div else et.addcmul
    got = f(et.tensor(x), et.tensor(a), et.tensor(b), value=value).numpy()
    want = _ref(x, a, b, value, div)
    assert got.shape == want.shape and got.dtype == want.dtype
    if dtype == "float32":
        np.testing.assert_array_equal(got, want)
    else:
        # (fused or not: the roundings differ by an ulp of the terms, not of the sum)
        q = np.abs(np.asarray(value, dtype) * a)
        scale = np.abs(x) + (q / np.abs(b) if div else q * np.abs(b))
        assert np.all(np.abs(got - want) <= 4e-16 * scale)


@pytest.mark.parametrize("div", [False, True])
def test_strided_operands_and_specials(div):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    a = rng.standard_normal((8, 5)).astype(np.float32)
    b = rng.standard_normal((5, 16)).astype(np.float32)
    x[0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    a[:4, 1] = [1.0, np.inf, 0.0, np.nan]
    b[1, ::2][:4] = [0.0, -np.inf, np.inf, -0.0]
    ta, tb = et.tensor(a).t(), et.tensor(b)[:, ::2]  # views, not C-contiguous
    got = (et.addcdiv if div else et.addcmul)(et.tensor(x), ta, tb, value=0.5).numpy()
    want = _ref(x, a.T, b[:, ::2], 0.5, div)
    np.testing.assert_array_equal(got, want)


def test_other_dtypes_take_the_steps():
    x = et.tensor([1, 2, 3])
    assert et.addcmul(x, x, x, value=2).tolist() == [3, 10, 21]
    h = et.tensor([1.0, 2.0], dtype=et.float16)
    assert et.addcmul(h, h, h, value=0.5).dtype == et.float16
    assert et.addcmul(et.tensor([1.0]), et.tensor([2], dtype=et.float64),
                      et.tensor([3.0])).dtype == et.float64
    np.testing.assert_allclose(et.addcdiv(et.tensor([1.0, 2.0]), et.tensor([1, 2]),
                                          et.tensor([4.0, 4.0]), value=2).numpy(), [1.5, 3.0])
    with pytest.raises(RuntimeError, match="Integer division"):
        et.addcdiv(x, x, x)
    with pytest.raises(RuntimeError):
        et.addcmul(et.zeros(2, 3), et.zeros(4), et.zeros(3))


def test_inplace_writes_into_input():
    x = et.ones(2, 3)
    r = x.addcmul_(et.full((3,), 2.0), et.full((2, 1), 3.0), value=0.5)
    assert r is x and x.tolist() == [[4.0] * 3] * 2
    with pytest.raises(RuntimeError):
        et.ones(3).addcmul_(et.ones(2, 3), et.ones(3))
    with pytest.raises(RuntimeError):
        et.ones(3, dtype=et.int64).addcdiv_(et.ones(3), et.ones(3))
