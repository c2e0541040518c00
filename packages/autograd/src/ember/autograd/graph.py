"""The graph: recording.

``record`` is installed into ember.tensor's op registry: it runs an op and, when grad mode is
on and an input requires grad, creates a :class:`Node` holding only what the op's derivative
needs (tensors listed in the derivative table's ``save``, checked against version counters at
backward time). Outputs are saved without a strong reference back to their node, so a graph
holds no cycles and dies with its last output. The backward pass over this graph is
:mod:`ember.autograd.engine`.
"""
from __future__ import annotations

import contextlib
import threading
import traceback
import weakref
from collections import namedtuple

import numpy as np

from ember.tensor import Tensor
from ember.tensor import extension as _ext

from .grad_mode import grad_enabled as _grad_on
from .grad_mode import set_grad_flag as _set_grad
from .grad_mode import state

__all__ = ["Node", "AccumulateGrad", "AutogradMeta", "autograd_meta", "record", "attach", "install",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "increment_version", "allow_mutation_on_saved_tensors",
           "GradientEdge", "get_gradient_edge"]

_TensorType = Tensor
_wrap, _unwrap = _ext.wrap, _ext.unwrap


class Node:
    """A recorded op: the backward function of its outputs (``grad_fn``).

    A node is also what its derivative formula reads (the ``c`` of ``derivatives.py``):
    ``args`` (the bound call, a named tuple of every parameter in declared order; tensors the
    formula does not save are None; one tuple shared by the nodes of equal calls when it holds
    no tensor), ``out`` (the saved output while the formula runs, else
    None), ``needs`` (per parameter, whether it needs a gradient: a tuple shared by every
    node with the same pattern) and ``meta`` (per tensor parameter, its
    ``(shape, numpy dtype)``).

    ``_edges``: per parameter, where its gradient goes: None, a list for a list argument (one
    edge per element), or an edge: the producing node itself for its output 0 (the common
    case, which then costs no tuple per input), ``(node, output_nr)`` for a later output.

    What the node saved, kept without a container of its own (each container would be one
    more object for the garbage collector to track and promote per node): ``_nsaved``, how
    many tensors of ``args`` it saved (0: none), and ``_vers``, their versions then, in
    the order :func:`_save` lists them (None when every one was at version 0, the common case);
    ``_out_data``, the saved output's array (a tuple of them for a multi-output op; None when
    the formula does not read the output), with ``_out_vc``, the version counter of output 0,
    and ``_out_v``, its value then."""

    # what every node sets lives in slots; the rarely set rest falls back to the class
    # defaults below and goes into a lazily created __dict__ when set
    __slots__ = ("entry", "_edges", "args", "needs", "out", "meta", "_nsaved", "_vers",
                 "_out_data", "_out_vc", "_out_v", "_n_out", "__dict__", "__weakref__")
    op = ""
    _hooks = None
    _trace = None
    _packed = False  # True: what the node saved went through a pack hook (saved_tensors_hooks)
    _out_tangents = None  # forward AD's tangents of the saved outputs, by output number
    _last_meta = [()]  # the meta of the op's previous node (each node class has its own cell)
    # several examples' graphs sharing nodes (autobatch's batched calls): ``_hold``, the
    # counts of rows of batches that no backward without retain_graph has been through yet,
    # which the node waits for (what it saved stays while one is left); ``_feeds``, the rows
    # of such batches a node reads, let go of once a backward without retain_graph has run
    # it (see engine._let_go)
    _hold = None
    _feeds = None

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    @property
    def next_functions(self) -> tuple:
        """``(node, output_nr)`` per tensor input, ``(None, 0)`` for constants (PyTorch's
        layout: the tensors of a list argument are listed one by one)."""
        out = []
        for e in self._edges:
            out.extend(_pair(x) for x in (e if type(e) is list else (e,)))
        return tuple(out)

    def register_hook(self, hook):
        """``hook(grad_inputs, grad_outputs)`` is not supported; use Tensor.register_hook."""
        raise RuntimeError("Node.register_hook is not supported by ember; use "
                           "Tensor.register_hook on the tensor instead")

    # -- backward -------------------------------------------------------------------------
    def _check_saved(self) -> None:
        if self.args is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (or directly access saved "
                f"tensors after they have already been freed) in {type(self).__name__}. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling "
                "backward.")
        vers, args = self._vers, self.args
        n = len(args)
        k = 0  # the position in the order _save noted the versions in
        for i in self.entry.save:
            a = args[i] if i < n else None
            if a.__class__ is _TensorType or isinstance(a, _TensorType):
                v = 0 if vers is None else vers[k]
                k += 1
                if a._version != v:
                    self._modified(a, v)
            elif a.__class__ is list or a.__class__ is tuple:
                for b in a:
                    if isinstance(b, _TensorType):
                        v = 0 if vers is None else vers[k]
                        k += 1
                        if b._version != v:
                            self._modified(b, v)

    def _modified(self, t, v: int):
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by "
            f"an inplace operation: [{t.type()} {list(t.shape)}], which is an input of "
            f"{type(self).__name__}, is at version {t._version}; expected version {v} "
            "instead. Hint: the operation that modified it came after the forward op; "
            "use an out-of-place op (e.g. x = x + 1 instead of x += 1) or clone() the "
            "tensor before modifying it.")

    def _saved_out(self, check: bool = True):
        vc, v = self._out_vc, self._out_v
        if check and vc[0] != v:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: the output 0 of {type(self).__name__} is at version "
                f"{vc[0]}; expected version {v} instead. Hint: use an out-of-place op or "
                "clone() the result before modifying it.")
        tangents = self._out_tangents
        if self._n_out == 1:
            o = _wrap(self._out_data)
            o.grad_fn = self
            o._requires_grad = True
            if tangents is not None:
                autograd_meta(o).fw_grad = tangents.get(0)
            return o
        outs = []
        for i, d in enumerate(self._out_data):
            o = _wrap(d)
            o.grad_fn = self
            o._requires_grad = True
            if i:  # a multi-output op's saved output i feeds edge (node, i)
                autograd_meta(o).output_nr = i
            if tangents is not None:
                autograd_meta(o).fw_grad = tangents.get(i)
            outs.append(o)
        return tuple(outs)

    def apply(self, grads):
        """Gradients w.r.t. the op's inputs given gradients w.r.t. its outputs (a list, one
        per output)."""
        # (a node that saved nothing is never packed: only those that did read _packed)
        if self._nsaved or self.args is None:
            if self._packed:
                return self._apply_packed(grads)
            self._check_saved()
        if self._out_data is not None:
            if self._packed:
                return self._apply_packed(grads)
            self.out = self._saved_out()
        try:
            result = self.entry.vjp(self, grads[0] if self._n_out == 1 else grads)
        except Exception as exc:
            if self._trace is not None:
                raise type(exc)(
                    f"{exc}\n\nError detected in {type(self).__name__}. Traceback of forward "
                    f"call that caused the error:\n{''.join(self._trace)}") from exc
            raise
        finally:
            self.out = None  # the output points back at this node: no cycle survives
        if not isinstance(result, (tuple, list)):
            result = (result,)
        return result

    def _apply_packed(self, grads):
        """:meth:`apply` with the saved tensors back from their unpack hook, each time (their
        versions are not checked, as in PyTorch: the hooks own what they keep; see
        :func:`_pack_saved`)."""
        args, data = self.args, self._out_data
        if args is None:
            self._check_saved()  # freed: raises
        self._packed = False
        try:
            self.args = tuple.__new__(args.__class__, [_unpacked(a) for a in args])
            if data is not None:
                self._out_data = (_unwrap(data.tensor()) if self._n_out == 1 else
                                  tuple(_unwrap(d.tensor()) for d in data))
            return self.apply(grads)
        finally:
            self._packed = True
            if self.args is not None:  # (not released meanwhile)
                self.args, self._out_data = args, data

    def release(self) -> None:
        """Free what the node saved (PyTorch frees saved tensors, not nodes: a node that saved
        none can run again)."""
        if self._nsaved or self._out_data is not None:
            self.args = None  # marks the saved tensors as freed
            self._out_data = None
        release = self.entry.release
        if release is not None:  # custom Functions free their ctx's saved tensors
            release()


class AutogradMeta:
    """What autograd keeps on a tensor beyond its public ``requires_grad``, ``grad`` and
    ``grad_fn``: the one attribute ``Tensor._autograd_meta``, None on the many tensors that
    need none of it (PyTorch's AutogradMeta).

    ``output_nr``: which output of its ``grad_fn`` the tensor is; ``accum``: a leaf's gradient
    sink, kept for the tensor's lifetime (the sink holds the tensor only weakly: no cycle), so
    that recording an op on a leaf builds none; ``view_base``/``view_version``: for a view recorded
    by autograd, the tensor its history is a view of and the version counter's value when
    ``grad_fn`` was set; ``retains_grad``; ``grad_hooks`` and ``post_acc_hooks``: a leaf's
    hooks (a non-leaf's hooks live on its node); ``fw_grad``: the tangent forward AD gave it."""

    # no __slots__: every field starts as the class default below, so making one sets none
    # (a split's outputs each get one, with their output numbers)
    output_nr = 0
    accum = None
    view_base = None
    view_version = 0
    retains_grad = False
    grad_hooks = None
    post_acc_hooks = None
    fw_grad = None  # the tangent at the open forward-AD level (ember.autograd.forward_ad)


def autograd_meta(t: Tensor) -> AutogradMeta:
    """``t``'s autograd state, created on first use."""
    m = t._autograd_meta
    if m is None:
        m = t._autograd_meta = _new(AutogradMeta)
    return m


def output_nr(t: Tensor) -> int:
    m = t._autograd_meta
    return 0 if m is None else m.output_nr


def set_output_nr(t: Tensor, nr: int) -> None:
    if nr:
        autograd_meta(t).output_nr = nr
    elif t._autograd_meta is not None:
        t._autograd_meta.output_nr = 0


class AccumulateGrad:
    """The sink for a leaf tensor: adds incoming gradients into ``variable.grad``. It holds
    the tensor weakly (the tensor holds its sink): a leaf deleted while a graph that uses it
    is alive receives nothing, as nothing could read its gradient."""

    __slots__ = ("_variable", "__weakref__")
    _n_out = 1
    _edges = ()
    next_functions = ()

    def __init__(self, variable: Tensor) -> None:
        self._variable = weakref.ref(variable)

    @property
    def variable(self) -> Tensor | None:
        return self._variable()

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def _accumulator(t: Tensor) -> AccumulateGrad:
    m = autograd_meta(t)
    acc = m.accum
    if acc is None:
        acc = m.accum = AccumulateGrad(t)
    return acc


def _pair(edge) -> tuple:
    """An edge of ``Node._edges`` (or None) as ``(node, output_nr)``."""
    if edge is None:
        return (None, 0)
    return edge if edge.__class__ is tuple else (edge, 0)


def _edge(t: Tensor):
    m = t._autograd_meta
    if m is None:
        fn = t.grad_fn
        if fn is not None:
            return (fn, 0)
    else:
        fn = t.grad_fn if m.view_base is None else fresh_view_grad_fn(t)
        if fn is not None:
            return (fn, m.output_nr)
    if t._requires_grad:
        return (_accumulator(t), 0)
    return None


_new = object.__new__
#: one shared ``node.meta`` per distinct signature (a graph holds few): each node then leaves
#: no tuples of its own behind for the garbage collector to count and promote (three per
#: tensor input otherwise), so full collections come several times less often while a graph
#: is alive; emptied when it holds more than ``_METAS_MAX`` (shapes that never repeat)
_metas: dict = {}
_METAS_MAX = 4096
_node_classes: dict[str, type] = {}


def _node_class(opname: str) -> type:
    cls = _node_classes.get(opname)
    if cls is None:
        camel = "".join(p[:1].upper() + p[1:] for p in opname.strip("_").split("_"))
        cls = type(f"{camel}Backward0", (Node,), {"__slots__": (), "op": opname,
                                                   "_last_meta": [()]})
        _node_classes[opname] = cls
    return cls


# ------------------------------------------------------------------------------- recording
_requires = _ext.any_requires_grad  # does a tensor of a bound call require grad?


def record(op, bound):
    """The recorder installed into the op registry: ``bound`` holds every parameter of the
    op, in declared order, however the call passed it."""
    if not _grad_on() or not _requires(bound):
        return op.run(*bound)
    if op.inplace:
        if not (_hooks_open[0] and _saved_hooks.stack):
            return _record_inplace(op, bound)
        before = bound[0].grad_fn
        out = _record_inplace(op, bound)
        if out.grad_fn is not before:  # a node of this call
            _pack_saved(out)
        return out
    out = op.run(*bound)
    if not op.differentiable:
        return out
    entry = _TABLE.get(op.name)
    if entry is None:
        raise RuntimeError(f"ember.autograd: op '{op.name}' has no derivative in the table")
    f = entry.attach
    if f is None:  # the op's attacher, kept on its table entry (an op has one arity)
        f = entry.attach = _attacher(len(bound), entry.save, entry.save_for is not None)
    out = f(op, entry, bound, out)
    if _hooks_open[0] and _saved_hooks.stack:
        _pack_saved(out)
    return out


def _drop_unwanted(saved: list, drop: tuple) -> None:
    """Drop the saved arguments ``drop`` that no wanted gradient reads (``entry.save_for``);
    plain values (scalars, dims) stay: they cost nothing to keep."""
    n = len(saved)
    for i in drop:
        if i < n and (isinstance(saved[i], _TensorType) or saved[i].__class__ in (list, tuple)):
            saved[i] = None


def _save(node, save, saved) -> None:
    """Note how many tensors the node keeps and their versions, checked again at backward
    time (:meth:`Node._check_saved`): the attachers' own path for saved lists and tensors
    already modified in place."""
    n = len(saved)
    count = 0  # the saved tensors, in the order Node._check_saved reads them
    vers = None
    for i in save:
        a = saved[i] if i < n else None
        if a.__class__ is _TensorType or isinstance(a, _TensorType):
            v = a._version
            if v and vers is None:
                vers = [0] * count
            if vers is not None:
                vers.append(v)
            count += 1
        elif a.__class__ is list or a.__class__ is tuple:
            for b in a:
                if isinstance(b, _TensorType):
                    v = b._version
                    if v and vers is None:
                        vers = [0] * count
                    if vers is not None:
                        vers.append(v)
                    count += 1
    node._nsaved = count
    node._vers = None if vers is None else tuple(vers)


class _Needs(dict):
    """``needs`` tuples of ``n``-parameter ops by mask (bit i: parameter i needs a gradient),
    made on first use: one tuple shared by every node of that pattern."""

    __slots__ = ("n",)

    def __missing__(self, mask: int) -> tuple:
        needs = self[mask] = tuple([bool(mask >> i & 1) for i in range(self.n)])
        return needs


_NEEDS: dict = {}  # parameter count -> its _Needs


def _needs_of(n: int) -> _Needs:
    table = _NEEDS.get(n)
    if table is None:
        table = _NEEDS[n] = _Needs()
        table.n = n
    return table


#: the shared ``args`` of nodes that keep no tensor (see _attacher), by (op, values)
_interned: dict = {}
_ATOMS = frozenset([type(None), int, str])


def _intern(key, cls, saved):
    if len(_interned) > _METAS_MAX:  # values that never repeat
        _interned.clear()
    args = _interned[key] = tuple.__new__(cls, saved)
    return args


def frozen(a):
    """A list argument as it is now (copied; also a list inside a tuple: an index), so that a
    later change to the caller's list reaches neither what a node saved nor a deferred call;
    anything else as it is."""
    c = a.__class__
    if c is list:
        return [frozen(b) for b in a]
    if c is tuple:
        for b in a:
            if b.__class__ is list or b.__class__ is tuple:
                return tuple([frozen(b) for b in a])
    return a


def _has_tensor(seq) -> bool:
    for b in seq:
        if isinstance(b, _TensorType):
            return True
    return False


def _edge_of(a, m):
    """The edge of ``a`` (requires grad) when it has autograd state ``m``: its node, with its
    output number past 0, a view's regenerated node, or its leaf sink."""
    fn = a.grad_fn if m.view_base is None else fresh_view_grad_fn(a)
    if fn is not None:
        nr = m.output_nr
        return (fn, nr) if nr else fn
    return m.accum or _accumulator(a)


def _list_edges(a) -> tuple:
    """A list argument's (cat, stack) or index tuple's edges, one per element (None for an
    element that needs no gradient), and whether any element carries one."""
    edges, any_edge = [], False
    for b in a:
        if (b.__class__ is _TensorType or isinstance(b, _TensorType)) and b._requires_grad:
            m = b._autograd_meta  # as for a plain argument (the attachers' inline code)
            if m is None:
                e = b.grad_fn  # output 0 of a node, or a leaf without autograd state yet
                if e is None:
                    e = _accumulator(b)
            else:
                e = _edge_of(b, m)
            any_edge = True
        else:
            e = None
        edges.append(e)
    return edges, any_edge


def _arg_meta(a):
    """What ``node.meta`` holds for one argument: ``(shape, dtype)`` of a tensor, a tuple of
    those (None for non-tensors) for a list holding tensors, else None."""
    if a.__class__ is _TensorType or isinstance(a, _TensorType):
        d = _unwrap(a)
        return (d.shape, d.dtype)
    if (a.__class__ is list or a.__class__ is tuple) and _has_tensor(a):
        return tuple([(_unwrap(b).shape, _unwrap(b).dtype) if isinstance(b, _TensorType)
                      else None for b in a])
    return None


def _new_meta(cell, args):
    """The node's ``meta`` when it differs from the op's previous node's: one shared tuple per
    distinct signature (interned in ``_metas``), remembered in the op's cell."""
    meta = tuple([_arg_meta(a) for a in args])
    meta = cell[0] = _metas.setdefault(meta, meta)
    if len(_metas) > _METAS_MAX:
        _metas.clear()
    return meta


#: compiled attachers, one per (parameter count, saved positions, whether ``save_for`` drops)
_ATTACHERS: dict = {}


def _attacher(n: int, save: frozenset, drops: bool):
    """The attach function for ``n`` parameters of which the derivative saves ``save``
    (``drops``: some only when certain gradients are wanted), compiled once: the loop over
    the arguments unrolled, each position's saving decided here rather than per call."""
    key = (n, save, drops)
    f = _ATTACHERS.get(key)
    if f is not None:
        return f
    names = [f"a{i}" for i in range(n)]
    L = ["def attach(op, entry, args, out, skip=3):"]
    if n:
        L.append(f"    {', '.join(names)}{',' if n == 1 else ''} = args")
    L += ["    cls = entry.node_cls",
          "    if cls is None:",
          "        cls = entry.node_cls = _node_class(op.name)",
          "    node = _new(cls)",
          "    node.entry = entry",
          "    cell = cls._last_meta",
          "    last = cell[0]",
          f"    same = len(last) == {n}",
          "    mask = 0"]
    for i, a in enumerate(names):
        keep = i in save
        L += [f"    if {a}.__class__ is _T or isinstance({a}, _T):",
              f"        if {a}._requires_grad:",
              f"            mask |= {1 << i}",
              f"            m = {a}._autograd_meta",
              "            if m is None:",
              f"                e{i} = {a}.grad_fn",
              f"                if e{i} is None:",
              f"                    e{i} = _accumulator({a})",
              "            else:",
              f"                e{i} = _edge_of({a}, m)",
              "        else:",
              f"            e{i} = None",
              "        if same:",
              f"            d = _unwrap({a})",
              f"            lm = last[{i}]",
              "            if lm is None or lm[0] != d.shape or lm[1] is not d.dtype:",
              "                same = False",
              f"        s{i} = {a if keep else 'None'}",
              f"    elif ({a}.__class__ is list or {a}.__class__ is tuple) and _has_tensor({a}):",
              f"        e{i}, hit = _list_edges({a})",
              "        if hit:",
              f"            mask |= {1 << i}",
              f"        if same and last[{i}] != _arg_meta({a}):",
              "            same = False",
              f"        s{i} = {f'_frozen({a})' if keep else 'None'}",
              "    else:",
              f"        e{i} = None",
              f"        if same and last[{i}] is not None:",
              "            same = False",
              f"        s{i} = {a} if {a}.__class__ is not list and {a}.__class__ is not tuple "
              f"else _frozen({a})"]
    saved = [f"s{i}" for i in range(n)]
    kept = sorted(i for i in save if i < n)
    if drops:
        L += ["    drop = entry._wanted.get(mask)",
              "    if drop is None:",
              "        drop = entry.unwanted(mask)",
              "    if drop:",
              f"        saved = [{', '.join(saved)}]",
              "        _drop_unwanted(saved, drop)"]
        L += [f"        s{i} = saved[{i}]" for i in kept]
        L += ["    else:",
              f"        saved = ({', '.join(saved)}{',' if n == 1 else ''})"]
    else:
        L.append(f"    saved = ({', '.join(saved)}{',' if n == 1 else ''})")
    if kept:  # the saved tensors and their versions; lists and modified tensors: _save
        L += ["    cnt = 0", "    slow = False"]
        for i in kept:
            L += [f"    if s{i}.__class__ is _T or isinstance(s{i}, _T):",
                  "        cnt += 1",
                  f"        if s{i}._version:",
                  "            slow = True",
                  f"    elif s{i}.__class__ is list or s{i}.__class__ is tuple:",
                  "        slow = True"]
        L += ["    if slow:",
              "        _save(node, entry.save, saved)",
              "    else:",
              "        node._nsaved = cnt",
              "        node._vers = None"]
    else:
        L += ["    node._nsaved = 0", "    node._vers = None"]
    L += ["    node.needs = _needs_of[mask]",
          f"    node._edges = [{', '.join(f'e{i}' for i in range(n))}]",
          "    node.meta = last if same else _new_meta(cell, args)"]
    # saved values that are all None, ints or strings (no tensor kept: sigmoid's, add's): one
    # shared tuple per distinct call, as meta is (bools and floats stay out: 1 == True == 1.0)
    if n:
        atoms = " and ".join(f"s{i}.__class__ in _ATOMS" for i in range(n))
        values = ", ".join(f"s{i}" for i in range(n))
        L += [f"    if {atoms}:",
              f"        k = (op, {values})",
              "        node.args = _interned.get(k) or _intern(k, op.Args, saved)",
              "    else:",
              "        node.args = tuple.__new__(op.Args, saved)"]
    else:
        L.append("    node.args = tuple.__new__(op.Args, saved)")
    # the common result, one tensor, connected here; a tuple of them by _connect_many
    L += ["    if _state.anomaly:",
          "        node._trace = _format_stack()[:-skip]",
          "    if out.__class__ is not _T and not isinstance(out, _T):",
          "        return _connect_many(node, entry, op, args, out)",
          "    node._n_out = 1",
          "    d = _unwrap(out)",
          "    kind = d.dtype.kind",
          "    if kind == 'c':",
          "        node.entry = entry.for_complex(op.name)",
          "    if entry.save_out:",
          "        node._out_data = d",
          "        vc = node._out_vc = _version_counter(out)",
          "        node._out_v = vc[0]",
          "    else:",
          "        node._out_data = None",
          "    if kind in _FLOAT_KINDS:",
          "        out.grad_fn = node",
          "        out._requires_grad = True",
          "        if out._base is not None:",
          "            _mark_view(out, args)",
          "    return out"]
    env = {"_T": _TensorType, "_unwrap": _unwrap, "_new": _new, "_node_class": _node_class,
           "_frozen": frozen,
           "_accumulator": _accumulator, "_edge_of": _edge_of, "_has_tensor": _has_tensor,
           "_list_edges": _list_edges, "_arg_meta": _arg_meta, "_new_meta": _new_meta,
           "_drop_unwanted": _drop_unwanted, "_save": _save,
           "_needs_of": _needs_of(n),
           "_ATOMS": _ATOMS, "_interned": _interned, "_intern": _intern, "_state": state,
           "_format_stack": traceback.format_stack, "_connect_many": _connect_many,
           "_version_counter": _ext.version_counter, "_FLOAT_KINDS": _FLOAT_KINDS,
           "_mark_view": _mark_view}
    exec(compile("\n".join(L) + "\n", f"<ember attach {n} {sorted(save)}>", "exec"), env)
    f = _ATTACHERS[key] = env["attach"]
    return f


def attach(op, entry, args, out):
    """Create the node for ``out = op(*args)`` (``args``: the bound call, every parameter in
    declared order) and connect the outputs to it."""
    return _attacher(len(args), entry.save, entry.save_for is not None)(op, entry, args, out, 4)


def _connect_many(node, entry, op, args, out):
    """Make ``node`` the history of the outputs of a multi-output op (``out``: a tuple of
    tensors; the attachers connect a single tensor themselves)."""
    outs = tuple(out)
    node._n_out = len(outs)
    kinds = [_unwrap(o).dtype.kind if o.__class__ is _TensorType or
             isinstance(o, _TensorType) else None for o in outs]
    if "c" in kinds:
        node.entry = entry.for_complex(op.name)
    if entry.save_out:
        node._out_data = _unwrap(outs[0]) if node._n_out == 1 else tuple(
            _unwrap(o) for o in outs)  # (an op that returned a 1-tuple reads one output)
        vc = node._out_vc = _ext.version_counter(outs[0])
        node._out_v = vc[0]
    else:
        node._out_data = None
    view_of = _view_source(args)  # the outputs of split, unbind, ...: views of one input
    diff = node.entry.outputs  # None: every floating output carries gradients
    for i, o in enumerate(outs):
        if kinds[i] in _FLOAT_KINDS and (diff is None or i in diff):
            o.grad_fn = node
            o._requires_grad = True
            is_view = view_of is not None and view_of[0] is o._base
            if i or is_view:
                m = o._autograd_meta
                if m is None:
                    m = o._autograd_meta = _new(AutogradMeta)
                m.output_nr = i
                if is_view:
                    m.view_base = view_of[1]
                    m.view_version = o._version
    return out


#: NumPy kinds of outputs that carry gradients: "f", "c" (complex), and "V" for ml_dtypes'
#: bfloat16 (ember's only "V" dtype)
_FLOAT_KINDS = ("f", "c", "V")


def _view_source(args):
    """``(storage base, view base)`` of an op whose outputs may be views of its first argument
    ``a``: the tensor whose storage ``a`` shares (``a._base``, or ``a`` itself), and the tensor
    ``a``'s history is a view of (``a``, or the one ``a`` is a view of); None when ``a`` is not
    a tensor that requires grad."""
    a = args[0] if args else None
    if not (isinstance(a, _TensorType) and a._requires_grad):
        return None
    am = a._autograd_meta
    return (a if a._base is None else a._base,
            am.view_base if am is not None and am.view_base is not None else a)


def _mark_view(out: Tensor, args) -> None:
    """``out`` shares storage with an input: if it is a view of the first argument, remember
    that tensor (or the tensor that one is a view of) and the version of its history, so a
    later in-place change made through the base or another view is seen (PyTorch's view
    tracking)."""
    src = _view_source(args)
    if src is not None and src[0] is out._base:
        m = autograd_meta(out)
        m.view_base = src[1]
        m.view_version = out._version


def _positions(t: Tensor):
    """The storage position of every element of ``t`` (an int64 array of ``t``'s shape)."""
    pos = np.full((), t.storage_offset(), dtype=np.int64)
    nd = t.dim()
    for k, (n, st) in enumerate(zip(t.shape, t.stride())):
        pos = pos + (np.arange(n, dtype=np.int64) * st).reshape((1,) * k + (n,) +
                                                                (1,) * (nd - k - 1))
    return np.broadcast_to(pos, tuple(t.shape))


def _logical_index(base: Tensor, view: Tensor) -> Tensor:
    """For each element of ``view``, the row-major index of the ``base`` element it is."""
    bpos = _positions(base).reshape(-1)
    lo = int(bpos.min()) if bpos.size else 0
    inv = np.full(int(bpos.max()) - lo + 1 if bpos.size else 1, -1, dtype=np.int64)
    inv[bpos - lo] = np.arange(bpos.size, dtype=np.int64)
    rel = _positions(view) - lo
    idx = inv[np.clip(rel, 0, inv.size - 1)]
    if ((rel < 0) | (rel >= inv.size) | (idx < 0)).any():
        raise RuntimeError("in-place operation on a view that reaches outside its base tensor "
                           "is not supported by ember's autograd")
    return _wrap(np.ascontiguousarray(idx)).to(base.device)


def fresh_view_grad_fn(v: Tensor):
    """The ``grad_fn`` of the view ``v``, rebuilt first if its storage was modified in place
    since it was recorded (through its base or another view): the view is then recorded anew
    as a gather from its base's current history, as PyTorch regenerates view nodes."""
    m, version = v._autograd_meta, v._version
    if m.view_version == version or v.grad_fn is None:
        return v.grad_fn
    base = m.view_base
    if not base._requires_grad:
        return v.grad_fn
    prev = _grad_on()
    _set_grad(True)
    try:
        idx = _logical_index(base, v).reshape(-1)
        new = base.reshape(-1)[idx].view(tuple(v.shape))
    finally:
        _set_grad(prev)
    v.grad_fn = new.grad_fn
    m.output_nr = 0
    m.view_version = version
    return v.grad_fn


def derivative_entry(name: str):
    """The derivative-table entry of the op ``name`` (None: it has none)."""
    return _TABLE.get(name)


# --------------------------------------------------------------------- saved tensor hooks
class _SavedHooks(threading.local):
    stack: tuple = ()  # the open saved_tensors_hooks' (pack, unpack) pairs, innermost last
    disabled: str | None = None  # disable_saved_tensors_hooks's message while it is open


_saved_hooks = _SavedHooks()
# how many saved_tensors_hooks are open in any thread: a plain read that spares recording the
# thread-local lookup while none is (the common case)
_hooks_open = [0]


class _Packed:
    """A saved tensor as its pack hook returned it, with the unpack hook that gives it back and
    the gradient edge the tensor had (None for a node's own outputs)."""

    __slots__ = ("obj", "unpack", "edge")

    def __init__(self, t: Tensor, hooks: tuple, edge) -> None:
        prev = _grad_on()
        _set_grad(False)  # the pack hook's own ops record nothing (as in PyTorch), so
        try:  # they save nothing and pack nothing in turn
            self.obj = hooks[0](t)
        finally:
            _set_grad(prev)
        self.unpack = hooks[1]
        self.edge = edge

    def tensor(self) -> Tensor:
        t = self.unpack(self.obj)
        if not isinstance(t, _TensorType):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        return t


def pack(t: Tensor, edge: bool = True) -> _Packed | None:
    """``t`` through the innermost open pack hook (None when no saved_tensors_hooks is
    open), keeping its gradient edge (``edge``; not for an output of the node that saves it)
    for the tensor :func:`unpack` gives back."""
    hooks = _saved_hooks.stack
    return _Packed(t, hooks[-1], _edge(t) if edge else None) if hooks else None


def unpack(p: _Packed) -> Tensor:
    """The tensor ``p`` saved, from its unpack hook: the memory the hook returned, with the
    saved tensor's gradient edge, so that a double backward differentiates through it."""
    t = _wrap(_unwrap(p.tensor()))
    if p.edge is not None:
        fn, nr = p.edge
        t.grad_fn = fn
        t._requires_grad = True
        set_output_nr(t, nr)
    return t


def _unpacked(a):
    """A saved argument of a node, unpacked (lists of tensors element by element)."""
    if a.__class__ is _Packed:
        return unpack(a)
    if (a.__class__ is list or a.__class__ is tuple) and any(b.__class__ is _Packed for b in a):
        return a.__class__(unpack(b) if b.__class__ is _Packed else b for b in a)
    return a


def _pack_saved(out) -> None:
    """Hand what the node of the call that returned ``out`` saved to the innermost pack hook."""
    if out.__class__ is tuple or out.__class__ is list:
        o = next((x for x in out if isinstance(x, _TensorType) and x.grad_fn is not None), None)
    else:
        o = out if isinstance(out, _TensorType) else None
    node = None if o is None else o.grad_fn
    if node is None or node._packed or not isinstance(node, Node):
        return
    hooks = _saved_hooks.stack[-1]
    if node._nsaved:
        args = list(node.args)
        n = len(args)
        for i in node.entry.save:
            a = args[i] if i < n else None
            if isinstance(a, _TensorType):
                args[i] = _Packed(a, hooks, _edge(a))
            elif a.__class__ is list or a.__class__ is tuple:
                args[i] = a.__class__(_Packed(b, hooks, _edge(b)) if isinstance(b, _TensorType)
                                      else b for b in a)
        node.args = tuple.__new__(node.args.__class__, args)
        node._vers = None  # (each unpacked tensor is a fresh one, at version 0)
        node._packed = True
    if node._out_data is not None:
        outs = tuple(out) if out.__class__ is tuple or out.__class__ is list else (out,)
        packed = tuple(_Packed(x, hooks, None) for x in outs)
        node._out_data = packed[0] if node._n_out == 1 else packed
        node._out_vc, node._out_v = _UNTRACKED, 0  # the output's later writes: not checked
        node._packed = True


_UNTRACKED = (0,)  # the version "counter" of a packed output: never bumped


class saved_tensors_hooks:
    """Within it, every tensor a recorded op saves for backward goes to ``pack_hook(tensor)``
    when it is saved, and what that returned to ``unpack_hook(packed)`` when backward needs
    the tensor (``torch.autograd.graph.saved_tensors_hooks``; thread-local; the innermost
    open pair is used). ``unpack_hook`` must return a tensor of the saved one's value; as in
    PyTorch, the saved tensors are not checked against in-place changes."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _saved_hooks.disabled is not None:
            raise RuntimeError(_saved_hooks.disabled)
        _saved_hooks.stack = _saved_hooks.stack + ((self.pack_hook, self.unpack_hook),)
        _hooks_open[0] += 1

    def __exit__(self, *exc) -> None:
        _saved_hooks.stack = _saved_hooks.stack[:-1]
        _hooks_open[0] -= 1


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept in host memory and moved back to their device for backward
    (``torch.autograd.graph.save_on_cpu``): a trade of transfer time for device memory. A
    tensor already on the CPU is kept as it is (no copy). ``pin_memory`` is accepted; ember's
    host copies are plain memory."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(t):
            return t.device, t.cpu()

        def unpack_from_cpu(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Within it, opening a ``saved_tensors_hooks`` raises RuntimeError(``error_message``)."""
    prev = _saved_hooks.disabled
    _saved_hooks.disabled = error_message
    try:
        yield
    finally:
        _saved_hooks.disabled = prev


class allow_mutation_on_saved_tensors(saved_tensors_hooks):
    """Within it, a tensor saved for backward may be changed in place afterwards: backward
    reads the value it had when saved (``torch.autograd.graph.allow_mutation_on_saved_tensors``;
    ember keeps a copy of each saved tensor when it is saved, where PyTorch copies on the
    first change). A graph recorded within it must run backward before it closes."""

    def __init__(self) -> None:
        self.open = False

        def unpack(saved):
            if not self.open:
                raise AssertionError("Trying to backward outside of the "
                                     "'allow_mutation_on_saved_tensors' context in which the "
                                     "graph was originally recorded.")
            return saved

        super().__init__(lambda t: t.detach().clone(), unpack)

    def __enter__(self):
        super().__enter__()
        self.open = True
        return self

    def __exit__(self, *exc) -> None:
        self.open = False
        super().__exit__(*exc)


GradientEdge = namedtuple("GradientEdge", ["node", "output_nr", "ownership_token"],
                          defaults=(None,))
GradientEdge.__doc__ = ("Where a tensor's gradient is computed in the graph: its node (the "
                        "leaf's AccumulateGrad for a leaf) and which output of it the tensor is; "
                        "``autograd.grad`` takes one in place of the tensor.")


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The :class:`GradientEdge` of ``tensor`` (``torch.autograd.graph.get_gradient_edge``):
    ``autograd.grad(outputs, edge)`` gives the gradient there, also after the tensor is
    gone."""
    e = _edge(tensor) if tensor.requires_grad else None
    if e is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    return GradientEdge(e[0], e[1])


def input_edge(x):
    """The edge ``(node, output_nr)`` whose gradient ``grad(..., inputs=x)`` asks for: a
    tensor's, or a :class:`GradientEdge` as given (None for a tensor with no history)."""
    if isinstance(x, GradientEdge):
        return (x.node, x.output_nr)
    return _edge(x)


_running: list = [None]  # the running backward pass's dependency table (the engine sets it)


def _reached(deps: dict, tensors) -> int:
    """How many of ``tensors`` (those that require grad) the pass with dependency table
    ``deps`` reaches: the tensors whose gradients it computes."""
    n = 0
    for t in tensors:
        if t._requires_grad:
            e = _edge(t)
            if e is not None and e[0] in deps:
                n += 1
    return n


class _MultiGradHandle:
    __slots__ = ("handles",)

    def __init__(self, handles) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """``fn`` once per backward pass over the gradients of ``tensors``
    (``torch.autograd.graph.register_multi_grad_hook``). ``mode="all"``: after every one of
    them that the pass computes has its gradient, ``fn(grads)`` with a tuple holding None for
    those the pass does not reach; ``mode="any"``: ``fn(grad)`` with the first gradient
    computed. Returns a handle whose ``remove()`` unregisters it."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    rounds = {"pass": None, "grads": None, "seen": 0, "want": 0}

    def make(i):
        def hook(g):
            p = _running[0]
            if rounds["pass"] is not p:  # the first of these hooks in this pass
                rounds.update({"pass": p, "grads": [None] * len(tensors), "seen": 0,
                               "want": _reached(p, tensors) if mode == "all" else 1})
            rounds["seen"] += 1
            if mode == "any":
                if rounds["seen"] == 1:
                    fn(g)
                return None
            rounds["grads"][i] = g
            if rounds["seen"] == rounds["want"]:
                fn(tuple(rounds["grads"]))
            return None
        return hook

    handles = [t.register_hook(make(i)) for i, t in enumerate(tensors) if t.requires_grad]
    return _MultiGradHandle(handles)


def increment_version(tensor) -> None:
    """Count an in-place change that ember did not see (a write through ``data_ptr`` by a
    kernel of your own) on ``tensor`` or each tensor of a list, so that backward's checks of
    saved tensors see it (``torch.autograd.graph.increment_version``)."""
    for t in (tensor,) if isinstance(tensor, _TensorType) else tensor:
        _ext.bump_version(t)


def install(table: dict, record_inplace) -> None:
    """Make :func:`record` the registry's recorder, differentiating with ``table`` (the
    derivative table) and recording in-place ops with ``record_inplace``; the package root
    wires these, so this module imports neither."""
    global _TABLE, _record_inplace
    _TABLE, _record_inplace = table, record_inplace
    _ext.set_recorder(record)


# the registry runs a call none of whose tensors requires grad without calling record (which
# would only run it: see its scan); wrappers that must see every call (autocast, autobatch,
# a tracer) are recorders of their own and call record in turn
record.grad_only = True


_TABLE: dict = {}
_record_inplace = None
