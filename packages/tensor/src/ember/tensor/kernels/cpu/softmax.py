"""Fused row-wise softmax, log-softmax and cross-entropy over the last axis of (rows, cols).

One pass per row for the max, one for the sum of exponentials, one for the output. Rows are
independent, so large inputs run rows in parallel.

Speed: the exponentials go through ``_vmath.vexp`` (a vectorizable exp; see there). Sums
accumulate in the input dtype with reassociation allowed only inside the small reduction
helpers, so they vectorize (partial sums per SIMD lane, as PyTorch does); everything else keeps
IEEE semantics, and log-sum-exps stay split as ``m + log(s)`` until the logits are subtracted.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._common import (
    PARALLEL_MIN_WORK,
    check_indices,
    check_ndim,
    float_inputs,
    parallel_call,
    use_parallel,
)
from ._vmath import like, vexp, vjit, vmax

__all__ = [
    "softmax_forward",
    "log_softmax_forward",
    "softmax_backward",
    "log_softmax_backward",
    "cross_entropy_forward",
    "cross_entropy_backward",
]

# --------------------------------------------------------------------------- row helpers


@vjit(sums=True)
def _exp_store_sum(x, y, i, m):
    # y[i] = exp(x[i] - m); returns the row sum (in the dtype of x).
    s = like(0.0, x)  # from a zero, so that short rows vectorize too (no scalar first term)
    for j in range(x.shape[1]):
        e = vexp(x[i, j] - m)
        y[i, j] = e
        s += e
    return s


@vjit(sums=True)
def _exp_sum(x, i, m):
    s = like(0.0, x)
    for j in range(x.shape[1]):
        s += vexp(x[i, j] - m)
    return s


@vjit(sums=True)
def _row_sum(g, i):
    s = like(0.0, g)
    for j in range(g.shape[1]):
        s += g[i, j]
    return s


@vjit(sums=True)
def _row_dot(g, y, i):
    s = like(0.0, g)
    for j in range(g.shape[1]):
        s += g[i, j] * y[i, j]
    return s


@vjit(sums=True)
def _row_smooth(x, w, i, m):
    # sum_c w[c] (m - x[i, c]): the caller adds ls * sum(w) (lse = m + ls kept apart, so that
    # large logits lose no precision in the input dtype; reassociation is allowed here)
    s = like(0.0, x)
    for j in range(x.shape[1]):
        s += w[j] * (m - x[i, j])
    return s


@vjit(sums=True)
def _sum(w):
    s = like(0.0, w)
    for j in range(w.shape[0]):
        s += w[j]
    return s


# --------------------------------------------------------------------------- kernels


@vjit
def _softmax_row(x, y, i, log):
    # All -inf row: m = -inf and x - m is NaN everywhere, as in PyTorch.
    m = vmax(x[i])
    if log:
        ls = np.log(_exp_sum(x, i, m))  # x - (m + ls) would round m + ls first
        for j in range(x.shape[1]):
            y[i, j] = (x[i, j] - m) - ls
    else:
        s = _exp_store_sum(x, y, i, m)
        inv = like(1.0, x) / s
        for j in range(x.shape[1]):
            y[i, j] = y[i, j] * inv


@vjit
def _softmax_serial(x, y, log):
    for i in range(x.shape[0]):
        _softmax_row(x, y, i, log)


@vjit(parallel=True)
def _softmax_parallel(x, y, log):
    for i in prange(x.shape[0]):
        _softmax_row(x, y, i, log)


@vjit
def _softmax_bwd_row(y, g, dx, i, log):
    if log:
        s = _row_sum(g, i)
        for j in range(y.shape[1]):
            dx[i, j] = g[i, j] - vexp(y[i, j]) * s
    else:
        s = _row_dot(g, y, i)
        for j in range(y.shape[1]):
            dx[i, j] = y[i, j] * (g[i, j] - s)


@vjit
def _softmax_bwd_serial(y, g, dx, log):
    for i in range(y.shape[0]):
        _softmax_bwd_row(y, g, dx, i, log)


@vjit(parallel=True)
def _softmax_bwd_parallel(y, g, dx, log):
    for i in prange(y.shape[0]):
        _softmax_bwd_row(y, g, dx, i, log)


@vjit
def _ce_fwd_row(x, t, w, ignore, eps, loss, lse, i):
    C = x.shape[1]
    m = vmax(x[i])
    ls = np.log(_exp_sum(x, i, m))
    lse[i] = m + ls
    ti = t[i]
    if ti == ignore:
        loss[i] = 0.0
        return
    val = (1.0 - eps) * w[ti] * ((m - x[i, ti]) + ls)
    if eps > 0.0:
        val += eps / C * (_row_smooth(x, w, i, m) + ls * _sum(w))
    loss[i] = val


@vjit
def _bad_target(t, C, ignore):
    # the first row whose target is neither in [0, C) nor ignore, or -1: checked here, in
    # the kernel's own call, before any row is read (a NumPy check costs two reductions and
    # more than the small kernel itself)
    for i in range(t.shape[0]):
        ti = t[i]
        if ti != ignore and (ti < 0 or ti >= C):
            return i
    return -1


@vjit
def _ce_fwd_serial(x, t, w, ignore, eps, loss, lse):
    # (the first bad row or -1, the losses' sum, the counted targets' weights' sum), the sums
    # in float64 as the rows are written: a mean or sum needs no NumPy call after the kernel
    bad = _bad_target(t, x.shape[1], ignore)
    total = 0.0
    denom = 0.0
    if bad < 0:
        for i in range(x.shape[0]):
            _ce_fwd_row(x, t, w, ignore, eps, loss, lse, i)
            total += loss[i]
            ti = t[i]
            denom += w[ti] if ti != ignore else 0.0
    return bad, total, denom


@vjit(parallel=True)
def _ce_fwd_parallel(x, t, w, ignore, eps, loss, lse):
    bad = _bad_target(t, x.shape[1], ignore)
    total = 0.0
    denom = 0.0
    if bad < 0:
        for i in prange(x.shape[0]):
            _ce_fwd_row(x, t, w, ignore, eps, loss, lse, i)
            total += loss[i]
            ti = t[i]
            denom += w[ti] if ti != ignore else 0.0
    return bad, total, denom


@vjit
def _ce_bwd_row(x, t, w, wsum, ignore, eps, go, dx, i):
    # The row's max and sum of exponentials are recomputed here rather than read from the
    # forward's lse = m + log(s): rounding that sum to the input dtype would shift every
    # probability by up to half an ulp of the logits (3% at logits near 1e6 in float32). The
    # exponentials are stored while summing and scaled by coef / s: one exp per element.
    C = x.shape[1]
    ti = t[i]
    if ti == ignore:
        for j in range(C):
            dx[i, j] = 0.0
        return
    m = vmax(x[i])
    s = _exp_store_sum(x, dx, i, m)
    gi = go[i]
    hot = (1.0 - eps) * w[ti] * gi
    if eps > 0.0:
        coef = like((hot + eps / C * wsum * gi) / s, x)
        smooth = like(eps / C * gi, x)
        for j in range(C):
            dx[i, j] = coef * dx[i, j] - smooth * w[j]
    else:
        coef = like(hot / s, x)
        for j in range(C):
            dx[i, j] = coef * dx[i, j]
    dx[i, ti] -= hot


@vjit
def _ce_bwd_serial(x, t, w, wsum, ignore, eps, go, dx):
    bad = _bad_target(t, x.shape[1], ignore)
    if bad < 0:
        for i in range(x.shape[0]):
            _ce_bwd_row(x, t, w, wsum, ignore, eps, go, dx, i)
    return bad


@vjit(parallel=True)
def _ce_bwd_parallel(x, t, w, wsum, ignore, eps, go, dx):
    bad = _bad_target(t, x.shape[1], ignore)
    if bad < 0:
        for i in prange(x.shape[0]):
            _ce_bwd_row(x, t, w, wsum, ignore, eps, go, dx, i)
    return bad


_nd, _empty = np.ndarray, np.empty
_FLOAT_KINDS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


_PAR_SIZE = 4 * PARALLEL_MIN_WORK  # below this size _go is False


def _go(x: np.ndarray):
    # Vectorized, a row pass costs under a nanosecond per element: inputs below about 128K
    # elements do not pay for a parallel launch (~60 us on two cores).
    return use_parallel(x.size // 4) and x.shape[0] > 1


def _forward(op: str, x: np.ndarray, log: bool) -> np.ndarray:
    if x.__class__ is not _nd or x.dtype not in _FLOAT_KINDS or x.ndim != 2 or \
            not x.flags.c_contiguous:
        x = np.asarray(x)
        check_ndim(op, "x", x, 2, "(rows, cols)")
        (xc,), dtype = float_inputs(op, x)  # a float16 copy in float32, a contiguous copy
        return _forward(op, xc, log).astype(dtype, copy=False)
    return _rows_forward(x, log)


def _rows_forward(x: np.ndarray, log: bool) -> np.ndarray:
    """:func:`_forward` of a C-contiguous float32 / float64 (rows, cols) array, unchecked:
    ``ember.tensor._nn_ops`` calls it directly with an array it has checked."""
    y = _empty(x.shape, x.dtype)  # (np.empty_like costs more)
    if x.size >= _PAR_SIZE and _go(x):
        parallel_call(_softmax_parallel, x, y, log)
    elif y.size:
        _softmax_serial(x, y, log)
    return y


def _backward(op: str, y: np.ndarray, g: np.ndarray, log: bool) -> np.ndarray:
    if y.__class__ is not _nd:
        y = np.asarray(y)
    if g.__class__ is not _nd:
        g = np.asarray(g)
    if y.ndim != 2:
        check_ndim(op, "y", y, 2, "(rows, cols)")
    if g.shape != y.shape:
        raise RuntimeError(
            f"{op}(): grad of shape {tuple(g.shape)} does not match output of shape "
            f"{tuple(y.shape)}"
        )
    (yc, gc), dtype = float_inputs(op, y, g)
    dx = _empty(yc.shape, yc.dtype)
    if dx.size:
        if _go(yc):
            parallel_call(_softmax_bwd_parallel, yc, gc, dx, log)
        else:
            _softmax_bwd_serial(yc, gc, dx, log)
    return dx if dx.dtype == dtype else dx.astype(dtype)


def softmax_forward(x: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over the last axis of ``x`` (rows, cols).

    >>> softmax_forward(np.array([[0.0, 0.0]])).tolist()
    [[0.5, 0.5]]
    """
    return _forward("softmax_forward", x, False)


def log_softmax_forward(x: np.ndarray) -> np.ndarray:
    """Numerically stable log-softmax over the last axis of ``x`` (rows, cols).

    >>> np.round(log_softmax_forward(np.array([[1000.0, 1000.0]])), 4).tolist()
    [[-0.6931, -0.6931]]
    """
    return _forward("log_softmax_forward", x, True)


def softmax_backward(y: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Softmax VJP from its output ``y``: ``y * (g - sum(g * y, row))``.

    >>> softmax_backward(np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]])).tolist()
    [[0.25, -0.25]]
    """
    return _backward("softmax_backward", y, g, False)


def log_softmax_backward(y: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Log-softmax VJP from its output ``y``: ``g - exp(y) * sum(g, row)``.

    >>> log_softmax_backward(np.log([[0.5, 0.5]]), np.array([[1.0, 0.0]])).tolist()
    [[0.5, -0.5]]
    """
    return _backward("log_softmax_backward", y, g, True)


_UNIT: dict = {}  # (classes, dtype) -> a read-only array of ones: the weights of no weight


def _unit_weights(C: int, dtype) -> np.ndarray:
    w = _UNIT.get((C, dtype))
    if w is None:
        if len(_UNIT) >= 64:
            _UNIT.clear()
        w = _UNIT[C, dtype] = np.ones(C, dtype=dtype)
        w.flags.writeable = False
    return w


def _ce_inputs(op, logits, target, weight, ignore_index, label_smoothing):
    """The kernels' arguments; the targets' range is left to the kernel (``_bad_target``)."""
    if logits.__class__ is not np.ndarray:
        logits = np.asarray(logits)
    if target.__class__ is not np.ndarray:
        target = np.asarray(target)
    check_ndim(op, "logits", logits, 2, "(N, C)")
    check_ndim(op, "target", target, 1, "(N,)")
    N, C = logits.shape
    if target.shape[0] != N:
        raise RuntimeError(
            f"{op}(): target of shape {tuple(target.shape)} does not match logits of shape "
            f"{tuple(logits.shape)}"
        )
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{op}(): label_smoothing must be in [0, 1], got {eps}")
    ignore = int(ignore_index)
    if target.dtype.kind not in "iu":
        _check_targets(op, target, C, ignore)  # raises TypeError
    t = np.ascontiguousarray(target, dtype=np.int64)
    if weight is None:
        (x,), dtype = float_inputs(op, logits)
        w = _unit_weights(C, x.dtype)
    else:
        weight = np.asarray(weight)
        if weight.shape != (C,):
            raise RuntimeError(
                f"{op}(): weight of shape {tuple(weight.shape)} does not match the {C} classes "
                f"of logits of shape {tuple(logits.shape)}; expected shape ({C},)"
            )
        (x, w), dtype = float_inputs(op, logits, weight)
    return x, t, w, ignore, eps, dtype


def _check_targets(op, target, C, ignore) -> None:
    check_indices(op, target, C, what="the class dimension (C)", allow=ignore, noun="target")


def cross_entropy_forward(
    logits: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    ignore_index: int,
    label_smoothing: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample cross-entropy from ``logits`` (N, C) and class ``target`` (N,).

    ``loss_i = (1-eps) w[t_i] (lse_i - x[i, t_i]) + eps/C sum_c w[c] (lse_i - x[i, c])``; rows
    with ``target == ignore_index`` get 0. Returns ``(loss, lse)``, both (N,).

    >>> loss, lse = cross_entropy_forward(np.zeros((1, 2)), np.array([1]), None, -100, 0.0)
    >>> np.round(loss, 4).tolist()
    [0.6931]
    """
    op = "cross_entropy_forward"
    x, t, w, ignore, eps, dtype = _ce_inputs(op, logits, target, weight, ignore_index,
                                             label_smoothing)
    if x.shape[0] and x.shape[1] == 0:
        _check_targets(op, target, 0, ignore)  # every target not ignored is out of range
        raise RuntimeError(f"{op}(): logits of shape {tuple(x.shape)} have no classes")
    loss, lse = _ce_forward_rows(x, t, w, ignore, eps)[:2]
    return loss.astype(dtype, copy=False), lse.astype(dtype, copy=False)


def _ce_forward_rows(x, t, w, ignore: int, eps: float) -> tuple:
    """:func:`cross_entropy_forward` of arrays it has checked (``ember.tensor._nn_ops`` calls
    it directly with its own checked arrays): ``x`` C-contiguous float32 / float64 (N, C) with
    ``C > 0``, ``t`` contiguous int64 (N,), ``w`` contiguous (C,) of ``x``'s dtype; ``loss``
    and ``lse`` in ``x``'s dtype, then the sum of the losses and the sum of the counted
    targets' weights (a mean's divisor), both Python floats summed in float64. A target out
    of range raises IndexError."""
    loss = _empty(x.shape[0], dtype=x.dtype)
    lse = _empty(x.shape[0], dtype=x.dtype)
    if not x.shape[0]:
        return loss, lse, 0.0, 0.0
    args = (x, t, w, ignore, eps, loss, lse)
    if _go(x):
        bad, total, denom = parallel_call(_ce_fwd_parallel, *args)
    else:
        bad, total, denom = _ce_fwd_serial(*args)
    if bad >= 0:
        _check_targets("cross_entropy_forward", t, x.shape[1], ignore)  # IndexError
    return loss, lse, total, denom


def cross_entropy_backward(
    logits: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    ignore_index: int,
    label_smoothing: float,
    grad_loss: np.ndarray,
) -> np.ndarray:
    """Gradient of the per-sample losses of :func:`cross_entropy_forward`, times ``grad_loss``
    (N,); rows whose target is ``ignore_index`` get zeros whatever their ``grad_loss``.

    >>> x = np.zeros((1, 2))
    >>> cross_entropy_backward(x, np.array([1]), None, -100, 0.0, np.ones(1)).tolist()
    [[0.5, -0.5]]
    """
    op = "cross_entropy_backward"
    x, t, w, ignore, eps, dtype = _ce_inputs(op, logits, target, weight, ignore_index,
                                             label_smoothing)
    grad_loss = np.asarray(grad_loss)
    N = x.shape[0]
    if grad_loss.shape != (N,):
        raise RuntimeError(
            f"{op}(): grad_loss of shape {tuple(grad_loss.shape)} does not match logits of "
            f"shape {tuple(x.shape)}; expected ({N},)"
        )
    if grad_loss.dtype != dtype:
        raise RuntimeError(f"{op}(): grad_loss dtype {grad_loss.dtype} does not match logits "
                           f"{dtype}")
    (gc,), _ = float_inputs(op, grad_loss)
    dx = np.empty_like(x)
    if N:  # (with no classes, too: the kernel checks the targets)
        wsum = float(w.sum(dtype=np.float64))
        args = (x, t, w, wsum, ignore, eps, gc, dx)
        if _go(x):
            bad = parallel_call(_ce_bwd_parallel, *args)
        else:
            bad = _ce_bwd_serial(*args)
        if bad >= 0:
            _check_targets(op, target, x.shape[1], ignore)  # raises IndexError
    return dx.astype(dtype, copy=False)


# --------------------------------------------------------------------------- nll loss
# ``ember.tensor._nn_ops``'s nll_loss_forward / nll_loss_backward call these directly on the
# CPU (float32 / float64; CuPy and float16 take NumPy-style gathers there): each is one pass
# over the targets, where the gather, mask, weighting and sums cost five NumPy calls or more.
# IEEE arithmetic throughout (no fastmath): signed zeros and the compensated sums matter.


_NLL_BLOCK = 256  # targets per partial sum of nll_forward (a two-level cascade)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def nll_forward(x, t, w, ignore, mean, out):
    """``x`` (N, C, L) log-probabilities, ``t`` (N * L,) int64 targets (target ``i = n L + l``
    picks ``x[n, t_i, l]``), ``w`` (C,) weights. With ``out`` of one element per target,
    ``out[i] = -(x[n, t_i, l] w[t_i])`` (+0 where ``t_i == ignore``). Returns ``(first target
    out of [0, C) that is not ignore, else -1; the loss: the sum of -x w[t_i] over the counted
    targets, divided by the next with ``mean``; the sum of their w[t_i])``, summed in float64
    by blocks of ``_NLL_BLOCK`` (a float32 input's products are exact in float64): as accurate
    as PyTorch's cascade of float32 partial sums or more."""
    C, L = x.shape[1], x.shape[2]
    rows = out.shape[0] != 0
    s = tw = bs = bw = 0.0
    i = 0
    for n in range(x.shape[0]):
        for k in range(L):
            if i % _NLL_BLOCK == 0:
                s += bs
                tw += bw
                bs = bw = 0.0
            ti = t[i]
            if ti == ignore:
                if rows:
                    out[i] = 0.0
            elif ti < 0 or ti >= C:
                return i, 0.0, 0.0
            else:
                wi = w[ti]
                v = x[n, ti, k]
                if rows:
                    out[i] = -(v * wi)
                bs -= np.float64(v) * np.float64(wi)
                bw += wi
            i += 1
    s += bs
    tw += bw
    return -1, s / tw if mean else s, tw


@numba.njit(cache=True, nogil=True, error_model="numpy")
def nll_backward(t, w, ignore, go, dx):
    """Into ``dx`` (N, C, L), zeros: ``dx[n, t_i, l] = -go_i w[t_i]`` for each counted target
    (``i = n L + l`` as in :func:`nll_forward`; ``go`` has one element per target, or one for
    all).
    Returns the first row with a target out of [0, C) that is not ignore, else -1."""
    C, L = dx.shape[1], dx.shape[2]
    one = go.shape[0] == 1
    i = 0
    for n in range(dx.shape[0]):
        for k in range(L):
            ti = t[i]
            if ti != ignore:
                if ti < 0 or ti >= C:
                    return i
                dx[n, ti, k] = -go[0 if one else i] * w[ti]
            i += 1
    return -1
