"""``backward``, ``grad``, ``Variable`` and the hooks the Tensor class calls into."""
from __future__ import annotations

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import unwrap, wrap

from . import engine
from .graph import GradientEdge, autograd_meta, output_nr, set_output_nr

__all__ = ["backward", "grad", "Variable"]


def _as_list(x) -> list:
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _ones(o: Tensor):
    d = unwrap(o)
    if isinstance(d, np.ndarray):
        return np.ones(d.shape, dtype=d.dtype)
    return unwrap(et.ones_like(o))


def _make_grads(outputs: list, grads: list, create_graph: bool, op: str) -> list:
    if not grads:
        grads = [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"{op}: got {len(grads)} gradients for {len(outputs)} outputs")
    out = []
    for o, g in zip(outputs, grads):
        if g is None:
            if o.numel() != 1:
                raise RuntimeError(
                    f"{op}: grad can be implicitly created only for scalar outputs; got an "
                    f"output of shape {list(o.shape)}. Pass `gradient=` (e.g. "
                    "ones_like(output)) or reduce the output to a scalar first.")
            if o.is_complex():
                raise RuntimeError(f"{op}: grad can be implicitly created only for real scalar "
                                   f"outputs; got {o.dtype}")
            g = wrap(_ones(o))
        elif not isinstance(g, Tensor):
            g = et.full_like(o, g)
        elif tuple(g.shape) != tuple(o.shape):
            raise RuntimeError(f"{op}: Mismatch in shape: grad_output[0] has a shape of "
                               f"{list(g.shape)} and output[0] has a shape of {list(o.shape)}.")
        out.append(g if create_graph else g.detach())
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    if grad_tensors is None and grad_variables is None and inputs is None and \
            tensors.__class__ is Tensor and tensors._requires_grad:
        d = unwrap(tensors)
        if d.size == 1 and d.dtype.kind != "c":  # the common call: loss.backward() on a
            # real scalar (a complex one is refused by _make_grads)
            engine.run_backward([tensors], [wrap(_ones(tensors))],
                               create_graph if retain_graph is None else retain_graph,
                               create_graph)
            return
    outputs = _as_list(tensors)
    grads = _make_grads(outputs, _as_list(grad_tensors if grad_tensors is not None
                                         else grad_variables), create_graph, "backward")
    for o in outputs:
        if not o.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    inp = _as_list(inputs) or None
    engine.run_backward(outputs, grads, retain_graph, create_graph, inputs=inp,
                       accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` w.r.t. ``inputs`` (returned, not accumulated).

    >>> x = et.tensor(3., requires_grad=True)
    >>> grad(x ** 2, x)
    (tensor(6.),)
    """
    outs = _as_list(outputs)
    single = isinstance(inputs, (Tensor, GradientEdge))
    ins = [inputs] if single else _as_list(inputs)
    grads = _make_grads(outs, _as_list(grad_outputs), create_graph, "grad")
    for o in outs:
        if not o.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    res = engine.run_backward(outs, grads, retain_graph, create_graph, inputs=ins,
                             accumulate=False)
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, r in enumerate(res):
        if r is None:
            if materialize_grads:
                res[i] = et.zeros_like(ins[i])
            elif not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            res[i] = r.detach()
    del single
    return tuple(res)


def Variable(data, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # noqa: N802
    """The PyTorch 0.3 wrapper: returns a Tensor (sharing memory) with ``requires_grad``."""
    if not isinstance(data, Tensor):
        data = et.tensor(data)
    t = data.detach() if data.requires_grad else data
    if requires_grad:
        t.requires_grad_(True)
    return t


class _EngineAPI:
    """What ember.tensor's Tensor methods call into."""

    @staticmethod
    def check_requires_grad(t: Tensor) -> None:
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               f"gradients (got {t.dtype})")

    @staticmethod
    def set_history(t: Tensor, grad_fn) -> None:
        """Make ``t`` output 0 of ``grad_fn`` (an in-place view op made it that view)."""
        t.grad_fn = grad_fn
        set_output_nr(t, 0)

    @staticmethod
    def backward(t: Tensor, gradient, retain_graph, create_graph, inputs=None) -> None:
        # the tensor itself, not a list of it: ``loss.backward()`` then takes backward's
        # path for one scalar
        backward(t, None if gradient is None else [gradient], retain_graph, create_graph,
                 inputs=inputs)

    @staticmethod
    def register_hook(t: Tensor, hook):
        if not t.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if t.grad_fn is None:
            m = autograd_meta(t)
            if m.grad_hooks is None:
                m.grad_hooks = {}
            hooks = m.grad_hooks
        else:
            fn = t.grad_fn
            if fn._hooks is None:
                fn._hooks = {}
            hooks = fn._hooks.setdefault(output_nr(t), {})
        return _RemovableHandle(hooks, hook)

    @staticmethod
    def register_post_accumulate_grad_hook(t: Tensor, hook):
        if not t.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if t.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        m = autograd_meta(t)
        if m.post_acc_hooks is None:
            m.post_acc_hooks = {}
        return _RemovableHandle(m.post_acc_hooks, hook)

    @staticmethod
    def retain_grad(t: Tensor) -> None:
        if not t.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if t.grad_fn is None or t.retains_grad:
            return
        import weakref

        ref = weakref.ref(t)

        def hook(g):
            owner = ref()
            if owner is not None:
                owner.grad = g.detach().clone() if owner.grad is None else owner.grad + g
        _EngineAPI.register_hook(t, hook)
        autograd_meta(t).retains_grad = True


class _RemovableHandle:
    _next_id = 0

    def __init__(self, hooks: dict, hook) -> None:
        _RemovableHandle._next_id += 1
        self.id = _RemovableHandle._next_id
        self._hooks = hooks
        hooks[self.id] = hook

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_engine_api = _EngineAPI()

