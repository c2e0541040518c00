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


# --------------------------------------------------------------------------- argument types
_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                 "int32": "Int", "int64": "Long", "float16": "Half", "bfloat16": "BFloat16",
                 "float32": "Float", "float64": "Double"}


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
