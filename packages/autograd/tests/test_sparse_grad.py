"""Gradients through sparse COO tensors and sparse embedding gradients (no torch)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.autograd import grad, gradcheck

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]


def _v():
    return et.tensor([3.0, 4.0, 5.0, 6.0], dtype=et.float64, requires_grad=True)


def test_gradcheck_spmm_values_and_dense():
    d = et.randn(3, 2, dtype=et.float64, requires_grad=True)
    assert gradcheck(lambda v, d: et.sparse.mm(et.sparse_coo_tensor(IDX, v, (2, 3)), d),
                     (_v(), d))
    assert gradcheck(lambda v, d: et.sparse_coo_tensor(IDX, v, (2, 3)) @ d, (_v(), d))
    x = et.randn(3, dtype=et.float64, requires_grad=True)
    assert gradcheck(lambda v, x: et.sparse_coo_tensor(IDX, v, (2, 3)) @ x, (_v(), x))


def test_gradcheck_coalesce_add_scale_sum():
    def f(v):
        s = et.sparse_coo_tensor(IDX, v, (2, 3))
        return (s * 3 + s.coalesce() - s / 2).coalesce().to_dense()

    assert gradcheck(f, (_v(),))
    assert gradcheck(lambda v: et.sparse.sum(et.sparse_coo_tensor(IDX, v, (2, 3)), 1)
                     .to_dense(), (_v(),))
    x = et.randn(2, 3, dtype=et.float64, requires_grad=True)
    assert gradcheck(lambda x: x.to_sparse().to_dense() * 2, (x,))


def test_leaf_sparse_gets_masked_sparse_grad():
    s = et.sparse_coo_tensor(IDX, [3.0, 4.0, 5.0, 6.0], (2, 3)).coalesce()
    s.requires_grad_(True)
    assert s.is_leaf and s.requires_grad
    d = et.randn(3, 2)
    et.sparse.mm(s, d).sum().backward()
    g = s.grad
    assert g.is_sparse
    full = np.ones((2, 2), dtype=np.float32) @ d.numpy().T  # dL/dS, dense
    mask = s.detach().to_dense().numpy() != 0
    np.testing.assert_allclose(g.to_dense().numpy(), full * mask, rtol=1e-6)
    s.grad = None
    assert s.grad is None


def test_sparse_built_from_grad_values_is_not_leaf():
    v = _v()
    s = et.sparse_coo_tensor(IDX, v, (2, 3))
    assert not s.is_leaf and s.grad_fn is not None
    et.sparse.sum(s).backward()
    np.testing.assert_array_equal(v.grad.numpy(), np.ones(4))


def test_embedding_sparse_grad_is_uncoalesced_without_padding():
    w = et.randn(5, 2, requires_grad=True)
    x = et.tensor([[0, 1, 3], [3, 4, 0]])
    out = et.embedding(w, x, 1, False, True)
    (out * et.arange(12.0).view(2, 3, 2)).sum().backward()
    g = w.grad
    assert g.is_sparse and not g.is_coalesced()
    np.testing.assert_array_equal(g._indices().numpy(), [[0, 3, 3, 4, 0]])
    ref = np.zeros((5, 2), dtype=np.float32)
    go = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    for k, i in enumerate(x.numpy().ravel()):
        if i != 1:
            ref[i] += go[k]
    np.testing.assert_allclose(g.to_dense().numpy(), ref)


def test_sparse_grads_accumulate_and_mix_with_dense():
    w = et.randn(5, 2, requires_grad=True)
    x = et.tensor([0, 3])
    et.embedding(w, x, -1, False, True).sum().backward()
    et.embedding(w, et.tensor([2]), -1, False, True).sum().backward()
    assert w.grad.is_sparse and w.grad._nnz() == 3
    np.testing.assert_array_equal(w.grad._indices().numpy(), [[0, 2, 3]])
    (w * 1).sum().backward()  # dense onto sparse: dense
    assert not w.grad.is_sparse
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [2, 1, 2, 2, 1])
    w.grad = None
    (et.embedding(w, x, -1, False, True).sum() + (w * 2).sum()).backward()  # in one pass
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [3, 2, 2, 3, 2])
    w.grad = None
    (w * 2).sum().backward()
    et.embedding(w, x, -1, False, True).sum().backward()  # sparse onto dense: in place
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [3, 2, 2, 3, 2])


def test_autograd_grad_returns_sparse_and_scale_grad_refused():
    w = et.randn(5, 2, requires_grad=True)
    (g,) = grad(et.embedding(w, et.tensor([1, 1]), -1, False, True).sum(), w)
    assert g.is_sparse and g._nnz() == 2
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        et.embedding(w, et.tensor([1]), -1, True, True).sum().backward()


def test_sparse_grad_through_non_leaf_weight_is_densified():
    w = et.randn(4, 2, requires_grad=True)
    et.embedding(w * 3, et.tensor([1, 2]), -1, False, True).sum().backward()
    assert not w.grad.is_sparse
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [0, 3, 3, 0])
