"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``.

    >>> import ember.tensor as et
    >>> Conv2d(1, 6, 5)(et.ones(2, 1, 28, 28)).shape
    ember.Size([2, 6, 24, 24])
"""
from __future__ import annotations

import math

import ember.tensor as et
from ember.tensor import Tensor

from .. import functional as F
from .. import init
from ..functional._conv import _ntuple
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None, output_padding=0) -> None:
        super().__init__()
        nd = self._nd
        name = type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(name, "kernel_size", kernel_size, nd)
        self.stride = _ntuple(name, "stride", stride, nd)
        self.dilation = _ntuple(name, "dilation", dilation, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        self.output_padding = _ntuple(name, "output_padding", output_padding, nd)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "['valid', 'same']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(name, "padding", padding, nd)
        # F.pad amounts (last dim first) for the non-zero padding modes
        if isinstance(self.padding, str):
            rev: list[int] = [0, 0] * nd
            if self.padding == "same":
                for i, (d, k) in enumerate(zip(self.dilation, self.kernel_size)):
                    total = d * (k - 1)
                    left = total // 2
                    rev[2 * (nd - 1 - i)] = left
                    rev[2 * (nd - 1 - i) + 1] = total - left
        else:
            rev = [p for p in reversed(self.padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(et.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(et.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), ...)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        padding = f"'{self.padding}'" if isinstance(self.padding, str) else self.padding
        return s.format(**{**self.__dict__, "padding": padding,
                           "padding_mode": self.padding_mode})

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _func = staticmethod(F.conv2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._func(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._func(input, weight, bias, self.stride, self.padding, self.dilation,
                          self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) (``torch.nn.Conv1d``).

    >>> Conv1d(2, 3, 3, padding="same")(et.ones(1, 2, 5)).shape
    ember.Size([1, 3, 5])
    """

    _nd = 1
    _func = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) (``torch.nn.Conv2d``), with ``padding_mode``
    ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    >>> Conv2d(1, 2, 3, padding=1, padding_mode="reflect")(et.ones(1, 1, 4, 4)).shape
    ember.Size([1, 2, 4, 4])
    """

    _nd = 2
    _func = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) (``torch.nn.Conv3d``).

    >>> Conv3d(1, 2, 2)(et.ones(1, 1, 3, 3, 3)).shape
    ember.Size([1, 2, 2, 2, 2])
    """

    _nd = 3
    _func = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True
    _func = staticmethod(F.conv_transpose2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input: Tensor, output_size) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        nd = self._nd
        size = [int(v) for v in output_size]
        if len(size) == nd + 2 or (len(size) == nd + 1 and input.dim() == nd + 1):
            size = size[len(size) - nd:]
        if len(size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must "
                             f"have {nd} or {nd + 2} elements (got {len(output_size)})")
        spatial = input.shape[input.dim() - nd:]
        res = []
        for i in range(nd):
            smallest = ((spatial[i] - 1) * self.stride[i] - 2 * self.padding[i]
                        + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            largest = smallest + self.stride[i] - 1
            if not smallest <= size[i] <= largest:
                raise ValueError(f"requested an output size of {size}, but valid sizes range "
                                 f"from {smallest} to {largest} (for an input of "
                                 f"{list(spatial)})")
            res.append(size[i] - smallest)
        return tuple(res)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        op = self._output_padding(input, output_size)
        return self._func(input, self.weight, self.bias, self.stride, self.padding, op,
                          self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution (``torch.nn.ConvTranspose1d``); weight (C_in, C_out/g, k).

    >>> ConvTranspose1d(2, 3, 3, stride=2)(et.ones(1, 2, 4)).shape
    ember.Size([1, 3, 9])
    """

    _nd = 1
    _func = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution (``torch.nn.ConvTranspose2d``).

    >>> ConvTranspose2d(1, 1, 2, stride=2)(et.ones(1, 1, 3, 3), output_size=(7, 7)).shape
    ember.Size([1, 1, 7, 7])
    """

    _nd = 2
    _func = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution (``torch.nn.ConvTranspose3d``).

    >>> ConvTranspose3d(1, 2, 2)(et.ones(1, 1, 2, 2, 2)).shape
    ember.Size([1, 2, 3, 3, 3])
    """

    _nd = 3
    _func = staticmethod(F.conv_transpose3d)


# --------------------------------------------------------------------------- lazy forms
class _LazyConvMixin(LazyModuleMixin):
    """``in_channels`` from the first input: dim 1 of a batched input, dim 0 of an unbatched
    one."""

    def _make_lazy(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        self.in_channels = input.shape[1] if input.dim() == nd + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        g = self.groups
        self.weight.materialize(
            (self.in_channels, self.out_channels // g, *self.kernel_size) if self._transposed
            else (self.out_channels, self.in_channels // g, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class _LazyConv(_LazyConvMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A Conv1d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A Conv2d whose ``in_channels`` is inferred from the first input.

    >>> m = LazyConv2d(4, 3)
    >>> m(et.ones(1, 2, 5, 5)).shape, tuple(m.weight.shape)
    (ember.Size([1, 4, 3, 3]), (4, 2, 3, 3))
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A Conv3d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ConvTranspose1d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ConvTranspose2d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ConvTranspose3d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose3d
