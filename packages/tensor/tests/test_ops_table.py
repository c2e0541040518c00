"""The table-driven op harness: every entry of ``op_table.OP_TABLE`` against NumPy.

For each entry x dtype x layout (contiguous / non-contiguous) the forward values and the
result dtype (PyTorch's promotion: Python scalars do not widen, int / int gives float32) are
checked; the method form equals the function form; in-place ``_`` variants equal the
out-of-place op and bump ``_version`` (or refuse a result dtype they cannot hold); views share
storage and see writes through their base. Then: view-chain strides recorded from PyTorch,
hypothesis properties, the import contract, and the error cases of DESIGN.md "Errors".
"""
from __future__ import annotations

import functools
import inspect
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor._tensor import Tensor
from ember.tensor.testing import op_table as T

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CASES = [pytest.param(e, d, id=f"{e.name}-{d}") for e in T.OP_TABLE for d in e.dtypes]
LAYOUTS = ["contig", "noncontig"]
CASES_L = [pytest.param(e, d, lay, id=f"{e.name}-{d}-{lay}") for e in T.OP_TABLE
           for d in e.dtypes for lay in e.layouts]


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _tensors(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _np(t: Tensor) -> np.ndarray:
    a = np.asarray(t.detach().numpy() if t.requires_grad else t.numpy())
    return a.astype(np.float32) if a.dtype == T.np_dtype("bfloat16") else a  # exact


def _wide(a: np.ndarray) -> np.ndarray:
    """An array in float64, or complex128 when it or its dtype is complex."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _check_value(got: Tensor, ref, exp_dtype: str, ctx: str, gauge: str | None = None) -> None:
    """``gauge``: the entry's gauge of this output (vectors defined up to a sign or a phase,
    compared after :func:`fix_gauge`)."""
    assert isinstance(got, Tensor), f"{ctx}: expected a Tensor, got {type(got).__name__}"
    ref = np.asarray(ref)
    assert tuple(got.shape) == ref.shape, f"{ctx}: shape {tuple(got.shape)} != {ref.shape}"
    assert got.dtype.name == exp_dtype, f"{ctx}: dtype {got.dtype.name} != {exp_dtype}"
    g = _np(got)
    if gauge is not None:
        g, ref = T.fix_gauge(g, gauge), T.fix_gauge(ref, gauge)
    if ref.dtype.kind in "biu" and g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, ref, err_msg=ctx)
        return
    atol, rtol = T.tolerance(exp_dtype)
    np.testing.assert_allclose(_wide(g), _wide(ref), atol=atol,
                               rtol=rtol, equal_nan=True, err_msg=ctx)


def _check(entry, sample, out, dtype, ctx):
    args, kwargs = T.ref_args(sample, dtype)
    ref = entry.ref(*args, **kwargs)
    exp = entry.expected_dtype(sample, dtype)
    refs = _as_list(ref)
    outs = _as_list(out)
    assert len(outs) == len(refs), f"{ctx}: {len(outs)} outputs, expected {len(refs)}"
    exps = list(exp) if isinstance(exp, tuple) else [exp] * len(refs)
    for k, (o, r, e) in enumerate(zip(outs, refs, exps)):
        _check_value(o, r, e, f"{ctx} output {k}", entry.gauge.get(k))


# --------------------------------------------------------------------------- forward
@pytest.mark.parametrize("entry,dtype,layout", CASES_L)
def test_forward_matches_numpy(entry, dtype, layout):
    for sample in entry.samples(dtype, _rng(entry.name, dtype)):
        args, kwargs = T.to_ember(sample, layout == "contig")
        out = entry.fn(*args, **kwargs)
        _check(entry, sample, out, dtype, f"{entry.name}[{dtype},{layout}] {sample!r}")
        # inputs are left untouched by out-of-place ops
        for a, s in zip(args, sample.args):
            if isinstance(a, Tensor):
                np.testing.assert_array_equal(_np(a), s, err_msg=f"{entry.name} modified input")


@pytest.mark.parametrize("entry,dtype", CASES)
def test_keyword_call_equals_positional_call(entry, dtype):
    """Arguments passed by name bind exactly as positional ones (one binder per op)."""
    for sample in entry.samples(dtype, _rng(entry.name, dtype, "kw")):
        args, kwargs = T.to_ember(sample)
        call = T.as_keywords(entry.fn, args, kwargs)
        if call is None:
            continue
        want = _tensors(entry.fn(*args, **kwargs))
        got = _tensors(entry.fn(*call[0], **call[1]))
        assert len(want) == len(got), entry.name
        for a, b in zip(want, got):
            assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), entry.name
            np.testing.assert_array_equal(_np(a), _np(b), err_msg=f"{entry.name} {sample!r}")


def _takes_out(fn) -> bool:
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


OUT_CASES = [c for c in CASES if getattr(c.values[0].fn, "__module__", "").startswith("ember.")
             and _takes_out(c.values[0].fn) and not c.values[0].view]


@pytest.mark.parametrize("entry,dtype", OUT_CASES)
def test_out_argument_receives_the_result(entry, dtype):
    """``out=``: the result is written into the given tensor (resized from empty), which is
    returned; a wrongly typed ``out`` raises TypeError."""
    for sample in entry.samples(dtype, _rng(entry.name, dtype, "out")):
        args, kwargs = T.to_ember(sample)
        want = entry.fn(*args, **kwargs)
        if isinstance(want, Tensor):
            out = et.empty(0, dtype=want.dtype)
            got = entry.fn(*args, **kwargs, out=out)
            assert got is out, f"{entry.name}: out= did not return the out tensor"
            assert out._version > 0, f"{entry.name}: out= did not bump the version"
        elif isinstance(want, tuple) and all(isinstance(w, Tensor) for w in want):
            out = tuple(et.empty(0, dtype=w.dtype) for w in want)
            got = entry.fn(*args, **kwargs, out=out)
            assert all(g is o for g, o in zip(got, out)), entry.name
        else:
            continue
        for a, b in zip(_tensors(want), _tensors(out)):
            assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), entry.name
            np.testing.assert_array_equal(_np(a), _np(b), err_msg=f"{entry.name} {sample!r}")
        with pytest.raises(TypeError, match=entry.fn.__name__):
            entry.fn(*args, **kwargs, out=[1.0])


ERR_CASES = [c for c in CASES if getattr(c.values[0].fn, "__module__", "").startswith("ember.")
             and c.values[1] == c.values[0].dtypes[0]]


@pytest.mark.parametrize("entry,dtype", ERR_CASES)
def test_unknown_keyword_raises_type_error_naming_the_op(entry, dtype):
    """Nothing is accepted and ignored: an argument the op does not have is a TypeError."""
    sample = next(iter(entry.samples(dtype, _rng(entry.name, dtype, "err"))))
    args, kwargs = T.to_ember(sample)
    with pytest.raises(TypeError, match=entry.fn.__name__.rstrip("_") + ".*no_such_arg|"
                       "no_such_arg"):
        entry.fn(*args, **kwargs, no_such_arg=1)


@pytest.mark.parametrize("entry,dtype", [c for c in CASES if c.values[0].method])
def test_method_form_equals_function_form(entry, dtype):
    for sample in entry.samples(dtype, _rng(entry.name, dtype, "m")):
        args, kwargs = T.to_ember(sample)
        if not isinstance(args[0], Tensor):
            continue
        f = _tensors(entry.fn(*args, **kwargs))
        m = _tensors(getattr(args[0], entry.method)(*args[1:], **kwargs))
        assert len(f) == len(m)
        for a, b in zip(f, m):
            assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), entry.name
            np.testing.assert_array_equal(_np(a), _np(b), err_msg=f"{entry.name} {sample!r}")


def _torch_can_cast(frm: str, to: str) -> bool:
    cf, ct = T._CAT[frm], T._CAT[to]
    if cf == 2 and ct < 2:
        return False
    if to == "bool" and frm != "bool":
        return False
    return True


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("entry,dtype", [c for c in CASES if c.values[0].inplace])
def test_inplace_matches_out_of_place(entry, dtype, layout):
    checked = 0
    for sample in entry.samples(dtype, _rng(entry.name, dtype, "i")):
        args, kwargs = T.to_ember(sample, layout == "contig")
        if not isinstance(args[0], Tensor):
            continue
        expected = entry.fn(*args, **kwargs)
        x, rest = args[0], args[1:]
        fn_inplace = getattr(et, entry.inplace, None)
        for form in ("method", "function"):
            if form == "function" and fn_inplace is None:
                continue
            tgt = T.to_ember(sample, layout == "contig")[0][0]
            ctx = f"{entry.inplace}[{dtype},{layout},{form}] {sample!r}"
            ok_shape = tuple(expected.shape) == tuple(tgt.shape)
            ok_dtype = _torch_can_cast(expected.dtype.name, tgt.dtype.name)
            v0 = tgt._version
            call = (getattr(tgt, entry.inplace) if form == "method"
                    else functools.partial(fn_inplace, tgt))
            if not (ok_shape and ok_dtype):
                with pytest.raises(RuntimeError) as info:
                    call(*rest, **kwargs)
                assert entry.inplace.rstrip("_") in str(info.value) or \
                    entry.name in str(info.value), f"{ctx}: message does not name the op: " \
                                                   f"{info.value}"
                continue
            res = call(*rest, **kwargs)
            assert res is tgt, f"{ctx}: in-place op must return self"
            assert tgt._version > v0, f"{ctx}: _version not bumped"
            assert tgt.dtype == x.dtype and tuple(tgt.stride()) == tuple(x.stride()), ctx
            want = _np(expected).astype(T.np_dtype(x.dtype.name))
            atol, rtol = T.tolerance(x.dtype.name)
            np.testing.assert_allclose(_wide(_np(tgt)), _wide(want),
                                       atol=atol, rtol=rtol, equal_nan=True, err_msg=ctx)
            checked += 1
    assert checked or dtype in ("bool", "uint8", "int8", "int16", "int32", "int64")


@pytest.mark.parametrize("entry,dtype", [c for c in CASES if c.values[0].view])
def test_views_share_storage_and_see_writes(entry, dtype):
    for sample in entry.samples(dtype, _rng(entry.name, dtype, "v")):
        args, kwargs = T.to_ember(sample)
        x = args[0]
        outs = _tensors(entry.fn(*args, **kwargs))
        for o in outs:
            assert o.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(), \
                f"{entry.name} {sample!r}: result does not share storage"
            assert o._version == x._version
        new = (np.arange(x.numel()).reshape(tuple(x.shape)) % 7 + 1).astype(
            T.np_dtype(x.dtype.name))
        v0 = x._version
        x.copy_(et.tensor(new))
        assert x._version > v0
        refs = _as_list(entry.ref(new, *sample.args[1:], **sample.kwargs))
        for o, r in zip(outs, refs):
            assert o._version == x._version, f"{entry.name}: views do not share _version"
            np.testing.assert_array_equal(_np(o), np.asarray(r),
                                          err_msg=f"{entry.name}: write through base not seen")


# --------------------------------------------------------------------------- view chains
@pytest.mark.parametrize("name", sorted(T.VIEW_CHAINS))
def test_view_chain_strides_match_pytorch(name):
    chain, (shape, stride, offset, contiguous) = T.VIEW_CHAINS[name]
    x = et.arange(24.).reshape(2, 3, 4)
    v = chain(et, x)
    got = (tuple(v.shape), tuple(v.stride()), v.storage_offset(), v.is_contiguous())
    assert got == (shape, stride, offset, contiguous), name
    # the recorded strides address the right values in the storage
    flat = np.asarray(v.untyped_storage().tolist(), dtype=np.float64)
    rebuilt = np.lib.stride_tricks.as_strided(flat[offset:], shape,
                                              tuple(s * 8 for s in stride)) if v.numel() else \
        np.zeros(shape)
    np.testing.assert_array_equal(_np(v), rebuilt)
    x_np = np.arange(24.0).reshape(2, 3, 4)
    if "copies" not in name and "contiguous_copy" not in name and v.numel():
        # a write through the view lands in its base: data_ptr arithmetic agrees
        assert v.data_ptr() == v.untyped_storage().data_ptr() + offset * v.element_size()
    del x_np


def test_write_through_view_visible_in_base():
    base = et.zeros(3, 4)
    v = base.t()[1:, ::2]          # (3, 2) view
    v.fill_(5.0)
    expect = np.zeros((3, 4))
    expect.T[1:, ::2] = 5.0
    np.testing.assert_array_equal(base.numpy(), expect)
    row = base[2]
    row.add_(1)
    expect[2] += 1
    np.testing.assert_array_equal(base.numpy(), expect)
    d = base.diagonal()
    d.mul_(0)
    np.fill_diagonal(expect, 0)
    np.testing.assert_array_equal(base.numpy(), expect)
    assert base._version == row._version == d._version >= 3


def test_view_refuses_incompatible_strides_with_pytorch_error():
    x = et.arange(12.).view(3, 4).t()
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's "
                                           "size and stride"):
        x.view(12)
    # reshape copies instead
    r = x.reshape(12)
    np.testing.assert_array_equal(r.numpy(), np.arange(12.).reshape(3, 4).T.reshape(12))
    assert r.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_contiguous_copies_only_when_needed():
    x = et.arange(6.).view(2, 3)
    assert x.contiguous() is x
    y = x.t().contiguous()
    assert y.is_contiguous() and y.stride() == (2, 1)
    np.testing.assert_array_equal(y.numpy(), np.arange(6.).reshape(2, 3).T)


# --------------------------------------------------------------------------- promotion
PROMO = [
    ("int32", "int64", "int64"), ("uint8", "int8", "int16"), ("bool", "uint8", "uint8"),
    ("int64", "float16", "float16"), ("float16", "float32", "float32"),
    ("uint8", "int16", "int16"), ("bool", "float64", "float64"), ("int8", "int32", "int32"),
]


@pytest.mark.parametrize("a,b,want", PROMO)
def test_tensor_tensor_promotion(a, b, want):
    x = et.ones(2, dtype=getattr(et, a))
    y = et.ones(2, dtype=getattr(et, b))
    assert (x + y).dtype.name == want
    assert (y * x).dtype.name == want
    assert et.promote_types(getattr(et, a), getattr(et, b)).name == want


@pytest.mark.parametrize("dt", ["bool", "uint8", "int8", "int32", "int64", "float16",
                                "float32", "float64"])
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
def test_python_scalars_do_not_widen(dt, scalar):
    x = et.ones(2, dtype=getattr(et, dt))
    want = T.torch_result_type(np.ones(2, T.np_dtype(dt)), scalar)
    assert (x + scalar).dtype.name == want, (dt, scalar)
    assert (scalar * x).dtype.name == want, (dt, scalar)
    assert et.result_type(x, scalar).name == want


@pytest.mark.parametrize("dt", ["bool", "uint8", "int32", "int64", "float16", "float64"])
def test_zero_dim_tensor_does_not_widen_same_category(dt):
    x = et.ones(3, dtype=getattr(et, dt))
    z64 = et.tensor(1, dtype=et.int64)
    zf = et.tensor(1.0, dtype=et.float64)
    assert (x + z64).dtype.name == T.torch_result_type(np.ones(3, T.np_dtype(dt)),
                                                       np.asarray(1, np.int64))
    assert (x * zf).dtype.name == T.torch_result_type(np.ones(3, T.np_dtype(dt)),
                                                      np.asarray(1.0))


@pytest.mark.parametrize("dt", ["uint8", "int32", "int64", "bool"])
def test_int_division_gives_float32(dt):
    x = et.tensor([1, 2, 3]).to(getattr(et, dt))
    y = et.tensor([2, 2, 2]).to(getattr(et, dt))
    assert (x / y).dtype is et.float32
    assert (x / 2).dtype is et.float32
    if dt != "bool":
        assert (x // y).dtype.name == dt
        np.testing.assert_array_equal((x // y).numpy(), np.asarray([1, 2, 3]) // 2)


def test_true_division_of_negative_ints_and_floor_division():
    a = et.tensor([-7, 7, -7])
    b = et.tensor([2, -2, -2])
    np.testing.assert_allclose((a / b).numpy(), [-3.5, -3.5, 3.5])
    np.testing.assert_array_equal((a // b).numpy(), [-4, -4, 3])
    np.testing.assert_array_equal((a % b).numpy(), [1, -1, -1])


def test_integer_sum_gives_int64_and_max_dim_returns_values_indices():
    x = et.tensor([[1, 5, 2], [7, 0, 3]], dtype=et.int32)
    assert x.sum().dtype is et.int64 and x.sum().item() == 18
    v, i = x.max(1)
    assert v.tolist() == [5, 7] and i.tolist() == [1, 0]
    r = x.max(dim=1, keepdim=True)
    assert tuple(r.values.shape) == (2, 1) and r.indices.dtype is et.int64


# --------------------------------------------------------------------------- hypothesis
_dims = st.integers(1, 3)


@st.composite
def _broadcast_pair(draw):
    nd = draw(st.integers(0, 3))
    shape = [draw(_dims) for _ in range(nd)]
    sa = [draw(st.sampled_from([s, 1])) for s in shape]
    sb = [draw(st.sampled_from([s, 1])) for s in shape]
    sa = sa[draw(st.integers(0, len(sa))):]
    return tuple(sa), tuple(sb)


@settings(max_examples=60, deadline=None)
@given(_broadcast_pair(), st.sampled_from(["add", "mul", "sub", "maximum", "lt"]),
       st.sampled_from(["float32", "int64", "float64"]), st.booleans())
def test_broadcasting_property(shapes, opname, dtype, noncontiguous):
    sa, sb = shapes
    rng = _rng(sa, sb, opname, dtype)
    a = T._rand(sa, dtype, rng)
    b = T._rand(sb, dtype, rng)
    ta = T.noncontig(a) if noncontiguous else et.tensor(a)
    tb = et.tensor(b)
    out = getattr(et, opname)(ta, tb)
    ref = getattr(np, {"add": "add", "mul": "multiply", "sub": "subtract",
                       "maximum": "maximum", "lt": "less"}[opname])(a, b)
    assert tuple(out.shape) == ref.shape == tuple(et.broadcast_shapes(sa, sb))
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref.astype(np.float64),
                               rtol=1e-6)


_VIEW_STEPS = ["t", "transpose", "slice", "select", "unsqueeze", "squeeze", "flip_perm",
               "narrow", "diagonal", "expand"]


def _apply_np(a: np.ndarray, step: str, k: int):
    if step == "t" and a.ndim == 2:
        return a.T
    if step == "transpose" and a.ndim >= 2:
        i, j = k % a.ndim, (k + 1) % a.ndim
        return np.swapaxes(a, i, j)
    if step == "slice" and a.ndim >= 1:
        d = k % a.ndim
        sl = [slice(None)] * a.ndim
        sl[d] = slice(k % 2, None, 1 + k % 2)
        return a[tuple(sl)]
    if step == "select" and a.ndim >= 1 and a.shape[k % a.ndim] > 0:
        d = k % a.ndim
        return np.take(a, a.shape[d] - 1, axis=d)
    if step == "unsqueeze":
        return np.expand_dims(a, k % (a.ndim + 1))
    if step == "squeeze":
        return np.squeeze(a)
    if step == "flip_perm" and a.ndim >= 1:
        return np.transpose(a, tuple(reversed(range(a.ndim))))
    if step == "narrow" and a.ndim >= 1 and a.shape[k % a.ndim] >= 2:
        d = k % a.ndim
        return np.take(a, np.arange(1, a.shape[d]), axis=d)
    if step == "diagonal" and a.ndim >= 2:
        return np.diagonal(a, 0, 0, 1)
    if step == "expand" and a.ndim >= 1 and 1 in a.shape:
        shape = tuple(3 if s == 1 else s for s in a.shape)
        return np.broadcast_to(a, shape)
    return None


def _apply_et(t: Tensor, step: str, k: int):
    nd = t.dim()
    if step == "t":
        return t.t()
    if step == "transpose":
        return t.transpose(k % nd, (k + 1) % nd)
    if step == "slice":
        d = k % nd
        idx = [slice(None)] * nd
        idx[d] = slice(k % 2, None, 1 + k % 2)
        return t[tuple(idx)]
    if step == "select":
        d = k % nd
        return t.select(d, t.shape[d] - 1)
    if step == "unsqueeze":
        return t.unsqueeze(k % (nd + 1))
    if step == "squeeze":
        return t.squeeze()
    if step == "flip_perm":
        return t.permute(*reversed(range(nd)))
    if step == "narrow":
        d = k % nd
        return t.narrow(d, 1, t.shape[d] - 1)
    if step == "diagonal":
        return t.diagonal(0, 0, 1)
    if step == "expand":
        return t.expand(*[3 if s == 1 else s for s in t.shape])
    raise AssertionError(step)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_VIEW_STEPS), st.integers(0, 5)), min_size=1,
                max_size=5),
       st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_view_chain_property(steps, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = et.tensor(a.copy())
    base_ptr = t.untyped_storage().data_ptr()
    va, vt = a, t
    expanded = False
    for step, k in steps:
        na = _apply_np(va, step, k)
        if na is None:
            continue
        vt = _apply_et(vt, step, k)
        va = na
        expanded |= step == "expand"
        assert tuple(vt.shape) == va.shape, (steps, step)
    np.testing.assert_array_equal(vt.numpy(), va)
    assert vt.untyped_storage().data_ptr() == base_ptr, "a view chain copied"
    # strides / offset describe the values in the shared storage
    flat = t.numpy().reshape(-1)
    if vt.numel():
        rebuilt = np.lib.stride_tricks.as_strided(flat[vt.storage_offset():], tuple(vt.shape),
                                                  tuple(s * 8 for s in vt.stride()))
        np.testing.assert_array_equal(rebuilt, va)
    c = vt.contiguous()
    assert c.is_contiguous()
    np.testing.assert_array_equal(c.numpy(), va)
    # in-place through the view lands in the base (skip expanded views: they overlap)
    if not expanded and vt.numel():
        v0 = t._version
        vt.add_(1000)
        # the base holds arange values, so the view's values are its storage indices
        expect = a.reshape(-1).copy()
        expect[va.reshape(-1).astype(np.int64)] += 1000
        np.testing.assert_array_equal(t.numpy().reshape(-1), expect)
        assert t._version > v0 and vt._version == t._version


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=3), st.integers(0, 10),
       st.sampled_from(["add_", "mul_", "sub_", "clamp_", "zero_", "fill_"]))
def test_inplace_through_view_property(shape, seed, opname):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, shape)
    base = et.tensor(a.copy())
    v = base.transpose(0, -1)[::2]
    other = base.transpose(0, -1)            # a second view of the same storage
    va = a.copy()
    w = va.swapaxes(0, -1)[::2]
    args = {"add_": (1.5,), "mul_": (-2.0,), "sub_": (0.25,), "clamp_": (-1.0, 1.0),
            "zero_": (), "fill_": (3.0,)}[opname]
    getattr(v, opname)(*args)
    if opname == "clamp_":
        np.clip(w, -1.0, 1.0, out=w)
    elif opname == "zero_":
        w[...] = 0
    elif opname == "fill_":
        w[...] = 3.0
    else:
        getattr(np, {"add_": "add", "mul_": "multiply", "sub_": "subtract"}[opname])(
            w, args[0], out=w)
    np.testing.assert_allclose(base.numpy(), va)
    np.testing.assert_allclose(other.numpy(), va.swapaxes(0, -1))
    assert base._version == v._version == other._version == 1


# --------------------------------------------------------------------------- import contract
_SRC = str(Path(et.__file__).resolve().parents[2])


def _run(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = _SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True).stdout.strip()


def test_import_ember_tensor_imports_no_numba_or_cupy():
    # (the input from NumPy: ember's float arange is a Numba kernel, loaded on its first use)
    out = _run("import sys, numpy as np, ember.tensor as et; "
               "x = et.from_numpy(np.arange(6.).reshape(2, 3)); "
               "y = (x.t() @ x).sum(); "
               "print(sorted(m for m in sys.modules if m.split('.')[0] in "
               "('numba', 'cupy', 'llvmlite', 'torch')))")
    assert out == "[]", f"import ember.tensor pulled in: {out}"


# --------------------------------------------------------------------------- errors
def test_shape_mismatch_error_names_op_and_shapes():
    a, b = et.ones(2, 3), et.ones(4)
    with pytest.raises(RuntimeError) as info:
        et.add(a, b)
    msg = str(info.value)
    assert "add" in msg and ("[2, 3]" in msg or "(2, 3)" in msg) and \
        ("[4]" in msg or "(4,)" in msg), msg
    with pytest.raises(RuntimeError) as info:
        et.matmul(et.ones(2, 3), et.ones(4, 5))
    msg = str(info.value)
    assert "2x3" in msg or "[2, 3]" in msg or "(2, 3)" in msg, msg
    with pytest.raises(RuntimeError):
        et.cat([et.ones(2, 3), et.ones(2, 4)], 0)
    with pytest.raises(RuntimeError):
        et.ones(2, 3).view(4)
    with pytest.raises(RuntimeError):
        et.ones(2, 3).expand(4, 3)


def test_inplace_broadcast_to_smaller_self_raises():
    with pytest.raises(RuntimeError) as info:
        et.ones(3).add_(et.ones(2, 3))
    assert "add_" in str(info.value) or "add" in str(info.value)


@pytest.mark.parametrize("op", [lambda x: x.sum(3), lambda x: x.transpose(0, 5),
                                lambda x: x.unsqueeze(4), lambda x: x.select(-4, 0),
                                lambda x: x.softmax(3) if hasattr(x, "softmax") else x.sum(-4),
                                lambda x: et.cat([x, x], 3), lambda x: x.max(3)])
def test_bad_dim_raises_index_error(op):
    x = et.ones(2, 3, 4)
    with pytest.raises(IndexError) as info:
        op(x)
    assert "range" in str(info.value) or "dim" in str(info.value)


def test_out_of_range_index_raises_index_error():
    x = et.ones(2, 3)
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[:, 3]
    with pytest.raises(IndexError):
        x[et.tensor([0, 5])]
    with pytest.raises(IndexError):
        et.index_select(x, 0, et.tensor([2]))
    with pytest.raises(IndexError):
        x.select(1, -4)


@pytest.mark.parametrize("dst,val", [("int64", 0.5), ("int32", et.float32), ("bool", 2),
                                     ("uint8", et.float64)])
def test_inplace_dtype_cast_error(dst, val):
    x = et.ones(3, dtype=getattr(et, dst))
    other = et.ones(3, dtype=val) if not isinstance(val, (int, float)) else val
    with pytest.raises(RuntimeError) as info:
        x.add_(other) if dst != "bool" else x.mul_(other)
    msg = str(info.value)
    assert "cast" in msg and ("add_" in msg or "mul_" in msg), msg


def test_wrong_argument_types_raise_type_error():
    with pytest.raises(TypeError):
        et.ones(2) + "a"
    with pytest.raises(TypeError):
        et.zeros("3")
    with pytest.raises(TypeError):
        et.ones(2, 3).view(2.5, 2)


def test_bad_values_raise_value_error():
    with pytest.raises((ValueError, RuntimeError)):
        et.ones(2, 3).view(-1, -1)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        et.arange(0, 5, 0)
    with pytest.raises(RuntimeError):
        et.ones(6).view(4, -1)


def test_cuda_requests_raise_clear_error_without_gpu():
    if et.cuda.is_available():
        a = et.ones(2)
        b = et.ones(2, device="cuda")
        with pytest.raises(RuntimeError) as info:
            a + b
        assert "cuda" in str(info.value) and "cpu" in str(info.value)
        return
    for make in (lambda: et.zeros(2, device="cuda"), lambda: et.ones(2).cuda(),
                 lambda: et.ones(2).to("cuda:0"), lambda: et.tensor([1.0], device="cuda")):
        with pytest.raises(RuntimeError) as info:
            make()
        msg = str(info.value)
        assert "CUDA" in msg and "not available" in msg, msg
    assert et.cuda.device_count() == 0
    assert et.device("cuda:1").index == 1 and et.device("cpu").type == "cpu"
