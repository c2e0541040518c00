"""Padding layers: zero, constant, reflection, replication and circular, in 1-3 dims.

    >>> import ember.tensor as et
    >>> ReflectionPad1d(2)(et.tensor([[[1., 2., 3.]]])).tolist()
    [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]]
"""
from __future__ import annotations

from ember.tensor import Tensor

from .. import functional as F
from .module import Module

__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
]


def _pad_tuple(padding, nd: int) -> tuple[int, ...]:
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    t = tuple(int(v) for v in padding)
    if len(t) != 2 * nd:
        raise ValueError(f"expected padding to be an int or a tuple of {2 * nd} ints, got "
                         f"{padding!r}")
    return t


class _PadNd(Module):
    _nd = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _pad_tuple(padding, self._nd)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` is an int or ``(left, right)``.

    >>> ConstantPad1d((1, 0), 9.)(et.zeros(1, 2)).tolist()
    [[9.0, 0.0, 0.0]]
    """

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims: ``(left, right, top, bottom)``.

    >>> ConstantPad2d(1, 0.)(et.ones(1, 1, 1)).shape
    ember.Size([1, 3, 3])
    """

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims: ``(left, right, top, bottom, front, back)``.

    >>> ConstantPad3d(1, 0.)(et.ones(1, 1, 1, 1)).shape
    ember.Size([1, 3, 3, 3])
    """

    _nd = 3


class ZeroPad1d(ConstantPad1d):
    """Zero padding of the last dim.

    >>> ZeroPad1d(1)(et.ones(1, 1)).tolist()
    [[0.0, 1.0, 0.0]]
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Zero padding of the last two dims.

    >>> ZeroPad2d((1, 0, 0, 1))(et.ones(1, 1, 1)).tolist()
    [[[0.0, 1.0], [0.0, 0.0]]]
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Zero padding of the last three dims.

    >>> ZeroPad3d(1)(et.ones(1, 1, 1, 1)).sum().item()
    1.0
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Reflect the last dim about its edges (the edge is not repeated)."""

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Reflection padding of the last two dims.

    >>> ReflectionPad2d(1)(et.ones(1, 2, 2)).shape
    ember.Size([1, 4, 4])
    """

    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Reflection padding of the last three dims."""

    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dim.

    >>> ReplicationPad1d((0, 2))(et.tensor([[1., 2.]])).tolist()
    [[1.0, 2.0, 2.0, 2.0]]
    """

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Replication padding of the last two dims."""

    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Replication padding of the last three dims."""

    _nd, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wrap the last dim around.

    >>> CircularPad1d(1)(et.tensor([[1., 2., 3.]])).tolist()
    [[3.0, 1.0, 2.0, 3.0, 1.0]]
    """

    _nd, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Circular padding of the last two dims."""

    _nd, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Circular padding of the last three dims."""

    _nd, _mode = 3, "circular"
