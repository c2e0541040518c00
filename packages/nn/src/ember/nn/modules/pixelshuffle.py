"""``PixelShuffle`` / ``PixelUnshuffle`` (PyTorch's ``torch.nn.modules.pixelshuffle``).

``PixelShuffle(r)`` rearranges (*, C r^2, H, W) into (*, C, H r, W r), the sub-pixel
convolution upsampling step; ``PixelUnshuffle(r)`` is its inverse. Both are a reshape, a
permute and a reshape, so their gradients come from those ops.

    >>> import ember.tensor as et
    >>> PixelShuffle(2)(et.arange(8.).view(1, 4, 1, 2)).shape
    ember.Size([1, 1, 2, 4])
"""
from __future__ import annotations

from ember.tensor import Tensor

from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


def _check(op: str, input: Tensor, factor: int, name: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(factor).__name__}")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")
    if input.dim() < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")


def _pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    op = "pixel_shuffle"
    _check(op, input, upscale_factor, "upscale_factor")
    r = upscale_factor
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"{op} expects its input's 'channel' dimension to be divisible by "
                           f"the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def _pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    op = "pixel_unshuffle"
    _check(op, input, downscale_factor, "downscale_factor")
    r = downscale_factor
    *batch, c, h, w = input.shape
    if h % r or w % r:
        which, size = ("height", h) if h % r else ("width", w)
        dim = -2 if which == "height" else -1
        raise RuntimeError(f"{op} expects {which} to be divisible by downscale_factor, but "
                           f"input.size({dim})={size} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r) with ``r = upscale_factor``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return _pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W) with ``r = downscale_factor``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return _pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
