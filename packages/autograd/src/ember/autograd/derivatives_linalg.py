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

Complex inputs follow PyTorch's convention (the gradient of a real loss at ``z = x + iy`` is
``dL/dx + i dL/dy``): the formulas that serve both are written with conjugate transposes
(``mH``, which is ``mT`` for real tensors) and declared ``complex="own"``; a real input of an
op with complex outputs (``eig``) gets the real part (the engine casts). The eigenvectors of
``eig`` (and complex ``eigh``) are defined up to a phase each: a loss that depends on it has no
gradient, and backward says so, as PyTorch's ``linalg_eig_backward`` does.
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
    """The Hermitian (real: symmetric) part."""
    return (x + x.mH) * 0.5


def _tri_solve(A, B, *, upper, left=True, unitriangular=False):
    return et.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def _g(g, i):
    """The gradient of output ``i`` of a multi-output op (None when it got none)."""
    if isinstance(g, (tuple, list)):
        return g[i]
    return g if i == 0 else None


# --------------------------------------------------------------------------- det / inv / solve
@vjp("linalg_det", save=(0,), out=True, complex="own")
def _det(c, g):
    A = c.args.A
    return ((g * et.conj(c.out)).unsqueeze(-1).unsqueeze(-1) * et.linalg.inv(A).mH,)


@vjp("linalg_slogdet", save=(0,), out=True, complex="own")
def _slogdet(c, g):
    gs, gl = _g(g, 0), _g(g, 1)
    A = c.args.A
    # a gradient of the sign alone (the engine's zeros for logabsdet) needs no inverse: a
    # real sign is locally constant, a complex one's gradient is zero with it
    no_gl = _absent(gl)
    if no_gl and (not A.is_complex() or _absent(gs)):
        return (None,) if gl is None else (et.zeros_like(A),)
    if not A.is_complex():
        return (gl.unsqueeze(-1).unsqueeze(-1) * et.linalg.inv(A).mH,)
    # log det A = logabsdet + i angle: the phase's gradient enters as the imaginary part
    q = et.zeros_like(c.out[0]) if no_gl else gl.to(c.out[0].dtype)
    if gs is not None:
        q = q + 1j * et.imag(gs * et.conj(c.out[0]))
    return (q.unsqueeze(-1).unsqueeze(-1) * et.linalg.inv(A).mH,)


@vjp("linalg_inv", out=True, complex="own")
def _inv(c, g):
    Ai = c.out
    return (-(Ai.mH @ g @ Ai.mH),)


@vjp("linalg_solve", save=(0,), out=True, complex="own")
def _solve(c, g):
    A, X = c.args.A, c.out
    left = c.args.left
    # PyTorch's rule: B (shaped like X) is a batch of vectors when it is 1-d or has A's
    # shape without its last dim
    vec = left and (X.dim() == 1 or (X.dim() == A.dim() - 1 and
                                     tuple(X.shape) == tuple(A.shape[:-1])))
    gB = et.linalg.solve(A.mH, g, left=left)
    gA = None
    if c.needs[0]:
        if not left:  # X A = B: gA = -X^H gB
            gA = -(X.mH @ gB)
        elif vec:
            gA = -(gB.unsqueeze(-1) @ et.conj(X).unsqueeze(-2))
        else:
            gA = -(gB @ X.mH)
    return gA, (gB if c.needs[1] else None)


def _tri_mask(x, upper: bool, unit: bool):
    if upper:
        return et.triu(x, 1 if unit else 0)
    return et.tril(x, -1 if unit else 0)


@vjp("linalg_solve_triangular", save=(0,), out=True, complex="own")
def _solve_triangular(c, g):
    a = c.args
    A, X = a.A, c.out
    gB = _tri_solve(A.mH, g, upper=not a.upper, left=a.left, unitriangular=a.unitriangular)
    gA = None
    if c.needs[0]:
        gA = -(gB @ X.mH) if a.left else -(X.mH @ gB)
        gA = _tri_mask(gA, a.upper, a.unitriangular)
    return gA, (gB if c.needs[1] else None)


# --------------------------------------------------------------------------- factorizations
@vjp("linalg_cholesky", out=True, complex="own")
def _cholesky(c, g):
    Lo = c.out
    if c.args.upper:
        Lo, g = Lo.mH, g.mH
    phi = Lo.mH @ g
    phi = et.tril(phi) - 0.5 * _diag(et.diagonal(phi, 0, -2, -1))
    # gA = L^{-H} phi L^{-1}, made Hermitian
    Y = _tri_solve(Lo.mH, phi, upper=True)
    gA = _tri_solve(Lo, Y, upper=False, left=False)
    return (_sym(gA),)


def _qr_square_or_tall(Q, R, gQ, gR):
    """gA for A = QR with m >= n (reduced)."""
    M = R @ gR.mH - gQ.mH @ Q
    # copyltu: the Hermitian matrix with M's lower triangle (R's diagonal is real)
    L = et.tril(M, -1)
    M = L + L.mH + _diag(et.real(et.diagonal(M, 0, -2, -1)))
    return _tri_solve(R.mH, gQ + Q @ M, upper=False, left=False)


@vjp("linalg_qr", out=True, complex="own")
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
    gX = _qr_square_or_tall(Q, R1, gQ + Q @ (R2 @ gR2.mH), gR1)  # (Y gR2^H, Y = Q R2)
    gY = Q @ gR2
    return (et.cat([gX, gY], -1),)


_PHASE = ("The eigenvectors in the complex case are specified up to multiplication by "
          "e^{i phi}. The specified loss function depends on this quantity, so it is "
          "ill-defined.")


def _absent(g) -> bool:
    """Whether an output's gradient is absent: None, or zeros the engine filled in for an
    output that got none (a gradient that requires grad, a variable of a double backward such
    as forward AD's placeholder, is kept even at zero)."""
    return g is None or (not g.requires_grad and not bool((g != 0).any()))


def _check_phase(op: str, VhgV) -> None:
    """A loss of complex eigenvectors must not depend on their phases: the imaginary part of
    ``diag(V^H gV)`` is its derivative along ``V -> V e^{i phi}`` (PyTorch's tolerance)."""
    im = et.imag(et.diagonal(VhgV.detach(), 0, -2, -1))
    if not bool(et.allclose(im, et.zeros_like(im), rtol=1e-2, atol=1e-2)):
        raise RuntimeError(f"{op}: {_PHASE}")


@vjp("linalg_eigh", out=True, complex="own")
def _eigh(c, g):
    w, V = c.out
    gw, gV = _g(g, 0), _g(g, 1)
    inner = None
    if gV is not None:
        VhgV = V.mH @ gV
        if V.is_complex():
            _check_phase("linalg_eigh_backward", VhgV)
        E = w.unsqueeze(-2) - w.unsqueeze(-1)  # E[i, j] = w_j - w_i
        E = E + _eye(E)  # off the diagonal only
        inner = VhgV / E
        inner = inner - _diag(et.diagonal(inner, 0, -2, -1))
    if gw is not None:
        inner = _diag(gw) if inner is None else inner + _diag(gw)
    return (_sym(V @ inner @ V.mH),)


@vjp("linalg_eig", out=True, complex="own")
def _eig(c, g):
    """A = V diag(L) V^{-1} with unit-norm columns of V: gA = V^{-H} (diag(gL) + (V^H gV -
    V^H V Re(diag(V^H gV))) / conj(E)) V^H, E[i, j] = L_j - L_i off the diagonal; the term in
    Re(diag(V^H gV)) removes what the normalization of V takes away (PyTorch's
    linalg_eig_backward)."""
    L, V = c.out
    gL, gV = _g(g, 0), _g(g, 1)
    # an output that got no gradient arrives as zeros (the engine fills it in)
    gV = None if _absent(gV) else gV
    VH = V.mH
    if gV is None:
        if gL is None:
            return (None,)
        return (et.linalg.solve(VH, gL.unsqueeze(-1) * VH),)
    VhgV = VH @ gV
    _check_phase("linalg_eig_backward", VhgV)
    d = et.real(et.diagonal(VhgV, 0, -2, -1))
    VhgV = VhgV - VH @ (V * d.unsqueeze(-2))
    Lc = et.conj(L)
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)  # conj(L_j) - conj(L_i)
    inner = VhgV / (E + _eye(E))
    inner = inner - _diag(et.diagonal(inner, 0, -2, -1))
    if gL is not None:
        inner = inner + _diag(gL)
    return (et.linalg.solve(VH, inner @ VH),)


@vjp("linalg_svd", out=True, complex="own")
def _svd(c, g):
    U, S, Vh = c.out
    gU, gS, gVh = _g(g, 0), _g(g, 1), _g(g, 2)
    m, n = c.meta[0][0][-2:]
    k = min(m, n)
    gU = None if _absent(gU) else gU
    gVh = None if _absent(gVh) else gVh
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
    V = Vh.mH
    gV = gVh.mH if gVh is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)  # E[j, k] = s_k^2 - s_j^2
    E = E + _eye(E)
    inner = _diag(gS) if gS is not None else None

    def add(x):
        return x if inner is None else inner + x

    def skew(X):  # X - X^H off the diagonal
        X = X - X.mH
        return X - _diag(et.diagonal(X, 0, -2, -1)) if X.is_complex() else X

    if gU is not None:
        UhgU = U.mH @ gU
        inner = add(skew(UhgU) / E * S.unsqueeze(-2))
    if gV is not None:
        VhgV = V.mH @ gV
        inner = add(S.unsqueeze(-1) * (skew(VhgV) / E))
    if U.is_complex():
        # U e^{i phi}, V e^{i phi} is the same SVD: a loss must not see the phase; the
        # imaginary diagonal of U^H gU carries what it does see of U alone
        im = et.zeros_like(S)
        if gU is not None:
            im = im + et.imag(et.diagonal(UhgU, 0, -2, -1))
        if gV is not None:
            im = im + et.imag(et.diagonal(VhgV, 0, -2, -1))
        _check_svd_phase(im)
        if gU is not None:
            inner = add(_diag(1j * et.imag(et.diagonal(UhgU, 0, -2, -1)) / S))
    gA = U @ inner @ Vh
    if m > k and gU is not None:
        gA = gA + ((gU - U @ (U.mH @ gU)) / S.unsqueeze(-2)) @ Vh
    if n > k and gV is not None:
        gA = gA + U @ ((gV - V @ (V.mH @ gV)) / S.unsqueeze(-2)).mH
    return (gA,)


def _check_svd_phase(im) -> None:
    im = im.detach()
    if not bool(et.allclose(im, et.zeros_like(im), rtol=1e-2, atol=1e-2)):
        raise RuntimeError("linalg_svd_backward: The singular vectors in the complex case are "
                           "specified up to multiplication by e^{i phi}. The specified loss "
                           "function depends on this phase term, making it ill-defined.")


def _mm3(a, b, c):
    """``a @ b @ c`` in the order with fewer multiplications (by the last two dims)."""
    p, q = a.shape[-2:]
    r, s = b.shape[-1], c.shape[-1]
    return (a @ b) @ c if p * r * (q + s) <= q * s * (p + r) else a @ (b @ c)


@vjp("linalg_pinv", save=(0,), out=True, complex="own")
def _pinv(c, g):
    # -P^H g P^H + (I - A P) g^H P P^H + P^H P g^H (I - P A), with the identities multiplied
    # out (X - A P X and Y - Y P A) and each product of three in its cheaper order: no
    # m x m or n x n identity, and the products of a wide or tall A stay thin
    A, P = c.args.A, c.out
    Ph, gh = P.mH, g.mH
    X = _mm3(gh, P, Ph)
    Y = _mm3(Ph, P, gh)
    return ((X - _mm3(A, P, X)) + (Y - _mm3(Y, P, A)) - _mm3(Ph, g, Ph),)


@vjp("linalg_matrix_exp", save=(0,), complex="own")
def _matrix_exp(c, g):
    A = c.args.A
    n = A.shape[-1]
    At = A.mH
    top = et.cat([At, g], -1)
    bottom = et.cat([et.zeros_like(At), At], -1)
    big = et.linalg.matrix_exp(et.cat([top, bottom], -2))
    return (big.narrow(-2, 0, n).narrow(-1, n, n),)


@vjp("linalg_lu_factor_ex", out=True, complex="own")
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
    M = et.tril(Lo.mH @ gL, -1) + et.triu(gU @ U.mH)
    X = _tri_solve(Lo.mH, M, upper=True, unitriangular=True)   # L^{-H} M
    X = _tri_solve(U.mH, X, upper=False, left=False)            # ... U^{-H}
    # A = P L U: the rows of X go back through P (unpacked alone: L and U are above)
    P = et.lu_unpack(LU.detach(), piv, unpack_data=False).P
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
    if p == 2:  # x * (g / norm), 0 where the norm is 0, as PyTorch: one pass over x
        n = c.out if c.out.dtype == x.dtype else c.out.to(dtype=x.dtype)
        zero = n == 0
        return (x * up(et.where(zero, et.zeros_like(g), g / et.where(zero, et.ones_like(n), n))),)
    gx, out = up(g), up(c.out)
    if c.out.dtype != x.dtype:
        out = out.to(dtype=x.dtype)
    if p == 0:
        return (et.zeros_like(x),)
    if p == 1:
        return (gx * et.sgn(x),)
    if math.isinf(p):
        hit = (x.abs() == out).to(x.dtype)
        count = hit.sum(dims, keepdim=True) if x.dim() else hit
        return (gx * et.sgn(x) * hit / count,)
    safe = et.where(out == 0, et.ones_like(out), out)
    val = gx * et.sgn(x) * x.abs() ** (p - 1) / safe ** (p - 1)
    return (et.where(out == 0, et.zeros_like(val), val),)


# --------------------------------------------------------------------------- products
@vjp("kron", save={0: (1,), 1: (0,)}, complex="holomorphic")
def _kron(c, g):
    # kron's result viewed as (a0, b0, a1, b1, ...) (the operands' shapes padded with leading
    # ones to one rank) is the broadcast product of input (a0, 1, a1, 1, ...) and other
    # (1, b0, 1, b1, ...): each operand's gradient is the other's product with g, summed over
    # the other's dims
    a, b = c.args  # a is kept only when b needs a gradient, and vice versa
    sa, sb = tuple(c.meta[0][0]), tuple(c.meta[1][0])
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    gv = g.reshape([s for pair in zip(pa, pb) for s in pair])
    ga = gb = None
    if c.needs[0]:
        p = gv * b.reshape([s for d in pb for s in (1, d)])
        ga = (p.sum(tuple(range(1, 2 * n, 2))) if n else p).reshape(sa)
    if c.needs[1]:
        p = gv * a.reshape([s for d in pa for s in (d, 1)])
        gb = (p.sum(tuple(range(0, 2 * n, 2))) if n else p).reshape(sb)
    return ga, gb
