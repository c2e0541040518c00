"""Tensor-core results that must raise or stay exact (issue 21, items 7, 10, 12, 14)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et


def test_float32_cumsum_accumulates_in_double():  # item 7
    assert et.cumsum(et.full((1_000_000,), 0.1), 0)[-1].item() == pytest.approx(100000, abs=1e-3)
    out = et.cumsum(et.full((3,), 0.5, dtype=et.float32), 0)
    assert out.dtype == et.float32 and out.tolist() == [0.5, 1.0, 1.5]
    assert et.cumprod(et.full((4,), 2.0), 0).tolist() == [2.0, 4.0, 8.0, 16.0]


@pytest.mark.parametrize("op", [lambda a, b: a // b, lambda a, b: a % b,
                                lambda a, b: et.fmod(a, b), lambda a, b: et.remainder(a, b),
                                lambda a, b: et.div(a, b, rounding_mode="floor"),
                                lambda a, b: et.div(a, b, rounding_mode="trunc")])
@pytest.mark.parametrize("divisor", [et.tensor([0, 1]), 0])
def test_integer_division_by_zero_raises(op, divisor):  # item 10
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(et.tensor([5, 3]), divisor)


def test_integer_division_in_place_by_zero_raises_and_leaves_the_tensor():
    a = et.tensor([5, 3])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a.floor_divide_(et.tensor([0, 1]))
    assert a.tolist() == [5, 3]


def test_float_division_by_zero_still_gives_inf_and_nan():
    assert et.tensor([1.0]).floor_divide(0).tolist() == [float("inf")]
    assert np.isnan(et.remainder(et.tensor([1.0]), 0).item())


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1e30])
def test_full_with_an_unrepresentable_integer_fill_raises(value):  # item 10
    with pytest.raises(RuntimeError, match="without overflow"):
        et.full((2,), value, dtype=et.int64)


def test_full_integer_fill_truncates_like_pytorch():
    assert et.full((2,), 1.5, dtype=et.int64).tolist() == [1, 1]
    assert et.full((1,), 255, dtype=et.uint8).tolist() == [255]
    with pytest.raises(RuntimeError):
        et.full((1,), 256, dtype=et.uint8)


def test_integer_addcdiv_is_refused():  # item 10
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        et.addcdiv(et.tensor([1, 2]), et.tensor([1, 2]), et.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        et.tensor([1.0, 2.0]).addcdiv_(et.tensor([1, 2]), et.tensor([1, 2]))
    assert et.addcdiv(et.tensor([1.0]), et.tensor([1]), et.tensor([2.0])).tolist() == [1.5]


def test_grad_of_another_shape_dtype_or_type_is_refused():  # item 12
    p = et.randn(3)
    with pytest.raises(RuntimeError, match="size"):
        p.grad = et.randn(1)
    with pytest.raises(RuntimeError, match="dtype"):
        p.grad = et.randn(3, dtype=et.float64)
    with pytest.raises(TypeError):
        p.grad = [0.0, 0.0, 0.0]
    p.grad = et.ones(3)
    assert p.grad.tolist() == [1.0, 1.0, 1.0]
    p.grad = None
    assert p.grad is None
    p.grad = et.ones(3)
    del p.grad
    assert p.grad is None


def test_huge_allocation_is_a_runtime_error():  # item 14
    with pytest.raises(RuntimeError, match="allocate") as info:
        et.empty(10**13)
    assert isinstance(info.value, MemoryError)  # a MemoryError handler still catches it
    with pytest.raises(RuntimeError, match="zeros"):
        et.zeros(10**7, 10**7)


def test_lerp_shape_mismatch_names_the_op_and_shapes():  # item 14
    with pytest.raises(RuntimeError, match=r"lerp\(\).*\[3\] and \[4\]"):
        et.lerp(et.randn(3), et.randn(4), 0.5)
    with pytest.raises(RuntimeError, match="lerp"):
        et.lerp(et.randn(3), et.randn(3), et.randn(4))
    with pytest.raises(RuntimeError, match="dtype"):
        et.lerp(et.randn(3), et.randn(3, dtype=et.float64), 0.5)
    assert et.lerp(et.zeros(2), et.ones(2), 0.25).tolist() == [0.25, 0.25]


def test_ldl_solve_refuses_out_of_range_pivots():  # found by the bad-input differential
    a = et.tensor([[4.0, 1.0], [1.0, 3.0]])
    ld, piv = et.linalg.ldl_factor(a)
    b = et.ones(2, 1)
    np.testing.assert_allclose((a @ et.linalg.ldl_solve(ld, piv, b)).numpy(), b.numpy(),
                               rtol=1e-5)
    for bad in ([1, 10_000], [0, 2], [-10_000, 2]):
        with pytest.raises(RuntimeError, match="ldl_solve"):
            et.linalg.ldl_solve(ld, et.tensor(bad, dtype=et.int32), b)


def test_tensor_of_python_numbers_beyond_a_dtype_like_pytorch():
    # a float beyond the dtype's range is inf, with no warning (this suite turns warnings into
    # errors); an int beyond int64's range is PyTorch's ValueError, one beyond a smaller
    # integer dtype's its RuntimeError
    assert et.tensor([1e308, -1e308]).tolist() == [float("inf"), -float("inf")]
    assert et.tensor([[1e39]], dtype=et.float16).tolist() == [[float("inf")]]
    assert et.tensor([2**70], dtype=et.float32).item() == np.float32(2**70)
    for data, dtype in (([2**63], None), ([1, [2**64]][1:], et.int32), ([-2**63 - 1], et.int64)):
        with pytest.raises(ValueError, match=r"^tensor\(\): Overflow when unpacking long long"):
            et.tensor(data, dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        et.tensor([300], dtype=et.uint8)
