"""Elementwise kernels for the ops whose NumPy / SciPy versions are scalar loops: ``fmod``,
``remainder`` and ``floor_divide`` (broadcasting binary ops), and ``nan_to_num`` (NumPy's
takes several passes and temporaries: 200 us at 256x1024 float32 against 25 for one loop).

Operands are NumPy arrays of one dtype or Python numbers; the result has their broadcast
shape. Each call is brought to one form before the kernel runs: every operand a C-contiguous
``(R or 1, C or 1)`` view of the result's ``(R, C)`` (same-shape operands, a number, a row or a
column broadcast), so that the inner loop runs over contiguous memory and vectorizes; operands
that fit no such form (a non-contiguous view, a broadcast over three or more collapsed dims)
are copied to the full shape first.

Semantics are PyTorch's, IEEE throughout (no fast-math):

- ``fmod`` is C's ``fmod`` (sign of the dividend), exact: ``q = trunc(x / y)`` and
  ``r = fma(-q, y, x)`` (exact whenever ``|q| < 2**52``, one correction when ``x / y``
  rounded up to the next integer), vectorized; the rare elements outside that range (huge
  quotients, ``y`` infinite, NaN, zero divisors) are recomputed by libm's ``fmod`` in a second
  scalar pass. float32 is computed in float64 and rounds exactly.
- ``remainder`` is PyTorch's ``fmod(a, b)`` plus ``b`` where the two signs differ (Python's
  ``%``; a zero result keeps the dividend's sign as in PyTorch, NumPy gives the divisor's).
- ``floor_divide`` is PyTorch's ``div_floor_floating`` (``(a - fmod(a, b)) / b`` corrected and
  rounded to an integer; ``a / b`` for a zero divisor) in the input dtype.
- Integers: Python's ``//`` and ``%``, C's ``fmod``; ``x // -1`` wraps (``INT_MIN // -1`` is
  ``INT_MIN``, as NumPy) instead of trapping. The caller rejects zero divisors (PyTorch raises,
  see ``_pointwise._check_int_divisor``): the kernels give 0 there.
- float16 is computed in float32 and rounded once; bool and complex raise TypeError.
- ``trunc_divide`` (``div(rounding_mode='trunc')``) is PyTorch's ``trunc(a / b)``, the
  quotient rounded to the dtype first, in one vectorized pass over the same row forms (NumPy's
  divide and trunc made two); integers exactly, from the floor quotient.

``logaddexp`` and ``logaddexp2`` are PyTorch's ``m + log1p(exp(-|a - b|))`` (``exp2`` and a
factor ``1 / ln 2`` for base 2), ``m = max(a, b)``, one branch-free pass over ``_vmath``'s
vectorized exp and log1p in the input dtype (float16 through float32); equal infinities give
themselves (``-inf`` for two ``-inf``), NaN propagates.

``nextafter`` is C's (and PyTorch's, float16 included: ``b`` where ``a == b``, so
``nextafter(0, -0) = -0``) as integer arithmetic on the bits, one branch-free loop per width
(NumPy's float32 / float64 loops call libm per element: 15x slower at 256x1024).

``outer`` is the product of a column and a row, ``out[i, j] = a[i] * b[j]``, for float32 and
float64: one rounding per element, the same values as
a GEMM with inner size 1, which is what NumPy runs for ``a[:, None] @ b[None, :]`` at several
times the cost (a weight gradient from one row: 320x128 float32 7.3 us through ``np.dot``,
2.7 us here; 1024x1024 1.9 ms, 74 us here), and NumPy's broadcast ``multiply`` pays a
call of its inner loop per row (13.7 us at 320x128).

``clamp`` with array bounds is NumPy's ``minimum(maximum(x, lo), hi)`` (NaN in any operand
propagates) in one pass over the ``(R or 1, C or 1)`` row form of three operands, a column's
value held as a scalar so that every row loop vectorizes; ``heaviside`` is PyTorch's (0 for
NaN), a Numba ufunc of selects on (in)equality tests.

At 256x1024 float32, one thread: fmod 0.3 ms (NumPy 3.7 ms, PyTorch 0.32 ms).
"""

from __future__ import annotations

import math
import operator

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic, overload

from ..._fpstate import quiet, quiet_call
from ._vmath import like, like_scalar, vexp, vexp2, vlog1p

__all__ = ["fmod", "remainder", "floor_divide", "trunc_divide", "nan_to_num", "logaddexp",
           "logaddexp2", "outer", "hypot", "sign", "copysign", "angle", "frac", "round_decimals",
           "make_complex", "nextafter", "lerp", "rsqrt", "heaviside", "clamp", "addcmul",
           "addcdiv"]


def _jit(fn):
    """Cached, nogil, NumPy's error model (no ZeroDivisionError branch in the loops) and IEEE
    arithmetic (no fast-math: NaN, inf and signed zeros behave as in C)."""
    return numba.njit(cache=True, nogil=True, error_model="numpy")(fn)


def _inline(fn):
    return numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")(fn)


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``: the FMA instruction, else libm)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return a(a, a, a), codegen


def _one(x):
    """1 in the type of the scalar ``x`` (Numba would widen ``float32 - 1`` to float64)."""
    raise NotImplementedError("only callable from Numba kernels")


@overload(_one)
def _ov_one(x):
    t = x  # the Numba type of the scalar

    def impl(x):
        return t(1)

    return impl


_QMAX = 2.0 ** 52  # |trunc(x / y)| below this: the fma remainder is exact (one correction)


# --------------------------------------------------------------------------- element functions
@_inline
def _fmod_fast(x, y):
    """fmod of two float64 values where ``_fmod_ok``; garbage elsewhere (never a trap)."""
    q = np.trunc(x / y)
    r = _fma(-q, y, x)
    if r != 0.0 and (r < 0.0) != (x < 0.0):  # x / y rounded up to the next integer
        r += np.copysign(abs(y), x)
    return np.copysign(r, x)


@_inline
def _fmod_ok(x, y):
    return abs(np.trunc(x / y)) < _QMAX and abs(y) != math.inf


@_inline
def _rem_fix(m, y):
    """PyTorch's remainder from ``m = fmod(x, y)``."""
    return m + y if m != 0 and (y < 0) != (m < 0) else m


@_inline
def _floordiv_fix(x, y, m):
    """PyTorch's ``div_floor_floating`` from ``m = fmod(x, y)`` (all in the input dtype)."""
    if y == 0:
        return x / y
    one = _one(x)
    div = (x - m) / y
    if m != 0 and (y < 0) != (m < 0):
        div -= one
    if div != 0:
        fd = np.floor(div)
        if div - fd > one / 2:
            fd += one
        return fd
    return np.copysign(div - div, x / y)


# --------------------------------------------------------------------------- float rows
# Each row kernel takes 1-d C-contiguous ``a``, ``b`` (length n or 1) and ``out`` (length n).
# mode: 0 fmod, 1 remainder, 2 floor_divide. The first pass is branch-free over the fast
# fmod and vectorizes; elements outside its range are redone with libm's fmod.


@_inline
def _finish(x, y, m, mode):
    if mode == 0:
        return m
    if mode == 1:
        return _rem_fix(m, y)
    return _floordiv_fix(x, y, m)


@_jit
def _float_rows(a, b, out, mode):
    R, n = out.shape
    for r in range(R):
        ar = a[r if a.shape[0] > 1 else 0]
        br = b[r if b.shape[0] > 1 else 0]
        o = out[r]
        ok = True
        if ar.shape[0] == n and br.shape[0] == n:
            for i in range(n):
                x, y = np.float64(ar[i]), np.float64(br[i])
                ok &= _fmod_ok(x, y)
                o[i] = _fmod_fast(x, y)
        elif br.shape[0] == 1:
            y = np.float64(br[0])
            for i in range(n):
                x = np.float64(ar[i])
                ok &= _fmod_ok(x, y)
                o[i] = _fmod_fast(x, y)
        else:
            x = np.float64(ar[0])
            for i in range(n):
                y = np.float64(br[i])
                ok &= _fmod_ok(x, y)
                o[i] = _fmod_fast(x, y)
        if not ok:
            sa, sb = ar.shape[0] > 1, br.shape[0] > 1
            for i in range(n):
                x, y = np.float64(ar[i * sa]), np.float64(br[i * sb])
                if not _fmod_ok(x, y):
                    o[i] = np.fmod(x, y)
        if mode != 0:
            if ar.shape[0] == n and br.shape[0] == n:
                for i in range(n):
                    o[i] = _finish(ar[i], br[i], o[i], mode)
            elif br.shape[0] == 1:
                y = br[0]
                for i in range(n):
                    o[i] = _finish(ar[i], y, o[i], mode)
            else:
                x = ar[0]
                for i in range(n):
                    o[i] = _finish(x, br[i], o[i], mode)


# --------------------------------------------------------------------------- logaddexp
_INV_LN2 = 1.4426950408889634


@_inline
def _lae(x, y):
    m = x if x > y else y
    r = m + vlog1p(vexp(-abs(x - y)))
    return x if (x == y and abs(x) == math.inf) else r  # equal infinities: themselves


@_inline
def _lae2(x, y):
    m = x if x > y else y
    r = m + vlog1p(vexp2(-abs(x - y))) * like_scalar(_INV_LN2, x)
    return x if (x == y and abs(x) == math.inf) else r


@_jit
def _lae_rows(a, b, out, base2):
    # module-level (a kernel made by a closure misses Numba's disk cache: it would compile
    # again in every process); the base is a loop invariant that LLVM hoists
    R, n = out.shape
    for r in range(R):
        ar = a[r if a.shape[0] > 1 else 0]
        br = b[r if b.shape[0] > 1 else 0]
        o = out[r]
        if ar.shape[0] == n and br.shape[0] == n:
            for i in range(n):
                o[i] = _lae2(ar[i], br[i]) if base2 else _lae(ar[i], br[i])
        elif br.shape[0] == 1:
            y = br[0]
            for i in range(n):
                o[i] = _lae2(ar[i], y) if base2 else _lae(ar[i], y)
        else:
            x = ar[0]
            for i in range(n):
                o[i] = _lae2(x, br[i]) if base2 else _lae(x, br[i])


def _rows_form(a, b, work):
    """The broadcast shape of ``a`` and ``b`` (arrays or numbers, as ``work``), its ``(R, C)``
    row form and the operands' ``(R or 1, C or 1)`` views of it (copied to the full shape
    first when they fit no such view); ValueError when they don't broadcast."""
    xa, xb = _operand(a, work), _operand(b, work)
    shape, form = _two_d(xa, xb)
    if form is None:
        xa, xb = _full(xa, shape), _full(xb, shape)
        form = _two_d(xa, xb)[1]
    return shape, form[0], form[1]


def _logaddexp(a, b, base2: bool, out):
    if a.__class__ is _nd and b.__class__ is _nd and a.dtype == b.dtype \
            and a.dtype.char in "fd":  # one float dtype
        if a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
            res = np.empty(a.shape, a.dtype)  # one shape: one row (inline)
            n = res.size
            if n:
                _lae_rows(a.reshape(1, n), b.reshape(1, n), res.reshape(1, n), base2)
            return res if out is None else _deliver(res, res.dtype, out)
        shape, form = _two_d(a, b)  # the row form straight away
        if form is not None:
            (R, C), (va, vb) = form
            res = np.empty(shape, a.dtype)
            if R * C:
                _lae_rows(va, vb, res.reshape(R, C), base2)
            return res if out is None else _deliver(res, res.dtype, out)
    dt = _result_dtype(a, b)
    if dt.kind != "f":
        raise TypeError(f"{'logaddexp2' if base2 else 'logaddexp'}: no kernel for dtype {dt}")
    work = _F32 if dt == _F16 else dt
    shape, (R, C), (va, vb) = _rows_form(a, b, work)
    res = np.empty(shape, dtype=work)
    if res.size:
        _lae_rows(va, vb, res.reshape(R, C), base2)
    return _deliver(res, dt, out)


def _deliver(res, dt, out):
    """``res`` (computed in float32 for float16) in ``dt``, or written into ``out``."""
    if res.dtype != dt:
        res = res.astype(dt)
    if out is None:
        return res
    np.copyto(out, res, casting="unsafe")
    return out


def logaddexp(a, b, out=None):
    """PyTorch's ``logaddexp``: ``log(exp(a) + exp(b))`` of real floats, broadcasting."""
    return _logaddexp(a, b, False, out)


def logaddexp2(a, b, out=None):
    """PyTorch's ``logaddexp2``: ``log2(2**a + 2**b)`` of real floats, broadcasting."""
    return _logaddexp(a, b, True, out)


# ------------------------------------------ sign, copysign, real angle, frac, float32 hypot
# NumPy ufuncs whose loops Numba compiles (on first use; cached on disk): NumPy's own loops for
# these are scalar. Called as plain ufuncs (a third of a microsecond), NumPy broadcasting; the
# wrappers of the unary ones look theirs up in _UFUNCS and test contiguity themselves (a call
# of _ufunc, _dense or _array costs ~50 ns, a sixth of the ufunc's on a small array)
_UFUNCS: dict = {}
_KEEP: list = []


def _ufunc(name: str):
    f = _UFUNCS.get(name)
    if f is None:
        opts = dict(cache=True, nopython=True)  # IEEE: NaN, inf and signed zeros as in C

        @numba.vectorize(["float32(float32)", "float64(float64)"], **opts)
        def _sign(v):  # +0 for either zero, NaN for NaN (NumPy's and PyTorch's); only
            zero = like_scalar(0.0, v)  # (in)equality tests, which raise no flag on NaN
            r = math.copysign(like_scalar(1.0, v), v)
            r = r if v != zero else zero
            return r if v == v else v

        # the squares and their sum exact or rounded once in float64 (no overflow), then the
        # square root rounded to float32: hypotf's result but for ties in double rounding; an
        # infinite operand gives inf even beside a NaN, as C's hypot
        @numba.vectorize(["float32(float32, float32)"], **opts)
        def _hypot32(x, y):
            a, b = np.float64(x), np.float64(y)
            r = np.float32(math.sqrt(a * a + b * b))
            return np.float32(math.inf) if abs(x) == math.inf or abs(y) == math.inf else r

        @numba.vectorize(["float32(float32, float32)", "float64(float64, float64)"], **opts)
        def _copysign(x, y):  # a bit operation (NumPy's loop does not vectorize)
            return math.copysign(x, y)

        @numba.vectorize(["float32(float32)", "float64(float64)"], **opts)
        def _angle(v):  # pi below 0, else 0 (-0 too), NaN for NaN: PyTorch's real angle
            zero = like_scalar(0.0, v)
            neg = math.copysign(like_scalar(1.0, v), v) < zero  # (never NaN: no flag raised)
            r = like_scalar(math.pi, v) if neg and v != zero else zero
            return r if v == v else v

        @numba.vectorize(["float32(float32)", "float64(float64)"], **opts)
        def _rsqrt(v):  # each step correctly rounded, as NumPy's sqrt and divide
            return like_scalar(1.0, v) / np.sqrt(v)

        @numba.vectorize(["float32(float32)", "float64(float64)"], **opts)
        def _frac(v):  # PyTorch's x - trunc(x): NaN at the infinities, +0 at the integers
            return v - np.trunc(v)

        # a complex number from its parts (NaN, infinities and signed zeros kept as they are)
        @numba.vectorize(["complex64(float32, float32)", "complex128(float64, float64)"], **opts)
        def _make_complex(re, im):
            return complex(re, im)

        # C's nextafter on the bits of the floats (their signed integers), one per width;
        # NumPy's loop calls libm per element (15x slower at 256x1024 float32)
        @numba.vectorize(["int16(int16, int16)"], **opts)
        def _next16(x, y):
            return _next_bits(x, y, 0x7C00, 0x7FFF)

        @numba.vectorize(["int32(int32, int32)"], **opts)
        def _next32(x, y):
            return _next_bits(x, y, 0x7F800000, 0x7FFFFFFF)

        @numba.vectorize(["int64(int64, int64)"], **opts)
        def _next64(x, y):
            return _next_bits(x, y, 0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF)

        @numba.vectorize(["float32(float32, float32)", "float64(float64, float64)"], **opts)
        def _heaviside(x, v):  # NaN gives 0; (in)equality tests and the sign bit only
            pos = math.copysign(like_scalar(1.0, x), x) > like_scalar(0.0, x)  # (no flag
            one = like_scalar(1.0, x) if pos and x == x else like_scalar(0.0, x)  # on NaN)
            return v if x == 0 else one

        made = dict(sign=_sign, hypot32=_hypot32, copysign=_copysign, angle=_angle,
                    heaviside=_heaviside,
                    frac=_frac, rsqrt=_rsqrt, make_complex=_make_complex, next2=_next16,
                    next4=_next32, next8=_next64)
        _KEEP.extend(made.values())  # (the DUFuncs own the code the loops point into)
        _UFUNCS.update({k: v.ufunc for k, v in made.items()})
        f = _UFUNCS[name]
    return f


@_inline
def _next_bits(ix, iy, inf, mag):
    """C's ``nextafter`` on the bits of two floats as signed integers (sign and magnitude):
    ``mag`` masks the magnitude, ``inf`` is infinity's. Integer selects only: no flag."""
    x, y = np.int64(ix), np.int64(iy)  # (sign-extended: the integer order is the float's
    ax, ay = x & mag, y & mag  # for positive values, and reversed for negative ones)
    kx, ky = x ^ ((x >> 63) & mag), y ^ ((y >> 63) & mag)  # keys in the float order
    r = x + 1 if (ky > kx) == (x > 0) else x - 1  # one step in magnitude, away or back
    r = (y & ~mag) | 1 if ax == 0 else r  # from a zero: the least subnormal of y's sign
    r = y if (kx == ky) | ((ax | ay) == 0) else r  # x == y (either zero): y
    r = y if ay > inf else r
    return x if ax > inf else r  # NaN: the NaN operand


def _array(r):
    """A ufunc's result as an array (NumPy gives a scalar for 0-d operands)."""
    return r if r.__class__ is np.ndarray else np.asarray(r)


def _dense(x):
    """``x`` itself, or a C-contiguous copy of a strided or broadcast one (a Numba-compiled
    loop reached through NumPy's buffered iteration is many times slower)."""
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def hypot(a, b, out=None):
    """``sqrt(a**2 + b**2)`` of two float arrays of one dtype, broadcasting: float32 (float16
    through it) as a float64 sum of squares, a loop that vectorizes (NumPy's calls libm's
    ``hypotf`` per element: 7x slower at 256x1024); float64 NumPy's (libm's ``hypot``, scaled
    against overflow). Other dtypes raise TypeError."""
    if a.__class__ is _nd and b.__class__ is _nd and out is None and a.dtype.char == "f" \
            and b.dtype.char == "f" and a.flags.c_contiguous and b.flags.c_contiguous:
        # (an overflow is inf, as in PyTorch: no NumPy warning)
        return _array(quiet_call(_UFUNCS.get("hypot32") or _ufunc("hypot32"), a, b))
    dt = _result_dtype(a, b)
    if dt.kind != "f":
        raise TypeError(f"hypot: no kernel for dtype {dt}")
    with quiet():
        if dt == _F64:
            return np.hypot(a, b, out=out)
        r = _array(_ufunc("hypot32")(_dense(_operand(a, _F32)), _dense(_operand(b, _F32))))
        return _deliver(r, dt, out)  # (float16's cast may overflow: quietly)


def copysign(a, b, out=None):
    """The magnitude of ``a`` with the sign of ``b``, float arrays (or numbers) of one float
    dtype, broadcasting (float16 through float32: exact); a bit operation per element, where
    NumPy's loop is scalar (4x slower at 256x1024). Other dtypes raise TypeError."""
    if a.__class__ is _nd and b.__class__ is _nd and out is None and a.dtype.char in "fd" \
            and a.dtype == b.dtype and a.flags.c_contiguous and b.flags.c_contiguous:
        r = (_UFUNCS.get("copysign") or _ufunc("copysign"))(a, b)
        return r if r.__class__ is _nd else np.asarray(r)
    dt = _result_dtype(a, b)
    if dt.kind != "f":
        raise TypeError(f"copysign: no kernel for dtype {dt}")
    work = _F32 if dt == _F16 else dt
    r = _array(_ufunc("copysign")(_dense(_operand(a, work)), _dense(_operand(b, work))))
    return _deliver(r, dt, out)


def heaviside(a, b):
    """PyTorch's ``heaviside``: ``b`` where ``a`` is zero (either sign), 1 where it is
    positive, 0 elsewhere (NaN too), for float32 or float64 arrays of one dtype,
    broadcasting; one pass where NumPy's select of two comparisons makes three (4x64 float32:
    2.6 us against 0.5). Other dtypes raise TypeError."""
    if a.dtype != b.dtype or a.dtype.char not in "fd":
        raise TypeError(f"heaviside: no kernel for dtypes {a.dtype} and {b.dtype}")
    r = (_UFUNCS.get("heaviside") or _ufunc("heaviside"))(
        a if a.flags.c_contiguous else np.ascontiguousarray(a),  # (_dense's, inline)
        b if b.flags.c_contiguous else np.ascontiguousarray(b))
    return r if r.__class__ is _nd else np.asarray(r)


def angle(x):
    """PyTorch's ``angle`` of a real float array: pi where ``x < 0``, else 0 (NaN stays NaN);
    a new array of ``x``'s dtype (float16 through float32). Other dtypes raise TypeError."""
    if x.dtype == _F16:
        return angle(x.astype(_F32)).astype(_F16)
    if x.dtype.char not in "fd":
        raise TypeError(f"angle: no kernel for dtype {x.dtype}")
    r = (_UFUNCS.get("angle") or _ufunc("angle"))(x if x.flags.c_contiguous else _dense(x))
    return r if r.__class__ is _nd else np.asarray(r)


def sign(x):
    """``sign(x)`` (-1, 0 or 1; +0 for either zero, NaN for NaN) of a float32 or float64
    array, a vectorized loop (NumPy's float loop is scalar: 4x slower at 256x1024); a new
    array of ``x``'s shape and dtype. Other dtypes raise TypeError."""
    if x.dtype.char not in "fd":
        raise TypeError(f"sign: no kernel for dtype {x.dtype}")
    r = (_UFUNCS.get("sign") or _ufunc("sign"))(x if x.flags.c_contiguous else _dense(x))
    return r if r.__class__ is _nd else np.asarray(r)


def frac(x):
    """``x - trunc(x)`` (PyTorch's ``frac``: NaN at the infinities, +0 at the integers) of a
    float32 or float64 array, one vectorized loop (NumPy's trunc and subtract are two passes:
    50 us against 25 at 256x1024 float32); a new array of ``x``'s shape and dtype. An infinity
    sets NumPy's invalid flag: the caller quiets NumPy. Other dtypes raise TypeError."""
    if x.dtype.char not in "fd":
        raise TypeError(f"frac: no kernel for dtype {x.dtype}")
    r = (_UFUNCS.get("frac") or _ufunc("frac"))(x if x.flags.c_contiguous else _dense(x))
    return r if r.__class__ is _nd else np.asarray(r)


@_jit
def _lerp_flat(a, b, w, out):
    # NumPy's expression a + w * (b - a), each step rounded to the dtype (IEEE, no fma), in
    # one pass; w a number, held in the dtype as NumPy holds a Python number (a Numba ufunc
    # of the three keeps the weight's zero stride and its loop scalar: slower than NumPy)
    w = like(w, a)
    for i in range(out.shape[0]):
        out[i] = a[i] + w * (b[i] - a[i])


@_jit
def _lerp_flat_w(a, b, w, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + w[i] * (b[i] - a[i])


def lerp(a, b, w):
    """``a + w (b - a)`` of float32 or float64 arrays ``a`` and ``b`` of one dtype and a weight
    ``w`` (an array of that dtype or a Python number, which is held in the dtype, as NumPy
    holds it), broadcasting: NumPy's expression rounded step by step, in one vectorized pass
    (NumPy's three passes and their temporaries: 95 us against 36 at 256x1024 float32); a
    new C-contiguous array. An operand that is broadcast or not C-contiguous is copied to the
    result's shape first. ValueError where they do not broadcast; other dtypes raise
    TypeError."""
    dt = a.dtype
    if b.dtype != dt or dt.char not in "fd":
        raise TypeError(f"lerp: no kernel for dtypes {dt} and {b.dtype}")
    arr = w.__class__ is _nd
    if arr and w.dtype != dt:
        raise TypeError(f"lerp: no kernel for a weight of dtype {w.dtype} with {dt}")
    shape = a.shape
    if b.shape != shape or (arr and w.shape != shape):  # (np.broadcast: C; broadcast_shapes
        shape = (np.broadcast(a, b, w) if arr else np.broadcast(a, b)).shape  # is Python)
    out = np.empty(shape, dt)
    if out.size:  # (ravel: a view of a C-contiguous array of the full shape)
        fa, fb = _full(a, shape).ravel(), _full(b, shape).ravel()
        if arr:
            _lerp_flat_w(fa, fb, _full(w, shape).ravel(), out.ravel())
        else:
            _lerp_flat(fa, fb, float(w), out.ravel())
    return out


def _full(x, shape):
    """``x`` as a C-contiguous array of ``shape`` (itself where it is one; a 0-d ``x`` of a
    number stays 0-d where ``shape`` is ``()``)."""
    if x.shape == shape and x.flags.c_contiguous:
        return x
    full = np.empty(shape, x.dtype)  # (np.broadcast_to builds its view in Python: 10 us)
    full[...] = x
    return full


def rsqrt(x):
    """``1 / sqrt(x)`` of a float32 or float64 array, the square root and the quotient each
    correctly rounded (NumPy's sqrt and divide, and PyTorch's values) in one vectorized pass
    where NumPy makes two (256x1024 float32 120 us against 83; PyTorch 77); a new array of
    ``x``'s shape and dtype. A negative ``x`` or a zero sets NumPy's invalid or divide flag:
    the caller quiets NumPy. Other dtypes raise TypeError."""
    if x.dtype.char not in "fd":
        raise TypeError(f"rsqrt: no kernel for dtype {x.dtype}")
    r = (_UFUNCS.get("rsqrt") or _ufunc("rsqrt"))(x if x.flags.c_contiguous else _dense(x))
    return r if r.__class__ is _nd else np.asarray(r)  # (a NumPy scalar from 0-d)


def make_complex(re, im):
    """The complex array ``re + i im`` of two float32 or float64 arrays of one dtype,
    broadcasting (complex64 / complex128), one pass (writing the parts of an empty complex
    array through its ``real`` and ``imag`` views copies each at a stride: 3x slower at
    256x1024). Other dtypes raise TypeError."""
    if re.dtype != im.dtype or re.dtype.char not in "fd":
        raise TypeError(f"make_complex: no kernel for dtypes {re.dtype} and {im.dtype}")
    return _array(_ufunc("make_complex")(re, im))


@_jit
def _round_decimals(x, out, f, neg):
    # NumPy's round to decimal places: x * f, rint, / f (x / f, rint, * f below 0), with f in
    # x's dtype; an njit loop over the flattened arrays (as a ufunc, the scalar operands' zero
    # strides kept the loop scalar); the direction is a loop invariant
    f = like(f, x)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = np.rint(v / f) * f if neg else np.rint(v * f) / f


def round_decimals(x, decimals: int):
    """``x`` rounded half to even to ``decimals`` decimal places (a negative count rounds to
    tens, hundreds...), NumPy's ``round``'s values (its factor ``10**|decimals|`` in ``x``'s
    dtype) in one vectorized pass where NumPy's makes three; a float32 or float64 array, a new
    C-contiguous array of its shape and dtype. Other dtypes raise TypeError."""
    if x.dtype.char not in "fd":
        raise TypeError(f"round_decimals: no kernel for dtype {x.dtype}")
    decimals = operator.index(decimals)
    n = -decimals if decimals < 0 else decimals
    x = _dense(x)
    out = np.empty(x.shape, x.dtype)
    # (ravel: views of the contiguous arrays; 10**n beyond float64's range is inf, as NumPy's)
    _round_decimals(x.ravel(), out.ravel(), 10.0 ** n if n <= 308 else math.inf, decimals < 0)
    return out


def nextafter(a, b):
    """C's ``nextafter(a, b)``: the next float after ``a`` towards ``b`` (``b`` where they
    are equal, NaN where either is), float16, float32 or float64 arrays (or numbers) of one
    dtype, broadcasting; a new array. Other dtypes raise TypeError."""
    if a.__class__ is _nd and b.__class__ is _nd and a.dtype == b.dtype:
        dt = a.dtype  # (two arrays of one dtype: the operands as they are)
    else:
        dt = _result_dtype(a, b)
        a, b = _operand(a, dt), _operand(b, dt)
    bits = _NEXT_BITS.get(dt)
    if bits is None:
        raise TypeError(f"nextafter: no kernel for dtype {dt}")
    ints, name = bits
    r = (_UFUNCS.get(name) or _ufunc(name))(a.view(ints), b.view(ints))
    return (r if r.__class__ is _nd else np.asarray(r)).view(dt)


# float dtype -> its bits' signed integer dtype and the ufunc over them
_NEXT_BITS = {np.dtype(f"f{n}"): (np.dtype(f"i{n}"), f"next{n}") for n in (2, 4, 8)}


@_jit
def _outer_flat(a, b, out):
    m, n = a.shape[0], b.shape[0]
    if n == 1:  # a column: one contiguous loop (a loop per one-element row is 4x slower)
        b0 = b[0]
        for i in range(m):
            out[i] = a[i] * b0
        return
    for i in range(m):
        ai = a[i]
        k = i * n
        for j in range(n):
            out[k + j] = ai * b[j]


_OUTER_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def outer(a, b, out=None):
    """``a[i] * b[j]`` as an ``(m, n)`` array, for 1-d ``a`` (m,) and ``b`` (n,) both float32
    or both float64; ``out``, C-contiguous of that shape and dtype, receives it when given."""
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: expected two 1-d arrays, got shapes {a.shape} and {b.shape}")
    if a.dtype != b.dtype or a.dtype not in _OUTER_DTYPES:
        raise TypeError(f"outer: no kernel for dtypes {a.dtype} and {b.dtype} (both "
                        "float32 or both float64)")
    shape = (a.shape[0], b.shape[0])
    if out is None:
        out = np.empty(shape, dtype=a.dtype)
    elif out.shape != shape or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise ValueError(f"outer: out must be C-contiguous {shape} {a.dtype}, got "
                         f"{out.shape} {out.dtype}")
    if out.size:
        _outer_flat(a, b, out.reshape(-1))
    return out


# --------------------------------------------------------------------------- host side
_nd = np.ndarray
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _operand(v, dtype):
    """``v`` as an array of ``dtype`` (a Python number becomes 0-d)."""
    if isinstance(v, np.ndarray):
        return v if v.dtype == dtype else v.astype(dtype)
    return np.asarray(v, dtype=dtype)


def _result_dtype(a, b) -> np.dtype:
    for v in (a, b):
        if isinstance(v, np.ndarray):
            return v.dtype
    return np.result_type(a, b)


def _two_d(a, b):
    """The broadcast shape of arrays ``a`` and ``b`` (ValueError where they don't broadcast)
    and its form: ``(R, C)`` and the ``(R or 1, C or 1)`` C-contiguous views of ``a`` and
    ``b``, or None where one fits no such form. The result's dims other than 1, outer to
    inner, make one block where each array spans or broadcasts throughout, then at most one
    more (``R`` is the outer block's size, ``C`` the inner one's)."""
    sa, sb = a.shape, b.shape
    if sa == sb:  # the common case: one shape, one row
        if not (a.flags.c_contiguous and b.flags.c_contiguous):
            return sa, None
        n = a.size
        return sa, ((1, n), (a.reshape(1, n), b.reshape(1, n)))
    la, lb = len(sa), len(sb)
    # the next common case: one operand's shape the other's trailing dims (a row broadcast
    # down the leading ones), both contiguous: that operand is the row
    if lb < la and sa[la - lb:] == sb and b.size > 1 and a.flags.c_contiguous \
            and b.flags.c_contiguous:
        n = b.size  # (a 2-d operand is its own row form: a reshape costs ~1,600 instructions)
        R = a.size // n
        return sa, ((R, n), (a if la == 2 else a.reshape(R, n), b.reshape(1, n)))
    if la < lb and sb[lb - la:] == sa and a.size > 1 and a.flags.c_contiguous \
            and b.flags.c_contiguous:
        n = a.size
        R = b.size // n
        return sb, ((R, n), (a.reshape(1, n), b if lb == 2 else b.reshape(R, n)))
    nd = la if la > lb else lb
    oa, ob = nd - la, nd - lb
    shape = []
    outer = inner = None  # (does a span, does b span) over the outer / inner block
    fits = True
    R = C = 1
    for i in range(nd):
        x = sa[i - oa] if i >= oa else 1
        y = sb[i - ob] if i >= ob else 1
        if x == y:
            p = (True, True)
        elif y == 1:
            p = (True, False)
        elif x == 1:
            p, x = (False, True), y
        else:
            raise ValueError(f"operands could not be broadcast together with shapes {sa} {sb}")
        shape.append(x)
        if x == 1 or not fits:
            continue
        if inner is None:
            if outer is None or p == outer:
                outer = p
                R *= x
                continue
            inner = p
        elif p != inner:
            fits = False  # spans and broadcasts interleave
        C *= x
    shape = tuple(shape)
    if not fits or (a.size > 1 and not a.flags.c_contiguous) or \
            (b.size > 1 and not b.flags.c_contiguous):
        return shape, None
    if inner is None:  # one block: it is the row
        R, C, inner = 1, R, outer or (False, False)
        outer = (False, False)
    return shape, ((R, C), (a.reshape(R if outer[0] else 1, C if inner[0] else 1),
                            b.reshape(R if outer[1] else 1, C if inner[1] else 1)))


def _binary(a, b, mode: int, out):
    res = None
    if a.__class__ is _nd and b.__class__ is _nd and a.dtype == b.dtype \
            and a.dtype.char in "fd":  # float32 / float64 arrays of one dtype
        if a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
            res = np.empty(a.shape, a.dtype)  # one shape: one row (inline: a fifth of a call)
            n = res.size
            if n:
                _float_rows(a.reshape(1, n), b.reshape(1, n), res.reshape(1, n), mode)
        else:  # their row form straight away (a row broadcast: no _general, _rows_form...)
            shape, form = _two_d(a, b)
            if form is not None:
                (R, C), (va, vb) = form
                res = np.empty(shape, a.dtype)
                if R * C:
                    _float_rows(va, vb, res.reshape(R, C), mode)
    if res is None:
        res = _general(a, b, mode)
    if out is None:
        return res
    np.copyto(out, res, casting="unsafe")
    return out


def _general(a, b, mode: int):
    dt = _result_dtype(a, b)
    if dt.kind in "iu":  # integers: NumPy's loops are the hardware division already
        with quiet():  # x // -1 at the minimum wraps, as PyTorch's
            return np.asarray(_INT_UFUNC[mode](a, b))
    if dt.kind != "f":
        raise TypeError(f"{_NAMES[mode]}: no kernel for dtype {dt}")
    work = _F32 if dt == _F16 else dt
    shape, (R, C), (va, vb) = _rows_form(a, b, work)
    half_floor = dt == _F16 and mode == 2  # float16 // rounds every step to float16
    res = np.empty(shape, dtype=work)
    if res.size:
        _float_rows(va, vb, res.reshape(R, C), 0 if half_floor else mode)
    if work != dt:
        res = res.astype(dt)
        if half_floor:
            res = _floordiv_f16(_operand(a, dt), _operand(b, dt), res)
    return res


def _floordiv_f16(a, b, m):
    """PyTorch's float16 ``div_floor_floating`` (each step rounded to float16) from
    ``m = fmod(a, b)``, in NumPy's float16 arithmetic."""
    one = np.float16(1)
    with quiet():
        q = a / b
        div = (a - m) / b
        div = np.where((m != 0) & ((b < 0) != (m < 0)), div - one, div)
        fd = np.floor(div)
        fd = np.where(div - fd > np.float16(0.5), fd + one, fd)
        fd = np.where(div != 0, fd, np.copysign(np.float16(0), q))
        return np.where(b == 0, q, fd).astype(np.float16, copy=False)


_NAMES = ("fmod", "remainder", "floor_divide")
_INT_UFUNC = (np.fmod, np.remainder, np.floor_divide)


def fmod(a, b, out=None):
    """C's ``fmod(a, b)`` (sign of the dividend), broadcasting; ``out`` (any layout and dtype
    it may be cast to) receives the result when given."""
    return _binary(a, b, 0, out)


def remainder(a, b, out=None):
    """PyTorch's ``remainder``: Python's ``a % b`` (sign of the divisor)."""
    return _binary(a, b, 1, out)


def floor_divide(a, b, out=None):
    """PyTorch's ``floor_divide``: ``a / b`` rounded toward negative infinity."""
    return _binary(a, b, 2, out)


# --------------------------------------------------------------------------- trunc_divide
@_jit
def _trunc_rows(a, b, out):
    # trunc(a / b), the quotient rounded to the dtype first (PyTorch's div_trunc), over the
    # (R or 1, C or 1) row forms; a row's or a column's one value held as a scalar
    R, n = out.shape
    for r in range(R):
        ar = a[r if a.shape[0] > 1 else 0]
        br = b[r if b.shape[0] > 1 else 0]
        o = out[r]
        if ar.shape[0] == n and br.shape[0] == n:
            for i in range(n):
                o[i] = np.trunc(ar[i] / br[i])
        elif br.shape[0] == 1:
            y = br[0]
            for i in range(n):
                o[i] = np.trunc(ar[i] / y)
        else:
            x = ar[0]
            for i in range(n):
                o[i] = np.trunc(x / br[i])


def trunc_divide(a, b, out=None):
    """PyTorch's ``div(a, b, rounding_mode='trunc')``: ``trunc(a / b)`` with the quotient
    rounded to the dtype (float16 computed in float32 and rounded once), in one pass where
    NumPy's divide and trunc made two; integers exactly (C's truncating division: the floor
    quotient, one more where it is negative and inexact), ``x // -1`` wrapping at the minimum.
    Operands as :func:`fmod`'s; ``out`` receives the result when given. bool and complex raise
    TypeError."""
    res = None
    if a.__class__ is _nd and b.__class__ is _nd and a.dtype == b.dtype \
            and a.dtype.char in "fd":  # float32 / float64 arrays of one dtype
        if a.shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
            res = np.empty(a.shape, a.dtype)  # one shape: one row (inline)
            n = res.size
            if n:
                _trunc_rows(a.reshape(1, n), b.reshape(1, n), res.reshape(1, n))
        else:
            shape, form = _two_d(a, b)
            if form is not None:
                (R, C), (va, vb) = form
                res = np.empty(shape, a.dtype)
                if R * C:
                    _trunc_rows(va, vb, res.reshape(R, C))
    if res is None:
        res = _trunc_general(a, b)
    if out is None:
        return res
    np.copyto(out, res, casting="unsafe")
    return out


def _trunc_general(a, b):
    dt = _result_dtype(a, b)
    if dt.kind in "iu":
        with quiet():  # (x // -1 at the minimum wraps)
            q = np.asarray(np.floor_divide(a, b))
            return q + ((q < 0) & (q * b != a)).astype(dt)
    if dt.kind != "f":
        raise TypeError(f"trunc_divide: no kernel for dtype {dt}")
    work = _F32 if dt == _F16 else dt
    shape, (R, C), (va, vb) = _rows_form(a, b, work)
    res = np.empty(shape, dtype=work)
    if res.size:
        _trunc_rows(va, vb, res.reshape(R, C))
    return res if work == dt else res.astype(dt)


# --------------------------------------------------------------------------- clamp
@_inline
def _clamp1(v, a, b):
    """NumPy's ``minimum(maximum(v, a), b)``: NaN in any of them propagates, a tie keeps the
    first operand (selects only: the loops vectorize)."""
    m = v if v >= a else a
    m = v if v != v else m
    w = m if m <= b else b
    return m if m != m else w


@_jit
def _clamp_rows(x, lo, hi, out):
    # each operand (R or 1, C or 1); a row's one value is held as a scalar (filling a row
    # with it would be one more pass)
    R, n = out.shape
    for r in range(R):
        xr = x[r if x.shape[0] > 1 else 0]
        lr = lo[r if lo.shape[0] > 1 else 0]
        hr = hi[r if hi.shape[0] > 1 else 0]
        o = out[r]
        fx, fl, fh = xr.shape[0] == n, lr.shape[0] == n, hr.shape[0] == n
        if fx and fl and fh:
            for i in range(n):
                o[i] = _clamp1(xr[i], lr[i], hr[i])
        elif fx and fl:
            b = hr[0]
            for i in range(n):
                o[i] = _clamp1(xr[i], lr[i], b)
        elif fx and fh:
            a = lr[0]
            for i in range(n):
                o[i] = _clamp1(xr[i], a, hr[i])
        elif fx:
            a, b = lr[0], hr[0]
            for i in range(n):
                o[i] = _clamp1(xr[i], a, b)
        else:  # x one value in the row: the bounds at strides of 0 or 1 (rare)
            v = xr[0]
            sl, sh = 1 if fl else 0, 1 if fh else 0
            for i in range(n):
                o[i] = _clamp1(v, lr[i * sl], hr[i * sh])


def _rows_of(x, s, shape, RC):
    """``x`` (of shape ``s``, which broadcasts to ``shape``) as a C-contiguous ``(R or 1, C or
    1)`` view of ``RC = (R, C)``, the form of ``shape`` (its last dim is ``C``): the whole, one
    value, a row or a column, told apart by the size alone (itself where it has that shape
    already; a copy where it is strided); else a copy of the full shape."""
    R, C = RC
    if s == shape:
        form = RC
    else:
        n = x.size
        if n == R * C:  # (leading dims of 1 fewer or more than the result's)
            form = RC
        elif n == 1:
            form = (1, 1)
        elif n == C and s[-1] == C:  # (every other dim 1)
            form = (1, C)
        elif n == R and s[-1] == 1:  # (every other dim the result's)
            form = (R, 1)
        else:
            return _full(x, shape).reshape(RC)
    v = x if s == form else x.reshape(form)  # (a reshape costs ~0.25 us)
    return v if v.flags.c_contiguous else np.ascontiguousarray(v)


def clamp(x, lo, hi):
    """``minimum(maximum(x, lo), hi)`` of float32 or float64 arrays of one dtype (NaN in any
    of them propagates), broadcasting, in one pass where NumPy's two passes over a broadcast
    bound do not vectorize (256x1024 float32 with a (1024,) and a (256, 1) bound: 150 us
    against 37); a new C-contiguous array. ValueError where they do not broadcast; other
    dtypes raise TypeError."""
    out, rows = _three_rows("clamp", x, lo, hi)
    if rows is not None:
        _clamp_rows(*rows)
    return out


def _three_rows(name, x, a, b):
    """``(out, rows)`` for a one-pass kernel over three float32 or float64 arrays of one dtype
    broadcast together: ``out`` a new C-contiguous array of the broadcast shape, ``rows`` the
    (R or 1, C or 1) row forms of ``x``, ``a``, ``b`` and ``out``'s (R, C) view (None when
    ``out`` is empty). ValueError where they do not broadcast; other dtypes raise TypeError."""
    dt = x.dtype
    if dt.char not in "fd" or a.dtype != dt or b.dtype != dt:
        raise TypeError(f"{name}: no kernel for dtypes {dt}, {a.dtype} and {b.dtype}")
    sx, sa, sb = x.shape, a.shape, b.shape
    shape = sx if sa == sx and sb == sx else np.broadcast(x, a, b).shape  # (C: NumPy's
    out = np.empty(shape, dt)  # broadcast_shapes, and a walk over the dims, are Python)
    N = out.size
    if not N:
        return out, None
    C = shape[-1] if shape else 1
    RC = (N // C, C)
    if shape == RC:  # (operands of the result's shape need no reshape: one call fewer each)
        return out, (x if sx == RC and x.flags.c_contiguous else _rows_of(x, sx, shape, RC),
                     a if sa == RC and a.flags.c_contiguous else _rows_of(a, sa, shape, RC),
                     b if sb == RC and b.flags.c_contiguous else _rows_of(b, sb, shape, RC),
                     out)
    return out, (_rows_of(x, sx, shape, RC), _rows_of(a, sa, shape, RC),
                 _rows_of(b, sb, shape, RC), out.reshape(RC))


# --------------------------------------------------------------------------- addcmul, addcdiv
@_jit
def _addc_rows(x, a, b, v, div, out):
    # PyTorch's ``fma(v * a, b, x)`` / ``x + v * a / b`` in the dtype (its vectorized CPU
    # kernels' rounding), over the (R or 1, C or 1) row forms; rows whose operands are all
    # whole take the loop that vectorizes, a column's value (one per row) the strided one
    v = like(v, out)
    R, n = out.shape
    for r in range(R):
        xr = x[r if x.shape[0] > 1 else 0]
        ar = a[r if a.shape[0] > 1 else 0]
        br = b[r if b.shape[0] > 1 else 0]
        o = out[r]
        sx, sa, sb = xr.shape[0] == n, ar.shape[0] == n, br.shape[0] == n
        if sx and sa and sb:
            if div:
                for i in range(n):
                    o[i] = xr[i] + v * ar[i] / br[i]
            else:
                for i in range(n):
                    o[i] = _fma(v * ar[i], br[i], xr[i])
        else:
            sx, sa, sb = int(sx), int(sa), int(sb)
            for i in range(n):
                q = v * ar[i * sa]
                if div:
                    o[i] = xr[i * sx] + q / br[i * sb]
                else:
                    o[i] = _fma(q, br[i * sb], xr[i * sx])


def _addc(x, a, b, value, div: bool):
    out, rows = _three_rows("addcmul/addcdiv", x, a, b)
    if rows is not None:
        xr, ar, br, o = rows
        _addc_rows(xr, ar, br, float(value), div, o)
    return out


def addcmul(x, a, b, value):
    """``x + value * a * b`` with PyTorch's rounding (``value * a`` rounded, then ``* b + x``
    fused: its vectorized kernel's values, bit for bit) of float32 or float64 arrays of one
    dtype and a Python number ``value`` (held in the dtype), broadcasting, in one pass where
    NumPy's make two or three with their temporaries (256x1024 float32 with a (1024,)
    operand: 107 us against 49, PyTorch 45); a new C-contiguous array. ValueError where they
    do not broadcast; other dtypes raise TypeError."""
    return _addc(x, a, b, value, False)


def addcdiv(x, a, b, value):
    """``x + value * a / b``, as :func:`addcmul` (a zero divisor gives an infinity or NaN and
    sets no flag)."""
    return _addc(x, a, b, value, True)


# --------------------------------------------------------------------------- nan_to_num
@_jit
def _nan_to_num(x, out, nan, posinf, neginf):
    # the replacements are Python floats (Numba types a NumPy scalar argument slowly), rounded
    # to the array's dtype here: beyond float32's range that is inf, as NumPy's cast
    nan, posinf, neginf = like(nan, x), like(posinf, x), like(neginf, x)
    for i in range(x.shape[0]):
        v = x[i]
        v = nan if v != v else v
        v = posinf if v == math.inf else v
        out[i] = neginf if v == -math.inf else v


def nan_to_num(x, nan, posinf, neginf):
    """``x`` (float32 / float64, or complex64 / complex128: each part on its own) with NaN,
    +inf and -inf replaced by the numbers ``nan``, ``posinf`` and ``neginf`` (rounded to the
    dtype); a new C-contiguous array of ``x``'s shape. Other dtypes raise TypeError."""
    dt = x.dtype
    part = dt if dt.kind != "c" else x.real.dtype
    if part not in _FLOATS:
        raise TypeError(f"nan_to_num: no kernel for dtype {dt}")
    if not x.flags.c_contiguous:
        x = x.copy()  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    out = np.empty(x.shape, dt)
    if part is dt:  # (ravel: a view of the contiguous arrays, cheaper than reshape)
        _nan_to_num(x.ravel(), out.ravel(), float(nan), float(posinf), float(neginf))
    else:
        _nan_to_num(x.ravel().view(part), out.ravel().view(part), float(nan), float(posinf),
                    float(neginf))
    return out
