"""Connectionist Temporal Classification: the negative log likelihoods of a batch of label
sequences and their gradients with respect to the log probabilities, in one Numba call.

The forward (alpha) and backward (beta) recursions of Graves et al. (2006) run in log space
over the extended label sequence (a blank before, between and after the labels) in float64.
``ember.tensor._nn_ops`` checks every length and label before the call; CUDA tensors are brought
to the host for it (the recursion is sequential in time, tiny per step, and not worth a GPU
launch per step), as ember's CTC always has been.

>>> import numpy as np
>>> lp = np.log(np.full((2, 1, 2), 0.5))  # paths 11, 01, 10 collapse to [1]: -log(3/4)
>>> ctc_batch(lp, np.array([1]), np.array([0]), np.array([1]), np.array([2]), 0, False, False
...           )[0].round(6).tolist()
[0.287682]
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["ctc_batch"]

_NINF = -math.inf


@numba.njit(cache=True, nogil=True, inline="always")
def _lse(a, b):
    """log(exp(a) + exp(b)), exact for -inf operands."""
    if a == _NINF:
        return b
    if b == _NINF:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@numba.njit(cache=True, nogil=True, inline="always")
def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)), exact for -inf operands: the largest plus the log1p of
    the other two's exponentials relative to it (two exps and one log1p, where two nested
    :func:`_lse` take two of each)."""
    if a < b:
        a, b = b, a
    if a < c:
        a, c = c, a
    if a == _NINF:
        return a
    return a + math.log1p(math.exp(b - a) + math.exp(c - a))


@numba.njit(cache=True, nogil=True)
def _one(lp, b, ext, T, want_grad, grad):
    """The negative log likelihood of the extended sequence ``ext`` under ``lp[:T, b]``; adds
    its gradient into ``grad[:T, b]`` when ``want_grad`` and the likelihood is not zero."""
    S = ext.shape[0]
    alpha = np.full((T, S), _NINF)
    alpha[0, 0] = lp[0, b, ext[0]]
    if S > 1:
        alpha[0, 1] = lp[0, b, ext[1]]
    for t in range(1, T):
        for s in range(S):
            a = alpha[t - 1, s]
            if s >= 2 and ext[s] != ext[0] and ext[s] != ext[s - 2]:
                a = _lse3(a, alpha[t - 1, s - 1], alpha[t - 1, s - 2])
            elif s >= 1:
                a = _lse(a, alpha[t - 1, s - 1])
            alpha[t, s] = a + lp[t, b, ext[s]]
    ll = alpha[T - 1, S - 1] if S == 1 else _lse(alpha[T - 1, S - 1], alpha[T - 1, S - 2])
    if not want_grad or not math.isfinite(ll):
        return -ll
    beta = np.full((T, S), _NINF)
    beta[T - 1, S - 1] = lp[T - 1, b, ext[S - 1]]
    if S > 1:
        beta[T - 1, S - 2] = lp[T - 1, b, ext[S - 2]]
    for t in range(T - 2, -1, -1):
        for s in range(S):
            v = beta[t + 1, s]
            if s + 2 < S and ext[s + 2] != ext[0] and ext[s + 2] != ext[s]:
                v = _lse3(v, beta[t + 1, s + 1], beta[t + 1, s + 2])
            elif s + 1 < S:
                v = _lse(v, beta[t + 1, s + 1])
            beta[t, s] = v + lp[t, b, ext[s]]
    for t in range(T):
        for s in range(S):
            ab = alpha[t, s] + beta[t, s]  # paths through (t, s), lp[t, ext[s]] counted twice
            if ab != _NINF:
                k = ext[s]
                grad[t, b, k] -= math.exp(ab - lp[t, b, k] - ll)
    return -ll


@numba.njit(cache=True, nogil=True)
def ctc_batch(lp, targets, starts, target_lengths, input_lengths, blank, want_grad,
              zero_infinity):
    """Per-sequence CTC losses of ``lp`` (T, N, C) float32 or float64 (the recursions run in
    float64 either way) and, when ``want_grad``, the gradient of their sum (T, N, C) float64
    (zeros otherwise). Sequence ``b`` has the labels
    ``targets[starts[b]:starts[b] + target_lengths[b]]`` and the first ``input_lengths[b]``
    steps. ``zero_infinity``: an impossible sequence gets loss 0 and no gradient."""
    T, N, C = lp.shape
    losses = np.zeros(N)
    grad = np.zeros((T, N, C) if want_grad else (0, N, C))
    for b in range(N):
        L = target_lengths[b]
        ext = np.full(2 * L + 1, blank, dtype=np.int64)
        for i in range(L):
            ext[2 * i + 1] = targets[starts[b] + i]
        Tb = input_lengths[b]
        if Tb == 0:
            nll = 0.0 if L == 0 else math.inf
        else:
            nll = _one(lp, b, ext, Tb, want_grad, grad)
        if zero_infinity and not math.isfinite(nll):
            nll = 0.0
            if want_grad:
                grad[:, b, :] = 0.0
        losses[b] = nll
    return losses, grad
