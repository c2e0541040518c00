"""The extension API: what the layers above ember-tensor (autograd, nn, optim, data,
distributed, onnx) may use of its insides. Everything else whose name starts with ``_`` is
private to this distribution and may change in any release; these names follow the
distribution's version like its public API.

Arrays and tensors
    :func:`wrap` makes a tensor over an array (NumPy or CuPy) without copying; :func:`unwrap`
    returns a tensor's array (a view, not a copy: writing into it writes the tensor).
    :func:`bump_version` marks a tensor as modified in place after such a write, so autograd's
    saved-tensor checks see it; :func:`version_counter` is the version cell views share.
    :func:`dtype_of` maps a NumPy dtype to ember's; :func:`canonical_dims` and
    :func:`canonical_dim` normalize ``dim`` arguments with PyTorch's errors.

Devices and kernels
    :func:`array_module` is ``numpy`` or ``cupy`` for an array, a tensor or a device;
    :func:`get_kernel` looks a kernel up by name in the per-device kernel tables.
    :func:`parse_to_args` reads the arguments of ``Tensor.to`` (for ``Module.to`` and the
    like, which must accept exactly what ``Tensor.to`` accepts).

Ops
    :data:`OPS` is the registry (name -> :class:`OpDef`), :func:`defop` declares an op.
    :func:`set_recorder` installs the one recorder every op call goes through
    (``recorder(op, bound)``, ``bound`` holding every parameter in declared order) and
    :func:`get_recorder` returns the installed one, so a tracer can wrap it;
    :func:`set_op_recorder` lets the installed recorder put code of its own in front of one
    op's calls (until the next :func:`set_recorder`). A recorder with
    a true ``grad_only`` attribute (autograd's) is called only with grad mode on and where a
    tensor argument (or a tensor in a list argument) requires grad; the registry runs every
    other call at once.
    Recorders without it (tracers, autocast, autobatch) see every call. A recorder that
    defers calls (autobatch's) has a ``flush(*tensors)`` attribute that runs them and makes
    each deferred tensor among ``tensors`` an ordinary one: it is called before a tensor's
    array or ``requires_grad`` changes outside the registry (``.data = ...``,
    ``requires_grad_``, the in-place view ops ``t_`` / ``as_strided_``, ``resize_``), with the
    tensors whose arrays are read or replaced, so the calls deferred before read the state
    they were made with.
    :func:`any_requires_grad` is that test for a bound call.

Floating-point warnings
    :class:`quiet` turns NumPy's floating-point warnings off for a block (``with quiet():``) at
    a sixth of ``np.errstate``'s cost: PyTorch never warns about an inf or a nan it computes.

Grad mode
    :func:`grad_enabled` says whether grad mode is on (in this thread), which the recorder
    reads on every call; :func:`set_grad_flag` turns it on or off (``no_grad`` and the other
    modes restore it on exit; code that sets it restores it itself). :data:`grad_mode` holds
    the thread-local switches of ``inference_mode`` and anomaly detection (``inference``,
    ``anomaly``, ``anomaly_check_nan``, ``forward_ad``).

>>> import numpy as np
>>> from ember.tensor import extension as ext
>>> t = ext.wrap(np.arange(3.0))
>>> ext.unwrap(t)[0] = 5.0
>>> ext.bump_version(t)
>>> t
tensor([5., 1., 2.], dtype=ember.float64)
"""
from __future__ import annotations

import operator

import numpy as np

from . import _nn_ops, _reduction, _tensor
from . import kernels as _kernels
from ._checks import check_inplace, has_internal_overlap
from ._dtype import from_numpy_dtype
from ._fpstate import quiet
from ._grad_mode import grad_enabled, set_grad_flag
from ._grad_mode import state as grad_mode
from ._registry import (
    OPS,
    OpDef,
    _state,
    any_requires_grad,
    defop,
    set_op_recorder,
    set_recorder,
    write_out,
)
from ._registry import array_module as _array_module_of
from ._tensor import Tensor
from ._tensor import parse_to_args as _parse_to_args

__all__ = ["wrap", "unwrap", "version_counter", "canonical_dims", "canonical_dim",
           "bump_version", "dtype_of", "array_module", "get_kernel", "OPS", "OpDef", "defop",
           "set_recorder", "get_recorder", "set_op_recorder", "set_autograd", "write_out",
           "parse_to_args",
           "ntuple", "pool_geometry", "check_lookup_indices", "grad_mode", "grad_enabled",
           "set_grad_flag", "quiet",
           "any_requires_grad", "check_inplace", "has_internal_overlap"]


def wrap(array) -> Tensor:
    """A tensor over ``array`` (a NumPy or CuPy array; a NumPy scalar becomes 0-d), no copy."""
    return Tensor._make(array)


#: ``unwrap(t)``: the array holding ``t``'s elements (shares memory with ``t``). A C-level
#: attribute getter, so hot loops above the core pay no Python call for it.
unwrap = operator.attrgetter("_data")


def version_counter(t: Tensor) -> list:
    """The one-element list holding ``t``'s version, shared by every view of its storage
    (created on first use); ``version_counter(t)[0]`` is ``t._version``."""
    vc = t._vc
    if vc is None:
        vc = t._vc = [0]
    return vc


def canonical_dims(dim, ndim: int, op: str) -> tuple:
    """A reduction's ``dim`` argument (None, an int or a sequence; negative allowed) as a
    sorted tuple of non-negative dims, with PyTorch's IndexError naming ``op``."""
    return _reduction._dims(dim, ndim, op)


def canonical_dim(dim: int, ndim: int, op: str) -> int:
    """One ``dim`` argument as a non-negative int, with PyTorch's IndexError naming ``op``."""
    return _reduction._one_dim(dim, ndim, op)


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


def set_autograd(api) -> None:
    """Install the autograd layer's tensor API: an object with ``check_requires_grad(t)``,
    ``backward(t, gradient, retain_graph, create_graph, inputs=None)``,
    ``register_hook(t, hook)``, ``register_post_accumulate_grad_hook(t, hook)`` and
    ``retain_grad(t)``, which the tensor methods of those names call, and
    ``set_history(t, grad_fn)``, which in-place view ops (``t_``, ``squeeze_``) call.

    Besides ``requires_grad``, ``grad`` and ``grad_fn``, the autograd layer keeps its
    per-tensor state in one attribute, ``Tensor._autograd_meta`` (None until it needs one);
    the core reads only its ``retains_grad``."""
    _tensor._autograd_api[0] = api


def ntuple(op: str, name: str, value, n: int) -> tuple:
    """An nn primitive's size argument (an int, or a sequence of 1 or ``n`` ints) as an
    ``n``-tuple of ints, with PyTorch's RuntimeError naming ``op`` and ``name``."""
    return _nn_ops._ntuple(op, name, value, n)


def pool_geometry(op: str, shape, nd: int, kernel_size, stride, padding, dilation,
                  ceil_mode: bool, max_pad):
    """``(kernel, stride, padding, dilation, in_size, out_size)`` of a pooling over the last
    ``nd`` dims of ``shape``, checked as PyTorch checks them (``max_pad(k, d)``: the largest
    padding allowed)."""
    return _nn_ops.pool_geometry(op, shape, nd, kernel_size, stride, padding, dilation,
                                 ceil_mode, max_pad)


def check_lookup_indices(op: str, indices: Tensor, n: int) -> None:
    """PyTorch's checks of indices into an ``n``-row table (embedding, embedding_bag)."""
    _nn_ops.check_lookup_indices(op, indices, n)


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
