"""Scans along the middle dim of (P, M, Q): cumulative sum / product with a running value
in a wider dtype, and the running maximum / minimum with its index.

NumPy's ``cumsum`` / ``ufunc.accumulate`` along the last axis walks the array with the scanned
axis outermost, about 5 ns an element at 256x1024 where this loop (scanned dim outer, Q
running values inner) costs under 1 ns; and it needs a second pass to round a float64 running
sum back to float32.
"""

from __future__ import annotations

import numpy as np

from ._common import check_ndim, njit

__all__ = ["scan_dim"]


@njit
def _sum_prod(x, out, start, prod):
    P, M, Q = x.shape
    if Q == 1:  # along the last dim: the running value stays in a register
        for p in range(P):
            a = start[0]
            for m in range(M):
                if prod:
                    a *= x[p, m, 0]
                else:
                    a += x[p, m, 0]
                out[p, m, 0] = a
        return
    acc = np.empty(Q, dtype=start.dtype)
    for p in range(P):
        acc[:] = start[0]
        for m in range(M):
            for q in range(Q):
                if prod:
                    acc[q] *= x[p, m, q]
                else:
                    acc[q] += x[p, m, q]
                out[p, m, q] = acc[q]


@njit
def _better(v, best, largest):
    # v >= best (v <= best), or v NaN; never a number over a NaN best. (Written as "not
    # below" and the NaN test after it, LLVM keeps the scan branch-free: 1.3x faster than
    # testing v's NaN first, at 256x1024 float32.)
    return (not (v < best if largest else v > best)) and (best == best or v != v)


@njit
def _extreme(x, out, idx, largest):
    # PyTorch's rule: a tie moves the index on (>= / <=), a NaN wins and stays
    P, M, Q = x.shape
    if M == 0:
        return
    if Q == 1:  # along the last dim: the running extreme stays in a register
        for p in range(P):
            best = x[p, 0, 0]
            bi = 0
            out[p, 0, 0] = best
            idx[p, 0, 0] = 0
            for m in range(1, M):
                v = x[p, m, 0]
                b = _better(v, best, largest)  # selects, not branches: no mispredictions
                best = v if b else best
                bi = m if b else bi
                out[p, m, 0] = best
                idx[p, m, 0] = bi
        return
    for p in range(P):
        for q in range(Q):
            out[p, 0, q] = x[p, 0, q]
            idx[p, 0, q] = 0
        for m in range(1, M):
            for q in range(Q):
                v = x[p, m, q]
                best = out[p, m - 1, q]
                if _better(v, best, largest):
                    out[p, m, q] = v
                    idx[p, m, q] = m
                else:
                    out[p, m, q] = best
                    idx[p, m, q] = idx[p, m - 1, q]


@njit
def _extreme_into(x, out, idx, largest):
    # _extreme into outputs of any C-contiguous shape with x's elements, seen as x's
    # (P, M, Q) here (a reshape in Numba is free; two in Python cost a fifth of a 4x64 scan)
    _extreme(x, out.reshape(x.shape), idx.reshape(x.shape), largest)


_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))  # (made once, not per call)
_F32 = np.dtype(np.float32)


def _native(dt: np.dtype) -> bool:
    return dt.kind in "biuc" or dt in _FLOATS


# (x's dtype, op, acc_dtype) -> (the dtype x runs in, or None for its own; the running value's
# start, a 1-element array, or None for max / min; whether it is a product): worked out once
_plans: dict = {}


def _plan(dt: np.dtype, op: str, acc_dtype) -> tuple:
    if op not in ("sum", "prod", "max", "min"):
        raise ValueError(f"scan_dim(): op must be 'sum', 'prod', 'max' or 'min', got {op!r}")
    work = None if _native(dt) else _F32
    if op in ("max", "min"):
        return work, None, False
    acc = np.dtype(acc_dtype if acc_dtype is not None else work if work is not None else dt)
    if not _native(acc):
        acc = _F32
    return work, (np.ones if op == "prod" else np.zeros)(1, dtype=acc), op == "prod"


def scan_dim(x: np.ndarray, op: str, acc_dtype=None) -> tuple[np.ndarray, np.ndarray | None]:
    """Scan ``x`` (P, M, Q) along dim 1: ``op`` "sum" or "prod" (running value in
    ``acc_dtype``, each output rounded to ``x``'s dtype) returns ``(out, None)``; "max" or
    "min" returns ``(values, int64 indices)``. Dtypes Numba has no arithmetic for (float16)
    run in float32.

    >>> scan_dim(np.array([[[1.0], [3.0], [2.0]]]), "max")[1].ravel().tolist()
    [0, 1, 1]
    """
    if x.__class__ is not np.ndarray:
        x = np.asarray(x)
    if x.ndim != 3:
        check_ndim("scan_dim", "x", x, 3, "(P, M, Q)")
    dt = x.dtype
    key = (dt, op, acc_dtype)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _plan(dt, op, acc_dtype)
    work, start, prod = plan
    if start is None:
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        return _extreme_run(x, x.shape, op == "max")
    if work is not None:
        x = x.astype(work, order="C")
    elif not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    out = np.empty(x.shape, x.dtype)  # (np.empty_like costs twice as much)
    if out.size:
        _sum_prod(x, out, start, prod)
    return (out if work is None else out.astype(dt)), None


def _extreme_run(x: np.ndarray, shape: tuple, largest: bool) -> tuple:
    """:func:`scan_dim`'s "max" (``largest``) / "min" of a C-contiguous (P, M, Q) array ``x``,
    its values and indices shaped ``shape`` (as many elements): ember.tensor's cummax / cummin
    call it directly with the (P, M, Q) view of their input, whose shape their results take,
    without a kernel-table lookup, scan_dim's checks and two reshapes."""
    dt = x.dtype
    work = x if dt in _FLOATS or dt.kind in "biuc" else x.astype(_F32)
    out = np.empty(shape, work.dtype)  # (np.empty_like costs twice as much)
    idx = np.empty(shape, np.int64)
    if out.size:
        _extreme_into(work, out, idx, largest)
    return (out if work is x else out.astype(dt)), idx
