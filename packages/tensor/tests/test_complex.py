"""Complex dtypes: promotion, creation, printing, the parts of a complex tensor (views), the
ops that build one, elementwise math and reductions against NumPy, and PyTorch's errors for
the ops that have no complex kernels."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et

RNG = np.random.default_rng(5)


def _c(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# ----------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("a, b, want", [
    (et.complex64, et.float32, et.complex64),
    (et.complex64, et.float64, et.complex128),
    (et.complex128, et.float32, et.complex128),
    (et.complex64, et.int64, et.complex64),
    (et.complex64, et.bool, et.complex64),
    (et.complex64, et.complex128, et.complex128),
    (et.float16, et.complex64, et.complex64),
])
def test_promote_types(a, b, want):
    assert et.promote_types(a, b) is want
    assert et.promote_types(b, a) is want


def test_dtype_properties():
    assert et.complex64.is_complex and et.complex128.is_complex
    assert not et.float32.is_complex
    assert not et.complex64.is_floating_point
    assert et.complex64.is_signed
    assert et.cfloat is et.complex64 and et.cdouble is et.complex128
    assert et.complex64.itemsize == 8 and et.complex128.itemsize == 16
    assert et.complex64.to_real() is et.float32 and et.complex128.to_real() is et.float64
    assert et.float64.to_complex() is et.complex128 and et.float32.to_complex() is et.complex64
    assert et.finfo(et.complex64).eps == np.finfo(np.float32).eps
    assert et.finfo(et.complex128).dtype == "float64"
    assert not et.can_cast(et.complex64, et.float64)
    assert et.can_cast(et.float64, et.complex64)
    with pytest.raises(TypeError):
        et.iinfo(et.complex64)


def test_scalar_promotion():
    x32 = et.ones(2)
    x64 = et.ones(2, dtype=et.float64)
    xi = et.ones(2, dtype=et.int64)
    assert (x32 * 1j).dtype is et.complex64
    assert (x64 * 1j).dtype is et.complex128
    assert (xi + 1j).dtype is et.complex64
    z = et.tensor([1 + 1j])
    assert (z * 2.5).dtype is et.complex64 and (z + 1).dtype is et.complex64
    # a zero-dim complex tensor keeps a float64 tensor's precision
    assert (x64 + et.tensor(1j)).dtype is et.complex128
    assert (xi + et.tensor(1j)).dtype is et.complex64
    np.testing.assert_allclose((x64 * 1j).numpy(), np.ones(2) * 1j)


def test_default_complex_follows_default_float():
    assert et.tensor([1j]).dtype is et.complex64
    old = et.get_default_dtype()
    et.set_default_dtype(et.float64)
    try:
        assert et.tensor([1j, 2]).dtype is et.complex128
        assert (et.ones(1, dtype=et.int64) * 1j).dtype is et.complex128
    finally:
        et.set_default_dtype(old)


# ---------------------------------------------------------------------------- creation
def test_creation():
    assert et.tensor([1 + 2j, 3]).dtype is et.complex64
    assert et.tensor([True, 2.0, 1j]).dtype is et.complex64
    a = _c(2, 3)
    t = et.from_numpy(a)
    assert t.dtype is et.complex128 and t.is_complex()
    a[0, 0] = 7j
    assert t[0, 0].item() == 7j
    assert et.zeros(2, dtype=et.complex64).dtype is et.complex64
    assert et.full((2,), 1 + 2j).dtype is et.complex64
    np.testing.assert_array_equal(et.full((2,), 1 + 2j).numpy(), [1 + 2j, 1 + 2j])
    assert et.ones(2, dtype=et.cdouble).tolist() == [1 + 0j, 1 + 0j]
    assert et.tensor(2 + 3j).item() == 2 + 3j


def test_rand_and_randn_draw_each_part():
    et.manual_seed(0)
    u = et.rand(20000, dtype=et.complex64).numpy()
    assert u.dtype == np.complex64
    assert 0 <= u.real.min() and u.real.max() < 1 and 0 <= u.imag.min() and u.imag.max() < 1
    n = et.randn(200000, dtype=et.complex128).numpy()
    # E|z|^2 = 1, each part has variance 1/2, parts independent
    assert abs(np.mean(np.abs(n) ** 2) - 1) < 0.01
    assert abs(np.var(n.real) - 0.5) < 0.01 and abs(np.var(n.imag) - 0.5) < 0.01
    assert abs(np.corrcoef(n.real, n.imag)[0, 1]) < 0.01
    assert et.randn(2, 3, dtype=et.complex64).shape == (2, 3)


# ---------------------------------------------------------------------------- printing
@pytest.mark.parametrize("data, want", [
    ([1 + 2j, 3 - 1j], "tensor([1.+2.j, 3.-1.j])"),
    (2 + 3j, "tensor(2.+3.j)"),
    ([[1.5 + 2j, -3 - 1.25j], [0j, 1e-5j]],
     "tensor([[ 1.5000+2.0000e+00j, -3.0000-1.2500e+00j],\n"
     "        [ 0.0000+0.0000e+00j,  0.0000+1.0000e-05j]])"),
])
def test_repr(data, want):
    assert repr(et.tensor(data)) == want


def test_repr_dtype_suffix():
    assert repr(et.tensor([1 + 2j], dtype=et.complex128)) == \
        "tensor([1.+2.j], dtype=ember.complex128)"
    assert repr(et.tensor([], dtype=et.complex64)) == "tensor([], dtype=ember.complex64)"


# ---------------------------------------------------------------------------- parts
def test_real_and_imag_are_views():
    a = _c(3, 2)
    z = et.tensor(a)
    np.testing.assert_array_equal(z.real.numpy(), a.real)
    np.testing.assert_array_equal(et.imag(z).numpy(), a.imag)
    assert z.real.stride() == (4, 2)
    z.real[0, 0] = 10.0
    assert z[0, 0].item().real == 10.0
    z.imag = et.zeros(3, 2, dtype=et.float64)
    assert np.all(z.numpy().imag == 0)
    x = et.tensor([1.0, 2.0])
    np.testing.assert_array_equal(et.real(x).numpy(), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="imag"):
        x.imag  # noqa: B018


def test_view_as_real_and_complex():
    a = _c(2, 3, dtype=np.complex64)
    z = et.tensor(a)
    r = et.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.dtype is et.float32
    np.testing.assert_array_equal(r.numpy(), np.stack([a.real, a.imag], -1))
    r[1, 2, 1] = 5.0  # a view: the write reaches z
    assert z[1, 2].item().imag == 5.0
    back = et.view_as_complex(r)
    assert back.dtype is et.complex64
    np.testing.assert_array_equal(back.numpy(), z.numpy())
    # a transposed complex tensor views as real pairs too
    b = z.numpy().T
    np.testing.assert_array_equal(et.view_as_real(z.t()).numpy(),
                                  np.stack([b.real, b.imag], -1))


@pytest.mark.parametrize("make, match", [
    (lambda: et.ones(3, 3), "last dimension of size 2"),
    (lambda: et.ones(2, 3).t(), "stride 1"),
    (lambda: et.ones(3, 2, dtype=et.int64), "float and double"),
    (lambda: et.ones(9)[1:].view(4, 2), "storage_offset"),
    (lambda: et.ones(3, 3)[:, :2], "stride divisible by 2"),
])
def test_view_as_complex_errors(make, match):
    with pytest.raises(RuntimeError, match=match):
        et.view_as_complex(make())


def test_view_as_real_needs_complex():
    with pytest.raises(RuntimeError, match="complex"):
        et.view_as_real(et.ones(2))


def test_complex_and_polar():
    re, im = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    z = et.complex(et.tensor(re), et.tensor(im))
    assert z.dtype is et.complex128
    np.testing.assert_array_equal(z.numpy(), re + 1j * im)
    mag, ang = np.abs(re), RNG.standard_normal(3)
    p = et.polar(et.tensor(mag, dtype=et.float32), et.tensor(ang, dtype=et.float32))
    assert p.dtype is et.complex64
    np.testing.assert_allclose(p.numpy(), mag * np.exp(1j * ang), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="Float"):
        et.complex(et.ones(2), et.ones(2, dtype=et.float64))
    with pytest.raises(RuntimeError, match="Half, Float or Double"):
        et.complex(et.ones(2, dtype=et.int64), et.ones(2, dtype=et.int64))


def test_conj_angle_sgn_abs():
    a = np.concatenate([_c(5), [0j]])
    z = et.tensor(a)
    np.testing.assert_array_equal(et.conj(z).numpy(), np.conj(a))
    np.testing.assert_array_equal(z.conj_physical().numpy(), np.conj(a))
    assert not z.conj().is_conj() and z.resolve_conj() is z
    np.testing.assert_allclose(z.angle().numpy(), np.angle(a))
    assert z.angle().dtype is et.float64 and z.abs().dtype is et.float64
    np.testing.assert_allclose(z.abs().numpy(), np.abs(a))
    want = np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a)))
    np.testing.assert_allclose(et.sgn(z).numpy(), want)
    x = np.array([-2.0, 0.0, 3.0, np.nan, -np.inf])
    np.testing.assert_array_equal(et.angle(et.tensor(x)).numpy(), [np.pi, 0, 0, np.nan, np.pi])
    np.testing.assert_array_equal(et.sgn(et.tensor(x[:3])).numpy(), [-1.0, 0.0, 1.0])
    w = et.tensor(a)
    w.conj_physical_()
    np.testing.assert_array_equal(w.numpy(), np.conj(a))


def test_sgn_of_infinite_and_nan_is_quiet():
    # z / |z| at an infinite or NaN element is NaN, as in PyTorch, and NumPy does not warn
    a = np.array([complex(np.inf, 0), complex(-np.inf, np.inf), complex(np.nan, 1), 0j, 3 + 4j],
                 np.complex64)
    with np.errstate(invalid="ignore"):
        want = np.where(np.abs(a) == 0, 0, a / np.abs(a))
    got = et.sgn(et.tensor(a))
    assert got.dtype is et.complex64
    np.testing.assert_array_equal(got.numpy(), want)


# ------------------------------------------------------------------------ math vs NumPy
_UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
          "atan", "asinh", "acosh", "atanh", "reciprocal", "log1p", "expm1", "log2", "log10",
          "square", "neg"]
_NP = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
       "acosh": "arccosh", "atanh": "arctanh", "neg": "negative"}


@pytest.mark.parametrize("name", _UNARY)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unary(name, dtype):
    a = _c(4, 3, dtype=dtype)
    got = getattr(et, name)(et.tensor(a))
    assert got.dtype.np == dtype
    want = getattr(np, _NP.get(name, name))(a)
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def test_sigmoid_and_rsqrt():
    a = _c(6)
    np.testing.assert_allclose(et.sigmoid(et.tensor(a)).numpy(), 1 / (1 + np.exp(-a)))
    np.testing.assert_allclose(et.rsqrt(et.tensor(a)).numpy(), 1 / np.sqrt(a))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_binary(op):
    a, b = _c(3, 4), _c(4)
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
         "pow": np.power}[op]
    np.testing.assert_allclose(getattr(et, op)(et.tensor(a), et.tensor(b)).numpy(), f(a, b),
                               rtol=1e-12)
    np.testing.assert_allclose(getattr(et, op)(et.tensor(a), 2.5).numpy(), f(a, 2.5),
                               rtol=1e-12)
    r = RNG.standard_normal(4)
    got = getattr(et, op)(et.tensor(r), et.tensor(b))
    assert got.dtype is et.complex128
    np.testing.assert_allclose(got.numpy(), f(r, b), rtol=1e-12)


def test_eq_ne_and_isclose():
    a = _c(4)
    z = et.tensor(a)
    assert (z == z).all().item() and not (z != z).any().item()
    assert et.isclose(z, z + 1e-12).all().item()
    assert et.isfinite(z).all().item()


def test_matmul_family():
    a, b = _c(2, 3, 4), _c(2, 4, 5)
    np.testing.assert_allclose(et.matmul(et.tensor(a), et.tensor(b)).numpy(), a @ b,
                               rtol=1e-12)
    np.testing.assert_allclose(et.bmm(et.tensor(a), et.tensor(b)).numpy(), a @ b, rtol=1e-12)
    v, w = _c(4), _c(4)
    np.testing.assert_allclose(et.dot(et.tensor(v), et.tensor(w)).numpy(), np.dot(v, w))
    np.testing.assert_allclose(et.vdot(et.tensor(v), et.tensor(w)).numpy(), np.vdot(v, w))
    with pytest.raises(RuntimeError, match="same dtype"):
        et.matmul(et.ones(2, 3, dtype=et.float64), et.tensor(_c(3, 2)))


def test_reductions():
    a = _c(3, 4)
    z = et.tensor(a)
    np.testing.assert_allclose(z.sum(1).numpy(), a.sum(1))
    np.testing.assert_allclose(z.mean(0).numpy(), a.mean(0))
    np.testing.assert_allclose(z.prod(1).numpy(), a.prod(1))
    np.testing.assert_allclose(z.cumsum(1).numpy(), a.cumsum(1))
    v = z.var(1)
    assert v.dtype is et.float64
    np.testing.assert_allclose(v.numpy(), a.var(1, ddof=1))
    np.testing.assert_allclose(z.std().numpy(), a.std(ddof=1))
    np.testing.assert_allclose(z.norm().numpy(), np.linalg.norm(a))
    np.testing.assert_allclose(et.linalg.vector_norm(z, 1).numpy(), np.abs(a).sum())
    want = np.log(np.exp(a).sum(1))
    np.testing.assert_allclose(z.logsumexp(1).numpy(), want, rtol=1e-12)
    big = et.tensor(a * 0 + 1e4 + 1j)  # the shift keeps exp finite and the phase intact
    np.testing.assert_allclose(big.logsumexp(1).numpy(), 1e4 + np.log(4) + 1j, rtol=1e-12)


def test_shape_ops_keep_complex():
    a = _c(2, 3)
    z = et.tensor(a)
    np.testing.assert_array_equal(z.t().numpy(), a.T)
    np.testing.assert_array_equal(et.cat([z, z]).numpy(), np.concatenate([a, a]))
    np.testing.assert_array_equal(z[:, [0, 2]].numpy(), a[:, [0, 2]])
    np.testing.assert_array_equal(z.flip(1).numpy(), a[:, ::-1])
    assert z.to(et.complex64).dtype is et.complex64
    assert et.ones(2).to(et.complex128).dtype is et.complex128


# --------------------------------------------------------------- ops without complex kernels
@pytest.mark.parametrize("call", [
    lambda z: z < z, lambda z: z >= 0, lambda z: et.maximum(z, z), lambda z: et.fmin(z, z),
    lambda z: et.remainder(z, 2), lambda z: et.atan2(z, z), lambda z: z.floor(),
    lambda z: z.ceil(), lambda z: z.trunc(), lambda z: et.erf(z), lambda z: et.relu(z),
    lambda z: et.clamp(z, min=0), lambda z: z.frac(), lambda z: et.hypot(z, z),
])
def test_no_complex_kernel_raises(call):
    z = et.tensor(_c(3, dtype=np.complex64))
    with pytest.raises(RuntimeError, match="ComplexFloat|complex"):
        call(z)


def test_sign_points_to_sgn():
    with pytest.raises(RuntimeError, match="sgn"):
        et.sign(et.tensor([1j]))


def test_inplace_complex_into_real_raises():
    x = et.ones(2)
    with pytest.raises(RuntimeError, match="ComplexFloat can't be cast"):
        x.mul_(et.tensor([1j, 1j]))


def test_nan_to_num_cov_corrcoef_logaddexp():
    a = np.array([1 + np.nan * 1j, np.inf - 2j, 3 + 4j])
    np.testing.assert_array_equal(et.nan_to_num(et.tensor(a)).numpy(), np.nan_to_num(a))
    x = _c(3, 5)
    np.testing.assert_allclose(et.cov(et.tensor(x)).numpy(), np.cov(x), rtol=1e-12)
    want = np.corrcoef(x)
    want = np.clip(want.real, -1, 1) + 1j * np.clip(want.imag, -1, 1)
    np.testing.assert_allclose(et.corrcoef(et.tensor(x)).numpy(), want, rtol=1e-12)
    p, q = _c(4), _c(4)
    np.testing.assert_allclose(et.logaddexp(et.tensor(p), et.tensor(q)).numpy(),
                               np.log(np.exp(p) + np.exp(q)), rtol=1e-12)
    assert et.float_power(et.tensor(p), 2).dtype is et.complex128


@pytest.mark.parametrize("call", [
    lambda z: z.amax(), lambda z: z.max(), lambda z: z.min(0), lambda z: z.median(),
    lambda z: z.sort(), lambda z: z.argsort(), lambda z: z.argmax(), lambda z: z.topk(1),
    lambda z: z.unique(), lambda z: et.lgamma(z), lambda z: et.special.xlogy(z, z),
    lambda z: et.isposinf(z), lambda z: et.round(z), lambda z: z.nansum(),
    lambda z: et.searchsorted(z, z), lambda z: et.cdist(z.view(1, 3), z.view(1, 3)),
])
def test_ordered_and_special_ops_reject_complex(call):
    with pytest.raises(RuntimeError):
        call(et.tensor(_c(3)))


def test_uniform_and_normal_fill_each_part():
    et.manual_seed(1)
    u = et.empty(40000, dtype=et.complex64).uniform_(-2, 3).numpy()
    for part in (u.real, u.imag):
        assert part.min() >= -2 and part.max() < 3 and abs(part.mean() - 0.5) < 0.05
    n = et.empty(200000, dtype=et.complex128).normal_(3, 2).numpy()
    for part in (n.real, n.imag):  # mean on each part, variance std**2 / 2 on each
        assert abs(part.mean() - 3) < 0.02 and abs(part.var() - 2) < 0.03
    with pytest.raises(RuntimeError, match="floating-point"):
        et.empty(3, dtype=et.int64).normal_()


def test_sinc_and_geqrf_take_complex_input():
    z = np.array([0, 0.5 + 0.2j, -1.3j, 2 + 1j])
    want = np.where(z == 0, 1, np.sin(np.pi * z) / np.where(z == 0, 1, np.pi * z))
    np.testing.assert_allclose(et.sinc(et.tensor(z)).numpy(), want, rtol=1e-12)
    a = _c(4, 3)
    h, tau = et.geqrf(et.tensor(a))
    r = np.triu(h.numpy()[:3])
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a, mode="r")), rtol=1e-10)
    assert tau.dtype is et.complex128 and tau.shape == (3,)
