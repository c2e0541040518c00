"""Parity of reductions, sorting/selection and matrix products with PyTorch 2.13 CPU: the same
inputs give the same values, dtypes, shapes and indices, and bad inputs raise the same
exception types."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402
from ember.tensor._tensor import Tensor  # noqa: E402

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
LAYOUTS = ["contiguous", "transposed", "stepped"]


def _data(shape, dtype, rng, distinct):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if distinct and dt.kind != "b":
        v = rng.permutation(n)
        return (v / 4 - n / 8 if dt.kind == "f" else v).astype(dt).reshape(shape)
    if dt.kind == "b":
        return rng.random(shape) > 0.4
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -4, 5, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def pair(shape, dtype, layout="contiguous", seed=0, distinct=False):
    """(ember tensor, torch tensor) with the same values; ember's in the given layout."""
    rng = np.random.default_rng(seed)
    if layout == "contiguous" or len(shape) < 2:
        a = np.array(_data(shape, dtype, rng, distinct), order="C")
    elif layout == "transposed":
        a = _data(shape[::-1], dtype, rng, distinct).T
    else:
        a = _data(shape[:-1] + (shape[-1] * 2,), dtype, rng, distinct)[..., ::2]
    return Tensor._make(a), torch.from_numpy(np.ascontiguousarray(a).reshape(a.shape))


def same(e, t, rtol=None):
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        if hasattr(t, "_fields"):
            assert e._fields == t._fields
        for x, y in zip(e, t):
            same(x, y, rtol)
        return
    assert isinstance(e, Tensor), type(e)
    assert str(t.dtype) == f"torch.{e.dtype.name}", (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    got, exp = e.numpy(), t.numpy()
    if got.dtype.kind == "f":
        tol = rtol or {2: 1e-2, 4: 1e-5, 8: 1e-12}[got.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=tol,
                                   atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, exp)


def both(fn, e_args, t_args, rtol=None, **kwargs):
    """Call ``fn`` (an op name, or ``fn(module, *args)``) on ember and on torch: they must
    agree on the result, or both raise the same exception type."""
    if isinstance(fn, str):
        name = fn

        def fn(m, *args, **kw):
            return getattr(m, name)(*args, **kw)

    try:
        expected = fn(torch, *t_args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - compare the types below
        with pytest.raises(type(exc)):
            fn(et, *e_args, **kwargs)
        return
    same(fn(et, *e_args, **kwargs), expected, rtol)


# reductions that take (input, dim, keepdim) with dim an int, a tuple or None
MULTI = {
    "sum": lambda m, x, d, k: m.sum(x, d, k) if d is not None else m.sum(x),
    "nansum": lambda m, x, d, k: m.nansum(x, d, k) if d is not None else m.nansum(x),
    "mean": lambda m, x, d, k: m.mean(x, d, k) if d is not None else m.mean(x),
    "var": lambda m, x, d, k: m.var(x, d, keepdim=k),
    "std_c0": lambda m, x, d, k: m.std(x, d, keepdim=k, correction=0),
    "norm": lambda m, x, d, k: m.norm(x, 2, d, k),
    "norm_inf": lambda m, x, d, k: m.norm(x, float("inf"), d, k),
    "norm_1.5": lambda m, x, d, k: m.norm(x, 1.5, d, k),
    "amax": lambda m, x, d, k: m.amax(x, () if d is None else d, k),
    "amin": lambda m, x, d, k: m.amin(x, () if d is None else d, k),
    "logsumexp": lambda m, x, d, k: m.logsumexp(x, (0, 1) if d is None else d, k),
    "all": lambda m, x, d, k: m.all(x, d, k) if d is not None else m.all(x),
    "any": lambda m, x, d, k: m.any(x, d, k) if d is not None else m.any(x),
    "count_nonzero": lambda m, x, d, k: m.count_nonzero(x, d),
}


@pytest.mark.parametrize("name", sorted(MULTI))
@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_dim_reductions(name, dtype):
    fn = MULTI[name]
    for layout in LAYOUTS:
        e, t = pair((3, 4), dtype, layout)
        for dim in (None, 0, -1, (0, 1), (-1, 0)):
            for keepdim in (False, True):
                rtol = 2e-2 if dtype == "float16" else None
                both(fn, (e, dim, keepdim), (t, dim, keepdim), rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dim_ops_with_indices(dtype):
    for layout in LAYOUTS:
        e, t = pair((4, 5), dtype, layout, distinct=True)
        e3, t3 = pair((2, 3, 4), dtype, layout, distinct=True)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                both("max", (e, dim, keepdim), (t, dim, keepdim))
                both("min", (e, dim, keepdim), (t, dim, keepdim))
                both("argmax", (e, dim, keepdim), (t, dim, keepdim))
                both("argmin", (e3, dim, keepdim), (t3, dim, keepdim))
                both("median", (e, dim, keepdim), (t, dim, keepdim))
                both("kthvalue", (e, 2, dim, keepdim), (t, 2, dim, keepdim))
                both("mode", (e3, dim, keepdim), (t3, dim, keepdim))
                both("aminmax", (e,), (t,), dim=dim, keepdim=keepdim)
            for descending in (False, True):
                both("sort", (e3, dim, descending), (t3, dim, descending))
                both("argsort", (e, dim, descending), (t, dim, descending))
            for largest in (True, False):
                both("topk", (e, 3, dim, largest), (t, 3, dim, largest))
            both("cumsum", (e, dim), (t, dim))
            both("cumprod", (e3, dim), (t3, dim))
        both("max", (e,), (t,))
        both("argmax", (e,), (t,))
        both("argmin", (e,), (t,), keepdim=True)
        both("median", (e,), (t,))
        both("prod", (e, 1), (t, 1))
        both("aminmax", (e,), (t,))


def test_ties_follow_pytorch():
    # where PyTorch specifies tie-breaking: first occurrence for max/min, stable sort, and
    # mode's smallest value at its last occurrence (kthvalue/median/topk ties are unspecified)
    r = [[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]]
    e, t = et.tensor(r), torch.tensor(r)
    for dim in (0, 1):
        same(et.max(e, dim), torch.max(t, dim))
        same(et.min(e, dim), torch.min(t, dim))
        same(et.mode(e, dim), torch.mode(t, dim))
        same(et.sort(e, dim, stable=True), torch.sort(t, dim=dim, stable=True))
        same(et.sort(e, dim, True, stable=True), torch.sort(t, dim=dim, descending=True,
                                                            stable=True))
    same(et.mode(et.tensor([2, 2, 1, 1, 2, 1])), torch.mode(torch.tensor([2, 2, 1, 1, 2, 1])))


def test_nan_handling():
    v = [[1.0, float("nan"), 3.0, float("nan")], [4.0, 2.0, 5.0, 1.0]]
    e, t = et.tensor(v), torch.tensor(v)
    for fn in ("max", "min", "median", "sort"):
        same(getattr(et, fn)(e, 1), getattr(torch, fn)(t, 1))
    same(et.sort(e, 1, True), torch.sort(t, 1, True))
    same(et.topk(e, 2), torch.topk(t, 2))
    same(et.kthvalue(e, 3), torch.kthvalue(t, 3))
    same(et.kthvalue(e, 4), torch.kthvalue(t, 4))
    same(et.argmax(e, 1), torch.argmax(t, 1))
    same(et.median(e), torch.median(t))
    same(et.mode(e), torch.mode(t))
    same(et.nansum(e, 1), torch.nansum(t, 1))
    same(et.nanmean(e, 1), torch.nanmean(t, 1))
    same(et.amax(e, 1), torch.amax(t, 1))
    same(et.unique(et.tensor([1.0, float("nan"), float("nan")])),
         torch.unique(torch.tensor([1.0, float("nan"), float("nan")])))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(dtype):
    e, t = pair((3, 5), dtype, "transposed")
    same(et.unique(e), torch.unique(t))
    same(et.unique(e, return_inverse=True, return_counts=True),
         torch.unique(t, return_inverse=True, return_counts=True))
    same(et.unique(e, return_inverse=True, dim=1), torch.unique(t, return_inverse=True, dim=1))


def test_empty_and_scalar_inputs():
    e, t = pair((0, 3), "float32")
    s, ts = et.tensor(2.5), torch.tensor(2.5)
    cases = [
        ("sum", ()), ("sum", (0,)), ("prod", (0,)), ("mean", ()), ("amax", (1,)),
        ("amax", (0,)), ("amax", ()), ("max", ()), ("max", (0,)), ("max", (1,)),
        ("argmax", ()), ("argmax", (0,)), ("argmax", (1,)), ("logsumexp", (0,)),
        ("all", ()), ("any", ()), ("median", ()), ("median", (0,)), ("median", (1,)),
        ("mode", (0,)), ("mode", (1,)), ("kthvalue", (1, 0)), ("kthvalue", (1, 1)),
        ("cumsum", (0,)), ("norm", ()), ("aminmax", ()), ("count_nonzero", (0,)),
    ]
    for name, args in cases:
        both(name, (e, *args), (t, *args))
    for name, args in (("sum", (0,)), ("max", (0,)), ("argmax", (0, True)), ("sort", ()),
                       ("topk", (1,)), ("cumsum", (0,)), ("median", (0,)), ("mode", ()),
                       ("kthvalue", (1,)), ("logsumexp", (0,)), ("sum", (-1, True))):
        both(name, (s, *args), (ts, *args))


def test_error_types():
    e, t = pair((3, 4), "float32")
    ei, ti = pair((3, 4), "int64")
    eb, tb = pair((3, 4), "bool")
    calls = [
        lambda m, x, xi, xb: m.sum(x, 2), lambda m, x, xi, xb: m.sum(x, (0, 0)),
        lambda m, x, xi, xb: m.mean(xi), lambda m, x, xi, xb: m.var(xi),
        lambda m, x, xi, xb: m.norm(xi), lambda m, x, xi, xb: m.argmax(xb),
        lambda m, x, xi, xb: m.topk(x, 5), lambda m, x, xi, xb: m.kthvalue(x, 0),
        lambda m, x, xi, xb: m.nanmean(xi), lambda m, x, xi, xb: m.median(xb),
        lambda m, x, xi, xb: m.cumsum(x, -3), lambda m, x, xi, xb: m.max(x, 2),
        lambda m, x, xi, xb: m.mean(x, dtype=m.int64),
    ]
    for c in calls:
        both(c, (e, ei, eb), (t, ti, tb))


def test_var_std_forms():
    e, t = pair((3, 4), "float64", "stepped")
    same(et.var(e, False), torch.var(t, False))
    same(et.std(e, 1, True, True), torch.std(t, 1, True, True))
    same(et.var(e, (0, 1), correction=2), torch.var(t, (0, 1), correction=2))
    same(et.var_mean(e, 0), torch.var_mean(t, 0))
    same(et.std_mean(e, unbiased=False), torch.std_mean(t, unbiased=False))


# ---------------------------------------------------------------------------- linalg
MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)), ((2, 0), (0, 4)),
    # mismatches: each raises in both
    ((2, 3), (4, 5)), ((3,), (4,)), ((4,), (3, 4)), ((2, 3), (4,)), ((5, 2, 3), (6, 3, 4)),
    ((), (3,)),
]


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_matmul(dtype, layout):
    for s1, s2 in MATMUL_SHAPES:
        a, ta = pair(s1, dtype, layout, seed=1)
        b, tb = pair(s2, dtype, layout, seed=2)
        both("matmul", (a, b), (ta, tb), rtol=1e-4)
        both("mm", (a, b), (ta, tb), rtol=1e-4)
        both("bmm", (a, b), (ta, tb), rtol=1e-4)
        both("mv", (a, b), (ta, tb), rtol=1e-4)
        both("dot", (a, b), (ta, tb), rtol=1e-4)


def test_matmul_messages_match():
    a, ta = pair((2, 3), "float32")
    b, tb = pair((4, 5), "float32")
    c, tc = pair((3, 4), "float64")
    for fe, ft in ((lambda: et.mm(a, b), lambda: torch.mm(ta, tb)),
                   (lambda: et.matmul(a, c), lambda: torch.matmul(ta, tc))):
        with pytest.raises(RuntimeError) as torch_err:
            ft()
        with pytest.raises(RuntimeError) as ember_err:
            fe()
        assert str(torch_err.value) in str(ember_err.value)


def test_other_products():
    v, tv = pair((3,), "float32", seed=1)
    w, tw = pair((4,), "int64", seed=2)
    same(et.outer(v, w), torch.outer(tv, tw))
    same(et.ger(w, w), torch.ger(tw, tw))
    a, ta = pair((2, 3), "float64", "transposed", seed=3)
    b, tb = pair((3, 4), "float64", "stepped", seed=4)
    B, tB = pair((5, 2, 3), "float64", "stepped", seed=5)
    C, tC = pair((5, 3, 4), "float64", "transposed", seed=6)
    Ct = Tensor._make(np.ascontiguousarray(C.numpy().transpose(0, 2, 1)))
    tCt = tC.transpose(1, 2).contiguous()
    for eq, ops, tops in (("ij,jk->ik", (a, b), (ta, tb)), ("ij->ji", (a,), (ta,)),
                          ("bij,bjk->bik", (B, C), (tB, tC)), ("...j,jk->...k", (B, b), (tB, tb)),
                          ("bij,jk,bkl->bil", (B, b, Ct), (tB, tb, tCt))):
        same(et.einsum(eq, *ops), torch.einsum(eq, *tops))
    same(et.tensordot(B, C, ([0, 2], [0, 1])), torch.tensordot(tB, tC, ([0, 2], [0, 1])))
    same(et.tensordot(a, b, 1), torch.tensordot(ta, tb, 1))
    i4, ti4 = pair((4,), "float64", seed=7)
    same(et.addmm(i4, a, b, beta=0.5, alpha=2), torch.addmm(ti4, ta, tb, beta=0.5, alpha=2))
    i2, ti2 = pair((2,), "float64", seed=8)
    v3, tv3 = pair((3,), "float64", seed=9)
    same(et.addmv(i2, a, v3, alpha=3), torch.addmv(ti2, ta, tv3, alpha=3))
    same(et.baddbmm(i4, B, C, beta=2), torch.baddbmm(ti4, tB, tC, beta=2))
    same(et.addbmm(i4, B, C), torch.addbmm(ti4, tB, tC))
    ai, tai = pair((2, 3), "int64", seed=10)
    bi, tbi = pair((3, 4), "int64", seed=11)
    ii, tii = pair((2, 4), "int64", seed=12)
    same(et.addmm(ii, ai, bi, beta=0.5, alpha=2.5), torch.addmm(tii, tai, tbi, beta=0.5,
                                                               alpha=2.5))
    for dtype in ("uint8", "int32", "float32"):
        m, tm = pair((3, 4), dtype, "transposed", seed=13)
        same(et.trace(m), torch.trace(tm))
        for k in (-1, 0, 2, 7):
            same(et.diag(m, k), torch.diag(tm, k))
        d, td = pair((3,), dtype, seed=14)
        same(et.diag(d, -1), torch.diag(td, -1))
    x, tx = pair((4, 3), "float32", "stepped", seed=15)
    y, ty = pair((4, 3), "float32", seed=16)
    same(et.cross(x, y, dim=1), torch.cross(tx, ty, dim=1))


def test_linalg_error_types():
    cases = [
        (lambda m: m.bmm(m.ones(2, 3), m.ones(3, 4))),
        (lambda m: m.mv(m.ones(2, 3), m.ones(2, 3))),
        (lambda m: m.dot(m.ones(3), m.ones(3, dtype=m.float64))),
        (lambda m: m.outer(m.ones(2, 2), m.ones(2))),
        (lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 5), 1)),
        (lambda m: m.addmm(m.ones(3), m.ones(2, 3), m.ones(3, 4))),
        (lambda m: m.addbmm(m.ones(2, 4), m.ones(5, 2, 3), m.ones(6, 3, 4))),
        (lambda m: m.trace(m.ones(3))),
        (lambda m: m.diag(m.ones(2, 2, 2))),
        (lambda m: m.matmul(m.ones(2, 2, dtype=m.bool), m.ones(2, 2, dtype=m.bool))),
        (lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(4, 5))),
    ]
    for c in cases:
        both(c, (), ())
