"""Selection along the middle dim of (P, M, Q): the element at a position of the stable sort
(kthvalue, median) and the first k of the stable sort (topk), without sorting the whole dim;
the mode of each row (``mode_rows``, CPU only: CuPy's sort serves CUDA).

Both order each row by the stable sort's total order: by value (NaN after every number in
ascending order, before every number in descending order), ties by index. A position of that
order is then one answer, so a quickselect (O(M)) gives exactly the element a stable argsort
puts there, and a heap of the k best (O(M log k), one comparison for most elements) gives the
stable sort's first k. Measured at 256x1024 float32 along the rows, one thread: NumPy's stable
argsort takes about 12 ms, its argpartition (not stable: ties in any order) 3 ms; the selection
3.5 to 4.5 ms against PyTorch's kthvalue 3.5 to 4 (a partition's compares are unpredictable
branches), the top 2 0.5 ms against PyTorch's topk 0.35 to 0.5.
"""

from __future__ import annotations

import numpy as np

from ._common import check_ndim, njit

__all__ = ["select_dim", "median_all", "topk_dim", "mode_rows"]


@njit
def _before(a, b, ia, ib, desc):
    """Whether value ``a`` at index ``ia`` comes before ``b`` at ``ib`` in the stable sort."""
    if a != a:  # NaN: last ascending, first descending, NaNs in index order
        return ia < ib if b != b else desc
    if b != b:
        return not desc
    if a == b:
        return ia < ib
    return a > b if desc else a < b


@njit
def _swap(v, ix, i, j):
    t = v[i]
    v[i] = v[j]
    v[j] = t
    u = ix[i]
    ix[i] = ix[j]
    ix[j] = u


_LONG = 4096  # ranges longer than this are cut by branch-free partitions first


@njit
def _kth_number(v, n, kth):
    """The ``kth`` smallest of ``v[:n]`` (no NaN), reordering it: a quickselect. Ranges over
    ``_LONG`` elements are cut by a branch-free (Lomuto) partition around the median of three
    elements at pseudo-random places (a fixed place, as the median of the ends and the middle,
    went quadratic on a reversed run), faster there than the branching one, whose
    mispredictions then cost more than its fewer swaps (262144 float32, random: 1.5 ms against
    2.6, NumPy's partition 2.6; sorted, reversed, ties: as NumPy's); the rest by Hoare's
    partition, which stops on equal elements on both sides (so many ties cost no more) and is
    the faster one on short rows."""
    lo = 0
    hi = n - 1
    r = np.uint64(n) | np.uint64(1)  # a xorshift's state: the positions of the three
    while hi - lo > _LONG:
        span = np.uint64(hi - lo + 1)
        r ^= r << np.uint64(13)
        r ^= r >> np.uint64(7)
        r ^= r << np.uint64(17)
        a = v[lo + np.int64(r % span)]
        b = v[lo + np.int64((r >> np.uint64(21)) % span)]
        c = v[lo + np.int64((r >> np.uint64(42)) % span)]
        pivot = max(min(a, b), min(max(a, b), c))  # the median of three at random places
        i = lo  # the elements below the pivot to the front, by a swap each
        for j in range(lo, hi + 1):
            e = v[j]
            v[j] = v[i]
            v[i] = e
            i += e < pivot
        if kth < i:
            hi = i - 1
            continue
        k = i  # then those equal to it (none below remain), so that ties end the search
        for j in range(i, hi + 1):
            e = v[j]
            v[j] = v[k]
            v[k] = e
            k += e <= pivot
        if kth < k:
            return pivot
        lo = k
    while hi > lo:
        a = v[lo]
        b = v[(lo + hi) >> 1]
        c = v[hi]
        pivot = max(min(a, b), min(max(a, b), c))  # the median of three
        i = lo
        j = hi
        while i <= j:
            while v[i] < pivot:
                i += 1
            while pivot < v[j]:
                j -= 1
            if i <= j:
                t = v[i]
                v[i] = v[j]
                v[j] = t
                i += 1
                j -= 1
        if kth <= j:  # v[lo:j + 1] <= pivot <= v[i:hi + 1], and between them the pivot
            hi = j
        elif kth >= i:
            lo = i
        else:
            break
    return v[kth]


@njit
def _median_into(x, out):
    # the lower median of all of ``x`` (C-contiguous, not empty) into the 0-d ``out``: its
    # first NaN, if any (NaN sorts last), else the ((size - 1) // 2)-th smallest, selected from
    # a copy (one pass and a quickselect, where flatten, partition, a max and a minimum in
    # NumPy cost seven calls)
    a = x.reshape(x.size)
    v = np.empty(a.size, a.dtype)
    for i in range(a.size):
        e = a[i]
        if e != e:
            out[()] = e
            return
        v[i] = e
    out[()] = _kth_number(v, a.size, (a.size - 1) // 2)


@njit
def _select(x, pos, vals, out, rule):
    # the position of each row: pos's (rule 0), the median's (1: the lower median, or the
    # first NaN of a row with NaN) or nanmedian's (2: the lower median of the row's numbers)
    P, M, Q = x.shape
    v = np.empty(M, x.dtype)
    for p in range(P):
        for q in range(Q):
            n = 0  # the numbers of the row, which sort before its NaNs
            for m in range(M):
                a = x[p, m, q]
                if a == a:
                    v[n] = a
                    n += 1
            if rule == 0:
                kth = pos[p if pos.shape[0] > 1 else 0, 0, q if pos.shape[2] > 1 else 0]
                if kth < 0 or kth >= M:
                    return p * Q + q
            elif rule == 1:
                kth = (M - 1) // 2 if n == M else n
            else:
                kth = (n - 1) // 2 if n else 0
            if kth < n:  # the value, then its index: the (kth - #smaller)-th of its equals
                vk = _kth_number(v, n, kth)
                # the selection left every number below vk in v[:kth]: count them there (a
                # contiguous, vectorized pass over kth elements, not a strided one over M)
                r = kth
                for m in range(kth):
                    if v[m] < vk:
                        r -= 1
                for m in range(M):
                    if x[p, m, q] == vk:
                        if r == 0:
                            out[p, 0, q] = m
                            break
                        r -= 1
            else:  # a NaN: the (kth - n)-th, in index order
                r = kth - n
                for m in range(M):
                    a = x[p, m, q]
                    if a != a:
                        if r == 0:
                            out[p, 0, q] = m
                            break
                        r -= 1
            vals[p, 0, q] = x[p, out[p, 0, q], q]
    return -1


@njit
def _select_into(x, pos, vals, out, rule):
    # _select into results of any C-contiguous shape of P * Q elements, seen as (P, 1, Q) here
    # (a reshape in Numba is free; in Python each costs a tenth of a 4x64 selection)
    shape = (x.shape[0], 1, x.shape[2])
    return _select(x, pos, vals.reshape(shape), out.reshape(shape), rule)


@njit
def _sift(v, ix, i, n, desc):
    """Sift ``i`` down the heap ``v[:n]`` whose root is the element that sorts last."""
    while True:
        c = 2 * i + 1
        if c >= n:
            return
        if c + 1 < n and _before(v[c], v[c + 1], ix[c], ix[c + 1], desc):
            c += 1
        if not _before(v[i], v[c], ix[i], ix[c], desc):
            return
        _swap(v, ix, i, c)
        i = c


@njit
def _topk(x, k, desc, vals, out):
    P, M, Q = x.shape
    v = np.empty(k, x.dtype)
    ix = np.empty(k, np.int64)
    for p in range(P):
        for q in range(Q):
            for m in range(k):
                v[m] = x[p, m, q]
                ix[m] = m
            for i in range(k // 2 - 1, -1, -1):
                _sift(v, ix, i, k, desc)
            for m in range(k, M):
                # _before(a, root) for an index after all the heap's: a tie sorts after
                a = x[p, m, q]
                r = v[0]
                if (r == r and (a > r or a != a)) if desc else (a < r or (r != r and a == a)):
                    v[0] = a
                    ix[0] = m
                    _sift(v, ix, 0, k, desc)
            for n in range(k - 1, 0, -1):  # heapsort: the last in order moves to the end
                _swap(v, ix, 0, n)
                _sift(v, ix, 0, n, desc)
            for m in range(k):
                vals[p, m, q] = v[m]
                out[p, m, q] = ix[m]


_F16 = np.dtype(np.float16)
_I64 = np.dtype(np.int64)


def _work(name: str, x: np.ndarray) -> np.ndarray:
    if x.__class__ is not np.ndarray:
        x = np.asarray(x)
    if x.ndim != 3:
        check_ndim(name, "x", x, 3, "(P, M, Q)")
    dt = x.dtype
    if dt.kind not in "iuf":
        raise TypeError(f"{name}(): expected an integer or floating dtype, got {dt}")
    if dt == _F16:  # Numba has no float16 arithmetic; float32 keeps the order
        return x.astype(np.float32, order="C")
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def select_dim(x: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values and int64 indices (P, 1, Q) of the elements at positions ``pos`` (int64,
    (P, 1, Q), a dim of 1 broadcast, in ``[0, M)``) of the stable ascending sort of ``x``
    (P, M, Q) along dim 1, NaN last.

    >>> select_dim(np.array([[[3.0], [1.0], [2.0], [1.0]]]), np.array([[[1]]]))[1].ravel()
    array([3])
    """
    name = "select_dim"
    dt = x.dtype
    x = _work(name, x)
    P, M, Q = x.shape
    if pos.__class__ is not np.ndarray or pos.dtype != _I64:  # (a dtype, not the type:
        # comparing with np.int64 converts it on each call)
        pos = np.asarray(pos, dtype=np.int64)
    if pos.ndim != 3 or pos.shape[1] != 1 or pos.shape[0] not in (1, P) \
            or pos.shape[2] not in (1, Q):
        raise RuntimeError(f"{name}(): pos of shape {pos.shape} does not match x of shape "
                           f"{x.shape}: expected {(P, 1, Q)}")
    vals, out = _select_run(x, pos, (P, 1, Q))
    return (vals if vals.dtype == dt else vals.astype(dt)), out


_RULES = {"median": 1, "nanmedian": 2}
_NO_POS = np.zeros((1, 1, 1), np.int64)  # (what a rule's selection reads instead: nothing)


def _select_run(x: np.ndarray, pos, shape: tuple) -> tuple:
    """:func:`select_dim` of a C-contiguous (P, M, Q) ``x`` at positions ``pos``: int64 ones
    of its shape, or a rule, "median" (each row's lower median, or its first NaN where it
    holds one) or "nanmedian" (the lower median of each row's numbers, its first NaN where it
    holds none), worked out in the selection's own pass over the row; the values and indices
    shaped ``shape`` (P * Q elements). ember.tensor's selections call it directly with the
    (P, M, Q) view of their input, without a kernel-table lookup, select_dim's second check of
    what they made, two reshapes or the NumPy calls that count NaN."""
    dt = x.dtype
    if dt.kind not in "iuf":
        raise TypeError(f"select_dim(): expected an integer or floating dtype, got {dt}")
    if dt == _F16:  # Numba has no float16 arithmetic; float32 keeps the order
        x = x.astype(np.float32)
    rule = 0
    if pos.__class__ is str:
        rule, pos = _RULES[pos], _NO_POS
    vals = np.empty(shape, x.dtype)
    out = np.empty(shape, np.int64)
    if out.size and _select_into(x, pos, vals, out, rule) >= 0:
        raise IndexError(f"select_dim(): pos out of range for dim 1 of size {x.shape[1]}")
    return (vals if x.dtype == dt else vals.astype(dt)), out


def median_all(x: np.ndarray) -> np.ndarray:
    """The lower median of all elements of ``x`` (its first NaN if it holds one) as a 0-d
    array of ``x``'s dtype; ``x`` a non-empty ndarray of an integer or floating dtype or
    bfloat16 (run as float32), as ember.tensor's median checks it.

    >>> median_all(np.array([[3.0, 1.0], [2.0, 4.0]])).item()
    2.0
    """
    dt = x.dtype
    if dt.kind == "V" or dt == _F16:  # (Numba has no float16 or bfloat16 arithmetic)
        x = x.astype(np.float32, order="C")
    elif not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    if not x.ndim:  # (Numba reshapes no 0-d array)
        x = x.reshape(1)
    out = np.empty((), x.dtype)
    _median_into(x, out)
    return out if x.dtype == dt else out.astype(dt)


def topk_dim(x: np.ndarray, k: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The values and int64 indices (P, k, Q) of the first ``k`` elements of the stable
    descending (``largest``, NaN first) or ascending (NaN last) sort of ``x`` (P, M, Q) along
    dim 1, in that order.

    >>> topk_dim(np.array([[[1.0], [3.0], [2.0], [3.0]]]), 2, True)[1].ravel()
    array([1, 3])
    """
    name = "topk_dim"
    dt = x.dtype
    x = _work(name, x)
    P, M, Q = x.shape
    if not 0 <= k <= M:
        raise IndexError(f"{name}(): k={k} out of range for dim 1 of size {M}")
    shape = (P, k, Q)
    vals = np.empty(shape, x.dtype)
    out = np.empty(shape, np.int64)
    if out.size:
        _topk(x, k, bool(largest), vals, out)
    return (vals if vals.dtype == dt else vals.astype(dt)), out


@njit
def _mode(x, srt, vals, out):
    # ``srt``: the rows sorted (NaN last, each NaN its own run as NaN != NaN). The mode is the
    # first longest run (the smallest value on ties), its index the value's last occurrence in
    # the row (-0.0 and 0.0 are one value); an all-NaN row's mode is its first element
    r, n = x.shape
    for i in range(r):
        row = x[i]
        s = srt[i]
        best = 1
        val = s[0]
        run = 1
        for j in range(1, n):
            run = run + 1 if s[j] == s[j - 1] else 1
            if run > best:
                best = run
                val = s[j]
        k = 0
        if val == val:
            k = n - 1
            while row[k] != val:
                k -= 1
        out[i] = k
        vals[i] = row[k]


def mode_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mode of each row of ``x`` (rows, n), n > 0: its most frequent value (the smallest
    on ties; NaN counts once each) and the int64 index of that value's last occurrence, each
    of shape (rows,).

    >>> mode_rows(np.array([[2, 1, 2, 1, 3]]))
    (array([1]), array([3]))
    """
    name = "mode_rows"
    if x.__class__ is not np.ndarray:
        x = np.asarray(x)
    if x.ndim != 2:
        check_ndim(name, "x", x, 2, "(rows, n)")
    dt = x.dtype
    if dt.kind == "b":  # (Numba sorts no bool: uint8 keeps the order)
        work = x.view(np.uint8)
    elif dt.kind in "iu" or dt.kind == "f" and dt != _F16:
        work = x
    elif dt.kind in "fV":  # float16, bfloat16: float32 keeps the order and equality
        work = x.astype(np.float32)
    else:
        raise TypeError(f"{name}(): expected a real dtype, got {dt}")
    if not work.flags.c_contiguous:
        work = np.ascontiguousarray(work)
    r, n = work.shape
    if not n:
        raise RuntimeError(f"{name}(): rows of no element have no mode")
    srt = work.copy()
    srt.sort(axis=1)  # (NumPy's vectorized sort: 2-3x Numba's at 1024 a row)
    vals = np.empty(r, work.dtype)
    out = np.empty(r, np.int64)
    _mode(work, srt, vals, out)
    return (vals if vals.dtype == dt else vals.astype(dt)), out
