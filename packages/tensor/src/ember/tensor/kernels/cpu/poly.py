"""The orthogonal polynomials of ``torch.special`` at integer degree: Chebyshev T, U, V, W (and
their shifted forms, at ``2x - 1``), the physicists' and probabilists' Hermite H and He, Laguerre
L and Legendre P. One Numba loop per element runs the three-term recurrence up to that
element's degree, in float64, reading and writing the input's float dtype (float32 rounded
once); where the NumPy form ran the recurrence over the whole array once per degree up to the
largest, plus a select per degree (9.5x PyTorch on 256 elements).

Degree below 0 gives 0, degree 0 gives 1 (NaN stays NaN from degree 1 on), as the recurrence
does in PyTorch for the degrees its closed forms do not cover.

>>> import numpy as np
>>> orthogonal_poly("hermite_polynomial_h", np.array([0.5, 2.0]), np.array([3, 2])).tolist()
[-5.0, 14.0]
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["KINDS", "orthogonal_poly"]

#: kind -> its code in the kernels (the CUDA twin uses the same codes)
KINDS = {"chebyshev_polynomial_t": 0, "chebyshev_polynomial_u": 1,
         "chebyshev_polynomial_v": 2, "chebyshev_polynomial_w": 3,
         "hermite_polynomial_h": 4, "hermite_polynomial_he": 5,
         "laguerre_polynomial_l": 6, "legendre_polynomial_p": 7}


#: every name ``orthogonal_poly`` takes -> (its code, shifted), so a call parses no string
_CODES = {**{k: (c, False) for k, c in KINDS.items()},
          **{"shifted_" + k: (c, True) for k, c in KINDS.items()}}


@numba.njit(cache=True, nogil=True, inline="always")
def _recurrence(kind, shifted, x, m):  # pragma: no cover  (compiled)
    # the polynomial of degree m >= 1 at x, in float64
    t = np.float64(x)
    if shifted:
        t = 2.0 * t - 1.0
    if kind == 0 or kind == 5 or kind == 7:
        p1 = t
    elif kind == 1 or kind == 4:
        p1 = 2.0 * t
    elif kind == 2:
        p1 = 2.0 * t - 1.0
    elif kind == 3:
        p1 = 2.0 * t + 1.0
    else:
        p1 = 1.0 - t
    p0 = 1.0
    for k in range(1, m):
        if kind <= 3:
            p2 = 2.0 * t * p1 - p0
        elif kind == 4:
            p2 = 2.0 * t * p1 - 2.0 * k * p0
        elif kind == 5:
            p2 = t * p1 - k * p0
        elif kind == 6:
            p2 = ((2.0 * k + 1.0 - t) * p1 - k * p0) / (k + 1.0)
        else:
            p2 = ((2.0 * k + 1.0) * t * p1 - k * p0) / (k + 1.0)
        p0 = p1
        p1 = p2
    return p1


@numba.njit(cache=True, nogil=True)
def _poly(kind, shifted, x, n, out):  # pragma: no cover  (compiled)
    # x[i * xstep], n[i * nstep]: a step of 0 repeats a single value (a broadcast scalar)
    xstep = int(x.size != 1)
    if n.size == 1:  # one degree for every element: its tests made once, out of the loop
        m = n[0]
        if m <= 0:  # (a constant: a loop that vectorizes, where the tests per element
            v = 0.0 if m < 0 else 1.0  # cost as much as PyTorch's whole op)
            for i in range(out.size):
                out[i] = v
            return
        for i in range(out.size):
            out[i] = _recurrence(kind, shifted, x[i * xstep], m)
        return
    for i in range(out.size):
        m = n[i]
        if m < 0:
            out[i] = 0.0
        elif m == 0:
            out[i] = 1.0
        else:
            out[i] = _recurrence(kind, shifted, x[i * xstep], m)


def orthogonal_poly(kind: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Polynomial ``kind`` (a key of ``KINDS``, or ``"shifted_"`` + a Chebyshev one) of degree
    ``n`` (integers; floats are truncated) at ``x``, broadcast: computed in float64, an array
    of ``x``'s dtype where it is float32 or float64 (rounded once), else float64."""
    code, shifted = _CODES[kind]
    shape = x.shape if x.shape == n.shape or not n.ndim else \
        n.shape if not x.ndim else np.broadcast_shapes(x.shape, n.shape)
    if x.shape != shape and x.size != 1:
        x = np.broadcast_to(x, shape)
    if n.shape != shape and n.size != 1:
        n = np.broadcast_to(n, shape)
    x = np.ascontiguousarray(x, dtype=x.dtype if x.dtype.char in "fd" else np.float64)
    out = np.empty(shape, x.dtype)
    # ravel: a view of a contiguous array (else a contiguous copy), cheaper than reshape(-1)
    _poly(code, shifted, x.ravel(), n.ravel().astype(np.int64, copy=False), out.ravel())
    return out
