"""The activations PyTorch computes as one kernel per direction, as registry ops under ATen's
names: ``silu``, ``gelu``, ``softplus``, ``elu`` (which ``selu`` and ``celu`` are, with their
constants), ``hardsigmoid``, ``hardswish``, ``mish`` and ``log_sigmoid``, each with its
``*_backward`` op (the derivative table's formula for the forward op calls it; its own
derivative is in the table too, so double backward works).

Each direction is one kernel per element (a Numba-compiled ufunc or loop on the CPU, a CuPy
ElementwiseKernel on CUDA, in ``ember.tensor.kernels``; gelu's tanh approximation, one NumPy or
CuPy expression), under one ``errstate``, with PyTorch's CPU formulas and their conditions
(which side of a piece a NaN or a boundary falls on, NaN where PyTorch's arithmetic gives NaN):
the composites of elementwise ops they replace recorded four to eight nodes per call, and a
product of an infinite gradient with a zero derivative gave NaN. float16 computes in float32
(bfloat16 too: see ``_bfloat16.OPMATH_OPS``).

    >>> import ember.tensor as et
    >>> et.hardswish(et.tensor([-4.0, 0.0, 1.0, 4.0]))
    tensor([-0.0000,  0.0000,  0.6667,  4.0000])
"""
from __future__ import annotations

import math

import numpy as np

from ._checks import check_same_device, not_implemented
from ._fpstate import quiet
from ._registry import array_module, defop
from ._tensor import Tensor
from .kernels import get as _kernel

__all__ = ["silu", "silu_backward", "gelu", "gelu_backward", "softplus", "softplus_backward",
           "elu", "elu_backward", "hardsigmoid", "hardsigmoid_backward", "hardswish",
           "hardswish_backward", "mish", "mish_backward", "log_sigmoid", "log_sigmoid_backward"]

_make = Tensor._make
_nd = np.ndarray
_F32 = np.dtype(np.float32)
_KBETA = math.sqrt(2 / math.pi)  # the tanh approximation's constants
_KKAPPA = 0.044715


def _arrays(op: str, *tensors: Tensor):
    """``(xp, arrays in the compute dtype, result dtype)``: floating tensors on one device;
    float16 computes in float32."""
    d = tensors[0]._data
    dt = d.dtype
    if dt.kind != "f":
        raise not_implemented(op, dt)
    xp = np if d.__class__ is _nd else array_module(d)
    if len(tensors) == 1 and dt.itemsize >= 4:  # (no conversion to make)
        return xp, (d,), dt
    arrays = [t._data for t in tensors]
    if len(arrays) > 1:
        check_same_device(op, *arrays)
    work = _F32 if dt.itemsize < 4 else dt
    return xp, [a if a.dtype == work else a.astype(work) for a in arrays], dt


def _done(r, dtype) -> Tensor:
    return _make(r if r.dtype == dtype else r.astype(dtype))


def _act_kernel(op: str, tensors: tuple, *params) -> Tensor:
    """The kernel ``op`` of the tensors' device on their arrays, then ``params`` (the kernels
    raise no NumPy floating-point warning: the CPU ones quiet NumPy themselves where their
    loops can set a flag)."""
    d = tensors[0]._data
    dt = d.dtype
    if len(tensors) == 1 and dt.itemsize >= 4 and dt.kind == "f":  # (no conversion to make)
        r = _kernel(op, np if d.__class__ is _nd else array_module(d))(d, *params)
        return _make(r if r.dtype == dt else r.astype(dt))
    xp, arrays, dt = _arrays(op, *tensors)
    return _done(_kernel(op, xp)(*arrays, *params), dt)


# ------------------------------------------------------------------------------ silu
@defop("silu", out=True)
def silu(input: Tensor) -> Tensor:
    """``x * sigmoid(x)``."""
    return _act_kernel("silu", (input,))


@defop("silu_backward", out=True)
def silu_backward(grad_output: Tensor, input: Tensor) -> Tensor:
    """``grad * s * (1 + x * (1 - s))`` with ``s = sigmoid(x)``."""
    return _act_kernel("silu_backward", (grad_output, input))


# ------------------------------------------------------------------------------ gelu
def _check_approximate(op: str, approximate) -> None:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"{op}(): approximate argument must be either none or tanh, got "
                           f"{approximate}")


@defop("gelu", out=True)
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (``approximate="tanh"``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
    x^3)))``)."""
    _check_approximate("gelu", approximate)
    if approximate == "none":
        return _act_kernel("gelu", (input,))
    xp, (x,), dt = _arrays("gelu", input)
    with quiet():
        return _done(0.5 * x * (1 + xp.tanh(_KBETA * (x + _KKAPPA * x * x * x))), dt)


@defop("gelu_backward", out=True)
def gelu_backward(grad_output: Tensor, input: Tensor, approximate: str = "none") -> Tensor:
    """``grad * (Phi(x) + x phi(x))``, or the tanh approximation's derivative."""
    _check_approximate("gelu_backward", approximate)
    if approximate == "none":
        return _act_kernel("gelu_backward", (grad_output, input))
    xp, (g, x), dt = _arrays("gelu_backward", grad_output, input)
    with quiet():
        t = xp.tanh(_KBETA * (x + _KKAPPA * x * x * x))
        inner = _KBETA * (1 + 3 * _KKAPPA * x * x)
        return _done(g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner), dt)


# ------------------------------------------------------------------------------ softplus
@defop("softplus", out=True)
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log1p(exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``."""
    return _act_kernel("softplus", (input,), beta, threshold)


@defop("softplus_backward", out=True)
def softplus_backward(grad_output: Tensor, input: Tensor, beta: float = 1.0,
                      threshold: float = 20.0) -> Tensor:
    """``grad * z / (z + 1)`` with ``z = exp(beta x)``, and ``grad`` where ``beta x >
    threshold``."""
    return _act_kernel("softplus_backward", (grad_output, input), beta, threshold)


# ------------------------------------------------------------------------------ elu
@defop("elu", out=True)
def elu(input: Tensor, alpha: float = 1.0, scale: float = 1.0,
        input_scale: float = 1.0) -> Tensor:
    """``scale x``, and ``alpha scale (exp(input_scale x) - 1)`` where ``x <= 0`` (``selu`` and
    ``celu`` are this op with their constants)."""
    return _act_kernel("elu", (input,), alpha, scale, input_scale)


@defop("elu_backward", out=True)
def elu_backward(grad_output: Tensor, alpha: float, scale: float, input_scale: float,
                 is_result: bool, self_or_result: Tensor) -> Tensor:
    """``grad scale``, and where the input is <= 0 ``grad input_scale alpha scale
    exp(input_scale x)`` (from the input), or ``grad input_scale (y + alpha scale)`` (from
    the output ``y``, ``is_result``)."""
    xp, (g, v), dt = _arrays("elu_backward", grad_output, self_or_result)
    return _done(_kernel("elu_backward", xp)(g, alpha, scale, input_scale, bool(is_result), v),
                 dt)


# ------------------------------------------------------------------------------ hard*
@defop("hardsigmoid", out=True)
def hardsigmoid(input: Tensor) -> Tensor:
    """``min(max(x + 3, 0), 6) / 6``."""
    return _act_kernel("hardsigmoid", (input,))


@defop("hardsigmoid_backward", out=True)
def hardsigmoid_backward(grad_output: Tensor, input: Tensor) -> Tensor:
    """``grad / 6`` inside ``(-3, 3)``, else 0 (NaN included)."""
    return _act_kernel("hardsigmoid_backward", (grad_output, input))


@defop("hardswish", out=True)
def hardswish(input: Tensor) -> Tensor:
    """``x min(max(x + 3, 0), 6) / 6``."""
    return _act_kernel("hardswish", (input,))


@defop("hardswish_backward", out=True)
def hardswish_backward(grad_output: Tensor, input: Tensor) -> Tensor:
    """0 up to -3, ``grad (x / 3 + 0.5)`` below 3, else ``grad`` (NaN included)."""
    return _act_kernel("hardswish_backward", (grad_output, input))


# ------------------------------------------------------------------------------ mish, log_sigmoid
@defop("mish", out=True)
def mish(input: Tensor) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _act_kernel("mish", (input,))


@defop("mish_backward", out=True)
def mish_backward(grad_output: Tensor, input: Tensor) -> Tensor:
    """``grad * (t + x sigmoid(x) (1 - t^2))`` with ``t = tanh(softplus(x))``."""
    return _act_kernel("mish_backward", (grad_output, input))


@defop("log_sigmoid", out=True)
def log_sigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``."""
    return _act_kernel("log_sigmoid", (input,))


@defop("log_sigmoid_backward", out=True)
def log_sigmoid_backward(grad_output: Tensor, input: Tensor, buffer: Tensor) -> Tensor:
    """``grad * sigmoid(-x)`` (PyTorch's signature; its forward's ``buffer`` is not read: the
    kernel works from the input)."""
    return _act_kernel("log_sigmoid_backward", (grad_output, input))
