"""``Unfold`` (im2col) and ``Fold`` (col2im) layers.

    >>> import ember.tensor as et
    >>> Unfold(2)(et.ones(1, 3, 4, 4)).shape
    ember.Size([1, 12, 9])
"""
from __future__ import annotations

from ember.tensor import Tensor

from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sum sliding blocks (N, C*prod(k), L) into (N, C, *output_size) (``torch.nn.Fold``).

    >>> Fold((3, 3), 2)(et.ones(1, 4, 4)).shape
    ember.Size([1, 1, 3, 3])
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding blocks (``torch.nn.Unfold``).

    >>> Unfold(3, padding=1)(et.ones(2, 1, 5, 5)).shape
    ember.Size([2, 9, 25])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
