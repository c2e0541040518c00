"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Both are compositions of ember ops (matmul, linear, the fused softmax, masks as additive
biases), so their gradients of every order come from the derivative table.

    >>> import ember.tensor as et
    >>> import ember.nn.functional as F
    >>> q = et.ones(1, 2, 4)
    >>> F.scaled_dot_product_attention(q, q, et.arange(8.).view(1, 2, 4)).tolist()
    [[[2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0]]]
"""
from __future__ import annotations

import math

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor

from ._activation import softmax
from ._linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _safe_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """Softmax whose fully masked rows (all -inf) are zeros, not NaN, with zero gradients:
    what PyTorch's attention gives where it does not return the weights. The fused softmax
    runs on the scores with those rows zeroed (PyTorch's ``_safe_softmax``)."""
    masked = (x == float("-inf")).all(dim, keepdim=True)
    return softmax(x.masked_fill(masked, 0.0), dim).masked_fill(masked, 0.0)


def _dropout(x: Tensor, p: float) -> Tensor:
    if p <= 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    keep = (et.rand_like(x) >= p).to(dtype=x.dtype)
    return x * keep * (1.0 / (1.0 - p))


def _bias_from_mask(mask: Tensor, dtype, allowed_when_true: bool) -> Tensor:
    """A float additive mask: bool masks become 0 / -inf (``allowed_when_true`` says which
    value of the bool mask keeps a position)."""
    if mask.dtype == et.bool:
        keep = mask if allowed_when_true else mask.logical_not()
        zeros = et.zeros(mask.shape, dtype=dtype, device=mask.device)
        return zeros.masked_fill(keep.logical_not(), float("-inf"))
    if not mask.is_floating_point():
        raise RuntimeError(f"attention: only bool and floating types of masks are supported, "
                           f"got {mask.dtype}")
    return mask.to(dtype=dtype)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` over (..., L, E) queries and (..., S, E) keys.

    A bool ``attn_mask`` marks the positions that take part (True); a float one is added to
    the scores. ``is_causal`` masks keys after each query; ``dropout_p`` drops attention
    weights.

    >>> scaled_dot_product_attention(et.ones(2, 3), et.ones(2, 3), et.eye(2, 3),
    ...                              is_causal=True).tolist()
    [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
    """
    op = "scaled_dot_product_attention"
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"{op}(): expected query, key and value of at least 2 dims, got "
                           f"{list(query.shape)}, {list(key.shape)}, {list(value.shape)}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"{op}(): query of size {list(query.shape)} and key of size "
                           f"{list(key.shape)} must have the same last dim")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{op}(): key of size {list(key.shape)} and value of size "
                           f"{list(value.shape)} must have the same sequence length")
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError(f"{op}(): Expected query, key, and value to have the same dtype, "
                           f"but got query.dtype: {query.dtype} key.dtype: {key.dtype} and "
                           f"value.dtype: {value.dtype} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"{op}(): _scaled_dot_product_attention: Explicit attn_mask should "
                           "not be set when is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = (query @ key.transpose(-2, -1)) * scale_factor
    if is_causal:
        causal = np.triu(np.full((L, S), -np.inf), 1)
        scores = scores + et.from_numpy(causal).to(dtype=scores.dtype, device=scores.device)
    if attn_mask is not None:
        scores = scores + _bias_from_mask(attn_mask, scores.dtype, True)
    weights = _dropout(_safe_softmax(scores, -1), dropout_p)
    return weights @ value


def multi_head_attention_forward(
    query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
    bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
    out_proj_bias: Tensor | None, training: bool = True,
    key_padding_mask: Tensor | None = None, need_weights: bool = True,
    attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
    static_v: Tensor | None = None, average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """PyTorch's multi-head attention on sequence-first (L, N, E) inputs (or unbatched
    (L, E)); returns ``(output, weights)``. In ``attn_mask`` and ``key_padding_mask`` a True
    (or a -inf) marks a position that is *not* attended.

    >>> E = 4
    >>> x = et.randn(3, 2, E)
    >>> out, w = multi_head_attention_forward(x, x, x, E, 2, et.randn(3 * E, E),
    ...     et.zeros(3 * E), None, None, False, 0.0, et.eye(E), None)
    >>> out.shape, w.shape
    (ember.Size([3, 2, 4]), ember.Size([2, 3, 3]))
    """
    op = "multi_head_attention_forward"
    batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise RuntimeError(f"{op}(): query, key and value must all be 2-d (unbatched) or 3-d, "
                           f"got {list(query.shape)}, {list(key.shape)}, {list(value.shape)}")
    if not batched:  # self-attention stays recognisable (one in-projection, not three)
        if query is key and key is value:
            query = key = value = query.unsqueeze(1)
        else:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    # input projections: one product for self-attention with the packed weight
    if not use_separate_proj_weight and query is key and key is value:
        q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    else:
        if not use_separate_proj_weight:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        else:
            b_q = b_k = b_v = None
        q = linear(query, w_q, b_q)
        k = linear(key, w_k, b_k)
        v = linear(value, w_v, b_v)
    dtype = q.dtype
    # masks as additive float biases
    if attn_mask is not None:
        attn_mask = _bias_from_mask(attn_mask, dtype, False)
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, "
                                   f"but should be {[tgt_len, key.shape[0]]}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, "
                                   f"but should be "
                                   f"{[bsz * num_heads, tgt_len, key.shape[0]]}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if key_padding_mask is not None:
        key_padding_mask = _bias_from_mask(key_padding_mask, dtype, False)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key / value.")
        k = et.cat([k, bias_k.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)])
        v = et.cat([v, bias_v.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None \
        else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None \
        else static_v
    if add_zero_attn:
        zeros = et.zeros(bsz * num_heads, 1, head_dim, dtype=dtype, device=q.device)
        k = et.cat([k, zeros], 1)
        v = et.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                 f"got {tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
    if attn_mask is not None:
        scores = scores + attn_mask
    # PyTorch: fully masked rows give NaN weights when it returns them, zeros otherwise
    weights = softmax(scores, -1) if need_weights else _safe_softmax(scores, -1)
    attn = _dropout(weights, dropout_p) @ v  # (bsz*heads, L, head_dim)
    attn = attn.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(attn, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights


def _pad_last(mask: Tensor) -> Tensor:
    zeros = et.zeros(mask.shape[:-1] + (1,), dtype=mask.dtype, device=mask.device)
    return et.cat([mask, zeros], -1)
