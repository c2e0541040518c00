"""``ember.data.sampler``: PyTorch's ``torch.utils.data.sampler`` path.

The same classes as ``ember.data.Sampler`` and friends, under the module path programs
import (``from torch.utils.data.sampler import SubsetRandomSampler``).
"""
from __future__ import annotations

from ._sampler import (
    BatchSampler,
    BucketBatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "BucketBatchSampler"]
