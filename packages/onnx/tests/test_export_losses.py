"""Class-index losses map to ONNX's loss operators: ``F.cross_entropy`` (the registry op
``cross_entropy_loss``) to ``SoftmaxCrossEntropyLoss``, ``F.nll_loss`` / ``nn.NLLLoss`` to
``NegativeLogLikelihoodLoss``, with ``reduction``, ``weight`` and ``ignore_index``;
``label_smoothing`` adds its term around the operator. onnxruntime and the imported model match
ember on new batches (ignored targets included), and the imported loss has ember's gradients."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx
import ember.tensor as et
from ember.nn.functional import nll_loss

ort = pytest.importorskip("onnxruntime")

ATOL = 1e-5
WEIGHT = [0.5, 2.0, 1.0, 0.25, 3.0]


def _np(t):
    return t.detach().numpy()


class Loss(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, target):
        return self.fn(x, target)


def _weight():
    return et.tensor(WEIGHT)


CE = {
    "mean": lambda x, t: F.cross_entropy(x, t),
    "sum": lambda x, t: F.cross_entropy(x, t, reduction="sum"),
    "none": lambda x, t: F.cross_entropy(x, t, reduction="none"),
    "weight_ignore_mean": lambda x, t: F.cross_entropy(x, t, _weight(), ignore_index=1),
    "weight_ignore_none": lambda x, t: F.cross_entropy(x, t, _weight(), ignore_index=1,
                                                       reduction="none"),
    "smoothing_mean": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
    "smoothing_none": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.3, reduction="none"),
    "smoothing_weight_ignore_mean": lambda x, t: F.cross_entropy(
        x, t, _weight(), ignore_index=1, label_smoothing=0.1),
    "smoothing_weight_ignore_sum": lambda x, t: F.cross_entropy(
        x, t, _weight(), ignore_index=1, label_smoothing=0.25, reduction="sum"),
    "module_weight_smoothing": lambda x, t: nn.CrossEntropyLoss(
        _weight(), ignore_index=0, label_smoothing=0.15)(x, t),
}

def _logp(x):
    return F.log_softmax(x, 0 if x.dim() == 1 else 1)


NLL = {
    "mean": lambda x, t: F.nll_loss(_logp(x), t),
    "sum": lambda x, t: F.nll_loss(_logp(x), t, reduction="sum"),
    "none": lambda x, t: F.nll_loss(_logp(x), t, reduction="none"),
    "weight_ignore_mean": lambda x, t: F.nll_loss(_logp(x), t, _weight(),
                                                  ignore_index=1),
    "weight_ignore_none": lambda x, t: F.nll_loss(_logp(x), t, _weight(),
                                                  ignore_index=1, reduction="none"),
    "imported_name": lambda x, t: nll_loss(_logp(x), t, ignore_index=3),
    "module": lambda x, t: nn.NLLLoss(_weight(), ignore_index=2)(_logp(x), t),
}

# (traced input shape, new input shape): (N, C), (N, C, d1, d2) and (C,) with a 0-d target
SHAPES = {"2d": ((4, 5), (7, 5)), "4d": ((2, 5, 3, 2), (3, 5, 3, 2)), "1d": ((5,), (5,))}


def _targets(shape, ignored):
    t = et.randint(0, 5, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if ignored and t.dim():
        t.view(-1)[::3] = ignored  # every third target ignored
    return t


def check_loss(tmp_path, fn, shape, op_type, ignored=1):
    """Export ``fn(x, target)``, run it in onnxruntime and import it at the traced and at
    another batch size; both match ember, and the imported loss's input gradient is ember's."""
    model = Loss(fn)
    traced, new = SHAPES[shape]
    path = tmp_path / "loss.onnx"
    axes = {"x": [0], "target": [0], "loss": [0]} if shape != "1d" else None
    proto = ember.onnx.export(model, (et.randn(*traced), _targets(traced, ignored)), path,
                              input_names=["x", "target"], output_names=["loss"],
                              dynamic_axes=axes)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    assert op_type in [n.op_type for n in proto.graph.node]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    imported = ember.onnx.load_model(path)
    for s in (traced, new):
        x, t = et.randn(*s), _targets(s, ignored)
        with ag.no_grad():
            expect = _np(model(x, t))
        got = sess.run(None, {"x": _np(x), "target": _np(t)})[0]
        assert got.shape == expect.shape
        np.testing.assert_allclose(got, expect, atol=ATOL, rtol=1e-5)
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        a, b = model(xa, t), imported(xb, t)
        np.testing.assert_allclose(_np(b), expect, atol=ATOL, rtol=1e-5)
        (a * a).sum().backward()
        (b * b).sum().backward()
        np.testing.assert_allclose(_np(xb.grad), _np(xa.grad), atol=ATOL, rtol=1e-5)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(CE))
def test_cross_entropy(tmp_path, name, shape):
    et.manual_seed(0)
    check_loss(tmp_path, CE[name], shape, "SoftmaxCrossEntropyLoss")


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(NLL))
def test_nll_loss(tmp_path, name, shape):
    et.manual_seed(1)
    check_loss(tmp_path, NLL[name], shape, "NegativeLogLikelihoodLoss")


def test_every_target_ignored_is_nan_as_in_ember(tmp_path):
    fn = CE["smoothing_weight_ignore_mean"]
    model = Loss(fn)
    x, t = et.randn(3, 5), et.tensor([1, 1, 1])
    ember.onnx.export(model, (x, t), tmp_path / "m.onnx", input_names=["x", "t"])
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    with ag.no_grad():
        assert np.isnan(_np(model(x, t)))
    assert np.isnan(sess.run(None, {"x": _np(x), "t": _np(t)})[0])


def test_legacy_reduction_arguments(tmp_path):
    with pytest.warns(UserWarning, match="size_average"):
        check_loss(tmp_path, lambda x, t: F.nll_loss(x, t, size_average=False), "2d",
                   "NegativeLogLikelihoodLoss")


@pytest.mark.parametrize("dtype", [et.int32, et.uint8])
def test_other_target_dtypes(tmp_path, dtype):
    check_loss(tmp_path, lambda x, t: F.cross_entropy(x, t.to(dtype), reduction="sum"), "2d",
               "SoftmaxCrossEntropyLoss", ignored=0)


def test_probability_targets_export_as_their_ops(tmp_path):
    class Soft(nn.Module):
        def forward(self, x, p):
            return F.cross_entropy(x, p, label_smoothing=0.1)

    x, p = et.randn(4, 5), F.softmax(et.randn(4, 5), 1)
    path = tmp_path / "soft.onnx"
    ember.onnx.export(Soft(), (x, p), path, input_names=["x", "p"])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with ag.no_grad():
        np.testing.assert_allclose(sess.run(None, {"x": _np(x), "p": _np(p)})[0],
                                   _np(Soft()(x, p)), atol=ATOL)


class Classifier(nn.Module):
    """A network and its loss in one graph: what a training runtime takes."""

    def __init__(self, criterion):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 5))
        self.criterion = criterion

    def forward(self, x, target):
        return self.criterion(self.net(x), target)


@pytest.mark.parametrize("criterion", [
    lambda: nn.CrossEntropyLoss(et.tensor(WEIGHT), ignore_index=1, label_smoothing=0.1),
    lambda: nn.CrossEntropyLoss(reduction="sum"),
], ids=["cross_entropy_weighted_smoothed", "cross_entropy_sum"])
def test_training_graph_with_loss_finetunes_with_equal_gradients(tmp_path, criterion):
    et.manual_seed(4)
    model = Classifier(criterion())
    path = tmp_path / "train.onnx"
    x, t = et.randn(6, 6), _targets((6, 5), 1)
    ember.onnx.export(model, (x, t), path, input_names=["x", "target"],
                      dynamic_axes={"x": [0], "target": [0]})
    imported = ember.onnx.load_model(path)
    # the weight is a buffer of the loss module: a buffer again
    assert set(imported.state_dict()) == set(model.state_dict())
    assert dict(imported.named_buffers()).keys() == dict(model.named_buffers()).keys()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x, t = et.randn(9, 6), _targets((9, 5), 1)
    loss, back = model(x, t), imported(x, t)
    np.testing.assert_allclose(sess.run(None, {"x": _np(x), "target": _np(t)})[0], _np(loss),
                               atol=ATOL, rtol=1e-5)
    np.testing.assert_allclose(_np(back), _np(loss), atol=ATOL, rtol=1e-5)
    loss.backward()
    back.backward()
    params = dict(imported.named_parameters())
    for k, p in model.named_parameters():
        np.testing.assert_allclose(_np(params[k].grad), _np(p.grad), atol=ATOL, rtol=1e-5,
                                   err_msg=k)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss_forward_total_weight(tmp_path, reduction, shape):
    """The registry op's second output, PyTorch's ``total_weight``, exports too (the summed
    weights of the counted targets; 0 for an unreduced batched loss)."""
    class Both(nn.Module):
        def forward(self, x, target):
            return et.nll_loss_forward(_logp(x), target, _weight(), reduction, 1)

    traced, new = SHAPES[shape]
    path = tmp_path / "both.onnx"
    axes = {"x": [0], "target": [0]} if shape != "1d" else None
    ember.onnx.export(Both(), (et.randn(*traced), _targets(traced, 1)), path,
                      input_names=["x", "target"], dynamic_axes=axes)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for s in (traced, new):
        x, t = et.randn(*s), _targets(s, 1)
        with ag.no_grad():
            expect = [_np(o) for o in Both()(x, t)]
        got = sess.run(None, {"x": _np(x), "target": _np(t)})
        for e, o in zip(expect, got):
            np.testing.assert_allclose(o, e, atol=ATOL, rtol=1e-5)
