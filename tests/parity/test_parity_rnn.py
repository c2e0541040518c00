"""Recurrent layers and packing against PyTorch with copied weights: outputs, final states,
input and parameter gradients, for every mode, padded and packed, batch_first both ways, one and
two layers, uni- and bidirectional."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.nn.utils import rnn as tru  # noqa: E402

import ember.autograd as ag  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.nn.utils import rnn as eru  # noqa: E402

MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "LSTM_PROJ", "GRU"]
I, H, P = 5, 7, 3
LENGTHS = [4, 6, 2, 5]  # unsorted on purpose

# torch's own notice that its oneDNN path does not cover proj_size
pytestmark = pytest.mark.filterwarnings(
    "ignore:LSTM with projections is not supported with oneDNN:UserWarning")


def _make(mode: str, num_layers: int, bidirectional: bool, batch_first: bool, dtype):
    kw = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    if mode == "RNN_TANH":
        pair = torch.nn.RNN(I, H, **kw), nn.RNN(I, H, **kw)
    elif mode == "RNN_RELU":
        pair = (torch.nn.RNN(I, H, nonlinearity="relu", **kw),
                nn.RNN(I, H, nonlinearity="relu", **kw))
    elif mode == "LSTM":
        pair = torch.nn.LSTM(I, H, **kw), nn.LSTM(I, H, **kw)
    elif mode == "LSTM_PROJ":
        pair = torch.nn.LSTM(I, H, proj_size=P, **kw), nn.LSTM(I, H, proj_size=P, **kw)
    else:
        pair = torch.nn.GRU(I, H, **kw), nn.GRU(I, H, **kw)
    tm, em = pair
    tm = tm.to(dtype)
    em = em.double() if dtype == torch.float64 else em
    _copy_weights(tm, em)
    return tm, em


def _copy_weights(tm, em) -> None:
    tparams = dict(tm.named_parameters())
    eparams = dict(em.named_parameters())
    assert list(tparams) == list(eparams)
    with ag.no_grad():
        for name, p in eparams.items():
            assert tuple(p.shape) == tuple(tparams[name].shape), name
            p.copy_(et.tensor(tparams[name].detach().numpy()))


def _e(a: np.ndarray, requires_grad: bool = False):
    return et.tensor(a, requires_grad=requires_grad)


def _t(a: np.ndarray, requires_grad: bool = False):
    return torch.tensor(a, requires_grad=requires_grad)


def _close(e, t, tol) -> None:
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _states(mode, num_layers, D, B, rng, dtype):
    hw = P if mode == "LSTM_PROJ" else H
    h = rng.standard_normal((num_layers * D, B, hw)).astype(dtype)
    if mode.startswith("LSTM"):
        return h, rng.standard_normal((num_layers * D, B, H)).astype(dtype)
    return (h,)


def _flat(states):
    return states if isinstance(states, tuple) else (states,)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time_major", "batch_first"])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_layer_matches_torch(mode, packed, batch_first, num_layers, bidirectional):
    rng = np.random.default_rng(hash((mode, packed, batch_first, num_layers, bidirectional))
                                % 2**32)
    torch.manual_seed(0)
    dtype = torch.float64
    tm, em = _make(mode, num_layers, bidirectional, batch_first, dtype)
    B, T = len(LENGTHS), max(LENGTHS)
    D = 2 if bidirectional else 1
    shape = (B, T, I) if batch_first else (T, B, I)
    x = rng.standard_normal(shape)
    xe, xt = _e(x, True), _t(x, True)
    with_hx = packed or num_layers == 2
    states = _states(mode, num_layers, D, B, rng, np.float64) if with_hx else None
    se = tuple(_e(s, True) for s in states) if with_hx else None
    st = tuple(_t(s, True) for s in states) if with_hx else None
    if packed:
        in_e = eru.pack_padded_sequence(xe, LENGTHS, batch_first, enforce_sorted=False)
        in_t = tru.pack_padded_sequence(xt, LENGTHS, batch_first, enforce_sorted=False)
    else:
        in_e, in_t = xe, xt
    hx_e = None if se is None else (se if mode.startswith("LSTM") else se[0])
    hx_t = None if st is None else (st if mode.startswith("LSTM") else st[0])
    out_e, fin_e = em(in_e, hx_e)
    out_t, fin_t = tm(in_t, hx_t)
    tol = 1e-9
    if packed:
        assert out_e.batch_sizes.tolist() == out_t.batch_sizes.tolist()
        assert out_e.sorted_indices.tolist() == out_t.sorted_indices.tolist()
        assert out_e.unsorted_indices.tolist() == out_t.unsorted_indices.tolist()
        out_e, out_t = out_e.data, out_t.data
    assert tuple(out_e.shape) == tuple(out_t.shape)
    _close(out_e, out_t, tol)
    fin_e, fin_t = _flat(fin_e), _flat(fin_t)
    for a, b in zip(fin_e, fin_t):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a, b, tol)
    # gradients of a random linear functional of every output
    weights = [rng.standard_normal(tuple(o.shape)) for o in (out_e, *fin_e)]
    loss_e = sum((o * _e(w)).sum() for o, w in zip((out_e, *fin_e), weights))
    loss_t = sum((o * _t(w)).sum() for o, w in zip((out_t, *fin_t), weights))
    loss_e.backward()
    loss_t.backward()
    _close(xe.grad, xt.grad, tol)
    if with_hx:
        for a, b in zip(se, st):
            _close(a.grad, b.grad, tol)
    for (name, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
        assert pe.grad is not None, name
        _close(pe.grad, pt.grad, tol)


@pytest.mark.parametrize("mode", MODES)
def test_float32_and_unbatched_match_torch(mode):
    rng = np.random.default_rng(3)
    torch.manual_seed(1)
    tm, em = _make(mode, 2, True, False, torch.float32)
    x = rng.standard_normal((6, I)).astype(np.float32)  # unbatched (T, I)
    xe, xt = _e(x, True), _t(x, True)
    out_e, fin_e = em(xe)
    out_t, fin_t = tm(xt)
    _close(out_e, out_t, 1e-5)
    for a, b in zip(_flat(fin_e), _flat(fin_t)):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a, b, 1e-5)
    out_e.sum().backward()
    out_t.sum().backward()
    _close(xe.grad, xt.grad, 1e-4)
    for pe, pt in zip(em.parameters(), tm.parameters()):
        _close(pe.grad, pt.grad, 1e-4)


@pytest.mark.parametrize("cell", ["RNNCell", "RNNCell_relu", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("with_hx", [False, True])
def test_cells_match_torch(cell, with_hx):
    rng = np.random.default_rng(5)
    torch.manual_seed(2)
    name, _, nl = cell.partition("_")
    kw = {"nonlinearity": nl} if nl else {}
    tm = getattr(torch.nn, name)(I, H, **kw).double()
    em = getattr(nn, name)(I, H, **kw).double()
    _copy_weights(tm, em)
    x = rng.standard_normal((3, I))
    xe, xt = _e(x, True), _t(x, True)
    hx_e = hx_t = None
    if with_hx:
        hs = [rng.standard_normal((3, H)) for _ in range(2 if name == "LSTMCell" else 1)]
        hx_e = tuple(_e(h, True) for h in hs)
        hx_t = tuple(_t(h, True) for h in hs)
        if name != "LSTMCell":
            hx_e, hx_t = hx_e[0], hx_t[0]
    oe, ot = em(xe, hx_e), tm(xt, hx_t)
    oe, ot = _flat(oe), _flat(ot)
    for a, b in zip(oe, ot):
        _close(a, b, 1e-10)
    sum(o.sum() * (k + 1) for k, o in enumerate(oe)).backward()
    sum(o.sum() * (k + 1) for k, o in enumerate(ot)).backward()
    _close(xe.grad, xt.grad, 1e-10)
    for pe, pt in zip(em.parameters(), tm.parameters()):
        _close(pe.grad, pt.grad, 1e-10)


def test_state_dict_moves_between_frameworks():
    tm = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=2)
    em = nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=2)
    assert list(em.state_dict()) == list(tm.state_dict())
    em.load_state_dict({k: et.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 2, 4)).astype(np.float32)
    _close(em(_e(x))[0], tm(_t(x))[0], 1e-5)
    back = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=2)
    back.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    _close(em(_e(x))[0], back(_t(x))[0], 1e-5)


def test_init_range_and_repr_match_torch():
    for cls in ("RNN", "LSTM", "GRU"):
        em = getattr(nn, cls)(3, 16, num_layers=2, bias=False, batch_first=True, dropout=0.5)
        tm = getattr(torch.nn, cls)(3, 16, num_layers=2, bias=False, batch_first=True,
                                    dropout=0.5)
        assert repr(em) == repr(tm)
        for p in em.parameters():
            assert float(p.abs().max()) <= 0.25
    assert repr(nn.LSTM(3, 8, proj_size=2, bidirectional=True)) == \
        repr(torch.nn.LSTM(3, 8, proj_size=2, bidirectional=True))
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu", bias=False)) == \
        repr(torch.nn.RNNCell(3, 4, nonlinearity="relu", bias=False))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packing_matches_torch(batch_first, enforce_sorted):
    rng = np.random.default_rng(7)
    lengths = [5, 4, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4, 4]
    shape = (5, 6, 3) if batch_first else (6, 5, 3)
    x = rng.standard_normal(shape)
    xe, xt = _e(x, True), _t(x, True)
    pe = eru.pack_padded_sequence(xe, lengths, batch_first, enforce_sorted)
    pt = tru.pack_padded_sequence(xt, lengths, batch_first, enforce_sorted)
    _close(pe.data, pt.data, 0)
    assert pe.batch_sizes.tolist() == pt.batch_sizes.tolist()
    if enforce_sorted:
        assert pe.sorted_indices is None and pt.sorted_indices is None
    else:
        assert pe.sorted_indices.tolist() == pt.sorted_indices.tolist()
    de, le = eru.pad_packed_sequence(pe, batch_first, padding_value=-2.0, total_length=7)
    dt, lt = tru.pad_packed_sequence(pt, batch_first, padding_value=-2.0, total_length=7)
    _close(de, dt, 0)
    assert le.tolist() == lt.tolist() and str(le.dtype) == "ember.int64"
    w = rng.standard_normal(tuple(de.shape))
    (de * _e(w)).sum().backward()
    (dt * _t(w)).sum().backward()
    _close(xe.grad, xt.grad, 0)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, side):
    rng = np.random.default_rng(8)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    e = eru.pad_sequence([_e(s) for s in seqs], batch_first, 9.0, side)
    t = tru.pad_sequence([_t(s) for s in seqs], batch_first, 9.0, side)
    _close(e, t, 0)
    parts_e = eru.unpack_sequence(eru.pack_sequence([_e(s) for s in seqs], False))
    parts_t = tru.unpack_sequence(tru.pack_sequence([_t(s) for s in seqs], False))
    for a, b in zip(parts_e, parts_t):
        _close(a, b, 0)
