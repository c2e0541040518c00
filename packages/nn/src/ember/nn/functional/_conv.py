"""Convolutions (1-d, 2-d, 3-d, transposed) and ``unfold`` / ``fold``.

Every convolution is the ``convolution`` op of ember.tensor's registry (an im2col followed by
one batched BLAS matmul); its derivative in the table calls ``convolution_backward``, whose own
derivative is written with both, so every convolution is differentiable any number of times.
``unfold`` / ``fold`` are the ``im2col`` / ``col2im`` ops, each the other's derivative.

    >>> import ember.tensor as et
    >>> import ember.nn.functional as F
    >>> F.conv2d(et.ones(1, 1, 3, 3), et.ones(1, 1, 2, 2)).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
"""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor import extension as _ext

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "conv_tbc", "unfold", "fold", "channel_shuffle",
           "native_channel_shuffle"]


_ntuple = _ext.ntuple


conv1d = et.conv1d
conv2d = et.conv2d
conv3d = et.conv3d
conv_transpose1d = et.conv_transpose1d
conv_transpose2d = et.conv_transpose2d
conv_transpose3d = et.conv_transpose3d


# ----------------------------------------------------------------------------- unfold / fold
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding 2-d blocks: (N, C, H, W) -> (N, C*kH*kW, L), rows ordered
    (c, kh, kw) as in PyTorch.

    >>> unfold(et.arange(9.).view(1, 1, 3, 3), 2).shape
    ember.Size([1, 4, 4])
    """
    op = "unfold"
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"{op}(): Input Error: Only 3D or 4D input Tensors are "
                                  f"supported (got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    k = _ntuple(op, "kernel_size", kernel_size, 2)
    d = _ntuple(op, "dilation", dilation, 2)
    p = _ntuple(op, "padding", padding, 2)
    s = _ntuple(op, "stride", stride, 2)
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise RuntimeError(f"{op}(): kernel_size, dilation and stride must be positive and "
                           f"padding non-negative, got {k}, {d}, {s}, {p}")
    out = et.im2col(x, k, d, p, s)
    return out if batched else out.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0,
         stride=1) -> Tensor:
    """Combine sliding blocks (N, C*kH*kW, L) into (N, C, H, W), summing overlaps.

    >>> fold(et.ones(1, 4, 4), (3, 3), 2)[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    op = "fold"
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"{op}(): Input Error: Only unbatched (2D) or batched (3D) "
                                  f"input Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    size = _ntuple(op, "output_size", output_size, 2)
    k = _ntuple(op, "kernel_size", kernel_size, 2)
    d = _ntuple(op, "dilation", dilation, 2)
    p = _ntuple(op, "padding", padding, 2)
    s = _ntuple(op, "stride", stride, 2)
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise RuntimeError(f"{op}(): Expected size of input's dimension 1 to be divisible by "
                           f"the product of kernel_size, but got input.size(1)={x.shape[1]} "
                           f"and kernel_size={k}")
    out = et.col2im(x, size, k, d, p, s)
    return out if batched else out.squeeze(0)


def _conv_params(op: str, value, nd: int) -> tuple[int, ...]:
    """Public helper for the modules: an int or a tuple as an ``nd``-tuple."""
    return _ntuple(op, "argument", value, nd)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution in time-batch-channel layout: ``input`` (T, B, C_in), ``weight``
    (k, C_in, C_out), ``bias`` (C_out,), ``pad`` zeros on both ends of time; (T', B, C_out).

    >>> conv_tbc(et.ones(4, 1, 2), et.ones(3, 2, 1), et.zeros(1), 1).flatten().tolist()
    [4.0, 6.0, 6.0, 4.0]
    """
    if input.dim() != 3:
        raise RuntimeError(f"conv_tbc(): Input must have 3 dims: time, batch, in_channel, but "
                           f"got {list(input.shape)}")
    if weight.dim() != 3:
        raise RuntimeError(f"conv_tbc(): Weight tensor must have 3 dims: kernel_width, "
                           f"in_channels, out_channels, but got {list(weight.shape)}")
    if bias.dim() != 1:
        raise RuntimeError(f"conv_tbc(): Bias must be 1-D, but got {list(bias.shape)}")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(f"conv_tbc(): Input dim 2 (input channels) is not == dim 1 in the "
                           f"weight tensor: {input.shape[2]} != {weight.shape[1]}")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError(f"conv_tbc(): Bias size must equal dim 2 in the weight tensor "
                           f"(output channels): {bias.shape[0]} != {weight.shape[2]}")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of (N, C, *) ``input`` from ``groups`` groups: channel
    ``g * (C // groups) + i`` moves to ``i * groups + g`` (ShuffleNet).

    >>> channel_shuffle(et.arange(4.).view(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    grouped = input.reshape(n, groups, c // groups, *rest)
    return grouped.transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle
