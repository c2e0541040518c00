"""linalg.eig / eigvals, the complex inputs of the other linalg names, and stft / istft:
values against NumPy (stft against PyTorch's definition written out in NumPy: SciPy's
``signal.stft`` scales differently), dtypes, return types and PyTorch's errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import linalg as LA
from ember.tensor.testing import op_table_extra as X
from ember.tensor.testing.op_table import fix_gauge

RNG = np.random.default_rng(7)


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


# --------------------------------------------------------------------------- eig / eigvals
@pytest.mark.parametrize("dtype,cdtype", [("float32", et.complex64), ("float64", et.complex128),
                                          ("complex64", et.complex64),
                                          ("complex128", et.complex128)])
def test_eig_decomposes_batches(dtype, cdtype):
    a = X.eig_separated((2, 4, 3, 3), dtype, RNG)
    r = LA.eig(et.tensor(a))
    assert type(r).__name__ == "linalg_eig" and r._fields == ("eigenvalues", "eigenvectors")
    L, V = r.eigenvalues, r.eigenvectors
    assert L.dtype == cdtype and V.dtype == cdtype
    assert tuple(L.shape) == (2, 4, 3) and tuple(V.shape) == (2, 4, 3, 3)
    w, v = X._np_eig(a)
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    np.testing.assert_allclose(L.numpy(), w, rtol=tol, atol=tol)
    # each eigenvector up to a phase (float32 runs LAPACK's single-precision geev)
    np.testing.assert_allclose(fix_gauge(V.numpy(), "col"), fix_gauge(v, "col"), rtol=tol,
                               atol=tol)
    # A V = V diag(L), unit-norm columns
    Vn, Ln = V.numpy().astype(np.complex128), L.numpy().astype(np.complex128)
    np.testing.assert_allclose(a @ Vn, Vn * Ln[..., None, :], atol=100 * tol)
    np.testing.assert_allclose(np.linalg.norm(Vn, axis=-2), 1.0, atol=tol)
    np.testing.assert_allclose(LA.eigvals(et.tensor(a)).numpy(), w, rtol=tol, atol=tol)


def test_eig_of_a_rotation_is_a_conjugate_pair():
    L = LA.eigvals(et.tensor([[0., -1.], [1., 0.]]))
    np.testing.assert_allclose(L.numpy(), [1j, -1j], atol=1e-7)


def test_eig_out_and_empty():
    a = et.tensor(X.eig_separated((3, 3), "float64", RNG))
    L, V = et.empty(0, dtype=et.complex128), et.empty(0, dtype=et.complex128)
    r = LA.eig(a, out=(L, V))
    assert r.eigenvalues is L and r.eigenvectors is V
    np.testing.assert_allclose(L.numpy(), np.linalg.eig(a.numpy())[0])
    e = LA.eig(et.zeros(2, 0, 0))
    assert tuple(e.eigenvalues.shape) == (2, 0) and e.eigenvectors.dtype == et.complex64


@pytest.mark.parametrize("fn,name", [(LA.eig, "linalg.eig"), (LA.eigvals, "linalg.eigvals")])
def test_eig_errors(fn, name):
    short = name.split(".")[-1]  # the message names the op (eig, or eigvals)
    with pytest.raises(RuntimeError, match=f"{short}.*: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        fn(et.zeros(2, 3))
    with pytest.raises(RuntimeError, match=f"{short}.*: The input tensor A must have at least"):
        fn(et.zeros(3))
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Long"):
        fn(et.zeros(3, 3, dtype=et.int64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        fn(et.zeros(3, 3, dtype=et.float16))


def test_eigvals_of_a_non_finite_matrix_is_nan_and_eig_refuses_it():
    a = et.tensor([[[float("inf"), 1.], [0., 1.]], [[2., 0.], [0., 1.]]])
    L = LA.eigvals(a)
    assert np.isnan(L.numpy()[0]).all()
    np.testing.assert_allclose(L.numpy()[1], [2, 1])
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        LA.eig(a)


# --------------------------------------------------------------------------- complex linalg
def _h(n):
    a = _c(n, n)
    return a @ a.conj().T + n * np.eye(n)


@pytest.mark.parametrize("name,args,ref", [
    ("det", lambda: (_c(3, 3),), lambda a: np.linalg.det(a)),
    ("inv", lambda: (_c(2, 3, 3),), np.linalg.inv),
    ("solve", lambda: (_c(3, 3), _c(3, 2)), np.linalg.solve),
    ("cholesky", lambda: (_h(3),), np.linalg.cholesky),
    ("pinv", lambda: (_c(4, 3),), np.linalg.pinv),
    ("matrix_exp", lambda: (_c(3, 3) / 3,), lambda a: __import__("scipy.linalg").linalg.expm(a)),
    ("svdvals", lambda: (_c(4, 3),), lambda a: np.linalg.svd(a, compute_uv=False)),
    ("eigvalsh", lambda: (_h(3),), np.linalg.eigvalsh),
    ("matrix_norm", lambda: (_c(3, 4),), lambda a: np.linalg.norm(a)),
    ("vecdot", lambda: (_c(4), _c(4)), lambda x, y: np.vdot(x, y)),
    ("matrix_rank", lambda: (_c(4, 3),), np.linalg.matrix_rank),
])
def test_complex_linalg_values(name, args, ref):
    a = args()
    got = getattr(LA, name)(*[et.tensor(x) for x in a])
    want = np.asarray(ref(*a))
    assert got.numpy().dtype == want.dtype, name
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-10)


def test_complex_linalg_factorizations_reconstruct():
    a, h = _c(4, 3), _h(3)
    Q, R = LA.qr(et.tensor(a))
    np.testing.assert_allclose((Q @ R).numpy(), a, atol=1e-12)
    U, S, Vh = LA.svd(et.tensor(a), full_matrices=False)
    assert S.dtype == et.float64
    np.testing.assert_allclose(((U * S.to(et.complex128).unsqueeze(-2)) @ Vh).numpy(), a,
                               atol=1e-12)
    w, V = LA.eigh(et.tensor(h))
    assert w.dtype == et.float64
    np.testing.assert_allclose((V @ (w.to(et.complex128).unsqueeze(-1) * V.mH)).numpy(), h,
                               atol=1e-10)
    U = LA.cholesky(et.tensor(h), upper=True)
    np.testing.assert_allclose((U.mH @ U).numpy(), h, atol=1e-10)
    sign, logabs = LA.slogdet(et.tensor(h + 1j * np.eye(3)))
    assert sign.dtype == et.complex128 and logabs.dtype == et.float64
    np.testing.assert_allclose(sign.numpy() * np.exp(logabs.numpy()),
                               np.linalg.det(h + 1j * np.eye(3)))
    P, L, Up = LA.lu(et.tensor(_c(3, 3)))
    assert L.dtype == et.complex128
    b = _c(3, 3)
    eye = et.tensor(np.eye(3, dtype=np.complex128))
    np.testing.assert_allclose(LA.lu_solve(*LA.lu_factor(et.tensor(b)), eye,
                                           adjoint=True).numpy(), np.linalg.inv(b.conj().T),
                               atol=1e-12)


def test_mH_conjugates():
    a = _c(2, 3)
    np.testing.assert_array_equal(et.tensor(a).mH.numpy(), a.conj().T)
    np.testing.assert_array_equal(et.tensor(a).adjoint().numpy(), a.conj().T)
    assert et.tensor(a).type() == "ember.ComplexDoubleTensor"


def test_ldl_refuses_complex_by_name():
    with pytest.raises(NotImplementedError, match="ldl_factor"):
        LA.ldl_factor(et.tensor(_h(3)))


# --------------------------------------------------------------------------- stft / istft
def _sig(*shape, dtype="float64"):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("kw", [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=5, win_length=10),
    dict(n_fft=15, hop_length=3, normalized=True),
    dict(n_fft=16, onesided=False),
    dict(n_fft=16, center=False),
    dict(n_fft=16, win_length=8, center=False, align_to_window=True),
    dict(n_fft=16, pad_mode="constant"), dict(n_fft=16, pad_mode="replicate"),
    dict(n_fft=16, pad_mode="circular"),
])
@pytest.mark.parametrize("shape", [(50,), (3, 50)])
def test_stft_matches_the_definition(kw, shape):
    x = _sig(*shape)
    w = RNG.uniform(0.2, 1.0, kw.get("win_length", kw["n_fft"]))
    got = et.stft(et.tensor(x), window=et.tensor(w), return_complex=True, **kw)
    want = X._np_stft(x, window=w, return_complex=True, **kw)
    assert got.dtype == et.complex128 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_stft_dtypes_and_real_output():
    x = _sig(40, dtype="float32")
    w = et.hann_window(8)
    assert et.stft(et.tensor(x), 8, window=w, return_complex=True).dtype == et.complex64
    assert et.stft(et.tensor(x), 8, window=w.double(), return_complex=True).dtype == \
        et.complex128
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = et.stft(et.tensor(x), 8, window=w, return_complex=False)
    assert r.dtype == et.float32 and tuple(r.shape) == (5, 21, 2)
    np.testing.assert_allclose(r.numpy(), X._np_stft(x, 8, window=w.numpy(),
                                                     return_complex=False), atol=1e-5)
    c = et.tensor(_c(40))
    s = c.stft(8, window=et.hann_window(8, dtype=et.float64))
    assert s.dtype == et.complex128 and tuple(s.shape) == (8, 21)  # two-sided by default


def test_stft_window_none_warns_and_is_rectangular():
    x = _sig(30)
    with pytest.warns(UserWarning, match="A window was not provided"):
        got = et.stft(et.tensor(x), 8, return_complex=True)
    np.testing.assert_allclose(got.numpy(), X._np_stft(x, 8, return_complex=True), atol=1e-12)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x, w: et.stft(x, 8, window=w), RuntimeError, "requires the return_complex"),
    (lambda x, w: et.stft(x, 8, window=w, return_complex=True, align_to_window=True),
     RuntimeError, "align_to_window should only be set when center = false"),
    (lambda x, w: et.stft(x.long(), 8, window=w, return_complex=True), RuntimeError,
     "expected a tensor of floating point or complex values"),
    (lambda x, w: et.stft(x.reshape(2, 1, 20), 8, window=w, return_complex=True),
     RuntimeError, "expected a 1D or 2D tensor"),
    (lambda x, w: et.stft(x, 64, window=et.ones(64), center=False, return_complex=True),
     RuntimeError, r"expected 0 < n_fft < 40, but got n_fft=64"),
    (lambda x, w: et.stft(x, 8, 0, window=w, return_complex=True), RuntimeError,
     "expected hop_length > 0, but got hop_length=0"),
    (lambda x, w: et.stft(x, 8, win_length=9, window=w, return_complex=True), RuntimeError,
     "expected 0 < win_length <= n_fft, but got win_length=9"),
    (lambda x, w: et.stft(x, 8, window=et.ones(7), return_complex=True), RuntimeError,
     r"expected a 1D window tensor of size equal to win_length=8, but got window with size "
     r"\[7\]"),
    (lambda x, w: et.stft(x[:4], 8, window=w, return_complex=True), RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
    (lambda x, w: et.stft(x, 8, window=w, return_complex=True, pad_mode="bogus"),
     NotImplementedError, "Unrecognised padding mode bogus"),
    (lambda x, w: et.stft(x.to(et.complex128), 8, window=w, onesided=True), RuntimeError,
     "Cannot have onesided output if window or input is complex"),
])
def test_stft_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(et.tensor(_sig(40)), et.hann_window(8, dtype=et.float64))


@pytest.mark.parametrize("kw", [
    dict(n_fft=16), dict(n_fft=16, hop_length=3, win_length=12), dict(n_fft=15, hop_length=5),
    dict(n_fft=16, normalized=True), dict(n_fft=16, center=False),
])
def test_istft_inverts_stft(kw):
    x = _sig(2, 64)
    w = et.tensor(RNG.uniform(0.5, 1.0, kw.get("win_length", kw["n_fft"])))
    skw = {k: v for k, v in kw.items()}
    S = et.stft(et.tensor(x), window=w, return_complex=True, **skw)
    y = et.istft(S, window=w, length=64, **kw)
    np.testing.assert_allclose(y.numpy(), x, atol=1e-12)
    np.testing.assert_allclose(y.numpy(), X._np_istft(S.numpy(), window=w.numpy(), length=64,
                                                      **kw), atol=1e-12)


def test_istft_complex_output_and_length_padding():
    S = et.tensor(_c(8, 7))
    w = et.hann_window(8, periodic=True, dtype=et.float64) + 0.5
    y = et.istft(S, 8, 2, window=w, onesided=False, return_complex=True)
    assert y.dtype == et.complex128
    np.testing.assert_allclose(y.numpy(), X._np_istft(S.numpy(), 8, 2, window=w.numpy(),
                                                      onesided=False, return_complex=True),
                               atol=1e-12)
    half = et.tensor(_c(5, 7))
    with pytest.warns(UserWarning, match="shorter than the length parameter"):
        y = half.istft(8, 2, window=w, length=30)
    assert tuple(y.shape) == (30,) and not y[-6:].numpy().any()
    with pytest.warns(UserWarning, match="A window was not provided"):
        et.istft(half, 8, 2)


@pytest.mark.parametrize("call,msg", [
    (lambda S, w: et.istft(S.real, 8, window=w), "requires a complex-valued input"),
    (lambda S, w: et.istft(S[:, :0], 8, window=w), "input tensor cannot be empty"),
    (lambda S, w: et.istft(S.reshape(1, 1, 5, 9), 8, window=w),
     "expected a tensor with 3 or 4 dimensions, but got 5"),
    (lambda S, w: et.istft(S, 10, window=et.ones(10, dtype=et.float64)),
     r"match n_fft / 2 \+ 1 when onesided=True, but got 5"),
    (lambda S, w: et.istft(S, 8, window=w, onesided=False),
     "match n_fft when onesided=False, but got 5"),
    (lambda S, w: et.istft(S, 8, 9, window=w), r"expected 0 < hop_length <= win_length"),
    (lambda S, w: et.istft(S, 8, 2, 9, window=w), r"expected 0 < win_length <= n_fft"),
    (lambda S, w: et.istft(S, 8, window=et.ones(7)), "Invalid window shape"),
    (lambda S, w: et.istft(S, 8, window=et.zeros(8)), "window overlap add min"),
    (lambda S, w: et.istft(S, 8, window=w, return_complex=True),
     "Cannot have onesided output"),
    (lambda S, w: et.istft(S, 8, window=w.to(et.complex128)),
     "Complex windows are incompatible with return_complex=False"),
])
def test_istft_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call(et.tensor(_c(5, 9)), et.hann_window(8, dtype=et.float64) + 0.5)


def test_stft_docstring_example_is_rectangular_dft():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = et.stft(et.tensor([1., 0., 0., 0.]), 4, window=et.ones(4), center=False,
                    return_complex=True)
    np.testing.assert_array_equal(s.numpy()[:, 0], np.ones(3))


def test_is_complex_cfloat_cdouble():
    x = et.tensor([1.5, -2.0])
    assert not et.is_complex(x) and et.is_complex(x.cfloat())
    assert x.cfloat().dtype == et.complex64 and x.cdouble().dtype == et.complex128
    np.testing.assert_array_equal(x.cdouble().numpy(), np.array([1.5, -2.0], np.complex128))
