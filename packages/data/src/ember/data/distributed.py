"""``ember.data.distributed``: PyTorch's ``torch.utils.data.distributed`` path.

``from torch.utils.data.distributed import DistributedSampler`` becomes
``from ember.data.distributed import DistributedSampler`` (the same class as
``ember.data.DistributedSampler``).
"""
from __future__ import annotations

from ._sampler import DistributedSampler

__all__ = ["DistributedSampler"]
