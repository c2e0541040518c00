"""The selection kernels (``select_dim``, ``topk_dim``) and the ops on them (kthvalue, median,
nanmedian, topk), and nansum's NaN-as-zero sum kernel: exactly the stable sort's answers (ties
in index order, NaN last ascending / first descending), on CPU and, where a GPU is, on CUDA."""

from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor.kernels import cpu

DTYPES = (np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8)


def _data(rng, shape, dtype, hi):
    x = rng.integers(0, hi, shape).astype(dtype)
    if x.dtype.kind == "f":
        x[rng.random(shape) < 0.2] = np.nan
    return x


def _stable(x, axis, desc=False):
    if not desc:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return (n - 1) - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


def _cases(rng):
    for dtype in DTYPES:
        for shape, axis in (((7, 13), 1), ((7, 13), 0), ((3, 5, 9), 1), ((40,), 0),
                            ((2, 1000), 1), ((1,), 0)):
            for hi in (2, 1000):  # many ties, few ties
                yield dtype, shape, axis, _data(rng, shape, dtype, hi)


def test_kthvalue_and_topk_are_the_stable_sorts_positions():
    rng = np.random.default_rng(0)
    for dtype, shape, axis, x in _cases(rng):
        t = et.tensor(x)
        n = shape[axis]
        asc, desc = _stable(x, axis), _stable(x, axis, True)
        for k in range(1, n + 1, max(1, n // 11)):
            v, i = et.kthvalue(t, k, axis, keepdim=True)
            exp = np.take(asc, [k - 1], axis=axis)
            assert np.array_equal(i.numpy(), exp), (dtype, shape, axis, k)
            assert np.array_equal(v.numpy(), np.take_along_axis(x, exp, axis), equal_nan=True)
        for k in range(0, n + 1, max(1, n // 11)):
            for largest in (True, False):
                v, i = et.topk(t, k, axis, largest)
                exp = np.take(desc if largest else asc, np.arange(k), axis=axis)
                assert np.array_equal(i.numpy(), exp), (dtype, shape, axis, k, largest)
                assert v.dtype == t.dtype
                assert np.array_equal(v.numpy(), np.take_along_axis(x, exp, axis),
                                      equal_nan=True)


def test_median_and_nanmedian_match_the_sort():
    rng = np.random.default_rng(1)
    for dtype, shape, axis, x in _cases(rng):
        t = et.tensor(x)
        n = shape[axis]
        asc = _stable(x, axis)
        nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
        nans = nan.sum(axis, keepdims=True)
        pos = np.where(nans > 0, n - nans, (n - 1) // 2)  # median: a row's first NaN
        v, i = et.median(t, axis, keepdim=True)
        assert np.array_equal(i.numpy(), np.take_along_axis(asc, pos, axis))
        count = n - nans  # nanmedian: the lower median of the numbers
        v, i = et.nanmedian(t, axis, keepdim=True)
        exp = np.take_along_axis(asc, np.maximum(count - 1, 0) // 2, axis)
        assert np.array_equal(i.numpy(), exp), (dtype, shape, axis)
        assert np.array_equal(v.numpy(), np.take_along_axis(x, exp, axis), equal_nan=True)
        flat = np.sort(x.reshape(-1))
        good = flat.size - int(nan.sum())
        exp = flat[max(good - 1, 0) // 2] if good else np.nan
        assert np.array_equal(et.nanmedian(t).numpy(), np.asarray(exp, x.dtype),
                              equal_nan=True)


def test_median_all_and_long_rows_match_numpy():
    # median of all elements (one Numba pass and a quickselect) against NumPy's sort, and the
    # quickselect's branch-free partitions of ranges over its _LONG elements (kthvalue along a
    # long row) on the inputs that break fixed pivots: sorted, reversed, ties, all equal
    from ember.tensor.kernels.cpu import select
    rng = np.random.default_rng(2)
    n = 3 * select._LONG + 17
    rows = {"random": rng.standard_normal(n), "sorted": np.arange(n, dtype=float),
            "reversed": np.arange(n, dtype=float)[::-1].copy(),
            "ties": rng.integers(0, 5, n).astype(float), "equal": np.ones(n)}
    for name, row in rows.items():
        for dtype in (np.float32, np.float64, np.int64, np.float16):
            x = row.astype(dtype)
            srt = np.sort(x)
            assert select.median_all(x) == srt[(n - 1) // 2], (name, dtype)
            assert select.median_all(x.reshape(1, n)[:, ::-1]) == srt[(n - 1) // 2]
            for k in (1, n // 3, n - 1, n):
                v, i = et.kthvalue(et.tensor(x), k)
                assert v.item() == srt[k - 1] and x[i.item()] == srt[k - 1], (name, dtype, k)
    for dtype in DTYPES:
        for shape in ((), (1,), (7, 13), (3, 5, 9), (2, 1000)):
            x = np.asarray(_data(rng, shape, dtype, 1000))
            r = select.median_all(x)
            assert r.shape == () and r.dtype == x.dtype
            has_nan = x.dtype.kind == "f" and bool(np.isnan(x).any())  # then NaN, as PyTorch
            exp = np.nan if has_nan else np.sort(x.reshape(-1))[(x.size - 1) // 2]
            assert np.array_equal(r, exp, equal_nan=True), (dtype, shape)
            if x.ndim == 2:  # a strided input
                assert np.array_equal(select.median_all(x.T), exp, equal_nan=True)
            assert np.array_equal(et.median(et.tensor(x)).numpy(), exp, equal_nan=True)


def test_kernel_errors():
    x = np.zeros((2, 3, 1))
    with pytest.raises(IndexError, match="pos out of range"):
        cpu.select_dim(x, np.full((2, 1, 1), 3, np.int64))
    with pytest.raises(RuntimeError, match="does not match"):
        cpu.select_dim(x, np.zeros((3, 1, 1), np.int64))
    with pytest.raises(IndexError, match="out of range"):
        cpu.topk_dim(x, 4, True)
    with pytest.raises(TypeError, match="integer or floating"):
        cpu.topk_dim(x.astype(complex), 1, True)
    v, i = cpu.select_dim(x, np.zeros((1, 1, 1), np.int64))  # a dim of 1 broadcasts
    assert i.shape == v.shape == (2, 1, 1)


def test_nansum_kernel_matches_numpy():
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        for shape in ((5,), (3, 7), (4, 3000), (3, 5000, 2), (2, 3, 4), (0, 3)):
            x = rng.standard_normal(shape).astype(dtype)
            x[rng.random(shape) < 0.2] = np.nan
            for dim in (None, 0, -1, (0, -1)) if len(shape) > 1 else (None, 0):
                r = et.nansum(et.tensor(x), dim)
                exp = np.nansum(x.astype(np.float64), axis=dim)
                assert r.dtype == et.tensor(x).dtype and r.shape == np.shape(exp)
                np.testing.assert_allclose(r.numpy(), exp, rtol=1e-5, atol=1e-4)
    x = np.array([[1.0, np.nan], [np.inf, 2.0]], np.float32)
    assert et.nansum(et.tensor(x), 1).tolist() == [1.0, np.inf]
    assert et.nansum(et.tensor(x).t(), 0).tolist() == [1.0, np.inf]


@pytest.mark.cuda
def test_cuda_twins_match_the_cpu_kernels(cp):
    from ember.tensor.kernels import cuda

    rng = np.random.default_rng(3)
    for dtype in DTYPES:
        for shape in ((3, 17, 4), (1, 1000, 1), (2, 5, 1)):
            x = _data(rng, shape, dtype, 4)
            gx = cp.asarray(x)
            P, M, Q = shape
            pos = rng.integers(0, M, (P, 1, Q)).astype(np.int64)
            for p in (pos, pos[:1, :, :1]):
                v, i = cpu.select_dim(x, p)
                gv, gi = cuda.select_dim(gx, cp.asarray(p))
                assert gi.dtype == np.int64 and np.array_equal(cp.asnumpy(gi), i)
                assert np.array_equal(cp.asnumpy(gv), v, equal_nan=True)
            for k in (0, 1, 3, M):
                for largest in (True, False):
                    v, i = cpu.topk_dim(x, k, largest)
                    gv, gi = cuda.topk_dim(gx, k, largest)
                    assert np.array_equal(cp.asnumpy(gi), i), (dtype, shape, k, largest)
                    assert np.array_equal(cp.asnumpy(gv), v, equal_nan=True)


@pytest.mark.cuda
def test_cuda_ops_match_cpu(cp):
    rng = np.random.default_rng(4)
    x = _data(rng, (6, 9), np.float32, 5)
    t, g = et.tensor(x), et.tensor(x, device="cuda")
    strided = g.t()  # a non-contiguous input
    for fn in (lambda a: et.kthvalue(a, 3, 0), lambda a: et.topk(a, 4, 1),
               lambda a: et.topk(a, 2, 0, largest=False), lambda a: et.median(a, 1),
               lambda a: et.nanmedian(a, 0), lambda a: (et.nanmedian(a),),
               lambda a: (et.nansum(a, 1),)):
        for want, got in zip(fn(t), fn(g)):
            assert np.array_equal(got.cpu().numpy(), want.numpy(), equal_nan=True)
    for want, got in zip(et.topk(t.t(), 3, 1), et.topk(strided, 3, 1)):
        assert np.array_equal(got.cpu().numpy(), want.numpy(), equal_nan=True)
