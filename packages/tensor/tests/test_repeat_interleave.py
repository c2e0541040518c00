"""repeat_interleave as one repeat of the array: values, dtypes and layouts against NumPy's
repeat, the counts form, 0-d inputs, errors as PyTorch's."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et


def _data(shape, dtype, rng):
    a = rng.standard_normal(shape) * 5
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return et.tensor(a).to(getattr(et, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64"])
def test_repeat_interleave_matches_numpy(dtype):
    rng = np.random.default_rng(5)
    t = _data((3, 4), dtype, rng)
    a = t.numpy()
    for reps in (0, 1, 3):
        np.testing.assert_array_equal(et.repeat_interleave(t, reps).numpy(), np.repeat(a, reps))
        for dim in (0, 1, -1, -2):
            out = et.repeat_interleave(t, reps, dim)
            np.testing.assert_array_equal(out.numpy(), np.repeat(a, reps, dim))
            assert out.dtype == t.dtype
    counts = np.array([2, 0, 1])
    np.testing.assert_array_equal(et.repeat_interleave(t, et.tensor(counts), 0).numpy(),
                                  np.repeat(a, counts, 0))
    np.testing.assert_array_equal(et.repeat_interleave(t, et.tensor([2]), 1).numpy(),
                                  np.repeat(a, 2, 1))
    np.testing.assert_array_equal(et.repeat_interleave(t.t(), 2, 1).numpy(),
                                  np.repeat(a.T, 2, 1))
    np.testing.assert_array_equal(
        et.repeat_interleave(t, et.tensor(np.arange(12) % 3)).numpy(),
        np.repeat(a.reshape(-1), np.arange(12) % 3))


def test_repeat_interleave_of_counts_and_zero_dim_inputs():
    np.testing.assert_array_equal(et.repeat_interleave(et.tensor([1, 0, 3])).numpy(),
                                  [0, 2, 2, 2])
    assert et.repeat_interleave(et.tensor([2, 1]), output_size=3).tolist() == [0, 0, 1]
    s = et.tensor(2.5)
    assert et.repeat_interleave(s, 3).tolist() == [2.5, 2.5, 2.5]
    assert et.repeat_interleave(s, 2, 0).tolist() == [2.5, 2.5]
    assert et.repeat_interleave(et.ones(2, 3), 2, 1, output_size=6).shape == (2, 6)


def test_repeat_interleave_errors():
    x = et.ones(2, 3)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        et.repeat_interleave(x, -1)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        et.repeat_interleave(x, et.tensor([1, -1]), 0)
    with pytest.raises(RuntimeError, match=r"repeats.size\(0\) = 2 and input.size\(1\) = 3"):
        et.repeat_interleave(x, et.tensor([1, 2]), 1)
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 6 but got 5"):
        et.repeat_interleave(x, 2, 1, output_size=5)
    with pytest.raises(IndexError):
        et.repeat_interleave(x, 2, 2)
    with pytest.raises(NotImplementedError):
        et.repeat_interleave(x, et.tensor([1.0, 2.0]), 0)
    with pytest.raises(NotImplementedError):
        et.repeat_interleave(et.tensor([1.0, 2.0]))
