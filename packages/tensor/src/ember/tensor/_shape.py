"""Views, shape ops and movement ops (flip, roll, repeat, tile: copies that move elements).

View ops (``view``, ``permute``, ``expand``, ``squeeze``, ``unsqueeze``, ``narrow``, ``select``,
``as_strided``, ``unfold``, ``diagonal`` and everything built on them) share storage and report
PyTorch's strides; ``cat`` and ``stack`` copy.
"""
from __future__ import annotations

import functools
import math
import numbers
import operator
from collections.abc import Sequence

import numpy as np

from . import _dtype as D
from ._checks import arg_type_error, check_int, check_same_device, device_error
from ._creation import clone
from ._indexing import _dims_arg, _tname, getitem, index_select
from ._registry import array_module, defop, with_out
from ._tensor import Size, Tensor, _ptr, _root, _run_deferred, _wrap_dim, become

__all__ = [
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "swapaxes", "swapdims",
    "t", "movedim", "moveaxis", "expand", "expand_as", "broadcast_to", "broadcast_tensors",
    "broadcast_shapes", "squeeze", "unsqueeze", "narrow", "select", "as_strided", "unfold",
    "diagonal", "split", "tensor_split", "chunk", "unbind", "cat", "concat", "concatenate",
    "stack", "hstack", "vstack", "flatten", "unflatten", "ravel", "contiguous", "meshgrid",
    "atleast_1d", "atleast_2d", "slice_view", "flip", "fliplr", "flipud", "roll", "repeat",
    "tile", "repeat_interleave", "narrow_copy", "atleast_3d", "column_stack", "row_stack",
    "dstack", "hsplit", "vsplit", "dsplit", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "split_with_sizes", "combinations", "sum_to_size", "as_strided_",
    "as_strided_scatter", "resize_", "resize_as_",
]

_make = Tensor._make
_ndarray = np.ndarray
_same_device = check_same_device


def _strides_bytes(strides, item):
    return tuple(s * item for s in strides)


def _restride(t: Tensor, shape, strides, rel_offset: int = 0) -> Tensor:
    """A view of ``t`` with PyTorch ``shape``/``strides`` (elements), starting ``rel_offset``
    elements after ``t``'s first element."""
    d = t._data
    item = d.itemsize
    return _restride_bytes(t, tuple(shape), tuple([s * item for s in strides]),
                           rel_offset * item)


def _restride_bytes(t: Tensor, shape: tuple, sb: tuple, rel: int = 0) -> Tensor:
    """:func:`_restride` with the strides and the offset in bytes."""
    d = t._data
    flags = d.flags
    if flags.c_contiguous:
        if d.__class__ is _ndarray:
            # d is one buffer, in which the view starts ``rel`` bytes in: no pointer arithmetic
            # (NumPy refuses a view that reaches outside it: that one is made from the root).
            # The arguments by position: NumPy's parsing of them by keyword cost ~0.3 us
            try:
                arr = _ndarray(shape, d.dtype, d, rel, sb)
            except (TypeError, ValueError):
                pass
            else:
                if not flags.writeable:
                    arr.flags.writeable = False
                return t._view_of(arr)
        elif not rel and 0 not in sb and math.prod(shape) == d.size:
            arr = d.reshape(shape)  # reshaping a contiguous array: a view with these strides?
            if arr.strides == sb:
                return t._view_of(arr)
    if isinstance(d, _ndarray):
        root = _root(d)
        try:
            arr = _ndarray(shape, d.dtype, root, _ptr(d) - _ptr(root) + rel, sb)
        except (TypeError, ValueError):  # root without a plain buffer: use as_strided
            pass
        else:
            if not flags.writeable:
                arr.flags.writeable = False
            return t._view_of(arr)
    xp = np if isinstance(d, np.ndarray) else array_module(d)
    if rel:
        root = _root(d)
        flat = root.reshape(-1, order="A")
        start = (_ptr(d) - _ptr(root) + rel) // d.itemsize
        base = flat[start:]
    else:
        base = d
    return t._view_of(xp.lib.stride_tricks.as_strided(base, shape, sb))


def _contig_strides(shape) -> list[int]:
    strides, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return strides


def _compute_stride(oldshape, oldstride, newshape):
    """PyTorch's computeStride: strides for viewing (oldshape, oldstride) as newshape, or None
    when the memory layout does not allow a view."""
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0:
        return _contig_strides(newshape) if tuple(oldshape) != tuple(newshape) else list(oldstride)
    if not oldshape:
        oldshape, oldstride = (1,), (1,)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return newstride


def _infer_size(shape, numel: int, op: str) -> tuple[int, ...]:
    """The sizes ``shape`` (ints, or one sequence of them; one may be -1) for ``numel``
    elements: one pass over the sizes, converting and checking only what is not a plain int."""
    if len(shape) == 1 and shape[0].__class__ is not int and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    infer, known, i = -1, 1, 0
    for s in shape:
        if s.__class__ is not int:  # (a NumPy integer, a 0-d integer tensor)
            return _infer_size(tuple([_index(x, op, "size") for x in shape]), numel, op)
        if s >= 0:
            known *= s
        elif s != -1:
            raise RuntimeError(f"{op}(): invalid shape dimension {s}")
        elif infer >= 0:
            raise RuntimeError(f"{op}(): only one dimension can be inferred")
        else:
            infer = i
        i += 1
    if infer >= 0:
        if known == 0 or numel % known:
            raise RuntimeError(
                f"{op}(): shape '{list(shape)}' is invalid for input of size {numel}")
        shape = list(shape)
        shape[infer] = numel // known
        return tuple(shape)
    if known != numel:
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@defop("view")
def _view(input: Tensor, shape: tuple) -> Tensor:
    d = input._data
    if d.flags.c_contiguous:
        return input._view_of(d.reshape(shape))
    strides = _compute_stride(d.shape, input.stride(), shape)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _restride(input, shape, strides)


def view(input: Tensor, *shape) -> Tensor:
    """A view with a new shape over the same memory (one dim may be -1).

    >>> arange(6).view(2, 3).stride()
    (3, 1)
    """
    if len(shape) == 1 and shape[0].__class__ is not int and isinstance(shape[0], D.dtype):
        return _view_dtype(input, shape[0])
    return _view(input, _infer_size(shape, input._data.size, "view"))


@defop("_view_dtype", differentiable=False)
def _view_dtype(input: Tensor, dtype: D.dtype) -> Tensor:
    if dtype.itemsize != input._data.itemsize:
        raise RuntimeError(f"view(): dtype {dtype} has a different element size than "
                           f"{input.dtype}; only same-size reinterpretation is supported")
    return input._view_of(input._data.view(dtype.np))


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, tuple(other._data.shape))


def reshape(input: Tensor, *shape) -> Tensor:
    """``view`` when the strides allow it, else a contiguous copy.

    >>> arange(6).view(2, 3).t().reshape(6).is_contiguous()
    True
    """
    return _reshape(input, _infer_size(shape, input._data.size, "reshape"))


def _reshape(input: Tensor, shape: tuple) -> Tensor:
    """:func:`reshape` to ``shape``, a tuple of sizes already checked against ``input``."""
    d = input._data
    if d.flags.c_contiguous or _compute_stride(d.shape, input.stride(), shape) is not None:
        return _view(input, shape)
    return _view(contiguous(input), shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, tuple(other._data.shape))


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """Self when already contiguous, else a row-major copy."""
    if input._data.flags.c_contiguous:
        return input
    return _ascontiguous(input)  # one row-major copy (clone would keep a dense permuted layout)


@defop("_ascontiguous")
def _ascontiguous(input: Tensor) -> Tensor:
    return _make(array_module(input._data).ascontiguousarray(input._data))


def ravel(input: Tensor) -> Tensor:
    return reshape(input, -1)


@defop("permute")
def _permute(input: Tensor, dims: tuple) -> Tensor:
    try:  # NumPy accepts exactly the dims PyTorch does (negative ones included)
        return input._view_of(input._data.transpose(dims))
    except (TypeError, ValueError):
        pass
    for pos, x in enumerate(dims):  # the call failed: raise PyTorch's error for it
        if not isinstance(x, numbers.Integral) or isinstance(x, bool):
            raise TypeError(f"permute(): argument 'dims' (position 1) must be tuple of ints, "
                            f"but found element of type {type(x).__name__} at pos {pos}")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(): number of dims don't match in permute: the tensor has {nd} dims but "
            f"{len(dims)} were given ({list(dims)})")
    for d in dims:
        _wrap_dim(d, nd, "permute")
    raise RuntimeError(f"permute(): duplicate dims are not allowed (dims {list(dims)})")


def permute(input: Tensor, *dims) -> Tensor:
    """Reorder dimensions (a view).

    >>> zeros(2, 3, 4).permute(2, 0, 1).shape
    ember.Size([4, 2, 3])
    """
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return _permute(input, tuple(dims))


def _key_int(x):
    """An int argument as a layout cache's key: an int as it is, anything else with an
    ``__index__`` by it (a NumPy integer; a 0-d tensor's value, which may change in place, so
    the cache never keys on the object); anything else as it is, for the layout's own error."""
    return x if x.__class__ is int or not hasattr(x, "__index__") else operator.index(x)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    if dim0.__class__ is not int or dim1.__class__ is not int:
        dim0, dim1 = _key_int(dim0), _key_int(dim1)
    return _permute(input, _transpose_perm(input._data.ndim, dim0, dim1))


# the dim orders of transpose and movedim depend on the rank and the dims only: each is
# worked out once (an error is raised, not cached)
@functools.lru_cache(maxsize=512)
def _transpose_perm(nd: int, dim0: int, dim1: int) -> tuple:
    d0, d1 = _wrap_dim(dim0, nd, "transpose"), _wrap_dim(dim1, nd, "transpose")
    perm = list(range(nd))
    if nd:  # (a 0-d tensor takes dims 0 and -1: its permutation is empty)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return tuple(perm)


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    """Transpose a matrix (0-d and 1-d tensors are returned as views of themselves)."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return _permute(input, tuple(range(nd - 1, -1, -1)))


def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dimension(s) ``source`` to position(s) ``destination``."""
    # (an int's class test first: the ABC check costs more than the rest of the call)
    src = (source,) if source.__class__ is int or isinstance(source, numbers.Integral) \
        else tuple(map(_key_int, source))
    dst = (destination,) if destination.__class__ is int or \
        isinstance(destination, numbers.Integral) else tuple(map(_key_int, destination))
    return _permute(input, _movedim_perm(input._data.ndim, src, dst))


@functools.lru_cache(maxsize=512)
def _movedim_perm(nd: int, src: tuple, dst: tuple) -> tuple:
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source "
                           f"({list(src)} dims) should contain the same number of dims as "
                           f"destination ({list(dst)} dims)")
    # every dim wrapped, then the repeats refused, as PyTorch does
    s_w = [_wrap_dim(s, nd, "movedim") for s in src]
    d_w = [_wrap_dim(d, nd, "movedim") for d in dst]
    if len(set(s_w)) != len(s_w):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(d_w)) != len(d_w):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    # the other dims in order, each moved dim inserted at its destination in increasing order
    perm = [n for n in range(nd) if n not in s_w]
    for d, s in sorted(zip(d_w, s_w)):
        perm.insert(d, s)
    return tuple(perm)


moveaxis = movedim


@defop("expand")
def _expand(input: Tensor, sizes: tuple) -> Tensor:
    d = input._data
    return _restride_bytes(input, *_expand_layout(d.shape, d.strides, tuple(sizes)))


# the layouts of expand and diagonal depend on the input's shape and strides and the
# arguments only: each is worked out once (an error is raised, not cached)
@functools.lru_cache(maxsize=512)
def _expand_layout(shape: tuple, strides: tuple, sizes: tuple) -> tuple:
    """The shape and the strides (bytes, as ``strides``) of ``expand``'s view."""
    nd, ns = len(shape), len(sizes)
    lead = ns - nd
    if lead < 0:
        raise RuntimeError(
            f"expand(): the number of sizes provided ({ns}) must be greater or equal to the "
            f"number of dimensions in the tensor ({nd})")
    new_shape, new_strides = list(sizes), [0] * ns
    for i in range(lead):
        if sizes[i] < 0:
            raise RuntimeError(
                f"expand(): The expanded size of the tensor ({sizes[i]}) isn't allowed in a "
                "leading, non-existing dimension 0")
    for j in range(nd):
        target, n = sizes[lead + j], shape[j]
        if target == n or target == -1:
            new_shape[lead + j] = n
            new_strides[lead + j] = strides[j]
        elif target < 0:
            raise RuntimeError(f"expand(): The expanded size of the tensor ({target}) isn't "
                               f"allowed at dimension {lead + j}")
        elif n != 1:
            raise RuntimeError(
                f"expand(): The expanded size of the tensor ({target}) must match the existing "
                f"size ({n}) at non-singleton dimension {lead + j}.  Target sizes: "
                f"{list(sizes)}.  Tensor sizes: {list(shape)}")
    return tuple(new_shape), tuple(new_strides)


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast size-1 dims to larger sizes without copying (stride 0).

    >>> tensor([[1], [2]]).expand(2, 3).stride()
    (1, 0)
    """
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = tuple(sizes[0])
    return _expand(input, _ints(sizes, "expand"))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return _expand(input, tuple(other._data.shape))


def broadcast_to(input: Tensor, size) -> Tensor:
    """:func:`expand` to ``size`` (a view).

    >>> broadcast_to(tensor([1, 2]), (2, 2)).stride()
    (0, 1)
    """
    return _expand(input, _ints(size, "broadcast_to"))


def broadcast_shapes(*shapes) -> Size:
    """The broadcast of several shapes (RuntimeError when they do not broadcast)."""
    try:
        return Size(np.broadcast_shapes(*[tuple(s) if not isinstance(s, int) else (s,)
                                          for s in shapes]))
    except ValueError:
        raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{[list(s) for s in shapes]}") from None


def broadcast_tensors(*tensors) -> tuple:
    """Expand tensors to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(_expand(t, tuple(shape)) for t in tensors)


@defop("squeeze")
def _squeeze(input: Tensor, dims: tuple) -> Tensor:
    # NumPy's squeeze keeps the strides of the dims it keeps, as PyTorch's does
    d = input._data
    shape = d.shape
    nd = len(shape)
    return input._view_of(d.squeeze(tuple([i for i in dims if i < nd and shape[i] == 1])))


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove size-1 dimensions (all, or only those in ``dim``)."""
    nd = input._data.ndim
    if dim is None:
        dims = tuple(range(nd))
    elif dim.__class__ is int:
        dims = (_wrap_dim(dim, nd, "squeeze"),)
    elif isinstance(dim, float):
        raise arg_type_error("squeeze", "dim", 2, dim, "int, tuple of ints or None")
    elif isinstance(dim, (tuple, list)):
        dims = tuple(_wrap_dim(x, nd, "squeeze") for x in dim)
    else:
        dims = (_wrap_dim(dim, nd, "squeeze"),)
    return _squeeze(input, dims)


@defop("unsqueeze")
def _unsqueeze(input: Tensor, dim: int) -> Tensor:
    d = input._data
    new_shape, new_strides = _unsqueeze_layout(d.shape, d.strides, d.itemsize, dim)
    if d.flags.c_contiguous:  # NumPy's reshape, where its strides are PyTorch's
        arr = d.reshape(new_shape)
        if arr.strides == new_strides:
            return input._view_of(arr)
    return _restride_bytes(input, new_shape, new_strides)


@functools.lru_cache(maxsize=512)
def _unsqueeze_layout(shape: tuple, strides: tuple, item: int, dim: int) -> tuple:
    """The shape and PyTorch's strides (bytes) of ``unsqueeze``'s view, worked out once per
    layout."""
    return ((*shape[:dim], 1, *shape[dim:]),
            (*strides[:dim], shape[dim] * strides[dim] if dim < len(shape) else item,
             *strides[dim:]))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at ``dim`` (a view).

    >>> zeros(2, 3).unsqueeze(1).stride()
    (3, 3, 1)
    """
    return _unsqueeze(input, _wrap_dim(dim, input._data.ndim + 1, "unsqueeze"))


@defop("slice_view")
def slice_view(input: Tensor, dim: int, start: int, end: int, step: int = 1) -> Tensor:
    """``input[..., start:end:step, ...]`` along ``dim`` (a view; positive step)."""
    if step <= 0:
        raise ValueError("step must be greater than zero")
    idx = (slice(None),) * dim + (slice(start, end, step),)
    return input._view_of(input._data[idx])


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The slice ``start:start+length`` along ``dim`` (a view)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, nd, "narrow")
    size = input._data.shape[dim]
    if isinstance(start, Tensor):
        start = int(start)
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start ({start}) is out of bounds for dimension {dim} with "
                         f"size {size}")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({size}).")
    return slice_view(input, dim, start, start + length, 1)


@defop("select")
def _select(input: Tensor, dim: int, index: int) -> Tensor:
    # the trailing Ellipsis keeps a 0-d result an array view rather than a NumPy scalar
    return input._view_of(input._data[(slice(None),) * dim + (index, Ellipsis)])


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, with that dimension removed (a view)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, nd, "select")
    size = input._data.shape[dim]
    if index.__class__ is not int and isinstance(index, Tensor) and index._data.ndim == 0 \
            and index._data.dtype.kind in "iu":
        index = int(index)  # (a 0-d integer tensor, as PyTorch's int parameters take)
    check_int("select", "index", 3, index)
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {dim}")
    return _select(input, dim, index + size if index < 0 else index)


def _ints(seq, op: str, arg: str = "size") -> tuple:
    """``seq`` as a tuple of ints (converted only where an element is not exactly an int)."""
    out = tuple(seq)
    for s in out:
        if s.__class__ is not int:
            return tuple([_index(x, op, arg) for x in out])
    return out


def _index(x, op: str, arg: str) -> int:
    """An element of a size: an int, or what converts to one losslessly (``__index__``: a
    NumPy integer, a 0-d integer tensor); a bool or anything else is PyTorch's TypeError."""
    if x.__class__ is not bool:
        try:
            return operator.index(x)
        except TypeError:
            pass
    raise TypeError(f"{op}(): argument '{arg}' must be tuple of ints, but found element of "
                    f"type {type(x).__name__}")


# (size and stride are declared ``tuple``: they hold no tensor, so the public function's
# requires-grad test skips them, ~0.3 us a call)
@defop("as_strided")
def as_strided(input: Tensor, size: tuple, stride: tuple,
               storage_offset: int | None = None) -> Tensor:
    """A view with explicit size, stride and storage offset (in elements) over the storage."""
    size, stride = _ints(size, "as_strided"), _ints(stride, "as_strided", "stride")
    d = input._data
    root = _root(d)
    item = d.itemsize
    cur = 0 if root is d else (_ptr(d) - _ptr(root)) // item
    offset = cur if storage_offset is None else operator.index(storage_offset)
    return _restride_bytes(input, size, _strided_bytes(size, stride, offset, root.size, item),
                           (offset - cur) * item)


@functools.lru_cache(maxsize=512)
def _strided_bytes(size: tuple, stride: tuple, offset: int, avail: int, item: int) -> tuple:
    """``as_strided``'s strides in bytes, once the view is known to lie in a storage of
    ``avail`` elements of ``item`` bytes (worked out once per layout; an error is not cached)."""
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided(): mismatch in length of strides and shape "
                           f"({len(stride)} vs {len(size)})")
    # the last element's index and the strides' signs in one pass over the dims
    need, neg, empty = offset + 1, False, False
    for n, s in zip(size, stride):
        need += (n - 1) * s
        neg = neg or s < 0
        empty = empty or not n
    if empty:
        need = 0
    if need > avail or offset < 0 or neg:
        raise RuntimeError(
            f"as_strided(): setStorage: sizes {list(size)}, strides {list(stride)}, storage "
            f"offset {offset}, and itemsize {item} requiring a storage size of "
            f"{need * item} are out of bounds for storage of size {avail * item}")
    return tuple([s * item for s in stride])


@defop("unfold")
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All slices of length ``size`` along ``dimension`` every ``step``, as a new last dim."""
    if dimension.__class__ is not int or size.__class__ is not int or step.__class__ is not int:
        dimension, size, step = _key_int(dimension), _key_int(size), _key_int(step)
    d = input._data
    return _restride_bytes(input, *_unfold_layout(d.shape, d.strides, d.itemsize, dimension, size,
                                                  step))


@functools.lru_cache(maxsize=512)
def _unfold_layout(shape: tuple, strides: tuple, item: int, dimension: int, size: int,
                   step: int) -> tuple:
    """The shape and the strides (bytes, as ``strides``; elements of ``item`` bytes) of
    ``unfold``'s view (worked out once per layout and arguments; an error is raised, not
    cached)."""
    nd = len(shape)
    dim = _wrap_dim(dimension, nd, "unfold") if nd else 0
    cur = shape[dim] if nd else 1
    if size > cur:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {dim} is {cur} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    if nd == 0:  # one window of the one element
        return (size,), (item,)
    st = strides[dim]
    return ((*shape[:dim], (cur - size) // step + 1, *shape[dim + 1:], size),
            (*strides[:dim], st * step, *strides[dim + 1:], st))


@defop("diagonal")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes as a view, moved to the last dimension."""
    d = input._data
    if offset.__class__ is not int or dim1.__class__ is not int or dim2.__class__ is not int:
        offset, dim1, dim2 = _key_int(offset), _key_int(dim1), _key_int(dim2)
    return _restride_bytes(input, *_diagonal_layout(d.shape, d.strides, offset, dim1, dim2))


@functools.lru_cache(maxsize=512)
def _diagonal_layout(shp: tuple, st: tuple, offset: int, dim1: int, dim2: int) -> tuple:
    """The shape, the strides and the offset (bytes, as ``st``) of ``diagonal``'s view."""
    nd = len(shp)
    d1, d2 = _wrap_dim(dim1, nd, "diagonal"), _wrap_dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if offset >= 0:
        n, rel = min(shp[d1], shp[d2] - offset), offset * st[d2]
    else:
        n, rel = min(shp[d1] + offset, shp[d2]), -offset * st[d1]
    if n <= 0:  # an empty diagonal starts at the input's first element
        n = rel = 0
    lo, hi = (d1, d2) if d1 < d2 else (d2, d1)  # the other dims, then the diagonal's
    return (shp[:lo] + shp[lo + 1:hi] + shp[hi + 1:] + (n,),
            st[:lo] + st[lo + 1:hi] + st[hi + 1:] + (st[d1] + st[d2],), rel)


def _check_not_0d(op: str, nd: int, kind: str = "split") -> None:
    """PyTorch's splitting ops refuse a 0-d tensor before looking at ``dim``."""
    if nd == 0:
        raise RuntimeError(f"{op}(): {kind} expects at least a 1-dimensional tensor")


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Split into chunks of a given size, or of the given list of sizes (views)."""
    nd = tensor._data.ndim
    _check_not_0d("split", nd)
    dim = _wrap_dim(dim, nd, "split")
    size = tensor._data.shape[dim]
    if split_size_or_sections.__class__ is int or isinstance(split_size_or_sections,
                                                            numbers.Integral):
        step = int(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        if step == 0 and size:
            raise RuntimeError(f"split(): split_size can only be 0 if dimension size is 0, but "
                               f"got dimension size of {size}")
        sections = tuple([min(step, size - i) for i in range(0, size, step)]) if size else (0,)
    else:
        sections = tuple([int(s) for s in split_size_or_sections])
    # one node: its backward is one cat; the sizes as a tuple of ints, which the node keeps
    # without one more object for the garbage collector to track
    return split_with_sizes(tensor, sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` nearly equal views (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    nd = input._data.ndim
    _check_not_0d("chunk", nd, "chunk")
    size = input._data.shape[_wrap_dim(dim, nd, "chunk")]
    if not size:  # PyTorch: ``chunks`` empty pieces
        return split_with_sizes(input, (0,) * chunks, dim)
    step = -(-size // chunks)
    n, last = divmod(size, step)
    return split_with_sizes(input, (step,) * n + (last,) if last else (step,) * n, dim)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """NumPy's array_split semantics (views)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("tensor_split(): tensor_split expected at least a 1-dimensional "
                           "tensor, but got a tensor with 0 dims")
    dim = _wrap_dim(dim, nd, "tensor_split")
    size = input._data.shape[dim]
    if indices_or_sections.__class__ is int or isinstance(indices_or_sections,
                                                          numbers.Integral):
        n = int(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        # consecutive blocks covering the dim: one registry op (one node), not a narrow each
        return split_with_sizes(input, (q + 1,) * r + (q,) * (n - r), dim)
    # piece k is input[b_k:b_k+1] along dim by Python's slice rules, as PyTorch's: a negative
    # index counts from the end, a bound below the one before gives an empty piece there
    bounds = [0] + [int(i) for i in indices_or_sections] + [None]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        start, stop, _ = slice(a, b).indices(size)
        out.append(narrow(input, dim, start, max(stop - start, 0)))
    return tuple(out)


@defop("unbind")
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """All slices along ``dim`` (views); one node in a graph, whose backward is one ``stack``
    (a ``select`` each recorded a node, and a full-size gradient, per slice).

    >>> unbind(tensor([[1, 2], [3, 4]]), 1)
    (tensor([1, 3]), tensor([2, 4]))
    """
    d = input._data
    if not d.ndim:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    dim = _wrap_dim(dim, d.ndim, "unbind")
    # the trailing Ellipsis keeps a 1-d input's slices 0-d array views, not NumPy scalars
    pre = (slice(None),) * dim
    return tuple(input._views_of([d[(*pre, i, Ellipsis)] for i in range(d.shape[dim])]))


def _arrays(tensors, op: str):
    """The arrays of ``cat``'s or ``stack``'s list of tensors and the NumPy dtype of the
    result (PyTorch's promotion), checking the list as PyTorch does: one pass."""
    if tensors.__class__ is not list and tensors.__class__ is not tuple and (
            isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple))):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    first = tensors[0]
    if first.__class__ is not Tensor and not isinstance(first, Tensor):
        raise TypeError(f"{op}(): expected Tensor as element 0 in argument 0, but got "
                        f"{type(first).__name__}")
    first = first._data
    dt, kind = first.dtype, first.__class__
    arrs, mixed, other = [], False, None
    for x in tensors:
        if x.__class__ is not Tensor and not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {len(arrs)} in argument 0, "
                            f"but got {type(x).__name__}")
        a = x._data
        if a.__class__ is not kind:
            other = other if other is not None else a  # raised once every element is checked
        elif a.dtype != dt:
            mixed = True
        arrs.append(a)
    if other is not None:
        raise device_error(op, first, other)
    return arrs, (D.result_type(*tensors).np if mixed else dt)


@defop("cat", out=True)
def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing dimension (copies).

    >>> cat([zeros(2, 3), ones(1, 3)]).shape
    ember.Size([3, 3])
    """
    arrs, dt = _arrays(tensors, "cat")
    xp = np if arrs[0].__class__ is np.ndarray else array_module(arrs[0])
    try:
        return _make(xp.concatenate(arrs, axis=dim, dtype=dt, casting="unsafe"))
    except ValueError:  # NumPy refused: PyTorch's checks, and its skipping of (0,)-shaped
        pass            # legacy empty tensors, which NumPy does not do
    arrs = [a for a in arrs if not (a.ndim == 1 and a.shape[0] == 0)]
    if not arrs:
        return _make(tensors[0]._data.astype(dt, copy=True))
    ref = arrs[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    dim = _wrap_dim(dim, ref.ndim, "cat")
    for i, a in enumerate(arrs):
        if a.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {a.ndim}")
        for k in range(ref.ndim):
            if k != dim and a.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{ref.shape[k]} but got size {a.shape[k]} for tensor number {i} in the list.")
    return _make(xp.concatenate(arrs, axis=dim, dtype=dt, casting="unsafe"))


concat = concatenate = cat


@defop("stack", out=True)
def stack(tensors, dim: int = 0) -> Tensor:
    """Stack equally shaped tensors along a new dimension (copies).

    >>> stack([zeros(2), ones(2)], dim=1).shape
    ember.Size([2, 2])
    """
    arrs, dt = _arrays(tensors, "stack")
    ref = arrs[0].shape
    dim, new = _stack_index(dim if dim.__class__ is int else _key_int(dim), len(ref))
    xp = np if arrs[0].__class__ is np.ndarray else array_module(arrs[0])
    try:
        return _make(xp.concatenate([a[new] for a in arrs], axis=dim, dtype=dt,
                                    casting="unsafe"))
    except ValueError:  # NumPy refused: the shapes differ (every other axis must match)
        for i, a in enumerate(arrs):
            if a.shape != ref:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                                   f"{list(ref)} at entry 0 and {list(a.shape)} at entry {i}"
                                   ) from None
        raise


@functools.lru_cache(maxsize=256)
def _stack_index(dim: int, nd: int) -> tuple:
    """``stack``'s dim wrapped for pieces of ``nd`` dims and the index that views a piece with
    a new axis there (cheaper than a reshape), worked out once per dim and rank (an error is
    raised, not cached)."""
    dim = _wrap_dim(dim, nd + 1, "stack")
    return dim, (slice(None),) * dim + (None,)


@with_out(casting="cat")
def hstack(tensors) -> Tensor:
    # atleast_1d of each, inline: a 0-d tensor viewed as (1,)
    tensors = [x if x._data.ndim else _view(x, (1,)) for x in tensors]
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


@with_out(casting="cat")
def vstack(tensors) -> Tensor:
    # atleast_2d of each, inline: a 0-d tensor viewed as (1, 1), a 1-d one as a row
    return cat([x if x._data.ndim > 1 else (_unsqueeze(x, 0) if x._data.ndim else
                                           _view(x, (1, 1))) for x in tensors], 0)


def atleast_1d(input: Tensor) -> Tensor:
    return reshape(input, 1) if input._data.ndim == 0 else input


def atleast_2d(input: Tensor) -> Tensor:
    nd = input._data.ndim
    return reshape(input, 1, 1) if nd == 0 else (_unsqueeze(input, 0) if nd == 1 else input)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    if start_dim.__class__ is not int or end_dim.__class__ is not int:
        start_dim, end_dim = _key_int(start_dim), _key_int(end_dim)
    shape = _flat_shape(input._data.shape, start_dim, end_dim)
    return input if shape is None else _reshape(input, shape)


@functools.lru_cache(maxsize=512)
def _flat_shape(shape: tuple, start_dim: int, end_dim: int) -> tuple | None:
    """:func:`flatten`'s shape (None: ``input`` itself), worked out once per shape and dims."""
    nd = len(shape)
    if nd == 0:
        return (1,)
    s, e = _wrap_dim(start_dim, nd, "flatten"), _wrap_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return None
    return shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Expand one dimension into several (inverse of flatten)."""
    return _view(input, _unflat_shape(input._data.shape, _key_int(dim),
                                      tuple(map(_key_int, sizes))))


@functools.lru_cache(maxsize=512)
def _unflat_shape(shape: tuple, dim: int, sizes: tuple) -> tuple:
    """:func:`unflatten`'s shape, worked out once per shape and arguments."""
    dim = _wrap_dim(dim, len(shape), "unflatten")
    return shape[:dim] + _infer_size(sizes, shape[dim], "unflatten") + shape[dim + 1:]


def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids from 1-d tensors (``indexing='ij'`` or ``'xy'``), as expanded views."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be 'ij' or 'xy', got '{indexing}'")
    n = len(tensors)
    for x in tensors:
        if x._data.ndim > 1:
            raise RuntimeError("meshgrid expects all tensors to be 0D or 1D")
    sizes = [x._data.size for x in tensors]
    swap = indexing == "xy" and n >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(tensors):
        pos = i
        if swap and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = -1
        out.append(expand(reshape(x, shape), sizes))
    return tuple(out)


@defop("slice_scatter")
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[..., start:end:step, ...]``."""
    dim = _wrap_dim(dim, input._data.ndim, "slice_scatter")
    if step is not None and step <= 0:
        raise RuntimeError("slice_scatter(): slice step must be positive")
    out = input._data.copy()
    _scatter_into("slice_scatter", out[(slice(None),) * dim + (slice(start, end, step),)], src)
    return _make(out)


def _scatter_into(op: str, view, src: Tensor) -> None:
    """The ``*_scatter`` ops write ``src`` into a view of the copy, whose shape it must have
    exactly (PyTorch does not broadcast it)."""
    if tuple(src._data.shape) != tuple(view.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. "
                           f"src size = {list(src._data.shape)}, slice size = "
                           f"{list(view.shape)}")
    view[...] = src._data


@defop("select_scatter")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim``."""
    dim = _wrap_dim(dim, input._data.ndim, "select_scatter")
    size = input._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {dim}")
    out = input._data.copy()
    _scatter_into("select_scatter", out[(slice(None),) * dim + (index, ...)], src)
    return _make(out)


@defop("diagonal_scatter")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written on its (offset, dim1, dim2) diagonal."""
    out = _make(input._data.copy())
    _scatter_into("diagonal_scatter", diagonal.op.impl(out, offset, dim1, dim2)._data, src)
    return out


__all__ += ["slice_scatter", "select_scatter", "diagonal_scatter"]


# ------------------------------------------------------------------------------ flip / roll
@defop("flip")
def flip(input: Tensor, *dims, **kwargs) -> Tensor:
    """A copy with the order of elements reversed along ``dims``.

    >>> flip(tensor([[1, 2], [3, 4]]), [1]).tolist()
    [[2, 1], [4, 3]]
    """
    op = "flip"
    if "dims" in kwargs:
        dims = (kwargs.pop("dims"),)
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")
    # the dims as ints (one sequence of them, or each): an int tuple in one pass
    dims = _int_tuple(dims[0]) if len(dims) == 1 else tuple(map(operator.index, dims))
    data = input._data
    nd = data.ndim
    # a reversed slice per flipped dim (NumPy's np.flip builds the same view behind a Python
    # wrapper that costs 1.4 us), copied
    idx = _flip_index(nd, dims)
    if nd == 0 or not dims:
        return _make(data.copy())
    return _make(data[idx].copy(order="K"))


_REV, _FULL = slice(None, None, -1), slice(None)


# flip's index depends on the rank and the dims only: built once, in the pass that checks the
# dims (an error is raised, not cached)
@functools.lru_cache(maxsize=512)
def _flip_index(nd: int, dims: tuple) -> tuple:
    rev = _REV
    idx = [_FULL] * (nd or 1)
    for d in dims:
        d = _wrap_dim(d, nd, "flip")
        if idx[d] is rev:
            raise RuntimeError(f"flip(): dim {d} appears multiple times in the list of dims")
        idx[d] = rev
    return tuple(idx)


def fliplr(input: Tensor) -> Tensor:
    """Reverse the order of columns (dim 1); needs at least 2 dims.

    >>> fliplr(tensor([[1, 2], [3, 4]])).tolist()
    [[2, 1], [4, 3]]
    """
    if input._data.ndim < 2:
        raise RuntimeError("fliplr(): Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input: Tensor) -> Tensor:
    """Reverse the order of rows (dim 0); needs at least 1 dim.

    >>> flipud(tensor([1, 2, 3])).tolist()
    [3, 2, 1]
    """
    if input._data.ndim < 1:
        raise RuntimeError("flipud(): Input must be >= 1-d.")
    return flip(input, [0])


def _int_tuple(x) -> tuple[int, ...]:
    if isinstance(x, (tuple, list)):
        return tuple(map(operator.index, x))
    return (operator.index(x),)


@defop("roll")
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements circularly by ``shifts`` along ``dims`` (flattened when ``dims`` is None).

    >>> roll(tensor([1, 2, 3, 4]), 1).tolist()
    [4, 1, 2, 3]
    """
    op = "roll"
    shifts = _int_tuple(shifts)
    dims = () if dims is None else _int_tuple(dims)
    data = input._data
    xp = array_module(data)
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"{op}(): shifts and dimensions must align. shifts: "
                               f"{len(shifts)}, dims:0")
        return _make(_rolled(xp, data.reshape(-1), {0: shifts[0]}).reshape(data.shape))
    if len(shifts) != len(dims):
        raise RuntimeError(f"{op}(): shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    nd = data.ndim
    if nd == 0:
        raise IndexError(f"{op}(): Dimension specified as {dims[0]} but tensor has no dimensions")
    by_axis = {}  # a dim named twice moves by the sum of its shifts
    for d, k in zip(dims, shifts):
        d = _wrap_dim(d, nd, op)
        by_axis[d] = by_axis.get(d, 0) + k
    return _make(_rolled(xp, data, by_axis))


def _rolled(xp, data, by_axis: dict):
    """A C-contiguous copy of ``data`` rolled by ``by_axis[d]`` along each dim ``d``: one
    block copy per combination of the two pieces of each rolled dim (NumPy's ``roll`` does
    the same behind ~5 us of Python and a copy more)."""
    out = xp.empty(data.shape, data.dtype)
    for src, dst in _roll_blocks(data.shape, tuple(by_axis.items())):
        out[dst] = data[src]
    return out


# the blocks of a roll depend on the shape and the shifts only: worked out once per call
# shape (fftshift's 4 blocks of a matrix took 2.5 us to index)
@functools.lru_cache(maxsize=512)
def _roll_blocks(shape: tuple, shifts: tuple) -> tuple:
    """The (source, destination) index pairs of a roll of an array of ``shape`` by
    ``shifts``, (dim, shift) pairs of distinct dims."""
    nd = len(shape)
    blocks = [((slice(None),) * nd, (slice(None),) * nd)]
    for d, k in shifts:
        n = shape[d]
        k = k % n if n else 0
        if not k:
            continue
        pieces = ((slice(None, n - k), slice(k, None)), (slice(n - k, None), slice(None, k)))
        blocks = [(src[:d] + (a,) + src[d + 1:], dst[:d] + (b,) + dst[d + 1:])
                  for src, dst in blocks for a, b in pieces]
    return tuple(blocks)


# ------------------------------------------------------------------------------ repeats
@defop("repeat")
def repeat(input: Tensor, *sizes) -> Tensor:
    """Tile ``input`` ``sizes[i]`` times along each dim (``Tensor.repeat``); extra leading sizes
    add dims.

    >>> repeat(tensor([1, 2]), 2, 2).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    op = "repeat"
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = _dims_arg(sizes, op)
    data = input._data
    if len(reps) < data.ndim:
        raise RuntimeError(f"{op}(): Number of dimensions of repeat dims can not be smaller than "
                           "number of dimensions of tensor")
    shape = (1,) * (len(reps) - data.ndim) + tuple(data.shape)
    target = [s * r for s, r in zip(shape, reps)]
    for t in target:
        if t < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {t}: "
                               f"{target}")
    xp = array_module(data)
    return _make(xp.ascontiguousarray(xp.tile(data.reshape(shape), reps)))


def tile(input: Tensor, *dims) -> Tensor:
    """Repeat ``input`` along each dim; ``dims`` shorter than ``input.dim()`` is padded with
    leading ones.

    >>> tile(tensor([[1, 2]]), (2,)).tolist()
    [[1, 2, 1, 2]]
    """
    reps = _dims_arg(dims, "tile")
    nd = input._data.ndim
    if len(reps) < nd:
        reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


@defop("repeat_interleave")
def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (or each slice along ``dim``) ``repeats`` times; ``repeats`` is an
    int or a tensor with one count per element. ``repeat_interleave(counts)`` returns the
    indices ``0, 0, 1, ...`` repeated by ``counts``.

    >>> repeat_interleave(tensor([1, 2]), tensor([1, 3])).tolist()
    [1, 2, 2, 2]
    """
    op = "repeat_interleave"
    data = input._data
    xp = np if data.__class__ is np.ndarray else array_module(data)
    if repeats is None:
        if data.dtype.kind not in "iu":
            raise NotImplementedError(f'"{op}" not implemented for \'{_tname(data.dtype)}\'')
        if data.ndim != 1:
            raise RuntimeError(f"{op}(): repeat_interleave only accept 1D vector as repeat")
        if data.size and int(data.min()) < 0:
            raise RuntimeError(f"{op}(): repeats can not be negative")
        # the counts repeat their own positions
        reps, data, axis = data, xp.arange(data.shape[0], dtype=np.int64), 0
    else:
        if isinstance(repeats, Tensor):
            r = repeats._data
            _same_device(op, data, r)
            if r.dtype.kind not in "iu":
                raise NotImplementedError(
                    f'"{op}" not implemented for \'{_tname(r.dtype)}\'')
            if r.ndim > 1:
                raise RuntimeError(f"{op}(): repeat_interleave only accept 1D vector as repeat")
            reps = int(r.reshape(-1)[0]) if r.size == 1 else r.reshape(-1)
        else:
            reps = operator.index(repeats)
        if reps.__class__ is int and reps < 0:
            raise RuntimeError(f"{op}(): Repeats must be non-negative")
        if dim is None or data.ndim == 0:  # over the flattened input
            if dim is not None:
                _wrap_dim(dim, 0, op)
            data, axis = data.reshape(-1), 0
        else:
            axis = _wrap_dim(dim, data.ndim, op)
        if reps.__class__ is not int:
            if reps.shape[0] != data.shape[axis]:
                raise RuntimeError(
                    f"{op}(): repeats must have the same size as input along dim, but got "
                    f"repeats.size(0) = {reps.shape[0]} and input.size({axis}) = "
                    f"{data.shape[axis]}")
            if reps.size and int(reps.min()) < 0:
                raise RuntimeError(f"{op}(): repeats can not be negative")
    # one repeat of the array along its axis (each slice copied ``reps`` times in place),
    # where an index of repeated positions and a take through it made three passes
    out = xp.repeat(data, reps, axis)
    if output_size is not None and output_size != out.shape[axis]:
        raise RuntimeError(f"{op}: Invalid output_size, expected {out.shape[axis]} but got "
                           f"{output_size}")
    return _make(out)


@with_out(casting="no")
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of ``input.narrow(dim, start, length)``: ``length`` elements from ``start``.

    >>> narrow_copy(tensor([[1, 2, 3], [4, 5, 6]]), 1, 1, 2).tolist()
    [[2, 3], [5, 6]]
    """
    op = "narrow_copy"
    data = input._data
    if data.ndim == 0:
        raise RuntimeError(f"{op}(): narrow() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, data.ndim, op)
    start, length = operator.index(start), operator.index(length)
    size = data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"{op}(): start out of range (expected to be in range of "
                         f"[{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"{op}(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({size}).")
    return clone(getitem(input, (slice(None),) * dim + (slice(start, start + length),)))


# ------------------------------------------------------------------ more stacking and splitting
def _tensor_list(tensors, op: str):
    """``tensors`` itself, once checked to be a list or tuple of tensors (class tests first:
    the abstract checks only for what is not exactly a list, a tuple or a Tensor)."""
    if tensors.__class__ is not list and tensors.__class__ is not tuple and (
            isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple))):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for j, x in enumerate(tensors):
        if x.__class__ is not Tensor and not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {j} in argument 0, but got "
                            f"{type(x).__name__}")
    return tensors


def atleast_3d(*tensors):
    """Each tensor viewed with at least three dims: ``()`` -> ``(1, 1, 1)``, ``(n,)`` ->
    ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``; one tensor gives a tensor, several (or one
    list of them) a tuple.

    >>> atleast_3d(tensor([1., 2.])).shape
    ember.Size([1, 2, 1])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(atleast_3d(x) for x in _tensor_list(tensors[0], "atleast_3d"))
    if len(tensors) != 1:
        return tuple(atleast_3d(x) for x in _tensor_list(tensors, "atleast_3d"))
    x = tensors[0]
    if not isinstance(x, Tensor):
        raise TypeError(f"atleast_3d(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    nd = x._data.ndim
    if nd == 0:
        return reshape(x, 1, 1, 1)
    if nd == 1:
        return _unsqueeze(_unsqueeze(x, 0), 2)
    return _unsqueeze(x, 2) if nd == 2 else x


@with_out(casting="cat")
def column_stack(tensors) -> Tensor:
    """The tensors side by side as columns: 0-d and 1-d ones become ``(n, 1)`` columns.

    >>> column_stack([tensor([1, 2]), tensor([3, 4])])
    tensor([[1, 3],
            [2, 4]])
    """
    ts = _tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack(): column_stack expects a non-empty TensorList")
    # every piece has at least two dims: hstack's cat along dim 1, and a 0-d or 1-d tensor's
    # reshape to a column is always a view
    return cat([_view(x, (x._data.size, 1)) if x._data.ndim <= 1 else x for x in ts], 1)


def row_stack(tensors) -> Tensor:
    """Alias of :func:`vstack`."""
    ts = _tensor_list(tensors, "row_stack")
    if not ts:
        raise RuntimeError("row_stack(): vstack expects a non-empty TensorList")
    return vstack(ts)


@with_out(casting="cat")
def dstack(tensors) -> Tensor:
    """The tensors stacked depth-wise (along dim 2, after :func:`atleast_3d`).

    >>> dstack([tensor([1, 2]), tensor([3, 4])]).shape
    ember.Size([1, 2, 2])
    """
    ts = _tensor_list(tensors, "dstack")
    if not ts:
        raise RuntimeError("dstack(): dstack expects a non-empty TensorList")
    # atleast_3d's shapes, each one reshape (a view: only the values go on, into cat)
    return cat([_reshape(x, _shape_3d(x._data.shape)) if x._data.ndim < 3 else x
                for x in ts], 2)


def _shape_3d(shape: tuple) -> tuple:
    """:func:`atleast_3d`'s shape for a 0-d, 1-d or 2-d shape."""
    return (*shape, 1) if len(shape) == 2 else ((1, *shape, 1) if shape else (1, 1, 1))


def _dir_split(op: str, input: Tensor, indices_or_sections, min_dims: int, dim: int) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    nd = input._data.ndim
    if nd < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {nd} dimensions!")
    if indices_or_sections.__class__ is int or (
            isinstance(indices_or_sections, numbers.Integral) and
            not isinstance(indices_or_sections, bool)):
        n = int(indices_or_sections)
        size = input._data.shape[dim]
        if n == 0 or size % n:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {n}!")
        if n > 0:  # n equal blocks: the one registry op tensor_split would call (a
            return split_with_sizes(input, (size // n,) * n, dim)  # negative n: its error)
    elif not isinstance(indices_or_sections, (list, tuple)):
        raise TypeError(f"{op}(): argument 'indices_or_sections' must be int or tuple of ints, "
                        f"not {type(indices_or_sections).__name__}")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input: Tensor, indices_or_sections) -> tuple:
    """Split horizontally (along dim 1, or 0 for a 1-D tensor) into equal parts or at the
    given indices (views)."""
    nd = input._data.ndim if isinstance(input, Tensor) else 0
    return _dir_split("hsplit", input, indices_or_sections, 1, 1 if nd > 1 else 0)


def vsplit(input: Tensor, indices_or_sections) -> tuple:
    """Split vertically (along dim 0) into equal parts or at the given indices (views)."""
    return _dir_split("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input: Tensor, indices_or_sections) -> tuple:
    """Split depth-wise (along dim 2) into equal parts or at the given indices (views)."""
    return _dir_split("dsplit", input, indices_or_sections, 3, 2)


@defop("split_with_sizes")
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    """Views of consecutive blocks of ``split_sizes`` along ``dim``; one node in a graph
    (its backward is one ``cat``), so the per-step slices of a recurrent layer's input
    projection do not each write a full-size gradient."""
    d = input._data
    nd = d.ndim
    if nd == 0:
        raise RuntimeError("split_with_sizes(): split expects at least a 1-dimensional tensor")
    dim = _wrap_dim(dim, nd, "split_with_sizes")
    # the pieces sliced in the pass that converts the sizes; the sizes checked after it
    pieces, start, neg = [], 0, False
    if dim:
        pre = (slice(None),) * dim
        for n in split_sizes:
            if n.__class__ is not int:
                n = int(n)
            neg = neg or n < 0
            pieces.append(d[pre + (slice(start, start + n),)])
            start += n
    else:
        for n in split_sizes:
            if n.__class__ is not int:
                n = int(n)
            neg = neg or n < 0
            pieces.append(d[start:start + n])
            start += n
    if neg or start != d.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{d.shape[dim]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={[int(s) for s in split_sizes]}")
    return tuple(input._views_of(pieces))


# PyTorch's forms without view tracking; ember's pieces are views either way (the namespace's
# composite wrapper makes their errors name them)
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """:func:`chunk`."""
    return chunk(input, chunks, dim)


def unsafe_split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """:func:`split`."""
    return split(tensor, split_size_or_sections, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """The registry op ``split_with_sizes``."""
    return split_with_sizes(input, split_sizes, dim)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the elements of a 1-D tensor, one per row (as
    ``itertools.combinations`` / ``combinations_with_replacement``).

    >>> combinations(tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"combinations(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    check_int("combinations", "r", 2, r)
    if input._data.ndim != 1:
        raise RuntimeError(f"combinations(): Expect a 1D vector, but got shape "
                           f"{list(input._data.shape)}")
    if r < 0:
        raise RuntimeError(f"combinations(): Expect a non-negative number, but got {r}")
    idx = _combination_rows(input._data.shape[0], int(r), with_replacement).reshape(-1)
    xp = array_module(input._data)
    out = index_select(input, 0, Tensor._make(idx if xp is np else xp.asarray(idx)))
    return reshape(out, -1, int(r)) if r else out  # r = 0: PyTorch's empty 1-D result


def _combination_rows(n: int, r: int, with_replacement: bool) -> np.ndarray:
    """The (k, r) int64 rows of ``itertools.combinations(range(n), r)`` (or
    ``combinations_with_replacement``), in its order, built a column at a time: every row
    ending in ``v`` is followed by each value from ``v + 1`` (``v``) to ``n - 1``."""
    if r == 0:
        return np.zeros((0, 0), np.int64)
    rows = np.arange(n, dtype=np.int64)[:, None]
    for _ in range(r - 1):
        start = rows[:, -1] + (0 if with_replacement else 1)
        counts = n - start
        begins = np.cumsum(counts) - counts
        nxt = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(begins - start, counts)
        rows = np.concatenate([np.repeat(rows, counts, axis=0), nxt[:, None]], axis=1)
    return rows


def sum_to_size(input: Tensor, *size) -> Tensor:
    """``input`` summed down to ``size``, which it must be expandable to (the reduction of a
    broadcast: sums over leading dims and over dims of size 1 in ``size``).

    >>> ones(2, 3).sum_to_size(1, 3)
    tensor([[2., 2., 2.]])
    """
    if len(size) == 1 and isinstance(size[0], (list, tuple, Size)):
        size = tuple(size[0])
    size = tuple([int(s) for s in size])
    dims, keepdim, view = _sum_to_size_plan(input._data.shape, size)
    if not dims:
        return input
    s = input.sum(dims, keepdim=keepdim)
    return _view(s, size) if view else s


# sum_to_size's reduction depends on the two shapes only: worked out once per pair (an error
# is raised, not cached)
@functools.lru_cache(maxsize=512)
def _sum_to_size_plan(shape: tuple, size: tuple) -> tuple:
    """The sorted dims that ``sum_to_size`` sums (the leading dims, and those of size 1 in
    ``size``), whether the sum keeps them, and whether its result still needs a view to
    ``size`` (only when it sums leading dims and dims of size 1 both)."""
    lead = len(shape) - len(size)
    ok = lead >= 0
    inner = []
    if ok:
        for i, s in enumerate(size, lead):
            if s != shape[i]:
                if s != 1:
                    ok = False
                    break
                inner.append(i)
    if not ok:
        raise RuntimeError(f"sum_to_size(): size {{{list(size)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    # keepdim=True gives ``size`` itself when there are no leading dims; keepdim=False gives
    # it when only leading dims are summed
    return tuple(range(lead)) + tuple(inner), not lead, bool(lead and inner)


def as_strided_(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """In-place :func:`as_strided`: ``input`` becomes the view of its storage with the given
    size, stride and offset."""
    return become(input, as_strided(input, size, stride, storage_offset), "as_strided_")


@defop("as_strided_scatter")
def as_strided_scatter(input: Tensor, src: Tensor, size: tuple, stride: tuple,
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` (its layout kept, as :func:`clone`) with ``src`` written into its
    :func:`as_strided` view; one registry op, whose gradient is ``input``'s with the view's
    elements cleared and ``src``'s as that view of it.

    >>> as_strided_scatter(zeros(4), ones(2), (2,), (2,))
    tensor([1., 0., 1., 0.])
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, "
                        f"not {type(src).__name__}")
    if storage_offset is not None:
        check_int("as_strided_scatter", "storage_offset", 5, storage_offset)
    out = _make(input._data.copy(order="K"))  # its own storage: the view's offset is absolute
    size = _ints(size, "as_strided_scatter")
    stride = _ints(stride, "as_strided_scatter", "stride")
    offset = 0 if storage_offset is None else operator.index(storage_offset)
    d = out._data
    view = _restride_bytes(out, size, _strided_bytes(size, stride, offset, d.size, d.itemsize),
                           offset * d.itemsize)._data
    s = src._data
    if view.shape != s.shape:
        raise RuntimeError(f"as_strided_scatter(): expected src to have a size equal to the "
                           f"slice of self. src size = {list(s.shape)}, slice size = "
                           f"{list(view.shape)}")
    view[...] = s
    return out


def resize_(input: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give ``input`` the shape ``sizes`` (contiguous), keeping the elements of its storage
    from its offset on; new elements are uninitialized (zero). The storage grows when it must
    (other views then keep the old one)."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, Size)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"resize_(): Trying to create tensor with negative dimension "
                           f"{min(sizes)}: {list(sizes)}")
    if input.requires_grad:
        raise RuntimeError("resize_(): cannot resize variables that require grad")
    _run_deferred(input)
    d = input._data
    if sizes == d.shape:
        return input
    root = _root(d)
    offset = (_ptr(d) - _ptr(root)) // d.itemsize if d.size else 0
    n = math.prod(sizes)
    xp = array_module(d)
    flat = root.reshape(-1).view(d.dtype) if root.dtype != d.dtype else root.reshape(-1)
    if offset + n <= flat.size:
        input._data = flat[offset:offset + n].reshape(sizes)
    else:
        buf = xp.zeros(offset + n, d.dtype)
        buf[:flat.size] = flat
        input._data = buf[offset:].reshape(sizes)
    input._bump()
    return input


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """:func:`resize_` to ``the_template``'s shape."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 2) must be Tensor, "
                        f"not {type(the_template).__name__}")
    return resize_(input, tuple(the_template.shape))
