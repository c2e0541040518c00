"""Special functions: erf, erfc, erfinv, ndtr (NumPy has none), ndtri, i0, i0e, i1, i1e, k0,
k0e, k1, k1e, j0, j1, y0, y1, lgamma and polygamma (SciPy's are scalar Cephes code per
element). The CPU versions are the Numba loops of ``cpu/erf.py`` and ``cpu/cephes.py``
(compiled on first use, cached); the CUDA versions come from ``cupyx.scipy.special``.

Also device kernels that are not in the kernel table: ``nextafter`` (CPU: a branch-free loop
over the bits in ``cpu/elementwise.py``, where NumPy's calls libm per element, 15x slower at
256x1024 float32; CUDA: CuPy's ufunc), ``heaviside``, ``clamp`` (of tensor bounds), ``lerp``,
``rsqrt``, ``addcmul``, ``addcdiv`` and ``trunc_divide`` (CPU: one Numba loop each where
NumPy's expressions make three, two, three, two, two or three and two passes; CUDA: CuPy's
expressions)."""
from __future__ import annotations

import importlib
import math
from functools import partial

import numpy as np

from .._fpstate import quiet_call

_cpu = {}  # "erf", "cephes", "elementwise" -> its cpu module, imported by the first CPU call
_MODULE = {"erf": "erf", "erfc": "erf", "erfinv": "erf", "ndtr": "erf", "i0": "cephes",
           "lgamma": "cephes", "ndtri": "cephes", "k0": "cephes", "k0e": "cephes",
           "k1": "cephes", "k1e": "cephes", "j0": "cephes", "j1": "cephes", "y0": "cephes",
           "y1": "cephes", "i0e": "cephes",
           "i1": "cephes", "i1e": "cephes", "polygamma": "cephes", "nextafter": "elementwise",
           "entr": "logs", "xlogy": "logs", "xlog1py": "logs", "logit": "logs",
           "sinc": "sinc", "spherical_j0": "sinc", "lerp": "elementwise",
           "heaviside": "elementwise", "clamp": "elementwise", "addcmul": "elementwise",
           "addcdiv": "elementwise", "trunc_divide": "elementwise",
           "rsqrt": "elementwise"}


def _work(d):
    # other dtypes (float16, bfloat16) are computed in float32 and rounded once, on both devices
    return d if d.dtype.char in "fd" else d.astype(np.float32)


_cpu_fns = {}  # name -> its CPU function, looked up by the first CPU call


def _cpu_kernel(name: str):
    fn = _cpu_fns.get(name)
    if fn is None:
        module = _cpu.get(_MODULE[name])
        if module is None:
            module = _cpu[_MODULE[name]] = importlib.import_module(f".cpu.{_MODULE[name]}",
                                                                   __package__)
        fn = _cpu_fns[name] = getattr(module, name)
    return fn


# values at (+inf, -inf) where CuPy's differ from SciPy's and PyTorch's (which the CPU loops
# give): the scaled Bessel functions' limits (CuPy's k0e / k1e are NaN at +inf), and i1's NaN
# (an infinity times zero in Cephes)
_AT_INF = {"i0e": (0.0, 0.0), "i1e": (0.0, -0.0), "i1": (np.nan, np.nan),
           "k0e": (0.0, np.nan), "k1e": (0.0, np.nan)}


def _unary(name: str):
    """``f(xp, d)``: the special function ``name`` of array ``d`` on its device."""

    def f(xp, d):
        work = d if d.dtype.char in "fd" else _work(d)
        if xp is np:
            out = _cpu_kernel(name)(work)
        else:
            from .._cupy import special_functions

            out = getattr(special_functions(name), name)(work)
            if name in _AT_INF:
                pos, neg = _AT_INF[name]
                out = xp.where(xp.isinf(work), xp.where(work > 0, pos, neg).astype(out.dtype),
                               out)
        return out if out.dtype == d.dtype else out.astype(d.dtype)

    f.__name__ = f.__qualname__ = name
    return f


erf, erfc, erfinv, ndtr, ndtri, i0, i0e, i1, i1e, k0, k0e, k1, k1e, j0, j1, y0, y1 = map(
    _unary, ("erf", "erfc", "erfinv", "ndtr", "ndtri", "i0", "i0e", "i1", "i1e", "k0", "k0e",
             "k1", "k1e", "j0", "j1", "y0", "y1"))


def lgamma(xp, d):
    """``log |gamma(d)|``, ``inf`` at ``-inf`` as PyTorch (SciPy's ``gammaln`` gives ``-inf``;
    CUDA: CuPy's ``gammaln``, that point replaced)."""
    work = d if d.dtype.char in "fd" else _work(d)
    if xp is np:
        out = _cpu_kernel("lgamma")(work)
    else:
        from .._cupy import special_functions

        out = special_functions("lgamma").gammaln(work)
        out = xp.where(work == -xp.inf, xp.inf, out).astype(out.dtype, copy=False)
    return out if out.dtype == d.dtype else out.astype(d.dtype)


def polygamma(xp, n: int, d):
    """``polygamma(n, d)`` for ``n >= 1``: ``(-1)**(n+1) n! zeta(n+1, d)`` (SciPy's formula; on
    CUDA CuPy's ``zeta`` in float64, scaled in place)."""
    work = _work(d)
    if xp is np:
        out = _cpu_kernel("polygamma")(n, work)
    else:
        from .._cupy import special_functions

        out = special_functions("polygamma").zeta(np.float64(n + 1), work)
        out *= (-1.0) ** (n + 1) * (math.gamma(n + 1.0) if n < 171 else math.inf)
    return out if out.dtype == d.dtype else out.astype(d.dtype)


def entr(xp, d):
    """``-d log d`` (+0 at 0, -inf below)."""
    work = d if d.dtype.char in "fd" else _work(d)
    if xp is np:
        out = _cpu_kernel("entr")(work)
    else:
        r = xp.log(work)
        r *= work  # x log x, NaN at 0 and below: replaced, then negated in place
        r = xp.where(work < 0, xp.inf, xp.where(work == 0, -0.0, r))
        out = xp.negative(r, out=r)
    return out if out.dtype == d.dtype else out.astype(d.dtype)


def sinc(xp, d):
    """``sin(pi d) / (pi d)``, 1 at 0 (real or complex ``d``)."""
    if xp is np:
        return _cpu_kernel("sinc")(d)
    return xp.sinc(d)


def spherical_j0(xp, d):
    """``sin(d) / d``, 1 at 0 (real or complex ``d``)."""
    if xp is np:
        return _cpu_kernel("spherical_j0")(d)
    r = xp.sin(d)
    r /= d
    return xp.where(d == 0, 1, r)


def logit(xp, d, eps=None):
    """``log(p / (1 - p))`` of ``d``, ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is
    given."""
    work = d if d.dtype.char in "fd" else _work(d)
    if xp is np:
        out = _cpu_kernel("logit")(work, eps)
    else:
        if eps is not None:
            work = xp.clip(work, eps, 1 - eps)
        out = xp.log(work / (1 - work))
    return out if out.dtype == d.dtype else out.astype(d.dtype)


def _xlog(name: str, log):
    """``f(xp, x, y)``: ``x log(y)`` (``log`` of ``xp``, named), +0 where ``x`` is 0 unless
    ``y`` is NaN; broadcast, operands of one dtype."""

    def f(xp, x, y):
        dt = x.dtype
        if dt.char not in "fd":
            x, y = _work(x), _work(y)
        if xp is np:
            out = _cpu_kernel(name)(x, y)
        else:
            r = x * getattr(xp, log)(y)
            out = xp.where((x == 0) & (y == y), 0, r)
        return out if out.dtype == dt else out.astype(dt)

    f.__name__ = f.__qualname__ = name
    return f


xlogy, xlog1py = _xlog("xlogy", "log"), _xlog("xlog1py", "log1p")


def nextafter(xp, a, b):
    """The next float after ``a`` towards ``b``, broadcasting (operands of one float dtype,
    arrays or numbers)."""
    if xp is np:
        return _cpu_kernel("nextafter")(a, b)
    return quiet_call(xp.nextafter, a, b)  # stepping to infinity or a subnormal sets a flag


def trunc_divide(xp):
    """The device's ``f(a, b, out=None)`` of ``div(a, b, rounding_mode='trunc')`` on operands
    of one dtype (arrays or numbers): the quotient rounded to the dtype, then toward zero;
    integers exactly (the caller rejects a zero divisor); ``out`` receives it when given."""
    return _cpu_kernel("trunc_divide") if xp is np else partial(_trunc_divide, xp)


def _trunc_divide(xp, a, b, out=None):
    if (a if hasattr(a, "dtype") else b).dtype.kind in "iu":  # the floor, one up where inexact
        q = xp.floor_divide(a, b)
        r = q + ((q < 0) & (q * b != a)).astype(q.dtype)
    else:
        r = xp.trunc(xp.true_divide(a, b))
    if out is None:
        return r
    out[...] = r
    return out


def heaviside(xp, a, b):
    """``b`` where ``a`` is zero, 1 where it is positive, 0 elsewhere (NaN too), of float32 or
    float64 arrays of one dtype, broadcasting."""
    if xp is np:
        return _cpu_kernel("heaviside")(a, b)
    return xp.where(a == 0, b, a > 0)


def clamp(xp, x, lo, hi):
    """``minimum(maximum(x, lo), hi)`` of float32 or float64 arrays of one dtype (NaN in any
    of them propagates), broadcasting."""
    if xp is np:
        return _cpu_kernel("clamp")(x, lo, hi)
    out = xp.maximum(x, lo)
    try:
        return xp.minimum(out, hi, out=out)  # (into the first pass's result)
    except ValueError:  # the upper bound broadcasts the result further
        return xp.minimum(out, hi)


def addcmul(xp, x, a, b, value):
    """``x + value * a * b`` of float32 or float64 arrays of one dtype and a Python number,
    broadcasting, each step rounded to the dtype in PyTorch's order."""
    if xp is np:
        return _cpu_kernel("addcmul")(x, a, b, value)
    return x + value * a * b


def addcdiv(xp, x, a, b, value):
    """``x + value * a / b``, as :func:`addcmul`."""
    if xp is np:
        return _cpu_kernel("addcdiv")(x, a, b, value)
    return x + value * a / b


def lerp(xp, a, b, w):
    """``a + w (b - a)`` of float32 or float64 arrays of one dtype and a weight (an array of
    that dtype or a Python number), broadcasting, each step rounded to the dtype."""
    if xp is np:
        return _cpu_kernel("lerp")(a, b, w)
    return a + w * (b - a)


def rsqrt(xp, d):
    """``1 / sqrt(d)`` of a float32 or float64 array, each step correctly rounded."""
    if xp is np:
        return _cpu_kernel("rsqrt")(d)
    r = xp.sqrt(d)
    return xp.divide(1, r, out=r)  # (into sqrt's result: one allocation)
