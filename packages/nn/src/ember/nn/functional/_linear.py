"""Functional linear maps: ``linear``, ``bilinear``."""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import unwrap

from ._loss import cross_entropy

__all__ = ["linear", "bilinear", "linear_cross_entropy"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``.

    >>> import ember.tensor as et
    >>> linear(et.ones(2, 3), et.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    w = unwrap(weight).shape
    if len(w) == 2 and (bias is None or unwrap(bias).ndim == 1):
        # the registry op checks the input's shape itself, with PyTorch's message; the input is
        # not read here (inside autobatch() it may be a pending value: reading it costs)
        return et.linear(input, weight, bias)
    a = unwrap(input).shape
    if not a or len(w) not in (1, 2):
        raise RuntimeError(f"linear: expected an input with at least 1 dim and a 1-D or 2-D "
                           f"weight, got input {list(a)} and weight {list(w)}")
    if a[-1] != w[-1]:
        raise RuntimeError(
            f"linear: mat1 and mat2 shapes cannot be multiplied "
            f"({input.numel() // max(a[-1], 1)}x{a[-1]} and "
            f"{w[-1]}x{w[0] if len(w) == 2 else 1})")
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


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``;
    ``ignore_index=None`` ignores no class. ``options`` (PyTorch's chunking hints) is
    accepted and changes nothing here: the logits are computed whole.

    >>> linear_cross_entropy(et.ones(1, 2), et.zeros(3, 2), et.tensor([0])).item()
    1.0986123085021973
    """
    logits = linear(input, linear_weight, linear_bias)
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None
                         else ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)
