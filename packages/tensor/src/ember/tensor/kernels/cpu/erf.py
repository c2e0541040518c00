"""erf, erfc, erfinv and ndtr as Numba loops over contiguous arrays, branch-free so that they
vectorize (float32 and float64; the caller computes other float dtypes in float32).

One form serves both tails. For ``a = |x|``::

    erfc(a) = exp(-a^2) * G(t) / (a + K),    t = (a - K) / (a + K)

where ``G(t) = (a + K) exp(a^2) erfc(a)`` is smooth on ``a`` in ``[0, inf)`` (the
substitution of Shepherd and Laframboise, "Chebyshev approximation of (1 + 2x) exp(x^2)
erfc x in 0 <= x < inf", Math. Comp. 36, 1981; here ``a + K`` in place of ``1 + 2x`` so that
one division gives both ``t`` and the factor). ``G`` is a polynomial in ``s``, an affine map
of ``t`` onto ``[-1, 1]`` over ``a`` in ``[0, A]`` (``A`` just past where erfc underflows):
Chebyshev interpolation at high precision (mpmath), converted to monomials (coefficients below
1.3 in magnitude, evaluated by Horner). Near zero ``erf(x) = x + x P(x^2)`` on ``|x| <= 1``,
fitted the same way (erfc is ``1 - erf`` below 1/2). ``tools/fit_erf.py`` recomputes every
coefficient.

- float64: 24 + 14 terms (truncation below 1e-17 relative). ``exp(-a^2)`` is
  ``exp(-h^2) exp(-d)`` with ``h`` the upper 26 bits of ``a`` (``h^2`` exact) and
  ``d = (a - h)(a + h)`` below 3e-5, its exp a cubic: the rounding of ``a^2`` would otherwise
  cost up to 700 ulp near the underflow. ``erf = 1 - erfc(|x|)`` (signed) above 1,
  ``erfc(x) = 2 - erfc(|x|)`` below -1/2. Against mpmath: erf within 1 ulp (as ``math.erf``),
  erfc within 5 ulp (``math.erfc`` 2 to 3: the rounding of the exp, the polynomial and
  three products add up), erfinv within 2 ulp.
- float32: in float32 arithmetic (16 lanes where float64 has 8), 10 + 6 terms (truncation
  near 3e-9), ``exp(-a^2)`` as ``exp(-p) (1 - d)`` for ``a^2 = p + d``, ``d = fma(a, a, -p)``
  (the square's rounding error, exact). Against float64 references (SciPy): erf within 1.6 ulp,
  erfc within 5, ndtr within 6.2, erfinv within 4 (``a^2`` and the rounding of each step;
  PyTorch's float32 erf is a rational approximation with an absolute error near 1e-7).
  256x1024: erf, erfc and ndtr 0.6 ms -> 0.23 ms, erfinv 1.6 ms -> 0.9 ms.
- erfinv: Giles' single-precision approximation ("Approximating the erfinv function", GPU
  Computing Gems, 2011: a polynomial in ``w = -log(1 - y^2)``, both of its branches computed)
  for float32; float64 replaces its second branch by a 12-term fit on ``w`` in ``[5, 36.2]``,
  out to the largest float64 below 1) and one Halley step ``x -= f / (f' + x f)`` for
  ``f = (erf(x) - y) sqrt(pi) / 2``; the residual is taken as ``(1 - |y|) - erfc(|x|)`` above
  ``|x| = 1`` so that the tails keep their precision. ``erfinv(+-1) = +-inf``, NaN outside
  ``[-1, 1]``.
- ndtr (and the GELU's ``Phi``): float64 ``erfc(-x / sqrt 2) / 2``; float32 the tail form in
  ``x = a sqrt 2`` (``Phi(-|x|) = exp(-x^2/2) G(s) / (|x| + K sqrt 2)``, ``G`` divided by
  sqrt 2; no rounding of ``x / sqrt 2``) and ``1/2 + x N(x^2)`` on ``|x| <= sqrt 2`` (``N``
  the near polynomial scaled).

Every input is clamped before it reaches exp, log or a polynomial (NaN and infinities are put
back at the end), so no loop raises a floating-point warning.

``gelu`` and ``gelu_backward`` (the exact, erf-based GELU) are one loop each: ``x Phi(x)`` and
``grad (Phi(x) + x phi(x))``, where the NumPy expression they replace made five passes and as
many temporaries; float64 with ``Phi(x) = 0.5 (1 + erf(x / sqrt 2))``, float32 with the
float32 ``Phi`` above (within 3 ulp of ``x``, as PyTorch's float32 GELU; 256x1024 forward
0.64 ms -> 0.22 ms).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._vmath import _FM, _bits_f64, _int_bits, vexp, vlog
from .elementwise import _fma

__all__ = ["erf", "erfc", "erfinv", "ndtr", "gelu", "gelu_backward"]

# G(s) (highest degree first); s = AB[0] t + AB[1]; K, A as in the docstring.
_K64, _A64, _AB64 = 4.0, 27.5, (1.1454545454545455, 0.1454545454545455)
_T64 = (
    2.0804096263597692e-11, 4.377868168577522e-11, -3.0348131892225517e-10,
    -6.591248729105752e-10, 3.1049807604088434e-09, 6.279048613321337e-09,
    -3.2169227999444374e-08, -4.4947691103120243e-08, 3.625408745432852e-07,
    8.126172456337197e-08, -4.090701741824104e-06, 6.4067468099578374e-06,
    3.496863432299087e-05, -0.00017842486574124006, 0.00013301697849323573,
    0.0020392625434236065, -0.01260596733604352, 0.045424315280143165,
    -0.12264282447762685, 0.26825826664180347, -0.4926063147850662,
    0.7736942963528799, -1.0493955751986048, 1.2336693816306283)
_K32, _A32, _AB32 = 3.0, 10.5, (1.2857142857142856, 0.2857142857142856)
# float32 arithmetic: 10 terms (3e-9 relative)
_T32 = (-3.407626997091823e-05, 2.2656502205067474e-05, 0.00057904821509662,
        -0.0014141760784333011, -0.006208852370575763, 0.05386783011067271,
        -0.20204759093530264, 0.5054173050720552, -0.9312182077416369, 1.3031767078122702)
# erf(x) / x as a polynomial in x^2 on [0, 1]
_S64 = (
    -4.2320376764874594e-12, 8.709755232851789e-11, -1.2164764337224506e-09,
    1.479243542696247e-08, -1.6364645854816389e-07, 1.6462045711013026e-06,
    -1.4925647581008593e-05, 0.00012055332903350668, -0.0008548327021945428,
    0.005223977625423455, -0.026866170645129854, 0.1128379167095512,
    -0.37612638903183754, 1.1283791670955126)
_S32 = (-0.0005654105859760388, 0.004923277665221193, -0.02671638509664073,
        0.11280364408032745, -0.3761234978454141, 1.1283791273927473)
# Giles' single-precision erfinv: w < 5 in w - 2.5, else in sqrt(w) - 3
_GA = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
       -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GB = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
       -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
# float64 in place of the second: erfinv(y) / y for w in [5, 36.2] (|y| up to the largest
# float64 below 1), a polynomial in s = AB[0] sqrt(w) + AB[1] (initial guess, about 1e-7)
_GB64 = (0.0010583651623864768, -0.0005632276233967909, -0.0037412964938595083,
         0.0043271643584695384, -0.00041513718775556787, 0.00010985945754841676,
         -0.002359381116097381, 0.0036363743434271937, -0.0048500491951575814,
         0.0033968788600461782, 1.908759278392957, 3.9673579600321704)
_GB64_AB = (0.5290199718010461, -2.182924618402161)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
_HI26 = np.int64(-(1 << 27))  # keeps the sign, the exponent and the upper 26 significand bits
_ONE_MINUS = 1.0 - 2.0 ** -53  # the largest float64 below 1
_SQRT1_2 = 1.0 / math.sqrt(2.0)

# helpers inlined into the cached ufuncs (Numba IR inlining): never compiled on their own
_jit_opts = dict(nogil=True, error_model="numpy", fastmath=set(_FM), inline="always")


def _horner(cs):
    """A function ``p(u)`` = the polynomial with coefficients ``cs`` (highest first), unrolled
    (a tuple loop leaves LLVM a loop it may not unroll before vectorizing)."""
    body = "    p = " + repr(cs[0]) + "\n"
    for c in cs[1:]:
        body += f"    p = p * u + {c!r}\n"
    ns: dict = {}
    exec("def p(u):\n" + body + "    return p\n", ns)
    return numba.njit(**_jit_opts)(ns["p"])


def _tail_fn():
    """``(erfc(a), exp(-a*a))`` for ``a`` in ``[0, A]`` in float64 arithmetic."""
    K, (al, be) = _K64, _AB64
    G = _horner(_T64)
    c1, c0 = al + be, (be - al) * K

    def tail(a):
        r = 1.0 / (a + K)
        g = G((c1 * a + c0) * r)
        h = _bits_f64(_int_bits(a) & _HI26)
        d = (a - h) * (a + h)
        e = vexp(-(h * h)) * (1.0 - d * (1.0 - d * (0.5 - d * (1.0 / 6.0))))
        return (g * r) * e, e

    return numba.njit(**_jit_opts)(tail)


def _make():
    """erf, erfc and erfinv of one float64 in float64 arithmetic, to be inlined into the
    loops."""
    tail = _tail_fn()
    S = _horner(_S64[:-1] + (_S64[-1] - 1.0,))  # erf(x) = x + x S(x^2): last rounding x + ...
    A = _A64
    GA, GB = _horner(_GA), _horner(_GB64)
    gb1, gb0 = _GB64_AB

    def erf(x):
        a = abs(x)
        b = a if a < A else A  # NaN -> A (put back below)
        s = x if b < 1.0 else (1.0 if x > 0 else -1.0)  # in [-1, 1]
        near = s + s * S(s * s)
        t = 1.0 - tail(b)[0]
        r = near if b < 1.0 else (t if x > 0 else -t)
        return x if x != x else r

    def erfc(x):
        a = abs(x)
        b = a if a < A else A
        t = tail(b)[0]
        s = x if b < 0.5 else 0.5  # below 1/2: 1 - erf(x) (erfc in [0.48, 1.52])
        near = 1.0 - (s + s * S(s * s))
        r = near if b < 0.5 else (t if x >= 0 else 2.0 - t)
        return x if x != x else r

    def erfinv(y):
        ay = abs(y)
        b = ay if ay < _ONE_MINUS else _ONE_MINUS
        w = -vlog((1.0 - b) * (1.0 + b))
        x0 = b * (GA(w - 2.5) if w < 5.0 else GB(gb1 * math.sqrt(w) + gb0))
        x0 = x0 if x0 < 6.0 else 6.0
        s = x0 if x0 < 1.0 else 1.0
        t, e = tail(x0)
        f = ((s + s * S(s * s)) - b) if x0 < 1.0 else ((1.0 - b) - t)
        f = f * _HALF_SQRT_PI
        x = x0 - f / (e + x0 * f)
        x = x if y > 0 else (-x if y < 0 else y)
        x = math.copysign(math.inf, y) if ay == 1.0 else x
        return np.nan if ay > 1.0 else (y if y != y else x)

    return [numba.njit(**_jit_opts)(f) for f in (erf, erfc, erfinv)]


_erf64, _erfc64, _erfinv64 = _make()


def _horner32(cs):
    """``_horner`` with float32 coefficients (the polynomial stays in float32 arithmetic)."""
    ns = {f"c{i}": np.float32(c) for i, c in enumerate(cs)}
    body = "".join(f"    p = p * u + c{i}\n" for i in range(1, len(cs)))
    exec("def p(u):\n    p = c0\n" + body + "    return p\n", ns)
    return numba.njit(**_jit_opts)(ns["p"])


def _make32():
    """erf, erfc, erfinv and ``(Phi(x), exp(-x^2 / 2))`` of one float32 in float32
    arithmetic, to be inlined into the loops (``Phi`` of NaN is finite: the callers put NaN
    back)."""
    f = np.float32
    r2 = math.sqrt(2.0)
    al, be = _AB32
    zero, half, one, two = f(0.0), f(0.5), f(1.0), f(2.0)
    G = _horner32(_T32)
    S = _horner32(_S32[:-1] + (_S32[-1] - 1.0,))
    K, A, c1, c0 = f(_K32), f(_A32), f(al + be), f((be - al) * _K32)
    GX = _horner32(tuple(c / r2 for c in _T32))
    N = _horner32(tuple(c / (2.0 * r2 * 2.0 ** k)
                        for k, c in zip(range(len(_S32) - 1, -1, -1), _S32)))
    KX, AX, c0x, RX = f(_K32 * r2), f(_A32 * r2), f((be - al) * _K32 * r2), f(r2)

    def tail_(a):  # (erfc(a), exp(-a^2)) for a in [0, A]
        r = one / (a + K)
        p = a * a
        e = vexp(-p)
        e = e - e * _fma(a, a, -p)
        return (G((c1 * a + c0) * r) * r) * e, e

    tail = numba.njit(**_jit_opts)(tail_)

    def erf(x):
        a = abs(x)
        b = a if a < A else A  # NaN -> A (put back below)
        s = x if b < one else (one if x > zero else -one)
        near = s + s * S(s * s)
        t = one - tail(b)[0]
        r = near if b < one else (t if x > zero else -t)
        return x if x != x else r

    def erfc(x):
        a = abs(x)
        b = a if a < A else A
        t = tail(b)[0]
        s = x if b < half else half  # below 1/2: 1 - erf(x)
        near = one - (s + s * S(s * s))
        r = near if b < half else (t if x >= zero else two - t)
        return x if x != x else r

    def phi(v):
        a = abs(v)
        b = a if a < AX else AX  # NaN -> AX; exp(-AX^2 / 2) is 0
        p = b * b
        e = vexp(-(half * p))
        e = e - e * (half * _fma(b, b, -p))
        r = one / (b + KX)
        q = e * (GX((c1 * b + c0x) * r) * r)
        s = v if b < RX else RX
        near = half + s * N(s * s)
        return (near if b < RX else (one - q if v > zero else q)), e

    GA, GB = _horner32(_GA), _horner32(_GB)
    top, six, nan, inf = f(1.0 - 2.0 ** -24), f(6.0), f(np.nan), f(np.inf)
    hsp, w5, w25, w3 = f(_HALF_SQRT_PI), f(5.0), f(2.5), f(3.0)

    def erfinv(y):  # as the float64 one, in float32: Giles' two branches, one Halley step
        ay = abs(y)
        b = ay if ay < top else top  # NaN -> top
        w = -vlog((one - b) * (one + b))
        x0 = b * (GA(w - w25) if w < w5 else GB(np.sqrt(w) - w3))
        x0 = x0 if x0 < six else six
        s = x0 if x0 < one else one
        t, e = tail(x0)
        d = ((s + s * S(s * s)) - b) if x0 < one else ((one - b) - t)
        d = d * hsp
        x = x0 - d / (e + x0 * d)
        x = x if y > zero else (-x if y < zero else y)
        x = (inf if y > zero else -inf) if ay == one else x
        return nan if ay > one else (y if y != y else x)

    return [numba.njit(**_jit_opts)(g) for g in (erf, erfc, erfinv, phi)]


_erf32, _erfc32, _erfinv32, _phi32 = _make32()

# Loops and not Numba ufuncs: LLVM does not inline a function this large into a ufunc's loop,
# and a call per element keeps the loop scalar. Module-level, so that the cache finds them.
_loop = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=set(_FM))


@_loop
def _loop32(x, out, which):
    # which: 0 erf, 1 erfc, 2 erfinv, 3 ndtr (a loop invariant: LLVM makes one loop of each)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (_erf32(v) if which == 0 else _erfc32(v) if which == 1 else
                  _erfinv32(v) if which == 2 else
                  (_phi32(v)[0] if v == v else v))


@_loop
def _loop64(x, out, which):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (_erf64(v) if which == 0 else _erfc64(v) if which == 1 else
                  _erfinv64(v) if which == 2 else 0.5 * _erfc64(-(v * _SQRT1_2)))


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2PI_F = np.float32(1.0 / math.sqrt(2.0 * math.pi))


# one loop per direction and dtype: a loop-invariant choice between the directions inside one
# loop cost half as much again as the forward alone
@_loop
def _gelu32(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v * _phi32(v)[0]


@_loop
def _gelu64(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v * (0.5 * (1.0 + _erf64(v * _SQRT1_2)))


@_loop
def _gelu_bwd32(x, g, out):
    for i in range(x.shape[0]):
        v = x[i]
        cdf, e = _phi32(v)
        out[i] = g[i] * (cdf + v * (_INV_SQRT_2PI_F * e))


@_loop
def _gelu_bwd64(x, g, out):
    for i in range(x.shape[0]):
        v = x[i]
        cdf = 0.5 * (1.0 + _erf64(v * _SQRT1_2))
        out[i] = g[i] * (cdf + v * (_INV_SQRT_2PI * vexp(-0.5 * (v * v))))


# dtypes, not scalar types: comparing a dtype with a scalar type converts the type each time
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _gelu(name: str, x: np.ndarray, g) -> np.ndarray:
    single = x.dtype == _F32
    if not (single or x.dtype == _F64) or (g is not None and g.dtype != x.dtype):
        raise TypeError(f"{name}(): no kernel for dtype {x.dtype}" +
                        ("" if g is None else f" and gradient dtype {g.dtype}"))
    if g is not None and g.shape != x.shape:
        raise ValueError(f"{name}(): gradient of shape {g.shape} does not match the input's "
                         f"{x.shape}")
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    if g is None:  # (ravel: a view of the contiguous arrays, cheaper than reshape)
        (_gelu32 if single else _gelu64)(x.ravel(), out.ravel())
    else:
        (_gelu_bwd32 if single else _gelu_bwd64)(x.ravel(), np.ascontiguousarray(g).ravel(),
                                                 out.ravel())
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """``x Phi(x)`` (the exact GELU) of a float32 / float64 array (a new array)."""
    return _gelu("gelu", x, None)


def gelu_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad (Phi(x) + x phi(x))``, the exact GELU's gradient (a new array)."""
    return _gelu("gelu_backward", x, grad)


_WHICH = {"erf": 0, "erfc": 1, "erfinv": 2, "ndtr": 3}


def _apply(name: str, x: np.ndarray) -> np.ndarray:
    dt = x.dtype
    single = dt == _F32
    if not (single or dt == _F64):
        raise TypeError(f"{name}(): no kernel for dtype {dt}")
    flags = x.flags  # (each read of flags builds an object)
    if not (flags.c_contiguous or flags.f_contiguous):
        x = np.ascontiguousarray(x)
    out = np.empty_like(x)  # same memory order
    # (ravel: a view of either contiguous order, cheaper than reshape)
    (_loop32 if single else _loop64)(x.ravel("A"), out.ravel("A"), _WHICH[name])
    return out


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a float32 / float64 array (a new array)."""
    return _apply("erf", x)


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc of a float32 / float64 array (a new array)."""
    return _apply("erfc", x)


def erfinv(x: np.ndarray) -> np.ndarray:
    """erfinv of a float32 / float64 array (a new array)."""
    return _apply("erfinv", x)


def ndtr(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF ``erfc(-x / sqrt 2) / 2`` of a float32 / float64 array (a new
    array; the tail below zero keeps erfc's relative precision)."""
    return _apply("ndtr", x)
