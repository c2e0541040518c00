"""Max pooling with indices (1-d, 2-d and 3-d through one (B, D, H, W) kernel).

Forward is parallel over (batch*channel, output depth) planes, backward over batch*channel
planes: every thread owns its output elements, so there are no races.
"""

from __future__ import annotations

import math
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
def _span(start, k, dil, size):
    """Window taps ``[lo, hi)`` whose positions ``start + i * dil`` lie in ``[0, size)``."""
    lo = 0
    if start < 0:
        lo = (-start + dil - 1) // dil
    last = size - 1 - start
    hi = 0 if last < 0 else min(k, last // dil + 1)
    return lo, max(lo, hi)


@njit
def _spans(o, s, p, k, e, size):
    """The valid tap ranges ``[lo, hi)`` of each of ``o`` windows along one axis, as an
    (o, 2) table: worked out once per call, not per window and plane."""
    sp = np.empty((o, 2), np.int64)
    for i in range(o):
        lo, hi = _span(i * s - p, k, e, size)
        sp[i, 0] = lo
        sp[i, 1] = hi
    return sp


@njit
def _pool_plane(x, out, idx, t, s0, s1, s2, p0, p1, p2, e0, e1, e2, dsp, hsp, wsp):
    # general windows, valid tap ranges from the tables of _spans (no bounds tests); each
    # output row takes its taps in the windows' order (d, h, w), one tap of every window of
    # the row at a time: long inner loops over the row, not short ones over a window
    H, W = x.shape[2], x.shape[3]
    oD, oH, oW = out.shape[1], out.shape[2], out.shape[3]
    b = t // oD
    od = t % oD
    xb = x[b]
    ob = out[b, od]
    ib = idx[b, od]
    ds = od * s0 - p0
    ilo, ihi = dsp[od, 0], dsp[od, 1]
    mmax = 0
    for ow in range(oW):
        mmax = max(mmax, wsp[ow, 1])
    for oh in range(oH):
        hs = oh * s1 - p1
        jlo, jhi = hsp[oh, 0], hsp[oh, 1]
        orow = ob[oh]
        irow = ib[oh]
        for i in range(ilo, ihi):
            d = ds + i * e0
            for j in range(jlo, jhi):
                h = hs + j * e1
                xrow = xb[np.uint64(d), np.uint64(h)]
                base = (d * H + h) * W
                seed = i == ilo and j == jlo
                for m in range(mmax):
                    for ow in range(oW):
                        mlo = wsp[ow, 0]
                        if m < mlo or m >= wsp[ow, 1]:
                            continue
                        w = ow * s2 - p2 + m * e2
                        v = xrow[np.uint64(w)]
                        # PyTorch: the first valid element seeds the max; a NaN always wins
                        if (seed and m == mlo) or v > orow[ow] or v != v:
                            orow[ow] = v
                            irow[ow] = base + w


@njit
def _has_nan(x):
    flat = x.reshape(-1)
    acc = False
    for i in range(flat.shape[0]):
        acc |= flat[i] != flat[i]
    return acc


@njit
def _pool2_plane(x, out, idx, t):
    # kernel (1, 2, 2), stride (1, 2, 2), no padding or dilation, windows inside the input and
    # no NaN in x: unrolled, with plain compares (first max wins)
    H, W = x.shape[2], x.shape[3]
    oD, oH, oW = out.shape[1], out.shape[2], out.shape[3]
    b = t // oD
    od = t % oD
    xp = x[b, od]
    ob = out[b, od]
    ib = idx[b, od]
    plane = od * H * W
    for oh in range(oH):
        h = 2 * oh
        base = plane + h * W
        for ow in range(oW):
            w = 2 * ow
            m = xp[h, w]
            a = 0
            v = xp[h, w + 1]
            if v > m:
                m = v
                a = 1
            v = xp[h + 1, w]
            if v > m:
                m = v
                a = W
            v = xp[h + 1, w + 1]
            if v > m:
                m = v
                a = W + 1
            ob[oh, ow] = m
            ib[oh, ow] = base + w + a


@njit
def _pool_tables(x, out, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2):
    return (_spans(out.shape[1], s0, p0, k0, e0, x.shape[1]),
            _spans(out.shape[2], s1, p1, k1, e1, x.shape[2]),
            _spans(out.shape[3], s2, p2, k2, e2, x.shape[3]))


@njit
def _pool_serial(x, out, idx, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, fast2):
    # fast2: the 2x2 geometry fits; the NaN test is here rather than a call of its own
    fast2 = fast2 and not _has_nan(x)
    if fast2:
        for t in range(out.shape[0] * out.shape[1]):
            _pool2_plane(x, out, idx, t)
        return
    dsp, hsp, wsp = _pool_tables(x, out, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2)
    for t in range(out.shape[0] * out.shape[1]):
        _pool_plane(x, out, idx, t, s0, s1, s2, p0, p1, p2, e0, e1, e2, dsp, hsp, wsp)


@njit_parallel
def _pool_parallel(x, out, idx, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2, fast2):
    fast2 = fast2 and not _has_nan(x)
    if fast2:
        for t in prange(out.shape[0] * out.shape[1]):
            _pool2_plane(x, out, idx, t)
        return
    dsp, hsp, wsp = _pool_tables(x, out, k0, k1, k2, s0, s1, s2, p0, p1, p2, e0, e1, e2)
    for t in prange(out.shape[0] * out.shape[1]):
        _pool_plane(x, out, idx, t, s0, s1, s2, p0, p1, p2, e0, e1, e2, dsp, hsp, wsp)


@njit
def _unpool_row(g, idx, gin, b):
    """Scatter-add row ``b``; False (writing nothing) if one of its indices is out of range."""
    gb = g[b]
    ib = idx[b]
    ob = gin[b]
    P = ob.shape[0]
    for j in range(ib.shape[0]):
        i = ib[j]
        if i < 0 or i >= P:
            return False
    for j in range(ib.shape[0]):
        ob[np.uint64(ib[j])] += gb[j]  # checked above: unsigned skips Numba's wraparound
    return True


@njit
def _unpool_serial(g, idx, gin):
    bad = 0
    for b in range(g.shape[0]):
        if not _unpool_row(g, idx, gin, b):
            bad += 1
    return bad


@njit_parallel
def _unpool_parallel(g, idx, gin):
    bad = 0
    for b in prange(g.shape[0]):
        if not _unpool_row(g, idx, gin, b):
            bad += 1
    return bad


def _check_windows(op, size, k, s, p, dil, o) -> None:
    for ka, sa, pa, da, oa, na in zip(k, s, p, dil, o, size):
        if not (ka >= 1 and sa >= 1 and da == 1 and 0 <= pa <= ka - 1 and oa >= 0
                and (oa - 1) * sa - pa < na):
            break
    else:
        return  # unit dilation: the first window reaches 0 and the last starts inside
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
    if x.__class__ is not np.ndarray:
        x = np.asarray(x)
    check_ndim(op, "x", x, 4, "(B, D, H, W)")
    try:
        key = (x.shape, kernel, stride, padding, dilation, out_size)
        geom = _forward_plans.get(key)
    except TypeError:  # a list among the arguments: no plan kept
        key = geom = None
    if geom is None:
        geom = _forward_plan(op, x.shape, kernel, stride, padding, dilation, out_size, key)
    o, ints, fast2, work = geom
    (xc,), dtype = float_inputs(op, x)
    out = np.empty(o, dtype=xc.dtype)
    idx = np.empty(o, dtype=np.int64)
    if out.size:
        # (the 2x2 kernel is turned down in the kernel where x holds a NaN)
        args = (xc, out, idx, *ints, fast2)
        # the unrolled 2x2 kernel is memory bound: a parallel launch (tens of microseconds
        # on a two-core machine) only pays on large inputs
        if use_parallel(work) and o[0] * o[1] > 1:
            parallel_call(_pool_parallel, *args)
        else:
            _pool_serial(*args)
    return (out if out.dtype == dtype else out.astype(dtype)), idx


_forward_plans: dict = {}  # (x shape, kernel, stride, padding, dilation, out_size) -> geometry


def _forward_plan(op, shape, kernel, stride, padding, dilation, out_size, key):
    """:func:`max_pool_forward`'s checked geometry: (the output shape, the kernel's twelve
    plain Python ints (cheap dispatch, constant loop bounds), whether the unrolled 2x2 kernel
    fits, the work in elements). Kept per shape and arguments (a bad one raises before its
    plan is stored): the checks cost more than a small pooling."""
    k = triple(op, "kernel", kernel)
    s = triple(op, "stride", stride)
    p = triple(op, "padding", padding)
    dil = triple(op, "dilation", dilation)
    o = triple(op, "out_size", out_size)
    _check_windows(op, shape[1:], k, s, p, dil, o)
    fast2 = (k == (1, 2, 2) and s == (1, 2, 2) and p == (0, 0, 0) and dil == (1, 1, 1)
             and 2 * o[1] <= shape[2] and 2 * o[2] <= shape[3])
    size = math.prod(shape)
    work = size // 16 if fast2 else shape[0] * math.prod(o) * k[0] * k[1] * k[2]
    plan = ((shape[0], *o), (*k, *s, *p, *dil), fast2, work)
    if key is not None:
        if len(_forward_plans) >= 1024:
            _forward_plans.clear()
        _forward_plans[key] = plan
    return plan


def max_pool_backward(
    grad_out: np.ndarray, indices: np.ndarray, in_size: Sequence[int]
) -> np.ndarray:
    """Gradient of max pooling: scatter-add ``grad_out`` (B, oD, oH, oW) at ``indices``.

    Returns ``grad_in`` of shape (B, *in_size); ``indices`` must lie in [0, D*H*W).

    >>> max_pool_backward(np.ones((1, 1, 1, 2)), np.array([[[[1, 1]]]]), (1, 1, 3)).ravel()
    array([0., 2., 0.])
    """
    op = "max_pool_backward"
    if grad_out.__class__ is not np.ndarray:
        grad_out = np.asarray(grad_out)
    if indices.__class__ is not np.ndarray:
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
    if indices.dtype.kind not in "iu":
        check_indices(op, indices, plane)  # raises TypeError
    idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(B, -1)
    (g,), dtype = float_inputs(op, grad_out)
    g = g.reshape(B, -1)
    gin = np.zeros((B, plane), dtype=g.dtype)
    if g.size:
        # the kernel checks each row's indices before it writes any of them
        if use_parallel(g.size // 8) and B > 1:  # a memory-bound scatter: large inputs only
            bad = parallel_call(_unpool_parallel, g, idx, gin)
        else:
            bad = _unpool_serial(g, idx, gin)
        if bad:
            check_indices(op, indices, plane, what=f"an input plane of {size}")  # IndexError
    gin = gin.reshape(B, *size)
    return gin if gin.dtype == dtype else gin.astype(dtype)
