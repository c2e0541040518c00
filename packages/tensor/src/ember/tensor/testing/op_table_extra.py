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

from ._harness import FLOAT, INT, OpEntry, Sample, _rand

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
        a @ a.mT + 3 * et.eye(a.shape[-1], dtype=a.dtype), upper=upper),
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
      method=None, differentiable=False),
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
      method=None, differentiable=False),
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
                      _S(_mat((2, 3, 3), d, rng, 0.5), _rand((3, 1), d, rng))],
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
      lambda d, rng: [_S(_rand((2, 3), d, rng), _rand((3, 2), d, rng))], operands=(0, 1),
      ops=("mul",)),
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
    E("nan_to_num", et.nan_to_num, _np_nan_to_num, _nan_samples, ops=("where",),
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
      ops=("cummax_indices", "gather")),
    E("cummin", et.cummin, lambda x, dim: _np_cummax(x, dim, False),
      lambda d, rng: [_S(_rand((3, 4), d, rng, distinct=True), 1)],
      dtypes=FLOAT + INT, out_dtype=_dtypes("same", "int64"),
      ops=("cummin_indices", "gather")),
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

EXTRA_ENTRIES: list[OpEntry] = _LINALG + _SPECIAL + _EXTRA

# registry ops of these modules exercised through other entries' ``ops`` or elsewhere
EXTRA_NON_TABLE_OPS: set[str] = set()
