"""Backward on each device of ``devices.DEVICES`` for composite expressions.

Each expression mixes several kinds of ops (matrix products, reductions, broadcasting, views,
indexing with repeated indices, i.e. scatter-add backward, sorting, ``where`` / ``clamp``).
On the CPU its gradients are first proven right with ``gradcheck`` in float64 (the CPU is the
reference); on ``"cuda"`` the gradients (float64 and float32) and a double backward must equal
the CPU ones and live on the GPU. The ``cuda`` cases skip here after a probe allocation, with
the reason; ``EMBER_REQUIRE_GPU=1`` turns those skips into failures.
"""
from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et

_path = Path(__file__).resolve().parents[2] / "tensor" / "tests" / "devices.py"
if "ember_test_devices" in sys.modules:
    DV = sys.modules["ember_test_devices"]
else:
    _spec = importlib.util.spec_from_file_location("ember_test_devices", _path)
    DV = importlib.util.module_from_spec(_spec)
    sys.modules["ember_test_devices"] = DV
    _spec.loader.exec_module(DV)
DEVICES, require_device, host = DV.DEVICES, DV.require_device, DV.host


def _logsoftmax_nll(x, target):
    logp = x - et.logsumexp(x, 1, keepdim=True)
    return -logp.gather(1, target).mean()


# name -> (shapes of the differentiable inputs, constant integer inputs, function)
EXPRS = {
    "mlp": ([(4, 5), (5, 3), (3,)], [],
            lambda x, w, b: ((x @ w + b).tanh() ** 2).mean()),
    "log_softmax_nll": ([(4, 5)], [np.array([[1], [0], [4], [1]])],
                        _logsoftmax_nll),
    "index_repeated": ([(5, 3), (6, 3)], [np.array([0, 2, 2, 4, 0, 0])],
                       lambda x, w, idx: (x[idx] * w).sum()
                       + et.index_select(x, 0, idx).pow(2).sum()),
    "scatter_gather": ([(3, 4)], [np.array([[0, 1, 1], [3, 3, 3], [2, 0, 2]])],
                       lambda x, idx: (et.gather(x, 1, idx) * et.gather(x, 1, idx).sigmoid())
                       .sum()),
    "normalize": ([(3, 4)], [],
                  lambda x: ((x - x.mean(0)) / (x.var(0) + 1).sqrt()).exp().sum()),
    "views_cat": ([(2, 3, 4)], [],
                  lambda x: et.cat([x.transpose(1, 2).reshape(2, 12), x.flatten(1).flip(1)], 1)
                  [:, ::2].sigmoid().sum()),
    "bmm_where_clamp": ([(2, 3, 4), (2, 4, 2)], [],
                        lambda a, b: (lambda c: et.where(c > 0, c.clamp(max=1.0), c * 0.1))(
                            et.bmm(a, b)).cumsum(1).sum()),
    "topk_amax": ([(3, 5)], [],
                  lambda x: x.amax(1).sum() + (et.topk(x, 2, 1)[0] * 2).sum()
                  + et.sort(x, 1).values[:, :2].prod(1).sum()),
    "broadcast_pow": ([(2, 1, 3), (4, 1)], [],
                      lambda a, b: (a.abs() + 1).pow(b.tanh()).log1p().std()),
}
NAMES = sorted(EXPRS)


def _inputs(name: str, dtype, device: str):
    """Fresh leaf tensors on ``device`` (distinct values: no ties in sort / max) and the
    constant index tensors."""
    shapes, consts, _ = EXPRS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    leaves = []
    for s in shapes:
        n = int(np.prod(s))
        vals = rng.permutation(np.linspace(-1.5, 1.5, n)) + rng.uniform(-0.05, 0.05, n)
        leaves.append(et.tensor(vals.reshape(s), dtype=dtype, device=device,
                                requires_grad=True))
    return leaves, [et.tensor(c, device=device) for c in consts]


def _grads(name: str, dtype, device: str):
    leaves, consts = _inputs(name, dtype, device)
    out = EXPRS[name][2](*leaves, *consts)
    assert out.dim() == 0 and out.device.type == et.device(device).type
    out.backward()
    for leaf in leaves:
        assert leaf.grad is not None, f"{name}: no gradient"
        assert leaf.grad.device == leaf.device, f"{name}: grad on {leaf.grad.device}"
        assert leaf.grad.dtype == leaf.dtype
    return host(out), [host(leaf.grad) for leaf in leaves]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", NAMES)
def test_backward_on_device_matches_cpu(name, device):
    require_device(device)
    if et.device(device).type == "cpu":
        # the reference itself: analytical gradients against finite differences
        leaves, consts = _inputs(name, et.float64, "cpu")
        fn = EXPRS[name][2]
        assert ag.gradcheck(lambda *xs: fn(*xs, *consts), tuple(leaves), eps=1e-6, atol=1e-5,
                            rtol=1e-4)
        out, grads = _grads(name, et.float64, "cpu")
        assert np.isfinite(out) and all(np.isfinite(g).all() for g in grads)
        return
    for dtype, tol in ((et.float64, 1e-10), (et.float32, 2e-5)):
        ref_out, ref_grads = _grads(name, dtype, "cpu")
        out, grads = _grads(name, dtype, device)
        np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol, err_msg=f"{name} value")
        for k, (g, r) in enumerate(zip(grads, ref_grads)):
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol,
                                       err_msg=f"{name} grad {k} ({dtype})")


def _double_backward(device: str):
    (x, w, b), _ = _inputs("mlp", et.float64, device)
    y = EXPRS["mlp"][2](x, w, b)
    (gx,) = ag.grad(y, (x,), create_graph=True)
    assert gx.device == x.device and gx.requires_grad
    (gx.pow(2).sum() + y).backward()
    return [host(t.grad) for t in (x, w, b)]


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_on_device(device):
    require_device(device)
    if et.device(device).type == "cpu":
        (x, w, b), _ = _inputs("mlp", et.float64, "cpu")
        fn = EXPRS["mlp"][2]
        assert ag.gradgradcheck(fn, (x, w, b), eps=1e-6, atol=1e-5, rtol=1e-4)
        grads = _double_backward("cpu")
        assert all(np.isfinite(g).all() and g.any() for g in grads)
        return
    for g, r in zip(_double_backward(device), _double_backward("cpu")):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_flows_through_device_moves(device):
    """``to(device)`` and ``cpu()`` are differentiable: the gradient comes back to the leaf's
    own device."""
    require_device(device)
    a = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    x = et.tensor(a, requires_grad=True)  # CPU leaf
    y = x.to(device)
    assert y.device.type == et.device(device).type
    z = (y.sin() * y).sum(1).cpu()
    assert z.device == et.device("cpu")
    (z * et.tensor([1.0, 2.0], dtype=et.float64)).sum().backward()
    expected = (np.cos(a) * a + np.sin(a)) * np.array([[1.0], [2.0]])
    assert x.grad.device == et.device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)
    # and a leaf on the device receives its gradient there
    d = et.tensor(a, device=device, requires_grad=True)
    (d.cpu() ** 3).sum().backward()
    assert d.grad.device == d.device
    np.testing.assert_allclose(host(d.grad), 3 * a ** 2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_and_gradgradcheck_run_on_the_device(device):
    """gradcheck and gradgradcheck take tensors on any device (finite differences perturb the
    device's own memory; the grad_outputs gradgradcheck makes live on the outputs' device),
    here through layer_norm's fused backward and its double-backward formula."""
    require_device(device)
    rng = np.random.default_rng(11)
    x, w, b = (et.tensor(rng.standard_normal(s), device=device, requires_grad=True)
               for s in ((3, 5), (5,), (5,)))

    def fn(x, w, b):
        return et.native_layer_norm(x, [5], w, b, 1e-5)[0]

    assert ag.gradcheck(fn, (x, w, b), eps=1e-6, atol=1e-5, rtol=1e-4)
    assert ag.gradgradcheck(fn, (x, w, b), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_accumulate_over_two_backward_passes(device):
    # the second pass adds into the existing .grad buffer in place (a CuPy array too)
    require_device(device)
    x = et.tensor([1.0, -2.0, 3.0], dtype=et.float64, device=device, requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    buf = x.grad
    (x ** 3).sum().backward()
    assert x.grad is buf
    np.testing.assert_allclose(host(x.grad), 2 * np.array([1.0, -2.0, 3.0]) + 3 +
                               3 * np.array([1.0, 4.0, 9.0]))


@pytest.mark.parametrize("device", DEVICES)
def test_save_on_cpu_keeps_saved_tensors_on_the_host(device):
    """``save_on_cpu``: a device's saved tensors travel to the host when saved and back for
    backward, with the gradients of the plain run, on the device."""
    require_device(device)
    from ember.autograd.graph import save_on_cpu, saved_tensors_hooks

    fn = EXPRS["mlp"][2]
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(s) for s in EXPRS["mlp"][0]]
    plain = [et.tensor(x, device=device, requires_grad=True) for x in xs]
    fn(*plain).backward()
    kept = [et.tensor(x, device=device, requires_grad=True) for x in xs]
    places = []
    with saved_tensors_hooks(lambda t: places.append(str(t.device)) or t, lambda p: p):
        with save_on_cpu():
            loss = fn(*kept)
    assert places == []  # the innermost pair only
    loss.backward()
    for p, k in zip(plain, kept):
        assert str(k.grad.device) == str(p.grad.device)
        np.testing.assert_allclose(host(k.grad), host(p.grad), rtol=1e-12)
    on_host = []

    def pack(t):
        on_host.append(str(t.device))
        return t.device, t.cpu()

    with saved_tensors_hooks(pack, lambda p: p[1].to(p[0])):
        fn(*kept).backward()
    assert on_host and set(on_host) == {str(kept[0].device)}


@pytest.mark.parametrize("device", DEVICES)
def test_forward_ad_on_device_matches_cpu(device):
    require_device(device)
    import ember.autograd.forward_ad as fwAD

    fn = EXPRS["normalize"][2]
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    got = {}
    for dev in ("cpu", device):
        with fwAD.dual_level():
            y = fn(fwAD.make_dual(et.tensor(x, device=dev), et.tensor(v, device=dev)))
            t = fwAD.unpack_dual(y).tangent
        assert str(t.device) == str(y.device)
        got[dev] = host(t)
    want = (fn(et.tensor(x + 1e-6 * v)).item() - fn(et.tensor(x - 1e-6 * v)).item()) / 2e-6
    np.testing.assert_allclose(got["cpu"], want, rtol=1e-6)
    np.testing.assert_allclose(got[device], got["cpu"], rtol=1e-10)
