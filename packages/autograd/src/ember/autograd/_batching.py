"""Batching rules of :func:`ember.autograd.autobatch`: how one registry op runs once for a
group of per-example calls that share a signature.

A rule receives a :class:`Batch`: the op, the number of examples ``n``, the arguments of the
batched call (``args``: per parameter, either the per-example tensors stacked along a new
leading dimension, or the one value every example passed: a shared tensor such as a weight, or a
non-tensor argument, which the signature makes equal), which of them are stacked (``stacked``),
and the per-example shapes of the inputs (``shapes``) and outputs (``out_shapes``). It returns
the batched result (a tensor, or a tuple of tensors, each with the examples along dimension 0)
computed with ordinary, recorded ember ops, so backward is batched too; or None when this group
is not one it can batch, and the group then runs one example at a time. The caller checks the
shape of what a rule returns, so a rule can never hand an example a wrongly shaped value.

The kinds of rule:

* elementwise: the op itself on the stacked inputs (inputs of lower rank are given leading
  ones after the batch dimension, so broadcasting lines up as it did per example);
* row-wise with a shared operand (``linear``, ``matmul``, ``embedding``, the fused RNN cells):
  the examples' rows concatenated into one matrix;
* ops with dimension arguments (reductions, ``cat``, ``stack``, slicing, views, ``gather``,
  ...): the op with every per-example dimension shifted past the batch dimension.
"""
from __future__ import annotations

import math

import ember.tensor as _et
from ember.tensor import Tensor
from ember.tensor.extension import OPS

__all__ = ["Batch", "RULES", "FLAT_RULES", "EAGER", "RANDOM", "ROWS", "reshape"]


class Batch:
    """One group's batched call, as a rule sees it."""

    __slots__ = ("op", "n", "args", "stacked", "shapes", "out_shapes", "call")

    def __init__(self, op, n, args, stacked, shapes, out_shapes, call):
        self.op, self.n, self.args, self.stacked = op, n, args, stacked
        self.shapes, self.out_shapes, self.call = shapes, out_shapes, call

    def run(self, *args):
        """The op itself on ``args`` (recorded as usual)."""
        return self.call(self.op, args)

    def do(self, name, *args):
        """Another registry op on ``args`` (recorded as usual)."""
        return self.call(OPS[name], args)

    def reshape(self, t, shape):
        """``t`` reshaped (a view when the layout allows it, else a copy)."""
        return reshape(self.call, t, shape)

    def stack_of(self, j):
        """Argument ``j`` with the examples along dimension 0 (a shared tensor expanded)."""
        a = self.args[j]
        if self.stacked[j]:
            return a
        return self.expand(a)

    def expand(self, t):
        s = tuple(t.shape)
        return self.do("expand", self.do("unsqueeze", t, 0), (self.n,) + s)

    def lift(self, j, rank):
        """Stacked argument ``j`` with ones inserted after the batch dimension, so that its
        per-example rank becomes ``rank`` (broadcasting then lines up per example)."""
        return _lifted(self, self.args[j], self.shapes[j], rank)


def reshape(call, t, shape):
    """``t`` reshaped through the recorder ``call`` (a view when the layout allows it, else a
    copy)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    if not t.is_contiguous():
        t = call(OPS["clone"], (t, None)) if "clone" in OPS else t.contiguous()
        if not t.is_contiguous():
            t = call(OPS["_ascontiguous"], (t,))
    return call(OPS["view"], (t, shape))


def _wrap(d, nd):
    d = int(d)
    if nd == 0 and d in (0, -1):
        return 0
    if not -nd <= d < nd:
        raise IndexError(f"dim {d} out of range for rank {nd}")
    return d + nd if d < 0 else d


# ---------------------------------------------------------------------------- elementwise
def elementwise(b: Batch):
    rank = max(len(s) for s in b.out_shapes)
    args = list(b.args)
    for j, st in enumerate(b.stacked):
        if st is True:
            args[j] = b.lift(j, rank)
        elif st:  # a list argument: not elementwise
            return None
    return b.run(*args)


# ---------------------------------------------------------------------------- row-wise
def _rows(b: Batch, j):
    """Stacked argument ``j`` as a matrix of rows (all leading dims flattened)."""
    s = b.shapes[j]
    return b.reshape(b.args[j], (-1, s[-1]) if len(s) != 1 else (b.n, s[-1])) \
        if len(s) else None


def linear(b: Batch):
    s = b.shapes[0]
    if not s:
        return None
    if b.stacked[1] or b.stacked[2]:
        return _own_linear(b, s)
    if not b.stacked[0]:
        return None
    x = b.args[0] if len(s) == 1 else b.reshape(b.args[0], (-1, s[-1]))
    out = b.run(x, b.args[1], b.args[2])
    return b.reshape(out, (b.n,) + tuple(b.out_shapes[0]))


def _own_linear(b: Batch, s):
    """``linear`` with each example's own weight or bias (a chunk of a packed projection made
    per call, as attention's ``in_proj_weight``): one batched ``x @ w^T`` and a bias added
    per example."""
    w, bias = b.args[1], b.args[2]
    if len(b.shapes[1]) != 2:
        return None
    x = b.reshape(b.stack_of(0), (b.n, -1, s[-1]))
    wt = b.do("permute", w, (0, 2, 1)) if b.stacked[1] else b.do("permute", w, (1, 0))
    out = b.do("matmul", x, wt)
    if bias is not None:
        out = b.do("add", out, b.reshape(bias, (b.n, 1, -1)) if b.stacked[2] else bias)
    return b.reshape(out, (b.n,) + tuple(b.out_shapes[0]))


def matmul(b: Batch):
    sa, sb = b.shapes[0], b.shapes[1]
    a, v = b.args[0], b.args[1]
    if b.stacked[0] and not b.stacked[1]:
        if len(sb) == 2 and len(sa) >= 1:
            x = a if len(sa) == 1 else b.reshape(a, (-1, sa[-1]))
            return b.reshape(b.run(x, v), (b.n,) + tuple(b.out_shapes[0]))
        if len(sb) == 1 and len(sa) >= 1:  # rows times one shared vector: (n, ..., H) @ (H,)
            return b.run(a, v)
        if len(sb) >= 3 and len(sa) >= 2:  # a shared stack of matrices broadcasts as it did
            return b.run(_lifted(b, a, sa, len(sb)), v)
        if len(sb) >= 3 and len(sa) == 1:  # each example's vector as a row of every matrix
            a = b.reshape(a, (b.n,) + (1,) * (len(sb) - 1) + tuple(sa))
            return b.reshape(b.run(a, v), (b.n,) + tuple(b.out_shapes[0]))
        return None
    if not b.stacked[0] and b.stacked[1]:
        # one shared matrix or vector times each example's matrices: (L,) @ (n, ..., L, H)
        if len(sa) in (1, 2) and len(sb) >= 2:
            return b.run(a, v)
        if len(sa) >= 2 and len(sb) == 1:  # a shared matrix (or stack) times each example's
            v = b.reshape(v, (b.n,) + (1,) * (len(sa) - 2) + tuple(sb) + (1,))  # column
            return b.reshape(b.run(a, v), (b.n,) + tuple(b.out_shapes[0]))
        return b.run(a, _lifted(b, v, sb, len(sa))) if len(sa) >= 3 and len(sb) >= 2 else None
    if not sa or not sb:
        return None
    # each example's own operands: a vector as a row (on the left) or a column (on the right),
    # then both lifted to one rank, so that their own batch dims broadcast as per example
    rank = max(len(sa), len(sb), 2)
    a = _lifted(b, a, sa, rank) if len(sa) >= 2 else \
        b.reshape(a, (b.n,) + (1,) * (rank - 1) + tuple(sa))
    v = _lifted(b, v, sb, rank) if len(sb) >= 2 else \
        b.reshape(v, (b.n,) + (1,) * (rank - 2) + tuple(sb) + (1,))
    return b.reshape(b.run(a, v), (b.n,) + tuple(b.out_shapes[0]))


def embedding(b: Batch):
    # embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)
    if b.stacked[0] or not b.stacked[1] or b.args[3]:
        return None  # per-table frequencies would differ from per-example ones
    return b.run(*b.args)


def fused_cell(b: Batch):
    """``lstm_cell_fused`` / ``gru_cell_fused``: rows in, rows out."""
    if any(len(s) != 2 for s in b.shapes if s is not None):
        return None
    args = [b.reshape(b.stack_of(j), (-1, b.shapes[j][-1])) for j in range(len(b.args))]
    out = b.run(*args)
    if isinstance(out, Tensor):
        return b.reshape(out, (b.n,) + tuple(b.out_shapes[0]))
    return tuple(b.reshape(o, (b.n,) + tuple(s)) for o, s in zip(out, b.out_shapes))


# ---------------------------------------------------------------------------- dims
def _shift_dims(dim, nd):
    if isinstance(dim, (tuple, list)):
        return tuple(_wrap(d, nd) + 1 for d in dim)
    return _wrap(dim, nd) + 1


def reduction(param="dim", none="all"):
    """An op reducing (or scanning) over ``param`` of its first input; ``dim=None`` means all
    dims (``none="all"``) or cannot be batched (``none=None``)."""

    def rule(b: Batch):
        if not b.stacked[0] or any(b.stacked[1:]):
            return None
        i = b.op.index(param)
        nd = len(b.shapes[0])
        args = list(b.args)
        dim = args[i]
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            if none != "all":
                return None
            # over all of each example: its values flattened, one dim (some ops, as ``prod``,
            # take one dim only), the result shaped as the example's (``keepdim``'s ones)
            args[0] = b.reshape(args[0], (b.n, -1))
            args[i] = 1
            return b.reshape(b.run(*args), (b.n,) + tuple(b.out_shapes[0]))
        args[i] = _shift_dims(dim, nd)
        return b.run(*args)

    return rule


def dim_op(params=("dim",), extra=0, stack_all=True):
    """An op whose ``params`` are per-example dims of its first input (of rank + ``extra``);
    every tensor argument is stacked (shared ones are expanded)."""

    def rule(b: Batch):
        nd = len(b.shapes[0]) + extra
        args = list(b.args)
        for p in params:
            i = b.op.index(p)
            if args[i] is None:
                return None
            args[i] = _shift_dims(args[i], nd)
        for j, st in enumerate(b.stacked):
            if st is True:
                continue
            if st:
                return None
            if isinstance(args[j], Tensor):
                if not stack_all:
                    continue
                args[j] = b.expand(args[j])
        return b.run(*args)

    return rule


def shared_index_dim_op(b: Batch):
    """``index_select``: stacked input, shared index; stacked input and each example's own
    index (of one length: a reflection padding's, made per call), a ``gather`` along the dim;
    or (dim 0) a shared table looked up at stacked indices."""
    dim = b.args[1]
    if b.stacked[0] and not b.stacked[2]:
        return b.run(b.args[0], _shift_dims(dim, len(b.shapes[0])), b.args[2])
    s = b.shapes[0]
    if b.stacked[0] and b.stacked[2] and s and len(b.shapes[2]) == 1:
        d, k = _wrap(dim, len(s)), b.shapes[2][0]
        idx = b.reshape(b.args[2], (b.n,) + (1,) * d + (k,) + (1,) * (len(s) - d - 1))
        idx = b.do("expand", idx, (b.n,) + tuple(s[:d]) + (k,) + tuple(s[d + 1:]))
        return b.do("gather", b.args[0], d + 1, idx, False)
    if not b.stacked[0] and b.stacked[2] and s and len(b.shapes[2]) == 1:
        # a shared input at every example's index: one index_select at all of them, the
        # examples' blocks then moved in front
        d, k = _wrap(dim, len(s)), b.shapes[2][0]
        out = b.run(b.args[0], d, b.reshape(b.args[2], (-1,)))
        if d:
            out = b.reshape(out, tuple(s[:d]) + (b.n, k) + tuple(s[d + 1:]))
            out = b.do("permute", out, (d,) + tuple(range(d)) + tuple(range(d + 1, len(s) + 1)))
        return b.reshape(out, (b.n,) + tuple(b.out_shapes[0]))
    return None


def index_dim_op(b: Batch):
    """``index_add`` / ``index_copy`` / ``index_fill`` (out of place): shared index; or each
    example's own 1-d int64 index (of one length), a ``scatter_add`` / ``scatter`` along the
    dim at the index expanded over the other dims (index_fill's negative indices counted
    from the end first; an index out of range makes scatter raise, and the examples then run
    one at a time, raising the op's own error)."""
    if b.stacked[0] and b.stacked[2]:
        return _own_index_dim_op(b)
    if not b.stacked[0] or b.stacked[2]:
        return None
    args = list(b.args)
    args[1] = _shift_dims(args[1], len(b.shapes[0]))
    if b.op.name == "index_fill":
        if b.stacked[3]:
            return None
    elif not b.stacked[3]:
        args[3] = b.expand(args[3])
    return b.run(*args)


def _own_index_dim_op(b: Batch):
    s, name = b.shapes[0], b.op.name
    idx = b.args[2]
    if not s or len(b.shapes[2]) != 1 or idx.dtype != _et.int64:
        return None
    d, k = _wrap(b.args[1], len(s)), b.shapes[2][0]
    if name == "index_fill":
        if b.stacked[3] or isinstance(b.args[3], Tensor):
            return None
        idx = b.do("where", b.do("lt", idx, 0), b.do("add", idx, s[d]), idx)
    idx = b.reshape(idx, (b.n,) + (1,) * d + (k,) + (1,) * (len(s) - d - 1))
    idx = b.do("expand", idx, (b.n,) + tuple(s[:d]) + (k,) + tuple(s[d + 1:]))
    if name == "index_fill":
        return b.do("scatter", b.args[0], d + 1, idx, None, b.args[3], None)
    src = b.stack_of(3)
    if name == "index_copy":
        return b.do("scatter", b.args[0], d + 1, idx, src, None, None)
    alpha = b.args[4]
    if alpha != 1:
        src = b.do("mul", src, alpha)
    return b.do("scatter_add", b.args[0], d + 1, idx, src)


def cat(b: Batch):
    ts, dim = b.args[0], b.args[1]
    shapes = b.shapes[0]
    nds = [len(s) for s in shapes if not (len(s) == 1 and s[0] == 0)]
    if not nds or any(d != nds[0] for d in nds):
        return None
    parts = [t if st else b.expand(t) for t, st in zip(ts, b.stacked[0])]
    return b.run(parts, _wrap(dim, nds[0]) + 1)


def stack(b: Batch):
    ts, dim = b.args[0], b.args[1]
    nd = len(b.shapes[0][0]) + 1
    parts = [t if st else b.expand(t) for t, st in zip(ts, b.stacked[0])]
    return b.run(parts, _wrap(dim, nd) + 1)


def view(b: Batch):
    return b.reshape(b.args[0], (b.n,) + tuple(b.out_shapes[0]))


def permute(b: Batch):
    nd = len(b.shapes[0])
    return b.run(b.args[0], (0,) + tuple(_wrap(d, nd) + 1 for d in b.args[1]))


def expand(b: Batch):
    out = tuple(b.out_shapes[0])
    x = b.lift(0, len(out))
    return b.run(x, (b.n,) + out)


def unsqueeze(b: Batch):
    return b.run(b.args[0], _wrap(b.args[1], len(b.shapes[0]) + 1) + 1)


def squeeze(b: Batch):
    dims = b.args[1]
    nd = len(b.shapes[0])
    if dims is None or (isinstance(dims, (tuple, list)) and not dims):
        dims = tuple(range(nd))
    return b.run(b.args[0], _shift_dims(dims, nd))


def last_dims(b: Batch):
    """Ops over the trailing dims only (``tril``, ``triu``): the op as is."""
    if any(b.stacked[1:]) or len(b.shapes[0]) < 2:
        return None
    return b.run(*b.args)


_INDEX_DTYPES = (_et.int64, _et.int32, _et.int16, _et.int8)  # (uint8 indexes as a mask)


def _plain_index(idx):
    return idx is None or idx is Ellipsis or isinstance(idx, slice) or \
        (isinstance(idx, int) and not isinstance(idx, bool))


def getitem(b: Batch):
    x, idx = b.args
    items = idx if isinstance(idx, tuple) else (idx,)
    if b.stacked[0] and not b.stacked[1] and not isinstance(b.stacked[1], list):
        tens = [k for k, it in enumerate(items) if isinstance(it, Tensor)]
        if any(isinstance(it, Tensor) and it.dtype.is_floating_point for it in items):
            return None
        if any(not (isinstance(it, Tensor) or _plain_index(it)) for it in items):
            return None
        if tens:  # shared integer index tensors: their dims must stay where they were
            adv = [k for k, it in enumerate(items)
                   if isinstance(it, Tensor) or (isinstance(it, int) and it is not None
                                                 and it is not Ellipsis)]
            if adv != list(range(adv[0], adv[-1] + 1)) or Ellipsis in items[:adv[0]]:
                return None
            if any(it is None for it in items[adv[0]:adv[-1] + 1]):
                return None
        return b.run(x, (slice(None),) + tuple(items))
    if b.stacked[1] is True and isinstance(idx, Tensor) and idx.dtype in _INDEX_DTYPES:
        if not b.stacked[0]:
            return b.run(x, idx)  # a shared table at stacked indices
        return _own_rows(b, x, b.shapes[0], idx, b.shapes[1])
    if b.stacked[0] is True and isinstance(b.stacked[1], list) and any(b.stacked[1]) and \
            all(isinstance(it, Tensor) and it.dtype in _INDEX_DTYPES for it in items):
        return _own_entries(b, x, b.shapes[0], items)
    return None


def setitem(b: Batch):
    """``x[index] = value`` (the out-of-place ``setitem``) of each example's ``x`` at one plain
    index (ints, slices, None, Ellipsis) with one shared value: the batched buffer at the
    index with a full slice in front (the value broadcasts over the examples)."""
    x, idx, value = b.args
    items = idx if isinstance(idx, tuple) else (idx,)
    if b.stacked[0] is not True or b.stacked[1] or b.stacked[2] or \
            not all(_plain_index(it) for it in items):
        return None
    return b.run(x, (slice(None),) + tuple(items), value)


def _own_entries(b: Batch, x, s, items):
    """``x[i, j, ...]`` with index tensors of one shape, some each example's own: the
    example's first dims flattened, indexed at ``(i * s1 + j) * s2 + ...`` (an index out of its
    dim's range makes the flat index out of range, so the gather raises)."""
    ks = [tuple(q) for q, st in zip(b.shapes[1], b.stacked[1]) if st]
    k = ks[0]
    if len(s) < len(items) or any(q != k for q in ks) or \
            any(tuple(it.shape) != k for it, st in zip(items, b.stacked[1]) if not st):
        return None
    size = math.prod(s[:len(items)])
    flat = bad = None
    for d, (it, st) in enumerate(zip(items, b.stacked[1])):
        if not st:
            it = b.expand(it)
        it = b.do("where", b.do("lt", it, 0), b.do("add", it, s[d]), it)
        out = b.do("logical_or", b.do("lt", it, 0), b.do("ge", it, s[d]))
        bad = out if bad is None else b.do("logical_or", bad, out)
        flat = it if flat is None else b.do("add", b.do("mul", flat, s[d]), it)
    flat = b.do("where", bad, size, flat)
    rows = b.reshape(x, (b.n, size) + tuple(s[len(items):]))
    return _own_rows(b, rows, (size,) + tuple(s[len(items):]), flat, k)


def _own_rows(b: Batch, x, s, idx, k):
    """``x[idx]`` with each example's own integer index tensor: a ``gather`` along the
    example's first dim (negative indices counted from its end; one out of range makes the
    gather raise, and the group then runs call by call, raising the example's own error)."""
    if not s:
        return None
    idx = b.do("where", b.do("lt", idx, 0), b.do("add", idx, s[0]), idx)
    size = math.prod(k)
    rows = b.reshape(idx, (b.n, size) + (1,) * (len(s) - 1))
    rows = b.do("expand", rows, (b.n, size) + tuple(s[1:]))
    out = b.do("gather", x, 1, rows, False)
    return b.reshape(out, (b.n,) + tuple(k) + tuple(s[1:]))


def split_with_sizes(b: Batch):
    return b.run(b.args[0], b.args[1], _wrap(b.args[2], len(b.shapes[0])) + 1)


def slice_view(b: Batch):
    return b.run(b.args[0], _wrap(b.args[1], len(b.shapes[0])) + 1, *b.args[2:])


def select(b: Batch):
    return b.run(b.args[0], _wrap(b.args[1], len(b.shapes[0])) + 1, b.args[2])


def unbind(b: Batch):
    return b.run(b.args[0], _wrap(b.args[1], len(b.shapes[0])) + 1)


def diagonal(b: Batch):
    nd = len(b.shapes[0])
    return b.run(b.args[0], b.args[1], _wrap(b.args[2], nd) + 1, _wrap(b.args[3], nd) + 1)


def cross_dim(b: Batch):
    args = [b.stack_of(0), b.stack_of(1), b.args[2]]
    if args[2] is None:
        return None
    args[2] = _wrap(args[2], len(b.shapes[0])) + 1
    return b.run(*args)


def roll(b: Batch):
    if b.args[2] is None or (isinstance(b.args[2], (tuple, list)) and not b.args[2]):
        return None
    return b.run(b.args[0], b.args[1], _shift_dims(b.args[2], len(b.shapes[0])))


def _sizes(v):
    """A var-positional tuple of ints, given spread out or as one list or tuple."""
    return tuple(v[0]) if len(v) == 1 and isinstance(v[0], (list, tuple)) else tuple(v)


def flip(b: Batch):
    """``flip(input, *dims)`` (or ``dims=`` by keyword): the dims shifted past the batch
    dim."""
    kw = b.args[2]
    if set(kw) - {"dims"}:
        return None
    dims = kw.get("dims", b.args[1])
    dims = _sizes(dims if isinstance(dims, (list, tuple)) else (dims,))
    return b.run(b.args[0], _shift_dims(dims, len(b.shapes[0])), {})


def repeat(b: Batch):
    """``repeat(input, *sizes)``: each example's value lifted to the rank of ``sizes``, which
    gets a 1 for the batch dim."""
    sizes = _sizes(b.args[1])
    if not b.stacked[0] or len(sizes) < len(b.shapes[0]):
        return None
    return b.run(b.lift(0, len(sizes)), (1,) + sizes)


def outer(b: Batch):
    """``outer(u, v)`` of each example's vectors: ``u[:, None] * v[None, :]`` over the batch."""
    u, v = b.stack_of(0), b.stack_of(1)
    return b.do("mul", b.do("unsqueeze", u, 2), b.do("unsqueeze", v, 1))


def kron(b: Batch):
    """``kron(x, y)`` of each example's operands: the product of their views with the dims
    interleaved with ones behind the batch dim (a shared operand's batch dim a one), reshaped."""
    sa, sb = tuple(b.shapes[0]), tuple(b.shapes[1])
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb

    def spread(j, dims):
        return b.reshape(b.args[j], [b.n if b.stacked[j] else 1] + dims)

    r = b.do("mul", spread(0, [s for d in pa for s in (d, 1)]),
             spread(1, [s for d in pb for s in (1, d)]))
    return b.reshape(r, [b.n] + [x * y for x, y in zip(pa, pb)])


def repeat_interleave(b: Batch):
    """``repeat_interleave(x, k, dim)`` of each example's tensor by an int count: the same
    repeat one dim further in (the batch dim in front); the flattened form runs unbatched."""
    reps, dim = b.args[1], b.args[2]
    nd = len(b.shapes[0])
    if reps.__class__ is not int or dim is None or not nd:
        return None
    return b.do("repeat_interleave", b.stack_of(0), reps, dim % nd + 1, None)


def trace(b: Batch):
    """``trace`` of each example's matrix: the sum of its diagonal."""
    if len(b.shapes[0]) != 2:
        return None
    return b.do("sum", b.do("diagonal", b.args[0], 0, 1, 2), (1,), False, None)


def einsum(b: Batch):
    """``einsum``: a new letter for the batch dim, in front of the subscripts of every stacked
    operand and of the output (shared operands keep theirs); an implicit output written out."""
    eq, ops = b.args[0].replace(" ", ""), b.args[1]
    if "->" not in eq:  # implicit: the labels met once, in alphabetical (ASCII) order
        if "." in eq:
            return None
        eq += "->" + "".join(sorted(c for c in set(eq) if c != "," and eq.count(c) == 1))
    lhs, rhs = eq.split("->")
    terms = lhs.split(",")
    free = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    if len(terms) != len(ops) or not free:
        return None
    z = free[0]
    terms = [z + t if st else t for t, st in zip(terms, b.stacked[1])]
    return b.run(",".join(terms) + "->" + z + rhs, tuple(ops))


def argreduce(b: Batch):
    """``argmax`` / ``argmin``: ``dim=None`` is an index into the flattened example."""
    x, dim, keepdim = b.args[0], b.args[1], b.args[2]
    nd = len(b.shapes[0])
    if dim is not None:
        return b.run(x, _wrap(dim, nd) + 1, keepdim)
    out = b.run(b.reshape(x, (b.n, -1)), 1, False)
    return b.reshape(out, (b.n,) + tuple(b.out_shapes[0]))


def cross_entropy(b: Batch):
    """``cross_entropy_loss`` with class-index targets: every example's rows in one call
    without reduction, then each example's own reduction (a mean over its counted targets)."""
    # cross_entropy_loss(input, target, weight, reduction, ignore_index, label_smoothing)
    red = b.args[3]
    if not b.stacked[0] or b.stacked[2] or red not in (0, 1, 2) or \
            (red == 1 and b.args[2] is not None):
        return None
    sx, st = b.shapes[0], b.shapes[1]
    if not sx or len(st) != max(len(sx) - 1, 0):
        return None
    t = b.stack_of(1)
    x = b.args[0]
    if len(sx) > 1:  # (N, C, d...) per example: the examples' N rows one after another
        x = b.reshape(x, (-1,) + tuple(sx[1:]))
        t = b.reshape(t, (-1,) + tuple(st[1:]))
    loss = b.reshape(b.run(x, t, b.args[2], 0, b.args[4], b.args[5]), (b.n,) + tuple(st))
    if red == 0:
        return loss
    dims = tuple(range(1, len(st) + 1))
    total = b.do("sum", loss, dims, False, None) if dims else loss
    if red == 2:
        return total
    count = b.do("ne", b.stack_of(1), b.args[4])
    if dims:
        count = b.do("sum", count, dims, False, None)
    return b.do("div", total, count)


def batch_rows(b: Batch):
    """Ops that treat each row of their first argument on its own (a convolution or pooling
    over a batch of images; im2col, col2im; layer_norm, over its leading dims), or its trailing
    dims only (a complex value's pair, a matrix factorization or inverse), or its elements
    against shared values (``bucketize``'s boundaries, ``isin``'s test elements): the op as it
    is on the examples' values, flat or stacked, every other tensor argument shared (broadcast
    over the batch as over an example's own batch dims)."""
    if b.stacked[0] is not True or any(b.stacked[1:]):
        return None
    return b.run(*b.args)


def _lifted(b: Batch, t, s, rank):
    """Stacked ``t`` (per-example shape ``s``) with ones after the batch dim up to ``rank``."""
    s = tuple(s)
    return t if len(s) >= rank else b.reshape(t, (b.n,) + (1,) * (rank - len(s)) + s)


def _matrix_pair(b: Batch, A, sa, B, sb):
    """Both operands of a batched solve lifted to one per-example rank, so that their own
    batch dims broadcast as they did per example."""
    rank = max(len(sa), len(sb))
    if b.stacked[0]:
        A = _lifted(b, A, sa, rank)
    if b.stacked[1]:
        B = _lifted(b, B, sb, rank)
    return A, B


def solve(b: Batch):
    """``linalg_solve(A, B, left)``. ``B`` is one vector per example where its rank is one,
    or where it is ``A``'s batch shape and one more dim (PyTorch's rule): the batched call
    solves for it as a column, whatever the stacked shapes would make of it."""
    sa, sb = tuple(b.shapes[0]), tuple(b.shapes[1])
    if len(sa) < 2 or not sb:
        return None
    vec = len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])
    A, B, left = b.args[0], b.args[1], b.args[2]
    if vec:
        if not left:
            return None
        B, sb = b.do("unsqueeze", B, B.dim()), sb + (1,)  # (the registry's dims are >= 0)
    A, B = _matrix_pair(b, A, sa, B, sb)
    out = b.run(A, B, left)
    return b.do("squeeze", out, (out.dim() - 1,)) if vec else out


def solve_triangular(b: Batch):
    """``linalg_solve_triangular(A, B, upper, left, unitriangular)``: matrices only."""
    sa, sb = b.shapes[0], b.shapes[1]
    if len(sa) < 2 or len(sb) < 2:
        return None
    A, B = _matrix_pair(b, b.args[0], sa, b.args[1], sb)
    return b.run(A, B, *b.args[2:])


def tensordot(b: Batch):
    """``tensordot(a, b, dims)`` written as ``einsum``: a letter per dim, contracted pairs
    sharing one, and a new letter for the batch dim on the stacked operands and the result."""
    sa, sb, dims = b.shapes[0], b.shapes[1], b.args[2]
    if isinstance(dims, int):
        ca, cb = list(range(len(sa) - dims, len(sa))), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        ca = [_wrap(d, len(sa)) for d in _sizes((dims[0],))]
        cb = [_wrap(d, len(sb)) for d in _sizes((dims[1],))]
    else:
        return None
    letters = iter("abcdefghijklmnopqrstuvwxyABCDEFGHIJKLMNOPQRSTUVWXY")
    ta = [next(letters) for _ in sa]
    tb = [next(letters) for _ in sb]
    for i, j in zip(ca, cb):
        tb[j] = ta[i]
    out = [t for i, t in enumerate(ta) if i not in ca] + \
        [t for j, t in enumerate(tb) if j not in cb]
    z = "z"
    eq = (z if b.stacked[0] else "") + "".join(ta) + "," + \
        (z if b.stacked[1] else "") + "".join(tb) + "->" + z + "".join(out)
    return b.do("einsum", eq, (b.args[0], b.args[1]))


def searchsorted(b: Batch):
    """``searchsorted``: one shared sorted row for every example's values, or each example's
    own sorted rows with leading dims matching its values' (both then stacked)."""
    if b.args[5] is not None or not b.stacked[1]:
        return None
    ss, sv = b.shapes[0], b.shapes[1]
    if b.stacked[0] and not (len(ss) == len(sv) >= 1 and ss[:-1] == sv[:-1]):
        return None
    if not b.stacked[0] and len(ss) != 1:
        return None
    return b.run(*b.args)


def median_all(b: Batch):
    """``median`` of a whole example: its lower median, as ``median_dim`` over its values."""
    x = b.reshape(b.args[0], (b.n, -1))
    return b.do("median_dim", x, 1, False)[0]


def diag(b: Batch):
    """``diag`` of each example's matrix (a copy of its diagonal); of a vector: not batched."""
    if len(b.shapes[0]) != 2:
        return None
    return b.do("clone", b.do("diagonal", b.args[0], b.args[1], 1, 2), None)


def nll_loss(b: Batch):
    """``nll_loss_forward`` (``F.nll_loss``) without class weights: every example's rows in
    one unreduced call, then each example's own reduction; its ``total_weight`` is its count
    of targets not ignored (0 for an unreduced loss over rows, as PyTorch's)."""
    # nll_loss_forward(input, target, weight, reduction, ignore_index) -> (output, total_weight)
    red, ignore = b.args[3], b.args[4]
    if not b.stacked[0] or b.args[2] is not None or red not in (0, 1, 2):
        return None
    sx, st = tuple(b.shapes[0]), tuple(b.shapes[1])
    if not sx or len(st) != len(sx) - 1:
        return None
    x, t = b.args[0], b.stack_of(1)
    if len(sx) > 1:  # (N, C, d...) per example: the examples' N rows one after another
        x = b.reshape(x, (-1,) + sx[1:])
        t = b.reshape(t, (-1,) + st[1:])
    loss = b.reshape(b.run(x, t, None, 0, ignore)[0], (b.n,) + st)
    dims = tuple(range(1, len(st) + 1))
    counted = b.do("ne", b.stack_of(1), ignore)
    if dims:
        counted = b.do("sum", counted, dims, False, None)
    total = b.do("_to_copy", counted, None, x.dtype)
    if red == 0:
        return loss, (b.do("mul", total, 0) if dims else total)
    out = b.do("sum", loss, dims, False, None) if dims else loss
    return (out if red == 2 else b.do("div", out, total)), total


# ---------------------------------------------------------------------------- the table
RULES: dict = {}

_UNARY = """abs acos acosh asin asinh atan atanh ceil cos cosh erf erfc erfinv exp exp2 expm1
floor frac isfinite isinf isnan log log10 log1p log2 logical_not bitwise_not neg reciprocal relu
round rsqrt sigmoid sign sin sinh sqrt square tan tanh trunc clone detach _to_copy _ascontiguous
_view_dtype silu gelu softplus elu hardsigmoid hardswish mish log_sigmoid angle conj
conj_physical real imag sgn signbit sinc digamma lgamma i0 logit nan_to_num isneginf isposinf
frexp poisson special_entr special_erfcx special_log_ndtr special_ndtr special_ndtri special_i0e
special_i1 special_i1e special_airy_ai special_bessel_j0 special_bessel_j1 special_bessel_y0
special_bessel_y1 special_modified_bessel_i0 special_modified_bessel_i1 special_modified_bessel_k0
special_modified_bessel_k1 special_scaled_modified_bessel_k0 special_scaled_modified_bessel_k1
special_spherical_bessel_j0""".split()
_BINARY = """add sub mul div pow maximum minimum fmax fmin fmod remainder atan2 hypot floor_divide
div_floor div_trunc eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or
bitwise_xor isclose where lerp clamp masked_fill sigmoid_backward tanh_backward threshold_backward
silu_backward gelu_backward softplus_backward hardsigmoid_backward hardswish_backward mish_backward
log_sigmoid_backward xlogy copysign logaddexp nextafter heaviside complex logaddexp2 igamma
igammac gcd lcm bitwise_left_shift bitwise_right_shift polygamma binomial special_xlog1py
special_zeta special_chebyshev_polynomial_t special_chebyshev_polynomial_u
special_chebyshev_polynomial_v special_chebyshev_polynomial_w special_shifted_chebyshev_polynomial_t
special_shifted_chebyshev_polynomial_u special_shifted_chebyshev_polynomial_v
special_shifted_chebyshev_polynomial_w special_hermite_polynomial_h special_hermite_polynomial_he
special_laguerre_polynomial_l special_legendre_polynomial_p addcmul addcdiv polar""".split()
for _n in _UNARY + _BINARY:
    RULES[_n] = elementwise
for _n in ("sum", "mean", "nansum", "amax", "amin", "all", "any", "count_nonzero", "norm",
           "var", "prod"):
    RULES[_n] = reduction("dim", "all")
for _n in ("logsumexp", "cumsum", "cumprod", "max_dim", "min_dim", "median_dim", "mode",
           "sort", "argsort", "topk", "kthvalue", "_softmax", "_log_softmax", "cummax",
           "cummin"):
    RULES[_n] = reduction("dim", None)
RULES["linalg_vector_norm"] = reduction("dim", "all")
for _n in ("view_as_real", "view_as_complex", "geqrf", "linalg_det", "linalg_slogdet",
           "linalg_inv", "linalg_cholesky", "linalg_eig", "linalg_eigh", "linalg_qr",
           "linalg_svd", "linalg_pinv", "linalg_matrix_rank", "linalg_matrix_exp",
           "linalg_lu_factor_ex", "linalg_ldl_factor_ex"):
    RULES[_n] = batch_rows
for _n in ("select_scatter", "slice_scatter", "scatter_reduce", "_fft_c2c", "_fft_c2r",
           "_fft_r2c", "_softmax_backward_data", "_log_softmax_backward_data"):
    RULES[_n] = dim_op(("dim",))
RULES.update({
    "linear": linear, "matmul": matmul, "embedding": embedding,
    "lstm_cell_fused": fused_cell, "gru_cell_fused": fused_cell,
    "cat": cat, "stack": stack, "view": view, "permute": permute, "expand": expand,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "getitem": getitem, "setitem": setitem,
    "split_with_sizes": split_with_sizes, "slice_view": slice_view, "select": select,
    "unbind": unbind,
    "diagonal": diagonal, "tril": last_dims, "triu": last_dims,
    "roll": roll, "cross": cross_dim, "gather": dim_op(("dim",)),
    "scatter": dim_op(("dim",)), "scatter_add": dim_op(("dim",)),
    "index_select": shared_index_dim_op, "index_add": index_dim_op,
    "index_copy": index_dim_op, "index_fill": index_dim_op,
    "argmax": argreduce, "argmin": argreduce, "bernoulli": elementwise,
    "cross_entropy_loss": cross_entropy, "flip": flip, "repeat": repeat, "outer": outer,
    "kron": kron, "repeat_interleave": repeat_interleave, "trace": trace, "einsum": einsum,
    "linalg_solve": solve,
    "linalg_solve_triangular": solve_triangular, "tensordot": tensordot,
    "searchsorted": searchsorted, "bucketize": batch_rows, "isin": batch_rows,
    "median": median_all, "diag": diag, "unfold": dim_op(("dimension",)),
    "diagonal_scatter": dim_op(("dim1", "dim2")), "nll_loss_forward": nll_loss,
})
_BATCH_ROWS = ("convolution", "im2col", "col2im", "max_pool2d_with_indices",
               "max_pool3d_with_indices", "native_layer_norm")


# ---------------------------------------------------------------------------- flat rules
# A batched buffer of per-example values of rank 2 or more is *flat*: the examples' rows one
# after another, ``(n * s[0],) + s[1:]`` (``(n,) + s`` below rank 2). A flat rule takes the
# stacked arguments as such buffers and returns its results as such buffers, so row-wise ops
# run on one matrix with no reshaping; it returns None when it does not apply, and the op's
# rule in RULES then runs on the arguments viewed with the examples along dim 0.

def _rows_of(s):
    return s[0] if s is not None and len(s) >= 2 and s[0] > 0 else 0


def _phys(n, s):
    r = _rows_of(s)
    return (n * r,) + tuple(s[1:]) if r else (n,) + tuple(s)


def flat_elementwise(b: Batch):
    """Stacked arguments of the result's shape; shared ones broadcast within a row."""
    out = b.out_shapes[0]
    if not _rows_of(out):
        return None
    for j, st in enumerate(b.stacked):
        if st is True:
            if tuple(b.shapes[j]) != tuple(out):
                return None
        elif st:
            return None
        elif isinstance(b.args[j], Tensor):
            sh = tuple(b.args[j].shape)
            if len(sh) >= len(out) and (len(sh) > len(out) or sh[0] != 1):
                return None
    return b.run(*b.args)


def flat_linear(b: Batch):
    if not b.stacked[0] or b.stacked[1] or b.stacked[2] or not b.shapes[0]:
        return None
    x = b.args[0]
    if x.dim() == 2:
        return b.run(x, b.args[1], b.args[2])
    out = b.run(b.reshape(x, (-1, b.shapes[0][-1])), b.args[1], b.args[2])
    return b.reshape(out, _phys(b.n, b.out_shapes[0]))


def flat_layer_norm(b: Batch):
    """``native_layer_norm`` over fewer dims than the example has: its rows are one bigger
    batch (``batch_rows``); over all of them, the rule in RULES normalizes each example, the
    examples along dim 0."""
    if len(b.args[1]) >= len(b.shapes[0]):
        return None
    return batch_rows(b)


def flat_matmul(b: Batch):
    sa, sb = b.shapes[0], b.shapes[1]
    if not (b.stacked[0] and not b.stacked[1] and len(sb) == 2 and len(sa) >= 1):
        return None
    x = b.args[0]
    if x.dim() == 2:
        return b.run(x, b.args[1])
    out = b.run(b.reshape(x, (-1, sa[-1])), b.args[1])
    return b.reshape(out, _phys(b.n, b.out_shapes[0]))


def flat_cell(b: Batch):
    """``lstm_cell_fused`` / ``gru_cell_fused`` on (rows, features) values: rows in, rows
    out; a shared one-row argument is expanded to every row."""
    r = None
    args = list(b.args)
    for j, s in enumerate(b.shapes):
        if s is None:
            continue
        if len(s) != 2:
            return None
        if r is None:
            r = s[0]
        elif s[0] != r:
            return None
        if b.stacked[j] is not True:
            if b.stacked[j] or s[0] != 1:
                return None
            args[j] = b.do("expand", args[j], (b.n, s[1]))
    return b.run(*args)


def flat_embedding(b: Batch):
    if b.stacked[0] or not b.stacked[1] or b.args[3]:
        return None
    idx = b.args[1]
    if len(b.shapes[1]) == 1:  # (n, L) indices: (n * L) rows
        idx = b.reshape(idx, (-1,))
    args = list(b.args)
    args[1] = idx
    return b.run(*args)


def flat_slice_view(b: Batch):
    """A slice within each row (a per-example dim after the first)."""
    s = b.shapes[0]
    if not _rows_of(s):
        return None
    d = _wrap(b.args[1], len(s))
    if d == 0:
        return None
    return b.run(b.args[0], d, *b.args[2:])


def flat_split_with_sizes(b: Batch):
    """Pieces within each row (a per-example dim after the first): views of the buffer, so
    backward is one ``cat`` of the pieces' gradients, with no copy in between."""
    s = b.shapes[0]
    if not _rows_of(s):
        return None
    d = _wrap(b.args[2], len(s))
    if d == 0:
        return None
    return b.run(b.args[0], b.args[1], d)


def flat_cat(b: Batch):
    """``cat`` along a per-example dim after the first, of values of one number of rows."""
    ts, shapes = b.args[0], b.shapes[0]
    r = _rows_of(shapes[0])
    if not r or any(_rows_of(s) != r or len(s) != len(shapes[0]) for s in shapes):
        return None
    d = _wrap(b.args[1], len(shapes[0]))
    if d == 0:
        return None
    parts = []
    for t, st, s in zip(ts, b.stacked[0], shapes):
        if not st:
            if r != 1:
                return None
            t = b.do("expand", t, (b.n,) + tuple(s[1:]))
        parts.append(t)
    return b.run(parts, d)


FLAT_RULES: dict = {n: flat_elementwise for n, r in RULES.items() if r is elementwise}
FLAT_RULES.update({
    "linear": flat_linear, "matmul": flat_matmul, "lstm_cell_fused": flat_cell,
    "gru_cell_fused": flat_cell, "embedding": flat_embedding, "slice_view": flat_slice_view,
    "split_with_sizes": flat_split_with_sizes, "cat": flat_cat,
})
for _n in _BATCH_ROWS:
    RULES[_n] = FLAT_RULES[_n] = batch_rows
FLAT_RULES["native_layer_norm"] = flat_layer_norm

# ops whose result's shape depends on the values (or that write their argument): never
# deferred; they run at once, after the pending graph has been run
EAGER = {"nonzero", "unique", "multinomial", "masked_select", "_ctc_loss",
         "_ctc_loss_backward"}
# ops that take rows of their first argument (``x[i]``, ``x[a:b]``, ``select``, ``narrow``
# along dim 0): calls that differ only in which rows are batched together, as one
# ``index_select`` over the sources' rows (see autobatch's ``_State.record_rows``)
ROWS = {"getitem", "select", "slice_view"}
# out-of-place random ops: deferred, but their result's shape is found without running them
# (running them to learn it would draw from the generator)
RANDOM = {"bernoulli", "poisson", "binomial"}
