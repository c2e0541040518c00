"""PyTorch's ``torch.nn.modules.instancenorm`` path: the instance-norm classes of
``ember.nn.modules.normalization`` (the same objects)."""
from __future__ import annotations

from .normalization import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    _InstanceNorm,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "_InstanceNorm"]
