"""Sparse COO kernels: the one-pass merge behind ``sparse + sparse`` on the CPU.

A merge of two unsorted index lists is inherently sequential (each step compares the heads of
both lists), so it has no vectorized NumPy form; this loop gives PyTorch's CPU result order
(equal indices meeting head to head share one output slot) in O(nnz_a + nnz_b).
"""

from __future__ import annotations

import numpy as np

from ._common import njit

__all__ = ["merge_positions"]


@njit
def _merge(ka, kb, pa, pb):
    na, nb = ka.shape[0], kb.shape[0]
    i = 0
    j = 0
    k = 0
    while i < na or j < nb:
        if j >= nb or (i < na and ka[i] < kb[j]):
            pa[i] = k
            i += 1
        elif i >= na or kb[j] < ka[i]:
            pb[j] = k
            j += 1
        else:
            pa[i] = k
            pb[j] = k
            i += 1
            j += 1
        k += 1
    return k


def merge_positions(ka: np.ndarray, kb: np.ndarray):
    """``(pa, pb, n)``: the output slot of every entry of the int64 key lists ``ka`` and
    ``kb`` and the number of slots."""
    pa = np.empty(ka.shape[0], dtype=np.int64)
    pb = np.empty(kb.shape[0], dtype=np.int64)
    if ka.shape[0] == 0 or kb.shape[0] == 0:  # nothing to merge: a concatenation
        pa[:] = np.arange(ka.shape[0])
        pb[:] = np.arange(ka.shape[0], ka.shape[0] + kb.shape[0])
        return pa, pb, ka.shape[0] + kb.shape[0]
    n = _merge(ka.astype(np.int64, copy=False), kb.astype(np.int64, copy=False), pa, pb)
    return pa, pb, int(n)
