"""``torch.*`` names and Tensor methods that ember lacked: softmax / log_softmax, nan_to_num,
diff, rot90, isin, bucketize, searchsorted, bincount, histc, cummax / cummin, logcumsumexp,
scatter_reduce, tril_indices / triu_indices, the window functions, the in-place view and
``add*`` forms (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``, ``clamp_min_``,
``addmm_``, ...), thread-count and determinism switches.

Composites of registry ops get their gradients from those ops; the new registry ops are
``scatter_reduce`` (differentiable, derivative in ember-autograd's ``derivatives_extra.py``),
``cummax`` / ``cummin`` (differentiable, derivative in ``derivatives_nn.py``) and the
non-differentiable ``isin``, ``bucketize``, ``searchsorted``, ``bincount`` and ``histc``.
"""
from __future__ import annotations

import math
import numbers
import os
import warnings

import ml_dtypes
import numpy as np

from . import _dtype as D
from ._checks import (
    arg_type_error,
    check_dtype,
    check_int,
    checked_scalar,
    not_implemented,
    scalar_type_name,
)
from ._complex import complex as _complex
from ._creation import empty_strided, ones_like, tensor, tril, triu
from ._device import CPU, DEFAULT_DEVICE, to_device
from ._fpstate import quiet
from ._indexing import put_
from ._nn_ops import _log_softmax, _softmax
from ._pointwise import exp, log
from ._reduction import _on_kernel, _one_dim, _pmq, _return_type, _wrap, sort
from ._registry import array_module, defop, with_out
from ._scatter import _scatter_check, _scatter_raw
from ._shape import _permute, _transpose_perm, cat, flip, slice_view
from ._tensor import Tensor, _legacy_dtype_from_name, become
from .kernels import get as _kernel

_make = Tensor._make
_F32 = np.dtype(np.float32)

__all__ = [
    "softmax", "log_softmax", "nan_to_num", "nan_to_num_", "diff", "rot90", "isin",
    "bucketize", "searchsorted", "bincount", "histc", "cummax", "cummin", "logcumsumexp",
    "scatter_reduce", "tril_indices", "triu_indices", "hann_window", "hamming_window",
    "blackman_window", "bartlett_window", "kaiser_window", "clamp_min_", "clamp_max_",
    "addmm_", "addmv_", "set_num_threads", "get_num_threads", "set_num_interop_threads",
    "get_num_interop_threads", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode", "get_deterministic_debug_mode", "isposinf", "isneginf",
    "isreal", "signbit", "deg2rad", "rad2deg", "positive", "msort", "pi", "e", "inf", "nan",
    "newaxis", "deg2rad_", "rad2deg_", "renorm", "renorm_", "cov", "corrcoef", "index_reduce",
    "index_reduce_", "memory_format", "contiguous_format", "preserve_format", "channels_last",
    "channels_last_3d", "legacy_contiguous_format", "get_default_device", "set_default_device",
    "set_default_tensor_type", "get_float32_matmul_precision", "set_float32_matmul_precision",
    "set_flush_denormal", "set_warn_always", "is_warn_always_enabled", "typename", "is_nonzero",
    "is_same_size", "is_signed", "get_device", "is_conj", "is_neg", "resolve_conj",
    "resolve_neg", "detach", "detach_", "fill",
]

pi, e, inf, nan, newaxis = math.pi, math.e, math.inf, math.nan, None


class extra_return_types:
    cummax = _return_type("cummax", ["values", "indices"])
    cummin = _return_type("cummin", ["values", "indices"])


# ---------------------------------------------------------------------------- softmax
def _softmax_in(input: Tensor, dim, dtype, op: str):
    if dtype is not None:
        input = input.to(dtype=dtype)
    elif not input.is_floating_point():  # PyTorch has no kernel for bool or integer tensors
        raise not_implemented(op, input._data.dtype)
    return input


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (``torch.softmax``): the registry
    op ``_softmax``.

    >>> softmax(tensor([0., 0.]), 0)
    tensor([0.5000, 0.5000])
    """
    return _softmax(_softmax_in(input, dim, dtype, "softmax"), dim, False)


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``(x - max) - log(sum(exp(x - max)))`` along ``dim`` (``torch.log_softmax``): the
    registry op ``_log_softmax``.

    >>> log_softmax(tensor([0., 0.]), 0)
    tensor([-0.6931, -0.6931])
    """
    return _log_softmax(_softmax_in(input, dim, dtype, "log_softmax"), dim, False)


# ---------------------------------------------------------------------------- elementwise
_FINITE: dict = {}  # dtype -> (lowest, largest) finite value
_NAN_TO_NUM_DTYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64",
                                                      "complex128"))


@defop("nan_to_num", out=True)
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
    dtype's largest and lowest finite values); a complex tensor's parts each on their own.
    One ``nan_to_num`` of the array module (bfloat16 through float32).

    >>> nan_to_num(tensor([float('nan'), 1.]))
    tensor([0., 1.])
    """
    d = input._data
    dt = d.dtype
    if not D.is_float_np(dt) and dt.kind != "c":
        return _make(d.copy())
    lo_hi = _FINITE.get(dt)
    if lo_hi is None:
        fi = ml_dtypes.finfo(dt)
        lo_hi = _FINITE[dt] = (float(fi.min), float(fi.max))
    # the kernel covers float32 / float64 and complex; float16 and bfloat16 go through float32
    # (their values, and replacements rounded to them, are exact there)
    w = d if dt in _NAN_TO_NUM_DTYPES else d.astype(np.float32)
    r = _kernel("nan_to_num", array_module(d))(
        w, 0.0 if nan is None else nan, lo_hi[1] if posinf is None else posinf,
        lo_hi[0] if neginf is None else neginf)
    if r.dtype == dt:
        return _make(r)
    with quiet():  # a replacement beyond float16's range: inf, as PyTorch
        return _make(r.astype(dt))


def nan_to_num_(input: Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    """In-place :func:`nan_to_num`."""
    return input.copy_(nan_to_num(input, nan, posinf, neginf))


@defop("isposinf", out=True, differentiable=False)
def isposinf(input: Tensor) -> Tensor:
    """True where ``input`` is +inf.

    >>> isposinf(tensor([1., float('inf')]))
    tensor([False,  True])
    """
    d = input._data
    if d.dtype.kind == "c":
        raise RuntimeError("isposinf(): isposinf does not support complex inputs.")
    # one comparison ufunc for every real dtype (bfloat16 too; integers and bool are never
    # infinite); NumPy's isposinf is a Python wrapper around the same test
    return _make(d == math.inf)


@defop("isneginf", out=True, differentiable=False)
def isneginf(input: Tensor) -> Tensor:
    """True where ``input`` is -inf.

    >>> isneginf(tensor([1., -float('inf')]))
    tensor([False,  True])
    """
    d = input._data
    if d.dtype.kind == "c":
        raise RuntimeError("isneginf(): isneginf does not support complex inputs.")
    # one comparison ufunc for every real dtype (bfloat16 too; integers and bool are never
    # infinite); NumPy's isneginf is a Python wrapper around the same test
    return _make(d == -math.inf)


@defop("signbit", out=True, differentiable=False)
def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (negative numbers and -0.0).

    >>> signbit(tensor([-0.0, 1.0, -2.0]))
    tensor([ True, False,  True])
    """
    d = input._data
    return _make(array_module(d).signbit(d))


def isreal(input: Tensor) -> Tensor:
    """True everywhere for real tensors (``torch.isreal``).

    >>> isreal(tensor([1., 2.]))
    tensor([True, True])
    """
    return ones_like(input, dtype=D.bool)


@with_out
def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians.

    >>> deg2rad(tensor([180.]))
    tensor([3.1416])
    """
    x = input if input.is_floating_point() else input.to(dtype=D._default[0])
    return x * (math.pi / 180)


@with_out
def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees.

    >>> rad2deg(tensor([3.14159265]))
    tensor([180.])
    """
    x = input if input.is_floating_point() else input.to(dtype=D._default[0])
    return x * (180 / math.pi)


def positive(input: Tensor) -> Tensor:
    """``input`` itself (``torch.positive``; refuses bool).

    >>> positive(tensor([1, -2]))
    tensor([ 1, -2])
    """
    if input.dtype == D.bool:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


@with_out
def msort(input: Tensor) -> Tensor:
    """Sort along the first dim (``torch.msort``).

    >>> msort(tensor([[3, 1], [1, 2]]))
    tensor([[1, 1],
            [3, 2]])
    """
    return sort(input, 0).values


# ---------------------------------------------------------------------------- shape-ish
@with_out
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """``n``-th forward difference along ``dim`` (after concatenating ``prepend`` and
    ``append``).

    >>> diff(tensor([1, 3, 6, 10]))
    tensor([2, 3, 4])
    """
    shape = input._data.shape
    if not shape:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"diff(): order must be non-negative but got {n}")
    d = _one_dim(dim, len(shape), "diff")
    if prepend is None and append is None:
        x, m = input, shape[d]
    else:
        parts = [t if t.dim() else t.expand(*[1 if i == d else s for i, s in enumerate(shape)])
                 for t in (prepend, input, append) if t is not None]
        x = cat(parts, d)
        m = x._data.shape[d]
    boolean = x._data.dtype.kind == "b"
    for _ in range(min(n, m)):  # each difference is one shorter; an empty dim stays empty
        m -= 1
        # the two overlapping windows: narrow's registry op, its bounds known to hold
        a, b = slice_view(x, d, 1, m + 1), slice_view(x, d, 0, m)
        x = (a != b) if boolean else a - b
    return x


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (first towards second).

    >>> rot90(tensor([[1, 2], [3, 4]]))
    tensor([[2, 4],
            [1, 3]])
    """
    check_int("rot90", "k", 2, k)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = _wrap(dims[0], nd, "rot90"), _wrap(dims[1], nd, "rot90")
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return _permute(flip(input, d1), _transpose_perm(nd, d0, d1))
    if k == 2:
        return flip(input, d0, d1)
    if k == 3:
        return _permute(flip(input, d0), _transpose_perm(nd, d0, d1))
    return input.clone()


# ---------------------------------------------------------------------------- searching
@defop("isin", out=True, differentiable=False)
def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """True where an element of ``elements`` is in ``test_elements`` (either may be a
    scalar).

    >>> isin(tensor([1, 2, 3]), tensor([2, 5]))
    tensor([False,  True, False])
    """
    # PyTorch takes a tensor or a Python number for either (not both numbers), no lists
    for name, v in (("elements", elements), ("test_elements", test_elements)):
        if isinstance(v, Tensor):
            if v._data.dtype.kind in "bc":
                raise RuntimeError("isin(): Unsupported input type encountered for isin(): "
                                   f"{scalar_type_name(v._data.dtype)}")
        elif not isinstance(v, (numbers.Number, np.generic)) or isinstance(v, bool):
            raise arg_type_error("isin", name, None, v, "Tensor or Number")
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected at least one Tensor argument")
    ref = elements._data if isinstance(elements, Tensor) else test_elements._data
    xp = array_module(ref)
    a = elements._data if isinstance(elements, Tensor) else xp.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    return _make(xp.asarray(xp.isin(a, b, invert=invert)))


def _search(op: str, seq, values, right: bool, out_int32: bool, side, sorter):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{op}(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{op}(): side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    for a in (seq, getattr(values, "_data", None)):
        if a is not None and a.dtype.kind == "c":
            raise not_implemented(op, a.dtype)
    if seq.ndim == 0:
        raise RuntimeError(f"{op}(): boundaries tensor should have positive dimension, but got "
                           "0 dimension")
    xp = array_module(seq)
    if not isinstance(values, Tensor) and (not isinstance(values, (numbers.Number, np.generic))
                                           or isinstance(values, bool)):
        raise arg_type_error(op, "input", None, values, "Tensor or Number")
    v = values._data if isinstance(values, Tensor) else xp.asarray(values)
    s = seq if sorter is None else xp.take_along_axis(seq, sorter._data, -1)
    mode = "right" if right else "left"
    if s.ndim <= 1:
        r = xp.searchsorted(s, v, side=mode)
    else:
        if s.shape[:-1] != v.shape[:-1]:
            raise RuntimeError(f"{op}(): boundaries tensor should be 1 dimension or the first "
                               "N-1 dimensions of boundaries tensor and input value tensor must "
                               f"match, but we got boundaries tensor {list(s.shape)} and input "
                               f"value tensor {list(v.shape)}")
        flat_s = s.reshape(-1, s.shape[-1])
        flat_v = v.reshape(-1, v.shape[-1])
        r = xp.stack([xp.searchsorted(a, b, side=mode) for a, b in zip(flat_s, flat_v)])
        r = r.reshape(v.shape)
    return _make(xp.asarray(r).astype(np.int32 if out_int32 else np.int64, copy=False))


@defop("searchsorted", out=True, differentiable=False)
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None) -> Tensor:
    """Indices where ``input`` would be inserted into the innermost sorted rows of
    ``sorted_sequence`` to keep them sorted.

    >>> searchsorted(tensor([1, 3, 5]), tensor([3, 6]))
    tensor([1, 3])
    """
    return _search("searchsorted", sorted_sequence._data, input, right, out_int32, side,
                   sorter)


@defop("bucketize", out=True, differentiable=False)
def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """Index of the bucket of 1-d ``boundaries`` each element of ``input`` falls into.

    >>> bucketize(tensor([1, 4, 9]), tensor([2, 4, 8]))
    tensor([0, 1, 3])
    """
    if boundaries.dim() != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.dim()})")
    return _search("bucketize", boundaries._data, input, right, out_int32, None, None)


@defop("bincount", differentiable=False)
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count of each value of a 1-d non-negative int tensor (weighted sums with ``weights``).

    >>> bincount(tensor([0, 1, 1, 3]))
    tensor([1, 2, 0, 1])
    """
    d = input._data
    if d.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    check_dtype("bincount", d.dtype, bool_ok=False, half_ok=False, float_ok=False)
    if d.size and int(d.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = array_module(d)
    if weights is None:
        return _make(xp.bincount(d, minlength=minlength).astype(np.int64))
    w = weights._data
    out = w.dtype if w.dtype.kind == "f" else np.float64
    return _make(xp.bincount(d, weights=w, minlength=minlength).astype(out))


@defop("histc", out=True, differentiable=False)
def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:  # noqa: A002
    """Histogram of ``input`` in ``bins`` equal bins over ``[min, max]`` (the data's range
    when both are 0); values outside are ignored.

    >>> histc(tensor([1., 2., 1.]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    d = input._data
    if d.dtype.kind != "f":
        raise NotImplementedError(f"histc(): \"histogram_cpu\" not implemented for "
                                  f"'{scalar_type_name(d.dtype)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0")
    xp = array_module(d)
    lo, hi = float(min), float(max)
    if lo == hi and d.size:
        lo, hi = float(d.min()), float(d.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc(): max must be larger than min")
    # PyTorch's linear binning, in the input's dtype: (x - min) * bins / (max - min), the max
    # itself in the last bin, values outside (and NaN) dropped; np.histogram's Python-level
    # edges and corrections cost 30 us at 4x64
    x = d.reshape(-1)
    x = x[(x >= lo) & (x <= hi)]
    lo_, span = d.dtype.type(lo), d.dtype.type(hi) - d.dtype.type(lo)
    pos = ((x - lo_) * d.dtype.type(bins) / span).astype(np.int64)
    return _make(xp.bincount(xp.minimum(pos, bins - 1), minlength=bins).astype(d.dtype))


# ---------------------------------------------------------------------------- scans
def _cum(kind, name: str, largest: bool):
    # one registry op (its derivative: the gradient scattered back to the indices), one
    # kernel call for the values and the indices
    scan = None  # kernels/cpu/scan.py, imported by the first call on the CPU (Numba)

    def impl(input: Tensor, dim: int):
        nonlocal scan
        d = input._data
        if d.ndim == 0:
            _one_dim(dim, 1, name)  # a 0-d tensor takes dim 0 or -1 only
            return _make(d.copy()), _make(array_module(d).zeros((), np.int64))
        ax = _one_dim(dim, d.ndim, name)
        if d.__class__ is np.ndarray:  # the CPU kernel, its results in the input's shape
            if scan is None:
                from .kernels.cpu import scan
            vals, idx = scan._extreme_run(_pmq(np, d, ax), d.shape, largest)
            return _make(vals), _make(idx)
        xp = array_module(d)
        vals, idx = _kernel("scan_dim", xp)(_pmq(xp, d, ax), "max" if largest else "min")
        return _make(vals.reshape(d.shape)), _make(idx.reshape(d.shape))

    impl.__name__ = "_" + name
    op = defop(name, out=True)(impl)

    def public(input: Tensor, dim: int):
        return kind(*op(input, dim))

    public.__name__ = name
    public.__doc__ = (f"Running {'maximum' if name == 'cummax' else 'minimum'} along ``dim``: "
                      f"``(values, indices)``.\n\n    >>> {name}(tensor([1, 3, 2]), 0).values"
                      f"\n    tensor([1, {3 if name == 'cummax' else 1}, "
                      f"{3 if name == 'cummax' else 1}])\n")
    return with_out(casting="no")(public)


cummax = _cum(extra_return_types.cummax, "cummax", True)
cummin = _cum(extra_return_types.cummin, "cummin", False)


@with_out
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))``, computed without overflow.

    >>> logcumsumexp(tensor([0., 0.]), 0)
    tensor([0.0000, 0.6931])
    """
    a = input._data
    check_dtype("logcumsumexp", a.dtype, bool_ok=False, int_ok=False)
    d = _one_dim(dim, a.ndim, "logcumsumexp")
    if a.ndim == 0 or not a.shape[d]:  # (an empty dim: nothing to sum, as in PyTorch)
        return input.clone()
    # the shift is a constant of the gradient: worked out on the array, not by registry ops
    # (NaN propagates; an infinite maximum shifts by 0)
    m = a.max(axis=d, keepdims=True)
    xp = array_module(a)
    m = _make(xp.where(xp.isinf(m), 0, m))
    return log(exp(input - m).cumsum(d)) + m


# ---------------------------------------------------------------------------- scatter_reduce
# the scatter kernel's mode of each reduction, and the neutral fill of the positions that
# ``include_self=False`` resets (amax / amin: by dtype, below)
_SCATTER_MODE = {"sum": "add", "mean": "add", "prod": "multiply"}
_SCATTER_FILL = {"sum": 0, "mean": 0, "prod": 1}


@defop("scatter_reduce", out=True)
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Reduce ``src`` into a copy of ``input`` at ``index`` along ``dim`` with ``reduce``
    (``'sum'``, ``'prod'``, ``'mean'``, ``'amax'``, ``'amin'``).

    >>> scatter_reduce(tensor([0., 0.]), 0, tensor([0, 0, 1]), tensor([1., 2., 3.]), 'amax')
    tensor([2., 3.])
    """
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    x, idx, s = input._data, index._data, src._data
    if idx.dtype != np.int64:
        raise RuntimeError("scatter_reduce(): Expected dtype int64 for index")
    if x.dtype != s.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, "
                           f"got {x.dtype} and {s.dtype}")
    # scatter's checks: dims, index sizes against self and src (0-d as 1-d); the kernel
    # checks the range
    idx, ax, dshape, ishape = _scatter_check("scatter_reduce", input, dim, index, src,
                                             check_range=False)
    x, s = x.reshape(dshape), s.reshape(s.shape or (1,))
    xp = array_module(x)
    out = xp.array(x, copy=True, order="C")
    hit = cnt = None
    if reduce == "mean" or not include_self:  # which positions the index reaches, how often
        cnt = xp.zeros(x.shape, np.int64)
        _scatter_raw(cnt, "scatter_reduce", idx, ax, dshape, ishape, 1, "add")
        hit = cnt > 0
    if not include_self:
        fill = _SCATTER_FILL.get(reduce)
        if fill is None:
            fill = -np.inf if reduce == "amax" else np.inf
            if x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                fill = info.min if reduce == "amax" else info.max
        xp.copyto(out, out.dtype.type(fill), where=hit)
    mode = _SCATTER_MODE.get(reduce, reduce)
    _scatter_raw(out, "scatter_reduce", idx, ax, dshape, ishape, s, mode)
    if reduce == "mean":  # the sums divided by the counts (in the input's dtype)
        if include_self:
            cnt += 1
        cnt = xp.maximum(cnt, 1).astype(out.dtype)
        xp.copyto(out, out // cnt if x.dtype.kind in "iu" else out / cnt, where=hit)
    return _make(out.reshape(input._data.shape))


# ---------------------------------------------------------------------------- factories
def _index_pairs(row: int, col: int, offset: int, lower: bool, dtype, device):
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or D.int64, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """``(2, N)`` coordinates of the lower triangle (diagonal ``offset``) of a ``row`` x
    ``col`` matrix.

    >>> tril_indices(2, 2)
    tensor([[0, 1, 1],
            [0, 0, 1]])
    """
    return _index_pairs(row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """``(2, N)`` coordinates of the upper triangle of a ``row`` x ``col`` matrix.

    >>> triu_indices(2, 2)
    tensor([[0, 0, 1],
            [0, 1, 1]])
    """
    return _index_pairs(row, col, offset, False, dtype, device)


def _window(name, values):
    def fn(window_length: int, periodic: bool = True, *args, dtype=None, layout=None,
           device=None, requires_grad: bool = False, **kw) -> Tensor:
        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got "
                               f"window_length={window_length}")
        dt = dtype or D.get_default_dtype()
        if window_length == 0:
            arr = np.zeros(0)
        elif window_length == 1:
            arr = np.ones(1)
        else:
            n = window_length + 1 if periodic else window_length
            arr = values(n, *args, **kw)[:window_length]
        return tensor(arr, dtype=dt, device=device, requires_grad=requires_grad)

    fn.__name__ = name
    return fn


def _hann(n):
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1))


def _hamming(n, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1))


def _blackman(n):
    k = np.arange(n) / (n - 1)
    return 0.42 - 0.5 * np.cos(2 * np.pi * k) + 0.08 * np.cos(4 * np.pi * k)


def _bartlett(n):
    k = np.arange(n)
    return 1 - np.abs(2 * k / (n - 1) - 1)


def _kaiser(n, beta=12.0):
    k = np.arange(n)
    return np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (n - 1) - 1) ** 2, 0, None))) / np.i0(beta)


hann_window = _window("hann_window", _hann)
hann_window.__doc__ = """Hann window (``periodic``: for spectral analysis, length N+1 cut to N).

    >>> hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
hamming_window = _window("hamming_window", _hamming)
hamming_window.__doc__ = """Hamming window ``alpha - beta cos(2 pi n / (N - 1))``.

    >>> hamming_window(3, periodic=False)
    tensor([0.0800, 1.0000, 0.0800])
    """
blackman_window = _window("blackman_window", _blackman)
blackman_window.__doc__ = """Blackman window.

    >>> blackman_window(3, periodic=False).shape
    ember.Size([3])
    """
bartlett_window = _window("bartlett_window", _bartlett)
bartlett_window.__doc__ = """Bartlett (triangular) window.

    >>> bartlett_window(5, periodic=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
kaiser_window = _window("kaiser_window", _kaiser)
kaiser_window.__doc__ = """Kaiser window with shape parameter ``beta``.

    >>> kaiser_window(3, periodic=False, beta=0.0)
    tensor([1., 1., 1.])
    """


# ---------------------------------------------------------------------------- index_reduce
_switches = {"matmul_precision": "highest", "warn_always": False}
_umin, _umax = np.minimum.reduce, np.maximum.reduce
_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


@with_out
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """The slices of ``source`` reduced (``prod``, ``mean``, ``amax`` or ``amin``) into the
    slices ``index`` of ``input`` along ``dim`` (with ``input``'s own values unless
    ``include_self=False``): :func:`scatter_reduce` with ``index`` spread over the slices, so
    it has the same gradient.

    >>> index_reduce(ones(3), 0, tensor([0, 0]), tensor([2., 3.]), 'prod')
    tensor([6., 1., 1.])
    """
    for name, pos, v in (("input", 1, input), ("index", 3, index), ("source", 4, source)):
        if not isinstance(v, Tensor):
            raise arg_type_error("index_reduce", name, pos, v)
    check_int("index_reduce", "dim", 2, dim)
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    x, src, a = input._data, source._data, index._data
    xs, ss = x.shape, src.shape
    nd, sd = len(xs), len(ss)
    d = _one_dim(dim, nd, "index_reduce")
    if a.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if a.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if x.dtype != src.dtype:
        raise RuntimeError(f"index_reduce_(): self ({scalar_type_name(x.dtype)}) and "
                           f"source ({scalar_type_name(src.dtype)}) must have the same "
                           "scalar type")
    if sd == 0 and nd > 0:
        raise IndexError(f"index_reduce(): Dimension specified as {dim} but tensor has no "
                         "dimensions")
    if max(nd, 1) != max(sd, 1) or xs[:d] + xs[d + 1:] != ss[:d] + ss[d + 1:]:
        raise RuntimeError("index_reduce_(): Source/destination tensor must have same slice "
                           "shapes. Destination slice shape: "
                           f"{[s for i, s in enumerate(xs) if i != d]} at dimension "
                           f"{d} and source slice shape: "
                           f"{[s for i, s in enumerate(ss) if i != d]} at dimension 0.")
    n_idx = a.size
    if (ss[d] if sd else 1) != n_idx:
        raise RuntimeError("index_reduce_(): Number of indices "
                           f"({n_idx}) should be equal to source.size(dim) "
                           f"({ss[d] if sd else 1})")
    a = a.reshape(-1)
    size = xs[d] if nd else 1
    # the range in two reductions (the first index out of it found only for the error); on
    # NumPy its ufunc reductions themselves (the array's min and max methods add a Python
    # wrapper each)
    numpy = a.__class__ is np.ndarray
    if n_idx and (int(_umin(a, None) if numpy else a.min()) < -size or
                  int(_umax(a, None) if numpy else a.max()) >= size):
        bad = int(a[(a < -size) | (a >= size)][0])
        raise IndexError(f"index_reduce(): index out of range in self: index {bad} is out of "
                         f"bounds for dimension {d} with size {size}")
    if nd == 0:
        return scatter_reduce(input.reshape(1), 0, index.reshape(-1).long(), source.reshape(1),
                              reduce, include_self=include_self).reshape(())
    # the index spread over the slices as a broadcast view (the scatter kernel reads it one
    # row per slice; a copy of it was as large as the source); a % size: negatives wrapped,
    # a new contiguous array. On NumPy the view is built by ndarray's constructor (stride 0
    # but along d), where broadcast_to's Python wrapper cost some 2 us
    wrapped = (a % size).astype(np.int64, copy=False)
    if numpy:
        strides = [0] * nd
        strides[d] = 8
        full = np.ndarray(ss, np.int64, wrapped, 0, tuple(strides))
    else:
        shape = [1] * nd
        shape[d] = n_idx
        full = array_module(a).broadcast_to(wrapped.reshape(shape), ss)
    return scatter_reduce(input, d, _make(full), source, reduce, include_self=include_self)


def index_reduce_(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place :func:`index_reduce`."""
    # computed from a copy: the reduction's backward reads the input's old values
    return input.copy_(index_reduce(input.clone(), dim, index, source, reduce,
                                    include_self=include_self))


def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place :func:`scatter_reduce`."""
    return input.copy_(scatter_reduce(input.clone(), dim, index, src, reduce,
                                      include_self=include_self))


def fill_diagonal_(input: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal (``i, i, ..., i``) in place; for a tall matrix, ``wrap``
    restarts the diagonal every ``columns + 1`` rows, as NumPy's ``fill_diagonal``.

    >>> zeros(2, 3).fill_diagonal_(1.)
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    if isinstance(fill_value, Tensor):
        raise TypeError("fill_diagonal_(): argument 'fill_value' (position 1) must be Number, "
                        "not Tensor")
    d = input._data
    shape = d.shape
    nd = len(shape)
    if nd < 2:
        raise RuntimeError("fill_diagonal_(): dimensions must larger than 1")
    if nd > 2 and len(set(shape)) != 1:
        raise RuntimeError("fill_diagonal_(): all dimensions of input must be of equal length")
    value = checked_scalar("fill_diagonal_", fill_value, d.dtype)
    # NumPy's fill_diagonal by hand: the flat (C-order) positions one step (the sum of the
    # C-order strides, accumulated from the last dim) apart; a matrix's stop after its last
    # column unless ``wrap``; written by one ``put_`` of the value there (its
    # gradient clears just those positions, not a full-size mask's)
    step, stride = 0, 1
    for n in reversed(shape):
        step += stride
        stride *= n
    stop = stride if wrap or nd > 2 else min(stride, shape[-1] * shape[-1])
    xp = array_module(d)
    index = xp.arange(0, stop, step, dtype=np.int64)
    return put_(input, _make(index), _make(xp.asarray(value).repeat(index.shape[0])))


# ---------------------------------------------------------------------------- cov, corrcoef
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in columns),
    with integer frequency weights ``fweights`` and float observation weights ``aweights``
    (PyTorch's composite, differentiable in ``input``).

    >>> cov(tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if not isinstance(input, Tensor):
        raise arg_type_error("cov", "input", 1, input)
    if input.dim() > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    if input.dtype == D.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        if not isinstance(fweights, Tensor):
            raise arg_type_error("cov", "fweights", None, fweights)
        if fweights.dim() > 1:
            raise RuntimeError("cov(): expected fweights to have one or fewer dimensions but got "
                               f"fweights with {fweights.dim()} dimensions")
        if fweights.is_floating_point() or fweights.dtype == D.bool:
            raise RuntimeError("cov(): expected fweights to have integral dtype but got fweights "
                               f"with {scalar_type_name(fweights._data.dtype)} dtype")
        if fweights.numel() != n:
            raise RuntimeError("cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {fweights.numel()} != {n}")
        if n and bool((fweights._data < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        if not isinstance(aweights, Tensor):
            raise arg_type_error("cov", "aweights", None, aweights)
        if aweights.dim() > 1:
            raise RuntimeError("cov(): expected aweights to have one or fewer dimensions but got "
                               f"aweights with {aweights.dim()} dimensions")
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {scalar_type_name(aweights._data.dtype)} dtype")
        if aweights.numel() != n:
            raise RuntimeError("cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aweights.numel()} != {n}")
        if n and bool((aweights._data < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is None:  # the observation count is a Python number: no tensors to build or read
        avg = x.sum(1, keepdim=True) / n  # (kept as a column: no unsqueeze op)
        norm = n - correction
        degenerate = norm <= 0
    else:
        w_sum = w.sum()
        if not bool(w_sum._data != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1, keepdim=True) / w_sum
        if aweights is not None and correction != 0:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
        else:
            norm = w_sum - correction
        degenerate = bool(norm._data <= 0)
    if degenerate:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    x = x - avg
    xt = (x if w is None else x * w).t()
    if xt.is_complex():  # the Hermitian product (a real conj would be one more op)
        xt = xt.conj()
    c = x.mm(xt) / norm
    # (a squeeze that drops nothing would be one more op and a view)
    return c.squeeze() if 1 in c.shape else c


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in ``input``'s rows (the covariance
    normalized by the standard deviations, clipped to [-1, 1]).

    >>> corrcoef(tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if not isinstance(input, Tensor):
        raise arg_type_error("corrcoef", "input", 1, input)
    if input.dim() > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    sd = (d.real if d.is_complex() else d).sqrt()  # (a real .real would be one more op)
    c = c / sd.reshape(-1, 1)
    c = c / sd  # (broadcast along the rows: sd as (1, n) without a reshape op)
    if c.is_complex():  # each part clipped, as PyTorch does
        return _complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# ---------------------------------------------------------------------------- renorm
@defop("renorm", out=True)
def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch's). The norms accumulate in
    float32 for the half-precision dtypes and the scale is applied once, rounded once.

    >>> renorm(tensor([[3., 4.], [0.3, 0.4]]), 2, 0, 1)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    if not isinstance(input, Tensor):
        raise arg_type_error("renorm", "input", 1, input)
    if isinstance(maxnorm, Tensor):
        maxnorm = maxnorm.item()
    # (a Python float or int, the common values, tested by identity before the ABC check)
    c = p.__class__
    if c is not float and c is not int and (not isinstance(p, numbers.Real) or c is bool):
        raise TypeError(f"renorm(): argument 'p' (position 2) must be Number, not "
                        f"{type(p).__name__}")
    c = maxnorm.__class__
    if c is not float and c is not int and (not isinstance(maxnorm, numbers.Real) or
                                            c is bool):
        raise TypeError(f"renorm(): argument 'maxnorm' (position 4) must be Number, not "
                        f"{type(maxnorm).__name__}")
    if dim.__class__ is not int:
        check_int("renorm", "dim", 3, dim)
    data = input._data
    nd = data.ndim
    if nd <= 1:
        raise RuntimeError(f"renorm(): renorm: input needs at least 2 dimensions, got {nd} "
                           "dimensions")
    d = _one_dim(dim, nd, "renorm")
    if p <= 0:
        raise RuntimeError("renorm(): renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm(): renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if not input.is_floating_point():
        raise RuntimeError(f"renorm(): Expected a floating point or complex tensor as input. "
                           f"Got {scalar_type_name(data.dtype)}")
    dt = data.dtype
    acc = dt if dt.itemsize >= 4 else _F32  # (float16, bfloat16: float32)
    # the 1- and 2-norms by norm's one-pass kernel where it applies (float32 / float64 on the
    # CPU, the reduced dims adjacent in memory), else by NumPy; one reduced dim passed as an
    # int (the kernel's plans are memoized by it: a tuple is normalized first on every call)
    axes = 1 - d if nd == 2 else tuple([i for i in range(nd) if i != d])
    n = _on_kernel("renorm", data, axes, True, "sum_reduce",
                   1 + int(p)) if p == 1 or p == 2 else None
    xp = np if data.__class__ is np.ndarray else array_module(data)
    if n is None:
        a = xp.abs(data, dtype=acc)
        if p == 2:
            n = xp.sqrt(xp.multiply(a, a).sum(axis=axes, keepdims=True))
        elif p == 1:
            n = a.sum(axis=axes, keepdims=True)
        elif p == math.inf:  # (the max of no elements: 0, their sum)
            n = a.max(axis=axes, keepdims=True) if a.size else a.sum(axis=axes, keepdims=True)
        else:
            n = xp.power(xp.power(a, p).sum(axis=axes, keepdims=True), 1 / p)
    scale = xp.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)
    out = xp.multiply(data, scale, dtype=acc)
    return _make(out if acc is dt else out.astype(dt))


# ---------------------------------------------------------------------------- in-place forms
def t_(input: Tensor) -> Tensor:
    """In-place :meth:`t`.

    >>> ones(2, 3).t_().shape
    ember.Size([3, 2])
    """
    return become(input, input.t(), "t_")


def transpose_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place :meth:`transpose`."""
    return become(input, input.transpose(dim0, dim1), "transpose_")


def swapaxes_(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """In-place :meth:`swapaxes`."""
    return become(input, input.transpose(axis0, axis1), "swapaxes_")


def swapdims_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place :meth:`swapdims`."""
    return become(input, input.transpose(dim0, dim1), "swapdims_")


def squeeze_(input: Tensor, dim=None) -> Tensor:
    """In-place :meth:`squeeze`."""
    return become(input, input.squeeze() if dim is None else input.squeeze(dim), "squeeze_")


def unsqueeze_(input: Tensor, dim: int) -> Tensor:
    """In-place :meth:`unsqueeze`."""
    return become(input, input.unsqueeze(dim), "unsqueeze_")


def clamp_min_(input: Tensor, min) -> Tensor:  # noqa: A002
    """In-place ``clamp(min=min)``."""
    return input.clamp_(min=min)


def clamp_max_(input: Tensor, max) -> Tensor:  # noqa: A002
    """In-place ``clamp(max=max)``."""
    return input.clamp_(max=max)


def _assign(op: str, fn):
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        r = fn(self, *args, **kwargs)
        if tuple(r.shape) != tuple(self.shape):
            raise RuntimeError(f"{op}(): output with shape {list(self.shape)} doesn't match "
                               f"the broadcast shape {list(r.shape)}")
        from ._pointwise import _check_cast

        _check_cast(op, r._data.dtype, self._data.dtype)
        return self.copy_(r)

    method.__name__ = op
    method.__doc__ = f"In-place :func:`{op[:-1]}`."
    return method


def _inplace_forms():
    from . import _linalg, _linalg_ops, _pointwise, _reduction, _special_ops  # noqa: F401

    forms = {
        "addmm_": _linalg.addmm, "addmv_": _linalg.addmv, "addbmm_": _linalg.addbmm,
        "baddbmm_": _linalg.baddbmm, "addr_": _linalg_ops.addr,
        "cumsum_": _reduction.cumsum, "cumprod_": _reduction.cumprod,
        "tril_": None, "triu_": None, "deg2rad_": deg2rad, "rad2deg_": rad2deg,
        "renorm_": renorm,
    }
    forms["tril_"], forms["triu_"] = tril, triu
    return {k: _assign(k, v) for k, v in forms.items()}


_INPLACE = _inplace_forms()
addmm_ = _INPLACE["addmm_"]
addmv_ = _INPLACE["addmv_"]
deg2rad_ = _INPLACE["deg2rad_"]
rad2deg_ = _INPLACE["rad2deg_"]
renorm_ = _INPLACE["renorm_"]


# ---------------------------------------------------------------------------- global switches
_state = {"threads": None, "interop": None, "deterministic": False, "warn_only": False}


def set_num_threads(int: int) -> None:  # noqa: A002
    """Set the number of threads ember's CPU kernels (Numba) use.

    >>> set_num_threads(get_num_threads())
    """
    if int < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    _state["threads"] = int
    try:
        import numba

        numba.set_num_threads(_min_threads(int))
    except (ImportError, ValueError):
        pass


def _min_threads(n: int) -> int:
    try:
        import numba

        return min(n, numba.config.NUMBA_NUM_THREADS)
    except ImportError:  # pragma: no cover
        return n


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the CPU.

    >>> get_num_threads() >= 1
    True
    """
    if _state["threads"] is not None:
        return _state["threads"]
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def set_num_interop_threads(int: int) -> None:  # noqa: A002
    """Set the number of inter-op threads (ember runs ops one at a time; recorded only)."""
    if int < 1:
        raise RuntimeError("Expected positive number of threads")
    _state["interop"] = int


def get_num_interop_threads() -> int:
    """The number of inter-op threads.

    >>> get_num_interop_threads() >= 1
    True
    """
    return _state["interop"] or get_num_threads()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms. ember's CPU ops are deterministic already (ordered
    reductions, a serial scatter-add); the flag is kept for code that checks it.

    >>> use_deterministic_algorithms(False)
    """
    _state["deterministic"] = bool(mode)
    _state["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` was switched on.

    >>> are_deterministic_algorithms_enabled()
    False
    """
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode only warns."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """``0``/``"default"``, ``1``/``"warn"``, ``2``/``"error"``."""
    modes = {"default": 0, "warn": 1, "error": 2}
    mode = modes.get(debug_mode, debug_mode)
    if mode not in (0, 1, 2):
        raise RuntimeError(f"invalid debug mode {debug_mode}")
    use_deterministic_algorithms(mode > 0, warn_only=mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2 (see :func:`set_deterministic_debug_mode`)."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


# ---------------------------------------------------------------------------- more switches
class memory_format:
    """PyTorch's memory formats (``contiguous_format``, ``channels_last``, ...). ember's
    tensors are laid out row-major: ops that take ``memory_format`` accept these and give the
    row-major (contiguous) layout."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
legacy_contiguous_format = contiguous_format  # PyTorch's alias (the same object)


def get_default_device():
    """The device factories use when none is given (``cpu`` unless
    :func:`set_default_device` changed it).

    >>> get_default_device()
    device(type='cpu')
    """
    return DEFAULT_DEVICE[0]


def set_default_device(device) -> None:
    """Make ``device`` (None: ``cpu``) the default device of factory functions."""
    DEFAULT_DEVICE[0] = CPU if device is None else to_device(device)


def set_default_tensor_type(t) -> None:
    """The legacy form of :func:`set_default_dtype`: a tensor type (``DoubleTensor``) or its
    name (``'torch.DoubleTensor'``); floating types only."""
    warnings.warn("set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "set_default_dtype() and set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        dt = _legacy_dtype_from_name(t)
    elif isinstance(t, type) and issubclass(t, Tensor) and hasattr(t, "_legacy_dtype"):
        dt = t._legacy_dtype
    else:
        raise TypeError(f"invalid type object: only floating-point types are supported as the "
                        f"default type, got {t!r}")
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    D.set_default_dtype(dt)





def get_float32_matmul_precision() -> str:
    """``'highest'``, ``'high'`` or ``'medium'`` (ember's products are always computed at
    float32's full precision; the setting is kept for code that reads it).

    >>> get_float32_matmul_precision()
    'highest'
    """
    return _switches["matmul_precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Set the float32 matrix-product precision: ``'highest'``, ``'high'`` or ``'medium'``
    (anything else warns and changes nothing, as in PyTorch)."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _switches["matmul_precision"] = precision


def set_flush_denormal(mode: bool) -> bool:
    """Flushing denormal floats to zero is a CPU flag NumPy does not expose: returns False
    (not supported), as PyTorch does on such a CPU.

    >>> set_flush_denormal(False)
    False
    """
    return False


def set_warn_always(b: bool) -> None:
    """Warn every time (not only once) for warnings PyTorch issues once per process."""
    _switches["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` is on.

    >>> is_warn_always_enabled()
    False
    """
    return _switches["warn_always"]


def typename(obj) -> str:
    """The type name of ``obj``: a tensor's legacy type (``'ember.FloatTensor'``), else the
    qualified name of its type.

    >>> typename(3)
    'int'
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module, qual = "", ""
    if hasattr(obj, "__module__"):
        module = obj.__module__ + "." if obj.__module__ not in (None, "builtins") else ""
    if hasattr(obj, "__qualname__"):
        qual = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qual = obj.__name__
    else:
        module = type(obj).__module__ + "." if type(obj).__module__ != "builtins" else ""
        qual = type(obj).__qualname__
    return module + qual


# ---------------------------------------------------------------------------- tensor predicates
def _need(op: str, name: str, pos: int, v) -> None:
    if not isinstance(v, Tensor):
        raise arg_type_error(op, name, pos, v)


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is nonzero.

    >>> is_nonzero(tensor([0.5]))
    True
    """
    _need("is_nonzero", "input", 1, input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("is_nonzero(): Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("is_nonzero(): Boolean value of Tensor with more than one value is "
                           "ambiguous")
    return bool(input._data.reshape(()))


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    _need("is_same_size", "input", 1, input)
    _need("is_same_size", "other", 2, other)
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype is signed (every dtype but bool and uint8)."""
    _need("is_signed", "input", 1, input)
    return input.is_signed()


def get_device(input: Tensor) -> int:
    """The CUDA device index of ``input``, -1 on the CPU.

    >>> get_device(zeros(1))
    -1
    """
    _need("get_device", "input", 1, input)
    dev = input.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


def is_conj(input: Tensor) -> bool:
    """Whether ``input`` is a lazily conjugated view: never for ember's real tensors."""
    _need("is_conj", "input", 1, input)
    return False


def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazily negated view: never for ember's real tensors."""
    _need("is_neg", "input", 1, input)
    return False


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` with a lazy conjugation materialized: ``input`` itself for real tensors."""
    _need("resolve_conj", "input", 1, input)
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` with a lazy negation materialized: ``input`` itself for real tensors."""
    _need("resolve_neg", "input", 1, input)
    return input


def detach(input: Tensor) -> Tensor:
    """A new tensor sharing ``input``'s data, out of the graph (:meth:`Tensor.detach`)."""
    _need("detach", "input", 1, input)
    return input.detach()


def detach_(input: Tensor) -> Tensor:
    """Take ``input`` out of the graph in place (:meth:`Tensor.detach_`)."""
    _need("detach_", "input", 1, input)
    return input.detach_()


def fill(input: Tensor, value) -> Tensor:
    """A tensor like ``input`` filled with ``value`` (a number or a one-element tensor).

    >>> fill(zeros(2), 3.)
    tensor([3., 3.])
    """
    _need("fill", "input", 1, input)
    return input.clone().fill_(value)


def new_empty_strided(input: Tensor, size, stride, *, dtype=None, device=None,
                      requires_grad: bool = False, layout=None, pin_memory: bool = False):
    """An uninitialized tensor with the given size and strides, of ``input``'s dtype and
    device unless given."""
    return empty_strided(size, stride, dtype=input.dtype if dtype is None else dtype,
                         device=input.device if device is None else device,
                         requires_grad=requires_grad)


# ---------------------------------------------------------------------------- Tensor methods
_METHODS = ("softmax", "log_softmax", "nan_to_num", "nan_to_num_", "diff", "rot90", "isin",
            "bincount", "histc", "cummax", "cummin", "logcumsumexp", "scatter_reduce",
            "clamp_min_", "clamp_max_", "isposinf", "isneginf", "isreal", "signbit",
            "deg2rad", "rad2deg", "positive", "msort", "renorm", "cov", "corrcoef",
            "index_reduce", "index_reduce_", "scatter_reduce_", "fill_diagonal_", "is_nonzero",
            "is_same_size", "get_device", "is_conj", "is_neg", "resolve_conj", "resolve_neg",
            "new_empty_strided", "t_", "transpose_", "swapaxes_",
            "swapdims_", "squeeze_", "unsqueeze_")


def _bind() -> None:
    g = globals()
    for name in _METHODS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, g[name])
    for name, fn in _INPLACE.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)


_bind()
