"""The one table of derivatives.

One entry per differentiable op of ember.tensor's registry: ``@vjp(name, save=..., out=...)``
names the arguments the formula reads (by position in the op's signature or by name; only those
are kept alive and checked against version counters) and whether it reads the op's output. A
formula gets ``c`` (``c.args``: the bound call, every parameter in declared order, readable by
name as ``c.args.dim``; ``c.out``; ``c.needs``) and the output gradient ``g``, and returns one
gradient per parameter in declared order (trailing ones may be left out; None where there is
none; a list for a list argument). Formulas are written
with ember ops, so with ``create_graph=True`` they are recorded too and second derivatives come
from the same table. Gradients come back in the broadcast shape and result dtype; the engine
reduces them to each input's shape and dtype in one place (``engine._reduce_to``).
"""
from __future__ import annotations

import math

import ember.tensor as et
from ember.tensor import extension as _ext

from .engine import _Rows
from .grad_mode import grad_enabled as _grad_on

__all__ = ["TABLE", "vjp"]

# the fused backward primitives (registry ops named as PyTorch's aten ops)
_tanh_bw = _ext.OPS["tanh_backward"].public
_sigmoid_bw = _ext.OPS["sigmoid_backward"].public
_threshold_bw = _ext.OPS["threshold_backward"].public


class Entry:
    """A derivative: ``save`` lists the positional arguments the formula reads; as a dict
    ``{arg: (args whose gradient needs it)}`` an argument is kept only when one of those
    gradients is wanted (``mul`` keeps ``b`` only if ``a`` needs a gradient).

    ``complex`` says how the formula serves complex tensors, under PyTorch's convention (the
    gradient of a real loss L at z = x + iy is dL/dx + i dL/dy): ``"linear"``, a map with
    real coefficients (sum, views, cat), whose formula is right as written; ``"holomorphic"``,
    whose formula is written as ``g * f'(z)``: the gradient is its conjugate at ``conj(g)``,
    ``g * conj(f'(z))``; ``"own"``, a formula that handles complex numbers itself; None, no
    complex derivative (recording one raises).

    ``outputs``: the positions of the outputs that are differentiable (PyTorch's
    ``output_differentiability``: ``native_layer_norm``'s ``mean`` and ``rstd`` are not); None,
    every floating output."""

    __slots__ = ("vjp", "save", "save_for", "save_out", "_wanted", "node_cls", "complex",
                 "_conjugated", "outputs", "attach")
    release = None  # nothing to free beyond the node's saved arguments

    def __init__(self, fn, save, save_out, complex=None, outputs=None):  # noqa: A002
        self.vjp, self.save_out, self.outputs = fn, save_out, outputs
        self.complex, self._conjugated = complex, None
        self.node_cls = None  # the graph's node class for this op, made on first use
        self.attach = None  # the graph's compiled attach function for this op, likewise
        self._wanted = {}
        if isinstance(save, dict):
            self.save = frozenset(save)
            self.save_for = {k: tuple(v) for k, v in save.items()}
        else:
            self.save = frozenset(save)
            self.save_for = None

    def for_complex(self, op: str) -> Entry:
        """The entry a node with complex outputs uses."""
        kind = self.complex
        if kind == "linear" or kind == "own":
            return self
        if kind == "holomorphic":
            if self._conjugated is None:
                fn = self.vjp

                def conjugated(c, g):
                    out = fn(c, _conj_grads(g))
                    return tuple(_conj_grads(r) for r in out) if isinstance(out, tuple) \
                        else _conj_grads(out)

                twin = Entry(conjugated, (), self.save_out, "own", self.outputs)
                twin.save, twin.save_for, twin._wanted = self.save, self.save_for, self._wanted
                self._conjugated = twin
            return self._conjugated
        raise NotImplementedError(f"the derivative for '{op}' is not implemented for complex "
                                  "tensors")

    def unwanted(self, mask: int) -> tuple:
        """The saved arguments no wanted gradient reads when bit ``i`` of ``mask`` says
        argument ``i`` requires grad (cached per pattern)."""
        drop = self._wanted.get(mask)
        if drop is None:
            drop = self._wanted[mask] = tuple(
                i for i, deps in self.save_for.items() if not any(mask >> j & 1 for j in deps))
        return drop


def _conj_grads(g):
    """The complex conjugate of a gradient (a tensor, None, or a list of them)."""
    if g is None:
        return None
    if isinstance(g, (list, tuple)):
        return type(g)(_conj_grads(x) for x in g)
    return et.conj(g) if g.is_complex() else g


TABLE: dict[str, Entry] = {}


def vjp(*names: str, save=(), out: bool = False, complex=None, outputs=None):  # noqa: A002
    """Register ``fn(c, g)`` as the derivative of the ops ``names`` (``complex``, ``outputs``:
    see :class:`Entry`)."""
    def deco(fn):
        for name in names:
            if name in TABLE:
                raise RuntimeError(f"derivative of {name!r} declared twice")
            TABLE[name] = Entry(fn, save, out, complex,
                                None if outputs is None else frozenset(outputs))
        return fn
    return deco


def _t(x) -> bool:
    return isinstance(x, et.Tensor)


# --------------------------------------------------------------------------- arithmetic
# (a negated product is written -(g * x), which rounds exactly as (-g) * x: the negation then
# runs over the product's own array, not over g, which is often a broadcast one -- sum()'s
# backward -- where NumPy's unary loop is 3-4x slower)
@vjp("add", complex="linear")
def _add(c, g):
    return g, g


@vjp("sub", complex="linear")
def _sub(c, g):
    return g, (-g if c.needs[1] else None)


@vjp("mul", save={0: (1,), 1: (0,)}, complex="holomorphic")
def _mul(c, g):
    a, b = c.args
    return (g * b if c.needs[0] else None), (g * a if c.needs[1] else None)


@vjp("div", save={0: (1,), 1: (0, 1)}, complex="holomorphic")
def _div(c, g):
    a, b = c.args
    ga = g / b if c.needs[0] else None
    gb = -(g * a / (b * b)) if c.needs[1] else None
    return ga, gb


@vjp("pow", save=(0, 1), out=True, complex="holomorphic")
def _pow(c, g):
    a, b = c.args
    ga = gb = None
    if c.needs[0]:
        if _t(b):
            ga = g * b * et.where(b == 0, et.ones_like(a), a) ** (b - 1)
        else:
            ga = g * b * a ** (b - 1) if b != 0 else et.zeros_like(a)
    if c.needs[1]:
        base = a if _t(a) else et.full_like(b, a)
        if base.is_complex() or b.is_complex():  # log is defined off 0; 0 ** b gives 0
            zero = base == 0
            safe = et.where(zero, et.ones_like(base), base)
            return ga, et.where(zero, et.zeros_like(g), g * c.out * et.log(safe))
        safe = et.where(base > 0, base, et.ones_like(base))
        gb = et.where((base == 0) & (b >= 0), et.zeros_like(g), g * c.out * et.log(safe))
        gb = et.where(base < 0, g * c.out * et.log(base), gb) if _t(a) else gb
    return ga, gb


@vjp("remainder", save=(0, 1))
def _remainder(c, g):
    a, b = c.args
    return g, (-(g * et.floor_divide(a, b)) if c.needs[1] else None)


@vjp("fmod", save=(0, 1))
def _fmod(c, g):
    a, b = c.args
    return g, (-(g * et.trunc(a / b)) if c.needs[1] else None)


@vjp("div_floor", "div_trunc")
def _rounded_quotient(c, g):
    # piecewise constant: a zero gradient for each tensor argument, as PyTorch's
    return tuple(_zeros_in(c, g, i) if c.needs[i] else None for i in range(2))


@vjp("sign", "floor", "ceil", "trunc", "round")
def _piecewise_constant(c, g):
    return (et.zeros_like(g),)


@vjp("atan2", save=(0, 1))
def _atan2(c, g):
    a, b = c.args
    denom = a * a + b * b
    # at the origin atan2 has no derivative: PyTorch's gradient there is 0 (never 0 / 0 = NaN)
    zero = denom == 0
    recip = et.where(zero, 0.0, 1 / et.where(zero, 1.0, denom))
    return (g * b * recip if c.needs[0] else None), (-(g * a * recip) if c.needs[1] else None)


@vjp("copysign", save=(0,), out=True)
def _copysign(c, g):
    # PyTorch's copysign_tensor_self_backward: the ratio result / input, 0 where input is 0
    x = c.args[0]
    zero = x == 0
    ratio = et.where(zero, 0.0, c.out / et.where(zero, 1.0, x))
    return g * ratio, None


@vjp("logaddexp", save=(0, 1), complex="holomorphic")
def _logaddexp(c, g):
    a, b = c.args
    return ((g / (1 + et.exp(b - a)) if c.needs[0] else None),
            (g / (1 + et.exp(a - b)) if c.needs[1] else None))


@vjp("logaddexp2", save=(0, 1))
def _logaddexp2(c, g):
    a, b = c.args
    return ((g / (1 + et.exp2(b - a)) if c.needs[0] else None),
            (g / (1 + et.exp2(a - b)) if c.needs[1] else None))


@vjp("frexp", out=True)
def _frexp(c, g):
    # the mantissa's gradient is g / 2**exponent; the exponent is not differentiable
    gm = g[0] if isinstance(g, (tuple, list)) else g
    return (gm / et.exp2(c.out[1].to(gm.dtype)),)


@vjp("hypot", save=(0, 1), out=True)
def _hypot(c, g):
    a, b = c.args
    return (g * a / c.out if c.needs[0] else None), (g * b / c.out if c.needs[1] else None)


def _minmax(c, g, pick_a):
    a, b = c.args
    half = 0.5 * g
    tie = a == b
    ga = et.where(pick_a, g, et.where(tie, half, et.zeros_like(g))) if c.needs[0] else None
    gb = et.where(pick_a | tie, et.where(tie, half, et.zeros_like(g)), g) if c.needs[1] else None
    return ga, gb


@vjp("maximum", "fmax", save=(0, 1))
def _maximum(c, g):
    a, b = c.args
    return _minmax(c, g, a > b)


@vjp("minimum", "fmin", save=(0, 1))
def _minimum(c, g):
    a, b = c.args
    return _minmax(c, g, a < b)


# --------------------------------------------------------------------------- unary
@vjp("neg", complex="linear")
def _neg(c, g):
    return (-g,)


@vjp("exp", out=True, complex="holomorphic")
def _exp(c, g):
    return (g * c.out,)


@vjp("exp2", out=True, complex="holomorphic")
def _exp2(c, g):
    return (g * c.out * math.log(2.0),)


@vjp("expm1", out=True, complex="holomorphic")
def _expm1(c, g):
    return (g * (c.out + 1),)


@vjp("log", save=(0,), complex="holomorphic")
def _log(c, g):
    return (g / c.args[0],)


@vjp("log1p", save=(0,), complex="holomorphic")
def _log1p(c, g):
    return (g / (c.args[0] + 1),)


@vjp("log2", save=(0,), complex="holomorphic")
def _log2(c, g):
    return (g / (c.args[0] * math.log(2.0)),)


@vjp("log10", save=(0,), complex="holomorphic")
def _log10(c, g):
    return (g / (c.args[0] * math.log(10.0)),)


@vjp("sqrt", out=True, complex="holomorphic")
def _sqrt(c, g):
    return (g / (2 * c.out),)


@vjp("rsqrt", out=True, complex="holomorphic")
def _rsqrt(c, g):
    # y**3 as (y * y) * y: PyTorch's value of result.pow(3) (its kernel multiplies for an
    # exponent of 3), where NumPy's power rounds once and calls libm per element (256x1024
    # float32 0.5 ms against 50 us for the products)
    y = c.out
    return (-0.5 * g * (y * y * y),)


@vjp("reciprocal", out=True, complex="holomorphic")
def _reciprocal(c, g):
    return (-(g * c.out * c.out),)


@vjp("sin", save=(0,), complex="holomorphic")
def _sin(c, g):
    return (g * et.cos(c.args[0]),)


@vjp("cos", save=(0,), complex="holomorphic")
def _cos(c, g):
    return (-(g * et.sin(c.args[0])),)


@vjp("tan", out=True, complex="holomorphic")
def _tan(c, g):
    return (g * (1 + c.out * c.out),)


@vjp("asin", save=(0,), complex="holomorphic")
def _asin(c, g):
    a = c.args[0]
    return (g / et.sqrt(1 - a * a),)


@vjp("acos", save=(0,), complex="holomorphic")
def _acos(c, g):
    a = c.args[0]
    return (-(g / et.sqrt(1 - a * a)),)


@vjp("atan", save=(0,), complex="holomorphic")
def _atan(c, g):
    a = c.args[0]
    return (g / (1 + a * a),)


@vjp("sinh", save=(0,), complex="holomorphic")
def _sinh(c, g):
    return (g * et.cosh(c.args[0]),)


@vjp("cosh", save=(0,), complex="holomorphic")
def _cosh(c, g):
    return (g * et.sinh(c.args[0]),)


@vjp("tanh", out=True, complex="holomorphic")
def _tanh(c, g):
    return (_tanh_bw(g, c.out),)


@vjp("tanh_backward", save=(0, 1), complex="holomorphic")
def _tanh_backward(c, g):
    go, y = c.args
    return (_tanh_bw(g, y) if c.needs[0] else None,
            -2 * g * go * y if c.needs[1] else None)


@vjp("asinh", save=(0,), complex="holomorphic")
def _asinh(c, g):
    a = c.args[0]
    return (g / et.sqrt(a * a + 1),)


@vjp("acosh", save=(0,), complex="holomorphic")
def _acosh(c, g):
    a = c.args[0]
    return (g / et.sqrt(a * a - 1),)


@vjp("atanh", save=(0,), complex="holomorphic")
def _atanh(c, g):
    a = c.args[0]
    return (g / (1 - a * a),)


@vjp("sigmoid", out=True, complex="holomorphic")
def _sigmoid(c, g):
    return (_sigmoid_bw(g, c.out),)


@vjp("sigmoid_backward", save=(0, 1), complex="holomorphic")
def _sigmoid_backward(c, g):
    go, y = c.args
    return (_sigmoid_bw(g, y) if c.needs[0] else None,
            g * go * (1 - 2 * y) if c.needs[1] else None)


@vjp("erf", save=(0,))
def _erf(c, g):
    a = c.args[0]
    return (g * (2.0 / math.sqrt(math.pi)) * et.exp(-a * a),)


@vjp("erfc", save=(0,))
def _erfc(c, g):
    a = c.args[0]
    return (g * (-2.0 / math.sqrt(math.pi)) * et.exp(-a * a),)


@vjp("erfinv", out=True)
def _erfinv(c, g):
    return (g * (math.sqrt(math.pi) / 2.0) * et.exp(c.out * c.out),)


@vjp("abs", save=(0,), complex="own")
def _abs(c, g):
    return (g * et.sgn(c.args[0]),)


# ------------------------------------------------------------------- complex numbers
@vjp("real", complex="own")
def _real(c, g):
    return (g,)  # a complex input's gradient is g + 0i (the engine casts)


@vjp("imag", complex="own")
def _imag(c, g):
    return (g * 1j,)


@vjp("view_as_real", complex="own")
def _view_as_real(c, g):
    return (et.view_as_complex(g.contiguous()),)


@vjp("view_as_complex", complex="own")
def _view_as_complex(c, g):
    return (et.view_as_real(g),)


@vjp("conj", "conj_physical", complex="own")
def _conj(c, g):
    return (et.conj(g),)


@vjp("complex", complex="own")
def _complex(c, g):
    return (et.real(g) if c.needs[0] else None), (et.imag(g) if c.needs[1] else None)


@vjp("polar", save={1: (0,)}, out=True, complex="own")
def _polar(c, g):
    # z = abs (cos t + i sin t): dL/d abs = Re(g) cos t + Im(g) sin t, dL/dt = Im(g conj(z))
    t, z = c.args[1], c.out
    gr, gi = et.real(g), et.imag(g)
    ga = gr * et.cos(t) + gi * et.sin(t) if c.needs[0] else None
    gt = gi * et.real(z) - gr * et.imag(z) if c.needs[1] else None
    return ga, gt


def _off_zero(z, value, g):
    """``value`` where ``z != 0``, else 0 (``z / |z|`` has no derivative at 0: PyTorch's
    gradient there is 0)."""
    return et.where(z == 0, et.zeros_like(g), value)


@vjp("angle", save=(0,), complex="own")
def _angle(c, g):
    z = c.args[0]
    if not z.is_complex():
        return (et.zeros_like(z, dtype=g.dtype),)
    mag2 = z.real * z.real + z.imag * z.imag
    return (_off_zero(z, g * 1j * z / et.where(mag2 == 0, et.ones_like(mag2), mag2), g),)


@vjp("sgn", save=(0,), out=True, complex="own")
def _sgn(c, g):
    z = c.args[0]
    if not z.is_complex():
        return (et.zeros_like(g),)
    s, mag = c.out, et.abs(z)
    return (_off_zero(z, (g - s * s * et.conj(g)) / (2 * et.where(mag == 0, et.ones_like(mag),
                                                                    mag)), g),)


@vjp("frac")
def _frac(c, g):
    return (g,)


@vjp("square", save=(0,), complex="holomorphic")
def _square(c, g):
    return (2 * g * c.args[0],)


@vjp("relu", out=True)
def _relu(c, g):
    return (_threshold_bw(g, c.out, 0),)


@vjp("threshold_backward", save=(1, 2))
def _threshold_backward(c, g):
    _, y, threshold = c.args  # zero almost everywhere with respect to the output
    return _threshold_bw(g, y, threshold), None, None


@vjp("clamp", save=(0, 1, 2))
def _clamp(c, g):
    a, lo, hi = c.args
    keep = et.ones_like(a, dtype=et.bool)
    if lo is not None:
        keep = keep & (a >= lo)
    if hi is not None:
        keep = keep & (a <= hi)
    # selected, not multiplied by a mask: a clamped element's gradient is exactly zero even
    # where ``g`` is infinite (PyTorch's clamp_backward)
    ga = et.where(keep, g, 0.0)
    glo = et.where(a < lo, g, 0.0) if _t(lo) and lo.requires_grad else None
    ghi = et.where(a > hi, g, 0.0) if _t(hi) and hi.requires_grad else None
    return ga, glo, ghi


@vjp("where", save=(0,), complex="linear")
def _where(c, g):
    cond = c.args[0]
    zero = et.zeros_like(g)
    return (None, (et.where(cond, g, zero) if c.needs[1] else None),
            (et.where(cond, zero, g) if c.needs[2] else None))


@vjp("lerp", save=(0, 1, 2), complex="holomorphic")
def _lerp(c, g):
    a, e, w = c.args
    ga = g * (1 - w) if c.needs[0] else None
    ge = g * w if c.needs[1] else None
    gw = g * (e - a) if c.needs[2] else None
    return ga, ge, gw


@vjp("addcmul", save={1: (2,), 2: (1,)}, complex="holomorphic")
def _addcmul(c, g):
    a, b, value = c.args[1], c.args[2], c.args.value
    gv = g if value == 1 else g * value
    return g, (gv * b if c.needs[1] else None), (gv * a if c.needs[2] else None)


@vjp("addcdiv", save={1: (2,), 2: (1, 2)}, complex="holomorphic")
def _addcdiv(c, g):
    a, b, value = c.args[1], c.args[2], c.args.value
    gv = g if value == 1 else g * value
    ga = gv / b if c.needs[1] else None
    gb = -(gv * a / (b * b)) if c.needs[2] else None
    return g, ga, gb


@vjp("masked_fill", save=(1,), complex="linear")
def _masked_fill(c, g):
    mask = c.args[1]
    zero = et.zeros_like(g)
    gv = et.where(mask, g, zero).sum() if c.needs[2] else None
    return et.where(mask, zero, g), None, gv


# --------------------------------------------------------------------------- copies, casts
@vjp("clone", "_ascontiguous", complex="linear")
def _identity(c, g):
    return (g,)


@vjp("_to_copy", save=(0,), complex="linear")
def _to_copy(c, g):
    src = c.args[0]
    return (g.to(device=src.device),)


@vjp("tril", complex="linear")
def _tril(c, g):
    return (et.tril(g, c.args.diagonal),)


@vjp("triu", complex="linear")
def _triu(c, g):
    return (et.triu(g, c.args.diagonal),)


# --------------------------------------------------------------------------- views
@vjp("view", "squeeze", complex="linear")
def _view(c, g):
    return (g.reshape(c.meta[0][0]),)


@vjp("permute", complex="linear")
def _permute(c, g):
    dims = c.args[1]
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n if n else 0] = i
    return (g.permute(*inv) if n else g,)


@vjp("expand", complex="linear")
def _expand(c, g):
    return (g,)  # summed back to the input's shape by the engine


@vjp("unsqueeze", complex="linear")
def _unsqueeze(c, g):
    return (g.squeeze(c.args[1]),)


def _zeros_in(c, g, i: int = 0):
    """Zeros shaped like positional argument ``i`` (read from the node's metadata, so the
    argument itself need not be kept alive or version-checked)."""
    return et.zeros(c.meta[i][0], dtype=g.dtype, device=g.device)


@vjp("slice_view", complex="linear")
def _slice_view(c, g):
    _, dim, start, end, step = c.args
    return (et.slice_scatter(_zeros_in(c, g), g, dim, start, end, step),)


@vjp("select", complex="linear")
def _select(c, g):
    dim, index = c.args[1:3]
    return (et.select_scatter(_zeros_in(c, g), g, dim, index),)


@vjp("slice_scatter", complex="linear")
def _slice_scatter(c, g):
    _, _, dim, start, end, step = c.args
    gi = et.slice_scatter(g, et.zeros_like(et.slice_view(g, dim, start, end, step)), dim,
                          start, end, step) if c.needs[0] else None
    gs = et.slice_view(g, dim, start, end, step) if c.needs[1] else None
    return gi, gs


@vjp("select_scatter", complex="linear")
def _select_scatter(c, g):
    _, _, dim, index = c.args
    gs = et.select(g, dim, index)
    gi = et.select_scatter(g, et.zeros_like(gs), dim, index) if c.needs[0] else None
    return gi, (gs if c.needs[1] else None)


@vjp("diagonal_scatter", complex="linear")
def _diagonal_scatter(c, g):
    _, _, offset, d1, d2 = c.args
    gs = et.diagonal(g, offset, d1, d2)
    gi = et.diagonal_scatter(g, et.zeros_like(gs), offset, d1, d2) if c.needs[0] else None
    return gi, (gs if c.needs[1] else None)


@vjp("unfold", complex="linear")
def _unfold(c, g):
    # offset j of window k is element k*step + j. Offsets j = r*step + t (t < step) form
    # groups r whose windows never overlap: a group is a reshape of g placed at r*step, and
    # the groups (one when step >= size) add up
    dim, size, step = c.args[1:4]
    shape = tuple(c.meta[0][0])
    if not shape:  # a 0-d input: one window of 0 or 1 element
        return (g.sum(),)
    dim %= len(shape)
    lead, rest = shape[:dim], shape[dim + 1:]
    n, groups = g.shape[dim], -(-size // step)
    h = g.movedim(-1, dim + 1)  # (..., n, size, ...)
    if groups * step > size:  # the last group's missing offsets as zeros
        h = et.cat([h, et.zeros(*lead, n, groups * step - size, *rest, dtype=g.dtype,
                                device=g.device)], dim + 1)
    h = h.reshape(*lead, n, groups, step, *rest)
    span = n * step
    out = et.zeros(*lead, max(shape[dim], span + (groups - 1) * step), *rest, dtype=g.dtype,
                   device=g.device)
    for r in range(groups):
        part = h.select(dim + 1, r).reshape(*lead, span, *rest)
        lo = r * step
        out = et.slice_scatter(out, out.narrow(dim, lo, span) + part if r else part, dim, lo,
                               lo + span)
    return (out.narrow(dim, 0, shape[dim]),)


@vjp("diagonal", complex="linear")
def _diagonal(c, g):
    return (et.diagonal_scatter(_zeros_in(c, g), g, *c.args[1:]),)


@vjp("as_strided", save=(0,), complex="linear")
def _as_strided(c, g):
    # as PyTorch's, over the storage: g added at the positions its elements view (where they
    # overlap, their gradients sum), then x read from that storage through its own layout. The
    # positions are counted from the lowest one either layout reaches, ``lo`` (x's first
    # element is at -lo); each view element's is read from a range of them through the view's
    # own geometry
    x = c.args[0]
    _, size, stride, offset = c.args
    rel = 0 if offset is None else offset - x.storage_offset()
    xs = x.stride()
    x_end = 1 + sum((n - 1) * s for n, s in zip(x.shape, xs)) if x.numel() else 0
    v_end = rel + 1 + sum((n - 1) * s for n, s in zip(size, stride)) if g.numel() else 0
    lo = min(0, rel)
    span = max(x_end, v_end) - lo
    pos = et.as_strided(et.arange(span, device=g.device), size, stride, rel - lo)
    buf = et.zeros(span, dtype=g.dtype, device=g.device)
    buf = buf.index_add(0, pos.reshape(-1), g.reshape(-1))
    return (et.as_strided(buf, tuple(x.shape), xs, -lo),)


@vjp("cat", complex="linear")
def _cat(c, g):
    return (_cat_split(c, g, c.args.dim),)


def _cat_split(c, g, dim):
    sizes = [m[0] for m in c.meta[0]]
    nd = g.dim()
    dim = dim % nd
    out, start = [], 0
    for shape in sizes:
        if len(shape) == 1 and shape[0] == 0 and nd != 1:
            out.append(None)
            continue
        n = shape[dim]
        out.append(et.narrow(g, dim, start, n))
        start += n
    return out


@vjp("stack", complex="linear")
def _stack(c, g):
    return (list(et.unbind(g, c.args.dim)),)


# --------------------------------------------------------------------------- reductions
def _rdims(c, x, pos: int = 1):
    """The reduced dims of a reduction over ``x`` (a tensor, or its number of dims)."""
    return _ext.canonical_dims(c.args[pos], x if isinstance(x, int) else x.dim(), "backward")


def _keepdim(c, pos: int = 2) -> bool:
    return bool(c.args[pos])


def _unreduce(g, shape, dims, keepdim):
    """Bring a reduced gradient back to ``shape`` (broadcast view)."""
    if g.dim() == 0:  # a full reduction: expand adds the leading dims itself
        return g.expand(*shape)
    if not keepdim:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    return g.expand(*shape)


@vjp("sum", complex="linear")
def _sum(c, g):
    shape = c.meta[0][0]  # only the input's shape is read: the input is not kept alive
    if g.dim() == 0:
        return (g.expand(*shape),)
    return (_unreduce(g, shape, _rdims(c, len(shape)), _keepdim(c)),)


@vjp("nansum", save=(0,))
def _nansum(c, g):
    x = c.args[0]
    full = _unreduce(g, x.shape, _rdims(c, x), _keepdim(c))
    return (et.where(et.isnan(x), et.zeros_like(full), full),)


@vjp("mean", complex="linear")
def _mean(c, g):
    shape = c.meta[0][0]
    dims = _rdims(c, len(shape))
    n = 1
    for d in dims:
        n *= shape[d]
    # (divided before it is expanded: a division of the expanded gradient loops over a zero
    # stride, once per element)
    return (_unreduce(g / max(n, 1), shape, dims, _keepdim(c)),)


def _exclusive_prod(x, dim):
    """Product of all other elements along ``dim`` (exact with zeros)."""
    ones = et.ones_like(x.narrow(dim, 0, 1))
    left = et.cat([ones, x.narrow(dim, 0, x.shape[dim] - 1)], dim).cumprod(dim)
    xr = x.flip(dim)
    right = et.cat([ones, xr.narrow(dim, 0, x.shape[dim] - 1)], dim).cumprod(dim).flip(dim)
    return left * right


@vjp("prod", save=(0,), out=True, complex="holomorphic")
def _prod(c, g):
    x = c.args[0]
    dims = _rdims(c, x)
    if x.dim() == 0:
        return (g,)
    if not bool((x == 0).any()):  # PyTorch's rule: with no zero, the product over each
        keep = _keepdim(c)        # element (one pass, where the exclusive products take six)
        return (_unreduce(g, x.shape, dims, keep) * (_unreduce(c.out, x.shape, dims, keep) / x),)
    if len(dims) == x.dim() and x.dim() > 1:
        flat = x.reshape(-1)
        return ((_exclusive_prod(flat, 0) * _unreduce(g, flat.shape, (0,), False)
                 .reshape(-1)).reshape(x.shape) if not _keepdim(c) else
                (_exclusive_prod(flat, 0).reshape(x.shape) * g),)
    (d,) = dims if len(dims) == 1 else (dims[0],)
    return (_exclusive_prod(x, d) * _unreduce(g, x.shape, dims, _keepdim(c)),)


@vjp("var", save=(0,), complex="own")
def _var(c, g):
    x = c.args[0]
    dims = _rdims(c, x)
    corr, keep = c.args.correction, bool(c.args.keepdim)
    n = 1
    for d in dims:
        n *= x.shape[d]
    centered = x - x.mean(dims, keepdim=True)
    dof = n - corr  # no degrees of freedom left: 2 / 0 is inf (NaN or inf, as PyTorch's)
    scale = 2.0 / dof if dof > 0 else math.inf
    return (_unreduce(g, x.shape, dims, keep) * centered * scale,)


@vjp("norm", save=(0,), out=True, complex="own")
def _norm(c, g):
    x = c.args[0]
    p = c.args.p
    dims = _rdims(c, x, 2)
    keep = _keepdim(c, 3)
    if p in ("fro", 2, 2.0, None):  # x * (g / norm), 0 where the norm is 0, as PyTorch: the
        zero = c.out == 0  # scale on the reduced shape, one pass over x
        safe = et.where(zero, et.ones_like(c.out), c.out)
        return (x * _unreduce(et.where(zero, et.zeros_like(g), g / safe), x.shape, dims, keep),)
    gx = _unreduce(g, x.shape, dims, keep)
    out = _unreduce(c.out, x.shape, dims, keep)
    if p == 1:
        return (gx * et.sgn(x),)
    if p in (float("inf"), float("-inf")):
        hit = (x.abs() == out).to(x.dtype)
        count = hit.sum(dims, keepdim=True)
        return (gx * et.sgn(x) * hit / count,)
    if p == 0:
        return (et.zeros_like(x),)
    safe = et.where(out == 0, et.ones_like(out), out)
    val = gx * et.sgn(x) * x.abs() ** (p - 1) / safe ** (p - 1)
    return (et.where(out == 0, et.zeros_like(val), val),)


@vjp("amax", "amin", save=(0,), out=True)
def _amax(c, g):
    x = c.args[0]
    dims = _rdims(c, x)
    keep = _keepdim(c)
    out = _unreduce(c.out, x.shape, dims, keep)
    hit = (x == out).to(g.dtype)
    count = hit.sum(dims, keepdim=True)
    return (_unreduce(g, x.shape, dims, keep) * hit / count,)


def _scatter_back(x, g, idx, dim, keepdim):
    if not keepdim and x.dim():
        g, idx = g.unsqueeze(dim), idx.unsqueeze(dim)
    if x.dim() == 0:
        return g.reshape(())
    return et.zeros_like(x).scatter(dim, idx, g)


def _dim_arg(c, pos=1, default=-1):
    x = c.args[0]
    return _ext.canonical_dim(c.args[pos], x.dim(), "backward") if x.dim() else 0


@vjp("max_dim", "min_dim", "median_dim", "mode", save=(0,), out=True)
def _max_dim(c, g):
    x = c.args[0]
    gv = g[0] if isinstance(g, (tuple, list)) else g
    return (_scatter_back(x, gv, c.out[1], _dim_arg(c), _keepdim(c)),)


@vjp("kthvalue", save=(0,), out=True)
def _kthvalue(c, g):
    x = c.args[0]
    gv = g[0] if isinstance(g, (tuple, list)) else g
    return (_scatter_back(x, gv, c.out[1], _dim_arg(c, 2), _keepdim(c, 3)),)


@vjp("sort", save=(0,), out=True)
def _sort(c, g):
    gv = g[0] if isinstance(g, (tuple, list)) else g
    return (_scatter_back(c.args[0], gv, c.out[1], _dim_arg(c, 1), True),)


@vjp("topk", save=(0,), out=True)
def _topk(c, g):
    gv = g[0] if isinstance(g, (tuple, list)) else g
    return (_scatter_back(c.args[0], gv, c.out[1], _dim_arg(c, 2), True),)


@vjp("median", save=(0,), out=True)
def _median(c, g):
    x = c.args[0]
    flat = x.reshape(-1)
    idx = (flat == c.out).nonzero()[0]
    return (et.zeros_like(flat).index_put((idx,), g.reshape(1)).reshape(x.shape),)


@vjp("logsumexp", save=(0,), out=True, complex="holomorphic")
def _logsumexp(c, g):
    x = c.args[0]
    dims = _rdims(c, x)
    keep = _keepdim(c)
    return (_unreduce(g, x.shape, dims, keep) * et.exp(x - _unreduce(c.out, x.shape, dims,
                                                                     keep)),)


def _scan_dim(c):
    ndim = len(c.meta[0][0])
    return _ext.canonical_dim(c.args.dim, ndim, "backward") if ndim else 0


@vjp("cumsum", complex="linear")
def _cumsum(c, g):
    d = _scan_dim(c)
    if g.dim() == 0:
        return (g,)
    return (g.flip(d).cumsum(d).flip(d),)


@vjp("cumprod", save=(0,), out=True, complex="holomorphic")
def _cumprod(c, g):
    x = c.args[0]
    d = _scan_dim(c)
    if x.dim() == 0:
        return (g,)
    rev = (g * c.out).flip(d).cumsum(d).flip(d)
    zero = x == 0
    if not bool(zero.any()):
        return (rev / x,)
    n = x.shape[d]
    if x.numel() * n <= 1 << 22:
        # with zeros, dividing by x is 0 / 0: build every product with one factor left out,
        # prod_{j <= k, j != i} x_j, as the scan of x with x_i set to 1 (an (n, n) table per
        # row): exact, and differentiable again (double backward through the zeros is right)
        xd = x.movedim(d, -1)
        eye = et.eye(n, dtype=et.bool, device=x.device)
        left_out = et.where(eye, 1.0, xd.unsqueeze(-2)).cumprod(-1)  # [..., i, k]
        later = et.ones(n, n, dtype=et.bool, device=x.device).triu()  # k >= i
        gd = g.movedim(d, -1).unsqueeze(-2)
        grad = et.where(later, left_out * gd, 0.0).sum(-1)
        return (grad.movedim(-1, d),)
    # too long for the table: exact first derivative. Before the first zero along d the
    # quotient is still exact; at the first zero the gradient is the scan of the product with
    # that factor left out; after it every product holds the zero, so the gradient is 0
    seen = zero.cumsum(d)
    before = seen == 0
    first = zero & (seen == 1)
    left_out = et.where(first, 1.0, x).cumprod(d)
    at_first = (g * left_out).flip(d).cumsum(d).flip(d)
    grad = et.where(before, rev / et.where(before, x, 1.0), et.where(first, at_first, 0.0))
    return (grad,)


# --------------------------------------------------------------------------- linear algebra
@vjp("matmul", save={0: (1,), 1: (0,)}, complex="holomorphic")
def _matmul(c, g):
    a, b = c.args  # a is kept only when b needs a gradient, and vice versa
    na, nb = len(c.meta[0][0]), len(c.meta[1][0])
    ga = gb = None
    if na == 1 and nb == 1:
        return (g * b if c.needs[0] else None), (g * a if c.needs[1] else None)
    if na == 1:
        if c.needs[0]:
            ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2)
        if c.needs[1]:
            gb = a.unsqueeze(-1) @ g.unsqueeze(-2)
        return ga, gb
    if nb == 1:
        if c.needs[0]:
            ga = g.unsqueeze(-1) @ b.unsqueeze(-2)
        if c.needs[1]:
            gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1)
        return ga, gb
    if c.needs[0]:
        ga = g @ b.mT
    if c.needs[1]:
        if nb == 2 and na > 2:  # batched input @ weight: fold the batch into the rows
            gb = a.reshape(-1, a.shape[-1]).mT @ g.reshape(-1, g.shape[-1])
        else:
            gb = a.mT @ g
    return ga, gb


@vjp("linear", save={0: (1,), 1: (0,)}, complex="holomorphic")
def _linear(c, g):
    x, w = c.args[:2]
    gx = g @ w if c.needs[0] else None
    gw = gb = None
    flat = g.dim() == 2
    if c.needs[1]:
        g2 = g if flat else g.reshape(-1, g.shape[-1])
        gw = g2.mT @ (x if flat else x.reshape(-1, x.shape[-1]))
    if c.needs[2]:
        gb = g.sum(0) if flat else g  # a batch of rows: one sum; else the engine reduces
    return gx, gw, gb


@vjp("outer", save={0: (1,), 1: (0,)}, complex="holomorphic")
def _outer(c, g):
    a, b = c.args
    return (g @ b if c.needs[0] else None), (g.t() @ a if c.needs[1] else None)


@vjp("trace", save=(0,), complex="linear")
def _trace(c, g):
    x = c.args[0]
    return (et.eye(x.shape[0], x.shape[1], dtype=g.dtype) * g,)


@vjp("diag", save=(0,), complex="linear")
def _diag(c, g):
    x = c.args[0]
    k = c.args.diagonal
    if x.dim() == 1:
        return (et.diagonal(g, k),)
    return (et.diagonal_scatter(et.zeros_like(x, dtype=g.dtype), g, k),)


@vjp("cross", save=(0, 1), complex="holomorphic")
def _cross(c, g):
    a, b, dim = c.args
    return ((et.cross(b, g, dim) if c.needs[0] else None),
            (et.cross(g, a, dim) if c.needs[1] else None))


@vjp("tensordot", save=(0, 1), complex="holomorphic")
def _tensordot(c, g):
    a, b, dims = c.args
    if isinstance(dims, int):
        ca, cb = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        ca, cb = [d % a.dim() for d in dims[0]], [d % b.dim() for d in dims[1]]
    fa = [d for d in range(a.dim()) if d not in ca]
    fb = [d for d in range(b.dim()) if d not in cb]
    nfa = len(fa)
    ga = gb = None
    if c.needs[0]:
        t = et.tensordot(g, b, dims=(list(range(nfa, g.dim())), fb))  # axes: fa + ca
        order = fa + ca
        ga = t.permute(*[order.index(i) for i in range(a.dim())])
    if c.needs[1]:
        t = et.tensordot(a, g, dims=(fa, list(range(nfa))))  # axes: cb (matching ca) + fb
        order = cb + fb
        gb = t.permute(*[order.index(i) for i in range(b.dim())])
    return ga, gb


def _einsum_explicit(eq: str, shapes: list) -> str:
    """``eq`` with each ``...`` written out as letters of its own (right-aligned across the
    operands, as the ellipsis broadcasts), for the backward's equations."""
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if ch not in eq]
    counts = [len(shape) - len(sub.replace("...", "")) if "..." in sub else 0
              for sub, shape in zip(subs, shapes)]
    k = max(counts, default=0)
    ell = "".join(free[:k])
    sizes: dict = {}
    for sub, shape, n in zip(subs, shapes, counts):
        if n:
            start = sub.index("...")
            for ch, d in zip(ell[k - n:], shape[start:start + n]):
                if sizes.setdefault(ch, d) != d:
                    raise RuntimeError(
                        f"einsum backward: the dims '...' stands for broadcast between the "
                        f"operands ({eq!r} with shapes {[list(sh) for sh in shapes]}); "
                        f"ember's autograd needs them of equal sizes")
    subs = [sub.replace("...", ell[k - n:]) for sub, n in zip(subs, counts)]
    if arrow:
        out = rhs.replace("...", ell)
    else:  # implicit output: the ellipsis dims, then the letters used once, sorted
        letters = "".join(subs)
        out = ell + "".join(sorted(ch for ch in set(letters)
                                   if letters.count(ch) == 1 and ch not in ell))
    return ",".join(subs) + "->" + out


@vjp("einsum", save=(1,), complex="holomorphic")
def _einsum(c, g):
    eq = c.args.equation.replace(" ", "")
    ops = c.args.operands
    if "..." in eq:
        eq = _einsum_explicit(eq, [tuple(o.shape) for o in ops])
    if "->" in eq:
        lhs, out_subs = eq.split("->")
    else:
        lhs = eq
        counts = {}
        for ch in lhs.replace(",", ""):
            counts[ch] = counts.get(ch, 0) + 1
        out_subs = "".join(sorted(ch for ch, n in counts.items() if n == 1))
    subs = lhs.split(",")
    fresh = (ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if ch not in eq)
    grads = []
    for i, s in enumerate(subs):
        if c.meta[1][i] is None:
            grads.append(None)
            continue
        shape_i = c.meta[1][i][0]
        size = {ch: shape_i[pos] for pos, ch in reversed(list(enumerate(s)))}
        uniq = "".join(dict.fromkeys(s))
        others = [(subs[j], ops[j]) for j in range(len(subs)) if j != i]
        avail = set(out_subs) | {ch for sj, _ in others for ch in sj}
        kept = "".join(ch for ch in uniq if ch in avail)
        gi = et.einsum(",".join([out_subs] + [sj for sj, _ in others]) + "->" + kept,
                       g, *[o for _, o in others])
        if kept != uniq:  # letters summed only inside this operand: broadcast back
            for pos, ch in enumerate(uniq):
                if ch not in avail:
                    gi = gi.unsqueeze(pos)
            gi = gi.expand(*[size[ch] for ch in uniq])
        if uniq != s:  # a repeated index reads a diagonal: put the gradient back on it
            target, eyes, seen = [], [], set()
            for ch in s:
                if ch in seen:
                    nc = next(fresh)
                    target.append(nc)
                    eyes.append((ch + nc, et.eye(size[ch], dtype=g.dtype, device=g.device)))
                else:
                    seen.add(ch)
                    target.append(ch)
            gi = et.einsum(",".join([uniq] + [e for e, _ in eyes]) + "->" + "".join(target),
                           gi, *[m for _, m in eyes])
        grads.append(gi)
    return None, grads


# --------------------------------------------------------------------------- indexing
@vjp("getitem", save=(1,), complex="linear")
def _getitem(c, g):
    return et.getitem_backward(g, c.meta[0][0], c.args[1]), None


@vjp("getitem_backward", save=(2,), complex="linear")
def _getitem_backward(c, g):
    return et.getitem(g, c.args[2]), None, None


@vjp("setitem", save=(1,), complex="linear")
def _setitem(c, g):
    index = c.args[1]
    gi = et.setitem_copy(g, index, 0.0) if c.needs[0] else None
    gv = et.getitem(g, index) if c.needs[2] else None
    return gi, None, gv


@vjp("index_put", save=(1,), complex="linear")
def _index_put(c, g):
    indices = tuple(c.args[1])
    accumulate = c.args.accumulate
    gi = None
    if c.needs[0]:
        gi = g if accumulate else et.index_put(g, indices, et.zeros((), dtype=g.dtype))
    gv = et.getitem(g, indices) if c.needs[2] else None
    return gi, None, gv


@vjp("index_select", save=(2,), complex="linear")
def _index_select(c, g):
    _, dim, index = c.args
    if not _grad_on():  # a first-order backward: the engine sums the rows lazily
        return _Rows(c.meta[0][0], dim, index, g), None, None
    # accumulate in place into fresh zeros (recorded as index_add when create_graph=True)
    return et.zeros(c.meta[0][0], dtype=g.dtype, device=g.device).index_add_(dim, index, g), \
        None, None


@vjp("gather", save=(2,), complex="linear")
def _gather(c, g):
    _, dim, index = c.args[:3]
    return et.zeros(c.meta[0][0], dtype=g.dtype, device=g.device).scatter_add_(dim, index, g), \
        None, None


@vjp("scatter", save=(2,), complex="linear")
def _scatter(c, g):
    dim, index = c.args[1], c.args[2]
    gi = g.scatter(dim, index, 0.0) if c.needs[0] else None
    gs = g.gather(dim, index) if c.needs[3] else None
    return gi, None, None, gs


@vjp("scatter_add", save=(2,), complex="linear")
def _scatter_add(c, g):
    dim, index = c.args[1], c.args[2]
    return g, None, None, (g.gather(dim, index) if c.needs[3] else None)


@vjp("index_add", save=(2,), complex="linear")
def _index_add(c, g):
    dim, index = c.args[1], c.args[2]
    alpha = c.args.alpha
    gs = None
    if c.needs[3]:
        gs = g.index_select(dim, index) if g.dim() else g
        if alpha != 1:
            gs = gs * alpha
        gs = gs.reshape(c.meta[3][0])
    return g, None, None, gs


@vjp("index_copy", save=(2,), complex="linear")
def _index_copy(c, g):
    dim, index = c.args[1], c.args[2]
    gi = g.index_fill(dim, index, 0.0) if c.needs[0] else None
    gs = g.index_select(dim, index).reshape(c.meta[3][0]) if c.needs[3] else None
    return gi, None, None, gs


@vjp("index_fill", save=(2,), complex="linear")
def _index_fill(c, g):
    dim, index = c.args[1], c.args[2]
    gi = g.index_fill(dim, index, 0.0)
    gv = g.index_select(dim, index).sum() if c.needs[3] else None
    return gi, None, None, gv


@vjp("masked_scatter", save=(1,), complex="linear")
def _masked_scatter(c, g):
    mask = c.args[1]
    gi = g.masked_fill(mask, 0.0) if c.needs[0] else None
    gs = None
    if c.needs[2]:
        picked = et.masked_select(g, mask)
        n = 1
        for s in c.meta[2][0]:
            n *= s
        pad = et.zeros(n - picked.numel(), dtype=g.dtype, device=g.device)
        gs = et.cat([picked, pad]).reshape(c.meta[2][0])
    return gi, None, gs


@vjp("flip", complex="linear")
def _flip(c, g):
    return (g.flip(*c.args.dims, **c.args.kwargs),)


@vjp("roll", complex="linear")
def _roll(c, g):
    _, shifts, dims = c.args
    neg = tuple(-s for s in shifts) if isinstance(shifts, (tuple, list)) else -shifts
    return (g.roll(neg, dims),)


@vjp("repeat", complex="linear")
def _repeat(c, g):
    sizes = c.args.sizes
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    in_shape = tuple(c.meta[0][0])
    padded = (1,) * (len(sizes) - len(in_shape)) + in_shape
    inter = []
    for s, n in zip(sizes, padded):
        inter += [s, n]
    g = g.reshape(*inter).sum(tuple(range(0, 2 * len(sizes), 2)))
    return (g.reshape(in_shape),)
