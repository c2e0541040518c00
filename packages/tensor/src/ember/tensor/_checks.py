"""Argument checks shared by the op families: devices and in-place writes."""
from __future__ import annotations

import cmath
import math

import numpy as np

from ._fpstate import quiet
from ._tensor import Tensor, _device_of

_ndarray = np.ndarray


def device_error(op: str, a, b) -> RuntimeError:
    """PyTorch's error for mixing devices, naming both."""
    return RuntimeError(
        f"{op}(): Expected all tensors to be on the same device, but found at least two "
        f"devices, {_device_of(a)} and {_device_of(b)}!")


def check_same_device(op: str, *arrays) -> None:
    """RuntimeError unless every array lives on the first one's device."""
    first = arrays[0]
    for a in arrays[1:]:
        if type(a) is not type(first):  # (an array-like standing for an array: its device)
            if _device_of(a) != _device_of(first):
                raise device_error(op, first, a)
        elif not isinstance(a, _ndarray) and a.device != first.device:
            raise device_error(op, first, a)


#: in-place ops that PyTorch lets write into a tensor whose elements overlap (its kernels for
#: fills and for masked or indexed writes do not check; where elements sharing memory are
#: written different values, the last write stays)
_OVERLAP_OK = frozenset(["fill_", "zero_", "masked_fill_", "index_fill_", "index_put_",
                         "setitem_"])


def check_inplace(t: Tensor, op: str) -> None:
    """In-place writes of ``op`` into a tensor whose elements overlap (expanded) are refused,
    as PyTorch refuses them, but for the fills and the masked or indexed writes PyTorch lets
    through (``_OVERLAP_OK``). The one rule for eager ops and for autograd's recording of them."""
    if op not in _OVERLAP_OK and has_internal_overlap(t):
        raise RuntimeError(
            f"{op}(): unsupported operation: more than one element of the written-to "
            "tensor refers to a single memory location. Please clone() the tensor before "
            "performing the operation.")


def has_internal_overlap(t: Tensor) -> bool:
    """Do elements of ``t`` share memory (a dim of stride 0 and size above 1: expanded)?"""
    d = t._data
    if d.flags.c_contiguous:
        return False
    for n, s in zip(d.shape, d.strides):
        if s == 0 and n > 1:
            return True
    return False


# --------------------------------------------------------------------------- broadcasting
def _broadcast_pair(a: tuple, b: tuple):
    """The broadcast of shapes ``a`` and ``b``, or the (size a, size b, dim) that refuses it."""
    n = max(len(a), len(b))
    a2, b2 = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a2, b2)):
        if x != y and x != 1 and y != 1:
            return None, (x, y, i)
        out.append(y if x == 1 else x)
    return tuple(out), None


def broadcast_error(op: str | None, *shapes, detail: str | None = None) -> RuntimeError:
    """PyTorch's RuntimeError for operands of ``shapes`` that do not broadcast, folded left to
    right as PyTorch's TensorIterator does (``a`` is the broadcast of the operands before
    ``b``); ``detail``: the message when the shapes do broadcast (the failure was inside)."""
    prefix = f"{op}(): " if op else ""
    if shapes:
        acc = tuple(shapes[0])
        for s in shapes[1:]:
            out, bad = _broadcast_pair(acc, tuple(s))
            if bad is not None:
                x, y, i = bad
                return RuntimeError(
                    f"{prefix}The size of tensor a ({x}) must match the size of tensor b ({y}) "
                    f"at non-singleton dimension {i} (shapes {list(acc)} and {list(s)})")
            acc = out
    shown = ", ".join(str(list(s)) for s in shapes)
    return RuntimeError(f"{prefix}{detail or f'shapes {shown} cannot be broadcast together'}")


def broadcast_shapes(op: str | None, *shapes) -> tuple:
    """The shape ``shapes`` broadcast to, or :func:`broadcast_error` naming ``op``."""
    acc = tuple(shapes[0]) if shapes else ()
    for s in shapes[1:]:
        s = tuple(s)
        if s == acc:  # (the common case: no per-dim walk)
            continue
        acc, bad = _broadcast_pair(acc, s)
        if bad is not None:
            raise broadcast_error(op, *shapes)
    return acc


# --------------------------------------------------------------------------- argument types
_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                 "int32": "Int", "int64": "Long", "float16": "Half", "bfloat16": "BFloat16",
                 "float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}


def scalar_type_name(dt) -> str:
    """PyTorch's scalar type name of a NumPy dtype or ember dtype (``Half``, ``Long``)."""
    dt = getattr(dt, "np", dt)
    name = getattr(dt, "name", str(dt))
    return _SCALAR_NAMES.get(name, name)


def arg_type_error(op: str, name: str, position: int | None, value,
                   expected: str = "Tensor") -> TypeError:
    """PyTorch's TypeError for an argument of the wrong Python type."""
    where = "" if position is None else f" (position {position})"
    return TypeError(f"{op}(): argument '{name}'{where} must be {expected}, "
                     f"not {type(value).__name__}")


def check_tensor(op: str, name: str, position: int | None, value) -> None:
    """TypeError naming ``op`` unless ``value`` is a tensor."""
    if not isinstance(value, Tensor):
        raise arg_type_error(op, name, position, value)


def check_int(op: str, name: str, position: int | None, value) -> None:
    """TypeError naming ``op`` unless ``value`` is a Python or NumPy integer (PyTorch's int
    parameters take a bool too)."""
    if not isinstance(value, (int, np.integer)):
        raise arg_type_error(op, name, position, value, "int")


def not_implemented(op: str, dt) -> NotImplementedError:
    """PyTorch's error for a dtype an op has no kernel for."""
    return NotImplementedError(f"{op}(): not implemented for '{scalar_type_name(dt)}'")


def check_dtype(op: str, dt, *, bool_ok: bool = True, int_ok: bool = True,
                half_ok: bool = True, float_ok: bool = True) -> None:
    """NotImplementedError naming ``op`` where it has no kernel for ``dt`` (a NumPy dtype):
    bool, the integer types, the half types (float16, bfloat16) or the other floats."""
    dt = getattr(dt, "np", dt)
    kind = dt.kind
    if kind == "b":
        ok = bool_ok
    elif kind in "iu":
        ok = int_ok
    elif dt.itemsize == 2:  # float16, bfloat16 (the integers of 2 bytes went above)
        ok = half_ok
    else:
        ok = float_ok
    if not ok:
        raise not_implemented(op, dt)


_INT_BOUNDS: dict = {}


def int_bounds(np_dtype) -> tuple[int, int]:
    """``(min, max)`` of an integer NumPy dtype, kept per dtype (``np.iinfo`` is slow to
    build: about 1 us, more than the checks that ask for it)."""
    b = _INT_BOUNDS.get(np_dtype)
    if b is None:
        info = np.iinfo(np_dtype)
        b = _INT_BOUNDS[np_dtype] = (int(info.min), int(info.max))
    return b


# PyTorch's (C++) names of the dtypes, as its conversion errors spell them
_C_NAMES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
            "int32": "int", "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t",
            "uint64": "uint64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}
_FINITE_MAX: dict = {}


def _overflow(op: str, value, np_dtype) -> RuntimeError:
    name = _C_NAMES.get(np_dtype.name, np_dtype.name)
    return RuntimeError(f"{op}(): value cannot be converted to type {name} without overflow: "
                        f"{value}")


def checked_scalar(op: str, value, np_dtype):
    """A Python or NumPy scalar as the ``np_dtype`` scalar PyTorch writes into a tensor (fill_,
    setitem, full, index_fill, masked_fill), with c10's checked conversion.

    Into an integer dtype a value out of range, NaN or infinite raises RuntimeError ("value
    cannot be converted to type uint8_t without overflow"); a float is truncated toward zero;
    a negative int wraps into an unsigned dtype down to ``-max`` (-1 into uint8 is 255, -256
    raises). A complex value with an imaginary part raises for a real dtype, and so does a
    finite value beyond float32's range for float32 and complex64 (the half-precision dtypes
    take it as inf, as PyTorch's do). Bool takes any value (its truth). A Python int outside
    [-2**63, 2**64) is refused first, as PyTorch's argument parser does (OverflowError).

    >>> checked_scalar("fill_", -1, np.dtype(np.uint8))
    np.uint8(255)
    >>> checked_scalar("fill_", 2.7, np.dtype(np.int64))
    np.int64(2)
    """
    kind = np_dtype.kind
    c = value.__class__  # (a Python int or float, the common values, tested by identity)
    if c is int:
        if not -(1 << 63) <= value < (1 << 64):
            raise OverflowError(f"{op}(): Python int too large to convert to C long: {value}")
    elif c is not float and (isinstance(value, complex) or
                             (isinstance(value, np.generic) and value.dtype.kind == "c")):
        if kind != "c":
            if value.imag:
                raise _overflow(op, value, np_dtype)
            value = value.real
    if kind == "b" or (c is not int and c is not float and isinstance(value, (bool, np.bool_))):
        return np_dtype.type(bool(value)) if kind == "b" else np_dtype.type(int(value))
    if kind in "iu":
        lo, hi = int_bounds(np_dtype)
        if c is int or isinstance(value, (int, np.integer)):
            v = int(value)
            if lo <= v <= hi:
                return np_dtype.type(v)
            if kind == "u" and -hi <= v < 0:  # two's complement, as c10 allows
                return np_dtype.type(v + hi + 1)
            raise _overflow(op, value, np_dtype)
        f = float(value)
        if not lo <= f <= hi or int(f) > hi:  # NaN fails the comparison
            raise _overflow(op, value, np_dtype)
        return np_dtype.type(int(f))
    big = _FINITE_MAX.get(np_dtype)
    if big is None:  # bfloat16's range is float32's
        big = _FINITE_MAX[np_dtype] = float(np.finfo(np_dtype if kind in "fc" else np.float32).max)
    if kind == "c":
        z = complex(value)
        if abs(z.real) <= big and abs(z.imag) <= big or not cmath.isfinite(z):
            return np_dtype.type(z)
        raise _overflow(op, value, np_dtype)
    f = float(value)
    if -big <= f <= big or not math.isfinite(f):  # in range, or inf / NaN: converts silently
        return np_dtype.type(f)
    if np_dtype.itemsize > 2:
        raise _overflow(op, value, np_dtype)
    with quiet():  # a finite value past a half-precision range: inf
        return np_dtype.type(f)
