"""Distances: ``pairwise_distance``, ``cosine_similarity``, ``normalize``, ``pdist``."""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["pairwise_distance", "cosine_similarity", "normalize", "pdist"]


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim.

    >>> pairwise_distance(et.tensor([[0., 0.]]), et.tensor([[3., 4.]]), eps=0).tolist()
    [5.0]
    """
    out_dim = max(x1.dim(), x2.dim())
    d = x1 - x2 + eps
    if out_dim == 0:
        return d.abs()
    return _vector_norm(d, p, -1, keepdim)


def _vector_norm(x: Tensor, p: float, dim: int, keepdim: bool) -> Tensor:
    if p == 2:
        # sqrt of a sum of squares, with a zero gradient (not NaN) at 0
        return et.norm(x, 2, dim, keepdim)
    return et.norm(x, p, dim, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (broadcasting).

    >>> cosine_similarity(et.tensor([[1., 0.]]), et.tensor([[1., 1.]])).tolist()[0] > 0.7
    True
    """
    x1, x2 = et.broadcast_tensors(x1, x2)
    n1 = et.norm(x1, 2, dim, True).clamp(min=eps)
    n2 = et.norm(x2, 2, dim, True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out=None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = et.norm(input, p, dim, True).clamp(min=eps).expand_as(input)
    res = input / denom
    if out is not None:
        out.copy_(res)
        return out
    return res


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """Distances between every pair of rows of a 2-D input (upper triangle, row-major)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    rows, cols = [], []
    for i in range(n):
        for j in range(i + 1, n):
            rows.append(i)
            cols.append(j)
    if not rows:
        return et.zeros(0, dtype=input.dtype, device=input.device)

    a = et.index_select(input, 0, et.tensor(rows, device=input.device))
    b = et.index_select(input, 0, et.tensor(cols, device=input.device))
    return et.norm(a - b, p, 1)
