"""Reductions, scans, sorting and selection against NumPy references.

Each table entry names an op, a NumPy reference and the dtypes it accepts; one test runs it
over several shapes, dims (negative, tuples, None), keepdim, and contiguous, transposed and
step-sliced inputs. Non-contiguous inputs are built by wrapping a NumPy view directly, so these
tests exercise the reduction kernels on strided memory independently of the view ops.
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _reduction as R
from ember.tensor._tensor import Tensor

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ALL_DTYPES = [np.bool_, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
FLOATS = [np.float16, np.float32, np.float64]
NUMERIC = [np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
LAYOUTS = ["contiguous", "transposed", "stepped"]
SHAPES_DIMS = [
    ((), [None, 0, -1]),
    ((5,), [None, 0, -1, (0,)]),
    ((3, 4), [None, 0, 1, -1, (0, 1), (-1, 0), ()]),
    ((2, 3, 4), [None, 1, -1, (0, 2), [2, 0]]),
]


def _data(shape, dtype, rng, distinct=False):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if distinct:
        vals = rng.permutation(n).astype(dtype) if dtype.kind != "b" else rng.random(n) > 0.5
        if dtype.kind == "f":
            vals = vals / 2 - n / 4
        return vals.reshape(shape)
    if dtype.kind == "b":
        return rng.random(shape) > 0.4
    if dtype.kind == "u":
        return rng.integers(0, 6, shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def make(shape, dtype, layout, rng=None, distinct=False):
    """(ember tensor, numpy array) with equal values; ``layout`` picks the memory layout."""
    rng = rng or np.random.default_rng(0)
    if layout == "contiguous" or len(shape) == 0:
        a = np.array(_data(shape, dtype, rng, distinct), order="C")
    elif layout == "transposed":
        a = _data(shape[::-1], dtype, rng, distinct).T
        assert not a.flags.c_contiguous or a.ndim < 2
    else:
        wide = shape[:-1] + (shape[-1] * 2,)
        a = _data(wide, dtype, rng, distinct)[..., ::2]
    return Tensor._make(a), a


def check(t, expected, dtype=None, rtol=None, equal_nan=True):
    assert isinstance(t, Tensor), type(t)
    expected = np.asarray(expected)
    dtype = np.dtype(dtype if dtype is not None else expected.dtype)
    got = t.numpy()
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype.kind == "f":
        tol = rtol if rtol is not None else {2: 2e-2, 4: 1e-5, 8: 1e-12}[dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=tol, atol=tol, equal_nan=equal_nan)
    else:
        np.testing.assert_array_equal(got, expected)


def _axis(dim, ndim):
    if ndim == 0:
        return None
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(d % ndim for d in dim)
    return dim % ndim


def _long(a):
    return a.astype(np.int64) if a.dtype.kind in "biu" else a


def _acc64(a):
    return a.astype(np.float64) if a.dtype.kind == "f" else _long(a)


def _ref_sum(a, dim, keepdim):
    r = np.sum(_acc64(a), axis=_axis(dim, a.ndim), keepdims=keepdim)
    return r.astype(_long(a).dtype)


def _ref_mean(a, dim, keepdim):
    return np.mean(a.astype(np.float64), axis=_axis(dim, a.ndim), keepdims=keepdim).astype(a.dtype)


def _ref_var(ddof):
    def f(a, dim, keepdim):
        ax = _axis(dim, a.ndim)
        with np.errstate(all="ignore"):
            r = np.var(a.astype(np.float64), axis=ax, keepdims=keepdim, ddof=ddof)
        return r.astype(a.dtype)
    return f


def _ref_norm(p):
    def f(a, dim, keepdim):
        x = np.abs(a.astype(np.float64))
        ax = _axis(dim, a.ndim)
        if p == np.inf:
            r = np.max(x, axis=ax, keepdims=keepdim)
        elif p == -np.inf:
            r = np.min(x, axis=ax, keepdims=keepdim)
        elif p == 0:
            r = np.sum(x != 0, axis=ax, keepdims=keepdim)
        else:
            r = np.sum(x ** p, axis=ax, keepdims=keepdim) ** (1 / p)
        return np.asarray(r).astype(a.dtype)
    return f


def _ref_logsumexp(a, dim, keepdim):
    x = a.astype(np.float64)
    ax = _axis(dim, a.ndim)
    r = np.log(np.sum(np.exp(x), axis=ax, keepdims=keepdim))
    out = a.dtype if a.dtype.kind == "f" else np.float32
    return np.asarray(r).astype(out)


def _ref_logical(fn):
    def f(a, dim, keepdim):
        r = np.asarray(fn(a, axis=_axis(dim, a.ndim), keepdims=keepdim))
        return r.astype(np.uint8) if a.dtype == np.uint8 else r
    return f


def _ref_plain(fn):
    def f(a, dim, keepdim):
        return np.asarray(fn(a, axis=_axis(dim, a.ndim), keepdims=keepdim))
    return f


def _ref_count_nonzero(a, dim, keepdim):
    return np.asarray(np.count_nonzero(a, axis=_axis(dim, a.ndim))).astype(np.int64)


# name: (call(t, dim, keepdim), reference(a, dim, keepdim), dtypes, tol)
MULTI_DIM = {
    "sum": (lambda t, d, k: R.sum(t, d, k), _ref_sum, ALL_DTYPES, None),
    "nansum": (lambda t, d, k: R.nansum(t, d, k), _ref_sum, ALL_DTYPES, None),
    "mean": (lambda t, d, k: R.mean(t, d, k), _ref_mean, FLOATS, None),
    "nanmean": (lambda t, d, k: R.nanmean(t, d, k), _ref_mean, FLOATS, None),
    "var": (lambda t, d, k: R.var(t, d, keepdim=k), _ref_var(1), FLOATS, None),
    "var_c0": (lambda t, d, k: R.var(t, d, keepdim=k, correction=0), _ref_var(0), FLOATS, None),
    "std": (lambda t, d, k: R.std(t, d, keepdim=k), lambda a, d, k: np.sqrt(
        _ref_var(1)(a, d, k).astype(np.float64)).astype(a.dtype), FLOATS, None),
    "norm_fro": (lambda t, d, k: R.norm(t, "fro", d, k), _ref_norm(2), FLOATS, None),
    "norm_1": (lambda t, d, k: R.norm(t, 1, d, k), _ref_norm(1), FLOATS, None),
    "norm_3": (lambda t, d, k: R.norm(t, 3, d, k), _ref_norm(3), FLOATS, None),
    "norm_inf": (lambda t, d, k: R.norm(t, float("inf"), d, k), _ref_norm(np.inf), FLOATS, None),
    "norm_-inf": (lambda t, d, k: R.norm(t, -float("inf"), d, k), _ref_norm(-np.inf), FLOATS,
                  None),
    "norm_0": (lambda t, d, k: R.norm(t, 0, d, k), _ref_norm(0), FLOATS, None),
    "amax": (lambda t, d, k: R.amax(t, d, k), _ref_plain(np.amax), ALL_DTYPES, None),
    "amin": (lambda t, d, k: R.amin(t, d, k), _ref_plain(np.amin), ALL_DTYPES, None),
    "logsumexp": (lambda t, d, k: R.logsumexp(t, d, k), _ref_logsumexp, NUMERIC, 2e-2),
    "all": (lambda t, d, k: R.all(t, d, k), _ref_logical(np.all), ALL_DTYPES, None),
    "any": (lambda t, d, k: R.any(t, d, k), _ref_logical(np.any), ALL_DTYPES, None),
    "count_nonzero": (lambda t, d, k: R.count_nonzero(t, d), _ref_count_nonzero, ALL_DTYPES,
                      None),
}


@pytest.mark.parametrize("name", sorted(MULTI_DIM))
@pytest.mark.parametrize("shape,dims", SHAPES_DIMS, ids=lambda v: str(v))
def test_multi_dim_reductions(name, shape, dims):
    call, ref, dtypes, tol = MULTI_DIM[name]
    for dtype in dtypes:
        for layout in LAYOUTS:
            t, a = make(shape, dtype, layout)
            for dim in dims:
                for keepdim in (False, True):
                    if name == "count_nonzero" and keepdim:
                        continue
                    ctx = f"{name} {shape} {np.dtype(dtype)} {layout} dim={dim} keepdim={keepdim}"
                    if name.startswith("var") or name == "std":
                        n = a.size if _axis(dim, a.ndim) is None else int(np.prod(
                            [a.shape[i] for i in np.atleast_1d(_axis(dim, a.ndim))]))
                        if n <= 1:
                            continue
                    exp = ref(a, dim, keepdim)
                    try:
                        check(call(t, dim, keepdim), exp, rtol=tol)
                    except AssertionError as exc:
                        raise AssertionError(f"{ctx}: {exc}") from None


def test_sum_dtypes_and_dtype_kwarg():
    for dt in (np.bool_, np.uint8, np.int32):
        t, a = make((3, 4), dt, "contiguous")
        assert R.sum(t).dtype == et.int64
        assert R.prod(t, 1).dtype == et.int64
        assert R.cumsum(t, 0).dtype == et.int64
    t, a = make((3, 4), np.int64, "transposed")
    check(R.sum(t, 1, dtype=et.float64), a.sum(1).astype(np.float64))
    check(R.sum(t, dtype=et.int32), np.asarray(a.sum(), np.int32))
    check(R.mean(t, 0, dtype=et.float32), a.mean(0).astype(np.float32))
    t16, a16 = make((1000,), np.float16, "stepped")
    # float16 accumulates in float32: far more accurate than a float16 running sum
    check(R.sum(t16), np.asarray(a16.astype(np.float64).sum(), np.float16), rtol=2e-3)


def test_prod():
    for dt in NUMERIC + [np.bool_]:
        for layout in LAYOUTS:
            t, a = make((3, 4), dt, layout)
            for dim in (None, 0, -1):
                for keepdim in (False, True):
                    ax = _axis(dim, 2)
                    exp = np.prod(_acc64(a), axis=ax, keepdims=keepdim)
                    exp = np.asarray(exp).astype(_long(a).dtype)
                    check(R.prod(t, dim, keepdim), exp)
    t, a = make((3, 4), np.int32, "contiguous")
    check(R.prod(t, 0, dtype=et.float64), np.prod(a, 0).astype(np.float64))
    with pytest.raises(TypeError, match="prod"):
        R.prod(t, (0, 1))


def test_empty_reductions():
    e = Tensor._make(np.empty((0, 3), np.float32))
    check(R.sum(e), np.float32(0))
    check(R.sum(e, 0), np.zeros(3, np.float32))
    check(R.prod(e, 0), np.ones(3, np.float32))
    check(R.mean(e), np.float32(np.nan))
    check(R.amax(e, 1), np.empty((0,), np.float32))
    check(R.logsumexp(e, 0), np.full(3, -np.inf, np.float32))
    check(R.all(e), np.True_)
    check(R.any(e), np.False_)
    check(R.norm(e), np.float32(0))
    check(R.count_nonzero(e, 0), np.zeros(3, np.int64))
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified"):
        R.max(e)
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero"):
        R.max(e, 0)
    values, indices = R.max(e, 1)
    assert values.shape == (0,) and indices.dtype == et.int64
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0"):
        R.amax(e, 0)
    with pytest.raises(RuntimeError, match=r"amax\(\): Expected reduction dim to be specified"):
        R.amax(e)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        R.argmax(e)
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0"):
        R.argmin(e, 0)
    with pytest.raises(RuntimeError, match="aminmax"):
        R.aminmax(e)
    with pytest.raises(IndexError, match="aminmax: Expected reduction dim 0"):
        R.aminmax(e, dim=0)
    with pytest.raises(RuntimeError, match="inf norm on an empty tensor"):
        R.norm(e, float("inf"))
    for fn in (R.median, R.mode):
        with pytest.raises(IndexError, match=r"\(\): Expected reduction dim 0"):
            fn(e, 0)
        v, i = fn(e, 1)
        assert v.shape == (0,) and i.shape == (0,)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 0"):
        R.kthvalue(e, 1, 0)
    check(R.median(e), np.float32(np.nan))
    check(R.cumsum(e, 0), np.empty((0, 3), np.float32))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        check(R.var(e), np.float32(np.nan))


def test_dim_errors():
    t, _ = make((3, 4), np.float32, "contiguous")
    for fn in (R.sum, R.mean, R.amax, R.logsumexp, R.all, R.var, R.count_nonzero):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in "
                                             r"range of \[-2, 1\], but got 2\)"):
            fn(t, 2)
        with pytest.raises(IndexError, match="but got -3"):
            fn(t, (0, -3))
        with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
            fn(t, (0, -2))
    for fn in (R.argmax, R.cumsum, R.sort, R.argsort):
        with pytest.raises(IndexError, match=r"\(\): Dimension out of range"):
            fn(t, 5)
    with pytest.raises(TypeError, match="max"):
        R.max(t, (0, 1))
    s = Tensor._make(np.array(3.0, np.float32))
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        R.sum(s, 1)


def test_dtype_errors():
    i, _ = make((3, 4), np.int64, "contiguous")
    b, _ = make((3, 4), np.bool_, "contiguous")
    with pytest.raises(RuntimeError, match="mean.*Input dtype must be either a floating point "
                                           "or complex dtype. Got: Long"):
        R.mean(i)
    with pytest.raises(RuntimeError, match="Optional dtype .* Got: Long"):
        R.mean(i, dtype=et.int64)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        R.var(i)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        R.std(i, 0)
    with pytest.raises(RuntimeError, match="norm.*floating point.*Got Long"):
        R.norm(i)
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        R.norm(R.sum(i, 0, dtype=et.float32), "abc")
    with pytest.raises(RuntimeError, match="nanmean.*Long"):
        R.nanmean(i)
    with pytest.raises(RuntimeError, match="argmax.*bool"):
        R.argmax(b)
    with pytest.raises(RuntimeError, match="topk.*bool"):
        R.topk(b, 1)
    with pytest.raises(NotImplementedError, match="median.*Bool"):
        R.median(b)


def test_var_std_signatures():
    t, a = make((3, 4), np.float64, "transposed")
    check(R.var(t, False), a.var())
    check(R.var(t, 0, False), a.var(0))
    check(R.var(t, 1, True, True), a.var(1, ddof=1, keepdims=True))
    check(R.std(t, unbiased=False), a.std())
    check(R.var(t, correction=2), a.var(ddof=2))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        check(R.var(t, 1, correction=5), np.full(3, np.inf))
    with pytest.raises(TypeError, match="both"):
        R.var(t, unbiased=True, correction=1)
    v, m = R.var_mean(t, 0)
    check(v, a.var(0, ddof=1))
    check(m, a.mean(0))
    s, m = R.std_mean(t, (0, 1), unbiased=False)
    check(s, a.std())
    check(m, a.mean())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_max_min_with_dim(dtype, layout):
    for shape in ((5,), (3, 4), (2, 3, 4)):
        t, a = make(shape, dtype, layout)  # small ints: many ties -> first occurrence
        for dim in range(-len(shape), len(shape)):
            for keepdim in (False, True):
                for fn, nfn, afn in ((R.max, np.max, np.argmax), (R.min, np.min, np.argmin)):
                    res = fn(t, dim, keepdim)
                    assert type(res).__name__ == fn.__name__
                    assert res.values is res[0] and res.indices is res[1]
                    check(res.values, nfn(a, axis=dim, keepdims=keepdim))
                    check(res.indices, afn(a, axis=dim, keepdims=keepdim).astype(np.int64))
                if dtype is not np.bool_:
                    check(R.argmax(t, dim, keepdim), np.argmax(a, dim, keepdims=keepdim))
                    check(R.argmin(t, dim, keepdim), np.argmin(a, dim, keepdims=keepdim))
        check(R.max(t), np.max(a))
        check(R.min(t), np.min(a))
        if dtype is not np.bool_:
            check(R.argmax(t), np.int64(np.argmax(a)))
            check(R.argmax(t, keepdim=True), np.argmax(a).reshape((1,) * a.ndim))
        lo, hi = R.aminmax(t, dim=-1, keepdim=True)
        check(lo, a.min(-1, keepdims=True))
        check(hi, a.max(-1, keepdims=True))


def test_max_special_cases():
    x = et.tensor([[1.0, float("nan"), 3.0, float("nan")], [4.0, 2.0, 2.0, 1.0]])
    v, i = R.max(x, 1)
    assert np.isnan(v.numpy()[0]) and v.numpy()[1] == 4
    assert i.tolist() == [1, 0]
    v, i = R.min(x, 1)
    assert i.tolist() == [1, 3]
    assert np.isnan(R.max(x).item())
    assert R.argmax(x, 1).tolist() == [1, 0]
    s = Tensor._make(np.array(2.0, np.float32))
    v, i = R.max(s, 0)
    assert v.shape == () and i.item() == 0 and v.item() == 2.0
    a = et.tensor([[1.0, 5.0], [3.0, 2.0]])
    b = et.tensor([2.0, 2.0], dtype=et.float64)
    m = R.max(a, b)
    assert m.dtype == et.float64 and m.tolist() == [[2.0, 5.0], [3.0, 2.0]]
    assert R.min(a, b).tolist() == [[1.0, 2.0], [2.0, 2.0]]


def test_logsumexp_stable():
    big = et.tensor([1000.0, 1000.0], dtype=et.float32)
    check(R.logsumexp(big, 0), np.float32(1000 + np.log(2)))
    check(R.logsumexp(et.tensor([float("inf"), 1.0]), 0), np.float32(np.inf))
    check(R.logsumexp(et.tensor([-float("inf"), -float("inf")]), 0), np.float32(-np.inf))
    check(R.logsumexp(et.tensor([[1, 2], [3, 4]]), 1), np.log(np.exp([[1, 2], [3, 4]]).sum(1))
          .astype(np.float32))


@pytest.mark.parametrize("dtype", NUMERIC + [np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scans(dtype, layout):
    for shape in ((5,), (3, 4), (2, 3, 4)):
        t, a = make(shape, dtype, layout)
        for dim in range(-len(shape), len(shape)):
            exp_sum = np.cumsum(_acc64(a), axis=dim).astype(_long(a).dtype)
            exp_prod = np.cumprod(_acc64(a), axis=dim).astype(_long(a).dtype)
            check(R.cumsum(t, dim), exp_sum)
            check(R.cumprod(t, dim), exp_prod)
    t, a = make((3, 4), dtype, layout)
    check(R.cumsum(t, 1, dtype=et.float64), np.cumsum(a.astype(np.float64), 1))
    check(R.cumsum(Tensor._make(np.array(True)), 0), np.int64(1))


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sort_argsort(dtype, layout):
    for shape in ((6,), (3, 4), (2, 3, 4)):
        t, a = make(shape, dtype, layout)  # many ties: the sort must be stable
        for dim in range(-len(shape), len(shape)):
            idx = np.argsort(a, axis=dim, kind="stable")
            res = R.sort(t, dim)
            check(res.values, np.take_along_axis(a, idx, dim))
            check(res.indices, idx.astype(np.int64))
            check(R.argsort(t, dim), idx.astype(np.int64))
            # stable descending: equal values keep their original order
            flipped = np.flip(np.argsort(np.flip(a, dim), axis=dim, kind="stable"), dim)
            didx = a.shape[dim] - 1 - flipped
            res = R.sort(t, dim, descending=True)
            check(res.values, np.take_along_axis(a, didx, dim))
            check(res.indices, didx.astype(np.int64))
            check(R.argsort(t, dim, True), didx.astype(np.int64))
            assert np.all(np.diff(res.values.numpy().astype(np.float64), axis=dim) <= 0)


def test_sort_nan_and_scalar():
    x = et.tensor([[1.0, float("nan"), 3.0, float("nan")]])
    v, i = R.sort(x)
    assert i.tolist() == [[0, 2, 1, 3]]
    v, i = R.sort(x, descending=True)
    assert i.tolist() == [[1, 3, 2, 0]]
    v, i = R.sort(Tensor._make(np.array(3.0)))
    assert v.shape == () and i.item() == 0


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_topk_kthvalue_median_distinct(dtype, layout):
    for shape in ((7,), (3, 5), (2, 3, 5), (2, 130)):
        if dtype is np.uint8 and np.prod(shape) > 255:
            continue
        t, a = make(shape, dtype, layout, distinct=True)
        for dim in range(-len(shape), len(shape)):
            n = a.shape[dim]
            order = np.argsort(a, axis=dim, kind="stable")
            for k in sorted({0, 1, min(3, n), n}):
                for largest in (True, False):
                    res = R.topk(t, k, dim, largest)
                    o = np.flip(order, dim) if largest else order
                    sel = np.take(o, np.arange(k), axis=dim)
                    check(res.indices, sel.astype(np.int64))
                    check(res.values, np.take_along_axis(a, sel, dim))
            for k in (1, n):
                for keepdim in (False, True):
                    res = R.kthvalue(t, k, dim, keepdim)
                    sel = np.take(order, [k - 1], axis=dim)
                    if not keepdim:
                        sel = np.squeeze(sel, dim)
                        check(res.values, np.take_along_axis(a, np.expand_dims(sel, dim), dim)
                              .squeeze(dim))
                    check(res.indices, sel.astype(np.int64))
            res = R.median(t, dim)
            sel = np.take(order, (n - 1) // 2, axis=dim)
            check(res.indices, sel.astype(np.int64))
            check(res.values, np.take_along_axis(a, np.expand_dims(sel, dim), dim).squeeze(dim))
        flat = np.sort(a.reshape(-1))
        check(R.median(t), flat[(flat.size - 1) // 2])


def test_selection_errors_and_nan():
    r = et.tensor([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]])
    with pytest.raises(RuntimeError, match="topk.*selected index k out of range"):
        R.topk(r, 6)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        R.topk(r, -1)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for "
                                           "dimension 1"):
        R.kthvalue(r, 0)
    v, i = R.topk(r, 0)
    assert v.shape == (2, 0) and i.dtype == et.int64
    n = et.tensor([[1.0, float("nan"), 3.0, float("nan")], [4.0, 2.0, 5.0, 1.0]])
    v, i = R.median(n, 1)
    assert np.isnan(v.numpy()[0]) and i.tolist() == [1, 1]
    assert np.isnan(R.median(n).item())
    v, i = R.kthvalue(n, 3, 1)
    assert i.tolist() == [1, 0]
    v, i = R.topk(n, 2)
    assert i.tolist() == [[1, 3], [2, 0]]


def test_mode():
    r = et.tensor([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]])
    res = R.mode(r, 1)
    assert res.values.tolist() == [1, 4] and res.indices.tolist() == [3, 4]
    res = R.mode(r, 0, keepdim=True)
    assert res.values.tolist() == [[3, 1, 3, 1, 2]] and res.indices.tolist() == [[0] * 5]
    res = R.mode(et.tensor([2, 2, 1, 1, 2, 1]))
    assert res.values.item() == 1 and res.indices.item() == 5
    n = et.tensor([[1.0, float("nan"), 3.0, float("nan")], [4.0, 2.0, 2.0, 1.0]])
    res = R.mode(n)
    assert res.values.tolist() == [1.0, 2.0] and res.indices.tolist() == [0, 2]
    res = R.mode(Tensor._make(np.array(3.0)))
    assert res.values.item() == 3.0 and res.indices.item() == 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mode_against_reference(layout):
    t, a = make((4, 9), np.int64, layout)
    for dim in (0, 1, -1):
        res = R.mode(t, dim)
        rows = np.moveaxis(a, dim, -1)
        vals, idxs = [], []
        for row in rows:
            u, c = np.unique(row, return_counts=True)
            v = u[np.argmax(c)]
            vals.append(v)
            idxs.append(np.nonzero(row == v)[0][-1])
        check(res.values, np.array(vals))
        check(res.indices, np.array(idxs, np.int64))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unique(dtype, layout):
    t, a = make((3, 4), dtype, layout)
    u, inv, cnt = np.unique(a, return_inverse=True, return_counts=True)
    check(R.unique(t), u)
    out = R.unique(t, return_inverse=True, return_counts=True)
    assert isinstance(out, tuple) and len(out) == 3
    check(out[0], u)
    check(out[1], inv.reshape(a.shape).astype(np.int64))
    check(out[2], cnt.astype(np.int64))
    out = R.unique(t, return_counts=True)
    check(out[1], cnt.astype(np.int64))
    u2, inv2 = np.unique(a, axis=1, return_inverse=True)
    out = R.unique(t, return_inverse=True, dim=1)
    check(out[0], u2)
    check(out[1], inv2.reshape(-1).astype(np.int64))


def test_unique_nan_not_merged():
    out = R.unique(et.tensor([1.0, float("nan"), float("nan")]))
    assert out.shape == (3,)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_reductions(layout):
    t, a = make((4, 6), np.float64, layout)
    a[0, 1] = np.nan
    a[2, :] = np.nan
    for dim in (None, 0, 1, (0, 1)):
        ax = _axis(dim, 2)
        check(R.nansum(t, dim), np.nansum(a, axis=ax))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
            exp = np.nanmean(a, axis=ax)
        check(R.nanmean(t, dim), exp)
        check(R.sum(t, dim), np.sum(a, axis=ax))


def test_return_types_pickle_and_fields():
    t, _ = make((3, 4), np.float32, "contiguous")
    for res in (R.max(t, 0), R.sort(t), R.topk(t, 2), R.kthvalue(t, 1), R.median(t, 1),
                R.mode(t), R.min(t, 1)):
        back = pickle.loads(pickle.dumps(res))
        assert type(back) is type(res)
        assert back._fields == ("values", "indices")
        np.testing.assert_array_equal(back.values.numpy(), res.values.numpy())
    assert R.aminmax(t)._fields == ("min", "max")


def test_results_own_memory():
    for shape in ((), (3,)):
        base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        t = Tensor._make(base)
        for r in (R.sum(t, 0), R.amax(t, 0), R.cumsum(t, 0), R.sort(t).values,
                  R.max(t, 0).values, R.mean(t, 0), R.median(t, 0).values):
            assert not np.may_share_memory(r.numpy(), base)


def test_registry_flags():
    from ember.tensor._registry import OPS

    for name in ("argmax", "argmin", "all", "any", "argsort", "count_nonzero", "unique"):
        assert OPS[name].differentiable is False, name
    for name in ("sum", "mean", "prod", "var", "norm", "amax", "amin", "max_dim", "min_dim",
                 "logsumexp", "cumsum", "cumprod", "median", "median_dim", "mode", "topk",
                 "sort", "kthvalue", "nansum"):
        assert OPS[name].differentiable is True, name


def test_methods_bound():
    x = et.tensor([[1.0, 5.0], [7.0, 2.0]])
    assert x.sum().item() == 15.0
    assert x.max(1).indices.tolist() == [1, 0]
    assert x.topk(1).values.tolist() == [[5.0], [7.0]]
    assert x.std(unbiased=False).item() == pytest.approx(np.std([1, 5, 7, 2]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=30), st.booleans())
def test_property_sort_is_stable_permutation(values, descending):
    t = et.tensor(values)
    v, i = R.sort(t, descending=descending)
    a = np.array(values)
    assert sorted(i.tolist()) == list(range(len(values)))
    np.testing.assert_array_equal(a[i.numpy()], v.numpy())
    key = [(-x if descending else x, j) for j, x in enumerate(values)]
    assert i.tolist() == [j for _, j in sorted(key)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=1, max_size=20))
def test_property_logsumexp_bounds(values):
    t = et.tensor(values, dtype=et.float64)
    r = R.logsumexp(t, 0).item()
    m = max(values)
    assert m - 1e-9 <= r <= m + np.log(len(values)) + 1e-9


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "norm", "var", "logsumexp"])
@pytest.mark.parametrize("dtype", [et.float16, et.float32, et.float64])
def test_reductions_of_huge_values_warn_nothing(op, dtype):
    # PyTorch computes these without a warning (an overflowing sum or product is inf); NumPy's
    # reductions warn unless told not to
    big = float(np.finfo(dtype.np).max) / 2
    x = et.full((3, 4), big, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole = et.logsumexp(x, (0, 1)) if op == "logsumexp" else getattr(x, op)()
        rows = getattr(et, op)(x, 1) if op != "norm" else x.norm(dim=1)
    if op in ("sum", "prod"):
        assert np.isinf(whole.float().item()) and np.isinf(rows.float().numpy()).all()
    if op == "logsumexp":  # big + log(12) and big + log(4): big in float precision
        np.testing.assert_allclose(rows.double().numpy(), big, rtol=1e-3)


def test_histc_drops_out_of_range_and_nan_keeps_the_max_edge():
    a = np.array([-3.0, -2.0, -0.5, 0.0, 0.25, 1.999, 2.0, 2.5, np.nan], np.float32)
    r = et.histc(et.tensor(a), bins=4, min=-2, max=2)
    exp = np.histogram(a[np.isfinite(a)], 4, (-2, 2))[0].astype(np.float32)
    np.testing.assert_array_equal(r.numpy(), exp)  # [1, 1, 2, 2]: -3, 2.5 and NaN dropped


@pytest.mark.parametrize("bins, rng", [(100000, (-1.0, 1.0)), (7, (3e8, 3e8)), (3, (-0.5, 0.5))])
def test_histogram_equal_bins_match_the_edges(bins, rng):
    # values on and next to the float32 edges (where the linear bin is rounded off by one, or
    # every edge is one value), weighted and not: each counted in the bin its edges give
    x = np.random.default_rng(0).uniform(-1, 1, 300).astype(np.float32)
    if rng[0] == rng[1]:
        x = np.full(20, rng[0], np.float32)
    e = et.histogram(et.tensor(x), bins, range=rng).bin_edges.numpy()
    x = np.concatenate([x, e, np.nextafter(e, np.float32(np.inf)),
                        np.nextafter(e, np.float32(-np.inf))])
    w = np.random.default_rng(1).uniform(0, 1, x.size).astype(np.float32)
    r = et.histogram(et.tensor(x), bins, range=rng, weight=et.tensor(w))
    np.testing.assert_array_equal(r.bin_edges.numpy(), e)
    np.testing.assert_array_equal(et.histogram(et.tensor(x), bins, range=rng).hist.numpy(),
                                  np.histogram(x, e)[0].astype(np.float32))
    np.testing.assert_allclose(r.hist.numpy(), np.histogram(
        x.astype(np.float64), e.astype(np.float64), weights=w.astype(np.float64))[0], rtol=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nanmedian_and_median_with_nan_rows(layout):
    t, a = make((4, 7), np.float64, layout)
    a[0, 1] = np.nan
    a[2, :] = np.nan
    a[3, ::2] = np.nan
    lower = np.sort(a, axis=1)  # NaN last: the lower median of each row's numbers
    count = (~np.isnan(a)).sum(1)
    exp = lower[np.arange(4), np.maximum(count - 1, 0) // 2]
    v, i = et.nanmedian(t, 1)
    np.testing.assert_array_equal(v.numpy(), exp)
    np.testing.assert_array_equal(a[np.arange(4), i.numpy()], exp)
    numbers = np.sort(a[~np.isnan(a)])
    assert et.nanmedian(t).item() == numbers[(numbers.size - 1) // 2]
    v, i = et.median(t, 1)  # a row holding NaN: NaN, the index of its first NaN
    first_nan = np.argmax(np.isnan(a), axis=1)
    np.testing.assert_array_equal(i.numpy()[count < 7], first_nan[count < 7])
    assert np.isnan(v.numpy()[count < 7]).all() and np.isnan(et.median(t).item())
