"""Matrix products and linear-algebra helpers against NumPy, on contiguous, transposed and
step-sliced operands, over the dtypes PyTorch supports for them, plus PyTorch's shape and
dtype errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _linalg as L
from ember.tensor._tensor import Tensor

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

DTYPES = [np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
LAYOUTS = ["contiguous", "transposed", "stepped"]


def make(shape, dtype, layout, seed=0):
    """(ember tensor, numpy array) with equal values in the given memory layout."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)

    def data(s):
        if dtype.kind in "iu":
            return rng.integers(0, 4, s).astype(dtype)
        if dtype.kind == "b":
            return rng.random(s) > 0.5
        return rng.standard_normal(s).astype(dtype)

    if layout == "contiguous" or len(shape) < 1:
        a = np.array(data(shape), order="C")
    elif layout == "transposed" and len(shape) >= 2:
        a = np.swapaxes(data(shape[:-2] + (shape[-1], shape[-2])), -1, -2)
    else:
        a = data(shape[:-1] + (shape[-1] * 2,))[..., ::2]
    return Tensor._make(a), a


def check(t, expected, dtype=None):
    assert isinstance(t, Tensor)
    expected = np.asarray(expected)
    dtype = np.dtype(dtype or expected.dtype)
    got = t.numpy()
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype.kind == "f":
        tol = {2: 2e-2, 4: 1e-4, 8: 1e-10}[dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, expected)


def ref_matmul(a, b):
    if a.dtype.kind == "f":
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.matmul(a, b)


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)), ((0, 3), (3, 4)), ((2, 0), (0, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_matmul_against_numpy(dtype, layout):
    for s1, s2 in MATMUL_SHAPES:
        x, a = make(s1, dtype, layout, seed=1)
        y, b = make(s2, dtype, layout, seed=2)
        check(L.matmul(x, y), ref_matmul(a, b))
        if len(s1) == 2 and len(s2) == 2:
            check(L.mm(x, y), ref_matmul(a, b))
        if len(s1) == 3 and len(s2) == 3:
            check(L.bmm(x, y), ref_matmul(a, b))
        if len(s1) == 2 and len(s2) == 1:
            check(L.mv(x, y), ref_matmul(a, b))
        if len(s1) == 1 and len(s2) == 1:
            check(L.dot(x, y), ref_matmul(a, b))


def test_matmul_operator_and_method():
    x, a = make((2, 3), np.float32, "transposed")
    y, b = make((3, 4), np.float32, "stepped")
    check(x @ y, a @ b)
    check(x.matmul(y), a @ b)
    check(x.mm(y), a @ b)


def test_matmul_float16_accumulates_in_float32():
    a = np.full((1, 4096), 0.1, np.float16)
    b = np.ones((4096, 1), np.float16)
    r = L.matmul(Tensor._make(a), Tensor._make(b))
    assert r.dtype == et.float16
    exact = float(a.astype(np.float64).sum())
    assert abs(float(r.item()) - exact) / exact < 2e-3


def test_matmul_result_is_fresh_and_expanded_inputs():
    a = np.ones((1, 3), np.float32)
    expanded = np.broadcast_to(a, (4, 3))  # stride 0: not BLAS-ready, must still work
    r = L.matmul(Tensor._make(expanded), Tensor._make(np.ones((3, 2), np.float32)))
    check(r, np.full((4, 2), 3, np.float32))
    assert r.numpy().flags.c_contiguous


# (rows, inner, outputs) on both sides of every boundary of the measured rule that picks the
# orientation of ``x @ w.T`` (one row, 2-4 rows into a wide layer, 5-16, 17-32, 33-48, 49-64
# and 96 rows): both orientations must give the product, row-major
NT_SHAPES = [(1, 64, 800), (2, 64, 512), (2, 64, 800), (4, 200, 256), (4, 64, 512),
             (8, 200, 128), (8, 64, 200), (16, 128, 128), (20, 800, 200), (32, 64, 256),
             (32, 128, 64), (48, 128, 256), (48, 200, 256), (64, 512, 128), (64, 512, 64),
             (96, 512, 512)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_product_with_a_transposed_weight_in_either_orientation(dtype):
    rng = np.random.default_rng(3)
    for m, k, n in NT_SHAPES:
        a = rng.standard_normal((m, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        bias = rng.standard_normal(n).astype(dtype)
        want = ref_matmul(a, w.T)
        x, wt = Tensor._make(a), Tensor._make(w)
        for got in (L.matmul(x, wt.t()), L.linear(x, wt), x @ wt.T):
            check(got, want)
            assert got.numpy().flags.c_contiguous, (m, k, n)
        check(L.linear(x, wt, Tensor._make(bias)), want + bias)


MATMUL_ERRORS = [
    ((2, 3), (4, 5), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4,), r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
    ((4,), (3, 4), r"mat1 and mat2 shapes cannot be multiplied \(1x4 and 3x4\)"),
    ((2, 3), (4,), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    ((5, 2, 3), (4,), r"size mismatch, got input \(10\), mat \(10x3\), vec \(4\)"),
    ((5, 2, 3), (4, 5), r"mat1 and mat2 shapes cannot be multiplied \(10x3 and 4x5\)"),
    ((5, 2, 3), (6, 3, 4), r"size of tensor a \(5\) must match the size of tensor b \(6\) at "
                           r"non-singleton dimension 0"),
    ((4,), (5, 3, 4), r"Expected size for first two dimensions of batch2 tensor to be: "
                      r"\[5, 4\] but got: \[5, 3\]"),
    ((), (3,), r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
]


@pytest.mark.parametrize("s1,s2,msg", MATMUL_ERRORS)
def test_matmul_shape_errors(s1, s2, msg):
    x, _ = make(s1, np.float32, "contiguous")
    y, _ = make(s2, np.float32, "contiguous")
    with pytest.raises(RuntimeError, match=msg):
        L.matmul(x, y)


def test_product_dtype_errors():
    f = Tensor._make(np.ones((2, 3), np.float32))
    d = Tensor._make(np.ones((3, 4), np.float64))
    i32 = Tensor._make(np.ones((3, 4), np.int32))
    i64 = Tensor._make(np.ones((2, 3), np.int64))
    with pytest.raises(RuntimeError, match=r"mm\(\): expected m1 and m2 to have the same dtype, "
                                           r"but got: float != double"):
        L.mm(f, d)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != double"):
        L.matmul(f, d)
    with pytest.raises(RuntimeError, match="long int != int"):
        L.matmul(i64, i32)
    with pytest.raises(NotImplementedError, match="Bool"):
        L.matmul(Tensor._make(np.ones((2, 2), bool)), Tensor._make(np.ones((2, 2), bool)))
    with pytest.raises(RuntimeError, match=r"bmm\(\): expected scalar type Float but found "
                                           "Double"):
        L.bmm(Tensor._make(np.ones((1, 2, 3), np.float32)),
              Tensor._make(np.ones((1, 3, 4), np.float64)))
    with pytest.raises(RuntimeError, match="dot.*same dtype, but found Float and Double"):
        L.dot(Tensor._make(np.ones(3, np.float32)), Tensor._make(np.ones(3, np.float64)))
    with pytest.raises(RuntimeError, match="einsum.*expected scalar type Float but found Double"):
        L.einsum("ij,jk->ik", f, d)
    with pytest.raises(RuntimeError, match="tensordot.*same dtype"):
        L.tensordot(f, d, 1)


def test_strict_rank_errors():
    m = Tensor._make(np.ones((2, 3), np.float32))
    v = Tensor._make(np.ones(3, np.float32))
    b = Tensor._make(np.ones((5, 2, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"mm\(\): self must be a matrix"):
        L.mm(v, m)
    with pytest.raises(RuntimeError, match=r"mm\(\): mat2 must be a matrix"):
        L.mm(m, v)
    with pytest.raises(RuntimeError, match=r"bmm\(\): batch1 must be a 3D tensor"):
        L.bmm(m, m)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[5, 3\] but got: \[6, 3\]"):
        L.bmm(b, Tensor._make(np.ones((6, 3, 4), np.float32)))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 2, 2"):
        L.mv(m, m)
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 2D tensors"):
        L.dot(m, m)
    with pytest.raises(RuntimeError, match=r"mm\(\): mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 2x3\)"):
        L.mm(m, m)


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
def test_outer(dtype, layout):
    x, a = make((3,), dtype, layout, seed=1)
    y, b = make((4,), dtype, layout, seed=2)
    check(L.outer(x, y), np.multiply.outer(a, b))
    check(L.ger(x, y), np.multiply.outer(a, b))
    z = Tensor._make(np.arange(4, dtype=np.float32))
    r = L.outer(Tensor._make(np.arange(3)), z)
    check(r, np.multiply.outer(np.arange(3), np.arange(4)).astype(np.float32))
    with pytest.raises(RuntimeError, match="outer.*Expected 1-D argument self, but got 2-D"):
        L.outer(Tensor._make(np.ones((2, 2))), z)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("...j,jk->...k", [(5, 2, 3), (3, 4)]), ("i,j->ij", [(3,), (4,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ijk->", [(2, 3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUMS)
@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_einsum(eq, shapes, dtype, layout):
    pairs = [make(s, dtype, layout, seed=i) for i, s in enumerate(shapes)]
    ts, arrays = [p[0] for p in pairs], [p[1] for p in pairs]
    up = [x.astype(np.float64) if x.dtype.kind == "f" else x for x in arrays]
    exp = np.asarray(np.einsum(eq, *up)).astype(dtype)
    r = L.einsum(eq, *ts)
    check(r, exp)
    check(L.einsum(eq, ts), exp)
    for x in arrays:  # a view-returning einsum ('ij->ji') must not alias the operand
        assert not np.may_share_memory(r.numpy(), x)


def test_einsum_errors():
    a = Tensor._make(np.ones((2, 3), np.float32))
    b = Tensor._make(np.ones((4, 5), np.float32))
    with pytest.raises(RuntimeError, match="einsum"):
        L.einsum("ij,jk->ik", a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_tensordot(dtype, layout):
    x, a = make((2, 3, 4), dtype, layout, seed=1)
    y, b = make((3, 4, 5), dtype, layout, seed=2)
    up = (lambda z: z.astype(np.float64)) if np.dtype(dtype).kind == "f" else (lambda z: z)
    for dims, axes in ((2, 2), (0, 0), ([[1, 2], [0, 1]], ([1, 2], [0, 1])),
                       (([-1], [1]), ([-1], [1]))):
        check(L.tensordot(x, y, dims), np.tensordot(up(a), up(b), axes).astype(dtype))
    with pytest.raises(RuntimeError, match=r"contracted dimensions need to match, but first has "
                                           r"size 4 in dim -1 and second has size 3 in dim 0"):
        L.tensordot(x, y, 1)
    with pytest.raises(RuntimeError, match="dims >= 0"):
        L.tensordot(x, y, -1)


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_forms(dtype, layout):
    m1, a1 = make((2, 3), dtype, layout, seed=1)
    m2, a2 = make((3, 4), dtype, layout, seed=2)
    inp, ai = make((4,), dtype, layout, seed=3)
    vec, av = make((3,), dtype, layout, seed=4)
    b1, ab1 = make((5, 2, 3), dtype, layout, seed=5)
    b2, ab2 = make((5, 3, 4), dtype, layout, seed=6)
    beta, alpha = (2, 3) if np.dtype(dtype).kind == "i" else (0.5, 2.0)
    mm = ref_matmul(a1, a2)
    check(L.addmm(inp, m1, m2), ai + mm)
    check(L.addmm(inp, m1, m2, beta=beta, alpha=alpha), (beta * ai + alpha * mm).astype(dtype))
    inp2, ai2 = make((2,), dtype, layout, seed=7)
    check(L.addmv(inp2, m1, vec, beta=beta, alpha=alpha),
          (beta * ai2 + alpha * ref_matmul(a1, av)).astype(dtype))
    check(L.baddbmm(inp, b1, b2, beta=beta, alpha=alpha),
          (beta * ai + alpha * ref_matmul(ab1, ab2)).astype(dtype))
    check(L.addbmm(inp, b1, b2, beta=beta, alpha=alpha),
          (beta * ai + alpha * ref_matmul(ab1, ab2).sum(0)).astype(dtype))


def test_add_forms_special_cases():
    a = Tensor._make(np.ones((2, 3), np.float32))
    c = Tensor._make(np.ones((3, 4), np.float32))
    nan = Tensor._make(np.full((2, 4), np.nan, np.float32))
    check(L.addmm(nan, a, c, beta=0), np.full((2, 4), 3, np.float32))
    ai = Tensor._make(np.ones((2, 3), np.int64))
    ci = Tensor._make(np.ones((3, 4), np.int64))
    one = Tensor._make(np.ones((2, 4), np.int64))
    # like PyTorch, beta and alpha are truncated to the integer dtype
    check(L.addmm(one, ai, ci, beta=0.5), np.full((2, 4), 3, np.int64))
    check(L.addmm(one, ai, ci, alpha=2.5), np.full((2, 4), 7, np.int64))
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match the "
                                           r"existing size \(3\) at non-singleton dimension 1"):
        L.addmm(Tensor._make(np.ones(3, np.float32)), a, c)
    with pytest.raises(RuntimeError, match="addmm.*same dtype, but got Double and Float"):
        L.addmm(Tensor._make(np.ones(4, np.float64)), a, c)
    b1 = Tensor._make(np.ones((5, 2, 3), np.float32))
    with pytest.raises(RuntimeError, match="same number of batches, got 5 and 6"):
        L.addbmm(Tensor._make(np.ones((2, 4), np.float32)), b1,
                 Tensor._make(np.ones((6, 3, 4), np.float32)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_trace_diag(dtype, layout):
    for shape in ((3, 3), (2, 4), (4, 2)):
        x, a = make(shape, dtype, layout)
        out = np.int64 if np.dtype(dtype).kind in "iu" else dtype
        check(L.trace(x), np.asarray(np.trace(a.astype(np.float64) if out == dtype else a))
              .astype(out))
        for k in (-5, -1, 0, 1, 3):
            d = L.diag(x, k)
            check(d, np.diagonal(a, k))
            assert d.numpy().flags.owndata or not np.may_share_memory(d.numpy(), a)
    v, a = make((3,), dtype, layout)
    for k in (-2, 0, 1):
        check(L.diag(v, k), np.diag(a, k))
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        L.diag(Tensor._make(np.ones((2, 2, 2))))
    with pytest.raises(RuntimeError, match="trace.*expected a matrix, but got tensor with dim 1"):
        L.trace(v)


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_cross(dtype):
    x, a = make((4, 3), dtype, "stepped", seed=1)
    y, b = make((4, 3), dtype, "transposed", seed=2)
    check(L.cross(x, y), np.cross(a, b))
    check(L.cross(x, y, dim=-1), np.cross(a, b))
    z, c = make((3, 5), dtype, "contiguous", seed=3)
    w, e = make((1, 5), dtype, "contiguous", seed=4)
    with pytest.raises(RuntimeError, match="must have size 3 at dimension"):
        L.cross(z, w, dim=0)
    check(L.cross(z, z.__class__._make(np.ascontiguousarray(c[::-1])), dim=0),
          np.cross(c, c[::-1], axis=0))
    with pytest.raises(RuntimeError, match="no dimension of size 3"):
        L.cross(Tensor._make(np.ones((2, 4))), Tensor._make(np.ones((2, 4))))


def test_registry_entries():
    from ember.tensor._registry import OPS

    for name in ("matmul", "outer", "einsum", "tensordot", "trace", "diag", "cross"):
        assert OPS[name].differentiable, name


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(0, 3))
def test_property_matmul_associative_with_identity(n, k, m, batch):
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    shape = (batch, n, k) if batch else (n, k)
    a = rng.integers(-3, 4, shape)
    b = rng.integers(-3, 4, (k, m))
    x, y = Tensor._make(a), Tensor._make(b)
    eye = Tensor._make(np.eye(m, dtype=np.int64))
    np.testing.assert_array_equal(L.matmul(L.matmul(x, y), eye).numpy(), a @ b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_past_the_dtype_range_is_signed_inf_without_a_warning(dtype):
    # PyTorch gives -inf / 0 silently; NumPy's det warns (an error under this suite's filters)
    a = np.eye(40, dtype=dtype) * 1e10
    a[0, 0] = -1e10
    assert et.linalg.det(et.tensor(a)).item() == -np.inf
    assert et.linalg.det(et.tensor(np.eye(40, dtype=dtype) * 1e-10)).item() == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cdist_gemm_path_matches_the_direct_path(dtype):
    """p = 2 with more than 25 rows takes PyTorch's GEMM formula: same values as the direct
    norm (``donot_use_mm_for_euclid_dist``) up to rounding, and 0 for coincident points."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 30, 5)).astype(dtype)
    b = rng.standard_normal((4, 5)).astype(dtype)
    mm = et.cdist(et.tensor(a), et.tensor(b))
    direct = et.cdist(et.tensor(a), et.tensor(b), compute_mode="donot_use_mm_for_euclid_dist")
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(mm.numpy(), direct.numpy(), rtol=tol, atol=tol)
    x = et.tensor(np.zeros((30, 3), dtype))
    assert et.cdist(x, x).numpy().max() == 0
    with pytest.raises(ValueError, match="is not a valid value for compute_mode"):
        et.cdist(x, x, compute_mode="fast")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(4, 7), (7, 4), (2, 3, 6), (2, 6, 3), (0, 3), (3, 0),
                                   (2, 0, 4)])
def test_qr_and_geqrf_every_mode_against_numpy(dtype, shape):
    """linalg.qr's three modes and geqrf (LAPACK at the input's precision, matrix by matrix
    over a batch; a tall matrix's complete Q from zero reflectors appended) give NumPy's
    factors, shapes and results of the input's dtype with PyTorch's strides (each matrix
    column-major, as LAPACK writes it), empty inputs included."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    for mode in ("reduced", "complete", "r"):
        q, r = et.linalg.qr(et.tensor(a), mode=mode)
        want_q, want_r = (np.zeros(0), np.linalg.qr(a, mode="r")) if mode == "r" else \
            np.linalg.qr(a, mode=mode)
        for got, want in ((q.numpy(), want_q), (r.numpy(), want_r)):
            assert got.dtype == a.dtype
            assert got.ndim < 2 or np.swapaxes(got, -1, -2).flags.c_contiguous
            assert got.shape == want.shape, (mode, got.shape, want.shape)
            np.testing.assert_allclose(got, want, atol=tol)
    h, tau = et.geqrf(et.tensor(a))
    want_h, want_tau = np.linalg.qr(a, mode="raw")
    assert h.numpy().dtype == tau.numpy().dtype == a.dtype
    assert np.swapaxes(h.numpy(), -1, -2).flags.c_contiguous
    np.testing.assert_allclose(h.numpy(), np.swapaxes(want_h, -1, -2), atol=tol)
    np.testing.assert_allclose(tau.numpy(), want_tau, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 4), (2, 5, 5), (40, 12)])
def test_householder_product_of_geqrf_is_the_q_of_qr(dtype, shape):
    """The compact WY form gives the Q whose reflectors geqrf stored (SciPy's geqrf and
    orgqr are the oracle), for a matrix and a batch, with fewer reflectors than columns too
    (orgqr's with the rest zero); no reflector at all is the identity."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(dtype)
    flat = a.reshape((-1,) + shape[-2:])
    geqrf, orgqr = (lapack.get_lapack_funcs(n, (flat,)) for n in ("geqrf", "orgqr"))
    hs, taus, qs = [], [], []
    for m in flat:
        h, tau, _, _ = geqrf(m)
        hs.append(h)
        taus.append(tau)
        qs.append(orgqr(h, tau)[0])
    h, tau = np.stack(hs).reshape(shape), np.stack(taus).reshape(shape[:-2] + (-1,))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    q = et.linalg.householder_product(et.tensor(h), et.tensor(tau))
    np.testing.assert_allclose(q.numpy(), np.stack(qs).reshape(shape), atol=tol)
    k = shape[-1] // 2
    part = et.linalg.householder_product(et.tensor(h), et.tensor(np.ascontiguousarray(
        tau[..., :k])))
    pad = np.concatenate([tau[..., :k], np.zeros_like(tau[..., k:])], -1)  # zero tau: I
    ref = [orgqr(m, t)[0] for m, t in zip(h.reshape(flat.shape), pad.reshape(len(flat), -1))]
    np.testing.assert_allclose(part.numpy(), np.stack(ref).reshape(shape), atol=tol)
    none = et.linalg.householder_product(et.tensor(h), et.tensor(np.zeros(shape[:-2] + (0,),
                                                                          dtype)))
    np.testing.assert_array_equal(none.numpy(), np.broadcast_to(np.eye(*shape[-2:]), shape))


@pytest.mark.parametrize("shape", [(4, 4), (2, 4, 4)])
def test_solve_triangular_with_a_zero_pivot_raises_linalg_error(shape):
    """A matrix and a batch alike: ember's LinAlgError (a RuntimeError), not NumPy's."""
    a = np.broadcast_to(np.triu(np.ones((4, 4))), shape).copy()
    a[..., 2, 2] = 0
    with pytest.raises(et.linalg.LinAlgError, match="singular"):
        et.linalg.solve_triangular(et.tensor(a), et.ones(4, 1, dtype=et.float64), upper=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ldl_factor_of_a_large_matrix_matches_scipy(dtype):
    """The blocked factorization (LAPACK's workspace query) of a matrix bigger than a block
    gives SciPy's LD and pivots: sytrf with its optimal workspace, lower triangle kept."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(4)
    a = rng.standard_normal((200, 200)).astype(dtype)
    a = a + a.T
    f = lapack.get_lapack_funcs("sytrf", (a,))
    lwork = int(lapack.get_lapack_funcs("sytrf_lwork", (a,))(200, lower=1)[0])
    ld, piv, info = f(a, lower=1, lwork=lwork)
    r = et.linalg.ldl_factor_ex(et.tensor(a.T.copy().T))  # a transposed (F-order) input
    np.testing.assert_array_equal(r.LD.numpy(), np.tril(ld))
    np.testing.assert_array_equal(r.pivots.numpy(), piv)
    assert int(r.info) == info == 0


def test_multi_dot_with_vector_ends_matches_numpy():
    """1-d first and last tensors are a row and a column vector (matmul's rule), in the
    cheapest order: NumPy's multi_dot is the oracle."""
    rng = np.random.default_rng(5)
    for shapes in ([(64,), (64, 64), (64, 8)], [(5,), (5, 2), (2, 7), (7,)],
                   [(2, 3), (3, 4), (4,)], [(3,), (3,)]):
        xs = [rng.standard_normal(s) for s in shapes]
        r = et.linalg.multi_dot([et.tensor(x) for x in xs])
        ref = np.linalg.multi_dot(xs)
        assert tuple(r.shape) == np.shape(ref)
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_cross_broadcasts_and_matches_numpy(dtype):
    """The rolled-components form against np.cross, with broadcast operands along any dim."""
    rng = np.random.default_rng(6)
    a = (rng.standard_normal((5, 1, 3)) * 4).astype(dtype)
    b = (rng.standard_normal((1, 4, 3)) * 4).astype(dtype)
    r = et.linalg.cross(et.tensor(a), et.tensor(b))
    np.testing.assert_allclose(r.numpy(), np.cross(a, b), rtol=1e-6)
    assert r.numpy().dtype == dtype and r.is_contiguous()
    r = et.cross(et.tensor(a.transpose(2, 0, 1)), et.tensor(b.transpose(2, 0, 1)), dim=0)
    np.testing.assert_allclose(r.numpy(), np.cross(a, b).transpose(2, 0, 1), rtol=1e-6)
