"""Matrix products and small linear-algebra helpers: matmul, mm, bmm, mv, dot, outer, einsum,
tensordot, the ``add*`` fused forms (addmm, addmv, baddbmm, addbmm), trace, diag and cross.

Products stay on BLAS (NumPy) and cuBLAS (CuPy): one registry op, ``matmul``, does every
matrix product with ``xp.matmul`` (PyTorch's 1-d / 2-d / batched broadcasting rules are
NumPy's); ``mm``, ``bmm``, ``mv`` and ``dot`` check their stricter shape rules and call it.
Operands that BLAS cannot take in place (sliced with a step, expanded) are made contiguous
first, and float16 multiplies in float32 on the CPU. Like PyTorch, the operands of a product
must share a dtype (no promotion): mismatches raise RuntimeError naming both dtypes.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _dtype as D
from ._autocast import autocast_input_dtype
from ._checks import check_same_device, not_implemented, scalar_type_name
from ._fpstate import quiet_begin, quiet_end
from ._pointwise import add, mul
from ._reduction import sum as _sum
from ._registry import array_module, defop, with_out
from ._tensor import Tensor, _wrap_dim
from .kernels import cpu as _cpu_kernels
from .kernels import get as _kernel

__all__ = [
    "linear",
    "matmul", "mm", "bmm", "mv", "dot", "outer", "ger", "einsum", "tensordot", "addmm",
    "addmv", "baddbmm", "addbmm", "trace", "diag", "cross",
]

_make = Tensor._make
_ndarray = np.ndarray
_add_reduce = np.add.reduce
_int64 = np.dtype(np.int64)
_float16 = np.dtype(np.float16)
_float32 = np.dtype(np.float32)

# PyTorch's C++ type names (``float != double``) and scalar type names (``Float``).
_CPP_NAMES = {np.dtype(k): v for k, v in {
    np.bool_: "bool", np.uint8: "unsigned char", np.int8: "signed char", np.int16: "short int",
    np.int32: "int", np.int64: "long int", np.float16: "c10::Half", np.float32: "float",
    np.float64: "double", np.complex64: "c10::complex<float>",
    np.complex128: "c10::complex<double>"}.items()}


# ---------------------------------------------------------------------------- checks
_check_device = check_same_device


def _check_same_dtype(op: str, a, b) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}(): expected m1 and m2 to have the same dtype, but got: "
                           f"{_CPP_NAMES[a.dtype]} != {_CPP_NAMES[b.dtype]}")


def _check_operands(op: str, a, b) -> None:
    """PyTorch's refusals of a product's operands ``a`` and ``b``, in its order: a 0-d
    operand, two devices, two dtypes, bool."""
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"{op}(): both arguments to {op} need to be at least 1D, but "
                           f"they are {a.ndim}D and {b.ndim}D")
    _check_device(op, a, b)
    _check_same_dtype(op, a, b)
    _check_not_bool(op, a)


def _check_not_bool(op: str, a) -> None:
    if a.dtype.kind == "b":
        raise NotImplementedError(f"{op}(): not implemented for 'Bool'")


def _shape_str(shape) -> str:
    return "x".join(str(s) for s in shape)


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _mm_error(op: str, s1, s2) -> RuntimeError:
    return RuntimeError(f"{op}(): mat1 and mat2 shapes cannot be multiplied "
                        f"({_shape_str(s1)} and {_shape_str(s2)})")


def _mv_error(op: str, rows: int, mat, vec: int) -> RuntimeError:
    return RuntimeError(f"{op}(): size mismatch, got input ({rows}), mat ({_shape_str(mat)}), "
                        f"vec ({vec})")


def _dot_error(op: str, n1: int, n2: int) -> RuntimeError:
    return RuntimeError(f"{op}(): inconsistent tensor size, expected tensor [{n1}] and src "
                        f"[{n2}] to have the same number of elements, but got {n1} and {n2} "
                        "elements respectively")


def _broadcast_batch(op: str, b1, b2) -> tuple[int, ...]:
    n = max(len(b1), len(b2))
    p1, p2 = (1,) * (n - len(b1)) + tuple(b1), (1,) * (n - len(b2)) + tuple(b2)
    out = []
    for i, (x, y) in enumerate(zip(p1, p2)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"{op}(): The size of tensor a ({x}) must match the size of "
                               f"tensor b ({y}) at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _check_matmul_shapes(op: str, s1, s2) -> None:
    """PyTorch's shape errors for ``matmul`` of shapes ``s1`` and ``s2`` (both >= 1-d)."""
    n1, n2 = len(s1), len(s2)
    if n1 == 1 and n2 == 1:
        if s1[0] != s2[0]:
            raise _dot_error(op, s1[0], s2[0])
    elif n2 == 1:  # matrix (or folded batch of matrices) @ vector
        rows = _prod(s1[:-1])
        if s1[-1] != s2[0]:
            raise _mv_error(op, rows, (rows, s1[-1]), s2[0])
    elif n1 == 1 and n2 == 2:
        if s1[0] != s2[0]:
            raise _mm_error(op, (1, s1[0]), s2)
    elif n2 == 2:  # matrix (or folded batch of matrices) @ matrix
        rows = _prod(s1[:-1])
        if s1[-1] != s2[0]:
            raise _mm_error(op, (rows, s1[-1]), s2)
    else:
        b1 = s1[:-2] if n1 > 1 else ()
        batch = _prod(_broadcast_batch(op, b1, s2[:-2]))
        k1 = s1[-1]
        if k1 != s2[-2]:
            raise RuntimeError(f"{op}(): Expected size for first two dimensions of batch2 "
                               f"tensor to be: [{batch}, {k1}] but got: [{batch}, {s2[-2]}].")


def _blas_ready(xp, a):
    """``a`` as an operand BLAS takes without NumPy's slow fallback loop."""
    if xp is not np or a.dtype.kind != "f" or a.flags.c_contiguous:
        return a
    if a.ndim == 1:
        return a if a.strides[0] == a.itemsize or a.size <= 1 else np.ascontiguousarray(a)
    s0, s1 = a.strides[-2], a.strides[-1]
    n0, n1 = a.shape[-2], a.shape[-1]
    item = a.itemsize
    if (s1 == item and s0 >= n1 * item) or (s0 == item and s1 >= n0 * item):
        if all(s != 0 or n == 1 for s, n in zip(a.strides[:-2], a.shape[:-2])):
            return a
    return np.ascontiguousarray(a)


def _transpose_wins(m: int, k: int, n: int) -> bool:
    """Does OpenBLAS run ``x @ w.T`` (``x`` (m, k), ``w`` (n, k), both row-major: a linear
    layer's product) faster as ``(w @ x.T).T`` copied back to row-major? Its kernels run a
    product with few rows (m) slowly in this orientation; with ``w`` as the left operand the
    long side is the rows. Measured (float32, one and two threads: ``python
    benchmarks/bench_kernels.py --gemm`` prints the table) 1.2-2.9x faster from 2 to 64 rows
    where the output is wide enough, 0.7-0.9x elsewhere (one row, a narrow output, short
    inputs with 33 rows or more, or 96 rows and more, where the copy back costs more than
    the product gains). The other orientations (``x @ w``, ``x.T @ w``) gain nothing."""
    if m < 2 or n < 64:
        return False
    if m <= 4:
        return n >= (800 if m == 2 else 512)
    if m <= 16:
        return n >= (128 if m == 16 else 200)
    if m <= 32:
        return k >= 128
    if m <= 48:
        return k >= 200
    return m <= 64 and k >= 512 and n >= 128


def _upcast(xp, a):
    """float16 multiplies in float32 on the CPU (BLAS has no half gemm; it also accumulates
    in float32 like PyTorch)."""
    if xp is np and a.dtype == _float16:
        return a.astype(_float32)
    return a


def _own(r, inputs):
    if isinstance(r, np.generic):
        return np.asarray(r)
    xp = array_module(r)
    if r.size and any(xp.may_share_memory(r, x) for x in inputs):
        return r.copy()
    return r


# ---------------------------------------------------------------------------- products
@defop("matmul", out=True, out_casting="no")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules: 1-d @ 1-d is a dot product, a 1-d operand is
    promoted to a matrix and the added dim removed, batch dims broadcast.

    >>> matmul(tensor([[1., 2.], [3., 4.]]), tensor([1., 1.]))
    tensor([3., 7.])
    """
    a, b = input._data, other._data
    dt = a.dtype
    if a.__class__ is _ndarray and b.__class__ is _ndarray and dt == b.dtype and \
            dt.kind != "b" and a.ndim and b.ndim:
        xp = np
    else:  # PyTorch's errors, in its order; a pair on one CuPy device goes on
        _check_operands("matmul", a, b)
        xp = array_module(a)
    if dt == _float16 and xp is np:  # (BLAS has no half gemm; float32 also accumulates
        a, b = a.astype(_float32), b.astype(_float32)  # like PyTorch)
    na, nb = a.ndim, b.ndim
    token = quiet_begin()
    try:  # NumPy's shape rules are PyTorch's: a mismatch raises, and only then is diagnosed
        if na > 2 or nb > 2:
            # (the matmul ufunc loops without BLAS over operands BLAS cannot take as they
            # are; ``dot`` below copies such an operand itself, so only this branch asks)
            if not a.flags.c_contiguous:
                a = _blas_ready(xp, a)
            if not b.flags.c_contiguous:
                b = _blas_ready(xp, b)
            if nb == 2 and a.flags.c_contiguous:
                # a batch of rows times one matrix: one GEMM over the folded rows, about
                # twice as fast as NumPy's loop of one GEMM per batch entry
                r = a.reshape(_prod(a.shape[:-1]), a.shape[-1]) @ b
                r = r.reshape(a.shape[:-1] + r.shape[-1:])
            else:  # (``@``: the matmul ufunc without ``xp.matmul``'s keyword parsing)
                r = a @ b
        elif na == 2 == nb and xp is np and dt.kind == "f" and a.shape[1] == b.shape[0] and \
                (a.shape[1] == 1 or _transpose_wins(a.shape[0], a.shape[1], b.shape[1]) and
                 b.flags.f_contiguous and a.flags.c_contiguous):
            # an outer product (inner size 1, a weight gradient from one row) through the
            # outer kernel, 2-25x faster than a GEMM with inner size 1 (each element is one
            # product either way, the same values); ``a @ w.T`` (a weight's transpose) in the
            # orientation OpenBLAS runs faster
            r = _cpu_kernels.outer(a.reshape(-1), b.reshape(-1)) if a.shape[1] == 1 else \
                np.ascontiguousarray(np.matmul(b.T, a.T).T)
        else:
            # matrices and vectors: ``dot`` is ``matmul`` for operands of at most 2 dims (the
            # same BLAS call) without the ufunc machinery, 0.3-0.4 us less a call; the array's
            # own method (NumPy's and CuPy's) skips ``xp.dot``'s array-function dispatch
            r = a.dot(b)
    except ValueError:
        _check_matmul_shapes("matmul", a.shape, b.shape)
        raise
    finally:
        quiet_end(token)
    if r.dtype != dt:  # float16 multiplied in float32; bfloat16's dot gives float32
        r = xp.asarray(r).astype(dt)
    return _make(r)


@defop("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` in one op (``torch.nn.functional.linear``): one BLAS call,
    and a backward that produces the weight gradient in the weight's own layout.

    >>> linear(ones(2, 3), ones(4, 3), zeros(4)).shape
    ember.Size([2, 4])
    """
    a, w = input._data, weight._data
    if a.ndim == 0 or w.ndim != 2 or a.shape[-1] != w.shape[1]:
        rows = a.size // max(a.shape[-1], 1) if a.ndim else 1
        raise RuntimeError(
            f"linear(): mat1 and mat2 shapes cannot be multiplied "
            f"({rows}x{a.shape[-1] if a.ndim else 1} and "
            f"{w.shape[-1] if w.ndim else 1}x{w.shape[0] if w.ndim == 2 else 1})")
    if a.__class__ is np.ndarray and w.__class__ is np.ndarray:
        xp = np
    else:
        _check_device("linear", a, w)
        xp = array_module(a)
    if a.dtype != w.dtype:
        _check_same_dtype("linear", a, w)
    # the leading dims folded into the rows of one BLAS call (a strided input is copied:
    # cheaper than a GEMM per leading index); ``dot`` copies an operand BLAS cannot take
    lead, k = a.shape[:-1], a.shape[-1]
    n = lead[0] if len(lead) == 1 else _prod(lead)
    x, wt = a if len(lead) == 1 else a.reshape(n, k), w
    if a.dtype == _float16:
        x, wt = _upcast(xp, x), _upcast(xp, wt)
    token = quiet_begin()
    try:
        if xp is np and x.dtype.kind == "f" and _transpose_wins(n, k, wt.shape[0]) and \
                x.flags.c_contiguous and wt.flags.c_contiguous:
            # the orientation OpenBLAS runs faster: ``(w @ x.T).T``, copied back to row-major
            r = np.ascontiguousarray(np.matmul(wt, x.T).T)
        else:
            r = x.dot(wt.T)
        if bias is not None:
            b = bias._data
            if b.__class__ is not np.ndarray or xp is not np:
                _check_device("linear", a, b)
            r += b
    finally:
        quiet_end(token)
    if r.dtype != a.dtype:  # float16, multiplied in float32
        r = r.astype(a.dtype)
    return _make(r if len(lead) == 1 else r.reshape(lead + r.shape[-1:]))


@with_out(casting="no")
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices (2-d only, no broadcasting).

    >>> mm(tensor([[1, 2]]), tensor([[3], [4]]))
    tensor([[11]])
    """
    # sparse COO operands (torch.mm accepts them): the sparse layout's class multiplies
    if input.is_sparse:
        return input.mm(mat2)
    if mat2.is_sparse:
        return mat2._rmm(input)
    a, b = input._data, mat2._data
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.shape[1] != b.shape[0]:
        if a.ndim != 2:
            raise RuntimeError(f"mm(): self must be a matrix, got a {a.ndim}-D tensor")
        if b.ndim != 2:
            raise RuntimeError(f"mm(): mat2 must be a matrix, got a {b.ndim}-D tensor")
        _check_same_dtype("mm", a, b)
        raise _mm_error("mm", a.shape, b.shape)
    return matmul(input, mat2)


@with_out(casting="no")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of ``(b, n, m)`` and ``(b, m, p)`` tensors (no broadcasting).

    >>> bmm(ones(2, 1, 3), ones(2, 3, 4)).shape
    ember.Size([2, 1, 4])
    """
    a, b = input._data, mat2._data
    if a.ndim != 3 or b.ndim != 3 or a.dtype != b.dtype or a.dtype.kind == "b" or \
            b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        if a.ndim != 3:
            raise RuntimeError(f"bmm(): batch1 must be a 3D tensor, got a {a.ndim}-D tensor")
        if b.ndim != 3:
            raise RuntimeError(f"bmm(): batch2 must be a 3D tensor, got a {b.ndim}-D tensor")
        if a.dtype.kind == "b":  # PyTorch's bmm has no bool kernel
            raise not_implemented("bmm", a.dtype)
        if a.dtype != b.dtype:
            raise RuntimeError(f"bmm(): expected scalar type {scalar_type_name(a.dtype)} but "
                               f"found {scalar_type_name(b.dtype)}")
        raise RuntimeError(f"bmm(): Expected size for first two dimensions of batch2 tensor "
                           f"to be: [{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, "
                           f"{b.shape[1]}].")
    return matmul(input, mat2)


@with_out(casting="no")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product.

    >>> mv(tensor([[1., 2.], [3., 4.]]), tensor([1., 0.]))
    tensor([1., 3.])
    """
    a, b = input._data, vec._data
    if a.ndim != 2 or b.ndim != 1 or a.dtype != b.dtype or a.shape[1] != b.shape[0]:
        if a.ndim == 0:
            raise IndexError("mv(): Dimension specified as 0 but tensor has no dimensions")
        if a.ndim != 2 or b.ndim != 1:
            raise RuntimeError(f"mv(): vector + matrix @ vector expected, got 1, {a.ndim}, "
                               f"{b.ndim}")
        if a.dtype != b.dtype:
            raise RuntimeError(f"mv(): expected m1 and m2 to have the same dtype, but got: "
                               f"{_CPP_NAMES[a.dtype]} != {_CPP_NAMES[b.dtype]}")
        raise _mv_error("mv", a.shape[0], a.shape, b.shape[0])
    return matmul(input, vec)


@with_out(casting="no")
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-d tensors of the same size and dtype.

    >>> dot(tensor([1, 2, 3]), tensor([4, 5, 6]))
    tensor(32)
    """
    a, b = input._data, tensor._data
    if a.ndim != 1 or b.ndim != 1 or a.dtype != b.dtype or a.shape[0] != b.shape[0]:
        if a.ndim != 1 or b.ndim != 1:
            raise RuntimeError(f"dot(): 1D tensors expected, but got {a.ndim}D and {b.ndim}D "
                               "tensors")
        if a.dtype != b.dtype:
            raise RuntimeError(f"dot(): expected both vectors to have same dtype, but found "
                               f"{scalar_type_name(a.dtype)} and {scalar_type_name(b.dtype)}")
        raise _dot_error("dot", a.shape[0], b.shape[0])
    return matmul(input, tensor)


@defop("outer", out=True)
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-d tensors (dtypes promote like ``*``).

    >>> outer(tensor([1, 2]), tensor([1, 10, 100]))
    tensor([[  1,  10, 100],
            [  2,  20, 200]])
    """
    a, b = input._data, vec2._data
    if a.ndim != 1:
        raise RuntimeError(f"outer(): Expected 1-D argument self, but got {a.ndim}-D")
    if b.ndim != 1:
        raise RuntimeError(f"outer(): Expected 1-D argument vec2, but got {b.ndim}-D")
    _check_device("outer", a, b)
    dt = D.promote_types(input.dtype, vec2.dtype).np
    xp = array_module(a)
    a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
    if dt.char in "fd":  # the outer kernel's dtypes
        return _make(_kernel("outer", xp)(a, b))
    return _make(xp.multiply(a[:, None], b[None, :]))


def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """Alias of :func:`outer`.

    >>> ger(tensor([1, 2]), tensor([3])).shape
    ember.Size([2, 1])
    """
    return outer(input, vec2)


@defop("einsum")
def _einsum(equation: str, *operands: Tensor) -> Tensor:
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, got {type(equation).__name__}")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    arrays = [t._data for t in operands]
    _check_device("einsum", *arrays)
    dt = arrays[0].dtype
    for x in arrays[1:]:
        if x.dtype != dt:  # PyTorch's bmm, which contracts, checks its kernel first
            if dt.kind == "b":
                raise not_implemented("einsum", dt)
            raise RuntimeError(f"einsum(): expected scalar type {scalar_type_name(dt)} but found "
                               f"{scalar_type_name(x.dtype)}")
    xp = array_module(arrays[0])
    ups = [_upcast(xp, x) for x in arrays]
    try:
        # optimize picks a contraction order and hands pairwise contractions to BLAS
        r = xp.einsum(equation, *ups, optimize=len(ups) > 1)
    except ValueError as exc:
        raise RuntimeError(f"einsum(): {exc}") from None
    r = xp.asarray(r).astype(dt, copy=False)
    return _make(_own(r, arrays))


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation: ``einsum('ij,jk->ik', a, b)`` is ``a @ b``. The operands may also
    be given as one list.

    >>> einsum('ii', tensor([[1, 2], [3, 4]]))
    tensor(5)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _einsum(equation, *operands)


def _tensordot_dims(dims, n1: int, n2: int):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    # (a Python int, the usual dims, by its class first: the ABC check runs Python hooks)
    if dims.__class__ is int or (isinstance(dims, numbers.Integral) and
                                 not isinstance(dims, bool)):
        if dims < 0:
            raise RuntimeError(f"tensordot(): tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(n1, n2):
            raise RuntimeError(f"tensordot(): tensordot expects dims < ndim_a or ndim_b, but "
                               f"got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    if isinstance(dims, (list, tuple)) and len(dims) == 2:
        d1, d2 = dims
        d1 = [d1] if isinstance(d1, numbers.Integral) else list(d1)
        d2 = [d2] if isinstance(d2, numbers.Integral) else list(d2)
        if len(d1) != len(d2):
            raise RuntimeError(f"tensordot(): both dimension lists should have same length, "
                               f"got {len(d1)} and {len(d2)}")
        return d1, d2
    raise TypeError("tensordot(): dims must be an int or a pair of lists of dims")


@defop("tensordot", out=True)
def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Contract the last ``dims`` dims of ``a`` with the first ``dims`` dims of ``b`` (or the
    dims listed in a pair of lists).

    >>> tensordot(ones(2, 3), ones(3, 4), dims=1).shape
    ember.Size([2, 4])
    """
    x, y = a._data, b._data
    _check_device("tensordot", x, y)
    if x.dtype != y.dtype:
        raise RuntimeError(f"tensordot(): both inputs should have same dtype, but got "
                           f"{scalar_type_name(x.dtype)} and {scalar_type_name(y.dtype)}")
    d1, d2 = _tensordot_dims(dims, x.ndim, y.ndim)
    w1 = [_wrap_dim(d, x.ndim, "tensordot") for d in d1]
    w2 = [_wrap_dim(d, y.ndim, "tensordot") for d in d2]
    for i, j, o1, o2 in zip(w1, w2, d1, d2):
        if x.shape[i] != y.shape[j]:
            raise RuntimeError(f"tensordot(): contracted dimensions need to match, but first "
                               f"has size {x.shape[i]} in dim {o1} and second has size "
                               f"{y.shape[j]} in dim {o2}")
    xp = array_module(x)
    # No contracted dims is the outer product, asked as axes=0: CuPy's tensordot refuses a 0-d
    # operand with any other axes argument, empty lists included
    r = xp.tensordot(_upcast(xp, x), _upcast(xp, y), axes=(w1, w2) if w1 else 0)
    return _make(_own(xp.asarray(r).astype(x.dtype, copy=False), (x, y)))


# ---------------------------------------------------------------------------- add* forms
def _check_expand(op: str, s, target) -> None:
    """PyTorch's error when ``input`` of shape ``s`` cannot expand to ``target``."""
    if len(s) > len(target):
        raise RuntimeError(f"{op}(): the number of sizes provided ({len(target)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(s)})")
    for i in range(1, len(s) + 1):
        if s[-i] != target[-i] and s[-i] != 1:
            raise RuntimeError(f"{op}(): The expanded size of the tensor ({target[-i]}) must "
                               f"match the existing size ({s[-i]}) at non-singleton dimension "
                               f"{len(target) - i}.  Target sizes: {list(target)}.  Tensor "
                               f"sizes: {list(s)}")


def _add_scaled(op: str, input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    x, p = input._data, product._data
    if x.dtype != p.dtype:
        if autocast_input_dtype(input) is product.dtype:  # autocast casts addmm's input too
            input = input.to(product.dtype)
            x = input._data
        else:
            raise RuntimeError(f"{op}(): self and mat2 must have the same dtype, but got "
                               f"{scalar_type_name(x.dtype)} and {scalar_type_name(p.dtype)}")
    s, target = x.shape, p.shape
    if s != target[len(target) - len(s):]:  # (equal trailing sizes: it expands)
        _check_expand(op, s, target)
    if p.dtype.kind in "iub":  # PyTorch casts beta and alpha to an integer dtype (truncating)
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:  # like PyTorch, input is ignored (NaN in it does not propagate)
        return product
    return add(input if beta == 1 else mul(input, beta), product)


@with_out(casting="no")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's shape.

    >>> addmm(zeros(2, 2), eye(2), eye(2), alpha=3)
    tensor([[3., 0.],
            [0., 3.]])
    """
    return _add_scaled("addmm", input, mm(mat1, mat2), beta, alpha)


@with_out(casting="no")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``.

    >>> addmv(tensor([1., 1.]), eye(2), tensor([2., 3.]))
    tensor([3., 4.])
    """
    return _add_scaled("addmv", input, mv(mat, vec), beta, alpha)


def _read_sizes(op: str, *reads) -> None:
    """PyTorch's batched products read ``(array, dim)`` sizes before checking ranks: a tensor
    with too few dims is its IndexError."""
    for arr, d in reads:
        if arr.ndim == 0:
            raise IndexError(f"{op}(): Dimension specified as {d} but tensor has no dimensions")
        if d >= arr.ndim:
            raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                             f"[{-arr.ndim}, {arr.ndim - 1}], but got {d})")


@with_out(casting="no")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``.

    >>> baddbmm(zeros(2, 1, 1), ones(2, 1, 3), ones(2, 3, 1)).shape
    ember.Size([2, 1, 1])
    """
    b1, b2 = batch1._data, batch2._data
    if b1.ndim < 2 or b2.ndim < 3:
        _read_sizes("baddbmm", (b1, 0), (b1, 1), (b2, 2))
    d = input._data.dtype
    if d != b1.dtype and autocast_input_dtype(input) is None:
        raise RuntimeError(f"baddbmm(): Input dtypes must be the same, got: input "
                           f"{_CPP_NAMES[d]}, batch1: {_CPP_NAMES[b1.dtype]}, batch2: "
                           f"{_CPP_NAMES[b2.dtype]}")
    return _add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@with_out(casting="no")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``.

    >>> addbmm(zeros(1, 1), ones(2, 1, 3), ones(2, 3, 1))
    tensor([[6.]])
    """
    b1, b2 = batch1._data, batch2._data
    if b1.ndim < 2 or b2.ndim < 3:
        _read_sizes("addbmm", (b1, 1), (b2, 2))
    if b1.dtype != b2.dtype:
        raise RuntimeError(f"addbmm(): mat1 and mat2 must have the same dtype, but got "
                           f"{scalar_type_name(b1.dtype)} and {scalar_type_name(b2.dtype)}")
    if b1.ndim != 3 or b2.ndim != 3:
        raise RuntimeError(f"addbmm(): batch1 and batch2 must be 3D tensors, got {b1.ndim}D "
                           f"and {b2.ndim}D")
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError(f"addbmm(): batch1 and batch2 must have same number of batches, "
                           f"got {b1.shape[0]} and {b2.shape[0]}")
    return _add_scaled("addbmm", input, _sum(bmm(batch1, batch2), 0), beta, alpha)


# ---------------------------------------------------------------------------- matrix helpers
@defop("trace")
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix; integer inputs give int64.

    >>> trace(tensor([[1, 2], [3, 4]]))
    tensor(5)
    """
    d = input._data
    if d.ndim != 2:
        raise RuntimeError(f"trace(): expected a matrix, but got tensor with dim {d.ndim}")
    _check_not_bool("trace", d)
    out = _int64 if d.dtype.kind in "iu" else d.dtype
    acc = _float32 if out == _float16 else out
    # the diagonal's sum straight into a 0-d result (the array's ``trace`` goes through the
    # same reduction, then needs its scalar wrapped: 0.4 us more at 16x16); on NumPy by the
    # ufunc reduction itself (the array's sum method adds a Python wrapper)
    if d.__class__ is _ndarray:
        return _make(_add_reduce(d.diagonal(), None, acc, np.empty((), out)))
    return _make(d.diagonal().sum(dtype=acc, out=array_module(d).empty((), out)))


@defop("diag", out=True)
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d tensor becomes a square matrix with it on diagonal ``diagonal``; a matrix gives
    a copy of that diagonal.

    >>> diag(tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    d = input._data
    xp = array_module(d)
    if d.ndim == 1:
        return _make(xp.diag(d, diagonal))
    if d.ndim == 2:
        # (the array's own diagonal view, copied once: its copy is C-contiguous)
        return _make(d.diagonal(diagonal).copy())
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {d.ndim}D")


@defop("cross", out=True)
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 when None);
    shapes broadcast.

    >>> cross(tensor([1., 0., 0.]), tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """
    a, b = input._data, other._data
    _check_device("cross", a, b)
    if a.dtype.kind == "b":  # PyTorch's cross has no bool kernel
        raise not_implemented("cross", a.dtype)
    if a.dtype != b.dtype:
        raise RuntimeError(f"cross(): expected scalar type {scalar_type_name(a.dtype)} but found "
                           f"{scalar_type_name(b.dtype)}")
    if a.ndim != b.ndim:
        raise RuntimeError(f"cross(): inputs dimension {a.ndim} must match other dimension "
                           f"{b.ndim}")
    try:
        shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError(f"cross(): shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           "broadcast") from None
    if dim is None:
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("cross(): no dimension of size 3 in input")
    else:
        dim = _wrap_dim(dim, len(shape), "cross")
        if a.shape[dim] != 3 or b.shape[dim] != 3:
            raise RuntimeError(f"cross(): inputs must have size 3 at dimension {dim}, got "
                               f"{a.shape[dim]} and {b.shape[dim]}")
    # a x b = a[1, 2, 0] * b[2, 0, 1] - a[2, 0, 1] * b[1, 2, 0] along dim: four takes and
    # three arithmetic calls (np.cross adds about 20 us of Python at small sizes, and the
    # three components written out one by one cost twelve calls more)
    xp = array_module(a)
    r1, r2 = xp.asarray(_ROLL1), xp.asarray(_ROLL2)
    out = a.take(r1, dim) * b.take(r2, dim)
    out -= a.take(r2, dim) * b.take(r1, dim)
    return _make(out)


_ROLL1, _ROLL2 = np.array([1, 2, 0]), np.array([2, 0, 1])
