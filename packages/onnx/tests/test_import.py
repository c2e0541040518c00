"""Import of hand-built ONNX graphs (operators export does not emit, as other exporters
write them): ``load_model`` against onnxruntime on the same graph."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember.autograd as ag
import ember.onnx
import ember.tensor as et

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(0)


def _f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def build(op_type, x_shape, inits=(), attrs=None, n_out=1, opset=18, extra_inputs=()):
    inputs = ["x"] + [name for name, _ in inits] + list(extra_inputs)
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, inputs, outs, **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model)
    return model


def compare(model, x, atol=1e-5):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expect = sess.run(None, {"x": x})
    m = ember.onnx.load_model(model)
    with ag.no_grad():
        got = m(et.tensor(x))
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g.numpy(), e, atol=atol, rtol=1e-5)
    return m


CASES = {
    "softmax": ("Softmax", (2, 5), [], {"axis": 1}),
    "log_softmax": ("LogSoftmax", (2, 3, 5), [], {"axis": -1}),
    "layer_norm": ("LayerNormalization", (2, 3, 4), [("s", _f(4)), ("b", _f(4))],
                   {"axis": -1, "epsilon": 1e-5}),
    "batch_norm": ("BatchNormalization", (2, 3, 4, 4),
                   [("s", _f(3)), ("b", _f(3)), ("m", _f(3)), ("v", np.abs(_f(3)) + 0.5)], {}),
    "conv_asym_pads": ("Conv", (1, 2, 6, 6), [("w", _f(3, 2, 3, 3))], {"pads": [0, 1, 1, 2]}),
    "conv_same_upper": ("Conv", (1, 2, 5, 5), [("w", _f(3, 2, 2, 2)), ("b", _f(3))],
                        {"auto_pad": "SAME_UPPER"}),
    "avgpool_exclude_pad": ("AveragePool", (1, 2, 5, 5), [],
                            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "global_avg": ("GlobalAveragePool", (2, 3, 4, 4), [], {}),
    "global_max": ("GlobalMaxPool", (2, 3, 4, 4), [], {}),
    "flatten": ("Flatten", (2, 3, 4), [], {"axis": 2}),
    "leaky_relu": ("LeakyRelu", (3, 4), [], {"alpha": 0.2}),
    "elu": ("Elu", (3, 4), [], {"alpha": 0.7}),
    "hard_sigmoid": ("HardSigmoid", (3, 4), [], {}),
    "gelu": ("Gelu", (3, 4), [], {}),
    "softplus": ("Softplus", (3, 4), [], {}),
    "prelu": ("PRelu", (2, 3), [("slope", _f(3))], {}),
    "pad_reflect": ("Pad", (1, 2, 4, 4), [("p", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))],
                    {"mode": "reflect"}),
    "gemm_alpha": ("Gemm", (3, 4), [("b", _f(5, 4)), ("c", _f(5))],
                   {"transB": 1, "alpha": 0.5, "beta": 2.0}),
    "reduce_l2": ("ReduceL2", (2, 3, 4), [("axes", np.array([1], np.int64))], {"keepdims": 0}),
    "split": ("Split", (4, 6), [("s", np.array([2, 4], np.int64))], {"axis": 1}),
    "tile": ("Tile", (2, 3), [("r", np.array([2, 1], np.int64))], {}),
    "slice_neg_step": ("Slice", (4, 6), [("st", np.array([-1], np.int64)),
                                          ("en", np.array([-10], np.int64)),
                                          ("ax", np.array([1], np.int64)),
                                          ("sp", np.array([-2], np.int64))], {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_operator(name):
    op_type, shape, inits, attrs = CASES[name]
    n_out = 2 if name == "split" else 1
    opset = 20 if op_type == "Gelu" else 18
    compare(build(op_type, shape, inits, attrs, n_out=n_out, opset=opset), _f(*shape))


def _rnn_inits(kind, dirs, H, I, gates):
    return [("W", _f(dirs, gates * H, I) * 0.5), ("R", _f(dirs, gates * H, H) * 0.5),
            ("B", _f(dirs, 2 * gates * H) * 0.5)]


@pytest.mark.parametrize("seq_lens", [None, [4, 1, 3]], ids=["full", "sequence_lens"])
@pytest.mark.parametrize("kind,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_import_recurrent(kind, gates, direction, seq_lens):
    dirs = 2 if direction == "bidirectional" else 1
    H, I, T, N = 5, 3, 4, 3
    inits = _rnn_inits(kind, dirs, H, I, gates)
    if seq_lens is not None:  # steps past a length: state kept, zeros in Y
        inits.append(("seq_lens", np.array(seq_lens, np.int32)))
    n_out = 3 if kind == "LSTM" else 2
    attrs = {"hidden_size": H, "direction": direction}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    compare(build(kind, (T, N, I), inits, attrs, n_out=n_out), _f(T, N, I))


def _loss_graph(op_type, x_shape, weight, attrs, n_out=1):
    """``op_type(x, target[, weight])`` with the int64 target a second graph input."""
    ins = ["x", "t"] + (["w"] if weight is not None else [])
    outs = ["y0", "y1"][:n_out]
    node = helper.make_node(op_type, ins, outs, **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape)),
                      helper.make_tensor_value_info("t", TensorProto.INT64,
                                                    [x_shape[0]] + list(x_shape[2:]))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        initializer=[] if weight is None else [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


LOSSES = {
    "sce_defaults": ("SoftmaxCrossEntropyLoss", (4, 5), None, {}, 1),
    "sce_weight_ignore_sum": ("SoftmaxCrossEntropyLoss", (4, 5, 3),
                              np.abs(_f(5)) + 0.1, {"reduction": "sum", "ignore_index": 2}, 1),
    "sce_log_prob": ("SoftmaxCrossEntropyLoss", (4, 5), None,
                     {"reduction": "none", "ignore_index": 0}, 2),
    "nll_defaults": ("NegativeLogLikelihoodLoss", (4, 5), None, {}, 1),
    "nll_weight_ignore": ("NegativeLogLikelihoodLoss", (3, 5, 2), np.abs(_f(5)) + 0.1,
                          {"ignore_index": 4}, 1),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_import_loss(name):
    op_type, shape, weight, attrs, n_out = LOSSES[name]
    model = _loss_graph(op_type, shape, weight, attrs, n_out)
    x = _f(*shape)
    t = RNG.integers(0, 5, (shape[0],) + shape[2:]).astype(np.int64)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expect = sess.run(None, {"x": x, "t": t})
    with ag.no_grad():
        got = ember.onnx.load_model(model)(et.tensor(x), et.tensor(t))
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expect)
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g.numpy(), e, atol=1e-5, rtol=1e-5)


def test_imported_parameters_train():
    model = build("Gemm", (3, 4), [("w", _f(5, 4)), ("b", _f(5))], {"transB": 1})
    m = ember.onnx.load_model(model)
    names = dict(m.named_parameters())
    assert set(names) == {"w", "b"}
    m(et.randn(3, 4)).sum().backward()
    np.testing.assert_allclose(names["b"].grad.numpy(), np.full(5, 3.0))


def test_import_rejects_unknown_operator():
    node = helper.make_node("Hardmax", ["x"], ["y0"])
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(NotImplementedError, match="Hardmax"):
        ember.onnx.load_model(model)
