"""Shared pieces of the CPU kernels: Numba setup, validation helpers, dtype handling.

Every kernel module imports this one first, so the threading layer below is chosen before any
``parallel=True`` kernel compiles or runs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numba
import numpy as np

# Threading layer. Numba's default order is tbb, then omp, then workqueue, and the PyPI wheels
# link the omp layer against GNU OpenMP (libgomp). Numba's docs ("The Threading Layers") state
# that GNU OpenMP is not fork-safe: a process forked after the parent has run a parallel region
# (exactly what a DataLoader with worker processes does) can hang or abort in its first parallel
# kernel. Numba's "forksafe" selection picks tbb where it is installed (fork- and thread-safe)
# and otherwise the built-in workqueue layer (fork-safe on every platform). workqueue is not
# thread-safe (two threads launching parallel kernels at once abort the process), so
# ``parallel_call`` below serializes parallel launches whenever workqueue is the active layer.
# A user's own NUMBA_THREADING_LAYER always wins.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "forksafe"

__all__ = [
    "njit",
    "njit_parallel",
    "parallel_call",
    "float_inputs",
    "check_ndim",
    "check_indices",
    "triple",
]


def njit(fn: Callable) -> Callable:
    """Serial kernel: compiled lazily on first call, cached on disk, releases the GIL."""
    return numba.njit(cache=True, nogil=True)(fn)


def njit_parallel(fn: Callable) -> Callable:
    """Parallel kernel (``prange`` loops run on Numba's thread pool)."""
    return numba.njit(cache=True, nogil=True, parallel=True)(fn)


_LAUNCH_LOCK = threading.Lock()
_lock_needed: bool | None = None


def _needs_lock() -> bool:
    global _lock_needed
    if _lock_needed is None:
        try:
            layer = numba.threading_layer()
        except ValueError:  # no parallel kernel has run yet: be careful until we know
            return True
        _lock_needed = layer == "workqueue"
    return _lock_needed


def parallel_call(kernel: Callable, *args: Any) -> Any:
    """Run a ``parallel=True`` kernel, serialized across threads when the layer is workqueue."""
    if _needs_lock():
        with _LAUNCH_LOCK:
            return kernel(*args)
    return kernel(*args)


# Work (in elements) below which the serial version of a kernel is faster than waking the pool.
PARALLEL_MIN_WORK = 1 << 15


def use_parallel(work: int) -> bool:
    """True when ``work`` elements are worth a parallel launch on this machine."""
    return work >= PARALLEL_MIN_WORK and numba.get_num_threads() > 1


_FLOAT_KINDS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_nd = np.ndarray
_min, _max = np.minimum.reduce, np.maximum.reduce


def float_inputs(op: str, *arrays: Any) -> tuple[list[np.ndarray], np.dtype]:
    """Check that ``arrays`` share one float dtype; return C-contiguous compute copies.

    float16 is upcast to float32 for the computation (the caller casts results back to the
    returned dtype). Mixed dtypes raise RuntimeError naming them.
    """
    dtype = arrays[0].dtype if arrays[0].__class__ is _nd else None
    if dtype in _FLOAT_KINDS:  # the common case, without a list built per check: one dtype,
        for a in arrays:       # contiguous NumPy arrays (an op's own arrays)
            if a.__class__ is not _nd or a.dtype != dtype or not a.flags.c_contiguous:
                break
        else:
            return list(arrays), dtype
    arrays = [np.asarray(a) for a in arrays]
    dtype = arrays[0].dtype
    for a in arrays:
        if a.dtype != dtype:
            raise RuntimeError(
                f"{op}(): expected all inputs to have the same dtype, got "
                + ", ".join(str(a.dtype) for a in arrays)
            )
    if dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point dtype, got {dtype}")
    if dtype in _FLOAT_KINDS:  # the common case: no copy where the arrays are contiguous
        return [np.ascontiguousarray(a) for a in arrays], dtype
    return [np.ascontiguousarray(a, dtype=np.float32) for a in arrays], dtype


def check_ndim(op: str, name: str, arr: np.ndarray, ndim: int, layout: str) -> None:
    """RuntimeError unless ``arr`` has ``ndim`` dimensions (``layout`` names them)."""
    if arr.ndim != ndim:
        raise RuntimeError(
            f"{op}(): expected {name} of shape {layout} ({ndim}-d), got shape {tuple(arr.shape)}"
        )


def check_indices(
    op: str,
    index: np.ndarray,
    size: int,
    what: str = "dimension 1",
    allow: int | None = None,
    noun: str = "index",
) -> np.ndarray:
    """Validate integer indices against ``[0, size)``; return them as contiguous int64.

    ``allow`` is one extra value accepted anywhere (an ``ignore_index``). The message names the
    op, the first offending value and the valid range.
    """
    index = np.asarray(index)
    if index.dtype.kind not in "iu":
        raise TypeError(f"{op}(): expected an integer index array, got dtype {index.dtype}")
    index = np.ascontiguousarray(index, dtype=np.int64)
    # two reductions, called as ufunc methods (the array methods add a Python wrapper each)
    if index.size == 0 or (_min(index, None) >= 0 and _max(index, None) < size):
        return index
    bad = (index < 0) | (index >= size)
    if allow is not None:
        bad &= index != allow
    if bad.any():
        value = int(index.reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]])
        raise IndexError(
            f"{op}(): {noun} {value} is out of bounds for {what} with size {size} "
            f"(valid range [0, {size}))"
        )
    return index


def triple(op: str, name: str, value: Sequence[int]) -> tuple[int, int, int]:
    """Check a 3-tuple of non-negative ints (d, h, w)."""
    try:  # (an unpacking, not a tuple built by a generator: pooling calls this five times)
        d, h, w = value
    except ValueError:
        raise RuntimeError(
            f"{op}(): expected {name} as a 3-tuple (d, h, w), got {value!r}"
        ) from None
    return int(d), int(h), int(w)
