"""``torch.linalg`` (and the ``torch.*`` linear-algebra names built on it): the registry ops.

Primitives (one registry op each, with a derivative in ember-autograd's
``derivatives_linalg.py``): ``linalg_det``, ``linalg_slogdet``, ``linalg_inv``,
``linalg_solve``, ``linalg_solve_triangular``, ``linalg_cholesky``, ``linalg_qr``,
``linalg_eigh``, ``linalg_eig``, ``linalg_svd``, ``linalg_pinv``, ``linalg_matrix_exp``,
``linalg_vector_norm`` and ``linalg_lu_factor_ex``; ``linalg_ldl_factor_ex``,
``linalg_ldl_solve``, ``linalg_matrix_rank`` and ``geqrf`` are not differentiable (as in
PyTorch). Everything else (``matrix_norm``, ``cond``, ``lstsq``, ``lu_solve``, ``multi_dot``,
``householder_product``, ...) is composed of these and of ember's other ops, so its gradient
comes from theirs.

Every op takes batches (``(*, m, n)``) and runs on NumPy's LAPACK (``numpy.linalg``'s gufuncs,
called at the input's precision (:class:`_NumPyLinalg`), with SciPy's LAPACK wrappers, imported
lazily, for the QR and LDL factorizations and the triangular solve) or CuPy's cuSOLVER
(``cupy.linalg``, ``cupyx.scipy.linalg``). float32 and float64, and complex64 / complex128
where NumPy's LAPACK takes them (the factorizations, ``det``, ``inv``, ``solve``, ``pinv``,
``matrix_exp``, the norms). ``eig`` has no CUDA kernel: CuPy has no general eigensolver.
"""
from __future__ import annotations

import builtins
import functools
import math
import numbers

import numpy as np
from numpy.linalg import _umath_linalg as _G

from . import _dtype as D
from ._checks import scalar_type_name
from ._complex import conj
from ._creation import eye, full_like, ones_like, tril, triu, zeros
from ._fpstate import built_state, call_in_state, quiet
from ._grad_mode import grad_wanted
from ._indexing import index_select
from ._linalg import _add_scaled, diag, dot, matmul, outer, tensordot
from ._pointwise import add, log, mul, where
from ._reduction import _dims, _on_kernel, _return_type, amax, amin
from ._reduction import sum as _sum
from ._registry import array_module, defop, with_out, write_out
from ._scatter import gather
from ._shape import cat, diagonal_scatter, meshgrid, narrow, stack
from ._tensor import Tensor, _wrap_dim
from .kernels import get as _kernel

_make = Tensor._make
_abs, _max, _min = builtins.abs, builtins.max, builtins.min
# dtypes compared as dtype objects (a comparison with a scalar type, ``dt == np.float16``,
# converts the type to a dtype on every call)
_float16, _float32, _complex64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)

__all__ = [
    # torch.* names
    "det", "logdet", "slogdet", "inverse", "cholesky", "cholesky_inverse", "cholesky_solve",
    "qr", "svd", "pinverse", "matrix_power", "matrix_exp", "lu", "lu_solve", "lu_unpack",
    "triangular_solve", "geqrf", "orgqr", "ormqr", "chain_matmul", "nuclear_norm",
    "frobenius_norm", "vdot", "inner", "kron", "diag_embed", "diagflat", "cdist", "dist",
    "cartesian_prod", "block_diag", "adjoint", "addr", "vander", "svd_lowrank", "pca_lowrank",
]


class LinAlgError(RuntimeError):
    """Raised for numerically invalid input (a singular matrix, one not positive-definite):
    ``torch.linalg.LinAlgError``."""


class linalg_return_types:
    """Named tuple types of ``ember.tensor.linalg``'s multi-output ops."""

    slogdet = _return_type("linalg_slogdet", ["sign", "logabsdet"])
    qr = _return_type("linalg_qr", ["Q", "R"])
    eigh = _return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
    eig = _return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
    svd = _return_type("linalg_svd", ["U", "S", "Vh"])
    lu_factor = _return_type("linalg_lu_factor", ["LU", "pivots"])
    lu_factor_ex = _return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
    lu = _return_type("linalg_lu", ["P", "L", "U"])
    lstsq = _return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
    inv_ex = _return_type("linalg_inv_ex", ["inverse", "info"])
    cholesky_ex = _return_type("linalg_cholesky_ex", ["L", "info"])
    solve_ex = _return_type("linalg_solve_ex", ["result", "info"])
    ldl_factor = _return_type("linalg_ldl_factor", ["LD", "pivots"])
    ldl_factor_ex = _return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
    # torch.* forms
    torch_slogdet = _return_type("slogdet", ["sign", "logabsdet"])
    torch_qr = _return_type("qr", ["Q", "R"])
    torch_svd = _return_type("svd", ["U", "S", "V"])
    lu_unpack = _return_type("lu_unpack", ["P", "L", "U"])
    triangular_solve = _return_type("triangular_solve", ["solution", "cloned_coefficient"])
    geqrf = _return_type("geqrf", ["a", "tau"])


RT = linalg_return_types



# ---------------------------------------------------------------------------- checks
def _check_float(op: str, d, what: str = "input", *, kernel: str | None = None,
                 half_kernel: str | None = None, complex_ok: bool = False) -> None:
    """float32 and float64 (and complex64 / complex128 when ``complex_ok``), with PyTorch's
    error for the others: where PyTorch checks the dtype itself, RuntimeError (``Expected a
    floating point ...``, ``Low precision ...``); where its LAPACK kernel's dispatch refuses
    it, NotImplementedError naming the kernel: ``kernel`` for an op with no dtype check of its
    own, ``half_kernel`` for one whose check lets float16 through to the kernel."""
    dt = d.dtype
    if (dt.kind == "f" and dt != _float16) or (complex_ok and dt.kind == "c"):
        return
    kernel = kernel or (half_kernel if dt == _float16 else None)
    if kernel is not None:
        raise NotImplementedError(f"{op}: \"{kernel}\" not implemented for "
                                  f"'{scalar_type_name(dt)}'")
    if dt.kind == "f":
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got Half")
    raise RuntimeError(f"{op}: Expected a floating point or complex tensor as {what}. "
                       f"Got {scalar_type_name(dt)}")


def _no_complex(op: str, d) -> None:
    """PyTorch takes complex input here; ember does not yet."""
    if d.dtype.kind == "c":
        raise NotImplementedError(f"{op}: complex inputs ({scalar_type_name(d.dtype)}) are not "
                                  "supported by ember yet")


def _check_matrix(op: str, d, name: str = "A") -> None:
    if d.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")


def _check_square(op: str, d, name: str = "A") -> None:
    if d.ndim < 2:
        _check_matrix(op, d, name)
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                           f"{d.shape[-2]} by {d.shape[-1]} matrices")


def _check_same(op: str, a, b) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{scalar_type_name(a.dtype)} and B of type "
                           f"{scalar_type_name(b.dtype)} instead")
    if type(a) is not type(b):
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device")


def _xp(d):
    return array_module(d)


def _singular(op: str, what: str = "") -> LinAlgError:
    return LinAlgError(f"{op}: The diagonal element is zero, the {what or 'inversion'} could "
                       "not be completed because the input matrix is singular.")


def _T(a):
    return a.swapaxes(-1, -2)


def _H(xp, a):
    """The conjugate transpose of the last two dims (the transpose of a real array)."""
    return xp.conj(_T(a)) if a.dtype.kind == "c" else _T(a)


def _real_dtype(dt):
    """The dtype of a complex dtype's parts (a real dtype itself)."""
    return np.empty(0, dt).real.dtype


def _own(xp, r):
    return xp.ascontiguousarray(r)


def _host(a):
    """``a`` on the host. The LAPACK routines CuPy lacks (geev, sytrf, sytrs) run there, and
    their results go back to the input's device (:func:`_on_device_of`), as PyTorch runs
    MAGMA's host-side geev for a CUDA ``linalg.eig``."""
    return a if isinstance(a, np.ndarray) else a.get()


def _on_device_of(a, *results) -> tuple:
    """Tensors of the host arrays ``results``, on the device of the array ``a``."""
    if isinstance(a, np.ndarray):
        return tuple([_make(r) for r in results])
    xp = _xp(a)
    with a.device:
        return tuple([_make(xp.asarray(r)) for r in results])


# ---------------------------------------------------------------------------- NumPy's LAPACK
def _lapack_state(message: str):
    """NumPy's floating-point error state in which an invalid operation (the flag NumPy's
    LAPACK gufuncs raise for a failed factorization) raises ``numpy.linalg.LinAlgError``
    (``message``) and everything else is ignored: ``numpy.linalg``'s own ``errstate``,
    built once (see ``_fpstate``)."""
    def fail(err, flag):
        raise np.linalg.LinAlgError(message)

    return built_state(call=fail, invalid="call", over="ignore", divide="ignore",
                       under="ignore")


class _NumPyLinalg:
    """``numpy.linalg``'s functions that ember calls, at the input's own precision: NumPy's
    LAPACK gufuncs (``numpy.linalg._umath_linalg``) called directly. ``numpy.linalg`` computes
    float32 and complex64 in float64 / complex128 (its ``_commonType``) and copies back; the
    gufuncs have float32 and complex64 loops (LAPACK's ``s``/``c`` routines, as PyTorch's
    CPU kernels call), so these take a single-precision input as it is, batches included,
    and skip the wrappers' per-call checks that ember's own checks make redundant. Errors are
    the same ``numpy.linalg.LinAlgError``s. :func:`_la` picks this or CuPy's ``linalg``."""

    _singular = _lapack_state("Singular matrix")
    _nonposdef = _lapack_state("Matrix is not positive definite")
    _eig = _lapack_state("Eigenvalues did not converge")
    _svd = _lapack_state("SVD did not converge")

    _call = staticmethod(call_in_state)

    def det(self, a):
        return _G.det(a)

    def slogdet(self, a):
        return _G.slogdet(a)

    def inv(self, a):
        return self._call(self._singular, _G.inv, a)

    def solve(self, a, b):
        return self._call(self._singular, _G.solve, a, b)

    def cholesky(self, a):
        """The lower Cholesky factor of each matrix of ``a`` (of its lower triangle), by
        LAPACK's potrf in place on one C-order copy: each matrix's memory is, in Fortran
        order, its transpose, whose upper triangle is the lower one read, and the upper
        factor potrf writes there (``clean``: zeros below it) is, read back in C order, the
        lower factor. NumPy's gufunc copies each matrix into and out of a Fortran-order
        buffer around the same routine, 2x slower at 512 x 512."""
        out = np.array(a, order="C")
        n = a.shape[-1]
        if out.size:
            potrf = _lapack("potrf", a.dtype)
            for m in out.reshape((-1, n, n)):
                c, info = potrf(m.T, lower=0, clean=1, overwrite_a=1)
                if info > 0:
                    raise np.linalg.LinAlgError("Matrix is not positive definite")
                if not np.may_share_memory(c, m):  # (a wrapper that copied after all)
                    m.T[...] = c
        return out

    def eigh(self, a, UPLO="L"):
        return self._call(self._eig, _G.eigh_lo if UPLO == "L" else _G.eigh_up, a)

    def eigvalsh(self, a, UPLO="L"):
        return self._call(self._eig, _G.eigvalsh_lo if UPLO == "L" else _G.eigvalsh_up, a)

    def eig(self, a):
        if a.dtype == _complex64:
            return self._cgeev(a, True)
        return self._call(self._eig, _G.eig, a)

    def eigvals(self, a):
        if a.dtype == _complex64:
            return self._cgeev(a, False)[0]
        return self._call(self._eig, _G.eigvals, a)

    @staticmethod
    def _cgeev(a, vectors: bool):
        """The eigenvalues (and right eigenvectors) of each matrix of the complex64 ``a`` by
        LAPACK's cgeev (SciPy's wrapper), as PyTorch's: NumPy's gufuncs have no complex64
        loop and would run zgeev on a complex128 copy (1.9x slower at 512 x 512)."""
        n = a.shape[-1]
        geev = _lapack("geev", a.dtype)
        want = int(vectors)
        lwork = int(_lapack("geev_lwork", a.dtype)(n, compute_vl=0, compute_vr=want)[0].real)
        w = np.empty(a.shape[:-1], a.dtype)
        v = np.empty(a.shape, a.dtype) if vectors else None
        for i, m in enumerate(a.reshape((-1, n, n))):
            wi, _, vr, info = geev(m, compute_vl=0, compute_vr=want, lwork=lwork)
            if info > 0:
                raise np.linalg.LinAlgError("Eigenvalues did not converge")
            w.reshape((-1, n))[i] = wi
            if vectors:
                v.reshape((-1, n, n))[i] = vr
        return w, v

    def svd(self, a, full_matrices=True, compute_uv=True):
        if not compute_uv:
            return self._call(self._svd, _G.svd, a)
        return self._call(self._svd, _G.svd_f if full_matrices else _G.svd_s, a)

    def qr(self, a, mode="reduced"):
        """``numpy.linalg.qr``'s results (``r`` alone for mode ``"r"``) from LAPACK's geqrf
        and orgqr / ungqr (:func:`_geqrf_host`), at the input's precision: NumPy's QR has
        no single-precision loops, so it factors a float32 input in float64 and casts back,
        twice the work (and its wrapper's checks and copies on every call)."""
        m, n = a.shape[-2:]
        if not a.size:  # (LAPACK takes no empty matrix; NumPy's shapes and identity Q,
            # column-major as the rest)
            res = np.linalg.qr(a, mode=mode)
            if mode == "r":
                return _T(np.ascontiguousarray(_T(res)))
            return tuple([_T(np.ascontiguousarray(_T(x))) for x in res])
        k = _min(m, n)
        hs, taus = _geqrf_host(a)
        q = None
        if mode != "r":
            cols = m if mode == "complete" else k
            orgqr = _lapack("ungqr" if a.dtype.kind == "c" else "orgqr", a.dtype)
            lwork = _orgqr_lwork(a.dtype, m, cols, k)
            # column-major, as orgqr writes it (and as PyTorch's Q is): no transposing copy
            qf = np.empty((math.prod(a.shape[:-2]), cols, m), a.dtype).swapaxes(-1, -2)
            for h, tau, qi in zip(hs.reshape((-1, m, n)), taus.reshape((-1, k)), qf):
                if cols > n:  # the complete Q of a tall matrix: zero reflectors appended
                    h = np.asfortranarray(np.concatenate([h, np.zeros((m, cols - n), h.dtype)],
                                                         1))
                qi[...] = orgqr(h[:, :cols], tau, lwork=lwork)[0]
            q = qf.reshape(a.shape[:-2] + (m, cols))
        # R: the upper triangle of the first rows, column-major (its transpose's rows are
        # contiguous in the factors; the reflectors above that transpose's diagonal zeroed)
        rt = np.ascontiguousarray(hs[..., :k if mode != "complete" else m, :].swapaxes(-1, -2))
        _kernel("triangle_zero", np)(rt.reshape((-1,) + rt.shape[-2:]), 0, False)
        r = rt.swapaxes(-1, -2)
        return r if q is None else (q, r)

    def __getattr__(self, name):  # the rest (lstsq ...): numpy.linalg's own
        return getattr(np.linalg, name)


_NP_LINALG = _NumPyLinalg()


def _la(xp):
    """The ``linalg`` namespace for the array module ``xp``: :class:`_NumPyLinalg` for NumPy,
    ``cupy.linalg`` for CuPy."""
    return _NP_LINALG if xp is np else xp.linalg


# ---------------------------------------------------------------------------- det / inv / solve
@defop("linalg_det", out=True, out_casting="no")
def linalg_det(A: Tensor) -> Tensor:
    a = A._data
    _check_square("linalg.det", a)
    _check_float("linalg.det", a, half_kernel="lu_cpu", complex_ok=True)
    xp = _xp(a)
    with quiet():  # a determinant past the dtype's range is inf, silently
        return _make(xp.asarray(_la(xp).det(a)).astype(a.dtype, copy=False))


@defop("linalg_slogdet", out=True)
def linalg_slogdet(A: Tensor):
    a = A._data
    _check_square("linalg.slogdet", a)
    _check_float("linalg.slogdet", a, complex_ok=True)
    xp = _xp(a)
    s, ld = _la(xp).slogdet(a)
    return (_make(xp.asarray(s).astype(a.dtype, copy=False)),
            _make(xp.asarray(ld).astype(_real_dtype(a.dtype), copy=False)))


@defop("linalg_inv", out=True, out_casting="no")
def linalg_inv(A: Tensor) -> Tensor:
    a = A._data
    _check_square("linalg.inv", a)
    _check_float("linalg.inv", a, complex_ok=True)
    xp = _xp(a)
    try:
        r = _la(xp).inv(a)
    except np.linalg.LinAlgError:
        raise _singular("linalg.inv") from None
    return _make(_own(xp, r).astype(a.dtype, copy=False))


def _is_vector_rhs(a, b) -> bool:
    """PyTorch's rule: ``B`` is a (batch of) vector(s) when it is 1-d or has the shape of
    ``A`` without its last dim."""
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


def _batch_shape(op: str, s1, s2):
    s1, s2 = tuple(s1), tuple(s2)
    if s1 == s2:  # (NumPy's broadcast_shapes costs ~1.5 us)
        return s1
    try:
        return tuple(np.broadcast_shapes(s1, s2))
    except ValueError:
        raise RuntimeError(f"{op}: The size of tensor a must match the size of tensor b at a "
                           f"batch dimension (batch shapes {list(s1)} and {list(s2)})") from None


def _to_batch(xp, a, batch: tuple, core: int = 2):
    """``a`` broadcast to the batch shape ``batch`` before its last ``core`` dims: ``a``
    itself where it has that shape already (NumPy's ``broadcast_to`` is a Python function of
    about ten calls, for a view of the same shape)."""
    lead = a.ndim - core
    if a.shape[:lead] == batch:
        return a
    return xp.broadcast_to(a, batch + a.shape[lead:])


def _solve_arrays(op: str, a, b, left: bool = True):
    """``A^{-1} B`` (``B A^{-1}`` when not ``left``) with PyTorch's vector rule and batch
    broadcasting."""
    _check_square(op, a)
    if a.dtype != _float16:  # float16 passes PyTorch's dtype check, its kernel refuses it
        _check_float(op, a, complex_ok=True)
    _check_same(op, a, b)
    _check_float(op, a, half_kernel="lu_cpu", complex_ok=True)
    xp = _xp(a)
    vec = _is_vector_rhs(a, b)
    if not left:
        if vec:
            raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not "
                               "supported for left=False. In this case linalg.solve is "
                               "equivalent to B / A.squeeze(-1)")
        return _T(_solve_arrays(op, _T(a), _T(b), True))
    bm = b[..., None] if vec else b
    if bm.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if bm.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({a.shape[-2]}x{a.shape[-1]} and {bm.shape[-2]}x{bm.shape[-1]})")
    batch = _batch_shape(op, a.shape[:-2], bm.shape[:-2])
    a2, b2 = _to_batch(xp, a, batch), _to_batch(xp, bm, batch)
    try:
        r = _la(xp).solve(a2, b2)
    except np.linalg.LinAlgError:
        raise _singular(op, "solve") from None
    r = _own(xp, r).astype(a.dtype, copy=False)
    return r[..., 0] if vec else r


@defop("linalg_solve", out=True, out_casting="no")
def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    return _make(_solve_arrays("linalg.solve", A._data, B._data, left))


@functools.cache
def _lapack(name: str, dt):
    """SciPy's LAPACK routine ``name`` (``trtrs``, ``getrf`` ...) for the dtype ``dt``, looked
    up once (SciPy is imported on first use, not at ember's import). Called directly:
    scipy.linalg's wrappers around them add checks (finite values, shapes) and copies that
    ember's own checks make redundant."""
    from scipy.linalg import lapack

    return getattr(lapack, _LAPACK_PREFIX[dt.char] + name)


_LAPACK_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}


def _tri_solve_arrays(xp, a, b, upper: bool, left: bool, unitriangular: bool):
    if not left:
        return _T(_tri_solve_arrays(xp, _T(a), _T(b), not upper, True, unitriangular))
    trtrs = _lapack("trtrs", a.dtype) if xp is np and a.ndim == 2 and b.ndim == 2 else None
    if trtrs is not None and a.size:
        # LAPACK reads only the triangle (its diagonal taken as ones when unitriangular), so
        # nothing is copied: a column-major A (an LU factor's) is LAPACK's own layout, and of
        # a row-major A LAPACK solves with the transpose, A^T being A's memory read by columns
        if a.flags.f_contiguous:
            x, info = trtrs(a, b, lower=not upper, trans=0, unitdiag=unitriangular)
        else:
            x, info = trtrs(_T(a), b, lower=upper, trans=1, unitdiag=unitriangular)
        if info > 0:
            raise _singular("linalg.solve_triangular", "solve")
        return x
    batch = _batch_shape("linalg.solve_triangular", a.shape[:-2], b.shape[:-2])
    t = xp.triu(a) if upper else xp.tril(a)
    if unitriangular:
        n = a.shape[-1]
        idx = xp.arange(n)
        t = t.copy()
        t[..., idx, idx] = 1
    t, b = _to_batch(xp, t, batch), _to_batch(xp, b, batch)
    with quiet():
        try:
            return _la(xp).solve(t, b)
        except np.linalg.LinAlgError:
            raise _singular("linalg.solve_triangular", "solve") from None


@defop("linalg_solve_triangular", out=True, out_casting="no")
def linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                            unitriangular: bool = False) -> Tensor:
    a, b = A._data, B._data
    op = "linalg.solve_triangular"
    _check_square(op, a)
    _check_float(op, a, kernel="triangular_solve_cpu", complex_ok=True)
    _check_same(op, a, b)
    _check_matrix(op, b, "B")
    k = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != k:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{a.shape[-1]} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    xp = _xp(a)
    r = _tri_solve_arrays(xp, a, b, upper, left, unitriangular)
    return _make(_own(xp, r).astype(a.dtype, copy=False))


# ---------------------------------------------------------------------------- factorizations
@defop("linalg_cholesky", out=True, out_casting="no")
def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    a = A._data
    _check_square("linalg.cholesky", a)
    _check_float("linalg.cholesky", a, half_kernel="cholesky_cpu", complex_ok=True)
    xp = _xp(a)
    try:
        r = _la(xp).cholesky(a)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.cholesky: The factorization could not be completed because "
                          "the input is not positive-definite.") from None
    if xp is not np and bool(xp.isnan(r).any()):
        raise LinAlgError("linalg.cholesky: The factorization could not be completed because "
                          "the input is not positive-definite.")
    r = _own(xp, r).astype(a.dtype, copy=False)
    return _make(_own(xp, _H(xp, r)) if upper else r)


@defop("linalg_qr", out=True)
def linalg_qr(A: Tensor, mode: str = "reduced"):
    a = A._data
    _check_matrix("linalg.qr", a)
    _check_float("linalg.qr", a, half_kernel="geqrf_cpu", complex_ok=True)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    xp = _xp(a)
    # (fresh arrays, in LAPACK's column-major order on the CPU as PyTorch's)
    if mode == "r":
        r = _la(xp).qr(a, mode="r")
        return _make(xp.zeros((0,), a.dtype)), _make(r.astype(a.dtype, copy=False))
    q, r = _la(xp).qr(a, mode=mode)
    return _make(q.astype(a.dtype, copy=False)), _make(r.astype(a.dtype, copy=False))


def _check_eigh(a, UPLO: str) -> None:
    _check_square("linalg.eigh", a)
    _check_float("linalg.eigh", a, kernel="linalg_eigh_cpu", complex_ok=True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got "
                           f"{UPLO}")


def _eigvalsh(A: Tensor, UPLO: str) -> Tensor:
    """``linalg.eigvalsh`` where no gradient is wanted: the eigenvalues alone (LAPACK's
    ``syevd`` without vectors, at the input's precision), as PyTorch's ``eigvalsh``."""
    a = A._data
    _check_eigh(a, UPLO)
    xp = _xp(a)
    w = _la(xp).eigvalsh(a, UPLO=UPLO)
    return _make(_own(xp, w).astype(_real_dtype(a.dtype), copy=False))


@defop("linalg_eigh", out=True)
def linalg_eigh(A: Tensor, UPLO: str = "L"):
    a = A._data
    _check_eigh(a, UPLO)
    xp = _xp(a)
    # at the input's precision, as PyTorch's syevd (float32 2.2x faster than numpy.linalg's
    # float64 at 512 x 512); the eigenvectors' signs are LAPACK's arithmetic's
    w, v = _la(xp).eigh(a, UPLO=UPLO)
    return (_make(_own(xp, w).astype(_real_dtype(a.dtype), copy=False)),
            _make(_own(xp, v).astype(a.dtype, copy=False)))


def _check_eig(op: str, a, finite: bool = True) -> None:
    """``linalg.eig``'s (and ``eigvals``') checks, in PyTorch's order; ``finite``: refuse
    infinities and NaNs."""
    _check_matrix(op, a)
    _check_square(op, a)
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"{op}: Unknown Complex ScalarType for {scalar_type_name(a.dtype)}")
    if a.dtype == _float16:
        raise NotImplementedError(f"{op}: \"linalg_eig_out_cpu\" not implemented for 'Half'")
    if finite and a.size and not bool(_xp(a).isfinite(a).all()):
        raise RuntimeError(f"torch.{op}: input tensor should not contain infs or NaNs.")


@defop("linalg_eig", out=True)
def linalg_eig(A: Tensor):
    a = A._data
    _check_eig("linalg.eig", a)
    cdt = np.complex64 if a.dtype in (_float32, _complex64) else np.complex128
    if a.size == 0:
        return _on_device_of(a, np.zeros(a.shape[:-1], cdt), np.zeros(a.shape, cdt))
    # LAPACK geev at the input's precision (sgeev for float32, 2.3x faster than
    # numpy.linalg's float64 at 512 x 512): unit-norm eigenvectors, each up to a phase, as
    # PyTorch's
    w, v = _NP_LINALG.eig(_host(a))
    return _on_device_of(a, np.ascontiguousarray(w, dtype=cdt), np.ascontiguousarray(v, dtype=cdt))


def _eigvals(A: Tensor) -> Tensor:
    """``linalg.eigvals`` where no gradient is wanted: the eigenvalues alone (LAPACK's
    ``geev`` without vectors, at the input's precision), as PyTorch's ``eigvals``; a matrix
    with an infinity or a NaN has NaN eigenvalues."""
    a = A._data
    _check_eig("linalg.eigvals", a, finite=False)
    cdt = np.complex64 if a.dtype in (_float32, _complex64) else np.complex128
    h = _host(a)
    if h.size == 0:
        return _on_device_of(a, np.zeros(h.shape[:-1], cdt))[0]
    bad = ~np.isfinite(h).all(axis=(-2, -1))
    if bad.any():
        h = np.where(bad[..., None, None], 0, h)
    w = np.asarray(_NP_LINALG.eigvals(h)).astype(cdt)
    w[bad] = np.nan
    return _on_device_of(a, w)[0]


def _check_svd(a, driver) -> None:
    _check_matrix("linalg.svd", a)
    _check_float("linalg.svd", a, half_kernel="linalg_svd_cpu", complex_ok=True)
    if driver is not None and _xp(a) is np:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")


def _svdvals(A: Tensor, driver=None) -> Tensor:
    """The singular values of ``A`` (``linalg.svdvals``): where a gradient is wanted,
    :func:`linalg_svd`'s (its gradient needs the vectors); else the values alone (LAPACK's
    ``gesdd`` without vectors), as PyTorch's ``svdvals``."""
    if grad_wanted(A):
        return linalg_svd(A, False, driver=driver)[1]
    a = A._data
    _check_svd(a, driver)
    xp = _xp(a)
    if a.size == 0:
        return _make(xp.zeros(a.shape[:-2] + (_min(a.shape[-2:]),), _real_dtype(a.dtype)))
    s = _la(xp).svd(a, compute_uv=False)
    return _make(_own(xp, s).astype(_real_dtype(a.dtype), copy=False))


@defop("linalg_svd", out=True)
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    a = A._data
    _check_svd(a, driver)
    xp = _xp(a)
    m, n = a.shape[-2:]
    if a.size == 0:
        k = _min(m, n)
        bs = a.shape[:-2]
        um, vn = (m, n) if full_matrices else (k, k)
        u = xp.broadcast_to(xp.eye(m, um, dtype=a.dtype), bs + (m, um)).copy()
        vh = xp.broadcast_to(xp.eye(vn, n, dtype=a.dtype), bs + (vn, n)).copy()
        return _make(u), _make(xp.zeros(bs + (k,), _real_dtype(a.dtype))), _make(vh)
    u, s, vh = _la(xp).svd(a, full_matrices=full_matrices)
    return (_make(_own(xp, u).astype(a.dtype, copy=False)),
            _make(_own(xp, s).astype(_real_dtype(a.dtype), copy=False)),
            _make(_own(xp, vh).astype(a.dtype, copy=False)))


def _tols(xp, s, atol, rtol, shape):
    """PyTorch's cut-off for pinv / matrix_rank: ``max(atol, rtol * sigma_max)``."""
    eps = float(np.finfo(s.dtype).eps)

    def arr(v):
        if isinstance(v, Tensor):
            return v._data
        return v

    atol, rtol = arr(atol), arr(rtol)
    if rtol is None:
        rtol = eps * _max(shape[-2], shape[-1]) if atol is None else 0.0
    atol = 0.0 if atol is None else atol
    smax = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,),
                                                                       s.dtype)
    atol = xp.asarray(atol, dtype=s.dtype)
    rtol = xp.asarray(rtol, dtype=s.dtype)
    if atol.ndim:
        atol = atol[..., None]
    if rtol.ndim:
        rtol = rtol[..., None]
    return xp.maximum(atol, rtol * smax)


@defop("linalg_pinv", out=True)
def linalg_pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    a = A._data
    _check_matrix("linalg.pinv", a)
    _check_float("linalg.pinv", a, complex_ok=True)
    xp = _xp(a)
    m, n = a.shape[-2:]
    if a.size == 0:
        return _make(xp.zeros(a.shape[:-2] + (n, m), a.dtype))
    if hermitian:
        w, v = _la(xp).eigh(a)
        tol = _tols(xp, xp.abs(w), atol, rtol, a.shape)
        winv = xp.where(xp.abs(w) > tol, 1 / xp.where(w == 0, 1, w), 0)
        r = (v * winv[..., None, :]) @ _H(xp, v)
    else:
        u, s, vh = _la(xp).svd(a, full_matrices=False)
        tol = _tols(xp, s, atol, rtol, a.shape)
        sinv = xp.where(s > tol, 1 / xp.where(s == 0, 1, s), 0)
        r = (_H(xp, vh) * sinv[..., None, :]) @ _H(xp, u)
    return _make(_own(xp, r).astype(a.dtype, copy=False))


@defop("linalg_matrix_rank", out=True, differentiable=False)
def linalg_matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    a = A._data
    _check_matrix("linalg.matrix_rank", a)
    _check_float("linalg.matrix_rank", a, complex_ok=True)
    xp = _xp(a)
    if a.size == 0:
        return _make(xp.zeros(a.shape[:-2], np.int64))
    s = xp.abs(_la(xp).eigvalsh(a)) if hermitian else _la(xp).svd(a, compute_uv=False)
    tol = _tols(xp, s, atol, rtol, a.shape)
    return _make(xp.asarray((s > tol).sum(-1)).astype(np.int64))


def _expm(xp, a):
    if xp is np:
        try:
            from scipy.linalg import expm
        except ImportError:  # pragma: no cover
            expm = None
        if expm is not None:
            return expm(a)
    else:
        from cupyx.scipy.linalg import expm

        if a.ndim == 2:
            return expm(a)
    return _expm_pade(xp, a)


def _expm_pade(xp, a):
    """Scaling and squaring with a degree-13 Padé approximant (batched, any array module)."""
    b = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.)
    norm = xp.abs(a).sum(-2).max(-1) if a.size else xp.zeros(a.shape[:-2])
    nmax = float(norm.max()) if norm.size else 0.0
    s = _max(0, int(math.ceil(math.log2(nmax / 5.371920351148152)))) if nmax > 0 else 0
    a = a / (2.0 ** s)
    n = a.shape[-1]
    ident = xp.broadcast_to(xp.eye(n, dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + \
        b[0] * ident
    r = _la(xp).solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r


@defop("linalg_matrix_exp", out=True)
def linalg_matrix_exp(A: Tensor) -> Tensor:
    a = A._data
    _check_square("linalg.matrix_exp", a)
    _check_float("linalg.matrix_exp", a, complex_ok=True)
    xp = _xp(a)
    if a.size == 0:
        return _make(a.copy())
    if xp is not np and a.ndim > 2:
        r = xp.stack([_expm(xp, m) for m in a.reshape((-1,) + a.shape[-2:])])
        r = r.reshape(a.shape)
    else:
        r = _expm(xp, a)
    return _make(_own(xp, r).astype(a.dtype, copy=False))


def _lu_batch(xp, a, pivot: bool):
    """LAPACK ``getrf`` on each matrix of ``a``: (LU, 1-based int32 pivots, int32 info). LU
    holds each matrix in column-major order (LAPACK's, and the strides of PyTorch's LU)."""
    m, n = a.shape[-2:]
    k = _min(m, n)
    batch = a.shape[:-2]
    flat = a.reshape((-1, m, n))
    lus = xp.empty((flat.shape[0], n, m), a.dtype).transpose(0, 2, 1)
    pivs = np.empty((flat.shape[0], k), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    if not pivot:
        if xp is not np:
            raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on "
                               "the CUDA backend of ember")
        for i, mat in enumerate(flat):
            lu = mat.astype(a.dtype, copy=True)
            for j in range(k):
                if lu[j, j] == 0:
                    info[i] = j + 1 if info[i] == 0 else info[i]
                    continue
                lu[j + 1:, j] /= lu[j, j]
                lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
            lus[i] = lu
            pivs[i] = np.arange(1, k + 1, dtype=np.int32)
        return lus.reshape(a.shape), pivs.reshape(batch + (k,)), info.reshape(batch)
    if xp is np:
        # one transposing copy in; each matrix factored in place (a column-major matrix of
        # its dtype is what the wrapper takes without a copy of its own)
        getrf = _lapack("getrf", a.dtype)
        lus[...] = flat
        for i, mat in enumerate(lus):
            pivs[i], info[i] = getrf(mat, overwrite_a=1)[1:]
        pivs += 1
    else:
        import warnings

        from cupyx.scipy.linalg import lu_factor

        for i, mat in enumerate(flat):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lu, piv = lu_factor(mat)
            lus[i] = lu
            pivs[i] = xp.asnumpy(piv[:k]) + 1
            d = xp.asnumpy(xp.diagonal(lu))[:k]
            zero = np.nonzero(d == 0)[0]
            info[i] = zero[0] + 1 if zero.size else 0
    return lus.reshape(a.shape), pivs.reshape(batch + (k,)), info.reshape(batch)


@defop("linalg_lu_factor_ex", out=True)
def linalg_lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    a = A._data
    _check_matrix("linalg.lu_factor_ex", a)
    _check_float("linalg.lu_factor_ex", a, kernel="lu_cpu", complex_ok=True)
    xp = _xp(a)
    lu, piv, info = _lu_batch(xp, a, pivot)
    if check_errors and info.size and (info > 0).any():
        bad = int(info.reshape(-1)[np.nonzero(info.reshape(-1))[0][0]])
        raise LinAlgError(f"linalg.lu_factor_ex: U[{bad},{bad}] is zero and using it on "
                          "lu_solve would result in a division by zero. If you still want to "
                          "perform the factorization, consider calling linalg.lu(A, "
                          "pivot) or linalg.lu_factor_ex(A, pivot)")
    to = (lambda v: v) if xp is np else xp.asarray
    return _make(lu), _make(to(piv)), _make(to(info))


@defop("linalg_vector_norm", out=True, out_casting="no")
def linalg_vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *,
                       dtype=None) -> Tensor:
    d = x._data
    if d.dtype.kind == "c":  # the norm of the magnitudes
        d = _xp(d).abs(d)
    if d.dtype.kind not in "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {scalar_type_name(d.dtype)}")
    # (a Python int or float, the usual ord, is tested by its class first: the ABC check of
    # numbers.Real runs two Python-level hooks)
    if ord.__class__ is not int and ord.__class__ is not float and \
            (isinstance(ord, Tensor) or not isinstance(ord, numbers.Real)):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    if dtype is not None:
        d = d.astype(_dtype_np(dtype))
    if ord == 1 or ord == 2:  # the reduction kernels' 1-norm and 2-norm (``dim`` as given:
        # their plans are memoized by it, checks included)
        r = _on_kernel("linalg.vector_norm", d, dim, keepdim, "sum_reduce", 1 + int(ord))
        if r is not None:
            return _make(r)
    xp = _xp(d)
    dims = _dims(dim, d.ndim, "linalg.vector_norm")
    axes = tuple(dims) if d.ndim else None
    acc = _float32 if d.dtype == _float16 else d.dtype
    a = xp.abs(d).astype(acc, copy=False)
    if d.size == 0 and ord < 0 or (d.size == 0 and math.isinf(ord) and
                                   any(d.shape[i] == 0 for i in dims)):
        raise RuntimeError("linalg.vector_norm cannot compute the "
                           f"{ord} norm on an empty tensor because the operation does not "
                           "have an identity")
    if ord == math.inf:
        r = a.max(axis=axes, keepdims=keepdim)
    elif ord == -math.inf:
        r = a.min(axis=axes, keepdims=keepdim)
    elif ord == 0:
        r = (a != 0).sum(axis=axes, keepdims=keepdim).astype(acc)
    elif ord == 1:
        r = a.sum(axis=axes, keepdims=keepdim)
    elif ord == 2:
        r = xp.sqrt((a * a).sum(axis=axes, keepdims=keepdim))
    else:
        with quiet():
            r = (a ** ord).sum(axis=axes, keepdims=keepdim) ** (1.0 / ord)
    return _make(xp.asarray(r).astype(d.dtype, copy=False))


def _dtype_np(dtype):
    if isinstance(dtype, D.dtype):
        return dtype.np
    return np.dtype(dtype)


@functools.lru_cache(maxsize=256)
def _sytrf_lwork(dt, n: int) -> int:
    """The workspace of ``sytrf``'s blocked algorithm for an ``n x n`` matrix of dtype ``dt``
    (the wrapper's default, n, runs the unblocked one: 2-3x slower on large matrices); LAPACK's
    query, made once per dtype and size."""
    return int(_lapack("sytrf_lwork", dt)(n, lower=1)[0].real)


@defop("linalg_ldl_factor_ex", out=True, differentiable=False)
def linalg_ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    a = A._data
    _check_square("linalg.ldl_factor_ex", a)
    _no_complex("linalg.ldl_factor_ex", a)
    _check_float("linalg.ldl_factor_ex", a, half_kernel="ldl_factor_kernel_cpu")
    sytrf = _lapack("sytrf", a.dtype)
    n = a.shape[-1]
    lwork = _sytrf_lwork(a.dtype, n)
    # each matrix factored in place in column-major order, LAPACK's (and the strides of
    # PyTorch's LD): one transposing copy in and none out (a row-major LD cost the wrapper's
    # copy in and one back, 1.1 of 3.9 ms at 512 x 512)
    buf = np.empty((math.prod(a.shape[:-2]), n, n), a.dtype)  # row-major: each matrix's LD^T
    lds = buf.swapaxes(-1, -2)
    lds[...] = _host(a).reshape(lds.shape)
    pivs = np.empty((buf.shape[0], n), np.int32)
    info = np.zeros(buf.shape[0], np.int32)
    for i, mat in enumerate(lds):
        ld, pivs[i], info[i] = sytrf(mat, lower=1, lwork=lwork, overwrite_a=1)
        if not np.may_share_memory(ld, mat):  # (a wrapper that copied after all)
            mat[...] = ld
    # LAPACK leaves LD's upper triangle as it was: LD^T's lower one, zeroed
    _kernel("triangle_zero", np)(buf, 0, True)
    if check_errors and (info != 0).any():
        raise LinAlgError("linalg.ldl_factor_ex: the factorization could not be completed")
    return _on_device_of(a, lds.reshape(a.shape), pivs.reshape(a.shape[:-1]),
                         info.reshape(a.shape[:-2]))


@defop("linalg_ldl_solve", out=True, differentiable=False)
def linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False):
    ld, piv, b = LD._data, pivots._data, B._data
    op = "torch.linalg.ldl_solve"
    _check_square(op, ld)
    _no_complex(op, ld)
    if ld.dtype != _float16:  # float16 passes PyTorch's dtype check, its kernel refuses it
        _check_float(op, ld)
    if b.ndim < 2:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-max(b.ndim, 1)}, {max(b.ndim, 1) - 1}], but got -2)")
    if b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is "
                           f"{ld.shape[-2]} by {ld.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    if tuple(piv.shape) != tuple(ld.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(piv.shape)} instead")
    # LAPACK indexes rows with the pivots unchecked: out-of-range ones read and write out of
    # bounds, so they raise here, as PyTorch's
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got "
                           f"{scalar_type_name(piv.dtype)}")
    if ld.dtype != b.dtype:
        raise RuntimeError(f"{op}: Expected b and A to have the same dtype, but found b of type "
                           f"{scalar_type_name(b.dtype)} and A of type "
                           f"{scalar_type_name(ld.dtype)} instead.")
    _check_float(op, ld, half_kernel="ldl_solve_kernel_cpu")
    _check_same(op, ld, b)
    on = ld
    ld, piv, b = _host(ld), _host(piv), _host(b)
    sytrs = _lapack("sytrs", ld.dtype)
    n = ld.shape[-1]
    if piv.size and int(np.abs(piv.astype(np.int64)).max()) > n:
        raise RuntimeError(f"{op}: Pivots given to ldl_solve must all satisfy "
                           f"|pivot| <= LD.size(-2) = {n}. Did you properly pass the result of "
                           f"ldl_factor?")
    if piv.size and int(np.abs(piv.astype(np.int64)).min()) < 1:
        raise RuntimeError(f"{op}: Pivots given to ldl_solve must all satisfy "
                           "|pivot| >= 1. Did you properly pass the result of ldl_factor?")
    batch = _batch_shape(op, ld.shape[:-2], b.shape[:-2])
    ldb = _to_batch(np, ld, batch).reshape((-1, n, n))
    pb = _to_batch(np, piv, batch, 1).reshape((-1, n))
    bb = _to_batch(np, b, batch).reshape((-1,) + b.shape[-2:])
    out = np.empty(bb.shape, ld.dtype)
    for i in range(bb.shape[0]):
        x, _ = sytrs(ldb[i], pb[i], bb[i], lower=1)
        out[i] = x
    return _on_device_of(on, out.reshape(batch + b.shape[-2:]))[0]


@functools.lru_cache(maxsize=256)
def _geqrf_lwork(dt, m: int, n: int) -> int:
    """The workspace of ``geqrf``'s blocked algorithm for an ``m x n`` matrix of dtype
    ``dt`` (the wrapper's default, 3 n, runs the unblocked one); LAPACK's query, made once
    per dtype and shape."""
    return _max(int(_lapack("geqrf_lwork", dt)(m, n)[0].real), 1)


@functools.lru_cache(maxsize=256)
def _orgqr_lwork(dt, m: int, cols: int, k: int) -> int:
    """``orgqr``'s (``ungqr``'s) blocked workspace for ``m x cols`` from ``k`` reflectors:
    LAPACK's query (lwork -1), made once per dtype and shape."""
    orgqr = _lapack("ungqr" if dt.kind == "c" else "orgqr", dt)
    h = np.zeros((m, cols), dt, order="F")
    return _max(int(orgqr(h, np.zeros(k, dt), lwork=-1)[1][0].real), 1)


def _geqrf_host(a):
    """LAPACK's geqrf on each matrix of the non-empty host array ``a`` (``(*, m, n)``), at
    its precision: ``(h, tau)``, ``h`` the packed factors (R in the upper triangle, the
    reflectors below it) with each matrix in column-major order (LAPACK's, and the strides
    of PyTorch's geqrf: the wrapper's transposing copy in, a plain one out), ``tau`` of shape
    ``(*, min(m, n))``."""
    m, n = a.shape[-2:]
    geqrf = _lapack("geqrf", a.dtype)
    lwork = _geqrf_lwork(a.dtype, m, n)
    hs = np.empty((math.prod(a.shape[:-2]), n, m), a.dtype).swapaxes(-1, -2)
    taus = np.empty((hs.shape[0], _min(m, n)), a.dtype)
    for mat, h, tau in zip(a.reshape(hs.shape), hs, taus):
        r = geqrf(mat, lwork=lwork)
        h[...], tau[...] = r[0], r[1]
    return hs.reshape(a.shape), taus.reshape(a.shape[:-2] + taus.shape[-1:])


@defop("geqrf", out=True, differentiable=False)
def _geqrf(input: Tensor):
    a = input._data
    _check_matrix("geqrf", a, "input")
    _check_float("geqrf", a, kernel="geqrf_cpu", complex_ok=True)
    h = _host(a)
    if h.size:
        h, tau = _geqrf_host(h)
    else:  # (LAPACK takes no empty matrix: NumPy's shapes)
        h, tau = np.linalg.qr(h, mode="raw")
        h, tau = np.ascontiguousarray(_T(h), dtype=a.dtype), tau.astype(a.dtype)
    return _on_device_of(a, h, tau)


def geqrf(input: Tensor, *, out=None):
    """QR factorization in LAPACK's ``geqrf`` form ``(a, tau)``: R in the upper triangle, the
    Householder reflectors below it (``torch.geqrf``; not differentiable).

    >>> geqrf(eye(2)).tau.shape
    ember.Size([2])
    """
    r = _geqrf(input)
    if out is not None:
        r = write_out("geqrf", r, out)
    return RT.geqrf(*r)


# ---------------------------------------------------------------------------- composites
def _eye_like(A: Tensor, n: int | None = None) -> Tensor:
    n = A.shape[-1] if n is None else n
    return eye(n, dtype=A.dtype, device=A.device)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Batches of matrices with the last dim of ``input`` on their ``offset`` diagonal (the
    two new dims are ``dim1`` and ``dim2``).

    >>> diag_embed(tensor([[1., 2.]])).shape
    ember.Size([1, 2, 2])
    """
    n = input.shape[-1] + _abs(offset) if input.dim() else 1
    out_dim = input.dim() + 1
    d1 = _wrap_dim(dim1, out_dim, "diag_embed")
    d2 = _wrap_dim(dim2, out_dim, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed(): diagonal dimensions cannot be identical {dim1}, "
                           f"{dim2}")
    shape = list(input.shape[:-1])
    lo, hi = sorted((d1, d2))
    shape.insert(lo, n)
    shape.insert(hi, n)
    base = zeros(*shape, dtype=input.dtype, device=input.device)
    return diagonal_scatter(base, input, offset, d1, d2)


def _diag(v: Tensor) -> Tensor:
    """Batched diagonal matrices from the last dim of ``v`` (differentiable)."""
    return v.unsqueeze(-1) * _eye_like(v, v.shape[-1])


def _perm_from_pivots(piv: Tensor, m: int):
    """int64 array ``(*, m)``: ``perm`` with ``P^T A = A[perm]``."""
    xp = _xp(piv._data)
    p = piv._data if xp is np else xp.asnumpy(piv._data)
    k = p.shape[-1]
    perms = []
    for row in (p.reshape(-1, k) - 1).tolist():  # LAPACK's row swaps, in order, on a list
        perm = list(range(m))
        for i, j in enumerate(row):
            perm[i], perm[j] = perm[j], perm[i]
        perms.append(perm)
    perms = np.array(perms, np.int64).reshape(p.shape[:-1] + (m,))
    return perms if xp is np else xp.asarray(perms)


def _rows(Y: Tensor, perm) -> Tensor:
    """``Y[..., perm, :]`` along dim -2 (differentiable): one permutation for every matrix
    is an ``index_select`` of rows; a batch of them, a ``gather`` by the permutations
    broadcast over the columns (the stacked rows through one index_select measured 8% more
    a call forward and backward at 8 4x4 matrices: its reshapes, and their backward)."""
    pb = perm.shape[:-1]
    if not pb:
        return index_select(Y, -2, Tensor._make(perm))
    yb = Y._data.shape[:-2]
    batch = pb if pb == yb else np.broadcast_shapes(pb, yb)
    Y = Y.expand(*batch, *Y.shape[-2:])
    idx = _xp(perm).broadcast_to(perm[..., None], batch + (perm.shape[-1], Y.shape[-1]))
    return gather(Y, -2, Tensor._make(idx))


def _inverse_perm(perm):
    xp = _xp(perm)
    return xp.argsort(perm, axis=-1)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out=None):
    """``(P, L, U)`` from ``lu_factor``'s packed ``LU`` and ``pivots``.

    >>> lu_unpack(*linalg.lu_factor(eye(2))).P
    tensor([[1., 0.],
            [0., 1.]])
    """
    m, n = LU_data.shape[-2:]
    k = _min(m, n)
    if unpack_data:
        L = add(tril(narrow(LU_data, -1, 0, k), -1), eye(m, k, dtype=LU_data.dtype,
                                                          device=LU_data.device))
        U = triu(narrow(LU_data, -2, 0, k))
    else:
        L = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
        U = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_pivots:
        perm = _perm_from_pivots(LU_pivots, m)
        xp = _xp(LU_data._data)
        # P^T = I[perm] -> P[i, perm... ]: P[perm[j], j] = 1
        pt = xp.eye(m, dtype=LU_data._data.dtype)[perm]
        P = _make(xp.ascontiguousarray(_T(pt)))
    else:
        P = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    r = RT.lu_unpack(P, L, U)
    if out is not None:
        return RT.lu_unpack(*write_out("lu_unpack", tuple(r), out))
    return r


def _ret(kind, values, out, name):
    """``values`` (or ``out`` written with them) as the named tuple ``kind``: built by
    tuple's own constructor (the named tuple's ``__new__`` is a Python function: ~0.3 us)."""
    if out is not None:
        values = write_out(name, tuple(values), out)
    return _tuple_new(kind, values)


_tuple_new = tuple.__new__


def _solve_tri(A, B, *, upper, left=True, unitriangular=False):
    return linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def _lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
              adjoint: bool = False) -> Tensor:
    op = "linalg.lu_solve"
    _check_square(op, LU._data, "LU")
    _check_float(op, LU._data, half_kernel="linalg.lu_solve_cpu", complex_ok=True)
    _check_same(op, LU._data, B._data)
    _check_matrix(op, B._data, "B")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    perm = _perm_from_pivots(pivots, n)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _lu_solve(LU, pivots, B.mH, left=True, adjoint=not adjoint).mH
    if not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
        Y = _rows(B, perm)
        Y = _solve_tri(LU, Y, upper=False, unitriangular=True)
        return _solve_tri(LU, Y, upper=True)
    # A^H X = B: U^H L^H P^T X = B -> X = P L^-H U^-H B
    Y = _solve_tri(LU.mH, B, upper=False)
    Y = _solve_tri(LU.mH, Y, upper=True, unitriangular=True)
    return _rows(Y, _inverse_perm(perm))


# ---------------------------------------------------------------------------- torch.* forms
@with_out
def det(input: Tensor) -> Tensor:
    """Determinant of a (batch of) square matrices (``torch.det``).

    >>> det(tensor([[2., 0.], [0., 3.]]))
    tensor(6.)
    """
    return linalg_det(input)


def logdet(input: Tensor) -> Tensor:
    """``log(det(A))``: nan for a negative determinant, -inf for zero; complex for a complex
    ``A`` (``torch.logdet``).

    >>> logdet(eye(2))
    tensor(0.)
    """
    sign, ld = linalg_slogdet(input)
    if sign.is_complex():  # log(det) = log|det| + i arg(det): the sign's log
        return ld + log(sign)
    ld = where(sign == 0, full_like(ld, -math.inf), ld)
    return where(sign < 0, full_like(ld, math.nan), ld)


def slogdet(input: Tensor, *, out=None):
    """``(sign, logabsdet)`` of the determinant (``torch.slogdet``).

    >>> slogdet(tensor([[-2., 0.], [0., 1.]])).sign
    tensor(-1.)
    """
    return _ret(RT.torch_slogdet, linalg_slogdet(input), out, "slogdet")


@with_out(casting="no")
def inverse(input: Tensor) -> Tensor:
    """Inverse of a (batch of) square matrices (``torch.inverse``).

    >>> inverse(tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    return linalg_inv(input)


@with_out
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """Cholesky factor of a symmetric positive-definite matrix (``torch.cholesky``).

    >>> cholesky(tensor([[4., 0.], [0., 9.]]))
    tensor([[2., 0.],
            [0., 3.]])
    """
    return linalg_cholesky(input, upper=upper)


@with_out
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """Solve ``A X = B`` given ``B`` (``input``) and the Cholesky factor of ``A``
    (``input2``).

    >>> cholesky_solve(tensor([[2.], [4.]]), tensor([[1., 0.], [0., 2.]]))
    tensor([[2.],
            [1.]])
    """
    L = input2.mT if upper else input2
    Y = _solve_tri(L, input, upper=False)
    return _solve_tri(L.mT, Y, upper=True)


@with_out
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """Inverse of ``A`` from its Cholesky factor (``torch.cholesky_inverse``).

    >>> cholesky_inverse(tensor([[2., 0.], [0., 1.]]))
    tensor([[0.2500, 0.0000],
            [0.0000, 1.0000]])
    """
    return cholesky_solve(_eye_like(input).expand(*input.shape), input, upper)


def qr(input: Tensor, some: bool = True, *, out=None):
    """``(Q, R)`` (``torch.qr``; ``some=False`` gives the complete factorization).

    >>> qr(eye(2)).R
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _ret(RT.torch_qr, linalg_qr(input, "reduced" if some else "complete"), out, "qr")


def svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out=None):
    """``(U, S, V)`` with ``input = U diag(S) V^T`` (``torch.svd``: V, not Vh).

    >>> svd(eye(2)).S
    tensor([1., 1.])
    """
    if not compute_uv:
        S = _svdvals(input)
        m, n = input.shape[-2:]
        z = zeros(*input.shape[:-2], m, m if not some else _min(m, n), dtype=input.dtype,
                  device=input.device)
        zv = zeros(*input.shape[:-2], n, n if not some else _min(m, n), dtype=input.dtype,
                   device=input.device)
        return _ret(RT.torch_svd, (z, S, zv), out, "svd")
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return _ret(RT.torch_svd, (U, S, Vh.mT), out, "svd")


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Pseudo-inverse (``torch.pinverse``; ``rcond`` is ``linalg.pinv``'s ``rtol``).

    >>> pinverse(tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    return linalg_pinv(input, rtol=rcond)


def _matrix_power(A: Tensor, n: int) -> Tensor:
    if n.__class__ is not int and (not isinstance(n, numbers.Integral) or isinstance(n, bool)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    _check_square("linalg.matrix_power", A._data)
    if n == 0:
        return _eye_like(A).expand(*A.shape).clone()
    if n < 0:
        A = linalg_inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


@with_out(casting="no")
def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` multiplied by itself ``n`` times (the inverse's power for ``n < 0``).

    >>> matrix_power(tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    return _matrix_power(input, n)


@with_out
def matrix_exp(input: Tensor) -> Tensor:
    """Matrix exponential (``torch.matrix_exp``).

    >>> matrix_exp(zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    return linalg_matrix_exp(input)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    """``(LU, pivots)`` (and ``infos`` when ``get_infos``): ``torch.lu``.

    >>> lu(eye(2))[1]
    tensor([1, 2], dtype=ember.int32)
    """
    LU, piv, info = linalg_lu_factor_ex(A, pivot=pivot)
    r = (LU, piv, info) if get_infos else (LU, piv)
    if out is not None:
        return write_out("lu", r, out)
    return r


@with_out
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Solve ``A x = b`` from ``A``'s ``lu`` factorization (``torch.lu_solve``).

    >>> lu_solve(tensor([[2.], [3.]]), *lu(eye(2)))
    tensor([[2.],
            [3.]])
    """
    return _lu_solve(LU_data, LU_pivots, b)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out=None):
    """``(X, A.clone())`` solving ``op(A) X = b`` for triangular ``A`` (deprecated
    ``torch.triangular_solve``).

    >>> triangular_solve(tensor([[2.], [2.]]), tensor([[1., 1.], [0., 2.]])).solution
    tensor([[1.],
            [1.]])
    """
    M = A.mT if transpose else A
    X = _solve_tri(M, b, upper=(upper != transpose), unitriangular=unitriangular)
    return _ret(RT.triangular_solve, (X, A.clone()), out, "triangular_solve")


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of the product of Householder reflectors ``I - tau_i v_i
    v_i^T`` stored below the diagonal of ``A`` (``torch.linalg.householder_product``).

    >>> householder_product(zeros(2, 2), zeros(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    op = "torch.linalg.householder_product"
    _check_matrix(op, A._data)
    if tau._data.dtype != A._data.dtype:
        raise RuntimeError(f"{op}: tau dtype {scalar_type_name(tau._data.dtype)} does not "
                           f"match input dtype {scalar_type_name(A._data.dtype)}")
    _check_float(op, A._data, kernel="orgqr_cpu")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if k > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    # the compact WY form (Schreiber and Van Loan): H_1 ... H_k = I - V T V^T, with V the unit
    # lower trapezoidal reflectors and T^-1 = diag(1 / tau) + striu(V^T V), i.e. T = (I +
    # diag(tau) striu(V^T V))^-1 diag(tau): two GEMMs and one unit triangular solve instead
    # of k rank-one updates of an m x m Q (a zero tau, an identity reflector, needs no care)
    I = eye(m, n, dtype=A.dtype, device=A.device)
    if not k:  # no reflectors (tril refuses an empty matrix)
        return I.expand(*A.shape[:-2], m, n).clone()
    V = add(tril(narrow(A, -1, 0, k), -1), narrow(I, -1, 0, k))
    tVt = tau.unsqueeze(-1) * V.mT  # diag(tau) V^T: its first n columns are the right side
    Y = _solve_tri(tVt @ V, narrow(tVt, -1, 0, n), upper=True, unitriangular=True)
    return I - V @ Y


@with_out
def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """Alias of :func:`householder_product` (``torch.orgqr``).

    >>> orgqr(*geqrf(eye(2))).abs()
    tensor([[1., 0.],
            [0., 1.]])
    """
    return householder_product(input, tau)


@with_out
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """Multiply ``input3`` by the full ``Q`` of a ``geqrf`` factorization (``torch.ormqr``).

    >>> ormqr(*geqrf(eye(2)), eye(2)).abs()
    tensor([[1., 0.],
            [0., 1.]])
    """
    m = input.shape[-2]
    A = input
    if A.shape[-1] < m:  # the full m x m Q: pad with zero reflectors
        pad = zeros(*A.shape[:-1], m - A.shape[-1], dtype=A.dtype, device=A.device)
        A = cat([A, pad], -1)
    Q = householder_product(A, input2)
    if transpose:
        Q = Q.mT
    return Q @ input3 if left else input3 @ Q


def chain_matmul(*matrices, out=None) -> Tensor:
    """Product of the matrices (deprecated ``torch.chain_matmul``; see ``linalg.multi_dot``).

    >>> chain_matmul(eye(2), eye(2)).shape
    ember.Size([2, 2])
    """
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        r = matrices[0].clone()
    else:
        r = multi_dot(list(matrices))
    if out is not None:
        return write_out("chain_matmul", r, out)
    return r


@functools.lru_cache(maxsize=256)
def _chain_order(dims: tuple) -> tuple:
    """The cheapest order of a chain product of matrices ``dims[i] x dims[i + 1]``, by
    dynamic programming over the chain's dimensions, worked out once per chain: as nested
    pairs of positions (an int is one matrix)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best

    def order(i, j):
        if i == j:
            return i
        k = split[i][j]
        return order(i, k), order(k + 1, j)

    return order(0, n - 1)


def _multi_dot(tensors) -> Tensor:
    ts = list(tensors)
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    shapes = [t._data.shape for t in ts]
    for i, s in enumerate(shapes):
        # a 1-d first (last) tensor is a row (column) vector: matmul's own rule for it
        if len(s) != 2 and not (len(s) == 1 and (i == 0 or i == n - 1)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {len(s)}D")
    dims = tuple([shapes[0][0] if len(shapes[0]) == 2 else 1] +
                 [1 if len(s) == 1 and i == n - 1 else s[-1] for i, s in enumerate(shapes)])

    def prod(o):
        return ts[o] if o.__class__ is int else matmul(prod(o[0]), prod(o[1]))

    return prod(_chain_order(dims))


multi_dot = with_out(_multi_dot, casting="no")
multi_dot.__name__ = "multi_dot"


def _matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                 dtype=None) -> Tensor:
    op = "linalg.matrix_norm"
    a = A._data  # (its rank and dtype read on the array: no method calls, no generator)
    nd = a.ndim
    if nd < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    _check_float(op, a, complex_ok=True)
    if dtype is not None:
        A = A.to(dtype=dtype)
    d0, d1 = dim
    d0, d1 = int(d0) % nd, int(d1) % nd
    if ord == "fro":
        return linalg_vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        perm = [i for i in range(nd) if i not in (d0, d1)] + [d0, d1]
        s = _svdvals(A.permute(*perm))
        if ord == "nuc":
            r = _sum(s, -1)
        elif ord == 2:
            r = amax(s, -1)
        else:
            r = amin(s, -1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return r
    if ord in (1, -1, math.inf, -math.inf):
        red, keep = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = _sum(A.abs(), red, keepdim=True)
        r = amax(s, keep, keepdim=True) if ord > 0 else amin(s, keep, keepdim=True)
        if not keepdim:
            r = r.squeeze(_max(d0, d1)).squeeze(_min(d0, d1))
        return r
    raise RuntimeError(f"{op}: Order {ord} not supported.")


matrix_norm = with_out(_matrix_norm, casting="no")
matrix_norm.__name__ = "matrix_norm"


def _norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if dim is not None and not isinstance(dim, (int, np.integer)):
        dim = tuple(dim)
    if isinstance(dim, tuple) and len(dim) == 2:
        return _matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.dim() == 2:
            return _matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.dim() != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: Order {ord} not supported for vector norms.")
    return linalg_vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


linalg_norm = with_out(_norm, casting="no")
linalg_norm.__name__ = "norm"


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """Sum of the singular values (``torch.nuclear_norm``).

    >>> nuclear_norm(eye(3))
    tensor(3.)
    """
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    r = _matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
    if out is not None:
        return write_out("nuclear_norm", r, out)
    return r


@with_out
def frobenius_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """Frobenius norm over ``dim`` (deprecated ``torch.frobenius_norm``).

    >>> frobenius_norm(ones(2, 2))
    tensor(2.)
    """
    return linalg_vector_norm(input, 2, dim, keepdim)


@with_out(casting="no")
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Dot product of two 1-d tensors, conjugating the first (``torch.vdot``; real tensors:
    :func:`dot`).

    >>> vdot(tensor([1., 2.]), tensor([3., 4.]))
    tensor(11.)
    """
    return dot(conj(input) if input.is_complex() else input, other)


@with_out(casting="no")
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Inner product over the last dims (``torch.inner``; scalars multiply).

    >>> inner(tensor([1., 2.]), tensor([[1., 0.], [0., 1.]]))
    tensor([1., 2.])
    """
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


@defop("kron", out=True)
def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product (``torch.kron``).

    >>> kron(eye(2), ones(1, 2))
    tensor([[1., 1., 0., 0.],
            [0., 0., 1., 1.]])
    """
    a, b = input._data, other._data
    sa, sb = a.shape, b.shape
    n = _max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    # each operand's array viewed with its dims interleaved with size-1 ones (inserting
    # size-1 dims is a view for any strides), so that one broadcast product, by mul's own
    # implementation (its dtypes and promotion), is the result's (a0, b0, a1, b1, ...) layout
    r = mul.op.impl(_make(a.reshape([s for d in sa for s in (d, 1)])),
                    _make(b.reshape([s for d in sb for s in (1, d)])))._data
    return _make(r.reshape([x * y for x, y in zip(sa, sb)]))


@with_out
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-d matrix with the flattened ``input`` on diagonal ``offset`` (``torch.diagflat``).

    >>> diagflat(tensor([[1, 2]]))
    tensor([[1, 0],
            [0, 2]])
    """
    return diag(input.reshape(-1), offset)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims: ``mT`` of a real tensor (a view); of a
    complex one, its conjugate (a new tensor: ember has no lazy conjugation).

    >>> adjoint(ones(2, 3)).shape
    ember.Size([3, 2])
    """
    if input.dim() < 2:
        raise RuntimeError("adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.dim()}-D tensor.")
    t = input.transpose(-2, -1)
    if t.is_complex():
        return conj(t)
    return t


@with_out
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` (``torch.addr``).

    >>> addr(zeros(2, 2), tensor([1., 2.]), tensor([1., 1.]))
    tensor([[1., 1.],
            [2., 2.]])
    """
    return _add_scaled("addr", input, outer(vec1, vec2), beta, alpha)


def _vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    n = x.shape[-1] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    cols = [x ** k if k else x * 0 + 1 for k in range(n)]
    if not cols:
        return zeros(*x.shape, 0, dtype=x.dtype, device=x.device)
    if not increasing:
        cols = cols[::-1]
    return stack(cols, -1)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Vandermonde matrix of a 1-d ``x`` (``torch.vander``: decreasing powers by default).

    >>> vander(tensor([1, 2, 3]), N=3)
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]])
    """
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    return _vander(x, N, increasing)


def linalg_vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """``linalg.vander``: increasing powers ``x^0 .. x^(N-1)`` along a new last dim.

    >>> linalg_vander(tensor([2., 3.]))
    tensor([[1., 2.],
            [1., 3.]])
    """
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    if N is not None and N <= 1:
        raise RuntimeError("linalg.vander: N must be greater than 1.")
    return _vander(x, N, True)


def _pdist_p(diff: Tensor, p: float, dim: int = -1) -> Tensor:
    return linalg_vector_norm(diff, p, dim)


@with_out
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """p-norm of ``input - other`` (``torch.dist``).

    >>> dist(tensor([0., 0.]), tensor([3., 4.]))
    tensor(5.)
    """
    return linalg_vector_norm(input - other, p)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """p-norm distances between each row of ``x1`` (``(*, P, M)``) and each row of ``x2``
    (``(*, R, M)``): a ``(*, P, R)`` tensor (``torch.cdist``).

    >>> cdist(tensor([[0., 0.]]), tensor([[3., 4.], [0., 1.]]))
    tensor([[5., 1.]])
    """
    a1, a2 = x1._data, x2._data  # (the checks read the arrays: no Size or dtype objects)
    if a1.ndim < 2 or a2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a1.ndim}D")
    if a1.dtype.kind == "c" or a2.dtype.kind == "c":
        n, a = ("X1", a1) if a1.dtype.kind == "c" else ("X2", a2)
        raise RuntimeError(f"cdist only supports floating-point dtypes, {n} got: "
                           f"{scalar_type_name(a.dtype)}")
    if a1.shape[-1] != a2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{a1.shape[-1]} X2: {a2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if a1.dtype != a2.dtype:
        raise RuntimeError(f"cdist: X1 and X2 must have the same dtype, got {x1.dtype} and "
                           f"{x2.dtype}")
    mode = _CDIST_MODES.get(compute_mode)
    if mode is None:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if p == 2 and a1.size and a2.size and \
            (mode == 1 or (mode == 0 and (a1.shape[-2] > 25 or a2.shape[-2] > 25))):
        return _euclidean_dist(x1, x2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return linalg_vector_norm(diff, p, -1)


_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, None: 0,
                "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    """PyTorch's ``_euclidean_dist``, the one GEMM of ``cdist`` for p = 2 (rows over 25):
    ``[-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T``, clamped at 0 before the square root. Where
    that is 0 the gradient is 0, as in PyTorch's ``_euclidean_dist_backward`` (the square
    root only sees the positive entries)."""
    n1 = (x1 * x1).sum(-1, keepdim=True)
    n2 = (x2 * x2).sum(-1, keepdim=True)
    a = cat([x1 * -2, n1, ones_like(n1)], -1)
    b = cat([x2, ones_like(n2), n2], -1)
    d2 = a @ b.transpose(-1, -2)
    pos = d2 > 0
    return where(pos, where(pos, d2, 1.0).sqrt(), 0.0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Cartesian product of 1-d tensors, one row per combination (``torch.cartesian_prod``).

    >>> cartesian_prod(tensor([1, 2]), tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the given matrices (0-d and 1-d inputs count as one row)
    (``torch.block_diag``).

    >>> block_diag(tensor([[1]]), tensor([[2, 3]]))
    tensor([[1, 0, 0],
            [0, 2, 3]])
    """
    mats, shapes = [], []
    for i, t in enumerate(tensors):
        shape = t._data.shape
        if len(shape) > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {len(shape)} dimensions")
        if len(shape) < 2:
            t = t.reshape(1, -1)
            shape = t._data.shape
        mats.append(t)
        shapes.append(shape)
    if not mats:
        return zeros(1, 0)
    dt = mats[0].dtype
    for m in mats[1:]:
        if m.dtype is not dt:
            dt = D.promote_types(dt, m.dtype)
    cols = builtins.sum([s[1] for s in shapes])
    # each block's rows padded by views of one zero (expanded: no zeros allocated or read
    # from fresh pages); cat casts every piece to dt (its gradient is cast back)
    rows, at, zero = [], 0, None
    for m, (r, c) in zip(mats, shapes):
        rest = cols - at - c
        if at or rest:
            dev = m.device
            if zero is None or zero.device != dev:
                zero = zeros((), dtype=dt, device=dev)
            parts = [zero.expand(r, at), m] if at else [m]
            if rest:
                parts.append(zero.expand(r, rest))
            m = cat(parts, 1)
        rows.append(m)
        at += c
    return cat(rows, 0)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None):
    """``(U, S, V)`` of a rank-``q`` approximation (``torch.svd_lowrank``; here an exact
    truncated SVD, which a randomized method approximates).

    >>> svd_lowrank(eye(3), q=2)[1]
    tensor([1., 1.])
    """
    X = A if M is None else A - M
    q = _min(6 if q is None else q, *X.shape[-2:])
    U, S, Vh = linalg_svd(X, False)
    return narrow(U, -1, 0, q), narrow(S, -1, 0, q), narrow(Vh, -2, 0, q).mT


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """``(U, S, V)`` of the (centered) data matrix's top-``q`` principal directions
    (``torch.pca_lowrank``).

    >>> pca_lowrank(eye(3), q=1)[1].shape
    ember.Size([1])
    """
    X = A - A.mean(-2, keepdim=True) if center else A
    return svd_lowrank(X, 6 if q is None else q, niter)


# ---------------------------------------------------------------------------- Tensor methods
_METHODS = ("det", "logdet", "slogdet", "inverse", "cholesky", "cholesky_inverse",
            "cholesky_solve", "qr", "svd", "pinverse", "matrix_power", "matrix_exp", "lu",
            "lu_solve", "triangular_solve", "geqrf", "orgqr", "ormqr", "vdot", "inner", "kron",
            "diag_embed", "diagflat", "dist", "adjoint", "addr")


def _bind_methods() -> None:
    g = globals()
    for name in _METHODS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, g[name])
    if "mH" not in Tensor.__dict__:
        Tensor.mH = property(adjoint, doc="The conjugate transpose of the last two dims.")
    if "H" not in Tensor.__dict__:
        Tensor.H = property(lambda self: adjoint(self) if self.dim() == 2 else _bad_H(self),
                            doc="The conjugate transpose of a matrix.")


def _bad_H(t):
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                       f"{t.dim()}-D tensor.")


_bind_methods()
