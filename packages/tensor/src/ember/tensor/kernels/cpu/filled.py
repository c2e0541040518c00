"""``fill``: one value into every element of a C-contiguous array, in place (what the filled
factories ``ones``, ``full`` and their ``_like`` forms write into their new array).

NumPy's ``ndarray.fill`` stores one element at a time through its strided-copy loop (19 us for
256x1024 float32 and 64 us for int64, against PyTorch's 13 and 25); this loop compiles to wide
vector stores (15 and 29). 1- and 2-byte dtypes (bool, int8, float16, bfloat16, ...), which
NumPy fills as fast, and arrays that are not C-contiguous take NumPy's fill.
"""

from __future__ import annotations

import numpy as np

from ._common import njit

__all__ = ["fill"]

# the dtypes the loop stores faster than NumPy (4 bytes and more: NumPy sets 1- and 2-byte
# elements as fast), each with the Python number class that carries its values exactly (a
# float32 as a float, a complex64 as a complex): Numba types a Python number ~0.6 us faster
# than a NumPy scalar, whose .item() costs as much again; uint64 stays a NumPy scalar (Numba
# types a Python int as int64, which its upper half overflows)
_PYTHON = {np.dtype(t): c for c, ts in (
    (int, (np.int32, np.int64, np.uint32)),
    (np.uint64, (np.uint64,)),
    (float, (np.float32, np.float64)),
    (complex, (np.complex64, np.complex128))) for t in ts}


@njit
def _fill(out, value):
    flat = out.reshape(out.size)  # (C-contiguous: a view)
    for i in range(flat.shape[0]):
        flat[i] = value


def fill(out: np.ndarray, value) -> None:
    """Write ``value`` (a scalar that converts to ``out``'s dtype without loss, as the
    factories' checked scalars do) into every element of ``out``, in place.

    >>> a = np.empty((2, 2), np.int64); fill(a, np.int64(7)); a.tolist()
    [[7, 7], [7, 7]]
    """
    py = _PYTHON.get(out.dtype)
    if py is not None and out.flags.c_contiguous:
        _fill(out, py(value))
    else:
        out.fill(value)
