"""Sums, means, 1- and 2-norms, variances and log-sum-exps of float32 / float64 arrays; the
maximum or minimum with its index (``extreme_dim``) of any real dtype; the histogram of equal
bins (``histogram_uniform``) and of points over a grid of bins (``histogram_dd``).

Every kernel reduces axis 1 of a C-contiguous ``(outer, n, inner)`` array into a flat
``(outer * inner,)`` output: ``ember.tensor._reduction`` views a reduction over adjacent dims of
a (possibly permuted) contiguous tensor that way. CPU only: CuPy's reductions serve CUDA.

Rows (``inner == 1``, a reduction along contiguous memory) are summed in blocks of ``_B``
elements; inside a block the sum is reassociated so that LLVM vectorizes it (partial sums per
SIMD lane, 4 x 16 of them in float32 with AVX-512), and the block sums are added in float64,
flushed every ``_CASCADE`` blocks: a cascade like PyTorch's, float32 partial sums of a few dozen
elements under a float64 total, as accurate as PyTorch's float32 cascade or more at every
length. Columns (``inner > 1``) are reduced in tiles of ``_TILE`` columns: whole row segments
added elementwise (vectorized along the row) into a block accumulator of the input dtype,
flushed into float64 every ``_RB`` rows.

Variances are two passes per block (the block's mean rounded to the input dtype is the shift
``c``; ``sum(x - c)`` and ``sum((x - c)**2)`` in float64 correct for that rounding), blocks
combined with Chan et al.'s pairwise update: one pass over memory, exactly 0 for constant data,
no overflow of float32 squares. Columns take two passes (the column means, then the shifted
sums). Log-sum-exps shift each block by its maximum, combine blocks with a running shift (one
pass over memory) and exponentiate with ``_vmath.vexp``.

NaN and inf propagate as in PyTorch: only the block sums are reassociated, everything else keeps
IEEE semantics. Measured against NumPy and PyTorch (float32, one thread, 256 x 1024): rows sum
in 13 us (NumPy's pairwise ``add.reduce`` 45, PyTorch 15), columns in 15-18 (NumPy 19-30,
PyTorch 35-75), variance of the rows in 45 (NumPy's two passes 200), log-sum-exp of the rows
in 140 (NumPy 280, PyTorch 280).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._vmath import like, vexp, vmax

__all__ = ["sum_reduce", "var_reduce", "logsumexp_reduce", "prod_reduce", "extreme_dim",
           "histogram_uniform", "histogram_dd"]


def _jit(fn=None, *, sums=False):
    """``njit`` (cached, nogil, NumPy's error model) with IEEE arithmetic, except that the
    block sums (``sums``) may be reassociated, which lets LLVM vectorize them, and contracted
    to fused multiply-adds. No "arcp": the variance's correction ``s2 - s1 * s1 / n`` must
    come out exactly 0 on constant data, which a rounded reciprocal breaks."""
    def wrap(f):
        return numba.njit(cache=True, nogil=True, error_model="numpy",
                          fastmath={"reassoc", "contract"} if sums else False)(f)
    return wrap if fn is None else wrap(fn)


_B = 2048  # elements per vectorized block of a row
_CASCADE = 512  # row blocks per float64 partial sum
_RB = 64  # rows per block accumulator of a column sum
_TILE = 1024  # columns reduced together: their accumulators stay in L1, whatever the width


# --------------------------------------------------------------------------- blocks of a row
# Each takes a non-empty contiguous 1-D block and returns its reduction in the block's dtype.
# The sums start from 0 and loop over every element: a loop from element 1 leaves a row of 64
# one element short of a full vector iteration (4 x 16 lanes), all of it in the scalar tail.


@_jit(sums=True)
def _bsum(b):
    s = like(0.0, b)
    for j in range(b.shape[0]):
        s += b[j]
    return s


@_jit(sums=True)
def _bsumabs(b):
    s = like(0.0, b)
    for j in range(b.shape[0]):
        s += abs(b[j])
    return s


@_jit(sums=True)
def _bsumsq(b):
    s = like(0.0, b)
    for j in range(b.shape[0]):
        s += b[j] * b[j]
    return s


@_jit(sums=True)
def _bsumnan(b):
    # NaN counts as 0 (a select, which vectorizes like the plain sum)
    z = like(0.0, b)
    s = z
    for j in range(b.shape[0]):
        v = b[j]
        s += v if v == v else z
    return s


@_jit(sums=True)
def _bdev(b, c):
    # sum(x - c) and sum((x - c)**2) in float64: x - c is exact for float32 data
    c = np.float64(c)
    s1 = 0.0
    s2 = 0.0
    for j in range(b.shape[0]):
        d = np.float64(b[j]) - c
        s1 += d
        s2 += d * d
    return s1, s2


@_jit(sums=True)
def _bexpsum(b, m):
    s = like(0.0, b)
    for j in range(b.shape[0]):
        s += vexp(b[j] - m)
    return s


# --------------------------------------------------------------------------- one row


# Rows of at most _B elements are one block: the entry points call the block functions on
# them directly, in a loop chosen outside the rows (a branch per row costs as much as a short
# row's sum). These functions take the longer rows.


@_jit
def _row_sum(r, p):
    # p = 0: sum(r), 1: sum(|r|), 2: sum(r**2) (the powers of the p-norms), 3: sum(r) with
    # NaN as 0, in float64
    lo = 0.0
    hi = 0.0
    k = 0
    for s in range(0, r.shape[0], _B):
        b = r[s:s + _B]
        lo += _bsum(b) if p == 0 else _bsumabs(b) if p == 1 else _bsumsq(b) if p == 2 \
            else _bsumnan(b)
        k += 1
        if k == _CASCADE:
            hi += lo
            lo = 0.0
            k = 0
    return hi + lo


@_jit
def _block_moments(b):
    # (mean, M2) of a non-empty block in float64: the shift c is its mean rounded to the
    # input dtype, sum(x - c) corrects for that rounding
    nb = b.shape[0]
    c = like(_bsum(b) / nb, b)
    s1, s2 = _bdev(b, c)
    return c + s1 / nb, s2 - s1 * s1 / nb


@_jit
def _row_m2(r):
    # the sum of squared deviations from the mean of a non-empty row, in float64
    mean, m2 = _block_moments(r[:_B])
    for s in range(_B, r.shape[0], _B):  # Chan et al.'s update, block by block
        b = r[s:s + _B]
        nb = b.shape[0]
        mb, m2b = _block_moments(b)
        w = nb / (s + nb)
        delta = mb - mean
        mean += delta * w
        m2 += m2b + delta * delta * (s * w)
    return m2


@_jit
def _block_shift(b):
    # the block's maximum, or 0 where it is not finite: an all -inf block sums to 0, a +inf
    # element makes the sum inf, NaN stays NaN (through exp(NaN - m))
    m = vmax(b)
    return m if math.isfinite(m) else like(0.0, b)


@_jit
def _row_lse(r):
    # log(sum(exp(r))) of a non-empty row, with a running shift block by block
    m = _block_shift(r[:_B])
    shift = np.float64(m)
    s = np.float64(_bexpsum(r[:_B], m))
    for k in range(_B, r.shape[0], _B):
        b = r[k:k + _B]
        m = _block_shift(b)
        e = _bexpsum(b, m)
        if m > shift:
            s = s * math.exp(shift - m) + e
            shift = np.float64(m)
        else:
            s += e * math.exp(m - shift)
    return math.log(s) + shift


@_jit
def _cols_sum(x, o, j0, w, p, blk, acc):
    # acc[:w] = the sums over axis 1 of x[o, :, j0:j0 + w] (p = 0), of |x| (1), of x**2 (2) or
    # of x with NaN as 0 (3), in float64: blocks of _RB rows are added elementwise in x's
    # dtype (blk), then into acc
    n = x.shape[1]
    if n == 0:
        acc[:w] = 0.0
    for r0 in range(0, n, _RB):
        row = x[o, r0][j0:j0 + w]
        if p == 0:
            for j in range(w):
                blk[j] = row[j]
        elif p == 1:
            for j in range(w):
                blk[j] = abs(row[j])
        elif p == 2:
            for j in range(w):
                blk[j] = row[j] * row[j]
        else:
            for j in range(w):
                v = row[j]
                blk[j] = v if v == v else 0.0
        for r in range(r0 + 1, min(r0 + _RB, n)):
            row = x[o, r][j0:j0 + w]
            if p == 0:
                for j in range(w):
                    blk[j] += row[j]
            elif p == 1:
                for j in range(w):
                    blk[j] += abs(row[j])
            elif p == 2:
                for j in range(w):
                    blk[j] += row[j] * row[j]
            else:
                for j in range(w):
                    v = row[j]
                    if v == v:
                        blk[j] += v
        if r0 == 0:
            for j in range(w):
                acc[j] = blk[j]
        else:
            for j in range(w):
                acc[j] += blk[j]


# --------------------------------------------------------------------------- entry points
# ``x`` is a C-contiguous float32 / float64 array (outer, n, inner); ``out`` a new
# (outer * inner,) array of its dtype. Rows (inner == 1) and columns take different loops.
# No parallel versions: on this project's two shared cores a prange over the rows (Numba's
# workqueue layer, ~45 us a launch) was slower than one thread at 256x1024 (sum 12 -> 55 us,
# var 45 -> 97, logsumexp 143 -> 220) and mixed above (1024x1024: logsumexp 569 -> 405, var
# 176 -> 244; a 10M-element sum 767 -> 664).


@_jit
def sum_reduce(x, out, mode):
    """``out = sum(x, 1)`` (``mode`` 0), the mean (1), the 1-norm ``sum(|x|, 1)`` (2), the
    2-norm ``sqrt(sum(x**2, 1))`` (3) or the sum with NaN as 0 (4)."""
    outer, n, inner = x.shape
    p = mode - 1 if mode > 1 else 0
    div = np.float64(n) if mode == 1 else 1.0
    if inner == 1:
        rows = x.reshape(outer, n)
        if n == 0:
            out[:] = 0.0 / div
        elif n > _B:
            for i in range(outer):
                t = _row_sum(rows[i], p)
                out[i] = math.sqrt(t) if p == 2 else t / div
        elif p == 0:
            for i in range(outer):
                out[i] = _bsum(rows[i]) / div
        elif p == 1:
            for i in range(outer):
                out[i] = _bsumabs(rows[i])
        elif p == 2:
            for i in range(outer):
                out[i] = math.sqrt(_bsumsq(rows[i]))
        else:
            for i in range(outer):
                out[i] = _bsumnan(rows[i])
        return
    blk = np.empty(min(_TILE, inner), x.dtype)
    acc = np.empty(min(_TILE, inner), np.float64)
    for o in range(outer):
        for j0 in range(0, inner, _TILE):
            w = min(_TILE, inner - j0)
            _cols_sum(x, o, j0, w, p, blk, acc)
            res = out[o * inner + j0:o * inner + j0 + w]
            if p == 2:
                for j in range(w):
                    res[j] = math.sqrt(acc[j])
            elif mode == 1:
                for j in range(w):
                    res[j] = acc[j] / div
            else:
                for j in range(w):
                    res[j] = acc[j]


@_jit
def var_reduce(x, out, correction):
    """``out = sum((x - mean)**2, 1) / max(n - correction, 0)``, NaN where ``n`` is 0."""
    outer, n, inner = x.shape
    dof = np.float64(max(n - correction, 0))
    if inner == 1:
        rows = x.reshape(outer, n)
        if n == 0:
            out[:] = np.nan
        elif n > _B:
            for i in range(outer):
                m2 = _row_m2(rows[i])
                out[i] = (0.0 if m2 < 0.0 else m2) / dof
        else:
            for i in range(outer):
                m2 = _block_moments(rows[i])[1]
                out[i] = (0.0 if m2 < 0.0 else m2) / dof
        return
    c = np.empty(min(_TILE, inner), x.dtype)
    acc = np.empty(min(_TILE, inner), np.float64)
    s2 = np.empty(min(_TILE, inner), np.float64)
    for o in range(outer):
        for j0 in range(0, inner, _TILE):
            w = min(_TILE, inner - j0)
            _cols_sum(x, o, j0, w, 0, c, acc)
            for j in range(w):  # the shift: each column's mean rounded to the input dtype
                c[j] = acc[j] / n
            acc[:w] = 0.0  # now sum(x - c)
            s2[:w] = 0.0
            for r in range(n):
                row = x[o, r][j0:j0 + w]
                for j in range(w):
                    d = np.float64(row[j]) - np.float64(c[j])
                    acc[j] += d
                    s2[j] += d * d
            res = out[o * inner + j0:o * inner + j0 + w]
            for j in range(w):
                m2 = s2[j] - acc[j] * acc[j] / n if n else np.nan
                res[j] = (0.0 if m2 < 0.0 else m2) / dof


@_jit
def logsumexp_reduce(x, out):
    """``out = log(sum(exp(x), 1))`` for ``n > 0``, without overflow."""
    outer, n, inner = x.shape
    if inner == 1:
        rows = x.reshape(outer, n)
        if n > _B:
            for i in range(outer):
                out[i] = _row_lse(rows[i])
        else:
            for i in range(outer):
                r = rows[i]
                m = _block_shift(r)
                out[i] = math.log(_bexpsum(r, m)) + m
        return
    m = np.empty(min(_TILE, inner), x.dtype)
    blk = np.empty(min(_TILE, inner), x.dtype)
    acc = np.empty(min(_TILE, inner), np.float64)
    for o in range(outer):
        for j0 in range(0, inner, _TILE):
            w = min(_TILE, inner - j0)
            row = x[o, 0][j0:j0 + w]
            for j in range(w):
                m[j] = row[j]
            for r in range(1, n):
                row = x[o, r][j0:j0 + w]
                for j in range(w):
                    v = row[j]
                    m[j] = v if v > m[j] else m[j]
            for j in range(w):  # the shift, 0 where the maximum is not finite
                m[j] = m[j] if math.isfinite(m[j]) else 0.0
            for r0 in range(0, n, _RB):
                row = x[o, r0][j0:j0 + w]
                for j in range(w):
                    blk[j] = vexp(row[j] - m[j])
                for r in range(r0 + 1, min(r0 + _RB, n)):
                    row = x[o, r][j0:j0 + w]
                    for j in range(w):
                        blk[j] += vexp(row[j] - m[j])
                if r0 == 0:
                    for j in range(w):
                        acc[j] = blk[j]
                else:
                    for j in range(w):
                        acc[j] += blk[j]
            res = out[o * inner + j0:o * inner + j0 + w]
            for j in range(w):
                res[j] = math.log(acc[j]) + m[j]


# --------------------------------------------------------------------------- products
@_jit(sums=True)
def _bprod(b):
    p = like(1.0, b)
    for j in range(b.shape[0]):
        p *= b[j]
    return p


@_jit(sums=True)
def prod_reduce(x, out):
    """``out = prod(x, 1)`` in the input dtype (PyTorch's CPU product of float32 and float64
    is vectorized the same way: partial products per SIMD lane, then combined); 1 where ``n``
    is 0. Rows in one reassociated (vectorized) loop, columns as elementwise products of whole
    row segments. NaN, inf and zeros propagate as in any order of the product."""
    outer, n, inner = x.shape
    if inner == 1:
        rows = x.reshape(outer, n)
        for i in range(outer):
            out[i] = _bprod(rows[i])
        return
    for o in range(outer):
        acc = out[o * inner:(o + 1) * inner]
        acc[:] = 1.0
        for k in range(n):
            row = x[o, k]
            for j in range(inner):
                acc[j] *= row[j]


# --------------------------------------------------------------------------- max / min with index
@_jit
def _extreme(x, vals, idx, largest):
    # the first maximum (minimum) of each (p, :, q) and its index; a NaN wins and stays, as
    # NumPy's argmax and PyTorch's max over a dim
    P, M, Q = x.shape
    for p in range(P):
        if Q == 1:  # along the last dim: the running extreme stays in a register
            best = x[p, 0, 0]
            bi = 0
            for m in range(1, M):
                if best != best:
                    break
                v = x[p, m, 0]
                if v != v or (v > best if largest else v < best):
                    best = v
                    bi = m
            vals[p, 0] = best
            idx[p, 0] = bi
            continue
        for q in range(Q):
            vals[p, q] = x[p, 0, q]
            idx[p, q] = 0
        for m in range(1, M):
            for q in range(Q):
                v = x[p, m, q]
                b = vals[p, q]
                if b == b and (v != v or (v > b if largest else v < b)):
                    vals[p, q] = v
                    idx[p, q] = m


_NATIVE = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                          np.int64, np.uint8, np.uint16, np.uint32, np.uint64))


def extreme_dim(x: np.ndarray, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The maximum (``largest``) or minimum of each ``x[p, :, q]`` of a C-contiguous (P, M, Q)
    array with ``M > 0``, and the int64 index of its first occurrence (of the first NaN where
    there is one), as (P, Q) arrays: ``max(x, 1)`` in one pass, values in ``x``'s dtype. Bool
    runs as uint8, other dtypes Numba has no arithmetic for (float16, bfloat16) in float32.

    >>> extreme_dim(np.array([[[1.0], [3.0], [3.0]]]), True)[1].tolist()
    [[1]]
    """
    dt = x.dtype
    if dt in _NATIVE:
        w = x
    elif dt.kind == "b":
        w = x.view(np.uint8)
    elif dt.kind in "iu":  # (another byte order)
        w = x.astype(dt.newbyteorder("="))
    else:
        w = x.astype(np.float32)
    P, M, Q = w.shape
    vals = np.empty((P, Q), w.dtype)
    idx = np.empty((P, Q), np.int64)
    if vals.size:
        _extreme(w, vals, idx, largest)
    if w is x:
        return vals, idx
    return (vals.view(dt) if dt.kind == "b" else vals.astype(dt)), idx


@_jit
def _bin_of(v, e, lo, f, uniform):
    # the bin of v in [e[0], e[-1]] (the last edge <= v, the top edge in the last bin); for
    # equal bins (``uniform``) guessed from v's position in the range (in v's dtype, as the
    # NumPy expression it replaces) and checked against its edges, found by binary search
    # only where the guess fails (rounding at an edge) or the edges are any increasing ones
    n = e.shape[0] - 1
    if uniform:
        g = (v - lo) * f
        p = 0
        if g >= n - 1:
            p = n - 1
        elif g > 0:
            p = int(g)
        if not (v < e[p] or (p < n - 1 and v >= e[p + 1])):
            return p
    a = 0
    b = n + 1
    while a < b:
        m = (a + b) >> 1
        if e[m] <= v:
            a = m + 1
        else:
            b = m
    return min(a - 1, n - 1)


@_jit
def _hist_uniform(x, edges, lo, hi, f, w, weighted, hist):
    # values outside [lo, hi] and NaN dropped
    for i in range(x.shape[0]):
        v = x[i]
        if not (v >= lo and v <= hi):
            continue
        p = _bin_of(v, edges, lo, f, True)
        if weighted:
            hist[p] += w[i]
        else:
            hist[p] += 1


@_jit
def _hist_dd(pts, edges, offs, uniform, lo, f, w, weighted, hist):
    # each point's flat bin (row-major over the dimensions' bins; -1 for a point outside a
    # range or with a NaN, dropped), one dimension at a time; then counts and weights summed
    # in float64, in the points' order
    N = pts.shape[0]
    flat = np.zeros(N, np.int64)
    for j in range(pts.shape[1]):
        e = edges[offs[j]:offs[j + 1]]
        n = e.shape[0] - 1
        first, last, lj, fj, uj = e[0], e[n], lo[j], f[j], uniform[j]
        for i in range(N):
            if flat[i] < 0:
                continue
            v = pts[i, j]
            if v >= first and v <= last:
                flat[i] = flat[i] * n + _bin_of(v, e, lj, fj, uj)
            else:
                flat[i] = -1
    for i in range(N):
        if flat[i] >= 0:
            hist[flat[i]] += w[i] if weighted else 1.0


def histogram_uniform(x: np.ndarray, edges: np.ndarray, w: np.ndarray | None = None):
    """The histogram of the 1-D float32 / float64 ``x`` over the equal bins ``edges`` (``x``'s
    dtype, increasing, at least two): PyTorch's linear interpolation of each value's bin with
    a local search, values outside ``[edges[0], edges[-1]]`` and NaN dropped, the top edge in
    the last bin; int64 counts, or with weights ``w`` (``x``'s shape) their float64 sums in
    ``w``'s dtype, in one pass.

    >>> histogram_uniform(np.array([0.0, 0.5, 1.0, 2.0]), np.array([0.0, 0.5, 1.0])).tolist()
    [1, 2]
    """
    n = edges.shape[0] - 1
    lo, hi = edges[0], edges[-1]
    span = hi - lo  # (the guesses' factor in x's dtype, as NumPy computes them; a range of
    f = n / span if span else x.dtype.type(np.inf)  # one value: guesses that are checked)
    if w is None:
        hist = np.zeros(n, np.int64)
        _hist_uniform(x, edges, lo, hi, f, x, False, hist)
        return hist
    hist = np.zeros(n, np.float64)
    _hist_uniform(x, edges, lo, hi, f, w, True, hist)
    return hist.astype(w.dtype)


def histogram_dd(pts: np.ndarray, edges, uniform, w: np.ndarray | None = None) -> np.ndarray:
    """The float64 histogram (flat, row-major over the dimensions' bins) of the points
    ``pts`` (N, D) of float32 / float64 over the increasing ``edges`` of each dimension (D
    arrays of ``pts``' dtype, each at least two), the equal bins of the dimensions that
    ``uniform`` (D bools) names placed as :func:`histogram_uniform` places them; points
    outside a range or with a NaN dropped, the top edge in the last bin; with weights ``w``
    (N,) their sums, in one pass.

    >>> histogram_dd(np.array([[0.0, 1.0], [1.0, 1.0]]), [np.array([0.0, 0.5, 1.0])] * 2,
    ...              [True, True]).tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    dt = pts.dtype
    k = len(edges)
    offs = np.zeros(k + 1, np.int64)
    lo, f = np.empty(k, dt), np.empty(k, dt)
    size = 1
    for j, e in enumerate(edges):
        n = e.shape[0] - 1
        offs[j + 1] = offs[j] + n + 1
        size *= n
        span = e[-1] - e[0]
        lo[j] = e[0]
        f[j] = n / span if span else np.inf
    hist = np.zeros(size, np.float64)
    _hist_dd(pts, np.concatenate(edges), offs, np.array(uniform, bool), lo, f,
             pts[:, 0] if w is None else w, w is not None, hist)
    return hist
