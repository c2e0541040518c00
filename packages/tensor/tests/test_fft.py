"""ember.tensor.fft's transforms against numpy.fft: every function x norm mode x ``n``/``s``
(default, trimming, padding, ``-1``) x ``dim``, their dtypes (float32 stays single precision,
integers promote, float16/bfloat16 and complex input to the real transforms are refused), and
PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _fft_ops

F = et.fft
NORMS = [None, "backward", "ortho", "forward"]
FLIP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
RNG = np.random.default_rng(17)


@pytest.fixture(autouse=True, params=["pocketfft", "public"])
def _transforms(request, monkeypatch):
    """Every test twice: through SciPy's pocketfft binding and through the public
    ``numpy.fft`` functions, which run where a SciPy build lacks that private module."""
    if request.param == "public":
        monkeypatch.setattr(_fft_ops, "_POCKETFFT", [None])


def _real(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _cplx(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _close(got, want, dtype=None):
    got = got.numpy()
    tol = 1e-4 if got.dtype in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if dtype is not None:
        assert got.dtype == dtype


# --------------------------------------------------------------------------- 1-d values
ONE_D = {  # name: (numpy function, takes complex input, takes real input, output is complex)
    "fft": (np.fft.fft, True, True), "ifft": (np.fft.ifft, True, True),
    "rfft": (np.fft.rfft, False, True), "ihfft": (np.fft.ihfft, False, True),
    "irfft": (np.fft.irfft, True, True), "hfft": (np.fft.hfft, True, True),
}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 3, 6, 11])
@pytest.mark.parametrize("name", sorted(ONE_D))
def test_1d_transforms_match_numpy(name, n, norm):
    ref, takes_complex, takes_real = ONE_D[name]
    inputs = ([_cplx(3, 6)] if takes_complex else []) + ([_real(3, 6)] if takes_real else [])
    for x in inputs:
        for dim in (-1, 1, 0):
            want = ref(x, n, dim, norm)
            _close(F.__dict__[name](et.tensor(x), n, dim, norm), want)
            _close(F.__dict__[name](et.tensor(x), n=n, dim=dim, norm=norm), want)


@pytest.mark.parametrize("name", sorted(ONE_D))
def test_1d_transforms_keep_single_precision(name):
    ref, takes_complex, _ = ONE_D[name]
    x = _cplx(4, 6, dtype=np.complex64) if takes_complex else _real(4, 6, dtype=np.float32)
    out = F.__dict__[name](et.tensor(x))
    want = ref(x)
    assert out.dtype == (et.complex64 if np.iscomplexobj(want) else et.float32)
    _close(out, want)
    out64 = F.__dict__[name](et.tensor(x.astype(np.complex128 if takes_complex else np.float64)))
    assert out64.dtype == (et.complex128 if np.iscomplexobj(want) else et.float64)


# --------------------------------------------------------------------------- n-d values
def _np_hfftn(x, s=None, axes=None, norm=None):
    """PyTorch's hfftn: irfftn of the conjugate with the scaling on the other side."""
    return np.fft.irfftn(np.conj(x), s, axes, FLIP[norm])


def _np_ihfftn(x, s=None, axes=None, norm=None):
    return np.conj(np.fft.rfftn(x, s, axes, FLIP[norm]))


N_D = {  # name: (numpy n-d function, input is one-sided, takes complex input, takes real)
    "fftn": (np.fft.fftn, False, True, True), "ifftn": (np.fft.ifftn, False, True, True),
    "rfftn": (np.fft.rfftn, False, False, True), "irfftn": (np.fft.irfftn, True, True, True),
    "hfftn": (_np_hfftn, True, True, True), "ihfftn": (_np_ihfftn, False, False, True),
}

# (s, dim) as given to ember; the axes and sizes numpy is called with
N_D_ARGS = [
    (None, None), ((4, 3), None), ((2, 7), (2, 0)), (None, (0, 2)), (None, (1,)),
    ((5,), (-1,)), ((3, 2, 6), None), ((-1, 8), (1, 2)),
]


def _np_args(x, s, dim, onesided, default=None):
    dim = default if dim is None else dim
    axes = tuple(range(x.ndim - len(s), x.ndim)) if dim is None and s is not None else \
        (tuple(range(x.ndim)) if dim is None else tuple(dim))
    if s is None:
        if onesided:  # numpy's default for the last axis is PyTorch's
            return [x.shape[a] for a in axes[:-1]] + [2 * (x.shape[axes[-1]] - 1)], axes
        return None, axes
    sizes = [x.shape[a] if n == -1 else n for n, a in zip(s, axes)]
    if onesided and s[-1] == -1:
        sizes[-1] = 2 * (x.shape[axes[-1]] - 1)
    return sizes, axes


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", N_D_ARGS)
@pytest.mark.parametrize("name", sorted(N_D))
def test_nd_transforms_match_numpy(name, s, dim, norm):
    ref, onesided, takes_complex, takes_real = N_D[name]
    inputs = ([_cplx(3, 4, 5)] if takes_complex else []) + ([_real(3, 4, 5)] if takes_real else [])
    for x in inputs:
        sizes, axes = _np_args(x, s, dim, onesided)
        want = ref(x, sizes, axes, norm)
        _close(F.__dict__[name](et.tensor(x), s, dim, norm), want)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", [(None, (-2, -1)), ((3, 6), (-2, -1)), ((2, 5), (0, 2)),
                                   ((-1, 2), (2, 1)), (None, (1, 0))])
@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
def test_2d_transforms_are_the_nd_ones_over_two_dims(name, s, dim, norm):
    ref, onesided, takes_complex, _ = N_D[name[:-1] + "n"]
    x = _cplx(3, 4, 5) if takes_complex else _real(3, 4, 5)
    sizes, axes = _np_args(x, s, dim, onesided)
    want = ref(x, sizes, axes, norm)
    if dim == (-2, -1):  # the default
        _close(F.__dict__[name](et.tensor(x), s, norm=norm), want)
    _close(F.__dict__[name](et.tensor(x), s, dim, norm), want)


def test_hfftn_and_ihfftn_over_one_dim_are_hfft_and_ihfft():
    x, r = _cplx(3, 5), _real(3, 8)
    for norm in NORMS:
        _close(F.hfftn(et.tensor(x), dim=(0,), norm=norm), np.fft.hfft(x, axis=0, norm=norm))
        _close(F.hfft2(et.tensor(x), s=(7, -1), norm=norm),
               _np_hfftn(x, (7, 8), (0, 1), norm))
        _close(F.ihfftn(et.tensor(r), s=(6,), norm=norm), np.fft.ihfft(r, 6, -1, norm))


def test_fftn_over_no_dims_is_a_complex_copy():
    x = et.tensor(_real(2, 3))
    y = F.fftn(x, dim=())
    assert y.dtype == et.complex128
    _close(y, x.numpy())
    np.testing.assert_array_equal(F.fftn(et.tensor(2.0)).numpy(), np.complex64(2.0))


def test_batched_over_other_dims():
    x = _cplx(2, 3, 8)
    got = F.fft(et.tensor(x), dim=-1).numpy()
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], np.fft.fft(x[i, j]), rtol=1e-12, atol=1e-12)


def test_round_trips():
    x = _real(4, 7)
    t = et.tensor(x)
    _close(F.irfft(F.rfft(t), n=7), x)
    _close(F.ifftn(F.fftn(t)).real, x)
    _close(F.hfft(F.ihfft(t), n=7), x)
    _close(F.irfftn(F.rfftn(t, norm="ortho"), s=(4, 7), norm="ortho"), x)
    _close(F.hfft2(F.ihfft2(t, norm="forward"), s=(4, 7), norm="forward"), x)


def test_non_contiguous_input():
    x = _cplx(6, 4)
    t = et.tensor(x).t()
    assert not t.is_contiguous()
    _close(F.fft(t, dim=0), np.fft.fft(x.T, axis=0))
    _close(F.irfft2(t[:, ::2]), np.fft.irfftn(x.T[:, ::2], axes=(0, 1), s=(4, 4)))


# --------------------------------------------------------------------------- dtypes
ALL = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
       "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_OUT = {"irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn"}
REAL_IN = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", [et.int32, et.int64, et.uint8, et.bool, et.float32,
                                   et.float64, et.complex64, et.complex128])
def test_result_dtypes(name, dtype):
    x = (et.ones(3, 4) * 2).to(dtype)
    fn = F.__dict__[name]
    if name in REAL_IN and dtype.is_complex:
        with pytest.raises(RuntimeError, match="expects a real|real-valued|floating-point"):
            fn(x)
        return
    out = fn(x)
    wide = dtype in (et.float64, et.complex128)
    if name in REAL_OUT:
        assert out.dtype == (et.float64 if wide else et.float32)
    else:
        assert out.dtype == (et.complex128 if wide else et.complex64)


@pytest.mark.parametrize("name", ALL)
def test_integers_promote_to_the_default_dtype(name):
    prev = et.get_default_dtype()
    et.set_default_dtype(et.float64)
    try:
        out = F.__dict__[name](et.ones(3, 4, dtype=et.int64))
    finally:
        et.set_default_dtype(prev)
    assert out.dtype == (et.float64 if name in REAL_OUT else et.complex128)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype,shown", [(et.float16, "Half"), (et.bfloat16, "BFloat16")])
def test_half_precision_is_refused_as_on_pytorchs_cpu(name, dtype, shown):
    with pytest.raises(RuntimeError, match=f"Unsupported dtype {shown}"):
        F.__dict__[name](et.ones(3, 4, dtype=dtype))


@pytest.mark.parametrize("name,msg", [
    ("rfft", "rfft expects a real input tensor, but got ComplexFloat"),
    ("ihfft", "ihfft expects a real input tensor, but got ComplexFloat"),
    ("rfftn", "rfftn expects a real-valued input tensor, but got ComplexFloat"),
    ("rfft2", "rfftn expects a real-valued input tensor, but got ComplexFloat"),
    ("ihfftn", "Only supports floating-point dtypes, but found: ComplexFloat"),
    ("ihfft2", "Only supports floating-point dtypes, but found: ComplexFloat"),
])
def test_complex_input_to_the_real_transforms_raises(name, msg):
    with pytest.raises(RuntimeError, match=msg):
        F.__dict__[name](et.ones(3, 4, dtype=et.complex64))


# --------------------------------------------------------------------------- errors
ONE = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
NDIM = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2",
        "ihfft2", "hfftn", "ihfftn"]


@pytest.mark.parametrize("name", ALL)
def test_invalid_norm_names_the_op(name):
    with pytest.raises(RuntimeError, match=f'{name}\\(\\): Invalid normalization mode: "bad"'):
        F.__dict__[name](et.ones(3, 4), norm="bad")
    with pytest.raises(TypeError, match="norm"):
        F.__dict__[name](et.ones(3, 4), norm=2)


@pytest.mark.parametrize("name", ONE)
def test_1d_errors(name):
    fn = F.__dict__[name]
    x = et.ones(3, 4)
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): Invalid number of data points "
                                           "\\(0\\) specified"):
        fn(x, n=0)
    with pytest.raises(RuntimeError, match="Invalid number of data points \\(-2\\)"):
        fn(x, n=-2)
    with pytest.raises(IndexError, match=f"{name}\\(\\): Dimension out of range \\(expected "
                                         "to be in range of \\[-2, 1\\], but got 2\\)"):
        fn(x, dim=2)
    with pytest.raises(IndexError, match="Dimension out of range.*got -3"):
        fn(x, dim=-3)
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no "
                                         "dimensions"):
        fn(et.tensor(1.0))


@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_one_sided_input_of_one_bin_has_no_default_length(name):
    with pytest.raises(RuntimeError, match="Invalid number of data points \\(0\\)"):
        F.__dict__[name](et.ones(3, 1))
    assert F.__dict__[name](et.ones(3, 1), n=1).shape == (3, 1)


@pytest.mark.parametrize("name", NDIM)
def test_nd_errors(name):
    fn = F.__dict__[name]
    x = et.ones(3, 4)
    with pytest.raises(RuntimeError, match="Invalid number of data points \\(0\\) specified"):
        fn(x, s=(0, 3))
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): When given, dim and shape arguments "
                                           "must have the same length"):
        fn(x, s=(3,), dim=(0, 1))
    with pytest.raises(IndexError, match="Dimension out of range \\(expected to be in range "
                                         "of \\[-2, 1\\], but got 2\\)"):
        fn(x, dim=(0, 2))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        fn(x, dim=(0, -2))
    if name.endswith("n"):
        with pytest.raises(RuntimeError, match="Got shape with 3 values but input tensor only "
                                               "has 2 dimensions."):
            fn(x, s=(1, 2, 3))
    else:  # fft2's dim defaults to two dims
        with pytest.raises(RuntimeError, match="same length"):
            fn(x, s=(1, 2, 3))


@pytest.mark.parametrize("name,internal", [
    ("rfftn", "rfftn"), ("rfft2", "rfftn"), ("irfftn", "irfftn"), ("irfft2", "irfftn"),
    ("hfftn", "hfftn"), ("hfft2", "hfftn"), ("ihfftn", "ihfftn"), ("ihfft2", "ihfftn")])
def test_real_nd_transforms_need_a_dim(name, internal):
    with pytest.raises(RuntimeError, match=f"{internal} must transform at least one axis"):
        F.__dict__[name](et.ones(3, 4), dim=())


def test_wrong_argument_types_raise_type_error():
    with pytest.raises(TypeError, match="fft"):
        F.fft([1.0, 2.0])
    with pytest.raises(TypeError, match="fftshift"):
        F.fftshift(3)


# --------------------------------------------------------------------------- out=
@pytest.mark.parametrize("name", ALL)
def test_out_receives_the_result(name):
    fn = F.__dict__[name]
    x = et.tensor(_real(3, 4))
    want = fn(x)
    out = et.empty(0, dtype=want.dtype)
    assert fn(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), want.numpy())


@pytest.mark.parametrize("name", ALL)
def test_out_of_the_wrong_kind_raises(name):
    fn = F.__dict__[name]
    x = et.ones(3, 4)
    internal = name if name in ONE else name[:-1] + "n"
    if name in REAL_OUT:
        with pytest.raises(RuntimeError, match=f"{internal} expects a floating point output "
                                               "tensor, but got ComplexFloat"):
            fn(x, out=et.empty(0, dtype=et.complex64))
    else:
        with pytest.raises(RuntimeError, match=f"{internal} expects a complex output tensor, "
                                               "but got Float"):
            fn(x, out=et.empty(0))


def test_out_may_be_of_another_precision_except_for_ihfft():
    x = et.ones(3, 4, dtype=et.float64)
    out = et.empty(0, dtype=et.complex64)
    F.fft(x, out=out)
    assert out.dtype == et.complex64 and out.shape == (3, 4)
    out = et.empty(0, dtype=et.float32)
    F.irfft(x, out=out)
    assert out.dtype == et.float32 and out.shape == (3, 6)
    with pytest.raises(RuntimeError, match="Found dtype ComplexFloat but expected ComplexDouble"):
        F.ihfft(x, out=et.empty(0, dtype=et.complex64))


@pytest.mark.parametrize("dim", [(1,), (0, 1), (-1,)])
@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("forward", [True, False])
def test_c2c_primitive_matches_scipy(dim, normalization, forward):
    import scipy.fft

    x = (np.arange(24.) - 1j * np.arange(24.)[::-1]).reshape(4, 6)
    norm = ["backward", "ortho", "forward"][normalization] if forward else \
        ["forward", "ortho", "backward"][normalization]
    want = (scipy.fft.fftn if forward else scipy.fft.ifftn)(x, axes=dim, norm=norm)
    got = _fft_ops._fft_c2c(et.tensor(x), list(dim), normalization, forward)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("last", [6, 7, 10, 4])  # the input's 4 bins fit, or are cut or padded
def test_c2r_primitive_resizes_the_one_sided_input_as_scipy(last):
    import scipy.fft

    x = (np.arange(12.) + 1j * np.arange(12.)[::-1]).reshape(3, 4)
    got = _fft_ops._fft_c2r(et.tensor(x), [0, 1], 2, last)
    want = scipy.fft.irfftn(x, s=[3, last], axes=(0, 1))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
