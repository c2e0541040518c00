"""Argument checks shared by the op families: devices and in-place writes."""
from __future__ import annotations

import numpy as np

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
        if type(a) is not type(first) or (not isinstance(a, _ndarray)
                                          and a.device != first.device):
            raise device_error(op, first, a)


def check_inplace(t: Tensor, op: str) -> None:
    """In-place writes into a tensor whose elements overlap (expanded) are refused."""
    d = t._data
    if not d.flags.c_contiguous:
        for n, s in zip(d.shape, d.strides):
            if s == 0 and n > 1:
                raise RuntimeError(
                    f"{op}(): unsupported operation: more than one element of the written-to "
                    "tensor refers to a single memory location. Please clone() the tensor before "
                    "performing the operation.")


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
        acc, bad = _broadcast_pair(acc, tuple(s))
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
    elif dt.itemsize == 2 or dt.name == "bfloat16":
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
