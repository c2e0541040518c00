"""Parity with PyTorch 2.13 for ember.tensor.linalg, .special, .fft and the added torch.*
names: forward values (and dtypes) and gradients on the same float64 inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.autograd  # noqa: F401  (installs the recorder)
import ember.tensor as et

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)


def _mat(*shape, shift=None):
    a = RNG.uniform(-1, 1, shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + (shape[-1] if shift is None else shift) * np.eye(shape[-1])
    return a


def _spd(*shape):
    a = RNG.uniform(-1, 1, shape)
    return a @ a.swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])


def _sym(*shape):
    n = shape[-1]
    q, _ = np.linalg.qr(RNG.standard_normal(shape))
    return (q * (np.arange(n) * 2.0 + 1)[..., None, :]) @ q.swapaxes(-1, -2)


def _sep(m, n):
    k = min(m, n)
    u, _ = np.linalg.qr(RNG.standard_normal((m, k)))
    v, _ = np.linalg.qr(RNG.standard_normal((n, k)))
    return (u * (np.arange(k, 0, -1) + 1.0)) @ v.T


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(e_fn, t_fn, arrays, grad=True, atol=1e-8, rtol=1e-6):
    e_in = [et.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    t_in = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    e_out, t_out = _flat(e_fn(*e_in)), _flat(t_fn(*t_in))
    assert len(e_out) == len(t_out)
    for eo, to in zip(e_out, t_out):
        assert tuple(eo.shape) == tuple(to.shape)
        assert str(eo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol,
                                   rtol=rtol)
    if not grad:
        return
    # weights of at most 1 in size: an output near float64's largest value (nan_to_num's
    # default for -inf) times the weight stays finite, so the loss never overflows (which
    # NumPy's multiply reports as a warning, an error under this suite's filter)
    weights = [RNG.uniform(-1.0, 1.0, tuple(t.shape)) for t in t_out]
    e_loss = sum((o * et.tensor(w)).sum() for o, w in zip(e_out, weights)
                 if o.requires_grad)
    t_loss = sum((o * torch.tensor(w)).sum() for o, w in zip(t_out, weights)
                 if o.requires_grad)
    e_loss.backward()
    t_loss.backward()
    for ei, ti in zip(e_in, t_in):
        if ti.grad is not None:
            np.testing.assert_allclose(ei.grad.numpy(), ti.grad.numpy(), atol=1e-7, rtol=1e-5)


def _gauge(r):
    """Sign-independent function of (values, vectors) pairs."""
    return r[0], r[1] * r[1][..., :1, :]


LINALG = {
    "det": (lambda m: m.linalg.det(m.A), lambda: [_mat(2, 3, 3)]),
    "slogdet": (lambda m: tuple(m.linalg.slogdet(m.A)), lambda: [-_mat(3, 3)]),
    "inv": (lambda m: m.linalg.inv(m.A), lambda: [_mat(2, 3, 3)]),
    "solve": (lambda m: m.linalg.solve(m.A, m.B), lambda: [_mat(2, 3, 3), _mat(3, 2)]),
    "solve_vec": (lambda m: m.linalg.solve(m.A, m.B), lambda: [_mat(2, 3, 3), _mat(2, 3)]),
    "solve_right": (lambda m: m.linalg.solve(m.A, m.B, left=False),
                    lambda: [_mat(3, 3), _mat(2, 3)]),
    "solve_triangular": (lambda m: m.linalg.solve_triangular(m.A, m.B, upper=True),
                         lambda: [_mat(3, 3), _mat(3, 2)]),
    "solve_triangular_unit_right": (
        lambda m: m.linalg.solve_triangular(m.A, m.B, upper=False, left=False,
                                            unitriangular=True),
        lambda: [_mat(3, 3), _mat(2, 3)]),
    "cholesky": (lambda m: m.linalg.cholesky(m.A @ m.A.mT + 3 * m.eye(3, dtype=m.float64)),
                 lambda: [_mat(3, 3)]),
    "cholesky_upper": (lambda m: m.linalg.cholesky(m.A @ m.A.mT + 3 * m.eye(3,
                                                                          dtype=m.float64),
                                                   upper=True), lambda: [_mat(3, 3)]),
    "qr_tall": (lambda m: tuple(m.linalg.qr(m.A)), lambda: [_mat(4, 3)]),
    "qr_wide": (lambda m: tuple(m.linalg.qr(m.A)), lambda: [_mat(3, 5)]),
    "eigh": (lambda m: _gauge(m.linalg.eigh(m.A + m.A.mT)), lambda: [_sym(3, 3) / 2]),
    "eigvalsh": (lambda m: m.linalg.eigvalsh(m.A), lambda: [_sym(2, 3, 3)]),
    "svd": (lambda m: (lambda r: (r[1], r[0] @ r[2]))(m.linalg.svd(m.A,
                                                                    full_matrices=False)),
            lambda: [_sep(4, 3)]),
    "svdvals": (lambda m: m.linalg.svdvals(m.A), lambda: [_sep(3, 5)]),
    "pinv": (lambda m: m.linalg.pinv(m.A), lambda: [_sep(4, 3)]),
    "matrix_exp": (lambda m: m.linalg.matrix_exp(m.A), lambda: [_mat(3, 3, shift=0)]),
    "matrix_power": (lambda m: m.linalg.matrix_power(m.A, -3), lambda: [_mat(3, 3)]),
    "lu_factor": (lambda m: m.linalg.lu_factor(m.A).LU, lambda: [_mat(3, 3, shift=0)]),
    "lu": (lambda m: tuple(m.linalg.lu(m.A)), lambda: [_mat(3, 3, shift=0)]),
    "lu_solve": (lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.A), m.B),
                 lambda: [_mat(3, 3, shift=0), _mat(3, 2)]),
    "lu_solve_adjoint": (lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.A), m.B,
                                                     adjoint=True),
                         lambda: [_mat(3, 3, shift=0), _mat(3, 2)]),
    "vector_norm": (lambda m: m.linalg.vector_norm(m.A, 3, dim=1), lambda: [_mat(3, 4)]),
    "vector_norm_inf": (lambda m: m.linalg.vector_norm(m.A, math.inf), lambda: [_mat(3, 4)]),
    "matrix_norm_fro": (lambda m: m.linalg.matrix_norm(m.A), lambda: [_mat(2, 3, 4)]),
    "matrix_norm_nuc": (lambda m: m.linalg.matrix_norm(m.A, "nuc"), lambda: [_sep(3, 4)]),
    "matrix_norm_2": (lambda m: m.linalg.matrix_norm(m.A, 2), lambda: [_sep(3, 4)]),
    "matrix_norm_1": (lambda m: m.linalg.matrix_norm(m.A, 1), lambda: [_mat(3, 4)]),
    "matrix_norm_-inf": (lambda m: m.linalg.matrix_norm(m.A, -math.inf, keepdim=True),
                         lambda: [_mat(3, 4)]),
    "norm": (lambda m: m.linalg.norm(m.A), lambda: [_mat(3, 4)]),
    "cond": (lambda m: m.linalg.cond(m.A), lambda: [_sep(3, 3)]),
    "matrix_rank": (lambda m: m.linalg.matrix_rank(m.A), lambda: [_sep(4, 3)]),
    "multi_dot": (lambda m: m.linalg.multi_dot([m.A, m.B, m.A.mT]),
                  lambda: [_mat(2, 3), _mat(3, 3)]),
    "vecdot": (lambda m: m.linalg.vecdot(m.A, m.B), lambda: [_mat(2, 3), _mat(3)]),
    "cross": (lambda m: m.linalg.cross(m.A, m.B), lambda: [_mat(2, 3), _mat(2, 3)]),
    "lstsq": (lambda m: m.linalg.lstsq(m.A, m.B).solution, lambda: [_sep(5, 3), _mat(5, 2)]),
    "householder_product": (lambda m: m.linalg.householder_product(m.A, m.B),
                            lambda: [_mat(4, 3), RNG.uniform(0.5, 1.5, 2)]),
    "tensorinv": (lambda m: m.linalg.tensorinv(m.A, 1), lambda: [_mat(4, 4).reshape(4, 2, 2)]),
    "tensorsolve": (lambda m: m.linalg.tensorsolve(m.A, m.B),
                    lambda: [_mat(6, 6).reshape(2, 3, 6), _mat(2, 3)]),
    "vander": (lambda m: m.linalg.vander(m.A, N=4), lambda: [_mat(3)]),
    "diagonal": (lambda m: m.linalg.diagonal(m.A, offset=1), lambda: [_mat(2, 3, 4)]),
    "torch_det": (lambda m: m.det(m.A), lambda: [_mat(3, 3)]),
    "torch_logdet": (lambda m: m.logdet(m.A), lambda: [_mat(3, 3)]),
    "torch_inverse": (lambda m: m.A.inverse(), lambda: [_mat(3, 3)]),
    "torch_cholesky_solve": (lambda m: m.cholesky_solve(m.B, m.linalg.cholesky(
        m.A @ m.A.mT + 3 * m.eye(3, dtype=m.float64))), lambda: [_mat(3, 3), _mat(3, 2)]),
    "torch_cholesky_inverse": (lambda m: m.cholesky_inverse(m.linalg.cholesky(
        m.A @ m.A.mT + 3 * m.eye(3, dtype=m.float64))), lambda: [_mat(3, 3)]),
    "torch_pinverse": (lambda m: m.pinverse(m.A), lambda: [_sep(3, 4)]),
    "torch_triangular_solve": (lambda m: m.triangular_solve(m.B, m.A).solution,
                               lambda: [_mat(3, 3), _mat(3, 2)]),
    "torch_lu_unpack": (lambda m: tuple(m.lu_unpack(*m.linalg.lu_factor(m.A))),
                        lambda: [_mat(3, 3, shift=0)]),
    "torch_kron": (lambda m: m.kron(m.A, m.B), lambda: [_mat(2, 3), _mat(3, 2)]),
    "torch_cdist": (lambda m: m.cdist(m.A, m.B), lambda: [_mat(3, 4), _mat(2, 4) + 3]),
    # over 25 rows: the GEMM formula (PyTorch's _euclidean_dist; a repeated row would give
    # rounding noise of about 1e-8 instead of 0 in both, summed in another order)
    "torch_cdist_mm": (lambda m: m.cdist(m.A, m.B), lambda: [_mat(2, 30, 4), _mat(3, 4) + 1]),
    "torch_cdist_modes": (lambda m: (m.cdist(m.A, m.B, compute_mode="use_mm_for_euclid_dist"),
                                     m.cdist(m.A, m.B, 1.5), m.cdist(
                                         m.A, m.B, compute_mode="donot_use_mm_for_euclid_dist")),
                          lambda: [_mat(30, 4), _mat(2, 4) + 1]),
    "torch_block_diag": (lambda m: m.block_diag(m.A, m.B), lambda: [_mat(2, 2), _mat(1, 3)]),
    "torch_vdot_inner": (lambda m: m.inner(m.A, m.B), lambda: [_mat(2, 3), _mat(4, 3)]),
    "torch_addr": (lambda m: m.addr(m.A, m.B[0], m.B[1], beta=0.5, alpha=2),
                   lambda: [_mat(3, 3), _mat(2, 3)]),
    "torch_dist": (lambda m: m.dist(m.A, m.B, 3), lambda: [_mat(3, 3), _mat(3, 3)]),
    "torch_orgqr": (lambda m: m.orgqr(*m.geqrf(m.A)), lambda: [_mat(4, 3)]),
    "torch_ormqr": (lambda m: m.ormqr(*m.geqrf(m.A), m.B), lambda: [_mat(4, 3), _mat(4, 2)]),
}


class _NS:
    """``m`` in the table's lambdas: a library (torch or ember.tensor) plus the inputs."""

    def __init__(self, lib, args):
        self._lib = lib
        names = "AB"
        for n, a in zip(names, args):
            setattr(self, n, a)

    def __getattr__(self, name):
        return getattr(self._lib, name)


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_matches_pytorch(name):
    fn, make = LINALG[name]
    arrays = make()
    grad = name not in ("matrix_rank", "torch_lu_unpack", "torch_orgqr", "torch_ormqr")
    _compare(lambda *xs: fn(_NS(et, xs)), lambda *xs: fn(_NS(torch, xs)), arrays, grad=grad)


def test_linalg_multi_output_fields_and_int_outputs_match_pytorch():
    a = _mat(2, 3, 3, shift=0)
    e, t = et.linalg.lu_factor_ex(et.tensor(a)), torch.linalg.lu_factor_ex(torch.tensor(a))
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    assert e.pivots.dtype == et.int32 and e.info.dtype == et.int32
    e, t = et.linalg.lstsq(et.tensor(_sep(5, 3)), et.tensor(_mat(5, 2))), None
    t = torch.linalg.lstsq(torch.tensor(_sep(5, 3)), torch.tensor(_mat(5, 2)))
    assert tuple(e.residuals.shape) == tuple(t.residuals.shape)
    assert tuple(e.singular_values.shape) == tuple(t.singular_values.shape)
    assert int(e.rank) == int(t.rank)
    s = _sym(4, 4) - 4 * np.eye(4)
    e, t = et.linalg.ldl_factor(et.tensor(s)), torch.linalg.ldl_factor(torch.tensor(s))
    np.testing.assert_allclose(e.LD.numpy(), t.LD.numpy(), atol=1e-10)
    np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
    b = _mat(4, 2)
    np.testing.assert_allclose(
        et.linalg.ldl_solve(e.LD, e.pivots, et.tensor(b)).numpy(),
        torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(b)).numpy(), atol=1e-10)
    a = _mat(4, 3)
    e, t = et.geqrf(et.tensor(a)), torch.geqrf(torch.tensor(a))
    np.testing.assert_allclose(e.a.numpy(), t.a.numpy(), atol=1e-12)
    np.testing.assert_allclose(e.tau.numpy(), t.tau.numpy(), atol=1e-12)


def test_linalg_errors_match_pytorch_types():
    for e_call, t_call in [
        (lambda: et.linalg.inv(et.ones(2, 3)), lambda: torch.linalg.inv(torch.ones(2, 3))),
        (lambda: et.linalg.det(et.ones(3)), lambda: torch.linalg.det(torch.ones(3))),
        (lambda: et.linalg.inv(et.zeros(2, 2)), lambda: torch.linalg.inv(torch.zeros(2, 2))),
        (lambda: et.linalg.cholesky(-et.eye(2)), lambda: torch.linalg.cholesky(-torch.eye(2))),
        (lambda: et.linalg.solve(et.eye(3), et.ones(2, 1)),
         lambda: torch.linalg.solve(torch.eye(3), torch.ones(2, 1))),
        (lambda: et.linalg.inv(et.ones(2, 2, dtype=et.int64)),
         lambda: torch.linalg.inv(torch.ones(2, 2, dtype=torch.int64))),
    ]:
        with pytest.raises(Exception) as te:
            t_call()
        with pytest.raises(Exception) as ee:
            e_call()
        assert isinstance(ee.value, RuntimeError) == isinstance(te.value, RuntimeError)
        t_linalg = isinstance(te.value, torch.linalg.LinAlgError)
        assert isinstance(ee.value, et.linalg.LinAlgError) == t_linalg, (ee.value, te.value)


SPECIAL = {
    "gammaln": (0.5, 4), "digamma": (0.5, 4), "psi": (0.5, 4), "erfcx": (-1, 2),
    "i0": (-2, 2), "i0e": (0.2, 2), "i1": (-2, 2), "i1e": (0.2, 2), "ndtr": (-2, 2),
    "ndtri": (0.1, 0.9), "log_ndtr": (-2, 2), "entr": (0.2, 2), "sinc": (-2, 2),
    "expit": (-2, 2), "exp2": (-2, 2), "expm1": (-2, 2), "log1p": (0, 2), "erf": (-2, 2),
    "erfc": (-2, 2), "erfinv": (-0.9, 0.9), "logit": (0.1, 0.9), "round": (-2, 2),
    "bessel_j0": (-3, 3), "bessel_j1": (-3, 3), "bessel_y0": (0.5, 3), "bessel_y1": (0.5, 3),
    "modified_bessel_i0": (-2, 2), "modified_bessel_i1": (-2, 2),
    "modified_bessel_k0": (0.5, 3), "modified_bessel_k1": (0.5, 3),
    "scaled_modified_bessel_k0": (0.5, 3), "scaled_modified_bessel_k1": (0.5, 3),
    "spherical_bessel_j0": (-3, 3), "airy_ai": (-2, 2),
}
# PyTorch has no derivative for these (ember's Bessel derivatives are checked by gradcheck)
_NO_TORCH_GRAD = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
                  "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
                  "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                  "spherical_bessel_j0", "airy_ai", "round", "i1", "i1e", "ndtri",
                  "log_ndtr", "erfcx", "entr"}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_unary_matches_pytorch(name):
    lo, hi = SPECIAL[name]
    x = RNG.uniform(lo, hi, (2, 5))
    grad = name not in _NO_TORCH_GRAD
    _compare(getattr(et.special, name), getattr(torch.special, name), [x], grad=grad,
             atol=1e-9, rtol=1e-7)
    # float32 and integer inputs: the result dtype follows PyTorch's
    for arr in (x.astype(np.float32), np.asarray([[1, 2], [3, 4]], np.int64)):
        if name in ("round",) and arr.dtype.kind == "i":
            continue
        e = getattr(et.special, name)(et.tensor(arr))
        t = getattr(torch.special, name)(torch.tensor(arr))
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name


@pytest.mark.parametrize("name,grad", [
    ("xlogy", True), ("xlog1py", True), ("zeta", False), ("gammainc", False),
    ("gammaincc", False)])
def test_special_binary_matches_pytorch(name, grad):
    a, b = RNG.uniform(1.5, 3, (2, 3)), RNG.uniform(0.5, 2, (2, 3))
    _compare(getattr(et.special, name), getattr(torch.special, name), [a, b], grad=grad)


@pytest.mark.parametrize("kind", ["chebyshev_polynomial_t", "chebyshev_polynomial_u",
                                  "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                                  "shifted_chebyshev_polynomial_t",
                                  "shifted_chebyshev_polynomial_u",
                                  "shifted_chebyshev_polynomial_v",
                                  "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                                  "hermite_polynomial_he", "laguerre_polynomial_l",
                                  "legendre_polynomial_p"])
def test_special_polynomials_match_pytorch(kind):
    x = RNG.uniform(-1, 1, 6)
    for n in (0, 1, 2, 5):
        np.testing.assert_allclose(getattr(et.special, kind)(et.tensor(x), n).numpy(),
                                   getattr(torch.special, kind)(torch.tensor(x), n).numpy(),
                                   rtol=1e-9, atol=1e-9)


def test_special_misc_match_pytorch():
    x = RNG.uniform(0.5, 3, (2, 3))
    _compare(lambda t: et.special.polygamma(2, t), lambda t: torch.special.polygamma(2, t), [x])
    _compare(lambda t: et.special.multigammaln(t + 2, 3),
             lambda t: torch.special.multigammaln(t + 2, 3), [x])
    _compare(lambda t: et.special.softmax(t, 1), lambda t: torch.special.softmax(t, 1), [x])
    _compare(lambda t: et.special.log_softmax(t, 0), lambda t: torch.special.log_softmax(t, 0),
             [x])
    _compare(lambda t: et.special.logsumexp(t, 1), lambda t: torch.special.logsumexp(t, 1), [x])
    _compare(lambda t: et.logit(t / 4, 0.2), lambda t: torch.logit(t / 4, 0.2), [x])


EXTRA = {
    "nan_to_num": (lambda m: m.nan_to_num(m.A, posinf=5.0),
                   lambda: [np.asarray([1.0, np.nan, np.inf, -np.inf, 2.0])]),
    "diff": (lambda m: m.diff(m.A, 2, 0), lambda: [_mat(4, 3)]),
    "diff_prepend": (lambda m: m.diff(m.A, dim=1, prepend=m.B), lambda: [_mat(2, 3), _mat(2, 1)]),
    "rot90": (lambda m: m.rot90(m.A, 3, (1, 2)), lambda: [_mat(2, 3, 4)]),
    "softmax": (lambda m: m.A.softmax(1), lambda: [_mat(2, 3)]),
    "log_softmax": (lambda m: m.A.log_softmax(0), lambda: [_mat(2, 3)]),
    "cummax": (lambda m: tuple(m.cummax(m.A, 1)), lambda: [_mat(3, 5)]),
    "cummin": (lambda m: tuple(m.cummin(m.A, 0)), lambda: [_mat(3, 5)]),
    "logcumsumexp": (lambda m: m.logcumsumexp(m.A * 30, 1), lambda: [_mat(3, 5)]),
    "lgamma": (lambda m: m.lgamma(m.A + 2), lambda: [_mat(2, 3)]),
    "digamma": (lambda m: m.A.digamma(), lambda: [_mat(2, 3) + 2]),
    "mvlgamma": (lambda m: m.mvlgamma(m.A + 3, 2), lambda: [_mat(2, 3)]),
    "i0": (lambda m: m.i0(m.A), lambda: [_mat(2, 3)]),
    "sinc": (lambda m: m.sinc(m.A), lambda: [_mat(2, 3)]),
    "xlogy_scalar": (lambda m: m.xlogy(m.A, 3.0), lambda: [_mat(2, 3)]),
    "deg2rad": (lambda m: m.deg2rad(m.A), lambda: [_mat(2, 3)]),
    "fftshift": (lambda m: m.fft.fftshift(m.A, dim=1), lambda: [_mat(3, 5)]),
    "ifftshift": (lambda m: m.fft.ifftshift(m.A), lambda: [_mat(3, 4)]),
    "scatter_reduce_sum": (lambda m: m.scatter_reduce(m.A, 0, m.tensor([[0, 1, 0], [2, 2, 1]]),
                                                      m.B, "sum"),
                           lambda: [_mat(3, 3), _mat(2, 3)]),
    "scatter_reduce_mean": (lambda m: m.scatter_reduce(m.A, 1, m.tensor([[0, 1, 0], [2, 2, 1]]),
                                                       m.B, "mean", include_self=False),
                            lambda: [_mat(2, 3), _mat(2, 3)]),
    "scatter_reduce_amax": (lambda m: m.scatter_reduce(m.A, 0, m.tensor([[0, 1, 0], [2, 2, 1]]),
                                                       m.B, "amax"),
                            lambda: [_mat(3, 3), _mat(2, 3)]),
    "scatter_reduce_prod": (lambda m: m.scatter_reduce(m.A, 0, m.tensor([[0, 1, 0], [2, 2, 1]]),
                                                       m.B, "prod"),
                            lambda: [_mat(3, 3), _mat(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_extra_ops_match_pytorch(name):
    fn, make = EXTRA[name]
    _compare(lambda *xs: fn(_NS(et, xs)), lambda *xs: fn(_NS(torch, xs)), make())


def test_non_differentiable_extras_match_pytorch():
    checks = [
        lambda m: m.isin(m.tensor([1, 2, 3, 4]), m.tensor([2, 4])),
        lambda m: m.bucketize(m.tensor([1.0, 4.0, 9.0]), m.tensor([2.0, 4.0, 8.0]), right=True),
        lambda m: m.searchsorted(m.tensor([[1, 3, 5], [2, 4, 6]]), m.tensor([[3], [7]])),
        lambda m: m.searchsorted(m.tensor([1, 3, 5]), m.tensor([3]), side="right",
                                 out_int32=True),
        lambda m: m.bincount(m.tensor([0, 1, 1, 5]), minlength=8),
        lambda m: m.bincount(m.tensor([0, 1, 1]), m.tensor([0.5, 1.0, 2.0])),
        lambda m: m.histc(m.tensor([1.0, 2.0, 1.0, 7.0]), bins=4, min=0, max=3),
        lambda m: m.histc(m.tensor([1.0, 2.0, 1.0, 7.0]), bins=3),
        lambda m: m.tril_indices(4, 3, -1),
        lambda m: m.triu_indices(3, 4, 1),
        lambda m: m.isposinf(m.tensor([1.0, math.inf, -math.inf])),
        lambda m: m.isneginf(m.tensor([1.0, math.inf, -math.inf])),
        lambda m: m.signbit(m.tensor([-0.0, 1.0, -1.0])),
        lambda m: m.fft.fftfreq(5, 0.5),
        lambda m: m.fft.rfftfreq(6),
        lambda m: m.hann_window(6),
        lambda m: m.hann_window(5, periodic=False),
        lambda m: m.hamming_window(6, True, 0.5, 0.4),
        lambda m: m.blackman_window(7),
        lambda m: m.bartlett_window(6, periodic=False),
        lambda m: m.kaiser_window(6, True, 5.0),
        lambda m: m.cartesian_prod(m.tensor([1, 2]), m.tensor([3, 4, 5])),
        lambda m: m.diagflat(m.tensor([[1, 2], [3, 4]]), 1),
        lambda m: m.diag_embed(m.tensor([[1.0, 2.0], [3.0, 4.0]]), 1),
        lambda m: m.vander(m.tensor([1, 2, 3]), N=4),
        lambda m: m.nan_to_num(m.tensor([1, 2])),
        lambda m: m.rad2deg(m.tensor([1, 2])),
        lambda m: m.msort(m.tensor([[3, 1], [1, 2]])),
    ]
    for i, f in enumerate(checks):
        e, t = f(et), f(torch)
        assert tuple(e.shape) == tuple(t.shape), i
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (i, e.dtype, t.dtype)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6, err_msg=str(i))


def test_inplace_view_ops_match_pytorch_strides():
    for name, args in [("t_", ()), ("transpose_", (0, 2)), ("squeeze_", ()),
                       ("unsqueeze_", (1,)), ("swapaxes_", (0, 1))]:
        e = et.zeros(2, 1, 3) if name != "t_" else et.zeros(2, 3)
        t = torch.zeros(2, 1, 3) if name != "t_" else torch.zeros(2, 3)
        assert getattr(e, name)(*args) is e
        getattr(t, name)(*args)
        assert tuple(e.shape) == tuple(t.shape) and tuple(e.stride()) == tuple(t.stride()), name
    e, t = et.ones(2, 2), torch.ones(2, 2)
    e.addmm_(et.eye(2), et.ones(2, 2), alpha=2)
    t.addmm_(torch.eye(2), torch.ones(2, 2), alpha=2)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e, t = et.tensor([-1.0, 2.0]), torch.tensor([-1.0, 2.0])
    e.clamp_min_(0.5).clamp_max_(1.5)
    t.clamp_min_(0.5).clamp_max_(1.5)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
