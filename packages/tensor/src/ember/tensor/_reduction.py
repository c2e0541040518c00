"""Reductions, scans, sorting and selection: sum, mean, var, norm, max/min with indices,
logsumexp, all/any, cumsum, median, mode, unique, topk, sort, kthvalue, and friends.

Semantics follow PyTorch: ``dim`` is an int, a tuple/list of ints or None (all dims; an empty
tuple also means all dims); ``keepdim`` keeps reduced dims as size 1; integer and bool sums and
products accumulate in int64; float16 accumulates in float32 and is cast back; ops that return
``(values, indices)`` return a named tuple (``ember.tensor._reduction.return_types``) whose
indices are int64. Ops with ties pick indices like PyTorch's CPU kernels do where PyTorch
specifies them (first occurrence for max/min/argmax/argmin, a stable order for sort and
kthvalue, the last occurrence for mode).

Registry ops that return ``(values, indices)`` (``max_dim``, ``min_dim``, ``median_dim``,
``mode``, ``kthvalue``, ``topk``, ``sort``) return a plain tuple; the public functions wrap it
in the named tuple. Only ``values`` is differentiable.
"""
from __future__ import annotations

import builtins
import collections
import functools
import math
import numbers
import warnings

import numpy as np

from . import _dtype as D
from ._checks import not_implemented, scalar_type_name
from ._composite import _name_op
from ._creation import full, full_like, tensor
from ._fpstate import quiet
from ._indexing import take
from ._pointwise import isnan, lerp, logical_not, maximum, minimum, sqrt, true_divide, where
from ._registry import array_module, defop, with_out, write_out
from ._scatter import gather
from ._tensor import Tensor
from .kernels import get as _kernel

__all__ = [
    "sum", "mean", "prod", "std", "var", "std_mean", "var_mean", "norm", "amax", "amin", "max",
    "min", "argmax", "argmin", "logsumexp", "all", "any", "cumsum", "cumprod", "median",
    "mode", "unique", "topk", "sort", "argsort", "kthvalue", "count_nonzero", "aminmax",
    "nansum", "nanmean", "quantile", "nanquantile", "nanmedian", "histogram", "histogramdd",
    "trapezoid", "trapz", "cumulative_trapezoid", "gradient", "unique_consecutive",
]

_make = Tensor._make
_ndarray = np.ndarray
_int64 = np.dtype(np.int64)
_float16 = np.dtype(np.float16)
_float32 = np.dtype(np.float32)


# ---------------------------------------------------------------------------- return types
def _return_type(name: str, fields: list[str]) -> type:
    cls = collections.namedtuple(name, fields)
    # pickles as ember.tensor._reduction.return_types.<name>, like torch.return_types.<name>
    cls.__qualname__ = f"return_types.{name}"
    cls.__module__ = __name__
    return cls


class return_types:
    """Named tuple types of ops that return several tensors (``torch.return_types``)."""

    max = _return_type("max", ["values", "indices"])
    min = _return_type("min", ["values", "indices"])
    median = _return_type("median", ["values", "indices"])
    mode = _return_type("mode", ["values", "indices"])
    kthvalue = _return_type("kthvalue", ["values", "indices"])
    topk = _return_type("topk", ["values", "indices"])
    sort = _return_type("sort", ["values", "indices"])
    aminmax = _return_type("aminmax", ["min", "max"])
    nanmedian = _return_type("nanmedian", ["values", "indices"])
    histogram = _return_type("histogram", ["hist", "bin_edges"])
    histogramdd = _return_type("histogramdd", ["hist", "bin_edges"])


# ---------------------------------------------------------------------------- helpers
_type_name = scalar_type_name


def _is_int(v) -> bool:
    return v.__class__ is int or (isinstance(v, numbers.Integral) and not isinstance(v, bool))


def _wrap(d: int, ndim: int, op: str) -> int:
    n = ndim or 1
    if d.__class__ is not int:  # a plain int skips the (slow) abstract-class check
        if not _is_int(d):
            raise TypeError(f"{op}(): argument 'dim' must be int or tuple of ints, not "
                            f"{type(d).__name__}")
        d = int(d)
    if not -n <= d < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {d})")
    return d + n if d < 0 else d


def _dims(dim, ndim: int, op: str) -> tuple[int, ...]:
    """Normalize ``dim`` (None, int, tuple/list; empty means all) to sorted positive dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        if not dim:
            return tuple(range(ndim))
        out: list[int] = []
        for d in dim:
            w = _wrap(d, ndim, op)
            if w in out:
                raise RuntimeError(f"{op}(): dim {w} appears multiple times in the list of dims")
            out.append(w)
        return tuple(sorted(out)) if ndim else ()
    w = _wrap(dim, ndim, op)
    return (w,) if ndim else ()


def _one_dim(dim, ndim: int, op: str) -> int:
    """A single dim (int) wrapped to ``[0, ndim)``; 0 for a 0-d tensor."""
    if dim.__class__ is not int and isinstance(dim, (tuple, list)):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return _wrap(dim, ndim, op)


def _axes(d, dims: tuple[int, ...]):
    """The NumPy ``axis`` argument for ``dims`` (None reduces a 0-d array to itself)."""
    if d.ndim == 0:
        return None
    return dims


def _check_nonempty(d, dims: tuple[int, ...], op: str, sep: str = "()") -> None:
    """PyTorch's error for reducing over a zero-size dim with no identity."""
    if d.size == 0:
        for ax in dims:
            if d.shape[ax] == 0:
                raise IndexError(f"{op}{sep}: Expected reduction dim {ax} to have non-zero size.")


def _check_numel(d, op: str) -> None:
    if d.size == 0:
        raise RuntimeError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
            "the reduction dim with the 'dim' argument.")


def _acc(dt: np.dtype) -> np.dtype:
    """Accumulation dtype: float16 accumulates in float32 like PyTorch's CPU kernels."""
    return _float32 if dt == _float16 else dt


def _int_to_long(dt: np.dtype) -> np.dtype:
    return _int64 if dt.kind in "biu" else dt


def _out_dtype(d, dtype, op: str) -> np.dtype:
    if dtype is not None:
        return D.to_dtype(dtype, op).np
    return _int_to_long(d.dtype)


def _count(d, dims: tuple[int, ...]) -> int:
    n = 1
    for ax in dims:
        n *= d.shape[ax]
    return n


def _own(r, d):
    """``r`` as an array that does not alias the input ``d`` (copy only when it does)."""
    if isinstance(r, np.generic):
        return np.asarray(r)
    if r is d or (r.size and array_module(r).may_share_memory(r, d)):
        return r.copy()
    return r


def _argsort(xp, a, axis: int):
    # the array's method: np.argsort adds a Python wrapper of about 1 us
    if xp is np:
        return a.argsort(axis=axis, kind="stable")
    return a.argsort(axis=axis)


def _flip(a, axis: int):
    """``a`` reversed along ``axis`` (non-negative): a view, by basic slicing."""
    return a[(slice(None),) * axis + (slice(None, None, -1),)]


def _argsort_desc(xp, a, axis: int):
    """Stable descending argsort: equal elements keep their order, NaN comes first."""
    axis %= a.ndim
    return (a.shape[axis] - 1) - _flip(_argsort(xp, _flip(a, axis), axis), axis)


_pmq_shapes: dict = {}  # (shape, axis) -> its (P, M, Q)


def _pmq(xp, a, axis: int):
    """``a`` as a C-contiguous (P, M, Q) array with ``axis`` (non-negative) in the middle,
    what the kernels over one dim take: a view when ``a`` is contiguous. The (P, M, Q) of a
    shape is kept (two products of slices cost more than the reshape)."""
    key = (a.shape, axis)
    pmq = _pmq_shapes.get(key)
    if pmq is None:
        if len(_pmq_shapes) >= 4096:
            _pmq_shapes.clear()
        s = a.shape
        pmq = _pmq_shapes[key] = (math.prod(s[:axis]), s[axis], math.prod(s[axis + 1:]))
    if not a.flags.c_contiguous:
        a = xp.ascontiguousarray(a)
    return a.reshape(pmq)


_FANCY_MAX = 1024  # indices up to which one fancy-indexing call beats the kernel call


@functools.lru_cache(maxsize=256)
def _along_plan(xp, device, shape: tuple, axis: int, m: int) -> tuple:
    """How :func:`_take_along` indexes an array of ``shape`` along ``axis`` with ``m``
    indices per slice, in one fancy-indexing call: the array as (P, N, Q) and the index as
    (P, m, Q), with the extents of 1 among P and Q dropped, and the open grids of P (before the
    index) and Q (after it). Kept per device and shapes: making the grids costs as much as
    the indexing itself at 4x64, and each index array dropped saves a third of it."""
    p, n, q = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    # an empty result keeps all three: its reshape to the index's shape then gets C strides
    empty = p * m * q == 0
    keep = (p != 1 or empty, True, q != 1 or empty)
    pre = (xp.arange(p).reshape((p, 1, 1) if keep[2] else (p, 1)),) if keep[0] else ()
    post = (xp.arange(q),) if keep[2] else ()
    return (tuple(e for e, k in zip((p, n, q), keep) if k),
            tuple(e for e, k in zip((p, m, q), keep) if k), pre, post)


def _take_along(a, idx, axis: int):
    """``take_along_axis(a, idx, axis)`` for an in-range ``idx`` shaped like ``a`` outside
    ``axis``, a C-contiguous result: the ``gather_dim`` kernel over (P, M, Q) views, or for a
    few indices (a max over a dim, a small sort) one fancy-indexing call, which costs less
    than the kernel's call (4x64 rows: 1.6 us against 3.9) and more per element (a sort's
    256x1024: 900 us against 250)."""
    xp = array_module(a)
    axis %= a.ndim
    if idx.size <= _FANCY_MAX:
        # the device: a CuPy array's Device id (None on the host), so grids stay on theirs
        ashape, ishape, pre, post = _along_plan(xp, getattr(a.device, "id", None), a.shape,
                                                axis, idx.shape[axis])
        return a.reshape(ashape)[pre + (idx.reshape(ishape),) + post].reshape(idx.shape)
    out, _ = _kernel("gather_dim", xp)(_pmq(xp, a, axis), _pmq(xp, idx, axis))
    return out.reshape(idx.shape)


# ---------------------------------------------------------------------------- sums
_kr = None  # kernels/cpu/reduce.py, imported by the first reduction that runs on it (Numba)
_ks = None  # kernels/cpu/select.py, imported by the first mode or median that runs on it
_KERNEL_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_SUM_KERNEL_MIN = 16  # smaller sums: NumPy's add.reduce under an errstate (see _on_kernel)
_plans: dict = {}  # (shape, dim, keepdim, op) of a C-contiguous input -> plan, or False
_empty = np.empty
_add_reduce = np.add.reduce


# reductions whose result over several runs of dims is the same reduction of the partial
# results of each run (a sum of sums, with NaN as 0; a mean of means of equal counts)
_BY_RUNS = frozenset(("sum", "mean", "nansum"))


def _plan(shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool, kernel, by_runs: bool):
    """How a C-contiguous array of ``shape`` reduces over ``dims`` (sorted) on ``kernel``:
    ``(kernel, steps, result shape)``, each step an ``(outer, n, inner)`` view of the array (then
    of the step before's result) and the size of its flat result. One step where ``dims`` are
    adjacent; else, with ``by_runs``, one a run of adjacent dims, the innermost first (the
    per-channel sums over (0, 2, 3) of NCHW: its rows, then its columns). None where ``dims``
    are empty (a 0-d input), or not adjacent without ``by_runs``."""
    if not dims:
        return None
    runs = [[dims[0], dims[0] + 1]]
    for k in dims[1:]:
        if k == runs[-1][1]:
            runs[-1][1] = k + 1
        else:
            runs.append([k, k + 1])
    if len(runs) > 1 and not by_runs:
        return None
    steps, cur = [], list(shape)
    for lo, hi in reversed(runs):  # (inner runs first: the outer runs' positions stay put)
        outer, inner = math.prod(cur[:lo]), math.prod(cur[hi:])
        steps.append(((outer, math.prod(cur[lo:hi]), inner), outer * inner))
        del cur[lo:hi]
    return (kernel, tuple(steps),
            tuple(1 if k in dims else n for k, n in enumerate(shape)) if keepdim else tuple(cur))


def _on_kernel(op: str, d, dim, keepdim: bool, kernel: str, *args):
    """The reduction ``op`` over ``dim`` (the op's argument: None, an int or a sequence) of a
    float32 / float64 NumPy array by ``kernel`` of ``kernels/cpu/reduce.py`` (sum, mean, 1-
    and 2-norm, variance or log-sum-exp of axis 1 of an (outer, n, inner) view), shaped as the
    op's result; None where those kernels do not apply: other dtypes and devices, a 0-d input,
    dims that are not adjacent in memory, a layout that is no permutation of a contiguous
    array, a sum of fewer than ``_SUM_KERNEL_MIN`` elements of a strided input. The caller's
    NumPy / CuPy reduction handles those.

    A plain ``sum`` of a C-contiguous input with fewer than ``_SUM_KERNEL_MIN`` elements is
    NumPy's pairwise ``add.reduce`` (and leaves Numba unloaded for tiny scripts). NumPy alone
    is faster up to about 4096 elements (1.0 us against 1.5 us for a kernel call at 4x64), but
    it warns on an overflow to inf unless run under an ``errstate``, which costs 0.9 us a call
    (4x64 sum: 3.4 us against 2.4 on the kernel). The plans
    of C-contiguous inputs are memoized by shape and argument (``dim`` None or an int; a bad
    ``dim`` raises before its plan is stored): working them out costs more than a 4x64 sum.

    Measured at 256x1024 float32, one thread: the kernels sum rows in 14 us where NumPy's
    ``add.reduce`` takes 45 (einsum 17, BLAS ``@ ones`` 13, both less accurate on long rows)
    and PyTorch 15-19; columns in 18 us (NumPy 19-28, PyTorch 40-70).
    """
    global _kr
    if d.__class__ is not _ndarray or d.dtype not in _KERNEL_DTYPES:
        return None
    if d.flags.c_contiguous:
        shape = d.shape
        key = (shape, dim if dim is None or dim.__class__ is int else _dims(dim, len(shape), op),
               keepdim, op)
        plan = _plans.get(key)
        if plan is None:
            if len(_plans) >= 4096:
                _plans.clear()
            dims = _dims(dim, len(shape), op)
            if op == "sum" and d.size < _SUM_KERNEL_MIN:  # NumPy: axes, keepdim, 0-d result
                plan = (None, (dims or None, keepdim, not keepdim and len(dims) == len(shape)),
                        None)
            else:
                if _kr is None:
                    from .kernels.cpu import reduce as _kr
                plan = _plan(shape, dims, keepdim, getattr(_kr, kernel), op in _BY_RUNS) or False
            _plans[key] = plan
        if not plan:
            return None
        fn, steps, rshape = plan
        if fn is None:
            axes, keep, scalar = steps
            with quiet():  # an overflow to inf is PyTorch's result, no warning
                if scalar:
                    return _add_reduce(d, axes, out=_empty((), d.dtype))
                return _add_reduce(d, axes, keepdims=keep)
        for view, size in steps:
            out = _empty(size, d.dtype)
            fn(d.reshape(view), out, *args)
            d = out
        return d.reshape(rshape)
    # a permutation of a contiguous array (a transpose): reduce it in memory order and give
    # the result in the input's dim order, C-contiguous as PyTorch's
    order = sorted(range(d.ndim), key=d.strides.__getitem__, reverse=True)
    x = d.transpose(order)
    if not x.flags.c_contiguous or op == "sum" and d.size < _SUM_KERNEL_MIN:
        return None
    if _kr is None:
        from .kernels.cpu import reduce as _kr
    dims = _dims(dim, d.ndim, op)
    pos = tuple(sorted(order.index(k) for k in dims))
    plan = _plan(x.shape, pos, False, getattr(_kr, kernel), op in _BY_RUNS)
    if plan is None:
        return None
    fn, steps, rshape = plan
    for view, size in steps:
        out = _empty(size, x.dtype)
        fn(x.reshape(view), out, *args)
        x = out
    kept = [k for i, k in enumerate(order) if i not in pos]  # the input dims of the result's
    r = x.reshape(rshape)
    r = r.transpose(sorted(range(len(kept)), key=kept.__getitem__))
    if not r.flags.c_contiguous:
        r = r.copy()
    if keepdim:
        r = r.reshape([1 if k in dims else n for k, n in enumerate(d.shape)])
    return r


@defop("sum", out=True)
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` (all dims by default); integer and bool inputs sum to int64.

    >>> sum(tensor([[1, 2], [3, 4]]), dim=0)
    tensor([4, 6])
    """
    return _make(_sum("sum", input._data, dim, keepdim, dtype))


def _sum(op: str, d, dim, keepdim: bool, dtype):
    r = _on_kernel(op, d, dim, keepdim, "sum_reduce", 0) if dtype is None else None
    if r is None:  # integers and bool (int64), float16, complex, a cast to dtype, CuPy
        dims = _dims(dim, d.ndim, op)
        out = _out_dtype(d, dtype, op)
        with quiet():
            r = array_module(d).sum(d, axis=_axes(d, dims), dtype=_acc(out), keepdims=keepdim)
            r = _own(r.astype(out, copy=False), d)
    return r


@defop("nansum", out=True)
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum treating NaN as zero.

    >>> nansum(tensor([1., float('nan'), 2.]))
    tensor(3.)
    """
    d = input._data
    if d.dtype.kind == "c":
        raise RuntimeError("nansum(): nansum does not support complex inputs")
    # the sum kernel, NaN as 0 in the same pass (NumPy's nansum: several passes, no kernel)
    r = _on_kernel("nansum", d, dim, keepdim, "sum_reduce", 4) if dtype is None else None
    if r is None:
        if d.dtype.kind == "f":  # the sum of a copy with NaN zeroed; a boolean-mask write
            d = d.copy()         # costs less than copyto's where= (1.1 us against 1.6)
            d[d != d] = 0
        r = _sum("nansum", d, dim, keepdim, dtype)
    return _make(r)


def _mean_dtype(d, dtype, op: str) -> np.dtype:
    if dtype is not None:
        out = D.to_dtype(dtype, op)
        if not (out.is_floating_point or out.is_complex):
            raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{_type_name(out.np)}")
        return out.np
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {_type_name(d.dtype)}")
    return d.dtype


@defop("mean", out=True)
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Arithmetic mean over ``dim``; floating inputs only (or pass a floating ``dtype``).

    >>> mean(tensor([[1., 2.], [3., 4.]]), 1)
    tensor([1.5000, 3.5000])
    """
    d = input._data
    r = _on_kernel("mean", d, dim, keepdim, "sum_reduce", 1) if dtype is None else None
    if r is None:
        out = _mean_dtype(d, dtype, "mean")
        dims = _dims(dim, d.ndim, "mean")
        xp = array_module(d)
        s = d.sum(axis=_axes(d, dims), dtype=_acc(out), keepdims=keepdim)
        with quiet():
            r = _own(xp.true_divide(s, _count(d, dims)).astype(out, copy=False), d)
    return _make(r)


@with_out
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over the non-NaN elements (NaN where all are NaN).

    >>> nanmean(tensor([1., float('nan'), 3.]))
    tensor(2.)
    """
    d = input._data
    if d.dtype.kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {_type_name(d.dtype)}")
    if dtype is not None:
        input = input.to(D.to_dtype(dtype, "nanmean"))
    total = nansum(input, dim, keepdim)
    n = sum(logical_not(isnan(input)), dim, keepdim)
    return true_divide(total, n)


@defop("prod", out=True)
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product over one ``dim`` (all elements by default); integer inputs give int64.

    >>> prod(tensor([[1, 2], [3, 4]]), 1)
    tensor([ 2, 12])
    """
    d = input._data
    if dim is not None:
        dims = (_one_dim(dim, d.ndim, "prod"),) if d.ndim else ()
    if dtype is None:  # (_out_dtype inline: integers and bool give int64)
        out = _int64 if d.dtype.kind in "biu" else d.dtype
    else:
        out = D.to_dtype(dtype, "prod").np
    r = _on_kernel("prod", d, dim, keepdim, "prod_reduce") if out == d.dtype else None
    if r is not None:
        return _make(r)
    if dim is None:
        dims = tuple(range(d.ndim))
    with quiet():  # an overflow to inf is PyTorch's result, no warning
        r = array_module(d).prod(d, axis=_axes(d, dims), dtype=_acc(out), keepdims=keepdim)
        return _make(_own(r.astype(out, copy=False), d))


# ---------------------------------------------------------------------------- var / std
def _correction(op: str, dim, unbiased, correction):
    if isinstance(dim, bool):  # the legacy var(input, unbiased) form
        if unbiased is not None:
            raise TypeError(f"{op}(): got an unexpected combination of arguments")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): cannot pass both 'unbiased' and 'correction'")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


@defop("var", out=True)
def _var(input: Tensor, dim=None, *, correction=1, keepdim: bool = False) -> Tensor:
    d = input._data
    if d.dtype.kind not in "fc":
        raise RuntimeError("var(): std and var only support floating point and complex dtypes")
    dims = _dims(dim, d.ndim, "var")
    n = _count(d, dims)
    dof = n - correction
    if dof <= 0:
        warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    r = _on_kernel("var", d, dims, keepdim, "var_reduce", float(correction))
    if r is not None:
        return _make(r)
    xp = array_module(d)
    acc = _acc(d.dtype)
    axes = _axes(d, dims)
    x = d.astype(acc, copy=False)
    with quiet():
        m = xp.true_divide(x.sum(axis=axes, keepdims=True), n).astype(acc, copy=False)
        dev = x - m
        if dev.dtype.kind == "c":  # |x - mean|^2: a complex tensor's variance is real
            dev = xp.abs(dev)
        ss = (dev * dev).sum(axis=axes, keepdims=keepdim)
        r = xp.true_divide(ss, builtins.max(dof, 0))
    return _make(_own(r.astype(D._FROM_NP[d.dtype].to_real().np, copy=False), d))


@with_out
def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """Variance over ``dim``: ``sum((x - mean)**2) / (N - correction)`` (``correction=1``,
    Bessel's correction, by default; ``unbiased=False`` means ``correction=0``).

    >>> var(tensor([1., 2., 3., 4.]))
    tensor(1.6667)
    """
    dim, correction = _correction("var", dim, unbiased, correction)
    return _var(input, dim, correction=correction, keepdim=keepdim)


@with_out
def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """Standard deviation: the square root of :func:`var` (same arguments).

    >>> std(tensor([1., 2., 3., 4.]), unbiased=False)
    tensor(1.1180)
    """
    dim, correction = _correction("std", dim, unbiased, correction)
    return _safe_sqrt(_var(input, dim, correction=correction, keepdim=keepdim))


def _safe_sqrt(v: Tensor) -> Tensor:
    """``sqrt(v)`` whose gradient is 0 where ``v == 0`` (a constant input's std), as
    PyTorch's std backward, never ``0 * inf = NaN``; NaN and inf variances stay as they are."""
    if v.requires_grad:
        zero = v == 0
        return where(zero, 0.0, sqrt(where(zero, 1.0, v)))
    return sqrt(v)


def var_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction=None) -> tuple[Tensor, Tensor]:
    """``(var(input, ...), mean(input, ...))`` over the same dims.

    >>> var_mean(tensor([1., 3.]))
    (tensor(2.), tensor(2.))
    """
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return (_var(input, dim, correction=correction, keepdim=keepdim),
            mean(input, dim, keepdim))


def std_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction=None) -> tuple[Tensor, Tensor]:
    """``(std(input, ...), mean(input, ...))`` over the same dims.

    >>> std_mean(tensor([1., 3.]), unbiased=False)
    (tensor(1.), tensor(2.))
    """
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return (std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim))


# ---------------------------------------------------------------------------- norm
@defop("norm")
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None,
         dtype=None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default): ``p`` is ``'fro'`` (= 2), a
    number, ``inf`` (max abs), ``-inf`` (min abs) or 0 (count of nonzeros).

    >>> norm(tensor([3., 4.]))
    tensor(5.)
    """
    if out is not None:  # PyTorch's norm takes out= positionally too
        return write_out("norm", norm(input, p, dim, keepdim, dtype=dtype), out)
    d = input._data
    if dtype is not None:
        dt = D.to_dtype(dtype, "norm")
        if d.dtype.kind == "f" and dt.is_floating_point:
            d = d.astype(dt.np, copy=False)
    if d.dtype.kind == "c":  # the norm of the magnitudes
        d = array_module(d).abs(d)
    if d.dtype.kind != "f":
        raise RuntimeError(f"norm(): Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(d.dtype)}")
    if isinstance(p, str):
        if p != "fro":
            if p == "nuc":
                raise NotImplementedError("norm(): the nuclear norm (p='nuc') is not supported")
            raise RuntimeError(f"norm(): Order {p} not supported.")
        p = 2
    elif not isinstance(p, numbers.Real) or isinstance(p, bool):
        raise TypeError(f"norm(): argument 'p' must be a number or 'fro', not "
                        f"{type(p).__name__}")
    dims = _dims(dim, d.ndim, "norm")
    if p == 1 or p == 2:
        r = _on_kernel("norm", d, dims, keepdim, "sum_reduce", 1 + int(p))
        if r is not None:
            return _make(r)
    xp = array_module(d)
    axes = _axes(d, dims)
    out_dt = d.dtype
    a = xp.abs(d.astype(_acc(out_dt), copy=False))
    with quiet():
        if math.isinf(p):
            if a.size == 0 and _count(d, dims) == 0:
                raise RuntimeError(
                    "norm(): cannot compute the inf norm on an empty tensor because the "
                    "operation does not have an identity")
            f = xp.amax if p > 0 else xp.amin
            r = f(a, axis=axes, keepdims=keepdim)
        elif p == 0:
            r = xp.sum(a != 0, axis=axes, keepdims=keepdim).astype(a.dtype)
        elif p == 1:
            r = xp.sum(a, axis=axes, keepdims=keepdim)
        elif p == 2:
            r = xp.sqrt(xp.sum(a * a, axis=axes, keepdims=keepdim))
        else:
            r = xp.power(xp.sum(xp.power(a, p), axis=axes, keepdims=keepdim), 1.0 / p)
        return _make(_own(xp.asarray(r).astype(out_dt, copy=False), d))


# ---------------------------------------------------------------------------- max / min
def _ordered(op: str, d) -> None:
    """PyTorch orders no complex numbers: max, min, median, sort and their kin raise."""
    if d.dtype.kind == "c":
        raise not_implemented(op, d.dtype)


def _amaxmin(name: str, largest: bool, doc: str):
    def impl(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        d = input._data
        _ordered(name, d)
        if dim is None or (isinstance(dim, (tuple, list)) and not dim):  # every dim
            if d.size == 0:
                _check_numel(d, name)
            axes = None
        else:
            dims = _dims(dim, d.ndim, name)
            if d.size == 0:
                _check_nonempty(d, dims, name)
            axes = _axes(d, dims)
        # NumPy's ufunc reduction itself (np.amax adds a Python wrapper of about 1 us, the
        # array's method one of 0.3 us); CuPy's array method. A reduction never aliases its
        # input (_make wraps NumPy's scalar of all dims)
        if d.__class__ is _ndarray:
            return _make(reduce(d, axes, None, None, keepdim))
        return _make((d.max if largest else d.min)(axis=axes, keepdims=keepdim))

    reduce = np.maximum.reduce if largest else np.minimum.reduce

    impl.__name__, impl.__doc__ = name, doc
    return defop(name, out=True, out_casting="no")(impl)


amax = _amaxmin("amax", True, """Maximum over ``dim`` (all dims by default); NaN propagates.

    >>> amax(tensor([[1, 5], [3, 2]]), 1)
    tensor([5, 3])
    """)
amin = _amaxmin("amin", False, """Minimum over ``dim`` (all dims by default); NaN propagates.

    >>> amin(tensor([[1, 5], [3, 2]]), 1)
    tensor([1, 2])
    """)


def _arg_reduce(xp, d, ax: int, largest: bool):
    # the array's method: NumPy's np.argmax adds a Python wrapper of about 1 us
    return (d.argmax if largest else d.argmin)(axis=ax, keepdims=True).astype(_int64,
                                                                           copy=False)


def _max_min_dim(name: str, largest: bool):
    def impl(input: Tensor, dim: int, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        d = input._data
        op = name[:3]
        _ordered(op, d)
        ax = _one_dim(dim, d.ndim, op)
        xp = array_module(d)
        if d.ndim == 0:
            return _make(d.copy()), _make(xp.zeros((), _int64))
        _check_nonempty(d, (ax,), op)
        if d.size and xp is np:  # one pass: the extreme and its index (the kernel's rule for
            global _kr           # ties and NaN is NumPy's argmax's)
            if _kr is None:
                from .kernels.cpu import reduce as _kr
            vals, idx = _kr.extreme_dim(_pmq(xp, d, ax), largest)
            shape = d.shape[:ax] + (1,) + d.shape[ax + 1:] if keepdim else \
                d.shape[:ax] + d.shape[ax + 1:]
            return _make(vals.reshape(shape)), _make(idx.reshape(shape))
        if d.size == 0:
            shape = list(d.shape)
            shape[ax] = 1
            idx = xp.zeros(shape, _int64)
        else:
            idx = _arg_reduce(xp, d, ax, largest)
        vals = _take_along(d, idx, ax)
        if not keepdim:
            vals, idx = vals.squeeze(ax), idx.squeeze(ax)
        return _make(vals), _make(idx)

    impl.__name__ = name
    impl.__doc__ = f"``{name[:3]}(input, dim)``: the (values, indices) registry op."
    return defop(name, out=True)(impl)


_max_dim = _max_min_dim("max_dim", True)
_min_dim = _max_min_dim("min_dim", False)


@with_out
def max(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """The largest element; with ``dim``, ``(values, indices)`` along that dim (first
    occurrence); with a tensor as second argument, the elementwise :func:`maximum`.

    >>> max(tensor([[1, 5], [7, 2]]), 1)
    max(values=tensor([5, 7]), indices=tensor([1, 0]))
    """
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        _check_numel(input._data, "max")
        return amax(input)
    try:
        return return_types.max(*_max_dim(input, dim, keepdim))
    except Exception as exc:  # max_dim's error, as the max() called names it
        _name_op(exc, "max", ("max",))
        raise


@with_out
def min(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """The smallest element; with ``dim``, ``(values, indices)`` along that dim (first
    occurrence); with a tensor as second argument, the elementwise :func:`minimum`.

    >>> min(tensor([[1, 5], [7, 2]]), 1)
    min(values=tensor([1, 2]), indices=tensor([0, 1]))
    """
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        _check_numel(input._data, "min")
        return amin(input)
    try:
        return return_types.min(*_min_dim(input, dim, keepdim))
    except Exception as exc:  # min_dim's error, as the min() called names it
        _name_op(exc, "min", ("min",))
        raise


def _argmaxmin(name: str, largest: bool, doc: str):
    def impl(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        d = input._data
        xp = array_module(d)
        if d.dtype.kind == "b":
            raise RuntimeError(f"{name}(): does not support bool input")
        if d.dtype.kind == "c":
            raise RuntimeError(f"{name}(): does not support complex input")
        if dim is None:
            if d.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            i = _arg_reduce(xp, d.reshape(-1), 0, largest).reshape(())
            if keepdim:
                i = i.reshape((1,) * d.ndim)
            return _make(i)
        ax = _one_dim(dim, d.ndim, name)
        if d.ndim == 0:
            return _make(xp.zeros((), _int64))
        _check_nonempty(d, (ax,), name)
        if d.size == 0:
            shape = list(d.shape)
            shape[ax] = 1
            i = xp.zeros(shape, _int64)
        else:
            i = _arg_reduce(xp, d, ax, largest)
        return _make(i if keepdim else xp.squeeze(i, ax))

    impl.__name__, impl.__doc__ = name, doc
    return defop(name, differentiable=False, out=True)(impl)


argmax = _argmaxmin("argmax", True, """Index of the largest element (of the flattened tensor
    when ``dim`` is None; the first one on ties).

    >>> argmax(tensor([[1, 5], [7, 2]]), 1)
    tensor([1, 0])
    """)
argmin = _argmaxmin("argmin", False, """Index of the smallest element (of the flattened
    tensor when ``dim`` is None; the first one on ties).

    >>> argmin(tensor([[1, 5], [7, 2]]))
    tensor(0)
    """)


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """``(min, max)`` over one ``dim`` (or all elements) in one call.

    >>> aminmax(tensor([3, 1, 2]))
    aminmax(min=tensor(1), max=tensor(3))
    """
    d = input._data
    if dim is None:
        if d.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return return_types.aminmax(amin(input, None, keepdim), amax(input, None, keepdim))
    ax = _one_dim(dim, d.ndim, "aminmax")
    _check_nonempty(d, (ax,), "aminmax", sep="")
    return return_types.aminmax(amin(input, ax, keepdim), amax(input, ax, keepdim))


# ---------------------------------------------------------------------------- logsumexp
@defop("logsumexp", out=True)
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, computed without overflow; integer inputs give the
    default float dtype.

    >>> logsumexp(tensor([0., 0.]), 0)
    tensor(0.6931)
    """
    d = input._data
    dims = _dims(dim, d.ndim, "logsumexp")
    out = d.dtype if d.dtype.kind in "fc" else D.get_default_dtype().np
    xp = array_module(d)
    x = d.astype(_acc(out), copy=False)
    axes = _axes(d, dims)
    if x.size == 0:
        r = xp.sum(x, axis=axes, keepdims=keepdim)
        r = xp.full(r.shape, -np.inf, dtype=out)
        return _make(r)
    r = _on_kernel("logsumexp", x, dims, keepdim, "logsumexp_reduce")
    if r is not None:  # float16 computes in float32
        return _make(r.astype(out, copy=False))
    with quiet():
        m = xp.amax(x.real, axis=axes, keepdims=True)  # a complex shift keeps its phase
        m = xp.where(xp.isfinite(m), m, 0).astype(x.dtype, copy=False)
        s = xp.sum(xp.exp(x - m), axis=axes, keepdims=True)
        r = xp.log(s) + m
    if not keepdim:
        r = r.reshape([n for i, n in enumerate(d.shape) if i not in dims]) if d.ndim else \
            r.reshape(())
    return _make(_own(r.astype(out, copy=False), d))


# ---------------------------------------------------------------------------- all / any
def _logical_reduce(name: str, doc: str):
    def impl(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        d = input._data
        dims = _dims(dim, d.ndim, name)
        # the array's method: NumPy's np.any adds a Python wrapper of about 1.5 us; a
        # reduction never aliases its input, only NumPy's scalar (all dims) needs wrapping
        r = getattr(d, name)(axis=_axes(d, dims), keepdims=keepdim)
        if d.dtype == np.uint8:
            return _make(array_module(d).asarray(r, dtype=np.uint8))
        return _make(np.asarray(r) if isinstance(r, np.generic) else r)

    impl.__name__, impl.__doc__ = name, doc
    return defop(name, differentiable=False, out=True)(impl)


all = _logical_reduce("all", """True where every element over ``dim`` is nonzero (uint8
    inputs give uint8, like PyTorch).

    >>> all(tensor([[True, False], [True, True]]), 1)
    tensor([False,  True])
    """)  # noqa: A001
any = _logical_reduce("any", """True where some element over ``dim`` is nonzero.

    >>> any(tensor([[True, False], [False, False]]), 1)
    tensor([ True, False])
    """)  # noqa: A001


@defop("count_nonzero", differentiable=False)
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of nonzero elements over ``dim`` (int64).

    >>> count_nonzero(tensor([[0, 1], [2, 3]]), 0)
    tensor([1, 2])
    """
    d = input._data
    dims = _dims(dim, d.ndim, "count_nonzero")
    xp = array_module(d)
    # the array module's count_nonzero: over all dims one C call (a Python int on NumPy),
    # over some its own sum of a mask
    r = xp.count_nonzero(d, axis=None if len(dims) == d.ndim else dims)
    return _make(xp.asarray(r, dtype=_int64))


# ---------------------------------------------------------------------------- scans
# a scan's running value: float64 for float32 (complex128 for complex64), float32 for float16,
# as PyTorch's CPU scans (a float32 running sum of a million 0.1s drifts by 1%); else the dtype
_SCAN_ACC = {_float32: np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128),
             _float16: _float32}


_scan_plans: dict = {}  # (shape, input dtype, dim, dtype) -> (dim wrapped, out, acc, P, M, Q)


def _scan(name: str, fn: str, doc: str):
    def impl(input: Tensor, dim: int, *, dtype=None) -> Tensor:
        d = input._data
        # the arguments' meaning is kept per shape, dtypes and dim (a bad one raises before
        # it is stored): working it out costs a fifth of a 4x64 scan
        key = (d.shape, d.dtype, dim, dtype, name) if dim.__class__ is int else None
        plan = _scan_plans.get(key)
        if plan is None:
            ax = _one_dim(dim, d.ndim, name)
            out = _out_dtype(d, dtype, name)
            plan = (ax, out, _SCAN_ACC.get(out, out)) + (
                (math.prod(d.shape[:ax]), d.shape[ax], math.prod(d.shape[ax + 1:])) if d.ndim
                else ())
            if key is not None:
                if len(_scan_plans) >= 4096:
                    _scan_plans.clear()
                _scan_plans[key] = plan
        if d.ndim == 0:
            return _make(d.astype(plan[1], copy=True))
        ax, out, acc, P, M, Q = plan
        a = d.astype(out, copy=False)
        if not a.flags.c_contiguous:
            a = array_module(d).ascontiguousarray(a)
        r, _ = _kernel("scan_dim", array_module(d))(a.reshape(P, M, Q), fn, acc)
        return _make(r.reshape(d.shape))

    impl.__name__, impl.__doc__ = name, doc
    return defop(name, out=True)(impl)


cumsum = _scan("cumsum", "sum", """Cumulative sum along ``dim``; integer inputs give int64.

    >>> cumsum(tensor([1, 2, 3]), 0)
    tensor([1, 3, 6])
    """)
cumprod = _scan("cumprod", "prod", """Cumulative product along ``dim``; integer inputs give
    int64.

    >>> cumprod(tensor([1, 2, 3]), 0)
    tensor([1, 2, 6])
    """)


# ---------------------------------------------------------------------------- selection
def _sorted_at(d, ax: int, pos, shape=None):
    """The values and int64 indices at positions ``pos`` of the stable ascending sort along
    ``ax``, shaped ``shape`` (by default like ``d`` with ``ax`` of size 1; a 0-d ``d`` as shape
    (1,)): a selection (the ``select_dim`` kernel), never a whole sort. ``pos``: an int, int64
    positions shaped like ``d`` with ``ax`` of size 1, or "median" (each row's lower median,
    its first NaN where it holds one: NaN sorts last) or "nanmedian" (the lower median of each
    row's numbers)."""
    a = d.reshape(1) if d.ndim == 0 else d
    if shape is None:
        shape = a.shape[:ax] + (1,) + a.shape[ax + 1:]
    if d.__class__ is _ndarray:  # the CPU kernel, without its checks of what this made; it
        global _ks               # works out the rules' positions in its pass over each row
        if _ks is None:
            from .kernels.cpu import select as _ks
        if pos.__class__ is int:
            pos = np.array(pos, _int64, ndmin=3)
        elif pos.__class__ is not str:
            pos = _pmq(np, pos, ax)
        return _ks._select_run(_pmq(np, a, ax), pos, shape)
    xp = array_module(d)
    if pos.__class__ is str:  # (CuPy: the rule's positions worked out on the arrays)
        n = a.shape[ax]
        if d.dtype.kind != "f":
            pos = (n - 1) // 2
        elif pos == "median":  # a row with NaN: its first NaN, which sorts after every number
            nans = (a != a).sum(axis=ax, keepdims=True)
            pos = xp.where(nans > 0, n - nans, (n - 1) // 2)
        else:
            pos = xp.maximum((a == a).sum(axis=ax, keepdims=True) - 1, 0) // 2
    pos = xp.array(pos, _int64, ndmin=3) if pos.__class__ is int else _pmq(xp, pos, ax)
    vals, idx = _kernel("select_dim", xp)(_pmq(xp, a, ax), pos)
    return vals.reshape(shape), idx.reshape(shape)


def _select_sorted(d, ax: int, pos, keepdim: bool):
    """Values and indices at positions ``pos`` of the stable ascending sort along ``ax``
    (see :func:`_sorted_at`), shaped as the op's result."""
    s = d.shape
    vals, idx = _sorted_at(d, ax, pos, () if not s else s[:ax] + (1,) + s[ax + 1:] if keepdim
                           else s[:ax] + s[ax + 1:])
    return _make(vals), _make(idx)


def _empty_pair(d, ax: int, keepdim: bool):
    xp = array_module(d)
    shape = list(d.shape)
    if keepdim:
        shape[ax] = 1
    else:
        del shape[ax]
    return _make(xp.empty(shape, d.dtype)), _make(xp.empty(shape, _int64))


@defop("median")
def _median_all(input: Tensor) -> Tensor:
    d = input._data
    xp = array_module(d)
    if d.dtype.kind == "b":
        raise NotImplementedError("median(): not implemented for 'Bool'")
    _ordered("median", d)
    n = d.size
    if n == 0:
        fill = np.nan if d.dtype.kind == "f" else np.iinfo(d.dtype).min
        return _make(xp.full((), fill, d.dtype))
    if xp is np:  # one Numba pass: a copy, then a quickselect (NaN: the first one)
        global _ks
        if _ks is None:
            from .kernels.cpu import select as _ks
        return _make(_ks.median_all(d))
    # CuPy: a copy, partitioned in place; NaN sorts last: any NaN is in part[k:], whose
    # maximum (>= part[k]) it then becomes
    k = (n - 1) // 2
    part = d.flatten()
    part.partition(k)
    return _make(xp.minimum(part[k:k + 1], part[k:].max()).reshape(()))


@defop("median_dim", out=True)
def _median_dim(input: Tensor, dim: int = -1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    d = input._data
    if d.dtype.kind == "b":
        raise NotImplementedError("median(): not implemented for 'Bool'")
    _ordered("median", d)
    ax = _one_dim(dim, d.ndim, "median")
    _check_nonempty(d, (ax,), "median")
    if d.size == 0:
        return _empty_pair(d, ax, keepdim)
    return _select_sorted(d, ax, "median", keepdim)


def median(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median of all elements; with ``dim``, ``(values, indices)`` along it. NaN
    propagates (a row with NaN gives NaN and the index of its first NaN).

    >>> median(tensor([1., 4., 2., 3.]))
    tensor(2.)
    """
    if dim is None:
        return _median_all(input)
    return return_types.median(*_median_dim(input, dim, keepdim))


@defop("kthvalue", out=True)
def _kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    d = input._data
    if d.dtype.kind == "b":
        raise NotImplementedError("kthvalue(): not implemented for 'Bool'")
    _ordered("kthvalue", d)
    ax = _one_dim(dim, d.ndim, "kthvalue")
    _check_nonempty(d, (ax,), "kthvalue")
    n = d.shape[ax] if d.ndim else 1
    if not _is_int(k) or not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {ax}")
    if d.size == 0:
        return _empty_pair(d, ax, keepdim)
    return _select_sorted(d, ax, int(k) - 1, keepdim)


@with_out(casting="no")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest element (1-based) along ``dim`` and its index.

    >>> kthvalue(tensor([3., 1., 2.]), 2)
    kthvalue(values=tensor(2.), indices=tensor(2))
    """
    return return_types.kthvalue(*_kthvalue(input, k, dim, keepdim))


@defop("mode", out=True)
def _mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    d = input._data
    _ordered("mode", d)
    ax = _one_dim(dim, d.ndim, "mode")
    _check_nonempty(d, (ax,), "mode")
    if d.size == 0:
        return _empty_pair(d, ax, keepdim)
    xp = array_module(d)
    nd = d.ndim
    rows = d.transpose([k for k in range(nd) if k != ax] + [ax]).reshape(-1, d.shape[ax]) \
        if nd else d.reshape(1, 1)
    shape = d.shape[:ax] + ((1,) if keepdim else ()) + d.shape[ax + 1:] if nd else ()
    if xp is np:  # one Numba pass per row: its sort, its longest run, its value's last index
        global _ks
        if _ks is None:
            from .kernels.cpu import select as _ks
        val, idx = _ks.mode_rows(rows)
        return _make(val.reshape(shape)), _make(idx.reshape(shape))
    # CuPy: rows along the last dim, sorted: the mode is the first longest run of equal values
    # (the smallest value on ties), its index the value's last occurrence in the row. A plain
    # sort of the values, then one comparison of the rows with their modes, costs a third of
    # the stable argsort and the gather that find the same index
    r, n = rows.shape
    i = xp.arange(r)
    srt = rows.copy()
    srt.sort(axis=1)
    start = xp.empty(r * n, bool)  # where a run starts, in the flat (r * n) sorted rows
    start[::n] = True
    start.reshape(r, n)[:, 1:] = srt[:, 1:] != srt[:, :-1]  # NaN != NaN: each its own run
    starts = start.nonzero()[0]
    # each element's run: the running count of starts, summed in int64
    run = start.astype(_int64)
    run.cumsum(out=run)
    run -= 1
    length = xp.arange(1, r * n + 1) - starts[run]  # each run so far
    last = length.reshape(r, n).argmax(1)  # the first position of the longest run's length
    val = srt[i, last]
    # the last occurrence of each row's mode (-0.0 and 0.0 are one value): the first of the
    # reversed row; a mode that is NaN (an all-NaN row: NaN sorts last, each its own run) is
    # the row's first element, as the stable sort orders equal NaNs
    idx = (n - 1) - _flip(rows == val[:, None], 1).argmax(1)
    if d.dtype.kind == "f":
        idx[val != val] = 0
    return (_make(rows[i, idx].reshape(shape)),
            _make(idx.astype(_int64, copy=False).reshape(shape)))


@with_out(casting="no")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest on ties) and the index of its last
    occurrence.

    >>> mode(tensor([2, 1, 2, 1, 3]))
    mode(values=tensor(1), indices=tensor(3))
    """
    return return_types.mode(*_mode(input, dim, keepdim))


@defop("sort", out=True)
def _sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    d = input._data
    _no_complex_sort("sort", d)
    ax = _one_dim(dim, d.ndim, "sort")
    xp = array_module(d)
    if d.ndim == 0:
        return _make(d.copy()), _make(xp.zeros((), _int64))
    idx = _argsort_desc(xp, d, ax) if descending else _argsort(xp, d, ax)
    idx = idx.astype(_int64, copy=False)
    return _make(_take_along(d, idx, ax)), _make(idx)


def _no_complex_sort(op: str, d) -> None:
    if d.dtype.kind == "c":  # PyTorch orders no complex numbers
        raise RuntimeError(f"{op}(): Sort does not support complex dtypes on CPU")


@with_out(casting="no")
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False):
    """Sort along ``dim``: ``(values, indices)``. The sort is always stable; NaN sorts as
    the largest value.

    >>> sort(tensor([3, 1, 2]), descending=True)
    sort(values=tensor([3, 2, 1]), indices=tensor([0, 2, 1]))
    """
    return return_types.sort(*_sort(input, dim, descending, stable))


@defop("argsort", differentiable=False)
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (stable).

    >>> argsort(tensor([3, 1, 2]))
    tensor([1, 2, 0])
    """
    d = input._data
    _no_complex_sort("argsort", d)
    ax = _one_dim(dim, d.ndim, "argsort")
    xp = array_module(d)
    if d.ndim == 0:
        return _make(xp.zeros((), _int64))
    idx = _argsort_desc(xp, d, ax) if descending else _argsort(xp, d, ax)
    return _make(idx.astype(_int64, copy=False))


@defop("topk", out=True)
def _topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    d = input._data
    _ordered("topk", d)
    ax = _one_dim(dim, d.ndim, "topk")
    if d.dtype.kind == "b":
        raise RuntimeError("topk(): does not support bool dtypes")
    n = d.shape[ax] if d.ndim else 1
    if not _is_int(k) or not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, size of dim {ax} "
                           f"is {n})")
    xp = array_module(d)
    if d.ndim == 0:
        if k == 0:
            return _make(xp.empty((0,), d.dtype)), _make(xp.empty((0,), _int64))
        return _make(d.copy()), _make(xp.zeros((), _int64))
    # the first k of the stable sort (ties in index order), selected without a whole sort
    vals, idx = _kernel("topk_dim", xp)(_pmq(xp, d, ax), int(k), largest)
    shape = d.shape[:ax] + (k,) + d.shape[ax + 1:]
    return _make(vals.reshape(shape)), _make(idx.reshape(shape))


@with_out(casting="no")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, sorted.

    >>> topk(tensor([1, 5, 3, 4]), 2)
    topk(values=tensor([5, 4]), indices=tensor([1, 3]))
    """
    return return_types.topk(*_topk(input, k, dim, largest, sorted))


@defop("unique", differentiable=False)
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim=None):
    """The distinct elements in ascending order; optionally the inverse indices (shaped like
    ``input``) and the counts. With ``dim``, the distinct slices along that dim. NaNs are
    never merged, like PyTorch.

    >>> unique(tensor([3, 1, 3, 2]), return_counts=True)
    (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    d = input._data
    if d.dtype.kind == "c":
        raise not_implemented("unique", d.dtype)
    xp = array_module(d)
    kw = {"return_inverse": return_inverse, "return_counts": return_counts}
    if xp is np:
        kw["equal_nan"] = False
    if dim is None:
        res = xp.unique(d.reshape(-1), **kw)
    else:
        ax = _one_dim(dim, d.ndim, "unique")
        if d.ndim == 0:
            res = xp.unique(d.reshape(-1), **kw)
        else:
            res = xp.unique(d, axis=ax, **kw)
    if not isinstance(res, tuple):
        return _make(res)
    out = [_make(res[0])]
    i = 1
    if return_inverse:
        inv = res[i].astype(_int64, copy=False)
        out.append(_make(inv.reshape(d.shape) if dim is None else inv.reshape(-1)))
        i += 1
    if return_counts:
        out.append(_make(res[i].astype(_int64, copy=False)))
    return tuple(out)



@defop("unique_consecutive", differentiable=False)
def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False, dim=None):
    """The first element of every run of equal consecutive elements (of the flattened tensor,
    or runs of equal slices along ``dim``); optionally the inverse indices and the run lengths.

    >>> unique_consecutive(tensor([1, 1, 2, 2, 3, 1]), return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 1]))
    """
    d = input._data
    if d.dtype.kind == "c":
        raise not_implemented("unique_consecutive", d.dtype)
    xp = array_module(d)
    if dim is None:
        rows = d.reshape(-1)
        change = rows[1:] != rows[:-1]
        inv_shape = d.shape
    else:
        ax = _one_dim(dim, d.ndim, "unique_consecutive")
        if d.ndim == 0:
            rows = d.reshape(1, 1)
        else:  # the other dims in any order: only whether slices are equal matters
            rows = d.swapaxes(0, ax).reshape(d.shape[ax], -1)
        change = (rows[1:] != rows[:-1]).any(axis=1) if rows.shape[1] else False
        inv_shape = (rows.shape[0],)
    # the array methods and slice assignments: NumPy's concatenate of ones, nonzero and diff
    # are Python-level wrappers of the same work; the values are a compress by the mask (half
    # the time of nonzero and a take at 256x1024)
    n = rows.shape[0]
    keep = xp.empty(n, bool)
    keep[:1] = True
    keep[1:] = change
    if dim is None:
        vals = rows[keep]
    else:
        vals = (d.reshape(1) if d.ndim == 0 else d).compress(keep, axis=0 if d.ndim == 0 else ax)
    out = [_make(vals)]
    if return_inverse:
        # the running count of the changes, in int64 first: a cumsum that casts bool to
        # int64 as it goes takes ten times as long (2.2 ms against 0.2 at 256x1024)
        inv = xp.empty(n, _int64)
        inv[:1] = 0
        inv[1:] = change
        inv.cumsum(out=inv)
        out.append(_make(inv.reshape(inv_shape)))
    if return_counts:
        starts = keep.nonzero()[0]
        ends = xp.empty(starts.shape, _int64)
        ends[:-1] = starts[1:]
        ends[-1:] = n
        ends -= starts
        out.append(_make(ends))
    return out[0] if len(out) == 1 else tuple(out)


# ---------------------------------------------------------------------------- statistics
_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op: str, input: Tensor, q, dim, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    """PyTorch's ``quantile_impl`` composed of registry ops (sort, gather, lerp), so the
    gradient flows to the selected elements: ranks ``q * (n - 1)`` over each sorted row (the
    count of non-NaN values for ``nanquantile``; a row holding NaN gives NaN for
    ``quantile``), moved by ``interpolation``, then interpolated between neighbours."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    d = input._data
    if not isinstance(q, Tensor):
        if not isinstance(q, numbers.Real) or isinstance(q, bool):
            raise TypeError(f"{op}(): argument 'q' (position 2) must be Tensor or float, not "
                            f"{type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    if d.size == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.dim() > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    if d.dtype not in (_float32, np.dtype(np.float64)):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q._data.dtype != d.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qd = q._data
        if not bool(((qd >= 0) & (qd <= 1)).all()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        qt = q
    else:
        qt = tensor(q, dtype=input.dtype, device=input.device)
    nd = d.ndim
    if dim is None:
        srt = sort(input.reshape(-1))[0]
        if keepdim:
            srt = srt.reshape((1,) * nd + (-1,))
    else:
        ax = _one_dim(dim, nd, op)
        x = input.reshape(1) if nd == 0 else input.unsqueeze(-1).transpose(ax, -1)
        srt = sort(x, -1)[0]
        if not keepdim and nd:
            srt = srt.squeeze(ax)
    n = srt.shape[-1]
    qv = qt.reshape(-1)
    # the NaN tests and counts and the integer positions carry no gradient: worked out on the
    # arrays (a registry call costs more than its array work at 4x64)
    s = srt._data
    if ignore_nan:
        ranks = qv * _make((s == s).sum(-1, keepdims=True) - 1)  # the count of numbers, - 1
        ranks = where(_make(ranks._data < 0), 0.0, ranks)
    else:
        ranks = where(_make(array_module(s).isnan(s).any(-1, keepdims=True)), float(n - 1),
                      qv * (n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    r = ranks._data
    below = _make(r.astype(_int64))
    out = gather(srt, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        out = lerp(out, gather(srt, -1, _make(array_module(r).ceil(r).astype(_int64))),
                   weights)
    return out.squeeze(-1) if qt.dim() == 0 else out.movedim(-1, 0)


@with_out(casting="no")
def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a float or a 1-D tensor of them, in [0, 1]) of all elements or
    along ``dim``; ``interpolation``: ``linear``, ``lower``, ``higher``, ``midpoint`` or
    ``nearest``. A slice holding NaN gives NaN. A 1-D ``q`` puts the quantiles first.

    >>> quantile(tensor([1., 2., 3., 4.]), 0.5)
    tensor(2.5000)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@with_out(casting="no")
def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """:func:`quantile` ignoring NaN (a slice of NaN only gives NaN).

    >>> nanquantile(tensor([1., float('nan'), 3.]), 0.5)
    tensor(2.)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


@with_out(casting="no")
def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median ignoring NaN (NaN where a slice holds NaN only); with ``dim``,
    ``(values, indices)`` along it. The values are a :func:`kthvalue` (all elements) or a
    :func:`gather` at indices from a stable argsort, so the gradient goes to the selected
    element.

    >>> nanmedian(tensor([1., float('nan'), 3., 2.]))
    tensor(2.)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"nanmedian(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = input._data
    if d.dtype.kind == "b":
        raise NotImplementedError("nanmedian(): not implemented for 'Bool'")
    if dim is None:
        if d.size == 0:
            return full((), math.nan if d.dtype.kind == "f" else 0, dtype=input.dtype,
                        device=input.device)
        # the lower median of the numbers, which sort before every NaN (of all NaN: the first),
        # found by the selection's own pass; its value taken by take, whose gradient goes to it
        return take(input, _make(_sorted_at(d.reshape(-1), 0, "nanmedian", ())[1]))
    ax = _one_dim(dim, d.ndim, "nanmedian")
    _check_nonempty(d, (ax,), "nanmedian")
    if d.ndim == 0:
        return return_types.nanmedian(input.clone(), input.new_zeros((), dtype=D.int64))
    if d.size == 0:
        return return_types.nanmedian(*_empty_pair(d, ax, keepdim))
    return return_types.nanmedian(*_nanmedian_dim(input, ax, keepdim))


def _nanmedian_dim(input: Tensor, ax: int, keepdim: bool):
    """The indices are worked out on the arrays (a stable argsort puts NaN last; the lower
    median of each row's numbers is at ``(count - 1) // 2``), the values are one
    :func:`gather` of ``input`` at them, so the gradient goes to the selected element."""
    idx = _sorted_at(input._data, ax, "nanmedian")[1]
    vals = gather(input, ax, _make(idx))
    if not keepdim:
        return vals.squeeze(ax), _make(idx.squeeze(ax))
    return vals, _make(idx)


def _hist_edges(op: str, d, bins, rng, dim: int):
    """The bin edges (an array of ``d``'s dtype) of one dimension: ``bins`` equal bins over
    ``rng`` (default: the data's min and max, widened by 0.5 each way when equal), or the
    given 1-D edge tensor."""
    xp = array_module(d)
    if isinstance(bins, Tensor):
        e = bins._data
        if e.dtype != d.dtype:
            raise RuntimeError(f"torch.{op}: input tensor and bins tensors should have the same "
                               f"dtype, but got input with dtype {_type_name(d.dtype).lower()} "
                               f"and bins for dimension {dim} with dtype "
                               f"{_type_name(e.dtype).lower()}")
        if e.ndim != 1:
            raise RuntimeError(f"torch.{op}: bins tensor should have one dimension, but got "
                               f"{e.ndim} dimensions in the bins tensor for dimension {dim}")
        if e.size < 1:
            raise RuntimeError(f"torch.{op}: bins tensor should have at least 1 element, but "
                               f"got {e.size} elements for dimension {dim}")
        if e.size > 1 and bool((e[1:] < e[:-1]).any()):
            raise RuntimeError(f"torch.{op}: bin edges must be increasing for dimension {dim}")
        return e
    if not _is_int(bins):
        raise TypeError(f"{op}(): argument 'bins' (position 2) must be int or Tensor, not "
                        f"{type(bins).__name__}")
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.{op}(): bins must be > 0, but got {bins} for dimension {dim}")
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif d.size:
        lo, hi = float(d.min()), float(d.max())
    else:
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise RuntimeError(f"torch.{op}: min should not exceed max, but got min {lo:g} max "
                           f"{hi:g} for dimension {dim}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.{op}: range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    # PyTorch's linspace in the input's dtype
    step = (hi - lo) / bins
    i = xp.arange(bins + 1, dtype=np.float64)
    e = xp.where(i < (bins + 1) // 2, lo + step * i, hi - step * (bins - i))
    return e.astype(d.dtype)


def _hist_check(op: str, input: Tensor, bins, weight, inner: int | None):
    d = input._data
    for i, b in enumerate(bins if isinstance(bins, (list, tuple)) else [bins]):
        if isinstance(b, Tensor) and b._data.dtype != d.dtype:
            raise RuntimeError(f"torch.{op}: input tensor and bins tensors should have the same "
                               f"dtype, but got input with dtype {_type_name(d.dtype).lower()} "
                               f"and bins for dimension {i} with dtype "
                               f"{_type_name(b._data.dtype).lower()}")
    if d.dtype not in (_float32, np.dtype(np.float64)):
        raise NotImplementedError(f"{op}(): \"histogramdd\" not implemented for "
                                  f"'{_type_name(d.dtype)}'")
    if weight is None:
        return None
    w = weight._data
    if w.shape != (d.shape if inner is None else d.shape[:-1]):
        shown = [d.size, 1] if inner is None else list(d.shape)
        raise RuntimeError(f"torch.{op}: if weight tensor is provided it should have the same "
                           "shape as the input tensor excluding its innermost dimension, but "
                           f"got input with shape {shown} and weight with shape "
                           f"{list(w.shape)}")
    if w.dtype != d.dtype:
        raise RuntimeError(f"torch.{op}: if weight tensor is provided, input tensor and weight "
                           f"tensor should have the same dtype, but got "
                           f"input({_type_name(d.dtype).lower()}), and "
                           f"weight({_type_name(w.dtype).lower()})")
    return w


@defop("histogram", differentiable=False, out=True)
def histogram(input: Tensor, bins, *, range=None, weight: Tensor | None = None,  # noqa: A002
              density: bool = False):
    """``(hist, bin_edges)`` of all elements: ``bins`` equal bins over ``range`` (default:
    the data's min and max) or the given increasing edges; ``weight``: per-element weights;
    ``density``: normalized to integrate to 1. Floating inputs only.

    >>> histogram(tensor([1., 2., 1.]), bins=2).hist
    tensor([2., 1.])
    """
    w = _hist_check("histogram", input, bins, weight, None)
    d = input._data
    edges = _hist_edges("histogram", d, bins, range, 0)
    xp = array_module(d)
    with quiet():  # density of no samples: 0 / 0
        if isinstance(bins, Tensor):  # any increasing edges: NumPy's binary search
            hist, _ = xp.histogram(d.reshape(-1), bins=edges, weights=None if w is None else
                                   w.reshape(-1), density=density)
        else:
            hist = _uniform_hist(xp, d.reshape(-1), edges, w, density)
    return return_types.histogram(_make(hist.astype(d.dtype)), _make(edges.copy()))


def _uniform_hist(xp, x, edges, w, density: bool):
    """``np.histogram(x, edges, weights=w, density=density)`` for the equal bins ``edges``
    (see :func:`_uniform_bins`). np.histogram sorts the data for an edge array: 93% of its
    time at 256x1024."""
    n = edges.size - 1
    if xp is np:  # one Numba pass: each value's bin and its count
        global _kr
        if _kr is None:
            from .kernels.cpu import reduce as _kr
        hist = _kr.histogram_uniform(x, edges, None if w is None else w.reshape(-1))
    else:
        keep = (x >= edges[0]) & (x <= edges[-1])  # (NaN and values outside dropped)
        pos = _uniform_bins(xp, x[keep], edges)
        if w is None:
            hist = xp.bincount(pos, minlength=n)
        else:  # (summed in float64, stored in the weights' dtype, as np.histogram)
            hist = xp.bincount(pos, weights=w.reshape(-1)[keep], minlength=n).astype(w.dtype)
    if density:
        hist = hist / xp.diff(edges).astype(np.float64) / hist.sum()
    return hist


def _uniform_bins(xp, x, edges, inside=None):
    """The bins of the values ``x`` (within the range of the equal bins ``edges``, or where
    the mask ``inside`` says: the others get some bin), PyTorch's linear interpolation with a
    local search: each element's bin computed from its position in the range, checked against
    its edges, and looked up by binary search only where that check fails (rounding at an
    edge)."""
    n = edges.size - 1
    lo, hi = edges[0], edges[-1]
    with quiet():  # (a range that rounds to one value gives NaN guesses: checked below)
        pos = ((x - lo) * (n / (hi - lo))).astype(np.intp)
    xp.minimum(pos, n - 1, out=pos)  # (ufuncs: np.clip's Python wrappers cost 5 us)
    xp.maximum(pos, 0, out=pos)
    # the bin of x is the last edge <= x (the top edge in the last bin: an infinite top here)
    upper = edges[1:].copy()
    upper[-1] = np.inf
    bad = (x < edges[pos]) | (x >= upper[pos])
    if inside is not None:
        bad &= inside
    if bool(bad.any()):
        pos[bad] = xp.minimum(xp.searchsorted(edges, x[bad], side="right") - 1, n - 1)
    return pos


@defop("histogramdd", differentiable=False)
def histogramdd(input: Tensor, bins, *, range=None, weight: Tensor | None = None,  # noqa: A002
                density: bool = False):
    """The D-dimensional histogram of the points in ``input``'s last dimension (shape
    ``(..., D)``): ``(hist, bin_edges)`` with one edge tensor per dimension; ``bins`` is an
    int, one int per dimension or one edge tensor per dimension; ``range``: ``[lo0, hi0, lo1,
    hi1, ...]``.

    >>> histogramdd(tensor([[0., 0.], [1., 1.]]), bins=2).hist
    tensor([[1., 0.],
            [0., 1.]])
    """
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    w = _hist_check("histogramdd", input, bins, weight, d.shape[-1])
    k = d.shape[-1]
    pts = d.reshape(-1, k)
    if isinstance(bins, (list, tuple)):
        if len(bins) != k:
            raise RuntimeError(f"torch.histogramdd: expected {k} sequences of bin edges for "
                               f"each of the {k} dimensions of the input, but got {len(bins)}")
        per = list(bins)
    else:
        per = [bins] * k
    if range is not None and len(range) != 2 * k:
        raise RuntimeError(f"torch.histogramdd: for a {k}-dimensional histogram range should "
                           f"have {2 * k} elements, but got {len(range)}")
    edges = [_hist_edges("histogramdd", pts[:, i], per[i], None if range is None else
                         range[2 * i:2 * i + 2], i) for i in builtins.range(k)]
    # np.histogramdd's binning without its binary search of every coordinate (76% of its
    # time at 131072x2): each point's bin per dimension (equal bins: as histogram's), the flat
    # bins of the points inside every range counted by one bincount (the points themselves
    # are not selected: a boolean selection of rows costs more than all the rest)
    xp = array_module(d)
    nbins = tuple(e.size - 1 for e in edges)
    if xp is np:  # one Numba pass over the points: their flat bins, counted as they go
        global _kr
        if _kr is None:
            from .kernels.cpu import reduce as _kr
        hist = _kr.histogram_dd(pts, edges, [not isinstance(b, Tensor) for b in per],
                                None if w is None else w.reshape(-1)).reshape(nbins)
    else:
        keep = flat = None
        for i, e in enumerate(edges):
            c = pts[:, i]
            inside = (c >= e[0]) & (c <= e[-1])  # (NaN and values outside the range dropped)
            if isinstance(per[i], Tensor):  # any increasing edges: the last edge <= a value
                pos = xp.minimum(xp.searchsorted(e, c, side="right") - 1, nbins[i] - 1)
            else:
                pos = _uniform_bins(xp, c, e, inside)
            keep = inside if keep is None else keep & inside
            flat = pos if flat is None else flat * nbins[i] + pos
        hist = xp.bincount(flat[keep], None if w is None else w.reshape(-1)[keep],
                           minlength=math.prod(nbins)).astype(np.float64).reshape(nbins)
    if density:  # np.histogramdd's: over each dimension's bin widths, then the total
        with quiet():  # (no samples: 0 / 0)
            total = hist.sum()
            for i, e in enumerate(edges):
                shape = [1] * k
                shape[i] = nbins[i]
                hist = hist / xp.diff(e).reshape(shape)
            hist /= total
    return return_types.histogramdd(_make(hist.astype(d.dtype)),
                                    tuple(_make(e.copy()) for e in edges))


def _trapz_x(op: str, y: Tensor, x: Tensor, dim: int) -> Tensor:
    """PyTorch's spacing from sample points: ``x`` (1-D along ``dim``, or broadcast against
    ``y`` from the left) differenced along ``dim``."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.reshape(shape)
    elif x.dim() < y.dim():
        x = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    return x.narrow(dim, 1, x.shape[dim] - 1) - x.narrow(dim, 0, x.shape[dim] - 1)


def _trapz_args(op: str, y, x, dx, dim):
    if not isinstance(y, Tensor):
        raise TypeError(f"{op}(): argument 'y' (position 1) must be Tensor, not "
                        f"{type(y).__name__}")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{op}() received an invalid combination of arguments: 'x' must be a "
                        f"Tensor, not {type(x).__name__}")
    if x is not None and dx is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: give either "
                        "'x' or 'dx', not both")
    if dx is not None and (not isinstance(dx, numbers.Real) or isinstance(dx, bool)):
        raise RuntimeError(f"{op}: Currently, we only support dx as a real number.")
    if y.dim() == 0:
        raise IndexError(f"{op}(): Dimension specified as {dim} but tensor has no dimensions")
    d = _one_dim(dim, y.dim(), op)
    if y.dtype == D.bool or (x is not None and x.dtype == D.bool):
        raise RuntimeError(f"{op}: received a bool input for `{'y' if y.dtype == D.bool else 'x'}`"
                           ", but bool is not supported")
    return d


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: over sample points ``x`` or a constant spacing
    ``dx`` (default 1).

    >>> trapezoid(tensor([1., 2., 3.]))
    tensor(4.)
    """
    d = _trapz_args("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:
        shape = list(y.shape)
        del shape[d]
        return y.new_zeros(shape)
    if x is not None:
        step = _trapz_x("trapezoid", y, x, d)
        n = y.shape[d]
        return ((y.narrow(d, 0, n - 1) + y.narrow(d, 1, n - 1)) * step).sum(d) / 2.0
    dx = 1 if dx is None else dx
    return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal integral along ``dim`` (one element fewer than ``y``).

    >>> cumulative_trapezoid(tensor([1., 2., 3.]))
    tensor([1.5000, 4.0000])
    """
    d = _trapz_args("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[d]
    left, right = y.narrow(d, 0, builtins.max(n - 1, 0)), y.narrow(d, builtins.min(n, 1),
                                                                  builtins.max(n - 1, 0))
    if x is not None:
        step = _trapz_x("cumulative_trapezoid", y, x, d)
        return cumsum((left + right) * step, d) / 2.0
    dx = 1 if dx is None else dx
    return cumsum(dx / 2.0 * (left + right), d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """The gradient by central differences in the interior and one-sided differences of
    ``edge_order`` (1 or 2) at the boundaries, along ``dim`` (every dim by default);
    ``spacing``: a scalar, one scalar per dim, or one 1-D coordinate tensor per dim.

    >>> gradient(tensor([1., 4., 9.]))
    (tensor([3., 4., 5.]),)
    """
    from ._shape import cat

    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    nd = input.dim()
    dims = None if dim is None else ([dim] if _is_int(dim) else list(dim))
    if isinstance(spacing, (list, tuple)):
        sp = list(spacing)
        n_sp = len(sp)
    else:
        sp, n_sp = None, None
    if input.dtype == D.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if n_sp is not None and dims is None and n_sp != nd:
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {nd}', since dim argument "
                           f"was not given, but got a list of length {n_sp}")
    if n_sp is not None and dims is not None and n_sp != len(dims):
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's "
                           "spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {n_sp} and a dim argument of length "
                           f"{len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(builtins.range(nd)) if dims is None else [_wrap(x, nd, "gradient")
                                                           for x in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("gradient(): dim appears multiple times in the list of dims")
    for a in dims:
        if input.shape[a] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if sp is None:
        sp = [spacing] * len(dims)

    def sl(a, start, stop=None):
        n = input.shape[a]
        start = start % n if start < 0 else start
        stop = n if stop is None else (stop % n if stop < 0 else stop)
        return input.narrow(a, start, stop - start)

    out = []
    for a, h in zip(dims, sp):
        if isinstance(h, Tensor):
            if h.dim() != 1:
                raise RuntimeError("torch.gradient expected each element of spacing to have one "
                                   f"dimension, but got an element with {h.dim()} dimensions!")
            shape = [1] * nd
            shape[a] = -1
            ax = h[1:] - h[:-1]
            dx1, dx2 = ax[:-1], ax[1:]
            ca = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
            cb = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            cc = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            center = ca * sl(a, 0, -2) + cb * sl(a, 1, -1) + cc * sl(a, 2)
            if edge_order == 1:
                pre = (sl(a, 1, 2) - sl(a, 0, 1)) / ax[0]
                app = (sl(a, -1) - sl(a, -2, -1)) / ax[-1]
            else:
                a0, a1, z1, z2 = ax[0], ax[1], ax[-1], ax[-2]
                pre = (-(2.0 * a0 + a1) / (a0 * (a0 + a1)) * sl(a, 0, 1)
                       + (a0 + a1) / (a0 * a1) * sl(a, 1, 2)
                       + (-a0) / (a1 * (a0 + a1)) * sl(a, 2, 3))
                app = (z1 / (z2 * (z1 + z2)) * sl(a, -3, -2)
                       - (z1 + z2) / (z1 * z2) * sl(a, -2, -1)
                       + (2 * z1 + z2) / (z1 * (z1 + z2)) * sl(a, -1))
        else:
            center = (sl(a, 2) - sl(a, 0, -2)) / h / 2
            if edge_order == 1:
                pre = (sl(a, 1, 2) - sl(a, 0, 1)) / h
                app = (sl(a, -1) - sl(a, -2, -1)) / h
            else:
                pre = (sl(a, 0, 1) * -1.5 + sl(a, 1, 2) * 2 - sl(a, 2, 3) * 0.5) / h
                app = (sl(a, -3, -2) * 0.5 + sl(a, -2, -1) * -2 + sl(a, -1) * 1.5) / h
        out.append(cat([pre, center, app], a))
    return tuple(out)
