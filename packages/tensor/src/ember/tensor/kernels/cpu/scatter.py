"""Scatter-add kernels: ``index_add`` and the embedding backward.

Parallel over the non-indexed dims (P and blocks of Q): two threads never write the same
element, so duplicates in ``index`` accumulate without atomics and in a fixed order.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._common import (
    check_indices,
    check_ndim,
    float_inputs,
    njit,
    njit_parallel,
    parallel_call,
    use_parallel,
)

__all__ = ["index_add", "embedding_backward"]


@njit
def _scatter_block(out, index, src, alpha, scale, skip, p, q0, q1):
    has_scale = scale.shape[0] > 0
    for n in range(index.shape[0]):
        m = index[n]
        if m == skip:
            continue
        a = alpha * scale[n] if has_scale else alpha
        for q in range(q0, q1):
            out[p, m, q] += a * src[p, n, q]


@njit
def _scatter_serial(out, index, src, alpha, scale, skip):
    for p in range(out.shape[0]):
        _scatter_block(out, index, src, alpha, scale, skip, p, 0, out.shape[2])


@njit_parallel
def _scatter_parallel(out, index, src, alpha, scale, skip, nqb):
    Q = out.shape[2]
    qchunk = (Q + nqb - 1) // nqb
    for t in prange(out.shape[0] * nqb):
        p = t // nqb
        q0 = (t % nqb) * qchunk
        q1 = min(Q, q0 + qchunk)
        _scatter_block(out, index, src, alpha, scale, skip, p, q0, q1)


def _scatter(out, index, src, alpha, scale, skip) -> None:
    # Measured (benchmarks/bench_kernels.py, 2 cores): splitting Q across threads is several
    # times slower than the serial loop (threads share cache lines of the same output rows), so
    # only a batch dim P with enough planes for every thread runs in parallel.
    P = out.shape[0]
    if use_parallel(src.size) and P >= 2 * numba.get_num_threads():
        parallel_call(_scatter_parallel, out, index, src, alpha, scale, skip, 1)
    else:
        _scatter_serial(out, index, src, alpha, scale, skip)


def index_add(out: np.ndarray, index: np.ndarray, src: np.ndarray, alpha=1) -> None:
    """In place: ``out[p, index[n], q] += alpha * src[p, n, q]``; duplicates accumulate.

    ``out`` is (P, M, Q), ``index`` (N,) integers in [0, M), ``src`` (P, N, Q) of out's dtype.

    >>> out = np.zeros((1, 3, 1)); index_add(out, np.array([0, 0]), np.ones((1, 2, 1)), 2.0)
    >>> out.ravel().tolist()
    [4.0, 0.0, 0.0]
    """
    op = "index_add"
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}(): out must be a numpy.ndarray, got {type(out).__name__}")
    src = np.asarray(src)
    index = np.asarray(index)
    check_ndim(op, "out", out, 3, "(P, M, Q)")
    check_ndim(op, "index", index, 1, "(N,)")
    check_ndim(op, "src", src, 3, "(P, N, Q)")
    P, M, Q = out.shape
    if src.shape != (P, index.shape[0], Q):
        raise RuntimeError(
            f"{op}(): src of shape {tuple(src.shape)} does not match out of shape "
            f"{tuple(out.shape)} and index of length {index.shape[0]}; expected src of shape "
            f"{(P, index.shape[0], Q)}"
        )
    if src.dtype != out.dtype:
        raise RuntimeError(f"{op}(): src dtype {src.dtype} does not match out dtype {out.dtype}")
    if not out.flags.writeable:
        raise RuntimeError(f"{op}(): out is read-only")
    index = check_indices(op, index, M)
    if src.size == 0:
        return
    if out.dtype.kind == "f":
        (work, srcc), dtype = float_inputs(op, out, src)
    elif out.dtype.kind in "iu":
        work, srcc = np.ascontiguousarray(out), np.ascontiguousarray(src)
    else:
        raise RuntimeError(f"{op}(): unsupported dtype {out.dtype}")
    # Python scalars, not NumPy ones: Numba dispatches on NumPy scalars ~100x slower
    a = float(alpha) if work.dtype.kind == "f" else int(alpha)
    empty = np.empty(0, dtype=work.dtype)
    _scatter(work, index, srcc, a, empty, -1)
    if work is not out:  # non-contiguous or float16 out: write the result back
        out[...] = work


def embedding_backward(
    grad: np.ndarray,
    indices: np.ndarray,
    num_weights: int,
    padding_idx: int,
    scale_grad_by_freq: bool,
) -> np.ndarray:
    """Gradient of an embedding lookup: ``(num_weights, D)`` zeros plus the rows of ``grad``.

    ``grad`` is (N, D), ``indices`` (N,) in [0, num_weights). Rows whose index equals
    ``padding_idx`` (-1: none) get no gradient; with ``scale_grad_by_freq`` each row is divided
    by how often its index occurs in ``indices`` (PyTorch semantics).

    >>> embedding_backward(np.ones((3, 2)), np.array([1, 1, 0]), 3, -1, True).tolist()
    [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    """
    op = "embedding_backward"
    grad = np.asarray(grad)
    indices = np.asarray(indices)
    check_ndim(op, "grad", grad, 2, "(N, D)")
    check_ndim(op, "indices", indices, 1, "(N,)")
    num_weights = int(num_weights)
    padding_idx = int(padding_idx)
    if grad.shape[0] != indices.shape[0]:
        raise RuntimeError(
            f"{op}(): grad of shape {tuple(grad.shape)} does not match indices of shape "
            f"{tuple(indices.shape)}"
        )
    if num_weights < 0:
        raise ValueError(f"{op}(): num_weights must be non-negative, got {num_weights}")
    if not -1 <= padding_idx < max(num_weights, 0):
        raise IndexError(
            f"{op}(): padding_idx {padding_idx} is out of bounds for num_weights {num_weights} "
            f"(valid range [0, {num_weights}) or -1 for none)"
        )
    indices = check_indices(op, indices, num_weights, what="the embedding (num_weights)")
    (g,), dtype = float_inputs(op, grad)
    D = g.shape[1]
    gw = np.zeros((num_weights, D), dtype=g.dtype)
    if g.size:
        if scale_grad_by_freq:
            counts = np.bincount(indices, minlength=num_weights)
            scale = (1.0 / counts[indices]).astype(g.dtype)
        else:
            scale = np.empty(0, dtype=g.dtype)
        _scatter(
            gw.reshape(1, num_weights, D),
            indices,
            g.reshape(1, -1, D),
            1.0,
            scale,
            int(padding_idx),
        )
    return gw.astype(dtype, copy=False)
