"""``ember.data.dataset``: PyTorch's ``torch.utils.data.dataset`` path.

The same classes as ``ember.data.Dataset`` and friends, under the module path programs
import (``from torch.utils.data.dataset import Dataset, Subset``).
"""
from __future__ import annotations

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

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]
