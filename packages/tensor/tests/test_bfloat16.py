"""bfloat16: the dtype, promotion, casts, printing, arithmetic computed in float32 and rounded
once, float32 accumulation in reductions and products, gradients, save/load."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember.tensor as et

BF = np.dtype(ml_dtypes.bfloat16)


def _bf(x):
    return np.asarray(x, dtype=np.float32).astype(BF)


def _f32(t):
    return t.numpy().astype(np.float32)


def test_dtype_attributes_and_names():
    d = et.bfloat16
    assert repr(d) == "ember.bfloat16" and d.itemsize == 2
    assert d.is_floating_point and d.is_signed and not d.is_complex
    assert et.tensor([1.0], dtype=et.bfloat16).dtype is d
    assert et.tensor([1.0], dtype="bfloat16").dtype is d
    fi = et.finfo(et.bfloat16)
    assert (fi.bits, fi.eps, fi.tiny) == (16, 2.0 ** -7, 2.0 ** -126)
    assert fi.max == pytest.approx(3.3895313892515355e38)


def test_promotion_follows_pytorch():
    P = et.promote_types
    assert P(et.bfloat16, et.float16) is et.float32
    assert P(et.float16, et.bfloat16) is et.float32
    assert P(et.bfloat16, et.float32) is et.float32
    assert P(et.bfloat16, et.float64) is et.float64
    assert P(et.bfloat16, et.int64) is et.bfloat16
    assert P(et.bool, et.bfloat16) is et.bfloat16
    x = et.ones(3, dtype=et.bfloat16)
    assert (x + 2.5).dtype is et.bfloat16  # Python scalars do not widen
    assert (x * 3).dtype is et.bfloat16
    assert (x / 3).dtype is et.bfloat16
    assert (x + et.ones(3, dtype=et.float16)).dtype is et.float32
    assert (x + et.ones(3)).dtype is et.float32
    assert (x + et.tensor(1.0)).dtype is et.bfloat16  # a 0-d float32 does not widen
    assert (et.arange(3) + x).dtype is et.bfloat16
    assert (et.arange(3) / et.tensor(2.0, dtype=et.bfloat16)).dtype is et.bfloat16


def test_casts_and_creation():
    x = et.tensor([1.0, 0.1, 3.14159])
    b = x.bfloat16()
    assert b.dtype is et.bfloat16 and b.is_floating_point()
    np.testing.assert_array_equal(_f32(b), _bf([1.0, 0.1, 3.14159]).astype(np.float32))
    assert x.to(et.bfloat16).dtype is et.bfloat16
    assert b.float().dtype is et.float32 and b.double().dtype is et.float64
    assert b.type() == "ember.BFloat16Tensor"
    assert et.zeros(2, dtype=et.bfloat16).dtype is et.bfloat16
    assert et.full((2,), 0.1, dtype=et.bfloat16).tolist() == [0.10009765625] * 2
    r = et.rand(1000, dtype=et.bfloat16)
    assert r.dtype is et.bfloat16 and float(r.float().max()) < 1.0
    assert et.randn(3, dtype=et.bfloat16).dtype is et.bfloat16
    assert et.arange(0, 1, 0.25, dtype=et.bfloat16).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert et.tensor(2.5, dtype=et.bfloat16).item() == 2.5
    assert et.from_numpy(np.ones(2, dtype=BF)).dtype is et.bfloat16
    assert et.tensor([1, 2]).bfloat16().long().tolist() == [1, 2]


def test_printing_like_pytorch():
    x = et.tensor([0.1259765625, -0.1318359375, 1.0], dtype=et.bfloat16)
    assert repr(x) == "tensor([ 0.1260, -0.1318,  1.0000], dtype=ember.bfloat16)"
    assert repr(et.tensor(3.0, dtype=et.bfloat16)) == "tensor(3., dtype=ember.bfloat16)"


@pytest.mark.parametrize("expr", [
    lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y, lambda x, y: x - y,
    lambda x, y: x * 0.1, lambda x, y: x / 3.3, lambda x, y: y.abs().log(),
    lambda x, y: x.exp(), lambda x, y: x.tanh(), lambda x, y: x.sigmoid(),
    lambda x, y: y.abs().sqrt(), lambda x, y: x.sin(),
])
def test_elementwise_is_float32_math_rounded_once(expr):
    rng = np.random.default_rng(0)
    a, b = _bf(rng.standard_normal(200)), _bf(rng.standard_normal(200) + 3)
    want = expr(et.tensor(a.astype(np.float32)), et.tensor(b.astype(np.float32)))
    got = expr(et.tensor(a), et.tensor(b))
    assert got.dtype is et.bfloat16
    np.testing.assert_array_equal(_f32(got), want.numpy().astype(BF).astype(np.float32))


def test_reductions_accumulate_in_float32():
    x = et.full((4096,), 0.1, dtype=et.bfloat16)
    s = x.sum()
    assert s.dtype is et.bfloat16
    # a bfloat16 running sum stalls at 32 (0.1 is below half an ulp there); float32 does not
    assert float(s) == pytest.approx(409.6, rel=4e-3)
    assert float(x.mean()) == pytest.approx(0.1, rel=4e-3)
    assert x.sum(dtype=et.float32).dtype is et.float32
    assert float(x.cumsum(0)[-1]) == pytest.approx(409.6, rel=4e-3)
    assert x.view(64, 64).var(1).dtype is et.bfloat16
    assert x.norm().dtype is et.bfloat16


def test_matmul_and_softmax():
    rng = np.random.default_rng(1)
    a, b = _bf(rng.standard_normal((8, 16))), _bf(rng.standard_normal((16, 4)))
    got = et.tensor(a) @ et.tensor(b)
    assert got.dtype is et.bfloat16
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF).astype(np.float32)
    np.testing.assert_array_equal(_f32(got), want)
    sm = et.tensor(a).softmax(1)
    assert sm.dtype is et.bfloat16
    np.testing.assert_allclose(_f32(sm).sum(1), np.ones(8), rtol=2e-2)


def test_views_share_storage():
    x = et.arange(6.0).bfloat16().view(2, 3)
    y = x.t()
    y[0, 1] = 7.0
    assert x[1, 0].item() == 7.0 and y.dtype is et.bfloat16


def test_gradients_flow_in_bfloat16():
    pytest.importorskip("ember.autograd")
    w = et.randn(4, 3).bfloat16().requires_grad_()
    x = et.randn(2, 4).bfloat16()
    (x @ w).tanh().sum().backward()
    assert w.grad is not None and w.grad.dtype is et.bfloat16 and w.grad.shape == (4, 3)
    v = et.randn(3).requires_grad_()
    v.bfloat16().exp().float().sum().backward()
    assert v.grad.dtype is et.float32


def test_save_load_roundtrip(tmp_path):
    x = et.randn(3, 5).bfloat16()
    et.save({"x": x}, tmp_path / "a.pt")
    y = et.load(tmp_path / "a.pt")["x"]
    assert y.dtype is et.bfloat16
    np.testing.assert_array_equal(_f32(x), _f32(y))


def test_opmath_wrapper_skips_non_bfloat16_calls():
    from ember.tensor import _bfloat16

    op = et.OPS["sum"]
    assert op.impl.__wrapped__ is not None and "sum" in _bfloat16.OPMATH_OPS
    assert _bfloat16.install(["sum"]) == []  # already installed: idempotent
    assert et.ones(3).sum().dtype is et.float32
    assert et.ones(3, dtype=et.float16).sum().dtype is et.float16
