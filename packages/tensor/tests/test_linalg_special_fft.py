"""ember.tensor.linalg, .special, .fft and the added torch.* names: what the op table does
not check (import cost, return types, errors, in-place view ops, switches). Forward values
against NumPy/SciPy are the op table's (``testing/op_table_extra.py``)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _extra_ops, _linalg_ops, _special_ops
from ember.tensor.testing import op_table  # noqa: F401  (loads before its extension)
from ember.tensor.testing import op_table_extra as X


def test_importing_ember_tensor_does_not_import_scipy():
    code = ("import sys, ember.tensor as et; assert 'scipy' not in sys.modules; "
            "et.special.gammaln(et.ones(2)); print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "True"


def test_every_new_registry_op_has_a_table_entry():
    mods = {_linalg_ops.__name__, _special_ops.__name__, _extra_ops.__name__}
    mine = {n for n, op in et.OPS.items() if op.impl.__module__ in mods}
    covered = {op for e in X.EXTRA_ENTRIES for op in e.ops}
    covered |= {e.inplace for e in X.EXTRA_ENTRIES if e.inplace}
    assert mine, "no ops found"
    assert not sorted(mine - covered - X.EXTRA_NON_TABLE_OPS)


def test_submodules_and_names_are_exposed():
    assert et.linalg.solve is _linalg_ops.linalg_solve
    assert "linalg" in et.__all__ and "special" in et.__all__ and "fft" in et.__all__
    for name in ("det", "inverse", "cholesky", "qr", "svd", "lgamma", "digamma", "logit",
                 "xlogy", "nan_to_num", "softmax", "diff", "rot90", "kron", "cummax"):
        assert hasattr(et, name) and hasattr(et.Tensor, name), name
    assert et.pi == pytest.approx(3.141592653589793) and et.newaxis is None


def test_multi_output_ops_return_named_tuples():
    A = et.tensor([[4.0, 1.0], [1.0, 3.0]])
    r = et.linalg.svd(A)
    assert r.U.shape == (2, 2) and r.S.shape == (2,) and r.Vh.shape == (2, 2)
    assert et.linalg.eigh(A).eigenvalues.shape == (2,)
    assert et.linalg.slogdet(A).sign.item() == 1.0
    assert et.linalg.qr(A, mode="r").Q.numel() == 0
    v = et.svd(A)  # torch.svd: V, not Vh
    np.testing.assert_allclose((v.U * v.S) @ v.V.mT, A.numpy(), atol=1e-6)
    c = et.cummax(et.tensor([1, 3, 2]), 0)
    assert c.values.tolist() == [1, 3, 3] and c.indices.tolist() == [0, 1, 1]


def test_out_of_multi_output_linalg_op():
    A = et.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=et.float64)
    out = (et.empty(0, dtype=et.float64), et.empty(0, dtype=et.float64))
    r = et.linalg.eigh(A, out=out)
    assert r.eigenvalues is out[0] and out[1].shape == (2, 2)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: et.linalg.inv(et.ones(2, 3)), RuntimeError, "square"),
    (lambda: et.linalg.det(et.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda: et.linalg.inv(et.ones(2, 2, dtype=et.int64)), RuntimeError, "floating point"),
    (lambda: et.linalg.inv(et.zeros(2, 2)), et.linalg.LinAlgError, "singular"),
    (lambda: et.linalg.cholesky(-et.eye(2)), et.linalg.LinAlgError, "positive-definite"),
    (lambda: et.linalg.solve(et.eye(3), et.ones(2, 1)), RuntimeError, "Incompatible"),
    (lambda: et.linalg.qr(et.eye(2), "bad"), RuntimeError, "mode"),
    (lambda: et.linalg.vector_norm(et.ones(2), "fro"), TypeError, "ord"),
    (lambda: et.linalg.matrix_power(et.eye(2), 1.5), TypeError, "int"),
    (lambda: et.polygamma(-1, et.ones(2)), RuntimeError, "negative"),
    (lambda: et.bincount(et.tensor([-1, 2])), RuntimeError, "non-negative"),
    (lambda: et.scatter_reduce(et.zeros(2), 0, et.tensor([0]), et.ones(1), "max"),
     RuntimeError, "reduce"),
    (lambda: et.scatter_reduce(et.zeros(2), 0, et.tensor([5]), et.ones(1), "sum"),
     IndexError, "out of bounds"),
    (lambda: et.rot90(et.ones(2, 2), 1, (0, 0)), RuntimeError, "different"),
    (lambda: et.diff(et.tensor(1.0)), RuntimeError, "one-dimensional"),
])
def test_bad_inputs_raise_pytorch_exception_types(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_linalg_error_is_a_runtime_error():
    assert issubclass(et.linalg.LinAlgError, RuntimeError)


def test_ex_variants_report_info_instead_of_raising():
    sing = et.tensor([[1.0, 2.0], [2.0, 4.0]])
    assert et.linalg.inv_ex(sing).info.item() > 0
    assert et.linalg.cholesky_ex(-et.eye(2)).info.item() == 1
    assert et.linalg.solve_ex(sing, et.ones(2)).info.item() > 0
    with pytest.raises(et.linalg.LinAlgError):
        et.linalg.inv_ex(sing, check_errors=True)
    assert et.linalg.lu_factor_ex(sing).info.item() == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 6), (2, 2, 6, 4)])
def test_lu_factor_is_lapacks_per_matrix_in_column_major_order(shape, dtype):
    from scipy.linalg import lapack

    getrf = getattr(lapack, {np.float32: "sgetrf", np.float64: "dgetrf",
                             np.complex128: "zgetrf"}[dtype])
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    LU, piv = et.linalg.lu_factor(et.tensor(a))
    m, n = shape[-2:]
    item = np.dtype(dtype).itemsize
    assert LU.stride()[-2:] == (1, m) and LU._data.strides[-2:] == (item, m * item)
    for i, mat in enumerate(a.reshape(-1, m, n)):
        lu, p, _ = getrf(mat)
        np.testing.assert_allclose(LU.numpy().reshape(-1, m, n)[i], lu, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(piv.numpy().reshape(-1, min(m, n))[i], p + 1)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular_of_a_column_major_matrix_matches_scipy(upper, unitriangular):
    from scipy.linalg import solve_triangular

    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 6)) + 6 * np.eye(6)
    b = rng.standard_normal((6, 3))
    A = et.tensor(a.T.copy()).mT  # column-major, as an LU factor is
    assert not A._data.flags.c_contiguous and A._data.flags.f_contiguous
    x = et.linalg.solve_triangular(A, et.tensor(b), upper=upper, unitriangular=unitriangular)
    np.testing.assert_allclose(
        x.numpy(), solve_triangular(a, b, lower=not upper, unit_diagonal=unitriangular),
        rtol=1e-10)


def test_inplace_view_ops_change_shape_and_keep_storage():
    x = et.arange(6.0).reshape(2, 3)
    ptr = x.untyped_storage().data_ptr()
    v0 = x._version
    assert x.t_() is x and x.shape == (3, 2) and x.stride() == (1, 3)
    assert x.untyped_storage().data_ptr() == ptr and x._version > v0
    x.unsqueeze_(0)
    assert x.shape == (1, 3, 2)
    x.squeeze_()
    assert x.shape == (3, 2)
    x.transpose_(0, 1)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_thread_and_determinism_switches():
    n = et.get_num_threads()
    assert n >= 1
    et.set_num_threads(1)
    assert et.get_num_threads() == 1
    et.set_num_threads(n)
    assert not et.are_deterministic_algorithms_enabled()
    et.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert et.are_deterministic_algorithms_enabled()
        assert et.is_deterministic_algorithms_warn_only_enabled()
        assert et.get_deterministic_debug_mode() == 1
    finally:
        et.use_deterministic_algorithms(False)
    assert et.get_deterministic_debug_mode() == 0


def test_fft_helpers_against_numpy():
    np.testing.assert_allclose(et.fft.fftfreq(7, 0.1).numpy(), np.fft.fftfreq(7, 0.1),
                               rtol=1e-6)
    np.testing.assert_allclose(et.fft.rfftfreq(8).numpy(), np.fft.rfftfreq(8), rtol=1e-6)
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(et.fft.fftshift(et.tensor(x)).numpy(), np.fft.fftshift(x))
    np.testing.assert_array_equal(et.fft.ifftshift(et.tensor(x), 1).numpy(),
                                  np.fft.ifftshift(x, 1))


def test_window_functions_against_numpy():
    np.testing.assert_allclose(et.hann_window(6, periodic=False).numpy(), np.hanning(6),
                               atol=1e-6)
    np.testing.assert_allclose(et.hamming_window(6, periodic=False).numpy(), np.hamming(6),
                               atol=1e-6)
    np.testing.assert_allclose(et.blackman_window(6, periodic=False).numpy(),
                               np.blackman(6), atol=1e-6)
    np.testing.assert_allclose(et.bartlett_window(6, periodic=False).numpy(), np.bartlett(6),
                               atol=1e-6)
    np.testing.assert_allclose(et.kaiser_window(6, periodic=False, beta=4.0).numpy(),
                               np.kaiser(6, 4.0), atol=1e-6)
    assert et.hann_window(0).shape == (0,) and et.hann_window(1).tolist() == [1.0]
    assert et.hann_window(4, dtype=et.float64).dtype == et.float64


def test_digamma_at_signed_zeros_follows_scipy():
    """digamma is SciPy's (and CuPy's) psi as it stands: -inf at 0, inf at -0, as PyTorch."""
    import scipy.special as sp

    x = np.array([0.0, -0.0, -np.inf, np.inf, np.nan, 0.5, -1.0])
    np.testing.assert_array_equal(et.digamma(et.tensor(x)).numpy(), sp.psi(x))
    np.testing.assert_array_equal(et.polygamma(0, et.tensor(x)).numpy(), sp.psi(x))
    assert et.digamma(et.tensor([0.0, -0.0])).tolist() == [-np.inf, np.inf]  # PyTorch's


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_entr_xlogy_xlog1py_edges_against_scipy(dtype):
    """The edges of the one-pass forms: zeros, negatives, infinities and NaN, as SciPy's
    (and PyTorch's) entr, xlogy and xlog1py give them."""
    import scipy.special as ss

    v = np.array([-np.inf, -2.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, np.nan], dtype=dtype)
    np.testing.assert_allclose(et.special.entr(et.tensor(v)).numpy(), ss.entr(v), rtol=1e-6)
    x, y = np.meshgrid(v, v)
    for ours, ref in ((et.special.xlogy, ss.xlogy), (et.special.xlog1py, ss.xlog1py)):
        with np.errstate(all="ignore"):
            want = ref(x, y).astype(dtype)
        np.testing.assert_allclose(ours(et.tensor(x), et.tensor(y)).numpy(), want, rtol=1e-6)
