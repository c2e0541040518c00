"""ChainDataset and StackDataset: items against the datasets they combine, their lengths,
batched reads (``__getitems__``), DataLoader batches, and PyTorch's errors."""
from __future__ import annotations

import pytest

import ember.tensor as et
from ember.data import (
    ChainDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
)
from ember.data import dataset as dataset_module


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


class Unsized(IterableDataset):
    def __iter__(self):
        return iter([7])


class Batched(Dataset):
    """A map-style dataset that reads batches itself, counting how often."""

    def __init__(self, values):
        self.values = values
        self.batched_reads = 0

    def __getitem__(self, i):
        return self.values[i]

    def __getitems__(self, indices):
        self.batched_reads += 1
        return [self.values[i] * 1 for i in indices]

    def __len__(self):
        return len(self.values)


def test_chain_dataset_iterates_each_stream_in_turn():
    a, b = Stream([1, 2]), Stream([3, 4, 5])
    chain = ChainDataset([a, b])
    assert list(chain) == [1, 2, 3, 4, 5]
    assert len(chain) == 5
    assert list(chain) == [1, 2, 3, 4, 5]  # iterable again
    assert list(a + b) == [1, 2, 3, 4, 5] and isinstance(a + b, ChainDataset)
    nested = ChainDataset([chain, Stream([6])])
    assert list(nested) == [1, 2, 3, 4, 5, 6] and len(nested) == 6


def test_chain_dataset_in_a_dataloader():
    loader = DataLoader(ChainDataset([Stream([1.0, 2.0, 3.0]), Stream([4.0, 5.0])]),
                        batch_size=2)
    assert [b.tolist() for b in loader] == [[1.0, 2.0], [3.0, 4.0], [5.0]]


def test_chain_dataset_errors_like_torch():
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Stream([1]), [2, 3]]))
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(ChainDataset([TensorDataset(et.arange(2))]))
    with pytest.raises(TypeError):
        len(ChainDataset([Unsized()]))
    assert list(ChainDataset([Unsized()])) == [7]


def test_stack_dataset_tuple_and_dict_items():
    xs = TensorDataset(et.arange(4) * 10)
    labels = ["a", "b", "c", "d"]
    tup = StackDataset(xs, labels)
    assert len(tup) == 4
    item = tup[2]
    assert isinstance(item, tuple) and item[0][0].item() == 20 and item[1] == "c"
    d = StackDataset(x=xs, label=labels)
    assert list(d[3]) == ["x", "label"]
    assert d[3]["x"][0].item() == 30 and d[3]["label"] == "d"
    assert d.datasets["label"] is labels and tup.datasets[1] is labels


def test_stack_dataset_batched_reads_use_each_datasets_getitems():
    left, right = Batched([1, 2, 3, 4]), [10, 20, 30, 40]
    tup = StackDataset(left, right)
    assert tup.__getitems__([3, 0]) == [(4, 40), (1, 10)]
    assert left.batched_reads == 1  # one batched read per call, not one per item
    d = StackDataset(p=left, q=Subset(right, [3, 2, 1, 0]))
    assert d.__getitems__([0, 1]) == [{"p": 1, "q": 40}, {"p": 2, "q": 30}]

    class Short(Batched):
        def __getitems__(self, indices):
            return [0]
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. "
                                         "Expected 2, got 1"):
        StackDataset(Short([1, 2]), [1, 2]).__getitems__([0, 1])


def test_stack_dataset_in_a_dataloader_collates_per_field():
    ds = StackDataset(x=TensorDataset(et.arange(6, dtype=et.float32)), y=list(range(6)))
    batches = list(DataLoader(ds, batch_size=4))
    assert len(batches) == 2
    assert batches[0]["x"][0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert batches[0]["y"].tolist() == [0, 1, 2, 3] and batches[1]["y"].tolist() == [4, 5]


def test_stack_dataset_errors_like_torch():
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a=[1, 2], b=[1])
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset([1], b=[2])


def test_module_path_exports():
    assert dataset_module.ChainDataset is ChainDataset
    assert dataset_module.StackDataset is StackDataset
