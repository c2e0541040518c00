"""ember.nn's Transformer family against PyTorch 2.13 CPU with copied weights, in float64:
outputs, input gradients and parameter gradients (to ~1e-10) for the encoder and decoder
layers and stacks and the full Transformer, with bool and float attention masks, key padding
masks, causal masks and ``is_causal``, ``norm_first``, relu / gelu / callable activations,
``bias=False``, ``layer_norm_eps`` and both ``batch_first`` layouts; plus state dicts loading
across, ``generate_square_subsequent_mask``, PixelShuffle and the errors PyTorch raises."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as enn  # noqa: E402
import ember.nn.functional as EF  # noqa: E402
import ember.tensor as et  # noqa: E402

TOL = 1e-10
D, H, FF = 8, 2, 12


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        # PyTorch warns about enable_nested_tensor with some layer options; not under test
        warnings.simplefilter("ignore", UserWarning)
        yield


def _rng(seed=0):
    return np.random.default_rng(seed)


def _np(x):
    return x.detach().numpy()


def _copy(em, tm):
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd) == list(esd), sorted(set(tsd) ^ set(esd))
    for k in tsd:
        assert tuple(tsd[k].shape) == tuple(esd[k].shape), k
    em.load_state_dict({k: et.tensor(v.detach().numpy()) for k, v in tsd.items()})


def _pair(build, *, eval_mode=True):
    """The same module in both libraries (float64, dropout off) with torch's weights."""
    tm = build(torch.nn, torch.nn.functional).double()
    em = build(enn, EF).double()
    _copy(em, tm)
    if eval_mode:
        tm.eval()
        em.eval()
    return em, tm


def _masks(lib, kind, L, S, n):
    """attn mask (L, S) and key padding mask (n, S), bool or float, or None."""
    if kind is None:
        return None, None
    causal = np.triu(np.ones((L, S), bool), 1)
    pad = np.zeros((n, S), bool)
    pad[0, -1] = True
    if n > 1:
        pad[1, -2:] = True
    if kind == "bool":
        return lib.tensor(causal), lib.tensor(pad)
    f = np.where(causal, -np.inf, 0.0)
    f[0, 0] = -0.5  # a finite additive bias too
    return lib.tensor(f), lib.tensor(np.where(pad, -np.inf, 0.0))


def _run(m, inputs, lib, call):
    xs = [lib.tensor(x, requires_grad=True) if isinstance(x, np.ndarray) else x for x in inputs]
    out = call(m, xs, lib)
    weights = lib.tensor(_rng(7).standard_normal(tuple(out.shape)))
    (out * weights).sum().backward()
    grads = [x.grad for x in xs if hasattr(x, "grad") and x.grad is not None]
    pgrads = {n: p.grad for n, p in m.named_parameters()}
    return out, grads, pgrads


def _compare(em, tm, inputs, call, tol=TOL):
    eo, eg, ep = _run(em, inputs, et, call)
    to, tg, tp = _run(tm, inputs, torch, call)
    np.testing.assert_allclose(_np(eo), _np(to), rtol=tol, atol=tol)
    assert len(eg) == len(tg)
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)
    assert set(ep) == set(tp)
    for k in tp:
        if tp[k] is None:
            assert ep[k] is None or not np.any(_np(ep[k])), k
            continue
        np.testing.assert_allclose(_np(ep[k]), _np(tp[k]), rtol=tol, atol=tol, err_msg=k)


def _seq(shape, seed=1):
    return _rng(seed).standard_normal(shape)


def _layout(batch_first, n, L):
    return (n, L, D) if batch_first else (L, n, D)


# --------------------------------------------------------------------------- encoder layer
ENC_OPTS = [
    dict(),
    dict(norm_first=True),
    dict(activation="gelu"),
    dict(activation="callable"),
    dict(bias=False, layer_norm_eps=1e-3),
    dict(norm_first=True, activation="gelu", batch_first=True),
]


def _ids(o):
    return "-".join(f"{k}={v}" for k, v in o.items()) or "default"


def _act(lib_F, act):
    if act == "callable":
        return lambda x: lib_F.tanh(x) * 2.0
    return act


@pytest.mark.parametrize("opts", ENC_OPTS, ids=_ids)
@pytest.mark.parametrize("masks", [None, "bool", "float"])
def test_encoder_layer(opts, masks):
    opts = dict(opts)
    act = opts.pop("activation", "relu")
    bf = opts.get("batch_first", False)
    em, tm = _pair(lambda nn, F: nn.TransformerEncoderLayer(D, H, FF, dropout=0.0,
                                                            activation=_act(F, act), **opts))
    n, L = 2, 5

    def call(m, xs, lib):
        mask, kpm = _masks(lib, masks, L, L, n)
        return m(xs[0], src_mask=mask, src_key_padding_mask=kpm)

    _compare(em, tm, [_seq(_layout(bf, n, L))], call)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", [None, "bool", "float"])
def test_encoder_stack(batch_first, masks):
    em, tm = _pair(lambda nn, F: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=batch_first), 2,
        norm=nn.LayerNorm(D), enable_nested_tensor=False))
    n, L = 3, 4

    def call(m, xs, lib):
        mask, kpm = _masks(lib, masks, L, L, n)
        return m(xs[0], mask=mask, src_key_padding_mask=kpm)

    _compare(em, tm, [_seq(_layout(batch_first, n, L))], call)


def test_encoder_is_causal_with_generated_mask():
    em, tm = _pair(lambda nn, F: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(D, H, FF, dropout=0.0), 2, enable_nested_tensor=False))

    def call(m, xs, lib):
        mod = torch.nn if lib is torch else enn
        mask = mod.Transformer.generate_square_subsequent_mask(5, dtype=xs[0].dtype)
        return m(xs[0], mask=mask, is_causal=True)

    _compare(em, tm, [_seq((5, 2, D))], call)


def test_unbatched_encoder_layer():
    em, tm = _pair(lambda nn, F: nn.TransformerEncoderLayer(D, H, FF, dropout=0.0))
    _compare(em, tm, [_seq((5, D))], lambda m, xs, lib: m(xs[0]))


# --------------------------------------------------------------------------- decoder
DEC_OPTS = [dict(), dict(norm_first=True), dict(activation="gelu", batch_first=True),
            dict(bias=False, norm_first=True, activation="callable")]


@pytest.mark.parametrize("opts", DEC_OPTS, ids=_ids)
@pytest.mark.parametrize("masks", [None, "bool", "float"])
def test_decoder_layer(opts, masks):
    opts = dict(opts)
    act = opts.pop("activation", "relu")
    bf = opts.get("batch_first", False)
    em, tm = _pair(lambda nn, F: nn.TransformerDecoderLayer(D, H, FF, dropout=0.0,
                                                            activation=_act(F, act), **opts))
    n, L, S = 2, 4, 6

    def call(m, xs, lib):
        tmask, tkpm = _masks(lib, masks, L, L, n)
        mmask, mkpm = _masks(lib, masks, L, S, n)
        if mmask is not None:  # a memory mask that is not causal
            mmask = mmask.flip(-1)
        return m(xs[0], xs[1], tgt_mask=tmask, memory_mask=mmask, tgt_key_padding_mask=tkpm,
                 memory_key_padding_mask=mkpm)

    _compare(em, tm, [_seq(_layout(bf, n, L)), _seq(_layout(bf, n, S), 2)], call)


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_stack_with_causal_mask(batch_first):
    em, tm = _pair(lambda nn, F: nn.TransformerDecoder(
        nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=batch_first), 2,
        norm=nn.LayerNorm(D)))
    n, L, S = 2, 5, 3

    def call(m, xs, lib):
        mod = torch.nn if lib is torch else enn
        mask = mod.Transformer.generate_square_subsequent_mask(L, dtype=xs[0].dtype)
        _, mkpm = _masks(lib, "bool", L, S, n)
        return m(xs[0], xs[1], tgt_mask=mask, memory_key_padding_mask=mkpm,
                 tgt_is_causal=True)

    _compare(em, tm, [_seq(_layout(batch_first, n, L)), _seq(_layout(batch_first, n, S), 3)],
             call)


# --------------------------------------------------------------------------- Transformer
TRANSFORMER_OPTS = [dict(), dict(batch_first=True), dict(norm_first=True, activation="gelu"),
                    dict(batch_first=True, bias=False, layer_norm_eps=1e-4)]


@pytest.mark.parametrize("opts", TRANSFORMER_OPTS, ids=_ids)
@pytest.mark.parametrize("masks", [None, "bool", "float"])
def test_full_transformer(opts, masks):
    bf = opts.get("batch_first", False)
    em, tm = _pair(lambda nn, F: nn.Transformer(D, H, 2, 2, FF, dropout=0.0, **opts))
    n, S, L = 2, 6, 4

    def call(m, xs, lib):
        smask, skpm = _masks(lib, masks, S, S, n)
        tmask, tkpm = _masks(lib, masks, L, L, n)
        mmask, mkpm = _masks(lib, masks, L, S, n)
        if mmask is not None:
            mmask = mmask.flip(-1)
        return m(xs[0], xs[1], src_mask=smask, tgt_mask=tmask, memory_mask=mmask,
                 src_key_padding_mask=skpm, tgt_key_padding_mask=tkpm,
                 memory_key_padding_mask=mkpm)

    _compare(em, tm, [_seq(_layout(bf, n, S)), _seq(_layout(bf, n, L), 4)], call)


def test_transformer_train_mode_without_dropout_and_causal_hint():
    em, tm = _pair(lambda nn, F: nn.Transformer(D, H, 1, 2, FF, dropout=0.0), eval_mode=False)

    def call(m, xs, lib):
        mod = torch.nn if lib is torch else enn
        mask = mod.Transformer.generate_square_subsequent_mask(4, dtype=xs[0].dtype)
        return m(xs[0], xs[1], tgt_mask=mask, tgt_is_causal=True)

    _compare(em, tm, [_seq((5, 3, D)), _seq((4, 3, D), 5)], call)


def test_state_dict_keys_and_shapes_match_and_load_back_into_torch():
    tm = torch.nn.Transformer(D, H, 2, 1, FF)
    em = enn.Transformer(D, H, 2, 1, FF)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd) == list(esd)
    assert all(tuple(tsd[k].shape) == tuple(esd[k].shape) for k in tsd)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in esd.items()})
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), esd[k].numpy())


def test_default_init_statistics():
    """Xavier-uniform matrices, LayerNorm ones / zeros, zero attention biases, as PyTorch."""
    et.manual_seed(0)
    em = enn.Transformer(32, 4, 1, 1, 64)
    tm = torch.nn.Transformer(32, 4, 1, 1, 64)
    for (k, e), (_, t) in zip(em.named_parameters(), tm.named_parameters()):
        e, t = _np(e), _np(t)
        if t.ndim > 1:
            bound = np.sqrt(6.0 / (t.shape[0] + t.shape[1]))
            assert np.abs(e).max() <= bound + 1e-7, k
            assert abs(e.std() - t.std()) < 0.25 * t.std(), k
        elif np.all(t == t.flat[0]):
            np.testing.assert_array_equal(e, t, err_msg=k)


@pytest.mark.parametrize("sz", [1, 4])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_generate_square_subsequent_mask(sz, dtype):
    t = torch.nn.Transformer.generate_square_subsequent_mask(
        sz, dtype=getattr(torch, dtype) if dtype else None)
    e = enn.Transformer.generate_square_subsequent_mask(
        sz, dtype=getattr(et, dtype) if dtype else None)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(_np(e), _np(t))


# --------------------------------------------------------------------------- errors
def _err(fn_t, fn_e):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(Exception) as ee:
        fn_e()
    assert ee.type is te.type, (te.value, ee.value)
    return str(ee.value)


def test_errors_match_pytorchs_types():
    tm, em = torch.nn.Transformer(D, H, 1, 1, FF), enn.Transformer(D, H, 1, 1, FF)
    msg = _err(lambda: tm(torch.randn(5, 2, D), torch.randn(4, 3, D)),
               lambda: em(et.randn(5, 2, D), et.randn(4, 3, D)))
    assert "batch number" in msg and "[5, 2, 8]" in msg
    msg = _err(lambda: tm(torch.randn(5, 2, D), torch.randn(4, 2, D + 1)),
               lambda: em(et.randn(5, 2, D), et.randn(4, 2, D + 1)))
    assert "d_model" in msg
    _err(lambda: torch.nn.TransformerEncoderLayer(D, H, activation="tanh"),
         lambda: enn.TransformerEncoderLayer(D, H, activation="tanh"))
    tl = torch.nn.TransformerEncoderLayer(D, H, FF)
    el = enn.TransformerEncoderLayer(D, H, FF)
    msg = _err(lambda: tl(torch.randn(3, 2, D), src_key_padding_mask=torch.zeros(2, 3,
                                                                               dtype=torch.long)),
               lambda: el(et.randn(3, 2, D), src_key_padding_mask=et.zeros(2, 3,
                                                                           dtype=et.int64)))
    assert "src_key_padding_mask" in msg
    _err(lambda: tl(torch.randn(3, 2, D), is_causal=True),
         lambda: el(et.randn(3, 2, D), is_causal=True))
    _err(lambda: torch.nn.TransformerEncoderLayer(D, 3), lambda: enn.TransformerEncoderLayer(D, 3))
