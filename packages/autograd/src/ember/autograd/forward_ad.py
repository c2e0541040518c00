"""Forward-mode automatic differentiation (PyTorch's ``torch.autograd.forward_ad``).

Inside ``dual_level()``, ``make_dual(x, v)`` gives a tensor with the value of ``x`` that carries
the tangent ``v``; every op on such dual tensors gives outputs carrying their tangents (the
Jacobian-vector products), which ``unpack_dual`` reads::

    >>> import ember.tensor as et
    >>> import ember.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = (fwAD.make_dual(et.tensor([0.0, 1.0]), et.tensor([1.0, 2.0])) * 3).exp()
    ...     fwAD.unpack_dual(y).tangent
    tensor([  3.0000, 120.5132])

How: while a level is open, a recorder in front of autograd's sees every op call; a call with
a dual argument runs as usual (recorded for backward where its inputs require grad), and its
outputs' tangents come from the derivative table by the double-vjp identity: with ``u`` a
placeholder cotangent (zeros), ``vjp(u) = J^T u`` is linear in ``u``, so the vjp of ``u -> J^T u``
taken at the tangents is ``J t``. Every op with a derivative therefore has its
Jacobian-vector product, with no second table (at the cost of two backward calls per op).
Tangents are kept as given (``unpack_dual`` returns the same tensor) and an in-place op on a
dual tensor updates its tangent in place, as in PyTorch; the tangents follow the tangents
(a tangent that requires grad gives outputs' tangents that do) but are not differentiable
with respect to the primal values (PyTorch's reverse-over-forward). One level at a time, as
in PyTorch ("Nested forward mode AD is not supported at the moment").
"""
from __future__ import annotations

import contextlib
import weakref
from collections import namedtuple

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import get_recorder, set_recorder

from . import graph
from .api import grad
from .grad_mode import enable_grad, state

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

# the open level: (its number, the recorder it displaced, weak references to the tensors that
# were given tangents at it, whose tangents go when it closes); None while none is open
_open: list = [None]
_count = [0]


def enter_dual_level() -> int:
    """Open a forward-AD level and return its number (use :class:`dual_level`)."""
    if _open[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = _count[0]
    _count[0] += 1
    _open[0] = (level, get_recorder(), [])
    set_recorder(_record)
    state.forward_ad = True  # (functions with a cheaper route where no derivative is wanted
    # take the differentiable one)
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level: every tangent given at it is dropped."""
    cur = _open[0]
    if cur is None or (level is not None and level != cur[0]):
        raise RuntimeError(f"Trying to exit a forward AD level that was not the last one that "
                           f"was created (level {level}). This is not supported.")
    _open[0] = None
    set_recorder(cur[1])
    state.forward_ad = False
    for ref in cur[2]:
        t = ref()
        if isinstance(t, graph.Node):
            t._out_tangents = None
        elif t is not None and t._autograd_meta is not None:
            t._autograd_meta.fw_grad = None


@contextlib.contextmanager
def dual_level():
    """A forward-AD level for the duration of the ``with`` block."""
    enter_dual_level()
    try:
        yield
    finally:
        exit_dual_level()


def _check_level(level) -> None:
    cur = _open[0]
    if cur is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if level is not None and level != cur[0]:
        raise RuntimeError(f"Invalid level {level}: the open forward AD level is {cur[0]}")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient."""
    _check_level(level)
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual(): expected {name} to be a Tensor, got "
                            f"{type(t).__name__}")
        if not (t.is_floating_point() or t.is_complex()):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: "
                             f"{t.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"make_dual(): the tangent is on {tangent.device} and the primal on "
                           f"{tensor.device}; they must be on one device")
    tangent = _laid_out_as(tangent, tensor)
    dual = tensor.view_as(tensor)
    _set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a view of ``tensor`` without its tangent, and the tangent (None
    where it has none or no level is open)."""
    t = _tangent(tensor) if _open[0] is not None else None
    if t is None:
        return UnpackedDualTensor(tensor, None)
    with _plain():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, t)


def _laid_out_as(tangent: Tensor, primal: Tensor) -> Tensor:
    """``tangent``, copied into the primal's strides where they differ (as PyTorch does): a
    view op on a dual tensor takes the same view of its tangent, which must then fit."""
    stride = primal.stride()
    if tangent.stride() == stride or 0 in stride:
        return tangent
    return et.empty_strided(primal.shape, stride, dtype=tangent.dtype,
                            device=tangent.device).copy_(tangent)


def _tangent(t) -> Tensor | None:
    m = t._autograd_meta
    return None if m is None else m.fw_grad


def _set_tangent(t: Tensor, tangent: Tensor) -> None:
    graph.autograd_meta(t).fw_grad = tangent
    _open[0][2].append(weakref.ref(t))


@contextlib.contextmanager
def _plain():
    """Ops run without forward AD's recorder (the tangents' own arithmetic)."""
    set_recorder(_open[0][1])
    try:
        yield
    finally:
        set_recorder(_record)


def _run(op, bound):
    rec = _open[0][1]
    return op.run(*bound) if rec is None else rec(op, bound)


def _duals(bound) -> list:
    """``(position, index in a list argument or None, tangent)`` per dual tensor argument."""
    found = []
    for i, a in enumerate(bound):
        if isinstance(a, Tensor):
            t = _tangent(a)
            if t is not None:
                found.append((i, None, t))
        elif a.__class__ is list or a.__class__ is tuple:
            for j, b in enumerate(a):
                if isinstance(b, Tensor):
                    t = _tangent(b)
                    if t is not None:
                        found.append((i, j, t))
    return found


def _record(op, bound):
    duals = _duals(bound)
    if not duals:
        return _run(op, bound)
    with _plain():
        if op.inplace:  # the tangents from the values before the call writes them
            tangents = _output_tangents(op, bound, duals) if op.differentiable else ()
            old = _tangent(bound[0])
            out = _run(op, bound)
            if not op.differentiable and old is not None:
                old.zero_()  # (overwritten by values that do not depend on the tangents)
        else:
            out = _run(op, bound)
            if not op.differentiable:  # (the random draws among them: they run once)
                return out
            old = None
            if len(duals) == 1 and duals[0][:2] == (0, None) and _views_of(out, bound[0]):
                # a view op is linear in its input: its tangent is the same view of the
                # input's tangent, so a write through the view reaches the base's tangent
                tangents = _run(op, (duals[0][2],) + tuple(bound[1:]))
                if not isinstance(tangents, (tuple, list)):
                    tangents = (tangents,)
            else:
                tangents = _output_tangents(op, bound, duals)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for k, (o, t) in enumerate(zip(outs, tangents)):
            if t is None or not isinstance(o, Tensor):
                continue
            if o is bound[0] and old is not None and old.shape == t.shape \
                    and old.dtype == t.dtype:
                old.copy_(t)  # the tangent updated in place, as the primal was
            else:
                _set_tangent(o, _laid_out_as(t, o))
            _keep_on_node(o.grad_fn, k, _tangent(o))
    return out


def _keep_on_node(node, nr: int, tangent) -> None:
    """A node that saved its output rebuilds it from its array for backward: the rebuilt
    output carries the tangent too (forward-over-reverse through exp, softmax, tanh ...)."""
    if isinstance(node, graph.Node) and node._out_data is not None:
        if node._out_tangents is None:
            node._out_tangents = {}
            _open[0][2].append(weakref.ref(node))
        node._out_tangents[nr] = tangent


def _views_of(out, t) -> bool:
    """Whether every tensor output of a call is a view of ``t``'s memory."""
    base = t if t._base is None else t._base
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return bool(outs) and all(isinstance(o, Tensor) and o._base is base for o in outs)


def _output_tangents(op, bound, duals) -> list:
    """The tangent of each output of ``op(*bound)`` (None for outputs that carry none), from
    the double-vjp identity on a copy of the call whose dual arguments are fresh leaves."""
    args = list(bound)
    leaves, tans = [], []
    for i, j, t in duals:
        a = bound[i] if j is None else bound[i][j]
        leaf = a.detach().requires_grad_(True)
        # the copy's in-place call writes a clone, not the real input (nor the leaf)
        p = leaf.clone() if op.inplace and i == 0 else leaf
        if j is None:
            args[i] = p
        else:
            seq = list(args[i])
            seq[j] = p
            args[i] = type(bound[i])(seq)
        leaves.append(leaf)
        tans.append(t)
    with enable_grad():
        y = graph.record(op, tuple(args))
        ys = list(y) if isinstance(y, (tuple, list)) else [y]
        live = [k for k, o in enumerate(ys) if isinstance(o, Tensor) and o.requires_grad]
        if not live:
            return [None] * len(ys)
        # the placeholder cotangents: zeros (vjp is linear in them; a formula's value checks,
        # such as an eigenvector phase test, pass at zero; a formula keeps the terms of a
        # gradient that requires grad even where it is all zeros)
        us = [ys[k].detach().new_zeros(ys[k].shape).requires_grad_(True) for k in live]
        vjps = grad([ys[k] for k in live], leaves, grad_outputs=us, create_graph=True,
                    allow_unused=True)
        pairs = [(g, t) for g, t in zip(vjps, tans) if g is not None and g.requires_grad]
        if pairs:
            jvps = grad([g for g, _ in pairs], us, grad_outputs=[t for _, t in pairs],
                        create_graph=any(t.requires_grad for _, t in pairs),
                        allow_unused=True, materialize_grads=True)
        else:  # the outputs do not depend on the dual inputs
            jvps = [u.detach() for u in us]
    out = [None] * len(ys)
    for k, jt in zip(live, jvps):
        out[k] = jt if jt.dtype == ys[k].dtype else jt.to(ys[k].dtype)
    return out
