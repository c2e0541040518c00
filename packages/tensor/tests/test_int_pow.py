"""Integer powers: an integer tensor to integer tensor exponents, some negative (NumPy refuses
them; PyTorch gives what integer arithmetic gives: 1 for a base of 1, -1 or 1 for a base of -1
by the exponent's parity, 0 for any other base), and a Python int exponent below zero, which
PyTorch refuses. Oracle: Python's integer arithmetic, truncated as C's integer pow."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember.tensor as et


def _c_pow(b: int, e: int) -> int:
    if e >= 0:
        return b ** e
    return 1 if b == 1 else (-1 if e % 2 else 1) if b == -1 else 0


BASES = [0, 1, -1, 2, -2, 3, -7, 5]
EXPS = [-3, -2, -1, 0, 1, 2, 3, -4]


@pytest.mark.parametrize("bdt,edt", list(itertools.product(["int64", "int32", "int8"],
                                                           ["int64", "int32"])))
def test_integer_tensor_to_negative_tensor_exponents(bdt, edt):
    b = et.tensor(BASES, dtype=getattr(et, bdt))
    e = et.tensor(EXPS, dtype=getattr(et, edt))
    want = np.array([_c_pow(x, y) for x, y in zip(BASES, EXPS)]).astype(
        np.result_type(np.dtype(bdt), np.dtype(edt)))
    for r in (et.pow(b, e), b ** e, b.pow(e)):
        np.testing.assert_array_equal(r.numpy(), want)
        assert r.numpy().dtype == want.dtype
    x = b.clone()
    x.pow_(e)
    np.testing.assert_array_equal(x.numpy(), want.astype(np.dtype(bdt)))


def test_python_int_base_and_broadcast():
    e = et.tensor([[-1, 0], [2, -2]])
    np.testing.assert_array_equal(et.pow(2, e).numpy(), [[0, 1], [4, 0]])
    np.testing.assert_array_equal(et.pow(-1, e).numpy(), [[-1, 1], [1, 1]])
    np.testing.assert_array_equal(et.pow(et.tensor([1, -1]), e).numpy(), [[1, 1], [1, 1]])


def test_errors_stay_pytorch_s():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        et.pow(et.tensor([2, 3]), -1)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        et.tensor([2, -1, 3]).pow_(et.tensor([[-1, 1, 1]] * 2))


def test_nonnegative_and_float_paths_unchanged():
    np.testing.assert_array_equal(et.pow(et.tensor([2, 3]), et.tensor([3, 2])).numpy(), [8, 9])
    np.testing.assert_allclose(et.pow(et.tensor([2.0, 4.0]), et.tensor([-1, -2])).numpy(),
                               [0.5, 0.0625])
