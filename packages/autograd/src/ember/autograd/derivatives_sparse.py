"""Sparse COO gradients.

Sparse tensors need no derivative entries of their own: every sparse op is written with dense
registry ops on the values (see ``ember.tensor.sparse``), so the table's ordinary formulas
differentiate them. What this module adds:

* ``embedding(..., sparse=True)``: the weight's gradient is a sparse COO tensor holding one row
  of ``grad_output`` per lookup (uncoalesced, ``padding_idx`` lookups dropped), PyTorch's
  ``embedding_sparse_backward``. The dense formula of ``derivatives_nn`` stays the one used for
  ``sparse=False``; this wraps it.

How the engine adds gradients when one of them is sparse lives below it, in
:mod:`.sparse_grads`.
"""
from __future__ import annotations

import ember.tensor as et

from .derivatives import TABLE

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
