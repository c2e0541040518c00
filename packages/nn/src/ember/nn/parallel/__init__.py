"""``ember.nn.parallel``: PyTorch's ``torch.nn.parallel`` path for data-parallel wrappers.

``DistributedDataParallel`` lives in the ember-distributed distribution (ember-nn does not
depend on it); it is looked up here on first use, so ported code that imports it from
``ember.nn.parallel`` works when ember-distributed is installed.
"""
from __future__ import annotations

__all__ = ["DistributedDataParallel"]


def __getattr__(name: str):
    if name == "DistributedDataParallel":
        try:
            from ember.distributed import DistributedDataParallel
        except ImportError as exc:
            raise ImportError("ember.nn.parallel.DistributedDataParallel needs the "
                              "ember-distributed distribution: pip install "
                              "'ember-distributed[mpi]'") from exc
        return DistributedDataParallel
    raise AttributeError(f"module 'ember.nn.parallel' has no attribute {name!r}")
