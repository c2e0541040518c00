"""The backward engine.

:func:`run_backward` walks the graph that :mod:`ember.autograd.graph` recorded. It is
iterative: nodes run in topological order (Kahn's algorithm over dependency counts) with a
table accumulating gradients per node output; no recursion, so a 100,000-op chain
backpropagates. Gradients reaching a leaf go through its hooks into ``.grad``; callbacks queued
with :func:`queue_callback` run when the pass ends.
"""
from __future__ import annotations

import sys

import numpy as np

from ember.tensor import Tensor
from ember.tensor import extension as _ext
from ember.tensor.sparse import SparseTensor as _Sparse

from . import sparse_grads
from .grad_mode import grad_enabled as _grad_on
from .grad_mode import set_grad_flag as _set_grad
from .grad_mode import state
from .graph import AccumulateGrad, _edge, _running, input_edge

__all__ = ["run_backward", "queue_callback", "plain_backward"]

_TensorType = Tensor
_wrap, _unwrap = _ext.wrap, _ext.unwrap


class _Rows:
    """A gradient that is zero except at slices ``index`` along ``dim``: index_select's
    (and so embedding's) backward without ``create_graph``. The engine sums such pieces by
    concatenating them and makes them dense once, when the receiving node runs, instead of
    materializing one full-size table per lookup."""

    __slots__ = ("shape", "dim", "index", "values")

    def __init__(self, shape, dim: int, index: Tensor, values: Tensor) -> None:
        self.shape, self.dim = tuple(shape), dim
        self.index, self.values = [index], [values]

    def add(self, other: _Rows) -> _Rows:
        self.index += other.index
        self.values += other.values
        return self

    def add_into(self, dense: Tensor) -> Tensor:
        from ember.tensor import cat

        index = self.index[0] if len(self.index) == 1 else cat(self.index)
        values = self.values[0] if len(self.values) == 1 else cat(self.values, self.dim)
        return dense.index_add_(self.dim, index, values)

    def dense(self) -> Tensor:
        from ember.tensor import zeros

        v = self.values[0]
        return self.add_into(zeros(self.shape, dtype=v.dtype, device=v.device))


def _sum_slot(old, g, mine: bool):
    """``old + g`` where either may be a :class:`_Rows`; returns ``(sum, sum is a dense
    tensor only the engine holds)``. ``mine``: ``old`` is such a tensor."""
    if old.__class__ is _Rows and g.__class__ is _Rows:
        if old.dim == g.dim:
            return old.add(g), False
        return g.add_into(old.dense()), True  # slices along two dims: one dense sum
    if g.__class__ is _Rows:
        rows, dense = g, (old if mine else _wrap(_unwrap(old).copy()))
    elif old.__class__ is _Rows:
        rows, dense = old, _wrap(_unwrap(g).copy())
    else:
        return _wrap(_unwrap(old) + _unwrap(g)), True
    return rows.add_into(dense), True


def _densify(grads: list) -> list:
    for k, g in enumerate(grads):
        if g.__class__ is _Rows:
            grads[k] = g.dense()
        elif g.__class__ is _Sparse:
            grads[k] = g.to_dense()
    return grads


def _reduce_to(g: Tensor, meta) -> Tensor:
    """Undo broadcasting and dtype promotion: sum ``g`` down to the input's shape and cast
    (a complex gradient of a real input keeps its real part, as in PyTorch)."""
    shape, dtype = meta
    d = _unwrap(g)
    gshape = d.shape
    if gshape != shape:
        from ember.tensor import sum as _sum

        lead = len(gshape) - len(shape)
        dims = tuple(range(lead)) + tuple(
            i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1)
        if dims:
            g = _sum(g, dims, keepdim=True)
        if lead or _unwrap(g).shape != shape:
            g = g.reshape(shape)
    d = _unwrap(g)
    if d.dtype != dtype:
        if d.dtype.kind == "c" and dtype.kind != "c":  # a real input's gradient is real
            g = g.real
        g = g.to(dtype=_ext.dtype_of(dtype))
    return g


def _add(a: Tensor | None, b: Tensor) -> Tensor:
    return b if a is None else a + b


_callbacks: list | None = None  # the running backward's queue (None outside backward)
_plain = True  # whether the running pass is backward() into every leaf (no grad(), no inputs=)


def queue_callback(fn) -> None:
    """Run ``fn()`` once the backward pass now running has finished (PyTorch's
    ``Variable._execution_engine.queue_callback``): data-parallel training waits for its
    gradient all-reduces there. Only callable while backward runs (from a hook)."""
    if _callbacks is None:
        raise RuntimeError("queue_callback can only be called during the backward pass")
    _callbacks.append(fn)


def run_backward(roots, grads, retain_graph: bool, create_graph: bool, inputs=None,
                 accumulate: bool = True):
    """Backpropagate ``grads`` from ``roots``; accumulate into leaves' ``.grad`` or, when
    ``accumulate`` is False, return the gradients w.r.t. ``inputs``. Callbacks queued with
    :func:`queue_callback` during the pass run at its end."""
    global _callbacks, _plain
    outer, _callbacks = _callbacks, []
    outer_plain, _plain = _plain, inputs is None and accumulate
    try:
        with _ext.quiet():  # an inf or nan in a gradient is its value, as in PyTorch: no warning
            result = _run_backward(roots, grads, retain_graph, create_graph, inputs, accumulate)
        while _callbacks:
            _callbacks.pop(0)()
        return result
    finally:
        _callbacks, _plain = outer, outer_plain


def plain_backward() -> bool:
    """Whether the backward pass now running (or, outside one, the next) is ``backward()``
    into every leaf's ``.grad``: not ``grad()``, not ``backward(inputs=...)`` (reentrant
    checkpointing needs this: it accumulates parameters' gradients by a backward of its own)."""
    return _plain


def _let_go(fn) -> None:
    """``fn`` has run in a backward without ``retain_graph``, and other examples' graphs may
    share it (autobatch's batched nodes): it frees what it saved only once every row of the
    batches it waits for has been through such a backward (``_hold``: their counts of rows
    left), as each example's own node would be freed by a backward through that example;
    then it lets go of the rows of other batches it reads (``_feeds``: the count of rows
    left, the rows done, the rows it reads: None for all, a slice, or row numbers)."""
    hold = fn._hold
    if hold is not None:
        for left in hold:
            if left[0] > 0:
                return
    if fn._nsaved or fn._out_data is not None or fn.entry.release is not None:
        fn.release()
    feeds, fn._feeds = fn._feeds, None
    if feeds is not None:
        count = np.count_nonzero
        for left, done, rows in feeds:
            if rows is None or rows.__class__ is slice:
                part = done if rows is None else done[rows]
                left[0] -= part.size - count(part)
                part.fill(True)
            else:  # (rows read twice count once)
                before = count(done)
                done[rows] = True
                left[0] -= count(done) - before


def _run_backward(roots, grads, retain_graph: bool, create_graph: bool, inputs=None,
                  accumulate: bool = True):
    """The pass itself (see :func:`run_backward`)."""
    # targets: edges whose incoming gradient is captured (grad()) or the only ones to fill
    capture = None
    if inputs is not None:
        capture = {}
        for i, t in enumerate(inputs):
            e = input_edge(t)
            if e is None:
                if not t._requires_grad:
                    raise RuntimeError("One of the differentiated Tensors does not require grad")
                continue
            capture.setdefault((id(e[0]), e[1]), []).append(i)
        captured = [None] * len(inputs)
        keep_alive = [input_edge(t) for t in inputs]
    buffers: dict = {}
    starts = []
    for r, g in zip(roots, grads):
        e = _edge(r)
        if e is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
        fn, nr = e
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * fn._n_out
            starts.append(fn)
        buf[nr] = _add(buf[nr], g)
    deps = _dependencies(starts)
    outer_pass, _running[0] = _running[0], deps
    ready = [fn for fn in starts if deps[fn] == 0]
    check_nan = state.anomaly and state.anomaly_check_nan
    owned = set()  # (node, output_nr) slots holding a sum that only this engine references
    prev = _grad_on()
    _set_grad(create_graph)
    try:
        while ready:
            fn = ready.pop()
            out_grads = buffers.pop(fn, None) or [None] * fn._n_out
            if out_grads[0].__class__ is _Rows or fn._n_out > 1:
                out_grads = _densify(out_grads)
            elif out_grads[0].__class__ is _Sparse and fn.__class__ is not AccumulateGrad:
                out_grads = [sparse_grads.densify(out_grads[0])]  # formulas take dense
            if capture is not None:
                for nr, g in enumerate(out_grads):
                    for i in capture.get((id(fn), nr), ()):
                        captured[i] = g if captured[i] is None else captured[i] + g
            if fn.__class__ is AccumulateGrad:
                if accumulate and out_grads[0] is not None and (
                        capture is None or (id(fn), 0) in capture):
                    v = fn.variable
                    if v is not None:  # a leaf deleted meanwhile receives nothing
                        _accumulate(v, out_grads[0], create_graph)
                continue
            if fn._hooks is not None:
                out_grads = _run_tensor_hooks(fn, out_grads)
            if fn._n_out == 1:
                in_grads = fn.apply(out_grads) if out_grads[0] is not None else ()
            elif all(g is None for g in out_grads):
                in_grads = ()
            else:
                in_grads = fn.apply(_fill_missing(fn, out_grads))
            if check_nan and in_grads:
                _check_nan(fn, in_grads)
            if not retain_graph:
                if fn._feeds is not None or fn._hold is not None:
                    _let_go(fn)
                elif fn._nsaved or fn._out_data is not None or fn.entry.release is not None:
                    fn.release()
            # hand each input's gradient to the node that produced the input
            meta = fn.meta
            n_in = len(in_grads)
            i = -1
            for e in fn._edges:
                i += 1
                if e is None:
                    continue
                g = in_grads[i] if i < n_in else None
                cls = e.__class__
                if cls is list:  # a list argument: one edge per element
                    for j, sub in enumerate(e):
                        if sub is not None:
                            _deliver(sub, g[j] if g is not None else None, meta[i][j],
                                     buffers, deps, ready, owned, create_graph)
                    continue
                if cls is tuple or g is None:
                    _deliver(e, g, meta[i], buffers, deps, ready, owned, create_graph)
                    continue
                # the common case, inline: output 0 of a node, a dense gradient
                if g.__class__ is not _TensorType:
                    _deliver(e, g, meta[i], buffers, deps, ready, owned, create_graph)
                    continue
                d = _unwrap(g)
                m = meta[i]
                if d.shape != m[0] or d.dtype != m[1]:
                    g = _reduce_to(g, m)
                buf = buffers.get(e)
                if buf is None:
                    if e._n_out == 1:
                        buffers[e] = [g]
                    else:
                        buf = buffers[e] = [None] * e._n_out
                        buf[0] = g
                elif buf[0] is None:
                    buf[0] = g
                else:  # a sum
                    _deliver(e, g, m, buffers, deps, ready, owned, create_graph)
                    continue
                left = deps[e] - 1
                deps[e] = left
                if not left:
                    ready.append(e)
            # drop local references so sinks can take gradient buffers over (_exclusive)
            in_grads = out_grads = g = d = None
    finally:
        _set_grad(prev)
        _running[0] = outer_pass
    if capture is not None:
        del keep_alive
        return captured
    return None


def _dependencies(starts) -> dict:
    """How many edges of the graph reachable from ``starts`` point at each node (the start
    nodes are in the table too, with the edges that reach them from other starts)."""
    deps: dict = dict.fromkeys(starts, 0)
    stack = list(starts)
    while stack:
        for e in stack.pop()._edges:
            if e is None:
                continue
            for sub in (e if e.__class__ is list else (e,)):  # a list argument: one each
                if sub is None:
                    continue
                nxt = sub[0] if sub.__class__ is tuple else sub
                count = deps.get(nxt)
                if count is None:
                    stack.append(nxt)
                    count = 0
                deps[nxt] = count + 1
    return deps


def _deliver(edge, g, meta, buffers, deps, ready, owned, create_graph) -> None:
    """Add ``g`` (None: no gradient) into the slot of ``edge``'s node and count the edge
    done. Without ``create_graph``, a second gradient makes a fresh sum the engine owns
    (``owned``), into which later ones are added in place."""
    nxt, nr = edge if edge.__class__ is tuple else (edge, 0)
    if g is not None:
        if g.__class__ is not _Rows and g.__class__ is not _Sparse:
            d = _unwrap(g)
            if d.shape != meta[0] or d.dtype != meta[1]:
                g = _reduce_to(g, meta)
        buf = buffers.get(nxt)
        if buf is None:
            buf = buffers[nxt] = [None] * nxt._n_out
        old = buf[nr]
        if old is None:
            buf[nr] = g
        elif old.__class__ is _Sparse or g.__class__ is _Sparse:  # sparse gradients
            buf[nr] = sparse_grads.sum_grads(old, g)
        elif create_graph:
            buf[nr] = old + g
        elif g.__class__ is not _Rows and (nxt, nr) in owned:
            acc = _unwrap(old)
            acc += _unwrap(g)
        else:
            buf[nr], mine = _sum_slot(old, g, (nxt, nr) in owned)
            if mine:
                owned.add((nxt, nr))
    left = deps[nxt] - 1
    deps[nxt] = left
    if not left:
        ready.append(nxt)


def _fill_missing(fn, out_grads):
    if all(g is not None for g in out_grads) or fn._out_data is None:
        return out_grads
    from ember.tensor import zeros_like

    return [g if g is not None else zeros_like(_wrap(d))
            for g, d in zip(out_grads, fn._out_data)]


def _accumulate(t: Tensor, g: Tensor, create_graph: bool) -> None:
    m = t._autograd_meta
    hooks = None if m is None else m.grad_hooks
    if hooks:
        for h in list(hooks.values()):
            r = h(g)
            if r is not None:
                g = r
    grad = t._grad  # autograd's own slot behind Tensor.grad (whose setter validates users')
    if g.__class__ is _Sparse or grad.__class__ is _Sparse:  # sparse gradients
        t.grad = sparse_grads.accumulate(t, g, create_graph)
    elif grad is None:
        # the incoming gradient may be shared with another input (add) or be a view: own it,
        # laid out like the parameter (row-major for a contiguous one), as PyTorch does
        if create_graph:
            t._grad = g
        elif _exclusive(g) and (_unwrap(g).flags.c_contiguous or
                                not _unwrap(t).flags.c_contiguous):
            t._grad = g.detach()  # nobody else holds this buffer: take it over, no copy
        elif _unwrap(t).flags.c_contiguous and not _unwrap(g).flags.c_contiguous:
            t._grad = _wrap(_unwrap(g).copy(order="C"))
        else:
            t._grad = g.detach().clone()
    elif create_graph or grad._requires_grad:
        t._grad = grad + g
    else:
        acc, d = _unwrap(grad), _unwrap(g)
        # (a CuPy array is always writeable: its flags have no such field)
        if type(acc) is type(d) and acc.shape == d.shape and (
                acc.__class__ is not np.ndarray or acc.flags.writeable):
            acc += d
            _ext.bump_version(grad)
        else:
            grad.add_(g)
    post = None if m is None else m.post_acc_hooks
    if post:
        for h in list(post.values()):
            h(t)


def _exclusive(g: Tensor) -> bool:
    """True when ``g`` and its buffer are referenced only by the engine's gradient table
    (CPython reference counts: the table's list, the argument, getrefcount's own)."""
    d = _unwrap(g)
    if sys.getrefcount(g) > 4 or sys.getrefcount(d) > 3 or g.grad_fn is not None:
        return False
    base = d.base  # a view (e.g. a reshape) of a temporary nobody else holds is fine too
    return base is None or (base.base is None and sys.getrefcount(base) <= 2)


def _run_tensor_hooks(fn, out_grads):
    out_grads = list(out_grads)
    for nr, hooks in fn._hooks.items():
        g = out_grads[nr]
        if g is None:
            continue
        for h in list(hooks.values()):
            r = h(g)
            if r is not None:
                g = r
        out_grads[nr] = g
    return out_grads


def _check_nan(fn, in_grads):
    from ember.tensor import isnan

    for i, g in enumerate(in_grads):
        gs = g if isinstance(g, (list, tuple)) else (g,)
        for x in gs:
            if isinstance(x, _TensorType) and x.is_floating_point() and bool(isnan(x).any()):
                raise RuntimeError(f"Function '{type(fn).__name__}' returned nan values in its "
                                   f"{i}th output.")
