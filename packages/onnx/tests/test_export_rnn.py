"""Recurrent layers export as ONNX's LSTM / GRU / RNN operators (one node per layer), with
free sequence length and batch: onnxruntime and the importer match ember at the traced shape
and at another batch size and sequence length. Packed sequences run as the same operators with
their lengths as ``sequence_lens``. An imported layer holds the original parameters (PyTorch's
layout, state_dict names) and fine-tunes with the original's gradients."""
from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.onnx
import ember.tensor as et
from ember.nn.utils import rnn as rnn_utils
from ember.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

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


def _node_inputs(proto, op_type):
    """The model with the inputs of its first ``op_type`` node as extra graph outputs."""
    node = next(n for n in proto.graph.node if n.op_type == op_type)
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    for name in node.input[1:4]:
        probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return probe


@pytest.mark.parametrize("kind,order", [("LSTM", [0, 3, 1, 2]), ("GRU", [1, 0, 2]),
                                        ("RNN", [0])])
def test_recurrent_weights_are_the_layer_parameters_in_onnx_layout(tmp_path, kind, order):
    et.manual_seed(2)
    rnn = getattr(nn, kind)(3, 4, bidirectional=True)
    proto = ember.onnx.export(WithState(rnn), et.randn(2, 1, 3), tmp_path / "m.onnx")
    assert {i.name for i in proto.graph.initializer} == {f"rnn.{k}" for k in rnn.state_dict()}
    sess = ort.InferenceSession(_node_inputs(proto, kind).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    W, R, B = sess.run(None, {"input_0": _np(et.randn(2, 1, 3))})[-3:]

    def onnx_layout(name, sfx):
        blocks = np.split(_np(getattr(rnn, f"{name}_l0{sfx}")), len(order))
        return np.concatenate([blocks[i] for i in order])

    for d, sfx in enumerate(["", "_reverse"]):
        np.testing.assert_array_equal(W[d], onnx_layout("weight_ih", sfx))
        np.testing.assert_array_equal(R[d], onnx_layout("weight_hh", sfx))
        np.testing.assert_array_equal(B[d], np.concatenate([onnx_layout("bias_ih", sfx),
                                                            onnx_layout("bias_hh", sfx)]))


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
    assert len(proto.graph.initializer) == 4  # the layer's parameters, once
    assert [n.op_type for n in proto.graph.node].count("Gather") == 4  # re-laid out once


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_imported_recurrent_layer_finetunes_with_the_original_gradients(tmp_path, kind):
    et.manual_seed(9)
    model = WithState(getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True,
                                        batch_first=True)).eval()
    x = et.randn(2, 4, 3)
    path = tmp_path / "m.onnx"
    ember.onnx.export(model, x, path, input_names=["x"])
    imported = ember.onnx.load_model(path)
    assert set(imported.state_dict()) == set(model.state_dict())
    params = dict(imported.named_parameters())
    x = et.randn(3, 6, 3)
    sum(o.pow(2).sum() for o in _flat(model(x), [])).backward()
    sum(o.pow(2).sum() for o in _flat(imported(x), [])).backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(_np(params[k].grad), _np(p.grad), atol=1e-5, rtol=1e-4,
                                   err_msg=k)
    # the same state_dict: another layer's weights load into the imported model
    other = WithState(getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True,
                                        batch_first=True)).eval()
    imported.load_state_dict(other.state_dict())
    with ag.no_grad():
        for e, b in zip(_flat(other(x), []), _flat(imported(x), [])):
            np.testing.assert_allclose(_np(b), _np(e), atol=ATOL, rtol=1e-5)


# ------------------------------------------------------------------ packed sequences
class Packed(nn.Module):
    """pack_padded_sequence -> the recurrent layer -> pad_packed_sequence, with the lengths as
    the second input and the initial state, if any, after them."""

    def __init__(self, rnn, enforce_sorted=True, batch_first=False, padding_value=0.0,
                 total_length=None):
        super().__init__()
        self.rnn = rnn
        self.enforce_sorted, self.batch_first = enforce_sorted, batch_first
        self.padding_value, self.total_length = padding_value, total_length

    def forward(self, x, lengths, *state):
        packed = pack_padded_sequence(x, lengths, batch_first=self.batch_first,
                                      enforce_sorted=self.enforce_sorted)
        if state:
            state = tuple(state) if isinstance(self.rnn, nn.LSTM) else state[0]
            out, h = self.rnn(packed, state)
        else:
            out, h = self.rnn(packed)
        y, lengths = pad_packed_sequence(out, batch_first=self.batch_first,
                                         padding_value=self.padding_value,
                                         total_length=self.total_length)
        return y, h, lengths


PACKED = list(itertools.product(["LSTM", "GRU", "RNN"], [1, 2], [False, True]))


@pytest.mark.parametrize("kind,dirs,enforce_sorted", PACKED,
                         ids=[f"{k}-{'bi' if d == 2 else 'uni'}-{'sorted' if s else 'unsorted'}"
                              for k, d, s in PACKED])
def test_packed_sequence_exports_with_sequence_lens(tmp_path, kind, dirs, enforce_sorted):
    et.manual_seed(10)
    batch_first = not enforce_sorted
    rnn = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=dirs == 2)
    given = dirs == 2
    model = Packed(rnn, enforce_sorted, batch_first)
    n_states = (2 if kind == "LSTM" else 1) if given else 0
    names = ["x", "lengths", "h0", "c0"][:2 + n_states]
    out_names = ["y", "h_n", "c_n", "out_lengths"] if kind == "LSTM" else \
        ["y", "h_n", "out_lengths"]
    b, t = (0, 1) if batch_first else (1, 0)
    axes = {"x": {b: "batch", t: "seq"}, "lengths": {0: "batch"},
            "y": {b: "batch", t: "longest"}, "out_lengths": {0: "batch"}}
    for s in names[2:] + out_names[1:-1]:
        axes[s] = {1: "batch"}

    def make(lengths, T):
        N = len(lengths)
        if enforce_sorted:
            lengths = sorted(lengths, reverse=True)
        x = et.randn(N, T, 3) if batch_first else et.randn(T, N, 3)
        states = [et.randn(2 * dirs, N, 5) for _ in range(n_states)]
        return [x, et.tensor(lengths)] + states

    # traced: the longest sequence fills the padding; then a longer padding than any length,
    # a larger batch, a batch of one
    proto = _check(tmp_path, model, make, names, out_names, axes,
                   [([2, 5, 3], 5), ([4, 6, 1, 6, 2], 8), ([3], 3)])
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count(kind) == 2
    assert "MatMul" not in ops and "Gemm" not in ops  # nothing unrolled
    for node in proto.graph.node:
        if node.op_type == kind:
            assert node.input[4]  # sequence_lens


def test_pad_packed_sequence_padding_value_and_total_length(tmp_path):
    et.manual_seed(11)
    model = Packed(nn.GRU(3, 4), enforce_sorted=False, batch_first=True, padding_value=-2.0,
                   total_length=9)
    _check(tmp_path, model, lambda lengths, T: [et.randn(len(lengths), T, 3),
                                                et.tensor(lengths)],
           ["x", "lengths"], ["y", "h_n", "out_lengths"],
           {"x": [0, 1], "lengths": [0], "y": [0], "h_n": [1], "out_lengths": [0]},
           [([2, 4], 4), ([1, 7, 3], 9), ([5], 6)])


def test_packing_without_a_recurrent_layer(tmp_path):
    class Repack(nn.Module):
        def forward(self, x, lengths):
            packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
            y, _ = pad_packed_sequence(packed)  # the padding in x becomes zeros
            return y, packed.data * 2, packed.batch_sizes

    _check(tmp_path, Repack(), lambda lengths, T: [et.randn(T, len(lengths), 2),
                                                   et.tensor(lengths)],
           ["x", "lengths"], ["y", "data", "batch_sizes"],
           {"x": [0, 1], "lengths": [0], "y": [0, 1], "data": [0], "batch_sizes": [0]},
           [([3, 1, 3], 4), ([2, 5], 6), ([1, 1, 2, 1], 2)])


def test_packed_output_fields(tmp_path):
    class Fields(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(2, 3, bidirectional=True)

        def forward(self, x, lengths):
            out, _ = self.rnn(rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=False))
            return out.data, out.batch_sizes, out.sorted_indices, out.unsorted_indices

    et.manual_seed(12)
    _check(tmp_path, Fields(), lambda lengths, T: [et.randn(T, len(lengths), 2),
                                                   et.tensor(lengths)],
           ["x", "lengths"], ["data", "batch_sizes", "sorted", "unsorted"],
           {"x": [0, 1], "lengths": [0], "data": [0], "batch_sizes": [0], "sorted": [0],
            "unsorted": [0]},
           [([2, 4, 4, 1], 4), ([3, 5, 1], 7)])


def test_packing_functions_are_never_rebound(tmp_path):
    """The packing functions are plain Python over registry ops: the trace records their ops
    and rebinds no name, here or in any module."""
    before = pack_padded_sequence, rnn_utils.pad_packed_sequence, rnn_utils.pack_padded_sequence
    seen = []

    class Spy(Packed):
        def forward(self, x, lengths):
            seen.append((rnn_utils.pack_padded_sequence, rnn_utils.pad_packed_sequence))
            return super().forward(x, lengths)

    ember.onnx.export(Spy(nn.LSTM(2, 2)), (et.randn(3, 2, 2), et.tensor([3, 2])),
                      tmp_path / "m.onnx")
    assert seen == [(before[2], before[1])]
    assert (pack_padded_sequence, rnn_utils.pad_packed_sequence,
            rnn_utils.pack_padded_sequence) == before


def test_module_imported_during_the_trace_binds_the_function_itself(tmp_path, monkeypatch):
    """A module first imported inside the traced forward binds pack_padded_sequence itself,
    and its call still exports as the recurrent operator with sequence_lens."""
    (tmp_path / "late_pack.py").write_text(
        "from ember.nn.utils.rnn import pack_padded_sequence\n\n\n"
        "def pack(x, lengths):\n    return pack_padded_sequence(x, lengths)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "late_pack", raising=False)

    class Late(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(2, 2)

        def forward(self, x, lengths):
            late_pack = importlib.import_module("late_pack")
            return self.rnn(late_pack.pack(x, lengths))[1]

    proto = ember.onnx.export(Late(), (et.randn(3, 2, 2), et.tensor([3, 1])), None)
    gru = next(n for n in proto.graph.node if n.op_type == "GRU")
    assert gru.input[4]  # sequence_lens
    assert sys.modules["late_pack"].pack_padded_sequence is pack_padded_sequence


def test_hand_made_packed_sequence_traces_inside(tmp_path):
    """A PackedSequence that pack_padded_sequence did not make during the export has no
    lengths in the graph: the layer is traced inside, for the traced batch sizes."""
    class HandMade(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(3, 4)

        def forward(self, data):
            return self.rnn(PackedSequence(data, et.tensor([2, 2, 1])))[1][0]

    et.manual_seed(7)
    model = HandMade().eval()
    x = et.randn(5, 3)
    path = tmp_path / "p.onnx"
    proto = ember.onnx.export(model, x, path)
    assert "LSTM" not in [n.op_type for n in proto.graph.node]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with ag.no_grad():
        np.testing.assert_allclose(sess.run(None, {"input_0": _np(x)})[0], _np(model(x)),
                                   atol=ATOL)


def test_unpacking_a_packed_sequence_the_trace_did_not_pack(tmp_path):
    """``_pad_packed_sequence`` of data and batch sizes that are graph inputs: the rows are
    placed from the batch sizes in the graph, for any batch sizes."""
    class Unpack(nn.Module):
        def forward(self, data, batch_sizes):
            y, lengths = pad_packed_sequence(PackedSequence(data * 2, batch_sizes),
                                             batch_first=True, padding_value=-1.0)
            return y, lengths

    def make(sizes):
        return [et.randn(sum(sizes), 3), et.tensor(sizes)]

    _check(tmp_path, Unpack(), make, ["data", "batch_sizes"], ["y", "lengths"],
           {"data": [0], "batch_sizes": [0], "y": [0, 1], "lengths": [0]},
           [([3, 2, 2, 1],), ([1],), ([4, 4, 3],)])


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
