"""nn.Transformer and its parts against a NumPy oracle (float64): post- and pre-norm encoder
and decoder layers with bool / float attention and key-padding masks, the stacks, the full
model; plus shapes, batch_first, PyTorch's parameter names, the causal-mask helper,
``is_causal`` detection, gradients and errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember.autograd import gradcheck

D, H, FF = 8, 2, 12


def _np(t):
    return t.detach().numpy()


def _seq(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# --------------------------------------------------------------------------- NumPy oracle
def _softmax_safe(x):
    m = np.max(x, -1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    s = e.sum(-1, keepdims=True)
    return e / np.where(s == 0, 1.0, s)


def _as_bias(mask):
    if mask is None:
        return 0.0
    mask = np.asarray(mask)
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def np_mha(sd, prefix, q_in, kv_in, attn_mask=None, kpm=None):
    """Sequence-first (L, N, E) multi-head attention with PyTorch's parameter layout."""
    W, b = sd[prefix + "in_proj_weight"], sd.get(prefix + "in_proj_bias")
    Wq, Wk, Wv = np.split(W, 3)
    bq, bk, bv = np.split(b, 3) if b is not None else (0.0, 0.0, 0.0)
    L, N, E = q_in.shape
    S = kv_in.shape[0]
    hd = E // H
    q = (q_in @ Wq.T + bq).reshape(L, N, H, hd).transpose(1, 2, 0, 3)  # N, H, L, hd
    k = (kv_in @ Wk.T + bk).reshape(S, N, H, hd).transpose(1, 2, 0, 3)
    v = (kv_in @ Wv.T + bv).reshape(S, N, H, hd).transpose(1, 2, 0, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + _as_bias(attn_mask)
    if kpm is not None:
        scores = scores + _as_bias(kpm)[:, None, None, :]
    out = _softmax_safe(scores) @ v  # N, H, L, hd
    out = out.transpose(2, 0, 1, 3).reshape(L, N, E)
    ob = sd.get(prefix + "out_proj.bias")
    return out @ sd[prefix + "out_proj.weight"].T + (ob if ob is not None else 0.0)


def np_ln(sd, prefix, x, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * sd[prefix + "weight"]
    b = sd.get(prefix + "bias")
    return y + b if b is not None else y


def np_linear(sd, prefix, x):
    b = sd.get(prefix + "bias")
    y = x @ sd[prefix + "weight"].T
    return y + b if b is not None else y


def np_gelu(x):
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


def np_ff(sd, p, x, act):
    return np_linear(sd, p + "linear2.", act(np_linear(sd, p + "linear1.", x)))


def np_encoder_layer(sd, p, x, mask, kpm, norm_first, act, eps=1e-5):
    if norm_first:
        h = np_ln(sd, p + "norm1.", x, eps)
        x = x + np_mha(sd, p + "self_attn.", h, h, mask, kpm)
        return x + np_ff(sd, p, np_ln(sd, p + "norm2.", x, eps), act)
    x = np_ln(sd, p + "norm1.", x + np_mha(sd, p + "self_attn.", x, x, mask, kpm), eps)
    return np_ln(sd, p + "norm2.", x + np_ff(sd, p, x, act), eps)


def np_decoder_layer(sd, p, x, mem, tmask, mmask, tkpm, mkpm, norm_first, act, eps=1e-5):
    if norm_first:
        h = np_ln(sd, p + "norm1.", x, eps)
        x = x + np_mha(sd, p + "self_attn.", h, h, tmask, tkpm)
        x = x + np_mha(sd, p + "multihead_attn.", np_ln(sd, p + "norm2.", x, eps), mem, mmask,
                       mkpm)
        return x + np_ff(sd, p, np_ln(sd, p + "norm3.", x, eps), act)
    x = np_ln(sd, p + "norm1.", x + np_mha(sd, p + "self_attn.", x, x, tmask, tkpm), eps)
    x = np_ln(sd, p + "norm2.", x + np_mha(sd, p + "multihead_attn.", x, mem, mmask, mkpm),
              eps)
    return np_ln(sd, p + "norm3.", x + np_ff(sd, p, x, act), eps)


def _relu(x):
    return np.maximum(x, 0.0)


def _sd(m):
    return {k: _np(v) for k, v in m.state_dict().items()}


def _masks(kind, L, S, n):
    if kind is None:
        return None, None
    causal = np.triu(np.ones((L, S), bool), 1)
    pad = np.zeros((n, S), bool)
    pad[0, -1] = True
    if kind == "bool":
        return causal, pad
    f = np.where(causal, -np.inf, 0.0)
    f[-1, 0] = 0.75
    return f, np.where(pad, -np.inf, 0.0)


def _t(a):
    return None if a is None else et.tensor(a)


# --------------------------------------------------------------------------- vs oracle
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("masks", [None, "bool", "float"])
def test_encoder_layer_matches_numpy(norm_first, act, masks):
    et.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=act,
                                       norm_first=norm_first, dtype=et.float64)
    x = _seq((5, 3, D))
    mask, kpm = _masks(masks, 5, 5, 3)
    out = layer(et.tensor(x), src_mask=_t(mask), src_key_padding_mask=_t(kpm))
    ref = np_encoder_layer(_sd(layer), "", x, mask, kpm, norm_first,
                           _relu if act == "relu" else np_gelu)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", [None, "bool", "float"])
def test_decoder_layer_matches_numpy(norm_first, masks):
    et.manual_seed(1)
    layer = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first,
                                       layer_norm_eps=1e-3, dtype=et.float64)
    x, mem = _seq((4, 2, D), 1), _seq((6, 2, D), 2)
    tmask, tkpm = _masks(masks, 4, 4, 2)
    mmask, mkpm = _masks(masks, 4, 6, 2)
    out = layer(et.tensor(x), et.tensor(mem), tgt_mask=_t(tmask), memory_mask=_t(mmask),
                tgt_key_padding_mask=_t(tkpm), memory_key_padding_mask=_t(mkpm))
    ref = np_decoder_layer(_sd(layer), "", x, mem, tmask, mmask, tkpm, mkpm, norm_first,
                           _relu, eps=1e-3)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-10, atol=1e-10)


def test_full_transformer_matches_numpy():
    et.manual_seed(2)
    model = nn.Transformer(D, H, 2, 2, FF, dropout=0.0, dtype=et.float64)
    src, tgt = _seq((6, 2, D), 3), _seq((4, 2, D), 4)
    tmask = np.triu(np.full((4, 4), -np.inf), 1)
    _, skpm = _masks("bool", 6, 6, 2)
    out = model(et.tensor(src), et.tensor(tgt), tgt_mask=et.tensor(tmask),
                src_key_padding_mask=et.tensor(skpm), memory_key_padding_mask=et.tensor(skpm))
    sd = _sd(model)
    mem = src
    for i in range(2):
        mem = np_encoder_layer(sd, f"encoder.layers.{i}.", mem, None, skpm, False, _relu)
    mem = np_ln(sd, "encoder.norm.", mem)
    y = tgt
    for i in range(2):
        y = np_decoder_layer(sd, f"decoder.layers.{i}.", y, mem, tmask, None, None, skpm,
                             False, _relu)
    y = np_ln(sd, "decoder.norm.", y)
    np.testing.assert_allclose(_np(out), y, rtol=1e-10, atol=1e-10)


def test_fully_masked_rows_give_finite_outputs_like_pytorch():
    et.manual_seed(3)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, dtype=et.float64)
    kpm = np.ones((2, 3), bool)
    kpm[1] = False
    out = layer(et.tensor(_seq((3, 2, D))), src_key_padding_mask=et.tensor(kpm))
    assert np.isfinite(_np(out)).all()


# --------------------------------------------------------------------------- structure
def test_parameter_names_follow_pytorch():
    model = nn.Transformer(D, H, 1, 1, FF)
    names = list(model.state_dict())
    attn = ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    ff = ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
    enc = [f"encoder.layers.0.self_attn.{n}" for n in attn] + \
        [f"encoder.layers.0.{n}" for n in ff] + \
        [f"encoder.layers.0.norm{i}.{w}" for i in (1, 2) for w in ("weight", "bias")] + \
        ["encoder.norm.weight", "encoder.norm.bias"]
    dec = [f"decoder.layers.0.self_attn.{n}" for n in attn] + \
        [f"decoder.layers.0.multihead_attn.{n}" for n in attn] + \
        [f"decoder.layers.0.{n}" for n in ff] + \
        [f"decoder.layers.0.norm{i}.{w}" for i in (1, 2, 3) for w in ("weight", "bias")] + \
        ["decoder.norm.weight", "decoder.norm.bias"]
    assert names == enc + dec
    assert model.encoder.layers[0].self_attn.in_proj_weight.shape == (3 * D, D)
    assert model.d_model == D and model.nhead == H and model.batch_first is False


def test_bias_false_drops_every_bias():
    model = nn.Transformer(D, H, 1, 1, FF, bias=False)
    assert not any(n.endswith("bias") for n in model.state_dict())


def test_default_init_is_xavier_uniform_for_matrices():
    et.manual_seed(0)
    model = nn.Transformer(16, 4, 1, 1, 32)
    for name, p in model.named_parameters():
        a = _np(p)
        if a.ndim > 1:
            assert np.abs(a).max() <= math.sqrt(6.0 / (a.shape[0] + a.shape[1])) + 1e-7, name
        elif "norm" in name and name.endswith("weight"):
            assert (a == 1).all(), name


@pytest.mark.parametrize("cls_args", [
    (nn.TransformerEncoderLayer, (D, H, FF)),
    (nn.TransformerDecoderLayer, (D, H, FF)),
])
def test_batch_first_is_a_transpose(cls_args):
    cls, args = cls_args
    et.manual_seed(4)
    seq = cls(*args, dropout=0.0, dtype=et.float64).eval()
    bf = cls(*args, dropout=0.0, batch_first=True, dtype=et.float64).eval()
    bf.load_state_dict(seq.state_dict())
    x, mem = _seq((5, 2, D)), _seq((3, 2, D), 1)
    extra = [] if cls is nn.TransformerEncoderLayer else [et.tensor(mem)]
    extra_bf = [] if cls is nn.TransformerEncoderLayer else [et.tensor(mem.transpose(1, 0, 2))]
    a = seq(et.tensor(x), *extra)
    b = bf(et.tensor(x.transpose(1, 0, 2)), *extra_bf)
    np.testing.assert_allclose(_np(b), _np(a).transpose(1, 0, 2), rtol=1e-12, atol=1e-12)


def test_shapes_batched_unbatched_and_callable_activation():
    model = nn.Transformer(D, H, 1, 1, FF, activation=lambda x: F.relu(x) * 0.5,
                           batch_first=True)
    assert model(et.randn(3, 7, D), et.randn(3, 4, D)).shape == (3, 4, D)
    assert model(et.randn(7, D), et.randn(4, D)).shape == (4, D)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, activation=nn.GELU()), 3,
                                enable_nested_tensor=False)
    assert len(enc.layers) == 3 and enc.enable_nested_tensor is False
    assert enc.layers[0] is not enc.layers[1]
    assert enc(et.randn(5, 2, D)).shape == (5, 2, D)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF), 2, norm=nn.LayerNorm(D))
    assert dec(et.randn(4, 2, D), et.randn(6, 2, D)).shape == (4, 2, D)


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == et.float32 and m.shape == (4, 4)
    np.testing.assert_array_equal(_np(m), np.triu(np.full((4, 4), -np.inf), 1))
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=et.float64).dtype == \
        et.float64
    assert nn.Transformer(D, H, 1, 1, FF).generate_square_subsequent_mask(3).shape == (3, 3)


def test_causal_mask_means_no_future_leak():
    et.manual_seed(5)
    model = nn.Transformer(D, H, 1, 2, FF, dropout=0.0, dtype=et.float64).eval()
    src, tgt = _seq((5, 1, D)), _seq((4, 1, D), 1)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=et.float64)
    a = model(et.tensor(src), et.tensor(tgt), tgt_mask=mask, tgt_is_causal=True)
    tgt2 = tgt.copy()
    tgt2[3] += 10.0  # change only the last position
    b = model(et.tensor(src), et.tensor(tgt2), tgt_mask=mask)  # is_causal detected
    np.testing.assert_allclose(_np(a)[:3], _np(b)[:3], rtol=1e-12, atol=1e-12)
    assert not np.allclose(_np(a)[3], _np(b)[3])


def test_key_padding_hides_padded_keys():
    et.manual_seed(6)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                       dtype=et.float64)
    x = _seq((1, 5, D))
    kpm = et.tensor([[False, False, False, True, True]])
    a = layer(et.tensor(x), src_key_padding_mask=kpm)
    x2 = x.copy()
    x2[0, 3:] = -7.0
    b = layer(et.tensor(x2), src_key_padding_mask=kpm)
    np.testing.assert_allclose(_np(a)[0, :3], _np(b)[0, :3], rtol=1e-12, atol=1e-12)


def test_is_causal_detection():
    from ember.nn.modules.transformer import _detect_is_causal_mask

    causal = nn.Transformer.generate_square_subsequent_mask(3)
    assert _detect_is_causal_mask(causal) is True
    assert _detect_is_causal_mask(causal, False) is False
    assert _detect_is_causal_mask(None, True) is True
    assert _detect_is_causal_mask(et.zeros(3, 3)) is False
    assert _detect_is_causal_mask(causal, size=4) is False


def test_gradcheck_decoder_layer():
    et.manual_seed(7)
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True,
                                       dtype=et.float64)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=et.float64)
    x = et.tensor(_seq((3, 1, 4)), requires_grad=True)
    mem = et.tensor(_seq((2, 1, 4), 1), requires_grad=True)
    assert gradcheck(lambda a, b: layer(a, b, tgt_mask=mask), (x, mem))


def test_dropout_is_active_only_in_training():
    et.manual_seed(8)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.5)
    x = et.randn(4, 2, D)
    layer.eval()
    np.testing.assert_array_equal(_np(layer(x)), _np(layer(x)))
    layer.train()
    assert not np.allclose(_np(layer(x)), _np(layer(x)))


# --------------------------------------------------------------------------- errors
def test_errors():
    model = nn.Transformer(D, H, 1, 1, FF)
    with pytest.raises(RuntimeError, match=r"batch number.*\[5, 2, 8\]"):
        model(et.randn(5, 2, D), et.randn(4, 3, D))
    with pytest.raises(RuntimeError, match="d_model=8"):
        model(et.randn(5, 2, D), et.randn(4, 2, 6))
    with pytest.raises(RuntimeError, match="relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(D, H, activation="tanh")
    with pytest.raises(TypeError, match="activation"):
        nn.TransformerDecoderLayer(D, H, activation=3)
    layer = nn.TransformerEncoderLayer(D, H, FF)
    with pytest.raises(AssertionError, match="src_key_padding_mask"):
        layer(et.randn(3, 2, D), src_key_padding_mask=et.zeros(2, 3, dtype=et.int64))
    with pytest.raises(RuntimeError, match="is_causal"):
        layer(et.randn(3, 2, D), is_causal=True)
    with pytest.raises(RuntimeError, match=r"TransformerEncoderLayer.*\[3, 2, 5\]"):
        layer(et.randn(3, 2, 5))
    with pytest.raises(RuntimeError, match=r"TransformerDecoderLayer.*memory"):
        nn.TransformerDecoderLayer(D, H, FF)(et.randn(3, 2, D), et.randn(4, 2, 3))
    with pytest.raises(AssertionError, match="divisible"):
        nn.TransformerEncoderLayer(D, 3)
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(layer, -1)
