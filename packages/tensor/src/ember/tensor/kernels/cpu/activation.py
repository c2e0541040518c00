"""The activation kernels: the logistic sigmoid and the output-based derivatives of sigmoid
and tanh, silu, hardsigmoid, hardswish and mish (forward) and their backward where one, as
NumPy ufuncs compiled by Numba (float32 and float64 loops; other float dtypes are computed in
float32 and rounded once); softplus, elu (and their backward) and log_sigmoid as njit loops
over the flattened arrays on ``_vmath``'s vectorizable ``vexp`` and ``vlog1p`` (3-7x faster than
the NumPy expressions at 256x1024; a loop built by ``numba.vectorize`` around ``vlog1p`` does
not vectorize); mish's backward as a NumPy expression; threshold_backward as an njit loop.
The piecewise ones compare a NaN (to take PyTorch's side of each piece), which raises NumPy's
invalid flag: those ufuncs run under ``errstate`` here (the njit loops need none: NumPy checks
no flag after them).

A call costs what a NumPy ufunc's does (the compiled loops are called through the plain NumPy
ufunc, not Numba's Python-level DUFunc wrapper), where the NumPy expressions these replace took
three to six calls: sigmoid of a 4x64 float32 array in 1.1 us (the expression 3.4 us, PyTorch
1.2), and at 256x1024 in 190 us (the expression 440 us, PyTorch 110). sigmoid is
``_vmath.vsigmoid`` (exp of ``-|x|`` only, so nothing overflows and the negative tail keeps its
relative precision); the derivatives follow PyTorch's formulas and rounding order:
``grad * ((1 - y) * y)`` and ``grad * (1 - y * y)``, in the input dtype.

>>> import numpy as np
>>> sigmoid(np.array([0.0, np.inf, -np.inf])).tolist()
[0.5, 1.0, 0.0]
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import overload

from ..._fpstate import quiet, quiet_begin, quiet_end
from ._vmath import _FM, _ONE_F, like, vexp, vjit, vlog1p, vsigmoid

__all__ = ["sigmoid", "sigmoid_backward", "tanh_backward", "threshold_backward", "silu",
           "silu_backward", "softplus", "softplus_backward", "elu", "elu_backward",
           "hardsigmoid", "hardsigmoid_backward", "hardswish", "hardswish_backward", "mish",
           "mish_backward", "log_sigmoid", "log_sigmoid_backward"]

_ufuncs: dict = {}
_keep: list = []
_F32 = np.dtype(np.float32)
_nd = np.ndarray
_ZERO_F, _HALF_F, _THREE_F, _SIX_F = (np.float32(c) for c in (0.0, 0.5, 3.0, 6.0))


@numba.njit(inline="always", fastmath=set(_FM), error_model="numpy")
def _tanh_softplus(x):  # pragma: no cover  (compiled)
    n = vexp(x)
    q = n * (n + 2)
    hi = 1 - 2 / (q + 2)
    lo = q / (q + 2)
    return hi if x >= 0 else lo


def _build() -> None:
    unary = ["float32(float32)", "float64(float64)"]
    binary = ["float32(float32, float32)", "float64(float64, float64)"]
    opts = dict(cache=True, nopython=True, fastmath=set(_FM))

    @numba.vectorize(unary, **opts)
    def _sigmoid(x):
        return vsigmoid(x)

    # _ONE_F is a float32 1: it keeps float32 arithmetic float32 and widens exactly to float64
    @numba.vectorize(binary, **opts)
    def _sigmoid_backward(g, y):
        return g * ((_ONE_F - y) * y)

    @numba.vectorize(binary, **opts)
    def _tanh_backward(g, y):
        return g * (_ONE_F - y * y)

    # the activations of ember.tensor._activation_ops: PyTorch's CPU formulas and conditions
    @numba.vectorize(unary, **opts)
    def _silu(x):
        return x * vsigmoid(x)

    @numba.vectorize(binary, **opts)
    def _silu_backward(g, x):
        s = vsigmoid(x)
        return g * s * (_ONE_F + x * (_ONE_F - s))

    # PyTorch's piecewise formulas in the input dtype, its divisions true divisions (no
    # "arcp": x / 6 as x * (1/6) rounds differently): the float32 constants keep float32 loops
    # in float32 (an integer constant would widen them to float64, at twice the cost) and widen
    # exactly in float64 ones
    div_opts = dict(opts, fastmath=set(_FM) - {"arcp"})

    @numba.vectorize(unary, **div_opts)
    def _hardsigmoid(x):
        t = x + _THREE_F
        t = _ZERO_F if t < _ZERO_F else t
        return (_SIX_F if t > _SIX_F else t) / _SIX_F

    @numba.vectorize(binary, **div_opts)
    def _hardsigmoid_backward(g, x):
        return g / _SIX_F if -_THREE_F < x < _THREE_F else _ZERO_F

    @numba.vectorize(unary, **div_opts)
    def _hardswish(x):
        t = x + _THREE_F
        t = _ZERO_F if t < _ZERO_F else t
        return x * (_SIX_F if t > _SIX_F else t) / _SIX_F

    @numba.vectorize(binary, **div_opts)
    def _hardswish_backward(g, x):
        if x <= -_THREE_F:
            return _ZERO_F
        return g * (x / _THREE_F + _HALF_F) if x < _THREE_F else g

    # tanh(softplus(x)) = n (n + 2) / (n (n + 2) + 2) with n = exp(x), as 1 - 2 / (...) for
    # x >= 0 (no overflow) and as the quotient below 0 (no cancellation)
    @numba.vectorize(unary, **opts)
    def _mish(x):
        return x * _tanh_softplus(x)

    @numba.vectorize(binary, **opts)
    def _log_sigmoid_backward(g, x):  # grad * sigmoid(-x)
        return g * vsigmoid(-x)

    # Numba's DUFunc wrapper dispatches in Python (0.9 us a call on a 1x64 array); its
    # ``ufunc`` is the plain NumPy ufunc with the loops compiled above (0.3 us). The DUFuncs
    # stay referenced: they own the compiled code those loops point into.
    made = dict(mish=_mish, log_sigmoid_backward=_log_sigmoid_backward, sigmoid=_sigmoid,
                sigmoid_backward=_sigmoid_backward,
                tanh_backward=_tanh_backward, silu=_silu, silu_backward=_silu_backward,
                hardsigmoid=_hardsigmoid, hardsigmoid_backward=_hardsigmoid_backward,
                hardswish=_hardswish, hardswish_backward=_hardswish_backward)
    _keep.extend(made.values())
    _ufuncs.update({k: f.ufunc for k, f in made.items()})


# the activations' ufuncs: a NaN compare or an overflow in their loops sets a floating-point
# flag, which NumPy would warn about (PyTorch never does)
_QUIET_UFUNCS = frozenset(("silu", "silu_backward", "hardsigmoid", "hardsigmoid_backward",
                           "hardswish", "hardswish_backward", "mish", "log_sigmoid_backward"))


def _run(name: str, *arrays: np.ndarray) -> np.ndarray:
    f = _ufuncs.get(name)
    if f is None:
        _build()
        f = _ufuncs[name]
    a = arrays[0]
    dtype = a.dtype
    # a strided or broadcast operand (the expanded ones of sum()'s backward) takes NumPy's
    # buffered loop through a Numba ufunc, about 18x slower: such operands are copied first
    if len(arrays) == 1:  # (one array: its flags alone, no loop)
        if not a.flags.c_contiguous:
            arrays = (np.ascontiguousarray(a),)
        one = True
    else:
        for a in arrays:
            if a.__class__ is _nd and not a.flags.c_contiguous:
                arrays = [b if b.__class__ is not _nd or b.flags.c_contiguous else
                          np.ascontiguousarray(b) for b in arrays]
                break
        one = arrays[1].dtype == dtype
    # (the dtype's character: a search of a tuple of dtypes compares each, 0.1 us)
    if dtype.char in "fd" and one:
        if name in _QUIET_UFUNCS:  # (quiet_call's two steps here: no wrapper call)
            token = quiet_begin()
            try:
                out = f(*arrays)
            finally:
                quiet_end(token)
        else:
            out = f(*arrays)
    elif dtype.kind in "fV":  # float16, bfloat16 ("V" in ml_dtypes)
        with quiet():
            out = np.asarray(f(*[a.astype(_F32) for a in arrays])).astype(dtype)
    else:
        raise TypeError(f"{name}(): no kernel for dtype {dtype}")
    return out if out.__class__ is _nd else np.asarray(out)  # 0-d: NumPy gives a scalar


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` of a real floating array (a new array of its dtype)."""
    return _run("sigmoid", x)


def sigmoid_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``grad * (1 - y) * y``: the gradient of sigmoid from its output ``y`` (broadcast)."""
    return _run("sigmoid_backward", grad, y)


def tanh_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``grad * (1 - y * y)``: the gradient of tanh from its output ``y`` (broadcast)."""
    return _run("tanh_backward", grad, y)


@numba.njit(cache=True, nogil=True)
def _threshold_bw(g, y, t, out):  # pragma: no cover  (compiled)
    t = like(t, y)  # a Python float argument: Numba types a NumPy scalar slowly
    for i in range(out.size):
        out[i] = 0 if y[i] <= t else g[i]


def threshold_backward(grad: np.ndarray, y: np.ndarray, threshold) -> np.ndarray:
    """``0 where y <= threshold, else grad`` (PyTorch's ``threshold_backward``): a NaN ``y``
    passes its gradient, an infinite gradient where ``y <= threshold`` gives 0 (a product with
    a mask would give NaN). One loop (an njit loop, not a ufunc: NumPy checks no
    floating-point flags after it, so a NaN compare raises no warning); other float dtypes
    compute in float32."""
    dtype = grad.dtype
    if dtype != y.dtype or dtype.kind not in "fV":
        raise TypeError(f"threshold_backward(): no kernel for dtypes {dtype}, {y.dtype}")
    work = dtype if dtype.char in "fd" else _F32
    if grad.shape != y.shape:
        grad, y = np.broadcast_arrays(grad, y)
    g = np.ascontiguousarray(grad, dtype=work).ravel()  # (ravel: a view, cheaper than reshape)
    yy = np.ascontiguousarray(y, dtype=work).ravel()
    out = np.empty(grad.shape, dtype=work)
    _threshold_bw(g, yy, float(threshold), out.ravel())
    return out if work == dtype else out.astype(dtype)


def silu(x: np.ndarray) -> np.ndarray:
    """``x * sigmoid(x)``."""
    return _run("silu", x)


def silu_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad * s * (1 + x * (1 - s))``, ``s = sigmoid(x)``."""
    return _run("silu_backward", grad, x)


# softplus, elu and log_sigmoid (and softplus's and elu's backward) are one njit loop each
# over the flattened arrays, on _vmath's vexp / vlog1p (in a numba.vectorize ufunc those
# calls do not vectorize; in an njit loop they do)
def _flat(kernel, arrays, *params) -> np.ndarray:
    """``kernel(*arrays, out, *params)`` on the arrays (of one float32 / float64 dtype)
    broadcast, made C-contiguous and flattened; returns ``out`` in their shape. ``params`` are
    Python numbers, which Numba's dispatch types fast (a NumPy scalar costs it ~0.4 us each):
    the kernels cast them to the arrays' dtype."""
    a = arrays[0]
    shape = a.shape
    for b in arrays:  # the arrays as they are where they need no broadcast and no copy
        if b.shape != shape or not b.flags.c_contiguous:
            # (np.broadcast is C; np.broadcast_shapes and np.broadcast_to build their
            # results in Python: 2 and 10 us on a small array, more than the kernel)
            shape = np.broadcast(*arrays).shape
            arrays = [b if b.shape == shape and b.flags.c_contiguous else _full(b, shape)
                      for b in arrays]
            break
    out = np.empty(shape, a.dtype)
    # ravel: a view of each (now contiguous) array, cheaper than reshape(-1)
    kernel(*[b.ravel() for b in arrays], out.ravel(), *params)
    return out


def _full(b, shape) -> np.ndarray:
    """A C-contiguous copy of ``b`` broadcast to ``shape``."""
    full = np.empty(shape, b.dtype)
    full[...] = b
    return full


def _flat1(kernel, x, *params) -> np.ndarray:
    """:func:`_flat` of one array ``x`` (its C-contiguous copy where it is strided)."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)  # (a 0-d array is contiguous: it never gets here)
    out = np.empty(x.shape, x.dtype)
    kernel(x.ravel(), out.ravel(), *params)
    return out


@vjit
def _softplus_flat(x, out, beta, threshold):
    beta, threshold = like(beta, x), like(threshold, x)
    for i in range(x.shape[0]):
        v = x[i]
        bv = v * beta
        out[i] = v if bv > threshold else vlog1p(vexp(bv)) / beta


@vjit
def _softplus_backward_flat(g, x, out, beta, threshold):
    beta, threshold = like(beta, x), like(threshold, x)
    for i in range(x.shape[0]):
        bv = x[i] * beta
        out[i] = g[i] if bv > threshold else g[i] * vsigmoid(bv)  # sigmoid(bv) = z / (z + 1)


@vjit
def _log_sigmoid_flat(x, out):
    zero = like(0.0, x)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (v if v < zero else zero) - vlog1p(vexp(-abs(v)))


def softplus(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    """``log1p(exp(beta x)) / beta``; ``x`` where ``beta x > threshold`` (float32 / float64,
    computed in ``x``'s dtype)."""
    return _flat1(_softplus_flat, x, float(beta), float(threshold))


def softplus_backward(grad: np.ndarray, x: np.ndarray, beta: float,
                      threshold: float) -> np.ndarray:
    """``grad * z / (z + 1)``, ``z = exp(beta x)``; ``grad`` where ``beta x > threshold``."""
    return _flat(_softplus_backward_flat, (grad, x), float(beta), float(threshold))


# 1/k! from the highest power down: Taylor's series of expm1 below ln 2 (float32 to t^9,
# float64 to t^17: truncation under a tenth of an ulp), exp(t) - 1 above (at most one bit of
# cancellation there): within 2 ulp. The polynomial's coefficients are a constant tuple of the
# loop's dtype (``_expm1_series``; its length known to the compiled loop), not a helper
# function called from the loop, which would keep the loop from vectorizing, nor an argument
# (Numba types a tuple argument element by element on every call).
_EXPM1 = {
    np.dtype(np.float32): tuple(np.float32(1.0 / math.factorial(k)) for k in range(9, 1, -1)),
    np.dtype(np.float64): tuple(1.0 / math.factorial(k) for k in range(17, 1, -1)),
}
_LN2 = math.log(2.0)


def _expm1_series(x):
    """``_EXPM1`` of the dtype of array ``x``, inside a kernel."""
    raise NotImplementedError("_expm1_series is only callable from Numba kernels")


@overload(_expm1_series)
def _ov_expm1_series(x):
    cs = _EXPM1[np.dtype(x.dtype.name)]
    return lambda x: cs


@vjit
def _elu_flat(x, out, negcoef, poscoef, input_scale):
    zero, one, cut = like(0.0, x), like(1.0, x), like(_LN2, x)
    negcoef, poscoef, input_scale = like(negcoef, x), like(poscoef, x), like(input_scale, x)
    cs = _expm1_series(x)
    for i in range(x.shape[0]):
        v = x[i]
        t = v * input_scale
        p = cs[0]
        for c in cs[1:]:
            p = p * t + c
        m = p * t * t + t if abs(t) < cut else vexp(t) - one
        out[i] = m * negcoef if v <= zero else v * poscoef


@vjit
def _elu_backward_flat(g, v, out, negcoef, poscoef, input_scale, is_result):
    zero = like(0.0, v)
    negcoef, poscoef, input_scale = like(negcoef, v), like(poscoef, v), like(input_scale, v)
    neg = input_scale * negcoef
    for i in range(v.shape[0]):
        x = v[i]
        if is_result:  # (a loop invariant: LLVM takes it out of the loop)
            d = input_scale * (x + negcoef)
        else:
            d = neg * vexp(x * input_scale)
        out[i] = g[i] * d if x <= zero else g[i] * poscoef


def elu(x: np.ndarray, alpha: float, scale: float, input_scale: float) -> np.ndarray:
    """``alpha scale expm1(input_scale x)`` where ``x <= 0``, else ``scale x``."""
    return _flat1(_elu_flat, x, float(alpha * scale), float(scale), float(input_scale))


def elu_backward(grad: np.ndarray, alpha: float, scale: float, input_scale: float,
                 is_result: bool, v: np.ndarray) -> np.ndarray:
    """The gradient of :func:`elu` from its input ``v`` (``grad alpha scale input_scale
    exp(input_scale v)`` where ``v <= 0``), or from its output (``is_result``: ``grad
    input_scale (v + alpha scale)`` there); ``grad scale`` elsewhere."""
    return _flat(_elu_backward_flat, (grad, v), float(alpha * scale), float(scale),
                 float(input_scale), bool(is_result))


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """``min(x, 0) - log1p(exp(-|x|))``: ``log(sigmoid(x))`` without overflow."""
    return _flat1(_log_sigmoid_flat, x)


def mish_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad * (t + x * sigmoid(x) * (1 - t^2))``, ``t = tanh(log1p(exp(x)))``."""
    with quiet():  # (exp overflows to inf: tanh gives 1)
        t = np.tanh(np.log1p(np.exp(x)))
        return grad * (t + x * sigmoid(x) * (1 - t * t))


def hardsigmoid(x: np.ndarray) -> np.ndarray:
    """``min(max(x + 3, 0), 6) / 6`` (NaN stays NaN)."""
    return _run("hardsigmoid", x)


def hardsigmoid_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad / 6`` inside ``(-3, 3)``, else 0."""
    return _run("hardsigmoid_backward", grad, x)


def hardswish(x: np.ndarray) -> np.ndarray:
    """``x min(max(x + 3, 0), 6) / 6`` (NaN stays NaN; -inf gives NaN, as ``-inf * 0``)."""
    return _run("hardswish", x)


def hardswish_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """0 up to -3, ``grad (x / 3 + 0.5)`` below 3, else ``grad``."""
    return _run("hardswish_backward", grad, x)


def mish(x: np.ndarray) -> np.ndarray:
    """``x * tanh(log1p(exp(x)))``."""
    return _run("mish", x)


def log_sigmoid_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad * sigmoid(-x)``."""
    return _run("log_sigmoid_backward", grad, x)
