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
def _span(off, s, o, size):
    """Output positions ``[lo, hi)`` whose input position ``i * s + off`` lies in
    ``[0, size)``."""
    lo = 0
    if off < 0:
        lo = min(o, (-off + s - 1) // s)
    last = size - 1 - off
    hi = 0 if last < 0 else min(o, last // s + 1)
    return lo, max(lo, hi)  # 0 <= lo <= hi <= o


@njit
def _fold_plane(x, cols, t, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, o0, o1, o2,
                adjoint):
    # Every index below is an unsigned offset that is in range by construction (the spans
    # keep padding out): Numba then skips its negative-index wraparound on each access, which
    # would otherwise cost more than the copy itself.
    C = x.shape[1]
    D, H, W = x.shape[2], x.shape[3], x.shape[4]
    n = t // C
    c = t % C
    s0u = np.uint64(s0)
    s1u = np.uint64(s1)
    s2u = np.uint64(s2)
    o1u = np.uint64(o1)
    o2u = np.uint64(o2)
    p0u = np.uint64(p0)
    p1u = np.uint64(p1)
    L = o0 * o1 * o2  # columns per row
    for kd in range(k0):
        d_off = kd * e0 - p0
        dk = np.uint64(kd * e0)
        dlo, dhi = _span(d_off, s0, o0, D)
        for kh in range(k1):
            h_off = kh * e1 - p1
            hk = np.uint64(kh * e1)
            hlo, hhi = _span(h_off, s1, o1, H)
            for kw in range(k2):
                w_off = kw * e2 - p2
                # output columns ow whose input w = ow * s + w_off lies in [0, W)
                lo, hi = _span(w_off, s2, o2, W)
                row = ((c * k0 + kd) * k1 + kh) * k2 + kw
                if not adjoint and (dhi - dlo) * (hhi - hlo) * (hi - lo) != L:
                    # some taps fall in the padding: zero exactly those columns
                    for od in range(o0):
                        for oh in range(o1):
                            q = np.uint64((od * o1 + oh) * o2)
                            if dlo <= od < dhi and hlo <= oh < hhi:
                                for i in range(np.uint64(lo)):
                                    cols[n, row, q + i] = 0
                                for i in range(np.uint64(hi), o2u):
                                    cols[n, row, q + i] = 0
                            else:
                                for i in range(o2u):
                                    cols[n, row, q + i] = 0
                if hi <= lo:
                    continue
                m = np.uint64(hi - lo)
                w0 = np.uint64(lo * s2 + w_off)
                lou = np.uint64(lo)
                for od in range(np.uint64(dlo), np.uint64(dhi)):
                    d = od * s0u + dk - p0u  # wraps back into [0, D): od is in the span
                    for oh in range(np.uint64(hlo), np.uint64(hhi)):
                        h = oh * s1u + hk - p1u
                        q = (od * o1u + oh) * o2u + lou
                        if adjoint:
                            for i in range(m):
                                x[n, c, d, h, w0 + i * s2u] += cols[n, row, q + i]
                        else:
                            for i in range(m):
                                cols[n, row, q + i] = x[n, c, d, h, w0 + i * s2u]


@njit
def _fold_serial(x, cols, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, o0, o1, o2,
                 adjoint):
    for t in range(x.shape[0] * x.shape[1]):
        _fold_plane(x, cols, t, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, o0, o1, o2,
                    adjoint)


@njit_parallel
def _fold_parallel(x, cols, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, o0, o1, o2,
                   adjoint):
    for t in prange(x.shape[0] * x.shape[1]):
        _fold_plane(x, cols, t, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, o0, o1, o2,
                    adjoint)


def _params(op, kernel, stride, padding, dilation, out_size):
    k = triple(op, "kernel", kernel)
    s = triple(op, "stride", stride)
    p = triple(op, "padding", padding)
    dil = triple(op, "dilation", dilation)
    o = triple(op, "out_size", out_size)
    if min(k + s + dil) < 1 or min(p + o) < 0:
        raise RuntimeError(
            f"{op}(): invalid parameters: kernel {k}, stride {s}, padding {p}, dilation {dil}, "
            f"out_size {o} (kernel, stride, dilation must be >= 1; padding, out_size >= 0)"
        )
    return k, s, p, dil, o


def _run(x, cols, k, s, p, dil, o, adjoint) -> None:
    if cols.size == 0 or x.size == 0:
        return
    # plain Python ints and a bool (never NumPy scalars or arrays): cheap dispatch
    args = (x, cols, *k, *s, *p, *dil, *o, bool(adjoint))
    # a memory-bound copy / scatter: the parallel launch pays from about a million elements
    if use_parallel(cols.size // 32) and x.shape[0] * x.shape[1] > 1:
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
