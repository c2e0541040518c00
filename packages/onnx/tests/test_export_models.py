"""A zoo of small models, each through the whole round trip: export with a dynamic batch axis,
``check_model``, onnxruntime against ember at the traced batch size and at another one, import
back with ``load_model`` and compare again, then fine-tune the imported model one step: its
parameters are the original's state_dict entries, with the same gradients."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx
import ember.tensor as et
from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

ort = pytest.importorskip("onnxruntime")

ATOL = 1e-5


def _np(t):
    return t.detach().numpy()


def run_ort(path, inputs, names=None):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = names or [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: _np(x) for n, x in zip(names, inputs)})


def roundtrip(tmp_path, model, inputs, new_inputs=None, dynamic_axes=None, **kw):
    model.eval()
    path = tmp_path / "model.onnx"
    names = [f"input_{i}" for i in range(len(inputs))]
    proto = ember.onnx.export(model, tuple(inputs), path, input_names=names,
                              dynamic_axes=dynamic_axes, **kw)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    imported = ember.onnx.load_model(path)
    for batch in [inputs] + ([new_inputs] if new_inputs is not None else []):
        with ag.no_grad():
            expect = model(*batch)
            expect = expect if isinstance(expect, tuple) else (expect,)
            got_ort = run_ort(path, batch, names)
            got_imp = imported(*batch)
            got_imp = got_imp if isinstance(got_imp, tuple) else (got_imp,)
        assert len(got_ort) == len(expect)
        for e, o, i in zip(expect, got_ort, got_imp):
            assert o.shape == tuple(e.shape)
            np.testing.assert_allclose(o, _np(e), atol=ATOL, rtol=1e-5)
            np.testing.assert_allclose(_np(i), _np(e), atol=ATOL, rtol=1e-5)
    return proto, imported


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3),
                                  nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))

    def forward(self, x):
        return F.log_softmax(self.body(x), dim=1)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        return self.fc2(F.relu(self.fc1(x)))


class ResBlock(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.head = nn.Linear(c, 3)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        y = F.relu(y + x)
        y = F.avg_pool2d(y, 2)
        return self.head(y.mean((2, 3)))


class EmbedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.norm = nn.LayerNorm(8)
        self.out = nn.Linear(8, 5)

    def forward(self, tokens):
        h = self.norm(self.emb(tokens)).mean(1)
        return F.softmax(self.out(h), dim=-1)


class LSTMLM(nn.Module):
    def __init__(self, layers=2, bidirectional=False):
        super().__init__()
        self.encoder = nn.Embedding(30, 8)
        self.rnn = nn.LSTM(8, 12, num_layers=layers, bidirectional=bidirectional)
        self.decoder = nn.Linear(12 * (2 if bidirectional else 1), 30)

    def forward(self, tokens):
        out, _ = self.rnn(self.encoder(tokens))
        return F.log_softmax(self.decoder(out), dim=-1)


class GRUModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(5, 7, batch_first=True)
        self.fc = nn.Linear(7, 2)

    def forward(self, x):
        out, h = self.rnn(x)
        return self.fc(out[:, -1]), h


class TransformerLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(25, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.dec = nn.Linear(16, 25)

    def forward(self, tokens):
        return self.dec(self.enc(self.emb(tokens)))


class PackedLSTMLM(nn.Module):
    """The LSTM language model on a padded batch of sequences of different lengths, packed:
    exported as ONNX's LSTM with the lengths as its ``sequence_lens``."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(30, 8)
        self.rnn = nn.LSTM(8, 12, num_layers=2, bidirectional=True)
        self.decoder = nn.Linear(24, 30)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.encoder(tokens), lengths, enforce_sorted=False)
        out, (h, _) = self.rnn(packed)
        out, _ = pad_packed_sequence(out)
        return F.log_softmax(self.decoder(out), dim=-1), h


class DigitsCNN(nn.Module):
    """The digits demo's CNN (``examples/train_digits_cnn.py``, which the onnx env cannot
    import: it needs ember-data), layer for layer."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout(x.flatten(1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def _tokens(shape, n):
    return et.randint(0, n, shape)


def _lengths(b, longest):
    """``b`` lengths in 1..``longest``, unsorted, the longest among them."""
    lengths = et.randint(1, longest + 1, (b,))
    lengths[b // 2] = longest
    return lengths


ZOO = {
    "mlp": (MLP, lambda b: [et.randn(b, 6)], {"input_0": [0]}),
    "lenet": (LeNet, lambda b: [et.randn(b, 1, 28, 28)], {"input_0": [0]}),
    "resblock": (ResBlock, lambda b: [et.randn(b, 4, 6, 6)], {"input_0": [0]}),
    "embed": (EmbedClassifier, lambda b: [_tokens((b, 5), 20)], {"input_0": [0]}),
    "lstm_lm": (LSTMLM, lambda b: [_tokens((6, b), 30)], {"input_0": {1: "batch"}}),
    "bilstm": (lambda: LSTMLM(1, True), lambda b: [_tokens((4, b), 30)], {"input_0": [1]}),
    "packed_lstm_lm": (PackedLSTMLM, lambda b: [_tokens((6, b), 30), _lengths(b, 6)],
                       {"input_0": {1: "batch"}, "input_1": {0: "batch"}}),
    "gru": (GRUModel, lambda b: [et.randn(b, 4, 5)], {"input_0": {0: "batch"}}),
    "transformer": (TransformerLM, lambda b: [_tokens((5, b), 25)], {"input_0": [1]}),
    "digits": (DigitsCNN, lambda b: [et.randn(b, 1, 8, 8)], {"input_0": {0: "batch"}}),
}


def _sum_of_squares(out):
    out = out if isinstance(out, tuple) else (out,)
    return sum(o.float().pow(2).sum() for o in out)


def finetune_step_matches(model, imported, x):
    """One SGD step on both models from the same loss: the imported model's parameters are the
    original's state_dict entries (running statistics too), with the same gradients, and the
    step moves both the same way."""
    assert set(imported.state_dict()) == set(model.state_dict()) - {
        k for k in model.state_dict() if k.endswith("num_batches_tracked")}
    params = dict(imported.named_parameters())
    assert set(params) == {k for k, _ in model.named_parameters()}
    _sum_of_squares(model(*x)).backward()
    _sum_of_squares(imported(*x)).backward()
    for k, p in model.named_parameters():
        assert params[k].grad is not None, k
        np.testing.assert_allclose(_np(params[k].grad), _np(p.grad), atol=1e-4, rtol=1e-4,
                                   err_msg=k)
    with ag.no_grad():
        for k, p in model.named_parameters():
            p.sub_(0.1 * p.grad)
            params[k].sub_(0.1 * params[k].grad)
        after = model(*x)
        moved = imported(*x)
    after = after if isinstance(after, tuple) else (after,)
    moved = moved if isinstance(moved, tuple) else (moved,)
    for a, m in zip(after, moved):
        np.testing.assert_allclose(_np(m), _np(a), atol=ATOL, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_round_trip(tmp_path, name):
    et.manual_seed(0)
    make, data, dyn = ZOO[name]
    model = make()
    if name == "resblock":  # non-trivial running statistics
        model.train()
        with ag.no_grad():
            for _ in range(3):
                model(et.randn(4, 4, 6, 6))
    new = data(5)
    if name == "transformer":
        new = [_tokens((5, 4), 25)]
    _, imported = roundtrip(tmp_path, model, data(2), new, dyn)
    imported.eval()
    finetune_step_matches(model, imported, data(3))


class Detaching(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        h = self.lin(x)
        return h * h.detach().sigmoid() + self.lin.weight.detach().sum()


def test_detach_inside_forward_is_an_identity_of_its_input(tmp_path):
    # detach is an op the trace records: the graph reads the traced value (not a constant of
    # the traced batch), so another batch size gives the model's own result
    proto, _ = roundtrip(tmp_path, Detaching(), [et.randn(2, 4)], [et.randn(5, 4)],
                         dynamic_axes={"input_0": {0: "batch"}})
    assert [n.op_type for n in proto.graph.node].count("Identity") >= 2


def test_state_dict_round_trips_between_original_and_imported(tmp_path):
    model = MLP()
    _, imported = roundtrip(tmp_path, model, [et.randn(2, 6)])
    other = MLP()
    imported.load_state_dict(other.state_dict())
    x = et.randn(3, 6)
    with ag.no_grad():
        np.testing.assert_allclose(_np(imported(x)), _np(other.eval()(x)), atol=ATOL)


def test_initializers_are_named_by_state_dict_keys(tmp_path):
    model = ResBlock()
    proto = ember.onnx.export(model, et.randn(1, 4, 4, 4), tmp_path / "m.onnx")
    names = {i.name for i in proto.graph.initializer}
    assert {"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
            "head.weight", "head.bias"} <= names


def test_dynamic_axes_are_symbolic_in_the_graph(tmp_path):
    model = MLP().eval()
    proto = ember.onnx.export(model, et.randn(2, 6), tmp_path / "m.onnx", input_names=["x"],
                              output_names=["logp"], dynamic_axes={"x": {0: "batch"},
                                                                   "logp": {0: "batch"}})
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 6
    out = proto.graph.output[0]
    assert out.name == "logp"
    assert out.type.tensor_type.shape.dim[0].dim_param == "batch"
    for b in (1, 7):
        x = et.randn(b, 6)
        got = run_ort(tmp_path / "m.onnx", [x], ["x"])[0]
        with ag.no_grad():
            np.testing.assert_allclose(got, _np(model(x)), atol=ATOL)


def test_multiple_inputs_and_outputs_and_kwargs(tmp_path):
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 2)

        def forward(self, x, y, scale=1.0):
            return self.a(x) * scale, (x * y).sum(-1)

    model = Two()
    x, y = et.randn(4, 3), et.randn(4, 3)
    ember.onnx.export(model, (x, y, {"scale": 2.0}), tmp_path / "m.onnx",
                      input_names=["x", "y"], output_names=["a", "b"])
    a, b = run_ort(tmp_path / "m.onnx", [x, y], ["x", "y"])
    with ag.no_grad():
        ea, eb = model(x, y, scale=2.0)
    np.testing.assert_allclose(a, _np(ea), atol=ATOL)
    np.testing.assert_allclose(b, _np(eb), atol=ATOL)


@pytest.mark.parametrize("fold", [True, False])
def test_constant_folding_keeps_values(tmp_path, fold):
    class WithConst(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            c = et.tensor([1.0, 2.0, 3.0]).exp() * 2
            return self.lin(x) + c

    model = WithConst()
    proto, _ = roundtrip(tmp_path, model, [et.randn(2, 3)], do_constant_folding=fold)
    ops = [n.op_type for n in proto.graph.node]
    assert ("Exp" in ops) is (not fold)


@pytest.mark.parametrize("opset", list(range(ember.onnx.MIN_OPSET, ember.onnx.max_opset() + 1)))
def test_every_opset_passes_the_checker(tmp_path, opset):
    model = EmbedClassifier()
    proto = ember.onnx.export(model, _tokens((2, 5), 20), tmp_path / "m.onnx",
                              opset_version=opset)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == opset
    imported = ember.onnx.load_model(proto)
    x = _tokens((3, 5), 20)
    with ag.no_grad():
        np.testing.assert_allclose(_np(imported(x)), _np(model.eval()(x)), atol=ATOL)


@pytest.mark.parametrize("opset", list(range(ember.onnx.MIN_OPSET, ember.onnx.max_opset() + 1)))
def test_packed_model_and_smoothed_loss_at_every_opset(tmp_path, opset):
    """The reductions around packing and label smoothing take their axes as each opset
    wants them."""
    class Smoothed(nn.Module):
        def forward(self, x, t):
            return F.cross_entropy(x, t, et.tensor([1.0, 2.0, 0.5]), ignore_index=0,
                                   label_smoothing=0.2)

    et.manual_seed(opset)
    roundtrip(tmp_path, PackedLSTMLM(), [_tokens((5, 3), 30), et.tensor([2, 5, 4])],
              opset_version=opset)
    roundtrip(tmp_path, Smoothed(), [et.randn(4, 3), et.tensor([0, 2, 1, 2])],
              opset_version=opset)


@pytest.mark.parametrize("opset", [17, 18, 19, 20, 21])
def test_onnxruntime_runs_supported_opsets(tmp_path, opset):
    if opset > ember.onnx.max_opset():
        pytest.skip(f"onnx {onnx.__version__} knows opsets up to {ember.onnx.max_opset()}")
    roundtrip(tmp_path, ResBlock(), [et.randn(2, 4, 6, 6)], opset_version=opset)
