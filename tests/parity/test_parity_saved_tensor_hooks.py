"""``ember.autograd.graph``'s saved-tensor hooks, ``register_multi_grad_hook`` and
``increment_version`` against ``torch.autograd.graph`` (PyTorch 2.13, float64): gradients
with hooks that copy, keep keys or move to the CPU, which gradients a multi-grad hook sees,
and the errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.autograd as ag  # noqa: E402
import ember.autograd.graph as eg  # noqa: E402
import ember.tensor as et  # noqa: E402

tg = torch.autograd.graph
X = np.random.default_rng(3).standard_normal((3, 4))
W = np.random.default_rng(4).standard_normal((4, 4))


def _loss(m, x, w):
    h = (x @ w).tanh()
    return (m.stack([h * x.sum(), h.exp()]).sum(0) * h.sigmoid()).sum() + x.norm()


def _leaves(lib):
    return (lib.tensor(X, requires_grad=True), lib.tensor(W, requires_grad=True))


def _hooks(kind, graph):
    if kind == "clone":
        return graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p)
    if kind == "keys":
        store = {}

        def pack(t):
            store[len(store)] = t
            return len(store) - 1

        return graph.saved_tensors_hooks(pack, store.__getitem__)
    return graph.save_on_cpu()


@pytest.mark.parametrize("kind", ["clone", "keys", "save_on_cpu"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_gradients_under_hooks_match_pytorch(kind, create_graph):
    got = []
    for lib, graph in ((torch, tg), (et, eg)):
        x, w = _leaves(lib)
        with _hooks(kind, graph):
            loss = _loss(lib, x, w)
        grad = torch.autograd.grad if lib is torch else ag.grad
        gx, gw = grad(loss, (x, w), create_graph=create_graph)
        out = [gx.detach().numpy(), gw.detach().numpy()]
        if create_graph:
            (hx,) = grad((gx * gx).sum() + gw.sum(), (x,))
            out.append(hx.detach().numpy())
        got.append(out)
    for t, e in zip(*got):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_unpack_returning_a_non_tensor_raises_the_same_error():
    msgs = []
    for lib, graph in ((torch, tg), (et, eg)):
        x, _ = _leaves(lib)
        with graph.saved_tensors_hooks(lambda t: t, lambda p: "no"):
            y = (x * x).sum()
        with pytest.raises(TypeError) as ei:
            y.backward()
        msgs.append(str(ei.value))
    assert msgs[0] == msgs[1]


def test_disabled_hooks_raise_the_given_message():
    for graph in (tg, eg):
        with graph.disable_saved_tensors_hooks("hooks are off here"):
            with pytest.raises(RuntimeError, match="hooks are off here"):
                with graph.saved_tensors_hooks(lambda t: t, lambda p: p):
                    pass


@pytest.mark.parametrize("mode", ["all", "any"])
def test_multi_grad_hook_sees_the_same_gradients(mode):
    got = []
    for lib, graph in ((torch, tg), (et, eg)):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = lib.tensor([5.0], requires_grad=True)
        seen = []
        if mode == "all":
            graph.register_multi_grad_hook(
                (a, b, c), lambda gs, seen=seen: seen.append(
                    [None if g is None else g.tolist() for g in gs]))
        else:
            graph.register_multi_grad_hook((a, c), lambda g, seen=seen: seen.append(g.tolist()),
                                           mode="any")
        (a * b).sum().backward()
        (a * 2 + c).sum().backward()
        got.append(seen)
    assert got[0] == got[1]


def test_increment_version_makes_backward_refuse():
    for lib, graph in ((torch, tg), (et, eg)):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        z = (y * y).sum()
        graph.increment_version(y)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()


def test_gradient_edges_and_allow_mutation_match_pytorch():
    got = []
    for lib, graph in ((torch, tg), (et, eg)):
        grad = torch.autograd.grad if lib is torch else ag.grad
        x = lib.tensor(X, requires_grad=True)
        y = x.tanh() * 2
        z = (y * y.exp()).sum()
        gy, gx = grad(z, [graph.get_gradient_edge(y), graph.get_gradient_edge(x)])
        with graph.allow_mutation_on_saved_tensors():
            a = x.clone()
            b = (a * a.sin()).sum()
            a.mul_(3)
            (ga,) = grad(b, x)
        got.append([gy.numpy(), gx.numpy(), ga.numpy()])
        with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
            graph.get_gradient_edge(lib.tensor(X))
    for t, e in zip(*got):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)
