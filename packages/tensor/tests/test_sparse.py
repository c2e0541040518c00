"""Sparse COO tensors, checked against scipy.sparse and NumPy (no torch)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import ember.tensor as et

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 6.0]


def _s(idx=IDX, val=VAL, size=(2, 3), **kw):
    return et.sparse_coo_tensor(idx, val, size, **kw)


def _random_coo(rng, m, n, nnz, dtype=np.float64):
    rows = rng.integers(0, m, nnz)
    cols = rng.integers(0, n, nnz)
    vals = rng.standard_normal(nnz).astype(dtype)
    return rows, cols, vals


def test_metadata():
    s = _s()
    assert s.is_sparse and not et.ones(2).is_sparse
    assert s.layout is et.sparse_coo and et.ones(2).layout is et.strided
    assert repr(et.sparse_coo) == "ember.sparse_coo"
    assert s.shape == (2, 3) and s.size(1) == 3 and s.dim() == 2 and s.numel() == 6
    assert s._nnz() == 4 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert s.dtype == et.float32 and s.device.type == "cpu"
    assert not s.is_coalesced() and s.coalesce().is_coalesced()
    assert isinstance(s, et.Tensor)


def test_to_dense_and_coalesce_match_scipy():
    rng = np.random.default_rng(0)
    rows, cols, vals = _random_coo(rng, 7, 5, 40)
    s = et.sparse_coo_tensor(np.stack([rows, cols]), vals, (7, 5))
    ref = sp.coo_matrix((vals, (rows, cols)), shape=(7, 5))
    np.testing.assert_allclose(s.to_dense().numpy(), ref.toarray())
    c = s.coalesce()
    ref.sum_duplicates()  # sorted row-major, duplicates summed
    order = np.lexsort((ref.col, ref.row))
    np.testing.assert_array_equal(c.indices().numpy(), np.stack([ref.row, ref.col])[:, order])
    np.testing.assert_allclose(c.values().numpy(), ref.data[order])
    assert c.coalesce() is c


def test_uncoalesced_accessors_refuse():
    s = _s()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    np.testing.assert_array_equal(s._indices().numpy(), np.array(IDX))
    np.testing.assert_array_equal(s._values().numpy(), np.array(VAL, dtype=np.float32))


def test_hybrid_and_inferred_size():
    s = et.sparse_coo_tensor([[0, 2]], et.ones(2, 3))
    assert s.shape == (3, 3) and s.sparse_dim() == 1 and s.dense_dim() == 1
    np.testing.assert_array_equal(s.to_dense().numpy(), [[1, 1, 1], [0, 0, 0], [1, 1, 1]])


def test_to_sparse_roundtrip():
    x = et.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    s = x.to_sparse()
    assert s.is_coalesced() and s._nnz() == 3
    np.testing.assert_array_equal(s.indices().numpy(), [[0, 1, 1], [1, 0, 2]])
    np.testing.assert_array_equal(s.to_dense().numpy(), x.numpy())
    s1 = x.to_sparse(1)
    assert s1.sparse_dim() == 1 and s1._nnz() == 2
    np.testing.assert_array_equal(s1.to_dense().numpy(), x.numpy())
    assert et.zeros(2, 3).to_sparse()._nnz() == 0


def test_construction_errors():
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        _s(size=(1, 3))
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        et.sparse_coo_tensor([[-1], [0]], [1.0], (1, 3))
    with pytest.raises(RuntimeError, match="same nnz"):
        et.sparse_coo_tensor(IDX, [1.0, 2.0, 3.0], (2, 3))
    with pytest.raises(RuntimeError, match="len\\(size\\) == sparse_dim \\+ dense_dim"):
        _s(size=(2,))
    with pytest.raises(RuntimeError, match="sparse_dim x nnz"):
        et.sparse_coo_tensor([0, 1], [1.0, 2.0], (2,))


def test_add_matches_dense_sum():
    rng = np.random.default_rng(1)
    r1, c1, v1 = _random_coo(rng, 6, 4, 10)
    r2, c2, v2 = _random_coo(rng, 6, 4, 7)
    a = et.sparse_coo_tensor(np.stack([r1, c1]), v1, (6, 4))
    b = et.sparse_coo_tensor(np.stack([r2, c2]), v2, (6, 4))
    ref = (sp.coo_matrix((v1, (r1, c1)), (6, 4)) + sp.coo_matrix((v2, (r2, c2)), (6, 4)))
    for out in (a + b, a.coalesce() + b.coalesce(), a.add(b, alpha=1)):
        np.testing.assert_allclose(out.to_dense().numpy(), ref.toarray())
    assert (a.coalesce() + b.coalesce()).is_coalesced()
    assert not (a + b).is_coalesced()
    np.testing.assert_allclose((a - b).to_dense().numpy(), (a.to_dense() - b.to_dense()).numpy())
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        a + et.ones(6, 4)
    with pytest.raises(RuntimeError, match="expected sizes"):
        a + et.sparse_coo_tensor([[0], [0]], [1.0], (5, 4))


def test_merge_order_is_one_pass():
    # two uncoalesced lists merged head to head (PyTorch's CPU order)
    a = et.sparse_coo_tensor([[0, 3, 3, 4, 0]], et.ones(5, 1), (5, 1))
    b = et.sparse_coo_tensor([[2]], et.ones(1, 1), (5, 1))
    np.testing.assert_array_equal((a + b)._indices().numpy(), [[0, 2, 3, 3, 4, 0]])
    c = a + a
    np.testing.assert_array_equal(c._indices().numpy(), [[0, 3, 3, 4, 0]])
    np.testing.assert_array_equal(c._values().numpy().ravel(), [2.0] * 5)


def test_scalar_ops_keep_pattern():
    s = _s()
    for out, ref in ((s * 2, 2), (2 * s, 2), (s / 2, 0.5), (-s, -1)):
        np.testing.assert_allclose(out._values().numpy(), np.array(VAL) * ref)
        np.testing.assert_array_equal(out._indices().numpy(), np.array(IDX))
    assert (s.coalesce() * 2).is_coalesced() and not (s * 2).is_coalesced()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmm_matches_scipy(dtype):
    rng = np.random.default_rng(2)
    rows, cols, vals = _random_coo(rng, 9, 6, 30, dtype)
    s = et.sparse_coo_tensor(np.stack([rows, cols]), vals, (9, 6))
    d = rng.standard_normal((6, 4)).astype(dtype)
    ref = sp.coo_matrix((vals, (rows, cols)), (9, 6)) @ d
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for out in (et.sparse.mm(s, et.tensor(d)), et.spmm(s, et.tensor(d)), s @ et.tensor(d),
                et.mm(s, et.tensor(d)), s.mm(et.tensor(d))):
        np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol)
    v = rng.standard_normal(6).astype(dtype)
    np.testing.assert_allclose((s @ et.tensor(v)).numpy(), sp.coo_matrix(
        (vals, (rows, cols)), (9, 6)) @ v, rtol=tol, atol=tol)
    dd = rng.standard_normal((3, 9)).astype(dtype)
    np.testing.assert_allclose(et.mm(et.tensor(dd), s).numpy(),
                               dd @ sp.coo_matrix((vals, (rows, cols)), (9, 6)).toarray(),
                               rtol=tol, atol=tol)


def test_spmm_errors():
    s = _s()
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
        et.sparse.mm(s, et.ones(2, 2))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        et.sparse.mm(s, et.ones(3, 2, dtype=et.float64))


def test_sparse_sum():
    s = et.sparse_coo_tensor([[0, 1, 1, 0], [2, 0, 2, 2]], et.ones(4, 2), (2, 3, 2))
    dense = s.to_dense().numpy()
    assert et.sparse.sum(s).item() == dense.sum()
    for dim in (0, 1, 2, (0, 2), (0, 1)):
        out = et.sparse.sum(s, dim)
        out = out.to_dense() if out.is_sparse else out
        np.testing.assert_allclose(out.numpy(), dense.sum(axis=dim))
    assert et.sparse.sum(s, 1).is_coalesced()


def test_dense_paths_refuse_sparse():
    s = _s()
    with pytest.raises(NotImplementedError, match="'aten::exp' .* 'SparseCPU' backend"):
        s.exp()
    with pytest.raises(NotImplementedError, match="'aten::exp'"):
        et.exp(s)
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        s.view(6)
    np.testing.assert_array_equal((et.ones(2, 3) + s).numpy(), 1 + s.to_dense().numpy())
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        et.ones(2, 3) * s
    with pytest.raises(TypeError, match="Sparse layout tensor to numpy"):
        s.numpy()
    with pytest.raises(TypeError, match="Sparse layout tensor to numpy"):
        np.asarray(s)
    with pytest.raises(RuntimeError, match="doesn't have storage"):
        s.data_ptr()
    with pytest.raises(RuntimeError, match="do not have strides"):
        s.stride()


def test_dense_sparse_accessors_refuse():
    x = et.ones(2, 3)
    for name in ("coalesce", "is_coalesced", "indices", "values"):
        with pytest.raises(RuntimeError, match="expected sparse coordinate tensor layout"):
            getattr(x, name)()
    assert x.to_dense() is x and x.sparse_dim() == 0 and x.dense_dim() == 2


def test_repr():
    assert repr(_s()) == (
        "tensor(indices=tensor([[0, 1, 1, 0],\n"
        "                       [2, 0, 2, 2]]),\n"
        "       values=tensor([3., 4., 5., 6.]),\n"
        "       size=(2, 3), nnz=4, layout=ember.sparse_coo)")
    assert repr(et.zeros(2, 3).to_sparse()) == (
        "tensor(indices=tensor([], size=(2, 0)),\n"
        "       values=tensor([], size=(0,)),\n"
        "       size=(2, 3), nnz=0, layout=ember.sparse_coo)")
    assert "dtype=ember.float64" in repr(_s(val=et.tensor(VAL, dtype=et.float64)))


def test_to_clone_detach_pickle():
    s = _s()
    d = s.double()
    assert d.is_sparse and d.dtype == et.float64
    c = s.clone()
    c._values().add_(1)
    assert s._values()[0].item() == 3.0
    back = pickle.loads(pickle.dumps(s))
    np.testing.assert_array_equal(back.to_dense().numpy(), s.to_dense().numpy())
    assert s.type() == "ember.sparse.FloatTensor"


def test_inplace_scalar_and_zero():
    s = _s()
    s.mul_(2)
    np.testing.assert_allclose(s._values().numpy(), np.array(VAL) * 2)
    s.add_(_s())
    np.testing.assert_allclose(s.to_dense().numpy(), 3 * _s().to_dense().numpy())
    s.zero_()
    assert s._nnz() == 0 and float(s.to_dense().abs().sum()) == 0.0


def test_transpose():
    s = _s()
    np.testing.assert_array_equal(s.t().to_dense().numpy(), s.to_dense().numpy().T)
    np.testing.assert_array_equal(s.transpose(0, 1).to_dense().numpy(), s.to_dense().numpy().T)
