"""``ember.data.dataloader``: PyTorch's ``torch.utils.data.dataloader`` path.

The same objects as ``ember.data.DataLoader`` and friends, under the module path programs
import (``from torch.utils.data.dataloader import DataLoader, default_collate``).
"""
from __future__ import annotations

from ._collate import default_collate, default_convert
from ._dataloader import DataLoader
from ._dataloader import _BaseIter as _BaseDataLoaderIter
from ._dataloader import _MultiProcessIter as _MultiProcessingDataLoaderIter
from ._dataloader import _SingleProcessIter as _SingleProcessDataLoaderIter
from ._dataset import Dataset, IterableDataset
from ._sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ._worker import WorkerInfo, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info",
           "WorkerInfo", "Dataset", "IterableDataset", "Sampler", "SequentialSampler",
           "RandomSampler", "BatchSampler", "_BaseDataLoaderIter",
           "_SingleProcessDataLoaderIter", "_MultiProcessingDataLoaderIter"]
