"""Parity with PyTorch 2.13 for linalg.eig / eigvals, the linalg names on complex inputs, and
stft / istft: values, dtypes, gradients and exception types on the same inputs."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember.autograd  # noqa: F401  (installs the recorder)
import ember.tensor as et
from ember.tensor.testing import op_table_extra as X

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(2024)


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _eig_mat(n=3, cplx=False):
    """Well separated eigenvalues: a complex-conjugate pair and a real one for a real matrix."""
    return X.eig_separated((n, n), "complex128" if cplx else "float64", RNG)


def _pair(a):
    return et.tensor(a.copy(), requires_grad=True), torch.tensor(a.copy(), requires_grad=True)


def _eig_loss(mod, r):
    L, V = r
    inv = V * (V[..., :1, :].conj() if mod is torch else et.conj(V[..., :1, :]))
    # eigenvalues sorted by a phase-free key: a loss both libraries order alike
    return (L.real * 1.3 + L.imag * 0.7).pow(2).sum() + (inv.real.sum() - inv.imag.sum()) ** 2


@pytest.mark.parametrize("cplx", [False, True])
def test_eig_values_dtypes_and_gradients(cplx):
    a = _eig_mat(3, cplx)
    e, t = _pair(a)
    re, rt = et.linalg.eig(e), torch.linalg.eig(t)
    assert re.eigenvalues.dtype.name == str(rt.eigenvalues.dtype).split(".")[1]
    order_e = np.argsort(re.eigenvalues.detach().numpy().real * 10 +
                         re.eigenvalues.detach().numpy().imag)
    order_t = np.argsort(rt.eigenvalues.detach().numpy().real * 10 +
                         rt.eigenvalues.detach().numpy().imag)
    np.testing.assert_allclose(re.eigenvalues.detach().numpy()[order_e],
                               rt.eigenvalues.detach().numpy()[order_t], atol=1e-10)
    ve = re.eigenvectors.detach().numpy()[:, order_e]
    vt = rt.eigenvectors.detach().numpy()[:, order_t]
    np.testing.assert_allclose(ve * ve[:1].conj(), vt * vt[:1].conj(), atol=1e-10)
    _eig_loss(et, re).backward()
    _eig_loss(torch, rt).backward()
    assert e.grad.dtype.name == str(t.grad.dtype).split(".")[1]
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-8)


def test_eigvals_gradient_matches():
    a = _eig_mat(3)
    e, t = _pair(a)
    (et.linalg.eigvals(e).abs() ** 3).sum().backward()
    (torch.linalg.eigvals(t).abs() ** 3).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-8)


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(2, 3), lambda m: m.zeros(3), lambda m: m.zeros(3, 3, dtype=m.int64),
    lambda m: m.tensor([[float("nan"), 1.], [0., 1.]], requires_grad=True),
])
@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_eig_error_types(make, name):
    with pytest.raises(Exception) as te:
        getattr(torch.linalg, name)(make(torch))
    with pytest.raises(type(te.value)):
        getattr(et.linalg, name)(make(et))


def test_eigvals_of_a_non_finite_matrix_is_nan_without_grad():
    a = np.array([[[np.inf, 1.], [0., 1.]], [[2., 0.], [0., 1.]]])
    te, tt = et.linalg.eigvals(et.tensor(a)), torch.linalg.eigvals(torch.tensor(a))
    assert np.isnan(te.numpy()[0]).all() and np.isnan(tt.numpy()[0]).all()
    np.testing.assert_allclose(np.sort_complex(te.numpy()[1]), np.sort_complex(tt.numpy()[1]))


def test_eig_phase_dependent_loss_is_refused_alike():
    a = _eig_mat(3, True)
    e, t = _pair(a)
    with pytest.raises(RuntimeError, match="specified up to multiplication"):
        torch.linalg.eig(t).eigenvectors.real.sum().backward()
    with pytest.raises(RuntimeError, match="specified up to multiplication"):
        et.linalg.eig(e).eigenvectors.real.sum().backward()


def _herm(m, a):
    return a @ a.mH + 3 * m.eye(a.shape[-1], dtype=a.dtype)


def _fwd(m, name, *xs):
    L = m.linalg
    return {
        "det": lambda a: L.det(a + 3 * m.eye(3, dtype=a.dtype)),
        "slogdet": lambda a: L.slogdet(a + 3 * m.eye(3, dtype=a.dtype)).logabsdet,
        "slogdet_sign": lambda a: L.slogdet(a + 3 * m.eye(3, dtype=a.dtype)).sign,
        "inv": lambda a: L.inv(a + 3 * m.eye(3, dtype=a.dtype)),
        "solve": lambda a, b: L.solve(a + 3 * m.eye(3, dtype=a.dtype), b),
        "cholesky": lambda a: L.cholesky(_herm(m, a)),
        "qr": lambda a: (lambda r: r.Q @ r.R)(L.qr(a)),
        "svdvals": lambda a: L.svdvals(a),
        "eigvalsh": lambda a: L.eigvalsh(_herm(m, a)),
        "pinv": lambda a: L.pinv(a),
        "matrix_exp": lambda a: L.matrix_exp(a / 3),
        "matrix_norm": lambda a: L.matrix_norm(a, "nuc"),
        "vecdot": lambda a, b: L.vecdot(a, b),
        "lu_solve": lambda a, b: L.lu_solve(*L.lu_factor(a + 3 * m.eye(3, dtype=a.dtype)), b,
                                            adjoint=True),
    }[name](*xs)


@pytest.mark.parametrize("name,shapes", [
    ("det", [(3, 3)]), ("slogdet", [(3, 3)]), ("slogdet_sign", [(3, 3)]), ("inv", [(3, 3)]),
    ("solve", [(3, 3), (3, 2)]), ("cholesky", [(3, 3)]), ("qr", [(4, 3)]),
    ("svdvals", [(4, 3)]), ("eigvalsh", [(3, 3)]), ("pinv", [(4, 3)]),
    ("matrix_exp", [(3, 3)]), ("matrix_norm", [(3, 4)]), ("vecdot", [(4, 3), (4, 3)]),
    ("lu_solve", [(3, 3), (3, 2)]),
])
def test_complex_linalg_values_and_gradients(name, shapes):
    arrs = [_c(*s) for s in shapes]
    pe = [et.tensor(a.copy(), requires_grad=True) for a in arrs]
    pt = [torch.tensor(a.copy(), requires_grad=True) for a in arrs]
    oe, ot = _fwd(et, name, *pe), _fwd(torch, name, *pt).resolve_conj()
    assert oe.dtype.name == str(ot.dtype).split(".")[1]
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), atol=1e-10)
    # a real loss of both parts
    le = (et.view_as_real(oe) if oe.is_complex() else oe).pow(2).sum()
    lt = (torch.view_as_real(ot) if ot.is_complex() else ot).pow(2).sum()
    le.backward()
    lt.backward()
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.resolve_conj().numpy(), atol=1e-8)


def _stft_pair(x, w, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return (et.stft(x[0], window=w[0], **kw) if w is not None else et.stft(x[0], **kw),
                torch.stft(x[1], window=w[1], **kw) if w is not None else
                torch.stft(x[1], **kw))


@pytest.mark.parametrize("kw", [
    dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=10), dict(n_fft=15, hop_length=3),
    dict(n_fft=16, normalized=True, onesided=False), dict(n_fft=16, center=False),
    dict(n_fft=16, pad_mode="constant"), dict(n_fft=16, pad_mode="replicate"),
    dict(n_fft=16, pad_mode="circular"),
    dict(n_fft=16, win_length=8, center=False, align_to_window=True),
])
@pytest.mark.parametrize("shape", [(60,), (2, 60)])
def test_stft_values_and_gradients(kw, shape):
    x = RNG.standard_normal(shape)
    w = RNG.uniform(0.3, 1.0, kw.get("win_length", kw["n_fft"]))
    xe, xt = _pair(x)
    we, wt = _pair(w)
    se, st = _stft_pair((xe, xt), (we, wt), return_complex=True, **kw)
    assert se.dtype == et.complex128 and tuple(se.shape) == tuple(st.shape)
    np.testing.assert_allclose(se.detach().numpy(), st.detach().numpy(), atol=1e-12)
    (se.abs() ** 2).sum().backward()
    (st.abs() ** 2).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-9)
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), atol=1e-9)


def test_stft_dtypes_match():
    for xd, wd in [("float32", "float32"), ("float32", "float64"), ("float64", "float32"),
                   ("complex64", "float32"), ("complex128", "float64")]:
        x = RNG.standard_normal(40) + (1j * RNG.standard_normal(40) if "complex" in xd else 0)
        x = x.astype(xd)
        w = RNG.uniform(0.5, 1, 8).astype(wd)
        se, st = _stft_pair((et.tensor(x), torch.tensor(x)), (et.tensor(w), torch.tensor(w)),
                            n_fft=8, return_complex=True if "float" in xd else None)
        assert se.dtype.name == str(st.dtype).split(".")[1], (xd, wd)
        assert tuple(se.shape) == tuple(st.shape)


@pytest.mark.parametrize("kw", [
    dict(n_fft=8), dict(n_fft=8, win_length=6), dict(n_fft=8, length=70),
    dict(n_fft=8, center=False), dict(n_fft=8, normalized=True),
    dict(n_fft=8, onesided=False), dict(n_fft=8, onesided=False, return_complex=True),
])
def test_istft_values_and_gradients(kw):
    freq = 8 if kw.get("onesided") is False else 5
    S = _c(2, freq, 17)
    w = RNG.uniform(0.5, 1.0, kw.get("win_length", kw["n_fft"]))
    Se, St = _pair(S)
    we, wt = _pair(w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ye = et.istft(Se, window=we, hop_length=2, **kw)
        yt = torch.istft(St, window=wt, hop_length=2, **kw)
    assert ye.dtype.name == str(yt.dtype).split(".")[1] and tuple(ye.shape) == tuple(yt.shape)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-12)
    ((et.view_as_real(ye) if ye.is_complex() else ye) ** 2).sum().backward()
    ((torch.view_as_real(yt) if yt.is_complex() else yt) ** 2).sum().backward()
    np.testing.assert_allclose(Se.grad.numpy(), St.grad.numpy(), atol=1e-9)
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), atol=1e-9)


@pytest.mark.parametrize("call", [
    lambda m, x, w: m.stft(x, 8, window=w),
    lambda m, x, w: m.stft(x, 8, window=w, return_complex=True, align_to_window=True),
    lambda m, x, w: m.stft(x.long(), 8, window=w, return_complex=True),
    lambda m, x, w: m.stft(x.reshape(2, 1, 20), 8, window=w, return_complex=True),
    lambda m, x, w: m.stft(x, 8, 0, window=w, return_complex=True),
    lambda m, x, w: m.stft(x, 8, win_length=9, window=w, return_complex=True),
    lambda m, x, w: m.stft(x, 8, window=m.ones(7, dtype=m.float64), return_complex=True),
    lambda m, x, w: m.stft(x[:4], 8, window=w, return_complex=True),
    lambda m, x, w: m.stft(x, 8, window=w, return_complex=True, pad_mode="bogus"),
    lambda m, x, w: m.stft(x.to(m.complex128), 8, window=w, onesided=True),
    lambda m, x, w: m.istft(x, 8, window=w),
    lambda m, x, w: m.istft(m.stft(x, 8, window=w, return_complex=True), 8, window=w,
                            onesided=False),
    lambda m, x, w: m.istft(m.stft(x, 8, window=w, return_complex=True), 8, window=w * 0),
    lambda m, x, w: m.istft(m.stft(x, 8, window=w, return_complex=True), 8, window=w,
                            return_complex=True),
])
def test_stft_istft_error_types(call):
    x = RNG.standard_normal(40)
    w = RNG.uniform(0.5, 1, 8)
    with pytest.raises(Exception) as te:
        call(torch, torch.tensor(x), torch.tensor(w))
    with pytest.raises(type(te.value)):
        call(et, et.tensor(x), et.tensor(w))


def test_is_complex_cfloat_cdouble_match():
    for mod in (et, torch):
        x = mod.tensor([1.5, -2.0])
        assert [mod.is_complex(x), mod.is_complex(x.cfloat())] == [False, True]
    assert str(torch.tensor([1.]).cdouble().dtype).split(".")[1] == \
        et.tensor([1.]).cdouble().dtype.name
