"""Turning a list of samples into a batch (torch.utils.data default_collate / default_convert)."""

from __future__ import annotations

import collections.abc
import numbers
from typing import Any

import numpy as np

import ember.tensor as et

__all__ = ["default_collate", "default_convert"]

_ERR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _rebuild_mapping(elem: Any, values: dict) -> Any:
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = elem.copy() if hasattr(elem, "copy") else type(elem)()
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def default_convert(data: Any) -> Any:
    """Convert NumPy arrays (and their scalars) inside ``data`` to tensors, recursively;
    used when ``batch_size=None`` (no batching)."""
    if isinstance(data, et.Tensor):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "OSUV":
            return data
        return et.as_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind in "biuf":
        return et.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch, recursing into containers as PyTorch does.

    Tensors are stacked along a new first dim; NumPy arrays become stacked tensors; Python
    floats a float64 tensor, ints an int64 tensor, bools a bool tensor; strings stay a list;
    dicts collate per key; namedtuples per field (same type); other sequences are
    transposed and collated per position (tuples give a list, like PyTorch).

    >>> default_collate([(1, "a"), (2, "b")])
    [tensor([1, 2]), ('a', 'b')]
    """
    elem = batch[0]
    if isinstance(elem, et.Tensor):
        return et.stack(list(batch), 0)
    if isinstance(elem, np.ndarray) or (
        isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_))
    ):
        if isinstance(elem, np.ndarray) and elem.dtype.kind in "OSUV":
            raise TypeError(_ERR.format(elem.dtype))
        if isinstance(elem, np.generic) and elem.dtype.kind not in "biuf":
            raise TypeError(_ERR.format(elem.dtype))
        try:
            arr = np.stack([np.asarray(b) for b in batch])
        except ValueError as exc:
            raise RuntimeError(
                f"default_collate: stack expects each array to be equal size ({exc})"
            ) from None
        return et.from_numpy(np.ascontiguousarray(arr))
    if isinstance(elem, bool):
        return et.tensor(list(batch), dtype=et.bool)
    if isinstance(elem, float):
        return et.tensor(list(batch), dtype=et.float64)
    if isinstance(elem, int):
        return et.tensor(list(batch), dtype=et.int64)
    if isinstance(elem, numbers.Number):
        return et.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(
            elem, {key: default_collate([d[key] for d in batch]) for key in elem}
        )
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return type(elem)([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(type(elem)))
