"""``ember.tensor.sparse``: PyTorch's ``torch.sparse`` for sparse COO tensors.

>>> import ember.tensor as et
>>> s = et.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
>>> et.sparse.mm(s, et.ones(2, 1)).tolist()
[[2.0], [3.0]]
>>> et.sparse.sum(s)
tensor(5.)
"""
from __future__ import annotations

import contextlib

from ._sparse import SparseTensor, sparse_addmm, sparse_mm, sparse_sum

__all__ = ["mm", "sum", "addmm", "SparseTensor", "check_sparse_tensor_invariants"]


def mm(mat1, mat2):
    """``mat1 @ mat2`` with a sparse COO ``mat1`` (``torch.sparse.mm``); differentiable
    w.r.t. ``mat2`` and the values of ``mat1`` (a leaf ``mat1`` gets a sparse gradient with
    its own indices)."""
    return sparse_mm(mat1, mat2)


def sum(input, dim=None, dtype=None):  # noqa: A001 - PyTorch's name
    """Sum of a sparse tensor over ``dim`` (``torch.sparse.sum``)."""
    return sparse_sum(input, dim, dtype)


def addmm(mat, mat1, mat2, *, beta=1, alpha=1):
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``."""
    return sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


class check_sparse_tensor_invariants(contextlib.ContextDecorator):
    """PyTorch's invariant-check switch. ember checks indices against the size on every
    ``sparse_coo_tensor`` call (it never reads out of bounds), so this is always on."""

    def __init__(self, enable: bool = True) -> None:
        self._enable = enable

    @staticmethod
    def is_enabled() -> bool:
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False
