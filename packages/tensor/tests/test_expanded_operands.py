"""Elementwise ops on expanded operands (zero strides, as the gradient ``sum`` hands back) are
computed once per distinct element and broadcast into a new array: the values, dtypes and
shapes equal NumPy's on the same strided array, and the result owns its memory (a write to it
reaches no other element)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "erf",
         "reciprocal", "square", "floor", "sign", "expm1", "log1p"]
ORACLE = {"rsqrt": lambda a: 1 / np.sqrt(a), "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
          "erf": None, "neg": np.negative, "abs": np.abs}


def _expanded(dtype):
    base = np.linspace(0.25, 2.0, 3).astype(dtype).reshape(3, 1)
    return et.tensor(base).expand(3, 5), np.broadcast_to(base, (3, 5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_unary_of_expanded_equals_dense(name, dtype):
    t, a = _expanded(dtype)
    got = getattr(et, name)(t)
    want = getattr(et, name)(et.tensor(np.ascontiguousarray(a)))  # the contiguous path
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.dtype == want.dtype and got.shape == (3, 5)
    oracle = ORACLE.get(name, getattr(np, name, None))
    if oracle is not None:
        np.testing.assert_allclose(got.numpy(), oracle(a.astype(np.float64)),
                                   rtol=2e-6 if dtype == np.float32 else 1e-13)
    d = got._data
    assert d.flags.c_contiguous and d.flags.owndata or d.base is not None and \
        0 not in d.strides
    got[0, 0] = 100.0  # its own memory: the other elements keep their values
    assert got[0, 1].item() != 100.0


@pytest.mark.parametrize("op", ["mul", "add", "sub", "div", "pow"])
def test_expanded_with_a_number(op):
    t, a = _expanded(np.float32)
    got = getattr(et, op)(t, 2.5)
    want = {"mul": a * np.float32(2.5), "add": a + np.float32(2.5),
            "sub": a - np.float32(2.5), "div": a / np.float32(2.5),
            "pow": a ** np.float32(2.5)}[op]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert got.dtype == et.float32 and got._data.flags.c_contiguous


def test_expanded_from_a_0d_and_partially_expanded():
    s = et.tensor(0.5, dtype=et.float64).expand(2, 3, 4)
    np.testing.assert_array_equal(et.exp(s).numpy(), np.full((2, 3, 4), np.exp(0.5)))
    # a zero stride and an offset
    p = et.arange(4.0, dtype=et.float64).reshape(1, 4).expand(3, 4)[:, 1:]
    np.testing.assert_array_equal(et.tanh(p).numpy(), np.tanh(np.tile([1.0, 2.0, 3.0], (3, 1))))

