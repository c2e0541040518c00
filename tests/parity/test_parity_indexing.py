"""Indexing parity with PyTorch 2.13 CPU: values, dtypes, shapes, and for views the strides,
storage offsets and aliasing; in-place writes through views; the exception types of bad input.

Non-contiguous inputs are the same strided window over the same buffer on both sides (a NumPy
view for ember, ``as_strided`` for torch), so storage offsets are comparable.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402
from ember.tensor._tensor import Tensor  # noqa: E402

# name -> (shape, strides, offset) of a window over a 64-element buffer
WINDOWS = {
    "contiguous": ((2, 3, 4), (12, 4, 1), 0),
    "permuted": ((4, 2, 3), (1, 12, 4), 0),
    "stepped": ((2, 3, 4), (24, 6, 1), 5),
    "transposed": ((2, 3, 4), (1, 8, 2), 0),
    "expanded": ((2, 3, 4), (0, 4, 1), 3),
}


def _pair(window: str, dtype=np.float32):
    shape, strides, offset = WINDOWS[window]
    buf = np.arange(64).astype(dtype)
    item = buf.itemsize
    view = np.lib.stride_tricks.as_strided(buf[offset:], shape, tuple(s * item for s in strides))
    ours = Tensor._make(np.ndarray(shape, buf.dtype, buffer=buf, offset=offset * item,
                                   strides=tuple(s * item for s in strides)))
    theirs = torch.from_numpy(buf.copy()).as_strided(shape, strides, offset)
    np.testing.assert_array_equal(np.asarray(ours._data), view)
    return ours, theirs


def _conv(index, lib):
    """The index for one library: lists stay lists, ``("T", x)`` becomes a tensor."""
    if isinstance(index, tuple) and len(index) == 2 and index[0] == "T":
        arr = np.asarray(index[1])
        return et.tensor(arr.tolist(), dtype=_et_dtype(arr)) if lib == "et" else torch.tensor(arr)
    if isinstance(index, tuple):
        return tuple(_conv(i, lib) for i in index)
    return index


def _et_dtype(arr):
    return {np.dtype(bool): et.bool, np.dtype(np.int64): et.int64,
            np.dtype(np.int32): et.int32, np.dtype(np.uint8): et.uint8}[arr.dtype]


def _check_same(ours, theirs, view_geometry=True):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(np.asarray(ours._data), theirs.numpy())
    if not view_geometry:  # a fresh result (PyTorch sometimes returns a view of a temporary)
        return
    is_view = theirs._base is not None
    assert (ours._base is not None) == is_view
    if is_view:
        assert ours.stride() == theirs.stride()
        assert ours.storage_offset() == theirs.storage_offset()


INDICES = [
    0, -1, (1, 2), (0, -1, 3), slice(1, None), (slice(None), slice(None, None, 2)),
    (slice(-10, 2), slice(3, 1)), (slice(10, None),), (None,), (slice(None), None),
    (Ellipsis, None), (None, slice(None, None, 2)), (None, 1), (1, None), (None, None),
    (slice(1, 3), None, slice(None, None, 2)), (slice(0, 1, 5),), (Ellipsis,), (),
    (1, 2, None), (None, Ellipsis, None), (Ellipsis, 1, Ellipsis), (Ellipsis, 1),
    (1, Ellipsis, slice(1, None), None), ("T", 1), ("T", True), True, False,
    [0, 1], [[0, 1], [1, 0]], (slice(None), [0, 2], [1, 0]), ([0, 1], slice(None), [1, 3]),
    (1, slice(None), [1, 3]), (slice(None), 1, [1, 3]), (None, [0, 1], None, [1, 0]),
    (0, None, [1, 0]), (Ellipsis, [0, 1]), (slice(1, None), Ellipsis, [0, -1]),
    ([-1], slice(1, None), 0), [True, False], ([True, False], 1, [True, True, False]),
    [], ("T", [1, 0]), ("T", np.array([1, 0], np.int32)), ("T", [[True, False, True]] * 2),
    (slice(None), ("T", [[0], [1]]), ("T", [0, 1])), ([0], None, [1]),
    # integer tensors over the leading dims (broadcast together; out of range; mismatched)
    (("T", [1, 0]), ("T", [2, -3])), (("T", [[1], [0]]), ("T", [0, 2, 1]), ("T", [3])),
    (("T", [0, 1]), ("T", [0, 3])), (("T", [0, 1]), ("T", [0, 1, 2])),
]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")  # torch's deprecation notice
@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_parity(index, window):
    ours, theirs = _pair(window)
    try:
        expected = theirs[_conv(index, "torch")]
    except (IndexError, RuntimeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            ours[_conv(index, "et")]
        return
    _check_same(ours[_conv(index, "et")], expected)


@pytest.mark.parametrize("index", [(Ellipsis, None), (None, 0, slice(1, None)), (1, None, 0),
                                   (slice(None), None, slice(None), None)])
def test_chained_views_parity(index):
    ours, theirs = _pair("permuted")
    a, b = ours[1:, None][index], theirs[1:, None][index]
    _check_same(a, b)
    _check_same(a[..., None][0], b[..., None][0])


SETITEMS = [
    (0, 5.0), ((slice(None), 1), "row"), ((Ellipsis, 2), 1), ((None, 1, slice(1, 3)), "row"),
    ([0, 1], -2.0), ((slice(None), [0, 2], [1, 3]), 7.5), ("mask", 0.25),
    ((1, [0, 1]), "pair4"), ((), 3.0),
]


def _value(kind, lib, shape):
    if not isinstance(kind, str):
        return kind
    arr = {"row": np.arange(4, dtype=np.float32), "pair": np.arange(2, dtype=np.float32),
           "pair4": np.arange(8, dtype=np.float32).reshape(1, 2, 4)}[kind]
    return torch.from_numpy(arr.copy()) if lib == "torch" else Tensor._make(arr.copy())


@pytest.mark.parametrize("window", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("index,value", SETITEMS)
def test_setitem_parity(index, value, window):
    ours, theirs = _pair(window)
    o_view, t_view = ours[0], theirs[0]
    if index == "mask":
        o_idx, t_idx = ours > 30, theirs > 30
    else:
        o_idx, t_idx = index, index
    theirs[t_idx] = _value(value, "torch", None)
    ours[o_idx] = _value(value, "et", None)
    np.testing.assert_array_equal(np.asarray(ours._data), theirs.numpy())
    np.testing.assert_array_equal(np.asarray(o_view._data), t_view.numpy())
    assert ours._version == o_view._version == 1


IDX = [[0, 2, 1, 0], [1, 1, 0, 2]]
OPS = [
    ("index_select", lambda m, x: m.index_select(x, 1, lib(m).tensor([2, 0, 2]))),
    ("gather", lambda m, x: m.gather(x, 1, lib(m).tensor([[[0, 2], [1, 1]], [[2, 2], [0, 1]]]))),
    ("scatter", lambda m, x: m.scatter(x, 2, lib(m).tensor([[[3, 0]]]),
                                       lib(m).ones(1, 1, 2, dtype=x.dtype))),
    ("scatter_value", lambda m, x: m.scatter(x, 0, lib(m).tensor([[[1, 0]]]), 5)),
    ("scatter_add", lambda m, x: m.scatter_add(x, 1, lib(m).tensor([IDX, IDX]),
                                               lib(m).ones(2, 2, 4, dtype=x.dtype))),
    ("index_add", lambda m, x: m.index_add(x, 2, lib(m).tensor([3, 3, 0]),
                                           lib(m).ones(2, 3, 3, dtype=x.dtype), alpha=2)),
    ("index_copy", lambda m, x: m.index_copy(x, 1, lib(m).tensor([2, 0]),
                                             lib(m).zeros(2, 2, 4, dtype=x.dtype))),
    ("index_fill", lambda m, x: m.index_fill(x, 2, lib(m).tensor([1, -1]), 7)),
    ("masked_select", lambda m, x: m.masked_select(x, lib(m).tensor([True, False, True, True]))),
    ("masked_scatter", lambda m, x: m.masked_scatter(
        x, lib(m).tensor([[True], [False], [True]]), lib(m).arange(30).to(x.dtype))),
    ("nonzero", lambda m, x: m.nonzero(x)),
    ("argwhere", lambda m, x: m.argwhere(x)),
    ("take", lambda m, x: m.take(x, lib(m).tensor([[0, -1], [7, 23]]))),
    ("take_along_dim", lambda m, x: m.take_along_dim(x, lib(m).tensor([[[3], [0], [1]]]), 2)),
    # torch's dim=None path calls view(-1), which fails on non-contiguous input
    ("take_along_dim_flat", lambda m, x: m.take_along_dim(x.contiguous() if m is torch else x,
                                                          lib(m).tensor([5, 0]))),
    ("flip", lambda m, x: m.flip(x, (0, 2))),
    ("fliplr", lambda m, x: m.fliplr(x)),
    ("flipud", lambda m, x: m.flipud(x)),
    ("roll", lambda m, x: m.roll(x, (1, -5), (0, 2))),
    ("roll_flat", lambda m, x: m.roll(x, 7)),
    ("repeat", lambda m, x: x.repeat(2, 1, 1, 2)),
    ("tile", lambda m, x: m.tile(x, (2,))),
    ("repeat_interleave", lambda m, x: m.repeat_interleave(x, 2, 1)),
    ("repeat_interleave_t", lambda m, x: m.repeat_interleave(x, lib(m).tensor([0, 2, 1]), 1)),
    ("repeat_interleave_flat", lambda m, x: m.repeat_interleave(x, 2)),
    ("narrow_copy", lambda m, x: m.narrow_copy(x, 2, -3, 2)),
    ("index_put_acc", lambda m, x: x.index_put((lib(m).tensor([0, 0, 1]),
                                                lib(m).tensor([2, 2, 0])),
                                               lib(m).ones(3, 4, dtype=x.dtype),
                                               accumulate=True)),
]


def lib(m):
    return torch if m is torch else et


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("window", ["contiguous", "transposed"])
@pytest.mark.parametrize("name,fn", OPS, ids=[n for n, _ in OPS])
def test_op_parity(name, fn, window, dtype):
    ours, theirs = _pair(window, np.float32)
    ours = ours.to(getattr(et, dtype)) if dtype != "float32" else ours
    theirs = theirs.to(getattr(torch, dtype)) if dtype != "float32" else theirs
    theirs_out, ours_out = fn(torch, theirs), fn(et, ours)
    _check_same(ours_out, theirs_out, view_geometry=False)
    if name in ("nonzero", "argwhere"):
        assert ours_out.stride() == theirs_out.stride()


X = np.arange(12.0, dtype=np.float32).reshape(3, 4)
ERRORS = [
    lambda m: m.gather(A(m), 0, lib(m).tensor([[5]])),
    lambda m: m.gather(A(m), 0, lib(m).tensor([[0.0]])),
    lambda m: m.gather(A(m), 0, lib(m).tensor([0])),
    lambda m: m.scatter(A(m), 0, lib(m).tensor([[5]]), A(m)),
    lambda m: m.scatter(A(m), 0, lib(m).tensor([[1]]), A(m).double()),
    lambda m: m.scatter_add(A(m), 0, lib(m).tensor([[1]]), 2),
    lambda m: m.index_select(A(m), 1, lib(m).tensor([4])),
    lambda m: m.index_select(A(m), 0, lib(m).tensor([[0]])),
    lambda m: m.index_add(A(m), 0, lib(m).tensor([3]), lib(m).ones(1, 4)),
    lambda m: m.index_add(A(m), 0, lib(m).tensor([0]), lib(m).ones(1, 3)),
    lambda m: m.index_copy(A(m), 0, lib(m).tensor([3]), lib(m).ones(1, 4)),
    lambda m: m.index_fill(A(m), 0, lib(m).tensor([3]), 1.0),
    lambda m: m.masked_select(A(m), lib(m).tensor([1, 0, 1, 0])),
    lambda m: m.masked_scatter(A(m), A(m) > 2, lib(m).ones(3)),
    lambda m: m.take(A(m), lib(m).tensor([12])),
    lambda m: m.roll(A(m), (1, 2), (0,)),
    lambda m: m.flip(A(m), (0, 0)),
    lambda m: m.fliplr(lib(m).tensor([1, 2])),
    lambda m: A(m).repeat(2),
    lambda m: m.repeat_interleave(A(m), -1),
    lambda m: m.repeat_interleave(A(m), lib(m).tensor([1, 2]), 0),
    lambda m: m.narrow_copy(A(m), 1, 3, 2),
    lambda m: A(m)[::-1],
    lambda m: A(m)[5],
    lambda m: A(m)[:, [0, 7]],
    lambda m: A(m)[1, 2, 3],
    lambda m: A(m).index_put((lib(m).tensor([0]),), lib(m).tensor(1.0, dtype=lib(m).float64)),
]


def A(m):
    return torch.from_numpy(X.copy()) if m is torch else Tensor._make(X.copy())


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_error_types_parity(case):
    fn = ERRORS[case]
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(Exception) as ours:
        fn(et)
    assert isinstance(ours.value, type(theirs.value)), (theirs.value, ours.value)


def test_index_put_and_version_counter_parity():
    ours, theirs = _pair("contiguous")
    for t, m in ((ours, et), (theirs, torch)):
        v = t[1]
        t.index_put_((lib(m).tensor([0, 0]),), lib(m).ones(3, 4, dtype=t.dtype), accumulate=True)
        v[0, 0] = 100
    np.testing.assert_array_equal(np.asarray(ours._data), theirs.numpy())
    assert ours._version == theirs._version
