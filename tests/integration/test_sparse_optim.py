"""Optimizers on sparse gradients (``nn.Embedding(sparse=True)``), checked against dense
arithmetic in NumPy (no torch)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.tensor as et
from ember import nn, optim


def _emb(seed=0):
    e = nn.Embedding(6, 3, sparse=True)
    with _nograd():
        e.weight.copy_(et.tensor(np.random.RandomState(seed).randn(6, 3).astype(np.float32)))
    return e


def _nograd():
    from ember.autograd import no_grad

    return no_grad()


X = [[1, 2, 1], [4, 1, 0]]


def _grad_of(w0):
    g = np.zeros_like(w0)
    for i in np.ravel(X):
        g[i] += 2 * w0[i]
    return g


def test_sgd_sparse_matches_dense():
    e = _emb()
    w0 = e.weight.detach().numpy().copy()
    opt = optim.SGD(e.parameters(), lr=0.1)
    e(et.tensor(X)).pow(2).sum().backward()
    assert e.weight.grad.is_sparse
    opt.step()
    np.testing.assert_allclose(e.weight.detach().numpy(), w0 - 0.1 * _grad_of(w0), rtol=1e-6)


def test_sgd_sparse_momentum_buffer_is_sparse():
    e = _emb()
    opt = optim.SGD(e.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        e(et.tensor(X)).pow(2).sum().backward()
        opt.step()
    assert opt.state[e.weight]["momentum_buffer"].is_sparse


def test_adagrad_sparse_matches_dense():
    e = _emb()
    w0 = e.weight.detach().numpy().copy()
    opt = optim.Adagrad(e.parameters(), lr=0.1)
    e(et.tensor(X)).pow(2).sum().backward()
    opt.step()
    g = _grad_of(w0)
    rows = np.unique(np.ravel(X))
    ref = w0.copy()
    ref[rows] -= 0.1 * g[rows] / (np.sqrt(g[rows] ** 2) + 1e-10)
    np.testing.assert_allclose(e.weight.detach().numpy(), ref, rtol=1e-6)


def test_sparse_adam_updates_only_seen_rows():
    e = _emb()
    w0 = e.weight.detach().numpy().copy()
    opt = optim.SparseAdam(e.parameters(), lr=0.1)
    e(et.tensor(X)).pow(2).sum().backward()
    opt.step()
    g = _grad_of(w0)
    rows = np.unique(np.ravel(X))
    m = 0.1 * g[rows]
    v = 0.001 * g[rows] ** 2
    step = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    ref = w0.copy()
    ref[rows] -= step * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(e.weight.detach().numpy(), ref, rtol=1e-5)
    assert opt.state[e.weight]["step"] == 1


def test_sparse_gradient_errors():
    for cls, msg in ((optim.Adam, "Adam does not support sparse gradients, please consider "
                                  "SparseAdam instead"),
                     (optim.AdamW, "Adam does not support sparse gradients"),
                     (optim.RMSprop, "RMSprop does not support sparse gradients")):
        e = _emb()
        opt = cls(e.parameters())
        e(et.tensor(X)).sum().backward()
        with pytest.raises(RuntimeError, match=msg):
            opt.step()
    e = _emb()
    opt = optim.Adagrad(e.parameters(), weight_decay=0.1)
    e(et.tensor(X)).sum().backward()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible"):
        opt.step()
    lin = nn.Linear(2, 2)
    opt = optim.SparseAdam(lin.parameters())
    lin(et.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        opt.step()
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SparseAdam(lin.parameters(), lr=-1)
