"""Vectorizable math for the Numba kernels: ``vexp``, ``vsigmoid``, ``like`` and the ``vjit``
decorator.

Numba has no vector math library here (no SVML), so ``math.exp`` in a loop is a scalar libm
call per element and stops the loop from vectorizing. ``vexp`` is a branch-free ``exp``
(Cephes range reduction and polynomial, 2**k built from the exponent bits) that LLVM inlines
and vectorizes: float32 within about 1 ulp of the correctly rounded result, float64 within 2
ulp, with exp(-inf) = 0, exp(+inf) = inf, NaN propagated and overflow/underflow as libm.
``softmax.py`` and ``rnn.py`` (sigmoid, tanh) are built on it.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

__all__ = ["vjit", "vexp", "vsigmoid", "vmax", "like"]

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


@overload(vexp, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vexp(t):
    if t == types.float32:
        p0, p1, p2, p3, p4, p5 = _EP_F

        def exp32(t):
            u = t if t > _LO_F else _LO_F  # NaN -> _LO_F here, restored at the end
            u = u if u < _HI_F else _HI_F
            kf = np.floor(u * _LOG2E_F + _HALF_F)
            r = u - kf * _LN2HI_F - kf * _LN2LO_F
            p = (((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5) * (r * r) + r + _ONE_F
            # 2**k as two factors so that k in [-150, 129] never leaves the exponent range.
            k = np.int32(kf)
            k1 = k >> 1
            y = p * _bits_f32((k1 + _BIAS_F) << _SHIFT_F)
            y = y * _bits_f32((k - k1 + _BIAS_F) << _SHIFT_F)
            y = _INF_F if t > _OVF_F else y
            return t if t != t else y

        return exp32
    if t == types.float64:
        p0, p1, p2 = _EP_D
        q0, q1, q2, q3 = _EQ_D

        def exp64(t):
            u = t if t > _LO_D else _LO_D
            u = u if u < _HI_D else _HI_D
            kf = np.floor(u * _LOG2E_D + 0.5)
            r = u - kf * _LN2HI_D - kf * _LN2LO_D
            rr = r * r
            px = r * ((p0 * rr + p1) * rr + p2)
            p = 1.0 + 2.0 * (px / ((((q0 * rr + q1) * rr + q2) * rr + q3) - px))
            k = np.int64(kf)
            k1 = k >> 1
            y = p * _bits_f64((k1 + 1023) << 52) * _bits_f64((k - k1 + 1023) << 52)
            y = np.inf if t > _OVF_D else y
            return t if t != t else y

        return exp64
    return None


def vsigmoid(v):
    """1 / (1 + exp(-v)) for one float32/float64 inside a kernel, branch-free: from
    ``e = exp(-|v|)`` (never overflows), ``1 / (1 + e)`` for v >= 0 and ``e / (1 + e)`` below,
    so that the far negative tail keeps its relative precision (subnormals included)."""
    raise NotImplementedError("vsigmoid is only callable from Numba kernels")


@overload(vsigmoid, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_vsigmoid(v):
    if v not in (types.float32, types.float64):
        return None
    one = _ONE_F if v == types.float32 else 1.0

    def sigmoid(v):
        e = vexp(-abs(v))
        r = one / (one + e)
        return r if v >= 0 else e * r

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
