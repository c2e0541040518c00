"""Gathers and scatters along one dim: ``gather``, ``scatter``, ``scatter_add``,
``index_add``, ``index_copy``, ``index_fill`` and their in-place forms.

Indices are validated before memory is touched (PyTorch's RuntimeError through
:class:`~ember.tensor._indexing.IndexOutOfBoundsError`); accumulating writes go through the
``index_add`` kernel of ``ember.tensor.kernels``.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ._checks import check_inplace, check_same_device, checked_scalar
from ._indexing import (
    _INT64,
    IndexOutOfBoundsError,
    _check_range,
    _index_add_into,
    _index_vector,
    _need_tensor,
    _scalar_of,
    _tname,
)
from ._registry import array_module, defop
from ._tensor import Tensor, _wrap_dim
from .kernels import get as _kernel

__all__ = [
    "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add", "index_add_",
    "index_copy", "index_copy_", "index_fill", "index_fill_",
]

_make = Tensor._make
_ndarray = np.ndarray
_same_device = check_same_device
_check_inplace = check_inplace


# ------------------------------------------------------------------------------ gather / scatter
_ksc = None  # kernels/cpu/scatter.py, imported by the first gather or scatter on it (Numba)


def _cpu_kernels():
    global _ksc
    if _ksc is None:
        from .kernels.cpu import scatter as _ksc
    return _ksc


def _nonempty(shape: tuple) -> tuple:
    return shape or (1,)


_INDEX_DTYPES = frozenset((np.dtype(np.int32), np.dtype(np.int64)))


def _gather_index(index, op: str):
    _need_tensor(index, op, "index")
    a = index._data
    if a.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    return a


def _raise_bad(op: str, index3, bad: int, size: int, dim: int):
    v = int(index3.reshape(-1)[bad])
    raise IndexOutOfBoundsError(f"{op}(): index {v} is out of bounds for dimension {dim} with "
                                f"size {size}")


_gather_plans: dict = {}  # (input shape, index shape, dim) -> the checked geometry


def _gather_plan(op: str, dshape: tuple, ishape: tuple, dim) -> tuple:
    """The checked geometry of a gather of an input of ``dshape`` at an index of ``ishape``
    along ``dim``: (the input's restriction to the index's extents outside ``dim`` as a basic
    index, or None where it is the whole input; the input and the index as (P, M, Q) and
    (P, N, Q)). Kept per shapes and ``dim``: working it out costs a fifth of a 4x64 gather; a
    bad ``dim`` or shape raises before its plan is stored."""
    ndim = len(dshape)
    w = _wrap_dim(dim, ndim, op)  # PyTorch wraps dim first
    ds, is_ = dshape or (1,), ishape or (1,)
    sl = None
    if ds[:w] != is_[:w] or ds[w + 1:] != is_[w + 1:]:
        if len(ds) != len(is_):
            raise RuntimeError(
                f"{op}(): Index tensor must have the same number of dimensions as input tensor")
        for d in range(len(ds)):
            if d != w and is_[d] > ds[d]:
                raise RuntimeError(
                    f"{op}(): Size does not match at dimension {d} expected index "
                    f"{list(ishape)} to be no larger than self {list(dshape)} apart from "
                    f"dimension {w}")
        sl = tuple(slice(None) if d == w else slice(0, n) for d, n in enumerate(is_))
    P, Q = prod(is_[:w]), prod(is_[w + 1:])
    plan = (w, sl, (P, ds[w], Q), (P, is_[w], Q))
    if len(_gather_plans) >= 4096:
        _gather_plans.clear()
    _gather_plans[(dshape, ishape, dim)] = plan
    return plan


@defop("gather", out=True)
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and likewise for other dims).

    >>> gather(tensor([[1, 2], [3, 4]]), 1, tensor([[0, 0], [1, 0]])).tolist()
    [[1, 1], [4, 3]]
    """
    op = "gather"
    a = _gather_index(index, op)
    data = input._data
    if a.__class__ is not _ndarray or data.__class__ is not _ndarray:  # (NumPy's: one device)
        _same_device(op, data, a)
    plan = _gather_plans.get((data.shape, a.shape, dim)) if dim.__class__ is int else None
    if plan is None:
        plan = _gather_plan(op, data.shape, a.shape, dim)
    dim, sl, x3, i3shape = plan
    x = data if sl is None else data[sl]  # the input restricted to the index's extents
    i3 = a.reshape(i3shape)
    if data.__class__ is _ndarray:  # the CPU kernel, without its checks of what these made
        out, bad = (_ksc or _cpu_kernels())._gather_run(x.reshape(x3), i3)
    else:
        out, bad = _kernel("gather_dim", array_module(data))(x.reshape(x3), i3)
    if bad >= 0:
        _raise_bad(op, i3, bad, x3[1], dim)
    return _make(out.reshape(a.shape))


_scatter_plans: dict = {}  # (input, index, src shapes, dim) -> (dim, dshape, ishape)


def _scatter_check(op: str, input: Tensor, dim: int, index: Tensor, src,
                   check_range: bool = True):
    a = _gather_index(index, op)
    data = input._data
    s = src._data if isinstance(src, Tensor) else None
    # the shape checks' result is kept per shapes and dim (a bad dim or shape raises before
    # it is stored): a repeated call checks only devices and dtypes, in the same order
    key = (data.shape, a.shape, None if s is None else s.shape, dim) \
        if dim.__class__ is int else None
    plan = _scatter_plans.get(key)
    if plan is None:
        plan = _scatter_shapes(op, data, a, s, dim)
        if key is not None:
            if len(_scatter_plans) >= 4096:
                _scatter_plans.clear()
            _scatter_plans[key] = plan
    else:
        if a.__class__ is not _ndarray or data.__class__ is not _ndarray:
            _same_device(op, data, a)
        if s is not None:
            if s.__class__ is not _ndarray or data.__class__ is not _ndarray:
                _same_device(op, data, s)
            if s.dtype != data.dtype:
                raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    dim, dshape, ishape = plan
    if check_range:
        _check_range(a, dshape[dim], dim, op, exc=IndexOutOfBoundsError)
    return a.reshape(ishape), dim, dshape, ishape


def _scatter_shapes(op: str, data, a, s, dim):
    """:func:`_scatter_check`'s checks in PyTorch's order: (dim wrapped, the input's and the
    index's shapes with 0-d as (1,))."""
    _same_device(op, data, a)
    dim = _wrap_dim(dim, data.ndim, op)  # PyTorch wraps dim first
    dshape, ishape = _nonempty(data.shape), _nonempty(a.shape)
    if len(dshape) != len(ishape):
        raise RuntimeError(
            f"{op}(): Index tensor must have the same number of dimensions as self tensor")
    sshape = None
    if s is not None:
        _same_device(op, data, s)
        if s.dtype != data.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        sshape = _nonempty(s.shape)
        if len(sshape) != len(ishape):
            raise RuntimeError(
                f"{op}(): Index tensor must have the same number of dimensions as src tensor")
    for d in range(len(dshape)):
        if (d != dim and ishape[d] > dshape[d]) or (sshape is not None and ishape[d] > sshape[d]):
            extra = f" and to be no larger size than src {list(s.shape)}" if sshape else ""
            raise RuntimeError(
                f"{op}(): Expected index {list(a.shape)} to be no larger than self "
                f"{list(data.shape)} apart from dimension {dim}{extra}")
    return dim, dshape, ishape


_REDUCE = {None: "set", "add": "add", "multiply": "multiply"}


def _scatter_into(out, op: str, input: Tensor, dim, index, src, value, reduce) -> None:
    """Scatter into the array ``out`` (``input``'s data or a fresh copy of it) through the
    ``scatter_dim`` kernel, on the (P, M, Q) view of ``out`` that the index covers (written
    back when that view is not contiguous)."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError(f"{op}(): expected a 'src' Tensor or a 'value' number")
    a, dim, dshape, ishape = _scatter_check(op, input, dim, index, src, check_range=False)
    if reduce not in _REDUCE:
        raise RuntimeError(f"{op}(): reduce argument must be either add or multiply, got "
                           f"{reduce!r}")
    if src is None:
        src = checked_scalar(op, _scalar_of(value, op), out.dtype)
    else:
        src = src._data if src._data.ndim else src._data.reshape(1)
    _scatter_raw(out, op, a, dim, dshape, ishape, src, _REDUCE[reduce])


_raw_plans: dict = {}  # (out, dshape, index, src shapes, dim) -> the (P, M, Q) views' geometry


def _raw_plan(key: tuple) -> tuple:
    oshape, dshape, ishape, sshape, dim = key
    wshape = oshape or dshape

    def restrict(shape):  # the basic index of ``shape``'s restriction to the index's extents
        if shape[:dim] == ishape[:dim] and shape[dim + 1:] == ishape[dim + 1:]:
            return None
        return tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(ishape))

    P, N, Q = prod(ishape[:dim]), ishape[dim], prod(ishape[dim + 1:])
    plan = (restrict(wshape), (P, dshape[dim], Q), (P, N, Q),
            None if sshape is None else restrict(sshape),
            None if sshape is None else (P, sshape[dim], Q))
    if len(_raw_plans) >= 4096:
        _raw_plans.clear()
    _raw_plans[key] = plan
    return plan


def _scatter_raw(out, op: str, a, dim: int, dshape: tuple, ishape: tuple, src,
                 mode: str) -> None:
    """``scatter_dim`` of ``src`` (an array at least the index's extents, or a scalar) into
    ``out`` at the checked-shape index ``a`` (shaped ``ishape``) along ``dim``, on the
    (P, M, Q) view of ``out`` that the index covers (written back when that view is not
    contiguous). The geometry is kept per shapes and dim."""
    if a.size == 0:
        return
    xp = array_module(out)
    array = getattr(src, "ndim", 0) > 0  # (a scalar, a NumPy one included: a fill)
    key = (out.shape, dshape, ishape, src.shape if array else None, dim)
    plan = _raw_plans.get(key)
    if plan is None:
        plan = _raw_plan(key)
    sl, w3s, i3s, ssl, s3s = plan
    w = out if out.ndim else out.reshape(dshape)
    if sl is not None:
        w = w[sl]
    w3 = w.reshape(w3s) if w.flags.c_contiguous else xp.ascontiguousarray(w).reshape(w3s)
    i3 = a.reshape(i3s)  # (a broadcast index stays a view: the kernel reads its rows)
    if array:
        s3 = (src if ssl is None else src[ssl]).reshape(s3s)
        if s3s[1] != i3s[1]:
            s3 = s3[:, :i3s[1]]
    else:
        s3 = xp.full(i3s, src, dtype=out.dtype)  # the kernel would copy a broadcast
    if xp is np:  # the CPU kernel, without its checks of what this function made
        bad = (_ksc or _cpu_kernels())._scatter_run(w3, i3, s3, mode)
    else:
        bad = _kernel("scatter_dim", xp)(w3, i3, s3, mode)
    if bad >= 0:
        _raise_bad(op, i3, bad, dshape[dim], dim)
    if not w.flags.c_contiguous:
        w[...] = w3.reshape(w.shape)


def _fresh(input: Tensor):
    return input._data.copy()  # C order


@defop("scatter", out=True)
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
            reduce: str | None = None) -> Tensor:
    """Out-of-place :func:`scatter_`: ``out[index[i][j]][j] = src[i][j]`` for ``dim=0``;
    ``src`` may be a tensor or a number (``value``).

    >>> scatter(zeros(2, 2), 0, tensor([[1, 0]]), tensor([[5., 6.]])).tolist()
    [[0.0, 6.0], [5.0, 0.0]]
    """
    out = _fresh(input)
    _scatter_into(out, "scatter", input, dim, index, src, value, reduce)
    return _make(out)


@defop("scatter_", inplace=True)
def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
             reduce: str | None = None) -> Tensor:
    """Write ``src`` (or ``value``) into ``input`` at ``index`` along ``dim``, in place.

    >>> zeros(3).scatter_(0, tensor([2]), 7.).tolist()
    [0.0, 0.0, 7.0]
    """
    _check_inplace(input, "scatter_")
    _scatter_into(input._data, "scatter_", input, dim, index, src, value, reduce)
    input._bump()
    return input


@defop("scatter_add", out=True)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Out-of-place :func:`scatter_add_`: ``out[index[i][j]][j] += src[i][j]`` for ``dim=0``,
    duplicates summed.

    >>> scatter_add(zeros(3), 0, tensor([0, 0, 2]), tensor([1., 2., 3.])).tolist()
    [3.0, 0.0, 3.0]
    """
    _need_tensor(src, "scatter_add", "src")
    out = _fresh(input)
    _scatter_into(out, "scatter_add", input, dim, index, src, None, "add")
    return _make(out)


@defop("scatter_add_", inplace=True)
def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place :func:`scatter_add`.

    >>> zeros(2).scatter_add_(0, tensor([1, 1]), tensor([1., 1.])).tolist()
    [0.0, 2.0]
    """
    _need_tensor(src, "scatter_add_", "src")
    _check_inplace(input, "scatter_add_")
    _scatter_into(input._data, "scatter_add_", input, dim, index, src, None, "add")
    input._bump()
    return input


# ------------------------------------------------------------------- index_add / copy / fill
def _along_dim_check(op: str, input: Tensor, dim: int, index, source: Tensor):
    """Shared checks of index_add / index_copy; returns (index 1-D, dim, shape, source shape)."""
    a = index._data
    data, s = input._data, source._data
    _same_device(op, data, a)
    _same_device(op, data, s)
    dshape, sshape = _nonempty(data.shape), _nonempty(s.shape)
    dim = _wrap_dim(dim, data.ndim, op)
    if len(dshape) != len(sshape) or \
            dshape[:dim] + dshape[dim + 1:] != sshape[:dim] + sshape[dim + 1:]:
        raise RuntimeError(
            f"{op}(): source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(data.shape)} source.shape = {list(s.shape)}")
    return a.reshape(-1), dim, dshape, sshape


def _index_add_into_tensor(out, op: str, input: Tensor, dim, index, source, alpha) -> None:
    a = _index_vector(index, op, "int32 int64", "dtype int32/int64")
    _need_tensor(source, op, "source")
    if a.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}(): self ({_tname(input._data.dtype)}) and source "
                           f"({_tname(source._data.dtype)}) must have the same scalar type")
    a, dim, dshape, sshape = _along_dim_check(op, input, dim, index, source)
    if a.size != sshape[dim]:
        raise RuntimeError(f"{op}(): Number of indices ({a.size}) should be equal to "
                           f"source.size(dim): ({sshape[dim]}), for dim: {dim}")
    _check_range(a, dshape[dim], dim, op, exc=IndexOutOfBoundsError)
    P, M, Q = prod(dshape[:dim]), dshape[dim], prod(dshape[dim + 1:])
    src3 = source._data.reshape(P, a.size, Q)
    _index_add_into(out.reshape(dshape), P, M, Q, a, src3, alpha)


@defop("index_add", out=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """``out.index_select(dim, index) += alpha * source``, duplicates summed.

    >>> index_add(zeros(3, 1), 0, tensor([0, 0, 2]), ones(3, 1), alpha=2).tolist()
    [[4.0], [0.0], [2.0]]
    """
    out = _fresh(input)
    _index_add_into_tensor(out, "index_add", input, dim, index, source, alpha)
    return _make(out)


@defop("index_add_", inplace=True)
def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place :func:`index_add`.

    >>> zeros(2).index_add_(0, tensor([1, 1]), tensor([1., 2.])).tolist()
    [0.0, 3.0]
    """
    _check_inplace(input, "index_add_")
    _index_add_into_tensor(input._data, "index_add_", input, dim, index, source, alpha)
    input._bump()
    return input


def _index_copy_into(out, op: str, input: Tensor, dim, index, source) -> None:
    _need_tensor(index, op, "index")
    _need_tensor(source, op, "source")
    if index._data.dtype != _INT64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{_tname(index._data.dtype)}")
    if index._data.ndim > 1:
        raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {index._data.ndim})")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"(self) {_tname(input._data.dtype)} and (source) "
                           f"{_tname(source._data.dtype)}")
    nd, snd = input._data.ndim, source._data.ndim
    if nd and snd and nd != snd:
        raise IndexError(f"{op}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({snd}), "
                         f"destination dimensionality ({nd})")
    a, dim, dshape, sshape = _along_dim_check(op, input, dim, index, source)
    if a.size != sshape[dim]:
        raise IndexError(f"{op}(): Number of indices ({a.size}) should be equal to "
                         f"source.size(dim) ({sshape[dim]})")
    _check_range(a, dshape[dim], dim, op)
    w = out.reshape(dshape)
    w[(slice(None),) * dim + (a,)] = source._data.reshape(sshape)


@defop("index_copy", out=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` replaced by ``source``.

    >>> index_copy(zeros(3), 0, tensor([2, 0]), tensor([5., 6.])).tolist()
    [6.0, 0.0, 5.0]
    """
    out = _fresh(input)
    _index_copy_into(out, "index_copy", input, dim, index, source)
    return _make(out)


@defop("index_copy_", inplace=True)
def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`index_copy`.

    >>> zeros(2).index_copy_(0, tensor([1]), tensor([3.])).tolist()
    [0.0, 3.0]
    """
    _check_inplace(input, "index_copy_")
    _index_copy_into(input._data, "index_copy_", input, dim, index, source)
    input._bump()
    return input


def _index_fill_mask(op: str, input: Tensor, dim, index, value):
    """``input`` seen as (P, M, Q) with ``dim`` in the middle, the (M, 1) mask of the slices
    ``index`` names and ``value`` as ``input``'s scalar: a masked write is one pass over the
    tensor, where fancy indexing along an inner dim costs several times that."""
    _need_tensor(index, op, "index")
    a = index._data
    if a.dtype != _INT64:
        raise IndexError(f"{op}(): Expected dtype int64 for index.")
    if a.ndim > 1:
        raise RuntimeError(f"{op}(): Index has to be a vector/scalar")
    data = input._data
    _same_device(op, data, a)
    v = checked_scalar(op, _scalar_of(value, op), data.dtype)
    dshape = _nonempty(data.shape)
    dim = _wrap_dim(dim, data.ndim, op)
    M = dshape[dim]
    xp = array_module(data)
    mask = xp.zeros((M, 1), dtype=bool)
    if xp is np:  # NumPy's write checks the range [-M, M) itself (a check first costs as much)
        try:
            mask[a] = True  # negative indices count from the end, as PyTorch's do
        except IndexError:
            _check_range(a, M, dim, op, negative=True)  # PyTorch's error
            raise
    else:  # (CuPy's write does not check it)
        _check_range(a, M, dim, op, negative=True)
        mask[a] = True
    return data.reshape(prod(dshape[:dim]), M, prod(dshape[dim + 1:])), mask, v, xp


@defop("index_fill")
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``.

    >>> index_fill(zeros(2, 2), 1, tensor([1]), 3.).tolist()
    [[0.0, 3.0], [0.0, 3.0]]
    """
    x3, mask, v, xp = _index_fill_mask("index_fill", input, dim, index, value)
    return _make(xp.where(mask, v, x3).reshape(input._data.shape))


@defop("index_fill_", inplace=True)
def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place :func:`index_fill`.

    >>> zeros(3).index_fill_(0, tensor([0, -1]), 1.).tolist()
    [1.0, 0.0, 1.0]
    """
    _check_inplace(input, "index_fill_")
    x3, mask, v, xp = _index_fill_mask("index_fill_", input, dim, index, value)
    if xp.may_share_memory(x3, input._data):
        xp.copyto(x3, v, where=mask)
    else:  # a strided input seen as (P, M, Q) is a copy: fill it and write it back
        input._data[...] = xp.where(mask, v, x3).reshape(input._data.shape)
    input._bump()
    return input
