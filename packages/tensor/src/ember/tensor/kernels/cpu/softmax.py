"""Fused row-wise softmax, log-softmax and cross-entropy over the last axis of (rows, cols).

One pass per row for the max, one for the sum of exponentials (accumulated in float64), one
for the output. Rows are independent, so large inputs run rows in parallel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._common import (
    check_indices,
    check_ndim,
    float_inputs,
    njit,
    njit_parallel,
    parallel_call,
    use_parallel,
)

__all__ = [
    "softmax_forward",
    "log_softmax_forward",
    "softmax_backward",
    "log_softmax_backward",
    "cross_entropy_forward",
    "cross_entropy_backward",
]


@njit
def _row_max(x, i):
    m = -np.inf
    for j in range(x.shape[1]):
        if x[i, j] > m:
            m = x[i, j]
    return m


@njit
def _softmax_row(x, y, i, log):
    # All -inf row: m = -inf and x - m is NaN everywhere, as in PyTorch.
    m = _row_max(x, i)
    s = 0.0
    for j in range(x.shape[1]):
        e = math.exp(x[i, j] - m)
        s += e
        if not log:
            y[i, j] = e
    if log:
        shift = m + math.log(s)
        for j in range(x.shape[1]):
            y[i, j] = x[i, j] - shift
    else:
        inv = 1.0 / s
        for j in range(x.shape[1]):
            y[i, j] = y[i, j] * inv


@njit
def _softmax_serial(x, y, log):
    for i in range(x.shape[0]):
        _softmax_row(x, y, i, log)


@njit_parallel
def _softmax_parallel(x, y, log):
    for i in prange(x.shape[0]):
        _softmax_row(x, y, i, log)


@njit
def _softmax_bwd_row(y, g, dx, i, log):
    s = 0.0
    if log:
        for j in range(y.shape[1]):
            s += g[i, j]
        for j in range(y.shape[1]):
            dx[i, j] = g[i, j] - math.exp(y[i, j]) * s
    else:
        for j in range(y.shape[1]):
            s += g[i, j] * y[i, j]
        for j in range(y.shape[1]):
            dx[i, j] = y[i, j] * (g[i, j] - s)


@njit
def _softmax_bwd_serial(y, g, dx, log):
    for i in range(y.shape[0]):
        _softmax_bwd_row(y, g, dx, i, log)


@njit_parallel
def _softmax_bwd_parallel(y, g, dx, log):
    for i in prange(y.shape[0]):
        _softmax_bwd_row(y, g, dx, i, log)


@njit
def _ce_fwd_row(x, t, w, ignore, eps, loss, lse, i):
    C = x.shape[1]
    m = _row_max(x, i)
    s = 0.0
    for j in range(C):
        s += math.exp(x[i, j] - m)
    lo = m + math.log(s)
    lse[i] = lo
    ti = t[i]
    if ti == ignore:
        loss[i] = 0.0
        return
    val = (1.0 - eps) * w[ti] * (lo - x[i, ti])
    if eps > 0.0:
        acc = 0.0
        for j in range(C):
            acc += w[j] * (lo - x[i, j])
        val += eps / C * acc
    loss[i] = val


@njit
def _ce_fwd_serial(x, t, w, ignore, eps, loss, lse):
    for i in range(x.shape[0]):
        _ce_fwd_row(x, t, w, ignore, eps, loss, lse, i)


@njit_parallel
def _ce_fwd_parallel(x, t, w, ignore, eps, loss, lse):
    for i in prange(x.shape[0]):
        _ce_fwd_row(x, t, w, ignore, eps, loss, lse, i)


@njit
def _ce_bwd_row(x, lse, t, w, wsum, ignore, eps, go, dx, i):
    C = x.shape[1]
    ti = t[i]
    if ti == ignore:
        for j in range(C):
            dx[i, j] = 0.0
        return
    gi = go[i]
    hot = (1.0 - eps) * w[ti] * gi
    coef = hot + eps / C * wsum * gi
    smooth = eps / C * gi
    lo = lse[i]
    for j in range(C):
        dx[i, j] = coef * math.exp(x[i, j] - lo) - smooth * w[j]
    dx[i, ti] -= hot


@njit
def _ce_bwd_serial(x, lse, t, w, wsum, ignore, eps, go, dx):
    for i in range(x.shape[0]):
        _ce_bwd_row(x, lse, t, w, wsum, ignore, eps, go, dx, i)


@njit_parallel
def _ce_bwd_parallel(x, lse, t, w, wsum, ignore, eps, go, dx):
    for i in prange(x.shape[0]):
        _ce_bwd_row(x, lse, t, w, wsum, ignore, eps, go, dx, i)


def _go(x: np.ndarray):
    return use_parallel(x.size) and x.shape[0] > 1


def _forward(op: str, x: np.ndarray, log: bool) -> np.ndarray:
    x = np.asarray(x)
    check_ndim(op, "x", x, 2, "(rows, cols)")
    (xc,), dtype = float_inputs(op, x)
    y = np.empty_like(xc)
    if y.size:
        if _go(xc):
            parallel_call(_softmax_parallel, xc, y, log)
        else:
            _softmax_serial(xc, y, log)
    return y.astype(dtype, copy=False)


def _backward(op: str, y: np.ndarray, g: np.ndarray, log: bool) -> np.ndarray:
    y, g = np.asarray(y), np.asarray(g)
    check_ndim(op, "y", y, 2, "(rows, cols)")
    if g.shape != y.shape:
        raise RuntimeError(
            f"{op}(): grad of shape {tuple(g.shape)} does not match output of shape "
            f"{tuple(y.shape)}"
        )
    (yc, gc), dtype = float_inputs(op, y, g)
    dx = np.empty_like(yc)
    if dx.size:
        if _go(yc):
            parallel_call(_softmax_bwd_parallel, yc, gc, dx, log)
        else:
            _softmax_bwd_serial(yc, gc, dx, log)
    return dx.astype(dtype, copy=False)


def softmax_forward(x: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over the last axis of ``x`` (rows, cols).

    >>> softmax_forward(np.array([[0.0, 0.0]])).tolist()
    [[0.5, 0.5]]
    """
    return _forward("softmax_forward", x, False)


def log_softmax_forward(x: np.ndarray) -> np.ndarray:
    """Numerically stable log-softmax over the last axis of ``x`` (rows, cols).

    >>> np.round(log_softmax_forward(np.array([[1000.0, 1000.0]])), 4).tolist()
    [[-0.6931, -0.6931]]
    """
    return _forward("log_softmax_forward", x, True)


def softmax_backward(y: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Softmax VJP from its output ``y``: ``y * (g - sum(g * y, row))``.

    >>> softmax_backward(np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]])).tolist()
    [[0.25, -0.25]]
    """
    return _backward("softmax_backward", y, g, False)


def log_softmax_backward(y: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Log-softmax VJP from its output ``y``: ``g - exp(y) * sum(g, row)``.

    >>> log_softmax_backward(np.log([[0.5, 0.5]]), np.array([[1.0, 0.0]])).tolist()
    [[0.5, -0.5]]
    """
    return _backward("log_softmax_backward", y, g, True)


def _ce_inputs(op, logits, target, weight, ignore_index, label_smoothing):
    logits, target = np.asarray(logits), np.asarray(target)
    check_ndim(op, "logits", logits, 2, "(N, C)")
    check_ndim(op, "target", target, 1, "(N,)")
    N, C = logits.shape
    if target.shape[0] != N:
        raise RuntimeError(
            f"{op}(): target of shape {tuple(target.shape)} does not match logits of shape "
            f"{tuple(logits.shape)}"
        )
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{op}(): label_smoothing must be in [0, 1], got {eps}")
    ignore = int(ignore_index)
    t = check_indices(
        op, target, C, what="the class dimension (C)", allow=ignore, noun="target"
    )
    if weight is None:
        (x,), dtype = float_inputs(op, logits)
        w = np.ones(C, dtype=x.dtype)
    else:
        weight = np.asarray(weight)
        if weight.shape != (C,):
            raise RuntimeError(
                f"{op}(): weight of shape {tuple(weight.shape)} does not match the {C} classes "
                f"of logits of shape {tuple(logits.shape)}; expected shape ({C},)"
            )
        (x, w), dtype = float_inputs(op, logits, weight)
    return x, t, w, int(ignore), eps, dtype


def cross_entropy_forward(
    logits: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    ignore_index: int,
    label_smoothing: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample cross-entropy from ``logits`` (N, C) and class ``target`` (N,).

    ``loss_i = (1-eps) w[t_i] (lse_i - x[i, t_i]) + eps/C sum_c w[c] (lse_i - x[i, c])``; rows
    with ``target == ignore_index`` get 0. Returns ``(loss, lse)``, both (N,).

    >>> loss, lse = cross_entropy_forward(np.zeros((1, 2)), np.array([1]), None, -100, 0.0)
    >>> np.round(loss, 4).tolist()
    [0.6931]
    """
    op = "cross_entropy_forward"
    x, t, w, ignore, eps, dtype = _ce_inputs(op, logits, target, weight, ignore_index,
                                             label_smoothing)
    loss = np.empty(x.shape[0], dtype=x.dtype)
    lse = np.empty(x.shape[0], dtype=x.dtype)
    if x.shape[0]:
        if x.shape[1] == 0:
            raise RuntimeError(f"{op}(): logits of shape {tuple(x.shape)} have no classes")
        args = (x, t, w, ignore, float(eps), loss, lse)
        if _go(x):
            parallel_call(_ce_fwd_parallel, *args)
        else:
            _ce_fwd_serial(*args)
    return loss.astype(dtype, copy=False), lse.astype(dtype, copy=False)


def cross_entropy_backward(
    logits: np.ndarray,
    lse: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    ignore_index: int,
    label_smoothing: float,
    grad_loss: np.ndarray,
) -> np.ndarray:
    """Gradient of the per-sample losses of :func:`cross_entropy_forward`, times ``grad_loss``.

    >>> x = np.zeros((1, 2)); _, lse = cross_entropy_forward(x, np.array([1]), None, -100, 0.0)
    >>> cross_entropy_backward(x, lse, np.array([1]), None, -100, 0.0, np.ones(1)).tolist()
    [[0.5, -0.5]]
    """
    op = "cross_entropy_backward"
    x, t, w, ignore, eps, dtype = _ce_inputs(op, logits, target, weight, ignore_index,
                                             label_smoothing)
    lse, grad_loss = np.asarray(lse), np.asarray(grad_loss)
    N = x.shape[0]
    for name, arr in (("lse", lse), ("grad_loss", grad_loss)):
        if arr.shape != (N,):
            raise RuntimeError(
                f"{op}(): {name} of shape {tuple(arr.shape)} does not match logits of shape "
                f"{tuple(x.shape)}; expected ({N},)"
            )
        if arr.dtype != dtype:
            raise RuntimeError(f"{op}(): {name} dtype {arr.dtype} does not match logits {dtype}")
    (lc, gc), _ = float_inputs(op, lse, grad_loss)
    dx = np.empty_like(x)
    if dx.size:
        wsum = float(w.sum(dtype=np.float64))
        args = (x, lc, t, w, float(wsum), ignore, float(eps), gc, dx)
        if _go(x):
            parallel_call(_ce_bwd_parallel, *args)
        else:
            _ce_bwd_serial(*args)
    return dx.astype(dtype, copy=False)
