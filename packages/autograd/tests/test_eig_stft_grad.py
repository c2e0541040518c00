"""Gradients (gradcheck and gradgradcheck, float64 and complex128) of linalg.eig / eigvals,
of the linalg names on complex inputs, and of stft / istft (to the signal and the window)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et
from ember.tensor import linalg as LA
from ember.tensor.testing import op_table_extra as X

RNG = np.random.default_rng(11)


def _r(*shape):
    return et.tensor(RNG.standard_normal(shape), requires_grad=True)


def _c(*shape):
    return et.tensor(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape),
                     requires_grad=True)


def _check(f, *xs, second=True):
    assert ag.gradcheck(f, xs, eps=1e-6, atol=1e-5, rtol=1e-3)
    if second:
        assert ag.gradgradcheck(f, xs, eps=1e-6, atol=1e-4, rtol=1e-3)


def _phase_free(r):
    return r[0], r[1] * et.conj(r[1][..., :1, :])


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_gradients(dtype):
    a = et.tensor(X.eig_separated((2, 3, 3), dtype, RNG), requires_grad=True)
    _check(lambda a: _phase_free(LA.eig(a)), a)
    _check(LA.eigvals, a)


def test_eig_gradient_of_a_real_input_is_real_and_matches_the_first_order_rule():
    a = et.tensor(X.eig_separated((3, 3), "float64", RNG), requires_grad=True)
    L = LA.eigvals(a)
    (L.real.sum() + 2 * L.imag.sum()).backward()
    assert a.grad.dtype == et.float64
    # d lambda_j = (W^H dA V)_jj / (W^H V)_jj with left eigenvectors W = V^{-H}
    A = a.detach().numpy()
    lam, V = np.linalg.eig(A)
    W = np.linalg.inv(V).conj().T
    grad = np.zeros_like(A)
    for j in range(3):  # d lambda_j / dA_kl, then the loss's real and imaginary weights
        dl = np.outer(W[:, j].conj(), V[:, j]) / (W[:, j].conj() @ V[:, j])
        grad += np.real(dl) + 2 * np.imag(dl)
    np.testing.assert_allclose(a.grad.numpy(), grad, atol=1e-10)


@pytest.mark.parametrize("fn", [LA.eig, LA.eigvals])
def test_eig_of_a_non_finite_matrix_that_wants_a_gradient_raises(fn):
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        fn(et.tensor([[float("nan"), 1.], [0., 1.]], requires_grad=True))


def test_eig_refuses_a_loss_that_depends_on_the_phase():
    a = et.tensor(X.eig_separated((3, 3), "complex128", RNG), requires_grad=True)
    with pytest.raises(RuntimeError, match="linalg_eig_backward: The eigenvectors in the "
                                           "complex case are specified up to multiplication"):
        LA.eig(a).eigenvectors.real.sum().backward()
    h = et.tensor(X.eig_separated((3, 3), "complex128", RNG))
    h = (h + h.mH).requires_grad_(True)
    with pytest.raises(RuntimeError, match="linalg_eigh_backward"):
        LA.eigh(h).eigenvectors.real.sum().backward()


def _herm(a):
    return a @ a.mH + 3 * et.eye(a.shape[-1], dtype=a.dtype)


@pytest.mark.parametrize("name,f,shapes", [
    ("det", LA.det, [(2, 3, 3)]),
    ("slogdet", lambda a: tuple(LA.slogdet(a)), [(3, 3)]),
    ("inv", LA.inv, [(3, 3)]),
    ("solve", LA.solve, [(3, 3), (3, 2)]),
    ("solve_vec", LA.solve, [(3, 3), (3,)]),
    ("solve_right", lambda a, b: LA.solve(a, b, left=False), [(3, 3), (2, 3)]),
    ("solve_triangular", lambda a, b: LA.solve_triangular(a, b, upper=True), [(3, 3), (3, 2)]),
    ("cholesky", lambda a: LA.cholesky(_herm(a)), [(3, 3)]),
    ("cholesky_upper", lambda a: LA.cholesky(_herm(a), upper=True), [(3, 3)]),
    ("qr", lambda a: tuple(LA.qr(a)), [(4, 3)]),
    ("qr_wide", lambda a: tuple(LA.qr(a)), [(3, 5)]),
    ("eigh", lambda a: _phase_free(LA.eigh(a + a.mH)), [(3, 3)]),
    ("svd", lambda a: (lambda r: (r[1], r[0] @ r[2]))(LA.svd(a, full_matrices=False)), [(4, 3)]),
    ("svd_wide", lambda a: (lambda r: (r[1], r[0] @ r[2]))(LA.svd(a, full_matrices=False)),
     [(3, 5)]),
    ("svdvals", LA.svdvals, [(4, 3)]),
    ("pinv", LA.pinv, [(4, 3)]),
    ("matrix_exp", LA.matrix_exp, [(3, 3)]),
    ("matrix_norm_nuc", lambda a: LA.matrix_norm(a, "nuc"), [(3, 4)]),
    ("lu_factor", lambda a: LA.lu_factor(a).LU, [(3, 3)]),
    ("lu_solve_adjoint", lambda a, b: LA.lu_solve(*LA.lu_factor(a), b, adjoint=True),
     [(3, 3), (3, 2)]),
    ("lstsq", lambda a, b: LA.lstsq(a, b).solution, [(4, 3), (4, 2)]),
    ("vecdot", LA.vecdot, [(4, 3), (4, 3)]),
])
def test_complex_linalg_gradients(name, f, shapes):
    xs = [_c(*s) for s in shapes]
    if name in ("det", "inv", "solve", "solve_vec", "solve_right", "solve_triangular",
                "matrix_exp", "lu_factor", "lu_solve_adjoint"):
        with ag.no_grad():
            xs[0].add_(3 * et.eye(shapes[0][-1], dtype=et.complex128))
    _check(f, *xs)


def test_ldl_has_no_complex_path():
    a = _c(3, 3)
    with pytest.raises(NotImplementedError, match="ldl_factor"):
        LA.ldl_factor(_herm(a))


def _win(n):
    return et.tensor(RNG.uniform(0.5, 1.5, n), requires_grad=True)


@pytest.mark.parametrize("kw", [
    dict(hop_length=3), dict(hop_length=2, onesided=False, normalized=True),
    dict(hop_length=2, win_length=5, pad_mode="constant"),
    dict(hop_length=3, center=False), dict(hop_length=2, pad_mode="replicate"),
    dict(hop_length=2, pad_mode="circular"),
])
def test_stft_gradients(kw):
    x = _r(2, 20)
    w = _win(kw.get("win_length", 8))
    _check(lambda x, w: et.stft(x, 8, window=w, return_complex=True, **kw), x, w)


def test_stft_gradients_complex_signal():
    _check(lambda x, w: et.stft(x, 8, hop_length=3, window=w), _c(20), _win(8))


@pytest.mark.parametrize("kw,freq", [
    (dict(hop_length=2), 5), (dict(hop_length=2, length=15, center=False), 5),
    (dict(hop_length=2, onesided=False), 8),
    (dict(hop_length=2, onesided=False, return_complex=True, normalized=True), 8),
    (dict(hop_length=2, win_length=6), 5),
])
def test_istft_gradients(kw, freq):
    S = _c(freq, 9)
    _check(lambda S, w: et.istft(S, 8, window=w, **kw), S, _win(kw.get("win_length", 8)))


def test_istft_ignores_the_imaginary_parts_of_dc_and_nyquist():
    S = _c(5, 9)
    y = et.istft(S, 8, 2, window=et.ones(8, dtype=et.float64))
    y.sum().backward()
    np.testing.assert_allclose(S.grad.numpy()[[0, 4]].imag, 0.0, atol=1e-15)
