"""Fused optimizer updates (Adam / AdamW, SGD) on raw NumPy arrays, in place.

One pass over memory per parameter: each element of the parameter and of its state buffers is
read once and written once, with no temporaries. The arithmetic follows PyTorch's single-tensor
``torch.optim.adam._single_tensor_adam`` and ``torch.optim.sgd._single_tensor_sgd`` operation
by operation (same operations in the same order; step-dependent scalars computed on the host in
double and rounded once to the parameter dtype, as PyTorch does). These are the CPU twins of
``kernels/cuda/optim.cu`` and take the same arguments.

>>> import numpy as np
>>> from ember.tensor.kernels.cpu.optim import sgd_step
>>> p, g = np.ones(3), np.full(3, 0.5)
>>> sgd_step(p, g, None, lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0,
...          nesterov=False, maximize=False, first_step=True)
>>> p.tolist()
[0.95, 0.95, 0.95]
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import prange

from ._common import parallel_call, use_parallel

__all__ = ["adam_step", "sgd_step"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# Each update is a span kernel over whole arrays (a plain loop that LLVM vectorizes); the serial
# kernel is the span over everything, the parallel one runs it on slices in a prange. They are
# distinct functions because Numba's on-disk cache is keyed by the Python function: two njit
# wrappers of one function (one with parallel=True) share a cache entry, and whichever compiled
# first answered for both (the "serial" update then paid a parallel launch, ~50 us, per call).
def _adam_span(p, g, m, v, vmax, scalars, amsgrad, maximize, decoupled, low_weight):
    # the float scalars travel in one array of the parameter's dtype: Numba dispatches on
    # NumPy scalar arguments about 100x slower than on arrays
    weight_decay, decay_factor, w, one_minus_w = scalars[0], scalars[1], scalars[2], scalars[3]
    beta2, one_minus_beta2, eps = scalars[4], scalars[5], scalars[6]
    neg_step_size, bias_correction2_sqrt = scalars[7], scalars[8]
    for i in range(p.shape[0]):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if weight_decay != 0:
            if decoupled:
                pi = pi * decay_factor
            else:
                gi = gi + weight_decay * pi
        mi = m[i]
        # torch.lerp (ATen/native/Lerp.h): the branch depends only on the weight
        if low_weight:
            mi = mi + w * (gi - mi)
        else:
            mi = gi - (gi - mi) * one_minus_w
        vi = v[i] * beta2 + one_minus_beta2 * gi * gi
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vm = vmax[i]
            # torch.maximum propagates NaN
            if vm != vm or vm > vi:
                vi = vm
            vmax[i] = vi
        denom = np.sqrt(vi) / bias_correction2_sqrt + eps
        p[i] = pi + neg_step_size * mi / denom


def _sgd_span(p, g, buf, scalars, nesterov, maximize, first_step, has_momentum):
    neg_lr, momentum, one_minus_dampening, weight_decay = (scalars[0], scalars[1], scalars[2],
                                                            scalars[3])
    for i in range(p.shape[0]):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if weight_decay != 0:
            gi = gi + weight_decay * pi
        if has_momentum:
            if first_step:
                b = gi
            else:
                b = buf[i] * momentum + one_minus_dampening * gi
            buf[i] = b
            if nesterov:
                gi = gi + momentum * b
            else:
                gi = b
        p[i] = pi + neg_lr * gi


# error_model="numpy": a float division by zero gives inf/nan as in PyTorch instead of raising
# ZeroDivisionError, and the loops carry no per-element zero test, so LLVM vectorizes them
# (with Python's error model the Adam loop stays scalar and runs about 5x slower).
_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}
_adam_span = numba.njit(**_OPTIONS)(_adam_span)
_sgd_span = numba.njit(**_OPTIONS)(_sgd_span)
_SPAN = 1 << 14  # elements per parallel chunk


@numba.njit(parallel=True, **_OPTIONS)
def _adam_parallel(p, g, m, v, vmax, scalars, amsgrad, maximize, decoupled, low_weight):
    n = p.shape[0]
    for c in prange((n + _SPAN - 1) // _SPAN):
        lo, hi = c * _SPAN, min(n, (c + 1) * _SPAN)
        _adam_span(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], vmax[lo:hi], scalars, amsgrad,
                   maximize, decoupled, low_weight)


@numba.njit(parallel=True, **_OPTIONS)
def _sgd_parallel(p, g, buf, scalars, nesterov, maximize, first_step, has_momentum):
    n = p.shape[0]
    for c in prange((n + _SPAN - 1) // _SPAN):
        lo, hi = c * _SPAN, min(n, (c + 1) * _SPAN)
        _sgd_span(p[lo:hi], g[lo:hi], buf[lo:hi], scalars, nesterov, maximize, first_step,
                  has_momentum)


def _flat(op: str, name: str, arr: Any, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A 1-d view of a C-contiguous array of ``shape`` and ``dtype`` (written in place)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{op}(): expected {name} to be a NumPy array, got {type(arr).__name__}")
    if arr.shape != shape:
        raise RuntimeError(
            f"{op}(): expected {name} of shape {shape} (the parameter's), got {arr.shape}")
    if arr.dtype != dtype:
        raise RuntimeError(
            f"{op}(): expected {name} of dtype {dtype} (the parameter's), got {arr.dtype}")
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise RuntimeError(f"{op}(): {name} must be a writeable C-contiguous array")
    return arr.reshape(-1)


def _param(op: str, param: Any) -> np.ndarray:
    if not isinstance(param, np.ndarray):
        raise TypeError(f"{op}(): expected param to be a NumPy array, got {type(param).__name__}")
    if param.dtype not in _FLOATS:
        raise RuntimeError(f"{op}(): expected a float32 or float64 param, got {param.dtype}")
    return _flat(op, "param", param, param.shape, param.dtype)


def _grad(op: str, grad: Any, shape: tuple, dtype: np.dtype) -> np.ndarray:
    grad = np.asarray(grad)
    if grad.shape != shape:
        raise RuntimeError(
            f"{op}(): expected grad of shape {shape} (the parameter's), got {grad.shape}")
    if grad.dtype != dtype:
        raise RuntimeError(
            f"{op}(): expected grad of dtype {dtype} (the parameter's), got {grad.dtype}")
    return np.ascontiguousarray(grad).reshape(-1)


def adam_step(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray,
              exp_avg_sq: np.ndarray, max_exp_avg_sq: np.ndarray | None, *, lr: float,
              beta1: float, beta2: float, eps: float, weight_decay: float, step: int,
              amsgrad: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """One fused Adam (AdamW with ``decoupled_weight_decay``) step, in place.

    Updates ``param``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq`` with ``amsgrad``)
    exactly as ``torch.optim.Adam`` / ``AdamW``'s single-tensor path; ``step`` counts from 1.
    """
    op = "adam_step"
    p = _param(op, param)
    shape, dtype = param.shape, param.dtype
    g = _grad(op, grad, shape, dtype)
    m = _flat(op, "exp_avg", exp_avg, shape, dtype)
    v = _flat(op, "exp_avg_sq", exp_avg_sq, shape, dtype)
    if amsgrad:
        if max_exp_avg_sq is None:
            raise RuntimeError(f"{op}(): amsgrad=True needs a max_exp_avg_sq buffer, got None")
        vmax = _flat(op, "max_exp_avg_sq", max_exp_avg_sq, shape, dtype)
    else:
        vmax = v  # never read or written by the kernel
    if int(step) < 1:
        raise ValueError(f"{op}(): step counts from 1, got {step}")
    # host-side scalars in double, as torch.optim.adam._single_tensor_adam computes them
    step = float(step)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5
    w = 1 - beta1
    t = dtype.type
    if p.size == 0:
        return
    scalars = np.array([t(weight_decay), t(1 - lr * weight_decay), t(w), t(1 - t(w)), t(beta2),
                        t(1 - beta2), t(eps), t(-step_size), t(bias_correction2_sqrt)],
                       dtype=dtype)
    args = (p, g, m, v, vmax, scalars, bool(amsgrad), bool(maximize),
            bool(decoupled_weight_decay), bool(abs(t(w)) < 0.5))
    if use_parallel(p.size):
        parallel_call(_adam_parallel, *args)
    else:
        _adam_span(*args)


def sgd_step(param: np.ndarray, grad: np.ndarray, buf: np.ndarray | None, *, lr: float,
             momentum: float, dampening: float, weight_decay: float, nesterov: bool,
             maximize: bool, first_step: bool) -> None:
    """One fused SGD step, in place, exactly as ``torch.optim.SGD``'s single-tensor path.

    ``buf`` is the momentum buffer (None when momentum is 0); on ``first_step`` it is set to the
    (decayed) gradient instead of being averaged.
    """
    op = "sgd_step"
    p = _param(op, param)
    shape, dtype = param.shape, param.dtype
    g = _grad(op, grad, shape, dtype)
    has_momentum = momentum != 0
    if has_momentum:
        if buf is None:
            raise RuntimeError(f"{op}(): momentum={momentum} needs a momentum buffer, got None")
        b = _flat(op, "buf", buf, shape, dtype)
    else:
        b = p  # never read or written by the kernel
    if p.size == 0:
        return
    t = dtype.type
    scalars = np.array([t(-lr), t(momentum), t(1 - dampening), t(weight_decay)], dtype=dtype)
    args = (p, g, b, scalars, bool(nesterov), bool(maximize), bool(first_step),
            bool(has_momentum))
    if use_parallel(p.size):
        parallel_call(_sgd_parallel, *args)
    else:
        _sgd_span(*args)
