"""The factories' kernels: ``fill`` writes one value into every element of a C-contiguous array,
in place (what ``ones``, ``full`` and their ``_like`` forms write into their new array);
``arange_values`` and ``linspace_values`` write the float ranges of ``arange`` and
``linspace`` in one pass, where NumPy's arange, multiply, add and astype made four (256K
float32 values: 290 and 395 us against PyTorch's 125 and 266).

NumPy's ``ndarray.fill`` stores one element at a time through its strided-copy loop (19 us for
256x1024 float32 and 64 us for int64, against PyTorch's 13 and 25); this loop compiles to wide
vector stores (15 and 29). 1- and 2-byte dtypes (bool, int8, float16, bfloat16, ...), which
NumPy fills as fast, and arrays that are not C-contiguous take NumPy's fill.
"""

from __future__ import annotations

import numpy as np

from ._common import njit

__all__ = ["fill", "arange_values", "linspace_values"]

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


# Range values: float64 arithmetic (the product and the sum rounded apart, as NumPy's passes
# round them: no fastmath, so no fused multiply-add), each value rounded once into float32 or
# float64; any other dtype gets the float64 values, which the caller converts.
_DIRECT = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


@njit
def _arange(out, start, step):
    for i in range(out.shape[0]):
        out[i] = i * step + start


@njit
def _linspace(out, start, end, step):
    # PyTorch's two-sided formula: the first half counts up from start, the rest down from end
    n = out.shape[0]
    half = n // 2
    for i in range(half):
        out[i] = i * step + start
    for i in range(half, n):
        out[i] = (n - 1 - i) * -step + end


def arange_values(n: int, start, step, dtype) -> np.ndarray:
    """``start + i * step`` for ``i < n`` in float64, in ``dtype`` where it is float32 or
    float64 (else float64).

    >>> arange_values(4, 0.5, 0.25, np.dtype(np.float32)).tolist()
    [0.5, 0.75, 1.0, 1.25]
    """
    out = np.empty(n, dtype if dtype in _DIRECT else np.float64)
    _arange(out, float(start), float(step))
    return out


def linspace_values(steps: int, start, end, dtype) -> np.ndarray:
    """``steps`` values from ``start`` to ``end`` inclusive in float64 (PyTorch's formula:
    ``start + i * step`` over the first half, ``end - (steps - 1 - i) * step`` over the
    rest), in ``dtype`` where it is float32 or float64 (else float64).

    >>> linspace_values(5, 0, 1, np.dtype(np.float64)).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    out = np.empty(steps, dtype if dtype in _DIRECT else np.float64)
    start, end = float(start), float(end)
    if steps > 1:
        _linspace(out, start, end, (end - start) / (steps - 1))
    else:
        _linspace(out, start, start, 0.0)  # one value: start itself
    return out
