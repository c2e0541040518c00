"""The activation kernels of ``kernels/cpu/activation.py`` (Numba-compiled NumPy ufuncs):
sigmoid against a float64 (long double where there is one) reference over special values and a
dense grid, the output-based derivatives of sigmoid and tanh against their formulas, float16 and
bfloat16 through float32, broadcasting, 0-d inputs, and no floating-point warnings (this suite
turns warnings into errors; NumPy reports a ufunc's floating-point flags as warnings)."""
from __future__ import annotations

import numpy as np
import pytest

from ember.tensor.kernels import cpu
from ember.tensor.testing.op_table import np_dtype

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0, 20.0, -20.0, 88.0, -88.0, 100.0,
           -100.0, -103.0, -745.0, 1e-30, -1e-30, 5e-324]


def _sigmoid_ref(x):
    x = np.asarray(x, np.longdouble)
    with np.errstate(over="ignore", invalid="ignore"):  # the branch np.where drops
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_matches_the_reference_within_two_ulp(dtype):
    grid = np.concatenate([np.asarray(SPECIAL, np.float64),
                           np.linspace(-120, 40, 20001)]).astype(dtype)
    got = cpu.sigmoid(grid)
    assert got.dtype == dtype and got.shape == grid.shape
    ref = _sigmoid_ref(grid).astype(dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(grid))
    ok = ~np.isnan(grid)
    ulp = np.abs(got[ok].astype(np.float64) - ref[ok]) / np.spacing(np.abs(ref[ok]).astype(dtype))
    assert ulp.max() <= 2, (grid[ok][ulp.argmax()], got[ok][ulp.argmax()], ref[ok][ulp.argmax()])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_goes_through_float32(dtype):
    x = np.linspace(-12, 12, 97).astype(np_dtype(dtype))
    got = cpu.sigmoid(x)
    assert got.dtype == x.dtype
    want = cpu.sigmoid(x.astype(np.float32)).astype(x.dtype)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    g = np.ones_like(x)
    assert cpu.sigmoid_backward(g, got).dtype == x.dtype
    assert cpu.tanh_backward(g, got).dtype == x.dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_output_based_derivatives_follow_pytorchs_formulas(dtype):
    rng = np.random.default_rng(0)
    y = rng.uniform(-1, 1, (5, 7)).astype(dtype)
    g = rng.standard_normal((5, 7)).astype(dtype)
    # against the formulas in float64: each kernel rounds a few times (or fuses a multiply-add)
    eps = np.finfo(dtype).eps
    g64, y64 = g.astype(np.float64), y.astype(np.float64)
    tol = dict(rtol=4 * eps, atol=4 * eps * np.abs(g64).max())
    np.testing.assert_allclose(cpu.sigmoid_backward(g, y), g64 * ((1 - y64) * y64), **tol)
    np.testing.assert_allclose(cpu.tanh_backward(g, y), g64 * (1 - y64 * y64), **tol)
    row = g[:1]  # broadcasting, as the ufuncs do
    np.testing.assert_allclose(cpu.sigmoid_backward(row, y), g64[:1] * ((1 - y64) * y64), **tol)
    special = np.asarray(SPECIAL, dtype)
    out = cpu.sigmoid_backward(np.ones_like(special), cpu.sigmoid(special))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(special))


def test_zero_dim_inputs_give_zero_dim_arrays():
    for r in (cpu.sigmoid(np.float32(0.0).reshape(())),
              cpu.tanh_backward(np.ones((), np.float64), np.zeros((), np.float64))):
        assert isinstance(r, np.ndarray) and r.shape == ()
    assert float(cpu.sigmoid(np.zeros((), np.float32))) == 0.5


def test_other_dtypes_are_refused():
    with pytest.raises(TypeError, match="sigmoid"):
        cpu.sigmoid(np.arange(3))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_threshold_backward_is_pytorchs_where(dtype):
    """0 where y <= threshold, else the gradient: a NaN output passes its gradient and an
    infinite gradient at a cut element gives 0 (not NaN), with no floating-point warning."""
    dt = np_dtype(dtype)
    y = np.asarray([np.nan, -1.0, 0.0, 0.25, 2.0, -np.inf, np.inf], dtype=dt)
    g = np.asarray([5.0, np.inf, 7.0, -3.0, np.nan, 1.0, 2.0], dtype=dt)
    got = cpu.threshold_backward(g, y, 0.0)
    assert got.dtype == dt
    want = np.asarray([5.0, 0.0, 0.0, -3.0, np.nan, 0.0, 2.0])
    np.testing.assert_array_equal(got.astype(np.float64), want)
    # the threshold is compared in the array's dtype; broadcasting a row of outputs
    cut = cpu.threshold_backward(np.ones((3, 7), dt), y, 0.25)
    assert cut.shape == (3, 7)
    assert cut[:, 3].tolist() == [0.0] * 3 and cut[:, 4].tolist() == [1.0] * 3
    with pytest.raises(TypeError, match="threshold_backward"):
        cpu.threshold_backward(np.ones(3, np.int64), np.ones(3, np.int64), 0)


def _act_refs():
    """name -> (kernel arguments after the arrays, float64 reference of (x, g))."""
    def sig(x):
        return 1 / (1 + np.exp(-x))

    def relu6(t):
        return np.minimum(np.maximum(t, 0), 6)

    return {
        "silu": ((), lambda x, g: x * sig(x)),
        "silu_backward": ((), lambda x, g: g * sig(x) * (1 + x * (1 - sig(x)))),
        "softplus": ((2.0, 3.0), lambda x, g: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
        "softplus_backward": ((2.0, 3.0), lambda x, g: np.where(
            2 * x > 3, g, g * np.exp(2 * x) / (np.exp(2 * x) + 1))),
        "elu": ((0.7, 1.5, 0.5), lambda x, g: np.where(x <= 0, np.expm1(0.5 * x) * 1.05, 1.5 * x)),
        "hardsigmoid": ((), lambda x, g: relu6(x + 3) / 6),
        "hardsigmoid_backward": ((), lambda x, g: np.where((x > -3) & (x < 3), g / 6, 0)),
        "hardswish": ((), lambda x, g: x * relu6(x + 3) / 6),
        "hardswish_backward": ((), lambda x, g: np.where(
            x <= -3, 0, np.where(x < 3, g * (x / 3 + 0.5), g))),
        "mish": ((), lambda x, g: x * np.tanh(np.log1p(np.exp(x)))),
        "mish_backward": ((), lambda x, g: g * (np.tanh(np.log1p(np.exp(x))) + x * sig(x) * (
            1 - np.tanh(np.log1p(np.exp(x))) ** 2))),
        "log_sigmoid": ((), lambda x, g: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
        "log_sigmoid_backward": ((), lambda x, g: g * sig(-x)),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_act_refs()))
def test_activation_kernels_match_their_formulas(name, dtype):
    """Each kernel against its float64 formula on a grid across its pieces and the
    boundaries; a NaN input (its value is PyTorch's, checked in the parity tests; a compare
    with NaN raises NumPy's invalid flag, which the ops run under ``errstate``)."""
    extra, ref = _act_refs()[name]
    x = np.concatenate([np.linspace(-8, 8, 321), [-3.0, 3.0, 1.5, 0.0, -0.0]]).astype(dtype)
    g = np.cos(np.arange(x.size)).astype(dtype)
    args = (g, x) if name.endswith("_backward") else (x,)
    got = getattr(cpu, name)(*args, *extra)
    assert got.dtype == dtype and got.shape == x.shape
    want = ref(x.astype(np.float64), g.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-13,
                               atol=1e-6 if dtype == np.float32 else 1e-14)
    with np.errstate(invalid="ignore"):
        nan = getattr(cpu, name)(*((g[:1], np.asarray([np.nan], dtype)) if name.endswith(
            "_backward") else (np.asarray([np.nan], dtype),)), *extra)
    assert nan.shape == (1,) and nan.dtype == dtype


@pytest.mark.parametrize("name", ["softplus", "softplus_backward", "log_sigmoid", "elu"])
def test_flat_loop_kernels_take_any_layout(name):
    """The kernels that run as one loop over flattened arrays: strided, transposed, 0-d and
    (backward) broadcast operands give what the contiguous call gives."""
    extra, ref = _act_refs()[name]
    x = np.linspace(-9, 9, 6 * 35).reshape(6, 35)
    g = np.cos(x)
    k = getattr(cpu, name)
    for xv, gv in ((x[:, ::2], g[:, ::2]), (x.T, g.T), (x[2, 3], g[2, 3]), (x, g[:1]),
                   (x.astype(np.float32), g.astype(np.float32))):
        xv, gv = np.asarray(xv), np.asarray(gv)
        got = k(gv, xv, *extra) if name.endswith("_backward") else k(xv, *extra)
        want = ref(xv, np.broadcast_to(gv, np.broadcast_shapes(xv.shape, gv.shape)))
        assert got.shape == np.shape(want) and got.dtype == xv.dtype
        tol = 1e-13 if xv.dtype == np.float64 else 1e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elu_kernel_is_expm1_within_two_ulp(dtype):
    """The series below ln 2 and exp(t) - 1 above, against expm1 in long double, on both
    sides of the switch, the tails and the specials."""
    x = np.concatenate([np.linspace(-3, 3, 20001), -np.logspace(-30, 2, 400),
                        [-0.6931, -0.6932, -0.0, 0.0]]).astype(dtype)
    got = cpu.elu(x, 1.3, 1.05, 0.7)
    lx = x.astype(np.longdouble)
    want = np.where(lx <= 0, np.expm1(lx * dtype(0.7)) * dtype(1.3 * 1.05), lx * dtype(1.05))
    err = np.abs(got - want) / np.spacing(np.abs(want).astype(dtype))
    assert err.max() <= 2.0
    specials = cpu.elu(np.array([np.nan, np.inf, -np.inf], dtype), 1.3, 1.05, 0.7)
    np.testing.assert_array_equal(specials, np.array([np.nan, np.inf, -1.3 * 1.05], dtype))
    g = np.cos(x)
    for is_result in (False, True):  # the backward's float32 / float64 loops
        v = got if is_result else x
        want = np.where(x <= 0, g * 0.7 * (np.expm1(0.7 * lx) * 1.3 * 1.05 + 1.3 * 1.05),
                        g * 1.05)
        np.testing.assert_allclose(cpu.elu_backward(g, 1.3, 1.05, 0.7, is_result, v), want,
                                   rtol=4 * np.finfo(dtype).eps, atol=1e-6)


@pytest.mark.parametrize("is_result", [False, True])
def test_elu_backward_kernel_from_input_or_output(is_result):
    x = np.linspace(-5, 5, 101)
    g = np.sin(x)
    alpha, scale, input_scale = 1.3, 0.9, 0.6
    y = np.where(x <= 0, np.expm1(input_scale * x) * alpha * scale, scale * x)
    want = np.where(x <= 0, g * input_scale * alpha * scale * np.exp(input_scale * x), g * scale)
    got = cpu.elu_backward(g, alpha, scale, input_scale, is_result, y if is_result else x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
