"""Sparse COO tensors (PyTorch's ``torch.sparse_coo`` layout).

Representation: :class:`SparseTensor` is a subclass of :class:`Tensor` (so ``isinstance(s,
Tensor)`` holds, as it does for PyTorch's sparse tensors) that holds

* ``_idx``: the indices, an int64 array (NumPy or CuPy) of shape ``(sparse_dim, nnz)``;
* ``_vals``: the values, a dense :class:`Tensor` of shape ``(nnz, *dense_shape)``;
* ``_size``: the full shape, ``_coal``: whether the indices are known sorted and unique.

It has no strided buffer. Its ``_data`` (what every dense kernel reads) is a property that
raises PyTorch's ``NotImplementedError`` ("Could not run 'aten::exp' with arguments from the
'SparseCPU' backend"), naming the op that tried: dense code paths refuse a sparse tensor
instead of computing garbage.

Every sparse op is written with dense registry ops on ``_vals`` (``index_select``,
``index_add``, ``mul``, ...), so autograd needs nothing of its own: gradients flow to the values
(and to the dense operand of ``sparse @ dense``) through the ordinary derivative table, and a
leaf sparse tensor that requires grad keeps its gradient on its values (``S.grad`` is the
sparse tensor with ``S``'s indices and those values: PyTorch's masked gradient).
"""
from __future__ import annotations

import sys

import numpy as np

from . import _dtype as D
from ._checks import scalar_type_name
from ._creation import tensor, zeros
from ._linalg import mm
from ._printing import _add_suffixes, _grad_fn_name, _tensor_str
from ._reduction import sum as _sum
from ._registry import array_module
from ._tensor import Size, Tensor, _device_of, _wrap_dim, parse_to_args

__all__ = ["layout", "strided", "sparse_coo", "SparseTensor", "sparse_coo_tensor",
           "sparse_mm", "sparse_sum", "sparse_addmm", "spmm"]


class layout:
    """A tensor's memory layout (``torch.layout``): ``strided`` or ``sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name  # pickled by reference to the module-level instance


strided = layout("strided")
sparse_coo = layout("sparse_coo")


# --------------------------------------------------------------------------- refusals
def _op_name() -> str:
    """The op that reached for a sparse tensor's strided data: the outermost registry op
    (``<ember op NAME>`` frames) on the stack, else the outermost ember function."""
    f = sys._getframe(2)
    op = fn = None
    while f is not None:
        code = f.f_code
        fname = code.co_filename
        if fname.startswith("<ember op "):
            op = fname[len("<ember op "):-1]
        elif f.f_globals.get("__name__", "").startswith("ember."):
            if code.co_name not in ("_data", "_refuse", "__array__"):
                fn = code.co_name
        f = f.f_back
    return op or fn or "unknown"


def _backend(t) -> str:
    return "SparseCPU" if t._vals.is_cpu else "SparseCUDA"


def _refuse(t, op: str | None = None):
    op = op or _op_name()
    return NotImplementedError(
        f"Could not run 'aten::{op.strip('_') if op.startswith('__') else op}' with arguments "
        f"from the '{_backend(t)}' backend. This op has no sparse COO implementation in ember; "
        "convert with Tensor.to_dense() first (sparse tensors support coalesce, indices, "
        "values, to_dense, +, -, * and / by a scalar, sum, and sparse @ dense).")


def _no_storage():
    return RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")


# --------------------------------------------------------------------------- helpers
def _xp(t):
    return array_module(t._data) if not isinstance(t, SparseTensor) else array_module(t._idx)


def _linear_keys(xp, idx, sizes):
    """Row-major linear position of each index column over the sparse ``sizes``."""
    key = xp.zeros(idx.shape[1], dtype=np.int64)
    for d, n in enumerate(sizes):
        key *= n
        key += idx[d]
    return key


def _unlinear(xp, key, sizes):
    out = xp.empty((len(sizes), key.shape[0]), dtype=np.int64)
    for d in range(len(sizes) - 1, -1, -1):
        out[d] = key % sizes[d]
        key = key // sizes[d]
    return out


def _as_index(xp, arr):
    return Tensor._make(xp.ascontiguousarray(arr))


def _zeros(shape, like: Tensor) -> Tensor:
    return zeros(tuple(shape), dtype=like.dtype, device=like.device)


def _check_sparse_args(op: str, t) -> None:
    if not isinstance(t, SparseTensor):
        raise RuntimeError(f"{op} expected sparse coordinate tensor layout but got Strided")


class _Meta:
    __slots__ = ("shape", "dtype", "_arr")

    def __init__(self, size, vals) -> None:
        self.shape, self.dtype, self._arr = tuple(size), vals.dtype, vals


# --------------------------------------------------------------------------- the tensor
class SparseTensor(Tensor):
    """A sparse COO tensor: ``indices`` (sparse_dim x nnz, int64) and ``values``
    (nnz x dense dims). Create one with :func:`sparse_coo_tensor` or ``Tensor.to_sparse()``.

    >>> import ember.tensor as et
    >>> s = et.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    >>> s.to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 5.0]]
    """

    __array_priority__ = 1000

    def __init__(self, *args, **kwargs) -> None:  # pragma: no cover - use sparse_coo_tensor
        raise TypeError("create sparse tensors with ember.tensor.sparse_coo_tensor(indices, "
                        "values, size)")

    @classmethod
    def _from_parts(cls, idx, vals: Tensor, size, coalesced: bool) -> SparseTensor:
        t = object.__new__(cls)
        t._idx = idx
        t._vals = vals
        t._size = tuple(int(s) for s in size)
        t._coal = bool(coalesced)
        return t

    # ------------------------------------------------------------- strided data: refused
    @property
    def _data(self):
        raise _refuse(self)

    # ------------------------------------------------------------- metadata
    layout = sparse_coo
    is_sparse = True

    @property
    def shape(self) -> Size:
        return Size(self._size)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._size)
        return self._size[_wrap_dim(dim, len(self._size), "size")]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return _device_of(self._idx)

    @property
    def is_cuda(self) -> bool:
        return not isinstance(self._idx, np.ndarray)

    @property
    def is_cpu(self) -> bool:
        return isinstance(self._idx, np.ndarray)

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        return len(self._size)

    ndimension = dim

    def numel(self) -> int:
        n = 1
        for s in self._size:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self._vals.element_size()

    @property
    def itemsize(self) -> int:
        return self._vals.element_size()

    @property
    def nbytes(self) -> int:
        raise _no_storage()

    def is_floating_point(self) -> bool:
        return self._vals.is_floating_point()

    def is_signed(self) -> bool:
        return self._vals.is_signed()

    def sparse_dim(self) -> int:
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        return len(self._size) - self._idx.shape[0]

    def _nnz(self) -> int:
        return self._idx.shape[1]

    def is_coalesced(self) -> bool:
        return self._coal

    def _coalesced_(self, coalesced: bool) -> SparseTensor:
        self._coal = bool(coalesced)
        return self

    def stride(self, dim: int | None = None):
        raise RuntimeError("sparse tensors do not have strides")

    def is_contiguous(self, memory_format=None) -> bool:
        return False

    def contiguous(self, memory_format=None):
        raise RuntimeError("unsupported memory format option Contiguous")

    def data_ptr(self) -> int:
        raise _no_storage()

    def untyped_storage(self):
        raise _no_storage()

    storage = untyped_storage

    def storage_offset(self) -> int:
        raise _no_storage()

    def _is_view(self) -> bool:
        return False

    def _meta(self):
        """A stand-in for a strided array's metadata (shape, dtype, array type): what
        ``Tensor.grad``'s assignment checks compare."""
        return _Meta(self._size, self._vals._data)

    @property
    def _version(self) -> int:
        return self._vals._version

    # ------------------------------------------------------------- indices / values
    def _indices(self) -> Tensor:
        return Tensor._make(self._idx)

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        if not self._coal:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return Tensor._make(self._idx)

    def values(self) -> Tensor:
        if not self._coal:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._vals

    # ------------------------------------------------------------- autograd attributes
    @property
    def _requires_grad(self) -> bool:
        return self._vals._requires_grad

    @property
    def requires_grad(self) -> bool:
        return self._vals._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and not self._vals._requires_grad:
            if not self._vals.is_floating_point():
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            self._vals = self._vals.detach()  # a leaf of its own: S.grad lives on it
            self._vals.requires_grad_(True)
        elif not value and self._vals._requires_grad:
            if self._vals.grad_fn is not None:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach().")
            self._vals.requires_grad_(False)

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        if value is not None:
            raise RuntimeError("cannot set the grad_fn of a sparse tensor")

    @property
    def is_leaf(self) -> bool:
        return self._vals.grad_fn is None

    @property
    def grad(self):
        """The gradient of a leaf: sparse, with this tensor's indices (PyTorch's masked
        gradient of ``sparse.mm``), read off the values' gradient."""
        g = self._vals.grad if self._vals.grad_fn is None else None
        if g is None:
            return None
        if isinstance(g, SparseTensor):  # a sparse gradient of the values: make it dense
            g = g.to_dense()
        cache = self.__dict__.get("_grad_cache")
        if cache is not None and cache[0] is g:
            return cache[1]
        out = SparseTensor._from_parts(self._idx, g, self._size, False)  # as PyTorch flags it
        self.__dict__["_grad_cache"] = (g, out)
        return out

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
            return
        if isinstance(value, SparseTensor):
            value = _sparse_mask_values(value, self)
        else:
            value = _dense_values_at(value, self)
        self._vals.grad = value

    def detach(self) -> SparseTensor:
        return SparseTensor._from_parts(self._idx, self._vals.detach(), self._size, self._coal)

    def detach_(self) -> SparseTensor:
        self._vals = self._vals.detach()
        return self

    @property
    def data(self) -> SparseTensor:
        return self.detach()

    @data.setter
    def data(self, value) -> None:
        if not isinstance(value, SparseTensor):
            raise RuntimeError("data set to a tensor that requires gradients must match "
                               "the layout of the tensor (sparse_coo)")
        self._idx, self._vals = value._idx, value._vals.detach()
        self._size, self._coal = value._size, value._coal

    def retain_grad(self) -> None:
        self._vals.retain_grad()

    def register_hook(self, hook):
        raise RuntimeError("register_hook is not supported on sparse tensors in ember")

    # ------------------------------------------------------------- conversion
    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def tolist(self):
        raise _no_storage()

    def item(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def __iter__(self):
        raise _refuse(self, "unbind")

    def __reduce_ex__(self, protocol):
        idx = self._idx if isinstance(self._idx, np.ndarray) else self._idx.get()
        vals = self._vals.detach().cpu().numpy()
        return (_rebuild_sparse, (idx, vals, self._size, self._coal, str(self.device),
                                  self.requires_grad))

    def __deepcopy__(self, memo):
        out = self.clone()
        if self.requires_grad and self.is_leaf:
            out = out.detach().requires_grad_(True)
        memo[id(self)] = out
        return out

    def __repr__(self) -> str:
        return _sparse_repr(self)

    def to(self, *args, **kwargs) -> SparseTensor:
        device_, dtype_, copy = parse_to_args(args, kwargs)
        vals = self._vals.to(device=device_, dtype=dtype_, copy=copy)
        idx = self._idx
        if device_ is not None and _device_of(idx) != device_:
            idx = Tensor._make(idx).to(device_)._data
        elif copy:
            idx = idx.copy()
        if vals is self._vals and idx is self._idx:
            return self
        return SparseTensor._from_parts(idx, vals, self._size, self._coal)

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        if dtype is None:
            name = Tensor.type(self._vals).split(".")
            return ".".join(name[:-1] + ["sparse", name[-1]])
        return Tensor.type(self, dtype)

    def clone(self, *, memory_format=None) -> SparseTensor:
        return SparseTensor._from_parts(self._idx.copy(), self._vals.clone(), self._size,
                                        self._coal)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The strided tensor (duplicates summed); differentiable w.r.t. the values."""
        vals = self._vals if dtype is None else self._vals.to(dtype=dtype)
        sd = self._idx.shape[0]
        sizes = self._size[:sd]
        n = 1
        for s in sizes:
            n *= s
        xp = _xp(self)
        key = _as_index(xp, _linear_keys(xp, self._idx, sizes))
        flat = _zeros((n,) + self._size[sd:], vals).index_add(0, key, vals)
        return flat.reshape(self._size)

    def to_sparse(self, sparse_dim: int | None = None, *, layout=None, blocksize=None,
                  dense_dim=None) -> SparseTensor:
        if layout not in (None, sparse_coo):
            raise NotImplementedError(f"to_sparse(): layout {layout} is not supported by ember")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported (got "
                               f"{sparse_dim}, expected {self.sparse_dim()})")
        return self

    to_sparse_coo = to_sparse

    def coalesce(self) -> SparseTensor:
        """Sorted, unique indices with the values of duplicates summed (differentiable)."""
        if self._coal:
            return self
        xp = _xp(self)
        sd = self._idx.shape[0]
        sizes = self._size[:sd]
        key = _linear_keys(xp, self._idx, sizes)
        uniq, inv = xp.unique(key, return_inverse=True)
        vals = _zeros((uniq.shape[0],) + tuple(self._vals.shape[1:]), self._vals).index_add(
            0, _as_index(xp, inv.reshape(-1)), self._vals)
        return SparseTensor._from_parts(_unlinear(xp, uniq, sizes), vals, self._size, True)

    # ------------------------------------------------------------- arithmetic
    def add(self, other, *, alpha=1) -> SparseTensor:
        if not isinstance(other, SparseTensor):
            if isinstance(other, Tensor) or isinstance(other, (int, float, bool)):
                raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, "
                                   "sparse) instead.")
            return NotImplemented
        return _sparse_add(self, other, alpha)

    def __add__(self, other):
        return self.add(other)

    def __radd__(self, other):
        if isinstance(other, SparseTensor):
            return other.add(self)
        if isinstance(other, Tensor):  # dense + sparse: a dense result, as in PyTorch
            return other + self.to_dense()
        return self.add(other)

    def sub(self, other, *, alpha=1) -> SparseTensor:
        return self.add(other, alpha=-alpha)

    def __sub__(self, other):
        return self.sub(other)

    def __rsub__(self, other):
        if isinstance(other, Tensor) and not isinstance(other, SparseTensor):
            return other - self.to_dense()
        return (-self).add(other)

    def _scale(self, fn, op: str) -> SparseTensor:
        return SparseTensor._from_parts(self._idx, fn(self._vals), self._size, self._coal)

    def mul(self, other) -> SparseTensor:
        if isinstance(other, SparseTensor) or (isinstance(other, Tensor) and other.dim() != 0):
            raise _refuse(self, "mul")
        return self._scale(lambda v: v * other, "mul")

    __mul__ = mul

    def __rmul__(self, other):
        return self.mul(other)

    def div(self, other, *, rounding_mode=None) -> SparseTensor:
        if isinstance(other, SparseTensor) or (isinstance(other, Tensor) and other.dim() != 0):
            raise _refuse(self, "div")
        return self._scale(lambda v: v.div(other, rounding_mode=rounding_mode), "div")

    def __truediv__(self, other):
        return self.div(other)

    def neg(self) -> SparseTensor:
        return self._scale(lambda v: -v, "neg")

    __neg__ = neg

    def __pos__(self):
        return self

    def _inplace_from(self, res: SparseTensor) -> SparseTensor:
        if self.requires_grad and self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        self._idx, self._vals, self._coal = res._idx, res._vals, res._coal
        self.__dict__.pop("_grad_cache", None)
        return self

    def add_(self, other, *, alpha=1) -> SparseTensor:
        return self._inplace_from(self.add(other, alpha=alpha))

    __iadd__ = add_

    def sub_(self, other, *, alpha=1) -> SparseTensor:
        return self._inplace_from(self.add(other, alpha=-alpha))

    __isub__ = sub_

    def mul_(self, other) -> SparseTensor:
        return self._inplace_from(self.mul(other))

    __imul__ = mul_

    def div_(self, other) -> SparseTensor:
        return self._inplace_from(self.div(other))

    __itruediv__ = div_

    def zero_(self) -> SparseTensor:
        xp = _xp(self)
        empty = _zeros((0,) + tuple(self._vals.shape[1:]), self._vals)
        return self._inplace_from(SparseTensor._from_parts(
            xp.zeros((self._idx.shape[0], 0), dtype=np.int64), empty, self._size, True))

    def mm(self, mat2: Tensor) -> Tensor:
        return sparse_mm(self, mat2)

    def _rmm(self, dense: Tensor) -> Tensor:  # ``mm(dense, sparse)``
        return sparse_mm(dense, self)

    def matmul(self, other: Tensor) -> Tensor:
        return sparse_mm(self, other, op="matmul")

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return _dense_sparse_mm(other, self)

    def t(self) -> SparseTensor:
        if len(self._size) > 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               "dense dimensions")
        if len(self._size) < 2:
            return self
        return SparseTensor._from_parts(self._idx[::-1].copy(), self._vals, self._size[::-1],
                                        False)

    @property
    def T(self) -> SparseTensor:
        return self.t()

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        n = len(self._size)
        d0, d1 = _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose")
        sd = self._idx.shape[0]
        if d0 == d1:
            return self
        if d0 >= sd or d1 >= sd:
            raise RuntimeError("transpose(): cannot transpose a dense dimension of a sparse "
                               "tensor")
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        size = list(self._size)
        size[d0], size[d1] = size[d1], size[d0]
        return SparseTensor._from_parts(self._idx[order].copy(), self._vals, size, False)

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        if keepdim:
            raise RuntimeError("sum(): keepdim=True is not supported for sparse tensors")
        return sparse_sum(self, dim, dtype=dtype)

    def is_set_to(self, other) -> bool:
        return self is other


def _rebuild_sparse(idx, vals, size, coalesced, dev, requires_grad):
    t = SparseTensor._from_parts(idx, Tensor._make(vals), size, coalesced)
    if dev != "cpu":
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


# --------------------------------------------------------------------------- creation
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor from ``indices`` (sparse_dim x nnz integers) and ``values``
    (nnz x dense dims) (``torch.sparse_coo_tensor``). Indices are always checked against
    ``size`` (ember never reads out of bounds): PyTorch's ``check_invariants=True`` errors.
    Duplicates are kept (an uncoalesced tensor) until :meth:`SparseTensor.coalesce`.

    >>> import ember.tensor as et
    >>> et.sparse_coo_tensor([[0, 1]], [1., 2.], (3,))
    tensor(indices=tensor([[0, 1]]),
           values=tensor([1., 2.]),
           size=(3,), nnz=2, layout=ember.sparse_coo)
    """
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype, device=device)
    elif isinstance(values, SparseTensor):
        raise TypeError("sparse_coo_tensor(): argument 'values' must be a strided Tensor")
    if dtype is not None or device is not None:
        values = values.to(device=device, dtype=dtype)
    if not isinstance(indices, Tensor):
        indices = tensor(indices, dtype=D.int64, device=values.device)
    elif isinstance(indices, SparseTensor):
        raise TypeError("sparse_coo_tensor(): argument 'indices' must be a strided Tensor")
    if indices.device != values.device:
        raise RuntimeError(f"sparse_coo_tensor(): expected indices and values to be on the same "
                           f"device, but got: indices {indices.device}, values {values.device}")
    idx = indices.detach()._data
    xp = array_module(idx)
    if idx.dtype.kind == "b":
        raise RuntimeError("sparse_coo_tensor(): indices must be an int64 tensor")
    if idx.dtype != np.int64:
        idx = idx.astype(np.int64)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sd, nnz = idx.shape
    if values.dim() == 0:
        values = values.reshape(1)
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {values.shape[0]}")
    dense_shape = tuple(values.shape[1:])
    if nnz:
        lo = xp.min(idx, axis=1)
        hi = xp.max(idx, axis=1)
        lo_l = lo.tolist() if xp is np else lo.get().tolist()
        hi_l = hi.tolist() if xp is np else hi.get().tolist()
    else:
        lo_l, hi_l = [0] * sd, [-1] * sd
    for d, m in enumerate(lo_l):
        if m < 0:
            raise RuntimeError(f"found negative index {m} for dim {d}")
    if size is None:
        size = tuple(h + 1 for h in hi_l) + dense_shape
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sd + len(dense_shape):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sd}, dense_dim = "
                               f"{len(dense_shape)}")
        for d in range(sd):
            if hi_l[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {hi_l[d]}")
        if tuple(size[sd:]) != dense_shape:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got "
                               f"{[nnz, *dense_shape]}")
    if idx is indices._data:
        idx = idx.copy()
    coal = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    vals = values
    if values.requires_grad and values.grad_fn is None:
        vals = values.view(tuple(values.shape))  # a node of its own: S is not a leaf
    out = SparseTensor._from_parts(idx, vals, size, coal)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
               dense_dim=None) -> SparseTensor:
    """The sparse COO tensor holding this tensor's nonzeros (``Tensor.to_sparse``): the
    first ``sparse_dim`` dims (all by default) are sparse; a slice is kept where any of its
    entries is nonzero. Differentiable w.r.t. ``self``."""
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse(): layout {layout} is not supported by ember")
    n = self.dim()
    sd = n if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= n:
        raise RuntimeError(f"sparse_dim must be in [0, {n}], but got {sd}")
    d = self.detach()._data
    xp = array_module(d)
    mask = d != 0
    if sd < n:
        mask = mask.any(axis=tuple(range(sd, n)))
    if sd == 0:
        idx = xp.zeros((0, 1), dtype=np.int64)
        vals = self.unsqueeze(0)
    else:
        nz = xp.nonzero(mask)
        idx = xp.stack([a.astype(np.int64) for a in nz]) if nz else \
            xp.zeros((0, 0), dtype=np.int64)
        vals = self[tuple(_as_index(xp, a) for a in idx)]
    return SparseTensor._from_parts(idx, vals, tuple(self.shape), True)


# --------------------------------------------------------------------------- ops
def _promote_values(a: Tensor, b: Tensor):
    if a.dtype != b.dtype:
        dt = D.promote_types(a.dtype, b.dtype)
        a, b = a.to(dtype=dt), b.to(dtype=dt)
    return a, b


def _merge_positions(xp, ka, kb):
    """Output slot of each entry of ``a`` and ``b`` when their index lists are merged: one
    pass over both (PyTorch's CPU order; equal indices meeting head to head share a slot).
    On the GPU the lists are concatenated (PyTorch's CUDA order)."""
    if xp is np:
        from .kernels.cpu.sparse import merge_positions

        return merge_positions(np.ascontiguousarray(ka), np.ascontiguousarray(kb))
    na, nb = ka.shape[0], kb.shape[0]
    return xp.arange(na, dtype=np.int64), xp.arange(na, na + nb, dtype=np.int64), na + nb


def _sparse_add(a: SparseTensor, b: SparseTensor, alpha=1) -> SparseTensor:
    if a._size != b._size:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a._size)} != {list(b._size)}")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimensions, "
                           f"but got {a.sparse_dim()} and {b.sparse_dim()}")
    if a.device != b.device:
        raise RuntimeError(f"add: expected both tensors on the same device, but got "
                           f"{a.device} and {b.device}")
    va, vb = _promote_values(a._vals, b._vals)
    if alpha != 1:
        vb = vb * alpha
    xp = _xp(a)
    sd = a.sparse_dim()
    sizes = a._size[:sd]
    ka, kb = _linear_keys(xp, a._idx, sizes), _linear_keys(xp, b._idx, sizes)
    pa, pb, n = _merge_positions(xp, ka, kb)
    key = xp.zeros(n, dtype=np.int64)
    key[pa] = ka
    key[pb] = kb
    vals = _zeros((n,) + tuple(va.shape[1:]), va).index_add(0, _as_index(xp, pa), va)
    vals = vals.index_add(0, _as_index(xp, pb), vb)
    coal = a._coal and b._coal and xp is np
    return SparseTensor._from_parts(_unlinear(xp, key, sizes), vals, a._size, coal)


def _check_mm(op: str, s: SparseTensor, d) -> None:
    if not isinstance(d, Tensor):
        raise TypeError(f"{op}(): argument 'mat2' must be Tensor, not {type(d).__name__}")
    if isinstance(d, SparseTensor):
        raise NotImplementedError(f"{op}(): sparse @ sparse is not supported by ember; "
                                  "convert one operand with to_dense()")
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"{op}(): expected a 2-D sparse matrix with 2 sparse and 0 dense "
                           f"dimensions, but got {s.sparse_dim()} sparse and "
                           f"{s.dense_dim()} dense dimensions")
    if d.dim() not in (1, 2) or (op == "mm" and d.dim() != 2):
        raise RuntimeError(f"{op}(): mat2 must be a matrix, got a {d.dim()}-D tensor")
    if s.dtype != d.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(s.dtype)} but found "
                           f"{scalar_type_name(d.dtype)}")
    if s.device != d.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {s.device} and {d.device}!")
    if d.shape[0] != s._size[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._size[1]}, got "
                           f"{d.shape[0]}")


def sparse_mm(sparse: SparseTensor, dense: Tensor, op: str = "mm") -> Tensor:
    """``sparse @ dense`` (``torch.sparse.mm``, ``torch.spmm``): a 2-D sparse COO matrix times
    a dense matrix (or vector), a dense result. Differentiable w.r.t. the dense operand and
    the sparse values (a leaf sparse operand gets a sparse gradient with its own indices)."""
    if not isinstance(sparse, SparseTensor):
        if isinstance(dense, SparseTensor):
            return _dense_sparse_mm(sparse, dense)
        return mm(sparse, dense)
    _check_mm(op, sparse, dense)
    xp = _xp(sparse)
    rows = _as_index(xp, sparse._idx[0])
    cols = _as_index(xp, sparse._idx[1])
    vals = sparse._vals
    m = sparse._size[0]
    if dense.dim() == 1:
        prod = dense.index_select(0, cols) * vals
        return _zeros((m,), prod).index_add(0, rows, prod)
    gathered = dense.index_select(0, cols)
    prod = gathered * vals.unsqueeze(1)
    return _zeros((m, dense.shape[1]), prod).index_add(0, rows, prod)


def _dense_sparse_mm(dense: Tensor, sparse: SparseTensor) -> Tensor:
    """``dense @ sparse`` = ``(sparse.t() @ dense.t()).t()``."""
    if not isinstance(dense, Tensor) or dense.dim() != 2:
        raise RuntimeError("mm(): dense @ sparse expects a 2-D dense matrix")
    return sparse_mm(sparse.t(), dense.t()).t()


def spmm(input: SparseTensor, mat2: Tensor) -> Tensor:
    """``torch.spmm``: sparse @ dense (see :func:`sparse_mm`)."""
    return sparse_mm(input, mat2)


def sparse_addmm(mat: Tensor, mat1: SparseTensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (``torch.sparse.addmm``)."""
    prod = sparse_mm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    return prod + (mat if beta == 1 else mat * beta)


def sparse_sum(input: SparseTensor, dim=None, dtype=None):
    """Sum over ``dim`` (``torch.sparse.sum``): all dims gives a dense 0-d tensor; summing
    every sparse dim gives a dense tensor; otherwise a coalesced sparse tensor."""
    if not isinstance(input, SparseTensor):
        return _sum(input, dim, dtype=dtype) if dim is not None else _sum(input, dtype=dtype)
    vals = input._vals if dtype is None else input._vals.to(dtype=dtype)
    if dim is None:
        return vals.sum()
    n = len(input._size)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = sorted({_wrap_dim(d, n, "sum") for d in dims})
    sd = input.sparse_dim()
    sp = [d for d in dims if d < sd]
    dn = [d - sd + 1 for d in dims if d >= sd]
    if dn:
        vals = vals.sum(tuple(dn))
    keep = [d for d in range(sd) if d not in sp]
    dense_size = [input._size[d] for d in range(sd, n) if d not in dims]
    if not keep:
        return vals.sum(0)
    idx = input._idx[keep]
    size = [input._size[d] for d in keep] + dense_size
    return SparseTensor._from_parts(idx.copy(), vals, size, False).coalesce()


def _sparse_mask_values(s: SparseTensor, mask: SparseTensor) -> Tensor:
    """The values of ``s`` at ``mask``'s indices, in ``mask``'s order (dense)."""
    return _dense_values_at(s.to_dense(), mask)


def _dense_values_at(d: Tensor, mask: SparseTensor) -> Tensor:
    xp = _xp(mask)
    return d[tuple(_as_index(xp, a) for a in mask._idx)]


# --------------------------------------------------------------------------- printing
def _sparse_repr(t: SparseTensor) -> str:
    prefix = "tensor("
    indent = len(prefix)
    idx = t._idx if isinstance(t._idx, np.ndarray) else t._idx.get()
    vals = t._vals.detach()
    ip = "indices=tensor("
    istr = _tensor_str(idx, indent + len(ip))
    if idx.size == 0:
        istr += f", size={tuple(idx.shape)}"
    vp = "values=tensor("
    vdata = vals._data
    vstr = _tensor_str(vdata, indent + len(vp))
    if vdata.size == 0:
        vstr += f", size={tuple(vdata.shape)}"
    body = f"{ip}{istr}),\n{' ' * indent}{vp}{vstr})"
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    suffixes.append(f"size={tuple(t._size)}")
    suffixes.append(f"nnz={t._nnz()}")
    if t.dtype not in (D.get_default_dtype(), D.int64, D.bool):
        suffixes.append(f"dtype={t.dtype}")
    suffixes.append(f"layout={sparse_coo}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(t.grad_fn)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    # the first suffix starts a new line, as PyTorch prints sparse tensors
    first = ",\n" + " " * indent + suffixes[0]
    return _add_suffixes(prefix + body + first, suffixes[1:], indent)


# --------------------------------------------------------------------------- dense side
def _strided_only(name: str, error=RuntimeError):
    def method(self, *args, **kwargs):
        raise error(f"{name} expected sparse coordinate tensor layout but got Strided")
    method.__name__ = name
    return method


def _dense_nnz(self):
    raise NotImplementedError("Could not run 'aten::_nnz' with arguments from the 'CPU' "
                              "backend. '_nnz' is only available for sparse tensors.")


def _dense_to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
    return self if dtype is None else self.to(dtype=dtype)


def _install_dense_methods() -> None:
    """The sparse-related members of strided tensors (``layout``, ``is_sparse``,
    ``to_sparse``, ``to_dense``, ``sparse_dim``, ...)."""
    Tensor.layout = strided
    Tensor.is_sparse = False
    Tensor.to_sparse = _to_sparse
    Tensor.to_sparse_coo = _to_sparse
    Tensor.to_dense = _dense_to_dense
    Tensor.sparse_dim = lambda self: 0
    Tensor.dense_dim = lambda self: self.dim()
    Tensor._nnz = _dense_nnz
    for name in ("coalesce", "is_coalesced", "indices", "values", "_indices", "_values"):
        setattr(Tensor, name, _strided_only(name))


_install_dense_methods()
