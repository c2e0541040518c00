"""The derivative table's entries for the ops of ``ember.tensor._extra_ops``: ``nan_to_num``
(the gradient passes where the input is finite, as PyTorch's) and ``scatter_reduce`` are the
differentiable registry ops there (the rest are composites, or not differentiable).
``scatter_reduce``'s formulas follow PyTorch's: ``sum`` and ``mean`` spread the gradient,
``amax``/``amin`` share it evenly among the elements equal to the result, ``prod`` divides
the result by each factor (inputs must be non-zero).
"""
from __future__ import annotations

import ember.tensor as et

from .derivatives import vjp

__all__: list[str] = []


@vjp("scatter_reduce", save=(0, 2, 3), out=True)
def _scatter_reduce(c, g):
    a = c.args
    x, idx, src, out = a.input, a.index, a.src, c.out
    dim, reduce, incl = a.dim, a.reduce, a.include_self
    hit = et.zeros_like(x).scatter(dim, idx, et.ones_like(src)) > 0
    gx = gs = None
    if reduce == "sum":
        gx = g if incl else et.where(hit, et.zeros_like(g), g)
        gs = g.gather(dim, idx)
    elif reduce == "mean":
        cnt = et.zeros_like(x).scatter_add(dim, idx, et.ones_like(src))
        cnt = cnt + (1 if incl else 0)
        cnt = et.where(cnt == 0, et.ones_like(cnt), cnt)
        gx = g / cnt if incl else et.where(hit, et.zeros_like(g), g)
        gs = (g / cnt).gather(dim, idx)
    elif reduce == "prod":
        gx = g * out / x if incl else et.where(hit, et.zeros_like(g), g)
        gs = (g * out).gather(dim, idx) / src
    else:  # amax / amin: ties share the gradient evenly
        self_hit = (x == out).to(g.dtype) if incl else (~hit).to(g.dtype) * 0
        src_hit = (src == out.gather(dim, idx)).to(g.dtype)
        count = self_hit.scatter_add(dim, idx, src_hit)
        count = et.where(count == 0, et.ones_like(count), count)
        share = g / count
        gx = et.where(hit, share * self_hit, g) if incl else et.where(hit, et.zeros_like(g), g)
        gs = share.gather(dim, idx) * src_hit
    return (gx if c.needs[0] else None), None, None, (gs if c.needs[3] else None)


@vjp("nan_to_num", save=(0,), complex="linear")
def _nan_to_num(c, g):
    return (g * c.args.input.isfinite(),)
