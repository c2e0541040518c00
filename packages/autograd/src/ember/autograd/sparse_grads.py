"""How the engine adds gradients when one of them is a sparse COO tensor.

Two sparse gradients merge into one uncoalesced sparse tensor (PyTorch's ``sparse + sparse``);
a sparse gradient added to a dense one gives a dense one; a node whose formula needs a dense
gradient gets one (:func:`densify`).
"""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import extension as _ext
from ember.tensor.sparse import SparseTensor

__all__ = ["sum_grads", "accumulate", "densify"]


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
