"""``torch.backends.cudnn``: ember has no cuDNN (convolutions on the GPU are im2col and cuBLAS
GEMMs), so :func:`is_available` is False; ``enabled``, ``benchmark``, ``deterministic`` and
``allow_tf32`` keep what a script sets, with PyTorch's defaults."""
from __future__ import annotations

import contextlib

__all__ = ["is_available", "version", "flags", "enabled", "benchmark", "deterministic",
           "allow_tf32", "benchmark_limit"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """False: ember does not use cuDNN."""
    return False


def version():
    """None, as PyTorch's without cuDNN."""
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Set the switches for the ``with`` block (PyTorch's defaults for the arguments), then
    restore them."""
    g = globals()
    new = {"enabled": enabled, "benchmark": benchmark, "deterministic": deterministic,
           "allow_tf32": allow_tf32}
    old = {k: g[k] for k in new}
    g.update(new)
    try:
        yield
    finally:
        g.update(old)
