"""Writing a Python number into a tensor, ember against PyTorch: ``x[i] = v``, ``fill_``,
``full``, ``index_fill``, ``masked_fill``, ``scatter`` and ``where(cond, number, tensor)``, over
every integer, bool and float32/float64 dtype and values at and beyond each dtype's range
(negative ints into unsigned dtypes, fractions, NaN, infinities, ints past int64). The written
value, or the exception type, must be PyTorch's. (float16 is left out: PyTorch refuses some
finite values beyond its range and rounds others to inf.)"""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]
VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, -255, -256, 300, 32767, 32768, -32769,
          2**31 - 1, 2**31, 2**63 - 1, -2**63, 2.7, -2.7, 255.9, -0.5, 1e10, 1e39, -1e39,
          math.nan, math.inf, -math.inf, True, False, 2**63, 2**64 - 1, 2**64, -2**63 - 1]
def _setitem(T, x, v):
    x[0] = v
    return x


WRITES = {
    "setitem": _setitem,
    "fill_": lambda T, x, v: x.fill_(v),
    "full": lambda T, x, v: T.full((2,), v, dtype=x.dtype),
    "index_fill": lambda T, x, v: x.index_fill(0, T.tensor([0]), v),
    "masked_fill": lambda T, x, v: x.masked_fill(T.tensor([True, False]), v),
    "scatter": lambda T, x, v: x.scatter(0, T.tensor([0]), v),
    "where": lambda T, x, v: T.where(T.tensor([True, False]), v, x),
}


def _outcome(T, write, dtype, v):
    x = T.zeros(2, dtype=getattr(T, dtype))
    try:
        out = WRITES[write](T, x, v)
    except (RuntimeError, ValueError, OverflowError, TypeError) as e:
        return type(e)
    return out.tolist()


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_writes_match_pytorch(write, dtype):
    for v in VALUES:
        want = _outcome(torch, write, dtype, v)
        got = _outcome(et, write, dtype, v)
        if isinstance(want, list) and isinstance(got, list):
            same = all(a == b or (a != a and b != b) for a, b in zip(want, got))
            assert same, f"{write} {v!r} into {dtype}: {got} vs PyTorch's {want}"
        else:
            assert got == want, f"{write} {v!r} into {dtype}: {got} vs PyTorch's {want}"


@pytest.mark.parametrize("a,b", [(1.5, 0.5), (1, 2), (1, 2.5), (True, False), (-3, 2**40)])
def test_where_of_two_numbers_matches_pytorch(a, b):
    got = et.where(et.tensor([True, False]), a, b)
    want = torch.where(torch.tensor([True, False]), a, b)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()
