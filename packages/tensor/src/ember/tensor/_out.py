"""PyTorch's ``out=`` (:func:`write_out`, which the registry's compiled public functions and
the composites' wrappers call) and the array module of an array (:func:`array_module`). A
leaf of the core's imports: the registry and the composites' compiler both use it."""
from __future__ import annotations

import numpy as np

from ._checks import scalar_type_name
from ._dtype import can_cast, from_numpy_dtype
from ._tensor import Tensor

__all__ = ["array_module", "write_out"]


def write_out(op, result, out, casting: str = "same_kind"):
    """PyTorch's ``out=``: write ``result`` (a tensor or a tuple of tensors) into ``out``
    (resized when its shape differs), checking that the result's dtype can be cast to
    ``out``'s and that no gradient is being asked for; returns ``out``. ``casting``:
    ``"same_kind"`` (PyTorch's ``can_cast``), ``"no"`` (``out`` must have the result's dtype,
    as PyTorch's matrix products, sorts and selections ask), ``"unsafe"`` (any dtype, as
    for a draw PyTorch makes in ``out``'s dtype) or ``"cat"`` (``can_cast``, refused with
    the TypeError of PyTorch's ``cat``, as its stacks are)."""
    name = op if isinstance(op, str) else op.name
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} Tensors")
        return type(result)(write_out(name, r, o, casting) for r, o in zip(result, out)) \
            if type(result) is tuple else type(result)(*(write_out(name, r, o, casting)
                                                         for r, o in zip(result, out)))
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result.requires_grad:
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if out.requires_grad and out.grad_fn is None:
        raise RuntimeError(f"{name}(): a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    src, dst = result._data, out._data
    # (by array module, not array class: a value a recorder has not computed yet stands for
    # its array, and NumPy / CuPy read it through the array protocols when it is written)
    if array_module(src) is not array_module(dst):
        raise RuntimeError(f"{name}(): Expected out tensor to be on device {result.device}, "
                           f"but got it on device {out.device}")
    if src.dtype != dst.dtype and casting != "unsafe":
        if casting == "no":
            raise RuntimeError(f"{name}(): Expected out tensor to have dtype "
                               f"{scalar_type_name(src.dtype)}, but got "
                               f"{scalar_type_name(dst.dtype)} instead")
        if not can_cast(from_numpy_dtype(src.dtype), from_numpy_dtype(dst.dtype)):
            raise (TypeError if casting == "cat" else RuntimeError)(
                f"{name}(): result type {scalar_type_name(src.dtype)} can't be cast "
                f"to the desired output type {scalar_type_name(dst.dtype)}")
    if src.shape != dst.shape:
        if out._base is not None:
            raise RuntimeError(f"{name}(): out tensor of shape {list(dst.shape)} is a view and "
                               f"cannot be resized to {list(src.shape)}")
        out._data = src.astype(dst.dtype, copy=True)  # PyTorch resizes out to the result
    else:
        dst[...] = src
    out._bump()
    return out


def array_module(arr):
    """``numpy`` for NumPy arrays, ``cupy`` for CuPy arrays, and for an object that stands
    for one of them (a value not computed yet) the module its class's ``__array_namespace__``
    (the Array API's protocol) names."""
    if isinstance(arr, np.ndarray):
        return np
    from ._cupy import cupy

    if cupy is not None and isinstance(arr, cupy.ndarray):
        return cupy
    if hasattr(type(arr), "__array_namespace__"):
        xp = arr.__array_namespace__()
        if xp is np or (cupy is not None and xp is cupy):
            return xp
    raise TypeError(f"expected a NumPy or CuPy array, got {type(arr).__name__}")
