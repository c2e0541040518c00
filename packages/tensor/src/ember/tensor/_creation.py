"""Tensor creation: from data, filled, ranges, identity and triangles, and moves between
dtypes and devices."""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from . import _dtype as D
from ._checks import check_int, checked_scalar
from ._device import CPU, DEFAULT_DEVICE, device, to_device
from ._fpstate import quiet
from ._registry import array_module, defop, with_out
from ._tensor import Size, Tensor, _device_of
from .kernels import get as _kernel

__all__ = [
    "tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "empty", "zeros", "ones",
    "full", "empty_like", "zeros_like", "ones_like", "full_like", "arange", "range", "linspace",
    "logspace", "eye", "tril", "triu", "empty_strided", "scalar_tensor", "clone", "detach",
    "OutOfMemoryError", "compile", "empty_permuted", "frombuffer",
]


class OutOfMemoryError(RuntimeError, MemoryError):
    """An allocation failed: a RuntimeError, as PyTorch's (``except RuntimeError`` catches it),
    and a MemoryError, as NumPy's."""


def _out_of_memory(op: str, shape, dt) -> OutOfMemoryError:
    n = math.prod(int(s) for s in shape) * dt.itemsize
    return OutOfMemoryError(f"{op}(): can't allocate memory: you tried to allocate {n} bytes "
                            f"(shape {list(shape)}, dtype {dt})")

_make = Tensor._make


def _xp(dev: device):
    if dev.type == "cpu":
        return np
    from . import _cupy

    return _cupy.require("creation")


def _on(arr, dev: device | None):
    """Move an ndarray to ``dev`` (no copy when it is already there)."""
    if dev is None:
        return arr
    cur = _device_of(arr)
    if cur == dev or (dev.type == "cuda" and dev.index is None and cur.type == "cuda"):
        return arr
    if dev.type == "cpu":
        return arr.get()
    cp = _xp(dev)
    if cur.type == "cuda":
        with cp.cuda.Device(dev.index or 0):
            return cp.array(arr, copy=True)
    return cp.asarray(arr)


def _size(size, op: str) -> tuple[int, ...]:
    if len(size) == 1 and size[0].__class__ is not int and isinstance(size[0],
                                                                      (tuple, list, Size)):
        size = size[0]
    for s in size:  # the common case, plain sizes, taken as they are
        if s.__class__ is not int or s < 0:
            break
    else:
        return size if size.__class__ is tuple else tuple(size)
    out = []
    for s in size:
        if s.__class__ is int and s >= 0:  # the common case: a plain size
            out.append(s)
            continue
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(
                f"{op}(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _size_kw(sizes: tuple, size, op: str) -> tuple:
    """The sizes of a ``*size`` factory called as ``f(2, 3)``, ``f((2, 3))`` or, as PyTorch
    allows, ``f(size=(2, 3))``."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not "
                        f"{type(size).__name__}")
    return (tuple(size),)


def _other_sequence(x) -> bool:
    """A sequence that is not a list, a tuple, a string or an array (a deque, a range, ...):
    ``tensor()`` reads it as PyTorch does, as a list of its items."""
    return (isinstance(x, Sequence) and not isinstance(x, (list, tuple, str, bytes, bytearray))
            and not isinstance(x, Tensor))


def _as_lists(x):
    if isinstance(x, (list, tuple)) or _other_sequence(x):
        return [_as_lists(v) for v in x]
    return x


_PY_SCALARS = (bool, int, float, complex)


def _python_scalar_classes(x, seen: set) -> bool:
    """Collect into ``seen`` the classes of the items of nested lists/tuples ``x``; False as
    soon as an item is anything but a list, a tuple or a Python bool/int/float/complex (one
    class test per item, no ABC checks)."""
    for v in x:
        c = v.__class__
        if c is list or c is tuple:
            if not _python_scalar_classes(v, seen):
                return False
        elif c in _PY_SCALARS:
            seen.add(c)
        else:
            return False
    return True


def _dtype_of_classes(seen: set) -> D.dtype:
    """The dtype of Python numbers of the classes ``seen``."""
    if complex in seen:
        return D.default_complex()
    if float in seen or not seen:
        return D.get_default_dtype()
    return D.int64 if int in seen else D.bool


def _infer_dtype(data) -> D.dtype:
    """The dtype ``tensor(data)`` picks: bools -> bool, ints -> int64, floats -> default,
    complex numbers -> the default's complex counterpart."""
    seen: set = set()
    if (data.__class__ is list or data.__class__ is tuple) and \
            _python_scalar_classes(data, seen):  # the common case: Python numbers only
        return _dtype_of_classes(seen)
    kinds = set()

    def walk(x):
        if isinstance(x, (list, tuple)) or _other_sequence(x):
            for v in x:
                walk(v)
        elif isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, np.generic):  # a NumPy scalar keeps its dtype, as in PyTorch
            kinds.add(D.from_numpy_dtype(x.dtype, "tensor"))
        elif isinstance(x, (bool, np.bool_)):
            kinds.add(D.bool)
        elif isinstance(x, (numbers.Integral,)):
            kinds.add(D.int64)
        elif isinstance(x, numbers.Real):
            kinds.add(D.get_default_dtype())
        elif isinstance(x, numbers.Complex):
            kinds.add(D.default_complex())
        else:
            raise TypeError(f"tensor(): could not infer dtype of {type(x).__name__}")

    walk(data)
    if not kinds:
        return D.get_default_dtype()
    out = kinds.pop()
    for k in kinds:
        out = D.promote_types(out, k)
    return out


def _to_array(data, dtype: D.dtype | None, op: str):
    if data.__class__ is list or data.__class__ is tuple:
        seen: set = set()
        if _python_scalar_classes(data, seen):  # Python numbers only: no item to convert
            return _np_array(data, _dtype_of_classes(seen) if dtype is None else dtype, op)
    if isinstance(data, Tensor):
        arr = data._data
        return arr if dtype is None else arr.astype(dtype.np, copy=False)
    if isinstance(data, np.ndarray):
        if dtype is None:
            D.from_numpy_dtype(data.dtype, op)
            return data
        return data.astype(dtype.np, copy=False)
    if hasattr(data, "__cuda_array_interface__"):
        from . import _cupy

        arr = _cupy.require(op).asarray(data)
        return arr if dtype is None else arr.astype(dtype.np, copy=False)
    if isinstance(data, (np.generic,)):
        arr = np.asarray(data)
        return arr if dtype is None else arr.astype(dtype.np)
    if isinstance(data, str) or data is None:
        raise TypeError(f"{op}(): new(): invalid data type '{type(data).__name__}'")
    if _other_sequence(data) or (isinstance(data, (list, tuple)) and
                                 any(_other_sequence(x) for x in data)):
        data = _as_lists(data)
    if dtype is None:
        dtype = _infer_dtype(data)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [x.tolist() if isinstance(x, Tensor) else x for x in data]
    return _np_array(data, dtype, op)


def _np_array(data, dtype: D.dtype, op: str):
    try:
        with quiet():  # a float beyond the dtype's range is inf, as PyTorch's, with no warning
            return np.array(data, dtype=dtype.np)
    except ValueError as exc:
        raise ValueError(f"{op}(): {exc}") from None
    except OverflowError as exc:
        if _beyond_int64(data):  # PyTorch's error where it unpacks such an int
            raise ValueError(f"{op}(): Overflow when unpacking long long (a Python int "
                             f"outside int64's range)") from None
        raise RuntimeError(f"{op}(): value cannot be converted to type {dtype} without "
                           f"overflow ({exc})") from None


def _beyond_int64(data) -> bool:
    """Does ``data`` (nested lists and tuples) hold a Python int outside int64's range?"""
    if isinstance(data, (list, tuple)):
        return any(_beyond_int64(x) for x in data)
    return isinstance(data, int) and not -2**63 <= data < 2**63


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays, tensors).

    >>> tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    dt = None if dtype is None else D.to_dtype(dtype, "tensor")
    arr = _to_array(data, dt, "tensor")
    if device is not None:
        arr = _on(arr, to_device(device))
    elif DEFAULT_DEVICE[0] is not CPU and not isinstance(data, Tensor):
        arr = _on(arr, DEFAULT_DEVICE[0])  # (set_default_device: data that is not a tensor)
    # an array that may share the caller's memory is copied (C order, as copy() makes it);
    # what NumPy built from Python data is new and C-contiguous already
    if not (data.__class__ is list or data.__class__ is tuple) and (
            isinstance(data, (Tensor, np.ndarray)) or
            hasattr(data, "__cuda_array_interface__") or not arr.flags.c_contiguous):
        arr = arr.copy()
    out = _make(arr)
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor` but shares memory with ``data`` when dtype and device allow."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    dt = None if dtype is None else D.to_dtype(dtype, "as_tensor")
    arr = _to_array(data, dt, "as_tensor")
    # device None: where the data is, or the default device set by set_default_device
    return _make(_on(arr, None if device is None and DEFAULT_DEVICE[0] is CPU
                     else to_device(device)))


asarray = as_tensor


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array.

    >>> a = np.zeros(3); t = from_numpy(a); t[0] = 1; a.tolist()
    [1.0, 0.0, 0.0]
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype, "from_numpy")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "from_numpy(): At least one stride in the given numpy array is negative, and tensors "
            "with negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array with array.copy().)")
    if any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("from_numpy(): given numpy array strides not a multiple of the element "
                         "byte size. Copy the numpy array to reallocate the memory.")
    return _make(ndarray)


def from_dlpack(ext) -> Tensor:
    """Zero-copy import of a DLPack-capable array (NumPy, CuPy, PyTorch)."""
    dev_type, dev_id = ext.__dlpack_device__()
    if int(dev_type) == 1:  # kDLCPU
        return _make(np.from_dlpack(ext))
    from . import _cupy

    return _make(_cupy.require("from_dlpack").from_dlpack(ext))


def _factory(op: str, size, dtype, device, fill):
    return _alloc(op, _size(size, op),
                  D.get_default_dtype() if dtype is None else D.to_dtype(dtype, op),
                  to_device(device), fill)


def _alloc(op: str, shape: tuple, dt: D.dtype, dev: device, fill):
    """A new array of ``shape`` (checked sizes), ``dt`` and ``dev`` filled with ``fill``
    (uninitialized for None). True, what ``ones`` fills with, fits every dtype unchecked; the
    device's ``fill`` kernel writes it (on the CPU a vectorized loop, where NumPy's ``fill``
    and ``full`` store one element at a time)."""
    if dev.type == "cpu":
        xp = np
    else:
        xp = _xp(dev)
        if dev.index is not None:  # allocate there without changing the current device
            with xp.cuda.Device(dev.index):
                return _alloc(op, shape, dt, _CURRENT_CUDA, fill)
    try:
        if fill is None:
            return xp.empty(shape, dtype=dt.np)
        if fill == 0 and _plus_zero(fill):
            return xp.zeros(shape, dtype=dt.np)
        out = xp.empty(shape, dtype=dt.np)
        fn = _FILL.get(xp)
        if fn is None:
            fn = _FILL[xp] = _kernel("fill", xp)
        fn(out, fill if fill is True else checked_scalar(op, fill, dt.np))
        return out
    except MemoryError:
        raise _out_of_memory(op, shape, dt) from None


_CURRENT_CUDA = device("cuda")  # (the current CUDA device: _alloc's within a device context)
_FILL: dict = {}  # the fill kernel of each array module, looked up once


def _plus_zero(fill) -> bool:
    """Is ``fill`` (equal to 0) not a negative zero, whose sign a fill keeps?"""
    try:
        return math.copysign(1.0, fill) > 0
    except TypeError:  # a complex zero
        return True


def _finish(arr, requires_grad: bool) -> Tensor:
    t = _make(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


@with_out(factory=True)
def empty(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
          memory_format=None, pin_memory: bool = False, layout=None) -> Tensor:
    """An uninitialized tensor of the given shape (``empty(2, 3)``, ``empty((2, 3))`` or
    ``empty(size=(2, 3))``)."""
    sizes = _size_kw(sizes, size, "empty")
    return _finish(_factory("empty", sizes, dtype, device, None), requires_grad)


@with_out(factory=True)
def zeros(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
          layout=None) -> Tensor:
    """A tensor of zeros.

    >>> zeros(2, 3).shape
    ember.Size([2, 3])
    >>> zeros(size=(2, 3)).shape
    ember.Size([2, 3])
    """
    sizes = _size_kw(sizes, size, "zeros")
    return _finish(_factory("zeros", sizes, dtype, device, 0), requires_grad)


@with_out(factory=True)
def ones(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
         layout=None) -> Tensor:
    """A tensor of ones (``size=`` as for :func:`zeros`)."""
    sizes = _size_kw(sizes, size, "ones")
    return _finish(_factory("ones", sizes, dtype, device, True), requires_grad)


@with_out(factory=True)
def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False,
         layout=None) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value's kind by default."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = D.scalar_dtype(fill_value)
    return _finish(_factory("full", (size,) if not isinstance(size, (tuple, list, Size)) else size,
                            dtype, device, fill_value), requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialized tensor with the given strides (in elements)."""
    size, stride = tuple(size), tuple(stride)
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype, "empty_strided")
    n = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    buf = _xp(to_device(device)).empty(n, dtype=dt.np)
    sb = tuple([s * dt.itemsize for s in stride])
    if buf.__class__ is np.ndarray:
        # the view by NumPy's constructor, its arguments by position (stride_tricks'
        # as_strided costs ~10 us of Python); a layout it refuses goes on to as_strided
        try:
            return _finish(np.ndarray(size, buf.dtype, buf, 0, sb), requires_grad)
        except (TypeError, ValueError):
            pass
    return _finish(array_module(buf).lib.stride_tricks.as_strided(buf, size, sb), requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor of ``size`` whose memory is laid out in the dim order
    ``physical_layout`` (outermost first): ``empty_permuted((2, 3, 4), (0, 2, 1))`` has
    strides ``(12, 1, 3)``."""
    size = tuple(int(s) for s in size)
    perm = tuple(int(p) for p in physical_layout)
    if len(perm) != len(size):
        raise RuntimeError(f"empty_permuted(): Number of dimensions in size does not match the "
                           f"length of the physical_layout; i.e. len(size) = {len(size)} is "
                           f"not equal to len(physical_layout) = {len(perm)}")
    if len(set(perm)) != len(perm):
        raise RuntimeError("empty_permuted(): Duplicate dim not allowed")
    bad = [p for p in perm if not 0 <= p < len(size)]
    if bad:
        raise IndexError(f"empty_permuted(): Dimension out of range (expected to be in range of "
                         f"[0, {len(size) - 1}], but got {bad[0]})")
    phys = empty(*(size[p] for p in perm), dtype=dtype, device=device)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    arr = phys._data.transpose(inv) if perm else phys._data
    return _finish(arr, requires_grad)


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor sharing memory with an object that exposes the buffer protocol
    (``bytearray``, ``array.array``, ``memoryview``): ``count`` elements of ``dtype`` from
    byte ``offset`` (all that fit when ``count`` is -1)."""
    dt = D.to_dtype(dtype, "frombuffer")
    try:
        nbytes = memoryview(buffer).nbytes
    except TypeError:
        raise TypeError(f"frombuffer(): object does not implement Python buffer protocol: "
                        f"{type(buffer).__name__}") from None
    if offset < 0 or offset >= nbytes:
        raise ValueError(f"frombuffer(): both buffer length ({nbytes}) and offset ({offset}) "
                         "must be greater than 0 and less than the buffer length")
    if count == 0 or count < -1:
        raise ValueError(f"frombuffer(): count must be positive or -1, but got {count}")
    item = dt.itemsize
    if count == -1:
        if (nbytes - offset) % item:
            raise ValueError(f"frombuffer(): buffer length ({nbytes - offset} bytes after "
                             f"offset) must be a multiple of element size ({item})")
        count = (nbytes - offset) // item
    elif offset + count * item > nbytes:
        raise ValueError(f"frombuffer(): requested buffer length ({count} * {item} bytes) "
                         f"after offset ({offset}) must not be greater than actual buffer "
                         f"length ({nbytes})")
    arr = np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset)
    if not arr.flags.writeable:
        import warnings

        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor.", UserWarning,
                      stacklevel=2)
    return _finish(arr, requires_grad)


def _like(op, input, dtype, device, fill):
    """:func:`_alloc` of ``input``'s shape, with its dtype and device unless given (what is
    taken from ``input`` needs no normalizing or checking)."""
    return _alloc(op, input._data.shape,
                  input.dtype if dtype is None else D.to_dtype(dtype, op),
                  input.device if device is None else to_device(device), fill)


def empty_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _finish(_like("empty_like", input, dtype, device, None), requires_grad)


def zeros_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """Zeros with the shape, dtype and device of ``input``."""
    return _finish(_like("zeros_like", input, dtype, device, 0), requires_grad)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """Ones with the shape, dtype and device of ``input``."""
    return _finish(_like("ones_like", input, dtype, device, True), requires_grad)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _finish(_like("full_like", input, dtype, device, fill_value), requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full((), s, dtype=dtype or D.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def _integral(v) -> bool:
    """Is ``v`` a Python or NumPy integer (or a bool)? The class test comes first: the ABC
    check costs more than the rest of a small factory call."""
    return v.__class__ is int or isinstance(v, numbers.Integral)


@with_out(factory=True)
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 for integer arguments.

    >>> arange(5).tolist()
    [0, 1, 2, 3, 4]
    """
    if end is None:
        start, end = 0, start
    start, end, step = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(
            f"arange(): upper bound and larger bound inconsistent with step sign "
            f"(start={start}, end={end}, step={step})")
    is_int = _integral(start) and _integral(end) and _integral(step)
    if dtype is None:
        dtype = D.int64 if is_int else D.get_default_dtype()
    dt = D.to_dtype(dtype, "arange")
    n = max(0, math.ceil((end - start) / step))
    xp = _xp(to_device(device))
    # compute in float64 / int64 like PyTorch's accumulate type, then cast
    if dt.is_floating_point or not is_int:
        arr = _kernel("arange_values", xp)(n, start, step, dt.np).astype(dt.np, copy=False)
    else:
        arr = xp.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(dt.np,
                                                                                  copy=False)
    return _finish(arr, requires_grad)


@with_out(factory=True)
def range(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A001
    """Deprecated in PyTorch: like arange but with ``end`` included; float by default."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype, "range")
    xp = _xp(to_device(device))
    return _finish((start + xp.arange(n, dtype=np.float64) * step).astype(dt.np), requires_grad)


@with_out(factory=True)
def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if not _integral(steps) or steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype, "linspace")
    xp = _xp(to_device(device))
    # PyTorch fills the first half from start and the second half from end (symmetric error),
    # in float64: one pass of the device's kernel
    arr = _kernel("linspace_values", xp)(steps, start, end, dt.np)
    if not dt.is_floating_point:
        arr = xp.trunc(arr)
    return _finish(arr.astype(dt.np, copy=False), requires_grad)


@with_out(factory=True)
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    lin = linspace(start, end, steps, dtype=D.float64, device=device)
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype, "logspace")
    xp = array_module(lin._data)
    return _finish(xp.power(base, lin._data).astype(dt.np), requires_grad)


@with_out(factory=True)
def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (``n x m``)."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype, "eye")
    cols = n if m is None else m
    arr = _xp(to_device(device)).zeros((n, cols), dtype=dt.np)
    # the diagonal as one strided slice of the flat array (NumPy's eye writes it through a
    # flat iterator, which costs more than the zeros: 512x512 float32 25 -> 18 us)
    arr.reshape(-1)[:min(n, cols) * (cols + 1):cols + 1] = 1
    return _finish(arr, requires_grad)


@defop("tril", out=True)
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims; the rest is zero."""
    return _triangle("tril", input, diagonal, False)


@defop("triu", out=True)
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims; the rest is zero."""
    return _triangle("triu", input, diagonal, True)


def _triangle(op: str, input: Tensor, diagonal: int, upper: bool) -> Tensor:
    """A copy of ``input`` with the other side of ``diagonal`` zeroed (the device's kernel)."""
    if diagonal.__class__ is not int:
        check_int(op, "diagonal", 2, diagonal)
    d = input._data
    shape = d.shape
    if len(shape) < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got {d.ndim}")
    out = d.copy()  # (C order: what the kernel writes)
    if out.size:  # (an empty matrix or batch has nothing to zero)
        xp = np if d.__class__ is np.ndarray else array_module(d)
        fn = _TRIANGLE.get(xp)
        if fn is None:
            fn = _TRIANGLE[xp] = _kernel("triangle_zero", xp)
        fn(out.reshape(-1, shape[-2], shape[-1]), diagonal, upper)
    return _make(out)


_TRIANGLE: dict = {}  # the triangle_zero kernel of each array module, looked up once


@defop("clone")
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory (strides preserved for dense inputs, like PyTorch)."""
    return _make(input._data.copy(order="K"))


@defop("detach", differentiable=False)
def detach(input: Tensor) -> Tensor:
    """A new tensor sharing memory and version counter, cut from the graph (an op, so that
    recorders see it: autobatch defers it, an ONNX trace writes it as Identity)."""
    return input._detached()


@defop("_to_copy")
def _to_copy(input: Tensor, device_: device | None, dtype: D.dtype | None) -> Tensor:
    arr = input._data
    if dtype is not None and arr.dtype != dtype.np:
        with quiet():  # out-of-range casts give inf/wrap, as in PyTorch
            arr = arr.astype(dtype.np)
    moved = _on(arr, device_)
    if moved is input._data:
        moved = moved.copy()
    return _make(moved)


def _to(t: Tensor, device_: device | None, dtype: D.dtype | None, copy: bool) -> Tensor:
    same_dtype = dtype is None or t._data.dtype == dtype.np
    same_device = device_ is None or t.device == device_ or (
        device_.type == "cuda" and device_.index is None and t.is_cuda)
    if same_dtype and same_device and not copy:
        return t
    return _to_copy(t, device_, dtype)


_CPU = CPU


# ----------------------------------------------------------------------------- Tensor.new, compile
def _tensor_new(self, *args, device=None) -> Tensor:
    """PyTorch's legacy ``Tensor.new``: a tensor of ``self``'s dtype (and device unless
    ``device`` is given): ``new()`` is empty, ``new(2, 3)`` or ``new(Size)`` uninitialized of
    that shape, ``new(sequence)`` holds the data, ``new(tensor)`` shares its storage."""
    dev = self.device if device is None else to_device(device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype != self.dtype:
            raise TypeError(f"new(): expected a tensor of dtype {self.dtype}, got "
                            f"{args[0].dtype}")
        return args[0].detach()
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(tuple(args[0]), dtype=self.dtype, device=dev)
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        data = args[0]
        if isinstance(data, (numbers.Number, str)) or data is None:
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return tensor(data, dtype=self.dtype, device=dev)
    if not args:
        return empty(0, dtype=self.dtype, device=dev)
    return empty(args, dtype=self.dtype, device=dev)


Tensor.new = _tensor_new


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",  # noqa: A001
            mode=None, options=None, disable: bool = False):
    """PyTorch's ``torch.compile``: ember runs eagerly and compiles no graph, so this returns
    ``model`` itself (a Module or a function), unchanged; called without a model it returns a
    decorator that does the same. The options are accepted and ignored.

    >>> f = compile(lambda x: x + 1)
    >>> f(1)
    2
    """
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError("compile(): the model to compile must be callable")
    return model


# --------------------------------------------------------------------------- legacy constructors
def _legacy_data(cls, args, dtype_, device_):
    """The array of a legacy constructor call: ``Tensor(2, 3)``, ``Tensor([1, 2])``,
    ``Tensor(ndarray)``, ``Tensor()``."""
    if not args:  # Tensor(): an empty 1-d tensor, as in PyTorch
        return empty(0, dtype=dtype_, device=device_)._data
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        arg = args[0]
        if isinstance(arg, Tensor):
            return arg._data.astype(dtype_.np, copy=False)
        if isinstance(arg, Size):  # Tensor(other.shape): a new tensor of that size
            return empty(*arg, dtype=dtype_, device=device_)._data
        return tensor(arg, dtype=dtype_, device=device_)._data
    for a in args:
        if not isinstance(a, numbers.Integral) or isinstance(a, bool):
            raise TypeError(
                f"{cls.__name__}(): argument 'size' must be a tuple of ints, but found element "
                f"of type {type(a).__name__}")
    return empty(*args, dtype=dtype_, device=device_)._data


def tensor_init(self, *args, dtype=None, device=None, requires_grad: bool = False) -> None:
    """``Tensor(*sizes)``, ``Tensor(data)``: the legacy constructor, in the default dtype
    unless ``dtype`` is given (bound as ``Tensor.__init__``)."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    self._data = _legacy_data(type(self), args, dt, device)
    if requires_grad:
        self.requires_grad = True


def legacy_class(name: str, dt: D.dtype) -> type:
    """``FloatTensor`` and friends: constructors that return plain Tensors of ``dt``."""
    cls = type(name, (Tensor,), {"_legacy_dtype": dt, "__module__": "ember.tensor",
                                 "__doc__": f"Legacy constructor for {dt} tensors."})
    cls.__new__ = _legacy_new
    return cls


def _legacy_new(cls, *args, dtype=None, device=None, requires_grad=False):
    t = object.__new__(Tensor)
    t._data = _legacy_data(cls, args, cls._legacy_dtype, device)
    if requires_grad:
        t.requires_grad = True
    return t


from ._device import bind_device_predicates as _bind_device_predicates  # noqa: E402

_bind_device_predicates(Tensor)
