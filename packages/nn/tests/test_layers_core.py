"""Activations, linear, dropout, distance and sparse layers: NumPy references and float64
gradcheck / gradgradcheck of every functional."""
import math

import numpy as np
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et

rng = np.random.default_rng(0)


def _x(*shape, lo=-3, hi=3):
    # values away from the kinks (0, +-lambda, +-3, thresholds) so finite differences are exact
    a = rng.uniform(lo, hi, size=shape)
    a = np.where(np.abs(a) < 0.1, a + 0.3, a)
    for k in (0.5, 1.0, 3.0, 6.0):
        a = np.where(np.abs(np.abs(a) - k) < 0.05, a + 0.11, a)
    return a


def _t(a, grad=True):
    return et.tensor(a, dtype=et.float64, requires_grad=grad)


def _sig(a):
    return 1 / (1 + np.exp(-a))


ACT = {
    "relu": (F.relu, lambda a: np.maximum(a, 0)),
    "relu6": (F.relu6, lambda a: np.clip(a, 0, 6)),
    "elu": (lambda x: F.elu(x, 0.7), lambda a: np.where(a > 0, a, 0.7 * np.expm1(a))),
    "selu": (F.selu, lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 *
                                                             np.expm1(a))),
    "celu": (lambda x: F.celu(x, 2.0), lambda a: np.where(a > 0, a, 2 * np.expm1(a / 2))),
    "gelu": (F.gelu, lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 *
                                                                            a ** 3)))),
    "silu": (F.silu, lambda a: a * _sig(a)),
    "mish": (F.mish, lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), lambda a: np.where(a > 0.5, a, -2.0)),
    "hardtanh": (lambda x: F.hardtanh(x, -2, 2), lambda a: np.clip(a, -2, 2)),
    "hardsigmoid": (F.hardsigmoid, lambda a: np.clip(a / 6 + 0.5, 0, 1)),
    "hardswish": (F.hardswish, lambda a: a * np.clip(a + 3, 0, 6) / 6),
    "sigmoid": (F.sigmoid, _sig),
    "logsigmoid": (F.logsigmoid, lambda a: -np.log1p(np.exp(-a))),
    "tanh": (F.tanh, np.tanh),
    "tanhshrink": (F.tanhshrink, lambda a: a - np.tanh(a)),
    "softplus": (lambda x: F.softplus(x, 2.0, 4.0),
                 lambda a: np.where(2 * a > 4, a, np.log1p(np.exp(2 * a)) / 2)),
    "softshrink": (F.softshrink, lambda a: np.where(a > .5, a - .5, np.where(a < -.5, a + .5,
                                                                             0))),
    "hardshrink": (F.hardshrink, lambda a: np.where(np.abs(a) > .5, a, 0)),
    "softsign": (F.softsign, lambda a: a / (1 + np.abs(a))),
    "softmax": (lambda x: F.softmax(x, dim=1),
                lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1),
                    lambda a: a - np.log(np.exp(a).sum(-1, keepdims=True))),
    "softmin": (lambda x: F.softmin(x, dim=0),
                lambda a: np.exp(-a) / np.exp(-a).sum(0, keepdims=True)),
    "glu": (lambda x: F.glu(x, 1), lambda a: a[:, :2] * _sig(a[:, 2:])),
}


@pytest.mark.parametrize("name", sorted(ACT))
def test_activation_values_and_grads(name):
    fn, ref = ACT[name]
    a = _x(3, 4)
    x = _t(a)
    np.testing.assert_allclose(fn(x).detach().numpy(), ref(a), rtol=1e-7, atol=1e-10)
    assert ag.gradcheck(fn, (x,))
    assert ag.gradgradcheck(fn, (x,))
    xt = _t(a.T.copy()).t()  # non-contiguous input
    np.testing.assert_allclose(fn(xt).detach().numpy(), ref(a.T.copy().T), rtol=1e-7,
                               atol=1e-10)


def test_relu_grad_at_zero_and_inplace():
    x = et.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    F.relu(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    y = et.tensor([-1.0, 2.0])
    out = F.relu(y, inplace=True)
    assert y.tolist() == [0.0, 2.0] and out is y
    leaf = et.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        F.relu(leaf, inplace=True)
    z = et.tensor([-1.0, 3.0], requires_grad=True)
    h = z * 1
    nn.ReLU(inplace=True)(h).sum().backward()
    assert z.grad.tolist() == [0.0, 1.0]


def test_stable_extremes():
    x = et.tensor([[1000.0, -1000.0, 0.0]], requires_grad=True)
    for fn in (F.log_softmax, F.softmax):
        out = fn(x, dim=1)
        out.sum().backward()
        assert bool(et.isfinite(out).all()) and bool(et.isfinite(x.grad).all())
        x.grad = None
    for fn in (F.logsigmoid, F.softplus, F.elu, F.selu, F.celu, F.mish, F.silu):
        out = fn(x)
        out.sum().backward()
        assert bool(et.isfinite(out).all()) and bool(et.isfinite(x.grad).all()), fn
        x.grad = None


def test_prelu():
    a = _x(2, 3, 4)
    x = _t(a)
    w = _t(np.array([0.1, 0.2, 0.3]))
    ref = np.where(a > 0, a, a * np.array([0.1, 0.2, 0.3])[None, :, None])
    np.testing.assert_allclose(F.prelu(x, w).detach().numpy(), ref)
    assert ag.gradcheck(F.prelu, (x, w))
    m = nn.PReLU()
    assert m.weight.tolist() == [0.25] and repr(m) == "PReLU(num_parameters=1)"


def test_linear_bilinear():
    a, w, b = _x(5, 3), _x(4, 3), _x(4)
    np.testing.assert_allclose(F.linear(_t(a), _t(w), _t(b)).detach().numpy(), a @ w.T + b)
    assert ag.gradcheck(F.linear, (_t(a), _t(w), _t(b)))
    assert ag.gradgradcheck(F.linear, (_t(a), _t(w), _t(b)))
    a1, a2, wb = _x(2, 3), _x(2, 4), _x(5, 3, 4)
    ref = np.einsum("ni,oij,nj->no", a1, wb, a2) + b[:1]
    np.testing.assert_allclose(F.bilinear(_t(a1), _t(a2), _t(wb), _t(b[:1])).detach().numpy(),
                               ref, rtol=1e-10)
    assert ag.gradcheck(F.bilinear, (_t(a1), _t(a2), _t(wb)))
    lin = nn.Linear(6, 7)
    assert lin(et.randn(2, 5, 6)).shape == (2, 5, 7)
    bound = 1 / math.sqrt(6)
    assert float(lin.weight.abs().max()) <= bound and float(lin.bias.abs().max()) <= bound
    with pytest.raises(RuntimeError):
        lin(et.randn(2, 5))
    assert nn.Bilinear(3, 4, 5)(et.randn(2, 3), et.randn(2, 4)).shape == (2, 5)


def test_flatten_unflatten_identity():
    x = et.randn(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 1))(et.randn(2, 3)).shape == (2, 3, 1)
    assert nn.Identity(54, unused="x")(x) is x


def test_dropout():
    et.manual_seed(0)
    x = et.ones(1000, 100)
    d = nn.Dropout(0.3)
    out = d(x)
    vals = np.unique(out.numpy())
    np.testing.assert_allclose(vals, [0.0, 1 / 0.7], rtol=1e-6)
    assert abs(float((out == 0).float().mean()) - 0.3) < 0.01
    d.eval()
    assert d(x) is x
    out2 = nn.Dropout2d(0.5)(et.ones(4, 50, 3, 3))
    chan = out2.numpy().reshape(4, 50, 9)
    assert np.all(chan == chan[..., :1])
    ad = nn.AlphaDropout(0.2)
    y = ad(et.randn(200000, dtype=et.float64))
    assert abs(float(y.mean())) < 0.02 and abs(float(y.std()) - 1) < 0.02
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_distance():
    a, b = _x(4, 5), _x(4, 5)
    np.testing.assert_allclose(F.pairwise_distance(_t(a), _t(b)).detach().numpy(),
                               np.linalg.norm(a - b + 1e-6, axis=-1))
    cs = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(F.cosine_similarity(_t(a), _t(b)).detach().numpy(), cs)
    for fn in (F.pairwise_distance, F.cosine_similarity,
               lambda x, y: F.pairwise_distance(x, y, p=1.5)):
        assert ag.gradcheck(fn, (_t(a), _t(b)))
        assert ag.gradgradcheck(fn, (_t(a), _t(b)))
    assert nn.CosineSimilarity(dim=0)(et.randn(3, 2), et.randn(3, 2)).shape == (2,)
    np.testing.assert_allclose(F.normalize(_t(a)).detach().numpy(),
                               a / np.linalg.norm(a, axis=1, keepdims=True))


def test_embedding():
    w = _x(10, 3)
    idx = et.tensor([[1, 2, 2], [9, 0, 1]])
    np.testing.assert_array_equal(F.embedding(idx, _t(w)).detach().numpy(), w[idx.numpy()])
    assert ag.gradcheck(lambda t: F.embedding(idx, t), (_t(w),))
    assert ag.gradgradcheck(lambda t: F.embedding(idx, t) ** 2, (_t(w),))
    assert ag.gradcheck(lambda t: F.embedding(idx, t, scale_grad_by_freq=True) * 1.0,
                        (_t(w),), raise_exception=False) is False  # freq scaling is not a VJP
    emb = nn.Embedding(10, 3, padding_idx=2)
    assert emb.weight[2].tolist() == [0.0, 0.0, 0.0]
    emb(idx).sum().backward()
    g = emb.weight.grad.numpy()
    assert g[2].tolist() == [0.0, 0.0, 0.0] and g[1].tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(IndexError):
        emb(et.tensor([10]))
    pre = nn.Embedding.from_pretrained(et.tensor(w, dtype=et.float32))
    assert not pre.weight.requires_grad
    mn = nn.Embedding(10, 3, max_norm=1.0)
    mn(et.tensor([0, 1]))
    norms = np.linalg.norm(mn.weight.detach().numpy()[:2], axis=1)
    assert np.all(norms <= 1.0 + 1e-5)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    w = _x(6, 2)
    inp = et.tensor([0, 2, 4, 5, 1])
    offsets = et.tensor([0, 2])
    red = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    ref = np.stack([red(w[[0, 2]], 0), red(w[[4, 5, 1]], 0)])
    out = F.embedding_bag(inp, _t(w), offsets, mode=mode)
    np.testing.assert_allclose(out.detach().numpy(), ref)
    assert ag.gradcheck(lambda t: F.embedding_bag(inp, t, offsets, mode=mode), (_t(w),))
    bag2d = F.embedding_bag(et.tensor([[0, 2], [4, 5]]), _t(w), mode=mode)
    np.testing.assert_allclose(bag2d.detach().numpy()[0], ref[0])


def test_embedding_bag_weights_and_padding():
    w = _x(6, 2)
    inp, offsets = et.tensor([0, 2, 4]), et.tensor([0, 1])
    psw = et.tensor([2.0, 3.0, 0.5], dtype=et.float64)
    out = F.embedding_bag(inp, _t(w), offsets, mode="sum", per_sample_weights=psw)
    np.testing.assert_allclose(out.detach().numpy(), [2 * w[0], 3 * w[2] + 0.5 * w[4]])
    out = F.embedding_bag(inp, _t(w), offsets, mode="mean", padding_idx=4)
    np.testing.assert_allclose(out.detach().numpy(), [w[0], w[2]])
    bag = nn.EmbeddingBag(6, 2, mode="sum")
    assert bag(inp, offsets).shape == (2, 2)


def test_one_hot():
    assert F.one_hot(et.tensor([0, 2]), 4).tolist() == [[1, 0, 0, 0], [0, 0, 1, 0]]


def test_activation_modules_repr():
    assert repr(nn.LeakyReLU(0.2, inplace=True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)"
    assert nn.Softmax2d()(et.randn(2, 3, 4, 4)).sum(1).allclose(et.ones(2, 4, 4))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmax(et.randn(2, 3))


def test_clip_grad_and_vector():
    from ember.nn.utils import (
        clip_grad_norm_,
        clip_grad_value_,
        parameters_to_vector,
        vector_to_parameters,
    )

    p1 = nn.Parameter(et.ones(3))
    p2 = nn.Parameter(et.ones(4))
    p1.grad = et.full((3,), 3.0)
    p2.grad = et.full((4,), 4.0)
    total = clip_grad_norm_([p1, p2], 1.0)
    np.testing.assert_allclose(total.item(), math.sqrt(27 + 64), rtol=1e-6)
    norm_after = math.sqrt(float((p1.grad ** 2).sum() + (p2.grad ** 2).sum()))
    assert abs(norm_after - 1.0) < 1e-4
    p1.grad = et.tensor([float("inf"), 0.0, 0.0])
    with pytest.raises(RuntimeError):
        clip_grad_norm_([p1], 1.0, error_if_nonfinite=True)
    p1.grad = et.tensor([-5.0, 0.1, 5.0])
    clip_grad_value_(p1, 1.0)
    assert p1.grad.tolist() == pytest.approx([-1.0, 0.1, 1.0])
    p1.grad = et.tensor([3.0, 0.0, 4.0])
    assert clip_grad_norm_([p1], 10.0, norm_type=float("inf")).item() == 4.0
    vec = parameters_to_vector([p1, p2])
    assert vec.shape == (7,)
    vector_to_parameters(et.arange(7.0), [p1, p2])
    assert p2.tolist() == [3.0, 4.0, 5.0, 6.0]


def test_one_hot_inside_autobatch_waits_and_batches():
    """one_hot of concrete labels inside autobatch(): the range checks read the labels
    themselves and the encoding is a comparison (no in-place scatter), so nothing flushes the
    pending graph per example; values and gradients equal the run without the context."""
    rng = np.random.default_rng(5)
    w = et.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    xs = [et.tensor(rng.standard_normal((2, 3))) for _ in range(6)]
    ys = [et.tensor(rng.integers(0, 4, 2)) for _ in range(6)]

    def loss():
        return et.stack([(F.one_hot(y, 4).to(et.float64) * F.log_softmax(x @ w, -1)).sum()
                         for x, y in zip(xs, ys)]).sum()

    eager = loss()
    eager.backward()
    g, w.grad = w.grad.clone(), None
    with ag.autobatch() as ctx:
        batched = loss()
    batched.backward()
    np.testing.assert_allclose(batched.item(), eager.item(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g.numpy(), rtol=1e-12)
    onehots = np.stack([F.one_hot(y, 4).numpy() for y in ys])
    np.testing.assert_array_equal(onehots, np.eye(4, dtype=np.int64)[np.stack([y.numpy()
                                                                             for y in ys])])
    assert ctx.stats["groups"] * 4 < ctx.stats["calls"], ctx.stats
