"""Max pooling with indices (1-d, 2-d and 3-d through one (B, D, H, W) kernel).

Forward is parallel over (batch*channel, output depth) planes, backward over batch*channel
planes: every thread owns its output elements, so there are no races.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import prange

from ._common import (
    check_indices,
    check_ndim,
    float_inputs,
    njit,
    njit_parallel,
    parallel_call,
    triple,
    use_parallel,
)

__all__ = ["max_pool_forward", "max_pool_backward"]


@njit
def _pool_plane(x, out, idx, t, k, s, p, dil):
    D, H, W = x.shape[1], x.shape[2], x.shape[3]
    oD, oH, oW = out.shape[1], out.shape[2], out.shape[3]
    b = t // oD
    od = t % oD
    d0 = od * s[0] - p[0]
    for oh in range(oH):
        h0 = oh * s[1] - p[1]
        for ow in range(oW):
            w0 = ow * s[2] - p[2]
            maxval = -np.inf
            maxidx = -1
            for i in range(k[0]):
                d = d0 + i * dil[0]
                if d < 0 or d >= D:
                    continue
                for j in range(k[1]):
                    h = h0 + j * dil[1]
                    if h < 0 or h >= H:
                        continue
                    for m in range(k[2]):
                        w = w0 + m * dil[2]
                        if w < 0 or w >= W:
                            continue
                        v = x[b, d, h, w]
                        # PyTorch: the first valid element seeds the index; a NaN always wins.
                        if maxidx < 0 or v > maxval or v != v:
                            maxval = v
                            maxidx = (d * H + h) * W + w
            out[b, od, oh, ow] = maxval
            idx[b, od, oh, ow] = maxidx


@njit
def _pool_serial(x, out, idx, k, s, p, dil):
    for t in range(out.shape[0] * out.shape[1]):
        _pool_plane(x, out, idx, t, k, s, p, dil)


@njit_parallel
def _pool_parallel(x, out, idx, k, s, p, dil):
    for t in prange(out.shape[0] * out.shape[1]):
        _pool_plane(x, out, idx, t, k, s, p, dil)


@njit
def _unpool_serial(g, idx, gin):
    for b in range(g.shape[0]):
        for j in range(g.shape[1]):
            gin[b, idx[b, j]] += g[b, j]


@njit_parallel
def _unpool_parallel(g, idx, gin):
    for b in prange(g.shape[0]):
        for j in range(g.shape[1]):
            gin[b, idx[b, j]] += g[b, j]


def _check_windows(op, size, k, s, p, dil, o) -> None:
    for axis, name in enumerate("dhw"):
        if k[axis] < 1 or s[axis] < 1 or dil[axis] < 1 or p[axis] < 0 or o[axis] < 0:
            raise RuntimeError(
                f"{op}(): invalid pooling parameters along {name}: kernel {k[axis]}, stride "
                f"{s[axis]}, padding {p[axis]}, dilation {dil[axis]}, output size {o[axis]}"
            )
        starts = np.arange(o[axis]) * s[axis] - p[axis]
        pos = starts[:, None] + np.arange(k[axis]) * dil[axis]
        inside = ((pos >= 0) & (pos < size[axis])).any(axis=1)
        if not inside.all():
            bad = int(np.flatnonzero(~inside)[0])
            raise RuntimeError(
                f"{op}(): output position {bad} along {name} has a window entirely in padding "
                f"(input size {size[axis]}, kernel {k[axis]}, stride {s[axis]}, padding "
                f"{p[axis]}, dilation {dil[axis]}, output size {o[axis]})"
            )


def max_pool_forward(
    x: np.ndarray,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    out_size: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """Max pooling of ``x`` (B, D, H, W) over (d, h, w) windows; padding acts as -inf.

    Returns ``(out, indices)`` of shape (B, *out_size); ``indices`` (int64) are flat offsets
    into D*H*W of the input (PyTorch's convention). A NaN in a window is taken as its max.

    >>> out, ind = max_pool_forward(np.arange(4.0).reshape(1, 1, 1, 4), (1, 1, 2), (1, 1, 2),
    ...                             (0, 0, 0), (1, 1, 1), (1, 1, 2))
    >>> out.ravel().tolist(), ind.ravel().tolist()
    ([1.0, 3.0], [1, 3])
    """
    op = "max_pool_forward"
    x = np.asarray(x)
    check_ndim(op, "x", x, 4, "(B, D, H, W)")
    k = triple(op, "kernel", kernel)
    s = triple(op, "stride", stride)
    p = triple(op, "padding", padding)
    dil = triple(op, "dilation", dilation)
    o = triple(op, "out_size", out_size)
    _check_windows(op, x.shape[1:], k, s, p, dil, o)
    (xc,), dtype = float_inputs(op, x)
    B = x.shape[0]
    out = np.empty((B, *o), dtype=xc.dtype)
    idx = np.empty((B, *o), dtype=np.int64)
    if out.size:
        args = (xc, out, idx, np.array(k), np.array(s), np.array(p), np.array(dil))
        if use_parallel(out.size * k[0] * k[1] * k[2]) and B * o[0] > 1:
            parallel_call(_pool_parallel, *args)
        else:
            _pool_serial(*args)
    return out.astype(dtype, copy=False), idx


def max_pool_backward(
    grad_out: np.ndarray, indices: np.ndarray, in_size: Sequence[int]
) -> np.ndarray:
    """Gradient of max pooling: scatter-add ``grad_out`` (B, oD, oH, oW) at ``indices``.

    Returns ``grad_in`` of shape (B, *in_size); ``indices`` must lie in [0, D*H*W).

    >>> max_pool_backward(np.ones((1, 1, 1, 2)), np.array([[[[1, 1]]]]), (1, 1, 3)).ravel()
    array([0., 2., 0.])
    """
    op = "max_pool_backward"
    grad_out = np.asarray(grad_out)
    indices = np.asarray(indices)
    check_ndim(op, "grad_out", grad_out, 4, "(B, oD, oH, oW)")
    if indices.shape != grad_out.shape:
        raise RuntimeError(
            f"{op}(): indices of shape {tuple(indices.shape)} do not match grad_out of shape "
            f"{tuple(grad_out.shape)}"
        )
    size = triple(op, "in_size", in_size)
    if min(size) < 0:
        raise RuntimeError(f"{op}(): in_size must be non-negative, got {size}")
    plane = size[0] * size[1] * size[2]
    B = grad_out.shape[0]
    idx = check_indices(op, indices, plane, what=f"an input plane of {size}").reshape(B, -1)
    (g,), dtype = float_inputs(op, grad_out)
    g = g.reshape(B, -1)
    gin = np.zeros((B, plane), dtype=g.dtype)
    if g.size:
        if use_parallel(g.size) and B > 1:
            parallel_call(_unpool_parallel, g, idx, gin)
        else:
            _unpool_serial(g, idx, gin)
    return gin.reshape(B, *size).astype(dtype, copy=False)
