"""PyTorch's ``torch.nn.modules.batchnorm`` path: the batch-norm classes of
``ember.nn.modules.normalization`` (the same objects)."""
from __future__ import annotations

from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _LazyNormBase,
    _NormBase,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm", "_BatchNorm", "_LazyNormBase", "_NormBase"]
