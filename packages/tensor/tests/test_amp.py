"""autocast (per-op dtype policies at the registry, nesting, threads, the decorator, the cast
cache, gradients through casts) and GradScaler (scale, unscale_, skipped steps, the scale
trajectory, state_dict) with a duck-typed optimizer."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import extension as ext
from ember.tensor.amp import GradScaler, autocast


def test_lower_precision_ops_cast_to_bfloat16_on_cpu():
    a, b = et.randn(2, 3), et.randn(3, 4)
    with et.autocast("cpu"):
        assert (a @ b).dtype is et.bfloat16
        assert et.mm(a, b).dtype is et.bfloat16
        assert et.bmm(a[None], b[None]).dtype is et.bfloat16
        assert et.addmm(et.randn(4), a, b).dtype is et.bfloat16
        assert et.linear(a, b.t()).dtype is et.bfloat16
        assert (a + 1).dtype is et.float32  # not listed: runs on what it is given
        assert (a.double() @ b.double()).dtype is et.float64  # float64 is never cast
        assert (et.ones(2, 2, dtype=et.int64) @ et.ones(2, 2, dtype=et.int64)).dtype is et.int64
    assert (a @ b).dtype is et.float32


def test_float32_and_promote_ops():
    x = et.randn(4, 5).bfloat16()
    with et.autocast("cpu"):
        assert x.prod().dtype is et.float32
        assert et.cat([et.randn(2), et.randn(2).bfloat16()]).dtype is et.float32
        assert et.stack([et.randn(2).bfloat16(), et.randn(2).bfloat16()]).dtype is et.bfloat16
        assert x.softmax(1).dtype is et.bfloat16  # CPU autocast leaves softmax alone


def test_float16_dtype_and_cuda_policy_table():
    a, b = et.randn(2, 3), et.randn(3, 4)
    with et.autocast("cpu", dtype=et.float16):
        assert (a @ b).dtype is et.float16
        assert et.get_autocast_dtype("cpu") is et.float16
    from ember.tensor._autocast import POLICIES

    cuda = POLICIES["cuda"]
    assert cuda["matmul"] == "lower" and cuda["_softmax"] == "fp32"
    assert cuda["exp"] == "fp32" and cuda["sum"] == "fp32" and cuda["cat"] == "promote"


def test_enabled_nesting_and_state():
    a, b = et.randn(2, 3), et.randn(3, 4)
    assert not et.is_autocast_enabled("cpu")
    with autocast("cpu"):
        assert et.is_autocast_enabled("cpu") and not et.is_autocast_enabled()
        with autocast("cpu", enabled=False):
            assert not et.is_autocast_enabled("cpu")
            assert (a @ b).dtype is et.float32
        assert (a @ b).dtype is et.bfloat16
    assert not et.is_autocast_enabled("cpu")


def test_recorder_restored_and_no_cost_outside():
    before = ext.get_recorder()
    with autocast("cpu"):
        assert ext.get_recorder() is not before or before is None
    after = ext.get_recorder()
    with autocast("cpu"):
        pass
    assert ext.get_recorder() is after  # nothing left installed after a region closes


def test_decorator():
    @autocast("cpu")
    def f(a, b):
        return a @ b

    assert f(et.randn(2, 2), et.randn(2, 2)).dtype is et.bfloat16
    assert (et.randn(2, 2) @ et.randn(2, 2)).dtype is et.float32


def test_thread_local():
    a, b = et.randn(2, 3), et.randn(3, 4)
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen["other"] = (a @ b).dtype
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with autocast("cpu"):
        inside.set()
        release.wait(10)
        seen["main"] = (a @ b).dtype
    t.join()
    assert seen == {"other": et.float32, "main": et.bfloat16}


def test_unsupported_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="Disabling"):
        ac = autocast("cpu", dtype=et.float64)
    with ac:
        assert (et.randn(2, 2) @ et.randn(2, 2)).dtype is et.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        autocast("tpu")


def test_gradients_flow_through_casts_and_cache():
    pytest.importorskip("ember.autograd")
    w = et.randn(3, 4, requires_grad=True)
    x = et.randn(2, 3)
    with autocast("cpu"):
        y = x @ w
        z = x @ w  # the cast of the weight is cached inside the region
        assert y.dtype is et.bfloat16
        loss = (y.float() + z.float()).sum()
    loss.backward()
    assert w.grad.dtype is et.float32
    want = 2 * x.bfloat16().float().sum(0)[:, None].expand(3, 4)
    np.testing.assert_allclose(w.grad.numpy(), want.numpy(), rtol=2e-2)


# ------------------------------------------------------------------------------ GradScaler
class _SGD:
    """A minimal duck-typed optimizer: param_groups and step()."""

    def __init__(self, params, lr=0.1):
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.steps = 0

    def step(self):
        self.steps += 1
        for p in self.param_groups[0]["params"]:
            if p.grad is not None:
                ext.unwrap(p)[...] -= self.param_groups[0]["lr"] * ext.unwrap(p.grad)


def _param(values):
    t = et.tensor(values)
    t.grad = None
    return t


def _set_grad(p, values):
    p.grad = et.tensor(values, dtype=p.dtype)


def test_scale_and_unscale():
    pytest.importorskip("ember.autograd")
    s = GradScaler("cpu", init_scale=1024.0)
    loss = et.tensor(2.0)
    assert float(s.scale(loss)) == 2048.0
    p = et.tensor([1.0, 2.0], requires_grad=True)
    opt = _SGD([p])
    _set_grad(p, [1024.0, 2048.0])
    s.unscale_(opt)
    assert p.grad.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    assert opt.steps == 1
    s.update()


def test_skips_steps_with_inf_and_scale_trajectory():
    pytest.importorskip("ember.autograd")
    s = GradScaler("cpu", init_scale=8.0, growth_factor=2.0, backoff_factor=0.5,
                   growth_interval=2)
    p = et.tensor([1.0], requires_grad=True)
    opt = _SGD([p])
    s.scale(et.tensor(1.0))
    scales, steps = [], []
    for g in [1.0, float("inf"), 1.0, 1.0, float("nan"), 1.0, 1.0, 1.0]:
        _set_grad(p, [g * s.get_scale()])
        s.step(opt)
        s.update()
        scales.append(s.get_scale())
        steps.append(opt.steps)
    assert scales == [8.0, 4.0, 4.0, 8.0, 4.0, 4.0, 8.0, 8.0]
    assert steps == [1, 1, 2, 3, 3, 4, 5, 6]
    assert p.tolist() == pytest.approx([1.0 - 0.1 * 6])


def test_state_dict_roundtrip_and_disabled():
    s = GradScaler("cpu", init_scale=4.0, growth_interval=7)
    sd = s.state_dict()
    assert sd == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                  "growth_interval": 7, "_growth_tracker": 0}
    t = GradScaler("cpu")
    t.load_state_dict(sd)
    assert t.get_scale() == 4.0 and t.get_growth_interval() == 7
    off = GradScaler("cpu", enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    loss = et.tensor(3.0)
    assert off.scale(loss) is loss
    opt = _SGD([et.tensor([1.0])])
    off.step(opt)
    assert opt.steps == 1
    with pytest.raises(RuntimeError, match="empty"):
        t.load_state_dict({})


def test_update_with_new_scale_and_errors():
    s = GradScaler("cpu", init_scale=4.0)
    s.scale(et.tensor(1.0))
    s.update(16.0)
    assert s.get_scale() == 16.0
    with pytest.raises(AssertionError, match="No inf checks"):
        s.step(_SGD([et.tensor([1.0])]))
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(_SGD([]), closure=lambda: 0)
    with pytest.raises(ValueError, match="growth factor"):
        GradScaler("cpu", growth_factor=1.0)
