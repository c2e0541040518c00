"""The derivative table's entries for ``ember.tensor.special`` (and ``lgamma``, ``digamma``,
``polygamma``, ``i0``, ``sinc``, ``logit``, ``xlogy``, ``igamma``, ``igammac``).

Written with ember ops (the special functions among them), so second derivatives come from
the same table. As in PyTorch, ``zeta`` has no gradient for its first argument and
``igamma``/``igammac`` none for theirs (a NotImplementedError says so); the orthogonal
polynomials and ``airy_ai`` are not differentiable. Unlike PyTorch, the Bessel functions are:
their derivatives are other Bessel functions.
"""
from __future__ import annotations

import math

import ember.tensor as et

from .derivatives import vjp

__all__: list[str] = []

_SQRT_2PI = math.sqrt(2 * math.pi)
_SP = vars(et.special)  # name -> the special function


def _safe(x):
    """``x`` with zeros replaced by ones (to divide by where the limit is handled apart)."""
    return et.where(x == 0, et.ones_like(x), x)


def _over_x(f, x, at_zero):
    """``f / x`` with the value ``at_zero`` where ``x`` is 0."""
    return et.where(x == 0, et.full_like(x, at_zero), f / _safe(x))


@vjp("lgamma", save=(0,))
def _lgamma(c, g):
    return (g * et.digamma(c.args[0]),)


@vjp("digamma", save=(0,))
def _digamma(c, g):
    return (g * et.polygamma(1, c.args[0]),)


@vjp("polygamma", save=(1,))
def _polygamma(c, g):
    return None, g * et.polygamma(c.args.n + 1, c.args.input)


@vjp("i0", save=(0,))
def _i0(c, g):
    return (g * _SP["i1"](c.args[0]),)


@vjp("special_i0e", save=(0,), out=True)
def _i0e(c, g):
    x = c.args[0]
    return (g * (_SP["i1e"](x) - et.sign(x) * c.out),)


@vjp("special_i1", "special_modified_bessel_i1", save=(0,), out=True)
def _i1(c, g):
    x = c.args[0]
    return (g * (et.i0(x) - _over_x(c.out, x, -0.5)),)


@vjp("special_i1e", save=(0,), out=True)
def _i1e(c, g):
    x = c.args[0]
    return (g * (_SP["i0e"](x) - et.sign(x) * c.out - _over_x(c.out, x, -0.5)),)


@vjp("special_modified_bessel_i0", save=(0,))
def _mi0(c, g):
    return (g * _SP["modified_bessel_i1"](c.args[0]),)


@vjp("special_modified_bessel_k0", save=(0,))
def _k0(c, g):
    return (-g * _SP["modified_bessel_k1"](c.args[0]),)


@vjp("special_modified_bessel_k1", save=(0,), out=True)
def _k1(c, g):
    x = c.args[0]
    return (-g * (_SP["modified_bessel_k0"](x) + c.out / x),)


@vjp("special_scaled_modified_bessel_k0", save=(0,), out=True)
def _k0e(c, g):
    return (g * (c.out - _SP["scaled_modified_bessel_k1"](c.args[0])),)


@vjp("special_scaled_modified_bessel_k1", save=(0,), out=True)
def _k1e(c, g):
    x = c.args[0]
    return (g * (c.out - _SP["scaled_modified_bessel_k0"](x) - c.out / x),)


@vjp("special_bessel_j0", save=(0,))
def _j0(c, g):
    return (-g * _SP["bessel_j1"](c.args[0]),)


@vjp("special_bessel_j1", save=(0,), out=True)
def _j1(c, g):
    x = c.args[0]
    return (g * (_SP["bessel_j0"](x) - _over_x(c.out, x, 0.5)),)


@vjp("special_bessel_y0", save=(0,))
def _y0(c, g):
    return (-g * _SP["bessel_y1"](c.args[0]),)


@vjp("special_bessel_y1", save=(0,), out=True)
def _y1(c, g):
    x = c.args[0]
    return (g * (_SP["bessel_y0"](x) - c.out / x),)


@vjp("special_spherical_bessel_j0", save=(0,), out=True)
def _sj0(c, g):
    x = c.args[0]
    return (g * _over_x(et.cos(x) - c.out, x, 0.0),)


@vjp("sinc", save=(0,), out=True, complex="holomorphic")
def _sinc(c, g):
    x = c.args[0]
    px = x * math.pi
    return (g * _over_x(et.cos(px) - c.out, x, 0.0),)


@vjp("special_erfcx", save=(0,), out=True)
def _erfcx(c, g):
    return (g * (2 * c.args[0] * c.out - 2 / math.sqrt(math.pi)),)


@vjp("special_ndtr", save=(0,))
def _ndtr(c, g):
    x = c.args[0]
    return (g * et.exp(-0.5 * x * x) / _SQRT_2PI,)


@vjp("special_ndtri", out=True)
def _ndtri(c, g):
    return (g * _SQRT_2PI * et.exp(0.5 * c.out * c.out),)


@vjp("special_log_ndtr", save=(0,), out=True)
def _log_ndtr(c, g):
    x = c.args[0]
    return (g * et.exp(-0.5 * x * x - c.out) / _SQRT_2PI,)


@vjp("special_entr", save=(0,))
def _entr(c, g):
    x = c.args[0]
    return (-g * (et.log(x) + 1),)


@vjp("logit", save=(0,))
def _logit(c, g):
    x, eps = c.args
    gx = g / (x * (1 - x))
    if eps is not None:
        gx = et.where((x < eps) | (x > 1 - eps), et.zeros_like(gx), gx)
    return (gx,)


def _arg(c, i):
    a = c.args[i]
    return a


@vjp("xlogy", save=(0, 1))
def _xlogy(c, g):
    x, y = c.args
    gx = gy = None
    if c.needs[0]:
        yy = y if isinstance(y, et.Tensor) else et.full_like(x, y)
        gx = g * et.xlogy((x != 0).to(g.dtype) if isinstance(x, et.Tensor) else
                          float(x != 0), yy)
    if c.needs[1]:
        gy = g * x / y
    return gx, gy


@vjp("special_xlog1py", save=(0, 1))
def _xlog1py(c, g):
    x, y = c.args
    gx = gy = None
    if c.needs[0]:
        yy = y if isinstance(y, et.Tensor) else et.full_like(x, y)
        gx = g * et.special.xlog1py((x != 0).to(g.dtype), yy)
    if c.needs[1]:
        gy = g * x / (1 + y)
    return gx, gy


@vjp("special_zeta", save=(0, 1))
def _zeta(c, g):
    x, q = c.args
    if c.needs[0]:
        raise NotImplementedError("the derivative for 'zeta' with respect to its first "
                                  "argument (self) is not implemented.")
    return None, -g * x * et.special.zeta(x + 1, q)


def _igamma_grad(a, x):
    return et.exp(-x + (a - 1) * et.log(x) - et.lgamma(a))


@vjp("igamma", save=(0, 1))
def _igamma(c, g):
    a, x = c.args
    if c.needs[0]:
        raise NotImplementedError("the derivative for 'igamma' with respect to its first "
                                  "argument (self) is not implemented.")
    return None, g * _igamma_grad(a, x)


@vjp("igammac", save=(0, 1))
def _igammac(c, g):
    a, x = c.args
    if c.needs[0]:
        raise NotImplementedError("the derivative for 'igammac' with respect to its first "
                                  "argument (self) is not implemented.")
    return None, -g * _igamma_grad(a, x)
