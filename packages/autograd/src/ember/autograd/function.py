"""Custom differentiable functions.

Modern form::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp(); ctx.save_for_backward(y); return y
        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors; return g * y
    Exp.apply(x)

PyTorch 2's form (``forward(x)`` without ``ctx``, and a static ``setup_context(ctx, inputs,
output)`` that saves what backward needs) runs on the same path.

The PyTorch 0.3 form (instance ``forward``/``backward``, ``self.save_for_backward``, applied as
``MyFn()(x)``) is a thin adapter onto the same path: the instance is its own context.
"""
from __future__ import annotations

import functools
import inspect
import weakref

from ember.tensor import Tensor
from ember.tensor.extension import bump_version

from . import graph
from .grad_mode import grad_enabled as _grad_on
from .grad_mode import no_grad

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "NestedIOFunction",
           "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` object of a custom Function."""

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward; they are checked against in-place modification."""
        self._saved = tuple(tensors)
        self._saved_versions = tuple(t._version if isinstance(t, Tensor) else None
                                     for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        saved = getattr(self, "_saved", ())
        if saved is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Specify retain_graph=True if you "
                "need to backward through the graph a second time.")
        out = []
        for t, v in zip(saved, self._saved_versions):
            packed = False  # from an unpack hook (saved_tensors_hooks): no version check
            if isinstance(t, _SavedOutput):
                packed = t.alias.__class__ is graph._Packed
                t = t.unpack(self)
            elif t.__class__ is graph._Packed:
                packed = True
                t = graph.unpack(t)
            if isinstance(t, Tensor) and not packed and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.type()} {list(t.shape)}] is at version "
                    f"{t._version}; expected version {v} instead.")
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place."""
        self._dirty = set(map(id, tensors))

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that get no gradient (e.g. indices)."""
        self._non_diff = set(map(id, tensors))

    def set_materialize_grads(self, value: bool) -> None:
        """When True (default), missing output gradients arrive as zeros, not None."""
        self.materialize_grads = value


class _SavedOutput:
    """An output saved for backward, held without a reference to its node (no cycle):
    unpacking rebuilds a tensor over the same memory whose ``grad_fn`` is the node again."""

    __slots__ = ("alias", "nr", "node_ref")

    def __init__(self, t: Tensor, nr: int, node) -> None:
        # same memory and version counter, no grad_fn (no cycle); or what the open pack hook
        # made of it
        self.alias = graph.pack(t, edge=False) or t.detach()
        self.nr = nr
        self.node_ref = weakref.ref(node)

    def unpack(self, ctx) -> Tensor:
        a = self.alias
        t = graph.unpack(a) if a.__class__ is graph._Packed else a.detach()
        node = self.node_ref()
        if node is not None:
            t.grad_fn = node
            t._requires_grad = True
            graph.set_output_nr(t, self.nr)
        return t


class _Entry:
    """A one-off derivative-table entry that calls the Function's backward."""

    __slots__ = ("vjp", "save", "save_for", "save_out", "_fn", "_ctx", "_outs_meta", "node_cls")
    outputs = None  # every floating output is differentiable

    def __init__(self, fn, ctx, outs_meta):
        self._fn, self._ctx, self._outs_meta = fn, ctx, outs_meta
        self.save, self.save_for, self.save_out = frozenset(), None, False
        self.vjp = self._vjp
        self.node_cls = None

    def for_complex(self, op: str) -> _Entry:
        """A Function's backward handles complex outputs itself."""
        return self

    def _vjp(self, c, g):
        grads = g if isinstance(g, (list, tuple)) else (g,)
        if getattr(self._ctx, "materialize_grads", True):
            import ember.tensor as et

            grads = tuple(x if x is not None else et.zeros(shape, dtype=dt, device=dev)
                          for x, (shape, dt, dev) in zip(grads, self._outs_meta))
        res = self._fn(*grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(c.needs)
        if len(res) < n:
            raise RuntimeError(f"function {type(self._ctx).__name__}Backward returned an "
                               f"incorrect number of gradients (expected {n}, got {len(res)})")
        return res[:n]

    def release(self) -> None:
        self._ctx._saved = None


class _FunctionOp:
    """What the graph reads of an op (its name, how its arguments are kept) for a Function."""

    __slots__ = ("name",)
    Args = tuple

    def __init__(self, name: str) -> None:
        self.name = name


def _apply(cls_name: str, ctx, forward, backward, args):
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    with no_grad():
        out = forward(*args)
    needs = _grad_on() and graph._requires(args)
    multi = isinstance(out, tuple)
    outs = list(out) if multi else [out]
    dirty = getattr(ctx, "_dirty", set())
    non_diff = getattr(ctx, "_non_diff", set())
    ids = {id(a) for a in args if isinstance(a, Tensor)}
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and id(o) in ids and id(o) not in dirty:
            outs[i] = o.detach()  # an input returned as is becomes a new alias
    if needs:
        meta = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor)
                else ((), None, None) for o in outs]
        entry = _Entry(backward, ctx, meta)
        diff = [o for o in outs if isinstance(o, Tensor) and id(o) not in non_diff]
        for o in diff:
            if o.grad_fn is None and o._requires_grad and id(o) in dirty:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        packed = tuple(outs) if multi else outs[0]
        graph.attach(_FunctionOp(cls_name), entry, args, packed)
        for o in outs:
            if isinstance(o, Tensor) and id(o) in non_diff:
                o.grad_fn = None
                o._requires_grad = False
        for o in outs:
            if isinstance(o, Tensor) and id(o) in dirty:
                bump_version(o)
        saved = getattr(ctx, "_saved", None)
        if saved and dirty:  # a modified input saved (returned too): checked at its version
            ctx._saved_versions = tuple(  # after this write, as PyTorch's saved outputs
                t._version if isinstance(t, Tensor) and id(t) in dirty else v
                for t, v in zip(saved, ctx._saved_versions))
        node = next((o.grad_fn for o in outs if isinstance(o, Tensor) and
                     o.grad_fn is not None), None)
        if saved and node is not None:
            pos = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
            ctx._saved = tuple((_SavedOutput(t, pos[id(t)], node) if id(t) in pos else
                                graph.pack(t) or t) if isinstance(t, Tensor) else t
                               for t in saved)
    return tuple(outs) if multi else outs[0]


@functools.cache
def _is_static(cls, name: str) -> bool:
    return isinstance(inspect.getattr_static(cls, name), staticmethod)


@functools.cache
def _has_setup_context(cls) -> bool:
    return inspect.getattr_static(cls, "setup_context") is not \
        inspect.getattr_static(Function, "setup_context")


@functools.cache
def _ctx_class(cls) -> type:
    return type(f"{cls.__name__}Ctx", (FunctionCtx,), {})


class Function(FunctionCtx):
    """Base class for custom autograd functions (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch 2's form: a class that defines it has a ``forward(*inputs)`` without
        ``ctx``, and this keeps what backward needs on ``ctx`` (``inputs``: the arguments of
        ``apply``, ``output``: what forward returned), called after forward."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if not _is_static(cls, "forward"):
            raise RuntimeError(f"{cls.__name__}.apply needs forward/backward as staticmethods; "
                               f"for the legacy form call an instance: {cls.__name__}()(x)")
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes positional arguments only")
        ctx = _ctx_class(cls)()
        if _has_setup_context(cls):
            def forward(*inputs):
                out = cls.forward(*inputs)
                cls.setup_context(ctx, inputs, out)
                return out
        else:
            forward = functools.partial(cls.forward, ctx)
        return _apply(cls.__name__, ctx, forward, functools.partial(cls.backward, ctx), args)

    def __call__(self, *args):
        cls = type(self)
        if _is_static(cls, "forward"):
            raise RuntimeError("Legacy autograd function with non-static forward method is "
                               f"deprecated; {cls.__name__} has a static forward: use "
                               f"{cls.__name__}.apply(...)")
        return _apply(cls.__name__, self, self.forward, self.backward, args)


class InplaceFunction(Function):
    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace


NestedIOFunction = Function


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs without recording."""
    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with no_grad():
            return fn(ctx, *grads)
    return wrapper
