"""The extension API: what the layers above ember-tensor (autograd, nn, optim, data,
distributed, onnx) may use of its insides. Everything else whose name starts with ``_`` is
private to this distribution and may change in any release; these names follow the
distribution's version like its public API.

Arrays and tensors
    :func:`wrap` makes a tensor over an array (NumPy or CuPy) without copying; :func:`unwrap`
    returns a tensor's array (a view, not a copy: writing into it writes the tensor).
    :func:`bump_version` marks a tensor as modified in place after such a write, so autograd's
    saved-tensor checks see it. :func:`dtype_of` maps a NumPy dtype to ember's.

Devices and kernels
    :func:`array_module` is ``numpy`` or ``cupy`` for an array, a tensor or a device;
    :func:`get_kernel` looks a kernel up by name in the per-device kernel tables.
    :func:`parse_to_args` reads the arguments of ``Tensor.to`` (for ``Module.to`` and the
    like, which must accept exactly what ``Tensor.to`` accepts).

Ops
    :data:`OPS` is the registry (name -> :class:`OpDef`), :func:`defop` declares an op.
    :func:`set_recorder` installs the one recorder every op call goes through
    (``recorder(op, bound)``, ``bound`` holding every parameter in declared order) and
    :func:`get_recorder` returns the installed one, so a tracer can wrap it.

>>> import numpy as np
>>> from ember.tensor import extension as ext
>>> t = ext.wrap(np.arange(3.0))
>>> ext.unwrap(t)[0] = 5.0
>>> ext.bump_version(t)
>>> t
tensor([5., 1., 2.], dtype=ember.float64)
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels
from ._dtype import from_numpy_dtype
from ._registry import OPS, OpDef, _state, defop, set_recorder, write_out
from ._registry import array_module as _array_module_of
from ._tensor import Tensor
from ._tensor import parse_to_args as _parse_to_args

__all__ = ["wrap", "unwrap", "bump_version", "dtype_of", "array_module", "get_kernel",
           "OPS", "OpDef", "defop", "set_recorder", "get_recorder", "write_out",
           "parse_to_args"]


def wrap(array) -> Tensor:
    """A tensor over ``array`` (a NumPy or CuPy array; a NumPy scalar becomes 0-d), no copy."""
    return Tensor._make(array)


def unwrap(t: Tensor):
    """The array holding ``t``'s elements (shares memory with ``t``)."""
    return t._data


def bump_version(t: Tensor) -> None:
    """Record that ``t`` was modified in place (through :func:`unwrap`'s array)."""
    t._bump()


def dtype_of(np_dtype):
    """The ember dtype of a NumPy dtype (TypeError for dtypes ember does not support)."""
    return from_numpy_dtype(np_dtype)


def array_module(obj):
    """``numpy`` or ``cupy``: for an array, a tensor, or a device (``"cpu"``, ``"cuda:0"``)."""
    if isinstance(obj, Tensor):
        return _array_module_of(obj._data)
    if isinstance(obj, np.ndarray):
        return np
    kind = getattr(obj, "type", obj)
    if isinstance(kind, str):
        if kind.split(":", 1)[0] == "cpu":
            return np
        from ._cupy import require

        return require("array_module")
    return _array_module_of(obj)


def get_kernel(name: str, device):
    """The kernel ``name`` for a device type, device, array module or tensor."""
    if isinstance(device, Tensor):
        device = device.device
    return _kernels.get(name, device)


def get_recorder():
    """The recorder installed with :func:`set_recorder` (None before autograd installs one)."""
    return _state[0]


def parse_to_args(args: tuple, kwargs: dict):
    """``(device, dtype, copy)`` from the positional and keyword arguments of ``Tensor.to``
    (a device as str, int or device; a dtype; a tensor to match; ``non_blocking``); None for
    what was not given. Bad arguments raise TypeError as ``Tensor.to`` does.

    >>> import ember.tensor as et
    >>> from ember.tensor import extension as ext
    >>> ext.parse_to_args(("cpu", et.float64), {})
    (device(type='cpu'), ember.float64, False)
    >>> ext.parse_to_args((), {"dtype": et.float32, "copy": True})
    (None, ember.float32, True)
    """
    return _parse_to_args(args, kwargs)
