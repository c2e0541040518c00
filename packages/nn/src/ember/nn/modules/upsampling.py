"""``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d`` (PyTorch's
``torch.nn.modules.upsampling``): modules over :func:`ember.nn.functional.interpolate`.

    >>> import ember.tensor as et
    >>> Upsample(scale_factor=2)(et.ones(1, 1, 2, 2)).shape
    ember.Size([1, 1, 4, 4])
"""
from __future__ import annotations

from ember.tensor import Tensor

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` or by ``scale_factor``
    with ``mode`` nearest, nearest-exact, linear, bilinear, bicubic, trilinear or area."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-D nearest-neighbour upsampling (``Upsample(mode="nearest")``)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-D bilinear upsampling with ``align_corners=True``."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
