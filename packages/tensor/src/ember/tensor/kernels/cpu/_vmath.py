"""Vectorizable math for the Numba kernels: ``vexp``, ``vsigmoid``, ``like`` and the ``vjit``
decorator.

Numba has no vector math library here (no SVML), so ``math.exp`` in a loop is a scalar libm
call per element and stops the loop from vectorizing. ``vexp`` is a branch-free ``exp``
(Cephes range reduction and polynomial, 2**k built from the exponent bits) that LLVM inlines
and vectorizes: float32 within about 1 ulp of the correctly rounded result, float64 within 2
ulp, with exp(-inf) = 0, exp(+inf) = inf, NaN propagated and overflow/underflow as libm.
``softmax.py`` and ``rnn.py`` (sigmoid, tanh) are built on it.

``vexp2`` is ``2**t`` (``vexp`` of the reduced argument ``(t - round(t)) ln 2``, exact
reduction). ``vlog`` is the ``atanh`` form of the logarithm: ``x = 2**k (1 + f)`` with
``1 + f`` in ``[sqrt(1/2), sqrt(2))``, ``s = f / (2 + f)``, ``log(1 + f) = f - (f^2/2 -
s (f^2/2 + R(s^2)))`` with ``R`` the Taylor series of ``2 atanh(s) / s - 2`` (no fitted
coefficients), and ``k ln 2`` in two parts: within 1 ulp, subnormals scaled first, log(0) =
-inf, log(x < 0) = NaN, log(inf) = inf. ``vlog1p(u)`` is ``vlog(1 + u)`` plus the rounding
error of ``1 + u`` divided by it (Kahan's correction), ``u`` itself where ``1 + u == 1``.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

__all__ = ["vjit", "vexp", "vexp2", "vlog", "vlog1p", "vsigmoid", "vmax", "like"]

# --------------------------------------------------------------------------- vector math

# IEEE semantics kept (no nnan / ninf); error_model="numpy" drops the ZeroDivisionError branch
# that would otherwise stop a loop with a division from vectorizing. "reassoc" only where a
# loop is a plain sum (``_SUM``), never on the range reduction of exp.
_FM = frozenset({"nsz", "contract", "arcp"})
_FM_SUM = _FM | {"reassoc"}


def vjit(fn=None, *, parallel=False, sums=False):
    """``njit`` for kernels built on :func:`vexp`: cached, nogil, numpy error model."""
    def wrap(f):
        return numba.njit(cache=True, nogil=True, parallel=parallel, error_model="numpy",
                          fastmath=set(_FM_SUM if sums else _FM))(f)
    return wrap if fn is None else wrap(fn)


@intrinsic
def _bits_f32(typingctx, i):
    """Reinterpret the low 32 bits of an integer as a float32."""
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        if i.bitwidth > 32:
            v = builder.trunc(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return types.float32(i), codegen


@intrinsic
def _bits_f64(typingctx, i):
    """Reinterpret a 64-bit integer as a float64."""
    if not isinstance(i, types.Integer) or i.bitwidth != 64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(i), codegen


_f = np.float32
# float32 exp (Cephes expf): Cody-Waite ln2 split, degree-6 polynomial on [-ln2/2, ln2/2].
_LOG2E_F, _LN2HI_F, _LN2LO_F = _f(1.4426950408889634), _f(0.693359375), _f(-2.12194440e-4)
_EP_F = tuple(_f(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_LO_F, _HI_F, _OVF_F = _f(-104.0), _f(89.0), _f(88.72283935546875)
_HALF_F, _ONE_F, _INF_F = _f(0.5), _f(1.0), _f(np.inf)
_BIAS_F, _SHIFT_F = np.int32(127), np.int32(23)
# float64 exp (Cephes exp): Cody-Waite ln2 split, Pade approximation.
_LOG2E_D, _LN2HI_D, _LN2LO_D = 1.4426950408889634, 6.93145751953125e-1, 1.42860682030941723212e-6
_EP_D = (1.26177193074810590878e-4, 3.02994407707441961300e-2, 9.99999999999999999910e-1)
_EQ_D = (3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1,
         2.00000000000000000009e0)
_LO_D, _HI_D, _OVF_D = -746.0, 710.0, 709.782712893384


def vexp(t):
    """exp(t) for one float32/float64 inside a kernel, branch-free so loops vectorize."""
    raise NotImplementedError("vexp is only callable from Numba kernels")


def _exp_impl(t, base2):
    """The body of ``vexp`` (``base2``: ``vexp2``, whose reduction ``t - round(t)`` is exact);
    one function per kind, so that no vector function calls another (LLVM leaves such nested
    calls out of line in float64 loops, which then do not vectorize)."""
    if t == types.float32:
        p0, p1, p2, p3, p4, p5 = _EP_F
        lo, hi = (_f(-160.0), _f(130.0)) if base2 else (_LO_F, _HI_F)
        ovf = _f(128.0) if base2 else _OVF_F

        def exp32(t):
            u = t if t > lo else lo  # NaN -> lo here, restored at the end
            u = u if u < hi else hi
            if base2:
                kf = np.floor(u + _HALF_F)
                r = (u - kf) * _LN2_F
            else:
                kf = np.floor(u * _LOG2E_F + _HALF_F)
                r = u - kf * _LN2HI_F - kf * _LN2LO_F
            p = (((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5) * (r * r) + r + _ONE_F
            # 2**k as two factors so that k in [-150, 129] never leaves the exponent range.
            k = np.int32(kf)
            k1 = k >> 1
            y = p * _bits_f32((k1 + _BIAS_F) << _SHIFT_F)
            y = y * _bits_f32((k - k1 + _BIAS_F) << _SHIFT_F)
            y = _INF_F if t > ovf else y
            return t if t != t else y

        return exp32
    if t == types.float64:
        p0, p1, p2 = _EP_D
        q0, q1, q2, q3 = _EQ_D
        lo, hi = (-1080.0, 1030.0) if base2 else (_LO_D, _HI_D)
        ovf = 1024.0 if base2 else _OVF_D

        def exp64(t):
            u = t if t > lo else lo
            u = u if u < hi else hi
            if base2:
                kf = np.floor(u + 0.5)
                r = (u - kf) * _LN2_D
            else:
                kf = np.floor(u * _LOG2E_D + 0.5)
                r = u - kf * _LN2HI_D - kf * _LN2LO_D
            rr = r * r
            px = r * ((p0 * rr + p1) * rr + p2)
            p = 1.0 + 2.0 * (px / ((((q0 * rr + q1) * rr + q2) * rr + q3) - px))
            k = np.int64(kf)
            k1 = k >> 1
            y = p * _bits_f64((k1 + 1023) << 52) * _bits_f64((k - k1 + 1023) << 52)
            y = np.inf if t > ovf else y
            return t if t != t else y

        return exp64
    return None


_LN2_F, _LN2_D = _f(0.6931471805599453), 0.6931471805599453


@overload(vexp, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vexp(t):
    return _exp_impl(t, False)


def vsigmoid(v):
    """1 / (1 + exp(-v)) for one float32/float64 inside a kernel, branch-free: from
    ``e = exp(-|v|)`` (never overflows), ``1 / (1 + e)`` for v >= 0 and ``e / (1 + e)`` below,
    so that the far negative tail keeps its relative precision (subnormals included)."""
    raise NotImplementedError("vsigmoid is only callable from Numba kernels")


@overload(vsigmoid, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vsigmoid(v):
    if v not in (types.float32, types.float64):
        return None
    one, zero = (_ONE_F, _f(0.0)) if v == types.float32 else (1.0, 0.0)

    def sigmoid(v):
        # a NaN meets only == and != (quiet compares): an ordered compare on a NaN sets the
        # invalid flag, which NumPy reports after a ufunc loop as a RuntimeWarning
        w = v if v == v else zero
        e = vexp(-abs(w))
        r = one / (one + e)
        s = r if w >= zero else e * r
        return s if v == v else v

    return sigmoid


def like(v, a):
    """``v`` cast to the dtype of array ``a`` inside a kernel (keeps float32 loops float32)."""
    raise NotImplementedError("like is only callable from Numba kernels")


@overload(like)
def _ov_like(v, a):
    dt = a.dtype

    def impl(v, a):
        return dt(v)

    return impl


@vjit
def vmax(b):
    """The largest element of the 1-d array ``b`` (at least one element): eight independent
    running maxima, since one select chain does not vectorize. NaN is skipped; the softmax
    and log-sum-exp kernels that use it still get NaN through ``exp(NaN - m)``."""
    n = b.shape[0]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = b[0]
    j = 0
    while j + 8 <= n:
        v = b[j]
        a0 = v if v > a0 else a0
        v = b[j + 1]
        a1 = v if v > a1 else a1
        v = b[j + 2]
        a2 = v if v > a2 else a2
        v = b[j + 3]
        a3 = v if v > a3 else a3
        v = b[j + 4]
        a4 = v if v > a4 else a4
        v = b[j + 5]
        a5 = v if v > a5 else a5
        v = b[j + 6]
        a6 = v if v > a6 else a6
        v = b[j + 7]
        a7 = v if v > a7 else a7
        j += 8
    a0 = a1 if a1 > a0 else a0
    a2 = a3 if a3 > a2 else a2
    a4 = a5 if a5 > a4 else a4
    a6 = a7 if a7 > a6 else a6
    a0 = a2 if a2 > a0 else a0
    a4 = a6 if a6 > a4 else a4
    m = a4 if a4 > a0 else a0
    while j < n:
        v = b[j]
        m = v if v > m else m
        j += 1
    return m


@intrinsic
def _int_bits(typingctx, x):
    """The bits of a float32 / float64 as an int32 / int64."""
    if x == types.float32:
        def cg32(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(32))
        return types.int32(x), cg32
    if x == types.float64:
        def cg64(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(64))
        return types.int64(x), cg64
    return None


def vexp2(t):
    """2**t for one float32/float64 inside a kernel, branch-free."""
    raise NotImplementedError("vexp2 is only callable from Numba kernels")


@overload(vexp2, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vexp2(t):
    return _exp_impl(t, True)


def vlog(x):
    """log(x) for one float32/float64 inside a kernel, branch-free so loops vectorize."""
    raise NotImplementedError("vlog is only callable from Numba kernels")


def vlog1p(x):
    """log(1 + x) for one float32/float64 inside a kernel, branch-free."""
    raise NotImplementedError("vlog1p is only callable from Numba kernels")


# 2/(2j+1) for j = 1..: the series of 2 atanh(s) / s - 2 in z = s^2 (float32 needs 4 terms,
# float64 10 for |s| <= 3 - 2 sqrt(2)).
_ATANH_F = tuple(_f(2.0 / (2 * j + 1)) for j in range(4, 0, -1))
_ATANH_D = tuple(2.0 / (2 * j + 1) for j in range(10, 0, -1))
_SQRT2_F, _SQRT2_D = _f(1.4142135623730951), 1.4142135623730951
_TINY_F, _TINY_D = _f(np.finfo(np.float32).tiny), float(np.finfo(np.float64).tiny)


def _log_impl(x, p1):
    """The body of ``vlog`` (``p1``: ``vlog1p``, which takes the log of ``w = 1 + x`` and adds
    the rounding error of ``w`` divided by ``w``); one function per kind, as ``_exp_impl``."""
    if x == types.float32:
        c0, c1, c2, c3 = _ATANH_F

        def log32(x):
            if p1:
                w = _ONE_F + x
                c = (x - (w - _ONE_F)) / w
                c = c if c == c else _f(0.0)  # w = 0 or inf (NaN comes through w)
            else:
                w = x
                c = _f(0.0)
            sub = w < _TINY_F
            v = w * _f(33554432.0) if sub else w  # 2**25: subnormals become normal
            b = _int_bits(v)
            k = ((b >> 23) & 0xFF) - 127 - (25 if sub else 0)
            m = _bits_f32((b & 0x7FFFFF) | 0x3F800000)  # [1, 2)
            big = m > _SQRT2_F
            m = m * _HALF_F if big else m
            k = k + 1 if big else k
            f = m - _ONE_F
            s = f / (_f(2.0) + f)
            z = s * s
            r = (((c0 * z + c1) * z + c2) * z + c3) * z
            hfsq = _HALF_F * f * f
            kf = _f(k)
            y = kf * _LN2HI_F - ((hfsq - (s * (hfsq + r) + (kf * _LN2LO_F + c))) - f)
            y = -_INF_F if w == _f(0.0) else y
            y = w if w == _INF_F else y
            y = np.float32(np.nan) if w < _f(0.0) else (w if w != w else y)
            return x if (p1 and w == _ONE_F) else y

        return log32
    if x == types.float64:
        cs = _ATANH_D

        def log64(x):
            if p1:
                w = 1.0 + x
                c = (x - (w - 1.0)) / w
                c = c if c == c else 0.0
            else:
                w = x
                c = 0.0
            sub = w < _TINY_D
            v = w * 18014398509481984.0 if sub else w  # 2**54
            b = _int_bits(v)
            # the exponent as a float64 without an int64 -> float64 conversion (none in AVX2)
            e = _bits_f64(((b >> 52) & 0x7FF) | 0x4330000000000000) - 4503599627370496.0
            kf = e - (1077.0 if sub else 1023.0)
            m = _bits_f64((b & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000)
            big = m > _SQRT2_D
            m = m * 0.5 if big else m
            kf = kf + 1.0 if big else kf
            f = m - 1.0
            s = f / (2.0 + f)
            z = s * s
            r = cs[0]
            r = r * z + cs[1]
            r = r * z + cs[2]
            r = r * z + cs[3]
            r = r * z + cs[4]
            r = r * z + cs[5]
            r = r * z + cs[6]
            r = r * z + cs[7]
            r = r * z + cs[8]
            r = (r * z + cs[9]) * z
            hfsq = 0.5 * f * f
            y = kf * _LN2HI_D - ((hfsq - (s * (hfsq + r) + (kf * _LN2LO_D + c))) - f)
            y = -np.inf if w == 0.0 else y
            y = w if w == np.inf else y
            y = np.nan if w < 0.0 else (w if w != w else y)
            return x if (p1 and w == 1.0) else y

        return log64
    return None


@overload(vlog, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vlog(x):
    return _log_impl(x, False)


@overload(vlog1p, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vlog1p(x):
    return _log_impl(x, True)


def like_scalar(v, x):
    """``v`` in the float type of the scalar ``x`` inside a kernel."""
    raise NotImplementedError("like_scalar is only callable from Numba kernels")


@overload(like_scalar)
def _ov_like_scalar(v, x):
    t = x

    def impl(v, x):
        return t(v)

    return impl
