"""One table of op test entries (PyTorch's OpInfo idea).

Each :class:`OpEntry` names an op, its ember function (and method) form, a sample-input
generator, a NumPy reference, the dtypes it accepts, how its result dtype follows from its
inputs (PyTorch's promotion rules, written out in :func:`torch_result_type`), whether it is
differentiable and which arguments gradients flow to. Domain restrictions (``log`` needs
positive inputs, ``acosh`` inputs above one, ...) live in the sample generators.

Samples are built from NumPy arrays; :func:`to_ember` turns them into ember tensors, either
contiguous or non-contiguous (:func:`noncontig`: a transposed, step-sliced window of a bigger
buffer holding the same values). The harnesses are ``test_ops_table.py`` (forward vs NumPy,
method form, in-place variants, views) and ember-autograd's ``test_gradcheck_ops.py``
(gradcheck / gradgradcheck in float64, contiguous and not).

The vocabulary (samples, entries, dtype rules) lives in :mod:`._harness`; this module and
the nn and extra tables build on it. It imports only NumPy and ember.tensor.
"""
from __future__ import annotations

import math

import numpy as np

import ember.tensor as et

__all__ = [
    "Sample", "OpEntry", "OP_TABLE", "ENTRIES", "torch_result_type", "to_ember", "noncontig",
    "np_dtype", "tolerance", "ref_args", "fix_gauge", "BF16_ENTRIES",
    "as_keywords", "COVERED_OPS", "NON_TABLE_OPS", "VIEW_CHAINS",
]

from ._harness import (
    _CAT,
    ALL,
    FLOAT,
    FLOAT_H,
    INT,
    NUMERIC,
    UNARY_SHAPES,
    OpEntry,
    Sample,
    _nz,
    _rand,
    as_keywords,
    binary_samples,
    fix_gauge,
    noncontig,
    np_dtype,
    ref_args,
    to_ember,
    tolerance,
    torch_result_type,
    unary_samples,
)


def _r(f):
    """Wraps a NumPy ufunc-like reference so 0-d results stay arrays."""
    def ref(*a, **k):
        return np.asarray(f(*a, **k))
    return ref


def _np_erf(x):
    v = np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, np.float64))
    return v.astype(x.dtype if np.asarray(x).dtype.kind == "f" else np.float32)


def _np_erfc(x):
    v = np.vectorize(math.erfc, otypes=[np.float64])(np.asarray(x, np.float64))
    return v.astype(x.dtype if np.asarray(x).dtype.kind == "f" else np.float32)


def _np_erfinv(x):
    x64 = np.asarray(x, np.float64)
    # Newton iterations on erf(y) = x from a good start
    y = np.sign(x64) * np.sqrt(-np.log((1 - x64) * (1 + x64)))
    y = np.where(np.abs(x64) < 0.7, x64 * math.sqrt(math.pi) / 2, y * 0.8)
    for _ in range(60):
        err = np.vectorize(math.erf, otypes=[np.float64])(y) - x64
        y = y - err / (2 / math.sqrt(math.pi) * np.exp(-y * y))
    return y


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _round_half_even(x):
    return np.round(x)


def _pyfloor_div(a, b):
    return np.floor_divide(a, b)


def _lerp(a, b, w):
    return a + w * (b - a)


def _clamp(x, min=None, max=None):
    out = x
    if min is not None:
        out = np.maximum(out, min)
    if max is not None:
        out = np.minimum(out, max)
    return out


def _where(c, a, b):
    return np.where(c, a, b)


def _masked_fill(x, m, v):
    out = x.copy()
    out[np.broadcast_to(m, x.shape)] = v
    return out


def _addcmul(x, t1, t2, value=1):
    return x + value * t1 * t2


def _addcdiv(x, t1, t2, value=1):
    return x + value * t1 / t2


def _np_reduce(f):
    def ref(x, dim=None, keepdim=False, **kw):
        axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
        return np.asarray(f(x, axis=axis, keepdims=keepdim, **kw))
    return ref


def _np_logsumexp(x, dim, keepdim=False):
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    m = np.max(x, axis=axis, keepdims=True)
    s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return s if keepdim else np.squeeze(s, axis=axis)


def _np_var(x, dim=None, unbiased=True, keepdim=False):
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return np.asarray(np.var(x, axis=axis, ddof=1 if unbiased else 0, keepdims=keepdim))


def _np_std(x, dim=None, unbiased=True, keepdim=False):
    return np.sqrt(_np_var(x, dim, unbiased, keepdim))


def _np_norm(x, p="fro", dim=None, keepdim=False):
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    a = np.abs(x.astype(np.float64))
    if p == "fro" or p == 2:
        r = np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
    elif p == 1:
        r = np.sum(a, axis=axis, keepdims=keepdim)
    elif p == math.inf:
        r = np.max(a, axis=axis, keepdims=keepdim)
    else:
        r = np.sum(a ** p, axis=axis, keepdims=keepdim) ** (1 / p)
    return np.asarray(r).astype(x.dtype)


def _np_max_dim(f, argf):
    def ref(x, dim, keepdim=False):
        v = f(x, axis=dim, keepdims=keepdim)
        i = np.expand_dims(argf(x, axis=dim), dim) if keepdim else argf(x, axis=dim)
        return np.asarray(v), np.asarray(i).astype(np.int64)
    return ref


def _np_sort(x, dim=-1, descending=False):
    if descending:
        i = np.argsort(-x.astype(np.float64), axis=dim, kind="stable")
    else:
        i = np.argsort(x, axis=dim, kind="stable")
    return np.take_along_axis(x, i, dim), i.astype(np.int64)


def _np_topk(x, k, dim=-1, largest=True, sorted=True):
    v, i = _np_sort(x, dim, descending=largest)
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


def _np_kthvalue(x, k, dim=-1, keepdim=False):
    v, i = _np_sort(x, dim)
    v = np.take(v, k - 1, axis=dim)
    i = np.take(i, k - 1, axis=dim)
    if keepdim:
        v, i = np.expand_dims(v, dim), np.expand_dims(i, dim)
    return v, i


def _np_median_dim(x, dim=-1, keepdim=False):
    # PyTorch's median: the lower of the two middle values
    k = (x.shape[dim] - 1) // 2 + 1
    return _np_kthvalue(x, k, dim, keepdim)


def _np_median(x):
    s = np.sort(x.reshape(-1))
    return np.asarray(s[(s.size - 1) // 2])


def _np_cumsum(x, dim):
    r = np.cumsum(x, axis=dim)
    return r.astype(np.int64) if x.dtype.kind in "biu" else r


def _np_cumprod(x, dim):
    r = np.cumprod(x, axis=dim)
    return r.astype(np.int64) if x.dtype.kind in "biu" else r


def _np_sum(x, dim=None, keepdim=False):
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    r = np.sum(x, axis=axis, keepdims=keepdim)
    return np.asarray(r).astype(np.int64 if x.dtype.kind in "biu" else x.dtype)


def _np_prod(x, dim=None, keepdim=False):
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    r = np.prod(x, axis=axis, keepdims=keepdim)
    return np.asarray(r).astype(np.int64 if x.dtype.kind in "biu" else x.dtype)


def _int_to_int64(sample, dtype):
    return "int64" if _CAT[dtype] < 2 else dtype


# view / shape references
def _np_view(x, *shape):
    return x.reshape(*shape)


def _np_narrow(x, dim, start, length):
    return np.take(x, np.arange(start, start + length), axis=dim)


def _np_select(x, dim, index):
    return np.take(x, index, axis=dim)


def _np_expand(x, *sizes):
    sizes = tuple(x.shape[i - (len(sizes) - x.ndim)] if s == -1 else s
                  for i, s in enumerate(sizes))
    return np.broadcast_to(x, sizes)


def _np_squeeze(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=dim) if x.shape[dim] == 1 else x


def _np_as_strided(x, size, stride, storage_offset=0):
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(size, dtype=x.dtype)
    for idx in np.ndindex(*size):
        out[idx] = flat[storage_offset + sum(i * s for i, s in zip(idx, stride))]
    return out


def _np_unfold(x, dimension, size, step):
    n = (x.shape[dimension] - size) // step + 1
    pieces = [np.take(x, np.arange(i * step, i * step + size), axis=dimension) for i in range(n)]
    stacked = np.stack(pieces, axis=dimension)
    return np.moveaxis(stacked, dimension + 1, -1)


def _np_diagonal(x, offset=0, dim1=0, dim2=1):
    return np.diagonal(x, offset, dim1, dim2)


def _np_split(x, size, dim=0):
    n = x.shape[dim]
    if isinstance(size, int):
        cuts = list(range(size, n, size))
    else:
        cuts = list(np.cumsum(size)[:-1])
    return tuple(np.split(x, cuts, axis=dim))


def _np_chunk(x, chunks, dim=0):
    if not x.shape[dim]:  # PyTorch: ``chunks`` empty pieces
        return tuple(np.split(x, chunks, dim))
    size = -(-x.shape[dim] // chunks)
    return _np_split(x, size, dim)


def _np_flatten(x, start_dim=0, end_dim=-1):
    nd = max(x.ndim, 1)
    s, e = start_dim % nd, end_dim % nd
    shape = x.shape[:s] + (-1,) + x.shape[e + 1:] if x.ndim else (1,)
    return x.reshape(shape)


def _np_diag(x, diagonal=0):
    return np.diag(x, diagonal)


def _np_diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    out = x.copy()
    idx = np.arange(src.shape[-1])
    r, c = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[r, c] = src
    return out


def _np_select_scatter(x, src, dim, index):
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[dim] = index
    out[tuple(sl)] = src
    return out


def _np_slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(start, end, step)
    out[tuple(sl)] = src
    return out


def _np_slice_view(x, dim, start, end, step=1):
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(start, end, step)
    return x[tuple(sl)]


def _np_gather(x, dim, index):
    return np.take_along_axis(x, index, dim)


def _np_scatter(x, dim, index, src):
    out = x.copy()
    for idx in np.ndindex(*index.shape):
        tgt = list(idx)
        tgt[dim] = index[idx]
        out[tuple(tgt)] = src[idx]
    return out


def _np_scatter_add(x, dim, index, src):
    out = x.copy()
    for idx in np.ndindex(*index.shape):
        tgt = list(idx)
        tgt[dim] = index[idx]
        out[tuple(tgt)] += src[idx]
    return out


def _np_index_add(x, dim, index, source, alpha=1):
    out = x.copy()
    for k, i in enumerate(index):
        sl = [slice(None)] * x.ndim
        sl[dim] = i
        out[tuple(sl)] += alpha * np.take(source, k, axis=dim)
    return out


def _np_index_copy(x, dim, index, source):
    out = x.copy()
    for k, i in enumerate(index):
        sl = [slice(None)] * x.ndim
        sl[dim] = i
        out[tuple(sl)] = np.take(source, k, axis=dim)
    return out


def _np_index_fill(x, dim, index, value):
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[dim] = index
    out[tuple(sl)] = value
    return out


def _np_index_put(x, indices, values, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, tuple(indices), values)
    else:
        out[tuple(indices)] = values
    return out


def _np_masked_scatter(x, mask, source):
    out = x.copy()
    m = np.broadcast_to(mask, x.shape)
    out[m] = source.reshape(-1)[: int(m.sum())]
    return out


def _np_roll(x, shifts, dims=None):
    return np.roll(x, shifts, axis=dims)


def _np_repeat(x, *sizes):
    return np.tile(x, sizes)


def _np_getitem(x, index):
    return x[index]


def _np_matmul(a, b):
    return np.matmul(a, b)


def _np_addmm(x, a, b, beta=1, alpha=1):
    return beta * x + alpha * (a @ b)


def _np_baddbmm(x, a, b, beta=1, alpha=1):
    return beta * x + alpha * np.matmul(a, b)


def _np_addbmm(x, a, b, beta=1, alpha=1):
    return beta * x + alpha * np.matmul(a, b).sum(0)


def _np_addmv(x, m, v, beta=1, alpha=1):
    return beta * x + alpha * (m @ v)


def _np_cross(a, b, dim=None):
    if dim is None:
        dim = next(i for i, s in enumerate(np.broadcast_shapes(a.shape, b.shape)) if s == 3)
    return np.cross(a, b, axis=dim)


def _np_tensordot(a, b, dims=2):
    return np.tensordot(a, b, axes=dims)


def _np_einsum(eq, *ops):
    return np.einsum(eq, *ops)


def _np_stack(ts, dim=0):
    return np.stack(ts, axis=dim)


def _np_cat(ts, dim=0):
    return np.concatenate(ts, axis=dim)


# --------------------------------------------------------------------------- sample makers
def _S(*args, grad=None, note="", **kwargs) -> Sample:
    return Sample(tuple(args), kwargs, grad, note)


def _reduce_samples(distinct=False, low=-2.0, high=2.0, extra=None, dims=None, scalar=True):
    dims = dims if dims is not None else [dict(), dict(dim=1), dict(dim=-1, keepdim=True),
                                          dict(dim=(0, 2)), dict(dim=(0, 2), keepdim=True)]

    def gen(dtype, rng):
        out = [_S(_rand((2, 3, 4), dtype, rng, low, high, distinct), **kw) for kw in dims]
        if scalar:
            out.append(_S(_rand((), dtype, rng, low, high, distinct)))
        for kw in extra or ():
            out.append(_S(_rand((3, 4), dtype, rng, low, high, distinct), **kw))
        return out
    return gen


def _dim_samples(distinct=True, low=-2.0, high=2.0, with_k=None):
    def gen(dtype, rng):
        out = []
        for shape, dim, keep in [((2, 3, 4), 1, False), ((2, 3, 4), -1, True),
                                 ((5,), 0, False), ((3, 4), 0, True)]:
            kw = {} if with_k is None else {}
            args = (_rand(shape, dtype, rng, low, high, distinct),)
            if with_k is not None:
                args = args + (with_k,)
            out.append(Sample(args + (dim,), dict(keepdim=keep) | kw))
        return out
    return gen


def _shape_gen(*samples):
    """Samples given as (shape, args, kwargs) triples."""
    def gen(dtype, rng):
        return [Sample((_rand(s, dtype, rng),) + tuple(a), dict(k)) for s, a, k in samples]
    return gen


def _idx(vals):
    return np.asarray(vals, dtype=np.int64)


# --------------------------------------------------------------------------- the table
E = OpEntry
OP_TABLE: list[OpEntry] = []


def _add(*entries: OpEntry) -> None:
    OP_TABLE.extend(entries)


# unary floating ops (integers promote to float32)
_UNARY_FLOAT = [
    ("exp", np.exp, -2, 2), ("exp2", np.exp2, -2, 2), ("expm1", np.expm1, -2, 2),
    ("log", np.log, 0.2, 3), ("log2", np.log2, 0.2, 3), ("log10", np.log10, 0.2, 3),
    ("log1p", np.log1p, -0.5, 3), ("sqrt", np.sqrt, 0.2, 3),
    ("rsqrt", lambda x: 1 / np.sqrt(x), 0.2, 3),
    ("sin", np.sin, -2, 2), ("cos", np.cos, -2, 2), ("tan", np.tan, -1, 1),
    ("asin", np.arcsin, -0.8, 0.8), ("acos", np.arccos, -0.8, 0.8), ("atan", np.arctan, -2, 2),
    ("sinh", np.sinh, -2, 2), ("cosh", np.cosh, -2, 2), ("tanh", np.tanh, -2, 2),
    ("asinh", np.arcsinh, -2, 2), ("acosh", np.arccosh, 1.2, 3), ("atanh", np.arctanh, -0.8, 0.8),
    ("sigmoid", _sigmoid, -3, 3), ("erf", _np_erf, -2, 2), ("erfc", _np_erfc, -2, 2),
    ("erfinv", _np_erfinv, -0.8, 0.8),
]
for _n, _f, _lo, _hi in _UNARY_FLOAT:
    _ints = _n not in ("erfinv",)
    _add(E(_n, getattr(et, _n), _r(_f), unary_samples(_lo, _hi),
           dtypes=FLOAT_H + (("int64",) if _ints and _lo >= 0 else ()),
           out_dtype="float", inplace=_n + "_", ops=(_n, _n + "_")))

_add(
    E("reciprocal", et.reciprocal, _r(lambda x: 1 / x),
      lambda d, rng: [Sample((_nz(s, d, rng),)) for s in UNARY_SHAPES],
      dtypes=FLOAT_H, out_dtype="float", inplace="reciprocal_", ops=("reciprocal", "reciprocal_")),
    E("neg", et.neg, _r(np.negative), unary_samples(), dtypes=FLOAT_H + ("int8", "int32", "int64"),
      inplace="neg_", ops=("neg", "neg_")),
    E("abs", et.abs, _r(np.abs), unary_samples(distinct=True),
      dtypes=FLOAT_H + ("int8", "int32", "int64"), inplace="abs_", ops=("abs", "abs_")),
    E("square", et.square, _r(np.square), unary_samples(), dtypes=FLOAT_H + ("int32", "int64"),
      inplace="square_", ops=("square", "square_")),
    E("relu", et.relu, _r(lambda x: np.maximum(x, 0)), unary_samples(distinct=True),
      dtypes=FLOAT_H + ("int32", "int64"), inplace="relu_", ops=("relu", "relu_")),
    E("frac", et.frac, _r(lambda x: x - np.trunc(x)), unary_samples(distinct=True),
      dtypes=FLOAT_H, inplace="frac_", ops=("frac", "frac_")),
    E("sign", et.sign, _r(np.sign), unary_samples(), dtypes=FLOAT_H + ("int32", "int64"),
      inplace="sign_", ops=("sign", "sign_")),
    E("floor", et.floor, _r(np.floor), unary_samples(-5, 5), dtypes=FLOAT_H + ("int64",),
      inplace="floor_", ops=("floor", "floor_")),
    E("ceil", et.ceil, _r(np.ceil), unary_samples(-5, 5), dtypes=FLOAT_H + ("int64",),
      inplace="ceil_", ops=("ceil", "ceil_")),
    E("trunc", et.trunc, _r(np.trunc), unary_samples(-5, 5), dtypes=FLOAT_H + ("int64",),
      inplace="trunc_", ops=("trunc", "trunc_")),
    E("round", et.round, _r(np.round), unary_samples(-5, 5), dtypes=FLOAT_H, inplace="round_",
      ops=("round", "round_")),
    # ties to even: values only (finite differences would straddle the jumps at the ties)
    E("round_ties", et.round, _r(np.round),
      lambda d, rng: [Sample((np.asarray([0.5, 1.5, 2.5, -0.5, -1.5, 0.4, 2.6]).astype(d),))],
      dtypes=FLOAT_H, method="round", differentiable=False, ops=("round",)),
    E("round_decimals", et.round, _r(lambda x, decimals: np.round(x, decimals)),
      unary_samples(-5, 5, kwargs=dict(decimals=2)), dtypes=("float64",), method="round",
      ops=("round",)),
    E("isnan", et.isnan, _r(np.isnan),
      lambda d, rng: [Sample((np.asarray([0.0, np.nan, np.inf, -np.inf, 1.0], d),))],
      dtypes=FLOAT_H, differentiable=False, out_dtype="bool"),
    E("isinf", et.isinf, _r(np.isinf),
      lambda d, rng: [Sample((np.asarray([0.0, np.nan, np.inf, -np.inf, 1.0], d),))],
      dtypes=FLOAT_H, differentiable=False, out_dtype="bool"),
    E("isfinite", et.isfinite, _r(np.isfinite),
      lambda d, rng: [Sample((np.asarray([0.0, np.nan, np.inf, -np.inf, 1.0], d),))],
      dtypes=FLOAT_H, differentiable=False, out_dtype="bool"),
    E("logical_not", et.logical_not, _r(np.logical_not), unary_samples(-1, 1),
      dtypes=("bool", "int64", "float32"), differentiable=False, out_dtype="bool",
      inplace="logical_not_", ops=("logical_not", "logical_not_")),
    E("bitwise_not", et.bitwise_not, _r(np.invert), unary_samples(-5, 5),
      dtypes=("bool", "uint8", "int32", "int64"), differentiable=False,
      inplace="bitwise_not_", ops=("bitwise_not", "bitwise_not_")),
)

# binary ops
_add(
    E("add", et.add, _r(np.add), binary_samples(scalars=(2, 1.5, True)),
      dtypes=ALL, out_dtype="promote", operands=(0, 1), inplace="add_", ops=("add", "add_")),
    E("add_alpha", et.add, _r(lambda a, b, alpha: a + alpha * b),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3,), d, rng), alpha=2)],
      dtypes=FLOAT + INT, method="add", out_dtype="promote", operands=(0, 1), ops=("add",)),
    E("sub", et.sub, _r(np.subtract), binary_samples(scalars=(2, 1.5)),
      dtypes=NUMERIC + ("float16",), out_dtype="promote", operands=(0, 1), inplace="sub_",
      ops=("sub", "sub_")),
    E("sub_alpha", et.sub, _r(lambda a, b, alpha: a - alpha * b),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3,), d, rng), alpha=3)],
      dtypes=FLOAT + INT, method="sub", out_dtype="promote", operands=(0, 1), ops=("sub",)),
    E("mul", et.mul, _r(np.multiply), binary_samples(scalars=(3, 0.5, False)),
      dtypes=ALL, out_dtype="promote", operands=(0, 1), inplace="mul_", ops=("mul", "mul_")),
    E("div", et.div, _r(np.true_divide), binary_samples(nonzero2=True, scalars=(2, 0.5)),
      dtypes=NUMERIC + ("float16",), out_dtype="promote_float", operands=(0, 1),
      inplace="div_", ops=("div", "div_")),
    E("true_divide", et.true_divide, _r(np.true_divide), binary_samples(nonzero2=True),
      dtypes=FLOAT + INT, out_dtype="promote_float", operands=(0, 1), ops=("div",)),
    E("div_floor", et.div, _r(lambda a, b, rounding_mode: np.floor_divide(a, b)),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -9, 9), _nz((3,), d, rng, 1, 4),
                         rounding_mode="floor")],
      dtypes=FLOAT + INT, method="div", out_dtype="promote", operands=(0, 1),
      ops=("div_floor",)),
    E("div_trunc", et.div,
      _r(lambda a, b, rounding_mode: np.trunc(a / b).astype(np.result_type(a, b))),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -9, 9), _nz((3,), d, rng, 1, 4),
                         rounding_mode="trunc")],
      dtypes=FLOAT + INT, method="div", out_dtype="promote", operands=(0, 1),
      ops=("div_trunc",)),
    E("floor_divide", et.floor_divide, _r(np.floor_divide),
      binary_samples(-9, 9, nonzero2=True, low2=1, high2=4, scalars=(3,)),
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1), differentiable=False,
      inplace="floor_divide_", ops=("floor_divide", "floor_divide_")),
    E("remainder", et.remainder, _r(np.remainder),
      binary_samples(-9, 9, nonzero2=True, low2=1, high2=4, scalars=(3, 2.5)),
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1), inplace="remainder_",
      ops=("remainder", "remainder_")),
    E("fmod", et.fmod, _r(np.fmod),
      binary_samples(-9, 9, nonzero2=True, low2=1, high2=4, scalars=(3,)),
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1), inplace="fmod_",
      ops=("fmod", "fmod_")),
    E("pow", et.pow, _r(np.power), binary_samples(0.5, 2, low2=-2, high2=2, scalars=(2, 0.5)),
      dtypes=FLOAT_H, out_dtype="promote", operands=(0, 1), inplace="pow_",
      ops=("pow", "pow_")),
    E("pow_int", et.pow, _r(np.power), binary_samples(0, 4, low2=0, high2=3, scalars=(2,)),
      dtypes=INT, method="pow", out_dtype="promote", operands=(0, 1), differentiable=False,
      ops=("pow",)),
    E("float_power", et.float_power, _r(lambda a, b: np.power(np.asarray(a, np.float64), b)),
      binary_samples(0.5, 2, low2=-2, high2=2), dtypes=FLOAT + INT, out_dtype="float64",
      operands=(0, 1), ops=("pow",)),
    E("atan2", et.atan2, _r(np.arctan2), binary_samples(nonzero2=True), dtypes=FLOAT + INT,
      out_dtype="promote_float", operands=(0, 1), inplace="atan2_", ops=("atan2", "atan2_")),
    E("hypot", et.hypot, _r(np.hypot), binary_samples(0.5, 2), dtypes=FLOAT,
      out_dtype="promote", operands=(0, 1), inplace="hypot_", ops=("hypot", "hypot_")),
    E("maximum", et.maximum, _r(np.maximum), binary_samples(distinct=True),
      dtypes=FLOAT_H + INT + ("bool",), out_dtype="promote", operands=(0, 1),
      ops=("maximum",)),
    E("minimum", et.minimum, _r(np.minimum), binary_samples(distinct=True),
      dtypes=FLOAT_H + INT + ("bool",), out_dtype="promote", operands=(0, 1),
      ops=("minimum",)),
    E("fmax", et.fmax, _r(np.fmax), binary_samples(distinct=True), dtypes=FLOAT + INT,
      out_dtype="promote", operands=(0, 1), ops=("fmax",)),
    E("fmin", et.fmin, _r(np.fmin), binary_samples(distinct=True), dtypes=FLOAT + INT,
      out_dtype="promote", operands=(0, 1), ops=("fmin",)),
)
for _n, _f in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
               ("gt", np.greater), ("ge", np.greater_equal)]:
    _add(E(_n, getattr(et, _n), _r(_f), binary_samples(-3, 3, scalars=(1, 0.5)),
           dtypes=("bool", "uint8", "int32", "int64", "float16", "float32", "float64"),
           out_dtype="bool", operands=(0, 1), differentiable=False, inplace=_n + "_",
           ops=(_n, _n + "_")))
for _n, _f in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
               ("logical_xor", np.logical_xor)]:
    _add(E(_n, getattr(et, _n), _r(_f), binary_samples(-1, 1), dtypes=("bool", "int64", "float32"),
           out_dtype="bool", operands=(0, 1), differentiable=False, inplace=_n + "_",
           ops=(_n, _n + "_")))
for _n, _f in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
               ("bitwise_xor", np.bitwise_xor)]:
    _add(E(_n, getattr(et, _n), _r(_f), binary_samples(-20, 20, scalars=(3,)),
           dtypes=("bool", "uint8", "int32", "int64"), out_dtype="promote", operands=(0, 1),
           differentiable=False, inplace=_n + "_", ops=(_n, _n + "_")))

_add(
    E("isclose", et.isclose, _r(lambda a, b: np.isclose(a, b)),
      lambda d, rng: [_S(np.asarray([1.0, 2.0, 3.0], d), np.asarray([1.0, 2.1, 3.0], d))],
      dtypes=FLOAT, out_dtype="bool", operands=(0, 1), differentiable=False),
    E("where", et.where, _r(_where),
      lambda d, rng: [_S(rng.random((2, 3)) > 0.5, _rand((2, 3), d, rng), _rand((2, 3), d, rng)),
                      _S(rng.random((2, 1)) > 0.5, _rand((3,), d, rng), _rand((2, 3), d, rng)),
                      _S(rng.random((2, 3)) > 0.5, _rand((2, 3), d, rng), 0.5,
                         grad=(1,)),
                      _S(np.asarray(True), _rand((), d, rng), _rand((3,), d, rng))],
      dtypes=FLOAT + INT + ("bool",), method=None, out_dtype="promote", operands=(1, 2)),
    E("clamp", et.clamp, _r(_clamp),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -3, 3, True), -1, 1),
                      _S(_rand((5,), d, rng, -3, 3, True), min=0),
                      _S(_rand((5,), d, rng, -3, 3, True), max=0),
                      _S(_rand((), d, rng, -3, 3, True), -1, 1)],
      dtypes=FLOAT_H + INT, inplace="clamp_", ops=("clamp", "clamp_")),
    E("clamp_tensor", et.clamp, _r(_clamp),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -3, 3, True), _rand((3,), d, rng, -2.5, -0.5),
                         _rand((2, 1), d, rng, 0.5, 2.5))],
      dtypes=FLOAT, method="clamp", out_dtype="promote", operands=(0, 1, 2), ops=("clamp",)),
    E("clamp_min", et.clamp_min, _r(lambda x, m: np.maximum(x, m)),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -3, 3, True), 0.25)], dtypes=FLOAT,
      ops=("clamp",)),
    E("clamp_max", et.clamp_max, _r(lambda x, m: np.minimum(x, m)),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -3, 3, True), 0.25)], dtypes=FLOAT,
      ops=("clamp",)),
    E("tanh_backward", et._pointwise._tanh_backward, _r(lambda g, y: g * (1 - y * y)),
      binary_samples(-0.9, 0.9), dtypes=FLOAT, method=None, out_dtype="promote",
      operands=(0, 1)),
    E("sigmoid_backward", et._pointwise._sigmoid_backward, _r(lambda g, y: g * y * (1 - y)),
      binary_samples(0.1, 0.9), dtypes=FLOAT, method=None, out_dtype="promote",
      operands=(0, 1)),
    E("threshold_backward", et._pointwise._threshold_backward,
      _r(lambda g, y, t: np.where(y > t, g, 0).astype(np.result_type(g, y))),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng, distinct=True), 0.0),
                      _S(_rand((2, 3), d, rng), _rand((3,), d, rng, distinct=True), 0.5,
                         grad=(0,))],
      dtypes=FLOAT, method=None, out_dtype="promote", operands=(0, 1)),
    E("lerp", et.lerp, _r(_lerp),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng), 0.3),
                      _S(_rand((2, 3), d, rng), _rand((3,), d, rng), _rand((2, 3), d, rng))],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1), inplace="lerp_", ops=("lerp", "lerp_")),
    E("addcmul", et.addcmul, _r(_addcmul),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng), _rand((3,), d, rng),
                         value=0.5),
                      _S(_rand((3,), d, rng), _rand((2, 1), d, rng), _rand((3,), d, rng))],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1, 2), inplace="addcmul_",
      ops=("addcmul", "addcmul_")),
    E("addcdiv", et.addcdiv, _r(_addcdiv),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng), _nz((3,), d, rng),
                         value=0.5)],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1, 2), inplace="addcdiv_",
      ops=("addcdiv", "addcdiv_")),
    E("masked_fill", et.masked_fill, _r(_masked_fill),
      lambda d, rng: [_S(_rand((2, 3), d, rng), rng.random((2, 3)) > 0.5, 0.5),
                      _S(_rand((2, 3), d, rng), rng.random((3,)) > 0.5, -1.0)],
      dtypes=FLOAT + INT, inplace="masked_fill_", ops=("masked_fill", "masked_fill_")),
)

# reductions
_add(
    E("sum", et.sum, _np_sum, _reduce_samples(), dtypes=FLOAT_H + ("bool", "int32", "int64"),
      out_dtype=_int_to_int64),
    E("nansum", et.nansum, _np_reduce(np.nansum), _reduce_samples(), dtypes=FLOAT),
    E("mean", et.mean, _np_reduce(np.mean), _reduce_samples(), dtypes=FLOAT_H),
    E("prod", et.prod, _np_prod,
      _reduce_samples(0.5, 1.5, dims=[dict(), dict(dim=1), dict(dim=-1, keepdim=True)]),
      dtypes=FLOAT + INT, out_dtype=_int_to_int64),
    E("var", et.var, _np_var,
      _reduce_samples(extra=[dict(dim=1, unbiased=False)], scalar=False), dtypes=FLOAT),
    E("std", et.std, _np_std,
      _reduce_samples(dims=[dict(), dict(dim=1), dict(dim=(0, 2))], scalar=False),
      dtypes=FLOAT),
    E("norm", et.norm, _np_norm,
      lambda d, rng: [_S(_nz((2, 3), d, rng)), _S(_nz((2, 3), d, rng), 2, 1),
                      _S(_nz((2, 3), d, rng), 1, 0, True), _S(_nz((2, 3), d, rng), 3, 1),
                      _S(_nz((2, 3), d, rng, 0.5, 2) * 0 + _rand((2, 3), d, rng, -2, 2, True),
                         math.inf, 1)],
      dtypes=FLOAT),
    E("logsumexp", et.logsumexp, _np_logsumexp,
      lambda d, rng: [_S(_rand((2, 3, 4), d, rng), 1), _S(_rand((2, 3, 4), d, rng), (0, 2), True),
                      _S(_rand((3,), d, rng), 0)],
      dtypes=FLOAT),
    E("amax", et.amax, _np_reduce(np.amax), _reduce_samples(distinct=True),
      dtypes=FLOAT + INT + ("bool",)),
    E("amin", et.amin, _np_reduce(np.amin), _reduce_samples(distinct=True),
      dtypes=FLOAT + INT + ("bool",)),
    E("max", et.max, _r(np.max), unary_samples(distinct=True), dtypes=FLOAT + INT,
      ops=("amax",)),
    E("min", et.min, _r(np.min), unary_samples(distinct=True), dtypes=FLOAT + INT,
      ops=("amin",)),
    E("max_dim", et.max, _np_max_dim(np.max, np.argmax), _dim_samples(), dtypes=FLOAT + INT,
      method="max", out_dtype=lambda s, d: (d, "int64"), ops=("max_dim",)),
    E("min_dim", et.min, _np_max_dim(np.min, np.argmin), _dim_samples(), dtypes=FLOAT + INT,
      method="min", out_dtype=lambda s, d: (d, "int64"), ops=("min_dim",)),
    E("argmax", et.argmax, _np_reduce(np.argmax),
      _reduce_samples(True, dims=[dict(), dict(dim=1), dict(dim=-1, keepdim=True)]),
      dtypes=FLOAT + INT, out_dtype="int64", differentiable=False),
    E("argmin", et.argmin, _np_reduce(np.argmin),
      _reduce_samples(True, dims=[dict(), dict(dim=1), dict(dim=-1, keepdim=True)]),
      dtypes=FLOAT + INT, out_dtype="int64", differentiable=False),
    E("all", et.all, _np_reduce(np.all),
      _reduce_samples(dims=[dict(), dict(dim=1), dict(dim=-1, keepdim=True)]),
      dtypes=("bool", "int64", "float32"), out_dtype="bool", differentiable=False),
    E("any", et.any, _np_reduce(np.any),
      _reduce_samples(dims=[dict(), dict(dim=1), dict(dim=-1, keepdim=True)]),
      dtypes=("bool", "int64", "float32"), out_dtype="bool", differentiable=False),
    E("count_nonzero", et.count_nonzero,
      lambda x, dim=None: np.asarray(np.count_nonzero(x, axis=dim)).astype(np.int64),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -1, 1)), _S(_rand((2, 3), d, rng, -1, 1), 1)],
      dtypes=("bool", "int64"), out_dtype="int64", differentiable=False),
    E("cumsum", et.cumsum, _np_cumsum,
      lambda d, rng: [_S(_rand((2, 3, 4), d, rng), 1), _S(_rand((5,), d, rng), 0),
                      _S(_rand((2, 3), d, rng), -1)],
      dtypes=FLOAT + INT + ("bool",), out_dtype=_int_to_int64),
    E("cumprod", et.cumprod, _np_cumprod,
      lambda d, rng: [_S(_nz((2, 3, 4), d, rng, 0.5, 1.5), 1), _S(_nz((5,), d, rng), 0)],
      dtypes=FLOAT + INT, out_dtype=_int_to_int64),
    E("median", et.median, _np_median, unary_samples(distinct=True), dtypes=FLOAT + INT),
    E("median_dim", et.median, _np_median_dim, _dim_samples(), dtypes=FLOAT + INT,
      method="median", out_dtype=lambda s, d: (d, "int64"), ops=("median_dim",)),
    E("kthvalue", et.kthvalue, _np_kthvalue,
      lambda d, rng: [_S(_rand((2, 5), d, rng, distinct=True), 2, 1),
                      _S(_rand((4, 3), d, rng, distinct=True), 3, 0, True)],
      dtypes=FLOAT + INT, out_dtype=lambda s, d: (d, "int64")),
    E("topk", et.topk, _np_topk,
      lambda d, rng: [_S(_rand((2, 5), d, rng, distinct=True), 2),
                      _S(_rand((4, 3), d, rng, distinct=True), 2, 0, False)],
      dtypes=FLOAT + INT, out_dtype=lambda s, d: (d, "int64")),
    E("sort", et.sort, _np_sort,
      lambda d, rng: [_S(_rand((2, 5), d, rng, distinct=True)),
                      _S(_rand((4, 3), d, rng, distinct=True), 0, True)],
      dtypes=FLOAT + INT, out_dtype=lambda s, d: (d, "int64")),
    E("argsort", et.argsort, lambda x, dim=-1, descending=False: _np_sort(x, dim, descending)[1],
      lambda d, rng: [_S(_rand((2, 5), d, rng, distinct=True)),
                      _S(_rand((4, 3), d, rng, distinct=True), 0, True)],
      dtypes=FLOAT + INT, out_dtype="int64", differentiable=False),
    E("mode", et.mode,
      lambda x, dim=-1: (np.asarray([2, 1], x.dtype), np.asarray([3, 1], np.int64)),
      lambda d, rng: [_S(np.asarray([[0, 2, 1, 2], [1, 1, 3, 0]], d), 1)],
      dtypes=FLOAT + INT, out_dtype=lambda s, d: (d, "int64"), differentiable=False),
    E("unique", et.unique, lambda x: np.unique(x),
      lambda d, rng: [_S(np.asarray([3, 1, 2, 3, 1], d))], dtypes=FLOAT + INT,
      differentiable=False),
)

# linear algebra
_add(
    E("matmul", et.matmul, _r(_np_matmul),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3, 4), d, rng)),
                      _S(_rand((3,), d, rng), _rand((3,), d, rng)),
                      _S(_rand((3,), d, rng), _rand((3, 2), d, rng)),
                      _S(_rand((2, 3), d, rng), _rand((3,), d, rng)),
                      _S(_rand((2, 2, 3), d, rng), _rand((3, 2), d, rng)),
                      _S(_rand((2, 1, 2, 3), d, rng), _rand((3, 3, 2), d, rng))],
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1)),
    E("mm", et.mm, _r(_np_matmul),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3, 4), d, rng))],
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1), ops=("matmul",)),
    E("bmm", et.bmm, _r(_np_matmul),
      lambda d, rng: [_S(_rand((2, 2, 3), d, rng), _rand((2, 3, 4), d, rng))],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1), ops=("matmul",)),
    E("mv", et.mv, _r(_np_matmul), lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3,), d, rng))],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1), ops=("matmul",)),
    E("dot", et.dot, _r(np.dot), lambda d, rng: [_S(_rand((4,), d, rng), _rand((4,), d, rng))],
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1), ops=("matmul",)),
    E("linear", et.linear, _r(lambda x, w, b=None: x @ w.T + (0 if b is None else b)),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((4, 3), d, rng)),
                      _S(_rand((2, 5, 3), d, rng), _rand((4, 3), d, rng), _rand((4,), d, rng))],
      dtypes=FLOAT, method=None, out_dtype="promote", operands=(0, 1)),
    E("outer", et.outer, _r(np.outer),
      lambda d, rng: [_S(_rand((3,), d, rng), _rand((4,), d, rng))],
      dtypes=FLOAT + INT, out_dtype="promote", operands=(0, 1)),
    E("einsum", et.einsum, _r(_np_einsum),
      lambda d, rng: [_S("ij,jk->ik", _rand((2, 3), d, rng), _rand((3, 4), d, rng), grad=(1, 2)),
                      _S("bij->bji", _rand((2, 3, 4), d, rng), grad=(1,)),
                      _S("ii->", _rand((3, 3), d, rng), grad=(1,)),
                      _S("i,i->", _rand((3,), d, rng), _rand((3,), d, rng), grad=(1, 2))],
      dtypes=FLOAT, method=None, out_dtype=lambda s, d: d, operands=(1,)),
    E("tensordot", et.tensordot, _r(_np_tensordot),
      lambda d, rng: [_S(_rand((2, 3, 4), d, rng), _rand((3, 4, 2), d, rng)),
                      _S(_rand((2, 3), d, rng), _rand((3, 2), d, rng), 1),
                      _S(_rand((2, 3), d, rng), _rand((2, 4), d, rng), ([0], [0]))],
      dtypes=FLOAT, method=None, out_dtype="promote", operands=(0, 1)),
    E("addmm", et.addmm, _r(_np_addmm),
      lambda d, rng: [_S(_rand((2, 4), d, rng), _rand((2, 3), d, rng), _rand((3, 4), d, rng)),
                      _S(_rand((4,), d, rng), _rand((2, 3), d, rng), _rand((3, 4), d, rng),
                         beta=0.5, alpha=2)],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1, 2), ops=("matmul",)),
    E("baddbmm", et.baddbmm, _r(_np_baddbmm),
      lambda d, rng: [_S(_rand((2, 2, 4), d, rng), _rand((2, 2, 3), d, rng),
                         _rand((2, 3, 4), d, rng), beta=0.5, alpha=2)],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1, 2), ops=("matmul",)),
    E("addbmm", et.addbmm, _r(_np_addbmm),
      lambda d, rng: [_S(_rand((2, 4), d, rng), _rand((3, 2, 3), d, rng),
                         _rand((3, 3, 4), d, rng))],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1, 2), ops=("matmul",)),
    E("addmv", et.addmv, _r(_np_addmv),
      lambda d, rng: [_S(_rand((2,), d, rng), _rand((2, 3), d, rng), _rand((3,), d, rng),
                         alpha=0.5)],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1, 2), ops=("matmul",)),
    E("trace", et.trace, _r(np.trace), lambda d, rng: [_S(_rand((3, 3), d, rng)),
                                                      _S(_rand((2, 4), d, rng))],
      dtypes=FLOAT + ("int64",), out_dtype=_int_to_int64),
    E("cross", et.cross, _r(_np_cross),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng), 1),
                      _S(_rand((3, 2), d, rng), _rand((3, 2), d, rng), 0)],
      dtypes=FLOAT, out_dtype="promote", operands=(0, 1)),
    E("diag", et.diag, _r(_np_diag),
      lambda d, rng: [_S(_rand((3,), d, rng)), _S(_rand((3,), d, rng), 1),
                      _S(_rand((3, 4), d, rng)), _S(_rand((3, 4), d, rng), -1)],
      dtypes=FLOAT + INT),
)

# shape and view ops (``view``: the result aliases the input)
_add(
    E("view", et.view, _np_view,
      _shape_gen(((2, 3), (3, 2), {}), ((2, 3), (-1,), {}), ((6,), (2, 1, 3), {}),
                 ((), (1,), {})),
      dtypes=FLOAT + INT + ("bool",), view=True, ops=("view",), layouts=("contig",)),
    E("reshape", et.reshape, _np_view,
      _shape_gen(((2, 3), (3, 2), {}), ((2, 3, 2), (3, -1), {}), ((), (1, 1), {})),
      dtypes=FLOAT + INT, ops=("view", "_ascontiguous")),
    E("t", et.t, lambda x: x.T, _shape_gen(((2, 3), (), {}), ((4,), (), {})),
      dtypes=FLOAT + INT, view=True, ops=("permute",)),
    E("transpose", et.transpose, lambda x, a, b: np.swapaxes(x, a, b),
      _shape_gen(((2, 3, 4), (0, 2), {}), ((2, 3), (-1, 0), {})),
      dtypes=FLOAT + INT, view=True, ops=("permute",)),
    E("permute", et.permute, lambda x, *d: np.transpose(x, d),
      _shape_gen(((2, 3, 4), (2, 0, 1), {}), ((2, 3), (1, 0), {})),
      dtypes=FLOAT + INT, view=True),
    E("movedim", et.movedim, lambda x, s, d: np.moveaxis(x, s, d),
      _shape_gen(((2, 3, 4), (0, -1), {})), dtypes=FLOAT, view=True, ops=("permute",)),
    E("narrow", et.narrow, _np_narrow,
      _shape_gen(((4, 3), (0, 1, 2), {}), ((2, 5), (1, 2, 3), {})),
      dtypes=FLOAT + INT, view=True, ops=("slice_view",)),
    E("slice_view", et.slice_view, _np_slice_view,
      _shape_gen(((6, 3), (0, 1, 5, 2), {}), ((2, 7), (1, 0, 7, 3), {})),
      dtypes=FLOAT, view=True),
    E("select", et.select, _np_select,
      _shape_gen(((4, 3), (0, 1), {}), ((2, 5), (1, -1), {}), ((3,), (0, 2), {})),
      dtypes=FLOAT + INT, view=True),
    E("expand", et.expand, _np_expand,
      _shape_gen(((3, 1), (3, 4), {}), ((1, 3), (2, 2, 3), {}), ((), (2, 3), {}),
                 ((3, 1), (-1, 2), {})),
      dtypes=FLOAT + INT + ("bool",), view=True),
    E("squeeze", et.squeeze, _np_squeeze,
      _shape_gen(((2, 1, 3, 1), (), {}), ((2, 1, 3), (1,), {}), ((2, 3), (0,), {})),
      dtypes=FLOAT + INT, view=True, ops=("squeeze", "view")),
    E("unsqueeze", et.unsqueeze, lambda x, d: np.expand_dims(x, d),
      _shape_gen(((2, 3), (0,), {}), ((2, 3), (-1,), {}), ((), (0,), {})),
      dtypes=FLOAT + INT, view=True),
    E("flatten", et.flatten, _np_flatten,
      _shape_gen(((2, 3, 4), (), {}), ((2, 3, 4), (1,), {}), ((2, 3, 4), (0, 1), {})),
      dtypes=FLOAT, ops=("view",)),
    E("unflatten", et.unflatten, lambda x, d, s: x.reshape(x.shape[:d] + s + x.shape[d + 1:]),
      _shape_gen(((2, 6), (1, (2, 3)), {})), dtypes=FLOAT, ops=("view",)),
    E("as_strided", et.as_strided, _np_as_strided,
      lambda d, rng: [_S(_rand((3, 4), d, rng), (2, 2), (1, 2)),
                      _S(_rand((3, 4), d, rng), (3, 2), (4, 1), 1)],
      dtypes=FLOAT, method=None, view=True, layouts=("contig",)),
    E("unfold", et.unfold, _np_unfold,
      _shape_gen(((7,), (0, 3, 2), {}), ((2, 6), (1, 2, 2), {}), ((5, 2), (0, 2, 1), {})),
      dtypes=FLOAT + INT, view=True),
    E("diagonal", et.diagonal, _np_diagonal,
      _shape_gen(((3, 4), (), {}), ((3, 4), (1,), {}), ((2, 3, 4), (-1, 1, 2), {})),
      dtypes=FLOAT + INT, view=True),
    E("split", et.split, _np_split,
      _shape_gen(((5, 3), (2,), {}), ((2, 6), ([1, 2, 3], 1), {})),
      dtypes=FLOAT + INT, view=True, ops=("slice_view",)),
    E("chunk", et.chunk, _np_chunk, _shape_gen(((5, 3), (2,), {}), ((2, 6), (3, 1), {}),
                                               ((0, 3), (3,), {})),
      dtypes=FLOAT + INT, view=True, ops=("slice_view",)),
    E("unbind", et.unbind, lambda x, d=0: tuple(np.moveaxis(x, d, 0)),
      _shape_gen(((3, 2), (), {}), ((2, 3), (1,), {})), dtypes=FLOAT, view=True,
      ops=("unbind",)),
    E("broadcast_to", et.broadcast_to, lambda x, s: np.broadcast_to(x, s),
      _shape_gen(((3, 1), ((2, 3, 4),), {})), dtypes=FLOAT, view=True, ops=("expand",)),
    E("contiguous", et.contiguous, lambda x: x, unary_samples(), dtypes=FLOAT + INT,
      ops=("_ascontiguous",)),
    E("clone", et.clone, lambda x: x.copy(), unary_samples(), dtypes=ALL),
    E("detach", et.detach, lambda x: x.copy(), unary_samples(), dtypes=ALL,
      differentiable=False),
    E("cat", et.cat, _np_cat,
      lambda d, rng: [_S([_rand((2, 3), d, rng), _rand((1, 3), d, rng)]),
                      _S([_rand((2, 3), d, rng), _rand((2, 2), d, rng)], 1),
                      _S([_rand((2, 3), d, rng), _rand((2, 3), d, rng)], -1)],
      dtypes=FLOAT + INT + ("bool",), method=None),
    E("stack", et.stack, _np_stack,
      lambda d, rng: [_S([_rand((2, 3), d, rng), _rand((2, 3), d, rng)]),
                      _S([_rand((2, 3), d, rng), _rand((2, 3), d, rng)], 2),
                      _S([_rand((), d, rng), _rand((), d, rng)])],
      dtypes=FLOAT + INT + ("bool",), method=None),
    E("hstack", et.hstack, lambda ts: np.hstack(ts),
      lambda d, rng: [_S([_rand((2, 3), d, rng), _rand((2, 1), d, rng)])], dtypes=FLOAT,
      method=None, ops=("cat",)),
    E("vstack", et.vstack, lambda ts: np.vstack(ts),
      lambda d, rng: [_S([_rand((3,), d, rng), _rand((2, 3), d, rng)])], dtypes=FLOAT,
      method=None, ops=("cat",)),
    E("flip", et.flip, lambda x, dims: np.flip(x, dims),
      _shape_gen(((2, 3), ((0,),), {}), ((2, 3, 4), ((0, 2),), {})), dtypes=FLOAT + INT),
    E("roll", et.roll, _np_roll,
      _shape_gen(((2, 3), (1, 1), {}), ((2, 3), (-1, 0), {}), ((2, 3), (2,), {}),
                 ((2, 3, 4), ((1, 2), (0, 2)), {})),
      dtypes=FLOAT + INT),
    E("repeat", et.repeat, _np_repeat,
      _shape_gen(((2, 3), (2, 1), {}), ((3,), (2, 2), {}), ((), (3,), {})), dtypes=FLOAT + INT),
    E("tile", et.tile, lambda x, dims: np.tile(x, dims),
      _shape_gen(((2, 3), ((2, 1),), {})), dtypes=FLOAT, ops=("repeat",)),
    E("tril", et.tril, lambda x, k=0: np.tril(x, k),
      _shape_gen(((3, 4), (), {}), ((3, 4), (1,), {}), ((2, 3, 3), (-1,), {})),
      dtypes=FLOAT + INT + ("bool",)),
    E("triu", et.triu, lambda x, k=0: np.triu(x, k),
      _shape_gen(((3, 4), (), {}), ((3, 4), (1,), {}), ((2, 3, 3), (-1,), {})),
      dtypes=FLOAT + INT + ("bool",)),
    E("diagonal_scatter", et.diagonal_scatter, _np_diagonal_scatter,
      lambda d, rng: [_S(_rand((3, 4), d, rng), _rand((3,), d, rng)),
                      _S(_rand((3, 4), d, rng), _rand((3,), d, rng), 1),
                      _S(_rand((3, 3), d, rng), _rand((2,), d, rng), -1)],
      dtypes=FLOAT, out_dtype="same", operands=(0, 1)),
    E("select_scatter", et.select_scatter, _np_select_scatter,
      lambda d, rng: [_S(_rand((3, 4), d, rng), _rand((4,), d, rng), 0, 1),
                      _S(_rand((3, 4), d, rng), _rand((3,), d, rng), 1, -1)],
      dtypes=FLOAT, operands=(0, 1)),
    E("slice_scatter", et.slice_scatter, _np_slice_scatter,
      lambda d, rng: [_S(_rand((4, 3), d, rng), _rand((2, 3), d, rng), 0, 0, 4, 2),
                      _S(_rand((3, 5), d, rng), _rand((3, 2), d, rng), 1, 1, 3)],
      dtypes=FLOAT, operands=(0, 1)),
)

# indexing
_add(
    E("getitem_basic", et.getitem, _np_getitem,
      _shape_gen(((4, 3), ((slice(1, 3), 0),), {}), ((4, 3), ((Ellipsis, None, 1),), {}),
                 ((4, 5), ((slice(None, None, 2), slice(1, None, 2)),), {}),
                 ((4, 3), (-1,), {}), ((2, 3, 4), ((1, Ellipsis, slice(None, 2)),), {})),
      dtypes=FLOAT + INT, method=None, view=True, ops=("getitem", "slice_view", "select")),
    E("getitem_adv", et.getitem, _np_getitem,
      lambda d, rng: [_S(_rand((4, 3), d, rng), _idx([0, 2, 2])),
                      _S(_rand((4, 3), d, rng), (_idx([0, 3]), _idx([1, 2]))),
                      _S(_rand((4, 3), d, rng), (slice(None), _idx([[0, 1], [2, 2]]))),
                      _S(_rand((4, 3), d, rng), np.asarray([True, False, True, True]))],
      dtypes=FLOAT + INT, method=None, ops=("getitem",)),
    E("index_select", et.index_select, lambda x, d, i: np.take(x, i, axis=d),
      lambda d, rng: [_S(_rand((4, 3), d, rng), 0, _idx([0, 3, 3])),
                      _S(_rand((4, 3), d, rng), 1, _idx([2, 0]))],
      dtypes=FLOAT + INT),
    E("gather", et.gather, _np_gather,
      lambda d, rng: [_S(_rand((3, 4), d, rng), 1, _idx([[0, 1], [3, 3], [2, 0]])),
                      _S(_rand((3, 4), d, rng), 0, _idx([[0, 1, 2, 2]]))],
      dtypes=FLOAT + INT),
    E("take_along_dim", et.take_along_dim, lambda x, i, d: np.take_along_axis(x, i, d),
      lambda d, rng: [_S(_rand((3, 4), d, rng), _idx([[0], [3], [2]]), 1)],
      dtypes=FLOAT, ops=("gather",)),
    E("take", et.take, lambda x, i: x.reshape(-1)[i],
      lambda d, rng: [_S(_rand((3, 4), d, rng), _idx([[0, 5], [11, 5]]))],
      dtypes=FLOAT, ops=("take",)),
    E("scatter", et.scatter, _np_scatter,
      lambda d, rng: [_S(_rand((3, 4), d, rng), 1, _idx([[0, 1], [3, 2], [2, 0]]),
                         _rand((3, 2), d, rng), grad=(0, 3))],
      dtypes=FLOAT + INT, inplace="scatter_", ops=("scatter", "scatter_")),
    E("scatter_add", et.scatter_add, _np_scatter_add,
      lambda d, rng: [_S(_rand((3, 4), d, rng), 1, _idx([[0, 1, 1], [3, 3, 2], [2, 0, 0]]),
                         _rand((3, 3), d, rng), grad=(0, 3))],
      dtypes=FLOAT + INT, inplace="scatter_add_", ops=("scatter_add", "scatter_add_")),
    E("index_add", et.index_add, _np_index_add,
      lambda d, rng: [_S(_rand((4, 3), d, rng), 0, _idx([0, 2, 0]), _rand((3, 3), d, rng),
                         grad=(0, 3)),
                      _S(_rand((4, 3), d, rng), 1, _idx([2, 1]), _rand((4, 2), d, rng), alpha=2,
                         grad=(0, 3))],
      dtypes=FLOAT + INT, inplace="index_add_", ops=("index_add", "index_add_")),
    E("index_copy", et.index_copy, _np_index_copy,
      lambda d, rng: [_S(_rand((4, 3), d, rng), 0, _idx([3, 1]), _rand((2, 3), d, rng),
                         grad=(0, 3))],
      dtypes=FLOAT + INT, inplace="index_copy_", ops=("index_copy", "index_copy_")),
    E("index_fill", et.index_fill, _np_index_fill,
      lambda d, rng: [_S(_rand((4, 3), d, rng), 1, _idx([0, 2]), -1.0, grad=(0,))],
      dtypes=FLOAT, inplace="index_fill_", ops=("index_fill", "index_fill_")),
    E("index_put", et.index_put, _np_index_put,
      lambda d, rng: [_S(_rand((4, 3), d, rng), (_idx([0, 2]), _idx([1, 1])), _rand((2,), d, rng),
                         grad=(0, 2)),
                      _S(_rand((4, 3), d, rng), (_idx([0, 0, 3]),), _rand((3, 3), d, rng), True,
                         grad=(0, 2))],
      dtypes=FLOAT + INT, inplace="index_put_", ops=("index_put", "index_put_")),
    E("masked_scatter", et.masked_scatter, _np_masked_scatter,
      lambda d, rng: [_S(_rand((2, 3), d, rng), np.asarray([[True, False, True],
                                                            [False, True, True]]),
                         _rand((2, 3), d, rng), grad=(0, 2))],
      dtypes=FLOAT, inplace="masked_scatter_", ops=("masked_scatter", "masked_scatter_")),
    E("masked_select", et.masked_select, lambda x, m: x[np.broadcast_to(m, x.shape)],
      lambda d, rng: [_S(_rand((2, 3), d, rng), np.asarray([[True, False, True],
                                                            [False, True, True]])),
                      _S(_rand((2, 3), d, rng), np.asarray([True, False, True]))],
      dtypes=FLOAT + INT, ops=("getitem",)),
    E("nonzero", et.nonzero, lambda x: np.argwhere(x).astype(np.int64),
      lambda d, rng: [_S(np.asarray([[0, 1, 0], [2, 0, 3]], d))], dtypes=FLOAT + INT + ("bool",),
      out_dtype="int64", differentiable=False),
    E("repeat_interleave", et.repeat_interleave, lambda x, r, dim=None: np.repeat(x, r, axis=dim),
      lambda d, rng: [_S(_rand((2, 3), d, rng), 2), _S(_rand((2, 3), d, rng), 2, dim=1),
                      _S(_rand((2, 3), d, rng), _idx([1, 0, 2]), dim=1)], dtypes=FLOAT),
)

# creation-like ops with a tensor input
_add(
    E("zeros_like", et.zeros_like, np.zeros_like, unary_samples(), dtypes=ALL, method=None,
      differentiable=False),
    E("ones_like", et.ones_like, np.ones_like, unary_samples(), dtypes=ALL, method=None,
      differentiable=False),
    E("full_like", et.full_like, lambda x, v: np.full_like(x, v),
      lambda d, rng: [Sample((_rand(s, d, rng), 3)) for s in UNARY_SHAPES],
      dtypes=FLOAT + INT, method=None, differentiable=False),
    E("masked_fill_scalar_tensor", et.masked_fill,
      lambda x, m, v: _masked_fill(x, m, v),
      lambda d, rng: [_S(_rand((2, 3), d, rng), rng.random((2, 3)) > 0.5, _rand((), d, rng))],
      dtypes=FLOAT, method="masked_fill", ops=("masked_fill",)),
)


# creation ops without a tensor input: args are Python values
def _factory(name, fn, ref, cases, out):
    return E(name, fn, ref, lambda d, rng: [Sample(a, k) for a, k in cases], dtypes=("float32",),
             method=None, differentiable=False, out_dtype=out)


_add(
    _factory("arange_int", et.arange, lambda *a: np.arange(*a), [((5,), {}), ((1, 7, 2), {})],
             "int64"),
    _factory("arange_float", et.arange, lambda *a: np.arange(*a),
             [((0.0, 1.0, 0.25), {}), ((2.5,), {})], "float32"),
    _factory("linspace", et.linspace, lambda a, b, n: np.linspace(a, b, n),
             [((0, 1, 5), {}), ((-1.0, 1.0, 3), {})], "float32"),
    _factory("logspace", et.logspace, lambda a, b, n: np.logspace(a, b, n),
             [((0, 2, 3), {})], "float32"),
    _factory("eye", et.eye, lambda n, m=None: np.eye(n, m), [((3,), {}), ((2, 4), {})],
             "float32"),
    _factory("zeros", et.zeros, lambda *s: np.zeros(s), [((2, 3), {}), ((), {})], "float32"),
    _factory("ones", et.ones, lambda *s: np.ones(s), [((2, 3), {})], "float32"),
    _factory("full_int", et.full, lambda s, v: np.full(s, v), [(((2, 3), 7), {})], "int64"),
    _factory("full_float", et.full, lambda s, v: np.full(s, v), [(((2,), 1.5), {})], "float32"),
    _factory("full_bool", et.full, lambda s, v: np.full(s, v), [(((2,), True), {})], "bool"),
    _factory("tensor_int", et.tensor, np.asarray, [(([1, 2, 3],), {})], "int64"),
    _factory("tensor_float", et.tensor, lambda x: np.asarray(x), [(([1, 2.5],), {})], "float32"),
)

# nn's primitives (convolution, pooling, embedding, recurrent cells, CTC)
from .nn_op_table import NN_ENTRIES, NN_NON_TABLE_OPS  # noqa: E402

_add(*NN_ENTRIES)

# linalg, special, fft and the other added torch.* names
from .op_table_extra import EXTRA_ENTRIES, EXTRA_NON_TABLE_OPS  # noqa: E402

_add(*EXTRA_ENTRIES)

# torch.fft's transforms
from .op_table_fft import FFT_ENTRIES  # noqa: E402

_add(*FFT_ENTRIES)

# bfloat16 (ml_dtypes' NumPy dtype; computed in float32 and rounded, as PyTorch's CPU kernels):
# a representative set of elementwise ops, reductions, products and views
BF16_ENTRIES = (
    "add", "sub", "mul", "div", "neg", "abs", "relu", "exp", "log", "sqrt", "tanh", "sigmoid",
    "sin", "erf", "reciprocal", "square", "floor", "pow", "maximum", "minimum", "clamp", "where",
    "eq", "lt", "sum", "mean", "amax", "max", "max_dim", "argmax", "cumsum",
    "logsumexp", "var", "std", "norm", "matmul", "mm", "bmm", "linear", "addmm", "view",
    "reshape", "t", "transpose", "permute", "narrow", "select", "expand", "unsqueeze", "cat",
    "softmax", "log_softmax",
)
for _e in OP_TABLE:
    if _e.name in BF16_ENTRIES and "bfloat16" not in _e.dtypes:
        _e.dtypes = tuple(_e.dtypes) + ("bfloat16",)

ENTRIES = {e.name: e for e in OP_TABLE}
assert len(ENTRIES) == len(OP_TABLE), "duplicate entry names"

COVERED_OPS = {op for e in OP_TABLE for op in e.ops}
COVERED_OPS |= {e.inplace for e in OP_TABLE if e.inplace}
# registry ops exercised elsewhere (random samplers, in-place helpers, internal backward ops):
NON_TABLE_OPS = {
    "_to_copy", "_view_dtype", "copy_", "fill_", "zero_", "setitem", "setitem_",
    "getitem_backward",
    "bernoulli", "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_",
    "multinomial", "normal_", "poisson", "random_", "uniform_",
} | NN_NON_TABLE_OPS | EXTRA_NON_TABLE_OPS


# view chains: (lib, x) -> view, with x = lib.arange(24.).reshape(2, 3, 4); expected
# (shape, stride, storage_offset, is_contiguous) recorded from PyTorch 2.13.0
VIEW_CHAINS = {
    "t_of_2d": (lambda m, x: m.arange(6.).view(2, 3).t(), ((3, 2), (1, 3), 0, False)),
    "transpose02": (lambda m, x: x.transpose(0, 2), ((4, 3, 2), (1, 4, 12), 0, False)),
    "permute_slice": (lambda m, x: x.permute(2, 0, 1)[1:, :, ::2],
                      ((3, 2, 2), (1, 12, 8), 1, False)),
    "select_narrow": (lambda m, x: x.select(1, 2).narrow(1, 1, 2), ((2, 2), (12, 1), 9, False)),
    "step_slice": (lambda m, x: x[:, ::2, 1::2], ((2, 2, 2), (12, 8, 2), 1, False)),
    "unsqueeze_mid": (lambda m, x: x[:, 1].unsqueeze(1), ((2, 1, 4), (12, 4, 1), 4, False)),
    "unsqueeze_end_noncontig": (lambda m, x: x.transpose(0, 2).unsqueeze(3),
                                ((4, 3, 2, 1), (1, 4, 12, 1), 0, False)),
    "unsqueeze_0_of_slice": (lambda m, x: x[:, :, ::2].unsqueeze(0),
                             ((1, 2, 3, 2), (24, 12, 4, 2), 0, False)),
    "expand": (lambda m, x: m.arange(3.).view(3, 1).expand(2, 3, 4),
               ((2, 3, 4), (0, 1, 0), 0, False)),
    "squeeze": (lambda m, x: m.zeros(2, 1, 3, 1)[:, :, 1:].squeeze(), ((2, 2), (3, 1), 1, False)),
    "diagonal": (lambda m, x: x.diagonal(0, 1, 2), ((2, 3), (12, 5), 0, False)),
    "diagonal_off": (lambda m, x: x.diagonal(1, 1, 2), ((2, 3), (12, 5), 1, False)),
    "unfold": (lambda m, x: m.arange(10.).unfold(0, 3, 2), ((4, 3), (2, 1), 0, False)),
    "unfold2d": (lambda m, x: x.unfold(2, 2, 1), ((2, 3, 3, 2), (12, 4, 1, 1), 0, False)),
    "view_of_contiguous_copy": (lambda m, x: x.transpose(1, 2).contiguous().view(6, 4),
                                ((6, 4), (4, 1), 0, True)),
    "view_split_dim": (lambda m, x: x.view(2, 3, 2, 2), ((2, 3, 2, 2), (12, 4, 2, 1), 0, True)),
    "reshape_merge_noncontig_view": (lambda m, x: x[:, :, ::2].reshape(6, 2),
                                     ((6, 2), (4, 2), 0, False)),
    "as_strided": (lambda m, x: m.arange(12.).as_strided((3, 2), (1, 3), 2),
                   ((3, 2), (1, 3), 2, False)),
    "split_last": (lambda m, x: x.split(3, 2)[1], ((2, 3, 1), (12, 4, 1), 3, False)),
    "chunk": (lambda m, x: x.chunk(2, 1)[1], ((2, 1, 4), (12, 4, 1), 8, False)),
    "select_neg": (lambda m, x: x[-1, :, -1], ((3,), (4,), 15, False)),
    "none_ellipsis": (lambda m, x: x[None, ..., 1], ((1, 2, 3), (24, 12, 4), 1, False)),
    "mT": (lambda m, x: x.mT, ((2, 4, 3), (12, 1, 4), 0, False)),
    "movedim": (lambda m, x: x.movedim(0, -1), ((3, 4, 2), (4, 1, 12), 0, False)),
    "flatten_view": (lambda m, x: x.flatten(1), ((2, 12), (12, 1), 0, True)),
    "unbind": (lambda m, x: x.unbind(2)[3], ((2, 3), (12, 4), 3, False)),
    "expand_then_slice": (lambda m, x: m.arange(4.).expand(3, 4)[1:, ::2],
                          ((2, 2), (0, 2), 0, False)),
    "reshape_of_expanded_copies": (
        lambda m, x: m.arange(4.).view(4, 1).expand(4, 3)[:, :1].reshape(2, 2),
        ((2, 2), (2, 1), 0, True)),
    "size1_unsqueeze": (lambda m, x: m.zeros(1, 3)[:, 1:].unsqueeze(-1),
                        ((1, 2, 1), (3, 1, 1), 1, True)),
    "zero_size": (lambda m, x: x[:, 3:], ((2, 0, 4), (12, 4, 1), 12, True)),
}
