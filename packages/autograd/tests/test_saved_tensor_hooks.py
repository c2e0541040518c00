"""``ember.autograd.graph``'s saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``), ``register_multi_grad_hook`` and ``increment_version``:
gradients against closed forms and central differences in float64."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et
from ember.autograd.graph import (
    disable_saved_tensors_hooks,
    increment_version,
    register_multi_grad_hook,
    save_on_cpu,
    saved_tensors_hooks,
)

RNG = np.random.default_rng(7)


def _x(*shape):
    return et.tensor(RNG.standard_normal(shape), requires_grad=True)


def _f(x, w):  # saves inputs (mul, matmul), an output (exp) and a list (stack)
    h = (x @ w).exp()
    return et.stack([h * x.sum(), h.tanh()]).sum()


def _numeric_grad(f, x0):
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = 1e-6
        g[i] = (f(x0 + d) - f(x0 - d)) / 2e-6
    return g


def test_pack_and_unpack_see_every_saved_tensor_and_gradients_are_unchanged():
    x, w = _x(2, 3), _x(3, 3)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return t.detach().clone()

    def unpack(p):
        unpacked.append(p)
        return p

    with saved_tensors_hooks(pack, unpack):
        loss = _f(x, w)
    assert packed and all(isinstance(t, et.Tensor) for t in packed)
    assert not unpacked
    loss.backward()
    assert len(unpacked) == len(packed)
    want = _numeric_grad(lambda v: _f(et.tensor(v), w.detach()).item(), x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)


def test_unpack_runs_at_each_backward_and_saved_values_are_what_pack_kept():
    x = _x(4)
    count = [0]

    def unpack(p):
        count[0] += 1
        return p

    with saved_tensors_hooks(lambda t: t.detach().clone(), unpack):
        a = x * 1
        y = (a * a).sum()
    a.detach().add_(1.0)  # an in-place change after saving: the hooks own the saved copy
    y.backward(retain_graph=True)
    y.backward()
    assert count[0] == 4  # two saved tensors, two passes
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * x.detach().numpy())


def test_keys_instead_of_tensors_and_the_innermost_pair_is_used():
    x = _x(3)
    store = {}

    def pack(t):
        store[len(store)] = t
        return len(store) - 1

    with saved_tensors_hooks(lambda t: pytest.fail("outer pack"), lambda p: p):
        with saved_tensors_hooks(pack, store.__getitem__):
            y = (x.sin() * x).sum()
    y.backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv) * xv + np.sin(xv))
    assert len(store) == 3  # sin's input; mul's two inputs


def test_double_backward_through_unpacked_tensors():
    x = _x(3)
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
        y = (x * x * x).sum()
    (g,) = ag.grad(y, x, create_graph=True)
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy())


def test_custom_function_saved_tensors_go_through_the_hooks():
    class Exp(ag.Function):
        @staticmethod
        def forward(ctx, a):
            r = a.exp()
            ctx.save_for_backward(a, r)
            return r

        @staticmethod
        def backward(ctx, g):
            a, r = ctx.saved_tensors
            return g * r + 0 * a

    x = _x(3)
    seen = []
    with saved_tensors_hooks(lambda t: seen.append(t.grad_fn is not None) or t.detach(),
                             lambda p: p):
        y = Exp.apply(x).sum()
    y.backward()
    assert seen == [False, True]  # the input leaf, then the output
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))


def test_unpack_must_return_a_tensor_and_freed_graphs_still_refuse():
    x = _x(2)
    with saved_tensors_hooks(lambda t: t, lambda p: 5):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result "
                                        "of type int"):
        y.backward()
    with saved_tensors_hooks(lambda t: t, lambda p: p):
        y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_save_on_cpu_gives_the_plain_gradients():
    x, w = _x(2, 3), _x(3, 3)
    _f(x, w).backward()
    want = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad = w.grad = None
    with save_on_cpu(pin_memory=True):
        loss = _f(x, w)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), want[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), want[1], rtol=1e-12)


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with save_on_cpu():
                pass
    with save_on_cpu():  # open again outside
        y = (_x(2) * 2).sum()
    y.backward()


def test_register_multi_grad_hook_all_and_any():
    a, b, c = _x(2), _x(2), _x(1)
    got = []
    h = register_multi_grad_hook((a, b, c), lambda gs: got.append(gs))
    (a * b).sum().backward()
    (a * 2).sum().backward()
    assert len(got) == 2
    np.testing.assert_allclose(got[0][0].numpy(), b.detach().numpy())
    np.testing.assert_allclose(got[0][1].numpy(), a.detach().numpy())
    assert got[0][2] is None
    np.testing.assert_allclose(got[1][0].numpy(), [2.0, 2.0])
    assert got[1][1] is None and got[1][2] is None
    h.remove()
    (a * b).sum().backward()
    assert len(got) == 2
    first = []
    register_multi_grad_hook((a, b), first.append, mode="any")
    (a * b).sum().backward()
    assert len(first) == 1 and first[0].shape == (2,)
    with pytest.raises(ValueError, match="mode to be one of"):
        register_multi_grad_hook((a,), print, mode="some")


def test_increment_version_is_seen_by_backward():
    x = _x(3)
    y = x * 1
    z = (y * y).sum()
    increment_version(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    t = et.zeros(2)
    v = t._version
    increment_version([t, t])
    assert t._version == v + 2


def test_gradient_edges_stand_for_tensors_in_grad():
    from ember.autograd.graph import GradientEdge, get_gradient_edge

    x = et.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    edge = get_gradient_edge(y)
    assert isinstance(edge, GradientEdge) and edge.node is y.grad_fn and edge.output_nr == 0
    z = (y * y).sum()
    del y  # the edge outlives the tensor
    (gy,) = ag.grad(z, edge, retain_graph=True)
    np.testing.assert_allclose(gy.numpy(), 2 * 2 * np.array([1.0, 2.0, 3.0]))
    leaf = get_gradient_edge(x)
    assert leaf.node.name() == "AccumulateGrad"
    gx, gx2 = ag.grad(z, [leaf, x])
    np.testing.assert_allclose(gx.numpy(), 8 * np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(gx2.numpy(), gx.numpy())
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(et.zeros(2))


def test_allow_mutation_on_saved_tensors():
    from ember.autograd.graph import allow_mutation_on_saved_tensors

    x = et.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with allow_mutation_on_saved_tensors():
        a = x.clone()
        b = (a * a).sum()
        a.mul_(2)  # without the context, backward would refuse the changed saved value
        b.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    with allow_mutation_on_saved_tensors():
        b = (x.clone() * x).sum()
    with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors'"):
        b.backward()


def test_pack_hooks_run_without_recording():
    x = _x(3)
    seen = []

    def pack(t):
        y = t * 2  # an op on a tensor that requires grad: recorded, it would save and pack
        seen.append((ag.is_grad_enabled(), y.grad_fn is None))
        return t

    with saved_tensors_hooks(pack, lambda p: p):
        z = x.exp().sum()
    z.backward()
    assert seen == [(False, True)]
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))
