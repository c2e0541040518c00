"""The special functions built on a logarithm as Numba loops, one pass each: ``entr``
(``-x log x``), ``xlogy`` (``x log y``), ``xlog1py`` (``x log1p y``) and ``logit``
(``log(p / (1 - p))``, ``p`` clamped first when an ``eps`` is given).

NumPy spells each as four to seven ufunc calls (the log, the product, the comparisons that
find the special cases, a select per case), ~0.4 us apiece on a small array; here it is one
loop over float32 or float64 (the caller's dtypes, kept: float32 arithmetic stays float32,
as in NumPy and PyTorch), on the vectorized ``vlog`` / ``vlog1p`` of ``_vmath`` (within an
ulp of libm's). The special values are PyTorch's: ``entr`` is +0 at 0 and -inf below;
``xlogy`` and ``xlog1py`` are +0 where ``x`` is 0 unless ``y`` is NaN.
"""

from __future__ import annotations

import numba
import numpy as np

from ._vmath import like, vlog, vlog1p

__all__ = ["entr", "xlogy", "xlog1py", "logit"]

_loop = numba.njit(cache=True, nogil=True, error_model="numpy")


@_loop
def _entr(x, out):  # pragma: no cover  (compiled)
    for i in range(x.shape[0]):
        v = x[i]
        r = -(v * vlog(v))
        out[i] = -np.inf if v < 0 else (0.0 if v == 0 else r)


@_loop
def _xlogy(x, y, out):  # pragma: no cover  (compiled)
    for i in range(out.shape[0]):
        a = x[i]
        b = y[i]
        r = a * vlog(b)
        out[i] = 0.0 if (a == 0 and b == b) else r


@_loop
def _xlog1py(x, y, out):  # pragma: no cover  (compiled)
    for i in range(out.shape[0]):
        a = x[i]
        b = y[i]
        r = a * vlog1p(b)
        out[i] = 0.0 if (a == 0 and b == b) else r


@_loop
def _logit(x, out, clamp, lo, hi):  # pragma: no cover  (compiled)
    one = like(1.0, x)
    lo = like(lo, x)
    hi = like(hi, x)
    for i in range(x.shape[0]):
        v = x[i]
        if clamp:  # NumPy's clip: the lower bound, then the upper one (NaN stays)
            v = lo if v < lo else v
            v = hi if v > hi else v
        out[i] = vlog(v / (one - v))


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _unary_flat(name: str, x: np.ndarray):
    """``(flat x, out)``: ``out`` a new array of ``x``'s shape and layout, both flat in memory
    order (``x`` made contiguous first unless it is in C or Fortran order)."""
    dt = x.dtype
    if not (dt == _F32 or dt == _F64):
        raise TypeError(f"{name}(): no kernel for dtype {dt}")
    flags = x.flags
    if not (flags.c_contiguous or flags.f_contiguous):
        x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    return x.ravel("K"), out


def entr(x: np.ndarray) -> np.ndarray:
    """``-x log x`` of a float32 / float64 array (a new array): +0 at 0, -inf below 0."""
    flat, out = _unary_flat("entr", x)
    _entr(flat, out.ravel("K"))
    return out


def logit(x: np.ndarray, eps: float | None = None) -> np.ndarray:
    """``log(p / (1 - p))`` of a float32 / float64 array (a new array), ``p`` clamped to
    ``[eps, 1 - eps]`` (in ``x``'s dtype) when ``eps`` is given."""
    flat, out = _unary_flat("logit", x)
    clamp = eps is not None
    _logit(flat, out.ravel("K"), clamp, float(eps) if clamp else 0.0,
           1.0 - eps if clamp else 0.0)
    return out


def _binary(name: str, loop, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``loop`` over ``x`` and ``y`` broadcast, in one layout (the loops take equal-length
    contiguous runs: they vectorize)."""
    dt = x.dtype
    if not ((dt == _F32 or dt == _F64) and y.dtype == dt):
        raise TypeError(f"{name}(): no kernel for dtypes {x.dtype}, {y.dtype}")
    if x.shape != y.shape:
        shape = np.broadcast_shapes(x.shape, y.shape)
        x, y = np.broadcast_to(x, shape), np.broadcast_to(y, shape)
    xf, yf = x.flags, y.flags  # one layout for both where they share one (C or Fortran)
    if not ((xf.c_contiguous and yf.c_contiguous) or (xf.f_contiguous and yf.f_contiguous)):
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    out = np.empty_like(x)
    loop(x.ravel("K"), y.ravel("K"), out.ravel("K"))
    return out


def xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x log y`` of two float32 / float64 arrays of one dtype, broadcast (a new array): +0
    where ``x`` is 0 unless ``y`` is NaN."""
    return _binary("xlogy", _xlogy, x, y)


def xlog1py(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x log1p y`` of two float32 / float64 arrays of one dtype, broadcast (a new array): +0
    where ``x`` is 0 unless ``y`` is NaN."""
    return _binary("xlog1py", _xlog1py, x, y)
