"""The CTC op of ember.tensor (``_ctc_loss`` / ``_ctc_loss_backward``, run by the Numba kernel
``kernels/cpu/ctc.py``) against a brute-force sum over every alignment, its gradient against
central finite differences in float64, and bad lengths and labels, which must raise before the
kernel indexes with them."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember.tensor as et

rng = np.random.default_rng(11)


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _brute(lp, target, blank):
    """-log of the summed probability of every length-T path collapsing to ``target``."""
    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        out, prev = [], None
        for s in path:
            if s != prev and s != blank:
                out.append(s)
            prev = s
        if out == list(target):
            total += np.exp(sum(lp[t, s] for t, s in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


CASES = [  # (T, C, input lengths, targets per sequence, blank)
    (5, 3, [5, 4, 3], [[1, 2], [1, 1], []], 0),
    (4, 4, [4, 4], [[3, 3, 3], [2]], 0),  # repeats need a blank between them: impossible
    (5, 3, [5, 0], [[0, 1], []], 2),  # blank last; a zero-length input with an empty target
    (3, 2, [3], [[1, 1]], 0),
]


@pytest.mark.parametrize("T,C,il,tgts,blank", CASES)
def test_losses_match_the_sum_over_alignments(T, C, il, tgts, blank):
    n = len(il)
    lp = _log_softmax(rng.standard_normal((T, n, C)))
    tl = [len(t) for t in tgts]
    width = max(1, max(tl))
    padded = np.zeros((n, width), np.int64)
    for b, t in enumerate(tgts):
        padded[b, :len(t)] = t
    ref = [_brute(lp[:il[b], b], tgts[b], blank) if il[b] else (0.0 if not tl[b] else np.inf)
           for b in range(n)]
    flat = np.asarray([v for t in tgts for v in t], np.int64)
    for targets in (padded, flat):
        got = et._ctc_loss(et.tensor(lp), et.tensor(targets), il, tl, blank, False)
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10)
    zeroed = et._ctc_loss(et.tensor(lp), et.tensor(padded), il, tl, blank, True)
    np.testing.assert_allclose(zeroed.numpy(), np.where(np.isinf(ref), 0.0, ref), rtol=1e-10)


@pytest.mark.parametrize("T,C,il,tgts,blank", CASES)
def test_gradient_matches_finite_differences(T, C, il, tgts, blank):
    n = len(il)
    lp = rng.standard_normal((T, n, C)) - 1.0  # any log-probabilities, not only normalized
    tl = [len(t) for t in tgts]
    flat = et.tensor(np.asarray([v for t in tgts for v in t], np.int64))
    weights = rng.uniform(0.5, 2.0, n)

    def f(x):
        losses = et._ctc_loss(et.tensor(x), flat, il, tl, blank, True).numpy()
        return float((losses * weights).sum())

    got = et._ctc_loss_backward(et.tensor(weights), et.tensor(lp), flat, il, tl, blank,
                                True).numpy()
    num = np.zeros_like(lp)
    h = 1e-6
    for idx in np.ndindex(lp.shape):
        e = np.zeros_like(lp)
        e[idx] = h
        num[idx] = (f(lp + e) - f(lp - e)) / (2 * h)
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def test_bad_lengths_and_labels_raise_before_the_kernel():
    lp = et.tensor(_log_softmax(rng.standard_normal((4, 2, 3))))
    cases = [
        (et.tensor([[1, 3], [1, 2]]), [4, 4], [2, 2], "labels must be in"),  # label == C
        (et.tensor([[1, -1], [1, 2]]), [4, 4], [2, 2], "labels must be in"),
        (et.tensor([[1, 2], [1, 2]]), [4, 4], [3, 2], "do not hold"),
        (et.tensor([1, 2, 1]), [4, 4], [2, 2], "do not hold"),
        (et.tensor([[1, 2], [1, 2]]), [5, 4], [2, 2], "input_lengths"),
        (et.tensor([[1, 2], [1, 2]]), [4, 4], [-1, 2], "target_lengths"),
        (et.tensor([[1, 2], [1, 2]]), [4], [2], "expected 2"),
    ]
    for targets, il, tl, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            et._ctc_loss(lp, targets, il, tl, 0, False)
    with pytest.raises(RuntimeError, match="blank"):
        et._ctc_loss(lp, et.tensor([[1, 2], [1, 2]]), [4, 4], [2, 2], 3, False)
