"""Pooling layers: max (with indices), unpool, average, power-average, fractional and
adaptive pooling in 1, 2 and 3 dims.

    >>> import ember.tensor as et
    >>> MaxPool2d(2)(et.ones(1, 1, 4, 4)).shape
    ember.Size([1, 1, 2, 2])
"""
from __future__ import annotations

from ember.tensor import Tensor

from .. import functional as F
from .module import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
    "FractionalMaxPool2d", "FractionalMaxPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
]


class _MaxPoolNd(Module):
    _func = staticmethod(F.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        return self._func(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling (``torch.nn.MaxPool1d``).

    >>> MaxPool1d(2)(et.tensor([[[1., 3., 2., 0.]]])).tolist()
    [[[3.0, 2.0]]]
    """

    _func = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling; ``return_indices=True`` also returns flat H*W indices."""

    _func = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling."""

    _func = staticmethod(F.max_pool3d)


class _MaxUnpoolNd(Module):
    _func = staticmethod(F.max_unpool2d)

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return self._func(input, indices, self.kernel_size, self.stride, self.padding,
                          output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of :class:`MaxPool1d` given its indices."""

    _func = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of :class:`MaxPool2d` given its indices."""

    _func = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of :class:`MaxPool3d` given its indices."""

    _func = staticmethod(F.max_unpool3d)


class AvgPool1d(Module):
    """1-d average pooling (``torch.nn.AvgPool1d``).

    >>> AvgPool1d(2)(et.tensor([[[1., 3., 2., 0.]]])).tolist()
    [[[2.0, 1.0]]]
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _func = staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return self._func(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling with ``count_include_pad`` and ``divisor_override``."""

    _func = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling."""

    _func = staticmethod(F.avg_pool3d)


class _LPPoolNd(Module):
    _func = staticmethod(F.lp_pool2d)

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return self._func(input, float(self.norm_type), self.kernel_size, self.stride,
                          self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum x**p)**(1/p)`` over 1-d windows."""

    _func = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-d windows."""

    _func = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over 3-d windows."""

    _func = staticmethod(F.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = kernel_size
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = output_size
        self.output_ratio = None
        if output_ratio is not None:
            ratio = (output_ratio,) * self._nd if isinstance(output_ratio, (int, float)) \
                else tuple(output_ratio)
            if not all(0 < r < 1 for r in ratio):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
            self.output_ratio = ratio
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")

    def forward(self, input: Tensor):
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling (``torch.nn.FractionalMaxPool2d``).

    >>> FractionalMaxPool2d(2, output_ratio=0.5)(et.randn(1, 1, 8, 8)).shape
    ember.Size([1, 1, 4, 4])
    """

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling (``torch.nn.FractionalMaxPool3d``).

    >>> FractionalMaxPool3d(2, output_size=(2, 3, 2))(et.randn(1, 1, 5, 6, 5)).shape
    ember.Size([1, 1, 2, 3, 2])
    """

    _nd = 3


class _AdaptiveMaxPoolNd(Module):
    _func = staticmethod(F.adaptive_max_pool2d)

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return self._func(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length."""

    _func = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W); entries may be None."""

    _func = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W)."""

    _func = staticmethod(F.adaptive_max_pool3d)


class _AdaptiveAvgPoolNd(Module):
    _func = staticmethod(F.adaptive_avg_pool2d)

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return self._func(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length."""

    _func = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (H, W) (``AdaptiveAvgPool2d(1)``: global average).

    >>> AdaptiveAvgPool2d(1)(et.ones(2, 3, 5, 5)).shape
    ember.Size([2, 3, 1, 1])
    """

    _func = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (D, H, W)."""

    _func = staticmethod(F.adaptive_avg_pool3d)
