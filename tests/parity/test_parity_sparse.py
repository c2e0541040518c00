"""Sparse COO parity with PyTorch 2.13 CPU: values and index order of coalesce / add /
scalar ops / to_sparse / sparse.sum, printing, spmm values and gradients (dense operand,
sparse values, a leaf sparse operand's masked gradient), sparse embedding gradients, and
optimizer trajectories on sparse embedding gradients (SGD, Adagrad, SparseAdam), with the
errors of the optimizers that refuse sparse gradients."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as enn  # noqa: E402
import ember.optim as eoptim  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.autograd import no_grad  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

IDX = np.array([[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]])
VAL = np.array([3.0, 4.0, 5.0, 6.0, -1.5], dtype=np.float32)


def _pair(idx=IDX, val=VAL, size=(3, 3)):
    return (torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), size),
            et.sparse_coo_tensor(et.tensor(idx), et.tensor(val), size))


def _same_sparse(t, e):
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e.is_coalesced() == t.is_coalesced()
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(e._values().detach().numpy(), t._values().detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_coalesce_and_accessors():
    t, e = _pair()
    _same_sparse(t, e)
    _same_sparse(t.coalesce(), e.coalesce())
    np.testing.assert_array_equal(e.coalesce().indices().numpy(), t.coalesce().indices().numpy())
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy())
    assert (e._nnz(), e.sparse_dim(), e.dense_dim()) == (t._nnz(), t.sparse_dim(), t.dense_dim())


def test_arithmetic_index_order():
    t, e = _pair()
    t2, e2 = _pair(np.array([[0, 1], [0, 0]]), np.array([1.0, 2.0], dtype=np.float32))
    for tt, ee in ((t + t2, e + e2), (t2 + t, e2 + e), (t + t, e + e),
                   (t.coalesce() + t2.coalesce(), e.coalesce() + e2.coalesce()),
                   (t - t2, e - e2), (t * 2, e * 2), (2.5 * t, 2.5 * e), (t / 4, e / 4),
                   (-t, -e), (t.coalesce() * 3, e.coalesce() * 3), (t.t(), e.t())):
        _same_sparse(tt, ee)
    np.testing.assert_allclose((torch.ones(3, 3) + t).numpy(), (et.ones(3, 3) + e).numpy())


def test_to_sparse_and_sum():
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], dtype=np.float32)
    _same_sparse(torch.tensor(x).to_sparse(), et.tensor(x).to_sparse())
    _same_sparse(torch.tensor(x).to_sparse(1), et.tensor(x).to_sparse(1))
    h = np.arange(10, dtype=np.float32).reshape(5, 2)
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(h), (3, 3, 2))
    e = et.sparse_coo_tensor(et.tensor(IDX), et.tensor(h), (3, 3, 2))
    assert torch.sparse.sum(t).item() == et.sparse.sum(e).item()
    for dim in (0, 1, 2, (0, 2)):
        a, b = torch.sparse.sum(t, dim), et.sparse.sum(e, dim)
        if a.is_sparse:
            _same_sparse(a, b)
        else:
            np.testing.assert_allclose(b.numpy(), a.numpy())


def test_printing():
    t, e = _pair()
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert repr(e.coalesce()) == repr(t.coalesce()).replace("torch.", "ember.")
    tz = torch.zeros(2, 3).to_sparse()
    assert repr(et.zeros(2, 3).to_sparse()) == repr(tz).replace("torch.", "ember.")
    t64 = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL, dtype=torch.float64))
    e64 = et.sparse_coo_tensor(et.tensor(IDX), et.tensor(VAL, dtype=et.float64))
    assert repr(e64) == repr(t64).replace("torch.", "ember.")
    tr = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), requires_grad=True)
    er = et.sparse_coo_tensor(et.tensor(IDX), et.tensor(VAL), requires_grad=True)
    assert repr(er) == repr(tr).replace("torch.", "ember.")


def test_errors():
    for call in (lambda lib: lib.sparse_coo_tensor(IDX, VAL, (1, 3), check_invariants=True),
                 lambda lib: lib.sparse_coo_tensor([[-1], [0]], [1.0], (1, 3),
                                                   check_invariants=True),
                 lambda lib: lib.sparse_coo_tensor(IDX, [1.0, 2.0], (3, 3))):
        with pytest.raises(RuntimeError) as te:
            call(torch)
        with pytest.raises(RuntimeError) as ee:
            call(et)
        assert str(ee.value) == str(te.value).splitlines()[0]
    t, e = _pair()
    for f in (lambda s: s.exp(), lambda s: s.view(9)):
        with pytest.raises(NotImplementedError):
            f(t)
        with pytest.raises(NotImplementedError):
            f(e)
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\)"):
        t + torch.ones(3, 3)
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\)"):
        e + et.ones(3, 3)
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        t.indices()
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        e.indices()


@pytest.mark.parametrize("mm", ["sparse.mm", "spmm", "matmul_op", "mm"])
def test_spmm_values_and_gradients(mm):
    rng = np.random.default_rng(0)
    d = rng.standard_normal((3, 4))
    v = VAL.astype(np.float64)
    tv = torch.tensor(v, requires_grad=True)
    ev = et.tensor(v, requires_grad=True)
    td = torch.tensor(d, requires_grad=True)
    ed = et.tensor(d, requires_grad=True)
    ts = torch.sparse_coo_tensor(torch.tensor(IDX), tv, (3, 3))
    es = et.sparse_coo_tensor(et.tensor(IDX), ev, (3, 3))
    f = {"sparse.mm": lambda lib, s, x: lib.sparse.mm(s, x),
         "spmm": lambda lib, s, x: lib.spmm(s, x),
         "matmul_op": lambda lib, s, x: s @ x,
         "mm": lambda lib, s, x: lib.mm(s, x)}[mm]
    to, eo = f(torch, ts, td), f(et, es, ed)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(to.shape)
    (to * torch.tensor(w)).sum().backward()
    (eo * et.tensor(w)).sum().backward()
    np.testing.assert_allclose(ed.grad.numpy(), td.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ev.grad.numpy(), tv.grad.numpy(), rtol=1e-12)


def test_leaf_sparse_masked_gradient():
    tc = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (3, 3)).coalesce()
    ec = et.sparse_coo_tensor(et.tensor(IDX), et.tensor(VAL), (3, 3)).coalesce()
    tc.requires_grad_(True)
    ec.requires_grad_(True)
    d = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    torch.sparse.mm(tc, torch.tensor(d)).sum().backward()
    et.sparse.mm(ec, et.tensor(d)).sum().backward()
    _same_sparse(tc.grad, ec.grad)


def _copy_embedding(lib, nn, w0, **kw):
    emb = nn.Embedding(w0.shape[0], w0.shape[1], sparse=True, **kw)
    with (torch.no_grad() if lib is torch else no_grad()):
        emb.weight.copy_(lib.tensor(w0))
    return emb


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_sparse_grad(padding_idx):
    w0 = np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32)
    te = _copy_embedding(torch, torch.nn, w0, padding_idx=padding_idx)
    ee = _copy_embedding(et, enn, w0, padding_idx=padding_idx)
    x = np.array([[0, 1, 3], [3, 4, 0]])
    go = np.random.default_rng(3).standard_normal((2, 3, 3)).astype(np.float32)
    (te(torch.tensor(x)) * torch.tensor(go)).sum().backward()
    (ee(et.tensor(x)) * et.tensor(go)).sum().backward()
    _same_sparse(te.weight.grad, ee.weight.grad)
    te(torch.tensor([2, 5])).sum().backward()  # a second backward: summed, not coalesced
    ee(et.tensor([2, 5])).sum().backward()
    # (PyTorch merges or concatenates the two index lists depending on the values' strides;
    # the entries and the tensor they sum to are the same)
    assert not ee.weight.grad.is_coalesced() and ee.weight.grad._nnz() == te.weight.grad._nnz()
    _same_sparse(te.weight.grad.coalesce(), ee.weight.grad.coalesce())


CASES = [("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
         ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1}),
         ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
         ("SGD", {"lr": 0.1, "maximize": True}),
         ("Adagrad", {"lr": 0.1}), ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "maximize": True}),
         ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5}),
         ("SparseAdam", {"lr": 0.1}), ("SparseAdam", {"lr": 0.05, "betas": (0.8, 0.99),
                                                      "maximize": True}),
         ("SGD", {"lr": 0.1, "weight_decay": 0.1}), ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}),
         ("Adam", {}), ("AdamW", {}), ("RMSprop", {}), ("Adadelta", {}), ("Adamax", {}),
         ("NAdam", {}), ("RAdam", {})]


def _trajectory(lib, nn, optim, name, kw):
    w0 = np.random.RandomState(0).randn(6, 3).astype(np.float32)
    emb = _copy_embedding(lib, nn, w0)
    opt = getattr(optim, name)(emb.parameters(), **kw)
    out = []
    try:
        for step in range(5):
            opt.zero_grad()
            x = [[1, 2, 1], [4, 1, 0]] if step % 2 == 0 else [3, 1]
            emb(lib.tensor(x)).pow(2).sum().backward()
            opt.step()
            out.append(emb.weight.detach().numpy().copy())
    except RuntimeError as exc:
        return str(exc)
    return out


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_optimizer_trajectories_on_sparse_grads(name, kw):
    ref = _trajectory(torch, torch.nn, torch.optim, name, kw)
    got = _trajectory(et, enn, eoptim, name, kw)
    if isinstance(ref, str):
        assert got == ref
        return
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
