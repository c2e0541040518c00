"""Parity with PyTorch 2.13.0 CPU for automatic mixed precision: the dtype each op gives inside
``autocast("cpu")`` (bfloat16 and float16), values and gradients of a small network under
autocast, and GradScaler's scale trajectory and skipped steps with injected infs and NaNs."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as TF  # noqa: E402

import ember.autograd  # noqa: E402, F401
import ember.nn.functional as EF  # noqa: E402
import ember.tensor as et  # noqa: E402

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 8)).astype(np.float32)
W = rng.standard_normal((8, 8)).astype(np.float32)
B = rng.standard_normal(8).astype(np.float32)

OPS = {
    "matmul": lambda m, F, x, w, b: x @ w,
    "mm": lambda m, F, x, w, b: m.mm(x, w),
    "bmm": lambda m, F, x, w, b: m.bmm(x[None], w[None]),
    "addmm": lambda m, F, x, w, b: m.addmm(b, x, w),
    "baddbmm": lambda m, F, x, w, b: m.baddbmm(x[None], x[None], w[None]),
    "linear": lambda m, F, x, w, b: F.linear(x, w, b),
    "conv2d": lambda m, F, x, w, b: F.conv2d(x[None, None], w[None, None, :3, :3]),
    "einsum": lambda m, F, x, w, b: m.einsum("ij,jk->ik", x, w),
    "add": lambda m, F, x, w, b: x + b,
    "relu": lambda m, F, x, w, b: x.relu(),
    "softmax_of_bf16": lambda m, F, x, w, b: F.softmax(x @ w, 1),
    "cross_entropy_of_bf16": lambda m, F, x, w, b: F.cross_entropy(x @ w, m.tensor([0, 1, 2, 3])),
    "prod_of_bf16": lambda m, F, x, w, b: (x @ w).prod(),
    "sum_of_bf16": lambda m, F, x, w, b: (x @ w).sum(),
    "cat_mixed": lambda m, F, x, w, b: m.cat([x, x @ w]),
    "stack_low": lambda m, F, x, w, b: m.stack([x @ w, x @ w]),
    "float64_matmul": lambda m, F, x, w, b: x.double() @ w.double(),
    "int_matmul": lambda m, F, x, w, b: m.ones(2, 2, dtype=m.int64) @ m.ones(2, 2, dtype=m.int64),
    "trace_of_bf16": lambda m, F, x, w, b: (x @ w).trace(),
    "tanh_of_bf16": lambda m, F, x, w, b: (x @ w).tanh(),
}


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_dtypes_under_cpu_autocast(name, low):
    f = OPS[name]
    with torch.autocast("cpu", dtype=getattr(torch, low)):
        want = f(torch, TF, torch.tensor(X), torch.tensor(W), torch.tensor(B))
    with et.autocast("cpu", dtype=getattr(et, low)):
        got = f(et, EF, et.tensor(X), et.tensor(W), et.tensor(B))
    assert got.dtype.name == str(want.dtype).split(".")[1]
    assert tuple(got.shape) == tuple(want.shape)
    tol = 2 ** -5 if "16" in str(want.dtype) else 1e-5
    np.testing.assert_allclose(got.detach().float().numpy(), want.detach().float().numpy(),
                               rtol=tol, atol=tol * max(1.0, float(want.float().abs().max())))


def test_autocast_state_functions_match():
    assert et.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu")
    with torch.autocast("cpu"), et.autocast("cpu"):
        assert et.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is True
        assert et.is_autocast_enabled() == torch.is_autocast_enabled() is False
        assert str(et.get_autocast_dtype("cpu")).split(".")[1] == str(
            torch.get_autocast_dtype("cpu")).split(".")[1]
        with torch.autocast("cpu", enabled=False), et.autocast("cpu", enabled=False):
            assert et.is_autocast_enabled("cpu") == torch.is_autocast_enabled("cpu") is False


def test_mlp_values_and_gradients_under_autocast():
    import ember.nn as enn

    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    em = enn.Sequential(enn.Linear(8, 16), enn.ReLU(), enn.Linear(16, 4))
    for (_, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        ep.data = et.tensor(tp.detach().numpy().copy())
    y = np.array([0, 1, 2, 3])
    with torch.autocast("cpu"):
        tout = tm(torch.tensor(X))
        tloss = TF.cross_entropy(tout, torch.tensor(y))
    with et.autocast("cpu"):
        eout = em(et.tensor(X))
        eloss = EF.cross_entropy(eout, et.tensor(y))
    assert eout.dtype is et.bfloat16 and eloss.dtype is et.float32
    assert float(eloss.detach()) == pytest.approx(float(tloss.detach()), rel=2e-2)
    tloss.backward()
    eloss.backward()
    for (n, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        assert ep.grad.dtype is et.float32, n
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=5e-2,
                                   atol=5e-2 * float(tp.grad.abs().max()), err_msg=n)


def test_grad_scaler_trajectory_with_injected_infs():
    import ember.optim as eoptim

    kw = dict(init_scale=2.0 ** 8, growth_factor=2.0, backoff_factor=0.25, growth_interval=3)
    ts, es = torch.amp.GradScaler("cpu", **kw), et.amp.GradScaler("cpu", **kw)
    tp = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    ep = ember.autograd.Variable(et.tensor([1.0, -2.0]), requires_grad=True)
    topt, eopt = torch.optim.SGD([tp], lr=0.1), eoptim.SGD([ep], lr=0.1)
    inject = [None, "inf", None, None, None, None, "nan", None, None, None, None, "inf", None]
    t_scales, e_scales, t_vals, e_vals = [], [], [], []
    for bad in inject:
        topt.zero_grad()
        eopt.zero_grad()
        tl = (tp * tp).sum() * (float(bad) if bad else 1.0)
        el = (ep * ep).sum() * (float(bad) if bad else 1.0)
        ts.scale(tl).backward()
        es.scale(el).backward()
        ts.step(topt)
        es.step(eopt)
        ts.update()
        es.update()
        t_scales.append(ts.get_scale())
        e_scales.append(es.get_scale())
        t_vals.append(tp.detach().numpy().copy())
        e_vals.append(ep.detach().numpy().copy())
    assert e_scales == t_scales
    np.testing.assert_allclose(np.array(e_vals), np.array(t_vals), rtol=1e-6)
    assert es.state_dict() == ts.state_dict()


def test_grad_scaler_unscale_then_clip_matches():
    import ember.optim as eoptim

    ts, es = torch.amp.GradScaler("cpu", init_scale=1024.0), et.amp.GradScaler(
        "cpu", init_scale=1024.0)
    tp = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    ep = ember.autograd.Variable(et.tensor([3.0, 4.0]), requires_grad=True)
    topt, eopt = torch.optim.SGD([tp], lr=1.0), eoptim.SGD([ep], lr=1.0)
    ts.scale((tp ** 2).sum()).backward()
    es.scale((ep ** 2).sum()).backward()
    ts.unscale_(topt)
    es.unscale_(eopt)
    np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy())
    ts.step(topt)
    es.step(eopt)
    ts.update()
    es.update()
    np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy())
    assert es.get_scale() == ts.get_scale()
