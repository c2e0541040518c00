"""Normalization and attention: NumPy references for forward values, float64 gradcheck and
gradgradcheck for every functional, running statistics and the layers."""
import copy

import numpy as np
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember.autograd import no_grad

RNG = np.random.default_rng(99)


def _t(a, grad=False):
    return et.tensor(np.asarray(a), requires_grad=grad)


def _noncontig(a, grad=True):
    a = np.asarray(a, dtype=np.float64)
    t = et.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2).detach()
    assert not t.is_contiguous()
    t.requires_grad_(grad)
    return t


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# --------------------------------------------------------------------------- batch norm
def test_batch_norm_training_and_running_stats():
    x = RNG.standard_normal((5, 3, 4, 2))
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.random(3) + 0.5
    erm, erv = _t(rm), _t(rv)
    out = F.batch_norm(_t(x), erm, erv, _t(w), _t(b), training=True, momentum=0.2, eps=1e-3)
    mean = x.mean((0, 2, 3))
    var = x.var((0, 2, 3))
    ref = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-3) * w[:, None, None] \
        + b[:, None, None]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    n = x.size // 3
    np.testing.assert_allclose(erm.numpy(), 0.8 * rm + 0.2 * mean, rtol=1e-12)
    np.testing.assert_allclose(erv.numpy(), 0.8 * rv + 0.2 * var * n / (n - 1), rtol=1e-12)
    ev = F.batch_norm(_t(x), _t(rm), _t(rv), None, None, training=False)
    np.testing.assert_allclose(ev.numpy(), (x - rm[:, None, None]) / np.sqrt(
        rv[:, None, None] + 1e-5), rtol=1e-10)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(et.randn(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="elements"):
        F.batch_norm(et.randn(4, 3), et.zeros(2), et.ones(2))


def test_sync_batch_norm_in_one_process_is_batch_norm():
    rng = np.random.default_rng(11)
    x = et.from_numpy(rng.standard_normal((4, 3, 5)))
    sbn, bn = nn.SyncBatchNorm(3, momentum=None).double(), nn.BatchNorm1d(3, momentum=None).double()
    for _ in range(2):
        assert np.allclose(sbn(x).detach().numpy(), bn(x).detach().numpy(), atol=1e-12)
    assert np.allclose(sbn.running_var.numpy(), bn.running_var.numpy())
    assert int(sbn.num_batches_tracked) == 2 and sbn.process_group is None
    assert sbn(et.randn(2, 3, 2, 2, 2, dtype=et.float64)).shape == (2, 3, 2, 2, 2)
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        sbn(et.randn(3))


def test_convert_sync_batchnorm_shares_parameters_and_state():
    net = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3, momentum=0.3),
                        nn.Sequential(nn.BatchNorm1d(4, affine=False)), nn.InstanceNorm2d(3))
    net[1].running_mean.add_(1)
    net[2][0].eval()
    weight = net[1].weight
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group="pg")
    assert out is net and isinstance(net[1], nn.SyncBatchNorm)
    assert isinstance(net[2][0], nn.SyncBatchNorm) and isinstance(net[3], nn.InstanceNorm2d)
    assert net[1].weight is weight and net[1].momentum == 0.3 and net[1].process_group == "pg"
    assert net[1].running_mean.tolist() == [1.0, 1.0, 1.0]
    assert net[2][0].weight is None and not net[2][0].training
    root = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2))
    assert type(root) is nn.SyncBatchNorm


def test_instance_norm_matches_numpy():
    x = RNG.standard_normal((2, 3, 5))
    rm, rv = np.zeros(3), np.ones(3)
    erm, erv = _t(rm), _t(rv)
    out = F.instance_norm(_t(x), erm, erv, _t(np.arange(3.0)), _t(np.ones(3)), momentum=0.5)
    mean, var = x.mean(2, keepdims=True), x.var(2, keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-5) * np.arange(3.0)[:, None] + 1
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(erm.numpy(), 0.5 * mean[..., 0].mean(0), rtol=1e-12)
    np.testing.assert_allclose(erv.numpy(), 0.5 + 0.5 * (x.var(2, ddof=1)).mean(0), rtol=1e-12)
    used = F.instance_norm(_t(x), erm, erv, use_input_stats=False)
    np.testing.assert_allclose(used.numpy(), (x - erm.numpy()[:, None]) / np.sqrt(
        erv.numpy()[:, None] + 1e-5), rtol=1e-10)


def test_layer_and_group_norm_match_numpy():
    x = RNG.standard_normal((2, 6, 3, 2))
    w, b = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    out = F.layer_norm(_t(x), (3, 2), _t(w), _t(b), eps=1e-4)
    mean = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(out.numpy(), (x - mean) / np.sqrt(var + 1e-4) * w + b,
                               rtol=1e-10, atol=1e-12)
    gw, gb = RNG.standard_normal(6), RNG.standard_normal(6)
    g = F.group_norm(_t(x), 3, _t(gw), _t(gb))
    xg = x.reshape(2, 3, -1)
    ref = ((xg - xg.mean(2, keepdims=True)) / np.sqrt(xg.var(2, keepdims=True) + 1e-5))
    ref = ref.reshape(x.shape) * gw[:, None, None] + gb[:, None, None]
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(_t(x), (4,))
    with pytest.raises(RuntimeError, match="divisible"):
        F.group_norm(_t(x), 4)


@pytest.mark.parametrize("shape", [(2, 5, 3), (1, 4, 2, 3)])
def test_local_response_norm_matches_numpy(shape):
    x = RNG.standard_normal(shape)
    size, alpha, beta, k = 3, 0.3, 0.75, 2.0
    out = F.local_response_norm(_t(x), size, alpha, beta, k)
    C = shape[1]
    sq = x ** 2
    div = np.zeros_like(x)
    for c in range(C):
        lo, hi = c - size // 2, c + (size - 1) // 2
        div[:, c] = sq[:, max(lo, 0):min(hi, C - 1) + 1].sum(1) / size
    ref = x / (k + alpha * div) ** beta
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)


def test_normalize_matches_numpy():
    x = RNG.standard_normal((3, 4))
    x[1] = 0.0
    out = F.normalize(_t(x), p=3, dim=1)
    norm = (np.abs(x) ** 3).sum(1, keepdims=True) ** (1 / 3)
    np.testing.assert_allclose(out.numpy(), x / np.maximum(norm, 1e-12), rtol=1e-10)


@pytest.mark.parametrize("name,fn", [
    ("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    ("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b)),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w.repeat(2)[:4], b.repeat(2)[:4])),
    ("group_norm", lambda x, w, b: F.group_norm(x, 1, w, b)),
    ("local_response_norm", lambda x, w, b: F.local_response_norm(x * w.reshape(1, 2, 1), 2)),
    ("normalize", lambda x, w, b: F.normalize(x + b.reshape(1, 2, 1), dim=2)),
])
def test_norm_gradcheck(name, fn):
    x = _noncontig(RNG.standard_normal((3, 2, 4)))
    w = _t(RNG.standard_normal(2) + 1.5, True)
    b = _t(RNG.standard_normal(2), True)
    assert ag.gradcheck(fn, (x, w, b))
    assert ag.gradgradcheck(fn, (x, w, b))


# --------------------------------------------------------------------------- attention
def _np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return _np_softmax(s) @ v


@pytest.mark.parametrize("kind", ["none", "bool", "float", "causal", "scale"])
def test_sdpa_matches_numpy(kind):
    q = RNG.standard_normal((2, 3, 4, 5))
    k = RNG.standard_normal((2, 3, 6, 5))
    v = RNG.standard_normal((2, 3, 6, 7))
    mask = None
    if kind == "bool":
        mask = RNG.random((4, 6)) > 0.4
        mask[:, 0] = True
    elif kind == "float":
        mask = RNG.standard_normal((2, 1, 4, 6))
    kw = {"is_causal": kind == "causal", "scale": 0.3 if kind == "scale" else None}
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v),
                                         None if mask is None else _t(mask), **kw)
    ref = _np_sdpa(q, k, v, mask, kw["is_causal"], kw["scale"])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_sdpa_dropout_and_errors():
    q = et.randn(2, 4, 3)
    et.manual_seed(0)
    full = F.scaled_dot_product_attention(q, q, et.ones(2, 4, 3), dropout_p=0.5)
    vals = set(np.round(full.numpy().ravel(), 6).tolist())
    assert len(vals) > 1  # dropped weights change the (otherwise all-ones) output
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=et.ones(4, 4), is_causal=True)
    with pytest.raises(RuntimeError, match="last dim"):
        F.scaled_dot_product_attention(q, et.randn(2, 4, 2), q)


def test_sdpa_gradcheck():
    q = _noncontig(RNG.standard_normal((2, 3, 4)))
    k = _t(RNG.standard_normal((2, 5, 4)), True)
    v = _t(RNG.standard_normal((2, 5, 3)), True)
    m = _t(RNG.standard_normal((3, 5)))
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, m)  # noqa: E731
    assert ag.gradcheck(f, (q, k, v))
    assert ag.gradgradcheck(f, (q, k, v))
    g = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    assert ag.gradcheck(g, (q, k, v))


def _np_mha(q, k, v, H, ipw, ipb, opw, opb, attn_mask=None, kpm=None):
    L, N, E = q.shape
    S = k.shape[0]
    hd = E // H
    wq, wk, wv = np.split(ipw, 3)
    bq, bk, bv = np.split(ipb, 3)
    qp, kp, vp = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv

    def heads(t, n):
        return t.reshape(n, N * H, hd).transpose(1, 0, 2)

    qh, kh, vh = heads(qp, L), heads(kp, S), heads(vp, S)
    s = qh @ kh.transpose(0, 2, 1) / np.sqrt(hd)
    s = s.reshape(N, H, L, S)
    if attn_mask is not None:
        s = np.where(attn_mask, -np.inf, s)
    if kpm is not None:
        s = np.where(kpm[:, None, None, :], -np.inf, s)
    w = _np_softmax(s)
    o = (w.reshape(N * H, L, S) @ vh).transpose(1, 0, 2).reshape(L, N, E)
    return o @ opw.T + opb, w.mean(1)


def test_multi_head_attention_forward_matches_numpy():
    E, H = 8, 2
    q, k = RNG.standard_normal((5, 3, E)), RNG.standard_normal((6, 3, E))
    ipw, ipb = RNG.standard_normal((3 * E, E)), RNG.standard_normal(3 * E)
    opw, opb = RNG.standard_normal((E, E)), RNG.standard_normal(E)
    am = RNG.random((5, 6)) > 0.8
    am[:, 0] = False
    kpm = RNG.random((3, 6)) > 0.7
    kpm[:, 0] = False
    out, w = F.multi_head_attention_forward(_t(q), _t(k), _t(k), E, H, _t(ipw), _t(ipb), None,
                                            None, False, 0.0, _t(opw), _t(opb),
                                            key_padding_mask=_t(kpm), attn_mask=_t(am))
    ro, rw = _np_mha(q, k, k, H, ipw, ipb, opw, opb, am, kpm)
    np.testing.assert_allclose(out.numpy(), ro, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(w.numpy(), rw, rtol=1e-9, atol=1e-12)


def test_multi_head_attention_gradcheck():
    E, H = 4, 2
    q = _noncontig(RNG.standard_normal((3, 2, E)))
    ipw = _t(RNG.standard_normal((3 * E, E)) * 0.5, True)
    opw = _t(RNG.standard_normal((E, E)), True)
    f = lambda q, ipw, opw: F.multi_head_attention_forward(  # noqa: E731
        q, q, q, E, H, ipw, None, None, None, False, 0.0, opw, None)[0]
    assert ag.gradcheck(f, (q, ipw, opw))
    assert ag.gradgradcheck(f, (q, ipw, opw))


# --------------------------------------------------------------------------- layers
def test_batchnorm_layer_modes_and_buffers():
    bn = nn.BatchNorm1d(3, momentum=None)
    x1, x2 = et.randn(6, 3), et.randn(6, 3) + 2
    bn(x1)
    bn(x2)
    assert int(bn.num_batches_tracked) == 2
    both = (x1.numpy().mean(0) + x2.numpy().mean(0)) / 2  # cumulative average
    np.testing.assert_allclose(bn.running_mean.numpy(), both, rtol=1e-5, atol=1e-6)
    bn.eval()
    out = bn(x1)
    ref = (x1.numpy() - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-5)
    assert int(bn.num_batches_tracked) == 2
    assert set(bn.state_dict()) == {"weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"}
    nt = nn.BatchNorm2d(2, track_running_stats=False, affine=False)
    assert nt.running_mean is None and list(nt.parameters()) == []
    nt.eval()
    y = nt(et.randn(3, 2, 2, 2))  # no running stats: batch statistics even in eval
    np.testing.assert_allclose(y.numpy().mean((0, 2, 3)), 0, atol=1e-6)
    with pytest.raises(ValueError, match="4D"):
        nn.BatchNorm2d(2)(et.randn(3, 2))


def test_norm_layers():
    x = et.randn(2, 4, 6)
    inorm = nn.InstanceNorm1d(4, affine=True, track_running_stats=True)
    inorm(x)
    assert int(inorm.num_batches_tracked) == 0  # instance norm never counts batches
    assert tuple(inorm(x[0]).shape) == (4, 6)  # unbatched
    assert tuple(nn.LayerNorm((4, 6))(x).shape) == (2, 4, 6)
    assert nn.LayerNorm(6, bias=False).bias is None
    assert tuple(nn.GroupNorm(2, 4)(x).shape) == (2, 4, 6)
    assert tuple(nn.LocalResponseNorm(3)(x).shape) == (2, 4, 6)
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    # bias=False (PyTorch 2.13): a weight and no bias, everywhere a norm layer has an affine
    for layer in (nn.GroupNorm(2, 4, bias=False), nn.BatchNorm1d(4, bias=False),
                  nn.InstanceNorm1d(4, affine=True, bias=False)):
        assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]
        with no_grad():
            layer.weight.fill_(2.0)
        y = layer(x).detach().numpy()
        xn = x.numpy()
        axes = (0, 2) if isinstance(layer, nn.BatchNorm1d) else \
            ((1, 2) if isinstance(layer, nn.GroupNorm) else (2,))
        if isinstance(layer, nn.GroupNorm):
            g = xn.reshape(2, 2, 2, 6)
            ref = ((g - g.mean((2, 3), keepdims=True)) /
                   np.sqrt(g.var((2, 3), keepdims=True) + 1e-5)).reshape(2, 4, 6) * 2
        else:
            ref = 2 * (xn - xn.mean(axes, keepdims=True)) / np.sqrt(
                xn.var(axes, keepdims=True) + 1e-5)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_multihead_attention_layer():
    et.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    assert tuple(mha.in_proj_weight.shape) == (24, 8)
    assert float(mha.in_proj_bias.abs().sum()) == 0.0
    x = et.randn(3, 5, 8)
    out, w = mha(x, x, x)
    assert tuple(out.shape) == (3, 5, 8) and tuple(w.shape) == (3, 5, 5)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1.0, rtol=1e-5)
    out2, w2 = mha(x, x, x, need_weights=False)
    assert w2 is None
    np.testing.assert_allclose(out2.detach().numpy(), out.detach().numpy(), rtol=1e-5)
    _, wh = mha(x, x, x, average_attn_weights=False)
    assert tuple(wh.shape) == (3, 2, 5, 5)
    kv = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
    assert kv.in_proj_weight is None and tuple(kv.k_proj_weight.shape) == (8, 3)
    o, w = kv(et.randn(4, 2, 8), et.randn(6, 2, 3), et.randn(6, 2, 5))
    assert tuple(o.shape) == (4, 2, 8) and tuple(w.shape) == (2, 4, 8)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder(norm_first):
    et.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                       activation="gelu", batch_first=True,
                                       norm_first=norm_first)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    assert enc.layers[0] is not enc.layers[1]
    x = et.randn(2, 5, 8, requires_grad=True)
    mask = et.tensor(np.triu(np.ones((5, 5), bool), 1))
    out = enc(x, mask=mask)
    assert tuple(out.shape) == (2, 5, 8)
    out.sum().backward()
    assert x.grad is not None and all(p.grad is not None for p in enc.parameters())
    # a causal mask: the first position does not see later ones
    x2 = x.detach().clone()
    x2[:, 1:] = 0.0
    np.testing.assert_allclose(enc(x2, mask=mask)[:, 0].detach().numpy(),
                               out[:, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
    keys = set(copy.deepcopy(enc).state_dict())
    assert "layers.1.self_attn.in_proj_weight" in keys and "norm.weight" in keys


def test_mha_self_attention_on_unbatched_inputs_inside_autobatch():
    """Per-example self-attention on (L, E) inputs: the query, key and value stay one tensor
    when made 3-d, so the packed in-projection is one product, which autobatch runs as one
    batched call (three chunks of the weight in one group could not share a weight); values
    and gradients equal the run without the context and the batched (L, 1, E) call."""
    rng = np.random.default_rng(8)
    mha = nn.MultiheadAttention(6, 2, dtype=et.float64)
    xs = [et.tensor(rng.standard_normal((4, 6))) for _ in range(5)]

    def loss():
        return et.stack([mha(x, x, x)[0].sum() for x in xs]).sum()

    eager = loss()
    eager.backward()
    g, mha.in_proj_weight.grad = mha.in_proj_weight.grad.clone(), None
    with ag.autobatch() as ctx:
        batched = loss()
    batched.backward()
    np.testing.assert_allclose(batched.item(), eager.item(), rtol=1e-12)
    np.testing.assert_allclose(mha.in_proj_weight.grad.numpy(), g.numpy(), rtol=1e-10)
    assert ctx.stats["unbatched"] == {}, ctx.stats["unbatched"]
    x = xs[0]
    np.testing.assert_allclose(mha(x, x, x)[0].detach().numpy(),
                               mha(x[:, None], x[:, None], x[:, None])[0][:, 0].detach().numpy(),
                               rtol=1e-12)
