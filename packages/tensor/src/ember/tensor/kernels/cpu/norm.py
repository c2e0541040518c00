"""Layer norm over the rows of (rows, n). Forward: each row's mean, ``rstd = 1 / sqrt(var +
eps)`` (biased variance) and ``(x - mean) * rstd * weight + bias`` in one kernel. Backward: with
``xhat = (x - mean) * rstd`` and ``gh = grad_out * weight``, ``grad_x = rstd * (gh - mean(gh)
- xhat * mean(gh * xhat))`` per row, and ``grad_weight = sum(grad_out * xhat)``, ``grad_bias =
sum(grad_out)`` over the rows, in one kernel (two passes per row; float64 sums).

Three passes per row (sum, sum of squared deviations, output), the sums accumulated in float64
(two-pass, so a large mean costs no precision). Measured against the NumPy expression it
replaces (mean, subtract, square, mean, sqrt, reciprocal, scale, affine): 4x64 about 3 us
against 16 us, 256x1024 about 0.6x its time.
"""

from __future__ import annotations

import numpy as np

from ._common import check_ndim, float_inputs
from ._vmath import like, vjit

_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))

__all__ = ["layer_norm_forward", "layer_norm_backward"]


@vjit(sums=True)
def _row_sum(x, i):
    s = 0.0
    for j in range(x.shape[1]):
        s += np.float64(x[i, j])
    return s


@vjit(sums=True)
def _row_sqdev(x, i, m):
    v = 0.0
    for j in range(x.shape[1]):
        d = np.float64(x[i, j]) - m
        v += d * d
    return v


@vjit
def _layer_norm_rows(x, w, b, eps, out, mean, rstd):
    R, n = x.shape
    has_w, has_b = w.shape[0] > 0, b.shape[0] > 0
    for i in range(R):
        m = _row_sum(x, i) / n
        r = 1.0 / np.sqrt(_row_sqdev(x, i, m) / n + eps)
        mf, rf = like(m, x), like(r, x)
        mean[i], rstd[i] = mf, rf
        if has_w and has_b:
            for j in range(n):
                out[i, j] = (x[i, j] - mf) * rf * w[j] + b[j]
        elif has_w:
            for j in range(n):
                out[i, j] = (x[i, j] - mf) * rf * w[j]
        elif has_b:
            for j in range(n):
                out[i, j] = (x[i, j] - mf) * rf + b[j]
        else:
            for j in range(n):
                out[i, j] = (x[i, j] - mf) * rf


@vjit
def _layer_norm_into(x, w, b, eps, out, mean, rstd):
    # _layer_norm_rows into results of any C-contiguous shapes (out: x's elements; mean and
    # rstd: one per row), seen as (rows, n) and (rows,) here (a reshape in Numba is free; the
    # three in Python cost a tenth of a 4x64 layer norm)
    R = x.shape[0]
    _layer_norm_rows(x, w, b, eps, out.reshape(x.shape), mean.reshape(R), rstd.reshape(R))


_NONE = {}  # dtype -> the empty array that stands for "no weight" / "no bias" (no element
# to write: shared by every call)


def _param(op: str, name: str, p, n: int, dtype) -> np.ndarray:
    """The affine parameter ``p`` (n,) as a contiguous array of ``dtype``; None as an empty
    one."""
    if p is None:
        e = _NONE.get(dtype)
        if e is None:
            e = _NONE[dtype] = np.empty(0, dtype=dtype)
        return e
    if p.__class__ is not np.ndarray:
        p = np.asarray(p)
    if p.shape != (n,):
        raise RuntimeError(f"{op}(): {name} of shape {tuple(p.shape)} does not match rows of "
                           f"length {n}")
    if p.dtype == dtype and p.flags.c_contiguous:  # (the common case, without a NumPy call)
        return p
    return np.ascontiguousarray(p, dtype=dtype)


def layer_norm_forward(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
                       eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer norm of each row of ``x`` (rows, n) with an optional affine ``weight`` and
    ``bias`` (n,); returns ``(out, mean, rstd)``, the statistics as (rows,). float16 computes
    in float32; ``weight`` and ``bias`` are cast to the compute dtype.

    >>> out, mean, rstd = layer_norm_forward(np.array([[1.0, 3.0]]), None, None, 0.0)
    >>> out.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [2.0], [1.0])
    """
    op = "layer_norm_forward"
    if x.__class__ is not np.ndarray:
        x = np.asarray(x)
    check_ndim(op, "x", x, 2, "(rows, n)")
    (xc,), dtype = float_inputs(op, x)
    R, n = xc.shape
    _param(op, "weight", weight, n, xc.dtype)  # (their checks)
    _param(op, "bias", bias, n, xc.dtype)
    out, mean, rstd = _layer_norm_run(xc, weight, bias, eps, xc.shape, (R,))
    if out.dtype == dtype:  # (three astype calls that copy nothing still cost 0.5 us)
        return out, mean, rstd
    return out.astype(dtype), mean.astype(dtype), rstd.astype(dtype)


def _layer_norm_run(x: np.ndarray, weight, bias, eps: float, shape: tuple,
                    stat: tuple) -> tuple:
    """:func:`layer_norm_forward` of arrays that ember.tensor's native_layer_norm has
    checked: ``x`` (rows, n) of a floating dtype, ``weight`` and ``bias`` (n,) or None; its
    output shaped ``shape`` and its statistics ``stat`` (as many elements), without a
    kernel-table lookup, a second check of ``x`` and three reshapes."""
    dt = x.dtype
    if dt not in _FLOATS:  # (float16 computes in float32)
        x = np.ascontiguousarray(x, dtype=np.float32)
    elif not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    R, n = x.shape
    w = _param("layer_norm_forward", "weight", weight, n, x.dtype)
    b = _param("layer_norm_forward", "bias", bias, n, x.dtype)
    out = np.empty(shape, x.dtype)  # (np.empty_like costs more)
    mean = np.empty(stat, x.dtype)
    rstd = np.empty(stat, x.dtype)
    if n == 0:  # PyTorch: mean 0 and rstd NaN over an empty normalized shape
        mean[...], rstd[...] = 0, np.nan
    elif R:
        _layer_norm_into(x, w, b, float(eps), out, mean, rstd)
    if x.dtype == dt:
        return out, mean, rstd
    return out.astype(dt), mean.astype(dt), rstd.astype(dt)


@vjit(sums=True)
def _row_bwd_sums(go, x, w, i, m, r):
    """``(sum(gh), sum(gh * xhat))`` of row ``i`` (``gh = go * w``; no ``w``: ``go``)."""
    s1 = 0.0
    s2 = 0.0
    if w.shape[0] > 0:
        for j in range(x.shape[1]):
            gh = np.float64(go[i, j]) * np.float64(w[j])
            s1 += gh
            s2 += gh * ((np.float64(x[i, j]) - m) * r)
    else:
        for j in range(x.shape[1]):
            gh = np.float64(go[i, j])
            s1 += gh
            s2 += gh * ((np.float64(x[i, j]) - m) * r)
    return s1, s2


@vjit
def _layer_norm_bwd_rows(go, x, mean, rstd, w, gx, gw, gb):
    R, n = x.shape
    has_w = w.shape[0] > 0
    for i in range(R):
        m = np.float64(mean[i])
        r = np.float64(rstd[i])
        s1, s2 = _row_bwd_sums(go, x, w, i, m, r)
        a = s1 / n
        b = s2 / n
        for j in range(n):
            g = np.float64(go[i, j])
            xh = (np.float64(x[i, j]) - m) * r
            gh = g * np.float64(w[j]) if has_w else g
            gx[i, j] = r * (gh - a - xh * b)
            gw[j] += g * xh
            gb[j] += g


def layer_norm_backward(grad_out: np.ndarray, x: np.ndarray, mean: np.ndarray,
                        rstd: np.ndarray, weight: np.ndarray | None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`layer_norm_forward` for ``grad_out`` (rows, n), from its input
    ``x``, statistics ``mean`` and ``rstd`` (rows,) and ``weight`` (n,) or None: ``(grad_x,
    grad_weight, grad_bias)`` in ``x``'s dtype (float16 computes in float32).

    >>> gx, gw, gb = layer_norm_backward(np.ones((1, 2)), np.array([[1.0, 3.0]]),
    ...                                  np.array([2.0]), np.array([1.0]), None)
    >>> gx.tolist(), gw.tolist(), gb.tolist()
    ([[0.0, 0.0]], [-1.0, 1.0], [1.0, 1.0])
    """
    op = "layer_norm_backward"
    check_ndim(op, "x", np.asarray(x), 2, "(rows, n)")
    (gc, xc), dtype = float_inputs(op, grad_out, x)
    R, n = xc.shape
    if gc.shape != (R, n):
        raise RuntimeError(f"{op}(): grad_out of shape {tuple(gc.shape)} does not match x of "
                           f"shape {(R, n)}")
    w = np.empty(0, dtype=xc.dtype) if weight is None else \
        np.ascontiguousarray(weight, dtype=xc.dtype)
    if w.shape not in ((0,), (n,)):
        raise RuntimeError(f"{op}(): weight of shape {tuple(w.shape)} does not match rows of "
                           f"length {n}")
    m = np.ascontiguousarray(mean, dtype=xc.dtype).reshape(R)
    r = np.ascontiguousarray(rstd, dtype=xc.dtype).reshape(R)
    gx = np.empty_like(xc)
    gw = np.zeros(n)
    gb = np.zeros(n)
    if R and n:
        _layer_norm_bwd_rows(gc, xc, m, r, w, gx, gw, gb)
    return gx.astype(dtype, copy=False), gw.astype(dtype), gb.astype(dtype)
