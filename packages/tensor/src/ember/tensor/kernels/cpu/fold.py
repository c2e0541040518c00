"""im2col (unfold) and its adjoint col2im (fold) for 1-d, 2-d and 3-d convolutions.

Rows are ordered (c, kd, kh, kw) and columns (od, oh, ow), as torch.nn.functional.unfold does
in 2-d. Both kernels are parallel over (batch, channel) planes; col2im's overlapping sums stay
inside one plane, so threads never write the same element.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import prange

from ._common import (
    check_ndim,
    float_inputs,
    njit,
    njit_parallel,
    parallel_call,
    triple,
    use_parallel,
)

__all__ = ["im2col", "col2im"]


@njit
def _fold_plane(x, cols, t, k, s, p, dil, o, adjoint):
    C = x.shape[1]
    D, H, W = x.shape[2], x.shape[3], x.shape[4]
    n = t // C
    c = t % C
    for kd in range(k[0]):
        for kh in range(k[1]):
            for kw in range(k[2]):
                row = ((c * k[0] + kd) * k[1] + kh) * k[2] + kw
                w_off = kw * dil[2] - p[2]
                # output columns ow whose input w = ow * s + w_off lies in [0, W)
                lo = max(0, -(w_off // s[2]))
                hi = min(o[2], (W - 1 - w_off) // s[2] + 1)
                if hi < lo:
                    hi = lo
                for od in range(o[0]):
                    d = od * s[0] - p[0] + kd * dil[0]
                    d_ok = d >= 0 and d < D
                    for oh in range(o[1]):
                        h = oh * s[1] - p[1] + kh * dil[1]
                        base = (od * o[1] + oh) * o[2]
                        if not (d_ok and h >= 0 and h < H):
                            if not adjoint:
                                for ow in range(o[2]):
                                    cols[n, row, base + ow] = 0
                            continue
                        if adjoint:
                            for ow in range(lo, hi):
                                x[n, c, d, h, ow * s[2] + w_off] += cols[n, row, base + ow]
                        else:
                            for ow in range(lo):
                                cols[n, row, base + ow] = 0
                            for ow in range(lo, hi):
                                cols[n, row, base + ow] = x[n, c, d, h, ow * s[2] + w_off]
                            for ow in range(hi, o[2]):
                                cols[n, row, base + ow] = 0


@njit
def _fold_serial(x, cols, k, s, p, dil, o, adjoint):
    for t in range(x.shape[0] * x.shape[1]):
        _fold_plane(x, cols, t, k, s, p, dil, o, adjoint)


@njit_parallel
def _fold_parallel(x, cols, k, s, p, dil, o, adjoint):
    for t in prange(x.shape[0] * x.shape[1]):
        _fold_plane(x, cols, t, k, s, p, dil, o, adjoint)


def _params(op, kernel, stride, padding, dilation, out_size):
    k = triple(op, "kernel", kernel)
    s = triple(op, "stride", stride)
    p = triple(op, "padding", padding)
    dil = triple(op, "dilation", dilation)
    o = triple(op, "out_size", out_size)
    if min(k) < 1 or min(s) < 1 or min(dil) < 1 or min(p) < 0 or min(o) < 0:
        raise RuntimeError(
            f"{op}(): invalid parameters: kernel {k}, stride {s}, padding {p}, dilation {dil}, "
            f"out_size {o} (kernel, stride, dilation must be >= 1; padding, out_size >= 0)"
        )
    return k, s, p, dil, o


def _run(x, cols, k, s, p, dil, o, adjoint) -> None:
    if cols.size == 0 or x.size == 0:
        return
    args = (x, cols, np.array(k), np.array(s), np.array(p), np.array(dil), np.array(o), adjoint)
    if use_parallel(cols.size) and x.shape[0] * x.shape[1] > 1:
        parallel_call(_fold_parallel, *args)
    else:
        _fold_serial(*args)


def im2col(
    x: np.ndarray,
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    out_size: Sequence[int],
) -> np.ndarray:
    """Unfold ``x`` (N, C, D, H, W) into ``cols`` (N, C*kD*kH*kW, oD*oH*oW), zero padded.

    >>> im2col(np.arange(4.0).reshape(1, 1, 1, 2, 2), (1, 2, 2), (1, 1, 1), (0, 0, 0),
    ...        (1, 1, 1), (1, 1, 1)).ravel().tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    op = "im2col"
    x = np.asarray(x)
    check_ndim(op, "x", x, 5, "(N, C, D, H, W)")
    k, s, p, dil, o = _params(op, kernel, stride, padding, dilation, out_size)
    (xc,), dtype = float_inputs(op, x)
    N, C = x.shape[:2]
    cols = np.empty((N, C * k[0] * k[1] * k[2], o[0] * o[1] * o[2]), dtype=xc.dtype)
    if cols.size and x.size == 0:  # D, H or W of size 0: every column is padding
        cols[...] = 0
    _run(xc, cols, k, s, p, dil, o, False)
    return cols.astype(dtype, copy=False)


def col2im(
    cols: np.ndarray,
    channels: int,
    in_size: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    out_size: Sequence[int],
) -> np.ndarray:
    """Adjoint of :func:`im2col`: sum ``cols`` (N, C*kD*kH*kW, L) back into (N, C, D, H, W).

    >>> col2im(np.ones((1, 2, 2)), 1, (1, 1, 3), (1, 1, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1),
    ...        (1, 1, 2)).ravel().tolist()
    [1.0, 2.0, 1.0]
    """
    op = "col2im"
    cols = np.asarray(cols)
    check_ndim(op, "cols", cols, 3, "(N, C*kD*kH*kW, L)")
    k, s, p, dil, o = _params(op, kernel, stride, padding, dilation, out_size)
    size = triple(op, "in_size", in_size)
    channels = int(channels)
    if min(size) < 0 or channels < 0:
        raise RuntimeError(f"{op}(): invalid channels {channels} or in_size {size}")
    expected = (cols.shape[0], channels * k[0] * k[1] * k[2], o[0] * o[1] * o[2])
    if cols.shape != expected:
        raise RuntimeError(
            f"{op}(): cols of shape {tuple(cols.shape)} do not match channels {channels}, "
            f"kernel {k} and out_size {o}; expected shape {expected}"
        )
    (cc,), dtype = float_inputs(op, cols)
    x = np.zeros((cols.shape[0], channels, *size), dtype=cc.dtype)
    _run(x, cc, k, s, p, dil, o, True)
    return x.astype(dtype, copy=False)
