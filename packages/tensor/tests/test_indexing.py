"""Indexing ops against NumPy references, view semantics and every error case.

Inputs come in three layouts (contiguous, transposed, stepped) built by wrapping NumPy views
directly, so these tests exercise strided memory independently of the view ops. The strides and
storage offsets of basic-indexing views are the values PyTorch 2.13 reports (checked
interactively; tests/parity/test_parity_indexing.py compares against torch itself).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _indexing, _scatter, _shape
from ember.tensor._tensor import Tensor

# the indexing family as this file tests it: indexing proper, gathers and scatters, and the
# movement ops (flip, roll, repeat, ...) that live with the shape ops
I = et
FAMILY = (_indexing.__all__ + _scatter.__all__ +
          [n for n in _shape.__all__ if n in ("flip", "fliplr", "flipud", "roll", "repeat",
                                               "tile", "repeat_interleave", "narrow_copy")])

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

DTYPES = [np.bool_, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
LAYOUTS = ["contiguous", "transposed", "stepped"]


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    return rng.integers(0, 100, size=shape).astype(dtype)


def _layout(a: np.ndarray, layout: str) -> np.ndarray:
    """A view with ``a``'s values in the given memory layout."""
    if layout == "contiguous" or a.ndim == 0:
        return a.copy()
    if layout == "transposed":
        return np.ascontiguousarray(a.T).T
    big = np.zeros(tuple(2 * n for n in a.shape), dtype=a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def T(a) -> Tensor:
    return Tensor._make(np.asarray(a))


def L(values) -> Tensor:
    return T(np.asarray(values, dtype=np.int64))


def _same(t: Tensor, ref) -> None:
    ref = np.asarray(ref)
    assert tuple(t.shape) == ref.shape
    assert t._data.dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(t._data), ref)


# ------------------------------------------------------------------------------ getitem
# (shape, index, reference) -- a reference of None means NumPy's ``a[index]``.
GETITEM_CASES = [
    ((4, 5), 1, None),
    ((4, 5), -1, None),
    ((4, 5), (1, 2), None),
    ((4, 5), (slice(1, 3),), None),
    ((4, 5), (slice(None), slice(None, None, 2)), None),
    ((4, 5), (slice(-10, 2), slice(3, 1)), None),
    ((4, 5), (slice(10, None),), None),
    ((4, 5), (None, slice(None, None, 3)), None),
    ((4, 5), (Ellipsis, None), None),
    ((4, 5), (None, Ellipsis, None), None),
    ((2, 3, 4), (Ellipsis, 1), None),
    ((2, 3, 4), (1, Ellipsis, slice(1, None)), None),
    ((2, 3, 4), (), None),
    ((2, 3, 4), Ellipsis, None),
    ((2, 3, 4), [0, 1], None),
    # a short list of lists is a tuple of indices (PyTorch's rule)
    ((2, 3, 4), [[0, 1], [1, 0]], lambda a: a[[0, 1], [1, 0]]),
    ((2, 3, 4), (slice(None), [0, 2], [1, 3]), None),
    ((2, 3, 4), ([0, 1], slice(None), [1, 3]), None),
    # ints select first (PyTorch), so the list's dim stays in place: NumPy would move it first
    ((2, 3, 4), (1, slice(None), [1, 3]), lambda a: a[1][:, [1, 3]]),
    ((2, 3, 4), (0, None, [1, 2]), lambda a: a[0][None, [1, 2]]),
    ((2, 3, 4), (slice(None), 1, [1, 3]), None),
    ((2, 3, 4), (None, [0, 1], None, [1, 2]), None),
    ((2, 3, 4), (Ellipsis, [0, 1]), None),
    ((2, 3, 4), (slice(1, None), Ellipsis, [0, -1]), None),
    ((2, 3, 4), ([-1], slice(1, None), 2), None),
    ((2, 3, 4), True, None),
    ((2, 3, 4), False, None),
    ((2, 3, 4), [True, False], None),
    ((2, 3, 4), ([True, False], 1, [True, True, False, False]), None),
    ((2, 3, 4), [], None),
    ((3,), (None, None), None),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,index,ref", GETITEM_CASES)
def test_getitem_matches_numpy(shape, index, ref, layout):
    a = _values(shape, np.float32)
    t = T(_layout(a, layout))
    _same(t[index], a[index] if ref is None else ref(a))


@pytest.mark.parametrize("dtype", DTYPES)
def test_getitem_dtypes(dtype):
    a = _values((3, 4), dtype)
    t = T(_layout(a, "stepped"))
    _same(t[1:, ::2], a[1:, ::2])
    _same(t[[2, 0], 1], a[[2, 0], 1])
    _same(t[T(a[:, 0] > 0) if dtype is np.bool_ else T(a[:, 0] > 50)],
          a[a[:, 0] > 0] if dtype is np.bool_ else a[a[:, 0] > 50])


def test_getitem_zero_d_tensor_index_is_an_int_view():
    t = et.arange(20.).reshape(4, 5)
    v = t[L(1)]
    assert v._base is not None and v.storage_offset() == 5 and v.stride() == (1,)
    assert t[T(np.array(True))].shape == (1, 4, 5)
    s = et.tensor(5.)
    assert s[None].shape == (1,) and s[...].shape == () and s[True].shape == (1,)


def test_getitem_int32_and_uint8_indices():
    a = _values((4, 3), np.float64)
    t = T(a)
    _same(t[T(np.array([3, 1], dtype=np.int32))], a[[3, 1]])
    _same(t[T(np.array([1, 0, 0, 1], dtype=np.uint8))], a[[0, 3]])  # a byte mask


# (shape, index) -> (shape, stride, storage_offset) as PyTorch 2.13 reports them
VIEW_GEOMETRY = [
    ((4, 5), (None,), (1, 4, 5), (20, 5, 1), 0),
    ((4, 5), (slice(None), None), (4, 1, 5), (5, 5, 1), 0),
    ((4, 5), (Ellipsis, None), (4, 5, 1), (5, 1, 1), 0),
    ((4, 5), (None, slice(None, None, 2)), (1, 2, 5), (20, 10, 1), 0),
    ((4, 5), (None, 1), (1, 5), (20, 1), 5),
    ((4, 5), (1, None), (1, 5), (5, 1), 5),
    ((4, 5), (None, None), (1, 1, 4, 5), (20, 20, 5, 1), 0),
    ((4, 5), (slice(1, 3), None, slice(None, None, 2)), (2, 1, 3), (5, 5, 2), 5),
    ((4, 5), (slice(10, None),), (0, 5), (5, 1), 20),
    ((4, 5), (slice(3, 1),), (0, 5), (5, 1), 15),
    ((4, 5), (slice(-10, 2),), (2, 5), (5, 1), 0),
    ((4, 5), (slice(0, 1, 5),), (1, 5), (25, 1), 0),
    ((4, 5), (Ellipsis,), (4, 5), (5, 1), 0),
    ((4, 5), (1, 2), (), (), 7),
    ((4, 5), (1, 2, None), (1,), (1,), 7),
    ((4, 5), (None, Ellipsis, None), (1, 4, 5, 1), (20, 5, 1, 1), 0),
    ((2, 3, 4), (Ellipsis, 1, Ellipsis), (2, 3), (12, 4), 1),
    ((0, 3), (None,), (1, 0, 3), (0, 3, 1), 0),
    ((0, 3), (slice(None), None), (0, 1, 3), (3, 3, 1), 0),
]


@pytest.mark.parametrize("shape,index,vshape,stride,offset", VIEW_GEOMETRY)
def test_basic_index_view_geometry(shape, index, vshape, stride, offset):
    base = T(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    v = base[index]
    assert (tuple(v.shape), v.stride(), v.storage_offset()) == (vshape, stride, offset)
    assert v._base is base and v.untyped_storage() == base.untyped_storage()


def test_view_geometry_of_transposed_input():
    x = et.arange(20.).reshape(4, 5).t()
    v = x[None]
    assert (v.stride(), v.storage_offset()) == ((5, 1, 5), 0)
    v = x[:, None]
    assert (v.stride(), v.storage_offset()) == ((1, 20, 5), 0)
    v = x[2:, None, 1:]
    assert tuple(v.shape) == (3, 1, 3) and v.stride() == (1, 20, 5) and v.storage_offset() == 7


def test_writes_through_views_are_seen_everywhere():
    base = et.zeros(4, 5)
    row, col, cell = base[1], base[:, 2], base[None, 1:3, None, ::2]
    assert base._version == 0
    row[2] = 7.0
    assert base[1, 2].item() == 7.0 and col[1].item() == 7.0
    cell[0, 1, 0, 2] = 3.0
    assert base[2, 4].item() == 3.0
    base[3] = et.arange(5.)
    assert row._data.base is not None and col.tolist() == [0.0, 7.0, 0.0, 2.0]
    assert base._version == row._version == cell._version == 3
    base[[0, 0], [1, 4]] = 9.0
    assert base[0].tolist() == [0.0, 9.0, 0.0, 0.0, 9.0] and cell._version == 4
    base[base > 100] = 1.0  # an empty mask still counts as a write
    assert base._version == 5


def test_advanced_result_is_a_contiguous_copy():
    x = T(_layout(_values((3, 4), np.float32), "transposed"))
    y = x[:, [0, 2]]
    assert y._base is None and y.is_contiguous()
    y[0, 0] = -1.0
    assert x[0, 0].item() != -1.0


# ------------------------------------------------------------------------------ hypothesis
@st.composite
def _basic_chain(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    chain = []
    cur = list(shape)
    for _ in range(draw(st.integers(1, 3))):
        items, dims_left = [], list(cur)
        out = []
        for n in dims_left:
            kind = draw(st.sampled_from(["int", "slice", "none", "skip"]))
            if kind == "int" and n > 0:
                items.append(draw(st.integers(-n, n - 1)))
            elif kind == "slice" or (kind == "int" and n == 0):
                start = draw(st.none() | st.integers(-6, 6))
                stop = draw(st.none() | st.integers(-6, 6))
                step = draw(st.none() | st.integers(1, 3))
                items.append(slice(start, stop, step))
                out.append(len(range(*slice(start, stop, step).indices(n))))
            elif kind == "none":
                items.append(None)
                out.append(1)
                items.append(slice(None))
                out.append(n)
            else:
                items.append(slice(None))
                out.append(n)
        if draw(st.booleans()):
            items.append(None)
            out.append(1)
        if items and draw(st.booleans()):
            pos = draw(st.integers(0, len(items)))
            items.insert(pos, Ellipsis)
        chain.append(tuple(items))
        cur = out
    return shape, chain


@settings(max_examples=150, deadline=None)
@given(_basic_chain(), st.sampled_from(LAYOUTS))
def test_basic_chains_match_numpy_and_share_memory(case, layout):
    shape, chain = case
    a = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape)
    arr = _layout(a, layout)
    t = T(arr)
    ref = arr
    for index in chain:
        t = t[index]
        ref = ref[index if Ellipsis in index else index + (Ellipsis,)]  # keep NumPy views
        assert t._base is not None
        np.testing.assert_array_equal(np.asarray(t._data), ref)
        # PyTorch's geometry: strides of every dim of extent > 1 are NumPy's (same memory) and
        # the offset is the distance of the first element (when there is one)
        item = ref.itemsize
        for n, s, rs in zip(ref.shape, t.stride(), ref.strides):
            if n > 1:
                assert s * item == rs
        if ref.size:
            root_ptr = t.untyped_storage().data_ptr()
            assert t.storage_offset() == (ref.__array_interface__["data"][0] - root_ptr) // item
    if ref.size:  # views stay views: a write through the chain's last view reaches the base
        first = (0,) * t.ndim
        t[first] = -5.0
        assert ref[first] == -5.0


# ------------------------------------------------------------------------------ setitem
SETITEM_CASES = [
    ((3, 4), 1, 5.0),
    ((3, 4), (slice(None), 1), np.arange(3.0)),
    ((3, 4), (slice(None), None, 2), np.arange(3.0)[:, None]),
    ((3, 4), (Ellipsis, slice(1, 3)), np.ones((1, 1, 2))),  # leading unit dims dropped
    ((3, 4), [0, 2], np.arange(4.0)),
    ((3, 4), ([0, 2], [1, 3]), np.array([7.0, 8.0])),
    ((3, 4), (slice(None), [3, 0]), np.arange(6.0).reshape(3, 2)),
    ((3, 4), "mask", -1.0),
    ((3, 4), (1, [0, 1]), np.array([[5.0, 6.0]])),
    ((3, 4), (), 2.0),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,index,value", SETITEM_CASES)
def test_setitem_matches_numpy(shape, index, value, layout):
    a = _values(shape, np.float32)
    if isinstance(index, str):
        index = a > 50
    arr = _layout(a, layout)
    t = T(arr)
    tindex = T(index) if isinstance(index, np.ndarray) else index
    t[tindex] = T(value.astype(np.float32)) if isinstance(value, np.ndarray) else value
    ref = a.copy()
    v = value
    if isinstance(v, np.ndarray):
        while v.ndim and v.shape[0] == 1 and v.ndim > ref[index].ndim:
            v = v[0]
    ref[index] = v
    np.testing.assert_array_equal(arr, ref)


def test_setitem_casts_values():
    x = et.zeros(3, dtype=et.int64)
    x[0] = 2.7
    x[1] = et.tensor(3.9)
    x[x == 0] = et.tensor(-1.5)
    assert x.tolist() == [2, 3, -1]
    b = et.zeros(3, dtype=et.uint8)
    b[0] = -1  # a negative int wraps into an unsigned dtype, down to -255, as in PyTorch
    assert b.tolist()[0] == 255
    for bad in (300, -256, 255.5, -0.5, float("nan"), float("inf")):
        with pytest.raises(RuntimeError, match=r"setitem_?\(\): value cannot be converted to "
                                               r"type uint8_t without overflow"):
            b[1] = bad
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        b[1] = 2**63
    assert b.tolist() == [255, 0, 0]
    f = et.zeros(2, dtype=et.float16)
    f[:] = et.tensor([1.5, 2.5], dtype=et.float64)
    assert f.tolist() == [1.5, 2.5]
    m = et.zeros(2, dtype=et.bool)
    m[1] = 2
    assert m.tolist() == [False, True]


def test_setitem_copy_leaves_the_input_alone():
    x = et.zeros(2, 3)
    out = I.setitem_copy(x, (slice(None), [0, 2]), et.tensor([1.0, 2.0]))
    assert out.tolist() == [[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]] and x.sum().item() == 0
    assert x._version == 0 and out._base is None


def test_setitem_duplicate_advanced_index_last_write_wins():
    x = et.zeros(3)
    x[L([0, 0])] = et.tensor([1.0, 2.0])
    assert x.tolist() == [2.0, 0.0, 0.0]


# ------------------------------------------------------------------------------ index_put
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16, np.float32, np.float64])
def test_index_put_accumulate(layout, dtype):
    a = _values((4, 3, 2), dtype)
    arr = _layout(a, layout)
    t = T(arr)
    i0, i1 = np.array([0, 3, 0, 0, -1]), np.array([1, 0, 1, 1, 0])
    vals = _values((5, 2), dtype, seed=1)
    out = I.index_put(t, (L(i0), L(i1)), T(vals), accumulate=True)
    ref = a.copy()
    np.add.at(ref, (i0, i1), vals)
    _same(out, ref)
    np.testing.assert_array_equal(arr, a)  # out of place
    mask = a[:, 0, 0] > 30
    out = I.index_put(t, (T(mask), L([2])), T(vals[:1]), accumulate=True)
    ref2 = a.copy()
    ref2[mask, 2] += vals[0]
    _same(out, ref2)
    r = I.index_put_(t, (L(i0), L(i1)), T(vals), accumulate=True)
    assert r is t and t._version == 1
    np.testing.assert_array_equal(arr, ref)


def test_index_put_variants():
    x = et.zeros(3, 4)
    out = x.index_put((L([1, 1]),), et.tensor(1.0), accumulate=True)
    assert out[1].tolist() == [2.0] * 4 and x.sum().item() == 0
    out = x.index_put((T(np.array([[True] * 4, [False] * 4, [True] * 4])),), et.tensor(3.0))
    assert out.sum().item() == 24.0
    out = x.index_put([L([0, 2]), L([1, 1])], et.tensor([5.0, 6.0]), accumulate=True)
    assert out[0, 1].item() == 5.0 and out[2, 1].item() == 6.0
    b = et.zeros(2, dtype=et.bool).index_put_((L([1, 1]),), et.tensor([True, True]), True)
    assert b.tolist() == [False, True]
    n = et.zeros(2, dtype=et.int8).index_put_((L([1, 1]),), T(np.array([100, 100], np.int8)),
                                               accumulate=True)
    assert n.tolist() == [0, -56]


def test_getitem_backward_accumulates():
    g = et.ones(2, 3)
    out = I.getitem_backward(g, (4, 3), ([1, 1],))
    assert out[1].tolist() == [2.0] * 3 and out.sum().item() == 6.0
    out = I.getitem_backward(et.tensor([1.0, 2.0]), (2, 3), (slice(None), 1))
    assert out.tolist() == [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]]
    out = I.getitem_backward(et.ones(2, 1, 1, 4), (2, 3, 4), (None, [0, 1], None, [1, 2]))
    assert out.shape == (2, 3, 4) and out.sum().item() == 8.0
    assert out[0, 1].tolist() == [1.0] * 4 and out[1, 2].tolist() == [1.0] * 4


# ------------------------------------------------------------------------------ op table
def _gather_ref(a, dim, idx):
    return np.take_along_axis(a[tuple(slice(0, n) if d != dim else slice(None)
                                      for d, n in enumerate(idx.shape))], idx, axis=dim)


def _scatter_ref(a, dim, idx, src, add=False):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        if add:  # for bools, adding is a logical or
            out[tuple(tgt)] = out[tuple(tgt)] + src[pos] if a.dtype != bool else \
                out[tuple(tgt)] | src[pos]
        else:
            out[tuple(tgt)] = src[pos]
    return out


def _index_add_ref(a, dim, idx, src, alpha=1):
    out = np.moveaxis(a.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    for i, j in enumerate(idx):
        if a.dtype == bool:  # a logical or (alpha is non-zero)
            out[j] |= s[i]
        else:
            out[j] += (alpha * s[i]).astype(a.dtype)
    return np.moveaxis(out, 0, dim)


def _rng_idx(shape, high, seed=3):
    return np.random.default_rng(seed).integers(0, high, size=shape)


OPS = {
    "index_select": (lambda t: I.index_select(t, 1, L([3, 0, 3])),
                     lambda a: a[:, [3, 0, 3]]),
    "index_select_neg_dim": (lambda t: t.index_select(-3, L([1])), lambda a: a[[1]]),
    "gather": (lambda t: I.gather(t, 1, L(_rng_idx((2, 5, 2), 4))),
               lambda a: _gather_ref(a, 1, _rng_idx((2, 5, 2), 4))),
    "gather_small": (lambda t: t.gather(2, L(_rng_idx((1, 2, 3), 5))),
                     lambda a: _gather_ref(a, 2, _rng_idx((1, 2, 3), 5))),
    "scatter": (lambda t: I.scatter(t, 0, L([[[1, 0]]]), T(np.ones((1, 1, 2), t._data.dtype))),
                lambda a: _scatter_ref(a, 0, np.array([[[1, 0]]]), np.ones((1, 1, 2), a.dtype))),
    "scatter_value": (lambda t: t.scatter(2, L([[[4], [0]]]), 3),
                      lambda a: _scatter_ref(a, 2, np.array([[[4], [0]]]),
                                             np.full((1, 2, 1), 3, a.dtype))),
    "scatter_add": (lambda t: I.scatter_add(t, 1, L(_rng_idx((2, 6, 5), 4)),
                                            T(_values((2, 6, 5), t._data.dtype, 5))),
                    lambda a: _scatter_ref(a, 1, _rng_idx((2, 6, 5), 4),
                                           _values((2, 6, 5), a.dtype, 5), add=True)),
    "index_add": (lambda t: I.index_add(t, 2, L([4, 4, 0]), T(_values((2, 4, 3), t._data.dtype,
                                                                        6)), alpha=2),
                  lambda a: _index_add_ref(a, 2, [4, 4, 0], _values((2, 4, 3), a.dtype, 6), 2)),
    "index_copy": (lambda t: I.index_copy(t, 1, L([2, 0]), T(_values((2, 2, 5), t._data.dtype, 7))),
                   lambda a: _index_copy_ref(a)),
    "index_fill": (lambda t: I.index_fill(t, 2, L([1, -1]), 1),
                   lambda a: _index_fill_ref(a)),
    "masked_select": (lambda t: I.masked_select(t, T(np.arange(5) % 2 == 0)),
                      lambda a: a[np.broadcast_to(np.arange(5) % 2 == 0, a.shape)]),
    "masked_select_same": (lambda t: t.masked_select(t > 40), lambda a: a[a > 40]),
    "take": (lambda t: I.take(t, L([[0, -1], [7, 39]])),
             lambda a: a.reshape(-1)[[[0, -1], [7, 39]]]),
    "take_along_dim": (lambda t: I.take_along_dim(t, L(_rng_idx((2, 4, 1), 5)), 2),
                       lambda a: np.take_along_axis(a, _rng_idx((2, 4, 1), 5), 2)),
    "take_along_dim_bcast": (lambda t: I.take_along_dim(t[:, :1], L(_rng_idx((1, 3, 2), 5)), 2),
                             lambda a: np.take_along_axis(a[:, :1], _rng_idx((1, 3, 2), 5), 2)),
    "take_along_dim_flat": (lambda t: I.take_along_dim(t, L([3, 0])),
                            lambda a: a.reshape(-1)[[3, 0]]),
    "flip": (lambda t: I.flip(t, (0, 2)), lambda a: np.flip(a, (0, 2))),
    "flip_method": (lambda t: t.flip(-1), lambda a: np.flip(a, -1)),
    "fliplr": (lambda t: I.fliplr(t), lambda a: np.fliplr(a)),
    "flipud": (lambda t: I.flipud(t), lambda a: np.flipud(a)),
    "roll": (lambda t: I.roll(t, (1, -2), (0, 2)), lambda a: np.roll(a, (1, -2), (0, 2))),
    "roll_flat": (lambda t: I.roll(t, 3), lambda a: np.roll(a, 3)),
    "repeat": (lambda t: t.repeat(2, 1, 1, 2), lambda a: np.tile(a, (2, 1, 1, 2))),
    "tile": (lambda t: I.tile(t, (2,)), lambda a: np.tile(a, 2)),
    "repeat_interleave": (lambda t: I.repeat_interleave(t, 2, 1),
                          lambda a: np.repeat(a, 2, 1)),
    "repeat_interleave_tensor": (lambda t: I.repeat_interleave(t, L([0, 2, 1, 3]), dim=1),
                                 lambda a: np.repeat(a, [0, 2, 1, 3], 1)),
    "repeat_interleave_flat": (lambda t: t.repeat_interleave(2), lambda a: np.repeat(a, 2)),
    "narrow_copy": (lambda t: I.narrow_copy(t, 2, -3, 2), lambda a: a[:, :, 2:4]),
    "nonzero": (lambda t: I.nonzero(t), lambda a: np.argwhere(a)),
    "argwhere": (lambda t: I.argwhere(t), lambda a: np.argwhere(a)),
    "getitem_mixed": (lambda t: t[L([1, 0]), 1:, L([[4], [0]])],
                      lambda a: a[[1, 0], 1:, [[4], [0]]]),
}


def _index_copy_ref(a):
    out = a.copy()
    src = _values((2, 2, 5), a.dtype, 7)
    out[:, [2, 0]] = src
    return out


def _index_fill_ref(a):
    out = a.copy()
    out[:, :, [1, -1]] = 1
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float16, np.float32])
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_numpy(name, dtype, layout):
    fn, ref = OPS[name]
    a = _values((2, 4, 5), dtype)
    arr = _layout(a, layout)
    t = T(arr)
    out = fn(t)
    _same(out, ref(a))
    np.testing.assert_array_equal(arr, a)  # out-of-place ops leave the input alone


INPLACE = {
    "scatter_": (lambda t: t.scatter_(1, L([[[1], [2]]]), 9), "scatter"),
    "scatter_add_": (lambda t: t.scatter_add_(0, L([[[1, 1]]]),
                                              T(np.ones((1, 1, 2), t._data.dtype))),
                     "scatter_add"),
    "index_add_": (lambda t: t.index_add_(1, L([0, 0]), T(np.ones((2, 2, 5), t._data.dtype))),
                   "index_add"),
    "index_copy_": (lambda t: t.index_copy_(2, L([1]), T(np.zeros((2, 4, 1), t._data.dtype))),
                    "index_copy"),
    "index_fill_": (lambda t: t.index_fill_(0, L([1]), 0), "index_fill"),
    "masked_scatter_": (lambda t: t.masked_scatter_(T(np.arange(5) > 2),
                                                    T(np.arange(40).astype(t._data.dtype))),
                        "masked_scatter"),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_op_matches_out_of_place(name, dtype, layout):
    fn, outname = INPLACE[name]
    a = _values((2, 4, 5), dtype)
    arr = _layout(a, layout)
    t = T(arr)
    expected_t = T(a.copy())
    view = t[1]
    r = fn(t)
    assert r is t and t._version == 1 and view._version == 1
    expected = fn(expected_t)
    np.testing.assert_array_equal(arr, np.asarray(expected._data))
    np.testing.assert_array_equal(np.asarray(view._data), arr[1])  # seen through the view


def test_scatter_reduce_multiply_and_add():
    x = et.ones(3)
    assert x.scatter(0, L([0, 0, 2]), et.tensor([2.0, 3.0, 4.0]), reduce="multiply").tolist() \
        == [6.0, 1.0, 4.0]
    assert x.scatter(0, L([0, 0]), et.tensor([2.0, 3.0]), reduce="add").tolist() == [6.0, 1.0, 1.0]


def test_masked_scatter_broadcasts_out_of_place():
    out = I.masked_scatter(et.zeros(4), T(np.array([[True], [False]])), et.arange(20.))
    assert out.tolist() == [[0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0]]


def test_masked_scatter_broadcast_mask_counts_each_repeat():
    a = np.arange(6.0).reshape(2, 3)
    mask = np.array([True, False, True])
    src = np.arange(10.0, 20.0)
    want = a.copy()
    want[np.broadcast_to(mask, a.shape)] = src[:4]
    assert I.masked_scatter(T(a), T(mask), T(src)).tolist() == want.tolist()
    with pytest.raises(RuntimeError, match=r"\(3 < 4\)"):
        I.masked_scatter(T(a), T(mask), T(src[:3]))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_takes_flat_indices_of_any_shape(accumulate):
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, -1], [5, 5]])
    src = np.array([1.0, 2.0, 3.0, 4.0])
    want = a.reshape(-1).copy()
    if accumulate:
        np.add.at(want, idx.reshape(-1), src)
    else:
        want[idx.reshape(-1)] = src
    assert I.put(T(a), L(idx), T(src), accumulate).tolist() == want.reshape(3, 4).tolist()
    x = T(a.copy())
    x.put_(L(idx), T(src), accumulate)
    assert x.tolist() == want.reshape(3, 4).tolist()


@pytest.mark.parametrize("bad", [12, -13])
def test_put_out_of_range_names_put_and_writes_nothing(bad):
    x = et.zeros(3, 4)
    for fn, op in ((I.put, "put"), (Tensor.put_, "put_")):
        with pytest.raises(IndexError, match=rf"^{op}\(\): out of range: tried to access index "
                                             rf"{bad} on a tensor of 12 elements"):
            fn(x, L([0, bad]), et.ones(2))
    assert x.tolist() == np.zeros((3, 4)).tolist()


def test_nonzero_forms():
    x = T(np.array([[0, 3], [4, 0]]))
    rows, cols = I.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0] and rows.dtype == et.int64
    nz = I.nonzero(x)
    assert nz.stride() == (1, 2) and nz.dtype == et.int64
    assert I.nonzero(et.tensor(3)).shape == (1, 0)
    assert I.nonzero(et.tensor(0)).shape == (0, 0)
    assert [t.tolist() for t in I.nonzero(et.tensor(3), as_tuple=True)] == [[0]]
    assert I.argwhere(et.tensor(0)).shape == (0, 0)


def test_zero_dim_and_empty_inputs():
    s = et.tensor(5.0)
    assert I.index_select(s, 0, L([0])).shape == ()
    assert I.gather(s, 0, L([0])).tolist() == [5.0]
    assert I.scatter(s, 0, L(0), et.tensor(2.0)).item() == 2.0
    assert I.masked_select(s, et.tensor(True)).tolist() == [5.0]
    assert s.repeat(2).tolist() == [5.0, 5.0] and I.tile(s, (2, 3)).shape == (2, 3)
    assert I.flip(s, ()).item() == 5.0 and I.roll(s, 1).item() == 5.0
    assert I.take(s, L([[0, -1]])).tolist() == [[5.0, 5.0]]
    assert I.repeat_interleave(s, 2).tolist() == [5.0, 5.0]
    assert I.index_fill(s, 0, L([0]), 1.0).item() == 1.0
    assert I.index_add(s, 0, L([0]), et.tensor(2.0)).item() == 7.0
    e = et.zeros(0, 3)
    assert I.roll(e, 1, 0).shape == (0, 3)
    assert I.gather(e, 0, T(np.zeros((0, 3), np.int64))).shape == (0, 3)
    assert e[L([])].shape == (0, 3) and e[:, [0, 2]].shape == (0, 2)
    assert I.index_add(et.zeros(3), 0, L([]), et.zeros(0)).tolist() == [0.0] * 3
    assert I.repeat_interleave(L([1, 2, 0])).tolist() == [0, 1, 1]
    assert I.repeat_interleave(et.zeros(3, 2), L([2]), 0).shape == (6, 2)
    assert I.repeat_interleave(et.zeros(3, 2), 2, 0, output_size=6).shape == (6, 2)


def test_index_add_int_alpha_truncates_and_bool_is_logical_or():
    x = L([1, 2])
    assert I.index_add(x, 0, L([1, 1]), L([3, 4]), alpha=2.5).tolist() == [1, 16]
    b = T(np.array([True, False]))
    assert I.index_add(b, 0, L([1, 1]), T(np.array([True, True]))).tolist() == [True, True]


def test_int32_indices_accepted_where_pytorch_accepts_them():
    i32 = T(np.array([[0]], dtype=np.int32))
    x = et.arange(12.).reshape(3, 4)
    assert I.gather(x, 0, i32).tolist() == [[0.0]]
    assert I.scatter(x, 0, i32, 5.0)[0, 0].item() == 5.0
    assert I.index_select(x, 0, T(np.array([2], np.int32))).tolist() == [[8.0, 9.0, 10.0, 11.0]]
    assert I.index_add(x, 0, T(np.array([0], np.int32)), et.ones(1, 4))[0, 0].item() == 1.0


# ------------------------------------------------------------------------------ errors
X = et.arange(12.).reshape(3, 4)
Y = et.arange(24.).reshape(2, 3, 4)


def _set(t, index, value):
    t = t.clone()
    t[index] = value


ERRORS = [
    (lambda: X[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X[-4], IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    (lambda: X[:, 7], IndexError, "index 7 is out of bounds for dimension 1 with size 4"),
    (lambda: X[None, :, 7], IndexError, "index 7 is out of bounds for dimension 2 with size 4"),
    (lambda: X[[0, 5]], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X[:, [-5]], IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    (lambda: X[::-1], ValueError, "step must be greater than zero"),
    (lambda: X[[0, 1], ::-2], ValueError, "step must be greater than zero"),
    (lambda: X[::0], ValueError, "slice step cannot be zero"),
    (lambda: X[1, 2, 3], IndexError, "too many indices for tensor of dimension 2"),
    (lambda: et.tensor(1.0)[0], IndexError, "invalid index of a 0-dim tensor"),
    (lambda: X[1.5], IndexError, "only integers, slices"),
    (lambda: X["a"], IndexError, "only integers, slices"),
    (lambda: X[et.tensor([0.0, 1.0])], IndexError, "must be long, int, byte or bool"),
    (lambda: X[L([0, 1]), L([0, 1, 2])], IndexError, r"shape mismatch: .* \[2\], \[3\]"),
    (lambda: X[T(np.array([True, False]))], IndexError, r"shape of the mask \[2\] at index 0"),
    (lambda: X[T(np.ones((3, 4), bool)), 0], IndexError, "too many indices"),
    (lambda: _set(X, 5, 1.0), IndexError, "index 5 is out of bounds"),
    (lambda: _set(X, [5], 1.0), IndexError, "index 5 is out of bounds"),
    (lambda: _set(X, slice(None, None, -1), 1.0), ValueError, "step must be greater than zero"),
    (lambda: _set(X, 0, et.ones(3)), RuntimeError, r"expanded size of the tensor \(4\)"),
    (lambda: _set(X, 0, et.ones(2, 4)), RuntimeError, "number of sizes provided"),
    (lambda: _set(X, [0, 1], et.ones(3)), RuntimeError, "cannot be broadcast to indexing result"),
    (lambda: _set(X, [0, 1], et.ones(2, 4, dtype=et.float64)), RuntimeError,
     "Index put requires the source and destination dtypes match"),
    (lambda: _set(X, 0, [1, 2, 3, 4]), TypeError, "can't assign a list"),
    (lambda: X.index_put((L([3]),), et.tensor(1.0)), IndexError, "index 3 is out of bounds"),
    (lambda: X.index_put((L([0]),), et.tensor(1.0, dtype=et.float64)), RuntimeError,
     "dtypes match, got Float for the destination and Double"),
    (lambda: X.index_put((L([0]), L([0]), L([0])), et.tensor(1.0)), IndexError,
     r"too many indices for tensor of dimension 2 \(got 3\)"),
    (lambda: X.index_put((0,), et.tensor(1.0)), TypeError, "expected Tensor as element 0"),
    (lambda: X.index_put((None, L([0])), et.tensor(1.0)), TypeError,
     "expected Tensor as element 0 in argument 1 \\(indices\\), but got NoneType"),
    (lambda: X.index_put((L([0]),), 1.0), TypeError, "must be Tensor"),
    (lambda: X.index_put((L([0, 1]),), et.ones(3), accumulate=True), RuntimeError,
     "cannot be broadcast"),
    (lambda: I.gather(X, 0, L([[5]])), IndexError,
     r"gather\(\): index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: I.gather(X, 0, L([[-1]])), RuntimeError, "index -1 is out of bounds"),
    (lambda: I.gather(X, 0, et.tensor([[0.0]])), RuntimeError,
     r"gather\(\): Expected dtype int32/int64 for index"),
    (lambda: I.gather(X, 0, L([0])), RuntimeError, "same number of dimensions"),
    (lambda: I.gather(X, 0, T(np.zeros((4, 5), np.int64))), RuntimeError,
     r"Size does not match at dimension 1 expected index \[4, 5\]"),
    (lambda: I.gather(X, 2, L([[0]])), IndexError, "Dimension out of range"),
    (lambda: I.scatter(X, 0, L([[5]]), X), IndexError, r"scatter\(\): index 5 is out of bounds"),
    (lambda: I.scatter(X, 0, L([[1]]), X.double()), RuntimeError,
     "Expected self.dtype to be equal to src.dtype"),
    (lambda: I.scatter(X, 0, T(np.zeros((3, 4), np.int64)), et.ones(2, 2)), RuntimeError,
     r"no larger size than src \[2, 2\]"),
    (lambda: I.scatter(X, 0, T(np.zeros(3, np.int64)), X), RuntimeError,
     "same number of dimensions as self"),
    (lambda: I.scatter(X, 0, L([[1]]), 1.0, reduce="max"), RuntimeError, "reduce argument"),
    (lambda: I.scatter_(X.clone(), 0, et.tensor([[1.0]]), 2.0), RuntimeError,
     r"scatter_\(\): Expected dtype int32/int64 for index"),
    (lambda: I.scatter_add(X, 0, L([[1]]), 2), TypeError, "must be Tensor"),
    (lambda: I.scatter_add(X, 0, L([[3]]), X), RuntimeError, "index 3 is out of bounds"),
    (lambda: I.index_select(X, 0, et.tensor([0.0])), RuntimeError,
     "Expected dtype int32 or int64 for index"),
    (lambda: I.index_select(X, 0, L([[0]])), IndexError, "Index is supposed to be a vector"),
    (lambda: I.index_select(X, 1, L([4])), IndexError,
     r"index_select\(\): index 4 is out of bounds for dimension 1 with size 4"),
    (lambda: I.index_select(X, 1, L([-1])), RuntimeError, "index -1 is out of bounds"),
    (lambda: I.index_select(et.tensor(5.0), 0, L([0, 0])), RuntimeError,
     "Index to scalar can have only 1 value"),
    (lambda: I.index_add(X, 0, L([0]), et.ones(1, 4, dtype=et.float64)), RuntimeError,
     r"self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda: I.index_add(X, 0, L([0]), et.ones(1, 3)), RuntimeError,
     "source tensor shape must match self tensor shape"),
    (lambda: I.index_add(X, 0, L([0, 1]), et.ones(1, 4)), RuntimeError,
     r"Number of indices \(2\) should be equal to source.size\(dim\)"),
    (lambda: I.index_add(X, 0, L([3]), et.ones(1, 4)), IndexError, "index 3 is out of bounds"),
    (lambda: I.index_add(X, 0, L([-1]), et.ones(1, 4)), RuntimeError, "index -1 is out of"),
    (lambda: I.index_add(X, 0, et.tensor([0.0]), et.ones(1, 4)), RuntimeError,
     "Expected dtype int32/int64 for index but got Float"),
    (lambda: I.index_add(X, 0, L([[0]]), et.ones(1, 4)), IndexError, "supposed to be a vector"),
    (lambda: I.index_copy(X, 0, L([3]), et.ones(1, 4)), IndexError,
     r"index_copy\(\): index 3 is out of bounds for dimension 0 with size 3"),
    (lambda: I.index_copy(X, 0, T(np.array([0], np.int32)), et.ones(1, 4)), RuntimeError,
     "Expected a long tensor for index, but got Int"),
    (lambda: I.index_copy(X, 0, L([0]), et.ones(1, 4, dtype=et.float64)), RuntimeError,
     "same dtype"),
    (lambda: I.index_copy(X, 0, L([0, 1]), et.ones(1, 4)), IndexError, r"Number of indices \(2\)"),
    (lambda: I.index_copy(X, 0, L([0]), et.ones(1, 3)), RuntimeError, "shape must match"),
    (lambda: I.index_fill(X, 0, L([3]), 1.0), IndexError, "index 3 is out of bounds"),
    (lambda: I.index_fill(X, 0, T(np.array([0], np.int32)), 1.0), IndexError,
     "Expected dtype int64 for index"),
    (lambda: I.index_fill(X, 0, L([0]), et.tensor([2.0])), RuntimeError,
     "only supports a 0-dimensional value tensor"),
    (lambda: I.index_fill(X, 0, L([[0]]), 1.0), RuntimeError, "Index has to be a vector/scalar"),
    (lambda: I.masked_select(X, L([1, 0, 1, 0])), RuntimeError, "expected BoolTensor for mask"),
    (lambda: I.masked_select(X, T(np.array([True, False, True]))), RuntimeError,
     r"size of tensor a \(4\) must match the size of tensor b \(3\)"),
    (lambda: I.masked_scatter(X, X > 2, et.ones(3)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    (lambda: I.masked_scatter(X, X > 2, et.ones(20, dtype=et.float64)), RuntimeError,
     "expected self and source to have same dtypes"),
    (lambda: I.masked_scatter(X, L([1]), et.ones(20)), RuntimeError, "only supports boolean"),
    (lambda: I.masked_scatter_(et.zeros(4), T(np.array([[True], [False]])), et.ones(8)),
     RuntimeError, "cannot be broadcast"),
    (lambda: I.take(X, L([12])), IndexError,
     r"take\(\): out of range: tried to access index 12 on a tensor of 12 elements"),
    (lambda: I.take(X, L([-13])), IndexError, "tried to access index -13"),
    (lambda: I.take(X, T(np.array([1], np.int32))), RuntimeError, "Expected a long tensor"),
    (lambda: I.take_along_dim(X, T(np.array([[0]], np.int32)), 1), RuntimeError,
     "dtype of indices should be Long but got Int"),
    (lambda: I.take_along_dim(X, L([[4]]), 1), IndexError, "index 4 is out of bounds"),
    (lambda: I.take_along_dim(X, L([0]), 1), RuntimeError, "same number of dimensions"),
    (lambda: I.take_along_dim(X, T(np.zeros((2, 1), np.int64)), 1), RuntimeError,
     r"size of tensor a \(3\) must match the size of tensor b \(2\)"),
    (lambda: I.roll(X, (1, 2), (0,)), RuntimeError, "shifts and dimensions must align"),
    (lambda: I.roll(X, (1, 2)), RuntimeError, "shifts: 2, dims:0"),
    (lambda: I.roll(et.tensor(1.0), 1, 0), IndexError, "tensor has no dimensions"),
    (lambda: I.roll(X, 1, 2), IndexError, "Dimension out of range"),
    (lambda: I.flip(X, (0, 0)), RuntimeError, "dim 0 appears multiple times"),
    (lambda: I.flip(X, (2,)), IndexError, "Dimension out of range"),
    (lambda: I.fliplr(L([1, 2])), RuntimeError, "Input must be >= 2-d"),
    (lambda: I.flipud(et.tensor(1)), RuntimeError, "Input must be >= 1-d"),
    (lambda: X.repeat(2), RuntimeError, "can not be smaller than number of dimensions"),
    (lambda: X.repeat(2, -1), RuntimeError, r"negative dimension -4: \[6, -4\]"),
    (lambda: X.repeat(), TypeError, "missing 1 required positional"),
    (lambda: I.repeat_interleave(X, -1), RuntimeError, "Repeats must be non-negative"),
    (lambda: I.repeat_interleave(X, L([1, 2]), 0), RuntimeError,
     r"repeats.size\(0\) = 2 and input.size\(0\) = 3"),
    (lambda: I.repeat_interleave(X, L([1, 2, -1]), 0), RuntimeError, "can not be negative"),
    (lambda: I.repeat_interleave(X, et.tensor([1.0, 2.0, 1.0]), 0), NotImplementedError,
     "not implemented for 'Float'"),
    (lambda: I.repeat_interleave(L([[1, 2]])), RuntimeError, "only accept 1D vector"),
    (lambda: I.repeat_interleave(X, 2, 0, output_size=5), RuntimeError,
     "Invalid output_size, expected 6 but got 5"),
    (lambda: I.narrow_copy(X, 1, 3, 2), RuntimeError,
     r"start \(3\) \+ length \(2\) exceeds dimension size \(4\)"),
    (lambda: I.narrow_copy(X, 1, 0, -1), RuntimeError, "exceeds dimension size"),
    (lambda: I.narrow_copy(X, 1, 5, 0), IndexError, "start out of range"),
    (lambda: I.narrow_copy(et.tensor(1.0), 0, 0, 1), RuntimeError, "0-dim"),
    (lambda: I.masked_scatter_(et.zeros(1, 4).expand(2, 4), et.ones(2, 4, dtype=et.bool),
                               et.ones(2, 4)), RuntimeError, "more than one element"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, exc, msg = ERRORS[case]
    with pytest.raises(exc, match=msg):
        fn()


def test_out_of_range_errors_are_index_and_runtime_errors():
    with pytest.raises(IndexError):
        I.gather(X, 0, L([[9]]))
    with pytest.raises(RuntimeError):
        I.index_select(X, 0, L([9]))


def test_failed_writes_leave_the_tensor_untouched():
    x = et.zeros(3)
    for bad in (lambda: x.index_put_((L([0, 5]),), et.ones(2), accumulate=True),
                lambda: x.scatter_add_(0, L([0, 3]), et.ones(2)),
                lambda: x.index_add_(0, L([0, 3]), et.ones(2)),
                lambda: x.index_fill_(0, L([1, 3]), 1.0),
                lambda: x.__setitem__(L([0, 3]), 1.0)):
        with pytest.raises(IndexError):
            bad()
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0


def test_registry_entries():
    ops = et.OPS
    for name in ("getitem", "getitem_backward", "setitem", "index_put", "index_select", "gather",
                 "scatter", "scatter_add", "index_add", "index_copy", "index_fill",
                 "masked_scatter", "flip", "roll", "repeat"):
        assert ops[name].differentiable and not ops[name].inplace
    for name in ("setitem_", "index_put_", "scatter_", "scatter_add_", "index_add_",
                 "index_copy_", "index_fill_", "masked_scatter_"):
        assert ops[name].inplace and ops[name[:-1]].differentiable  # autograd's twin rule
    assert not ops["nonzero"].differentiable
    for name in FAMILY:
        assert getattr(I, name).__doc__ and ">>>" in getattr(I, name).__doc__


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_index_fill_masked_write_matches_numpy_on_strided_inputs(dim):
    """index_fill / index_fill_ write through a mask along ``dim``: duplicate and negative
    indices, and a transposed (strided) input filled in place, against NumPy's fancy set."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((3, 5, 4)).astype(np.float32)
    for x in (base, base.transpose(2, 1, 0)):
        n = x.shape[dim]
        idx = np.array([0, n - 1, -1, 0, -n], dtype=np.int64)
        want = x.copy()
        want[(slice(None),) * (dim % 3) + (idx,)] = 2.5
        got = et.index_fill(et.tensor(x), dim, et.tensor(idx), 2.5)
        np.testing.assert_array_equal(got.numpy(), want)
        t = et.tensor(base).permute(2, 1, 0) if x is not base else et.tensor(base)
        assert t.index_fill_(dim, et.tensor(idx), 2.5) is t
        np.testing.assert_array_equal(t.numpy(), want)
