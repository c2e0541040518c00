"""Argument checks shared by the op families: devices and in-place writes."""
from __future__ import annotations

import numpy as np

from ._tensor import Tensor, _device_of

_ndarray = np.ndarray


def device_error(op: str, a, b) -> RuntimeError:
    """PyTorch's error for mixing devices, naming both."""
    return RuntimeError(
        f"{op}(): Expected all tensors to be on the same device, but found at least two "
        f"devices, {_device_of(a)} and {_device_of(b)}!")


def check_same_device(op: str, *arrays) -> None:
    """RuntimeError unless every array lives on the first one's device."""
    first = arrays[0]
    for a in arrays[1:]:
        if type(a) is not type(first) or (not isinstance(a, _ndarray)
                                          and a.device != first.device):
            raise device_error(op, first, a)


def check_inplace(t: Tensor, op: str) -> None:
    """In-place writes into a tensor whose elements overlap (expanded) are refused."""
    d = t._data
    if not d.flags.c_contiguous:
        for n, s in zip(d.shape, d.strides):
            if s == 0 and n > 1:
                raise RuntimeError(
                    f"{op}(): unsupported operation: more than one element of the written-to "
                    "tensor refers to a single memory location. Please clone() the tensor before "
                    "performing the operation.")
