"""``ember.autograd.func``: PyTorch's ``torch.func`` transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian`` and ``vmap`` take a function and return one; ``functional_call`` runs a module with
other parameters and buffers, ``stack_module_state`` stacks those of several modules for an
ensemble under ``vmap``. Arguments and results may be trees of tuples, lists and dicts of
tensors (a dict of parameters, say), as in PyTorch.

How they are built: the derivative transforms call :func:`ember.autograd.grad` on fresh
aliases of the arguments they differentiate (so ``grad(grad(f))`` and a ``grad`` whose
arguments already require grad compose: the gradient keeps its graph when an argument came in
requiring grad), and forward mode is the double-vjp trick (a vjp is linear in its vector;
differentiating it with respect to the vector gives the jvp). ``vmap`` runs the function once
per example inside :func:`~ember.autograd.autobatch`, which batches the per-example calls into
one call per op, and stacks the results; control flow on values, which PyTorch's ``vmap``
refuses, works (it cuts the batched graph there).

    >>> import ember.tensor as et
    >>> from ember.autograd import func
    >>> func.grad(lambda x: (x ** 3).sum())(et.tensor([1., 2.]))
    tensor([ 3., 12.])
    >>> func.vmap(et.dot)(et.ones(4, 3), et.ones(4, 3))
    tensor([3., 3., 3., 3.])
"""
from __future__ import annotations

import functools

import ember.tensor as et
from ember.tensor import Tensor

from .api import grad as _grad
from .autobatch import autobatch
from .grad_mode import enable_grad

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
           "functionalize", "debug_unwrap"]


# ------------------------------------------------------------------------------ trees
def _flatten(tree):
    """(leaves, spec): the leaves of nested tuples, lists and dicts, and how to rebuild it."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for t in tree:
            lv, sp = _flatten(t)
            leaves += lv
            specs.append(sp)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k, t in tree.items():
            lv, sp = _flatten(t)
            leaves += lv
            specs.append((k, sp))
        return leaves, (dict, specs)
    return [tree], None


def _unflatten(leaves, spec):
    it = iter(leaves)

    def build(sp):
        if sp is None:
            return next(it)
        kind, subs = sp
        if kind is dict:
            return {k: build(s) for k, s in subs}
        items = [build(s) for s in subs]
        return kind(*items) if hasattr(kind, "_fields") else kind(items)

    return build(spec)


def _tensors(name: str, leaves, what: str) -> None:
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{name}: Expected {what} to be a Tensor or a tuple, list or "
                               f"dict of Tensors, got {type(x).__name__}")


def _aliases(leaves):
    """Leaves to differentiate with respect to: an alias of a tensor that requires grad (its
    gradient then keeps its graph, for an enclosing transform or backward), a fresh leaf
    otherwise; and whether any came in requiring grad."""
    outer = any(x.requires_grad for x in leaves)
    return [x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)
            for x in leaves], outer


def _argnums(name: str, argnums, n: int):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(a).__name__}")
        if not -n <= a < n:
            raise RuntimeError(f"{name}: Got argnums={a}, but only {n} positional inputs")
    if isinstance(argnums, tuple) and not argnums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    return nums


def _finish(gs, like, keep: bool):
    """Gradients for ``like`` (zeros where one is unused), detached unless ``keep``."""
    out = []
    for g, x in zip(gs, like):
        g = et.zeros_like(x) if g is None else g
        out.append(g if keep else g.detach())
    return out


def _detach_tree(tree):
    leaves, spec = _flatten(tree)
    return _unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


# ------------------------------------------------------------------------------ grad
def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``func`` -> a function returning ``(gradient, value)`` of the scalar ``func`` with
    respect to the positional arguments ``argnums`` (an int, or a tuple: then a tuple of
    gradients); with ``has_aux``, ``func`` returns ``(value, aux)`` and the result is
    ``(gradient, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums("grad_and_value", argnums, len(args))
        args = list(args)
        specs, flat, outer = [], [], False
        with enable_grad():
            for a in nums:
                leaves, spec = _flatten(args[a])
                _tensors("grad_and_value", leaves, f"argument {a}")
                leaves, o = _aliases(leaves)
                outer = outer or o
                args[a] = _unflatten(leaves, spec)
                specs.append((spec, len(leaves)))
                flat += leaves
            out = func(*args, **kwargs)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out).__name__}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                                   f"wanted to use the vjp or jacrev APIs instead?")
            gs = _grad([out], flat, allow_unused=True, create_graph=True) if \
                out.requires_grad else [None] * len(flat)
        gs = _finish(gs, flat, outer)
        grads, i = [], 0
        for spec, n in specs:
            grads.append(_unflatten(gs[i:i + n], spec))
            i += n
        g = tuple(grads) if isinstance(argnums, tuple) else grads[0]
        value = out if outer else out.detach()
        if has_aux:
            return g, (value, aux if outer else _detach_tree(aux))
        return g, value

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """``func`` -> a function returning the gradient of the scalar ``func`` with respect to
    its positional arguments ``argnums`` (with ``has_aux``: ``(gradient, aux)``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# ------------------------------------------------------------------------------ vjp, jvp
def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` (a tree shaped as the output)
    returns a tuple with the vector-Jacobian product for each primal."""
    specs, flat, outer = [], [], False
    args = []
    with enable_grad():
        for p in primals:
            leaves, spec = _flatten(p)
            _tensors("vjp", leaves, "primals")
            leaves, o = _aliases(leaves)
            outer = outer or o
            args.append(_unflatten(leaves, spec))
            specs.append((spec, len(leaves)))
            flat += leaves
        out = func(*args)
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                               "(output, aux) if has_aux is True")
        out, aux = out
    out_leaves, out_spec = _flatten(out)
    _tensors("vjp", out_leaves, "outputs")

    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        ct_leaves, ct_spec = _flatten(cotangents)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function: {len(ct_leaves)} "
                               f"cotangents for {len(out_leaves)} outputs")
        for c, o in zip(ct_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of "
                                   f"{tuple(c.shape)} and output has a shape of "
                                   f"{tuple(o.shape)}")
        keep = outer or any(c.requires_grad for c in ct_leaves) if create_graph is None \
            else create_graph
        pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
        with enable_grad():
            gs = _grad([p[0] for p in pairs], flat, [p[1] for p in pairs], allow_unused=True,
                       retain_graph=retain_graph, create_graph=True) if pairs else \
                [None] * len(flat)
        gs = _finish(gs, flat, keep)
        res, i = [], 0
        for spec, n in specs:
            res.append(_unflatten(gs[i:i + n], spec))
            i += n
        return tuple(res)

    value = out if outer else _detach_tree(out)
    if has_aux:
        return value, vjp_fn, (aux if outer else _detach_tree(aux))
    return value, vjp_fn


def jvp(func, primals, tangents, *, has_aux: bool = False):
    """``(func(*primals), J tangents)``: the Jacobian-vector product at ``primals`` (tuples
    of the function's positional arguments and of tangents shaped as them)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be "
                           "tuples. E.g. it should be valid to call f(*primals).")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure")
    p_leaves, _ = _flatten(primals)
    t_leaves, _ = _flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure")
    _tensors("jvp", p_leaves + t_leaves, "primals and tangents")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to "
                               f"have the same shape: {tuple(p.shape)} and {tuple(t.shape)}")
    outer = any(x.requires_grad for x in p_leaves + t_leaves)
    with enable_grad():
        out, fn, *aux = vjp(func, *primals, has_aux=has_aux)
        out_leaves, out_spec = _flatten(out)
        us = [et.zeros_like(o).requires_grad_(True) for o in out_leaves]
        g_leaves, _ = _flatten(fn(_unflatten(us, out_spec), create_graph=True))
        pairs = [(g, t) for g, t in zip(g_leaves, t_leaves) if g.requires_grad]
        jv = _grad([p[0] for p in pairs], us, [p[1] for p in pairs], allow_unused=True,
                   create_graph=outer) if pairs else [None] * len(us)
    jv = _unflatten(_finish(jv, out_leaves, outer), out_spec)
    return (out, jv, aux[0]) if has_aux else (out, jv)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at
    ``primals`` (the graph of ``func`` is built once and reused for every call)."""
    outer = any(x.requires_grad for x in _flatten(primals)[0])
    with enable_grad():
        out, fn = vjp(func, *primals)
        out_leaves, out_spec = _flatten(out)
        us = [et.zeros_like(o).requires_grad_(True) for o in out_leaves]
        g_leaves, _ = _flatten(fn(_unflatten(us, out_spec), create_graph=True))
    p_leaves = _flatten(primals)[0]

    def jvp_fn(*tangents):
        t_leaves, _ = _flatten(tangents)
        if len(t_leaves) != len(p_leaves):
            raise RuntimeError("linearize: jvp_fn expected tangents with the structure of the "
                               "primals")
        for p, t in zip(p_leaves, t_leaves):
            if tuple(p.shape) != tuple(t.shape):
                raise RuntimeError(f"linearize: Expected tangent of shape {tuple(p.shape)}, "
                                   f"got {tuple(t.shape)}")
        pairs = [(g, t) for g, t in zip(g_leaves, t_leaves) if g.requires_grad]
        with enable_grad():
            jv = _grad([q[0] for q in pairs], us, [q[1] for q in pairs], allow_unused=True,
                       retain_graph=True, create_graph=outer) if pairs else [None] * len(us)
        return _unflatten(_finish(jv, out_leaves, outer), out_spec)

    return out, jvp_fn


# ------------------------------------------------------------------------------ Jacobians
def _jacobian(name: str, func, argnums, has_aux: bool, forward: bool):
    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums(name, argnums, len(args))
        ins = [args[a] for a in nums]
        in_leaves, in_specs = [], []
        for x in ins:
            leaves, spec = _flatten(x)
            _tensors(name, leaves, "inputs")
            in_specs.append((spec, len(leaves)))
            in_leaves += leaves

        def f(*xs):  # the function of the differentiated leaves only
            full, i = list(args), 0
            for a, (spec, n) in zip(nums, in_specs):
                full[a] = _unflatten(list(xs[i:i + n]), spec)
                i += n
            return func(*full)

        out, fn, *aux = vjp(f, *in_leaves, has_aux=has_aux)
        out_leaves, out_spec = _flatten(out)
        # blocks[o][i]: d out_o / d in_i, of shape out_o.shape + in_i.shape
        if forward:
            cols = [[] for _ in out_leaves]
            for i, x in enumerate(in_leaves):
                per_out = [[] for _ in out_leaves]
                for k in range(x.numel()):
                    ts = [et.zeros_like(y) for y in in_leaves]
                    ts[i].view(-1)[k] = 1
                    _, jv = jvp(f, tuple(in_leaves), tuple(ts))
                    for o, v in enumerate(_flatten(jv)[0]):
                        per_out[o].append(v)
                for o, y in enumerate(out_leaves):
                    cols[o].append(et.stack(per_out[o], -1).reshape(*y.shape, *x.shape)
                                   if per_out[o] else et.zeros(*y.shape, *x.shape,
                                                               dtype=y.dtype))
            blocks = cols
        else:
            blocks = []
            for o, y in enumerate(out_leaves):
                rows = [[] for _ in in_leaves]
                for k in range(y.numel()):
                    cts = [et.zeros_like(z) for z in out_leaves]
                    cts[o].view(-1)[k] = 1
                    for i, g in enumerate(fn(_unflatten(cts, out_spec))):
                        rows[i].append(g)
                blocks.append([et.stack(r).reshape(*y.shape, *x.shape) if r else
                               et.zeros(*y.shape, *x.shape, dtype=x.dtype)
                               for r, x in zip(rows, in_leaves)])
        per_out = []
        for row in blocks:
            res, i = [], 0
            for spec, n in in_specs:
                res.append(_unflatten(row[i:i + n], spec))
                i += n
            per_out.append(tuple(res) if isinstance(argnums, tuple) else res[0])
        jac = _unflatten(per_out, out_spec)
        return (jac, aux[0]) if has_aux else jac

    return wrapper


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None):
    """``func`` -> a function returning its Jacobian with respect to ``argnums`` (shape
    ``output.shape + input.shape``), one vector-Jacobian product per output element."""
    return _jacobian("jacrev", func, argnums, has_aux, forward=False)


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """``func`` -> a function returning its Jacobian with respect to ``argnums``, one
    Jacobian-vector product per input element."""
    return _jacobian("jacfwd", func, argnums, has_aux, forward=True)


def hessian(func, argnums=0):
    """``func`` -> a function returning the Hessian of the scalar ``func``
    (``jacfwd(jacrev(func))``)."""
    return jacfwd(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------------------ vmap
def _in_dims_tree(in_dims, args):
    """Per positional argument, its leaves' batch dims (an int applies to every leaf)."""
    if isinstance(in_dims, int) or in_dims is None:
        in_dims = (in_dims,) * len(args)
    if not isinstance(in_dims, tuple) or len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{in_dims} but inputs has {len(args)} positional arguments.")
    dims = []
    for d, a in zip(in_dims, args):
        leaves, spec = _flatten(a)
        if d is None or isinstance(d, int):
            dims.append([d] * len(leaves))
        else:
            dl, _ = _flatten(d)
            if len(dl) != len(leaves):
                raise ValueError(f"vmap: in_dim {d} is not compatible with the structure of "
                                 f"its argument")
            dims.append(dl)
    return dims


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` (written for one example) -> a function over a batch: the arguments are
    sliced along ``in_dims`` (an int, None for an argument shared by every example, or a
    tuple of those per positional argument, or trees matching them), ``func`` runs on each
    example under :func:`~ember.autograd.autobatch` (the per-example calls run as one call
    per op), and the results are stacked along ``out_dims``. ``chunk_size``: examples per
    batched run. ``randomness``: ``'different'`` (or PyTorch's default ``'error'``, which
    refuses random ops: ember's examples draw independently instead); ``'same'`` is not
    supported (the batched run draws once per op, not once per example)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if randomness == "same":
        raise NotImplementedError("vmap(randomness='same') is not supported by ember")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. "
                         f"(got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = _in_dims_tree(in_dims, args)
        flat = [_flatten(a) for a in args]
        size = None
        for (leaves, _), ds in zip(flat, dims):
            for x, d in zip(leaves, ds):
                if d is None:
                    continue
                if not isinstance(x, Tensor):
                    raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of "
                                     f"type {type(x).__name__}. We cannot vmap over non-Tensor "
                                     f"arguments, please use None as the respective in_dim")
                if not -x.dim() <= d < x.dim():
                    raise ValueError(f"vmap: Got in_dim={d} for some input, but that input is "
                                     f"a Tensor of dimensionality {x.dim()} so expected in_dim "
                                     f"to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
                n = x.shape[d]
                if size is not None and n != size:
                    raise ValueError(f"vmap: Expected all tensors to have the same size in the "
                                     f"mapped dimension, got both sizes {size} and {n} for the "
                                     f"mapped dimension")
                size = n
        if size is None:
            raise ValueError("vmap: at least one input must be a Tensor mapped over a dim "
                             "(in_dims not None)")

        def example(i):
            ex = []
            for (leaves, spec), ds in zip(flat, dims):
                ex.append(_unflatten([x if d is None else x.select(d, i)
                                      for x, d in zip(leaves, ds)], spec))
            return func(*ex, **kwargs)

        step = chunk_size or max(size, 1)
        pieces = []
        for lo in range(0, size, step):
            with autobatch():
                outs = [example(i) for i in range(lo, min(lo + step, size))]
                pieces.append(_stack(outs, out_dims))
        if len(pieces) == 1:
            return pieces[0]
        leaves = [_flatten(p)[0] for p in pieces]
        spec = _flatten(pieces[0])[1]
        o_dims = _out_dims(out_dims, len(leaves[0]))
        return _unflatten([et.cat([lv[j] for lv in leaves], o_dims[j])
                           for j in range(len(leaves[0]))], spec)

    return wrapper


def _out_dims(out_dims, n: int):
    if isinstance(out_dims, int):
        return [out_dims] * n
    dl, _ = _flatten(out_dims)
    if len(dl) != n:
        raise ValueError(f"vmap(f, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`.")
    return dl


def _stack(outs, out_dims):
    leaves0, spec = _flatten(outs[0])
    per = [_flatten(o)[0] for o in outs]
    for lv in per:
        for x in lv:
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap: `f` must only return Tensors, got type "
                                 f"{type(x).__name__}. Did you mean to set out_dims= to None "
                                 f"for output?")
        if len(lv) != len(leaves0):
            raise ValueError("vmap: the examples' outputs differ in structure")
    dims = _out_dims(out_dims, len(leaves0))
    stacked = []
    for j, d in enumerate(dims):
        xs = [lv[j] for lv in per]
        nd = xs[0].dim() + 1
        if not -nd <= d < nd:
            raise ValueError(f"vmap: out_dim {d} is out of range for an output of "
                             f"{nd - 1} dims")
        t = et.stack(xs)
        stacked.append(t if d in (0, -nd) else t.movedim(0, d))
    return _unflatten(stacked, spec)


# ------------------------------------------------------------------------------ modules
def stack_module_state(models):
    """``(params, buffers)``: dicts of every named parameter and buffer of ``models`` (modules
    of one class, all training or all evaluating) stacked along a new dim 0; the stacked
    parameters are new leaves (requiring grad where the models' do), ready for an optimizer,
    and for :func:`vmap` over :func:`functional_call` with ``models[0]``."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({bool(m.training) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        per = [dict(named(m)) for m in models]
        out = {}
        for k in per[0]:
            ts = [p[k] for p in per]
            rg = {t.requires_grad for t in ts}
            if len(rg) != 1:
                raise RuntimeError(f"Expected {k} from each model to have the same "
                                   f".requires_grad")
            out[k] = et.stack([t.detach() for t in ts]).requires_grad_(rg.pop())
        return out

    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm module under ``root`` (one with running statistics) normalize
    with its batch's statistics only, in place (``running_mean`` / ``running_var`` /
    ``num_batches_tracked`` None, ``track_running_stats`` False), as :func:`vmap` over
    per-example batch norm needs; returns ``root``."""
    for m in root.modules():
        if getattr(m, "track_running_stats", False) and hasattr(m, "running_mean"):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def functionalize(func, *, remove: str = "mutations"):
    """``func`` itself, wrapped: PyTorch's functionalization rewrites in-place ops as
    out-of-place ones for graph capture and gives the same results; ember runs eagerly and
    captures no graphs (``ember.onnx`` traces through the op registry), so there is nothing
    to rewrite."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           f"all inplace and out= operators will be removed from the program, "
                           f"and replaced with their out-of-place equivalents.\n     "
                           f"remove='mutations_and_views': In addition to the above, all "
                           f"aliasing operators {{view}} will be replaced with their "
                           f"non-aliasing counterparts, {{view}}_copy.\n")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def debug_unwrap(tensor, *, recurse: bool = True):
    """``tensor``: ember's transforms wrap no tensors (PyTorch's returns the tensor under its
    functorch wrappers)."""
    return tensor


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module`` with other parameters and buffers in place of its own:
    :func:`ember.nn.utils.stateless.functional_call` (ember-nn's modules own the stores that
    are swapped; a module to call means ember-nn is installed)."""
    from ember.nn.utils.stateless import functional_call as call

    return call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights,
                strict=strict)
