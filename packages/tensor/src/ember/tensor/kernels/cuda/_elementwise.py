"""CuPy twins of ``ember.tensor.kernels.cpu.elementwise``: elementwise kernels with PyTorch's
semantics (CUDA's ``fmod`` is exact; remainder and floor division are PyTorch's formulas from
it), compiled by CuPy at first use. Same names and signatures as the CPU kernels: operands are
CuPy arrays of one dtype or Python numbers, broadcast; ``out`` receives the result when given.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.tensor import _cupy

__all__ = ["fmod", "remainder", "floor_divide", "nan_to_num", "logaddexp", "logaddexp2",
           "orthogonal_poly", "outer", "triangle_zero", "fill", "arange_values",
           "linspace_values", "hypot", "sign", "copysign", "angle", "frac", "round_decimals",
           "make_complex"]

# float (float16 computes through float for fmod; the fix-ups round in the input type as
# PyTorch's CUDA kernels do) and integer bodies; integers: Python's // and %, C's fmod, and
# x // -1 wrapping at the minimum (never the trap of INT_MIN / -1).
_FLOAT = {
    "fmod": "z = (T)fmod((double)x, (double)y);",
    "remainder": """
        T m = (T)fmod((double)x, (double)y);
        z = (m != (T)0 && ((y < (T)0) != (m < (T)0))) ? (T)(m + y) : m;""",
    "floor_divide": """
        if (y == (T)0) { z = (T)(x / y); }
        else {
            T m = (T)fmod((double)x, (double)y);
            T div = (T)((T)(x - m) / y);
            if (m != (T)0 && ((y < (T)0) != (m < (T)0))) div = (T)(div - (T)1);
            if (div != (T)0) {
                T fd = (T)floor((double)div);
                if ((T)(div - fd) > (T)0.5) fd = (T)(fd + (T)1);
                z = fd;
            } else {
                z = (T)copysign(0.0, (double)(T)(x / y));
            }
        }""",
}
_INT = {
    "fmod": "z = (y == (T)-1) ? (T)0 : (T)(x % y);",
    "remainder": """
        if (y == (T)-1) { z = (T)0; }
        else { T r = x % y; z = (r != 0 && ((r < 0) != (y < 0))) ? (T)(r + y) : r; }""",
    "floor_divide": """
        if (y == (T)-1) { z = (T)(0 - x); }
        else {
            T q = x / y; T r = x % y;
            z = (r != 0 && ((r < 0) != (y < 0))) ? (T)(q - 1) : q;
        }""",
}
_UNSIGNED = {
    "fmod": "z = x % y;",
    "remainder": "z = x % y;",
    "floor_divide": "z = x / y;",
}


def _into(res: Any, out: Any) -> Any:
    """``res``, or ``out`` holding it when given."""
    if out is None:
        return res
    out[...] = res
    return out


@_cupy.memoize
def _elementwise(name: str, kind: str) -> Any:
    body = {"f": _FLOAT, "i": _INT, "u": _UNSIGNED}[kind][name]
    return _cupy.require(name).ElementwiseKernel("T x, T y", "T z", body, f"ember_{name}_{kind}")


def _binary(name: str, a: Any, b: Any, out: Any) -> Any:
    cp = _cupy.require(name)
    arrays = [v for v in (a, b) if isinstance(v, cp.ndarray)]
    dtype = arrays[0].dtype if arrays else cp.result_type(a, b)
    if dtype.kind not in "fiu":
        raise TypeError(f"{name}: no kernel for dtype {dtype}")
    xa = a if isinstance(a, cp.ndarray) else cp.asarray(a, dtype=dtype)
    xb = b if isinstance(b, cp.ndarray) else cp.asarray(b, dtype=dtype)
    res = _elementwise(name, dtype.kind)(xa.astype(dtype, copy=False),
                                         xb.astype(dtype, copy=False))
    return _into(res, out)


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """``a[i] * b[j]`` as an ``(m, n)`` array, for 1-d ``a`` and ``b`` both float32 or both
    float64 (the CPU twin's checks and result)."""
    cp = _cupy.require("outer")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: expected two 1-d arrays, got shapes {a.shape} and {b.shape}")
    if a.dtype != b.dtype or a.dtype.char not in "fd":
        raise TypeError(f"outer: no kernel for dtypes {a.dtype} and {b.dtype} (both "
                        "float32 or both float64)")
    return cp.multiply(a[:, None], b[None, :], out=out)


def hypot(a: Any, b: Any, out: Any = None) -> Any:
    """``sqrt(a**2 + b**2)`` of float arrays, broadcasting (CuPy's, libm's ``hypot``)."""
    return _cupy.require("hypot").hypot(a, b, out=out)


def sign(x: Any) -> Any:
    """``sign(x)`` of a float32 or float64 array (-1, 0 or 1; NaN stays NaN)."""
    cp = _cupy.require("sign")
    if x.dtype.char not in "fd":
        raise TypeError(f"sign: no kernel for dtype {x.dtype}")
    return cp.sign(x)


def frac(x: Any) -> Any:
    """``x - trunc(x)`` of a float32 or float64 array (PyTorch's ``frac``)."""
    cp = _cupy.require("frac")
    if x.dtype.char not in "fd":
        raise TypeError(f"frac: no kernel for dtype {x.dtype}")
    return cp.subtract(x, cp.trunc(x))


def round_decimals(x: Any, decimals: int) -> Any:
    """``x`` (float32 or float64) rounded half to even to ``decimals`` places (CuPy's round)."""
    _cupy.require("round_decimals")
    if x.dtype.char not in "fd":
        raise TypeError(f"round_decimals: no kernel for dtype {x.dtype}")
    return x.round(decimals)


def make_complex(re: Any, im: Any) -> Any:
    """The complex array ``re + i im`` of two float32 or float64 arrays of one dtype,
    broadcasting."""
    cp = _cupy.require("make_complex")
    if re.dtype != im.dtype or re.dtype.char not in "fd":
        raise TypeError(f"make_complex: no kernel for dtypes {re.dtype} and {im.dtype}")
    out = cp.empty(cp.broadcast(re, im).shape, cp.complex64 if re.dtype.char == "f" else
                   cp.complex128)
    out.real, out.imag = re, im
    return out


def copysign(a: Any, b: Any, out: Any = None) -> Any:
    """The magnitude of ``a`` with the sign of ``b`` (float arrays), broadcasting."""
    return _cupy.require("copysign").copysign(a, b, out=out)


def angle(x: Any) -> Any:
    """PyTorch's ``angle`` of a real float array: pi where ``x < 0``, else 0 (NaN stays
    NaN)."""
    cp = _cupy.require("angle")
    if x.dtype.char not in "efd":
        raise TypeError(f"angle: no kernel for dtype {x.dtype}")
    r = cp.multiply(x < 0, x.dtype.type(math.pi), dtype=x.dtype)
    cp.copyto(r, x, where=x != x)
    return r


def triangle_zero(out: Any, diagonal: int, upper: bool) -> None:
    """Zero the elements of the C-contiguous (batch, rows, cols) array ``out`` below diagonal
    ``diagonal`` (``upper``) or above it, in place (the CPU twin's checks and result)."""
    cp = _cupy.require("triangle_zero")
    if out.ndim != 3:
        raise RuntimeError(f"triangle_zero(): expected out of shape (batch, rows, cols) (3-d), "
                           f"got shape {tuple(out.shape)}")
    if not out.flags.c_contiguous:
        raise ValueError("triangle_zero(): out must be C-contiguous")
    out[...] = (cp.triu if upper else cp.tril)(out, diagonal)


def fill(out: Any, value: Any) -> None:
    """Write ``value`` into every element of ``out``, in place (the CPU twin's result)."""
    _cupy.require("fill")
    out.fill(value)


def arange_values(n: int, start: Any, step: Any, dtype: Any) -> Any:
    """``start + i * step`` for ``i < n`` in float64, in ``dtype`` where it is float32 or
    float64 (else float64): the CPU twin's values."""
    cp = _cupy.require("arange_values")
    work = dtype if dtype in (np.float32, np.float64) else np.float64
    arr = cp.arange(n, dtype=np.float64)
    arr *= float(step)
    arr += float(start)
    return arr.astype(work, copy=False)


def linspace_values(steps: int, start: Any, end: Any, dtype: Any) -> Any:
    """``steps`` values from ``start`` to ``end`` inclusive by PyTorch's two-sided formula,
    in ``dtype`` where it is float32 or float64 (else float64): the CPU twin's values."""
    cp = _cupy.require("linspace_values")
    work = dtype if dtype in (np.float32, np.float64) else np.float64
    start, end = float(start), float(end)
    if steps <= 1:
        return cp.full((steps,), start, dtype=work)
    step = (end - start) / (steps - 1)
    idx = cp.arange(steps, dtype=np.float64)
    arr = idx * step
    arr += start
    tail = arr[steps // 2:]
    cp.multiply(idx[steps - 1 - steps // 2::-1], -step, out=tail)
    tail += end
    return arr.astype(work, copy=False)


def fmod(a: Any, b: Any, out: Any = None) -> Any:
    """C's ``fmod(a, b)`` (sign of the dividend), broadcasting."""
    return _binary("fmod", a, b, out)


def remainder(a: Any, b: Any, out: Any = None) -> Any:
    """PyTorch's ``remainder``: Python's ``a % b`` (sign of the divisor)."""
    return _binary("remainder", a, b, out)


def floor_divide(a: Any, b: Any, out: Any = None) -> Any:
    """PyTorch's ``floor_divide``: ``a / b`` rounded toward negative infinity."""
    return _binary("floor_divide", a, b, out)


@_cupy.memoize
def _nan_to_num_kernel() -> Any:
    return _cupy.require("nan_to_num").ElementwiseKernel(
        "T x, T nan, T posinf, T neginf", "T y",
        "y = isnan(x) ? nan : (isinf(x) ? (x > (T)0 ? posinf : neginf) : x);",
        "ember_nan_to_num")


def nan_to_num(x: Any, nan: float, posinf: float, neginf: float) -> Any:
    """``x`` (float32 / float64, or complex: each part on its own) with NaN, +inf and -inf
    replaced by ``nan``, ``posinf`` and ``neginf``; a new C-contiguous array."""
    cp = _cupy.require("nan_to_num")
    part = x.real.dtype if x.dtype.kind == "c" else x.dtype
    if part.kind != "f" or part.itemsize < 4:
        raise TypeError(f"nan_to_num: no kernel for dtype {x.dtype}")
    if not x.flags.c_contiguous:
        x = x.copy()
    out = cp.empty(x.shape, x.dtype)
    k = _nan_to_num_kernel()
    k(x.reshape(-1).view(part), part.type(nan), part.type(posinf), part.type(neginf),
      out.reshape(-1).view(part))
    return out


# PyTorch's formulas (float16 computes in float: CuPy's ``T`` is half there, so the body
# converts); equal infinities give themselves.
_LAE = {
    "logaddexp": "log1p(exp(-fabs(a - b)))",
    "logaddexp2": "log1p(exp2(-fabs(a - b))) * 1.4426950408889634",
}


@_cupy.memoize
def _lae_kernel(name: str) -> Any:
    body = f"""
        double a = (double)x, b = (double)y;
        if (sizeof(T) == 4) {{
            float fa = (float)a, fb = (float)b;
            float m = fa > fb ? fa : fb;
            float r = m + {_LAE[name].replace("exp2(", "exp2f(").replace("exp(", "expf(")
                            .replace("log1p(", "log1pf(").replace("fabs(", "fabsf(")};
            z = (isinf(fa) && fa == fb) ? (T)fa : (T)r;
        }} else {{
            double m = a > b ? a : b;
            double r = m + {_LAE[name]};
            z = (isinf(a) && a == b) ? (T)a : (T)r;
        }}"""
    return _cupy.require(name).ElementwiseKernel("T x, T y", "T z", body, f"ember_{name}")


def _lae(name: str, a: Any, b: Any, out: Any) -> Any:
    cp = _cupy.require(name)
    arrays = [v for v in (a, b) if isinstance(v, cp.ndarray)]
    dtype = arrays[0].dtype if arrays else cp.result_type(a, b)
    if dtype.kind != "f":
        raise TypeError(f"{name}: no kernel for dtype {dtype}")
    work = cp.dtype(cp.float32) if dtype.itemsize < 4 else dtype
    xa = cp.asarray(a, dtype=work)
    xb = cp.asarray(b, dtype=work)
    res = _lae_kernel(name)(xa, xb).astype(dtype, copy=False)
    return _into(res, out)


def logaddexp(a: Any, b: Any, out: Any = None) -> Any:
    """PyTorch's ``logaddexp`` of real floats, broadcasting."""
    return _lae("logaddexp", a, b, out)


def logaddexp2(a: Any, b: Any, out: Any = None) -> Any:
    """PyTorch's ``logaddexp2`` of real floats, broadcasting."""
    return _lae("logaddexp2", a, b, out)


# the CPU kernel's recurrence (``ember.tensor.kernels.cpu.poly``, whose kind codes these are),
# one thread per element, in double
_POLY = """
    double t = shifted ? 2.0 * x - 1.0 : x;
    if (n < 0) { y = 0.0; }
    else if (n == 0) { y = 1.0; }
    else {
        double p1 = (kind == 0 || kind == 5 || kind == 7) ? t
                  : (kind == 1 || kind == 4) ? 2.0 * t
                  : kind == 2 ? 2.0 * t - 1.0
                  : kind == 3 ? 2.0 * t + 1.0 : 1.0 - t;
        double p0 = 1.0;
        for (long long k = 1; k < n; ++k) {
            double p2;
            if (kind <= 3) p2 = 2.0 * t * p1 - p0;
            else if (kind == 4) p2 = 2.0 * t * p1 - 2.0 * k * p0;
            else if (kind == 5) p2 = t * p1 - k * p0;
            else if (kind == 6) p2 = ((2.0 * k + 1.0 - t) * p1 - k * p0) / (k + 1.0);
            else p2 = ((2.0 * k + 1.0) * t * p1 - k * p0) / (k + 1.0);
            p0 = p1;
            p1 = p2;
        }
        y = p1;
    }"""


@_cupy.memoize
def _poly_kernel() -> Any:
    return _cupy.require("orthogonal_poly").ElementwiseKernel(
        "float64 x, int64 n, int32 kind, bool shifted", "float64 y", _POLY, "ember_orthogonal_poly")


def orthogonal_poly(kind: str, x: Any, n: Any) -> Any:
    """Polynomial ``kind`` of degree ``n`` at ``x`` (CuPy arrays, broadcast): float64."""
    from ..cpu.poly import KINDS

    cp = _cupy.require("orthogonal_poly")
    shifted = kind.startswith("shifted_")
    code = KINDS[kind[len("shifted_"):] if shifted else kind]
    return _poly_kernel()(cp.asarray(x, dtype=cp.float64), cp.asarray(n).astype(cp.int64),
                          cp.int32(code), cp.bool_(shifted))
