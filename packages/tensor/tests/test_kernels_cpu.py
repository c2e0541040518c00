"""CPU kernels against plain NumPy references (and PyTorch where it is installed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember.tensor import kernels
from ember.tensor.kernels import cpu

FLOATS = [np.float32, np.float64]


def tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-11, "atol": 1e-11}


def numgrad(f, x, eps=1e-6):
    """Central finite differences of the scalar function ``f`` at float64 ``x``."""
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f()
        flat[i] = old - eps
        lo = f()
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return g


# --------------------------------------------------------------------------- package plumbing


def test_import_is_lazy():
    code = textwrap.dedent(
        """
        import sys
        import ember.tensor
        before = "numba" in sys.modules
        import ember.tensor.kernels, ember.tensor.kernels.cpu
        loaded = [m for m in sys.modules if m.startswith("ember.tensor.kernels.cpu.")]
        assert not loaded, loaded
        assert before or "numba" not in sys.modules, "importing the kernel packages loaded numba"
        ember.tensor.kernels.get("softmax_forward", "cpu")
        assert "numba" in sys.modules
        print("ok")
        """
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_get_every_cpu_kernel():
    assert len(set(kernels.KERNEL_NAMES)) == len(kernels.KERNEL_NAMES) == 64
    assert sorted(cpu.__all__) == sorted(kernels.KERNEL_NAMES)
    for name in kernels.KERNEL_NAMES:
        fn = kernels.get(name, "cpu")
        assert callable(fn)
        assert fn is getattr(cpu, name)
    assert kernels.get("im2col", np) is cpu.im2col
    assert kernels.get("col2im", "cpu") is cpu.col2im  # the function, not the submodule


def test_get_errors():
    with pytest.raises(ValueError, match="unknown kernel 'nope'"):
        kernels.get("nope", "cpu")
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        kernels.get("index_add", "tpu")
    with pytest.raises(AttributeError):
        cpu.nope  # noqa: B018


def test_threading_layer_is_fork_safe():
    code = textwrap.dedent(
        """
        import os
        os.environ.pop("NUMBA_THREADING_LAYER", None)
        import numpy as np, numba
        from ember.tensor.kernels import cpu
        x = np.random.rand(512, 256)
        cpu.softmax_forward(x)  # big enough for the parallel kernel
        print(numba.config.THREADING_LAYER, numba.threading_layer())
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    requested, active = res.stdout.split()
    assert requested == "forksafe"
    assert active in ("tbb", "workqueue")


# --------------------------------------------------------------------------- index_add


def index_add_ref(out, index, src, alpha):
    ref = out.copy()
    np.add.at(ref, (slice(None), index, slice(None)), alpha * src)
    return ref


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "P,M,N,Q", [(1, 5, 7, 3), (3, 4, 10, 1), (2, 6, 0, 4), (1, 50, 400, 128), (64, 20, 30, 40)]
)
def test_index_add(dtype, P, M, N, Q):
    rng = np.random.default_rng(P * 1000 + N)
    out = rng.standard_normal((P, M, Q)).astype(dtype)
    index = rng.integers(0, M, N)
    src = rng.standard_normal((P, N, Q)).astype(dtype)
    ref = index_add_ref(out, index, src, dtype(0.5))
    assert cpu.index_add(out, index, src, 0.5) is None
    assert out.dtype == dtype
    np.testing.assert_allclose(out, ref, **tol(dtype))


def test_index_add_duplicates_and_int32_index():
    out = np.zeros((1, 3, 2))
    cpu.index_add(out, np.array([1, 1, 1, 2], dtype=np.int32), np.ones((1, 4, 2)))
    np.testing.assert_array_equal(out[0], [[0, 0], [3, 3], [1, 1]])


def test_index_add_noncontiguous_float16_and_int():
    base = np.zeros((2, 6, 3), dtype=np.float64)
    view = base[:, ::2]  # (2, 3, 3), not contiguous
    src = np.ones((2, 4, 3))
    cpu.index_add(view, np.array([0, 2, 2, 1]), src)
    np.testing.assert_array_equal(base[:, 4], np.full((2, 3), 2.0))
    np.testing.assert_array_equal(base[:, 1::2], 0)

    h = np.zeros((1, 2, 2), dtype=np.float16)
    cpu.index_add(h, np.array([1]), np.full((1, 1, 2), 1.5, dtype=np.float16))
    assert h.dtype == np.float16 and h[0, 1].tolist() == [1.5, 1.5]

    i = np.zeros((1, 3, 1), dtype=np.int64)
    cpu.index_add(i, np.array([2, 2]), np.array([[[4], [5]]]), 2)
    assert i.ravel().tolist() == [0, 0, 18]


@pytest.mark.parametrize("bad", [7, 5, -1])
def test_index_add_bad_index(bad):
    out = np.zeros((2, 5, 3))
    before = out.copy()
    with pytest.raises(IndexError) as info:
        cpu.index_add(out, np.array([0, bad, 1]), np.ones((2, 3, 3)))
    msg = str(info.value)
    assert f"index_add(): index {bad} is out of bounds for dimension 1 with size 5" in msg
    assert "[0, 5)" in msg
    np.testing.assert_array_equal(out, before)


def test_index_add_shape_and_dtype_errors():
    out = np.zeros((2, 5, 3))
    with pytest.raises(RuntimeError, match=r"index_add\(\).*\(2, 4, 3\).*\(2, 3, 3\)"):
        cpu.index_add(out, np.array([0, 1, 2]), np.ones((2, 4, 3)))
    with pytest.raises(RuntimeError, match="dtype"):
        cpu.index_add(out, np.array([0]), np.ones((2, 1, 3), dtype=np.float32))
    with pytest.raises(RuntimeError, match=r"expected out of shape \(P, M, Q\)"):
        cpu.index_add(np.zeros((5, 3)), np.array([0]), np.ones((1, 3)))
    with pytest.raises(TypeError, match="integer"):
        cpu.index_add(out, np.array([0.0]), np.ones((2, 1, 3)))


# --------------------------------------------------------------------------- embedding backward


def embedding_ref(grad, idx, num, pad, scale):
    gw = np.zeros((num, grad.shape[1]), dtype=np.float64)
    counts = np.bincount(idx, minlength=num)
    for n, i in enumerate(idx):
        if i == pad:
            continue
        gw[i] += grad[n] / (counts[i] if scale else 1)
    return gw


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.bool_,
                                   np.complex64])
def test_gather_dim_scatter_dim(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5, 4)) * 4).astype(dtype)
    index = rng.integers(0, 5, (3, 7, 4)).astype(np.int32)
    out, bad = cpu.gather_dim(x, index)
    assert bad == -1 and out.dtype == x.dtype
    np.testing.assert_array_equal(out, np.take_along_axis(x, index, 1))
    src = (rng.standard_normal((3, 7, 4)) * 4).astype(dtype)
    p, q = np.ogrid[:3, :4]
    coords = (p[:, None, :].repeat(7, 1), index, q[:, None, :].repeat(3, 0).repeat(7, 1))
    for reduce, ufunc in (("set", None), ("add", np.add), ("multiply", np.multiply)):
        if reduce != "set" and dtype == np.bool_:
            continue
        got, want = x.copy(), x.copy()
        assert cpu.scatter_dim(got, index, src, reduce) == -1
        if ufunc is None:
            want[coords] = src  # duplicates: the last write wins, as the kernel's C order
        else:
            ufunc.at(want, coords, src)
        rtol = 1e-2 if dtype == np.float16 else 1e-6
        np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                                   rtol=rtol, atol=rtol)


@pytest.mark.parametrize("Q", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
def test_scan_dim(dtype, Q):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, (2, 9, Q)).astype(dtype)
    if dtype != np.int64:
        x[0, 4, 0] = x[0, 7, 0] = np.nan  # (a NaN after a NaN moves the index on)
    acc = np.float64 if dtype != np.int64 else np.int64
    out, none = cpu.scan_dim(x, "sum", acc)
    assert none is None and out.dtype == x.dtype
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1, dtype=acc).astype(dtype))
    out, _ = cpu.scan_dim(x, "prod", acc)
    np.testing.assert_array_equal(out, np.cumprod(x, axis=1, dtype=acc).astype(dtype))
    for op, better in (("max", np.greater_equal), ("min", np.less_equal)):
        vals, idx = cpu.scan_dim(x, op)
        for p in range(2):
            for q in range(Q):
                best, bi = x[p, 0, q], 0
                for m in range(9):
                    v = x[p, m, q]
                    if np.isnan(v) or (not np.isnan(best) and better(v, best)):
                        best, bi = v, m
                    assert idx[p, m, q] == bi
                    np.testing.assert_array_equal(vals[p, m, q], best)
    with pytest.raises(ValueError, match="op must be"):
        cpu.scan_dim(x, "mean")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_layer_norm_forward(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 37)) * 3 + 1e3).astype(dtype)
    w, b = rng.standard_normal(37).astype(dtype), rng.standard_normal(37).astype(dtype)
    xf = x.astype(np.float64)
    mean = xf.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(((xf - mean) ** 2).mean(1, keepdims=True) + 1e-5)
    # x - mean rounds in the input dtype: float32 at 1e3 keeps about 2e-5 of a unit variance
    t = {"rtol": 2e-2, "atol": 2e-2} if dtype == np.float16 else \
        {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else tol(dtype)
    for ww, bb in ((w, b), (None, None), (w, None), (None, b)):
        out, m, r = cpu.layer_norm_forward(x, ww, bb, 1e-5)
        want = (xf - mean) * rstd * (1 if ww is None else ww.astype(np.float64)) + \
            (0 if bb is None else bb.astype(np.float64))
        assert out.dtype == m.dtype == r.dtype == x.dtype
        np.testing.assert_allclose(out.astype(np.float64), want, **t)
        np.testing.assert_allclose(m.astype(np.float64), mean[:, 0], rtol=1e-3)
        np.testing.assert_allclose(r.astype(np.float64), rstd[:, 0], rtol=1e-2)
    out, m, r = cpu.layer_norm_forward(np.zeros((2, 0), dtype), None, None, 1e-5)
    assert out.shape == (2, 0) and m.tolist() == [0, 0] and np.isnan(r).all()
    with pytest.raises(RuntimeError, match="weight of shape"):
        cpu.layer_norm_forward(x, w[:3], None, 1e-5)


def _layer_norm_backward_reference(go, x, w):
    """The gradients of the layer norm of the rows of ``x`` (float64 NumPy, from the
    definition: the Jacobian of each row's normalization applied to its gradient)."""
    x = x.astype(np.float64)
    go = go.astype(np.float64)
    n = x.shape[1]
    mean = x.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5)
    xh = (x - mean) * rstd
    gh = go if w is None else go * w.astype(np.float64)
    gx = np.empty_like(x)
    for i in range(x.shape[0]):  # d xh_j / d x_k = rstd (delta_jk - 1/n - xh_j xh_k / n)
        jac = rstd[i, 0] * (np.eye(n) - 1 / n - np.outer(xh[i], xh[i]) / n)
        gx[i] = jac.T @ gh[i]
    return gx, (go * xh).sum(0), go.sum(0), mean[:, 0], rstd[:, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_layer_norm_backward(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 19)) * 2 + 3).astype(dtype)
    go = rng.standard_normal((6, 19)).astype(dtype)
    w = rng.standard_normal(19).astype(dtype)
    t = {"rtol": 2e-2, "atol": 2e-2} if dtype == np.float16 else \
        {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else tol(dtype)
    for ww in (w, None):
        want_x, want_w, want_b, mean, rstd = _layer_norm_backward_reference(go, x, ww)
        gx, gw, gb = cpu.layer_norm_backward(go, x, mean.astype(dtype), rstd.astype(dtype), ww)
        assert gx.dtype == gw.dtype == gb.dtype == x.dtype and gx.shape == x.shape
        np.testing.assert_allclose(gx.astype(np.float64), want_x, **t)
        np.testing.assert_allclose(gw.astype(np.float64), want_w, **t)
        np.testing.assert_allclose(gb.astype(np.float64), want_b, **t)
    gx, gw, gb = cpu.layer_norm_backward(np.zeros((0, 4)), np.zeros((0, 4)), np.zeros(0),
                                         np.zeros(0), None)
    assert gx.shape == (0, 4) and gw.tolist() == gb.tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match="grad_out of shape"):
        cpu.layer_norm_backward(go[:2], x, mean, rstd, None)
    with pytest.raises(RuntimeError, match="weight of shape"):
        cpu.layer_norm_backward(go, x, mean, rstd, w[:3])


def test_gather_dim_scatter_dim_bad_index_and_noncontiguous_out():
    x = np.arange(24.0).reshape(2, 3, 4)
    index = np.zeros((2, 2, 4), np.int64)
    index[1, 0, 2] = 3
    out, bad = cpu.gather_dim(x, index)
    assert bad == 10
    before = x.copy()
    assert cpu.scatter_dim(x, index, np.ones((2, 2, 4)), "add") == 10
    np.testing.assert_array_equal(x, before)  # nothing written
    index[1, 0, 2] = -1
    assert cpu.scatter_dim(x, index, np.ones((2, 2, 4)), "set") == 10
    wide = np.zeros((2, 3, 8))
    view = wide[:, :, ::2]
    index[1, 0, 2] = 2
    assert cpu.scatter_dim(view, index, np.broadcast_to(np.float64(1.5), (2, 2, 4)), "add") == -1
    assert view[:, 0].tolist() == [[3.0] * 4, [3.0, 3.0, 1.5, 3.0]]
    assert wide[:, :, 1::2].sum() == 0
    with pytest.raises(RuntimeError, match="scatter_dim.*do not match"):
        cpu.scatter_dim(x, index, np.ones((2, 3, 4)), "add")
    with pytest.raises(ValueError, match="reduce must be"):
        cpu.scatter_dim(x, index, np.ones((2, 2, 4)), "max")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.complex64])
def test_scatter_dim_index_broadcast_along_q(dtype):
    # an index constant along dim 2 (a broadcast view, read as rows) scatters as its copy does
    rng = np.random.default_rng(1)
    rows = rng.integers(0, 4, (2, 6, 1))
    index = np.broadcast_to(rows, (2, 6, 5))
    src = (rng.standard_normal((2, 6, 5)) * 4).astype(dtype)
    src[0, 1, 2] = np.nan if dtype in (np.float32, np.float16) else src[0, 1, 2]
    x = (rng.standard_normal((2, 4, 5)) * 4).astype(dtype)
    reduces = ["set"] if dtype == np.bool_ else ["set", "add", "multiply"]
    if dtype != np.complex64 and dtype != np.bool_:
        reduces += ["amax", "amin"]
    for reduce in reduces:
        got, want = x.copy(), x.copy()
        assert cpu.scatter_dim(got, index, src, reduce) == -1
        assert cpu.scatter_dim(want, np.ascontiguousarray(index), src, reduce) == -1
        np.testing.assert_array_equal(got, want)
    rows[1, 2, 0] = 4  # out of range: its flat position in the (2, 6, 5) index, nothing written
    got = x.copy()
    assert cpu.scatter_dim(got, index, src, "add") == (6 + 2) * 5
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("pad", [-1, 0, 3])
@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("N,D", [(13, 4), (0, 3), (2000, 64)])
def test_embedding_backward(dtype, pad, scale, N, D):
    rng = np.random.default_rng(N + D)
    num = 9
    idx = rng.integers(0, num, N)
    grad = rng.standard_normal((N, D)).astype(dtype)
    gw = cpu.embedding_backward(grad, idx, num, pad, scale)
    assert gw.shape == (num, D) and gw.dtype == dtype
    np.testing.assert_allclose(gw, embedding_ref(grad, idx, num, pad, scale), **tol(dtype))
    if pad >= 0:
        assert not gw[pad].any()


def test_embedding_backward_errors():
    with pytest.raises(IndexError, match=r"embedding_backward\(\): index 10 .* size 10"):
        cpu.embedding_backward(np.ones((2, 3)), np.array([0, 10]), 10, -1, False)
    with pytest.raises(IndexError, match="index -2"):
        cpu.embedding_backward(np.ones((2, 3)), np.array([0, -2]), 10, -1, False)
    with pytest.raises(IndexError, match="padding_idx 12"):
        cpu.embedding_backward(np.ones((2, 3)), np.array([0, 1]), 10, 12, False)
    with pytest.raises(RuntimeError, match=r"\(3, 3\).*\(2,\)"):
        cpu.embedding_backward(np.ones((3, 3)), np.array([0, 1]), 10, -1, False)


def test_embedding_backward_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 7, 40)
    grad = rng.standard_normal((40, 5))
    w = torch.zeros(7, 5, dtype=torch.float64, requires_grad=True)
    out = torch.nn.functional.embedding(
        torch.from_numpy(idx), w, padding_idx=2, scale_grad_by_freq=True
    )
    out.backward(torch.from_numpy(grad))
    got = cpu.embedding_backward(grad, idx, 7, 2, True)
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- max pooling


def max_pool_ref(x, k, s, p, dil, o):
    """Loop reference with PyTorch's semantics (first max wins, NaN wins, -inf padding)."""
    B, D, H, W = x.shape
    out = np.empty((B, *o), dtype=x.dtype)
    ind = np.empty((B, *o), dtype=np.int64)
    for b in range(B):
        for od in range(o[0]):
            for oh in range(o[1]):
                for ow in range(o[2]):
                    best, arg = -np.inf, -1
                    for i in range(k[0]):
                        d = od * s[0] - p[0] + i * dil[0]
                        for j in range(k[1]):
                            h = oh * s[1] - p[1] + j * dil[1]
                            for m in range(k[2]):
                                w = ow * s[2] - p[2] + m * dil[2]
                                if not (0 <= d < D and 0 <= h < H and 0 <= w < W):
                                    continue
                                v = x[b, d, h, w]
                                if arg < 0 or v > best or np.isnan(v):
                                    best, arg = v, (d * H + h) * W + w
                    out[b, od, oh, ow], ind[b, od, oh, ow] = best, arg
    return out, ind


def out_len(n, k, s, p, dil, ceil=False):
    num = n + 2 * p - dil * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


POOL_CASES = [
    # (B, D, H, W), kernel, stride, padding, dilation, ceil
    ((3, 1, 1, 9), (1, 1, 3), (1, 1, 2), (0, 0, 1), (1, 1, 1), False),
    ((4, 1, 7, 6), (1, 2, 3), (1, 2, 1), (0, 1, 1), (1, 1, 2), False),
    ((2, 1, 7, 7), (1, 3, 3), (1, 2, 2), (0, 1, 0), (1, 1, 1), True),
    ((2, 5, 4, 6), (2, 2, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1), False),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_forward_backward(dtype, case):
    shape, k, s, p, dil, ceil = case
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, 0, :2] = x[0, 0, 0, 0]  # a tie
    o = tuple(out_len(n, *a, ceil) for n, *a in zip(shape[1:], k, s, p, dil))
    out, ind = cpu.max_pool_forward(x, k, s, p, dil, o)
    ref_out, ref_ind = max_pool_ref(x, k, s, p, dil, o)
    assert out.dtype == dtype and ind.dtype == np.int64
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(ind, ref_ind)

    g = rng.standard_normal(out.shape).astype(dtype)
    gin = cpu.max_pool_backward(g, ind, shape[1:])
    ref = np.zeros((shape[0], np.prod(shape[1:])), dtype=np.float64)
    for b in range(shape[0]):
        np.add.at(ref[b], ind[b].ravel(), g[b].ravel())
    assert gin.shape == shape and gin.dtype == dtype
    np.testing.assert_allclose(gin.reshape(shape[0], -1), ref, **tol(dtype))


def test_max_pool_nan_and_inf():
    x = np.array([[[[1.0, np.nan, 3.0, -np.inf, -np.inf, np.nan, 2.0, np.nan]]]])
    out, ind = cpu.max_pool_forward(x, (1, 1, 2), (1, 1, 2), (0, 0, 0), (1, 1, 1), (1, 1, 4))
    assert np.isnan(out[0, 0, 0, 0]) and ind[0, 0, 0, 0] == 1
    assert out[0, 0, 0, 1] == 3.0 and ind[0, 0, 0, 1] == 2
    assert np.isnan(out[0, 0, 0, 2]) and ind[0, 0, 0, 2] == 5
    assert np.isnan(out[0, 0, 0, 3]) and ind[0, 0, 0, 3] == 7
    y = np.full((1, 1, 1, 2), -np.inf)
    out, ind = cpu.max_pool_forward(y, (1, 1, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), (1, 1, 1))
    assert out.ravel().tolist() == [-np.inf] and ind.ravel().tolist() == [0]


def test_max_pool_large_parallel_and_float16():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 1, 20, 20))
    args = ((1, 3, 3), (1, 2, 2), (0, 1, 1), (1, 1, 1), (1, 10, 10))
    out, ind = cpu.max_pool_forward(x, *args)
    ref_out, ref_ind = max_pool_ref(x, *args)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(ind, ref_ind)
    h, hind = cpu.max_pool_forward(x.astype(np.float16), *args)
    assert h.dtype == np.float16
    np.testing.assert_array_equal(hind, max_pool_ref(x.astype(np.float16), *args)[1])


def test_max_pool_errors():
    x = np.zeros((1, 1, 1, 4))
    with pytest.raises(RuntimeError, match="entirely in padding"):
        cpu.max_pool_forward(x, (1, 1, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), (1, 1, 6))
    with pytest.raises(RuntimeError, match=r"\(B, D, H, W\)"):
        cpu.max_pool_forward(np.zeros((2, 3)), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1),
                             (1, 1, 1))
    g = np.ones((1, 1, 1, 2))
    with pytest.raises(IndexError, match=r"max_pool_backward\(\): index 4 .* size 4"):
        cpu.max_pool_backward(g, np.array([[[[0, 4]]]]), (1, 1, 4))
    with pytest.raises(IndexError, match="index -1"):
        cpu.max_pool_backward(g, np.array([[[[-1, 0]]]]), (1, 1, 4))
    with pytest.raises(RuntimeError, match="do not match"):
        cpu.max_pool_backward(g, np.zeros((1, 1, 1, 3), dtype=np.int64), (1, 1, 4))


def test_max_pool_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 9, 8))
    x[0, 0, 2, 2] = np.nan
    t_out, t_ind = F.max_pool2d(torch.from_numpy(x), 3, 2, 1, 2, ceil_mode=True,
                                return_indices=True)
    o = (1, *t_out.shape[2:])
    out, ind = cpu.max_pool_forward(x.reshape(6, 1, 9, 8), (1, 3, 3), (1, 2, 2), (0, 1, 1),
                                    (1, 2, 2), o)
    np.testing.assert_array_equal(out.reshape(t_out.shape), t_out.numpy())
    np.testing.assert_array_equal(ind.reshape(t_ind.shape), t_ind.numpy())


# --------------------------------------------------------------------------- im2col / col2im


def im2col_ref(x, k, s, p, dil, o):
    N, C, D, H, W = x.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pp, pp + kk * dd + ss * oo) for pp, kk, dd, ss, oo in
                                        zip(p, k, dil, s, o)])
    cols = np.empty((N, C, *k, *o), dtype=x.dtype)
    for kd in range(k[0]):
        for kh in range(k[1]):
            for kw in range(k[2]):
                d0, h0, w0 = kd * dil[0], kh * dil[1], kw * dil[2]
                cols[:, :, kd, kh, kw] = xp[
                    :, :,
                    d0:d0 + s[0] * o[0]:s[0],
                    h0:h0 + s[1] * o[1]:s[1],
                    w0:w0 + s[2] * o[2]:s[2],
                ]
    return cols.reshape(N, C * k[0] * k[1] * k[2], -1)


FOLD_CASES = [
    # (N, C, D, H, W), kernel, stride, padding, dilation
    ((2, 3, 1, 5, 6), (1, 3, 2), (1, 1, 2), (0, 1, 0), (1, 1, 2)),
    ((1, 2, 1, 1, 9), (1, 1, 4), (1, 1, 3), (0, 0, 2), (1, 1, 1)),
    ((2, 2, 4, 5, 3), (2, 3, 2), (2, 1, 1), (1, 1, 1), (1, 2, 1)),
    ((4, 16, 1, 24, 24), (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", FOLD_CASES)
def test_im2col_col2im(dtype, case):
    shape, k, s, p, dil = case
    o = tuple(out_len(n, *a) for n, *a in zip(shape[2:], k, s, p, dil))
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    cols = cpu.im2col(x, k, s, p, dil, o)
    assert cols.dtype == dtype
    np.testing.assert_array_equal(cols, im2col_ref(x, k, s, p, dil, o))
    c = rng.standard_normal(cols.shape).astype(dtype)
    back = cpu.col2im(c, shape[1], shape[2:], k, s, p, dil, o)
    assert back.shape == shape and back.dtype == dtype
    # adjoint: <im2col(x), c> == <x, col2im(c)>
    lhs = np.vdot(cols.astype(np.float64), c.astype(np.float64))
    rhs = np.vdot(x.astype(np.float64), back.astype(np.float64))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4 if dtype == np.float32 else 1e-10)


def test_col2im_is_exact_adjoint_float64():
    rng = np.random.default_rng(3)
    shape, k, s, p, dil = FOLD_CASES[2]
    o = tuple(out_len(n, *a) for n, *a in zip(shape[2:], k, s, p, dil))
    K = np.prod(k) * shape[1]
    c = rng.standard_normal((shape[0], K, np.prod(o)))
    back = cpu.col2im(c, shape[1], shape[2:], k, s, p, dil, o)
    # col2im(c) equals im2col's transpose applied to c, element by element
    ref = np.zeros(shape)
    for i in range(ref.size):
        e = np.zeros(ref.size)
        e[i] = 1.0
        ref.reshape(-1)[i] = np.vdot(im2col_ref(e.reshape(shape), k, s, p, dil, o), c)
    np.testing.assert_allclose(back, ref, rtol=1e-12, atol=1e-12)


def test_fold_errors_and_empty():
    with pytest.raises(RuntimeError, match=r"expected shape \(1, 8, 4\)"):
        cpu.col2im(np.ones((1, 8, 5)), 2, (1, 3, 3), (1, 2, 2), (1, 1, 1), (0, 0, 0),
                   (1, 1, 1), (1, 2, 2))
    with pytest.raises(RuntimeError, match="invalid parameters"):
        cpu.im2col(np.ones((1, 1, 1, 3, 3)), (1, 0, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1),
                   (1, 2, 2))
    cols = cpu.im2col(np.ones((0, 2, 1, 3, 3)), (1, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1),
                      (1, 2, 2))
    assert cols.shape == (0, 8, 4)


def test_fold_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 8))
    k, d, p, s = (3, 2), (2, 1), (1, 2), (2, 3)
    ref = F.unfold(torch.from_numpy(x), k, d, p, s).numpy()
    o = (1, *(out_len(n, kk, ss, pp, dd) for n, kk, ss, pp, dd in zip((7, 8), k, s, p, d)))
    cols = cpu.im2col(x[:, :, None], (1, *k), (1, *s), (0, *p), (1, *d), o)
    np.testing.assert_allclose(cols, ref, rtol=0, atol=0)
    c = rng.standard_normal(ref.shape)
    ref_x = F.fold(torch.from_numpy(c), (7, 8), k, d, p, s).numpy()
    got = cpu.col2im(c, 3, (1, 7, 8), (1, *k), (1, *s), (0, *p), (1, *d), o)
    np.testing.assert_allclose(got[:, :, 0], ref_x, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- softmax


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True, initial=-np.inf))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (3, 0), (0, 4), (600, 100)])
def test_softmax_family(dtype, shape):
    rng = np.random.default_rng(shape[0])
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    y = cpu.softmax_forward(x)
    ly = cpu.log_softmax_forward(x)
    assert y.dtype == ly.dtype == dtype and y.shape == shape
    t = tol(dtype)
    np.testing.assert_allclose(y, softmax_ref(x), **t)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(ly, np.log(softmax_ref(x)), **t)
    ref_g = y * (g - (g * y).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(cpu.softmax_backward(y, g), ref_g, **t)
    ref_lg = g - np.exp(ly) * g.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(cpu.log_softmax_backward(ly, g), ref_lg, **t)


def test_softmax_extremes():
    x = np.array([[1000.0, 1000.0, 999.0], [-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]],
                 dtype=np.float32)
    y = cpu.softmax_forward(x)
    ly = cpu.log_softmax_forward(x)
    assert np.isfinite(y[0]).all() and np.isfinite(ly[0]).all()
    np.testing.assert_allclose(y[0], softmax_ref(x[:1])[0], rtol=1e-6)
    assert np.isnan(y[1]).all() and np.isnan(ly[1]).all()
    assert y[2].tolist() == [0.5, 0.0, 0.5] and ly[2, 1] == -np.inf
    h = cpu.softmax_forward(x[:1].astype(np.float16))
    assert h.dtype == np.float16


def test_softmax_errors():
    with pytest.raises(RuntimeError, match=r"softmax_forward\(\).*\(rows, cols\)"):
        cpu.softmax_forward(np.ones(3))
    with pytest.raises(RuntimeError, match=r"\(2, 3\).*\(2, 2\)"):
        cpu.softmax_backward(np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="same dtype"):
        cpu.log_softmax_backward(np.ones((2, 2)), np.ones((2, 2), dtype=np.float32))
    with pytest.raises(RuntimeError, match="floating point"):
        cpu.softmax_forward(np.ones((2, 2), dtype=np.int64))


# --------------------------------------------------------------------------- cross-entropy


def ce_ref(x, t, w, ignore, eps):
    x = x.astype(np.float64)
    N, C = x.shape
    w = np.ones(C) if w is None else w.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    loss = np.zeros(N)
    for i in range(N):
        if t[i] == ignore:
            continue
        loss[i] = (1 - eps) * w[t[i]] * (lse[i] - x[i, t[i]])
        loss[i] += eps / C * np.sum(w * (lse[i] - x[i]))
    return loss, lse


CE_CASES = [(None, -100, 0.0), ("w", -100, 0.0), (None, 2, 0.1), ("w", 1, 0.25), ("w", -1, 1.0)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CE_CASES)
@pytest.mark.parametrize("N,C", [(7, 5), (1, 1), (0, 3), (512, 200)])
def test_cross_entropy_forward(dtype, case, N, C):
    wname, ignore, eps = case
    rng = np.random.default_rng(N * C)
    x = (rng.standard_normal((N, C)) * 4).astype(dtype)
    t = rng.integers(0, C, N)
    if N > 2 and 0 <= ignore < C:
        t[1] = ignore
    w = None if wname is None else rng.uniform(0.1, 2.0, C).astype(dtype)
    loss, lse = cpu.cross_entropy_forward(x, t, w, ignore, eps)
    ref_loss, ref_lse = ce_ref(x, t, w, ignore, eps)
    assert loss.dtype == lse.dtype == dtype and loss.shape == lse.shape == (N,)
    t_ = {"rtol": 2e-5, "atol": 2e-5} if dtype == np.float32 else tol(dtype)
    np.testing.assert_allclose(loss, ref_loss, **t_)
    np.testing.assert_allclose(lse, ref_lse, **t_)
    go = rng.standard_normal(N).astype(dtype)
    dx = cpu.cross_entropy_backward(x, t, w, ignore, eps, go)
    assert dx.dtype == dtype and dx.shape == (N, C)
    if dtype == np.float64 and N * C <= 35:  # exact derivative, by finite differences
        x64 = x.copy()
        for i in range(N):
            def f(i=i):
                return ce_ref(x64, t, w, ignore, eps)[0][i] * go[i]
            num = numgrad(f, x64)
            np.testing.assert_allclose(dx[i], num[i], rtol=1e-6, atol=1e-7)
    if N and ignore in t:
        assert not dx[t == ignore].any()


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_large_float32_logits_keep_full_precision(eps):
    # log(1/2) from logits near 1000, where one float32 ulp is 6e-5: the log-sum-exp must not
    # be rounded to the input dtype before the logits are subtracted from it
    x = np.array([[1000.0, 1000.0]], dtype=np.float32)
    np.testing.assert_allclose(cpu.log_softmax_forward(x), np.log(0.5), rtol=2e-7)
    loss, _ = cpu.cross_entropy_forward(x, np.array([0]), None, -100, eps)
    np.testing.assert_allclose(loss, -np.log(0.5), rtol=2e-7)
    dx = cpu.cross_entropy_backward(x, np.array([0]), None, -100, eps, np.ones(1, np.float32))
    np.testing.assert_allclose(dx, [[-0.5 * (1 - eps), 0.5 * (1 - eps)]], rtol=2e-7)


@pytest.mark.parametrize("shift", [1e4, 1e6])
def test_softmax_cross_entropy_shift_invariant_float32(shift):
    # the same logits shifted by 1e4 or 1e6 (exactly representable offsets in float32) give
    # the probabilities, losses and gradients of the unshifted ones, to float32 rounding
    rng = np.random.default_rng(7)
    base = np.round(rng.standard_normal((5, 9)) * 4 * 16) / 16  # on float32's grid at 1e6
    x0 = base.astype(np.float32)
    x = (base + shift).astype(np.float32)
    assert np.array_equal(x - np.float32(shift), x0)
    y = cpu.softmax_forward(x)
    np.testing.assert_allclose(y.sum(1), 1.0, atol=4 * np.finfo(np.float32).eps)
    np.testing.assert_allclose(y, cpu.softmax_forward(x0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cpu.log_softmax_forward(x), cpu.log_softmax_forward(x0),
                               rtol=1e-6, atol=1e-6)
    t = rng.integers(0, 9, 5)
    go = np.ones(5, np.float32)
    loss, _ = cpu.cross_entropy_forward(x, t, None, -100, 0.1)
    np.testing.assert_allclose(loss, cpu.cross_entropy_forward(x0, t, None, -100, 0.1)[0],
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cpu.cross_entropy_backward(x, t, None, -100, 0.1, go),
                               cpu.cross_entropy_backward(x0, t, None, -100, 0.1, go),
                               rtol=1e-6, atol=1e-7)


def test_cross_entropy_large_logits_and_errors():
    x = np.array([[1000.0, 0.0, -1000.0]], dtype=np.float32)
    loss, lse = cpu.cross_entropy_forward(x, np.array([0]), None, -100, 0.0)
    assert np.isfinite(loss).all() and loss[0] == 0.0 and lse[0] == 1000.0
    with pytest.raises(IndexError) as info:
        cpu.cross_entropy_forward(np.zeros((2, 5)), np.array([1, 7]), None, -100, 0.0)
    assert "cross_entropy_forward(): target 7" in str(info.value)
    assert "size 5" in str(info.value) and "[0, 5)" in str(info.value)
    with pytest.raises(IndexError, match="target -1"):
        cpu.cross_entropy_backward(np.zeros((1, 5)), np.array([-1]), None, -100, 0.0,
                                   np.ones(1))
    with pytest.raises(RuntimeError, match=r"weight of shape \(4,\)"):
        cpu.cross_entropy_forward(np.zeros((2, 5)), np.array([1, 2]), np.ones(4), -100, 0.0)
    with pytest.raises(RuntimeError, match=r"target of shape \(3,\)"):
        cpu.cross_entropy_forward(np.zeros((2, 5)), np.array([1, 2, 3]), None, -100, 0.0)
    with pytest.raises(ValueError, match="label_smoothing"):
        cpu.cross_entropy_forward(np.zeros((2, 5)), np.array([1, 2]), None, -100, 1.5)


def test_cross_entropy_kernels_check_targets_at_every_size():
    # the range check runs inside the compiled call (serial and parallel), before any row
    for N in (3, 600):  # 600 x 256: past the parallel threshold
        x = np.zeros((N, 256), np.float32)
        t = np.zeros(N, np.int64)
        t[-1] = 256
        with pytest.raises(IndexError, match=r"cross_entropy_forward\(\): target 256"):
            cpu.cross_entropy_forward(x, t, None, -100, 0.1)
        with pytest.raises(IndexError, match=r"cross_entropy_backward\(\): target 256"):
            cpu.cross_entropy_backward(x, t, None, -100, 0.1, np.ones(N, np.float32))
        t[-1] = -100  # ignore_index anywhere is not out of range
        loss, _ = cpu.cross_entropy_forward(x, t, None, -100, 0.0)
        assert loss[-1] == 0.0 and np.isfinite(loss).all()
    with pytest.raises(IndexError, match="target 0"):  # no classes: every target is out of range
        cpu.cross_entropy_forward(np.zeros((1, 0)), np.array([0]), None, -100, 0.0)
    with pytest.raises(IndexError, match="target 0"):
        cpu.cross_entropy_backward(np.zeros((1, 0)), np.array([0]), None, -100, 0.0, np.ones(1))
    with pytest.raises(RuntimeError, match="no classes"):
        cpu.cross_entropy_forward(np.zeros((1, 0)), np.array([-100]), None, -100, 0.0)
    assert cpu.cross_entropy_backward(np.zeros((1, 0)), np.array([-100]), None, -100, 0.0,
                                      np.ones(1)).shape == (1, 0)


def test_cross_entropy_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(4)
    x = rng.standard_normal((9, 6)) * 3
    t = rng.integers(0, 6, 9)
    t[3] = 4
    w = rng.uniform(0.5, 2.0, 6)
    go = rng.standard_normal(9)
    xt = torch.from_numpy(x).requires_grad_()
    ref = F.cross_entropy(xt, torch.from_numpy(t), weight=torch.from_numpy(w),
                          ignore_index=4, label_smoothing=0.2, reduction="none")
    ref.backward(torch.from_numpy(go))
    loss, lse = cpu.cross_entropy_forward(x, t, w, 4, 0.2)
    np.testing.assert_allclose(loss, ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    dx = cpu.cross_entropy_backward(x, t, w, 4, 0.2, go)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- LSTM / GRU cells


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm_ref(gates, c_prev):
    i, f, g, o = np.split(gates.astype(np.float64), 4, axis=1)
    i, f, g, o = sigmoid(i), sigmoid(f), np.tanh(g), sigmoid(o)
    c = f * c_prev + i * g
    return o * np.tanh(c), c, np.concatenate([i, f, g, o], axis=1), np.tanh(c)


def gru_ref(gi, gh, h_prev):
    H = h_prev.shape[1]
    gi, gh = gi.astype(np.float64), gh.astype(np.float64)
    r = sigmoid(gi[:, :H] + gh[:, :H])
    z = sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1 - z) * n + z * h_prev, r, z, n


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("N,H", [(3, 4), (0, 2), (256, 64)])
def test_lstm_cell(dtype, N, H):
    rng = np.random.default_rng(N + H)
    gates = (rng.standard_normal((N, 4 * H)) * 3).astype(dtype)
    gates[:, :1] = 40.0  # saturated sigmoid stays finite
    c_prev = rng.standard_normal((N, H)).astype(dtype)
    got = cpu.lstm_cell_forward(gates, c_prev)
    for a, b in zip(got, lstm_ref(gates, c_prev)):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, **tol(dtype))
    h, c, act, tanh_c = got
    gh = rng.standard_normal((N, H)).astype(dtype)
    gc = rng.standard_normal((N, H)).astype(dtype)
    dgates, dc_prev = cpu.lstm_cell_backward(gh, gc, act, c_prev, tanh_c)
    assert dgates.shape == (N, 4 * H) and dc_prev.shape == (N, H) and dgates.dtype == dtype
    if dtype == np.float64 and N * H <= 12:
        g64, c64 = gates.copy(), c_prev.copy()

        def f():
            h_, c_, _, _ = lstm_ref(g64, c64)
            return np.sum(h_ * gh) + np.sum(c_ * gc)

        np.testing.assert_allclose(dgates, numgrad(f, g64), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dc_prev, numgrad(f, c64), rtol=1e-6, atol=1e-8)
    # None gradients are zeros
    only_h = cpu.lstm_cell_backward(gh, None, act, c_prev, tanh_c)
    ref_h = cpu.lstm_cell_backward(gh, np.zeros_like(gh), act, c_prev, tanh_c)
    np.testing.assert_array_equal(only_h[0], ref_h[0])
    only_c = cpu.lstm_cell_backward(None, gc, act, c_prev, tanh_c)
    ref_c = cpu.lstm_cell_backward(np.zeros_like(gc), gc, act, c_prev, tanh_c)
    np.testing.assert_array_equal(only_c[1], ref_c[1])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("N,H", [(3, 4), (0, 2), (256, 64)])
def test_gru_cell(dtype, N, H):
    rng = np.random.default_rng(N * H + 1)
    gi = (rng.standard_normal((N, 3 * H)) * 2).astype(dtype)
    gh = (rng.standard_normal((N, 3 * H)) * 2).astype(dtype)
    gi[:, :1] = -50.0
    h_prev = rng.standard_normal((N, H)).astype(dtype)
    got = cpu.gru_cell_forward(gi, gh, h_prev)
    for a, b in zip(got, gru_ref(gi, gh, h_prev)):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, **tol(dtype))
    h, r, z, n = got
    dh = rng.standard_normal((N, H)).astype(dtype)
    dgi, dgh, dh_prev = cpu.gru_cell_backward(dh, r, z, n, gh[:, 2 * H:], h_prev)
    assert dgi.shape == dgh.shape == (N, 3 * H) and dh_prev.dtype == dtype
    if dtype == np.float64 and N * H <= 12:
        gi64, gh64, hp64 = gi.copy(), gh.copy(), h_prev.copy()

        def f():
            return np.sum(gru_ref(gi64, gh64, hp64)[0] * dh)

        np.testing.assert_allclose(dgi, numgrad(f, gi64), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dgh, numgrad(f, gh64), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dh_prev, numgrad(f, hp64), rtol=1e-6, atol=1e-8)


def test_rnn_cells_float16_and_errors():
    gates = np.zeros((2, 8), dtype=np.float16)
    h, c, act, tanh_c = cpu.lstm_cell_forward(gates, np.ones((2, 2), dtype=np.float16))
    assert h.dtype == c.dtype == np.float16 and c.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(RuntimeError, match=r"gates of shape \(2, 6\).*expected shape \(2, 8\)"):
        cpu.lstm_cell_forward(np.zeros((2, 6)), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match=r"gh of shape \(2, 5\)"):
        cpu.gru_cell_forward(np.zeros((2, 6)), np.zeros((2, 5)), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="same dtype"):
        cpu.gru_cell_forward(np.zeros((2, 6)), np.zeros((2, 6), np.float32), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match=r"grad_h of shape \(3, 2\)"):
        cpu.lstm_cell_backward(np.zeros((3, 2)), None, np.zeros((2, 8)), np.zeros((2, 2)),
                               np.zeros((2, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vexp_matches_numpy_exp_within_a_few_ulp(dtype):
    from ember.tensor.kernels.cpu._vmath import vexp, vjit

    @vjit
    def apply(a, out):
        for k in range(a.shape[0]):
            out[k] = vexp(a[k])

    info = np.finfo(dtype)
    top = float(np.log(info.max))
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(-5, 5, 5000), rng.uniform(-top - 30, top, 5000),
                        [0.0, -0.0, 1.0, -1.0, top, top * 1.0001, -top - 40, 1e-30]]
                       ).astype(dtype)
    out = np.empty_like(a)
    apply(a, out)
    with np.errstate(over="ignore"):
        ref = np.exp(a.astype(np.float64))
    normal = (ref > info.tiny) & (ref < info.max)
    rel = np.abs(out[normal].astype(np.float64) - ref[normal]) / ref[normal]
    assert rel.max() <= 4 * info.eps
    tiny = ref <= info.tiny  # the subnormal range underflows to (near) zero
    assert (out[tiny] >= 0).all() and (out[tiny] <= 2 * info.tiny).all()
    with np.errstate(over="ignore"):
        assert np.array_equal(np.isinf(out), np.isinf(np.exp(a)))
    special = np.array([np.inf, -np.inf, np.nan], dtype)
    out_s = np.empty_like(special)
    apply(special, out_s)
    assert out_s[0] == np.inf and out_s[1] == 0.0 and np.isnan(out_s[2])


def test_every_kernel_is_reached_by_library_code():
    # each kernel of the table is looked up by name (kernels.get / _kernel / get_kernel) by an
    # op or an optimizer outside the kernel folders: a kernel nobody requests is dead code and
    # goes, with its tests
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    call = re.compile(r"""(?:\bget|_kernel|get_kernel)\(\s*((?:['"]\w+['"]\s*(?:if\s+\w+\s+"""
                      r"""else\s+)?)+)""")
    requested = set()
    for p in root.glob("*/src/ember/**/*.py"):
        if "kernels" in p.parts:
            continue
        for m in call.finditer(p.read_text(encoding="utf-8")):
            requested |= set(re.findall(r"""['"](\w+)['"]""", m.group(1)))
    missing = sorted(set(kernels.KERNEL_NAMES) - requested)
    assert not missing, f"kernels no library code requests: {missing}"


# --------------------------------------------------------------------------- fmod / remainder
_EDGE = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 7.0, -7.0, 0.1, -0.1, 1e-30, -1e-30, 3e38,
         -3e38, 2.0 ** 60, -(2.0 ** 60), np.inf, -np.inf, np.nan]


def _same_bits(x, y):
    """Equal values, equal signs of zero, NaN where NaN."""
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape
    return (np.signbit(x) == np.signbit(y)) & ((x == y) | (np.isnan(x) & np.isnan(y)))


def _edge_grid(dtype, rng):
    v = np.array(_EDGE, dtype=np.float64)
    if dtype == np.float64:
        v = np.concatenate([v, [1e300, -1e300, 1e-300, 5e-324, -5e-324]])
    v = v.astype(dtype) if dtype == np.float64 else v[np.abs(v) < 3.4e38].astype(dtype)
    a, b = np.meshgrid(v, v)
    big = 10.0 ** rng.integers(-30, 30, 20000)
    a = np.concatenate([a.ravel(), (rng.standard_normal(20000) * big).astype(dtype)])
    b = np.concatenate([b.ravel(), (rng.standard_normal(20000) * big[::-1]).astype(dtype)])
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fmod_remainder_floor_divide_kernels_match_numpy(dtype):
    rng = np.random.default_rng(0)
    a, b = _edge_grid(dtype, rng)
    with np.errstate(all="ignore"):
        ref_fmod = np.fmod(a, b)  # exact (libm), signs of zero included
        m = ref_fmod
        ref_rem = np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)  # PyTorch's rule
        ref_floor = np.floor_divide(a, b)
    assert _same_bits(cpu.fmod(a, b), ref_fmod).all()
    assert _same_bits(cpu.remainder(a, b), ref_rem).all()
    assert _same_bits(cpu.floor_divide(a, b), ref_floor).all()
    # NumPy's remainder agrees except for the sign of a zero result (the divisor's in NumPy,
    # the dividend's in PyTorch)
    with np.errstate(all="ignore"):
        np_rem = np.remainder(a, b)
    nonzero = np_rem != 0
    assert _same_bits(cpu.remainder(a, b)[nonzero], np_rem[nonzero]).all()
    r = cpu.remainder(np.array([-4.0, 4.0, 5.0, -5.0], dtype), np.array([2.0, -2.0, -np.inf,
                                                                          np.inf], dtype))
    assert _same_bits(r, np.array([-0.0, 0.0, -np.inf, np.inf], dtype)).all()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
def test_fmod_remainder_floor_divide_kernels_integers(dtype):
    info = np.iinfo(dtype)
    v = np.array([info.min, -7, -3, -1, 1, 2, 3, 7, info.max] if info.min else
                 [1, 2, 3, 7, info.max], dtype)
    a, b = np.meshgrid(np.concatenate([v, np.zeros(1, dtype)]), v)
    with np.errstate(all="ignore"):
        for name in ("fmod", "remainder", "floor_divide"):
            got = getattr(cpu, name)(a, b)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, getattr(np, name)(a, b))
    if info.min:  # the minimum // -1 wraps instead of trapping
        assert cpu.floor_divide(np.array([info.min], dtype), -1)[0] == info.min
        assert cpu.remainder(np.array([info.min], dtype), -1)[0] == 0


def test_fmod_kernels_broadcast_layouts_and_out():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5)) * 10
    b = rng.standard_normal((4, 5)) + 0.1
    cases = [(a, b), (a, b[:, :1]), (a[:, :1], b), (a.transpose(2, 0, 1), 2.5), (3.0, a),
             (a[..., ::2], b[:, ::2]), (a[:, :, :1], b[None, :1, :]), (a[:1, :, :1], a[:, :1]),
             (np.zeros((0, 4, 5)), b), (np.array(5.0), np.array(-3.0)), (a.astype(np.float32), 2)]
    with np.errstate(all="ignore"):
        for x, y in cases:
            for name in ("fmod", "remainder", "floor_divide"):
                got = getattr(cpu, name)(x, y)
                m = np.fmod(x, y)
                ref = {"fmod": m, "floor_divide": np.floor_divide(x, y),
                       "remainder": np.where((m != 0) & ((np.asarray(y) < 0) != (m < 0)),
                                             m + y, m)}[name]
                assert _same_bits(got, np.asarray(ref, dtype=got.dtype)).all(), name
    with pytest.raises(ValueError):
        cpu.fmod(np.ones(3), np.ones(4))
    out = np.zeros((5, 4, 3), np.float32).transpose(2, 1, 0)  # non-contiguous, another dtype
    cpu.remainder(a, b, out=out)
    np.testing.assert_array_equal(out, np.remainder(a, b).astype(np.float32))
    with pytest.raises(TypeError):
        cpu.fmod(np.ones(2, bool), np.ones(2, bool))


def test_floor_divide_kernel_float16_rounds_each_step():
    # PyTorch's vectorized float16 floor division rounds every step to float16 (the float32
    # route differs): 8728 where float32 gives 8724
    a, b = np.full(64, 50880.0, np.float16), np.full(64, 5.832, np.float16)
    got = cpu.floor_divide(a, b)
    assert got.dtype == np.float16
    assert (got == np.floor((a - np.fmod(a, b)) / b)).all() and got[0] == 8728
    assert np.floor_divide(a.astype(np.float32), b.astype(np.float32))[0] == 8724


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_nan_to_num_kernel_matches_numpy(dtype):
    v = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0, 0.0, -2.0, 1e-40], np.float64)
    x = v.astype(dtype)
    if np.dtype(dtype).kind == "c":
        x.imag = v[::-1]
    for args in ((0.0, 7.0, -7.0), (2.5, 1e10, -3.0)):
        got = cpu.nan_to_num(x, *args)
        ref = np.nan_to_num(x, nan=args[0], posinf=args[1], neginf=args[2])
        assert got.dtype == x.dtype
        assert _same_bits(got.view(got.real.dtype), ref.view(ref.real.dtype)).all()
    grid = np.stack([x, x[::-1]])  # 2-d, non-contiguous (a transpose), 0-d and empty
    np.testing.assert_array_equal(cpu.nan_to_num(grid.T, 0.0, 1.0, -1.0),
                                  np.nan_to_num(grid.T, nan=0.0, posinf=1.0, neginf=-1.0))
    assert cpu.nan_to_num(x[0].reshape(()), 3.0, 1.0, -1.0).shape == ()
    assert cpu.nan_to_num(x[:0], 0.0, 1.0, -1.0).shape == (0,)
    with pytest.raises(TypeError):
        cpu.nan_to_num(np.ones(2, np.int64), 0.0, 1.0, -1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vlog_vlog1p_vexp2_match_numpy(dtype):
    """``_vmath``'s vlog, vlog1p and vexp2 against NumPy (correctly rounded within 1-2 ulp)
    over a wide grid with subnormals, zeros, infinities and NaN."""
    import numba

    from ember.tensor.kernels.cpu._vmath import vexp2, vlog, vlog1p

    @numba.njit
    def run(x, o1, o2, o3):
        for i in range(x.shape[0]):
            o1[i] = vlog(x[i])
            o2[i] = vlog1p(x[i])
            o3[i] = vexp2(x[i])

    fi = np.finfo(dtype)
    rng = np.random.default_rng(0)
    mags = np.exp(rng.uniform(np.log(float(fi.smallest_subnormal)), np.log(float(fi.max)), 20000))
    x = np.concatenate([mags, -mags, rng.uniform(-1, 1, 5000), rng.uniform(-200, 200, 5000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1.0, 2.0, fi.tiny,
                         fi.smallest_subnormal, 1e-30, -1e-30]]).astype(dtype)
    o1, o2, o3 = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    run(x, o1, o2, o3)
    with np.errstate(all="ignore"):
        for got, ref in ((o1, np.log(x.astype(np.longdouble))),
                         (o2, np.log1p(x.astype(np.longdouble))),
                         (o3, np.exp2(x.astype(np.longdouble)))):
            refd = ref.astype(dtype)
            same = (got == refd) | (np.isnan(got) & np.isnan(refd))
            fin = np.isfinite(refd) & (refd != 0) & ~same
            ulp = np.abs(got[fin].astype(np.longdouble) - ref[fin]) / np.spacing(
                np.abs(refd[fin])).astype(np.longdouble)
            assert (same | fin).all()  # specials exact
            assert not fin.any() or ulp.max() <= 2.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_logaddexp_kernels_match_numpy_and_torch_specials(dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((37, 29)) * 20).astype(dtype)
    b = (rng.standard_normal((37, 29)) * 20).astype(dtype)
    a[0] = b[0]
    for k, ref in ((cpu.logaddexp, np.logaddexp), (cpu.logaddexp2, np.logaddexp2)):
        exact = ref(a.astype(np.longdouble), b.astype(np.longdouble))
        scale = np.maximum(np.abs(exact), np.maximum(np.abs(a), np.abs(b)).astype(np.longdouble))
        out = np.empty((37, 29), np.float64)
        assert k(a, b, out=out) is out
        got = k(a, b)
        assert got.dtype == dtype and got.shape == a.shape
        err = np.abs(got.astype(np.longdouble) - exact) / np.spacing(scale.astype(dtype))
        assert err.max() <= (1.0 if dtype == np.float16 else 2.5)
        np.testing.assert_allclose(k(a, b[:1]), ref(a, b[:1]), rtol=4 * np.finfo(dtype).eps)
        np.testing.assert_allclose(k(a[:, :1], b), ref(a[:, :1], b), rtol=4 * np.finfo(dtype).eps)
        np.testing.assert_allclose(k(a, 1.5), ref(a, dtype(1.5)), rtol=4 * np.finfo(dtype).eps)
        np.testing.assert_allclose(k(a.T, b.T), ref(a.T, b.T), rtol=4 * np.finfo(dtype).eps)
    # PyTorch's specials: equal infinities give themselves, +inf wins, NaN propagates
    inf, nan = np.inf, np.nan
    x = np.array([inf, -inf, nan, 0.0, -0.0, 1.0], dtype)
    X, Y = np.meshgrid(x, x)
    lae = cpu.logaddexp(X, Y)
    for i, xi in enumerate(x):
        for j, yj in enumerate(x):
            v = lae[j, i]
            if np.isnan(xi) or np.isnan(yj):
                assert np.isnan(v)
            elif inf in (xi, yj):
                assert v == inf
            elif xi == yj == -inf:
                assert v == -inf
            else:
                ref = dtype(np.logaddexp(np.float64(xi), np.float64(yj)))
                assert abs(v - ref) <= 2 * np.spacing(ref)
    with pytest.raises(TypeError):
        cpu.logaddexp(np.ones(3, np.int64), np.ones(3, np.int64))


# --------------------------------------------------------------------------- triangle_zero
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int8,
                                   np.uint8, np.bool_, np.complex128])
def test_triangle_zero_is_numpys_tril_and_triu(dtype):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 5, 7)) * 10).astype(dtype)
    for k in (-6, -5, -1, 0, 2, 6, 7, 2**62, -2**62):
        for upper, ref in ((False, np.tril), (True, np.triu)):
            out = x.copy()
            assert cpu.triangle_zero(out, k, upper) is None
            np.testing.assert_array_equal(out, ref(x, k))
    empty = np.empty((2, 0, 3), np.float32)
    cpu.triangle_zero(empty, 0, False)  # nothing to do, no error


def test_triangle_zero_bfloat16_and_bad_input():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3).astype(ml_dtypes.bfloat16)
    cpu.triangle_zero(x, 0, True)
    np.testing.assert_array_equal(x.astype(np.float32)[0], np.triu(np.arange(1, 10).reshape(3, 3)))
    with pytest.raises(RuntimeError, match=r"triangle_zero\(\): expected out of shape \(batch, "
                                           r"rows, cols\) \(3-d\), got shape \(3, 3\)"):
        cpu.triangle_zero(np.ones((3, 3)), 0, False)
    with pytest.raises(ValueError, match="C-contiguous"):
        cpu.triangle_zero(np.ones((1, 3, 4)).transpose(0, 2, 1), 0, False)
    with pytest.raises(TypeError, match="no kernel for dtype"):
        cpu.triangle_zero(np.array([[["a"]]]), 0, False)


# --------------------------------------------------------------------------- fill
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int32, np.int64, np.uint64,
                                   np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128])
def test_fill_is_numpys_fill(dtype):
    kind = np.dtype(dtype).kind
    extra = {"b": [False], "i": [-7], "u": [np.iinfo(dtype).max if kind == "u" else 0],
             "f": [-0.0, 2.5, np.nan, -np.inf], "c": [complex(-0.0, 2.5), complex(np.nan, 1)]}
    values = [True] + [np.array(v).astype(dtype)[()] for v in extra[kind]]
    for shape in ((4, 64), (), (0, 3), (2, 3, 5)):
        for v in values:
            out, ref = np.empty(shape, dtype), np.empty(shape, dtype)
            assert cpu.fill(out, v) is None
            ref.fill(v)
            np.testing.assert_array_equal(out, ref)
            assert np.array_equal(np.signbit(out.real), np.signbit(ref.real))
    strided = np.zeros((3, 4), dtype).T  # not C-contiguous: NumPy's fill writes it
    cpu.fill(strided, True)
    assert strided.all()


# --------------------------------------------------------------------------- gelu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_kernels_match_the_float64_formula(dtype):
    from scipy.special import erf

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(4000) * 4, np.linspace(-40, 40, 801),
                        [0.0, -0.0, 1e-30, -1e-30, 6.0, -6.0]]).astype(dtype)
    g = rng.standard_normal(x.size).astype(dtype)
    v = x.astype(np.float64)
    cdf = 0.5 * (1 + erf(v / np.sqrt(2.0)))
    fwd = v * cdf
    bwd = g.astype(np.float64) * (cdf + v * np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi))
    # PyTorch's formula: 1 + erf(x / sqrt 2) cancels for negative x, so the error is bounded
    # relative to x (and the gradient), not to the tiny result; float32 is computed in float32
    # arithmetic (a few ulp, PyTorch's accuracy)
    bound = 3.0 if dtype == np.float32 else 4.0
    for got, ref, size in ((cpu.gelu(x), fwd, np.abs(v)),
                           (cpu.gelu_backward(g, x), bwd, np.abs(g * v))):
        assert got.dtype == dtype and got.shape == x.shape
        scale = np.maximum(np.abs(ref), np.maximum(size, np.finfo(dtype).tiny))
        err = np.abs(got.astype(np.float64) - ref) / np.spacing(scale.astype(dtype)).astype(
            np.float64)
        assert err.max() <= bound, (err.max(), x[err.argmax()])
    # layout: a strided 2-d view gives the contiguous result's values
    m = rng.standard_normal((8, 20)).astype(dtype)[:, ::2]
    np.testing.assert_array_equal(cpu.gelu(m), cpu.gelu(np.ascontiguousarray(m)))
    np.testing.assert_array_equal(cpu.gelu_backward(m.T, m.T),
                                  cpu.gelu_backward(np.ascontiguousarray(m.T),
                                                    np.ascontiguousarray(m.T)))


def test_gelu_kernel_specials_and_bad_input():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    with np.errstate(all="raise"):  # no floating-point warning from the loops
        y = cpu.gelu(x)
        gb = cpu.gelu_backward(np.ones_like(x), x)
    # PyTorch's formula at the infinities: -inf * Phi(-inf) = -inf * 0 is NaN, and so is the
    # gradient's x phi(x) at either infinity
    np.testing.assert_array_equal(y, [np.nan, np.inf, np.nan, 0.0, -0.0])
    assert np.signbit(y[4])  # -0 * Phi(0) = -0
    np.testing.assert_array_equal(gb, [np.nan, np.nan, np.nan, 0.5, 0.5])
    with pytest.raises(TypeError, match=r"gelu\(\): no kernel for dtype int64"):
        cpu.gelu(np.ones(3, np.int64))
    with pytest.raises(TypeError, match="gradient dtype float64"):
        cpu.gelu_backward(np.ones(3), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"gradient of shape \(2,\)"):
        cpu.gelu_backward(np.ones(2), np.ones(3))


# --------------------------------------------------------------------------- outer
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n", [(320, 128), (7, 1), (1, 9), (0, 3), (3, 0), (1, 1)])
def test_outer_kernel_is_numpys_product(dtype, m, n):
    rng = np.random.default_rng(m * 31 + n)
    a = rng.standard_normal(2 * m).astype(dtype)[::2]  # a strided view
    b = rng.standard_normal(n).astype(dtype)
    got = cpu.outer(a, b)
    assert got.dtype == dtype and got.shape == (m, n) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.multiply.outer(a, b))  # one rounding per element
    out = np.empty((m, n), dtype)
    assert cpu.outer(np.ascontiguousarray(a), b, out=out) is out
    np.testing.assert_array_equal(out, got)


def test_outer_kernel_specials_and_bad_input():
    x = np.array([np.inf, -0.0, np.nan, 2.0], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(cpu.outer(x, x), np.multiply.outer(x, x))
    big = np.array([3e38], np.float32)
    assert cpu.outer(big, big)[0, 0] == np.inf  # overflow is inf, as in a GEMM
    for bad in (np.int64, np.complex64, np.float16):
        with pytest.raises(TypeError, match=f"outer: no kernel for dtypes {np.dtype(bad)}"):
            cpu.outer(np.ones(3, bad), np.ones(3, bad))
    with pytest.raises(TypeError, match="float32 and float64"):
        cpu.outer(np.ones(3, np.float32), np.ones(3))
    with pytest.raises(ValueError, match=r"1-d arrays, got shapes \(3, 1\)"):
        cpu.outer(np.ones((3, 1)), np.ones(3))
    with pytest.raises(ValueError, match="C-contiguous"):
        cpu.outer(np.ones(3), np.ones(2), out=np.empty((2, 3)))


# --------------------------------------------------------------------------- sign, hypot
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_kernel_is_numpys_sign(dtype):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((33, 40)) * 3).astype(dtype)
    x[0, :7] = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-300]
    for v in (x, x[:, ::3], x.T, x[0, 0]):  # contiguous, strided, transposed, 0-d
        got = cpu.sign(np.asarray(v))
        want = np.sign(np.asarray(v))
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got[np.asarray(v) == 0]).any()  # +0 for either zero
    with pytest.raises(TypeError, match="sign: no kernel for dtype int64"):
        cpu.sign(np.arange(3))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_hypot_kernel_rounds_like_libm(dtype):
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((29, 31)) * 10.0 ** rng.integers(-3, 4, (29, 31))).astype(dtype)
    b = (rng.standard_normal((29, 31)) * 10.0 ** rng.integers(-3, 4, (29, 31))).astype(dtype)
    exact = np.hypot(a.astype(np.float64), b.astype(np.float64))
    got = cpu.hypot(a, b)
    assert got.dtype == dtype and got.shape == a.shape
    # within half an ulp of the exact value (ties of the double rounding aside: one ulp)
    assert (np.abs(got - exact) / np.spacing(exact.astype(dtype))).max() <= 0.5 + 1e-6
    for x, y in ((a, b[:1]), (a[:, :1], b), (a.T, b.T), (a, dtype(2.5)), (a[::2], b[::2])):
        np.testing.assert_allclose(cpu.hypot(x, y), np.hypot(x, y),
                                   rtol=2 * np.finfo(dtype).eps)
    out = np.empty((29, 31), np.float64)
    assert cpu.hypot(a, b, out=out) is out
    np.testing.assert_array_equal(out, got.astype(np.float64))
    big = np.array([np.finfo(dtype).max / 2, np.finfo(dtype).max], dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(cpu.hypot(big, big), np.hypot(big, big))  # inf
    # C's specials: an infinity wins over NaN, NaN otherwise propagates, zeros give +0
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.0], dtype)
    X, Y = np.meshgrid(x, x)
    np.testing.assert_array_equal(cpu.hypot(X, Y), np.hypot(X, Y))
    with pytest.raises(TypeError, match="hypot: no kernel for dtype int64"):
        cpu.hypot(np.arange(3), np.arange(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frac_kernel_is_x_minus_trunc(dtype):
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((33, 40)) * 30).astype(dtype)
    x[0, :9] = [np.nan, 0.0, -0.0, np.inf, -np.inf, -2.0, 3.0, 1e-40, -0.5]
    for v in (x, x[:, ::3], x.T, x[0, 0]):  # contiguous, strided, transposed, 0-d
        v = np.asarray(v)
        with np.errstate(invalid="ignore"):
            got = cpu.frac(v)
            want = v - np.trunc(v)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # +0 at -2.0
    with pytest.raises(TypeError, match="frac: no kernel for dtype int64"):
        cpu.frac(np.arange(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_decimals_kernel_is_numpys_round(dtype):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((30, 40)) * 10.0 ** rng.uniform(-3, 6, (30, 40))).astype(dtype)
    x[0, :8] = [np.nan, 0.0, -0.0, np.inf, -np.inf, 2.5, -0.25, 1e-30]
    for d in (-400, -3, -1, 1, 2, 3, 7, 400, np.int64(2)):
        for v in (x, x[:, ::3], x.T, x[0, 5]):  # contiguous, strided, transposed, 0-d
            v = np.asarray(v)
            with np.errstate(all="ignore"):
                got = cpu.round_decimals(v, d)
                want = v.round(d)
            assert got.dtype == dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    with pytest.raises(TypeError, match="round_decimals: no kernel for dtype int64"):
        cpu.round_decimals(np.arange(3), 1)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        cpu.round_decimals(x, 1.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_make_complex_kernel_keeps_both_parts(dtype):
    rng = np.random.default_rng(10)
    re = rng.standard_normal((6, 5)).astype(dtype)
    im = rng.standard_normal((6, 5)).astype(dtype)
    re[0] = [np.nan, 0.0, -0.0, np.inf, -np.inf]
    im[0] = [-0.0, np.nan, -np.inf, 0.0, np.inf]
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    for a, b in ((re, im), (re, im[0]), (re[:, :1], im), (re.T, im.T[::-1]),
                 (re[0, 1], im[0, 2])):  # same shape, a row, a column, strided, 0-d
        a, b = np.asarray(a), np.asarray(b)
        want = np.empty(np.broadcast_shapes(a.shape, b.shape), cdt)
        want.real, want.imag = a, b
        got = cpu.make_complex(a, b)
        assert got.dtype == cdt and got.shape == want.shape and isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))
    with pytest.raises(TypeError, match="make_complex: no kernel for dtypes"):
        cpu.make_complex(re, im.astype(np.float16))
    with pytest.raises(TypeError, match="make_complex: no kernel for dtypes int64"):
        cpu.make_complex(np.arange(3), np.arange(3))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_copysign_and_angle_kernels_match_numpy(dtype):
    rng = np.random.default_rng(9)
    a = (rng.standard_normal((23, 35)) * 4).astype(dtype)
    b = (rng.standard_normal((23, 35)) * 4).astype(dtype)
    specials = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, -np.nan, 2.0], dtype)
    a[0, :7], b[1, :7] = specials, specials
    for x, y in ((a, b), (a, b[:1]), (a[:, :1], b), (a.T, b.T), (a, dtype(-1.5)), (a[::2], b[::2])):
        got, want = cpu.copysign(x, y), np.copysign(x, y)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    out = np.empty((23, 35), np.float64)
    assert cpu.copysign(a, b, out=out) is out
    np.testing.assert_array_equal(out, np.copysign(a, b).astype(np.float64))
    for x in (a, a.T, a[::3], a[0, 2]):  # PyTorch's real angle: pi below 0, 0 for -0, NaN kept
        x = np.asarray(x)
        got = cpu.angle(x)
        want = np.where(np.isnan(x), x, np.where(x < 0, dtype(np.pi), dtype(0)))
        assert got.dtype == dtype and got.shape == x.shape
        np.testing.assert_array_equal(got, want)
    for k in (cpu.angle, lambda v: cpu.copysign(v, v)):
        with pytest.raises(TypeError, match="no kernel for dtype int64"):
            k(np.arange(3))


def test_matmul_with_inner_size_one_runs_the_outer_kernel_exactly():
    import ember.tensor as et

    rng = np.random.default_rng(5)
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((33, 1)).astype(dt)
        b = rng.standard_normal((1, 17)).astype(dt)
        np.testing.assert_array_equal((et.tensor(a) @ et.tensor(b)).numpy(), a @ b)
        # a one-row gradient through linear's backward: g^T @ x
        np.testing.assert_array_equal((et.tensor(a[:, 0]).reshape(1, 33).mT @
                                       et.tensor(b)).numpy(), a @ b)


# --------------------------------------------------------------------------- orthogonal_poly
def _poly_reference(kind, x, n):
    """SciPy's evaluations (float64), 0 at negative degrees."""
    import scipy.special as sp

    shifted = kind.startswith("shifted_")
    base = kind[len("shifted_"):] if shifted else kind
    t = 2 * x - 1 if shifted else x
    f = {"chebyshev_polynomial_t": sp.eval_chebyt, "chebyshev_polynomial_u": sp.eval_chebyu,
         "chebyshev_polynomial_v": lambda m, v: (sp.eval_chebyu(m, v) -
                                                 sp.eval_chebyu(m - 1, v)),
         "chebyshev_polynomial_w": lambda m, v: (sp.eval_chebyu(m, v) +
                                                 sp.eval_chebyu(m - 1, v)),
         "hermite_polynomial_h": sp.eval_hermite, "hermite_polynomial_he": sp.eval_hermitenorm,
         "laguerre_polynomial_l": sp.eval_laguerre,
         "legendre_polynomial_p": sp.eval_legendre}[base]
    m = np.broadcast_to(n, np.broadcast_shapes(np.shape(t), np.shape(n)))
    t = np.broadcast_to(t, m.shape)
    out = np.where(m == 0, 1.0, f(np.maximum(m, 1), t))
    return np.where(m < 0, 0.0, out)


@pytest.mark.parametrize("kind", ["chebyshev_polynomial_t", "chebyshev_polynomial_u",
                                  "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                                  "shifted_chebyshev_polynomial_t", "hermite_polynomial_h",
                                  "hermite_polynomial_he", "laguerre_polynomial_l",
                                  "legendre_polynomial_p"])
def test_orthogonal_poly_kernel_matches_scipy(kind):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (3, 1, 7))
    n = np.arange(-1, 9).reshape(1, 10, 1)
    got = cpu.orthogonal_poly(kind, x, n)  # broadcast both ways
    assert got.shape == (3, 10, 7) and got.dtype == np.float64
    np.testing.assert_allclose(got, _poly_reference(kind, x, n), rtol=1e-9, atol=1e-9)
    # a scalar degree is read in place; a scalar x broadcasts against the degrees
    np.testing.assert_allclose(cpu.orthogonal_poly(kind, x, np.asarray(4)),
                               _poly_reference(kind, x, 4), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cpu.orthogonal_poly(kind, np.asarray(0.3), n[0, :, 0]),
                               _poly_reference(kind, 0.3, n[0, :, 0]), rtol=1e-9, atol=1e-9)
    # NaN propagates from degree 1 on; degree 0 is 1
    nan = cpu.orthogonal_poly(kind, np.array([np.nan, np.nan]), np.array([0, 2]))
    assert nan[0] == 1.0 and np.isnan(nan[1])
