"""``torch.backends.mps``: Apple's Metal backend, which ember does not have."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: ember runs on NumPy/Numba (CPU) and CuPy (CUDA) only."""
    return False


def is_built() -> bool:
    """False: ember runs on NumPy/Numba (CPU) and CuPy (CUDA) only."""
    return False
