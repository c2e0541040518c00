"""Automatic batching of per-example code (DyNet's on-the-fly operation batching).

Inside ``with autobatch():`` every registry op is deferred: the call returns a *pending*
tensor, which knows its shape, dtype, device and ``requires_grad`` but not its values, and adds
a row to its *group*: the calls of one signature (the op, its non-tensor arguments, grad mode,
the types of its tensor arguments, which of them are parameters, shared by every example, and
the depth: one more than the deepest pending call it reads). The graph runs when the context
exits or when Python needs a value (``.item()``, ``bool()``, ``.tolist()``, ``.numpy()``,
printing, an op that must run at once).

The pending graph holds no Python object per call: a value is an integer *code* (row ``r`` of
output buffer ``b``: ``b << 32 | r``; a concrete per-example tensor: a negative number), and a
group keeps its first call and the codes of its calls' tensor arguments in one list of ints.
Running the graph, the groups run depth by depth (groups of one signature at different depths
merged where the dependencies allow), each as ONE call of the op, through autograd's ordinary
recording, so backward runs batched too; its inputs are located by NumPy over the code columns
(a whole buffer, or one gather node taking each source buffer's rows). Values of rank 2 or
more live *flat* in the batched buffers (the examples' rows one after another), so row-wise ops
need no reshaping. A pending tensor becomes a real tensor (its rows of the buffer) only when
user code touches it.

How an op is batched is its batching rule (``_batching.RULES``, ``FLAT_RULES``); an op without
one still runs, one example at a time, and gives the same results. A pending tensor handed to
code outside the registry reads as an array (``unwrap(t)``) that answers its shape, dtype and
rank at once and runs the pending graph for anything else. See docs/autobatch.md.
"""
from __future__ import annotations

import gc
import operator
import threading
from bisect import bisect_left

import numpy as np

from ember.tensor import Tensor
from ember.tensor import device as _device
from ember.tensor.extension import (
    OPS,
    array_module,
    get_recorder,
    quiet,
    set_op_recorder,
    set_recorder,
)
from ember.tensor.extension import unwrap as _unwrap
from ember.tensor.extension import wrap as _wrap

from . import _batching, engine, graph
from .grad_mode import grad_enabled as _grad_on
from .grad_mode import set_grad_flag as _set_grad

__all__ = ["autobatch", "is_pending", "flush"]

_new = object.__new__
_CPU = _device("cpu")
_TensorType = Tensor
_META: dict = {}          # signature -> (kind, [(type, is_float), ...]); shared by all contexts
_EAGER_KEYS: set = set()  # signatures that could not be deferred (run at once)
_VIEWLIKE: set = set()    # signatures whose result shares memory with an argument
_TWINS: dict = {}         # in-place op -> its out-of-place twin, None (see _twin)
_local = threading.local()
_ALWAYS = [1]  # the rows left of a node kept through every backward (see _State.share)


class _Waits(list):
    """The counts of rows left that a batch's nodes wait for (an example's own node waits on
    a plain list)."""

    __slots__ = ()
_RULES = _batching.RULES
_FLAT_RULES = _batching.FLAT_RULES
_EAGER_OPS = _batching.EAGER
_ROWS_OPS = _batching.ROWS
_OPKIND: dict = {}  # op -> 0 deferred as is, 1 run at once, 2 a rows op (see record_rows)
_RANDOM = _batching.RANDOM
_get_ident = threading.get_ident
_SELECT = OPS["select"]
_INDEX_SELECT = OPS["index_select"]
_INDEX_ADD = OPS["index_add"]
_SLICE = OPS["slice_view"]
_CLONE = OPS["clone"]
_PERMUTE = OPS["permute"]
_ASCONTIGUOUS = OPS["_ascontiguous"]
_SPLIT = OPS["split_with_sizes"]
_CAT = OPS["cat"]
_STACK = OPS["stack"]
_ndarray = np.ndarray
# the reductions of the code arrays, called as ufunc methods: the ndarray methods and np.* wrappers
# add a Python call of about 0.5 us each, and the flush makes thousands of them
_all, _min, _max = np.logical_and.reduce, np.minimum.reduce, np.maximum.reduce
_DATA = "_data"  # a new pending tensor's array stand-in is set by name (not ember-tensor's code)

# Where a per-example value lives, as one integer (its *code*): a pending value is row ``r`` of
# output buffer ``b`` (output ``k`` of the group whose buffers start at ``b - k``), coded
# ``b << 32 | r`` (made as a sum: cheaper than an or of multi-digit ints); a concrete tensor (a
# per-example constant: word ids, a label) is coded ``-id(tensor)``. A group keeps the codes of
# its calls' tensor arguments in one flat list of ints, so gathering an argument for the whole
# group is NumPy over an int array (one source buffer? which rows? in order?), never a Python
# object per example.
_ROW_BITS = 32
_MASK = (1 << _ROW_BITS) - 1
_BID_WRAP = 1 << 30
_next_bid = [1]


# ------------------------------------------------------------------------------ pending
class _Flags:
    writeable = True
    owndata = True
    aligned = True

    def __init__(self, shape, strides, itemsize):
        # ``strides`` None: row-major. Else NumPy's rules: size-1 dims are ignored
        self.c_contiguous = self.contiguous = strides is None or _dense(shape, strides,
                                                                        itemsize, False)
        self.f_contiguous = self.fortran = (len(shape) <= 1 and self.c_contiguous) or (
            strides is not None and _dense(shape, strides, itemsize, True))

    def __getitem__(self, k):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "WRITEABLE": "writeable", "OWNDATA": "owndata"}.get(k, k))


class _Unready:
    """The array of a pending tensor (what ``unwrap`` returns for it): answers its shape,
    dtype, rank, size, item size and (row-major) strides at once; anything else runs the pending
    graph and answers from the real array.

    It carries the pending tensor's record (``_g`` the group of its call, ``_c`` its code:
    which output of the group, which row), copied from the tensor when it is made (see
    ``_StandIn``). Each distinct (shape, dtype, device) is a subclass holding them as class
    attributes (see :func:`_type`); that class is the value's *type* in signatures (hashed by
    identity), kept by the pending tensor as ``_t``."""

    __slots__ = ("_g", "_c")
    shape: tuple = ()
    dtype = None
    ndim = 0
    dev = None  # None: CPU; else the CUDA device number
    layout = None  # None: row-major; else the strides the unbatched run's array has

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
        if self.layout is not None:
            return self.layout
        out, acc = [], self.dtype.itemsize
        for s in reversed(self.shape):
            out.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(out))

    @property
    def flags(self):
        return _Flags(self.shape, self.layout, self.dtype.itemsize)

    @property
    def device(self):  # as NumPy's and CuPy's arrays answer it
        if self.dev is None:
            return "cpu"
        import cupy

        return cupy.cuda.Device(self.dev)

    def __array_namespace__(self, api_version=None):
        if self.dev is None:
            return np
        import cupy

        return cupy

    def _real(self):
        return _unwrap(_value(self))

    def __getattr__(self, name):
        if name in _Unready.__slots__:  # pragma: no cover - an unset slot: a bug
            raise AttributeError(name)
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

_TYPES: dict = {}  # (shape, numpy dtype, device, layout) -> its _Unready subclass


def _type(shape, dtype, dev, layout=None):
    """The ``_Unready`` subclass of one (shape, dtype, device, layout): ``layout`` None for a
    row-major array, else its strides (a transpose's, an expand's), so that a pending value
    answers ``is_contiguous()`` and ``stride()`` as the unbatched run's tensor does, and
    ``reshape`` / ``contiguous`` copy where that run copies."""
    k = (shape, dtype, dev, layout)
    t = _TYPES.get(k)
    if t is None:
        t = _TYPES[k] = type("_Unready", (_Unready,), {
            "__slots__": (), "shape": shape, "dtype": dtype, "ndim": len(shape), "dev": dev,
            "layout": layout, "r": _flat_rows(shape)})
    return t


def _dense(shape, strides, itemsize, fortran):
    """Are ``strides`` the row-major (``fortran``: column-major) ones of ``shape``, size-1 dims
    aside (NumPy's contiguity)?"""
    acc = itemsize
    dims = zip(shape, strides) if fortran else zip(reversed(shape), reversed(strides))
    for n, st in dims:
        if n == 0:
            return True
        if n != 1:
            if st != acc:
                return False
            acc *= n
    return True


def _keeps_layout(t, strides):
    """Do an example's values in a batched result (their ``strides``) have the layout its
    pending values promised (``t``: the unbatched run's, which contiguous(), view() and the
    strides seen inside the context went by)? Size-1 dims aside, as NumPy's."""
    if t.layout is None:
        return _dense(t.shape, strides, t.dtype.itemsize, False)
    return all(n <= 1 or a == b for n, a, b in zip(t.shape, strides, t.layout))


def _rows_layout(t, drop, step, out):
    """The layout (``_type``'s) of rows of a value of type ``t``: one row (``drop``), or
    every ``step``-th, as the unbatched run's view of them has it."""
    st = t.layout
    if st is None:
        if drop or step == 1:
            return None  # rows of a row-major array
        st, acc = [], t.dtype.itemsize
        for n in reversed(t.shape):
            st.append(acc)
            acc *= n
        st.reverse()
    st = tuple(st[1:]) if drop else (st[0] * step,) + tuple(st[1:])
    return None if _dense(out, st, t.dtype.itemsize, False) else st


def _saves_output(op) -> bool:
    """Does the derivative of ``op`` keep its result (sigmoid's, exp's)?"""
    ent = graph.derivative_entry(op.name)
    return ent is not None and bool(ent.save_out)


def _relayout(inner, v, t):
    """``v`` (an example's value) copied into the layout ``t`` promised: row-major, or a dense
    permutation of it (a column-major matrix); ``v`` itself for any other layout."""
    if t.layout is None:
        return inner(_ASCONTIGUOUS, (v,))
    order = sorted(range(len(t.shape)), key=lambda i: -t.layout[i])
    if not _dense([t.shape[i] for i in order], [t.layout[i] for i in order],
                  t.dtype.itemsize, False):
        return v
    back = tuple(sorted(range(len(order)), key=order.__getitem__))
    dense = inner(_ASCONTIGUOUS, (inner(_PERMUTE, (v, tuple(order))),))
    return inner(_PERMUTE, (dense, back))


def _flat_rows(shape):
    """Rows per example in a batched buffer: values of rank 2 or more are kept *flat*, the
    examples' rows one after another, ``(n * shape[0],) + shape[1:]`` (so row-wise ops run on
    them as one matrix, with no reshaping); 0 for the others, kept as ``(n,) + shape``."""
    return shape[0] if len(shape) >= 2 and shape[0] > 0 else 0


def _phys(n, shape):
    """The shape of the batched buffer of ``n`` values of ``shape``."""
    r = _flat_rows(shape)
    return (n * r,) + tuple(shape[1:]) if r else (n,) + tuple(shape)


def _type_of(d):
    """The type of a concrete array."""
    return _type(d.shape, d.dtype, None if d.__class__ is _ndarray else d.device.id,
                 None if d.flags.c_contiguous else d.strides)


def _value(u):
    """The real per-example tensor of the pending value ``u`` (running the pending graph if its
    call has not run)."""
    g = u._g
    if g.depth:
        g.st.flush()
    return _made(g, u._c)


def _collecting(inner, made):
    """``inner`` (the recorder the pending calls run through), noting in ``made`` the node of
    each result it records."""
    def collect(op, bound):
        out = inner(op, bound)
        if out.__class__ is _TensorType or isinstance(out, _TensorType):
            fn = out.grad_fn
            if fn is not None:
                made.append(fn)
        elif out.__class__ is tuple or out.__class__ is list or isinstance(out, tuple):
            for o in out:
                if isinstance(o, _TensorType) and o.grad_fn is not None:
                    made.append(o.grad_fn)
        return out

    collect.grad_only = getattr(inner, "grad_only", False)
    return collect


def _wait(y, hold):
    """Make ``y``, an example's own node made while the graph ran, and those of its example
    it reads, wait for the rows ``hold`` of a batch it feeds (see ``_State.share``)."""
    stack = [y]
    while stack:
        y = stack.pop()
        waits = getattr(y, "_hold", None)
        if waits.__class__ is not list or any(h is hold for h in waits):
            continue  # (made before the graph ran, a batch's node, or met before)
        waits.append(hold)
        for e in y._edges:
            for z in (e if e.__class__ is list else (e,)):
                if z.__class__ is tuple:
                    z = z[0]
                if z is not None:
                    stack.append(z)


def _made(g, c):
    """The value coded ``c`` of the (run) group ``g``: a row of its batched result, its own
    result when the group ran one call at a time, or the one result of a call every example
    made alike. Made once per value (the group keeps it)."""
    made = g.made
    if made is None:
        made = g.made = {}
    else:
        v = made.get(c)
        if v is not None:
            return v
    k, r = ((c >> _ROW_BITS) - g.bid) % _BID_WRAP, c & _MASK
    if g.alias is not None:  # its calls ran in a later group of the same signature
        g, off = g.alias
        r += off
    if g.outs is not None:
        if g.phys is not None:
            r = int(g.phys[r])
        f = g.outm[k][0].r
        prev = _grad_on()
        _set_grad(g.gm)
        try:
            if f:  # flat: the example's rows
                v = g.st.inner(_SLICE, (g.outs[k], 0, r * f, (r + 1) * f, 1))
            else:
                v = g.st.inner(_SELECT, (g.outs[k], 0, r))
            if v.grad_fn is not None and g.hold is not None:
                # an example's row: a backward through it lets go of that row of the batch
                # (once the batches it feeds, if any, let go of it: see _State.share)
                fn = v.grad_fn
                fn._hold = []
                fn._feeds = [(g.hold, g.done[k], slice(r * f, (r + 1) * f) if f
                              else slice(r, r + 1))]
            if g.relayout is not None and g.relayout[k]:
                v = _relayout(g.st.inner, v, g.outm[k][0])
        finally:
            _set_grad(prev)
    elif g.same is not None:
        v = g.same[k]
    elif g.vals is not None:
        v = g.vals[r][k]
    else:
        raise RuntimeError("autobatch: this pending tensor's op never ran (running the "
                           "pending graph raised an error before it)")
    made[c] = v
    return v


def _rows(g, codes, off=0):
    """The rows of ``g``'s batched results that hold the values coded ``codes`` (calls from
    ``off`` on)."""
    return _phys_rows(g, codes & _MASK, off)


def _phys_rows(g, calls, off=0):
    """The rows of ``g``'s batched results that hold the results of its calls ``calls``
    (numbered from ``off``)."""
    if off:
        calls = calls + off
    return calls if g.phys is None else g.phys[calls]


def _sources(C, lo, hi, table):
    """The groups (in ``table``) whose results the code columns ``C`` read (``lo``, ``hi``:
    each column's least and greatest code). A column whose least and greatest codes are of
    one buffer reads only that one (a buffer's codes are one range of integers); a concrete
    tensor's code is negative, no buffer's number."""
    bufs = set()
    for j, (a, b) in enumerate(zip(lo, hi)):
        a >>= _ROW_BITS
        if a == b >> _ROW_BITS:
            bufs.add(a)
        else:
            bufs.update((C[j] >> _ROW_BITS).tolist())
    return [table[b] for b in bufs if b in table]


def _columns(g):
    """``g.C``, ``g.lo``, ``g.hi``: the group's codes as an ``(m, n)`` int64 array (row ``j``
    the code column of argument ``j``: contiguous, so the per-column reductions and
    comparisons run at NumPy's speed; an ``(n, m)`` array reduced along its first dim is
    several times slower), and each column's least and greatest code, as lists of ints."""
    n, m, codes = g.n, g.m, g.codes
    C = np.fromiter(codes, dtype=np.int64, count=len(codes))  # (a fifth faster than array())
    C = g.C = C.reshape(1, n) if m == 1 else C.reshape(n, m).T.copy()
    g.lo, g.hi = _min(C, 1).tolist(), _max(C, 1).tolist()
    return C


class _StandIn:
    """``_Pending._data``: made on first use (most pending tensors are only passed to other
    ops, which read ``_g``, ``_c`` and ``_t``): the ``_Unready`` of the tensor, kept in the
    instance, where later reads find it first (this descriptor defines no ``__set__``)."""

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        g = obj._g
        if not g.depth and not g.st.active:
            # the context has ended and the value exists: an op run on it now (outside the
            # context: no recorder reads its record) gets the real array
            return _unwrap(obj._materialize())
        u = _new(obj._t)
        u._g = obj._g
        u._c = obj._c
        setattr(obj, _DATA, u)
        return u


class _Pending(Tensor):
    """A tensor whose op has been deferred. Its metadata is known; its values, its
    ``grad_fn`` and its storage exist once the pending graph has run, when the object turns
    into an ordinary Tensor (a row of its group's batched result). It holds its record: ``_g``
    the group of its call, ``_c`` its code, ``_t`` its type (the ``_Unready`` subclass of its
    shape, dtype and device); its ``_data`` is an ``_Unready`` of that type, so the Tensor's own
    metadata accessors (shape, dtype, dim, size, ...) answer without running anything."""

    __slots__ = ()
    _rd = False  # read by a call recorded since it was made (see _State.inplace)

    @property
    def device(self):
        dev = self._t.dev
        return _CPU if dev is None else _device("cuda", dev)

    @property
    def is_cuda(self):
        return self._t.dev is not None

    @property
    def is_cpu(self):
        return self._t.dev is None

    @property
    def is_leaf(self):
        return not self._requires_grad

    # -- everything else needs the value
    def _materialize(self):
        """Run the pending graph (if this tensor's op has not run yet) and become the real
        tensor: a row of the batched result."""
        g = self._g
        if g.depth:
            g.st.flush()
            if self.__class__ is not _Pending:  # a call run one at a time in the flush read it
                return self
        prev = _grad_on()
        _set_grad(g.gm)
        try:
            c = self._c
            if g.views is None:
                v = _made(g, c)
                r = g if g.alias is None else g.alias[0]
                if r.outs is not None or r.same is not None:
                    # a row of a batched result, or the one result of calls alike: the
                    # tensor's own copy, its own memory and version counter, as unbatched (an
                    # in-place write to it reaches no other example's value, and no saved
                    # value of another example reads as modified)
                    v = g.st.inner(_CLONE, (v, None))
            else:
                # a view: its batched rows are a copy where the examples' rows were gathered;
                # its own call on its argument's real tensor makes the view, sharing its
                # memory as the unbatched run's view does
                op, bound = g.views[c & _MASK]
                v = g.st.inner(op, _realize(bound))
                if g.kind is not None:
                    v = v[((c >> _ROW_BITS) - g.bid) % _BID_WRAP]
        finally:
            _set_grad(prev)
        d = self.__dict__
        for k in ("_g", "_c", "_t", "_data", "_rd", "_tw"):
            d.pop(k, None)
        d.update(v.__dict__)
        self.__class__ = Tensor
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        self._materialize()
        with _outside():
            Tensor.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


# (Python's own messages name an argument's class: "must be int, not Tensor", as eagerly)
_Pending.__name__ = _Pending.__qualname__ = "Tensor"


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
setattr(_Pending, _DATA, _StandIn())


def _resolving_method(name):
    def method(self, *args, **kwargs):
        self._materialize()
        return getattr(self, name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name in ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__",
              "__complex__", "__repr__", "__str__", "__format__", "__array__", "__dlpack__",
              "__dlpack_device__", "data_ptr", "untyped_storage", "storage", "storage_offset",
              "register_hook", "retain_grad", "detach_", "_detached", "_bump",
              "_view_of", "__reduce_ex__", "__getstate__", "__deepcopy__", "__copy__",
              "is_set_to", "requires_grad_", "_is_view"):
    if hasattr(Tensor, _name):
        setattr(_Pending, _name, _resolving_method(_name))


def is_pending(t) -> bool:
    """True for a tensor whose op was deferred by :func:`autobatch` and has not been
    materialized yet."""
    return t.__class__ is _Pending


# ------------------------------------------------------------------------------ signatures
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


class _Group:
    """The deferred calls of one signature at one depth: the first call (``first``), the
    number of calls (``n``) and the codes of their tensor arguments (``codes``: ``m`` per call,
    in the order of ``plan``; the calls themselves are not kept); once run, the batched results
    (``outs``), the one result of a call every example made alike (``same``), or per call
    results (``vals``). ``views``: for a view op's group (its result shares memory with an
    argument: a slice, a reshape, a detach), each call's ``(op, bound)``, from which the
    tensor a user holds is made (see ``_Pending._materialize``); None for other ops."""

    __slots__ = ("op", "gm", "st", "depth", "first", "n", "codes", "m", "plan", "shapes",
                 "kind", "outm", "one", "diff", "bid", "base", "outs", "same", "vals", "made",
                 "rows", "phys", "mkey", "views", "alias", "merged", "latest", "fdepth",
                 "C", "lo", "hi", "relayout", "hold", "done")


def _plan(bound):
    """Where a group's codes come from: per argument, the code column of a coded tensor (an
    int), None for anything shared by the group (a parameter, a non-tensor), or for a list
    argument a list of those; and the per-example shapes of the tensor arguments. Mirrors
    ``_State.record``: every tensor but a parameter is coded."""
    plan, shapes, m = [], [], 0
    for a in bound:
        c = a.__class__
        if c is _Pending or isinstance(a, _TensorType):
            shapes.append(tuple(a.shape))
            if c is _Pending or not _is_param(a):
                plan.append(m)
                m += 1
            else:
                plan.append(None)
        elif (c is list or c is tuple) and any(isinstance(b, _TensorType) for b in a):
            sub, shs = [], []
            for b in a:
                if isinstance(b, _TensorType):
                    shs.append(tuple(b.shape))
                    if b.__class__ is _Pending or not _is_param(b):
                        sub.append(m)
                        m += 1
                        continue
                else:
                    shs.append(None)
                sub.append(None)
            plan.append(sub)
            shapes.append(shs)
        else:
            plan.append(None)
            shapes.append(None)
    return plan, shapes, m


def _is_param(a):
    """A concrete tensor shared by identity (a leaf that requires grad, like a weight)."""
    return a._requires_grad and a.grad_fn is None


# ------------------------------------------------------------------------------ fast paths
# The generic recorder walks the arguments of every call, testing each one's kind. Most calls of
# an op repeat a few argument *patterns* (``mul(pending, pending)``, ``linear(pending,
# parameter, parameter)``), so each pattern seen is compiled once into straight-line code: class
# guards, then the same signature key, codes and results as the generic path, built without a
# loop (see _spec_source). A call no pattern of its op covers, or whose group does not exist
# yet, goes the generic way.
_PATTERNS: dict = {}      # op -> the argument patterns compiled for it (shared by all contexts)
_FACTORIES: dict = {}     # patterns -> the compiled factory of their specialized recorder
_MAX_PATTERNS = 4


def _pattern(bound):
    """The argument pattern of a call: per argument ``"P"`` (a pending tensor), ``"I"`` (an int
    or None: keyed as itself), ``("F", cls)`` (a float, bool or str: keyed after its class),
    ``("T", cls)`` (a concrete tensor of class ``cls``), ``("L", cls, subpatterns)`` (a list or
    tuple of at most 8 of those but "F" and "L"); None when an argument is of another kind (the
    generic path then always serves the op's calls of that pattern)."""
    if not bound:
        return None
    out = []
    for a in bound:
        c = a.__class__
        if c is _Pending:
            out.append("P")
        elif c is int or a is None:
            out.append("I")
        elif c is float or c is bool or c is str:
            out.append(("F", c))
        elif isinstance(a, _TensorType):
            out.append(("T", c))
        elif (c is list or c is tuple) and len(a) <= 8:
            sub = []
            for b in a:
                bc = b.__class__
                if bc is _Pending:
                    sub.append("P")
                elif bc is int or b is None:
                    sub.append("I")
                elif isinstance(b, _TensorType):
                    sub.append(("T", bc))
                else:
                    return None
            out.append(("L", c, tuple(sub)))
        else:
            return None
    return tuple(out)


def _spec_source(pats):
    """Python source of ``factory(st, tid, inner, generic) -> spec``; ``spec(op, bound)``
    records a call matching one of ``pats`` exactly as the generic recorder would (same key,
    codes, depth, results), and hands any other call (no pattern matches, or its group does
    not exist yet) to ``generic``; a call of another thread, or one made while the graph runs,
    to ``inner``, as the recorder does. The recorder installs it in front of the op's calls
    (``set_op_recorder``)."""
    n = len(pats[0])
    args = [f"a{i}" for i in range(n)]
    classes = {}

    def cls_name(c):
        return classes.setdefault(c, f"C{len(classes)}")

    body = []
    for pat in pats:
        guards, pend, tens, keys = [], [], [], []
        for i, k in enumerate(pat):
            a = args[i]
            if k == "P":
                guards.append(f"{a}.__class__ is Pending")
                pend.append(a)
                keys.append(f"{a}._t")
            elif k == "I":
                guards.append(f"({a}.__class__ is int or {a} is None)")
                keys.append(a)
            elif k[0] == "F":
                guards.append(f"{a}.__class__ is {cls_name(k[1])}")
                keys.append(f"{cls_name(k[1])}, {a}")
            elif k[0] == "T":
                guards.append(f"{a}.__class__ is {cls_name(k[1])}")
                tens.append(a)
                keys.append(f"{a}_k")
            else:  # a list or tuple
                _, c, sub = k
                guards.append(f"{a}.__class__ is {cls_name(c)} and len({a}) == {len(sub)}")
                items = []
                for j, q in enumerate(sub):
                    b = f"{a}[{j}]"
                    name = f"{a}_{j}"
                    if q == "P":
                        guards.append(f"{b}.__class__ is Pending")
                        pend.append(name)
                        items.append(f"{name}._t")
                    elif q == "I":
                        guards.append(f"({b}.__class__ is int or {b} is None)")
                        items.append(b)
                    else:
                        guards.append(f"{b}.__class__ is {cls_name(q[1])}")
                        tens.append(name)
                        items.append(f"{name}_k")
                keys.append(f"({', '.join([cls_name(c)] + items)},)")
        # the coded arguments in order: pending ones and concrete tensors but parameters
        coded = [x for x in _flat_names(pat, args)]
        lines = ["if " + " and ".join(guards or ["True"]) + ":"]
        for i, k in enumerate(pat):  # unpack list elements
            if k.__class__ is tuple and k[0] == "L":
                for j in range(len(k[2])):
                    lines.append(f"    {args[i]}_{j} = {args[i]}[{j}]")
        rg = []
        for x in pend:
            lines += [f"    g = {x}._g", f"    {x}_d = g.depth", f"    if not {x}_d:",
                      "        if g.views is not None and st.wrote:",
                      "            return generic(op, bound)",  # (it makes the view anew)
                      "        keep(g)", f"    {x}._rd = True"]
            rg.append(f"{x}._requires_grad")
        if tens:
            lines.append("    cs = []")
        for x in coded:
            if x in pend:
                if tens:
                    lines.append(f"    cs.append({x}._c)")
            else:  # a concrete tensor: a parameter by identity, else coded by tkey
                lines += [f"    ent = wkeys.get(id({x}))",
                          f"    if ent is not None and ent[0] is {x}._data and "
                          f"{x}._requires_grad:",
                          f"        {x}_k = ent[1]",
                          "    else:",
                          f"        {x}_k = tkey({x}, cs)"]
                rg.append(f"{x}._requires_grad")
        if not pend:
            lines.append("    d = 0")
        else:
            lines.append(f"    d = {pend[0]}_d")
            for x in pend[1:]:
                lines.append(f"    if {x}_d > d:")
                lines.append(f"        d = {x}_d")
        lines.append(f"    rg = {' or '.join(rg) if rg else 'False'}")
        lines.append(f"    grp = groups.get((op, _grad_on(), {', '.join(keys)}, rg, d + 1))")
        lines.append("    if grp is None:")
        lines.append("        return generic(op, bound)")
        lines.append("    row = grp.n")
        lines.append("    grp.n = row + 1")
        if tens:
            lines.append("    if cs:")
            lines.append("        grp.codes.extend(cs)")
        elif pend:
            # (a method call: ``grp.codes += (...)`` stores the slot back, ~50 ns more a call)
            lines.append(f"    grp.codes.append({pend[0]}._c)" if len(pend) == 1 else
                         f"    grp.codes.extend(({', '.join(x + '._c' for x in pend)},))")
        lines += ["    one = grp.one",
                  "    if one is not None:",
                  "        p = new(Pending)",
                  "        p._g = grp",
                  "        p._c = grp.base + row",
                  "        p._t = one",
                  "        if rg and grp.diff:",
                  "            p._requires_grad = True",
                  "        if grp.views is not None:",
                  "            grp.views.append((op, bound))",
                  "        return p",
                  "    if grp.views is not None:",
                  "        grp.views.append((op, bound))",
                  "    return results(grp, row, rg)"]
        body += ["        " + line for line in lines]
    head = ["def factory(st, tid, inner, generic):",
            "    groups, wkeys, keep, tkey = st.groups, st.wkeys, st.keep, st.tkey",
            "",
            "    def spec(op, bound):",
            "        if get_ident() != tid or st.flushing:",
            "            return inner(op, bound)",
            f"        {', '.join(args)}, = bound"]
    return "\n".join(head + body + ["        return generic(op, bound)", "", "    return spec",
                                     ""]), \
        {v: k for k, v in classes.items()}


def _flat_names(pat, args):
    """The names of the coded arguments of ``pat`` (pending values and concrete tensors,
    list elements included), in the order of the generic recorder's codes."""
    out = []
    for i, k in enumerate(pat):
        if k == "P" or (k.__class__ is tuple and k[0] == "T"):
            out.append(args[i])
        elif k.__class__ is tuple and k[0] == "L":
            for j, q in enumerate(k[2]):
                if q == "P" or (q.__class__ is tuple and q[0] == "T"):
                    out.append(f"{args[i]}_{j}")
    return out


def _spec_factory(pats):
    """The compiled ``factory(state) -> spec`` of a set of patterns (cached)."""
    f = _FACTORIES.get(pats)
    if f is None:
        src, classes = _spec_source(pats)
        env = {"Pending": _Pending, "new": _new, "_grad_on": _grad_on, "results": _results,
               "id": id, "get_ident": _get_ident}
        env.update(classes)
        exec(compile(src, f"<autobatch recorder {len(_FACTORIES)}>", "exec"), env)
        f = _FACTORIES[pats] = env["factory"]
    return f


def _int_slices(idx):
    """An index with each slice's tensor bounds read as ints, as Python's slicing reads them
    (through ``__index__``: a pending one runs the pending graph); ``idx`` itself when it has
    none (``h[:, :k]``, ``k`` a 0-d count computed in the context)."""
    c = idx.__class__
    if c is slice:
        return _int_slice(idx)
    if c is tuple and slice in map(type, idx):
        out = tuple([_int_slice(b) if b.__class__ is slice else b for b in idx])
        return idx if all(a is b for a, b in zip(out, idx)) else out
    return idx


def _int_slice(s):
    parts = (s.start, s.stop, s.step)
    for v in parts:
        if v is not None and v.__class__ is not int and isinstance(v, _TensorType):
            return slice(*[operator.index(v) if isinstance(v, _TensorType) else v
                           for v in parts])
    return s


def _twin(op):
    """The out-of-place op that computes what in-place ``op`` writes (``add`` for ``add_``),
    with the same parameters; None where there is none (``bernoulli_`` draws with a
    probability argument, ``bernoulli`` with its input's)."""
    name = op.name
    t = OPS.get(name[:-1]) if name.endswith("_") and name != "bernoulli_" else None
    if t is None or t.inplace or \
            list(t.signature.parameters) != list(op.signature.parameters):
        return None
    return t


def _shares_input(out, args):
    """Does a result of a call share memory with one of its tensor arguments (a view, a
    detach, an argument handed back)?"""
    ins = []
    for a in args:
        if isinstance(a, _TensorType):
            ins.append(_unwrap(a))
        elif a.__class__ is list or a.__class__ is tuple:
            ins.extend(_unwrap(b) for b in a if isinstance(b, _TensorType))
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(o, _TensorType):
            d = _unwrap(o)
            xp = array_module(d)
            if any(d is i or (array_module(i) is xp and xp.may_share_memory(d, i))
                   for i in ins):
                return True
    return False


def _results(grp, row, rg):
    """The pending results of row ``row`` of ``grp`` (a container of several, or one whose
    ``requires_grad`` depends on its output)."""
    rg = rg and grp.diff
    res = []
    for t, f, base in grp.outm:
        p = _new(_Pending)
        p._g = grp
        p._c = base + row
        p._t = t
        if rg and f:
            p._requires_grad = True
        res.append(p)
    kind = grp.kind
    return res[0] if kind is None else kind(res)


# ------------------------------------------------------------------------------ the state
class _State:
    """One active ``autobatch()`` context (per thread)."""

    def __init__(self, inner):
        self.inner = inner
        self.groups: dict = {}  # (signature, depth) -> _Group, for the calls not run yet
        self.levels: dict = {}  # depth -> [_Group]
        self.flushing = False
        self.active = True
        self.tid = threading.get_ident()
        self.groups_run = 0
        self.calls_run = 0
        self.unbatched = {}  # op name -> groups of several calls run one call at a time
        # an in-place op has written real tensors: the batched rows of a view made before may
        # be stale, so a view read again is made anew from its base (see _Group.views)
        self.wrote = False
        self.wkeys = {}      # id(parameter) -> (its array, its signature entry)
        # until the next flush: output buffer number -> its group (the groups of the pending
        # calls, and the groups run before whose values they read); the concrete per-example
        # tensors the pending calls read, coded -1 - position, by id
        self.table: dict = {}
        self.consts: list = []
        self.cids: dict = {}
        self.specs: dict = {}  # op -> its specialized recorder (see _spec_factory)
        # (id(node), output number) -> (node, group, k): the nodes of batched results (share)
        self.outs_of: dict = {}
        self.spec_pats: dict = {}  # op -> the patterns its specialized recorder covers
        self.record = self.recorder()

    # -- the recorder -----------------------------------------------------------------
    def recorder(self):
        """The recorder installed in front of autograd's: ``record(op, bound)`` defers the
        call and returns its pending result(s). A closure over this state, so the hot path
        reads its state from cells, not attributes. An op with argument patterns compiled
        (``specs``) gets its compiled recorder installed in front of its calls while this one
        is the installed recorder: its calls then reach it directly."""
        st = self
        tid = self.tid
        groups = self.groups
        inner = self.inner
        opkind = _OPKIND
        Pending = _Pending
        unwrap = _unwrap
        TensorType = _TensorType
        new = _new
        wkeys = self.wkeys
        specs = self.specs

        def record(op, bound):
            # (while the graph runs, and in backward, the recorder is swapped out: see flush
            # and _outside; ``flushing`` guards a recorder captured before that)
            if _get_ident() != tid or st.flushing:
                return inner(op, bound)
            sp = specs.get(op)
            if sp is None:
                return generic(op, bound)
            # the argument patterns seen before, compiled (see _spec_source), from now on in
            # front of the op's calls (until the next set_recorder: a flush, another recorder)
            if get_recorder() is record:
                set_op_recorder(op, sp)
            return sp(op, bound)

        def generic(op, bound):
            kind = opkind.get(op, -1)
            if kind:
                if kind < 0:
                    kind = opkind[op] = (1 if op.inplace or op.name in _EAGER_OPS else
                                         2 if op.name in _ROWS_OPS else 0)
                if kind == 1:
                    if op.inplace and bound[0].__class__ is Pending:
                        p = st.inplace(op, bound)
                        if p is not None:
                            return p
                    return st.eager(op, bound)
                if kind == 2 and op.name == "getitem":
                    idx = _int_slices(bound[1])
                    if idx is not bound[1]:
                        bound = (bound[0], idx) + bound[2:]
                if kind == 2 and (op.name == "getitem" or (bound[1].__class__ is int and
                                                           bound[1] <= 0)):
                    p = st.record_rows(op, bound)
                    if p is not None:
                        return p
            # the signature: op, grad mode, then per argument its type (a pending value's or
            # a concrete tensor's), an int or None as itself, other plain values after their
            # class, a parameter as ("w", id, type); then whether a tensor argument requires
            # grad (a call that needs no gradient never shares a group, and so a batched node,
            # with one that does), then the depth. The codes of the tensor arguments go to
            # ``codes``; the call itself is not kept.
            gm = _grad_on()
            key = [op, gm]
            codes = []
            depth = 0
            rg = False
            try:
                for a in bound:
                    c = a.__class__
                    if c is Pending:
                        key.append(a._t)
                        codes.append(a._c)
                        a._rd = True
                        d = a._g.depth
                        if d > depth:
                            depth = d
                        elif not d:
                            if a._g.views is not None and st.wrote:
                                a._materialize()
                                return record(op, bound)
                            st.keep(a._g)
                        if a._requires_grad:
                            rg = True
                    elif c is int or a is None:
                        key.append(a)
                    elif c is TensorType or isinstance(a, TensorType):
                        ent = wkeys.get(id(a))
                        if ent is not None and ent[0] is unwrap(a) and a._requires_grad:
                            key.append(ent[1])  # a parameter seen before
                            rg = True
                            continue
                        key.append(st.tkey(a, codes))
                        if a._requires_grad:
                            rg = True
                    elif c is list or c is tuple:
                        sub = [c]
                        for b in a:
                            bc = b.__class__
                            if bc is Pending:
                                sub.append(b._t)
                                codes.append(b._c)
                                b._rd = True
                                d = b._g.depth
                                if d > depth:
                                    depth = d
                                elif not d:
                                    if b._g.views is not None and st.wrote:
                                        b._materialize()
                                        return record(op, bound)
                                    st.keep(b._g)
                                if b._requires_grad:
                                    rg = True
                            elif bc is int or b is None:
                                sub.append(b)
                            elif bc is TensorType or isinstance(b, TensorType):
                                sub.append(st.tkey(b, codes))
                                if b._requires_grad:
                                    rg = True
                            else:
                                sub.append(_vkey(b))
                        key.append(tuple(sub))
                    elif c is float or c is bool or c is str:
                        key.append(c)
                        key.append(a)
                    elif c is slice:
                        key.append(("slice", a.start, a.stop, a.step))
                    else:
                        key.append(_vkey(a))
                key.append(rg)
                key.append(depth + 1)
                key = tuple(key)
                grp = groups.get(key)
            except _Unhashable:
                return st.eager(op, bound)
            if grp is None:
                grp = st.new_group(op, bound, key, gm, depth + 1)
                if grp is None:
                    return st.eager(op, bound)
            if not kind:
                st.learn(op, bound)
            row = grp.n
            grp.n = row + 1
            if codes:
                grp.codes.extend(codes)
            one = grp.one
            if one is not None:
                p = new(Pending)
                p._g = grp
                p._c = grp.base + row
                p._t = one
                if rg and grp.diff:
                    p._requires_grad = True
                if grp.views is not None:
                    grp.views.append((op, bound))
                return p
            if grp.views is not None:
                grp.views.append((op, bound))
            return _results(grp, row, rg)

        record.autobatch_state = st  # (see _live)
        record.flush = flush  # (this thread's context: see ember.tensor.extension)
        self.generic = generic
        return record

    def learn(self, op, bound):
        """Note the argument pattern of a call the generic recorder handled, and give ``op`` a
        specialized recorder covering its patterns (at most ``_MAX_PATTERNS`` per op, shared by
        every context; the compiled code is cached per set of patterns)."""
        pats = _PATTERNS.get(op, ())
        if len(pats) < _MAX_PATTERNS:
            pat = _pattern(bound)
            if pat is not None and pat not in pats and (not pats or len(pat) == len(pats[0])):
                pats = _PATTERNS[op] = pats + (pat,)
        if pats and self.spec_pats.get(op) is not pats:
            self.spec_pats[op] = pats
            sp = self.specs[op] = _spec_factory(pats)(self, self.tid, self.inner, self.generic)
            if get_recorder() is self.record:
                set_op_recorder(op, sp)

    def record_rows(self, op, bound):
        """``x[i]``, ``x[a:b:s]``, ``select(x, 0, i)``, ``narrow(x, 0, a, n)``: calls that
        differ only in which rows of ``x`` they take (and in ``x``'s number of rows) share a
        signature; the rows are per-call data (the second code column), and the group runs
        as one gather of the rows of its sources. None: not such a call."""
        name = op.name
        if name != "getitem":
            dim = bound[1]
            if dim.__class__ is not int or dim > 0:
                return None
        x = bound[0]
        c = x.__class__
        if c is _Pending:
            t = x._t
        elif c is _TensorType or isinstance(x, _TensorType):
            d = _unwrap(x)
            if d.__class__ is not _ndarray and isinstance(d, _Unready):
                return None
            t = _type_of(d)
        else:
            return None
        if not t.ndim:
            return None
        D = t.shape[0]
        if name == "getitem":
            idx = bound[1]
            if idx.__class__ is tuple:
                if not idx or any(i is not Ellipsis and (i.__class__ is not slice or i != _FULL)
                                  for i in idx[1:]):
                    return None
                idx = idx[0]
            if idx.__class__ is int:
                i = idx
            elif idx.__class__ is slice:
                i = None
                start, stop, step = idx.indices(D)
            else:
                return None
        elif name == "select":
            if dim not in (0, -t.ndim) or bound[2].__class__ is not int:
                return None
            i = bound[2]
        else:  # slice_view
            if dim not in (0, -t.ndim) or not all(v.__class__ is int for v in bound[2:]):
                return None
            i = None
            start, stop, step = slice(bound[2], bound[3], bound[4]).indices(D)
        if i is not None:
            if not -D <= i < D:
                return None  # the ordinary path raises the error
            start, L, step, drop = i % D, 1, 1, True
        else:
            if step <= 0:
                return None
            L, drop = len(range(start, stop, step)), False
            if not L:
                return None
        gm = _grad_on()
        key = (_ROWS_KEY, gm, t.dtype, t.dev, t.shape[1:], t.layout, drop, L, step)
        if c is _Pending:
            code = x._c
            x._rd = True
            depth = x._g.depth
            if not depth:
                if x._g.views is not None and self.wrote:
                    return None  # (the generic recorder makes it anew)
                self.keep(x._g)
        else:
            i = self.cids.get(id(x))
            if i is None:
                i = self.cids[id(x)] = -1 - len(self.consts)
                self.consts.append(x)
            code, depth = i, 0
        key = key + (depth + 1,)
        grp = self.groups.get(key)
        if grp is None:
            out = t.shape[1:] if drop else (L,) + t.shape[1:]
            canon = (x, 0, start) if drop else (x, 0, start, start + L * step, step)
            grp = self.new_group(_SELECT if drop else _SLICE, canon, key, gm, depth + 1,
                                 (None, [(_type(out, t.dtype, t.dev, _rows_layout(t, drop,
                                                                                   step, out)),
                                          t.dtype.kind in _GRAD_KINDS)]))
            grp.rows = (drop, L, step)
            grp.views = []
            grp.plan, grp.m = [0, None, 1] + [None] * (len(canon) - 3), 2
        row = grp.n
        grp.n = row + 1
        grp.codes.extend((code, start))
        p = _new(_Pending)
        p._g = grp
        p._c = grp.base + row
        p._t = grp.outm[0][0]
        if x._requires_grad and grp.diff:
            p._requires_grad = True
        grp.views.append((op, bound))
        return p

    def keep(self, g):
        """A group run before (its values read by a pending call): reachable by code."""
        table = self.table
        if g.bid not in table:
            for k in range(len(g.outm)):
                table[(g.bid + k) % _BID_WRAP] = g

    def tkey(self, a, codes):
        """Signature entry of a concrete tensor argument: parameters (leaves that require
        grad) by identity, as shared operands; other tensors by type, with a code."""
        d = _unwrap(a)
        if d.__class__ is not _ndarray and isinstance(d, _Unready):
            # an ordinary Tensor over a pending tensor's array (``leaf.data = pending``, as
            # Parameter's deepcopy does): it holds the real array from here on (the calls it
            # goes to read its array, and CuPy's functions take nothing else)
            d = d._real()
            a.data = _wrap(d)
        if a._requires_grad and a.grad_fn is None:
            ent = self.wkeys.get(id(a))
            if ent is None or ent[0] is not d:
                ent = self.wkeys[id(a)] = (d, ("w", id(a), _type_of(d)))
            return ent[1]
        i = self.cids.get(id(a))
        if i is None:
            i = self.cids[id(a)] = -1 - len(self.consts)
            self.consts.append(a)
        codes.append(i)
        return _type_of(d)

    def new_group(self, op, bound, key, gm, depth, meta=None):
        mkey = key[:-1]
        if meta is None:
            meta = _META.get(mkey)
        if meta is None:
            if mkey in _EAGER_KEYS or (op.name == "getitem" and _bool_index(bound[1])) or \
                    (op.name == "repeat_interleave" and bound[1].__class__ is not int):
                # (a result's shape that depends on the values: tensor counts)
                return None
            meta = self.infer(op, bound, mkey)
            if meta is None:
                return None
        kind, outs = meta
        g = _Group()
        g.op, g.gm, g.st, g.depth = op, gm, self, depth
        # what makes the results' container from a list of them (None: one tensor)
        g.kind = (lambda res, cls=kind: cls(*res)) if hasattr(kind, "_fields") else kind
        g.diff = gm and op.differentiable
        # (a list argument as it is now: the caller may append to it before the group runs,
        # a history of states stacked at every step)
        g.first, g.n, g.codes = graph.frozen(bound), 0, []
        g.plan, g.shapes, g.m = _plan(bound)
        g.outs = g.same = g.vals = g.made = g.rows = g.phys = g.alias = g.merged = g.relayout = None
        g.hold = g.done = None
        g.mkey = mkey
        g.views = [] if mkey in _VIEWLIKE else None
        g.C = None
        bid = g.bid = _next_bid[0]
        g.base = bid << _ROW_BITS
        _next_bid[0] = (bid + len(outs)) % _BID_WRAP or 1
        g.outm = [(t, f, ((bid + k) % _BID_WRAP) << _ROW_BITS) for k, (t, f) in enumerate(outs)]
        # one output that requires grad whenever an input does: the recorder's short path
        g.one = outs[0][0] if kind is None and (outs[0][1] or not g.diff) else None
        for k in range(len(outs)):
            self.table[(bid + k) % _BID_WRAP] = g
        self.groups[key] = g
        level = self.levels.get(depth)
        if level is None:
            self.levels[depth] = [g]
        else:
            level.append(g)
        return g

    # -- in-place ops ---------------------------------------------------------------------
    def inplace(self, op, bound):
        """``x.add_(y)`` on a pending ``x`` that no recorded call has read and that is no
        view (nor shares memory with another value): recorded as its out-of-place twin
        (``add``), whose result ``x`` then becomes (the same object, now that value), so the
        pending graph does not run at every ``total += loss``. The calls recorded before read
        the value ``x`` had, as they would have; a read or a view since it was made could see
        the write (a view shares its memory, a saved argument makes backward refuse it), so
        those run the pending graph and the op at once, as before. None: not such a call, or
        the twin's result is not of ``x``'s shape and dtype (the op itself raises, or casts)."""
        x = bound[0]
        g = x._g
        if x._rd or not g.depth or g.views is not None:
            return None
        if x._requires_grad and g.gm and "_tw" not in x.__dict__ and _saves_output(g.op):
            # its node keeps the value: the write is made at once, and backward refuses it
            # as PyTorch's version check does (a value an in-place op made is left to that
            # op's node, which keeps what it needs, as without the context)
            return None
        twin = _TWINS.get(op, False)
        if twin is False:
            twin = _TWINS[op] = _twin(op)
        if twin is None:
            return None
        if any((a.__class__ is list or a.__class__ is tuple) and any(b is x for b in a)
               for a in bound):
            return None
        # the twin reads x's value through a pending tensor of its own: the group of the
        # call keeps its first call's arguments, and x is about to become another value
        old = _new(_Pending)
        old._g, old._c, old._t = g, x._c, x._t
        if x._requires_grad:
            old._requires_grad = True
        r = self.record(twin, tuple(old if a is x else a for a in bound))
        if r.__class__ is not _Pending or r._t is not x._t:
            return None  # (the twin's row is computed and dropped; the op runs at once)
        d = x.__dict__
        d.pop(_DATA, None)  # the stand-in of the value it had
        d.pop("_rd", None)
        d["_tw"] = True
        x._g, x._c, x._t = r._g, r._c, r._t
        if r._requires_grad:
            x._requires_grad = True
        else:
            d.pop("_requires_grad", None)
        return x

    # -- an op that cannot wait -------------------------------------------------------
    def eager(self, op, bound):
        """Run the pending graph, then ``op`` at once on real tensors; an in-place op that
        writes memory no pending call reads runs without it (see ``unread``)."""
        if self.levels and not (op.inplace and self.unread(bound)):
            self.flush()
        if op.inplace:
            self.wrote = True
        return self.inner(op, _realize(bound))

    def unread(self, bound):
        """Is ``bound`` an in-place call writing a real tensor whose memory no pending call
        reads (no argument read since the last run, no parameter, no result of a group run
        before: a row group's result can be a view of its source), with no pending argument?
        A set-up write into a tensor made in the context (``w = zeros(3); w[0] = 1``) then
        leaves the pending graph to wait: the values its calls read are unchanged."""
        x = bound[0]
        if x.__class__ is _Pending or not isinstance(x, _TensorType):
            return False
        for a in bound[1:]:
            if a.__class__ is _Pending or ((a.__class__ is list or a.__class__ is tuple) and
                                           any(b.__class__ is _Pending for b in a)):
                return False
        d = _unwrap(x)
        if d.__class__ is not _ndarray:
            return False
        share = np.may_share_memory
        for c in self.consts:
            r = _unwrap(c)
            if r.__class__ is _ndarray and share(d, r):
                return False
        for r, _ in self.wkeys.values():
            if r.__class__ is _ndarray and share(d, r):
                return False
        for g in set(self.table.values()):
            for vals in (g.outs, g.same, *(g.vals or ())):
                for v in vals or ():
                    r = _unwrap(v) if isinstance(v, _TensorType) else None
                    if r.__class__ is _ndarray and share(d, r):
                        return False
        return True

    # -- the output structure of a signature ------------------------------------------
    def infer(self, op, bound, key):
        """``(kind, [(type, is_float), ...])``: kind None for one tensor, else the
        tuple/list/namedtuple type of the outputs; found by running the op once on placeholder
        inputs of the right shapes (ones, zeros for integer tensors), cached per signature.
        None: the op cannot be deferred."""
        if op.name in _RANDOM:  # the first argument's dtype, the tensors' broadcast shape
            x = bound[0]
            dt = _np_dtype(x)
            shape = np.broadcast_shapes(*[tuple(a.shape) for a in bound
                                          if isinstance(a, _TensorType)])
            _META[key] = meta = (None, [(_type(shape, dt, _dev(x)), dt.kind in _GRAD_KINDS)])
            return meta
        prev_rec = get_recorder()
        set_recorder(self.inner)
        try:
            # through the recorders below (autocast's casts set the dtype), in the call's grad
            # mode: autocast keeps the casts of weights it makes, and one made with grad off
            # would cut the weights' gradients when the real call reuses it
            with quiet():  # placeholder values: an inf or nan here is nobody's result
                try:
                    placeholders = tuple(_placeholder(a) for a in bound)
                    out = self.inner(op, placeholders)
                except Exception:
                    # a matrix of ones is singular (inv, solve, cholesky, lu_factor refuse
                    # it): once more with identity matrices where a pending value is square
                    if not any(_square(a) for a in bound):
                        raise
                    placeholders = tuple(_placeholder(a, True) for a in bound)
                    out = self.inner(op, placeholders)
        except Exception:
            _EAGER_KEYS.add(key)
            return None
        finally:
            set_recorder(prev_rec)
        if _shares_input(out, placeholders):
            _VIEWLIKE.add(key)
        if isinstance(out, _TensorType):
            meta = (None, [_out_key(out)])
        elif isinstance(out, (tuple, list)) and out and all(isinstance(o, _TensorType)
                                                             for o in out):
            ent = graph.derivative_entry(op.name)
            diff = None if ent is None else ent.outputs  # outputs that carry gradients
            meta = (type(out), [(t, f and (diff is None or i in diff))
                                for i, (t, f) in enumerate(_out_key(o) for o in out)])
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
        inner = self.inner
        # the nodes the calls below make, to share (see share)
        made = _local.made = []
        self.inner = _collecting(inner, made)
        set_recorder(self.inner)
        prev = _grad_on()
        try:
            while self.levels:
                levels, self.levels = self.levels, {}
                self.groups.clear()
                self.schedule(levels)
                for depth in sorted(levels):
                    grps = levels[depth]
                    self.split_slices(grps)
                    for grp in grps:
                        if grp.alias is None and grp.depth:
                            self.run_group(grp)
                            if made:
                                self.share([grp] if grp.outs is not None else
                                           _ALWAYS if grp.same is not None else None)
        finally:
            self.inner = inner
            made.clear()
            _local.made = None
            _set_grad(prev)
            set_recorder(prev_rec)
            self.flushing = False
            self.table, self.consts, self.cids = {}, [], {}

    def value(self, c):
        """The value coded ``c`` (a pending call's result, or a concrete tensor)."""
        if c < 0:
            return self.consts[-1 - c]
        return _made(self.source(c >> _ROW_BITS), c)

    def source(self, b):
        g = self.table.get(b)
        if g is None:
            raise RuntimeError("autobatch: a pending tensor of another autobatch() context "
                               "that did not run its pending graph was used")
        return g

    def locate(self, b):
        """``(group, k, offset)``: where the values of output buffer ``b`` are: output ``k``
        of ``group``, from call ``offset`` on (a group merged into a later one)."""
        g = self.source(b)
        k = (b - g.bid) % _BID_WRAP
        if g.alias is None:
            return g, k, 0
        t, off = g.alias
        return t, k, off

    def schedule(self, levels):
        """Merge groups of one signature at different depths where the dependencies allow:
        going from the deepest level up, a group whose results are first read at depth ``d``
        may run as late as ``d - 1``, so it joins the deepest group of its signature at or
        before that (its calls appended to that group's; ``alias`` says where). Calls every
        example makes at its own depth (a loss after sequences of different lengths) then run
        as one group."""
        order = [g for d in sorted(levels, reverse=True) for g in levels[d]]
        seen = {}
        for g in order:
            if g.mkey in seen:
                break
            seen[g.mkey] = 1
        else:
            return  # no signature at two depths
        inf = 1 << 62
        for g in order:
            g.latest = inf
        by_key = {}
        table = self.table
        for g in order:
            C = _columns(g) if g.m else None
            fd = g.depth
            cands = by_key.get(g.mkey)
            if cands:
                # the groups of this signature met so far (deepest first) and their -depths,
                # ascending: the deepest at or before g.latest is found by bisection
                grps, negs = cands
                i = bisect_left(negs, -g.latest)
                best = grps[i] if i < len(grps) and grps[i].fdepth > g.depth else None
                if best is not None:
                    g.alias = (best, best.n)
                    best.n += g.n
                    best.codes += g.codes
                    best.C = None
                    if best.merged is None:
                        best.merged = []
                    best.merged.append(g)
                    fd = best.fdepth
            g.fdepth = fd
            if g.alias is None:
                cands = by_key.get(g.mkey)
                if cands is None:
                    cands = by_key[g.mkey] = ([], [])
                cands[0].append(g)
                cands[1].append(-fd)
            if C is not None:
                for s in _sources(C, g.lo, g.hi, table):
                    if s.depth and fd - 1 < s.latest:
                        s.latest = fd - 1

    def call(self, grp, row, C):
        """The bound call of row ``row`` of ``grp`` (from its first call and its codes)."""
        first = grp.first
        if row == 0:
            return first
        if grp.rows is not None:
            _, L, step = grp.rows
            x, s = self.value(int(C[0, row])), int(C[1, row])
            return (x, 0, s) if len(first) == 3 else (x, 0, s, s + L * step, step)
        args = list(first)
        for pos, pl in enumerate(grp.plan):
            if pl is None:
                continue
            if pl.__class__ is int:
                args[pos] = self.value(int(C[pl, row]))
            else:
                seq = list(first[pos])
                for i, q in enumerate(pl):
                    if q is not None:
                        seq[i] = self.value(int(C[q, row]))
                args[pos] = seq if first[pos].__class__ is list else tuple(seq)
        return tuple(args)

    def share(self, grps):
        """Count the rows of the batch that ``grps`` (groups run as one call, or one split of
        a value into several) computed, for the nodes the call made (``_local.made``). Each
        row stands for an example's node, which a backward through that example frees, so a
        node of the batch keeps what it saved until every row has been through a backward
        without ``retain_graph``; a node reading rows of another batch (an example's row of
        it, a gather, a later batched call) lets go of them then, and the examples' own nodes
        made while the graph ran (calls run one at a time) that feed the batch wait for it
        too (a backward through one example reaches them with zeros). See
        ``engine._let_go``: ``node._hold``, the counts of rows left it waits for;
        ``node._feeds``, the rows it reads. ``_ALWAYS``: a call every example made alike (its
        readers are not counted: it is kept); None: calls run one at a time."""
        made = _local.made
        outs = self.outs_of
        hold = None
        if grps is _ALWAYS:
            hold = _ALWAYS
        elif grps is not None:
            hold = [0]
            for g in grps:
                g.hold = hold
                g.done = []
                for k, o in enumerate(g.outs):
                    d = _unwrap(o)
                    n = d.shape[0] if d.ndim else 1
                    g.done.append(np.zeros(n, dtype=bool))
                    hold[0] += n
                    fn = o.grad_fn
                    if fn is not None:
                        outs.setdefault((id(fn), graph.output_nr(o)), (fn, g, k))
        waits = None if hold is None else _Waits((hold,))
        for x in made:
            if x._hold is not None or x._feeds is not None:
                continue  # (a node handed back by an op, an example's row)
            x._hold = [] if waits is None else waits
            feeds = None
            for i, e in enumerate(x._edges):
                for j, y in enumerate(e if e.__class__ is list else (e,)):
                    nr = 0
                    if y.__class__ is tuple:
                        y, nr = y
                    if y is None:
                        continue
                    ent = outs.get((id(y), nr))
                    if ent is None or ent[0] is not y:
                        if hold is not None:
                            _wait(y, hold)
                        continue
                    g = ent[1]
                    if g.hold is hold:
                        continue
                    rows = x.args[1][j] if x.entry is _GATHER_ENTRY and i == 0 else None
                    if feeds is None:
                        feeds = x._feeds = []
                    feeds.append((g.hold, g.done[ent[2]], rows))
        made.clear()

    def run_group(self, grp):
        n = grp.n
        op = grp.op
        _set_grad(grp.gm)
        self.groups_run += 1
        self.calls_run += n
        C = grp.C
        if C is None and grp.m:
            C = _columns(grp)
        rule = _RULES.get(op.name) if grp.rows is None else _take_rows
        if rule is not None and n > 1:
            try:
                done = self.run_batched(grp, rule, C)
            except Exception:
                done = False
            if done:
                self.ran(grp)
                return
        if n > 1:
            self.unbatched[op.name] = self.unbatched.get(op.name, 0) + 1
        elif op is _STACK and self.stack_rows(grp, C):
            return
        inner = self.inner
        vals = []
        for row in range(n):
            b = _realize(self.call(grp, row, C))
            try:
                out = inner(op, b)
            except Exception as exc:
                _reraise(exc, op, b)
            vals.append((out,) if isinstance(out, _TensorType) else tuple(out))
        grp.vals = vals
        self.ran(grp)

    def ran(self, grp):
        grp.depth = 0
        grp.first = grp.codes = grp.C = None
        if grp.merged is not None:
            for g in grp.merged:
                g.depth = 0
                g.first = g.codes = g.C = None
            grp.merged = None  # (each keeps its alias: no cycle)

    def split_slices(self, grps):
        """Slices of one value that tile a dim (``chunk``, ``split``: ``narrow`` after
        ``narrow`` of the same input) run as one ``split_with_sizes`` of it: one gather, and
        one ``cat`` in backward instead of a zero-filled copy of the input per slice."""
        sets = {}
        for g in grps:
            if g.op is not _SLICE or g.rows is not None or g.alias is not None:
                continue
            x, dim, _, _, step = g.first
            shape = g.shapes[0]
            if step != 1 or not shape or not g.m:
                continue
            d = dim + len(shape) if dim < 0 else dim
            if d < 1:
                continue
            sets.setdefault((g.gm, d, tuple(g.codes)), []).append(g)
        for (gm, d, _), gs in sets.items():
            if len(gs) < 2:
                continue
            shape = gs[0].shapes[0]
            D = shape[d]
            spans = sorted((slice(g.first[2], g.first[3]).indices(D)[:2], g) for g in gs)
            if spans[0][0][0] != 0 or spans[-1][0][1] != D or any(
                    a[0][1] != b[0][0] for a, b in zip(spans, spans[1:])):
                continue
            gs = [g for _, g in spans]
            sizes = [b - a for (a, b), _ in spans]
            if min(sizes) <= 0:
                continue
            n = gs[0].n
            _set_grad(gm)
            try:
                x, stacked = self.gather(np.array(gs[0].codes, dtype=np.int64), shape)
                if not stacked:
                    continue
                pieces = self.inner(_SPLIT, (x, sizes, d if _flat_rows(shape) else d + 1))
                if any(_unwrap(pc).shape != _phys(n, g.outm[0][0].shape)
                       for pc, g in zip(pieces, gs)):
                    continue
            except Exception:
                continue
            for pc, g in zip(pieces, gs):
                g.outs = (pc,)
                self.ran(g)
            self.share(gs)
            self.groups_run += len(gs)
            self.calls_run += n * len(gs)

    def stack_rows(self, grp, C):
        """``stack(values, 0)`` of pending values (``stack(losses)``): a gather of their rows
        from the batched results (one op per source), not one ``select`` per value."""
        pl = grp.plan[0]
        first = grp.first
        if first[1] not in (0, -len(first[0][0].shape) - 1) or pl.__class__ is not list or \
                len(pl) < 2 or None in pl:
            return False
        shape = grp.shapes[0][0]
        t, stacked = self.gather(C[pl, 0], shape)
        if not stacked:
            return False
        if _flat_rows(shape):
            t = _batching.reshape(self.inner, t, (len(pl),) + tuple(shape))
        grp.vals = [(t,)]
        self.ran(grp)
        return True

    def run_batched(self, grp, rule, C):
        """Run ``grp`` as one call of its batching rule; False if the rule declines (or
        returns something of the wrong shape)."""
        n = grp.n
        if rule is _take_rows:
            return self.run_rows(grp, C)
        perm = locs = None
        if C is not None:
            # per code column at once: one value for every call? one source buffer? (and
            # then which rows of it)
            # (the codes of one buffer are one range of integers: a column's least and
            # greatest code say whether it has one value, or one source buffer)
            lo, hi = grp.lo, grp.hi
            one = [a == b for a, b in zip(lo, hi)]
            one_src = [a >> _ROW_BITS == b >> _ROW_BITS for a, b in zip(lo, hi)]
            locs = [None] * grp.m
            for j, single in enumerate(one_src):
                if single and lo[j] >= 0 and lo[j] != hi[j]:
                    g, k, off = self.locate(lo[j] >> _ROW_BITS)
                    if g.outs is None:
                        continue
                    col = C[j]
                    if g.phys is None and hi[j] - lo[j] == n - 1 and _all(col[1:] > col[:-1]):
                        # rows one after another, in order (n distinct codes, ascending,
                        # spanning n): no reordering, and the whole buffer where they start
                        # at its first row
                        r0 = (lo[j] & _MASK) + off
                        locs[j] = (g.outs[k], _arange(n) if not r0 else
                                   np.arange(r0, r0 + n, dtype=np.int64), True)
                    else:
                        locs[j] = (g.outs[k], _rows(g, col, off), False)
            perm = _order(C, one_src, locs)
            if perm is not None:
                C = C[:, perm]
                locs = [loc if loc is None else (loc[0], loc[1][perm], False) for loc in locs]
        first = grp.first
        shapes = grp.shapes
        args, stacked = [], []
        some = False
        for pos, pl in enumerate(grp.plan):
            a = first[pos]
            if pl is None:
                args.append(a)
                stacked.append(False)
            elif pl.__class__ is int:
                t, s = self.gather(C[pl], shapes[pos], one[pl], one_src[pl], locs[pl])
                args.append(t)
                stacked.append(s)
                some = some or s
            else:
                ts, ss = [], []
                for i, q in enumerate(pl):
                    if q is None:
                        ts.append(a[i])
                        ss.append(False)
                    else:
                        t, s = self.gather(C[q], shapes[pos][i], one[q], one_src[q],
                                           locs[q])
                        ts.append(t)
                        ss.append(s)
                        some = some or s
                args.append(ts if a.__class__ is list else tuple(ts))
                stacked.append(ss)
        if not some:
            if grp.op.name in _RANDOM:
                return False
            # every example made the same call (``w.t()`` in per-example code): run it once
            out = self.inner(grp.op, tuple(args))
            grp.same = (out,) if isinstance(out, _TensorType) else tuple(out)
            return True
        outm = grp.outm
        out_shapes = [t.shape for t, _, _ in outm]
        inner = self.inner
        out = None
        flat = _FLAT_RULES.get(grp.op.name)
        if flat is not None:  # the rule takes the buffers as they are (flat)
            out = flat(_batching.Batch(grp.op, n, args, stacked, shapes, out_shapes, inner))
        if out is None:
            # the rule sees every argument with the examples along dim 0 (a flat buffer
            # viewed so), and its results are made flat again
            for j, st in enumerate(stacked):
                if st is True:
                    if _flat_rows(shapes[j]):
                        args[j] = _batching.reshape(inner, args[j], (n,) + tuple(shapes[j]))
                elif st:
                    parts = list(args[j])
                    for i, sti in enumerate(st):
                        if sti and _flat_rows(shapes[j][i]):
                            parts[i] = _batching.reshape(inner, parts[i],
                                                         (n,) + tuple(shapes[j][i]))
                    args[j] = parts if args[j].__class__ is list else tuple(parts)
            out = rule(_batching.Batch(grp.op, n, args, stacked, shapes, out_shapes, inner))
            if out is None:
                return False
            if isinstance(out, _TensorType):
                out = _batching.reshape(inner, out, _phys(n, out_shapes[0])) \
                    if len(out_shapes) == 1 and _flat_rows(out_shapes[0]) and \
                    tuple(out.shape) == (n,) + tuple(out_shapes[0]) else out
            elif len(out) == len(out_shapes):
                out = tuple(_batching.reshape(inner, o, _phys(n, sh))
                            if _flat_rows(sh) and tuple(o.shape) == (n,) + tuple(sh) else o
                            for o, sh in zip(out, out_shapes))
        outs = (out,) if isinstance(out, _TensorType) else tuple(out)
        if len(outs) != len(outm):
            return False
        for o, (t, _, _) in zip(outs, outm):
            d = _unwrap(o)
            if d.shape != _phys(n, t.shape) or d.dtype != t.dtype:
                return False
        # an example's value taken from a result computed anew (not a view: a view's later
        # views are taken from its base) gets the layout its pending values promised, where
        # the batched result's rows have another (einsum's, a solve's column-major results:
        # a ``t()`` of one was promised contiguous and viewed so)
        relayout = [grp.views is None and not _keeps_layout(t, s if t.r else s[1:])
                    for s, (t, _, _) in zip([_unwrap(o).strides for o in outs], outm)]
        grp.relayout = tuple(relayout) if any(relayout) else None
        grp.outs = outs
        if perm is not None:  # the results are in the order ``perm``
            phys = grp.phys = np.empty(n, dtype=np.int64)
            phys[perm] = _arange(n)
        return True

    def run_rows(self, grp, C):
        """A rows group (see ``record_rows``): one gather of every call's rows from the
        sources (each flattened to rows)."""
        drop, L, step = grp.rows
        n = grp.n
        xs, starts = C[0], C[1]
        pieces, rows, places = [], [], []
        order = xs.argsort(kind="stable")
        sx = xs[order]
        cuts = ((sx[1:] != sx[:-1]).nonzero()[0] + 1).tolist()
        inner = self.inner
        done = set()
        for a, b in zip([0] + cuts, cuts + [n]):  # one segment per distinct x (code)
            seg = order[a:b]
            c = int(sx[a])
            if c >= 0:
                buf = c >> _ROW_BITS
                if buf in done:
                    continue
                g, k, off = self.locate(buf)
                if g.outs is not None:  # every call reading this buffer at once
                    done.add(buf)
                    B = g.outs[k]
                    shape = tuple(_unwrap(B).shape)
                    tk = g.outm[k][0]
                    D = tk.shape[0]
                    if not tk.r:  # (m, D, ...), not flat: made rows (m * D, ...)
                        B = _batching.reshape(inner, B, (shape[0] * D,) + shape[2:])
                    pos = np.flatnonzero((xs >= 0) & ((xs >> _ROW_BITS) == buf))
                    pieces.append(B)
                    rows.append(_rows(g, xs[pos], off) * D + starts[pos])
                    places.append(pos)
                    continue
            pieces.append(self.value(c))
            rows.append(starts[seg])
            places.append(seg)
        if L > 1 or not drop:  # every call's L rows (step apart)
            span = _arange(L) * step
            rows = [(r[:, None] + span).reshape(-1) for r in rows]
            places = [(q[:, None] * L + _arange(L)).reshape(-1) for q in places]
        if len(pieces) == 1 and _all(places[0] == _arange(n * L)):
            out = _take(pieces[0], rows[0])
        else:
            out = _gather(pieces, rows, places, n * L)
        t = grp.outm[0][0]
        out = _batching.reshape(inner, out, _phys(n, t.shape))
        d = _unwrap(out)
        if d.shape != _phys(n, t.shape) or d.dtype != t.dtype:
            return False
        grp.outs = (out,)
        return True

    # -- gathering ----------------------------------------------------------------------
    def gather(self, col, shape, one=None, one_src=None, loc=None):
        """``(tensor, stacked)`` for one tensor argument of a group (per example of
        ``shape``), from its codes ``col``: the one tensor every example passed (``stacked``
        False), or the examples' values as a batched buffer (see ``_flat_rows``): rows of
        batched results: a whole buffer, or one gather node over the source buffers;
        per-example tensors that are not rows of one (constants, results of calls run one at a
        time) are stacked. ``loc``: (buffer, rows, whether the rows are consecutive and ascending)
        where every value is a row of one buffer."""
        if loc is not None:
            return _take(loc[0], _expand(loc[1], _flat_rows(shape)), loc[2]), True
        c0 = int(col[0])
        if one is None:
            one = bool(_all(col == c0))
            one_src = bool(_all((col >> _ROW_BITS) == (c0 >> _ROW_BITS)))
        if one:
            return self.value(c0), False
        if c0 >= 0:
            b0 = c0 >> _ROW_BITS
            if one_src:  # one source buffer
                g, k, off = self.locate(b0)
                if g.outs is not None:
                    return _take(g.outs[k], _expand(_rows(g, col, off), _flat_rows(shape))), True
                if g.same is not None:
                    return g.same[k], False
        return self.gather_mixed(col, _flat_rows(shape)), True

    def gather_mixed(self, col, f):
        """The examples' values from several sources, in row order (``f`` rows each in a flat
        buffer): one gather node (see ``_gather``) taking each source buffer's rows to their
        places; the per-example tensors that are not rows of one are concatenated first."""
        n = len(col)
        pend = (col >= 0).nonzero()[0]
        singles = (col < 0).nonzero()[0].tolist() if len(pend) < n else []
        pieces, rows, places = [], [], []
        where = {}  # (group, k) -> its entry in pieces (two groups merged into one: one buffer)
        if len(pend):
            whole = len(pend) == n
            pc = col if whole else col[pend]
            # the codes by source buffer (stable: each buffer's places stay ascending), the
            # rows and places of every buffer's run at once, then a view of them per buffer
            srt = (pc >> _ROW_BITS).argsort(kind="stable")
            pc = pc[srt]
            ss = pc >> _ROW_BITS
            cuts = ((ss[1:] != ss[:-1]).nonzero()[0] + 1).tolist()
            starts = [0] + cuts
            lows = pc & _MASK
            poss = srt if whole else pend[srt]
            for a, b, buf in zip(starts, cuts + [len(srt)], ss[starts].tolist()):
                pos = poss[a:b]
                g, k, off = self.locate(buf)
                if g.outs is None:
                    singles.extend(pos.tolist())
                    continue
                r = _phys_rows(g, lows[a:b], off)
                e = where.get((g, k))
                if e is None:
                    where[g, k] = len(pieces)
                    pieces.append(g.outs[k])
                    rows.append(r)
                    places.append(pos)
                else:
                    rows[e] = np.concatenate((rows[e], r))
                    places[e] = np.concatenate((places[e], pos))
        if singles:
            vals = [self.value(int(col[i])) for i in singles]
            pieces.append(_call(_CAT, (vals, 0)) if f else _call(_STACK, (vals, 0)))
            rows.append(_arange(len(singles)))
            places.append(np.array(singles, dtype=np.int64))
        if len(pieces) == 1 and len(places[0]) == n and _all(places[0] == _arange(n)):
            return _take(pieces[0], _expand(rows[0], f))
        return _gather(pieces, [_expand(r, f) for r in rows], [_expand(q, f) for q in places],
                       n * (f or 1))


# ------------------------------------------------------------------------------ gathering
_RANGES: dict = {}
_ROWS_KEY = object()  # the op of a rows group's signature (see record_rows)
_FULL = slice(None)
_GRAD_KINDS = graph._FLOAT_KINDS  # the kinds of values that carry gradients (bfloat16: "V")


def _order(C, one_src, locs):
    """The order to run a group's calls in (None: as recorded). An argument read from one
    buffer (``locs[j]``: the buffer, the rows in call order, and whether they are known to be
    consecutive and ascending) but not in the buffer's row order: by its rows, so it is taken
    as a slice (and the results keep the layout of that buffer: the groups after read
    neighbouring rows in turn). Else, when no argument is read
    from one buffer: by source buffer of the argument read from the most sources, then by
    row, so that argument is gathered as its sources one after another (slices or whole
    buffers, no reordering). An argument already read in order is never reordered for
    another: that would only move the gather from one argument to the other."""
    single = False
    for loc in locs:
        if loc is None:
            continue
        single = True
        rows = loc[1]
        if not loc[2] and len(rows) > 1 and not _all(rows[1:] > rows[:-1]):
            return rows.argsort(kind="stable")
    if single:
        return None
    best, most = None, 0
    for j, one in enumerate(one_src):
        if one:
            continue
        s = C[j] >> _ROW_BITS
        k = np.count_nonzero(s[1:] != s[:-1])
        if k > most:
            best, most = j, k
    if best is None:
        return None
    col = C[best]
    if _all(col[1:] >= col[:-1]):
        return None
    return col.argsort(kind="stable")


def _expand(rows, f):
    """The buffer rows of values at ``rows`` of a flat buffer with ``f`` rows a value."""
    if f <= 1:
        return rows
    return (rows[:, None] * f + _arange(f)).reshape(-1)


def _take_rows(b):  # pragma: no cover - a marker: rows groups run through run_rows
    return None


def _arange(n):
    r = _RANGES.get(n)
    if r is None:
        r = _RANGES[n] = np.arange(n, dtype=np.int64)
    return r


def _index(rows, like):
    """An int64 index tensor of ``rows`` (an int64 array) on the device of ``like``."""
    d = _unwrap(like)
    if d.__class__ is not _ndarray:
        import cupy

        with d.device:
            rows = cupy.asarray(rows)
    return _wrap(rows)


def _call(op, bound):
    return get_recorder()(op, bound)


def _take(B, rows, ordered=False):
    """Rows ``rows`` (an int64 array) of ``B``: B itself or a gather. ``ordered``: the rows
    are known to be consecutive and ascending."""
    n = len(rows)
    if n == _unwrap(B).shape[0] and rows[0] == 0 and rows[-1] == n - 1 and (
            ordered or n <= 2 or _all(rows == _arange(n))):
        return B
    # (a part of B, contiguous or not, as a gather: its backward is rows that the engine
    # gathers with every other read of B, then adds in once; a slice's backward would be a
    # zero-filled copy of B per read)
    return _gather((B,), (rows,), None, n)


class _GatherOp:
    """What the autograd graph reads of a multi-source gather (see ``_gather``)."""

    name = "autobatch_gather"
    Args = tuple


class _GatherEntry:
    """The derivative-table entry of ``_gather``: each source gets the gradient rows of its
    places, as rows (``engine._Rows``) that the engine sums with the source's other reads and
    makes dense once; with ``create_graph``, as recorded ops."""

    save = frozenset()
    save_for = None
    save_out = False
    node_cls = None
    release = None
    outputs = None

    def for_complex(self, op):
        return self

    @staticmethod
    def vjp(c, g):
        _, rows, places = c.args
        grads = []
        if not _grad_on():
            d = _unwrap(g)
            cpu = d.__class__ is _ndarray
            for (shape, _), r, q in zip(c.meta[0], rows, places):
                v = d[q] if q.__class__ is slice or cpu else d[_unwrap(_index(q, g))]
                if cpu and 2 * len(r) >= shape[0] and _distinct(r):
                    # most of the piece's rows, each once: its dense gradient at once (all of
                    # them: every row is written, no zero fill)
                    z = (np.empty if len(r) == shape[0] else np.zeros)(shape, dtype=d.dtype)
                    z[r] = v
                    grads.append(_wrap(z))
                else:  # a few rows (or rows read twice): summed with its other reads
                    grads.append(engine._Rows(shape, 0, _index(r, g), _wrap(v)))
        else:  # create_graph: the same, recorded
            for (shape, _), r, q in zip(c.meta[0], rows, places):
                v = _call(_SLICE, (g, 0, q.start, q.stop, 1)) if q.__class__ is slice else \
                    _call(_INDEX_SELECT, (g, 0, _index(q, g)))
                grads.append(_call(_INDEX_ADD, (_zeros(shape, g), 0, _index(r, g), v, 1)))
        return grads, None, None


def _distinct(rows):
    """No row twice in ``rows`` (an int64 array)."""
    return len(rows) < 2 or bool(_all(rows[1:] > rows[:-1])) or np.bincount(rows).max() <= 1


_GATHER_OP = _GatherOp()
_GATHER_ENTRY = _GatherEntry()


def _zeros(shape, like):
    d = _unwrap(like)
    if d.__class__ is _ndarray:
        return _wrap(np.zeros(shape, dtype=d.dtype))
    import cupy

    with d.device:
        return _wrap(cupy.zeros(shape, dtype=d.dtype))


def _gather(pieces, rows, places, total):
    """One tensor of ``total`` rows whose rows ``places[i]`` are rows ``rows[i]`` of
    ``pieces[i]`` (int64 arrays; ``places`` None: one piece, every row in order): one node in
    the graph, whose backward hands each piece its rows of the gradient (no concatenation of
    the sources, no zero-filled copy per read). Consecutive places are kept as a slice: the
    rows are taken straight into it, and backward reads a view of the gradient."""
    d0 = _unwrap(pieces[0])
    if places is None:
        places = (slice(0, total),)
    else:
        places = [_span(q) for q in places]
    if d0.__class__ is _ndarray:
        if len(pieces) == 1 and places[0].__class__ is slice:  # one piece, rows in order
            t = _wrap(d0.take(rows[0], 0))
        else:
            out = np.empty((total,) + d0.shape[1:], dtype=d0.dtype)
            for P, r, q in zip(pieces, rows, places):
                if q.__class__ is slice:  # (no temporary; the rows are in range by making)
                    _unwrap(P).take(r, 0, out=out[q], mode="clip")
                else:
                    out[q] = _unwrap(P).take(r, 0)
            t = _wrap(out)
    else:  # CUDA: the row numbers on the device
        import cupy

        with d0.device:
            if len(pieces) == 1 and places[0].__class__ is slice:
                t = _wrap(d0.take(cupy.asarray(rows[0]), 0))
            else:
                out = cupy.empty((total,) + d0.shape[1:], dtype=d0.dtype)
                for P, r, q in zip(pieces, rows, places):
                    out[q if q.__class__ is slice else cupy.asarray(q)] = \
                        _unwrap(P)[cupy.asarray(r)]
                t = _wrap(out)
    if _grad_on() and d0.dtype.kind in "fcV" and any(P._requires_grad for P in pieces):
        graph.attach(_GATHER_OP, _GATHER_ENTRY, (list(pieces), rows, places), t)
        made = getattr(_local, "made", None)
        if made is not None:
            made.append(t.grad_fn)
    return t


def _span(q):
    """Places ``q`` (an int64 array) as a slice when they are consecutive and in order."""
    n = len(q)
    if not n:
        return q
    a = int(q[0])
    if int(q[-1]) - a == n - 1 and (n == 1 or _all(q[1:] > q[:-1])):
        return slice(a, a + n)
    return q


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
    return _unwrap(t).dtype  # an _Unready answers it for a pending tensor


def _dev(t):
    d = _unwrap(t)
    if isinstance(d, _Unready):
        return d.dev
    return None if d.__class__ is _ndarray else d.device.id


def _out_key(o):
    d = _unwrap(o)
    return (_type_of(d), d.dtype.kind in _GRAD_KINDS)


def _placeholder(a, eye=False):
    """The stand-in of argument ``a`` in a trial call (see ``_State.infer``); ``eye``: square
    matrices of floats (row-major) are identities."""
    c = a.__class__
    if c is _Pending:
        u = a._t
        if eye and _square(a):
            n = u.shape[-1]
            d = _fill(u.shape, u.dtype, u.dev, None, 0)
            d.reshape(-1, n * n)[:, ::n + 1] = 1  # every matrix's diagonal (a fresh array)
            return _wrap(d)
        return _wrap(_fill(u.shape, u.dtype, u.dev, u.layout))
    if (c is list or c is tuple) and any(b.__class__ is _Pending for b in a):
        return c(_placeholder(b, eye) for b in a)
    return a


def _square(a):
    """Is ``a`` (or a value in the list ``a``) a pending row-major square matrix (or stack of
    them) of floats?"""
    c = a.__class__
    if c is list or c is tuple:
        return any(_square(b) for b in a)
    if c is not _Pending:
        return False
    u = a._t
    sh = u.shape
    return u.layout is None and len(sh) >= 2 and sh[-1] == sh[-2] > 1 and u.dtype.kind in "fc"


def _fill(shape, dtype, dev, layout=None, value=None):
    """A placeholder array: ``value``, by default ones (zeros for integers), of ``shape``, with
    the strides ``layout`` when given (a view of a buffer that spans them)."""
    if dev is None:
        return _filled(np, shape, dtype, layout, value)
    import cupy

    with cupy.cuda.Device(dev):
        return _filled(cupy, shape, dtype, layout, value)


def _filled(xp, shape, dtype, layout, value=None):
    if value is None:
        value = 1 if dtype.kind in "fc" else 0
    if layout is None or min(layout, default=0) < 0:
        return xp.full(shape, value, dtype=dtype)
    span = 1 + sum((n - 1) * st for n, st in zip(shape, layout)) // dtype.itemsize
    return xp.lib.stride_tricks.as_strided(xp.full(span, value, dtype=dtype), shape, layout)


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


def _reraise(exc, op, bound):
    """Raise what the deferred call ``op(*bound)`` would have raised when made: PyTorch's
    error where its arguments are the cause, else ``exc`` with its message naming the op (as
    the op's public function makes them), noted as deferred."""
    try:
        op.diagnose(bound, exc)
    except Exception as err:
        exc = err
    _note(exc, op, bound)
    raise exc


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
            if st.levels:
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


def _run_backward(roots, grads, retain_graph, create_graph, inputs=None, **kwargs):
    """The engine's backward, after the pending graph has run: the roots, the gradients handed
    in and the inputs asked about as the real tensors they have become."""
    with _outside():
        return _engine(_real(roots), _real(grads), retain_graph, create_graph,
                       inputs=None if inputs is None else _real(inputs), **kwargs)


def _real(ts):
    return [t._materialize() if t.__class__ is _Pending else t for t in ts]


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

    A decorator too, with or without the parentheses (``@autobatch``, ``@autobatch()``): each
    call of the function runs in a context of its own.

    Re-entrant (an inner ``autobatch()`` joins the outer one) and thread-local: only the thread
    that entered it defers ops. ``stats`` after the exit: ``groups`` run, ``calls`` deferred,
    and ``unbatched``: per op, the groups of several calls that ran one call at a time (the
    op has no batching rule, or its rule does not cover those arguments).
    """

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if fn is None:
            return self
        if not callable(fn):
            raise TypeError(f"autobatch() takes no arguments but a function to decorate "
                            f"(got {type(fn).__name__})")
        self.__init__()
        return self(fn)  # ``@autobatch``, as ``@autobatch()``

    def __init__(self, fn=None):
        self.state = None
        self.stats = None

    def __enter__(self):
        outer = getattr(_local, "state", None)
        if outer is not None and outer.active:
            return self
        inner = _live(get_recorder())
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
            elif issubclass(exc_type, (Exception, GeneratorExit)):
                # an error of the user's code (or a generator closed inside the context): the
                # values made before it keep theirs, as they would without the context; an
                # error of that run leaves them unrun and the user's error goes on
                try:
                    st.flush()
                except Exception:
                    pass
        finally:
            # contexts of different threads may end in any order: a recorder another thread's
            # context chains to stays, passing every call through (``flushing``); the one
            # installed now is replaced only if it is this context's
            st.active = False
            st.flushing = True
            if get_recorder() is st.record:
                set_recorder(_live(st.inner))
            engine.run_backward = self._prev_engine
            if self._gc:
                gc.enable()
            st.record = st.generic = None  # they close over the state: no cycle left behind
            st.outs_of = {}
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


def _live(rec):
    """``rec``, or, where it is the recorder of an ``autobatch()`` context that has ended, the
    first recorder down its chain that is not."""
    st = getattr(rec, "autobatch_state", None)
    while st is not None and not st.active:
        rec = st.inner
        st = getattr(rec, "autobatch_state", None)
    return rec


def flush(*tensors) -> None:
    """Run the pending graph of the active :func:`autobatch` context now (no-op outside);
    each pending tensor of ``tensors`` becomes an ordinary tensor holding its value (what the
    tensor layer asks before it reads or replaces a tensor's array itself: ``.data = ...``,
    ``t_()``, ``resize_()``)."""
    st = getattr(_local, "state", None)
    if st is not None and st.active:
        st.flush()
    for t in tensors:
        if t.__class__ is _Pending:
            t._materialize()
