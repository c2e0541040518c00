"""nn edge cases from issue 21: finite gradients of saturated losses, targets saved for backward,
unpooling with overlapping windows, lookups and CTC lengths that must raise."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et


def test_bce_of_a_saturated_sigmoid_has_zero_gradient():  # item 1
    x = et.tensor([20.0, -20.0, 0.5], requires_grad=True)
    F.binary_cross_entropy(et.sigmoid(x), et.tensor([1.0, 0.0, 1.0])).backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all() and g[0] == 0 and abs(g[1]) < 1e-8


def test_bce_at_exact_zero_and_one_is_finite_and_clamped():
    p = et.tensor([0.0, 1.0, 0.0, 1.0], requires_grad=True)
    loss = F.binary_cross_entropy(p, et.tensor([1.0, 0.0, 0.0, 1.0]), reduction="sum")
    assert loss.item() == 200.0
    loss.backward()
    assert np.isfinite(p.grad.numpy()).all()


def test_bce_refuses_nan_input():
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(et.tensor([float("nan")]), et.tensor([1.0]))


def test_cross_entropy_all_targets_ignored_gives_nan_loss_and_zero_gradient():  # item 2
    x = et.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(x, et.tensor([-100, -100, -100]))
    assert math.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4), np.float32))
    w = et.randn(3, 4, requires_grad=True)
    F.nll_loss(w, et.tensor([1, 1, 1]), weight=et.tensor([1.0, 0.0, 1.0, 1.0])).backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("loss", [F.nll_loss, F.cross_entropy])
def test_target_modified_in_place_before_backward_raises(loss):  # item 8
    x = et.randn(3, 4, requires_grad=True)
    t = et.tensor([0, 1, 2])
    out = loss(x, t)
    t[0] = 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_max_unpool_writes_a_repeated_index_once():  # item 9
    a = np.zeros((1, 1, 5, 5), np.float32)
    a[0, 0, 2, 2] = 5.0
    x = et.tensor(a, requires_grad=True)
    out, idx = F.max_pool2d(x, 3, stride=1, return_indices=True)
    assert (idx.numpy() == 12).all()  # every window picks the centre
    up = F.max_unpool2d(out, idx, 3, stride=1, output_size=(5, 5))
    assert up[0, 0, 2, 2].item() == 5.0 and up.sum().item() == 5.0
    up.backward(et.arange(25.0).reshape(1, 1, 5, 5))
    assert x.grad[0, 0, 2, 2].item() == 9 * 12.0


def test_max_unpool_bad_index_is_a_runtime_error_naming_the_op():  # item 14
    with pytest.raises(RuntimeError, match="max_unpool2d"):
        F.max_unpool2d(et.randn(1, 1, 2, 2), et.tensor([[[[0, 1], [2, 30]]]]), 2)


def test_one_hot_huge_class_raises_runtime_error():  # item 11
    with pytest.raises(RuntimeError, match="one_hot"):
        F.one_hot(et.tensor([0, 1, 10**12]))
    with pytest.raises(RuntimeError, match="num_classes"):
        F.one_hot(et.tensor([0, 3]), 2)
    with pytest.raises(RuntimeError, match="empty"):
        F.one_hot(et.tensor([], dtype=et.int64))
    assert F.one_hot(et.tensor([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]


def test_embedding_bag_offsets_past_the_end_raise():
    w = et.randn(5, 3)
    with pytest.raises(RuntimeError, match="offsets"):
        F.embedding_bag(et.tensor([0, 1, 2]), w, et.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="offsets"):
        F.embedding_bag(et.tensor([0, 1, 2]), w, et.tensor([0, 2, 1]))
    with pytest.raises(RuntimeError, match="offsets"):
        F.embedding_bag(et.tensor([0, 1, 2]), w, et.tensor([1, 2]))
    assert F.embedding_bag(et.tensor([0, 1, 2]), w, et.tensor([0, 3])).shape == (2, 3)


@pytest.mark.parametrize("dtype", [et.int16, et.uint8, et.int8, et.bool])
def test_embedding_bag_refuses_small_index_dtypes(dtype):  # item 13
    with pytest.raises(RuntimeError, match="Long, Int"):
        F.embedding_bag(et.tensor([[0, 1]]).to(dtype), et.randn(5, 3))


def test_ctc_lengths_longer_than_the_targets_raise():
    lp = et.randn(5, 1, 4).log_softmax(2)
    with pytest.raises(RuntimeError, match="ctc_loss"):
        F.ctc_loss(lp, et.tensor([[1, 2]]), et.tensor([5]), et.tensor([4]))
    with pytest.raises(RuntimeError, match="ctc_loss"):
        F.ctc_loss(lp, et.tensor([1, 2, 3]), et.tensor([5]), et.tensor([2]))
    with pytest.raises(RuntimeError, match="ctc_loss"):
        F.ctc_loss(lp, et.tensor([[1, 2]]), et.tensor([5]), et.tensor([-1]))
    with pytest.raises(RuntimeError, match="blank"):
        F.ctc_loss(lp, et.tensor([[1, 2]]), et.tensor([5]), et.tensor([2]), blank=4)
    assert math.isfinite(F.ctc_loss(lp, et.tensor([[1, 2]]), et.tensor([5]),
                                    et.tensor([2])).item())


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_layer_on_an_empty_sequence_raises_runtime_error(cls):  # item 14
    with pytest.raises(RuntimeError, match="sequence length"):
        cls(3, 4)(et.randn(0, 2, 3))
    with pytest.raises(RuntimeError, match="sequence length"):
        cls(3, 4, batch_first=True)(et.randn(2, 0, 3))
