"""Functional linear maps: ``linear``, ``bilinear``."""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import unwrap

__all__ = ["linear", "bilinear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``.

    >>> import ember.tensor as et
    >>> linear(et.ones(2, 3), et.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    a, w = unwrap(input).shape, unwrap(weight).shape  # raw shapes: this runs once per layer call
    if not a or len(w) not in (1, 2):
        raise RuntimeError(f"linear: expected an input with at least 1 dim and a 1-D or 2-D "
                           f"weight, got input {list(a)} and weight {list(w)}")
    if a[-1] != w[-1]:
        raise RuntimeError(
            f"linear: mat1 and mat2 shapes cannot be multiplied "
            f"({input.numel() // max(a[-1], 1)}x{a[-1]} and "
            f"{w[-1]}x{w[0] if len(w) == 2 else 1})")
    if len(w) == 2 and (bias is None or unwrap(bias).ndim == 1):
        return et.linear(input, weight, bias)
    out = et.matmul(input, weight)
    if bias is not None:
        out = out + bias
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y_o = x1^T W_o x2 + b_o`` over the last dims of ``input1`` and ``input2``."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear: input1 and input2 must have the same batch shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    if weight.dim() != 3 or weight.shape[1] != input1.shape[-1] or \
            weight.shape[2] != input2.shape[-1]:
        raise RuntimeError(f"bilinear: weight {list(weight.shape)} does not match inputs "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    batch = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    o, i, j = weight.shape
    # (B, i) @ (i, o*j) -> (B, o, j), then contract j with x2
    t = et.matmul(x1, weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*batch, o)
