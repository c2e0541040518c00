"""The mapping table: registry op name -> converter.

A converter is ``fn(g, a, out)``: ``g`` the :class:`~ember.onnx._graph.GraphContext`, ``a`` the
traced call's bound arguments as the op's ``Args`` named tuple (tensors as traced), ``out`` the
traced result. It appends nodes and returns the output value name (or a list of names, one per
tensor in ``out``, in order). In-place ops (``add_``) use their out-of-place twin's converter.

Extend with :func:`register`::

    @register("my_op")
    def _my_op(g, a, out):
        return g.node("Relu", [g.v(a.input)])
"""
from __future__ import annotations

import math
import numbers
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

import ember.nn as nn
import ember.tensor as et
from ember.nn.utils import rnn as rnn_utils

from ._graph import INT64_MAX, INT64_MIN, is_tensor, np_dtype

SYMBOLICS: dict = {}


def register(*names):
    def deco(fn):
        for n in names:
            SYMBOLICS[n] = fn
        return fn
    return deco


def _out_dtype(out) -> np.dtype:
    return np_dtype(out[0] if isinstance(out, tuple) else out)


def _wrap(d: int, n: int) -> int:
    return d % n if n else 0


def _dims(dim, ndim: int):
    """A reduction's ``dim`` argument as a sorted list of axes (None: every axis)."""
    if dim is None:
        return None
    if isinstance(dim, numbers.Integral):
        return [_wrap(int(dim), ndim)]
    dims = [_wrap(int(d), ndim) for d in dim]
    return sorted(set(dims)) if dims else None


# ------------------------------------------------------------------ elementwise, unary
def _unary(op_type):
    def conv(g, a, out):
        return g.node(op_type, [g.v(a.input, _out_dtype(out))])
    return conv


for _name, _op in {
    "abs": "Abs", "acos": "Acos", "acosh": "Acosh", "asin": "Asin", "asinh": "Asinh",
    "atan": "Atan", "atanh": "Atanh", "ceil": "Ceil", "cos": "Cos", "cosh": "Cosh",
    "erf": "Erf", "exp": "Exp", "floor": "Floor", "log": "Log", "neg": "Neg",
    "reciprocal": "Reciprocal", "relu": "Relu", "sigmoid": "Sigmoid", "sign": "Sign",
    "sin": "Sin", "sinh": "Sinh", "sqrt": "Sqrt", "tan": "Tan", "tanh": "Tanh",
}.items():
    register(_name)(_unary(_op))


@register("silu")
def _silu(g, a, out):
    x = g.v(a.input, _out_dtype(out))
    return g.node("Mul", [x, g.node("Sigmoid", [x])])


@register("gelu")
def _gelu(g, a, out):
    """ONNX's Gelu is opset 20: ``0.5 x (1 + erf(x / sqrt 2))`` (or the tanh form) instead."""
    dt = _out_dtype(out)
    x = g.v(a.input, dt)
    if a.approximate == "tanh":
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Mul", [g.const(math.sqrt(2 / math.pi), dt),
                               g.node("Add", [x, g.node("Mul", [g.const(0.044715, dt), cube])])])
        t = g.node("Tanh", [inner])
    else:
        t = g.node("Erf", [g.node("Mul", [x, g.const(1 / math.sqrt(2), dt)])])
    half_x = g.node("Mul", [g.const(0.5, dt), x])
    return g.node("Mul", [half_x, g.node("Add", [g.const(1, dt), t])])


@register("softplus")
def _softplus(g, a, out):
    """``x`` where ``beta x > threshold``, else ``Softplus(beta x) / beta``."""
    dt = _out_dtype(out)
    x = g.v(a.input, dt)
    bx = g.node("Mul", [x, g.const(a.beta, dt)])
    soft = g.node("Div", [g.node("Softplus", [bx]), g.const(a.beta, dt)])
    return g.node("Where", [g.node("Greater", [bx, g.const(a.threshold, dt)]), x, soft])


@register("elu")
def _elu(g, a, out):
    """ONNX's Elu where the scales are 1, else ``Where(x <= 0, (exp(input_scale x) - 1) alpha
    scale, scale x)``."""
    dt = _out_dtype(out)
    x = g.v(a.input, dt)
    if a.scale == 1 and a.input_scale == 1:
        return g.node("Elu", [x], alpha=float(a.alpha))
    neg = g.node("Mul", [g.node("Sub", [g.node("Exp", [g.node("Mul", [
        x, g.const(a.input_scale, dt)])]), g.const(1, dt)]), g.const(a.alpha * a.scale, dt)])
    return g.node("Where", [g.node("LessOrEqual", [x, g.const(0, dt)]), neg,
                            g.node("Mul", [x, g.const(a.scale, dt)])])


@register("mish")
def _mish(g, a, out):
    return g.node("Mish", [g.v(a.input, _out_dtype(out))])


@register("log_sigmoid")
def _log_sigmoid(g, a, out):
    """``-softplus(-x)``."""
    x = g.v(a.input, _out_dtype(out))
    return g.node("Neg", [g.node("Softplus", [g.node("Neg", [x])])])


@register("hardsigmoid")
def _hardsigmoid(g, a, out):
    return g.node("HardSigmoid", [g.v(a.input, _out_dtype(out))], alpha=1 / 6, beta=0.5)


@register("hardswish")
def _hardswish(g, a, out):
    return g.node("HardSwish", [g.v(a.input, _out_dtype(out))])


@register("logical_not")
def _logical_not(g, a, out):
    return g.node("Not", [g.v(a.input, np.bool_)])


@register("bitwise_not")
def _bitwise_not(g, a, out):
    if np_dtype(a.input) == np.bool_:
        return g.node("Not", [g.v(a.input)])
    return g.node("BitwiseNot", [g.v(a.input)])


@register("isnan")
def _isnan(g, a, out):
    return g.node("IsNaN", [g.v(a.input)])


@register("isinf")
def _isinf(g, a, out):
    return g.node("IsInf", [g.v(a.input)])


@register("nan_to_num")
def _nan_to_num(g, a, out):
    """NaN, +inf and -inf replaced (by default the dtype's extremes), with IsNaN / IsInf and
    Where; integer and bool inputs pass through."""
    dt = _out_dtype(out)
    x = g.v(a.input)
    if dt.kind != "f":
        return g.node("Identity", [x])
    fi = np.finfo(dt)
    pos = float(fi.max) if a.posinf is None else a.posinf
    neg = float(fi.min) if a.neginf is None else a.neginf
    y = g.node("Where", [g.node("IsNaN", [x]), g.const(0.0 if a.nan is None else a.nan, dt), x])
    y = g.node("Where", [g.node("IsInf", [x], detect_negative=0), g.const(pos, dt), y])
    return g.node("Where", [g.node("IsInf", [x], detect_positive=0), g.const(neg, dt), y])


@register("isfinite")
def _isfinite(g, a, out):
    x = g.v(a.input)
    return g.node("Not", [g.node("Or", [g.node("IsNaN", [x]), g.node("IsInf", [x])])])


@register("rsqrt")
def _rsqrt(g, a, out):
    return g.node("Reciprocal", [g.node("Sqrt", [g.v(a.input, _out_dtype(out))])])


@register("square")
def _square(g, a, out):
    x = g.v(a.input, _out_dtype(out))
    return g.node("Mul", [x, x])


@register("expm1")
def _expm1(g, a, out):
    dt = _out_dtype(out)
    return g.node("Sub", [g.node("Exp", [g.v(a.input, dt)]), g.const(1, dt)])


@register("log1p")
def _log1p(g, a, out):
    dt = _out_dtype(out)
    return g.node("Log", [g.node("Add", [g.v(a.input, dt), g.const(1, dt)])])


@register("log2", "log10")
def _log_base(g, a, out):
    dt = _out_dtype(out)
    base = 2.0 if g.op.startswith("log2") else 10.0
    return g.node("Div", [g.node("Log", [g.v(a.input, dt)]), g.const(math.log(base), dt)])


@register("exp2")
def _exp2(g, a, out):
    dt = _out_dtype(out)
    return g.node("Pow", [g.const(2, dt), g.v(a.input, dt)])


@register("erfc")
def _erfc(g, a, out):
    dt = _out_dtype(out)
    return g.node("Sub", [g.const(1, dt), g.node("Erf", [g.v(a.input, dt)])])


def _trunc(g, x):
    return g.node("Mul", [g.node("Sign", [x]), g.node("Floor", [g.node("Abs", [x])])])


@register("trunc")
def _trunc_conv(g, a, out):
    return _trunc(g, g.v(a.input, _out_dtype(out)))


@register("frac")
def _frac(g, a, out):
    x = g.v(a.input, _out_dtype(out))
    return g.node("Sub", [x, _trunc(g, x)])


@register("round")
def _round(g, a, out):
    dt = _out_dtype(out)
    x = g.v(a.input, dt)
    if not np.issubdtype(dt, np.floating):
        return g.node("Identity", [x])
    if a.decimals == 0:
        return g.node("Round", [x])
    scale = g.const(10.0 ** a.decimals, dt)
    return g.node("Div", [g.node("Round", [g.node("Mul", [x, scale])]), scale])


# ------------------------------------------------------------------ elementwise, binary
def _binary(op_type, compare=False):
    def conv(g, a, out):
        dt = et.result_type(a.input, a.other).np if compare else _out_dtype(out)
        return g.node(op_type, [g.v(a.input, dt), g.v(a.other, dt)])
    return conv


for _name, _op in {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div",
                   "maximum": "Max", "minimum": "Min", "fmax": "Max", "fmin": "Min"}.items():
    register(_name)(_binary(_op))
for _name, _op in {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
                   "ge": "GreaterOrEqual"}.items():
    register(_name)(_binary(_op, compare=True))


@register("pow")
def _pow(g, a, out):
    dt = _out_dtype(out)
    return g.node("Pow", [g.v(a.input, dt), g.v(a.other, dt)])


@register("ne")
def _ne(g, a, out):
    return g.node("Not", [_binary("Equal", True)(g, a, out)])


def _logical(op_type):
    def conv(g, a, out):
        return g.node(op_type, [g.v(a.input, np.bool_), g.v(a.other, np.bool_)])
    return conv


for _name, _op in {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}.items():
    register(_name)(_logical(_op))


def _bitwise(op_type, bool_op):
    def conv(g, a, out):
        dt = _out_dtype(out)
        if dt == np.bool_:
            return g.node(bool_op, [g.v(a.input, dt), g.v(a.other, dt)])
        return g.node(op_type, [g.v(a.input, dt), g.v(a.other, dt)])
    return conv


register("bitwise_and")(_bitwise("BitwiseAnd", "And"))
register("bitwise_or")(_bitwise("BitwiseOr", "Or"))
register("bitwise_xor")(_bitwise("BitwiseXor", "Xor"))


@register("remainder")
def _remainder(g, a, out):
    dt = _out_dtype(out)
    x, y = g.v(a.input, dt), g.v(a.other, dt)
    if np.issubdtype(dt, np.integer):
        return g.node("Mod", [x, y], fmod=0)
    q = g.node("Floor", [g.node("Div", [x, y])])
    return g.node("Sub", [x, g.node("Mul", [q, y])])


@register("fmod")
def _fmod(g, a, out):
    dt = _out_dtype(out)
    return g.node("Mod", [g.v(a.input, dt), g.v(a.other, dt)], fmod=1)


@register("floor_divide", "div_floor")
def _floor_divide(g, a, out):
    dt = _out_dtype(out)
    x, y = g.v(a.input, dt), g.v(a.other, dt)
    if np.issubdtype(dt, np.integer):
        return g.node("Div", [g.node("Sub", [x, g.node("Mod", [x, y], fmod=0)]), y])
    return g.node("Floor", [g.node("Div", [x, y])])


@register("div_trunc")
def _div_trunc(g, a, out):
    dt = _out_dtype(out)
    x, y = g.v(a.input, dt), g.v(a.other, dt)
    if np.issubdtype(dt, np.integer):  # (ONNX's integer Div truncates, as C's)
        return g.node("Div", [x, y])
    return _trunc(g, g.node("Div", [x, y]))


@register("hypot")
def _hypot(g, a, out):
    dt = _out_dtype(out)
    x, y = g.v(a.input, dt), g.v(a.other, dt)
    return g.node("Sqrt", [g.node("Add", [g.node("Mul", [x, x]), g.node("Mul", [y, y])])])


@register("atan2")
def _atan2(g, a, out):
    dt = _out_dtype(out)
    y, x = g.v(a.input, dt), g.v(a.other, dt)
    zero, pi = g.const(0, dt), g.const(math.pi, dt)
    base = g.node("Atan", [g.node("Div", [y, x])])
    # x < 0: add pi with y's sign (y >= 0 -> +pi); x == 0: +-pi/2 (Atan of +-inf does it)
    sign = g.node("Where", [g.node("Less", [y, zero]), g.const(-1, dt), g.const(1, dt)])
    shift = g.node("Where", [g.node("Less", [x, zero]), g.node("Mul", [sign, pi]), zero])
    return g.node("Add", [base, shift])


@register("lerp")
def _lerp(g, a, out):
    dt = _out_dtype(out)
    x, e, w = g.v(a.input, dt), g.v(a.end, dt), g.v(a.weight, dt)
    return g.node("Add", [x, g.node("Mul", [w, g.node("Sub", [e, x])])])



def _addc(op_type):
    def conv(g, a, out):  # input + value * (tensor1 op tensor2)
        dt = _out_dtype(out)
        q = g.node(op_type, [g.v(a.tensor1, dt), g.v(a.tensor2, dt)])
        if a.value != 1:
            q = g.node("Mul", [q, g.const(a.value, dt)])
        return g.node("Add", [g.v(a.input, dt), q])
    return conv


SYMBOLICS["addcmul"], SYMBOLICS["addcdiv"] = _addc("Mul"), _addc("Div")


@register("isclose")
def _isclose(g, a, out):
    dt = et.result_type(a.input, a.other).np
    x, y = g.v(a.input, dt), g.v(a.other, dt)
    diff = g.node("Abs", [g.node("Sub", [x, y])])
    tol = g.node("Add", [g.const(a.atol, dt),
                         g.node("Mul", [g.const(a.rtol, dt), g.node("Abs", [y])])])
    return g.node("Or", [g.node("LessOrEqual", [diff, tol]), g.node("Equal", [x, y])])


@register("where")
def _where(g, a, out):
    dt = _out_dtype(out)
    return g.node("Where", [g.v(a.condition, np.bool_), g.v(a.input, dt), g.v(a.other, dt)])


@register("masked_fill")
def _masked_fill(g, a, out):
    dt = _out_dtype(out)
    return g.node("Where", [g.v(a.mask, np.bool_), g.v(a.value, dt), g.v(a.input, dt)])


@register("clamp")
def _clamp(g, a, out):
    dt = _out_dtype(out)
    x = g.v(a.input, dt)
    if is_tensor(a.min) or is_tensor(a.max):
        if a.min is not None:
            x = g.node("Max", [x, g.v(a.min, dt)])
        if a.max is not None:
            x = g.node("Min", [x, g.v(a.max, dt)])
        return x
    lo = None if a.min is None else g.v(a.min, dt)
    hi = None if a.max is None else g.v(a.max, dt)
    return g.node("Clip", [x, lo, hi])


# ------------------------------------------------------------------ linear algebra
@register("matmul")
def _matmul(g, a, out):
    dt = _out_dtype(out)
    return g.node("MatMul", [g.v(a.input, dt), g.v(a.other, dt)])


@register("linear")
def _linear(g, a, out):
    dt = _out_dtype(out)
    x, w = g.v(a.input, dt), g.v(a.weight, dt)
    b = None if a.bias is None else g.v(a.bias, dt)
    if len(g.shape(a.input)) == 2 and len(g.shape(a.weight)) == 2 and \
            (a.bias is None or len(g.shape(a.bias)) <= 1):
        return g.node("Gemm", [x, w, b], transB=1)
    y = g.node("MatMul", [x, g.node("Transpose", [w], perm=[1, 0])])
    return y if b is None else g.node("Add", [y, b])


@register("outer")
def _outer(g, a, out):
    dt = _out_dtype(out)
    return g.node("Mul", [g.unsqueeze(g.v(a.input, dt), [1]),
                          g.unsqueeze(g.v(a.vec2, dt), [0])])


@register("kron")
def _kron(g, a, out):
    # the operands viewed with their dims interleaved with ones, so that one broadcast Mul is
    # the result's (a0, b0, a1, b1, ...) layout, then reshaped
    dt = _out_dtype(out)
    sa, sb = tuple(g.shape(a.input)), tuple(g.shape(a.other))
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    x = g.node("Reshape", [g.v(a.input, dt), g.ints([s for d in pa for s in (d, 1)])])
    y = g.node("Reshape", [g.v(a.other, dt), g.ints([s for d in pb for s in (1, d)])])
    return g.node("Reshape", [g.node("Mul", [x, y]), g.ints(list(g.shape(out)))])


@register("einsum")
def _einsum(g, a, out):
    ops = a.operands
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = ops[0]
    dt = _out_dtype(out)
    return g.node("Einsum", [g.v(t, dt) for t in ops], equation=a.equation.replace(" ", ""))


# ------------------------------------------------------------------ reductions
def _reduction(op_type):
    def conv(g, a, out):
        nd = len(g.shape(a.input))
        dt = _out_dtype(out)
        axes = _dims(a.dim, nd)
        return g.reduce(op_type, g.v(a.input, dt), axes, a.keepdim)
    return conv


register("sum", "nansum")(_reduction("ReduceSum"))
register("mean")(_reduction("ReduceMean"))
register("prod")(_reduction("ReduceProd"))
register("logsumexp")(_reduction("ReduceLogSumExp"))


@register("amax", "amin")
def _amax(g, a, out):
    nd = len(g.shape(a.input))
    op_type = "ReduceMax" if g.op.startswith("amax") else "ReduceMin"
    return g.reduce(op_type, g.v(a.input), _dims(a.dim, nd), a.keepdim)


@register("all", "any")
def _all_any(g, a, out):
    nd = len(g.shape(a.input))
    x = g.cast(g.v(a.input, np.bool_), np.int32)
    op_type = "ReduceMin" if g.op.startswith("all") else "ReduceMax"
    return g.cast(g.reduce(op_type, x, _dims(a.dim, nd), a.keepdim), np.bool_)


@register("count_nonzero")
def _count_nonzero(g, a, out):
    nd = len(g.shape(a.input))
    nz = g.cast(g.v(a.input, np.bool_), np.int64)
    return g.reduce("ReduceSum", nz, _dims(a.dim, nd), False)


@register("var")
def _var(g, a, out):
    shape = g.shape(a.input)
    dt = _out_dtype(out)
    axes = _dims(a.dim, len(shape))
    x = g.v(a.input, dt)
    n = int(np.prod([shape[i] for i in (axes if axes is not None else range(len(shape)))]))
    corr = a.correction if a.correction is not None else 1
    d = g.node("Sub", [x, g.reduce("ReduceMean", x, axes, True)])
    s = g.reduce("ReduceSum", g.node("Mul", [d, d]), axes, a.keepdim)
    return g.node("Div", [s, g.const(max(n - corr, 0), dt)])


@register("norm")
def _norm(g, a, out):
    nd = len(g.shape(a.input))
    dt = _out_dtype(out)
    x = g.v(a.input, dt)
    axes = _dims(a.dim, nd)
    p = a.p
    if p in ("fro", 2, 2.0, None):
        return g.reduce("ReduceL2", x, axes, a.keepdim)
    if p in (1, 1.0):
        return g.reduce("ReduceL1", x, axes, a.keepdim)
    if p in (math.inf, "inf"):
        return g.reduce("ReduceMax", g.node("Abs", [x]), axes, a.keepdim)
    if p in (-math.inf, "-inf"):
        return g.reduce("ReduceMin", g.node("Abs", [x]), axes, a.keepdim)
    if isinstance(p, numbers.Number) and p != 0:
        s = g.reduce("ReduceSum", g.node("Pow", [g.node("Abs", [x]), g.const(p, dt)]),
                     axes, a.keepdim)
        return g.node("Pow", [s, g.const(1.0 / p, dt)])
    raise g.unsupported(f"norm with p={p!r}")


def _arg(op_type, g, x, dim, keepdim, shape):
    if dim is None:
        flat = g.node("Reshape", [x, g.ints([-1])])
        r = g.node(op_type, [flat], axis=0, keepdims=0)
        if keepdim:
            return g.node("Reshape", [r, g.ints([1] * len(shape))])
        return r
    return g.node(op_type, [x], axis=_wrap(int(dim), len(shape)), keepdims=int(keepdim))


@register("argmax", "argmin")
def _argmax(g, a, out):
    op_type = "ArgMax" if g.op.startswith("argmax") else "ArgMin"
    return _arg(op_type, g, g.v(a.input), a.dim, a.keepdim, g.shape(a.input))


@register("max_dim", "min_dim")
def _max_dim(g, a, out):
    shape = g.shape(a.input)
    x = g.v(a.input)
    mx = g.op.startswith("max")
    d = _wrap(int(a.dim), len(shape))
    values = g.reduce("ReduceMax" if mx else "ReduceMin", x, [d], a.keepdim)
    idx = _arg("ArgMax" if mx else "ArgMin", g, x, d, a.keepdim, shape)
    return [values, idx]


@register("cumsum")
def _cumsum(g, a, out):
    nd = len(g.shape(a.input))
    return g.node("CumSum", [g.v(a.input, _out_dtype(out)), g.int_scalar(_wrap(a.dim, nd))])


@register("topk")
def _topk(g, a, out):
    nd = len(g.shape(a.input))
    return g.node("TopK", [g.v(a.input), g.ints([a.k])], n_out=2, axis=_wrap(a.dim, nd),
                  largest=int(a.largest), sorted=1)


def _sort_all(g, a):
    """TopK over the whole axis (ties in index order: a stable sort); ``k`` is read from the
    graph where the axis is a dynamic input's."""
    shape = g.shape(a.input)
    d = _wrap(a.dim, len(shape))
    x = g.v(a.input)
    if shape and shape[d] in g.dynamic_sizes:
        k = g.slice(g.node("Shape", [x]), [d], [d + 1], [0])
    else:
        k = g.ints([shape[d] if shape else 1])
    return g.node("TopK", [x, k], n_out=2, axis=d, largest=int(a.descending), sorted=1)


@register("sort")
def _sort(g, a, out):
    return _sort_all(g, a)


@register("argsort")
def _argsort(g, a, out):
    return _sort_all(g, a)[1]


# ------------------------------------------------------------------ copies and casts
@register("clone", "detach", "_ascontiguous", "contiguous")
def _identity(g, a, out):
    return g.node("Identity", [g.v(a.input)])


@register("_to_copy")
def _to_copy(g, a, out):
    dt = _out_dtype(out)
    x = g.v(a.input)
    if np_dtype(a.input) == dt:
        return g.node("Identity", [x])
    return g.cast(x, dt)


@register("copy_")
def _copy(g, a, out):
    dt = _out_dtype(out)
    names = a._fields
    src = getattr(a, "src", None) if "src" in names else a[1]
    y = g.v(src, dt)
    if g.shape(src) != g.shape(out):
        y = g.node("Expand", [y, g.ints(g.shape(out))])
    return g.node("Identity", [y])


@register("fill_")
def _fill(g, a, out):
    dt = _out_dtype(out)
    value = a[1]
    v = g.v(value, dt)
    shape = g.node("Shape", [g.v(a[0])])
    return g.node("Expand", [v, shape])


@register("zero_")
def _zero(g, a, out):
    dt = _out_dtype(out)
    shape = g.node("Shape", [g.v(a[0])])
    return g.node("Expand", [g.const(0, dt), shape])


# ------------------------------------------------------------------ shapes and views
def _reshape_spec(src: tuple, dst: tuple, dynamic_sizes=()) -> list:
    """``dst`` written so that it keeps working when a dynamic dim of the input changes:
    a leading run of dims equal to the input's is ``0`` (copy), and one later dim is ``-1``
    (inferred): one whose traced size is that of a dynamic input axis, else the first."""
    dst = list(dst)
    if 0 in dst or 0 in src:
        return dst
    spec = list(dst)
    i = 0
    while i < min(len(src), len(dst)) and src[i] == dst[i]:
        spec[i] = 0
        i += 1
    if i < len(dst) and -1 not in spec:
        j = next((k for k in range(i, len(dst)) if dst[k] in dynamic_sizes), i)
        spec[j] = -1
    return spec


@register("view", "reshape")
def _view(g, a, out):
    src, dst = g.shape(a.input), g.shape(out)
    x = g.v(a.input)
    if src == dst:
        return g.node("Identity", [x])
    return g.node("Reshape", [x, g.ints(_reshape_spec(src, dst, g.dynamic_sizes))])


@register("permute")
def _permute(g, a, out):
    nd = len(g.shape(a.input))
    return g.node("Transpose", [g.v(a.input)], perm=[_wrap(int(d), nd) for d in a.dims])


@register("expand")
def _expand(g, a, out):
    src, dst = g.shape(a.input), g.shape(out)
    x = g.v(a.input)
    if src == dst:
        return g.node("Identity", [x])
    spec = list(dst)
    off = len(dst) - len(src)
    for i, s in enumerate(src):
        if s == dst[off + i]:
            spec[off + i] = 1  # Expand broadcasts both ways: 1 keeps the input's dim
    return g.node("Expand", [x, g.ints(spec)])


@register("squeeze")
def _squeeze(g, a, out):
    shape = g.shape(a.input)
    dims = a.dims if isinstance(a.dims, (tuple, list)) else (a.dims,)
    axes = sorted({_wrap(int(d), len(shape)) for d in dims if shape and
                   shape[_wrap(int(d), len(shape))] == 1})
    x = g.v(a.input)
    if not axes:
        return g.node("Identity", [x])
    return g.squeeze(x, axes)


@register("unsqueeze")
def _unsqueeze(g, a, out):
    nd = len(g.shape(out))
    return g.unsqueeze(g.v(a.input), [_wrap(int(a.dim), nd)])


def _slice_bounds(start, end, step, size):
    start = 0 if start is None else int(start)
    end = INT64_MAX if end is None else int(end)
    if end >= size:
        end = INT64_MAX  # "to the end", so the slice survives a larger dynamic dim
    return start, end, int(step or 1)


@register("slice_view")
def _slice_view(g, a, out):
    shape = g.shape(a.input)
    d = _wrap(int(a.dim), len(shape))
    start, end, step = _slice_bounds(a.start, a.end, a.step, shape[d])
    return g.slice(g.v(a.input), [start], [end], [d], [step])


@register("select")
def _select(g, a, out):
    shape = g.shape(a.input)
    d = _wrap(int(a.dim), len(shape))
    return g.node("Gather", [g.v(a.input), g.int_scalar(int(a.index))], axis=d)


@register("unbind")
def _unbind(g, a, out):
    shape = g.shape(a.input)
    d = _wrap(int(a.dim), len(shape))
    if not shape[d]:
        return []
    parts = g.node("Split", [g.v(a.input), g.ints([1] * shape[d])], n_out=shape[d], axis=d)
    return [g.squeeze(p, [d]) for p in ([parts] if isinstance(parts, str) else parts)]


@register("cat")
def _cat(g, a, out):
    dt = _out_dtype(out)
    nd = len(g.shape(out))
    ts = [t for t in a.tensors if not (len(g.shape(t)) == 1 and g.shape(t)[0] == 0 and nd > 1)]
    return g.node("Concat", [g.v(t, dt) for t in ts], axis=_wrap(int(a.dim), nd))


@register("stack")
def _stack(g, a, out):
    dt = _out_dtype(out)
    nd = len(g.shape(out))
    d = _wrap(int(a.dim), nd)
    return g.node("Concat", [g.unsqueeze(g.v(t, dt), [d]) for t in a.tensors], axis=d)


@register("index_select")
def _index_select(g, a, out):
    nd = len(g.shape(a.input))
    return g.node("Gather", [g.v(a.input), g.v(a.index, np.int64)], axis=_wrap(a.dim, max(nd, 1)))


@register("repeat_interleave")
def _repeat_interleave(g, a, out):
    # the repeated positions, known when the graph is traced (the counts are concrete), as one
    # Gather; with no repeats the input is the counts and the result those positions
    if a.repeats is None:
        counts = np.asarray(a.input.numpy()).reshape(-1)
        return g.const(np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts))
    shape = g.shape(a.input)
    x = g.v(a.input)
    if a.dim is None or not shape:
        x, axis, n = g.node("Reshape", [x, g.ints([-1])]), 0, int(np.prod(shape, dtype=np.int64))
    else:
        axis = _wrap(a.dim, len(shape))
        n = shape[axis]
    reps = a.repeats.numpy().reshape(-1) if is_tensor(a.repeats) else int(a.repeats)
    idx = np.repeat(np.arange(n, dtype=np.int64), reps)
    return g.node("Gather", [x, g.const(idx)], axis=axis)


@register("gather")
def _gather(g, a, out):
    nd = len(g.shape(a.input))
    return g.node("GatherElements", [g.v(a.input), g.v(a.index, np.int64)],
                  axis=_wrap(a.dim, max(nd, 1)))


@register("tril", "triu")
def _trilu(g, a, out):
    upper = int(g.op.startswith("triu"))
    return g.node("Trilu", [g.v(a.input), g.int_scalar(a.diagonal)], upper=upper)


def _flat_ints(x):
    if isinstance(x, numbers.Integral):
        return [int(x)]
    outl = []
    for e in x:
        outl.extend(_flat_ints(e))
    return outl


@register("flip")
def _flip(g, a, out):
    shape = g.shape(a.input)
    dims = _flat_ints(a.dims) if a.dims else _flat_ints(a.kwargs.get("dims", ()))
    dims = [_wrap(d, len(shape)) for d in dims]
    x = g.v(a.input)
    if not dims:
        return g.node("Identity", [x])
    return g.slice(x, [-1] * len(dims), [INT64_MIN] * len(dims), dims, [-1] * len(dims))


@register("repeat")
def _repeat(g, a, out):
    sizes = _flat_ints(a.sizes)
    shape = g.shape(a.input)
    x = g.v(a.input)
    if len(sizes) > len(shape):
        x = g.node("Reshape", [x, g.ints([1] * (len(sizes) - len(shape)) + list(shape))])
    return g.node("Tile", [x, g.ints(sizes)])


@register("roll")
def _roll(g, a, out):
    shape = g.shape(a.input)
    shifts = _flat_ints(a.shifts)
    x = g.v(a.input)
    if a.dims is None:
        x = g.node("Reshape", [x, g.ints([-1])])
        n = int(np.prod(shape)) if shape else 1
        pairs = [(0, shifts[0], n)]
    else:
        dims = [_wrap(d, len(shape)) for d in _flat_ints(a.dims)]
        pairs = [(d, s, shape[d]) for d, s in zip(dims, shifts)]
    for d, s, n in pairs:
        s = s % n if n else 0
        if s:
            tail = g.slice(x, [n - s], [INT64_MAX], [d])
            head = g.slice(x, [0], [n - s], [d])
            x = g.node("Concat", [tail, head], axis=d)
    if a.dims is None:
        x = g.node("Reshape", [x, g.ints(list(shape))])
    return x


@register("nonzero")
def _nonzero(g, a, out):
    nz = g.node("NonZero", [g.v(a.input)])
    if not a.as_tuple:
        return g.node("Transpose", [nz], perm=[1, 0])
    return [g.node("Gather", [nz, g.int_scalar(i)], axis=0)
            for i in range(len(g.shape(a.input)))]


@register("scatter_add")
def _scatter_add(g, a, out):
    nd = len(g.shape(a.input))
    dt = _out_dtype(out)
    return g.node("ScatterElements", [g.v(a.input, dt), g.v(a.index, np.int64),
                                      g.v(a.src, dt)], axis=_wrap(a.dim, max(nd, 1)),
                  reduction="add")


@register("scatter")
def _scatter(g, a, out):
    nd = len(g.shape(a.input))
    dt = _out_dtype(out)
    if a.src is not None and is_tensor(a.src):
        src = g.v(a.src, dt)
        if g.shape(a.src) != g.shape(a.index):
            src = g.slice(src, [0] * nd, list(g.shape(a.index)), list(range(nd)))
    else:
        value = a.value if a.value is not None else a.src
        src = g.node("Expand", [g.v(value, dt), g.node("Shape", [g.v(a.index)])])
    red = {None: None, "add": "add", "multiply": "mul"}.get(a.reduce, "?")
    if red == "?":
        raise g.unsupported(f"scatter reduce={a.reduce!r}")
    return g.node("ScatterElements", [g.v(a.input, dt), g.v(a.index, np.int64), src],
                  axis=_wrap(a.dim, max(nd, 1)), reduction=red)


@register("index_put")
def _index_put(g, a, out):
    idx = a.indices
    if isinstance(idx, (list, tuple)) and len(idx) == 1 and is_tensor(idx[0]) and \
            np_dtype(idx[0]) != np.bool_:
        dt = _out_dtype(out)
        shape = g.shape(a.input)
        i = g.unsqueeze(g.v(idx[0], np.int64), [-1])
        vshape = list(g.shape(idx[0])) + list(shape[1:])
        vals = g.node("Expand", [g.v(a.values, dt), g.ints(vshape)])
        return g.node("ScatterND", [g.v(a.input, dt), i, vals],
                      reduction="add" if a.accumulate else None)
    raise g.unsupported("index_put with indices other than one integer tensor")


@register("take")
def _take(g, a, out):
    # the input seen as 1-D at the index (Gather counts negative positions from the end, as
    # PyTorch's take does); the result has the index's shape
    flat = g.node("Reshape", [g.v(a.input, _out_dtype(out)), g.ints([-1])])
    return g.node("Gather", [flat, g.v(a.index, np.int64)], axis=0)


@register("put")
def _put(g, a, out):
    dt = _out_dtype(out)
    shape = list(g.shape(a.input))
    n = int(np.prod(shape))
    flat = g.node("Reshape", [g.v(a.input, dt), g.ints([-1])])
    idx = g.node("Reshape", [g.v(a.index, np.int64), g.ints([-1, 1])])
    # negative positions count from the end, as in PyTorch's put
    idx = g.node("Where", [g.node("Less", [idx, g.const(0, np.int64)]),
                           g.node("Add", [idx, g.const(n, np.int64)]), idx])
    src = g.node("Reshape", [g.v(a.source, dt), g.ints([-1])])
    r = g.node("ScatterND", [flat, idx, src], reduction="add" if a.accumulate else None)
    return g.node("Reshape", [r, g.ints(shape)])


@register("renorm")
def _renorm(g, a, out):
    # each slice along dim scaled by maxnorm / (norm + 1e-7) where its p-norm exceeds maxnorm
    dt = _out_dtype(out)
    nd = len(g.shape(a.input))
    d = _wrap(a.dim, nd)
    spec = SimpleNamespace(input=a.input, dim=[i for i in range(nd) if i != d], p=a.p,
                           keepdim=True)
    norm = _norm(g, spec, out)
    maxnorm = g.const(float(a.maxnorm), dt)
    scale = g.node("Where", [g.node("Greater", [norm, maxnorm]),
                             g.node("Div", [maxnorm, g.node("Add", [norm, g.const(1e-7, dt)])]),
                             g.const(1.0, dt)])
    return g.node("Mul", [g.v(a.input, dt), scale])


# ------------------------------------------------------------------ indexing
def _norm_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    return index


@register("getitem")
def _getitem(g, a, out):
    shape = list(g.shape(a.input))
    index = _norm_index(a.index)
    # expand Ellipsis
    consumed = 0
    for e in index:
        if e is None or e is Ellipsis:
            continue
        if is_tensor(e) and np_dtype(e) == np.bool_:
            consumed += len(g.shape(e))
        else:
            consumed += 1
    items = []
    for e in index:
        if e is Ellipsis:
            items.extend([slice(None)] * (len(shape) - consumed))
        else:
            items.append(e)
    adv = [i for i, e in enumerate(items)
           if is_tensor(e) or isinstance(e, (list, np.ndarray))]
    ints = [i for i, e in enumerate(items) if isinstance(e, numbers.Integral)
            and not isinstance(e, bool)]
    if len(adv) > 1:
        raise g.unsupported("indexing with more than one tensor index")
    if adv and ints:
        block = sorted(adv + ints)
        if block != list(range(block[0], block[-1] + 1)):
            raise g.unsupported("a tensor index separated from an integer index")
    x = g.v(a.input)
    axis = 0
    cur = list(shape)
    for e in items:
        if e is None:
            x = g.unsqueeze(x, [axis])
            cur.insert(axis, 1)
            axis += 1
        elif isinstance(e, slice):
            if e.step is not None and e.step < 0:
                raise g.unsupported("a negative slice step")
            if not (e.start in (None, 0) and e.stop is None and e.step in (None, 1)):
                size = cur[axis]
                start = 0 if e.start is None else int(e.start)
                start, end, step = _slice_bounds(start, e.stop, e.step, size)
                if e.stop is not None and int(e.stop) < 0:
                    end = int(e.stop)
                x = g.slice(x, [start], [end], [axis], [step])
                cur[axis] = len(range(*slice(start, min(end, size), step).indices(size)))
            axis += 1
        elif isinstance(e, bool):
            raise g.unsupported("a Python bool index")
        elif isinstance(e, numbers.Integral):
            x = g.node("Gather", [x, g.int_scalar(int(e))], axis=axis)
            cur.pop(axis)
        else:
            t = e
            if not is_tensor(t):
                arr = np.asarray(t)
                name = g.const(arr.astype(np.bool_ if arr.dtype == np.bool_ else np.int64))
                tdt, tshape = arr.dtype, arr.shape
            else:
                name, tdt, tshape = g.v(t), np_dtype(t), g.shape(t)
            if tdt == np.bool_:
                if len(tshape) == 1:
                    x = g.node("Compress", [x, name], axis=axis)
                    cur[axis] = -1
                    axis += 1
                elif len(tshape) == len(cur) - axis and axis == 0:
                    flat = g.node("Reshape", [x, g.ints([-1])])
                    x = g.node("Compress", [flat, g.node("Reshape", [name, g.ints([-1])])],
                               axis=0)
                    cur = [-1]
                    axis = 1
                else:
                    raise g.unsupported("a multi-dimensional boolean mask not covering "
                                        "the leading dims")
            else:
                if tdt != np.int64:
                    name = g.cast(name, np.int64)
                x = g.node("Gather", [x, name], axis=axis)
                cur[axis:axis + 1] = list(tshape)
                axis += len(tshape)
    return g.node("Identity", [x])


@register("setitem")
def _setitem(g, a, out):
    """Out-of-place (and, through ``setitem_``, in-place) ``x[index] = value`` for an index of
    integers and slices, as ``ScatterND`` over the covered positions."""
    shape = g.shape(a.input)
    dt = _out_dtype(out)
    index = _norm_index(a.index)
    if any(not (isinstance(e, (slice, numbers.Integral)) or e is Ellipsis) or
           isinstance(e, bool) for e in index):
        raise g.unsupported("setitem with an index other than integers and slices")
    pos = np.arange(int(np.prod(shape)) if shape else 1, dtype=np.int64).reshape(shape)
    sub = pos[index]
    coords = np.stack(np.unravel_index(sub.reshape(-1), shape), -1) if shape else \
        np.zeros((1, 0), np.int64)
    vals = g.node("Expand", [g.v(a.value, dt), g.ints(list(sub.shape))])
    vals = g.node("Reshape", [vals, g.ints([-1])])
    return g.node("ScatterND", [g.v(a.input, dt), g.const(coords.astype(np.int64)), vals])


# ------------------------------------------------------------------ nn primitives
def _tuple(v, n: int) -> list:
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    v = [int(e) for e in v]
    return v * n if len(v) == 1 else v


def _batched(g, a_input, nd: int):
    """The input's value, with a batch dim added for an unbatched (C, *spatial) input."""
    x = g.v(a_input)
    if len(g.shape(a_input)) == nd + 1:
        return g.unsqueeze(x, [0]), True
    return x, False


@register("convolution")
def _convolution(g, a, out):
    nd = len(g.shape(a.weight)) - 2
    x, unbatched = _batched(g, a.input, nd)
    dt = _out_dtype(out)
    ins = [x if np_dtype(a.input) == dt else g.cast(x, dt), g.v(a.weight, dt),
           None if a.bias is None else g.v(a.bias, dt)]
    if ins[2] is None:
        ins.pop()
    attrs = {"strides": _tuple(a.stride, nd), "dilations": _tuple(a.dilation, nd),
             "group": int(a.groups)}
    if isinstance(a.padding, str):
        if a.padding == "same":
            attrs["auto_pad"] = "SAME_UPPER"
        elif a.padding != "valid":
            raise g.unsupported(f"padding={a.padding!r}")
    else:
        p = _tuple(a.padding, nd)
        attrs["pads"] = p + p
    if a.transposed:
        attrs["output_padding"] = _tuple(a.output_padding, nd)
        y = g.node("ConvTranspose", ins, **attrs)
    else:
        y = g.node("Conv", ins, **attrs)
    return g.squeeze(y, [0]) if unbatched else y


@register("native_layer_norm")
def _native_layer_norm(g, a, out):
    """ONNX's LayerNormalization (opset 17): the same three outputs (Y, Mean, InvStdDev);
    its Scale input is required, so a missing weight is a constant of ones."""
    dt = _out_dtype(out)
    shape = g.shape(a.input)
    ns = [a.normalized_shape] if isinstance(a.normalized_shape, int) else \
        list(a.normalized_shape)
    scale = g.v(a.weight, dt) if a.weight is not None else g.const(np.ones(ns), dt)
    ins = [g.v(a.input, dt), scale] + ([] if a.bias is None else [g.v(a.bias, dt)])
    return g.node("LayerNormalization", ins, n_out=3, axis=len(shape) - len(ns),
                  epsilon=float(a.eps))


@register("max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(g, a, out):
    nd = int(g.op[len("max_pool")])
    x, unbatched = _batched(g, a.input, nd)
    k = _tuple(a.kernel_size, nd)
    s = _tuple(a.stride, nd) if a.stride not in ((), None, []) else list(k)
    p = _tuple(a.padding, nd)
    y, idx = g.node("MaxPool", [x], n_out=2, kernel_shape=k, strides=s, pads=p + p,
                    dilations=_tuple(a.dilation, nd), ceil_mode=int(bool(a.ceil_mode)))
    # ONNX indexes the whole tensor; ember (like PyTorch) indexes each plane
    plane = int(np.prod(g.shape(a.input)[-nd:]))
    idx = g.node("Mod", [idx, g.const(np.asarray(plane, np.int64))], fmod=0)
    if unbatched:
        y, idx = g.squeeze(y, [0]), g.squeeze(idx, [0])
    return [y, idx]


@register("embedding")
def _embedding(g, a, out):
    return g.node("Gather", [g.v(a.weight), g.v(a.indices)], axis=0)


@register("im2col")
def _im2col(g, a, out):
    """Sliding blocks as a grouped convolution with one-hot kernels: output channel
    ``c*K + j`` copies input channel ``c`` at kernel offset ``j`` (exact: one product by 1)."""
    shape = g.shape(a.input)
    nd = len(shape) - 2
    k = _tuple(a.kernel_size, nd)
    C = shape[1]
    K = int(np.prod(k))
    dt = np_dtype(a.input)
    w = np.zeros((C * K, 1, *k), dtype=dt)
    for c in range(C):
        for j in range(K):
            w[(c * K + j, 0) + np.unravel_index(j, k)] = 1
    p = _tuple(a.padding, nd)
    y = g.node("Conv", [g.v(a.input), g.const(w)], kernel_shape=k, strides=_tuple(a.stride, nd),
               pads=p + p, dilations=_tuple(a.dilation, nd), group=C)
    return g.node("Reshape", [y, g.ints([0, C * K, -1])])


@register("lstm_cell_fused")
def _lstm_cell(g, a, out):
    dt = _out_dtype(out)
    z = g.node("Add", [g.v(a.input_gates, dt), g.v(a.hidden_gates, dt)])
    i, f, c, o = g.node("Split", [z], n_out=4, axis=1, num_outputs=4) if g.opset >= 18 else \
        g.node("Split", [z], n_out=4, axis=1)
    cy = g.node("Add", [g.node("Mul", [g.node("Sigmoid", [f]), g.v(a.cx, dt)]),
                        g.node("Mul", [g.node("Sigmoid", [i]), g.node("Tanh", [c])])])
    hy = g.node("Mul", [g.node("Sigmoid", [o]), g.node("Tanh", [cy])])
    return [hy, cy]


@register("gru_cell_fused")
def _gru_cell(g, a, out):
    dt = _out_dtype(out)
    H = g.shape(a.hx)[-1]
    xi, hi = g.v(a.input_gates, dt), g.v(a.hidden_gates, dt)
    rz = g.node("Sigmoid", [g.node("Add", [g.slice(xi, [0], [2 * H], [1]),
                                           g.slice(hi, [0], [2 * H], [1])])])
    r, z = g.slice(rz, [0], [H], [1]), g.slice(rz, [H], [2 * H], [1])
    n = g.node("Tanh", [g.node("Add", [g.slice(xi, [2 * H], [3 * H], [1]),
                                       g.node("Mul", [r, g.slice(hi, [2 * H], [3 * H], [1])])])])
    hx = g.v(a.hx, dt)
    return g.node("Add", [n, g.node("Mul", [z, g.node("Sub", [hx, n])])])


@register("split_with_sizes")
def _split_with_sizes(g, a, out):
    nd = len(g.shape(a.input))
    sizes = _flat_ints(a.split_sizes)
    names = g.node("Split", [g.v(a.input), g.ints(sizes)], n_out=len(sizes),
                   axis=_wrap(int(a.dim), nd))
    return [names] if isinstance(names, str) else names


# ------------------------------------------------------------------ softmax family (ember's
# fused registry ops _softmax / _log_softmax)
def _softmax_conv(op_type):
    def conv(g, a, out):
        dt = _out_dtype(out)
        nd = len(g.shape(a.input))
        x = g.v(a.input, dt)
        if nd == 0:
            x = g.node("Reshape", [x, g.ints([1])])
            y = g.node(op_type, [x], axis=0)
            return g.node("Reshape", [y, g.ints([])])
        return g.node(op_type, [x], axis=_wrap(int(a.dim), nd))
    return conv


register("_softmax")(_softmax_conv("Softmax"))
register("_log_softmax")(_softmax_conv("LogSoftmax"))


# ====================================================================== module converters
# A module converter records a whole ``Module.__call__`` as ONNX nodes instead of tracing the
# registry ops inside it. ``MODULE_SYMBOLICS`` maps a Module class to ``(accepts, convert)``:
# ``accepts(g, module, args, kwargs)`` says whether this call can be converted (else the trace
# goes inside the module as usual); ``convert(g, module, args, kwargs, out)`` appends nodes after
# the module ran (opaquely) and returns one value name per tensor of ``out``, in flattened order.
MODULE_SYMBOLICS: dict = {}


def register_module(*types, accepts=None):
    """Register ``convert(g, module, args, kwargs, out)`` for the Module classes ``types``
    (and their subclasses); ``accepts(g, module, args, kwargs)`` (default: always) decides per
    call."""
    def deco(fn):
        for t in types:
            MODULE_SYMBOLICS[t] = (accepts or (lambda g, m, a, k: True), fn)
        return fn
    return deco


def module_symbolic(module):
    """The ``(accepts, convert)`` pair registered for ``type(module)`` or its nearest base."""
    for cls in type(module).__mro__:
        hit = MODULE_SYMBOLICS.get(cls)
        if hit is not None:
            return hit
    return None


# ------------------------------------------------------------------ losses
_REDUCTION_NAMES = {0: "none", 1: "mean", 2: "sum"}


def _reduction_name(reduction) -> str:
    return reduction if isinstance(reduction, str) else _REDUCTION_NAMES[int(reduction)]


def _class_inputs(g, a):
    """Scores, labels (int32 or int64), the labels' dtype and the weight of a class-index loss;
    a (C,) input with a 0-d target gets a batch dim of one (the returned flag: squeeze it from
    an unreduced loss)."""
    tdt = np_dtype(a.target)
    tdt = tdt if tdt in (np.int32, np.int64) else np.dtype(np.int64)
    x, t = g.v(a.input), g.v(a.target, tdt)
    w = None if a.weight is None else g.v(a.weight, np_dtype(a.input))
    unbatched = len(g.shape(a.input)) == 1
    if unbatched:
        x, t = g.unsqueeze(x, [0]), g.unsqueeze(t, [0])
    return x, t, tdt, w, unbatched


def _loss_node(g, op_type, ins, n_out=1, **attrs):
    while ins[-1] is None:
        ins = ins[:-1]
    return g.node(op_type, ins, n_out=n_out, **attrs)


@register("cross_entropy_loss")
def _cross_entropy_loss(g, a, out):
    """``SoftmaxCrossEntropyLoss``; with ``label_smoothing`` its unreduced loss plus
    ``eps / C`` times the weighted negative log-probabilities summed over the classes (the
    log-probabilities are its second output), reduced like PyTorch (the mean divides by the
    summed weights of the counted targets)."""
    x, t, tdt, w, unbatched = _class_inputs(g, a)
    reduction = _reduction_name(a.reduction)
    ignore = int(a.ignore_index)
    eps = float(a.label_smoothing)
    if eps == 0.0:
        loss = _loss_node(g, "SoftmaxCrossEntropyLoss", [x, t, w], reduction=reduction,
                          ignore_index=ignore)
        return g.squeeze(loss, [0]) if unbatched and reduction == "none" else loss
    dt = np_dtype(a.input)
    shape = (1,) + g.shape(a.input) if unbatched else g.shape(a.input)
    C = shape[1]
    loss, logp = _loss_node(g, "SoftmaxCrossEntropyLoss", [x, t, w], n_out=2,
                            reduction="none", ignore_index=ignore)
    if w is not None:
        wshape = [1] * len(shape)
        wshape[1] = C
        logp = g.node("Mul", [logp, g.node("Reshape", [w, g.ints(wshape)])])
    counted = g.node("Not", [g.node("Equal", [t, g.const(ignore, tdt)])])
    zero = g.const(0, dt)
    smooth = g.node("Where", [counted, g.node("Neg", [g.reduce("ReduceSum", logp, [1], False)]),
                              zero])
    loss = g.node("Add", [g.node("Mul", [loss, g.const(1.0 - eps, dt)]),
                          g.node("Mul", [smooth, g.const(eps / C, dt)])])
    if reduction == "none":
        return g.squeeze(loss, [0]) if unbatched else loss
    total = g.reduce("ReduceSum", loss, None, False)
    if reduction == "sum":
        return total
    share = g.cast(counted, dt)
    if w is not None:
        safe = g.node("Where", [counted, t, g.const(0, tdt)])
        share = g.node("Mul", [g.node("Gather", [w, safe], axis=0), share])
    return g.node("Div", [total, g.reduce("ReduceSum", share, None, False)])


@register("nll_loss_forward")
def _nll_loss_forward(g, a, out):
    """``NegativeLogLikelihoodLoss``; the second output, PyTorch's ``total_weight`` (the summed
    weights of the counted targets, 0 for an unreduced batched loss), from the target and the
    weight (pruned when nothing reads it)."""
    x, t, tdt, w, unbatched = _class_inputs(g, a)
    reduction = _reduction_name(a.reduction)
    ignore = int(a.ignore_index)
    loss = _loss_node(g, "NegativeLogLikelihoodLoss", [x, t, w], reduction=reduction,
                      ignore_index=ignore)
    if unbatched and reduction == "none":
        loss = g.squeeze(loss, [0])
    dt = np_dtype(a.input)
    if reduction == "none" and not unbatched:
        return [loss, g.const(0, dt)]
    counted = g.node("Not", [g.node("Equal", [t, g.const(ignore, tdt)])])
    share = g.cast(counted, dt)
    if w is not None:
        safe = g.node("Where", [counted, t, g.const(0, tdt)])
        share = g.node("Mul", [g.node("Gather", [w, safe], axis=0), share])
    return [loss, g.reduce("ReduceSum", share, None, False)]


# ------------------------------------------------------------------ packed sequences
# ``_pack_padded_sequence`` / ``_pad_packed_sequence`` are registry ops like any other. ONNX's
# recurrent operators take a padded batch and its lengths (``sequence_lens``), not packed rows,
# so the graph keeps each packed batch it sees made in a padded form too (``Packed``, by the id of
# its ``data`` tensor): a recurrent layer reading it runs on that, and the unpacking of its output
# reads the operator's padded output directly.
class Packed(NamedTuple):
    """How the graph holds a packed batch besides its packed rows."""

    padded: str  # (T, N, *) time-major, the sequences in their packed (decreasing length) order
    lengths: str  # (N,) int64, decreasing
    zero_padded: bool  # the steps past each length hold zeros (a recurrent operator's Y)


def _step_mask(g, padded: str, lengths: str) -> str:
    """(T, N) bool: step t of sequence n is within its length."""
    T = g.node("Gather", [g.node("Shape", [padded]), g.int_scalar(0)], axis=0)
    steps = g.node("Range", [g.int_scalar(0), T, g.int_scalar(1)])
    return g.node("Less", [g.unsqueeze(steps, [1]), g.unsqueeze(lengths, [0])])


def _track(g, data, info: Packed) -> list:
    """Remember ``info`` for the packed ``data`` tensor; returns the values of ``data`` and of
    its ``batch_sizes``, computed from ``info``: the steps within their lengths, gathered
    time-major, and the number of sequences running at each step."""
    g.tracer.packed[id(data)] = info
    g.tracer.keep.append(data)  # alive, so its id stays its own
    mask = _step_mask(g, info.padded, info.lengths)  # (T, N)
    rows = g.node("Reshape", [info.padded, g.ints([-1] + list(g.shape(data)[1:]))])
    packed = g.node("Compress", [rows, g.node("Reshape", [mask, g.ints([-1])])], axis=0)
    counts = g.reduce("ReduceSum", g.cast(mask, np.int64), [1], False)
    return [packed, g.node("Compress", [counts, g.node("Greater", [counts, g.int_scalar(0)])],
                           axis=0)]


def _unpacked(g, data, batch_sizes) -> Packed:
    """The padded form of a packed batch the trace did not see made: zeros past each length,
    each step's ``batch_sizes[t]`` rows of ``data`` placed by one Gather (the padding reads
    an appended zero row)."""
    d, bs = g.v(data), g.v(batch_sizes, np.int64)
    shape = g.node("Shape", [d])
    B = g.slice(bs, [0], [1], [0])  # [1]
    cols = g.node("Range", [g.int_scalar(0), g.squeeze(B, [0]), g.int_scalar(1)])
    mask = g.node("Less", [g.unsqueeze(cols, [0]), g.unsqueeze(bs, [1])])  # (T, B)
    lengths = g.reduce("ReduceSum", g.cast(mask, np.int64), [0], False)
    flat = g.node("Reshape", [mask, g.ints([-1])])
    row = g.node("Sub", [g.node("CumSum", [g.cast(flat, np.int64), g.int_scalar(0)]),
                         g.int_scalar(1)])
    pad_row = g.squeeze(g.slice(shape, [0], [1], [0]), [0])  # index of the appended zero row
    rest = g.slice(shape, [1], [INT64_MAX], [0])
    zero = g.node("Expand", [g.const(0, np_dtype(data)),
                             g.node("Concat", [g.ints([1]), rest], axis=0)])
    table = g.node("Concat", [d, zero], axis=0)
    placed = g.node("Gather", [table, g.node("Where", [flat, row, pad_row])], axis=0)
    padded = g.node("Reshape", [placed, g.node("Concat", [g.node("Shape", [bs]), B, rest],
                                                 axis=0)])
    return Packed(padded, lengths, True)


@register("_pack_padded_sequence")
def _pack_padded_sequence(g, a, out):
    """The input (sorted by decreasing length by ``pack_padded_sequence``'s ``sort`` and
    ``index_select`` where it was not) is kept as the batch's padded form."""
    x = g.v(a.input)
    if a.batch_first:
        nd = len(g.shape(a.input))
        x = g.node("Transpose", [x], perm=[1, 0] + list(range(2, nd)))
    return _track(g, out[0], Packed(x, g.v(a.lengths, np.int64), False))


@register("_pad_packed_sequence")
def _pad_packed_sequence(g, a, out):
    """The padded form, cut at the longest length (``total_length <= 0``) or cut / padded to
    ``total_length`` steps, ``padding_value`` past each length; the lengths."""
    info = g.tracer.packed.get(id(a.data))
    if info is None:
        info = _unpacked(g, a.data, a.batch_sizes)
    dt = _out_dtype(out)
    nd = len(g.shape(out[0]))
    if int(a.total_length) <= 0:  # up to the longest sequence
        longest = g.node("Reshape", [g.reduce("ReduceMax", info.lengths, None, False),
                                     g.ints([1])])
        y = g.node("Slice", [info.padded, g.ints([0]), longest, g.ints([0])])
    else:  # exactly total_length steps: cut, or pad at the end
        total = int(a.total_length)
        y = g.slice(info.padded, [0], [total], [0])
        short = g.node("Sub", [g.ints([total]), g.slice(g.node("Shape", [y]), [0], [1], [0])])
        pads = g.node("Concat", [g.ints([0] * nd), short, g.ints([0] * (nd - 1))], axis=0)
        y = g.node("Pad", [y, pads])
    if not info.zero_padded or a.padding_value != 0:
        mask = _step_mask(g, y, info.lengths)
        if nd > 2:
            mask = g.unsqueeze(mask, list(range(2, nd)))
        y = g.node("Where", [mask, y, g.const(a.padding_value, dt)])
    if a.batch_first:
        y = g.node("Transpose", [y], perm=[1, 0] + list(range(2, nd)))
    return [y, g.node("Identity", [info.lengths])]


# ------------------------------------------------------------------ recurrent layers
# PyTorch's gate blocks, in ONNX's order: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h.
_GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_ONNX_RNN = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _rnn_args(args, kwargs):
    x = args[0] if args else kwargs.get("input")
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    return x, hx


def _rnn_accepts(g, module, args, kwargs) -> bool:
    if type(module).forward is not nn.RNNBase.forward:
        return False  # a subclass with its own forward: trace inside
    if module.mode not in _GATE_ORDER or module.proj_size:
        return False  # ONNX's LSTM has no projection
    if module.training and module.dropout and module.num_layers > 1:
        return False  # dropout between layers: no ONNX equivalent in the operator
    x, hx = _rnn_args(args, kwargs)
    if isinstance(x, rnn_utils.PackedSequence):
        if id(x.data) not in g.tracer.packed:
            return False  # not packed by _pack_padded_sequence in this trace: trace inside
        x = x.data
    elif not is_tensor(x) or x.dim() not in (2, 3):
        return False  # an invalid input: the layer's own error
    states = [] if hx is None else (list(hx) if module.mode == "LSTM" else [hx])
    if not all(is_tensor(s) for s in states):
        return False
    return np_dtype(x) in (np.float32, np.float64, np.float16)


def _rnn_weights(g, module, layer: int):
    """The ONNX ``W``, ``R``, ``B`` inputs of one layer (both directions), made once per module
    and layer from the layer's own parameters (initializers named by their state_dict keys):
    a ``Gather`` puts PyTorch's gate blocks in ONNX's order, ``Unsqueeze`` / ``Concat`` stack
    the directions, ``B`` is the input bias then the hidden one. An imported model so keeps
    PyTorch's parameters, and its gradients are theirs."""
    cache = g.tracer.rnn_weights
    key = (id(module), layer)
    hit = cache.get(key)
    if hit is not None:
        return hit
    H, order = module.hidden_size, _GATE_ORDER[module.mode]
    rows = g.const(np.concatenate([np.arange(i * H, (i + 1) * H) for i in order])) \
        if len(order) > 1 else None
    dirs = ["", "_reverse"] if module.bidirectional else [""]

    def gates(name, sfx):
        v = g.v(getattr(module, f"{name}_l{layer}{sfx}"))
        return v if rows is None else g.node("Gather", [v, rows], axis=0)

    def stack(per_dir):
        per_dir = [g.unsqueeze(v, [0]) for v in per_dir]
        return per_dir[0] if len(per_dir) == 1 else g.node("Concat", per_dir, axis=0)

    names = [stack([gates("weight_ih", sfx) for sfx in dirs]),
             stack([gates("weight_hh", sfx) for sfx in dirs])]
    names.append(stack([g.node("Concat", [gates("bias_ih", sfx), gates("bias_hh", sfx)], axis=0)
                        for sfx in dirs]) if module.bias else None)
    cache[key] = names
    return names


@register_module(nn.RNNBase, accepts=_rnn_accepts)
def _rnn_module(g, module, args, kwargs, out):
    """``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` as one ONNX ``RNN`` / ``LSTM`` / ``GRU`` node per
    layer, with Transpose / Reshape / Squeeze / Concat glue for ``batch_first``, the directions
    and the layers' stacking: sequence length and batch stay free. A PackedSequence input (its
    data made by ``_pack_padded_sequence`` in this trace) runs padded, in its packed order, with
    its lengths as ``sequence_lens``, the initial state gathered by its ``sorted_indices`` and
    the final one by its ``unsorted_indices`` (as the layer does); the output is again such a
    PackedSequence."""
    mode = module.mode
    is_lstm = mode == "LSTM"
    D = 2 if module.bidirectional else 1
    H, L = module.hidden_size, module.num_layers
    x, hx = _rnn_args(args, kwargs)
    packed = g.tracer.packed.get(id(x.data)) if isinstance(x, rnn_utils.PackedSequence) \
        else None
    if packed is not None:
        dt, batched = np_dtype(x.data), True
        X, seq_lens = packed.padded, g.cast(packed.lengths, np.int32)
    else:
        dt, batched, seq_lens = np_dtype(x), x.dim() == 3, None
        X = g.v(x)
        if not batched:
            X = g.unsqueeze(X, [1])  # (T, 1, I)
        elif module.batch_first:
            X = g.node("Transpose", [X], perm=[1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        h0, c0 = (hx[0], hx[1]) if is_lstm else (hx, None)
        h0 = g.v(h0, dt)
        c0 = g.v(c0, dt) if c0 is not None else None
        if packed is not None and x.sorted_indices is not None:
            order = g.v(x.sorted_indices)
            h0 = g.node("Gather", [h0, order], axis=1)
            c0 = g.node("Gather", [c0, order], axis=1) if c0 is not None else None
        if not batched:
            h0 = g.unsqueeze(h0, [1])
            c0 = g.unsqueeze(c0, [1]) if c0 is not None else None
    attrs = {"hidden_size": H, "direction": "bidirectional" if D == 2 else "forward"}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1
    elif mode == "RNN_RELU":
        attrs["activations"] = ["Relu"] * D
    hs, cs = [], []
    for k in range(L):
        W, R, B = _rnn_weights(g, module, k)
        ins = [X, W, R, B, seq_lens]
        if h0 is not None:
            ins.append(h0 if L == 1 else g.slice(h0, [k * D], [(k + 1) * D], [0]))
            if c0 is not None:
                ins.append(c0 if L == 1 else g.slice(c0, [k * D], [(k + 1) * D], [0]))
        elif is_lstm:
            ins += [None, None]
        while ins and ins[-1] is None:
            ins.pop()
        outs = g.node(_ONNX_RNN[mode], ins, n_out=3 if is_lstm else 2, **attrs)
        Y = outs[0]  # (T, D, N, H)
        hs.append(outs[1])
        if is_lstm:
            cs.append(outs[2])
        if D == 1:
            X = g.squeeze(Y, [1])
        else:
            X = g.node("Reshape", [g.node("Transpose", [Y], perm=[0, 2, 1, 3]),
                                   g.ints([0, 0, -1])])
    output = X  # (T, N, D*H)
    h_n = hs[0] if L == 1 else g.node("Concat", hs, axis=0)
    c_n = (cs[0] if L == 1 else g.node("Concat", cs, axis=0)) if is_lstm else None
    states = [h_n] + ([c_n] if is_lstm else [])
    if packed is not None:
        if x.unsorted_indices is not None:
            back = g.v(x.unsorted_indices)
            states = [g.node("Gather", [s, back], axis=1) for s in states]
        ps = out[0]
        names = _track(g, ps.data, Packed(output, packed.lengths, True))
        names += [g.v(i) for i in (ps.sorted_indices, ps.unsorted_indices) if i is not None]
        return names + states
    if not batched:
        output = g.squeeze(output, [1])
        states = [g.squeeze(s, [1]) for s in states]
    elif module.batch_first:
        output = g.node("Transpose", [output], perm=[1, 0, 2])
    return [output] + states
