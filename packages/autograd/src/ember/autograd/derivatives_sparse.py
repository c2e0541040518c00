"""Sparse COO gradients.

Sparse tensors need no derivative entries of their own: every sparse op is written with dense
registry ops on the values (see ``ember.tensor.sparse``), so the table's ordinary formulas
differentiate them. What this module adds:

* ``embedding(..., sparse=True)``: the weight's gradient is a sparse COO tensor holding one row
  of ``grad_output`` per lookup (uncoalesced, ``padding_idx`` lookups dropped), PyTorch's
  ``embedding_sparse_backward``. The dense formula of ``derivatives_nn`` stays the one used for
  ``sparse=False``; this wraps it.
* :func:`sum_grads` and :func:`accumulate`: how the engine adds gradients when one of them is
  sparse (two sparse gradients are merged into one uncoalesced sparse tensor, PyTorch's
  ``sparse + sparse``; a sparse gradient added to a dense one gives a dense one).
"""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import extension as _ext
from ember.tensor.sparse import SparseTensor

from .derivatives import TABLE

__all__ = ["sum_grads", "accumulate", "densify"]

_dense_embedding = TABLE["embedding"].vjp


def _embedding(c, g):
    a = c.args
    if not a.sparse:
        return _dense_embedding(c, g)
    if a.scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    num_weights = c.meta[0][0][0]
    width = g.shape[-1]
    idx = a.indices.reshape(-1)
    if idx.dtype != et.int64:
        idx = idx.to(dtype=et.int64)
    rows = g.reshape(-1, width)
    if a.padding_idx >= 0:
        keep = (idx != a.padding_idx).nonzero().reshape(-1)
        if keep.shape[0] != idx.shape[0]:
            idx, rows = idx.index_select(0, keep), rows.index_select(0, keep)
    return (et.sparse_coo_tensor(idx.unsqueeze(0), rows, (num_weights, width)),)


TABLE["embedding"].vjp = _embedding


def densify(g):
    """A dense gradient for a node whose formula needs one."""
    return g.to_dense() if g.__class__ is SparseTensor else g


def sum_grads(old, g):
    """``old + g`` where at least one is sparse (the other sparse, dense, or the engine's
    row-slice gradient): sparse + sparse stays sparse, anything else becomes dense."""
    if old.__class__ is SparseTensor and g.__class__ is SparseTensor:
        return old + g
    if old.__class__ is SparseTensor:
        old, g = g, old
    if not isinstance(old, et.Tensor):  # the engine's row-slice gradient
        old = old.dense()
    return _add_sparse_into(_ext.wrap(_ext.unwrap(old).copy()) if not old.requires_grad
                            else old, g)


def _add_sparse_into(dense, s: SparseTensor):
    """``dense + s``, in place into ``dense`` when nothing records it."""
    if s.sparse_dim() == 1 and not (dense.requires_grad or s.requires_grad):
        # rows: scatter-add them, no full-size temporary (embedding's gradient)
        vals = s._values()
        if vals.dtype != dense.dtype:
            vals = vals.to(dtype=dense.dtype)
        return dense.index_add_(0, s._indices()[0], vals)
    d = s.to_dense()
    if d.dtype != dense.dtype:
        d = d.to(dtype=dense.dtype)
    if dense.requires_grad or d.requires_grad:
        return dense + d
    acc = _ext.unwrap(dense)
    acc += _ext.unwrap(d)
    _ext.bump_version(dense)
    return dense


def accumulate(t, g, create_graph: bool):
    """The new ``t.grad`` once ``g`` arrives, where ``g`` or ``t.grad`` is sparse (PyTorch's
    AccumulateGrad: a first sparse gradient is kept as it is (cloned); sparse + sparse
    merges; sparse into a dense ``.grad`` adds in place)."""
    old = t.grad
    if old is None:
        return g if create_graph else g.detach().clone()
    if old.__class__ is SparseTensor and g.__class__ is SparseTensor:
        return old + (g if create_graph else g.detach())
    if old.__class__ is SparseTensor:  # dense g arriving on a sparse .grad: a dense sum
        base = g if create_graph else _ext.wrap(_ext.unwrap(g).copy())
        return _add_sparse_into(base, old)
    if create_graph or old.requires_grad:
        return old + g.to_dense()
    return _add_sparse_into(old, g)
