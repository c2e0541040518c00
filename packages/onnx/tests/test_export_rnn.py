"""Recurrent layers export as ONNX's LSTM / GRU / RNN operators (one node per layer), with
free sequence length and batch: onnxruntime and the importer match ember at the traced shape
and at another batch size and sequence length."""
from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.onnx
import ember.tensor as et

ort = pytest.importorskip("onnxruntime")

ATOL = 1e-5
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _np(t):
    return t.detach().numpy()


def _flat(x, out):
    if isinstance(x, et.Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _flat(v, out)
    return out


class WithState(nn.Module):
    """Calls the recurrent layer with or without a given initial state."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        if not state:
            return self.rnn(x)
        return self.rnn(x, tuple(state) if isinstance(self.rnn, nn.LSTM) else state[0])


def _inputs(kind, batch_first, layers, dirs, given, T, N, I=3, H=5):
    x = et.randn(N, T, I) if batch_first else et.randn(T, N, I)
    if not given:
        return [x]
    states = [et.randn(layers * dirs, N, H)]
    if kind == "LSTM":
        states.append(et.randn(layers * dirs, N, H))
    return [x] + states


def _check(tmp_path, model, make, names, out_names, dynamic_axes, shapes):
    model.eval()
    path = tmp_path / "rnn.onnx"
    proto = ember.onnx.export(model, tuple(make(*shapes[0])), path, input_names=names,
                              output_names=out_names, dynamic_axes=dynamic_axes)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    imported = ember.onnx.load_model(path)
    for shape in shapes:
        inputs = make(*shape)
        with ag.no_grad():
            expect = _flat(model(*inputs), [])
            got = sess.run(None, {n: _np(x) for n, x in zip(names, inputs)})
            back = _flat(imported(*inputs), [])
        assert len(got) == len(expect) == len(back)
        for e, o, b in zip(expect, got, back):
            assert o.shape == tuple(e.shape)
            np.testing.assert_allclose(o, _np(e), atol=ATOL, rtol=1e-5)
            np.testing.assert_allclose(_np(b), _np(e), atol=ATOL, rtol=1e-5)
    return proto


CASES = list(itertools.product(["LSTM", "GRU", "RNN"], [False, True], [1, 2], [1, 2]))


@pytest.mark.parametrize("given", [False, True], ids=["zero_state", "given_state"])
@pytest.mark.parametrize("kind,batch_first,layers,dirs", CASES,
                         ids=[f"{k}-{'bf' if b else 'tf'}-l{n}-{'bi' if d == 2 else 'uni'}"
                              for k, b, n, d in CASES])
def test_recurrent_layer_exports_as_onnx_operator(tmp_path, kind, batch_first, layers, dirs,
                                                  given):
    et.manual_seed(3)
    rnn = getattr(nn, kind)(3, 5, num_layers=layers, bidirectional=dirs == 2,
                            batch_first=batch_first)
    model = WithState(rnn)
    n_out = 3 if kind == "LSTM" else 2
    names = ["x", "h0", "c0"][:1 + (n_out - 1 if given else 0)]
    out_names = ["y", "h_n", "c_n"][:n_out]
    b, t = (0, 1) if batch_first else (1, 0)
    axes = {"x": {b: "batch", t: "seq"}, "y": {b: "batch", t: "seq"}}
    for s in names[1:] + out_names[1:]:
        axes[s] = {1: "batch"}

    def make(T, N):
        return _inputs(kind, batch_first, layers, dirs, given, T, N)

    proto = _check(tmp_path, model, make, names, out_names, axes, [(4, 2), (7, 3), (1, 1)])
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count(kind) == layers
    assert not {"LSTM", "GRU", "RNN"} - {kind} & set(ops)
    assert "MatMul" not in ops and "Gemm" not in ops  # nothing unrolled
    node = next(n for n in proto.graph.node if n.op_type == kind)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["hidden_size"] == 5
    assert attrs["direction"] == (b"bidirectional" if dirs == 2 else b"forward")
    if kind == "GRU":
        assert attrs["linear_before_reset"] == 1
    x_dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert x_dims[b].dim_param == "batch" and x_dims[t].dim_param == "seq"


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_relu_rnn_and_no_bias(tmp_path, kind):
    et.manual_seed(4)
    for rnn in (nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True),
                getattr(nn, kind)(3, 4, bias=False, bidirectional=True)):
        model = WithState(rnn)
        n_out = 3 if isinstance(rnn, nn.LSTM) else 2
        out_names = ["y", "h_n", "c_n"][:n_out]
        axes = {"x": [0, 1], "y": [0, 1]}
        _check(tmp_path, model, lambda T, N: [et.randn(T, N, 3)], ["x"], out_names, axes,
               [(3, 2), (6, 4)])


def test_unbatched_input(tmp_path):
    et.manual_seed(5)
    model = WithState(nn.LSTM(3, 4, num_layers=2, bidirectional=True))
    proto = _check(tmp_path, model, lambda T: [et.randn(T, 3)], ["x"], ["y", "h", "c"],
                   {"x": {0: "seq"}, "y": {0: "seq"}}, [(5,), (2,)])
    assert [n.op_type for n in proto.graph.node].count("LSTM") == 2


def test_recurrent_weights_follow_onnx_layout(tmp_path):
    rnn = nn.LSTM(3, 4, bidirectional=True)
    proto = ember.onnx.export(WithState(rnn), et.randn(2, 1, 3), tmp_path / "m.onnx")
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    W, R, B = inits["rnn.W_l0"], inits["rnn.R_l0"], inits["rnn.B_l0"]
    assert W.shape == (2, 16, 3) and R.shape == (2, 16, 4) and B.shape == (2, 32)
    i, f, g, o = np.split(_np(rnn.weight_ih_l0_reverse), 4)
    np.testing.assert_array_equal(W[1], np.concatenate([i, o, f, g]))


def test_weight_shared_recurrent_layer_called_twice(tmp_path):
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 3)

        def forward(self, x):
            y, h = self.rnn(x)
            return self.rnn(y, h)[0]

    et.manual_seed(6)
    proto = _check(tmp_path, Twice(), lambda T, N: [et.randn(T, N, 3)], ["x"], ["y"],
                   {"x": [0, 1], "y": [0, 1]}, [(3, 2), (5, 4)])
    assert len(proto.graph.initializer) == 3  # W, R, B once


def test_packed_sequence_still_traces_inside(tmp_path):
    from ember.nn.utils.rnn import pack_padded_sequence

    class Packed(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(3, 4)

        def forward(self, x):
            packed = pack_padded_sequence(x, [3, 2], enforce_sorted=True)
            return self.rnn(packed)[1][0]

    et.manual_seed(7)
    model = Packed().eval()
    x = et.randn(3, 2, 3)
    path = tmp_path / "p.onnx"
    proto = ember.onnx.export(model, x, path)
    assert "LSTM" not in [n.op_type for n in proto.graph.node]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with ag.no_grad():
        np.testing.assert_allclose(sess.run(None, {"input_0": _np(x)})[0], _np(model(x)),
                                   atol=ATOL)


def _word_language_model():
    spec = importlib.util.spec_from_file_location("word_language_model",
                                                  EXAMPLES / "word_language_model.py")
    if spec is None or not (EXAMPLES / "word_language_model.py").exists():
        pytest.skip("examples/word_language_model.py is not in this checkout")
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except ImportError as e:  # ember-data missing
        pytest.skip(f"examples/word_language_model.py does not import: {e}")
    return mod


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_TANH"])
def test_word_language_model_exports_with_dynamic_axes(tmp_path, rnn_type):
    wlm = _word_language_model()
    et.manual_seed(8)
    model = wlm.RNNModel(rnn_type, 40, 8, 12, 2, dropout=0.2)
    lstm = rnn_type == "LSTM"
    names = ["tokens", "h0", "c0"] if lstm else ["tokens", "h0"]
    out_names = ["logits", "h_n", "c_n"] if lstm else ["logits", "h_n"]
    axes = {"tokens": {0: "seq", 1: "batch"}, "logits": {0: "rows"}}
    for s in names[1:] + out_names[1:]:
        axes[s] = {1: "batch"}

    def make(T, N):
        hidden = model.init_hidden(N)
        return [et.randint(0, 40, (T, N))] + (list(hidden) if lstm else [hidden])

    class Flat(nn.Module):  # the example's forward(input, hidden), with a flat signature
        def __init__(self):
            super().__init__()
            self.lm = model

        def forward(self, tokens, *hidden):
            return self.lm(tokens, tuple(hidden) if lstm else hidden[0])

    proto = _check(tmp_path, Flat(), make, names, out_names, axes, [(5, 2), (9, 3)])
    kind = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN"}[rnn_type]
    assert [n.op_type for n in proto.graph.node].count(kind) == 2
