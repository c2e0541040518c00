"""The special-function kernels of ``ember.tensor.kernels.special`` (Numba loops of
``kernels/cpu/cephes.py`` and ``kernels/cpu/erf.py``: polygamma, i0, i0e, i1, i1e, k0, k0e,
k1, k1e, j0, j1, y0, y1, lgamma, ndtr, ndtri) against SciPy: float32 as SciPy's float64 result
rounded once, float64 within a few ulp; specials (inf, NaN, -0.0, poles, the series' boundary at 8),
strided, Fortran-ordered and 0-d inputs; float16 through float32. On a GPU, the CUDA side
(``cupyx.scipy.special``) against the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from ember.tensor.kernels import special as S

sp = pytest.importorskip("scipy.special")

_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 8.0, -8.0, 7.999999, 8.000001, 1e-300, 5e-324,
             0.5, 1e-20, 9.0, 700.0, 709.7, 710.0, 1e7, 1e8, 1e9, 1e300, -1e300, -1.0, -2.0,
             -2.5, -1e-10, -100.25]


def _inputs(dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([_SPECIALS, rng.normal(0, 3, 3000), rng.uniform(-30, 30, 3000),
                        np.exp(rng.uniform(-40, 40, 2000))])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _check(got, want, dtype, rtol):
    assert got.dtype == dtype and got.shape == want.shape
    if dtype == np.float32:  # computed in float64 and rounded once, like SciPy's float32 loop
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _scipy(name, x, *n):
    with np.errstate(all="ignore"):
        return getattr(sp, name)(*n, x.astype(np.float64)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "ndtr"])
def test_unary_matches_scipy(name, dtype):
    x = _inputs(dtype)
    with np.errstate(all="raise"):  # the loops raise no floating-point warning
        got = getattr(S, name)(np, x)
    if name == "ndtr" and dtype == np.float32:  # float32 arithmetic: within 6.2 ulp
        want = sp.ndtr(x.astype(np.float64))
        assert got.dtype == dtype
        tiny = np.finfo(np.float32).tiny  # (subnormal results: their spacing)
        np.testing.assert_allclose(got, want, rtol=7 * 2.0 ** -23, atol=7 * tiny * 2.0 ** -23)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want.astype(dtype)))
        return
    # ndtr's far tail: the rounding of x / sqrt(2) costs both about 2e-13 against mpmath
    _check(got, _scipy(name, x), dtype, 1e-12 if name == "ndtr" else 1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 30, 170, 171, 255, 256, 300])
def test_polygamma_matches_scipy(n, dtype):
    x = _inputs(dtype)
    with np.errstate(all="raise"):
        got = S.polygamma(np, n, x)
    want = _scipy("polygamma", x, n)
    # float64: the vectorized loop's powers are squarings (a few ulp per term, n up to 255)
    _check(got, want, dtype, 1e-15 * (n + 10))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lgamma_matches_scipy(dtype):
    # and a dense grid over the poles, Cephes' boundaries (2, 3, 13, -34) and near the zeros
    # at 1 and 2, where the result is small
    x = np.concatenate([_inputs(dtype), np.linspace(-40, 40, 80001).astype(dtype),
                        1 + np.linspace(-1e-5, 1e-5, 2001).astype(dtype),
                        2 + np.linspace(-1e-5, 1e-5, 2001).astype(dtype)])
    with np.errstate(all="raise"):
        got = S.lgamma(np, x)
    want = _scipy("gammaln", x)
    assert got.dtype == dtype
    assert np.all(want[x == -np.inf] == -np.inf)
    want[x == -np.inf] = np.inf  # PyTorch's value
    if dtype == np.float32:
        np.testing.assert_array_equal(got, want)
    else:  # within 4 ulp of max(1, |result|) (near a zero, both lose relative accuracy)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        err = np.abs(got[finite] - want[finite])
        assert np.all(err <= 4 * np.spacing(np.maximum(np.abs(want[finite]), 1.0)))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["k0", "k0e", "k1", "k1e"])
def test_bessel_k_matches_scipy(name, dtype):
    x = np.concatenate([_inputs(dtype), np.linspace(0, 4, 4001).astype(dtype)])  # (2: a seam)
    with np.errstate(all="raise"):
        got = getattr(S, name)(np, x)
    want = _scipy(name, x)
    nan = np.isnan(want)  # (below 0 and at NaN; a NaN's sign is not compared)
    np.testing.assert_array_equal(np.isnan(got), nan)
    # float64: vexp / vlog against libm, within 2e-15 of SciPy
    _check(got[~nan], want[~nan], dtype, 3e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["j0", "j1", "y0", "y1"])
def test_bessel_jy_matches_scipy(name, dtype):
    # and a dense grid over the seam at 5, both signs, and the zeros up to 10
    x = np.concatenate([_inputs(dtype), np.linspace(-10, 10, 20001).astype(dtype),
                        np.array([5.0, -5.0, np.nextafter(5.0, 6.0), 1e-5, 9.99e-6, -1e-6],
                                 dtype)])
    with np.errstate(all="raise"):
        got = getattr(S, name)(np, x)
    want = _scipy(name, x)
    nan = np.isnan(want)  # (Y below 0, infinities; a NaN's sign is not compared)
    np.testing.assert_array_equal(np.isnan(got), nan)
    got, want = got[~nan], want[~nan]
    assert got.dtype == dtype
    if dtype == np.float32:
        np.testing.assert_array_equal(got, want)
    else:  # within 5 ulp of max(1, |result|) (near a zero, both lose relative accuracy)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        err = np.abs(got[finite] - want[finite])
        assert np.all(err <= 5 * np.spacing(np.maximum(np.abs(want[finite]), 1.0)))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ndtri_matches_scipy(dtype):
    rng = np.random.default_rng(1)
    # the centre, both tails down to the smallest subnormal and up to the last float below 1,
    # Cephes' boundaries (exp(-2), exp(-32)), 0, 1 and outside [0, 1]
    x = np.concatenate([rng.uniform(0, 1, 20000), np.exp(rng.uniform(-745, 0, 10000)),
                        1 - np.exp(rng.uniform(-37, 0, 10000)),
                        [0.0, -0.0, 1.0, 0.5, np.nan, -1.0, 2.0, np.inf, -np.inf, 5e-324, 1e-300,
                         np.exp(-2.0), 1 - np.exp(-2.0), np.exp(-32.0), np.nextafter(1.0, 0.0),
                         np.nextafter(0.0, 1.0)]])
    with np.errstate(all="ignore"):
        x = x.astype(dtype)
    with np.errstate(all="raise"):
        got = S.ndtri(np, x)
    want = _scipy("ndtri", x)
    nan = np.isnan(want)  # (the sign of a NaN result is SciPy's arithmetic's: not compared)
    np.testing.assert_array_equal(np.isnan(got), nan)
    # float64: the logs' rounding (vlog against libm) moves the tail by up to 6 ulp
    _check(got[~nan], want[~nan], dtype, 2e-15)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "k0", "k0e", "k1", "k1e", "lgamma",
                                  "ndtr", "ndtri", "polygamma", "j0", "j1", "y0", "y1"])
def test_layouts_and_half(name):
    def f(a):
        return S.polygamma(np, 2, a) if name == "polygamma" else getattr(S, name)(np, a)

    hi = 0.99 if name == "ndtri" else 12.0  # (ndtri's domain: [0, 1])
    base = np.linspace(0.25, hi, 60).reshape(6, 10)
    want = f(base)
    strided = np.linspace(0.25, hi, 120).reshape(6, 20)[:, ::2]
    np.testing.assert_array_equal(f(strided), f(np.ascontiguousarray(strided)))
    fortran = np.asfortranarray(base)
    got = f(fortran)
    assert got.flags.f_contiguous
    np.testing.assert_array_equal(got, want)
    zero_d = f(np.float64(0.75) * np.ones(()))
    assert zero_d.shape == () and zero_d == f(np.array([0.75]))[0]
    half = f(base.astype(np.float16))
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, f(base.astype(np.float16).astype(np.float32))
                                  .astype(np.float16))
    assert f(np.empty((0, 3))).shape == (0, 3)


def test_kernels_reject_other_dtypes():
    from ember.tensor.kernels.cpu import cephes, erf

    with pytest.raises(TypeError, match="no kernel for dtype int64"):
        cephes.i1e(np.arange(3))
    with pytest.raises(TypeError, match="no kernel for dtype int64"):
        erf.ndtr(np.arange(3))
    with pytest.raises(ValueError, match="n >= 1"):
        cephes.polygamma(0, np.ones(3))
    with pytest.raises(TypeError, match="no kernel for dtype int64"):
        cephes.lgamma(np.arange(3))


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["i0e", "i1", "i1e", "k0", "k0e", "k1", "k1e", "lgamma", "ndtr",
                                  "ndtri", "polygamma"])
def test_cuda_matches_the_cpu_kernels(cp, name, dtype):
    x = np.concatenate([np.linspace(-12, 12, 241), [0.5, 8.0, np.inf, np.nan]]).astype(dtype)
    if name[0] == "k":  # (K's domain: [0, inf])
        x = np.abs(x)
    if name == "ndtri":
        x = np.concatenate([np.linspace(0, 1, 241), [1e-30, np.nan]]).astype(dtype)
    if name == "polygamma":
        x = np.abs(x) + 0.25
        got, want = S.polygamma(cp, 3, cp.asarray(x)), S.polygamma(np, 3, x)
    else:
        got, want = getattr(S, name)(cp, cp.asarray(x)), getattr(S, name)(np, x)
    assert got.dtype == dtype
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def _ulps(got, want):
    finite = np.isfinite(want)
    return np.max(np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite])),
                  initial=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_loops_match_numpy(dtype):
    """entr, xlogy, xlog1py and logit (``kernels/cpu/logs.py``): within 2 ulp of NumPy's
    formulas, the special values (0, -0, inf, NaN, negative) and signs exactly PyTorch's."""
    v = np.concatenate([_inputs(dtype)[:len(_SPECIALS)],
                        np.array([0.3, 0.7, 1.0, -1.0, 1e-45, 3e-8], dtype),
                        np.random.default_rng(0).uniform(-1, 3, 200).astype(dtype)])
    x, y = np.meshgrid(v, v[:60])
    with np.errstate(all="ignore"):
        clipped = np.clip(v, 1e-3, 1 - 1e-3)
        want = {"entr": np.where(v < 0, -np.inf, np.where(v == 0, 0.0, -(v * np.log(v)))),
                "xlogy": np.where((x == 0) & (y == y), 0.0, x * np.log(y)),
                "xlog1py": np.where((x == 0) & (y == y), 0.0, x * np.log1p(y)),
                "logit": np.log(v / (1 - v)), "logit_eps": np.log(clipped / (1 - clipped))}
    with np.errstate(all="raise"):  # the loops raise no floating-point warning
        got = {"entr": S.entr(np, v), "xlogy": S.xlogy(np, x, y), "xlog1py": S.xlog1py(np, x, y),
               "logit": S.logit(np, v), "logit_eps": S.logit(np, v, 1e-3)}
    for name, w in want.items():
        g = got[name]
        assert g.dtype == dtype and g.shape == w.shape, name
        nan = np.isnan(w)
        np.testing.assert_array_equal(np.isnan(g), nan, err_msg=name)
        np.testing.assert_array_equal(g[np.isinf(w)], w[np.isinf(w)], err_msg=name)
        np.testing.assert_array_equal(np.signbit(g[~nan]), np.signbit(w[~nan]), err_msg=name)
        assert _ulps(g, w.astype(dtype)) <= 2, name
    # broadcast (a column against a row, a single value), Fortran order, strided
    col, row = x[:, :1].copy(), y[:1, :7].copy()
    full = np.broadcast_to(col, (60, 7)).copy(), np.broadcast_to(row, (60, 7)).copy()
    np.testing.assert_array_equal(S.xlogy(np, col, row), S.xlogy(np, *full))
    np.testing.assert_array_equal(S.xlogy(np, x, np.asarray(2.5, dtype)),
                                  S.xlogy(np, x, np.full_like(x, 2.5)))
    f = S.xlog1py(np, np.asfortranarray(x), np.asfortranarray(y))
    assert f.flags.f_contiguous
    np.testing.assert_array_equal(f, S.xlog1py(np, x, y))
    strided = v[:232].reshape(-1, 2)[::2]
    np.testing.assert_array_equal(S.entr(np, strided), S.entr(np, strided.copy()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_sinc_loops_match_numpy(dtype):
    """sinc and spherical_j0 (``kernels/cpu/sinc.py``): 1 at 0 (either sign), NaN at inf and
    NaN, else within 2 ulp of NumPy's ``sin(y) / y``; strided and Fortran-ordered inputs."""
    rng = np.random.default_rng(0)
    v = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 0.5, 1.0, -3.0],
                        rng.uniform(-20, 20, 400)])
    if np.dtype(dtype).kind == "c":
        v = v + 1j * np.concatenate([np.zeros(9), rng.uniform(-3, 3, 400)])
    v = v.astype(dtype)
    real = np.float32 if dtype in (np.float32, np.complex64) else np.float64
    with np.errstate(all="ignore"):
        want = {"sinc": np.sinc(v), "spherical_j0": np.where(v == 0, 1, np.sin(v) / v)}
    with np.errstate(all="raise"):
        got = {"sinc": S.sinc(np, v), "spherical_j0": S.spherical_j0(np, v)}
    for name, w in want.items():
        g = got[name]
        assert g.dtype == dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g[:2], [1, 1], err_msg=name)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        finite = np.isfinite(w)
        err = np.abs(g[finite] - w[finite]) / np.spacing(np.abs(w[finite]).astype(real))
        assert err.max() <= 2, name
    grid = v[:400].reshape(20, 20)
    np.testing.assert_array_equal(S.sinc(np, grid[:, ::2]), S.sinc(np, grid[:, ::2].copy()))
    f = S.spherical_j0(np, np.asfortranarray(grid))
    assert f.flags.f_contiguous
    np.testing.assert_array_equal(f, S.spherical_j0(np, grid))
