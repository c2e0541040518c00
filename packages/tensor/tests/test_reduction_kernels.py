"""sum, mean, var/std, norm, linalg.vector_norm and logsumexp of float32 / float64 tensors on
the reduction kernels of ``kernels/cpu/reduce.py``, against float64 NumPy.

The kernels take C-contiguous inputs (or permutations of one, e.g. a transpose) reduced over
adjacent dims and sums of at least ``_SUM_KERNEL_MIN`` elements; the other cases stay on NumPy.
Both sides are covered here: long rows and columns, a 10M-element sum, NaN / inf, empty
reductions, keepdim, dim tuples, negative dims, strided inputs, ``dtype=``, integer, bool,
float16 and complex inputs. The tolerances are ones PyTorch's float32 cascade sums meet (its
results on the same data are within 1e-7 of float64, its 2-norm of 10M elements within 3e-4).
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _reduction as R
from ember.tensor.kernels.cpu import reduce as K

F32_RTOL = 1e-6


def _np(t):
    return np.asarray(t._data)


def _ref(op, a, dim=None, keepdim=False):
    """float64 NumPy reference of ``op`` over ``dim`` (None: all dims)."""
    x = a.astype(np.float64)
    axis = None if dim is None else dim
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "sum":
            return x.sum(axis=axis, keepdims=keepdim)
        if op == "mean":
            return x.mean(axis=axis, keepdims=keepdim)
        if op == "var":
            return x.var(axis=axis, ddof=1, keepdims=keepdim)
        if op == "std":
            return x.std(axis=axis, ddof=1, keepdims=keepdim)
        if op == "norm":
            return np.sqrt((x * x).sum(axis=axis, keepdims=keepdim))
        if op == "norm1":
            return np.abs(x).sum(axis=axis, keepdims=keepdim)
        if op == "logsumexp":
            m = np.max(x, axis=axis, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            r = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
            return r if keepdim else np.squeeze(r, axis=axis)
    raise AssertionError(op)


def _run(op, t, dim=None, keepdim=False):
    kw = {} if dim is None else {"dim": dim}
    if op == "norm":
        return et.norm(t, **kw, keepdim=keepdim)
    if op == "norm1":
        return et.linalg.vector_norm(t, 1, **kw, keepdim=keepdim)
    if op == "logsumexp":
        return et.logsumexp(t, dim if dim is not None else tuple(range(t.dim())), keepdim)
    return getattr(et, op)(t, **kw, keepdim=keepdim)


def _check(got, ref, dtype, rtol=None, atol=0.0):
    got = _np(got)
    assert got.dtype == dtype
    assert got.shape == np.shape(ref)
    rtol = rtol or (F32_RTOL if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)


OPS = ["sum", "mean", "var", "std", "norm", "norm1", "logsumexp"]


# --------------------------------------------------------------------------- accuracy
@pytest.mark.parametrize("dist", ["uniform", "shifted normal"])
def test_ten_million_element_sum(dist):
    rng = np.random.default_rng(0)
    a = (rng.random(10_000_000) if dist == "uniform"
         else rng.standard_normal(10_000_000) + 1).astype(np.float32)
    t = et.tensor(a)
    _check(et.sum(t), _ref("sum", a), np.float32)
    _check(et.mean(t), _ref("mean", a), np.float32)
    _check(et.var(t), _ref("var", a), np.float32)
    _check(et.norm(t), _ref("norm", a), np.float32)
    _check(et.logsumexp(t, 0), _ref("logsumexp", a, 0), np.float32)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_and_columns_of_1e5(op, dtype):
    rng = np.random.default_rng(1)
    a = rng.random((6, 100_000)).astype(dtype) + 0.5
    _check(_run(op, et.tensor(a), 1), _ref(op, a, 1), dtype)
    # columns: 1e5 rows summed per column (a sequential float32 sum would lose 1e-5 here)
    c = np.ascontiguousarray(a.T)
    _check(_run(op, et.tensor(c), 0), _ref(op, c, 0), dtype)


def test_variance_of_data_with_a_large_mean():
    rng = np.random.default_rng(2)
    for shape, dim in [((4, 3000), 1), ((3000, 4), 0), ((3, 5000), 1)]:
        a = (1e4 + rng.standard_normal(shape)).astype(np.float32)
        _check(et.var(et.tensor(a), dim), _ref("var", a, dim), np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("value", [0.1, 1e30, -3.7e-20])
def test_constant_data_has_zero_variance(dtype, value):
    # PyTorch's Welford gives exactly 0 (and std's gradient 0); so do the kernels, on one
    # block, on several blocks (rows longer than 2048) and on columns
    for shape, dim in [((3, 1000), 1), ((2, 5000), 1), ((700, 5), 0), ((9000,), 0)]:
        a = np.full(shape, value, dtype)
        assert not _np(et.var(et.tensor(a), dim)).any()
        assert not _np(et.std(et.tensor(a), dim)).any()


# --------------------------------------------------------------------------- layouts
SHAPES = [(4, 64), (64, 96), (3, 40, 50), (2, 3, 4, 700)]
DIMS = [None, 0, -1, 1, (0, 1), (-1, -2), (0, -1), ()]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_dims_keepdim_and_layouts(shape, op):
    # contiguous, transposed (a permutation: the kernels in memory order) and step-sliced
    # (NumPy); every valid dim form, with and without keepdim
    rng = np.random.default_rng(3)
    base = rng.standard_normal(shape[::-1]).astype(np.float32)
    layouts = {"contiguous": np.ascontiguousarray(base.T), "transposed": base.T,
               "sliced": np.repeat(base.T, 2, axis=-1)[..., ::2]}
    for name, a in layouts.items():
        t = et.tensor(a) if name == "contiguous" else R._make(a)
        for dim in DIMS:
            if isinstance(dim, int) and dim >= a.ndim:
                continue
            if op == "norm" and dim == ():
                continue
            if isinstance(dim, tuple) and len({d % a.ndim for d in dim}) < len(dim):
                continue
            for keepdim in (False, True):
                axis = (None if dim is None or dim == () else
                        tuple(d % a.ndim for d in dim) if isinstance(dim, tuple) else dim)
                got = _run(op, t, dim, keepdim)
                # standard normal data: sums that cancel get an absolute tolerance
                _check(got, _ref(op, a, axis, keepdim), np.float32, 1e-5, 1e-5)
                if name == "transposed" and isinstance(dim, int) and (op != "sum" or
                                                                     a.size >= R._SUM_KERNEL_MIN):
                    assert _np(got).flags.c_contiguous  # the kernels' result, as PyTorch's


def test_which_inputs_run_on_the_kernels():
    a = np.zeros((64, 96), np.float32)
    assert R._on_kernel("sum", a, 1, False, "sum_reduce", 0) is not None
    assert R._on_kernel("sum", a.T, 1, False, "sum_reduce", 0) is not None  # a transpose
    assert R._on_kernel("mean", a[:, ::2], 1, False, "sum_reduce", 1) is None  # strided
    b = np.zeros((8, 9, 70), np.float32)
    b[...] = np.arange(70, dtype=np.float32)
    # dims not adjacent: run by run for the sums and means, not for the variance
    assert R._on_kernel("sum", b, (0, 2), False, "sum_reduce", 0).tolist() == [8 * 2415] * 9
    assert R._on_kernel("var", b, (0, 2), False, "var_reduce", 1.0) is None
    assert R._on_kernel("sum", b.astype(np.float16), 1, False, "sum_reduce", 0) is None
    assert R._on_kernel("sum", np.zeros(3, np.int64), 0, False, "sum_reduce", 0) is None
    # a small sum: NumPy's add.reduce (no Numba call), with the same result
    small = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert R._on_kernel("sum", small, 0, False, "sum_reduce", 0).tolist() == [12, 15, 18, 21]
    assert R._plans[((3, 4), 0, False, "sum")][0] is None


def test_a_small_sum_loads_no_numba():
    # (the input from NumPy: ember's float arange is a Numba kernel of its own)
    code = ("import sys, numpy as np, ember.tensor as et; "
            "x = et.from_numpy(np.arange(15.).reshape(3, 5)); "
            "x.sum(); x.sum(1); x.sum((0, 1), keepdim=True); x.t().sum(0); "
            "print([m for m in sys.modules if m.split('.')[0] == 'numba'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_bad_dims_raise_every_time():
    # a plan is memoized only after its dims were checked: the same bad call raises again
    t = et.tensor(np.zeros((64, 96), np.float32))
    for _ in range(2):
        with pytest.raises(IndexError, match="Dimension out of range"):
            et.sum(t, 2)
        with pytest.raises(TypeError, match="must be int"):
            et.mean(t, True)
        with pytest.raises(RuntimeError, match="appears multiple times"):
            et.sum(t, (1, -1))


# --------------------------------------------------------------------------- special values
@pytest.mark.parametrize("shape,dim", [((5, 3000), 1), ((3000, 5), 0), ((2, 5000), 1)])
def test_nan_and_inf_propagate(shape, dim):
    a = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    idx = (slice(None), 7) if dim == 1 else (7, slice(None))
    a[idx] = [np.nan, np.inf, -np.inf, 1.0, np.inf][:a[idx].shape[0]]
    if dim == 1:
        a[1, 9] = -np.inf  # +inf and -inf in one row: NaN
    t = et.tensor(a)
    for op in ("sum", "mean", "var", "norm", "logsumexp"):
        _check(_run(op, t, dim), _ref(op, a, dim), np.float32, 1e-5, 1e-4)


def test_logsumexp_of_infinite_rows():
    a = np.array([[-np.inf] * 3000, [np.inf] + [0.0] * 2999, [np.nan] + [1.0] * 2999],
                 np.float32)
    np.testing.assert_array_equal(_np(et.logsumexp(et.tensor(a), 1)), [-np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(_np(et.logsumexp(et.tensor(a.T.copy()), 0)),
                                  [-np.inf, np.inf, np.nan])


def test_empty_reductions():
    for shape, dim in [((5000, 0), 1), ((0, 5000), 0), ((3, 0, 2000), 1)]:
        a = np.zeros(shape, np.float32)
        t = et.tensor(a)
        n = a.shape[dim] if dim is not None else a.size
        assert n == 0
        np.testing.assert_array_equal(_np(et.sum(t, dim)), a.sum(dim))
        assert np.isnan(_np(et.mean(t, dim))).all()
        with pytest.warns(UserWarning, match="degrees of freedom"):
            assert np.isnan(_np(et.var(t, dim))).all()
        np.testing.assert_array_equal(_np(et.norm(t, dim=dim)), a.sum(dim))
        assert _np(et.sum(t, dim)).shape == a.sum(dim).shape


def test_degrees_of_freedom_at_most_zero():
    a = np.random.default_rng(5).standard_normal((3, 5000)).astype(np.float32)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        v = _np(et.var(et.tensor(a), 1, correction=5000))
    assert np.isinf(v).all()
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert np.isnan(_np(et.var(et.tensor(a[:, :1].copy()), 1))).all()


# --------------------------------------------------------------------------- other dtypes
def test_dtype_argument_and_other_dtypes():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 100)).astype(np.float32)
    r = et.sum(et.tensor(a), 1, dtype=et.float64)
    assert _np(r).dtype == np.float64
    np.testing.assert_allclose(_np(r), a.astype(np.float64).sum(1), rtol=1e-12)
    r = et.mean(et.tensor(a), dtype=et.float64)
    np.testing.assert_allclose(_np(r), a.astype(np.float64).mean(), rtol=1e-12)
    i = rng.integers(-5, 6, (64, 100)).astype(np.int32)
    assert _np(et.sum(et.tensor(i), 1)).dtype == np.int64
    np.testing.assert_array_equal(_np(et.sum(et.tensor(i), 1)), i.sum(1, dtype=np.int64))
    b = i > 0
    np.testing.assert_array_equal(_np(et.sum(et.tensor(b))), b.sum())
    h = a.astype(np.float16)
    for op in ("sum", "mean", "var", "norm", "logsumexp"):
        got = _run(op, et.tensor(h), 1)
        assert _np(got).dtype == np.float16
        np.testing.assert_allclose(_np(got).astype(np.float64),
                                   _ref(op, h.astype(np.float32), 1), rtol=2e-3, atol=1e-2)
    c = (a + 1j * rng.standard_normal(a.shape)).astype(np.complex64)
    np.testing.assert_allclose(_np(et.sum(et.tensor(c), 1)), c.astype(np.complex128).sum(1),
                               rtol=1e-5)
    np.testing.assert_allclose(_np(et.var(et.tensor(c), 1)),
                               c.astype(np.complex128).var(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(_np(et.norm(et.tensor(c), dim=1)),
                               np.abs(c.astype(np.complex128)).__pow__(2).sum(1) ** 0.5,
                               rtol=1e-5)


# --------------------------------------------------------------------------- the kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_directly(dtype):
    rng = np.random.default_rng(7)
    for shape in [(1, 1, 1), (3, 7, 1), (2, 2048, 1), (2, 2049, 1), (1, 5000, 1), (2, 3, 4),
                  (3, 130, 17), (2, 0, 3), (2, 0, 1), (0, 4, 1)]:
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        x64 = x.astype(np.float64)
        out = np.empty(shape[0] * shape[2], dtype)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refs = [x64.sum(1), x64.mean(1), np.abs(x64).sum(1), np.sqrt((x64 ** 2).sum(1))]
            refv = x64.var(1, ddof=1) if shape[1] > 1 else np.full(out.shape, np.nan)
        for mode, ref in enumerate(refs):
            K.sum_reduce(x, out, mode)
            np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, equal_nan=True)
        K.var_reduce(x, out, 1.0)
        np.testing.assert_allclose(out, refv.reshape(-1), rtol=1e-5, equal_nan=True)
        if shape[1]:
            K.logsumexp_reduce(x, out)
            m = x64.max(1, keepdims=True)
            ref = np.log(np.exp(x64 - m).sum(1)) + m[:, 0]
            np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((256, 1024), 1), ((256, 1024), 0), ((3, 4, 5), 1),
                                       ((4, 64), None), ((0, 3), 1), ((3, 0), 1), ((5,), 0)])
def test_prod_kernel_against_float64_numpy(dtype, shape, dim):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.9, 1.1, shape).astype(dtype)
    got = et.prod(et.tensor(x), dim).numpy() if dim is not None else et.prod(et.tensor(x)).numpy()
    ref = np.prod(x.astype(np.float64), axis=dim)
    assert got.dtype == dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=3e-5 if dtype == np.float32 else 1e-13)
    # through the kernel: transposed input, keepdim
    got_t = et.prod(et.tensor(x).t(), 0, keepdim=True).numpy() if x.ndim == 2 else None
    if got_t is not None:
        np.testing.assert_allclose(got_t, np.prod(x.T.astype(np.float64), 0, keepdims=True),
                                   rtol=3e-5 if dtype == np.float32 else 1e-13)


def test_prod_kernel_nan_inf_zero():
    from ember.tensor.kernels.cpu import reduce as kr

    x = np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, 1.0], [np.inf, -2.0, 1.0], [-0.0, 1.0, 1.0]],
                 np.float32)
    out = np.empty(4, np.float32)
    kr.prod_reduce(x.reshape(4, 3, 1), out)
    np.testing.assert_array_equal(out, [np.nan, np.nan, -np.inf, -0.0])
    assert np.signbit(out[3])
    cols = np.empty(3, np.float32)
    kr.prod_reduce(x.reshape(1, 4, 3), cols)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(cols, np.prod(x, 0))
    assert et.prod(et.tensor([[1e30, 1e30]]), 1).item() == float("inf")  # no warning, inf


@pytest.mark.parametrize("op", ["sum", "mean", "nansum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_over_dims_that_are_not_adjacent(op, dtype):
    """Reductions over several runs of dims (the per-channel sums over (0, 2, 3) of NCHW) run
    run by run on the kernels: equal to NumPy's in float64 within the dtype's rounding, on
    C-contiguous and transposed inputs, with and without keepdim."""
    rng = np.random.default_rng(4)
    a = (rng.random((4, 3, 5, 6)) + 0.5).astype(dtype)
    if op == "nansum":
        a[rng.random(a.shape) < 0.1] = np.nan
    ref = {"sum": np.sum, "mean": np.mean, "nansum": np.nansum}[op]
    rtol = 2e-6 if dtype == np.float32 else 1e-13
    for x in (a, a.transpose(0, 2, 1, 3), a.transpose(3, 1, 0, 2)):
        for dims in ((0, 2, 3), (0, 2), (1, 3), (0, 3), (0, 1, 3)):
            for keepdim in (False, True):
                got = getattr(et, op)(et.tensor(x), dims, keepdim)
                want = ref(x.astype(np.float64), axis=dims, keepdims=keepdim)
                assert got.dtype == et.tensor(x).dtype and tuple(got.shape) == want.shape
                assert got.numpy().flags.c_contiguous
                np.testing.assert_allclose(got.numpy(), want, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape,dim", [((5, 7), 1), ((5, 7), 0), ((3, 6, 4), 1), ((1, 9, 1), 1)])
def test_max_min_dim_kernel_against_numpy_argmax(dtype, shape, dim):
    # extreme_dim: the first maximum / minimum and its index; ties (few distinct values) and
    # NaN (the first NaN wins) as NumPy's argmax / argmin
    rng = np.random.default_rng(7)
    a = rng.integers(-2, 3, size=shape)
    a = (a > 0) if dtype == "bool" else a.astype(dtype)
    if a.dtype.kind == "f":
        a[rng.random(shape) < 0.15] = np.nan
    for largest, fn, arg in ((True, et.max, np.argmax), (False, et.min, np.argmin)):
        for t, x in ((et.tensor(a), a), (et.tensor(a.T.copy()).T, a)):
            r = fn(t, dim)
            ref_i = arg(x.astype(np.float32) if dtype == "float16" else x, axis=dim)
            ref_v = np.take_along_axis(x, np.expand_dims(ref_i, dim), dim).squeeze(dim)
            assert _np(r.indices).dtype == np.int64
            np.testing.assert_array_equal(_np(r.indices), ref_i)
            assert _np(r.values).dtype == a.dtype
            np.testing.assert_array_equal(_np(r.values), ref_v)
        if a.ndim == 3:  # the kernel itself: (P, M, Q) in, (P, Q) out
            v, i = K.extreme_dim(a, largest)
            ref_i = arg(a.astype(np.float32) if dtype == "float16" else a, axis=1)
            np.testing.assert_array_equal(i, ref_i)
            np.testing.assert_array_equal(v, np.take_along_axis(a, ref_i[:, None], 1)[:, 0])
