"""``nn.AdaptiveLogSoftmaxWithLoss``: the full distribution against NumPy from the module's
weights (the head's softmax over shortlist and clusters, times each cluster's own softmax over
its projection), the per-row output and loss read from it, ``predict`` as its argmax, and
gradients by ``gradcheck`` in float64. Parity with PyTorch:
``tests/parity/test_parity_adaptive.py``."""
from __future__ import annotations

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et
from ember.autograd import gradcheck


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def _reference(m, x):
    head = x @ m.head.weight.detach().numpy().T
    if m.head.bias is not None:
        head = head + m.head.bias.detach().numpy()
    hl = _log_softmax(head)
    parts = [hl[:, :m.shortlist_size]]
    for i, seq in enumerate(m.tail):
        z = x @ seq[0].weight.detach().numpy().T @ seq[1].weight.detach().numpy().T
        parts.append(_log_softmax(z) + hl[:, m.shortlist_size + i:m.shortlist_size + i + 1])
    return np.concatenate(parts, 1)


@pytest.mark.parametrize("head_bias", [False, True])
def test_distribution_output_loss_and_predict(head_bias):
    et.manual_seed(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(12, 25, [3, 10, 18], div_value=2.0,
                                      head_bias=head_bias).double()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 12)) * 2
    y = np.array([0, 2, 3, 9, 10, 17, 24])
    ref = _reference(m, x)
    assert np.allclose(np.exp(ref).sum(1), 1)
    lp = m.log_prob(et.from_numpy(x)).detach().numpy()
    assert np.allclose(lp, ref, atol=1e-12)
    out = m(et.from_numpy(x), et.from_numpy(y))
    assert np.allclose(out.output.detach().numpy(), ref[np.arange(7), y], atol=1e-12)
    assert np.isclose(out.loss.item(), -ref[np.arange(7), y].mean())
    assert m.predict(et.from_numpy(x)).tolist() == ref.argmax(1).tolist()
    one = m(et.from_numpy(x[4]), et.tensor(int(y[4])))
    assert one.output.shape == () and np.isclose(one.output.item(), ref[4, y[4]])


def test_gradcheck():
    et.manual_seed(2)
    m = nn.AdaptiveLogSoftmaxWithLoss(6, 9, [2, 5], div_value=2.0, head_bias=True).double()
    x = et.randn(5, 6, dtype=et.float64, requires_grad=True)
    y = et.tensor([0, 1, 3, 6, 8])
    assert gradcheck(lambda a: m(a, y).loss, (x,))
    assert gradcheck(lambda a: m.log_prob(a), (x,))


def test_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 10])
    with pytest.raises(ValueError, match="length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        m(et.ones(3, 8), et.tensor([0, -1, 2]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(et.ones(3, 8), et.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(et.ones(3, 8), et.tensor([[0, 1]]))
