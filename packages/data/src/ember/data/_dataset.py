"""Map-style and iterable datasets, and ways to combine them (torch.utils.data.dataset)."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import ember.tensor as et

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``)."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``.

    With several DataLoader workers each worker iterates its own copy; use
    ``get_worker_info()`` inside ``__iter__`` to give each worker its own shard.
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Rows of tensors that share their first dimension: item ``i`` is ``tuple(t[i] ...)``.

    >>> ds = TensorDataset(et.arange(3), et.arange(3) * 2)
    >>> len(ds)
    3
    """

    def __init__(self, *tensors: et.Tensor):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        for t in tensors:
            if t.shape[0] != n:
                raise ValueError(
                    "Size mismatch between tensors: "
                    + ", ".join(str(tuple(t.shape)) for t in tensors)
                )
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Datasets of one length side by side: item ``i`` is the tuple of their items ``i``
    (datasets given positionally) or the dict of them by name (given as keywords).

    >>> ds = StackDataset(image=TensorDataset(et.arange(3)), label=[10, 11, 12])
    >>> ds[1]["label"], len(ds)
    (11, 3)
    """

    def __init__(self, *args: Any, **kwargs: Any):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not (args or kwargs):
            raise ValueError("At least one dataset should be passed")
        self.datasets: tuple | dict = args if args else kwargs
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")

    def _parts(self) -> list[tuple[Any, Any]]:
        """(key, dataset) pairs: the position or the name of each dataset."""
        if isinstance(self.datasets, dict):
            return list(self.datasets.items())
        return list(enumerate(self.datasets))

    def _assemble(self, fields: dict) -> Any:
        if isinstance(self.datasets, dict):
            return fields
        return tuple(fields[i] for i in range(len(self.datasets)))

    def __getitem__(self, index: Any) -> Any:
        return self._assemble({k: d[index] for k, d in self._parts()})

    def __getitems__(self, indices: list) -> list:
        """A batch of items, each dataset read with its own ``__getitems__`` where it has
        one."""
        columns = {}
        for key, d in self._parts():
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(items)}")
            else:
                items = [d[i] for i in indices]
            columns[key] = items
        return [self._assemble({k: col[j] for k, col in columns.items()})
                for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained on the fly (``ds1 + ds2`` of iterable
    datasets makes one)."""

    def __init__(self, datasets: Iterable[Dataset]):
        super().__init__()
        self.datasets = datasets

    def _checked(self) -> Iterator[IterableDataset]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self) -> Iterator[Any]:
        for d in self._checked():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._checked())


class ConcatDataset(Dataset):
    """Concatenation of map-style datasets; ``cumulative_sizes`` holds the running lengths."""

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Sequence[Any]) -> list[int]:
        out, s = [], 0
        for e in sequence:
            s += len(e)
            out.append(s)
        return out

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"ConcatDataset index {idx} out of range for length {len(self)}")
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return [self.dataset[self.indices[i]] for i in idx]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset,
    lengths: Sequence[int | float],
    generator: et.Generator | None = None,
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random Subsets of the given lengths.

    Fractions summing to 1 are turned into lengths with ``floor``, the remainder handed out
    one by one round-robin, as PyTorch does.
    """
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(int(math.floor(n * frac)))
        remainder = n - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.",
                    UserWarning,
                    stacklevel=2,
                )
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = et.randperm(n, generator=generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, indices[offset : offset + int(length)]))
        offset += int(length)
    return out
