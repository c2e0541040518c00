"""Op-table entries for ``ember.tensor.linalg``, ``ember.tensor.special``, ``ember.tensor.fft``
and the added ``torch.*`` names (``EXTRA_ENTRIES``, appended to ``op_table.OP_TABLE``).

References are NumPy's (``numpy.linalg``) and SciPy's (``scipy.special``, ``scipy.linalg``),
imported inside the reference functions. Decompositions whose outputs are defined only up to
a sign (``eigh``, ``svd``) or that read one triangle (``cholesky``, ``eigh``) get a second,
gradient entry (``*_grad``) on a function of them that is well defined for any input
perturbation, as PyTorch's OpInfos do.
"""
from __future__ import annotations

import math

import numpy as np

import ember.tensor as et
from ember.tensor import linalg as LA
from ember.tensor import special as SP

from ._harness import (
    COMPLEX,
    FLOAT,
    FLOAT_H,
    INT,
    OpEntry,
    Sample,
    _nz,
    _rand,
    binary_samples,
    np_dtype,
)

__all__ = ["EXTRA_ENTRIES", "EXTRA_NON_TABLE_OPS"]

E = OpEntry


def _S(*args, grad=None, note="", **kwargs) -> Sample:
    return Sample(tuple(args), kwargs, grad, note)


def _mat(shape, d, rng, shift=None):
    """A well-conditioned (batch of) matrix: random plus ``shift`` times the identity."""
    a = _rand(shape, d, rng, -1.0, 1.0)
    if shape[-1] == shape[-2]:
        a = a + (shape[-1] if shift is None else shift) * np.eye(shape[-1], dtype=a.dtype)
    return a.astype(d)


def _spd(shape, d, rng):
    a = _rand(shape, d, rng, -1.0, 1.0)
    return (a @ a.swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])).astype(d)


def _sym_sep(shape, d, rng):
    """Symmetric with well separated eigenvalues (1, 3, 5, ...)."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    w = np.arange(n) * 2.0 + 1.0
    return ((q * w[..., None, :]) @ q.swapaxes(-1, -2)).astype(d)


def _sep(shape, d, rng):
    """A matrix with well separated singular values (1, 2, 3, ...)."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, k)))
    v, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, k)))
    s = np.arange(k, 0, -1) + 1.0
    return ((u * s[..., None, :]) @ v.swapaxes(-1, -2)).astype(d)


def _dtypes(*names):
    return lambda s, d: tuple(d if n == "same" else n for n in names)


# --------------------------------------------------------------------------- references
def _np_solve(a, b, left=True):
    if not left:
        return np.linalg.solve(a.swapaxes(-1, -2), b.swapaxes(-1, -2)).swapaxes(-1, -2)
    if b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]):
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _np_solve_tri(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1
    return _np_solve(t, b, left)


def _np_lu_factor(a, pivot=True):
    from scipy.linalg import lu_factor

    flat = a.reshape((-1,) + a.shape[-2:])
    lus, pivs = [], []
    for m in flat:
        lu, piv = lu_factor(m)
        lus.append(lu)
        pivs.append(piv + 1)
    k = min(a.shape[-2:])
    return (np.stack(lus).reshape(a.shape), np.stack(pivs).astype(np.int32)
            .reshape(a.shape[:-2] + (k,)), np.zeros(a.shape[:-2], np.int32))


def _np_vector_norm(x, ord=2, dim=None, keepdim=False):
    axes = tuple(range(x.ndim)) if dim is None else (dim if isinstance(dim, tuple) else (dim,))
    a = np.abs(x)
    if ord == math.inf:
        return a.max(axis=axes, keepdims=keepdim)
    if ord == -math.inf:
        return a.min(axis=axes, keepdims=keepdim)
    if ord == 0:
        return (a != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
    return (a ** ord).sum(axis=axes, keepdims=keepdim) ** (1 / ord)


def _np_matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False):
    return np.linalg.norm(x, ord=ord, axis=dim, keepdims=keepdim)


def _np_expm(a):
    from scipy.linalg import expm

    return expm(a)


def _np_geqrf(a):
    h, tau = np.linalg.qr(a, mode="raw")
    return h.swapaxes(-1, -2), tau


def _np_ldl(a):
    from scipy.linalg import lapack

    f = lapack.dsytrf if a.dtype == np.float64 else lapack.ssytrf
    ld, piv, info = f(a, lower=1)
    return np.tril(ld), piv.astype(np.int32), np.asarray(info, np.int32)


def _ldl_samples(d, rng):
    out = []
    for n in (3, 4):
        a = _sym_sep((n, n), d, rng) - 2 * np.eye(n, dtype=d)  # indefinite
        ld, piv, _ = _np_ldl(a)
        out.append(_S(ld, piv, _rand((n, 2), d, rng), note=" ldl"))
    return out


def _np_ldl_solve(ld, piv, b):
    from scipy.linalg import lapack

    f = lapack.dsytrs if ld.dtype == np.float64 else lapack.ssytrs
    return f(ld, piv, b, lower=1)[0]


def _sc(name):
    def ref(*a, **k):
        import scipy.special as sp

        with np.errstate(all="ignore"):
            return np.asarray(getattr(sp, name)(*a, **k))
    return ref


def _unary_gen(low, high, shapes=((), (5,), (2, 3))):
    def gen(d, rng):
        return [_S(_rand(s, d, rng, low, high)) for s in shapes]
    return gen


def _float_out(s, d):
    return d if d.startswith("float") else "float32"


# --------------------------------------------------------------------------- linalg
def _sq_samples(*shapes, kw=None):
    def gen(d, rng):
        return [_S(_mat(s, d, rng), **(kw or {})) for s in shapes]
    return gen


_LINALG = [
    E("linalg_det", LA.det, lambda a: np.asarray(np.linalg.det(a)),
      _sq_samples((3, 3), (2, 3, 3), (1, 1)), method=None),
    E("det", et.det, lambda a: np.asarray(np.linalg.det(a)), _sq_samples((3, 3)),
      ops=("linalg_det",)),
    E("linalg_slogdet", LA.slogdet, lambda a: tuple(np.linalg.slogdet(a)),
      lambda d, rng: [_S(_mat((3, 3), d, rng)), _S(-_mat((2, 3, 3), d, rng))], method=None),
    E("logdet", et.logdet, lambda a: np.asarray(np.linalg.slogdet(a)[1]),
      _sq_samples((3, 3)), ops=("linalg_slogdet",)),
    E("linalg_inv", LA.inv, np.linalg.inv, _sq_samples((3, 3), (2, 3, 3)), method=None),
    E("inverse", et.inverse, np.linalg.inv, _sq_samples((3, 3)), ops=("linalg_inv",)),
    E("linalg_solve", LA.solve, _np_solve,
      lambda d, rng: [_S(_mat((3, 3), d, rng), _rand((3, 2), d, rng)),
                      _S(_mat((2, 3, 3), d, rng), _rand((3,), d, rng)),
                      _S(_mat((2, 3, 3), d, rng), _rand((2, 3), d, rng)),
                      _S(_mat((3, 3), d, rng), _rand((2, 3), d, rng), left=False)],
      method=None, operands=(0, 1)),
    E("linalg_solve_triangular", LA.solve_triangular, _np_solve_tri,
      lambda d, rng: [_S(_mat((3, 3), d, rng), _rand((3, 2), d, rng), upper=True),
                      _S(_mat((2, 3, 3), d, rng), _rand((3, 2), d, rng), upper=False),
                      _S(_mat((3, 3), d, rng), _rand((2, 3), d, rng), upper=True, left=False,
                         unitriangular=True)],
      method=None, operands=(0, 1)),
    E("linalg_cholesky", LA.cholesky, np.linalg.cholesky,
      lambda d, rng: [_S(_spd((3, 3), d, rng)), _S(_spd((2, 4, 4), d, rng))], method=None,
      differentiable=False),
    E("linalg_cholesky_grad", lambda a, upper=False: LA.cholesky(
        a @ a.mT + 3 * et.eye(a.shape[-1], dtype=a.dtype, device=a.device), upper=upper),
      lambda a, upper=False: (lambda r: r.swapaxes(-1, -2) if upper else r)(
          np.linalg.cholesky(a @ a.swapaxes(-1, -2) + 3 * np.eye(a.shape[-1]))),
      lambda d, rng: [_S(_rand((3, 3), d, rng)), _S(_rand((2, 3, 3), d, rng), upper=True)],
      method=None, ops=("linalg_cholesky",)),
    E("linalg_qr", LA.qr, lambda a, mode="reduced": tuple(np.linalg.qr(a, mode=mode)),
      lambda d, rng: [_S(_rand((4, 3), d, rng)), _S(_rand((3, 5), d, rng)),
                      _S(_mat((2, 3, 3), d, rng)), _S(_rand((3, 3), d, rng), "complete")],
      method=None),
    E("linalg_eigh", LA.eigh, lambda a, UPLO="L": tuple(np.linalg.eigh(a, UPLO)),
      lambda d, rng: [_S(_sym_sep((3, 3), d, rng)), _S(_sym_sep((2, 4, 4), d, rng), "U")],
      method=None, differentiable=False, gauge={1: "col"}),
    E("linalg_eigh_grad",
      lambda a: (lambda r: (r[0], r[1] * r[1][..., :1, :]))(LA.eigh(a + a.mT)),
      lambda a: (lambda r: (r[0], r[1] * r[1][..., :1, :]))(
          np.linalg.eigh(a + a.swapaxes(-1, -2))),
      lambda d, rng: [_S(_sym_sep((3, 3), d, rng) / 2), _S(_sym_sep((2, 3, 3), d, rng) / 2)],
      method=None, ops=("linalg_eigh",)),
    E("linalg_eigvalsh", LA.eigvalsh, lambda a: np.linalg.eigvalsh(a),
      lambda d, rng: [_S(_sym_sep((3, 3), d, rng))], method=None, differentiable=False,
      ops=("linalg_eigh",)),
    E("linalg_svd", LA.svd, lambda a, full_matrices=True: tuple(np.linalg.svd(a,
                                                                             full_matrices)),
      lambda d, rng: [_S(_sep((4, 3), d, rng)), _S(_sep((2, 3, 5), d, rng), False)],
      method=None, differentiable=False, gauge={0: "col", 2: "row"}),
    E("linalg_svd_grad",
      lambda a: (lambda r: (r[1], r[0] @ r[2]))(LA.svd(a, full_matrices=False)),
      lambda a: (lambda r: (r[1], r[0] @ r[2]))(np.linalg.svd(a, full_matrices=False)),
      lambda d, rng: [_S(_sep((4, 3), d, rng)), _S(_sep((2, 3, 5), d, rng)),
                      _S(_sep((3, 3), d, rng))],
      method=None, ops=("linalg_svd",)),
    E("linalg_svdvals", LA.svdvals, lambda a: np.linalg.svd(a, compute_uv=False),
      lambda d, rng: [_S(_sep((4, 3), d, rng)), _S(_sep((2, 3, 3), d, rng))], method=None,
      ops=("linalg_svd",)),
    E("linalg_pinv", LA.pinv, np.linalg.pinv,
      lambda d, rng: [_S(_sep((4, 3), d, rng)), _S(_sep((2, 3, 5), d, rng))], method=None),
    E("linalg_matrix_rank", LA.matrix_rank, lambda a: np.asarray(np.linalg.matrix_rank(a)),
      lambda d, rng: [_S(_sep((4, 3), d, rng)),
                      _S((_rand((4, 1), d, rng) @ _rand((1, 3), d, rng)).astype(d))],
      method=None, differentiable=False, out_dtype="int64"),
    E("linalg_matrix_exp", LA.matrix_exp, _np_expm,
      lambda d, rng: [_S(_rand((3, 3), d, rng, -1, 1)), _S(_rand((2, 2, 2), d, rng, -1, 1))],
      method=None),
    E("matrix_exp", et.matrix_exp, _np_expm, lambda d, rng: [_S(_rand((3, 3), d, rng, -1, 1))],
      ops=("linalg_matrix_exp",)),
    E("linalg_lu_factor_ex", LA.lu_factor_ex, _np_lu_factor,
      lambda d, rng: [_S(_mat((3, 3), d, rng, 0.5)), _S(_mat((2, 4, 4), d, rng, 0.5))],
      method=None, out_dtype=_dtypes("same", "int32", "int32")),
    E("linalg_lu_factor", lambda a: LA.lu_factor(a).LU, lambda a: _np_lu_factor(a)[0],
      lambda d, rng: [_S(_rand((3, 3), d, rng)), _S(_rand((2, 3, 3), d, rng))],
      method=None, ops=("linalg_lu_factor_ex",)),
    E("linalg_lu_solve", lambda a, b: LA.lu_solve(*LA.lu_factor(a), b), _np_solve,
      lambda d, rng: [_S(_mat((3, 3), d, rng, 0.5), _rand((3, 2), d, rng)),
                      _S(_mat((2, 3, 3), d, rng, 0.5), _rand((3, 1), d, rng)),
                      _S(_mat((2, 3, 3), d, rng, 0.5), _rand((2, 3, 2), d, rng)),
                      _S(_mat((3, 3), d, rng, 0.5), _rand((2, 3, 2), d, rng))],
      method=None, operands=(0, 1), ops=("linalg_lu_factor_ex", "linalg_solve_triangular")),
    E("linalg_vector_norm", LA.vector_norm, _np_vector_norm,
      lambda d, rng: [_S(_rand((3, 4), d, rng, 0.2, 2) * np.sign(_rand((3, 4), d, rng))),
                      _S(_rand((3, 4), d, rng), 1, 1), _S(_rand((2, 3, 4), d, rng), 3, (0, 2)),
                      _S(_rand((3, 4), d, rng, distinct=True), math.inf, 1, True),
                      _S(_rand((3, 4), d, rng, distinct=True), -math.inf),
                      _S(_rand((5,), d, rng, 0.5, 2), 0.5)],
      method=None),
    E("linalg_matrix_norm", LA.matrix_norm, _np_matrix_norm,
      lambda d, rng: [_S(_sep((3, 4), d, rng)), _S(_sep((2, 3, 4), d, rng), "nuc"),
                      _S(_sep((3, 4), d, rng), 2), _S(_sep((3, 3), d, rng), -2),
                      _S(_rand((3, 4), d, rng, distinct=True), 1),
                      _S(_rand((3, 4), d, rng, distinct=True), -math.inf, keepdim=True)],
      method=None, ops=("linalg_vector_norm", "linalg_svd")),
    E("linalg_ldl_factor_ex", LA.ldl_factor_ex, _np_ldl,
      lambda d, rng: [_S(_sym_sep((3, 3), d, rng) - 2 * np.eye(3, dtype=d))],
      method=None, differentiable=False, out_dtype=_dtypes("same", "int32", "int32")),
    E("linalg_ldl_solve", LA.ldl_solve, _np_ldl_solve, _ldl_samples, method=None,
      differentiable=False),
    E("geqrf", et.geqrf, _np_geqrf, lambda d, rng: [_S(_rand((4, 3), d, rng))],
      differentiable=False),
    E("linalg_householder_product", LA.householder_product,
      lambda a, t: _np_house(a, t),
      lambda d, rng: [_S(*_np_geqrf(_rand((4, 3), d, rng)))], method=None, operands=(0, 1),
      ops=("matmul",)),
    E("linalg_multi_dot", LA.multi_dot, lambda ts: np.linalg.multi_dot(ts),
      lambda d, rng: [_S([_rand((3,), d, rng), _rand((3, 4), d, rng), _rand((4, 2), d, rng)])],
      method=None, ops=("matmul",)),
    E("linalg_lstsq", lambda a, b: LA.lstsq(a, b).solution,
      lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
      lambda d, rng: [_S(_sep((5, 3), d, rng), _rand((5, 2), d, rng))], method=None,
      operands=(0, 1), ops=("linalg_pinv",)),
    E("linalg_cond", LA.cond, lambda a, p=None: np.asarray(np.linalg.cond(a, p)),
      lambda d, rng: [_S(_sep((3, 3), d, rng)), _S(_mat((3, 3), d, rng), 1)], method=None,
      ops=("linalg_svd",)),
    E("linalg_matrix_power", LA.matrix_power, np.linalg.matrix_power,
      lambda d, rng: [_S(_mat((3, 3), d, rng), 3), _S(_mat((2, 3, 3), d, rng), -2),
                      _S(_mat((3, 3), d, rng), 0)], method=None, ops=("matmul",)),
    E("linalg_vecdot", LA.vecdot, lambda x, y, dim=-1: (x * y).sum(dim),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3,), d, rng))], method=None,
      operands=(0, 1), ops=("mul",)),
    E("kron", et.kron, np.kron,
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3, 2), d, rng)),
                      _S(_rand((2, 1, 3), d, rng), _rand((4,), d, rng)),
                      _S(_rand((), d, rng), _rand((2, 2), d, rng))], operands=(0, 1),
      ops=("kron",)),
    E("cdist", et.cdist, lambda a, b, p=2.0: np.linalg.norm(a[..., :, None, :] -
                                                             b[..., None, :, :], ord=p, axis=-1),
      lambda d, rng: [_S(_rand((3, 4), d, rng, distinct=True), _rand((2, 4), d, rng) + 5),
                      _S(_rand((2, 3, 4), d, rng), _rand((2, 2, 4), d, rng) + 5, 1.0)],
      method=None, operands=(0, 1), ops=("linalg_vector_norm",)),
    E("block_diag", et.block_diag, lambda *ts: _np_block_diag(ts),
      lambda d, rng: [_S(_rand((2, 2), d, rng), _rand((1, 3), d, rng))], method=None,
      operands=(0, 1), ops=("cat",)),
]


def _np_house(a, tau):
    m, n = a.shape
    q = np.eye(m)
    for i in range(tau.shape[-1]):
        v = np.zeros(m)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :n].astype(a.dtype)


def _np_block_diag(ts):
    from scipy.linalg import block_diag

    return block_diag(*ts)


# --------------------------------------------------------------------------- special
_SPECIAL_UNARY = [
    # (entry name, function, scipy reference, low, high, differentiable)
    ("lgamma", et.lgamma, "gammaln", 0.5, 4.0, True, "lgamma_"),
    ("digamma", et.digamma, "psi", 0.5, 4.0, True, "digamma_"),
    ("i0", et.i0, "i0", -2.0, 2.0, True, "i0_"),
    ("sinc", et.sinc, "sinc", -2.0, 2.0, True, "sinc_"),
    ("special_erfcx", SP.erfcx, "erfcx", -1.0, 2.0, True, None),
    ("special_i0e", SP.i0e, "i0e", 0.2, 2.0, True, None),
    ("special_i1", SP.i1, "i1", -2.0, 2.0, True, None),
    ("special_i1e", SP.i1e, "i1e", 0.2, 2.0, True, None),
    ("special_ndtr", SP.ndtr, "ndtr", -2.0, 2.0, True, None),
    ("special_ndtri", SP.ndtri, "ndtri", 0.1, 0.9, True, None),
    ("special_log_ndtr", SP.log_ndtr, "log_ndtr", -2.0, 2.0, True, None),
    ("special_entr", SP.entr, "entr", 0.2, 2.0, True, None),
    ("special_bessel_j0", SP.bessel_j0, "j0", -3.0, 3.0, True, None),
    ("special_bessel_j1", SP.bessel_j1, "j1", -3.0, 3.0, True, None),
    ("special_bessel_y0", SP.bessel_y0, "y0", 0.5, 3.0, True, None),
    ("special_bessel_y1", SP.bessel_y1, "y1", 0.5, 3.0, True, None),
    ("special_modified_bessel_i0", SP.modified_bessel_i0, "i0", -2.0, 2.0, True, None),
    ("special_modified_bessel_i1", SP.modified_bessel_i1, "i1", -2.0, 2.0, True, None),
    ("special_modified_bessel_k0", SP.modified_bessel_k0, "k0", 0.5, 3.0, True, None),
    ("special_modified_bessel_k1", SP.modified_bessel_k1, "k1", 0.5, 3.0, True, None),
    ("special_scaled_modified_bessel_k0", SP.scaled_modified_bessel_k0, "k0e", 0.5, 3.0, True,
     None),
    ("special_scaled_modified_bessel_k1", SP.scaled_modified_bessel_k1, "k1e", 0.5, 3.0, True,
     None),
    ("special_spherical_bessel_j0", SP.spherical_bessel_j0, None, -3.0, 3.0, True, None),
    ("special_airy_ai", SP.airy_ai, None, -2.0, 2.0, False, None),
]


def _sj0_ref(x):
    return np.asarray(np.sinc(x / np.pi))


def _airy_ref(x):
    import scipy.special as sp

    return np.asarray(sp.airy(x)[0])


_SPECIAL = []
for _n, _f, _ref, _lo, _hi, _diff, _inpl in _SPECIAL_UNARY:
    ref = _sc(_ref) if _ref else (_sj0_ref if "spherical" in _n else _airy_ref)
    _SPECIAL.append(E(_n, _f, ref, _unary_gen(_lo, _hi), dtypes=FLOAT,
                      method=_n if _n in ("lgamma", "digamma", "i0", "sinc") else None,
                      differentiable=_diff, inplace=_inpl,
                      ops=(_n,) + ((_inpl,) if _inpl else ())))


def _poly_ref(kind):
    def ref(x, n):
        import scipy.special as sp

        x = np.asarray(x, np.float64)
        f = {"chebyshev_polynomial_t": sp.eval_chebyt, "chebyshev_polynomial_u": sp.eval_chebyu,
             "hermite_polynomial_h": sp.eval_hermite, "hermite_polynomial_he":
             sp.eval_hermitenorm, "laguerre_polynomial_l": sp.eval_laguerre,
             "legendre_polynomial_p": sp.eval_legendre}
        if kind in f:
            return f[kind](n, x)
        if kind.startswith("shifted_"):
            return _poly_ref(kind[len("shifted_"):])(2 * x - 1, n)
        # V and W Chebyshev polynomials from their recurrences' closed forms via U
        u = sp.eval_chebyu
        if kind == "chebyshev_polynomial_v":
            return u(n, x) - (u(n - 1, x) if n else 0)
        return u(n, x) + (u(n - 1, x) if n else 0)
    return ref


for _k in ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]:
    _SPECIAL.append(E(
        "special_" + _k, getattr(SP, _k),
        (lambda r: lambda x, n: np.asarray(r(x, n)).astype(x.dtype))(_poly_ref(_k)),
        lambda d, rng: [_S(_rand((5,), d, rng, -1, 1), n) for n in (0, 1, 3, 6)],
        method=None, differentiable=False))


def _pos(low, high):
    return lambda d, rng, s=(2, 3): _rand(s, d, rng, low, high)


_SPECIAL += [
    E("polygamma", et.polygamma, lambda n, x: _sc("polygamma")(n, x).astype(x.dtype),
      lambda d, rng: [_S(1, _rand((2, 3), d, rng, 0.5, 3)), _S(2, _rand((4,), d, rng, 0.5, 3))],
      method=None, operands=(1,), out_dtype=lambda s, d: d),
    E("polygamma_method", lambda x, n: x.polygamma(n),
      lambda x, n: _sc("polygamma")(n, x).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 0.5, 3), 1)], method=None,
      inplace="polygamma_", ops=("polygamma", "polygamma_")),
    E("mvlgamma", et.mvlgamma, lambda x, p: _sc("multigammaln")(x, p) if x.ndim == 0 else
      np.vectorize(lambda v: _sc("multigammaln")(v, p))(x).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 2, 4), 3)], ops=("lgamma",)),
    E("xlogy", et.xlogy, lambda x, y: _sc("xlogy")(x, y).astype(np.result_type(x, y)),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng, 0.5, 2)),
                      _S(np.asarray([0.0, 1.5, -2.0], d), _rand((2, 3), d, rng, 0.5, 2),
                         grad=(1,)),  # d/dx at x = 0 is PyTorch's 0, not log(y)
                      _S(_rand((3,), d, rng), 2.0)],
      operands=(0, 1), inplace="xlogy_", ops=("xlogy", "xlogy_")),
    E("special_xlog1py", SP.xlog1py, lambda x, y: _sc("xlog1py")(x, y).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng, 0.5, 2))],
      method=None, operands=(0, 1)),
    E("special_zeta", SP.zeta, lambda x, q: _sc("zeta")(x, q).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 2, 4), _rand((2, 3), d, rng, 0.5, 2),
                         grad=(1,))],
      method=None, operands=(0, 1)),
    E("igamma", et.igamma, lambda a, x: _sc("gammainc")(a, x).astype(a.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 0.5, 3), _rand((2, 3), d, rng, 0.5, 3),
                         grad=(1,))],
      operands=(0, 1), inplace="igamma_", ops=("igamma", "igamma_")),
    E("igammac", et.igammac, lambda a, x: _sc("gammaincc")(a, x).astype(a.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 0.5, 3), _rand((2, 3), d, rng, 0.5, 3),
                         grad=(1,))],
      operands=(0, 1), inplace="igammac_", ops=("igammac", "igammac_")),
    E("logit", et.logit, lambda x, eps=None: _sc("logit")(
        x if eps is None else np.clip(x, eps, 1 - eps)).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 0.1, 0.9)),
                      _S(_rand((5,), d, rng, 0.01, 0.99), 0.2)],
      inplace="logit_", ops=("logit", "logit_")),
    E("special_softmax", SP.softmax, lambda x, dim: _sc("softmax")(x, axis=dim).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng), 1), _S(_rand((2, 3), d, rng), 0)],
      method=None, ops=("logsumexp", "exp")),
    E("log_softmax", et.log_softmax, lambda x, dim: _sc("log_softmax")(x, axis=dim)
      .astype(x.dtype), lambda d, rng: [_S(_rand((2, 3), d, rng), 1)], ops=("logsumexp",)),
]


# --------------------------------------------------------------------------- other torch.* names
def _np_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    out = x.copy()
    ufunc = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum,
             "mean": np.add}[reduce]
    cnt = np.ones_like(x) if include_self else np.zeros_like(x)
    seen = np.zeros(x.shape, bool)
    for pos in np.ndindex(*index.shape):
        t = list(pos)
        t[dim] = index[pos]
        t = tuple(t)
        if not include_self and not seen[t]:
            out[t] = src[pos]
            seen[t] = True
            cnt[t] = 1
            continue
        out[t] = ufunc(out[t], src[pos])
        cnt[t] += 1
        seen[t] = True
    if reduce == "mean":
        out = np.where(seen, out / np.maximum(cnt, 1), out).astype(x.dtype)
    return out


def _sr_samples(d, rng):
    idx = np.asarray([[0, 1, 0], [2, 2, 1]], np.int64)
    out = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        out.append(_S(_rand((3, 3), d, rng, 0.5, 2, distinct=True), 0, idx,
                      _rand((2, 3), d, rng, 0.5, 2, distinct=True), red, grad=(0, 3)))
    out.append(_S(_rand((3, 3), d, rng, 0.5, 2, distinct=True), 1, idx,
                  _rand((2, 3), d, rng, 0.5, 2, distinct=True), "amax", include_self=False,
                  grad=(0, 3)))
    out.append(_S(_rand((3, 3), d, rng, 0.5, 2), 0, idx, _rand((2, 3), d, rng, 0.5, 2),
                  "sum", include_self=False, grad=(0, 3)))
    return out


def _np_cummax(x, dim, largest=True):
    a = np.moveaxis(x, dim, -1)
    vals = np.empty_like(a)
    idx = np.zeros(a.shape, np.int64)
    for pos in np.ndindex(*a.shape[:-1]):
        best, bi = None, 0
        for i, v in enumerate(a[pos]):
            if best is None or (v >= best if largest else v <= best):
                best, bi = v, i
            vals[pos + (i,)], idx[pos + (i,)] = best, bi
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


def _np_nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_samples(d, rng):
    x = _rand((2, 4), d, rng)
    x[0, 1], x[1, 2], x[1, 3] = np.nan, np.inf, -np.inf
    return [_S(x.copy()), _S(x.copy(), 1.5, 2.0, -3.0)]


def _np_diff(x, n=1, dim=-1, prepend=None, append=None):
    return np.diff(x, n, axis=dim, **({"prepend": prepend} if prepend is not None else {}),
                   **({"append": append} if append is not None else {}))


_EXTRA = [
    E("softmax", et.softmax, lambda x, dim: _sc("softmax")(x, axis=dim).astype(x.dtype),
      lambda d, rng: [_S(_rand((2, 3), d, rng), 1), _S(_rand((2, 3, 2), d, rng), -1)],
      ops=("logsumexp", "exp")),
    E("nan_to_num", et.nan_to_num, _np_nan_to_num, _nan_samples,
      inplace="nan_to_num_", grad_dtypes_ok=True),
    E("isposinf", et.isposinf, np.isposinf, lambda d, r: _nan_samples(d, r)[:1], out_dtype="bool",
      differentiable=False),
    E("isneginf", et.isneginf, np.isneginf, lambda d, r: _nan_samples(d, r)[:1], out_dtype="bool",
      differentiable=False),
    E("signbit", et.signbit, np.signbit,
      lambda d, rng: [_S(np.asarray([-0.0, 0.0, -1.0, 2.0], d))], out_dtype="bool",
      differentiable=False),
    E("diff", et.diff, _np_diff,
      lambda d, rng: [_S(_rand((3, 5), d, rng)), _S(_rand((3, 5), d, rng), 2, 0),
                      _S(_rand((3, 4), d, rng), 1, 1, _rand((3, 1), d, rng),
                         _rand((3, 2), d, rng))],
      dtypes=FLOAT + INT, ops=("sub",), operands=(0, 3, 4)),
    E("rot90", et.rot90, lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims),
      lambda d, rng: [_S(_rand((2, 3), d, rng)), _S(_rand((2, 3, 4), d, rng), 3, (1, 2)),
                      _S(_rand((2, 3), d, rng), 2)],
      dtypes=FLOAT + INT, ops=("flip", "permute")),
    E("isin", et.isin, lambda a, b, invert=False: np.isin(a, b, invert=invert),
      lambda d, rng: [_S(np.asarray([[1, 2], [3, 4]], d), np.asarray([2, 3, 7], d)),
                      _S(np.asarray([1, 2, 5], d), np.asarray([5], d), invert=True)],
      dtypes=FLOAT + INT, out_dtype="bool", differentiable=False),
    E("searchsorted", et.searchsorted,
      lambda s, v, right=False, out_int32=False: np.searchsorted(
          s, v, side="right" if right else "left").astype(np.int32 if out_int32 else np.int64),
      lambda d, rng: [_S(np.asarray([1, 3, 5, 7], d), np.asarray([[3, 6], [0, 9]], d)),
                      _S(np.asarray([1, 3, 5, 7], d), np.asarray([3, 5], d), right=True)],
      dtypes=FLOAT + INT, out_dtype="int64", differentiable=False, method=None),
    E("bucketize", et.bucketize,
      lambda v, b, right=False: np.searchsorted(b, v, side="right" if right else "left"),
      lambda d, rng: [_S(np.asarray([[1, 4], [9, 0]], d), np.asarray([2, 4, 8], d)),
                      _S(np.asarray([1, 4, 9], d), np.asarray([2, 4, 8], d), right=True)],
      dtypes=FLOAT + INT, out_dtype="int64", differentiable=False, method=None),
    E("bincount", et.bincount,
      lambda x, w=None, minlength=0: np.bincount(x, w, minlength),
      lambda d, rng: [_S(np.asarray([0, 1, 1, 4], "int64")),
                      _S(np.asarray([0, 1, 1, 4], "int64"), None, 7)],
      dtypes=("int64",), out_dtype="int64", differentiable=False),
    E("histc", et.histc,
      lambda x, bins=100, min=0, max=0: np.histogram(
          x, bins, (min, max) if min != max else (x.min(), x.max()))[0].astype(x.dtype),
      lambda d, rng: [_S(_rand((20,), d, rng), 5, -2, 2), _S(_rand((3, 4), d, rng), 4)],
      differentiable=False),
    E("cummax", et.cummax, lambda x, dim: _np_cummax(x, dim, True),
      lambda d, rng: [_S(_rand((3, 4), d, rng, distinct=True), 1),
                      _S(_rand((3, 4), d, rng, distinct=True), 0)],
      dtypes=FLOAT + INT, out_dtype=_dtypes("same", "int64"),
      ops=("cummax",)),
    E("cummin", et.cummin, lambda x, dim: _np_cummax(x, dim, False),
      lambda d, rng: [_S(_rand((3, 4), d, rng, distinct=True), 1)],
      dtypes=FLOAT + INT, out_dtype=_dtypes("same", "int64"),
      ops=("cummin",)),
    E("logcumsumexp", et.logcumsumexp,
      lambda x, dim: np.logaddexp.accumulate(x, axis=dim),
      lambda d, rng: [_S(_rand((3, 4), d, rng), 1), _S(_rand((3, 4), d, rng, -20, 20), 0)],
      ops=("cumsum", "log", "exp")),
    E("scatter_reduce", et.scatter_reduce, _np_scatter_reduce, _sr_samples,
      operands=(0, 3)),
    E("fft_fftshift", et.fft.fftshift, lambda x, dim=None: np.fft.fftshift(x, dim),
      lambda d, rng: [_S(_rand((5,), d, rng)), _S(_rand((3, 4), d, rng), 1)],
      method=None, dtypes=FLOAT + INT, ops=("roll",)),
    E("fft_ifftshift", et.fft.ifftshift, lambda x, dim=None: np.fft.ifftshift(x, dim),
      lambda d, rng: [_S(_rand((5,), d, rng)), _S(_rand((3, 4), d, rng), (0, 1))],
      method=None, dtypes=FLOAT + INT, ops=("roll",)),
]

# --------------------------------------------------------------------------- elementwise
_SHIFT_INTS = ("uint8", "int8", "int32", "int64")


def _shift_samples(d, rng):
    a = _rand((2, 3), d, rng, 0, 9)
    return [_S(a, _rand((2, 3), d, rng, 0, 3)), _S(a, _rand((3,), d, rng, 0, 3)),
            _S(a, 2, note=" scalar"), _S(_rand((), d, rng, 0, 9), _rand((2, 3), d, rng, 0, 3))]


def _np_heaviside(x, v):
    return np.where(x == 0, v, x > 0).astype(np.result_type(x, v))


def _heaviside_samples(d, rng):
    x = _rand((2, 3), d, rng, -2, 2)
    x.reshape(-1)[::2] = 0
    return [_S(x, _rand((2, 3), d, rng)), _S(x, _rand((), d, rng)), _S(x, _rand((3,), d, rng))]


def _np_renorm(x, p, dim, maxnorm):
    axes = tuple(i for i in range(x.ndim) if i != dim % x.ndim)
    a = np.abs(x.astype(np.float64))
    n = a.max(axis=axes, keepdims=True) if p == math.inf else \
        (a ** p).sum(axis=axes, keepdims=True) ** (1 / p)
    return (x * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)).astype(x.dtype)


def _copysign_samples(d, rng):
    return [_S(_nz((2, 3), d, rng), _nz((2, 3), d, rng), grad=(0,)),
            _S(_nz((2, 3), d, rng), _nz((3,), d, rng), grad=(0,)),
            _S(_nz((2, 3), d, rng), -1.5, grad=(0,))]


def _float_of(d):
    return d if d.startswith("float") else "float32"


def _np_sgn(a):
    if a.dtype.kind != "c":
        return np.sign(a)
    mag = np.abs(a)
    return np.where(mag == 0, 0, a / np.where(mag == 0, 1, mag)).astype(a.dtype)


def _unary_c(d, rng):
    """Samples of a complex op: a matrix, a vector and a 0-d tensor."""
    return [_S(_rand((2, 3), d, rng)), _S(_rand((4,), d, rng)), _S(_rand((), d, rng))]


def _parts(d, rng):
    return [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng)),
            _S(_rand((2, 1), d, rng), _rand((3,), d, rng))]


def _real_of(s, d):
    return {"complex64": "float32", "complex128": "float64"}.get(d, d)


def _complex_of(s, d):
    return {"float32": "complex64", "float64": "complex128"}.get(d, d)


_COMPLEX_OPS = [
    E("real", et.real, np.real, _unary_c, dtypes=COMPLEX + FLOAT, out_dtype=_real_of,
      method=None, view=True),
    E("imag", et.imag, np.imag, _unary_c, dtypes=COMPLEX, out_dtype=_real_of, method=None,
      view=True),
    E("view_as_real", et.view_as_real, lambda a: np.stack([a.real, a.imag], -1), _unary_c,
      dtypes=COMPLEX, out_dtype=_real_of, method=None, view=True,
      layouts=("contig",)),
    E("view_as_complex", et.view_as_complex, lambda a: a[..., 0] + 1j * a[..., 1],
      lambda d, rng: [_S(_rand((3, 2), d, rng)), _S(_rand((2, 4, 2), d, rng))],
      dtypes=FLOAT, out_dtype=_complex_of, method=None, view=True, layouts=("contig",)),
    E("conj", et.conj, np.conj, _unary_c, dtypes=COMPLEX + FLOAT),
    E("conj_physical", et.conj_physical, np.conj, _unary_c, dtypes=COMPLEX + FLOAT,
      inplace="conj_physical_", ops=("conj_physical", "conj_physical_")),
    E("angle", et.angle, np.angle, lambda d, rng: [_S(_nz((2, 3), d, rng))],
      dtypes=COMPLEX + FLOAT, out_dtype=_real_of),
    E("complex", et.complex, lambda a, b: a + 1j * b, _parts, dtypes=FLOAT,
      out_dtype=_complex_of, operands=(0, 1), method=None),
    E("polar", et.polar, lambda r, t: r * np.exp(1j * t), _parts, dtypes=FLOAT,
      out_dtype=_complex_of, operands=(0, 1), method=None),
]


# --------------------------------------------------------------------------- eig, stft, istft
def eig_separated(shape, d, rng):
    """``V diag(L) V^-1`` with well separated eigenvalues: a complex-conjugate pair and a
    real one for real dtypes (a rotation block), three complex ones for complex dtypes."""
    n = shape[-1]
    cplx = np_dtype(d).kind == "c"
    V = rng.standard_normal(shape) + 2 * np.eye(n)
    D = np.zeros(shape[:-2] + (n, n), np.complex128 if cplx else np.float64)
    if cplx:
        V = V + 1j * rng.standard_normal(shape)
        D[..., range(n), range(n)] = np.array([1 + 1j, -2 + 0.5j, 3 - 1j, 0.5 - 2j])[:n]
    else:
        D[..., 0, 0] = D[..., 1, 1] = 1.0
        D[..., 0, 1], D[..., 1, 0] = -2.0, 2.0
        D[..., range(2, n), range(2, n)] = np.array([3.5, -2.5])[:n - 2]
    return (V @ D @ np.linalg.inv(V)).astype(d)


def _eig_samples(d, rng):
    return [_S(eig_separated((3, 3), d, rng)), _S(eig_separated((2, 3, 3), d, rng))]


def _np_eig(a):
    cdt = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
    w, v = np.linalg.eig(a)
    return w.astype(cdt), v.astype(cdt)


def _phase_free(r, conj):
    """Eigenvalues and ``V * conj(V[0, :])``: each eigenvector's phase cancels (PyTorch's
    OpInfo for eig checks gradients through such a function)."""
    return r[0], r[1] * conj(r[1][..., :1, :])


def _complex_pair(s, d):
    c = _complex_of(s, d)
    return (c, c)


def _np_window(w, win, n_fft):
    w = np.ones(win) if w is None else w
    left = (n_fft - win) // 2
    return np.pad(w, (left, n_fft - win - left))


def _np_stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
             pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
             align_to_window=None):
    """PyTorch's definition written out: pad, frame, window, DFT each frame."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    w = _np_window(window, win, n_fft)
    if center:
        mode = {"reflect": "reflect", "constant": "constant", "replicate": "edge",
                "circular": "wrap"}[pad_mode]
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=mode)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    if align_to_window:  # frames start where the centred window does
        n_frames = 1 + (x.shape[-1] - win) // hop
        left = (n_fft - win) // 2
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(left, left)])
    frames = x[..., np.arange(n_frames)[:, None] * hop + np.arange(n_fft)] * w
    cplx = np.iscomplexobj(x) or np.iscomplexobj(w)
    one = not cplx if onesided is None else onesided
    out = np.fft.rfft(frames, axis=-1) if one else np.fft.fft(frames, axis=-1)
    if normalized:
        out = out / np.sqrt(n_fft)
    wide = np.result_type(x.dtype, window.dtype if window is not None else x.dtype)
    out = np.swapaxes(out, -1, -2).astype(
        np.complex64 if wide in (np.float32, np.complex64) else np.complex128)
    return out if return_complex or cplx else np.stack([out.real, out.imag], -1)


def _np_istft(S, n_fft, hop_length=None, win_length=None, window=None, center=True,
              normalized=False, onesided=None, length=None, return_complex=False):
    """PyTorch's definition: inverse DFT per frame, window, overlap-add, divide by the
    overlap-added squared window, trim."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    w = _np_window(window, win, n_fft)
    X = np.swapaxes(S, -1, -2)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        y = np.fft.ifft(X, n_fft, axis=-1, norm=norm)
    else:
        y = np.fft.irfft(X[..., :n_fft // 2 + 1], n_fft, axis=-1, norm=norm)
    y = y * w
    n_frames = X.shape[-2]
    total = n_fft + hop * (n_frames - 1)
    out = np.zeros(y.shape[:-2] + (total,), y.dtype)
    env = np.zeros(total, (w * w).dtype)
    for m in range(n_frames):
        out[..., m * hop:m * hop + n_fft] += y[..., m, :]
        env[m * hop:m * hop + n_fft] += w * w
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    out = out[..., start:end] / env[start:end]
    if end > total:
        out = np.concatenate([out, np.zeros(out.shape[:-1] + (end - total,), out.dtype)], -1)
    real = np.float32 if S.dtype == np.complex64 else np.float64
    res = np.result_type(real, w.dtype) if not return_complex else S.dtype
    return out.astype(res)


def _win(n, d, rng):
    """A window bounded away from zero (the overlap-add envelope must not vanish)."""
    return _rand((n,), _real_of(None, d), rng, 0.5, 1.5)


def _stft_samples(d, rng):
    out = [_S(_rand((20,), d, rng), 8, 3, None, _win(8, d, rng), return_complex=True),
           _S(_rand((2, 20), d, rng), 8, None, 5, _win(5, d, rng), pad_mode="constant",
              normalized=True, return_complex=True),
           _S(_rand((17,), d, rng), 7, 2, None, _win(7, d, rng), center=False,
              onesided=False, return_complex=True)]
    if np_dtype(d).kind == "f":
        out.append(_S(_rand((20,), d, rng), 8, 4, 6, _win(6, d, rng), center=False,
                      align_to_window=True, return_complex=True))
    return out


def _istft_samples(d, rng):
    return [_S(_rand((5, 9), d, rng), 8, 2, None, _win(8, d, rng)),
            _S(_rand((2, 8, 6), d, rng), 8, 3, None, _win(8, d, rng), center=False,
               onesided=False, length=20),
            _S(_rand((8, 5), d, rng), 8, 2, None, _win(8, d, rng), onesided=False,
               normalized=True, return_complex=True),
            _S(_rand((4, 9), d, rng), 7, 2, 6, _win(6, d, rng), length=19)]


def _stft_dtype(s, d):
    return _complex_of(s, d)


def _istft_dtype(s, d):
    return d if s.kwargs.get("return_complex") else _real_of(s, d)


_EIG_STFT = [
    E("linalg_eig", LA.eig, _np_eig, _eig_samples, dtypes=FLOAT + COMPLEX, method=None,
      out_dtype=_complex_pair, differentiable=False, gauge={1: "col"}),
    E("linalg_eig_grad", lambda a: _phase_free(LA.eig(a), et.conj),
      lambda a: _phase_free(_np_eig(a), np.conj), _eig_samples, dtypes=FLOAT, method=None,
      out_dtype=_complex_pair, ops=("linalg_eig",)),
    E("linalg_eig_grad_complex", lambda a: _phase_free(LA.eig(a), et.conj),
      lambda a: _phase_free(_np_eig(a), np.conj), _eig_samples, dtypes=COMPLEX, method=None,
      ops=("linalg_eig",)),
    E("linalg_eigvals", LA.eigvals, lambda a: _np_eig(a)[0], _eig_samples, dtypes=FLOAT,
      method=None, out_dtype=_complex_of, ops=("linalg_eig",)),
    E("linalg_eigvals_complex", LA.eigvals, lambda a: _np_eig(a)[0], _eig_samples,
      dtypes=COMPLEX, method=None, ops=("linalg_eig",)),
    E("stft", et.stft, _np_stft, _stft_samples, dtypes=FLOAT + COMPLEX, operands=(0, 4),
      out_dtype=_stft_dtype, ops=("unfold", "mul", "matmul", "cat", "flip", "complex")),
    E("istft", et.istft, _np_istft, _istft_samples, dtypes=COMPLEX, operands=(0, 4),
      out_dtype=_istft_dtype, ops=("matmul", "mul", "index_add", "real", "div")),
]

_POINTWISE = [
    E("arctan2", et.arctan2, np.arctan2,
      lambda d, rng: [_S(_rand((2, 3), d, rng), _nz((2, 3), d, rng)),
                      _S(_rand((2, 3), d, rng), _nz((3,), d, rng))], dtypes=FLOAT,
      out_dtype="promote_float", operands=(0, 1), inplace="arctan2_", ops=("atan2", "atan2_")),
    E("fix", et.fix, np.trunc, lambda d, rng: [_S(_rand((2, 3), d, rng, -5, 5))],
      dtypes=FLOAT + INT, inplace="fix_", ops=("trunc", "trunc_")),
    E("sgn", et.sgn, _np_sgn, lambda d, rng: [_S(_rand((2, 3), d, rng, -3, 3)),
                                               _S(_rand((), d, rng))],
      dtypes=FLOAT_H + INT + COMPLEX, inplace="sgn_", ops=("sgn", "sgn_"),
      gradgrad=False),
    E("bitwise_left_shift", et.bitwise_left_shift, np.left_shift, _shift_samples,
      dtypes=_SHIFT_INTS, out_dtype="promote", operands=(0, 1), differentiable=False,
      inplace="bitwise_left_shift_", ops=("bitwise_left_shift", "bitwise_left_shift_")),
    E("bitwise_right_shift", et.bitwise_right_shift, np.right_shift, _shift_samples,
      dtypes=_SHIFT_INTS, out_dtype="promote", operands=(0, 1), differentiable=False,
      inplace="bitwise_right_shift_", ops=("bitwise_right_shift", "bitwise_right_shift_")),
    E("copysign", et.copysign, np.copysign, _copysign_samples, dtypes=FLOAT_H + INT,
      out_dtype="promote_float", operands=(0, 1), inplace="copysign_",
      ops=("copysign", "copysign_")),
    E("gcd", et.gcd, np.gcd, binary_samples(-12, 12, low2=-8, high2=8), dtypes=_SHIFT_INTS,
      out_dtype="promote", operands=(0, 1), differentiable=False, inplace="gcd_",
      ops=("gcd", "gcd_")),
    E("lcm", et.lcm, np.lcm, binary_samples(-12, 12, low2=-8, high2=8), dtypes=INT,
      out_dtype="promote", operands=(0, 1), differentiable=False, inplace="lcm_",
      ops=("lcm", "lcm_")),
    E("heaviside", et.heaviside, _np_heaviside, _heaviside_samples, dtypes=FLOAT + INT,
      operands=(0, 1), differentiable=False, inplace="heaviside_",
      ops=("heaviside", "heaviside_")),
    E("logaddexp", et.logaddexp, np.logaddexp, binary_samples(-3, 3), dtypes=FLOAT_H,
      out_dtype="promote", operands=(0, 1)),
    E("logaddexp2", et.logaddexp2, np.logaddexp2, binary_samples(-3, 3), dtypes=FLOAT_H,
      out_dtype="promote", operands=(0, 1)),
    E("nextafter", et.nextafter, np.nextafter,
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), d, rng)),
                      _S(_rand((2, 3), d, rng), _rand((), d, rng))],
      out_dtype="promote", operands=(0, 1), differentiable=False, inplace="nextafter_",
      ops=("nextafter", "nextafter_")),
    E("ldexp", et.ldexp, lambda a, b: (a * np.power(2.0, b)).astype(
        a.dtype if a.dtype.kind == "f" else np.float32),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((2, 3), "int64", rng, -3, 3)),
                      _S(_rand((2, 3), d, rng), _rand((3,), "int32", rng, -3, 3))],
      dtypes=FLOAT, out_dtype="float", inplace="ldexp_", ops=("mul", "pow")),
    E("frexp", et.frexp, lambda x: tuple(np.frexp(x)),
      lambda d, rng: [_S(_rand((2, 3), d, rng, -6, 6)),  # 0 and powers of two: no gradient
                      _S(np.asarray([0.0, -0.0, 1.0, 0.75, -8.0], d), grad=())],
      dtypes=FLOAT_H, out_dtype=_dtypes("same", "int32")),
    E("float_power_f64", et.float_power, lambda a, b: np.power(a, b),
      lambda d, rng: [_S(_rand((2, 3), d, rng, 0.5, 2), 2.0), _S(_rand((2, 3), d, rng, 0.5, 2),
                                                                  _rand((3,), d, rng))],
      dtypes=("float64",), method="float_power", operands=(0, 1), inplace="float_power_",
      ops=("pow", "pow_")),
    E("rsub", et.rsub, lambda a, b, alpha=1: np.asarray(b - alpha * a),
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3,), d, rng)),
                      _S(_rand((2, 3), d, rng), 2.5), _S(_rand((3,), d, rng), _rand((3,), d, rng),
                                                         alpha=2)],
      dtypes=FLOAT + INT, method=None, out_dtype="promote", operands=(0, 1), ops=("sub",)),
    E("renorm", et.renorm, _np_renorm,
      lambda d, rng: [_S(_rand((3, 4), d, rng), 2, 0, 1.0), _S(_rand((3, 4), d, rng), 1, 1, 1.5),
                      _S(_rand((2, 3, 4), d, rng), 3.0, -1, 1.0),
                      _S(_rand((3, 4), d, rng), math.inf, 0, 1.0)],
      inplace="renorm_", ops=("renorm",)),
]
for _n in ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"):
    _lo, _hi = (1.2, 3.0) if _n == "arccosh" else (-0.8, 0.8)
    _POINTWISE.append(E(_n, getattr(et, _n), getattr(np, _n),
                        (lambda lo, hi: lambda d, rng: [_S(_rand((2, 3), d, rng, lo, hi))])(
                            _lo, _hi), out_dtype="float", inplace=_n + "_",
                        ops=(_n[3:].replace("a", "", 0) and "a" + _n[3:],
                             "a" + _n[3:] + "_")))

# --------------------------------------------------------------------------- statistics
def _np_quantile(nan):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        f = np.nanquantile if nan else np.quantile
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            r = f(x.astype(np.float64), q, axis=dim, keepdims=keepdim, method=interpolation)
        return np.asarray(r).astype(x.dtype)
    return ref


def _quantile_samples(nan):
    def gen(d, rng):
        x = _rand((3, 5), d, rng, distinct=True)
        q = np.asarray([0.0, 0.25, 0.6, 1.0], d)
        out = [_S(x, 0.3), _S(x, q, 1), _S(x, 0.5, 0, True), _S(_rand((2, 3, 4), d, rng,
                                                                   distinct=True), q, -1),
               _S(_rand((7,), d, rng, distinct=True), np.asarray(0.9, d))]
        out += [_S(x, q[:3], 1, interpolation=m)
                for m in ("lower", "higher", "midpoint", "nearest")]
        y = x.copy()
        y[0, 1] = y[2, 2] = y[2, 4] = np.nan
        y[1] = np.nan
        out += [_S(y, q, 1, grad=()), _S(y, 0.5, grad=())]
        return out
    return gen


def _np_nanmedian(x, dim=None, keepdim=False):
    if dim is None:
        v = np.sort(x.reshape(-1))
        k = int((~np.isnan(v)).sum()) if v.dtype.kind == "f" else v.size
        return np.asarray(v[max((k - 1) // 2, 0)])
    i = np.argsort(x, axis=dim, kind="stable")
    v = np.take_along_axis(x, i, dim)
    k = (~np.isnan(x)).sum(dim, keepdims=True) if x.dtype.kind == "f" else \
        np.full_like(v.take([0], dim), x.shape[dim], dtype=np.int64)
    pos = np.maximum((k - 1) // 2, 0)
    vals, inds = np.take_along_axis(v, pos, dim), np.take_along_axis(i, pos, dim)
    if not keepdim:
        vals, inds = vals.squeeze(dim), inds.squeeze(dim)
    return vals, inds.astype(np.int64)


def _nanmedian_samples(d, rng):
    x = _rand((3, 5), d, rng, distinct=True)
    y = x.copy()
    if np.dtype(d).kind == "f":
        y[0, 1] = y[2, 2] = y[2, 4] = np.nan
        y[1] = np.nan
    return [_S(x), _S(x, 1), _S(x, 0, True), _S(y, grad=()), _S(y, 1, grad=()),
            _S(_rand((6,), d, rng, distinct=True), -1)]


def _np_cov(x, correction=1, fweights=None, aweights=None):
    r = np.cov(x, ddof=correction, fweights=fweights, aweights=aweights)
    return np.asarray(r).astype(x.dtype if x.dtype.kind == "f" else np.float32)


def _cov_samples(d, rng):
    fw = np.asarray([1, 2, 0, 3, 1], np.int64)
    aw = rng.random(5).astype(d if np.dtype(d).kind == "f" else "float32") + 0.1
    return [_S(_rand((3, 5), d, rng)), _S(_rand((5,), d, rng)),
            _S(_rand((2, 5), d, rng), correction=0),
            _S(_rand((3, 5), d, rng), fweights=fw),
            _S(_rand((3, 5), d, rng), aweights=aw),
            _S(_rand((3, 5), d, rng), correction=2, fweights=fw, aweights=aw)]


def _np_histogram(x, bins, range=None, weight=None, density=False):
    if isinstance(bins, int):
        lo, hi = range if range is not None else (x.min(), x.max())
        bins = np.linspace(lo, hi, bins + 1)
    h, e = np.histogram(x.reshape(-1), bins, weights=None if weight is None else
                        weight.reshape(-1), density=density)
    return h.astype(x.dtype), np.asarray(e).astype(x.dtype)


def _hist_samples(d, rng):
    x = _rand((4, 5), d, rng, -3, 3)
    return [_S(x, 4), _S(x, np.asarray([-2.0, -0.5, 0.0, 2.5], d)),
            _S(x, 3, range=(-1.0, 1.0)), _S(x, 5, weight=_rand((4, 5), d, rng, 0, 1)),
            _S(x, 3, density=True), _S(_rand((7,), d, rng), 2, weight=_rand((7,), d, rng, 0, 2),
                                       density=True)]


def _histdd(x, bins, **kw):
    r = et.histogramdd(x, bins, **kw)
    return (r.hist,) + tuple(r.bin_edges)


def _np_histdd(x, bins, range=None, weight=None, density=False):
    k = x.shape[-1]
    pts = x.reshape(-1, k)
    if not isinstance(bins, (list, tuple)):
        bins = [bins] * k
    edges = []
    for i, b in enumerate(bins):
        if isinstance(b, int):
            lo, hi = (range[2 * i], range[2 * i + 1]) if range is not None else (
                pts[:, i].min(), pts[:, i].max())
            b = np.linspace(lo, hi, b + 1)
        edges.append(np.asarray(b))
    h, _ = np.histogramdd(pts, edges, weights=None if weight is None else weight.reshape(-1),
                          density=density)
    return (h.astype(x.dtype),) + tuple(e.astype(x.dtype) for e in edges)


def _np_trapezoid(y, x=None, dx=None, dim=-1):
    r = np.trapezoid(y, x, dx=1.0 if dx is None else dx, axis=dim)
    return np.asarray(r).astype(y.dtype if y.dtype.kind == "f" else np.float32)


def _np_cumtrapz(y, x=None, dx=None, dim=-1):
    from scipy.integrate import cumulative_trapezoid

    r = cumulative_trapezoid(y, x, dx=1.0 if dx is None else dx, axis=dim)
    return np.asarray(r).astype(y.dtype if y.dtype.kind == "f" else np.float32)


def _trapz_samples(d, rng):
    x = np.sort(_rand((5,), "float64", rng, 0, 4)).astype(d if np.dtype(d).kind == "f"
                                                        else "float32")
    return [_S(_rand((3, 5), d, rng)), _S(_rand((3, 5), d, rng), dx=0.5),
            _S(_rand((5, 3), d, rng), dim=0, dx=2),
            _S(_rand((3, 5), d, rng), x), _S(_rand((3, 5), d, rng),
                                             np.sort(_rand((3, 5), d, rng), -1))]


def _np_gradient(x, spacing=1, dim=None, edge_order=1):
    axes = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else
                                                      tuple(dim))
    sp = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(axes)
    r = np.gradient(x.astype(np.float64), *sp, axis=axes, edge_order=edge_order)
    r = r if isinstance(r, (list, tuple)) else [r]
    return tuple(np.asarray(a).astype(x.dtype if x.dtype.kind == "f" else np.float32)
                 for a in r)


def _gradient_samples(d, rng):
    c0 = np.asarray([0.0, 1.0, 2.5, 3.0], d if np.dtype(d).kind == "f" else "float32")
    c1 = np.asarray([0.0, 0.5, 2.0, 2.5, 4.0], c0.dtype)
    return [_S(_rand((4, 5), d, rng)), _S(_rand((6,), d, rng), spacing=2.0),
            _S(_rand((4, 5), d, rng), spacing=[2.0, 0.5], edge_order=2),
            _S(_rand((4, 5), d, rng), dim=1), _S(_rand((4, 5), d, rng), spacing=[3.0], dim=[0]),
            _S(_rand((4, 5), d, rng), spacing=[c0, c1]),
            _S(_rand((4, 5), d, rng), spacing=[c1], dim=-1, edge_order=2)]


_STATS = [
    E("quantile", et.quantile, _np_quantile(False), _quantile_samples(False),
      ops=("sort", "gather", "lerp")),
    E("nanquantile", et.nanquantile, _np_quantile(True), _quantile_samples(True),
      ops=("sort", "gather", "lerp")),
    E("nanmedian", et.nanmedian, _np_nanmedian, _nanmedian_samples, dtypes=FLOAT + INT,
      out_dtype=lambda s, d: d if len(s.args) == 1 else (d, "int64"), ops=("sort", "gather")),
    E("cov", et.cov, _np_cov, _cov_samples, dtypes=FLOAT + INT,
      out_dtype=lambda s, d: d if d.startswith("float") else "float32",
      ops=("mm", "sum", "div")),
    E("corrcoef", et.corrcoef, lambda x: np.clip(np.corrcoef(x), -1, 1).astype(
        x.dtype if x.dtype.kind == "f" else np.float32),
      lambda d, rng: [_S(_rand((3, 6), d, rng)), _S(_rand((2, 4), d, rng))],
      dtypes=FLOAT + INT, out_dtype=lambda s, d: d if d.startswith("float") else "float32",
      ops=("mm", "sqrt", "clamp")),
    E("histogram", et.histogram, _np_histogram, _hist_samples, differentiable=False),
    E("histogramdd", _histdd, _np_histdd,
      lambda d, rng: [_S(_rand((6, 2), d, rng), 3), _S(_rand((2, 5, 2), d, rng), [2, 4]),
                      _S(_rand((6, 3), d, rng), 2, range=[-1.0, 1.0, -2.0, 2.0, 0.0, 1.0]),
                      _S(_rand((6, 2), d, rng), [np.asarray([-2.0, 0.0, 2.0], d),
                                                 np.asarray([-1.0, 1.0], d)],
                         weight=_rand((6,), d, rng, 0, 1), density=True)],
      method=None, differentiable=False, ops=("histogramdd",)),
    E("trapezoid", et.trapezoid, _np_trapezoid, _trapz_samples, dtypes=FLOAT + INT,
      out_dtype=lambda s, d: d if d.startswith("float") else "float32", operands=(0, 1),
      method=None, ops=("sum", "mul")),
    E("trapz", et.trapz, _np_trapezoid, _trapz_samples, dtypes=FLOAT,
      operands=(0, 1), method=None, ops=("sum", "mul")),
    E("cumulative_trapezoid", et.cumulative_trapezoid, _np_cumtrapz, _trapz_samples,
      dtypes=FLOAT + INT, out_dtype=lambda s, d: d if d.startswith("float") else "float32",
      operands=(0, 1), method=None, ops=("cumsum", "mul")),
    E("gradient", et.gradient, _np_gradient, _gradient_samples, dtypes=FLOAT + INT,
      out_dtype=lambda s, d: d if d.startswith("float") else "float32", method=None,
      ops=("cat", "sub", "div")),
]

# --------------------------------------------------------------------------- shape and index
def _np_split(x, size, dim=0):
    cuts = list(range(size, x.shape[dim], size)) if isinstance(size, int) else \
        list(np.cumsum(size)[:-1])
    return tuple(np.split(x, cuts, axis=dim))


def _np_atleast_3d(*xs):
    r = tuple(np.atleast_3d(x) if x.ndim != 1 else x.reshape(1, -1, 1) for x in xs)
    return r[0] if len(r) == 1 else r


def _np_combinations(x, r=2, with_replacement=False):
    import itertools

    f = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [list(c) for c in f(x.tolist(), r)]
    return np.asarray(rows, x.dtype).reshape(-1, r) if r else np.zeros(0, x.dtype)


def _np_unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        rows = x.reshape(-1)
        change = rows[1:] != rows[:-1]
    else:
        rows = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
        change = (rows[1:] != rows[:-1]).any(1)
    keep = np.concatenate([[True], change])
    starts = np.nonzero(keep)[0]
    out = [rows[keep] if dim is None else np.take(x, starts, axis=dim)]
    if return_inverse:
        out.append((np.cumsum(keep) - 1).reshape(x.shape if dim is None else -1))
    if return_counts:
        out.append(np.diff(np.append(starts, rows.shape[0])))
    return out[0] if len(out) == 1 else tuple(out)


def _uc_samples(d, rng):
    x = np.asarray([1, 1, 2, 2, 2, 0, 1, 1], d)
    m = np.asarray([[1, 2, 1], [1, 2, 1], [0, 2, 1], [0, 2, 1]], d)
    return [_S(x), _S(x, True, True), _S(x.reshape(2, 4), return_inverse=True),
            _S(m, return_counts=True, dim=0), _S(m, True, True, 1)]


def _np_sum_to_size(x, *size):
    lead = x.ndim - len(size)
    r = x.sum(tuple(range(lead))) if lead else x
    axes = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
    return r.sum(axes, keepdims=True) if axes else r


def _np_as_strided_scatter(x, src, size, stride, offset=0):
    out = x.copy().reshape(-1)
    for idx in np.ndindex(*size):
        out[offset + sum(i * s for i, s in zip(idx, stride))] = src[idx]
    return out.reshape(x.shape)


def _np_put(x, index, source, accumulate=False):
    out = x.copy().reshape(-1)
    idx = np.where(index < 0, index + out.size, index).reshape(-1)
    if accumulate:
        np.add.at(out, idx, source.reshape(-1))
    else:
        out[idx] = source.reshape(-1)
    return out.reshape(x.shape)


def _np_index_reduce(x, dim, index, source, reduce, include_self=True):
    full = np.broadcast_to(index.reshape([-1 if i == dim else 1 for i in range(x.ndim)]),
                           source.shape)
    return _np_scatter_reduce(x, dim, full, source, reduce, include_self)


def _ir_samples(d, rng):
    idx = np.asarray([0, 2, 0], np.int64)
    out = []
    for red in ("prod", "mean", "amax", "amin"):
        out.append(_S(_rand((3, 4), d, rng, 0.5, 2, distinct=True), 0, idx,
                      _rand((3, 4), d, rng, 0.5, 2, distinct=True), red, grad=(0, 3)))
    out.append(_S(_rand((4, 3), d, rng, 0.5, 2, distinct=True), 1, idx[:2],
                  _rand((4, 2), d, rng, 0.5, 2, distinct=True), "amin", include_self=False,
                  grad=(0, 3)))
    out.append(_S(_rand((4, 3), d, rng, 0.5, 2), 1, idx[:2], _rand((4, 2), d, rng, 0.5, 2),
                  "mean", include_self=False, grad=(0, 3)))
    return out


def _np_fill_diagonal(x, value, wrap=False):
    out = x.copy()
    np.fill_diagonal(out, value, wrap=wrap)
    return out


def _dsplit_ref(n):
    def ref(x, s):
        if isinstance(s, int):
            return tuple(np.split(x, s, axis=n if x.ndim > 1 or n != 1 else 0))
        return tuple(np.split(x, s, axis=n if x.ndim > 1 or n != 1 else 0))
    return ref


_SHAPE = [
    E("atleast_3d", et.atleast_3d, _np_atleast_3d,
      lambda d, rng: [_S(_rand((), d, rng)), _S(_rand((3,), d, rng)), _S(_rand((2, 3), d, rng)),
                      _S(_rand((2, 3, 4), d, rng)), _S(_rand((3,), d, rng), _rand((), d, rng))],
      dtypes=FLOAT + INT, method=None, view=False, operands=(0, 1),
      ops=("view", "unsqueeze")),
    E("column_stack", et.column_stack, lambda ts: np.column_stack(ts),
      lambda d, rng: [_S([_rand((3,), d, rng), _rand((3, 2), d, rng), _rand((3,), d, rng)]),
                      _S([_rand((), d, rng), _rand((), d, rng)])],
      dtypes=FLOAT + INT, method=None, ops=("cat",)),
    E("row_stack", et.row_stack, lambda ts: np.vstack(ts),
      lambda d, rng: [_S([_rand((3,), d, rng), _rand((2, 3), d, rng)])], dtypes=FLOAT + INT,
      method=None, ops=("cat",)),
    E("dstack", et.dstack, lambda ts: np.dstack(ts),
      lambda d, rng: [_S([_rand((2, 3), d, rng), _rand((2, 3, 2), d, rng)]),
                      _S([_rand((3,), d, rng), _rand((3,), d, rng)])],
      dtypes=FLOAT + INT, method=None, ops=("cat",)),
    E("hsplit", et.hsplit, _dsplit_ref(1),
      lambda d, rng: [_S(_rand((3, 4), d, rng), 2), _S(_rand((3, 4), d, rng), [1, 3]),
                      _S(_rand((6,), d, rng), 3)],
      dtypes=FLOAT + INT, ops=("slice_view",)),
    E("vsplit", et.vsplit, _dsplit_ref(0),
      lambda d, rng: [_S(_rand((4, 3), d, rng), 2), _S(_rand((4, 3), d, rng), [1, 2])],
      dtypes=FLOAT + INT, ops=("slice_view",)),
    E("dsplit", et.dsplit, _dsplit_ref(2),
      lambda d, rng: [_S(_rand((2, 3, 4), d, rng), 2), _S(_rand((2, 3, 4), d, rng), [3])],
      dtypes=FLOAT + INT, ops=("slice_view",)),
    E("split_with_sizes_fn", et.split_with_sizes, lambda x, s, dim=0: _np_split(x, s, dim),
      lambda d, rng: [_S(_rand((5, 3), d, rng), [2, 3]), _S(_rand((2, 5), d, rng), [1, 0, 4], 1)],
      dtypes=FLOAT + INT, ops=("split_with_sizes",)),
    E("unsafe_split_with_sizes", et.unsafe_split_with_sizes,
      lambda x, s, dim=0: _np_split(x, s, dim),
      lambda d, rng: [_S(_rand((5, 3), d, rng), [2, 3])], dtypes=FLOAT, method=None,
      ops=("split_with_sizes",)),
    E("unsafe_split", et.unsafe_split, lambda x, s, dim=0: _np_split(x, s, dim),
      lambda d, rng: [_S(_rand((5, 3), d, rng), 2), _S(_rand((2, 5), d, rng), 3, 1)],
      dtypes=FLOAT + INT, ops=("slice_view",)),
    E("unsafe_chunk", et.unsafe_chunk,
      lambda x, n, dim=0: _np_split(x, -(-x.shape[dim] // n), dim),
      lambda d, rng: [_S(_rand((5, 3), d, rng), 2), _S(_rand((2, 6), d, rng), 3, 1)],
      dtypes=FLOAT + INT, ops=("slice_view",)),
    E("combinations", et.combinations, _np_combinations,
      lambda d, rng: [_S(_rand((4,), d, rng)), _S(_rand((4,), d, rng), 3),
                      _S(_rand((3,), d, rng), with_replacement=True), _S(_rand((3,), d, rng), 0),
                      _S(_rand((2,), d, rng), 3)],
      dtypes=FLOAT + INT, method=None, ops=("index_select",)),
    E("sum_to_size", lambda x, *s: x.sum_to_size(*s), _np_sum_to_size,
      lambda d, rng: [_S(_rand((3, 4), d, rng), 1, 4), _S(_rand((2, 3, 4), d, rng), 3, 1),
                      _S(_rand((3, 4), d, rng), 3, 4)],
      method=None, ops=("sum",)),
    E("as_strided_scatter", et.as_strided_scatter, _np_as_strided_scatter,
      lambda d, rng: [_S(_rand((6,), d, rng), _rand((2, 2), d, rng), (2, 2), (1, 2)),
                      _S(_rand((3, 4), d, rng), _rand((3,), d, rng), (3,), (5,), 0)],
      operands=(0, 1), ops=("as_strided_scatter",),
      layouts=("contig",)),  # a strided input's clone keeps its strides: as_strided reads them
    E("unique_consecutive", et.unique_consecutive, _np_unique_consecutive, _uc_samples,
      dtypes=FLOAT + INT, differentiable=False,
      out_dtype=lambda s, d: d if not (s.kwargs or len(s.args) > 1) else tuple(
          [d] + ["int64"] * (len(_np_unique_consecutive(*s.args, **s.kwargs)) - 1))),
    E("put", et.put, _np_put,
      lambda d, rng: [_S(_rand((3, 4), d, rng), np.asarray([0, 5, -1], np.int64),
                         _rand((3,), d, rng), grad=(0, 2)),
                      _S(_rand((3, 4), d, rng), np.asarray([[0, 0], [11, 3]], np.int64),
                         _rand((2, 2), d, rng), True, grad=(0, 2))],
      dtypes=FLOAT + INT, inplace="put_", ops=("put",)),
    E("unravel_index", et.unravel_index,
      lambda i, s: tuple(np.asarray(c, np.int64) for c in np.unravel_index(i % np.prod(s), s)),
      lambda d, rng: [_S(np.asarray([4, 11, 0, 7], np.int64), (3, 4)),
                      _S(np.asarray([[5, 23], [-1, 12]], np.int64), (2, 3, 4)),
                      _S(np.asarray(5, np.int64), 7)],
      dtypes=("int64",), method=None, differentiable=False,
      out_dtype=lambda s, d: tuple(["int64"] * (1 if isinstance(s.args[1], int) else
                                                len(s.args[1])))),
    E("index_reduce", et.index_reduce, _np_index_reduce, _ir_samples, operands=(0, 3),
      inplace="index_reduce_", ops=("scatter_reduce",)),
    E("scatter_reduce_", lambda x, *a, **k: x.clone().scatter_reduce_(*a, **k),
      _np_scatter_reduce, _sr_samples, method=None, operands=(0, 3),
      ops=("scatter_reduce", "copy_")),
    E("fill_diagonal_", lambda x, *a, **k: x.clone().fill_diagonal_(*a, **k),
      _np_fill_diagonal,
      lambda d, rng: [_S(_rand((3, 4), d, rng), 2.0), _S(_rand((7, 3), d, rng), -1.0, True),
                      _S(_rand((3, 3, 3), d, rng), 0.5)],
      dtypes=FLOAT + INT, method=None, ops=("put_",)),
]

EXTRA_ENTRIES: list[OpEntry] = (_LINALG + _SPECIAL + _EXTRA + _POINTWISE + _COMPLEX_OPS + _STATS +
                                 _SHAPE + _EIG_STFT)

# registry ops of these modules exercised through other entries' ``ops`` or elsewhere
EXTRA_NON_TABLE_OPS: set[str] = {"binomial"}  # a sampler: tests/parity checks its moments
