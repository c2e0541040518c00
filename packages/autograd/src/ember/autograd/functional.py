"""Higher-order helpers: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``.

All are built from :func:`ember.autograd.grad`; forward-mode products use the double-vjp trick
(a vjp is linear in its vector, so differentiating it w.r.t. the vector gives the jvp).
"""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor

from .api import grad
from .grad_mode import enable_grad

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _tup(x):
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _prep(inputs, create_graph):
    return tuple(x.detach().requires_grad_(True) if not create_graph or not x.requires_grad
                 else x for x in inputs)


def _fill(gs, like):
    return tuple(g if g is not None else et.zeros_like(x) for g, x in zip(gs, like))


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``."""
    ins, tup = _tup(inputs)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        outs, out_tup = _tup(out)
        vs = _tup(v)[0] if v is not None else tuple(et.ones_like(o) for o in outs)
        gs = grad(outs, ins, vs, create_graph=create_graph, allow_unused=True)
    gs = _fill(gs, ins)
    res = gs if tup else gs[0]
    return (out if create_graph else _detach(out)), res


def _detach(x):
    if isinstance(x, Tensor):
        return x.detach()
    return tuple(o.detach() for o in x)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)`` through the double-vjp trick."""
    ins, tup = _tup(inputs)
    vs = _tup(v)[0] if v is not None else tuple(et.ones_like(x) for x in ins)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        outs, out_tup = _tup(out)
        us = tuple(et.zeros_like(o).requires_grad_(True) for o in outs)
        gs = grad(outs, ins, us, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(gs, vs) if g is not None]
        if pairs:
            jv = grad([p[0] for p in pairs], us, [p[1] for p in pairs],
                      create_graph=create_graph, allow_unused=True)
        else:
            jv = (None,) * len(us)
    jv = _fill(jv, outs)
    res = jv if out_tup else jv[0]
    return (out if create_graph else _detach(out)), (res if create_graph else _detach(res))


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: shape ``out.shape + in.shape`` (nested tuples
    for several outputs / inputs, like PyTorch)."""
    ins, in_tup = _tup(inputs)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        outs, out_tup = _tup(out)
        result = []
        for o in outs:
            rows = [[] for _ in ins]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                gs = grad([flat[k]], ins, retain_graph=True, create_graph=create_graph,
                          allow_unused=True)
                for i, (g, x) in enumerate(zip(gs, ins)):
                    rows[i].append(g if g is not None else et.zeros_like(x))
            per_in = tuple(
                (et.stack(r) if r else et.zeros(0, *x.shape, dtype=x.dtype)).reshape(
                    *o.shape, *x.shape) for r, x in zip(rows, ins))
            result.append(per_in if in_tup else per_in[0])
    if not create_graph:
        result = [tuple(t.detach() for t in r) if isinstance(r, tuple) else r.detach()
                  for r in result]
    return tuple(result) if out_tup else result[0]


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``."""
    ins, in_tup = _tup(inputs)

    def grad_fn(*xs):
        y = func(*xs)
        gs = grad([y], xs, create_graph=True, allow_unused=True)
        gs = _fill(gs, xs)
        return gs if in_tup else gs[0]

    return jacobian(grad_fn, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``."""
    ins, tup = _tup(inputs)
    vs = _tup(v)[0]
    with enable_grad():
        ins = _prep(ins, create_graph)
        y = func(*ins)
        gs = _fill(grad([y], ins, create_graph=True, allow_unused=True), ins)
        hv = grad(list(gs), ins, list(vs), create_graph=create_graph, allow_unused=True)
    hv = _fill(hv, ins)
    res = hv if tup else hv[0]
    return (y if create_graph else y.detach()), (res if create_graph else _detach(res))


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)`` (equal to vhp for the symmetric Hessian of a smooth function)."""
    return vhp(func, inputs, v, create_graph, strict)
