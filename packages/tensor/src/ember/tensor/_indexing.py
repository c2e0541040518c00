"""Indexing: ``t[index]``, ``t[index] = value``, index_put, index_select, masks, nonzero and
take. Gathers and scatters along one dim are in ``_scatter``; flips, rolls and repeats are
movement ops, in ``_shape``.

Basic indexing (ints, slices with a positive step, ``...``, ``None``) returns a view that shares
storage with PyTorch's exact strides and storage offset. Advanced indexing (integer or bool
tensors and lists, mixed with basic items) returns a new tensor; its dims go where NumPy and
PyTorch put them (in place when the advanced indices are adjacent, first otherwise). Ints are
applied as selections before any advanced index, as PyTorch does.

Every index is validated before memory is touched: an out-of-range index raises IndexError
naming the op, the index and the size. Where PyTorch raises RuntimeError for that case (gather,
scatter, index_select, index_add) the error is an :class:`IndexOutOfBoundsError`, which is both.

Accumulating writes (``index_put_(accumulate=True)``, ``index_add``, ``scatter_add``) go through
the ``index_add`` kernel of ``ember.tensor.kernels``.
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

from . import _dtype as D
from ._checks import (
    broadcast_shapes,
    check_inplace,
    check_same_device,
    checked_scalar,
    scalar_type_name,
)
from ._fpstate import quiet
from ._registry import array_module, defop, with_out
from ._tensor import Tensor, _legacy_name, _ptr, _root, _wrap_dim
from .kernels import get as _kernel

__all__ = [
    "getitem", "getitem_backward", "setitem", "setitem_copy", "index_put", "index_put_",
    "index_select", "masked_select", "masked_scatter", "masked_scatter_", "nonzero",
    "nonzero_static", "argwhere",
    "take", "take_along_dim", "put", "put_", "unravel_index",
]

_make = Tensor._make
_ndarray = np.ndarray
_INT64 = np.dtype(np.int64)


class IndexOutOfBoundsError(RuntimeError, IndexError):
    """An index out of range in an op where PyTorch raises RuntimeError (gather, scatter,
    index_select, index_add): a RuntimeError first, as PyTorch's, catchable as IndexError
    too."""


# ------------------------------------------------------------------------------ small helpers
_tname = scalar_type_name


def _need_tensor(x, op: str, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


_same_device = check_same_device


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


_bounds = None  # kernels/cpu/scatter.py's index_bounds, imported on the first check (Numba)
_ksc = None  # kernels/cpu/scatter.py, imported by the first index_add on it (Numba)


def _first_bad(arr, lo: int, hi: int):
    """The first value of ``arr`` outside ``[lo, hi)``, or None: NumPy memory by the one-pass
    min / max kernel (0.3 us at 64 indices, where two reductions cost 2), CuPy's by its
    reductions; the position is looked for only when one is out."""
    global _bounds
    n = arr.size
    if n == 0:
        return None
    if arr.__class__ is _ndarray and arr.dtype.kind in "iu":
        if _bounds is None:
            from .kernels.cpu.scatter import index_bounds as _bounds
        a, b = _bounds(arr)
        if a >= lo and b < hi:
            return None
    elif int(arr.min()) >= lo and int(arr.max()) < hi:
        return None
    xp = array_module(arr)
    flat = arr.reshape(-1)
    bad = xp.flatnonzero((flat < lo) | (flat >= hi))
    return int(flat[int(bad[0])])


def _check_range(arr, size: int, dim: int, op: str | None, negative: bool = False,
                 exc: type = IndexError) -> None:
    v = _first_bad(arr, -size if negative else 0, size)
    if v is not None:
        prefix = f"{op}(): " if op else ""
        raise exc(f"{prefix}index {v} is out of bounds for dimension {dim} with size {size}")


def _wrap_negative(arr, size: int):
    if arr.size and int(arr.min()) < 0:
        xp = array_module(arr)
        return xp.where(arr < 0, arr + size, arr)
    return arr


def _on(arr, xp):
    """``arr`` moved to the array module ``xp`` (indices may come from the other device)."""
    if xp is np:
        return arr if isinstance(arr, _ndarray) else arr.get()
    return xp.asarray(arr)


def _dims_arg(dims, op: str) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return tuple(operator.index(d) for d in dims)


def _scalar_of(value, op: str):
    """A Python number from a number or a 0-d tensor; TypeError otherwise."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                f"{op}(): only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s).")
        return value.item()
    if isinstance(value, (numbers.Number, np.generic)):
        return value
    raise TypeError(f"{op}(): value must be a number or a 0-dim Tensor, got "
                    f"{type(value).__name__}")


# ------------------------------------------------------------------------------ accumulation
def _kernel_index_add(out3, index, src3, alpha) -> None:
    """``out3[p, index[n], q] += alpha * src3[p, n, q]`` (indices already in range, ``out3``
    and ``src3`` C-contiguous). The index_add kernel takes real numbers (on CUDA floats only);
    complex numbers add as their real and imaginary parts, and the dtypes the kernel does not
    take (bool, bfloat16, integers on CUDA) go through scatter_dim's "add"."""
    xp = array_module(out3)
    kind = out3.dtype.kind
    if kind == "c":
        if alpha != 1:
            src3 = (src3 * alpha).astype(out3.dtype)
            alpha = 1
        real = out3.real.dtype
        out3, src3, kind = out3.view(real), src3.view(real), "f"
    if kind == "f" or (kind in "iu" and xp is np):
        if xp is np:  # the CPU kernel, without its checks of what its callers checked
            global _ksc
            if _ksc is None:
                from .kernels.cpu import scatter as _ksc
            _ksc._index_add_run(out3, index, src3, alpha)
        else:
            _kernel("index_add", xp)(out3, index, src3, alpha)
        return
    if kind == "b":
        if not alpha:  # adding is a logical or; a zero alpha adds nothing
            return
    elif alpha != 1:
        src3 = (src3 * alpha).astype(out3.dtype)
    P, N, Q = src3.shape
    _kernel("scatter_dim", xp)(out3, xp.broadcast_to(index.reshape(1, N, 1), (P, N, Q)), src3,
                               "add")


def _index_add_into(w, P: int, M: int, Q: int, index, src3, alpha) -> None:
    """index_add into ``w`` seen as (P, M, Q), whatever its layout."""
    if src3.size == 0:
        return
    xp = array_module(w)
    src3 = xp.ascontiguousarray(src3, dtype=w.dtype)
    index = xp.ascontiguousarray(index, dtype=np.int64)
    if w.flags.c_contiguous:
        _kernel_index_add(w.reshape(P, M, Q), index, src3, alpha)
        return
    work = xp.ascontiguousarray(w)
    _kernel_index_add(work.reshape(P, M, Q), index, src3, alpha)
    w[...] = work


def _accumulate(w, adv: list, vals) -> None:
    """``w[advanced index] += vals`` with duplicates summed; ``adv`` is [(dim, int array)]
    (in range, negatives allowed) and ``vals`` has the indexing result's shape."""
    xp = array_module(w)
    dims = [d for d, _ in adv]
    sizes = [w.shape[d] for d in dims]
    arrays = [_wrap_negative(a, w.shape[d]) for d, a in adv]
    if len(arrays) > 1:
        arrays = xp.broadcast_arrays(*arrays)
    bshape = arrays[0].shape
    flat = arrays[0].astype(np.int64, copy=False)
    for a, n in zip(arrays[1:], sizes[1:]):
        flat = flat * n + a
    k, nb = len(dims), len(bshape)
    rest = [w.shape[d] for d in range(w.ndim) if d not in dims]
    # the indexed dims first (no move where they already lead)
    wm = w if dims == list(range(k)) else xp.moveaxis(w, dims, list(range(k)))
    if dims[0] and dims == list(range(dims[0], dims[0] + k)):
        vals = xp.moveaxis(vals, list(range(dims[0], dims[0] + nb)), list(range(nb)))
    _index_add_into(wm, 1, _prod(sizes), _prod(rest), flat.reshape(-1),
                    vals.reshape(1, _prod(bshape), _prod(rest)), 1)


# ------------------------------------------------------------------------------ index parsing
_NONE, _ELL, _INT, _SLICE, _BOOL, _ARR, _MASK = range(7)
_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
              "are valid indices (got {})")
_BAD_TENSOR = "tensors used as indices must be long, int, byte or bool tensors"


def _seq_as_tuple(seq: list) -> bool:
    """PyTorch's rule: a short list holding tensors, sequences, slices, ``...`` or ``None`` is
    read as a tuple of indices."""
    if len(seq) >= 32:
        return False
    for o in seq:
        if isinstance(o, (Tensor, _ndarray, list, tuple, slice)) or o is None or o is Ellipsis:
            return True
    return False


def _items(index) -> tuple:
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and _seq_as_tuple(index):
        return tuple(index)
    return (index,)


def _array_item(arr, xp, zero_d_as_int: bool):
    kind = arr.dtype.kind
    if kind not in "biu":
        raise IndexError(_BAD_TENSOR)
    if arr.ndim == 0 and zero_d_as_int:
        return (_BOOL, bool(arr)) if kind == "b" else (_INT, int(arr))
    arr = _on(arr, xp)
    if kind == "b" or arr.dtype == np.uint8:
        if arr.ndim == 0:
            return _BOOL, bool(arr)
        return _MASK, arr.astype(bool, copy=False)
    return _ARR, arr


def _classify(item, xp, zero_d_as_int: bool = True):
    if item is None:
        return _NONE, None
    if item is Ellipsis:
        return _ELL, None
    if isinstance(item, (bool, np.bool_)):
        return _BOOL, bool(item)
    if isinstance(item, (int, np.integer)):
        return _INT, int(item)
    if isinstance(item, slice):
        return _SLICE, item
    if isinstance(item, Tensor):
        return _array_item(item._data, xp, zero_d_as_int)
    if isinstance(item, _ndarray) or hasattr(item, "__cuda_array_interface__"):
        return _array_item(item, xp, zero_d_as_int)
    if isinstance(item, (list, tuple, range)):  # a range indexes as the list of its items
        try:
            arr = np.asarray(item)
        except (ValueError, TypeError):
            raise IndexError(_BAD_INDEX.format(type(item).__name__)) from None
        if arr.size == 0:
            arr = arr.astype(np.int64)
        return _array_item(arr, xp, False)
    if hasattr(item, "__index__") and not isinstance(item, float):
        return _INT, operator.index(item)
    raise IndexError(_BAD_INDEX.format(type(item).__name__))


def _parse(data, items, zero_d_as_int: bool = True):
    """Walk the index items like PyTorch's applySlicing.

    Returns ``(np_index, shape, strides, offset, inserted, adv)``: a NumPy basic index giving
    the view's shape, PyTorch's strides and offset (in elements, from ``data``'s first
    element), whether a dim was inserted, and the advanced indices as [(view dim, array,
    from_mask)].
    """
    xp = array_module(data)
    parsed = [_classify(it, xp, zero_d_as_int) for it in items]
    ndim = data.ndim
    consumed = 0
    for kind, p in parsed:
        if kind in (_INT, _SLICE, _ARR):
            consumed += 1
        elif kind == _MASK:
            consumed += p.ndim
    if consumed > ndim:
        if ndim == 0 and any(k == _INT for k, _ in parsed):
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    item = data.itemsize
    shape = list(data.shape)
    strides = [s // item for s in data.strides]
    offset = 0
    np_index: list = []
    adv: list = []
    inserted = False
    dim = 0
    ellipsis_done = False
    for kind, p in parsed:
        if kind == _INT:
            size = shape[dim]
            if not -size <= p < size:
                raise IndexError(f"index {p} is out of bounds for dimension {dim} with size {size}")
            if p < 0:
                p += size
            offset += p * strides[dim]
            del shape[dim], strides[dim]
            np_index.append(p)
        elif kind == _SLICE:
            step = 1 if p.step is None else operator.index(p.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(p.start, p.stop).indices(shape[dim])
            stop = max(stop, start)
            offset += start * strides[dim]
            shape[dim] = (stop - start + step - 1) // step
            strides[dim] *= step
            np_index.append(slice(start, stop, step))
            dim += 1
        elif kind == _NONE or kind == _BOOL:
            shape.insert(dim, 1)
            strides.insert(dim, shape[dim + 1] * strides[dim] if dim + 1 < len(shape) else 1)
            np_index.append(None)
            inserted = True
            if kind == _BOOL:
                adv.append((dim, xp.zeros(1 if p else 0, dtype=np.int64), True))
            dim += 1
        elif kind == _ELL:
            if not ellipsis_done:
                n = ndim - consumed
                np_index.extend([slice(None)] * n)
                dim += n
                ellipsis_done = True
        elif kind == _ARR:
            np_index.append(slice(None))
            adv.append((dim, p, False))
            dim += 1
        else:  # bool mask over p.ndim dims
            for j, m in enumerate(p.shape):
                if m != shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(p.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {shape} at index {dim + j}")
            for a in xp.nonzero(p):
                np_index.append(slice(None))
                adv.append((dim, a, True))
                dim += 1
    return tuple(np_index), shape, strides, offset, inserted, adv


def _view_array(data, np_index, shape, strides, offset, inserted):
    """The ndarray view of ``data`` with PyTorch's geometry, sharing memory."""
    item = data.itemsize
    bstrides = tuple(s * item for s in strides)
    r = data[np_index + (Ellipsis,)]  # the Ellipsis keeps all-int indices a 0-d view
    if r.strides == bstrides and r.size and not inserted:
        return r
    if isinstance(data, _ndarray):
        root = _root(data)
        try:
            return np.ndarray(tuple(shape), data.dtype, buffer=root,
                              offset=_ptr(data) - _ptr(root) + offset * item, strides=bstrides)
        except (TypeError, ValueError, BufferError):
            pass
    if r.strides == bstrides:
        return r
    xp = array_module(data)
    return xp.lib.stride_tricks.as_strided(r, tuple(shape), bstrides)


def _check_adv(view, adv: list):
    """Validate advanced indices against ``view``; return (index tuple, result shape)."""
    shape = view.shape
    idx = [slice(None)] * view.ndim
    shapes = []
    for d, a, from_mask in adv:
        if not from_mask:
            _check_range(a, shape[d], d, None, negative=True)
        idx[d] = a
        shapes.append(a.shape)
    try:
        bshape = broadcast_shapes(None, *shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {', '.join(str(list(s)) for s in shapes)}") from None
    first, last = adv[0][0], adv[-1][0]
    if last - first == len(adv) - 1:  # adjacent (dims ascend): the result's dims go in place
        return tuple(idx), shape[:first] + bshape + shape[last + 1:]
    dims = {d for d, _, _ in adv}
    return tuple(idx), bshape + tuple(n for d, n in enumerate(shape) if d not in dims)


def _basic_view(data, index):
    """The view for an index of in-range ints and slices of int bounds and positive step
    (one, or a tuple no longer than the array's dims), or None for any other index. NumPy's
    basic indexing gives exactly PyTorch's shape, strides and offset for these, so they need
    no parsing; an empty result is left to the parser (NumPy and PyTorch stride it
    differently)."""
    items = index if index.__class__ is tuple else (index,)
    shape = data.shape
    if len(items) > len(shape):
        return None
    for i, it in enumerate(items):
        c = it.__class__
        if c is int:
            if not -shape[i] <= it < shape[i]:
                return None
        elif c is slice:
            a, b, st = it.start, it.stop, it.step
            if not ((a is None or a.__class__ is int) and (b is None or b.__class__ is int) and
                    (st is None or (st.__class__ is int and st > 0))):
                return None
        else:
            return None
    r = data[(*items, Ellipsis)]  # the Ellipsis keeps all-int indices a 0-d view
    return r if r.size else None


def _rows_index(data, index, check: bool = True):
    """For ``index`` integer tensors of at least one dim each, one per leading dim, alone or
    in a tuple (``x[idx]``, ``x[i, j]``, index_put's indices: the commonest advanced indices)
    on NumPy memory: the index arrays, checked to be in range (unless not ``check``: NumPy's
    reading through them checks that), else None."""
    if index.__class__ is Tensor:
        index = (index,)
    elif index.__class__ is not tuple or not index:
        return None
    shape = data.shape
    if len(index) > len(shape) or data.__class__ is not _ndarray:
        return None
    for it in index:
        if it.__class__ is not Tensor:
            return None
        a = it._data
        if a.__class__ is not _ndarray or not a.ndim or not (
                a.dtype.kind == "i" or (a.dtype.kind == "u" and a.dtype.itemsize > 1)):
            return None
    if len(index) == 1:  # (a is the only array)
        if check:
            _check_range(a, shape[0], 0, None, negative=True)
        return [a]
    arrays = [it._data for it in index]
    if check:
        for d, a in enumerate(arrays):
            _check_range(a, shape[d], d, None, negative=True)
    return arrays


_BOOL_DT = np.dtype(np.bool_)


def _mask_index(data, index):
    """For one bool tensor indexing the leading dims of NumPy memory (``x[mask]``,
    masked_select's): the mask array, which NumPy's own boolean indexing takes as it is
    (where the coordinates of its True elements, one array per dim, cost as much again: half
    the time at 256x1024), else None."""
    if index.__class__ is tuple and len(index) == 1:
        index = index[0]
    if index.__class__ is not Tensor or data.__class__ is not _ndarray:
        return None
    m = index._data
    if m.__class__ is not _ndarray or m.dtype != _BOOL_DT or not m.ndim or \
            m.shape != data.shape[:m.ndim]:
        return None
    return m


def _resolve(data, index, zero_d_as_int: bool = True, check: bool = True):
    """(view array, advanced index tuple or None, result shape, adv list); the adv list is
    None for a mask, whose positions never repeat (a write or an addition through the index
    needs no accumulation of duplicates). Without ``check``, integer index tensors of the
    leading dims (:func:`_rows_index`) are left to the caller's NumPy indexing to check."""
    view = _basic_view(data, index)
    if view is not None:
        return view, None, view.shape, []
    m = _mask_index(data, index)
    if m is not None:
        return data, (m,), (int(np.count_nonzero(m)),) + data.shape[m.ndim:], None
    rows = _rows_index(data, index, check)
    if rows is not None:  # the indexed dims lead: the result's dims go in their place
        if len(rows) == 1:
            a = rows[0]
            return data, (a,), a.shape + data.shape[1:], [(0, a)]
        bshape = rows[0].shape
        try:  # (index arrays of one shape, the commonest, need no broadcast)
            for a in rows[1:]:
                if a.shape != bshape:
                    bshape = broadcast_shapes(None, *[a.shape for a in rows])
                    break
        except RuntimeError:
            raise IndexError(
                "shape mismatch: indexing tensors could not be broadcast together with shapes "
                f"{', '.join(str(list(a.shape)) for a in rows)}") from None
        return data, tuple(rows), bshape + data.shape[len(rows):], list(enumerate(rows))
    np_index, shape, strides, offset, inserted, adv = _parse(data, _items(index), zero_d_as_int)
    view = _view_array(data, np_index, shape, strides, offset, inserted)
    if not adv:
        return view, None, tuple(view.shape), adv
    idx, rshape = _check_adv(view, adv)
    return view, idx, rshape, [(d, a) for d, a, _ in adv]


# ------------------------------------------------------------------------------ getitem / setitem
@defop("getitem")
def getitem(input: Tensor, index) -> Tensor:
    """``input[index]``: a view for basic indices, a new tensor for advanced ones.

    >>> x = arange(12).reshape(3, 4)
    >>> x[1:, None, ::2].stride(), x[1:, None, ::2].storage_offset()
    ((4, 4, 2), 4)
    >>> x[[0, 2], 1].tolist()
    [1, 9]
    """
    data = input._data
    # NumPy's reading checks the range of leading index tensors (a check first costs as much)
    view, idx, _, _ = _resolve(data, index, check=False)
    if idx is None:
        return input._view_of(view)
    try:
        r = view[idx]
    except IndexError:
        _rows_index(data, index)  # PyTorch's error where an index tensor is out of range
        raise
    return _make(array_module(data).ascontiguousarray(r))


@defop("getitem_backward")
def getitem_backward(grad: Tensor, shape, index) -> Tensor:
    """The gradient of ``getitem``: zeros of ``shape`` with ``grad`` added at ``index``
    (duplicates of an advanced index accumulate). Linear in ``grad``; its own derivative is
    ``getitem(gg, index)``.

    >>> getitem_backward(tensor([1., 2., 3.]), (2,), ([0, 1, 0],)).tolist()
    [4.0, 2.0]
    """
    g = grad._data
    xp = array_module(g)
    out = xp.zeros(tuple(shape), dtype=g.dtype)
    view, idx, rshape, adv = _resolve(out, index)
    if tuple(g.shape) != tuple(rshape):
        raise RuntimeError(f"getitem_backward(): grad of shape {list(g.shape)} does not match "
                           f"the indexing result shape {list(rshape)}")
    if idx is None:
        view[...] = g
    elif adv is None:  # a mask: no position repeats
        view[idx] = g
    else:
        _accumulate(view, adv, g)
    return _make(out)


def _value_array(value, target, op: str, rshape: tuple, advanced: bool):
    """The array (or scalar) to store into ``target`` for ``target[...] = value``."""
    if isinstance(value, Tensor):
        v = value._data
        if type(v) is not type(target) or (not isinstance(v, _ndarray)
                                            and v.device != target.device):
            if v.ndim != 0:  # a 0-d value crosses devices, as in PyTorch
                _same_device(op, target, v)
            v = _on(v, array_module(target))
        if advanced and v.ndim and v.dtype != target.dtype:
            raise RuntimeError(
                f"Index put requires the source and destination dtypes match, got "
                f"{_tname(target.dtype)} for the destination and {_tname(v.dtype)} for the source.")
        vshape = tuple(v.shape)
        if vshape == rshape:  # (the value of the result's shape, the commonest: stored as is)
            return v if v.dtype == target.dtype else _cast(v, target.dtype)
        while vshape and vshape[0] == 1:  # PyTorch drops leading unit dims of the value
            vshape = vshape[1:]
        ok = len(vshape) <= len(rshape) and all(
            a == b or a == 1 for a, b in zip(vshape[::-1], rshape[::-1]))
        if not ok:
            if advanced:
                raise RuntimeError(
                    f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast "
                    f"to indexing result of shape {list(rshape)}")
            if len(vshape) > len(rshape):
                raise RuntimeError(
                    f"{op}(): the number of sizes provided ({len(rshape)}) must be greater or "
                    f"equal to the number of dimensions in the tensor ({len(vshape)})")
            for i in range(1, len(vshape) + 1):
                if vshape[-i] != rshape[-i] and vshape[-i] != 1:
                    raise RuntimeError(
                        f"The expanded size of the tensor ({rshape[-i]}) must match the existing "
                        f"size ({vshape[-i]}) at non-singleton dimension {len(rshape) - i}.  "
                        f"Target sizes: {list(rshape)}.  Tensor sizes: {list(vshape)}")
        v = v.reshape(vshape)
        return v if v.dtype == target.dtype else _cast(v, target.dtype)
    if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, complex):
        if value.__class__ is int and not -(1 << 63) <= value < (1 << 63):
            raise ValueError(f"{op}(): Overflow when unpacking long long: {value}")
        return checked_scalar(op, value, target.dtype)
    raise TypeError(f"can't assign a {type(value).__name__} to a "
                    f"{_legacy_name(D._FROM_NP[target.dtype], not isinstance(target, _ndarray))}")


def _cast(v, dtype):
    with quiet():  # out-of-range values wrap or become inf, as PyTorch's casts
        return v.astype(dtype)


def _setitem_into(t: Tensor, index, value) -> None:
    data = t._data
    view, idx, rshape, _ = _resolve(data, index)
    v = _value_array(value, data, "setitem", rshape, idx is not None)  # of data's dtype
    if idx is None:
        view[...] = v
    else:
        view[idx] = v


@defop("setitem_", inplace=True)
def setitem(input: Tensor, index, value) -> Tensor:
    """``input[index] = value`` in place, with broadcasting and a cast to ``input``'s dtype;
    writes go through views and are seen by every view of the storage. (Registered as
    ``setitem_``, the in-place twin of :func:`setitem_copy`.)

    >>> x = zeros(2, 3); x[:, 1] = tensor([5., 6.]); x[0, [0, 2]] = 1; x.tolist()
    [[1.0, 5.0, 1.0], [0.0, 6.0, 0.0]]
    """
    _setitem_into(input, index, value)
    input._bump()
    return input


@defop("setitem")
def setitem_copy(input: Tensor, index, value) -> Tensor:
    """Out-of-place :func:`setitem`: a copy of ``input`` with ``value`` stored at ``index``.
    Autograd records ``input[index] = value`` as this op followed by a write.

    >>> setitem_copy(zeros(3), 1, 2.).tolist()
    [0.0, 2.0, 0.0]
    """
    xp = array_module(input._data)
    out = _make(xp.array(input._data, copy=True, order="C"))
    _setitem_into(out, index, value)
    return out


# ------------------------------------------------------------------------------ index_put
def _put_items(input: Tensor, indices, op: str) -> tuple:
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    n_dims = 0  # the dims the indices consume: a mask's own, one for any other
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 1 (indices), "
                            f"but got {type(t).__name__}")
        n_dims += t._data.ndim if t._data.dtype.kind == "b" else 1
    if n_dims > input._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input._data.ndim} "
                         f"(got {n_dims})")
    return tuple(indices)


def _index_put_into(out, input: Tensor, indices, values, accumulate: bool, op: str) -> None:
    _need_tensor(values, op, "values")
    items = _put_items(input, indices, op)
    # a plain write leaves the range of leading index tensors to NumPy's write, which checks
    # it before it writes anything; the accumulating kernel needs them checked first
    view, idx, rshape, adv = _resolve(out, items, zero_d_as_int=False, check=accumulate)
    v = values._data
    _same_device(op, out, v)
    if v.dtype != out.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{_tname(out.dtype)} for the destination and {_tname(v.dtype)} for the source.")
    if v.ndim > len(rshape):  # index_put broadcasts values as they are (no unit dims dropped)
        raise RuntimeError(f"{op}(): shape mismatch: value tensor of shape {list(v.shape)} "
                           f"cannot be broadcast to indexing result of shape {list(rshape)}")
    v = _value_array(values, out, op, rshape, True)
    if idx is None:
        if accumulate:
            view += v
        else:
            view[...] = v
    elif accumulate:
        if adv is None:  # a mask: no position repeats
            view[idx] += v
        else:
            xp = array_module(out)
            _accumulate(view, adv, xp.broadcast_to(v, rshape))
    else:
        try:
            view[idx] = v
        except IndexError:
            _rows_index(out, items)  # PyTorch's error where an index tensor is out of range
            raise


@defop("index_put_", inplace=True)
def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """``input[indices] = values`` in place (``+=`` with ``accumulate=True``, where duplicate
    indices sum). ``indices`` is a tuple of integer or bool tensors, one per leading dim.

    >>> x = zeros(3); x.index_put_((tensor([0, 0, 2]),), tensor(1.), accumulate=True).tolist()
    [2.0, 0.0, 1.0]
    """
    _check_inplace(input, "index_put_")
    _index_put_into(input._data, input, indices, values, accumulate, "index_put_")
    input._bump()
    return input


@defop("index_put")
def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place :func:`index_put_`.

    >>> index_put(zeros(3), (tensor([1]),), tensor([5.])).tolist()
    [0.0, 5.0, 0.0]
    """
    xp = array_module(input._data)
    out = xp.array(input._data, copy=True)
    _index_put_into(out, input, indices, values, accumulate, "index_put")
    return _make(out)


_check_inplace = check_inplace


_INT64 = np.dtype(np.int64)


# ------------------------------------------------------------------------------ index_select
def _index_vector(index, op: str, kinds: str, what: str, exc: type = RuntimeError):
    _need_tensor(index, op, "index")
    a = index._data
    dt = a.dtype
    if dt.kind not in "iu" or (dt != _INT64 and dt.name not in kinds):
        raise exc(f"{op}(): Expected {what} for index but got {_tname(a.dtype)}")
    return a


@defop("index_select", out=True)
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` along ``dim`` at ``index`` (1-D int64 or int32).

    >>> index_select(tensor([[1, 2], [3, 4], [5, 6]]), 0, tensor([2, 0])).tolist()
    [[5, 6], [1, 2]]
    """
    op = "index_select"
    a = _index_vector(index, op, "int32 int64", "dtype int32 or int64")
    data = input._data
    _same_device(op, data, a)
    if a.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    dim = _wrap_dim(dim, data.ndim, op)
    if data.ndim == 0:
        if a.size != 1:
            raise RuntimeError(f"{op}(): Index to scalar can have only 1 value, got {a.size} "
                               "value(s)")
        _check_range(a, 1, 0, op, exc=IndexOutOfBoundsError)
        return _make(data.copy())
    _check_range(a, data.shape[dim], dim, op, exc=IndexOutOfBoundsError)
    return _make(data.take(a.reshape(-1), axis=dim))  # C-contiguous, as PyTorch's


# ------------------------------------------------------------------------------ masks
def _bool_mask(mask, op: str, message: str):
    _need_tensor(mask, op, "mask")
    if mask._data.dtype != np.bool_:
        raise RuntimeError(message.format(_tname(mask._data.dtype)))
    return mask._data


@with_out(casting="no")
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` (broadcast with it) is True, as a 1-D tensor.

    >>> masked_select(tensor([[1, 2], [3, 4]]), tensor([True, False])).tolist()
    [1, 3]
    """
    op = "masked_select"
    m = _bool_mask(mask, op, "masked_select: expected BoolTensor for mask")
    data = input._data
    _same_device(op, data, m)
    if m.shape == data.shape:  # (no broadcast: the commonest)
        return getitem(input, mask)
    bshape = broadcast_shapes(op, data.shape, m.shape)
    if tuple(data.shape) == bshape and tuple(m.shape) == bshape:
        return getitem(input, mask)
    xp = array_module(data)
    coords = xp.nonzero(xp.broadcast_to(m, bshape))
    k = len(bshape) - data.ndim
    items: list = [True] * k
    for d in range(data.ndim):
        c = coords[k + d]
        items.append(_make(c if data.shape[d] == bshape[k + d] else xp.zeros_like(c)))
    return getitem(input, tuple(items))


def _masked_scatter_into(out, op: str, m, source: Tensor) -> None:
    if source.__class__ is not Tensor:
        _need_tensor(source, op, "source")
    s = source._data
    if s.__class__ is not out.__class__ or s.__class__ is not _ndarray:
        _same_device(op, out, s)
    if s.dtype != out.dtype:
        raise RuntimeError(f"{op}(): expected self and source to have same dtypes but got "
                           f"{_tname(out.dtype)} and {_tname(s.dtype)}")
    xp = np if out.__class__ is _ndarray else array_module(out)
    # the mask broadcast to ``out`` repeats each of its elements out.size / m.size times
    count = int(xp.count_nonzero(m)) * (out.size // m.size) if m.size else 0
    n = s.size
    if n < count:
        raise RuntimeError(f"{op}(): Number of elements of source < number of ones in mask "
                           f"({n} < {count})")
    if count:
        if m.shape != out.shape:
            m = xp.broadcast_to(m, out.shape)
        s = s.reshape(-1)
        out[m] = s if n == count else s[:count]


_MS_MASK = "masked_scatter(): only supports boolean masks, but got mask with dtype {}"


@defop("masked_scatter", out=True)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Copies consecutive elements of ``source`` into ``input`` where ``mask`` is True.

    >>> masked_scatter(zeros(4), tensor([True, False, True, False]), tensor([1., 2.])).tolist()
    [1.0, 0.0, 2.0, 0.0]
    """
    op = "masked_scatter"
    m = _bool_mask(mask, op, _MS_MASK)
    data = input._data
    if m.__class__ is not data.__class__ or m.__class__ is not _ndarray:
        _same_device(op, data, m)
    shape = data.shape
    if m.shape == shape:  # (a mask of the input's shape, the commonest: no broadcast)
        out = data.copy()  # (C order)
    else:
        out = array_module(data).empty(broadcast_shapes(op, shape, m.shape), dtype=data.dtype)
        out[...] = data
    _masked_scatter_into(out, op, m, source)
    return _make(out)


@defop("masked_scatter_", inplace=True)
def masked_scatter_(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`masked_scatter`; ``mask`` must broadcast to ``input``'s shape.

    >>> zeros(2).masked_scatter_(tensor([False, True]), tensor([7.])).tolist()
    [0.0, 7.0]
    """
    op = "masked_scatter_"
    m = _bool_mask(mask, op, _MS_MASK.replace("masked_scatter()", "masked_scatter_()"))
    data = input._data
    _same_device(op, data, m)
    if m.shape != data.shape and broadcast_shapes(op, data.shape, m.shape) != data.shape:
        raise RuntimeError(f"{op}(): mask of shape {list(m.shape)} cannot be broadcast to "
                           f"self of shape {list(data.shape)}")
    _check_inplace(input, op)
    _masked_scatter_into(data, op, m, source)
    input._bump()
    return input


# ------------------------------------------------------------------------------ nonzero
@defop("nonzero", differentiable=False, out=True)
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or a tuple of ndim 1-D
    tensors with ``as_tuple=True``.

    >>> nonzero(tensor([[0, 1], [2, 0]])).tolist()
    [[0, 1], [1, 0]]
    """
    data = input._data
    xp = array_module(data)
    if data.ndim == 0:
        c = 1 if bool(data) else 0
        if as_tuple:
            return (_make(xp.zeros(c, dtype=np.int64)),)
        return _make(xp.zeros((c, 0), dtype=np.int64))
    coords = data.nonzero()  # (the methods: np.nonzero and np.stack are Python wrappers)
    if as_tuple:
        return tuple(_make(c.astype(np.int64, copy=False)) for c in coords)
    # PyTorch returns the (n, ndim) result in column-major layout: strides (1, n)
    return _make(xp.array(coords, dtype=np.int64).T)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """:func:`nonzero` with exactly ``size`` rows: the first ``size`` indices, or all of them
    followed by rows of ``fill_value`` (a shape known before the values are).

    >>> nonzero_static(tensor([0, 3, 0, 4]), size=3).tolist()
    [[1], [3], [-1]]
    """
    if size.__class__ is not int or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    idx = nonzero(input)._data
    n = idx.shape[0]
    if n >= size:
        return _make(idx[:size].copy())
    out = array_module(idx).full((size, idx.shape[1]), fill_value, dtype=np.int64)
    out[:n] = idx
    return _make(out)


def argwhere(input: Tensor) -> Tensor:
    """The (n, ndim) indices of the non-zero elements (``nonzero(input)``).

    >>> argwhere(tensor([0, 3, 0, 4])).tolist()
    [[1], [3]]
    """
    return nonzero(input)


# ------------------------------------------------------------------------------ take
@defop("take")
def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of ``input`` seen as 1-D at ``index`` (int64; negatives count from the end);
    the result has ``index``'s shape.

    >>> take(tensor([[1, 2], [3, 4]]), tensor([0, -1])).tolist()
    [1, 4]
    """
    op = "take"
    _need_tensor(index, op, "index")
    a = index._data
    if a.dtype != _INT64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_tname(a.dtype)}")
    data = input._data
    _same_device(op, data, a)
    try:  # NumPy's indexing checks the index (a copy, in index's shape)
        return _make(data.reshape(-1)[a])
    except IndexError:
        raise _flat_range_error(op, a, data.size) from None


def _flat_range_error(op: str, a, n: int) -> IndexError:
    """PyTorch's error for a flat index ``a`` out of range of ``n`` elements (take, put)."""
    return IndexError(f"{op}(): out of range: tried to access index {_first_bad(a, -n, n)} on a "
                      f"tensor of {n} elements.")


@with_out(casting="no")
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values of ``input`` at ``indices`` along ``dim`` (other dims broadcast), like
    ``numpy.take_along_axis``; with ``dim=None`` both are flattened first.

    >>> take_along_dim(tensor([[10, 30, 20]]), tensor([[1, 2, 0]]), 1).tolist()
    [[30, 20, 10]]
    """
    op = "take_along_dim"
    _need_tensor(indices, op, "indices")
    a = indices._data
    if a.dtype != _INT64:
        raise RuntimeError(f"{op}(): dtype of indices should be Long but got {_tname(a.dtype)}")
    data = input._data
    _same_device(op, data, a)
    if dim is None:
        return take(input, _make(a.reshape(-1)))
    if data.ndim != a.ndim:
        raise RuntimeError(
            f"{op}(): input and indices should have the same number of dimensions, but got "
            f"{data.ndim} dimensions for input, and {a.ndim} dimensions for indices")
    dim = _wrap_dim(dim, data.ndim, op)
    if data.ndim == 0:
        _check_range(a, 1, 0, op)
        return getitem(input, ())
    ds, ids = list(data.shape), list(a.shape)
    ds[dim] = ids[dim] = 1  # every dim but ``dim`` broadcasts (shapes equal outside it, the
    bshape = ds if ds == ids else list(broadcast_shapes(op, ds, ids))  # commonest: as they are)
    # gather of the broadcast operands, as PyTorch computes it (an operand of the broadcast
    # shape already is used as it is: an expand to its own shape is a registry call for nothing)
    bshape[dim] = data.shape[dim]
    src = input if data.shape == tuple(bshape) else input.expand(tuple(bshape))
    bshape[dim] = a.shape[dim]
    try:  # gather checks the indices; its error is reworded as PyTorch's take_along_dim words it
        return src.gather(dim, indices if a.shape == tuple(bshape) else
                          indices.expand(tuple(bshape)))
    except IndexOutOfBoundsError:
        _check_range(a, data.shape[dim], dim, op)
        raise


# ---------------------------------------------------------------------------- put, unravel_index
def _put_args(op: str, input: Tensor, index: Tensor, source: Tensor) -> None:
    """:func:`put`'s arguments checked as PyTorch does: integer indices, one source element per
    index, one dtype (the range is checked by index_put; an argument that is not a tensor
    fails on its ``_data``, which the registry reports as PyTorch's TypeError)."""
    a = index._data
    if a.dtype != _INT64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{_tname(a.dtype)}")
    if input._data.dtype != source._data.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_tname(input._data.dtype)} and source.dtype = "
                           f"{_tname(source._data.dtype)}")
    if a.size != source._data.size:
        raise IndexError(f"{op}(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source._data.size}, "
                         f"index.numel() = {a.size}")


def _put_into(op: str, out, input: Tensor, index: Tensor, source: Tensor,
              accumulate: bool) -> None:
    """Write (or add, with ``accumulate``) ``source``'s elements into the array ``out``, of
    ``input``'s shape, at the flat ``index`` (negatives count from the end): ``out`` seen as
    1-D, indexed by ``index`` and ``source`` flattened (one NumPy write, which checks the range
    before it writes; the accumulating kernel gets the range checked first)."""
    _put_args(op, input, index, source)
    a = index._data.reshape(-1)
    v = source._data
    _same_device(op, out, a)
    _same_device(op, out, v)
    flat = out.reshape(-1)
    try:  # the index is checked before anything is written; its error is PyTorch's put's
        if accumulate:
            _check_range(a, flat.size, 0, None, negative=True)
            _accumulate(flat, [(0, a)], v.reshape(-1))
        else:
            flat[a] = v.reshape(-1)
    except IndexError:
        raise _flat_range_error(op, a, out.size) from None
    if not out.flags.c_contiguous:  # flat was a copy: write it back
        out[...] = flat.reshape(out.shape)


@defop("put")
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements written at the flat indices ``index``
    (added there with ``accumulate``), as if ``input`` were 1-D.

    >>> put(zeros(2, 2), tensor([0, 3]), tensor([1., 2.]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    out = array_module(input._data).array(input._data, copy=True, order="C")
    _put_into("put", out, input, index, source, accumulate)
    return _make(out)


@defop("put_", inplace=True)
def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place :func:`put`.

    >>> zeros(3).put_(tensor([1, 1]), tensor([2., 3.]), accumulate=True)
    tensor([0., 5., 0.])
    """
    _check_inplace(input, "put_")
    _put_into("put_", input._data, input, index, source, accumulate)
    input._bump()
    return input


def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (one int64 tensor per
    dim; negative indices count from the end).

    >>> unravel_index(tensor([4, 11]), (3, 4))
    (tensor([1, 2]), tensor([0, 3]))
    """
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): expected 'indices' to be a Tensor, but got "
                        f"{type(indices).__name__}")
    a = indices._data
    if a.dtype.kind not in "iu":
        raise TypeError(f"unravel_index(): expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, but got "
                         f"{shape}")
    n = 1
    for s in shape:
        n *= s
    flat = a.astype(_INT64) % n if n else a.astype(_INT64)  # PyTorch wraps, as Python's %
    out = []
    for s in reversed(shape):
        out.append(flat % s if s else flat * 0)
        flat = flat // s if s else flat
    return tuple(Tensor._make(c) for c in reversed(out))
