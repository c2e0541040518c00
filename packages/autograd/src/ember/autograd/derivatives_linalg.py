"""The derivative table's entries for ``ember.tensor.linalg``'s primitives.

Same rules as ``derivatives.py``: formulas read the bound call by name and are written with
ember ops (the linalg primitives among them), so second derivatives come from the same table.

Where PyTorch documents the gradient as ill-defined, ember behaves the same way: ``det`` and
``inv`` of a singular matrix, ``eigh`` with repeated eigenvalues and ``svd`` with repeated (or,
for the singular vectors of a non-square matrix, zero) singular values give infinite or NaN
gradients; ``svd(full_matrices=True)`` of a non-square matrix and ``qr(mode='complete')`` with
``m > n`` refuse a gradient that reaches ``U``/``Vh`` (``Q``); the sign of ``slogdet`` and the
pivots of ``lu_factor`` have none. Gradients of ``eigh`` and ``cholesky`` assume a symmetric
perturbation (they are returned symmetrized, as PyTorch does).
"""
from __future__ import annotations

import math

import ember.tensor as et
from ember.tensor import extension as _ext

from .derivatives import vjp

__all__: list[str] = []


def _args(name: str, *params: str) -> tuple[int, ...]:
    op = et.OPS[name]
    return tuple(op.index(p) for p in params)


def _eye(x, n=None):
    n = x.shape[-1] if n is None else n
    return et.eye(n, dtype=x.dtype, device=x.device)


def _diag(v):
    return v.unsqueeze(-1) * _eye(v, v.shape[-1])


def _sym(x):
    return (x + x.mT) * 0.5


def _tri_solve(A, B, *, upper, left=True, unitriangular=False):
    return et.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def _g(g, i):
    """The gradient of output ``i`` of a multi-output op (None when it got none)."""
    if isinstance(g, (tuple, list)):
        return g[i]
    return g if i == 0 else None


# --------------------------------------------------------------------------- det / inv / solve
@vjp("linalg_det", save=(0,), out=True)
def _det(c, g):
    A = c.args.A
    return ((g * c.out).unsqueeze(-1).unsqueeze(-1) * et.linalg.inv(A).mT,)


@vjp("linalg_slogdet", save=(0,))
def _slogdet(c, g):
    gl = _g(g, 1)
    if gl is None:
        return (None,)
    return (gl.unsqueeze(-1).unsqueeze(-1) * et.linalg.inv(c.args.A).mT,)


@vjp("linalg_inv", out=True)
def _inv(c, g):
    Ai = c.out
    return (-(Ai.mT @ g @ Ai.mT),)


@vjp("linalg_solve", save=(0,), out=True)
def _solve(c, g):
    A, X = c.args.A, c.out
    left = c.args.left
    # PyTorch's rule: B (shaped like X) is a batch of vectors when it is 1-d or has A's
    # shape without its last dim
    vec = left and (X.dim() == 1 or (X.dim() == A.dim() - 1 and
                                     tuple(X.shape) == tuple(A.shape[:-1])))
    gB = et.linalg.solve(A.mT, g, left=left)
    gA = None
    if c.needs[0]:
        if not left:  # X A = B: gA = -X^T gB
            gA = -(X.mT @ gB)
        elif vec:
            gA = -(gB.unsqueeze(-1) @ X.unsqueeze(-2))
        else:
            gA = -(gB @ X.mT)
    return gA, (gB if c.needs[1] else None)


def _tri_mask(x, upper: bool, unit: bool):
    if upper:
        return et.triu(x, 1 if unit else 0)
    return et.tril(x, -1 if unit else 0)


@vjp("linalg_solve_triangular", save=(0,), out=True)
def _solve_triangular(c, g):
    a = c.args
    A, X = a.A, c.out
    gB = _tri_solve(A.mT, g, upper=not a.upper, left=a.left, unitriangular=a.unitriangular)
    gA = None
    if c.needs[0]:
        gA = -(gB @ X.mT) if a.left else -(X.mT @ gB)
        gA = _tri_mask(gA, a.upper, a.unitriangular)
    return gA, (gB if c.needs[1] else None)


# --------------------------------------------------------------------------- factorizations
@vjp("linalg_cholesky", out=True)
def _cholesky(c, g):
    Lo = c.out
    if c.args.upper:
        Lo, g = Lo.mT, g.mT
    phi = Lo.mT @ g
    phi = et.tril(phi) - 0.5 * _diag(et.diagonal(phi, 0, -2, -1))
    # gA = L^{-T} phi L^{-1}, symmetrized
    Y = _tri_solve(Lo.mT, phi, upper=True)
    gA = _tri_solve(Lo, Y, upper=False, left=False)
    return (_sym(gA),)


def _qr_square_or_tall(Q, R, gQ, gR):
    """gA for A = QR with m >= n (reduced)."""
    M = R @ gR.mT - gQ.mT @ Q
    # copyltu: the symmetric matrix with M's lower triangle
    M = et.tril(M, -1) + et.tril(M, -1).mT + _diag(et.diagonal(M, 0, -2, -1))
    return _tri_solve(R.mT, gQ + Q @ M, upper=False, left=False)


@vjp("linalg_qr", out=True)
def _qr(c, g):
    mode = c.args.mode
    Q, R = c.out
    gQ, gR = _g(g, 0), _g(g, 1)
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    m, n = c.meta[0][0][-2:]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    if gQ is None:
        gQ = et.zeros_like(Q)
    if gR is None:
        gR = et.zeros_like(R)
    if m >= n:
        return (_qr_square_or_tall(Q, R, gQ, gR),)
    # m < n: A = Q [X | Y] with X = Q R1 square; Y = Q R2
    R1, R2 = R.narrow(-1, 0, m), R.narrow(-1, m, n - m)
    gR1, gR2 = gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
    Y = Q @ R2
    gX = _qr_square_or_tall(Q, R1, gQ + Y @ gR2.mT, gR1)
    gY = Q @ gR2
    return (et.cat([gX, gY], -1),)


@vjp("linalg_eigh", out=True)
def _eigh(c, g):
    w, V = c.out
    gw, gV = _g(g, 0), _g(g, 1)
    inner = None
    if gV is not None:
        E = w.unsqueeze(-2) - w.unsqueeze(-1)  # E[i, j] = w_j - w_i
        E = E + _eye(E)  # off the diagonal only
        inner = (V.mT @ gV) / E
        inner = inner - _diag(et.diagonal(inner, 0, -2, -1))
    if gw is not None:
        inner = _diag(gw) if inner is None else inner + _diag(gw)
    return (_sym(V @ inner @ V.mT),)


@vjp("linalg_svd", out=True)
def _svd(c, g):
    U, S, Vh = c.out
    gU, gS, gVh = _g(g, 0), _g(g, 1), _g(g, 2)
    m, n = c.meta[0][0][-2:]
    k = min(m, n)
    # outputs that got no gradient arrive as zeros (the engine fills them in)
    gU = None if gU is not None and not bool((gU != 0).any()) else gU
    gVh = None if gVh is not None and not bool((gVh != 0).any()) else gVh
    if c.args.full_matrices and m != n and (gU is not None or gVh is not None):
        raise RuntimeError("linalg_svd_backward: Setting full_matrices=True in forward is not "
                           "supported in backward when the gradient reaches U or Vh of a "
                           "non-square matrix. Use full_matrices=False.")
    if c.args.full_matrices:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = gU.narrow(-1, 0, k) if gU is not None else None
        gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
    if gU is None and gVh is None:
        return ((U * gS.unsqueeze(-2)) @ Vh,) if gS is not None else (None,)
    V = Vh.mT
    gV = gVh.mT if gVh is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)  # E[j, k] = s_k^2 - s_j^2
    E = E + _eye(E)
    inner = _diag(gS) if gS is not None else None

    def add(x):
        return x if inner is None else inner + x

    if gU is not None:
        UtgU = U.mT @ gU
        inner = add((UtgU - UtgU.mT) / E * S.unsqueeze(-2))
    if gV is not None:
        VtgV = V.mT @ gV
        inner = add(S.unsqueeze(-1) * ((VtgV - VtgV.mT) / E))
    gA = U @ inner @ Vh
    if m > k and gU is not None:
        gA = gA + ((gU - U @ (U.mT @ gU)) / S.unsqueeze(-2)) @ Vh
    if n > k and gV is not None:
        gA = gA + U @ ((gV - V @ (V.mT @ gV)) / S.unsqueeze(-2)).mT
    return (gA,)


@vjp("linalg_pinv", save=(0,), out=True)
def _pinv(c, g):
    A, P = c.args.A, c.out
    m, n = A.shape[-2:]
    Im, In = _eye(A, m), _eye(A, n)
    gA = -(P.mT @ g @ P.mT) + (Im - A @ P) @ g.mT @ (P @ P.mT) + \
        (P.mT @ P) @ g.mT @ (In - P @ A)
    return (gA,)


@vjp("linalg_matrix_exp", save=(0,))
def _matrix_exp(c, g):
    A = c.args.A
    n = A.shape[-1]
    At = A.mT
    top = et.cat([At, g], -1)
    bottom = et.cat([et.zeros_like(At), At], -1)
    big = et.linalg.matrix_exp(et.cat([top, bottom], -2))
    return (big.narrow(-2, 0, n).narrow(-1, n, n),)


@vjp("linalg_lu_factor_ex", out=True)
def _lu_factor_ex(c, g):
    LU, piv = c.out[0], c.out[1]
    gLU = _g(g, 0)
    m, n = LU.shape[-2:]
    if m != n:
        raise RuntimeError("linalg.lu_factor: the derivative of the LU factorization of a "
                           "non-square matrix is not implemented in ember")
    Lo = et.tril(LU, -1) + _eye(LU)
    U = et.triu(LU)
    gL, gU = et.tril(gLU, -1), et.triu(gLU)
    M = et.tril(Lo.mT @ gL, -1) + et.triu(gU @ U.mT)
    X = _tri_solve(Lo.mT, M, upper=True, unitriangular=True)   # L^{-T} M
    X = _tri_solve(U.mT, X, upper=False, left=False)            # ... U^{-T}
    P = et.lu_unpack(LU.detach(), piv).P  # A = P L U: the rows of X go back through P
    return (P.to(X.dtype) @ X,)


# --------------------------------------------------------------------------- norms
@vjp("linalg_vector_norm", save=(0,), out=True, complex="own")
def _vector_norm(c, g):
    a = c.args
    x = a.x
    p = a.ord
    dims = (_ext.canonical_dims(a.dim, x.dim(), "backward") if a.dim is not None
            else tuple(range(x.dim())))
    keep = bool(a.keepdim)

    def up(t):
        if t.dim() == 0:
            return t.expand(*x.shape)
        if not keep:
            for d in sorted(dims):
                t = t.unsqueeze(d)
        return t.expand(*x.shape)

    if x.dim() == 0:
        up = lambda t: t  # noqa: E731
    gx, out = up(g), up(c.out)
    if c.out.dtype != x.dtype:
        out = out.to(dtype=x.dtype)
    if p == 0:
        return (et.zeros_like(x),)
    if p == 1:
        return (gx * et.sgn(x),)
    if p == 2:
        safe = et.where(out == 0, et.ones_like(out), out)
        return (et.where(out == 0, et.zeros_like(gx), gx * x / safe),)
    if math.isinf(p):
        hit = (x.abs() == out).to(x.dtype)
        count = hit.sum(dims, keepdim=True) if x.dim() else hit
        return (gx * et.sgn(x) * hit / count,)
    safe = et.where(out == 0, et.ones_like(out), out)
    val = gx * et.sgn(x) * x.abs() ** (p - 1) / safe ** (p - 1)
    return (et.where(out == 0, et.zeros_like(val), val),)
