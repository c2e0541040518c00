"""Recurrent cells and layers against NumPy references; gradcheck of every fused step in
float64 (and gradgradcheck: double backward recomputes through ember ops); packing round trips;
a packed batch gives each sequence exactly what running it alone gives."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.tensor as et
from ember.nn.functional import _rnn
from ember.nn.utils import rnn as ru

F64 = et.float64


def _n(t):
    return t.detach().numpy()


# --------------------------------------------------------------------------- references
def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, relu=False):
    pre = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    return np.maximum(pre, 0) if relu else np.tanh(pre)


def np_lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = np.split(gates, 4, axis=1)
    c2 = _sig(f) * c + _sig(i) * np.tanh(g)
    h2 = _sig(o) * np.tanh(c2)
    return (h2 if w_hr is None else h2 @ w_hr.T), c2


def np_gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    r = _sig(gi[:, :h.shape[1]] + gh[:, :h.shape[1]])
    z = _sig(gi[:, h.shape[1]:2 * h.shape[1]] + gh[:, h.shape[1]:2 * h.shape[1]])
    n = np.tanh(gi[:, 2 * h.shape[1]:] + r * gh[:, 2 * h.shape[1]:])
    return (1 - z) * n + z * h


def np_layer(mode, x, h0, c0, weights, num_layers, bidirectional):
    """Reference multi-layer recurrence on a padded, time-major (T, B, I) NumPy batch."""
    D = 2 if bidirectional else 1
    inp = x
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[layer * D + d]
            h, c = h0[layer * D + d], None if c0 is None else c0[layer * D + d]
            ys = [None] * len(inp)
            for t in (range(len(inp) - 1, -1, -1) if d else range(len(inp))):
                if mode == "LSTM":
                    h, c = np_lstm_cell(inp[t], h, c, w_ih, w_hh, b_ih, b_hh, w_hr)
                elif mode == "GRU":
                    h = np_gru_cell(inp[t], h, w_ih, w_hh, b_ih, b_hh)
                else:
                    h = np_rnn_cell(inp[t], h, w_ih, w_hh, b_ih, b_hh, mode == "RNN_RELU")
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), (np.stack(cs) if c0 is not None else None)


def _np_weights(module):
    out = []
    for names in module._all_weights:
        got = {n.split("_l")[0]: getattr(module, n).detach().numpy() for n in names}
        out.append((got["weight_ih"], got["weight_hh"], got.get("bias_ih", 0.0),
                    got.get("bias_hh", 0.0), got.get("weight_hr")))
    return out


def _layer(mode, *args, **kw):
    if mode == "LSTM":
        return nn.LSTM(*args, **kw)
    if mode == "GRU":
        return nn.GRU(*args, **kw)
    return nn.RNN(*args, nonlinearity="relu" if mode == "RNN_RELU" else "tanh", **kw)


def _r(*shape, rng, requires_grad=False):
    return et.tensor(rng.standard_normal(shape), dtype=F64, requires_grad=requires_grad)


# --------------------------------------------------------------------------- cells
@pytest.mark.parametrize("relu", [False, True])
def test_rnn_cell_matches_numpy(relu):
    rng = np.random.default_rng(0)
    cell = nn.RNNCell(3, 4, nonlinearity="relu" if relu else "tanh").double()
    x, h = _r(5, 3, rng=rng), _r(5, 4, rng=rng)
    ref = np_rnn_cell(_n(x), _n(h), *(_n(p) for p in cell.parameters()),
                      relu=relu)
    np.testing.assert_allclose(cell(x, h).detach().numpy(), ref, rtol=1e-12, atol=1e-12)


def test_lstm_cell_matches_numpy():
    rng = np.random.default_rng(1)
    cell = nn.LSTMCell(3, 4).double()
    x, h, c = _r(5, 3, rng=rng), _r(5, 4, rng=rng), _r(5, 4, rng=rng)
    h2, c2 = cell(x, (h, c))
    rh, rc = np_lstm_cell(_n(x), _n(h), _n(c),
                          *(_n(p) for p in cell.parameters()))
    np.testing.assert_allclose(_n(h2), rh, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_n(c2), rc, rtol=1e-12, atol=1e-12)


def test_gru_cell_matches_numpy():
    rng = np.random.default_rng(2)
    cell = nn.GRUCell(3, 4).double()
    x, h = _r(5, 3, rng=rng), _r(5, 4, rng=rng)
    ref = np_gru_cell(_n(x), _n(h), *(_n(p) for p in cell.parameters()))
    np.testing.assert_allclose(cell(x, h).detach().numpy(), ref, rtol=1e-12, atol=1e-12)


def test_cells_unbatched_and_default_state():
    rng = np.random.default_rng(3)
    x = _r(3, rng=rng)
    for cell in (nn.RNNCell(3, 4), nn.GRUCell(3, 4)):
        cell = cell.double()
        out = cell(x)
        assert tuple(out.shape) == (4,)
        np.testing.assert_allclose(_n(out), cell(x.unsqueeze(0), et.zeros(1, 4, dtype=F64))
                                   .squeeze(0).detach().numpy())
    h, c = nn.LSTMCell(3, 4).double()(x)
    assert tuple(h.shape) == (4,) and tuple(c.shape) == (4,)


def test_cell_errors():
    cell = nn.LSTMCell(3, 4)
    with pytest.raises(RuntimeError, match="input_size"):
        cell(et.randn(2, 5))
    with pytest.raises(ValueError, match="1D or 2D"):
        cell(et.randn(1, 2, 3))
    with pytest.raises(RuntimeError, match=r"hidden state has shape \[3, 4\]; expected \[2, 4\]"):
        cell(et.randn(2, 3), (et.randn(3, 4), et.randn(3, 4)))
    with pytest.raises(RuntimeError, match=r"hidden state has shape \[1, 5\]; expected \[1, 4\]"):
        cell(et.randn(3), (et.randn(5), et.randn(4)))  # unbatched
    with pytest.raises(RuntimeError, match="Expected hidden to be 1D for 1D input, got 2D"):
        cell(et.randn(3), (et.randn(1, 4), et.randn(1, 4)))
    with pytest.raises(RuntimeError, match=r"input dtype \(ember.float64\) does not match "
                                           r"weight dtype \(ember.float32\)"):
        cell(et.randn(2, 3, dtype=et.float64))
    with pytest.raises(TypeError, match="expected a Tensor input, got list"):
        cell([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")


def test_layers_use_a_weight_replaced_by_a_plain_tensor():
    """A weight taken out of the parameter table and set back as a plain tensor attribute
    (what weight-normalization code does) is the one the layer uses."""
    rng = np.random.default_rng(4)
    lin = nn.Linear(3, 2).double()
    w = lin.weight.detach() * 2
    del lin.weight
    lin.weight = w
    assert "weight" not in dict(lin.named_parameters())
    x = _r(4, 3, rng=rng)
    np.testing.assert_allclose(_n(lin(x)), _n(x) @ _n(w).T + _n(lin.bias), rtol=1e-12)
    cell = nn.LSTMCell(3, 4).double()
    w_hh = cell.weight_hh.detach() * 0.5
    del cell.weight_hh
    cell.weight_hh = w_hh
    h, c = _r(4, 4, rng=rng), _r(4, 4, rng=rng)
    rh, rc = np_lstm_cell(_n(x), _n(h), _n(c), _n(cell.weight_ih), _n(w_hh),
                          _n(cell.bias_ih), _n(cell.bias_hh))
    h2, c2 = cell(x, (h, c))
    np.testing.assert_allclose(_n(h2), rh, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_n(c2), rc, rtol=1e-12, atol=1e-12)


def _step_inputs(rng, n, rows, width, g, p=None):
    p = p or width
    return (_r(n, g * width, rng=rng, requires_grad=True),
            _r(rows, p, rng=rng, requires_grad=True))


@pytest.mark.parametrize("n", [4, 2], ids=["full", "packed_rows"])
@pytest.mark.parametrize("proj", [False, True])
def test_lstm_step_gradcheck(n, proj):
    rng = np.random.default_rng(4)
    H, P = 3, 2
    xg, h = _step_inputs(rng, n, 4, H, 4, P if proj else H)
    c = _r(4, H, rng=rng, requires_grad=True)
    w_hh = _r(4 * H, P if proj else H, rng=rng, requires_grad=True)
    w_hr = _r(P, H, rng=rng, requires_grad=True) if proj else None
    args = (xg, h, c, w_hh) + ((w_hr,) if proj else ())

    def fn(*a):  # one step of a layer, as _rnn._recurrent runs it (packed: fewer rows)
        xg, h, c, w_hh = a[:4]
        n = xg.shape[0]
        hn, cn = et.lstm_cell_fused(xg, _rnn._rows(h, n).matmul(w_hh.t()), _rnn._rows(c, n))
        if proj:
            hn = hn.matmul(a[4].t())
        return _rnn._join(hn, h), _rnn._join(cn, c)

    assert ag.gradcheck(fn, args)
    assert ag.gradgradcheck(fn, args)


@pytest.mark.parametrize("n", [4, 2], ids=["full", "packed_rows"])
def test_gru_step_gradcheck(n):
    rng = np.random.default_rng(5)
    xg, h = _step_inputs(rng, n, 4, 3, 3)
    w_hh, b_hh = _r(9, 3, rng=rng, requires_grad=True), _r(9, rng=rng, requires_grad=True)
    def fn(xg, h, w_hh, b_hh):
        hp = _rnn._rows(h, xg.shape[0])
        return _rnn._join(et.gru_cell_fused(xg, hp.matmul(w_hh.t()) + b_hh, hp), h)

    assert ag.gradcheck(fn, (xg, h, w_hh, b_hh))
    assert ag.gradgradcheck(fn, (xg, h, w_hh, b_hh))


@pytest.mark.parametrize("n", [4, 2], ids=["full", "packed_rows"])
@pytest.mark.parametrize("relu", [False, True])
def test_rnn_step_gradcheck(n, relu):
    rng = np.random.default_rng(6)
    xg, h = _step_inputs(rng, n, 4, 3, 1)
    w_hh = _r(3, 3, rng=rng, requires_grad=True)

    def fn(xg, h, w_hh):
        pre = xg + _rnn._rows(h, xg.shape[0]).matmul(w_hh.t())
        return _rnn._join(pre.relu() if relu else pre.tanh(), h)

    assert ag.gradcheck(fn, (xg, h, w_hh))
    assert ag.gradgradcheck(fn, (xg, h, w_hh))


@pytest.mark.parametrize("name", ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"])
def test_functional_cells_gradcheck(name):
    rng = np.random.default_rng(7)
    g = {"lstm_cell": 4, "gru_cell": 3}.get(name, 1)
    x, h, c = _r(3, 2, rng=rng, requires_grad=True), _r(3, 4, rng=rng, requires_grad=True), \
        _r(3, 4, rng=rng, requires_grad=True)
    ws = [_r(g * 4, 2, rng=rng, requires_grad=True), _r(g * 4, 4, rng=rng, requires_grad=True),
          _r(g * 4, rng=rng, requires_grad=True), _r(g * 4, rng=rng, requires_grad=True)]
    fn = getattr(nn.functional, name)
    if name == "lstm_cell":
        assert ag.gradcheck(lambda x, h, c, *w: fn(x, (h, c), *w), (x, h, c, *ws))
    else:
        assert ag.gradcheck(fn, (x, h, *ws))


# --------------------------------------------------------------------------- layers
@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_layer_matches_numpy(mode, bidirectional):
    rng = np.random.default_rng(8)
    m = _layer(mode, 3, 5, num_layers=2, bidirectional=bidirectional).double()
    D = 2 if bidirectional else 1
    x = _r(6, 2, 3, rng=rng)
    h0 = _r(2 * D, 2, 5, rng=rng)
    c0 = _r(2 * D, 2, 5, rng=rng) if mode == "LSTM" else None
    out, fin = m(x, (h0, c0) if mode == "LSTM" else h0)
    ref_out, ref_h, ref_c = np_layer(mode, _n(x), _n(h0),
                                     None if c0 is None else _n(c0), _np_weights(m), 2,
                                     bidirectional)
    np.testing.assert_allclose(_n(out), ref_out, rtol=1e-10, atol=1e-12)
    h_n = fin[0] if mode == "LSTM" else fin
    np.testing.assert_allclose(_n(h_n), ref_h, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(_n(fin[1]), ref_c, rtol=1e-10, atol=1e-12)


def test_lstm_projection_matches_numpy():
    rng = np.random.default_rng(9)
    m = nn.LSTM(3, 5, proj_size=2, num_layers=2).double()
    x = _r(4, 3, 3, rng=rng)
    out, (h, c) = m(x)
    ref_out, ref_h, ref_c = np_layer("LSTM", _n(x), np.zeros((2, 3, 2)), np.zeros((2, 3, 5)),
                                     _np_weights(m), 2, False)
    assert tuple(out.shape) == (4, 3, 2) and tuple(h.shape) == (2, 3, 2)
    assert tuple(c.shape) == (2, 3, 5)
    np.testing.assert_allclose(_n(out), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_n(c), ref_c, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
def test_layer_gradcheck_through_time(mode):
    """gradcheck of a whole 2-layer bidirectional layer, weights included (uses the shared
    per-layer weight-gradient sum)."""
    rng = np.random.default_rng(10)
    m = _layer(mode, 2, 3, num_layers=2, bidirectional=True).double()
    params = list(m.parameters())
    names = [n for n, _ in m.named_parameters()]
    x = _r(4, 2, 2, rng=rng, requires_grad=True)

    def fn(x, *ws):
        for name, w in zip(names, ws):
            m._parameters[name] = w
        out, _ = m(x)
        return out

    try:
        assert ag.gradcheck(fn, (x, *params))
    finally:
        for name, p in zip(names, params):
            m._parameters[name] = p


def test_double_backward_through_lstm_layer():
    rng = np.random.default_rng(11)
    m = nn.LSTM(2, 3, num_layers=2).double()
    x = _r(3, 2, 2, rng=rng, requires_grad=True)
    assert ag.gradgradcheck(lambda x: m(x)[0], (x,))


def test_param_names_shapes_and_init():
    m = nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=4)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (32, 3) and shapes["weight_hh_l0"] == (32, 4)
    assert shapes["weight_hr_l0_reverse"] == (4, 8) and shapes["weight_ih_l1"] == (32, 8)
    assert shapes["bias_hh_l1_reverse"] == (32,)
    assert len(shapes) == 20
    bound = 1 / math.sqrt(8)
    for p in m.parameters():
        assert float(p.abs().max()) <= bound
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 5
    assert m.flatten_parameters() is None
    g = nn.GRU(2, 6, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]


def test_layer_argument_errors():
    with pytest.raises(ValueError, match="proj_size"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="smaller"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    m = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="input_size"):
        m(et.randn(2, 2, 5))
    with pytest.raises(ValueError, match="2D or 3D"):
        m(et.randn(2, 2, 2, 3))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        m(et.randn(2, 2, 3), et.randn(1, 3, 4))
    with pytest.raises(ValueError, match="dtype"):
        m(et.randn(2, 2, 3, dtype=F64))


def test_batch_first_unbatched_and_initial_state():
    rng = np.random.default_rng(12)
    m = nn.GRU(3, 4, batch_first=True, bidirectional=True).double()
    x = _r(2, 5, 3, rng=rng)
    h0 = _r(2, 2, 4, rng=rng)
    out_bf, h_bf = m(x, h0)
    m.batch_first = False
    out_tm, h_tm = m(x.transpose(0, 1), h0)
    np.testing.assert_allclose(_n(out_bf), out_tm.transpose(0, 1).detach().numpy())
    np.testing.assert_allclose(_n(h_bf), _n(h_tm))
    out1, h1 = m(x[0].contiguous().unsqueeze(1).squeeze(1), h0[:, 0])  # unbatched (T, I)
    np.testing.assert_allclose(_n(out1), _n(out_bf[0]), rtol=1e-12)
    np.testing.assert_allclose(_n(h1), _n(h_bf[:, 0]), rtol=1e-12)


def test_dropout_between_layers_only_in_training():
    et.manual_seed(0)
    m = nn.LSTM(3, 6, num_layers=2, dropout=0.5)
    x = et.randn(4, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(_n(a), _n(b))
    m.train()
    c = m(x)[0]
    assert not np.allclose(_n(c), _n(a))


def test_state_dict_round_trip_and_pickle():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    m2 = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    m2.load_state_dict(m.state_dict())
    x = et.randn(3, 2, 3)
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m2(x)[0].detach().numpy())
    m3 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m3(x)[0].detach().numpy())


# --------------------------------------------------------------------------- packing
def test_pack_pad_round_trip_and_layout():
    x = et.arange(12.).view(3, 4, 1)  # (T=3, B=4)
    p = ru.pack_padded_sequence(x, [3, 1, 2, 2], enforce_sorted=False)
    assert p.batch_sizes.tolist() == [4, 3, 1]
    assert p.sorted_indices.tolist() == [0, 2, 3, 1]
    assert p.unsorted_indices.tolist() == [0, 3, 1, 2]
    # step 0 of every sequence in sorted order, then step 1 of the three longest, ...
    assert p.data.view(-1).tolist() == [0., 2., 3., 1., 4., 6., 7., 8.]
    padded, lengths = ru.pad_packed_sequence(p)
    assert lengths.tolist() == [3, 1, 2, 2]
    mask = np.arange(3)[:, None] < np.array([3, 1, 2, 2])[None, :]
    np.testing.assert_array_equal(_n(padded)[..., 0], np.where(mask, _n(x)[..., 0], 0))
    bf, _ = ru.pad_packed_sequence(p, batch_first=True, total_length=5, padding_value=-1)
    assert tuple(bf.shape) == (4, 5, 1)
    assert bf[1].view(-1).tolist() == [1., -1., -1., -1., -1.]


def test_pack_sequence_unpack_and_unpad():
    seqs = [et.randn(n, 2) for n in (2, 5, 3)]
    out = ru.unpack_sequence(ru.pack_sequence(seqs, enforce_sorted=False))
    for a, b in zip(out, seqs):
        np.testing.assert_array_equal(_n(a), _n(b))
    padded = ru.pad_sequence(seqs, batch_first=True)
    for a, b in zip(ru.unpad_sequence(padded, et.tensor([2, 5, 3]), batch_first=True), seqs):
        np.testing.assert_array_equal(_n(a), _n(b))
    left = ru.pad_sequence(seqs, padding_side="left", padding_value=7.0)
    assert tuple(left.shape) == (5, 3, 2)
    np.testing.assert_array_equal(_n(left[:3, 0]), np.full((3, 2), 7.0))
    np.testing.assert_array_equal(_n(left[3:, 0]), _n(seqs[0]))


def test_packing_errors_like_torch():
    x = et.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        ru.pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match="greater than 0"):
        ru.pack_padded_sequence(x, [3, 0, 2], enforce_sorted=False)
    with pytest.raises(RuntimeError, match="batch_size"):
        ru.pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="exceeds"):
        ru.pack_padded_sequence(x, [5, 2, 1])
    p = ru.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="total_length"):
        ru.pad_packed_sequence(p, total_length=3)
    with pytest.raises(RuntimeError, match="empty list"):
        ru.pad_sequence([])
    with pytest.raises(RuntimeError, match="padding_side"):
        ru.pad_sequence([et.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="pad_sequence"):
        ru.pad_sequence([et.ones(2, 3), et.ones(2, 4)])


def test_packed_sequence_conversions_and_pickle():
    p = ru.pack_sequence([et.ones(3, 2), et.ones(1, 2)])
    d = p.double()
    assert d.data.dtype == F64 and d.batch_sizes is p.batch_sizes
    assert p.to(et.float32) is p
    assert p.cpu().data.dtype == et.float32 and not p.is_cuda
    q = pickle.loads(pickle.dumps(ru.pack_sequence([et.ones(1), et.ones(2)], False)))
    assert isinstance(q, ru.PackedSequence) and q.sorted_indices.tolist() == [1, 0]
    data, batch_sizes, sorted_indices, unsorted_indices = q
    assert batch_sizes.tolist() == [2, 1] and unsorted_indices.tolist() == [1, 0]


def test_packing_gradcheck():
    rng = np.random.default_rng(13)
    x = _r(4, 3, 2, rng=rng, requires_grad=True)

    def roundtrip(x):
        p = ru.pack_padded_sequence(x, [2, 4, 3], batch_first=False, enforce_sorted=False)
        return ru.pad_packed_sequence(p, batch_first=True, padding_value=0.5)[0] * 2

    assert ag.gradcheck(roundtrip, (x,))
    seqs = [_r(n, 2, rng=rng, requires_grad=True) for n in (1, 3)]
    assert ag.gradcheck(lambda a, b: ru.pad_sequence([a, b], padding_side="left"), seqs)


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_equals_each_sequence_alone(mode, bidirectional):
    rng = np.random.default_rng(14)
    m = _layer(mode, 3, 4, num_layers=2, bidirectional=bidirectional).double()
    lengths = [3, 5, 1, 4]
    seqs = [_r(n, 3, rng=rng) for n in lengths]
    out, fin = m(ru.pack_sequence(seqs, enforce_sorted=False))
    padded, got_lengths = ru.pad_packed_sequence(out, batch_first=True)
    assert got_lengths.tolist() == lengths
    h_n = fin[0] if mode == "LSTM" else fin
    for b, s in enumerate(seqs):
        alone, fin1 = m(s)  # unbatched
        np.testing.assert_allclose(padded[b, :lengths[b]].detach().numpy(), _n(alone), rtol=1e-10,
                                   atol=1e-12)
        h1 = fin1[0] if mode == "LSTM" else fin1
        np.testing.assert_allclose(_n(h_n[:, b]), _n(h1), rtol=1e-10, atol=1e-12)


def test_packed_never_touches_padding():
    """NaN in the padding cannot leak: no arithmetic runs on padded positions, and their
    input gradient is exactly zero."""
    m = nn.LSTM(2, 3, bidirectional=True)
    x = et.randn(5, 3, 2)
    x[3:, 1] = float("nan")
    x[1:, 2] = float("nan")
    x.requires_grad_(True)
    out, (h, c) = m(ru.pack_padded_sequence(x, [5, 3, 1]))
    assert not np.isnan(_n(out.data)).any()
    assert not np.isnan(_n(h)).any() and not np.isnan(_n(c)).any()
    (out.data.sum() + h.sum()).backward()
    g = _n(x.grad)
    assert not np.isnan(g).any()
    assert (g[3:, 1] == 0).all() and (g[1:, 2] == 0).all()
    assert (g[:3, 1] != 0).any()


def test_packed_with_initial_state_follows_original_order():
    rng = np.random.default_rng(15)
    m = nn.GRU(2, 3).double()
    seqs = [_r(n, 2, rng=rng) for n in (2, 4)]
    h0 = _r(1, 2, 3, rng=rng)
    _, h_n = m(ru.pack_sequence(seqs, enforce_sorted=False), h0)
    for b in range(2):
        _, h1 = m(seqs[b], h0[:, b])
        np.testing.assert_allclose(_n(h_n[:, b]), _n(h1), rtol=1e-12)


def test_weight_gradient_sum_survives_retain_graph():
    """Two backward passes over one graph give the same (doubled) weight gradients."""
    m = nn.LSTM(2, 3, num_layers=2)
    out, _ = m(et.randn(4, 2, 2))
    loss = out.square().sum()
    loss.backward(retain_graph=True)
    first = {n: p.grad.clone() for n, p in m.named_parameters()}
    loss.backward()
    for n, p in m.named_parameters():
        np.testing.assert_allclose(_n(p.grad), 2 * _n(first[n]), rtol=1e-5, atol=1e-6)
