"""Issue 16, item 9: ``Dropout2d`` on inputs that are not 4-D warns and drops as PyTorch does
(the mask is ``input.shape[:2] + (1,) * (dim - 2)``); ``inference_mode`` exists and works;
``compile(model)`` returns the model."""
from __future__ import annotations

import warnings

import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember.autograd import inference_mode, is_grad_enabled


def _caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w]


def test_dropout2d_2d_input_warns_and_drops_elementwise():
    et.manual_seed(0)
    m = nn.Dropout2d(0.5)
    out, msgs = _caught(lambda: m(et.ones(40, 50)))
    assert any("Received a 2-D input to dropout2d" in s for s in msgs)
    vals = set(out.flatten().tolist())
    assert vals == {0.0, 2.0}
    # element-wise (mask (N, C)): rows are neither all kept nor all dropped
    rows = [set(r) for r in out.tolist()]
    assert sum(len(r) == 2 for r in rows) > 30


def test_dropout2d_3d_input_warns_and_drops_channels_of_n_c_l():
    et.manual_seed(1)
    out, msgs = _caught(lambda: F.dropout2d(et.ones(8, 6, 5), 0.5))
    assert any("Received a 3D input to dropout2d" in s for s in msgs)
    for n in range(8):
        for c in range(6):
            assert len(set(out[n, c].tolist())) == 1  # whole (n, c) rows kept or dropped


def test_dropout2d_4d_silent_and_eval_identity():
    x = et.ones(2, 3, 4, 4)
    out, msgs = _caught(lambda: nn.Dropout2d(0.3)(x))
    assert msgs == []
    m = nn.Dropout2d(0.5).eval()
    y, msgs = _caught(lambda: m(et.ones(3, 4)))
    assert y.tolist() == et.ones(3, 4).tolist() and msgs
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        _caught(lambda: F.dropout2d(et.ones(5), 0.5))
    assert _caught(lambda: F.dropout2d(et.ones(5), 1.0))[0].tolist() == [0.0] * 5


def test_dropout2d_gradient_matches_mask():
    et.manual_seed(2)
    x = et.ones(6, 7, requires_grad=True)
    out, _ = _caught(lambda: F.dropout2d(x, 0.5))
    out.sum().backward()
    assert x.grad.tolist() == out.detach().tolist()


def test_inference_mode():
    x = et.ones(2, requires_grad=True)
    with inference_mode():
        assert not is_grad_enabled()
        y = x * 2
    assert not y.requires_grad
    with inference_mode(False):
        assert (x * 2).requires_grad

    @inference_mode()
    def f(a):
        return a * 3

    assert not f(x).requires_grad


def test_compile_module_returns_model():
    model = nn.Linear(3, 2)
    assert et.compile(model) is model
