"""Op coverage: each mapped registry op exported in a tiny graph, run in onnxruntime and
imported back; errors for unmapped ops and untraceable code; tracer warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx
import ember.tensor as et
from ember.tensor import extension as ext

ort = pytest.importorskip("onnxruntime")


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def check(tmp_path, fn, *inputs, atol=1e-5, imported=True):
    model = Fn(fn)
    path = tmp_path / "op.onnx"
    ember.onnx.export(model, tuple(inputs), path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(sess.get_inputs(), inputs)}
    got = sess.run(None, feeds)
    with ag.no_grad():
        expect = model(*inputs)
    expect = expect if isinstance(expect, tuple) else (expect,)
    for g, e in zip(got, expect):
        assert g.shape == tuple(e.shape)
        np.testing.assert_allclose(g, e.numpy(), atol=atol, rtol=1e-5)
    if imported:
        back = ember.onnx.load_model(path)
        with ag.no_grad():
            res = back(*inputs)
        res = res if isinstance(res, tuple) else (res,)
        for r, e in zip(res, expect):
            np.testing.assert_allclose(r.numpy(), e.numpy(), atol=atol, rtol=1e-5)


def _x(*shape):
    et.manual_seed(0)
    return et.randn(*shape)


def _pos(*shape):
    return _x(*shape).abs() + 0.5


UNARY = {
    "abs": et.abs, "exp": et.exp, "log": lambda x: et.log(x.abs() + 1), "neg": et.neg,
    "sqrt": lambda x: x.abs().sqrt(), "rsqrt": lambda x: (x.abs() + 1).rsqrt(),
    "tanh": et.tanh, "sigmoid": et.sigmoid, "relu": et.relu, "sin": et.sin, "cos": et.cos,
    "erf": et.erf, "erfc": et.erfc, "floor": et.floor, "ceil": et.ceil, "sign": et.sign,
    "reciprocal": lambda x: (x.abs() + 1).reciprocal(), "square": et.square,
    "expm1": et.expm1, "log1p": lambda x: x.abs().log1p(), "log2": lambda x: (x.abs() + 1).log2(),
    "log10": lambda x: (x.abs() + 1).log10(), "exp2": et.exp2, "trunc": et.trunc,
    "frac": et.frac, "round": et.round, "atan": et.atan, "asinh": et.asinh,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "elu": F.elu, "selu": F.selu, "leaky_relu": F.leaky_relu, "softplus": F.softplus,
    "hardtanh": F.hardtanh, "relu6": F.relu6, "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish, "logsigmoid": F.logsigmoid, "mish": F.mish,
    "celu": lambda x: F.celu(x, 0.7), "elu_alpha": lambda x: F.elu(x, 0.3),
    "softplus_beta": lambda x: F.softplus(x * 12, 2.0, 5.0),
    "softsign": F.softsign, "tanhshrink": F.tanhshrink, "relu_inplace": lambda x: F.relu(x * 1,
                                                                                        True),
    "clamp": lambda x: x.clamp(-0.5, 0.7), "clamp_min": lambda x: x.clamp(min=0.1),
    "isnan": lambda x: et.isnan(x).float(), "isfinite": lambda x: et.isfinite(x).float(),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(tmp_path, name):
    check(tmp_path, UNARY[name], _x(3, 4))


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 1), "pow": lambda a, b: a.abs().pow(b),
    "pow_scalar": lambda a, b: a ** 2 + 3.0 ** b, "maximum": et.maximum, "minimum": et.minimum,
    "eq": lambda a, b: (a.round() == b.round()).float(), "lt": lambda a, b: (a < b).float(),
    "le": lambda a, b: (a <= b).float(), "gt": lambda a, b: (a > b).float(),
    "ge": lambda a, b: (a >= 0.1).float(), "ne": lambda a, b: (a != b).float(),
    "where": lambda a, b: et.where(a > b, a, b),
    "where_scalar": lambda a, b: et.where(a > 0, a, 0.),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, -1.0),
    "logical": lambda a, b: ((a > 0) & (b > 0) | ~(a > b)).float(),
    "remainder": lambda a, b: et.remainder(a, b.abs() + 0.5),
    "fmod": lambda a, b: et.fmod(a, b.abs() + 0.5),
    "floor_divide": lambda a, b: et.floor_divide(a, b.abs() + 0.5),
    "div_trunc": lambda a, b: et.div(a * 4, b.abs() + 0.5, rounding_mode="trunc"),
    "div_floor": lambda a, b: et.div(a * 4, b.abs() + 0.5, rounding_mode="floor"),
    "div_trunc_int": lambda a, b: et.div((a * 10).long(), (b.abs() * 3).long() + 1,
                                         rounding_mode="trunc").float(),
    "atan2": et.atan2, "hypot": et.hypot, "lerp": lambda a, b: et.lerp(a, b, 0.3),
    "matmul": lambda a, b: a @ b.t(), "outer": lambda a, b: et.outer(a[0], b[1]),
    "kron": lambda a, b: et.kron(a[:2], b[1:, :2]),
    "einsum": lambda a, b: et.einsum("ij,kj->ik", a, b), "broadcast": lambda a, b: a + b[0],
    "rsub": lambda a, b: 1 - a, "rdiv": lambda a, b: 2 / (a.abs() + 1),
    "scalar_int_tensor": lambda a, b: a * (b > 0).long(),
    "cat": lambda a, b: et.cat([a, b], 1), "stack": lambda a, b: et.stack([a, b], -1),
    "isclose": lambda a, b: et.isclose(a, a + b * 1e-9).float(),
    "linear3d": lambda a, b: F.linear(a.unsqueeze(0).expand(2, 3, 4), b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(tmp_path, name):
    et.manual_seed(3)
    check(tmp_path, BINARY[name], et.randn(3, 4), et.randn(3, 4))


REDUCE = {
    "sum": lambda x: x.sum(), "sum_dim": lambda x: x.sum(1), "sum_keep": lambda x: x.sum(
        (0, 2), keepdim=True), "mean": lambda x: x.mean(-1), "amax": lambda x: x.amax(1),
    "amin": lambda x: x.amin((0, 1)), "prod": lambda x: x.prod(2),
    "logsumexp": lambda x: x.logsumexp(1), "var": lambda x: x.var(1),
    "var_biased": lambda x: x.var(2, unbiased=False, keepdim=True), "std": lambda x: x.std(0),
    "norm": lambda x: x.norm(dim=1), "norm1": lambda x: x.norm(p=1, dim=2),
    "argmax": lambda x: x.argmax(1), "argmin": lambda x: x.argmin(), "max_dim": lambda x: x.max(1),
    "min_dim": lambda x: x.min(2, keepdim=True), "all": lambda x: (x > -10).all(1),
    "any": lambda x: (x > 1).any(), "cumsum": lambda x: x.cumsum(1),
    "topk": lambda x: x.topk(2, dim=1), "sort": lambda x: x.sort(2, descending=True)[0],
    "softmax": lambda x: F.softmax(x, 1), "log_softmax": lambda x: F.log_softmax(x, -1),
    "layer_norm": lambda x: F.layer_norm(x, (5,)), "normalize": lambda x: F.normalize(x, dim=1),
    "count_nonzero": lambda x: et.count_nonzero(x > 0, 1),
}


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduction(tmp_path, name):
    check(tmp_path, REDUCE[name], _x(3, 4, 5))


SHAPE = {
    "view": lambda x: x.view(6, 10), "reshape_batch": lambda x: x.reshape(x.shape[0], -1),
    "flatten": lambda x: x.flatten(1), "permute": lambda x: x.permute(2, 0, 1),
    "transpose": lambda x: x.transpose(0, 1).contiguous(), "t": lambda x: x[0].t(),
    "unsqueeze": lambda x: x.unsqueeze(1), "squeeze": lambda x: x[:, :1].squeeze(1),
    "expand": lambda x: x[:, :1].expand(3, 4, 5), "narrow": lambda x: x.narrow(2, 1, 3),
    "select": lambda x: x.select(1, 2), "chunk": lambda x: x.chunk(2, -1)[1],
    "split": lambda x: x.split([1, 3], 1)[0], "unbind": lambda x: x.unbind(0)[2],
    "index_basic": lambda x: x[1:, None, ::2, -1], "index_ellipsis": lambda x: x[..., 1],
    "index_tensor": lambda x: x[et.tensor([2, 0, 2])], "index_list": lambda x: x[:, [0, 3]],
    "index_mask": lambda x: x[x > 0] if False else x[:, et.tensor([True, False, True, True])],
    "index_select": lambda x: x.index_select(2, et.tensor([4, 0])),
    "gather": lambda x: x.gather(2, et.tensor([[[0, 1]] * 4] * 3)),
    "repeat_interleave": lambda x: x.repeat_interleave(2, dim=1),
    "repeat_interleave_flat": lambda x: x.repeat_interleave(3),
    "repeat_interleave_counts": lambda x: x.repeat_interleave(et.tensor([2, 0, 1, 3, 1]), 2),
    "flip": lambda x: x.flip(1), "roll": lambda x: x.roll(1, 2), "repeat": lambda x: x.repeat(
        1, 2, 1), "tril": lambda x: x.tril(), "triu": lambda x: x.triu(1),
    "pad": lambda x: F.pad(x, (1, 2)), "setitem": lambda x: _setitem(x),
    "movedim": lambda x: x.movedim(0, -1), "clone": lambda x: x.clone() + 1,
    "to_double": lambda x: x.double() * 2, "scatter_add": lambda x: et.zeros(3, 4, 5).scatter_add(
        2, et.tensor([[[0, 1, 0, 1, 0]] * 4] * 3), x),
    "take": lambda x: x.take(et.tensor([[0, 59], [-1, 17]])),
    "put": lambda x: x.put(et.tensor([3, -2, 40]), et.tensor([1.0, 2.0, 3.0])),
    "put_accumulate": lambda x: x.put(et.tensor([3, 3, -60]), et.tensor([1.0, 2.0, 3.0]),
                                      accumulate=True),
    "renorm": lambda x: x.renorm(2, 1, 1.5), "renorm_p1": lambda x: x.renorm(1, 0, 4.0),
    "renorm_inf": lambda x: x.renorm(float("inf"), 2, 1.0),
    "addcmul": lambda x: et.addcmul(x, x[:, :1], x.flip(2), value=0.5),
    "addcdiv": lambda x: et.addcdiv(x, x, x.abs() + 1), "addcmul_inplace": lambda x: _addcmul_(x),
}


def _addcmul_(x):
    y = x.clone()
    y.addcmul_(x, x, value=2.0)
    return y


def _setitem(x):
    y = x.clone()
    y[:, 1] = 0.5
    return y


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_op(tmp_path, name):
    check(tmp_path, SHAPE[name], _x(3, 4, 5))


NN = {
    "conv1d": (nn.Conv1d(2, 3, 3, padding=1), (2, 2, 7)),
    "conv2d_stride_dil": (nn.Conv2d(2, 4, 3, stride=2, dilation=2, padding=2), (2, 2, 9, 9)),
    "conv2d_groups": (nn.Conv2d(4, 4, 3, groups=2), (1, 4, 6, 6)),
    "conv2d_same": (nn.Conv2d(2, 3, 4, padding="same"), (1, 2, 7, 7)),
    "conv_transpose2d": (nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1),
                         (1, 2, 4, 4)),
    "maxpool_pad": (nn.MaxPool2d(3, 2, 1), (2, 3, 7, 7)),
    "maxpool_ceil": (nn.MaxPool2d(2, ceil_mode=True), (1, 2, 5, 5)),
    "maxpool1d": (nn.MaxPool1d(2), (2, 3, 8)),
    "avgpool": (nn.AvgPool2d(3, 2, 1), (2, 3, 7, 7)),
    "adaptive_avg": (nn.AdaptiveAvgPool2d(1), (2, 3, 5, 5)),
    "batchnorm1d": (nn.BatchNorm1d(3), (4, 3)),
    "groupnorm": (nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    "instancenorm": (nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    "unfold": (nn.Unfold(2, stride=1), (1, 2, 4, 4)),
    "rnn_tanh": (nn.RNN(3, 4, num_layers=2), (5, 2, 3)),
    "gru_bidir": (nn.GRU(3, 4, bidirectional=True, batch_first=True), (2, 5, 3)),
    "lstm_cell": (nn.LSTMCell(3, 4), (2, 3)),
    "mha": (nn.MultiheadAttention(8, 2), (3, 2, 8)),
    "prelu": (nn.PReLU(), (2, 3)),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_layer(tmp_path, name):
    et.manual_seed(5)
    layer, shape = NN[name]
    layer.eval()
    x = et.randn(*shape)
    if name == "mha":
        fn = lambda q: layer(q, q, q)[0]
    elif name in ("rnn_tanh", "gru_bidir", "lstm_cell"):
        fn = lambda q: layer(q)[0]
    else:
        fn = layer
    check(tmp_path, fn, x)


# ------------------------------------------------------------------ errors and warnings
class Inner(nn.Module):
    def forward(self, x):
        return et.cumprod(x, 1)


def test_unmapped_op_names_op_and_module_and_writes_nothing(tmp_path):
    model = nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.ReLU(), Inner()))
    path = tmp_path / "bad.onnx"
    with pytest.raises(ember.onnx.UnsupportedOperatorError) as info:
        ember.onnx.export(model, et.randn(2, 3), path)
    msg = str(info.value)
    assert "'cumprod'" in msg and "'1.1'" in msg
    assert info.value.op == "cumprod" and info.value.module == "1.1"
    assert not path.exists()


def test_function_outside_registry_is_reported(tmp_path):
    class Raw(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return ext.wrap(np.cos(ext.unwrap(x)))

        @staticmethod
        def backward(ctx, g):
            return g

    class M(nn.Module):
        def forward(self, x):
            return Raw.apply(x) + 1

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="Raw"):
        ember.onnx.export(M(), et.randn(2), tmp_path / "f.onnx")
    assert not (tmp_path / "f.onnx").exists()


def test_function_built_from_registry_ops_is_inlined(tmp_path):
    class Twice(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    check(tmp_path, lambda x: Twice.apply(x) + 1, et.randn(3))


def test_branch_on_traced_value_warns(tmp_path):
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x - 1

    model = Branchy()
    x = et.ones(3)
    with pytest.warns(ember.onnx.TracerWarning):
        ember.onnx.export(model, x, tmp_path / "b.onnx")
    # the branch taken is frozen: a negative input still doubles
    sess = ort.InferenceSession(str(tmp_path / "b.onnx"), providers=["CPUExecutionProvider"])
    neg = -np.ones(3, np.float32)
    np.testing.assert_allclose(sess.run(None, {"input_0": neg})[0], neg * 2)


def test_item_on_traced_value_warns(tmp_path):
    class Scale(nn.Module):
        def forward(self, x):
            return x / x.abs().max().item()

    with pytest.warns(ember.onnx.TracerWarning, match="Python number"):
        ember.onnx.export(Scale(), et.randn(4), tmp_path / "s.onnx")


def test_python_control_flow_on_shapes_is_silent(tmp_path):
    class Loop(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            for _ in range(x.shape[0]):
                x = self.lin(x)
            return x

    with warnings.catch_warnings():
        warnings.simplefilter("error", ember.onnx.TracerWarning)
        check(tmp_path, Loop(), et.randn(2, 3))


def test_bad_opset_and_state_restored(tmp_path):
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    model.train()
    with pytest.raises(ValueError, match="opset"):
        ember.onnx.export(model, et.randn(1, 2), tmp_path / "x.onnx", opset_version=11)
    ember.onnx.export(model, et.randn(1, 2), tmp_path / "x.onnx")
    assert model.training and model[1].training
    assert ext.get_recorder() is not None
    x = et.randn(2, 2, requires_grad=True)
    model(x).sum().backward()
    assert x.grad is not None


def test_recorder_restored_after_failure(tmp_path):
    before = ext.get_recorder(), F.nll_loss
    with pytest.raises(ember.onnx.UnsupportedOperatorError):
        ember.onnx.export(Inner(), et.randn(2, 3), tmp_path / "x.onnx")
    assert (ext.get_recorder(), F.nll_loss) == before
    assert nn.Module.__call__ is nn.Module.__dict__["__call__"]


def test_supported_ops_lists_the_table():
    ops = ember.onnx.supported_ops()
    for name in ("linear", "matmul", "convolution", "embedding", "getitem", "logsumexp"):
        assert name in ops
