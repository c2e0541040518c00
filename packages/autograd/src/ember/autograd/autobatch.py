"""Automatic batching of per-example code (DyNet's on-the-fly operation batching).

Inside ``with autobatch():`` every registry op is deferred: the call returns a *pending*
tensor, which knows its shape, dtype, device and ``requires_grad`` but not its values, and is
recorded in a pending graph. The graph runs when the context exits or when Python needs a value
(``.item()``, ``bool()``, ``.tolist()``, ``.numpy()``, printing, an op that must run at once).
Running it, the pending calls are grouped by *signature*: the op, its non-tensor arguments,
grad mode, the shapes, dtypes and devices of its tensor arguments, and which tensor arguments are
parameters (leaves that require grad, shared by every example, like a weight). The calls of one
group, all of whose inputs are ready, run as ONE call of the op on their inputs stacked along a
new leading dimension, through autograd's ordinary recording, so backward runs batched too. Each
example's result is then a row of the batched result: pending tensors stay pointers (group, row)
into the batched buffers, and the next groups gather their inputs with index arrays (one
``index_select`` per argument), never with a Python object per example.

Scheduling is by depth: a call's depth is one more than the deepest pending call it reads, and
the groups run depth by depth. For a tree network this runs all nodes of one height, across
every tree of the minibatch, together.

How an op is batched is its batching rule (``_batching.RULES``); an op without one still runs,
one example at a time, and gives the same results. A pending tensor handed to code outside the
registry reads as an array (``unwrap(t)``) that answers its shape, dtype and rank at once and
runs the pending graph for anything else.
"""
from __future__ import annotations

import gc
import threading

import numpy as np

from ember.tensor import Size, Tensor
from ember.tensor import device as _device
from ember.tensor.extension import OPS, get_recorder, set_recorder
from ember.tensor.extension import unwrap as _unwrap
from ember.tensor.extension import wrap as _wrap

from . import _batching, engine
from .grad_mode import state as _grad

__all__ = ["autobatch", "is_pending", "flush"]

_new = object.__new__
_CPU = _device("cpu")
_TensorType = Tensor
_META: dict = {}          # signature -> output structure (see _infer); shared by all contexts
_EAGER_KEYS: set = set()  # signatures that could not be deferred (run at once)
_local = threading.local()
_RULES = _batching.RULES
_EAGER_OPS = _batching.EAGER
_get_ident = threading.get_ident
_SELECT = OPS["select"]
_INDEX_SELECT = OPS["index_select"]
_SLICE = OPS["slice_view"]
_CAT = OPS["cat"]
_STACK = OPS["stack"]
_UNSQUEEZE = OPS["unsqueeze"]


# A deferred per-example call is a list [bound, depth, group, row, vals]: ``bound`` the call,
# ``depth`` one more than the deepest pending call it reads (0 once it has run), ``group`` its
# signature's group at that depth and ``row`` its row in the group's batched results, ``vals``
# its own results when its group ran one example at a time. Lists, not objects: a tree of
# thousands of calls is built in Python, and this is the cheapest record that holds them.
_B, _D, _G, _R, _V = range(5)

# Each distinct (shape, numpy dtype, device) of a pending tensor gets a small integer: the
# signature holds it (hashing an int, not a tuple with a dtype in it) and the tensor answers
# its metadata from it.
_TYPES: list = []
_TIDS: dict = {}


def _tid(shape, dtype, dev):
    t = (shape, dtype, dev)
    i = _TIDS.get(t)
    if i is None:
        i = _TIDS[t] = len(_TYPES)
        _TYPES.append(t)
    return i


class _Group:
    """The deferred calls of one signature at one depth."""

    __slots__ = ("key", "op", "gm", "nodes", "outs", "meta", "st")

    def __init__(self, key, op, gm, meta, st):
        self.key, self.op, self.gm, self.meta, self.st = key, op, gm, meta, st
        self.nodes = []
        self.outs = None


# ------------------------------------------------------------------------------ pending
class _Flags:
    c_contiguous = True
    contiguous = True
    writeable = True
    owndata = True
    aligned = True

    def __init__(self, nd):
        self.f_contiguous = self.fortran = nd <= 1

    def __getitem__(self, k):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "WRITEABLE": "writeable", "OWNDATA": "owndata"}.get(k, k))


class _Unready:
    """What ``unwrap`` returns for a pending tensor: its shape, dtype, rank, size, item size
    and (row-major) strides at once; anything else runs the pending graph and answers from the
    real array."""

    __slots__ = ("_t", "shape", "dtype", "ndim")

    def __init__(self, t, shape, dtype):
        self._t, self.shape, self.dtype, self.ndim = t, shape, dtype, len(shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):
        out, acc = [], self.dtype.itemsize
        for s in reversed(self.shape):
            out.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(out))

    @property
    def flags(self):
        return _Flags(self.ndim)

    def _real(self):
        t = self._t
        if t.__class__ is _Pending:
            t._materialize()
        return _unwrap(t)

    def __getattr__(self, name):
        return getattr(self._real(), name)

    def __array__(self, dtype=None, copy=None):
        a = self._real()
        if not isinstance(a, np.ndarray):
            a = a.get()
        return np.asarray(a, dtype=dtype)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return repr(self._real())


def _fwd(name):
    def method(self, *args):
        return getattr(self._real(), name)(*args)

    method.__name__ = name
    return method


for _name in ("__getitem__", "__setitem__", "__iter__", "__bool__", "__float__", "__int__",
              "__index__", "__complex__", "__str__", "__format__", "__neg__", "__pos__",
              "__abs__", "__invert__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
              "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__",
              "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
              "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lt__",
              "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__contains__",
              "__dlpack__", "__dlpack_device__"):
    setattr(_Unready, _name, _fwd(_name))
_Unready.__hash__ = object.__hash__


class _Pending(Tensor):
    """A tensor whose op has been deferred. Its metadata is known; its values, its
    ``grad_fn`` and its storage exist once the pending graph has run, when the object turns
    into an ordinary Tensor (a row of its group's batched result)."""

    __slots__ = ()

    # -- metadata, known without running anything
    @property
    def _data(self):
        shape, dtype, _ = _TYPES[self.__dict__["_pt"]]
        return _Unready(self, shape, dtype)

    @_data.setter
    def _data(self, value):
        self._materialize()  # now a plain Tensor: its array lives in its __dict__
        vars(self)["_data"] = value

    @property
    def shape(self):
        return Size(_TYPES[self.__dict__["_pt"]][0])

    @property
    def device(self):
        dev = _TYPES[self.__dict__["_pt"]][2]
        return _CPU if dev is None else _device("cuda", dev)

    @property
    def is_cuda(self):
        return _TYPES[self.__dict__["_pt"]][2] is not None

    @property
    def is_cpu(self):
        return _TYPES[self.__dict__["_pt"]][2] is None

    def size(self, dim=None):
        s = self.shape
        if dim is None:
            return s
        nd = len(s)
        if not -nd <= dim < max(nd, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {dim})")
        return s[dim] if nd else 1

    def dim(self):
        return len(_TYPES[self.__dict__["_pt"]][0])

    ndimension = dim

    @property
    def ndim(self):
        return len(_TYPES[self.__dict__["_pt"]][0])

    @property
    def is_leaf(self):
        return not self.__dict__["_requires_grad"]

    def __len__(self):
        s = _TYPES[self.__dict__["_pt"]][0]
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    # -- everything else needs the value
    def _materialize(self):
        """Run the pending graph (if this tensor's op has not run yet) and become the real
        tensor: a row of the batched result."""
        d = self.__dict__
        nd = d["_pn"]
        if nd[_D]:
            nd[_G].st.flush()
        v = _value_of(nd, d["_pk"])
        for k in ("_pn", "_pk", "_pt"):
            d.pop(k, None)
        d.update(v.__dict__)
        self.__class__ = Tensor
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        self._materialize()
        with _outside():
            Tensor.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _resolving_property(name):
    def get(self):
        self._materialize()
        return getattr(self, name)

    def put(self, value):
        self._materialize()
        setattr(self, name, value)

    return property(get, put)


for _name in ("grad_fn", "_base", "_vc", "_autograd_meta", "data"):
    setattr(_Pending, _name, _resolving_property(_name))


def _resolving_method(name):
    def method(self, *args, **kwargs):
        self._materialize()
        return getattr(self, name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name in ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__",
              "__complex__", "__repr__", "__str__", "__format__", "__array__", "__dlpack__",
              "__dlpack_device__", "data_ptr", "untyped_storage", "storage", "storage_offset",
              "register_hook", "retain_grad", "detach", "detach_", "_detached", "_bump",
              "_view_of", "__reduce_ex__", "__getstate__", "__deepcopy__", "__copy__",
              "is_set_to", "requires_grad_", "_is_view"):
    if hasattr(Tensor, _name):
        setattr(_Pending, _name, _resolving_method(_name))


def _value_of(nd, k):
    """The real per-example tensor of output ``k`` of the (run) node ``nd``."""
    grp = nd[_G]
    if grp.outs is None:
        return nd[_V][k]
    prev = _grad.enabled
    _grad.enabled = grp.gm
    try:
        return grp.st.inner(_SELECT, (grp.outs[k], 0, nd[_R]))
    finally:
        _grad.enabled = prev


def is_pending(t) -> bool:
    """True for a tensor whose op was deferred by :func:`autobatch` and has not been
    materialized yet."""
    return t.__class__ is _Pending


# ------------------------------------------------------------------------------ signatures
def _tkey(a):
    """Signature entry of a concrete tensor argument: parameters (leaves that require grad)
    by identity, as shared operands; other tensors by shape, dtype and device."""
    d = _unwrap(a)
    if d.__class__ is _Unready:  # an ordinary Tensor over a pending tensor's array
        d = d._real()
    dev = None if d.__class__ is np.ndarray else d.device.id
    if a._requires_grad and a.grad_fn is None:
        return ("w", id(a), _tid(d.shape, d.dtype, dev))
    return ("t", _tid(d.shape, d.dtype, dev))


class _Unhashable(Exception):
    pass


def _vkey(v):
    c = v.__class__
    if c is slice:
        return ("slice", v.start, v.stop, v.step)
    if c is dict:
        return ("dict",) + tuple(sorted((k, _vkey(x)) for k, x in v.items()))
    if c is list or c is tuple:
        return (c.__name__,) + tuple(_vkey(x) for x in v)
    try:
        hash(v)
    except TypeError:
        raise _Unhashable from None
    return (c, v)


# ------------------------------------------------------------------------------ the state
class _State:
    """One active ``autobatch()`` context (per thread)."""

    def __init__(self, inner):
        self.inner = inner
        self.levels: dict = {}  # depth -> {signature: _Group}
        self.count = 0          # pending calls not yet run
        self.flushing = False
        self.active = True
        self.tid = threading.get_ident()
        self.groups_run = 0
        self.calls_run = 0
        self.unbatched = {}  # op name -> groups of several calls run one call at a time

    # -- the recorder -----------------------------------------------------------------
    def record(self, op, bound):
        if self.flushing or _get_ident() != self.tid:
            return self.inner(op, bound)
        if op.inplace or op.name in _EAGER_OPS:
            return self.eager(op, bound)
        gm = _grad.enabled
        key = [op, gm]
        depth = 0
        rg = False
        try:
            for a in bound:
                c = a.__class__
                if c is _Pending:
                    pd = a.__dict__
                    key.append(pd["_pt"])
                    d = pd["_pn"][1]
                    if d > depth:
                        depth = d
                    if pd["_requires_grad"]:
                        rg = True
                elif c is _TensorType or isinstance(a, _TensorType):
                    key.append(_tkey(a))
                    if a._requires_grad:
                        rg = True
                elif c is list or c is tuple:
                    sub = [c]
                    for b in a:
                        bc = b.__class__
                        if bc is _Pending:
                            pd = b.__dict__
                            sub.append(pd["_pt"])
                            d = pd["_pn"][1]
                            if d > depth:
                                depth = d
                            if pd["_requires_grad"]:
                                rg = True
                        elif bc is _TensorType or isinstance(b, _TensorType):
                            sub.append(_tkey(b))
                            if b._requires_grad:
                                rg = True
                        else:
                            sub.append(_vkey(b))
                    key.append(tuple(sub))
                elif c is int or c is bool or a is None or c is float or c is str:
                    key.append(c)
                    key.append(a)
                elif c is slice:
                    key.append(("slice", a.start, a.stop, a.step))
                else:
                    key.append(_vkey(a))
            key = tuple(key)
            meta = _META.get(key)
        except _Unhashable:
            return self.eager(op, bound)
        if meta is None:
            if key in _EAGER_KEYS or (op.name == "getitem" and _bool_index(bound[1])):
                return self.eager(op, bound)
            meta = self.infer(op, bound, key)
            if meta is None:
                return self.eager(op, bound)
        depth += 1
        level = self.levels.get(depth)
        if level is None:
            level = self.levels[depth] = {}
        grp = level.get(key)
        if grp is None:
            grp = level[key] = _Group(key, op, gm, meta, self)
        nodes = grp.nodes
        nd = [bound, depth, grp, len(nodes), None]
        nodes.append(nd)
        self.count += 1
        kind, outs = meta
        rg = rg and gm and op.differentiable
        if kind is None:
            p = _new(_Pending)
            p.__dict__ = {"_pn": nd, "_pk": 0, "_pt": outs[0], "_requires_grad": rg and outs[1]}
            return p
        res = []
        for k, o in enumerate(outs):
            p = _new(_Pending)
            p.__dict__ = {"_pn": nd, "_pk": k, "_pt": o[0], "_requires_grad": rg and o[1]}
            res.append(p)
        return kind(*res) if hasattr(kind, "_fields") else kind(res)

    # -- an op that cannot wait -------------------------------------------------------
    def eager(self, op, bound):
        """Run the pending graph, then ``op`` at once on real tensors."""
        if self.count:
            self.flush()
        return self.inner(op, _realize(bound))

    # -- the output structure of a signature ------------------------------------------
    def infer(self, op, bound, key):
        """``(kind, outs)``: kind None for one tensor (``outs`` its (shape, dtype, device)),
        else the tuple/list/namedtuple type and one (shape, dtype, device) per output; found
        by running the op once on placeholder inputs of the right shapes (ones, zeros for
        integer tensors), cached per signature. None: the op cannot be deferred."""
        if op.name in _batching.RANDOM:
            x = bound[0]
            dt = _np_dtype(x)
            _META[key] = meta = (None, (_tid(tuple(x.shape), dt, _dev(x)), dt.kind == "f"))
            return meta
        dummy = tuple(_placeholder(a) for a in bound)
        prev_rec = get_recorder()
        set_recorder(self.inner)
        prev = _grad.enabled
        _grad.enabled = False
        try:
            with np.errstate(all="ignore"):
                out = op.run(*dummy)
        except Exception:
            _EAGER_KEYS.add(key)
            return None
        finally:
            _grad.enabled = prev
            set_recorder(prev_rec)
        if isinstance(out, _TensorType):
            meta = (None, _out_key(out))
        elif isinstance(out, (tuple, list)) and out and all(isinstance(o, _TensorType)
                                                             for o in out):
            meta = (type(out), tuple(_out_key(o) for o in out))
        else:
            _EAGER_KEYS.add(key)
            return None
        if len(_META) > 100_000:
            _META.clear()
        _META[key] = meta
        return meta

    # -- running the pending graph ----------------------------------------------------
    def flush(self):
        """Run every pending call, group by group, depth by depth."""
        if self.flushing or not self.levels:
            return
        self.flushing = True
        prev_rec = get_recorder()
        set_recorder(self.inner)
        prev = _grad.enabled
        try:
            while self.levels:
                levels, self.levels = self.levels, {}
                for depth in sorted(levels):
                    for grp in levels[depth].values():
                        self.run_group(grp)
            self.count = 0
        finally:
            _grad.enabled = prev
            set_recorder(prev_rec)
            self.flushing = False

    def run_group(self, grp):
        nodes = grp.nodes
        n = len(nodes)
        op = grp.op
        _grad.enabled = grp.gm
        self.groups_run += 1
        self.calls_run += n
        rule = _RULES.get(op.name)
        if rule is not None and n > 1:
            try:
                outs = self.run_batched(grp, rule)
            except Exception:
                outs = None
            if outs is not None:
                if outs[0] is _SAME:
                    for nd in nodes:
                        nd[_V] = outs[1]
                else:
                    grp.outs = outs
                for nd in nodes:
                    nd[_D] = 0
                    nd[_B] = None
                grp.nodes = None
                return
        if n > 1:
            self.unbatched[op.name] = self.unbatched.get(op.name, 0) + 1
        inner = self.inner
        for nd in nodes:
            try:
                out = inner(op, _realize(nd[_B]))
            except Exception as exc:
                _note(exc, op, nd[_B])
                raise
            nd[_V] = (out,) if isinstance(out, _TensorType) else tuple(out)
            nd[_D] = 0
            nd[_B] = None
        grp.nodes = None

    def run_batched(self, grp, rule):
        nodes = grp.nodes
        n = len(nodes)
        first = nodes[0][_B]
        args, stacked, shapes = [], [], []
        for j, a in enumerate(first):
            c = a.__class__
            if c is _Pending or isinstance(a, _TensorType):
                t, s = _gather([nd[_B][j] for nd in nodes], n)
                args.append(t)
                stacked.append(s)
                shapes.append(tuple(a.shape))
            elif (c is list or c is tuple) and any(isinstance(b, _TensorType) for b in a):
                ts, ss, shs = [], [], []
                for i, b in enumerate(a):
                    if isinstance(b, _TensorType):
                        t, s = _gather([nd[_B][j][i] for nd in nodes], n)
                        ts.append(t)
                        ss.append(s)
                        shs.append(tuple(b.shape))
                    else:
                        ts.append(b)
                        ss.append(False)
                        shs.append(None)
                args.append(c(ts) if c is list else tuple(ts))
                stacked.append(ss)
                shapes.append(shs)
            else:
                args.append(a)
                stacked.append(False)
                shapes.append(None)
        if not any(s is True or (s.__class__ is list and any(s)) for s in stacked):
            if grp.op.name in _batching.RANDOM:
                return None
            # every example made the same call (``w.t()`` in per-example code): run it once
            out = self.inner(grp.op, tuple(args))
            return _SAME, ((out,) if isinstance(out, _TensorType) else tuple(out))
        kind, outs_meta = grp.meta
        out_types = [_TYPES[outs_meta[0]]] if kind is None else [_TYPES[m[0]] for m in outs_meta]
        out_shapes = [t[0] for t in out_types]
        b = _batching.Batch(grp.op, n, args, stacked, shapes, out_shapes, self.inner)
        out = rule(b)
        if out is None:
            return None
        outs = (out,) if isinstance(out, _TensorType) else tuple(out)
        if len(outs) != len(out_shapes):
            return None
        for o, (s, dt, _) in zip(outs, out_types):
            d = _unwrap(o)
            if d.shape != (n,) + s or d.dtype != dt:
                return None
        return outs


# ------------------------------------------------------------------------------ gathering
_IDX_CACHE: dict = {}


def _index(rows, like):
    """An int64 index tensor of ``rows`` on the device of ``like``."""
    arr = np.fromiter(rows, dtype=np.int64, count=len(rows))
    d = _unwrap(like)
    if d.__class__ is not np.ndarray:
        import cupy

        with d.device:
            arr = cupy.asarray(arr)
    return _wrap(arr)


def _gather(vals, n):
    """``(tensor, stacked)`` for one argument of a group: the one tensor every example passed
    (``stacked`` False), or the examples' tensors along a new dim 0. Pending values are rows of
    batched results and are gathered by index (``index_select``) or slice, one op per source."""
    v0 = vals[0]
    for v in vals:
        if v is not v0:
            break
    else:
        if v0.__class__ is _Pending:
            return _value_of(v0.__dict__["_pn"], v0.__dict__["_pk"]), False
        return v0, False
    # the common case: all rows of one batched result
    if v0.__class__ is _Pending:
        g = v0.__dict__["_pn"][_G]
        k = v0.__dict__["_pk"]
        if g.outs is not None:
            rows = []
            for v in vals:
                if v.__class__ is not _Pending:
                    break
                d = v.__dict__
                nd = d["_pn"]
                if nd[_G] is not g or d["_pk"] != k:
                    break
                rows.append(nd[_R])
            else:
                return _take(g.outs[k], rows), True
    # general: several sources (batched results and single tensors)
    sources = {}   # id(batched result) -> [tensor, [(position, row)]]
    singles = []   # (position, tensor)
    for i, v in enumerate(vals):
        if v.__class__ is _Pending:
            d = v.__dict__
            nd = d["_pn"]
            g = nd[_G]
            if g.outs is not None:
                B = g.outs[d["_pk"]]
                ent = sources.get(id(B))
                if ent is None:
                    ent = sources[id(B)] = [B, [], []]
                ent[1].append(i)
                ent[2].append(nd[_R])
                continue
            v = nd[_V][d["_pk"]]
        singles.append((i, v))
    if not sources:
        t0 = singles[0][1]
        for _, t in singles:
            if t is not t0:
                break
        else:
            return t0, False  # one tensor after all (a call every example made alike)
    pieces, order = [], []
    for B, pos, rows in sources.values():
        pieces.append(_take(B, rows))
        order.extend(pos)
    if singles:
        pieces.append(_call(_STACK, ([t for _, t in singles], 0)))
        order.extend(i for i, _ in singles)
    whole = pieces[0] if len(pieces) == 1 else _call(_CAT, (pieces, 0))
    if order == _arange(n):
        return whole, True
    inv = [0] * n
    for pos, i in enumerate(order):
        inv[i] = pos
    return _call(_INDEX_SELECT, (whole, 0, _index(inv, whole))), True


_RANGES: dict = {}
_SAME = object()


def _arange(n):
    r = _RANGES.get(n)
    if r is None:
        r = _RANGES[n] = list(range(n))
    return r


def _call(op, bound):
    return get_recorder()(op, bound)


def _take(B, rows):
    """Rows ``rows`` of ``B`` (B itself, a slice, or an index_select)."""
    m = _unwrap(B).shape[0]
    n = len(rows)
    r0 = rows[0]
    if rows[-1] - r0 == n - 1 and rows == list(range(r0, r0 + n)):
        if n == m:
            return B
        return _call(_SLICE, (B, 0, r0, r0 + n, 1))
    return _call(_INDEX_SELECT, (B, 0, _index(rows, B)))


def _realize(bound):
    """``bound`` with every pending tensor (also inside list arguments) replaced by its real
    value (running the pending graph first if needed)."""
    out = None
    for j, a in enumerate(bound):
        c = a.__class__
        if c is _Pending:
            a = a._materialize()
        elif (c is list or c is tuple) and any(b.__class__ is _Pending for b in a):
            a = c(b._materialize() if b.__class__ is _Pending else b for b in a)
        else:
            continue
        if out is None:
            out = list(bound)
        out[j] = a
    return bound if out is None else tuple(out)


# ------------------------------------------------------------------------------ helpers
def _np_dtype(t):
    if t.__class__ is _Pending:
        return _TYPES[t.__dict__["_pt"]][1]
    return _unwrap(t).dtype


def _dev(t):
    if t.__class__ is _Pending:
        return _TYPES[t.__dict__["_pt"]][2]
    d = _unwrap(t)
    return None if d.__class__ is np.ndarray else d.device.id


def _out_key(o):
    d = _unwrap(o)
    return (_tid(d.shape, d.dtype, None if d.__class__ is np.ndarray else d.device.id),
            d.dtype.kind == "f")


def _placeholder(a):
    c = a.__class__
    if c is _Pending:
        shape, dtype, dev = _TYPES[a.__dict__["_pt"]]
        return _wrap(_fill(shape, dtype, dev))
    if (c is list or c is tuple) and any(b.__class__ is _Pending for b in a):
        return c(_placeholder(b) for b in a)
    return a


def _fill(shape, dtype, dev):
    value = 1 if dtype.kind in "fc" else 0
    if dev is None:
        return np.full(shape, value, dtype=dtype)
    import cupy

    with cupy.cuda.Device(dev):
        return cupy.full(shape, value, dtype=dtype)


def _bool_index(idx):
    items = idx if isinstance(idx, (tuple, list)) else (idx,)
    for it in items:
        if isinstance(it, _TensorType) and _np_dtype(it) == np.bool_:
            return True
        if isinstance(it, (tuple, list)) and _bool_index(it):
            return True
    return False


def _shape_str(a):
    if isinstance(a, _TensorType):
        return f"{list(a.shape)} {a.dtype}"
    if isinstance(a, (list, tuple)) and any(isinstance(b, _TensorType) for b in a):
        return "[" + ", ".join(_shape_str(b) for b in a) + "]"
    return repr(a)


def _note(exc, op, bound):
    try:
        args = ", ".join(f"{name}={_shape_str(a)}" for name, a in zip(op.names, bound))
        exc.add_note(f"(in {op.name}({args}), deferred by ember.autograd.autobatch() and "
                     "run when the pending graph was needed)")
    except Exception:  # pragma: no cover - notes are best effort
        pass


class _outside:
    """Run with the deferring recorder swapped out (the backward engine, for one)."""

    def __enter__(self):
        st = getattr(_local, "state", None)
        self.st = st
        if st is not None and st.active:
            if st.count:
                st.flush()
            self.prev = get_recorder()
            set_recorder(st.inner)
            st.flushing = True
        return self

    def __exit__(self, *exc):
        st = self.st
        if st is not None and st.active:
            st.flushing = False
            set_recorder(self.prev)
        return False


_engine = engine.run_backward


def _run_backward(*args, **kwargs):
    with _outside():
        return _engine(*args, **kwargs)


# ------------------------------------------------------------------------------ the context
class autobatch:
    """Defer ops and run them batched across examples (see the module docstring).

    >>> import ember.tensor as et
    >>> from ember.autograd import autobatch
    >>> w = et.ones(3, 2, requires_grad=True)
    >>> with autobatch():
    ...     ys = [(et.tensor([[float(i)] * 3]) @ w).sum() for i in range(4)]
    ...     total = et.stack(ys).sum()
    >>> total.item()
    36.0
    >>> total.backward(); w.grad.tolist()
    [[6.0, 6.0], [6.0, 6.0], [6.0, 6.0]]

    Re-entrant (an inner ``autobatch()`` joins the outer one) and thread-local: only the thread
    that entered it defers ops. ``stats`` after the exit: ``groups`` run, ``calls`` deferred,
    and ``unbatched``: per op, the groups of several calls that ran one call at a time (the
    op has no batching rule, or its rule does not cover those arguments).
    """

    def __init__(self):
        self.state = None
        self.stats = None

    def __enter__(self):
        outer = getattr(_local, "state", None)
        if outer is not None and outer.active:
            return self
        inner = get_recorder()
        st = self.state = _State(inner)
        _local.state = st
        self._prev_engine = engine.run_backward
        engine.run_backward = _run_backward
        # the pending graph is thousands of small acyclic objects: a cyclic collection every
        # 700 allocations would walk them over and over (it doubles the cost of a tree)
        self._gc = gc.isenabled()
        gc.disable()
        set_recorder(st.record)
        return self

    def __exit__(self, exc_type, exc, tb):
        st = self.state
        if st is None:
            return False
        try:
            if exc_type is None:
                st.flush()
        finally:
            set_recorder(st.inner)
            engine.run_backward = self._prev_engine
            if self._gc:
                gc.enable()
            st.active = False
            _local.state = None
            self.stats = {"groups": st.groups_run, "calls": st.calls_run,
                          "unbatched": dict(st.unbatched)}
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autobatch():
                return fn(*args, **kwargs)
        return wrapper


def flush() -> None:
    """Run the pending graph of the active :func:`autobatch` context now (no-op outside)."""
    st = getattr(_local, "state", None)
    if st is not None and st.active:
        st.flush()
