"""``ember.autograd.checkpoint`` against ``torch.utils.checkpoint`` (PyTorch 2.13, float64, the
same weights): ``checkpoint`` of a module with dropout in training mode (the recomputation
replays the draws: compared with the plain call on each side) and in eval mode (compared with
PyTorch), reentrant and not, ``checkpoint_sequential``, and the warnings and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.autograd as ag  # noqa: E402
import ember.nn as enn  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.autograd import checkpoint as ecp  # noqa: E402

tcp = torch.utils.checkpoint
X = np.random.default_rng(0).standard_normal((6, 5))


def _models():
    def make(nn):
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Dropout(0.25), nn.Linear(8, 8),
                             nn.ReLU(), nn.Linear(8, 3)).double()

    tm, em = make(torch.nn), make(enn)
    em.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return em, tm


def _grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_matches_pytorch_in_eval(reentrant):
    em, tm = _models()
    em.eval()
    tm.eval()
    ex = et.from_numpy(X.copy()).requires_grad_()
    tx = torch.from_numpy(X.copy()).requires_grad_()
    eo = ecp.checkpoint(em, ex, use_reentrant=reentrant)
    to = tcp.checkpoint(tm, tx, use_reentrant=reentrant)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-12)
    (eo ** 2).sum().backward()
    (to ** 2).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    for a, b in zip(_grads(em), [p.grad.numpy() for p in tm.parameters()]):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("reentrant", [False, True])
def test_dropout_draws_are_replayed(reentrant):
    for m, seed in ((et, et.manual_seed), (torch, torch.manual_seed)):
        model = _models()[0 if m is et else 1].train()
        x = (et.from_numpy if m is et else torch.from_numpy)(X.copy()).requires_grad_()
        seed(7)
        plain = model(x)
        (plain ** 2).sum().backward()
        ref = _grads(model), x.grad.numpy().copy()
        model.zero_grad()
        x.grad = None
        seed(7)
        cp = ecp.checkpoint if m is et else tcp.checkpoint
        out = cp(model, x, use_reentrant=reentrant)
        np.testing.assert_array_equal(out.detach().numpy(), plain.detach().numpy())
        (out ** 2).sum().backward()
        for a, b in zip(_grads(model), ref[0]):
            np.testing.assert_allclose(a, b, atol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), ref[1], atol=1e-12)


def test_checkpoint_sequential_and_grad():
    em, tm = _models()
    em.eval()
    tm.eval()
    ex = et.from_numpy(X.copy()).requires_grad_()
    tx = torch.from_numpy(X.copy()).requires_grad_()
    eo = ecp.checkpoint_sequential(em, 3, ex, use_reentrant=False)
    to = tcp.checkpoint_sequential(tm, 3, tx, use_reentrant=False)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-12)
    eg = ag.grad(eo.sum(), [ex])[0]
    tg = torch.autograd.grad(to.sum(), [tx])[0]
    np.testing.assert_allclose(eg.numpy(), tg.numpy(), atol=1e-12)


def test_warnings_and_errors():
    for m, cp, grad in ((et, ecp, ag.grad), (torch, tcp, torch.autograd.grad)):
        x = m.ones(3, dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cp.checkpoint(m.sin, x)
        assert any("use_reentrant parameter should be passed explicitly" in str(i.message)
                   for i in w)
        with pytest.raises(RuntimeError, match="incompatible with .grad"):
            grad(cp.checkpoint(m.sin, x, use_reentrant=True).sum(), [x])
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            cp.checkpoint(m.sin, x.detach(), use_reentrant=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments"):
            cp.checkpoint(lambda t, k=1: t * k, x, use_reentrant=True, k=2)
