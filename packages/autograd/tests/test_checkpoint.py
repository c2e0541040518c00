"""``ember.autograd.checkpoint`` (``torch.utils.checkpoint``): values and gradients equal the
uncheckpointed function's (arguments, closed-over leaves, random draws replayed), the
intermediate values are not kept between forward and backward, ``grad()`` and double backward
pass through the non-reentrant form and are refused by the reentrant one, as in PyTorch.
Parity with PyTorch with nn modules: ``tests/parity/test_parity_checkpoint.py``."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et
from ember.autograd.checkpoint import checkpoint, checkpoint_sequential

RNG = np.random.default_rng(0)
W = et.from_numpy(RNG.standard_normal((4, 3))).requires_grad_()


def _f(x, scale=1.0):
    h = et.tanh(x @ W) * scale
    mask = (et.rand_like(h) > 0.3).to(h.dtype)  # random: replayed by the recomputation
    return (h * mask).sin(), h.sum()


def _x():
    return et.from_numpy(RNG.standard_normal((5, 4))).requires_grad_()


@pytest.mark.parametrize("reentrant", [False, True])
def test_values_and_gradients_equal_the_plain_call(reentrant):
    x = _x()
    et.manual_seed(3)
    a, b = _f(x)
    ((a ** 2).sum() + b).backward()
    gx, gw = x.grad.numpy().copy(), W.grad.numpy().copy()
    x.grad = W.grad = None
    et.manual_seed(3)
    c, d = checkpoint(_f, x, use_reentrant=reentrant)
    assert np.array_equal(a.detach().numpy(), c.detach().numpy())
    ((c ** 2).sum() + d).backward()
    assert np.allclose(x.grad.numpy(), gx, atol=1e-12)
    assert np.allclose(W.grad.numpy(), gw, atol=1e-12)
    W.grad = None


def test_intermediates_are_not_kept():
    kept = []

    def f(x):
        h = x * 2
        kept.append(weakref.ref(h))
        return (h.sin() * h).sum()

    x = _x()
    plain = f(x)
    checked = checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert kept[0]() is not None  # the plain graph saves h
    assert kept[1]() is None      # the checkpoint does not
    checked.backward()
    assert np.allclose(x.grad.numpy(), ag.grad(plain, [x])[0].numpy())


def test_grad_and_double_backward_through_the_non_reentrant_form():
    x = _x()
    f = lambda t: (t.sin() ** 3).sum(1)  # noqa: E731
    g, = ag.grad(checkpoint(f, x, use_reentrant=False).sum(), [x], create_graph=True)
    h, = ag.grad(g.sum(), [x])
    g2, = ag.grad(f(x).sum(), [x], create_graph=True)
    h2, = ag.grad(g2.sum(), [x])
    assert np.allclose(g.detach().numpy(), g2.detach().numpy())
    assert np.allclose(h.numpy(), h2.numpy())
    out = checkpoint(_f, x, use_reentrant=False)[1]
    gw, = ag.grad(out, [W])  # a closed-over leaf is an input of the node
    assert gw.shape == W.shape


def test_reentrant_refuses_grad_and_warns_without_grad_inputs():
    x = _x()
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        ag.grad(checkpoint(_f, x, use_reentrant=True)[1], [x])
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(_f, x.detach(), use_reentrant=True)[1]
    assert not out.requires_grad
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint(_f, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(_f, x, use_reentrant=True, scale=2.0)
    a = checkpoint(_f, x, use_reentrant=False, scale=2.0)[1]  # keywords: non-reentrant only
    assert np.isclose(a.item(), _f(x, 2.0)[1].item())


def test_checkpoint_sequential():
    ws = [et.from_numpy(RNG.standard_normal((4, 4))).requires_grad_() for _ in range(4)]
    fs = [lambda t, w=w: et.tanh(t @ w) for w in ws]
    x = _x()
    y = x
    for f in fs:
        y = f(y)
    ref = ag.grad(y.sum(), [x] + ws)
    out = checkpoint_sequential(fs, 2, x, use_reentrant=False)
    got = ag.grad(out.sum(), [x] + ws)
    assert np.allclose(out.detach().numpy(), y.detach().numpy())
    for a, b in zip(got, ref):
        assert np.allclose(a.numpy(), b.numpy(), atol=1e-12)
