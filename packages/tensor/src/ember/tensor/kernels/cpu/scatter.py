"""Scatter-add kernels: ``index_add`` and the embedding backward; gathers and scatters along
one dim with an index per element (``gather_dim``, ``scatter_dim``: gather, take_along_dim,
scatter, scatter_add and their backwards).

index_add runs parallel over the non-indexed dims (P and blocks of Q): two threads never write
the same element, so duplicates in ``index`` accumulate without atomics and in a fixed order.
gather_dim / scatter_dim run one serial pass that checks each index as it goes (scatter_dim
checks all of them before writing anything): at 256x1024 they are 3-6x faster than NumPy's
``take_along_axis`` / fancy-index assignment and its separate min/max range check.
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

__all__ = ["index_add", "embedding_backward", "gather_dim", "scatter_dim", "index_bounds"]


@njit
def _scatter_block(flat_out, index, flat_src, alpha, scale, skip, M, N, Q, p, q0, q1):
    # the (P, M, Q) out and (P, N, Q) src as flat C-contiguous arrays, index in [0, M) (or
    # skip): each element is addressed by an unsigned flat offset, so Numba emits no 3-d
    # address and no negative-index wraparound test per element
    has_scale = scale.shape[0] > 0
    Qu = np.uint64(Q)
    out_row = np.uint64(p * M)  # the first row of plane p, in rows of Q
    src_row = np.uint64(p * N)
    lo = np.uint64(q0)
    hi = np.uint64(q1)
    for n in range(N):
        m = index[n]
        if m == skip:
            continue
        a = alpha * scale[n] if has_scale else alpha
        o = (out_row + np.uint64(m)) * Qu
        s = (src_row + np.uint64(n)) * Qu
        for q in range(lo, hi):
            flat_out[o + q] += a * flat_src[s + q]


@njit
def _scatter_serial(out, index, src, alpha, scale, skip):
    flat_out = out.reshape(-1)
    flat_src = src.reshape(-1)
    M, N, Q = out.shape[1], src.shape[1], out.shape[2]
    for p in range(out.shape[0]):
        _scatter_block(flat_out, index, flat_src, alpha, scale, skip, M, N, Q, p, 0, Q)


@njit_parallel
def _scatter_parallel(out, index, src, alpha, scale, skip, nqb):
    flat_out = out.reshape(-1)
    flat_src = src.reshape(-1)
    M, N, Q = out.shape[1], src.shape[1], out.shape[2]
    qchunk = (Q + nqb - 1) // nqb
    for t in prange(out.shape[0] * nqb):
        p = t // nqb
        q0 = (t % nqb) * qchunk
        q1 = min(Q, q0 + qchunk)
        _scatter_block(flat_out, index, flat_src, alpha, scale, skip, M, N, Q, p, q0, q1)


def _scatter(out, index, src, alpha, scale, skip) -> None:
    # Measured (benchmarks/bench_kernels.py, 2 cores): splitting Q across threads is several
    # times slower than the serial loop (threads share cache lines of the same output rows), so
    # only a batch dim P with enough planes for every thread runs in parallel.
    P = out.shape[0]
    if use_parallel(src.size) and P >= 2 * numba.get_num_threads():
        parallel_call(_scatter_parallel, out, index, src, alpha, scale, skip, 1)
    else:
        _scatter_serial(out, index, src, alpha, scale, skip)


_umax = np.maximum.reduce


def _checked_indices(op: str, index: np.ndarray, size: int, what: str = "dimension 1"):
    """:func:`check_indices`' contiguous int64 indices in ``[0, size)``, checked with one
    maximum of them seen as unsigned (a negative index is larger than any size); its error
    where one is out of range."""
    if index.dtype.kind not in "iu":
        return check_indices(op, index, size, what)  # its TypeError
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.size and int(_umax(index.view(np.uint64), axis=None)) >= size:
        return check_indices(op, index, size, what)  # its IndexError
    return index


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
    _index_add_run(out, _checked_indices(op, index, M), src, alpha)


_NO_SCALE: dict = {}  # dtype -> an empty array: the kernel's "no scale" (never written)


def _index_add_run(out: np.ndarray, index: np.ndarray, src: np.ndarray, alpha) -> None:
    """:func:`index_add` of arrays it has checked (``ember.tensor._indexing`` calls it
    directly with its own checked arrays): ``out`` (P, M, Q) writable, ``index`` (N,)
    contiguous int64 in ``[0, M)``, ``src`` (P, N, Q) of ``out``'s dtype."""
    if src.size == 0:
        return
    kind = out.dtype.kind
    if kind == "f":
        (work, srcc), dtype = float_inputs("index_add", out, src)
    elif kind in "iu":
        work, srcc = np.ascontiguousarray(out), np.ascontiguousarray(src)
    else:
        raise RuntimeError(f"index_add(): unsupported dtype {out.dtype}")
    # Python scalars, not NumPy ones: Numba dispatches on NumPy scalars ~100x slower
    a = float(alpha) if work.dtype.kind == "f" else int(alpha)
    empty = _NO_SCALE.get(work.dtype)
    if empty is None:
        empty = _NO_SCALE[work.dtype] = np.empty(0, dtype=work.dtype)
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
    indices = _checked_indices(op, indices, num_weights, what="the embedding (num_weights)")
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


# --------------------------------------------------------------------------- gather / scatter
# dtypes Numba has no arithmetic for: a gather or a plain scatter moves them as same-size
# unsigned integers; an accumulating scatter computes in float32 and rounds back.
def _numba_dtype(a: np.ndarray) -> bool:
    return a.dtype.kind in "biuc" or a.dtype in _FLOATS


_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


_BITS = {2: np.uint16, 1: np.uint8}
_nd = np.ndarray


@njit
def _bounds(index):
    # the smallest and the largest of a 1-D integer array (not empty), in one pass
    lo = hi = index[0]
    for k in range(1, index.size):
        v = index[k]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


def index_bounds(index: np.ndarray) -> tuple[int, int]:
    """``(min, max)`` of a non-empty integer array, in one pass (NumPy's ``min`` and ``max``
    make two, and each reduction's call costs more than a small array's whole pass).

    >>> index_bounds(np.array([[3, -1], [2, 7]]))
    (-1, 7)
    """
    if index.dtype.kind not in "iub":
        raise TypeError(f"index_bounds(): expected an integer array, got dtype {index.dtype}")
    if not index.size:
        raise ValueError("index_bounds(): the array is empty")
    lo, hi = _bounds(index.ravel())
    return int(lo), int(hi)


@njit
def _first_bad(index, M):
    # one vectorized pass, the maximum of the indices seen as unsigned (a negative one is
    # larger than any size), says whether some index is out of [0, M); the position is looked
    # for only then
    UM = np.uint64(M)
    top = np.uint64(0)
    for k in range(index.size):
        top = max(top, np.uint64(index[k]))
    if top >= UM:
        for k in range(index.size):
            if np.uint64(index[k]) >= UM:
                return k
    return -1


@njit
def _gather_kernel(x3, index3, out3):
    # C-contiguous x (P, M, Q), index and out (P, N, Q), flattened here (a reshape in the
    # wrapper costs more than the loop at small sizes); Q == 1 (along the last dim) has a loop
    # of its own, where an inner loop of one would cost more than the copy. The checked
    # indices address each plane's slice as unsigned integers: no wraparound test per element
    # (twice as fast along dim 0 at 256x1024)
    P, M, Q = x3.shape
    N = index3.shape[1]
    x, index, out = x3.reshape(-1), index3.reshape(-1), out3.reshape(-1)
    bad = _first_bad(index, M)
    if bad >= 0:
        return bad
    if Q == 1:  # (each plane's slices indexed from 0: no wraparound test on k)
        for p in range(P):
            xp = x[p * M:p * M + M]
            ip, op = index[p * N:p * N + N], out[p * N:p * N + N]
            for k in range(N):
                op[k] = xp[np.uint64(ip[k])]
        return -1
    UQ = np.uint64(Q)
    for p in range(P):
        xp = x[p * M * Q:(p + 1) * M * Q]
        for n in range(N):
            k0 = (p * N + n) * Q
            orow = out[k0:k0 + Q]
            irow = index[k0:k0 + Q]
            for q in range(Q):
                orow[q] = xp[np.uint64(irow[q]) * UQ + np.uint64(q)]
    return -1


@njit
def _scatter_one(out, t, src, k, mode):
    if mode == 0:
        out[t] = src[k]
    elif mode == 1:
        out[t] += src[k]
    else:
        out[t] *= src[k]


@njit
def _scatter_extreme(out, t, src, k, mode):
    # amax (3) / amin (4): a NaN on either side wins, as np.maximum / np.minimum (its own
    # function: complex numbers have no order, and the arithmetic modes take them)
    v, o = src[k], out[t]
    if v != v or (v > o if mode == 3 else v < o):
        out[t] = v


@njit
def _scatter_kernel(out3, index3, src3, mode):
    # C-contiguous out (P, M, Q), index and src (P, N, Q), flattened here; every index is
    # checked before anything is written, then addresses its plane's slice as an unsigned
    # integer (no wraparound test per element)
    P, M, Q = out3.shape
    N = index3.shape[1]
    out, index, src = out3.reshape(-1), index3.reshape(-1), src3.reshape(-1)
    bad = _first_bad(index, M)
    if bad >= 0:
        return bad
    if Q == 1:  # (each plane's slices indexed from 0: no wraparound test on k)
        for p in range(P):
            op = out[p * M:p * M + M]
            ip, sp = index[p * N:p * N + N], src[p * N:p * N + N]
            for k in range(N):
                _scatter_one(op, np.uint64(ip[k]), sp, k, mode)
        return -1
    UQ = np.uint64(Q)
    k = 0
    for p in range(P):
        op = out[p * M * Q:(p + 1) * M * Q]
        for _ in range(N):
            for q in range(Q):
                _scatter_one(op, np.uint64(index[k]) * UQ + np.uint64(q), src, k, mode)
                k += 1
    return -1


@njit
def _scatter_extreme_kernel(out3, index3, src3, mode):
    # _scatter_kernel's loops for amax / amin, compiled only for dtypes with an order
    P, M, Q = out3.shape
    N = index3.shape[1]
    out, index, src = out3.reshape(-1), index3.reshape(-1), src3.reshape(-1)
    bad = _first_bad(index, M)
    if bad >= 0:
        return bad
    UQ = np.uint64(Q)
    k = 0
    for p in range(P):
        op = out[p * M * Q:(p + 1) * M * Q]
        for _ in range(N):
            for q in range(Q):
                _scatter_extreme(op, np.uint64(index[k]) * UQ + np.uint64(q), src, k, mode)
                k += 1
    return -1


@njit
def _first_bad_row(index2, M, Q):
    # the flat position in the (P, N, Q) index of the first row index outside [0, M), or -1
    P, N = index2.shape
    UM = np.uint64(M)
    for p in range(P):
        for n in range(N):
            if np.uint64(index2[p, n]) >= UM:
                return (p * N + n) * Q
    return -1


@njit
def _scatter_rows_kernel(out3, index2, src3, mode):
    # _scatter_kernel for an index constant along Q (a broadcast one, ``index2`` its (P, N)
    # rows): each row of Q elements moves as one contiguous loop per mode, which vectorizes,
    # where the per-element index read and mode test cost 5x as much (index_reduce)
    Q = out3.shape[2]
    bad = _first_bad_row(index2, out3.shape[1], Q)
    if bad >= 0:
        return bad
    for p in range(index2.shape[0]):
        for n in range(index2.shape[1]):
            orow = out3[p, np.uint64(index2[p, n])]
            srow = src3[p, n]
            if mode == 0:
                for q in range(Q):
                    orow[q] = srow[q]
            elif mode == 1:
                for q in range(Q):
                    orow[q] += srow[q]
            else:
                for q in range(Q):
                    orow[q] *= srow[q]
    return -1


@njit
def _scatter_extreme_rows_kernel(out3, index2, src3, mode):
    # _scatter_rows_kernel's loops for amax / amin, compiled only for dtypes with an order
    Q = out3.shape[2]
    bad = _first_bad_row(index2, out3.shape[1], Q)
    if bad >= 0:
        return bad
    for p in range(index2.shape[0]):
        for n in range(index2.shape[1]):
            orow = out3[p, np.uint64(index2[p, n])]
            srow = src3[p, n]
            for q in range(Q):
                _scatter_extreme(orow, q, srow, q, mode)
    return -1


def gather_dim(x: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, int]:
    """``out[p, n, q] = x[p, index[p, n, q], q]`` for ``x`` (P, M, Q) and ``index`` (P, N, Q).

    Returns ``(out, bad)``: ``bad`` is the flat position in ``index`` of its first value outside
    ``[0, M)`` (``out`` then holds garbage), or -1.

    >>> out, bad = gather_dim(np.array([[[1.], [2.]]]), np.array([[[1], [1], [0]]]))
    >>> out.ravel().tolist(), bad
    ([2.0, 2.0, 1.0], -1)
    """
    op = "gather_dim"
    if x.__class__ is not _nd:
        x = np.asarray(x)
    if index.__class__ is not _nd:
        index = np.asarray(index)
    # (each check's helper is called only to raise: the checks are most of a small call)
    if index.ndim != 3:
        check_ndim(op, "index", index, 3, "(P, N, Q)")
    if index.dtype.kind not in "iu":
        raise TypeError(f"{op}(): expected an integer index array, got dtype {index.dtype}")
    if x.ndim != 3:
        check_ndim(op, "x", x, 3, "(P, M, Q)")
    P, N, Q = index.shape
    if x.shape[0] != P or x.shape[2] != Q:
        raise RuntimeError(f"{op}(): index of shape {tuple(index.shape)} does not match x of "
                           f"shape {tuple(x.shape)} outside dim 1")
    return _gather_run(x, index)


def _gather_run(x: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`gather_dim` of arrays it has checked (``ember.tensor._scatter``'s gather calls
    it directly with its own checked arrays): ``x`` (P, M, Q), ``index`` (P, N, Q) of an
    integer dtype."""
    if not index.flags.c_contiguous:
        index = np.ascontiguousarray(index)
    # (a view, a copy or a reshape costs more than a small gather: each is made only if needed)
    dt = x.dtype
    work = x if dt.kind in "biuc" or dt in _FLOATS else x.view(_BITS[dt.itemsize])
    if not work.flags.c_contiguous:
        work = np.ascontiguousarray(work)
    out = np.empty(index.shape, dtype=work.dtype)
    bad = -1
    if out.size:
        bad = _gather_kernel(work, index, out)
    return (out if work is x else out.view(x.dtype)), bad


_MODES = {"set": 0, "add": 1, "multiply": 2, "amax": 3, "amin": 4}


def scatter_dim(out: np.ndarray, index: np.ndarray, src: np.ndarray, reduce: str) -> int:
    """In place: ``out[p, index[p, n, q], q] = src[p, n, q]`` (``reduce`` "set"), ``+=``
    ("add", duplicates summed), ``*=`` ("multiply") or the running maximum / minimum ("amax",
    "amin"; NaN propagates), for ``out`` (P, M, Q) and ``index``, ``src`` (P, N, Q) (``src``
    may be a broadcast view).

    Returns the flat position in ``index`` of its first value outside ``[0, M)``, writing
    nothing, or -1.

    >>> out = np.zeros((1, 2, 1)); scatter_dim(out, np.array([[[1], [1]]]), np.ones((1, 2, 1)),
    ...                                         "add")
    -1
    >>> out.ravel().tolist()
    [0.0, 2.0]
    """
    op = "scatter_dim"
    if out.__class__ is not _nd and not isinstance(out, np.ndarray):
        raise TypeError(f"{op}(): out must be a numpy.ndarray, got {type(out).__name__}")
    if index.__class__ is not _nd:
        index = np.asarray(index)
    # (each check's helper is called only to raise: the checks are most of a small call)
    if index.ndim != 3:
        check_ndim(op, "index", index, 3, "(P, N, Q)")
    if index.dtype.kind not in "iu":
        raise TypeError(f"{op}(): expected an integer index array, got dtype {index.dtype}")
    if src.__class__ is not _nd:
        src = np.asarray(src)
    if out.ndim != 3:
        check_ndim(op, "out", out, 3, "(P, M, Q)")
    P, N, Q = shape = index.shape
    if out.shape[0] != P or out.shape[2] != Q or src.shape != shape:
        raise RuntimeError(f"{op}(): out of shape {tuple(out.shape)}, index of shape "
                           f"{tuple(index.shape)} and src of shape {tuple(src.shape)} do not "
                           "match")
    if src.dtype != out.dtype:
        raise RuntimeError(f"{op}(): src dtype {src.dtype} does not match out dtype {out.dtype}")
    if reduce not in _MODES:
        raise ValueError(f"{op}(): reduce must be 'set', 'add', 'multiply', 'amax' or 'amin', "
                         f"got {reduce!r}")
    return _scatter_run(out, index, src, reduce)


def _scatter_run(out: np.ndarray, index: np.ndarray, src: np.ndarray, reduce: str) -> int:
    """:func:`scatter_dim` of arrays it has checked (``ember.tensor._scatter`` calls it
    directly with its own checked arrays): ``out`` (P, M, Q), ``index`` (P, N, Q) of an
    integer dtype, ``src`` (P, N, Q) of ``out``'s dtype, ``reduce`` one of its modes."""
    op = "scatter_dim"
    P, N, Q = index.shape
    if not (P and N and Q):
        return -1
    mode = _MODES[reduce]
    # an index broadcast along dim 2 (index_reduce's, an expanded one) is read as its (P, N)
    # rows, never copied out to (P, N, Q)
    rows = Q > 1 and index.strides[2] == 0
    if not rows and not index.flags.c_contiguous:
        index = np.ascontiguousarray(index)
    contiguous = out.flags.c_contiguous
    native = _numba_dtype(out)
    if native or mode == 0:
        w = out if contiguous else np.ascontiguousarray(out)
        work, s = w, src
        if not native:
            bits = _BITS[out.dtype.itemsize]
            work, s = w.view(bits), src.view(bits)
    else:
        contiguous = False
        w = work = out.astype(np.float32, order="C")
        s = src.astype(np.float32)
    if mode >= 3 and work.dtype.kind == "c":
        raise RuntimeError(f"{op}(): {reduce} is not defined for complex values")
    if not s.flags.c_contiguous:  # a broadcast src
        s = np.ascontiguousarray(s)
    if rows:
        kernel = _scatter_extreme_rows_kernel if mode >= 3 else _scatter_rows_kernel
        index = index[:, :, 0]
    else:
        kernel = _scatter_extreme_kernel if mode >= 3 else _scatter_kernel
    bad = kernel(work, index, s, mode)
    if bad < 0 and not contiguous:  # non-contiguous or float16 out: write the result back
        out[...] = w
    return bad
