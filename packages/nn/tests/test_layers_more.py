"""RMSNorm, channel shuffle, conv_tbc, gumbel_softmax, linear_cross_entropy, CrossMapLRN2d
and NLLLoss2d against NumPy references and finite differences."""
import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _t(a, grad=False):
    return et.tensor(a, requires_grad=grad)


def test_rms_norm_values_eps_and_gradients():
    x = RNG.standard_normal((3, 2, 4))
    w = RNG.standard_normal((2, 4))
    ref = x / np.sqrt((x ** 2).mean((1, 2), keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(F.rms_norm(_t(x), [2, 4], _t(w), 1e-6).numpy(), ref,
                               rtol=1e-12)
    x32 = x.astype(np.float32)
    ref32 = x32 / np.sqrt((x32 ** 2).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    np.testing.assert_allclose(F.rms_norm(_t(x32), 4).numpy(), ref32, rtol=1e-6)
    assert gradcheck(lambda a, b: F.rms_norm(a, (2, 4), b), (_t(x, True), _t(w, True)))
    assert gradgradcheck(lambda a: F.rms_norm(a, 4, eps=1e-3), (_t(x, True),))
    with pytest.raises(RuntimeError, match=r"rms_norm\(\): Given normalized_shape=\[5\]"):
        F.rms_norm(_t(x), [5])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.rms_norm(_t(x), [4], _t(w))


def test_rms_norm_module():
    m = nn.RMSNorm([2, 4], eps=1e-5)
    assert repr(m) == "RMSNorm((2, 4), eps=1e-05, elementwise_affine=True)"
    assert np.array_equal(m.weight.detach().numpy(), np.ones((2, 4)))
    x = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    np.testing.assert_allclose(m(_t(x)).detach().numpy(),
                               x / np.sqrt((x ** 2).mean((1, 2), keepdims=True) + 1e-5),
                               rtol=1e-5)
    assert nn.RMSNorm(4, elementwise_affine=False).weight is None
    assert list(nn.RMSNorm(4, elementwise_affine=False).state_dict()) == []


def test_channel_shuffle():
    x = RNG.standard_normal((2, 6, 3))
    ref = x.reshape(2, 3, 2, 3).transpose(0, 2, 1, 3).reshape(2, 6, 3)
    np.testing.assert_array_equal(F.channel_shuffle(_t(x), 3).numpy(), ref)
    np.testing.assert_array_equal(nn.ChannelShuffle(3)(_t(x)).numpy(), ref)
    assert F.native_channel_shuffle is F.channel_shuffle
    assert gradcheck(lambda a: F.channel_shuffle(a, 2), (_t(x, True),))
    for bad, msg in (((x[:, :5], 3), "Number of channels must be divisible by groups. Got 5 "
                                     "channels and 3 groups."),
                     ((x[0, 0], 1), r"channel_shuffle expects input with > 2 dims"),
                     ((x, 0), "Number of groups to divide channels in must be positive")):
        with pytest.raises(RuntimeError, match=msg):
            F.channel_shuffle(_t(bad[0]), bad[1])


def test_conv_tbc():
    x = RNG.standard_normal((6, 2, 3))
    w = RNG.standard_normal((3, 3, 4))
    b = RNG.standard_normal(4)
    pad = 1
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    ref = np.stack([np.einsum("kbc,kco->bo", xp[t:t + 3], w) for t in range(6)]) + b
    np.testing.assert_allclose(F.conv_tbc(_t(x), _t(w), _t(b), pad).numpy(), ref, rtol=1e-12)
    assert gradcheck(lambda a, c, d: F.conv_tbc(a, c, d, 2), (_t(x, True), _t(w, True),
                                                              _t(b, True)))
    with pytest.raises(RuntimeError, match="Input dim 2"):
        F.conv_tbc(_t(x), _t(w[:, :2]), _t(b))


def test_gumbel_softmax_distribution_and_straight_through():
    et.manual_seed(0)
    logits = et.tensor([[0.0, 1.0, 2.0]]).expand(20000, 3)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0}
    np.testing.assert_array_equal(hard.numpy().sum(1), 1.0)
    # argmax of logits + Gumbel noise is a sample of softmax(logits)
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(hard.numpy().mean(0), p, atol=0.015)
    soft = F.gumbel_softmax(logits[:5], tau=2.0)
    np.testing.assert_allclose(soft.numpy().sum(1), 1.0, rtol=1e-6)
    assert (soft.numpy() > 0).all() and (soft.numpy() < 1).all()
    x = et.zeros(4, 3, requires_grad=True)
    y = F.gumbel_softmax(x, hard=True)
    (y * et.tensor([1.0, 2.0, 3.0])).sum().backward()
    # straight-through: the gradient is the soft sample's
    assert x.grad is not None and np.abs(x.grad.numpy()).sum() > 0
    np.testing.assert_allclose(x.grad.numpy().sum(1), 0.0, atol=1e-6)


def test_linear_cross_entropy():
    x = RNG.standard_normal((5, 4))
    w = RNG.standard_normal((3, 4))
    b = RNG.standard_normal(3)
    t = np.array([0, 2, 1, 2, 0])
    logits = x @ w.T + b
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ref = -logp[np.arange(5), t].mean()
    got = F.linear_cross_entropy(_t(x), _t(w), et.tensor(t), linear_bias=_t(b))
    np.testing.assert_allclose(got.item(), ref, rtol=1e-12)
    got = F.linear_cross_entropy(_t(x), _t(w), et.tensor(t), ignore_index=2, reduction="sum")
    keep = t != 2
    lp = x @ w.T
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    np.testing.assert_allclose(got.item(), -lp[np.arange(5), t][keep].sum(), rtol=1e-12)
    assert gradcheck(lambda a, c: F.linear_cross_entropy(a, c, et.tensor(t)),
                     (_t(x, True), _t(w, True)))


def _lrn_reference(x, size, alpha, beta, k):
    c = x.shape[1]
    pre = (size - 1) // 2 + 1
    sq = x ** 2
    out = np.empty_like(x)
    for i in range(c):
        chans = set(range(max(0, i - pre + 1), min(i + pre - 1, c - 1) + 1)) | {0}
        s = sum(sq[:, j] for j in chans)
        out[:, i] = x[:, i] * (k + alpha / size * s) ** -beta
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 5, 9])
def test_cross_map_lrn2d(size):
    x = RNG.standard_normal((2, 7, 3, 2))
    m = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=1.3)
    np.testing.assert_allclose(m(_t(x)).numpy(), _lrn_reference(x, size, 0.5, 0.7, 1.3),
                               rtol=1e-12)
    assert gradcheck(m, (_t(x, True),))
    assert repr(m) == f"CrossMapLRN2d({size}, alpha=0.5, beta=0.7, k=1.3)"
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        m(_t(x[0]))


def test_nll_loss_2d_is_a_deprecated_nll_loss():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        m = nn.NLLLoss2d(ignore_index=1)
    assert isinstance(m, nn.NLLLoss)
    x = et.tensor(RNG.standard_normal((2, 3, 2, 2))).log_softmax(1)
    t = et.tensor(RNG.integers(0, 3, (2, 2, 2)))
    np.testing.assert_allclose(m(x, t).item(), F.nll_loss(x, t, ignore_index=1).item())


def test_layer_norm_prints_bias():
    assert repr(nn.LayerNorm(2, bias=False)) == \
        "LayerNorm((2,), eps=1e-05, elementwise_affine=True, bias=False)"
