"""Batch, Iterator, BucketIterator and BPTTIterator (torchtext's classic iterators)."""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Iterator as _PyIterator
from typing import Any

import numpy as np

from ._dataset import Dataset
from ._field import _as_tensor
from ._utils import RandomShuffler, batch, pool

__all__ = ["BPTTIterator", "Batch", "BucketIterator", "Iterator"]


class Batch:
    """A processed minibatch: one attribute per field (``batch.text``, ``batch.label``).

    Iterating a Batch gives (inputs, targets), each a single value or a tuple when there are
    several input (or target) fields.
    """

    def __init__(
        self, data: list | None = None, dataset: Dataset | None = None, device: Any = None
    ):
        if data is None:
            return
        self.batch_size = len(data)
        self.dataset = dataset
        self.fields = list(dataset.fields.keys())
        self.input_fields = [
            k for k, v in dataset.fields.items() if v is not None and not v.is_target
        ]
        self.target_fields = [k for k, v in dataset.fields.items() if v is not None and v.is_target]
        for name, field in dataset.fields.items():
            if field is not None:
                values = [getattr(x, name) for x in data]
                setattr(self, name, field.process(values, device=device))

    @classmethod
    def fromvars(cls, dataset: Dataset, batch_size: int, train: Any = None, **kwargs: Any) -> Batch:
        """A Batch from ready tensors (what BPTTIterator yields)."""
        b = cls()
        b.batch_size = batch_size
        b.dataset = dataset
        b.fields = list(dataset.fields.keys())
        b.input_fields = [k for k, v in dataset.fields.items() if v is not None and not v.is_target]
        b.target_fields = [k for k, v in dataset.fields.items() if v is not None and v.is_target]
        for k, v in kwargs.items():
            setattr(b, k, v)
        return b

    def __len__(self) -> int:
        return self.batch_size

    def __repr__(self) -> str:
        parts = []
        for name in getattr(self, "fields", []):
            value = getattr(self, name, None)
            desc = _describe(value)
            parts.append(f"\t[.{name}]:{desc}")
        return f"\n[{type(self).__name__} of size {getattr(self, 'batch_size', 0)}]\n" + "\n".join(
            parts
        )

    def _get_field_values(self, fields: list[str]) -> Any:
        if len(fields) == 0:
            return None
        if len(fields) == 1:
            return getattr(self, fields[0])
        return tuple(getattr(self, f) for f in fields)

    def __iter__(self) -> _PyIterator[Any]:
        yield self._get_field_values(self.input_fields)
        yield self._get_field_values(self.target_fields)


def _describe(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        size = "x".join(str(d) for d in value.shape)
        return f"[{type(value).__name__} of size {size} ({value.dtype})]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value)


class Iterator:
    """Batches of Examples from a Dataset, processed by the fields into tensors.

    Defaults as in torchtext: ``shuffle = train``, ``sort = not train``,
    ``sort_within_batch = sort``. Shuffling uses a private ``random.Random`` seeded from
    Python's global ``random`` state when the iterator is built, so ``random.seed(s)``
    beforehand pins the order. With ``sort_within_batch`` each batch is in descending
    ``sort_key`` order, as ``pack_padded_sequence`` needs. ``state_dict()`` /
    ``load_state_dict()`` resume in the middle of an epoch, skipping the batches already seen.
    """

    _needs_sort_key = True

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        sort_key: Callable | None = None,
        device: Any = None,
        batch_size_fn: Callable | None = None,
        train: bool = True,
        repeat: bool = False,
        shuffle: bool | None = None,
        sort: bool | None = None,
        sort_within_batch: bool | None = None,
    ):
        if batch_size <= 0:
            raise ValueError(
                f"{type(self).__name__}: batch_size must be positive, got {batch_size}"
            )
        self.batch_size, self.train, self.dataset = batch_size, train, dataset
        self.batch_size_fn = batch_size_fn
        self.iterations = 0
        self.repeat = repeat
        self.shuffle = train if shuffle is None else shuffle
        self.sort = (not train) if sort is None else sort
        self.sort_within_batch = self.sort if sort_within_batch is None else sort_within_batch
        self.sort_key = dataset.sort_key if sort_key is None else sort_key
        needs_key = self.sort or self.sort_within_batch or isinstance(self, BucketIterator)
        if needs_key and self._needs_sort_key and self.sort_key is None:
            raise ValueError(
                f"{type(self).__name__}: sorting needs a sort_key (pass sort_key= or set "
                "the dataset's sort_key)"
            )
        self.device = None if device is None or isinstance(device, int) else device
        self.random_shuffler = RandomShuffler()
        self._iterations_this_epoch = 0
        self._random_state_this_epoch: tuple | None = None
        self._restored_from_state = False

    @classmethod
    def splits(cls, datasets: tuple, batch_sizes: tuple | None = None, **kwargs: Any) -> tuple:
        """One iterator per dataset; the first gets ``train=True``, the others ``train=False``."""
        if batch_sizes is None:
            batch_sizes = [kwargs.pop("batch_size")] * len(datasets)
        return tuple(
            cls(d, batch_size=bs, train=(i == 0), **kwargs)
            for i, (d, bs) in enumerate(zip(datasets, batch_sizes))
        )

    def data(self) -> list:
        if self.sort:
            return sorted(self.dataset, key=self.sort_key)
        if self.shuffle:
            return [self.dataset[i] for i in self.random_shuffler(range(len(self.dataset)))]
        return list(self.dataset)

    def init_epoch(self) -> None:
        if self._restored_from_state:
            self.random_shuffler.random_state = self._random_state_this_epoch
        else:
            self._random_state_this_epoch = self.random_shuffler.random_state
        self.create_batches()
        if self._restored_from_state:
            self._restored_from_state = False
        else:
            self._iterations_this_epoch = 0
        if not self.repeat:
            self.iterations = 0

    def create_batches(self) -> None:
        self.batches = batch(self.data(), self.batch_size, self.batch_size_fn)

    @property
    def epoch(self) -> int:
        return math.floor(self.iterations / len(self))

    def __len__(self) -> int:
        if self.batch_size_fn is not None:
            raise NotImplementedError("len() of an iterator with batch_size_fn is not known")
        return math.ceil(len(self.dataset) / self.batch_size)

    def __iter__(self) -> _PyIterator[Batch]:
        while True:
            self.init_epoch()
            for idx, minibatch in enumerate(self.batches):
                if self._iterations_this_epoch > idx:
                    continue  # fast-forward after load_state_dict
                self.iterations += 1
                self._iterations_this_epoch += 1
                if self.sort_within_batch:
                    if self.sort:
                        minibatch.reverse()
                    else:
                        minibatch.sort(key=self.sort_key, reverse=True)
                yield Batch(minibatch, self.dataset, self.device)
            if not self.repeat:
                return

    def state_dict(self) -> dict:
        return {
            "iterations": self.iterations,
            "iterations_this_epoch": self._iterations_this_epoch,
            "random_state_this_epoch": self._random_state_this_epoch,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        self.iterations = state_dict["iterations"]
        self._iterations_this_epoch = state_dict["iterations_this_epoch"]
        self._random_state_this_epoch = state_dict["random_state_this_epoch"]
        self._restored_from_state = True


class BucketIterator(Iterator):
    """Batches of similar lengths: torchtext's ``pool`` cuts the (shuffled) data into chunks
    of 100 batches, sorts each chunk by ``sort_key``, batches it and shuffles the batches.
    Evaluation iterators (``sort=True``) simply batch the sorted data."""

    def create_batches(self) -> None:
        if self.sort:
            self.batches = batch(self.data(), self.batch_size, self.batch_size_fn)
        else:
            self.batches = pool(
                self.data(),
                self.batch_size,
                self.sort_key,
                self.batch_size_fn,
                random_shuffler=self.random_shuffler,
                shuffle=self.shuffle,
                sort_within_batch=self.sort_within_batch,
            )


class BPTTIterator(Iterator):
    """Contiguous chunks of one long text for truncated back-propagation through time.

    The token stream is padded to a multiple of ``batch_size``, split into ``batch_size``
    columns, and cut into windows of ``bptt_len`` rows; ``batch.target`` is ``batch.text``
    shifted by one token. Shapes are (seq_len, batch), or (batch, seq_len) when the text
    field is ``batch_first``.
    """

    _needs_sort_key = False

    def __init__(self, dataset: Dataset, batch_size: int, bptt_len: int, **kwargs: Any):
        if bptt_len <= 0:
            raise ValueError(f"BPTTIterator: bptt_len must be positive, got {bptt_len}")
        self.bptt_len = bptt_len
        super().__init__(dataset, batch_size, **kwargs)

    def __len__(self) -> int:
        return math.ceil((len(self.dataset[0].text) / self.batch_size - 1) / self.bptt_len)

    def __iter__(self) -> _PyIterator[Batch]:
        text = self.dataset[0].text
        field = self.dataset.fields["text"]
        n_rows = math.ceil(len(text) / self.batch_size)
        text = list(text) + [field.pad_token] * (n_rows * self.batch_size - len(text))
        stoi = field.vocab.stoi
        ids = np.fromiter((stoi[t] for t in text), dtype=np.int64, count=len(text))
        data = np.ascontiguousarray(ids.reshape(self.batch_size, -1).T)  # (rows, batch)
        dataset = Dataset(
            examples=self.dataset.examples, fields=[("text", field), ("target", field)]
        )
        while True:
            for i in range(0, len(self) * self.bptt_len, self.bptt_len):
                self.iterations += 1
                seq_len = min(self.bptt_len, len(data) - i - 1)
                batch_text = data[i : i + seq_len]
                batch_target = data[i + 1 : i + 1 + seq_len]
                if field.batch_first:
                    batch_text, batch_target = batch_text.T, batch_target.T
                yield Batch.fromvars(
                    dataset,
                    self.batch_size,
                    text=_as_tensor(batch_text, field.dtype, self.device),
                    target=_as_tensor(batch_target, field.dtype, self.device),
                )
            if not self.repeat:
                return
