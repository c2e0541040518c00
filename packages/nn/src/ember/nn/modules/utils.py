"""PyTorch's ``torch.nn.modules.utils`` helpers that layer code imports: ``_single``,
``_pair``, ``_triple``, ``_quadruple`` and ``_ntuple`` (an int repeated n times; an iterable
passes through as a tuple).

    >>> _pair(3), _pair((1, 2))
    ((3, 3), (1, 2))
"""
from __future__ import annotations

from collections.abc import Iterable

__all__: list[str] = []


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
