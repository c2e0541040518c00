"""PyTorch's ``torch.utils.data`` submodule paths hold the same objects under ember.data."""
from __future__ import annotations

import importlib

import pytest

import ember.data as data
import ember.tensor as et

PATHS = {
    "ember.data.dataloader": ["DataLoader", "default_collate", "default_convert",
                              "get_worker_info", "Dataset", "IterableDataset", "Sampler"],
    "ember.data.dataset": ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset",
                           "Subset", "random_split"],
    "ember.data.sampler": ["Sampler", "SequentialSampler", "RandomSampler",
                           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"],
    "ember.data.distributed": ["DistributedSampler"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_submodule_exports_the_same_objects(path):
    mod = importlib.import_module(path)
    for name in PATHS[path]:
        assert getattr(mod, name) is getattr(data, name), (path, name)
    assert set(PATHS[path]) <= set(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), (path, name)


def test_from_imports_as_programs_write_them():
    from ember.data.dataloader import DataLoader
    from ember.data.dataset import Dataset
    from ember.data.distributed import DistributedSampler
    from ember.data.sampler import SubsetRandomSampler

    assert DataLoader is data.DataLoader and Dataset is data.Dataset
    assert DistributedSampler is data.DistributedSampler
    assert SubsetRandomSampler is data.SubsetRandomSampler


def test_dataloader_iterator_classes_under_pytorchs_private_names():
    from ember.data import dataloader

    loader = data.DataLoader(data.TensorDataset(et.arange(4)),
                             batch_size=2)
    it = iter(loader)
    assert isinstance(it, dataloader._BaseDataLoaderIter)
    assert isinstance(it, dataloader._SingleProcessDataLoaderIter)
    assert issubclass(dataloader._MultiProcessingDataLoaderIter, dataloader._BaseDataLoaderIter)
