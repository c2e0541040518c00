"""ember.data: datasets, samplers and the DataLoader (PyTorch's ``torch.utils.data`` names).

PyTorch's submodule paths work too: ``ember.data.dataloader``, ``.dataset``, ``.sampler``
and ``.distributed`` hold the same objects.

The torchtext-style text pipeline lives in ``ember.data.text``.
"""

from . import dataloader, dataset, distributed, sampler
from ._collate import default_collate, default_convert
from ._dataloader import DataLoader
from ._dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ._sampler import (
    BatchSampler,
    BucketBatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from ._worker import WorkerInfo, get_worker_info

__version__ = "0.1.0"

__all__ = [
    "BatchSampler",
    "BucketBatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "__version__",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
