"""``ember.autograd.checkpoint``: PyTorch's ``torch.utils.checkpoint`` (activation
checkpointing).

``checkpoint(function, *args, use_reentrant=...)`` runs ``function`` without recording a graph,
so none of its intermediate values stay alive, and runs it again during backward, with the
random generators' states of the first run, to get its gradients: memory for compute.

- ``use_reentrant=False`` (PyTorch's recommendation): while the function first runs, every op
  call is watched (the registry's recorder hook) for tensors that require grad and come from
  outside the function (its tensor arguments, the parameters of the modules it calls, any
  tensor it closes over); the checkpoint is one node of the graph with those tensors as its
  inputs. Backward recomputes the function and differentiates it with respect to them, so
  ``autograd.grad``, ``backward(inputs=...)``, hooks and higher-order gradients work as
  through the uncheckpointed function.
- ``use_reentrant=True`` (PyTorch's default in 2.13, with a warning when ``use_reentrant`` is
  not passed): the node's inputs are the tensor arguments; backward recomputes and runs a
  ``backward()`` of its own, which accumulates the parameters' gradients into their ``.grad``,
  so only a plain ``backward()`` may pass through it (``autograd.grad`` raises, as in PyTorch),
  and when no argument requires grad the output does not either (PyTorch warns).

``checkpoint_sequential(functions, segments, input, use_reentrant=...)`` runs a sequence of
modules in ``segments`` checkpointed chunks (the last chunk plainly).

    >>> import ember.tensor as et
    >>> from ember.autograd.checkpoint import checkpoint
    >>> x = et.tensor([1.0, 2.0], requires_grad=True)
    >>> checkpoint(lambda t: (t.sin() * t).sum(), x, use_reentrant=False).backward()
    >>> x.grad
    tensor([1.3818, 0.0770])
"""
from __future__ import annotations

import warnings

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor import extension as _ext

from . import engine
from .api import backward as _backward
from .api import grad as _grad
from .func import _flatten as _tree_flatten
from .func import _unflatten as _tree_unflatten
from .function import Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn",
           "detach_variable"]

_NO_FLAG = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.")


class CheckpointError(RuntimeError):
    """A checkpointed function that cannot be recomputed as it first ran."""


def noop_context_fn():
    """The default ``context_fn``: two contexts that do nothing."""
    import contextlib

    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of ``inputs`` detached, each requiring grad as before (others as they
    are)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x
                 for x in inputs)


# ------------------------------------------------------------------------------ helpers
def _tensors(tree) -> list:
    """The tensors of nested tuples, lists and dicts, in order."""
    return [x for x in _tree_flatten(tree)[0] if isinstance(x, Tensor)]


def _replace(tree, new: dict):
    """``tree`` with each tensor replaced by ``new[id(tensor)]`` where present."""
    leaves, spec = _tree_flatten(tree)
    return _tree_unflatten([new.get(id(x), x) if isinstance(x, Tensor) else x
                            for x in leaves], spec)


class _RNG:
    """The CPU generator's state, and the CUDA generators' of the devices of ``tensors``, at
    the first run; ``restored()`` runs the recomputation from them and puts the generators
    back afterwards."""

    def __init__(self, tensors, preserve: bool):
        self.preserve = preserve
        if not preserve:
            return
        self.cpu = et.get_rng_state()
        self.cuda = {}
        for t in tensors:
            d = t.device
            if d.type == "cuda" and d.index not in self.cuda:
                self.cuda[d.index] = et.cuda.get_rng_state(d)

    def restored(self):
        import contextlib

        if not self.preserve:
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def ctx():
            with et.fork_rng(devices=list(self.cuda)):
                et.set_rng_state(self.cpu)
                for index, s in self.cuda.items():
                    et.cuda.set_rng_state(s, index)
                yield

        return ctx()


class _Watch:
    """While active, notes every tensor that requires grad among the arguments of the op
    calls made (the registry's recorder hook, in front of the one installed)."""

    def __init__(self):
        self.seen: dict = {}

    def __enter__(self):
        self.inner = _ext.get_recorder()
        _ext.set_recorder(self.record)
        return self

    def __exit__(self, *exc):
        _ext.set_recorder(self.inner)

    def record(self, op, bound):
        seen = self.seen
        for a in bound:
            if isinstance(a, Tensor):
                if a.requires_grad:
                    seen.setdefault(id(a), a)
            elif a.__class__ is list or a.__class__ is tuple:
                for b in a:
                    if isinstance(b, Tensor) and b.requires_grad:
                        seen.setdefault(id(b), b)
        return self.inner(op, bound)


def _outputs(out, n_expected=None):
    leaves = _tensors(out)
    if n_expected is not None and len(leaves) != n_expected:
        raise CheckpointError("torch.utils.checkpoint: Recomputed values have a different "
                              "structure than during the original forward")
    return leaves


# ------------------------------------------------------------------------------ the nodes
def _recompute(frame, grads, detach: bool):
    """Run the function again as it first ran (its random draws, the recomputation context),
    on detached arguments where ``detach`` (so that differentiating it stops at them); the
    (output, gradient) pairs to differentiate and the arguments' substitutes."""
    with enable_grad(), frame.rng.restored(), frame.recompute_ctx:
        subst = {id(x): x.detach().requires_grad_(x.requires_grad)
                 for x in frame.args_t} if detach else {}
        out = frame.function(*_replace(frame.args, subst), **_replace(frame.kwargs, subst))
    outs = _outputs(out, len(frame.outs))
    return [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad], subst


class _Checkpoint(Function):
    """The checkpointed call as one node; its outputs are the call's tensors (an input handed
    back is a new tensor, as any node's output)."""

    @staticmethod
    def forward(ctx, frame, *inputs):
        ctx.frame = frame
        return tuple(o.view_as(o) if any(o is i for i in inputs) else o for o in frame.outs)


class _NonReentrant(_Checkpoint):
    """Inputs: every outside tensor requiring grad that the call read."""

    @staticmethod
    def backward(ctx, *grads):
        frame = ctx.frame
        create = is_grad_enabled()  # a backward with create_graph: the gradients get a graph
        # (for a graph of the gradients, on the arguments themselves: grad() then keeps every
        # buffer, as create_graph retains the graph)
        pairs, subst = _recompute(frame, grads, detach=not create)
        targets = [subst.get(id(t), t) for t in frame.inputs]
        if not pairs:
            return (None,) + (None,) * len(targets)
        gs = _grad([p[0] for p in pairs], targets, [p[1] for p in pairs], allow_unused=True,
                   create_graph=create)
        return (None,) + tuple(gs)


class _Reentrant(_Checkpoint):
    """PyTorch's reentrant checkpoint: inputs, the tensor arguments; backward recomputes and
    runs a backward of its own into the parameters' ``.grad``."""

    @staticmethod
    def backward(ctx, *grads):
        if not engine.plain_backward():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        frame = ctx.frame
        pairs, subst = _recompute(frame, grads, detach=True)
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _backward([p[0] for p in pairs], [p[1] for p in pairs])
        return (None,) + tuple(subst[id(t)].grad if id(t) in subst else None
                               for t in frame.inputs)


class _Frame:
    pass


# ------------------------------------------------------------------------------ public
def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               preserve_rng_state: bool = True, early_stop: bool = True, **kwargs):
    """``function(*args, **kwargs)``, its intermediate values dropped and recomputed in
    backward (see the module's docstring for the two modes). ``preserve_rng_state``: the
    recomputation draws the same random numbers (dropout masks) as the first run."""
    if use_reentrant is None:
        warnings.warn(_NO_FLAG, stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    frame = _Frame()
    frame.function, frame.args, frame.kwargs = function, args, kwargs
    frame.args_t = _tensors((args, kwargs))
    frame.rng = _RNG(frame.args_t, preserve_rng_state)
    fwd_ctx, frame.recompute_ctx = context_fn()  # (around the first run, the recomputation)
    if use_reentrant:
        with no_grad(), fwd_ctx:
            out = function(*args)
        frame.inputs = [t for t in frame.args_t]
        node = _Reentrant
        if is_grad_enabled() and not any(t.requires_grad for t in frame.inputs):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
    else:
        with no_grad(), fwd_ctx, _Watch() as watch:
            out = function(*args, **kwargs)
        ids = {id(t) for t in frame.args_t}
        frame.inputs = [t for t in frame.args_t if t.requires_grad] + \
            [t for i, t in watch.seen.items() if i not in ids]
        node = _NonReentrant
    frame.outs = _outputs(out)
    if not is_grad_enabled() or not any(t.requires_grad for t in frame.inputs):
        return out
    results = node.apply(frame, *frame.inputs)
    frame.outs = [None] * len(frame.outs)  # the node holds the results, not the frame
    results = results if isinstance(results, tuple) else (results,)
    return _replace(out, {id(o): r for o, r in zip(_outputs(out), results)})


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run ``functions`` (a sequence of modules, or a Sequential) on ``input`` in ``segments``
    chunks of consecutive functions, each checkpointed but the last."""
    if use_reentrant is None:
        warnings.warn(_NO_FLAG, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
