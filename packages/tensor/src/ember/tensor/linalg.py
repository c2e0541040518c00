"""``ember.tensor.linalg``: PyTorch's ``torch.linalg``.

Every function takes batches of matrices (``(*, m, n)``), float32 or float64 (most also
complex64 / complex128), on the CPU (NumPy/LAPACK) or a CUDA device (CuPy/cuSOLVER; ``eig``
and ``eigvals`` are CPU only), and is differentiable where PyTorch's is (the derivatives live
in ember-autograd's table)::

    >>> import ember.tensor as et
    >>> A = et.tensor([[4., 1.], [1., 3.]])
    >>> et.linalg.solve(A, et.tensor([1., 2.]))
    tensor([0.0909, 0.6364])
"""
from __future__ import annotations

from . import _linalg_ops as _L
from ._complex import conj as _conj
from ._composite import declare_composites as _declare_composites
from ._creation import zeros as _zeros
from ._dtype import int32 as _int32
from ._fpstate import quiet as _quiet
from ._grad_mode import grad_wanted as _grad_wanted
from ._linalg import cross as _cross
from ._linalg import matmul as _matmul
from ._reduction import amax as _amax
from ._reduction import amin as _amin
from ._reduction import sum as _sum
from ._registry import with_out as _with_out
from ._shape import broadcast_tensors as _broadcast_tensors
from ._shape import diagonal as _diagonal
from ._tensor import Tensor as _Tensor

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh",
    "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex",
    "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul",
    "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv",
    "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv",
    "tensorsolve", "vander", "vecdot", "vector_norm",
]

LinAlgError = _L.LinAlgError
_RT = _L.RT


_ret = _L._ret


def _zeros_info(A: _Tensor) -> _Tensor:
    return _zeros(*A.shape[:-2], dtype=_int32, device=A.device)


det = _L.linalg_det
inv = _L.linalg_inv
solve = _L.linalg_solve
solve_triangular = _L.linalg_solve_triangular
cholesky = _L.linalg_cholesky
pinv = _L.linalg_pinv
matrix_exp = _L.linalg_matrix_exp
matrix_rank = _L.linalg_matrix_rank
vector_norm = _L.linalg_vector_norm
matrix_norm = _L.matrix_norm
norm = _L.linalg_norm
multi_dot = _L.multi_dot
matrix_power = _L.matrix_power
householder_product = _with_out(_L.householder_product)
vander = _L.linalg_vander


def slogdet(A: _Tensor, *, out=None):
    """``(sign, logabsdet)`` of ``det(A)``.

    >>> slogdet(tensor([[-2., 0.], [0., 1.]]))
    linalg_slogdet(sign=tensor(-1.), logabsdet=tensor(0.6931))
    """
    return _ret(_RT.slogdet, _L.linalg_slogdet(A), out, "linalg.slogdet")


def qr(A: _Tensor, mode: str = "reduced", *, out=None):
    """``(Q, R)`` with ``A = Q R``; ``mode`` is ``'reduced'``, ``'complete'`` or ``'r'``.

    >>> qr(eye(2)).R
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _ret(_RT.qr, _L.linalg_qr(A, mode), out, "linalg.qr")


def eigh(A: _Tensor, UPLO: str = "L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, read from its ``UPLO``
    triangle.

    >>> eigh(tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    return _ret(_RT.eigh, _L.linalg_eigh(A, UPLO), out, "linalg.eigh")


def eig(A: _Tensor, *, out=None):
    """Eigenvalues and eigenvectors of a general square matrix, complex (float32 ->
    complex64, float64 -> complex128); each eigenvector has norm 1 (LAPACK's ``geev``, as
    PyTorch's). CPU only.

    >>> eig(tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([2.+0.j, 1.+0.j])
    """
    return _ret(_RT.eig, _L.linalg_eig(A), out, "linalg.eig")


@_with_out
def eigvals(A: _Tensor) -> _Tensor:
    """Eigenvalues of a general square matrix, complex (see :func:`eig`). A matrix with an
    infinity or a NaN has NaN eigenvalues, unless a gradient is wanted (then, as
    :func:`eig`, it is refused).

    >>> eigvals(tensor([[0., -1.], [1., 0.]]))
    tensor([0.+1.j, 0.-1.j])
    """
    if _grad_wanted(A):  # the vectors too: eig's gradient needs them
        _L._check_eig("linalg.eigvals", A._data, finite=False)
        return _L.linalg_eig(A)[0]
    return _L._eigvals(A)


@_with_out(casting="no")
def eigvalsh(A: _Tensor, UPLO: str = "L") -> _Tensor:
    """Eigenvalues (ascending) of a symmetric matrix.

    >>> eigvalsh(tensor([[2., 0.], [0., 1.]]))
    tensor([1., 2.])
    """
    if _grad_wanted(A):  # the vectors too: eigh's gradient needs them
        return _L.linalg_eigh(A, UPLO)[0]
    return _L._eigvalsh(A, UPLO)


def svd(A: _Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending.

    >>> svd(eye(2)).S
    tensor([1., 1.])
    """
    return _ret(_RT.svd, _L.linalg_svd(A, full_matrices, driver=driver), out, "linalg.svd")


@_with_out(casting="no")
def svdvals(A: _Tensor, *, driver=None) -> _Tensor:
    """Singular values, descending.

    >>> svdvals(tensor([[3., 0.], [0., 4.]]))
    tensor([4., 3.])
    """
    return _L._svdvals(A, driver)


def inv_ex(A: _Tensor, *, check_errors: bool = False, out=None):
    """``(inverse, info)``: :func:`inv` that reports a singular matrix in ``info`` (the
    index of a zero pivot) instead of raising, unless ``check_errors``.

    >>> inv_ex(eye(2)).info
    tensor(0, dtype=ember.int32)
    """
    info = lu_factor_ex(A).info
    if check_errors and bool((info > 0).any()):
        raise LinAlgError("linalg.inv_ex: The diagonal element is zero, the inversion could "
                          "not be completed because the input matrix is singular.")
    if bool((info > 0).any()):
        import numpy as np

        from ._tensor import Tensor

        xp = _L._xp(A._data)
        with _quiet():
            try:
                r = _L._la(xp).inv(A._data)
            except np.linalg.LinAlgError:
                r = xp.full(A.shape, float("nan"), A._data.dtype)
        result = Tensor._make(xp.ascontiguousarray(r).astype(A._data.dtype))
    else:
        result = _L.linalg_inv(A)
    return _ret(_RT.inv_ex, (result, info), out, "linalg.inv_ex")


def cholesky_ex(A: _Tensor, *, upper: bool = False, check_errors: bool = False, out=None):
    """``(L, info)``: :func:`cholesky` that reports a matrix that is not positive-definite in
    ``info`` (the order of the failing leading minor) instead of raising.

    >>> cholesky_ex(eye(2)).info
    tensor(0, dtype=ember.int32)
    """
    try:
        L = _L.linalg_cholesky(A, upper=upper)
        info = _zeros_info(A)
    except LinAlgError:
        if check_errors:
            raise
        import numpy as np

        from ._tensor import Tensor

        a = A._data
        xp = _L._xp(a)
        n = a.shape[-1]
        flat = a.reshape((-1, n, n))
        Ls = xp.zeros_like(flat)
        infos = np.zeros(flat.shape[0], np.int32)
        for b, m in enumerate(flat):
            for k in range(n, 0, -1):  # the largest leading minor that factors
                try:
                    Ls[b, :k, :k] = _L._la(xp).cholesky(m[:k, :k])
                    break
                except np.linalg.LinAlgError:
                    infos[b] = k
        if upper:
            Ls = Ls.swapaxes(-1, -2)
        L = Tensor._make(xp.ascontiguousarray(Ls).reshape(a.shape))
        info = Tensor._make(xp.asarray(infos.reshape(a.shape[:-2])))
    return _ret(_RT.cholesky_ex, (L, info), out, "linalg.cholesky_ex")


def solve_ex(A: _Tensor, B: _Tensor, *, left: bool = True, check_errors: bool = False,
             out=None):
    """``(result, info)``: :func:`solve` reporting a singular ``A`` in ``info``.

    >>> solve_ex(eye(2), tensor([1., 2.])).result
    tensor([1., 2.])
    """
    info = lu_factor_ex(A).info
    if bool((info > 0).any()):
        if check_errors:
            raise LinAlgError("linalg.solve_ex: The solver failed because the input matrix "
                              "is singular.")

        from ._tensor import Tensor

        with _quiet():
            r = Tensor._make(_L._xp(A._data).full(
                tuple(_L.linalg_solve(_eye(A), B).shape), float("nan"), A._data.dtype))
        return _ret(_RT.solve_ex, (r, info), out, "linalg.solve_ex")
    return _ret(_RT.solve_ex, (_L.linalg_solve(A, B, left=left), info), out,
                "linalg.solve_ex")


def _eye(A):
    return _L._eye_like(A).expand(*A.shape)


def lu_factor_ex(A: _Tensor, *, pivot: bool = True, check_errors: bool = False, out=None):
    """``(LU, pivots, info)``: the LU factorization with partial pivoting (LAPACK's packed
    form, 1-based int32 pivots); ``info`` > 0 marks a singular ``U``.

    >>> lu_factor_ex(eye(2)).pivots
    tensor([1, 2], dtype=ember.int32)
    """
    return _ret(_RT.lu_factor_ex,
                _L.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors), out,
                "linalg.lu_factor_ex")


def lu_factor(A: _Tensor, *, pivot: bool = True, out=None):
    """``(LU, pivots)``: the packed LU factorization (raises for a singular matrix).

    >>> lu_factor(eye(2)).LU
    tensor([[1., 0.],
            [0., 1.]])
    """
    LU, piv, info = _L.linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    if bool((info._data > 0).any()):
        raise LinAlgError("torch.linalg.lu_factor: U is singular (a zero pivot); use "
                          "linalg.lu_factor_ex to get the factorization anyway")
    return _ret(_RT.lu_factor, (LU, piv), out, "linalg.lu_factor")


def lu(A: _Tensor, *, pivot: bool = True, out=None):
    """``(P, L, U)`` with ``A = P L U``.

    >>> lu(eye(2)).U
    tensor([[1., 0.],
            [0., 1.]])
    """
    LU, piv, _ = _L.linalg_lu_factor_ex(A, pivot=pivot)
    P, L, U = _L.lu_unpack(LU, piv)
    return _ret(_RT.lu, (P, L, U), out, "linalg.lu")


@_with_out
def lu_solve(LU: _Tensor, pivots: _Tensor, B: _Tensor, *, left: bool = True,
             adjoint: bool = False) -> _Tensor:
    """Solve ``A X = B`` (``X A = B`` when not ``left``; with ``A^T`` when ``adjoint``) from
    ``lu_factor(A)``.

    >>> lu_solve(*lu_factor(eye(2)), tensor([[1.], [2.]]))
    tensor([[1.],
            [2.]])
    """
    return _L._lu_solve(LU, pivots, B, left=left, adjoint=adjoint)


def ldl_factor_ex(A: _Tensor, *, hermitian: bool = False, check_errors: bool = False,
                  out=None):
    """``(LD, pivots, info)``: LAPACK's ``sytrf`` Bunch-Kaufman factorization of a symmetric
    matrix (not differentiable, as in PyTorch).

    >>> ldl_factor_ex(eye(2)).info
    tensor(0, dtype=ember.int32)
    """
    return _ret(_RT.ldl_factor_ex,
                _L.linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=check_errors),
                out, "linalg.ldl_factor_ex")


def ldl_factor(A: _Tensor, *, hermitian: bool = False, out=None):
    """``(LD, pivots)`` of :func:`ldl_factor_ex`, raising when the factorization fails.

    >>> ldl_factor(eye(2)).pivots
    tensor([1, 2], dtype=ember.int32)
    """
    LD, piv, _ = _L.linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _ret(_RT.ldl_factor, (LD, piv), out, "linalg.ldl_factor")


ldl_solve = _L.linalg_ldl_solve


def lstsq(A: _Tensor, B: _Tensor, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``: ``(solution, residuals, rank,
    singular_values)`` as PyTorch's default CPU driver ``'gelsy'`` gives them (residuals and
    singular values empty; ``'gelsd'``/``'gelss'`` also give singular values, and residuals
    when ``m > n`` and ``A`` has full rank). The solution is differentiable.

    >>> lstsq(tensor([[1.], [1.]]), tensor([[1.], [3.]])).solution
    tensor([[2.0000]])
    """
    op = "torch.linalg.lstsq"
    _L._check_matrix(op, A._data)
    _L._check_float(op, A._data, complex_ok=True)
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss)")
    vec = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vec else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    eps = float(__import__("numpy").finfo(A._data.dtype).eps)
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    X = _L.linalg_pinv(A, rtol=rtol) @ Bm
    rank = _L.linalg_matrix_rank(A, rtol=rtol)
    empty = _zeros(0, dtype=A.dtype, device=A.device)
    sv = residuals = empty
    if driver in ("gelsd", "gelss"):
        sv = _L._svdvals(A)
    if driver not in (None, "gelsy") and m > n and bool((rank == n).all()):
        r = (A @ X - Bm).abs()
        residuals = (r * r).sum(-2)
    if driver == "gels":
        rank = empty.to(dtype=rank.dtype)
    if vec:
        X = X.squeeze(-1)
    return _RT.lstsq(X, residuals, rank, sv)


@_with_out
def cond(A: _Tensor, p=None) -> _Tensor:
    """Condition number of ``A`` in the ``p`` norm (2 by default: ``sigma_max /
    sigma_min``).

    >>> cond(tensor([[2., 0.], [0., 1.]]))
    tensor(2.)
    """
    if p in (None, 2, -2):
        s = _L._svdvals(A)
        return _amax(s, -1) / _amin(s, -1) if p in (None, 2) else _amin(s, -1) / _amax(s, -1)
    _L._check_square("linalg.cond", A._data)
    return _L._matrix_norm(A, p) * _L._matrix_norm(_L.linalg_inv(A), p)


@_with_out(casting="no")
def vecdot(x: _Tensor, y: _Tensor, *, dim: int = -1) -> _Tensor:
    """Dot products of vectors along ``dim`` (shapes broadcast), conjugating ``x``.

    >>> vecdot(tensor([[1., 2.]]), tensor([3., 4.]))
    tensor([11.])
    """
    dt = x._data.dtype  # (checked on the arrays' dtypes: no dtype objects built)
    if dt != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but "
                           f"found x of type {x.dtype} and y of type {y.dtype} instead")
    if dt.kind == "c":
        x = _conj(x)
    return _sum(x * y, dim)


@_with_out(casting="no")
def cross(input: _Tensor, other: _Tensor, *, dim: int = -1) -> _Tensor:
    """Cross product of 3-vectors along ``dim`` (shapes broadcast).

    >>> cross(tensor([1., 0., 0.]), tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """
    if input.dim() != other.dim():
        a, b = _broadcast_tensors(input, other)
    else:
        a, b = input, other
    if a.shape != b.shape:
        a, b = _broadcast_tensors(a, b)
    return _cross(a, b, dim)


def diagonal(A: _Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> _Tensor:
    """The ``offset`` diagonal of each matrix (a view; ``torch.diagonal`` with matrix-batch
    defaults).

    >>> diagonal(eye(2))
    tensor([1., 1.])
    """
    return _diagonal(A, offset, dim1, dim2)


matmul = _matmul


@_with_out
def tensorinv(A: _Tensor, ind: int = 2) -> _Tensor:
    """The inverse of ``A`` seen as a linear map from its first ``ind`` dims to the rest.

    >>> tensorinv(eye(4).reshape(4, 2, 2), ind=1).shape
    ember.Size([2, 2, 4])
    """
    import math

    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {math.prod(cols)} != "
                           f"{math.prod(rows)}")
    n = math.prod(rows)
    return _L.linalg_inv(A.reshape(n, n)).reshape(*cols, *rows)


@_with_out
def tensorsolve(A: _Tensor, B: _Tensor, dims=None) -> _Tensor:
    """``X`` with ``tensordot(A, X, X.dim()) == B``.

    >>> tensorsolve(eye(4).reshape(2, 2, 2, 2), ones(2, 2)).shape
    ember.Size([2, 2])
    """
    import math

    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(*rest, *dims)
    xshape = A.shape[B.dim():]
    n = math.prod(xshape)
    if math.prod(B.shape) != n:
        raise RuntimeError("Expected self to satisfy the requirement "
                           "prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim])")
    return _L.linalg_solve(A.reshape(n, n), B.reshape(n)).reshape(*xshape)


_declare_composites(globals(), prefix="linalg_")  # diagnosed when a call fails
